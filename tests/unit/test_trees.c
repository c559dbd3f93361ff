/*
 * Unit tests of the tree models (tree, forest, gbdt): splits checked by
 * hand on tiny data, exact fits, save -> load -> predict identity, seeds,
 * parameter errors, and the ensembles beating one tree on digits.  Data
 * sets are small so the suite stays fast.
 */
#include "runner.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>

#include "cfl/data.h"
#include "cfl/metrics.h"
#include "cfl/model.h"
#include "../../src/models/tree_int.h"

extern const struct cfl_model_ops cfl_tree_ops;

/* Fills xy from double rows (stored as float, as the encoder does). */
static void xy_from(struct cfl_xy *xy, const double *x, const double *y,
		    size_t n, size_t d, int n_classes)
{
	xy->n = n;
	xy->d = d;
	xy->n_classes = n_classes;
	xy->x = calloc(n * d + 1, sizeof(float));
	xy->y = calloc(n + 1, sizeof(double));
	CHECK(xy->x && xy->y);
	for (size_t i = 0; i < n * d; i++)
		xy->x[i] = (float)x[i];
	memcpy(xy->y, y, n * sizeof(double));
}

static void xy_free(struct cfl_xy *xy)
{
	free(xy->x);
	free(xy->y);
}

/* A model `name` with params "k=v" ... (NULL-terminated) and seed 1. */
static struct cfl_model *model_seeded(const char *name, uint64_t seed,
				      const char *first, va_list ap)
{
	struct cfl_params p;
	struct cfl_err err = { "" };
	struct cfl_model *m;
	const struct cfl_model_ops *ops = cfl_model_find(name);

	CHECK_MSG(ops, "model '%s' is not registered", name);
	cfl_params_init(&p);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		CHECK_MSG(cfl_params_set_arg(&p, a, &err) == 0, "%s", err.msg);
	m = cfl_model_new(ops, &p, seed, &err);
	CHECK_MSG(m, "%s", err.msg);
	cfl_params_release(&p);
	return m;
}

static struct cfl_model *model_with(const char *name, const char *first, ...)
{
	struct cfl_model *m;
	va_list ap;

	va_start(ap, first);
	m = model_seeded(name, 1, first, ap);
	va_end(ap);
	return m;
}

static struct cfl_model *model_seed(const char *name, uint64_t seed,
				    const char *first, ...)
{
	struct cfl_model *m;
	va_list ap;

	va_start(ap, first);
	m = model_seeded(name, seed, first, ap);
	va_end(ap);
	return m;
}

static void fit_ok(struct cfl_model *m, const struct cfl_xy *tr,
		   const struct cfl_xy *va)
{
	struct cfl_err err = { "" };

	CHECK_MSG(cfl_model_fit(m, tr, va, &err) == 0, "%s", err.msg);
}

/* Predictions of m on xy (caller frees). */
static double *predict(const struct cfl_model *m, const struct cfl_xy *xy)
{
	struct cfl_err err = { "" };
	double *out = calloc(xy->n * cfl_model_n_out(m) + 1, sizeof(double));

	CHECK(out);
	CHECK_MSG(cfl_model_predict(m, xy->x, xy->n, out, &err) == 0, "%s",
		  err.msg);
	return out;
}

/* Accuracy (classification) or RMSE (regression) of m on xy. */
static double score(const struct cfl_model *m, const struct cfl_xy *xy)
{
	double *out = predict(m, xy), s = 0;
	size_t k = cfl_model_n_out(m);

	for (size_t i = 0; i < xy->n; i++) {
		if (xy->n_classes > 0) {
			size_t best = 0;

			for (size_t c = 1; c < k; c++)
				if (out[i * k + c] > out[i * k + best])
					best = c;
			s += best == (size_t)xy->y[i];
		} else {
			s += (out[i] - xy->y[i]) * (out[i] - xy->y[i]);
		}
	}
	free(out);
	return xy->n_classes > 0 ? s / (double)xy->n : sqrt(s / (double)xy->n);
}

/* The model's state as text, to compare two models. */
static char *state_text(const struct cfl_model *m)
{
	struct cfl_buf b;
	struct cfl_err err = { "" };

	cfl_buf_init(&b);
	CHECK_MSG(m->ops->save(m, &b, &err) == 0, "%s", err.msg);
	return b.data;
}

static void load_data(struct cfl_data *d, const char *path)
{
	struct cfl_data_opts o;
	struct cfl_err err = { "" };

	cfl_data_opts_init(&o);
	o.path = path;
	o.seed = 0;
	CHECK_MSG(cfl_data_load(d, &o, &err) == 0, "%s", err.msg);
}

/* n rows of d uniform features; labels from a random rule with noise-free
 * distinct rows, so a full tree can fit them exactly. */
static void random_xy(struct cfl_xy *xy, size_t n, size_t d, int k,
		      uint64_t seed)
{
	struct cfl_rng r;
	double *x = calloc(n * d, sizeof(double)), *y = calloc(n, sizeof(double));

	cfl_rng_seed(&r, seed);
	for (size_t i = 0; i < n * d; i++)
		x[i] = cfl_rng_uniform(&r);
	for (size_t i = 0; i < n; i++)
		y[i] = k > 0 ? (double)cfl_rng_below(&r, (uint64_t)k) :
			       10 * x[i * d] + cfl_rng_normal(&r);
	xy_from(xy, x, y, n, d, k);
	free(x);
	free(y);
}

static void gridded_xy(struct cfl_xy *xy, size_t n, size_t d, int k,
		       int levels, uint64_t seed);

/* ---- tree ---- */

/* x = 1..4, y = 0 0 1 0: gini proxies 2.67 (1.5), 3 (2.5), 2.67 (3.5), so
 * the root splits at 2.5, its right child {1, 0} at 3.5. */
static void t_tree_known_split_gini(void)
{
	double x[] = { 1, 2, 3, 4 }, y[] = { 0, 0, 1, 0 };
	struct cfl_xy xy;
	struct cfl_model *m = model_with("tree", NULL);
	const struct cfl_ttree *t;

	xy_from(&xy, x, y, 4, 1, 2);
	fit_ok(m, &xy, NULL);
	t = m->state;
	CHECK_INT(t->n_nodes, 5);
	CHECK_INT(t->node[0].feat, 0);
	CHECK_NEAR(t->node[0].thr, 2.5, 0);
	CHECK_INT(t->node[t->node[0].left].feat, -1);
	CHECK_NEAR(t->value[t->node[0].left * 2], 1, 0);
	CHECK_NEAR(t->node[t->node[0].right].thr, 3.5, 0);
	cfl_model_free(m);
	xy_free(&xy);
}

/* Feature 0 is noise, feature 1 separates: the split is on 1 at the
 * midpoint, whatever order the features are drawn in. */
static void t_tree_known_split_feature(void)
{
	double x[] = { 5, 10, 1, 20, 4, 30, 2, 40, 3, 50, 6, 60 };
	double y[] = { 0, 0, 0, 1, 1, 1 };
	struct cfl_xy xy;

	xy_from(&xy, x, y, 6, 2, 2);
	for (uint64_t seed = 0; seed < 8; seed++) {
		struct cfl_model *m = model_seed("tree", seed, NULL);
		const struct cfl_ttree *t;

		fit_ok(m, &xy, NULL);
		t = m->state;
		CHECK_INT(t->n_nodes, 3);
		CHECK_INT(t->node[0].feat, 1);
		CHECK_NEAR(t->node[0].thr, 35, 0);
		cfl_model_free(m);
	}
	xy_free(&xy);
}

/* Squared error on x = 1..4, y = 1 1 5 7: sL^2/nL + sR^2/nR is 58.3 (1.5),
 * 74 (2.5), 65.3 (3.5); the left leaf is 1, the right subtree 5 | 7.
 * Entropy picks the same gini split in the class case above. */
static void t_tree_known_split_mse_entropy(void)
{
	double x[] = { 1, 2, 3, 4 }, y[] = { 1, 1, 5, 7 }, yc[] = { 0, 0, 1, 0 };
	struct cfl_xy xy, xc;
	struct cfl_model *m = model_with("tree", NULL);
	const struct cfl_ttree *t;

	xy_from(&xy, x, y, 4, 1, 0);
	fit_ok(m, &xy, NULL);
	t = m->state;
	CHECK_NEAR(t->node[0].thr, 2.5, 0);
	CHECK_NEAR(t->value[t->node[0].left], 1, 0);
	CHECK_NEAR(t->node[t->node[0].right].thr, 3.5, 0);
	cfl_model_free(m);
	m = model_with("tree", "criterion=entropy", NULL);
	xy_from(&xc, x, yc, 4, 1, 2);
	fit_ok(m, &xc, NULL);
	t = m->state;
	CHECK_NEAR(t->node[0].thr, 2.5, 0);
	cfl_model_free(m);
	xy_free(&xy);
	xy_free(&xc);
}

/* max_depth and min_samples_leaf bound the tree. */
static void t_tree_limits(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with("tree", "max_depth=2", NULL);
	const struct cfl_ttree *t;
	double *out;

	random_xy(&xy, 300, 4, 3, 5);
	fit_ok(m, &xy, NULL);
	t = m->state;
	CHECK(t->n_nodes <= 7);
	CHECK(score(m, &xy) < 1);
	cfl_model_free(m);
	m = model_with("tree", "min_samples_leaf=40", NULL);
	fit_ok(m, &xy, NULL);
	t = m->state;
	CHECK(t->n_nodes <= 2 * (300 / 40) - 1);
	/* every leaf value is a frequency over >= 40 rows */
	out = predict(m, &xy);
	for (size_t i = 0; i < 300 * 3; i++)
		CHECK(out[i] == 0 || out[i] >= 1.0 / 300);
	free(out);
	cfl_model_free(m);
	xy_free(&xy);
}

/* A tree of unlimited depth fits distinct training rows exactly. */
static void t_tree_fits_train_exactly(void)
{
	struct cfl_xy xy;
	struct cfl_model *m;

	random_xy(&xy, 400, 5, 3, 7);
	m = model_with("tree", NULL);
	fit_ok(m, &xy, NULL);
	CHECK_NEAR(score(m, &xy), 1, 0);
	cfl_model_free(m);
	xy_free(&xy);
	random_xy(&xy, 400, 5, 0, 8);
	m = model_with("tree", "criterion=squared_error", NULL);
	fit_ok(m, &xy, NULL);
	CHECK_NEAR(score(m, &xy), 0, 1e-9);
	cfl_model_free(m);
	xy_free(&xy);
}

/* Same seed, same model; another seed draws other features. */
static void t_tree_seeded(void)
{
	struct cfl_xy xy;
	struct cfl_model *a = model_seed("tree", 3, "max_features=sqrt", NULL);
	struct cfl_model *b = model_seed("tree", 3, "max_features=sqrt", NULL);
	struct cfl_model *c = model_seed("tree", 4, "max_features=sqrt", NULL);
	char *sa, *sb, *sc;

	random_xy(&xy, 300, 9, 2, 9);
	fit_ok(a, &xy, NULL);
	fit_ok(b, &xy, NULL);
	fit_ok(c, &xy, NULL);
	sa = state_text(a);
	sb = state_text(b);
	sc = state_text(c);
	CHECK_STR(sa, sb);
	CHECK(strcmp(sa, sc) != 0);
	free(sa);
	free(sb);
	free(sc);
	cfl_model_free(a);
	cfl_model_free(b);
	cfl_model_free(c);
	xy_free(&xy);
}

/* Saves m with d's encoder, loads it back, and checks predictions on the
 * test rows are bit-identical. */
static void check_roundtrip(struct cfl_model *m, struct cfl_data *d)
{
	char path[4200];
	struct cfl_encoder enc;
	struct cfl_err err = { "" };
	struct cfl_model *back;
	double *p1, *p2;

	snprintf(path, sizeof(path), "%s/roundtrip.cfl", cfl_test_dir());
	CHECK_MSG(cfl_model_save_file(m, &d->enc, path, &err) == 0, "%s", err.msg);
	back = cfl_model_load_file(path, &enc, &err);
	CHECK_MSG(back, "%s", err.msg);
	p1 = predict(m, &d->test);
	p2 = predict(back, &d->test);
	CHECK(memcmp(p1, p2, d->test.n * cfl_model_n_out(m) * sizeof(double)) == 0);
	free(p1);
	free(p2);
	cfl_model_free(back);
	cfl_encoder_release(&enc);
	remove(path);
}

static void t_tree_save_load(void)
{
	struct cfl_data d;
	struct cfl_model *m = model_with("tree", "criterion=entropy", NULL);

	load_data(&d, "datasets/breast_cancer.csv");
	fit_ok(m, &d.train, NULL);
	CHECK(score(m, &d.test) > 0.85);
	check_roundtrip(m, &d);
	cfl_model_free(m);
	cfl_data_release(&d);
	load_data(&d, "datasets/diabetes.csv");
	m = model_with("tree", "max_depth=4", NULL);
	fit_ok(m, &d.train, NULL);
	check_roundtrip(m, &d);
	cfl_model_free(m);
	cfl_data_release(&d);
}

/* Bad values are refused with the parameter's name, before any work. */
static void t_tree_bad_params(void)
{
	static const char *bad[][2] = {
		{ "criterion=foo", "criterion" },
		{ "max_depth=-1", "max_depth" },
		{ "max_depth=deep", "max_depth" },
		{ "min_samples_split=1", "min_samples_split" },
		{ "min_samples_leaf=0", "min_samples_leaf" },
		{ "max_features=half", "max_features" },
		{ "min_impurity_decrease=-1", "min_impurity_decrease" },
		{ "depth=3", "depth" },
	};
	struct cfl_xy xy;
	struct cfl_model *m;
	struct cfl_err err = { "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfl_params p;

		cfl_params_init(&p);
		CHECK(cfl_params_set_arg(&p, bad[i][0], &err) == 0);
		m = cfl_model_new(&cfl_tree_ops, &p, 1, &err);
		CHECK_MSG(!m, "%s was accepted", bad[i][0]);
		CHECK_CONTAINS(err.msg, bad[i][1]);
		cfl_params_release(&p);
	}
	/* words and numbers both pass */
	m = model_with("tree", "max_depth=none", "max_features=log2", NULL);
	cfl_model_free(m);
	m = model_with("tree", "max_depth=3", "max_features=2", NULL);
	cfl_model_free(m);
	/* a criterion of the other task fails at fit, naming it */
	random_xy(&xy, 20, 2, 0, 1);
	m = model_with("tree", "criterion=gini", NULL);
	CHECK(cfl_model_fit(m, &xy, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "criterion");
	cfl_model_free(m);
	xy_free(&xy);
	/* labels outside the classes */
	random_xy(&xy, 20, 2, 2, 1);
	xy.y[3] = 7;
	m = model_with("tree", NULL);
	CHECK(cfl_model_fit(m, &xy, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "label");
	cfl_model_free(m);
	xy_free(&xy);
}

/* A hostile state is an error naming the line, never a crash. */
static void t_tree_bad_files(void)
{
	static const char *states[] = {
		"tree nodes 3\ns 0 0.5 1 2 0\nl 1 0\nl 0 1\n",	/* good */
		"tree nodes 3\ns 0 0.5 0 2 0\nl 1 0\nl 0 1\n",	/* self loop */
		"tree nodes 3\ns 5 0.5 1 2 0\nl 1 0\nl 0 1\n",	/* feature */
		"tree nodes 3\ns 0 nan 1 2 0\nl 1 0\nl 0 1\n",	/* threshold */
		"tree nodes 3\ns 0 0.5 1 3 0\nl 1 0\nl 0 1\n",	/* child */
		"tree nodes 99999999\ns 0 0.5 1 2 0\n",		/* count */
		"tree nodes 2\nl 1 0\nx 1\n",			/* kind */
		"tree nodes 1\nl 1 inf\n",			/* value */
	};
	struct cfl_err err = { "" };

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		struct cfl_model *m = model_with("tree", NULL);
		struct cfl_reader r;
		int rc;

		m->n_features = 2;
		m->n_classes = 2;
		cfl_reader_init(&r, "m.cfl", states[i], strlen(states[i]));
		rc = m->ops->load(m, &r, &err);
		CHECK_MSG((rc == 0) == (i == 0), "state %zu: rc %d", i, rc);
		if (rc)
			CHECK_CONTAINS(err.msg, "m.cfl:");
		cfl_model_free(m);
	}
}

/* ---- forest ---- */

/* Forest and gbdt beat a single tree on digits (held-out rows). */
static void t_ensembles_beat_tree_on_digits(void)
{
	struct cfl_data d;
	struct cfl_model *t = model_with("tree", NULL);
	struct cfl_model *f = model_with("forest", "n_estimators=40", "threads=2", NULL);
	struct cfl_model *g = model_with("gbdt", "n_rounds=30", "threads=2", NULL);
	double st, sf, sg;

	load_data(&d, "datasets/digits.csv");
	fit_ok(t, &d.train, NULL);
	fit_ok(f, &d.train, NULL);
	fit_ok(g, &d.train, NULL);
	st = score(t, &d.test);
	sf = score(f, &d.test);
	sg = score(g, &d.test);
	CHECK_MSG(st > 0.7, "tree %g", st);
	CHECK_MSG(sf > st + 0.05, "forest %g vs tree %g", sf, st);
	CHECK_MSG(sg > st + 0.05, "gbdt %g vs tree %g", sg, st);
	cfl_model_free(t);
	cfl_model_free(f);
	cfl_model_free(g);
	cfl_data_release(&d);
}

/* The forest is the same on one thread or three; another seed differs. */
static void t_forest_seeded_threads(void)
{
	struct cfl_xy xy;
	struct cfl_model *a = model_seed("forest", 5, "n_estimators=7", NULL);
	struct cfl_model *b = model_seed("forest", 5, "n_estimators=7", "threads=3", NULL);
	struct cfl_model *c = model_seed("forest", 6, "n_estimators=7", NULL);
	char *sa, *sb, *sc;

	random_xy(&xy, 200, 6, 3, 2);
	fit_ok(a, &xy, NULL);
	fit_ok(b, &xy, NULL);
	fit_ok(c, &xy, NULL);
	sa = state_text(a);
	sb = state_text(b);
	sc = state_text(c);
	CHECK_STR(sa, sb);
	CHECK(strcmp(sa, sc) != 0);
	free(sa);
	free(sb);
	free(sc);
	cfl_model_free(a);
	cfl_model_free(b);
	cfl_model_free(c);
	xy_free(&xy);
}

/* Takes the spare core back once the fit has claimed it. */
static void *take_back_when_claimed(void *arg)
{
	(void)arg;
	while (cfl_spare_count() > 0)
		sched_yield();
	cfl_spare_offer(0);
	return NULL;
}

/* A forest with threads=1 takes a core its pool has spare for a second
 * thread that grows trees too: the model, out-of-bag score included, is
 * the same text as without it or on three threads (which take no spare
 * core); the core goes back after the fit, and when the pool wants it back
 * mid-fit the thread leaves between two trees, the model again the same. */
static void t_forest_spare_core(void)
{
	struct cfl_xy xy;
	struct cfl_err err = { "" };
	struct cfl_model *a = model_seed("forest", 5, "n_estimators=40", "oob_score=true", NULL);
	struct cfl_model *b = model_seed("forest", 5, "n_estimators=40", "oob_score=true", NULL);
	struct cfl_model *c = model_seed("forest", 5, "n_estimators=40", "oob_score=true",
					 "threads=3", NULL);
	struct cfl_model *d = model_seed("forest", 5, "n_estimators=40", "oob_score=true", NULL);
	char *sa, *sb, *sc, *sd;
	pthread_t th;

	random_xy(&xy, 3000, 8, 3, 4);
	CHECK_MSG(cfl_spare_init(&err) == 0, "%s", err.msg);
	cfl_spare_offer(0);
	fit_ok(a, &xy, NULL);
	CHECK_INT(cfl_forest_spare_trees(a), 0);
	cfl_spare_offer(1);
	fit_ok(b, &xy, NULL);
	CHECK_MSG(cfl_forest_spare_trees(b) > 0, "%zu trees on the spare core",
		  cfl_forest_spare_trees(b));
	CHECK_INT(cfl_spare_count(), 1);
	fit_ok(c, &xy, NULL);
	CHECK_INT(cfl_forest_spare_trees(c), 0);
	CHECK_INT(cfl_spare_count(), 1);
	CHECK(pthread_create(&th, NULL, take_back_when_claimed, NULL) == 0);
	fit_ok(d, &xy, NULL);
	pthread_join(th, NULL);
	CHECK_INT(cfl_spare_count(), 0);
	CHECK(cfl_forest_spare_trees(d) < 40);
	sa = state_text(a);
	sb = state_text(b);
	sc = state_text(c);
	sd = state_text(d);
	CHECK_STR(sb, sa);
	CHECK_STR(sc, sa);
	CHECK_STR(sd, sa);
	CHECK(cfl_forest_oob(a) == cfl_forest_oob(b) && cfl_forest_oob(a) == cfl_forest_oob(c));
	free(sa);
	free(sb);
	free(sc);
	free(sd);
	cfl_model_free(a);
	cfl_model_free(b);
	cfl_model_free(c);
	cfl_model_free(d);
	xy_free(&xy);
}

/* Probabilities are the mean of the trees' leaf frequencies: rows sum to
 * one; the out-of-bag score is there only when asked for. */
static void t_forest_proba_oob(void)
{
	struct cfl_data d;
	struct cfl_model *f = model_with("forest", "n_estimators=20", "oob_score=true", NULL);
	struct cfl_model *n = model_with("forest", "n_estimators=5", NULL);
	double *out;

	load_data(&d, "datasets/iris.csv");
	fit_ok(f, &d.train, NULL);
	fit_ok(n, &d.train, NULL);
	out = predict(f, &d.test);
	for (size_t i = 0; i < d.test.n; i++)
		CHECK_NEAR(out[3 * i] + out[3 * i + 1] + out[3 * i + 2], 1, 1e-12);
	free(out);
	CHECK_MSG(cfl_forest_oob(f) > 0.8 && cfl_forest_oob(f) <= 1,
		  "oob %g", cfl_forest_oob(f));
	CHECK(isnan(cfl_forest_oob(n)));
	check_roundtrip(f, &d);
	cfl_model_free(f);
	cfl_model_free(n);
	cfl_data_release(&d);
}

/* Regression: a forest beats one tree and survives save/load. */
static void t_forest_regression(void)
{
	struct cfl_data d;
	struct cfl_model *t = model_with("tree", NULL);
	struct cfl_model *f = model_with("forest", "n_estimators=30", "oob_score=1", NULL);

	load_data(&d, "datasets/diabetes.csv");
	fit_ok(t, &d.train, NULL);
	fit_ok(f, &d.train, NULL);
	CHECK(score(f, &d.test) < score(t, &d.test));
	CHECK(cfl_forest_oob(f) > 0 && cfl_forest_oob(f) < 1);
	check_roundtrip(f, &d);
	cfl_model_free(t);
	cfl_model_free(f);
	cfl_data_release(&d);
}

static void check_bad(const char *model, const char *arg, const char *name)
{
	struct cfl_params p;
	struct cfl_err err = { "" };
	struct cfl_model *m;

	cfl_params_init(&p);
	CHECK(cfl_params_set_arg(&p, arg, &err) == 0);
	m = cfl_model_new(cfl_model_find(model), &p, 1, &err);
	CHECK_MSG(!m, "%s %s was accepted", model, arg);
	CHECK_CONTAINS(err.msg, name);
	cfl_params_release(&p);
}

static void t_ensemble_bad_params(void)
{
	struct cfl_data d;
	struct cfl_model *m;
	struct cfl_err err = { "" };

	check_bad("forest", "n_estimators=0", "n_estimators");
	check_bad("forest", "threads=0", "threads");
	check_bad("forest", "bootstrap=maybe", "bootstrap");
	check_bad("forest", "max_features=most", "max_features");
	check_bad("forest", "splitter=foo", "splitter");
	check_bad("tree", "splitter=random_", "splitter");
	check_bad("gbdt", "learning_rate=-1", "learning_rate");
	check_bad("gbdt", "max_bins=300", "max_bins");
	check_bad("gbdt", "subsample=0", "subsample");
	check_bad("gbdt", "colsample_bytree=2", "colsample_bytree");
	check_bad("gbdt", "loss=hinge", "loss");
	check_bad("gbdt", "max_depth=deep", "max_depth");
	check_bad("gbdt", "lambda=-1", "lambda");
	check_bad("gbdt", "n_trees=5", "n_trees");
	load_data(&d, "datasets/iris.csv");
	m = model_with("gbdt", "loss=logistic", NULL);
	CHECK(cfl_model_fit(m, &d.train, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "logistic");
	cfl_model_free(m);
	m = model_with("gbdt", "loss=squared_error", NULL);
	CHECK(cfl_model_fit(m, &d.train, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "squared_error");
	cfl_model_free(m);
	m = model_with("gbdt", "max_depth=none", NULL);
	CHECK(cfl_model_fit(m, &d.train, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "max_leaves");
	cfl_model_free(m);
	cfl_data_release(&d);
}

/* ---- splitter=random (Extra-Trees) ---- */

/* x = 1..8, y = 0 0 0 0 1 1 1 1: the best split is 4.5.  A random
 * splitter's root threshold is drawn in [1, 8): it differs from 4.5 for
 * some seed, always lies in the range, and the tree still fits the rows
 * exactly (further random splits).  A feature constant in the node is
 * skipped: with a constant first column every split is on the second. */
static void t_random_splitter_thresholds(void)
{
	double x[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, y[] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	double x2[16];
	struct cfl_xy xy, xc;
	int differs = 0;

	xy_from(&xy, x, y, 8, 1, 2);
	for (size_t i = 0; i < 8; i++) {
		x2[2 * i] = 3;
		x2[2 * i + 1] = x[i];
	}
	xy_from(&xc, x2, y, 8, 2, 2);
	for (uint64_t seed = 0; seed < 10; seed++) {
		struct cfl_model *b = model_seed("tree", seed, NULL);
		struct cfl_model *r = model_seed("tree", seed, "splitter=random", NULL);
		const struct cfl_ttree *t;

		fit_ok(b, &xy, NULL);
		fit_ok(r, &xy, NULL);
		CHECK_NEAR(((const struct cfl_ttree *)b->state)->node[0].thr, 4.5, 0);
		t = r->state;
		CHECK_INT(t->node[0].feat, 0);
		CHECK_MSG(t->node[0].thr >= 1 && t->node[0].thr < 8, "threshold %g",
			  t->node[0].thr);
		differs += t->node[0].thr != 4.5;
		CHECK_NEAR(score(r, &xy), 1, 0);
		cfl_model_free(r);
		r = model_seed("tree", seed, "splitter=random", NULL);
		fit_ok(r, &xc, NULL);
		t = r->state;
		for (size_t i = 0; i < t->n_nodes; i++)
			CHECK(t->node[i].feat == -1 || t->node[i].feat == 1);
		CHECK_NEAR(score(r, &xc), 1, 0);
		cfl_model_free(b);
		cfl_model_free(r);
	}
	CHECK_MSG(differs > 0, "the random splitter found 4.5 for every seed");
	xy_free(&xy);
	xy_free(&xc);
}

/* Missing values go right; a feature whose values in a node are one
 * number and missing splits the two apart at that number. */
static void t_random_splitter_missing(void)
{
	double x[] = { 2, 2, 2, NAN, NAN, NAN }, y[] = { 0, 0, 0, 1, 1, 1 };
	struct cfl_xy xy;
	struct cfl_model *m = model_with("tree", "splitter=random", NULL);
	const struct cfl_ttree *t;

	xy_from(&xy, x, y, 6, 1, 2);
	fit_ok(m, &xy, NULL);
	t = m->state;
	CHECK_INT(t->n_nodes, 3);
	CHECK_NEAR(t->node[0].thr, 2, 0);
	CHECK_INT(t->node[0].miss_left, 0);
	CHECK_NEAR(score(m, &xy), 1, 0);
	cfl_model_free(m);
	xy_free(&xy);
}

/* An Extra-Trees forest is seeded (same seed, same model; another seed,
 * another), the same on one thread or two, and different from the
 * best-split forest; regression and entropy too. */
static void t_random_splitter_seeded_threads(void)
{
	static const char *const crit[] = { "criterion=gini", "criterion=entropy",
					    "criterion=squared_error" };

	for (int c = 0; c < 3; c++) {
		struct cfl_xy xy;
		struct cfl_model *a = model_seed("forest", 5, "n_estimators=7", "splitter=random", crit[c], NULL);
		struct cfl_model *b = model_seed("forest", 5, "n_estimators=7", "splitter=random", crit[c],
						 "threads=2", NULL);
		struct cfl_model *o = model_seed("forest", 6, "n_estimators=7", "splitter=random", crit[c], NULL);
		struct cfl_model *e = model_seed("forest", 5, "n_estimators=7", crit[c], NULL);
		char *sa, *sb, *so, *se;

		gridded_xy(&xy, 300, 6, c < 2 ? 3 : 0, 5, 2);
		fit_ok(a, &xy, NULL);
		fit_ok(b, &xy, NULL);
		fit_ok(o, &xy, NULL);
		fit_ok(e, &xy, NULL);
		sa = state_text(a);
		sb = state_text(b);
		so = state_text(o);
		se = state_text(e);
		CHECK_STR(sa, sb);
		CHECK(strcmp(sa, so) != 0);
		CHECK(strcmp(sa, se) != 0);
		free(sa);
		free(sb);
		free(so);
		free(se);
		cfl_model_free(a);
		cfl_model_free(b);
		cfl_model_free(o);
		cfl_model_free(e);
		xy_free(&xy);
	}
}

/* On digits Extra-Trees (scikit-learn's defaults: no bootstrap) scores
 * within a few points of the random forest on the held-out rows, and
 * survives save and load bit for bit. */
static void t_random_splitter_digits(void)
{
	struct cfl_data d;
	struct cfl_model *f = model_with("forest", "n_estimators=40", "threads=2", NULL);
	struct cfl_model *x = model_with("forest", "n_estimators=40", "threads=2",
					 "splitter=random", "bootstrap=false", NULL);
	double sf, sx;

	load_data(&d, "datasets/digits.csv");
	fit_ok(f, &d.train, NULL);
	fit_ok(x, &d.train, NULL);
	sf = score(f, &d.test);
	sx = score(x, &d.test);
	CHECK_MSG(sx > sf - 0.03, "extra-trees %g vs forest %g", sx, sf);
	check_roundtrip(x, &d);
	cfl_model_free(f);
	cfl_model_free(x);
	cfl_data_release(&d);
}

/* ---- gbdt ---- */

/* One round, learning rate 1, no penalty, depth 1 on x = 1..4, y = 1 1 5 7:
 * base 3.5, gradients 2.5 2.5 -1.5 -3.5; gains 8.33 (1.5), 25 (2.5),
 * 16.3 (3.5); leaves -2.5 and +2.5: predictions 1 1 6 6. */
static void t_gbdt_known_split(void)
{
	double x[] = { 1, 2, 3, 4 }, y[] = { 1, 1, 5, 7 };
	struct cfl_xy xy;
	struct cfl_model *m = model_with("gbdt", "n_rounds=1", "learning_rate=1",
					 "lambda=0", "min_child_weight=0",
					 "max_depth=1", NULL);
	double *out;
	char *st;

	xy_from(&xy, x, y, 4, 1, 0);
	fit_ok(m, &xy, NULL);
	out = predict(m, &xy);
	CHECK_NEAR(out[0], 1, 1e-12);
	CHECK_NEAR(out[1], 1, 1e-12);
	CHECK_NEAR(out[2], 6, 1e-12);
	CHECK_NEAR(out[3], 6, 1e-12);
	st = state_text(m);
	CHECK_CONTAINS(st, "s 0 2.5 1 2");
	free(st);
	free(out);
	cfl_model_free(m);
	xy_free(&xy);
}

/* No penalty and no least hessian (lambda=0, min_child_weight=0) on a
 * separable set: the probabilities saturate, rows get a hessian of exactly
 * 0, and a leaf of them divided by 0 (every test prediction of iris was
 * infinite or NaN).  Such a leaf weighs 0 and such a split is not taken,
 * as in XGBoost: the predictions stay finite and the model good. */
static void t_gbdt_no_penalty_stays_finite(void)
{
	struct cfl_data d;
	struct cfl_model *m = model_with("gbdt", "n_rounds=200", "lambda=0",
					 "min_child_weight=0", NULL);
	double *out;
	size_t k, bad = 0;

	load_data(&d, "datasets/iris.csv");
	fit_ok(m, &d.train, NULL);
	out = predict(m, &d.test);
	k = (size_t)d.test.n_classes;
	for (size_t i = 0; i < d.test.n * k; i++)
		bad += !isfinite(out[i]);
	CHECK_MSG(bad == 0, "%zu of %zu probabilities not finite", bad, d.test.n * k);
	CHECK_MSG(score(m, &d.test) > 0.85, "acc %g", score(m, &d.test));
	free(out);
	cfl_model_free(m);
	cfl_data_release(&d);
}

/* Missing values learn their direction: NaN rows belong with x <= 0.7,
 * on the left, where no default would put them. */
static void t_gbdt_missing_direction(void)
{
	enum { N = 300 };
	double x[N], y[N];
	struct cfl_rng r;
	struct cfl_xy xy;
	struct cfl_model *m = model_with("gbdt", "n_rounds=20", "max_depth=2", NULL);
	float probe[3] = { NAN, 0.2f, 0.9f };
	struct cfl_err err = { "" };
	double po[6];

	cfl_rng_seed(&r, 3);
	for (size_t i = 0; i < N; i++) {
		x[i] = cfl_rng_uniform(&r);
		y[i] = x[i] > 0.7;
		if (i % 4 == 0) {
			x[i] = NAN;
			y[i] = 0;
		}
	}
	xy_from(&xy, x, y, N, 1, 2);
	fit_ok(m, &xy, NULL);
	CHECK_NEAR(score(m, &xy), 1, 0);
	CHECK(cfl_model_predict(m, probe, 3, po, &err) == 0);
	CHECK(po[0] > 0.9);	/* NaN: class 0 */
	CHECK(po[3] < 0.1);	/* 0.2: class 0 */
	CHECK(po[5] > 0.9);	/* 0.9: class 1 */
	cfl_model_free(m);
	xy_free(&xy);
}

/* Fits a and b on xy (no validation part) and frees them: 1 when their
 * fitted states are the same text. */
static int fits_alike(struct cfl_model *a, struct cfl_model *b, const struct cfl_xy *xy)
{
	char *sa, *sb;
	int same;

	fit_ok(a, xy, NULL);
	fit_ok(b, xy, NULL);
	sa = state_text(a);
	sb = state_text(b);
	same = strcmp(sa, sb) == 0;
	free(sa);
	free(sb);
	cfl_model_free(a);
	cfl_model_free(b);
	return same;
}

/* Early stopping on validation keeps fewer rounds than asked on noise. */
static void t_gbdt_early_stopping(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *m = model_with("gbdt", "n_rounds=300",
					 "early_stopping_rounds=5", NULL);
	char *st;
	unsigned long rounds = 0;

	random_xy(&tr, 200, 3, 0, 21);
	random_xy(&va, 100, 3, 0, 22);
	fit_ok(m, &tr, &va);
	st = state_text(m);
	CHECK(sscanf(st, "gbdt squared_error 1 %lu", &rounds) == 1);
	CHECK_MSG(rounds >= 1 && rounds < 100, "%lu rounds", rounds);
	free(st);
	cfl_model_free(m);
	/* without validation rows every round is kept */
	m = model_with("gbdt", "n_rounds=30", "early_stopping_rounds=5", NULL);
	fit_ok(m, &tr, NULL);
	st = state_text(m);
	CHECK(sscanf(st, "gbdt squared_error 1 %lu", &rounds) == 1);
	CHECK_INT(rounds, 30);
	free(st);
	cfl_model_free(m);
	/* unless valid_frac holds a part of them out to stop on (and the
	 * same seed holds out the same part) */
	m = model_with("gbdt", "n_rounds=300", "early_stopping_rounds=5", "valid_frac=0.3", NULL);
	fit_ok(m, &tr, NULL);
	st = state_text(m);
	CHECK(sscanf(st, "gbdt squared_error 1 %lu", &rounds) == 1);
	CHECK_MSG(rounds >= 1 && rounds < 100, "valid_frac: %lu rounds", rounds);
	CHECK_INT(m->n_iter_kept, rounds);
	free(st);
	CHECK(fits_alike(m, model_with("gbdt", "n_rounds=300", "early_stopping_rounds=5",
				       "valid_frac=0.3", NULL), &tr));
	/* valid_frac without early_stopping_rounds holds nothing out */
	CHECK(fits_alike(model_with("gbdt", "n_rounds=30", "valid_frac=0.3", NULL),
			 model_with("gbdt", "n_rounds=30", NULL), &tr));
	xy_free(&tr);
	xy_free(&va);
}

/* max_leaves bounds every tree; subsampling is seeded. */
static void t_gbdt_leaves_and_seeds(void)
{
	struct cfl_xy xy;
	struct cfl_model *a = model_seed("gbdt", 4, "n_rounds=10", "max_leaves=4",
					 "max_depth=none", "subsample=0.7",
					 "colsample_bytree=0.5", NULL);
	struct cfl_model *b = model_seed("gbdt", 4, "n_rounds=10", "max_leaves=4",
					 "max_depth=none", "subsample=0.7",
					 "colsample_bytree=0.5", "threads=2", NULL);
	struct cfl_model *c = model_seed("gbdt", 5, "n_rounds=10", "max_leaves=4",
					 "max_depth=none", "subsample=0.7",
					 "colsample_bytree=0.5", NULL);
	char *sa, *sb, *sc, *p;

	random_xy(&xy, 300, 6, 3, 23);
	fit_ok(a, &xy, NULL);
	fit_ok(b, &xy, NULL);
	fit_ok(c, &xy, NULL);
	sa = state_text(a);
	sb = state_text(b);
	sc = state_text(c);
	CHECK_STR(sa, sb);	/* softmax trees per thread: same model */
	CHECK(strcmp(sa, sc) != 0);
	for (p = strstr(sa, "nodes "); p; p = strstr(p + 1, "nodes "))
		CHECK_MSG(atoi(p + 6) <= 7, "a tree has %d nodes", atoi(p + 6));
	free(sa);
	free(sb);
	free(sc);
	cfl_model_free(a);
	cfl_model_free(b);
	cfl_model_free(c);
	xy_free(&xy);
}

/* Threads share each split search by features: with one tree a round,
 * large enough nodes to be shared, the model is the same on 1 or 3. */
static void t_gbdt_threads_same_model(void)
{
	struct cfl_xy xy;
	struct cfl_model *a = model_with("gbdt", "n_rounds=4", NULL);
	struct cfl_model *b = model_with("gbdt", "n_rounds=4", "threads=3", NULL);
	char *sa, *sb;

	random_xy(&xy, 8000, 10, 0, 31);
	fit_ok(a, &xy, NULL);
	fit_ok(b, &xy, NULL);
	sa = state_text(a);
	sb = state_text(b);
	CHECK(strcmp(sa, sb) == 0);
	free(sa);
	free(sb);
	cfl_model_free(a);
	cfl_model_free(b);
	xy_free(&xy);
}

/* Every loss survives save/load with identical predictions. */
static void t_gbdt_save_load(void)
{
	static const char *sets[] = { "datasets/breast_cancer.csv",
				      "datasets/iris.csv",
				      "datasets/diabetes.csv" };

	for (size_t i = 0; i < 3; i++) {
		struct cfl_data d;
		struct cfl_model *m = model_with("gbdt", "n_rounds=15", NULL);

		load_data(&d, sets[i]);
		fit_ok(m, &d.train, &d.valid);
		check_roundtrip(m, &d);
		cfl_model_free(m);
		cfl_data_release(&d);
	}
}

/* Rows like random_xy's, with a value grid of `levels` steps (so some
 * features have fewer values than bins) and every seventh value of the
 * odd features missing. */
static void gridded_xy(struct cfl_xy *xy, size_t n, size_t d, int k,
		       int levels, uint64_t seed)
{
	random_xy(xy, n, d, k, seed);
	for (size_t i = 0; i < n * d; i++) {
		if ((i % d) % 2 && i % 7 == 3)
			xy->x[i] = NAN;
		else if ((i % d) % 4 == 2)
			xy->x[i] = floorf(xy->x[i] * (float)levels) / (float)levels;
	}
}

/* Fits m on tr (va: its validation rows, or NULL), checks the SHA-256 of
 * its state and its predictions on tr against want (case c), then frees m
 * and tr. */
static void check_bits(struct cfl_model *m, struct cfl_xy *tr,
		       const struct cfl_xy *va, const char *want, size_t c)
{
	char *text;
	double *out;
	const char *hex;

	fit_ok(m, tr, va);
	text = state_text(m);
	out = predict(m, tr);
	hex = cfl_test_sha_hex(text, out, tr->n * cfl_model_n_out(m));
	CHECK_MSG(strcmp(hex, want) == 0, "case %zu: %s, before %s", c, hex, want);
	free(text);
	free(out);
	cfl_model_free(m);
	xy_free(tr);
}

/* The speed work on gbdt's training loop (the partition, the split search,
 * the histograms) keeps every model bit for bit: the saved model and its
 * predictions hash to what the code before wrote (the SHA-256 below,
 * printed by it).  Every loss, missing values, few-valued features,
 * subsample and colsample, leaves grown best first, early stopping, and
 * one to three threads (steps shared by features, trees of a round). */
static void t_gbdt_same_bits_as_before(void)
{
	static const struct {
		size_t n, d;
		int k;
		const char *p[6];
		const char *sha;
	} cf[] = {
		{ 10000, 8, 2, { "n_rounds=12", "subsample=0.8", "colsample_bytree=0.7",
				"max_bins=32", "threads=2", NULL },
		  "753ebb2c1024670572a5d81b656645a33fc6eeafaa3f03e93705a05229e4bd38" },
		{ 3000, 6, 3, { "n_rounds=8", "threads=3", NULL },
		  "f5dbe5374cfb92dfa95853d35892f68fa980901519bf8925c0ac6c24eff1e402" },
		{ 3000, 6, 3, { "n_rounds=8", "max_depth=3", "lambda=0.5", NULL },
		  "fbda0228217257beddd72f3aff130a50700b384203c7f8f970a907b6873f0c95" },
		{ 4000, 5, 0, { "n_rounds=10", "max_depth=none", "max_leaves=20",
			       "min_child_weight=3", NULL },
		  "d0a352194ee56769c6680d535d3afe73946735be93e8bae98f3997b913ac7338" },
		{ 4000, 5, 0, { "n_rounds=10", "gamma=0.5", "early_stopping_rounds=3", NULL },
		  "fb06abe63b281768c72c900b23df00346f5878ebc0a91619a78e8f83587a751b" },
	};

	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const char *const *p = cf[c].p;
		struct cfl_model *m = model_seed("gbdt", 3 + c, p[0], p[1], p[2], p[3], p[4], p[5], NULL);
		struct cfl_xy tr, va;

		gridded_xy(&tr, cf[c].n, cf[c].d, cf[c].k, 5 + (int)c, 40 + c);
		gridded_xy(&va, cf[c].n / 4, cf[c].d, cf[c].k, 5 + (int)c, 60 + c);
		check_bits(m, &tr, &va, cf[c].sha, c);
		xy_free(&va);
	}
}

/* The Extra-Trees splitter (splitter=random) left the exact grower as it
 * was: tree and forest models and their predictions hash to what the code
 * before it wrote (the SHA-256 below, printed by it): missing values,
 * few-valued features, every criterion, bootstrap or not, leaf and depth
 * limits, min_impurity_decrease, one to three threads. */
static void t_cart_same_bits_as_before(void)
{
	static const struct {
		const char *model;
		size_t n, d;
		int k;
		const char *p[6];
		const char *sha;
	} cf[] = {
		{ "tree", 2000, 7, 3, { "max_features=sqrt", NULL },
		  "bbb332af559689ae74872d80686133e613a7ad94446bcf7c8d384500ffec8e13" },
		{ "tree", 2000, 6, 0, { "min_samples_leaf=3", "max_depth=9", NULL },
		  "d01ee044d85148b1fdcc05bfe64a3532b683382a890ffb5374659b29c752a307" },
		{ "forest", 3000, 8, 2, { "n_estimators=6", "threads=2", NULL },
		  "d5570ac964a21dab43bdbb2e8918f4f4e775cf9c67cf380a057df59d27247e20" },
		{ "forest", 2000, 6, 4, { "n_estimators=5", "criterion=entropy",
					  "bootstrap=false", "max_features=log2", NULL },
		  "241e789247343062e4145ca6024c635cbb2fd9030f7fab39b7bc4f6e030ff57b" },
		{ "forest", 2500, 5, 0, { "n_estimators=5", "threads=3",
					  "min_impurity_decrease=0.001", "oob_score=true", NULL },
		  "a6bf13c8851a27e6cc8c24e3586fc67b11f561fb85fc4e41e7e6b0d956a5239d" },
	};

	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const char *const *p = cf[c].p;
		struct cfl_model *m = model_seed(cf[c].model, 7 + c, p[0], p[1], p[2], p[3], p[4], p[5], NULL);
		struct cfl_xy tr;

		gridded_xy(&tr, cf[c].n, cf[c].d, cf[c].k, 6 + (int)c, 80 + c);
		check_bits(m, &tr, NULL, cf[c].sha, c);
	}
}

/* ---- feature importance ---- */

/* Rows (x0, x1) -> class: (0,0) 0, (0,1) 0, (1,0) 1, (1,1) 2.  Root gini
 * 0.625; x0 leaves {0,0} and {1,2} (0.5 each side at half weight): a
 * decrease of 0.375; then x1 splits {1,2}: 2/4 * 0.5 = 0.25.  Normalised:
 * 0.6 and 0.4, as scikit-learn's feature_importances_. */
static void t_importance_tree_by_hand(void)
{
	double x[] = { 0, 0, 0, 1, 1, 0, 1, 1 }, y[] = { 0, 0, 1, 2 };
	double imp[2];
	struct cfl_xy xy;
	struct cfl_err err = { "" };
	struct cfl_model *m = model_with("tree", NULL);

	xy_from(&xy, x, y, 4, 2, 3);
	fit_ok(m, &xy, NULL);
	CHECK_INT(cfl_model_importance(m, imp, &err), 0);
	CHECK_NEAR(imp[0], 0.6, 1e-12);
	CHECK_NEAR(imp[1], 0.4, 1e-12);
	cfl_model_free(m);
	xy_free(&xy);
}

/* y = 10 x0 + noise beside a noise feature: every tree model puts nearly
 * all its importance on x0, the importances sum to 1, a model read back
 * from its file has none (the gains are not saved), linear has none. */
static void t_importance_models(void)
{
	static const char *models[] = { "tree", "forest", "gbdt" };
	struct cfl_xy xy;
	struct cfl_data d;
	struct cfl_err err = { "" };
	double imp[3];

	random_xy(&xy, 300, 3, 0, 7);
	for (size_t i = 0; i < 3; i++) {
		struct cfl_model *m = model_with(models[i], "max_depth=4", NULL);

		fit_ok(m, &xy, NULL);
		CHECK_MSG(cfl_model_importance(m, imp, &err) == 0, "%s: %s", models[i], err.msg);
		CHECK_NEAR(imp[0] + imp[1] + imp[2], 1, 1e-12);
		CHECK_MSG(imp[0] > 0.8, "%s: x0 has %g", models[i], imp[0]);
		cfl_model_free(m);
	}
	load_data(&d, "datasets/iris.csv");
	{
		char path[4200];
		struct cfl_encoder enc;
		struct cfl_model *m = model_with("forest", "n_estimators=5", NULL), *back;
		double f[16];

		fit_ok(m, &d.train, NULL);
		snprintf(path, sizeof(path), "%s/imp.cfl", cfl_test_dir());
		CHECK_MSG(cfl_model_save_file(m, &d.enc, path, &err) == 0, "%s", err.msg);
		back = cfl_model_load_file(path, &enc, &err);
		CHECK_MSG(back, "%s", err.msg);
		CHECK_INT(cfl_model_importance(back, f, &err), 1);
		cfl_model_free(back);
		cfl_encoder_release(&enc);
		cfl_model_free(m);
		m = model_with("linear", NULL);
		fit_ok(m, &d.train, NULL);
		CHECK_INT(cfl_model_importance(m, f, &err), 1);
		cfl_model_free(m);
	}
	cfl_data_release(&d);
	xy_free(&xy);
}

/* The gain a split records comes from the scan's proxy; with
 * min_impurity_decrease set it is counted over the rows instead: the two
 * agree for every criterion (the same tree, the same importances). */
static void t_importance_proxy_equals_rows(void)
{
	static const char *const crit[] = { "criterion=gini", "criterion=entropy",
					    "criterion=squared_error" };
	struct cfl_data d;
	struct cfl_err err = { "" };

	for (int c = 0; c < 3; c++) {
		double a[64], b[64];
		struct cfl_model *m1, *m2;

		load_data(&d, c < 2 ? "datasets/breast_cancer.csv" : "datasets/diabetes.csv");
		m1 = model_with("tree", crit[c], "max_depth=6", NULL);
		m2 = model_with("tree", crit[c], "max_depth=6", "min_impurity_decrease=1e-300", NULL);
		fit_ok(m1, &d.train, NULL);
		fit_ok(m2, &d.train, NULL);
		CHECK(cfl_model_importance(m1, a, &err) == 0);
		CHECK(cfl_model_importance(m2, b, &err) == 0);
		for (size_t j = 0; j < d.train.d; j++)
			CHECK_NEAR(a[j], b[j], 1e-9);
		cfl_model_free(m1);
		cfl_model_free(m2);
		cfl_data_release(&d);
	}
}

/* Permutation importance: the informative column drops the score, the
 * noise ones barely; the same seed gives the same values, another seed
 * others; a group shuffles its columns together; bad groups are refused. */
static void t_importance_permutation(void)
{
	struct cfl_xy tr, va;
	struct cfl_err err = { "" };
	struct cfl_model *m = model_with("tree", "max_depth=4", NULL);
	int group[3] = { 0, 1, 2 }, one[3] = { 0, 0, 0 }, bad[3] = { 0, 3, 1 };
	double a[3], b[3], c[3], g[1];
	int mse = cfl_metric_lookup("mse");

	random_xy(&tr, 300, 3, 0, 7);
	random_xy(&va, 100, 3, 0, 8);
	fit_ok(m, &tr, NULL);
	CHECK_MSG(cfl_model_permutation_importance(m, &va, group, 3, mse, 3, 42, a, &err) == 0,
		  "%s", err.msg);
	CHECK_MSG(a[0] > 5 && fabs(a[1]) < a[0] / 10 && fabs(a[2]) < a[0] / 10,
		  "importances %g %g %g", a[0], a[1], a[2]);
	CHECK(cfl_model_permutation_importance(m, &va, group, 3, mse, 3, 42, b, &err) == 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK(cfl_model_permutation_importance(m, &va, group, 3, mse, 3, 43, c, &err) == 0);
	CHECK(c[0] != a[0]);
	CHECK(cfl_model_permutation_importance(m, &va, one, 1, mse, 3, 42, g, &err) == 0);
	CHECK(g[0] > 5);
	CHECK_INT(cfl_model_permutation_importance(m, &va, bad, 2, mse, 3, 42, g, &err), -1);
	CHECK_CONTAINS(err.msg, "feature 1 in group 3 of 2");
	va.n = 0;
	CHECK_INT(cfl_model_permutation_importance(m, &va, group, 3, mse, 3, 42, a, &err), -1);
	CHECK_CONTAINS(err.msg, "no rows");
	va.n = 100;
	cfl_model_free(m);
	xy_free(&tr);
	xy_free(&va);
}

/* A tiny time budget: the forest keeps the trees grown before it ran
 * out (one a thread: the first unit is always made), the gbdt its first
 * round, the tree its root split; all still predict, and say what they
 * kept.  Without a budget, or with one they never reach, every unit is
 * made. */
static void t_budget_trees(void)
{
	struct cfl_xy xy;
	struct cfl_model *f1 = model_with("forest", "n_estimators=40", NULL);
	struct cfl_model *f2 = model_with("forest", "n_estimators=40",
					  "threads=2", NULL);
	struct cfl_model *g = model_with("gbdt", "n_rounds=40", NULL);
	struct cfl_model *full = model_with("gbdt", "n_rounds=40", NULL);
	char *st;
	unsigned long units = 0;
	double acc;

	random_xy(&xy, 400, 4, 2, 31);
	f1->budget_s = f2->budget_s = g->budget_s = 1e-9;
	fit_ok(f1, &xy, NULL);
	fit_ok(f2, &xy, NULL);
	fit_ok(g, &xy, NULL);
	fit_ok(full, &xy, NULL);
	CHECK_INT(f1->budget_cut, 1);
	CHECK_INT(f1->n_iter_kept, 1);
	st = state_text(f1);
	CHECK(sscanf(st, "forest %lu", &units) == 1);
	CHECK_INT(units, 1);
	free(st);
	CHECK_INT(f2->budget_cut, 1);
	CHECK_MSG(f2->n_iter_kept >= 1 && f2->n_iter_kept <= 2, "%zu trees",
		  f2->n_iter_kept);
	CHECK_INT(g->budget_cut, 1);
	CHECK_INT(g->n_iter_kept, 1);
	st = state_text(g);
	CHECK(sscanf(st, "gbdt logistic 1 %lu", &units) == 1);
	CHECK_INT(units, 1);
	free(st);
	CHECK_INT(full->budget_cut, 0);
	CHECK_INT(full->n_iter_kept, 0);
	st = state_text(full);
	CHECK(sscanf(st, "gbdt logistic 1 %lu", &units) == 1);
	CHECK_INT(units, 40);
	free(st);
	/* a tree: its root split, then every node left a leaf */
	{
		struct cfl_model *t = model_with("tree", NULL);

		t->budget_s = 1e-9;
		fit_ok(t, &xy, NULL);
		CHECK_INT(t->budget_cut, 1);
		CHECK_INT(((const struct cfl_ttree *)t->state)->n_nodes, 3);
		acc = score(t, &xy);
		CHECK(acc > 0.5);
		cfl_model_free(t);
		t = model_with("tree", NULL);
		t->budget_s = 1e6;
		fit_ok(t, &xy, NULL);
		CHECK_INT(t->budget_cut, 0);
		CHECK(((const struct cfl_ttree *)t->state)->n_nodes > 3);
		CHECK(score(t, &xy) == 1);	/* distinct rows: fitted exactly */
		cfl_model_free(t);
	}
	/* the models cut short are models: they predict probabilities */
	acc = score(f1, &xy);
	CHECK(acc > 0.5);
	acc = score(g, &xy);
	CHECK(acc >= 0 && acc <= 1);
	cfl_model_free(f1);
	cfl_model_free(f2);
	cfl_model_free(g);
	cfl_model_free(full);
	xy_free(&xy);
}

struct reported {
	size_t n, step[8];
	double score[8];
	size_t stop_at;
};

static int on_report(void *ctx, size_t step, double score)
{
	struct reported *r = ctx;

	if (r->n < 8) {
		r->step[r->n] = step;
		r->score[r->n] = score;
	}
	r->n++;
	return step >= r->stop_at;
}

/* gbdt reports its validation score every CFL_MODEL_REPORT_ROUNDS
 * rounds; a report that says stop ends the fit as pruned. */
static void t_gbdt_reports_and_prunes(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *m = model_with("gbdt", "n_rounds=35", NULL);
	struct reported r = { .stop_at = 1000 };
	struct cfl_err err = { "" };

	random_xy(&tr, 200, 3, 0, 21);
	random_xy(&va, 100, 3, 0, 22);
	m->report = on_report;
	m->report_ctx = &r;
	fit_ok(m, &tr, &va);
	CHECK_INT(r.n, 3);
	CHECK_INT(r.step[0], CFL_MODEL_REPORT_ROUNDS);
	CHECK_INT(r.step[2], 3 * CFL_MODEL_REPORT_ROUNDS);
	CHECK(r.score[0] < 0 && r.score[0] > -10);	/* -MSE: noise 1 */
	/* no validation rows: nothing to report */
	r.n = 0;
	fit_ok(m, &tr, NULL);
	CHECK_INT(r.n, 0);
	r.stop_at = 2 * CFL_MODEL_REPORT_ROUNDS;
	CHECK_INT(cfl_model_fit(m, &tr, &va, &err), -1);
	CHECK_STR(err.msg, "pruned at step 20");
	CHECK_INT(r.n, 2);
	cfl_model_free(m);
	xy_free(&tr);
	xy_free(&va);
}

/* Every model's saved text fits cfl_model_text_max (the bound a
 * coordinator puts on the model text a worker sends back), on data that
 * grows trees to their most nodes: distinct noisy targets, and 3 classes
 * at random. */
static void t_model_text_max(void)
{
	static const char *const cfg[][5] = {
		{ "baseline", NULL }, { "linear", NULL },
		{ "fcnn", "hidden=8,4", "epochs=2", NULL }, { "fcnn", "epochs=1", NULL },
		{ "tree", NULL }, { "tree", "max_depth=3", NULL },
		{ "forest", "n_estimators=5", NULL },
		{ "gbdt", "n_rounds=5", NULL }, { "gbdt", "n_rounds=3", "max_depth=none", "max_leaves=200" },
	};
	size_t n = 300, d = 6;
	double *x = malloc(n * d * sizeof(*x)), *y = malloc(n * sizeof(*y));
	uint64_t s = 7;

	CHECK(x && y);
	for (int clf = 0; clf < 2; clf++) {
		struct cfl_xy xy;

		for (size_t i = 0; i < n * d; i++)
			x[i] = (double)((s = s * 6364136223846793005ull + 1442695040888963407ull) >> 40) / 1e5;
		for (size_t i = 0; i < n; i++)
			y[i] = clf ? (double)((s = s * 6364136223846793005ull + 1) >> 62 & 1) +
				     (i % 3 == 0) : x[i * d] + (double)i / 7;
		xy_from(&xy, x, y, n, d, clf ? 3 : 0);
		for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
			struct cfl_model *m = model_with(cfg[k][0], cfg[k][1], cfg[k][2],
							 cfg[k][3], cfg[k][4]);
			struct cfl_err err = { "" };
			struct cfl_buf b;
			uint64_t max;

			fit_ok(m, &xy, NULL);
			cfl_buf_init(&b);
			CHECK_MSG(m->ops->save(m, &b, &err) == 0, "%s", err.msg);
			max = cfl_model_text_max(cfg[k][0], &m->params, d, clf ? 3 : 1, n);
			CHECK_MSG(max > 0 && b.len <= max, "%s %s: %zu bytes, bound %llu",
				  cfg[k][0], cfg[k][1] ? cfg[k][1] : "", b.len,
				  (unsigned long long)max);
			cfl_buf_release(&b);
			cfl_model_free(m);
		}
		xy_free(&xy);
	}
	CHECK(cfl_model_text_max("nosuch", NULL, 3, 1, 10) == 0);
	free(x);
	free(y);
}

/* `cfl train --model gbdt --help`'s text: the summary after the name,
 * every parameter with its default and range, an INT's aliases by their
 * words, no line past the width. */
static void t_model_help(void)
{
	const struct cfl_model_ops *ops = cfl_model_find("gbdt");
	struct cfl_buf b;
	const char *line;

	cfl_buf_init(&b);
	CHECK(ops != NULL);
	CHECK_INT(cfl_model_help(ops, 80, &b), 0);
	CHECK(!strncmp(b.data, "\ngbdt: ", 7));
	CHECK_CONTAINS(b.data, "Parameters (--set KEY=VALUE):\n");
	for (size_t i = 0; i < ops->n_params; i++)
		CHECK_CONTAINS(b.data, ops->params[i].name);
	for (line = b.data; *line; line += strcspn(line, "\n") + !!line[strcspn(line, "\n")])
		CHECK_MSG(strcspn(line, "\n") <= 80, "%.90s", line);
	cfl_buf_release(&b);
	ops = cfl_model_find("forest");
	cfl_buf_init(&b);
	CHECK_INT(cfl_model_help(ops, 80, &b), 0);
	CHECK_CONTAINS(b.data, "or auto|all|sqrt|log2)");
	cfl_buf_release(&b);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_model_help),
	TEST(t_model_text_max),
	TEST(t_importance_tree_by_hand),
	TEST(t_importance_models),
	TEST(t_importance_proxy_equals_rows),
	TEST(t_importance_permutation),
	TEST(t_tree_known_split_gini),
	TEST(t_tree_known_split_feature),
	TEST(t_tree_known_split_mse_entropy),
	TEST(t_tree_limits),
	TEST(t_tree_fits_train_exactly),
	TEST(t_tree_seeded),
	TEST(t_tree_save_load),
	TEST(t_tree_bad_params),
	TEST(t_tree_bad_files),
	TEST(t_ensembles_beat_tree_on_digits),
	TEST(t_forest_seeded_threads),
	TEST(t_forest_spare_core),
	TEST(t_forest_proba_oob),
	TEST(t_forest_regression),
	TEST(t_ensemble_bad_params),
	TEST(t_random_splitter_thresholds),
	TEST(t_random_splitter_missing),
	TEST(t_random_splitter_seeded_threads),
	TEST(t_random_splitter_digits),
	TEST(t_gbdt_known_split),
	TEST(t_gbdt_no_penalty_stays_finite),
	TEST(t_gbdt_missing_direction),
	TEST(t_gbdt_early_stopping),
	TEST(t_gbdt_leaves_and_seeds),
	TEST(t_gbdt_threads_same_model),
	TEST(t_gbdt_save_load),
	TEST(t_gbdt_same_bits_as_before),
	TEST(t_cart_same_bits_as_before),
	TEST(t_budget_trees),
	TEST(t_gbdt_reports_and_prunes),
	{ 0 },
};
