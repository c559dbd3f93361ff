/* Unit tests of the HTML report (src/report/html.c, svg.c): quartiles and
 * axis ranges against hand-computed values, escaping, charts without
 * values, and a page built from a stored run whose names try to inject
 * markup. */
#include "runner.h"

#include "../../src/report/svg.h"
#include "cfl/report.h"
#include "cfl/store.h"

static void t_quartiles(void)
{
	/* numpy.percentile([1, 2, 3, 4], [0, 25, 50, 75, 100]) =
	 * 1, 1.75, 2.5, 3.25, 4 (linear interpolation) */
	static const double v[] = { 4, 1, 3, 2 };
	static const double one[] = { 7 };
	double q[5];

	svg_quartiles(v, 4, q);
	CHECK_NEAR(q[0], 1, 1e-15);
	CHECK_NEAR(q[1], 1.75, 1e-15);
	CHECK_NEAR(q[2], 2.5, 1e-15);
	CHECK_NEAR(q[3], 3.25, 1e-15);
	CHECK_NEAR(q[4], 4, 1e-15);
	svg_quartiles(one, 1, q);
	CHECK(q[0] == 7 && q[2] == 7 && q[4] == 7);
}

static void t_nice_range(void)
{
	double lo, hi, step;

	/* span 0.0667 / 6 ticks = 0.0111 -> step 0.01 */
	svg_nice_range(0.9, 0.966667, 6, &lo, &hi, &step);
	CHECK_NEAR(step, 0.01, 1e-15);
	CHECK_NEAR(lo, 0.9, 1e-12);
	CHECK_NEAR(hi, 0.97, 1e-12);
	/* 0..37, 5 ticks: 7.4 -> 10 (1, 2, 5 or 10 x 10^k: 7.4 rounds up) */
	svg_nice_range(0, 37, 5, &lo, &hi, &step);
	CHECK(step == 10 && lo == 0 && hi == 40);
	/* 0..33: 6.6 -> 5, up to 35 */
	svg_nice_range(0, 33, 5, &lo, &hi, &step);
	CHECK(step == 5 && lo == 0 && hi == 35);
	/* one value: a range around it */
	svg_nice_range(2, 2, 5, &lo, &hi, &step);
	CHECK(lo < 2 && hi > 2 && step > 0);
	svg_nice_range(0, 0, 5, &lo, &hi, &step);
	CHECK(lo < 0 && hi > 0);
}

static void t_escape_and_empty_charts(void)
{
	struct cfl_buf b;
	const char *names[] = { "a<b" };
	const size_t nv[] = { 1 };
	const double nan_v[] = { NAN }, *vals[] = { nan_v };
	const double x[] = { 1 }, y[] = { NAN };

	cfl_buf_init(&b);
	CHECK(svg_escape(&b, "a<b & \"c\" 'd'>") == 0);
	CHECK_STR(b.data, "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
	b.len = 0;
	CHECK(svg_box_strip(&b, "t", "x", 1, names, nv, vals, NULL) == 0);
	CHECK_CONTAINS(b.data, "no values to plot");
	b.len = 0;
	CHECK(svg_scatter(&b, "t", "x", "y", 1, x, y, NULL, 0, 0, 1) == 0);
	CHECK_CONTAINS(b.data, "no values to plot");
	/* log x needs positive values */
	{
		const double xs[] = { -1, 0 }, ys[] = { 1, 2 };

		b.len = 0;
		CHECK(svg_scatter(&b, "t", "x", "y", 2, xs, ys, NULL, 0, 1, 0) == 0);
		CHECK_CONTAINS(b.data, "no values to plot");
	}
	cfl_buf_release(&b);
}

/* A box for two values or more, a diamond for one; each value a point. */
static void t_box_strip_shapes(void)
{
	static const double a[] = { 0.9, 0.95, 1.0 }, e[] = { 0.97 };
	const char *names[] = { "tree", "mean" };
	const size_t nv[] = { 3, 1 };
	const double *vals[] = { a, e };
	const int hl[] = { 0, 1 };
	struct cfl_buf b;
	size_t circles = 0;

	cfl_buf_init(&b);
	CHECK(svg_box_strip(&b, "acc", "acc", 2, names, nv, vals, hl) == 0);
	for (const char *p = b.data; (p = strstr(p, "<circle")); p++)
		circles++;
	CHECK_INT(circles, 3);
	CHECK_CONTAINS(b.data, "<polygon");
	CHECK_CONTAINS(b.data, "<rect x=");
	CHECK(strstr(b.data, "<script") == NULL);
	cfl_buf_release(&b);
}

/* A stored run whose names carry markup: the page shows them as text. */
static void t_page_escapes_stored_names(void)
{
	char dir[] = "/tmp/cfl-html-XXXXXX", path[64], cmd[96];
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_run_info info = { 0 }, got;
	struct cfl_trial_state ts;
	struct cfl_metric_value m[1] = { { "acc", 0.5 } };
	struct cfl_trial_result res;
	struct cfl_params p;
	struct cfl_buf b;
	int64_t run, cand;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cfl.db", dir);
	st = cfl_store_open(path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st, "%s", err.msg);
	info.name = "<script>alert(1)</script>";
	info.kind = CFL_RUN_TUNE;
	info.command = "cfl tune \"x\" & <y>";
	CHECK(cfl_store_run_create(st, &info, &run, &err) == 0);
	cfl_params_init(&p);
	CHECK(cfl_params_set(&p, "act", "<b>relu</b>", &err) == 0);
	/* a value with commas stays one parameter */
	CHECK(cfl_params_set(&p, "hidden", "64,64", &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", &p, &cand, NULL,
					     &err) == 0);
	cfl_params_release(&p);
	CHECK(cfl_store_trial_ensure(st, run, cand, 0, -1, 1, &ts, &err) == 0);
	memset(&res, 0, sizeof(res));
	res.split[CFL_SPLIT_VALID].n_metrics = 1;
	res.split[CFL_SPLIT_VALID].metrics = m;
	CHECK(cfl_store_trial_done(st, ts.id, 1, &res, &err) == 0);
	CHECK(cfl_store_run_find(st, info.name, &got, &err) == 0);
	cfl_buf_init(&b);
	CHECK_MSG(cfl_report_html(st, &got, &b, &err) == 0, "%s", err.msg);
	CHECK(strstr(b.data, "<script") == NULL);
	CHECK(strstr(b.data, "<b>") == NULL);
	CHECK_CONTAINS(b.data, "&lt;script&gt;alert(1)&lt;/script&gt;");
	CHECK_CONTAINS(b.data, "cfl tune &quot;x&quot; &amp; &lt;y&gt;");
	CHECK_CONTAINS(b.data, "score against act");
	CHECK_CONTAINS(b.data, "score against hidden");
	CHECK_CONTAINS(b.data, ">64,64<");
	CHECK(strstr(b.data, "score against 64") == NULL);
	CHECK_CONTAINS(b.data, "&lt;b&gt;relu&lt;/b&gt;");
	CHECK_CONTAINS(b.data, "</html>");
	cfl_buf_release(&b);
	cfl_run_info_release(&got);
	cfl_store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_quartiles),
	TEST(t_nice_range),
	TEST(t_escape_and_empty_charts),
	TEST(t_box_strip_shapes),
	TEST(t_page_escapes_stored_names),
	{ 0 }
};
