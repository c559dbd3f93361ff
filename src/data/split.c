/*
 * Splits from a seed: a stratified hold-out (test, then validation out of
 * what remains) and k-fold.  Same seed, same split, on every machine: the
 * only randomness is a cfl_rng seeded from (seed, "split").  Stratified
 * parts take from each class floor or ceil of its exact share (largest
 * remainders), so class ratios hold within one row.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- split: picking a stratified share ---- */

static int check_labels(const double *y, size_t n, int n_classes,
			struct cfl_err *err)
{
	for (size_t i = 0; i < n && n_classes > 0; i++)
		if (!(y[i] >= 0 && y[i] < n_classes && y[i] == floor(y[i])))
			return cfl_err_set(err, "row %zu: label %g is not a class index below %d",
					   i, y[i], n_classes);
	return 0;
}

/* Marks n_pick of rows[0..n_rows) in picked[], stratified by class when
 * n_classes > 0. */
static int pick(const size_t *rows, size_t n_rows, const double *y,
		int n_classes, size_t n_pick, struct cfl_rng *rng,
		unsigned char *picked, struct cfl_err *err)
{
	size_t k = n_classes > 0 ? (size_t)n_classes : 1;
	size_t *count, *start, *quota, *order, *pos, given = 0;
	double *rem;
	int rc = -1;

	count = cfl_calloc(k, sizeof(size_t), err);
	start = cfl_calloc(k + 1, sizeof(size_t), err);
	quota = cfl_calloc(k, sizeof(size_t), err);
	pos = cfl_calloc(k, sizeof(size_t), err);
	rem = cfl_calloc(k, sizeof(double), err);
	order = cfl_calloc(n_rows + 1, sizeof(size_t), err);
	if (!count || !start || !quota || !pos || !rem || !order)
		goto out;
	for (size_t i = 0; i < n_rows; i++)
		count[n_classes > 0 ? (size_t)y[rows[i]] : 0]++;
	for (size_t c = 0; c < k; c++)
		start[c + 1] = start[c] + count[c];
	for (size_t i = 0; i < n_rows; i++) {
		size_t c = n_classes > 0 ? (size_t)y[rows[i]] : 0;

		order[start[c] + pos[c]++] = rows[i];
	}
	for (size_t c = 0; c < k; c++) {
		double exact = (double)count[c] * (double)n_pick / (double)n_rows;

		quota[c] = (size_t)floor(exact);
		rem[c] = exact - (double)quota[c];
		given += quota[c];
		cfl_rng_shuffle(rng, order + start[c], count[c]);
	}
	/* the rows left over go to the largest remainders (lowest class first
	 * on ties, so the result depends on the seed only through shuffles) */
	while (given < n_pick) {
		size_t best = k;

		for (size_t c = 0; c < k; c++)
			if (quota[c] < count[c] && (best == k || rem[c] > rem[best]))
				best = c;
		if (best == k)
			break;
		quota[best]++;
		rem[best] = -1;
		given++;
	}
	for (size_t c = 0; c < k; c++)
		for (size_t i = 0; i < quota[c]; i++)
			picked[order[start[c] + i]] = 1;
	rc = 0;
out:
	free(count);
	free(start);
	free(quota);
	free(pos);
	free(rem);
	free(order);
	return rc;
}

size_t cfl_split_share(size_t n, double frac)
{
	size_t k;

	if (frac <= 0)
		return 0;
	k = (size_t)llround((double)n * frac);
	return k ? k : 1;
}

/* ---- split: hold-out ---- */

int cfl_split_holdout(struct cfl_split *s, const double *y, size_t n,
		      int n_classes, double test_frac, double valid_frac,
		      uint64_t seed, struct cfl_err *err)
{
	struct cfl_rng rng;
	unsigned char *mark = NULL;	/* 0 train, 1 test, 2 valid */
	size_t *rows = NULL, n_rows = 0, n_test, n_valid;

	memset(s, 0, sizeof(*s));
	if (!(test_frac >= 0 && test_frac < 1 && valid_frac >= 0 && valid_frac < 1))
		return cfl_err_set(err, "split fractions must be in [0, 1), got %g and %g",
				   test_frac, valid_frac);
	if (check_labels(y, n, n_classes, err))
		return -1;
	n_test = cfl_split_share(n, test_frac);
	n_valid = cfl_split_share(n - (n_test < n ? n_test : n), valid_frac);
	if (n_test + n_valid >= n)
		return cfl_err_set(err, "too few rows (%zu) to hold out %zu for test and %zu for validation",
				   n, n_test, n_valid);
	cfl_rng_seed(&rng, cfl_seed_derive(seed, "split", 0));
	mark = cfl_calloc(n + 1, 1, err);
	rows = cfl_calloc(n + 1, sizeof(size_t), err);
	if (!mark || !rows)
		goto fail;
	for (size_t i = 0; i < n; i++)
		rows[i] = i;
	if (n_test && pick(rows, n, y, n_classes, n_test, &rng, mark, err))
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (!mark[i])
			rows[n_rows++] = i;
	if (n_valid) {
		unsigned char *vm = cfl_calloc(n + 1, 1, err);

		if (!vm || pick(rows, n_rows, y, n_classes, n_valid, &rng, vm, err)) {
			free(vm);
			goto fail;
		}
		for (size_t i = 0; i < n; i++)
			if (vm[i])
				mark[i] = 2;
		free(vm);
	}
	s->train = cfl_calloc(n + 1, sizeof(size_t), err);
	s->valid = cfl_calloc(n_valid + 1, sizeof(size_t), err);
	s->test = cfl_calloc(n_test + 1, sizeof(size_t), err);
	if (!s->train || !s->valid || !s->test)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if (mark[i] == 1)
			s->test[s->n_test++] = i;
		else if (mark[i] == 2)
			s->valid[s->n_valid++] = i;
		else
			s->train[s->n_train++] = i;
	}
	free(mark);
	free(rows);
	return 0;
fail:
	free(mark);
	free(rows);
	cfl_split_release(s);
	return -1;
}

void cfl_split_release(struct cfl_split *s)
{
	if (!s)
		return;
	free(s->train);
	free(s->valid);
	free(s->test);
	memset(s, 0, sizeof(*s));
}

/* ---- split: k-fold ---- */

int cfl_split_kfold(size_t *fold, const double *y, size_t n, int n_classes,
		    size_t k, uint64_t seed, struct cfl_err *err)
{
	size_t n_cls = n_classes > 0 ? (size_t)n_classes : 1, next = 0;
	size_t *order, *start, *pos;
	struct cfl_rng rng;

	if (k < 2 || k > n)
		return cfl_err_set(err, "cannot make %zu folds of %zu rows", k, n);
	if (check_labels(y, n, n_classes, err))
		return -1;
	order = cfl_calloc(n + 1, sizeof(size_t), err);
	start = cfl_calloc(n_cls + 1, sizeof(size_t), err);
	pos = cfl_calloc(n_cls + 1, sizeof(size_t), err);
	if (!order || !start || !pos) {
		free(order);
		free(start);
		free(pos);
		return -1;
	}
	cfl_rng_seed(&rng, cfl_seed_derive(seed, "kfold", k));
	for (size_t i = 0; i < n; i++)
		start[(n_classes > 0 ? (size_t)y[i] : 0) + 1]++;
	for (size_t c = 0; c < n_cls; c++)
		start[c + 1] += start[c];
	for (size_t i = 0; i < n; i++) {
		size_t c = n_classes > 0 ? (size_t)y[i] : 0;

		order[start[c] + pos[c]++] = i;
	}
	/* deal each class's shuffled rows round-robin, continuing the deal
	 * across classes so whole folds stay balanced too */
	for (size_t c = 0; c < n_cls; c++) {
		cfl_rng_shuffle(&rng, order + start[c], pos[c]);
		for (size_t i = 0; i < pos[c]; i++)
			fold[order[start[c] + i]] = next++ % k;
	}
	free(order);
	free(start);
	free(pos);
	return 0;
}
