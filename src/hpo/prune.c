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
#include <stdint.h>
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

/* A step of a candidate's seeds that waits for its other seeds. */
struct gstep {
	size_t step;
	double sum;		/* of the scores reported there */
	size_t n;		/* how many */
};

/* A candidate of several seeds (cfl_pruner_seed_report). */
struct pgroup {
	int64_t id;
	size_t *at;		/* (n_at) the last step seed s reported;
				 * SIZE_MAX: not reporting (none yet, or ended) */
	int n_at;
	struct gstep *steps;	/* reported, not judged; ascending */
	size_t n_steps, cap_steps;
	size_t judged;		/* the last step judged; 0: none */
	int pruned;
};

struct cfl_pruner {
	struct cfl_pruner_opts o;
	struct report *r;
	size_t n_r, cap_r;
	struct ptrial *t;
	size_t n_t, cap_t;
	size_t first_step;	/* asha's first rung once known; 0 before */
	struct pgroup *g;
	size_t n_g, cap_g;
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
	for (size_t i = 0; i < p->n_g; i++) {
		free(p->g[i].at);
		free(p->g[i].steps);
	}
	free(p->g);
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

/* ---- candidates of several seeds ---- */

/* Candidate cand's group with room for seed `seed`, added when new; NULL
 * when out of memory. */
static struct pgroup *group_of(struct cfl_pruner *p, int64_t cand, int seed,
			       struct cfl_err *err)
{
	struct pgroup *g = NULL;

	for (size_t i = 0; i < p->n_g && !g; i++)
		if (p->g[i].id == cand)
			g = &p->g[i];
	if (!g) {
		if (p->n_g == p->cap_g) {
			size_t cap = p->cap_g ? 2 * p->cap_g : 32;
			struct pgroup *ng = cfl_realloc(p->g, cap * sizeof(*ng), err);

			if (!ng)
				return NULL;
			p->g = ng;
			p->cap_g = cap;
		}
		g = &p->g[p->n_g++];
		memset(g, 0, sizeof(*g));
		g->id = cand;
	}
	if (seed >= g->n_at) {
		size_t *na = cfl_realloc(g->at, ((size_t)seed + 1) * sizeof(*na), err);

		if (!na)
			return NULL;
		for (int s = g->n_at; s <= seed; s++)
			na[s] = SIZE_MAX;
		g->at = na;
		g->n_at = seed + 1;
	}
	return g;
}

/* Judges g's steps that every reporting seed has reached, oldest first,
 * as trial g->id; marks g pruned when the pruner says so while a seed
 * still reports.  0, or -1 with err. */
static int judge_group(struct cfl_pruner *p, struct pgroup *g,
		       struct cfl_err *err)
{
	size_t low = SIZE_MAX, i;

	for (int s = 0; s < g->n_at; s++)
		if (g->at[s] < low)
			low = g->at[s];
	for (i = 0; i < g->n_steps && g->steps[i].step <= low && !g->pruned; i++) {
		const struct gstep *st = &g->steps[i];
		int r = cfl_pruner_report(p, g->id, st->step,
					  st->sum / (double)st->n, err);

		if (r < 0)
			return -1;
		g->judged = st->step;
		if (r > 0 && low != SIZE_MAX)
			g->pruned = 1;
	}
	if (g->pruned)
		i = g->n_steps;
	if (i) {	/* steps is NULL until a seed reports */
		memmove(g->steps, g->steps + i, (g->n_steps - i) * sizeof(*g->steps));
		g->n_steps -= i;
	}
	return 0;
}

/* Adds seed's score at step to g's steps (a step judged already takes
 * nothing).  0, or -1 with err. */
static int add_gstep(struct pgroup *g, size_t step, double score,
		     struct cfl_err *err)
{
	size_t i = g->n_steps;

	if (step <= g->judged)
		return 0;
	while (i > 0 && g->steps[i - 1].step > step)
		i--;
	if (!(i > 0 && g->steps[i - 1].step == step)) {
		if (g->n_steps == g->cap_steps) {
			size_t cap = g->cap_steps ? 2 * g->cap_steps : 16;
			struct gstep *ns = cfl_realloc(g->steps, cap * sizeof(*ns), err);

			if (!ns)
				return -1;
			g->steps = ns;
			g->cap_steps = cap;
		}
		memmove(g->steps + i + 1, g->steps + i,
			(g->n_steps - i) * sizeof(*g->steps));
		g->steps[i] = (struct gstep){ step, 0, 0 };
		g->n_steps++;
		i++;
	}
	g->steps[i - 1].sum += score;
	g->steps[i - 1].n++;
	return 0;
}

/* Seed `seed` of cand is now at step `at` (SIZE_MAX: ended),
 * having reported *score there when score is not NULL: what waited for it
 * is judged.  1: the candidate is pruned; 0; -1 with err. */
static int seed_at(struct cfl_pruner *p, int64_t cand, int seed, size_t at,
		   const double *score, struct cfl_err *err)
{
	struct pgroup *g;

	if (!p || p->o.kind == CFL_PRUNE_NONE || seed < 0)
		return 0;
	if (!(g = group_of(p, cand, seed, err)))
		return -1;
	if (g->pruned)
		return 1;
	if (score && add_gstep(g, at, isnan(*score) ? -INFINITY : *score, err))
		return -1;
	g->at[seed] = at;
	return judge_group(p, g, err) ? -1 : g->pruned;
}

int cfl_pruner_seed_report(struct cfl_pruner *p, int64_t cand, int seed,
			   size_t step, double score, struct cfl_err *err)
{
	return seed_at(p, cand, seed, step, &score, err);
}

int cfl_pruner_seed_end(struct cfl_pruner *p, int64_t cand, int seed,
			struct cfl_err *err)
{
	return seed_at(p, cand, seed, SIZE_MAX, NULL, err);
}
