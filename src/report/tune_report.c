/*
 * The text report of a tune run, rebuilt from the store: the candidates on
 * the validation part (the refit's seeds left out), a Best Parameters block
 * per metric and overall as carefree-learn prints them, then the refit of
 * the best candidate on the test part.  `cfl tune` and `cfl report` both
 * print it through cfl_report_run.  Reads the plan (num_repeat, metric,
 * sign) from the run's stored config; never prints.
 */
#include "cfl/report.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/hpo.h"
#include "cfl/metrics.h"
#include "internal.h"

/* Appends "{'k': 'v', ...}" of a stored "k=v,k=v" string: values are split
 * at a comma followed by "name=", so "hidden=64,64" stays whole. */
/* The column out's last line has reached. */
static size_t column(const struct cfl_buf *out)
{
	size_t n = out->len;

	while (n && out->data[n - 1] != '\n')
		n--;
	return out->len - n;
}

/* Appends item after sep, or after wrap instead when sep and item would
 * take the line past 80 columns (a terminal's width). */
static void put_wrapped(struct cfl_buf *out, const char *sep, const char *wrap,
			const char *item, size_t len)
{
	size_t col = column(out);

	cfl_buf_puts(out, col > 12 && col + strlen(sep) + len > 80 ? wrap : sep);
	cfl_buf_printf(out, "%.*s", (int)len, item);
}

static void dict_of(const char *params, struct cfl_buf *out)
{
	const char *p = params;
	int first = 1;

	cfl_buf_puts(out, "{");
	while (p && *p) {
		const char *eq = strchr(p, '='), *end, *q;

		if (!eq)
			break;
		end = eq + 1;
		for (q = eq + 1; *q; q++) {
			if (*q == ',') {
				const char *r = q + 1;

				while (*r && (isalnum((unsigned char)*r) || *r == '_' || *r == '.'))
					r++;
				if (r > q + 1 && *r == '=')
					break;
			}
		}
		end = q;
		{
			char *e;
			char v[256], item[600];
			size_t n = (size_t)(end - eq - 1) < sizeof(v) - 1 ?
				   (size_t)(end - eq - 1) : sizeof(v) - 1;

			memcpy(v, eq + 1, n);
			v[n] = '\0';
			strtod(v, &e);
			snprintf(item, sizeof(item), n && !*e ? "'%.*s': %s" : "'%.*s': '%s'",
				 (int)(eq - p < 256 ? eq - p : 256), p, v);
			put_wrapped(out, first ? "" : ", ", ",\n ", item, strlen(item));
		}
		first = 0;
		p = *end ? end + 1 : end;
	}
	cfl_buf_puts(out, "}");
}

/* The end of the value that starts at v in a stored "k=v,k=v" string: the
 * next comma followed by "name=", or the end ("hidden=64,64" stays whole). */
static const char *value_end(const char *v)
{
	for (; *v; v++)
		if (*v == ',') {
			const char *r = v + 1;

			while (*r && (isalnum((unsigned char)*r) || *r == '_' || *r == '.'))
				r++;
			if (r > v + 1 && *r == '=')
				break;
		}
	return v;
}

/* The value of key (n bytes) in a stored params string: its start, and its
 * length in *len; NULL when the key is not there. */
static const char *param_value(const char *params, const char *key, size_t n,
			       size_t *len)
{
	for (const char *p = params; p && *p;) {
		const char *eq = strchr(p, '='), *end;

		if (!eq)
			break;
		end = value_end(eq + 1);
		if ((size_t)(eq - p) == n && !strncmp(p, key, n)) {
			*len = (size_t)(end - eq - 1);
			return eq + 1;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

/* True when key (n bytes) has another value (or none) in some candidate. */
static int param_varies(const struct cfl_candidate_info *cands, size_t n_cands,
			const char *key, size_t n)
{
	size_t l0 = 0, l;
	const char *v0 = param_value(cands[0].params, key, n, &l0), *v;

	for (size_t i = 1; i < n_cands; i++) {
		v = param_value(cands[i].params, key, n, &l);
		if (!v != !v0 || (v && (l != l0 || strncmp(v, v0, l))))
			return 1;
	}
	return 0;
}

/* Under the candidates' text table: per row of t (in its order), the
 * candidate's parameters that vary between candidates (all of them when
 * none varies), so a row's 8-hex id reads as a setting. */
static void params_block(const struct cfl_table *t,
			 const struct cfl_candidate_info *cands, size_t n_cands,
			 struct cfl_buf *out)
{
	int any = 0;

	for (size_t i = 0; i < n_cands && !any; i++)
		for (const char *p = cands[i].params; p && *p && !any;) {
			const char *eq = strchr(p, '='), *end;

			if (!eq)
				break;
			any = param_varies(cands, n_cands, p, (size_t)(eq - p));
			end = value_end(eq + 1);
			p = *end ? end + 1 : end;
		}
	cfl_buf_puts(out, any ? "Parameters that vary between the candidates:\n"
			      : "Parameters of the candidates:\n");
	for (size_t r = 0; r < t->n_rows; r++) {
		const struct cfl_candidate_info *c = NULL;

		for (size_t i = 0; i < n_cands && !c; i++)
			if (!strcmp(cands[i].hex, t->rows[r].name))
				c = &cands[i];
		if (!c)
			continue;
		cfl_buf_printf(out, "  %s", c->hex);
		for (const char *p = c->params; p && *p;) {
			const char *eq = strchr(p, '='), *end;

			if (!eq)
				break;
			end = value_end(eq + 1);
			if (!any || param_varies(cands, n_cands, p, (size_t)(eq - p)))
				put_wrapped(out, "  ", "\n            ", p, (size_t)(end - p));
			p = *end ? end + 1 : end;
		}
		cfl_buf_puts(out, "\n");
	}
}

/* ---- what the search could not do ---- */

/* The points of a finite space as the search sees them (a grid: each
 * continuous range its grid_points), or 0 when it has a continuous range
 * the search samples (no end). */
static double space_points(const struct cfl_space *sp, int grid, long grid_points)
{
	double n = 1;

	for (size_t i = 0; i < sp->n_params; i++) {
		const struct cfl_space_param *q = &sp->params[i];

		if (q->dist == CFL_DIST_CHOICE)
			n *= (double)q->n_choices;
		else if (q->dist == CFL_DIST_INT || q->integer)
			n *= grid && grid_points > 0
			     ? fmin((double)grid_points, floor(q->hi) - ceil(q->lo) + 1)
			     : floor(q->hi) - ceil(q->lo) + 1;
		else if (q->dist != CFL_DIST_FIXED)
			n *= grid && grid_points > 0 ? (double)grid_points : 0;
	}
	return n;
}

/* 1 when v is at bound b of q's range: equal for integers, within a
 * millionth of the range (in logs for loguniform) otherwise, since values
 * are stored rounded. */
static int at_bound(const struct cfl_space_param *q, double v, double b)
{
	if (q->dist == CFL_DIST_INT || q->integer)
		return fabs(v - b) < 0.5;
	if (q->dist == CFL_DIST_LOGUNIFORM && v > 0 && b > 0)
		return fabs(log(v) - log(b)) <= 1e-6 * (log(q->hi) - log(q->lo));
	return fabs(v - b) <= 1e-6 * (q->hi - q->lo);
}

/* Under the Best Parameters: when the space had fewer points than
 * --num-search (the search asked each once and stopped), and each numeric
 * parameter of the best candidate at a bound of its range (a better value
 * may lie beyond it). */
static void search_notes(const char *config, const struct cfl_candidate_info *best,
			 size_t n_cands, struct cfl_buf *out)
{
	struct cfl_space sp;
	struct cfl_err ignored;
	char *text, buf[64];
	long num_search, grid_points;
	int grid;
	double n;

	cfl_report_config_get(config, "num_search", buf, sizeof(buf));
	num_search = atol(buf);
	cfl_report_config_get(config, "grid_points", buf, sizeof(buf));
	grid_points = atol(buf);
	cfl_report_config_get(config, "method", buf, sizeof(buf));
	grid = !strcmp(buf, "grid");
	if (!(text = malloc(4096)))
		return;
	cfl_report_config_get(config, "space", text, 4096);
	for (char *p = text; *p; p++)
		if (*p == ';')
			*p = '\n';
	cfl_space_init(&sp);
	if (!text[0] || cfl_space_parse(&sp, "the run's search space", text,
					strlen(text), NULL, &ignored)) {
		free(text);
		return;
	}
	free(text);
	n = space_points(&sp, grid, grid_points);
	if (n > 0 && n < (double)num_search && n_cands < (size_t)num_search)
		cfl_buf_printf(out, "\nThe space has %.0f point%s, fewer than --num-search "
			       "%ld: the search\ntried %s and stopped.\n", n,
			       n == 1 ? "" : "s", num_search,
			       n == 1 ? "it" : "each once");
	for (size_t i = 0; best && i < sp.n_params; i++) {
		const struct cfl_space_param *q = &sp.params[i];
		const char *v = cfl_params_get(&best->kv, q->name);
		char *end;
		double x;

		if (!v || (q->dist != CFL_DIST_UNIFORM && q->dist != CFL_DIST_LOGUNIFORM &&
			   q->dist != CFL_DIST_INT))
			continue;
		x = strtod(v, &end);
		if (*end || !(at_bound(q, x, q->lo) || at_bound(q, x, q->hi)))
			continue;
		cfl_buf_printf(out, "\nnote: the best candidate's %s = %s is the %s bound of "
			       "its range\n  %s(%g, %g): a better value may lie "
			       "beyond it; widen the range.\n", q->name, v,
			       at_bound(q, x, q->lo) ? "lower" : "upper",
			       q->dist == CFL_DIST_UNIFORM ? "uniform"
			       : q->dist == CFL_DIST_LOGUNIFORM ? "loguniform" : "int",
			       q->lo, q->hi);
	}
	cfl_space_release(&sp);
}

int cfl_report_tune(struct cfl_store *st, const struct cfl_run_info *info,
		    enum cfl_table_format fmt, const struct cfl_table_style *style,
		    struct cfl_buf *out, struct cfl_err *err)
{
	struct cfl_candidate_info *cands = NULL;
	struct cfl_metric_row *rows = NULL;
	struct cfl_attempt_info *fails = NULL;
	size_t n_cands = 0, n_rows = 0, n_fails = 0;
	struct cfl_table t, refit;
	char buf[64], metric[32];
	long R;
	int rc = -1, best = -1, value_sign;
	const char *config = info->config ? info->config : "";

	cfl_table_init(&t);
	cfl_table_init(&refit);
	cfl_report_config_get(config, "sign", buf, sizeof(buf));
	value_sign = atoi(buf) < 0 ? -1 : 1;	/* --command: --direction */
	cfl_report_config_get(config, "num_repeat", buf, sizeof(buf));
	R = atol(buf);
	cfl_report_config_get(config, "metric", metric, sizeof(metric));
	if (R < 1)
		R = 1;
	if (cfl_store_candidates(st, info->id, &cands, &n_cands, err) ||
	    cfl_store_run_metrics(st, info->id, CFL_SPLIT_VALID, &rows, &n_rows, err) ||
	    cfl_store_attempts(st, info->id, &fails, &n_fails, err))
		goto out;
	/* the failed attempts (the refit's too) under the candidates' table */
	t.failures = fails;
	t.n_failures = n_fails;
	/* one row per candidate in proposal order; the refit seeds
	 * (repeat >= R) are not part of the search */
	for (size_t i = 0; i < n_cands; i++) {
		int r = cfl_table_row(&t, cands[i].hex, err);

		if (r < 0)
			goto out;
		cfl_table_set_failed(&t, r, cands[i].n_failed);
		/* md, csv and json show them as columns; the text formats
		 * in the block under the table */
		if (fmt != CFL_TABLE_TEXT && fmt != CFL_TABLE_COMPACT)
			t.rows[r].params = &cands[i].kv;
		if (cands[i].has_score && (best < 0 || cands[i].score > cands[best].score))
			best = (int)i;
	}
	for (size_t i = 0; i < n_rows; i++) {
		const struct cfl_metric_info *mi;
		int m, r;

		if (rows[i].ensemble_id || rows[i].repeat >= R)
			continue;
		mi = cfl_metric_lookup(rows[i].metric) >= 0 ?
		     cfl_metric_info(cfl_metric_lookup(rows[i].metric)) : NULL;
		m = cfl_table_metric(&t, rows[i].metric, mi ? mi->sign : value_sign,
				     err);
		r = cfl_table_row(&t, rows[i].hex, err);
		if (m < 0 || r < 0 || cfl_table_add(&t, r, m, rows[i].value, err))
			goto out;
	}
	if (fmt != CFL_TABLE_TEXT && fmt != CFL_TABLE_COMPACT) {
		/* the other formats carry the candidates' table alone */
		rc = cfl_table_render_styled(&t, fmt, style, out, err);
		goto out;
	}
	cfl_buf_printf(out, "Candidates of run '%s' on the validation part (%ld seed%s each):\n",
		       info->name, R, R == 1 ? "" : "s");
	if (cfl_table_render_styled(&t, fmt, style, out, err))
		goto out;
	if (n_cands)
		params_block(&t, cands, n_cands, out);

	/* Best Parameters: per metric, the candidate with the best score */
	cfl_buf_puts(out, "\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
			  "                            Best Parameters\n"
			  "-----------------------------------------------------------------------\n");
	for (size_t m = 0; m < t.n_metrics; m++) {
		int bi = -1;

		for (size_t r = 0; r < t.n_rows; r++)
			if (!isnan(t.rows[r].score[m]) &&
			    (bi < 0 || t.rows[r].score[m] > t.rows[bi].score[m]))
				bi = (int)r;
		if (bi < 0)
			continue;
		cfl_buf_printf(out, "%-8s (%s) (%.6f +- %.6f)\n", t.metric_names[m],
			       t.rows[bi].name, t.rows[bi].mean[m], t.rows[bi].std[m]);
		cfl_buf_puts(out, "-----------------------------------------------------------------------\n");
		for (size_t i = 0; i < n_cands; i++)
			if (!strcmp(cands[i].hex, t.rows[bi].name)) {
				dict_of(cands[i].params, out);
				break;
			}
		cfl_buf_puts(out, "\n-----------------------------------------------------------------------\n");
	}
	if (best >= 0) {
		cfl_buf_printf(out, "best     (%s) (score %.6f on %s)\n", cands[best].hex,
			       cands[best].score, metric);
		cfl_buf_puts(out, "-----------------------------------------------------------------------\n");
		dict_of(cands[best].params, out);
		cfl_buf_puts(out, "\n");
	} else {
		cfl_buf_puts(out, "no candidate succeeded\n");
	}
	cfl_buf_puts(out, "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");
	search_notes(config, best >= 0 ? &cands[best] : NULL, n_cands, out);

	/* the refit of the best on the test part */
	free(rows);
	rows = NULL;
	if (best >= 0 &&
	    cfl_store_run_metrics(st, info->id, CFL_SPLIT_TEST, &rows, &n_rows, err) == 0) {
		size_t n_vals = 0;
		char name[64];

		snprintf(name, sizeof(name), "best (%s)", cands[best].hex);
		for (size_t i = 0; i < n_rows; i++) {
			const struct cfl_metric_info *mi;
			int m, r;

			if (rows[i].cand_id != cands[best].id || rows[i].repeat < R)
				continue;
			mi = cfl_metric_lookup(rows[i].metric) >= 0 ?
			     cfl_metric_info(cfl_metric_lookup(rows[i].metric)) : NULL;
			m = cfl_table_metric(&refit, rows[i].metric, mi ? mi->sign : 1, err);
			r = cfl_table_row(&refit, name, err);
			if (m < 0 || r < 0 || cfl_table_add(&refit, r, m, rows[i].value, err))
				goto out;
			n_vals++;
		}
		if (n_vals) {
			cfl_buf_printf(out, "\nThe best candidate refit with %ld fresh seed%s, on the test part:\n",
				       R, R == 1 ? "" : "s");
			if (cfl_table_render_styled(&refit, fmt, style, out, err))
				goto out;
		}
		if (cfl_report_feature_importance(st, info->id, cands[best].id,
						  style ? style->width : 0, out, err))
			goto out;
	} else if (best >= 0) {
		goto out;
	}
	rc = 0;
out:
	cfl_table_release(&t);
	cfl_table_release(&refit);
	cfl_candidates_free(cands, n_cands);
	cfl_attempts_free(fails, n_fails);
	free(rows);
	return rc;
}

