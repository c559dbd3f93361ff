/* Unit tests of src/ensemble: mean, vote, weighted mean, score weights,
 * greedy selection and stacking against values computed by hand (the
 * working is in the comments), and the rule that stacking never learns from
 * test rows: changing the test labels changes the test metrics and nothing
 * else, while changing the labels it does fit on changes the meta-learner
 * (so the check can fail). */
#include "runner.h"

#include "cfl/ensemble.h"

static const double A[] = { 0.8, 0.2, 0.4, 0.6 };	/* (2, 2) */
static const double B[] = { 0.6, 0.4, 0.0, 1.0 };

static void t_mean(void)
{
	const double *p[] = { A, B };
	double out[4];
	struct cfl_err err;

	CHECK(cfl_ensemble_mean(p, 2, 2, 2, out, &err) == 0);
	CHECK_NEAR(out[0], 0.7, 1e-15);
	CHECK_NEAR(out[1], 0.3, 1e-15);
	CHECK_NEAR(out[2], 0.2, 1e-15);
	CHECK_NEAR(out[3], 0.8, 1e-15);
	CHECK(cfl_ensemble_mean(p, 0, 2, 2, out, &err) == -1);
	CHECK_CONTAINS(err.msg, "needs a member");
}

static void t_vote(void)
{
	/* 3 members, 2 rows, 3 classes.  Row 0 argmaxes: 0, 2, 2 -> 2 wins
	 * 2/3.  Row 1: member 0 ties 0.4/0.4 on classes 1 and 2 (-> 1), the
	 * others pick 0 and 1: class 1 gets 2 votes. */
	static const double m0[] = { .5, .2, .3, .2, .4, .4 };
	static const double m1[] = { .1, .2, .7, .9, .05, .05 };
	static const double m2[] = { .3, .3, .4, .2, .7, .1 };
	const double *p[] = { m0, m1, m2 };
	const double e = CFL_ENS_VOTE_TIE_WEIGHT;
	double out[6];
	struct cfl_err err;

	CHECK(cfl_ensemble_vote(p, 3, 2, 3, out, &err) == 0);
	/* shares, blended with e x the mean probability */
	CHECK_NEAR(out[0], (1 - e) / 3 + e * 0.3, 1e-15);
	CHECK_NEAR(out[1], e * 0.7 / 3, 1e-15);
	CHECK_NEAR(out[2], (1 - e) * 2 / 3 + e * 1.4 / 3, 1e-15);
	CHECK_NEAR(out[3], (1 - e) / 3 + e * 1.3 / 3, 1e-15);
	CHECK_NEAR(out[4], (1 - e) * 2 / 3 + e * 1.15 / 3, 1e-15);
	CHECK_NEAR(out[5], e * 0.55 / 3, 1e-15);
	CHECK_NEAR(out[0] + out[1] + out[2], 1, 1e-15);
	/* a tied vote (A's row 0 votes class 0, B's row 1 class 1): class 1
	 * wins on its mean probability, (0.2 + 1.0) / 2 > (0.8 + 0.0) / 2 */
	{
		const double *q[] = { A, B + 2 };
		double o2[2];

		CHECK(cfl_ensemble_vote(q, 2, 1, 2, o2, &err) == 0);
		CHECK_NEAR(o2[0], (1 - e) * 0.5 + e * 0.4, 1e-15);
		CHECK_NEAR(o2[1], (1 - e) * 0.5 + e * 0.6, 1e-15);
		CHECK(o2[1] > o2[0]);
	}
	/* regression has no vote */
	CHECK(cfl_ensemble_vote(p, 3, 6, 1, out, &err) == -1);
	CHECK_CONTAINS(err.msg, "needs classification");
}

static void t_weighted(void)
{
	const double *p[] = { A, B };
	const double w[] = { 3, 1 }, bad[] = { 1, -1 }, zero[] = { 0, 0 };
	double out[4];
	struct cfl_err err;

	/* (3A + B) / 4 */
	CHECK(cfl_ensemble_weighted(p, w, 2, 2, 2, out, &err) == 0);
	CHECK_NEAR(out[0], (2.4 + 0.6) / 4, 1e-15);
	CHECK_NEAR(out[1], (0.6 + 0.4) / 4, 1e-15);
	CHECK_NEAR(out[2], 1.2 / 4, 1e-15);
	CHECK_NEAR(out[3], 2.8 / 4, 1e-15);
	CHECK(cfl_ensemble_weighted(p, bad, 2, 2, 2, out, &err) == -1);
	CHECK(cfl_ensemble_weighted(p, zero, 2, 2, 2, out, &err) == -1);
	CHECK_CONTAINS(err.msg, "sum to 0");
}

static void t_score_weights(void)
{
	const double hi[] = { 0.9, 0.6, -0.1, NAN };
	const double lo[] = { 2, 4 }, exact[] = { 0, 3, 0 };
	const double none[] = { NAN, -1 };
	double w[4];

	/* higher is better: 0.9 : 0.6 : 0 : 0 */
	cfl_ensemble_score_weights(hi, 4, 1, w);
	CHECK_NEAR(w[0], 0.6, 1e-15);
	CHECK_NEAR(w[1], 0.4, 1e-15);
	CHECK(w[2] == 0 && w[3] == 0);
	/* lower is better: 1/2 : 1/4 */
	cfl_ensemble_score_weights(lo, 2, -1, w);
	CHECK_NEAR(w[0], 2.0 / 3, 1e-15);
	CHECK_NEAR(w[1], 1.0 / 3, 1e-15);
	/* exact fits share everything */
	cfl_ensemble_score_weights(exact, 3, -1, w);
	CHECK(w[0] == 0.5 && w[1] == 0 && w[2] == 0.5);
	/* nothing usable: uniform */
	cfl_ensemble_score_weights(none, 2, 1, w);
	CHECK(w[0] == 0.5 && w[1] == 0.5);
}

/* y = (0, 0), mse.  A = (0.2, 1.0): 0.52;  B = (1.0, -0.2): 0.52;
 * C = (0.6, 0.6): 0.36.
 * round 1: C (0.36).
 * round 2: (C+A)/2 = (0.4, 0.8): 0.40; (C+B)/2 = (0.8, 0.2): 0.34;
 *          C: 0.36 -> B.
 * round 3: (C+B+A)/3 = (0.6, 0.4667): 0.28889; (C+2B)/3 = (0.8667,
 *          0.0667): 0.37778; (2C+B)/3 = (0.7333, 0.3333): 0.32444 -> A.
 * round 4: +A (0.5, 0.6): 0.305; +B (0.7, 0.3): 0.29; +C (0.6, 0.5):
 *          0.305 -> B, worse than round 3, so round 3's weights stay. */
static void t_greedy(void)
{
	static const double y[] = { 0, 0 };
	static const double a[] = { 0.2, 1.0 }, b[] = { 1.0, -0.2 },
			    c[] = { 0.6, 0.6 };
	const double *p[] = { a, b, c };
	double w[3];
	struct cfl_err err;

	CHECK_MSG(cfl_ensemble_greedy(p, 3, 2, 1, y, 0, CFL_M_MSE, 1, w, &err) == 0,
		  "%s", err.msg);
	CHECK(w[0] == 0 && w[1] == 0 && w[2] == 1);
	CHECK(cfl_ensemble_greedy(p, 3, 2, 1, y, 0, CFL_M_MSE, 2, w, &err) == 0);
	CHECK(w[0] == 0 && w[1] == 0.5 && w[2] == 0.5);
	CHECK(cfl_ensemble_greedy(p, 3, 2, 1, y, 0, CFL_M_MSE, 4, w, &err) == 0);
	CHECK_NEAR(w[0], 1.0 / 3, 1e-15);
	CHECK_NEAR(w[1], 1.0 / 3, 1e-15);
	CHECK_NEAR(w[2], 1.0 / 3, 1e-15);
	/* many more rounds: never worse than round 3 on validation */
	CHECK(cfl_ensemble_greedy(p, 3, 2, 1, y, 0, CFL_M_MSE, 50, w, &err) == 0);
	{
		double mix[2], v;

		CHECK(cfl_ensemble_weighted(p, w, 3, 2, 1, mix, &err) == 0);
		CHECK(cfl_metric_eval(CFL_M_MSE, y, mix, 2, 0, &v, &err) == 0);
		CHECK(v <= 0.28889);
	}
	/* a metric that cannot be computed is an error, not a pick */
	{
		static const double yc[] = { 0, 0 }, pa[] = { .4, .6, .3, .7 };
		const double *q[] = { pa };

		CHECK(cfl_ensemble_greedy(q, 1, 2, 2, yc, 2, CFL_M_AUC, 3, w,
					  &err) == -1);
		CHECK_CONTAINS(err.msg, "greedy ensemble");
	}
}

/* Top: the members the rows cannot tell from the best.  y = 0 on 4 rows;
 * member a errs by 1 on every row (squared losses 1 1 1 1, the best), b
 * by 1 1 1 2 (losses 1 1 1 4: 0.75 above a, paired standard error
 * sd(0 0 0 3) / 2 = 0.75), c by 3 everywhere (losses 9: 8 above, a
 * standard error of 0).  Within 2 SE: a and b; within 0.5 SE: a alone. */
static void t_top(void)
{
	static const double y[] = { 0, 0, 0, 0 };
	static const double a[] = { 1, 1, 1, 1 }, b[] = { 1, -1, 1, 2 },
			    c[] = { 3, 3, -3, 3 };
	const double *p[] = { a, b, c }, *q[] = { c, b, a };
	double w[3], diff;
	struct cfl_err err;
	double la[] = { 1, 1, 1, 1 }, lb[] = { 1, 1, 1, 4 };

	CHECK_NEAR(cfl_ensemble_paired_se(lb, la, 4, &diff), 0.75, 1e-15);
	CHECK(diff == 0.75);
	CHECK(cfl_ensemble_paired_se(la, lb, 1, &diff) == 0 && diff == 0);
	CHECK_MSG(cfl_ensemble_top(p, 3, 4, y, 0, CFL_M_MSE, 2.0, w, &err) == 0,
		  "%s", err.msg);
	CHECK(w[0] == 0.5 && w[1] == 0.5 && w[2] == 0);
	CHECK(cfl_ensemble_top(p, 3, 4, y, 0, CFL_M_MSE, 0.5, w, &err) == 0);
	CHECK(w[0] == 1 && w[1] == 0 && w[2] == 0);
	/* the order of the members does not matter; rmse ranks by the same
	 * squared errors */
	CHECK(cfl_ensemble_top(q, 3, 4, y, 0, CFL_M_RMSE, 2.0, w, &err) == 0);
	CHECK(w[0] == 0 && w[1] == 0.5 && w[2] == 0.5);
	/* a metric the inputs do not allow is an error, not a pick */
	CHECK(cfl_ensemble_top(p, 3, 4, y, 0, CFL_M_ACC, 2.0, w, &err) == -1);
	CHECK_CONTAINS(err.msg, "top ensemble");
}

/* Ridge with l2 = 0 recovers an exact linear relation:
 * y = 0.5 p1 + 0.25 p2 + 1. */
static void t_stacking_regression_exact(void)
{
	static const double p1[] = { 0, 1, 2, 3, 4 }, p2[] = { 1, 0, 3, 1, 2 };
	static const double t1[] = { 10 }, t2[] = { 4 };
	double y[5], out[1];
	const double *p[] = { p1, p2 }, *t[] = { t1, t2 };
	struct cfl_stacker s;
	struct cfl_err err;

	for (int i = 0; i < 5; i++)
		y[i] = 0.5 * p1[i] + 0.25 * p2[i] + 1;
	cfl_stacker_init(&s);
	CHECK_MSG(cfl_stacker_fit(&s, p, 2, 5, 1, y, 0, 0, &err) == 0, "%s",
		  err.msg);
	CHECK_NEAR(s.meta.w[0], 0.5, 1e-9);
	CHECK_NEAR(s.meta.w[1], 0.25, 1e-9);
	CHECK_NEAR(s.meta.b[0], 1, 1e-9);
	CHECK(cfl_stacker_predict(&s, t, 2, 1, out, &err) == 0);
	CHECK_NEAR(out[0], 5 + 1 + 1, 1e-9);
	CHECK(cfl_stacker_predict(&s, t, 1, 1, out, &err) == -1);
	CHECK_CONTAINS(err.msg, "fitted on 2 members");
	cfl_stacker_release(&s);
	CHECK(cfl_stacker_predict(&s, t, 2, 1, out, &err) == -1);
	CHECK_CONTAINS(err.msg, "not fitted");
}

/* Binary stacking: one input per member (p of class 1), so the meta-learner
 * has 2 weights; it learns to trust the member that is right. */
static void t_stacking_binary_shape(void)
{
	static const double good[] = { .9, .1, .8, .2, .3, .7, .2, .8, .6, .4, .4, .6 };
	static const double noise[] = { .5, .5, .6, .4, .4, .6, .6, .4, .4, .6, .5, .5 };
	static const double y[] = { 0, 0, 1, 1, 0, 1 };
	const double *p[] = { good, noise };
	struct cfl_stacker s;
	struct cfl_err err;
	double out[12];

	cfl_stacker_init(&s);
	CHECK_MSG(cfl_stacker_fit(&s, p, 2, 6, 2, y, 2, 0.1, &err) == 0, "%s",
		  err.msg);
	CHECK_INT(s.meta.d, 2);
	/* row 1 scores class 1; the good member's weight is larger */
	CHECK(s.meta.w[2] > fabs(s.meta.w[3]));
	CHECK(cfl_stacker_predict(&s, p, 2, 6, out, &err) == 0);
	for (int i = 0; i < 6; i++) {
		CHECK_NEAR(out[2 * i] + out[2 * i + 1], 1, 1e-12);
		CHECK_INT(out[2 * i + 1] > 0.5, y[i] == 1);
	}
	/* bad shapes */
	CHECK(cfl_stacker_fit(&s, p, 2, 6, 3, y, 2, 1, &err) == -1);
	CHECK(cfl_stacker_fit(&s, p, 0, 6, 2, y, 2, 1, &err) == -1);
	cfl_stacker_release(&s);
}

/* ---- cfl_ensemble_build ---- */

/* Three members of a 3-class problem with 6 validation, 4 test and 8
 * training (OOF) rows; values vary by member and row. */
struct fixture {
	double valid[3][18], test[3][12], oof[3][24];
	double y_valid[6], y_test[4], y_train[8];
	struct cfl_ens_member members[3];
	enum cfl_metric_id metrics[2];
	struct cfl_ens_input in;
};

static void fill(double *p, size_t n, int member, int salt)
{
	for (size_t i = 0; i < n; i++) {
		double a = 1 + ((i * 7 + (size_t)member * 5 + (size_t)salt) % 5),
		       b = 1 + ((i * 3 + (size_t)member) % 4), c = 1 + (i % 3);
		double s = a + b + c;

		p[3 * i] = a / s;
		p[3 * i + 1] = b / s;
		p[3 * i + 2] = c / s;
	}
}

static void fixture_init(struct fixture *f, int with_oof)
{
	memset(f, 0, sizeof(*f));
	for (int j = 0; j < 3; j++) {
		fill(f->valid[j], 6, j, 0);
		fill(f->test[j], 4, j, 1);
		fill(f->oof[j], 8, j, 2);
		f->members[j].valid = f->valid[j];
		f->members[j].test = f->test[j];
		f->members[j].oof = with_oof ? f->oof[j] : NULL;
	}
	for (int i = 0; i < 6; i++)
		f->y_valid[i] = i % 3;
	for (int i = 0; i < 4; i++)
		f->y_test[i] = (i + 1) % 3;
	for (int i = 0; i < 8; i++)
		f->y_train[i] = (i * 2) % 3;
	f->metrics[0] = CFL_M_ACC;
	f->metrics[1] = CFL_M_LOGLOSS;
	f->in.n_members = 3;
	f->in.members = f->members;
	f->in.n_out = 3;
	f->in.n_classes = 3;
	f->in.n_valid = 6;
	f->in.n_test = 4;
	f->in.n_train = 8;
	f->in.y_valid = f->y_valid;
	f->in.y_test = f->y_test;
	f->in.y_train = with_oof ? f->y_train : NULL;
	f->in.n_metrics = 2;
	f->in.metrics = f->metrics;
	f->in.l2 = CFL_ENS_DEFAULT_L2;
	f->in.greedy_rounds = CFL_ENS_DEFAULT_GREEDY_ROUNDS;
}

static void build_ok(const struct fixture *f, enum cfl_ensemble_method m,
		     struct cfl_ens_output *o)
{
	struct cfl_err err;

	CHECK_MSG(cfl_ensemble_build(m, &f->in, o, &err) == 0, "%s", err.msg);
}

static int same(const double *a, const double *b, size_t n)
{
	return memcmp(a, b, n * sizeof(double)) == 0;
}

static void t_build_mean_scores(void)
{
	struct fixture f;
	struct cfl_ens_output o;
	struct cfl_err err;
	struct cfl_buf b;
	const double *pt[3];
	double want[12], acc;

	fixture_init(&f, 0);
	build_ok(&f, CFL_ENS_MEAN, &o);
	for (int j = 0; j < 3; j++)
		pt[j] = f.test[j];
	CHECK(cfl_ensemble_mean(pt, 3, 4, 3, want, &err) == 0);
	CHECK(same(o.test, want, 12));
	CHECK(cfl_metric_eval(CFL_M_ACC, f.y_test, want, 4, 3, &acc, &err) == 0);
	CHECK(o.test_metrics[0] == acc);
	CHECK(o.test_metrics[1] > 0);
	CHECK(o.weights && o.weights[0] == 1.0 / 3);
	cfl_buf_init(&b);
	CHECK(cfl_ens_output_describe(&o, CFL_ENS_MEAN, 1, &b) == 0);
	CHECK_STR(b.data, "weights 0.333333,0.333333,0.333333");
	cfl_buf_release(&b);
	cfl_ens_output_release(&o);
}

/* Every method builds on the fixture; vote refuses a regression. */
static void t_build_every_method(void)
{
	struct fixture f;
	struct cfl_ens_output o;
	struct cfl_err err;

	fixture_init(&f, 0);
	for (int m = 0; m < CFL_ENS_COUNT; m++) {
		build_ok(&f, m, &o);
		for (int i = 0; i < 4; i++) {
			double s = o.test[3 * i] + o.test[3 * i + 1] + o.test[3 * i + 2];

			CHECK_NEAR(s, 1, 1e-9);
		}
		cfl_ens_output_release(&o);
	}
	f.in.n_classes = 0;
	f.in.n_out = 1;
	CHECK(cfl_ensemble_build(CFL_ENS_VOTE, &f.in, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "needs classification");
	f.in.n_members = 0;
	CHECK(cfl_ensemble_build(CFL_ENS_MEAN, &f.in, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "no member");
	fixture_init(&f, 0);
	f.in.n_out = 2;
	CHECK(cfl_ensemble_build(CFL_ENS_MEAN, &f.in, &o, &err) == -1);
	cfl_ens_output_release(&o);
}

/* Stacking's fixture: three members of a 3-class problem on NB rows of
 * validation and of OOF, 4 test rows.  Member 0 puts 0.7 on the true
 * class, member 1 0.4, member 2 is confidently wrong on every 3rd row. */
#define NB 60
struct big {
	double valid[3][NB * 3], test[3][12], oof[3][NB * 3];
	double y_valid[NB], y_test[4], y_train[NB];
	struct cfl_ens_member members[3];
	enum cfl_metric_id metrics[2];
	struct cfl_ens_input in;
};

static void big_fill(double *p, const double *y, size_t n, int member)
{
	for (size_t i = 0; i < n; i++) {
		size_t c = (size_t)y[i];
		double on = member == 0 ? 0.7 : member == 1 ? 0.4 : i % 3 ? 0.9 : 0.02;

		for (size_t k = 0; k < 3; k++)
			p[3 * i + k] = k == c ? on : (1 - on) / 2;
	}
}

static void big_init(struct big *f, int with_oof)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < NB; i++) {
		f->y_valid[i] = (i * 7) % 3;
		f->y_train[i] = (i * 5 + 1) % 3;
	}
	for (int i = 0; i < 4; i++)
		f->y_test[i] = (i + 1) % 3;
	for (int j = 0; j < 3; j++) {
		big_fill(f->valid[j], f->y_valid, NB, j);
		big_fill(f->oof[j], f->y_train, NB, j);
		big_fill(f->test[j], (double[]){ 0, 1, 2, 0 }, 4, j);
		f->members[j].valid = f->valid[j];
		f->members[j].test = f->test[j];
		f->members[j].oof = with_oof ? f->oof[j] : NULL;
	}
	f->metrics[0] = CFL_M_ACC;
	f->metrics[1] = CFL_M_LOGLOSS;
	f->in = (struct cfl_ens_input){
		.n_members = 3, .members = f->members, .n_out = 3, .n_classes = 3,
		.n_valid = NB, .n_test = 4, .n_train = NB, .y_valid = f->y_valid,
		.y_test = f->y_test, .y_train = with_oof ? f->y_train : NULL,
		.n_metrics = 2, .metrics = f->metrics, .l2 = CFL_ENS_DEFAULT_L2,
		.greedy_rounds = CFL_ENS_DEFAULT_GREEDY_ROUNDS,
	};
}

static void stack(const struct cfl_ens_input *in, struct cfl_ens_output *o)
{
	struct cfl_err err;

	CHECK_MSG(cfl_ensemble_build(CFL_ENS_STACKING, in, o, &err) == 0, "%s", err.msg);
}

/* Stacking on more than 100,000 out-of-fold rows fits its weights on
 * every s-th of them (s = 3 for 250,001 rows): the weights are those of
 * the same members given only rows 0, 3, 6, ...  (All the rows gave
 * other weights, and took seconds on auto's 720,000.) */
/* Row i of two two-class members: label i % 2, member 0 giving it p0 and
 * member 1 p1. */
static void set_pair_row(double *const m[2], double *y, size_t i, double p0, double p1)
{
	y[i] = (double)(i % 2);
	m[0][2 * i + (i % 2)] = p0;
	m[0][2 * i + 1 - (i % 2)] = 1 - p0;
	m[1][2 * i + (i % 2)] = p1;
	m[1][2 * i + 1 - (i % 2)] = 1 - p1;
}

/* The rows 0, step, 2 step, ... of two two-class members and their
 * labels (n rows) into sm and sy. */
static void stride_pair(double *const m[2], const double *y, size_t n, size_t step,
			double *const sm[2], double *sy)
{
	for (size_t i = 0; i * step < n; i++) {
		sy[i] = y[i * step];
		for (int j = 0; j < 2; j++)
			memcpy(&sm[j][2 * i], &m[j][2 * i * step], 2 * sizeof(double));
	}
}

/* On more than 100,000 rows greedy selects on every s-th row: rows 0, 3,
 * 6, ... favour member 0, the others member 1, so on all 250,001 rows
 * member 1 would win, on the strided ones member 0 does (the same weights
 * as greedy given those rows alone); at 100,000 rows, no stride. */
static void t_greedy_strides_many_rows(void)
{
	enum { N = 250001, S = 3, NS = (N + S - 1) / S };
	static double p[2][2 * N], sp[2][2 * NS], y[N], sy[NS];
	const double *pp[2] = { p[0], p[1] }, *spp[2] = { sp[0], sp[1] };
	double w[2], sw[2];
	struct cfl_err err;

	double *const m[2] = { p[0], p[1] }, *const sm[2] = { sp[0], sp[1] };

	for (size_t i = 0; i < N; i++)
		set_pair_row(m, y, i, i % S == 0 ? 0.9 : 0.3, i % S == 0 ? 0.6 : 0.8);
	stride_pair(m, y, N, S, sm, sy);
	CHECK_MSG(cfl_ensemble_greedy(pp, 2, N, 2, y, 2, CFL_M_LOGLOSS, 25, w, &err) == 0,
		  "%s", err.msg);
	CHECK_MSG(cfl_ensemble_greedy(spp, 2, NS, 2, sy, 2, CFL_M_LOGLOSS, 25, sw, &err) == 0,
		  "%s", err.msg);
	CHECK(w[0] > w[1]);
	CHECK_MSG(w[0] == sw[0] && w[1] == sw[1], "%g %g against %g %g", w[0], w[1], sw[0], sw[1]);
	CHECK_MSG(cfl_ensemble_greedy(pp, 2, 100000, 2, y, 2, CFL_M_LOGLOSS, 25, w, &err) == 0,
		  "%s", err.msg);
	CHECK(w[1] > w[0]);
}

static void t_stacking_strides_many_rows(void)
{
	enum { N = 250001, S = 3, NS = (N + S - 1) / S };
	static double oof[2][2 * N], soof[2][2 * NS], y[N], sy[NS], v[2][2], t[2][2];
	struct cfl_ens_member mem[2], smem[2];
	enum cfl_metric_id metrics[1] = { CFL_M_LOGLOSS };
	struct cfl_ens_input in;
	struct cfl_ens_output o, so;
	struct cfl_err err;
	double yv[1] = { 0 }, yt[1] = { 1 };

	double *const m[2] = { oof[0], oof[1] }, *const sm[2] = { soof[0], soof[1] };

	/* member 0 right more often than member 1, by the row */
	for (size_t i = 0; i < N; i++)
		set_pair_row(m, y, i, (i * 7919 % 13) < 10 ? 0.8 : 0.3,
			     (i * 104729 % 7) < 4 ? 0.7 : 0.4);
	stride_pair(m, y, N, S, sm, sy);
	for (int j = 0; j < 2; j++) {
		v[j][0] = t[j][0] = 0.5;
		v[j][1] = t[j][1] = 0.5;
		mem[j] = (struct cfl_ens_member){ .valid = v[j], .test = t[j], .oof = oof[j] };
		smem[j] = (struct cfl_ens_member){ .valid = v[j], .test = t[j], .oof = soof[j] };
	}
	in = (struct cfl_ens_input){
		.n_members = 2, .members = mem, .n_out = 2, .n_classes = 2,
		.n_valid = 1, .n_test = 1, .n_train = N, .y_valid = yv, .y_test = yt,
		.y_train = y, .n_metrics = 1, .metrics = metrics, .l2 = CFL_ENS_DEFAULT_L2,
		.greedy_rounds = CFL_ENS_DEFAULT_GREEDY_ROUNDS,
	};
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_STACKING, &in, &o, &err) == 0, "%s", err.msg);
	in.members = smem;
	in.n_train = NS;
	in.y_train = sy;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_STACKING, &in, &so, &err) == 0, "%s", err.msg);
	CHECK_INT(o.stacked_on_oof, 1);
	CHECK(o.weights[0] > o.weights[1]);
	CHECK_MSG(o.weights[0] == so.weights[0] && o.weights[1] == so.weights[1],
		  "%.17g %.17g against %.17g %.17g", o.weights[0], o.weights[1],
		  so.weights[0], so.weights[1]);
	cfl_ens_output_release(&o);
	cfl_ens_output_release(&so);
}

/* Stacking on validation: non-negative weights summing to one, the best
 * member weighted most, a validation log loss no worse than the mean's;
 * the test labels change the test metrics only; the validation labels
 * change the weights. */
static void t_stacking_ignores_test_labels(void)
{
	struct big f;
	struct cfl_ens_output o1, o2, o3, mean;
	struct cfl_err err;

	big_init(&f, 0);
	stack(&f.in, &o1);
	CHECK(!o1.stacked_on_oof);
	CHECK(!o1.stack_fallback);
	CHECK(o1.weights != NULL);
	CHECK_NEAR(o1.weights[0] + o1.weights[1] + o1.weights[2], 1, 1e-9);
	for (int j = 0; j < 3; j++)
		CHECK(o1.weights[j] >= 0);
	CHECK(o1.weights[0] > o1.weights[1] && o1.weights[0] > o1.weights[2]);
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_MEAN, &f.in, &mean, &err) == 0, "%s", err.msg);
	CHECK(o1.valid_metrics[1] <= mean.valid_metrics[1]);
	for (int i = 0; i < 4; i++)
		f.y_test[i] = (double[]){ 0, 1, 2, 0 }[i];
	stack(&f.in, &o2);
	CHECK(same(o1.weights, o2.weights, 3));
	CHECK(same(o1.test, o2.test, 12));
	CHECK(same(o1.valid, o2.valid, NB * 3));
	CHECK(!same(o1.test_metrics, o2.test_metrics, 2));
	CHECK(same(o1.valid_metrics, o2.valid_metrics, 2));
	/* the check can fail: labels it does fit on move the weights */
	for (int i = 0; i < NB; i += 3)
		f.y_valid[i] = (f.y_valid[i] + 1) == 3 ? 0 : f.y_valid[i] + 1;
	stack(&f.in, &o3);
	CHECK(!same(o1.weights, o3.weights, 3));
	CHECK(!same(o1.test, o3.test, 12));
	cfl_ens_output_release(&o1);
	cfl_ens_output_release(&o2);
	cfl_ens_output_release(&o3);
	cfl_ens_output_release(&mean);
}

/* With out-of-fold predictions for every member, stacking fits on them:
 * validation and test labels leave it unchanged, training labels move it. */
static void t_stacking_on_oof(void)
{
	struct big f;
	struct cfl_ens_output o1, o2, o3;
	struct cfl_buf b;

	big_init(&f, 1);
	stack(&f.in, &o1);
	CHECK(o1.stacked_on_oof);
	cfl_buf_init(&b);
	CHECK(cfl_ens_output_describe(&o1, CFL_ENS_STACKING, 1, &b) == 0);
	CHECK_CONTAINS(b.data, "weights ");
	CHECK_CONTAINS(b.data, "; meta non-negative weights summing to 1 on 60 oof rows");
	cfl_buf_release(&b);
	f.y_valid[0] = 2;
	f.y_test[0] = 1 - f.y_test[0] + 1;
	stack(&f.in, &o2);
	CHECK(same(o1.weights, o2.weights, 3));
	CHECK(same(o1.test, o2.test, 12));
	for (int i = 0; i < NB; i += 3)
		f.y_train[i] = (f.y_train[i] + 1) == 3 ? 0 : f.y_train[i] + 1;
	stack(&f.in, &o3);
	CHECK(!same(o1.weights, o3.weights, 3));
	cfl_ens_output_release(&o1);
	cfl_ens_output_release(&o2);
	cfl_ens_output_release(&o3);
	/* one member without OOF predictions: back to validation */
	big_init(&f, 1);
	f.members[1].oof = NULL;
	stack(&f.in, &o1);
	CHECK(!o1.stacked_on_oof);
	cfl_ens_output_release(&o1);
}

/* select_on_oof: ensemble selection (and top) on the out-of-fold predictions of
 * every training row (auto), not on validation.  Member 0 is right on
 * every validation row and wrong on every OOF row: selected on validation
 * it gets weight (the first of the members tied at accuracy 1), on OOF
 * none; a member without OOF predictions sends it back to validation. */
static void t_select_on_oof(void)
{
	struct big f;
	struct cfl_ens_output ov, oo, ob;
	struct cfl_err err;
	double wrong[NB];

	big_init(&f, 1);
	for (int i = 0; i < NB; i++)
		wrong[i] = (double)(((int)f.y_train[i] + 1) % 3);
	big_fill(f.oof[0], wrong, NB, 0);
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &f.in, &ov, &err) == 0, "%s", err.msg);
	f.in.select_on_oof = 1;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &f.in, &oo, &err) == 0, "%s", err.msg);
	CHECK(ov.weights[0] > 0);
	CHECK(oo.weights[0] == 0);
	CHECK(oo.weights[1] + oo.weights[2] == 1);
	f.members[2].oof = NULL;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &f.in, &ob, &err) == 0, "%s", err.msg);
	CHECK(same(ov.weights, ob.weights, 3));
	cfl_ens_output_release(&ov);
	cfl_ens_output_release(&oo);
	cfl_ens_output_release(&ob);
	/* top the same: member 0 kept on validation, left out on OOF */
	f.members[2].oof = f.oof[2];
	f.in.select_on_oof = 0;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_TOP, &f.in, &ov, &err) == 0, "%s", err.msg);
	f.in.select_on_oof = 1;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_TOP, &f.in, &oo, &err) == 0, "%s", err.msg);
	CHECK(ov.weights[0] > 0);
	CHECK(oo.weights[0] == 0 && oo.weights[1] + oo.weights[2] == 1);
	cfl_ens_output_release(&ov);
	cfl_ens_output_release(&oo);
}

/* select_metric: greedy selects by it, not by metrics[0].  Two members
 * right on every row (accuracy 1 both, a tie the first wins), the second
 * sure of it (0.95 against 0.6): by log loss, a proper score, the second
 * is better, and one round picks it. */
static void t_greedy_select_metric(void)
{
	double y[4] = { 0, 1, 0, 1 }, a[8], b[8];
	struct cfl_ens_member m[2] = { { a, a, NULL }, { b, b, NULL } };
	enum cfl_metric_id acc = CFL_M_ACC, logloss = CFL_M_LOGLOSS;
	struct cfl_ens_input in;
	struct cfl_ens_output o;
	struct cfl_err err;

	for (int i = 0; i < 4; i++) {
		a[2 * i + (int)y[i]] = 0.6;
		a[2 * i + 1 - (int)y[i]] = 0.4;
		b[2 * i + (int)y[i]] = 0.95;
		b[2 * i + 1 - (int)y[i]] = 0.05;
	}
	memset(&in, 0, sizeof(in));
	in.n_members = 2;
	in.members = m;
	in.n_out = 2;
	in.n_classes = 2;
	in.n_valid = in.n_test = 4;
	in.y_valid = in.y_test = y;
	in.n_metrics = 1;
	in.metrics = &acc;
	in.greedy_rounds = 1;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &o, &err) == 0, "%s", err.msg);
	CHECK(o.weights[0] == 1 && o.weights[1] == 0);
	cfl_ens_output_release(&o);
	in.select_metric = &logloss;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &o, &err) == 0, "%s", err.msg);
	CHECK(o.weights[0] == 0 && o.weights[1] == 1);
	CHECK(o.valid_metrics[0] == 1);	/* still scored by metrics[0] */
	cfl_ens_output_release(&o);
}

/* With few rows to fit on (6 validation rows here),
 * stacking fits nothing, keeps the mean's weights and says so. */
static void t_stacking_few_rows_is_the_mean(void)
{
	struct fixture f;
	struct cfl_ens_output o, mean;
	struct cfl_err err;
	struct cfl_buf b;

	fixture_init(&f, 0);
	stack(&f.in, &o);
	CHECK(o.stack_fallback);
	CHECK_INT(o.stack_rows, 6);
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_MEAN, &f.in, &mean, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 12; i++)
		CHECK_NEAR(o.test[i], mean.test[i], 1e-15);
	cfl_buf_init(&b);
	CHECK(cfl_ens_output_describe(&o, CFL_ENS_STACKING, 1, &b) == 0);
	CHECK_STR(b.data, "weights 0.333333,0.333333,0.333333; the mean's: only 6 valid rows, stacking fits on 20 or more");
	cfl_buf_release(&b);
	CHECK_INT(cfl_ens_stack_min_rows(3), 20);
	CHECK_INT(cfl_ens_stack_min_rows(25), 25);
	cfl_ens_output_release(&o);
	cfl_ens_output_release(&mean);
}

/* Stacking that cannot lose badly (diabetes: an unconstrained meta-learner on 35 rows of
 * 15 collinear inputs lost to every member): regression stacking on
 * collinear members never does worse on its rows than the mean or than
 * the best member (each is a point of the simplex it searches). */
static void t_stacking_regression_never_worse(void)
{
	enum { N = 80, M = 4 };
	double f[M][N], t[M][2], y[N], yt[2] = { 1, 2 };
	struct cfl_ens_member mem[M];
	enum cfl_metric_id metric = CFL_M_MSE;
	struct cfl_ens_input in;
	struct cfl_ens_output o, mean;
	struct cfl_err err;
	struct cfl_rng r;
	double best = INFINITY;

	cfl_rng_seed(&r, 5);
	for (int i = 0; i < N; i++) {
		double noise = cfl_rng_normal(&r);

		y[i] = 10 * cfl_rng_normal(&r);
		f[0][i] = y[i] + 3 * noise;			/* good */
		f[1][i] = y[i] + 3 * noise + 0.1 * cfl_rng_normal(&r);	/* its twin */
		f[2][i] = 0.5 * y[i] + 2;			/* shrunk, biased */
		f[3][i] = y[i] + 8 * cfl_rng_normal(&r);	/* noisy */
	}
	for (int j = 0; j < M; j++) {
		double mse = 0;

		for (int i = 0; i < N; i++)
			mse += (f[j][i] - y[i]) * (f[j][i] - y[i]) / N;
		if (mse < best)
			best = mse;
		t[j][0] = t[j][1] = j;
		mem[j] = (struct cfl_ens_member){ f[j], t[j], NULL };
	}
	in = (struct cfl_ens_input){ .n_members = M, .members = mem, .n_out = 1,
		.n_valid = N, .n_test = 2, .y_valid = y, .y_test = yt,
		.n_metrics = 1, .metrics = &metric, .l2 = 1 };
	stack(&in, &o);
	CHECK(!o.stack_fallback);
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_MEAN, &in, &mean, &err) == 0, "%s", err.msg);
	CHECK_MSG(o.valid_metrics[0] <= best * (1 + 1e-6), "%g > best member %g",
		  o.valid_metrics[0], best);
	CHECK(o.valid_metrics[0] <= mean.valid_metrics[0]);
	CHECK_NEAR(o.weights[0] + o.weights[1] + o.weights[2] + o.weights[3], 1, 1e-9);
	for (int j = 0; j < M; j++)
		CHECK(o.weights[j] >= 0);
	cfl_ens_output_release(&o);
	cfl_ens_output_release(&mean);
}

/* Weighted and greedy choose weights on validation only. */
static void t_weights_ignore_test_labels(void)
{
	enum cfl_ensemble_method ms[] = { CFL_ENS_WEIGHTED, CFL_ENS_GREEDY };

	for (int k = 0; k < 2; k++) {
		struct fixture f;
		struct cfl_ens_output o1, o2;

		fixture_init(&f, 0);
		build_ok(&f, ms[k], &o1);
		for (int i = 0; i < 4; i++)
			f.y_test[i] = 2;
		build_ok(&f, ms[k], &o2);
		CHECK(same(o1.weights, o2.weights, 3));
		CHECK(same(o1.test, o2.test, 12));
		cfl_ens_output_release(&o1);
		cfl_ens_output_release(&o2);
	}
}

static void t_parse_list(void)
{
	unsigned mask;
	struct cfl_err err;

	CHECK(cfl_ensemble_parse_list("mean,stacking", &mask, &err) == 0);
	CHECK_INT(mask, (1u << CFL_ENS_MEAN) | (1u << CFL_ENS_STACKING));
	CHECK(cfl_ensemble_parse_list("greedy,vote,weighted", &mask, &err) == 0);
	CHECK_INT(mask, (1u << CFL_ENS_GREEDY) | (1u << CFL_ENS_VOTE) |
				(1u << CFL_ENS_WEIGHTED));
	CHECK(cfl_ensemble_parse_list("none", &mask, &err) == 0);
	CHECK_INT(mask, 0);
	CHECK(cfl_ensemble_parse_list("mean,bogus", &mask, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown ensemble 'bogus'");
	CHECK(cfl_ensemble_parse_list("mean,", &mask, &err) == -1);
	CHECK(cfl_ensemble_parse_list(",mean", &mask, &err) == -1);
	CHECK_STR(cfl_ensemble_method_name(CFL_ENS_GREEDY), "greedy");
	CHECK_STR(cfl_ensemble_method_name(CFL_ENS_TOP), "top");
	CHECK(cfl_ensemble_parse_list("top", &mask, &err) == 0);
	CHECK_INT(mask, 1u << CFL_ENS_TOP);
	CHECK(cfl_ensemble_method_name(CFL_ENS_COUNT) == NULL);
	CHECK_INT(cfl_ensemble_method_lookup("vote"), CFL_ENS_VOTE);
	CHECK_INT(cfl_ensemble_method_lookup("Vote"), -1);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_mean),
	TEST(t_vote),
	TEST(t_weighted),
	TEST(t_score_weights),
	TEST(t_greedy),
	TEST(t_top),
	TEST(t_stacking_regression_exact),
	TEST(t_stacking_binary_shape),
	TEST(t_build_mean_scores),
	TEST(t_build_every_method),
	TEST(t_stacking_ignores_test_labels),
	TEST(t_stacking_strides_many_rows),
	TEST(t_greedy_strides_many_rows),
	TEST(t_stacking_on_oof),
	TEST(t_select_on_oof),
	TEST(t_greedy_select_metric),
	TEST(t_stacking_few_rows_is_the_mean),
	TEST(t_stacking_regression_never_worse),
	TEST(t_weights_ignore_test_labels),
	TEST(t_parse_list),
	{ 0 }
};
