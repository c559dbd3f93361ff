/*
 * cfl linear models on double inputs: L2-regularised logistic regression
 * (multinomial softmax for three classes or more, a single sigmoid vector
 * for two, as scikit-learn's LogisticRegression) and ridge regression.
 * The model `linear` (src/models/linear.c) wraps this API; the stacking
 * meta-learner can call it directly on (n, k) double inputs.
 *
 * Objectives (they equal scikit-learn's, so fits match it):
 *   classification  sum_i -log p(y_i | x_i) + l2 / 2 * ||W||^2
 *                   = LogisticRegression(C = 1 / l2, multi_class='auto')
 *   regression      sum_i (y_i - w.x_i - b)^2 + l2 * ||w||^2
 *                   = Ridge(alpha = l2)
 * The intercept is never penalised.  Fits are deterministic: L-BFGS from
 * zero for classification, a Cholesky solve of the centred normal
 * equations for regression.
 */
#ifndef CFL_LINEAR_H
#define CFL_LINEAR_H

#include "cfl/core.h"

struct cfl_linear_opts {
	double l2;		/* >= 0; see the objectives above */
	long max_iter;		/* L-BFGS iterations (classification) */
	double tol;		/* stop when max |gradient of the mean loss| <= tol */
	int fit_intercept;
};

/* The defaults: l2 1, max_iter 500, tol 1e-6, fit_intercept 1. */
void cfl_linear_opts_default(struct cfl_linear_opts *o /* OUT */);

/* A fitted linear model.  Row k of w scores class k; for two classes row
 * 0 is all zeros (and b[0] = 0), so a softmax of the rows is the sigmoid. */
struct cfl_linear {
	size_t d;		/* inputs */
	int n_classes;		/* 0: regression */
	size_t n_out;		/* n_classes, or 1 */
	double *w;		/* (n_out, d) */
	double *b;		/* n_out */
	long n_iter;		/* iterations of the last fit (0 for ridge) */
	int converged;		/* the last fit met tol (always 1 for ridge) */
};

/* An empty model: release is safe, predict fails. */
void cfl_linear_init(struct cfl_linear *lm);
void cfl_linear_release(struct cfl_linear *lm);
/* Allocates w and b (zeroed) for shape (d, n_classes); used by fit and by
 * loaders.  0, or -1 with err. */
int cfl_linear_alloc(struct cfl_linear *lm, size_t d, int n_classes,
		     struct cfl_err *err);

/* Fits on x (n, d) row-major and y (n: class index 0..n_classes-1, or the
 * target when n_classes == 0), replacing what lm held.  o NULL means the
 * defaults.  Fails (-1 with err, lm left empty) when n is 0, n_classes is
 * 1 or negative, a label is out of range, or x or y holds a NaN or an
 * infinity.  Not reaching tol within max_iter is not an error (converged
 * tells). */
int cfl_linear_fit(struct cfl_linear *lm, const double *x, const double *y,
		   size_t n, size_t d, int n_classes,
		   const struct cfl_linear_opts *o, struct cfl_err *err);
/* out (n, n_out): class probabilities (softmax of x w^T + b) or values.
 * Fails only when lm is not fitted. */
int cfl_linear_predict(const struct cfl_linear *lm, const double *x,
		       size_t n, double *out, struct cfl_err *err);
/* The same on float inputs (the model's encoded rows). */
int cfl_linear_predict_float(const struct cfl_linear *lm, const float *x,
			     size_t n, double *out, struct cfl_err *err);

#endif
