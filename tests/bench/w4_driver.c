/*
 * W4 driver: minimises Branin, Hartmann6 or Rosenbrock with cfl's search
 * library (bo or random) for a budget and seeds, and prints one line per
 * seed: "seed regret@30 regret@N median_ms_per_proposal median_cpu_ms" (the
 * medians over proposals N-19..N, or over all when N <= 50; cpu: the
 * process's CPU time, which a loaded machine inflates less).  With PARALLEL
 * P > 1 it keeps P candidates in flight as `cfl tune --num-parallel P`
 * does: P asks first, then one more each time the oldest in flight is told;
 * regret@K is the best of the first K values told.  Built and run by
 * tests/bench/bench_w4.sh.
 *
 *     w4_driver FUNCTION METHOD BUDGET SEED0 SEED1 [PARALLEL [LIAR]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static int cmp_d(const void *a, const void *b);

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* median of the last 20 of v (n), or of all when n <= 50; sorts them */
static double late_median(double *v, int n)
{
	int from = n > 50 ? n - 20 : 0;

	qsort(v + from, (size_t)(n - from), sizeof(double), cmp_d);
	return v[from + (n - from) / 2];
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *fn, *method;
	int budget, s0, s1, d, par = 1;
	double (*f)(const double *), fmin, lo, hi;
	struct cfl_buf text;
	struct cfl_space space;
	struct cfl_err err;

	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: w4_driver branin|hartmann6|rosenbrock bo|random BUDGET SEED0 SEED1 [PARALLEL [kriging|constant]]\n");
		return 2;
	}
	fn = argv[1];
	method = argv[2];
	budget = atoi(argv[3]);
	s0 = atoi(argv[4]);
	s1 = atoi(argv[5]);
	if (argc >= 7)
		par = atoi(argv[6]);
	if (argc == 8 && strcmp(argv[7], "kriging") && strcmp(argv[7], "constant")) {
		fprintf(stderr, "w4_driver: LIAR must be kriging or constant\n");
		return 2;
	}
	if (budget < 1 || budget > 100000 || par < 1 || par > 64) {
		fprintf(stderr, "w4_driver: BUDGET must be in [1, 100000] and PARALLEL in [1, 64]\n");
		return 2;
	}
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
		double *cpu = calloc((size_t)budget, sizeof(double));
		int n_ms = 0;

		cfl_search_opts_init(&o);
		o.method = cfl_search_method_lookup(method);
		o.seed = (uint64_t)seed;
		if (argc == 8 && strcmp(argv[7], "constant") == 0)
			o.liar = CFL_LIAR_CONSTANT;
		s = cfl_search_new(&space, &o, &err);
		if (!s) {
			fprintf(stderr, "w4_driver: %s\n", err.msg);
			return 1;
		}
		cfl_params_init(&p);
		/* told counts values told; asked - told are in flight, the
		 * oldest first (ask index order) */
		size_t asked = 0, told = 0;
		double (*xs)[8] = calloc((size_t)budget, sizeof(*xs));

		if (!ms || !cpu || !xs) {
			fprintf(stderr, "w4_driver: out of memory\n");
			return 1;
		}
		while (told < (size_t)budget) {
			while (asked < (size_t)budget && asked - told < (size_t)par) {
				double t0 = cfl_now(), c0 = cpu_now();
				size_t idx;

				if (cfl_search_ask(s, &p, &idx, &err)) {
					fprintf(stderr, "w4_driver: ask: %s\n", err.msg);
					return 1;
				}
				cpu[n_ms] = (cpu_now() - c0) * 1e3;
				ms[n_ms++] = (cfl_now() - t0) * 1e3;
				for (int i = 0; i < d; i++)
					xs[idx][i] = strtod(p.kv[i].value, NULL);
				asked++;
			}
			double y = f(xs[told]);

			if (cfl_search_tell(s, told, y, &err)) {
				fprintf(stderr, "w4_driver: tell: %s\n", err.msg);
				return 1;
			}
			told++;
			if (y < best)
				best = y;
			if (told == 30)
				best30 = best;
		}
		free(xs);
		printf("%d %.6g %.6g %.3f %.3f\n", seed, best30 - fmin, best - fmin,
		       late_median(ms, n_ms), late_median(cpu, n_ms));
		fflush(stdout);
		cfl_params_release(&p);
		cfl_search_free(s);
		free(ms);
		free(cpu);
	}
	cfl_space_release(&space);
	cfl_buf_release(&text);
	return 0;
}
