/*
 * fixture_messy: writes a seeded tabular CSV shaped like real-world files,
 * for tests of the data path and the defaults:
 *
 *   fixture_messy clf|reg N SEED [MISSING_TARGETS] > messy.csv
 *
 * Columns: rating (ordinal integer code 1..10, the strongest signal, rising
 * with the target), legs (a count 0..8, weak signal), size (integer cm,
 * many values), x1 and x2 (real numbers, about 8% missing cells written as
 * NA or empty), colour (text categorical with signal), city (text
 * categorical, about 5% missing), and the target: a two-class 'yes'/'no'
 * about 20% 'yes' (class imbalance) for clf, or a real number for reg.
 * MISSING_TARGETS rows (the first ones after row 3, every 7th) get an
 * empty target cell.  The same arguments write the same bytes on every
 * machine (cfl's own xoshiro stream, numbers printed with %.6g).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/core.h"

static const char *const colours[] = { "red", "green", "blue", "white", "black" };
static const double colour_effect[] = { 0.8, -0.4, 0.0, 0.3, -0.7 };
static const char *const cities[] = { "Lyon", "Oslo", "Porto", "Turku", "Graz", "Cork" };

int main(int argc, char **argv)
{
	struct cfl_rng r;
	long n, seed, missing_y = 0;
	int clf;

	if (argc < 4 || argc > 5 || (strcmp(argv[1], "clf") && strcmp(argv[1], "reg")) ||
	    (n = atol(argv[2])) < 1 || (seed = atol(argv[3])) < 0 ||
	    (argc == 5 && (missing_y = atol(argv[4])) < 0)) {
		fprintf(stderr, "usage: fixture_messy clf|reg N SEED [MISSING_TARGETS]\n");
		return 2;
	}
	clf = argv[1][0] == 'c';
	cfl_rng_seed(&r, (uint64_t)seed);
	printf("rating,legs,size,x1,x2,colour,city,%s\n", clf ? "bought" : "price");
	for (long i = 0; i < n; i++) {
		long rating = 1 + (long)cfl_rng_below(&r, 10);
		long legs = (long)cfl_rng_below(&r, 9);
		long size = 100 + (long)cfl_rng_below(&r, 120);
		double x1 = cfl_rng_normal(&r), x2 = 3 + 2 * cfl_rng_normal(&r);
		size_t ci = (size_t)cfl_rng_below(&r, 5), ti = (size_t)cfl_rng_below(&r, 6);
		double u1 = cfl_rng_uniform(&r), u2 = cfl_rng_uniform(&r);
		double u3 = cfl_rng_uniform(&r), noise = cfl_rng_normal(&r);
		/* the score rises with the rating (not linearly in its code) */
		double z = 0.9 * (double)(rating - 5) - 0.04 * (double)(rating - 5) * (rating - 5)
			   + 0.15 * (double)legs + 0.8 * x1 + 0.3 * (x2 - 3)
			   + 2 * colour_effect[ci] + 0.01 * (double)(size - 160);

		printf("%ld,%ld,%ld,", rating, legs, size);
		if (u1 < 0.04)
			printf(",");
		else if (u1 < 0.08)
			printf("NA,");
		else
			printf("%.6g,", x1);
		if (u2 < 0.08)
			printf("NA,");
		else
			printf("%.6g,", x2);
		printf("%s,%s,", colours[ci], u3 < 0.05 ? "" : cities[ti]);
		if (missing_y && i >= 3 && (i - 3) % 7 == 0 && (i - 3) / 7 < missing_y)
			printf("\n");
		else if (clf)
			printf("%s\n", z + 1.5 * noise > 3.2 ? "yes" : "no");
		else
			printf("%.6g\n", 100 + 10 * z + 5 * noise);
	}
	return ferror(stdout) ? 1 : 0;
}
