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
	expect_out "baseline"
	expect_out "backends: local tcp"
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
