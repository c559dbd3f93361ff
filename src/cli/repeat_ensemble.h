/*
 * The ensembles step of `cfl repeat`: after the trials, build the requested
 * ensembles from the predictions in the store and store each one like a
 * result (its metrics and predictions on validation and test), so the
 * table printed from the store (cfl_report_run) shows one row per ensemble.
 */
#ifndef CFL_CLI_REPEAT_ENSEMBLE_H
#define CFL_CLI_REPEAT_ENSEMBLE_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/data.h"
#include "cfl/ensemble.h"
#include "cfl/metrics.h"
#include "cfl/store.h"

/* The default --ensemble list: mean and stacking when there are two
 * trained models or more (repeats x models), none otherwise. */
#define REPEAT_ENSEMBLE_DEFAULT "mean,stacking"

/* What cmd_repeat calls after its trials (it declares it weak): builds the
 * ensembles named in methods ("mean,stacking", "none"; NULL: the default
 * above) with the run's metrics (those its trials stored, in their order)
 * and stores them, as repeat_ensembles does.  0, or -1 with err (an
 * unknown method, vote on a regression, a database error). */
int cfl_ensemble_for_run(struct cfl_store *st, int64_t run_id,
			 const struct cfl_data *data, const char *methods,
			 struct cfl_err *err);

/* Checks a method mask against the task before any training starts: vote
 * needs classification.  0, or -1 with err. */
int repeat_ensemble_check(unsigned methods, int n_classes, struct cfl_err *err);

/* Builds every method of the mask over the run's done trials and stores
 * it as ensemble "<method>" over all repeats (repeat -1); an ensemble
 * already stored (a resumed run) is kept.  A member is one trial, or with
 * --folds the folds of one (model, repeat) averaged, their out-of-fold
 * predictions put together over d->train's rows for stacking.  Labels and
 * shapes come from d (d->test's labels score the ensembles, nothing is fit
 * on them).  An ensemble that cannot be built (no member with predictions,
 * a failed fit) is skipped with a note on stderr unless quiet.  0, or -1
 * with err on a database error or predictions whose shape does not match
 * the data. */
int repeat_ensembles(struct cfl_store *st, int64_t run_id,
		     const struct cfl_data *d, const enum cfl_metric_id *metrics,
		     size_t n_metrics, unsigned methods, int quiet,
		     struct cfl_err *err);

#endif
