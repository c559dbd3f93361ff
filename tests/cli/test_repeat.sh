# cfl repeat: the table (golden), determinism across --num-jobs, progress,
# failures (fault injection), timeouts, Ctrl-C, kill -9 and --resume.
# Small data (iris), few repeats, the fast models (linear, baseline);
# --bootstrap makes linear depend on the trial seed.


# the table without the run's name line
table_of() { grep -E '^[|=-]' <<<"$1"; }

# fails when one of the pids is still alive (zombies count as gone)
expect_gone() {
	local p st left
	# a process killed by its parent's death (PR_SET_PDEATHSIG) goes a
	# moment later: wait up to 10 s
	for _ in $(seq 100); do
		left=""
		for p in "$@"; do
			st=$(ps -o stat= -p "$p" 2>/dev/null)
			[ -z "$st" ] || [[ "$st" == Z* ]] || { left="$p ($st)"; break; }
		done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	fail "process $left still running"
}

test_repeat_help() {
	run "$CFL" repeat --help
	expect_rc 0
	for o in --models --num-repeat --num-jobs --metrics --set --db --name --resume \
		--trial-timeout --max-retries --threads-per-trial --trials-per-worker \
		--folds --bootstrap -q Examples:; do
		expect_out "$o"
	done
}

test_repeat_usage_errors() {
	run "$CFL" repeat
	expect_rc 2
	expect_err "missing DATA"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models nosuch
	expect_rc 2
	expect_err "unknown model 'nosuch'"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --num-repeat 0
	expect_rc 2
	expect_err "--num-repeat"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --set linear.nosuch=1
	expect_rc 2
	expect_err "nosuch"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --set l2=1
	expect_rc 2
	expect_err "say which model"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --metrics mae --db x.db
	expect_rc 2
	expect_err "does not apply"
	run "$CFL" repeat missing.csv --db x.db
	expect_rc 1
	expect_err "missing.csv"
}

# The table on a fixed seed, byte for byte.
test_repeat_golden_table() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 2 --db r.db --name g -q
	expect_rc 0
	diff <(table_of "$out") "$ROOT/tests/golden/repeat_iris.txt" >&2 ||
		fail "table differs from tests/golden/repeat_iris.txt"
	expect_err "run 'g' stored in 'r.db'"
	expect_err "cfl report g --db r.db"
	# the store holds what the table shows: 6 done trials, their metrics
	# and predictions on test (nothing in this run uses a validation part,
	# so none is held out: linear and baseline train on all 120 rows)
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 6 ] ||
		fail "not 6 done trials"
	[ "$(sqlite3 r.db "select count(*) from metrics")" = 12 ] || fail "metrics count"
	[ "$(sqlite3 r.db "select count(*) from predictions")" = 6 ] || fail "predictions count"
	[ "$(sqlite3 r.db "select status from runs")" = done ] || fail "run not done"
}

# Highlights: one row has none; lower-is-better metrics mark the lowest mean.
test_repeat_highlight_rules() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 --num-jobs 1 \
		--ensemble none --db r.db -q
	expect_rc 0
	grep -q -- '-- ' <<<"$out" && fail "a single row is marked"
	run "$CFL" repeat "$ROOT/datasets/diabetes.csv" --task reg --models linear,baseline \
		--num-repeat 2 --num-jobs 2 --metrics mae,mse --ensemble none --db r.db -q
	expect_rc 0
	grep -E '^\|\s+linear' <<<"$out" | grep -q -- '-- ' || fail "linear (lower mae) not marked: $out"
	grep -E '^\|\s+baseline' <<<"$out" | grep -E -- '-- [0-9.]+ --.*-- [0-9.]+ --.*-- [0-9.]+ --.*-- [0-9.]+ --' &&
		fail "baseline marked best on means: $out"
	true
}

# The same table for 1, 2 and 8 workers (and a fresh process per trial).
test_repeat_deterministic_across_jobs() {
	local t1 t2 t8 tf
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 1 --db a.db -q
	t1=$(table_of "$out")
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 2 --db b.db -q
	t2=$(table_of "$out")
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 8 --db c.db -q
	t8=$(table_of "$out")
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 2 --trials-per-worker 1 --db d.db -q
	tf=$(table_of "$out")
	[ -n "$t1" ] || fail "no table"
	[ "$t1" = "$t2" ] || fail "J=1 and J=2 differ"
	[ "$t1" = "$t8" ] || fail "J=1 and J=8 differ"
	[ "$t1" = "$tf" ] || fail "fork per trial differs"
	# and the seeds differ between repeats (bootstrap makes them matter)
	[ "$(sqlite3 a.db "select count(distinct seed) from trials")" = 6 ] || fail "seeds repeat"
}

# Not on a terminal: one line per finished trial; -q: none.
test_repeat_progress_lines() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 --num-jobs 2 --db r.db
	expect_rc 0
	[ "$(grep -c '^\[[0-9]/3\] linear repeat [0-2]: done in' <<<"$err")" = 3 ] ||
		fail "expected 3 progress lines: $err"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 --num-jobs 2 --db r.db -q
	grep -q '^\[' <<<"$err" && fail "-q printed progress"
	true
}

# A crash, an exit, a hang past --trial-timeout, an allocation without bound
# and a model error each become a failed trial with its reason; the run
# completes and the table counts the failures.
test_repeat_faults() {
	local f reason status limit
	# the limit: 3 s for the hang, far more than any healthy trial takes on a
	# loaded machine; 60 s for the others (the oom case allocates 256 MB)
	for f in "segv:1|signal SIGSEGV|poison|60" "exit3:1|exit 3|poison|60" \
		"hang:1|timeout after 3 s|poison|3" "oom:1|out of memory|failed|60" \
		"error:1|injected model error|failed|60"; do
		IFS='|' read -r fault reason status limit <<<"$f"
		CFL_TEST_FAULT=$fault run timeout -k 2 120 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 \
			--num-jobs 2 --trial-timeout "$limit" --db "$fault.db" --name f
		expect_rc 0
		expect_err "linear repeat 1: $status after 2 attempts: $reason"
		expect_err "1 of 3 trials failed"
		expect_out "failed"
		[ "$(sqlite3 "$fault.db" "select status, attempt, error from trials where repeat=1")" = \
		  "$status|2|$reason" ] || fail "$fault: trial row: $(sqlite3 "$fault.db" 'select * from trials')"
		[ "$(sqlite3 "$fault.db" "select count(*) from trial_attempts where reason='$reason'")" = 2 ] ||
			fail "$fault: attempts not recorded"
		[ "$(sqlite3 "$fault.db" "select count(*) from trials where status='done'")" = 2 ] ||
			fail "$fault: the other trials did not finish"
	done
}

# A trial that crashes once succeeds on its retry; --max-retries 0 does not retry.
test_repeat_retry() {
	CFL_TEST_FAULT=segv:0:1 run timeout -k 2 60 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 \
		--num-jobs 1 --db r.db --name a
	expect_rc 0
	[ "$(sqlite3 r.db "select status, attempt from trials where repeat=0")" = "done|2" ] ||
		fail "not retried: $(sqlite3 r.db 'select * from trials')"
	CFL_TEST_FAULT=segv:0:1 run timeout -k 2 60 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 \
		--num-jobs 1 --max-retries 0 --db r.db --name b
	expect_rc 0
	expect_err "poison after 1 attempt: signal SIGSEGV"
	CFL_TEST_FAULT=error run timeout -k 2 60 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 \
		--num-jobs 1 --db r.db --name c
	expect_rc 1
	expect_err "every trial failed"
}

# Ctrl-C: exit 130, children gone, the database consistent (no trial left
# running, the run interrupted), then --resume finishes it.
test_repeat_ctrl_c_then_resume() {
	local pid rc2 ref kids
	CFL_TEST_FAULT=hang:1 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 2 \
		--db r.db --name c >out.txt 2>err.txt &
	pid=$!
	for _ in $(seq 100); do
		[ "$(sqlite3 r.db "select count(*) from trials where status='running' and repeat=1" 2>/dev/null)" = 2 ] && break
		sleep 0.1
	done
	kids=$(pgrep -P $pid)
	[ -n "$kids" ] || fail "no worker children"
	kill -INT $pid
	wait $pid
	rc2=$?
	[ "$rc2" = 130 ] || fail "exit $rc2 after SIGINT: $(cat err.txt)"
	grep -q "interrupted; run 'c' kept" err.txt || fail "no resume hint: $(cat err.txt)"
	grep -q "cfl repeat --resume c --db r.db" err.txt || fail "no resume command: $(cat err.txt)"
	expect_gone $kids
	[ "$(sqlite3 r.db "select status from runs")" = interrupted ] || fail "run not interrupted"
	[ "$(sqlite3 r.db "select count(*) from trials where status='running'")" = 0 ] ||
		fail "running trials left"
	# --resume alone: DATA and the plan come from the stored run
	run "$CFL" repeat --resume c --db r.db --num-jobs 1 -q
	expect_rc 0
	ref=$(table_of "$(cat "$ROOT/tests/golden/repeat_iris.txt")")
	[ "$(table_of "$out")" = "$ref" ] || fail "resumed table differs: $out"
	[ "$(sqlite3 r.db "select status from runs")" = done ] || fail "run not done"
}

# kill -9 of the coordinator mid-run: committed trials are kept, none is
# run or stored twice, and the resumed table equals an uninterrupted run's.
test_repeat_kill9_then_resume() {
	local pid n_done kids
	CFL_TEST_FAULT=hang:2 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 2 \
		--db r.db --name k >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		n_done=$(sqlite3 r.db "select count(*) from trials where status='done'" 2>/dev/null)
		[ "${n_done:-0}" -ge 4 ] && break
		sleep 0.1
	done
	kids=$(pgrep -P $pid)
	[ -n "$kids" ] || fail "no worker children"
	kill -9 $pid
	wait $pid 2>/dev/null
	expect_gone $kids
	n_done=$(sqlite3 r.db "select count(*) from trials where status='done'")
	[ "$n_done" -ge 4 ] || fail "only $n_done trials committed before kill -9"
	sqlite3 r.db "select id from trials where status='done'" | sort >done_before.txt
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none --num-jobs 2 --db r.db --resume k
	expect_rc 0
	expect_err "resuming run 'k': $n_done trials done, $((6 - n_done)) to run"
	[ "$(table_of "$out")" = "$(cat "$ROOT/tests/golden/repeat_iris.txt")" ] ||
		fail "resumed table differs: $out"
	# the trials done before were not run again
	for id in $(cat done_before.txt); do
		[ "$(sqlite3 r.db "select count(*) from trial_attempts where trial=$id")" = 0 ] ||
			fail "trial $id has attempts after resume"
	done
	[ "$(sqlite3 r.db "select count(*) from trials")" = 6 ] || fail "trials duplicated"
	[ "$(sqlite3 r.db "select count(*) from metrics")" = 12 ] || fail "metrics duplicated"	# 6 trials x 2 metrics, on test only
	# a changed plan is refused
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 --db r.db --resume k
	expect_rc 1
	expect_err "another plan"
	run "$CFL" repeat --resume nosuch --db r.db
	expect_rc 1
	expect_err "no run 'nosuch'"
}

# --folds K: K trials per repeat with out-of-fold predictions covering train.
test_repeat_folds() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 --folds 3 --num-jobs 2 --db r.db -q
	expect_rc 0
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 6 ] || fail "not 6 fold trials"
	# the folds of a repeat cover the training part once
	[ "$(sqlite3 r.db "select sum(n) from predictions where split='oof' and trial in (select id from trials where repeat=0)")" = 120 ] ||
		fail "oof rows do not cover the 120 training rows"
	[ "$(sqlite3 r.db "select count(*) from predictions where split='oof'")" = 6 ] || fail "oof predictions"
}

# More jobs x threads than cores draws a warning.
test_repeat_threads_warning() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline --num-repeat 1 --num-jobs 3 \
		--threads-per-trial 4 --db r.db -q
	expect_rc 0
	expect_err "warning: 3 jobs x 4 threads per trial exceeds"
}
