# CLI tests of the MPI backend: the transport alone under mpirun, then runs of
# cfl under mpirun.  Every mpirun is bounded by `timeout`; the tests are
# skipped (they pass, saying so) where mpirun is absent or cfl was built
# without MPI.

# mpirun with what this machine needs: root, and more ranks than cores.
mpi_run() {
	local root=()
	[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
	# Open MPI's own allocations are not ours to chase under ASan.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
	timeout -k 5 "${MPI_TIMEOUT:-60}" mpirun "${root[@]}" --oversubscribe "$@"
}

# Returns 0 (and says why) when the MPI tests cannot run here.
mpi_skip() {
	if ! command -v mpirun >/dev/null 2>&1; then
		echo "    skipped: mpirun is not installed" >&2
		return 0
	fi
	if ! "$CFL" --version | grep -q '^backends:.* mpi'; then
		echo "    skipped: $CFL was built without MPI" >&2
		return 0
	fi
	return 1
}

# The build folder of $CFL (make passes CFL_BUILD).
mpi_build_dir() {
	local build=${CFL_BUILD:-}
	if [ -z "$build" ]; then
		case "$CFL" in *-san) build=build-san ;; *) build=build ;; esac
	fi
	case "$build" in /*) ;; *) build="$ROOT/$build" ;; esac
	echo "$build"
}

mpi_selftest_bin() { echo "$(mpi_build_dir)/tests/mpi_selftest"; }

test_mpi_version_lists_backends() {
	run "$CFL" --version
	expect_rc 0
	expect_out "backends: local"
	# the Makefile leaves a stamp saying whether it built MPI in
	if [ -e "$(mpi_build_dir)/.mpi-on" ]; then
		expect_out " mpi"
	elif [ -e "$(mpi_build_dir)/.mpi-off" ]; then
		grep -q ' mpi' <<<"$out" && fail "mpi listed in a build without it"
	fi
	return 0
}

test_mpi_transport_frames_broadcast_bridge() {
	mpi_skip && return 0
	run mpi_run -n 3 "$(mpi_selftest_bin)"
	expect_rc 0
	expect_out "mpi selftest: ok (3 ranks"
}

test_mpi_transport_refuses_a_damaged_dataset() {
	mpi_skip && return 0
	run mpi_run -n 3 "$(mpi_selftest_bin)" badsha
	[ "$rc" != 0 ] || fail "a wrong digest was accepted"
	expect_err "rank 1: refused: dataset broadcast: sha-256 mismatch on rank 1"
	expect_err "rank 2: refused: dataset broadcast: sha-256 mismatch on rank 2"
	expect_err "rank 0: refused: dataset broadcast: the dataset arrived damaged"
}

test_mpi_slurm_srun() {
	# Slurm's daemons are not installed on this machine: say so and skip.
	if ! command -v slurmctld >/dev/null 2>&1 || ! command -v srun >/dev/null 2>&1; then
		echo "    skipped: slurm-wlm (slurmctld, slurmd, srun) is not installed" >&2
		return 0
	fi
	echo "    skipped: a local Slurm cluster is not set up by this suite yet" >&2
}
