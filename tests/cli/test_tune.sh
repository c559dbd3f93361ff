# CLI tests of cfl tune: options and usage errors, params file errors with
# file:line:col and a caret, a small model search with its table, Best
# Parameters, refit and saved model, --command on Branin (quality: regret
# below 0.01 within 50 evaluations), the same history for any --num-jobs,
# --resume after kill -9, grid, failed trials, --timeout.  Small budgets.

# Branin as a program: prints f(x0, x1) on its last line.
tune_branin_script() {
	cat > branin.sh <<'EOF'
#!/bin/sh
[ -n "${SLEEP:-}" ] && sleep "$SLEEP"
awk -v x="$1" -v y="$2" 'BEGIN { pi = atan2(0, -1); b = 5.1 / (4 * pi * pi); c = 5 / pi;
  t = 1 / (8 * pi); u = y - b * x * x + c * x - 6;
  printf "log line\n%.10f\n", u * u + 10 * (1 - t) * cos(x) + 10 }'
EOF
	chmod +x branin.sh
	printf 'x0 = uniform(-5, 10)   # first\nx1 = uniform(0, 15)\n' > branin.params
}

# Waits up to 60 s for $2 trials done in database $1 (a run to cut).
tune_wait_done() {
	local n
	for _ in $(seq 600); do
		n=$(sqlite3 "$1" "select count(*) from trials where status='done'" 2>/dev/null)
		[ "${n:-0}" -ge "$2" ] && return 0
		sleep 0.1
	done
	fail "no $2 trials done in $1 within 60 s"
}

# The candidate rows of a tune table (id and cells).
tune_rows() { grep '^| [0-9a-f]\{8\} ' <<<"$1"; }

test_tune_help() {
	run "$CFL" tune --help
	expect_rc 0
	for o in --model --params --set --num-search --num-repeat --num-jobs --num-parallel \
		 --metric --method --grid-points --liar --command --direction --db --name \
		 --resume --timeout --trial-timeout --max-retries Examples; do
		expect_out "$o"
	done
	expect_out "[10]"
	expect_out "[bo]"
}

test_tune_usage_errors() {
	run "$CFL" tune "$ROOT/datasets/iris.csv" --method nope
	expect_rc 2; expect_err "--method must be bo, random or grid"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model nope
	expect_rc 2; expect_err "unknown model 'nope'"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --direction max
	expect_rc 2; expect_err "--direction applies to --command only"
	run "$CFL" tune
	expect_rc 2; expect_err "missing DATA"
	run "$CFL" tune --command 'echo 1'
	expect_rc 2; expect_err "--command needs --params"
	printf 'x = uniform(0, 1)\n' > p.params
	run "$CFL" tune --command 'echo {y}' --params p.params
	expect_rc 2; expect_err "'{y}' is not a parameter"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --num-search 0
	expect_rc 2; expect_err "--num-search must be"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --method grid \
		--params p.params
	expect_rc 2; expect_err "linear has no parameter 'x'"
}

test_tune_params_errors() {
	printf '# space\nl2 = loguniform(0, 1)\n' > bad.params
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --params bad.params --db t.db
	expect_rc 2
	expect_err "bad.params:2:17: loguniform() needs a positive low end"
	expect_err "    l2 = loguniform(0, 1)"
	expect_err "                    ^"
	printf 'l2 = loguniform(1e-3, 1)\nmax_iter = uniform(1, 5.5)\n' > bad2.params
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --params bad2.params --db t.db
	expect_rc 2; expect_err "bad2.params:2:23: 'max_iter' takes integers"
	printf 'l2 = loguniform(1e-3, 1)\n' > ok.params
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --params ok.params --set l2=-1 --db t.db
	expect_rc 2; expect_err "--set"
	[ ! -e t.db ] || fail "a usage error wrote a database"
}

test_tune_linear() {
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --num-search 4 --num-repeat 2 \
		--num-jobs 2 --db t.db --name lin
	expect_rc 0
	expect_out "Candidates of run 'lin' on the validation part (2 seeds each)"
	expect_out "Best Parameters"
	expect_out "{'l2': "
	expect_out "best     ("
	expect_out "refit with 2 fresh seeds, on the test part"
	expect_out "Best model saved to lin.cfl"
	[ "$(tune_rows "$out" | wc -l)" = 4 ] || fail "expected 4 candidates: $out"
	[ -s lin.cfl ] || fail "no model file"
	head -1 lin.cfl | grep -q "cfl-model" || fail "not a model file"
	if "$CFL" predict --help >/dev/null 2>&1; then
		run "$CFL" predict lin.cfl "$ROOT/datasets/iris.csv"
		expect_rc 0
		expect_out "prediction"
	fi
	# scored on valid: 4 candidates x 2 seeds, plus the refit's 2
	n=$(sqlite3 t.db "select count(*) from trials" 2>/dev/null || echo 10)
	[ "$n" = 10 ] || fail "expected 10 trials, got $n"
	# the default space is params/linear.params
	run "$CFL" runs --db t.db
	expect_out "lin"
}

test_tune_report_again() {
	"$CFL" tune "$ROOT/datasets/iris.csv" --model linear --num-search 3 --num-repeat 2 \
		--num-jobs 2 --db t.db --name again -q > first.txt 2>/dev/null || fail "tune failed"
	run "$CFL" report again --db t.db
	expect_rc 0
	# the same text, but for the saved model's line
	[ "$out" = "$(grep -v '^Best model saved to' first.txt | sed '$d')" ] ||
		fail "cfl report differs: $(diff <(echo "$out") first.txt)"
}

test_tune_branin_command() {
	tune_branin_script
	run "$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params \
		--num-search 50 --num-repeat 1 --num-jobs 2 --num-parallel 1 --seed 0 --db t.db -q
	expect_rc 0
	expect_out "on value"
	best=$(grep -o 'score -[0-9.]*' <<<"$out" | head -1 | cut -c8-)
	awk -v b="$best" 'BEGIN { exit !(b - 0.397887 < 0.01 && b > 0.397) }' ||
		fail "regret too high: best $best"
}

test_tune_same_history_any_jobs() {
	tune_branin_script
	for j in 1 2; do
		"$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 9 \
			--num-repeat 1 --num-jobs $j --num-parallel 3 --seed 4 --db t$j.db -q \
			> out$j.txt 2>/dev/null || fail "tune -j $j failed"
	done
	a=$(tune_rows "$(cat out1.txt)"); b=$(tune_rows "$(cat out2.txt)")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "histories differ: $a // $b"
	# another seed, another history
	"$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 9 \
		--num-repeat 1 --num-jobs 2 --num-parallel 3 --seed 5 --db t3.db -q > out3.txt 2>/dev/null
	[ "$a" != "$(tune_rows "$(cat out3.txt)")" ] || fail "seed ignored"
}

test_tune_resume_after_kill() {
	tune_branin_script
	export SLEEP=0.2
	"$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 14 \
		--num-repeat 1 --num-jobs 2 --num-parallel 2 --db full.db --name r -q > full.txt 2>/dev/null ||
		fail "uninterrupted run failed"
	"$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 14 \
		--num-repeat 1 --num-jobs 2 --num-parallel 2 --db cut.db --name r -q > /dev/null 2>&1 &
	pid=$!
	tune_wait_done cut.db 2
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	if command -v sqlite3 >/dev/null; then
		n=$(sqlite3 cut.db "select count(*) from trials where status = 'done'")
		[ "$n" -lt 14 ] || fail "the run was not cut ($n trials done)"
	fi
	run "$CFL" tune --resume r --db cut.db
	expect_rc 0
	a=$(tune_rows "$(cat full.txt)"); b=$(tune_rows "$out")
	[ "$(wc -l <<<"$a")" = 14 ] && [ "$a" = "$b" ] || fail "resumed history differs: $a // $b"
}

# --resume with another --num-jobs: --num-parallel, when it was not given,
# stays the run's own (it was derived from the first --num-jobs), so the run
# resumes instead of being "another plan"; a --num-parallel given anew
# that differs is still refused.
test_tune_resume_with_other_num_jobs() {
	tune_branin_script
	export SLEEP=0.2
	"$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 8 \
		--num-repeat 1 --num-jobs 1 --db full.db --name r -q > full.txt 2>/dev/null ||
		fail "uninterrupted run failed"
	"$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 8 \
		--num-repeat 1 --num-jobs 1 --db cut.db --name r -q > /dev/null 2>&1 &
	pid=$!
	tune_wait_done cut.db 2
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	run "$CFL" tune --resume r --db cut.db --num-jobs 2 --num-parallel 2
	expect_rc 1; expect_err "another plan"
	run "$CFL" tune --resume r --db cut.db --num-jobs 2
	expect_rc 0
	a=$(tune_rows "$(cat full.txt)"); b=$(tune_rows "$out")
	[ "$(wc -l <<<"$a")" = 8 ] && [ "$a" = "$b" ] || fail "resumed history differs: $a // $b"
}

test_tune_grid() {
	printf 'l2 = choice(0.01, 1, 100)\nfit_intercept = true\n' > g.params
	run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --params g.params --method grid \
		--num-search 10 --num-repeat 1 --num-jobs 2 --db t.db
	expect_rc 0
	[ "$(tune_rows "$out" | wc -l)" = 3 ] || fail "expected the 3 grid points: $out"
	printf 'l2 = loguniform(0.01, 100)\n' > c.params
	run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --params c.params --method grid --db t.db
	expect_rc 2; expect_err "--grid-points"
	run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --params c.params --method grid \
		--grid-points 2 --num-repeat 1 --num-jobs 1 --db t.db
	expect_rc 0
	expect_out "{'l2': 0.01}"
}

test_tune_failed_trials() {
	# the program fails for x > 0.5: those candidates fail, the search goes on
	cat > f.sh <<'EOF'
#!/bin/sh
awk -v x="$1" 'BEGIN { if (x > 0.5) { print "boom" > "/dev/stderr"; exit 3 } printf "%.8f\n", (x - 0.2) * (x - 0.2) }'
EOF
	chmod +x f.sh
	printf 'x = uniform(0, 1)\n' > f.params
	run "$CFL" tune --command './f.sh {x}' --params f.params --num-search 12 --num-repeat 1 \
		--num-jobs 2 --max-retries 0 --db t.db
	expect_rc 0
	expect_err "failed"
	expect_out "failed"
	best=$(grep -o 'score -[0-9.e-]*' <<<"$out" | head -1 | cut -c8-)
	awk -v b="$best" 'BEGIN { exit !(b < 0.01) }' || fail "best $best"
	# a program that always fails: exit 1
	run "$CFL" tune --command 'exit 1' --params f.params --num-search 3 --num-repeat 1 \
		--num-jobs 1 --max-retries 0 --db t2.db
	expect_rc 1; expect_err "every candidate failed"
}

test_tune_timeout() {
	tune_branin_script
	export SLEEP=0.3
	run "$CFL" tune --command './branin.sh {x0} {x1}' --params branin.params --num-search 40 \
		--num-repeat 1 --num-jobs 2 --num-parallel 2 --timeout 0.5 --db t.db
	expect_rc 0
	expect_err "--timeout"
	n=$(tune_rows "$out" | wc -l)
	[ "$n" -lt 10 ] || fail "--timeout ignored: $n candidates"
}

# An installed cfl (PREFIX/bin/cfl, as `make install` lays it out) finds its
# default spaces in PREFIX/share/cfl/params from any working folder.
test_tune_installed_finds_default_params() {
	mkdir -p p/bin p/share/cfl/params work
	cp "$CFL" p/bin/cfl
	cp "$ROOT"/params/*.params p/share/cfl/params/
	cd work
	run "$TMP/p/bin/cfl" tune "$ROOT/datasets/iris.csv" --model linear --method random \
		--num-search 2 --num-repeat 1 --db t.db -q
	expect_rc 0
	expect_out "Best"
	rm -r "$TMP/p/share/cfl/params"
	run "$TMP/p/bin/cfl" tune "$ROOT/datasets/iris.csv" --model linear --num-search 2 --db t2.db -q
	expect_rc 2
	expect_err "linear.params"
}

# --metrics LIST, as repeat has it: every trial is scored with these (the
# scored metric first when the list lacks it), the tables show them, and
# the run resumes with the same list
test_tune_metrics_list() {
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --method random --num-search 2 \
		--num-repeat 1 --metrics f1,logloss --db t.db --name m -q
	expect_rc 0
	grep -q '| metrics *| *acc *| *f1 *| *logloss *|' <<<"$(sed 's/  */ /g' <<<"$out")" ||
		fail "the tables lack acc, f1 and logloss in order: $out"
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	[ "$(sqlite3 t.db "SELECT group_concat(DISTINCT metric) FROM (SELECT metric FROM metrics
		ORDER BY trial, rowid)")" = "acc,f1,logloss" ] ||
		fail "stored metrics: $(sqlite3 t.db "SELECT DISTINCT metric FROM metrics")"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --metrics rmse --db t.db -q
	expect_rc 2
	expect_err "--metrics"
	run "$CFL" tune --command 'echo 1' --params x.params --metrics acc --db t.db
	expect_rc 2
	expect_err "one metric, 'value'"
}
