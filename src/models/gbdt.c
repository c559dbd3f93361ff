/*
 * gbdt: histogram-based gradient boosting (XGBoost's "hist" method).
 *
 * Features are binned once per fit: up to max_bins quantile bins of the
 * non-missing values (one bin per value when there are few), and missing
 * values get a bin of their own (the one after the value bins), whose rows
 * learn a default direction at each split.
 * Each round fits one tree per output (softmax: one per class) to the
 * second-order expansion of the loss: gain G_L^2/(H_L+lambda) +
 * G_R^2/(H_R+lambda) - G^2/(H+lambda), leaf weight -G/(H+lambda) times the
 * learning rate.  A node's histogram is built for the smaller child only;
 * the larger one is the parent's minus it.  With `threads`, the threads
 * share each growth step by features (softmax: they take whole trees of a
 * round), so every sum is made in the same order and the model does not
 * depend on the thread count.  Trees store real thresholds (a bin's upper
 * edge), so prediction needs no bins.
 */
#include "tree_int.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MIN_GAIN 1e-6	/* XGBoost's kRtEps: smaller gains do not split */

enum loss { LOSS_SQUARED, LOSS_LOGISTIC, LOSS_SOFTMAX };
static const char *loss_names[] = { "squared_error", "logistic", "softmax" };

struct gbdt {
	enum loss loss;
	size_t n_groups;	/* trees per round */
	size_t n_rounds;
	double *base;		/* n_groups: initial margins */
	struct cfl_ttree *trees;	/* (n_rounds, n_groups) */
};

static const struct cfl_param_spec gbdt_params[] = {
	{ "n_rounds", CFL_P_INT, "100", 1, 100000, NULL,
	  "boosting rounds (trees per output)" },
	{ "learning_rate", CFL_P_FLOAT, "0.3", 0, 10, NULL,
	  "shrinkage of each tree's leaf weights (XGBoost's eta)" },
	{ "max_depth", CFL_P_INT, "6", 1, 64, "none=0",
	  "deepest level of a leaf; none: limited by max_leaves only" },
	{ "max_leaves", CFL_P_INT, "0", 0, 1000000, NULL,
	  "most leaves per tree, grown best gain first; 0: no limit" },
	{ "min_child_weight", CFL_P_FLOAT, "1", 0, 1e300, NULL,
	  "smallest hessian sum of a child" },
	{ "lambda", CFL_P_FLOAT, "1", 0, 1e300, NULL,
	  "L2 penalty on leaf weights" },
	{ "gamma", CFL_P_FLOAT, "0", 0, 1e300, NULL,
	  "smallest loss reduction that splits a node" },
	{ "subsample", CFL_P_FLOAT, "1", 1e-6, 1, NULL,
	  "fraction of rows drawn for each round" },
	{ "colsample_bytree", CFL_P_FLOAT, "1", 1e-6, 1, NULL,
	  "fraction of features drawn for each tree" },
	{ "max_bins", CFL_P_INT, "255", 2, 255, NULL,
	  "most bins per feature (missing values have their own)" },
	{ "loss", CFL_P_CHOICE, "auto", 0, 0,
	  "auto|logistic|softmax|squared_error",
	  "auto: logistic for two classes, softmax for more, squared_error for regression" },
	{ "early_stopping_rounds", CFL_P_INT, "0", 0, 1000000, NULL,
	  "stop when the validation loss has not improved for this many rounds (keeps the best); 0: off" },
	{ "valid_frac", CFL_P_FLOAT, "0", 0, 0.5, NULL,
	  "with early_stopping_rounds and no validation part given: the share of the training rows held out (stratified, seeded) to stop early on, the model then trained on the rest; 0: none held out, so no early stopping without a validation part" },
	{ "threads", CFL_P_INT, "1", 1, 256, NULL,
	  "threads inside one fit (the model does not depend on it)" },
};

static void gbdt_free(struct gbdt *g)
{
	if (!g)
		return;
	if (g->trees)
		for (size_t t = 0; t < g->n_rounds * g->n_groups; t++)
			cfl_ttree_release(&g->trees[t]);
	free(g->trees);
	free(g->base);
	free(g);
}

static void gbdt_release(struct cfl_model *m)
{
	gbdt_free(m->state);
	m->state = NULL;
}

static struct gbdt *gbdt_new(enum loss loss, size_t n_groups, size_t n_rounds,
			     struct cfl_err *err)
{
	struct gbdt *g = cfl_calloc(1, sizeof(*g), err);

	if (!g)
		return NULL;
	g->loss = loss;
	g->n_groups = n_groups;
	g->n_rounds = n_rounds;
	g->base = cfl_calloc(n_groups, sizeof(double), err);
	g->trees = cfl_calloc(n_rounds * n_groups, sizeof(*g->trees), err);
	if (!g->base || !g->trees) {
		gbdt_free(g);
		return NULL;
	}
	for (size_t t = 0; t < n_rounds * n_groups; t++)
		cfl_ttree_init(&g->trees[t], 1);
	return g;
}

/* Adds the first n_rounds rounds' leaf weights to margin (n, n_groups),
 * which starts at the base margins. */
static void add_margins(const struct gbdt *g, size_t n_rounds,
			const float *x, size_t n, size_t d, double *margin)
{
	size_t k = g->n_groups;

	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < k; c++)
			margin[i * k + c] = g->base[c];
	for (size_t t = 0; t < n_rounds * k; t++)
		for (size_t i = 0; i < n; i++)
			margin[i * k + t % k] +=
				cfl_ttree_leaf(&g->trees[t], x + i * d)[0];
}

/* Margins (n, n_groups) to outputs (n, n_out) in place-safe order. */
static void transform(enum loss loss, size_t k, const double *margin,
		      size_t n, double *out)
{
	for (size_t i = 0; i < n; i++) {
		if (loss == LOSS_SQUARED) {
			out[i] = margin[i];
		} else if (loss == LOSS_LOGISTIC) {
			double p = 1 / (1 + exp(-margin[i]));

			out[2 * i] = 1 - p;
			out[2 * i + 1] = p;
		} else {
			const double *mi = margin + i * k;
			double mx = -INFINITY, s = 0;

			for (size_t c = 0; c < k; c++)
				mx = fmax(mx, mi[c]);
			for (size_t c = 0; c < k; c++)
				s += out[i * k + c] = exp(mi[c] - mx);
			for (size_t c = 0; c < k; c++)
				out[i * k + c] /= s;
		}
	}
}

/* ---- a small thread pool: run fn(ctx, t) for t < n_threads ---- */

#define SPIN 20000	/* polls before a waiting thread sleeps */

struct pool {
	size_t n;		/* threads, counting the caller */
	pthread_t *tid;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	atomic_ulong gen;
	atomic_size_t pending;
	int stop;
	void (*fn)(void *ctx, size_t t);
	void *ctx;
	struct pool_arg { struct pool *p; size_t t; } *args;
};

static void *pool_main(void *arg)
{
	struct pool_arg *a = arg;
	struct pool *p = a->p;
	unsigned long seen = 0;

	for (;;) {
		/* steps come every few microseconds while a tree grows: spin
		 * a little before sleeping */
		for (int i = 0; i < SPIN && atomic_load(&p->gen) == seen; i++)
			if (i % 64 == 63)
				sched_yield();
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->gen) == seen && !p->stop)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		seen = atomic_load(&p->gen);
		pthread_mutex_unlock(&p->mu);
		p->fn(p->ctx, a->t);
		if (atomic_fetch_sub(&p->pending, 1) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

/* Starts n - 1 threads; when some cannot start, the pool is smaller (the
 * work is split by the count that started). */
static void pool_start(struct pool *p, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->n = 1;
	if (n < 2)
		return;
	p->tid = calloc(n, sizeof(*p->tid));
	p->args = calloc(n, sizeof(*p->args));
	if (!p->tid || !p->args)
		return;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (size_t t = 1; t < n; t++) {
		p->args[t] = (struct pool_arg){ p, t };
		if (pthread_create(&p->tid[t], NULL, pool_main, &p->args[t]))
			break;
		p->n++;
	}
}

static void pool_run(struct pool *p, void (*fn)(void *, size_t), void *ctx)
{
	if (p->n == 1) {
		fn(ctx, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	atomic_store(&p->pending, p->n - 1);
	atomic_fetch_add(&p->gen, 1);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0);
	for (int i = 0; i < SPIN && atomic_load(&p->pending); i++)
		if (i % 64 == 63)
			sched_yield();
	pthread_mutex_lock(&p->mu);
	while (atomic_load(&p->pending))
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

static void pool_stop(struct pool *p)
{
	if (p->n > 1) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
		for (size_t t = 1; t < p->n; t++)
			pthread_join(p->tid[t], NULL);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->go);
		pthread_cond_destroy(&p->done);
	}
	free(p->tid);
	free(p->args);
}

/* ---- binning ---- */

struct gh {
	double g, h;
};

struct cand;

struct fit {
	size_t n, d, k;
	const float *x;
	uint8_t *bins_t;	/* (d, n): value bin, n_bins[j] when missing;
				 * a feature's bins together */
	float *cuts;		/* (d, 255): bin b holds x <= cuts[b] */
	int *n_bins;		/* d: value bins (the last has no cut) */
	size_t *off;		/* d: feature j's bins start at off[j] in a
				 * histogram (n_bins[j] + 1 slots) */
	size_t n_slots;
	int *useful;		/* features with two bins or more, or missing */
	size_t n_useful;
	int *feats;		/* this tree's features */
	size_t n_feats;
	double *grad, *hess;	/* (n, k) of this round; k = 1: in gh */
	uint32_t *rows;		/* the round's rows, partitioned by node */
	uint32_t *tmp;
	/* histograms: n_slots gh each, pooled */
	struct gh *hist;
	size_t n_hist, *free_hist, n_free;
	struct gh *gh;		/* n: this tree's gradient and hessian */
	struct gh root_sum;	/* their sums over every row, in row order */
	int root_sum_ok;	/* root_sum was made for this tree */
	/* threads share each growth step by features */
	struct pool pool;
	struct cand *res;	/* (pool.n, 2): their best splits */
	/* options */
	double eta, lambda, gamma, mcw;
	long max_depth, max_leaves;
};

/* Cuts of one feature from its sorted non-missing values v (n > 0), one
 * bin per value: the count of bins, or -1 when there are more values than
 * max_bins (v is left as it was, for quantile_cuts; else it is
 * deduplicated in place). */
static int make_cuts(float *v, size_t n, int max_bins, float *cuts)
{
	size_t m = 1;
	int nc = 0;

	for (size_t i = 1; i < n && m <= (size_t)max_bins; i++)
		m += v[i] != v[i - 1];
	if (m > (size_t)max_bins)
		return -1;	/* caller takes quantiles */
	m = 1;
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[m - 1])
			v[m++] = v[i];
	for (size_t i = 0; i + 1 < m; i++) {
		double t = (double)v[i] / 2 + (double)v[i + 1] / 2;
		float c = (float)t;

		/* the cut must separate the two values as floats */
		if (!(c >= v[i] && c < v[i + 1]))
			c = v[i];
		cuts[nc++] = c;
	}
	return nc + 1;
}

static int quantile_cuts(const float *v, size_t n, int max_bins, float *cuts)
{
	int nc = 0;

	for (int b = 1; b < max_bins; b++) {
		size_t at = (size_t)((double)b * (double)n / max_bins);
		float c = v[at];

		/* the quantile value starts the upper bin, as in XGBoost: cut
		 * below it, after the largest smaller value */
		if (at > 0 && v[at - 1] < c)
			c = v[at - 1];
		else
			continue;
		if (c >= v[n - 1])
			break;
		if (nc == 0 || c > cuts[nc - 1])
			cuts[nc++] = c;
	}
	return nc + 1;
}

/* Bins every feature: its non-missing values sorted with their rows, the
 * cuts made from the sorted values, and the rows given their bins in the
 * values' order (bin b holds x <= cuts[b], the last one the rest). */
static int make_bins(struct fit *F, const struct cfl_xy *xy, int max_bins,
		     struct cfl_err *err)
{
	size_t n = F->n, d = F->d;
	/* features copied out a group at a time, each group in one read
	 * of the rows (a feature at a time read all of x each time): as
	 * many as fit in 8 MB */
	size_t group = (size_t)(1 << 21) / (n + 1);
	uint32_t *key = cfl_calloc(n + 1, 4 * sizeof(uint32_t), err);
	uint32_t *row = key + n, *k2 = key + 2 * n, *r2 = key + 3 * n;
	float *v = cfl_calloc(n + 1, sizeof(float), err), *xt;

	group = group < 1 ? 1 : group > d ? d : group;
	xt = cfl_calloc(n + 1, (group ? group : 1) * sizeof(float), err);

	F->bins_t = cfl_calloc(n, d ? d : 1, err);
	F->cuts = cfl_calloc(d ? d : 1, 255 * sizeof(float), err);
	F->n_bins = cfl_calloc(d ? d : 1, sizeof(int), err);
	F->useful = cfl_calloc(d ? d : 1, sizeof(int), err);
	F->off = cfl_calloc(d ? d : 1, sizeof(size_t), err);
	if (!key || !v || !xt || !F->bins_t || !F->cuts || !F->n_bins || !F->useful || !F->off) {
		free(key);
		free(v);
		free(xt);
		return -1;
	}
	for (size_t j = 0; j < d; j++) {
		float *cuts = F->cuts + j * 255;
		uint8_t *col = F->bins_t + j * n;
		const float *xj = xt + (j % group) * n;
		size_t m = 0;
		int nb = 1, missing = 0;

		if (j % group == 0) {
			size_t ng = d - j < group ? d - j : group;

			for (size_t i = 0; i < n; i++)
				for (size_t q = 0; q < ng; q++)
					xt[q * n + i] = xy->x[i * d + j + q];
		}
		for (size_t i = 0; i < n; i++) {
			float x = xj[i];

			if (isnan(x)) {
				missing = 1;
				continue;
			}
			key[m] = cfl_float_key(x);
			row[m++] = (uint32_t)i;
		}
		if (m) {
			cfl_pairs_sort(key, row, k2, r2, m);
			for (size_t i = 0; i < m; i++)
				v[i] = cfl_key_float(key[i]);
			nb = make_cuts(v, m, max_bins, cuts);
			if (nb < 0)
				nb = quantile_cuts(v, m, max_bins, cuts);
		}
		F->n_bins[j] = nb;
		F->off[j] = F->n_slots;
		F->n_slots += (size_t)nb + 1;
		if (nb > 1 || (missing && m))
			F->useful[F->n_useful++] = (int)j;
		if (missing)
			memset(col, nb, n);
		/* the values go up: so do their bins */
		for (size_t i = 0, b = 0; i < m; i++) {
			float x = cfl_key_float(key[i]);

			while (b + 1 < (size_t)nb && !(x <= cuts[b]))
				b++;
			col[row[i]] = (uint8_t)b;
		}
	}
	free(key);
	free(v);
	free(xt);
	return 0;
}

/* ---- histograms ---- */

static struct gh *hist_at(struct fit *F, size_t i)
{
	return F->hist + i * F->n_slots;
}

static long hist_take(struct fit *F, struct cfl_err *err)
{
	struct gh *nh;
	size_t *nf;

	if (F->n_free)
		return (long)F->free_hist[--F->n_free];
	nh = cfl_realloc(F->hist, (F->n_hist + 1) * F->n_slots * sizeof(*nh),
			 err);
	if (!nh)
		return -1;
	F->hist = nh;
	nf = cfl_realloc(F->free_hist, (F->n_hist + 1) * sizeof(*nf), err);
	if (!nf)
		return -1;
	F->free_hist = nf;
	return (long)F->n_hist++;
}

static void hist_give(struct fit *F, long i)
{
	if (i >= 0)
		F->free_hist[F->n_free++] = (size_t)i;
}

/* Adds rows [start, end) of F->rows to the histograms of features
 * f[0..3] (f[0] alone when one) from their columns of bins: one pass over
 * the rows for four features, whose histograms stay in the first-level
 * cache (all of them do not); each slot's sum is made in row order.  With
 * all rows in order (the root, every row in the bag), F->rows is not
 * read.  Inlined with constant four and all. */
static inline __attribute__((always_inline)) void
hist_cols(const struct fit *F, size_t start, size_t end, const int *f,
	  int four, int all, struct gh *out)
{
	const struct gh *gh = F->gh;
	const uint32_t *rows = F->rows;
	size_t n = F->n;
	const uint8_t *c0 = F->bins_t + (size_t)f[0] * n, *c1 = c0, *c2 = c0,
		      *c3 = c0;
	struct gh *a0 = out + F->off[f[0]], *a1 = a0, *a2 = a0, *a3 = a0;

	if (four) {
		c1 = F->bins_t + (size_t)f[1] * n;
		c2 = F->bins_t + (size_t)f[2] * n;
		c3 = F->bins_t + (size_t)f[3] * n;
		a1 = out + F->off[f[1]];
		a2 = out + F->off[f[2]];
		a3 = out + F->off[f[3]];
	}
#define ADD(a, c) do { struct gh *e_ = (a) + (c)[r]; \
		e_->g += v.g; e_->h += v.h; } while (0)
	for (size_t p = start; p < end; p++) {
		uint32_t r = all ? (uint32_t)p : rows[p];
		struct gh v = gh[r];

		ADD(a0, c0);
		if (four) {
			ADD(a1, c1);
			ADD(a2, c2);
			ADD(a3, c3);
		}
	}
#undef ADD
}

/* Accumulates rows [start, end) of F->rows into out for the tree's
 * features i0 <= i < i1 (each feature's bins summed in row order, so the
 * result does not depend on how features are shared among threads). */
static void hist_rows(const struct fit *F, size_t start, size_t end,
		      size_t i0, size_t i1, struct gh *out)
{
	const int *feats = F->feats;
	size_t i;
	int all = end - start == F->n;

	for (i = i0; i < i1; i++)
		memset(out + F->off[feats[i]], 0,
		       ((size_t)F->n_bins[feats[i]] + 1) * sizeof(*out));
	for (i = i0; i + 4 <= i1; i += 4)
		if (all)
			hist_cols(F, 0, F->n, feats + i, 4, 1, out);
		else
			hist_cols(F, start, end, feats + i, 4, 0, out);
	for (; i < i1; i++)
		hist_cols(F, start, end, feats + i, 0, 0, out);
}

/* ---- growing one tree ---- */

struct cand {
	long node, hist;
	size_t start, end;
	long depth;
	double G, H;
	/* best split */
	int feat, bin, miss_left;
	double gain, GL, HL;
};

/* A leaf's weight; 0 where its hessian sum and lambda are 0 (lambda=0 with
 * min_child_weight=0, rows whose probabilities are saturated: a hessian
 * of exactly 0), as XGBoost's, where the division would be infinite. */
static double leaf_weight(const struct fit *F, double G, double H)
{
	if (!(H + F->lambda > 0))
		return 0;
	return -G / (H + F->lambda) * F->eta;
}

/* Two doubles, for the gains of two candidates at once (SSE2's divpd on
 * x86-64, NEON on arm64): each element is rounded as the scalar would be. */
typedef double v2d __attribute__((vector_size(16)));

/* Takes candidate (gl, hl) of gain g at bin b when it is allowed and
 * gains more than c's best. */
static inline void split_take(const struct fit *F, struct cand *c, int f,
			      int b, int ml, double gl, double hl, double g)
{
	/* an infinite gain: a side whose hessian sum and lambda are 0 */
	if (hl < F->mcw || c->H - hl < F->mcw || !(g > c->gain) || g == HUGE_VAL)
		return;
	c->gain = g;
	c->feat = f;
	c->bin = b;
	c->miss_left = ml;
	c->GL = gl;
	c->HL = hl;
}

/* Finds c's best split among the tree's features i0 <= i < i1 from its
 * histogram; c->feat stays as it was when none gains more than c->gain.
 * The candidates are taken in order (each bin's missing-right one, then
 * its missing-left one; the first largest gain wins), their gains made
 * two at a time, as the divisions are most of the cost: two bins at a
 * time, or a bin's two sides of the missing rows. */
static void best_split(const struct fit *F, struct cand *c, size_t i0,
		       size_t i1)
{
	const struct gh *hist = F->hist + (size_t)c->hist * F->n_slots;
	double lam = F->lambda, parent = c->G * c->G / (c->H + lam);
	v2d vlam = { lam, lam }, vpar = { parent, parent };
	v2d vG = { c->G, c->G }, vH = { c->H, c->H };

	if (c->H < 2 * F->mcw || c->end - c->start < 2)
		return;
	for (size_t i = i0; i < i1; i++) {
		int f = F->feats[i], nb = F->n_bins[f], b = 0;
		const struct gh *h = hist + F->off[f];
		struct gh m = h[nb];
		int has_missing = m.h > 0 || m.g != 0;
		double GL = 0, HL = 0;
		v2d vl, vhl, vr, vhr;

		/* gl = GL + (ml ? m.g : 0), as one candidate at a time
		 * would make it */
		if (has_missing) {
			/* with missing rows, "every value left, missing
			 * right" is a split too: bin nb - 1, right only */
			for (; b < nb; b++) {
				GL += h[b].g;
				HL += h[b].h;
				vl = (v2d){ GL + 0, GL + m.g };
				vhl = (v2d){ HL + 0, HL + m.h };
				vr = vG - vl;
				vhr = vH - vhl;
				vr = vl * vl / (vhl + vlam) + vr * vr / (vhr + vlam) - vpar;
				split_take(F, c, f, b, 0, vl[0], vhl[0], vr[0]);
				if (b < nb - 1)
					split_take(F, c, f, b, 1, vl[1], vhl[1], vr[1]);
			}
			continue;
		}
		for (; b + 1 <= nb - 2; b += 2) {
			double g0, h0;

			GL += h[b].g;
			HL += h[b].h;
			g0 = GL + 0;
			h0 = HL + 0;
			GL += h[b + 1].g;
			HL += h[b + 1].h;
			vl = (v2d){ g0, GL + 0 };
			vhl = (v2d){ h0, HL + 0 };
			vr = vG - vl;
			vhr = vH - vhl;
			vr = vl * vl / (vhl + vlam) + vr * vr / (vhr + vlam) - vpar;
			split_take(F, c, f, b, 0, vl[0], vhl[0], vr[0]);
			split_take(F, c, f, b + 1, 0, vl[1], vhl[1], vr[1]);
		}
		if (b == nb - 2) {
			double gl, hl, gr, hr;

			GL += h[b].g;
			HL += h[b].h;
			gl = GL + 0;
			hl = HL + 0;
			gr = c->G - gl;
			hr = c->H - hl;
			split_take(F, c, f, b, 0, gl, hl,
				   gl * gl / (hl + lam) + gr * gr / (hr + lam) -
				   parent);
		}
	}
}

/* One step of growth, shared among the pool's threads by features: build
 * the histogram of rows [start, end) into `build`, subtract it from `sub`
 * (the parent's, which becomes the larger child's), and find the best
 * split of each candidate.  One hand-off per step, no reduction. */
struct step {
	struct fit *F;
	struct gh *build, *sub;
	size_t start, end;
	struct cand *c[2];
	int n_c;
	size_t n_parts;
	struct cand *res;	/* (n_parts, 2) */
};

static void step_part(void *ctx, size_t t)
{
	struct step *S = ctx;
	struct fit *F = S->F;
	size_t nf = F->n_feats, i0, i1;

	if (t >= S->n_parts)
		return;
	i0 = nf * t / S->n_parts;
	i1 = nf * (t + 1) / S->n_parts;
	hist_rows(F, S->start, S->end, i0, i1, S->build);
	if (S->sub)
		for (size_t i = i0; i < i1; i++) {
			int f = F->feats[i];
			size_t off = F->off[f];

			for (size_t b = 0; b <= (size_t)F->n_bins[f]; b++) {
				S->sub[off + b].g -= S->build[off + b].g;
				S->sub[off + b].h -= S->build[off + b].h;
			}
		}
	for (int j = 0; j < S->n_c; j++) {
		struct cand *r = &S->res[t * 2 + j];

		*r = *S->c[j];
		best_split(F, r, i0, i1);
	}
}

static void run_step(struct fit *F, struct step *S)
{
	size_t cells = (S->end - S->start) * F->n_feats;

	for (int j = 0; j < S->n_c; j++) {
		S->c[j]->feat = -1;
		S->c[j]->gain = fmax(MIN_GAIN, F->gamma);
	}
	S->F = F;
	S->res = F->res;
	/* small steps cost more to hand out than to do */
	S->n_parts = F->pool.n > 1 && cells >= 65536 ? F->pool.n : 1;
	if (S->n_parts > F->n_feats && F->n_feats)
		S->n_parts = F->n_feats;
	if (S->n_parts == 1)
		step_part(S, 0);
	else
		pool_run(&F->pool, step_part, S);
	/* the first feature with the largest gain, as one thread would */
	for (int j = 0; j < S->n_c; j++)
		for (size_t t = 0; t < S->n_parts; t++) {
			const struct cand *r = &S->res[t * 2 + j];

			if (r->feat >= 0 && (S->c[j]->feat < 0 ||
					     r->gain > S->c[j]->gain))
				*S->c[j] = *r;
		}
}

/* Makes c a leaf: its weight, added to the margins of its rows. */
static void finish_leaf(struct fit *F, struct cfl_ttree *t,
			const struct cand *c, double *margin, size_t group)
{
	double w = leaf_weight(F, c->G, c->H);

	t->value[c->node] = w;
	for (size_t p = c->start; p < c->end; p++)
		margin[(size_t)F->rows[p] * F->k + group] += w;
}

static int grow_tree(struct fit *F, size_t n_rows, struct cfl_ttree *t,
		     double *margin, size_t group, struct cfl_err *err)
{
	struct cand *cands = NULL, root = { 0 };
	size_t n_cands = 0, cap = 0, n_leaves = 1;
	struct step S = { 0 };
	int rc = -1;

	root.node = cfl_ttree_add(t, err);
	root.hist = hist_take(F, err);
	if (root.node < 0 || root.hist < 0)
		return -1;
	t->has_gain = 1;
	root.end = n_rows;
	if (F->root_sum_ok && n_rows == F->n) {
		root.G = F->root_sum.g;
		root.H = F->root_sum.h;
	} else {
		for (size_t p = 0; p < n_rows; p++) {
			uint32_t r = F->rows[p];

			root.G += F->gh[r].g;
			root.H += F->gh[r].h;
		}
	}
	S.build = hist_at(F, (size_t)root.hist);
	S.start = 0;
	S.end = n_rows;
	S.c[0] = &root;
	S.n_c = 1;
	run_step(F, &S);
	cands = cfl_calloc(16, sizeof(*cands), err);
	if (!cands)
		return -1;
	cap = 16;
	cands[n_cands++] = root;

	for (;;) {
		size_t pick = n_cands, a, m;
		struct cand c, ch[2];
		const float *cuts;
		const uint8_t *col;
		uint8_t left_of[256];
		int small, leaves;

		/* the next node to split: best gain first when leaves are
		 * limited, else any (the tree is the same) */
		for (size_t i = 0; i < n_cands; i++)
			if (cands[i].feat >= 0 &&
			    (pick == n_cands || cands[i].gain > cands[pick].gain))
				pick = i;
		if (pick == n_cands ||
		    (F->max_leaves > 0 && (long)n_leaves >= F->max_leaves))
			break;
		c = cands[pick];
		cands[pick] = cands[--n_cands];
		/* each row's side, looked up from its bin of the split's
		 * feature (the rows go up, so the feature's bins are read
		 * forwards) */
		for (int b = 0; b < F->n_bins[c.feat]; b++)
			left_of[b] = b <= c.bin;
		left_of[F->n_bins[c.feat]] = (uint8_t)c.miss_left;
		col = F->bins_t + (size_t)c.feat * F->n;
		leaves = F->max_depth != 0 && c.depth + 1 >= F->max_depth;
		ch[0] = (struct cand){ .start = c.start, .depth = c.depth + 1,
				       .G = c.GL, .H = c.HL, .hist = -1,
				       .feat = -1 };
		ch[1] = (struct cand){ .end = c.end, .depth = c.depth + 1,
				       .G = c.G - c.GL, .H = c.H - c.HL,
				       .hist = -1, .feat = -1 };
		if (leaves) {
			/* both children are leaves: their weights go to
			 * the rows' margins straight away, with no
			 * partition (the rows are not read again) */
			double w[2] = { leaf_weight(F, ch[1].G, ch[1].H),
					leaf_weight(F, ch[0].G, ch[0].H) };

			for (size_t p = c.start; p < c.end; p++) {
				uint32_t r = F->rows[p];

				margin[(size_t)r * F->k + group] += w[left_of[col[r]]];
			}
		} else {
			/* partition the rows: left first, stably */
			a = c.start;
			m = 0;
			for (size_t p = c.start; p < c.end; p++) {
				uint32_t r = F->rows[p];
				size_t left = left_of[col[r]];

				F->rows[a] = r;
				F->tmp[m] = r;
				a += left;
				m += 1 - left;
			}
			memcpy(F->rows + a, F->tmp, m * sizeof(*F->rows));
			ch[0].end = a;
			ch[1].start = a;
		}
		ch[0].node = cfl_ttree_add(t, err);
		ch[1].node = ch[0].node < 0 ? -1 : cfl_ttree_add(t, err);
		if (ch[1].node < 0)
			goto out;
		cuts = F->cuts + (size_t)c.feat * 255;
		t->node[c.node].feat = c.feat;
		/* the last value bin has no cut: only missing rows can go
		 * right of it */
		t->node[c.node].thr = c.bin < F->n_bins[c.feat] - 1 ?
				      (double)cuts[c.bin] : DBL_MAX;
		t->node[c.node].left = (int32_t)ch[0].node;
		t->node[c.node].right = (int32_t)ch[1].node;
		t->node[c.node].miss_left = c.miss_left;
		t->gain[c.node] = c.gain;
		n_leaves++;
		if (!leaves) {
			small = ch[0].end - ch[0].start <= ch[1].end - ch[1].start ? 0 : 1;
			ch[small].hist = hist_take(F, err);
			if (ch[small].hist < 0)
				goto out;
			/* the larger child: parent minus the smaller */
			ch[1 - small].hist = c.hist;
			S.build = hist_at(F, (size_t)ch[small].hist);
			S.sub = hist_at(F, (size_t)c.hist);
			S.start = ch[small].start;
			S.end = ch[small].end;
			S.c[0] = &ch[0];
			S.c[1] = &ch[1];
			S.n_c = 2;
			run_step(F, &S);
		} else {
			hist_give(F, c.hist);
		}
		for (int s = 0; s < 2; s++) {
			if (leaves) {
				t->value[ch[s].node] = leaf_weight(F, ch[s].G, ch[s].H);
				continue;
			}
			if (ch[s].feat < 0) {
				finish_leaf(F, t, &ch[s], margin, group);
				hist_give(F, ch[s].hist);
				continue;
			}
			if (n_cands == cap) {
				struct cand *nc = cfl_realloc(cands, 2 * cap * sizeof(*nc), err);

				if (!nc)
					goto out;
				cands = nc;
				cap *= 2;
			}
			cands[n_cands++] = ch[s];
		}
	}
	for (size_t i = 0; i < n_cands; i++) {
		finish_leaf(F, t, &cands[i], margin, group);
		hist_give(F, cands[i].hist);
	}
	rc = 0;
out:
	free(cands);
	return rc;
}

/* ---- fitting ---- */

static int loss_for(const char *s, int n_classes, enum loss *out,
		    struct cfl_err *err)
{
	if (strcmp(s, "auto") == 0) {
		*out = n_classes == 0 ? LOSS_SQUARED :
		       n_classes == 2 ? LOSS_LOGISTIC : LOSS_SOFTMAX;
		return 0;
	}
	if (strcmp(s, "squared_error") == 0) {
		if (n_classes > 0)
			return cfl_err_set(err, "gbdt: loss 'squared_error' needs a regression target");
		*out = LOSS_SQUARED;
		return 0;
	}
	if (n_classes == 0)
		return cfl_err_set(err, "gbdt: loss '%s' needs a classification target", s);
	if (strcmp(s, "logistic") == 0) {
		if (n_classes != 2)
			return cfl_err_set(err, "gbdt: loss 'logistic' needs two classes, the target has %d",
					   n_classes);
		*out = LOSS_LOGISTIC;
		return 0;
	}
	*out = LOSS_SOFTMAX;
	return 0;
}

/* fmax(h, 1e-16), NaN included, without libm's call per row */
static inline double floor_hess(double h)
{
	return h > 1e-16 ? h : 1e-16;
}

/* Gradients and hessians (n, k) of softmax's loss at margin, as XGBoost
 * computes them (hessian 2p(1-p), floored); one_tree copies a class's
 * into the (g, h) pairs its tree is grown from. */
static void gradients(const double *margin, const double *y, size_t n,
		      size_t k, double *g, double *h)
{
	for (size_t i = 0; i < n; i++) {
		const double *mi = margin + i * k;
		double mx = -INFINITY, s = 0;

		for (size_t c = 0; c < k; c++)
			mx = fmax(mx, mi[c]);
		for (size_t c = 0; c < k; c++)
			s += exp(mi[c] - mx);
		for (size_t c = 0; c < k; c++) {
			double p = exp(mi[c] - mx) / s;

			g[i * k + c] = p - (c == (size_t)y[i]);
			h[i * k + c] = floor_hess(2 * p * (1 - p));
		}
	}
}

/* The same for the losses of one tree a round (squared error, logistic),
 * straight into the (g, h) pairs the tree is grown from; with sum, also
 * their sums in row order (the root's, when every row is in the bag).
 * Inlined with constant loss and sum's presence. */
static inline __attribute__((always_inline)) void
gradients_one(enum loss loss, const double *margin, const double *y,
	      size_t n, struct gh *out, struct gh *sum)
{
	struct gh s = { 0, 0 };

	for (size_t i = 0; i < n; i++) {
		if (loss == LOSS_SQUARED) {
			out[i] = (struct gh){ margin[i] - y[i], 1 };
		} else {
			double p = 1 / (1 + exp(-margin[i]));

			out[i] = (struct gh){ p - y[i], floor_hess(p * (1 - p)) };
		}
		if (sum) {
			s.g += out[i].g;
			s.h += out[i].h;
		}
	}
	if (sum)
		*sum = s;
}

struct grad_job {
	enum loss loss;
	const double *margin, *y;
	size_t n, k, n_parts;
	double *g, *h;
	struct gh *gh;		/* k = 1: the pairs (g and h: k > 1) */
	struct gh *sum;		/* k = 1, one part: their sums, or NULL */
};

static void grad_part(void *ctx, size_t t)
{
	struct grad_job *J = ctx;
	size_t a = J->n * t / J->n_parts, b = J->n * (t + 1) / J->n_parts;

	if (t >= J->n_parts)
		return;
	if (J->gh && J->loss == LOSS_SQUARED && J->sum)
		gradients_one(LOSS_SQUARED, J->margin, J->y, J->n, J->gh, J->sum);
	else if (J->gh && J->sum)
		gradients_one(LOSS_LOGISTIC, J->margin, J->y, J->n, J->gh, J->sum);
	else if (J->gh && J->loss == LOSS_SQUARED)
		gradients_one(LOSS_SQUARED, J->margin + a, J->y + a, b - a,
			      J->gh + a, NULL);
	else if (J->gh)
		gradients_one(LOSS_LOGISTIC, J->margin + a, J->y + a, b - a,
			      J->gh + a, NULL);
	else
		gradients(J->margin + a * J->k, J->y + a, b - a, J->k,
			  J->g + a * J->k, J->h + a * J->k);
}

/* Mean loss of margins (n, k) against y. */
static double mean_loss(enum loss loss, const double *margin,
			const double *y, size_t n, size_t k)
{
	double s = 0;

	for (size_t i = 0; i < n; i++) {
		if (loss == LOSS_SQUARED) {
			s += (margin[i] - y[i]) * (margin[i] - y[i]);
		} else if (loss == LOSS_LOGISTIC) {
			double z = margin[i];

			/* log(1 + e^z) - y z, stably */
			s += fmax(z, 0) + log1p(exp(-fabs(z))) - y[i] * z;
		} else {
			const double *mi = margin + i * k;
			double mx = -INFINITY, se = 0;

			for (size_t c = 0; c < k; c++)
				mx = fmax(mx, mi[c]);
			for (size_t c = 0; c < k; c++)
				se += exp(mi[c] - mx);
			s += mx + log(se) - mi[(size_t)y[i]];
		}
	}
	return s / (double)n;
}

/* Frees what one thread's copy of the fit owns. */
static void scratch_release(struct fit *F)
{
	free(F->feats);
	free(F->rows);
	free(F->tmp);
	free(F->hist);
	free(F->free_hist);
	free(F->gh);
	free(F->res);
	F->gh = NULL;
	F->res = NULL;
	F->feats = NULL;
	F->rows = F->tmp = NULL;
	F->hist = NULL;
	F->free_hist = NULL;
}

static int scratch_alloc(struct fit *F, struct cfl_err *err)
{
	F->feats = cfl_calloc(F->d ? F->d : 1, sizeof(int), err);
	F->rows = cfl_calloc(F->n, sizeof(uint32_t), err);
	F->tmp = cfl_calloc(F->n, sizeof(uint32_t), err);
	F->gh = cfl_calloc(F->n, sizeof(*F->gh), err);
	F->res = cfl_calloc(2 * F->pool.n, sizeof(*F->res), err);
	F->hist = NULL;
	F->free_hist = NULL;
	F->n_hist = F->n_free = 0;
	return F->feats && F->rows && F->tmp && F->gh && F->res ? 0 : -1;
}

static void fit_release(struct fit *F)
{
	free(F->bins_t);
	free(F->cuts);
	free(F->n_bins);
	free(F->useful);
	free(F->off);
	free(F->grad);
	free(F->hess);
	scratch_release(F);
	pool_stop(&F->pool);
}

static int check_xy(const struct cfl_xy *xy, struct cfl_err *err)
{
	for (size_t i = 0; i < xy->n; i++) {
		double y = xy->y[i];

		if (!isfinite(y))
			return cfl_err_set(err, "gbdt: target of row %zu is not a finite number", i);
		if (xy->n_classes > 0 && (y < 0 || y >= xy->n_classes ||
					  y != floor(y)))
			return cfl_err_set(err, "gbdt: label %.17g of row %zu is not a class in [0, %d)",
					   y, i, xy->n_classes);
	}
	return 0;
}

/* One round's trees, shared by the threads that build them. */
struct round {
	struct fit *FT;		/* per thread */
	size_t n_threads;
	struct gbdt *g;
	size_t r;
	uint64_t seed;
	double colsample;
	const unsigned char *in_bag;
	size_t n_rows;
	double *margin, *vmargin;
	const struct cfl_xy *train, *valid;
	int *rc;		/* per thread */
	struct cfl_err *err;	/* per thread */
};

/* Tree (R->r, c) on F: its features (drawn from the tree's own stream, so
 * threads do not change them), rows, growth and margin updates. */
static int one_tree(struct fit *F, struct round *R, size_t c,
		    struct cfl_err *err)
{
	size_t n = F->n, d = F->d, k = F->k, nr = 0;
	struct cfl_ttree *t = &R->g->trees[R->r * k + c];

	if (R->n_rows == n)
		for (nr = 0; nr < n; nr++)
			F->rows[nr] = (uint32_t)nr;
	else
		for (size_t i = 0; i < n; i++)
			if (R->in_bag[i])
				F->rows[nr++] = (uint32_t)i;
	memcpy(F->feats, F->useful, F->n_useful * sizeof(int));
	F->n_feats = F->n_useful;
	if (R->colsample < 1 && F->n_useful) {
		size_t want = (size_t)(R->colsample * (double)F->n_useful);
		struct cfl_rng rng;

		cfl_rng_seed(&rng, cfl_seed_derive(R->seed, "gbdt-tree",
						   R->r * k + c));
		if (want < 1)
			want = 1;
		for (size_t i = 0; i < want; i++) {
			size_t j = i + (size_t)cfl_rng_below(&rng, F->n_useful - i);
			int tf = F->feats[i];

			F->feats[i] = F->feats[j];
			F->feats[j] = tf;
		}
		F->n_feats = want;
	}
	if (k > 1) {	/* k = 1: the gradients were made in F->gh */
		struct gh s = { 0, 0 };

		for (size_t i = 0; i < n; i++) {
			F->gh[i] = (struct gh){ F->grad[i * k + c], F->hess[i * k + c] };
			s.g += F->gh[i].g;
			s.h += F->gh[i].h;
		}
		F->root_sum = s;
		F->root_sum_ok = 1;
	}
	if (grow_tree(F, nr, t, R->margin, c, err))
		return -1;
	/* rows out of the bag did not get the leaf weights */
	if (R->n_rows < n)
		for (size_t i = 0; i < n; i++)
			if (!R->in_bag[i])
				R->margin[i * k + c] +=
					cfl_ttree_leaf(t, R->train->x + i * d)[0];
	if (R->valid)
		for (size_t i = 0; i < R->valid->n; i++)
			R->vmargin[i * k + c] +=
				cfl_ttree_leaf(t, R->valid->x + i * d)[0];
	return 0;
}

/* Thread t's share of a round: trees t, t + T, ... (margin columns differ,
 * so no two threads write one value). */
static void round_part(void *ctx, size_t t)
{
	struct round *R = ctx;

	R->rc[t] = 0;
	for (size_t c = t; c < R->FT[0].k; c += R->n_threads)
		if (one_tree(&R->FT[t], R, c, &R->err[t])) {
			R->rc[t] = -1;
			return;
		}
}

static int gbdt_fit(struct cfl_model *m, const struct cfl_xy *train,
		    const struct cfl_xy *valid, struct cfl_err *err)
{
	size_t n = train->n, d = train->d, n_rounds, n_ft = 0;
	long esr = cfl_param_int(m, "early_stopping_rounds");
	double subsample = cfl_param_float(m, "subsample");
	struct fit F = { 0 }, *FT = NULL;
	struct gbdt *g = NULL;
	struct cfl_rng rng;
	struct round R = { 0 };
	enum loss loss = LOSS_SQUARED;
	double *margin = NULL, *vmargin = NULL, best_loss = INFINITY;
	unsigned char *in_bag = NULL;
	size_t k, best_round = 0, r;
	int rc = -1, rcs[256], cut = 0;
	struct cfl_budget B;
	struct cfl_err *errs = NULL;

	cfl_budget_start(&B, m);
	if (valid && !valid->n)
		valid = NULL;	/* no rows to stop early on */
	if (loss_for(cfl_param_str(m, "loss"), m->n_classes, &loss, err) ||
	    check_xy(train, err) || (valid && check_xy(valid, err)))
		return -1;
	if (n >= UINT32_MAX)
		return cfl_err_set(err, "gbdt: too many training rows");
	k = loss == LOSS_SOFTMAX ? (size_t)m->n_classes : 1;
	n_rounds = (size_t)cfl_param_int(m, "n_rounds");
	F.n = n;
	F.d = d;
	F.k = k;
	F.x = train->x;
	F.eta = cfl_param_float(m, "learning_rate");
	F.lambda = cfl_param_float(m, "lambda");
	F.gamma = cfl_param_float(m, "gamma");
	F.mcw = cfl_param_float(m, "min_child_weight");
	F.max_depth = cfl_param_int(m, "max_depth");
	F.max_leaves = cfl_param_int(m, "max_leaves");
	if (F.max_depth == 0 && F.max_leaves == 0)
		return cfl_err_set(err, "gbdt: max_depth=none needs max_leaves > 0");
	cfl_rng_seed(&rng, m->seed);
	g = gbdt_new(loss, k, n_rounds, err);
	if (!g || make_bins(&F, train, (int)cfl_param_int(m, "max_bins"), err))
		goto out;
	if (k > 1) {
		F.grad = cfl_calloc(n, k * sizeof(double), err);
		F.hess = cfl_calloc(n, k * sizeof(double), err);
	}
	margin = cfl_calloc(n, k * sizeof(double), err);
	in_bag = cfl_calloc(n, 1, err);
	if (valid)
		vmargin = cfl_calloc(valid->n, k * sizeof(double), err);
	pool_start(&F.pool, (size_t)cfl_param_int(m, "threads"));
	if (scratch_alloc(&F, err) || (k > 1 && (!F.grad || !F.hess)) || !margin ||
	    !in_bag || (valid && !vmargin))
		goto out;
	if (F.pool.n > 1 && k > 1) {
		/* several trees a round: one thread per tree, each with its
		 * own scratch and single-threaded histograms */
		n_ft = F.pool.n;
		FT = cfl_calloc(n_ft, sizeof(*FT), err);
		errs = cfl_calloc(n_ft, sizeof(*errs), err);
		if (!FT || !errs)
			goto out;
		for (size_t t = 0; t < n_ft; t++) {
			FT[t] = F;
			FT[t].pool.n = 1;
			if (scratch_alloc(&FT[t], err)) {
				n_ft = t + 1;
				goto out;
			}
		}
	}

	/* initial margins: the mean, the log-odds of the positive class */
	if (loss == LOSS_SQUARED || loss == LOSS_LOGISTIC) {
		double s = 0;

		for (size_t i = 0; i < n; i++)
			s += train->y[i];
		s /= (double)n;
		if (loss == LOSS_LOGISTIC)
			s = log(fmax(s, 1e-6) / fmax(1 - s, 1e-6));
		g->base[0] = s;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < k; c++)
			margin[i * k + c] = g->base[c];
	if (valid)
		for (size_t i = 0; i < valid->n; i++)
			for (size_t c = 0; c < k; c++)
				vmargin[i * k + c] = g->base[c];

	R = (struct round){ .g = g, .seed = m->seed,
			    .colsample = cfl_param_float(m, "colsample_bytree"),
			    .in_bag = in_bag, .margin = margin,
			    .vmargin = vmargin, .train = train, .valid = valid,
			    .rc = rcs, .err = errs };
	cfl_budget_units(&B);
	for (r = 0; r < n_rounds; r++) {
		if (cfl_budget_over(&B, r)) {
			cut = 1;
			break;
		}
		{
			struct grad_job J = { loss, margin, train->y, n, k,
					      n * k >= 16384 ? F.pool.n : 1,
					      F.grad, F.hess, k == 1 ? F.gh : NULL,
					      NULL };

			/* one part: the root's sums on the way */
			if (k == 1 && J.n_parts == 1)
				J.sum = &F.root_sum;
			F.root_sum_ok = J.sum != NULL;
			if (J.n_parts > 1)
				pool_run(&F.pool, grad_part, &J);
			else
				grad_part(&J, 0);
		}
		R.r = r;
		R.n_rows = 0;
		if (subsample >= 1) {
			memset(in_bag, 1, n);
			R.n_rows = n;
		}
		for (size_t i = 0; i < n && subsample < 1; i++) {
			in_bag[i] = cfl_rng_uniform(&rng) < subsample;
			R.n_rows += in_bag[i];
		}
		if (FT) {
			R.FT = FT;
			R.n_threads = n_ft;
			pool_run(&F.pool, round_part, &R);
			for (size_t t = 0; t < n_ft; t++)
				if (rcs[t]) {
					memcpy(err, &errs[t], sizeof(*err));
					goto out;
				}
		} else {
			for (size_t c = 0; c < k; c++)
				if (one_tree(&F, &R, c, err))
					goto out;
		}
		if (valid && m->report && (r + 1) % CFL_MODEL_REPORT_ROUNDS == 0 &&
		    m->report(m->report_ctx, r + 1,
			      -mean_loss(loss, vmargin, valid->y, valid->n, k))) {
			cfl_err_set(err, "pruned at step %zu", r + 1);
			goto out;
		}
		if (valid && esr > 0) {
			double l = mean_loss(loss, vmargin, valid->y, valid->n, k);

			if (l < best_loss) {
				best_loss = l;
				best_round = r;
			} else if ((long)(r - best_round) >= esr) {
				r++;
				break;
			}
		}
	}
	/* keep the best rounds when stopping early */
	if (valid && esr > 0) {
		for (size_t t = (best_round + 1) * k; t < n_rounds * k; t++)
			cfl_ttree_release(&g->trees[t]);
		g->n_rounds = best_round + 1;
		m->n_iter_kept = g->n_rounds;
	} else if (cut) {
		/* the rounds made are a model: the first r of n_rounds */
		g->n_rounds = r;
		m->n_iter_kept = r;
	}
	m->budget_cut = cut;
	rc = 0;
out:
	for (size_t t = 0; FT && t < n_ft; t++)
		scratch_release(&FT[t]);
	free(FT);
	free(errs);
	fit_release(&F);
	free(margin);
	free(vmargin);
	free(in_bag);
	if (rc) {
		gbdt_free(g);
		return -1;
	}
	m->state = g;
	return 0;
}

/* ---- importance ---- */

/* The total gain of each feature's splits over every tree, scaled to sum
 * 1 (XGBoost's "total_gain"); 1 when the trees were read from a file. */
static int gbdt_importance(const struct cfl_model *m, double *out,
			   struct cfl_err *err)
{
	const struct gbdt *g = m->state;
	size_t n_trees = g->n_rounds * g->n_groups;

	(void)err;
	for (size_t t = 0; t < n_trees; t++)
		if (!g->trees[t].has_gain)
			return 1;
	memset(out, 0, m->n_features * sizeof(*out));
	for (size_t t = 0; t < n_trees; t++)
		cfl_ttree_add_gains(&g->trees[t], out);
	cfl_importance_normalize(out, m->n_features);
	return 0;
}

/* ---- predict, save, load ---- */

static int gbdt_predict(const struct cfl_model *m, const float *x, size_t n,
			double *out, struct cfl_err *err)
{
	const struct gbdt *g = m->state;
	double *margin = cfl_calloc(n ? n : 1, g->n_groups * sizeof(double), err);

	if (!margin)
		return -1;
	add_margins(g, g->n_rounds, x, n, m->n_features, margin);
	transform(g->loss, g->n_groups, margin, n, out);
	free(margin);
	return 0;
}

static int gbdt_save(const struct cfl_model *m, struct cfl_buf *out,
		     struct cfl_err *err)
{
	const struct gbdt *g = m->state;

	if (cfl_buf_printf(out, "gbdt %s %zu %zu\nbase", loss_names[g->loss],
			   g->n_groups, g->n_rounds) ||
	    cfl_buf_doubles(out, g->base, g->n_groups) ||
	    cfl_buf_puts(out, "\n"))
		return cfl_err_set(err, "out of memory");
	for (size_t t = 0; t < g->n_rounds * g->n_groups; t++)
		if (cfl_ttree_save(&g->trees[t], out))
			return cfl_err_set(err, "out of memory");
	return 0;
}

static int gbdt_load(struct cfl_model *m, struct cfl_reader *in,
		     struct cfl_err *err)
{
	struct gbdt *g;
	char word[32];
	size_t k, n_rounds, want;
	enum loss loss = LOSS_SQUARED;
	int found = 0;

	if (cfl_reader_expect(in, "gbdt", err) ||
	    cfl_reader_word(in, word, sizeof(word), err))
		return -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(word, loss_names[i]) == 0) {
			loss = (enum loss)i;
			found = 1;
		}
	if (!found)
		return cfl_reader_fail(in, err, "unknown loss '%s'", word);
	if ((loss == LOSS_SQUARED) != (m->n_classes == 0) ||
	    (loss == LOSS_LOGISTIC && m->n_classes != 2))
		return cfl_reader_fail(in, err, "loss '%s' does not fit %d classes",
				       word, m->n_classes);
	want = loss == LOSS_SOFTMAX ? (size_t)m->n_classes : 1;
	if (cfl_reader_size(in, 1 << 20, &k, err) ||
	    cfl_reader_size(in, 100000, &n_rounds, err))
		return -1;
	if (k != want)
		return cfl_reader_fail(in, err, "gbdt has %zu trees per round, expected %zu",
				       k, want);
	/* a tree takes ten bytes at least */
	if (n_rounds == 0 || n_rounds * k > (in->len - in->pos) / 10)
		return cfl_reader_fail(in, err, "gbdt has a bad round count %zu",
				       n_rounds);
	g = gbdt_new(loss, k, n_rounds, err);
	if (!g)
		return -1;
	if (cfl_reader_expect(in, "base", err) ||
	    cfl_reader_doubles(in, g->base, k, err))
		goto fail;
	for (size_t c = 0; c < k; c++)
		if (!isfinite(g->base[c])) {
			cfl_reader_fail(in, err, "base margin is not finite");
			goto fail;
		}
	for (size_t t = 0; t < n_rounds * k; t++)
		if (cfl_ttree_load(&g->trees[t], in, m->n_features, 1, err))
			goto fail;
	m->state = g;
	return 0;
fail:
	gbdt_free(g);
	return -1;
}

const struct cfl_model_ops cfl_gbdt_ops = {
	.name = "gbdt",
	.summary = "histogram gradient boosting (logistic, softmax, squared error)",
	.params = gbdt_params,
	.n_params = sizeof(gbdt_params) / sizeof(gbdt_params[0]),
	.fit = gbdt_fit,
	.early_stop = "early_stopping_rounds",
	.predict = gbdt_predict,
	.save = gbdt_save,
	.load = gbdt_load,
	.release = gbdt_release,
	.importance = gbdt_importance,
};
