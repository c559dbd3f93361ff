# CLI tests of the top level: usage, --help, --version, unknown commands.

test_main_no_command_is_usage_error() {
	run "$CFL"
	expect_rc 2
	expect_err "usage: cfl COMMAND"
}

test_main_help() {
	run "$CFL" --help
	expect_rc 0
	expect_out "usage: cfl COMMAND"
	expect_out "Examples:"
}

test_main_version_lists_models() {
	run "$CFL" --version
	expect_rc 0
	expect_out "cfl 0."
	expect_out "models: fcnn linear tree forest gbdt baseline"
	expect_out "backends: local tcp"
}

# The model table in src/models/model.c lists every model file's ops: a
# model defined but left out of the table would be missing here.
test_main_version_lists_every_model_defined() {
	local defined listed
	defined=$(sed -n 's/^const struct cfl_model_ops cfl_\([a-z0-9_]*\)_ops = {$/\1/p' \
		"$ROOT"/src/models/*.c | sort | tr '\n' ' ')
	[ -n "$defined" ] || fail "no model ops found in src/models"
	run "$CFL" --version
	expect_rc 0
	listed=$(sed -n 's/^models: //p' <<<"$out" | tr ' ' '\n' | sort | tr '\n' ' ')
	[ "$listed" = "$defined" ] || fail "cfl --version lists '$listed', src/models defines '$defined'"
}

test_main_unknown_command() {
	run "$CFL" frobnicate
	expect_rc 2
	expect_err "'frobnicate' is not a cfl command"
}

test_main_every_listed_command_has_help() {
	run "$CFL" --help
	cmds=$(sed -n '/^Commands:/,/^$/p' <<<"$out" | awk 'NF>1 {print $1}' | grep -v Commands:)
	[ -n "$cmds" ] || fail "no commands listed"
	for c in $cmds; do
		run "$CFL" "$c" --help
		expect_rc 0
		expect_out "usage: cfl $c"
	done
}

# OpenBLAS falls back to its generic SSE3 kernels on a CPU it does not
# know (Debian 12's, on a newer Xeon in a virtual machine): cfl then asks
# for the kernels the CPU can run (2-3 times faster on fcnn).  A choice
# made in OPENBLAS_CORETYPE is kept.
test_main_blas_kernels_fit_the_cpu() {
	local old='Prescott|Core2|Penryn|Dunnington|Nehalem|Sandybridge|Atom|unknown'
	run env -u OPENBLAS_CORETYPE "$CFL" --version
	expect_rc 0
	expect_out "blas: OpenBLAS, "
	if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
		grep -Eq "^blas: OpenBLAS, ($old) kernels$" <<<"$out" &&
			fail "a CPU with AVX2 runs old kernels: $out"
	fi
	run env OPENBLAS_CORETYPE=Prescott "$CFL" --version
	expect_rc 0
	expect_out "blas: OpenBLAS, Prescott kernels"
}
