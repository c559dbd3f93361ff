/*
 * A run's best in a few words, for `cfl runs` (cfl_report_run_best): the
 * best row of its table on test, a tune run's chosen candidate, an auto
 * run's first entry.
 */
#include "cfl/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/store.h"
#include "cfl/study.h"

/* The value of "key=" in a run's config lines into out ("" when absent). */
static void config_get(const char *config, const char *key, char *out, size_t cap)
{
	size_t n = strlen(key);

	out[0] = 0;
	for (const char *p = config; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == '=') {
			size_t len = strcspn(p + n + 1, "\n");

			snprintf(out, cap, "%.*s", (int)len, p + n + 1);
			return;
		}
}

/* A tune run's best: the candidate the run chose (the best search score,
 * on validation), with the mean of its refit's test values of the tune
 * metric ("1a2b3c4d acc 0.960000 (refit)"), or its validation score when
 * no refit is stored ("1a2b3c4d score 0.950000 (valid)").  Never the
 * candidate with the best test mean: choosing by test would be peeking. */
static void tune_best(struct cfl_store *st, const struct cfl_run_info *r,
			 char *out, size_t cap)
{
	struct cfl_candidate_info *cands = NULL;
	struct cfl_metric_row *rows = NULL;
	size_t n_cands = 0, n_rows = 0, n = 0;
	struct cfl_err err;
	char metric[32], buf[32];
	double sum = 0;
	long best = -1, R;

	config_get(r->config, "num_repeat", buf, sizeof(buf));
	R = atol(buf) > 0 ? atol(buf) : 1;
	config_get(r->config, "metric", metric, sizeof(metric));
	if (cfl_store_candidates(st, r->id, &cands, &n_cands, &err))
		return;
	for (size_t i = 0; i < n_cands; i++)
		if (cands[i].has_score && cands[i].score == cands[i].score &&
		    (best < 0 || cands[i].score > cands[best].score))
			best = (long)i;
	if (best >= 0 && metric[0] &&
	    cfl_store_run_metrics(st, r->id, CFL_SPLIT_TEST, &rows, &n_rows, &err) == 0)
		for (size_t i = 0; i < n_rows; i++)
			if (rows[i].cand_id == cands[best].id && rows[i].repeat >= R &&
			    !strcmp(rows[i].metric, metric) && rows[i].value == rows[i].value) {
				sum += rows[i].value;
				n++;
			}
	if (best >= 0 && n)
		snprintf(out, cap, "%s %s %.6f (refit)", cands[best].hex, metric,
			 sum / (double)n);
	else if (best >= 0)
		snprintf(out, cap, "%s score %.6f (valid)", cands[best].hex,
			 cands[best].score);
	free(rows);
	cfl_candidates_free(cands, n_cands);
}

void cfl_report_run_best(struct cfl_store *st, const struct cfl_run_info *r,
			 char *out, size_t cap)
{
	struct cfl_table t;
	struct cfl_err err;
	long best = -1;

	snprintf(out, cap, "-");
	if (r->kind == CFL_RUN_TUNE) {
		tune_best(st, r, out, cap);
		return;
	}
	if (r->kind == CFL_RUN_AUTO) {	/* the leaderboard's first, its test */
		struct cfl_study_auto_summary sum;

		if (cfl_study_auto_summary(st, r->id, &sum, &err) == 0) {
			if (sum.n_rows)
				snprintf(out, cap, "%s %s %.6f", sum.rows[0].name,
					 sum.metric, sum.rows[0].test);
			cfl_study_auto_summary_release(&sum);
		}
		return;
	}
	cfl_table_init(&t);
	if (cfl_table_from_run(&t, st, r->id, CFL_SPLIT_TEST,
			       r->kind == CFL_RUN_TUNE ? CFL_ROWS_BY_CANDIDATE
						       : CFL_ROWS_BY_MODEL,
			       &err) == 0 && t.n_metrics) {
		cfl_table_compute(&t);
		for (size_t i = 0; i < t.n_rows; i++)
			if (t.rows[i].score[0] == t.rows[i].score[0] &&
			    (best < 0 || t.rows[i].score[0] > t.rows[best].score[0]))
				best = (long)i;
		if (best >= 0)
			snprintf(out, cap, "%s %s %.6f", t.rows[best].name,
				 t.metric_names[0], t.rows[best].mean[0]);
	}
	cfl_table_release(&t);
}
