/*
 * Internal interface of src/run: the scheduler (sched.c) that the pool
 * (pool.c) drives.  Not part of the library API (see include/cfl/run.h);
 * transports use the pool through run.h only.
 */
#ifndef CFL_RUN_INTERNAL_H
#define CFL_RUN_INTERNAL_H

#include "cfl/run.h"

/* ---- scheduler: the lease state machine, no I/O ----
 *
 * queued --take--> running(attempt n) --done--> done
 *                      |--lost with its peer---------> queued (not counted)
 *                      |--failed, n <= max_retries--> queued
 *                      |--failed (model error)------> failed
 *                      `--failed (worker killed)----> poison
 * A result for a trial that is already done is a duplicate (first result
 * wins); a failure of an attempt that is not the trial's current one, or of
 * a done trial, is stale and ignored. */

struct sched_trial {
	int64_t id;
	char *model;
	struct cfl_params params;
	uint64_t seed, fold_seed;
	int repeat, fold, n_folds;
	unsigned flags;
	double budget_s;	/* the lease's: 0 none */
	uint64_t sample_rows;	/* the lease's: 0 all rows */
	void *user;
	enum cfl_trial_status status;
	int attempt;		/* last attempt leased (starts at prev_attempts) */
	int first_attempt;	/* attempt number of this session's first lease */
	int n_failed;		/* failed attempts in this session */
	int n_lost;		/* attempts lost with a vanished peer, not
				 * counted in n_failed (SCHED_LOST) */
	char reason[256];	/* last failure */
};

struct sched {
	struct sched_trial *t;
	size_t n, cap;
	size_t *q;		/* ring of queued trial indices */
	size_t q_head, q_len, q_cap;
	int64_t *h_key;		/* open-addressing map trial_id -> index */
	size_t *h_val, h_cap;
	int max_retries;
	size_t n_running, n_done, n_failed, n_attempts_failed;
};

void cfl_sched_init(struct sched *s, int max_retries);
void cfl_sched_release(struct sched *s);
/* Adds a queued trial; returns its index, or -1 (err: duplicate id, memory). */
long cfl_sched_add(struct sched *s, const struct cfl_trial_spec *spec,
		   struct cfl_err *err);
/* Index of trial id, or -1. */
long cfl_sched_find(const struct sched *s, int64_t id);
/* Pops the next queued trial, marks it running with attempt + 1; -1 when
 * none is queued. */
long cfl_sched_take(struct sched *s);
/* A result of (idx, attempt): 0 when it is the first (now done), 1 when the
 * trial was already done (duplicate). */
int cfl_sched_done(struct sched *s, long idx, int attempt);
/* How an attempt failed. */
enum sched_fail {
	SCHED_MODEL_ERROR = 0,	/* the model failed: retried, then FAILED */
	SCHED_KILLED = 1,	/* the worker died or timed out: retried, then
				 * POISON */
	SCHED_CANCELLED = 2,	/* the caller stopped it (cfl_pool_cancel):
				 * CANCELLED at once, never retried */
	SCHED_LOST = 3,		/* a remote peer holding it vanished (EOF,
				 * reset, silence, dropped): nothing about the
				 * trial, so requeued without counting */
	SCHED_PRUNED = 4,	/* the caller pruned it (cfl_pool_prune):
				 * PRUNED at once, never retried */
};
/* A failed attempt (how: enum sched_fail).  Returns the trial's new status
 * (QUEUED when retried), or -1 when the failure is stale (ignored). */
int cfl_sched_failed(struct sched *s, long idx, int attempt, int how,
		     const char *reason);
/* Running trials become interrupted; returns how many. */
size_t cfl_sched_interrupt(struct sched *s);

/* ---- result checks (check.c): may a RESULT be stored? ---- */

struct result_check {
	const struct cfl_data *data;	/* NULL: metric names only */
	const enum cfl_metric_id *metrics;	/* what every lease asks */
	size_t n_metrics;
	size_t *fold;		/* (train.n) the fold of each train row for */
	uint64_t fold_seed;	/* this fold_seed and */
	int n_folds;		/* this count; NULL: none made yet */
};

void cfl_result_check_init(struct result_check *c, const struct cfl_data *data,
			   const enum cfl_metric_id *metrics, size_t n_metrics);
void cfl_result_check_release(struct result_check *c);
/* Whether r (status OK) may be stored as the outcome of trial t: every
 * number finite (a metric may be NaN: undefined), each split's metrics the
 * lease's in its order (none on a split the trial does not score), its
 * predictions (n rows x n_out) exactly where the lease keeps them --
 * valid, test, and out of fold the fold's own rows in order -- and a model
 * text, when the lease keeps one, that loads for the data (its width and
 * classes, the lease's model), and the iterations it says it kept no more
 * than the lease's epochs or rounds.  1 when it may; 0 with why filled
 * ("metric 'accuracy' on test, the lease asked for 'acc'"). */
int cfl_result_check(struct result_check *c, const struct sched_trial *t,
		     const struct cfl_wire_result *r, char *why, size_t cap);

#endif
