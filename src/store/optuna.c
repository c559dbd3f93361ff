/*
 * A study in Optuna's own SQLite schema, for `cfl export --format optuna`:
 * the tables Optuna 3.1's RDBStorage creates (optuna/storages/_rdb/
 * models.py, schema version 12, alembic revision v3.0.0.d), written with
 * plain SQL.  What goes in (trials, distributions, values) is decided by
 * src/report; this file only knows Optuna's tables.  It never touches a
 * cfl database.
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- store: Optuna's schema ---- */

#define OPTUNA_ALEMBIC "v3.0.0.d"
#define OPTUNA_SCHEMA_VERSION 12
#define OPTUNA_LIBRARY_VERSION "3.1.0"

/* As SQLAlchemy emits it for models.py (sqlite3 .schema of a new study). */
static const char OPTUNA_DDL[] =
	"CREATE TABLE studies (study_id INTEGER NOT NULL, study_name VARCHAR(512) "
	"NOT NULL, PRIMARY KEY (study_id));\n"
	"CREATE UNIQUE INDEX ix_studies_study_name ON studies (study_name);\n"
	"CREATE TABLE version_info (version_info_id INTEGER NOT NULL, "
	"schema_version INTEGER, library_version VARCHAR(256), PRIMARY KEY "
	"(version_info_id), CHECK (version_info_id=1));\n"
	"CREATE TABLE study_directions (study_direction_id INTEGER NOT NULL, "
	"direction VARCHAR(8) NOT NULL, study_id INTEGER NOT NULL, objective "
	"INTEGER NOT NULL, PRIMARY KEY (study_direction_id), UNIQUE (study_id, "
	"objective), FOREIGN KEY(study_id) REFERENCES studies (study_id));\n"
	"CREATE TABLE study_user_attributes (study_user_attribute_id INTEGER NOT "
	"NULL, study_id INTEGER, \"key\" VARCHAR(512), value_json TEXT, PRIMARY "
	"KEY (study_user_attribute_id), UNIQUE (study_id, \"key\"), FOREIGN "
	"KEY(study_id) REFERENCES studies (study_id));\n"
	"CREATE TABLE study_system_attributes (study_system_attribute_id INTEGER "
	"NOT NULL, study_id INTEGER, \"key\" VARCHAR(512), value_json TEXT, "
	"PRIMARY KEY (study_system_attribute_id), UNIQUE (study_id, \"key\"), "
	"FOREIGN KEY(study_id) REFERENCES studies (study_id));\n"
	"CREATE TABLE trials (trial_id INTEGER NOT NULL, number INTEGER, study_id "
	"INTEGER, state VARCHAR(8) NOT NULL, datetime_start DATETIME, "
	"datetime_complete DATETIME, PRIMARY KEY (trial_id), FOREIGN "
	"KEY(study_id) REFERENCES studies (study_id));\n"
	"CREATE TABLE trial_user_attributes (trial_user_attribute_id INTEGER NOT "
	"NULL, trial_id INTEGER, \"key\" VARCHAR(512), value_json TEXT, PRIMARY "
	"KEY (trial_user_attribute_id), UNIQUE (trial_id, \"key\"), FOREIGN "
	"KEY(trial_id) REFERENCES trials (trial_id));\n"
	"CREATE TABLE trial_system_attributes (trial_system_attribute_id INTEGER "
	"NOT NULL, trial_id INTEGER, \"key\" VARCHAR(512), value_json TEXT, "
	"PRIMARY KEY (trial_system_attribute_id), UNIQUE (trial_id, \"key\"), "
	"FOREIGN KEY(trial_id) REFERENCES trials (trial_id));\n"
	"CREATE TABLE trial_params (param_id INTEGER NOT NULL, trial_id INTEGER, "
	"param_name VARCHAR(512), param_value FLOAT, distribution_json TEXT, "
	"PRIMARY KEY (param_id), UNIQUE (trial_id, param_name), FOREIGN "
	"KEY(trial_id) REFERENCES trials (trial_id));\n"
	"CREATE TABLE trial_values (trial_value_id INTEGER NOT NULL, trial_id "
	"INTEGER NOT NULL, objective INTEGER NOT NULL, value FLOAT, value_type "
	"VARCHAR(7) NOT NULL, PRIMARY KEY (trial_value_id), UNIQUE (trial_id, "
	"objective), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));\n"
	"CREATE TABLE trial_intermediate_values (trial_intermediate_value_id "
	"INTEGER NOT NULL, trial_id INTEGER NOT NULL, step INTEGER NOT NULL, "
	"intermediate_value FLOAT, intermediate_value_type VARCHAR(7) NOT NULL, "
	"PRIMARY KEY (trial_intermediate_value_id), UNIQUE (trial_id, step), "
	"FOREIGN KEY(trial_id) REFERENCES trials (trial_id));\n"
	"CREATE TABLE trial_heartbeats (trial_heartbeat_id INTEGER NOT NULL, "
	"trial_id INTEGER NOT NULL, heartbeat DATETIME NOT NULL, PRIMARY KEY "
	"(trial_heartbeat_id), UNIQUE (trial_id), FOREIGN KEY(trial_id) "
	"REFERENCES trials (trial_id));\n"
	"CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
	"CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));\n"
	"INSERT INTO alembic_version VALUES ('" OPTUNA_ALEMBIC "');\n";

/* ---- store: writing a study ---- */

struct ow {
	sqlite3 *db;
	const char *path;
	struct cfl_err *err;
};

static int ow_fail(struct ow *o)
{
	return cfl_err_set(o->err, "optuna storage '%s': %s", o->path,
			   sqlite3_errmsg(o->db));
}

static int ow_exec(struct ow *o, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(o->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		cfl_err_set(o->err, "optuna storage '%s': %s", o->path,
			    msg ? msg : sqlite3_errmsg(o->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* Runs sql with the bindings already made; its new rowid into *id. */
static int ow_step(struct ow *o, sqlite3_stmt *s, int64_t *id)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_DONE)
		return ow_fail(o);
	if (id)
		*id = sqlite3_last_insert_rowid(o->db);
	return 0;
}

/* Optuna's DATETIME: "YYYY-MM-DD HH:MM:SS.ffffff" (naive; UTC here). */
static int bind_time(sqlite3_stmt *s, int i, double t)
{
	char buf[40];
	time_t sec;
	struct tm tm;
	long us;

	if (!(t > 0))
		return sqlite3_bind_null(s, i);
	sec = (time_t)floor(t);
	us = (long)llround((t - (double)sec) * 1e6);
	if (us >= 1000000) {
		sec++;
		us -= 1000000;
	}
	gmtime_r(&sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%06ld", us);
	return sqlite3_bind_text(s, i, buf, -1, SQLITE_TRANSIENT);
}

static int add_attrs(struct ow *o, sqlite3_stmt *s, int64_t owner,
		     const struct cfl_optuna_attr *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(s, 1, owner);
		bind_text(s, 2, a[i].key);
		bind_text(s, 3, a[i].value_json);
		if (ow_step(o, s, NULL))
			return cfl_err_prefix(o->err, "attribute '%s'", a[i].key);
	}
	return 0;
}

enum { S_STUDY, S_DIR, S_SATTR, S_TRIAL, S_PARAM, S_VALUE, S_TATTR, N_S };

static const char *const ow_sql[N_S] = {
	"INSERT INTO studies (study_name) VALUES (?)",
	"INSERT INTO study_directions (direction, study_id, objective) "
	"VALUES (?, ?, 0)",
	"INSERT INTO study_user_attributes (study_id, key, value_json) "
	"VALUES (?, ?, ?)",
	"INSERT INTO trials (number, study_id, state, datetime_start, "
	"datetime_complete) VALUES (?, ?, ?, ?, ?)",
	"INSERT INTO trial_params (trial_id, param_name, param_value, "
	"distribution_json) VALUES (?, ?, ?, ?)",
	"INSERT INTO trial_values (trial_id, objective, value, value_type) "
	"VALUES (?, 0, ?, ?)",
	"INSERT INTO trial_user_attributes (trial_id, key, value_json) "
	"VALUES (?, ?, ?)",
};

static int write_study(struct ow *o, sqlite3_stmt **s,
		       const struct cfl_optuna_study *st)
{
	int64_t sid, tid;

	bind_text(s[S_STUDY], 1, st->name);
	if (ow_step(o, s[S_STUDY], &sid))
		return -1;
	bind_text(s[S_DIR], 1, st->direction);
	sqlite3_bind_int64(s[S_DIR], 2, sid);
	if (ow_step(o, s[S_DIR], NULL) ||
	    add_attrs(o, s[S_SATTR], sid, st->attrs, st->n_attrs))
		return -1;
	for (size_t i = 0; i < st->n_trials; i++) {
		const struct cfl_optuna_trial *t = &st->trials[i];

		sqlite3_bind_int64(s[S_TRIAL], 1, (sqlite3_int64)i);
		sqlite3_bind_int64(s[S_TRIAL], 2, sid);
		bind_text(s[S_TRIAL], 3, t->state);
		bind_time(s[S_TRIAL], 4, t->start);
		bind_time(s[S_TRIAL], 5, t->complete);
		if (ow_step(o, s[S_TRIAL], &tid))
			return cfl_err_prefix(o->err, "trial %zu", i);
		for (size_t k = 0; k < t->n_params; k++) {
			sqlite3_bind_int64(s[S_PARAM], 1, tid);
			bind_text(s[S_PARAM], 2, t->params[k].name);
			sqlite3_bind_double(s[S_PARAM], 3, t->params[k].value);
			bind_text(s[S_PARAM], 4, t->params[k].distribution_json);
			if (ow_step(o, s[S_PARAM], NULL))
				return cfl_err_prefix(o->err, "trial %zu", i);
		}
		if (!isnan(t->value)) {
			sqlite3_bind_int64(s[S_VALUE], 1, tid);
			if (isinf(t->value))
				sqlite3_bind_null(s[S_VALUE], 2);
			else
				sqlite3_bind_double(s[S_VALUE], 2, t->value);
			bind_text(s[S_VALUE], 3, isinf(t->value) ?
				  (t->value > 0 ? "INF_POS" : "INF_NEG") : "FINITE");
			if (ow_step(o, s[S_VALUE], NULL))
				return cfl_err_prefix(o->err, "trial %zu", i);
		}
		if (add_attrs(o, s[S_TATTR], tid, t->attrs, t->n_attrs))
			return cfl_err_prefix(o->err, "trial %zu", i);
	}
	return 0;
}

/* An existing file: Optuna's, of our revision, without a study of that
 * name. */
static int check_existing(struct ow *o, const char *name)
{
	sqlite3_stmt *s;
	int rc, ok;

	if (sqlite3_prepare_v2(o->db, "SELECT version_num FROM alembic_version",
			       -1, &s, NULL) != SQLITE_OK) {
		cfl_err_set(o->err, "'%s' is not an Optuna storage (%s)", o->path,
			    sqlite3_errmsg(o->db));
		return -1;
	}
	rc = sqlite3_step(s);
	ok = rc == SQLITE_ROW && sqlite3_column_text(s, 0) &&
	     !strcmp((const char *)sqlite3_column_text(s, 0), OPTUNA_ALEMBIC);
	if (!ok)
		cfl_err_set(o->err, "'%s' is an Optuna storage of revision '%s', "
			    "not " OPTUNA_ALEMBIC " (Optuna 3.1); write a new file",
			    o->path, rc == SQLITE_ROW && sqlite3_column_text(s, 0) ?
			    (const char *)sqlite3_column_text(s, 0) : "?");
	sqlite3_finalize(s);
	if (!ok)
		return -1;
	if (sqlite3_prepare_v2(o->db, "SELECT 1 FROM studies WHERE study_name = ?",
			       -1, &s, NULL) != SQLITE_OK)
		return ow_fail(o);
	bind_text(s, 1, name);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc == SQLITE_ROW)
		return cfl_err_set(o->err, "'%s' already holds a study '%s'",
				   o->path, name);
	return rc == SQLITE_DONE ? 0 : ow_fail(o);
}

int cfl_store_optuna_write(const char *path, const struct cfl_optuna_study *study,
			   struct cfl_err *err)
{
	struct ow o = { NULL, path, err };
	sqlite3_stmt *s[N_S] = { 0 };
	char tmp[4096];
	char vsql[160];
	int fresh = access(path, F_OK) != 0, rc = -1, in_tx = 0;

	if (!study || !study->name || !*study->name)
		return cfl_err_set(err, "an Optuna study needs a name");
	if (fresh && errno != ENOENT)
		return cfl_err_set(err, "cannot write '%s': %s", path, strerror(errno));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid()) >=
	    (int)sizeof(tmp))
		return cfl_err_set(err, "path '%s' too long", path);
	o.path = fresh ? tmp : path;
	if (fresh)
		unlink(tmp);
	if (sqlite3_open_v2(o.path, &o.db, SQLITE_OPEN_READWRITE |
			    (fresh ? SQLITE_OPEN_CREATE : 0), NULL) != SQLITE_OK) {
		cfl_err_set(err, "cannot open '%s': %s", path,
			    o.db ? sqlite3_errmsg(o.db) : "out of memory");
		goto out;
	}
	o.path = path;
	sqlite3_busy_timeout(o.db, 10000);
	if (ow_exec(&o, "BEGIN IMMEDIATE"))
		goto out;
	in_tx = 1;
	if (fresh) {
		snprintf(vsql, sizeof(vsql), "INSERT INTO version_info VALUES "
			 "(1, %d, '%s');", OPTUNA_SCHEMA_VERSION,
			 OPTUNA_LIBRARY_VERSION);
		if (ow_exec(&o, OPTUNA_DDL) || ow_exec(&o, vsql))
			goto out;
	} else if (check_existing(&o, study->name)) {
		goto out;
	}
	for (int i = 0; i < N_S; i++)
		if (sqlite3_prepare_v2(o.db, ow_sql[i], -1, &s[i], NULL) != SQLITE_OK) {
			ow_fail(&o);
			goto out;
		}
	if (write_study(&o, s, study) || ow_exec(&o, "COMMIT"))
		goto out;
	in_tx = 0;
	rc = 0;
out:
	for (int i = 0; i < N_S; i++)
		sqlite3_finalize(s[i]);
	if (in_tx)
		sqlite3_exec(o.db, "ROLLBACK", NULL, NULL, NULL);
	if (o.db && sqlite3_close(o.db) != SQLITE_OK && !rc)
		rc = cfl_err_set(err, "cannot close '%s'", path);
	if (fresh) {
		if (!rc && rename(tmp, path))
			rc = cfl_err_set(err, "cannot write '%s': %s", path,
					 strerror(errno));
		if (rc)
			unlink(tmp);
	}
	return rc;
}
