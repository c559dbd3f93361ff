/* Unit tests of src/report: the results table's statistics, its highlight
 * rules (ties, single row, lower-is-better), NaN and failed rows, the four
 * renderings against golden files in tests/golden/, and the table of a run
 * built from the store.
 *
 * CFL_UPDATE_GOLDEN=1 build/tests/test_report rewrites the golden files
 * (then read the diff before committing). */
#include "runner.h"

#include <stdint.h>

#include "cfl/data.h"
#include "cfl/report.h"
#include "cfl/store.h"
#include "cfl/study.h"

static void add_values(struct cfl_table *t, const char *row, const char *metric,
		       int sign, const double *v, size_t n)
{
	struct cfl_err err;
	int r = cfl_table_row(t, row, &err), m = cfl_table_metric(t, metric, sign,
								   &err);

	CHECK(r >= 0 && m >= 0);
	for (size_t i = 0; i < n; i++)
		CHECK(cfl_table_add(t, r, m, v[i], &err) == 0);
}

/* fcnn / tree / linear on acc and auc over 3 repeats; tree ties fcnn on auc
 * mean and wins acc. */
static void basic_table(struct cfl_table *t)
{
	static const double fcnn_acc[] = { 0.96, 0.94, 0.94 };
	static const double fcnn_auc[] = { 0.99, 1.0, 0.98 };
	static const double tree_acc[] = { 0.96, 0.96, 0.96 };
	static const double tree_auc[] = { 0.98, 0.99, 1.0 };
	static const double lin_acc[] = { 0.9, 0.92, 0.95 };
	static const double lin_auc[] = { 0.97, 0.97, 0.97 };

	cfl_table_init(t);
	add_values(t, "fcnn", "acc", 1, fcnn_acc, 3);
	add_values(t, "fcnn", "auc", 1, fcnn_auc, 3);
	add_values(t, "tree", "acc", 1, tree_acc, 3);
	add_values(t, "tree", "auc", 1, tree_auc, 3);
	add_values(t, "linear", "acc", 1, lin_acc, 3);
	add_values(t, "linear", "auc", 1, lin_auc, 3);
}

/* A regression table: mse (lower is better) and r2, with a row whose trials
 * all failed, a row with a NaN value and failed trials. */
static void mixed_table(struct cfl_table *t)
{
	static const double a_mse[] = { 0.5, 0.7 }, a_r2[] = { 0.8, 0.6 };
	static const double b_mse[] = { 0.2, 0.4 }, b_r2[] = { 0.9, NAN };
	struct cfl_err err;
	int r;

	cfl_table_init(t);
	add_values(t, "gbdt", "mse", -1, a_mse, 2);
	add_values(t, "gbdt", "r2", 1, a_r2, 2);
	add_values(t, "forest", "mse", -1, b_mse, 2);
	add_values(t, "forest", "r2", 1, b_r2, 2);
	cfl_table_set_failed(t, cfl_table_row(t, "forest", &err), 1);
	r = cfl_table_row(t, "fcnn", &err);
	CHECK(r == 2);
	cfl_table_set_failed(t, r, 2);
}

static char *render(struct cfl_table *t, enum cfl_table_format fmt)
{
	struct cfl_buf b;
	struct cfl_err err;

	cfl_buf_init(&b);
	CHECK_MSG(cfl_table_render(t, fmt, &b, &err) == 0, "%s", err.msg);
	CHECK(b.data != NULL);
	return b.data;
}

static void check_golden(const char *text, const char *name)
{
	char path[256];
	struct cfl_buf want;
	struct cfl_err err;

	snprintf(path, sizeof(path), "tests/golden/%s", name);
	if (getenv("CFL_UPDATE_GOLDEN")) {
		CHECK(cfl_write_file_atomic(path, text, strlen(text), &err) == 0);
		return;
	}
	cfl_buf_init(&want);
	CHECK_MSG(cfl_buf_read_file(&want, path, &err) == 0, "%s", err.msg);
	CHECK_MSG(strcmp(want.data, text) == 0, "%s differs; got:\n%s", path,
		  text);
	cfl_buf_release(&want);
}

static void t_stats(void)
{
	struct cfl_table t;

	basic_table(&t);
	cfl_table_compute(&t);
	CHECK_INT(t.n_rows, 3);
	CHECK_INT(t.n_metrics, 2);
	CHECK_NEAR(t.rows[0].mean[0], 0.9466666666666667, 1e-15);
	/* population std: sqrt(((2/150)^2 + 2 (1/150)^2) / 3) */
	CHECK_NEAR(t.rows[0].std[0], sqrt(6.0 / 3.0) / 150.0, 1e-15);
	CHECK_NEAR(t.rows[0].score[0], t.rows[0].mean[0] - t.rows[0].std[0],
		   1e-15);
	CHECK(t.rows[1].std[0] == 0);
	CHECK_NEAR(t.rows[1].score[0], 0.96, 1e-15);
	cfl_table_release(&t);
	cfl_table_release(&t);	/* released twice: harmless */
}

/* Equal values leave a std of float noise (1.1e-16 for three 0.95s): it
 * is 0 in every format, its score the mean, and a tie with the other 0 */
static void t_float_noise_std_is_zero(void)
{
	static const double a[] = { 0.95, 0.95, 0.95 }, b[] = { 0.96, 0.96 },
			    c[] = { 0.9, 0.96 };
	struct cfl_table t;
	char *csv, *json;

	cfl_table_init(&t);
	add_values(&t, "a", "acc", 1, a, 3);
	add_values(&t, "b", "acc", 1, b, 2);
	add_values(&t, "c", "acc", 1, c, 2);
	cfl_table_compute(&t);
	CHECK(t.rows[0].std[0] == 0);
	CHECK(t.rows[0].score[0] == t.rows[0].mean[0]);
	CHECK(cfl_table_is_best(&t, 0, 0, CFL_STAT_STD));
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_STD));
	CHECK(!cfl_table_is_best(&t, 2, 0, CFL_STAT_STD));
	csv = render(&t, CFL_TABLE_CSV);
	CHECK_MSG(strstr(csv, "\na,0,0.94999999999999996,0,0.94999999999999996\n"),
		  "%s", csv);
	CHECK_MSG(!strstr(csv, "e-1"), "%s", csv);
	json = render(&t, CFL_TABLE_JSON);
	CHECK_MSG(!strstr(json, "e-1"), "%s", json);
	free(csv);
	free(json);
	cfl_table_release(&t);
}

static void t_highlight_rules(void)
{
	struct cfl_table t;

	basic_table(&t);
	cfl_table_compute(&t);
	/* acc: tree best on all three */
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_MEAN));
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_STD));
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_SCORE));
	CHECK(!cfl_table_is_best(&t, 0, 0, CFL_STAT_MEAN));
	/* auc mean: fcnn and tree tie at 0.99 (summed in another order) */
	CHECK(cfl_table_is_best(&t, 0, 1, CFL_STAT_MEAN));
	CHECK(cfl_table_is_best(&t, 1, 1, CFL_STAT_MEAN));
	CHECK(!cfl_table_is_best(&t, 2, 1, CFL_STAT_MEAN));
	/* auc std: linear's 0 */
	CHECK(cfl_table_is_best(&t, 2, 1, CFL_STAT_STD));
	CHECK(!cfl_table_is_best(&t, 0, 1, CFL_STAT_STD));
	cfl_table_release(&t);
}

static void t_single_row_has_no_marks(void)
{
	static const double v[] = { 0.5, 0.6 };
	struct cfl_table t;
	char *s;

	cfl_table_init(&t);
	add_values(&t, "fcnn", "acc", 1, v, 2);
	s = render(&t, CFL_TABLE_TEXT);
	CHECK(strstr(s, "-- ") == NULL);
	CHECK_CONTAINS(s, "0.550000");
	CHECK_CONTAINS(s, "0.050000");
	CHECK_CONTAINS(s, "0.500000");
	free(s);
	s = render(&t, CFL_TABLE_MD);
	CHECK(strstr(s, "**") == NULL);
	free(s);
	CHECK(!cfl_table_is_best(&t, 0, 0, CFL_STAT_MEAN));
	cfl_table_release(&t);
}

static void t_lower_is_better(void)
{
	struct cfl_table t;

	mixed_table(&t);
	cfl_table_compute(&t);
	/* mse: forest 0.3 beats gbdt 0.6; score = -(mean + std) */
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_MEAN));
	CHECK(!cfl_table_is_best(&t, 0, 0, CFL_STAT_MEAN));
	CHECK_NEAR(t.rows[1].score[0], -(0.3 + 0.1), 1e-15);
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_SCORE));
	/* equal std 0.1: a tie */
	CHECK(cfl_table_is_best(&t, 0, 0, CFL_STAT_STD));
	CHECK(cfl_table_is_best(&t, 1, 0, CFL_STAT_STD));
	cfl_table_release(&t);
}

static void t_nan_and_failed_rows(void)
{
	struct cfl_table t;
	char *s;

	mixed_table(&t);
	cfl_table_compute(&t);
	/* forest's r2 has a NaN: nan, never best; gbdt best by default */
	CHECK(isnan(t.rows[1].mean[1]));
	CHECK(!cfl_table_is_best(&t, 1, 1, CFL_STAT_MEAN));
	CHECK(cfl_table_is_best(&t, 0, 1, CFL_STAT_MEAN));
	/* fcnn: no values at all */
	CHECK(isnan(t.rows[2].mean[0]));
	CHECK(!cfl_table_is_best(&t, 2, 0, CFL_STAT_STD));
	s = render(&t, CFL_TABLE_TEXT);
	CHECK_CONTAINS(s, "failed");
	CHECK_CONTAINS(s, "nan");
	free(s);
	cfl_table_release(&t);

	/* an empty table renders too */
	cfl_table_init(&t);
	for (int f = CFL_TABLE_TEXT; f <= CFL_TABLE_COMPACT; f++)
		free(render(&t, f));
	cfl_table_release(&t);
}

static void t_golden_basic(void)
{
	struct cfl_table t;
	char *s;

	basic_table(&t);
	check_golden(s = render(&t, CFL_TABLE_TEXT), "table_basic.txt");
	free(s);
	check_golden(s = render(&t, CFL_TABLE_MD), "table_basic.md");
	free(s);
	check_golden(s = render(&t, CFL_TABLE_CSV), "table_basic.csv");
	free(s);
	check_golden(s = render(&t, CFL_TABLE_JSON), "table_basic.json");
	free(s);
	cfl_table_release(&t);
}

static void t_golden_mixed(void)
{
	struct cfl_table t;
	char *s;

	mixed_table(&t);
	check_golden(s = render(&t, CFL_TABLE_TEXT), "table_mixed.txt");
	free(s);
	check_golden(s = render(&t, CFL_TABLE_MD), "table_mixed.md");
	free(s);
	check_golden(s = render(&t, CFL_TABLE_CSV), "table_mixed.csv");
	free(s);
	check_golden(s = render(&t, CFL_TABLE_JSON), "table_mixed.json");
	free(s);
	cfl_table_release(&t);
}

/* ---- the terminal: compact form, width, colour, leaderboard order ---- */

static char *render_styled(struct cfl_table *t, enum cfl_table_format fmt,
			   size_t width, int color, int sort)
{
	struct cfl_table_style style = { width, color, sort };
	struct cfl_buf b;
	struct cfl_err err;

	cfl_buf_init(&b);
	CHECK_MSG(cfl_table_render_styled(t, fmt, &style, &b, &err) == 0, "%s",
		  err.msg);
	CHECK(b.data != NULL);
	return b.data;
}

/* The widest line in columns: escapes and UTF-8 continuation bytes count
 * nothing. */
static size_t widest(const char *s)
{
	size_t best = 0, cur = 0;

	for (; *s; s++) {
		if (*s == '\n') {
			cur = 0;
			continue;
		}
		if (*s == '\033') {
			while (*s && *s != 'm')
				s++;
			continue;
		}
		if (((unsigned char)*s & 0xC0) != 0x80 && ++cur > best)
			best = cur;
	}
	return best;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Four metrics: the full table is far wider than 80 columns. */
static void wide_table(struct cfl_table *t)
{
	static const double a[] = { 0.9, 0.8 }, b[] = { 0.7, 0.75 };

	basic_table(t);
	add_values(t, "fcnn", "f1", 1, a, 2);
	add_values(t, "tree", "f1", 1, b, 2);
	add_values(t, "linear", "f1", 1, a, 1);
	add_values(t, "fcnn", "logloss", -1, b, 2);
	add_values(t, "tree", "logloss", -1, a, 2);
	add_values(t, "linear", "logloss", -1, b, 1);
}

static void t_compact_same_numbers_and_marks(void)
{
	struct cfl_table t;
	char *full, *compact, num[64];

	wide_table(&t);
	full = render(&t, CFL_TABLE_TEXT);
	compact = render_styled(&t, CFL_TABLE_TEXT, 80, 0, 0);
	CHECK_MSG(widest(full) > 80, "the full table fits: %zu", widest(full));
	CHECK_MSG(widest(compact) <= 80, "%zu columns:\n%s", widest(compact), compact);
	CHECK(strstr(compact, "±") != NULL);
	/* every number of the full table is in the compact one, and as
	 * many best cells are marked */
	cfl_table_compute(&t);
	for (size_t r = 0; r < t.n_rows; r++)
		for (size_t m = 0; m < t.n_metrics; m++) {
			double v[3] = { t.rows[r].mean[m], t.rows[r].std[m], t.rows[r].score[m] };

			for (int s = 0; s < 3; s++) {
				snprintf(num, sizeof(num), " %.6f", v[s] == 0 ? 0.0 : v[s]);
				CHECK_MSG(strstr(full, num + 1) && strstr(compact, num + 1),
					  "%s missing", num);
			}
		}
	/* "-- x --" in full (two "-- " each: a cell has a space either
	 * side); "x*" in compact, plus the legend's "*" */
	CHECK_INT(count(full, "-- ") / 2, count(compact, "*") - 1);
	CHECK(count(full, "-- ") > 0);
	CHECK(strstr(compact, "-- ") == NULL);
	free(full);
	free(compact);
	cfl_table_release(&t);
}

static void t_width_choice(void)
{
	struct cfl_table t;
	char *plain, *s;

	basic_table(&t);
	plain = render(&t, CFL_TABLE_TEXT);
	/* no limit, or a limit the full table fits: the full table, byte
	 * for byte */
	s = render_styled(&t, CFL_TABLE_TEXT, 0, 0, 0);
	CHECK(strcmp(s, plain) == 0);
	free(s);
	s = render_styled(&t, CFL_TABLE_TEXT, widest(plain), 0, 0);
	CHECK(strcmp(s, plain) == 0);
	free(s);
	/* one column less: compact */
	s = render_styled(&t, CFL_TABLE_TEXT, widest(plain) - 1, 0, 0);
	CHECK(strcmp(s, plain) != 0);
	CHECK(strstr(s, "±") != NULL);
	CHECK(widest(s) < widest(plain));
	free(s);
	free(plain);
	cfl_table_release(&t);
}

static void t_compact_blocks_fit(void)
{
	struct cfl_table t;
	char *s;

	wide_table(&t);
	/* 45 columns hold one metric per block: four blocks */
	s = render_styled(&t, CFL_TABLE_COMPACT, 45, 0, 0);
	CHECK_MSG(widest(s) <= 45, "%zu:\n%s", widest(s), s);
	CHECK_INT(count(s, " metrics"), 4);
	free(s);
	/* no limit: one block */
	s = render_styled(&t, CFL_TABLE_COMPACT, 0, 0, 0);
	CHECK_INT(count(s, " metrics"), 1);
	CHECK(widest(s) > 80);
	free(s);
	/* narrower than one metric: one metric per block still, never none */
	s = render_styled(&t, CFL_TABLE_COMPACT, 20, 0, 0);
	CHECK_INT(count(s, " metrics"), 4);
	free(s);
	cfl_table_release(&t);
}

static void t_compact_golden(void)
{
	struct cfl_table t;
	char *s;

	mixed_table(&t);
	check_golden(s = render(&t, CFL_TABLE_COMPACT), "table_mixed_compact.txt");
	free(s);
	cfl_table_release(&t);
}

static void t_color_marks(void)
{
	struct cfl_table t;
	char *plain, *s;
	size_t marks;

	basic_table(&t);
	plain = render(&t, CFL_TABLE_TEXT);
	marks = count(plain, "-- ") / 2;	/* "-- x --", a space either side */
	CHECK(marks > 0);
	s = render_styled(&t, CFL_TABLE_TEXT, 0, 1, 0);
	CHECK(strstr(s, "-- ") == NULL);
	CHECK_INT(count(s, "\033[1;32m"), marks);
	CHECK_INT(count(s, "\033[0m"), marks);
	free(s);
	s = render_styled(&t, CFL_TABLE_COMPACT, 0, 1, 0);
	CHECK(strchr(s, '*') == NULL);
	CHECK_INT(count(s, "\033[1;32m"), marks);
	free(s);
	/* Markdown keeps its bold, no escapes */
	s = render_styled(&t, CFL_TABLE_MD, 0, 1, 0);
	CHECK(strchr(s, '\033') == NULL);
	free(s);
	free(plain);
	cfl_table_release(&t);
}

static void t_sort_score(void)
{
	struct cfl_table t;
	char *s;

	/* acc scores: fcnn 0.946667 - 0.009428, tree 0.96, linear 0.923 - ... */
	basic_table(&t);
	s = render_styled(&t, CFL_TABLE_CSV, 0, 0, 1);
	CHECK_MSG(strstr(s, "\ntree,") && strstr(s, "\nfcnn,") && strstr(s, "\nlinear,") &&
		  strstr(s, "\ntree,") < strstr(s, "\nfcnn,") &&
		  strstr(s, "\nfcnn,") < strstr(s, "\nlinear,"), "%s", s);
	free(s);
	for (size_t r = 1; r < t.n_rows; r++)
		CHECK(t.rows[r - 1].score[0] >= t.rows[r].score[0]);
	cfl_table_release(&t);
	/* rows without a score go last, equal ones keep their order */
	mixed_table(&t);
	cfl_table_sort_by_score(&t);
	CHECK(strcmp(t.rows[0].name, "forest") == 0);
	CHECK(strcmp(t.rows[1].name, "gbdt") == 0);
	CHECK(strcmp(t.rows[2].name, "fcnn") == 0);
	cfl_table_release(&t);
}

static void t_bad_input(void)
{
	struct cfl_table t;
	struct cfl_err err;

	cfl_table_init(&t);
	CHECK_INT(cfl_table_metric(&t, "acc", 0, &err), -1);
	CHECK_CONTAINS(err.msg, "sign");
	CHECK_INT(cfl_table_metric(&t, "acc", 1, &err), 0);
	CHECK_INT(cfl_table_metric(&t, "acc", 1, &err), 0);
	CHECK_INT(cfl_table_add(&t, 0, 0, 1.0, &err), -1);
	CHECK_INT(cfl_table_row(&t, "a, \"quoted\" | row", &err), 0);
	CHECK_INT(cfl_table_add(&t, 0, 1, 1.0, &err), -1);
	CHECK_INT(cfl_table_add(&t, 0, 0, 1.0, &err), 0);
	{
		char *s = render(&t, CFL_TABLE_CSV);

		CHECK_CONTAINS(s, "\"a, \"\"quoted\"\" | row\",0,1,0,1");
		free(s);
		s = render(&t, CFL_TABLE_JSON);
		CHECK_CONTAINS(s, "\"a, \\\"quoted\\\" | row\"");
		free(s);
		s = render(&t, CFL_TABLE_MD);
		CHECK_CONTAINS(s, "a, \"quoted\" \\| row");
		free(s);
	}
	CHECK_INT(cfl_table_format_lookup("md"), CFL_TABLE_MD);
	CHECK_INT(cfl_table_format_lookup("table"), CFL_TABLE_TEXT);
	CHECK_INT(cfl_table_format_lookup("html"), -1);
	cfl_table_release(&t);
}

/* The table of a stored run: rows per model in candidate order, failed
 * counts from the trials, ensembles as rows. */
static void t_from_run(void)
{
	char dir[] = "/tmp/cfl-report-XXXXXX", path[64], cmd[96];
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_run_info info = { 0 };
	struct cfl_table t;
	struct cfl_trial_state ts;
	struct cfl_metric_value m[2] = { { "acc", 0 }, { "mse", 0 } };
	struct cfl_trial_result res;
	struct cfl_ensemble_info ei = { "mean", "mean", NULL, -1 };
	int64_t run, c[2];
	const char *models[2] = { "tree", "fcnn" };

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cfl.db", dir);
	st = cfl_store_open(path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	info.name = "r";
	CHECK(cfl_store_run_create(st, &info, &run, &err) == 0);
	memset(&res, 0, sizeof(res));
	res.split[CFL_SPLIT_TEST].n_metrics = 2;
	res.split[CFL_SPLIT_TEST].metrics = m;
	for (int k = 0; k < 2; k++) {
		CHECK(cfl_store_candidate_get_or_add(st, run, models[k], NULL,
						     &c[k], NULL, &err) == 0);
		for (int r = 0; r < 3; r++) {
			CHECK(cfl_store_trial_ensure(st, run, c[k], r, -1, r,
						     &ts, &err) == 0);
			if (k == 1 && r == 2) {
				CHECK(cfl_store_trial_failed(st, ts.id, 1, "exit 3",
							     CFL_TRIAL_FAILED,
							     &err) == 0);
				continue;
			}
			m[0].value = 0.9 + 0.01 * r + 0.05 * k;
			m[1].value = 0.1 * (r + 1);
			CHECK(cfl_store_trial_done(st, ts.id, 1, &res, &err) == 0);
		}
	}
	m[0].value = 0.99;
	m[1].value = 0.05;
	CHECK(cfl_store_ensemble_add(st, run, &ei, &res, NULL, &err) == 0);

	cfl_table_init(&t);
	CHECK_MSG(cfl_table_from_run(&t, st, run, CFL_SPLIT_TEST,
				     CFL_ROWS_BY_MODEL, &err) == 0, "%s", err.msg);
	cfl_table_compute(&t);
	CHECK_INT(t.n_rows, 3);
	CHECK_STR(t.rows[0].name, "tree");
	CHECK_STR(t.rows[1].name, "fcnn");
	CHECK_STR(t.rows[2].name, "mean");
	CHECK_INT(t.n_metrics, 2);
	CHECK_INT(t.signs[0], 1);
	CHECK_INT(t.signs[1], -1);
	CHECK_INT(t.rows[0].n_values[0], 3);
	CHECK_INT(t.rows[1].n_values[0], 2);
	CHECK_INT(t.rows[1].n_failed, 1);
	CHECK_NEAR(t.rows[1].mean[0], 0.955, 1e-12);
	CHECK(t.rows[2].std[0] == 0);
	CHECK(cfl_table_is_best(&t, 2, 1, CFL_STAT_MEAN));
	cfl_table_release(&t);

	cfl_table_init(&t);
	CHECK(cfl_table_from_run(&t, st, run, CFL_SPLIT_TEST,
				 CFL_ROWS_BY_CANDIDATE, &err) == 0);
	CHECK_INT(strlen(t.rows[0].name), 8);
	cfl_table_release(&t);
	cfl_store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* cfl runs' listing: a header and a line per run with its trials; a
 * narrow width leaves out the kind, then the start, then the dataset;
 * an empty database lists nothing. */
static void t_runs_listing(void)
{
	char dir[] = "/tmp/cfl-report-XXXXXX", path[64], cmd[96];
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_run_info info = { 0 };
	struct cfl_trial_state ts;
	struct cfl_buf b;
	int64_t run, cand;
	size_t n;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cfl.db", dir);
	st = cfl_store_open(path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	cfl_buf_init(&b);
	CHECK_INT(cfl_report_runs(st, 80, &b, &n, &err), 0);
	CHECK_INT(n, 0);
	CHECK(b.len == 0);
	info.name = "first-run";
	info.dataset = "some/dir/iris.csv";
	CHECK(cfl_store_run_create(st, &info, &run, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "tree", NULL, &cand, NULL, &err) == 0);
	CHECK(cfl_store_trial_ensure(st, run, cand, 0, -1, 0, &ts, &err) == 0);
	CHECK(cfl_store_trial_failed(st, ts.id, 1, "exit 3", CFL_TRIAL_FAILED, &err) == 0);
	CHECK_INT(cfl_report_runs(st, 200, &b, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK(!strncmp(b.data, "name       kind    started (UTC)", 32));
	CHECK_CONTAINS(b.data, "\nfirst-run  repeat  ");
	CHECK_CONTAINS(b.data, "  iris.csv  ");
	CHECK_CONTAINS(b.data, "0/1, 1 failed");
	b.len = 0;
	CHECK_INT(cfl_report_runs(st, 30, &b, &n, &err), 0);
	CHECK(strstr(b.data, "repeat") == NULL);
	CHECK(strstr(b.data, "iris.csv") == NULL);
	CHECK(strstr(b.data, "started") == NULL);
	cfl_buf_release(&b);
	cfl_store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* auto's leaderboard rendered from a summary: the rows in the summary's
 * order (the renderer never sorts: the ranking is the study's), the rule
 * in one sentence above the table (greedy first, then the proper score
 * out of fold, the user's metric beside), undefined values as "-" / empty
 * / null, every text line within 80 columns */
static void t_leaderboard_from_summary(void)
{
	struct cfl_study_auto_row rows[3] = {
		{ .name = "greedy", .method = "greedy", .cv = 0.97, .loss = 0.08,
		  .valid = 1.0, .test = 0.93, .seconds = 0.5, .n_trials = 10 },
		{ .name = "gbdt:75e792da", .method = "bag", .cv = 0.97, .loss = 0.09,
		  .valid = NAN, .test = 0.90, .seconds = 0.25, .n_trials = 5 },
		{ .name = "mean", .method = "mean", .cv = 0.96, .loss = 0.10,
		  .valid = 1.0, .test = 0.93, .seconds = 0.5, .n_trials = 10 },
	};
	struct cfl_study_auto_family fam = {
		.model = "gbdt", .n_cands = 12, .n_done = 11, .n_failed = 1,
		.best_hex = "75e792da", .best_valid = 0.09, .seconds = 0.8,
	};
	struct cfl_report_auto_entry e[3] = {
		{ 2, "gbdt:75e792da 0.5, linear:2ef38b55 0.5" }, { 5, "5 trials" },
		{ 2, "gbdt:75e792da 0.5, linear:2ef38b55 0.5" },
	};
	struct cfl_study_auto_summary sum;
	struct cfl_buf b;
	struct cfl_err err;
	const char *p, *line;
	char flat[2048];

	memset(&sum, 0, sizeof(sum));
	snprintf(sum.metric, sizeof(sum.metric), "acc");
	sum.sign = 1;
	snprintf(sum.score_metric, sizeof(sum.score_metric), "logloss");
	sum.score_sign = -1;
	sum.cv_search = 1;
	sum.n_rows = 3;
	sum.rows = rows;
	sum.n_families = 1;
	sum.families = &fam;

	cfl_buf_init(&b);
	CHECK(cfl_report_leaderboard(&sum, e, CFL_TABLE_TEXT, 0, 0, &b, &err) == 0);
	CHECK_MSG(!strncmp(b.data, "Leaderboard by acc\nGreedy ensemble selection", 44),
		  "%s", b.data);
	p = strstr(b.data, "rank entry");
	CHECK_MSG(p != NULL, "%s", b.data);
	/* the sentence, unwrapped */
	snprintf(flat, sizeof(flat), "%.*s", p ? (int)(p - b.data) : 0, b.data);
	for (char *q = flat; *q; q++)
		if (*q == '\n')
			*q = ' ';
	CHECK_MSG(strstr(flat, "ranks first; the other entries follow by logloss on "
			 "the out-of-fold predictions of the training rows, lowest "
			 "first, with acc beside; the test score chose nothing."),
		  "%s", flat);
	CHECK_MSG(p && strstr(p, "logloss") && strstr(p, "members"), "%s", b.data);
	CHECK_MSG(strstr(b.data, "\n1    greedy ") && strstr(b.data, "\n2    gbdt:75e792da ") &&
		  strstr(b.data, "\n3    mean "), "%s", b.data);
	/* the bag's proper score, oof and test */
	CHECK_MSG(strstr(b.data, " 0.090000  0.970000  0.900000 "), "%s", b.data);
	CHECK_MSG(strstr(b.data, "candidates scored by logloss out of fold"), "%s", b.data);
	for (line = b.data; *line;) {
		size_t n = strcspn(line, "\n");

		CHECK_MSG(n <= 80, "%.*s", (int)n, line);
		/* no wrapped line of the sentence reads as a row */
		if (line > b.data && p && line < p)
			CHECK_MSG(!(line[0] >= '0' && line[0] <= '9'), "%.*s", (int)n, line);
		line += n + (line[n] != 0);
	}
	cfl_buf_release(&b);

	cfl_buf_init(&b);
	CHECK(cfl_report_leaderboard(&sum, e, CFL_TABLE_CSV, 0, 0, &b, &err) == 0);
	CHECK_MSG(strstr(b.data, "\n2,gbdt:75e792da,bag,bag,acc,0.96999999999999997,,0.90000000000000002,"),
		  "%s", b.data);
	CHECK_MSG(strstr(b.data, ",5,5 trials,logloss,0.0899999"),
		  "%s", b.data);
	cfl_buf_release(&b);

	cfl_buf_init(&b);
	CHECK(cfl_report_leaderboard(&sum, e, CFL_TABLE_JSON, CFL_BOARD_ONLY, 0, &b, &err) == 0);
	CHECK_MSG(b.data[0] == '[' && strstr(b.data, "\"valid\": null"), "%s", b.data);
	CHECK_MSG(!strstr(b.data, "\"search\""), "%s", b.data);
	cfl_buf_release(&b);

	cfl_buf_init(&b);
	CHECK(cfl_report_leaderboard(&sum, e, CFL_TABLE_JSON, 0, 0, &b, &err) == 0);
	CHECK_MSG(strstr(b.data, "\"ranking\": \"Greedy ensemble selection") &&
		  strstr(b.data, "\"search\": [") && !strstr(b.data, "\001"), "%s", b.data);
	cfl_buf_release(&b);

	/* regression: the metric is the proper score, lower is better */
	sum.sign = sum.score_sign = -1;
	snprintf(sum.metric, sizeof(sum.metric), "mse");
	snprintf(sum.score_metric, sizeof(sum.score_metric), "mse");
	cfl_buf_init(&b);
	CHECK(cfl_report_leaderboard(&sum, NULL, CFL_TABLE_MD, 0, 0, &b, &err) == 0);
	CHECK_MSG(strstr(b.data, "follow by mse on the out-of-fold predictions of the "
			 "training rows, lowest first; the test score") != NULL, "%s", b.data);
	CHECK_MSG(strstr(b.data, "| 1 | **greedy** | ensemble |"), "%s", b.data);
	cfl_buf_release(&b);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_runs_listing),
	TEST(t_leaderboard_from_summary),
	TEST(t_stats),
	TEST(t_float_noise_std_is_zero),
	TEST(t_highlight_rules),
	TEST(t_single_row_has_no_marks),
	TEST(t_lower_is_better),
	TEST(t_nan_and_failed_rows),
	TEST(t_golden_basic),
	TEST(t_golden_mixed),
	TEST(t_compact_same_numbers_and_marks),
	TEST(t_width_choice),
	TEST(t_compact_blocks_fit),
	TEST(t_compact_golden),
	TEST(t_color_marks),
	TEST(t_sort_score),
	TEST(t_bad_input),
	TEST(t_from_run),
	{ 0 }
};
