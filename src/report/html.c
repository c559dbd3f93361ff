/*
 * The HTML report of a stored run: one self-contained page (inline CSS and
 * inline SVG only: no script, no link, nothing fetched, so it opens the
 * same offline, from a mail attachment or a CI artefact).  It shows the
 * run's facts, the same results table the run printed (cfl_report_run's
 * rows and best cells), the values over repeats as box and strip plots,
 * the ensembles on validation and test, and for tune runs each candidate's
 * score in order and against each parameter.  Reads the store; never
 * prints; the plots are drawn by svg.c.
 */
#include "cfl/report.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfl/metrics.h"
#include "cfl/study.h"
#include "internal.h"
#include "svg.h"

static const char style[] =
	"body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222}"
	"h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}"
	"table{border-collapse:collapse;margin:8px 0;font-size:13px}"
	"th,td{border:1px solid #ccc;padding:3px 8px}td.num{text-align:right;"
	"font-variant-numeric:tabular-nums}th{background:#f3f3f3}"
	"td.best,tr.first td{font-weight:bold;background:#fff3c4}tr.ens td:first-child{color:#c0392b}"
	"dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:13px}"
	"dt{color:#666}dd{margin:0;font-family:monospace;white-space:pre-wrap}"
	".chart{display:block;margin:10px 0}.chart.small{display:inline-block;margin:10px 10px 0 0}"
	".note{color:#666;font-size:13px}"
	"details.members{margin:8px 0}summary{font-size:14px;cursor:pointer}"
	"td.no{color:#aaa;text-align:center}td.in{text-align:center}"
	"dl.about dd{font-family:inherit}details.coefs{margin:4px 0 8px 16px}"
	"table.failures td:last-child{font-family:monospace;white-space:pre-wrap}";

#define TRY(x)                                                               \
	do {                                                                 \
		if (x)                                                       \
			goto nomem;                                          \
	} while (0)

static int put_date(struct cfl_buf *b, double when)
{
	time_t t = (time_t)when;
	struct tm tm;
	char s[64];

	if (when <= 0)
		return cfl_buf_puts(b, "-");
	gmtime_r(&t, &tm);
	strftime(s, sizeof(s), "%Y-%m-%d %H:%M:%S UTC", &tm);
	return cfl_buf_puts(b, s);
}

/* Numbers on the page: the shortest form that reads back exactly, or 6
 * significant digits (0.2, not 0.20000000000000001). */
static int put_num(struct cfl_buf *b, double v)
{
	return cfl_svg_num(b, v);
}

static int fact(struct cfl_buf *b, const char *key, const char *value)
{
	return cfl_buf_printf(b, "<dt>%s</dt><dd>", key) ||
	       cfl_svg_escape(b, value && value[0] ? value : "-") ||
	       cfl_buf_puts(b, "</dd>\n");
}

static int word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* s escaped, with each float in it ("0.20000000000000001", "1e-05" as a
 * whole word: not part of a name, a version or an integer such as a 64-bit
 * seed) at put_num's precision. */
static int put_text_nums(struct cfl_buf *b, const char *s)
{
	const char *p = s;

	while (*p) {
		int starts = isdigit((unsigned char)*p) ||
			     ((*p == '-' || *p == '.') && isdigit((unsigned char)p[1]));
		char *e;
		double v;

		if (starts && (p == s || (!word_char(p[-1]) && p[-1] != '-'))) {
			v = strtod(p, &e);
			if (e > p && !word_char(*e) && isfinite(v) &&
			    !memchr(p, 'x', (size_t)(e - p)) &&
			    !memchr(p, 'X', (size_t)(e - p)) &&
			    (memchr(p, '.', (size_t)(e - p)) ||
			     memchr(p, 'e', (size_t)(e - p)) ||
			     memchr(p, 'E', (size_t)(e - p)))) {
				if (put_num(b, v))
					return -1;
				p = e;
				continue;
			}
		}
		/* copy up to the end of this word */
		do {
			char c[2] = { *p, 0 };

			if (cfl_svg_escape(b, c))
				return -1;
			p++;
		} while (*p && word_char(*p) && word_char(p[-1]));
	}
	return 0;
}

/* The run's config (key=value lines), keys without a value left out and
 * numbers at put_num's precision. */
static int config_fact(struct cfl_buf *b, const char *config)
{
	const char *p = config ? config : "";
	int any = 0, rc = 0;

	if (cfl_buf_puts(b, "<dt>config</dt><dd>"))
		return -1;
	while (*p && !rc) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, len), *eq;

		p += len + (nl != NULL);
		if (!line)
			return -1;
		eq = strchr(line, '=');
		if (eq && eq[1]) {
			*eq = 0;
			rc = cfl_svg_escape(b, line) || cfl_buf_puts(b, "=") ||
			     put_text_nums(b, eq + 1) || cfl_buf_puts(b, "\n");
			any = 1;
		}
		free(line);
	}
	return rc || (!any && cfl_buf_puts(b, "-")) || cfl_buf_puts(b, "</dd>\n")
		       ? -1 : 0;
}

/* ---- html: tables of a run ---- */

/* What to put in a table of a run. */
struct table_spec {
	enum cfl_store_split split;
	int by_cand;		/* rows by candidate hex, else by model */
	int lo, hi;		/* trials with lo <= repeat < hi (ensembles always) */
	int all_cands;		/* a row per candidate even without values */
	int value_sign;		/* direction of a metric cfl does not know
				 * (a tune --command value) */
};

/* cfl_table_from_run with a repeat range: a tune run's search is repeats
 * below its num_repeat, its refit the repeats from there (as
 * tune_report.c reads them). */
static int table_of(struct cfl_table *t, struct cfl_store *st, int64_t run_id,
		    const struct table_spec *sp, struct cfl_err *err)
{
	struct cfl_candidate_info *cands = NULL;
	struct cfl_metric_row *rows = NULL;
	size_t n_cands = 0, n_rows = 0;
	int rc = -1;

	if (cfl_store_candidates(st, run_id, &cands, &n_cands, err) ||
	    cfl_store_run_metrics(st, run_id, sp->split, &rows, &n_rows, err))
		goto out;
	for (size_t i = 0; sp->all_cands && i < n_cands; i++) {
		int r = cfl_table_row(t, sp->by_cand ? cands[i].hex : cands[i].model,
				      err);

		if (r < 0)
			goto out;
		cfl_table_set_failed(t, r, t->rows[r].n_failed + cands[i].n_failed);
	}
	for (size_t i = 0; i < n_rows; i++) {
		int id = cfl_metric_lookup(rows[i].metric), m, r;

		if (!rows[i].ensemble_id &&
		    (rows[i].repeat < sp->lo || rows[i].repeat >= sp->hi))
			continue;
		m = cfl_table_metric(t, rows[i].metric,
				     id >= 0 ? cfl_metric_info(id)->sign : sp->value_sign,
				     err);
		r = cfl_table_row(t, sp->by_cand && rows[i].hex[0] ? rows[i].hex
								   : rows[i].model, err);
		if (m < 0 || r < 0 || cfl_table_add(t, r, m, rows[i].value, err))
			goto out;
	}
	rc = 0;
out:
	cfl_candidates_free(cands, n_cands);
	free(rows);
	return rc;
}

/* ---- html: the results table ---- */

static int is_ensemble(char *const *ens, size_t n_ens, const char *name)
{
	for (size_t i = 0; i < n_ens; i++)
		if (strcmp(ens[i], name) == 0)
			return 1;
	return 0;
}

/* The table as cfl_table_render shows it: mean, std, score per metric,
 * best cells marked, a failed column when some row has failures. */
static int html_table(struct cfl_buf *b, struct cfl_table *t, char *const *ens,
		      size_t n_ens)
{
	static const char *const stats[3] = { "mean", "std", "score" };
	int failed = 0;

	cfl_table_compute(t);
	for (size_t r = 0; r < t->n_rows; r++)
		failed |= t->rows[r].n_failed > 0;
	if (cfl_buf_puts(b, "<table class=\"results\">\n<tr><th rowspan=\"2\">row</th>"))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		if (cfl_buf_printf(b, "<th colspan=\"3\">%s (%s)</th>",
				   t->metric_names[m], t->signs[m] > 0 ? "+" : "-"))
			return -1;
	if ((failed && cfl_buf_puts(b, "<th rowspan=\"2\">failed</th>")) ||
	    cfl_buf_puts(b, "</tr>\n<tr>"))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		for (int s = 0; s < 3; s++)
			if (cfl_buf_printf(b, "<th>%s</th>", stats[s]))
				return -1;
	if (cfl_buf_puts(b, "</tr>\n"))
		return -1;
	for (size_t r = 0; r < t->n_rows; r++) {
		const struct cfl_table_row *row = &t->rows[r];

		if (cfl_buf_printf(b, "<tr%s><td>",
				   is_ensemble(ens, n_ens, row->name) ? " class=\"ens\"" : "") ||
		    cfl_svg_escape(b, row->name) || cfl_buf_puts(b, "</td>"))
			return -1;
		for (size_t m = 0; m < t->n_metrics; m++) {
			const double v[3] = { row->mean[m], row->std[m], row->score[m] };

			for (int s = 0; s < 3; s++)
				if (cfl_buf_printf(b, "<td class=\"num%s\">",
						   cfl_table_is_best(t, r, m, s) ? " best" : "") ||
				    put_num(b, v[s]) || cfl_buf_puts(b, "</td>"))
					return -1;
		}
		if ((failed && cfl_buf_printf(b, "<td class=\"num\">%zu</td>",
					      row->n_failed)) ||
		    cfl_buf_puts(b, "</tr>\n"))
			return -1;
	}
	return cfl_buf_puts(b, "</table>\n");
}

/* Box and strip plots: one chart per metric, one line per row. */
static int distributions(struct cfl_buf *b, const struct cfl_table *t,
			 char *const *ens, size_t n_ens, const char *split)
{
	const char **names = calloc(t->n_rows + 1, sizeof(*names));
	const double **vals = calloc(t->n_rows + 1, sizeof(*vals));
	size_t *nv = calloc(t->n_rows + 1, sizeof(*nv));
	int *hl = calloc(t->n_rows + 1, sizeof(*hl)), rc = -1;

	if (!names || !vals || !nv || !hl)
		goto out;
	for (size_t r = 0; r < t->n_rows; r++) {
		names[r] = t->rows[r].name;
		hl[r] = is_ensemble(ens, n_ens, names[r]);
	}
	for (size_t m = 0; m < t->n_metrics; m++) {
		char title[160], xl[160];

		for (size_t r = 0; r < t->n_rows; r++) {
			vals[r] = t->rows[r].values[m];
			nv[r] = t->rows[r].n_values[m];
		}
		snprintf(title, sizeof(title), "%s on %s, each repeat a point",
			 t->metric_names[m], split);
		snprintf(xl, sizeof(xl), "%s (%s)", t->metric_names[m],
			 t->signs[m] > 0 ? "higher is better" : "lower is better");
		if (cfl_svg_box_strip(b, title, xl, t->n_rows, names, nv, vals, hl))
			goto out;
	}
	rc = 0;
out:
	free(names);
	free(vals);
	free(nv);
	free(hl);
	return rc;
}

/* ---- html: ensembles ---- */

/* Names of the ensembles among metric rows, in order of first appearance
 * (malloc'd strings).  *n_ens gets their count. */
static int ensemble_names(const struct cfl_metric_row *rows, size_t n_rows,
			  char ***ens, size_t *n_ens, struct cfl_err *err)
{
	*ens = NULL;
	*n_ens = 0;
	for (size_t i = 0; i < n_rows; i++) {
		void *p;

		if (!rows[i].ensemble_id || is_ensemble(*ens, *n_ens, rows[i].model))
			continue;
		if (!(p = cfl_realloc(*ens, (*n_ens + 1) * sizeof(char *), err)))
			return -1;
		*ens = p;
		if (!((*ens)[*n_ens] = cfl_strdup(rows[i].model, err)))
			return -1;
		(*n_ens)++;
	}
	return 0;
}

/* The value of (ensemble name, metric) among rows, or NaN. */
static double ens_value(const struct cfl_metric_row *rows, size_t n,
			const char *name, const char *metric)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].ensemble_id && strcmp(rows[i].model, name) == 0 &&
		    strcmp(rows[i].metric, metric) == 0)
			return rows[i].value;
	return NAN;
}

static int ensembles_table(struct cfl_buf *b, const struct cfl_table *t,
			   char *const *ens, size_t n_ens,
			   const struct cfl_metric_row *valid, size_t n_valid,
			   const struct cfl_metric_row *test, size_t n_test)
{
	int has_valid = 0;

	/* a run without a validation part: no column of "nan" */
	for (size_t e = 0; e < n_ens && !has_valid; e++)
		for (size_t m = 0; m < t->n_metrics && !has_valid; m++)
			has_valid = !isnan(ens_value(valid, n_valid, ens[e],
						     t->metric_names[m]));
	if (cfl_buf_puts(b, "<table class=\"ensembles\">\n<tr><th rowspan=\"2\">ensemble</th>"))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		if (cfl_buf_printf(b, "<th colspan=\"%d\">%s</th>", has_valid ? 2 : 1,
				   t->metric_names[m]))
			return -1;
	if (cfl_buf_puts(b, "</tr>\n<tr>"))
		return -1;
	for (size_t m = 0; m < t->n_metrics; m++)
		if (cfl_buf_puts(b, has_valid ? "<th>valid</th><th>test</th>" : "<th>test</th>"))
			return -1;
	if (cfl_buf_puts(b, "</tr>\n"))
		return -1;
	for (size_t e = 0; e < n_ens; e++) {
		if (cfl_buf_puts(b, "<tr class=\"ens\"><td>") ||
		    cfl_svg_escape(b, ens[e]) || cfl_buf_puts(b, "</td>"))
			return -1;
		for (size_t m = 0; m < t->n_metrics; m++) {
			if (has_valid &&
			    (cfl_buf_puts(b, "<td class=\"num\">") ||
			     put_num(b, ens_value(valid, n_valid, ens[e],
						  t->metric_names[m])) ||
			     cfl_buf_puts(b, "</td>")))
				return -1;
			if (cfl_buf_puts(b, "<td class=\"num\">") ||
			    put_num(b, ens_value(test, n_test, ens[e],
						 t->metric_names[m])) ||
			    cfl_buf_puts(b, "</td>"))
				return -1;
		}
		if (cfl_buf_puts(b, "</tr>\n"))
			return -1;
	}
	return cfl_buf_printf(b, "</table>\n<p class=\"note\">Each ensemble is one "
			      "model built from the stored predictions of the "
			      "trials, so its std is 0. Weights and meta-learners "
			      "are fitted on %s rows, never on test rows.%s</p>\n",
			      has_valid ? "validation or out-of-fold"
					: "out-of-fold (or no)",
			      has_valid ? "" : " The run held out no validation "
					       "part, so there is no valid column.");
}

/* ---- html: the ensembles' members ---- */

/* What a number in an ensemble's column of the members table means. */
static const char *member_value_meaning(const char *method)
{
	if (strcmp(method, "mean") == 0)
		return "equal weights";
	if (strcmp(method, "weighted") == 0)
		return "weights from each member's validation score on the "
		       "first metric, summing to 1";
	if (strcmp(method, "greedy") == 0)
		return "the share of greedy selection's picks on validation "
		       "(with replacement; 0: never picked)";
	if (strcmp(method, "stacking") == 0)
		return "weights fitted on out-of-fold or validation rows, "
		       "non-negative and summing to 1 (the mean's when those "
		       "rows are few); for runs that stored a linear "
		       "meta-learner's coefficients, the member's share of them "
		       "(sum of |coefficient| on its predictions over that of "
		       "all members), the raw coefficients in the table below "
		       "the members";
	if (strcmp(method, "vote") == 0)
		return "one vote each";
	return "";
}

static int same_trials(const struct report_member *a,
		       const struct report_member *b)
{
	return a->n_trials == b->n_trials &&
	       memcmp(a->trials, b->trials, a->n_trials * sizeof(int64_t)) == 0;
}

static const struct cfl_trial_info *find_trial(const struct cfl_trial_info *tr,
					       size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (tr[i].id == id)
			return &tr[i];
	return NULL;
}

static const struct cfl_candidate_info *
find_cand(const struct cfl_candidate_info *c, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].id == id)
			return &c[i];
	return NULL;
}

/* The cells that say who member m is: model (and its parameters), repeat,
 * folds, seed and trial ids, from the run's trials and candidates. */
static int member_cells(struct cfl_buf *b, const struct report_member *m,
			const struct cfl_trial_info *tr, size_t n_tr,
			const struct cfl_candidate_info *c, size_t n_c)
{
	const struct cfl_trial_info *t0 = find_trial(tr, n_tr, m->trials[0]);
	const struct cfl_candidate_info *cand = t0 ? find_cand(c, n_c, t0->cand_id) : NULL;

	if (cfl_buf_puts(b, "<td>"))
		return -1;
	if (!cand)
		return cfl_buf_printf(b, "?</td><td class=\"num\">-</td><td>-</td>"
				      "<td class=\"num\">-</td><td>%lld (not a trial "
				      "of this run)</td>",
				      (long long)m->trials[0]);
	if (cfl_svg_escape(b, cand->model) ||
	    (cand->params[0] && (cfl_buf_puts(b, " <span class=\"note\">") ||
				 cfl_svg_escape(b, cand->params) ||
				 cfl_buf_puts(b, "</span>"))) ||
	    cfl_buf_printf(b, "</td><td class=\"num\">%d</td><td>", t0->repeat))
		return -1;
	for (size_t i = 0, k = 0; i < m->n_trials; i++) {
		const struct cfl_trial_info *t = find_trial(tr, n_tr, m->trials[i]);

		if (t && t->fold >= 0 &&
		    cfl_buf_printf(b, "%s%d", k++ ? ", " : "", t->fold))
			return -1;
		if (i + 1 == m->n_trials && !k && cfl_buf_puts(b, "-"))
			return -1;
	}
	if (cfl_buf_printf(b, "</td><td class=\"num\">%llu</td><td>",
			   (unsigned long long)t0->seed))
		return -1;
	for (size_t i = 0; i < m->n_trials; i++)
		if (cfl_buf_printf(b, "%s%lld", i ? ", " : "",
				   (long long)m->trials[i]))
			return -1;
	return cfl_buf_puts(b, "</td>");
}

/* The sum of |coefficient| over a member's meta-learner inputs. */
static double coef_mass(const struct report_member *m)
{
	double s = 0;

	for (size_t k = 0; m->coefs && k < m->n_rows * m->n_cols; k++)
		s += fabs(m->coefs[k]);
	return s;
}

/* Member m's cell in an ensemble's column: its weight; for stacking its
 * share of the meta-learner's coefficients (sum of |coefficient| on its
 * inputs over that of every member: one summary figure, the raw
 * coefficients in their own table); a tick when the ensemble records
 * neither. */
static int member_value(struct cfl_buf *b, const struct report_members *ms,
			const struct report_member *m)
{
	if (!m)
		return cfl_buf_puts(b, "<td class=\"no\">&ndash;</td>");
	if (ms->has_coefs) {
		double total = 0;

		for (size_t j = 0; j < ms->n; j++)
			total += coef_mass(&ms->m[j]);
		return cfl_buf_puts(b, "<td class=\"num\">") ||
		       put_num(b, total > 0 ? coef_mass(m) / total : NAN) ||
		       cfl_buf_puts(b, "</td>");
	}
	if (ms->has_weights)
		return cfl_buf_puts(b, "<td class=\"num\">") || put_num(b, m->weight) ||
		       cfl_buf_puts(b, "</td>");
	return cfl_buf_puts(b, "<td class=\"in\">&#10003;</td>");
}

/* A stacking ensemble's raw meta-learner coefficients, one row per member
 * (numbered as in the members table), behind a click. */
static int raw_coefs(struct cfl_buf *b, const char *name,
		     const struct report_members *ms,
		     const struct report_member *const *u, size_t n_u)
{
	if (cfl_buf_puts(b, "<details class=\"coefs\"><summary>") ||
	    cfl_svg_escape(b, name) ||
	    cfl_buf_puts(b, ": the meta-learner's raw coefficients</summary>\n"
			    "<table class=\"coefs\">\n<tr><th>#</th>"
			    "<th>coefficients</th></tr>\n"))
		return -1;
	for (size_t k = 0; k < n_u; k++) {
		const struct report_member *m = NULL;

		for (size_t j = 0; !m && j < ms->n; j++)
			if (same_trials(u[k], &ms->m[j]))
				m = &ms->m[j];
		if (!m)
			continue;
		if (cfl_buf_printf(b, "<tr><td class=\"num\">%zu</td><td class=\"num\">",
				   k + 1))
			return -1;
		for (size_t r = 0; r < m->n_rows; r++) {
			if ((r && cfl_buf_puts(b, "<br>")) ||
			    (m->n_rows > 1 && cfl_buf_printf(b, "class %zu: ", r)))
				return -1;
			for (size_t q = 0; q < m->n_cols; q++)
				if ((q && cfl_buf_puts(b, " ")) ||
				    put_num(b, m->coefs[r * m->n_cols + q]))
					return -1;
		}
		if (cfl_buf_puts(b, "</td></tr>\n"))
			return -1;
	}
	return cfl_buf_puts(b, "</table>\n</details>\n");
}

/* The members of the run's ensembles: one row per member (a trial, or the
 * folds of one model and repeat) with who it is, one column per ensemble
 * with its weight or coefficients there, then what those numbers mean.
 * Ensembles whose members text does not parse (hand-written or foreign)
 * show that text as it is. */
static int members_section(struct cfl_buf *b, struct cfl_store *st,
			   int64_t run_id, struct cfl_err *err)
{
	struct cfl_ensemble_row *e = NULL;
	struct cfl_trial_info *tr = NULL;
	struct cfl_candidate_info *c = NULL;
	struct report_members *ms = NULL;
	const struct report_member **u = NULL;	/* (n_u): every member once */
	size_t n_e = 0, n_tr = 0, n_c = 0, n_u = 0, n_parsed = 0, cap = 0;
	int *parsed = NULL, rc = -1;

	if (cfl_store_ensembles(st, run_id, &e, &n_e, err))
		return -1;
	if (!n_e)
		return 0;
	if (cfl_store_trials(st, run_id, &tr, &n_tr, err) ||
	    cfl_store_candidates(st, run_id, &c, &n_c, err) ||
	    !(ms = cfl_calloc(n_e, sizeof(*ms), err)) ||
	    !(parsed = cfl_calloc(n_e, sizeof(int), err)))
		goto out;
	for (size_t i = 0; i < n_e; i++) {
		int p = cfl_report_members_parse(e[i].members, &ms[i], err);

		if (p < 0)
			goto out;
		parsed[i] = p == 0;
		n_parsed += parsed[i];
		for (size_t j = 0; parsed[i] && j < ms[i].n; j++) {
			size_t k = 0;

			while (k < n_u && !same_trials(u[k], &ms[i].m[j]))
				k++;
			if (k < n_u)
				continue;
			if (n_u == cap) {
				void *q;

				cap = cap ? 2 * cap : 16;
				if (!(q = cfl_realloc(u, cap * sizeof(*u), err)))
					goto out;
				u = q;
			}
			u[n_u++] = &ms[i].m[j];
		}
	}
	/* collapsed: a 60-member run would otherwise fill screens */
	TRY(n_u ? cfl_buf_printf(b, "<details class=\"members\"><summary>"
				    "Members: %zu</summary>\n", n_u)
		: cfl_buf_puts(b, "<details class=\"members\"><summary>"
				  "Members</summary>\n"));
	if (n_parsed) {
		TRY(cfl_buf_puts(b, "<table class=\"members\">\n<tr><th>#</th>"
				    "<th>model</th><th>repeat</th><th>folds</th>"
				    "<th>seed</th><th>trials</th>"));
		for (size_t i = 0; i < n_e; i++) {
			if (!parsed[i])
				continue;
			TRY(cfl_buf_puts(b, "<th>"));
			TRY(cfl_svg_escape(b, e[i].name));
			if (e[i].repeat >= 0)
				TRY(cfl_buf_printf(b, " (repeat %d)", e[i].repeat));
			TRY(cfl_buf_puts(b, ms[i].has_coefs ? "<br>share"
					    : ms[i].has_weights ? "<br>weight" : ""));
			TRY(cfl_buf_puts(b, "</th>"));
		}
		TRY(cfl_buf_puts(b, "</tr>\n"));
		for (size_t k = 0; k < n_u; k++) {
			TRY(cfl_buf_printf(b, "<tr><td class=\"num\">%zu</td>", k + 1));
			TRY(member_cells(b, u[k], tr, n_tr, c, n_c));
			for (size_t i = 0; i < n_e; i++) {
				const struct report_member *m = NULL;

				if (!parsed[i])
					continue;
				for (size_t j = 0; !m && j < ms[i].n; j++)
					if (same_trials(u[k], &ms[i].m[j]))
						m = &ms[i].m[j];
				TRY(member_value(b, &ms[i], m));
			}
			TRY(cfl_buf_puts(b, "</tr>\n"));
		}
		TRY(cfl_buf_puts(b, "</table>\n"));
		for (size_t i = 0; i < n_e; i++)
			if (parsed[i] && ms[i].has_coefs)
				TRY(raw_coefs(b, e[i].name, &ms[i], u, n_u));
	}
	TRY(cfl_buf_puts(b, "<dl class=\"about\">\n"));
	for (size_t i = 0; i < n_e; i++) {
		const char *meaning = member_value_meaning(e[i].method);

		TRY(cfl_buf_puts(b, "<dt>"));
		TRY(cfl_svg_escape(b, e[i].name));
		TRY(cfl_buf_puts(b, "</dt><dd>"));
		if (!parsed[i]) {
			TRY(cfl_buf_puts(b, "members as stored: "));
			TRY(cfl_svg_escape(b, e[i].members[0] ? e[i].members : "-"));
		} else {
			TRY(cfl_buf_printf(b, "%zu members", ms[i].n));
			if (ms[i].about[0]) {
				TRY(cfl_buf_puts(b, "; "));
				TRY(cfl_svg_escape(b, ms[i].about));
			}
			if (meaning[0] && (ms[i].has_weights || ms[i].has_coefs ||
					   strcmp(e[i].method, "vote") == 0))
				TRY(cfl_buf_printf(b, "; %s", meaning));
		}
		TRY(cfl_buf_puts(b, "</dd>\n"));
	}
	TRY(cfl_buf_puts(b, "</dl>\n</details>\n"));
	rc = 0;
	goto out;
nomem:
	cfl_err_set(err, "out of memory");
out:
	for (size_t i = 0; ms && i < n_e; i++)
		cfl_report_members_release(&ms[i]);
	free(ms);
	free(parsed);
	free(u);
	cfl_trials_free(tr, n_tr);
	cfl_candidates_free(c, n_c);
	cfl_ensemble_rows_free(e, n_e);
	return rc;
}

/* ---- html: a search's candidates ---- */

/* The next "key=value" of a stored "k=v,k2=v2" string from p: key and
 * value spans; a value may hold commas ("hidden=64,64"): only a comma
 * followed by "name=" starts the next parameter.  Returns the position
 * after it, or NULL at the end. */
static const char *next_param(const char *p, const char **key, size_t *klen,
			      const char **val, size_t *vlen)
{
	const char *eq, *q;

	if (!p || !*p || !(eq = strchr(p, '=')))
		return NULL;
	for (q = eq + 1; *q; q++) {
		const char *r = q + 1;

		if (*q != ',')
			continue;
		while (*r && (isalnum((unsigned char)*r) || *r == '_' || *r == '.'))
			r++;
		if (r > q + 1 && *r == '=')
			break;
	}
	*key = p;
	*klen = (size_t)(eq - p);
	*val = eq + 1;
	*vlen = (size_t)(q - eq - 1);
	return *q ? q + 1 : q;
}

/* The value of key in "k=v,k2=v2" into out, or 0 when absent. */
static int param_value(const char *params, const char *key, char *out,
		       size_t cap)
{
	const char *k, *v, *p = params;
	size_t kl, vl;

	while ((p = next_param(p, &k, &kl, &v, &vl))) {
		if (kl == strlen(key) && strncmp(k, key, kl) == 0) {
			if (vl >= cap)
				vl = cap - 1;
			memcpy(out, v, vl);
			out[vl] = 0;
			return 1;
		}
	}
	return 0;
}

static int number(const char *s, double *v)
{
	char *end;

	*v = strtod(s, &end);
	return end != s && *end == 0 && isfinite(*v);
}

/* One parameter's values over the candidates: numbers (log scale when
 * positive over 20x or more), or categories in order of first appearance
 * (x the category's index); NaN where a candidate lacks it. */
struct param_col {
	double *x;		/* (n) */
	const char **cats;	/* (n_cats) pointing into vals */
	char (*vals)[64];	/* (n) */
	size_t n_cats;
	int numeric, xlog;
};

static void param_col_release(struct param_col *pc)
{
	free(pc->x);
	free(pc->cats);
	free(pc->vals);
}

static int param_col_fill(struct param_col *pc,
			  const struct cfl_candidate_info *c, size_t n,
			  const char *key)
{
	double lo = INFINITY, hi = -INFINITY;

	memset(pc, 0, sizeof(*pc));
	pc->x = calloc(n + 1, sizeof(double));
	pc->cats = calloc(n + 1, sizeof(char *));
	pc->vals = calloc(n + 1, 64);
	if (!pc->x || !pc->cats || !pc->vals)
		return -1;
	pc->numeric = 1;
	for (size_t i = 0; i < n; i++) {
		if (!param_value(c[i].params, key, pc->vals[i], 64)) {
			pc->x[i] = NAN;
			pc->vals[i][0] = 0;
			continue;
		}
		if (number(pc->vals[i], &pc->x[i])) {
			lo = fmin(lo, pc->x[i]);
			hi = fmax(hi, pc->x[i]);
		} else {
			pc->numeric = 0;
		}
	}
	if (pc->numeric) {
		pc->xlog = lo > 0 && hi / lo >= 20;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k;

		if (!pc->vals[i][0] && pc->x[i] != pc->x[i])
			continue;
		for (k = 0; k < pc->n_cats && strcmp(pc->cats[k], pc->vals[i]); k++)
			;
		if (k == pc->n_cats)
			pc->cats[pc->n_cats++] = pc->vals[i];
		pc->x[i] = (double)k;
	}
	return 0;
}

/* The score against one parameter (choices jittered, each point its
 * candidate as a tooltip). */
static int param_chart(struct cfl_buf *b, const struct param_col *pc, size_t n,
		       const double *score, const char *key,
		       const char *const *tips)
{
	char title[160];

	snprintf(title, sizeof(title), "score against %s", key);
	return cfl_svg_scatter(b, title, key, "score", n, pc->x, score,
			   pc->numeric ? NULL : pc->cats, pc->n_cats, pc->xlog, 0,
			   tips);
}

/* The columns a repeat run's tree models split on: per model, the top
 * impurity importances (shares, mean over its trials) as bars; nothing
 * when no trial stored any.  Permutation importance is left to the text
 * report (its values are metric drops, not shares). */
/* An auto run's leaderboard has bag model:hex (a row of method "bag"). */
static int is_board_bag(const struct cfl_study_auto_summary *sum,
			const char *model, const char *hex)
{
	char name[96];

	snprintf(name, sizeof(name), "%s:%s", model, hex);
	for (size_t i = 0; i < sum->n_rows; i++)
		if (!strcmp(sum->rows[i].method, "bag") && !strcmp(sum->rows[i].name, name))
			return 1;
	return 0;
}

/* only: an auto run's summary (a panel per leaderboard bag), or NULL. */
static int feature_importance(struct cfl_buf *b, struct cfl_store *st,
			      int64_t run_id, const struct cfl_study_auto_summary *only,
			      struct cfl_err *err)
{
	enum { TOP = 10 };
	/* auto: a bag per family, each its few columns that matter */
	size_t top = only ? 5 : TOP;
	struct cfl_importance_row *rows;
	size_t n_rows, i = 0;
	int header = 0, rc = 0;

	if (cfl_store_run_importance(st, run_id, &rows, &n_rows, err))
		return -1;
	while (i < n_rows && !rc) {
		const char *names[TOP];
		double vals[TOP];
		char title[160];
		size_t j = i, n = 0;

		while (j < n_rows && rows[j].cand_id == rows[i].cand_id &&
		       !strcmp(rows[j].kind, rows[i].kind))
			j++;
		if (strcmp(rows[i].kind, "impurity") ||
		    (only && !is_board_bag(only, rows[i].model, rows[i].hex))) {
			i = j;
			continue;
		}
		for (size_t k = i; k < j && n < top; k++, n++) {
			names[n] = rows[k].feature;
			vals[n] = isnan(rows[k].mean) ? 0 : rows[k].mean;
		}
		if (!header)
			rc = cfl_buf_puts(b, "<h2>Feature importance</h2>\n");
		header = 1;
		if (only)	/* auto: a panel per bag, named as the leaderboard */
			snprintf(title, sizeof(title), "%s:%s: impurity importance by "
				 "input column (mean over its folds, top %zu of %zu)",
				 rows[i].model, rows[i].hex, n, j - i);
		else
			snprintf(title, sizeof(title), "%s: impurity importance by input "
				 "column (mean over its trials, top %zu of %zu)",
				 rows[i].model, n, j - i);
		if (!rc)
			rc = cfl_svg_bars(b, title, "share of the splits' gain", n, names, vals);
		i = j;
	}
	free(rows);
	return rc ? cfl_err_set(err, "out of memory") : 0;
}

/* Which parameters matter: the forest's permutation importance of each
 * over the candidates with a score (importance.c). */
static int importance_chart(struct cfl_buf *b, const struct param_col *cols,
			    char *const *keys, size_t n_keys, size_t n,
			    const double *score)
{
	double *x = calloc(n * n_keys + 1, sizeof(double));
	double *y = calloc(n + 1, sizeof(double));
	double *imp = calloc(n_keys + 1, sizeof(double));
	const char **names = calloc(n_keys + 1, sizeof(char *));
	size_t m = 0, *order = calloc(n_keys + 1, sizeof(size_t));
	double *sorted = calloc(n_keys + 1, sizeof(double));
	struct cfl_err err;
	int rc = -1;

	if (!x || !y || !imp || !names || !order || !sorted)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(score[i]))
			continue;
		for (size_t k = 0; k < n_keys; k++) {
			double v = cols[k].x[i];

			x[m * n_keys + k] = cols[k].xlog && v > 0 ? log10(v) : v;
		}
		y[m++] = score[i];
	}
	if (m < 3) {
		rc = cfl_buf_puts(b, "<p class=\"note\">Parameter importance needs "
				     "three candidates with a score or more.</p>\n");
		goto out;
	}
	if (cfl_report_param_importance(x, m, n_keys, y, imp, &err)) {
		rc = cfl_buf_puts(b, "<p class=\"note\">No parameter importance: ") ||
		     cfl_svg_escape(b, err.msg) || cfl_buf_puts(b, ".</p>\n");
		goto out;
	}
	/* most important first */
	for (size_t k = 0; k < n_keys; k++)
		order[k] = k;
	for (size_t a = 1; a < n_keys; a++)
		for (size_t c = a; c > 0 && imp[order[c]] > imp[order[c - 1]]; c--) {
			size_t t = order[c];

			order[c] = order[c - 1];
			order[c - 1] = t;
		}
	for (size_t k = 0; k < n_keys; k++) {
		names[k] = keys[order[k]];
		sorted[k] = imp[order[k]];
	}
	rc = cfl_svg_bars(b, "parameter importance (random forest on parameters -> "
			 "score, permutation importance)", "share of importance",
		      n_keys, names, sorted);
out:
	free(x);
	free(y);
	free(imp);
	free(names);
	free(order);
	free(sorted);
	return rc;
}

/* Every candidate as a line through its parameters and its score. */
static int parallel_chart(struct cfl_buf *b, const struct param_col *cols,
			  char *const *keys, size_t n_keys, size_t n,
			  const double *score, const char *const *tips)
{
	struct svg_axis *ax = calloc(n_keys + 2, sizeof(*ax));
	int rc;

	if (!ax)
		return -1;
	for (size_t k = 0; k < n_keys; k++) {
		ax[k].name = keys[k];
		ax[k].v = cols[k].x;
		ax[k].cats = cols[k].numeric ? NULL : cols[k].cats;
		ax[k].n_cats = cols[k].n_cats;
		ax[k].log = cols[k].xlog;
	}
	ax[n_keys].name = "score";
	ax[n_keys].v = score;
	rc = cfl_svg_parallel(b, "parallel coordinates: each candidate a line, darker "
			     "for a higher score", n_keys + 1, ax, n, score, tips);
	free(ax);
	return rc;
}

static int candidates(struct cfl_buf *b, struct cfl_store *st,
		      const struct cfl_run_info *run, const struct cfl_table *t,
		      struct cfl_err *err)
{
	struct cfl_candidate_info *c = NULL;
	size_t n = 0, n_keys = 0;
	double *seq = NULL, *score = NULL;
	char **keys = NULL, **tips = NULL;
	struct param_col *cols = NULL;
	int rc = -1;

	if (cfl_store_candidates(st, run->id, &c, &n, err))
		return -1;
	if (!n) {
		cfl_candidates_free(c, n);
		return cfl_buf_puts(b, "<p class=\"note\">No candidates.</p>\n") ? 
		       cfl_err_set(err, "out of memory") : 0;
	}
	seq = calloc(n, sizeof(double));
	score = calloc(n, sizeof(double));
	tips = calloc(n, sizeof(char *));
	if (!seq || !score || !tips)
		goto nomem;
	TRY(cfl_buf_puts(b, "<table class=\"candidates\">\n<tr><th>#</th><th>id</th>"
			    "<th>model</th><th>params</th><th>score</th>"
			    "<th>done</th><th>failed</th></tr>\n"));
	for (size_t i = 0; i < n; i++) {
		struct cfl_buf tb;

		seq[i] = (double)c[i].seq;
		score[i] = c[i].has_score ? c[i].score : NAN;
		/* No score from the search: the table's score of the first
		 * metric for this candidate. */
		for (size_t r = 0; !c[i].has_score && t->n_metrics && r < t->n_rows; r++)
			if (strcmp(t->rows[r].name, c[i].hex) == 0)
				score[i] = t->rows[r].score[0];
		cfl_buf_init(&tb);
		if (cfl_buf_printf(&tb, "#%zu %s %s %s: score ", c[i].seq, c[i].hex,
				   c[i].model, c[i].params) ||
		    put_num(&tb, score[i])) {
			cfl_buf_release(&tb);
			goto nomem;
		}
		tips[i] = tb.data;
		TRY(cfl_buf_printf(b, "<tr><td class=\"num\">%zu</td><td>%s</td><td>",
				   c[i].seq, c[i].hex));
		TRY(cfl_svg_escape(b, c[i].model));
		TRY(cfl_buf_puts(b, "</td><td>"));
		TRY(cfl_svg_escape(b, c[i].params));
		TRY(cfl_buf_puts(b, "</td><td class=\"num\">"));
		TRY(put_num(b, score[i]));
		TRY(cfl_buf_printf(b, "</td><td class=\"num\">%zu</td>"
				      "<td class=\"num\">%zu</td></tr>\n",
				   c[i].n_done, c[i].n_failed));
		/* the parameter names, in order of first appearance */
		{
			const char *k, *v, *p = c[i].params;
			size_t len, vl, j;

			while ((p = next_param(p, &k, &len, &v, &vl))) {
				for (j = 0; len && j < n_keys; j++)
					if (strlen(keys[j]) == len && !strncmp(keys[j], k, len))
						break;
				if (len && j == n_keys) {
					void *q = realloc(keys, (n_keys + 1) * sizeof(char *));

					if (!q)
						goto nomem;
					keys = q;
					if (!(keys[n_keys] = strndup(k, len)))
						goto nomem;
					n_keys++;
				}
			}
		}
	}
	TRY(cfl_buf_puts(b, "</table>\n"));
	TRY(cfl_svg_scatter(b, "candidate scores in the order the search proposed them",
			"candidate #", "score", n, seq, score, NULL, 0, 0, 1,
			(const char *const *)tips));
	if (!(cols = calloc(n_keys + 1, sizeof(*cols))))
		goto nomem;
	for (size_t k = 0; k < n_keys; k++)
		TRY(param_col_fill(&cols[k], c, n, keys[k]));
	for (size_t k = 0; k < n_keys; k++)
		TRY(param_chart(b, &cols[k], n, score, keys[k],
				(const char *const *)tips));
	if (n_keys) {
		TRY(cfl_buf_puts(b, "<h2>Parameters</h2>\n"));
		TRY(importance_chart(b, cols, keys, n_keys, n, score));
		TRY(parallel_chart(b, cols, keys, n_keys, n, score,
				   (const char *const *)tips));
	}
	rc = 0;
	goto out;
nomem:
	cfl_err_set(err, "out of memory");
out:
	for (size_t k = 0; cols && k < n_keys; k++)
		param_col_release(&cols[k]);
	free(cols);
	for (size_t k = 0; k < n_keys; k++)
		free(keys[k]);
	free(keys);
	for (size_t i = 0; tips && i < n; i++)
		free(tips[i]);
	free(tips);
	free(seq);
	free(score);
	cfl_candidates_free(c, n);
	return rc;
}

/* ---- html: trials over time, failures ---- */

/* A lane per worker (in order of first start), a bar per attempt that
 * started: done trials from the trials table, failed attempts from
 * trial_attempts.  Idle workers show as gaps, stragglers as long bars. */
static int timeline(struct cfl_buf *b, const struct cfl_trial_info *tr,
		    size_t n_tr, const struct cfl_attempt_info *at, size_t n_at)
{
	struct svg_span *sp = calloc(n_tr + n_at + 1, sizeof(*sp));
	const char **lanes = calloc(n_tr + n_at + 1, sizeof(char *));
	char **tips = calloc(n_tr + n_at + 1, sizeof(char *));
	size_t n_sp = 0, n_lanes = 0;
	double t0 = INFINITY;
	int rc = -1;

	if (!sp || !lanes || !tips)
		goto out;
	for (size_t i = 0; i < n_tr; i++)
		if (tr[i].status == CFL_TRIAL_DONE && tr[i].started > 0)
			t0 = fmin(t0, tr[i].started);
	for (size_t i = 0; i < n_at; i++)
		if (at[i].started > 0)
			t0 = fmin(t0, at[i].started);
	for (size_t i = 0; i < n_tr + n_at; i++) {
		const struct cfl_trial_info *t = i < n_tr ? &tr[i] : NULL;
		const struct cfl_attempt_info *a = t ? NULL : &at[i - n_tr];
		const char *w = t ? t->worker : a->worker;
		double s = t ? t->started : a->started, e = t ? t->finished : a->finished;
		size_t l;
		char tip[256];

		if ((t && t->status != CFL_TRIAL_DONE) || !(s > 0) || !(e >= s))
			continue;
		if (!w[0])
			w = "?";
		for (l = 0; l < n_lanes && strcmp(lanes[l], w); l++)
			;
		if (l == n_lanes)
			lanes[n_lanes++] = w;
		if (t)
			snprintf(tip, sizeof(tip), "trial %lld, repeat %d%s: %.3g s",
				 (long long)t->id, t->repeat,
				 t->fold >= 0 ? " (a fold)" : "", e - s);
		else
			snprintf(tip, sizeof(tip), "%s %s repeat %d attempt %d %s "
				 "after %.3g s: %s", a->model, a->hex, a->repeat,
				 a->attempt, a->outcome, e - s, a->reason);
		if (!(tips[n_sp] = strdup(tip)))
			goto out;
		sp[n_sp] = (struct svg_span){ l, s - t0, e - t0, a != NULL,
					      tips[n_sp] };
		n_sp++;
	}
	if (!n_sp) {
		rc = cfl_buf_puts(b, "<p class=\"note\">No trial recorded its start "
				     "and end.</p>\n");
		goto out;
	}
	rc = cfl_svg_timeline(b, "trials per worker over time (red: failed attempts)",
			  n_lanes, lanes, n_sp, sp);
out:
	for (size_t i = 0; tips && i < n_sp; i++)
		free(tips[i]);
	free(tips);
	free(sp);
	free(lanes);
	return rc;
}

/* Every failed attempt with its model, repeat, attempt, worker and the
 * reason the worker or the scheduler gave. */
static int failures_table(struct cfl_buf *b, const struct cfl_attempt_info *at,
			  size_t n_at)
{
	if (!n_at)
		return cfl_buf_puts(b, "<p class=\"note\">No failed attempts.</p>\n");
	if (cfl_buf_puts(b, "<table class=\"failures\">\n<tr><th>model</th>"
			    "<th>candidate</th><th>repeat</th><th>fold</th>"
			    "<th>attempt</th><th>worker</th><th>outcome</th>"
			    "<th>reason</th></tr>\n"))
		return -1;
	for (size_t i = 0; i < n_at; i++) {
		const struct cfl_attempt_info *a = &at[i];

		if (cfl_buf_puts(b, "<tr><td>") || cfl_svg_escape(b, a->model) ||
		    cfl_buf_puts(b, "</td><td>") || cfl_svg_escape(b, a->hex) ||
		    cfl_buf_printf(b, "</td><td class=\"num\">%d</td>"
				      "<td class=\"num\">", a->repeat) ||
		    (a->fold >= 0 ? cfl_buf_printf(b, "%d", a->fold)
				  : cfl_buf_puts(b, "-")) ||
		    cfl_buf_printf(b, "</td><td class=\"num\">%d</td><td>", a->attempt) ||
		    cfl_svg_escape(b, a->worker[0] ? a->worker : "-") ||
		    cfl_buf_puts(b, "</td><td>") || cfl_svg_escape(b, strcmp(a->outcome, "queued") == 0
				   ? "retried" : a->outcome) ||
		    cfl_buf_puts(b, "</td><td>") || cfl_svg_escape(b, a->reason) ||
		    cfl_buf_puts(b, "</td></tr>\n"))
			return -1;
	}
	return cfl_buf_puts(b, "</table>\n");
}

/* ---- html: an auto run ---- */

/* The leaderboard as cfl_report_leaderboard's table, rank 1 highlighted. */
static int leaderboard_table(struct cfl_buf *b,
			     const struct cfl_study_auto_summary *sum,
			     const struct cfl_report_auto_entry *e)
{
	if (cfl_buf_printf(b, "<table class=\"leaderboard\">\n<tr><th>rank</th>"
			      "<th>entry</th><th>kind</th><th>oof %s</th><th>valid %s"
			      "</th><th>test %s</th><th>seconds</th><th>members</th>"
			      "</tr>\n", sum->metric, sum->metric, sum->metric))
		return -1;
	for (size_t i = 0; i < sum->n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum->rows[i];
		const double v[3] = { r->cv, r->valid, r->test };

		if (cfl_buf_printf(b, "<tr%s><td class=\"num\">%zu</td><td>",
				   i ? "" : " class=\"first\"", i + 1) ||
		    cfl_svg_escape(b, r->name) ||
		    cfl_buf_printf(b, "</td><td>%s</td>",
				   strcmp(r->method, "bag") ? "ensemble" : "bag"))
			return -1;
		for (int k = 0; k < 3; k++)
			if (cfl_buf_puts(b, "<td class=\"num\">") ||
			    (isfinite(v[k]) ? put_num(b, v[k]) : cfl_buf_puts(b, "-")) ||
			    cfl_buf_puts(b, "</td>"))
				return -1;
		if (cfl_buf_printf(b, "<td class=\"num\">%.3f</td><td>", r->seconds) ||
		    cfl_svg_escape(b, e && e[i].members ? e[i].members : "") ||
		    cfl_buf_puts(b, "</td></tr>\n"))
			return -1;
	}
	if (!sum->n_rows && cfl_buf_puts(b, "<tr><td colspan=\"8\">no model "
					    "finished its folds</td></tr>\n"))
		return -1;
	return cfl_buf_puts(b, "</table>\n");
}

/* Out of fold against test, a point per entry: how far the choosing
 * score is from the held-out one. */
static int leaderboard_chart(struct cfl_buf *b,
			     const struct cfl_study_auto_summary *sum)
{
	size_t n = sum->n_rows;
	double *x = calloc(n + 1, sizeof(double)), *y = calloc(n + 1, sizeof(double));
	size_t *ser = calloc(n + 1, sizeof(size_t));
	const char **lab = calloc(n + 1, sizeof(char *));
	static const char *const kinds[2] = { "bag", "ensemble" };
	struct svg_series_opts o = { sum->sign, 0, 1, n ? 0 : -1, NULL, NULL };
	char title[160], xl[96], yl[96];
	int rc = -1;

	if (!x || !y || !ser || !lab)
		goto out;
	for (size_t i = 0; i < n; i++) {
		x[i] = sum->rows[i].cv;
		y[i] = sum->rows[i].test;
		ser[i] = strcmp(sum->rows[i].method, "bag") != 0;
		lab[i] = sum->rows[i].name;
	}
	o.labels = lab;
	o.tips = lab;
	snprintf(title, sizeof(title), "each entry's %s out of fold (what ranked it) "
		 "and on test (ringed: rank 1)", sum->metric);
	snprintf(xl, sizeof(xl), "out-of-fold %s (%s is better)", sum->metric,
		 sum->sign > 0 ? "higher" : "lower");
	snprintf(yl, sizeof(yl), "test %s", sum->metric);
	rc = cfl_svg_series(b, title, xl, yl, n, x, y, ser, 2, kinds, &o);
out:
	free(x);
	free(y);
	free(ser);
	free(lab);
	return rc;
}

/* Each family's candidates: their score on valid against the seconds
 * since the run's first trial started, the best so far as a line. */
static int search_chart(struct cfl_buf *b, struct cfl_store *st,
			const struct cfl_study_auto_summary *sum, int64_t run_id,
			struct cfl_err *err)
{
	struct cfl_candidate_info *c = NULL;
	struct cfl_trial_info *tr = NULL;
	size_t n_c = 0, n_tr = 0, nf = sum->n_families;
	double *x = NULL, *y = NULL, t0 = INFINITY;
	size_t *ser = NULL;
	const char **fam = NULL, **tips = NULL;
	char **tipbuf = NULL;
	struct svg_series_opts o = { sum->sign, 1, 0, -1, NULL, NULL };
	char title[160], yl[96];
	int rc = -1;

	if (cfl_store_candidates(st, run_id, &c, &n_c, err) ||
	    cfl_store_trials(st, run_id, &tr, &n_tr, err))
		goto out;
	if (!(x = cfl_calloc(n_c + 1, sizeof(double), err)) ||
	    !(y = cfl_calloc(n_c + 1, sizeof(double), err)) ||
	    !(ser = cfl_calloc(n_c + 1, sizeof(size_t), err)) ||
	    !(tips = cfl_calloc(n_c + 1, sizeof(char *), err)) ||
	    !(tipbuf = cfl_calloc(n_c + 1, sizeof(char *), err)) ||
	    !(fam = cfl_calloc(nf + 1, sizeof(char *), err)))
		goto out;
	for (size_t f = 0; f < nf; f++)
		fam[f] = sum->families[f].model;
	for (size_t i = 0; i < n_tr; i++)
		if (tr[i].started > 0)
			t0 = fmin(t0, tr[i].started);
	for (size_t k = 0; k < n_c; k++) {
		double when = NAN;
		size_t f = 0;
		char tip[160];

		x[k] = y[k] = NAN;
		while (f < nf && strcmp(fam[f], c[k].model))
			f++;
		if (f == nf || !c[k].has_score || isnan(c[k].score))
			continue;
		for (size_t i = 0; i < n_tr; i++)	/* its search trial's end */
			if (tr[i].cand_id == c[k].id && tr[i].fold < 0 &&
			    tr[i].finished > 0 && !(when <= tr[i].finished))
				when = tr[i].finished;
		x[k] = when - t0;
		y[k] = sum->sign * c[k].score;
		ser[k] = f;
		snprintf(tip, sizeof(tip), "%s %s: %s %.6g on valid after %.3g s",
			 c[k].model, c[k].hex, sum->metric, y[k], x[k]);
		if (!(tipbuf[k] = cfl_strdup(tip, err)))
			goto out;
		tips[k] = tipbuf[k];
	}
	o.tips = tips;
	snprintf(title, sizeof(title), "the search: each candidate's %s on the "
		 "validation part when it ended, the best so far as a line", sum->metric);
	snprintf(yl, sizeof(yl), "valid %s (%s is better)", sum->metric,
		 sum->sign > 0 ? "higher" : "lower");
	if (cfl_svg_series(b, title, "seconds since the run's first trial started",
			   yl, n_c, x, y, ser, nf, fam, &o))
		goto nomem;
	rc = 0;
	goto out;
nomem:
	cfl_err_set(err, "out of memory");
out:
	for (size_t k = 0; tipbuf && k < n_c; k++)
		free(tipbuf[k]);
	free(tipbuf);
	free(tips);
	free(fam);
	free(x);
	free(y);
	free(ser);
	cfl_candidates_free(c, n_c);
	cfl_trials_free(tr, n_tr);
	return rc;
}

static int search_table(struct cfl_buf *b, const struct cfl_study_auto_summary *sum)
{
	if (cfl_buf_printf(b, "<table class=\"search\">\n<tr><th>model</th><th>"
			      "candidates</th><th>done</th><th>failed</th><th>best"
			      "</th><th>best valid %s</th><th>seconds</th></tr>\n",
			   sum->metric))
		return -1;
	for (size_t i = 0; i < sum->n_families; i++) {
		const struct cfl_study_auto_family *f = &sum->families[i];

		if (cfl_buf_puts(b, "<tr><td>") || cfl_svg_escape(b, f->model) ||
		    cfl_buf_printf(b, "</td><td class=\"num\">%zu</td><td class=\"num\">"
				      "%zu</td><td class=\"num\">%zu</td><td>%s</td>"
				      "<td class=\"num\">", f->n_cands, f->n_done,
				   f->n_failed, f->best_hex[0] ? f->best_hex : "-") ||
		    (f->best_hex[0] ? put_num(b, f->best_valid) : cfl_buf_puts(b, "-")) ||
		    cfl_buf_printf(b, "</td><td class=\"num\">%.3f</td></tr>\n", f->seconds))
			return -1;
	}
	return cfl_buf_puts(b, "</table>\n");
}

/* An auto run's page body: the leaderboard and its chart, the search per
 * family, each bag's feature importance (one panel per bag, not per
 * candidate searched), the ensembles' members. */
static int auto_sections(struct cfl_buf *b, struct cfl_store *st,
			 const struct cfl_run_info *run, struct cfl_err *err)
{
	struct cfl_study_auto_summary sum;
	struct cfl_report_auto_entry *e = NULL;
	struct cfl_buf s;
	int rc = -1;

	if (cfl_report_auto_load(st, run, &sum, &e, err))
		return -1;
	cfl_buf_init(&s);
	TRY(cfl_buf_puts(b, "<h2>Leaderboard</h2>\n<p class=\"note\">"));
	TRY(cfl_report_auto_sentence(&sum, &s));	/* the text report's */
	TRY(cfl_svg_escape(b, s.data));
	TRY(cfl_buf_puts(b, "</p>\n"));
	TRY(leaderboard_table(b, &sum, e));
	TRY(leaderboard_chart(b, &sum));
	TRY(cfl_buf_printf(b, "<h2>Search</h2>\n<p class=\"note\">Each family's "
			      "candidates, scored by %s %s.</p>\n",
			      sum.score_metric[0] ? sum.score_metric : sum.metric,
			      sum.cv_search ? "out of fold over the training rows "
			      "(each candidate a bag of its folds)" :
			      "on the validation part; its best was bagged"));
	TRY(search_table(b, &sum));
	if (search_chart(b, st, &sum, run->id, err))
		goto out;
	if (sum.n_unfinished)
		TRY(cfl_buf_puts(b, "<p class=\"note\">The time limit stopped the folds "
				    "still running; those bags are not ranked.</p>\n"));
	if (feature_importance(b, st, run->id, &sum, err))
		goto out;
	TRY(cfl_buf_puts(b, "<h2>Ensembles of the bags</h2>\n"));
	if (members_section(b, st, run->id, err))
		goto out;
	rc = 0;
	goto out;
nomem:
	if (!err->msg[0])
		cfl_err_set(err, "out of memory");
out:
	cfl_buf_release(&s);
	cfl_report_auto_entries_free(e, sum.n_rows);
	cfl_study_auto_summary_release(&sum);
	return rc;
}

/* ---- html: the page ---- */

int cfl_report_html(struct cfl_store *st, const struct cfl_run_info *run,
		    struct cfl_buf *out, struct cfl_err *err)
{
	int tune = run->kind == CFL_RUN_TUNE, autor = run->kind == CFL_RUN_AUTO;
	enum cfl_store_split split = tune ? CFL_SPLIT_VALID : CFL_SPLIT_TEST;
	struct cfl_metric_row *valid = NULL, *test = NULL;
	size_t n_valid = 0, n_test = 0, n_ens = 0;
	struct cfl_trial_counts counts;
	struct cfl_table t, tt;
	char **ens = NULL, seed[32], trials[96];
	struct cfl_trial_info *trs = NULL;
	struct cfl_attempt_info *ats = NULL;
	size_t n_trs = 0, n_ats = 0;
	int rc = -1;

	char buf[64];
	struct table_spec spec = { split, tune, 0, INT_MAX, 1, 1 }, refit;

	cfl_table_init(&t);
	cfl_table_init(&tt);
	if (tune) {
		cfl_report_config_get(run->config, "num_repeat", buf, sizeof(buf));
		spec.hi = atoi(buf) > 0 ? atoi(buf) : INT_MAX;
		cfl_report_config_get(run->config, "sign", buf, sizeof(buf));
		spec.value_sign = atoi(buf) < 0 ? -1 : 1;
	}
	refit = (struct table_spec){ CFL_SPLIT_TEST, 0, spec.hi, INT_MAX, 0,
				     spec.value_sign };
	if (table_of(&t, st, run->id, &spec, err) ||
	    cfl_store_run_metrics(st, run->id, CFL_SPLIT_VALID, &valid, &n_valid, err) ||
	    cfl_store_run_metrics(st, run->id, CFL_SPLIT_TEST, &test, &n_test, err) ||
	    cfl_store_trial_counts(st, run->id, &counts, err) ||
	    ensemble_names(split == CFL_SPLIT_TEST ? test : valid,
			   split == CFL_SPLIT_TEST ? n_test : n_valid, &ens,
			   &n_ens, err))
		goto out;
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)run->seed);
	snprintf(trials, sizeof(trials), "%zu: %zu done, %zu failed, %zu poison, "
		 "%zu other", counts.total, counts.done, counts.failed,
		 counts.poison, counts.total - counts.done - counts.failed -
		 counts.poison);

	TRY(cfl_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
			      "<meta charset=\"utf-8\">\n<title>cfl report: "));
	TRY(cfl_svg_escape(out, run->name));
	TRY(cfl_buf_printf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n"
				"<h1>cfl report: ", style));
	TRY(cfl_svg_escape(out, run->name));
	TRY(cfl_buf_puts(out, "</h1>\n<dl>\n"));
	TRY(fact(out, "kind", cfl_run_kind_name(run->kind)));
	TRY(fact(out, "status", cfl_run_status_name(run->status)));
	TRY(fact(out, "command", run->command));
	TRY(fact(out, "dataset", run->dataset));
	TRY(fact(out, "dataset sha256", run->dataset_sha256));
	TRY(fact(out, "seed", seed));
	TRY(fact(out, "trials", trials));
	TRY(fact(out, "cfl version", run->version));
	TRY(cfl_buf_puts(out, "<dt>started</dt><dd>"));
	TRY(put_date(out, run->created));
	TRY(cfl_buf_puts(out, "</dd>\n<dt>finished</dt><dd>"));
	TRY(put_date(out, run->finished));
	TRY(cfl_buf_puts(out, "</dd>\n"));
	TRY(config_fact(out, run->config));
	TRY(cfl_buf_puts(out, "</dl>\n"));

	if (autor) {	/* the leaderboard, not a table of mixed rows */
		if (auto_sections(out, st, run, err))
			goto out;
	} else {
		TRY(cfl_buf_printf(out, "<h2>Results on the %s part</h2>\n",
				   tune ? "validation" : "test"));
		TRY(cfl_buf_printf(out, "<p class=\"note\">%s; for each metric the mean and "
					"population std over the repeats and score = sign &times; "
					"mean &minus; std. The best cell of each column is "
					"highlighted.</p>\n",
				   tune ? "One row per candidate (8-hex id of its parameters)"
					: "One row per model, then one per ensemble"));
		TRY(html_table(out, &t, ens, n_ens));

		TRY(cfl_buf_puts(out, "<h2>Values over repeats</h2>\n"));
		TRY(distributions(out, &t, ens, n_ens, tune ? "validation" : "test"));

		if (n_ens) {
			TRY(cfl_buf_puts(out, "<h2>Ensembles</h2>\n"));
			TRY(ensembles_table(out, &t, ens, n_ens, valid, n_valid, test, n_test));
			if (members_section(out, st, run->id, err))
				goto out;
		}
	}
	if (tune) {
		TRY(cfl_buf_puts(out, "<h2>Candidates</h2>\n"));
		if (candidates(out, st, run, &t, err))
			goto out;
		/* the best candidate refit with fresh seeds, on test */
		if (spec.hi < INT_MAX && table_of(&tt, st, run->id, &refit, err))
			goto out;
		if (tt.n_metrics) {
			TRY(cfl_buf_puts(out, "<h2>The best candidate refit, on the test part</h2>\n"));
			TRY(html_table(out, &tt, ens, n_ens));
		}
	}
	if (!tune && !autor && feature_importance(out, st, run->id, NULL, err))
		goto out;
	if (cfl_store_trials(st, run->id, &trs, &n_trs, err) ||
	    cfl_store_attempts(st, run->id, &ats, &n_ats, err))
		goto out;
	TRY(cfl_buf_puts(out, "<h2>Trials over time</h2>\n"));
	TRY(timeline(out, trs, n_trs, ats, n_ats));
	TRY(cfl_buf_printf(out, "<h2>Failures</h2>\n"));
	TRY(failures_table(out, ats, n_ats));
	TRY(cfl_buf_printf(out, "<p class=\"note\">Written by cfl %s from '",
			   CFL_VERSION));
	TRY(cfl_svg_escape(out, cfl_store_path(st)));
	TRY(cfl_buf_puts(out, "'.</p>\n</body>\n</html>\n"));
	rc = 0;
	goto out;
nomem:
	cfl_err_set(err, "out of memory");
out:
	for (size_t i = 0; i < n_ens; i++)
		free(ens[i]);
	free(ens);
	free(valid);
	free(test);
	cfl_trials_free(trs, n_trs);
	cfl_attempts_free(ats, n_ats);
	cfl_table_release(&t);
	cfl_table_release(&tt);
	return rc;
}
