/*
 * The report of an auto run: its leaderboard (the bags and the ensembles
 * of the bags, in the summary's order) and what the search did for each
 * model family.  `cfl auto`, `cfl report` (every format) and `cfl export`
 * all render it here from struct cfl_study_auto_summary, so a report
 * printed later is the run's own text.  The ranking rule is the summary's
 * (src/study/auto.c): this file never sorts, it says the rule in words.
 * Never prints.
 */
#include "cfl/report.h"
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/study.h"

/* ---- what each entry is made of ---- */

void cfl_report_auto_entries_free(struct cfl_report_auto_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		free(e[i].members);
	free(e);
}

/* "model:hex" of the bag whose trials include trial id, or "". */
static void bag_name(const struct cfl_trial_info *tr, size_t n_tr,
		     const struct cfl_candidate_info *c, size_t n_c, int64_t id,
		     char *out, size_t cap)
{
	out[0] = 0;
	for (size_t i = 0; i < n_tr; i++) {
		if (tr[i].id != id)
			continue;
		for (size_t k = 0; k < n_c; k++)
			if (c[k].id == tr[i].cand_id)
				snprintf(out, cap, "%s:%s", c[k].model, c[k].hex);
		return;
	}
}

/* An ensemble's members as "gbdt:75e792da 0.62, forest:9c86aa88 0.38"
 * (weights when stored; members without weight left out), into e. */
static int ensemble_entry(const char *text, const struct cfl_trial_info *tr,
			  size_t n_tr, const struct cfl_candidate_info *c,
			  size_t n_c, struct cfl_report_auto_entry *e,
			  struct cfl_err *err)
{
	struct report_members ms;
	struct cfl_buf b;
	int p = cfl_report_members_parse(text, &ms, err), rc = 0;

	if (p < 0)
		return -1;
	cfl_buf_init(&b);
	if (p) {	/* not cfl's format: the text as stored */
		rc = cfl_buf_puts(&b, text ? text : "");
	}
	for (size_t j = 0; !p && !rc && j < ms.n; j++) {
		char name[96];

		if (ms.has_weights && !(ms.m[j].weight > 0))
			continue;
		bag_name(tr, n_tr, c, n_c, ms.m[j].n_trials ? ms.m[j].trials[0] : 0,
			 name, sizeof(name));
		rc |= cfl_buf_printf(&b, "%s%s", e->n_members ? ", " : "",
				     name[0] ? name : "?");
		if (ms.has_weights)
			rc |= cfl_buf_printf(&b, " %.3g", ms.m[j].weight);
		e->n_members++;
	}
	cfl_report_members_release(&ms);
	if (rc || !(e->members = cfl_strdup(b.data ? b.data : "", err))) {
		cfl_buf_release(&b);
		return cfl_err_set(err, "out of memory");
	}
	cfl_buf_release(&b);
	return 0;
}

int cfl_report_auto_entries(struct cfl_store *st, int64_t run_id,
			    const struct cfl_study_auto_summary *sum,
			    struct cfl_report_auto_entry **out,
			    struct cfl_err *err)
{
	struct cfl_ensemble_row *ens = NULL;
	struct cfl_trial_info *tr = NULL;
	struct cfl_candidate_info *c = NULL;
	struct cfl_report_auto_entry *e = NULL;
	size_t n_ens = 0, n_tr = 0, n_c = 0;
	int rc = -1;

	*out = NULL;
	if (cfl_store_ensembles(st, run_id, &ens, &n_ens, err) ||
	    cfl_store_trials(st, run_id, &tr, &n_tr, err) ||
	    cfl_store_candidates(st, run_id, &c, &n_c, err) ||
	    !(e = cfl_calloc(sum->n_rows + 1, sizeof(*e), err)))
		goto out;
	for (size_t i = 0; i < sum->n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum->rows[i];
		const struct cfl_ensemble_row *er = NULL;
		char text[64];

		for (size_t k = 0; k < n_ens; k++)
			if (!strcmp(ens[k].name, r->name))
				er = &ens[k];
		if (strcmp(r->method, "bag") || !er) {
			if (er && ensemble_entry(er->members, tr, n_tr, c, n_c, &e[i], err))
				goto out;
			if (er)
				continue;
		}
		/* a bag: its folds (and its refit) */
		e[i].n_members = r->n_trials;
		snprintf(text, sizeof(text), "%zu trials", r->n_trials);
		if (!(e[i].members = cfl_strdup(text, err)))
			goto out;
	}
	*out = e;
	e = NULL;
	rc = 0;
out:
	cfl_report_auto_entries_free(e, sum->n_rows);
	cfl_ensemble_rows_free(ens, n_ens);
	cfl_trials_free(tr, n_tr);
	cfl_candidates_free(c, n_c);
	return rc;
}

/* ---- the ranking rule in words ---- */

/* The summary's ranking as one plain sentence (no line breaks).  A number
 * is tied to the words around it by \001s (a space no line breaks at, so no
 * wrapped line starts with a number and reads as a row of the table):
 * cfl_report_auto_sentence turns them into spaces. */
static int ranking_sentence(const struct cfl_study_auto_summary *sum,
			    struct cfl_buf *b)
{
	const char *sm = sum->score_metric[0] ? sum->score_metric : sum->metric;
	int rc = cfl_buf_puts(b, "Greedy ensemble selection (Caruana's, with "
			      "replacement, over the bags' out-of-fold predictions) "
			      "ranks first; the other entries follow by ");

	rc |= cfl_buf_printf(b, "%s on the out-of-fold predictions of the training "
			     "rows, %s first", sm,
			     (sum->score_metric[0] ? sum->score_sign : sum->sign) > 0
			     ? "highest" : "lowest");
	if (strcmp(sm, sum->metric))
		rc |= cfl_buf_printf(b, ", with %s beside", sum->metric);
	return rc | cfl_buf_puts(b, "; the test score chose nothing.");
}

/* The ranking sentence with plain spaces, into b (internal.h). */
int cfl_report_auto_sentence(const struct cfl_study_auto_summary *sum,
			     struct cfl_buf *b)
{
	size_t at = b->len;

	if (ranking_sentence(sum, b))
		return -1;
	for (size_t i = at; i < b->len; i++)
		if (b->data[i] == '\001')
			b->data[i] = ' ';
	return 0;
}

/* s word-wrapped into lines of at most width columns. */
static int wrap(struct cfl_buf *b, const char *s, size_t width)
{
	size_t col = 0;
	int rc = 0;

	while (*s && !rc) {
		size_t n = strcspn(s, " ");

		if (col && col + 1 + n > width) {
			rc |= cfl_buf_puts(b, "\n");
			col = 0;
		} else if (col) {
			rc |= cfl_buf_puts(b, " ");
			col++;
		}
		for (size_t i = 0; i < n && !rc; i++)
			rc |= cfl_buf_printf(b, "%c", s[i] == '\001' ? ' ' : s[i]);
		col += n;
		s += n;
		while (*s == ' ')
			s++;
	}
	return rc | cfl_buf_puts(b, "\n");
}

/* ---- the formats ---- */

static const char *kind_of(const struct cfl_study_auto_row *r)
{
	return strcmp(r->method, "bag") ? "ensemble" : "bag";
}

/* A number as text: %.6f, or "-" when undefined. */
static void num6(double v, char *out, size_t cap)
{
	if (isfinite(v))
		snprintf(out, cap, "%.6f", v);
	else
		snprintf(out, cap, "-");
}

/* 1 when some family had candidates pruned: the search table then has a
 * pruned column (as tune's table has a failed one when something failed). */
static int any_pruned(const struct cfl_study_auto_summary *sum)
{
	for (size_t i = 0; i < sum->n_families; i++)
		if (sum->families[i].n_pruned)
			return 1;
	return 0;
}

/* Why a family has no score, and the candidates the time limit
 * cancelled: a line each. */
static int put_family_notes(const struct cfl_study_auto_summary *sum,
			    struct cfl_buf *b)
{
	int rc = 0;

	for (size_t i = 0; i < sum->n_families; i++) {
		const struct cfl_study_auto_family *f = &sum->families[i];

		if (f->why[0])
			rc |= cfl_buf_printf(b, "%s: no score: %s\n", f->model, f->why);
		else if (f->no_bag[0])
			rc |= cfl_buf_printf(b, "%s: no bag: %s\n", f->model, f->no_bag);
		if (f->n_cancelled)
			rc |= cfl_buf_printf(b, "%s: %zu candidate%s cancelled at the "
					     "end of its share\n", f->model, f->n_cancelled,
					     f->n_cancelled == 1 ? "" : "s");
	}
	return rc;
}

static int put_text(const struct cfl_study_auto_summary *sum,
		    const struct cfl_report_auto_entry *e, size_t width,
		    struct cfl_buf *b)
{
	const char *sm = sum->score_metric[0] ? sum->score_metric : sum->metric;
	struct cfl_buf s;
	int w = 5, rc = 0;

	for (size_t i = 0; i < sum->n_rows; i++)
		if ((int)strlen(sum->rows[i].name) > w)
			w = (int)strlen(sum->rows[i].name);
	cfl_buf_init(&s);
	rc |= cfl_buf_printf(b, "Leaderboard by %s\n", sum->metric);
	rc |= ranking_sentence(sum, &s);
	rc |= rc ? rc : wrap(b, s.data, width && width < 80 ? width - 1 : 79);
	cfl_buf_release(&s);
	rc |= cfl_buf_printf(b, "%-4s %-*s %-8s %9s %9s %9s %8s %7s\n", "rank", w,
			     "entry", "kind", sm, "oof", "test", "seconds",
			     "members");
	for (size_t i = 0; i < sum->n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum->rows[i];
		char lo[32], cv[32], te[32];

		num6(r->loss, lo, sizeof(lo));
		num6(r->cv, cv, sizeof(cv));
		num6(r->test, te, sizeof(te));
		rc |= cfl_buf_printf(b, "%-4zu %-*s %-8s %9s %9s %9s %8.3f %7zu\n",
				     i + 1, w, r->name, kind_of(r), lo, cv, te,
				     r->seconds, e ? e[i].n_members : r->n_trials);
	}
	if (!sum->n_rows)
		rc |= cfl_buf_printf(b, "(no model finished its folds)\n");
	rc |= cfl_buf_printf(b, "\nSearch (candidates scored by %s %s)\n", sm,
			     sum->cv_search ? "out of fold" : "on the validation part");
	rc |= cfl_buf_printf(b, "%-8s  %10s  %6s  %6s  %s%-8s  %12s  %9s\n", "model",
			     "candidates", "done", "failed", any_pruned(sum) ? "pruned  " : "",
			     "best", sum->cv_search ? "best oof" : "best valid", "seconds");
	for (size_t i = 0; i < sum->n_families; i++) {
		const struct cfl_study_auto_family *f = &sum->families[i];
		char bv[32], pr[16] = "";

		num6(f->best_hex[0] ? f->best_valid : NAN, bv, sizeof(bv));
		if (any_pruned(sum))
			snprintf(pr, sizeof(pr), "%6zu  ", f->n_pruned);
		rc |= cfl_buf_printf(b, "%-8s  %10zu  %6zu  %6zu  %s%-8s  %12s  %9.3f\n",
				     f->model, f->n_cands, f->n_done, f->n_failed, pr,
				     f->best_hex[0] ? f->best_hex : "-", bv, f->seconds);
	}
	rc |= put_family_notes(sum, b);
	if (sum->n_set_bags)
		rc |= cfl_buf_printf(b, "Bag sets: %zu bags with up to %zu sets of %zu "
				     "folds, scored on their mean\n", sum->n_set_bags,
				     sum->n_sets, sum->set_folds);
	if (sum->n_unfinished)
		rc |= cfl_buf_printf(b, "\nThe time limit stopped the folds still "
				     "running; those bags are not ranked.\n");
	return rc;
}

static int put_md(const struct cfl_study_auto_summary *sum,
		  const struct cfl_report_auto_entry *e, struct cfl_buf *b)
{
	int rc = cfl_buf_printf(b, "### Leaderboard by %s\n\n", sum->metric);

	rc |= cfl_report_auto_sentence(sum, b);
	rc |= cfl_buf_puts(b, "\n\n| rank | entry | kind | oof | valid | test | "
			      "seconds | members |\n|---:|:---|:---|---:|---:|---:|"
			      "---:|:---|\n");
	for (size_t i = 0; i < sum->n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum->rows[i];
		char cv[32], va[32], te[32];

		num6(r->cv, cv, sizeof(cv));
		num6(r->valid, va, sizeof(va));
		num6(r->test, te, sizeof(te));
		rc |= cfl_buf_printf(b, "| %zu | %s%s%s | %s | %s | %s | %s | %.3f | %s |\n",
				     i + 1, i ? "" : "**", r->name, i ? "" : "**",
				     kind_of(r), cv, va, te, r->seconds,
				     e && e[i].members ? e[i].members : "");
	}
	rc |= cfl_buf_printf(b, "\n### Search (candidates scored by %s %s)\n\n"
			     "| model | candidates | done | failed |%s best | best %s | "
			     "seconds |\n|:---|---:|---:|---:|%s:---|---:|---:|\n",
			     sum->score_metric[0] ? sum->score_metric : sum->metric,
			     sum->cv_search ? "out of fold" : "on the validation part",
			     any_pruned(sum) ? " pruned |" : "",
			     sum->cv_search ? "oof" : "valid", any_pruned(sum) ? "---:|" : "");
	for (size_t i = 0; i < sum->n_families; i++) {
		const struct cfl_study_auto_family *f = &sum->families[i];
		char bv[32], pr[24] = "";

		num6(f->best_hex[0] ? f->best_valid : NAN, bv, sizeof(bv));
		if (any_pruned(sum))
			snprintf(pr, sizeof(pr), " %zu |", f->n_pruned);
		rc |= cfl_buf_printf(b, "| %s | %zu | %zu | %zu |%s %s | %s | %.3f |\n",
				     f->model, f->n_cands, f->n_done, f->n_failed, pr,
				     f->best_hex[0] ? f->best_hex : "-", bv, f->seconds);
	}
	for (size_t i = 0; i < sum->n_families; i++)
		if (sum->families[i].why[0] || sum->families[i].n_cancelled) {
			rc |= cfl_buf_puts(b, "\n");	/* not a table row */
			break;
		}
	rc |= put_family_notes(sum, b);
	if (sum->n_set_bags)
		rc |= cfl_buf_printf(b, "\nBag sets: %zu bags with up to %zu sets of %zu "
				     "folds, scored on their mean.\n", sum->n_set_bags,
				     sum->n_sets, sum->set_folds);
	if (sum->n_unfinished)
		rc |= cfl_buf_puts(b, "\nThe time limit stopped the folds still "
				      "running; those bags are not ranked.\n");
	return rc;
}

/* %.17g (reads back exactly); empty in CSV, null in JSON when undefined. */
static int put_g(struct cfl_buf *b, double v, int json)
{
	if (!isfinite(v))
		return json ? cfl_buf_puts(b, "null") : 0;
	return cfl_buf_printf(b, "%.17g", v);
}

static int put_csv(const struct cfl_study_auto_summary *sum,
		   const struct cfl_report_auto_entry *e, struct cfl_buf *b)
{
	int rc = cfl_buf_puts(b, "rank,entry,kind,method,metric,oof,valid,test,"
				 "seconds,trials,members,score_metric,score\n");

	for (size_t i = 0; i < sum->n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum->rows[i];

		rc |= cfl_buf_printf(b, "%zu,", i + 1) || cfl_report_csv_field(b, r->name) ||
		      cfl_buf_printf(b, ",%s,", kind_of(r)) || cfl_report_csv_field(b, r->method) ||
		      cfl_buf_puts(b, ",") || cfl_report_csv_field(b, sum->metric) ||
		      cfl_buf_puts(b, ",") || put_g(b, r->cv, 0) ||
		      cfl_buf_puts(b, ",") || put_g(b, r->valid, 0) ||
		      cfl_buf_puts(b, ",") || put_g(b, r->test, 0) ||
		      cfl_buf_puts(b, ",") || put_g(b, r->seconds, 0) ||
		      cfl_buf_printf(b, ",%zu,", r->n_trials) ||
		      cfl_report_csv_field(b, e && e[i].members ? e[i].members : "") ||
		      cfl_buf_puts(b, ",") || cfl_report_csv_field(b, sum->score_metric) ||
		      cfl_buf_puts(b, ",") || put_g(b, r->loss, 0) ||
		      cfl_buf_puts(b, "\n");
	}
	return rc;
}

/* The leaderboard's rows as a JSON array of objects. */
static int json_rows(const struct cfl_study_auto_summary *sum,
		     const struct cfl_report_auto_entry *e, const char *indent,
		     struct cfl_buf *b)
{
	int rc = cfl_buf_puts(b, "[");

	for (size_t i = 0; i < sum->n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum->rows[i];

		rc |= cfl_buf_printf(b, "%s\n%s{\"rank\": %zu, \"entry\": ", i ? "," : "",
				     indent, i + 1) ||
		      cfl_report_json_string(b, r->name) ||
		      cfl_buf_printf(b, ", \"kind\": \"%s\", \"method\": ", kind_of(r)) ||
		      cfl_report_json_string(b, r->method) || cfl_buf_puts(b, ", \"metric\": ") ||
		      cfl_report_json_string(b, sum->metric) || cfl_buf_puts(b, ", \"oof\": ") ||
		      put_g(b, r->cv, 1) || cfl_buf_puts(b, ", \"valid\": ") ||
		      put_g(b, r->valid, 1) || cfl_buf_puts(b, ", \"test\": ") ||
		      put_g(b, r->test, 1) || cfl_buf_puts(b, ", \"seconds\": ") ||
		      put_g(b, r->seconds, 1) ||
		      cfl_buf_printf(b, ", \"trials\": %zu, \"members\": ", r->n_trials) ||
		      cfl_report_json_string(b, e && e[i].members ? e[i].members : "") ||
		      cfl_buf_puts(b, ", \"score_metric\": ") ||
		      cfl_report_json_string(b, sum->score_metric) ||
		      cfl_buf_puts(b, ", \"score\": ") || put_g(b, r->loss, 1) ||
		      cfl_buf_puts(b, "}");
	}
	return rc | cfl_buf_printf(b, "%s%.*s]", sum->n_rows ? "\n" : "",
				   (int)(strlen(indent) - 2), indent);
}

static int put_json(const struct cfl_study_auto_summary *sum,
		    const struct cfl_report_auto_entry *e, struct cfl_buf *b)
{
	struct cfl_buf s;
	int rc;

	cfl_buf_init(&s);
	rc = cfl_report_auto_sentence(sum, &s) || cfl_buf_puts(b, "{\n  \"metric\": ") ||
	     cfl_report_json_string(b, sum->metric) ||
	     cfl_buf_printf(b, ", \"sign\": %d,\n  \"ranking\": ", sum->sign) ||
	     cfl_report_json_string(b, s.data);
	cfl_buf_release(&s);
	rc |= cfl_buf_puts(b, ",\n  \"leaderboard\": ") || json_rows(sum, e, "    ", b);
	rc |= cfl_buf_puts(b, ",\n  \"search\": [");
	for (size_t i = 0; i < sum->n_families; i++) {
		const struct cfl_study_auto_family *f = &sum->families[i];

		rc |= cfl_buf_printf(b, "%s\n    {\"model\": ", i ? "," : "") ||
		      cfl_report_json_string(b, f->model) ||
		      cfl_buf_printf(b, ", \"candidates\": %zu, \"done\": %zu, "
				     "\"failed\": %zu, \"pruned\": %zu, \"best\": ",
				     f->n_cands, f->n_done, f->n_failed, f->n_pruned) ||
		      (f->best_hex[0] ? cfl_report_json_string(b, f->best_hex)
				      : cfl_buf_puts(b, "null")) ||
		      cfl_buf_puts(b, ", \"best_valid\": ") ||
		      put_g(b, f->best_hex[0] ? f->best_valid : NAN, 1) ||
		      cfl_buf_puts(b, ", \"seconds\": ") || put_g(b, f->seconds, 1) ||
		      cfl_buf_puts(b, "}");
	}
	rc |= cfl_buf_printf(b, "%s],\n  \"unfinished_folds\": %zu\n}\n",
			     sum->n_families ? "\n  " : "", sum->n_unfinished);
	return rc;
}

int cfl_report_leaderboard(const struct cfl_study_auto_summary *sum,
			   const struct cfl_report_auto_entry *entries,
			   enum cfl_table_format fmt, unsigned flags, size_t width,
			   struct cfl_buf *out, struct cfl_err *err)
{
	int rc;

	switch (fmt) {
	case CFL_TABLE_MD:
		rc = put_md(sum, entries, out);
		break;
	case CFL_TABLE_CSV:
		rc = put_csv(sum, entries, out);
		break;
	case CFL_TABLE_JSON:
		rc = flags & CFL_BOARD_ONLY
			? json_rows(sum, entries, "  ", out) || cfl_buf_puts(out, "\n")
			: put_json(sum, entries, out);
		break;
	default:
		rc = put_text(sum, entries, width, out);
		break;
	}
	return rc ? cfl_err_set(err, "out of memory") : 0;
}

/* The summary of run, its metric the plan's when nothing stored one, and
 * its entries' members. */
int cfl_report_auto_load(struct cfl_store *st, const struct cfl_run_info *run,
			 struct cfl_study_auto_summary *sum,
			 struct cfl_report_auto_entry **entries,
			 struct cfl_err *err)
{
	*entries = NULL;
	if (cfl_study_auto_summary(st, run->id, sum, err))
		return -1;
	if (!sum->metric[0])	/* nothing stored a metric: the plan's */
		cfl_report_config_get(run->config, "metric", sum->metric,
				      sizeof(sum->metric));
	if (cfl_report_auto_entries(st, run->id, sum, entries, err)) {
		cfl_study_auto_summary_release(sum);
		return -1;
	}
	return 0;
}

int cfl_report_auto(struct cfl_store *st, const struct cfl_run_info *run,
		    enum cfl_table_format fmt, unsigned flags, size_t width,
		    struct cfl_buf *out, struct cfl_err *err)
{
	struct cfl_study_auto_summary sum;
	struct cfl_report_auto_entry *e;
	int rc;

	if (cfl_report_auto_load(st, run, &sum, &e, err))
		return -1;
	rc = cfl_report_leaderboard(&sum, e, fmt, flags, width, out, err);
	if (!rc)
		rc = sum.n_rows > INT_MAX ? INT_MAX : (int)sum.n_rows;
	cfl_report_auto_entries_free(e, sum.n_rows);
	cfl_study_auto_summary_release(&sum);
	return rc;
}
