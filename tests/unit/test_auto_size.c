/* Unit tests of how auto sizes a bag's fold trial on a row sample
 * (study_auto_size_fold, src/study/auto.c): the time up to the deadline
 * is used and never passed (the last trial on a slot takes the time
 * left; a bag that would not end at its share is made smaller rather than
 * left out; a budgeted model gets a budget on all its rows too), and a
 * fold's fit grows faster than its rows for the trees and linear (a
 * per-kind exponent, measured).  The clock is injected as `left`: nothing
 * here is timed. */
#include "runner.h"

#include "../../src/study/internal.h"

/* A tree's fold: its search trial fitted 50,000 rows in 0.1 s, a fold
 * predicts in 0.1 s and has 576,000 rows; 2 slots. */
static struct study_fold_size fold(const char *model, int budgeted)
{
	struct study_fold_size f;

	memset(&f, 0, sizeof(f));
	f.model = model;
	f.budgeted = budgeted;
	f.sample = 50000;
	f.fit_s = 0.1;
	f.pred = 0.1;
	f.fold_rows = 576000;
	f.ratio = 1;
	f.slots = 2;
	return f;
}

/* Nothing follows on its slot (1 trial queued, 1 running, 2 slots): it
 * gets the time left (0.85 of it), not its share, and so every row; with
 * more queued than free slots, its share. */
static void t_last_round_takes_the_time_left(void)
{
	struct study_fold_size f = fold("linear", 0);

	f.share = 0.5;
	f.left = 10;
	f.n_rem = f.n_this = 1;
	f.running = 1;
	study_auto_size_fold(&f);
	CHECK_MSG(fabs(f.per - 8.5) < 1e-9, "per %g", f.per);
	CHECK_MSG(f.rows == f.fold_rows, "rows %g", f.rows);
	CHECK(!f.leave_out);
	CHECK(f.expect <= f.left);
	/* the ratio says the trials take twice their estimate */
	f.ratio = 2;
	study_auto_size_fold(&f);
	CHECK_MSG(fabs(f.per - 4.25) < 1e-9, "per %g", f.per);
	/* three queued for one free slot: its share */
	f = fold("linear", 0);
	f.share = 0.5;
	f.left = 10;
	f.n_rem = 3;
	f.n_this = 1;
	f.running = 1;
	study_auto_size_fold(&f);
	CHECK_MSG(f.per == 0.5, "per %g", f.per);
	CHECK(f.rows < f.fold_rows);
}

/* A bag about to start whose 5 folds (3 rounds on 2 slots) would not end
 * in 3 s at 2 s each is made smaller until they do, not left out; one
 * whose prediction alone (2 s a fold) would not is left out. */
static void t_bag_shrinks_rather_than_left_out(void)
{
	struct study_fold_size f = fold("tree", 0);

	f.share = 2;
	f.left = 3;
	f.n_rem = f.n_this = 5;
	f.starts = 1;
	study_auto_size_fold(&f);
	CHECK_MSG(!f.leave_out, "left out: per %g expect %g", f.per, f.expect);
	CHECK_MSG(fabs(f.per - 0.85) < 1e-9, "per %g", f.per);
	CHECK(3 * f.expect <= f.left + 1e-9);
	CHECK(f.rows >= 1000 && f.rows < f.sample * 7.5);
	/* a forest made that small would still take what the least of the
	 * bags' trials took (1 s: one tree's data, prediction and metrics):
	 * three rounds of it do not fit in 2.5 s, and it is left out (a
	 * forest's bag started 0.9 s before the limit at a load of 9, and
	 * the limit stopped its folds) */
	f.model = "forest";
	f.budgeted = 1;
	f.left = 2.5;
	f.least = 1;
	study_auto_size_fold(&f);
	CHECK_MSG(f.leave_out, "expect %g", f.expect);
	f.least = 0;
	study_auto_size_fold(&f);
	CHECK(!f.leave_out);
	f = fold("tree", 0);
	f.share = 2;
	f.left = 3;
	f.n_rem = f.n_this = 5;
	f.starts = 1;
	f.pred = 2;
	study_auto_size_fold(&f);
	CHECK(f.leave_out);
	/* a bag already started goes on (its folds done would be lost) */
	f.starts = 0;
	study_auto_size_fold(&f);
	CHECK(!f.leave_out);
}

/* A model that takes a budget, with time for all its rows, still gets one
 * (before: none on all its rows, and a tree's folds ran 5.6 s against an
 * estimate of 2): a tree the time to the limit less its prediction (cut
 * short, a tree is a poor fold), a forest its fit's part of per; one that
 * would not train whole within per stops its units at its fit's part. */
static void t_budgeted_model_always_has_a_budget(void)
{
	struct study_fold_size f = fold("tree", 1);

	f.share = 20;
	f.left = 30;
	f.n_rem = 4;
	f.n_this = 4;
	study_auto_size_fold(&f);
	CHECK(f.rows == f.fold_rows);
	CHECK_MSG(f.budget > 0 && fabs(f.budget - (30 * 0.85 - 0.1)) < 1e-9, "budget %g",
		  f.budget);
	/* a forest with time for all its rows: its fit's part of per (it
	 * is only fewer trees when the estimate was short) */
	f.model = "forest";
	study_auto_size_fold(&f);
	CHECK(f.rows == f.fold_rows);
	CHECK_MSG(f.budget < 20 && f.budget > f.est - f.pred, "budget %g", f.budget);
	f.model = "tree";
	/* per 0.15 s, less than even the search's rows take (0.2 s): its
	 * rows the search's, its budget the fit's part of per (half) */
	f.share = 0.15;
	study_auto_size_fold(&f);
	CHECK(f.rows == f.sample);
	CHECK_MSG(fabs(f.budget - 0.075) < 1e-9, "budget %g", f.budget);
	CHECK(f.est == f.per);
}

/* A tree's fold given the seconds that, linear in the rows, would fit all
 * 576,000 of them (0.1 s for 50,000: 1.152 s, and 0.1 s of prediction)
 * trains on fewer (its fit grows as rows^1.3, measured: 11.5x the rows,
 * 23-27x the seconds); gbdt and fcnn grow as the rows. */
static void t_fit_grows_faster_than_rows(void)
{
	struct study_fold_size f = fold("tree", 0);
	double linear_all = 0.1 + 0.1 * 576000.0 / 50000;

	CHECK(study_auto_fit_exponent("tree") > 1.2);
	CHECK(study_auto_fit_exponent("linear") > 1.2);
	CHECK(study_auto_fit_exponent("forest") > 1.2);
	CHECK(study_auto_fit_exponent("gbdt") == 1.0);
	CHECK(study_auto_fit_exponent("fcnn") == 1.0);
	f.share = linear_all;
	f.left = 100;
	f.n_rem = 10;
	f.n_this = 5;
	study_auto_size_fold(&f);
	CHECK_MSG(f.rows > 300000 && f.rows < 360000, "rows %g", f.rows);
	/* the fit on all its rows is estimated at more than twice the
	 * linear guess */
	f.share = 100;
	study_auto_size_fold(&f);
	CHECK(f.rows == f.fold_rows);
	CHECK_MSG(f.est - f.pred > 2 * (linear_all - f.pred), "est %g", f.est);
	f = fold("gbdt", 0);
	f.share = linear_all;
	f.left = 100;
	f.n_rem = 10;
	f.n_this = 5;
	study_auto_size_fold(&f);
	CHECK_MSG(fabs(f.rows - 576000) < 1, "rows %g", f.rows);
}

/* The least a bag's fold is expected to take: its own bag's quickest
 * fold once one is done; before that the others' quickest apart from
 * their fit, never their whole seconds (W9: linear's bag after gbdt's,
 * whose quickest fold took 2.6 s of which 2.3 s fitting). */
static void t_fold_floor_is_not_another_models_fit(void)
{
	struct study_fold_done d[] = {
		{ 0, 5.6, 5.2 },	/* fcnn */
		{ 1, 2.6, 2.3 },	/* gbdt */
		{ 1, 2.9, 2.5 },
		{ 2, 3.9, 3.4 },	/* forest */
		{ 3, 0.0, NAN },	/* linear, queued */
	};
	double own = study_auto_fold_floor(d, 5, 1), other = study_auto_fold_floor(d, 5, 3);

	CHECK_NEAR(own, 2.6, 1e-12);
	CHECK_MSG(fabs(other - 0.3) < 1e-9, "linear's floor %g, want gbdt's 0.3 s apart from its fit",
		  other);
	/* a fit not known says nothing of the rest */
	d[1].fit = d[2].fit = NAN;
	CHECK_NEAR(study_auto_fold_floor(d, 5, 3), 0.4, 1e-9);
	CHECK_NEAR(study_auto_fold_floor(d, 0, 3), 0, 0);
	/* a bag whose own fold is done floors at it, however quick the rest */
	d[4].took = 0.7;
	d[4].fit = 0.1;
	CHECK_NEAR(study_auto_fold_floor(d, 5, 3), 0.7, 1e-12);
}

/* The bags' wall seconds, as list scheduling bounds them: five folds of
 * 4.4 s and five of 1.1 s on two slots end by (22 + 5.5) / 2 + 4.4 / 2 =
 * 15.95 s (it was (22 + 5.5) / 2 + 4.4 = 18.15, with 1.5 on top: the search
 * set 24 s of 30 aside for bags that took 16); one slot runs them one after
 * another, and a trial as long as all the work on many slots takes itself. */
static void t_bags_wall_is_list_scheduling(void)
{
	CHECK_NEAR(study_auto_bags_wall(27.5, 4.4, 2), 15.95, 1e-12);
	CHECK_NEAR(study_auto_bags_wall(27.5, 4.4, 1), 27.5, 1e-12);
	CHECK_NEAR(study_auto_bags_wall(8, 8, 4), 8, 1e-12);
	CHECK_NEAR(study_auto_bags_wall(0, 0, 2), 0, 0);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_bags_wall_is_list_scheduling),
	TEST(t_last_round_takes_the_time_left),
	TEST(t_bag_shrinks_rather_than_left_out),
	TEST(t_budgeted_model_always_has_a_budget),
	TEST(t_fit_grows_faster_than_rows),
	TEST(t_fold_floor_is_not_another_models_fit),
	{ 0 },
};
