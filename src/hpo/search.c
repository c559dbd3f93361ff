/*
 * Search methods over a space: random (scrambled Sobol points), grid (the
 * cartesian product, first parameter slowest) and Bayesian optimisation (a
 * GP on the unit cube, log expected improvement, batches for parallel
 * workers by kriging believer or constant liar).
 *
 * Invariant: a search's proposals depend only on its options and on the
 * sequence of ask / tell calls (randomness comes from streams derived from
 * the seed and the ask index, never from time), and no point is proposed
 * twice.  Failed points are remembered (not proposed again) but never
 * enter the GP.  GSL only; no cblas.h here.
 */
#include "cfl/hpo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_qrng.h>

#define MAX_GRID 10000000u
#define N_CAND_BASE 512		/* Sobol candidates per BO proposal ... */
#define N_CAND_PER_DIM 64	/* ... plus this many per dimension */
#define N_LOCAL_CENTRES 5	/* best points perturbed for local candidates */
#define N_LOCAL_PER 40
#define N_REFINE 3		/* best candidates refined by Nelder-Mead */
#define REFINE_EVALS 80
#define MAP_ALWAYS 30	/* bo: MAP hyper-parameters at every ask up to this
			 * many observations, then ... */
#define MAP_GROWTH 16	/* ... once the data grew by 1/this since the last */
#define WARP_RATIO 5.0	/* log-warp outputs when max - median > this x (median - min) */
#define WARP_DELTA 1.0	/* ... as log(y - min + this x (median - min)) */

enum { PENDING, OK, FAILED };

struct point {
	double *z;		/* (d) canonical coordinates */
	char *key;		/* the values joined by '\x1f': duplicate check */
	int status;
	double y;		/* told value, as minimised */
};

struct cfl_search {
	struct cfl_space space;
	struct cfl_search_opts o;
	size_t d;		/* free parameters */
	size_t *free_idx;	/* (d) their index in the space */
	unsigned char *cat;	/* (d) 1 for a choice */
	size_t n_init;
	double finite_size;	/* points of a finite space, or INFINITY */
	/* grid */
	size_t grid_size;
	size_t *grid_n;		/* (d) values per dimension */
	double **grid_z;	/* (d)(grid_n) canonical values */
	size_t *grid_pick;	/* (n_pick) grid indices drawn when the budget
				 * is smaller than the grid, in ask order */
	size_t *grid_sorted;	/* (n_pick) the same, sorted, to skip them */
	size_t n_pick;
	size_t grid_next;	/* past the picks: next index in grid order */
	/* random / initial points */
	gsl_qrng *qrng;
	size_t qrng_dim;
	uint32_t *shift;	/* (d) digital shift of the Sobol points */
	size_t n_sobol;		/* Sobol points drawn */
	/* history */
	struct point *pts;
	size_t n_pts, cap;
	struct cfl_gp *gp;
	double *theta;		/* (d + 2) last MAP, warm start */
	int has_theta;
	size_t n_map;		/* observations at the last MAP fit */
};

const char *cfl_search_method_name(enum cfl_search_method m)
{
	switch (m) {
	case CFL_SEARCH_BO: return "bo";
	case CFL_SEARCH_RANDOM: return "random";
	case CFL_SEARCH_GRID: return "grid";
	}
	return "?";
}

int cfl_search_method_lookup(const char *name)
{
	if (strcmp(name, "bo") == 0)
		return CFL_SEARCH_BO;
	if (strcmp(name, "random") == 0)
		return CFL_SEARCH_RANDOM;
	if (strcmp(name, "grid") == 0)
		return CFL_SEARCH_GRID;
	return -1;
}

void cfl_search_opts_init(struct cfl_search_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->method = CFL_SEARCH_BO;
	o->liar = CFL_LIAR_KRIGING;
}

size_t cfl_search_n_asked(const struct cfl_search *s)
{
	return s->n_pts;
}

size_t cfl_search_grid_size(const struct cfl_search *s)
{
	return s->o.method == CFL_SEARCH_GRID ? s->grid_size : 0;
}

/* ---- values and canonical coordinates ---- */

static const struct cfl_space_param *dim_param(const struct cfl_search *s,
					       size_t k)
{
	return &s->space.params[s->free_idx[k]];
}

static int is_log(const struct cfl_space_param *p)
{
	return p->dist == CFL_DIST_LOGUNIFORM;
}

/* The canonical coordinate (GP input) of a value of p. */
static double z_of_value(const struct cfl_space_param *p, double v)
{
	if (p->dist == CFL_DIST_CHOICE)
		return v;
	if (p->hi == p->lo)
		return 0.5;
	if (is_log(p))
		return (log(v) - log(p->lo)) / (log(p->hi) - log(p->lo));
	return (v - p->lo) / (p->hi - p->lo);
}

/* The value of p nearest to canonical z (rounded for integers). */
static double value_of_z(const struct cfl_space_param *p, double z)
{
	double v;

	if (p->dist == CFL_DIST_CHOICE) {
		v = floor(z + 0.5);
		v = v < 0 ? 0 : v;
		return v > (double)p->n_choices - 1 ? (double)p->n_choices - 1 : v;
	}
	z = z < 0 ? 0 : z > 1 ? 1 : z;
	if (is_log(p))
		v = exp(log(p->lo) + z * (log(p->hi) - log(p->lo)));
	else
		v = p->lo + z * (p->hi - p->lo);
	if (p->integer)
		v = floor(v + 0.5);
	return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
}

/* The value of p for a uniform u in [0, 1): every integer and every
 * choice gets an equal share (random search, initial points). */
static double value_of_u(const struct cfl_space_param *p, double u)
{
	double v;

	if (p->dist == CFL_DIST_CHOICE) {
		v = floor(u * (double)p->n_choices);
		return v > (double)p->n_choices - 1 ? (double)p->n_choices - 1 : v;
	}
	if (!p->integer)
		return value_of_z(p, u);
	if (is_log(p))
		v = floor(exp(log(p->lo) + u * (log(p->hi + 1) - log(p->lo))));
	else
		v = p->lo + floor(u * (p->hi - p->lo + 1));
	return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
}

/* Formats a number value of p: integers exactly, reals with 6 significant
 * digits unless that would leave the range. */
static void format_number(const struct cfl_space_param *p, double v,
			  char *out, size_t cap)
{
	if (p->integer) {
		snprintf(out, cap, "%.0f", v);
		return;
	}
	snprintf(out, cap, "%.6g", v);
	double back = strtod(out, NULL);

	if (back < p->lo || back > p->hi)
		snprintf(out, cap, "%.17g", v);
}

/* The text of dimension k's value v, and its snapped canonical z. */
static double dim_text(const struct cfl_search *s, size_t k, double v,
		       char *out, size_t cap)
{
	const struct cfl_space_param *p = dim_param(s, k);

	if (p->dist == CFL_DIST_CHOICE) {
		snprintf(out, cap, "%s", p->choices[(size_t)v]);
		return v;
	}
	format_number(p, v, out, cap);
	return z_of_value(p, strtod(out, NULL));
}

/* ---- points ---- */

/* Builds the point of values vals (d): its snapped z and key.  Returns a
 * malloc'd key and fills z, or NULL on allocation failure. */
static char *make_key(const struct cfl_search *s, const double *vals,
		      double *z, struct cfl_err *err)
{
	struct cfl_buf b;
	char t[400];

	cfl_buf_init(&b);
	if (cfl_buf_puts(&b, "")) {
		cfl_err_set(err, "out of memory");
		return NULL;
	}
	for (size_t k = 0; k < s->d; k++) {
		z[k] = dim_text(s, k, vals[k], t, sizeof(t));
		if ((k && cfl_buf_puts(&b, "\x1f")) || cfl_buf_puts(&b, t)) {
			cfl_buf_release(&b);
			cfl_err_set(err, "out of memory");
			return NULL;
		}
	}
	return b.data;
}

static int seen(const struct cfl_search *s, const char *key)
{
	for (size_t i = 0; i < s->n_pts; i++)
		if (strcmp(s->pts[i].key, key) == 0)
			return 1;
	return 0;
}

/* Values of canonical z (snapped to what can be written). */
static void values_of_z(const struct cfl_search *s, const double *z,
			double *vals)
{
	for (size_t k = 0; k < s->d; k++)
		vals[k] = value_of_z(dim_param(s, k), z[k]);
}

/* Adds the point with values vals when new: 0 added, 1 already asked. */
static int add_point(struct cfl_search *s, const double *vals,
		     struct cfl_err *err)
{
	double *z = cfl_calloc(s->d ? s->d : 1, sizeof(double), err);
	char *key = z ? make_key(s, vals, z, err) : NULL;

	if (!key) {
		free(z);
		return -1;
	}
	if (seen(s, key)) {
		free(z);
		free(key);
		return 1;
	}
	if (s->n_pts == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct point *t = cfl_realloc(s->pts, cap * sizeof(*t), err);

		if (!t) {
			free(z);
			free(key);
			return -1;
		}
		s->pts = t;
		s->cap = cap;
	}
	s->pts[s->n_pts].z = z;
	s->pts[s->n_pts].key = key;
	s->pts[s->n_pts].status = PENDING;
	s->pts[s->n_pts].y = NAN;
	s->n_pts++;
	return 0;
}

/* The params of point i: every space parameter in order. */
static int point_params(const struct cfl_search *s, size_t i,
			struct cfl_params *out, struct cfl_err *err)
{
	double vals[s->d ? s->d : 1];
	char t[400];
	size_t k = 0;

	cfl_params_release(out);
	values_of_z(s, s->pts[i].z, vals);
	for (size_t j = 0; j < s->space.n_params; j++) {
		const struct cfl_space_param *p = &s->space.params[j];
		int rc;

		if (p->dist == CFL_DIST_FIXED) {
			rc = cfl_params_set(out, p->name, p->value, err);
		} else {
			dim_text(s, k, vals[k], t, sizeof(t));
			k++;
			rc = cfl_params_set(out, p->name, t, err);
		}
		if (rc)
			return -1;
	}
	return 0;
}

/* ---- Sobol points with a hash-based Owen scramble ---- */

static uint32_t reverse_bits(uint32_t x)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
	x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
	return (x >> 16) | (x << 16);
}

/* Nested uniform (Owen) scrambling of a 32-bit Sobol coordinate by the
 * Laine-Karras hash (Burley 2020): each bit is flipped depending on the
 * bits above it, so the points keep their stratification without the
 * repeating offsets a plain digital shift leaves. */
static double owen(uint32_t v, uint32_t seed)
{
	v = reverse_bits(v);
	v += seed;
	v ^= v * 0x6c50b47cu;
	v ^= v * 0xb82f1e52u;
	v ^= v * 0xc7afe638u;
	v ^= v * 0x8d22f6e6u;
	v = reverse_bits(v);
	return (v + 0.5) / 4294967296.0;
}

static void next_u(struct cfl_search *s, double *u)
{
	if (s->d == 0)
		return;
	if (s->qrng) {
		double q[s->qrng_dim];

		gsl_qrng_get(s->qrng, q);
		for (size_t k = 0; k < s->d; k++) {
			if (s->d <= 40) {
				uint32_t v = (uint32_t)(q[k] * 1073741824.0) << 2;

				u[k] = owen(v, s->shift[k]);
			} else {
				double t = q[k] + s->shift[k] / 4294967296.0;

				u[k] = t - floor(t);
			}
		}
	} else {
		struct cfl_rng r;

		cfl_rng_seed(&r, cfl_seed_derive(s->o.seed, "sobol", s->n_sobol));
		for (size_t k = 0; k < s->d; k++)
			u[k] = cfl_rng_uniform(&r);
	}
	s->n_sobol++;
}

static gsl_qrng *new_qrng(size_t d)
{
	if (d == 0)
		return NULL;
	if (d <= 40)
		return gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)d);
	if (d <= 1229)
		return gsl_qrng_alloc(gsl_qrng_halton, (unsigned)d);
	return NULL;
}

/* The next Sobol point not asked yet: 0 added, 1 none found. */
static int ask_sobol(struct cfl_search *s, struct cfl_err *err)
{
	double u[s->d ? s->d : 1], vals[s->d ? s->d : 1];

	for (size_t tries = 0; tries < 2000; tries++) {
		int rc;

		next_u(s, u);
		for (size_t k = 0; k < s->d; k++)
			vals[k] = value_of_u(dim_param(s, k), u[k]);
		rc = add_point(s, vals, err);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

/* ---- grid ---- */

static int grid_init(struct cfl_search *s, struct cfl_err *err)
{
	double total = 1;

	s->grid_n = cfl_calloc(s->d ? s->d : 1, sizeof(size_t), err);
	s->grid_z = cfl_calloc(s->d ? s->d : 1, sizeof(double *), err);
	if (!s->grid_n || !s->grid_z)
		return -1;
	for (size_t k = 0; k < s->d; k++) {
		const struct cfl_space_param *p = dim_param(s, k);
		size_t n;

		if (p->dist == CFL_DIST_CHOICE) {
			n = p->n_choices;
		} else if (p->integer) {
			if (p->hi - p->lo + 1 > MAX_GRID)
				return cfl_err_set(err, "grid search: '%s' has too many values; give --grid-points",
						   p->name);
			n = (size_t)(p->hi - p->lo + 1);
		} else {
			if (!s->o.grid_points)
				return cfl_err_set(err, "grid search needs --grid-points for the continuous range of '%s'",
						   p->name);
			n = s->o.grid_points;
		}
		s->grid_z[k] = cfl_calloc(n, sizeof(double), err);
		if (!s->grid_z[k])
			return -1;
		/* values, snapped and without repeats (rounded integers) */
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			double v;

			if (p->dist == CFL_DIST_CHOICE)
				v = (double)i;
			else if (p->integer && n == (size_t)(p->hi - p->lo + 1))
				v = p->lo + (double)i;
			else
				v = value_of_z(p, n == 1 ? 0.5 : (double)i / (double)(n - 1));
			if (m && s->grid_z[k][m - 1] == v)
				continue;
			s->grid_z[k][m++] = v;
		}
		s->grid_n[k] = m;
		total *= (double)m;
		if (total > MAX_GRID)
			return cfl_err_set(err, "grid search: the grid has more than %u points",
					   MAX_GRID);
	}
	s->grid_size = (size_t)total;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

/* With a budget below the grid's size, the candidates are budget grid
 * points drawn without replacement with the search's seed (Floyd's
 * algorithm): taking the first points in enumeration order would never
 * vary the leading parameters. */
static int grid_draw(struct cfl_search *s, struct cfl_err *err)
{
	struct cfl_rng r;
	size_t k = s->o.budget, n = s->grid_size;

	if (!k || k >= n)
		return 0;
	s->grid_pick = cfl_calloc(k, sizeof(size_t), err);
	s->grid_sorted = cfl_calloc(k, sizeof(size_t), err);
	if (!s->grid_pick || !s->grid_sorted)
		return -1;
	cfl_rng_seed(&r, cfl_seed_derive(s->o.seed, "grid-subset", 0));
	for (size_t j = n - k; j < n; j++) {
		size_t t = (size_t)cfl_rng_below(&r, j + 1);

		if (bsearch(&t, s->grid_sorted, s->n_pick, sizeof(size_t), cmp_size))
			t = j;
		s->grid_pick[s->n_pick] = t;
		/* insert t into the sorted copy */
		size_t at = s->n_pick;

		while (at > 0 && s->grid_sorted[at - 1] > t) {
			s->grid_sorted[at] = s->grid_sorted[at - 1];
			at--;
		}
		s->grid_sorted[at] = t;
		s->n_pick++;
	}
	/* Floyd's draw puts late indices last; shuffle the ask order */
	for (size_t i = k; i > 1; i--) {
		size_t j = (size_t)cfl_rng_below(&r, i), t = s->grid_pick[i - 1];

		s->grid_pick[i - 1] = s->grid_pick[j];
		s->grid_pick[j] = t;
	}
	return 0;
}

static int ask_grid(struct cfl_search *s, struct cfl_err *err)
{
	double vals[s->d ? s->d : 1];
	size_t idx = s->n_pts;

	if (idx >= s->grid_size)
		return 1;
	if (idx < s->n_pick) {
		idx = s->grid_pick[idx];
	} else if (s->n_pick) {
		/* past the budget: the rest of the grid in order */
		while (bsearch(&s->grid_next, s->grid_sorted, s->n_pick,
			       sizeof(size_t), cmp_size))
			s->grid_next++;
		idx = s->grid_next++;
	}
	for (size_t k = s->d; k-- > 0;) {
		vals[k] = s->grid_z[k][idx % s->grid_n[k]];
		idx /= s->grid_n[k];
	}
	/* grid values are distinct, so this is never a repeat */
	return add_point(s, vals, err) < 0 ? -1 : 0;
}

/* ---- Bayesian optimisation ---- */

struct acq {
	const struct cfl_gp *gp;
	const struct cfl_search *s;
	double best;
	const double *fixed_z;	/* categorical coordinates held fixed */
	size_t n_cont;
	const size_t *cont;	/* (n_cont) continuous dimensions */
};

static double acq_at(const struct acq *a, const double *z)
{
	double mean, var;

	cfl_gp_predict(a->gp, z, 1, &mean, &var);
	return cfl_log_ei(mean, sqrt(var), a->best);
}

static double nm_f(const gsl_vector *v, void *p)
{
	const struct acq *a = p;
	double z[a->s->d];
	double pen = 0;

	memcpy(z, a->fixed_z, sizeof(z));
	for (size_t i = 0; i < a->n_cont; i++) {
		double t = gsl_vector_get(v, i);

		if (t < 0 || t > 1) {
			pen += fabs(t < 0 ? t : t - 1);
			t = t < 0 ? 0 : 1;
		}
		z[a->cont[i]] = t;
	}
	double f = acq_at(a, z);

	if (!isfinite(f))
		f = -1e300;
	return -f + 1e3 * pen;
}

/* Nelder-Mead on the continuous coordinates of z (in place). */
static void refine(struct acq *a, double *z)
{
	size_t n = a->n_cont;
	gsl_multimin_fminimizer *m;
	gsl_vector *x, *step;
	gsl_multimin_function fn;

	if (n == 0)
		return;
	m = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, n);
	x = gsl_vector_alloc(n);
	step = gsl_vector_alloc(n);
	if (!m || !x || !step)
		goto out;
	for (size_t i = 0; i < n; i++) {
		gsl_vector_set(x, i, z[a->cont[i]]);
		gsl_vector_set(step, i, 0.02);
	}
	a->fixed_z = z;
	fn.f = nm_f;
	fn.n = n;
	fn.params = a;
	if (gsl_multimin_fminimizer_set(m, &fn, x, step) != GSL_SUCCESS)
		goto out;
	for (size_t it = 0; it < REFINE_EVALS; it++) {
		if (gsl_multimin_fminimizer_iterate(m) != GSL_SUCCESS)
			break;
		if (gsl_multimin_fminimizer_size(m) < 1e-6)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		double t = gsl_vector_get(m->x, i);

		z[a->cont[i]] = t < 0 ? 0 : t > 1 ? 1 : t;
	}
out:
	if (m)
		gsl_multimin_fminimizer_free(m);
	if (x)
		gsl_vector_free(x);
	if (step)
		gsl_vector_free(step);
}

struct scored {
	double f;
	size_t i;
};

static int by_f_desc(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->f != y->f)
		return x->f > y->f ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int by_y(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->f != y->f)
		return x->f < y->f ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int ask_bo(struct cfl_search *s, struct cfl_err *err)
{
	size_t d = s->d, n_ok = 0, n_pend = 0, n_fail = 0, k = s->n_pts;
	double *x = NULL, *y = NULL, *cz = NULL, *cf = NULL, *mean = NULL,
	       *var = NULL, mu = 0, sd = 0;
	struct scored *rank = NULL, *obs = NULL;
	size_t n_cand, nc = 0;
	int rc = -1;

	for (size_t i = 0; i < s->n_pts; i++) {
		n_ok += s->pts[i].status == OK;
		n_pend += s->pts[i].status == PENDING;
		n_fail += s->pts[i].status == FAILED;
	}
	if (k < s->n_init || n_ok < 2 || d == 0) {
		rc = ask_sobol(s, err);
		return rc;
	}
	n_cand = N_CAND_BASE + N_CAND_PER_DIM * d;
	size_t n_all = n_cand + N_LOCAL_CENTRES * N_LOCAL_PER + N_REFINE;

	x = cfl_calloc((n_ok + n_pend + n_fail) * d, sizeof(double), err);
	y = cfl_calloc(n_ok + n_pend + n_fail, sizeof(double), err);
	obs = cfl_calloc(n_ok, sizeof(*obs), err);
	cz = cfl_calloc(n_all * d, sizeof(double), err);
	cf = cfl_calloc(n_all, sizeof(double), err);
	mean = cfl_calloc(n_all + n_pend + n_fail, sizeof(double), err);
	var = cfl_calloc(n_all + n_pend, sizeof(double), err);
	rank = cfl_calloc(n_all, sizeof(*rank), err);
	if (!x || !y || !obs || !cz || !cf || !mean || !var || !rank)
		goto out;

	/* observed points; outputs warped when heavy-tailed, standardised */
	{
		size_t j = 0;

		for (size_t i = 0; i < s->n_pts; i++) {
			if (s->pts[i].status != OK)
				continue;
			memcpy(x + j * d, s->pts[i].z, d * sizeof(double));
			y[j] = s->pts[i].y;
			obs[j].f = y[j];
			obs[j].i = i;
			j++;
		}
		qsort(obs, n_ok, sizeof(*obs), by_y);
		double lo = obs[0].f, med = obs[n_ok / 2].f, hi = obs[n_ok - 1].f;

		/* A few huge values (Rosenbrock far from its valley, a diverged
		 * training) would flatten a GP fitted on raw values; a log warp
		 * keeps the order, hence the minimiser, and evens the scale. */
		if (med > lo && hi - med > WARP_RATIO * (med - lo)) {
			double delta = (med - lo) * WARP_DELTA;

			for (j = 0; j < n_ok; j++) {
				y[j] = log(y[j] - lo + delta);
				obs[j].f = log(obs[j].f - lo + delta);
			}
		}
		for (j = 0; j < n_ok; j++)
			mu += y[j];
		mu /= (double)n_ok;
		for (j = 0; j < n_ok; j++)
			sd += (y[j] - mu) * (y[j] - mu);
		sd = sqrt(sd / (double)n_ok);
		if (!(sd > 0))
			sd = 1;
		for (j = 0; j < n_ok; j++)
			y[j] = (y[j] - mu) / sd;
	}
	double best = (obs[0].f - mu) / sd;

	/* The MAP fit (BFGS, O(n^3) per step) dominates a proposal's time
	 * once there are many points, while the hyper-parameters then move
	 * little from one point to the next: past MAP_ALWAYS observations they
	 * are refitted only when the data grew by an eighth since the last
	 * fit, each time with one random restart; in between the GP is
	 * conditioned on the new data with the last theta, which extends its
	 * Cholesky factor by the new rows only. */
	if (!s->has_theta || n_ok <= MAP_ALWAYS ||
	    n_ok >= s->n_map + (s->n_map / MAP_GROWTH > 1 ? s->n_map / MAP_GROWTH : 1)) {
		if (cfl_gp_fit_map(s->gp, x, y, n_ok, s->has_theta ? s->theta : NULL,
				   !s->has_theta || n_ok <= 20 ? 2 : n_ok > MAP_ALWAYS || k % 8 == 0 ? 1 : 0,
				   cfl_seed_derive(s->o.seed, "bo-map", k), err))
			goto out;
		memcpy(s->theta, cfl_gp_theta(s->gp), (d + 2) * sizeof(double));
		s->has_theta = 1;
		s->n_map = n_ok;
	} else if (cfl_gp_fit(s->gp, x, y, n_ok, s->theta, err)) {
		goto out;
	}

	/* Pending points get fantasy values, so a batch spreads out; failed
	 * points get the worst value seen, so the search moves away from
	 * them.  Neither enters the hyper-parameters fitted above: a failure
	 * never distorts the model's scales. */
	if (n_pend || n_fail) {
		size_t j = n_ok;
		double worst = (obs[n_ok - 1].f - mu) / sd;

		for (size_t i = 0; i < s->n_pts; i++)
			if (s->pts[i].status == PENDING)
				memcpy(x + (j++) * d, s->pts[i].z, d * sizeof(double));
		for (size_t i = 0; i < s->n_pts; i++)
			if (s->pts[i].status == FAILED)
				memcpy(x + (j++) * d, s->pts[i].z, d * sizeof(double));
		if (n_pend)
			cfl_gp_predict(s->gp, x + n_ok * d, n_pend, mean, NULL);
		for (j = 0; j < n_pend; j++)
			y[n_ok + j] = s->o.liar == CFL_LIAR_KRIGING ? mean[j] : best;
		/* the fantasies count as values seen, the incumbent too (the
		 * kriging believer of Ginsbourger et al.): measured against the
		 * observed best alone, a batch spends its slots exploring */
		for (j = 0; j < n_pend; j++)
			if (y[n_ok + j] < best)
				best = y[n_ok + j];
		for (j = 0; j < n_fail; j++)
			y[n_ok + n_pend + j] = worst;
		if (cfl_gp_fit(s->gp, x, y, n_ok + n_pend + n_fail, s->theta, err))
			goto out;
	}

	/* candidates: scrambled Sobol points of this ask ... */
	{
		gsl_qrng *q = d <= 40 ? gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)d) :
			      d <= 1229 ? gsl_qrng_alloc(gsl_qrng_halton, (unsigned)d) : NULL;
		struct cfl_rng r;
		uint32_t shift[d];
		double u[d], vals[d];

		cfl_rng_seed(&r, cfl_seed_derive(s->o.seed, "bo-cand", k));
		for (size_t j = 0; j < d; j++)
			shift[j] = (uint32_t)cfl_rng_u64(&r);
		for (size_t c = 0; c < n_cand; c++) {
			if (q) {
				gsl_qrng_get(q, u);
				for (size_t j = 0; j < d; j++) {
					double t = u[j] + shift[j] / 4294967296.0;

					u[j] = d <= 40 ? owen((uint32_t)(u[j] * 1073741824.0) << 2,
							      shift[j]) : t - floor(t);
				}
			} else {
				for (size_t j = 0; j < d; j++)
					u[j] = cfl_rng_uniform(&r);
			}
			for (size_t j = 0; j < d; j++)
				vals[j] = value_of_u(dim_param(s, j), u[j]);
			for (size_t j = 0; j < d; j++)
				cz[nc * d + j] = z_of_value(dim_param(s, j), vals[j]);
			nc++;
		}
		if (q)
			gsl_qrng_free(q);
		/* ... and perturbations of the best points seen */
		for (size_t c = 0; c < N_LOCAL_CENTRES && c < n_ok; c++) {
			const double *z0 = s->pts[obs[c].i].z;

			for (size_t t = 0; t < N_LOCAL_PER; t++) {
				double scale = t % 3 == 0 ? 0.2 : t % 3 == 1 ? 0.05 : 0.01;
				double *z = cz + nc * d;

				for (size_t j = 0; j < d; j++) {
					const struct cfl_space_param *p = dim_param(s, j);

					if (p->dist == CFL_DIST_CHOICE) {
						z[j] = z0[j];
						if (cfl_rng_uniform(&r) * (double)d < 1)
							z[j] = (double)cfl_rng_below(&r, p->n_choices);
					} else {
						double v = z0[j] + scale * cfl_rng_normal(&r);

						z[j] = v < 0 ? 0 : v > 1 ? 1 : v;
					}
				}
				values_of_z(s, z, vals);
				for (size_t j = 0; j < d; j++)
					z[j] = z_of_value(dim_param(s, j), vals[j]);
				nc++;
			}
		}
	}
	/* log EI of every candidate */
	{
		struct acq a = { s->gp, s, best, NULL, 0, NULL };
		size_t cont[d], n_cont = 0;

		for (size_t j = 0; j < d; j++)
			if (!s->cat[j])
				cont[n_cont++] = j;
		a.cont = cont;
		a.n_cont = n_cont;
		cfl_gp_predict(s->gp, cz, nc, mean, var);
		for (size_t c = 0; c < nc; c++) {
			cf[c] = cfl_log_ei(mean[c], sqrt(var[c]), best);
			if (!isfinite(cf[c]))
				cf[c] = -1e300;
			rank[c].f = cf[c];
			rank[c].i = c;
		}
		qsort(rank, nc, sizeof(*rank), by_f_desc);
		/* local refinement of the best few */
		size_t n_top = nc < N_REFINE ? nc : N_REFINE;
		for (size_t t = 0; t < n_top; t++) {
			double *z = cz + (nc + t) * d, vals[d];

			memcpy(z, cz + rank[t].i * d, d * sizeof(double));
			refine(&a, z);
			values_of_z(s, z, vals);
			for (size_t j = 0; j < d; j++)
				z[j] = z_of_value(dim_param(s, j), vals[j]);
		}
		for (size_t t = 0; t < n_top; t++) {
			double f = acq_at(&a, cz + (nc + t) * d);

			cf[nc + t] = isfinite(f) ? f : -1e300;
		}
		nc += n_top;
		for (size_t c = 0; c < nc; c++) {
			rank[c].f = cf[c];
			rank[c].i = c;
		}
		qsort(rank, nc, sizeof(*rank), by_f_desc);
	}
	/* the best candidate not asked before */
	for (size_t t = 0; t < nc; t++) {
		double vals[d];

		values_of_z(s, cz + rank[t].i * d, vals);
		rc = add_point(s, vals, err);
		if (rc <= 0)
			goto out;
	}
	rc = ask_sobol(s, err);
out:
	free(x);
	free(y);
	free(obs);
	free(cz);
	free(cf);
	free(mean);
	free(var);
	free(rank);
	return rc;
}

/* ---- life cycle, ask, tell ---- */

static int copy_space(struct cfl_space *dst, const struct cfl_space *src,
		      struct cfl_err *err)
{
	cfl_space_init(dst);
	dst->name = cfl_strdup(src->name ? src->name : "params", err);
	dst->params = cfl_calloc(src->n_params ? src->n_params : 1,
				 sizeof(*dst->params), err);
	if (!dst->name || !dst->params)
		goto fail;
	for (size_t i = 0; i < src->n_params; i++) {
		const struct cfl_space_param *a = &src->params[i];
		struct cfl_space_param *b = &dst->params[i];

		*b = *a;
		b->name = NULL;
		b->choices = NULL;
		b->value = NULL;
		b->n_choices = 0;
		dst->n_params++;
		b->name = cfl_strdup(a->name, err);
		if (!b->name || (a->value && !(b->value = cfl_strdup(a->value, err))))
			goto fail;
		if (a->n_choices) {
			b->choices = cfl_calloc(a->n_choices, sizeof(char *), err);
			if (!b->choices)
				goto fail;
			for (size_t j = 0; j < a->n_choices; j++) {
				b->choices[j] = cfl_strdup(a->choices[j], err);
				if (!b->choices[j])
					goto fail;
				b->n_choices++;
			}
		}
	}
	return 0;
fail:
	cfl_space_release(dst);
	return -1;
}

struct cfl_search *cfl_search_new(const struct cfl_space *space,
				  const struct cfl_search_opts *o,
				  struct cfl_err *err)
{
	struct cfl_search *s = cfl_calloc(1, sizeof(*s), err);
	struct cfl_rng r;

	gsl_set_error_handler_off();
	if (!s)
		return NULL;
	s->o = *o;
	if (copy_space(&s->space, space, err)) {
		free(s);
		return NULL;
	}
	s->d = cfl_space_n_free(&s->space);
	s->free_idx = cfl_calloc(s->d ? s->d : 1, sizeof(size_t), err);
	s->cat = cfl_calloc(s->d ? s->d : 1, 1, err);
	s->shift = cfl_calloc(s->d ? s->d : 1, sizeof(uint32_t), err);
	s->theta = cfl_calloc(s->d + 2, sizeof(double), err);
	if (!s->free_idx || !s->cat || !s->shift || !s->theta)
		goto fail;
	s->finite_size = 1;
	for (size_t i = 0, k = 0; i < s->space.n_params; i++) {
		const struct cfl_space_param *p = &s->space.params[i];

		if (p->dist == CFL_DIST_FIXED)
			continue;
		s->free_idx[k] = i;
		s->cat[k] = p->dist == CFL_DIST_CHOICE;
		if (p->dist == CFL_DIST_CHOICE)
			s->finite_size *= (double)p->n_choices;
		else if (p->integer)
			s->finite_size *= p->hi - p->lo + 1;
		else
			s->finite_size = INFINITY;
		k++;
	}
	cfl_rng_seed(&r, cfl_seed_derive(o->seed, "sobol-shift", 0));
	for (size_t k = 0; k < s->d; k++)
		s->shift[k] = (uint32_t)cfl_rng_u64(&r);
	s->qrng = new_qrng(s->d);
	s->qrng_dim = s->d;
	s->n_init = o->n_init ? o->n_init : (s->d + 1 > 5 ? s->d + 1 : 5);
	if (o->method == CFL_SEARCH_GRID && (grid_init(s, err) || grid_draw(s, err)))
		goto fail;
	if (o->method == CFL_SEARCH_BO) {
		s->gp = cfl_gp_new(s->d, s->cat, err);
		if (!s->gp)
			goto fail;
	}
	return s;
fail:
	cfl_search_free(s);
	return NULL;
}

void cfl_search_free(struct cfl_search *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_pts; i++) {
		free(s->pts[i].z);
		free(s->pts[i].key);
	}
	free(s->pts);
	if (s->grid_z)
		for (size_t k = 0; k < s->d; k++)
			free(s->grid_z[k]);
	free(s->grid_z);
	free(s->grid_n);
	free(s->grid_pick);
	free(s->grid_sorted);
	if (s->qrng)
		gsl_qrng_free(s->qrng);
	cfl_gp_free(s->gp);
	free(s->free_idx);
	free(s->cat);
	free(s->shift);
	free(s->theta);
	cfl_space_release(&s->space);
	free(s);
}

/* A finite space with every point asked, or nothing new found: the first
 * point never asked, in grid order (small finite spaces only). */
static int ask_any_left(struct cfl_search *s, struct cfl_err *err)
{
	double vals[s->d ? s->d : 1];

	if (s->finite_size > 1e6)
		return 1;
	for (size_t idx0 = 0; idx0 < (size_t)s->finite_size; idx0++) {
		size_t idx = idx0;
		int rc;

		for (size_t k = s->d; k-- > 0;) {
			const struct cfl_space_param *p = dim_param(s, k);
			size_t n = p->dist == CFL_DIST_CHOICE ? p->n_choices :
				   (size_t)(p->hi - p->lo + 1);

			vals[k] = p->dist == CFL_DIST_CHOICE ? (double)(idx % n) :
				  p->lo + (double)(idx % n);
			idx /= n;
		}
		rc = add_point(s, vals, err);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

int cfl_search_ask(struct cfl_search *s, struct cfl_params *out, size_t *idx,
		   struct cfl_err *err)
{
	int rc;

	if ((double)s->n_pts >= s->finite_size)
		return 1;
	switch (s->o.method) {
	case CFL_SEARCH_GRID:
		rc = ask_grid(s, err);
		break;
	case CFL_SEARCH_RANDOM:
		rc = ask_sobol(s, err);
		break;
	default:
		rc = ask_bo(s, err);
		break;
	}
	if (rc == 1 && s->o.method != CFL_SEARCH_GRID)
		rc = ask_any_left(s, err);
	if (rc)
		return rc;
	if (idx)
		*idx = s->n_pts - 1;
	return point_params(s, s->n_pts - 1, out, err);
}

int cfl_search_tell(struct cfl_search *s, size_t idx, double value,
		    struct cfl_err *err)
{
	if (idx >= s->n_pts)
		return cfl_err_set(err, "search: candidate %zu was never asked", idx);
	if (s->pts[idx].status != PENDING)
		return cfl_err_set(err, "search: candidate %zu was told already", idx);
	if (!isfinite(value)) {
		s->pts[idx].status = FAILED;
		return 0;
	}
	s->pts[idx].status = OK;
	s->pts[idx].y = s->o.maximize ? -value : value;
	return 0;
}
