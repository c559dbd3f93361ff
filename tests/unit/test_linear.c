/* Unit tests of the linear model (src/models/linear.c): fits equal to
 * scikit-learn's LogisticRegression / Ridge on committed fixtures
 * (linear_fixtures.h), separable data, exact recovery, save -> load ->
 * predict, determinism, parameter and input errors.  struct cfl_xy is built
 * by hand: the tests use no data-module function. */
#include "runner.h"

#include "cfl/linear.h"
#include "cfl/model.h"
#include "linear_fixtures.h"

extern const struct cfl_model_ops cfl_linear_ops;

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

/* A model with params "k=v" ... (NULL-terminated); fails the test on error. */
static struct cfl_model *model_with(const char *first, ...)
{
	struct cfl_params p;
	struct cfl_err err = { "" };
	struct cfl_model *m;
	va_list ap;

	cfl_params_init(&p);
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		CHECK_MSG(cfl_params_set_arg(&p, a, &err) == 0, "%s", err.msg);
	va_end(ap);
	m = cfl_model_new(&cfl_linear_ops, &p, 1, &err);
	CHECK_MSG(m, "%s", err.msg);
	cfl_params_release(&p);
	return m;
}

static void fit_ok(struct cfl_model *m, const struct cfl_xy *xy)
{
	struct cfl_err err = { "" };

	CHECK_MSG(cfl_model_fit(m, xy, NULL, &err) == 0, "%s", err.msg);
}

static void t_sklearn_fixtures(void)
{
	size_t n_cases = sizeof(linear_fixtures) / sizeof(linear_fixtures[0]);

	for (size_t c = 0; c < n_cases; c++) {
		const struct linear_fixture *f = &linear_fixtures[c];
		size_t k = f->n_classes ? (size_t)f->n_classes : 1;
		struct cfl_xy xy;
		struct cfl_model *m;
		const struct cfl_linear *lm;
		char l2[64], ic[32];
		double *out = calloc(f->n * k, sizeof(double));
		double mean_b = 0, mean_f = 0, max_dw = 0, max_dp = 0;
		struct cfl_err err = { "" };

		snprintf(l2, sizeof(l2), "l2=%.17g", f->l2);
		snprintf(ic, sizeof(ic), "fit_intercept=%d", f->fit_intercept);
		xy_from(&xy, f->x, f->y, f->n, f->d, f->n_classes);
		m = model_with(l2, ic, "tol=1e-10", "max_iter=100000", NULL);
		fit_ok(m, &xy);
		lm = m->state;
		CHECK_MSG(lm->converged, "%s did not converge", f->name);
		for (size_t j = 0; j < k * f->d; j++)
			max_dw = fmax(max_dw, fabs(lm->w[j] - f->w[j]));
		/* softmax intercepts are defined up to a common shift */
		if (k > 2) {
			for (size_t j = 0; j < k; j++) {
				mean_b += lm->b[j] / k;
				mean_f += f->b[j] / k;
			}
		}
		for (size_t j = 0; j < k; j++)
			max_dw = fmax(max_dw, fabs((lm->b[j] - mean_b) -
						   (f->b[j] - mean_f)));
		CHECK_MSG(cfl_model_predict(m, xy.x, f->n, out, &err) == 0, "%s", err.msg);
		for (size_t j = 0; j < f->n * k; j++)
			max_dp = fmax(max_dp, fabs(out[j] - f->pred[j]));
		CHECK_MSG(max_dw < 1e-5, "%s: coefficients differ from sklearn by %g",
			  f->name, max_dw);
		CHECK_MSG(max_dp < 1e-6 * (f->n_classes ? 1 : 100),
			  "%s: predictions differ from sklearn by %g", f->name, max_dp);
		cfl_model_free(m);
		xy_free(&xy);
		free(out);
	}
}

/* Three well separated blobs: 100% train accuracy, rows summing to 1. */
static void t_separable(void)
{
	enum { N = 90 };
	double x[N * 2], y[N], out[N * 3];
	struct cfl_rng r;
	struct cfl_xy xy;
	struct cfl_model *m;
	struct cfl_err err = { "" };
	const double cx[3] = { -4, 0, 4 }, cy[3] = { 0, 4, 0 };

	cfl_rng_seed(&r, 11);
	for (size_t i = 0; i < N; i++) {
		y[i] = (double)(i % 3);
		x[2 * i] = cx[i % 3] + 0.5 * cfl_rng_normal(&r);
		x[2 * i + 1] = cy[i % 3] + 0.5 * cfl_rng_normal(&r);
	}
	xy_from(&xy, x, y, N, 2, 3);
	m = model_with("l2=0.001", NULL);
	fit_ok(m, &xy);
	CHECK(cfl_model_predict(m, xy.x, N, out, &err) == 0);
	for (size_t i = 0; i < N; i++) {
		double s = out[3 * i] + out[3 * i + 1] + out[3 * i + 2];
		int best = 0;

		CHECK_NEAR(s, 1, 1e-12);
		for (int c = 1; c < 3; c++)
			if (out[3 * i + c] > out[3 * i + best])
				best = c;
		CHECK_INT(best, (int)y[i]);
	}
	cfl_model_free(m);
	xy_free(&xy);
}

/* Noise-free y = x.w + b with a tiny l2 gives w and b back. */
static void t_ridge_recovers(void)
{
	enum { N = 40, D = 3 };
	double x[N * D], y[N], out[N];
	const double w[D] = { 1.5, -2, 0.25 }, b = 7;
	struct cfl_rng r;
	struct cfl_xy xy;
	struct cfl_model *m;
	const struct cfl_linear *lm;
	struct cfl_err err = { "" };

	cfl_rng_seed(&r, 5);
	for (size_t i = 0; i < N; i++) {
		for (size_t j = 0; j < D; j++)
			x[i * D + j] = (double)(float)cfl_rng_normal(&r);
		y[i] = b + w[0] * x[i * D] + w[1] * x[i * D + 1] + w[2] * x[i * D + 2];
	}
	xy_from(&xy, x, y, N, D, 0);
	m = model_with("l2=1e-10", NULL);
	fit_ok(m, &xy);
	lm = m->state;
	for (size_t j = 0; j < D; j++)
		CHECK_NEAR(lm->w[j], w[j], 1e-8);
	CHECK_NEAR(lm->b[0], b, 1e-8);
	CHECK(cfl_model_predict(m, xy.x, N, out, &err) == 0);
	for (size_t i = 0; i < N; i++)
		CHECK_NEAR(out[i], y[i], 1e-7);
	cfl_model_free(m);
	xy_free(&xy);
}

/* Save, load into a fresh model, predict: bit-identical outputs. */
static void round_trip(const struct linear_fixture *f)
{
	size_t k = f->n_classes ? (size_t)f->n_classes : 1;
	struct cfl_xy xy;
	struct cfl_model *m, *m2;
	struct cfl_buf b;
	struct cfl_reader r;
	struct cfl_err err = { "" };
	double *o1 = calloc(f->n * k, sizeof(double));
	double *o2 = calloc(f->n * k, sizeof(double));

	xy_from(&xy, f->x, f->y, f->n, f->d, f->n_classes);
	m = model_with("l2=0.3", NULL);
	fit_ok(m, &xy);
	cfl_buf_init(&b);
	CHECK(cfl_linear_ops.save(m, &b, &err) == 0);
	m2 = model_with("l2=0.3", NULL);
	m2->n_features = f->d;
	m2->n_classes = f->n_classes;
	cfl_reader_init(&r, "t.cfl", b.data, b.len);
	CHECK_MSG(cfl_linear_ops.load(m2, &r, &err) == 0, "%s", err.msg);
	CHECK(cfl_model_predict(m, xy.x, f->n, o1, &err) == 0);
	CHECK(cfl_model_predict(m2, xy.x, f->n, o2, &err) == 0);
	CHECK(memcmp(o1, o2, f->n * k * sizeof(double)) == 0);
	cfl_buf_release(&b);
	cfl_model_free(m);
	cfl_model_free(m2);
	xy_free(&xy);
	free(o1);
	free(o2);
}

static void t_save_load(void)
{
	for (size_t c = 0; c < sizeof(linear_fixtures) / sizeof(linear_fixtures[0]); c++)
		round_trip(&linear_fixtures[c]);
}

static void t_load_errors(void)
{
	const char *bad[] = {
		"linear 3 4\nweights 1 2 3",			/* truncated */
		"linear 2 4\nweights 1 2 3 4 5 6 7 8\nintercepts 0 0",	/* shape */
		"linear 3 4\nweights 1 2 3 4 5 6 7 8 9 10 11 x\nintercepts 0 0 0",
		"linear 3 4\nbiases 1 2 3 4 5 6 7 8 9 10 11 12 0 0 0",
		"lineer 3 4",
		"linear 3 4\nweights 1 2",
	};
	const char *want[] = { "", "has shape (2, 4), expected (3, 4)",
			       "t.cfl:2:", "expected 'weights'", "",
			       "linear state is truncated" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfl_model *m = model_with(NULL);
		struct cfl_reader r;
		struct cfl_err err = { "" };

		m->n_features = 4;
		m->n_classes = 3;
		cfl_reader_init(&r, "t.cfl", bad[i], strlen(bad[i]));
		CHECK_MSG(cfl_linear_ops.load(m, &r, &err) == -1, "case %zu loaded", i);
		CHECK(err.msg[0]);
		CHECK_CONTAINS(err.msg, want[i]);
		CHECK(m->state == NULL);
		cfl_model_free(m);
	}
}

static void t_bad_params(void)
{
	const char *bad[][2] = {
		{ "l2=-1", "linear: l2 must be a number in [0, " },
		{ "l2=abc", "l2 must be a number" },
		{ "max_iter=0", "linear: max_iter must be an integer in [1, " },
		{ "tol=2", "tol must be a number in [0, 1]" },
		{ "fit_intercept=maybe", "fit_intercept must be true or false" },
		{ "C=1", "linear has no parameter 'C' (it has: l2, max_iter, tol, fit_intercept)" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfl_params p;
		struct cfl_err err = { "" };

		cfl_params_init(&p);
		CHECK(cfl_params_set_arg(&p, bad[i][0], &err) == 0);
		CHECK(cfl_model_new(&cfl_linear_ops, &p, 1, &err) == NULL);
		CHECK_CONTAINS(err.msg, bad[i][1]);
		cfl_params_release(&p);
	}
}

/* The same data twice gives bit-identical weights. */
static void t_deterministic(void)
{
	const struct linear_fixture *f = &linear_fixtures[0];
	struct cfl_linear a, b;
	struct cfl_err err = { "" };

	cfl_linear_init(&a);
	cfl_linear_init(&b);
	CHECK(cfl_linear_fit(&a, f->x, f->y, f->n, f->d, f->n_classes, NULL, &err) == 0);
	CHECK(cfl_linear_fit(&b, f->x, f->y, f->n, f->d, f->n_classes, NULL, &err) == 0);
	CHECK(memcmp(a.w, b.w, a.n_out * a.d * sizeof(double)) == 0);
	CHECK(memcmp(a.b, b.b, a.n_out * sizeof(double)) == 0);
	CHECK(a.converged && a.n_iter > 0 && a.n_iter == b.n_iter);
	cfl_linear_release(&a);
	cfl_linear_release(&b);
}

/* The double API as the stacking meta-learner uses it, and its errors. */
static void t_api(void)
{
	double x[12] = { 0, 1, 1, 0, 2, 2, 0, 0, 1, 1, 3, 1 };
	double y[6] = { 0, 1, 2, 0, 1, 2 }, out[18];
	double yb[6] = { 0, 1, 1, 0, 1, 1 };
	struct cfl_linear lm;
	struct cfl_linear_opts o;
	struct cfl_err err = { "" };

	cfl_linear_init(&lm);
	CHECK(cfl_linear_predict(&lm, x, 6, out, &err) == -1);
	CHECK_CONTAINS(err.msg, "not fitted");
	CHECK(cfl_linear_fit(&lm, x, y, 0, 2, 3, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "no training rows");
	y[4] = 3;
	CHECK(cfl_linear_fit(&lm, x, y, 6, 2, 3, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "label 3 of row 4 is not a class in [0, 3)");
	y[4] = 1;
	x[5] = NAN;
	CHECK(cfl_linear_fit(&lm, x, y, 6, 2, 3, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "input 1 of row 2 is not a finite number");
	x[5] = 2;
	CHECK(cfl_linear_fit(&lm, x, y, 6, 2, 1, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "cannot model 1 classes");
	cfl_linear_opts_default(&o);
	o.l2 = -1;
	CHECK(cfl_linear_fit(&lm, x, y, 6, 2, 3, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "l2 must be");
	CHECK(lm.w == NULL);

	/* binary: row 0 stays zero, so the softmax is the sigmoid */
	CHECK(cfl_linear_fit(&lm, x, yb, 6, 2, 2, NULL, &err) == 0);
	CHECK(lm.w[0] == 0 && lm.w[1] == 0 && lm.b[0] == 0);
	CHECK(cfl_linear_predict(&lm, x, 6, out, &err) == 0);
	for (size_t i = 0; i < 6; i++) {
		double z = lm.b[1] + lm.w[2] * x[2 * i] + lm.w[3] * x[2 * i + 1];

		CHECK_NEAR(out[2 * i + 1], 1 / (1 + exp(-z)), 1e-15);
		CHECK_NEAR(out[2 * i] + out[2 * i + 1], 1, 1e-15);
	}
	cfl_linear_release(&lm);
	cfl_linear_release(&lm);	/* twice is harmless */
}

/* No inputs at all: the intercepts alone give the class frequencies (they
 * are not penalised) and ridge gives the mean. */
static void t_no_inputs(void)
{
	double y[8] = { 0, 1, 1, 2, 2, 2, 2, 1 }, out[3], v;
	double t[4] = { 1, 2, 3, 10 };
	struct cfl_linear lm;
	struct cfl_err err = { "" };

	cfl_linear_init(&lm);
	CHECK_MSG(cfl_linear_fit(&lm, NULL, y, 8, 0, 3, NULL, &err) == 0, "%s", err.msg);
	CHECK(cfl_linear_predict(&lm, NULL, 1, out, &err) == 0);
	CHECK_NEAR(out[0], 1.0 / 8, 1e-6);
	CHECK_NEAR(out[1], 3.0 / 8, 1e-6);
	CHECK_NEAR(out[2], 4.0 / 8, 1e-6);
	CHECK(cfl_linear_fit(&lm, NULL, t, 4, 0, 0, NULL, &err) == 0);
	CHECK(cfl_linear_predict(&lm, NULL, 1, &v, &err) == 0);
	CHECK_NEAR(v, 4, 1e-12);
	cfl_linear_release(&lm);
}

/* l2 = 0 with collinear columns (a duplicated column) still solves. */
static void t_ridge_collinear(void)
{
	double x[10 * 2], y[10], out[10];
	struct cfl_linear lm;
	struct cfl_linear_opts o;
	struct cfl_err err = { "" };

	for (size_t i = 0; i < 10; i++) {
		x[2 * i] = x[2 * i + 1] = (double)i;
		y[i] = 3 * (double)i + 1;
	}
	cfl_linear_init(&lm);
	cfl_linear_opts_default(&o);
	o.l2 = 0;
	CHECK_MSG(cfl_linear_fit(&lm, x, y, 10, 2, 0, &o, &err) == 0, "%s", err.msg);
	CHECK(cfl_linear_predict(&lm, x, 10, out, &err) == 0);
	for (size_t i = 0; i < 10; i++)
		CHECK_NEAR(out[i], y[i], 1e-5);
	cfl_linear_release(&lm);
}

/* Unpenalised separable data: the weights grow, max_iter bounds the fit. */
static void t_unpenalised_separable(void)
{
	double x[4] = { -2, -1, 1, 2 }, y[4] = { 0, 0, 1, 1 }, out[8];
	struct cfl_linear lm;
	struct cfl_linear_opts o;
	struct cfl_err err = { "" };

	cfl_linear_init(&lm);
	cfl_linear_opts_default(&o);
	o.l2 = 0;
	o.max_iter = 50;
	CHECK(cfl_linear_fit(&lm, x, y, 4, 1, 2, &o, &err) == 0);
	CHECK(lm.n_iter <= 50);
	CHECK(cfl_linear_predict(&lm, x, 4, out, &err) == 0);
	for (size_t i = 0; i < 8; i++)
		CHECK(isfinite(out[i]));
	CHECK(out[1] < 0.01 && out[7] > 0.99);
	cfl_linear_release(&lm);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_sklearn_fixtures),
	TEST(t_separable),
	TEST(t_ridge_recovers),
	TEST(t_save_load),
	TEST(t_load_errors),
	TEST(t_bad_params),
	TEST(t_deterministic),
	TEST(t_api),
	TEST(t_no_inputs),
	TEST(t_ridge_collinear),
	TEST(t_unpenalised_separable),
	{ 0 },
};
