/*
 * W4 driver: minimises Branin, Hartmann6 or Rosenbrock with cfl's search
 * library (bo or random) for a budget and seeds, sequentially (ask, then
 * tell), and prints one line per seed: "seed regret@30 regret@N
 * median_ms_per_proposal".  Built and run by tests/bench/bench_w4.sh.
 *
 *     w4_driver FUNCTION METHOD BUDGET SEED0 SEED1
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/hpo.h"

static double branin(const double *x)
{
	double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10,
	       t = 1 / (8 * M_PI);
	double u = x[1] - b * x[0] * x[0] + c * x[0] - r;

	return a * u * u + s * (1 - t) * cos(x[0]) + s;
}

static double hartmann6(const double *x)
{
	static const double al[4] = { 1.0, 1.2, 3.0, 3.2 };
	static const double A[4][6] = {
		{ 10, 3, 17, 3.5, 1.7, 8 },
		{ 0.05, 10, 17, 0.1, 8, 14 },
		{ 3, 3.5, 1.7, 10, 17, 8 },
		{ 17, 8, 0.05, 10, 0.1, 14 },
	};
	static const double P[4][6] = {
		{ 1312, 1696, 5569, 124, 8283, 5886 },
		{ 2329, 4135, 8307, 3736, 1004, 9991 },
		{ 2348, 1451, 3522, 2883, 3047, 6650 },
		{ 4047, 8828, 8732, 5743, 1091, 381 },
	};
	double f = 0;

	for (int i = 0; i < 4; i++) {
		double s = 0;

		for (int j = 0; j < 6; j++)
			s += A[i][j] * (x[j] - P[i][j] * 1e-4) * (x[j] - P[i][j] * 1e-4);
		f -= al[i] * exp(-s);
	}
	return f;
}

static double rosenbrock(const double *x)
{
	double f = 0;

	for (int i = 0; i < 3; i++)
		f += 100 * pow(x[i + 1] - x[i] * x[i], 2) + pow(1 - x[i], 2);
	return f;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *fn, *method;
	int budget, s0, s1, d;
	double (*f)(const double *), fmin, lo, hi;
	struct cfl_buf text;
	struct cfl_space space;
	struct cfl_err err;

	if (argc != 6) {
		fprintf(stderr, "usage: w4_driver branin|hartmann6|rosenbrock bo|random BUDGET SEED0 SEED1\n");
		return 2;
	}
	fn = argv[1];
	method = argv[2];
	budget = atoi(argv[3]);
	s0 = atoi(argv[4]);
	s1 = atoi(argv[5]);
	cfl_buf_init(&text);
	if (strcmp(fn, "branin") == 0) {
		f = branin;
		d = 2;
		fmin = 0.397887;
		cfl_buf_puts(&text, "x0 = uniform(-5, 10)\nx1 = uniform(0, 15)\n");
	} else if (strcmp(fn, "hartmann6") == 0) {
		f = hartmann6;
		d = 6;
		fmin = -3.322368;
		lo = 0, hi = 1;
		for (int i = 0; i < d; i++)
			cfl_buf_printf(&text, "x%d = uniform(%g, %g)\n", i, lo, hi);
	} else if (strcmp(fn, "rosenbrock") == 0) {
		f = rosenbrock;
		d = 4;
		fmin = 0;
		lo = -5, hi = 10;
		for (int i = 0; i < d; i++)
			cfl_buf_printf(&text, "x%d = uniform(%g, %g)\n", i, lo, hi);
	} else {
		fprintf(stderr, "w4_driver: unknown function '%s'\n", fn);
		return 2;
	}
	if (cfl_space_parse(&space, fn, text.data, text.len, NULL, &err)) {
		fprintf(stderr, "w4_driver: %s\n", err.msg);
		return 1;
	}
	for (int seed = s0; seed <= s1; seed++) {
		struct cfl_search_opts o;
		struct cfl_search *s;
		struct cfl_params p;
		double best = INFINITY, best30 = INFINITY;
		double *ms = calloc((size_t)budget, sizeof(double));
		int n_ms = 0;

		cfl_search_opts_init(&o);
		o.method = cfl_search_method_lookup(method);
		o.seed = (uint64_t)seed;
		s = cfl_search_new(&space, &o, &err);
		if (!s) {
			fprintf(stderr, "w4_driver: %s\n", err.msg);
			return 1;
		}
		cfl_params_init(&p);
		for (int t = 0; t < budget; t++) {
			double x[8], t0 = cfl_now(), y;
			size_t idx;

			if (cfl_search_ask(s, &p, &idx, &err)) {
				fprintf(stderr, "w4_driver: ask: %s\n", err.msg);
				return 1;
			}
			ms[n_ms++] = (cfl_now() - t0) * 1e3;
			for (int i = 0; i < d; i++)
				x[i] = strtod(p.kv[i].value, NULL);
			y = f(x);
			cfl_search_tell(s, idx, y, &err);
			if (y < best)
				best = y;
			if (t == 29)
				best30 = best;
		}
		qsort(ms + (budget > 50 ? budget - 20 : 0),
		      (size_t)(budget > 50 ? 20 : budget), sizeof(double), cmp_d);
		printf("%d %.6g %.6g %.3f\n", seed, best30 - fmin, best - fmin,
		       budget > 50 ? ms[budget - 10] : ms[budget / 2]);
		fflush(stdout);
		cfl_params_release(&p);
		cfl_search_free(s);
		free(ms);
	}
	cfl_space_release(&space);
	cfl_buf_release(&text);
	return 0;
}
