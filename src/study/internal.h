/*
 * What the files of src/study share: the study itself (the run, its pool,
 * and tune's search state) and the helpers of the drain loop.  Not a public
 * header: only src/study includes it.
 */
#ifndef CFL_STUDY_INTERNAL_H
#define CFL_STUDY_INTERNAL_H

#include "cfl/study.h"

/* What a repeat trial's events point back to. */
struct study_ref {
	size_t model;
	int repeat, fold;
};

/* One tune candidate. */
struct study_cand {
	int64_t id;
	char hex[9];
	struct cfl_params params;
	size_t n_pending;	/* trials not final yet */
	double *vals;		/* (R) the metric on valid; NaN: failed or not done */
	double score;		/* once told: cfl_metric_candidate_score */
	int told;
};

/* What a tune trial's events point back to. */
struct study_tref {
	size_t cand;
	int repeat;
};

struct cfl_study {
	const struct cfl_study_plan *plan;
	const struct cfl_data *data;	/* NULL: tune of a command */
	struct cfl_store *st;
	struct cfl_pool *pool;
	int64_t run_id;
	char name[128];
	int resumed;
	int complete;			/* resumed, nothing to do: untouched */
	int grown;			/* resumed with a larger count */
	struct study_ref *refs;		/* repeat: (n_trials) */
	/* tune */
	long num_parallel;		/* the plan's, or the resumed run's */
	long budget;			/* the search's budget: the first
					 * num_search of the run */
	struct cfl_search *search;
	struct study_cand *cands;	/* (num_search) */
	size_t n_cands;
	struct study_tref *trefs;	/* ((num_search + 1) * R) */
	size_t n_trefs;
	struct cfl_metric_row *stored;	/* valid metrics stored (resume) */
	size_t n_stored, n_stored_cands;
	double best_score;
	int has_best;
	long best;			/* the candidate refitted, or -1 */
	/* the time limit */
	double deadline;		/* cfl_now() at which to stop; 0: none */
	int timed_out;			/* the deadline stopped the pool */
	double user_tick, last_user_tick;	/* the caller's tick period */
	double wake_at;			/* cfl_study_wait returns 4 once this
					 * passes (auto's shares); 0: never */
	size_t n_ran;			/* trials submitted by this process */
	size_t n_metrics;		/* the pool's metrics */
	enum cfl_metric_id metrics[CFL_WIRE_MAX_METRICS];
	/* auto */
	struct study_auto *autos;
};

/* tune's metric name ("value" for a command) and its sign. */
const char *cfl_study_metric_name(const struct cfl_study_plan *p);
int cfl_study_sign(const struct cfl_study_plan *p);

/* Calls the listener, if any. */
void cfl_study_emit(const struct cfl_study_listener *ls,
		    struct cfl_study_event *ev);
/* Waits for the pool's next finished trial: 0 with *ev, 1 when idle, 2
 * when interrupted, 3 when the time limit stopped the pool, 4 once
 * wake_at passed (it is then cleared), -1 with err.
 * Ticks go to the listener at the caller's tick period. */
int cfl_study_wait(struct cfl_study *s, const struct cfl_study_listener *ls,
		   struct cfl_pool_event *ev /* OUT */, struct cfl_err *err);
/* Frees tune's search state (a no-op for repeat). */
void cfl_study_tune_release(struct cfl_study *s);
/* Frees auto's state. */
void cfl_study_auto_release(struct cfl_study *s);
/* Stops the pool now as the time limit does (running trials interrupted,
 * queued ones not started); the next cfl_study_wait returns 3. */
void cfl_study_stop_at_limit(struct cfl_study *s);

/* The ensembles of auto: a "bag" row per bagged candidate whose folds all
 * finished (its folds' mean), then mean and stacking over those bags on
 * their out-of-fold predictions; trials without folds (the search's) are
 * no members.  As cfl_study_ensembles otherwise. */
int cfl_study_auto_ensembles(struct cfl_store *st, int64_t run_id,
			     const struct cfl_data *d,
			     const enum cfl_metric_id *metrics, size_t n_metrics,
			     const struct cfl_study_listener *ls,
			     struct cfl_err *err);

#endif
