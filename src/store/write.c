/*
 * Writing the store: runs, candidates, trials (leases, results, failures)
 * and ensembles.  Each public function is one transaction (a savepoint
 * inside cfl_store_begin): it writes all of its change or none of it.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- store: runs ---- */

static int run_name_taken(struct cfl_store *st, const char *name, int *taken,
			  struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT 1 FROM runs WHERE name = ?", err);
	int rc;

	if (!s)
		return -1;
	bind_text(s, 1, name);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cfl_store_fail(st, err);
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

/* A database created before 'auto' runs existed has a runs table whose
 * CHECK lists only 'repeat' and 'tune': say so rather than "CHECK
 * constraint failed". */
static int auto_allowed(struct cfl_store *st, struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT count(*) FROM sqlite_master "
					 "WHERE type = 'table' AND name = 'runs' "
					 "AND sql LIKE '%''auto''%'", err);
	int ok;

	if (!s)
		return -1;
	if (sqlite3_step(s) != SQLITE_ROW) {
		sqlite3_reset(s);
		return cfl_err_set(err, "database '%s': %s", st->path,
				   sqlite3_errmsg(st->db));
	}
	ok = sqlite3_column_int(s, 0) > 0;
	sqlite3_reset(s);
	if (!ok)
		return cfl_err_set(err, "database '%s' was created by a cfl "
				   "without 'auto' runs; give cfl auto another "
				   "--db", st->path);
	return 0;
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

	if (cfl_store_tx_begin(st, err))
		return -1;
	if (!name) {
		if (default_name(st, info->kind, out, cap, err))
			goto fail;
		name = out;
	}
	if (run_name_taken(st, name, &taken, err))
		goto fail;
	if (taken) {
		struct cfl_buf q;

		/* the hint is pasted back: a shell word */
		cfl_buf_init(&q);
		cfl_buf_shell_word(&q, name);
		cfl_err_set(err, "run '%s' already exists in '%s'; use "
			    "--resume %s or another --name", name,
			    st->path, q.data ? q.data : "NAME");
		cfl_buf_release(&q);
		goto fail;
	}
	if (info->kind == CFL_RUN_AUTO && auto_allowed(st, err))
		goto fail;
	if (!(s = cfl_store_prep(st, sql, err)))
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
	if (cfl_store_step(st, s, err))
		goto fail;
	*run_id = sqlite3_last_insert_rowid(st->db);
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
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

/* Runs an UPDATE/DELETE in its own transaction and checks it touched a
 * row; `what` names the subject for the "no such" message. */
static int update_one(struct cfl_store *st, sqlite3_stmt *s, const char *what,
		      int64_t id, struct cfl_err *err)
{
	if (cfl_store_step(st, s, err))
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
	if (cfl_store_tx_begin(st, err))
		return -1;
	s = cfl_store_prep(st, "UPDATE runs SET status = ?, finished = ? WHERE id = ?",
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
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

/* Deletes the run's ensembles (their members and metrics go with them: ON
 * DELETE CASCADE), inside the caller's transaction.  0, or -1 with err. */
static int delete_ensembles(struct cfl_store *st, int64_t run_id,
			    struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "DELETE FROM ensembles WHERE run = ?", err);

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	return cfl_store_step(st, s, err) ? -1 : 0;
}

int cfl_store_run_grow(struct cfl_store *st, int64_t run_id, const char *config,
		       const char *command, struct cfl_err *err)
{
	sqlite3_stmt *s;

	if (cfl_store_tx_begin(st, err))
		return -1;
	s = cfl_store_prep(st, "UPDATE runs SET config = ?, command = ? WHERE id = ?", err);
	if (!s)
		goto fail;
	bind_text(s, 1, config ? config : "");
	bind_text(s, 2, command ? command : "");
	sqlite3_bind_int64(s, 3, run_id);
	if (update_one(st, s, "run", run_id, err) ||
	    delete_ensembles(st, run_id, err))
		goto fail;
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

int cfl_store_run_finish(struct cfl_store *st, int64_t run_id,
			 enum cfl_run_status status, struct cfl_err *err)
{
	return cfl_store_run_set_status(st, run_id, status, err);
}

int cfl_store_ensembles_delete(struct cfl_store *st, int64_t run_id,
				struct cfl_err *err)
{
	if (cfl_store_tx_begin(st, err))
		return -1;
	if (delete_ensembles(st, run_id, err))
		goto fail;
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

int cfl_store_mark_interrupted(struct cfl_store *st, int64_t run_id,
			       struct cfl_err *err)
{
	sqlite3_stmt *s;
	double now = cfl_wall_time();

	if (cfl_store_tx_begin(st, err))
		return -1;
	/* Each interrupted attempt is kept in the history, like a failure. */
	s = cfl_store_prep(st, "INSERT INTO trial_attempts (trial, attempt, worker, "
		 "started, finished, outcome, reason) SELECT id, attempt, "
		 "worker, started, ?, 'interrupted', 'interrupted' FROM trials "
		 "WHERE run = ? AND status = 'running'", err);
	if (!s)
		goto fail;
	sqlite3_bind_double(s, 1, now);
	sqlite3_bind_int64(s, 2, run_id);
	if (cfl_store_step(st, s, err))
		goto fail;
	s = cfl_store_prep(st, "UPDATE trials SET status = 'interrupted', finished = ?, "
		 "error = 'interrupted' WHERE run = ? AND status = 'running'",
		 err);
	if (!s)
		goto fail;
	sqlite3_bind_double(s, 1, now);
	sqlite3_bind_int64(s, 2, run_id);
	if (cfl_store_step(st, s, err))
		goto fail;
	s = cfl_store_prep(st, "UPDATE runs SET status = 'interrupted', finished = ? "
		 "WHERE id = ?", err);
	if (!s)
		goto fail;
	sqlite3_bind_double(s, 1, now);
	sqlite3_bind_int64(s, 2, run_id);
	if (update_one(st, s, "run", run_id, err))
		goto fail;
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
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
	struct cfl_buf b, j;
	sqlite3_stmt *s;
	const char *ptext, *pjson;
	char h[9];
	int rc;

	if (!model || !*model)
		return cfl_err_set(err, "a candidate needs a model name");
	cfl_buf_init(&b);
	cfl_buf_init(&j);
	/* the hex id hashes the "k=v" text, as schema 1 did: ids never change */
	if (params_text(params, &b, err) || cfl_store_params_json(params, &j, err))
		goto out_fail;
	ptext = b.data ? b.data : "";
	pjson = j.data;
	if (cfl_store_tx_begin(st, err))
		goto out_fail;
	if (!(s = cfl_store_prep(st, "SELECT id, hex FROM candidates WHERE run = ? AND "
		       "model = ? AND params = ?", err)))
		goto fail;
	sqlite3_bind_int64(s, 1, run_id);
	bind_text(s, 2, model);
	bind_text(s, 3, pjson);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*cand_id = sqlite3_column_int64(s, 0);
		col_copy(s, 1, h, sizeof(h));
		sqlite3_reset(s);
	} else if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		hex_of(model, ptext, h);
		if (!(s = cfl_store_prep(st, "INSERT INTO candidates (run, seq, model, "
			       "params, hex) VALUES (?1, (SELECT count(*) FROM "
			       "candidates WHERE run = ?1), ?2, ?3, ?4)", err)))
			goto fail;
		sqlite3_bind_int64(s, 1, run_id);
		bind_text(s, 2, model);
		bind_text(s, 3, pjson);
		bind_text(s, 4, h);
		if (cfl_store_step(st, s, err))
			goto fail;
		*cand_id = sqlite3_last_insert_rowid(st->db);
	} else {
		cfl_store_fail(st, err);
		sqlite3_reset(s);
		goto fail;
	}
	if (hex)
		memcpy(hex, h, 9);
	cfl_buf_release(&b);
	cfl_buf_release(&j);
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
out_fail:
	cfl_buf_release(&b);
	cfl_buf_release(&j);
	return -1;
}

int cfl_store_candidate_set_score(struct cfl_store *st, int64_t cand_id,
				  double score, struct cfl_err *err)
{
	sqlite3_stmt *s;

	if (cfl_store_tx_begin(st, err))
		return -1;
	if (!(s = cfl_store_prep(st, "UPDATE candidates SET score = ? WHERE id = ?", err)))
		goto fail;
	bind_double(s, 1, score);
	sqlite3_bind_int64(s, 2, cand_id);
	if (update_one(st, s, "candidate", cand_id, err))
		goto fail;
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

/* ---- store: trials ---- */

int cfl_store_trial_ensure(struct cfl_store *st, int64_t run_id,
			   int64_t cand_id, int repeat, int fold,
			   uint64_t seed, struct cfl_trial_state *out,
			   struct cfl_err *err)
{
	return cfl_store_trial_ensure_in(st, run_id, cand_id, repeat, fold,
					 seed, -1, out, err);
}

/* phase -1: by the run's kind. */
int cfl_store_trial_ensure_in(struct cfl_store *st, int64_t run_id,
			      int64_t cand_id, int repeat, int fold,
			      uint64_t seed, enum cfl_trial_phase phase,
			      struct cfl_trial_state *out, struct cfl_err *err)
{
	sqlite3_stmt *s;
	int rc, status;

	memset(out, 0, sizeof(*out));
	if (repeat < 0 || fold < -1)
		return cfl_err_set(err, "bad trial: repeat %d, fold %d", repeat,
				   fold);
	if ((int)phase < -1 || (int)phase >= (int)N_OF(trial_phases))
		return cfl_err_set(err, "bad trial phase %d", (int)phase);
	if (cfl_store_tx_begin(st, err))
		return -1;
	if (!(s = cfl_store_prep(st, "SELECT id, run, seed, status, attempt FROM trials "
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
		if (!(s = cfl_store_prep(st, "INSERT INTO trials (run, candidate, repeat, "
			       "fold, seed, status, phase) SELECT ?1, ?2, ?3, ?4, "
			       "?5, 'queued', coalesce(?6, (SELECT CASE kind "
			       "WHEN 'repeat' THEN 'repeat' ELSE 'search' END "
			       "FROM runs WHERE id = ?1)) FROM candidates "
			       "WHERE id = ?2 AND run = ?1", err)))
			goto fail;
		sqlite3_bind_int64(s, 1, run_id);
		sqlite3_bind_int64(s, 2, cand_id);
		sqlite3_bind_int(s, 3, repeat);
		sqlite3_bind_int(s, 4, fold);
		sqlite3_bind_int64(s, 5, (sqlite3_int64)seed);
		bind_text(s, 6, (int)phase < 0 ? NULL : cfl_trial_phase_name(phase));
		if (cfl_store_step(st, s, err))
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
		cfl_store_fail(st, err);
		sqlite3_reset(s);
		goto fail;
	}
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

/* The status of a trial into *status; 1 when there is no such trial. */
static int trial_status(struct cfl_store *st, int64_t trial_id, int *status,
			struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT status FROM trials WHERE id = ?", err);
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
	return cfl_store_fail(st, err);
}

int cfl_store_trial_leased(struct cfl_store *st, int64_t trial_id, int attempt,
			   const char *worker, struct cfl_err *err)
{
	sqlite3_stmt *s;
	int status;

	if (cfl_store_tx_begin(st, err))
		return -1;
	if (trial_status(st, trial_id, &status, err))
		goto fail;
	if (status == CFL_TRIAL_DONE) {
		cfl_store_tx_rollback(st);
		return 1;
	}
	if (!(s = cfl_store_prep(st, "UPDATE trials SET status = 'running', attempt = ?, "
		       "worker = ?, started = ?, finished = NULL WHERE id = ?",
		       err)))
		goto fail;
	sqlite3_bind_int(s, 1, attempt);
	bind_text(s, 2, worker);
	sqlite3_bind_double(s, 3, cfl_wall_time());
	sqlite3_bind_int64(s, 4, trial_id);
	if (cfl_store_step(st, s, err))
		goto fail;
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
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
			if (!(s = cfl_store_prep(st, metric_sql, err)))
				return -1;
			sqlite3_bind_int64(s, 1, owner);
			bind_text(s, 2, cfl_store_split_name(sp));
			bind_text(s, 3, r->metrics[i].name);
			bind_double(s, 4, r->metrics[i].value);
			if (cfl_store_step(st, s, err))
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
		if (!(s = cfl_store_prep(st, pred_sql, err))) {
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
		rc = cfl_store_step(st, s, err);
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
	if (cfl_store_tx_begin(st, err))
		return -1;
	if (trial_status(st, trial_id, &status, err))
		goto fail;
	if (status == CFL_TRIAL_DONE) {
		cfl_store_tx_rollback(st);
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
	if (!(s = cfl_store_prep(st, "UPDATE trials SET status = 'done', attempt = ?, "
		       "finished = ?, duration = ?, peak_rss_kb = ?, "
		       "error = NULL WHERE id = ?", err)))
		goto fail;
	sqlite3_bind_int(s, 1, attempt);
	sqlite3_bind_double(s, 2, cfl_wall_time());
	bind_double(s, 3, res->duration);
	sqlite3_bind_int64(s, 4, res->peak_rss_kb);
	sqlite3_bind_int64(s, 5, trial_id);
	if (cfl_store_step(st, s, err))
		goto fail;
	if (res->model) {
		if (!(s = cfl_store_prep(st, "INSERT OR REPLACE INTO trial_models "
					 "(trial, text) VALUES (?, ?)", err)))
			goto fail;
		sqlite3_bind_int64(s, 1, trial_id);
		sqlite3_bind_text(s, 2, res->model, -1, SQLITE_STATIC);
		if (cfl_store_step(st, s, err))
			goto fail;
	}
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
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
	    final_status != CFL_TRIAL_INTERRUPTED &&
	    final_status != CFL_TRIAL_CANCELLED &&
	    final_status != CFL_TRIAL_PRUNED)
		return cfl_err_set(err, "trial %lld: a failed attempt cannot "
				   "leave the trial %s", (long long)trial_id,
				   cfl_trial_status_name(final_status));
	if (!reason || !*reason)
		reason = "unknown";
	if (cfl_store_tx_begin(st, err))
		return -1;
	if (trial_status(st, trial_id, &status, err))
		goto fail;
	if (status == CFL_TRIAL_DONE) {
		cfl_store_tx_rollback(st);
		return 1;
	}
	if (!(s = cfl_store_prep(st, "INSERT INTO trial_attempts (trial, attempt, worker, "
		       "started, finished, outcome, reason) SELECT id, ?, worker, "
		       "started, ?, ?, ? FROM trials WHERE id = ?", err)))
		goto fail;
	sqlite3_bind_int(s, 1, attempt);
	sqlite3_bind_double(s, 2, now);
	bind_text(s, 3, cfl_trial_status_name(final_status));
	bind_text(s, 4, reason);
	sqlite3_bind_int64(s, 5, trial_id);
	if (cfl_store_step(st, s, err))
		goto fail;
	if (!(s = cfl_store_prep(st, "UPDATE trials SET status = ?, attempt = ?, "
		       "finished = ?, error = ? WHERE id = ?", err)))
		goto fail;
	bind_text(s, 1, cfl_trial_status_name(final_status));
	sqlite3_bind_int(s, 2, attempt);
	sqlite3_bind_double(s, 3, now);
	bind_text(s, 4, reason);
	sqlite3_bind_int64(s, 5, trial_id);
	if (cfl_store_step(st, s, err))
		goto fail;
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
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
	if (cfl_store_tx_begin(st, err))
		return -1;
	if (!(s = cfl_store_prep(st, "SELECT id FROM ensembles WHERE run = ? AND "
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
		cfl_store_tx_rollback(st);
		return 1;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		cfl_store_fail(st, err);
		goto fail;
	}
	if (!(s = cfl_store_prep(st, "INSERT INTO ensembles (run, name, method, members, "
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
	if (cfl_store_step(st, s, err))
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
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

int cfl_store_trial_importance(struct cfl_store *st, int64_t trial_id,
			       const char *kind, size_t n,
			       const char *const *features, const double *values,
			       struct cfl_err *err)
{
	sqlite3_stmt *s;

	if (strcmp(kind, "impurity") && strcmp(kind, "permutation"))
		return cfl_err_set(err, "bad importance kind '%s'", kind);
	if (cfl_store_tx_begin(st, err))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!features[i] || !features[i][0]) {
			cfl_err_set(err, "importance of trial %lld: feature %zu has no name",
				    (long long)trial_id, i);
			goto fail;
		}
		s = cfl_store_prep(st, "INSERT OR REPLACE INTO trial_importance "
				   "(trial, kind, feature, value) VALUES (?, ?, ?, ?)", err);
		if (!s)
			goto fail;
		sqlite3_bind_int64(s, 1, trial_id);
		bind_text(s, 2, kind);
		bind_text(s, 3, features[i]);
		if (isfinite(values[i]))
			sqlite3_bind_double(s, 4, values[i]);
		else
			sqlite3_bind_null(s, 4);
		if (cfl_store_step(st, s, err))
			goto fail;
	}
	return cfl_store_tx_commit(st, err);
fail:
	cfl_store_tx_rollback(st);
	return -1;
}

int cfl_store_ensemble_credit(struct cfl_store *st, int64_t ens_id, double credit,
			       struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "INSERT OR REPLACE INTO ensemble_credit "
					 "(ensemble, credit) VALUES (?, ?)", err);

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, ens_id);
	sqlite3_bind_double(s, 2, credit);
	return cfl_store_step(st, s, err);
}

int cfl_store_trial_pruned(struct cfl_store *st, int64_t trial_id, long step,
			   double score, struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "INSERT OR REPLACE INTO trial_pruned "
					 "(trial, step, score) VALUES (?, ?, ?)", err);

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, trial_id);
	sqlite3_bind_int64(s, 2, step);
	if (isnan(score))
		sqlite3_bind_null(s, 3);
	else
		sqlite3_bind_double(s, 3, score);
	return cfl_store_step(st, s, err);
}

int cfl_store_trial_iters(struct cfl_store *st, int64_t trial_id, long n_iter,
			  struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "INSERT OR REPLACE INTO trial_iters "
					 "(trial, n_iter) VALUES (?, ?)", err);

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, trial_id);
	sqlite3_bind_int64(s, 2, n_iter);
	return cfl_store_step(st, s, err);
}
