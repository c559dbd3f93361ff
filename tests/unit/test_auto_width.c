/* Unit tests of fcnn's hidden=auto widths (src/models/fcnn.c, auto_width)
 * as `cfl auto` relies on them: many rows of few inputs get a net narrow
 * enough to finish within a share of auto's budget (two layers of 128, not
 * carefree-learn's 512 or 768), while small data and many inputs keep
 * carefree-learn's widths.  Only the network is built (no training), so
 * the widths are read from its parameter count. */
#include "runner.h"

#include <stdarg.h>

#include "cfl/fcnn.h"
#include "cfl/model.h"

extern const struct cfl_model_ops cfl_fcnn_ops;

/* The parameter count of fcnn (hidden=auto) built for n rows of d inputs
 * and k classes. */
static size_t auto_theta(size_t n, size_t d, int k)
{
	struct cfl_params p;
	struct cfl_err err = { "" };
	struct cfl_model *m;
	struct cfl_xy xy;
	size_t n_theta = 0;

	cfl_params_init(&p);
	m = cfl_model_new(&cfl_fcnn_ops, &p, 1, &err);
	CHECK_MSG(m, "%s", err.msg);
	cfl_params_release(&p);
	memset(&xy, 0, sizeof(xy));
	xy.n = n;
	xy.d = d;
	xy.n_classes = k;
	xy.x = calloc(n * d, sizeof(float));
	xy.y = calloc(n, sizeof(double));
	CHECK(xy.x && xy.y);
	for (size_t i = 0; i < n; i++) {
		xy.y[i] = (double)(i % (size_t)k);
		xy.x[i * d] = (float)(i % 7);
	}
	CHECK_MSG(cfl_fcnn_build(m, &xy, &err) == 0, "%s", err.msg);
	CHECK(cfl_fcnn_theta(m, &n_theta));
	cfl_model_free(m);
	free(xy.x);
	free(xy.y);
	return n_theta;
}

/* Two hidden layers of width w on d inputs and k outputs. */
static size_t two_layers(size_t d, size_t w, size_t k)
{
	return (d * w + w) + (w * w + w) + (w * k + k);
}

/* 10 000 rows of 20 inputs (the W1 set's shape): 128 wide; carefree-learn
 * would build 512, whose fit takes about ten times as long. */
static void t_many_rows_few_inputs(void)
{
	CHECK_INT(auto_theta(10000, 20, 2), two_layers(20, 128, 2));
	CHECK_INT(auto_theta(10000, 64, 3), two_layers(64, 128, 3));
}

/* Below 10 000 rows: max(64, 2 d), as before. */
static void t_small_data_unchanged(void)
{
	CHECK_INT(auto_theta(9999, 20, 2), two_layers(20, 64, 2));
	CHECK_INT(auto_theta(2000, 50, 2), two_layers(50, 100, 2));
}

/* More than 64 inputs on many rows: carefree-learn's 512. */
static void t_many_inputs_unchanged(void)
{
	CHECK_INT(auto_theta(10000, 65, 2), two_layers(65, 512, 2));
}

const struct cfl_test cfl_tests[] = {
	TEST(t_many_rows_few_inputs),
	TEST(t_small_data_unchanged),
	TEST(t_many_inputs_unchanged),
	{ 0 },
};
