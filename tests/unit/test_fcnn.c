/* Unit tests of the fcnn model (src/models/fcnn.c): gradients of every
 * layer and loss against central finite differences, learning on simple
 * data with every optimiser, bit-identical models from one seed, save ->
 * load -> predict, early stopping keeping the best epoch, the stop on the
 * training loss, standardised
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

/* grad_check of model m on make_data(n, d, k, seed); frees m. */
static void grad_case(struct cfl_model *m, size_t n, size_t d, int k,
		      uint64_t seed)
{
	struct cfl_xy xy;

	make_data(&xy, n, d, k, seed);
	grad_check(m, &xy);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_grad_ce(void)
{
	grad_case(model_with(1, "hidden=6,5", NULL), 12, 4, 3, 7);
}

static void t_grad_ce_no_hidden(void)
{
	grad_case(model_with(2, "hidden=none", NULL), 10, 3, 2, 8);
}

static void t_grad_batch_norm(void)
{
	grad_case(model_with(6, "hidden=5,4", "batch_norm=true", NULL), 16, 4, 3, 9);
}

static void t_grad_dropout(void)
{
	grad_case(model_with(6, "hidden=8,6", "dropout=0.3", NULL), 12, 4, 2, 10);
}

/* Layers of one or two outputs take the plain loops, which also pass the
 * gradient through the ReLU below and sum its bias gradient: a narrow
 * hidden layer under a narrow output (two classes), and a one-unit hidden
 * layer over 33 units (a full column block and one more) for regression,
 * with dropout on one of them. */
static void t_grad_narrow_layers(void)
{
	grad_case(model_with(3, "hidden=7,2", NULL), 12, 4, 2, 13);
	grad_case(model_with(4, "hidden=33,1", "dropout=0.2", NULL), 12, 3, 0, 14);
}

static void t_grad_mse(void)
{
	grad_case(model_with(5, "hidden=6,5", "batch_norm=1", NULL), 12, 3, 0, 11);
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

/* ---- training ---- */

static void fit_ok(struct cfl_model *m, const struct cfl_xy *train,
		   const struct cfl_xy *valid)
{
	struct cfl_err err = { "" };

	CHECK_MSG(cfl_model_fit(m, train, valid, &err) == 0, "%s", err.msg);
}

static double *predict_all(const struct cfl_model *m, const struct cfl_xy *xy)
{
	struct cfl_err err = { "" };
	double *out = calloc(xy->n * cfl_model_n_out(m) + 1, sizeof(double));

	CHECK(out);
	CHECK_MSG(cfl_model_predict(m, xy->x, xy->n, out, &err) == 0, "%s", err.msg);
	return out;
}

static double accuracy(const double *out, const struct cfl_xy *xy)
{
	size_t k = (size_t)xy->n_classes, hit = 0;

	for (size_t i = 0; i < xy->n; i++) {
		size_t best = 0;

		for (size_t j = 1; j < k; j++)
			if (out[i * k + j] > out[i * k + best])
				best = j;
		hit += best == (size_t)xy->y[i];
	}
	return (double)hit / (double)xy->n;
}

static char *saved_state(const struct cfl_model *m)
{
	struct cfl_buf b;
	struct cfl_err err = { "" };

	cfl_buf_init(&b);
	CHECK_MSG(m->ops->save(m, &b, &err) == 0, "%s", err.msg);
	return b.data;
}

static void t_learns_blobs(void)
{
	struct cfl_xy tr, te;
	struct cfl_model *m = model_with(1, "hidden=16,16", "epochs=30",
					 "batch_size=16", "patience=0", NULL);
	double *out;

	make_data(&tr, 300, 5, 3, 1);
	make_data(&te, 150, 5, 3, 2);
	fit_ok(m, &tr, NULL);
	out = predict_all(m, &te);
	CHECK_MSG(accuracy(out, &te) > 0.85, "accuracy %g", accuracy(out, &te));
	for (size_t i = 0; i < te.n; i++)
		CHECK_NEAR(out[3 * i] + out[3 * i + 1] + out[3 * i + 2], 1, 1e-12);
	free(out);
	cfl_model_free(m);
	xy_free(&tr);
	xy_free(&te);
}

/* Every optimiser, with and without weight decay, batch norm and dropout,
 * lowers the training loss well below where it started. */
static void t_every_optimizer_learns(void)
{
	static const char *opts[][2] = {
		{ "optimizer=sgd", "lr=0.1" }, { "optimizer=momentum", "lr=0.02" },
		{ "optimizer=nesterov", "lr=0.02" }, { "optimizer=rmsprop", "lr=0.003" },
		{ "optimizer=adam", "lr=0.005" }, { "optimizer=adamw", "lr=0.005" },
	};
	struct cfl_xy tr;

	make_data(&tr, 200, 4, 2, 3);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		for (int variant = 0; variant < 2; variant++) {
			struct cfl_model *m = model_with(
				5, opts[i][0], opts[i][1], "hidden=12", "epochs=15",
				"batch_size=20", "patience=0",
				variant ? "weight_decay=0.01" : "dropout=0",
				variant ? "batch_norm=1" : "dropout=0.1", NULL);
			struct cfl_err err = { "" };
			double before, after;

			CHECK_MSG(cfl_fcnn_build(m, &tr, &err) == 0, "%s", err.msg);
			before = cfl_fcnn_loss_grad(m, &tr, 1, NULL);
			fit_ok(m, &tr, NULL);
			after = cfl_fcnn_loss_grad(m, &tr, 1, NULL);
			CHECK_MSG(after < 0.5 * before, "%s variant %d: loss %g -> %g",
				  opts[i][0], variant, before, after);
			cfl_model_free(m);
		}
	xy_free(&tr);
}

static void t_same_seed_bit_identical(void)
{
	struct cfl_xy tr, va;
	char *a, *b, *c;
	struct cfl_model *m1 = model_with(9, "hidden=8,8", "dropout=0.2",
					  "batch_norm=1", "epochs=5", "batch_size=7", NULL);
	struct cfl_model *m2 = model_with(9, "hidden=8,8", "dropout=0.2",
					  "batch_norm=1", "epochs=5", "batch_size=7", NULL);
	struct cfl_model *m3 = model_with(10, "hidden=8,8", "dropout=0.2",
					  "batch_norm=1", "epochs=5", "batch_size=7", NULL);

	make_data(&tr, 100, 4, 3, 4);
	make_data(&va, 30, 4, 3, 5);
	fit_ok(m1, &tr, &va);
	fit_ok(m2, &tr, &va);
	fit_ok(m3, &tr, &va);
	a = saved_state(m1);
	b = saved_state(m2);
	c = saved_state(m3);
	CHECK(strcmp(a, b) == 0);
	CHECK(strcmp(a, c) != 0);
	free(a);
	free(b);
	free(c);
	cfl_model_free(m1);
	cfl_model_free(m2);
	cfl_model_free(m3);
	xy_free(&tr);
	xy_free(&va);
}

/* The figures of the two tests below were taken with OpenBLAS's Haswell
 * kernels (its Zen ones give the same bits); other kernels sum a product
 * in another order.  make test asks for Haswell's on a CPU with AVX2. */
static int recorded_kernels(void)
{
	const char *core = cfl_blas_core();

	if (!strcmp(core, "Haswell") || !strcmp(core, "Zen"))
		return 1;
	SKIP("figures taken with OpenBLAS's Haswell kernels; these are %s", core);
	return 0;
}

/* Training takes its products in another order than it once did (the
 * bias seeds a layer's sum, outputs of width 1 or 2 are summed by plain
 * loops instead of sgemm), so models differ from the ones of that path in
 * the last bits of a float.  The difference stays within a float's
 * rounding: predictions after a few epochs are those the earlier path
 * gave (printed by it, with sgemm for every product and the bias added
 * after) within 1e-5 relative (1e-6 absolute for probabilities).  Classes
 * 2 (the narrow loops), 3 with batch norm and dropout (sgemm with the bias
 * seeded), and regression (width 1). */
static void t_matches_earlier_path(void)
{
	static const double clf2[16] = {
		0.49348740419263165, 0.50651259580736829, 0.27306973944911861, 0.72693026055088139,
		0.53706687969741684, 0.46293312030258321, 0.17407447523927652, 0.82592552476072345,
		0.48199636952446984, 0.51800363047553022, 0.17834609423648357, 0.82165390576351638,
		0.54601214178490487, 0.45398785821509519, 0.12339991493527167, 0.87660008506472831,
	};
	static const double clf3[24] = {
		0.39419125218383361, 0.4266994098989495, 0.17910933791721692, 0.11049308056776574,
		0.49666990071376871, 0.39283701871846549, 0.31346674212614323, 0.28555882482305162,
		0.40097443305080521, 0.54891561979638193, 0.26369160890090965, 0.18739277130270843,
		0.26351117799678853, 0.40412428133833778, 0.33236454066487359, 0.27644799402116849,
		0.41085018454265315, 0.31270182143617842, 0.37095760818840112, 0.48384375270008445,
		0.14519863911151437, 0.084785836461727188, 0.61096331563619422, 0.30425084790207846,
	};
	static const double reg[8] = {
		1136.6258200168515, 1086.5293096133114, 1107.2676246497931, 1109.5035009753922,
		1110.2664460674466, 1084.8316602273644, 1117.6693474809131, 1073.0297710774353,
	};
	static const struct {
		int k;
		size_t d;
		const char *p[6];
		const double *want;
	} cf[] = {
		{ 2, 20, { "hidden=16,16", "epochs=4", "batch_size=32", "patience=0", NULL }, clf2 },
		{ 3, 7, { "hidden=12", "batch_norm=1", "dropout=0.1", "epochs=3",
			  "batch_size=20", NULL }, clf3 },
		{ 0, 20, { "hidden=16,16", "epochs=4", "batch_size=32", "patience=0", NULL }, reg },
	};

	if (!recorded_kernels())
		return;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const char *const *p = cf[c].p;
		struct cfl_model *m = model_with(5, p[0], p[1], p[2], p[3], p[4], NULL);
		struct cfl_xy tr, te;
		double *out;

		make_data(&tr, 250, cf[c].d, cf[c].k, 11);
		make_data(&te, 8, cf[c].d, cf[c].k, 12);
		fit_ok(m, &tr, NULL);
		out = predict_all(m, &te);
		for (size_t i = 0; i < 8 * cfl_model_n_out(m); i++) {
			double want = cf[c].want[i];

			CHECK_MSG(fabs(out[i] - want) <= (cf[c].k ? 1e-6 : 1e-5 * fabs(want)),
				  "case %zu value %zu: %.17g, earlier path %.17g", c, i,
				  out[i], want);
		}
		free(out);
		cfl_model_free(m);
		xy_free(&tr);
		xy_free(&te);
	}
}

/* The loops around the products were rearranged without changing a sum
 * (the two-class loss without a branch per row, the bias of a narrow layer
 * added by narrow_nt, its weight gradient summed in narrow_nn's pass, the
 * rows gathered from a copy, the buffers moved): the saved model and its
 * predictions are byte for
 * byte those the code before wrote (their SHA-256 below, printed by it;
 * OpenBLAS on this project's x86-64 machines).  Two classes after a
 * narrow hidden layer or not, with dropout, and regression (width 1). */
static void t_same_bits_as_before(void)
{
	static const struct {
		int k;
		const char *p[4];
		const char *sha;
	} cf[] = {
		{ 2, { "hidden=16,16", "epochs=4", "batch_size=32", NULL },
		  "4a1ba937514e7cc47f8ea3bdcec39eee9158c81c5be642c422ec5459efaab769" },
		{ 2, { "hidden=9,2", "epochs=4", "batch_size=32", NULL },
		  "1bf27358daed351c5022a0525cd621ead444ed1cbf8365ef9cc3b8efc0fd6c0a" },
		{ 2, { "hidden=16,16", "epochs=3", "dropout=0.2", NULL },
		  "ed60e56bbd2c16fe225e0ce1e8852ab5354c64cb14a31ef3700c1a66332c77b7" },
		{ 0, { "hidden=16,16", "epochs=4", "batch_size=32", NULL },
		  "33bc9d28ac30036db44df2247be6d783d59dfed28790078ce8702b0af8a1f9d4" },
	};

	if (!recorded_kernels())
		return;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const char *const *p = cf[c].p;
		struct cfl_model *m = model_with(9, p[0], p[1], p[2], "patience=0", NULL);
		struct cfl_xy tr;
		const char *hex;
		char *text;
		double *out;

		make_data(&tr, 300, 20, cf[c].k, 21);
		fit_ok(m, &tr, NULL);
		text = saved_state(m);
		out = predict_all(m, &tr);
		hex = cfl_test_sha_hex(text, out, tr.n * cfl_model_n_out(m));
		CHECK_MSG(strcmp(hex, cf[c].sha) == 0, "case %zu: %s, before %s", c, hex, cf[c].sha);
		free(text);
		free(out);
		cfl_model_free(m);
		xy_free(&tr);
	}
}

/* Kernels older than the CPU are replaced by Haswell's (AVX2 and FMA)
 * or SkylakeX's (AVX-512); kernels that fit, or a CPU without AVX2, keep
 * OpenBLAS's choice. */
static void t_blas_better_core(void)
{
	CHECK(cfl_blas_better_core("Prescott", 1, 0) &&
	      !strcmp(cfl_blas_better_core("Prescott", 1, 0), "Haswell"));
	CHECK(cfl_blas_better_core("Prescott", 1, 1) &&
	      !strcmp(cfl_blas_better_core("Prescott", 1, 1), "SkylakeX"));
	CHECK(cfl_blas_better_core("SANDYBRIDGE", 1, 0) &&
	      !strcmp(cfl_blas_better_core("SANDYBRIDGE", 1, 0), "Haswell"));
	CHECK(cfl_blas_better_core("Prescott", 0, 0) == NULL);
	CHECK(cfl_blas_better_core("Haswell", 1, 1) == NULL);
	CHECK(cfl_blas_better_core("Zen", 1, 0) == NULL);
	CHECK(cfl_blas_better_core("SkylakeX", 1, 1) == NULL);
	CHECK(cfl_blas_better_core("Cooperlake", 1, 1) == NULL);
	CHECK(cfl_blas_better_core(NULL, 1, 1) == NULL);
	CHECK(cfl_blas_core()[0] != '\0');
}

/* save -> load -> predict gives the very same doubles, for classification
 * with batch norm and for regression. */
static void t_save_load_predict(void)
{
	for (int k = 0; k <= 3; k += 3) {
		struct cfl_xy tr;
		struct cfl_model *m = model_with(2, "hidden=6,5", "batch_norm=1",
						 "epochs=3", "batch_size=16", NULL);
		struct cfl_model *back;
		struct cfl_reader r;
		struct cfl_err err = { "" };
		double *p1, *p2;
		char *text, *again;

		make_data(&tr, 80, 4, k, 6);
		fit_ok(m, &tr, NULL);
		text = saved_state(m);
		back = cfl_model_new(&cfl_fcnn_ops, &m->params, m->seed, &err);
		CHECK(back);
		back->n_features = m->n_features;
		back->n_classes = m->n_classes;
		cfl_reader_init(&r, "state", text, strlen(text));
		CHECK_MSG(back->ops->load(back, &r, &err) == 0, "%s", err.msg);
		p1 = predict_all(m, &tr);
		p2 = predict_all(back, &tr);
		CHECK(memcmp(p1, p2, tr.n * cfl_model_n_out(m) * sizeof(double)) == 0);
		again = saved_state(back);
		CHECK_STR(again, text);
		free(again);
		free(text);
		free(p1);
		free(p2);
		cfl_model_free(m);
		cfl_model_free(back);
		xy_free(&tr);
	}
}

/* Early stopping stops, and keeps the weights of its best epoch: the
 * model equals one trained for exactly that many epochs. */
static void t_early_stopping_keeps_best(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *m = model_with(3, "hidden=64,64", "lr=0.01", "epochs=200",
					 "batch_size=8", "patience=5", NULL);
	struct cfl_model *ref;
	char best[32], *a, *b;
	size_t run, at;

	make_data(&tr, 40, 6, 2, 7);
	make_data(&va, 40, 6, 2, 8);
	/* noisy labels: the network overfits, so the validation loss rises */
	for (size_t i = 0; i < tr.n; i += 3)
		tr.y[i] = 1 - tr.y[i];
	fit_ok(m, &tr, &va);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_MSG(run < 200 && at < run && run - at == 5, "ran %zu, best %zu", run, at);
	snprintf(best, sizeof(best), "epochs=%zu", at);
	ref = model_with(3, "hidden=64,64", "lr=0.01", best, "batch_size=8",
			 "patience=0", NULL);
	fit_ok(ref, &tr, &va);
	a = saved_state(m);
	b = saved_state(ref);
	CHECK_STR(a, b);
	free(a);
	free(b);
	cfl_model_free(m);
	cfl_model_free(ref);
	xy_free(&tr);
	xy_free(&va);
}

/* Without validation rows the default stops on the training loss, by
 * scikit-learn's MLP rule: the epoch's mean loss must fall by tol below
 * the best so far; after more than n_iter_no_change epochs in a row that
 * it has not, training ends with the last weights.  A tol larger than any
 * loss makes every epoch after the first count, so the run ends exactly
 * after n_iter_no_change + 2 epochs. */
static void t_training_loss_stop(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *m, *ref;
	char *a, *b;
	size_t run, at;

	make_data(&tr, 40, 6, 2, 7);
	make_data(&va, 20, 6, 2, 8);
	m = model_with(3, "hidden=8", "epochs=300", "n_iter_no_change=3",
		       "tol=1e6", NULL);
	fit_ok(m, &tr, NULL);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_MSG(run == 5 && at == 5, "ran %zu, kept %zu", run, at);
	CHECK(m->n_iter_kept == 0);	/* not a validation stop */
	/* the last weights: those of a plain run of that many epochs */
	ref = model_with(3, "hidden=8", "epochs=5", NULL);
	fit_ok(ref, &tr, NULL);
	a = saved_state(m);
	b = saved_state(ref);
	CHECK_STR(a, b);
	free(a);
	free(b);
	cfl_model_free(ref);
	cfl_model_free(m);
	/* a real tol: the loss of blobs keeps falling for a while, then
	 * flattens; the same seed stops at the same epoch */
	m = model_with(3, "hidden=8", "lr=0.01", "epochs=2000",
		       "n_iter_no_change=10", NULL);
	ref = model_with(3, "hidden=8", "lr=0.01", "epochs=2000",
			 "n_iter_no_change=10", NULL);
	fit_ok(m, &tr, NULL);
	fit_ok(ref, &tr, NULL);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_MSG(run > 12 && run < 2000, "ran %zu", run);
	a = saved_state(m);
	b = saved_state(ref);
	CHECK_STR(a, b);
	free(a);
	free(b);
	cfl_model_free(ref);
	cfl_model_free(m);
	/* auto (the default): off when epochs is given ... */
	m = model_with(3, "hidden=8", "epochs=30", "tol=1e6", NULL);
	fit_ok(m, &tr, NULL);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_MSG(run == 30, "ran %zu", run);
	cfl_model_free(m);
	/* ... on with epochs=auto, but never before 2000 steps (40 rows:
	 * batch 16, 3 steps an epoch, 667 epochs) ... */
	m = model_with(3, "hidden=8", "tol=1e6", NULL);
	fit_ok(m, &tr, NULL);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_MSG(run == 667, "ran %zu", run);
	cfl_model_free(m);
	/* ... and off when early stopping watches validation rows */
	m = model_with(3, "hidden=8", "tol=1e6", "patience=1000", NULL);
	fit_ok(m, &tr, &va);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_MSG(run == 667, "ran %zu", run);
	CHECK(m->n_iter_kept == at);
	cfl_model_free(m);
	xy_free(&tr);
	xy_free(&va);
}

/* epochs=auto with the loss stop off runs exactly the epochs it chose:
 * 40 where 40 epochs are already 2000 steps, else enough for 2000 steps
 * (the batch is 128 rows from 2048 rows on, rows/16 below). */
static void t_epochs_auto(void)
{
	static const struct { size_t n, epochs; } shapes[] = {
		{ 6400, 40 },	/* 50 steps an epoch: 40 epochs are 2000 */
		{ 12800, 40 },	/* 100 steps an epoch: 4000 steps */
		{ 2560, 100 },	/* 20 steps an epoch */
		{ 300, 125 },	/* batch 19, 16 steps an epoch */
		{ 40, 667 },	/* batch 16, 3 steps an epoch */
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct cfl_xy tr;
		struct cfl_model *m = model_with(3, "hidden=2", "n_iter_no_change=0",
						 NULL);
		size_t run, at;

		make_data(&tr, shapes[i].n, 2, 2, 7);
		fit_ok(m, &tr, NULL);
		CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
		CHECK_MSG(run == shapes[i].epochs, "%zu rows: ran %zu epochs, expected %zu",
			  shapes[i].n, run, shapes[i].epochs);
		cfl_model_free(m);
		xy_free(&tr);
	}
}

/* A validation metric can drive early stopping too. */
static void t_monitor_metric(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *m = model_with(3, "hidden=8", "epochs=50", "patience=3",
					 "monitor=acc", NULL);
	size_t run, at;

	make_data(&tr, 60, 4, 2, 7);
	make_data(&va, 30, 4, 2, 8);
	fit_ok(m, &tr, &va);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK(at >= 1 && at <= run && run <= 50);
	cfl_model_free(m);
	xy_free(&tr);
	xy_free(&va);
}

/* valid_frac: with patience and no validation part, the model holds out
 * a share of its training rows and stops early on them (on labels that
 * are noise, long before its epochs); without patience, or with a
 * validation part given, nothing is held out; the same seed gives the
 * same model; too few rows to hold out from is an error. */
static void t_valid_frac_holds_out(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *a = model_with(5, "hidden=16", "epochs=200", "patience=3",
					 "valid_frac=0.2", NULL);
	struct cfl_model *b = model_with(5, "hidden=16", "epochs=200", "patience=3",
					 "valid_frac=0.2", NULL);
	struct cfl_model *off = model_with(5, "hidden=16", "epochs=200", "patience=3", NULL);
	struct cfl_model *nopat = model_with(5, "hidden=16", "epochs=200", "patience=0",
					     "valid_frac=0.2", NULL);
	struct cfl_model *plain = model_with(5, "hidden=16", "epochs=200", "patience=0", NULL);
	struct cfl_model *tiny = model_with(5, "hidden=4", "patience=3", "valid_frac=0.2", NULL);
	struct cfl_model *given = model_with(5, "hidden=16", "epochs=200", "patience=3",
					     "valid_frac=0.2", NULL);
	struct cfl_model *given0 = model_with(5, "hidden=16", "epochs=200", "patience=3", NULL);
	struct cfl_rng r;
	struct cfl_err err = { "" };
	size_t run, at, na, nb;
	const float *ta, *tb;

	make_data(&tr, 120, 4, 2, 11);
	make_data(&va, 40, 4, 2, 12);
	cfl_rng_seed(&r, 99);
	for (size_t i = 0; i < tr.n; i++)	/* labels that are noise */
		tr.y[i] = (double)cfl_rng_below(&r, 2);
	fit_ok(a, &tr, NULL);
	CHECK(cfl_fcnn_epochs(a, &run, &at) == 0);
	CHECK_MSG(run < 200 && at >= 1 && at <= run, "held out: ran %zu epochs, kept %zu", run, at);
	CHECK_INT(a->n_iter_kept, at);
	fit_ok(b, &tr, NULL);
	ta = cfl_fcnn_theta(a, &na);
	tb = cfl_fcnn_theta(b, &nb);
	CHECK(ta && tb && na == nb && memcmp(ta, tb, na * sizeof(float)) == 0);
	/* no valid_frac, or no patience: every epoch on every row */
	fit_ok(off, &tr, NULL);
	CHECK(cfl_fcnn_epochs(off, &run, &at) == 0);
	CHECK_MSG(run == 200 && at == 200, "valid_frac=0: ran %zu, kept %zu", run, at);
	fit_ok(nopat, &tr, NULL);
	fit_ok(plain, &tr, NULL);
	ta = cfl_fcnn_theta(nopat, &na);
	tb = cfl_fcnn_theta(plain, &nb);
	CHECK(ta && tb && na == nb && memcmp(ta, tb, na * sizeof(float)) == 0);
	/* a validation part given is the one used: the same model as
	 * without valid_frac */
	fit_ok(given, &tr, &va);
	fit_ok(given0, &tr, &va);
	ta = cfl_fcnn_theta(given, &na);
	tb = cfl_fcnn_theta(given0, &nb);
	CHECK(ta && tb && na == nb && memcmp(ta, tb, na * sizeof(float)) == 0);
	tr.n = 3;
	CHECK(cfl_model_fit(tiny, &tr, NULL, &err) != 0);
	CHECK_MSG(strstr(err.msg, "too few") != NULL, "%s", err.msg);
	tr.n = 120;
	cfl_model_free(a);
	cfl_model_free(b);
	cfl_model_free(off);
	cfl_model_free(nopat);
	cfl_model_free(plain);
	cfl_model_free(tiny);
	cfl_model_free(given);
	cfl_model_free(given0);
	xy_free(&tr);
	xy_free(&va);
}

/* Regression targets are standardised and mapped back: scaling the target
 * by 1000 scales the predictions by 1000. */
static void t_regression_targets_mapped_back(void)
{
	struct cfl_xy tr, big;
	struct cfl_model *m = model_with(4, "hidden=16", "epochs=40",
					 "batch_size=16", "lr=0.01", NULL);
	struct cfl_model *mb = model_with(4, "hidden=16", "epochs=40",
					  "batch_size=16", "lr=0.01", NULL);
	double *p, *pb, sse = 0, sst = 0, mean = 0;

	make_data(&tr, 200, 3, 0, 9);
	make_data(&big, 200, 3, 0, 9);
	for (size_t i = 0; i < big.n; i++)
		big.y[i] *= 1000;
	fit_ok(m, &tr, NULL);
	fit_ok(mb, &big, NULL);
	p = predict_all(m, &tr);
	pb = predict_all(mb, &big);
	for (size_t i = 0; i < tr.n; i++)
		mean += tr.y[i] / (double)tr.n;
	for (size_t i = 0; i < tr.n; i++) {
		sse += (p[i] - tr.y[i]) * (p[i] - tr.y[i]);
		sst += (mean - tr.y[i]) * (mean - tr.y[i]);
		CHECK_NEAR(pb[i] / 1000, p[i], 1e-4 * fabs(p[i]) + 1e-3);
	}
	CHECK_MSG(sse < 0.2 * sst, "r2 %g", 1 - sse / sst);
	free(p);
	free(pb);
	cfl_model_free(m);
	cfl_model_free(mb);
	xy_free(&tr);
	xy_free(&big);
}

/* hidden=auto: two layers of max(64, 2 d) for small data. */
static void t_hidden_auto(void)
{
	struct cfl_xy xy;
	struct cfl_model *m = model_with(1, "epochs=1", NULL);
	struct cfl_err err = { "" };
	size_t n;

	make_data(&xy, 50, 40, 3, 1);
	CHECK_MSG(cfl_fcnn_build(m, &xy, &err) == 0, "%s", err.msg);
	CHECK(cfl_fcnn_theta(m, &n));
	CHECK_INT(n, (40 * 80 + 80) + (80 * 80 + 80) + (80 * 3 + 3));
	cfl_model_free(m);
	xy_free(&xy);
}

/* The initial weights equal PyTorch's for the same seed (values printed by
 * torch 1.13: torch.manual_seed(3); Sequential(Linear(4, 5), ReLU(),
 * Linear(5, 3)); parameters flattened), bit for bit. */
static void t_init_equals_pytorch(void)
{
	static const float torch_init[43] = {
		-0.49573648f, -0.394430637f, -0.214157522f, -0.47304517f, -0.0283856392f,
		-0.439883709f, 0.271865845f, 0.243699372f, 0.0944212079f, 0.387856662f,
		-0.0489686728f, 0.299490631f, -0.350159109f, -0.0985311866f, -0.445823073f,
		-0.0405947566f, -0.324394763f, 0.449182868f, 0.347318649f, 0.374856234f,
		0.148310423f, -0.28524226f, 0.449304998f, -0.487891316f, -0.319122791f,
		-0.279316038f, -0.185374781f, 0.0891731903f, -0.338759571f, -0.344537109f,
		-0.213875756f, 0.272954047f, -0.322564334f, -0.401104182f, -0.38760376f,
		-0.220067203f, -0.11750453f, -0.443345696f, -0.209379837f, 0.00860333256f,
		0.0737205446f, -0.0641120672f, -0.0507074036f,
	};
	struct cfl_xy xy;
	struct cfl_model *m = model_with(3, "hidden=5", NULL);
	struct cfl_err err = { "" };
	float *theta;
	size_t n;

	make_data(&xy, 10, 4, 3, 1);
	CHECK_MSG(cfl_fcnn_build(m, &xy, &err) == 0, "%s", err.msg);
	theta = cfl_fcnn_theta(m, &n);
	CHECK_INT(n, 43);
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(theta[i] == torch_init[i], "theta[%zu] %.9g, torch %.9g", i,
			  (double)theta[i], (double)torch_init[i]);
	cfl_model_free(m);
	xy_free(&xy);
}

static void t_param_errors(void)
{
	static const char *bad[][2] = {
		{ "hidden=0", "hidden must be a comma-separated list" },
		{ "hidden=64,x", "hidden must be" },
		{ "lr=-1", "lr must be a number in [0, 10]" },
		{ "dropout=1", "dropout must be a number" },
		{ "optimizer=lbfgs", "optimizer must be one of sgd|momentum" },
		{ "batch_size=0", "batch_size must be an integer" },
		{ "epochs=1.5", "epochs must be an integer" },
		{ "batch_norm=maybe", "batch_norm must be true or false" },
		{ "nosuch=1", "fcnn has no parameter 'nosuch'" },
	};
	struct cfl_xy clf, reg;
	struct cfl_err err = { "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfl_params p;

		cfl_params_init(&p);
		CHECK(cfl_params_set_arg(&p, bad[i][0], &err) == 0);
		CHECK(!cfl_model_new(&cfl_fcnn_ops, &p, 0, &err));
		CHECK_CONTAINS(err.msg, bad[i][1]);
		cfl_params_release(&p);
	}
	make_data(&clf, 20, 3, 2, 1);
	make_data(&reg, 20, 3, 0, 1);
	{
		struct cfl_model *m = model_with(1, "loss=mse", "epochs=1", NULL);

		CHECK(cfl_model_fit(m, &clf, NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "loss 'mse' does not apply to classification");
		cfl_model_free(m);
		m = model_with(1, "loss=ce", "epochs=1", NULL);
		CHECK(cfl_model_fit(m, &reg, NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "loss 'ce' does not apply to regression");
		cfl_model_free(m);
		m = model_with(1, "monitor=rmse", "epochs=1", NULL);
		CHECK(cfl_model_fit(m, &clf, NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "monitor 'rmse' does not apply to classification");
		cfl_model_free(m);
		m = model_with(1, "lr=10", "optimizer=sgd", "epochs=30", "hidden=32",
			       NULL);
		for (size_t i = 0; i < reg.n; i++)
			reg.y[i] = i % 2 ? 1e30 : -1e30;
		CHECK(cfl_model_fit(m, &reg, NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "diverged");
		cfl_model_free(m);
	}
	xy_free(&clf);
	xy_free(&reg);
}

/* Bad states: every problem is an error naming the line, never a crash or
 * a huge allocation. */
static void t_load_errors(void)
{
	static const char *bad[][2] = {
		{ "fcnn 2 0 ce\ntarget 0 1\nlayer 3 2\nweights 1 2 3 4 5 6\nbiases 1 2\n"
		  "layer 2 2\nweights 1 2 3", "truncated" },
		{ "fcnn 1 0 ce\ntarget 0 1\nlayer 4 2\nweights 1 2 3 4 5 6 7 8\nbiases 1 2",
		  "has 4 inputs, expected 3" },
		{ "fcnn 1 0 ce\ntarget 0 1\nlayer 3 5\nweights 1 2 3 4 5 6 7 8\nbiases 1 2",
		  "output layer has 5 outputs, expected 2" },
		{ "fcnn 1 0 mse\ntarget 0 1\nlayer 3 2\nweights 1 2 3 4 5 6\nbiases 1 2",
		  "does not fit" },
		{ "fcnn 1 0 ce\ntarget 0 0\nlayer 3 2\nweights 1 2 3 4 5 6\nbiases 1 2",
		  "bad fcnn target scale" },
		{ "fcnn 2 0 ce\ntarget 0 1\nlayer 3 60000\nweights 1 2 3", "truncated" },
		{ "fcnn 0 0 ce\ntarget 0 1\n", "no layers" },
		{ "fcnn 1 0 ce\ntarget 0 1\nlayer 3 2\nweights 1 2 x 4 5 6\nbiases 1 2",
		  "m.cfl:4:" },
		{ "fcnn 2 1 ce\ntarget 0 1\nlayer 3 1\nweights 1 2 3\nbiases 1\n"
		  "batch_norm 1 0 0 -1\nlayer 1 2\nweights 1 2\nbiases 1 2", "negative" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfl_model *m = model_with(1, "epochs=1", NULL);
		struct cfl_reader r;
		struct cfl_err err = { "" };

		m->n_features = 3;
		m->n_classes = 2;
		cfl_reader_init(&r, "m.cfl", bad[i][0], strlen(bad[i][0]));
		CHECK_MSG(m->ops->load(m, &r, &err) == -1, "case %zu loaded", i);
		CHECK_CONTAINS(err.msg, bad[i][1]);
		CHECK(m->state == NULL);
		cfl_model_free(m);
	}
}

/* A tiny time budget: one step (the first is always made: a part of the
 * first epoch), a model that predicts, and the fit says so; with a
 * budget it never reaches, the same model as without one. */
static void t_budget_one_epoch(void)
{
	struct cfl_xy tr;
	struct cfl_model *m = model_with(3, "epochs=30", "batch_size=8", NULL);
	struct cfl_model *full = model_with(3, "epochs=30", "batch_size=8", NULL);
	struct cfl_model *one = model_with(3, "epochs=30", "batch_size=8", NULL);
	char *a, *b;
	double *out;
	size_t run, at;

	make_data(&tr, 60, 4, 2, 7);
	m->budget_s = 1e-9;
	one->budget_s = 1e6;
	fit_ok(m, &tr, NULL);
	fit_ok(full, &tr, NULL);
	fit_ok(one, &tr, NULL);
	CHECK(cfl_fcnn_epochs(m, &run, &at) == 0);
	CHECK_INT(run, 1);
	CHECK_INT(m->budget_cut, 1);
	CHECK_INT(m->n_iter_kept, 1);
	CHECK(cfl_fcnn_epochs(full, &run, &at) == 0);
	CHECK_INT(run, 30);
	CHECK_INT(one->budget_cut, 0);
	CHECK_INT(one->n_iter_kept, 0);
	out = predict_all(m, &tr);
	for (size_t i = 0; i < tr.n; i++)
		CHECK(out[2 * i] >= 0 && out[2 * i] <= 1 &&
		      fabs(out[2 * i] + out[2 * i + 1] - 1) < 1e-9);
	free(out);
	a = saved_state(m);
	b = saved_state(full);
	CHECK(strcmp(a, b) != 0);
	free(a);
	free(b);
	a = saved_state(one);
	b = saved_state(full);
	CHECK_STR(a, b);
	free(a);
	free(b);
	cfl_model_free(full);
	cfl_model_free(m);
	cfl_model_free(one);
	xy_free(&tr);
}

struct reported {
	size_t n, last_step, stop_at;
	double last;
};

static int on_report(void *ctx, size_t step, double score)
{
	struct reported *r = ctx;

	r->n++;
	r->last_step = step;
	r->last = score;
	return step >= r->stop_at;
}

/* The validation score of every epoch goes to m->report, with or
 * without early stopping; a report that says stop prunes the fit. */
static void t_reports_and_prunes(void)
{
	struct cfl_xy tr, va;
	struct cfl_model *m = model_with(3, "epochs=6", "patience=0", NULL);
	struct reported r = { .stop_at = 1000 };
	struct cfl_err err = { "" };

	make_data(&tr, 60, 4, 2, 7);
	make_data(&va, 30, 4, 2, 8);
	m->report = on_report;
	m->report_ctx = &r;
	fit_ok(m, &tr, &va);
	CHECK_INT(r.n, 6);
	CHECK_INT(r.last_step, 6);
	CHECK(r.last < 0 && r.last > -5);	/* minus the log loss */
	r = (struct reported){ .stop_at = 3 };
	CHECK_INT(cfl_model_fit(m, &tr, &va, &err), -1);
	CHECK_STR(err.msg, "pruned at step 3");
	CHECK_INT(r.n, 3);
	cfl_model_free(m);
	xy_free(&tr);
	xy_free(&va);
}

/* A fit's SHA-256 of its saved model and predictions on tr. */
static char *fit_sha(struct cfl_model *m, const struct cfl_xy *tr,
		     const struct cfl_xy *va)
{
	char *text, *hex;
	double *out;

	fit_ok(m, tr, va);
	text = saved_state(m);
	out = predict_all(m, tr);
	hex = strdup(cfl_test_sha_hex(text, out, tr->n * cfl_model_n_out(m)));
	free(text);
	free(out);
	return hex;
}

/* Offers the spare core back at the end of epoch 2 (the pool has work
 * for it again). */
static int take_back_at_2(void *ctx, size_t step, double score)
{
	(void)ctx;
	(void)score;
	if (step == 2)
		cfl_spare_offer(0);
	return 0;
}

/* A step of 128 rows or more runs as two halves, the second on another
 * thread when the pool has a core spare: the model is the same bits with
 * and without it (two classes on 128-row steps, three on 200 with the
 * last step too short to split, regression with SGD and momentum, RMSprop),
 * the thread ran (its steps counted), and the core went back; with dropout
 * no step is split and no core is taken, nor with BLAS threads of its own
 * (threads=2); and a core the pool wants back
 * mid-fit is given back at the next step, the model again the same. */
static void t_spare_core_same_bits(void)
{
	static const struct {
		int k;
		size_t n;
		const char *p[5];
		int splits;
	} cf[] = {
		{ 2, 1024, { "hidden=64,32", "epochs=3", "batch_size=128", NULL }, 1 },
		{ 3, 1090, { "hidden=40", "epochs=2", "batch_size=200", "optimizer=rmsprop", NULL }, 1 },
		{ 0, 1090, { "hidden=24,24", "epochs=2", "batch_size=130", "optimizer=momentum", NULL }, 1 },
		{ 2, 1024, { "hidden=64,32", "epochs=2", "batch_size=128", "dropout=0.1", NULL }, 0 },
		{ 2, 1024, { "hidden=64,32", "epochs=2", "batch_size=64", NULL }, 0 },
		{ 2, 1024, { "hidden=64,32", "epochs=2", "batch_size=128", "threads=2", NULL }, 0 },
	};
	struct cfl_err err = { "" };

	CHECK_MSG(cfl_spare_init(&err) == 0, "%s", err.msg);
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const char *const *p = cf[c].p;
		struct cfl_model *m = model_with(5, p[0], p[1], p[2],
						 p[3] ? p[3] : "patience=0",
						 "patience=0", NULL);
		struct cfl_xy tr;
		char *alone, *two;

		make_data(&tr, cf[c].n, 12, cf[c].k, 31 + c);
		cfl_spare_offer(0);
		alone = fit_sha(m, &tr, NULL);
		CHECK_MSG(cfl_fcnn_helper_steps(m) == 0, "case %zu", c);
		cfl_spare_offer(1);
		two = fit_sha(m, &tr, NULL);
		CHECK_MSG(strcmp(alone, two) == 0, "case %zu: %s alone, %s with a second thread",
			  c, alone, two);
		CHECK_MSG((cfl_fcnn_helper_steps(m) > 0) == cf[c].splits,
			  "case %zu: %zu steps on two threads", c, cfl_fcnn_helper_steps(m));
		CHECK_MSG(cfl_spare_count() == 1, "case %zu: %d spare after the fit", c,
			  cfl_spare_count());
		free(alone);
		free(two);
		cfl_model_free(m);
		xy_free(&tr);
	}
	/* taken back after epoch 2 of 4: 8 steps of 128 a epoch */
	{
		struct cfl_model *m = model_with(6, "hidden=32,32", "epochs=4",
						 "batch_size=128", "patience=0", NULL);
		struct cfl_xy tr, va;
		char *alone, *two;

		make_data(&tr, 1024, 8, 2, 41);
		make_data(&va, 100, 8, 2, 42);
		m->report = take_back_at_2;
		cfl_spare_offer(0);
		alone = fit_sha(m, &tr, &va);
		cfl_spare_offer(1);
		two = fit_sha(m, &tr, &va);
		CHECK_STR(two, alone);
		CHECK_MSG(cfl_fcnn_helper_steps(m) == 16, "%zu steps on two threads",
			  cfl_fcnn_helper_steps(m));
		CHECK_INT(cfl_spare_count(), 0);
		free(alone);
		free(two);
		cfl_model_free(m);
		xy_free(&tr);
		xy_free(&va);
	}
}

const struct cfl_test cfl_tests[] = {
	TEST(t_grad_ce),
	TEST(t_grad_ce_no_hidden),
	TEST(t_grad_batch_norm),
	TEST(t_grad_dropout),
	TEST(t_grad_narrow_layers),
	TEST(t_grad_mse),
	TEST(t_grad_mae),
	TEST(t_learns_blobs),
	TEST(t_every_optimizer_learns),
	TEST(t_same_seed_bit_identical),
	TEST(t_matches_earlier_path),
	TEST(t_same_bits_as_before),
	TEST(t_blas_better_core),
	TEST(t_save_load_predict),
	TEST(t_early_stopping_keeps_best),
	TEST(t_training_loss_stop),
	TEST(t_epochs_auto),
	TEST(t_monitor_metric),
	TEST(t_valid_frac_holds_out),
	TEST(t_regression_targets_mapped_back),
	TEST(t_hidden_auto),
	TEST(t_init_equals_pytorch),
	TEST(t_param_errors),
	TEST(t_load_errors),
	TEST(t_budget_one_epoch),
	TEST(t_reports_and_prunes),
	TEST(t_spare_core_same_bits),
	{ 0 },
};
