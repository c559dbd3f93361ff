/*
 * forest: a random forest (scikit-learn's RandomForestClassifier /
 * RandomForestRegressor): CART trees on bootstrap samples with features
 * drawn at each split; predictions average the trees' leaf distributions
 * (or means).  The out-of-bag score is computed on request.  With
 * splitter=random and bootstrap=false it is scikit-learn's ExtraTrees*
 * (cart.c draws one threshold per feature tried).
 *
 * Tree t draws from its own stream, seeded by (seed, t), so the model does
 * not depend on the number of threads, nor on which thread grew a tree.  The rows are sorted once and shared
 * read-only by every thread; each thread has its own scratch.
 */
#include "tree_int.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct forest {
	size_t n_trees;
	struct cfl_ttree *trees;
	int has_oob;
	double oob;		/* accuracy or R^2 on out-of-bag rows */
	size_t spare_trees;	/* of the fit, grown on a spare core */
};

static const struct cfl_param_spec forest_params[] = {
	{ "n_estimators", CFL_P_INT, "100", 1, 100000, NULL,
	  "number of trees" },
	CFL_CART_PARAMS("auto", "features tried per split: a count, all, sqrt, log2, or auto (sqrt for classification, all for regression)"),
	{ "bootstrap", CFL_P_BOOL, "true", 0, 0, NULL,
	  "fit each tree on n rows drawn with replacement (else on every row)" },
	{ "oob_score", CFL_P_BOOL, "false", 0, 0, NULL,
	  "score the out-of-bag rows (accuracy or R^2) after fitting" },
	{ "threads", CFL_P_INT, "1", 1, 256, NULL,
	  "threads that grow trees inside one fit" },
};

static void forest_free(struct forest *f)
{
	if (!f)
		return;
	for (size_t t = 0; t < f->n_trees; t++)
		cfl_ttree_release(&f->trees[t]);
	free(f->trees);
	free(f);
}

static void forest_release(struct cfl_model *m)
{
	forest_free(m->state);
	m->state = NULL;
}

static struct forest *forest_new(size_t n_trees, size_t n_out,
				 struct cfl_err *err)
{
	struct forest *f = cfl_calloc(1, sizeof(*f), err);

	if (!f)
		return NULL;
	f->trees = cfl_calloc(n_trees, sizeof(*f->trees), err);
	if (!f->trees) {
		free(f);
		return NULL;
	}
	f->n_trees = n_trees;
	for (size_t t = 0; t < n_trees; t++)
		cfl_ttree_init(&f->trees[t], n_out);
	return f;
}

/* ---- fitting: threads that take the next tree ----
 * Each thread takes the next tree not started yet, so a thread that joins
 * late or leaves early changes which thread grows a tree, never the tree.
 * With threads=1 (the default) the fit takes a core its pool has spare
 * (cfl_spare_claim: a worker idle with nothing queued) for a second
 * thread, and that thread leaves, between two trees, once the pool wants
 * the core back. */

struct grow {
	const struct cfl_model *m;
	const struct cfl_cart_data *cd;
	const struct cfl_cart_opts *o;
	struct forest *f;
	int bootstrap;
	_Atomic size_t next;	/* the next tree to start */
	struct cfl_budget budget;	/* the fit's deadline */
	/* the spare core's thread: started by job 0 between its trees */
	int may_borrow;
	struct job *spare;
	pthread_t spare_tid;
	int spare_on;
};

struct job {
	struct grow *g;
	int is_spare;
	size_t grown;
	int cut;		/* the budget stopped this job */
	int rc;
	struct cfl_err err;
};

static void *grow_trees(void *arg);

/* Tree t's bootstrap sample, the first draws of its stream: how many times
 * each of the n rows was drawn. */
static void draw_sample(uint32_t *weight, size_t n, struct cfl_rng *rng)
{
	memset(weight, 0, n * sizeof(*weight));
	for (size_t i = 0; i < n; i++)
		weight[cfl_rng_below(rng, n)]++;
}

/* Job 0, between its trees: a second thread on a spare core. */
static void maybe_borrow(struct grow *g)
{
	if (!g->may_borrow || g->spare_on || !cfl_spare_claim())
		return;
	*g->spare = (struct job){ .g = g, .is_spare = 1, .rc = -1 };
	if (pthread_create(&g->spare_tid, NULL, grow_trees, g->spare)) {
		cfl_spare_return();
		g->may_borrow = 0;
		g->spare->rc = 0;
		return;
	}
	g->spare_on = 1;
}

static void *grow_trees(void *arg)
{
	struct job *j = arg;
	struct grow *g = j->g;
	const struct cfl_cart_data *cd = g->cd;
	size_t n = cd->n;
	struct cfl_cart_work *w = cfl_cart_work_new(cd, &j->err);
	uint32_t *weight = cfl_calloc(n, sizeof(*weight), &j->err);
	struct cfl_budget budget = g->budget;

	j->rc = -1;
	if (!w || !weight)
		goto out;
	cfl_budget_units(&budget);
	for (;;) {
		struct cfl_rng rng;
		size_t t;

		if (j->is_spare && cfl_spare_wanted())
			break;	/* the pool has work for this core again */
		if (!j->is_spare)
			maybe_borrow(g);
		if (cfl_budget_over(&budget, j->grown)) {
			j->cut = 1;
			break;
		}
		t = atomic_fetch_add(&g->next, 1);
		if (t >= g->f->n_trees)
			break;
		cfl_rng_seed(&rng, cfl_seed_derive(g->m->seed, "forest", t));
		if (g->bootstrap)
			draw_sample(weight, n, &rng);
		if (cfl_cart_grow(w, g->o, g->bootstrap ? weight : NULL, &rng,
				  &g->f->trees[t], &j->err))
			goto out;
		j->grown++;
	}
	j->rc = 0;
out:
	cfl_cart_work_free(w);
	free(weight);
	return NULL;
}

/* Accuracy or R^2 over the rows some grown tree left out of its sample,
 * the trees taken in their order (each one's sample drawn again from its
 * stream), so the score does not depend on which thread grew a tree. */
static int oob_score(struct forest *f, const struct cfl_model *m,
		     const struct cfl_cart_data *cd, struct cfl_err *err)
{
	size_t n = cd->n, k = f->trees[0].n_out, used = 0;
	double hit = 0, ym = 0, ss_res = 0, ss_tot = 0, *sum;
	uint32_t *cnt, *weight;

	sum = cfl_calloc(n ? n : 1, k * sizeof(double), err);
	cnt = cfl_calloc(n ? n : 1, sizeof(*cnt), err);
	weight = cfl_calloc(n ? n : 1, sizeof(*weight), err);
	if (!sum || !cnt || !weight) {
		free(sum);
		free(cnt);
		free(weight);
		return -1;
	}
	for (size_t t = 0; t < f->n_trees; t++) {
		struct cfl_rng rng;

		if (!f->trees[t].n_nodes)
			continue;	/* not grown: the budget ran out */
		cfl_rng_seed(&rng, cfl_seed_derive(m->seed, "forest", t));
		draw_sample(weight, n, &rng);
		for (size_t i = 0; i < n; i++) {
			const double *v;

			if (weight[i])
				continue;
			v = cfl_ttree_leaf(&f->trees[t], cd->x + i * cd->d);
			for (size_t c = 0; c < k; c++)
				sum[i * k + c] += v[c];
			cnt[i]++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!cnt[i])
			continue;
		used++;
		if (cd->n_classes > 0) {
			size_t best = 0;

			for (size_t c = 1; c < k; c++)
				if (sum[i * k + c] > sum[i * k + best])
					best = c;
			hit += (int)best == cd->cls[i];
		} else {
			ym += cd->y[i];
		}
	}
	if (used) {
		if (cd->n_classes > 0) {
			f->oob = hit / (double)used;
		} else {
			ym /= (double)used;
			for (size_t i = 0; i < n; i++) {
				double p;

				if (!cnt[i])
					continue;
				p = sum[i] / cnt[i];
				ss_res += (cd->y[i] - p) * (cd->y[i] - p);
				ss_tot += (cd->y[i] - ym) * (cd->y[i] - ym);
			}
			f->oob = ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
		}
		f->has_oob = 1;
	}
	free(sum);
	free(cnt);
	free(weight);
	return 0;
}

static int forest_fit(struct cfl_model *m, const struct cfl_xy *train,
		      const struct cfl_xy *valid, struct cfl_err *err)
{
	size_t n_trees = (size_t)cfl_param_int(m, "n_estimators");
	size_t n_threads = (size_t)cfl_param_int(m, "threads");
	size_t k = cfl_model_n_out(m);
	struct cfl_cart_opts o;
	struct cfl_cart_data cd;
	struct grow g;
	struct forest *f;
	struct job *jobs;
	pthread_t *tid;
	unsigned char *started;
	int rc = 0;

	(void)valid;
	memset(&g, 0, sizeof(g));
	cfl_budget_start(&g.budget, m);
	if (cfl_cart_opts_get(m, train->d, 1, &o, err))
		return -1;
	if (n_threads > n_trees)
		n_threads = n_trees;
	if (cfl_cart_data_init(&cd, train, o.random_split, err))
		return -1;
	f = forest_new(n_trees, k, err);
	/* jobs[n_threads]: the spare core's */
	jobs = cfl_calloc(n_threads + 1, sizeof(*jobs), err);
	tid = cfl_calloc(n_threads, sizeof(*tid), err);
	started = cfl_calloc(n_threads, 1, err);
	if (!f || !jobs || !tid || !started) {
		rc = -1;
		goto out;
	}
	g.m = m;
	g.cd = &cd;
	g.o = &o;
	g.f = f;
	g.bootstrap = cfl_param_bool(m, "bootstrap");
	atomic_store(&g.next, 0);
	g.may_borrow = n_threads == 1 && n_trees > 1;
	g.spare = &jobs[n_threads];
	for (size_t i = 0; i <= n_threads; i++)
		jobs[i] = (struct job){ .g = &g, .rc = i < n_threads ? -1 : 0 };
	/* job 0 runs here, and so does any job whose thread cannot start */
	for (size_t i = 1; i < n_threads; i++)
		started[i] = pthread_create(&tid[i], NULL, grow_trees,
					    &jobs[i]) == 0;
	grow_trees(&jobs[0]);
	for (size_t i = 1; i < n_threads; i++)
		if (!started[i])
			grow_trees(&jobs[i]);
	for (size_t i = 1; i < n_threads; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
	if (g.spare_on) {
		pthread_join(g.spare_tid, NULL);
		cfl_spare_return();
	}
	for (size_t i = 0; i <= n_threads; i++)
		if (jobs[i].rc) {
			memcpy(err, &jobs[i].err, sizeof(*err));
			rc = -1;
			goto out;
		}
	for (size_t i = 0; i <= n_threads; i++)
		m->budget_cut |= jobs[i].cut;
	f->spare_trees = jobs[n_threads].grown;
	if (cfl_param_bool(m, "oob_score") && g.bootstrap &&
	    oob_score(f, m, &cd, err)) {
		rc = -1;
		goto out;
	}
	if (m->budget_cut) {
		/* the trees grown, in their order (each has a root; the
		 * others were never started and hold nothing) */
		size_t kept = 0;

		for (size_t t = 0; t < f->n_trees; t++)
			if (f->trees[t].n_nodes)
				f->trees[kept++] = f->trees[t];
		f->n_trees = kept;
		m->n_iter_kept = kept;
	}
out:
	free(jobs);
	free(tid);
	free(started);
	cfl_cart_data_release(&cd);
	if (rc) {
		forest_free(f);
		return -1;
	}
	m->state = f;
	return 0;
}

size_t cfl_forest_spare_trees(const struct cfl_model *m)
{
	const struct forest *f = m->state;

	return f ? f->spare_trees : 0;
}

double cfl_forest_oob(const struct cfl_model *m)
{
	const struct forest *f = m->state;

	return f && f->has_oob ? f->oob : NAN;
}

/* ---- predict, save, load ---- */

static int forest_predict(const struct cfl_model *m, const float *x,
			  size_t n, double *out, struct cfl_err *err)
{
	const struct forest *f = m->state;
	size_t d = m->n_features, k = cfl_model_n_out(m);

	(void)err;
	memset(out, 0, n * k * sizeof(double));
	for (size_t t = 0; t < f->n_trees; t++)
		for (size_t i = 0; i < n; i++) {
			const double *v = cfl_ttree_leaf(&f->trees[t], x + i * d);

			for (size_t c = 0; c < k; c++)
				out[i * k + c] += v[c];
		}
	for (size_t i = 0; i < n * k; i++)
		out[i] /= (double)f->n_trees;
	return 0;
}

/* scikit-learn's feature_importances_: the mean over the trees that split
 * of each tree's importances (scaled to sum 1), scaled to sum 1; 1 when
 * the trees were read from a file. */
static int forest_importance(const struct cfl_model *m, double *out,
			     struct cfl_err *err)
{
	const struct forest *f = m->state;
	size_t d = m->n_features;
	double *one = cfl_calloc(d ? d : 1, sizeof(*one), err);

	if (!one)
		return -1;
	memset(out, 0, d * sizeof(*out));
	for (size_t t = 0; t < f->n_trees; t++) {
		if (!f->trees[t].has_gain) {
			free(one);
			return 1;
		}
		if (f->trees[t].n_nodes < 2)
			continue;
		memset(one, 0, d * sizeof(*one));
		cfl_ttree_add_gains(&f->trees[t], one);
		cfl_importance_normalize(one, d);
		for (size_t j = 0; j < d; j++)
			out[j] += one[j];
	}
	free(one);
	cfl_importance_normalize(out, d);
	return 0;
}

static int forest_save(const struct cfl_model *m, struct cfl_buf *out,
		       struct cfl_err *err)
{
	const struct forest *f = m->state;

	if (cfl_buf_printf(out, "forest %zu oob %d %.17g\n", f->n_trees,
			   f->has_oob, f->has_oob ? f->oob : 0))
		return cfl_err_set(err, "out of memory");
	for (size_t t = 0; t < f->n_trees; t++)
		if (cfl_ttree_save(&f->trees[t], out))
			return cfl_err_set(err, "out of memory");
	return 0;
}

static int forest_load(struct cfl_model *m, struct cfl_reader *in,
		       struct cfl_err *err)
{
	struct forest *f;
	size_t n_trees;
	long has_oob;
	double oob;

	if (cfl_reader_expect(in, "forest", err) ||
	    cfl_reader_size(in, 100000, &n_trees, err) ||
	    cfl_reader_expect(in, "oob", err) ||
	    cfl_reader_int(in, 0, 1, &has_oob, err) ||
	    cfl_reader_double(in, &oob, err))
		return -1;
	/* a tree takes ten bytes at least */
	if (n_trees == 0 || n_trees > (in->len - in->pos) / 10)
		return cfl_reader_fail(in, err, "forest has a bad tree count %zu",
				       n_trees);
	f = forest_new(n_trees, cfl_model_n_out(m), err);
	if (!f)
		return -1;
	f->has_oob = (int)has_oob;
	f->oob = oob;
	for (size_t t = 0; t < n_trees; t++)
		if (cfl_ttree_load(&f->trees[t], in, m->n_features,
				   cfl_model_n_out(m), err)) {
			forest_free(f);
			return -1;
		}
	m->state = f;
	return 0;
}

const struct cfl_model_ops cfl_forest_ops = {
	.name = "forest",
	.summary = "random forest: bagged CART trees with feature subsampling "
		   "(Extra-Trees with splitter=random)",
	.params = forest_params,
	.n_params = sizeof(forest_params) / sizeof(forest_params[0]),
	.fit = forest_fit,
	.predict = forest_predict,
	.save = forest_save,
	.load = forest_load,
	.release = forest_release,
	.importance = forest_importance,
};
