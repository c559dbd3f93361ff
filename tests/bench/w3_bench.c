/*
 * W3 driver for tests/bench/bench_w3.sh: fits a tree model on a raw CSV
 * train file (every column a number, the target last, as the peers read
 * it) and scores it on the test file.  Prints one line per repeat r (seed
 * r): "fit_seconds metric1 metric2" (acc auc, or rmse r2).  Only the fit
 * call is timed; seed=N (first seed) may come among the params.  Not a
 * test: timing only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/metrics.h"
#include "cfl/model.h"

/* Class names sorted as scikit-learn's LabelEncoder sorts them. */
static char *classes[256];
static int n_cls;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int class_of(const char *s, int add)
{
	for (int c = 0; c < n_cls; c++)
		if (strcmp(classes[c], s) == 0)
			return c;
	if (!add || n_cls == 256)
		return -1;
	classes[n_cls] = strdup(s);
	return n_cls++;
}

static int load(const char *path, int clf, struct cfl_xy *xy, struct cfl_err *err)
{
	struct cfl_csv csv;
	char cell[CFL_CSV_CELL_BUF];
	size_t d;
	int fit = n_cls == 0;

	if (cfl_csv_read(&csv, path, err))
		return -1;
	d = csv.n_cols - 1;
	xy->n = csv.n_rows;
	xy->d = d;
	xy->x = malloc(xy->n * d * sizeof(float) + 1);
	xy->y = malloc(xy->n * sizeof(double) + 1);
	if (clf && fit) {
		for (size_t i = 0; i < xy->n; i++)
			class_of(cfl_csv_cell(&csv, i, d, cell), 1);
		qsort(classes, (size_t)n_cls, sizeof(char *), cmp_str);
		/* numeric labels sort as numbers */
		for (int c = 1; c < n_cls; c++)
			if (cfl_csv_number(classes[c]) < cfl_csv_number(classes[c - 1])) {
				for (int a = 0; a < n_cls; a++)
					for (int b = a + 1; b < n_cls; b++)
						if (cfl_csv_number(classes[b]) < cfl_csv_number(classes[a])) {
							char *t = classes[a];
							classes[a] = classes[b];
							classes[b] = t;
						}
				break;
			}
	}
	xy->n_classes = clf ? n_cls : 0;
	for (size_t i = 0; i < xy->n; i++) {
		for (size_t j = 0; j < d; j++)
			xy->x[i * d + j] = (float)csv.num[i * csv.n_cols + j];
		xy->y[i] = clf ? class_of(cfl_csv_cell(&csv, i, d, cell), 0) :
				 csv.num[i * csv.n_cols + d];
	}
	cfl_csv_release(&csv);
	return 0;
}

int main(int argc, char **argv)
{
	struct cfl_xy tr, te;
	struct cfl_err err;
	struct cfl_params p;
	const struct cfl_model_ops *ops;
	int clf, reps;
	uint64_t seed0 = 0;

	if (argc < 6) {
		fprintf(stderr, "usage: w3_bench MODEL clf|reg TRAIN TEST REPEATS [seed=N] [k=v...]\n");
		return 2;
	}
	ops = cfl_model_find(argv[1]);
	clf = strcmp(argv[2], "clf") == 0;
	reps = atoi(argv[5]);
	cfl_params_init(&p);
	for (int i = 6; i < argc; i++) {
		if (strncmp(argv[i], "seed=", 5) == 0)
			seed0 = strtoull(argv[i] + 5, NULL, 10);
		else if (cfl_params_set_arg(&p, argv[i], &err))
			goto fail;
	}
	if (!ops || load(argv[3], clf, &tr, &err) || load(argv[4], clf, &te, &err))
		goto fail;
	for (int r = 0; r < reps; r++) {
		struct cfl_model *m = cfl_model_new(ops, &p, seed0 + (uint64_t)r, &err);
		double t0, t1, a, b, *out;

		if (!m)
			goto fail;
		t0 = cfl_now();
		if (cfl_model_fit(m, &tr, NULL, &err))
			goto fail;
		t1 = cfl_now();
		out = malloc(te.n * cfl_model_n_out(m) * sizeof(double));
		if (cfl_model_predict(m, te.x, te.n, out, &err) ||
		    cfl_metric_eval(clf ? CFL_M_ACC : CFL_M_RMSE, te.y, out, te.n, te.n_classes, &a, &err) ||
		    cfl_metric_eval(clf ? CFL_M_AUC : CFL_M_R2, te.y, out, te.n, te.n_classes, &b, &err))
			goto fail;
		printf("%.6f %.6f %.6f\n", t1 - t0, a, b);
		fflush(stdout);
		free(out);
		cfl_model_free(m);
	}
	return 0;
fail:
	fprintf(stderr, "w3_bench: %s\n", err.msg);
	return 1;
}
