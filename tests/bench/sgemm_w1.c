/*
 * The sgemm calls of one fcnn training run, alone: for a network
 * d -> h1 -> ... -> k trained with batch B over n rows for E epochs, the
 * forward (X W^T), weight-gradient (dZ^T X) and input-gradient (dZ W)
 * products of every step, with nothing else.  Prints the flop count, the
 * seconds and GFLOP/s: the machine's sgemm throughput on exactly the shapes
 * fcnn uses, the peak its training time is compared with.  fcnn makes
 * the products of a layer with at most 2 outputs by plain loops, not
 * sgemm: their share of the seconds is printed too (narrow_seconds), so
 * the time of the sgemm calls fcnn still makes is the difference.
 * Usage: sgemm_w1 N EPOCHS BATCH D H1,H2,... K
 *        sgemm_w1 peak: single-thread sgemm at 1024^3 (best of 5), the
 *        machine's large-shape peak the training is also compared with
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int w[40], nl = 0, n, epochs, bs;
	double flops = 0, t0, t1, secs, narrow = 0;
	float *a[40], *wt[40], *g[40], *d0, *d1;
	char *s;

	if (argc == 2 && !strcmp(argv[1], "peak")) {
		enum { P = 1024 };
		float *x = calloc((size_t)P * P, sizeof(float)), *y = calloc((size_t)P * P, sizeof(float)),
		      *z = calloc((size_t)P * P, sizeof(float));
		double best = 0;

		if (!x || !y || !z)
			return 1;
		for (int i = 0; i < P * P; i++) {
			x[i] = (float)((i % 7) - 3) * 0.1f;
			y[i] = (float)((i % 13) - 6) * 0.01f;
		}
		for (int r = 0; r < 5; r++) {
			t0 = now();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P, P, P, 1, x, P, y, P,
				    0, z, P);
			secs = now() - t0;
			if (2.0 * P * P * P * 1e-9 / secs > best)
				best = 2.0 * P * P * P * 1e-9 / secs;
		}
		printf("peak_gflops %.2f\n", best);
		return 0;
	}
	if (argc != 7) {
		fprintf(stderr, "usage: sgemm_w1 N EPOCHS BATCH D H1,H2,... K\n");
		return 2;
	}
	n = atoi(argv[1]);
	epochs = atoi(argv[2]);
	bs = atoi(argv[3]);
	w[nl++] = atoi(argv[4]);
	for (s = strtok(argv[5], ","); s && nl < 38; s = strtok(NULL, ","))
		w[nl++] = atoi(s);
	w[nl++] = atoi(argv[6]);
	for (int l = 0; l < nl; l++) {
		a[l] = calloc((size_t)bs * w[l], sizeof(float));
		if (l) {
			wt[l] = calloc((size_t)w[l] * w[l - 1], sizeof(float));
			g[l] = calloc((size_t)w[l] * w[l - 1], sizeof(float));
			for (int i = 0; i < w[l] * w[l - 1]; i++)
				wt[l][i] = (float)((i % 13) - 6) * 0.01f;
		}
	}
	d0 = calloc((size_t)bs * 4096, sizeof(float));
	d1 = calloc((size_t)bs * 4096, sizeof(float));
	for (int i = 0; i < bs * w[0]; i++)
		a[0][i] = (float)((i % 7) - 3) * 0.1f;
	t0 = now();
	for (int e = 0; e < epochs; e++)
		for (int b0 = 0; b0 < n; b0 += bs) {
			int m = n - b0 < bs ? n - b0 : bs;

			for (int l = 1; l < nl; l++) {
				t1 = w[l] <= 2 ? now() : 0;
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, w[l], w[l - 1],
					    1, a[l - 1], w[l - 1], wt[l], w[l - 1], 0, a[l], w[l]);
				flops += 2.0 * m * w[l] * w[l - 1];
				narrow += w[l] <= 2 ? now() - t1 : 0;
			}
			for (int l = nl - 1; l >= 1; l--) {
				t1 = w[l] <= 2 ? now() : 0;
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w[l], w[l - 1], m,
					    1, d0, w[l], a[l - 1], w[l - 1], 0, g[l], w[l - 1]);
				flops += 2.0 * m * w[l] * w[l - 1];
				if (l > 1) {
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, w[l - 1], w[l],
						    1, d0, w[l], wt[l], w[l - 1], 0, d1, w[l - 1]);
					flops += 2.0 * m * w[l] * w[l - 1];
				}
				narrow += w[l] <= 2 ? now() - t1 : 0;
			}
		}
	secs = now() - t0;
	printf("gflop %.3f seconds %.4f gflops %.2f narrow_seconds %.4f\n", flops * 1e-9,
	       secs, flops * 1e-9 / secs, narrow);
	return 0;
}
