/*
 * The store's cost per trial, for tests/bench/bench_store.sh: N trials of
 * one run go through their whole life in the database (ensure, lease,
 * result with metrics on valid and test and the predictions of a 30-row,
 * 3-class test part), one transaction each, as `cfl repeat` commits them.
 * Prints "lifecycle_us result_us" per trial.  Not a test: timing only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/store.h"

int main(int argc, char **argv)
{
	static double pred[30 * 3];
	struct cfl_metric_value m[2] = { { "acc", 0 }, { "auc", 0 } };
	struct cfl_run_info info = { 0 };
	struct cfl_trial_result res;
	struct cfl_trial_state ts;
	struct cfl_store *st;
	struct cfl_err err;
	double t0, t_result = 0;
	int64_t run, cand;
	long n;

	if (argc != 3 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: store_bench DB N\n");
		return 2;
	}
	if (!(st = cfl_store_open(argv[1], CFL_STORE_CREATE, &err)))
		goto fail;
	info.name = "bench";
	info.dataset = "datasets/iris.csv";
	if (cfl_store_run_create(st, &info, &run, &err) ||
	    cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &cand, NULL,
					   &err))
		goto fail;
	for (int i = 0; i < 90; i++)
		pred[i] = i / 90.0;
	memset(&res, 0, sizeof(res));
	res.split[CFL_SPLIT_TEST].n_metrics = 2;
	res.split[CFL_SPLIT_TEST].metrics = m;
	res.split[CFL_SPLIT_TEST].n = 30;
	res.split[CFL_SPLIT_TEST].n_out = 3;
	res.split[CFL_SPLIT_TEST].pred = pred;
	res.split[CFL_SPLIT_VALID] = res.split[CFL_SPLIT_TEST];
	t0 = cfl_now();
	for (long i = 0; i < n; i++) {
		double t;

		m[0].value = 0.9 + (double)(i % 7) / 100;
		m[1].value = 0.95 + (double)(i % 3) / 100;
		if (cfl_store_trial_ensure(st, run, cand, (int)i, -1, (uint64_t)i,
					   &ts, &err) ||
		    cfl_store_trial_leased(st, ts.id, 1, "local:1", &err))
			goto fail;
		t = cfl_now();
		if (cfl_store_trial_done(st, ts.id, 1, &res, &err))
			goto fail;
		t_result += cfl_now() - t;
	}
	printf("%.1f %.1f\n", (cfl_now() - t0) / n * 1e6, t_result / n * 1e6);
	cfl_store_close(st);
	return 0;
fail:
	fprintf(stderr, "store_bench: %s\n", err.msg);
	cfl_store_close(st);
	return 1;
}
