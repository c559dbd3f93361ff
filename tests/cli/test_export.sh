# cfl export: the trial table in CSV and JSON, read back with Python's csv
# and json modules (and pandas when it is there), checked against the
# database; a tune run as an Optuna study, loaded with Debian's
# python3-optuna (skipped, counted, without it).  Most tests export the
# schema 1 fixture tests/golden/v1/cfl.db (see test_database.sh).

# Debian's Python, where python3-optuna installs (a function: only
# functions reach the tests' shells).
py() { /usr/bin/python3 "$@"; }

export_fixture() {
	cp "$ROOT/tests/golden/v1/cfl.db" x.db || fail "no fixture"
}

need_python() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
}

need_optuna() {
	need_python
	py -c 'import optuna' 2>/dev/null || skip "python3-optuna is not installed"
}

test_export_help_and_usage_errors() {
	run "$CFL" export --help
	expect_rc 0
	expect_out "usage: cfl export"
	expect_out "--format FMT"
	expect_out "Examples:"
	export_fixture
	run "$CFL" export --db x.db --format xml
	expect_rc 2
	expect_err "unknown format 'xml'"
	run "$CFL" export --db x.db --format optuna
	expect_rc 2
	expect_err "give it --out FILE"
	run "$CFL" export a b --db x.db
	expect_rc 2
	expect_err "unexpected argument 'b'"
	run "$CFL" export nosuch --db x.db
	expect_rc 1
	expect_err "no run 'nosuch'"
	run "$CFL" export --db missing.db
	expect_rc 1
	[ ! -e missing.db ] || fail "export created missing.db"
	run "$CFL" export v1-repeat --db x.db --format optuna --out s.db
	expect_rc 1
	expect_err "is a repeat run"
	[ ! -e s.db ] || fail "a failed export left s.db"
}

# Every trial a row; params_ and SPLIT_METRIC columns hold exactly what the
# database holds; a value with a comma stays one cell.
test_export_csv_read_back() {
	need_python
	export_fixture
	run "$CFL" export v1-tune --db x.db
	expect_rc 0
	printf '%s\n' "$out" >t.csv
	sqlite3 -json x.db "SELECT t.id AS trial, m.split || '_' || m.metric AS col, m.value
		FROM metrics m JOIN trials t ON t.id = m.trial JOIN runs r ON r.id = t.run
		WHERE r.name = 'v1-tune'" >metrics.json
	sqlite3 -json x.db "SELECT t.id AS trial, c.params, t.seed, t.repeat, t.phase, c.hex
		FROM trials t JOIN candidates c ON c.id = t.candidate JOIN runs r ON r.id = t.run
		WHERE r.name = 'v1-tune' ORDER BY c.seq, t.repeat" >trials.json
	run py - <<'EOF'
import csv, json
rows = list(csv.DictReader(open("t.csv", newline="")))
trials = json.load(open("trials.json"))
metrics = json.load(open("metrics.json"))
assert len(rows) == len(trials) == 8, (len(rows), len(trials))
for col in ("params_hidden", "params_lr", "params_optimizer", "params_epochs",
            "valid_acc", "valid_auc", "test_acc", "phase", "seed", "duration"):
    assert col in rows[0], col
for row, t in zip(rows, trials):
    assert int(row["trial"]) == t["trial"]
    assert row["candidate"] == t["hex"] and row["phase"] == t["phase"]
    assert int(row["seed"]) == t["seed"] % 2**64, (row["seed"], t["seed"])
    for k, v in json.loads(t["params"]).items():
        assert row["params_" + k] == str(v), (k, row["params_" + k], v)
    assert row["status"] == "done" and row["error"] == ""
seen = 0
for m in metrics:
    row = next(r for r in rows if int(r["trial"]) == m["trial"])
    assert float(row[m["col"]]) == m["value"], (m, row[m["col"]])
    seen += 1
assert seen == 8 * 4, seen
assert sum(r["params_hidden"] == "16,16" for r in rows) == 2
assert sorted({r["phase"] for r in rows}) == ["refit", "search"]
print("ok")
EOF
	expect_rc 0
	expect_out ok
	# pandas, when it is there, gives the dataframe at once
	py -c 'import pandas' 2>/dev/null || return 0
	run py -c '
import pandas as pd
df = pd.read_csv("t.csv")
assert df.shape[0] == 8, df.shape
assert df["valid_acc"].dtype == "float64" and df["params_lr"].dtype == "float64"
assert (df["params_hidden"].astype(str) == "16,16").sum() == 2
assert df.groupby("candidate")["valid_acc"].mean().shape[0] == 3
print("ok")'
	expect_rc 0
	expect_out ok
}

test_export_json_read_back() {
	need_python
	export_fixture
	run "$CFL" export v1-tune --db x.db --format json --out t.json
	expect_rc 0
	[ -z "$out" ] || fail "--out wrote to stdout"
	run "$CFL" export v1-tune --db x.db --format csv --out t.csv
	expect_rc 0
	run py - <<'EOF'
import csv, json
rows = json.load(open("t.json"))
crows = list(csv.DictReader(open("t.csv", newline="")))
assert len(rows) == len(crows) == 8
for j, c in zip(rows, crows):
    assert list(j.keys()) == list(c.keys()), (list(j), list(c))
    assert j["valid_acc"] == float(c["valid_acc"])
    assert isinstance(j["params_lr"], float) and isinstance(j["params_epochs"], int)
    assert j["params_hidden"] in ("16,16", 8), j["params_hidden"]
    assert j["fold"] == -1 and j["error"] is None and j["peak_rss_kb"] > 0
print("ok")
EOF
	expect_rc 0
	expect_out ok
}

# A failed trial is a row with its status and error; a repeat run's models
# are rows of one table with their own parameters.
test_export_failed_trials() {
	need_python
	CFL_TEST_FAULT=error:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,tree \
		--num-repeat 2 --db f.db --name f
	expect_rc 0
	run "$CFL" export f --db f.db
	expect_rc 0
	printf '%s\n' "$out" >f.csv
	run py - <<'EOF'
import csv
rows = list(csv.DictReader(open("f.csv", newline="")))
assert len(rows) == 4, len(rows)
failed = [r for r in rows if r["status"] != "done"]
assert len(failed) == 2, [r["status"] for r in rows]
for f in failed:
    assert f["repeat"] == "1" and f["attempt"] == "2", f
    assert f["error"] == "injected model error" and f["test_acc"] == "", f
assert all(r["test_acc"] != "" for r in rows if r["status"] == "done")
assert {r["model"] for r in rows} == {"linear", "tree"}
assert all(r["phase"] == "repeat" for r in rows)
print("ok")
EOF
	expect_rc 0
	expect_out ok
}

# Optuna loads the study and agrees with cfl on the trials and the best.
# $1: database, $2: run; the check also runs parameter importances.
optuna_check() {
	sqlite3 -json "$1" "SELECT c.seq, c.params, c.score FROM candidates c
		JOIN runs r ON r.id = c.run WHERE r.name = '$2' ORDER BY c.seq" >cands.json
	run py - "$2" <<'EOF'
import json, math, sys
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
name = sys.argv[1]
cands = json.load(open("cands.json"))
study = optuna.load_study(study_name=name, storage="sqlite:///study.db")
assert len(study.trials) == len(cands), (len(study.trials), len(cands))
scored = [c for c in cands if c["score"] is not None]
best = max(c["score"] for c in scored)
cfl_best = next(c for c in scored if c["score"] == best)  # the first, as cfl
assert study.best_value == best, (study.best_value, best)
ties = [json.loads(c["params"]) for c in scored if c["score"] == best]
assert study.best_params in ties, (study.best_params, ties)
if len(ties) == 1:
    assert study.best_params == json.loads(cfl_best["params"])
for t, c in zip(study.trials, cands):
    assert t.number == c["seq"]
    assert t.params == json.loads(c["params"]), (t.params, c["params"])
    assert t.state == (optuna.trial.TrialState.COMPLETE if c["score"] is not None
                       else optuna.trial.TrialState.FAIL)
    assert len(t.user_attrs["seeds"]) >= 1 and "valid_" + "acc" in t.user_attrs
    assert t.datetime_start is not None and t.datetime_complete >= t.datetime_start
assert study.direction == optuna.study.StudyDirection.MAXIMIZE
try:
    import sklearn  # Optuna's importances (fANOVA) need it
except ImportError:
    print("no sklearn: importances not checked")
else:
    imp = optuna.importance.get_param_importances(study)
    assert len(imp) >= 1 and abs(sum(imp.values()) - 1) < 1e-6, imp
try:
    import pandas  # trials_dataframe needs it
except ImportError:
    print("no pandas: trials_dataframe not checked")
else:
    df = study.trials_dataframe()
    assert len(df) == len(cands)
print("ok", len(cands), study.best_value)
EOF
	expect_rc 0
	expect_out ok
}

test_export_optuna_fixture() {
	need_optuna
	export_fixture
	run "$CFL" export v1-tune --db x.db --format optuna --out study.db
	expect_rc 0
	expect_err "optuna.load_study"
	optuna_check x.db v1-tune
	# the same study again: refused, the file unchanged
	sum=$(md5sum <study.db)
	run "$CFL" export v1-tune --db x.db --format optuna --out study.db
	expect_rc 1
	expect_err "already holds a study 'v1-tune'"
	[ "$(md5sum <study.db)" = "$sum" ] || fail "a refused export changed study.db"
	# a file that is not Optuna's
	printf 'hello' >plain.db
	run "$CFL" export v1-tune --db x.db --format optuna --out plain.db
	expect_rc 1
	[ "$(cat plain.db)" = hello ] || fail "plain.db changed"
}

# A fresh tune run with every kind of distribution (choice with a comma,
# log and plain float ranges, an integer range, a fixed value), added to
# an Optuna storage that Optuna itself created.
test_export_optuna_fresh_run_into_optuna_storage() {
	need_optuna
	printf '%s\n' 'optimizer = choice(sgd, adam)' 'lr = loguniform(1e-3, 0.1)' \
		'hidden = choice("16,16", 8)' 'dropout = uniform(0, 0.3)' \
		'batch_size = int(8, 32)' 'epochs = 4' >space.params
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model fcnn --params space.params \
		--num-search 8 --num-repeat 2 --db t.db --name fresh
	expect_rc 0
	py -c '
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
s = optuna.create_study(study_name="theirs", storage="sqlite:///study.db")
s.optimize(lambda t: t.suggest_float("x", 0, 1) ** 2, n_trials=3)' ||
		fail "optuna cannot create a storage"
	run "$CFL" export fresh --db t.db --format optuna --out study.db
	expect_rc 0
	optuna_check t.db fresh
	run py -c '
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
names = sorted(s.study_name for s in optuna.get_all_study_summaries("sqlite:///study.db"))
assert names == ["fresh", "theirs"], names
t = optuna.load_study(study_name="fresh", storage="sqlite:///study.db").trials[0]
d = t.distributions
assert type(d["batch_size"]).__name__ == "IntDistribution", d
assert type(d["lr"]).__name__ == "FloatDistribution" and d["lr"].log, d
assert type(d["dropout"]).__name__ == "FloatDistribution" and not d["dropout"].log, d
assert type(d["hidden"]).__name__ == "CategoricalDistribution", d
assert d["hidden"].choices == ("16,16", 8), d["hidden"].choices
assert d["epochs"].choices == (4,), d["epochs"]
print("ok")'
	expect_rc 0
	expect_out ok
}

# cfl export of an auto run: its leaderboard as a data frame (a row per
# entry in rank order, as AutoGluon's leaderboard()), --table trials for
# its trials; a leaderboard of another kind of run is refused
test_export_auto_leaderboard() {
	need_python
	"$CFL" auto --help >/dev/null 2>&1 || skip "cfl has no auto command"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit 4 \
		--num-jobs 2 --db a.db --name a
	expect_rc 0
	names=$(awk '/^rank entry/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	run "$CFL" export a --db a.db
	expect_rc 0
	[ "$(printf '%s\n' "$out" | py -c 'import csv,sys; [print(r["entry"]) for r in csv.DictReader(sys.stdin)]')" = "$names" ] ||
		fail "csv leaderboard: $out"
	run "$CFL" export a --db a.db --format json --out lb.json
	expect_rc 0
	[ "$(py -c 'import json; d = json.load(open("lb.json")); assert [r["rank"] for r in d] == list(range(1, len(d) + 1)); [print(r["entry"]) for r in d]')" = "$names" ] ||
		fail "json leaderboard: $(cat lb.json)"
	if py -c 'import pandas' 2>/dev/null; then
		py -c 'import pandas as pd; d = pd.read_json("lb.json"); assert list(d.columns[:8]) == ["rank", "entry", "kind", "method", "metric", "oof", "valid", "test"], d.columns' ||
			fail "pandas does not read the leaderboard"
	fi
	run "$CFL" export a --db a.db --table trials
	expect_rc 0
	expect_out "number,trial,run,model,candidate"
	export_fixture
	run "$CFL" export --db x.db --table leaderboard
	expect_rc 1
	expect_err "only an auto run has a leaderboard"
	run "$CFL" export a --db a.db --table nope
	expect_rc 2
}

# A lower-is-better metric goes to Optuna as MINIMIZE with the metric's own
# values (mse > 0, not cfl's negative score), cfl's score kept as the user
# attribute cfl_score; Optuna's best trial is cfl's best candidate.  The
# trial table carries Optuna's value and state columns and ISO datetimes.
test_export_optuna_minimize_and_trial_value_state() {
	need_optuna
	run "$CFL" tune "$ROOT/datasets/diabetes.csv" --model linear --num-search 5 \
		--num-repeat 2 --db m.db --name m -q
	expect_rc 0
	sqlite3 -json m.db "SELECT c.seq, c.score FROM candidates c ORDER BY c.seq" >cands.json
	run "$CFL" export m --db m.db --format optuna --out study.db
	expect_rc 0
	run py - <<'PY'
import json, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
cands = json.load(open("cands.json"))
study = optuna.load_study(study_name="m", storage="sqlite:///study.db")
assert study.direction == optuna.study.StudyDirection.MINIMIZE, study.direction
scored = [c for c in cands if c["score"] is not None]
assert len(scored) >= 2, cands
for t, c in zip(study.trials, cands):
    if c["score"] is None:
        continue
    assert t.value > 0 and abs(t.value + c["score"]) < 1e-9 * abs(c["score"]), (t.value, c)
    assert t.user_attrs["cfl_score"] == c["score"], (t.user_attrs, c)
best = max(scored, key=lambda c: c["score"])  # cfl's best: the highest score
assert study.best_trial.number == best["seq"], (study.best_trial.number, best)
assert abs(study.best_value + best["score"]) < 1e-9 * abs(best["score"])
print("ok")
PY
	expect_rc 0
	expect_out ok
	run "$CFL" export m --db m.db --out t.csv
	expect_rc 0
	run py - <<'PY'
import csv, datetime
rows = list(csv.DictReader(open("t.csv", newline="")))
for r in rows:
    assert r["state"] == ("COMPLETE" if r["status"] == "done" else "FAIL"), r
    if r["phase"] == "search" and r["status"] == "done":
        assert r["value"] == r["valid_mse"] and float(r["value"]) > 0, r
    if r["phase"] == "refit" and r["status"] == "done":
        assert r["value"] == r["test_mse"], r
    s = datetime.datetime.fromisoformat(r["datetime_start"])
    e = datetime.datetime.fromisoformat(r["datetime_complete"])
    assert s.tzinfo is not None and e >= s, r
print("ok")
PY
	expect_rc 0
	expect_out ok
	if py -c 'import pandas' 2>/dev/null; then
		run py -c 'import pandas as pd; d = pd.read_csv("t.csv", parse_dates=["datetime_start", "datetime_complete"]); assert str(d["datetime_start"].dtype).startswith("datetime64"), d.dtypes; assert (d["datetime_complete"] >= d["datetime_start"]).all(); print("ok")'
		expect_rc 0
		expect_out ok
	fi
}
