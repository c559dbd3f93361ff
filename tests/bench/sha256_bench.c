/*
 * Throughput of core's SHA-256 (what every data load pays): hashes a file
 * held in memory, 5 passes per implementation, and prints one line per
 * implementation this CPU runs: "sha256 NAME MBPS" (median of the passes,
 * MB = 10^6 bytes, as `openssl speed` counts).  The file is read once
 * beforehand, so disk speed is left out.
 *
 *   sha256_bench FILE
 */
#include "cfl/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_mbps(const unsigned char *buf, size_t len)
{
	double mbps[5];
	unsigned char out[32];

	for (int i = 0; i < 5; i++) {
		struct cfl_sha256 s;
		double t = now();

		cfl_sha256_init(&s);
		cfl_sha256_update(&s, buf, len);
		cfl_sha256_final(&s, out);
		mbps[i] = len / (now() - t) / 1e6;
	}
	qsort(mbps, 5, sizeof(mbps[0]), cmp_double);
	return mbps[2];
}

int main(int argc, char **argv)
{
	static const struct {
		enum cfl_sha256_impl impl;
		const char *name;
	} impls[] = {
		{ CFL_SHA256_PORTABLE, "portable" },
		{ CFL_SHA256_SHANI, "sha-ni" },
	};
	unsigned char *buf;
	long len;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: sha256_bench FILE\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		perror(argv[1]);
		return 1;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "sha256_bench: cannot read '%s'\n", argv[1]);
		return 1;
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
		if (cfl_sha256_select(impls[i].impl) == 0)
			printf("sha256 %s %.0f\n", impls[i].name,
			       median_mbps(buf, (size_t)len));
	cfl_sha256_select(CFL_SHA256_AUTO);
	free(buf);
	return 0;
}
