# CLI tests of the MPI backend: the transport alone under mpirun, then runs of
# cfl under mpirun.  Every mpirun is bounded by `timeout`; the tests are
# skipped (counted so, saying why) where mpirun is absent or cfl was built
# without MPI.

# The table lines of a run's output: a run whose ranks were stopped lists
# the failed attempts under its table, one an undisturbed run has not.
mpi_table() { grep -E '^[|=-]' <<<"$1"; }

# mpirun with what this machine needs: root, and more ranks than cores.
mpi_run() {
	local root=()
	[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
	# Open MPI's own allocations are not ours to chase under ASan.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
	timeout -k 5 "${MPI_TIMEOUT:-60}" mpirun "${root[@]}" --oversubscribe "$@"
}

# A wrapper that runs its arguments and writes their exit code to
# $TMP/rc.RANK; it clears the last job's codes.  After
# `run mpi_run -n 3 "$(mpi_rc)" PROG ...`, mpi_rank0_rc sets $rc to rank 0's
# own exit code (cfl's), not mpirun's: a launcher may crash in its own
# teardown (Open MPI's mpirun in PMIx_server_finalize after MPI_Abort), and
# that is not cfl's behaviour.
mpi_rc() {
	rm -f "$TMP"/rc.*
	cat >"$TMP/rankrc" <<EOF
#!/bin/sh
"\$@"
echo \$? >"$TMP/rc.\${PMIX_RANK:-\${OMPI_COMM_WORLD_RANK:-\${SLURM_PROCID:-x}}}"
EOF
	chmod +x "$TMP/rankrc"
	echo "$TMP/rankrc"
}
mpi_rank0_rc() {
	local launcher=$rc
	rc=$(cat "$TMP/rc.0" 2>/dev/null) || rc="none (rank 0 did not end by itself; mpirun: $launcher)"
}

# Skips the test (saying why) when the MPI tests cannot run here.
mpi_skip() {
	command -v mpirun >/dev/null 2>&1 || skip "mpirun is not installed"
	"$CFL" --version | grep -q '^backends:.* mpi' || skip "$CFL was built without MPI"
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
	mpi_skip
	# (400 ping-pongs through the pumps: a minute and more under ASan on a
	# loaded machine)
	MPI_TIMEOUT=240 run mpi_run -n 3 "$(mpi_rc)" "$(mpi_selftest_bin)"
	mpi_rank0_rc
	expect_rc 0
	expect_out "mpi selftest: ok (3 ranks"
}

test_mpi_transport_refuses_a_damaged_dataset() {
	mpi_skip
	# (every rank refuses, then the job is aborted: no exit code to read)
	MPI_TIMEOUT=240 run mpi_run -n 3 "$(mpi_selftest_bin)" badsha
	expect_err "rank 1: refused: dataset broadcast: sha-256 mismatch on rank 1"
	expect_err "rank 2: refused: dataset broadcast: sha-256 mismatch on rank 2"
	expect_err "rank 0: refused: dataset broadcast: the dataset arrived damaged"
}

# The rank processes mpirun started (its children), one per line: "PID RANK".
mpi_ranks() {
	local mp=$1 p r
	for p in $(pgrep -P "$mp"); do
		r=$(tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
		[ -n "$r" ] && echo "$p $r"
	done
}

# The mpirun started below pid ROOT (this test's background job: other
# tests may run mpirun on the machine at the same time), or nothing.
mpi_mpirun_of() {
	local todo=$1 p next
	for _ in 1 2 3 4; do
		next=""
		for p in $todo; do
			[ "$(cat /proc/"$p"/comm 2>/dev/null)" = mpirun ] && { echo "$p"; return; }
			next="$next $(pgrep -P "$p")"
		done
		todo=$next
	done
}

# The pid of rank N of the job below pid ROOT (waits up to 30 s for it: a
# loaded machine starts mpirun slowly), or nothing.
mpi_rank_pid() {
	local mp pid
	for _ in $(seq 300); do
		mp=$(mpi_mpirun_of "$2")
		[ -n "$mp" ] && pid=$(mpi_ranks "$mp" | awk -v n="$1" '$2 == n {print $1}')
		[ -n "$pid" ] && break
		sleep 0.1
	done
	echo "$pid"
}

# Waits up to 15 s for N trials done in DB; fails saying so otherwise.
# (-readonly: querying a file cfl has not created yet must not create an
# empty one)
mpi_wait_done() {
	local db=$1 n=$2 err=$3 k
	for _ in $(seq 150); do
		k=$(sqlite3 -readonly "$db" "select count(*) from trials where status='done'" 2>/dev/null)
		[ "${k:-0}" -ge "$n" ] && return 0
		sleep 0.1
	done
	fail "the run did not get going: $(cat "$err")"
}

# For the tests that stop ranks: $ref is the local table of 100 slow trials
# (0.3 s each); the same run starts under mpirun in the background ($job;
# heartbeat $1 s; s.db, s.out, s.err); the worker ranks' pids are found
# ($rank_pid[N]) while it starts, and it is waited for until 2 trials are
# done.  (The ranks are looked up first: on a loaded machine the lookup
# takes seconds, and the run must not end meanwhile.)
mpi_slow_run_start() {
	local args=("$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 50 --seed 1
		    --metrics acc,logloss -q) r
	run "$CFL" repeat "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	ref=$out
	CFL_TEST_FAULT=slow MPI_TIMEOUT=120 mpi_run -x CFL_TEST_FAULT -n 3 "$CFL" repeat \
		"${args[@]}" --heartbeat "$1" --db s.db --name s >s.out 2>s.err &
	job=$!
	rank_pid=()
	for r in 1 2; do
		rank_pid[r]=$(mpi_rank_pid "$r" "$job")
		[ -n "${rank_pid[r]}" ] || fail "no rank $r under mpirun: $(cat s.err)"
	done
	mpi_wait_done s.db 2 s.err
}

# SIGSTOPs the given ranks of the job $job with their children and
# grandchildren (the worker, its trials); $all lists them, and they are
# killed when the test ends.
mpi_stop_ranks() {
	local r p
	all=""
	for r in "$@"; do all="$all ${rank_pid[r]}"; done
	trap 'kill -9 $all 2>/dev/null' EXIT
	# the ranks first, at once (finding their children takes a while on
	# a loaded machine, and the run goes on meanwhile)
	kill -STOP $all 2>/dev/null
	for r in "$@"; do all="$all $(pgrep -P "${rank_pid[r]}")"; done
	for p in $all; do all="$all $(pgrep -P "$p")"; done
	kill -STOP $all 2>/dev/null
}

# Waits up to 20 s for every pid in $1 to be gone (or a zombie); fails
# naming the first left.
mpi_wait_gone() {
	local p st left
	for _ in $(seq 200); do
		left=""
		for p in $1; do
			st=$(ps -o stat= -p "$p" 2>/dev/null)
			[ -z "$st" ] || [[ "$st" == Z* ]] || { left="$p ($st)"; break; }
		done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	fail "process $left outlived the job: $(ps -o pid=,stat=,args= -p "$(tr -s ' \n' ',' <<<"$1" | sed 's/^,//; s/,$//')")"
}

# mpirun -n 3: the table equals the local pool's for the same seed; both
# worker ranks ran trials; rank 0 said it chose mpi by itself.
test_mpi_repeat_equals_local() {
	mpi_skip
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 3 --seed 1 --metrics acc,logloss --num-jobs 2 --db local.db -q
	expect_rc 0
	local ref=$out
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 3 --seed 1 --metrics acc,logloss --db mpi.db
	mpi_rank0_rc
	expect_rc 0
	expect_err "started by mpirun with 3 ranks: using the mpi backend"
	[ "$out" = "$ref" ] || fail "mpi table differs from the local one:
$out
--- local:
$ref"
	[ "$(sqlite3 mpi.db "select count(*) from trials where status='done'")" = 6 ] ||
		fail "not 6 trials done: $(sqlite3 mpi.db 'select * from trials')"
	[ "$(sqlite3 mpi.db "select count(distinct worker) from trials")" = 2 ] ||
		fail "not both worker ranks: $(sqlite3 mpi.db 'select worker from trials')"
	[ "$(sqlite3 mpi.db "select count(*) from trials where worker not like 'rank:%'")" = 0 ] ||
		fail "a trial ran outside a worker rank"
	# explicit --backend mpi and --num-jobs per worker rank give the same
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 3 --seed 1 --metrics acc,logloss \
		--backend mpi --num-jobs 2 --db mpi2.db -q
	mpi_rank0_rc
	expect_rc 0
	[ "$out" = "$ref" ] || fail "mpi table (--num-jobs 2) differs: $out"
}

# Only rank 0 reads files: the worker ranks get the encoded parts by
# broadcast, so their own command line may name a DATA that does not exist
# on their node, and --test / --valid files work; the table equals the
# local run's with the same files.
test_mpi_test_valid_files_and_worker_ranks_read_no_data() {
	mpi_skip
	awk 'NR == 1 || NR % 5 >= 2' "$ROOT/datasets/iris.csv" >train.csv
	awk 'NR == 1 || NR % 5 == 0' "$ROOT/datasets/iris.csv" >test.csv
	awk 'NR == 1 || NR % 5 == 1' "$ROOT/datasets/iris.csv" >valid.csv
	local args=(--models linear,fcnn --set fcnn.epochs=5 --num-repeat 2 --seed 2 --metrics acc,logloss -q)
	run "$CFL" repeat train.csv --test test.csv --valid valid.csv "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	local ref=$out
	# rank 0 has the files; the others are told of files that are not there
	cat >rank.sh <<EOF
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then
	exec "$CFL" repeat train.csv --test test.csv --valid valid.csv "\$@"
fi
exec "$CFL" repeat /nonexistent/train.csv --test /nonexistent/test.csv "\$@"
EOF
	chmod +x rank.sh
	run mpi_run -n 3 "$(mpi_rc)" ./rank.sh "${args[@]}" --db mpi.db
	mpi_rank0_rc
	expect_rc 0
	[ "$out" = "$ref" ] || fail "mpi table differs from the local one:
$out
--- local:
$ref"
	[ "$(sqlite3 mpi.db "select count(distinct worker) from trials")" = 2 ] ||
		fail "not both worker ranks: $(sqlite3 mpi.db 'select worker from trials')"
}

# tune --command needs no dataset: the worker ranks run the program.
test_mpi_tune_command() {
	mpi_skip
	cat >f.sh <<'EOF'
#!/bin/sh
awk -v x="$1" 'BEGIN { printf "%.10f\n", (x - 2) * (x - 2) }'
EOF
	chmod +x f.sh
	printf 'x = uniform(-5, 5)\n' >f.params
	local args=(--command './f.sh {x}' --params f.params --num-search 8 --num-repeat 1
		    --num-parallel 2 --seed 4 --name t -q)
	run "$CFL" tune "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	local ref=$out
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" tune "${args[@]}" --db mpi.db
	mpi_rank0_rc
	expect_rc 0
	[ "$out" = "$ref" ] || fail "mpi tune --command differs from the local one:
$out
--- local:
$ref"
	[ "$(sqlite3 mpi.db "select count(*) from trials where status='done' and worker like 'rank:%'")" = 8 ] ||
		fail "not 8 trials on worker ranks: $(sqlite3 mpi.db 'select status, worker from trials')"
}

# mpirun -n 3 cfl tune: the candidates, their scores, the best parameters
# and the refit equal the local run's for the same seed.
test_mpi_tune_equals_local() {
	mpi_skip
	local args=("$ROOT/datasets/iris.csv" --model linear --num-search 6 --num-repeat 2
		    --num-parallel 2 --seed 3 --name t -q)
	run "$CFL" tune "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	local ref
	ref=$(grep -v "saved to" <<<"$out")
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" tune "${args[@]}" --db mpi.db
	mpi_rank0_rc
	expect_rc 0
	expect_out "Best Parameters"
	[ "$(grep -v "saved to" <<<"$out")" = "$ref" ] || fail "mpi tune differs from the local one:
$out
--- local:
$ref"
	[ "$(sqlite3 mpi.db "select count(*) from trials where worker not like 'rank:%' and status='done'")" = 0 ] ||
		fail "a trial ran outside a worker rank"
}

# A trial that segfaults, exits or hangs (past --trial-timeout) on a worker
# rank is a failed attempt, retried, then recorded as poison (it killed its
# process twice), as in the local pool; the rank lives on and the run
# completes.
test_mpi_faulty_trials_fail_and_the_run_completes() {
	mpi_skip
	local f fault reason status limit
	# the limit: 3 s for the hang, far more than a healthy trial takes on a
	# loaded machine; 60 s for the others
	for f in "segv:1|signal SIGSEGV|poison|60" "exit3:1|exit 3|poison|60" \
		"hang:1|timeout after 3 s|poison|3"; do
		IFS='|' read -r fault reason status limit <<<"$f"
		CFL_TEST_FAULT=$fault MPI_TIMEOUT=120 run mpi_run -x CFL_TEST_FAULT -n 3 "$(mpi_rc)" "$CFL" repeat \
			"$ROOT/datasets/iris.csv" --models linear --num-repeat 3 --trial-timeout "$limit" \
			--db "$fault.db" --name s
		mpi_rank0_rc
		expect_rc 0
		expect_err "linear repeat 1: $status after 2 attempts: $reason"
		expect_err "1 of 3 trials failed"
		expect_out "failed"
		[ "$(sqlite3 "$fault.db" "select status, attempt, error from trials where repeat=1")" = \
		  "$status|2|$reason" ] || fail "$fault: trial row: $(sqlite3 "$fault.db" 'select * from trials')"
		[ "$(sqlite3 "$fault.db" "select count(*) from trials where status='done'")" = 2 ] ||
			fail "$fault: the other trials did not finish"
	done
}

# kill -9 of a worker rank mid-run ends the job with a message; --resume
# NAME (DATA and the options come from the database) finishes it: nothing lost, nothing stored twice, the
# table of an uninterrupted run.
test_mpi_kill9_worker_rank_then_resume() {
	mpi_skip
	local mp n_done pid1 job
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 3 --seed 1 --metrics acc,logloss --num-jobs 2 --db local.db -q
	local ref=$out
	CFL_TEST_FAULT=hang:2 MPI_TIMEOUT=60 mpi_run -x CFL_TEST_FAULT -n 3 "$CFL" repeat \
		"$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 3 --seed 1 --metrics acc,logloss --db k.db --name k >k.out 2>k.err &
	job=$!
	mpi_wait_done k.db 4 k.err
	mp=$(mpi_mpirun_of "$job")
	pid1=$(mpi_rank_pid 1 "$job")
	[ -n "$pid1" ] || fail "no rank 1 under mpirun"
	# every process of the job: the ranks, their children, the trials
	local all p st
	all=$(mpi_ranks "$mp" | awk '{print $1}')
	for p in $all; do all="$all $(pgrep -P "$p")"; done
	for p in $all; do all="$all $(pgrep -P "$p")"; done
	kill -9 "$pid1"
	wait
	grep -q "the MPI job is ending" k.err || fail "no message from rank 0: $(cat k.err)"
	# (the coordinator's own hint may be cut off: mpirun stops forwarding
	# output as it kills the job; rank 0's MPI process says it first)
	mpi_wait_gone "$all"
	sqlite3 k.db "select id from trials where status='done'" | sort >done_before.txt
	n_done=$(wc -l <done_before.txt)
	# --resume NAME alone: rank 0 takes DATA and the options from the
	# database; the worker ranks take everything from rank 0
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" repeat --db k.db --resume k
	mpi_rank0_rc
	expect_rc 0
	expect_err "resuming run 'k': $n_done trials done, $((6 - n_done)) to run"
	[ "$(mpi_table "$out")" = "$(mpi_table "$ref")" ] || fail "resumed table differs: $out
--- local:
$ref"
	for id in $(cat done_before.txt); do
		[ "$(sqlite3 k.db "select count(*) from trial_attempts where trial=$id")" = 0 ] ||
			fail "trial $id ran again after resume"
	done
	[ "$(sqlite3 k.db "select count(*) from trials")" = 6 ] || fail "trials duplicated"
	# 6 trials x 2 metrics, on test only (nothing holds out validation rows)
	[ "$(sqlite3 k.db "select count(*) from metrics")" = 12 ] || fail "metrics duplicated"
	[ "$(sqlite3 k.db "select status from runs")" = done ] || fail "run not done"
}

# A worker rank that stops answering (SIGSTOP: a frozen node) is dropped
# after 5 heartbeats of silence and its trials go to the other rank; the run
# completes with the local table, and as MPI_Finalize would wait for the
# stopped rank for ever, rank 0 ends the job with MPI_Abort (the run is
# complete and stored; the job did not end cleanly).  What is checked is
# cfl's: the messages, the database, every process gone -- not mpirun's
# exit code (after MPI_Abort, mpirun itself may crash in its teardown).
test_mpi_stopped_worker_rank_is_dropped() {
	mpi_skip
	local ref job all stopped rank_pid
	mpi_slow_run_start 0.5
	mpi_stop_ranks 2
	stopped=$(ps -o pid=,stat=,args= -p "$(tr ' ' ',' <<<"$all" | sed 's/^,*//; s/,,*/,/g; s/,$//')")
	wait "$job"
	grep -q "worker rank 2 stopped answering (no word from worker for 2.5 s)" s.err ||
		fail "no word of the dropped rank: $(grep -v 'done in' s.err)
stopped: $stopped
trials per worker: $(sqlite3 s.db 'select worker, count(*) from trials group by worker')"
	grep -q "worker rank 2 did not finish within 10 s of the end" s.err ||
		fail "no word of the job's end: $(grep -v 'done in' s.err)"
	[ "$(mpi_table "$(cat s.out)")" = "$(mpi_table "$ref")" ] || fail "table differs: $(cat s.out)
--- local:
$ref"
	[ "$(sqlite3 s.db "select count(*) from trials where status='done'")" = 100 ] ||
		fail "not 100 trials done"
	# 100 trials x 2 metrics, on test only (nothing holds out validation rows)
	[ "$(sqlite3 s.db "select count(*) from metrics")" = 200 ] || fail "metrics lost or doubled"
	[ "$(sqlite3 s.db "select count(*) from trial_attempts where worker='rank:2' and reason like 'no word from worker%'")" -ge 1 ] ||
		fail "no attempt failed on rank 2: $(sqlite3 s.db 'select * from trial_attempts')"
	[ "$(sqlite3 s.db "select status from runs")" = done ] || fail "run not marked done"
	mpi_wait_gone "$all"
}

# Every worker rank stops answering: the run stops as if interrupted, rank 0
# ends the job (MPI_Abort: mpirun's exit code is not checked, see above),
# every process is gone, and --resume under mpirun finishes it with the
# local table.
test_mpi_every_worker_rank_stopped_then_resume() {
	mpi_skip
	local ref job all rank_pid
	mpi_slow_run_start 0.3
	mpi_stop_ranks 1 2
	wait "$job"
	grep -q "every worker rank stopped answering" s.err || fail "no word: $(grep -v 'done in' s.err)"
	grep -qF "mpirun -n 3 cfl repeat --resume s --db s.db" s.err ||
		fail "no launcher in the hint: $(grep -v 'done in' s.err)"
	grep -q "worker ranks 1, 2 did not finish" s.err || fail "no word of the end: $(grep -v 'done in' s.err)"
	[ "$(sqlite3 s.db "select status from runs")" = interrupted ] || fail "run not marked interrupted"
	mpi_wait_gone "$all"
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" repeat --db s.db --resume s
	mpi_rank0_rc
	expect_rc 0
	[ "$(mpi_table "$out")" = "$(mpi_table "$ref")" ] || fail "resumed table differs: $out
--- local:
$ref"
	[ "$(sqlite3 s.db "select count(*) from trials where status='done'")" = 100 ] || fail "not 100 trials done"
	# 100 trials x 2 metrics, on test only (nothing holds out validation rows)
	[ "$(sqlite3 s.db "select count(*) from metrics")" = 200 ] || fail "metrics lost or doubled"
}

# Bad backend choices are usage errors with a way out.
test_mpi_backend_usage_errors() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --backend nccl
	expect_rc 2
	expect_err "unknown backend 'nccl' (expected local, tcp or mpi)"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --backend tcp
	expect_rc 2
	expect_err "--backend tcp needs --listen"
	# --resume alone, where cfl cannot tell rank 0 before MPI starts, would
	# read the database on every rank
	run "$CFL" repeat --resume k --db none.db --backend mpi
	expect_rc 2
	expect_err "with the mpi backend, --resume NAME needs DATA"
	run "$CFL" tune --resume k --db none.db --backend mpi
	expect_rc 2
	expect_err "with the mpi backend, --resume NAME needs DATA"
	[ -e none.db ] && fail "a database was opened"
	if ! "$CFL" --version | grep -q '^backends:.* mpi'; then
		run "$CFL" repeat "$ROOT/datasets/iris.csv" --backend mpi
		expect_rc 2
		expect_err "built without MPI"
		expect_err "libopenmpi-dev"
		OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=3 run "$CFL" repeat "$ROOT/datasets/iris.csv"
		expect_rc 1
		expect_err "started by mpirun as rank 0 of 3"
		return 0
	fi
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --backend mpi --listen 127.0.0.1:0
	expect_rc 2
	expect_err "do not mix"
	# one rank (no mpirun): nothing to coordinate
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} run timeout 30 "$CFL" repeat \
		"$ROOT/datasets/iris.csv" --backend mpi --db one.db
	expect_rc 2
	expect_err "needs 2 ranks or more"
	[ -e one.db ] && fail "a database was opened"
	return 0
}

# Starts a one-node Slurm cluster for this test (slurmctld and slurmd on
# localhost, a config written here, no munge; the daemons are killed when
# the test ends) and exports SLURM_CONF.  Skips the test, saying why,
# where Debian's slurm-wlm is absent (make test-deps installs it), without
# root, or where its daemons cannot start.
mpi_slurm_start() {
	local b
	for b in slurmctld slurmd srun sinfo; do
		if ! command -v "$b" >/dev/null 2>&1; then
			skip "slurm-wlm is not installed ($b missing; make test-deps installs it)"
		fi
	done
	if [ "$(id -u)" != 0 ]; then
		skip "starting slurmd needs root"
	fi
	local cpus port
	cpus=$(nproc)
	port=$((20000 + RANDOM % 20000))
	mkdir -p state spool
	cat >slurm.conf <<-EOF
	ClusterName=cfltest
	SlurmctldHost=localhost
	SlurmctldPort=$port
	SlurmdPort=$((port + 1))
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/none
	CredType=cred/none
	StateSaveLocation=$TMP/state
	SlurmdSpoolDir=$TMP/spool
	SlurmctldPidFile=$TMP/slurmctld.pid
	SlurmdPidFile=$TMP/slurmd.pid
	SlurmctldLogFile=$TMP/slurmctld.log
	SlurmdLogFile=$TMP/slurmd.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SchedulerType=sched/builtin
	SelectType=select/cons_tres
	SelectTypeParameters=CR_CPU
	MpiDefault=pmix
	ReturnToService=2
	NodeName=localhost CPUs=$cpus State=UNKNOWN
	PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
	EOF
	export SLURM_CONF=$TMP/slurm.conf
	slurmctld -f "$SLURM_CONF" -D >slurmctld.out 2>&1 &
	local ctld=$!
	slurmd -f "$SLURM_CONF" -N localhost -D >slurmd.out 2>&1 &
	local d=$!
	# The pids are expanded now: the trap runs after this function's locals
	# are gone, and a bare `wait` would wait for the daemons forever.
	# slurmd may ignore SIGTERM while a step ends: never wait on it for long.
	trap "kill $ctld $d 2>/dev/null; sleep 1; kill -9 $ctld $d 2>/dev/null; wait $ctld $d 2>/dev/null" EXIT
	for _ in $(seq 50); do
		sinfo -h -o %T 2>/dev/null | grep -q idle && break
		sleep 0.2
	done
	sinfo -h -o %T 2>/dev/null | grep -q idle ||
		skip "the local Slurm cluster did not start ($(tail -1 slurmctld.log slurmd.log 2>/dev/null | tr '\n' ' '))"
}

# srun --mpi=pmix -n 3 under the one-node Slurm cluster: the table equals
# the local one, both worker ranks ran trials.
test_mpi_slurm_srun() {
	mpi_skip
	mpi_slurm_start
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 3 --seed 1 \
		--metrics acc,logloss --num-jobs 2 --db local.db -q
	local ref=$out
	# as under mpirun: Open MPI's and PMIx's own allocations are not ours to chase
	# (rank 0's own exit code is checked, as under mpirun, not srun's)
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} run timeout 60 srun --mpi=pmix -n 3 --overcommit \
		--immediate=20 "$(mpi_rc)" "$CFL" repeat "$ROOT/datasets/iris.csv" \
		--models linear,baseline --num-repeat 3 --seed 1 --metrics acc,logloss --db srun.db
	mpi_rank0_rc
	expect_rc 0
	expect_err "started by srun with 3 ranks: using the mpi backend"
	[ "$out" = "$ref" ] || fail "srun table differs from the local one: $out"
	[ "$(sqlite3 srun.db "select count(distinct worker) from trials where worker like 'rank:%'")" = 2 ] ||
		fail "not both worker ranks: $(sqlite3 srun.db 'select worker from trials')"
}

# ---- cfl auto across the ranks ----

# What of auto's output does not depend on the clock: its stdout without
# the seconds columns (the leaderboard's and the search's last field).
auto_board() {
	awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9]$/) $i = ""; print }' <<<"$1"
}

# Skips the test where cfl auto has no count budget yet: without one, which
# candidates finish depends on the machine's speed.
auto_budget_skip() {
	"$CFL" auto --help | grep -q -- --max-trials || skip "no count budget (--max-trials) in this build"
}

# The arguments of a reproducible auto run (a count budget, a seed) on
# iris: small, and two families.
auto_budget_args() {
	echo "$ROOT/datasets/iris.csv --models linear,tree --max-trials 8 --time-limit 600 --folds 3 --seed 5 --name a -q"
}

# mpirun -n 3 cfl auto is ONE run (not one per rank): rank 0 searches and
# bags, the worker ranks run every trial, and the time limit is the whole
# run's.
test_mpi_auto_is_one_run() {
	mpi_skip
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree \
		--time-limit 5 --folds 3 --db a.db
	mpi_rank0_rc
	expect_rc 0
	expect_err "started by mpirun with 3 ranks: using the mpi backend"
	[ "$(grep -c '^Leaderboard' <<<"$out")" = 1 ] || fail "not one leaderboard: $out"
	run "$CFL" runs --db a.db
	expect_rc 0
	[ "$(grep -c 'auto-' <<<"$out")" = 1 ] || fail "not one run: $out"
	[ "$(sqlite3 a.db "select status from runs")" = done ] || fail "run not done: $(sqlite3 a.db 'select name, status from runs')"
	[ "$(sqlite3 a.db "select count(distinct worker) from trials where worker like 'rank:%'")" = 2 ] ||
		fail "not both worker ranks: $(sqlite3 a.db 'select worker, count(*) from trials group by worker')"
	[ "$(sqlite3 a.db "select count(*) from trials where worker not like 'rank:%'")" = 0 ] ||
		fail "a trial ran outside a worker rank"
	# the bags' fold trials too
	[ "$(sqlite3 a.db "select count(*) from trials where fold >= 0 and status = 'done'")" -ge 3 ] ||
		fail "no bag finished its folds: $(sqlite3 a.db 'select fold, status from trials')"
}

# With a count budget, mpirun -n 3 gives the leaderboard and the bundle
# bytes of the local run.
test_mpi_auto_budget_equals_local() {
	mpi_skip
	auto_budget_skip
	# shellcheck disable=SC2207
	local args=($(auto_budget_args))
	run "$CFL" auto "${args[@]}" --num-jobs 2 --db local.db --save local.cfl
	expect_rc 0
	local ref
	ref=$(auto_board "$out")
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" auto "${args[@]}" --db mpi.db --save mpi.cfl
	mpi_rank0_rc
	expect_rc 0
	[ "$(auto_board "$out")" = "$ref" ] || fail "mpi leaderboard differs from the local one:
$out
--- local:
$ref"
	cmp local.cfl mpi.cfl || fail "the bundles differ"
	[ "$(sqlite3 mpi.db "select count(*) from trials where worker not like 'rank:%'")" = 0 ] ||
		fail "a trial ran outside a worker rank"
}

# srun under the one-node Slurm cluster: one auto run, its trials on the
# worker ranks; with a count budget, the local run's leaderboard and bundle.
test_mpi_slurm_srun_auto() {
	mpi_skip
	mpi_slurm_start
	local budget=1 args
	"$CFL" auto --help | grep -q -- --max-trials || budget=0
	if [ "$budget" = 1 ]; then
		# shellcheck disable=SC2207
		args=($(auto_budget_args))
	else
		args=("$ROOT/datasets/iris.csv" --models linear,tree --time-limit 5 --folds 3 --name a -q)
	fi
	run "$CFL" auto "${args[@]}" --num-jobs 2 --db local.db --save local.cfl
	expect_rc 0
	local ref
	ref=$(auto_board "$out")
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} run timeout 120 srun --mpi=pmix -n 3 --overcommit \
		--immediate=20 "$(mpi_rc)" "$CFL" auto "${args[@]}" --db srun.db --save srun.cfl
	mpi_rank0_rc
	expect_rc 0
	[ "$(grep -c '^Leaderboard' <<<"$out")" = 1 ] || fail "not one leaderboard: $out"
	[ "$(sqlite3 srun.db "select count(*) from runs")" = 1 ] || fail "not one run"
	[ "$(sqlite3 srun.db "select count(distinct worker) from trials where worker like 'rank:%'")" = 2 ] ||
		fail "not both worker ranks: $(sqlite3 srun.db 'select worker from trials')"
	[ "$budget" = 1 ] || return 0
	[ "$(auto_board "$out")" = "$ref" ] || fail "srun leaderboard differs from the local one:
$out
--- local:
$ref"
	cmp local.cfl srun.cfl || fail "the bundles differ"
}

# A worker rank killed (kill -9) mid-run ends the job; `--resume NAME`
# under mpirun finishes the same run, keeping every trial done: one run,
# done, no trial run twice, and with a count budget the leaderboard of an
# uninterrupted local run.
test_mpi_auto_kill9_rank_then_resume() {
	mpi_skip
	auto_budget_skip
	# shellcheck disable=SC2207
	local args=($(auto_budget_args)) ref job pid1 mp all p
	run "$CFL" auto "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	ref=$(auto_board "$out")
	CFL_TEST_FAULT=slow MPI_TIMEOUT=120 mpi_run -x CFL_TEST_FAULT -n 3 "$CFL" auto \
		"${args[@]}" --db k.db >k.out 2>k.err &
	job=$!
	mpi_wait_done k.db 4 k.err
	mp=$(mpi_mpirun_of "$job")
	pid1=$(mpi_rank_pid 1 "$job")
	[ -n "$pid1" ] || fail "no rank 1 under mpirun"
	all=$(mpi_ranks "$mp" | awk '{print $1}')
	for p in $all; do all="$all $(pgrep -P "$p")"; done
	for p in $all; do all="$all $(pgrep -P "$p")"; done
	kill -9 "$pid1"
	wait
	grep -q "the MPI job is ending" k.err || fail "no message from rank 0: $(cat k.err)"
	mpi_wait_gone "$all"
	[ "$(sqlite3 k.db "select status from runs")" != done ] || fail "the run was done before the kill"
	sqlite3 k.db "select id from trials where status='done'" | sort >done_before.txt
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" auto --db k.db --resume a
	mpi_rank0_rc
	expect_rc 0
	[ "$(sqlite3 k.db "select count(*) from runs")" = 1 ] || fail "not one run"
	[ "$(sqlite3 k.db "select status from runs")" = done ] || fail "run not done"
	for id in $(cat done_before.txt); do
		[ "$(sqlite3 k.db "select count(*) from trial_attempts where trial=$id")" = 0 ] ||
			fail "trial $id ran again after resume"
	done
	[ "$(auto_board "$out")" = "$ref" ] || fail "resumed leaderboard differs from the local one:
$out
--- local:
$ref"
}

# ---- the commands with nothing to spread ----

# Under mpirun, train (and the other commands that run no trials) runs
# once, on rank 0: one model file written once, one output; the other
# ranks say nothing.
test_mpi_train_and_others_run_once() {
	mpi_skip
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" train "$ROOT/datasets/iris.csv" --model linear -o m.cfl
	mpi_rank0_rc
	expect_rc 0
	[ "$(grep -c '^model_file' <<<"$out")" = 1 ] || fail "not one model written: $out"
	[ "$(grep -c '^cfl train: target ' <<<"$err")" = 1 ] || fail "not one training: $err"
	[ "$(grep -c '^cfl train: linear: ' <<<"$err")" = 1 ] || fail "not one training: $err"
	[ -s m.cfl ] || fail "no model file"
	for r in 1 2; do
		[ "$(cat "$TMP/rc.$r")" = 0 ] || fail "rank $r exit $(cat "$TMP/rc.$r")"
	done
	# the same output as one process gives: not three copies
	local once cmd
	for cmd in "predict m.cfl $ROOT/datasets/iris.csv -o p.csv" \
		"data describe $ROOT/datasets/iris.csv" "bundle --help"; do
		# shellcheck disable=SC2086
		once=$("$CFL" $cmd 2>/dev/null)
		# shellcheck disable=SC2086
		run mpi_run -n 3 "$(mpi_rc)" "$CFL" $cmd
		mpi_rank0_rc
		expect_rc 0
		[ -n "$once" ] || fail "cfl $cmd printed nothing"
		[ "$out" = "$once" ] || fail "cfl $cmd under mpirun: $out
--- once:
$once"
	done
}
