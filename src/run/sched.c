/*
 * The scheduler: the lease state machine of a run's trials (see
 * internal.h).  Pure bookkeeping over indices: no I/O, no clock, no store;
 * the pool decides when, the scheduler decides what.  Invariant: a trial is
 * in the queue exactly when its status is QUEUED, and a done trial never
 * changes again (first result wins).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfl_sched_init(struct sched *s, int max_retries)
{
	memset(s, 0, sizeof(*s));
	s->max_retries = max_retries < 0 ? 0 : max_retries;
}

void cfl_sched_release(struct sched *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->t[i].model);
		cfl_params_release(&s->t[i].params);
	}
	free(s->t);
	free(s->q);
	free(s->h_key);
	free(s->h_val);
	memset(s, 0, sizeof(*s));
}

static size_t hash_id(int64_t id, size_t cap)
{
	uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ULL;

	return (size_t)(x >> 17) & (cap - 1);
}

static int map_grow(struct sched *s, struct cfl_err *err)
{
	size_t cap = s->h_cap ? s->h_cap * 2 : 64;
	int64_t *key = cfl_malloc(cap * sizeof(*key), err);
	size_t *val = cfl_malloc(cap * sizeof(*val), err);

	if (!key || !val) {
		free(key);
		free(val);
		return -1;
	}
	for (size_t i = 0; i < cap; i++)
		key[i] = 0;	/* trial ids are > 0: 0 marks a free cell */
	for (size_t i = 0; i < s->h_cap; i++) {
		size_t j;

		if (!s->h_key[i])
			continue;
		for (j = hash_id(s->h_key[i], cap); key[j]; j = (j + 1) & (cap - 1))
			;
		key[j] = s->h_key[i];
		val[j] = s->h_val[i];
	}
	free(s->h_key);
	free(s->h_val);
	s->h_key = key;
	s->h_val = val;
	s->h_cap = cap;
	return 0;
}

long cfl_sched_find(const struct sched *s, int64_t id)
{
	if (!s->h_cap || id <= 0)
		return -1;
	for (size_t j = hash_id(id, s->h_cap); s->h_key[j];
	     j = (j + 1) & (s->h_cap - 1))
		if (s->h_key[j] == id)
			return (long)s->h_val[j];
	return -1;
}

static int queue_push(struct sched *s, size_t idx, struct cfl_err *err)
{
	if (s->q_len == s->q_cap) {
		size_t cap = s->q_cap ? s->q_cap * 2 : 64;
		size_t *q = cfl_malloc(cap * sizeof(*q), err);

		if (!q)
			return -1;
		for (size_t i = 0; i < s->q_len; i++)
			q[i] = s->q[(s->q_head + i) % s->q_cap];
		free(s->q);
		s->q = q;
		s->q_cap = cap;
		s->q_head = 0;
	}
	s->q[(s->q_head + s->q_len) % s->q_cap] = idx;
	s->q_len++;
	return 0;
}

long cfl_sched_add(struct sched *s, const struct cfl_trial_spec *spec,
		   struct cfl_err *err)
{
	struct sched_trial *t;
	size_t j;

	if (spec->trial_id <= 0)
		return cfl_err_set(err, "trial id %lld is not positive",
				   (long long)spec->trial_id);
	if (!spec->model || !spec->model[0])
		return cfl_err_set(err, "trial %lld has no model",
				   (long long)spec->trial_id);
	if (cfl_sched_find(s, spec->trial_id) >= 0)
		return cfl_err_set(err, "trial %lld submitted twice",
				   (long long)spec->trial_id);
	if ((s->n + 1) * 2 > s->h_cap && map_grow(s, err))
		return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct sched_trial *nt = cfl_realloc(s->t, cap * sizeof(*nt), err);

		if (!nt)
			return -1;
		s->t = nt;
		s->cap = cap;
	}
	t = &s->t[s->n];
	memset(t, 0, sizeof(*t));
	cfl_params_init(&t->params);
	t->model = cfl_strdup(spec->model, err);
	if (!t->model || (spec->params &&
			  cfl_params_copy(&t->params, spec->params, err))) {
		free(t->model);
		cfl_params_release(&t->params);
		return -1;
	}
	if (queue_push(s, s->n, err)) {
		free(t->model);
		cfl_params_release(&t->params);
		return -1;
	}
	t->id = spec->trial_id;
	t->seed = spec->seed;
	t->fold_seed = spec->fold_seed;
	t->repeat = spec->repeat;
	t->fold = spec->fold;
	t->n_folds = spec->n_folds;
	t->flags = spec->flags;
	t->budget_s = spec->budget_s;
	t->sample_rows = spec->sample_rows;
	t->user = spec->user;
	t->status = CFL_TRIAL_QUEUED;
	t->attempt = spec->prev_attempts > 0 ? spec->prev_attempts : 0;
	t->first_attempt = t->attempt + 1;
	for (j = hash_id(t->id, s->h_cap); s->h_key[j]; j = (j + 1) & (s->h_cap - 1))
		;
	s->h_key[j] = t->id;
	s->h_val[j] = s->n;
	return (long)s->n++;
}

long cfl_sched_take(struct sched *s)
{
	size_t idx;

	if (!s->q_len)
		return -1;
	idx = s->q[s->q_head];
	s->q_head = (s->q_head + 1) % s->q_cap;
	s->q_len--;
	s->t[idx].status = CFL_TRIAL_RUNNING;
	s->t[idx].attempt++;
	s->n_running++;
	return (long)idx;
}

int cfl_sched_done(struct sched *s, long idx, int attempt)
{
	struct sched_trial *t = &s->t[idx];

	(void)attempt;	/* any attempt's result is valid: first one wins */
	if (t->status == CFL_TRIAL_DONE)
		return 1;
	if (t->status == CFL_TRIAL_RUNNING)
		s->n_running--;
	else if (t->status == CFL_TRIAL_QUEUED) {
		/* a late result of an attempt that was requeued: drop it
		 * from the queue so it is not leased again */
		for (size_t i = 0; i < s->q_len; i++) {
			size_t k = (s->q_head + i) % s->q_cap;

			if (s->q[k] == (size_t)idx) {
				for (size_t m = i; m + 1 < s->q_len; m++)
					s->q[(s->q_head + m) % s->q_cap] =
						s->q[(s->q_head + m + 1) % s->q_cap];
				s->q_len--;
				break;
			}
		}
	} else if (t->status == CFL_TRIAL_FAILED || t->status == CFL_TRIAL_POISON ||
		   t->status == CFL_TRIAL_CANCELLED || t->status == CFL_TRIAL_PRUNED)
		s->n_failed--;
	t->status = CFL_TRIAL_DONE;
	s->n_done++;
	return 0;
}

int cfl_sched_failed(struct sched *s, long idx, int attempt, int how,
		     const char *reason)
{
	struct sched_trial *t = &s->t[idx];

	if (t->status != CFL_TRIAL_RUNNING || t->attempt != attempt)
		return -1;
	s->n_running--;
	s->n_attempts_failed++;
	snprintf(t->reason, sizeof(t->reason), "%s", reason);
	/* a peer that connects, takes leases and vanishes says nothing about
	 * the trials: they are leased again, never closer to poison (the
	 * pool gives such peers fewer leases instead; a trial that kills its
	 * remote worker's process is told by the worker: CRASHED) */
	if (how == SCHED_LOST) {
		t->n_lost++;
		t->status = CFL_TRIAL_QUEUED;
		if (queue_push(s, (size_t)idx, NULL) == 0)
			return CFL_TRIAL_QUEUED;
		how = SCHED_KILLED;	/* no memory to requeue */
	}
	if (how == SCHED_CANCELLED || how == SCHED_PRUNED) {
		/* the caller's decision, not a failure of the trial
		 * (counted with the failed ones in n_failed: not done) */
		t->status = how == SCHED_PRUNED ? CFL_TRIAL_PRUNED :
						  CFL_TRIAL_CANCELLED;
		s->n_failed++;
		return t->status;
	}
	t->n_failed++;
	if (t->n_failed <= s->max_retries) {
		t->status = CFL_TRIAL_QUEUED;
		if (queue_push(s, (size_t)idx, NULL) == 0)
			return CFL_TRIAL_QUEUED;
		/* no memory to requeue: give up on the trial */
	}
	t->status = how == SCHED_KILLED ? CFL_TRIAL_POISON : CFL_TRIAL_FAILED;
	s->n_failed++;
	return t->status;
}

size_t cfl_sched_interrupt(struct sched *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].status == CFL_TRIAL_RUNNING) {
			s->t[i].status = CFL_TRIAL_INTERRUPTED;
			n++;
		}
	s->n_running = 0;
	s->q_len = 0;
	return n;
}
