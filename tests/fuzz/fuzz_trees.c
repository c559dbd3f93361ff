/*
 * Fuzz target for tree model files (tree, forest, gbdt): parse arbitrary
 * bytes as a model file and, when that works, predict a few rows (NaN
 * included, so default directions are walked).  Any outcome is fine except
 * a crash, a hang, a leak or undefined behaviour.  `make fuzz FUZZ=trees`
 * fuzzes; `make test` replays tests/fuzz/corpus/trees/.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfl_encoder enc;
	struct cfl_err err;
	struct cfl_model *m;

	if (size > 1 << 18)
		return 0;
	m = cfl_model_parse("fuzz.cfl", (const char *)data, size, &enc, &err);
	if (!m)
		return 0;
	if (m->n_features <= 4096) {
		size_t d = m->n_features, k = cfl_model_n_out(m);
		float *x = calloc(3 * (d ? d : 1), sizeof(float));
		double *out = calloc(3 * k, sizeof(double));

		if (x && out) {
			for (size_t j = 0; j < d; j++) {
				x[j] = (float)j - 1;
				x[d + j] = NAN;
				x[2 * d + j] = 1e30f;
			}
			cfl_model_predict(m, x, 3, out, &err);
		}
		free(x);
		free(out);
	}
	cfl_model_free(m);
	cfl_encoder_release(&enc);
	return 0;
}
