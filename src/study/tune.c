/*
 * `cfl tune`'s search on a study (cfl/study.h): ask a candidate, run its
 * repeats in the pool, tell its score, and refit the best.
 *
 * Determinism: results are told to the search in candidate order, and a new
 * candidate is asked only after the oldest one in flight is told, so the
 * history depends on (seed, num_parallel) only, never on which trial
 * finishes first; --resume replays that history from the store.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/model.h"

void cfl_study_tune_release(struct cfl_study *s)
{
	cfl_search_free(s->search);
	s->search = NULL;
	cfl_pruner_free(s->pruner);
	s->pruner = NULL;
	for (size_t i = 0; s->cands && i < s->n_cands; i++) {
		cfl_params_release(&s->cands[i].params);
		free(s->cands[i].vals);
		free(s->cands[i].iters);
	}
	/* a candidate being asked when the search failed */
	if (s->cands && s->n_cands < (size_t)s->plan->tune.num_search)
		cfl_params_release(&s->cands[s->n_cands].params);
	free(s->cands);
	s->cands = NULL;
	s->n_cands = 0;
	free(s->trefs);
	s->trefs = NULL;
	free(s->stored);
	s->stored = NULL;
	free(s->iters);
	s->iters = NULL;
}

static double stored_value(const struct cfl_study *s, int64_t cand_id, int repeat)
{
	const char *metric = cfl_study_metric_name(s->plan);

	for (size_t i = 0; i < s->n_stored; i++)
		if (s->stored[i].cand_id == cand_id && s->stored[i].repeat == repeat &&
		    !strcmp(s->stored[i].metric, metric))
			return s->stored[i].value;
	return NAN;
}

/* The params of candidate c's refit (study_refit_params over the
 * iteration counts its search repeats kept). */
static int refit_params(const struct cfl_study *s, const struct study_cand *c,
			struct cfl_params *out, int *on_all, struct cfl_err *err)
{
	return study_refit_params(s->plan->tune.model, &c->params, c->iters,
				  (size_t)s->plan->num_repeat, out, on_all, err);
}

/* Submits the trials (repeats [r0, r1)) of candidate k; done ones (on
 * --resume) take their stored values.  Repeats from num_repeat on are the
 * refit's: on train and validation together (refit_params). */
static int submit_trials(struct cfl_study *s, size_t k, int r0, int r1,
			 struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_cand *c = &s->cands[k];
	struct cfl_params refit;
	struct cfl_buf cmd;
	int rc = -1, refit_all = 0;

	cfl_buf_init(&cmd);
	cfl_params_init(&refit);
	if (p->tune.command && cfl_study_substitute(p->tune.command, &c->params,
						    &cmd, err))
		return -1;
	if (!p->tune.command && r0 >= p->num_repeat &&
	    refit_params(s, c, &refit, &refit_all, err))
		return -1;
	if (cfl_store_begin(s->st, err))
		goto out;
	for (int rep = r0; rep < r1; rep++) {
		struct cfl_trial_state ts;
		struct cfl_trial_spec spec;
		uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, rep);
		struct study_tref *tr = &s->trefs[s->n_trefs];

		if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, rep, -1, seed,
					      rep < p->num_repeat ? CFL_PHASE_SEARCH :
					      CFL_PHASE_REFIT, &ts, err))
			goto fail;
		if (ts.status == CFL_TRIAL_DONE) {
			if (rep < p->num_repeat) {
				c->vals[rep] = stored_value(s, c->id, rep);
				/* for the refit's count, as in the session
				 * that ran it */
				c->iters[rep] = study_stored_iters(s->iters, s->n_iters,
								   ts.id);
			}
			continue;
		}
		if (ts.status == CFL_TRIAL_FAILED || ts.status == CFL_TRIAL_POISON ||
		    ts.status == CFL_TRIAL_CANCELLED) {
			/* a failed trial stays failed: the history is replayed */
			continue;
		}
		if (ts.status == CFL_TRIAL_PRUNED) {
			c->pruned = 1;	/* as it was told */
			continue;
		}
		tr->cand = k;
		tr->repeat = rep;
		s->n_trefs++;
		memset(&spec, 0, sizeof(spec));
		spec.trial_id = ts.id;
		spec.model = p->tune.command ? cmd.data : p->tune.model;
		spec.params = p->tune.command ? NULL
			      : rep >= p->num_repeat ? &refit : &c->params;
		spec.seed = seed;
		spec.fold_seed = cfl_fold_seed(p->data.seed, rep);
		spec.repeat = rep;
		spec.fold = -1;
		spec.flags = p->tune.command ? CFL_LEASE_COMMAND : 0;
		if (rep >= p->num_repeat && refit_all)
			spec.flags |= CFL_LEASE_REFIT;
		/* --save: the refit's models go into the bundle, with the
		 * predictions that show the bundle gives the same */
		if (p->tune.save && rep >= p->num_repeat)
			spec.flags |= CFL_LEASE_KEEP_MODEL | CFL_LEASE_KEEP_TEST;
		/* --prune: the search's repeats say how they train */
		if (s->pruner && rep < p->num_repeat)
			spec.flags |= CFL_LEASE_PROGRESS;
		spec.prev_attempts = ts.attempt;
		spec.user = tr;
		if (cfl_pool_submit(s->pool, &spec, err))
			goto fail;
		c->n_pending++;
	}
	if (cfl_store_commit(s->st, err))
		goto out;
	rc = 0;
	goto out;
fail:
	cfl_store_rollback(s->st);
out:
	cfl_buf_release(&cmd);
	cfl_params_release(&refit);
	return rc;
}

/* Asks the next candidate and submits its trials.  1: the space is
 * exhausted. */
static int ask_one(struct cfl_study *s, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_cand *c = &s->cands[s->n_cands];
	size_t idx;
	int r;

	cfl_params_init(&c->params);
	r = cfl_search_ask(s->search, &c->params, &idx, err);
	if (r)
		return r;
	c->vals = malloc((size_t)p->num_repeat * sizeof(double));
	c->iters = calloc((size_t)p->num_repeat, sizeof(size_t));
	if (!c->vals || !c->iters)
		return cfl_err_set(err, "out of memory");
	for (long i = 0; i < p->num_repeat; i++)
		c->vals[i] = NAN;
	c->score = NAN;
	if (cfl_store_candidate_get_or_add(s->st, s->run_id,
					   p->tune.command ? "command" : p->tune.model,
					   &c->params, &c->id, c->hex, err))
		return -1;
	s->n_cands++;
	return submit_trials(s, s->n_cands - 1, 0, (int)p->num_repeat, err);
}

/* Candidate k is complete: its score goes to the store and the search. */
static int tell_one(struct cfl_study *s, size_t k,
		    const struct cfl_study_listener *ls, struct cfl_err *err)
{
	struct study_cand *c = &s->cands[k];
	struct cfl_study_event ev;
	/* a pruned candidate has no score: the search learns it failed */
	double score = c->pruned ? NAN :
		       cfl_metric_candidate_score(c->vals, (size_t)s->plan->num_repeat,
						  cfl_study_sign(s->plan));

	c->score = score;
	if (cfl_store_candidate_set_score(s->st, c->id, score, err) ||
	    cfl_search_tell(s->search, k, score, err))
		return -1;
	c->told = 1;
	if (!isnan(score) && (!s->has_best || score > s->best_score)) {
		s->has_best = 1;
		s->best_score = score;
	}
	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_CANDIDATE;
	ev.pool = s->pool;
	ev.cand = k;
	ev.hex = c->hex;
	ev.params = &c->params;
	ev.score = score;
	ev.best = s->best_score;
	cfl_study_emit(ls, &ev);
	return 0;
}

/* Records a finished trial and tells the listener.  0, or -1 with err. */
static int on_trial(struct cfl_study *s, const struct cfl_pool_event *ev,
		    const struct cfl_study_listener *ls, struct cfl_err *err)
{
	const struct study_tref *tr = ev->user;
	struct study_cand *c = &s->cands[tr->cand];
	struct cfl_study_event se;

	if (c->n_pending)
		c->n_pending--;
	if (ev->status == CFL_TRIAL_PRUNED)
		c->pruned = 1;
	if (s->pruner && tr->repeat < s->plan->num_repeat) {
		/* --prune: what waited for this seed is judged; a candidate
		 * whose search seeds all finished is a completed one */
		int r = cfl_pruner_seed_end(s->pruner, c->id, tr->repeat, err);

		if (r < 0)
			return -1;
		if (r > 0)
			c->pruned = 1;
		if (c->n_pending == 0 && !c->pruned && ev->status == CFL_TRIAL_DONE)
			cfl_pruner_complete(s->pruner, c->id);
	}
	if (ev->status == CFL_TRIAL_DONE && tr->repeat < s->plan->num_repeat) {
		const struct cfl_wire_split *v = &ev->result->split[CFL_SPLIT_VALID];
		const char *metric = cfl_study_metric_name(s->plan);

		for (uint32_t i = 0; i < v->n_metrics; i++)
			if (!strcmp(v->metrics[i].name, metric))
				c->vals[tr->repeat] = v->metrics[i].value;
		c->iters[tr->repeat] = ev->result->n_iter_kept;
	}
	memset(&se, 0, sizeof(se));
	se.kind = CFL_STUDY_TRIAL;
	se.pool = s->pool;
	se.trial = ev;
	se.what = c->hex;
	se.repeat = tr->repeat;
	se.fold = -1;
	cfl_study_emit(ls, &se);
	return 0;
}

int study_tune_progress(void *ctx, int64_t trial_id, void *user, size_t step,
			double score, struct cfl_err *err)
{
	struct cfl_study *s = ctx;
	const struct study_tref *tr = user;
	struct study_cand *c;
	int r;

	(void)trial_id;
	if (!s->pruner || !tr || tr->repeat >= s->plan->num_repeat)
		return 0;
	/* the candidate is judged on the mean of its seeds (cfl/hpo.h); a
	 * pruned candidate has no score: its other seeds stop too */
	c = &s->cands[tr->cand];
	if (c->pruned)
		return 1;
	r = cfl_pruner_seed_report(s->pruner, c->id, tr->repeat, step, score, err);
	if (r > 0)
		c->pruned = 1;
	return r;
}

/* One trial event: 0 handled, 1 idle, 2 interrupted, -1 error. */
static int wait_one(struct cfl_study *s, const struct cfl_study_listener *ls,
		    struct cfl_err *err)
{
	struct cfl_pool_event ev;
	int r = cfl_study_wait(s, ls, &ev, err);

	if (r == 0 && on_trial(s, &ev, ls, err))
		return -1;
	return r;
}

/* Reads what a resumed run stored: its candidates, validation metrics and
 * the iterations its trials kept. */
static int load_stored(struct cfl_study *s, struct cfl_err *err)
{
	struct cfl_candidate_info *sc = NULL;

	if (!s->resumed || s->stored)
		return 0;
	if (cfl_store_candidates(s->st, s->run_id, &sc, &s->n_stored_cands, err) ||
	    cfl_store_run_metrics(s->st, s->run_id, CFL_SPLIT_VALID, &s->stored,
				  &s->n_stored, err) ||
	    cfl_store_run_iters(s->st, s->run_id, &s->iters, &s->n_iters, err)) {
		cfl_candidates_free(sc, s->n_stored_cands);
		return -1;
	}
	cfl_candidates_free(sc, s->n_stored_cands);
	return 0;
}

int cfl_study_tune(struct cfl_study *s, const struct cfl_study_listener *ls,
		   struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	const struct cfl_study_tune_plan *t = &p->tune;
	struct cfl_search_opts so;
	struct cfl_study_event se;
	size_t told = 0;
	int exhausted = 0, r;
	double t0;

	if (!s->pool || p->kind != CFL_RUN_TUNE || s->search)
		return cfl_err_set(err, "cfl_study_tune: %s",
				   !s->pool ? "the pool is not started"
				   : s->search ? "the search ran already" : "not a tune plan");
	if (load_stored(s, err))
		return -1;
	/* the GP's small matrices are faster on one BLAS thread */
	cfl_worker_set_threads(1);

	cfl_search_opts_init(&so);
	so.method = t->method;
	so.seed = cfl_seed_derive(p->data.seed, "tune", 0);
	so.maximize = 1;	/* scores: higher is better */
	so.grid_points = (size_t)t->grid_points;
	so.budget = (size_t)s->budget;
	so.liar = t->liar;
	s->search = cfl_search_new(t->space, &so, err);
	if (s->search && t->prune != CFL_PRUNE_NONE && !t->command) {
		struct cfl_pruner_opts po;

		cfl_pruner_opts_init(&po);
		po.kind = t->prune;
		if (!(s->pruner = cfl_pruner_new(&po, err)))
			return -1;
	}
	s->cands = calloc((size_t)t->num_search, sizeof(*s->cands));
	s->trefs = calloc((size_t)(t->num_search + 1) * (size_t)p->num_repeat,
			  sizeof(*s->trefs));
	if (!s->search || !s->cands || !s->trefs) {
		if (s->search)
			cfl_err_set(err, "out of memory");
		return -1;
	}
	memset(&se, 0, sizeof(se));
	se.kind = CFL_STUDY_START;
	se.pool = s->pool;
	se.n_done = s->n_stored_cands;
	cfl_study_emit(ls, &se);

	/* ask P, then one more each time the oldest in flight is told */
	t0 = cfl_now();
	for (;;) {
		while (!exhausted && s->n_cands < (size_t)t->num_search &&
		       s->n_cands - told < (size_t)s->num_parallel &&
		       !(t->timeout > 0 && s->n_cands >= s->n_stored_cands &&
			 cfl_now() - t0 > t->timeout)) {
			r = ask_one(s, err);
			if (r < 0)
				return -1;
			if (r == 1)
				exhausted = 1;
		}
		if (told == s->n_cands)
			break;
		if (s->cands[told].n_pending == 0) {
			if (tell_one(s, told, ls, err))
				return -1;
			told++;
			continue;
		}
		r = wait_one(s, ls, err);
		if (r < 0)
			return -1;
		if (r == 2 || r == 3)	/* tune has no time limit of its own */
			return CFL_STUDY_INTERRUPTED;
		if (r == 1)	/* idle with trials pending cannot happen; do not spin */
			return cfl_err_set(err, "the pool went idle with trials pending");
	}
	if (t->timeout > 0 && s->n_cands < (size_t)t->num_search && !exhausted) {
		memset(&se, 0, sizeof(se));
		se.kind = CFL_STUDY_TIMEOUT;
		se.pool = s->pool;
		se.n_done = s->n_cands;
		cfl_study_emit(ls, &se);
	}

	/* the refit of the best: num_repeat fresh seeds, on the test part */
	{
		double *scores = calloc(s->n_cands + 1, sizeof(double));

		if (!scores)
			return cfl_err_set(err, "out of memory");
		for (size_t i = 0; i < s->n_cands; i++)
			scores[i] = s->cands[i].score;
		s->best = cfl_metric_best_score(scores, s->n_cands);
		free(scores);
	}
	if (s->best < 0 || t->command)
		return 0;
	{
		struct cfl_params rp;
		int on_all;

		if (refit_params(s, &s->cands[s->best], &rp, &on_all, err))
			return -1;
		cfl_params_release(&rp);
		if (!on_all) {
			memset(&se, 0, sizeof(se));
			se.kind = CFL_STUDY_NOTE;
			se.text = "the refit trains on the train part and stops early on "
				  "validation, as the search did: its search repeats' epoch "
				  "or round counts are not in the database (a cfl older than "
				  "the table trial_iters ran them)";
			cfl_study_emit(ls, &se);
		}
	}
	if (submit_trials(s, (size_t)s->best, (int)p->num_repeat,
			  2 * (int)p->num_repeat, err))
		return -1;
	while (s->cands[s->best].n_pending) {
		r = wait_one(s, ls, err);
		if (r < 0)
			return -1;
		if (r == 2 || r == 3)	/* tune has no time limit of its own */
			return CFL_STUDY_INTERRUPTED;
		if (r == 1)
			break;
	}
	return 0;
}

long cfl_study_tune_best(const struct cfl_study *s)
{
	return s->best;
}

int cfl_study_tune_save_best(struct cfl_study *s, const char *path,
			     struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	const struct cfl_model_ops *ops;
	struct study_cand *c;
	struct cfl_model *m = NULL;
	struct cfl_params params;
	struct cfl_xy all;
	int rc = -1, on_all;

	if (p->kind != CFL_RUN_TUNE || p->tune.command || !s->data || s->best < 0)
		return cfl_err_set(err, "no best model to save");
	ops = cfl_model_find(p->tune.model);
	c = &s->cands[s->best];
	cfl_xy_init(&all);
	if (refit_params(s, c, &params, &on_all, err))
		return -1;
	m = cfl_model_new(ops, &params,
			  cfl_trial_seed(p->data.seed, c->hex, (int)p->num_repeat), err);
	if (!m)
		goto out;
	/* as the refit's first repeat: the same rows, params and seed */
	if (on_all)
		rc = cfl_xy_concat(&all, &s->data->train, &s->data->valid, err) ||
		     cfl_model_fit(m, &all, NULL, err) ? -1 : 0;
	else
		rc = cfl_model_fit(m, &s->data->train, &s->data->valid, err);
	if (!rc)
		rc = cfl_model_save_file(m, &s->data->enc, path, err);
out:
	cfl_model_free(m);
	cfl_xy_release(&all);
	cfl_params_release(&params);
	return rc;
}

void cfl_study_model_path(const char *db, const char *name, char *out,
			  size_t cap)
{
	const char *slash = strrchr(db, '/');

	if (slash)
		snprintf(out, cap, "%.*s/%s.cfl", (int)(slash - db), db, name);
	else
		snprintf(out, cap, "%s.cfl", name);
}
