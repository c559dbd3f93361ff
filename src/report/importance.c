/*
 * Hyper-parameter importance for the HTML report of a tune run: cfl's own
 * random forest is fitted on the candidates' parameters -> score (as
 * Optuna's default evaluators do with a random forest), then each
 * parameter's importance is how much the forest's squared error on the
 * candidates grows when that parameter's column is shuffled (permutation
 * importance), negative growth counted as 0, the shares summing to 1.
 * Seeded: the same candidates give the same figures.  Also the brief
 * section of the text report on the features of a run's trials (their
 * importance as the store keeps it).  Never prints.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/model.h"
#include "cfl/report.h"
#include "cfl/store.h"
#include "internal.h"

/* The shuffles averaged per parameter. */
#define N_SHUFFLES 8

static double sq_error(const double *pred, const double *y, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (pred[i] - y[i]) * (pred[i] - y[i]);
	return s / (double)n;
}

int cfl_report_param_importance(const double *x, size_t n, size_t d,
			    const double *y, double *imp, struct cfl_err *err)
{
	const struct cfl_model_ops *ops = cfl_model_find("forest");
	struct cfl_params p;
	struct cfl_model *m = NULL;
	struct cfl_xy xy = { 0 };
	struct cfl_rng rng;
	float *xs = NULL;
	double *pred = NULL, base, total = 0;
	size_t *perm = NULL;
	int rc = -1;

	memset(imp, 0, d * sizeof(double));
	if (!ops) {
		cfl_err_set(err, "this build has no forest model");
		return -1;
	}
	if (n < 2 || !d) {
		cfl_err_set(err, "too few candidates to rank parameters");
		return -1;
	}
	cfl_params_init(&p);
	xy.n = n;
	xy.d = d;
	xy.n_classes = 0;
	if (!(xy.x = cfl_calloc(n * d, sizeof(float), err)) ||
	    !(xy.y = cfl_calloc(n, sizeof(double), err)) ||
	    !(xs = cfl_calloc(n * d, sizeof(float), err)) ||
	    !(pred = cfl_calloc(n, sizeof(double), err)) ||
	    !(perm = cfl_calloc(n, sizeof(size_t), err)))
		goto out;
	for (size_t i = 0; i < n * d; i++)
		xy.x[i] = isfinite(x[i]) ? (float)x[i] : -1e30f;
	memcpy(xy.y, y, n * sizeof(double));
	if (cfl_params_set(&p, "n_estimators", "64", err) ||
	    !(m = cfl_model_new(ops, &p, 0x1f0a7ce, err)) ||
	    cfl_model_fit(m, &xy, NULL, err) ||
	    cfl_model_predict(m, xy.x, n, pred, err))
		goto out;
	base = sq_error(pred, y, n);
	cfl_rng_seed(&rng, 0x5eed);
	for (size_t j = 0; j < d; j++) {
		double grow = 0;

		for (int s = 0; s < N_SHUFFLES; s++) {
			memcpy(xs, xy.x, n * d * sizeof(float));
			for (size_t i = 0; i < n; i++)
				perm[i] = i;
			cfl_rng_shuffle(&rng, perm, n);
			for (size_t i = 0; i < n; i++)
				xs[i * d + j] = xy.x[perm[i] * d + j];
			if (cfl_model_predict(m, xs, n, pred, err))
				goto out;
			grow += sq_error(pred, y, n) - base;
		}
		imp[j] = fmax(grow / N_SHUFFLES, 0);
		total += imp[j];
	}
	for (size_t j = 0; j < d; j++)
		imp[j] = total > 0 ? imp[j] / total : 0;
	rc = 0;
out:
	cfl_model_free(m);
	cfl_params_release(&p);
	free(xy.x);
	free(xy.y);
	free(xs);
	free(pred);
	free(perm);
	return rc;
}

/* ---- feature importance of a run's trials, for the text report ---- */

/* Columns shown per model and kind; the rest is counted. */
#define TOP_COLUMNS 5

int cfl_report_feature_importance(struct cfl_store *st, int64_t run_id,
				  int64_t cand_id, size_t width,
				  struct cfl_buf *out, struct cfl_err *err)
{
	struct cfl_importance_row *rows;
	size_t n_rows, i = 0;
	int header = 0, rc = 0;

	if (cfl_store_run_importance(st, run_id, &rows, &n_rows, err))
		return -1;
	while (i < n_rows && !rc) {
		size_t j = i, shown = 0;
		char line[1024];
		int len;

		/* one group: a candidate's columns of one kind, largest first */
		while (j < n_rows && rows[j].cand_id == rows[i].cand_id &&
		       !strcmp(rows[j].kind, rows[i].kind))
			j++;
		if (cand_id && rows[i].cand_id != cand_id) {
			i = j;
			continue;
		}
		if (!header)
			rc |= cfl_buf_puts(out, "\nFeature importance by input column "
					   "(mean over the trials):\n");
		header = 1;
		len = snprintf(line, sizeof(line), "  %-10s %-11s", rows[i].model, rows[i].kind);
		/* the top columns that fit the width, room kept for the count
		 * of the others; one at least */
		for (size_t k = i; k < j && shown < TOP_COLUMNS; k++) {
			char item[192];
			int il = snprintf(item, sizeof(item), "%s %s %.4f", shown ? "," : "",
					  rows[k].feature, rows[k].mean);
			size_t reserve = k + 1 < j ? 12 : 0;

			if (shown && width && (size_t)(len + il) + reserve > width)
				break;
			if ((size_t)len + (size_t)il >= sizeof(line))
				break;
			memcpy(line + len, item, (size_t)il + 1);
			len += il;
			shown++;
		}
		rc |= cfl_buf_puts(out, line);
		if (j - i > shown)
			rc |= cfl_buf_printf(out, " (+%zu more)", j - i - shown);
		rc |= cfl_buf_puts(out, "\n");
		i = j;
	}
	free(rows);
	return rc ? cfl_err_set(err, "out of memory") : 0;
}
