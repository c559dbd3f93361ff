/*
 * Ensembles of stored predictions: mean, vote, weighted mean, stacking,
 * greedy selection and top (include/cfl/ensemble.h).  Every fit here reads
 * validation or out-of-fold rows only; test rows are predicted and scored,
 * never fitted on.  Pure arithmetic on caller arrays: no store, no I/O, no
 * randomness (ties are broken by the lowest index), so an ensemble is the
 * same on every machine.
 */
#include "cfl/ensemble.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

static const char *const method_names[CFL_ENS_COUNT] = {
	"mean", "vote", "weighted", "stacking", "greedy", "top",
};

const char *cfl_ensemble_method_name(enum cfl_ensemble_method m)
{
	return (unsigned)m < CFL_ENS_COUNT ? method_names[m] : NULL;
}

int cfl_ensemble_method_lookup(const char *name)
{
	for (int m = 0; m < CFL_ENS_COUNT; m++)
		if (strcmp(name, method_names[m]) == 0)
			return m;
	return -1;
}

int cfl_ensemble_parse_list(const char *list, unsigned *mask,
			    struct cfl_err *err)
{
	const char *p = list;

	*mask = 0;
	if (strcmp(list, "none") == 0)
		return 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		char name[32];
		int m;

		if (len == 0 || len >= sizeof(name)) {
			return cfl_err_set(err, "bad ensemble list '%s'", list);
		}
		memcpy(name, p, len);
		name[len] = 0;
		m = cfl_ensemble_method_lookup(name);
		if (m < 0)
			return cfl_err_set(err,
					   "unknown ensemble '%s' (known: mean, vote, "
					   "weighted, stacking, greedy, top)", name);
		*mask |= 1u << m;
		p += len;
		if (*p == ',' && *++p == 0)
			return cfl_err_set(err, "bad ensemble list '%s'", list);
	}
	return 0;
}

/* ---- ensemble: the arithmetic on member predictions ---- */

static int check_members(size_t n_members, struct cfl_err *err)
{
	return n_members ? 0 : cfl_err_set(err, "an ensemble needs a member");
}

int cfl_ensemble_mean(const double *const *preds, size_t n_members, size_t n,
		      size_t n_out, double *out, struct cfl_err *err)
{
	size_t len = n * n_out;

	if (check_members(n_members, err))
		return -1;
	/* Member by member, in order: the sum is the same on every machine. */
	memset(out, 0, len * sizeof(double));
	for (size_t j = 0; j < n_members; j++)
		for (size_t i = 0; i < len; i++)
			out[i] += preds[j][i];
	for (size_t i = 0; i < len; i++)
		out[i] /= (double)n_members;
	return 0;
}

/* The most probable class of a row (the first on ties), as the metrics
 * read a prediction. */
static size_t argmax(const double *row, size_t k)
{
	size_t best = 0;

	for (size_t c = 1; c < k; c++)
		if (row[c] > row[best])
			best = c;
	return best;
}

int cfl_ensemble_vote(const double *const *preds, size_t n_members, size_t n,
		      size_t n_out, double *out, struct cfl_err *err)
{
	const double eps = CFL_ENS_VOTE_TIE_WEIGHT;

	if (check_members(n_members, err))
		return -1;
	if (n_out < 2)
		return cfl_err_set(err, "vote needs classification");
	if (n_members >= 1 / eps)
		return cfl_err_set(err, "vote: too many members (%zu)", n_members);
	memset(out, 0, n * n_out * sizeof(double));
	for (size_t j = 0; j < n_members; j++)
		for (size_t i = 0; i < n; i++)
			out[i * n_out + argmax(preds[j] + i * n_out, n_out)] += 1;
	/* Blend in the mean probability with a weight too small to overturn
	 * a vote (shares differ by 1 / n_members > eps) but enough to break a
	 * tie: a tied vote goes to the class the members find most likely,
	 * not to the lowest index. */
	for (size_t i = 0; i < n * n_out; i++) {
		double mean = 0;

		for (size_t j = 0; j < n_members; j++)
			mean += preds[j][i];
		out[i] = (1 - eps) * (out[i] / (double)n_members) +
			 eps * (mean / (double)n_members);
	}
	return 0;
}

int cfl_ensemble_weighted(const double *const *preds, const double *w,
			  size_t n_members, size_t n, size_t n_out, double *out,
			  struct cfl_err *err)
{
	size_t len = n * n_out;
	double sum = 0;

	if (check_members(n_members, err))
		return -1;
	for (size_t j = 0; j < n_members; j++) {
		if (!(w[j] >= 0) || !isfinite(w[j]))
			return cfl_err_set(err, "ensemble weight %zu is %g", j, w[j]);
		sum += w[j];
	}
	if (!(sum > 0))
		return cfl_err_set(err, "ensemble weights sum to 0");
	memset(out, 0, len * sizeof(double));
	for (size_t j = 0; j < n_members; j++) {
		if (w[j] == 0)
			continue;
		for (size_t i = 0; i < len; i++)
			out[i] += w[j] * preds[j][i];
	}
	for (size_t i = 0; i < len; i++)
		out[i] /= sum;
	return 0;
}

void cfl_ensemble_score_weights(const double *scores, size_t n_members,
				int sign, double *w)
{
	double sum = 0;
	size_t n_exact = 0;

	if (sign < 0)
		for (size_t j = 0; j < n_members; j++)
			n_exact += scores[j] <= 0;
	for (size_t j = 0; j < n_members; j++) {
		double s = scores[j];

		if (s != s)
			w[j] = 0;
		else if (sign > 0)
			w[j] = s > 0 ? s : 0;
		else if (n_exact)	/* an exact fit outweighs any error */
			w[j] = s <= 0 ? 1 : 0;
		else
			w[j] = isinf(s) ? 0 : 1 / s;
		sum += w[j];
	}
	for (size_t j = 0; j < n_members; j++)
		w[j] = sum > 0 ? w[j] / sum : 1.0 / (double)n_members;
}

#define GREEDY_ROWS 100000

static int greedy_on(const double *const *preds, size_t n_members, size_t n,
		     size_t n_out, const double *y, int n_classes,
		     enum cfl_metric_id metric, size_t n_rounds, double deadline,
		     size_t *rounds, size_t *best_round, double *w, struct cfl_err *err);

/* cfl_ensemble_greedy, its rounds stopped once cfl_now() passes deadline
 * (0: none; one round at least), *rounds (may be NULL) those run,
 * *best_round (may be NULL) the round whose picks w are. */
static int greedy_by(const double *const *preds, size_t n_members, size_t n,
		     size_t n_out, const double *y, int n_classes,
		     enum cfl_metric_id metric, size_t n_rounds, double deadline,
		     size_t *rounds, size_t *best_round, double *w, struct cfl_err *err)
{
	size_t step = n > GREEDY_ROWS ? (n + GREEDY_ROWS - 1) / GREEDY_ROWS : 1, m;
	double **sub = NULL, *ys = NULL;
	int rc = -1;

	if (step == 1 || check_members(n_members, err))
		return greedy_on(preds, n_members, n, n_out, y, n_classes, metric,
				 n_rounds, deadline, rounds, best_round, w, err);
	m = (n + step - 1) / step;	/* the rows 0, step, 2 step, ... */
	if (!(sub = cfl_calloc(n_members, sizeof(*sub), err)) ||
	    !(ys = cfl_calloc(m, sizeof(double), err)))
		goto out;
	for (size_t i = 0; i < m; i++)
		ys[i] = y[i * step];
	for (size_t j = 0; j < n_members; j++) {
		if (!(sub[j] = cfl_calloc(m * n_out, sizeof(double), err)))
			goto out;
		for (size_t i = 0; i < m; i++)
			memcpy(sub[j] + i * n_out, preds[j] + i * step * n_out,
			       n_out * sizeof(double));
	}
	rc = greedy_on((const double *const *)sub, n_members, m, n_out, ys, n_classes,
		       metric, n_rounds, deadline, rounds, best_round, w, err);
out:
	for (size_t j = 0; sub && j < n_members; j++)
		free(sub[j]);
	free(sub);
	free(ys);
	return rc;
}

int cfl_ensemble_greedy(const double *const *preds, size_t n_members, size_t n,
			size_t n_out, const double *y, int n_classes,
			enum cfl_metric_id metric, size_t n_rounds, double *w,
			struct cfl_err *err)
{
	return greedy_by(preds, n_members, n, n_out, y, n_classes, metric, n_rounds,
			 0, NULL, NULL, w, err);
}

static int greedy_on(const double *const *preds, size_t n_members, size_t n,
		     size_t n_out, const double *y, int n_classes,
		     enum cfl_metric_id metric, size_t n_rounds, double deadline,
		     size_t *rounds, size_t *best_round, double *w, struct cfl_err *err)
{
	const struct cfl_metric_info *mi = cfl_metric_info(metric);
	size_t len = n * n_out, *count = NULL, *best_count = NULL;
	double *sum = NULL, *trial = NULL, best_all = -INFINITY;
	size_t best_picks = 0;
	int rc = -1;

	if (check_members(n_members, err))
		return -1;
	if (!mi)
		return cfl_err_set(err, "greedy ensemble: unknown metric");
	if (!n_rounds)
		return cfl_err_set(err, "greedy ensemble: no rounds");
	sum = cfl_calloc(len ? len : 1, sizeof(double), err);	/* sum of picks */
	trial = cfl_calloc(len ? len : 1, sizeof(double), err);
	count = cfl_calloc(n_members, sizeof(size_t), err);
	best_count = cfl_calloc(n_members, sizeof(size_t), err);
	if (!sum || !trial || !count || !best_count)
		goto out;
	for (size_t round = 1; round <= n_rounds; round++) {
		double best = -INFINITY;
		size_t pick = 0;

		for (size_t j = 0; j < n_members; j++) {
			double v;

			for (size_t i = 0; i < len; i++)
				trial[i] = (sum[i] + preds[j][i]) / (double)round;
			if (cfl_metric_eval(metric, y, trial, n, n_classes, &v, err)) {
				cfl_err_prefix(err, "greedy ensemble");
				goto out;
			}
			v *= mi->sign;
			if (v > best) {
				best = v;
				pick = j;
			}
		}
		if (best == -INFINITY) {
			cfl_err_set(err, "greedy ensemble: metric '%s' is not finite",
				    mi->name);
			goto out;
		}
		for (size_t i = 0; i < len; i++)
			sum[i] += preds[pick][i];
		count[pick]++;
		if (best > best_all) {
			best_all = best;
			best_picks = round;
			memcpy(best_count, count, n_members * sizeof(size_t));
		}
		if (rounds)
			*rounds = round;
		if (deadline > 0 && cfl_now() >= deadline)
			break;
	}
	for (size_t j = 0; j < n_members; j++)
		w[j] = (double)best_count[j] / (double)best_picks;
	if (best_round)
		*best_round = best_picks;
	rc = 0;
out:
	free(sum);
	free(trial);
	free(count);
	free(best_count);
	return rc;
}

double cfl_ensemble_paired_se(const double *a, const double *b, size_t n,
			      double *mean_diff)
{
	double mean = 0, ss = 0;

	for (size_t i = 0; i < n; i++)
		mean += (a[i] - b[i]) / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (a[i] - b[i] - mean) * (a[i] - b[i] - mean);
	*mean_diff = mean;
	return n > 1 ? sqrt(ss / (double)(n - 1) / (double)n) : 0;
}

size_t cfl_ensemble_lowest_loss(const double *loss, size_t m, size_t n,
				double *mean)
{
	size_t best = m;

	*mean = INFINITY;
	for (size_t j = 0; j < m; j++) {
		double s = 0;

		for (size_t i = 0; i < n; i++)
			s += loss[j * n + i] / (double)n;
		if (s < *mean) {
			*mean = s;
			best = j;
		}
	}
	return best;
}

int cfl_ensemble_top(const double *const *preds, size_t n_members, size_t n,
		     const double *y, int n_classes, enum cfl_metric_id metric,
		     double k_se, double *w, struct cfl_err *err)
{
	double *loss = NULL, best_mean;
	size_t best, kept = 0;
	int rc = -1;

	if (check_members(n_members, err))
		return -1;
	if (!(loss = cfl_calloc(n_members * n + 1, sizeof(double), err)))
		return -1;
	for (size_t j = 0; j < n_members; j++)
		if (cfl_metric_row_losses(metric, y, preds[j], n, n_classes,
					  loss + j * n, err)) {
			cfl_err_prefix(err, "top ensemble");
			goto out;
		}
	best = cfl_ensemble_lowest_loss(loss, n_members, n, &best_mean);
	if (!isfinite(best_mean)) {
		cfl_err_set(err, "top ensemble: no member's loss is finite");
		goto out;
	}
	for (size_t j = 0; j < n_members; j++) {
		double diff, se = cfl_ensemble_paired_se(loss + j * n, loss + best * n,
							 n, &diff);

		w[j] = j == best || diff <= k_se * se;
		kept += w[j] > 0;
	}
	for (size_t j = 0; j < n_members; j++)
		w[j] /= (double)kept;
	rc = 0;
out:
	free(loss);
	return rc;
}

/* ---- ensemble: stacking ---- */

void cfl_stacker_init(struct cfl_stacker *s)
{
	memset(s, 0, sizeof(*s));
	cfl_linear_init(&s->meta);
}

void cfl_stacker_release(struct cfl_stacker *s)
{
	if (!s)
		return;
	cfl_linear_release(&s->meta);
	cfl_stacker_init(s);
}

/* Columns each member gives the meta-learner: class 0's probability is 1
 * minus the others, so it would only add a collinear input.  For two
 * classes that leaves p(class 1), the column a person reads. */
static size_t member_cols(size_t n_out, int n_classes)
{
	return n_classes > 0 ? n_out - 1 : 1;
}

/* x (n, n_members * cols): member after member, its last cols columns. */
static double *stack_features(const double *const *preds, size_t n_members,
			      size_t n, size_t n_out, size_t cols,
			      struct cfl_err *err)
{
	size_t d = n_members * cols;
	double *x = cfl_calloc(n ? n : 1, (d ? d : 1) * sizeof(double), err);

	if (!x)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n_members; j++)
			memcpy(x + i * d + j * cols,
			       preds[j] + i * n_out + (n_out - cols),
			       cols * sizeof(double));
	return x;
}

int cfl_stacker_fit(struct cfl_stacker *s, const double *const *preds,
		    size_t n_members, size_t n, size_t n_out, const double *y,
		    int n_classes, double l2, struct cfl_err *err)
{
	struct cfl_linear_opts o;
	size_t cols;
	double *x;
	int rc;

	cfl_stacker_release(s);
	if (check_members(n_members, err))
		return -1;
	if (n_classes < 0 || n_classes == 1 ||
	    n_out != (n_classes ? (size_t)n_classes : 1))
		return cfl_err_set(err, "stacking: %zu outputs for %d classes",
				   n_out, n_classes);
	cols = member_cols(n_out, n_classes);
	x = stack_features(preds, n_members, n, n_out, cols, err);
	if (!x)
		return -1;
	cfl_linear_opts_default(&o);
	o.l2 = l2;
	rc = cfl_linear_fit(&s->meta, x, y, n, n_members * cols, n_classes, &o,
			    err);
	free(x);
	if (rc) {
		cfl_err_prefix(err, "stacking");
		cfl_stacker_release(s);
		return -1;
	}
	s->n_members = n_members;
	s->n_out = n_out;
	s->n_classes = n_classes;
	return 0;
}

int cfl_stacker_predict(const struct cfl_stacker *s,
			const double *const *preds, size_t n_members, size_t n,
			double *out, struct cfl_err *err)
{
	double *x;
	int rc;

	if (!s->n_members)
		return cfl_err_set(err, "stacking: the meta-learner is not fitted");
	if (n_members != s->n_members)
		return cfl_err_set(err, "stacking: fitted on %zu members, given %zu",
				   s->n_members, n_members);
	x = stack_features(preds, n_members, n, s->n_out,
			   member_cols(s->n_out, s->n_classes), err);
	if (!x)
		return -1;
	rc = cfl_linear_predict(&s->meta, x, n, out, err);
	free(x);
	return rc;
}

/* ---- ensemble: one ensemble over every split ---- */

void cfl_ens_output_init(struct cfl_ens_output *o)
{
	memset(o, 0, sizeof(*o));
	cfl_stacker_init(&o->stacker);
}

void cfl_ens_output_release(struct cfl_ens_output *o)
{
	if (!o)
		return;
	free(o->valid);
	free(o->test);
	free(o->valid_metrics);
	free(o->test_metrics);
	free(o->weights);
	cfl_stacker_release(&o->stacker);
	cfl_ens_output_init(o);
}

/* The members' arrays of one split, as the arithmetic takes them. */
enum part { PART_VALID, PART_TEST, PART_OOF };

static const double **member_preds(const struct cfl_ens_input *in,
				   enum part part, struct cfl_err *err)
{
	const double **p = cfl_calloc(in->n_members, sizeof(*p), err);

	if (!p)
		return NULL;
	for (size_t j = 0; j < in->n_members; j++)
		p[j] = part == PART_VALID ? in->members[j].valid
		     : part == PART_TEST  ? in->members[j].test
					  : in->members[j].oof;
	return p;
}

/* Metrics of pred on (y, n) into v; NaN where a metric is undefined. */
static void score(const struct cfl_ens_input *in, const double *y,
		  const double *pred, size_t n, double *v)
{
	for (size_t m = 0; m < in->n_metrics; m++) {
		struct cfl_err ignored;

		if (!y || !n ||
		    cfl_metric_eval(in->metrics[m], y, pred, n, in->n_classes,
				    &v[m], &ignored))
			v[m] = NAN;
	}
}

/* Applies a weighted mean with out->weights to valid and test. */
static int apply_weights(const struct cfl_ens_input *in, const double **pv,
			 const double **pt, struct cfl_ens_output *out,
			 struct cfl_err *err)
{
	return cfl_ensemble_weighted(pv, out->weights, in->n_members,
				     in->n_valid, in->n_out, out->valid, err) ||
	       cfl_ensemble_weighted(pt, out->weights, in->n_members,
				     in->n_test, in->n_out, out->test, err);
}

/* ---- ensemble: stacking with non-negative weights summing to one ---- */

/* Euclidean projection of v (n) onto the simplex {w >= 0, sum w = 1}
 * (Held, Wolfe and Crowder; Duchi et al. 2008).  tmp (n) is scratch. */
static void project_simplex(double *v, size_t n, double *tmp)
{
	double cum = 0, theta = 0;

	memcpy(tmp, v, n * sizeof(double));
	qsort(tmp, n, sizeof(double), cmp_desc);
	for (size_t k = 0; k < n; k++) {
		double t;

		cum += tmp[k];
		t = (cum - 1) / (double)(k + 1);
		if (tmp[k] - t > 0)
			theta = t;
	}
	for (size_t j = 0; j < n; j++)
		v[j] = v[j] > theta ? v[j] - theta : 0;
}

/* Classification: the weights that maximise the likelihood of the labels
 * under the mixture sum_j w_j p_j(y_i) of the members' probabilities (a
 * concave problem).  EM's update for mixture weights keeps w on the
 * simplex and never lowers the likelihood; from the uniform start it runs
 * a fixed count of rounds, so the weights are the same on every machine.
 * On more than STACK_EM_ROWS rows it runs on every s-th row (s the least
 * that leaves at most that many): a few weights need no million rows, and
 * 500 rounds over 720,000 took seconds of auto's time limit. */
#define STACK_EM_ROUNDS 500
#define STACK_PROB_FLOOR 1e-12
#define STACK_EM_ROWS 100000

static int fit_mixture(const double *const *p, size_t m, size_t n, size_t k,
		       const double *y, double *w, struct cfl_err *err)
{
	size_t step = n > STACK_EM_ROWS ? (n + STACK_EM_ROWS - 1) / STACK_EM_ROWS : 1;
	double *acc = cfl_calloc(m, sizeof(double), err);
	/* each row's probabilities of its label, floored, row by row: the
	 * rounds then read one array in order (on 720,000 rows the scattered
	 * reads and fmax's calls took seconds); the same sums, the same bits */
	double *q;

	n = (n + step - 1) / step;	/* the rows 0, step, 2 step, ... */
	q = acc ? cfl_calloc(n && m ? n * m : 1, sizeof(double), err) : NULL;
	if (!q) {
		free(acc);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < m; j++) {
			double v = p[j][i * step * k + (size_t)y[i * step]];

			/* fmax's value: the members' predictions are finite */
			q[i * m + j] = v > STACK_PROB_FLOOR ? v : STACK_PROB_FLOOR;
		}
	for (size_t j = 0; j < m; j++)
		w[j] = 1.0 / (double)m;
	for (int round = 0; round < STACK_EM_ROUNDS; round++) {
		memset(acc, 0, m * sizeof(double));
		for (size_t i = 0; i < n; i++) {
			const double *qi = q + i * m;
			double mix = 0;

			for (size_t j = 0; j < m; j++)
				mix += w[j] * qi[j];
			for (size_t j = 0; j < m; j++)
				acc[j] += w[j] * qi[j] / mix;
		}
		for (size_t j = 0; j < m; j++)
			w[j] = acc[j] / (double)n;
	}
	free(q);
	free(acc);
	return 0;
}

/* Regression: the weights on the simplex that minimise the squared error
 * of sum_j w_j f_j against y: projected gradient descent on the m x m
 * normal equations, accelerated (FISTA), a fixed count of steps of size
 * 1 / trace(G) (the trace bounds the largest eigenvalue). */
#define STACK_PG_STEPS 5000

static int fit_simplex_ls(const double *const *f, size_t m, size_t n,
			  const double *y, double *w, struct cfl_err *err)
{
	double *g = cfl_calloc(m * m, sizeof(double), err);
	double *b = cfl_calloc(m, sizeof(double), err);
	double *z = cfl_calloc(m, sizeof(double), err);
	double *prev = cfl_calloc(m, sizeof(double), err);
	double *tmp = cfl_calloc(m, sizeof(double), err);
	double tr = 0, t = 1;
	int rc = -1;

	if (!g || !b || !z || !prev || !tmp)
		goto out;
	for (size_t i = 0; i < n; i++)
		for (size_t a = 0; a < m; a++) {
			b[a] += f[a][i] * y[i] / (double)n;
			for (size_t c = 0; c < m; c++)
				g[a * m + c] += f[a][i] * f[c][i] / (double)n;
		}
	for (size_t a = 0; a < m; a++) {
		tr += g[a * m + a];
		w[a] = z[a] = 1.0 / (double)m;
	}
	rc = 0;
	if (!(tr > 0) || !isfinite(tr))
		goto out;	/* every member predicts 0: any weights do */
	for (int step = 0; step < STACK_PG_STEPS; step++) {
		double tn = (1 + sqrt(1 + 4 * t * t)) / 2;

		memcpy(prev, w, m * sizeof(double));
		for (size_t a = 0; a < m; a++) {
			double grad = -b[a];

			for (size_t c = 0; c < m; c++)
				grad += g[a * m + c] * z[c];
			w[a] = z[a] - grad / tr;
		}
		project_simplex(w, m, tmp);
		for (size_t a = 0; a < m; a++)
			z[a] = w[a] + (t - 1) / tn * (w[a] - prev[a]);
		t = tn;
	}
out:
	free(g);
	free(b);
	free(z);
	free(prev);
	free(tmp);
	return rc;
}

/* Weights below STACK_DUST (EM only approaches 0) are set to 0 and the rest
 * renormalised: the members text then says which members count. */
#define STACK_DUST 1e-6

static void drop_dust(double *w, size_t m)
{
	double sum = 0;

	for (size_t j = 0; j < m; j++)
		sum += w[j] = w[j] < STACK_DUST ? 0 : w[j];
	for (size_t j = 0; j < m && sum > 0; j++)
		w[j] /= sum;
}

size_t cfl_ens_stack_min_rows(size_t n_members)
{
	size_t per = CFL_ENS_STACK_ROWS_PER_MEMBER * n_members;

	return per > CFL_ENS_STACK_MIN_ROWS ? per : CFL_ENS_STACK_MIN_ROWS;
}

/* Stacking: non-negative member weights summing to one (Breiman's stacked
 * regressions; what ensemble selection tends to), fitted on the
 * out-of-fold predictions when every member has them, else on validation.
 * Unlike an unconstrained meta-learner it cannot extrapolate from a few
 * collinear rows; with fewer rows than cfl_ens_stack_min_rows it fits
 * nothing and keeps the mean's weights (out->stack_fallback). */
static int stack(const struct cfl_ens_input *in, const double **pv,
		 const double **pt, struct cfl_ens_output *out,
		 struct cfl_err *err)
{
	size_t m = in->n_members, n;
	int on_oof = in->y_train != NULL && in->n_train > 0;
	const double **po;
	const double *y;
	int rc = 0;

	for (size_t j = 0; j < m && on_oof; j++)
		on_oof = in->members[j].oof != NULL;
	n = on_oof ? in->n_train : in->n_valid;
	y = on_oof ? in->y_train : in->y_valid;
	out->stacked_on_oof = on_oof;
	out->stack_rows = n;
	if (!(out->weights = cfl_calloc(m, sizeof(double), err)))
		return -1;
	if (n < cfl_ens_stack_min_rows(m) || !y) {
		out->stack_fallback = 1;
		for (size_t j = 0; j < m; j++)
			out->weights[j] = 1.0 / (double)m;
		return apply_weights(in, pv, pt, out, err);
	}
	for (size_t i = 0; i < n; i++)
		if (!isfinite(y[i]) || (in->n_classes > 0 &&
					(y[i] < 0 || y[i] >= in->n_classes ||
					 y[i] != floor(y[i]))))
			return cfl_err_set(err, "stacking: label %zu is %g", i, y[i]);
	/* The weights see OOF or validation rows and their labels, never a
	 * test row or label. */
	if (!(po = member_preds(in, on_oof ? PART_OOF : PART_VALID, err)))
		return -1;
	for (size_t j = 0; j < m && !rc; j++)
		for (size_t i = 0; i < n * in->n_out && !rc; i++)
			if (!isfinite(po[j][i]))
				rc = cfl_err_set(err, "stacking: member %zu predicts %g",
						 j, po[j][i]);
	if (!rc)
		rc = in->n_classes > 0
		     ? fit_mixture(po, m, n, in->n_out, y, out->weights, err)
		     : fit_simplex_ls(po, m, n, y, out->weights, err);
	free(po);
	if (!rc)
		drop_dust(out->weights, m);
	return rc ? -1 : apply_weights(in, pv, pt, out, err);
}

static int build(enum cfl_ensemble_method method,
		 const struct cfl_ens_input *in, const double **pv,
		 const double **pt, struct cfl_ens_output *out,
		 struct cfl_err *err)
{
	size_t m = in->n_members;
	const struct cfl_metric_info *first =
		in->n_metrics ? cfl_metric_info(in->metrics[0]) : NULL;

	switch (method) {
	case CFL_ENS_MEAN:
		if (!(out->weights = cfl_calloc(m, sizeof(double), err)))
			return -1;
		for (size_t j = 0; j < m; j++)
			out->weights[j] = 1.0 / (double)m;
		return cfl_ensemble_mean(pv, m, in->n_valid, in->n_out,
					 out->valid, err) ||
		       cfl_ensemble_mean(pt, m, in->n_test, in->n_out,
					 out->test, err);
	case CFL_ENS_VOTE:
		return cfl_ensemble_vote(pv, m, in->n_valid, in->n_out,
					 out->valid, err) ||
		       cfl_ensemble_vote(pt, m, in->n_test, in->n_out,
					 out->test, err);
	case CFL_ENS_WEIGHTED: {
		double *s;

		if (!first)
			return cfl_err_set(err, "ensemble 'weighted' needs a metric");
		if (!(out->weights = cfl_calloc(m, sizeof(double), err)) ||
		    !(s = cfl_calloc(m, sizeof(double), err)))
			return -1;
		for (size_t j = 0; j < m; j++) {
			struct cfl_err ignored;

			if (cfl_metric_eval(in->metrics[0], in->y_valid, pv[j],
					    in->n_valid, in->n_classes, &s[j],
					    &ignored))
				s[j] = NAN;
		}
		cfl_ensemble_score_weights(s, m, first->sign, out->weights);
		free(s);
		return apply_weights(in, pv, pt, out, err);
	}
	case CFL_ENS_GREEDY:
	case CFL_ENS_TOP: {
		/* selected on validation, or with select_on_oof on the
		 * out-of-fold predictions of every training row when every
		 * member has them */
		int on_oof = in->select_on_oof && in->y_train && in->n_train > 0;
		const double **po = NULL;
		size_t n;
		const double *y;
		enum cfl_metric_id sel;
		int rc;

		if (!first)
			return cfl_err_set(err, "ensemble '%s' needs a metric",
					   cfl_ensemble_method_name(method));
		for (size_t j = 0; j < m && on_oof; j++)
			on_oof = in->members[j].oof != NULL;
		if (!(out->weights = cfl_calloc(m, sizeof(double), err)) ||
		    (on_oof && !(po = member_preds(in, PART_OOF, err))))
			return -1;
		n = on_oof ? in->n_train : in->n_valid;
		y = on_oof ? in->y_train : in->y_valid;
		sel = in->select_metric ? *in->select_metric : in->metrics[0];
		rc = method == CFL_ENS_GREEDY
		     ? greedy_by(on_oof ? po : pv, m, n, in->n_out, y, in->n_classes,
				 sel, in->greedy_rounds, in->deadline, &out->rounds,
				 &out->best_round, out->weights, err)
		     : cfl_ensemble_top(on_oof ? po : pv, m, n, y, in->n_classes,
					sel, CFL_ENS_TOP_SE, out->weights, err);
		free(po);
		return rc ? -1 : apply_weights(in, pv, pt, out, err);
	}
	case CFL_ENS_STACKING:
		return stack(in, pv, pt, out, err);
	default:
		return cfl_err_set(err, "unknown ensemble method %d", (int)method);
	}
}

int cfl_ensemble_build(enum cfl_ensemble_method method,
		       const struct cfl_ens_input *in,
		       struct cfl_ens_output *out, struct cfl_err *err)
{
	const double **pv = NULL, **pt = NULL;
	size_t k = in->n_out;
	int rc = -1;

	cfl_ens_output_init(out);
	if (!in->n_members)
		return cfl_err_set(err, "ensemble '%s': no member with predictions",
				   cfl_ensemble_method_name(method) ?
				   cfl_ensemble_method_name(method) : "?");
	if (k != (in->n_classes > 0 ? (size_t)in->n_classes : 1) ||
	    in->n_classes < 0 || in->n_classes == 1)
		return cfl_err_set(err, "ensemble: %zu outputs for %d classes", k,
				   in->n_classes);
	for (size_t j = 0; j < in->n_members; j++)
		if (!in->members[j].valid || !in->members[j].test)
			return cfl_err_set(err, "ensemble: member %zu has no "
					   "validation or test predictions", j);
	if (!(pv = member_preds(in, PART_VALID, err)) ||
	    !(pt = member_preds(in, PART_TEST, err)) ||
	    !(out->valid = cfl_calloc(in->n_valid ? in->n_valid * k : 1,
				      sizeof(double), err)) ||
	    !(out->test = cfl_calloc(in->n_test ? in->n_test * k : 1,
				     sizeof(double), err)) ||
	    !(out->valid_metrics = cfl_calloc(in->n_metrics ? in->n_metrics : 1,
					      sizeof(double), err)) ||
	    !(out->test_metrics = cfl_calloc(in->n_metrics ? in->n_metrics : 1,
					     sizeof(double), err)))
		goto out;
	out->n_members = in->n_members;
	if (build(method, in, pv, pt, out, err)) {
		cfl_err_prefix(err, "ensemble '%s'", cfl_ensemble_method_name(method));
		goto out;
	}
	score(in, in->y_valid, out->valid, in->n_valid, out->valid_metrics);
	score(in, in->y_test, out->test, in->n_test, out->test_metrics);
	rc = 0;
out:
	free(pv);
	free(pt);
	if (rc)
		cfl_ens_output_release(out);
	return rc;
}

int cfl_ens_output_describe(const struct cfl_ens_output *o,
			    enum cfl_ensemble_method method, double l2,
			    struct cfl_buf *b)
{
	if (method == CFL_ENS_STACKING && o->weights) {
		if (cfl_buf_puts(b, "weights"))
			return -1;
		for (size_t j = 0; j < o->n_members; j++)
			if (cfl_buf_printf(b, "%s%.6g", j ? "," : " ", o->weights[j]))
				return -1;
		if (o->stack_fallback)
			return cfl_buf_printf(b, "; the mean's: only %zu %s rows, "
					      "stacking fits on %zu or more",
					      o->stack_rows,
					      o->stacked_on_oof ? "oof" : "valid",
					      cfl_ens_stack_min_rows(o->n_members));
		return cfl_buf_printf(b, "; meta non-negative weights summing "
				      "to 1 on %zu %s rows", o->stack_rows,
				      o->stacked_on_oof ? "oof" : "valid");
	}
	if (method == CFL_ENS_STACKING)	/* a meta-learner fitted outside */
		return cfl_buf_printf(b, "meta linear l2=%g on %s", l2,
				      o->stacked_on_oof ? "oof" : "valid");
	if (method == CFL_ENS_VOTE)
		return cfl_buf_puts(b, "majority vote");
	if (!o->weights)
		return 0;
	if (cfl_buf_puts(b, "weights"))
		return -1;
	for (size_t j = 0; j < o->n_members; j++)
		if (cfl_buf_printf(b, "%s%.6g", j ? "," : " ", o->weights[j]))
			return -1;
	return 0;
}
