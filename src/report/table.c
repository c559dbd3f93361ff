/*
 * The results table (carefree-learn's): rows x metrics, each cell the values
 * over repeats summarised as mean, population std and score = sign * mean -
 * std, rendered as a boxed text table, Markdown, CSV or JSON.
 *
 * Invariant: every rendering marks the same best cells (cfl_table_is_best),
 * so the terminal, `cfl report` and the files never disagree.  The
 * statistics are cfl_metric_stats' (the one score rule); signs come from
 * the caller.
 */
#include "cfl/report.h"
#include "cfl/metrics.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- table: building ---- */

void cfl_table_init(struct cfl_table *t)
{
	memset(t, 0, sizeof(*t));
}

static void row_release(struct cfl_table_row *r, size_t n_metrics)
{
	free(r->name);
	for (size_t m = 0; r->values && m < n_metrics; m++)
		free(r->values[m]);
	free(r->values);
	free(r->n_values);
	free(r->mean);
	free(r->std);
	free(r->score);
}

void cfl_table_release(struct cfl_table *t)
{
	if (!t)
		return;
	for (size_t r = 0; r < t->n_rows; r++)
		row_release(&t->rows[r], t->n_metrics);
	free(t->rows);
	for (size_t m = 0; m < t->n_metrics; m++)
		free(t->metric_names[m]);
	free(t->metric_names);
	free(t->signs);
	memset(t, 0, sizeof(*t));
}

/* Grows the per-metric arrays of row r from t->n_metrics to n entries. */
static int row_grow(struct cfl_table_row *r, size_t old, size_t n,
		    struct cfl_err *err)
{
	void *p;

	if (!(p = cfl_realloc(r->n_values, n * sizeof(size_t), err)))
		return -1;
	r->n_values = p;
	if (!(p = cfl_realloc(r->values, n * sizeof(double *), err)))
		return -1;
	r->values = p;
	for (size_t m = old; m < n; m++) {
		r->n_values[m] = 0;
		r->values[m] = NULL;
	}
	if (!(p = cfl_realloc(r->mean, n * sizeof(double), err)))
		return -1;
	r->mean = p;
	if (!(p = cfl_realloc(r->std, n * sizeof(double), err)))
		return -1;
	r->std = p;
	if (!(p = cfl_realloc(r->score, n * sizeof(double), err)))
		return -1;
	r->score = p;
	for (size_t m = old; m < n; m++)
		r->mean[m] = r->std[m] = r->score[m] = NAN;
	return 0;
}

int cfl_table_metric(struct cfl_table *t, const char *name, int sign,
		     struct cfl_err *err)
{
	size_t n = t->n_metrics;
	void *p;

	for (size_t m = 0; m < n; m++)
		if (strcmp(t->metric_names[m], name) == 0)
			return (int)m;
	if (sign != 1 && sign != -1)
		return cfl_err_set(err, "metric '%s': sign %d is not +1 or -1",
				   name, sign);
	if (!(p = cfl_realloc(t->metric_names, (n + 1) * sizeof(char *), err)))
		return -1;
	t->metric_names = p;
	if (!(p = cfl_realloc(t->signs, (n + 1) * sizeof(int), err)))
		return -1;
	t->signs = p;
	for (size_t r = 0; r < t->n_rows; r++)
		if (row_grow(&t->rows[r], n, n + 1, err))
			return -1;
	if (!(t->metric_names[n] = cfl_strdup(name, err)))
		return -1;
	t->signs[n] = sign;
	t->n_metrics = n + 1;
	return (int)n;
}

int cfl_table_row(struct cfl_table *t, const char *name, struct cfl_err *err)
{
	struct cfl_table_row *r;
	void *p;

	for (size_t i = 0; i < t->n_rows; i++)
		if (strcmp(t->rows[i].name, name) == 0)
			return (int)i;
	if (!(p = cfl_realloc(t->rows, (t->n_rows + 1) * sizeof(*r), err)))
		return -1;
	t->rows = p;
	r = &t->rows[t->n_rows];
	memset(r, 0, sizeof(*r));
	if (!(r->name = cfl_strdup(name, err)) ||
	    row_grow(r, 0, t->n_metrics ? t->n_metrics : 1, err)) {
		row_release(r, t->n_metrics);
		return -1;
	}
	return (int)t->n_rows++;
}

int cfl_table_add(struct cfl_table *t, int row, int metric, double value,
		  struct cfl_err *err)
{
	struct cfl_table_row *r;
	double *v;

	if (row < 0 || (size_t)row >= t->n_rows || metric < 0 ||
	    (size_t)metric >= t->n_metrics)
		return cfl_err_set(err, "table cell (%d, %d) out of range", row,
				   metric);
	r = &t->rows[row];
	v = cfl_realloc(r->values[metric],
			(r->n_values[metric] + 1) * sizeof(double), err);
	if (!v)
		return -1;
	v[r->n_values[metric]++] = value;
	r->values[metric] = v;
	return 0;
}

void cfl_table_set_failed(struct cfl_table *t, int row, size_t n_failed)
{
	if (row >= 0 && (size_t)row < t->n_rows)
		t->rows[row].n_failed = n_failed;
}

/* ---- table: statistics and best cells ---- */

void cfl_table_compute(struct cfl_table *t)
{
	for (size_t i = 0; i < t->n_rows; i++) {
		struct cfl_table_row *r = &t->rows[i];

		for (size_t m = 0; m < t->n_metrics; m++) {
			struct cfl_metric_stats st;

			cfl_metric_stats(r->values[m], r->n_values[m], t->signs[m], &st);
			/* Equal values summed and divided leave a std of float
			 * noise (1.1e-16 for five 0.9722...): it is 0, shown
			 * and compared as 0 in every format. */
			if (isfinite(st.std) && st.std > 0 &&
			    st.std <= 16 * DBL_EPSILON * fabs(st.mean)) {
				size_t k = 1, n = r->n_values[m];

				while (k < n && r->values[m][k] == r->values[m][0])
					k++;
				if (k == n)	/* all equal: the value itself */
					st.mean = r->values[m][0];
				st.std = 0;
				st.score = t->signs[m] * st.mean;
			}
			r->mean[m] = st.mean;
			r->std[m] = st.std;
			r->score[m] = st.score;
		}
	}
}

/* The quantity a column maximises: sign * mean, -std or score. */
static double key(const struct cfl_table *t, size_t row, size_t m,
		  enum cfl_table_stat stat)
{
	const struct cfl_table_row *r = &t->rows[row];

	switch (stat) {
	case CFL_STAT_MEAN: return t->signs[m] * r->mean[m];
	case CFL_STAT_STD: return -r->std[m];
	default: return r->score[m];
	}
}

int cfl_table_is_best(const struct cfl_table *t, size_t row, size_t metric,
		      enum cfl_table_stat stat)
{
	double best = -INFINITY, k;
	int any = 0;

	if (t->n_rows < 2 || row >= t->n_rows || metric >= t->n_metrics)
		return 0;
	for (size_t i = 0; i < t->n_rows; i++) {
		k = key(t, i, metric, stat);
		if (!isnan(k) && (!any || k > best)) {
			best = k;
			any = 1;
		}
	}
	k = key(t, row, metric, stat);
	if (!any || isnan(k))
		return 0;
	/* Ties within rounding noise (sums in another order) are ties. */
	return best - k <= 1e-12 * fmax(1.0, fabs(best));
}

/* ---- table: text rendering ---- */

static const char *const stat_names[3] = { "mean", "std", "score" };

static double stat_value(const struct cfl_table_row *r, size_t m, int s)
{
	double v = s == 0 ? r->mean[m] : s == 1 ? r->std[m] : r->score[m];

	/* never print -0.000000 */
	return v == 0 ? 0.0 : v;
}

static int any_failed(const struct cfl_table *t)
{
	for (size_t i = 0; i < t->n_rows; i++)
		if (t->rows[i].n_failed)
			return 1;
	return 0;
}

/* The best cells on a colour terminal: bold green, then back to plain. */
#define HL_ON "\033[1;32m"
#define HL_OFF "\033[0m"

/* The text of a cell: "%.6f", "nan", marked "-- x --" when best (left
 * unmarked with color: the caller highlights it).  Returns whether the cell
 * is best. */
static int cell_text(const struct cfl_table *t, size_t row, size_t m, int s,
		     char *out, size_t cap, int color)
{
	double v = stat_value(&t->rows[row], m, s);
	int best = cfl_table_is_best(t, row, m, (enum cfl_table_stat)s);
	char num[64];

	if (isnan(v))
		snprintf(num, sizeof(num), "nan");
	else
		snprintf(num, sizeof(num), "%.6f", v);
	if (best && !color)
		snprintf(out, cap, "-- %s --", num);
	else
		snprintf(out, cap, "%s", num);
	return best;
}

/* Appends "|" + text centred in w columns (extra space on the right, as
 * Python's "^" does), highlighted when hl. */
static int put_centred_hl(struct cfl_buf *b, const char *text, size_t w, int hl)
{
	size_t len = strlen(text), left, right;

	if (len > w)
		w = len;
	left = (w - len) / 2;
	right = w - len - left;
	return cfl_buf_printf(b, "|%*s%s%s%s%*s", (int)left, "", hl ? HL_ON : "",
			      text, hl ? HL_OFF : "", (int)right, "");
}

static int put_centred(struct cfl_buf *b, const char *text, size_t w)
{
	return put_centred_hl(b, text, w, 0);
}

static int put_rule(struct cfl_buf *b, char c, size_t width)
{
	if (cfl_buf_reserve(b, width + 1))
		return -1;
	memset(b->data + b->len, c, width);
	b->len += width;
	b->data[b->len] = 0;
	return cfl_buf_puts(b, "\n");
}

static int render_text(struct cfl_table *t, struct cfl_buf *b, int color)
{
	size_t n_cols = 3 * t->n_metrics, w0, wf = 0, total;
	size_t *w = calloc(n_cols ? n_cols : 1, sizeof(size_t));
	int failed = any_failed(t), rc = -1;
	char cell[96];

	if (!w)
		return -1;
	/* widths: content + one space each side */
	w0 = strlen("metrics");
	for (size_t i = 0; i < t->n_rows; i++)
		if (strlen(t->rows[i].name) > w0)
			w0 = strlen(t->rows[i].name);
	w0 += 2;
	for (size_t m = 0; m < t->n_metrics; m++) {
		size_t group, need;

		for (int s = 0; s < 3; s++) {
			size_t c = 3 * m + (size_t)s;

			w[c] = strlen(stat_names[s]);
			for (size_t i = 0; i < t->n_rows; i++) {
				cell_text(t, i, m, s, cell, sizeof(cell), color);
				if (strlen(cell) > w[c])
					w[c] = strlen(cell);
			}
			w[c] += 2;
		}
		group = w[3 * m] + w[3 * m + 1] + w[3 * m + 2] + 2;
		need = strlen(t->metric_names[m]) + 2;
		if (need > group)
			w[3 * m + 2] += need - group;
	}
	if (failed)
		wf = strlen("failed") + 2;
	total = 1 + w0 + 1;
	for (size_t c = 0; c < n_cols; c++)
		total += w[c] + 1;
	if (failed)
		total += wf + 1;

	if (put_rule(b, '=', total) || put_centred(b, "metrics", w0))
		goto out;
	for (size_t m = 0; m < t->n_metrics; m++)
		if (put_centred(b, t->metric_names[m],
				w[3 * m] + w[3 * m + 1] + w[3 * m + 2] + 2))
			goto out;
	if ((failed && put_centred(b, "failed", wf)) || cfl_buf_puts(b, "|\n") ||
	    put_rule(b, '-', total) || put_centred(b, "", w0))
		goto out;
	for (size_t c = 0; c < n_cols; c++)
		if (put_centred(b, stat_names[c % 3], w[c]))
			goto out;
	if ((failed && put_centred(b, "", wf)) || cfl_buf_puts(b, "|\n"))
		goto out;
	for (size_t i = 0; i < t->n_rows; i++) {
		if (put_rule(b, '-', total) || put_centred(b, t->rows[i].name, w0))
			goto out;
		for (size_t c = 0; c < n_cols; c++) {
			int hl = cell_text(t, i, c / 3, (int)(c % 3), cell,
					   sizeof(cell), color) && color;

			if (put_centred_hl(b, cell, w[c], hl))
				goto out;
		}
		if (failed) {
			snprintf(cell, sizeof(cell), "%zu", t->rows[i].n_failed);
			if (put_centred(b, cell, wf))
				goto out;
		}
		if (cfl_buf_puts(b, "|\n"))
			goto out;
	}
	rc = put_rule(b, '=', total);
out:
	free(w);
	return rc;
}

/* ---- table: the compact text form ---- */

/* A number of the compact form: "%.6f" or "nan". */
static void num_text(double v, char *out, size_t cap)
{
	if (isnan(v))
		snprintf(out, cap, "nan");
	else
		snprintf(out, cap, "%.6f", v);
}

/* Appends text right-aligned in w columns, then its mark: "*" when best
 * (plain), bold green when best and color, else a space. */
static int put_num(struct cfl_buf *b, const char *text, size_t w, int best,
		   int color)
{
	size_t len = strlen(text);
	int pad = len < w ? (int)(w - len) : 0;

	if (color && best)
		return cfl_buf_printf(b, "%*s" HL_ON "%s" HL_OFF " ", pad, "", text);
	return cfl_buf_printf(b, "%*s%s%s", pad, "", text, best ? "*" : " ");
}

/* Appends text centred in w columns. */
static int put_mid(struct cfl_buf *b, const char *text, size_t w)
{
	size_t len = strlen(text), left;

	if (len > w)
		w = len;
	left = (w - len) / 2;
	return cfl_buf_printf(b, "%*s%s%*s", (int)left, "", text,
			      (int)(w - len - left), "");
}

/* One metric's column: "MEAN ± STD SCORE", each number with its mark. */
struct compact_col {
	size_t wm, ws, wc;	/* widths of the numbers, marks not counted */
	size_t width;		/* of the whole column */
};

static void compact_widths(const struct cfl_table *t, size_t m,
			   struct compact_col *c)
{
	char num[64];

	c->wm = strlen("mean");
	c->ws = strlen("std");
	c->wc = strlen("score");
	for (size_t i = 0; i < t->n_rows; i++) {
		num_text(stat_value(&t->rows[i], m, 0), num, sizeof(num));
		c->wm = strlen(num) > c->wm ? strlen(num) : c->wm;
		num_text(stat_value(&t->rows[i], m, 1), num, sizeof(num));
		c->ws = strlen(num) > c->ws ? strlen(num) : c->ws;
		num_text(stat_value(&t->rows[i], m, 2), num, sizeof(num));
		c->wc = strlen(num) > c->wc ? strlen(num) : c->wc;
	}
	/* "M* ± S* C*" */
	c->width = c->wm + 1 + 3 + c->ws + 1 + 1 + c->wc + 1;
	if (strlen(t->metric_names[m]) > c->width)
		c->width = strlen(t->metric_names[m]);
}

/* One block of the compact table: metrics [m0, m1). */
static int compact_block(struct cfl_table *t, struct cfl_buf *b, size_t w0,
			 const struct compact_col *cols, size_t m0, size_t m1,
			 int failed, int color)
{
	size_t total = w0;
	char num[64];

	for (size_t m = m0; m < m1; m++)
		total += 3 + cols[m].width;
	if (failed)
		total += 3 + strlen("failed");
	if (put_rule(b, '=', total) || cfl_buf_printf(b, "%-*s", (int)w0, " metrics"))
		return -1;
	for (size_t m = m0; m < m1; m++)
		if (cfl_buf_puts(b, " | ") || put_mid(b, t->metric_names[m], cols[m].width))
			return -1;
	if ((failed && cfl_buf_puts(b, " | failed")) || cfl_buf_puts(b, "\n") ||
	    cfl_buf_printf(b, "%*s", (int)w0, ""))
		return -1;
	for (size_t m = m0; m < m1; m++) {
		const struct compact_col *c = &cols[m];
		size_t used = c->wm + 1 + 3 + c->ws + 1 + 1 + c->wc + 1;

		if (cfl_buf_printf(b, " | %*s  ± %*s  %*s %*s", (int)c->wm, "mean",
				   (int)c->ws, "std", (int)c->wc, "score",
				   (int)(c->width - used), ""))
			return -1;
	}
	if ((failed && cfl_buf_puts(b, " |       ")) || cfl_buf_puts(b, "\n") ||
	    put_rule(b, '-', total))
		return -1;
	for (size_t i = 0; i < t->n_rows; i++) {
		if (cfl_buf_printf(b, " %-*s", (int)(w0 - 1), t->rows[i].name))
			return -1;
		for (size_t m = m0; m < m1; m++) {
			const struct compact_col *c = &cols[m];
			size_t used = c->wm + 1 + 3 + c->ws + 1 + 1 + c->wc + 1;
			const size_t widths[3] = { c->wm, c->ws, c->wc };

			if (cfl_buf_puts(b, " | "))
				return -1;
			for (int s = 0; s < 3; s++) {
				num_text(stat_value(&t->rows[i], m, s), num, sizeof(num));
				if ((s == 1 && cfl_buf_puts(b, " ± ")) ||
				    (s == 2 && cfl_buf_puts(b, " ")) ||
				    put_num(b, num, widths[s],
					    cfl_table_is_best(t, i, m, (enum cfl_table_stat)s),
					    color))
					return -1;
			}
			if (cfl_buf_printf(b, "%*s", (int)(c->width - used), ""))
				return -1;
		}
		if ((failed && cfl_buf_printf(b, " | %6zu", t->rows[i].n_failed)) ||
		    cfl_buf_puts(b, "\n"))
			return -1;
	}
	return put_rule(b, '=', total);
}

/* The compact form: a name column, then per metric "mean ± std score";
 * with a width limit, the metrics split into blocks that fit. */
static int render_compact(struct cfl_table *t, struct cfl_buf *b, size_t width,
			  int color)
{
	struct compact_col *cols = calloc(t->n_metrics ? t->n_metrics : 1,
					  sizeof(*cols));
	int failed = any_failed(t), rc = -1;
	size_t w0 = strlen(" metrics"), m0 = 0;

	if (!cols)
		return -1;
	for (size_t i = 0; i < t->n_rows; i++)
		if (strlen(t->rows[i].name) + 1 > w0)
			w0 = strlen(t->rows[i].name) + 1;
	for (size_t m = 0; m < t->n_metrics; m++)
		compact_widths(t, m, &cols[m]);
	do {
		size_t m1 = m0, used = w0 + (failed ? 3 + strlen("failed") : 0);

		/* as many metrics as fit, one at least */
		while (m1 < t->n_metrics &&
		       (m1 == m0 || !width || used + 3 + cols[m1].width <= width))
			used += 3 + cols[m1++].width;
		if ((m0 && cfl_buf_puts(b, "\n")) ||
		    compact_block(t, b, w0, cols, m0, m1, failed, color))
			goto out;
		m0 = m1;
	} while (m0 < t->n_metrics);
	/* marks need two rows (cfl_table_is_best) */
	rc = color || t->n_rows < 2 ? 0 : cfl_buf_puts(b, "* the best of its column\n");
out:
	free(cols);
	return rc;
}

/* The widest line of text in columns (escape sequences and UTF-8
 * continuation bytes take none). */
static size_t text_width(const char *s, size_t len)
{
	size_t best = 0, cur = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n') {
			best = cur > best ? cur : best;
			cur = 0;
		} else if (c == 0x1b) {
			while (i < len && !((s[i] >= 'A' && s[i] <= 'Z') ||
					    (s[i] >= 'a' && s[i] <= 'z')))
				i++;
		} else if ((c & 0xC0) != 0x80) {
			cur++;
		}
	}
	return cur > best ? cur : best;
}

/* The full text table when it fits width (or there is no limit), else the
 * compact form. */
static int render_fitted(struct cfl_table *t, struct cfl_buf *b, size_t width,
			 int color)
{
	struct cfl_buf full;
	int rc;

	cfl_buf_init(&full);
	if (render_text(t, &full, color)) {
		cfl_buf_release(&full);
		return -1;
	}
	if (!width || text_width(full.data, full.len) <= width)
		rc = cfl_buf_append(b, full.data, full.len);
	else
		rc = render_compact(t, b, width, color);
	cfl_buf_release(&full);
	return rc;
}

/* ---- table: leaderboard order ---- */

static int by_score(const void *a, const void *b)
{
	const struct cfl_table_row *x = a, *y = b;
	double sx = x->score[0], sy = y->score[0];

	if (isnan(sx) != isnan(sy))
		return isnan(sx) ? 1 : -1;
	/* scores equal but for rounding noise are ties, as in is_best */
	if (!isnan(sx) && fabs(sx - sy) > 1e-12 * fmax(1.0, fmax(fabs(sx), fabs(sy))))
		return sx > sy ? -1 : 1;
	return 0;
}

void cfl_table_sort_by_score(struct cfl_table *t)
{
	cfl_table_compute(t);
	if (!t->n_metrics || t->n_rows < 2)
		return;
	/* insertion sort: stable, and tables are small */
	for (size_t i = 1; i < t->n_rows; i++) {
		struct cfl_table_row r = t->rows[i];
		size_t j = i;

		while (j > 0 && by_score(&t->rows[j - 1], &r) > 0) {
			t->rows[j] = t->rows[j - 1];
			j--;
		}
		t->rows[j] = r;
	}
}

/* ---- table: parameters and failed attempts ---- */

/* At most this many failed attempts in the text formats (cfl export and
 * the other formats have them all). */
#define MAX_TEXT_FAILURES 20

/* The name of the row a failed attempt belongs to: its candidate's, else
 * its model's (a repeat run names rows by model). */
static const char *failure_row(const struct cfl_table *t,
			       const struct cfl_attempt_info *a)
{
	for (size_t i = 0; i < t->n_rows; i++)
		if (!strcmp(t->rows[i].name, a->hex))
			return a->hex;
	return a->model;
}

/* What became of the trial after the attempt, in words. */
static const char *outcome_words(const char *outcome)
{
	return !strcmp(outcome, "queued") ? "retried" : outcome;
}

static int text_failures(const struct cfl_table *t, struct cfl_buf *b)
{
	size_t n = t->n_failures < MAX_TEXT_FAILURES ? t->n_failures
						     : MAX_TEXT_FAILURES;

	if (!t->n_failures)
		return 0;
	if (cfl_buf_printf(b, "Failed attempts (%zu):\n", t->n_failures))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct cfl_attempt_info *a = &t->failures[i];

		if (cfl_buf_printf(b, "  %s  repeat %d", failure_row(t, a), a->repeat) ||
		    (a->fold >= 0 && cfl_buf_printf(b, "  fold %d", a->fold)) ||
		    cfl_buf_printf(b, "  attempt %d  %s  %s: %s\n", a->attempt,
				   a->worker[0] ? a->worker : "-",
				   outcome_words(a->outcome), a->reason))
			return -1;
	}
	if (n < t->n_failures &&
	    cfl_buf_printf(b, "  ... and %zu more (cfl export RUN lists every "
			   "trial)\n", t->n_failures - n))
		return -1;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every parameter name of the rows, sorted, into *keys (malloc'd, names
 * not owned).  0 (n 0 when no row has parameters) or -1. */
static int param_keys(const struct cfl_table *t, const char ***keys, size_t *n)
{
	size_t cap = 0, k = 0;

	*keys = NULL;
	*n = 0;
	for (size_t i = 0; i < t->n_rows; i++)
		cap += t->rows[i].params ? t->rows[i].params->n : 0;
	if (!cap)
		return 0;
	if (!(*keys = malloc(cap * sizeof(**keys))))
		return -1;
	for (size_t i = 0; i < t->n_rows; i++)
		for (size_t j = 0; t->rows[i].params && j < t->rows[i].params->n; j++)
			(*keys)[k++] = t->rows[i].params->kv[j].key;
	qsort(*keys, k, sizeof(**keys), cmp_key);
	for (size_t i = 0; i < k; i++)
		if (!*n || strcmp((*keys)[*n - 1], (*keys)[i]))
			(*keys)[(*n)++] = (*keys)[i];
	return 0;
}

static const char *row_param(const struct cfl_table_row *r, const char *key)
{
	return r->params ? cfl_params_get(r->params, key) : NULL;
}

/* ---- table: Markdown, CSV, JSON ---- */

/* Markdown cell text: '|' escaped. */
static int md_text(struct cfl_buf *b, const char *s)
{
	for (; *s; s++)
		if ((*s == '|' && cfl_buf_puts(b, "\\|")) ||
		    (*s != '|' && cfl_buf_append(b, s, 1)))
			return -1;
	return 0;
}

/* The rows' parameters as a second table: a row per table row, a column
 * per parameter. */
static int md_params(const struct cfl_table *t, struct cfl_buf *b)
{
	const char **keys;
	size_t n;
	int rc = 0;

	if (param_keys(t, &keys, &n))
		return -1;
	if (!n)
		return 0;
	rc |= cfl_buf_puts(b, "\n| parameters |");
	for (size_t k = 0; k < n; k++)
		rc |= cfl_buf_puts(b, " ") || md_text(b, keys[k]) || cfl_buf_puts(b, " |");
	rc |= cfl_buf_puts(b, "\n|:---|");
	for (size_t k = 0; k < n; k++)
		rc |= cfl_buf_puts(b, ":---|");
	rc |= cfl_buf_puts(b, "\n");
	for (size_t i = 0; !rc && i < t->n_rows; i++) {
		if (!t->rows[i].params)
			continue;
		rc |= cfl_buf_puts(b, "| ") || md_text(b, t->rows[i].name) ||
		      cfl_buf_puts(b, " |");
		for (size_t k = 0; k < n; k++) {
			const char *v = row_param(&t->rows[i], keys[k]);

			rc |= cfl_buf_puts(b, " ") || md_text(b, v ? v : "") ||
			      cfl_buf_puts(b, " |");
		}
		rc |= cfl_buf_puts(b, "\n");
	}
	free(keys);
	return rc;
}

static int md_failures(const struct cfl_table *t, struct cfl_buf *b)
{
	int folds = 0;

	if (!t->n_failures)
		return 0;
	for (size_t i = 0; i < t->n_failures; i++)
		folds |= t->failures[i].fold >= 0;
	if (cfl_buf_printf(b, "\n| failed attempt | repeat |%s attempt | worker | "
			   "outcome | reason |\n|:---|---:|%s---:|:---|:---|:---|\n",
			   folds ? " fold |" : "", folds ? "---:|" : ""))
		return -1;
	for (size_t i = 0; i < t->n_failures; i++) {
		const struct cfl_attempt_info *a = &t->failures[i];

		if (cfl_buf_puts(b, "| ") || md_text(b, failure_row(t, a)) ||
		    cfl_buf_printf(b, " | %d |", a->repeat) ||
		    (folds && cfl_buf_printf(b, " %d |", a->fold)) ||
		    cfl_buf_printf(b, " %d | ", a->attempt) ||
		    md_text(b, a->worker[0] ? a->worker : "-") ||
		    cfl_buf_printf(b, " | %s | ", outcome_words(a->outcome)) ||
		    md_text(b, a->reason) || cfl_buf_puts(b, " |\n"))
			return -1;
	}
	return 0;
}

static int render_md(struct cfl_table *t, struct cfl_buf *b)
{
	int failed = any_failed(t);

	if (cfl_buf_puts(b, "| metrics |"))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		for (int s = 0; s < 3; s++)
			if (cfl_buf_puts(b, " ") || md_text(b, t->metric_names[m]) ||
			    cfl_buf_printf(b, " %s |", stat_names[s]))
				return -1;
	if ((failed && cfl_buf_puts(b, " failed |")) ||
	    cfl_buf_puts(b, "\n|:---|"))
		return -1;
	for (size_t c = 0; c < 3 * t->n_metrics + (size_t)failed; c++)
		if (cfl_buf_puts(b, "---:|"))
			return -1;
	if (cfl_buf_puts(b, "\n"))
		return -1;
	for (size_t i = 0; i < t->n_rows; i++) {
		if (cfl_buf_puts(b, "| ") || md_text(b, t->rows[i].name) ||
		    cfl_buf_puts(b, " |"))
			return -1;
		for (size_t m = 0; m < t->n_metrics; m++)
			for (int s = 0; s < 3; s++) {
				double v = stat_value(&t->rows[i], m, s);
				const char *bold = cfl_table_is_best(
					t, i, m, (enum cfl_table_stat)s) ? "**" : "";

				if (isnan(v) ? cfl_buf_puts(b, " nan |")
					     : cfl_buf_printf(b, " %s%.6f%s |",
							      bold, v, bold))
					return -1;
			}
		if ((failed && cfl_buf_printf(b, " %zu |", t->rows[i].n_failed)) ||
		    cfl_buf_puts(b, "\n"))
			return -1;
	}
	return md_params(t, b) || md_failures(t, b) ? -1 : 0;
}

/* A CSV field, quoted when it holds a comma, quote or line break. */
static int csv_text(struct cfl_buf *b, const char *s)
{
	if (!strpbrk(s, ",\"\r\n"))
		return cfl_buf_puts(b, s);
	if (cfl_buf_puts(b, "\""))
		return -1;
	for (; *s; s++)
		if (cfl_buf_append(b, s, 1) || (*s == '"' && cfl_buf_puts(b, "\"")))
			return -1;
	return cfl_buf_puts(b, "\"");
}

static int put_double(struct cfl_buf *b, double v, const char *nan_text)
{
	if (isnan(v))
		return cfl_buf_puts(b, nan_text);
	return cfl_buf_printf(b, "%.17g", v == 0 ? 0.0 : v);
}

/* A row's failed attempts in one CSV cell: "repeat 1 attempt 1 on
 * local:2, retried: reason", " | " between them. */
static int csv_failures(const struct cfl_table *t, const char *row,
			struct cfl_buf *b)
{
	struct cfl_buf cell;
	int rc = 0, first = 1;

	cfl_buf_init(&cell);
	rc |= cfl_buf_puts(&cell, "");
	for (size_t i = 0; !rc && i < t->n_failures; i++) {
		const struct cfl_attempt_info *a = &t->failures[i];

		if (strcmp(failure_row(t, a), row))
			continue;
		rc |= cfl_buf_printf(&cell, "%srepeat %d", first ? "" : " | ", a->repeat) ||
		      (a->fold >= 0 && cfl_buf_printf(&cell, " fold %d", a->fold)) ||
		      cfl_buf_printf(&cell, " attempt %d on %s, %s: %s", a->attempt,
				     a->worker[0] ? a->worker : "-",
				     outcome_words(a->outcome), a->reason);
		first = 0;
	}
	rc = rc || cfl_buf_puts(b, ",") || csv_text(b, cell.data);
	cfl_buf_release(&cell);
	return rc;
}

static int render_csv_keys(struct cfl_table *t, const char **keys,
			   size_t n_keys, struct cfl_buf *b)
{
	if (cfl_buf_puts(b, "name,failed"))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		for (int s = 0; s < 3; s++) {
			char col[128];

			snprintf(col, sizeof(col), "%s_%s", t->metric_names[m],
				 stat_names[s]);
			if (cfl_buf_puts(b, ",") || csv_text(b, col))
				return -1;
		}
	for (size_t k = 0; k < n_keys; k++) {
		char col[128];

		snprintf(col, sizeof(col), "params_%s", keys[k]);
		if (cfl_buf_puts(b, ",") || csv_text(b, col))
			return -1;
	}
	if ((t->n_failures && cfl_buf_puts(b, ",failures")) ||
	    cfl_buf_puts(b, "\n"))
		return -1;
	for (size_t i = 0; i < t->n_rows; i++) {
		if (csv_text(b, t->rows[i].name) ||
		    cfl_buf_printf(b, ",%zu", t->rows[i].n_failed))
			return -1;
		for (size_t m = 0; m < t->n_metrics; m++)
			for (int s = 0; s < 3; s++)
				if (cfl_buf_puts(b, ",") ||
				    put_double(b, stat_value(&t->rows[i], m, s),
					       "nan"))
					return -1;
		for (size_t k = 0; k < n_keys; k++) {
			const char *v = row_param(&t->rows[i], keys[k]);

			if (cfl_buf_puts(b, ",") || csv_text(b, v ? v : ""))
				return -1;
		}
		if ((t->n_failures && csv_failures(t, t->rows[i].name, b)) ||
		    cfl_buf_puts(b, "\n"))
			return -1;
	}
	return 0;
}

static int render_csv(struct cfl_table *t, struct cfl_buf *b)
{
	const char **keys;
	size_t n_keys;
	int rc;

	if (param_keys(t, &keys, &n_keys))
		return -1;
	rc = render_csv_keys(t, keys, n_keys, b);
	free(keys);
	return rc;
}

static int json_string(struct cfl_buf *b, const char *s)
{
	if (cfl_buf_puts(b, "\""))
		return -1;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int rc;

		if (c == '"' || c == '\\')
			rc = cfl_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			rc = cfl_buf_printf(b, "\\u%04x", c);
		else
			rc = cfl_buf_append(b, s, 1);
		if (rc)
			return -1;
	}
	return cfl_buf_puts(b, "\"");
}

/* A whole JSON number literal (as the store writes numbers in params). */
static int is_json_number(const char *s)
{
	size_t n = cfl_json_number_len(s);

	return n && !s[n];
}

/* , "params": {...} of a row with parameters. */
static int json_params(struct cfl_buf *b, const struct cfl_params *p)
{
	if (!p)
		return 0;
	if (cfl_buf_puts(b, ", \"params\": {"))
		return -1;
	for (size_t k = 0; k < p->n; k++)
		if ((k && cfl_buf_puts(b, ", ")) || json_string(b, p->kv[k].key) ||
		    cfl_buf_puts(b, ": ") ||
		    (is_json_number(p->kv[k].value) ? cfl_buf_puts(b, p->kv[k].value)
						    : json_string(b, p->kv[k].value)))
			return -1;
	return cfl_buf_puts(b, "}");
}

static int render_json(struct cfl_table *t, struct cfl_buf *b)
{
	if (cfl_buf_puts(b, "{\n  \"metrics\": ["))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		if (cfl_buf_puts(b, m ? ", {\"name\": " : "{\"name\": ") ||
		    json_string(b, t->metric_names[m]) ||
		    cfl_buf_printf(b, ", \"sign\": %d}", t->signs[m]))
			return -1;
	if (cfl_buf_puts(b, "],\n  \"rows\": ["))
		return -1;
	for (size_t i = 0; i < t->n_rows; i++) {
		const struct cfl_table_row *r = &t->rows[i];

		if (cfl_buf_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ") ||
		    json_string(b, r->name) ||
		    cfl_buf_printf(b, ", \"failed\": %zu, \"metrics\": {",
				   r->n_failed))
			return -1;
		for (size_t m = 0; m < t->n_metrics; m++) {
			int first = 1;

			if ((m && cfl_buf_puts(b, ", ")) ||
			    json_string(b, t->metric_names[m]) ||
			    cfl_buf_puts(b, ": {\"values\": ["))
				return -1;
			for (size_t k = 0; k < r->n_values[m]; k++)
				if ((k && cfl_buf_puts(b, ", ")) ||
				    put_double(b, r->values[m][k], "null"))
					return -1;
			if (cfl_buf_puts(b, "]"))
				return -1;
			for (int s = 0; s < 3; s++)
				if (cfl_buf_printf(b, ", \"%s\": ", stat_names[s]) ||
				    put_double(b, stat_value(r, m, s), "null"))
					return -1;
			if (cfl_buf_puts(b, ", \"best\": ["))
				return -1;
			for (int s = 0; s < 3; s++)
				if (cfl_table_is_best(t, i, m,
						      (enum cfl_table_stat)s)) {
					if (cfl_buf_printf(b, "%s\"%s\"",
							   first ? "" : ", ",
							   stat_names[s]))
						return -1;
					first = 0;
				}
			if (cfl_buf_puts(b, "]}"))
				return -1;
		}
		if (cfl_buf_puts(b, "}") || json_params(b, r->params) ||
		    cfl_buf_puts(b, "}"))
			return -1;
	}
	if (cfl_buf_puts(b, t->n_rows ? "\n  ]" : "]"))
		return -1;
	if (t->n_failures) {
		if (cfl_buf_puts(b, ",\n  \"failures\": ["))
			return -1;
		for (size_t i = 0; i < t->n_failures; i++) {
			const struct cfl_attempt_info *a = &t->failures[i];

			if (cfl_buf_puts(b, i ? ",\n    {\"row\": " : "\n    {\"row\": ") ||
			    json_string(b, failure_row(t, a)) ||
			    cfl_buf_puts(b, ", \"model\": ") || json_string(b, a->model) ||
			    cfl_buf_puts(b, ", \"candidate\": ") || json_string(b, a->hex) ||
			    cfl_buf_printf(b, ", \"repeat\": %d, \"fold\": %d, "
					   "\"attempt\": %d, \"worker\": ", a->repeat,
					   a->fold, a->attempt) ||
			    (a->worker[0] ? json_string(b, a->worker)
					  : cfl_buf_puts(b, "null")) ||
			    cfl_buf_puts(b, ", \"outcome\": ") ||
			    json_string(b, a->outcome) ||
			    cfl_buf_puts(b, ", \"reason\": ") ||
			    json_string(b, a->reason) || cfl_buf_puts(b, "}"))
				return -1;
		}
		if (cfl_buf_puts(b, "\n  ]"))
			return -1;
	}
	return cfl_buf_puts(b, "\n}\n");
}

int cfl_table_format_lookup(const char *name)
{
	if (!name)
		return -1;
	if (strcmp(name, "table") == 0 || strcmp(name, "text") == 0)
		return CFL_TABLE_TEXT;
	if (strcmp(name, "md") == 0 || strcmp(name, "markdown") == 0)
		return CFL_TABLE_MD;
	if (strcmp(name, "csv") == 0)
		return CFL_TABLE_CSV;
	if (strcmp(name, "json") == 0)
		return CFL_TABLE_JSON;
	if (strcmp(name, "compact") == 0)
		return CFL_TABLE_COMPACT;
	return -1;
}

int cfl_table_render(struct cfl_table *t, enum cfl_table_format fmt,
		     struct cfl_buf *out, struct cfl_err *err)
{
	return cfl_table_render_styled(t, fmt, NULL, out, err);
}

int cfl_table_render_styled(struct cfl_table *t, enum cfl_table_format fmt,
			    const struct cfl_table_style *style,
			    struct cfl_buf *out, struct cfl_err *err)
{
	static const struct cfl_table_style plain;
	int rc;

	if (!style)
		style = &plain;
	cfl_table_compute(t);
	if (style->sort_score)
		cfl_table_sort_by_score(t);
	switch (fmt) {
	case CFL_TABLE_TEXT:
		rc = render_fitted(t, out, style->width, style->color);
		break;
	case CFL_TABLE_COMPACT:
		rc = render_compact(t, out, style->width, style->color);
		break;
	case CFL_TABLE_MD: rc = render_md(t, out); break;
	case CFL_TABLE_CSV: rc = render_csv(t, out); break;
	case CFL_TABLE_JSON: rc = render_json(t, out); break;
	default: return cfl_err_set(err, "unknown table format %d", (int)fmt);
	}
	if (!rc && (fmt == CFL_TABLE_TEXT || fmt == CFL_TABLE_COMPACT))
		rc = text_failures(t, out);
	if (rc)
		return cfl_err_set(err, "out of memory rendering a table");
	return 0;
}
