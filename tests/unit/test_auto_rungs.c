/* Unit tests of auto's successive halving on rows (study_auto_promote,
 * src/study/auto.c): ASHA's rule, a candidate finished at a rung goes on
 * to the next when it is among the top floor(n / eta) of those with a
 * score there and was not promoted yet; the best such first, the earlier
 * on ties; failed candidates (NaN) neither count nor go on. */
#include "runner.h"

#include <math.h>

#include "../../src/study/internal.h"

/* One finished: floor(1 / 2) = 0 promoted, whatever its score; two: the
 * better one. */
static void t_too_few_promote_none(void)
{
	double sc[2] = { 0.9, 0.1 };
	int up[2] = { 0, 0 };

	CHECK(study_auto_promote(sc, up, 0, 2) == -1);
	CHECK(study_auto_promote(sc, up, 1, 2) == -1);
	CHECK(study_auto_promote(sc, up, 2, 2) == 0);
	sc[0] = 0.05;
	CHECK(study_auto_promote(sc, up, 2, 2) == 1);
	/* eta 3: three needed */
	CHECK(study_auto_promote(sc, up, 2, 3) == -1);
	/* eta below 2 halves nothing */
	CHECK(study_auto_promote(sc, up, 2, 1) == -1);
}

/* Higher is better; the best not promoted of the top half goes on, one
 * at a time, until the top half is promoted. */
static void t_top_half_in_order(void)
{
	double sc[6] = { -0.5, -0.2, -0.9, -0.1, -0.4, -0.3 };
	int up[6] = { 0 };
	long k;

	/* top 3: -0.1 (3), -0.2 (1), -0.3 (5) */
	CHECK((k = study_auto_promote(sc, up, 6, 2)) == 3);
	up[k] = 1;
	CHECK((k = study_auto_promote(sc, up, 6, 2)) == 1);
	up[k] = 1;
	CHECK((k = study_auto_promote(sc, up, 6, 2)) == 5);
	up[k] = 1;
	CHECK(study_auto_promote(sc, up, 6, 2) == -1);
	/* one more finished, better than all: it goes on at once (ASHA
	 * promotes as results come, so more than the final top half may
	 * have gone on) */
	{
		double sc7[7] = { -0.5, -0.2, -0.9, -0.1, -0.4, -0.3, 0.0 };
		int up7[7] = { 0, 1, 0, 1, 0, 1, 0 };

		CHECK(study_auto_promote(sc7, up7, 7, 2) == 6);
		up7[6] = 1;
		CHECK(study_auto_promote(sc7, up7, 7, 2) == -1);
	}
}

/* A promoted candidate out of the top now is not promoted again, and one
 * in the top not promoted yet is found whatever its place. */
static void t_promoted_flags_are_respected(void)
{
	double sc[4] = { 0.1, 0.2, 0.3, 0.4 };
	int up[4] = { 1, 0, 0, 1 };

	/* top 2: 0.4 (3, promoted), 0.3 (2) */
	CHECK(study_auto_promote(sc, up, 4, 2) == 2);
	up[2] = 1;
	CHECK(study_auto_promote(sc, up, 4, 2) == -1);
}

/* NaN: a failed candidate; it does not count in n nor go on. */
static void t_failed_neither_count_nor_go_on(void)
{
	double sc[4] = { NAN, 0.5, NAN, 0.4 };
	int up[4] = { 0 };

	/* two scored: the top one */
	CHECK(study_auto_promote(sc, up, 4, 2) == 1);
	up[1] = 1;
	CHECK(study_auto_promote(sc, up, 4, 2) == -1);
	sc[1] = NAN;
	up[1] = 0;
	CHECK(study_auto_promote(sc, up, 4, 2) == -1);
}

/* Ties: the earlier first (the one asked first, as the store orders). */
static void t_ties_earlier_first(void)
{
	double sc[4] = { 0.7, 0.7, 0.7, 0.7 };
	int up[4] = { 0 };

	CHECK(study_auto_promote(sc, up, 4, 2) == 0);
	up[0] = 1;
	CHECK(study_auto_promote(sc, up, 4, 2) == 1);
	up[1] = 1;
	CHECK(study_auto_promote(sc, up, 4, 2) == -1);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_too_few_promote_none),
	TEST(t_top_half_in_order),
	TEST(t_promoted_flags_are_respected),
	TEST(t_failed_neither_count_nor_go_on),
	TEST(t_ties_earlier_first),
	{ 0 },
};
