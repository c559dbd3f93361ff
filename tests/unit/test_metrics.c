/* Unit tests of src/metrics: every metric against scikit-learn's value on
 * the fixtures of metrics_fixtures.h (to 1e-9), errors where sklearn fails,
 * and bad inputs (no rows, NaN, labels out of range) failing cleanly; the
 * one score rule (sign * mean - std) and tune's choice of the best
 * candidate. */
#include "runner.h"

#include "cfl/metrics.h"
#include "metrics_fixtures.h"

static void t_fixtures(void)
{
	size_t n_cases = sizeof(metric_fixtures) / sizeof(metric_fixtures[0]);
	int n_checked = 0;

	for (size_t c = 0; c < n_cases; c++) {
		const struct metric_fixture *f = &metric_fixtures[c];

		for (int m = 0; m < CFL_M_COUNT; m++) {
			struct cfl_err err = { "" };
			double v = -12345;
			int rc = cfl_metric_eval(m, f->y, f->out, f->n,
						 f->n_classes, &v, &err);

			if (f->defined[m]) {
				CHECK_MSG(rc == 0, "%s %s: %s", f->name,
					  cfl_metric_info(m)->name, err.msg);
				CHECK_MSG(fabs(v - f->expect[m]) <= 1e-9,
					  "%s %s: cfl %.17g, sklearn %.17g",
					  f->name, cfl_metric_info(m)->name, v,
					  f->expect[m]);
				n_checked++;
			} else {
				CHECK_MSG(rc == -1 && err.msg[0],
					  "%s %s: expected an error, got %.17g",
					  f->name, cfl_metric_info(m)->name, v);
			}
		}
	}
	CHECK(n_checked >= 90);
}

static void t_info(void)
{
	enum cfl_metric_id ids[4];
	const char *higher[] = { "acc", "auc", "f1", "r2", "corr" };
	const char *lower[] = { "logloss", "ber", "mae", "mse", "rmse" };

	for (int i = 0; i < 5; i++) {
		CHECK_INT(cfl_metric_info(cfl_metric_lookup(higher[i]))->sign, 1);
		CHECK_INT(cfl_metric_info(cfl_metric_lookup(lower[i]))->sign, -1);
	}
	for (int m = 0; m < CFL_M_COUNT; m++) {
		CHECK_INT(cfl_metric_lookup(cfl_metric_info(m)->name), m);
		CHECK(cfl_metric_info(m)->clf != cfl_metric_info(m)->reg);
		CHECK(cfl_metric_info(m)->help && cfl_metric_info(m)->help[0]);
	}
	CHECK_INT(cfl_metric_lookup("correlation"), CFL_M_CORR);
	CHECK_INT(cfl_metric_lookup("accuracy"), -1);
	CHECK_INT(cfl_metric_lookup(NULL), -1);
	CHECK(cfl_metric_info(CFL_M_COUNT) == NULL);
	CHECK(cfl_metric_info((enum cfl_metric_id)-1) == NULL);

	CHECK_INT(cfl_metric_defaults(3, ids, 4), 2);
	CHECK_INT(ids[0], CFL_M_ACC);
	CHECK_INT(ids[1], CFL_M_AUC);
	CHECK_INT(cfl_metric_defaults(0, ids, 4), 2);
	CHECK_INT(ids[0], CFL_M_MAE);
	CHECK_INT(ids[1], CFL_M_MSE);
}

static void t_parse_list(void)
{
	enum cfl_metric_id ids[CFL_M_COUNT];
	struct cfl_err err = { "" };

	CHECK_INT(cfl_metric_parse_list("acc,auc,f1,acc", 2, ids, 10, &err), 3);
	CHECK_INT(ids[2], CFL_M_F1);
	CHECK_INT(cfl_metric_parse_list("mae,correlation", 0, ids, 10, &err), 2);
	CHECK_INT(ids[1], CFL_M_CORR);
	CHECK_INT(cfl_metric_parse_list("mae,acc", -1, ids, 10, &err), 2);
	CHECK_INT(cfl_metric_parse_list("acc,bogus", 2, ids, 10, &err), -1);
	CHECK_CONTAINS(err.msg, "unknown metric 'bogus'");
	CHECK_INT(cfl_metric_parse_list("acc,mae", 2, ids, 10, &err), -1);
	CHECK_CONTAINS(err.msg, "metric 'mae' does not apply to classification");
	CHECK_INT(cfl_metric_parse_list("r2,auc", 0, ids, 10, &err), -1);
	CHECK_CONTAINS(err.msg, "'auc' does not apply to regression");
	CHECK_INT(cfl_metric_parse_list("", 0, ids, 10, &err), -1);
	CHECK_CONTAINS(err.msg, "empty metric list");
	CHECK_INT(cfl_metric_parse_list("acc,,auc", 2, ids, 10, &err), -1);
	CHECK_CONTAINS(err.msg, "empty metric name");
	CHECK_INT(cfl_metric_parse_list("a_very_long_metric_name_that_overflows", 2,
					ids, 10, &err), -1);
	CHECK_CONTAINS(err.msg, "unknown metric");
	/* cap smaller than the list: the count is still returned */
	CHECK_INT(cfl_metric_parse_list("acc,auc,f1", 2, ids, 1, &err), 3);
	CHECK_INT(ids[0], CFL_M_ACC);
}

static void t_bad_inputs(void)
{
	double y[4] = { 0, 1, 1, 0 };
	double p[8] = { .9, .1, .2, .8, .3, .7, .6, .4 };
	double yr[3] = { 1, 2, 3 }, pr[3] = { 1, 2, 3.5 };
	double v = 0;
	struct cfl_err err = { "" };

	for (int m = 0; m < CFL_M_COUNT; m++) {
		int clf = cfl_metric_info(m)->clf;

		/* no rows */
		CHECK(cfl_metric_eval(m, y, p, 0, clf ? 2 : 0, &v, &err) == -1);
		CHECK_CONTAINS(err.msg, "no rows");
		/* the wrong task */
		CHECK(cfl_metric_eval(m, y, p, 4, clf ? 0 : 2, &v, &err) == -1);
		CHECK_CONTAINS(err.msg, "does not apply");
	}
	p[3] = NAN;
	for (int m = CFL_M_ACC; m <= CFL_M_BER; m++) {
		CHECK(cfl_metric_eval(m, y, p, 4, 2, &v, &err) == -1);
		CHECK_CONTAINS(err.msg, "prediction of row 1 is not a finite number");
	}
	p[3] = .8;
	y[2] = 2;
	CHECK(cfl_metric_eval(CFL_M_ACC, y, p, 4, 2, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "label 2 of row 2 is not a class in [0, 2)");
	y[2] = 0.5;
	CHECK(cfl_metric_eval(CFL_M_AUC, y, p, 4, 2, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "label 0.5 of row 2");
	y[2] = -1;
	CHECK(cfl_metric_eval(CFL_M_F1, y, p, 4, 2, &v, &err) == -1);
	y[2] = 1;
	CHECK(cfl_metric_eval(CFL_M_ACC, y, p, 4, 1, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "cannot score 1 classes");
	CHECK(cfl_metric_eval(CFL_M_COUNT, y, p, 4, 2, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown metric id");
	CHECK(cfl_metric_eval(CFL_M_ACC, y, p, 4, 2, &v, &err) == 0);
	CHECK_NEAR(v, 1, 0);

	pr[1] = INFINITY;
	for (int m = CFL_M_MAE; m <= CFL_M_CORR; m++) {
		CHECK(cfl_metric_eval(m, yr, pr, 3, 0, &v, &err) == -1);
		CHECK_CONTAINS(err.msg, "not a finite number");
	}
	pr[1] = 2;
	yr[0] = NAN;
	CHECK(cfl_metric_eval(CFL_M_MSE, yr, pr, 3, 0, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "target of row 0 is not a finite number");
}

/* The error messages of undefined metrics say why. */
static void t_undefined_messages(void)
{
	double y1[3] = { 1, 1, 1 }, p1[6] = { .2, .8, .5, .5, .9, .1 };
	double y3[4] = { 0, 1, 0, 1 };
	double p3[12] = { .5, .3, .2, .1, .8, .1, .3, .3, .4, .2, .2, .6 };
	double yc[3] = { 2, 2, 2 }, pc[3] = { 1, 2, 3 };
	struct cfl_err err = { "" };
	double v;

	CHECK(cfl_metric_eval(CFL_M_AUC, y1, p1, 3, 2, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "auc is undefined: only class 1 occurs in y");
	CHECK(cfl_metric_eval(CFL_M_AUC, y3, p3, 4, 3, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "auc is undefined: class 2 does not occur in y");
	CHECK(cfl_metric_eval(CFL_M_CORR, yc, pc, 3, 0, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "the target is constant");
	CHECK(cfl_metric_eval(CFL_M_CORR, pc, yc, 3, 0, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "the predictions are constant");
	CHECK(cfl_metric_eval(CFL_M_R2, yc, pc, 1, 0, &v, &err) == -1);
	CHECK_CONTAINS(err.msg, "r2 is undefined with fewer than two rows");
}

/* A large AUC with ties against a direct O(n^2) pair count. */
static void t_auc_pairs(void)
{
	enum { N = 2000 };
	static double y[N], p[N * 2];
	struct cfl_rng r;
	struct cfl_err err;
	double wins = 0, n_pos = 0, v;

	cfl_rng_seed(&r, 7);
	for (size_t i = 0; i < N; i++) {
		y[i] = (double)cfl_rng_below(&r, 2);
		p[2 * i + 1] = (double)cfl_rng_below(&r, 20) / 20 + 0.1 * y[i];
		p[2 * i] = 1 - p[2 * i + 1];
		n_pos += y[i];
	}
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			if (y[i] == 1 && y[j] == 0)
				wins += p[2 * i + 1] > p[2 * j + 1] ? 1 :
					p[2 * i + 1] == p[2 * j + 1] ? 0.5 : 0;
	CHECK(cfl_metric_eval(CFL_M_AUC, y, p, N, 2, &v, &err) == 0);
	CHECK_NEAR(v, wins / (n_pos * (N - n_pos)), 1e-12);
	CHECK(v > 0.5 && v < 1);
}

/* On many rows the AUC sorts by radix (4,096 rows and more): ties,
 * negative scores, -0 beside +0 and huge magnitudes give what a pair
 * count gives, to the bit of the qsort it replaced on the same rows. */
static void t_auc_radix(void)
{
	enum { N = 6000 };
	static const double vals[] = { -1e300, -3.5, -1, -0.0, 0.0, 1e-300, 0.25, 0.5, 2, 1e300 };
	static double y[N], p[N * 2];
	struct cfl_rng r;
	struct cfl_err err;
	double wins = 0, n_pos = 0, v;

	cfl_rng_seed(&r, 11);
	for (size_t i = 0; i < N; i++) {
		y[i] = (double)cfl_rng_below(&r, 2);
		p[2 * i + 1] = vals[cfl_rng_below(&r, 7) + (y[i] ? 3 : 0)];
		p[2 * i] = 0;
		n_pos += y[i];
	}
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			if (y[i] == 1 && y[j] == 0)
				wins += p[2 * i + 1] > p[2 * j + 1] ? 1 :
					p[2 * i + 1] == p[2 * j + 1] ? 0.5 : 0;
	CHECK(cfl_metric_eval(CFL_M_AUC, y, p, N, 2, &v, &err) == 0);
	CHECK_NEAR(v, wins / (n_pos * (N - n_pos)), 1e-12);
	CHECK(v > 0.5 && v < 1);
}

/* score = sign * mean - std, std the population one; a NaN value or no
 * value makes the whole cell NaN (the tables show "nan"). */
static void t_score_rule(void)
{
	const double v[4] = { 1, 2, 3, 4 }, w[3] = { 0.5, NAN, 0.5 };
	struct cfl_metric_stats st;

	CHECK(cfl_metric_score(1, 0.9, 0.05) == 0.9 - 0.05);
	CHECK(cfl_metric_score(-1, 0.2, 0.1) == -0.2 - 0.1);
	cfl_metric_stats(v, 4, -1, &st);
	CHECK_INT(st.n, 4);
	CHECK(st.mean == 2.5);
	CHECK(st.std == sqrt(1.25));	/* divided by n, not n - 1 */
	CHECK(st.score == -2.5 - sqrt(1.25));
	cfl_metric_stats(v, 1, 1, &st);
	CHECK(st.mean == 1 && st.std == 0 && st.score == 1);
	cfl_metric_stats(w, 3, 1, &st);
	CHECK(isnan(st.mean) && isnan(st.std) && isnan(st.score));
	cfl_metric_stats(v, 0, 1, &st);
	CHECK(st.n == 0 && isnan(st.mean) && isnan(st.score));
}

/* Tune's rule: a candidate scores sign * mean - std over its repeats that
 * did not fail (NaN), NaN when none did; the refit is of the first
 * candidate with the highest score. */
static void t_tune_selection(void)
{
	/* acc on validation, two repeats per candidate */
	const double vals[6][2] = {
		{ 0.90, 0.70 },	/* mean 0.80, std 0.10: 0.70 */
		{ 0.78, 0.78 },	/* 0.78 */
		{ 0.80, NAN },	/* one repeat failed: 0.80 over the other */
		{ NAN, NAN },	/* every repeat failed: never chosen */
		{ 0.80, 0.80 },	/* ties 0.80: the earlier one wins */
		{ 0.99, INFINITY },	/* not finite: NaN, never chosen */
	};
	double scores[6];

	for (size_t i = 0; i < 6; i++)
		scores[i] = cfl_metric_candidate_score(vals[i], 2, 1);
	CHECK_NEAR(scores[0], 0.70, 1e-12);
	CHECK(scores[1] == 0.78);
	CHECK(scores[2] == 0.80);
	CHECK(isnan(scores[3]));
	CHECK(scores[4] == 0.80);
	CHECK(isnan(scores[5]));
	/* the highest mean (candidate 0) loses to a steadier one */
	CHECK_INT(cfl_metric_best_score(scores, 6), 2);
	CHECK_INT(cfl_metric_best_score(scores, 2), 1);
	CHECK_INT(cfl_metric_best_score(scores + 3, 1), -1);
	CHECK_INT(cfl_metric_best_score(scores, 0), -1);
	/* lower is better (mse): -(mean + std) */
	{
		const double mse[2][3] = { { 1.0, 3.0, NAN }, { 2.5, 2.5, 2.5 } };
		double sc[2];

		sc[0] = cfl_metric_candidate_score(mse[0], 3, -1);	/* -3 */
		sc[1] = cfl_metric_candidate_score(mse[1], 3, -1);	/* -2.5 */
		CHECK(sc[0] == -3.0 && sc[1] == -2.5);
		CHECK_INT(cfl_metric_best_score(sc, 2), 1);
	}
}

/* Per-row losses: their mean is the metric where it is a mean of rows
 * (acc: 1 - acc; logloss; mae; mse), and the loss it is a function of
 * elsewhere (rmse, r2: mse); the slope turns a difference of mean losses
 * into one of the metric. */
static void t_row_losses(void)
{
	static const double yc[] = { 0, 1, 2, 1 };
	static const double pc[] = { .7, .2, .1, .1, .3, .6, .2, .5, .3, .3, .4, .3 };
	static const double yr[] = { 1, 2, 3, 5 }, pr[] = { 1.5, 2, 2, 7 };
	struct cfl_err err;
	double l[4], v, mean;

	CHECK(cfl_metric_row_losses(CFL_M_ACC, yc, pc, 4, 3, l, &err) == 0);
	CHECK(l[0] == 0 && l[1] == 1 && l[2] == 1 && l[3] == 0);
	for (int id = 0; id < CFL_M_COUNT; id++) {
		const struct cfl_metric_info *mi = cfl_metric_info(id);
		const double *y = mi->reg ? yr : yc, *p = mi->reg ? pr : pc;
		int k = mi->reg ? 0 : 3;

		CHECK_MSG(cfl_metric_row_losses(id, y, p, 4, k, l, &err) == 0, "%s: %s",
			  mi->name, err.msg);
		CHECK(cfl_metric_eval(id, y, p, 4, k, &v, &err) == 0);
		mean = (l[0] + l[1] + l[2] + l[3]) / 4;
		switch (id) {
		case CFL_M_ACC:
			CHECK_NEAR(mean, 1 - v, 1e-15);
			CHECK(cfl_metric_loss_slope(id, mean, y, 4) == 1);
			break;
		case CFL_M_LOGLOSS:
		case CFL_M_MAE:
		case CFL_M_MSE:
			CHECK_NEAR(mean, v, 1e-15);
			CHECK(cfl_metric_loss_slope(id, mean, y, 4) == 1);
			break;
		case CFL_M_RMSE:
			CHECK_NEAR(sqrt(mean), v, 1e-15);
			/* 1 / (2 rmse): squared errors .25 0 1 4, mse 1.3125 */
			CHECK_NEAR(mean, 1.3125, 1e-15);
			CHECK_NEAR(cfl_metric_loss_slope(id, mean, y, 4), 0.5 / sqrt(1.3125),
				   1e-15);
			break;
		case CFL_M_R2:	/* 1 - mse / var(y), var = 2.1875 */
			CHECK_NEAR(1 - mean / 2.1875, v, 1e-15);
			CHECK_NEAR(cfl_metric_loss_slope(id, mean, y, 4), 1 / 2.1875, 1e-15);
			break;
		default:	/* auc, f1, ber, corr: a stand-in, no slope */
			CHECK(isnan(cfl_metric_loss_slope(id, mean, y, 4)));
			break;
		}
	}
	/* the inputs are checked as cfl_metric_eval checks them */
	CHECK(cfl_metric_row_losses(CFL_M_MSE, yc, pc, 4, 3, l, &err) == -1);
	CHECK(cfl_metric_row_losses(CFL_M_ACC, yc, pc, 0, 3, l, &err) == -1);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_fixtures),
	TEST(t_info),
	TEST(t_parse_list),
	TEST(t_bad_inputs),
	TEST(t_undefined_messages),
	TEST(t_auc_pairs),
	TEST(t_auc_radix),
	TEST(t_score_rule),
	TEST(t_tune_selection),
	TEST(t_row_losses),
	{ 0 },
};
