/*
 * Test helper: writes a database with two finished runs made through the
 * store API, with fixed values, so `cfl report` can be tested against
 * golden files without training anything (tests/cli/test_report.sh).
 *
 *   fixture_store DB
 *
 * "fix-tune": a tune run of fcnn, 4 candidates (lr, optimizer) x 2 repeats
 * scored on valid (acc, auc), candidate scores set, one failed trial.
 * "fix-repeat" (created last, so the latest): tree and linear x 3 repeats
 * with acc and auc on valid and test, one failed trial, and two ensembles
 * (mean, stacking) over all repeats.  Exit 0, or 1 with the error.
 */
#include <stdio.h>
#include <string.h>

#include "cfl/store.h"

static struct cfl_err err;

#define TRY(x)                                                               \
	do {                                                                 \
		if ((x) < 0) {                                               \
			fprintf(stderr, "fixture_store: %s\n", err.msg);     \
			return 1;                                            \
		}                                                            \
	} while (0)

/* A result with acc and auc on valid and test. */
static void result(struct cfl_trial_result *res, struct cfl_metric_value v[2][2],
		   double acc_v, double auc_v, double acc_t, double auc_t)
{
	memset(res, 0, sizeof(*res));
	v[0][0] = (struct cfl_metric_value){ "acc", acc_v };
	v[0][1] = (struct cfl_metric_value){ "auc", auc_v };
	v[1][0] = (struct cfl_metric_value){ "acc", acc_t };
	v[1][1] = (struct cfl_metric_value){ "auc", auc_t };
	res->duration = 0.25;
	res->split[CFL_SPLIT_VALID].n_metrics = 2;
	res->split[CFL_SPLIT_VALID].metrics = v[0];
	res->split[CFL_SPLIT_TEST].n_metrics = 2;
	res->split[CFL_SPLIT_TEST].metrics = v[1];
}

static int tune_run(struct cfl_store *st)
{
	static const char *const lr[4] = { "0.001", "0.01", "0.1", "0.0001" };
	static const char *const opt[4] = { "adam", "sgd", "adam", "rmsprop" };
	static const double acc[4][2] = {
		{ 0.9, 0.92 }, { 0.8, 0.84 }, { 0.94, 0.94 }, { 0.6, 0.7 },
	};
	struct cfl_run_info info = { 0 };
	struct cfl_trial_result res;
	struct cfl_metric_value v[2][2];
	int64_t run;

	info.name = "fix-tune";
	info.kind = CFL_RUN_TUNE;
	info.command = "cfl tune datasets/iris.csv --model fcnn --num-search 4";
	info.config = "model=fcnn\nnum_search=4\nnum_repeat=2\nmetric=acc\n";
	info.dataset = "datasets/iris.csv";
	info.seed = 3;
	TRY(cfl_store_run_create(st, &info, &run, &err));
	for (int c = 0; c < 4; c++) {
		struct cfl_params p;
		int64_t cand;
		double mean = (acc[c][0] + acc[c][1]) / 2;
		double half = (acc[c][1] - acc[c][0]) / 2;

		cfl_params_init(&p);
		TRY(cfl_params_set(&p, "lr", lr[c], &err));
		TRY(cfl_params_set(&p, "optimizer", opt[c], &err));
		TRY(cfl_store_candidate_get_or_add(st, run, "fcnn", &p, &cand,
						   NULL, &err));
		cfl_params_release(&p);
		for (int r = 0; r < 2; r++) {
			struct cfl_trial_state ts;

			TRY(cfl_store_trial_ensure(st, run, cand, r, -1,
						   100 + c * 2 + r, &ts, &err));
			if (c == 3 && r == 1) {
				TRY(cfl_store_trial_failed(st, ts.id, 1, "exit 3",
							   CFL_TRIAL_FAILED, &err));
				continue;
			}
			result(&res, v, acc[c][r], 0.95 + 0.01 * c - 0.01 * r,
			       acc[c][r] - 0.02, 0.9);
			TRY(cfl_store_trial_done(st, ts.id, 1, &res, &err));
		}
		TRY(cfl_store_candidate_set_score(st, cand, c == 3 ? 0.6 : mean - half,
						  &err));
	}
	TRY(cfl_store_run_finish(st, run, CFL_RUN_DONE, &err));
	return 0;
}

static int repeat_run(struct cfl_store *st)
{
	static const char *const models[2] = { "tree", "linear" };
	static const double acc[2][3] = { { 0.9, 0.933333, 0.966667 },
					  { 0.966667, 0.966667, 0 } };
	static const double auc[2][3] = { { 0.925, 0.95, 0.975 },
					  { 0.995, 0.99, 0 } };
	struct cfl_run_info info = { 0 };
	struct cfl_trial_result res;
	struct cfl_metric_value v[2][2];
	struct cfl_ensemble_info ens[2] = {
		{ "mean", "mean", "weights 0.2,0.2,0.2,0.2,0.2", -1 },
		{ "stacking", "stacking", "meta linear l2=1 on valid", -1 },
	};
	int64_t run;

	info.name = "fix-repeat";
	info.kind = CFL_RUN_REPEAT;
	info.command = "cfl repeat datasets/iris.csv --models tree,linear --num-repeat 3";
	info.config = "models=tree,linear\nnum_repeat=3\nmetrics=acc,auc\n";
	info.dataset = "datasets/iris.csv";
	info.seed = 7;
	TRY(cfl_store_run_create(st, &info, &run, &err));
	for (int k = 0; k < 2; k++) {
		int64_t cand;

		TRY(cfl_store_candidate_get_or_add(st, run, models[k], NULL, &cand,
						   NULL, &err));
		for (int r = 0; r < 3; r++) {
			struct cfl_trial_state ts;

			TRY(cfl_store_trial_ensure(st, run, cand, r, -1, 10 * k + r,
						   &ts, &err));
			if (k == 1 && r == 2) {
				TRY(cfl_store_trial_failed(st, ts.id, 2, "signal SIGSEGV",
							   CFL_TRIAL_POISON, &err));
				continue;
			}
			result(&res, v, acc[k][r] - 0.05, auc[k][r] - 0.01,
			       acc[k][r], auc[k][r]);
			TRY(cfl_store_trial_done(st, ts.id, 1, &res, &err));
		}
	}
	result(&res, v, 0.95, 0.99, 0.966667, 0.9975);
	TRY(cfl_store_ensemble_add(st, run, &ens[0], &res, NULL, &err));
	result(&res, v, 0.96, 0.995, 1, 1);
	TRY(cfl_store_ensemble_add(st, run, &ens[1], &res, NULL, &err));
	TRY(cfl_store_run_finish(st, run, CFL_RUN_DONE, &err));
	return 0;
}

int main(int argc, char **argv)
{
	struct cfl_store *st;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: fixture_store DB\n");
		return 2;
	}
	st = cfl_store_open(argv[1], CFL_STORE_CREATE, &err);
	if (!st) {
		fprintf(stderr, "fixture_store: %s\n", err.msg);
		return 1;
	}
	rc = tune_run(st) || repeat_run(st);
	cfl_store_close(st);
	return rc;
}
