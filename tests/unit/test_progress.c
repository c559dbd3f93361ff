/* Unit tests of src/cli/progress.c: the live progress line fits any width
 * (never more than width - 1 columns), keeps the richest form that fits
 * (per-model counts, then the best), and the terminal's width honours
 * $COLUMNS. */
#include "runner.h"

#include <math.h>

#include "progress.h"

static const char *const models[] = { "linear", "tree", "baseline" };
static const size_t model_done[] = { 12, 7, 30 };

static struct cli_progress_counts counts(void)
{
	struct cli_progress_counts c = {
		.done = 49, .failed = 1, .running = 2, .total = 90,
		.elapsed = 75.4, .eta = 60.2, .have_best = 1, .best_metric = "acc",
		.best_value = 0.966667, .best_model = "tree",
		.n_models = 3, .models = models, .model_done = model_done,
	};
	return c;
}

static void t_never_wider_than_the_terminal(void)
{
	struct cli_progress_counts c = counts();
	char line[1024];

	for (size_t w = 1; w <= 250; w++) {
		size_t n = cli_progress_format(&c, w, line, sizeof(line));

		CHECK_INT(n, strlen(line));
		CHECK_MSG(n <= (w > 1 ? w - 1 : 1), "width %zu: %zu columns: %s", w, n, line);
		CHECK(n > 0);
	}
}

static void t_richest_form_that_fits(void)
{
	struct cli_progress_counts c = counts();
	char line[1024];

	cli_progress_format(&c, 250, line, sizeof(line));
	CHECK_MSG(strstr(line, "(linear 12, tree 7, baseline 30)") != NULL, "%s", line);
	CHECK_MSG(strstr(line, "best acc 0.9667 (tree)") != NULL, "%s", line);
	CHECK_MSG(strstr(line, "49/90 done") == line, "%s", line);
	CHECK_MSG(strstr(line, "ETA 01:00") != NULL, "%s", line);	/* the caller's */
	/* 80 columns: short words keep the best; no room for the models */
	cli_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done, 2 run, 1 fail, 01:15 el, ETA 01:00, best acc 0.9667 (tree)"),
		  "%s", line);
	/* two models fit in 80, in place of the best */
	c.n_models = 2;
	cli_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done (linear 12, tree 7), 2 running, 1 failed, "
			       "01:15 elapsed, ETA 01:00"), "%s", line);
	c.n_models = 3;
	/* narrow: the short form, the elapsed time always there */
	cli_progress_format(&c, 48, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done, 2 run, 1 fail, 01:15 el, ETA 01:00"), "%s", line);
	cli_progress_format(&c, 24, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 01:15 ETA 01:00"), "%s", line);
	/* no estimate yet (a resume before its first trial): elapsed, "--:--" */
	c.eta = -1;
	cli_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(strstr(line, "01:15 el") && strstr(line, "ETA --:--"), "%s", line);
	c.eta = 60.2;
	/* per-model counts without a best yet */
	c.have_best = 0;
	cli_progress_format(&c, 120, line, sizeof(line));
	CHECK_MSG(strstr(line, "(linear 12, tree 7, baseline 30)") && !strstr(line, "best"),
		  "%s", line);
}

static void t_term_width_honours_columns(void)
{
	setenv("COLUMNS", "123", 1);
	CHECK_INT(cli_term_width(-1), 123);
	/* not a number, or none: the terminal (fd -1 has none), then 80 */
	setenv("COLUMNS", "12x", 1);
	CHECK_INT(cli_term_width(-1), 80);
	unsetenv("COLUMNS");
	CHECK_INT(cli_term_width(-1), 80);
	CHECK(!cli_is_terminal(-1));
}

static void t_duration(void)
{
	char s[32];

	cli_format_duration(-3, s, sizeof(s));
	CHECK(!strcmp(s, "00:00"));
	cli_format_duration(59.6, s, sizeof(s));
	CHECK(!strcmp(s, "01:00"));
	cli_format_duration(3725, s, sizeof(s));
	CHECK(!strcmp(s, "1:02:05"));
}

/* auto's live line: the richest form that fits, never wider than width - 1,
 * every phase */
static void t_auto_line(void)
{
	struct cli_auto_counts c = {
		.phase = "search", .family = "forest", .n_cands = 57,
		.elapsed = 3.2, .left = 6.8,
	};
	char line[256];
	size_t n;

	n = cli_auto_progress_format(&c, 80, line, sizeof(line));
	CHECK_STR(line, "auto: search forest, 57 candidates so far, 00:03 elapsed, 00:07 left");
	CHECK_INT(n, strlen(line));
	c.phase = "bags";
	c.done = 12;
	c.total = 25;
	cli_auto_progress_format(&c, 80, line, sizeof(line));
	CHECK_STR(line, "auto: bags 12/25 folds, 00:03 elapsed, 00:07 left");
	c.phase = "ensembles";
	c.left = -1;	/* no limit */
	cli_auto_progress_format(&c, 80, line, sizeof(line));
	CHECK_STR(line, "auto: ensembles, 00:03 elapsed");
	c.phase = "search";
	c.left = 6.8;
	cli_auto_progress_format(&c, 44, line, sizeof(line));
	CHECK_STR(line, "search forest, 57 cand, 00:03, 00:07 left");
	for (size_t w = 1; w <= 120; w++) {
		n = cli_auto_progress_format(&c, w, line, sizeof(line));
		CHECK_MSG(n <= (w > 1 ? w - 1 : 1) && n == strlen(line) && n > 0,
			  "width %zu: %zu columns: %s", w, n, line);
	}
}

/* The time left from per-model trial times: a slow model's trials priced
 * at its own time, unknown while a model with trials left is not timed, the
 * estimate counting down between trials (not up with the elapsed time as
 * elapsed / finished * left did while slow trials ran) */
static void t_eta_per_model(void)
{
	static const char *const m[] = { "linear", "fcnn" };
	struct cli_eta e;

	cli_eta_init(&e, NULL, 0, 2, m, 2);
	e.left[0] = 10;
	e.left[1] = 10;
	CHECK(cli_eta_left(&e, 100) < 0);	/* nothing timed */
	cli_eta_finished(&e, "linear", 1.0, 2, 100);
	/* fcnn not timed: not priced at linear's second */
	CHECK(cli_eta_left(&e, 100) < 0);
	cli_eta_finished(&e, "fcnn", 20.0, 2, 120);
	/* linear 9 x 1 s, fcnn 9 x 20 s, on 2 slots */
	CHECK_NEAR(cli_eta_left(&e, 120), (9 + 180) / 2.0, 1e-9);
	/* counts down with the clock, never below 0 */
	CHECK_NEAR(cli_eta_left(&e, 130), (9 + 180) / 2.0 - 10, 1e-9);
	CHECK(cli_eta_left(&e, 1e6) == 0);
	/* a failure: one less to run, no timing */
	cli_eta_finished(&e, "fcnn", NAN, 2, 130);
	CHECK_NEAR(cli_eta_left(&e, 130), (9 + 160) / 2.0, 1e-9);
	/* the last trial alone: one slot's worth, not halved */
	memset(e.left, 0, sizeof(e.left));
	e.left[1] = 1;
	cli_eta_finished(&e, "linear", 1.0, 2, 140);
	CHECK_NEAR(cli_eta_left(&e, 140), 20, 1e-9);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_eta_per_model),
	TEST(t_auto_line),
	TEST(t_never_wider_than_the_terminal),
	TEST(t_richest_form_that_fits),
	TEST(t_term_width_honours_columns),
	TEST(t_duration),
	{ 0 },
};
