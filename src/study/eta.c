/*
 * The time left of a repeat, for its progress events: the run's trials as
 * the store holds them (its done trials' durations, a resumed run's stored
 * ones too, and its running trials' start times) priced per model by
 * cfl_eta_compute (src/core/progress.c).
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/store.h"

/* Estimates again from the store, at most every quarter of a second (a
 * read of every trial: not on each of thousands of quick ones); a store
 * error keeps the last estimate. */
static void eta_update(struct cfl_study *s, size_t slots, double now)
{
	const struct cfl_study_repeat_plan *rp = &s->plan->repeat;
	size_t n_models = rp->n_models < CFL_ETA_MAX_MODELS ? rp->n_models
							     : CFL_ETA_MAX_MODELS;
	struct cfl_eta_model m[CFL_ETA_MAX_MODELS];
	struct cfl_eta_running *run = NULL;
	struct cfl_candidate_info *c = NULL;
	struct cfl_trial_info *tr = NULL;
	size_t n_c = 0, n_tr = 0, n_run = 0;
	struct cfl_err err;
	double wall = cfl_wall_time();	/* trials store epoch seconds */

	if (s->eta.made && now - s->eta.at < 0.25)
		return;
	if (cfl_store_candidates(s->st, s->run_id, &c, &n_c, &err) ||
	    cfl_store_trials(s->st, s->run_id, &tr, &n_tr, &err) ||
	    !(run = calloc(n_tr + 1, sizeof(*run))))
		goto out;
	memset(m, 0, sizeof(m));
	for (size_t i = 0; i < n_tr; i++) {
		size_t k = 0, mi = 0;

		while (k < n_c && c[k].id != tr[i].cand_id)
			k++;
		while (k < n_c && mi < n_models && strcmp(rp->models[mi], c[k].model))
			mi++;
		if (k == n_c || mi == n_models)
			continue;
		switch (tr[i].status) {
		case CFL_TRIAL_DONE:
			if (isfinite(tr[i].duration)) {
				m[mi].done_seconds += tr[i].duration;
				m[mi].n_done++;
			}
			break;
		case CFL_TRIAL_RUNNING:
			run[n_run].model = mi;
			run[n_run++].age = tr[i].started > 0 ? fmax(0, wall - tr[i].started) : 0;
			break;
		case CFL_TRIAL_QUEUED:
		case CFL_TRIAL_INTERRUPTED:
			m[mi].queued++;
			break;
		default:
			break;
		}
	}
	s->eta.est = cfl_eta_compute(m, n_models, run, n_run, slots, &s->eta.lower);
	s->eta.at = now;
	s->eta.made = 1;
out:
	free(run);
	cfl_candidates_free(c, n_c);
	cfl_trials_free(tr, n_tr);
}

void study_eta_event(struct cfl_study *s, struct cfl_study_event *se)
{
	struct cfl_pool_stats ps;
	double now = cfl_now();

	se->eta = -1;
	se->eta_lower = 0;
	/* only for a caller that shows a live line (it asked for ticks) */
	if (s->plan->kind != CFL_RUN_REPEAT || !s->pool || s->user_tick <= 0)
		return;
	if (se->kind == CFL_STUDY_START)
		cfl_eta_init(&s->eta, now);
	cfl_pool_get_stats(s->pool, &ps);
	eta_update(s, ps.n_slots, now);
	se->eta = cfl_eta_left(&s->eta, now, &se->eta_lower);
}
