/*
 * baseline: the model every other one must beat.  Classification predicts
 * the training class frequencies for every row (scikit-learn's
 * DummyClassifier "prior"); regression predicts the training mean.  It also
 * serves the pool's tests, since it fits in microseconds.
 */
#include "cfl/model.h"

#include <stdlib.h>
#include <string.h>

struct baseline {
	size_t n_out;
	double *out;	/* n_out: class frequencies, or the mean */
};

static const struct cfl_param_spec baseline_params[] = {
	{ "smoothing", CFL_P_FLOAT, "0", 0, 1e6, NULL,
	  "add this count to every class before taking frequencies" },
};

static int baseline_alloc(struct cfl_model *m, struct cfl_err *err)
{
	struct baseline *b = cfl_calloc(1, sizeof(*b), err);

	if (!b)
		return -1;
	b->n_out = cfl_model_n_out(m);
	b->out = cfl_calloc(b->n_out, sizeof(double), err);
	if (!b->out) {
		free(b);
		return -1;
	}
	m->state = b;
	return 0;
}

static int baseline_fit(struct cfl_model *m, const struct cfl_xy *train,
			const struct cfl_xy *valid, struct cfl_err *err)
{
	double smooth = cfl_param_float(m, "smoothing"), total = 0;
	struct baseline *b;

	(void)valid;
	if (baseline_alloc(m, err))
		return -1;
	b = m->state;
	if (m->n_classes > 0) {
		for (size_t k = 0; k < b->n_out; k++)
			b->out[k] = smooth;
		for (size_t i = 0; i < train->n; i++) {
			long c = (long)train->y[i];

			if (c < 0 || c >= m->n_classes)
				return cfl_err_set(err, "baseline: label %ld out of range",
						   c);
			b->out[c] += 1;
		}
		for (size_t k = 0; k < b->n_out; k++)
			total += b->out[k];
		for (size_t k = 0; k < b->n_out; k++)
			b->out[k] /= total;
	} else {
		for (size_t i = 0; i < train->n; i++)
			total += train->y[i];
		b->out[0] = total / (double)train->n;
	}
	return 0;
}

static int baseline_predict(const struct cfl_model *m, const float *x,
			    size_t n, double *out, struct cfl_err *err)
{
	const struct baseline *b = m->state;

	(void)x;
	(void)err;
	for (size_t i = 0; i < n; i++)
		memcpy(out + i * b->n_out, b->out, b->n_out * sizeof(double));
	return 0;
}

static int baseline_save(const struct cfl_model *m, struct cfl_buf *out,
			 struct cfl_err *err)
{
	const struct baseline *b = m->state;

	if (cfl_buf_printf(out, "baseline %zu", b->n_out) ||
	    cfl_buf_doubles(out, b->out, b->n_out))
		return cfl_err_set(err, "out of memory");
	return 0;
}

static int baseline_load(struct cfl_model *m, struct cfl_reader *in,
			 struct cfl_err *err)
{
	struct baseline *b;
	size_t n_out;

	if (cfl_reader_expect(in, "baseline", err) ||
	    cfl_reader_size(in, 1 << 20, &n_out, err))
		return -1;
	if (n_out != cfl_model_n_out(m))
		return cfl_reader_fail(in, err, "baseline has %zu outputs, expected %zu",
				       n_out, cfl_model_n_out(m));
	if (baseline_alloc(m, err))
		return -1;
	b = m->state;
	return cfl_reader_doubles(in, b->out, b->n_out, err);
}

static void baseline_release(struct cfl_model *m)
{
	struct baseline *b = m->state;

	if (b)
		free(b->out);
	free(b);
	m->state = NULL;
}

const struct cfl_model_ops cfl_baseline_ops = {
	.name = "baseline",
	.summary = "class frequencies or the mean: the score to beat",
	.params = baseline_params,
	.n_params = sizeof(baseline_params) / sizeof(baseline_params[0]),
	.fit = baseline_fit,
	.predict = baseline_predict,
	.save = baseline_save,
	.load = baseline_load,
	.release = baseline_release,
};
