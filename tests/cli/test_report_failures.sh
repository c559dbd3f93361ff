# Failure reasons and tune parameters in every report format: the failed
# attempts (row, repeat, attempt, worker, reason) under the table in text
# and compact, as a table in md, a column in csv and a list in json; a tune
# run's parameters as columns in md, csv and json.  On the fixture of
# tests/cli/fixture_store.c (fix-tune: candidate d53261f2 failed once with
# "exit 3"; fix-repeat: linear's repeat 2 poison with "signal SIGSEGV").

rf_fixture() {
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_store" fx.db || fail "fixture_store failed"
}

test_report_failures_text_and_compact() {
	rf_fixture
	for f in table compact; do
		run "$CFL" report fix-tune --db fx.db --format $f
		expect_rc 0
		expect_out "Failed attempts (1):"
		expect_out "  d53261f2  repeat 1  attempt 1  -  failed: exit 3"
		run "$CFL" report fix-repeat --db fx.db --format $f
		expect_rc 0
		expect_out "  linear  repeat 2  attempt 2  -  poison: signal SIGSEGV"
	done
	# a run without failures has no such block
	cp "$ROOT/tests/golden/v1/cfl.db" v1.db
	run "$CFL" report v1-repeat --db v1.db
	expect_rc 0
	grep -q "Failed attempts" <<<"$out" && fail "failures block without failures"
	true
}

test_report_failures_and_params_csv_json() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	rf_fixture
	run "$CFL" report fix-tune --db fx.db --format csv
	expect_rc 0
	printf '%s\n' "$out" >tune.csv
	run "$CFL" report fix-tune --db fx.db --format json
	expect_rc 0
	printf '%s\n' "$out" >tune.json
	run "$CFL" report fix-repeat --db fx.db --format json
	expect_rc 0
	printf '%s\n' "$out" >repeat.json
	cp "$ROOT/tests/golden/v1/cfl.db" v1.db
	run "$CFL" report v1-tune --db v1.db --format csv
	expect_rc 0
	printf '%s\n' "$out" >v1.csv
	run /usr/bin/python3 - <<'PY'
import csv, json
rows = {r["name"]: r for r in csv.DictReader(open("tune.csv", newline=""))}
assert set(rows) == {"9222f7e5", "c3628586", "0b645665", "d53261f2"}, rows.keys()
assert rows["c3628586"]["params_lr"] == "0.01" and rows["c3628586"]["params_optimizer"] == "sgd"
assert rows["d53261f2"]["failures"] == "repeat 1 attempt 1 on -, failed: exit 3", rows["d53261f2"]
assert all(rows[k]["failures"] == "" for k in rows if k != "d53261f2")
t = json.load(open("tune.json"))
by = {r["name"]: r for r in t["rows"]}
assert by["0b645665"]["params"] == {"lr": 0.1, "optimizer": "adam"}, by["0b645665"]
assert [(f["row"], f["repeat"], f["attempt"], f["reason"]) for f in t["failures"]] == \
    [("d53261f2", 1, 1, "exit 3")], t["failures"]
r = json.load(open("repeat.json"))
assert "params" not in r["rows"][0]
assert [(f["model"], f["outcome"], f["reason"]) for f in r["failures"]] == \
    [("linear", "poison", "signal SIGSEGV")], r["failures"]
v1 = list(csv.DictReader(open("v1.csv", newline="")))
assert sorted(x["params_hidden"] for x in v1) == ["16,16", "8", "8"], v1
assert "failures" not in v1[0]
print("ok")
PY
	expect_rc 0
	expect_out ok
}

# A real run's failures reach the table it prints at its end.
test_report_failures_printed_by_the_run() {
	CFL_TEST_FAULT=error:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear \
		--num-repeat 2 --db r.db --name r
	expect_rc 0
	expect_out "Failed attempts (2):"
	expect_out "  linear  repeat 1  attempt 1  local:"
	expect_out "retried: injected model error"
	expect_out "failed: injected model error"
}
