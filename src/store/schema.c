/*
 * Opening a store: the schema (tables, indexes and views; docs/database.md
 * describes them), its creation in a new file, and the checks of an
 * existing one: a cfl database, not newer than this code.  Older ones are
 * migrated here, in place and in one transaction, so every other file of
 * src/store sees the current schema only.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- store: the schema ---- */

/* Version 3 (2: no 'cancelled' and 'pruned' trials).  Times are wall-clock epoch seconds (REAL); NaN metric values
 * are stored as NULL; prediction blobs are n * n_out IEEE-754 doubles,
 * little-endian, row-major; row blobs n little-endian uint32; candidates'
 * params are a JSON object (params.c).  trials.phase is the last column,
 * as the migration from version 1 adds it: both kinds of file are alike. */
static const char SCHEMA[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
	"CREATE TABLE runs (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  name TEXT NOT NULL UNIQUE,\n"
	"  kind TEXT NOT NULL CHECK (kind IN ('repeat','tune','auto')),\n"
	"  command TEXT NOT NULL DEFAULT '',\n"
	"  config TEXT NOT NULL DEFAULT '',\n"
	"  dataset TEXT NOT NULL DEFAULT '',\n"
	"  dataset_sha256 TEXT NOT NULL DEFAULT '',\n"
	"  seed INTEGER NOT NULL,\n"
	"  cfl_version TEXT NOT NULL,\n"
	"  status TEXT NOT NULL CHECK (status IN"
	" ('running','done','failed','interrupted')),\n"
	"  created REAL NOT NULL,\n"
	"  finished REAL\n"
	");\n"
	"CREATE TABLE candidates (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  seq INTEGER NOT NULL,\n"
	"  model TEXT NOT NULL,\n"
	"  params TEXT NOT NULL,\n"
	"  hex TEXT NOT NULL,\n"
	"  score REAL,\n"
	"  UNIQUE (run, model, params)\n"
	");\n"
	"CREATE TABLE trials (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  candidate INTEGER NOT NULL REFERENCES candidates(id) ON DELETE CASCADE,\n"
	"  repeat INTEGER NOT NULL,\n"
	"  fold INTEGER NOT NULL DEFAULT -1,\n"
	"  seed INTEGER NOT NULL,\n"
	"  status TEXT NOT NULL CHECK (status IN"
	" ('queued','running','done','failed','poison','interrupted',"
	"'cancelled','pruned')),\n"
	"  attempt INTEGER NOT NULL DEFAULT 0,\n"
	"  worker TEXT,\n"
	"  started REAL,\n"
	"  finished REAL,\n"
	"  duration REAL,\n"
	"  peak_rss_kb INTEGER,\n"
	"  error TEXT,\n"
	"  phase TEXT NOT NULL DEFAULT 'repeat' CHECK (phase IN"
	" ('repeat','search','refit')),\n"
	"  UNIQUE (candidate, repeat, fold)\n"
	");\n"
	"CREATE INDEX trials_run ON trials (run, status);\n"
	"CREATE TABLE trial_attempts (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  trial INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  attempt INTEGER NOT NULL,\n"
	"  worker TEXT,\n"
	"  started REAL,\n"
	"  finished REAL NOT NULL,\n"
	"  outcome TEXT NOT NULL,\n"
	"  reason TEXT NOT NULL\n"
	");\n"
	"CREATE INDEX trial_attempts_trial ON trial_attempts (trial);\n"
	"CREATE TABLE metrics (\n"
	"  trial INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  split TEXT NOT NULL CHECK (split IN ('valid','test','oof')),\n"
	"  metric TEXT NOT NULL,\n"
	"  value REAL,\n"
	"  PRIMARY KEY (trial, split, metric)\n"
	");\n"
	"CREATE TABLE predictions (\n"
	"  trial INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  split TEXT NOT NULL CHECK (split IN ('valid','test','oof')),\n"
	"  n INTEGER NOT NULL,\n"
	"  n_out INTEGER NOT NULL,\n"
	"  data BLOB NOT NULL,\n"
	"  rows BLOB,\n"
	"  PRIMARY KEY (trial, split)\n"
	");\n"
	"CREATE TABLE ensembles (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
	"  name TEXT NOT NULL,\n"
	"  method TEXT NOT NULL,\n"
	"  members TEXT NOT NULL DEFAULT '',\n"
	"  repeat INTEGER NOT NULL DEFAULT -1,\n"
	"  duration REAL,\n"
	"  peak_rss_kb INTEGER,\n"
	"  created REAL NOT NULL,\n"
	"  UNIQUE (run, name, repeat)\n"
	");\n"
	"CREATE TABLE ensemble_metrics (\n"
	"  ensemble INTEGER NOT NULL REFERENCES ensembles(id) ON DELETE CASCADE,\n"
	"  split TEXT NOT NULL CHECK (split IN ('valid','test','oof')),\n"
	"  metric TEXT NOT NULL,\n"
	"  value REAL,\n"
	"  PRIMARY KEY (ensemble, split, metric)\n"
	");\n"
	"CREATE TABLE ensemble_predictions (\n"
	"  ensemble INTEGER NOT NULL REFERENCES ensembles(id) ON DELETE CASCADE,\n"
	"  split TEXT NOT NULL CHECK (split IN ('valid','test','oof')),\n"
	"  n INTEGER NOT NULL,\n"
	"  n_out INTEGER NOT NULL,\n"
	"  data BLOB NOT NULL,\n"
	"  rows BLOB,\n"
	"  PRIMARY KEY (ensemble, split)\n"
	");\n";

/* The fitted models of trials (cfl repeat --save), kept apart from
 * SCHEMA so that a version-1 file written before it gets the table when
 * opened for writing: text is a model file without its encoder
 * (cfl_model_format), one row per done trial that kept its model. */
static const char MODELS_SCHEMA[] =
	"CREATE TABLE IF NOT EXISTS trial_models (\n"
	"  trial INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  text TEXT NOT NULL\n"
	");\n";

/* The views of version 2: the common questions as one table each. */
static const char VIEWS[] =
	/* one row per trial; metrics as {"test_acc": 0.96, ...}, each value
	 * as 17 digits (a REAL would be cut to 15): it reads back exactly */
	"CREATE VIEW trial_rows AS SELECT r.name AS run, r.kind AS run_kind,\n"
	"  t.id AS trial, c.model, c.hex AS candidate, c.params, t.seed,\n"
	"  t.repeat, t.fold, t.phase, t.status, t.attempt, t.worker,\n"
	"  t.started, t.finished, t.duration, t.peak_rss_kb, t.error,\n"
	"  (SELECT json_group_object(m.split || '_' || m.metric,\n"
	"     CASE WHEN abs(m.value) <= 1.7976931348623157e308\n"
	"     THEN json(printf('%!.17g', m.value)) END)\n"
	"   FROM metrics m WHERE m.trial = t.id) AS metrics\n"
	"FROM trials t JOIN candidates c ON c.id = t.candidate\n"
	"JOIN runs r ON r.id = t.run;\n"
	/* one row per candidate x parameter */
	"CREATE VIEW candidate_params AS SELECT r.name AS run,\n"
	"  c.id AS candidate_id, c.hex AS candidate, c.seq, c.model,\n"
	"  p.key AS param, p.value, c.score\n"
	"FROM candidates c JOIN runs r ON r.id = c.run, json_each(c.params) p;\n"
	/* one row per failed or interrupted attempt */
	"CREATE VIEW failures AS SELECT r.name AS run, a.trial, c.model,\n"
	"  c.hex AS candidate, t.repeat, t.fold, t.phase, a.attempt,\n"
	"  a.worker, a.started, a.finished, a.outcome, a.reason\n"
	"FROM trial_attempts a JOIN trials t ON t.id = a.trial\n"
	"JOIN candidates c ON c.id = t.candidate JOIN runs r ON r.id = t.run;\n";


/* ---- store: opening ---- */

/* Checks path before SQLite sees it, for clearer messages than SQLite's
 * "unable to open database file". */
static int check_path(const char *path, enum cfl_store_mode mode,
		      struct cfl_err *err)
{
	struct stat sb;
	char dir[4096];
	const char *slash;

	if (!path || !*path)
		return cfl_err_set(err, "no database path given");
	if (stat(path, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			return cfl_err_set(err, "cannot open database '%s': "
					   "it is a folder", path);
		return 0;
	}
	if (errno != ENOENT)
		return cfl_err_set(err, "cannot open database '%s': %s", path,
				   strerror(errno));
	if (mode == CFL_STORE_READONLY)
		return cfl_err_set(err, "no database '%s'", path);
	slash = strrchr(path, '/');
	if (!slash || slash == path)
		return 0;
	if ((size_t)(slash - path) >= sizeof(dir))
		return cfl_err_set(err, "database path '%s' too long", path);
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return cfl_err_set(err, "cannot open database '%s': folder "
				   "'%s' does not exist", path, dir);
	return 0;
}

static int query_int(struct cfl_store *st, const char *sql, long long *out,
		     struct cfl_err *err)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return cfl_store_fail(st, err);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		*out = 0;
	else {
		cfl_store_fail(st, err);
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

/* Feature importance of trials, by input column: kept apart from SCHEMA
 * so that a database made before it gets the table when next opened for
 * writing (readers of an older file find no rows). */
static const char IMPORTANCE_DDL[] =
	"CREATE TABLE IF NOT EXISTS trial_importance (\n"
	"  trial INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  kind TEXT NOT NULL CHECK (kind IN ('impurity','permutation')),\n"
	"  feature TEXT NOT NULL,\n"
	"  value REAL,\n"
	"  PRIMARY KEY (trial, kind, feature)\n"
	");\n";

/* The iterations a trial that stopped early kept (cfl_store_trial_iters):
 * apart from SCHEMA as trial_importance is. */
static const char ITERS_DDL[] =
	"CREATE TABLE IF NOT EXISTS trial_iters (\n"
	"  trial INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  n_iter INTEGER NOT NULL\n"
	");\n";

/* Where a pruned trial stopped (cfl_store_trial_pruned): its last
 * intermediate step and score; apart from SCHEMA as trial_importance is. */
static const char PRUNED_DDL[] =
	"CREATE TABLE IF NOT EXISTS trial_pruned (\n"
	"  trial INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,\n"
	"  step INTEGER NOT NULL,\n"
	"  score REAL\n"
	");\n";

/* What auto's leaderboard adds to an entry's out-of-fold score when it
 * ranks it (cfl_store_ensemble_credit): apart from SCHEMA as
 * trial_importance is. */
static const char CREDIT_DDL[] =
	"CREATE TABLE IF NOT EXISTS ensemble_credit (\n"
	"  ensemble INTEGER PRIMARY KEY REFERENCES ensembles(id) ON DELETE CASCADE,\n"
	"  credit REAL NOT NULL\n"
	");\n";

/* The side tables a database made before them gets on its first
 * read-write open. */
static int side_tables(struct cfl_store *st, struct cfl_err *err)
{
	return cfl_store_exec(st, MODELS_SCHEMA, err) ||
	       cfl_store_exec(st, IMPORTANCE_DDL, err) ||
	       cfl_store_exec(st, ITERS_DDL, err) ||
	       cfl_store_exec(st, PRUNED_DDL, err) ||
	       cfl_store_exec(st, CREDIT_DDL, err) ? -1 : 0;
}

static int create_schema(struct cfl_store *st, struct cfl_err *err)
{
	char sql[256];

	if (cfl_store_tx_begin(st, err))
		return -1;
	snprintf(sql, sizeof(sql),
		 "INSERT INTO meta VALUES ('app', 'cfl'), "
		 "('schema_version', '%d'), ('created_by', 'cfl %s');"
		 "PRAGMA user_version = %d;",
		 CFL_STORE_SCHEMA_VERSION, CFL_VERSION, CFL_STORE_SCHEMA_VERSION);
	/* the side tables (trial_models, ...) come after: side_tables */
	if (cfl_store_exec(st, SCHEMA, err) || cfl_store_exec(st, VIEWS, err) ||
	    cfl_store_exec(st, sql, err)) {
		cfl_store_tx_rollback(st);
		return -1;
	}
	return cfl_store_tx_commit(st, err);
}

/* ---- store: migrations ---- */

/* The value of "key=..." among a stored config's lines, as a long; -1 when
 * absent. */
static long config_long(const char *config, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = config; p && *p;) {
		if (!strncmp(p, key, n) && p[n] == '=')
			return strtol(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return -1;
}

/* Tune runs' trials: the search's repeats are [0, num_repeat), the refit
 * of the best the ones from num_repeat on (as the tune code numbers them).
 * Auto runs': the search's trials have no fold, the bags' have folds. */
static int migrate_phases(struct cfl_store *st, struct cfl_err *err)
{
	sqlite3_stmt *q, *u = NULL;
	int rc;

	if (cfl_store_exec(st, "ALTER TABLE trials ADD COLUMN phase TEXT NOT "
			   "NULL DEFAULT 'repeat' CHECK (phase IN "
			   "('repeat','search','refit'));"
			   "UPDATE trials SET phase = 'search' WHERE run IN "
			   "(SELECT id FROM runs WHERE kind = 'tune');"
			   "UPDATE trials SET phase = CASE WHEN fold < 0 THEN "
			   "'search' ELSE 'refit' END WHERE run IN "
			   "(SELECT id FROM runs WHERE kind = 'auto');", err))
		return -1;
	if (sqlite3_prepare_v2(st->db, "SELECT id, config FROM runs WHERE "
			       "kind = 'tune'", -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "UPDATE trials SET phase = 'refit' "
			       "WHERE run = ? AND repeat >= ?", -1, &u,
			       NULL) != SQLITE_OK) {
		cfl_store_fail(st, err);
		sqlite3_finalize(q);
		return -1;
	}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		long n = config_long((const char *)sqlite3_column_text(q, 1),
				     "num_repeat");

		if (n <= 0)
			continue;
		sqlite3_bind_int64(u, 1, sqlite3_column_int64(q, 0));
		sqlite3_bind_int64(u, 2, n);
		if (sqlite3_step(u) != SQLITE_DONE)
			break;
		sqlite3_reset(u);
	}
	if (rc != SQLITE_DONE)
		cfl_store_fail(st, err);
	sqlite3_finalize(q);
	sqlite3_finalize(u);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Candidates' "k=v,k=v" text becomes a JSON object; hex is kept as it is
 * (it hashes the text, and still does for new candidates). */
static int migrate_params(struct cfl_store *st, struct cfl_err *err)
{
	sqlite3_stmt *q, *u = NULL;
	struct cfl_buf j;
	int rc, bad = 0;

	/* A rowid scan: the unique index on (run, model, params) would
	 * reorder under the updates and meet a row again. */
	if (sqlite3_prepare_v2(st->db, "SELECT id, params FROM candidates "
			       "NOT INDEXED ORDER BY id", -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "UPDATE candidates SET params = ? "
			       "WHERE id = ?", -1, &u, NULL) != SQLITE_OK) {
		cfl_store_fail(st, err);
		sqlite3_finalize(q);
		return -1;
	}
	cfl_buf_init(&j);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct cfl_params kv;

		cfl_params_init(&kv);
		j.len = 0;
		bad = cfl_store_params_parse_v1((const char *)sqlite3_column_text(q, 1),
						&kv, err) ||
		      cfl_store_params_json(&kv, &j, err);
		cfl_params_release(&kv);
		if (bad) {
			cfl_err_prefix(err, "candidate %lld",
				       (long long)sqlite3_column_int64(q, 0));
			break;
		}
		sqlite3_bind_text(u, 1, j.data, (int)j.len, SQLITE_TRANSIENT);
		sqlite3_bind_int64(u, 2, sqlite3_column_int64(q, 0));
		if (sqlite3_step(u) != SQLITE_DONE)
			break;
		sqlite3_reset(u);
	}
	if (!bad && rc != SQLITE_DONE)
		cfl_store_fail(st, err);
	cfl_buf_release(&j);
	sqlite3_finalize(q);
	sqlite3_finalize(u);
	return !bad && rc == SQLITE_DONE ? 0 : -1;
}

/* Makes table again with this code's definition (from SCHEMA), keeping
 * its rows' cols: before runs first (what must go while the old table
 * does), after last (what must be made again).  0, or -1 with err. */
static int rebuild_table(struct cfl_store *st, const char *table,
			 const char *cols, const char *before,
			 const char *after, struct cfl_err *err)
{
	char head[64];
	const char *def, *end;
	struct cfl_buf sql;
	int rc;

	snprintf(head, sizeof(head), "CREATE TABLE %s (", table);
	def = strstr(SCHEMA, head);
	end = def ? strstr(def, ");\n") : NULL;
	if (!end)
		return cfl_err_set(err, "no %s table in the schema", table);
	def += strlen(head) - 1;	/* from its "(" */
	cfl_buf_init(&sql);
	rc = cfl_buf_printf(&sql, "%sCREATE TABLE %s_new %.*s);\n"
			    "INSERT INTO %s_new (%s) SELECT %s FROM %s;\n"
			    "DROP TABLE %s;\n"
			    "ALTER TABLE %s_new RENAME TO %s;\n%s",
			    before, table, (int)(end - def), def, table, cols, cols,
			    table, table, table, table, after);
	if (rc) {
		cfl_buf_release(&sql);
		return cfl_err_set(err, "out of memory");
	}
	rc = cfl_store_exec(st, sql.data, err);
	cfl_buf_release(&sql);
	return rc;
}

/* Schema 1 files made before 'auto' runs existed have a runs table whose
 * CHECK lists 'repeat' and 'tune' only: the table is made again with this
 * code's definition.  Foreign keys are off here (cfl_store_open turns
 * them on after the schema checks), so dropping the old table touches no
 * row that refers to it, and the references name the new one after the
 * rename. */
static int migrate_run_kinds(struct cfl_store *st, struct cfl_err *err)
{
	static const char cols[] = "id, name, kind, command, config, dataset, "
				   "dataset_sha256, seed, cfl_version, status, "
				   "created, finished";
	long long has_auto;

	if (query_int(st, "SELECT count(*) FROM sqlite_master WHERE type = "
		      "'table' AND name = 'runs' AND sql LIKE '%''auto''%'",
		      &has_auto, err))
		return -1;
	if (has_auto)
		return 0;
	return rebuild_table(st, "runs", cols, "", "", err);
}

/* Schema 2 files' trials table has a CHECK without 'cancelled' and
 * 'pruned': the table is made again with this code's definition, as
 * migrate_run_kinds does for runs; the views that read it are dropped
 * first and made again after (a rename checks them). */
static int migrate_trial_statuses(struct cfl_store *st, struct cfl_err *err)
{
	static const char cols[] = "id, run, candidate, repeat, fold, seed, "
				   "status, attempt, worker, started, finished, "
				   "duration, peak_rss_kb, error, phase";

	if (rebuild_table(st, "trials", cols,
			  "DROP VIEW IF EXISTS trial_rows;\n"
			  "DROP VIEW IF EXISTS candidate_params;\n"
			  "DROP VIEW IF EXISTS failures;\n",
			  "CREATE INDEX trials_run ON trials (run, status);\n", err))
		return -1;
	return cfl_store_exec(st, VIEWS, err);
}

/* Brings a schema `version` database to this code's, inside check_schema's
 * transaction: a failure rolls every step back. */
static int migrate(struct cfl_store *st, long long version,
		   struct cfl_err *err)
{
	char sql[256];

	if (version == 1 &&
	    (migrate_run_kinds(st, err) || migrate_phases(st, err) ||
	     migrate_params(st, err) || cfl_store_exec(st, VIEWS, err)))
		return cfl_err_prefix(err, "cannot migrate '%s' from schema 1",
				      st->path);
	if (version <= 2 && migrate_trial_statuses(st, err))
		return cfl_err_prefix(err, "cannot migrate '%s' from schema %lld",
				      st->path, version);
	snprintf(sql, sizeof(sql),
		 "UPDATE meta SET value = '%d' WHERE key = 'schema_version';"
		 "INSERT OR REPLACE INTO meta VALUES ('migrated_by', 'cfl %s');"
		 "PRAGMA user_version = %d;",
		 CFL_STORE_SCHEMA_VERSION, CFL_VERSION, CFL_STORE_SCHEMA_VERSION);
	return cfl_store_exec(st, sql, err);
}

/* Creates the schema in an empty database, or checks an existing one is
 * cfl's and not newer than this code, migrating an older one.  Runs inside
 * check_schema's transaction.  1: an older schema on a read-only handle
 * (the caller migrates through a read-write one). */
static int check_schema_tx(struct cfl_store *st, struct cfl_err *err)
{
	long long version, n_tables, has_meta;

	/* The first read is where SQLite notices a file that is not a
	 * database ("file is not a database"). */
	if (query_int(st, "PRAGMA user_version", &version, err))
		return cfl_err_set(err, "'%s' is not a cfl database (%s)",
				   st->path, sqlite3_errmsg(st->db));
	if (query_int(st, "SELECT count(*) FROM sqlite_master", &n_tables, err) ||
	    query_int(st, "SELECT count(*) FROM sqlite_master WHERE "
		      "type = 'table' AND name = 'meta'", &has_meta, err))
		return -1;
	if (n_tables == 0 && version == 0) {
		if (st->readonly)
			return cfl_err_set(err, "'%s' is an empty database, "
					   "not a cfl one", st->path);
		return create_schema(st, err) || side_tables(st, err) ? -1 : 0;
	}
	if (!has_meta || version == 0)
		return cfl_err_set(err, "'%s' is an SQLite database but not "
				   "a cfl one", st->path);
	if (version > CFL_STORE_SCHEMA_VERSION)
		return cfl_err_set(err, "database '%s' was written by a newer "
				   "cfl (schema %lld > %d); upgrade cfl",
				   st->path, version, CFL_STORE_SCHEMA_VERSION);
	if (version < CFL_STORE_SCHEMA_VERSION) {
		if (st->readonly)
			return 1;
		if (migrate(st, version, err))
			return -1;
	}
	/* A file from before trial_models, trial_importance, trial_iters or
	 * ensemble_credit gets them (read-only opens read around them). */
	if (!st->readonly && side_tables(st, err))
		return -1;
	return 0;
}

/* The checks and the creation see one state of the file: two cfl started
 * at once on a new file would otherwise both find it empty and both create
 * the schema ("table meta already exists"), or one would read the version
 * before the other's commit and the tables after it ("not a cfl one").
 * Read-write opens take the write lock first (BEGIN IMMEDIATE: the second
 * waits, busy timeout, then finds the schema whole); read-only ones read
 * one snapshot. */
static int check_schema(struct cfl_store *st, struct cfl_err *err)
{
	int rc;

	if (cfl_store_exec(st, st->readonly ? "BEGIN" : "BEGIN IMMEDIATE", err)) {
		if ((sqlite3_errcode(st->db) & 0xff) == SQLITE_NOTADB)
			cfl_err_set(err, "'%s' is not a cfl database (%s)",
				    st->path, sqlite3_errmsg(st->db));
		return -1;
	}
	st->depth = 1;
	rc = check_schema_tx(st, err);
	if (rc) {
		cfl_store_tx_rollback(st);
		return rc;
	}
	return cfl_store_tx_commit(st, err);
}

/* An older schema met by a read-only open: migrated through a read-write
 * handle (which must not create the file), then opened again. */
static int migrate_for_reader(const char *path, struct cfl_err *err)
{
	struct cfl_store *rw = cfl_store_open(path, CFL_STORE_CREATE, err);

	if (!rw)
		return cfl_err_prefix(err, "'%s' has an older schema and must "
				      "be migrated", path);
	cfl_store_close(rw);
	return 0;
}

/* WAL mode for a read-write handle.  Switching a new file to WAL takes an
 * exclusive lock; when a second cfl opening the same new file holds the
 * write lock at that moment, SQLite answers "database is locked" at once
 * (the busy handler would deadlock), so the switch is tried again for up
 * to the busy timeout. */
static int set_wal(struct cfl_store *st, struct cfl_err *err)
{
	double until = cfl_now() + 10.0;

	for (;;) {
		struct timespec nap = { 0, 10 * 1000 * 1000 };

		if (!cfl_store_exec(st, "PRAGMA journal_mode = WAL; "
				    "PRAGMA synchronous = NORMAL;", err))
			return 0;
		if ((sqlite3_errcode(st->db) & 0xff) != SQLITE_BUSY ||
		    cfl_now() > until)
			return -1;
		nanosleep(&nap, NULL);
	}
}

/* cfl_store_open; migrated: a read-only open after migrate_for_reader,
 * which must find the current schema. */
static struct cfl_store *store_open(const char *path, enum cfl_store_mode mode,
				    int migrated, struct cfl_err *err)
{
	struct cfl_store *st;
	int flags, rc;

	if (check_path(path, mode, err))
		return NULL;
	st = cfl_calloc(1, sizeof(*st), err);
	if (!st)
		return NULL;
	st->path = cfl_strdup(path, err);
	if (!st->path) {
		free(st);
		return NULL;
	}
	st->readonly = mode == CFL_STORE_READONLY;
	flags = st->readonly ? SQLITE_OPEN_READONLY
			     : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
		cfl_err_set(err, "cannot open database '%s': %s", path,
			    st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto fail;
	}
	sqlite3_extended_result_codes(st->db, 1);
	/* The coordinator is the only writer, but `cfl runs` may read while
	 * a run writes: wait for locks rather than fail. */
	sqlite3_busy_timeout(st->db, 10000);
	rc = check_schema(st, err);
	if (rc == 1 && !migrated) {
		cfl_store_close(st);
		if (migrate_for_reader(path, err))
			return NULL;
		return store_open(path, mode, 1, err);
	}
	if (rc == 1)
		cfl_err_set(err, "database '%s' still has an older schema after "
			    "its migration", path);
	if (rc)
		goto fail;
	/* WAL: readers never block the writer; synchronous=NORMAL keeps every
	 * commit safe from a crash or kill -9 of cfl (only a power loss may
	 * drop the last commits), at a fraction of FULL's fsync cost. */
	if (!st->readonly && set_wal(st, err))
		goto fail;
	if (cfl_store_exec(st, "PRAGMA foreign_keys = ON;", err))
		goto fail;
	return st;
fail:
	cfl_store_close(st);
	return NULL;
}

struct cfl_store *cfl_store_open(const char *path, enum cfl_store_mode mode,
				 struct cfl_err *err)
{
	return store_open(path, mode, 0, err);
}

void cfl_store_close(struct cfl_store *st)
{
	if (!st)
		return;
	if (st->depth > 0)
		cfl_store_rollback(st);
	for (size_t i = 0; i < st->n_cache; i++)
		sqlite3_finalize(st->cache[i].stmt);
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

