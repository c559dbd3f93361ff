/*
 * Seeded random streams: xoshiro256** seeded through splitmix64.  Every
 * random choice in cfl (splits, initialisation, shuffles, bootstrap, search)
 * comes from a stream seeded from the run seed, never from time or pid, so
 * the same seed gives the same results on every machine and worker.
 */
#include "cfl/core.h"

#include <math.h>
#include <string.h>
#include <time.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void cfl_rng_seed(struct cfl_rng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

uint64_t cfl_rng_u64(struct cfl_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double cfl_rng_uniform(struct cfl_rng *r)
{
	return (double)(cfl_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t cfl_rng_below(struct cfl_rng *r, uint64_t n)
{
	/* Rejection keeps the result unbiased for every n. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = cfl_rng_u64(r);
	while (x >= limit);
	return x % n;
}

double cfl_rng_normal(struct cfl_rng *r)
{
	double u1 = 1.0 - cfl_rng_uniform(r);	/* (0, 1]: log is finite */
	double u2 = cfl_rng_uniform(r);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void cfl_rng_shuffle(struct cfl_rng *r, size_t *v, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)cfl_rng_below(r, i), t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

uint64_t cfl_seed_derive(uint64_t base, const char *tag, uint64_t index)
{
	/* FNV-1a over the tag, mixed with base and index by splitmix. */
	uint64_t h = 0xcbf29ce484222325ULL, x;

	for (const unsigned char *p = (const unsigned char *)tag; p && *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	x = base ^ rotl(h, 17);
	x = splitmix64(&x) ^ index;
	return splitmix64(&x);
}

double cfl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double cfl_wall_time(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
