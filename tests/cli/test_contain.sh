# CLI tests: every process a `tune --command` trial starts ends with the
# trial.  The command starts `sleep 300.MARK` in a subshell (MARK unique to
# the test, so only its own processes are counted); after each way a trial
# can end -- --trial-timeout, a cancel from rank 0 under mpirun, kill -9 of
# the worker process, kill -9 of cfl itself, and the command's own end --
# no process naming MARK may be left.  The same holds for commands whose
# processes leave the command's process group or session: under GNU
# `timeout` (which calls setpgid), `setsid`, a `set -m` shell and nohup.

# Writes c.sh: its first run (per folder) starts `sleep 300.$mark` (in a
# subshell; or, with $1, as $1 says: timeout, setsid, setm (a bash with
# job control: `set -m` gives each job a group), nohup) and waits
# for it; later runs print 1 at once, or, with WAIT_FOR=FILE, once FILE
# exists.  Sets $mark; what is left is killed when the test ends, whatever
# happens.
contain_setup() {
	local start
	mark="$$$RANDOM"
	case "${1:-}" in
	timeout) start="timeout 300 sh -c 'sleep 300.$mark; echo 1'" ;;
	setsid) start="setsid -w sh -c 'sleep 300.$mark; echo 1'" ;;
	setm) start="bash -c \"set -m; sh -c 'sleep 300.$mark' & wait\"; echo 1" ;;
	nohup) start="nohup sh -c 'sleep 300.$mark' >/dev/null 2>&1 & wait; echo 1" ;;
	*) start="(sleep 300.$mark; echo 1)" ;;
	esac
	cat >c.sh <<EOF
#!/bin/sh
if mkdir first 2>/dev/null; then
	$start
	exit 0
fi
while [ -n "\${WAIT_FOR:-}" ] && [ ! -e "\$WAIT_FOR" ]; do sleep 0.05; done
echo 1
EOF
	chmod +x c.sh
	printf 'x = uniform(0, 1)\n' >c.params
	trap 'kill -9 $(contain_left) 2>/dev/null' EXIT
}

# The pids of this test's sleeps (nothing when there are none).
contain_sleeps() { pgrep -f "^sleep 300\.$mark\$"; }
# The pids of every process of this test's command (the sleep, and the
# timeout, setsid or sh above it).
contain_left() { pgrep -f "300\.$mark"; }

# Waits up to $1 s for the sleep to start; fails otherwise.
contain_wait_started() {
	for _ in $(seq $(($1 * 20))); do
		[ -n "$(contain_sleeps)" ] && return 0
		sleep 0.05
	done
	fail "the command's sleep did not start: $(cat c.err 2>/dev/null)"
}

# Waits up to $1 s for every sleep to end; fails naming what is left.
contain_wait_gone() {
	local left
	for _ in $(seq $(($1 * 20))); do
		left=$(contain_left)
		[ -z "$left" ] && return 0
		sleep 0.05
	done
	fail "$2: $(wc -l <<<"$left") left behind: $(ps -o pid=,ppid=,pgid=,args= -p "$(tr '\n' ',' <<<"$left" | sed 's/,$//')")"
}

# --trial-timeout kills the worker; its command's subshell and sleep go too.
contain_trial_timeout() {
	contain_setup "${1:-}"
	run "$CFL" tune --command './c.sh {x}' --params c.params --num-search 1 --num-repeat 1 \
		--num-jobs 1 --trial-timeout 1 --max-retries 1 --db t.db -q
	expect_rc 0
	[ "$(sqlite3 t.db "select count(*) from trial_attempts where reason like 'timeout%'")" = 1 ] ||
		fail "no attempt timed out: $(sqlite3 t.db 'select * from trial_attempts')"
	contain_wait_gone 10 "after --trial-timeout"
}
test_contain_trial_timeout() { contain_trial_timeout; }
test_contain_trial_timeout_timeout() { contain_trial_timeout timeout; }
test_contain_trial_timeout_setsid() { contain_trial_timeout setsid; }
test_contain_trial_timeout_setm() { contain_trial_timeout setm; }
test_contain_trial_timeout_nohup() { contain_trial_timeout nohup; }

# kill -9 of the local worker process running the trial: the attempt fails,
# the retry succeeds, and the command's processes are gone.
test_contain_kill9_worker() {
	contain_setup
	local job w
	"$CFL" tune --command './c.sh {x}' --params c.params --num-search 1 --num-repeat 1 \
		--num-jobs 1 --max-retries 1 --db t.db -q >c.out 2>c.err &
	job=$!
	contain_wait_started 20
	w=$(pgrep -P "$job")
	[ "$(wc -w <<<"$w")" = 1 ] || fail "not one worker process under cfl: '$w'"
	kill -9 "$w"
	wait "$job"
	rc=$?
	[ "$rc" = 0 ] || fail "exit $rc: $(cat c.err)"
	[ "$(sqlite3 t.db "select count(*) from trial_attempts where reason = 'signal SIGKILL'")" = 1 ] ||
		fail "no attempt failed with the worker: $(sqlite3 t.db 'select * from trial_attempts')"
	contain_wait_gone 10 "after kill -9 of the worker"
}

# kill -9 of cfl itself: its workers die with it, and their commands too.
contain_kill9_cfl() {
	contain_setup "${1:-}"
	local job
	"$CFL" tune --command './c.sh {x}' --params c.params --num-search 1 --num-repeat 1 \
		--num-jobs 1 --db t.db -q >c.out 2>c.err &
	job=$!
	contain_wait_started 20
	kill -9 "$job"
	wait "$job" 2>/dev/null
	contain_wait_gone 10 "after kill -9 of cfl"
}
test_contain_kill9_cfl() { contain_kill9_cfl; }
test_contain_kill9_cfl_timeout() { contain_kill9_cfl timeout; }
test_contain_kill9_cfl_setsid() { contain_kill9_cfl setsid; }
test_contain_kill9_cfl_setm() { contain_kill9_cfl setm; }
test_contain_kill9_cfl_nohup() { contain_kill9_cfl nohup; }

# A command that ends while a process it started lives on: the trial is
# done (its number counts), and the process ends with it.
test_contain_command_end() {
	contain_setup
	run "$CFL" tune --command "sleep 300.$mark >/dev/null 2>&1 & echo 0.5" --params c.params \
		--num-search 1 --num-repeat 1 --num-jobs 1 --db t.db -q
	expect_rc 0
	[ "$(sqlite3 t.db "select count(*) from trials where status='done'")" = 1 ] ||
		fail "the trial is not done: $(sqlite3 t.db 'select * from trials')"
	contain_wait_gone 10 "after the command ended"
}

# Under mpirun, rank 0's --trial-timeout sends CANCEL to the worker rank,
# which stops its local trial (cfl_pool_cancel): the command's processes
# end while the job goes on.  One trial at a time, and the later runs of
# the command wait for file 'release' (or their own timeout, 3 s each), so
# the job outlives the check: what is checked is the cancel, not the end of
# the job.  The job's exit code is mpirun's business; the database and the
# processes are cfl's.
contain_mpi_cancel() {
	command -v mpirun >/dev/null 2>&1 || skip "mpirun is not installed"
	"$CFL" --version | grep -q '^backends:.* mpi' || skip "$CFL was built without MPI"
	contain_setup "${1:-}"
	local job root=() k
	[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} WAIT_FOR=$TMP/release \
	timeout -k 5 120 mpirun "${root[@]}" --oversubscribe -x WAIT_FOR -n 2 "$CFL" tune \
		--command './c.sh {x}' --params c.params --num-search 2 --num-repeat 1 --num-parallel 1 \
		--num-jobs 2 --trial-timeout 3 --max-retries 1 --db t.db --name m -q >c.out 2>c.err &
	job=$!
	contain_wait_started 60
	for _ in $(seq 600); do
		k=$(sqlite3 t.db "select count(*) from trial_attempts where reason like 'timeout%'" 2>/dev/null)
		[ "${k:-0}" -ge 1 ] && break
		kill -0 "$job" 2>/dev/null || break
		sleep 0.05
	done
	[ "${k:-0}" -ge 1 ] || fail "no attempt timed out: $(cat c.err)"
	contain_wait_gone 10 "after rank 0 cancelled the trial"
	kill -0 "$job" 2>/dev/null || fail "the job ended before the check: $(cat c.err)"
	touch release
	wait "$job"
	[ "$(sqlite3 t.db "select status from runs")" = done ] ||
		fail "the run is not done: $(sqlite3 t.db 'select * from trials'; cat c.err)"
	[ "$(sqlite3 t.db "select count(*) from trials where status='done'")" -ge 1 ] ||
		fail "no trial done: $(sqlite3 t.db 'select * from trials'; cat c.err)"
}
test_contain_mpi_cancel() { contain_mpi_cancel; }
test_contain_mpi_cancel_timeout() { contain_mpi_cancel timeout; }
test_contain_mpi_cancel_setsid() { contain_mpi_cancel setsid; }
test_contain_mpi_cancel_setm() { contain_mpi_cancel setm; }
test_contain_mpi_cancel_nohup() { contain_mpi_cancel nohup; }
