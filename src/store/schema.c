/*
 * Opening a store: the schema (tables and indexes, README.md's database
 * section describes them), its creation in a new file, and the checks of
 * an existing one: a cfl database, not newer than this code (older ones
 * are migrated here when a schema 2 exists).
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- store: the schema ---- */

/* Version 1.  Times are wall-clock epoch seconds (REAL); NaN metric values
 * are stored as NULL; prediction blobs are n * n_out IEEE-754 doubles,
 * little-endian, row-major; row blobs n little-endian uint32. */
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
	" ('queued','running','done','failed','poison','interrupted')),\n"
	"  attempt INTEGER NOT NULL DEFAULT 0,\n"
	"  worker TEXT,\n"
	"  started REAL,\n"
	"  finished REAL,\n"
	"  duration REAL,\n"
	"  peak_rss_kb INTEGER,\n"
	"  error TEXT,\n"
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
	if (cfl_store_exec(st, SCHEMA, err) || cfl_store_exec(st, sql, err)) {
		cfl_store_tx_rollback(st);
		return -1;
	}
	return cfl_store_tx_commit(st, err);
}

/* Creates the schema in an empty database, or checks an existing one is
 * cfl's and not newer than this code.  Runs inside check_schema's
 * transaction. */
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
		return create_schema(st, err) ||
		       cfl_store_exec(st, IMPORTANCE_DDL, err) ? -1 : 0;
	}
	if (!has_meta || version == 0)
		return cfl_err_set(err, "'%s' is an SQLite database but not "
				   "a cfl one", st->path);
	if (version > CFL_STORE_SCHEMA_VERSION)
		return cfl_err_set(err, "database '%s' was written by a newer "
				   "cfl (schema %lld > %d); upgrade cfl",
				   st->path, version, CFL_STORE_SCHEMA_VERSION);
	/* Older versions: none exist yet; migrations go here. */
	if (!st->readonly && cfl_store_exec(st, IMPORTANCE_DDL, err))
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
	if (cfl_store_exec(st, st->readonly ? "BEGIN" : "BEGIN IMMEDIATE", err)) {
		if ((sqlite3_errcode(st->db) & 0xff) == SQLITE_NOTADB)
			cfl_err_set(err, "'%s' is not a cfl database (%s)",
				    st->path, sqlite3_errmsg(st->db));
		return -1;
	}
	st->depth = 1;
	if (check_schema_tx(st, err)) {
		cfl_store_tx_rollback(st);
		return -1;
	}
	return cfl_store_tx_commit(st, err);
}

struct cfl_store *cfl_store_open(const char *path, enum cfl_store_mode mode,
				 struct cfl_err *err)
{
	struct cfl_store *st;
	int flags;

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
	if (check_schema(st, err))
		goto fail;
	/* WAL: readers never block the writer; synchronous=NORMAL keeps every
	 * commit safe from a crash or kill -9 of cfl (only a power loss may
	 * drop the last commits), at a fraction of FULL's fsync cost. */
	if (!st->readonly &&
	    cfl_store_exec(st, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
		 err))
		goto fail;
	if (cfl_store_exec(st, "PRAGMA foreign_keys = ON;", err))
		goto fail;
	return st;
fail:
	cfl_store_close(st);
	return NULL;
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

