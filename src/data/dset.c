/*
 * A hash set of numbers or strings (open addressing, linear probing), for
 * counting distinct values of columns and collecting category levels fast.
 * It never owns the strings; its capacity is fixed at init (>= 2x the most
 * values it will see), so adding never allocates.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int cfl_dset_init(struct dset *s, size_t n_expected, int strings,
		  struct cfl_err *err)
{
	size_t cap = 16;

	memset(s, 0, sizeof(*s));
	while (cap < 2 * n_expected + 2)
		cap *= 2;
	s->cap = cap;
	s->strings = strings;
	s->used = cfl_calloc(cap, 1, err);
	if (strings)
		s->strs = cfl_calloc(cap, sizeof(*s->strs), err);
	else
		s->keys = cfl_calloc(cap, sizeof(*s->keys), err);
	if (!s->used || (strings ? !s->strs : !s->keys)) {
		cfl_dset_release(s);
		return -1;
	}
	return 0;
}

void cfl_dset_clear(struct dset *s)
{
	memset(s->used, 0, s->cap);
	s->n = 0;
}

void cfl_dset_release(struct dset *s)
{
	free(s->keys);
	free(s->strs);
	free(s->used);
	memset(s, 0, sizeof(*s));
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

int cfl_dset_add_num(struct dset *s, double v)
{
	uint64_t bits, h;

	if (v == 0)
		v = 0;	/* -0 and +0 are one value */
	memcpy(&bits, &v, sizeof(bits));
	h = mix(bits) & (s->cap - 1);
	while (s->used[h]) {
		if (s->keys[h] == bits)
			return 0;
		h = (h + 1) & (s->cap - 1);
	}
	if (2 * (s->n + 1) > s->cap)
		return 0;	/* full: cannot happen when sized as documented */
	s->used[h] = 1;
	s->keys[h] = bits;
	s->n++;
	return 1;
}

int cfl_dset_add_str(struct dset *s, const char *v)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	h = mix(h) & (s->cap - 1);
	while (s->used[h]) {
		if (strcmp(s->strs[h], v) == 0)
			return 0;
		h = (h + 1) & (s->cap - 1);
	}
	if (2 * (s->n + 1) > s->cap)
		return 0;
	s->used[h] = 1;
	s->strs[h] = v;
	s->n++;
	return 1;
}

int cfl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int cfl_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}
