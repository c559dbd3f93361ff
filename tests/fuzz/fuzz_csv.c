/*
 * Fuzz target for the CSV reader: parse arbitrary bytes, infer a schema,
 * and when that works split, fit an encoder, encode, and save / load the
 * encoder.  Any outcome is fine except a crash, a leak or undefined
 * behaviour.  Run for real with `make fuzz FUZZ=csv`; `make test` replays
 * the corpus in tests/fuzz/corpus/csv/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_schema_opts o = { 0 };
	struct cfl_err err;
	struct cfl_split split;
	struct cfl_encoder enc, back;
	struct cfl_xy xy;
	struct cfl_buf b;
	struct cfl_reader r;
	double *y;

	if (size > 1 << 16)
		return 0;
	if (cfl_csv_parse(&csv, "fuzz.csv", (const char *)data, size, &err))
		return 0;
	/* the first byte picks options, so the fuzzer reaches them too */
	if (size && (data[0] & 1))
		o.task = CFL_TASK_CLF;
	if (size && (data[0] & 2))
		o.drop_re = "^a";
	if (cfl_schema_infer(&s, &csv, &o, &err)) {
		cfl_csv_release(&csv);
		return 0;
	}
	y = malloc(csv.n_rows * sizeof(double));
	if (y && cfl_schema_labels(&s, &csv, y, &err) == 0 &&
	    cfl_split_holdout(&split, y, csv.n_rows,
			      s.task == CFL_TASK_CLF ? (int)s.n_classes : 0,
			      0.2, 0.1, 1, &err) == 0) {
		if (cfl_encoder_fit(&enc, &s, &csv, split.train, split.n_train,
				    &err) == 0) {
			cfl_xy_init(&xy);
			cfl_encoder_apply(&enc, &csv, 1, &xy, &err);
			cfl_xy_release(&xy);
			cfl_buf_init(&b);
			if (cfl_encoder_save(&enc, &b) == 0) {
				cfl_reader_init(&r, "enc", b.data, b.len);
				if (cfl_encoder_load(&back, &r, &err) == 0)
					cfl_encoder_release(&back);
			}
			cfl_buf_release(&b);
			cfl_encoder_release(&enc);
		}
		cfl_split_release(&split);
	}
	free(y);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
	return 0;
}
