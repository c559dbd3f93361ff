/*
 * The trial store: cfl's SQLite database (schema: SCHEMA below and docs/database.md).
 *
 * This file is the only user of sqlite3.h.  Invariant: every public writing
 * function runs in one transaction (a savepoint when nested inside
 * cfl_store_begin), so the database only ever holds whole state changes: a
 * done trial always has all its metrics and predictions.  The coordinator
 * alone writes; nothing here knows about processes, models or metrics.
 */
#include "cfl/store.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

/* ---- store: names of the enums ---- */

static const char *const run_kinds[] = { "repeat", "tune" };
static const char *const run_statuses[] = { "running", "done", "failed",
					    "interrupted" };
static const char *const trial_statuses[] = { "queued", "running", "done",
					      "failed", "poison",
					      "interrupted" };
static const char *const splits[] = { "valid", "test", "oof" };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : "?";
}

static int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

const char *cfl_run_kind_name(enum cfl_run_kind k)
{
	return name_of(run_kinds, N_OF(run_kinds), k);
}

const char *cfl_run_status_name(enum cfl_run_status s)
{
	return name_of(run_statuses, N_OF(run_statuses), s);
}

const char *cfl_trial_status_name(enum cfl_trial_status s)
{
	return name_of(trial_statuses, N_OF(trial_statuses), s);
}

const char *cfl_store_split_name(enum cfl_store_split s)
{
	return name_of(splits, N_OF(splits), s);
}

int cfl_store_split_lookup(const char *name)
{
	return lookup(splits, N_OF(splits), name);
}

/* ---- store: the schema ---- */

/* Version 1.  Times are wall-clock epoch seconds (REAL); NaN metric values
 * are stored as NULL; prediction blobs are n * n_out IEEE-754 doubles,
 * little-endian, row-major; row blobs n little-endian uint32. */
static const char SCHEMA[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
	"CREATE TABLE runs (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  name TEXT NOT NULL UNIQUE,\n"
	"  kind TEXT NOT NULL CHECK (kind IN ('repeat','tune')),\n"
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

/* ---- store: handle, statements, transactions ---- */

#define N_STMT_CACHE 48

struct cfl_store {
	sqlite3 *db;
	char *path;
	int readonly;
	int depth;		/* open transactions (outermost BEGIN + savepoints) */
	struct {
		const char *sql;
		sqlite3_stmt *stmt;
	} cache[N_STMT_CACHE];
	size_t n_cache;
};

const char *cfl_store_path(const struct cfl_store *st)
{
	return st->path;
}

static int db_fail(struct cfl_store *st, struct cfl_err *err)
{
	return cfl_err_set(err, "database '%s': %s", st->path,
			   sqlite3_errmsg(st->db));
}

/* A prepared statement for sql, reset and with bindings cleared; cached, so
 * the hot paths (a trial's result) never parse SQL again.  NULL with err. */
static sqlite3_stmt *prep(struct cfl_store *st, const char *sql,
			  struct cfl_err *err)
{
	sqlite3_stmt *s = NULL;

	for (size_t i = 0; i < st->n_cache; i++)
		if (st->cache[i].sql == sql || strcmp(st->cache[i].sql, sql) == 0) {
			s = st->cache[i].stmt;
			sqlite3_reset(s);
			sqlite3_clear_bindings(s);
			return s;
		}
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s,
			       NULL) != SQLITE_OK) {
		db_fail(st, err);
		return NULL;
	}
	if (st->n_cache < N_STMT_CACHE) {
		st->cache[st->n_cache].sql = sql;
		st->cache[st->n_cache].stmt = s;
		st->n_cache++;
	} else {
		/* Full cache: cannot happen with the fixed SQL of this file;
		 * failing loudly beats leaking a statement. */
		sqlite3_finalize(s);
		cfl_err_set(err, "database '%s': statement cache full", st->path);
		return NULL;
	}
	return s;
}

/* Runs a statement to completion (no rows expected).  0 or -1 with err. */
static int run_stmt(struct cfl_store *st, sqlite3_stmt *s, struct cfl_err *err)
{
	int rc = sqlite3_step(s);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		db_fail(st, err);
		sqlite3_reset(s);
		return -1;
	}
	sqlite3_reset(s);
	return 0;
}

static int exec(struct cfl_store *st, const char *sql, struct cfl_err *err)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		cfl_err_set(err, "database '%s': %s", st->path,
			    msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static void tx_rollback(struct cfl_store *st);

/* Opens a transaction, or a savepoint inside an open one.  BEGIN IMMEDIATE
 * takes the write lock at once, so a second writer waits (busy timeout)
 * instead of failing halfway. */
static int tx_begin(struct cfl_store *st, struct cfl_err *err)
{
	if (st->readonly)
		return cfl_err_set(err, "database '%s' is open read-only",
				   st->path);
	if (exec(st, st->depth ? "SAVEPOINT cfl" : "BEGIN IMMEDIATE", err))
		return -1;
	st->depth++;
	return 0;
}

/* A failed COMMIT (a lock not obtained in time, a full disk) leaves SQLite's
 * transaction open: roll it back, so the call fails whole and the next
 * call starts clean. */
static int tx_commit(struct cfl_store *st, struct cfl_err *err)
{
	if (exec(st, st->depth > 1 ? "RELEASE cfl" : "COMMIT", err)) {
		tx_rollback(st);
		return -1;
	}
	st->depth--;
	return 0;
}

/* Undoes the innermost transaction; errors here leave nothing to report
 * (the caller already has the first error), so err is not touched. */
static void tx_rollback(struct cfl_store *st)
{
	if (st->depth <= 0)
		return;
	if (st->depth > 1)
		sqlite3_exec(st->db, "ROLLBACK TO cfl; RELEASE cfl", NULL, NULL,
			     NULL);
	else
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	st->depth--;
}

int cfl_store_begin(struct cfl_store *st, struct cfl_err *err)
{
	return tx_begin(st, err);
}

int cfl_store_commit(struct cfl_store *st, struct cfl_err *err)
{
	if (st->depth <= 0)
		return cfl_err_set(err, "database '%s': commit without begin",
				   st->path);
	return tx_commit(st, err);
}

void cfl_store_rollback(struct cfl_store *st)
{
	if (st->depth > 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	st->depth = 0;
}

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
		return db_fail(st, err);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		*out = 0;
	else {
		db_fail(st, err);
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

static int create_schema(struct cfl_store *st, struct cfl_err *err)
{
	char sql[256];

	if (tx_begin(st, err))
		return -1;
	snprintf(sql, sizeof(sql),
		 "INSERT INTO meta VALUES ('app', 'cfl'), "
		 "('schema_version', '%d'), ('created_by', 'cfl %s');"
		 "PRAGMA user_version = %d;",
		 CFL_STORE_SCHEMA_VERSION, CFL_VERSION, CFL_STORE_SCHEMA_VERSION);
	if (exec(st, SCHEMA, err) || exec(st, sql, err)) {
		tx_rollback(st);
		return -1;
	}
	return tx_commit(st, err);
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
		return create_schema(st, err);
	}
	if (!has_meta || version == 0)
		return cfl_err_set(err, "'%s' is an SQLite database but not "
				   "a cfl one", st->path);
	if (version > CFL_STORE_SCHEMA_VERSION)
		return cfl_err_set(err, "database '%s' was written by a newer "
				   "cfl (schema %lld > %d); upgrade cfl",
				   st->path, version, CFL_STORE_SCHEMA_VERSION);
	/* Older versions: none exist yet; migrations go here. */
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
	if (exec(st, st->readonly ? "BEGIN" : "BEGIN IMMEDIATE", err)) {
		if ((sqlite3_errcode(st->db) & 0xff) == SQLITE_NOTADB)
			cfl_err_set(err, "'%s' is not a cfl database (%s)",
				    st->path, sqlite3_errmsg(st->db));
		return -1;
	}
	st->depth = 1;
	if (check_schema_tx(st, err)) {
		tx_rollback(st);
		return -1;
	}
	return tx_commit(st, err);
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
	    exec(st, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
		 err))
		goto fail;
	if (exec(st, "PRAGMA foreign_keys = ON;", err))
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

/* ---- store: small column helpers ---- */

static char *col_strdup(sqlite3_stmt *s, int i, struct cfl_err *err)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return cfl_strdup(t ? (const char *)t : "", err);
}

static void col_copy(sqlite3_stmt *s, int i, char *out, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(out, cap, "%s", t ? (const char *)t : "");
}

static double col_double(sqlite3_stmt *s, int i, double if_null)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ?
		       if_null : sqlite3_column_double(s, i);
}

static int bind_text(sqlite3_stmt *s, int i, const char *t)
{
	return t ? sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT)
		 : sqlite3_bind_null(s, i);
}

/* NaN binds as NULL explicitly (SQLite would too, but say so). */
static int bind_double(sqlite3_stmt *s, int i, double v)
{
	return isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
}

/* ---- store: runs ---- */

void cfl_run_info_release(struct cfl_run_info *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->command);
	free(r->config);
	free(r->dataset);
	memset(r, 0, sizeof(*r));
}

static int run_name_taken(struct cfl_store *st, const char *name, int *taken,
			  struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st, "SELECT 1 FROM runs WHERE name = ?", err);
	int rc;

	if (!s)
		return -1;
	bind_text(s, 1, name);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(st, err);
	*taken = rc == SQLITE_ROW;
	return 0;
}

/* The first "KIND-YYYYMMDD-HHMMSS[-n]" not in the database; called inside
 * the transaction that inserts the run, so no other run can take it. */
static int default_name(struct cfl_store *st, enum cfl_run_kind kind,
			char *out, size_t cap, struct cfl_err *err)
{
	char base[48];
	time_t now = time(NULL);
	struct tm tm;
	int taken;

	gmtime_r(&now, &tm);
	snprintf(base, sizeof(base), "%s-", cfl_run_kind_name(kind));
	strftime(base + strlen(base), sizeof(base) - strlen(base),
		 "%Y%m%d-%H%M%S", &tm);
	for (int i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(out, cap, "%s", base);
		else
			snprintf(out, cap, "%s-%d", base, i);
		if (run_name_taken(st, out, &taken, err))
			return -1;
		if (!taken)
			return 0;
	}
	return cfl_err_set(err, "cannot find a free run name for '%s'", base);
}

/* Inserts the run named name (default_name's pick when name is NULL, then
 * written to out) in one transaction. */
static int run_insert(struct cfl_store *st, const struct cfl_run_info *info,
		      const char *name, char *out, size_t cap,
		      int64_t *run_id, struct cfl_err *err)
{
	static const char sql[] =
		"INSERT INTO runs (name, kind, command, config, dataset, "
		"dataset_sha256, seed, cfl_version, status, created) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)";
	sqlite3_stmt *s;
	int taken;

	if (tx_begin(st, err))
		return -1;
	if (!name) {
		if (default_name(st, info->kind, out, cap, err))
			goto fail;
		name = out;
	}
	if (run_name_taken(st, name, &taken, err))
		goto fail;
	if (taken) {
		cfl_err_set(err, "run '%s' already exists in '%s'; use "
			    "--resume %s or another --name", name,
			    st->path, name);
		goto fail;
	}
	if (!(s = prep(st, sql, err)))
		goto fail;
	bind_text(s, 1, name);
	bind_text(s, 2, cfl_run_kind_name(info->kind));
	bind_text(s, 3, info->command ? info->command : "");
	bind_text(s, 4, info->config ? info->config : "");
	bind_text(s, 5, info->dataset ? info->dataset : "");
	bind_text(s, 6, info->dataset_sha256);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)info->seed);
	bind_text(s, 8, CFL_VERSION);
	sqlite3_bind_double(s, 9, cfl_wall_time());
	if (run_stmt(st, s, err))
		goto fail;
	*run_id = sqlite3_last_insert_rowid(st->db);
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

int cfl_store_run_create(struct cfl_store *st, const struct cfl_run_info *info,
			 int64_t *run_id, struct cfl_err *err)
{
	if (!info->name || !*info->name)
		return cfl_err_set(err, "a run needs a name");
	return run_insert(st, info, info->name, NULL, 0, run_id, err);
}

int cfl_store_run_create_default(struct cfl_store *st,
				 const struct cfl_run_info *info, char *name,
				 size_t cap, int64_t *run_id,
				 struct cfl_err *err)
{
	return run_insert(st, info, NULL, name, cap, run_id, err);
}

#define RUN_COLS "id, name, kind, command, config, dataset, dataset_sha256, " \
		 "seed, cfl_version, status, created, finished"

static int read_run(sqlite3_stmt *s, int c, struct cfl_run_info *r,
		    struct cfl_err *err)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(s, c);
	r->kind = lookup(run_kinds, N_OF(run_kinds),
			 (const char *)sqlite3_column_text(s, c + 2));
	if ((int)r->kind < 0)
		r->kind = CFL_RUN_REPEAT;
	col_copy(s, c + 6, r->dataset_sha256, sizeof(r->dataset_sha256));
	r->seed = (uint64_t)sqlite3_column_int64(s, c + 7);
	col_copy(s, c + 8, r->version, sizeof(r->version));
	r->status = lookup(run_statuses, N_OF(run_statuses),
			   (const char *)sqlite3_column_text(s, c + 9));
	if ((int)r->status < 0)
		r->status = CFL_RUN_FAILED;
	r->created = col_double(s, c + 10, 0);
	r->finished = col_double(s, c + 11, 0);
	if (!(r->name = col_strdup(s, c + 1, err)) ||
	    !(r->command = col_strdup(s, c + 3, err)) ||
	    !(r->config = col_strdup(s, c + 4, err)) ||
	    !(r->dataset = col_strdup(s, c + 5, err))) {
		cfl_run_info_release(r);
		return -1;
	}
	return 0;
}

/* One run from a query binding at most one parameter (text or id). */
static int run_query(struct cfl_store *st, const char *sql, const char *text,
		     int64_t id, struct cfl_run_info *out, struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st, sql, err);
	int rc, ret;

	memset(out, 0, sizeof(*out));
	if (!s)
		return -1;
	if (text)
		bind_text(s, 1, text);
	else if (id)
		sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ret = read_run(s, 0, out, err);
	else if (rc == SQLITE_DONE)
		ret = 1;
	else
		ret = db_fail(st, err);
	sqlite3_reset(s);
	return ret;
}

int cfl_store_run_find(struct cfl_store *st, const char *name,
		       struct cfl_run_info *out, struct cfl_err *err)
{
	int rc = run_query(st, "SELECT " RUN_COLS " FROM runs WHERE name = ?",
			   name ? name : "", 0, out, err);

	if (rc == 1)
		cfl_err_set(err, "no run '%s' in '%s'", name ? name : "",
			    st->path);
	return rc;
}

int cfl_store_run_get(struct cfl_store *st, int64_t run_id,
		      struct cfl_run_info *out, struct cfl_err *err)
{
	int rc = run_query(st, "SELECT " RUN_COLS " FROM runs WHERE id = ?",
			   NULL, run_id, out, err);

	if (rc == 1)
		cfl_err_set(err, "no run %lld in '%s'", (long long)run_id,
			    st->path);
	return rc;
}

int cfl_store_run_latest(struct cfl_store *st, struct cfl_run_info *out,
			 struct cfl_err *err)
{
	int rc = run_query(st, "SELECT " RUN_COLS " FROM runs "
			   "ORDER BY created DESC, id DESC LIMIT 1",
			   NULL, 0, out, err);

	if (rc == 1)
		cfl_err_set(err, "no runs in '%s'", st->path);
	return rc;
}

/* Runs an UPDATE/DELETE in its own transaction and checks it touched a
 * row; `what` names the subject for the "no such" message. */
static int update_one(struct cfl_store *st, sqlite3_stmt *s, const char *what,
		      int64_t id, struct cfl_err *err)
{
	if (run_stmt(st, s, err))
		return -1;
	if (sqlite3_changes(st->db) == 0)
		return cfl_err_set(err, "no %s %lld in '%s'", what,
				   (long long)id, st->path);
	return 0;
}

int cfl_store_run_set_status(struct cfl_store *st, int64_t run_id,
			     enum cfl_run_status status, struct cfl_err *err)
{
	sqlite3_stmt *s;

	if ((int)status < 0 || (size_t)status >= N_OF(run_statuses))
		return cfl_err_set(err, "bad run status %d", (int)status);
	if (tx_begin(st, err))
		return -1;
	s = prep(st, "UPDATE runs SET status = ?, finished = ? WHERE id = ?",
		 err);
	if (!s)
		goto fail;
	bind_text(s, 1, cfl_run_status_name(status));
	if (status == CFL_RUN_RUNNING)
		sqlite3_bind_null(s, 2);
	else
		sqlite3_bind_double(s, 2, cfl_wall_time());
	sqlite3_bind_int64(s, 3, run_id);
	if (update_one(st, s, "run", run_id, err))
		goto fail;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

int cfl_store_run_finish(struct cfl_store *st, int64_t run_id,
			 enum cfl_run_status status, struct cfl_err *err)
{
	return cfl_store_run_set_status(st, run_id, status, err);
}

int cfl_store_mark_interrupted(struct cfl_store *st, int64_t run_id,
			       struct cfl_err *err)
{
	sqlite3_stmt *s;
	double now = cfl_wall_time();

	if (tx_begin(st, err))
		return -1;
	/* Each interrupted attempt is kept in the history, like a failure. */
	s = prep(st, "INSERT INTO trial_attempts (trial, attempt, worker, "
		 "started, finished, outcome, reason) SELECT id, attempt, "
		 "worker, started, ?, 'interrupted', 'interrupted' FROM trials "
		 "WHERE run = ? AND status = 'running'", err);
	if (!s)
		goto fail;
	sqlite3_bind_double(s, 1, now);
	sqlite3_bind_int64(s, 2, run_id);
	if (run_stmt(st, s, err))
		goto fail;
	s = prep(st, "UPDATE trials SET status = 'interrupted', finished = ?, "
		 "error = 'interrupted' WHERE run = ? AND status = 'running'",
		 err);
	if (!s)
		goto fail;
	sqlite3_bind_double(s, 1, now);
	sqlite3_bind_int64(s, 2, run_id);
	if (run_stmt(st, s, err))
		goto fail;
	s = prep(st, "UPDATE runs SET status = 'interrupted', finished = ? "
		 "WHERE id = ?", err);
	if (!s)
		goto fail;
	sqlite3_bind_double(s, 1, now);
	sqlite3_bind_int64(s, 2, run_id);
	if (update_one(st, s, "run", run_id, err))
		goto fail;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

void cfl_run_summaries_free(struct cfl_run_summary *runs, size_t n_runs)
{
	for (size_t i = 0; runs && i < n_runs; i++)
		cfl_run_info_release(&runs[i].info);
	free(runs);
}

int cfl_store_runs_list(struct cfl_store *st, struct cfl_run_summary **runs,
			size_t *n_runs, struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st,
		"SELECT " RUN_COLS ", (SELECT count(*) FROM trials t "
		"WHERE t.run = runs.id), (SELECT count(*) FROM trials t "
		"WHERE t.run = runs.id AND t.status = 'done'), "
		"(SELECT count(*) FROM trials t WHERE t.run = runs.id AND "
		"t.status IN ('failed', 'poison')) FROM runs "
		"ORDER BY created, id", err);
	struct cfl_run_summary *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int rc;

	*runs = NULL;
	*n_runs = 0;
	if (!s)
		return -1;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nv = cfl_realloc(v, cap * sizeof(*v), err);
			if (!nv)
				goto fail;
			v = nv;
		}
		if (read_run(s, 0, &v[n].info, err))
			goto fail;
		v[n].n_trials = (size_t)sqlite3_column_int64(s, 12);
		v[n].n_done = (size_t)sqlite3_column_int64(s, 13);
		v[n].n_failed = (size_t)sqlite3_column_int64(s, 14);
		n++;
	}
	if (rc != SQLITE_DONE) {
		db_fail(st, err);
		goto fail;
	}
	sqlite3_reset(s);
	*runs = v;
	*n_runs = n;
	return 0;
fail:
	sqlite3_reset(s);
	cfl_run_summaries_free(v, n);
	return -1;
}

/* ---- store: candidates ---- */

/* "k=v,..." sorted by key into b. */
static int params_text(const struct cfl_params *params, struct cfl_buf *b,
		       struct cfl_err *err)
{
	struct cfl_params sorted;

	cfl_params_init(&sorted);
	if (params && cfl_params_copy(&sorted, params, err))
		return -1;
	cfl_params_sort(&sorted);
	if (cfl_params_format(&sorted, b) || cfl_buf_puts(b, "")) {
		cfl_params_release(&sorted);
		return cfl_err_set(err, "out of memory");
	}
	cfl_params_release(&sorted);
	return 0;
}

/* Out of memory: "00000000", an id nobody else gets, never garbage. */
static void hex_of(const char *model, const char *ptext, char hex[9])
{
	struct cfl_sha256 h;
	unsigned char d[32];
	char full[65];

	if (cfl_sha256_init(&h, NULL)) {
		snprintf(hex, 9, "00000000");
		return;
	}
	cfl_sha256_update(&h, model, strlen(model));
	cfl_sha256_update(&h, "|", 1);
	cfl_sha256_update(&h, ptext, strlen(ptext));
	cfl_sha256_final(&h, d);
	cfl_sha256_hex(d, full);
	memcpy(hex, full, 8);
	hex[8] = 0;
}

void cfl_candidate_hex(const char *model, const struct cfl_params *params,
		       char hex[9])
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	if (params_text(params, &b, NULL)) {
		snprintf(hex, 9, "00000000");	/* out of memory, as hex_of */
	} else {
		hex_of(model ? model : "", b.data ? b.data : "", hex);
	}
	cfl_buf_release(&b);
}

int cfl_store_candidate_get_or_add(struct cfl_store *st, int64_t run_id,
				   const char *model,
				   const struct cfl_params *params,
				   int64_t *cand_id, char hex[9],
				   struct cfl_err *err)
{
	struct cfl_buf b;
	sqlite3_stmt *s;
	const char *ptext;
	char h[9];
	int rc;

	if (!model || !*model)
		return cfl_err_set(err, "a candidate needs a model name");
	cfl_buf_init(&b);
	if (params_text(params, &b, err))
		return -1;
	ptext = b.data ? b.data : "";
	if (tx_begin(st, err))
		goto out_fail;
	if (!(s = prep(st, "SELECT id, hex FROM candidates WHERE run = ? AND "
		       "model = ? AND params = ?", err)))
		goto fail;
	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, model);
	bind_text(s, 3, ptext);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*cand_id = sqlite3_column_int64(s, 0);
		col_copy(s, 1, h, sizeof(h));
		sqlite3_reset(s);
	} else if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		hex_of(model, ptext, h);
		if (!(s = prep(st, "INSERT INTO candidates (run, seq, model, "
			       "params, hex) VALUES (?1, (SELECT count(*) FROM "
			       "candidates WHERE run = ?1), ?2, ?3, ?4)", err)))
			goto fail;
		sqlite3_bind_int64(s, 1, run_id);
		bind_text(s, 2, model);
		bind_text(s, 3, ptext);
		bind_text(s, 4, h);
		if (run_stmt(st, s, err))
			goto fail;
		*cand_id = sqlite3_last_insert_rowid(st->db);
	} else {
		db_fail(st, err);
		sqlite3_reset(s);
		goto fail;
	}
	if (hex)
		memcpy(hex, h, 9);
	cfl_buf_release(&b);
	return tx_commit(st, err);
fail:
	tx_rollback(st);
out_fail:
	cfl_buf_release(&b);
	return -1;
}

int cfl_store_candidate_set_score(struct cfl_store *st, int64_t cand_id,
				  double score, struct cfl_err *err)
{
	sqlite3_stmt *s;

	if (tx_begin(st, err))
		return -1;
	if (!(s = prep(st, "UPDATE candidates SET score = ? WHERE id = ?", err)))
		goto fail;
	bind_double(s, 1, score);
	sqlite3_bind_int64(s, 2, cand_id);
	if (update_one(st, s, "candidate", cand_id, err))
		goto fail;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

void cfl_candidates_free(struct cfl_candidate_info *cands, size_t n_cands)
{
	for (size_t i = 0; cands && i < n_cands; i++)
		free(cands[i].params);
	free(cands);
}

int cfl_store_candidates(struct cfl_store *st, int64_t run_id,
			 struct cfl_candidate_info **cands, size_t *n_cands,
			 struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st,
		"SELECT c.id, c.seq, c.model, c.hex, c.params, c.score, "
		"count(t.id), coalesce(sum(t.status = 'done'), 0), "
		"coalesce(sum(t.status IN ('failed', 'poison')), 0) "
		"FROM candidates c LEFT JOIN trials t ON t.candidate = c.id "
		"WHERE c.run = ? GROUP BY c.id ORDER BY c.seq, c.id", err);
	struct cfl_candidate_info *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int rc;

	*cands = NULL;
	*n_cands = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct cfl_candidate_info *c;

		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nv = cfl_realloc(v, cap * sizeof(*v), err);
			if (!nv)
				goto fail;
			v = nv;
		}
		c = &v[n];
		memset(c, 0, sizeof(*c));
		c->id = sqlite3_column_int64(s, 0);
		c->seq = (size_t)sqlite3_column_int64(s, 1);
		col_copy(s, 2, c->model, sizeof(c->model));
		col_copy(s, 3, c->hex, sizeof(c->hex));
		c->has_score = sqlite3_column_type(s, 5) != SQLITE_NULL;
		c->score = col_double(s, 5, NAN);
		c->n_trials = (size_t)sqlite3_column_int64(s, 6);
		c->n_done = (size_t)sqlite3_column_int64(s, 7);
		c->n_failed = (size_t)sqlite3_column_int64(s, 8);
		n++;
		if (!(c->params = col_strdup(s, 4, err)))
			goto fail;
	}
	if (rc != SQLITE_DONE) {
		db_fail(st, err);
		goto fail;
	}
	sqlite3_reset(s);
	*cands = v;
	*n_cands = n;
	return 0;
fail:
	sqlite3_reset(s);
	cfl_candidates_free(v, n);
	return -1;
}

/* ---- store: trials ---- */

int cfl_store_trial_ensure(struct cfl_store *st, int64_t run_id,
			   int64_t cand_id, int repeat, int fold,
			   uint64_t seed, struct cfl_trial_state *out,
			   struct cfl_err *err)
{
	sqlite3_stmt *s;
	int rc, status;

	memset(out, 0, sizeof(*out));
	if (repeat < 0 || fold < -1)
		return cfl_err_set(err, "bad trial: repeat %d, fold %d", repeat,
				   fold);
	if (tx_begin(st, err))
		return -1;
	if (!(s = prep(st, "SELECT id, run, seed, status, attempt FROM trials "
		       "WHERE candidate = ? AND repeat = ? AND fold = ?", err)))
		goto fail;
	sqlite3_bind_int64(s, 1, cand_id);
	sqlite3_bind_int(s, 2, repeat);
	sqlite3_bind_int(s, 3, fold);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		out->id = sqlite3_column_int64(s, 0);
		if (sqlite3_column_int64(s, 1) != run_id) {
			sqlite3_reset(s);
			cfl_err_set(err, "candidate %lld is not in run %lld",
				    (long long)cand_id, (long long)run_id);
			goto fail;
		}
		if ((uint64_t)sqlite3_column_int64(s, 2) != seed) {
			cfl_err_set(err, "trial %lld (repeat %d, fold %d) was "
				    "stored with seed %llu, not %llu: the plan "
				    "changed", (long long)out->id, repeat, fold,
				    (unsigned long long)sqlite3_column_int64(s, 2),
				    (unsigned long long)seed);
			sqlite3_reset(s);
			goto fail;
		}
		status = lookup(trial_statuses, N_OF(trial_statuses),
				(const char *)sqlite3_column_text(s, 3));
		out->status = status < 0 ? CFL_TRIAL_FAILED : status;
		out->attempt = sqlite3_column_int(s, 4);
		sqlite3_reset(s);
	} else if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		if (!(s = prep(st, "INSERT INTO trials (run, candidate, repeat, "
			       "fold, seed, status) SELECT ?1, ?2, ?3, ?4, ?5, "
			       "'queued' FROM candidates WHERE id = ?2 AND "
			       "run = ?1", err)))
			goto fail;
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_int64(s, 2, cand_id);
		sqlite3_bind_int(s, 3, repeat);
		sqlite3_bind_int(s, 4, fold);
		sqlite3_bind_int64(s, 5, (sqlite3_int64)seed);
		if (run_stmt(st, s, err))
			goto fail;
		if (sqlite3_changes(st->db) == 0) {
			cfl_err_set(err, "no candidate %lld in run %lld of '%s'",
				    (long long)cand_id, (long long)run_id,
				    st->path);
			goto fail;
		}
		out->id = sqlite3_last_insert_rowid(st->db);
		out->status = CFL_TRIAL_QUEUED;
		out->attempt = 0;
	} else {
		db_fail(st, err);
		sqlite3_reset(s);
		goto fail;
	}
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

/* The status of a trial into *status; 1 when there is no such trial. */
static int trial_status(struct cfl_store *st, int64_t trial_id, int *status,
			struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st, "SELECT status FROM trials WHERE id = ?", err);
	int rc;

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, trial_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*status = lookup(trial_statuses, N_OF(trial_statuses),
				 (const char *)sqlite3_column_text(s, 0));
		sqlite3_reset(s);
		return 0;
	}
	sqlite3_reset(s);
	if (rc == SQLITE_DONE) {
		cfl_err_set(err, "no trial %lld in '%s'", (long long)trial_id,
			    st->path);
		return 1;
	}
	return db_fail(st, err);
}

int cfl_store_trial_leased(struct cfl_store *st, int64_t trial_id, int attempt,
			   const char *worker, struct cfl_err *err)
{
	sqlite3_stmt *s;
	int status;

	if (tx_begin(st, err))
		return -1;
	if (trial_status(st, trial_id, &status, err))
		goto fail;
	if (status == CFL_TRIAL_DONE) {
		tx_rollback(st);
		return 1;
	}
	if (!(s = prep(st, "UPDATE trials SET status = 'running', attempt = ?, "
		       "worker = ?, started = ?, finished = NULL WHERE id = ?",
		       err)))
		goto fail;
	sqlite3_bind_int(s, 1, attempt);
	bind_text(s, 2, worker);
	sqlite3_bind_double(s, 3, cfl_wall_time());
	sqlite3_bind_int64(s, 4, trial_id);
	if (run_stmt(st, s, err))
		goto fail;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

/* The largest prediction blob: SQLite's default limit is 1e9 bytes. */
#define MAX_PRED_BYTES ((size_t)900 * 1000 * 1000)

static int check_result(const struct cfl_trial_result *res, struct cfl_err *err)
{
	if (!res)
		return cfl_err_set(err, "no result given");
	for (int sp = 0; sp < CFL_SPLIT_COUNT; sp++) {
		const struct cfl_split_result *r = &res->split[sp];

		if (r->n_metrics && !r->metrics)
			return cfl_err_set(err, "%s: metrics missing",
					   cfl_store_split_name(sp));
		for (size_t i = 0; i < r->n_metrics; i++)
			if (!r->metrics[i].name || !*r->metrics[i].name)
				return cfl_err_set(err, "%s: metric %zu has no "
						   "name", cfl_store_split_name(sp), i);
		if (r->n && (!r->pred || !r->n_out))
			return cfl_err_set(err, "%s: %zu predictions missing",
					   cfl_store_split_name(sp), r->n);
		if (r->n_out && r->n > MAX_PRED_BYTES / 8 / r->n_out)
			return cfl_err_set(err, "%s: predictions too large "
					   "(%zu x %zu)", cfl_store_split_name(sp),
					   r->n, r->n_out);
	}
	return 0;
}

/* Predictions are stored little-endian whatever the host, so a database
 * moves between machines. */
static unsigned char *encode_doubles(const double *v, size_t n,
				     struct cfl_err *err)
{
	unsigned char *b = cfl_malloc(n * 8, err);

	if (!b)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t u;

		memcpy(&u, &v[i], 8);
		for (int k = 0; k < 8; k++)
			b[8 * i + k] = (unsigned char)(u >> (8 * k));
	}
	return b;
}

static unsigned char *encode_u32(const uint32_t *v, size_t n,
				 struct cfl_err *err)
{
	unsigned char *b = cfl_malloc(n * 4, err);

	if (!b)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 4; k++)
			b[4 * i + k] = (unsigned char)(v[i] >> (8 * k));
	return b;
}

/* Inserts the metrics and predictions of res for owner (a trial or an
 * ensemble: the SQL decides) inside the caller's transaction. */
static int insert_splits(struct cfl_store *st, const char *metric_sql,
			 const char *pred_sql, int64_t owner,
			 const struct cfl_trial_result *res,
			 struct cfl_err *err)
{
	for (int sp = 0; sp < CFL_SPLIT_COUNT; sp++) {
		const struct cfl_split_result *r = &res->split[sp];
		unsigned char *data, *rows = NULL;
		sqlite3_stmt *s;
		int rc;

		for (size_t i = 0; i < r->n_metrics; i++) {
			if (!(s = prep(st, metric_sql, err)))
				return -1;
			sqlite3_bind_int64(s, 1, owner);
			bind_text(s, 2, cfl_store_split_name(sp));
			bind_text(s, 3, r->metrics[i].name);
			bind_double(s, 4, r->metrics[i].value);
			if (run_stmt(st, s, err))
				return cfl_err_prefix(err, "metric '%s' on %s",
						      r->metrics[i].name,
						      cfl_store_split_name(sp));
		}
		if (!r->n || !r->pred)
			continue;
		if (!(data = encode_doubles(r->pred, r->n * r->n_out, err)))
			return -1;
		if (r->rows && !(rows = encode_u32(r->rows, r->n, err))) {
			free(data);
			return -1;
		}
		if (!(s = prep(st, pred_sql, err))) {
			free(data);
			free(rows);
			return -1;
		}
		sqlite3_bind_int64(s, 1, owner);
		bind_text(s, 2, cfl_store_split_name(sp));
		sqlite3_bind_int64(s, 3, (sqlite3_int64)r->n);
		sqlite3_bind_int64(s, 4, (sqlite3_int64)r->n_out);
		sqlite3_bind_blob(s, 5, data, (int)(r->n * r->n_out * 8),
				  SQLITE_STATIC);
		if (rows)
			sqlite3_bind_blob(s, 6, rows, (int)(r->n * 4),
					  SQLITE_STATIC);
		else
			sqlite3_bind_null(s, 6);
		rc = run_stmt(st, s, err);
		/* Unbind before freeing: the statement is cached. */
		sqlite3_clear_bindings(s);
		free(data);
		free(rows);
		if (rc)
			return -1;
	}
	return 0;
}

int cfl_store_trial_done(struct cfl_store *st, int64_t trial_id, int attempt,
			 const struct cfl_trial_result *res,
			 struct cfl_err *err)
{
	sqlite3_stmt *s;
	int status;

	if (check_result(res, err))
		return cfl_err_prefix(err, "result of trial %lld",
				      (long long)trial_id);
	if (tx_begin(st, err))
		return -1;
	if (trial_status(st, trial_id, &status, err))
		goto fail;
	if (status == CFL_TRIAL_DONE) {
		tx_rollback(st);
		return 1;
	}
	if (insert_splits(st,
			  "INSERT INTO metrics (trial, split, metric, value) "
			  "VALUES (?, ?, ?, ?)",
			  "INSERT INTO predictions (trial, split, n, n_out, "
			  "data, rows) VALUES (?, ?, ?, ?, ?, ?)",
			  trial_id, res, err)) {
		cfl_err_prefix(err, "result of trial %lld", (long long)trial_id);
		goto fail;
	}
	if (!(s = prep(st, "UPDATE trials SET status = 'done', attempt = ?, "
		       "finished = ?, duration = ?, peak_rss_kb = ?, "
		       "error = NULL WHERE id = ?", err)))
		goto fail;
	sqlite3_bind_int(s, 1, attempt);
	sqlite3_bind_double(s, 2, cfl_wall_time());
	bind_double(s, 3, res->duration);
	sqlite3_bind_int64(s, 4, res->peak_rss_kb);
	sqlite3_bind_int64(s, 5, trial_id);
	if (run_stmt(st, s, err))
		goto fail;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

int cfl_store_trial_failed(struct cfl_store *st, int64_t trial_id, int attempt,
			   const char *reason,
			   enum cfl_trial_status final_status,
			   struct cfl_err *err)
{
	sqlite3_stmt *s;
	int status;
	double now = cfl_wall_time();

	if (final_status != CFL_TRIAL_QUEUED && final_status != CFL_TRIAL_FAILED &&
	    final_status != CFL_TRIAL_POISON &&
	    final_status != CFL_TRIAL_INTERRUPTED)
		return cfl_err_set(err, "trial %lld: a failed attempt cannot "
				   "leave the trial %s", (long long)trial_id,
				   cfl_trial_status_name(final_status));
	if (!reason || !*reason)
		reason = "unknown";
	if (tx_begin(st, err))
		return -1;
	if (trial_status(st, trial_id, &status, err))
		goto fail;
	if (status == CFL_TRIAL_DONE) {
		tx_rollback(st);
		return 1;
	}
	if (!(s = prep(st, "INSERT INTO trial_attempts (trial, attempt, worker, "
		       "started, finished, outcome, reason) SELECT id, ?, worker, "
		       "started, ?, ?, ? FROM trials WHERE id = ?", err)))
		goto fail;
	sqlite3_bind_int(s, 1, attempt);
	sqlite3_bind_double(s, 2, now);
	bind_text(s, 3, cfl_trial_status_name(final_status));
	bind_text(s, 4, reason);
	sqlite3_bind_int64(s, 5, trial_id);
	if (run_stmt(st, s, err))
		goto fail;
	if (!(s = prep(st, "UPDATE trials SET status = ?, attempt = ?, "
		       "finished = ?, error = ? WHERE id = ?", err)))
		goto fail;
	bind_text(s, 1, cfl_trial_status_name(final_status));
	sqlite3_bind_int(s, 2, attempt);
	sqlite3_bind_double(s, 3, now);
	bind_text(s, 4, reason);
	sqlite3_bind_int64(s, 5, trial_id);
	if (run_stmt(st, s, err))
		goto fail;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

int cfl_store_trial_counts(struct cfl_store *st, int64_t run_id,
			   struct cfl_trial_counts *out, struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st, "SELECT status, count(*) FROM trials "
			       "WHERE run = ? GROUP BY status", err);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_int64(s, 1);

		out->total += n;
		switch (lookup(trial_statuses, N_OF(trial_statuses),
			       (const char *)sqlite3_column_text(s, 0))) {
		case CFL_TRIAL_QUEUED: out->queued += n; break;
		case CFL_TRIAL_RUNNING: out->running += n; break;
		case CFL_TRIAL_DONE: out->done += n; break;
		case CFL_TRIAL_FAILED: out->failed += n; break;
		case CFL_TRIAL_POISON: out->poison += n; break;
		case CFL_TRIAL_INTERRUPTED: out->interrupted += n; break;
		default: break;
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_fail(st, err);
	return 0;
}

void cfl_trials_free(struct cfl_trial_info *trials, size_t n_trials)
{
	for (size_t i = 0; trials && i < n_trials; i++)
		free(trials[i].error);
	free(trials);
}

int cfl_store_trials(struct cfl_store *st, int64_t run_id,
		     struct cfl_trial_info **trials, size_t *n_trials,
		     struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st,
		"SELECT t.id, t.candidate, t.repeat, t.fold, t.attempt, t.seed, "
		"t.status, t.worker, t.started, t.finished, t.duration, "
		"t.peak_rss_kb, t.error FROM trials t JOIN candidates c ON "
		"c.id = t.candidate WHERE t.run = ? "
		"ORDER BY c.seq, t.repeat, t.fold", err);
	struct cfl_trial_info *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int rc;

	*trials = NULL;
	*n_trials = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct cfl_trial_info *t;
		int status;

		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = cfl_realloc(v, cap * sizeof(*v), err);
			if (!nv)
				goto fail;
			v = nv;
		}
		t = &v[n++];
		memset(t, 0, sizeof(*t));
		t->id = sqlite3_column_int64(s, 0);
		t->cand_id = sqlite3_column_int64(s, 1);
		t->repeat = sqlite3_column_int(s, 2);
		t->fold = sqlite3_column_int(s, 3);
		t->attempt = sqlite3_column_int(s, 4);
		t->seed = (uint64_t)sqlite3_column_int64(s, 5);
		status = lookup(trial_statuses, N_OF(trial_statuses),
				(const char *)sqlite3_column_text(s, 6));
		t->status = status < 0 ? CFL_TRIAL_FAILED : status;
		col_copy(s, 7, t->worker, sizeof(t->worker));
		t->started = col_double(s, 8, 0);
		t->finished = col_double(s, 9, 0);
		t->duration = col_double(s, 10, NAN);
		t->peak_rss_kb = (long)sqlite3_column_int64(s, 11);
		if (sqlite3_column_type(s, 12) != SQLITE_NULL &&
		    !(t->error = col_strdup(s, 12, err)))
			goto fail;
	}
	if (rc != SQLITE_DONE) {
		db_fail(st, err);
		goto fail;
	}
	sqlite3_reset(s);
	*trials = v;
	*n_trials = n;
	return 0;
fail:
	sqlite3_reset(s);
	cfl_trials_free(v, n);
	return -1;
}

/* ---- store: reading metrics and predictions ---- */

int cfl_store_run_metrics(struct cfl_store *st, int64_t run_id,
			  enum cfl_store_split split, struct cfl_metric_row **rows,
			  size_t *n_rows, struct cfl_err *err)
{
	static const char *const sql[2] = {
		"SELECT t.candidate, t.id, c.model, c.hex, t.repeat, t.fold, "
		"m.metric, m.value FROM metrics m JOIN trials t ON t.id = m.trial "
		"JOIN candidates c ON c.id = t.candidate WHERE t.run = ? AND "
		"m.split = ? AND t.status = 'done' "
		"ORDER BY c.seq, t.repeat, t.fold, m.rowid",
		"SELECT e.id, e.name, e.repeat, m.metric, m.value FROM "
		"ensemble_metrics m JOIN ensembles e ON e.id = m.ensemble "
		"WHERE e.run = ? AND m.split = ? ORDER BY e.id, m.rowid",
	};
	struct cfl_metric_row *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int rc = SQLITE_DONE;

	*rows = NULL;
	*n_rows = 0;
	for (int q = 0; q < 2; q++) {
		sqlite3_stmt *s = prep(st, sql[q], err);

		if (!s)
			goto fail;
		sqlite3_bind_int64(s, 1, run_id);
		bind_text(s, 2, cfl_store_split_name(split));
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			struct cfl_metric_row *r;

			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				nv = cfl_realloc(v, cap * sizeof(*v), err);
				if (!nv) {
					sqlite3_reset(s);
					goto fail;
				}
				v = nv;
			}
			r = &v[n++];
			memset(r, 0, sizeof(*r));
			if (q == 0) {
				r->cand_id = sqlite3_column_int64(s, 0);
				r->trial_id = sqlite3_column_int64(s, 1);
				col_copy(s, 2, r->model, sizeof(r->model));
				col_copy(s, 3, r->hex, sizeof(r->hex));
				r->repeat = sqlite3_column_int(s, 4);
				r->fold = sqlite3_column_int(s, 5);
				col_copy(s, 6, r->metric, sizeof(r->metric));
				r->value = col_double(s, 7, NAN);
			} else {
				r->ensemble_id = sqlite3_column_int64(s, 0);
				col_copy(s, 1, r->model, sizeof(r->model));
				r->repeat = sqlite3_column_int(s, 2);
				r->fold = -1;
				col_copy(s, 3, r->metric, sizeof(r->metric));
				r->value = col_double(s, 4, NAN);
			}
		}
		sqlite3_reset(s);
		if (rc != SQLITE_DONE) {
			db_fail(st, err);
			goto fail;
		}
	}
	*rows = v;
	*n_rows = n;
	return 0;
fail:
	free(v);
	return -1;
}

void cfl_pred_release(struct cfl_pred *p)
{
	if (!p)
		return;
	free(p->values);
	free(p->rows);
	memset(p, 0, sizeof(*p));
}

static int read_pred(struct cfl_store *st, const char *sql, const char *what,
		     int64_t id, enum cfl_store_split split, struct cfl_pred *out,
		     struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st, sql, err);
	const unsigned char *data, *rows;
	sqlite3_int64 n, n_out;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, id);
	bind_text(s, 2, cfl_store_split_name(split));
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		return 1;
	}
	if (rc != SQLITE_ROW) {
		db_fail(st, err);
		sqlite3_reset(s);
		return -1;
	}
	n = sqlite3_column_int64(s, 0);
	n_out = sqlite3_column_int64(s, 1);
	data = sqlite3_column_blob(s, 2);
	rows = sqlite3_column_blob(s, 3);
	if (n <= 0 || n_out <= 0 || (size_t)n > MAX_PRED_BYTES / 8 / (size_t)n_out ||
	    !data || (size_t)sqlite3_column_bytes(s, 2) != (size_t)(n * n_out * 8) ||
	    (rows && (size_t)sqlite3_column_bytes(s, 3) != (size_t)n * 4)) {
		sqlite3_reset(s);
		return cfl_err_set(err, "corrupt %s predictions of %s %lld in '%s'",
				   cfl_store_split_name(split), what, (long long)id,
				   st->path);
	}
	out->n = (size_t)n;
	out->n_out = (size_t)n_out;
	out->values = cfl_malloc(out->n * out->n_out * sizeof(double), err);
	if (rows)
		out->rows = cfl_malloc(out->n * sizeof(uint32_t), err);
	if (!out->values || (rows && !out->rows)) {
		sqlite3_reset(s);
		cfl_pred_release(out);
		return -1;
	}
	for (size_t i = 0; i < out->n * out->n_out; i++) {
		uint64_t u = 0;

		for (int k = 0; k < 8; k++)
			u |= (uint64_t)data[8 * i + k] << (8 * k);
		memcpy(&out->values[i], &u, 8);
	}
	for (size_t i = 0; rows && i < out->n; i++)
		out->rows[i] = (uint32_t)rows[4 * i] |
			       (uint32_t)rows[4 * i + 1] << 8 |
			       (uint32_t)rows[4 * i + 2] << 16 |
			       (uint32_t)rows[4 * i + 3] << 24;
	sqlite3_reset(s);
	return 0;
}

int cfl_store_predictions(struct cfl_store *st, int64_t trial_id,
			  enum cfl_store_split split, struct cfl_pred *out,
			  struct cfl_err *err)
{
	return read_pred(st, "SELECT n, n_out, data, rows FROM predictions "
			 "WHERE trial = ? AND split = ?", "trial", trial_id,
			 split, out, err);
}

/* ---- store: ensembles ---- */

int cfl_store_ensemble_add(struct cfl_store *st, int64_t run_id,
			   const struct cfl_ensemble_info *info,
			   const struct cfl_trial_result *res,
			   int64_t *ens_id, struct cfl_err *err)
{
	sqlite3_stmt *s;
	int rc;
	int64_t id;

	if (!info || !info->name || !*info->name)
		return cfl_err_set(err, "an ensemble needs a name");
	if (check_result(res, err))
		return cfl_err_prefix(err, "ensemble '%s'", info->name);
	if (tx_begin(st, err))
		return -1;
	if (!(s = prep(st, "SELECT id FROM ensembles WHERE run = ? AND "
		       "name = ? AND repeat = ?", err)))
		goto fail;
	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, info->name);
	sqlite3_bind_int(s, 3, info->repeat);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		if (ens_id)
			*ens_id = sqlite3_column_int64(s, 0);
		sqlite3_reset(s);
		tx_rollback(st);
		return 1;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		db_fail(st, err);
		goto fail;
	}
	if (!(s = prep(st, "INSERT INTO ensembles (run, name, method, members, "
		       "repeat, duration, peak_rss_kb, created) "
		       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", err)))
		goto fail;
	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, info->name);
	bind_text(s, 3, info->method ? info->method : info->name);
	bind_text(s, 4, info->members ? info->members : "");
	sqlite3_bind_int(s, 5, info->repeat);
	bind_double(s, 6, res->duration);
	sqlite3_bind_int64(s, 7, res->peak_rss_kb);
	sqlite3_bind_double(s, 8, cfl_wall_time());
	if (run_stmt(st, s, err))
		goto fail;
	id = sqlite3_last_insert_rowid(st->db);
	if (insert_splits(st,
			  "INSERT INTO ensemble_metrics (ensemble, split, "
			  "metric, value) VALUES (?, ?, ?, ?)",
			  "INSERT INTO ensemble_predictions (ensemble, split, n, "
			  "n_out, data, rows) VALUES (?, ?, ?, ?, ?, ?)",
			  id, res, err)) {
		cfl_err_prefix(err, "ensemble '%s'", info->name);
		goto fail;
	}
	if (ens_id)
		*ens_id = id;
	return tx_commit(st, err);
fail:
	tx_rollback(st);
	return -1;
}

int cfl_store_ensemble_predictions(struct cfl_store *st, int64_t ens_id,
				   enum cfl_store_split split, struct cfl_pred *out,
				   struct cfl_err *err)
{
	return read_pred(st, "SELECT n, n_out, data, rows FROM "
			 "ensemble_predictions WHERE ensemble = ? AND split = ?",
			 "ensemble", ens_id, split, out, err);
}

void cfl_ensemble_rows_free(struct cfl_ensemble_row *ens, size_t n_ens)
{
	for (size_t i = 0; ens && i < n_ens; i++)
		free(ens[i].members);
	free(ens);
}

int cfl_store_ensembles(struct cfl_store *st, int64_t run_id,
			struct cfl_ensemble_row **ens, size_t *n_ens,
			struct cfl_err *err)
{
	sqlite3_stmt *s = prep(st, "SELECT id, name, method, repeat, members "
			       "FROM ensembles WHERE run = ? ORDER BY id", err);
	struct cfl_ensemble_row *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int rc;

	*ens = NULL;
	*n_ens = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct cfl_ensemble_row *e;

		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(nv = cfl_realloc(v, cap * sizeof(*v), err)))
				goto fail;
			v = nv;
		}
		e = &v[n];
		memset(e, 0, sizeof(*e));
		e->id = sqlite3_column_int64(s, 0);
		col_copy(s, 1, e->name, sizeof(e->name));
		col_copy(s, 2, e->method, sizeof(e->method));
		e->repeat = sqlite3_column_int(s, 3);
		n++;
		if (!(e->members = col_strdup(s, 4, err)))
			goto fail;
	}
	if (rc != SQLITE_DONE) {
		db_fail(st, err);
		goto fail;
	}
	sqlite3_reset(s);
	*ens = v;
	*n_ens = n;
	return 0;
fail:
	sqlite3_reset(s);
	cfl_ensemble_rows_free(v, n);
	return -1;
}
