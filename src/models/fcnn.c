/*
 * fcnn: a fully connected network on float32, trained by minibatch
 * gradient descent.  Hidden layer: linear -> [batch norm] -> ReLU ->
 * [dropout]; output layer: linear, then softmax cross-entropy
 * (classification) or MSE / MAE on standardised targets (regression).
 * Matrix products go through OpenBLAS sgemm (gemm_* below), those of
 * layers with one or two outputs through plain loops (narrow_*, faster at
 * that width); only this file, linear.c and blas.c include cblas.h.  Defaults follow PyTorch's (layer
 * initialisation, Adam, batch norm), so the same settings train as well.
 * Determinism: the seed alone drives initialisation and shuffling (PyTorch's
 * own stream, see below) and dropout (a stream of its own), so one seed
 * gives a bit-identical model.  OpenBLAS splits a product's sums over its
 * threads differently for another thread count, so fit and predict run on
 * one BLAS thread unless threads=T is given: OPENBLAS_NUM_THREADS then
 * cannot change a model file.
 */
#include "cfl/fcnn.h"
#include "cfl/metrics.h"
#include "cfl/model.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_HIDDEN 32
#define MAX_LAYERS (MAX_HIDDEN + 1)
#define MAX_WIDTH 65536
#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.1f	/* PyTorch's: running = 0.9 running + 0.1 batch */
#define EVAL_ROWS 1024		/* rows per forward pass when predicting */
/* batch_size=auto and epochs=auto: 128 rows per step (shrunk on small
 * data) and 40 epochs, raised on small data until the optimiser takes
 * AUTO_MIN_STEPS steps: 40 Adam steps (iris at batch 128) leave a net far
 * from trained, while on large data 40 epochs are already thousands of
 * steps (a cap of 200 would let a loss that keeps falling run five times
 * longer there).  Such a run ends earlier when the training loss
 * stops improving (n_iter_no_change, tol), as scikit-learn's MLP does, so
 * the defaults need no validation rows; never before AUTO_MIN_STEPS steps. */
#define AUTO_BATCH 128
#define AUTO_MIN_BATCH 16
#define AUTO_STEPS_PER_EPOCH 16
#define AUTO_EPOCHS 40
#define AUTO_MIN_STEPS 2000
#define AUTO_MAX_EPOCHS 1000
#define AUTO_NO_CHANGE 10

/* The element-wise loops that run every step are compiled for several
 * instruction sets (the build targets plain x86-64). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_ADDRESS__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

/* Loops the compiler must not turn into memcpy / memset calls. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LIBCALLS
#endif

enum loss { LOSS_CE, LOSS_MSE, LOSS_MAE };
enum optim { OPT_SGD, OPT_MOMENTUM, OPT_NESTEROV, OPT_RMSPROP, OPT_ADAM,
	     OPT_ADAMW };

/* One layer: offsets into the parameter vector theta (and the gradient,
 * which has the same layout) and into the running statistics. */
struct layer {
	size_t n_in, n_out;
	int hidden;		/* batch norm / ReLU / dropout follow */
	size_t w, b;		/* theta: weights (n_out, n_in), biases n_out */
	size_t gamma, beta;	/* theta: batch-norm scale, shift (n_out) */
	size_t mean, var;	/* stats: running mean, variance (n_out) */
};

struct fcnn {
	size_t n_layers;
	struct layer layer[MAX_LAYERS];
	int batch_norm;
	enum loss loss;
	size_t n_in, n_out;
	double y_mean, y_std;	/* regression targets are (y - mean) / std */
	size_t n_theta, n_stats;
	float *theta;		/* n_theta: everything the optimiser moves */
	float *stats;		/* n_stats: batch-norm running statistics */
	size_t epochs_run, best_epoch;
	size_t helper_steps;	/* of the last fit, run in two threads */
};

/* ---- fcnn: BLAS ---- */

/* Leading dimensions must be at least 1 even for an empty matrix (a model
 * whose every input column was dropped has k = 0), or OpenBLAS complains
 * on stderr and does nothing. */
static int ld(size_t v)
{
	return v ? (int)v : 1;
}

/* C (m, n) += A (m, k) B^T, B (n, k): a layer's forward product, added
 * to C already seeded with the bias rows (beta = 1: OpenBLAS neither zeroes
 * C first nor needs a second pass for the bias).  The kernel adds its sum
 * to C once, so for k up to OpenBLAS's block depth (256 and more) the bits
 * are those of the sum plus the bias; beyond it the bias joins the first
 * block's partial sum and the last bit may differ. */
static void gemm_nt_acc(size_t m, size_t n, size_t k, const float *a,
			const float *b, float *c)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n,
		    (int)k, 1.0f, a, ld(k), b, ld(k), 1.0f, c, ld(n));
}

/* C (m, n) = A^T B, A (k, m), B (k, n): the weight gradient dZ^T X. */
static void gemm_tn(size_t m, size_t n, size_t k, const float *a,
		    const float *b, float *c)
{
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)n,
		    (int)k, 1.0f, a, ld(m), b, ld(n), 0.0f, c, ld(n));
}

/* C (m, n) = A (m, k) B (k, n): the input gradient dZ W. */
static void gemm_nn(size_t m, size_t n, size_t k, const float *a,
		    const float *b, float *c)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n,
		    (int)k, 1.0f, a, ld(k), b, ld(n), 0.0f, c, ld(n));
}

/* ---- fcnn: products of narrow layers ----
 * A layer with at most NARROW outputs (the output layer of a binary
 * classifier or a regression) makes products with one side of 1 or 2, on
 * which sgemm runs at a fraction of its speed (packing and edge kernels
 * for a sliver of work): plain loops do them faster.  Their sums run in a
 * fixed order written out below (LANES partial sums, then a fixed tree),
 * the same on every instruction set, so a seed still gives one model. */

#define NARROW 2
#define LANES 16
#define TN_CHUNK 32

/* The sum of LANES partial sums by a fixed tree: lane l plus lane l + h
 * for h = LANES / 2, ..., 1.  With GCC's vector types the first two levels
 * are one vector add each (the high half onto the low half) in registers;
 * the plain loop over h left the lanes in memory, a store and a reload
 * per add.  Both give the same bits. */
#if defined(__GNUC__)
typedef float lanes8 __attribute__((vector_size(32)));
typedef float lanes4 __attribute__((vector_size(16)));

static inline float lane_tree(const float *acc)
{
	lanes8 lo, hi, s8;
	lanes4 a, b, s4;

	_Static_assert(LANES == 16, "lane_tree sums 16 lanes");
	memcpy(&lo, acc, sizeof(lo));
	memcpy(&hi, acc + 8, sizeof(hi));
	s8 = lo + hi;
	memcpy(&a, &s8, sizeof(a));
	memcpy(&b, (const float *)&s8 + 4, sizeof(b));
	s4 = a + b;
	return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}
#else
static inline float lane_tree(const float *acc)
{
	float s8[8], s4[4];

	_Static_assert(LANES == 16, "lane_tree sums 16 lanes");
	for (size_t l = 0; l < 8; l++)
		s8[l] = acc[l] + acc[l + 8];
	for (size_t l = 0; l < 4; l++)
		s4[l] = s8[l] + s8[l + 4];
	return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}
#endif

/* z (n, m) = b + x (n, k) w^T, w (m, k), b (m): the bias added here
 * gives the bits of z seeded with it (seed_rows) plus the sum. */
CLONES
static void narrow_nt(float *restrict z, const float *restrict x,
		      const float *restrict w, const float *restrict b,
		      size_t n, size_t m, size_t k)
{
	for (size_t i = 0; i < n; i++, x += k, z += m)
		for (size_t j = 0; j < m; j++) {
			const float *wj = w + j * k;
			float acc[LANES] = { 0 }, tail = 0;
			size_t p = 0;

			for (; p + LANES <= k; p += LANES)
				for (size_t l = 0; l < LANES; l++)
					acc[l] += x[p + l] * wj[p + l];
			for (; p < k; p++)
				tail += x[p] * wj[p];
			z[j] = b[j] + (lane_tree(acc) + tail);
		}
}

/* gw (m, k) = dz^T x, unless gw is NULL (narrow_nn makes it), and, when
 * gb is not NULL (the bias gradient not summed already), gb (m) = column
 * sums of dz, for dz (n, m) and x (n, k): rows added in order. */
CLONES
static void narrow_tn(float *restrict gw, float *restrict gb,
		      const float *restrict dz, const float *restrict x,
		      size_t n, size_t m, size_t k)
{
	_Static_assert(NARROW == 2, "narrow_tn handles m = 1 and m = 2");
	for (size_t j = 0; gb && j < m; j++)
		gb[j] = 0;
	for (size_t i = 0; gb && i < n; i++)
		for (size_t j = 0; j < m; j++)
			gb[j] += dz[i * m + j];
	/* TN_CHUNK columns at a time, summed over the rows in registers
	 * (not through gw in memory, a store and a reload per row) */
	for (size_t p0 = 0; gw && p0 < k; p0 += TN_CHUNK) {
		const size_t c = k - p0 < TN_CHUNK ? k - p0 : TN_CHUNK;
		const float *xp = x + p0;
		float a0[TN_CHUNK] = { 0 }, a1[TN_CHUNK] = { 0 };

		if (c == TN_CHUNK && m == 2) {
			for (size_t i = 0; i < n; i++) {
				const float d0 = dz[2 * i], d1 = dz[2 * i + 1];

				for (size_t q = 0; q < TN_CHUNK; q++) {
					a0[q] += d0 * xp[i * k + q];
					a1[q] += d1 * xp[i * k + q];
				}
			}
		} else if (c == TN_CHUNK) {
			for (size_t i = 0; i < n; i++)
				for (size_t q = 0; q < TN_CHUNK; q++)
					a0[q] += dz[i] * xp[i * k + q];
		} else {
			for (size_t i = 0; i < n; i++)
				for (size_t q = 0; q < c; q++) {
					a0[q] += dz[i * m] * xp[i * k + q];
					if (m > 1)
						a1[q] += dz[i * m + 1] * xp[i * k + q];
				}
		}
		for (size_t q = 0; q < c; q++) {
			gw[p0 + q] = a0[q];
			if (m > 1)
				gw[k + p0 + q] = a1[q];
		}
	}
}

/* dx (n, k) = dz (n, m) w, w (m, k).  When h is not NULL, dx then goes
 * through the ReLU (and the dropout mask, when not NULL) of the hidden
 * layer whose output h (n, k) this layer read, gb (k) gets the column
 * sums of the result (relu_back's work) and gw (m, k) = dz^T h (narrow_tn's),
 * all in the same pass over h: each element of gw is the sum of the same
 * products in the same order as narrow_tn's, so it has the same bits. */
NO_LIBCALLS
CLONES
static void narrow_nn(float *restrict dx, const float *restrict dz,
		      const float *restrict w, size_t n, size_t m, size_t k,
		      const float *restrict h, const float *restrict mask,
		      float *restrict gb, float *restrict gw)
{
	const float *w1 = w + k;
	float *restrict gw1 = gw + k;

	_Static_assert(NARROW == 2, "narrow_nn handles m = 1 and m = 2");
	for (size_t p = 0; h && p < k; p++)
		gb[p] = 0;
	for (size_t p = 0; h && p < m * k; p++)
		gw[p] = 0;
	/* one pass per row, each element stored once: the variants are
	 * written out so the compiler keeps every one a single loop */
	for (size_t i = 0; i < n; i++, dz += m, dx += k) {
		const float d0 = dz[0], d1 = m > 1 ? dz[1] : 0.0f;

		if (!h && m == 1) {
			for (size_t p = 0; p < k; p++)
				dx[p] = d0 * w[p];
		} else if (!h) {
			for (size_t p = 0; p < k; p++)
				dx[p] = d0 * w[p] + d1 * w1[p];
		} else if (m == 1 && mask) {
			for (size_t p = 0; p < k; p++) {
				float v = h[p] > 0.0f ? d0 * w[p] * mask[p] : 0.0f;

				dx[p] = v;
				gb[p] += v;
				gw[p] += d0 * h[p];
			}
		} else if (m == 1) {
			for (size_t p = 0; p < k; p++) {
				float v = h[p] > 0.0f ? d0 * w[p] : 0.0f;

				dx[p] = v;
				gb[p] += v;
				gw[p] += d0 * h[p];
			}
		} else if (mask) {
			for (size_t p = 0; p < k; p++) {
				float v = h[p] > 0.0f ? (d0 * w[p] + d1 * w1[p]) * mask[p] : 0.0f;

				dx[p] = v;
				gb[p] += v;
				gw[p] += d0 * h[p];
				gw1[p] += d1 * h[p];
			}
		} else {
			for (size_t p = 0; p < k; p++) {
				float v = h[p] > 0.0f ? d0 * w[p] + d1 * w1[p] : 0.0f;

				dx[p] = v;
				gb[p] += v;
				gw[p] += d0 * h[p];
				gw1[p] += d1 * h[p];
			}
		}
		if (h) {
			h += k;
			mask = mask ? mask + k : NULL;
		}
	}
}

/* ---- fcnn: parameters ---- */

static const struct cfl_param_spec fcnn_params[] = {
	{ "hidden", CFL_P_INTLIST, "auto", 1, MAX_WIDTH, NULL,
	  "hidden layer widths, e.g. 64,64; none: no hidden layer; auto: two layers sized from the data, 128 wide from 10000 rows of at most 64 inputs, else as carefree-learn does" },
	{ "dropout", CFL_P_FLOAT, "0", 0, 0.95, NULL,
	  "dropout probability after each hidden layer's ReLU" },
	{ "batch_norm", CFL_P_BOOL, "false", 0, 0, NULL,
	  "batch normalisation before each hidden layer's ReLU" },
	{ "loss", CFL_P_CHOICE, "auto", 0, 0, "auto|ce|mse|mae",
	  "ce (softmax cross-entropy) for classification, mse or mae for regression; auto: ce or mse" },
	{ "optimizer", CFL_P_CHOICE, "adam", 0, 0,
	  "sgd|momentum|nesterov|rmsprop|adam|adamw", "the update rule" },
	{ "lr", CFL_P_FLOAT, "0.001", 0, 10, NULL, "learning rate" },
	{ "weight_decay", CFL_P_FLOAT, "0", 0, 10, NULL,
	  "L2 penalty added to the gradient (adamw: decoupled decay)" },
	{ "momentum", CFL_P_FLOAT, "0.9", 0, 0.9999, NULL,
	  "momentum of momentum and nesterov" },
	{ "beta1", CFL_P_FLOAT, "0.9", 0, 0.9999, NULL, "adam, adamw: first moment decay" },
	{ "beta2", CFL_P_FLOAT, "0.999", 0, 0.999999, NULL, "adam, adamw: second moment decay" },
	{ "eps", CFL_P_FLOAT, "1e-8", 0, 1, NULL,
	  "adam, adamw, rmsprop: added to the root of the second moment" },
	{ "rho", CFL_P_FLOAT, "0.99", 0, 0.999999, NULL,
	  "rmsprop: decay of the squared-gradient average (PyTorch's alpha)" },
	{ "batch_size", CFL_P_INT, "auto", 1, 1000000, NULL,
	  "rows per step; the last partial batch is kept; auto: 128, or rows/16 (at least 16) when that is smaller, so small data gets 16 steps per epoch" },
	{ "epochs", CFL_P_INT, "auto", 1, 100000, NULL,
	  "passes over the training rows; auto: 40, or more on small data so that training takes at least 2000 steps (at most 1000 epochs), ended earlier by n_iter_no_change" },
	{ "patience", CFL_P_INT, "0", 0, 100000, NULL,
	  "stop after this many epochs without a better validation score and keep the best weights (holds out validation rows); 0: no early stopping on validation" },
	{ "valid_frac", CFL_P_FLOAT, "0", 0, 0.5, NULL,
	  "with patience and no validation part given: the share of the training rows held out (stratified, seeded) to stop early on, the model then trained on the rest (scikit-learn's MLP validation_fraction); 0: none held out, so no early stopping without a validation part" },
	{ "n_iter_no_change", CFL_P_INT, "auto", 0, 100000, NULL,
	  "stop when the epoch's mean training loss has not fallen by tol below its best for more than this many epochs in a row, keeping the last weights (scikit-learn's MLP rule); 0: never; auto: 10 when epochs is auto and no validation early stopping runs, else 0" },
	{ "tol", CFL_P_FLOAT, "1e-4", 0, 1e6, NULL,
	  "the training-loss improvement n_iter_no_change asks for" },
	{ "monitor", CFL_P_CHOICE, "loss", 0, 0,
	  "loss|acc|auc|f1|logloss|ber|mae|mse|rmse|r2|corr",
	  "the validation score early stopping watches" },
	{ "threads", CFL_P_INT, "1", 1, 256, NULL,
	  "BLAS threads of fit and predict; above 1 the sums of a product may differ in the last bits, so the model file may depend on the count" },
};

#define N_PARAMS (sizeof(fcnn_params) / sizeof(fcnn_params[0]))

static int choice_index(const char *choices, const char *v)
{
	int i = 0;
	size_t n = strlen(v);

	for (const char *p = choices; p; i++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && strncmp(p, v, n) == 0)
			return i;
		p = bar ? bar + 1 : NULL;
	}
	return -1;
}

/* carefree-learn's default widths: wider for many inputs or many rows;
 * but many rows of few inputs (d <= AUTO_FEW_INPUTS) get AUTO_MANY_ROWS_WIDTH,
 * not 512 or 768: on the W1 set (80 000 rows, 20 inputs) 512 wide took
 * ten times the time of 128 wide and scored no better (64 and 128 wide
 * within a seed's noise of each other), and a default that cannot finish
 * in its share of a `cfl auto` budget gives auto nothing to bag. */
#define AUTO_FEW_INPUTS 64
#define AUTO_MANY_ROWS_WIDTH 128
static size_t auto_width(size_t d, size_t n)
{
	if (d > 512)
		return 1024;
	if (d > 256)
		return n >= 10000 ? 1024 : 2 * d;
	if (n >= 10000 && d <= AUTO_FEW_INPUTS)
		return AUTO_MANY_ROWS_WIDTH;
	if (n >= 100000)
		return 768;
	if (n >= 10000)
		return 512;
	return d * 2 > 64 ? d * 2 : 64;
}

/* ---- fcnn: the network ---- */

static void fcnn_free(struct fcnn *f)
{
	if (!f)
		return;
	free(f->theta);
	free(f->stats);
	free(f);
}

/* Lays out a network of widths d -> hidden[0..n_hidden) -> n_out and
 * allocates its parameters (zeroed; running variances 1). */
static struct fcnn *fcnn_alloc(size_t d, const long *hidden, size_t n_hidden,
			       size_t n_out, int batch_norm,
			       struct cfl_err *err)
{
	struct fcnn *f = cfl_calloc(1, sizeof(*f), err);
	size_t n_in = d;

	if (!f)
		return NULL;
	f->n_layers = n_hidden + 1;
	f->batch_norm = batch_norm;
	f->n_in = d;
	f->n_out = n_out;
	f->y_std = 1;
	for (size_t l = 0; l < f->n_layers; l++) {
		struct layer *ly = &f->layer[l];

		ly->n_in = n_in;
		ly->n_out = l < n_hidden ? (size_t)hidden[l] : n_out;
		ly->hidden = l < n_hidden;
		ly->w = f->n_theta;
		f->n_theta += ly->n_in * ly->n_out;
		ly->b = f->n_theta;
		f->n_theta += ly->n_out;
		if (ly->hidden && batch_norm) {
			ly->gamma = f->n_theta;
			ly->beta = f->n_theta + ly->n_out;
			f->n_theta += 2 * ly->n_out;
			ly->mean = f->n_stats;
			ly->var = f->n_stats + ly->n_out;
			f->n_stats += 2 * ly->n_out;
		}
		n_in = ly->n_out;
	}
	f->theta = cfl_calloc(f->n_theta, sizeof(float), err);
	f->stats = cfl_calloc(f->n_stats ? f->n_stats : 1, sizeof(float), err);
	if (!f->theta || !f->stats) {
		fcnn_free(f);
		return NULL;
	}
	for (size_t l = 0; l + 1 < f->n_layers; l++)
		for (size_t j = 0; batch_norm && j < f->layer[l].n_out; j++)
			f->stats[f->layer[l].var + j] = 1;
	return f;
}

/* ---- fcnn: PyTorch's random stream ----
 * Initialisation and shuffling draw from the stream torch.manual_seed(seed)
 * starts on the CPU: MT19937 seeded with the low 32 bits of the seed,
 * uniform_() floats from the low 24 bits of one draw, randperm() by the
 * swaps of torch 1.13.  So the same seed starts from the same weights and
 * visits the rows in the same order as the PyTorch script of W1, and the
 * two agree run for run, not only on average over seeds. */

struct mt {
	uint32_t s[624];
	size_t i;
};

static void mt_seed(struct mt *m, uint64_t seed)
{
	m->s[0] = (uint32_t)seed;
	for (uint32_t j = 1; j < 624; j++)
		m->s[j] = 1812433253u * (m->s[j - 1] ^ (m->s[j - 1] >> 30)) + j;
	m->i = 624;
}

static uint32_t mt_next(struct mt *m)
{
	uint32_t y;

	if (m->i >= 624) {
		/* the twist, in place, in three parts without an index
		 * modulo 624, so the first two vectorise */
		size_t k = 0;

		for (; k < 624 - 397; k++) {
			y = (m->s[k] & 0x80000000u) | (m->s[k + 1] & 0x7fffffffu);
			m->s[k] = m->s[k + 397] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
		}
		for (; k < 623; k++) {
			y = (m->s[k] & 0x80000000u) | (m->s[k + 1] & 0x7fffffffu);
			m->s[k] = m->s[k + 397 - 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
		}
		y = (m->s[623] & 0x80000000u) | (m->s[0] & 0x7fffffffu);
		m->s[623] = m->s[396] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
		m->i = 0;
	}
	y = m->s[m->i++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	return y ^ (y >> 18);
}

/* torch's tensor.uniform_(-bound, bound) on float32, one value. */
static float mt_uniform(struct mt *m, double bound)
{
	float from = (float)-bound, to = (float)bound;
	double x = (double)(mt_next(m) & 0xffffffu) * 0x1.0p-24;

	return (float)(x * (double)(to - from) + (double)from);
}

/* torch.randperm(n): idx becomes a fresh permutation of 0..n-1. */
static void mt_randperm(struct mt *m, size_t *idx, size_t n)
{
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	for (size_t i = 0; i + 1 < n; i++) {
		size_t z = i + (size_t)(mt_next(m) % (uint32_t)(n - i)), t = idx[i];

		idx[i] = idx[z];
		idx[z] = t;
	}
}

/* PyTorch's nn.Linear initialisation, layer by layer, weights then biases:
 * kaiming_uniform_(a = sqrt(5)) for weights, that is uniform in
 * +-1/sqrt(fan_in) (the bound computed as PyTorch does, so it rounds the
 * same), and uniform in +-1/sqrt(fan_in) for biases; batch norm starts as
 * the identity (scale 1, shift 0).  Leaves rng where training goes on. */
static void fcnn_init(struct fcnn *f, struct mt *rng)
{
	for (size_t l = 0; l < f->n_layers; l++) {
		const struct layer *ly = &f->layer[l];
		double a = sqrt(5.0), gain = sqrt(2.0 / (1 + a * a));
		double wbound = sqrt(3.0) * (gain / sqrt((double)ly->n_in));
		double bbound = ly->n_in ? 1 / sqrt((double)ly->n_in) : 0;

		for (size_t i = 0; i < ly->n_in * ly->n_out; i++)
			f->theta[ly->w + i] = mt_uniform(rng, wbound);
		for (size_t j = 0; j < ly->n_out; j++)
			f->theta[ly->b + j] = mt_uniform(rng, bbound);
		if (ly->hidden && f->batch_norm)
			for (size_t j = 0; j < ly->n_out; j++) {
				f->theta[ly->gamma + j] = 1;
				f->theta[ly->beta + j] = 0;
			}
	}
}

/* ---- fcnn: forward and backward ---- */

/* Buffers of one pass over up to cap rows. */
struct work {
	size_t cap;
	float *act[MAX_LAYERS + 1];	/* act[l + 1]: layer l's output (cap, n_out) */
	float *xhat[MAX_LAYERS];	/* batch norm: normalised (cap, n_out) */
	float *mask[MAX_LAYERS];	/* dropout: 0 or 1/(1-p) (cap, n_out) */
	float *mu[MAX_LAYERS];		/* batch norm: batch mean (n_out); EVAL: scale */
	float *inv_std[MAX_LAYERS];	/* batch norm: 1/sqrt(var + eps) (n_out); EVAL: shift */
	float *delta[2];		/* (cap, widest): gradients flowing back */
	float *xbatch;			/* (cap, n_in): gathered input rows */
	float *tbatch;			/* cap: their targets */
	float *grad;			/* n_theta */
	size_t n_bufs;			/* allocated so far (work_buf) */
};

/* The work buffers start at different offsets within a 4 KiB page
 * (STAGGER bytes apart, one more step each): buffers of a power-of-two
 * size, allocated one after the other, start at nearly the same offset,
 * and a loop that stores to one and loads from another at the same index
 * then finds each load's address matching the last store's low 12 bits,
 * which the CPU treats as a possible dependency (4K aliasing) and waits
 * for. */
#define STAGGER 320
#define BUF_HEAD 64

static float *work_buf(struct work *w, size_t n, size_t size,
		       struct cfl_err *err)
{
	const size_t off = BUF_HEAD + (w->n_bufs++ * STAGGER) % 4096;
	unsigned char *base;

	if (size && n > (SIZE_MAX - off) / size) {
		cfl_err_set(err, "fcnn: work buffer too large");
		return NULL;
	}
	base = cfl_calloc(1, off + n * size, err);
	if (!base)
		return NULL;
	memcpy(base + off - sizeof(base), &base, sizeof(base));
	return (float *)(base + off);
}

static void work_free(float *p)
{
	unsigned char *base;

	if (!p)
		return;
	memcpy(&base, (unsigned char *)p - sizeof(base), sizeof(base));
	free(base);
}

static void work_release(struct work *w)
{
	for (size_t l = 0; l <= MAX_LAYERS; l++)
		work_free(w->act[l]);
	for (size_t l = 0; l < MAX_LAYERS; l++) {
		work_free(w->xhat[l]);
		work_free(w->mask[l]);
		work_free(w->mu[l]);
		work_free(w->inv_std[l]);
	}
	work_free(w->delta[0]);
	work_free(w->delta[1]);
	work_free(w->xbatch);
	work_free(w->tbatch);
	work_free(w->grad);
	memset(w, 0, sizeof(*w));
}

/* train: also the buffers of a training step (gradients, batch norm,
 * dropout). */
static int work_init(struct work *w, const struct fcnn *f, size_t cap,
		     int train, int dropout, struct cfl_err *err)
{
	size_t widest = f->n_in;

	memset(w, 0, sizeof(*w));
	w->cap = cap;
	for (size_t l = 0; l < f->n_layers; l++) {
		const struct layer *ly = &f->layer[l];

		if (ly->n_out > widest)
			widest = ly->n_out;
		if (!(w->act[l + 1] = work_buf(w, cap, ly->n_out * sizeof(float), err)))
			goto fail;
		if (!ly->hidden)
			continue;
		if (f->batch_norm &&
		    (!(w->mu[l] = work_buf(w, ly->n_out, sizeof(float), err)) ||
		     !(w->inv_std[l] = work_buf(w, ly->n_out, sizeof(float), err))))
			goto fail;
		if (!train)
			continue;
		if (f->batch_norm &&
		    !(w->xhat[l] = work_buf(w, cap, ly->n_out * sizeof(float), err)))
			goto fail;
		if (dropout &&
		    !(w->mask[l] = work_buf(w, cap, ly->n_out * sizeof(float), err)))
			goto fail;
	}
	if (!(w->xbatch = work_buf(w, cap, (f->n_in ? f->n_in : 1) * sizeof(float), err)) ||
	    !(w->tbatch = work_buf(w, cap, sizeof(float), err)))
		goto fail;
	if (train &&
	    (!(w->delta[0] = work_buf(w, cap, widest * sizeof(float), err)) ||
	     !(w->delta[1] = work_buf(w, cap, widest * sizeof(float), err)) ||
	     !(w->grad = work_buf(w, f->n_theta, sizeof(float), err))))
		goto fail;
	return 0;
fail:
	work_release(w);
	return -1;
}

/* Every row of z (n, k) set to b (k): the bias the layer's product is
 * then added to.  A plain loop: GCC would make each row a memcpy call,
 * which costs more than the copy of a short row. */
NO_LIBCALLS
CLONES
static void seed_rows(float *restrict z, const float *restrict b, size_t n,
		      size_t k)
{
	for (size_t i = 0; i < n; i++, z += k)
		for (size_t j = 0; j < k; j++)
			z[j] = b[j];
}

/* Written without branches so the compiler vectorises it (a
 * data-dependent branch per element mispredicts half the time). */
CLONES
static void relu(float *restrict z, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float v = z[i];

		z[i] = v > 0.0f ? v : 0.0f;
	}
}

enum mode { EVAL, TRAIN, CHECK };	/* CHECK: TRAIN without running stats */

/* Hidden layer l forward, in place on z = act[l + 1] (n, n_out) which
 * holds x W^T + b:  [batch norm] -> ReLU -> [dropout]. */
static void hidden_forward(struct fcnn *f, struct work *w, size_t l, size_t n,
			   enum mode mode, float p_drop, struct cfl_rng *rng)
{
	const struct layer *ly = &f->layer[l];
	const size_t k = ly->n_out;
	float *z = w->act[l + 1];

	if (f->batch_norm) {
		const float *gamma = f->theta + ly->gamma;
		const float *beta = f->theta + ly->beta;
		float *rmean = f->stats + ly->mean, *rvar = f->stats + ly->var;

		if (mode == EVAL) {
			float *sc = w->mu[l], *sh = w->inv_std[l];

			/* fold the running statistics into one scale and
			 * shift per unit */
			for (size_t j = 0; j < k; j++) {
				sc[j] = gamma[j] / sqrtf(rvar[j] + BN_EPS);
				sh[j] = beta[j] - sc[j] * rmean[j];
			}
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < k; j++)
					z[i * k + j] = sc[j] * z[i * k + j] + sh[j];
		} else {
			float *mu = w->mu[l], *inv = w->inv_std[l], *xh = w->xhat[l];

			for (size_t j = 0; j < k; j++)
				mu[j] = inv[j] = 0;
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < k; j++)
					mu[j] += z[i * k + j];
			for (size_t j = 0; j < k; j++)
				mu[j] /= (float)n;
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < k; j++) {
					float c = z[i * k + j] - mu[j];

					inv[j] += c * c;	/* sum of squares for now */
				}
			if (mode == TRAIN)
				for (size_t j = 0; j < k; j++) {
					/* PyTorch keeps the unbiased variance */
					float var_u = n > 1 ? inv[j] / (float)(n - 1) : 0;

					rmean[j] = (1 - BN_MOMENTUM) * rmean[j] + BN_MOMENTUM * mu[j];
					rvar[j] = (1 - BN_MOMENTUM) * rvar[j] + BN_MOMENTUM * var_u;
				}
			for (size_t j = 0; j < k; j++)
				inv[j] = 1.0f / sqrtf(inv[j] / (float)n + BN_EPS);
			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < k; j++) {
					float x = (z[i * k + j] - mu[j]) * inv[j];

					xh[i * k + j] = x;
					z[i * k + j] = gamma[j] * x + beta[j];
				}
		}
	}
	relu(z, n * k);
	if (mode != EVAL && p_drop > 0) {
		/* two 32-bit draws per random word: keep when u >= p */
		const uint64_t thr = (uint64_t)((double)p_drop * 4294967296.0);
		const float scale = 1.0f / (1.0f - p_drop);
		float *mk = w->mask[l];
		uint64_t r = 0;

		for (size_t i = 0; i < n * k; i++) {
			uint64_t u;

			if (!(i & 1))
				r = cfl_rng_u64(rng);
			u = (i & 1) ? r >> 32 : r & 0xffffffffu;
			mk[i] = u >= thr ? scale : 0;
			z[i] *= mk[i];
		}
	}
}

/* Forward pass of x (n, n_in), n <= w->cap, leaving the output layer's
 * logits or values in act[n_layers] (n, n_out). */
static void forward(struct fcnn *f, struct work *w, const float *x, size_t n,
		    enum mode mode, float p_drop, struct cfl_rng *rng)
{
	const float *in = x;

	for (size_t l = 0; l < f->n_layers; l++) {
		const struct layer *ly = &f->layer[l];
		float *z = w->act[l + 1];

		if (ly->n_out <= NARROW) {
			narrow_nt(z, in, f->theta + ly->w, f->theta + ly->b, n,
				  ly->n_out, ly->n_in);
		} else {
			seed_rows(z, f->theta + ly->b, n, ly->n_out);
			gemm_nt_acc(n, ly->n_out, ly->n_in, in, f->theta + ly->w, z);
		}
		if (ly->hidden)
			hidden_forward(f, w, l, n, mode, p_drop, rng);
		in = z;
	}
}

/* The loss of the outputs act[n_layers] (n, n_out) against t (n: class
 * indices, or standardised targets) summed over the rows, and the gradient
 * of the mean loss over a step's rows, inv_n = 1 / their count (n, or more
 * when these are a part of them), into dz (n, n_out).  Without want_loss,
 * cross-entropy skips the log of every row (training only checks the loss
 * is finite): the value returned is then finite exactly when the loss is,
 * and otherwise meaningless. */
static double loss_grad(const struct fcnn *f, const struct work *w,
			const float *t, size_t n, float inv_n, float *dz,
			int want_loss)
{
	const float *z = w->act[f->n_layers];
	const size_t k = f->n_out;
	double loss = 0;

	if (f->loss == LOSS_CE && k == 2) {
		/* the loop below for two classes, without a branch on which
		 * logit is the larger (a coin flip per row): the smaller one's
		 * term is expf(lo - hi), the larger one's 1, in the same
		 * order, so the bits are the same (and a logit that is not
		 * finite still makes the loss so) */
		for (size_t i = 0; i < n; i++) {
			const float z0 = z[2 * i], z1 = z[2 * i + 1];
			const int top = z1 > z0;
			const float mx = top ? z1 : z0, lo = top ? z0 : z1;
			const float e = expf(lo - mx), sum = 1.0f + e;
			const float q = inv_n / sum;
			const size_t y = (size_t)t[i];
			float *gi = dz + 2 * i;

			loss += (want_loss ? log((double)sum) : (double)sum) -
				(double)(z[2 * i + y] - mx);
			gi[top] = q;
			gi[!top] = e * q;
			gi[y] -= inv_n;
		}
	} else if (f->loss == LOSS_CE) {
		for (size_t i = 0; i < n; i++) {
			const float *zi = z + i * k;
			float *gi = dz + i * k, mx = zi[0], sum = 0;
			size_t y = (size_t)t[i];

			for (size_t j = 1; j < k; j++)
				mx = zi[j] > mx ? zi[j] : mx;
			for (size_t j = 0; j < k; j++) {
				const float dj = zi[j] - mx;

				/* the largest logit's term is expf(0) = 1
				 * exactly: no call (NaN still takes expf) */
				gi[j] = dj == 0.0f ? 1.0f : expf(dj);
				sum += gi[j];
			}
			/* sum is at least 1 unless NaN, so the log is finite
			 * exactly when sum is */
			loss += (want_loss ? log((double)sum) : (double)sum) -
				(double)(zi[y] - mx);
			for (size_t j = 0; j < k; j++)
				gi[j] *= inv_n / sum;
			gi[y] -= inv_n;
		}
	} else if (f->loss == LOSS_MSE) {
		for (size_t i = 0; i < n; i++) {
			float e = z[i] - t[i];

			loss += (double)e * e;
			dz[i] = 2 * e * inv_n;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			float e = z[i] - t[i];

			loss += fabs((double)e);
			dz[i] = e > 0 ? inv_n : e < 0 ? -inv_n : 0;
		}
	}
	return loss;
}

/* Column sums of a (n, k) into out (k). */
CLONES
static void col_sums(const float *restrict a, size_t n, size_t k,
		     float *restrict out)
{
	for (size_t j = 0; j < k; j++)
		out[j] = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < k; j++)
			out[j] += a[i * k + j];
}

/* dZ = dH * dropout mask * ReLU'(.) in place on dz (n, k): the layer's
 * output h is positive exactly where both let the gradient through.  gb
 * (k), when not NULL, gets the column sums of the result (rows added in
 * order, as col_sums does) in the same pass. */
CLONES
static void relu_back(float *restrict dz, const float *restrict h,
		      const float *restrict mask, size_t n, size_t k,
		      float *restrict gb)
{
	for (size_t j = 0; gb && j < k; j++)
		gb[j] = 0;
	/* each variant one loop, each element stored once */
	for (size_t i = 0; i < n; i++, dz += k, h += k) {
		if (mask && gb) {
			for (size_t j = 0; j < k; j++) {
				float v = h[j] > 0.0f ? dz[j] * mask[j] : 0.0f;

				dz[j] = v;
				gb[j] += v;
			}
		} else if (mask) {
			for (size_t j = 0; j < k; j++)
				dz[j] = h[j] > 0.0f ? dz[j] * mask[j] : 0.0f;
		} else if (gb) {
			for (size_t j = 0; j < k; j++) {
				float v = h[j] > 0.0f ? dz[j] : 0.0f;

				dz[j] = v;
				gb[j] += v;
			}
		} else {
			for (size_t j = 0; j < k; j++)
				dz[j] = h[j] > 0.0f ? dz[j] : 0.0f;
		}
		mask = mask ? mask + k : NULL;
	}
}

/* Hidden layer l backward, in place on dz (n, n_out): from the gradient of
 * its output (after dropout) to that of x W^T + b, filling the batch-norm
 * gradients on the way, or without batch norm the bias gradient. */
static void hidden_backward(struct fcnn *f, struct work *w, size_t l,
			    size_t n, float *dz)
{
	const struct layer *ly = &f->layer[l];
	const size_t k = ly->n_out;
	const float *gamma, *xh, *inv;
	float *dg, *db;

	relu_back(dz, w->act[l + 1], w->mask[l], n, k,
		  f->batch_norm ? NULL : w->grad + ly->b);
	if (!f->batch_norm)
		return;
	/* y = gamma xhat + beta, xhat = (z - mu) inv (all (n, k)):
	 * dgamma = sum_i dy xhat, dbeta = sum_i dy (k),
	 * dz = gamma inv (dy - (dbeta + xhat dgamma) / n) */
	gamma = f->theta + ly->gamma;
	xh = w->xhat[l];
	inv = w->inv_std[l];
	dg = w->grad + ly->gamma;
	db = w->grad + ly->beta;
	for (size_t j = 0; j < k; j++)
		dg[j] = db[j] = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < k; j++) {
			dg[j] += dz[i * k + j] * xh[i * k + j];
			db[j] += dz[i * k + j];
		}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < k; j++)
			dz[i * k + j] = gamma[j] * inv[j] *
				(dz[i * k + j] - (db[j] + xh[i * k + j] * dg[j]) / (float)n);
}

/* Linear part of layer l backward, given dZ (n, n_out) and its input X
 * (n, n_in): dW (n_out, n_in) = dZ^T X and db (n_out) = column sums of dZ
 * into w->grad (db unless bias_done: hidden_backward summed it), and when
 * dx is not NULL dX (n, n_in) = dZ W.  Returns 1 when dX has also been
 * through layer l - 1's hidden_backward (a narrow layer without batch
 * norm does that in the same pass), else 0. */
static int linear_backward(struct fcnn *f, struct work *w, size_t l,
			   size_t n, const float *dz, const float *x, float *dx,
			   int bias_done)
{
	const struct layer *ly = &f->layer[l];

	if (ly->n_out <= NARROW) {
		const int fuse = dx && !f->batch_norm;

		narrow_tn(fuse ? NULL : w->grad + ly->w,
			  bias_done ? NULL : w->grad + ly->b, dz, x, n,
			  ly->n_out, ly->n_in);
		if (dx)
			narrow_nn(dx, dz, f->theta + ly->w, n, ly->n_out, ly->n_in,
				  fuse ? x : NULL, w->mask[l - 1],
				  fuse ? w->grad + f->layer[l - 1].b : NULL,
				  w->grad + ly->w);
		return fuse;
	}
	gemm_tn(ly->n_out, ly->n_in, n, dz, x, w->grad + ly->w);
	if (!bias_done)
		col_sums(dz, n, ly->n_out, w->grad + ly->b);
	if (dx)
		gemm_nn(n, ly->n_in, ly->n_out, dz, f->theta + ly->w, dx);
	return 0;
}

/* Backward pass of a forward(TRAIN or CHECK) over x (n, n_in), given dZ
 * of the output layer in w->delta[0]; fills w->grad (n_theta). */
static void backward(struct fcnn *f, struct work *w, const float *x, size_t n)
{
	float *dz = w->delta[0], *dnext = w->delta[1], *t;
	int done = 0;	/* dz has been through its layer's hidden_backward */

	for (size_t l = f->n_layers; l-- > 0;) {
		const int hidden = f->layer[l].hidden;

		if (hidden && !done)
			hidden_backward(f, w, l, n, dz);
		/* layer 0 needs no input gradient; every layer before the
		 * last is a hidden one */
		done = linear_backward(f, w, l, n, dz, l ? w->act[l] : x,
				       l ? dnext : NULL, hidden && !f->batch_norm);
		t = dz;
		dz = dnext;
		dnext = t;
	}
}

/* ---- fcnn: optimisers (PyTorch's update rules) ---- */

struct optim_state {
	enum optim kind;
	float lr, wd, mom, b1, b2, eps, rho;
	float *m, *v;		/* n_theta each: moments / momentum buffer */
	long t;			/* steps taken */
	float step, inv_bc2;	/* Adam's bias corrections of step t */
};

/* A step begins: its number and the constants every parameter's update
 * uses, before the updates of its ranges (optim_apply). */
static void optim_begin(struct optim_state *o)
{
	o->t++;
	o->step = (float)(o->lr / (1 - pow(o->b1, (double)o->t)));
	o->inv_bc2 = (float)(1 / sqrt(1 - pow(o->b2, (double)o->t)));
}

/* g[lo..hi) += g2[lo..hi): the gradient of a step's two halves. */
CLONES
static void grad_add(float *restrict g, const float *restrict g2, size_t lo,
		     size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		g[i] += g2[i];
}

/* The update of parameters p[lo..hi) with their gradient g[lo..hi), in
 * the step optim_begin began: each parameter on its own, so ranges can be
 * updated apart (by two threads) with the same bits.  Built for AVX-512,
 * AVX2 and plain x86-64, picked at load time: the update touches every
 * parameter every step.  ISO C mode keeps the compiler from contracting
 * a * b + c, so every variant computes the same bits. */
CLONES
static void optim_apply(const struct optim_state *o, float *restrict p,
			const float *restrict g, size_t lo, size_t hi)
{
	const float lr = o->lr, wd = o->wd;
	const size_t n = hi - lo;

	p += lo;
	g += lo;
	switch (o->kind) {
	case OPT_SGD:
		for (size_t i = 0; i < n; i++)
			p[i] -= lr * (g[i] + wd * p[i]);
		break;
	case OPT_MOMENTUM:
	case OPT_NESTEROV: {
		const float mu = o->mom;
		float *buf = o->m + lo;

		for (size_t i = 0; i < n; i++) {
			float gi = g[i] + wd * p[i];

			buf[i] = o->t == 1 ? gi : mu * buf[i] + gi;
			p[i] -= lr * (o->kind == OPT_NESTEROV ? gi + mu * buf[i] : buf[i]);
		}
		break;
	}
	case OPT_RMSPROP: {
		const float rho = o->rho, eps = o->eps;
		float *v = o->v + lo;

		for (size_t i = 0; i < n; i++) {
			float gi = g[i] + wd * p[i];

			v[i] = rho * v[i] + (1 - rho) * gi * gi;
			p[i] -= lr * gi / (sqrtf(v[i]) + eps);
		}
		break;
	}
	case OPT_ADAM:
	case OPT_ADAMW: {
		const float b1 = o->b1, b2 = o->b2, eps = o->eps;
		const float step = o->step, inv_bc2 = o->inv_bc2;
		const float decay = o->kind == OPT_ADAMW ? 1 - lr * wd : 1;
		const float l2 = o->kind == OPT_ADAM ? wd : 0;
		float *restrict m = o->m + lo, *restrict v = o->v + lo;

		for (size_t i = 0; i < n; i++) {
			float gi = g[i] + l2 * p[i];

			m[i] = b1 * m[i] + (1 - b1) * gi;
			v[i] = b2 * v[i] + (1 - b2) * gi * gi;
			p[i] = p[i] * decay - step * m[i] / (sqrtf(v[i]) * inv_bc2 + eps);
		}
		break;
	}
	}
}

/* ---- fcnn: the model ---- */

/* What fit reads from the params, checked against the task. */
struct settings {
	long hidden[MAX_HIDDEN];
	size_t n_hidden;
	float dropout;
	int batch_norm;
	enum loss loss;
	struct optim_state opt;
	size_t batch_size, epochs, patience;
	int monitor;		/* -1: the loss, else a metric id */
	int epochs_auto, no_change_auto;
	size_t no_change;	/* n_iter_no_change when given */
	size_t min_epochs;	/* epochs=auto: no loss stop before these */
	double tol;
};

static int read_settings(const struct cfl_model *m, size_t d, size_t n,
			 struct settings *s, struct cfl_err *err)
{
	const char *hidden = cfl_param_str(m, "hidden");
	const char *loss = cfl_param_str(m, "loss");
	const char *monitor = cfl_param_str(m, "monitor");
	int clf = m->n_classes > 0;

	memset(s, 0, sizeof(*s));
	if (strcmp(hidden, "auto") == 0) {
		s->n_hidden = 2;
		s->hidden[0] = s->hidden[1] = (long)auto_width(d, n);
	} else {
		long k = cfl_param_intlist(m, "hidden", s->hidden, MAX_HIDDEN);

		if (k < 0)
			return cfl_err_set(err, "fcnn: hidden must be a list of widths in [1, %d], got '%s'",
					   MAX_WIDTH, hidden);
		if (k > MAX_HIDDEN)
			return cfl_err_set(err, "fcnn: hidden has %ld layers, at most %d are allowed",
					   k, MAX_HIDDEN);
		s->n_hidden = (size_t)k;
	}
	if (clf && m->n_classes < 2)
		return cfl_err_set(err, "fcnn: cannot model %d class", m->n_classes);
	if (strcmp(loss, "auto") == 0)
		s->loss = clf ? LOSS_CE : LOSS_MSE;
	else if (strcmp(loss, "ce") == 0)
		s->loss = LOSS_CE;
	else
		s->loss = strcmp(loss, "mse") == 0 ? LOSS_MSE : LOSS_MAE;
	if (clf != (s->loss == LOSS_CE))
		return cfl_err_set(err, "fcnn: loss '%s' does not apply to %s (use %s)",
				   loss, clf ? "classification" : "regression",
				   clf ? "ce" : "mse or mae");
	s->monitor = -1;
	if (strcmp(monitor, "loss") != 0) {
		const struct cfl_metric_info *mi;

		s->monitor = cfl_metric_lookup(monitor);
		mi = cfl_metric_info((enum cfl_metric_id)s->monitor);
		if (!mi || (clf ? !mi->clf : !mi->reg))
			return cfl_err_set(err, "fcnn: monitor '%s' does not apply to %s",
					   monitor, clf ? "classification" : "regression");
	}
	s->dropout = (float)cfl_param_float(m, "dropout");
	s->batch_norm = cfl_param_bool(m, "batch_norm");
	s->opt.kind = (enum optim)choice_index(fcnn_params[4].choices,
					       cfl_param_str(m, "optimizer"));
	s->opt.lr = (float)cfl_param_float(m, "lr");
	s->opt.wd = (float)cfl_param_float(m, "weight_decay");
	s->opt.mom = (float)cfl_param_float(m, "momentum");
	s->opt.b1 = (float)cfl_param_float(m, "beta1");
	s->opt.b2 = (float)cfl_param_float(m, "beta2");
	s->opt.eps = (float)cfl_param_float(m, "eps");
	s->opt.rho = (float)cfl_param_float(m, "rho");
	if (strcmp(cfl_param_str(m, "batch_size"), "auto") == 0) {
		size_t b = (n + AUTO_STEPS_PER_EPOCH - 1) / AUTO_STEPS_PER_EPOCH;

		s->batch_size = b > AUTO_BATCH ? AUTO_BATCH
			      : b < AUTO_MIN_BATCH ? AUTO_MIN_BATCH : b;
	} else {
		s->batch_size = (size_t)cfl_param_int(m, "batch_size");
	}
	if (strcmp(cfl_param_str(m, "epochs"), "auto") == 0) {
		size_t bs = s->batch_size < n ? s->batch_size : n ? n : 1;
		size_t steps = (n + bs - 1) / bs, e = AUTO_EPOCHS;

		if (steps)
			s->min_epochs = (AUTO_MIN_STEPS + steps - 1) / steps;
		if (e < s->min_epochs)
			e = s->min_epochs;
		s->epochs = e < AUTO_MAX_EPOCHS ? e : AUTO_MAX_EPOCHS;
		s->epochs_auto = 1;
	} else {
		s->epochs = (size_t)cfl_param_int(m, "epochs");
	}
	s->patience = (size_t)cfl_param_int(m, "patience");
	if (strcmp(cfl_param_str(m, "n_iter_no_change"), "auto") == 0)
		s->no_change_auto = 1;
	else
		s->no_change = (size_t)cfl_param_int(m, "n_iter_no_change");
	s->tol = cfl_param_float(m, "tol");
	return 0;
}

/* Builds and initialises the network of m for xy's shape. */
static struct fcnn *build(const struct cfl_model *m, const struct cfl_xy *xy,
			  struct settings *s, struct mt *rng, struct cfl_err *err)
{
	struct fcnn *f;

	if (read_settings(m, xy->d, xy->n, s, err))
		return NULL;
	f = fcnn_alloc(xy->d, s->hidden, s->n_hidden, cfl_model_n_out(m),
		       s->batch_norm, err);
	if (!f)
		return NULL;
	f->loss = s->loss;
	mt_seed(rng, m->seed);
	fcnn_init(f, rng);
	if (m->n_classes == 0 && xy->n) {
		double sum = 0, ss = 0;

		for (size_t i = 0; i < xy->n; i++)
			sum += xy->y[i];
		f->y_mean = sum / (double)xy->n;
		for (size_t i = 0; i < xy->n; i++)
			ss += (xy->y[i] - f->y_mean) * (xy->y[i] - f->y_mean);
		f->y_std = sqrt(ss / (double)xy->n);
		if (!(f->y_std > 1e-12) || !isfinite(f->y_std))
			f->y_std = 1;
	}
	return f;
}

/* The training targets as floats: class indices (checked) or standardised
 * values. */
static float *targets(const struct fcnn *f, const struct cfl_xy *xy,
		      struct cfl_err *err)
{
	float *t = cfl_calloc(xy->n ? xy->n : 1, sizeof(float), err);

	if (!t)
		return NULL;
	for (size_t i = 0; i < xy->n; i++) {
		double y = xy->y[i];

		if (f->loss == LOSS_CE) {
			if (!(y >= 0 && y < (double)f->n_out) || y != floor(y)) {
				free(t);
				cfl_err_set(err, "fcnn: label %g of row %zu is not a class index in [0, %zu)",
					    y, i, f->n_out);
				return NULL;
			}
			t[i] = (float)y;
		} else {
			if (!isfinite(y)) {
				free(t);
				cfl_err_set(err, "fcnn: target of row %zu is not a finite number", i);
				return NULL;
			}
			t[i] = (float)((y - f->y_mean) / f->y_std);
		}
	}
	return t;
}

/* Outputs (n, n_out) for x (n, n_in) as the model gives them: softmax
 * probabilities, or values mapped back to the target's scale. */
static void predict_rows(struct fcnn *f, struct work *w, const float *x,
			 size_t n, double *out)
{
	const size_t k = f->n_out;

	for (size_t s = 0; s < n; s += w->cap) {
		size_t nb = n - s < w->cap ? n - s : w->cap;
		const float *z;

		forward(f, w, x + s * f->n_in, nb, EVAL, 0, NULL);
		z = w->act[f->n_layers];
		for (size_t i = 0; i < nb; i++) {
			const float *zi = z + i * k;
			double *o = out + (s + i) * k;

			if (f->loss == LOSS_CE) {
				double mx = zi[0], sum = 0;

				for (size_t j = 1; j < k; j++)
					mx = zi[j] > mx ? zi[j] : mx;
				for (size_t j = 0; j < k; j++)
					sum += o[j] = exp((double)zi[j] - mx);
				for (size_t j = 0; j < k; j++)
					o[j] /= sum;
			} else {
				o[0] = (double)zi[0] * f->y_std + f->y_mean;
			}
		}
	}
}

/* The validation score, higher is better: minus the loss, or the
 * monitored metric times its sign.  NaN when it cannot be computed. */
static double valid_score(struct fcnn *f, struct work *w,
			  const struct cfl_xy *valid, int monitor, double *out)
{
	const size_t k = f->n_out;
	struct cfl_err err;
	double loss = 0, v;

	predict_rows(f, w, valid->x, valid->n, out);
	if (monitor >= 0) {
		if (cfl_metric_eval((enum cfl_metric_id)monitor, valid->y, out,
				    valid->n, (int)(f->loss == LOSS_CE ? k : 0),
				    &v, &err))
			return NAN;
		return cfl_metric_info((enum cfl_metric_id)monitor)->sign * v;
	}
	for (size_t i = 0; i < valid->n; i++) {
		if (f->loss == LOSS_CE) {
			double p = out[i * k + (size_t)valid->y[i]];

			loss -= log(p > 1e-300 ? p : 1e-300);
		} else {
			double e = (out[i] - valid->y[i]) / f->y_std;

			loss += f->loss == LOSS_MSE ? e * e : fabs(e);
		}
	}
	return -loss / (double)valid->n;
}

#define GATHER_AHEAD 16

/* Copies rows idx[0..n) of x (., d) and t into xb (n, d) and tb (n): a
 * plain loop, since a memcpy call per short row costs more than the copy
 * (GCC turns the row loop into such a call unless told not to).  The rows
 * are scattered over memory: each row GATHER_AHEAD places on is asked for
 * ahead (both ends, it may span two cache lines, and its target) so its
 * misses overlap this copy, and so are the rows next[0..n_next) of the
 * next batch, which then arrive while this batch's products run. */
NO_LIBCALLS
CLONES
static void gather(float *restrict xb, float *restrict tb,
		   const float *restrict x, const float *restrict t,
		   const size_t *restrict idx, size_t n, size_t d,
		   const size_t *restrict next, size_t n_next)
{
	const size_t last = d ? d - 1 : 0;

	for (size_t i = 0; i < n; i++) {
		const float *row = x + idx[i] * d;

		if (i + GATHER_AHEAD < n) {
			__builtin_prefetch(x + idx[i + GATHER_AHEAD] * d);
			__builtin_prefetch(x + idx[i + GATHER_AHEAD] * d + last);
			__builtin_prefetch(t + idx[i + GATHER_AHEAD]);
		}
		if (i < n_next) {
			__builtin_prefetch(x + next[i] * d);
			__builtin_prefetch(x + next[i] * d + last);
			__builtin_prefetch(t + next[i]);
		}
		for (size_t j = 0; j < d; j++)
			xb[i * d + j] = row[j];
		tb[i] = t[idx[i]];
	}
}

/* Training rows (and their targets) up to HUGE_COPY_MAX bytes are copied
 * once into memory asked for on 2 MiB pages: gather reads 128 rows at
 * random every step, and on 4 KiB pages those rows' pages crowd the TLB
 * (W1's 80,000 rows: gather and narrow_nt took 30-40% less time on the
 * copy, for 10-20 ms of page zeroing per fit).  The cap bounds the extra
 * memory.  The same values, so the same model; without the pages (the
 * kernel may refuse) the copy is only a copy. */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_COPY_MAX ((size_t)256 << 20)

struct huge_copy {
	void *map;
	size_t len;
};

/* A copy of x (n, d) followed by t (n) on huge pages where the kernel
 * allows, or NULL (too large, or no memory: gather then reads x and t
 * where they are). */
static float *huge_rows(struct huge_copy *h, const float *x, const float *t,
			size_t n, size_t d)
{
	size_t bytes;
	unsigned char *p;
	float *c;

	h->map = NULL;
	if (n == 0 || n > HUGE_COPY_MAX / sizeof(float) ||
	    d > HUGE_COPY_MAX / sizeof(float) / n)
		return NULL;
	bytes = (n * d + n) * sizeof(float);	/* no overflow: at most 2 caps */
	if (bytes > HUGE_COPY_MAX)
		return NULL;
	h->len = (bytes + 2 * HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	p = mmap(NULL, h->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	h->map = p;
	c = (float *)(p + (HUGE_PAGE - (uintptr_t)p % HUGE_PAGE) % HUGE_PAGE);
	cfl_advise_huge(c, h->len - (size_t)((unsigned char *)c - p));
	memcpy(c, x, n * d * sizeof(float));
	memcpy(c + n * d, t, n * sizeof(float));
	return c;
}

static void huge_release(struct huge_copy *h)
{
	if (h->map)
		munmap(h->map, h->len);
	h->map = NULL;
}

/* ---- fcnn: a step in two halves, on a spare core when there is one ----
 * A step of SPLIT_ROWS rows or more (without batch norm, whose statistics
 * span the step, or dropout, whose mask is one random stream) runs as two
 * halves of rows: each half's forward, loss and backward on its own rows
 * into its own gradient, then the sum of the two gradients and the update.
 * It does so on one thread too, so the model is the same whether or not a
 * second thread took the second half: that thread runs only on a core the
 * pool has spare (cfl_spare_claim; three seeds on two processes leave one
 * idle for the third), claimed between steps and given back at the next
 * step once the pool wants it. */
#define SPLIT_ROWS 128
#define SPLIT_ALIGN 16
#define SPIN_PAUSES 4096

/* The rows of a step of n rows that go to its first half. */
static size_t split_rows(size_t n, int whole)
{
	size_t h;

	if (whole || n < SPLIT_ROWS)
		return n;
	h = (n / 2 + SPLIT_ALIGN - 1) / SPLIT_ALIGN * SPLIT_ALIGN;
	return h < n ? h : n;
}

/* One half's rows idx[0..n) gathered into w, forward, the loss's gradient
 * (inv_n: one over the step's rows) and backward into w->grad; rows
 * next[0..n_next) are asked for ahead.  Returns the loss summed over the
 * rows. */
static double half_step(struct fcnn *f, struct work *w, const float *xs,
			const float *ts, const size_t *idx, size_t n, float inv_n,
			const size_t *next, size_t n_next, float p_drop,
			struct cfl_rng *drop, int want_loss)
{
	double loss;

	gather(w->xbatch, w->tbatch, xs, ts, idx, n, f->n_in, next, n_next);
	forward(f, w, w->xbatch, n, TRAIN, p_drop, drop);
	loss = loss_grad(f, w, w->tbatch, n, inv_n, w->delta[0], want_loss);
	backward(f, w, w->xbatch, n);
	return loss;
}

/* The second thread: takes step number go's second half, then, once the
 * first half's gradient is there too, sums and updates the parameters
 * [mid, n_theta).  The main thread posts the next step only after both
 * ranges are updated.  Step numbers start at 1; STOP ends the thread. */
#define STOP ULONG_MAX

struct helper {
	pthread_t th;
	int on;
	_Atomic unsigned long go, done_a, done_b, upd_b;
	/* the step's job, written before go */
	struct fcnn *f;
	struct work *w_a, *w_b;
	struct optim_state *opt;
	const float *xs, *ts;
	const size_t *idx, *next;
	size_t n, n_next, mid;
	float inv_n;
	int want_loss;
	double loss;		/* the second half's, when done_b */
};

/* One turn of a wait for the other thread: a pause while it is a step's
 * part away, then the core for others (between epochs, say). */
static void relax(unsigned long *spins)
{
	if (++*spins < SPIN_PAUSES) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		sched_yield();
	}
}

static void spin_until(_Atomic unsigned long *v, unsigned long want)
{
	unsigned long spins = 0;

	while (atomic_load_explicit(v, memory_order_acquire) != want)
		relax(&spins);
}

/* Waits for a step number other than last; returns it. */
static unsigned long next_go(struct helper *h, unsigned long last)
{
	unsigned long spins = 0, g;

	while ((g = atomic_load_explicit(&h->go, memory_order_acquire)) == last)
		relax(&spins);
	return g;
}

static void *helper_main(void *arg)
{
	struct helper *h = arg;
	unsigned long step = 0;

	while ((step = next_go(h, step)) != STOP) {
		struct fcnn *f = h->f;

		h->loss = half_step(f, h->w_b, h->xs, h->ts, h->idx, h->n,
				    h->inv_n, h->next, h->n_next, 0, NULL,
				    h->want_loss);
		atomic_store_explicit(&h->done_b, step, memory_order_release);
		spin_until(&h->done_a, step);
		grad_add(h->w_a->grad, h->w_b->grad, h->mid, f->n_theta);
		optim_apply(h->opt, f->theta, h->w_a->grad, h->mid, f->n_theta);
		atomic_store_explicit(&h->upd_b, step, memory_order_release);
	}
	return NULL;
}

/* Starts the second thread on a claimed spare core; 0 when it runs. */
static int helper_start(struct helper *h, struct fcnn *f, struct work *w_a,
			struct work *w_b, struct optim_state *opt)
{
	h->f = f;
	h->w_a = w_a;
	h->w_b = w_b;
	h->opt = opt;
	h->mid = f->n_theta / 2 / SPLIT_ALIGN * SPLIT_ALIGN;
	atomic_store(&h->go, 0);
	atomic_store(&h->done_a, 0);
	atomic_store(&h->done_b, 0);
	atomic_store(&h->upd_b, 0);
	if (pthread_create(&h->th, NULL, helper_main, h))
		return -1;
	h->on = 1;
	return 0;
}

/* Ends the second thread (between steps) and gives its core back. */
static void helper_stop(struct helper *h)
{
	if (!h->on)
		return;
	atomic_store_explicit(&h->go, STOP, memory_order_release);
	pthread_join(h->th, NULL);
	h->on = 0;
	cfl_spare_return();
}

/* One step over rows idx[0..nb): its halves (the second on the helper
 * when it runs), the gradients summed and the parameters updated.
 * next[0..n_next) are the next step's rows.  Returns the mean loss over
 * the step's rows. */
static double train_step(struct fcnn *f, struct work *w_a, struct work *w_b,
			 struct helper *h, struct optim_state *opt,
			 const float *xs, const float *ts, const size_t *idx,
			 size_t nb, const size_t *next, size_t n_next,
			 float p_drop, struct cfl_rng *drop, int want_loss,
			 unsigned long step)
{
	const int whole = f->batch_norm || p_drop > 0;
	const size_t na = split_rows(nb, whole), n2 = nb - na;
	const float inv_n = 1.0f / (float)nb;
	const size_t na_next = n_next < na ? n_next : na;
	double la, lb = 0;

	optim_begin(opt);
	if (n2 && h->on) {
		h->idx = idx + na;
		h->n = n2;
		h->next = next + na_next;
		h->n_next = n_next - na_next;
		h->xs = xs;
		h->ts = ts;
		h->inv_n = inv_n;
		h->want_loss = want_loss;
		atomic_store_explicit(&h->go, step, memory_order_release);
		la = half_step(f, w_a, xs, ts, idx, na, inv_n, next, na_next,
			       p_drop, drop, want_loss);
		atomic_store_explicit(&h->done_a, step, memory_order_release);
		spin_until(&h->done_b, step);
		lb = h->loss;
		grad_add(w_a->grad, w_b->grad, 0, h->mid);
		optim_apply(opt, f->theta, w_a->grad, 0, h->mid);
		spin_until(&h->upd_b, step);
		return (la + lb) / (double)nb;
	}
	la = half_step(f, w_a, xs, ts, idx, na, inv_n, next, na_next, p_drop,
		       drop, want_loss);
	if (n2) {
		lb = half_step(f, w_b, xs, ts, idx + na, n2, inv_n,
			       next + na_next, n_next - na_next, p_drop, drop,
			       want_loss);
		grad_add(w_a->grad, w_b->grad, 0, f->n_theta);
		optim_apply(opt, f->theta, w_a->grad, 0, f->n_theta);
		return (la + lb) / (double)nb;
	}
	optim_apply(opt, f->theta, w_a->grad, 0, f->n_theta);
	return la / (double)nb;
}

static int fit(struct cfl_model *m, const struct cfl_xy *train,
	       const struct cfl_xy *valid, struct cfl_err *err)
{
	struct settings s;
	struct fcnn *f;
	struct work w, w2, wv;
	struct helper h = { .on = 0 };
	struct mt rng;
	struct cfl_rng drop;
	float *t = NULL, *best_theta = NULL, *best_stats = NULL;
	size_t *idx = NULL, bs, since_best = 0, no_change, stale = 0, steps = 0;
	double *vout = NULL, best = -INFINITY, best_loss = INFINITY;
	const float *xs, *ts;
	struct huge_copy hc = { NULL, 0 };
	float *hx;
	int early, scoring, cut = 0, rc = -1, halves, may_borrow;
	struct cfl_budget B;

	cfl_budget_start(&B, m);
	memset(&wv, 0, sizeof(wv));
	memset(&w2, 0, sizeof(w2));
	f = build(m, train, &s, &rng, err);
	if (!f)
		return -1;
	bs = s.batch_size < train->n ? s.batch_size : train->n;
	early = valid && valid->n && s.patience > 0;
	scoring = early || (valid && valid->n && m->report);
	no_change = !s.no_change_auto ? s.no_change
		    : s.epochs_auto && !early ? AUTO_NO_CHANGE : 0;
	if (work_init(&w, f, bs, 1, s.dropout > 0, err)) {
		fcnn_free(f);
		return -1;
	}
	s.opt.m = cfl_calloc(f->n_theta, sizeof(float), err);
	s.opt.v = cfl_calloc(f->n_theta, sizeof(float), err);
	t = targets(f, train, err);
	idx = cfl_calloc(train->n, sizeof(size_t), err);
	if (!s.opt.m || !s.opt.v || !t || !idx)
		goto out;
	/* the second half's buffers, for steps that have one */
	halves = split_rows(bs, f->batch_norm || s.dropout > 0) < bs;
	if (halves && work_init(&w2, f, bs / 2 + 1, 1, 0, err))
		goto out;
	/* with BLAS threads of its own (threads=T) the fit takes no spare
	 * core: two threads calling a threaded OpenBLAS at once is not a
	 * path OpenBLAS keeps safe */
	may_borrow = halves && cfl_param_int(m, "threads") == 1;
	if (scoring) {
		if (valid->d != f->n_in) {
			cfl_err_set(err, "fcnn: validation rows have %zu features, training rows %zu",
				    valid->d, f->n_in);
			goto out;
		}
		if (work_init(&wv, f, EVAL_ROWS, 0, 0, err))
			goto out;
		vout = cfl_calloc(valid->n, f->n_out * sizeof(double), err);
		if (!vout)
			goto out;
	}
	if (early) {
		best_theta = cfl_calloc(f->n_theta, sizeof(float), err);
		best_stats = cfl_calloc(f->n_stats ? f->n_stats : 1, sizeof(float), err);
		if (!best_theta || !best_stats)
			goto out;
	}
	hx = huge_rows(&hc, train->x, t, train->n, f->n_in);
	xs = hx ? hx : train->x;
	ts = hx ? hx + train->n * f->n_in : t;
	cfl_rng_seed(&drop, cfl_seed_derive(m->seed, "fcnn.dropout", 0));
	f->best_epoch = s.epochs;
	cfl_budget_units(&B);
	for (size_t e = 0; e < s.epochs; e++) {
		double loss_check = 0;	/* finite exactly when every step's loss is */

		mt_randperm(&rng, idx, train->n);
		for (size_t b0 = 0; b0 < train->n; b0 += bs) {
			size_t nb = train->n - b0 < bs ? train->n - b0 : bs;
			size_t after = train->n - b0 - nb;

			/* the budget's unit is a step: on many rows one epoch
			 * may not fit (the last epoch is then a part of one) */
			if (cfl_budget_over(&B, steps)) {
				cut = 1;
				if (b0 == 0)
					goto trained;
				break;
			}
			steps++;
			/* a core the pool has spare is taken, and given back
			 * when it wants it, between steps */
			if (h.on && cfl_spare_wanted())
				helper_stop(&h);
			else if (may_borrow && !h.on && cfl_spare_claim() &&
				 helper_start(&h, f, &w, &w2, &s.opt))
				cfl_spare_return();
			f->helper_steps += h.on;
			loss_check += train_step(f, &w, &w2, &h, &s.opt, xs, ts,
						 idx + b0, nb, idx + b0 + nb,
						 after < bs ? after : bs,
						 s.dropout, &drop, no_change > 0,
						 (unsigned long)steps);
		}
		f->epochs_run = e + 1;
		if (!isfinite(loss_check)) {
			cfl_err_set(err, "fcnn: training diverged (the loss is not finite in epoch %zu); try a smaller lr",
				    e + 1);
			goto out;
		}
		if (cut)	/* a part of an epoch: no score, no stop rule */
			break;
		if (no_change) {
			/* scikit-learn's MLP: the mean loss over the epoch's
			 * rows, compared with the best one less tol */
			double l = loss_check / (double)train->n;

			stale = l > best_loss - s.tol ? stale + 1 : 0;
			if (l < best_loss)
				best_loss = l;
			if (stale > no_change && e + 1 >= s.min_epochs)
				break;
		}
		if (scoring) {
			double sc = valid_score(f, &wv, valid, s.monitor, vout);

			if (m->report && m->report(m->report_ctx, e + 1, sc)) {
				cfl_err_set(err, "pruned at step %zu", e + 1);
				goto out;
			}
			if (!early)
				continue;
			if (sc > best) {
				best = sc;
				since_best = 0;
				f->best_epoch = e + 1;
				memcpy(best_theta, f->theta, f->n_theta * sizeof(float));
				memcpy(best_stats, f->stats, f->n_stats * sizeof(float));
			} else if (++since_best >= s.patience) {
				break;
			}
		}
	}
trained:
	if (early && f->best_epoch != f->epochs_run) {
		/* keep the weights of the best epoch */
		memcpy(f->theta, best_theta, f->n_theta * sizeof(float));
		memcpy(f->stats, best_stats, f->n_stats * sizeof(float));
	}
	if (!early)
		f->best_epoch = f->epochs_run;
	m->n_iter_kept = early ? f->best_epoch : cut ? f->epochs_run : 0;
	m->budget_cut = cut;
	m->state = f;
	f = NULL;
	rc = 0;
out:
	helper_stop(&h);
	huge_release(&hc);
	work_release(&w);
	work_release(&w2);
	work_release(&wv);
	free(s.opt.m);
	free(s.opt.v);
	free(t);
	free(idx);
	free(vout);
	free(best_theta);
	free(best_stats);
	fcnn_free(f);
	return rc;
}

/* OpenBLAS's thread count set to the model's threads parameter; returns
 * the count to restore (cfl_model_set_threads again).  Through
 * cfl_model_set_threads, which does nothing when the count is already
 * so: in a trial's forked process OpenBLAS's fork handler has shut its
 * thread pool down, and openblas_set_num_threads would start every thread
 * of its start-up count again, each spinning on sched_yield a while, beside
 * the other slots' trials (two per fcnn fit and predict). */
static int blas_threads_enter(const struct cfl_model *m)
{
	int old = openblas_get_num_threads();

	cfl_model_set_threads((int)cfl_param_int(m, "threads"));
	return old;
}

static int fcnn_fit(struct cfl_model *m, const struct cfl_xy *train,
		    const struct cfl_xy *valid, struct cfl_err *err)
{
	int old = blas_threads_enter(m), rc = fit(m, train, valid, err);

	cfl_model_set_threads(old);
	return rc;
}

static int fcnn_predict(const struct cfl_model *m, const float *x, size_t n,
			double *out, struct cfl_err *err)
{
	struct fcnn *f = m->state;
	struct work w;
	int old;

	if (!n)
		return 0;
	if (work_init(&w, f, n < EVAL_ROWS ? n : EVAL_ROWS, 0, 0, err))
		return -1;
	old = blas_threads_enter(m);
	predict_rows(f, &w, x, n, out);
	cfl_model_set_threads(old);
	work_release(&w);
	return 0;
}

/* ---- fcnn: save and load ---- */

static int fcnn_save(const struct cfl_model *m, struct cfl_buf *out,
		     struct cfl_err *err)
{
	const struct fcnn *f = m->state;
	static const char *loss_names[] = { "ce", "mse", "mae" };

	if (cfl_buf_printf(out, "fcnn %zu %d %s\ntarget", f->n_layers,
			   f->batch_norm, loss_names[f->loss]) ||
	    cfl_buf_doubles(out, (double[]){ f->y_mean, f->y_std }, 2))
		goto oom;
	for (size_t l = 0; l < f->n_layers; l++) {
		const struct layer *ly = &f->layer[l];

		if (cfl_buf_printf(out, "\nlayer %zu %zu\nweights", ly->n_in,
				   ly->n_out) ||
		    cfl_buf_floats(out, f->theta + ly->w, ly->n_in * ly->n_out) ||
		    cfl_buf_puts(out, "\nbiases") ||
		    cfl_buf_floats(out, f->theta + ly->b, ly->n_out))
			goto oom;
		if (ly->hidden && f->batch_norm &&
		    (cfl_buf_puts(out, "\nbatch_norm") ||
		     cfl_buf_floats(out, f->theta + ly->gamma, ly->n_out) ||
		     cfl_buf_floats(out, f->theta + ly->beta, ly->n_out) ||
		     cfl_buf_floats(out, f->stats + ly->mean, ly->n_out) ||
		     cfl_buf_floats(out, f->stats + ly->var, ly->n_out)))
			goto oom;
	}
	return 0;
oom:
	return cfl_err_set(err, "out of memory");
}

static int fcnn_load(struct cfl_model *m, struct cfl_reader *in,
		     struct cfl_err *err)
{
	struct fcnn *f = NULL;
	char loss[16];
	size_t n_layers, n_in = m->n_features;
	long hidden[MAX_HIDDEN], bn;
	double yt[2];
	struct cfl_reader probe;

	if (cfl_reader_expect(in, "fcnn", err) ||
	    cfl_reader_size(in, MAX_LAYERS, &n_layers, err) ||
	    cfl_reader_int(in, 0, 1, &bn, err) ||
	    cfl_reader_word(in, loss, sizeof(loss), err) ||
	    cfl_reader_expect(in, "target", err) ||
	    cfl_reader_doubles(in, yt, 2, err))
		return -1;
	if (n_layers < 1)
		return cfl_reader_fail(in, err, "fcnn has no layers");
	if (choice_index("ce|mse|mae", loss) < 0)
		return cfl_reader_fail(in, err, "unknown fcnn loss '%s'", loss);
	if ((strcmp(loss, "ce") == 0) != (m->n_classes > 0))
		return cfl_reader_fail(in, err, "fcnn loss '%s' does not fit the model's task", loss);
	if (!isfinite(yt[0]) || !(yt[1] > 0) || !isfinite(yt[1]))
		return cfl_reader_fail(in, err, "bad fcnn target scale");
	/* read the layer shapes first (a copy of the reader skips the
	 * numbers), so nothing is allocated for a shape the file cannot fill */
	probe = *in;
	for (size_t l = 0; l < n_layers; l++) {
		size_t a, b, n_num;
		char word[64];

		if (cfl_reader_expect(&probe, "layer", err) ||
		    cfl_reader_size(&probe, MAX_WIDTH, &a, err) ||
		    cfl_reader_size(&probe, MAX_WIDTH, &b, err))
			return -1;
		if (a != n_in)
			return cfl_reader_fail(&probe, err, "fcnn layer %zu has %zu inputs, expected %zu",
					       l + 1, a, n_in);
		if (l + 1 == n_layers && b != cfl_model_n_out(m))
			return cfl_reader_fail(&probe, err, "fcnn output layer has %zu outputs, expected %zu",
					       b, cfl_model_n_out(m));
		if (l + 1 < n_layers)
			hidden[l] = (long)b;
		n_num = a * b + b + (l + 1 < n_layers && bn ? 4 * b : 0);
		/* each number takes two bytes at least (one, the last) */
		if (n_num > (probe.len - probe.pos + 1) / 2)
			return cfl_reader_fail(&probe, err, "fcnn state is truncated");
		for (size_t i = 0; i < n_num + 2 + (l + 1 < n_layers && bn); i++)
			if (cfl_reader_word(&probe, word, sizeof(word), err))
				return cfl_reader_fail(&probe, err, "fcnn state is truncated");
		n_in = b;
	}
	f = fcnn_alloc(m->n_features, hidden, n_layers - 1, cfl_model_n_out(m),
		       (int)bn, err);
	if (!f)
		return -1;
	f->loss = (enum loss)choice_index("ce|mse|mae", loss);
	f->y_mean = yt[0];
	f->y_std = yt[1];
	for (size_t l = 0; l < n_layers; l++) {
		const struct layer *ly = &f->layer[l];
		size_t a, b;

		if (cfl_reader_expect(in, "layer", err) ||
		    cfl_reader_size(in, MAX_WIDTH, &a, err) ||
		    cfl_reader_size(in, MAX_WIDTH, &b, err) ||
		    cfl_reader_expect(in, "weights", err) ||
		    cfl_reader_floats(in, f->theta + ly->w, a * b, err) ||
		    cfl_reader_expect(in, "biases", err) ||
		    cfl_reader_floats(in, f->theta + ly->b, b, err))
			goto fail;
		if (ly->hidden && bn &&
		    (cfl_reader_expect(in, "batch_norm", err) ||
		     cfl_reader_floats(in, f->theta + ly->gamma, b, err) ||
		     cfl_reader_floats(in, f->theta + ly->beta, b, err) ||
		     cfl_reader_floats(in, f->stats + ly->mean, b, err) ||
		     cfl_reader_floats(in, f->stats + ly->var, b, err)))
			goto fail;
		for (size_t j = 0; ly->hidden && bn && j < b; j++)
			if (!(f->stats[ly->var + j] >= 0)) {
				cfl_reader_fail(in, err, "fcnn batch-norm variance is negative");
				goto fail;
			}
	}
	f->epochs_run = f->best_epoch = 0;
	m->state = f;
	return 0;
fail:
	fcnn_free(f);
	return -1;
}

static void fcnn_release(struct cfl_model *m)
{
	fcnn_free(m->state);
	m->state = NULL;
}

const struct cfl_model_ops cfl_fcnn_ops = {
	.name = "fcnn",
	.summary = "fully connected network (ReLU, optional dropout and batch norm) on OpenBLAS",
	.params = fcnn_params,
	.n_params = N_PARAMS,
	.fit = fcnn_fit,
	.early_stop = "patience",
	.predict = fcnn_predict,
	.save = fcnn_save,
	.load = fcnn_load,
	.release = fcnn_release,
};

/* ---- fcnn: hooks for tests (include/cfl/fcnn.h) ---- */

int cfl_fcnn_build(struct cfl_model *m, const struct cfl_xy *xy,
		   struct cfl_err *err)
{
	struct settings s;
	struct fcnn *f;
	struct mt rng;

	if (m->state && m->ops->release)
		m->ops->release(m);
	m->state = NULL;
	m->n_features = xy->d;
	m->n_classes = xy->n_classes;
	f = build(m, xy, &s, &rng, err);
	if (!f)
		return -1;
	m->state = f;
	return 0;
}

float *cfl_fcnn_theta(struct cfl_model *m, size_t *n)
{
	struct fcnn *f = m->ops == &cfl_fcnn_ops ? m->state : NULL;

	*n = f ? f->n_theta : 0;
	return f ? f->theta : NULL;
}

double cfl_fcnn_loss_grad(struct cfl_model *m, const struct cfl_xy *xy,
			  uint64_t drop_seed, float *grad)
{
	struct fcnn *f = m->ops == &cfl_fcnn_ops ? m->state : NULL;
	struct cfl_err err;
	struct cfl_rng rng;
	struct work w;
	float *t;
	double loss;

	if (!f || !xy->n)
		return NAN;
	t = targets(f, xy, &err);
	if (!t || work_init(&w, f, xy->n, 1,
			    cfl_param_float(m, "dropout") > 0, &err)) {
		free(t);
		return NAN;
	}
	cfl_rng_seed(&rng, drop_seed);
	forward(f, &w, xy->x, xy->n, CHECK, (float)cfl_param_float(m, "dropout"),
		&rng);
	loss = loss_grad(f, &w, t, xy->n, 1.0f / (float)xy->n, w.delta[0], 1) /
	       (double)xy->n;
	if (grad) {
		backward(f, &w, xy->x, xy->n);
		memcpy(grad, w.grad, f->n_theta * sizeof(float));
	}
	work_release(&w);
	free(t);
	return loss;
}

size_t cfl_fcnn_helper_steps(const struct cfl_model *m)
{
	const struct fcnn *f = m->ops == &cfl_fcnn_ops ? m->state : NULL;

	return f ? f->helper_steps : 0;
}

int cfl_fcnn_epochs(const struct cfl_model *m, size_t *n_run, size_t *best)
{
	const struct fcnn *f = m->ops == &cfl_fcnn_ops ? m->state : NULL;

	if (!f)
		return -1;
	*n_run = f->epochs_run;
	*best = f->best_epoch;
	return 0;
}
