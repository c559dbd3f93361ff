# cfl runs: listing the runs of a database, and its errors.

test_runs_help() {
	run "$CFL" runs --help
	expect_rc 0
	expect_out "--db FILE"
	expect_out "Examples:"
}

test_runs_bad_option() {
	run "$CFL" runs --bogus
	expect_rc 2
	run "$CFL" runs extra
	expect_rc 2
	expect_err "unexpected argument 'extra'"
}

test_runs_missing_or_bad_database() {
	run "$CFL" runs --db missing.db
	expect_rc 1
	expect_err "no database 'missing.db'"
	[ ! -e missing.db ] || fail "cfl runs created missing.db"
	mkdir adir
	run "$CFL" runs --db adir
	expect_rc 1
	expect_err "it is a folder"
	printf 'a,b\n1,2\n' >notdb.db
	run "$CFL" runs --db notdb.db
	expect_rc 1
	expect_err "is not a cfl database"
}

# With `cfl repeat` built in: a run shows up with its counts and best row.
test_runs_lists_a_repeat_run() {
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline --num-repeat 2 \
		--num-jobs 1 --db runs.db --name first -q
	expect_rc 0
	run "$CFL" runs --db runs.db
	expect_rc 0
	expect_out "first"
	expect_out "repeat"
	expect_out "done"
	expect_out "2/2"
}

# A tune run's best is the candidate the run chose on
# validation (the "best (HEX)" its report prints) with its refit's test
# mean, not the candidate with the best test mean (on wine, seed 0, those
# differ: the old listing named e2ef51d5).
test_runs_tune_best_is_the_chosen_candidate() {
	"$CFL" tune --help >/dev/null 2>&1 || skip "cfl has no tune command"
	run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --num-search 4 --num-repeat 1 \
		--db t.db --name tt -q
	expect_rc 0
	local hex
	hex=$(sed -n 's/^best  *(\([0-9a-f]*\)).*/\1/p' <<<"$out")
	[ -n "$hex" ] || fail "no best candidate in: $out"
	refit=$(grep "^| best ($hex)" <<<"$out" | awk -F'|' '{ gsub(/[ -]/, "", $3); print $3 }')
	run "$CFL" runs --db t.db
	expect_rc 0
	grep -Eq "^tt .* $hex acc $refit \(refit\)\$" <<<"$out" ||
		fail "runs does not name the chosen candidate $hex (refit acc $refit): $out"
}
