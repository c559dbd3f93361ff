/*
 * cfl metrics: acc, auc, f1, logloss, ber, mae, mse, rmse, r2, correlation,
 * each with its direction.  They take model outputs as the models produce
 * them: (n, n_classes) probabilities for classification, (n, 1) values for
 * regression.  Values match scikit-learn 1.2's to 1e-9 (fixtures in
 * tests/unit/metrics_fixtures.h, made by tests/unit/gen_metrics_fixtures.py).
 *
 * Classification metrics take the predicted class as the argmax of a row
 * (the first column on ties).  What each metric equals in scikit-learn:
 *   acc      accuracy_score(y, argmax)
 *   auc      binary: roc_auc_score(y, out[:, 1]); more classes:
 *            roc_auc_score(y, out, multi_class='ovr', average='macro');
 *            ties share their average rank.  Undefined (an error) when a
 *            class does not occur in y.
 *   f1       f1_score(y, argmax, average='macro'): the mean over the classes
 *            present in y or predicted, 0 for a class with no true positive
 *   logloss  log_loss(y, out, labels=range(n_classes)): rows clipped to
 *            [eps, 1 - eps] (eps = DBL_EPSILON) then renormalised
 *   ber      1 - balanced_accuracy_score(y, argmax): one minus the mean
 *            recall over the classes present in y
 *   mae, mse mean_absolute_error, mean_squared_error
 *   rmse     mean_squared_error(squared=False)
 *   r2       r2_score: 1 - SS_res / SS_tot; constant y gives 1 when the
 *            predictions are exact, else 0; needs two rows or more
 *   corr     numpy.corrcoef(y, out)[0, 1]; undefined (an error) when y or
 *            the predictions are constant
 */
#ifndef CFL_METRICS_H
#define CFL_METRICS_H

#include "cfl/core.h"

enum cfl_metric_id {
	CFL_M_ACC,
	CFL_M_AUC,	/* binary; multi-class: one-vs-rest macro; ties by average rank */
	CFL_M_F1,	/* macro */
	CFL_M_LOGLOSS,
	CFL_M_BER,	/* balanced error rate */
	CFL_M_MAE,
	CFL_M_MSE,
	CFL_M_RMSE,
	CFL_M_R2,
	CFL_M_CORR,	/* Pearson correlation */
	CFL_M_COUNT
};

struct cfl_metric_info {
	const char *name;
	int sign;	/* +1: higher is better, -1: lower is better */
	int clf, reg;	/* applies to classification / regression */
	const char *help;	/* one line: what it measures */
};

/* The info of id, or NULL when id is out of range. */
const struct cfl_metric_info *cfl_metric_info(enum cfl_metric_id id);
/* The id of name ("acc", ..., "corr"; "correlation" also works), or -1. */
int cfl_metric_lookup(const char *name);
/* Default metrics of a task: acc,auc for classification, mae,mse for
 * regression.  Writes at most cap ids; returns how many there are. */
size_t cfl_metric_defaults(int n_classes, enum cfl_metric_id *out, size_t cap);
/* Parses a comma-separated list of metric names ("acc,auc") into out (at
 * most cap ids, no duplicates kept).  When n_classes >= 0 each metric must
 * apply to that task (0: regression).  Returns the count, or -1 with
 * "unknown metric 'x' (known: ...)" / "metric 'mae' does not apply to
 * classification" / "empty metric list". */
long cfl_metric_parse_list(const char *list, int n_classes,
			   enum cfl_metric_id *out, size_t cap,
			   struct cfl_err *err);
/* Evaluates metric id.  y: n labels (class index) or targets; out: (n, n_out)
 * where n_out = n_classes or 1.  Returns 0 with *value set, or -1 with err
 * filled when the metric does not apply to the task, when n is 0, when a
 * label is not a class index in [0, n_classes), when y or out holds a NaN or
 * an infinity, or when the metric is undefined on this data (auc with a
 * class absent from y, r2 with one row, corr with constant values). */
int cfl_metric_eval(enum cfl_metric_id id, const double *y, const double *out,
		    size_t n, int n_classes, double *value /* OUT */,
		    struct cfl_err *err);

/* ---- per row: what a metric sums, to compare two models row by row ----
 * The loss of each of n rows (same inputs and checks as cfl_metric_eval):
 * the metric's own per-row term where it is a mean of one (acc: the row's
 * error, 0 or 1, so the mean is 1 - acc; logloss: the row's log loss;
 * mae: |error|; mse: error^2), and where it is not, the loss it is a
 * function of (rmse, r2: error^2, whose mean is mse) or stands in for it
 * (auc, f1, ber: the row's error; corr: error^2).  Lower is better for
 * every metric.  0, or -1 with err. */
int cfl_metric_row_losses(enum cfl_metric_id id, const double *y,
			  const double *out, size_t n, int n_classes,
			  double *loss /* OUT (n) */, struct cfl_err *err);
/* How much the metric moves for a unit of the mean row loss, at a mean
 * loss of mean_loss (the magnitude of d metric / d mean loss): 1 for acc,
 * logloss, mae and mse; 1 / (2 sqrt(mse)) for rmse; n / SS_tot of the n
 * labels y for r2.  NaN where the loss only stands in for the metric (auc,
 * f1, ber, corr) or the slope is not finite: such a metric is not moved by
 * a difference of losses. */
double cfl_metric_loss_slope(enum cfl_metric_id id, double mean_loss,
			     const double *y, size_t n);

/* ---- scores: one metric over the repeats of a model or candidate ----
 * carefree-learn's rule, the one the tables, tune's selection and `cfl runs`
 * share: score = sign * mean - std, std the population one (divided by n). */

struct cfl_metric_stats {
	size_t n;		/* values summarised */
	double mean, std, score;	/* NaN when n is 0 or a value is NaN */
};

/* The score of a mean and a std under direction sign (+1 or -1). */
double cfl_metric_score(int sign, double mean, double std);
/* Mean, population std and score (cfl_metric_score) of the n values, in
 * order.  Never fails: with n 0, or a NaN among the values, all three are
 * NaN. */
void cfl_metric_stats(const double *values, size_t n, int sign,
		      struct cfl_metric_stats *out /* OUT */);
/* A tune candidate's score: cfl_metric_stats over the values of its
 * repeats that are not NaN (a NaN is a failed repeat and is left out).
 * NaN when no repeat succeeded or the score is not finite. */
double cfl_metric_candidate_score(const double *values, size_t n, int sign);
/* The candidate tune refits: the first of the n scores with the highest
 * value (NaN scores are never chosen).  Its index, or -1 when every score
 * is NaN (or n is 0). */
long cfl_metric_best_score(const double *scores, size_t n);

#endif
