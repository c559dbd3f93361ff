/*
 * Feature importance of a fitted model: the impurity-based one the tree
 * models keep from their fit (through the ops), and permutation importance,
 * which needs only predict and so serves every model.
 *
 * Permutation importance shuffles a group of columns (a source column and
 * its one-hot columns) with one row permutation, so a shuffled row is still
 * a row the encoder could have made.  The permutations come from the seed
 * alone; a model's predictions do not depend on the rows around them, so the
 * result does not depend on anything else.  Depends on core, data and
 * metrics.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/metrics.h"
#include "cfl/model.h"

int cfl_model_importance(const struct cfl_model *m, double *out,
			 struct cfl_err *err)
{
	if (!m->state)
		return cfl_err_set(err, "%s: the model is not fitted", m->ops->name);
	if (!m->ops->importance)
		return 1;
	return m->ops->importance(m, out, err);
}

/* sign * metric of predictions out against xy's labels. */
static int score_of(const struct cfl_xy *xy, const double *out, int metric,
		    double *score, struct cfl_err *err)
{
	const struct cfl_metric_info *mi = cfl_metric_info((enum cfl_metric_id)metric);
	double v;

	if (!mi)
		return cfl_err_set(err, "permutation importance: bad metric %d", metric);
	if (cfl_metric_eval((enum cfl_metric_id)metric, xy->y, out, xy->n,
			    xy->n_classes, &v, err))
		return cfl_err_prefix(err, "permutation importance");
	*score = mi->sign * v;
	return 0;
}

int cfl_model_permutation_importance(const struct cfl_model *m,
				     const struct cfl_xy *xy, const int *group,
				     size_t n_groups, int metric, int n_repeats,
				     uint64_t seed, double *out,
				     struct cfl_err *err)
{
	size_t n = xy->n, d = xy->d, n_out = cfl_model_n_out(m);
	float *x = NULL;
	double *pred = NULL, base;
	size_t *perm = NULL;
	struct cfl_rng rng;
	int rc = -1;

	if (!n)
		return cfl_err_set(err, "permutation importance: no rows to score on");
	if (d != m->n_features)
		return cfl_err_set(err, "permutation importance: %zu features, the model has %zu",
				   d, m->n_features);
	if (n_repeats < 1)
		return cfl_err_set(err, "permutation importance: %d repeats", n_repeats);
	for (size_t j = 0; j < d; j++)
		if (group[j] < 0 || (size_t)group[j] >= n_groups)
			return cfl_err_set(err, "permutation importance: feature %zu "
					   "in group %d of %zu", j, group[j], n_groups);
	x = cfl_calloc(n * d, sizeof(*x), err);
	pred = x ? cfl_calloc(n * n_out, sizeof(*pred), err) : NULL;
	perm = pred ? cfl_calloc(n, sizeof(*perm), err) : NULL;
	if (!perm)
		goto out;
	if (cfl_model_predict(m, xy->x, n, pred, err) ||
	    score_of(xy, pred, metric, &base, err))
		goto out;
	cfl_rng_seed(&rng, seed);
	for (size_t g = 0; g < n_groups; g++) {
		double sum = 0;
		int any = 0;

		for (size_t j = 0; j < d; j++)
			any |= (size_t)group[j] == g;
		out[g] = 0;
		if (!any)
			continue;
		for (int r = 0; r < n_repeats; r++) {
			double s;

			/* Fisher-Yates: the rows the group's cells come from */
			for (size_t i = 0; i < n; i++)
				perm[i] = i;
			for (size_t i = n - 1; i > 0; i--) {
				size_t k = (size_t)cfl_rng_below(&rng, i + 1), t = perm[i];

				perm[i] = perm[k];
				perm[k] = t;
			}
			memcpy(x, xy->x, n * d * sizeof(*x));
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < d; j++)
					if ((size_t)group[j] == g)
						x[i * d + j] = xy->x[perm[i] * d + j];
			if (cfl_model_predict(m, x, n, pred, err) ||
			    score_of(xy, pred, metric, &s, err))
				goto out;
			sum += base - s;
		}
		out[g] = sum / n_repeats;
	}
	rc = 0;
out:
	free(x);
	free(pred);
	free(perm);
	return rc;
}

int cfl_importance_format(const struct cfl_importance *imp,
			  const struct cfl_encoder *enc, long top,
			  const char *metric, int n_repeats, struct cfl_buf *b)
{
	const double *key = imp->impurity ? imp->impurity : imp->permutation;
	size_t n = imp->n, *order = calloc(n ? n : 1, sizeof(*order));
	int rc;

	if (!order || !key) {
		free(order);
		return -1;
	}
	/* stable insertion sort, largest first: ties keep the columns' order */
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		for (; j > 0 && key[order[j - 1]] < key[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	if (top == 0 || (size_t)top > n)
		top = (long)n;
	rc = cfl_buf_printf(b, "\nimportance of %ld of %zu input columns%s:\n", top, n,
			    imp->impurity ? "" : " (the model has no impurity importance)");
	rc |= cfl_buf_printf(b, "  %-24s %10s", "column", imp->impurity ? "impurity" : "");
	rc |= imp->permutation ? cfl_buf_printf(b, " %15s", "permutation") : 0;
	rc |= cfl_buf_puts(b, "\n");
	for (long i = 0; i < top; i++) {
		size_t k = order[i];

		rc |= cfl_buf_printf(b, "  %-24s ", cfl_encoder_column_name(enc, k));
		rc |= imp->impurity ? cfl_buf_printf(b, "%10.6f", imp->impurity[k])
				    : cfl_buf_printf(b, "%10s", "");
		rc |= imp->permutation ? cfl_buf_printf(b, " %15.6f", imp->permutation[k]) : 0;
		rc |= cfl_buf_puts(b, "\n");
	}
	if (imp->permutation)
		rc |= cfl_buf_printf(b, "  (permutation: the drop of valid %s when the column is shuffled, mean of %d)\n",
				     metric, n_repeats);
	free(order);
	return rc;
}

void cfl_importance_release(struct cfl_importance *imp)
{
	if (!imp)
		return;
	free(imp->impurity);
	free(imp->permutation);
	memset(imp, 0, sizeof(*imp));
}

int cfl_importance_by_column(const struct cfl_model *m,
			     const struct cfl_encoder *enc,
			     const struct cfl_xy *xy, int metric, int n_repeats,
			     uint64_t seed, struct cfl_importance *out,
			     struct cfl_err *err)
{
	size_t d = m->n_features, n_col = enc->n_in;
	int *group = NULL;
	double *feat = NULL;
	int r;

	memset(out, 0, sizeof(*out));
	if (enc->d != d)
		return cfl_err_set(err, "importance: the encoder makes %zu features, "
				   "the model has %zu", enc->d, d);
	out->n = n_col;
	group = cfl_calloc(d ? d : 1, sizeof(*group), err);
	feat = group ? cfl_calloc(d ? d : 1, sizeof(*feat), err) : NULL;
	if (!feat)
		goto fail;
	for (size_t j = 0; j < d; j++) {
		long k = cfl_encoder_feature_column(enc, j);

		if (k < 0) {
			cfl_err_set(err, "importance: feature %zu has no input column", j);
			goto fail;
		}
		group[j] = (int)k;
	}
	r = cfl_model_importance(m, feat, err);
	if (r < 0)
		goto fail;
	if (r == 0) {
		if (!(out->impurity = cfl_calloc(n_col ? n_col : 1, sizeof(double), err)))
			goto fail;
		for (size_t j = 0; j < d; j++)
			out->impurity[group[j]] += feat[j];
	}
	if (xy) {
		if (!(out->permutation = cfl_calloc(n_col ? n_col : 1, sizeof(double), err)) ||
		    cfl_model_permutation_importance(m, xy, group, n_col, metric,
						     n_repeats, seed, out->permutation, err))
			goto fail;
	}
	free(group);
	free(feat);
	return 0;
fail:
	free(group);
	free(feat);
	cfl_importance_release(out);
	return -1;
}
