/* Unit tests of the HTML report (src/report/html.c, svg.c): quartiles and
 * axis ranges against hand-computed values, escaping, charts without
 * values, a page built from a stored run whose names try to inject
 * markup, and the ensembles' members: their stored text parsed (today's
 * format, the one before stacking coefficients, malformed ones) and the
 * page's members table. */
#include "runner.h"

#include "../../src/report/internal.h"
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

	cfl_svg_quartiles(v, 4, q);
	CHECK_NEAR(q[0], 1, 1e-15);
	CHECK_NEAR(q[1], 1.75, 1e-15);
	CHECK_NEAR(q[2], 2.5, 1e-15);
	CHECK_NEAR(q[3], 3.25, 1e-15);
	CHECK_NEAR(q[4], 4, 1e-15);
	cfl_svg_quartiles(one, 1, q);
	CHECK(q[0] == 7 && q[2] == 7 && q[4] == 7);
}

static void t_nice_range(void)
{
	double lo, hi, step;

	/* span 0.0667 / 6 ticks = 0.0111 -> step 0.01 */
	cfl_svg_nice_range(0.9, 0.966667, 6, &lo, &hi, &step);
	CHECK_NEAR(step, 0.01, 1e-15);
	CHECK_NEAR(lo, 0.9, 1e-12);
	CHECK_NEAR(hi, 0.97, 1e-12);
	/* 0..37, 5 ticks: 7.4 -> 10 (1, 2, 5 or 10 x 10^k: 7.4 rounds up) */
	cfl_svg_nice_range(0, 37, 5, &lo, &hi, &step);
	CHECK(step == 10 && lo == 0 && hi == 40);
	/* 0..33: 6.6 -> 5, up to 35 */
	cfl_svg_nice_range(0, 33, 5, &lo, &hi, &step);
	CHECK(step == 5 && lo == 0 && hi == 35);
	/* one value: a range around it */
	cfl_svg_nice_range(2, 2, 5, &lo, &hi, &step);
	CHECK(lo < 2 && hi > 2 && step > 0);
	cfl_svg_nice_range(0, 0, 5, &lo, &hi, &step);
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
	CHECK(cfl_svg_escape(&b, "a<b & \"c\" 'd'>") == 0);
	CHECK_STR(b.data, "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
	b.len = 0;
	CHECK(cfl_svg_box_strip(&b, "t", "x", 1, names, nv, vals, NULL) == 0);
	CHECK_CONTAINS(b.data, "no values to plot");
	b.len = 0;
	CHECK(cfl_svg_scatter(&b, "t", "x", "y", 1, x, y, NULL, 0, 0, 1, NULL) == 0);
	CHECK_CONTAINS(b.data, "no values to plot");
	/* log x needs positive values */
	{
		const double xs[] = { -1, 0 }, ys[] = { 1, 2 };

		b.len = 0;
		CHECK(cfl_svg_scatter(&b, "t", "x", "y", 2, xs, ys, NULL, 0, 1, 0, NULL) == 0);
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
	CHECK(cfl_svg_box_strip(&b, "acc", "acc", 2, names, nv, vals, hl) == 0);
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

/* ---- the members text of an ensemble ---- */

static void t_members_parse(void)
{
	struct report_members ms;
	struct cfl_err err;

	/* folds of a member joined by "+", weights one per member */
	CHECK_INT(cfl_report_members_parse("trials 1+2+3,4+5+6; weights 0.75,0.25",
				       &ms, &err), 0);
	CHECK_INT(ms.n, 2);
	CHECK_INT(ms.m[0].n_trials, 3);
	CHECK(ms.m[0].trials[0] == 1 && ms.m[0].trials[2] == 3);
	CHECK(ms.m[1].trials[0] == 4 && ms.m[1].trials[2] == 6);
	CHECK(ms.has_weights && !ms.has_coefs);
	CHECK(ms.m[0].weight == 0.75 && ms.m[1].weight == 0.25);
	CHECK_STR(ms.about, "");
	cfl_report_members_release(&ms);

	/* stacking with two classes: one coefficient per member */
	CHECK_INT(cfl_report_members_parse("trials 7,9; meta linear l2=1 on oof; "
				       "coefs 2.5,-1e-07", &ms, &err), 0);
	CHECK_INT(ms.n, 2);
	CHECK(ms.has_coefs && !ms.has_weights);
	CHECK(ms.m[0].n_rows == 1 && ms.m[0].n_cols == 1);
	CHECK(ms.m[0].coefs[0] == 2.5 && ms.m[1].coefs[0] == -1e-07);
	CHECK(ms.m[0].weight != ms.m[0].weight);	/* NaN: no weights */
	CHECK_STR(ms.about, "meta linear l2=1 on oof");
	cfl_report_members_release(&ms);

	/* three classes: a row per class score, a column per input */
	CHECK_INT(cfl_report_members_parse("trials 1,2; meta linear l2=1 on valid; "
				       "coefs 1 2/3 4/5 6,7 8/9 10/11 12", &ms,
				       &err), 0);
	CHECK(ms.m[1].n_rows == 3 && ms.m[1].n_cols == 2);
	CHECK(ms.m[1].coefs[0] == 7 && ms.m[1].coefs[5] == 12);
	cfl_report_members_release(&ms);

	/* the text before coefficients were stored (old databases) */
	CHECK_INT(cfl_report_members_parse("trials 1,2; meta linear l2=1 on valid",
				       &ms, &err), 0);
	CHECK(ms.n == 2 && !ms.has_coefs && !ms.has_weights);
	cfl_report_members_release(&ms);
	CHECK_INT(cfl_report_members_parse("trials 3,4; majority vote", &ms, &err), 0);
	CHECK_STR(ms.about, "majority vote");
	cfl_report_members_release(&ms);
	CHECK_INT(cfl_report_members_parse("trials 5,6; ", &ms, &err), 0);
	CHECK_INT(ms.n, 2);
	cfl_report_members_release(&ms);

	/* not this format: shown as stored, never half read */
	static const char *const bad[] = {
		"", "weights 0.2,0.2", "trials ", "trials 1,,2", "trials 1+",
		"trials 0", "trials -1", "trials 1x", "trials 99999999999999999999",
		"trials 1,2; weights 0.5", "trials 1,2; weights 0.5,0.5,0",
		"trials 1,2; weights 0.5,abc", "trials 1; weights 1; weights 1",
		"trials 1,2; coefs 1,2 3", "trials 1; coefs 1 2/3",
		"trials 1; coefs 1//2", "trials 1; coefs ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = cfl_report_members_parse(bad[i], &ms, &err);

		CHECK_MSG(rc == 1, "'%s' gave %d", bad[i], rc);
		CHECK(ms.n == 0 && ms.m == NULL && ms.about == NULL);
	}
	CHECK_INT(cfl_report_members_parse(NULL, &ms, &err), 1);
}

/* A hostile text with a huge claimed shape is refused, not allocated. */
static void t_members_parse_shape_bound(void)
{
	struct report_members ms;
	struct cfl_err err;
	char text[8192];
	size_t n = 0;

	n += (size_t)snprintf(text, sizeof(text), "trials 1; coefs 1");
	while (n < 4000)
		text[n++] = ' ';
	while (n < 8000)
		text[n++] = '/';
	text[n] = '\0';
	CHECK_INT(cfl_report_members_parse(text, &ms, &err), 1);
}

/* Adds a done trial with one test metric; returns its id. */
static int64_t done_trial(struct cfl_store *st, int64_t run, int64_t cand,
			  int repeat, int fold, uint64_t seed)
{
	struct cfl_metric_value m[1] = { { "acc", 0.9 } };
	struct cfl_trial_result res;
	struct cfl_trial_state ts;
	struct cfl_err err;

	CHECK(cfl_store_trial_ensure(st, run, cand, repeat, fold, seed, &ts,
				     &err) == 0);
	memset(&res, 0, sizeof(res));
	res.split[CFL_SPLIT_TEST].n_metrics = 1;
	res.split[CFL_SPLIT_TEST].metrics = m;
	CHECK(cfl_store_trial_done(st, ts.id, 1, &res, &err) == 0);
	return ts.id;
}

static void add_ensemble(struct cfl_store *st, int64_t run, const char *name,
			 const char *members)
{
	struct cfl_metric_value m[1] = { { "acc", 0.95 } };
	struct cfl_ensemble_info ei = { name, name, members, -1 };
	struct cfl_trial_result res;
	struct cfl_err err;

	memset(&res, 0, sizeof(res));
	res.split[CFL_SPLIT_TEST].n_metrics = 1;
	res.split[CFL_SPLIT_TEST].metrics = m;
	CHECK_MSG(cfl_store_ensemble_add(st, run, &ei, &res, NULL, &err) == 0,
		  "%s", err.msg);
}

/* The page lists each member once, resolved to its model, repeat, folds
 * and seed, with each ensemble's weight or coefficients; names and texts
 * from the store are escaped; a text that does not parse is shown as
 * stored. */
static void t_page_lists_members(void)
{
	char dir[] = "/tmp/cfl-html-XXXXXX", path[64], cmd[96], text[512];
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_run_info info = { 0 }, got;
	struct cfl_ensemble_row *e;
	struct cfl_buf b;
	int64_t run, cand[2], t[4];
	size_t n_e;
	const char *sec;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cfl.db", dir);
	st = cfl_store_open(path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st, "%s", err.msg);
	info.name = "members";
	info.kind = CFL_RUN_REPEAT;
	CHECK(cfl_store_run_create(st, &info, &run, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "<img src=x>", NULL,
					     &cand[0], NULL, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "linear", NULL, &cand[1],
					     NULL, &err) == 0);
	/* member 1: two folds of repeat 0; member 2: linear's repeat 3 */
	t[0] = done_trial(st, run, cand[0], 0, 0, 41);
	t[1] = done_trial(st, run, cand[0], 0, 1, 41);
	t[2] = done_trial(st, run, cand[1], 3, -1, 77);
	t[3] = done_trial(st, run, cand[1], 4, -1, 78);
	snprintf(text, sizeof(text), "trials %lld+%lld,%lld; weights 0.625,0.375",
		 (long long)t[0], (long long)t[1], (long long)t[2]);
	add_ensemble(st, run, "weighted", text);
	snprintf(text, sizeof(text), "trials %lld+%lld,%lld,%lld; meta linear "
		 "l2=1 on oof; coefs 1.5,-2.25,0.5", (long long)t[0],
		 (long long)t[1], (long long)t[2], (long long)t[3]);
	add_ensemble(st, run, "stacking", text);
	/* the text of an older cfl: members without weights */
	snprintf(text, sizeof(text), "trials %lld,%lld; majority vote",
		 (long long)t[2], (long long)t[3]);
	add_ensemble(st, run, "vote", text);
	add_ensemble(st, run, "odd", "<script>x</script> & more");

	/* the store gives them back in order */
	CHECK(cfl_store_ensembles(st, run, &e, &n_e, &err) == 0);
	CHECK_INT(n_e, 4);
	CHECK_STR(e[0].name, "weighted");
	CHECK_STR(e[1].method, "stacking");
	CHECK_INT(e[1].repeat, -1);
	CHECK_STR(e[3].members, "<script>x</script> & more");
	cfl_ensemble_rows_free(e, n_e);

	CHECK(cfl_store_run_find(st, "members", &got, &err) == 0);
	cfl_buf_init(&b);
	CHECK_MSG(cfl_report_html(st, &got, &b, &err) == 0, "%s", err.msg);
	CHECK(strstr(b.data, "<img") == NULL);
	CHECK(strstr(b.data, "<script") == NULL);
	sec = strstr(b.data, "<table class=\"members\">");
	CHECK(sec != NULL);
	if (!sec)
		goto out;
	/* three distinct members across the ensembles */
	CHECK_CONTAINS(b.data, "<summary>Members: 3</summary>");
	CHECK_CONTAINS(sec, "<th>weighted<br>weight</th><th>stacking<br>"
			    "share</th><th>vote</th></tr>");
	/* collapsed by default */
	CHECK_CONTAINS(b.data, "<details class=\"members\"><summary>");
	CHECK(strstr(b.data, "<details open") == NULL);
	/* member 1: the escaped model, repeat 0, folds 0 and 1, seed 41, its
	 * weight and coefficient, not in the vote */
	snprintf(text, sizeof(text), "<tr><td class=\"num\">1</td><td>&lt;img "
		 "src=x&gt;</td><td class=\"num\">0</td><td>0, 1</td><td "
		 "class=\"num\">41</td><td>%lld, %lld</td><td class=\"num\">0.625"
		 "</td><td class=\"num\">0.352941</td><td class=\"no\">&ndash;</td></tr>",
		 (long long)t[0], (long long)t[1]);
	CHECK_CONTAINS(sec, text);
	snprintf(text, sizeof(text), "<tr><td class=\"num\">2</td><td>linear"
		 "</td><td class=\"num\">3</td><td>-</td><td class=\"num\">77"
		 "</td><td>%lld</td><td class=\"num\">0.375</td><td class=\"num\">"
		 "0.529412</td><td class=\"in\">&#10003;</td></tr>", (long long)t[2]);
	CHECK_CONTAINS(sec, text);
	/* member 3 is in stacking and vote only */
	snprintf(text, sizeof(text), "<td>%lld</td><td class=\"no\">&ndash;</td>"
		 "<td class=\"num\">0.117647</td><td class=\"in\">&#10003;</td></tr>",
		 (long long)t[3]);
	CHECK_CONTAINS(sec, text);
	/* the raw coefficients one click away, numbered as the members */
	CHECK_CONTAINS(sec, "<details class=\"coefs\"><summary>stacking: the "
			    "meta-learner's raw coefficients</summary>");
	CHECK_CONTAINS(sec, "<tr><td class=\"num\">1</td><td class=\"num\">1.5"
			    "</td></tr>\n<tr><td class=\"num\">2</td><td "
			    "class=\"num\">-2.25</td></tr>\n<tr><td class=\"num\">3"
			    "</td><td class=\"num\">0.5</td></tr>");
	CHECK_CONTAINS(sec, "<dt>stacking</dt><dd>3 members; meta linear l2=1 on oof;");
	CHECK_CONTAINS(sec, "<dt>odd</dt><dd>members as stored: &lt;script&gt;x"
			    "&lt;/script&gt; &amp; more</dd>");
out:
	cfl_buf_release(&b);
	cfl_run_info_release(&got);
	cfl_store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* ---- numbers, new charts, the failures and timeline sections ---- */

static const char *num_text(struct cfl_buf *b, double v)
{
	b->len = 0;
	CHECK(cfl_svg_num(b, v) == 0);
	return b->data;
}

static void t_numbers(void)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	CHECK_STR(num_text(&b, 0.20000000000000001), "0.2");
	CHECK_STR(num_text(&b, 1.0 / 3), "0.333333");
	CHECK_STR(num_text(&b, 0.25), "0.25");
	CHECK_STR(num_text(&b, 123456789), "1.23457e+08");
	CHECK_STR(num_text(&b, -0.0), "0");
	CHECK_STR(num_text(&b, NAN), "nan");
	cfl_buf_release(&b);
}

/* Choice values with equal scores are spread sideways (not one dot), and
 * each point carries its tooltip. */
static void t_scatter_jitter_and_tips(void)
{
	const double x[] = { 0, 0, 0, 1 }, y[] = { 0.5, 0.5, 0.5, 0.7 };
	const char *cats[] = { "sgd", "adam" };
	const char *tips[] = { "a", "b", "c<", "d" };
	char cx[4][16];
	struct cfl_buf b;
	const char *p;
	int n = 0;

	cfl_buf_init(&b);
	CHECK(cfl_svg_scatter(&b, "t", "x", "y", 4, x, y, cats, 2, 0, 0, tips) == 0);
	for (p = b.data; n < 4 && (p = strstr(p, "<circle cx=\"")); p++)
		sscanf(p + 12, "%15[^\"]", cx[n++]);
	CHECK_INT(n, 4);
	CHECK(strcmp(cx[0], cx[1]) && strcmp(cx[1], cx[2]) && strcmp(cx[0], cx[2]));
	CHECK_CONTAINS(b.data, "<title>a</title>");
	CHECK_CONTAINS(b.data, "<title>c&lt;</title>");
	/* numeric x: no jitter, the two equal x share one cx */
	b.len = 0;
	CHECK(cfl_svg_scatter(&b, "t", "x", "y", 4, x, y, NULL, 0, 0, 0, NULL) == 0);
	n = 0;
	for (p = b.data; n < 2 && (p = strstr(p, "<circle cx=\"")); p++)
		sscanf(p + 12, "%15[^\"]", cx[n++]);
	CHECK_STR(cx[0], cx[1]);
	CHECK(strstr(b.data, "<title>") == NULL);
	cfl_buf_release(&b);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void t_new_charts(void)
{
	const char *names[] = { "lr", "l2" };
	const double imp[] = { 0.75, 0.25 };
	const double lr[] = { 1e-4, 1e-2, 1e-1 }, opt[] = { 0, 1, NAN };
	const double score[] = { 0.5, 0.9, 0.7 };
	const char *cats[] = { "sgd", "adam" }, *ptips[] = { "c0", "c1", "c2" };
	struct svg_axis ax[3] = {
		{ "lr", lr, NULL, 0, 1 },
		{ "optimizer", opt, cats, 2, 0 },
		{ "score", score, NULL, 0, 0 },
	};
	const char *lanes[] = { "local:1", "host:2" };
	struct svg_span sp[] = {
		{ 0, 0, 1.5, 0, "t1" }, { 1, 0.5, 2, 1, "t2 failed" },
		{ 0, 1.5, 3, 0, "t3" },
	};
	struct cfl_buf b;

	cfl_buf_init(&b);
	CHECK(cfl_svg_bars(&b, "imp", "share", 2, names, imp) == 0);
	CHECK_INT(count(b.data, "<rect x=\"160.0\""), 2);
	CHECK_CONTAINS(b.data, ">0.75</text>");
	b.len = 0;
	CHECK(cfl_svg_parallel(&b, "pc", 3, ax, 3, score, ptips) == 0);
	CHECK_INT(count(b.data, "<path fill=\"none\""), 3);
	/* the third candidate lacks optimizer: its line breaks there */
	{
		const char *p3 = strstr(b.data, "<title>c1</title>");
		const char *d = p3 ? strstr(p3, " d=\"") : NULL;
		const char *q = d ? strchr(d + 4, '"') : NULL;
		int moves = 0;

		for (const char *c = d; c && c < q; c++)
			moves += *c == 'M';
		CHECK_INT(moves, 2);
	}
	CHECK_CONTAINS(b.data, "<title>c2</title>");
	CHECK_INT(count(b.data, "<path fill=\"none\" stroke=\"#bbb\""), 0);
	CHECK_CONTAINS(b.data, ">adam</text>");
	b.len = 0;
	CHECK(cfl_svg_timeline(&b, "tl", 2, lanes, 3, sp) == 0);
	CHECK_INT(count(b.data, "<title>t"), 3);
	CHECK_INT(count(b.data, "fill=\"#e45756\""), 1);	/* the failed one */
	CHECK_CONTAINS(b.data, ">host:2</text>");
	/* nothing to draw: says so */
	b.len = 0;
	CHECK(cfl_svg_timeline(&b, "tl", 0, lanes, 0, sp) == 0);
	CHECK_CONTAINS(b.data, "no values to plot");
	b.len = 0;
	CHECK(cfl_svg_parallel(&b, "pc", 1, ax, 3, score, NULL) == 0);
	CHECK_CONTAINS(b.data, "no values to plot");
	cfl_buf_release(&b);
}

/* The forest finds the parameter the score depends on: y follows column 0,
 * column 1 is noise. */
static void t_importance(void)
{
	enum { N = 40 };
	double x[N * 2], y[N], imp[2];
	struct cfl_rng r;
	struct cfl_err err;

	cfl_rng_seed(&r, 7);
	for (int i = 0; i < N; i++) {
		x[2 * i] = cfl_rng_uniform(&r);
		x[2 * i + 1] = cfl_rng_uniform(&r);
		y[i] = x[2 * i] * x[2 * i];
	}
	CHECK_MSG(cfl_report_param_importance(x, N, 2, y, imp, &err) == 0, "%s", err.msg);
	CHECK_NEAR(imp[0] + imp[1], 1, 1e-12);
	CHECK_MSG(imp[0] > 0.8, "imp %g %g", imp[0], imp[1]);
	/* and the other way round */
	for (int i = 0; i < N; i++)
		y[i] = -x[2 * i + 1];
	CHECK(cfl_report_param_importance(x, N, 2, y, imp, &err) == 0);
	CHECK_MSG(imp[1] > 0.8, "imp %g %g", imp[0], imp[1]);
	CHECK(cfl_report_param_importance(x, 1, 2, y, imp, &err) == -1);
	CHECK_CONTAINS(err.msg, "too few candidates");
}

/* A run with a retried and a failed trial: the failures table lists both
 * attempts with model, repeat, attempt, worker and reason; the timeline
 * has a lane per worker; the config leaves empty keys out and shows its
 * floats short, its integers whole. */
static void t_page_failures_timeline_config(void)
{
	char dir[] = "/tmp/cfl-html-XXXXXX", path[64], cmd[96];
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_run_info info = { 0 }, got;
	struct cfl_trial_state ts;
	struct cfl_buf b;
	int64_t run, cand, ok;
	const char *sec;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cfl.db", dir);
	st = cfl_store_open(path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st, "%s", err.msg);
	info.name = "f";
	info.kind = CFL_RUN_REPEAT;
	info.config = "models=linear\nparams.linear=\ntest_frac=0.20000000000000001\n"
		      "seed=18446744073709551615\nspace=lr = loguniform(1.0000000000000001e-05, 0.1)\n";
	CHECK(cfl_store_run_create(st, &info, &run, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "linear", NULL, &cand,
					     NULL, &err) == 0);
	ok = done_trial(st, run, cand, 0, -1, 1);
	(void)ok;
	CHECK(cfl_store_trial_ensure(st, run, cand, 1, -1, 2, &ts, &err) == 0);
	CHECK(cfl_store_trial_leased(st, ts.id, 1, "local:1", &err) == 0);
	CHECK(cfl_store_trial_failed(st, ts.id, 1, "signal SIGSEGV",
				     CFL_TRIAL_QUEUED, &err) == 0);
	CHECK(cfl_store_trial_leased(st, ts.id, 2, "box:<7>", &err) == 0);
	CHECK(cfl_store_trial_failed(st, ts.id, 2, "exit 3 & <more>",
				     CFL_TRIAL_POISON, &err) == 0);
	CHECK(cfl_store_run_find(st, "f", &got, &err) == 0);
	cfl_buf_init(&b);
	CHECK_MSG(cfl_report_html(st, &got, &b, &err) == 0, "%s", err.msg);
	CHECK_CONTAINS(b.data, "<dt>config</dt><dd>models=linear\ntest_frac=0.2\n"
			       "seed=18446744073709551615\nspace=lr = loguniform(1e-05, 0.1)\n</dd>");
	CHECK(strstr(b.data, "params.linear") == NULL);
	sec = strstr(b.data, "<h2>Failures</h2>");
	CHECK(sec != NULL);
	if (sec) {
		CHECK_CONTAINS(sec, "<td>linear</td>");
		CHECK_CONTAINS(sec, "<td class=\"num\">1</td><td class=\"num\">-</td>"
				    "<td class=\"num\">1</td><td>local:1</td><td>retried"
				    "</td><td>signal SIGSEGV</td></tr>");
		CHECK_CONTAINS(sec, "<td class=\"num\">2</td><td>box:&lt;7&gt;</td>"
				    "<td>poison</td><td>exit 3 &amp; &lt;more&gt;</td></tr>");
	}
	sec = strstr(b.data, "<h2>Trials over time</h2>");
	CHECK(sec != NULL);
	if (sec) {
		CHECK_CONTAINS(sec, ">local:1</text>");
		CHECK_CONTAINS(sec, ">box:&lt;7&gt;</text>");
		CHECK_CONTAINS(sec, "attempt 2 poison");
	}
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
	TEST(t_members_parse),
	TEST(t_members_parse_shape_bound),
	TEST(t_page_lists_members),
	TEST(t_numbers),
	TEST(t_scatter_jitter_and_tips),
	TEST(t_new_charts),
	TEST(t_importance),
	TEST(t_page_failures_timeline_config),
	{ 0 }
};
