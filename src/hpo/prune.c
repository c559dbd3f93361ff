/*
 * Pruners: the median rule and asynchronous successive halving (ASHA),
 * as Optuna's MedianPruner and SuccessiveHalvingPruner decide, on the
 * intermediate scores trials report while they train (include/cfl/hpo.h).
 *
 * Invariant: a decision depends on the reports and completions made before
 * it, in their order, and on nothing else (no clock, no randomness).
 * Sizes are small (trials x steps of one run), so lookups are scans.
 */
#include "cfl/hpo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct report {
	int64_t trial;
	size_t step;
	double score;		/* NaN reported: -inf */
	int rung;		/* asha: the rung it was recorded at; -1: none */
};

struct ptrial {
	int64_t id;
	double best;		/* best score so far */
	int completed;
	int next_rung;		/* asha: the next rung it reaches */
};

struct cfl_pruner {
	struct cfl_pruner_opts o;
	struct report *r;
	size_t n_r, cap_r;
	struct ptrial *t;
	size_t n_t, cap_t;
	size_t first_step;	/* asha's first rung once known; 0 before */
};

static const char *const kind_names[] = { "none", "median", "asha" };

const char *cfl_prune_kind_name(enum cfl_prune_kind k)
{
	return (unsigned)k < 3 ? kind_names[k] : "?";
}

int cfl_prune_kind_lookup(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (name && !strcmp(name, kind_names[i]))
			return i;
	return -1;
}

void cfl_pruner_opts_init(struct cfl_pruner_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = CFL_PRUNE_NONE;
	o->n_startup = 5;
	o->min_step = 0;
	o->eta = 3;
}

struct cfl_pruner *cfl_pruner_new(const struct cfl_pruner_opts *o,
				  struct cfl_err *err)
{
	struct cfl_pruner *p;

	if (o->kind == CFL_PRUNE_ASHA && !(o->eta > 1)) {
		cfl_err_set(err, "asha: eta must be more than 1, got %g", o->eta);
		return NULL;
	}
	p = cfl_calloc(1, sizeof(*p), err);
	if (p)
		p->o = *o;
	return p;
}

void cfl_pruner_free(struct cfl_pruner *p)
{
	if (!p)
		return;
	free(p->r);
	free(p->t);
	free(p);
}

/* Trial id's record, added when new; NULL when out of memory. */
static struct ptrial *trial_of(struct cfl_pruner *p, int64_t id,
			       struct cfl_err *err)
{
	for (size_t i = 0; i < p->n_t; i++)
		if (p->t[i].id == id)
			return &p->t[i];
	if (p->n_t == p->cap_t) {
		size_t cap = p->cap_t ? 2 * p->cap_t : 32;
		struct ptrial *nt = cfl_realloc(p->t, cap * sizeof(*nt), err);

		if (!nt)
			return NULL;
		p->t = nt;
		p->cap_t = cap;
	}
	p->t[p->n_t] = (struct ptrial){ id, -INFINITY, 0, 0 };
	return &p->t[p->n_t++];
}

static int add_report(struct cfl_pruner *p, int64_t trial, size_t step,
		      double score, int rung, struct cfl_err *err)
{
	if (p->n_r == p->cap_r) {
		size_t cap = p->cap_r ? 2 * p->cap_r : 128;
		struct report *nr = cfl_realloc(p->r, cap * sizeof(*nr), err);

		if (!nr)
			return -1;
		p->r = nr;
		p->cap_r = cap;
	}
	p->r[p->n_r++] = (struct report){ trial, step, score, rung };
	return 0;
}

static int by_score_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

static int is_completed(const struct cfl_pruner *p, int64_t id)
{
	for (size_t i = 0; i < p->n_t; i++)
		if (p->t[i].id == id)
			return p->t[i].completed;
	return 0;
}

/* The median rule: 1 when t's best so far is below the median of the
 * completed trials' scores at step. */
static int median_says(const struct cfl_pruner *p, const struct ptrial *t,
		       size_t step, struct cfl_err *err)
{
	double *v, med;
	size_t n = 0;

	if (step < p->o.min_step)
		return 0;
	v = cfl_calloc(p->n_r + 1, sizeof(double), err);
	if (!v)
		return -1;
	for (size_t i = 0; i < p->n_r; i++)
		if (p->r[i].step == step && p->r[i].trial != t->id &&
		    is_completed(p, p->r[i].trial))
			v[n++] = p->r[i].score;
	if (n == 0 || n < p->o.n_startup) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(double), by_score_desc);
	med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	free(v);
	return t->best < med;
}

/* The step of rung k. */
static size_t rung_step(const struct cfl_pruner *p, int k)
{
	double s = (double)p->first_step;

	for (int i = 0; i < k; i++)
		s *= p->o.eta;
	return s > 1e15 ? (size_t)1e15 : (size_t)ceil(s - 1e-9);
}

/* ASHA: t reached step with score; each rung it passed records the score
 * and decides.  1: prune. */
static int asha_says(struct cfl_pruner *p, struct ptrial *t, size_t step,
		     double score, struct cfl_err *err)
{
	if (!p->first_step)
		p->first_step = p->o.min_step ? p->o.min_step :
				(size_t)ceil((double)step * p->o.eta - 1e-9);
	while (rung_step(p, t->next_rung) <= step) {
		int k = t->next_rung++;
		double *v;
		size_t n = 0;
		long top;
		int keep;

		if (add_report(p, t->id, step, score, k, err))
			return -1;
		v = cfl_calloc(p->n_r, sizeof(double), err);
		if (!v)
			return -1;
		for (size_t i = 0; i < p->n_r; i++)
			if (p->r[i].rung == k)
				v[n++] = p->r[i].score;
		qsort(v, n, sizeof(double), by_score_desc);
		/* the top floor(n / eta); the best alone when that is none */
		top = (long)floor((double)n / p->o.eta) - 1;
		if (top < 0)
			top = 0;
		keep = score >= v[top];
		free(v);
		if (!keep)
			return 1;
	}
	return 0;
}

int cfl_pruner_report(struct cfl_pruner *p, int64_t trial, size_t step,
		      double score, struct cfl_err *err)
{
	struct ptrial *t;

	if (isnan(score))
		score = -INFINITY;
	if (!p || p->o.kind == CFL_PRUNE_NONE)
		return 0;
	t = trial_of(p, trial, err);
	if (!t)
		return -1;
	if (score > t->best)
		t->best = score;
	if (p->o.kind == CFL_PRUNE_ASHA)
		return asha_says(p, t, step, score, err);
	if (add_report(p, trial, step, score, -1, err))
		return -1;
	return median_says(p, t, step, err);
}

void cfl_pruner_complete(struct cfl_pruner *p, int64_t trial)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_t; i++)
		if (p->t[i].id == trial)
			p->t[i].completed = 1;
}
