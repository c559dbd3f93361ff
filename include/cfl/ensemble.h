/*
 * cfl ensembles: combine the stored predictions of several trained models
 * (members) into one prediction.  Methods: mean of probabilities or values,
 * majority vote, a weighted mean with weights from validation scores,
 * stacking (non-negative weights summing to one fitted on out-of-fold
 * predictions when every member has them, else on validation predictions;
 * the linear meta-learner below stays for callers that want one), greedy
 * ensemble selection (Caruana et al. 2004: forward selection with
 * replacement on validation) and top (the mean of the members that the
 * validation rows cannot tell from the best).
 *
 * Invariant: nothing is ever fitted on test rows.  Test labels are read only
 * to score the finished ensemble, so changing them changes the test metrics
 * and nothing else (tests/unit/test_ensemble.c checks it).  Pure functions
 * on arrays: no store, no I/O; depends on core, metrics and linear.
 */
#ifndef CFL_ENSEMBLE_H
#define CFL_ENSEMBLE_H

#include <stddef.h>

#include "cfl/core.h"
#include "cfl/linear.h"
#include "cfl/metrics.h"

enum cfl_ensemble_method {
	CFL_ENS_MEAN,		/* mean of probabilities (classification) or values */
	CFL_ENS_VOTE,		/* majority vote (classification only) */
	CFL_ENS_WEIGHTED,	/* mean weighted by validation scores */
	CFL_ENS_STACKING,	/* weights fitted on OOF or validation predictions */
	CFL_ENS_GREEDY,		/* Caruana's forward selection with replacement */
	CFL_ENS_TOP,		/* mean of the members within CFL_ENS_TOP_SE
				 * standard errors of the best */
	CFL_ENS_COUNT
};

/* "mean", "vote", "weighted", "stacking", "greedy", "top"; NULL when out
 * of range. */
const char *cfl_ensemble_method_name(enum cfl_ensemble_method m);
/* The method named name, or -1. */
int cfl_ensemble_method_lookup(const char *name);
/* Parses a comma-separated list ("mean,stacking") into a bit mask (bit m
 * for method m).  "none" or "" gives 0.  -1 with "unknown ensemble 'x'
 * (known: mean, vote, weighted, stacking, greedy, top)" otherwise. */
int cfl_ensemble_parse_list(const char *list, unsigned *mask /* OUT */,
			    struct cfl_err *err);

/* ---- the arithmetic on member predictions ----
 * preds: n_members pointers to (n, n_out) row-major arrays (probabilities
 * for classification, n_out = number of classes; values for regression,
 * n_out = 1).  out: (n, n_out), caller-owned.  Each returns 0, or -1 with
 * err when n_members is 0 or as said. */

/* out = the mean of the members. */
int cfl_ensemble_mean(const double *const *preds, size_t n_members, size_t n,
		      size_t n_out, double *out /* OUT (n, n_out) */,
		      struct cfl_err *err);
/* Majority vote.  Each member votes its most probable class (the first on
 * ties); out[i][c] = (1 - e) * share of votes for c + e * mean probability
 * of c, with e = CFL_ENS_VOTE_TIE_WEIGHT: the argmax is the majority
 * class, and a tied vote goes to the class with the highest mean
 * probability.  Rows sum to 1.  Fails when n_out < 2 (regression) or when
 * there are 1 / e members or more. */
#define CFL_ENS_VOTE_TIE_WEIGHT 1e-6
int cfl_ensemble_vote(const double *const *preds, size_t n_members, size_t n,
		      size_t n_out, double *out /* OUT (n, n_out) */,
		      struct cfl_err *err);
/* out = sum_j w[j] preds[j] / sum_j w[j].  Fails when a weight is negative
 * or not finite, or when they sum to 0. */
int cfl_ensemble_weighted(const double *const *preds, const double *w,
			  size_t n_members, size_t n, size_t n_out,
			  double *out /* OUT (n, n_out) */, struct cfl_err *err);
/* Weights from validation scores of a metric with direction sign: for a
 * higher-is-better metric (sign +1) w[j] is proportional to max(score, 0),
 * for a lower-is-better one (sign -1) to 1 / score (score <= 0, an exact
 * fit, gets all the weight, shared when several do).  A NaN score gets 0.
 * Normalised to sum 1; uniform when every weight would be 0.  Never fails. */
void cfl_ensemble_score_weights(const double *scores, size_t n_members,
				int sign, double *w /* OUT (n_members) */);
/* Greedy selection with replacement: starting from the empty ensemble,
 * each of n_rounds rounds adds the member whose addition gives the running
 * mean the best value of metric on (y, preds) (the lowest index on ties).
 * w[j] = times member j was picked / picks, taken at the round with the
 * best value (the earliest on ties), so extra rounds never hurt on
 * validation.  On more than 100,000 rows it selects on every s-th row (s
 * the least that leaves at most that many), as the stacking fits: a few
 * weights need no million rows, and each round's passes over all of them
 * were most of auto's finish on large data.  Fails when a metric cannot
 * be computed (err says why). */
int cfl_ensemble_greedy(const double *const *preds, size_t n_members, size_t n,
			size_t n_out, const double *y, int n_classes,
			enum cfl_metric_id metric, size_t n_rounds,
			double *w /* OUT (n_members) */, struct cfl_err *err);

/* Top: the members that n rows cannot tell from the best one, averaged.
 * Each member's per-row losses are cfl_metric_row_losses of metric on
 * (y, preds[j]); the best member has the lowest mean loss (the lowest
 * index on ties).  Member j is kept when its mean loss exceeds the best's
 * by at most k_se standard errors of the paired differences (their sample
 * std over sqrt(n); with one row, when it is no worse); the best is always
 * kept.  w[j] = 1 / kept for the kept members, 0 for the others.  Where
 * the members differ by chance (a few rows of a small validation part) it
 * is the mean of them all; where the rows show one member better, that
 * member alone.  Fails when the losses cannot be computed (err says why). */
#define CFL_ENS_TOP_SE 2.0
int cfl_ensemble_top(const double *const *preds, size_t n_members, size_t n,
		     const double *y, int n_classes, enum cfl_metric_id metric,
		     double k_se, double *w /* OUT (n_members) */,
		     struct cfl_err *err);
/* Of m rows of n losses each (loss[j * n + i]), the one with the lowest
 * mean (the lowest index on ties; a row whose mean is NaN never), its
 * mean in *mean; m (and *mean infinite) when there is none. */
size_t cfl_ensemble_lowest_loss(const double *loss, size_t m, size_t n,
				double *mean /* OUT */);
/* The paired standard error of loss a minus loss b over n rows (the
 * sample std of a[i] - b[i] over sqrt(n); 0 with fewer than two rows) and,
 * in *mean_diff, the mean of a[i] - b[i]. */
double cfl_ensemble_paired_se(const double *a, const double *b, size_t n,
			      double *mean_diff /* OUT */);

/* Stacking: a linear model over the members' predictions.  Its inputs per
 * row are, member after member, the probabilities of classes 1..k-1
 * (class 0's is 1 minus their sum; for two classes: p(class 1)) for
 * classification, or the value for regression.  Logistic regression (classification) or ridge
 * (regression) from include/cfl/linear.h, default options but l2. */
struct cfl_stacker {
	size_t n_members, n_out;
	int n_classes;		/* 0: regression */
	struct cfl_linear meta;
};

void cfl_stacker_init(struct cfl_stacker *s);
void cfl_stacker_release(struct cfl_stacker *s);
/* Fits the meta-learner on the members' predictions of n rows with labels
 * y (class indices, or targets when n_classes is 0).  n_out must be
 * n_classes (classification) or 1 (regression).  0, or -1 with err (and s
 * left empty) on a shape mismatch or when the linear fit fails (a NaN in
 * the predictions, a label out of range). */
int cfl_stacker_fit(struct cfl_stacker *s, const double *const *preds,
		    size_t n_members, size_t n, size_t n_out, const double *y,
		    int n_classes, double l2, struct cfl_err *err);
/* out (n, n_out): the meta-learner applied to the members' predictions
 * (the same members, in the same order, as at fit).  -1 when s is not
 * fitted or n_members differs. */
int cfl_stacker_predict(const struct cfl_stacker *s,
			const double *const *preds, size_t n_members, size_t n,
			double *out /* OUT (n, n_out) */, struct cfl_err *err);

/* ---- one ensemble from members' predictions on every split ---- */

/* A member: a trained model (one trial, or the folds of one bagged model
 * averaged) with its predictions.  Arrays are (rows of the split, n_out). */
struct cfl_ens_member {
	const double *valid;	/* (n_valid, n_out) */
	const double *test;	/* (n_test, n_out) */
	const double *oof;	/* (n_train, n_out) out-of-fold predictions of
				 * every training row, or NULL */
};

struct cfl_ens_input {
	size_t n_members;
	const struct cfl_ens_member *members;	/* (n_members) */
	size_t n_out;
	int n_classes;				/* 0: regression */
	size_t n_valid, n_test, n_train;
	const double *y_valid;			/* (n_valid) */
	const double *y_test;			/* (n_test): scoring only */
	const double *y_train;			/* (n_train): with OOF only; may be NULL */
	size_t n_metrics;
	const enum cfl_metric_id *metrics;	/* (n_metrics); the first ranks
						 * members (weighted, greedy) */
	double l2;				/* stacking's meta-learner penalty */
	size_t greedy_rounds;
	int select_on_oof;			/* greedy and top select on the
						 * OOF predictions (when every
						 * member has them) instead of
						 * on valid */
	const enum cfl_metric_id *select_metric;	/* greedy and top select
						 * by this one; NULL: metrics[0]
						 * (auto: log loss, a proper
						 * score, for classification) */
	double deadline;			/* greedy: no round starts once
						 * cfl_now() passed it (one at
						 * least; out->rounds says how
						 * many ran); 0: all of them */
};

/* Defaults of struct cfl_ens_input's knobs. */
#define CFL_ENS_DEFAULT_L2 1.0
#define CFL_ENS_DEFAULT_GREEDY_ROUNDS 25

struct cfl_ens_output {
	size_t n_members;
	double *valid;		/* (n_valid, n_out), malloc'd */
	double *test;		/* (n_test, n_out), malloc'd */
	double *valid_metrics;	/* (n_metrics); NaN when undefined */
	double *test_metrics;	/* (n_metrics); NaN when undefined */
	double *weights;	/* (n_members) for mean, weighted, greedy; else NULL */
	struct cfl_stacker stacker;	/* a linear meta-learner; cfl_ensemble_build
					 * leaves it empty (stacking fits weights) */
	int stacked_on_oof;	/* stacking: fitted on OOF (1) or validation (0) */
	size_t stack_rows;	/* stacking: the OOF or validation rows it had */
	int stack_fallback;	/* stacking: too few rows, the mean's weights */
	size_t rounds;		/* greedy: the rounds run (fewer than
				 * greedy_rounds when the deadline stopped
				 * them; built again with that many rounds and
				 * no deadline, the same weights) */
	size_t best_round;	/* greedy: the round whose picks the weights
				 * are (the best value); built again with
				 * that many rounds over only the members
				 * with weight, the same weights (with more,
				 * the picks after it among fewer members
				 * can differ) */
};

void cfl_ens_output_init(struct cfl_ens_output *o);
void cfl_ens_output_release(struct cfl_ens_output *o);

/* Stacking's row floor: with fewer OOF / validation rows than
 * max(CFL_ENS_STACK_MIN_ROWS, CFL_ENS_STACK_ROWS_PER_MEMBER * n_members)
 * it fits nothing and keeps the mean's weights (weights fitted on a dozen
 * rows are noise; the constraint keeps them safe from about 20 rows and
 * one row per member on).
 */
#define CFL_ENS_STACK_MIN_ROWS 20
#define CFL_ENS_STACK_ROWS_PER_MEMBER 1
size_t cfl_ens_stack_min_rows(size_t n_members);

/* Builds one ensemble: its predictions on validation and test and their
 * metrics.  Mean, vote and weighted need no fitting; weighted and greedy
 * choose weights on validation; stacking fits non-negative weights summing
 * to one (the mixture's likelihood for classification, the squared error
 * for regression) on the OOF predictions when every member has them (and
 * y_train is given), else on validation, or keeps the mean's weights when
 * those rows are fewer than cfl_ens_stack_min_rows (stack_fallback).  A
 * metric that cannot be computed on the ensemble's predictions is NaN, not
 * an error.  0 with out filled (release it), or -1 with err (and out empty)
 * when there is no member, a shape is inconsistent, vote is asked of a
 * regression, or a fit fails. */
int cfl_ensemble_build(enum cfl_ensemble_method method,
		       const struct cfl_ens_input *in,
		       struct cfl_ens_output *out /* OUT */,
		       struct cfl_err *err);

/* Describes the ensemble for the store's "members" column, appended to b:
 * "weights 0.5,0.25,0.25" (%.6g each); for stacking the weights then
 * "; meta non-negative weights summing to 1 on N oof|valid rows" or "; the
 * mean's: only N valid rows, stacking fits on M or more"; for a stacking
 * output without weights "meta linear l2=1 on oof|valid".
 * 0, or -1 on allocation failure. */
int cfl_ens_output_describe(const struct cfl_ens_output *o,
			    enum cfl_ensemble_method method, double l2,
			    struct cfl_buf *b);

#endif
