# The database's schema 3: a schema 1 file (tests/golden/v1/cfl.db, written
# by cfl 0.x before parameters were JSON: a tune run of fcnn with a
# hidden=16,16 candidate, and a repeat run of tree and linear) is migrated
# on first open and reports as that cfl reported it (tests/golden/v1/*,
# printed by the same cfl); the views answer the common questions.

v1_copy() {
	cp "$ROOT/tests/golden/v1/cfl.db" v1.db || fail "no v1 fixture"
	[ "$(sqlite3 v1.db 'PRAGMA user_version')" = 1 ] || fail "fixture is not schema 1"
}

expect_v1_golden() {
	diff <(printf '%s\n' "$out") "$ROOT/tests/golden/v1/$1" >"$TMP/.diff" ||
		fail "report differs from v1/$1: $(head -20 "$TMP/.diff")"
}

# cfl report opens read-only: the file is migrated all the same, once.
test_db_v1_migrated_reports_as_before() {
	v1_copy
	run "$CFL" report v1-tune --db v1.db
	expect_rc 0
	expect_v1_golden tune.txt
	[ "$(sqlite3 v1.db 'PRAGMA user_version')" = 3 ] || fail "not migrated"
	[ "$(sqlite3 v1.db "SELECT value FROM meta WHERE key = 'schema_version'")" = 3 ] ||
		fail "meta still says schema 1"
	run "$CFL" report v1-repeat --db v1.db
	expect_rc 0
	expect_v1_golden repeat.txt
	for f in md csv json; do
		run "$CFL" report v1-repeat --db v1.db --format $f
		expect_rc 0
		expect_v1_golden repeat.$f
	done
}

test_db_v1_params_json_phases_hex_kept() {
	v1_copy
	before=$(sqlite3 v1.db "SELECT id || ' ' || hex FROM candidates ORDER BY id")
	grep -q "hidden=16,16,lr" <<<"$(sqlite3 v1.db 'SELECT params FROM candidates')" ||
		fail "fixture lacks a comma value"
	run "$CFL" runs --db v1.db
	expect_rc 0
	[ "$(sqlite3 v1.db "SELECT id || ' ' || hex FROM candidates ORDER BY id")" = "$before" ] ||
		fail "candidate ids changed"
	got=$(sqlite3 v1.db "SELECT json_extract(params, '\$.hidden') FROM candidates
		WHERE json_extract(params, '\$.hidden') LIKE '%,%'")
	[ "$got" = "16,16" ] || fail "hidden=16,16 not whole: '$got'"
	got=$(sqlite3 v1.db "SELECT count(*) FROM candidates WHERE
		json_type(params, '\$.lr') <> 'real' OR json_extract(params, '\$.epochs') <> 5
		OR json_extract(params, '\$.optimizer') NOT IN ('sgd', 'adam')")
	[ "$got" = 0 ] || fail "$got tune candidates with bad JSON values"
	got=$(sqlite3 v1.db "SELECT r.name, t.phase, count(*) FROM trials t
		JOIN runs r ON r.id = t.run GROUP BY r.name, t.phase ORDER BY 1, 2" | tr '\n' ';')
	[ "$got" = "v1-repeat|repeat|4;v1-tune|refit|2;v1-tune|search|6;" ] ||
		fail "phases: $got"
	# the refit trials are the best candidate's repeats 2 and 3
	got=$(sqlite3 v1.db "SELECT group_concat(repeat) FROM trials WHERE phase = 'refit'")
	[ "$got" = "2,3" ] || fail "refit repeats: $got"
	# a second open changes nothing more
	sum=$(sqlite3 v1.db "SELECT group_concat(params, '|') FROM candidates")
	run "$CFL" report v1-tune --db v1.db
	expect_rc 0
	[ "$(sqlite3 v1.db "SELECT group_concat(params, '|') FROM candidates")" = "$sum" ] ||
		fail "second open rewrote the params"
}

# A new run on a migrated file is written in the new schema beside the old runs.
test_db_new_run_on_migrated_file() {
	v1_copy
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline --num-repeat 1 \
		--db v1.db --name after
	expect_rc 0
	got=$(sqlite3 v1.db "SELECT phase FROM trial_rows WHERE run = 'after'")
	[ "$got" = repeat ] || fail "phase of the new run: '$got'"
	[ "$(sqlite3 v1.db 'SELECT count(*) FROM runs')" = 3 ] || fail "runs lost"
}

test_db_migration_refused_when_not_writable() {
	v1_copy
	[ "$(id -u)" = 0 ] && skip "root writes read-only files"
	chmod a-w v1.db .
	run "$CFL" report v1-tune --db v1.db
	chmod u+w v1.db .
	expect_rc 1
	expect_err "older schema"
	[ "$(sqlite3 v1.db 'PRAGMA user_version')" = 1 ] || fail "half migrated"
}

test_db_newer_schema_refused() {
	v1_copy
	sqlite3 v1.db "PRAGMA user_version = 4"
	run "$CFL" report v1-tune --db v1.db
	expect_rc 1
	expect_err "newer cfl (schema 4 > 3)"
}

test_db_views() {
	cp "$ROOT/tests/golden/v1/cfl.db" v.db
	"$CFL" runs --db v.db >/dev/null || fail "cfl runs failed"
	# one row per trial, metrics per split
	got=$(sqlite3 v.db "SELECT count(*), count(DISTINCT phase) FROM trial_rows WHERE run = 'v1-tune'")
	[ "$got" = "8|2" ] || fail "trial_rows: $got"
	got=$(sqlite3 v.db "SELECT count(*) FROM trial_rows WHERE run = 'v1-repeat'
		AND json_extract(metrics, '\$.test_acc') BETWEEN 0.9 AND 0.95
		AND json_extract(metrics, '\$.oof_acc') IS NULL")
	[ "$got" = 4 ] || fail "test_acc of repeat trials: $got"
	got=$(sqlite3 v.db "SELECT m.value = json_extract(r.metrics, '\$.valid_auc')
		FROM trial_rows r JOIN metrics m ON m.trial = r.trial
		AND m.split = 'valid' AND m.metric = 'auc' LIMIT 1")
	[ "$got" = 1 ] || fail "valid_auc differs from metrics: $got"
	# one row per candidate x parameter
	got=$(sqlite3 v.db "SELECT count(*), count(DISTINCT param) FROM candidate_params
		WHERE run = 'v1-tune'")
	[ "$got" = "12|4" ] || fail "candidate_params: $got"
	got=$(sqlite3 v.db "SELECT value FROM candidate_params WHERE param = 'hidden'
		AND value LIKE '%,%'")
	[ "$got" = "16,16" ] || fail "hidden in candidate_params: $got"
	# failures: none in the fixture, one after a failing run
	[ "$(sqlite3 v.db 'SELECT count(*) FROM failures')" = 0 ] || fail "failures in fixture"
	CFL_TEST_FAULT=error:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear \
		--num-repeat 2 --db v.db --name faulty
	expect_rc 0
	got=$(sqlite3 v.db "SELECT model, repeat, phase, attempt, outcome, reason FROM failures
		WHERE run = 'faulty' ORDER BY attempt" | tr '\n' ';')
	[ "$got" = "linear|1|repeat|1|queued|injected model error;linear|1|repeat|2|failed|injected model error;" ] ||
		fail "failures: $got"
}
