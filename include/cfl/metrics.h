/*
 * cfl metrics: acc, auc, f1, logloss, ber, mae, mse, rmse, r2, correlation,
 * each with its direction.  They take model outputs as the models produce
 * them: (n, n_classes) probabilities for classification, (n, 1) values for
 * regression.  Values match scikit-learn's (tests/unit fixtures).
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
};

const struct cfl_metric_info *cfl_metric_info(enum cfl_metric_id id);
/* The id of name, or -1. */
int cfl_metric_lookup(const char *name);
/* Default metrics of a task: acc,auc for classification, mae,mse for regression. */
size_t cfl_metric_defaults(int n_classes, enum cfl_metric_id *out, size_t cap);
/* Evaluates metric id.  y: n labels (class index) or targets; out: (n, n_out)
 * where n_out = n_classes or 1.  Fails when the metric does not apply to
 * the task, or when it is undefined (auc with one class present). */
int cfl_metric_eval(enum cfl_metric_id id, const double *y, const double *out,
		    size_t n, int n_classes, double *value /* OUT */,
		    struct cfl_err *err);

#endif
