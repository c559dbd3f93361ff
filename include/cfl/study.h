/*
 * cfl study: a run's life as a library, below the commands.  `cfl repeat`
 * and `cfl tune` parse options into a plan, call the study and print; the
 * study checks the plan, builds ensembles from the store and tells its
 * caller what happens through events (progress is the caller's code, never
 * the study's).  It never prints and never exits.
 *
 * Depends on core, data, metrics, ensemble, store and run.
 */
#ifndef CFL_STUDY_H
#define CFL_STUDY_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"
#include "cfl/data.h"
#include "cfl/ensemble.h"
#include "cfl/metrics.h"
#include "cfl/store.h"

/* ---- events: what a study tells its caller ---- */

enum cfl_study_event_kind {
	CFL_STUDY_NOTE,		/* a remark for the user: text */
};

struct cfl_study_event {
	enum cfl_study_event_kind kind;
	const char *text;	/* NOTE: "ensemble 'vote' ...; skipped" */
};

/* Who hears the events: fn(ev, ctx), called from the study's own thread;
 * ev and what it points to are valid during the call only.  A NULL
 * listener (or fn) hears nothing. */
struct cfl_study_listener {
	void (*fn)(const struct cfl_study_event *ev, void *ctx);
	void *ctx;
};

/* ---- ensembles from the store ----
 * A run's done trials become members (one trial, or with folds the folds of
 * one (model, repeat) averaged, their out-of-fold predictions put together
 * over d->train's rows for stacking); src/ensemble combines them; each
 * ensemble is stored like a result (metrics and predictions on validation
 * and test) named after its method, repeat -1, so the table printed from
 * the store shows one row per ensemble.  Labels and shapes come from d;
 * d->test's labels only score the finished ensembles. */

/* The default ensembles of `cfl repeat`: mean and stacking when there are
 * two trained models or more (repeats x models), none otherwise. */
#define CFL_STUDY_ENSEMBLE_DEFAULT "mean,stacking"

/* Checks a method mask (cfl_ensemble_parse_list) against the task before
 * any training starts: vote needs classification (n_classes > 0).  0, or
 * -1 with err. */
int cfl_study_check_ensembles(unsigned methods, int n_classes,
			      struct cfl_err *err);

/* Builds every method of the mask over run run_id's done trials, scored
 * with metrics, and stores each; one already stored (a resumed run) is
 * kept.  An ensemble that cannot be built (no member with predictions, a
 * failed fit) is skipped with a NOTE event ("<why>; skipped").  0 (also
 * when methods is 0 or nothing was built), or -1 with err on a database
 * error or stored predictions whose shape does not match d. */
int cfl_study_ensembles(struct cfl_store *st, int64_t run_id,
			const struct cfl_data *d,
			const enum cfl_metric_id *metrics, size_t n_metrics,
			unsigned methods, const struct cfl_study_listener *ls,
			struct cfl_err *err);

/* The ensembles step of `cfl repeat`: builds the ensembles named in
 * methods ("mean,stacking", "none"; NULL: CFL_STUDY_ENSEMBLE_DEFAULT, then
 * only with two members or more) with the run's metrics (those its first
 * done trial stored on test, in their order), as cfl_study_ensembles.  0
 * (also when no trial is done), or -1 with err: an unknown method, vote on
 * a regression, a database error. */
int cfl_study_ensembles_for_run(struct cfl_store *st, int64_t run_id,
				const struct cfl_data *d, const char *methods,
				const struct cfl_study_listener *ls,
				struct cfl_err *err);

#endif
