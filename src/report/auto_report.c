/*
 * The report of an auto run: its leaderboard (the bags and the ensembles
 * of the bags, best out of fold first) and what the search did for each
 * model family, as `cfl auto` prints them at its end.  Both `cfl auto` and
 * `cfl report` render it here from the store (cfl_study_auto_summary), so
 * a report printed later is the run's own text.  Never prints.
 */
#include "cfl/report.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "cfl/study.h"

int cfl_report_auto(struct cfl_store *st, const struct cfl_run_info *run,
		    struct cfl_buf *out, struct cfl_err *err)
{
	struct cfl_study_auto_summary sum;
	int w = 5, rc = 0;

	if (cfl_study_auto_summary(st, run->id, &sum, err))
		return -1;
	if (!sum.metric[0])	/* nothing stored a metric: the plan's */
		cfl_report_config_get(run->config, "metric", sum.metric,
				      sizeof(sum.metric));
	/* fits 80 columns: the entry column as wide as its longest name */
	for (size_t i = 0; i < sum.n_rows; i++)
		if ((int)strlen(sum.rows[i].name) > w)
			w = (int)strlen(sum.rows[i].name);
	if (strcmp(sum.score_metric, sum.metric))
		rc |= cfl_buf_printf(out, "Leaderboard: greedy first, then by %s out of "
				     "fold; %s beside\n(test chose nothing)\n",
				     sum.score_metric, sum.metric);
	else
		rc |= cfl_buf_printf(out, "Leaderboard: greedy first, then by %s out of "
				     "fold (test chose nothing)\n", sum.metric);
	rc |= cfl_buf_printf(out, "%-4s %-*s %-8s %9s %9s %9s %6s %8s\n", "rank", w,
			     "entry", "kind", sum.score_metric, "oof", "test", "trials",
			     "seconds");
	for (size_t i = 0; i < sum.n_rows; i++) {
		const struct cfl_study_auto_row *r = &sum.rows[i];

		rc |= cfl_buf_printf(out, "%-4zu %-*s %-8s %9.6f %9.6f %9.6f %6zu %8.3f\n",
				     i + 1, w, r->name,
				     strcmp(r->method, "bag") ? "ensemble" : "bag", r->loss,
				     r->cv, r->test, r->n_trials, r->seconds);
	}
	if (!sum.n_rows)
		rc |= cfl_buf_printf(out, "(no model finished its folds)\n");
	if (sum.cv_search)
		rc |= cfl_buf_printf(out, "\nSearch (candidates scored by %s out of "
				     "fold)\n", sum.score_metric);
	else
		rc |= cfl_buf_printf(out, "\nSearch (candidates scored by %s on the "
				     "validation part)\n", sum.score_metric);
	rc |= cfl_buf_printf(out, "%-8s  %10s  %6s  %6s  %-8s  %12s  %9s\n", "model",
			     "candidates", "done", "failed", "best", sum.cv_search ? "best oof" : "best valid",
			     "seconds");
	for (size_t i = 0; i < sum.n_families; i++) {
		const struct cfl_study_auto_family *f = &sum.families[i];

		rc |= cfl_buf_printf(out, "%-8s  %10zu  %6zu  %6zu  %-8s  %12.6f  %9.3f\n",
				     f->model, f->n_cands, f->n_done, f->n_failed,
				     f->best_hex[0] ? f->best_hex : "-", f->best_valid,
				     f->seconds);
	}
	if (sum.n_unfinished)
		rc |= cfl_buf_printf(out, "\nThe time limit stopped the folds still "
				     "running; those bags are not ranked.\n");
	cfl_study_auto_summary_release(&sum);
	if (rc)
		return cfl_err_set(err, "out of memory");
	return 0;
}
