# cfl repeat --ensemble / --folds / --bootstrap, and `cfl report` printing
# exactly the table the run printed.  Small runs of the linear and baseline
# models on iris (fast, deterministic).  Skipped while `cfl repeat` is not
# built in.

have_repeat() { "$CFL" repeat --help >/dev/null 2>&1; }

# The stored predictions of ensemble $2 on split $3 in database $1, as hex.
ens_pred_hex() {
	sqlite3 "$1" "SELECT hex(p.data) FROM ensemble_predictions p JOIN ensembles e
		ON e.id = p.ensemble WHERE e.name = '$2' AND p.split = '$3'"
}

test_repeat_ensemble_report_prints_what_the_run_printed() {
	have_repeat || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--num-repeat 2 --num-jobs 2 --ensemble mean,stacking --db r.db --name r1 -q
	expect_rc 0
	printed=$out
	grep -q '^|   mean   |' <<<"$printed" || fail "no mean row: $printed"
	grep -q '^| stacking |' <<<"$printed" || fail "no stacking row"
	run "$CFL" report r1 --db r.db
	expect_rc 0
	[ "$out" = "$printed" ] || fail "cfl report differs from the run's table:
$(diff <(echo "$printed") <(echo "$out"))"
	run "$CFL" report --db r.db
	[ "$out" = "$printed" ] || fail "the latest run's report differs"
}

test_repeat_ensemble_every_method_with_folds() {
	have_repeat || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 \
		--folds 3 --ensemble mean,vote,weighted,stacking,greedy \
		--num-jobs 2 --db r.db --name f -q
	expect_rc 0
	for e in mean vote weighted stacking greedy; do
		grep -Eq "^\| +$e +\|" <<<"$out" || fail "no $e row: $out"
	done
	# each ensemble row has std 0
	[ "$(grep -E '^\| +(mean|vote|weighted|stacking|greedy) +\|' <<<"$out" |
		grep -c '0.000000 -- |\| *0.000000 *|')" = 5 ] || fail "an ensemble row has std != 0"
	command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
	members=$(sqlite3 r.db "SELECT members FROM ensembles WHERE name = 'stacking'")
	grep -q "on [0-9]* oof rows" <<<"$members" || fail "stacking did not learn on out-of-fold rows: $members"
	# 2 repeats x 3 folds: members of 3 trials each
	grep -q "trials 1+2+3,4+5+6;" <<<"$members" || fail "folds not grouped: $members"
	[ "$(sqlite3 r.db "SELECT count(*) FROM predictions WHERE split = 'oof'")" = 6 ] ||
		fail "out-of-fold predictions not stored"
}

test_repeat_ensemble_defaults_and_none() {
	have_repeat || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 1 \
		--db r.db --name one -q
	expect_rc 0
	grep -Eq '^\| +(mean|stacking) +\|' <<<"$out" && fail "ensembles of a single model: $out"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--num-repeat 2 --ensemble none --db r.db --name none -q
	expect_rc 0
	grep -Eq '^\| +mean +\|' <<<"$out" && fail "--ensemble none built one"
	return 0
}

test_repeat_ensemble_usage_errors() {
	have_repeat || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --ensemble mean,bogus --db r.db
	expect_rc 2
	expect_err "unknown ensemble 'bogus'"
	run "$CFL" repeat "$ROOT/datasets/diabetes.csv" --models linear \
		--ensemble vote --db r.db
	expect_rc 2
	expect_err "needs classification"
	[ ! -e r.db ] || [ "$(sqlite3 r.db 'SELECT count(*) FROM trials' 2>/dev/null || echo 0)" = 0 ] ||
		fail "trials ran before the usage error"
}

# linear is deterministic: without --bootstrap its repeats agree (std 0),
# with it each repeat fits another sample.
test_repeat_bootstrap_resamples() {
	have_repeat || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/diabetes.csv" --models linear --num-repeat 3 \
		--ensemble none --db r.db --name plain -q
	expect_rc 0
	grep -q '| -- 0.000000 -- |\|| 0.000000 |' <<<"$out" || fail "plain repeats differ: $out"
	run "$CFL" repeat "$ROOT/datasets/diabetes.csv" --models linear --num-repeat 3 \
		--bootstrap --ensemble none --db r.db --name boot -q
	expect_rc 0
	std=$(sed -n '/| *linear *|/p' <<<"$out" | awk -F'|' '{print $4}' | tr -d ' -')
	[ -n "$std" ] && [ "$std" != "0.000000" ] || fail "bootstrap repeats agree (std '$std'): $out"
}

# The ensembles learn nothing from test labels: with the test file's labels
# changed, every stored ensemble prediction is the same byte for byte, and
# the stacking row's test score changes.
test_repeat_ensemble_ignores_test_labels() {
	have_repeat || skip "cfl repeat is not built in"
	command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
	src="$ROOT/datasets/iris.csv"
	{ head -1 "$src"; tail -n +2 "$src" | awk 'NR % 5 != 0'; } >train.csv
	{ head -1 "$src"; tail -n +2 "$src" | awk 'NR % 5 == 0'; } >test.csv
	{ head -1 "$src"; tail -n +2 "$src" | awk 'NR % 5 == 0' |
		sed 's/setosa$/X/; s/versicolor$/setosa/; s/virginica$/versicolor/; s/X$/virginica/'; } >test2.csv
	for k in 1 2; do
		t=test.csv; [ $k = 2 ] && t=test2.csv
		run "$CFL" repeat train.csv --test "$t" --models linear,baseline --num-repeat 2 \
			--ensemble mean,weighted,stacking,greedy --db "r$k.db" --name r -q
		expect_rc 0
		eval "out$k=\$out"
	done
	for e in mean weighted stacking greedy; do
		a=$(ens_pred_hex r1.db $e test) b=$(ens_pred_hex r2.db $e test)
		[ -n "$a" ] || fail "no stored $e predictions"
		[ "$a" = "$b" ] || fail "$e's test predictions moved with the test labels"
	done
	s1=$(grep '| stacking |' <<<"$out1") s2=$(grep '| stacking |' <<<"$out2")
	[ "$s1" != "$s2" ] || fail "the stacking row did not see the new test labels"
}

# On messy regression data (24 validation rows, a weak
# tree among the members) stacking does not lose to the plain
# mean (before: an unconstrained meta-learner, RMSE 9.5 against the mean's
# 8.3); its weights are non-negative and sum to one.
test_repeat_ensemble_stacking_not_worse_than_mean() {
	have_repeat || skip "cfl has no repeat command"
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_messy" reg 300 4 > mreg.csv || fail "fixture_messy failed"
	run "$CFL" repeat mreg.csv --models linear,tree,fcnn --num-repeat 3 --metrics rmse \
		--ensemble mean,stacking --db r.db --name s -q
	expect_rc 0
	local mean stack
	mean=$(sed 's/--//g' <<<"$out" | awk '$2 == "mean" { print $4 }')
	stack=$(sed 's/--//g' <<<"$out" | awk '$2 == "stacking" { print $4 }')
	[ -n "$mean" ] && [ -n "$stack" ] || fail "no mean or stacking row: $out"
	awk -v s="$stack" -v m="$mean" 'BEGIN { exit !(s <= m) }' ||
		fail "stacking RMSE $stack above the mean's $mean"
	command -v sqlite3 >/dev/null || return 0
	members=$(sqlite3 r.db "SELECT members FROM ensembles WHERE name = 'stacking'")
	grep -q 'meta non-negative weights summing to 1 on 24 valid rows' <<<"$members" ||
		fail "stacking's members: $members"
	awk -v w="$(sed 's/.*weights \([^;]*\);.*/\1/' <<<"$members")" 'BEGIN {
		n = split(w, a, ","); for (i = 1; i <= n; i++) { if (a[i] < 0) exit 1; s += a[i] }
		exit !(n == 9 && s > 0.999 && s < 1.001) }' || fail "weights: $members"
}
