/*
 * The trial store: cfl's SQLite database.  This file holds what the others
 * share: the names of the enums, the handle with its statement cache, the
 * transactions, and the one reader of result rows.  schema.c opens a
 * database (creating or checking the schema), write.c changes it, read.c
 * reads it back (include/cfl/store.h is the API of all four).
 *
 * Invariant: every public writing function runs in one transaction (a
 * savepoint when nested inside cfl_store_begin), so the database only ever
 * holds whole state changes: a done trial always has all its metrics and
 * predictions.  The coordinator alone writes; nothing here knows about
 * processes, models or metrics.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- store: names of the enums ---- */

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

const char *cfl_trial_phase_name(enum cfl_trial_phase p)
{
	return name_of(trial_phases, N_OF(trial_phases), p);
}

int cfl_store_split_lookup(const char *name)
{
	return lookup(splits, N_OF(splits), name);
}

/* ---- store: handle, statements, transactions ---- */

const char *cfl_store_path(const struct cfl_store *st)
{
	return st->path;
}

int cfl_store_fail(struct cfl_store *st, struct cfl_err *err)
{
	return cfl_err_set(err, "database '%s': %s", st->path,
			   sqlite3_errmsg(st->db));
}

/* A prepared statement for sql, reset and with bindings cleared; cached, so
 * the hot paths (a trial's result) never parse SQL again.  NULL with err. */
sqlite3_stmt *cfl_store_prep(struct cfl_store *st, const char *sql,
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
		cfl_store_fail(st, err);
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
int cfl_store_step(struct cfl_store *st, sqlite3_stmt *s,
		   struct cfl_err *err)
{
	int rc = sqlite3_step(s);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		cfl_store_fail(st, err);
		sqlite3_reset(s);
		return -1;
	}
	sqlite3_reset(s);
	return 0;
}

int cfl_store_exec(struct cfl_store *st, const char *sql,
		   struct cfl_err *err)
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

/* Opens a transaction, or a savepoint inside an open one.  BEGIN IMMEDIATE
 * takes the write lock at once, so a second writer waits (busy timeout)
 * instead of failing halfway. */
int cfl_store_tx_begin(struct cfl_store *st, struct cfl_err *err)
{
	if (st->readonly)
		return cfl_err_set(err, "database '%s' is open read-only",
				   st->path);
	if (cfl_store_exec(st, st->depth ? "SAVEPOINT cfl" : "BEGIN IMMEDIATE", err))
		return -1;
	st->depth++;
	return 0;
}

/* A failed COMMIT (a lock not obtained in time, a full disk) leaves SQLite's
 * transaction open: roll it back, so the call fails whole and the next
 * call starts clean. */
int cfl_store_tx_commit(struct cfl_store *st, struct cfl_err *err)
{
	if (cfl_store_exec(st, st->depth > 1 ? "RELEASE cfl" : "COMMIT", err)) {
		cfl_store_tx_rollback(st);
		return -1;
	}
	st->depth--;
	return 0;
}

/* Undoes the innermost transaction; errors here leave nothing to report
 * (the caller already has the first error), so err is not touched. */
void cfl_store_tx_rollback(struct cfl_store *st)
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
	return cfl_store_tx_begin(st, err);
}

int cfl_store_commit(struct cfl_store *st, struct cfl_err *err)
{
	if (st->depth <= 0)
		return cfl_err_set(err, "database '%s': commit without begin",
				   st->path);
	return cfl_store_tx_commit(st, err);
}

void cfl_store_rollback(struct cfl_store *st)
{
	if (st->depth > 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	st->depth = 0;
}


/* ---- store: reading rows ---- */

int cfl_store_read_rows(struct cfl_store *st, sqlite3_stmt *s,
			struct cfl_store_rows *rows,
			int (*read_row)(sqlite3_stmt *s, void *row,
					struct cfl_err *err),
			struct cfl_err *err)
{
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		char *row;

		if (rows->n == rows->cap) {
			size_t cap = rows->cap ? 2 * rows->cap : 16;
			void *v = cfl_realloc(rows->v, cap * rows->size, err);

			if (!v)
				goto fail;
			rows->v = v;
			rows->cap = cap;
		}
		row = (char *)rows->v + rows->n++ * rows->size;
		memset(row, 0, rows->size);
		if (read_row(s, row, err))
			goto fail;
	}
	if (rc != SQLITE_DONE) {
		cfl_store_fail(st, err);
		goto fail;
	}
	sqlite3_reset(s);
	return 0;
fail:
	sqlite3_reset(s);
	return -1;
}
