# cfl report: tables of stored runs against golden files, options, errors.
# The database comes from tests/cli/fixture_store.c (fixed values, no
# training).  CFL_UPDATE_GOLDEN=1 rewrites tests/golden/report_* (read the
# diff before committing).

report_fixture() {
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_store" "$1" ||
		fail "fixture_store failed"
}

# Compares $out (plus the newline $(...) dropped) with a golden file.
expect_golden() {
	local want="$ROOT/tests/golden/$1"
	if [ -n "${CFL_UPDATE_GOLDEN:-}" ]; then
		printf '%s\n' "$out" >"$want"
		return
	fi
	diff <(printf '%s\n' "$out") "$want" >"$TMP/.diff" ||
		fail "output differs from $1: $(head -20 "$TMP/.diff")"
}

test_report_help() {
	run "$CFL" report --help
	expect_rc 0
	expect_out "usage: cfl report"
	expect_out "--format FMT"
	expect_out "[the latest run]"
	expect_out "Examples:"
}

test_report_usage_errors() {
	run "$CFL" report --bogus
	expect_rc 2
	run "$CFL" report a b
	expect_rc 2
	expect_err "unexpected argument 'b'"
	run "$CFL" report --format xml
	expect_rc 2
	expect_err "unknown format 'xml'"
	run "$CFL" report --out ""
	expect_rc 2
}

test_report_missing_database_or_run() {
	run "$CFL" report --db missing.db
	expect_rc 1
	expect_err "missing.db"
	[ ! -e missing.db ] || fail "cfl report created missing.db"
	report_fixture fx.db
	run "$CFL" report nosuchrun --db fx.db
	expect_rc 1
	expect_err "no run 'nosuchrun'"
}

test_report_repeat_golden_every_format() {
	report_fixture fx.db
	run "$CFL" report fix-repeat --db fx.db
	expect_rc 0
	expect_golden report_repeat.txt
	run "$CFL" report fix-repeat --db fx.db --format md
	expect_rc 0
	expect_golden report_repeat.md
	run "$CFL" report fix-repeat --db fx.db --format csv
	expect_rc 0
	expect_golden report_repeat.csv
	run "$CFL" report fix-repeat --db fx.db --format json
	expect_rc 0
	expect_golden report_repeat.json
}

# The ensembles are rows after the models, each with std 0.
test_report_ensemble_rows() {
	report_fixture fx.db
	run "$CFL" report fix-repeat --db fx.db --format csv
	expect_rc 0
	expect_out "mean,0,0.96666700000000005,0,0.96666700000000005,"
	expect_out "stacking,0,1,0,1,1,0,1"
	[ "$(sed -n 2p <<<"$out" | cut -d, -f1)" = tree ] || fail "first row is not tree"
}

test_report_tune_golden() {
	report_fixture fx.db
	run "$CFL" report fix-tune --db fx.db --format md
	expect_rc 0
	expect_golden report_tune.md
}

test_report_default_is_latest_run() {
	report_fixture fx.db
	run "$CFL" report fix-repeat --db fx.db --format json
	want=$out
	run "$CFL" report --db fx.db --format json
	expect_rc 0
	[ "$out" = "$want" ] || fail "default run is not the latest (fix-repeat)"
}

test_report_out_folder() {
	report_fixture fx.db
	run "$CFL" report fix-repeat --db fx.db --format md --out some/dir
	expect_rc 0
	expect_out "some/dir/fix-repeat.md"
	diff some/dir/fix-repeat.md "$ROOT/tests/golden/report_repeat.md" ||
		fail "written file differs from the golden one"
	touch afile
	run "$CFL" report fix-repeat --db fx.db --format md --out afile
	expect_rc 1
	expect_err "not a folder"
}

test_report_empty_database() {
	report_fixture fx.db
	command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
	sqlite3 fx.db "DELETE FROM runs" || fail "cannot empty the runs table"
	run "$CFL" report --db fx.db
	expect_rc 1
	expect_err "no runs"
}

# An auto run's report opens with the leaderboard in every format, its
# rows in the order and with the numbers `cfl auto` printed, the ranking
# rule said in one sentence above it (not a table of family rows mixing
# different candidates' trials with the bags)
test_report_auto_leaderboard_every_format() {
	"$CFL" auto --help >/dev/null 2>&1 || skip "cfl has no auto command"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit 4 \
		--num-jobs 2 --db a.db --name a
	expect_rc 0
	board=$out
	[ "$(sed -n 1p <<<"$board")" = "Leaderboard by acc" ] || fail "first line: $board"
	sed -n 2p <<<"$board" | grep -q "^Greedy ensemble selection" ||
		fail "no ranking sentence above the table: $board"
	names=$(awk '/^rank entry/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$board")
	[ -n "$names" ] || fail "no rows: $board"
	awk 'length > 80 {exit 1}' <<<"$board" || fail "a line over 80 columns: $board"
	run "$CFL" report a --db a.db
	expect_rc 0
	[ "$out" = "$board" ] || fail "report differs from the run's output"
	run "$CFL" report a --db a.db --format md
	expect_rc 0
	[ "$(sed -n 1p <<<"$out")" = "### Leaderboard by acc" ] || fail "md: $out"
	[ "$(grep -m1 '^| rank' <<<"$out")" = "| rank | entry | kind | oof | valid | test | seconds | members |" ] ||
		fail "md header: $out"
	[ "$(awk -F' [|] ' '/^[|] [0-9]+ [|]/ {gsub(/\*/, "", $2); print $2}' <<<"$out")" = "$names" ] ||
		fail "md rows differ from the run's: $out"
	run "$CFL" report a --db a.db --format csv
	expect_rc 0
	[ "$(sed -n 1p <<<"$out")" = "rank,entry,kind,method,metric,oof,valid,test,seconds,trials,members,score_metric,score" ] ||
		fail "csv header: $out"
	[ "$(printf '%s\n' "$out" | python3 -c 'import csv,sys; [print(r["entry"]) for r in csv.DictReader(sys.stdin)]')" = "$names" ] ||
		fail "csv rows differ from the run's: $out"
	# the oof column of csv is the text's (6 decimals)
	[ "$(printf '%s\n' "$out" | python3 -c 'import csv,sys; [print("%.6f" % float(r["oof"])) for r in csv.DictReader(sys.stdin)]')" = \
	  "$(awk '/^rank entry/ {on = 1; next} on && /^[0-9]+ / {print $5} /^$/ {on = 0}' <<<"$board")" ] ||
		fail "csv oof differs from the text's"
	run "$CFL" report a --db a.db --format json
	expect_rc 0
	[ "$(printf '%s\n' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert list(d)[:4] == ["metric", "sign", "ranking", "leaderboard"], list(d); [print(r["entry"]) for r in d["leaderboard"]]')" = "$names" ] ||
		fail "json leaderboard differs from the run's: $out"
}

# tune says when its space has fewer points than --num-search (the search
# stops after each once) and when the best candidate sits on a bound of a
# numeric range; a grid of 2 points per range puts every candidate on one
test_report_tune_small_space_and_bound() {
	"$CFL" tune --help >/dev/null 2>&1 || skip "cfl has no tune command"
	printf 'l2 = loguniform(1000, 100000)\n' >g.params
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --params g.params --method grid \
		--grid-points 2 --num-search 10 --num-repeat 1 --db t.db --name g -q
	expect_rc 0
	expect_out "The space has 2 points, fewer than --num-search 10: the search"
	expect_out "note: the best candidate's l2 = 1000 is the lower bound of its range"
	awk 'length > 80 {exit 1}' <<<"$(sed -n '/^The space has/,/^The best candidate refit/p' <<<"$out")" ||
		fail "a note over 80 columns"
	run "$CFL" report g --db t.db
	expect_rc 0
	expect_out "The space has 2 points, fewer than --num-search 10: the search"
	expect_out "note: the best candidate's l2 = 1000 is the lower bound of its range"
	# a space with more points than --num-search, best inside its range:
	# no note
	printf 'l2 = loguniform(0.001, 1000)\n' >w.params
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --params w.params --method grid \
		--grid-points 3 --num-search 2 --num-repeat 1 --db t.db --name w -q
	expect_rc 0
	grep -q "^The space has" <<<"$out" && fail "a space note for 3 points and --num-search 2"
	true
}
