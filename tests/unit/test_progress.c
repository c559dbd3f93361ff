/* Unit tests of src/core/progress.c: the live progress line fits any width
 * (never more than width - 1 columns), keeps the richest form that fits
 * (per-model counts, then the best), and the terminal's width honours
 * $COLUMNS. */
#include "runner.h"

#include "cfl/core.h"


static const char *const models[] = { "linear", "tree", "baseline" };
static const size_t model_done[] = { 12, 7, 30 };

static struct cfl_progress_counts counts(void)
{
	struct cfl_progress_counts c = {
		.done = 49, .failed = 1, .running = 2, .total = 90,
		.elapsed = 75.4, .have_best = 1, .best_metric = "acc",
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
	CHECK_MSG(strstr(line, "ETA 01:00") != NULL, "%s", line);	/* 75.4 s / 50 finished * 40 left */
	/* 80 columns: short words keep the best; no room for the models */
	cfl_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done, 2 run, 1 fail, ETA 01:00, best acc 0.9667 (tree)"),
		  "%s", line);
	/* two models fit in 80, in place of the best */
	c.n_models = 2;
	cfl_progress_format(&c, 80, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done (linear 12, tree 7), 2 running, 1 failed, "
			       "01:15 elapsed, ETA 01:00"), "%s", line);
	c.n_models = 3;
	/* narrow: the short form */
	cfl_progress_format(&c, 40, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 done, 2 run, 1 fail, ETA 01:00"), "%s", line);
	cfl_progress_format(&c, 20, line, sizeof(line));
	CHECK_MSG(!strcmp(line, "49/90 ETA 01:00"), "%s", line);
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

const struct cfl_test cfl_tests[] = {
	TEST(t_never_wider_than_the_terminal),
	TEST(t_richest_form_that_fits),
	TEST(t_term_width_honours_columns),
	TEST(t_duration),
	{ 0 },
};
