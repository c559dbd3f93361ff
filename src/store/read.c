/*
 * Reading the store back: runs, candidates, trials, metrics, predictions
 * and ensembles, for the tables, reports, --resume and ensembles.  Lists
 * are read by cfl_store_read_rows with one row decoder each.
 */
#include "internal.h"
#include "cfl/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- store: runs ---- */

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
	sqlite3_stmt *s = cfl_store_prep(st, sql, err);
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
		ret = cfl_store_fail(st, err);
	sqlite3_reset(s);
	return ret;
}

/* "no run 'x' in 'db'", with the closest run name and the latest few. */
static void no_such_run(struct cfl_store *st, const char *name,
			struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT name FROM runs ORDER BY id DESC", err);
	char **names = NULL, list[400] = "";
	size_t n = 0, cap = 0, more = 0;
	const char *near;

	while (s && sqlite3_step(s) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(s, 0);

		if (n == cap) {
			char **w = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*w));

			if (!w)
				break;
			names = w;
		}
		if (!v || !(names[n] = strdup(v)))
			continue;
		n++;
	}
	if (s)
		sqlite3_reset(s);
	near = cfl_closest(name, (const char *const *)names, n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(list);

		if (i == 5 || len + strlen(names[i]) + 8 > sizeof(list)) {
			more = n - i;
			break;
		}
		snprintf(list + len, sizeof(list) - len, "%s'%s'", i ? ", " : "", names[i]);
	}
	if (!n)
		cfl_err_set(err, "no run '%s' in '%s': it holds no runs", name, st->path);
	else
		cfl_err_set(err, "no run '%s' in '%s'%s%s%s (the latest: %s%s; 'cfl runs' lists them)",
			    name, st->path, near ? "; did you mean '" : "",
			    near ? near : "", near ? "'?" : "", list,
			    more ? ", ..." : "");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int cfl_store_run_find(struct cfl_store *st, const char *name,
		       struct cfl_run_info *out, struct cfl_err *err)
{
	int rc = run_query(st, "SELECT " RUN_COLS " FROM runs WHERE name = ?",
			   name ? name : "", 0, out, err);

	if (rc == 1)
		no_such_run(st, name ? name : "", err);
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

struct cfl_store *cfl_store_open_run(const char *path, const char *name,
				     struct cfl_run_info *run, struct cfl_err *err)
{
	struct cfl_store *st = cfl_store_open(path, CFL_STORE_READONLY, err);

	if (st && (name ? cfl_store_run_find(st, name, run, err)
		   : cfl_store_run_latest(st, run, err))) {
		cfl_store_close(st);
		return NULL;
	}
	return st;
}

void cfl_run_summaries_free(struct cfl_run_summary *runs, size_t n_runs)
{
	for (size_t i = 0; runs && i < n_runs; i++)
		cfl_run_info_release(&runs[i].info);
	free(runs);
}

static int read_run_summary(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_run_summary *r = row;

	if (read_run(s, 0, &r->info, err))
		return -1;
	r->n_trials = (size_t)sqlite3_column_int64(s, 12);
	r->n_done = (size_t)sqlite3_column_int64(s, 13);
	r->n_failed = (size_t)sqlite3_column_int64(s, 14);
	r->n_cancelled = (size_t)sqlite3_column_int64(s, 15);
	r->n_pruned = (size_t)sqlite3_column_int64(s, 16);
	return 0;
}

int cfl_store_runs_list(struct cfl_store *st, struct cfl_run_summary **runs,
			size_t *n_runs, struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st,
		"SELECT " RUN_COLS ", (SELECT count(*) FROM trials t "
		"WHERE t.run = runs.id), (SELECT count(*) FROM trials t "
		"WHERE t.run = runs.id AND t.status = 'done'), "
		"(SELECT count(*) FROM trials t WHERE t.run = runs.id AND "
		"t.status IN ('failed', 'poison')), "
		"(SELECT count(*) FROM trials t WHERE t.run = runs.id AND "
		"t.status = 'cancelled'), "
		"(SELECT count(*) FROM trials t WHERE t.run = runs.id AND "
		"t.status = 'pruned') FROM runs "
		"ORDER BY created, id", err);
	struct cfl_store_rows rows = { NULL, 0, 0, sizeof(**runs) };

	*runs = NULL;
	*n_runs = 0;
	if (!s)
		return -1;
	if (cfl_store_read_rows(st, s, &rows, read_run_summary, err)) {
		cfl_run_summaries_free(rows.v, rows.n);
		return -1;
	}
	*runs = rows.v;
	*n_runs = rows.n;
	return 0;
}

/* ---- store: candidates ---- */

void cfl_candidates_free(struct cfl_candidate_info *cands, size_t n_cands)
{
	for (size_t i = 0; cands && i < n_cands; i++) {
		free(cands[i].params);
		cfl_params_release(&cands[i].kv);
	}
	free(cands);
}

static int read_candidate(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_candidate_info *c = row;
	struct cfl_buf b;

	c->id = sqlite3_column_int64(s, 0);
	c->seq = (size_t)sqlite3_column_int64(s, 1);
	col_copy(s, 2, c->model, sizeof(c->model));
	col_copy(s, 3, c->hex, sizeof(c->hex));
	c->has_score = sqlite3_column_type(s, 5) != SQLITE_NULL;
	c->score = col_double(s, 5, NAN);
	c->n_trials = (size_t)sqlite3_column_int64(s, 6);
	c->n_done = (size_t)sqlite3_column_int64(s, 7);
	c->n_failed = (size_t)sqlite3_column_int64(s, 8);
	c->n_pruned = (size_t)sqlite3_column_int64(s, 9);
	cfl_params_init(&c->kv);
	if (cfl_store_params_parse_json((const char *)sqlite3_column_text(s, 4),
					&c->kv, err))
		return cfl_err_prefix(err, "candidate %s", c->hex);
	cfl_params_sort(&c->kv);
	cfl_buf_init(&b);
	if (cfl_params_format(&c->kv, &b) || cfl_buf_puts(&b, "")) {
		cfl_buf_release(&b);
		return cfl_err_set(err, "out of memory");
	}
	c->params = b.data;
	return 0;
}

int cfl_store_candidates(struct cfl_store *st, int64_t run_id,
			 struct cfl_candidate_info **cands, size_t *n_cands,
			 struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st,
		"SELECT c.id, c.seq, c.model, c.hex, c.params, c.score, "
		"count(t.id), coalesce(sum(t.status = 'done'), 0), "
		"coalesce(sum(t.status IN ('failed', 'poison')), 0), "
		"coalesce(sum(t.status = 'pruned'), 0) "
		"FROM candidates c LEFT JOIN trials t ON t.candidate = c.id "
		"WHERE c.run = ? GROUP BY c.id ORDER BY c.seq, c.id", err);
	struct cfl_store_rows rows = { NULL, 0, 0, sizeof(**cands) };

	*cands = NULL;
	*n_cands = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	if (cfl_store_read_rows(st, s, &rows, read_candidate, err)) {
		cfl_candidates_free(rows.v, rows.n);
		return -1;
	}
	*cands = rows.v;
	*n_cands = rows.n;
	return 0;
}

/* ---- store: trials ---- */

int cfl_store_trial_counts(struct cfl_store *st, int64_t run_id,
			   struct cfl_trial_counts *out, struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT status, count(*) FROM trials "
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
		case CFL_TRIAL_CANCELLED: out->cancelled += n; break;
		case CFL_TRIAL_PRUNED: out->pruned += n; break;
		default: break;
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return cfl_store_fail(st, err);
	return 0;
}

void cfl_trials_free(struct cfl_trial_info *trials, size_t n_trials)
{
	for (size_t i = 0; trials && i < n_trials; i++)
		free(trials[i].error);
	free(trials);
}

static int read_trial(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_trial_info *t = row;
	int status;

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
	status = lookup(trial_phases, N_OF(trial_phases),
			(const char *)sqlite3_column_text(s, 13));
	t->phase = status < 0 ? CFL_PHASE_REPEAT : status;
	if (sqlite3_column_type(s, 12) != SQLITE_NULL &&
	    !(t->error = col_strdup(s, 12, err)))
		return -1;
	return 0;
}

int cfl_store_trials(struct cfl_store *st, int64_t run_id,
		     struct cfl_trial_info **trials, size_t *n_trials,
		     struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st,
		"SELECT t.id, t.candidate, t.repeat, t.fold, t.attempt, t.seed, "
		"t.status, t.worker, t.started, t.finished, t.duration, "
		"t.peak_rss_kb, t.error, t.phase FROM trials t JOIN candidates c ON "
		"c.id = t.candidate WHERE t.run = ? "
		"ORDER BY c.seq, t.repeat, t.fold", err);
	struct cfl_store_rows rows = { NULL, 0, 0, sizeof(**trials) };

	*trials = NULL;
	*n_trials = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	if (cfl_store_read_rows(st, s, &rows, read_trial, err)) {
		cfl_trials_free(rows.v, rows.n);
		return -1;
	}
	*trials = rows.v;
	*n_trials = rows.n;
	return 0;
}

/* ---- store: reading metrics and predictions ---- */

void cfl_attempts_free(struct cfl_attempt_info *attempts, size_t n)
{
	for (size_t i = 0; attempts && i < n; i++)
		free(attempts[i].reason);
	free(attempts);
}

static int read_attempt(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_attempt_info *a = row;

	a->trial_id = sqlite3_column_int64(s, 0);
	col_copy(s, 1, a->model, sizeof(a->model));
	col_copy(s, 2, a->hex, sizeof(a->hex));
	a->repeat = sqlite3_column_int(s, 3);
	a->fold = sqlite3_column_int(s, 4);
	a->attempt = sqlite3_column_int(s, 5);
	col_copy(s, 6, a->worker, sizeof(a->worker));
	a->started = col_double(s, 7, 0);
	a->finished = col_double(s, 8, 0);
	col_copy(s, 9, a->outcome, sizeof(a->outcome));
	return (a->reason = col_strdup(s, 10, err)) ? 0 : -1;
}

int cfl_store_attempts(struct cfl_store *st, int64_t run_id,
		       struct cfl_attempt_info **attempts, size_t *n,
		       struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st,
		"SELECT t.id, c.model, c.hex, t.repeat, t.fold, a.attempt, "
		"a.worker, a.started, a.finished, a.outcome, a.reason "
		"FROM trial_attempts a JOIN trials t ON t.id = a.trial "
		"JOIN candidates c ON c.id = t.candidate WHERE t.run = ? "
		"ORDER BY c.seq, t.repeat, t.fold, a.attempt, a.id", err);
	struct cfl_store_rows rows = { NULL, 0, 0, sizeof(**attempts) };

	*attempts = NULL;
	*n = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	if (cfl_store_read_rows(st, s, &rows, read_attempt, err)) {
		cfl_attempts_free(rows.v, rows.n);
		return -1;
	}
	*attempts = rows.v;
	*n = rows.n;
	return 0;
}

static int read_trial_metric(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_metric_row *r = row;

	(void)err;
	r->cand_id = sqlite3_column_int64(s, 0);
	r->trial_id = sqlite3_column_int64(s, 1);
	col_copy(s, 2, r->model, sizeof(r->model));
	col_copy(s, 3, r->hex, sizeof(r->hex));
	r->repeat = sqlite3_column_int(s, 4);
	r->fold = sqlite3_column_int(s, 5);
	col_copy(s, 6, r->metric, sizeof(r->metric));
	r->value = col_double(s, 7, NAN);
	return 0;
}

static int read_ensemble_metric(sqlite3_stmt *s, void *row,
				struct cfl_err *err)
{
	struct cfl_metric_row *r = row;

	(void)err;
	r->ensemble_id = sqlite3_column_int64(s, 0);
	col_copy(s, 1, r->model, sizeof(r->model));
	r->repeat = sqlite3_column_int(s, 2);
	r->fold = -1;
	col_copy(s, 3, r->metric, sizeof(r->metric));
	r->value = col_double(s, 4, NAN);
	return 0;
}

/* The metric names a stored row may have: cfl's metrics and a command's
 * "value", as an SQL list ('acc', 'auc', ..., 'value'). */
static const char *known_metrics(void)
{
	static char list[512];

	if (!list[0]) {
		size_t n = 0;

		for (int i = 0; i < CFL_M_COUNT; i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "'%s', ",
					      cfl_metric_info(i)->name);
		snprintf(list + n, sizeof(list) - n, "'value'");
	}
	return list;
}

int cfl_store_run_metrics(struct cfl_store *st, int64_t run_id,
			  enum cfl_store_split split, struct cfl_metric_row **rows,
			  size_t *n_rows, struct cfl_err *err)
{
	/* a trial with a metric cfl does not know (a row a forged result or
	 * an older cfl stored) is left out with all its metrics, as if it had
	 * not run: no table, ensemble or bundle is built on it */
	static char trial_sql[1024];
	static const char ensemble_sql[] =
		"SELECT e.id, e.name, e.repeat, m.metric, m.value FROM "
		"ensemble_metrics m JOIN ensembles e ON e.id = m.ensemble "
		"WHERE e.run = ? AND m.split = ? AND m.metric IN (%s) "
		"ORDER BY e.id, m.rowid";
	static char ens_sql[1024];
	const struct {
		const char *sql;
		int (*read_row)(sqlite3_stmt *s, void *row, struct cfl_err *err);
	} q[2] = {
		{ trial_sql, read_trial_metric },
		{ ens_sql, read_ensemble_metric },
	};
	struct cfl_store_rows all = { NULL, 0, 0, sizeof(**rows) };

	if (!trial_sql[0]) {
		snprintf(trial_sql, sizeof(trial_sql),
			 "SELECT t.candidate, t.id, c.model, c.hex, t.repeat, t.fold, "
			 "m.metric, m.value FROM metrics m JOIN trials t ON t.id = m.trial "
			 "JOIN candidates c ON c.id = t.candidate WHERE t.run = ? AND "
			 "m.split = ? AND t.status = 'done' AND NOT EXISTS (SELECT 1 "
			 "FROM metrics b WHERE b.trial = t.id AND b.metric NOT IN (%s)) "
			 "ORDER BY c.seq, t.repeat, t.fold, m.rowid", known_metrics());
		snprintf(ens_sql, sizeof(ens_sql), ensemble_sql, known_metrics());
	}

	*rows = NULL;
	*n_rows = 0;
	/* trials' rows first, then the ensembles', in one array */
	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *s = cfl_store_prep(st, q[i].sql, err);

		if (!s)
			goto fail;
		sqlite3_bind_int64(s, 1, run_id);
		bind_text(s, 2, cfl_store_split_name(split));
		if (cfl_store_read_rows(st, s, &all, q[i].read_row, err))
			goto fail;
	}
	*rows = all.v;
	*n_rows = all.n;
	return 0;
fail:
	free(all.v);
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

static int read_pred(struct cfl_store *st, const char *sql, int64_t id,
		     enum cfl_store_split split, struct cfl_pred *out,
		     struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, sql, err);
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
		cfl_store_fail(st, err);
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
		/* not predictions (a damaged row): as if none were kept */
		sqlite3_reset(s);
		return 1;
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
			 "WHERE trial = ? AND split = ?", trial_id,
			 split, out, err);
}

/* ---- store: ensembles ---- */

int cfl_store_ensemble_predictions(struct cfl_store *st, int64_t ens_id,
				   enum cfl_store_split split, struct cfl_pred *out,
				   struct cfl_err *err)
{
	return read_pred(st, "SELECT n, n_out, data, rows FROM "
			 "ensemble_predictions WHERE ensemble = ? AND split = ?",
			 ens_id, split, out, err);
}

void cfl_ensemble_rows_free(struct cfl_ensemble_row *ens, size_t n_ens)
{
	for (size_t i = 0; ens && i < n_ens; i++)
		free(ens[i].members);
	free(ens);
}

static int read_ensemble(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_ensemble_row *e = row;

	e->id = sqlite3_column_int64(s, 0);
	col_copy(s, 1, e->name, sizeof(e->name));
	col_copy(s, 2, e->method, sizeof(e->method));
	e->repeat = sqlite3_column_int(s, 3);
	return (e->members = col_strdup(s, 4, err)) ? 0 : -1;
}

int cfl_store_ensembles(struct cfl_store *st, int64_t run_id,
			struct cfl_ensemble_row **ens, size_t *n_ens,
			struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT id, name, method, repeat, "
					 "members FROM ensembles WHERE run = ? "
					 "ORDER BY id", err);
	struct cfl_store_rows rows = { NULL, 0, 0, sizeof(**ens) };

	*ens = NULL;
	*n_ens = 0;
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	if (cfl_store_read_rows(st, s, &rows, read_ensemble, err)) {
		cfl_ensemble_rows_free(rows.v, rows.n);
		return -1;
	}
	*ens = rows.v;
	*n_ens = rows.n;
	return 0;
}

/* ---- store: trial models ---- */

int cfl_store_trial_model(struct cfl_store *st, int64_t trial_id, char **text,
			  struct cfl_err *err)
{
	sqlite3_stmt *s;
	int rc;

	*text = NULL;
	/* a read-only open of a file from before the table: no model */
	if (!(s = cfl_store_prep(st, "SELECT count(*) FROM sqlite_master WHERE "
				 "type = 'table' AND name = 'trial_models'", err)))
		return -1;
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(s);
		return cfl_store_fail(st, err);
	}
	rc = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	if (!rc)
		return 1;
	if (!(s = cfl_store_prep(st, "SELECT text FROM trial_models WHERE trial = ?",
				 err)))
		return -1;
	sqlite3_bind_int64(s, 1, trial_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		return 1;
	}
	if (rc != SQLITE_ROW) {
		sqlite3_reset(s);
		return cfl_store_fail(st, err);
	}
	*text = col_strdup(s, 0, err);
	sqlite3_reset(s);
	return *text ? 0 : -1;
}

/* 1 when the database has table name, 0 when not (a file made before a
 * cfl that writes it), -1 with err. */
static int has_table(struct cfl_store *st, const char *name, struct cfl_err *err)
{
	sqlite3_stmt *s = cfl_store_prep(st, "SELECT count(*) FROM sqlite_master "
					 "WHERE type = 'table' AND name = ?", err);
	int have;

	if (!s)
		return -1;
	bind_text(s, 1, name);
	if (sqlite3_step(s) != SQLITE_ROW) {
		cfl_store_fail(st, err);
		sqlite3_reset(s);
		return -1;
	}
	have = sqlite3_column_int(s, 0) > 0;
	sqlite3_reset(s);
	return have;
}

/* The rows of run run_id in side table `table` that sql (one parameter:
 * the run's id) selects, each read by read_row into a malloc'd array of
 * size-byte rows (*rows, *n; NULL and 0 for a database no cfl that
 * stores the table has written to yet).  0, or -1 with err. */
static int run_side_rows(struct cfl_store *st, int64_t run_id, const char *table,
			 const char *sql, size_t size,
			 int (*read_row)(sqlite3_stmt *, void *, struct cfl_err *),
			 void **rows, size_t *n, struct cfl_err *err)
{
	struct cfl_store_rows all = { NULL, 0, 0, size };
	sqlite3_stmt *s;
	int have;

	*rows = NULL;
	*n = 0;
	if ((have = has_table(st, table, err)) <= 0)
		return have;
	if (!(s = cfl_store_prep(st, sql, err)))
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	if (cfl_store_read_rows(st, s, &all, read_row, err)) {
		free(all.v);
		return -1;
	}
	*rows = all.v;
	*n = all.n;
	return 0;
}

static int read_importance(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_importance_row *r = row;

	(void)err;
	r->cand_id = sqlite3_column_int64(s, 0);
	col_copy(s, 1, r->model, sizeof(r->model));
	col_copy(s, 2, r->hex, sizeof(r->hex));
	col_copy(s, 3, r->kind, sizeof(r->kind));
	col_copy(s, 4, r->feature, sizeof(r->feature));
	r->mean = col_double(s, 5, NAN);
	r->n_trials = (size_t)sqlite3_column_int64(s, 6);
	return 0;
}

int cfl_store_run_importance(struct cfl_store *st, int64_t run_id,
			     struct cfl_importance_row **rows, size_t *n_rows,
			     struct cfl_err *err)
{
	void *v;
	int rc = run_side_rows(st, run_id, "trial_importance",
			       "SELECT c.id, c.model, c.hex, i.kind, i.feature, avg(i.value), "
			       "count(i.value) FROM trial_importance i JOIN trials t ON t.id = i.trial "
			       "JOIN candidates c ON c.id = t.candidate WHERE t.run = ? AND "
			       "t.status = 'done' GROUP BY c.id, i.kind, i.feature "
			       "ORDER BY c.seq, i.kind, avg(i.value) DESC, i.feature",
			       sizeof(**rows), read_importance, &v, n_rows, err);

	*rows = v;
	return rc;
}

static int read_credit(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_credit_row *r = row;

	(void)err;
	r->ensemble_id = sqlite3_column_int64(s, 0);
	r->credit = sqlite3_column_double(s, 1);
	return 0;
}

int cfl_store_run_credits(struct cfl_store *st, int64_t run_id,
			  struct cfl_credit_row **rows, size_t *n,
			  struct cfl_err *err)
{
	void *v;
	int rc = run_side_rows(st, run_id, "ensemble_credit",
			       "SELECT c.ensemble, c.credit FROM ensemble_credit c "
			       "JOIN ensembles e ON e.id = c.ensemble WHERE e.run = ? "
			       "ORDER BY c.ensemble",
			       sizeof(**rows), read_credit, &v, n, err);

	*rows = v;
	return rc;
}

static int read_iters(sqlite3_stmt *s, void *row, struct cfl_err *err)
{
	struct cfl_iters_row *r = row;

	(void)err;
	r->trial_id = sqlite3_column_int64(s, 0);
	r->n_iter = (long)sqlite3_column_int64(s, 1);
	return 0;
}

int cfl_store_run_iters(struct cfl_store *st, int64_t run_id,
			struct cfl_iters_row **rows, size_t *n, struct cfl_err *err)
{
	void *v;
	int rc = run_side_rows(st, run_id, "trial_iters",
			       "SELECT i.trial, i.n_iter FROM trial_iters i JOIN trials t "
			       "ON t.id = i.trial WHERE t.run = ? AND t.status = 'done' "
			       "ORDER BY i.trial",
			       sizeof(**rows), read_iters, &v, n, err);

	*rows = v;
	return rc;
}
