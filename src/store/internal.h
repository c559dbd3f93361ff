/*
 * What the store's files share (store.c, schema.c, write.c, read.c): the
 * handle, statements and transactions, column helpers, and the one reader
 * of result rows.  src/store is the only code that includes sqlite3.h.
 */
#ifndef CFL_STORE_INTERNAL_H
#define CFL_STORE_INTERNAL_H

#include "cfl/store.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

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

/* The largest prediction blob: SQLite's default limit is 1e9 bytes. */
#define MAX_PRED_BYTES ((size_t)900 * 1000 * 1000)

/* ---- the enums' names, as stored ---- */

static const char *const run_kinds[] = { "repeat", "tune", "auto" };
static const char *const run_statuses[] = { "running", "done", "failed",
					    "interrupted" };
static const char *const trial_statuses[] = { "queued", "running", "done",
					      "failed", "poison",
					      "interrupted", "cancelled",
					      "pruned" };
static const char *const splits[] = { "valid", "test", "oof" };
static const char *const trial_phases[] = { "repeat", "search", "refit" };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static inline const char *name_of(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : "?";
}

/* The index of s in names, or -1. */
static inline int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

/* ---- statements and transactions (store.c) ---- */

/* Fills err with "database 'PATH': SQLite's message"; returns -1. */
int cfl_store_fail(struct cfl_store *st, struct cfl_err *err);
/* A prepared statement for sql, reset and with bindings cleared; cached by
 * the sql pointer (sql must be a string that lives as long as st).  NULL
 * with err. */
sqlite3_stmt *cfl_store_prep(struct cfl_store *st, const char *sql,
			     struct cfl_err *err);
/* Runs a statement to completion (no rows expected) and resets it.  0 or
 * -1 with err. */
int cfl_store_step(struct cfl_store *st, sqlite3_stmt *s,
		   struct cfl_err *err);
/* Runs SQL text (several statements allowed).  0 or -1 with err. */
int cfl_store_exec(struct cfl_store *st, const char *sql,
		   struct cfl_err *err);
/* A transaction (BEGIN IMMEDIATE), or a savepoint inside an open one; its
 * commit; its rollback (err untouched: the caller has the first error). */
int cfl_store_tx_begin(struct cfl_store *st, struct cfl_err *err);
int cfl_store_tx_commit(struct cfl_store *st, struct cfl_err *err);
void cfl_store_tx_rollback(struct cfl_store *st);

/* ---- parameters as JSON (params.c) ---- */

/* Appends params as one JSON object, keys sorted: a value that is a JSON
 * number as a number, any other as a string.  0, or -1 with err. */
int cfl_store_params_json(const struct cfl_params *params, struct cfl_buf *b,
			  struct cfl_err *err);
/* Adds the pairs of a flat JSON object (string, number, true, false or
 * null values; a number's text as written, null as "") to out.  0, or -1
 * with err when json is not such an object (out may hold some pairs). */
int cfl_store_params_parse_json(const char *json, struct cfl_params *out,
				struct cfl_err *err);
/* Adds the pairs of schema 1's "k=v,k=v" text to out (a piece without '='
 * continues the value before it).  0, or -1 with err. */
int cfl_store_params_parse_v1(const char *text, struct cfl_params *out,
			      struct cfl_err *err);

/* ---- reading rows (store.c) ---- */

/* A growing array of rows of `size` bytes each. */
struct cfl_store_rows {
	void *v;
	size_t n, cap, size;
};

/* Steps s (prepared and bound by the caller) to its end, appending one
 * zeroed row per result row to rows and filling it with read_row (0, or -1
 * with err).  Returns 0, or -1 with err on a database error or a failed
 * read_row; rows then holds every row started, the failed one included,
 * for the caller's free function.  Resets s either way. */
int cfl_store_read_rows(struct cfl_store *st, sqlite3_stmt *s,
			struct cfl_store_rows *rows,
			int (*read_row)(sqlite3_stmt *s, void *row,
					struct cfl_err *err),
			struct cfl_err *err);

/* ---- columns and bindings ---- */

static inline char *col_strdup(sqlite3_stmt *s, int i, struct cfl_err *err)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return cfl_strdup(t ? (const char *)t : "", err);
}

static inline void col_copy(sqlite3_stmt *s, int i, char *out, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(out, cap, "%s", t ? (const char *)t : "");
}

static inline double col_double(sqlite3_stmt *s, int i, double if_null)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ?
		       if_null : sqlite3_column_double(s, i);
}

static inline int bind_text(sqlite3_stmt *s, int i, const char *t)
{
	return t ? sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT)
		 : sqlite3_bind_null(s, i);
}

/* NaN binds as NULL explicitly (SQLite would too, but say so). */
static inline int bind_double(sqlite3_stmt *s, int i, double v)
{
	return isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
}

#endif
