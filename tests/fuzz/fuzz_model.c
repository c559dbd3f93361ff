/*
 * Fuzz target for the model-file parser (src/models/model_file.c and every
 * model's load): parse arbitrary bytes as a model file and, when that
 * works, predict a few rows, save the state again and parse that back.  Any
 * outcome is fine except a crash, a leak, a huge allocation or undefined
 * behaviour.  Run for real with `make fuzz FUZZ=model`; `make test` replays
 * tests/fuzz/corpus/model/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfl_encoder enc;
	struct cfl_err err;
	struct cfl_model *m;
	struct cfl_buf b;
	size_t n = 3, n_out;
	float *x;
	double *out;

	if (size > 1 << 18)
		return 0;
	m = cfl_model_parse("fuzz.cfl", (const char *)data, size, &enc, &err);
	if (!m)
		return 0;
	n_out = cfl_model_n_out(m);
	/* a parsed model promises its shape: predicting must work */
	if (m->n_features <= 4096 && n_out <= 4096) {
		x = calloc(n * (m->n_features + 1), sizeof(float));
		out = calloc(n * n_out, sizeof(double));
		if (x && out) {
			for (size_t i = 0; i < n * m->n_features; i++)
				x[i] = (float)((double)(i % 7) - 3.0);
			if (cfl_model_predict(m, x, n, out, &err))
				abort();
		}
		free(x);
		free(out);
	}
	cfl_buf_init(&b);
	if (m->ops->save(m, &b, &err) == 0 && b.data) {
		struct cfl_reader r;
		struct cfl_model *back = cfl_model_new(m->ops, &m->params,
						       m->seed, &err);

		if (back) {
			back->n_features = m->n_features;
			back->n_classes = m->n_classes;
			cfl_reader_init(&r, "saved", b.data, b.len);
			/* what save wrote, load must read */
			if (m->ops->load(back, &r, &err))
				abort();
			cfl_model_free(back);
		}
	}
	cfl_buf_release(&b);
	cfl_encoder_release(&enc);
	cfl_model_free(m);
	return 0;
}
