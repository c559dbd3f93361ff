/*
 * A run's trials for notebooks and Optuna (`cfl export`): the trial-level
 * table (one row per trial, parameters as params_NAME columns, metrics as
 * SPLIT_METRIC columns, as Optuna's trials_dataframe() lays them out) in
 * CSV or JSON, and a tune run as an Optuna study (its candidates as
 * Optuna's trials, with distributions from the run's stored search space;
 * src/store writes Optuna's tables).  Everything comes from the store;
 * nothing here prints.
 */
#include "cfl/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfl/hpo.h"
#include "cfl/metrics.h"
#include "cfl/store.h"
#include "internal.h"

/* ---- export: values ---- */

/* The shortest "%.Ng" that reads back exactly (0.2, not
 * 0.20000000000000001). */
static int put_double(struct cfl_buf *b, double v)
{
	char s[40];

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*g", prec, v);
		if (strtod(s, NULL) == v)
			break;
	}
	return cfl_buf_puts(b, s);
}

/* A whole JSON number literal (as the store writes numbers in params). */
static int is_json_number(const char *s)
{
	size_t n = cfl_json_number_len(s);

	return n && !s[n];
}

int cfl_report_json_string(struct cfl_buf *b, const char *s)
{
	int rc = cfl_buf_puts(b, "\"");

	for (; !rc && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			rc = cfl_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			rc = cfl_buf_printf(b, "\\u%04x", c);
		else
			rc = cfl_buf_printf(b, "%c", c);
	}
	return rc || cfl_buf_puts(b, "\"");
}

/* A parameter's value: a number when it reads as one, else a string. */
static int json_value(struct cfl_buf *b, const char *s)
{
	return is_json_number(s) ? cfl_buf_puts(b, s) : cfl_report_json_string(b, s);
}

static int json_double(struct cfl_buf *b, double v)
{
	return isfinite(v) ? put_double(b, v) : cfl_buf_puts(b, "null");
}

/* RFC 4180: quoted when it holds a comma, a quote or a line break. */
int cfl_report_csv_field(struct cfl_buf *b, const char *s)
{
	int rc = 0;

	if (!strpbrk(s, ",\"\r\n"))
		return cfl_buf_puts(b, s);
	rc |= cfl_buf_puts(b, "\"");
	for (; !rc && *s; s++)
		rc |= *s == '"' ? cfl_buf_puts(b, "\"\"") : cfl_buf_printf(b, "%c", *s);
	return rc || cfl_buf_puts(b, "\"");
}

/* ISO 8601 in UTC, "YYYY-MM-DDTHH:MM:SS.ffffff+00:00" (pandas' parse_dates
 * and datetime.fromisoformat read it); "" for 0. */
static void time_text(double t, char *out, size_t cap)
{
	time_t sec;
	struct tm tm;
	long us;
	size_t n;

	out[0] = 0;
	if (!(t > 0))
		return;
	sec = (time_t)floor(t);
	us = (long)llround((t - (double)sec) * 1e6);
	if (us >= 1000000) {
		sec++;
		us -= 1000000;
	}
	gmtime_r(&sec, &tm);
	n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, cap - n, ".%06ld+00:00", us);
}

/* ---- export: the trial table ---- */

struct col {
	int split;		/* enum cfl_store_split */
	char metric[32];
};

struct trial_table {
	struct cfl_candidate_info *cands;
	size_t n_cands;
	struct cfl_trial_info *trials;
	size_t n_trials;
	size_t *cand_of;	/* (n_trials) index into cands */
	char **keys;		/* (n_keys) every parameter name, sorted */
	size_t n_keys;
	struct col *cols;	/* (n_cols) metric columns */
	size_t n_cols;
	double *val;		/* (n_trials, n_cols), NaN when none */
	char metric[32];	/* the run's metric (tune, auto) or the first
				 * stored (repeat): the "value" column's */
};

static void table_release(struct trial_table *t)
{
	cfl_candidates_free(t->cands, t->n_cands);
	cfl_trials_free(t->trials, t->n_trials);
	free(t->cand_of);
	for (size_t i = 0; i < t->n_keys; i++)
		free(t->keys[i]);
	free(t->keys);
	free(t->cols);
	free(t->val);
	memset(t, 0, sizeof(*t));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_key(struct trial_table *t, const char *k, struct cfl_err *err)
{
	char **v;

	for (size_t i = 0; i < t->n_keys; i++)
		if (!strcmp(t->keys[i], k))
			return 0;
	v = cfl_realloc(t->keys, (t->n_keys + 1) * sizeof(*v), err);
	if (!v)
		return -1;
	t->keys = v;
	if (!(t->keys[t->n_keys] = cfl_strdup(k, err)))
		return -1;
	t->n_keys++;
	return 0;
}

/* The index of trial id (trials are few: a linear look is enough, but the
 * metrics come in the trials' order, so start from the last hit). */
static long trial_index(const struct trial_table *t, int64_t id, size_t *hint)
{
	for (size_t k = 0; k < t->n_trials; k++) {
		size_t i = (*hint + k) % t->n_trials;

		if (t->trials[i].id == id) {
			*hint = i;
			return (long)i;
		}
	}
	return -1;
}

static int table_load(struct trial_table *t, struct cfl_store *st,
		      int64_t run_id, struct cfl_err *err)
{
	memset(t, 0, sizeof(*t));
	if (cfl_store_candidates(st, run_id, &t->cands, &t->n_cands, err) ||
	    cfl_store_trials(st, run_id, &t->trials, &t->n_trials, err))
		return -1;
	if (t->n_trials &&
	    !(t->cand_of = cfl_calloc(t->n_trials, sizeof(size_t), err)))
		return -1;
	for (size_t i = 0; i < t->n_trials; i++)
		for (size_t c = 0; c < t->n_cands; c++)
			if (t->cands[c].id == t->trials[i].cand_id)
				t->cand_of[i] = c;
	for (size_t c = 0; c < t->n_cands; c++)
		for (size_t k = 0; k < t->cands[c].kv.n; k++)
			if (add_key(t, t->cands[c].kv.kv[k].key, err))
				return -1;
	if (t->n_keys)
		qsort(t->keys, t->n_keys, sizeof(*t->keys), cmp_str);
	/* metric columns: valid, test, oof, each metric in first-seen order */
	for (int sp = 0; sp < CFL_SPLIT_COUNT; sp++) {
		struct cfl_metric_row *rows;
		size_t n, hint = 0;

		if (cfl_store_run_metrics(st, run_id, sp, &rows, &n, err))
			return -1;
		for (size_t r = 0; r < n; r++) {
			size_t c;
			long ti;

			if (!rows[r].trial_id)
				continue;	/* an ensemble's */
			for (c = 0; c < t->n_cols; c++)
				if (t->cols[c].split == sp &&
				    !strcmp(t->cols[c].metric, rows[r].metric))
					break;
			if (c == t->n_cols) {
				struct col *v = cfl_realloc(t->cols,
					(t->n_cols + 1) * sizeof(*v), err);
				double *w = v ? cfl_realloc(t->val,
					t->n_trials * (t->n_cols + 1) * sizeof(*w) + 1,
					err) : NULL;

				if (v)
					t->cols = v;
				if (!w) {
					free(rows);
					return -1;
				}
				/* widen the rows: move each into its new place */
				for (size_t i = t->n_trials; i-- > 0;) {
					memmove(&w[i * (t->n_cols + 1)],
						&w[i * t->n_cols],
						t->n_cols * sizeof(*w));
					w[i * (t->n_cols + 1) + t->n_cols] = NAN;
				}
				t->val = w;
				t->cols[c].split = sp;
				snprintf(t->cols[c].metric, sizeof(t->cols[c].metric),
					 "%s", rows[r].metric);
				t->n_cols++;
			}
			ti = trial_index(t, rows[r].trial_id, &hint);
			if (ti >= 0)
				t->val[(size_t)ti * t->n_cols + c] = rows[r].value;
		}
		free(rows);
	}
	return 0;
}

/* Optuna's TrialState of a trial: a failure (cancelled too) FAIL, an
 * interrupted trial WAITING (a resume runs it again). */
static const char *optuna_state(const struct cfl_trial_info *tr)
{
	switch (tr->status) {
	case CFL_TRIAL_DONE: return "COMPLETE";
	case CFL_TRIAL_RUNNING: return "RUNNING";
	case CFL_TRIAL_FAILED:
	case CFL_TRIAL_POISON: return "FAIL";
	default:
		return !strcmp(cfl_trial_status_name(tr->status), "pruned")
			? "PRUNED" : "WAITING";
	}
}

/* The trial table's column names, in order. */
static const char *const fixed_cols[] = {
	"number", "trial", "run", "model", "candidate", "phase", "repeat", "fold",
	"seed", "status", "attempt", "worker", "datetime_start",
	"datetime_complete", "duration", "peak_rss_kb", "value", "state",
};
#define N_FIXED (sizeof(fixed_cols) / sizeof(fixed_cols[0]))

/* The text of fixed column k of trial i ("" when unset). */
static void fixed_text(const struct trial_table *t, const char *run, size_t i,
		       size_t k, char *out, size_t cap)
{
	const struct cfl_trial_info *tr = &t->trials[i];
	const struct cfl_candidate_info *c = &t->cands[t->cand_of[i]];

	out[0] = 0;
	switch (k) {
	case 0: snprintf(out, cap, "%zu", i); break;
	case 1: snprintf(out, cap, "%lld", (long long)tr->id); break;
	case 2: snprintf(out, cap, "%s", run); break;
	case 3: snprintf(out, cap, "%s", c->model); break;
	case 4: snprintf(out, cap, "%s", c->hex); break;
	case 5: snprintf(out, cap, "%s", cfl_trial_phase_name(tr->phase)); break;
	case 6: snprintf(out, cap, "%d", tr->repeat); break;
	case 7: snprintf(out, cap, "%d", tr->fold); break;
	case 8: snprintf(out, cap, "%llu", (unsigned long long)tr->seed); break;
	case 9: snprintf(out, cap, "%s", cfl_trial_status_name(tr->status)); break;
	case 10: snprintf(out, cap, "%d", tr->attempt); break;
	case 11: snprintf(out, cap, "%s", tr->worker); break;
	case 12: time_text(tr->started, out, cap); break;
	case 13: time_text(tr->status == CFL_TRIAL_DONE ||
			   tr->status == CFL_TRIAL_FAILED ||
			   tr->status == CFL_TRIAL_POISON ? tr->finished : 0,
			   out, cap); break;
	case 14: break;	/* duration: a double, written by the caller */
	case 15: if (tr->peak_rss_kb > 0)
			snprintf(out, cap, "%ld", tr->peak_rss_kb);
		break;
	case 16: break;	/* value: a double, written by the caller */
	case 17: snprintf(out, cap, "%s", optuna_state(tr)); break;
	}
}

/* Column "value": the run's metric (its first) on the part that scores
 * the trial: valid for a search, oof for a fold of auto's bags, test
 * otherwise (a repeat, a refit); a split it lacks falls back to valid then
 * test.  NaN when the trial has none. */
static double trial_value(const struct trial_table *t, size_t i)
{
	const struct cfl_trial_info *tr = &t->trials[i];
	int want = tr->phase == CFL_PHASE_SEARCH ? CFL_SPLIT_VALID
		 : tr->fold >= 0 && tr->phase != CFL_PHASE_REPEAT ? CFL_SPLIT_OOF
		 : CFL_SPLIT_TEST;
	const int order[3] = { want, CFL_SPLIT_VALID, CFL_SPLIT_TEST };

	if (!t->metric[0])
		return NAN;
	for (int k = 0; k < 3; k++)
		for (size_t m = 0; m < t->n_cols; m++)
			if (t->cols[m].split == order[k] &&
			    !strcmp(t->cols[m].metric, t->metric) &&
			    isfinite(t->val[i * t->n_cols + m]))
				return t->val[i * t->n_cols + m];
	return NAN;
}

/* Columns 0..1, 6..8, 10, 15 are numbers in JSON. */
static int fixed_is_number(size_t k)
{
	return k <= 1 || (k >= 6 && k <= 8) || k == 10 || k == 15;
}

static int write_csv(const struct trial_table *t, const char *run,
		     struct cfl_buf *b)
{
	char s[128];
	int rc = 0;

	for (size_t k = 0; k < N_FIXED; k++)
		rc |= cfl_buf_printf(b, "%s%s", k ? "," : "", fixed_cols[k]);
	for (size_t k = 0; k < t->n_keys; k++) {
		snprintf(s, sizeof(s), "params_%s", t->keys[k]);
		rc |= cfl_buf_puts(b, ",") || cfl_report_csv_field(b, s);
	}
	for (size_t c = 0; c < t->n_cols; c++)
		rc |= cfl_buf_printf(b, ",%s_%s", cfl_store_split_name(t->cols[c].split),
				     t->cols[c].metric);
	rc |= cfl_buf_puts(b, ",error\n");
	for (size_t i = 0; !rc && i < t->n_trials; i++) {
		const struct cfl_candidate_info *c = &t->cands[t->cand_of[i]];

		for (size_t k = 0; k < N_FIXED; k++) {
			rc |= k ? cfl_buf_puts(b, ",") : 0;
			if (k == 14 || k == 16) {
				double v = k == 14 ? t->trials[i].duration
						   : trial_value(t, i);

				if (isfinite(v))
					rc |= put_double(b, v);
				continue;
			}
			fixed_text(t, run, i, k, s, sizeof(s));
			rc |= cfl_report_csv_field(b, s);
		}
		for (size_t k = 0; k < t->n_keys; k++) {
			const char *v = cfl_params_get(&c->kv, t->keys[k]);

			rc |= cfl_buf_puts(b, ",") || cfl_report_csv_field(b, v ? v : "");
		}
		for (size_t m = 0; m < t->n_cols; m++) {
			double v = t->val[i * t->n_cols + m];

			rc |= cfl_buf_puts(b, ",") || (isfinite(v) ? put_double(b, v) : 0);
		}
		rc |= cfl_buf_puts(b, ",") ||
		      cfl_report_csv_field(b, t->trials[i].error ? t->trials[i].error : "") ||
		      cfl_buf_puts(b, "\n");
	}
	return rc;
}

static int write_json(const struct trial_table *t, const char *run,
		      struct cfl_buf *b)
{
	char s[128];
	int rc = cfl_buf_puts(b, "[");

	for (size_t i = 0; !rc && i < t->n_trials; i++) {
		const struct cfl_candidate_info *c = &t->cands[t->cand_of[i]];

		rc |= cfl_buf_puts(b, i ? ",\n {" : "\n {");
		for (size_t k = 0; k < N_FIXED; k++) {
			rc |= cfl_buf_printf(b, "%s\"%s\": ", k ? ", " : "", fixed_cols[k]);
			if (k == 14 || k == 16) {
				rc |= json_double(b, k == 14 ? t->trials[i].duration
							     : trial_value(t, i));
				continue;
			}
			fixed_text(t, run, i, k, s, sizeof(s));
			if (!s[0] && (k == 15 || k == 12 || k == 13 || k == 11))
				rc |= cfl_buf_puts(b, "null");
			else if (fixed_is_number(k))
				rc |= cfl_buf_puts(b, s);
			else
				rc |= cfl_report_json_string(b, s);
		}
		for (size_t k = 0; k < t->n_keys; k++) {
			const char *v = cfl_params_get(&c->kv, t->keys[k]);

			snprintf(s, sizeof(s), "params_%s", t->keys[k]);
			rc |= cfl_buf_puts(b, ", ") || cfl_report_json_string(b, s) ||
			      cfl_buf_puts(b, ": ");
			rc |= v ? json_value(b, v) : cfl_buf_puts(b, "null");
		}
		for (size_t m = 0; m < t->n_cols; m++)
			rc |= cfl_buf_printf(b, ", \"%s_%s\": ",
					     cfl_store_split_name(t->cols[m].split),
					     t->cols[m].metric) ||
			      json_double(b, t->val[i * t->n_cols + m]);
		rc |= cfl_buf_puts(b, ", \"error\": ") ||
		      (t->trials[i].error ? cfl_report_json_string(b, t->trials[i].error)
					  : cfl_buf_puts(b, "null")) ||
		      cfl_buf_puts(b, "}");
	}
	return rc || cfl_buf_puts(b, "\n]\n");
}

int cfl_export_format_lookup(const char *name)
{
	if (!name)
		return -1;
	if (!strcmp(name, "csv"))
		return CFL_EXPORT_CSV;
	if (!strcmp(name, "json"))
		return CFL_EXPORT_JSON;
	if (!strcmp(name, "optuna"))
		return CFL_EXPORT_OPTUNA;
	return -1;
}

int cfl_export_trials(struct cfl_store *st, const struct cfl_run_info *run,
		      enum cfl_export_format fmt, struct cfl_buf *out,
		      struct cfl_err *err)
{
	struct trial_table t;
	int rc;

	if (fmt != CFL_EXPORT_CSV && fmt != CFL_EXPORT_JSON)
		return cfl_err_set(err, "the trial table is csv or json");
	if (table_load(&t, st, run->id, err)) {
		table_release(&t);
		return -1;
	}
	cfl_report_config_get(run->config, "metric", t.metric, sizeof(t.metric));
	if (!t.metric[0] && t.n_cols)	/* a repeat: its first metric */
		snprintf(t.metric, sizeof(t.metric), "%s", t.cols[0].metric);
	rc = fmt == CFL_EXPORT_CSV ? write_csv(&t, run->name, out)
				   : write_json(&t, run->name, out);
	table_release(&t);
	return rc ? cfl_err_set(err, "out of memory") : 0;
}

/* ---- export: a tune run as an Optuna study ---- */

/* The value of "key=" in a stored config, malloc'd ("" when absent). */
static char *config_dup(const char *config, const char *key,
			struct cfl_err *err)
{
	size_t kl = strlen(key);

	for (const char *p = config; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			char *v = cfl_malloc(n - kl, err);

			if (v) {
				memcpy(v, p + kl + 1, n - kl - 1);
				v[n - kl - 1] = 0;
			}
			return v;
		}
		p = nl ? nl + 1 : p + n;
	}
	return cfl_strdup("", err);
}

/* One parameter of the study: its Optuna distribution and how a
 * candidate's text becomes Optuna's internal value. */
struct oparam {
	const char *name;
	int categorical;
	size_t n_choices;
	const char **choices;	/* (n_choices) text of each choice */
	struct cfl_buf dist;	/* the distribution's JSON */
};

/* Distinct values of key over the candidates, in first-seen order. */
static int observed_choices(const struct trial_table *t, const char *key,
			    struct oparam *op, struct cfl_err *err)
{
	for (size_t c = 0; c < t->n_cands; c++) {
		const char *v = cfl_params_get(&t->cands[c].kv, key);
		size_t k;
		const char **w;

		if (!v)
			continue;
		for (k = 0; k < op->n_choices; k++)
			if (!strcmp(op->choices[k], v))
				break;
		if (k < op->n_choices)
			continue;
		w = cfl_realloc(op->choices, (op->n_choices + 1) * sizeof(*w), err);
		if (!w)
			return -1;
		op->choices = w;
		op->choices[op->n_choices++] = v;
	}
	return 0;
}

/* The distribution of parameter key from the space's entry sp (NULL when
 * the space lacks it: categorical over the values seen).  A range is
 * widened to the values the candidates hold (their text is rounded), so
 * Optuna finds each value inside its distribution. */
static int make_param(const struct trial_table *t, const char *key,
		      const struct cfl_space_param *sp, struct oparam *op,
		      struct cfl_err *err)
{
	struct cfl_buf *b = &op->dist;
	int rc = 0;

	op->name = key;
	if (!sp || sp->dist == CFL_DIST_FIXED || sp->dist == CFL_DIST_CHOICE) {
		op->categorical = 1;
		if (sp && sp->dist == CFL_DIST_CHOICE) {
			op->choices = cfl_calloc(sp->n_choices + 1, sizeof(char *), err);
			if (!op->choices)
				return -1;
			for (size_t k = 0; k < sp->n_choices; k++)
				op->choices[k] = sp->choices[k];
			op->n_choices = sp->n_choices;
		}
		/* a fixed value, or one a choice does not list */
		if (observed_choices(t, key, op, err))
			return -1;
		rc |= cfl_buf_puts(b, "{\"name\": \"CategoricalDistribution\", "
				   "\"attributes\": {\"choices\": [");
		for (size_t k = 0; k < op->n_choices; k++)
			rc |= (k && cfl_buf_puts(b, ", ")) ||
			      json_value(b, op->choices[k]);
		rc |= cfl_buf_puts(b, "]}}");
	} else {
		double lo = sp->lo, hi = sp->hi;
		int log = sp->dist == CFL_DIST_LOGUNIFORM;

		for (size_t c = 0; c < t->n_cands; c++) {
			const char *v = cfl_params_get(&t->cands[c].kv, key);
			double x = v ? strtod(v, NULL) : NAN;

			if (isfinite(x) && x < lo && (!log || x > 0))
				lo = x;
			if (isfinite(x) && x > hi)
				hi = x;
		}
		if (sp->integer || sp->dist == CFL_DIST_INT)
			rc |= cfl_buf_printf(b, "{\"name\": \"IntDistribution\", "
					     "\"attributes\": {\"log\": %s, \"step\": 1, "
					     "\"low\": %.0f, \"high\": %.0f}}",
					     log ? "true" : "false", ceil(lo), floor(hi));
		else
			rc |= cfl_buf_puts(b, "{\"name\": \"FloatDistribution\", "
					   "\"attributes\": {\"step\": null, \"low\": ") ||
			      put_double(b, lo) || cfl_buf_puts(b, ", \"high\": ") ||
			      put_double(b, hi) ||
			      cfl_buf_printf(b, ", \"log\": %s}}", log ? "true" : "false");
	}
	return rc ? cfl_err_set(err, "out of memory") : 0;
}

/* Optuna's internal value of text v for op: the choice's index, or the
 * number.  -1 when a categorical value is not among the choices. */
static int param_value(const struct oparam *op, const char *v, double *out)
{
	if (!op->categorical) {
		*out = strtod(v, NULL);
		return 0;
	}
	for (size_t k = 0; k < op->n_choices; k++)
		if (!strcmp(op->choices[k], v)) {
			*out = (double)k;
			return 0;
		}
	return -1;
}

/* Appends ,"KEY": mean and ,"KEY_values": [...] of values (NaN left out)
 * as two attributes into attrs (texts in pool). */
struct attrs {
	struct cfl_optuna_attr *a;
	size_t n, cap;
	char **pool;		/* every string made here, freed with attrs */
	size_t n_pool, cap_pool;
};

static char *pool_keep(struct attrs *as, struct cfl_buf *b, struct cfl_err *err)
{
	char *s;

	if (as->n_pool == as->cap_pool) {
		size_t cap = as->cap_pool ? 2 * as->cap_pool : 32;
		char **v = cfl_realloc(as->pool, cap * sizeof(*v), err);

		if (!v)
			return NULL;
		as->pool = v;
		as->cap_pool = cap;
	}
	s = cfl_strdup(b->data ? b->data : "", err);
	if (s)
		as->pool[as->n_pool++] = s;
	b->len = 0;
	if (b->data)
		b->data[0] = 0;
	return s;
}

/* Adds key = json (the text of b, then emptied). */
static int attr_add(struct attrs *as, const char *key, struct cfl_buf *b,
		    struct cfl_err *err)
{
	struct cfl_buf kb;
	char *k, *v;

	if (as->n == as->cap) {
		size_t cap = as->cap ? 2 * as->cap : 16;
		struct cfl_optuna_attr *w = cfl_realloc(as->a, cap * sizeof(*w), err);

		if (!w)
			return -1;
		as->a = w;
		as->cap = cap;
	}
	cfl_buf_init(&kb);
	if (cfl_buf_puts(&kb, key)) {
		cfl_buf_release(&kb);
		return cfl_err_set(err, "out of memory");
	}
	k = pool_keep(as, &kb, err);
	cfl_buf_release(&kb);
	if (!k || !(v = pool_keep(as, b, err)))
		return -1;
	as->a[as->n].key = k;
	as->a[as->n].value_json = v;
	as->n++;
	return 0;
}

static void attrs_release(struct attrs *as)
{
	for (size_t i = 0; i < as->n_pool; i++)
		free(as->pool[i]);
	free(as->pool);
	free(as->a);
	memset(as, 0, sizeof(*as));
}

static int attr_str(struct attrs *as, const char *key, const char *v,
		    struct cfl_buf *b, struct cfl_err *err)
{
	if (cfl_report_json_string(b, v ? v : ""))
		return cfl_err_set(err, "out of memory");
	return attr_add(as, key, b, err);
}

/* The user attributes of candidate c's trials in phase ph, keys prefixed
 * by pre: seeds, and per split and metric the mean and the values. */
static int trial_attrs(const struct trial_table *t, size_t c,
		       enum cfl_trial_phase ph, const char *pre,
		       struct attrs *as, struct cfl_buf *b, struct cfl_err *err)
{
	char key[96];
	size_t n = 0;

	for (size_t i = 0; i < t->n_trials; i++)
		n += t->cand_of[i] == c && t->trials[i].phase == ph;
	if (!n)
		return 0;
	if (cfl_buf_puts(b, "["))
		return cfl_err_set(err, "out of memory");
	for (size_t i = 0, k = 0; i < t->n_trials; i++)
		if (t->cand_of[i] == c && t->trials[i].phase == ph &&
		    cfl_buf_printf(b, "%s%llu", k++ ? ", " : "",
				   (unsigned long long)t->trials[i].seed))
			return cfl_err_set(err, "out of memory");
	snprintf(key, sizeof(key), "%sseeds", pre);
	if (cfl_buf_puts(b, "]") || attr_add(as, key, b, err))
		return -1;
	for (size_t m = 0; m < t->n_cols; m++) {
		double sum = 0;
		size_t k = 0;
		int rc = cfl_buf_puts(b, "[");

		for (size_t i = 0; i < t->n_trials; i++) {
			double v = t->val[i * t->n_cols + m];

			if (t->cand_of[i] != c || t->trials[i].phase != ph ||
			    !isfinite(v))
				continue;
			rc |= (k++ && cfl_buf_puts(b, ", ")) || put_double(b, v);
			sum += v;
		}
		if (rc || cfl_buf_puts(b, "]"))
			return cfl_err_set(err, "out of memory");
		if (!k) {
			b->len = 0;
			continue;
		}
		snprintf(key, sizeof(key), "%s%s_%s_values", pre,
			 cfl_store_split_name(t->cols[m].split), t->cols[m].metric);
		if (attr_add(as, key, b, err))
			return -1;
		snprintf(key, sizeof(key), "%s%s_%s", pre,
			 cfl_store_split_name(t->cols[m].split), t->cols[m].metric);
		if (put_double(b, sum / (double)k) || attr_add(as, key, b, err))
			return -1;
	}
	return 0;
}

int cfl_export_optuna(struct cfl_store *st, const struct cfl_run_info *run,
		      const char *path, struct cfl_err *err)
{
	struct trial_table t;
	struct cfl_space space;
	struct oparam *ops = NULL;
	struct cfl_optuna_trial *ot = NULL;
	struct cfl_optuna_param *opv = NULL;
	struct attrs sattrs = { 0 }, *tattrs = NULL;
	struct cfl_optuna_study study;
	struct cfl_buf b;
	char *space_text = NULL, *metric = NULL;
	double *scores = NULL;
	long best;
	int rc = -1, sign = 1, id;
	char sgn[16];

	if (run->kind != CFL_RUN_TUNE)
		return cfl_err_set(err, "run '%s' is a%s %s run: an Optuna study "
				   "is made of a tune run's candidates", run->name,
				   run->kind == CFL_RUN_AUTO ? "n" : "",
				   cfl_run_kind_name(run->kind));
	cfl_space_init(&space);
	cfl_buf_init(&b);
	if (table_load(&t, st, run->id, err))
		goto out;
	if (!(space_text = config_dup(run->config, "space", err)) ||
	    !(metric = config_dup(run->config, "metric", err)))
		goto out;
	for (char *p = space_text; *p; p++)
		if (*p == ';')
			*p = '\n';
	/* the metric's direction (a command's value: the run's --maximize or
	 * --minimize), so the study holds the metric's own values */
	id = cfl_metric_lookup(metric);
	cfl_report_config_get(run->config, "sign", sgn, sizeof(sgn));
	sign = id >= 0 ? cfl_metric_info(id)->sign : atoi(sgn) < 0 ? -1 : 1;
	if (cfl_space_parse(&space, "the run's search space", space_text,
			    strlen(space_text), NULL, err))
		goto out;
	if (t.n_keys && !(ops = cfl_calloc(t.n_keys, sizeof(*ops), err)))
		goto out;
	for (size_t k = 0; k < t.n_keys; k++) {
		int i = cfl_space_find(&space, t.keys[k]);

		cfl_buf_init(&ops[k].dist);
		if (make_param(&t, t.keys[k], i < 0 ? NULL : &space.params[i],
			       &ops[k], err))
			goto out;
	}
	if (t.n_cands &&
	    (!(ot = cfl_calloc(t.n_cands, sizeof(*ot), err)) ||
	     !(tattrs = cfl_calloc(t.n_cands, sizeof(*tattrs), err)) ||
	     !(scores = cfl_calloc(t.n_cands, sizeof(*scores), err)) ||
	     (t.n_keys && !(opv = cfl_calloc(t.n_cands * t.n_keys, sizeof(*opv), err)))))
		goto out;
	for (size_t c = 0; c < t.n_cands; c++)
		scores[c] = t.cands[c].has_score ? t.cands[c].score : NAN;
	best = cfl_metric_best_score(scores, t.n_cands);
	for (size_t c = 0; c < t.n_cands; c++) {
		const struct cfl_candidate_info *ci = &t.cands[c];
		struct cfl_optuna_trial *o = &ot[c];

		o->params = opv ? &opv[c * t.n_keys] : NULL;
		for (size_t k = 0; k < t.n_keys; k++) {
			const char *v = cfl_params_get(&ci->kv, t.keys[k]);
			struct cfl_optuna_param *q = &opv[c * t.n_keys + o->n_params];

			if (!v)
				continue;
			if (param_value(&ops[k], v, &q->value)) {
				cfl_err_set(err, "candidate %s: '%s=%s' is not among "
					    "the choices of the space", ci->hex,
					    t.keys[k], v);
				goto out;
			}
			q->name = t.keys[k];
			q->distribution_json = ops[k].dist.data;
			o->n_params++;
		}
		o->state = isfinite(scores[c]) ? "COMPLETE" :
			   ci->n_pruned ? "PRUNED" : "FAIL";
		/* cfl's score is sign * mean - std: the metric's own value
		 * is sign * score (mean - std, or mean + std when lower is
		 * better: the side of its seeds the search ranked by) */
		o->value = isfinite(scores[c]) ? sign * scores[c] : NAN;
		for (size_t i = 0; i < t.n_trials; i++) {
			const struct cfl_trial_info *tr = &t.trials[i];

			if (t.cand_of[i] != c || tr->phase != CFL_PHASE_SEARCH)
				continue;
			if (tr->started > 0 && (!(o->start > 0) || tr->started < o->start))
				o->start = tr->started;
			if (tr->finished > o->complete)
				o->complete = tr->finished;
		}
		if (attr_str(&tattrs[c], "cfl_candidate", ci->hex, &b, err) ||
		    attr_str(&tattrs[c], "cfl_model", ci->model, &b, err) ||
		    (isfinite(scores[c]) &&
		     (put_double(&b, scores[c]) || attr_add(&tattrs[c], "cfl_score", &b, err))) ||
		    trial_attrs(&t, c, CFL_PHASE_SEARCH, "", &tattrs[c], &b, err) ||
		    ((long)c == best &&
		     trial_attrs(&t, c, CFL_PHASE_REFIT, "refit_", &tattrs[c], &b, err)))
			goto out;
		o->attrs = tattrs[c].a;
		o->n_attrs = tattrs[c].n;
	}
	if (attr_str(&sattrs, "cfl_run", run->name, &b, err) ||
	    attr_str(&sattrs, "cfl_version", run->version, &b, err) ||
	    attr_str(&sattrs, "command", run->command, &b, err) ||
	    attr_str(&sattrs, "dataset", run->dataset, &b, err) ||
	    attr_str(&sattrs, "metric", metric, &b, err) ||
	    attr_str(&sattrs, "value", sign > 0
		     ? "the metric on the validation part over the candidate's "
		       "seeds, mean - std (higher is better; cfl_score: the same)"
		     : "the metric on the validation part over the candidate's "
		       "seeds, mean + std (lower is better; cfl_score: cfl's "
		       "score, its negative)", &b, err))
		goto out;
	study.name = run->name;
	study.direction = sign > 0 ? "MAXIMIZE" : "MINIMIZE";
	study.attrs = sattrs.a;
	study.n_attrs = sattrs.n;
	study.trials = ot;
	study.n_trials = t.n_cands;
	rc = cfl_store_optuna_write(path, &study, err);
out:
	for (size_t k = 0; ops && k < t.n_keys; k++) {
		free(ops[k].choices);
		cfl_buf_release(&ops[k].dist);
	}
	for (size_t c = 0; tattrs && c < t.n_cands; c++)
		attrs_release(&tattrs[c]);
	attrs_release(&sattrs);
	free(tattrs);
	free(ops);
	free(opv);
	free(ot);
	free(scores);
	free(space_text);
	free(metric);
	cfl_buf_release(&b);
	cfl_space_release(&space);
	table_release(&t);
	return rc;
}
