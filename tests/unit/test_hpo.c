/* Unit tests of src/hpo: the params language (good files, every error with
 * its position and caret, schema checks), the GP posterior against the
 * closed form, log EI against a direct computation, grid / random / bo
 * (every grid point once, reproducible with a seed, no duplicates in
 * batches, failed trials kept out of the model) and BO's quality on
 * Branin; the median and ASHA pruners' decisions. */
#include "runner.h"

#include <stdint.h>

#include "cfl/hpo.h"
#include "cfl/model.h"

static void parse_ok(struct cfl_space *s, const char *text,
		     const struct cfl_model_ops *ops)
{
	struct cfl_err err;

	CHECK_MSG(cfl_space_parse(s, "t.params", text, strlen(text), ops, &err) == 0,
		  "parse: %s", err.msg);
}

static void parse_bad(const char *text, const struct cfl_model_ops *ops,
		      const char *want)
{
	struct cfl_space s;
	struct cfl_err err;

	err.msg[0] = '\0';
	CHECK_MSG(cfl_space_parse(&s, "t.params", text, strlen(text), ops, &err) == -1,
		  "parsed: %s", text);
	CHECK_CONTAINS(err.msg, want);
	/* the line and a caret follow the message */
	CHECK_CONTAINS(err.msg, "\n    ");
	CHECK_CONTAINS(err.msg, "^");
	CHECK(s.n_params == 0 && s.params == NULL);
}

static void t_parse_good(void)
{
	struct cfl_space s;
	const char *text =
		"# a search space\n"
		"optimizer = choice(sgd, rmsprop, adam)\n"
		"lr        = loguniform(1e-5, 0.1)   # log scale\n"
		"\n"
		"hidden    = choice(\"64,64\", '128')\n"
		"layers    = int(1, 3)\n"
		"\tdropout = uniform(0, 0.5)\r\n"
		"epochs    = 40                      # fixed\n"
		"name = \"a # b\"";

	parse_ok(&s, text, NULL);
	CHECK_INT(s.n_params, 7);
	CHECK_INT(cfl_space_n_free(&s), 5);
	CHECK_STR(s.params[0].name, "optimizer");
	CHECK_INT(s.params[0].dist, CFL_DIST_CHOICE);
	CHECK_INT(s.params[0].n_choices, 3);
	CHECK_STR(s.params[0].choices[2], "adam");
	CHECK_INT(s.params[1].dist, CFL_DIST_LOGUNIFORM);
	CHECK_NEAR(s.params[1].lo, 1e-5, 0);
	CHECK_NEAR(s.params[1].hi, 0.1, 0);
	CHECK_INT(s.params[1].line, 3);
	CHECK_STR(s.params[2].choices[0], "64,64");
	CHECK_STR(s.params[2].choices[1], "128");
	CHECK_INT(s.params[3].dist, CFL_DIST_INT);
	CHECK(s.params[3].integer);
	CHECK_INT(s.params[4].dist, CFL_DIST_UNIFORM);
	CHECK(!s.params[4].integer);
	CHECK_INT(s.params[5].dist, CFL_DIST_FIXED);
	CHECK_STR(s.params[5].value, "40");
	CHECK_STR(s.params[6].value, "a # b");
	CHECK_INT(cfl_space_find(&s, "layers"), 3);
	CHECK_INT(cfl_space_find(&s, "nope"), -1);

	/* the formatted space parses back to the same space */
	{
		struct cfl_buf b;
		struct cfl_space t;

		cfl_buf_init(&b);
		CHECK(cfl_space_format(&s, &b) == 0);
		parse_ok(&t, b.data, NULL);
		CHECK_INT(t.n_params, s.n_params);
		for (size_t i = 0; i < s.n_params; i++) {
			CHECK_STR(t.params[i].name, s.params[i].name);
			CHECK_INT(t.params[i].dist, s.params[i].dist);
			CHECK(t.params[i].lo == s.params[i].lo);
			CHECK(t.params[i].hi == s.params[i].hi);
		}
		CHECK_STR(t.params[2].choices[0], "64,64");
		CHECK_STR(t.params[6].value, "a # b");
		cfl_space_release(&t);
		cfl_buf_release(&b);
	}
	cfl_space_release(&s);

	parse_ok(&s, "", NULL);
	CHECK_INT(s.n_params, 0);
	cfl_space_release(&s);
}

static void t_parse_errors(void)
{
	parse_bad("lr = loguniform(0, 1)\n", NULL,
		  "t.params:1:17: loguniform() needs a positive low end");
	parse_bad("a = 1\n\nlr = uniform(1, 0.5)\n", NULL,
		  "t.params:3:17: empty range");
	parse_bad("lr = normal(0, 1)\n", NULL,
		  "t.params:1:6: unknown distribution 'normal'");
	parse_bad("   = 3\n", NULL, "t.params:1:4: expected a parameter name");
	parse_bad("lr 3\n", NULL, "t.params:1:4: expected '=' after 'lr'");
	parse_bad("lr =\n", NULL, "t.params:1:5: missing value after '='");
	parse_bad("lr = uniform(0)\n", NULL, "uniform() takes two numbers");
	parse_bad("lr = uniform(0, 1, 2)\n", NULL, "uniform() takes two numbers");
	parse_bad("lr = uniform(0, x)\n", NULL,
		  "t.params:1:17: expected a finite number, found 'x'");
	parse_bad("n = int(1, 2.5)\n", NULL, "t.params:1:12: 'n' takes integers");
	parse_bad("o = choice()\n", NULL, "choice() needs at least one value");
	parse_bad("o = choice(a, , b)\n", NULL, "t.params:1:15: missing value");
	parse_bad("o = choice(a, b, a)\n", NULL,
		  "t.params:1:18: choice value 'a' given twice");
	parse_bad("o = choice(a, \"b)\n", NULL, "unterminated quoted value");
	parse_bad("a = 1\na = 2\n", NULL, "t.params:2:1: 'a' is set twice (first on line 1)");
	parse_bad("a = two words\n", NULL, "t.params:1:8: unexpected ' ' in value");
	parse_bad("a = uniform(0, 1) x\n", NULL, "unexpected text after ')'");
	parse_bad("a = uniform(0, 1\n", NULL, "missing ')'");
	parse_bad("a = uniform(0, inf)\n", NULL, "expected a finite number");
	{
		static const char nul[] = "a = 1\nb = \0\n";
		struct cfl_space s;
		struct cfl_err err;

		CHECK(cfl_space_parse(&s, "t.params", nul, sizeof(nul) - 1,
				      NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "t.params:2:5: unexpected NUL byte");
	}
	/* the caret sits under the column named */
	{
		struct cfl_space s;
		struct cfl_err err;
		const char *t = "x = uniform(5, 1)  # comment\n";
		const char *nl;

		CHECK(cfl_space_parse(&s, "f", t, strlen(t), NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "f:1:16:");
		nl = strchr(err.msg, '\n');
		CHECK(nl != NULL);
		CHECK_CONTAINS(nl, "    x = uniform(5, 1)  # comment\n");
		nl = strchr(nl + 1, '\n');
		CHECK(nl != NULL);
		CHECK_STR(nl + 1, "                   ^");
	}
}

static void t_parse_schema(void)
{
	const struct cfl_model_ops *ops = cfl_model_find("linear");
	struct cfl_space s;
	struct cfl_err err;

	CHECK(ops != NULL);
	parse_ok(&s, "l2 = loguniform(1e-4, 100)\nmax_iter = int(10, 200)\n"
		     "fit_intercept = choice(true, false)\ntol = 1e-6\n", ops);
	CHECK_INT(s.n_params, 4);
	CHECK(!s.params[0].integer);
	CHECK(s.params[1].integer);
	/* --set replaces a distribution, adds a parameter, checks values */
	CHECK(cfl_space_fix(&s, "l2", "0.5", ops, &err) == 0);
	CHECK_INT(s.params[0].dist, CFL_DIST_FIXED);
	CHECK_STR(s.params[0].value, "0.5");
	CHECK(cfl_space_fix(&s, "l2", "-1", ops, &err) == -1);
	CHECK(cfl_space_fix(&s, "nope", "1", ops, &err) == -1);
	CHECK_CONTAINS(err.msg, "nope");
	cfl_space_release(&s);

	parse_bad("lr = uniform(0, 1)\n", ops,
		  "t.params:1:1: linear has no parameter 'lr' (it has: l2, max_iter");
	parse_bad("l2 = uniform(-1, 1)\n", ops, "t.params:1:14: linear: l2");
	parse_bad("max_iter = uniform(1.5, 20)\n", ops,
		  "t.params:1:20: 'max_iter' takes integers");
	parse_bad("fit_intercept = uniform(0, 1)\n", ops,
		  "'fit_intercept' is not a number parameter of linear");
	parse_bad("fit_intercept = choice(true, maybe)\n", ops, "t.params:1:30:");
	parse_bad("max_iter = x\n", ops, "t.params:1:12: linear: max_iter");
	/* a uniform range of an integer parameter gives integers */
	parse_ok(&s, "max_iter = loguniform(10, 1000)\n", ops);
	CHECK(s.params[0].integer);
	cfl_space_release(&s);
}

/* ---- the GP ---- */

static double m52(double r)
{
	return (1 + sqrt(5.0) * r + 5.0 / 3.0 * r * r) * exp(-sqrt(5.0) * r);
}

static void inv3(const double a[3][3], double out[3][3])
{
	double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
		     a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
		     a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			int r0 = (j + 1) % 3, r1 = (j + 2) % 3;
			int c0 = (i + 1) % 3, c1 = (i + 2) % 3;

			out[i][j] = (a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0]) / det;
		}
}

static void t_gp_closed_form(void)
{
	double x[3] = { 0.1, 0.4, 0.9 }, y[3] = { 1.0, -0.5, 0.25 };
	double ls = 0.3, sf2 = 1.7, sn2 = 0.01;
	double theta[3] = { log(ls), log(sf2), log(sn2) };
	double K[3][3], Ki[3][3], xs[2] = { 0.25, 0.7 }, mean[2], var[2];
	struct cfl_err err;
	struct cfl_gp *gp = cfl_gp_new(1, NULL, &err);

	CHECK(gp != NULL);
	CHECK_MSG(cfl_gp_fit(gp, x, y, 3, theta, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			K[i][j] = sf2 * m52(fabs(x[i] - x[j]) / ls) +
				  (i == j ? sn2 + sf2 * 1e-8 : 0);
	inv3(K, Ki);
	cfl_gp_predict(gp, xs, 2, mean, var);
	for (int t = 0; t < 2; t++) {
		double k[3], m = 0, v = sf2;

		for (int i = 0; i < 3; i++)
			k[i] = sf2 * m52(fabs(xs[t] - x[i]) / ls);
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 3; j++) {
				m += k[i] * Ki[i][j] * y[j];
				v -= k[i] * Ki[i][j] * k[j];
			}
		CHECK_NEAR(mean[t], m, 1e-9);
		CHECK_NEAR(var[t], v, 1e-9);
	}
	/* log marginal likelihood: -y'K^-1y/2 - log|K|/2 - 3/2 log 2 pi */
	{
		double q = 0, det;

		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 3; j++)
				q += y[i] * Ki[i][j] * y[j];
		det = K[0][0] * (K[1][1] * K[2][2] - K[1][2] * K[2][1]) -
		      K[0][1] * (K[1][0] * K[2][2] - K[1][2] * K[2][0]) +
		      K[0][2] * (K[1][0] * K[2][1] - K[1][1] * K[2][0]);
		CHECK_NEAR(cfl_gp_log_ml(gp),
			   -0.5 * q - 0.5 * log(det) - 1.5 * log(2 * M_PI), 1e-9);
	}
	/* at a data point with little noise the mean interpolates */
	{
		double m;

		cfl_gp_predict(gp, x + 1, 1, &m, NULL);
		CHECK_NEAR(m, y[1], 0.05);
	}
	cfl_gp_free(gp);
}

static void t_gp_hamming(void)
{
	/* a categorical dimension: distance 1 between any two categories */
	double x[3] = { 0, 1, 2 }, y[3] = { 1, 2, 3 };
	double theta[3] = { log(0.7), 0, log(1e-6) };
	unsigned char cat = 1;
	double xs[2] = { 1, 5 }, mean[2], var[2];
	struct cfl_err err;
	struct cfl_gp *gp = cfl_gp_new(1, &cat, &err);

	CHECK(gp && cfl_gp_fit(gp, x, y, 3, theta, &err) == 0);
	cfl_gp_predict(gp, xs, 2, mean, var);
	CHECK_NEAR(mean[0], 2, 1e-3);
	CHECK(var[0] < 1e-3);
	/* a category never seen is equally far from all three */
	{
		double k = m52(1 / 0.7), c = m52(1 / 0.7);
		/* K = (1 - c) I + c 11' ; K^-1 1 = 1 / (1 + 2c) */
		double m = k * (1 + 2 + 3) / (1 + 2 * c);

		CHECK_NEAR(mean[1], m, 1e-4);
	}
	cfl_gp_free(gp);
}

static void t_gp_extend(void)
{
	/* a fit that adds points to the previous fit's keeps the rows of its
	 * Cholesky factor and computes the new ones: the same bits as a
	 * fresh fit; a changed point or theta starts afresh, still right */
	double x[2 * 30], y[30], xs[2 * 7], m1[7], v1[7], m2[7], v2[7];
	double theta[4] = { log(0.3), log(0.2), log(1.5), log(1e-4) };
	double theta2[4] = { log(0.5), log(0.2), log(1.5), log(1e-4) };
	struct cfl_err err;
	struct cfl_gp *a = cfl_gp_new(2, NULL, &err), *b = cfl_gp_new(2, NULL, &err);
	struct cfl_rng r;

	CHECK(a && b);
	cfl_rng_seed(&r, 3);
	for (int i = 0; i < 30; i++) {
		x[2 * i] = cfl_rng_uniform(&r);
		x[2 * i + 1] = cfl_rng_uniform(&r);
		y[i] = sin(5 * x[2 * i]) + x[2 * i + 1] * x[2 * i + 1];
	}
	for (int i = 0; i < 14; i++)
		xs[i] = cfl_rng_uniform(&r);
	for (int round = 0; round < 3; round++) {
		const double *th = round == 2 ? theta2 : theta;

		/* a: 20 points, then 30 (round 1: the first point moved) */
		if (round == 1)
			x[0] += 0.01;
		CHECK(cfl_gp_fit(a, x, y, 20, theta, &err) == 0);
		CHECK(cfl_gp_fit(a, x, y, 30, th, &err) == 0);
		CHECK(cfl_gp_fit(b, x, y, 30, th, &err) == 0);
		cfl_gp_predict(a, xs, 7, m1, v1);
		/* b fresh: a new object, nothing to keep */
		cfl_gp_free(b);
		b = cfl_gp_new(2, NULL, &err);
		CHECK(b && cfl_gp_fit(b, x, y, 30, th, &err) == 0);
		cfl_gp_predict(b, xs, 7, m2, v2);
		CHECK_MSG(memcmp(m1, m2, sizeof(m1)) == 0 && memcmp(v1, v2, sizeof(v1)) == 0,
			  "round %d: extended fit differs from a fresh one", round);
		CHECK(cfl_gp_log_ml(a) == cfl_gp_log_ml(b));
		/* and the fit is right: it interpolates its data */
		cfl_gp_predict(a, x + 2 * 25, 1, m1, NULL);
		CHECK_NEAR(m1[0], y[25], 0.05);
	}
	/* fewer points than before: a prefix of the old fit */
	CHECK(cfl_gp_fit(a, x, y, 10, theta2, &err) == 0);
	cfl_gp_predict(a, x + 2 * 3, 1, m1, NULL);
	CHECK_NEAR(m1[0], y[3], 0.05);
	cfl_gp_free(a);
	cfl_gp_free(b);
}

static void t_gp_map(void)
{
	/* MAP improves the posterior over the prior mean and recovers a
	 * smooth function's length scale within reason */
	double x[40], y[40];
	struct cfl_err err;
	struct cfl_gp *gp = cfl_gp_new(1, NULL, &err);
	double lml0;

	for (int i = 0; i < 40; i++) {
		x[i] = i / 39.0;
		y[i] = sin(6 * x[i]);
	}
	CHECK(cfl_gp_fit(gp, x, y, 40, NULL, &err) == 0);
	lml0 = cfl_gp_log_ml(gp);
	CHECK_MSG(cfl_gp_fit_map(gp, x, y, 40, NULL, 2, 1, &err) == 0, "%s", err.msg);
	CHECK(cfl_gp_log_ml(gp) > lml0);
	CHECK(exp(cfl_gp_theta(gp)[0]) > 0.05 && exp(cfl_gp_theta(gp)[0]) < 5);
	{
		double xs = 0.5, m;

		cfl_gp_predict(gp, &xs, 1, &m, NULL);
		CHECK_NEAR(m, sin(3.0), 1e-2);
	}
	cfl_gp_free(gp);
}

static void t_log_ei(void)
{
	/* direct: EI = sd (z Phi(z) + phi(z)), z = (best - mean) / sd */
	for (double z = -8; z <= 6; z += 0.25) {
		double sd = 0.7, best = 1.3, mean = best - z * sd;
		long double phi = expl(-0.5L * z * z) / sqrtl(2 * M_PI);
		long double Phi = 0.5L * erfcl(-z / sqrtl(2));
		double direct = (double)logl(sd * (z * Phi + phi));

		CHECK_MSG(fabs(cfl_log_ei(mean, sd, best) - direct) < 1e-7,
			  "z=%g: %.12g vs %.12g", z, cfl_log_ei(mean, sd, best), direct);
	}
	/* the tail: finite, increasing, close to log(phi(z) / z^2) */
	{
		double prev = -INFINITY;

		for (double z = -40; z <= -8; z += 0.5) {
			double v = cfl_log_ei(-z, 1, 0);
			double approx = -0.5 * z * z - 0.5 * log(2 * M_PI) -
					2 * log(-z) + log(1 - 3 / (z * z));

			CHECK(isfinite(v));
			CHECK(v > prev);
			CHECK_NEAR(v, approx, 0.02);
			prev = v;
		}
	}
	CHECK(cfl_log_ei(2, 0, 1) == -INFINITY);
	CHECK_NEAR(cfl_log_ei(0, 0, 1), 0, 1e-12);
}

/* ---- searches ---- */

static struct cfl_search *new_search(const struct cfl_space *sp,
				     enum cfl_search_method m, uint64_t seed,
				     size_t grid_points)
{
	struct cfl_search_opts o;
	struct cfl_err err;
	struct cfl_search *s;

	cfl_search_opts_init(&o);
	o.method = m;
	o.seed = seed;
	o.grid_points = grid_points;
	s = cfl_search_new(sp, &o, &err);
	CHECK_MSG(s != NULL, "%s", err.msg);
	return s;
}

static char *joined(const struct cfl_params *p)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	CHECK(cfl_params_format(p, &b) == 0);
	return b.data;
}

/* A budget below the grid's size asks grid points drawn
 * with the seed (so the first parameter varies), distinct, the same for the
 * same seed, other points for another seed; past the budget the rest of
 * the grid follows, each point once. */
static void t_grid_budget_draws_a_subset(void)
{
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search_opts o;
	char *first[3][6];
	int n_a[3] = { 0 };

	parse_ok(&sp, "a = choice(x, y, z)\nb = int(1, 3)\nc = uniform(0, 1)\n", NULL);
	cfl_params_init(&p);
	for (int run = 0; run < 3; run++) {
		struct cfl_search *s;
		char *all[18];
		size_t n = 0, idx;
		int rc;
		int a_seen[3] = { 0 };

		cfl_search_opts_init(&o);
		o.method = CFL_SEARCH_GRID;
		o.grid_points = 2;
		o.seed = run < 2 ? 5 : 6;
		o.budget = 6;
		s = cfl_search_new(&sp, &o, &err);
		CHECK_MSG(s != NULL, "%s", err.msg);
		while ((rc = cfl_search_ask(s, &p, &idx, &err)) == 0) {
			CHECK(n < 18);
			all[n] = joined(&p);
			for (size_t i = 0; i < n; i++)
				CHECK_MSG(strcmp(all[i], all[n]) != 0, "twice: %s", all[n]);
			if (n < 6) {
				first[run][n] = all[n];
				a_seen[cfl_params_get(&p, "a")[0] - 'x'] = 1;
			}
			n++;
		}
		CHECK_INT(rc, 1);
		CHECK_INT(n, 18);
		n_a[run] = a_seen[0] + a_seen[1] + a_seen[2];
		for (size_t i = 6; i < n; i++)
			free(all[i]);
		cfl_search_free(s);
	}
	/* in grid order the first 6 points all have a=x */
	CHECK_MSG(n_a[0] >= 2, "the subset kept a fixed: %s %s %s", first[0][0],
		  first[0][1], first[0][2]);
	for (int i = 0; i < 6; i++)
		CHECK_STR(first[0][i], first[1][i]);
	{
		int differ = 0;

		for (int i = 0; i < 6; i++)
			differ |= strcmp(first[0][i], first[2][i]) != 0;
		CHECK(differ);
	}
	for (int run = 0; run < 3; run++)
		for (int i = 0; i < 6; i++)
			free(first[run][i]);
	cfl_params_release(&p);
	cfl_space_release(&sp);
}

static void t_grid(void)
{
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	char *seen[64];
	size_t n = 0, idx;
	struct cfl_search *s;
	int rc;

	parse_ok(&sp, "a = choice(x, y, z)\nb = int(1, 3)\nc = uniform(0, 1)\nd = 7\n", NULL);
	/* a continuous range needs --grid-points */
	{
		struct cfl_search_opts o;

		cfl_search_opts_init(&o);
		o.method = CFL_SEARCH_GRID;
		CHECK(cfl_search_new(&sp, &o, &err) == NULL);
		CHECK_CONTAINS(err.msg, "--grid-points");
	}
	s = new_search(&sp, CFL_SEARCH_GRID, 0, 2);
	CHECK_INT(cfl_search_grid_size(s), 18);
	cfl_params_init(&p);
	while ((rc = cfl_search_ask(s, &p, &idx, &err)) == 0) {
		CHECK(n < 64);
		CHECK_INT(idx, n);
		CHECK_INT(p.n, 4);
		CHECK_STR(cfl_params_get(&p, "d"), "7");
		seen[n] = joined(&p);
		for (size_t i = 0; i < n; i++)
			CHECK_MSG(strcmp(seen[i], seen[n]) != 0, "twice: %s", seen[n]);
		n++;
	}
	CHECK_INT(rc, 1);
	CHECK_INT(n, 18);
	/* first parameter slowest, ends of continuous ranges included */
	CHECK_STR(seen[0], "a=x,b=1,c=0,d=7");
	CHECK_STR(seen[1], "a=x,b=1,c=1,d=7");
	CHECK_STR(seen[17], "a=z,b=3,c=1,d=7");
	for (size_t i = 0; i < n; i++)
		free(seen[i]);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

/* The first n proposals of a search as one string. */
static char *run_search(const struct cfl_space *sp, enum cfl_search_method m,
			uint64_t seed, size_t n, double (*f)(const struct cfl_params *))
{
	struct cfl_search *s = new_search(sp, m, seed, 0);
	struct cfl_params p;
	struct cfl_buf all;
	struct cfl_err err;

	cfl_params_init(&p);
	cfl_buf_init(&all);
	for (size_t i = 0; i < n; i++) {
		size_t idx;
		char *j;

		CHECK_MSG(cfl_search_ask(s, &p, &idx, &err) == 0, "%s", err.msg);
		j = joined(&p);
		cfl_buf_printf(&all, "%s;", j);
		free(j);
		CHECK(cfl_search_tell(s, idx, f(&p), &err) == 0);
	}
	cfl_params_release(&p);
	cfl_search_free(s);
	return all.data;
}

static double quad(const struct cfl_params *p)
{
	double x = strtod(cfl_params_get(p, "x"), NULL);
	double y = strtod(cfl_params_get(p, "y"), NULL);
	const char *o = cfl_params_get(p, "o");

	return (x - 0.3) * (x - 0.3) + (log10(y) + 2) * (log10(y) + 2) +
	       (strcmp(o, "b") == 0 ? 0 : 0.5);
}

static void t_reproducible(void)
{
	struct cfl_space sp;

	parse_ok(&sp, "x = uniform(-1, 1)\ny = loguniform(1e-4, 1)\no = choice(a, b, c)\n", NULL);
	for (int m = 0; m < 2; m++) {
		enum cfl_search_method meth = m ? CFL_SEARCH_RANDOM : CFL_SEARCH_BO;
		char *a = run_search(&sp, meth, 7, 12, quad);
		char *b = run_search(&sp, meth, 7, 12, quad);
		char *c = run_search(&sp, meth, 8, 12, quad);

		CHECK_STR(a, b);
		CHECK(strcmp(a, c) != 0);
		free(a);
		free(b);
		free(c);
	}
	cfl_space_release(&sp);
}

static void t_random_covers(void)
{
	/* scrambled Sobol points: every choice and integer appears, values
	 * stay inside their ranges, and no point repeats */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search *s;
	int hits[3] = { 0 }, ints[4] = { 0 };

	parse_ok(&sp, "o = choice(a, b, c)\nn = int(1, 4)\nlr = loguniform(1e-5, 0.1)\n", NULL);
	s = new_search(&sp, CFL_SEARCH_RANDOM, 3, 0);
	cfl_params_init(&p);
	for (int i = 0; i < 32; i++) {
		size_t idx;
		double lr;
		long n;

		CHECK(cfl_search_ask(s, &p, &idx, &err) == 0);
		hits[cfl_params_get(&p, "o")[0] - 'a']++;
		n = strtol(cfl_params_get(&p, "n"), NULL, 10);
		CHECK(n >= 1 && n <= 4);
		ints[n - 1]++;
		lr = strtod(cfl_params_get(&p, "lr"), NULL);
		CHECK(lr >= 1e-5 && lr <= 0.1);
	}
	for (int i = 0; i < 3; i++)
		CHECK(hits[i] >= 6);
	for (int i = 0; i < 4; i++)
		CHECK(ints[i] >= 4);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

static void t_bo_batch_no_duplicates(void)
{
	/* a finite space of 12 points, asked in batches of 3 with results
	 * coming back late: all 12 distinct, then exhausted */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search *s;
	char *seen[12];
	size_t n = 0, idx;

	parse_ok(&sp, "o = choice(a, b, c)\nn = int(1, 4)\n", NULL);
	s = new_search(&sp, CFL_SEARCH_BO, 1, 0);
	cfl_params_init(&p);
	for (int round = 0; round < 4; round++) {
		size_t first = n;

		for (int j = 0; j < 3; j++) {
			CHECK_MSG(cfl_search_ask(s, &p, &idx, &err) == 0, "%s", err.msg);
			seen[n] = joined(&p);
			for (size_t i = 0; i < n; i++)
				CHECK_MSG(strcmp(seen[i], seen[n]) != 0, "twice: %s", seen[n]);
			n++;
		}
		for (size_t i = first; i < n; i++)
			CHECK(cfl_search_tell(s, i, (double)(i % 5), &err) == 0);
	}
	CHECK_INT(cfl_search_ask(s, &p, &idx, &err), 1);
	/* telling twice or an unknown index is an error */
	CHECK(cfl_search_tell(s, 0, 1, &err) == -1);
	CHECK(cfl_search_tell(s, 99, 1, &err) == -1);
	for (size_t i = 0; i < n; i++)
		free(seen[i]);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

static void t_bo_liars(void)
{
	/* both liars: a batch of 4 asked before any result is told is 4
	 * distinct points, and the constant liar's batch is not the kriging
	 * believer's */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	char *batch[2] = { NULL, NULL };

	parse_ok(&sp, "x = uniform(0, 1)\ny = uniform(0, 1)\n", NULL);
	cfl_params_init(&p);
	for (int l = 0; l < 2; l++) {
		struct cfl_search_opts o;
		struct cfl_search *s;
		struct cfl_buf b;
		size_t idx;

		cfl_search_opts_init(&o);
		o.seed = 9;
		o.liar = l ? CFL_LIAR_CONSTANT : CFL_LIAR_KRIGING;
		s = cfl_search_new(&sp, &o, &err);
		CHECK(s != NULL);
		for (int i = 0; i < 6; i++) {
			double x, y;

			CHECK(cfl_search_ask(s, &p, &idx, &err) == 0);
			x = strtod(p.kv[0].value, NULL);
			y = strtod(p.kv[1].value, NULL);
			CHECK(cfl_search_tell(s, idx, (x - 0.6) * (x - 0.6) + (y - 0.3) * (y - 0.3), &err) == 0);
		}
		cfl_buf_init(&b);
		for (int i = 0; i < 4; i++) {
			char *j;

			CHECK_MSG(cfl_search_ask(s, &p, &idx, &err) == 0, "%s", err.msg);
			j = joined(&p);
			CHECK_MSG(!b.data || !strstr(b.data, j), "twice in a batch: %s", j);
			cfl_buf_printf(&b, "%s;", j);
			free(j);
		}
		batch[l] = b.data;
		cfl_search_free(s);
	}
	CHECK(strcmp(batch[0], batch[1]) != 0);
	free(batch[0]);
	free(batch[1]);
	cfl_params_release(&p);
	cfl_space_release(&sp);
}

static void t_bo_failures(void)
{
	/* failed trials (NaN) never enter the model: a search where half the
	 * space fails still finds the optimum of the other half, and never
	 * proposes a failed point again */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search *s;
	double best = INFINITY;

	parse_ok(&sp, "x = uniform(0, 1)\n", NULL);
	s = new_search(&sp, CFL_SEARCH_BO, 2, 0);
	cfl_params_init(&p);
	for (int i = 0; i < 25; i++) {
		size_t idx;
		double x;

		CHECK_MSG(cfl_search_ask(s, &p, &idx, &err) == 0, "%s", err.msg);
		x = strtod(cfl_params_get(&p, "x"), NULL);
		if (x > 0.5) {
			CHECK(cfl_search_tell(s, idx, NAN, &err) == 0);
		} else {
			double y = (x - 0.2) * (x - 0.2);

			CHECK(cfl_search_tell(s, idx, y, &err) == 0);
			if (y < best)
				best = y;
		}
	}
	CHECK_MSG(best < 1e-4, "best %g", best);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

static double branin(double x0, double x1)
{
	double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
	double u = x1 - b * x0 * x0 + c * x0 - 6;

	return u * u + 10 * (1 - t) * cos(x0) + 10;
}

static void t_bo_branin(void)
{
	/* quality, not time: regret below 0.01 within 50 evaluations */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search *s;
	double best = INFINITY;

	parse_ok(&sp, "x0 = uniform(-5, 10)\nx1 = uniform(0, 15)\n", NULL);
	s = new_search(&sp, CFL_SEARCH_BO, 0, 0);
	cfl_params_init(&p);
	for (int i = 0; i < 50; i++) {
		size_t idx;
		double y;

		CHECK_MSG(cfl_search_ask(s, &p, &idx, &err) == 0, "%s", err.msg);
		y = branin(strtod(p.kv[0].value, NULL), strtod(p.kv[1].value, NULL));
		CHECK(cfl_search_tell(s, idx, y, &err) == 0);
		if (y < best)
			best = y;
	}
	CHECK_MSG(best - 0.397887 < 0.01, "regret %g", best - 0.397887);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

static void t_bo_batch_branin(void)
{
	/* 4 candidates in flight, as `cfl tune --num-parallel 4` runs them
	 * (one more asked each time the oldest is told), past the point where
	 * the hyper-parameters stop being refitted at every ask: distinct
	 * points, and the regret after 60 evaluations below 0.01 */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search *s;
	double best = INFINITY, xs[60][2];
	size_t asked = 0, told = 0, idx;
	char *seen[60];

	parse_ok(&sp, "x0 = uniform(-5, 10)\nx1 = uniform(0, 15)\n", NULL);
	s = new_search(&sp, CFL_SEARCH_BO, 1, 0);
	cfl_params_init(&p);
	while (told < 60) {
		while (asked < 60 && asked - told < 4) {
			CHECK_MSG(cfl_search_ask(s, &p, &idx, &err) == 0, "%s", err.msg);
			CHECK_INT((int)idx, (int)asked);
			seen[asked] = joined(&p);
			for (size_t i = 0; i < asked; i++)
				CHECK_MSG(strcmp(seen[i], seen[asked]) != 0, "twice: %s", seen[asked]);
			xs[asked][0] = strtod(p.kv[0].value, NULL);
			xs[asked][1] = strtod(p.kv[1].value, NULL);
			asked++;
		}
		double y = branin(xs[told][0], xs[told][1]);

		CHECK(cfl_search_tell(s, told, y, &err) == 0);
		if (y < best)
			best = y;
		told++;
	}
	CHECK_MSG(best - 0.397887 < 0.01, "regret %g", best - 0.397887);
	for (size_t i = 0; i < asked; i++)
		free(seen[i]);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

static void t_maximize(void)
{
	/* maximise: the search climbs, not descends */
	struct cfl_space sp;
	struct cfl_search_opts o;
	struct cfl_params p;
	struct cfl_err err;
	struct cfl_search *s;
	double best = -INFINITY;

	parse_ok(&sp, "x = uniform(0, 1)\n", NULL);
	cfl_search_opts_init(&o);
	o.maximize = 1;
	s = cfl_search_new(&sp, &o, &err);
	cfl_params_init(&p);
	for (int i = 0; i < 15; i++) {
		size_t idx;
		double x, y;

		CHECK(cfl_search_ask(s, &p, &idx, &err) == 0);
		x = strtod(p.kv[0].value, NULL);
		y = 1 - (x - 0.8) * (x - 0.8);
		CHECK(cfl_search_tell(s, idx, y, &err) == 0);
		if (y > best)
			best = y;
	}
	CHECK(best > 1 - 1e-4);
	cfl_params_release(&p);
	cfl_search_free(s);
	cfl_space_release(&sp);
}

static void t_all_fixed(void)
{
	/* a space with nothing to search has one point */
	struct cfl_space sp;
	struct cfl_params p;
	struct cfl_err err;
	size_t idx;

	parse_ok(&sp, "a = 1\n", NULL);
	for (int m = 0; m < 3; m++) {
		struct cfl_search *s = new_search(&sp, (enum cfl_search_method)m, 0, 0);

		cfl_params_init(&p);
		CHECK(cfl_search_ask(s, &p, &idx, &err) == 0);
		CHECK_STR(cfl_params_get(&p, "a"), "1");
		CHECK(cfl_search_tell(s, idx, 1, &err) == 0);
		CHECK_INT(cfl_search_ask(s, &p, &idx, &err), 1);
		cfl_params_release(&p);
		cfl_search_free(s);
	}
	cfl_space_release(&sp);
}

static void t_params_files(void)
{
	/* every default space parses, checked against its model's schema
	 * when the model is built in (tree models and fcnn may not be yet) */
	static const char *const models[] = { "fcnn", "linear", "tree", "forest", "gbdt" };

	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		char path[64];
		struct cfl_space s;
		struct cfl_err err;

		snprintf(path, sizeof(path), "params/%s.params", models[i]);
		CHECK_MSG(cfl_space_load(&s, path, cfl_model_find(models[i]), &err) == 0,
			  "%s", err.msg);
		CHECK(cfl_space_n_free(&s) >= 1);
		cfl_space_release(&s);
	}
}

/* ---- pruners ---- */

static struct cfl_pruner *pruner(enum cfl_prune_kind kind, size_t n_startup,
				 size_t min_step, double eta)
{
	struct cfl_pruner_opts o;
	struct cfl_err err;
	struct cfl_pruner *p;

	cfl_pruner_opts_init(&o);
	o.kind = kind;
	o.n_startup = n_startup;
	o.min_step = min_step;
	o.eta = eta;
	p = cfl_pruner_new(&o, &err);
	CHECK_MSG(p, "%s", err.msg);
	return p;
}

static int say(struct cfl_pruner *p, int64_t trial, size_t step, double score)
{
	struct cfl_err err;
	int r = cfl_pruner_report(p, trial, step, score, &err);

	CHECK_MSG(r >= 0, "%s", err.msg);
	return r;
}

/* The median rule: against the completed trials at the same step only,
 * after n_startup of them, with the trial's best score so far. */
static void t_prune_median(void)
{
	struct cfl_pruner *p = pruner(CFL_PRUNE_MEDIAN, 2, 0, 3);

	/* trials 1 and 2 complete with scores 0.5 / 0.7 at step 1, 0.6 /
	 * 0.8 at step 2 (medians 0.6 and 0.7) */
	CHECK_INT(say(p, 1, 1, 0.5), 0);
	CHECK_INT(say(p, 1, 2, 0.6), 0);
	/* one trial running is no completed one: nothing to compare with */
	CHECK_INT(say(p, 9, 1, 0.0), 0);
	cfl_pruner_complete(p, 1);
	CHECK_INT(say(p, 2, 1, 0.7), 0);	/* 1 completed < n_startup */
	CHECK_INT(say(p, 2, 2, 0.8), 0);
	cfl_pruner_complete(p, 2);
	CHECK_INT(say(p, 3, 1, 0.61), 0);	/* at the median: goes on */
	CHECK_INT(say(p, 3, 2, 0.65), 1);	/* best 0.65 < 0.7 */
	/* the best so far counts, not the last score */
	CHECK_INT(say(p, 4, 1, 0.75), 0);
	CHECK_INT(say(p, 4, 2, 0.2), 0);	/* best 0.75 > 0.7: goes on */
	cfl_pruner_free(p);
	p = pruner(CFL_PRUNE_MEDIAN, 2, 0, 3);
	CHECK_INT(say(p, 1, 1, 0.5), 0);
	CHECK_INT(say(p, 2, 1, 0.7), 0);
	cfl_pruner_complete(p, 1);
	cfl_pruner_complete(p, 2);
	CHECK_INT(say(p, 5, 1, 0.59), 1);	/* below 0.6 */
	CHECK_INT(say(p, 6, 1, NAN), 1);	/* NaN is the worst */
	CHECK_INT(say(p, 7, 3, 0.0), 0);	/* no one reported step 3 */
	cfl_pruner_free(p);
	/* no pruning before min_step */
	p = pruner(CFL_PRUNE_MEDIAN, 1, 2, 3);
	CHECK_INT(say(p, 1, 1, 0.9), 0);
	cfl_pruner_complete(p, 1);
	CHECK_INT(say(p, 2, 1, 0.1), 0);
	cfl_pruner_free(p);
}

/* ASHA with eta 2 from step 1: rungs at steps 1, 2, 4, 8; a trial goes
 * on when its score at a rung is in the top half of that rung's scores
 * (the best alone while fewer than 2 reported), completed or not. */
static void t_prune_asha(void)
{
	struct cfl_pruner *p = pruner(CFL_PRUNE_ASHA, 0, 1, 2);
	struct cfl_pruner_opts o;
	struct cfl_err err;

	CHECK_INT(say(p, 1, 1, 0.5), 0);	/* first at rung 0: the best */
	CHECK_INT(say(p, 2, 1, 0.4), 1);	/* 2 at rung 0: top 1 is 0.5 */
	CHECK_INT(say(p, 3, 1, 0.6), 0);	/* top 1 of 3 is 0.6 */
	CHECK_INT(say(p, 4, 1, 0.55), 0);	/* top 2 of 4: 0.6, 0.55 */
	CHECK_INT(say(p, 3, 2, 0.7), 0);	/* rung 1 at step 2 */
	CHECK_INT(say(p, 1, 2, 0.65), 1);
	CHECK_INT(say(p, 4, 3, 0.9), 0);	/* step 3: no rung */
	CHECK_INT(say(p, 4, 5, 0.9), 0);	/* passes rungs 1 (2) and 2 (4) */
	cfl_pruner_free(p);
	/* by default the first rung is eta x the first step: 3, 9 for
	 * epochs with eta 3 */
	p = pruner(CFL_PRUNE_ASHA, 0, 0, 3);
	CHECK_INT(say(p, 1, 1, 0.9), 0);
	CHECK_INT(say(p, 2, 1, 0.1), 0);	/* grace: no rung at 1 */
	CHECK_INT(say(p, 2, 2, 0.1), 0);
	CHECK_INT(say(p, 1, 3, 0.9), 0);	/* rung 0 at 3 */
	CHECK_INT(say(p, 2, 3, 0.1), 1);
	cfl_pruner_free(p);
	/* min_step sets the first rung: 10, 30, 90 with eta 3 (gbdt's steps) */
	p = pruner(CFL_PRUNE_ASHA, 0, 10, 3);
	CHECK_INT(say(p, 1, 10, 0.5), 0);
	CHECK_INT(say(p, 2, 10, 0.4), 1);
	CHECK_INT(say(p, 1, 20, 0.1), 0);	/* no rung at 20 */
	CHECK_INT(say(p, 3, 10, 0.3), 1);	/* top 1 of 3 is 0.5 */
	cfl_pruner_free(p);
	/* no pruner, and bad eta */
	p = pruner(CFL_PRUNE_NONE, 0, 0, 3);
	CHECK_INT(say(p, 1, 1, -1e300), 0);
	cfl_pruner_free(p);
	cfl_pruner_opts_init(&o);
	o.kind = CFL_PRUNE_ASHA;
	o.eta = 1;
	CHECK(cfl_pruner_new(&o, &err) == NULL);
	CHECK_CONTAINS(err.msg, "eta must be more than 1");
	CHECK_STR(cfl_prune_kind_name(CFL_PRUNE_ASHA), "asha");
	CHECK_INT(cfl_prune_kind_lookup("median"), CFL_PRUNE_MEDIAN);
	CHECK_INT(cfl_prune_kind_lookup("hyperband"), -1);
}

static int seed_says(struct cfl_pruner *p, int64_t cand, int seed, size_t step,
		     double score)
{
	struct cfl_err err;
	int r = cfl_pruner_seed_report(p, cand, seed, step, score, &err);

	CHECK_MSG(r >= 0, "%s", err.msg);
	return r;
}

static int seed_ends(struct cfl_pruner *p, int64_t cand, int seed)
{
	struct cfl_err err;
	int r = cfl_pruner_seed_end(p, cand, seed, &err);

	CHECK_MSG(r >= 0, "%s", err.msg);
	return r;
}

/* A candidate of two seeds is judged on their mean at a step, once both
 * reporting seeds reached it: one unlucky seed does not stop it, the seed
 * ahead waits for no one, a pruned candidate stops every seed, a seed that
 * ended or has not reported yet is not waited for, and a step is judged
 * once. */
static void t_prune_seeds(void)
{
	/* asha, eta 2, rungs at steps 2, 4, 8 */
	struct cfl_pruner *p = pruner(CFL_PRUNE_ASHA, 0, 2, 2);

	CHECK_INT(seed_says(p, 1, 0, 1, 0.60), 0);	/* no rung at 1 */
	CHECK_INT(seed_says(p, 1, 1, 1, 0.60), 0);
	CHECK_INT(seed_says(p, 1, 0, 2, 0.60), 0);	/* waits for seed 1 */
	CHECK_INT(seed_says(p, 1, 1, 2, 0.60), 0);	/* rung 0: 0.60, the best */
	/* candidate 2's seed 0 is poor alone (0.40 < 0.60: a seed judged by
	 * itself is pruned), its mean is not: (0.40 + 0.90) / 2 = 0.65 */
	CHECK_INT(seed_says(p, 2, 0, 1, 0.40), 0);
	CHECK_INT(seed_says(p, 2, 1, 1, 0.90), 0);
	CHECK_INT(seed_says(p, 2, 0, 2, 0.40), 0);
	CHECK_INT(seed_says(p, 2, 0, 3, 0.50), 0);	/* ahead: waits for no one */
	CHECK_INT(seed_says(p, 2, 1, 2, 0.90), 0);	/* judged at 2: 0.65 goes on */
	/* candidate 3: mean 0.30 at rung 0, below the top 1 of 3 (0.65):
	 * pruned on the report of its last seed; the other stops at its next */
	CHECK_INT(seed_says(p, 3, 0, 1, 0.20), 0);
	CHECK_INT(seed_says(p, 3, 1, 1, 0.40), 0);
	CHECK_INT(seed_says(p, 3, 0, 2, 0.20), 0);
	CHECK_INT(seed_says(p, 3, 1, 2, 0.40), 1);
	CHECK_INT(seed_says(p, 3, 0, 3, 0.99), 1);
	/* a seed that ended is not waited for: candidate 4 is judged at rung
	 * 1 (step 4) on seed 1 alone once seed 0 stops early at step 3 */
	CHECK_INT(seed_says(p, 1, 0, 4, 0.60), 0);
	CHECK_INT(seed_says(p, 1, 1, 4, 0.60), 0);	/* rung 1: 0.60 */
	CHECK_INT(seed_says(p, 4, 0, 1, 0.70), 0);
	CHECK_INT(seed_says(p, 4, 1, 1, 0.70), 0);
	CHECK_INT(seed_says(p, 4, 0, 2, 0.70), 0);
	CHECK_INT(seed_says(p, 4, 1, 2, 0.70), 0);	/* rung 0: top 2 of 4 */
	CHECK_INT(seed_says(p, 4, 0, 3, 0.70), 0);
	CHECK_INT(seed_says(p, 4, 1, 3, 0.70), 0);
	CHECK_INT(seed_says(p, 4, 1, 4, 0.10), 0);	/* waits for seed 0 */
	CHECK_INT(seed_ends(p, 4, 0), 1);	/* rung 1: 0.10 alone, pruned */
	/* a step is judged once: a retried seed's step 1 and 2 add nothing
	 * (candidate 2 passed rung 0; 0.0 there would prune it) */
	CHECK_INT(seed_says(p, 2, 1, 1, 0.0), 0);
	CHECK_INT(seed_says(p, 2, 1, 2, 0.0), 0);
	/* a candidate whose seeds all ended is not pruned (nothing to stop),
	 * though its step is judged and fills its rung */
	CHECK_INT(seed_says(p, 5, 0, 1, 0.61), 0);
	CHECK_INT(seed_says(p, 5, 1, 1, 0.61), 0);
	CHECK_INT(seed_says(p, 5, 0, 2, 0.61), 0);	/* waits for seed 1 */
	CHECK_INT(seed_ends(p, 5, 0), 0);
	CHECK_INT(seed_ends(p, 5, 1), 0);	/* 0.61 below the top 2 of 5 */
	/* with 0.61 there, 0.62 is in the top 3 of 6 (without: not in the
	 * top 2 of 5) */
	CHECK_INT(say(p, 6, 2, 0.62), 0);
	cfl_pruner_free(p);
	/* one seed at a time (one job): a seed that has not reported is not
	 * waited for, so the first is judged alone, and when it is pruned the
	 * next stops at its first report */
	p = pruner(CFL_PRUNE_ASHA, 0, 2, 2);
	CHECK_INT(seed_says(p, 1, 0, 2, 0.8), 0);
	CHECK_INT(seed_ends(p, 1, 0), 0);
	CHECK_INT(seed_says(p, 1, 1, 1, 0.1), 0);	/* step 2 judged: */
	CHECK_INT(seed_says(p, 1, 1, 2, 0.1), 0);	/* adds nothing */
	CHECK_INT(seed_says(p, 2, 0, 1, 0.1), 0);
	CHECK_INT(seed_says(p, 2, 0, 2, 0.1), 1);	/* 0.1 < 0.8 */
	CHECK_INT(seed_ends(p, 2, 0), 1);
	CHECK_INT(seed_says(p, 2, 1, 1, 0.9), 1);
	cfl_pruner_free(p);
	/* no pruner: never */
	p = pruner(CFL_PRUNE_NONE, 0, 0, 3);
	CHECK_INT(seed_says(p, 1, 0, 1, -1e300), 0);
	cfl_pruner_free(p);
}

/* The default spaces: the checkout's params/ (the tests run at its top),
 * and for a model with none the path the error will name. */
static void t_space_default_path(void)
{
	char buf[600];
	struct cfl_space sp;
	struct cfl_err err;

	CHECK_STR(cfl_space_default_path("fcnn", buf, sizeof(buf)), "params/fcnn.params");
	cfl_space_init(&sp);
	CHECK_MSG(cfl_space_load(&sp, buf, cfl_model_find("fcnn"), &err) == 0, "%s", err.msg);
	cfl_space_release(&sp);
	CHECK_STR(cfl_space_default_path("no_such_model", buf, sizeof(buf)),
		  "params/no_such_model.params");
}

const struct cfl_test cfl_tests[] = {
	TEST(t_space_default_path),
	TEST(t_params_files),
	TEST(t_parse_good),
	TEST(t_parse_errors),
	TEST(t_parse_schema),
	TEST(t_gp_closed_form),
	TEST(t_gp_hamming),
	TEST(t_gp_extend),
	TEST(t_gp_map),
	TEST(t_log_ei),
	TEST(t_grid),
	TEST(t_grid_budget_draws_a_subset),
	TEST(t_reproducible),
	TEST(t_random_covers),
	TEST(t_bo_batch_no_duplicates),
	TEST(t_bo_liars),
	TEST(t_bo_failures),
	TEST(t_bo_branin),
	TEST(t_bo_batch_branin),
	TEST(t_maximize),
	TEST(t_all_fixed),
	TEST(t_prune_median),
	TEST(t_prune_asha),
	TEST(t_prune_seeds),
	{ 0 },
};
