/*
 * linear: L2-regularised logistic regression (softmax over the classes;
 * one sigmoid vector for two classes, as scikit-learn does) fitted by
 * L-BFGS, and ridge regression solved in closed form on centred data.
 * Both minimise exactly scikit-learn's objectives (include/cfl/linear.h),
 * so their fits agree with LogisticRegression / Ridge.  Deterministic: no
 * randomness, fixed operation order.  Only this file and fcnn.c include
 * cblas.h; the model's ops at the end are a thin wrapper over the API.
 */
#include "cfl/linear.h"
#include "cfl/model.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Here because this file includes cblas.h (declared in include/cfl/model.h). */
void cfl_model_set_threads(int n)
{
	/* Already so: nothing to do, and nothing must be done.  In a child
	 * forked from a process that used BLAS, OpenBLAS's fork handler has
	 * shut its thread pool down, and openblas_set_num_threads starts it
	 * again (all the threads of its start-up count, each spinning on
	 * sched_yield a while before it sleeps) even to set one thread:
	 * 5 ms more per forked worker, and a spinning thread beside each
	 * worker.  openblas_get_num_threads only reads the count. */
	if (n == openblas_get_num_threads())
		return;
	openblas_set_num_threads(n);
}

void cfl_linear_opts_default(struct cfl_linear_opts *o)
{
	o->l2 = 1;
	o->max_iter = 500;
	o->tol = 1e-6;
	o->fit_intercept = 1;
}

void cfl_linear_init(struct cfl_linear *lm)
{
	memset(lm, 0, sizeof(*lm));
}

void cfl_linear_release(struct cfl_linear *lm)
{
	if (!lm)
		return;
	free(lm->w);
	free(lm->b);
	cfl_linear_init(lm);
}

int cfl_linear_alloc(struct cfl_linear *lm, size_t d, int n_classes,
		     struct cfl_err *err)
{
	cfl_linear_release(lm);
	if (n_classes < 0 || n_classes == 1)
		return cfl_err_set(err, "linear: cannot model %d classes", n_classes);
	lm->d = d;
	lm->n_classes = n_classes;
	lm->n_out = n_classes > 0 ? (size_t)n_classes : 1;
	lm->w = cfl_calloc(lm->n_out, (d ? d : 1) * sizeof(double), err);
	lm->b = cfl_calloc(lm->n_out, sizeof(double), err);
	if (!lm->w || !lm->b) {
		cfl_linear_release(lm);
		return -1;
	}
	return 0;
}

/* ---- linear: logistic loss and gradient ---- */

/* The mean-scaled objective f = (sum_i CE_i + l2/2 ||W||^2) / n over the
 * free parameters theta = (W rows first..k-1 as (r, d), then r intercepts
 * when fitted).  Row 0 is fixed at zero for two classes. */
struct logit {
	const double *x;	/* (n, d) */
	const double *y;	/* n */
	size_t n, d;
	int k, first, r;	/* classes, first free row, free rows */
	int intercept;
	double l2;
	double *wall;		/* (k, d): every row, fixed ones zero */
	double *z;		/* (n, k): logits, then P - Y */
	size_t n_theta;
};

/* f(theta) and its gradient g (n_theta). */
static double logit_eval(struct logit *p, const double *theta, double *g)
{
	size_t n = p->n, d = p->d, k = (size_t)p->k, r = (size_t)p->r;
	const double *bias = p->intercept ? theta + r * d : NULL;
	double loss = 0, pen = 0;

	memset(p->wall, 0, k * (d ? d : 1) * sizeof(double));
	memcpy(p->wall + (size_t)p->first * d, theta, r * d * sizeof(double));
	for (size_t j = 0; j < r * d; j++)
		pen += theta[j] * theta[j];
	/* z (n, k) = x (n, d) . wall^T (d, k) */
	if (d)
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n,
			    (int)k, (int)d, 1.0, p->x, (int)d, p->wall, (int)d,
			    0.0, p->z, (int)k);
	else
		memset(p->z, 0, n * k * sizeof(double));
	for (size_t i = 0; i < n; i++) {
		double *zi = p->z + i * k, mx = -INFINITY, s = 0, lse;
		size_t yi = (size_t)p->y[i];

		if (bias)
			for (size_t c = 0; c < r; c++)
				zi[p->first + c] += bias[c];
		for (size_t c = 0; c < k; c++)
			mx = fmax(mx, zi[c]);
		for (size_t c = 0; c < k; c++)
			s += exp(zi[c] - mx);
		lse = mx + log(s);
		loss += lse - zi[yi];
		/* dCE/dz = softmax(z) - onehot(y) */
		for (size_t c = 0; c < k; c++)
			zi[c] = exp(zi[c] - lse) - (c == yi);
	}
	/* gW (r, d) = (P - Y)[:, first:]^T (r, n) . x (n, d) / n + l2 W / n */
	if (d)
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r,
			    (int)d, (int)n, 1.0 / (double)n, p->z + p->first,
			    (int)k, p->x, (int)d, 0.0, g, (int)d);
	for (size_t j = 0; j < r * d; j++)
		g[j] += p->l2 * theta[j] / (double)n;
	if (bias) {
		for (size_t c = 0; c < r; c++)
			g[r * d + c] = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t c = 0; c < r; c++)
				g[r * d + c] += p->z[i * k + p->first + c];
		for (size_t c = 0; c < r; c++)
			g[r * d + c] /= (double)n;
	}
	return (loss + 0.5 * p->l2 * pen) / (double)n;
}

/* ---- linear: L-BFGS ---- */

#define LBFGS_M 10

static double dot(const double *a, const double *b, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

static double max_abs(const double *a, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		m = fmax(m, fabs(a[i]));
	return m;
}

/* Minimises the logistic objective from theta (in place) with L-BFGS and a
 * backtracking Armijo line search; the objective is strictly convex when
 * l2 > 0, so every accepted step has s.y > 0.  Stops when max |g| <= tol
 * (converged), when f no longer decreases by more than 64 eps relatively
 * (converged, as scipy's ftol), or after max_iter iterations. */
static int lbfgs(struct logit *p, double *theta, long max_iter, double tol,
		 long *n_iter, int *converged, struct cfl_err *err)
{
	size_t nt = p->n_theta;
	double *buf = cfl_calloc((2 * LBFGS_M + 4) * nt + 1, sizeof(double), err);
	double *S, *Y, *g, *g_new, *dir, *t_new, rho[LBFGS_M], alpha[LBFGS_M];
	double f, f_new;
	int n_mem = 0, head = 0;
	long it;

	if (!buf)
		return -1;
	S = buf;
	Y = S + LBFGS_M * nt;
	g = Y + LBFGS_M * nt;
	g_new = g + nt;
	dir = g_new + nt;
	t_new = dir + nt;
	*converged = 0;
	f = logit_eval(p, theta, g);
	for (it = 0; it < max_iter; it++) {
		double gmax = max_abs(g, nt), gd, step, sy;
		int ls;

		if (gmax <= tol) {
			*converged = 1;
			break;
		}
		/* two-loop recursion: dir = -H g */
		for (size_t j = 0; j < nt; j++)
			dir[j] = -g[j];
		for (int m = 0; m < n_mem; m++) {
			int s = (head - 1 - m + LBFGS_M) % LBFGS_M;

			alpha[s] = rho[s] * dot(S + s * nt, dir, nt);
			for (size_t j = 0; j < nt; j++)
				dir[j] -= alpha[s] * Y[s * nt + j];
		}
		if (n_mem) {
			int s = (head - 1 + LBFGS_M) % LBFGS_M;
			double gamma = dot(S + s * nt, Y + s * nt, nt) /
				       dot(Y + s * nt, Y + s * nt, nt);

			for (size_t j = 0; j < nt; j++)
				dir[j] *= gamma;
		}
		for (int m = n_mem - 1; m >= 0; m--) {
			int s = (head - 1 - m + LBFGS_M) % LBFGS_M;
			double beta = rho[s] * dot(Y + s * nt, dir, nt);

			for (size_t j = 0; j < nt; j++)
				dir[j] += (alpha[s] - beta) * S[s * nt + j];
		}
		gd = dot(g, dir, nt);
		if (!(gd < 0)) {	/* not a descent direction: restart */
			n_mem = 0;
			for (size_t j = 0; j < nt; j++)
				dir[j] = -g[j];
			gd = -dot(g, g, nt);
		}
		step = n_mem ? 1 : fmin(1, 1 / sqrt(-gd));
		for (ls = 0; ls < 60; ls++) {
			for (size_t j = 0; j < nt; j++)
				t_new[j] = theta[j] + step * dir[j];
			f_new = logit_eval(p, t_new, g_new);
			if (f_new <= f + 1e-4 * step * gd)
				break;
			step *= 0.5;
		}
		if (ls == 60)	/* no decrease left at machine precision */
			break;
		for (size_t j = 0; j < nt; j++) {
			S[head * nt + j] = t_new[j] - theta[j];
			Y[head * nt + j] = g_new[j] - g[j];
		}
		sy = dot(S + head * nt, Y + head * nt, nt);
		if (sy > 1e-300) {
			rho[head] = 1 / sy;
			head = (head + 1) % LBFGS_M;
			if (n_mem < LBFGS_M)
				n_mem++;
		}
		memcpy(theta, t_new, nt * sizeof(double));
		memcpy(g, g_new, nt * sizeof(double));
		if (f - f_new <= 64 * DBL_EPSILON * fmax(1, fmax(fabs(f), fabs(f_new)))) {
			*converged = 1;
			it++;
			break;
		}
		f = f_new;
	}
	*n_iter = it;
	free(buf);
	return 0;
}

static int logistic_fit(struct cfl_linear *lm, const double *x,
			const double *y, size_t n, size_t d,
			const struct cfl_linear_opts *o, struct cfl_err *err)
{
	struct logit p = { .x = x, .y = y, .n = n, .d = d, .k = lm->n_classes,
			   .intercept = o->fit_intercept, .l2 = o->l2 };
	double *theta;
	int rc;

	p.first = p.k == 2 ? 1 : 0;
	p.r = p.k - p.first;
	p.n_theta = (size_t)p.r * d + (p.intercept ? (size_t)p.r : 0);
	theta = cfl_calloc(p.n_theta + 1, sizeof(double), err);
	p.wall = cfl_calloc((size_t)p.k, (d ? d : 1) * sizeof(double), err);
	p.z = cfl_calloc(n, (size_t)p.k * sizeof(double), err);
	rc = theta && p.wall && p.z ?
	     lbfgs(&p, theta, o->max_iter, o->tol, &lm->n_iter,
		   &lm->converged, err) : -1;
	if (rc == 0) {
		memcpy(lm->w + (size_t)p.first * d, theta,
		       (size_t)p.r * d * sizeof(double));
		if (p.intercept)
			memcpy(lm->b + p.first, theta + (size_t)p.r * d,
			       (size_t)p.r * sizeof(double));
	}
	free(theta);
	free(p.wall);
	free(p.z);
	return rc;
}

/* ---- linear: ridge ---- */

/* Cholesky factorisation of the SPD a (n, n) in place (lower triangle);
 * -1 when a pivot is not positive. */
static int cholesky(double *a, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		double s = a[j * n + j];

		for (size_t k = 0; k < j; k++)
			s -= a[j * n + k] * a[j * n + k];
		if (!(s > 0))
			return -1;
		a[j * n + j] = sqrt(s);
		for (size_t i = j + 1; i < n; i++) {
			double t = a[i * n + j];

			for (size_t k = 0; k < j; k++)
				t -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = t / a[j * n + j];
		}
	}
	return 0;
}

/* Solves L L^T x = b in place. */
static void cholesky_solve(const double *l, size_t n, double *b)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < i; k++)
			b[i] -= l[i * n + k] * b[k];
		b[i] /= l[i * n + i];
	}
	for (size_t i = n; i-- > 0;) {
		for (size_t k = i + 1; k < n; k++)
			b[i] -= l[k * n + i] * b[k];
		b[i] /= l[i * n + i];
	}
}

/* (xc^T xc + l2 I) w = xc^T yc with xc, yc centred when fitting an
 * intercept (then b = mean(y) - mean(x).w): the intercept is unpenalised
 * and the target needs no scaling.  When the system is singular (l2 = 0
 * with collinear columns, e.g. every level of a one-hot column) a jitter
 * growing from 1e-12 of the largest diagonal entry makes it solvable. */
static int ridge_fit(struct cfl_linear *lm, const double *x, const double *y,
		     size_t n, size_t d, const struct cfl_linear_opts *o,
		     struct cfl_err *err)
{
	double *xm = cfl_calloc(d + 1, sizeof(double), err);
	double *xc = cfl_calloc(n, (d ? d : 1) * sizeof(double), err);
	double *yc = cfl_calloc(n, sizeof(double), err);
	double *a = cfl_calloc(d * d + 1, sizeof(double), err);
	double *a0 = cfl_calloc(d * d + 1, sizeof(double), err);
	double ym = 0, diag = 0, jitter = 0;
	int rc = -1;

	if (!xm || !xc || !yc || !a || !a0)
		goto out;
	if (o->fit_intercept) {
		for (size_t i = 0; i < n; i++) {
			ym += y[i];
			for (size_t j = 0; j < d; j++)
				xm[j] += x[i * d + j];
		}
		ym /= (double)n;
		for (size_t j = 0; j < d; j++)
			xm[j] /= (double)n;
	}
	for (size_t i = 0; i < n; i++) {
		yc[i] = y[i] - ym;
		for (size_t j = 0; j < d; j++)
			xc[i * d + j] = x[i * d + j] - xm[j];
	}
	if (d) {
		/* a0 (d, d) = xc^T xc (upper triangle, mirrored) */
		cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d,
			    (int)n, 1.0, xc, (int)d, 0.0, a0, (int)d);
		for (size_t i = 0; i < d; i++) {
			for (size_t j = 0; j < i; j++)
				a0[i * d + j] = a0[j * d + i];
			a0[i * d + i] += o->l2;
			diag = fmax(diag, a0[i * d + i]);
		}
		/* w (d) = xc^T yc */
		cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)d, 1.0, xc,
			    (int)d, yc, 1, 0.0, lm->w, 1);
		for (;;) {
			memcpy(a, a0, d * d * sizeof(double));
			for (size_t i = 0; i < d; i++)
				a[i * d + i] += jitter;
			if (cholesky(a, d) == 0)
				break;
			jitter = jitter ? jitter * 10 : 1e-12 * fmax(diag, 1e-300);
			if (jitter > diag) {
				cfl_err_set(err, "linear: cannot solve the ridge system (degenerate inputs)");
				goto out;
			}
		}
		cholesky_solve(a, d, lm->w);
	}
	lm->b[0] = ym;
	for (size_t j = 0; j < d; j++)
		lm->b[0] -= xm[j] * lm->w[j];
	lm->n_iter = 0;
	lm->converged = 1;
	rc = 0;
out:
	free(xm);
	free(xc);
	free(yc);
	free(a);
	free(a0);
	return rc;
}

/* ---- linear: the API ---- */

int cfl_linear_fit(struct cfl_linear *lm, const double *x, const double *y,
		   size_t n, size_t d, int n_classes,
		   const struct cfl_linear_opts *opts, struct cfl_err *err)
{
	struct cfl_linear_opts def;
	const struct cfl_linear_opts *o = opts;
	int rc;

	if (!o) {
		cfl_linear_opts_default(&def);
		o = &def;
	}
	cfl_linear_release(lm);
	if (n_classes < 0 || n_classes == 1)
		return cfl_err_set(err, "linear: cannot model %d classes", n_classes);
	if (n == 0)
		return cfl_err_set(err, "linear: no training rows");
	if (!(o->l2 >= 0) || !isfinite(o->l2))
		return cfl_err_set(err, "linear: l2 must be a number >= 0, got %g", o->l2);
	if (d > ((size_t)-1) / sizeof(double) / n)
		return cfl_err_set(err, "linear: too many inputs");
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return cfl_err_set(err, "linear: target of row %zu is not a finite number", i);
		if (n_classes > 0 && (y[i] < 0 || y[i] >= n_classes ||
				      y[i] != floor(y[i])))
			return cfl_err_set(err, "linear: label %.17g of row %zu is not a class in [0, %d)",
					   y[i], i, n_classes);
	}
	for (size_t i = 0; i < n * d; i++)
		if (!isfinite(x[i]))
			return cfl_err_set(err, "linear: input %zu of row %zu is not a finite number",
					   i % d, i / d);
	if (cfl_linear_alloc(lm, d, n_classes, err))
		return -1;
	if (n_classes > 0)
		rc = logistic_fit(lm, x, y, n, d, o, err);
	else
		rc = ridge_fit(lm, x, y, n, d, o, err);
	if (rc)
		cfl_linear_release(lm);
	return rc;
}

/* One of xd / xf is NULL. */
static int predict_rows(const struct cfl_linear *lm, const double *xd,
			const float *xf, size_t n, double *out,
			struct cfl_err *err)
{
	size_t d = lm->d, k = lm->n_out;

	if (!lm->w || !lm->b)
		return cfl_err_set(err, "linear: model is not fitted");
	for (size_t i = 0; i < n; i++) {
		double *oi = out + i * k, mx = -INFINITY, s = 0;

		for (size_t c = 0; c < k; c++) {
			const double *wc = lm->w + c * d;
			double v = lm->b[c];

			if (xd)
				for (size_t j = 0; j < d; j++)
					v += wc[j] * xd[i * d + j];
			else
				for (size_t j = 0; j < d; j++)
					v += wc[j] * (double)xf[i * d + j];
			oi[c] = v;
			mx = fmax(mx, v);
		}
		if (!lm->n_classes)
			continue;
		for (size_t c = 0; c < k; c++)
			s += oi[c] = exp(oi[c] - mx);
		for (size_t c = 0; c < k; c++)
			oi[c] /= s;
	}
	return 0;
}

int cfl_linear_predict(const struct cfl_linear *lm, const double *x,
		       size_t n, double *out, struct cfl_err *err)
{
	return predict_rows(lm, x, NULL, n, out, err);
}

int cfl_linear_predict_float(const struct cfl_linear *lm, const float *x,
			     size_t n, double *out, struct cfl_err *err)
{
	return predict_rows(lm, NULL, x, n, out, err);
}

/* ---- linear: the model ---- */

static const struct cfl_param_spec linear_params[] = {
	{ "l2", CFL_P_FLOAT, "1", 0, 1e12, NULL,
	  "L2 penalty on the weights (1/C of LogisticRegression, alpha of Ridge)" },
	{ "max_iter", CFL_P_INT, "500", 1, 1000000, NULL,
	  "most L-BFGS iterations (classification)" },
	{ "tol", CFL_P_FLOAT, "1e-6", 0, 1, NULL,
	  "stop when the largest gradient entry of the mean loss is below this" },
	{ "fit_intercept", CFL_P_BOOL, "true", 0, 0, NULL,
	  "fit an unpenalised intercept" },
};

static int linear_fit(struct cfl_model *m, const struct cfl_xy *train,
		      const struct cfl_xy *valid, struct cfl_err *err)
{
	struct cfl_linear_opts o;
	struct cfl_linear *lm;
	double *x;
	int rc;

	(void)valid;
	o.l2 = cfl_param_float(m, "l2");
	o.max_iter = cfl_param_int(m, "max_iter");
	o.tol = cfl_param_float(m, "tol");
	o.fit_intercept = cfl_param_bool(m, "fit_intercept");
	lm = cfl_calloc(1, sizeof(*lm), err);
	x = cfl_calloc(train->n, (train->d ? train->d : 1) * sizeof(double), err);
	if (!lm || !x) {
		free(lm);
		free(x);
		return -1;
	}
	for (size_t i = 0; i < train->n * train->d; i++)
		x[i] = train->x[i];
	rc = cfl_linear_fit(lm, x, train->y, train->n, train->d,
			    train->n_classes, &o, err);
	free(x);
	if (rc) {
		free(lm);
		return -1;
	}
	m->state = lm;
	return 0;
}

static int linear_predict(const struct cfl_model *m, const float *x, size_t n,
			  double *out, struct cfl_err *err)
{
	return cfl_linear_predict_float(m->state, x, n, out, err);
}

static int linear_save(const struct cfl_model *m, struct cfl_buf *out,
		       struct cfl_err *err)
{
	const struct cfl_linear *lm = m->state;

	if (cfl_buf_printf(out, "linear %zu %zu\nweights", lm->n_out, lm->d) ||
	    cfl_buf_doubles(out, lm->w, lm->n_out * lm->d) ||
	    cfl_buf_puts(out, "\nintercepts") ||
	    cfl_buf_doubles(out, lm->b, lm->n_out))
		return cfl_err_set(err, "out of memory");
	return 0;
}

static int linear_load(struct cfl_model *m, struct cfl_reader *in,
		       struct cfl_err *err)
{
	struct cfl_linear *lm;
	size_t n_out, d;

	if (cfl_reader_expect(in, "linear", err) ||
	    cfl_reader_size(in, 1 << 20, &n_out, err) ||
	    cfl_reader_size(in, 1 << 24, &d, err))
		return -1;
	if (n_out != cfl_model_n_out(m) || d != m->n_features)
		return cfl_reader_fail(in, err, "linear state has shape (%zu, %zu), expected (%zu, %zu)",
				       n_out, d, cfl_model_n_out(m), m->n_features);
	/* each number takes two bytes at least: a hostile shape cannot make
	 * us allocate more than the file could fill */
	if (n_out * d > (in->len - in->pos) / 2)
		return cfl_reader_fail(in, err, "linear state is truncated");
	lm = cfl_calloc(1, sizeof(*lm), err);
	if (!lm)
		return -1;
	if (cfl_linear_alloc(lm, d, m->n_classes, err) ||
	    cfl_reader_expect(in, "weights", err) ||
	    cfl_reader_doubles(in, lm->w, n_out * d, err) ||
	    cfl_reader_expect(in, "intercepts", err) ||
	    cfl_reader_doubles(in, lm->b, n_out, err)) {
		cfl_linear_release(lm);
		free(lm);
		return -1;
	}
	lm->converged = 1;
	m->state = lm;
	return 0;
}

static void linear_release(struct cfl_model *m)
{
	cfl_linear_release(m->state);
	free(m->state);
	m->state = NULL;
}

const struct cfl_model_ops cfl_linear_ops = {
	.name = "linear",
	.summary = "logistic regression (softmax, L-BFGS) or ridge regression",
	.params = linear_params,
	.n_params = sizeof(linear_params) / sizeof(linear_params[0]),
	.fit = linear_fit,
	.predict = linear_predict,
	.save = linear_save,
	.load = linear_load,
	.release = linear_release,
};
