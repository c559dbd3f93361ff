/* Unit tests of src/core/progress.c: the live progress line fits any width
 * (never more than width - 1 columns), keeps the richest form that fits
 * (per-model counts, then the best), and the terminal's width honours
 * $COLUMNS. */
#include "runner.h"

#include <math.h>

#include "cfl/core.h"

static const char *const models[] = { "linear", "tree", "baseline" };
static const size_t model_done[] = { 12, 7, 30 };

static struct cfl_progress_counts counts(void)
{
	struct cfl_progress_counts c = {
		.done = 49, .failed = 1, .running = 2, .total = 90,
		.elapsed = 75.4, .eta = 60.2, .have_best = 1, .best_metric = "acc",
		.best_value = 0.966667, .best_model = "tree",
		.n_models = 3, .models = models, .model_done = model_done,
	};
	return c;
}

static void t_never_wider_than_the_terminal(void)
{
	struct cfl_progress_counts c = counts();
	char line[1024];

	for (size_t w = 1; w <= 250; w++) {
		size_t n = cfl_progress_format(&c, w, line, sizeof(line));

		CHECK_INT(n, strlen(line));
		CHECK_MSG(n <= (w > 1 ? w - 1 : 1), "width %zu: %zu columns: %s", w, n, line);
		CHECK(n > 0);
	}
}

static void t_richest_form_that_fits(void)
{
	struct cfl_progress_counts c = counts();
	char line[1024];

	cfl_progress_format(&c, 250, line, sizeof(line));
	CHECK_MSG(strstr(line, "(linear 12, tree 7, baseline 30)") != NULL, "%s", line);
	CHECK_MSG(strstr(line, "best acc 0.9667 (tree)") != NULL, "%s", line);
	CHECK_MSG(strstr(line, "49/90 done") == line, "%s", line);
	CHECK_MSG(strstr(line, "ETA 01:00") != NULL, "%s", line);	/* the caller's */
	/* 80 columns: short words keep the best; no room for the models */
	cfl_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done, 2 run, 1 fail, 01:15 el, ETA 01:00, best acc 0.9667 (tree)"),
		  "%s", line);
	/* two models fit in 80, in place of the best */
	c.n_models = 2;
	cfl_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done (linear 12, tree 7), 2 running, 1 failed, "
			       "01:15 elapsed, ETA 01:00"), "%s", line);
	c.n_models = 3;
	/* narrow: the short form, the elapsed time always there */
	cfl_progress_format(&c, 48, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done, 2 run, 1 fail, 01:15 el, ETA 01:00"), "%s", line);
	cfl_progress_format(&c, 24, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 01:15 ETA 01:00"), "%s", line);
	/* no estimate yet (a resume before its first trial): elapsed, "--:--" */
	c.eta = -1;
	cfl_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(strstr(line, "01:15 el") && strstr(line, "ETA --:--"), "%s", line);
	c.eta = 60.2;
	/* a lower bound */
	c.eta_lower = 1;
	cfl_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(strstr(line, "ETA >01:00"), "%s", line);
	c.eta_lower = 0;
	/* per-model counts without a best yet */
	c.have_best = 0;
	cfl_progress_format(&c, 120, line, sizeof(line));
	CHECK_MSG(strstr(line, "(linear 12, tree 7, baseline 30)") && !strstr(line, "best"),
		  "%s", line);
}

static void t_term_width_honours_columns(void)
{
	setenv("COLUMNS", "123", 1);
	CHECK_INT(cfl_term_width(-1), 123);
	/* not a number, or none: the terminal (fd -1 has none), then 80 */
	setenv("COLUMNS", "12x", 1);
	CHECK_INT(cfl_term_width(-1), 80);
	unsetenv("COLUMNS");
	CHECK_INT(cfl_term_width(-1), 80);
	CHECK(!cfl_is_terminal(-1));
}

static void t_duration(void)
{
	char s[32];

	cfl_format_duration(-3, s, sizeof(s));
	CHECK(!strcmp(s, "00:00"));
	cfl_format_duration(59.6, s, sizeof(s));
	CHECK(!strcmp(s, "01:00"));
	cfl_format_duration(3725, s, sizeof(s));
	CHECK(!strcmp(s, "1:02:05"));
}

/* auto's live line: the richest form that fits, never wider than width - 1,
 * every phase */
static void t_auto_line(void)
{
	struct cfl_auto_counts c = {
		.phase = "search", .family = "forest", .n_cands = 57,
		.elapsed = 3.2, .left = 6.8,
	};
	char line[256];
	size_t n;

	n = cfl_auto_progress_format(&c, 80, line, sizeof(line));
	CHECK_STR(line, "auto: search forest, 57 candidates so far, 00:03 elapsed, 00:07 left");
	CHECK_INT(n, strlen(line));
	c.phase = "bags";
	c.done = 12;
	c.total = 25;
	cfl_auto_progress_format(&c, 80, line, sizeof(line));
	CHECK_STR(line, "auto: bags 12/25 folds, 00:03 elapsed, 00:07 left");
	c.phase = "ensembles";
	c.left = -1;	/* no limit */
	cfl_auto_progress_format(&c, 80, line, sizeof(line));
	CHECK_STR(line, "auto: ensembles, 00:03 elapsed");
	c.phase = "search";
	c.left = 6.8;
	cfl_auto_progress_format(&c, 44, line, sizeof(line));
	CHECK_STR(line, "search forest, 57 cand, 00:03, 00:07 left");
	for (size_t w = 1; w <= 120; w++) {
		n = cfl_auto_progress_format(&c, w, line, sizeof(line));
		CHECK_MSG(n <= (w > 1 ? w - 1 : 1) && n == strlen(line) && n > 0,
			  "width %zu: %zu columns: %s", w, n, line);
	}
}

/* The time left from per-model trial times, done and running: a slow
 * model's trials priced at its own time (not at a fast one's, nor at
 * elapsed / finished, which grew with the clock while slow trials ran), a
 * running trial at what is left of its model's mean, a model not timed
 * yet at its oldest running trial's age (a lower bound), unknown while
 * one has trials queued and none timed or running */
static void t_eta_per_model(void)
{
	struct cfl_eta_model m[2] = { { 9, 1, 1.0 }, { 10, 0, 0 } };
	struct cfl_eta_running run[2] = { { 1, 12.0 }, { 1, 3.0 } };
	int lower;

	/* fcnn (1) queued and not timed, none running: unknown */
	CHECK(cfl_eta_compute(m, 2, NULL, 0, 2, &lower) < 0);
	/* two fcnn trials running for 12 and 3 s: at least 12 s each */
	m[1].queued = 8;
	CHECK_NEAR(cfl_eta_compute(m, 2, run, 2, 2, &lower),
		   (9 * 1.0 + 8 * 12.0 + 0 + 9.0) / 2, 1e-9);
	CHECK(lower == 1);
	/* fcnn timed at 20 s: linear 9 x 1, fcnn 8 x 20 and the rests of
	 * its running trials, 8 and 17 s, over 2 slots; not a bound */
	m[1].n_done = 1;
	m[1].done_seconds = 20;
	CHECK_NEAR(cfl_eta_compute(m, 2, run, 2, 2, &lower),
		   (9 + 160 + 8 + 17) / 2.0, 1e-9);
	CHECK(lower == 0);
	/* a running trial past its mean adds nothing */
	run[0].age = 30;
	CHECK_NEAR(cfl_eta_compute(m, 2, run, 2, 2, &lower), (9 + 160 + 17) / 2.0, 1e-9);
	/* the last trial alone: one slot's worth, not halved over 2 slots */
	m[0].queued = 0;
	m[1].queued = 0;
	CHECK_NEAR(cfl_eta_compute(m, 2, run + 1, 1, 2, &lower), 17, 1e-9);
	/* two running, 17 and 1 s left: 17, not their mean over the slots */
	run[0].age = 19;
	CHECK_NEAR(cfl_eta_compute(m, 2, run, 2, 2, &lower), 17, 1e-9);
	/* nothing left */
	CHECK(cfl_eta_compute(m, 2, NULL, 0, 2, &lower) == 0);
}

/* The estimate counts down between updates; a lower bound does not */
static void t_eta_counts_down(void)
{
	struct cfl_eta e;
	int lower;

	cfl_eta_init(&e, 100);
	CHECK(cfl_eta_left(&e, 100, &lower) < 0);
	e.est = 50;
	e.at = 100;
	CHECK_NEAR(cfl_eta_left(&e, 110, &lower), 40, 1e-9);
	CHECK(cfl_eta_left(&e, 1000, &lower) == 0);
	e.lower = 1;
	CHECK_NEAR(cfl_eta_left(&e, 110, &lower), 50, 1e-9);
	CHECK(lower == 1);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_eta_per_model),
	TEST(t_eta_counts_down),
	TEST(t_auto_line),
	TEST(t_never_wider_than_the_terminal),
	TEST(t_richest_form_that_fits),
	TEST(t_term_width_honours_columns),
	TEST(t_duration),
	{ 0 },
};
