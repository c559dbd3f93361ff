/*
 * The Gaussian process of Bayesian optimisation: Matern-5/2 with one length
 * scale per dimension (a Hamming distance on categorical dimensions), zero
 * mean on standardised outputs, hyper-parameters by maximum a posteriori
 * (log marginal likelihood plus log-normal priors) with BFGS restarts, and
 * log expected improvement that stays finite far into the tail.
 *
 * Invariant: after a successful fit, L is the Cholesky factor of
 * K + noise I (+ jitter) and alpha = (K + noise I)^-1 y.  L is computed row
 * by row, so a fit whose first rows and theta equal the previous fit's keeps
 * those rows of L and computes only the new ones (O(n^2) per new point, not
 * O(n^3)), with the very bits a fresh factorisation gives: a fit never
 * depends on the fits before it.  GSL only; never include cblas.h here
 * (GSL's BLAS calls resolve to OpenBLAS at link time).
 */
#include "cfl/hpo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_sf_erf.h>
#include <gsl/gsl_vector.h>

#define SQRT5 2.23606797749978969641

/* Priors (log-normal) and bounds of the hyper-parameters, on outputs
 * standardised to mean 0, sd 1 and inputs on the unit cube. */
#define LS_MU (-0.7)		/* length scale about 0.5 */
#define LS_SD 1.0
#define LS_LO (-4.6)		/* 0.01 */
#define LS_HI 3.0		/* 20 */
#define SF_MU 0.0
#define SF_SD 1.0
#define SF_LO (-6.0)
#define SF_HI 4.0
#define SN_MU (-9.0)		/* noise variance about 1e-4 */
#define SN_SD 2.5
#define SN_LO (-18.0)
#define SN_HI 1.0
#define JITTER 1e-8

/* Direct element access: the hot loops avoid GSL's checked getters. */
#define MAT(m, i, j) ((m)->data[(i) * (m)->tda + (j)])
#define VEC(v, i) ((v)->data[(i) * (v)->stride])

struct cfl_gp {
	size_t d, n;
	unsigned char *cat;	/* (d) */
	double *theta;		/* (d + 2) */
	double *x;		/* (n, d) */
	gsl_matrix *L;		/* (n, n) lower Cholesky factor */
	gsl_vector *alpha;	/* (n) */
	double jitter;		/* added to the diagonal (relative to sf2) */
	double log_ml;
};

static void gsl_quiet(void)
{
	/* GSL's default handler aborts; cfl reports errors itself */
	gsl_set_error_handler_off();
}

struct cfl_gp *cfl_gp_new(size_t d, const unsigned char *cat,
			  struct cfl_err *err)
{
	struct cfl_gp *gp = cfl_calloc(1, sizeof(*gp), err);

	gsl_quiet();
	if (!gp)
		return NULL;
	gp->d = d;
	gp->cat = cfl_calloc(d ? d : 1, 1, err);
	gp->theta = cfl_calloc(d + 2, sizeof(double), err);
	if (!gp->cat || !gp->theta) {
		cfl_gp_free(gp);
		return NULL;
	}
	if (cat)
		memcpy(gp->cat, cat, d);
	for (size_t i = 0; i < d; i++)
		gp->theta[i] = LS_MU;
	gp->theta[d] = SF_MU;
	gp->theta[d + 1] = SN_MU;
	return gp;
}

static void drop_data(struct cfl_gp *gp)
{
	free(gp->x);
	gp->x = NULL;
	if (gp->L)
		gsl_matrix_free(gp->L);
	if (gp->alpha)
		gsl_vector_free(gp->alpha);
	gp->L = NULL;
	gp->alpha = NULL;
	gp->n = 0;
}

void cfl_gp_free(struct cfl_gp *gp)
{
	if (!gp)
		return;
	drop_data(gp);
	free(gp->cat);
	free(gp->theta);
	free(gp);
}

const double *cfl_gp_theta(const struct cfl_gp *gp)
{
	return gp->theta;
}

double cfl_gp_log_ml(const struct cfl_gp *gp)
{
	return gp->log_ml;
}

/* ---- the kernel ---- */

static double sq_dist(const double *a, const double *b, size_t d,
		      const unsigned char *cat, const double *inv_ls2)
{
	double r2 = 0;

	for (size_t k = 0; k < d; k++) {
		double t = cat[k] ? (a[k] != b[k]) : (a[k] - b[k]);

		r2 += t * t * inv_ls2[k];
	}
	return r2;
}

static double matern52(double r2)
{
	double r = sqrt(r2);

	return (1 + SQRT5 * r + 5.0 / 3.0 * r2) * exp(-SQRT5 * r);
}

static void inv_ls2_of(const double *theta, size_t d, double *out)
{
	for (size_t k = 0; k < d; k++)
		out[k] = exp(-2 * theta[k]);
}

/* Rows from..n-1 of the Cholesky factor L (n, n) of K + noise I with
 * jitter, rows 0..from-1 being already those of the same x and theta:
 * row i of L depends only on rows 0..i, so the rows are computed in order,
 * each by forward substitution against the rows above.  The strict upper
 * part is left as it is.  Returns 0, or -1 when a pivot is not positive. */
static int factor_rows(gsl_matrix *L, const double *x, size_t n, size_t from,
		       size_t d, const unsigned char *cat, double sf2,
		       double sn2, double jitter, const double *inv_ls2)
{
	for (size_t i = from; i < n; i++) {
		double *li = L->data + i * L->tda, diag;

		for (size_t j = 0; j < i; j++)
			li[j] = sf2 * matern52(sq_dist(x + i * d, x + j * d, d,
						       cat, inv_ls2));
		for (size_t j = 0; j < i; j++) {
			const double *lj = L->data + j * L->tda;
			double v = li[j];

			for (size_t k = 0; k < j; k++)
				v -= li[k] * lj[k];
			li[j] = v / lj[j];
		}
		diag = sf2 * (1 + jitter) + sn2;
		for (size_t k = 0; k < i; k++)
			diag -= li[k] * li[k];
		if (!(diag > 0))
			return -1;
		li[i] = sqrt(diag);
	}
	return 0;
}

int cfl_gp_fit(struct cfl_gp *gp, const double *x, const double *y, size_t n,
	       const double *theta, struct cfl_err *err)
{
	size_t d = gp->d, keep = 0;
	double inv_ls2[d ? d : 1], sf2, sn2, quad = 0, logdet = 0;
	gsl_matrix *L = NULL;
	gsl_vector *alpha = NULL;
	double *xc = NULL;

	/* rows kept from the previous fit: same theta, same leading points,
	 * no jitter needed there */
	if (gp->L && (!theta || memcmp(theta, gp->theta, (d + 2) * sizeof(double)) == 0) &&
	    gp->jitter == JITTER)
		while (keep < n && keep < gp->n &&
		       memcmp(gp->x + keep * d, x + keep * d, d * sizeof(double)) == 0)
			keep++;
	if (theta)
		memcpy(gp->theta, theta, (d + 2) * sizeof(double));
	if (n == 0) {
		drop_data(gp);
		gp->log_ml = 0;
		return 0;
	}
	xc = cfl_malloc(n * (d ? d : 1) * sizeof(double), err);
	L = gsl_matrix_alloc(n, n);
	alpha = gsl_vector_alloc(n);
	if (!xc || !L || !alpha) {
		free(xc);
		if (L)
			gsl_matrix_free(L);
		if (alpha)
			gsl_vector_free(alpha);
		drop_data(gp);
		return cfl_err_set(err, "out of memory");
	}
	memcpy(xc, x, n * d * sizeof(double));
	for (size_t i = 0; i < keep; i++)
		memcpy(L->data + i * L->tda, gp->L->data + i * gp->L->tda,
		       (i + 1) * sizeof(double));
	sf2 = exp(gp->theta[d]);
	sn2 = exp(gp->theta[d + 1]);
	inv_ls2_of(gp->theta, d, inv_ls2);
	gp->jitter = JITTER;
	if (factor_rows(L, xc, n, keep, d, gp->cat, sf2, sn2, JITTER, inv_ls2)) {
		/* not positive definite as it stands: more jitter, every row */
		int ok = 0;

		for (double j = JITTER * 100; j < 1 && !ok; j *= 100) {
			ok = factor_rows(L, xc, n, 0, d, gp->cat, sf2, sn2, j, inv_ls2) == 0;
			gp->jitter = j;
		}
		if (!ok) {
			free(xc);
			gsl_matrix_free(L);
			gsl_vector_free(alpha);
			drop_data(gp);
			return cfl_err_set(err, "gaussian process: kernel matrix is not positive definite");
		}
	}
	drop_data(gp);
	gp->x = xc;
	gp->L = L;
	gp->alpha = alpha;
	gp->n = n;
	/* alpha = L^-T L^-1 y */
	for (size_t i = 0; i < n; i++)
		VEC(alpha, i) = y[i];
	gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, L, alpha);
	gsl_blas_ddot(alpha, alpha, &quad);
	gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, L, alpha);
	for (size_t i = 0; i < n; i++)
		logdet += log(MAT(L, i, i));
	gp->log_ml = -0.5 * quad - logdet - 0.5 * (double)n * log(2 * M_PI);
	return 0;
}

/* Candidates predicted per block: the cross-covariances of a block (n, 64)
 * stay in cache and need no large allocation per call. */
#define PRED_BLOCK 64

void cfl_gp_predict(const struct cfl_gp *gp, const double *xs, size_t m,
		    double *mean, double *var)
{
	size_t n = gp->n, d = gp->d;
	double sf2 = exp(gp->theta[d]);
	double inv_ls2[d ? d : 1];
	double *buf;

	if (n == 0 || !(buf = malloc(n * PRED_BLOCK * sizeof(double)))) {
		for (size_t j = 0; j < m; j++) {
			mean[j] = 0;
			if (var)
				var[j] = sf2;
		}
		return;
	}
	inv_ls2_of(gp->theta, d, inv_ls2);
	for (size_t j0 = 0; j0 < m; j0 += PRED_BLOCK) {
		size_t b = m - j0 < PRED_BLOCK ? m - j0 : PRED_BLOCK;
		/* ks: (n, b) cross-covariances, solved in place by L for the
		 * variance */
		gsl_matrix_view ks = gsl_matrix_view_array(buf, n, b);

		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < b; j++)
				buf[i * b + j] = sf2 * matern52(sq_dist(gp->x + i * d,
					xs + (j0 + j) * d, d, gp->cat, inv_ls2));
		for (size_t j = 0; j < b; j++) {
			double s = 0;

			for (size_t i = 0; i < n; i++)
				s += buf[i * b + j] * VEC(gp->alpha, i);
			mean[j0 + j] = s;
		}
		if (!var)
			continue;
		if (b == 1) {
			gsl_vector_view v = gsl_vector_view_array(buf, n);

			gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit,
				       gp->L, &v.vector);
		} else {
			gsl_blas_dtrsm(CblasLeft, CblasLower, CblasNoTrans,
				       CblasNonUnit, 1.0, gp->L, &ks.matrix);
		}
		for (size_t j = 0; j < b; j++) {
			double s = 0;

			for (size_t i = 0; i < n; i++) {
				double v = buf[i * b + j];

				s += v * v;
			}
			var[j0 + j] = sf2 - s > 0 ? sf2 - s : 0;
		}
	}
	free(buf);
}

/* ---- MAP hyper-parameters ---- */

struct map_ctx {
	size_t n, d;
	const unsigned char *cat;
	const double *x, *y;
	double *d2;		/* (n * (n - 1) / 2, d) squared differences */
	gsl_matrix *K, *W;
	gsl_vector *alpha;
	double *inv_ls2, *g;
	size_t n_evals;
};

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static double prior_term(double t, double mu, double sd, double *grad)
{
	double z = (t - mu) / sd;

	*grad = z / sd;	/* of the negative log prior */
	return 0.5 * z * z;
}

/* Negative log posterior (up to a constant) and its gradient at theta. */
static double neg_log_post(struct map_ctx *c, const double *theta_in,
			   double *grad)
{
	size_t n = c->n, d = c->d, p;
	double theta[d + 2], sf2, sn2, f = 0, logdet = 0, quad = 0, pen = 0;
	int ok = 0;

	for (size_t k = 0; k < d + 2; k++) {
		double lo = k < d ? LS_LO : k == d ? SF_LO : SN_LO;
		double hi = k < d ? LS_HI : k == d ? SF_HI : SN_HI;

		theta[k] = clampd(theta_in[k], lo, hi);
		pen += 10 * (theta_in[k] - theta[k]) * (theta_in[k] - theta[k]);
		if (grad)
			grad[k] = 20 * (theta_in[k] - theta[k]);
	}
	sf2 = exp(theta[d]);
	sn2 = exp(theta[d + 1]);
	inv_ls2_of(theta, d, c->inv_ls2);
	c->n_evals++;
	for (double jitter = JITTER; jitter < 1 && !ok; jitter *= 100) {
		p = 0;
		for (size_t i = 0; i < n; i++) {
			for (size_t j = 0; j < i; j++, p++) {
				double r2 = 0;

				for (size_t k = 0; k < d; k++)
					r2 += c->d2[p * d + k] * c->inv_ls2[k];
				double r = sqrt(r2), e = exp(-SQRT5 * r);
				double kv = sf2 * (1 + SQRT5 * r + 5.0 / 3.0 * r2) * e;

				MAT(c->K, i, j) = kv;
				MAT(c->K, j, i) = kv;
				/* d k / d log ls_k = g * d2_k / ls_k^2 */
				c->g[p] = sf2 * 5.0 / 3.0 * (1 + SQRT5 * r) * e;
			}
			MAT(c->K, i, i) = sf2 * (1 + jitter) + sn2;
		}
		gsl_matrix_memcpy(c->W, c->K);
		ok = gsl_linalg_cholesky_decomp1(c->W) == GSL_SUCCESS;
	}
	if (!ok) {
		if (grad)
			for (size_t k = 0; k < d + 2; k++)
				grad[k] += 0;
		return 1e30;
	}
	{
		gsl_vector_const_view yv = gsl_vector_const_view_array(c->y, n);

		gsl_linalg_cholesky_solve(c->W, &yv.vector, c->alpha);
		gsl_blas_ddot(&yv.vector, c->alpha, &quad);
	}
	for (size_t i = 0; i < n; i++)
		logdet += log(MAT(c->W, i, i));
	f = 0.5 * quad + logdet;
	if (grad) {
		/* W = K^-1 - alpha alpha^T; d f / d t = 1/2 tr(W dK/dt) */
		gsl_linalg_cholesky_invert(c->W);
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j <= i; j++) {
				double w = MAT(c->W, i, j) -
					   VEC(c->alpha, i) *
					   VEC(c->alpha, j);

				MAT(c->W, i, j) = w;
			}
		double gls[d ? d : 1], gsf = 0, gsn = 0;

		memset(gls, 0, sizeof(gls));
		p = 0;
		for (size_t i = 0; i < n; i++) {
			for (size_t j = 0; j < i; j++, p++) {
				double w = MAT(c->W, i, j);
				double wg = w * c->g[p];

				for (size_t k = 0; k < d; k++)
					gls[k] += wg * c->d2[p * d + k];
				gsf += w * MAT(c->K, i, j);
			}
			double wii = MAT(c->W, i, i);

			gsf += 0.5 * wii * (MAT(c->K, i, i) - sn2);
			gsn += 0.5 * wii * sn2;
		}
		/* off-diagonal pairs count twice in the trace, halved by 1/2 */
		for (size_t k = 0; k < d; k++)
			grad[k] += gls[k] * c->inv_ls2[k];
		grad[d] += gsf;
		grad[d + 1] += gsn;
	}
	for (size_t k = 0; k < d + 2; k++) {
		double gk;

		if (k < d)
			f += prior_term(theta[k], LS_MU, LS_SD, &gk);
		else if (k == d)
			f += prior_term(theta[k], SF_MU, SF_SD, &gk);
		else
			f += prior_term(theta[k], SN_MU, SN_SD, &gk);
		if (grad)
			grad[k] += gk;
	}
	return f + pen;
}

static double mm_f(const gsl_vector *v, void *p)
{
	return neg_log_post(p, v->data, NULL);
}

static void mm_df(const gsl_vector *v, void *p, gsl_vector *g)
{
	neg_log_post(p, v->data, g->data);
}

static void mm_fdf(const gsl_vector *v, void *p, double *f, gsl_vector *g)
{
	*f = neg_log_post(p, v->data, g->data);
}

/* BFGS from theta (d + 2, updated in place); returns the objective. */
static double minimise(struct map_ctx *c, double *theta, size_t max_iter)
{
	size_t dim = c->d + 2;
	gsl_multimin_function_fdf fn = { mm_f, mm_df, mm_fdf, dim, c };
	gsl_multimin_fdfminimizer *m = gsl_multimin_fdfminimizer_alloc(
		gsl_multimin_fdfminimizer_vector_bfgs2, dim);
	gsl_vector_view start = gsl_vector_view_array(theta, dim);
	double best = neg_log_post(c, theta, NULL);

	if (!m)
		return best;
	if (gsl_multimin_fdfminimizer_set(m, &fn, &start.vector, 0.1, 0.1) ==
	    GSL_SUCCESS) {
		for (size_t it = 0; it < max_iter; it++) {
			if (gsl_multimin_fdfminimizer_iterate(m) != GSL_SUCCESS)
				break;
			if (gsl_multimin_test_gradient(m->gradient, 1e-2) ==
			    GSL_SUCCESS)
				break;
		}
		if (isfinite(m->f) && m->f < best) {
			best = m->f;
			for (size_t k = 0; k < dim; k++)
				theta[k] = VEC(m->x, k);
		}
	}
	gsl_multimin_fdfminimizer_free(m);
	return best;
}

int cfl_gp_fit_map(struct cfl_gp *gp, const double *x, const double *y,
		   size_t n, const double *start, size_t n_restarts,
		   uint64_t seed, struct cfl_err *err)
{
	size_t d = gp->d, dim = d + 2;
	struct map_ctx c;
	double best_theta[dim], theta[dim], best = INFINITY;
	struct cfl_rng rng;
	int rc;

	if (n < 2)
		return cfl_gp_fit(gp, x, y, n, start, err);
	memset(&c, 0, sizeof(c));
	c.n = n;
	c.d = d;
	c.cat = gp->cat;
	c.x = x;
	c.y = y;
	c.d2 = cfl_calloc(n * (n - 1) / 2 * (d ? d : 1), sizeof(double), err);
	c.g = cfl_calloc(n * (n - 1) / 2, sizeof(double), err);
	c.inv_ls2 = cfl_calloc(d ? d : 1, sizeof(double), err);
	c.K = gsl_matrix_alloc(n, n);
	c.W = gsl_matrix_alloc(n, n);
	c.alpha = gsl_vector_alloc(n);
	if (!c.d2 || !c.g || !c.inv_ls2 || !c.K || !c.W || !c.alpha) {
		rc = cfl_err_set(err, "out of memory");
		goto out;
	}
	{
		size_t p = 0;

		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < i; j++, p++)
				for (size_t k = 0; k < d; k++) {
					double t = gp->cat[k] ?
						(x[i * d + k] != x[j * d + k]) :
						x[i * d + k] - x[j * d + k];

					c.d2[p * d + k] = t * t;
				}
	}
	cfl_rng_seed(&rng, seed);
	for (size_t r = 0; r <= n_restarts; r++) {
		double f;

		if (r == 0) {
			if (start)
				memcpy(theta, start, sizeof(theta));
			else
				memcpy(theta, gp->theta, sizeof(theta));
		} else {
			for (size_t k = 0; k < d; k++)
				theta[k] = clampd(LS_MU + LS_SD * cfl_rng_normal(&rng),
						  LS_LO, LS_HI);
			theta[d] = clampd(SF_MU + 0.5 * cfl_rng_normal(&rng), SF_LO, SF_HI);
			theta[d + 1] = clampd(SN_MU + SN_SD * cfl_rng_normal(&rng),
					      SN_LO, SN_HI);
		}
		/* a warm start is near its optimum: fewer steps */
		f = minimise(&c, theta, r == 0 && start ? 25 : 60);
		if (f < best) {
			best = f;
			memcpy(best_theta, theta, sizeof(theta));
		}
	}
	if (!isfinite(best)) {
		for (size_t k = 0; k < d; k++)
			best_theta[k] = LS_MU;
		best_theta[d] = SF_MU;
		best_theta[d + 1] = SN_HI;
	}
	for (size_t k = 0; k < dim; k++)
		best_theta[k] = clampd(best_theta[k],
				       k < d ? LS_LO : k == d ? SF_LO : SN_LO,
				       k < d ? LS_HI : k == d ? SF_HI : SN_HI);
	rc = cfl_gp_fit(gp, x, y, n, best_theta, err);
out:
	free(c.d2);
	free(c.g);
	free(c.inv_ls2);
	if (c.K)
		gsl_matrix_free(c.K);
	if (c.W)
		gsl_matrix_free(c.W);
	if (c.alpha)
		gsl_vector_free(c.alpha);
	return rc;
}

/* ---- log expected improvement ---- */

/* log(phi(z) + z Phi(z)), the expected improvement of a standard normal
 * over -z, without cancellation for very negative z. */
static double log_h(double z)
{
	static const double LOG_SQRT_2PI = 0.91893853320467274178;
	double logphi = -0.5 * z * z - LOG_SQRT_2PI;

	if (z > -1) {
		double Phi = 0.5 * gsl_sf_erfc(-z / M_SQRT2);

		return log(exp(logphi) + z * Phi);
	}
	double t = -z;

	if (t < 12) {
		/* Phi(z) / phi(z) = 1 / hazard(t), so h = phi (1 - t / hazard) */
		double r = 1 - t / gsl_sf_hazard(t);

		return logphi + log(r);
	}
	/* 1 - t R(t) by the asymptotic series of Mills' ratio R */
	double t2 = 1 / (t * t);
	double s = t2 * (1 - t2 * (3 - t2 * (15 - t2 * (105 - t2 * 945))));

	return logphi + log(s);
}

double cfl_log_ei(double mean, double sd, double best)
{
	if (!(sd > 0))
		return mean < best ? log(best - mean) : -INFINITY;
	return log(sd) + log_h((best - mean) / sd);
}
