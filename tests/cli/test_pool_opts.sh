# The pool options repeat and tune share (src/cli/pool_opts.c): the same
# values are accepted with the same messages by both commands, each keeps
# its own --help wording where they differ (--name's default, --resume),
# and only repeat takes --threads-per-trial and --trials-per-worker.

# exact stderr of a usage error of cfl CMD
pool_usage_is() {
	local want
	want=$(printf 'cfl %s: %s\nTry '\''cfl %s --help'\''.' "$1" "$2" "$1")
	expect_rc 2
	[ "$err" = "$want" ] || fail "stderr: '$err', expected: '$want'"
}

test_pool_opts_values() {
	local cmd data="$ROOT/datasets/iris.csv"
	for cmd in repeat tune; do
		run "$CFL" "$cmd" "$data" --num-jobs 1025 --db x.db
		pool_usage_is "$cmd" "--num-jobs must be an integer in [1, 1024] (0 with --listen), got '1025'"
		run "$CFL" "$cmd" "$data" --num-jobs -1 --db x.db
		pool_usage_is "$cmd" "--num-jobs must be an integer in [1, 1024] (0 with --listen), got '-1'"
		run "$CFL" "$cmd" "$data" --num-jobs 0 --db x.db
		pool_usage_is "$cmd" "--num-jobs 0 needs --listen (remote workers)"
		run "$CFL" "$cmd" "$data" --trial-timeout -1 --db x.db
		pool_usage_is "$cmd" "--trial-timeout must be a number of seconds >= 0, got '-1'"
		run "$CFL" "$cmd" "$data" --trial-timeout 1e8 --db x.db
		pool_usage_is "$cmd" "--trial-timeout must be a number of seconds >= 0, got '1e8'"
		run "$CFL" "$cmd" "$data" --max-retries 101 --db x.db
		pool_usage_is "$cmd" "--max-retries must be an integer in [0, 100], got '101'"
		run "$CFL" "$cmd" "$data" --max-retries 1.5 --db x.db
		pool_usage_is "$cmd" "--max-retries must be an integer in [0, 100], got '1.5'"
		run "$CFL" "$cmd" "$data" --name a --resume b --db x.db
		pool_usage_is "$cmd" "--name 'a' and --resume 'b' disagree"
		# nothing was stored by a usage error
		[ ! -e x.db ] || fail "$cmd: a usage error created the database"
	done
	run "$CFL" repeat "$data" --threads-per-trial 0 --db x.db
	pool_usage_is repeat "--threads-per-trial must be an integer in [1, 256], got '0'"
	run "$CFL" repeat "$data" --trials-per-worker -1 --db x.db
	pool_usage_is repeat "--trials-per-worker must be an integer >= 0, got '-1'"
	# tune runs every trial with one BLAS thread in long-lived workers
	run "$CFL" tune "$data" --threads-per-trial 2 --db x.db
	expect_rc 2
	expect_err "unknown option '--threads-per-trial'"
	run "$CFL" tune "$data" --trials-per-worker 1 --db x.db
	expect_rc 2
	expect_err "unknown option '--trials-per-worker'"
}

# The pool options are taken: a run with every one of them stores under
# --name in --db, -q / --quiet leave stderr without progress, and --resume
# NAME alone finishes the run.
test_pool_opts_run() {
	local cmd data="$ROOT/datasets/iris.csv"
	run "$CFL" repeat "$data" --models baseline --num-repeat 2 --num-jobs 2 \
		--trial-timeout 30 --max-retries 0 --threads-per-trial 1 \
		--trials-per-worker 1 --db p.db --name pr -q
	expect_rc 0
	expect_err "run 'pr' stored in 'p.db'"
	grep -q '^\[' <<<"$err" && fail "repeat -q printed progress: $err"
	run "$CFL" tune "$data" --model linear --num-search 2 --num-repeat 1 \
		--num-jobs 2 --trial-timeout 30 --max-retries 0 --db p.db --name pt --quiet
	expect_rc 0
	expect_err "run 'pt' stored in 'p.db'"
	grep -q '^\[' <<<"$err" && fail "tune --quiet printed progress: $err"
	run "$CFL" runs --db p.db
	expect_rc 0
	expect_out "pr"
	expect_out "pt"
	[ ! -e reports ] || fail "--db p.db created the default 'reports' folder"
	# --resume NAME alone takes DATA and the plan from the stored command
	# (both runs are complete: nothing to do)
	for cmd in repeat tune; do
		run "$CFL" "$cmd" --resume "p${cmd:0:1}" --db p.db -q
		expect_rc 0
		expect_err "run 'p${cmd:0:1}' is complete; nothing to do"
	done
	run "$CFL" tune --resume pr --db p.db
	expect_rc 1
	expect_err "cannot resume run 'pr': it was not started by cfl tune"
	run "$CFL" repeat --resume nosuch --db p.db
	expect_rc 1
	expect_err "nosuch"
	run "$CFL" tune --resume pt --db none.db
	expect_rc 1
	expect_err "no database 'none.db'"
}

test_pool_opts_help() {
	local cmd line
	for cmd in repeat tune; do
		run "$CFL" "$cmd" --help
		expect_rc 0
		while IFS= read -r line; do
			grep -qxF -- "$line" <<<"$out" || fail "cfl $cmd --help lacks the line '$line'"
		done <<EOF
  --num-jobs J             worker processes [$(getconf _NPROCESSORS_ONLN): the online cores]
  --db FILE                the database [reports/cfl.db]
  --name NAME              the run's name [$cmd-YYYYMMDD-HHMMSS]
  --trial-timeout SEC      kill a trial after SEC seconds [0: never]
  --max-retries R          retries of a failed trial [1]
  -q, --quiet              no progress on stderr
EOF
	done
	run "$CFL" repeat --help
	expect_out "  --threads-per-trial T    BLAS threads per trial [1]"
	expect_out "                           [0: no limit; 1: a fresh process per trial]"
	run "$CFL" tune --help
	grep -qF -- "--threads-per-trial" <<<"$out" && fail "tune --help lists --threads-per-trial"
	return 0
}

# a forked worker runs its trials on its one thread: it does not start
# OpenBLAS's thread pool again after the fork (each pool thread spun on
# sched_yield beside its worker and cost a forked worker about 5 ms), nor
# with --threads-per-trial 1 ask for more.  Each trial sleeps 0.3 s
# (CFL_TEST_FAULT=slow), long enough to count the workers' threads.
test_pool_workers_have_one_thread() {
	local pid kids k n seen=0 i
	CFL_TEST_FAULT=slow "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear \
		--num-repeat 8 --num-jobs 2 --ensemble none --db t.db -q > /dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < 50 && seen < 2; i++)); do
		sleep 0.05
		kids=$(pgrep -P "$pid")
		for k in $kids; do
			n=$(awk '/^Threads:/ { print $2 }' "/proc/$k/status" 2>/dev/null) || continue
			[ -n "$n" ] || continue
			[ "$n" = 1 ] || { kill "$pid"; wait "$pid"; fail "worker $k has $n threads"; return; }
			seen=$((seen + 1))
		done
	done
	wait "$pid" || fail "cfl repeat failed"
	[ "$seen" -ge 2 ] || fail "saw no worker to count the threads of"
}
