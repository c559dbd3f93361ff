/*
 * `cfl auto` on a study (cfl/study.h), through the one pool and the one
 * run:
 *   1. search: every family's defaults, its portfolio, then its GP, in
 *      rounds; on small data (under STUDY_AUTO_CV_ROWS training rows) each
 *      candidate is a bag of --folds fold trials scored out of fold by a
 *      proper score, else one trial scored on the validation part;
 *   2. bags: on larger data, each family's best bagged afterwards; on
 *      small data, the bags the final selection uses get more bag sets
 *      (--bag-sets: each set its own fold partition, trial repeat r + 1);
 *   3. the leaderboard's entries are built by cfl_study_finish
 *      (cfl_study_auto_ensembles) and read back by cfl_study_auto_summary.
 * Invariant: under a count budget (--max-trials) a round is told only
 * once all of it is final, so what is asked depends on the seed alone.
 * How the time is shared when there is no count budget is said where it
 * is done (search_async, search_family).
 */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/model.h"

/* Shares of the time limit: the most the search may take, and the reserve
 * kept after the bags for the ensembles and the table.  Within the search
 * share, the bags of the families searched so far are set aside (their
 * best's seconds x folds over the slots: bag_plan). */
#define SEARCH_MAX_SHARE 0.8
#define TRIAL_OVERHEAD 0.02
#define RESERVE_SHARE 0.03
#define RESERVE_MIN 0.25
/* A family's search stops once this many candidates in a row (at least
 * twice the slots) scored no better than its best: on the W1 set linear
 * and tree kept asking for their whole shares (191 and 72 candidates)
 * long after their best, while fcnn, slower a candidate, had none done.
 * Its unused time goes to the families searched after it; the next round
 * shares what is left again, the count starting afresh.  The rounds end
 * once a whole round (after the first) improved no family's best: on the
 * small sets every candidate of every family scored the same on the
 * validation part, and 56 rounds asked 2,300 candidates to no end. */
#define STALL_CANDIDATES 10
/* Larger data searched on a row sample (see "larger data" below): the
 * search's share of the time, the defaults' part of the search's slot
 * time, the part of the bags' slot time planned (the estimates are rough
 * and the end ragged: all of it, as a trial whose bag would not end in
 * time is made smaller and the last round takes 0.85 of the time left;
 * 0.8 and then 0.9 left the slots idle 1.5-3.4 s before the deadline on a
 * million rows), and the fewest rows a bag's folds train on. */
#define SAMPLE_SEARCH_SHARE 0.35
#define SAMPLE_DEFAULTS_SHARE 0.6
#define SAMPLE_BAG_FILL 1.0
#define SAMPLE_MIN_ROWS 1000
/* Successive halving on rows (asynchronous, ASHA: Li et al. 2018, as
 * FLAML and Hyperband run it) in the time-limited search on a row sample:
 * the Bayesian optimiser's candidates train first on the sample over
 * SEARCH_ETA^(rungs-1), and those in the top 1/SEARCH_ETA of their
 * family's finished at a rung train again on SEARCH_ETA times the rows,
 * up to the sample itself (the top rung, the only one whose scores pick a
 * family's best and its bag).  Most candidates so cost a fraction of one
 * on the sample, and the GP sees more of them.  Three rungs of eta 2 (a
 * quarter, a half, all of the sample): a wider ladder's lowest rung ranks
 * candidates on too few rows to say much of how they do on the sample;
 * no rung below SEARCH_RUNG_MIN_ROWS rows (fewer rungs then), where a
 * score on the validation part says little of the model on more. */
#define SEARCH_RUNGS 3
#define SEARCH_ETA 2
#define SEARCH_RUNG_MIN_ROWS 1000
/* The part of the time left a bag's last trial on a slot is sized to (its
 * estimate, corrected by how the bags' trials went, errs by a tenth or
 * two: a fold the limit stops loses its whole bag) */
#define SAMPLE_LAST_FILL 0.85

struct auto_cand {
	size_t family;
	int64_t id;
	char hex[9];
	struct cfl_params params;
	long idx;		/* the search's index; -1: the defaults */
	int pending;		/* its trial is not final yet */
	int replayed;		/* stored final by an earlier session (resume) */
	int cancelled;		/* cfl_pool_cancel stopped it */
	int pruned;		/* its family's pruner stopped it */
	double budget_s;	/* its search trial's time budget (0: none) */
	double bag_budget_s;	/* its folds' and refit's when its bag would
				 * not finish whole (0: as budget_s says) */
	int told;
	double value;		/* the metric on valid; NaN: failed */
	double score;		/* sign * value */
	double seconds;		/* the trial's duration + TRIAL_OVERHEAD */
	double fit_s, pred_s;	/* its search trial's fit and prediction
				 * (NaN: not known, a replayed trial) */
	uint64_t bag_rows;	/* its folds' row sample (0: all their rows) */
	double bag_give;	/* its bag's planned slot seconds (row sample) */
	int64_t trial_id;
	/* its bag: submitted, its folds done (this session's or stored),
	 * what each fold kept of its iterations (0: not known), and whether
	 * its refit was submitted (or found stored final) */
	int bag;
	size_t folds_done;
	size_t *iters;
	int refit;
	/* cross-validated search (small data): the candidate is its bag,
	 * scored on the out-of-fold predictions its folds put together */
	size_t folds_failed;
	double *oof;		/* (n_train, n_out) while folds are pending */
	double proper;		/* the proper score out of fold (or on valid):
				 * log loss, or the regression metric */
	/* successive halving on rows (a->n_rungs > 1): the rung it started
	 * at (0 for the Bayesian optimiser's, the top for the others), the
	 * rung of its latest trial and the rows that trial trains on (0:
	 * every row), its score at each rung it finished (NaN: not, or
	 * failed), and whether its best, bag and stall count took it */
	int first_rung, rung;
	uint64_t rows;
	double rung_score[CFL_STUDY_AUTO_MAX_RUNGS];
	double first_value;	/* the metric at its first rung, once promoted */
	int settled;
};

struct study_auto {
	struct auto_cand *c;
	size_t n, cap;
	struct cfl_metric_row *stored;	/* valid metrics stored (resume) */
	size_t n_stored;
	struct cfl_trial_info *trials;	/* the run's trials (resume) */
	size_t n_trials;
	struct cfl_iters_row *iters;	/* the iterations they kept (resume) */
	size_t n_iters;
	long best[CFL_STUDY_MAX_MODELS];	/* index into c, or -1 */
	long dflt[CFL_STUDY_MAX_MODELS];	/* each family's defaults */
	/* each family's search, kept for the next round */
	struct cfl_search *search[CFL_STUDY_MAX_MODELS];
	size_t since_best[CFL_STUDY_MAX_MODELS];	/* told, none better */
	int stopped[CFL_STUDY_MAX_MODELS];	/* stalled this round */
	int exhausted[CFL_STUDY_MAX_MODELS];	/* its space has no more */
	double search_end;
	int cv;			/* candidates scored out of fold (small data) */
	long next_config[CFL_STUDY_MAX_MODELS];	/* its portfolio's next; -1:
						 * done */
	size_t n_out;
	enum cfl_metric_id proper;	/* logloss, or the plan's metric */
	/* larger data: the search's row sample (0: every training row) and,
	 * under a time limit, the seconds set aside for the bags */
	uint64_t sample;
	double bag_time;
	/* larger data: the constant prediction's score on the validation
	 * part (the training rows' class frequencies, or their mean), signed
	 * as a candidate's score; NaN when not known */
	double const_score;
	/* the bags' fold trials on row samples, submitted as slots free up,
	 * and the seconds those done took against their plan */
	struct lazy_fold *lazy;
	size_t n_lazy, lazy_next;
	double obs_s, plan_s;
	size_t n_obs;		/* those done */
	double entry_s;		/* the finish's reserve per bag's entry,
				 * when it was measured (else 0) */
	int bag_sets;		/* the most sets a bag gets (--bag-sets) */
	double search_t0;	/* when the search began (this session) */
	size_t sets_pending;	/* bag sets' fold trials not final yet */
	/* --prune: each family's pruner (those whose model reports its
	 * validation score while it trains; NULL: none) */
	struct cfl_pruner *pruner[CFL_STUDY_MAX_MODELS];
	/* successive halving on rows: the rungs (1: none) and each one's
	 * rows, the lowest first, the top one a->sample */
	int n_rungs;
	uint64_t rung_rows[CFL_STUDY_AUTO_MAX_RUNGS];
};

void cfl_study_auto_release(struct cfl_study *s)
{
	struct study_auto *a = s->autos;

	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		cfl_params_release(&a->c[i].params);
		free(a->c[i].iters);
		free(a->c[i].oof);
	}
	for (size_t f = 0; f < CFL_STUDY_MAX_MODELS; f++) {
		cfl_search_free(a->search[f]);
		cfl_pruner_free(a->pruner[f]);
	}
	free(a->c);
	free(a->lazy);
	free(a->stored);
	free(a->iters);
	cfl_trials_free(a->trials, a->n_trials);
	free(a);
	s->autos = NULL;
}

/* The stored state of trial (cand_id, fold -1): 1 with *value when done
 * with the metric on valid, 0 otherwise. */
static int stored_done(const struct study_auto *a, const char *metric,
		       int64_t trial_id, double *value)
{
	for (size_t i = 0; i < a->n_stored; i++)
		if (a->stored[i].trial_id == trial_id &&
		    !strcmp(a->stored[i].metric, metric)) {
			*value = a->stored[i].value;
			return 1;
		}
	return 0;
}

static double stored_duration(const struct study_auto *a, int64_t trial_id)
{
	for (size_t i = 0; i < a->n_trials; i++)
		if (a->trials[i].id == trial_id)
			return a->trials[i].duration;
	return NAN;
}

static void emit_phase(struct cfl_study *s, const struct cfl_study_listener *ls,
		       const char *text)
{
	struct cfl_study_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_PHASE;
	ev.pool = s->pool;
	ev.text = text;
	cfl_study_emit(ls, &ev);
}

/* A trial's user pointer: the candidate's index + 1 in the low bits, its
 * fold + 1 above them, its bag set above those. */
#define USER_SHIFT 40
#define USER_MASK (((uintptr_t)1 << USER_SHIFT) - 1)
#define SET_SHIFT 52
#define FOLD_MASK (((uintptr_t)1 << (SET_SHIFT - USER_SHIFT)) - 1)

static void *user_of_set(size_t k, int fold, int set)
{
	return (void *)(((uintptr_t)k + 1) | ((uintptr_t)(fold + 1) << USER_SHIFT) |
			((uintptr_t)set << SET_SHIFT));
}

static void *user_of(size_t k, int fold)
{
	return user_of_set(k, fold, 0);
}

static double bag_seconds(const struct cfl_study *s, size_t f);
struct lazy_fold;
static void lazy_final(struct study_auto *a, size_t k, int fold,
		       const struct cfl_pool_event *ev);
static double sets_reserve(const struct cfl_study *s);

/* ---- the search of one family ---- */

/* Candidate k's proper score and its metric, once its out-of-fold
 * predictions cover every training row (all its folds done; one failed:
 * NaN, a failed candidate).  The proper score ranks candidates: log loss
 * for classification (near-equal candidates tie on accuracy on small
 * data, never on it), the metric itself for regression. */
static void score_oof(struct cfl_study *s, size_t k)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	const struct cfl_xy *tr = &s->data->train;
	enum cfl_metric_id m = s->plan->autop.metric;
	struct cfl_err why;
	double v;

	c->pending = 0;
	if (c->folds_failed || !c->oof)
		goto out;
	if (!cfl_metric_eval(m, tr->y, c->oof, tr->n, tr->n_classes, &v, &why))
		c->value = v;
	if (!cfl_metric_eval(a->proper, tr->y, c->oof, tr->n, tr->n_classes, &v, &why)) {
		c->proper = v;
		c->score = cfl_metric_info(a->proper)->sign * v;
	}
out:
	free(c->oof);
	c->oof = NULL;
}

/* Candidate k's proper score on the validation part from its search
 * trial's predictions there (n rows, rows NULL: the part's rows in
 * order); a prediction that does not fit leaves the plan's metric the
 * score, as a run by an older cfl (no predictions kept) has it. */
static void score_valid(struct cfl_study *s, size_t k, const double *pred,
			const uint32_t *rows, size_t n, size_t n_out)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	const struct cfl_xy *v = &s->data->valid;
	double *y, val;
	struct cfl_err why;

	if (!pred || n != v->n || n_out != a->n_out || !n)
		return;
	if (!(y = malloc(n * sizeof(*y))))
		return;
	for (size_t i = 0; i < n; i++)
		y[i] = v->y[rows && rows[i] < v->n ? rows[i] : i];
	if (!cfl_metric_eval(a->proper, y, pred, n, v->n_classes, &val, &why) &&
	    isfinite(val)) {
		c->proper = val;
		c->score = cfl_metric_info(a->proper)->sign * val;
	}
	free(y);
}

/* Puts one fold's out-of-fold predictions (n rows, rows NULL: 0..n-1)
 * into candidate k's. */
static void add_oof(struct cfl_study *s, size_t k, const double *pred,
		    const uint32_t *rows, size_t n)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	size_t n_train = s->data->train.n;

	for (size_t r = 0; r < n && c->oof; r++) {
		size_t row = rows ? rows[r] : r;

		if (row < n_train)
			memcpy(c->oof + row * a->n_out, pred + r * a->n_out,
			       a->n_out * sizeof(double));
	}
}

/* The trial repeat of bag set `set`: 0 for set 0, set + 1 after it, as
 * repeat 1 (fold -1) is a bag's refit (docs/database.md). */
static int set_repeat(int set)
{
	return set ? set + 1 : 0;
}

/* The lease every trial of candidate k takes: stored trial ts, its
 * family's model, the candidate's parameters, seed and repeat; the caller
 * fills in the fold, flags and the rest. */
static void auto_spec(const struct cfl_study *s, size_t k,
		      const struct cfl_trial_state *ts, uint64_t seed, int repeat,
		      struct cfl_trial_spec *spec)
{
	const struct auto_cand *c = &s->autos->c[k];

	memset(spec, 0, sizeof(*spec));
	spec->trial_id = ts->id;
	spec->model = s->plan->autop.models[c->family];
	spec->params = &c->params;
	spec->seed = seed;
	spec->repeat = repeat;
	spec->prev_attempts = ts->attempt;
}

/* Submits fold `fold` of bag set `set` of candidate k's bag: stored trial
 * ts, the seed of its repeat, the fold partition of its repeat (each set
 * its own), every prediction kept (and its model with --save), trained
 * within budget_s seconds (0: no budget).  0, or -1 with err. */
static int submit_set_fold(struct cfl_study *s, size_t k, int set, int fold,
			   uint64_t seed, const struct cfl_trial_state *ts,
			   double budget_s, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct cfl_trial_spec spec;

	auto_spec(s, k, ts, seed, set_repeat(set), &spec);
	spec.fold_seed = cfl_fold_seed(p->data.seed, spec.repeat);
	spec.fold = fold;
	spec.n_folds = p->autop.folds;
	spec.flags = CFL_LEASE_KEEP_VALID | CFL_LEASE_KEEP_TEST | CFL_LEASE_KEEP_OOF |
		     (p->autop.save ? CFL_LEASE_KEEP_MODEL : 0);
	spec.user = user_of_set(k, fold, set);
	spec.budget_s = budget_s;
	spec.sample_rows = s->autos->c[k].bag_rows;
	return cfl_pool_submit(s->pool, &spec, err);
}

static int submit_fold(struct cfl_study *s, size_t k, int fold, uint64_t seed,
		       const struct cfl_trial_state *ts, double budget_s,
		       struct cfl_err *err)
{
	return submit_set_fold(s, k, 0, fold, seed, ts, budget_s, err);
}

/* Cross-validated search: candidate k's K fold trials (repeat 0, fold
 * 0..K-1, out-of-fold predictions kept), those stored done taken from the
 * store (--resume), the others submitted.  0, or -1 with err. */
static int add_folds(struct cfl_study *s, size_t k, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	int K = p->autop.folds;
	uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, 0);
	size_t n_sub = 0;

	if (!(c->iters = cfl_calloc((size_t)K, sizeof(size_t), err)) ||
	    !(c->oof = cfl_calloc(s->data->train.n * a->n_out + 1, sizeof(double), err)))
		return -1;
	c->bag = 1;
	c->seconds = 0;
	for (int fold = 0; fold < K; fold++) {
		struct cfl_trial_state ts;

		if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, 0, fold, seed,
					      CFL_PHASE_REFIT, &ts, err))
			return -1;
		if (ts.status == CFL_TRIAL_DONE) {
			struct cfl_pred po;

			if (cfl_store_predictions(s->st, ts.id, CFL_SPLIT_OOF, &po, err) < 0)
				return -1;
			if (po.n_out == a->n_out)
				add_oof(s, k, po.values, po.rows, po.n);
			else
				c->folds_failed++;
			cfl_pred_release(&po);
			c->folds_done++;
			c->iters[fold] = study_stored_iters(a->iters, a->n_iters, ts.id);
			c->seconds += stored_duration(a, ts.id) + TRIAL_OVERHEAD;
			continue;
		}
		if (ts.status == CFL_TRIAL_FAILED || ts.status == CFL_TRIAL_POISON) {
			c->folds_failed++;
			continue;
		}
		if (submit_fold(s, k, fold, seed, &ts, 0, err))
			return -1;
		n_sub++;
		s->n_ran++;
	}
	c->replayed = !n_sub;
	if (n_sub)
		c->pending = 1;
	else
		score_oof(s, k);
	return 0;
}

/* ---- successive halving on rows ----
 *
 * Each rung's training of a candidate is its own trial of the search
 * (phase search, fold -1): repeat 0 is its first (at the rung it starts
 * at: the lowest for the Bayesian optimiser's, the top for the defaults),
 * repeat j + 1 its promotion to rung j >= 1 (rung_repeat), clear of the
 * refit (repeat 1, fold -1) and of the bag sets (repeats 2 and more with
 * folds 0..K-1).  A candidate's trial, whichever rung, has its search
 * seed: only its rows differ, a larger sample holding a smaller. */

static int rung_repeat(int rung)
{
	return rung + 1;
}

/* 1 when a stored trial's status is final without a score: failed,
 * poison, cancelled or pruned (a replay takes it as it was). */
static int final_unscored(enum cfl_trial_status st)
{
	return st == CFL_TRIAL_FAILED || st == CFL_TRIAL_POISON ||
	       st == CFL_TRIAL_CANCELLED || st == CFL_TRIAL_PRUNED;
}

/* Submits candidate k's search trial ts (fold -1, on c->rows of the
 * training rows, its predictions on valid kept for the proper score) with
 * its seed, repeat, extra lease flags and time budget.  0, or -1 with
 * err. */
static int submit_search(struct cfl_study *s, size_t k,
			 const struct cfl_trial_state *ts, uint64_t seed,
			 int repeat, unsigned flags, double budget_s,
			 struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct auto_cand *c = &s->autos->c[k];
	struct cfl_trial_spec spec;

	auto_spec(s, k, ts, seed, repeat, &spec);
	spec.fold_seed = cfl_fold_seed(p->data.seed, 0);
	spec.fold = -1;
	spec.flags = CFL_LEASE_KEEP_VALID | flags;
	spec.user = user_of(k, -1);
	spec.budget_s = budget_s;
	spec.sample_rows = c->rows;
	if (cfl_pool_submit(s->pool, &spec, err))
		return -1;
	c->pending = 1;
	s->n_ran++;
	return 0;
}

/* Candidate k's trial trial_id, stored done by an earlier session:
 * its metric, proper score and seconds from the store, its score at its
 * rung.  0, or -1 with err. */
static int replay_done(struct cfl_study *s, size_t k, int64_t trial_id,
		       struct cfl_err *err)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	const char *metric = cfl_metric_info(s->plan->autop.metric)->name;
	int sign = cfl_metric_info(s->plan->autop.metric)->sign;
	struct cfl_pred pv;

	if (stored_done(a, metric, trial_id, &c->value))
		c->score = sign * c->value;
	if (cfl_store_predictions(s->st, trial_id, CFL_SPLIT_VALID, &pv, err) < 0)
		return -1;
	if (!isnan(c->score))
		score_valid(s, k, pv.values, pv.rows, pv.n, pv.n_out);
	cfl_pred_release(&pv);
	c->seconds = stored_duration(a, trial_id) + TRIAL_OVERHEAD;
	c->rung_score[c->rung] = c->score;
	return 0;
}

/* --resume: candidate k, replayed done at its first rung, goes up the
 * rungs its stored promotions reached (done: their scores; final without
 * a score: it stops there, as it did), so that none is trained again and
 * the rule sees it promoted.  0, or -1 with err. */
static int replay_rungs(struct cfl_study *s, size_t k, struct cfl_err *err)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];

	while (c->rung + 1 < a->n_rungs) {
		const struct cfl_trial_info *t = NULL;

		for (size_t i = 0; i < a->n_trials && !t; i++)
			if (a->trials[i].cand_id == c->id && a->trials[i].fold < 0 &&
			    a->trials[i].repeat == rung_repeat(c->rung + 1))
				t = &a->trials[i];
		if (!t || (t->status != CFL_TRIAL_DONE && !final_unscored(t->status)))
			return 0;
		if (c->rung == c->first_rung)
			c->first_value = c->value;
		c->rung++;
		c->rows = a->rung_rows[c->rung];
		c->trial_id = t->id;
		c->value = c->score = c->proper = c->seconds = NAN;
		if (t->status != CFL_TRIAL_DONE)
			return 0;
		if (replay_done(s, k, t->id, err))
			return -1;
	}
	return 0;
}

long study_auto_promote(const double *scores, const int *promoted, size_t n,
			unsigned eta)
{
	size_t n_scored = 0, top;
	long pick = -1;
	size_t pick_rank = SIZE_MAX;

	if (eta < 2)
		return -1;
	for (size_t i = 0; i < n; i++)
		n_scored += !isnan(scores[i]);
	top = n_scored / eta;
	for (size_t i = 0; i < n; i++) {
		size_t rank = 0;

		if (isnan(scores[i]) || promoted[i])
			continue;
		for (size_t j = 0; j < n; j++)
			rank += !isnan(scores[j]) && (scores[j] > scores[i] ||
						      (scores[j] == scores[i] && j < i));
		if (rank < top && rank < pick_rank) {
			pick = (long)i;
			pick_rank = rank;
		}
	}
	return pick;
}

/* The candidate of family f to promote now, the higher rungs first
 * (study_auto_promote over those finished at each rung: its trial there
 * final, or promoted from it); -1 when none, -2 with err. */
static long next_promotion(struct cfl_study *s, size_t f, struct cfl_err *err)
{
	struct study_auto *a = s->autos;
	double *sc;
	int *up;
	size_t *who, n;
	long r = -1;

	if (a->n_rungs < 2 || !a->n)
		return -1;
	sc = cfl_calloc(a->n, sizeof(*sc), err);
	up = cfl_calloc(a->n, sizeof(*up), err);
	who = cfl_calloc(a->n, sizeof(*who), err);
	if (!sc || !up || !who) {
		r = -2;
		goto out;
	}
	for (int j = a->n_rungs - 2; j >= 0 && r < 0; j--) {
		long i;

		n = 0;
		for (size_t k = 0; k < a->n; k++) {
			const struct auto_cand *c = &a->c[k];

			if (c->family != f || c->first_rung > j || c->rung < j ||
			    (c->rung == j && c->pending))
				continue;
			sc[n] = c->rung_score[j];
			up[n] = c->rung > j;
			who[n++] = k;
		}
		i = study_auto_promote(sc, up, n, SEARCH_ETA);
		if (i >= 0)
			r = (long)who[i];
	}
out:
	free(sc);
	free(up);
	free(who);
	return r;
}

/* Trains candidate k again, with its params and seed, on the next rung's
 * rows: trial (k, rung_repeat(rung), fold -1), taken from the store when
 * an earlier session made it final (--resume).  0, or -1 with err. */
static int promote(struct cfl_study *s, size_t k, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, 0);
	struct cfl_trial_state ts;

	if (c->rung == c->first_rung)
		c->first_value = c->value;
	c->rung++;
	c->rows = a->rung_rows[c->rung];
	/* its score is its new rung's, once it has one */
	c->value = c->score = c->proper = c->seconds = NAN;
	c->fit_s = c->pred_s = NAN;
	c->cancelled = c->pruned = 0;
	if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, rung_repeat(c->rung), -1,
				      seed, CFL_PHASE_SEARCH, &ts, err))
		return -1;
	c->trial_id = ts.id;
	if (ts.status == CFL_TRIAL_DONE)
		return replay_done(s, k, ts.id, err);
	if (final_unscored(ts.status))
		return 0;	/* final without a score, as stored */
	/* no progress reports: its family's pruner ranks the rows of its
	 * first rung only */
	if (submit_search(s, k, &ts, seed, rung_repeat(c->rung), 0, 0, err))
		return -1;
	c->replayed = 0;	/* trained in this session */
	return 0;
}

/* The rungs of the search on a row sample under a time limit (want: the
 * plan's --search-rungs; 0: SEARCH_RUNGS): the top one a->sample, each
 * below it SEARCH_ETA times fewer rows, none below SEARCH_RUNG_MIN_ROWS. */
static void set_rungs(struct study_auto *a, int want)
{
	uint64_t rows = a->sample;
	int n = 1;

	if (want <= 0)
		want = SEARCH_RUNGS;
	if (want > CFL_STUDY_AUTO_MAX_RUNGS)
		want = CFL_STUDY_AUTO_MAX_RUNGS;
	while (n < want && rows / SEARCH_ETA >= SEARCH_RUNG_MIN_ROWS) {
		rows /= SEARCH_ETA;
		n++;
	}
	a->n_rungs = n;
	rows = a->sample;
	for (int j = n - 1; j >= 0; j--) {
		a->rung_rows[j] = rows;
		rows /= SEARCH_ETA;
	}
}

/* An fcnn candidate that does not set patience itself stops early (after
 * the plan's fcnn_patience epochs without a better score) and keeps its
 * best epoch's weights, its search trial and its bag's folds alike.  On
 * larger data it watches the validation part, which they all fit
 * without; on small data (out of fold, no validation part) each fold
 * trial holds out the plan's fcnn_valid_frac of its own training rows
 * (fcnn's valid_frac, unless the candidate sets it), so its out-of-fold
 * rows stay unseen.  Without it fcnn's defaults train their 40 epochs
 * (on small data as many as make 2,000 steps) whatever the held-out rows
 * say, and on noisy labels end far worse than the constant prediction
 * (log loss 1.88 against 0.59 on 20,200 rows; 1.24 against 0.40 on a
 * 735-row set), a family the ensembles then lose.  0, or -1 with err. */
static int early_stop_params(const struct cfl_study *s, size_t f,
			     struct cfl_params *params, struct cfl_err *err)
{
	const struct cfl_study_auto_plan *ap = &s->plan->autop;
	int small = s->autos->cv;
	char v[32];

	if ((!small && !s->data->valid.n) || ap->fcnn_patience <= 0 ||
	    (small && ap->fcnn_valid_frac <= 0) || strcmp(ap->models[f], "fcnn"))
		return 0;
	if (!cfl_params_get(params, "patience")) {
		snprintf(v, sizeof(v), "%ld", ap->fcnn_patience);
		if (cfl_params_set(params, "patience", v, err))
			return -1;
	}
	if (small && !cfl_params_get(params, "valid_frac")) {
		snprintf(v, sizeof(v), "%g", ap->fcnn_valid_frac);
		if (cfl_params_set(params, "valid_frac", v, err))
			return -1;
	}
	cfl_params_sort(params);
	return 0;
}

/* A new candidate of family f (params: moved in) with its one trial,
 * submitted unless stored done or failed.  Its index, or -1 with err. */
static long add_cand(struct cfl_study *s, size_t f, struct cfl_params *params,
		     long idx, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	struct auto_cand *c;
	struct cfl_trial_state ts;
	uint64_t seed;

	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		void *q = cfl_realloc(a->c, cap * sizeof(*a->c), err);

		if (!q)
			return -1;
		a->c = q;
		a->cap = cap;
	}
	if (early_stop_params(s, f, params, err))
		return -1;
	c = &a->c[a->n];
	memset(c, 0, sizeof(*c));
	c->family = f;
	c->params = *params;
	cfl_params_init(params);
	c->idx = idx;
	c->value = c->score = c->seconds = c->proper = NAN;
	c->fit_s = c->pred_s = NAN;
	/* the Bayesian optimiser's start at the lowest rung; the defaults
	 * and the portfolio, the family's reference, at the top */
	c->first_rung = c->rung = idx >= 0 ? 0 : a->n_rungs - 1;
	c->rows = a->rung_rows[c->rung];
	for (int j = 0; j < CFL_STUDY_AUTO_MAX_RUNGS; j++)
		c->rung_score[j] = NAN;
	a->n++;
	if (cfl_store_candidate_get_or_add(s->st, s->run_id, p->autop.models[f],
					   &c->params, &c->id, c->hex, err))
		return -1;
	if (a->cv)
		return add_folds(s, a->n - 1, err) ? -1 : (long)(a->n - 1);
	seed = cfl_trial_seed(p->data.seed, c->hex, 0);
	if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, 0, -1, seed,
				      CFL_PHASE_SEARCH, &ts, err))
		return -1;
	c->trial_id = ts.id;
	if (idx < 0 && s->deadline > 0 && !p->autop.max_trials) {
		/* the defaults (not under a count budget, whose run depends
		 * on the seed only, never on the clock): trained smaller (fewer trees, rounds, epochs)
		 * rather than cancelled, within a family's share of the search */
		double share = (s->deadline - cfl_now()) * SEARCH_MAX_SHARE /
			       (double)p->autop.n_models;

		/* on a row sample the search has its share of the time, and
		 * the defaults a part of it over the slots */
		if (a->bag_time > 0)
			share = (s->deadline - a->bag_time - cfl_now()) * SAMPLE_DEFAULTS_SHARE *
				(double)study_slots(s) / (double)p->autop.n_models;

		c->budget_s = share > 0.05 ? share : 0.05;
	}
	c->replayed = ts.status == CFL_TRIAL_DONE || final_unscored(ts.status);
	if (ts.status == CFL_TRIAL_DONE) {
		if (replay_done(s, a->n - 1, ts.id, err) ||
		    replay_rungs(s, a->n - 1, err))
			return -1;
		return (long)(a->n - 1);
	}
	if (final_unscored(ts.status))
		return (long)(a->n - 1);	/* replayed as failed (pruned:
						 * final, as it was told) */
	/* --prune: every candidate of a pruned family reports while it
	 * trains, the reference ones too (study_auto_progress) */
	if (submit_search(s, a->n - 1, &ts, seed, 0,
			  a->pruner[f] ? CFL_LEASE_PROGRESS : 0, c->budget_s, err))
		return -1;
	return (long)(a->n - 1);
}

/* A trial event of the pool: the search's (fold -1) or a bag's. */
static void on_trial(struct cfl_study *s, const struct cfl_pool_event *ev,
		     const struct cfl_study_listener *ls)
{
	struct study_auto *a = s->autos;
	struct cfl_study_event se;
	uintptr_t u = (uintptr_t)ev->user;
	size_t k = (size_t)(u & USER_MASK) - 1;
	int fold = (int)((u >> USER_SHIFT) & FOLD_MASK) - 1;
	int set = (int)(u >> SET_SHIFT);
	struct auto_cand *c = &a->c[k];
	const char *metric = cfl_metric_info(s->plan->autop.metric)->name;

	if (fold >= 0 && a->lazy)
		lazy_final(a, k, fold, ev);
	if (set > 0) {
		/* a later bag set's fold: the ensembles read it from the
		 * store; here only what is still to come */
		if (a->sets_pending)
			a->sets_pending--;
		memset(&se, 0, sizeof(se));
		se.kind = CFL_STUDY_TRIAL;
		se.pool = s->pool;
		se.trial = ev;
		se.what = s->plan->autop.models[c->family];
		se.hex = c->hex;
		se.fold = fold;
		se.repeat = set_repeat(set);
		cfl_study_emit(ls, &se);
		return;
	}
	if (fold < 0) {
		c->pending = 0;
		/* pruned: no value, told as failed */
		c->pruned = ev->status == CFL_TRIAL_PRUNED;
		if (ev->status == CFL_TRIAL_DONE) {
			const struct cfl_wire_split *v = &ev->result->split[CFL_SPLIT_VALID];

			if (c->rung == c->first_rung)	/* the one that reported */
				cfl_pruner_complete(a->pruner[c->family], ev->trial_id);
			for (uint32_t i = 0; i < v->n_metrics; i++)
				if (!strcmp(v->metrics[i].name, metric))
					c->value = v->metrics[i].value;
			c->score = cfl_metric_info(s->plan->autop.metric)->sign * c->value;
			if (!isnan(c->score))
				score_valid(s, k, v->pred, v->rows, v->n, v->n_out);
			/* the worker's time plus the lease's round trip (the
			 * wall time from submission would count the
			 * coordinator's own work, the GP's asks, too) */
			c->seconds = ev->result->duration + TRIAL_OVERHEAD;
			c->fit_s = ev->result->fit_seconds;
			c->pred_s = ev->result->predict_seconds;
		}
		c->rung_score[c->rung] = c->score;
	} else if (fold < s->plan->autop.folds && ev->status == CFL_TRIAL_DONE) {
		const struct cfl_wire_split *o = &ev->result->split[CFL_SPLIT_OOF];

		c->folds_done++;
		if (c->iters)
			c->iters[fold] = ev->result->n_iter_kept;
		if (a->cv && c->pending) {
			if (o->pred && o->n_out == a->n_out)
				add_oof(s, k, o->pred, o->rows, o->n);
			else
				c->folds_failed++;
			c->seconds += ev->result->duration + TRIAL_OVERHEAD;
		}
	} else if (fold < s->plan->autop.folds && a->cv && c->pending) {
		c->folds_failed++;	/* failed, or cancelled */
	}
	if (a->cv && fold >= 0 && fold < s->plan->autop.folds && c->pending &&
	    c->folds_done + c->folds_failed == (size_t)s->plan->autop.folds)
		score_oof(s, k);
	memset(&se, 0, sizeof(se));
	if (fold == s->plan->autop.folds) {	/* the refit */
		fold = -1;
		se.repeat = 1;
	} else if (fold < 0 && c->rung > c->first_rung) {	/* a promotion */
		se.repeat = rung_repeat(c->rung);
	}
	se.kind = CFL_STUDY_TRIAL;
	se.pool = s->pool;
	se.trial = ev;
	se.what = s->plan->autop.models[c->family];
	se.hex = c->hex;
	se.fold = fold;
	cfl_study_emit(ls, &se);
}

/* ---- pruning (--prune) ----
 *
 * On larger data each search candidate is one trial scored on the
 * validation part, and fcnn and gbdt report their score there while they
 * train (an epoch; ten rounds).  Each such family has one asha pruner
 * (cfl/hpo.h: rungs at eta^k times a first step, a candidate goes on while
 * in the top third of its rung), fed by every candidate of the family.
 * Only the Bayesian optimiser's candidates are stopped: the defaults and
 * the portfolio are the reference the rungs are filled with (a family's
 * defaults are its score of last resort, and its portfolio was chosen
 * diverse on purpose, a slow learner among them that a rung would stop).
 * A pruned candidate is final: told to its family's search as a failure
 * (NaN: the GP gives it the worst value seen when choosing, as tune does),
 * not counted among the candidates in a row no better that stop the
 * family's search (tell), never bagged, and replayed as pruned by
 * --resume. */

/* 1 when model reports its validation score while it trains (the lease
 * flag CFL_LEASE_PROGRESS; cfl/model.h's report). */
static int model_reports(const char *model)
{
	return !strcmp(model, "fcnn") || !strcmp(model, "gbdt");
}

int study_auto_progress(void *ctx, int64_t trial_id, void *user, size_t step,
			double score, struct cfl_err *err)
{
	struct cfl_study *s = ctx;
	struct study_auto *a = s->autos;
	uintptr_t u = (uintptr_t)user;
	size_t k = (size_t)(u & USER_MASK) - 1;
	int fold = (int)((u >> USER_SHIFT) & FOLD_MASK) - 1, r;
	struct auto_cand *c;

	/* the search's trials only (fold -1, set 0), of a pruned family */
	if (!a || !(u & USER_MASK) || k >= a->n || fold >= 0 || (u >> SET_SHIFT))
		return 0;
	c = &a->c[k];
	if (!a->pruner[c->family])
		return 0;
	r = cfl_pruner_report(a->pruner[c->family], trial_id, step, score, err);
	/* the reference fills the rungs and goes on */
	return r > 0 && c->idx < 0 ? 0 : r;
}

/* The pruning the run does (plan, data, budget): none on small data
 * (scored out of fold, no validation part to report on); as asked with
 * --prune; none by default: measured on 100,000 rows it tried 2-4 times
 * the candidates and gave the same first entry (docs/auto.md, "Pruning,
 * measured"), and without it a run depends on its scores alone. */
static enum cfl_prune_kind prune_kind(const struct cfl_study *s)
{
	const struct cfl_study_auto_plan *ap = &s->plan->autop;

	if (s->autos->cv)
		return CFL_PRUNE_NONE;
	if (ap->prune_set)
		return ap->prune;
	return CFL_PRUNE_NONE;
}

/* Makes the pruner of each family whose model reports, and says so.  0,
 * or -1 with err. */
static int start_pruning(struct cfl_study *s, const struct cfl_study_listener *ls,
			 struct cfl_err *err)
{
	const struct cfl_study_auto_plan *ap = &s->plan->autop;
	struct study_auto *a = s->autos;
	enum cfl_prune_kind kind = prune_kind(s);
	struct cfl_pruner_opts po;
	char text[256], names[128] = "";
	size_t n = 0, len = 0;

	if (a->cv && ap->prune_set && ap->prune != CFL_PRUNE_NONE) {
		emit_phase(s, ls, "--prune: nothing to prune on small data (each "
			   "candidate is scored out of fold; no validation part)");
		return 0;
	}
	if (kind == CFL_PRUNE_NONE)
		return 0;
	cfl_pruner_opts_init(&po);
	po.kind = kind;
	for (size_t f = 0; f < ap->n_models; f++) {
		if (!model_reports(ap->models[f]))
			continue;
		if (!(a->pruner[f] = cfl_pruner_new(&po, err)))
			return -1;
		snprintf(names + len, sizeof(names) - len, "%s%s", n++ ? " and " : "",
			 ap->models[f]);
		len = strlen(names);
	}
	if (!n)
		return 0;
	snprintf(text, sizeof(text), "pruning (%s): %s's Bayesian candidates stop "
		 "when their validation score while training is below the top "
		 "third of their rung (--prune none: off)", cfl_prune_kind_name(kind),
		 names);
	emit_phase(s, ls, text);
	return 0;
}

/* Waits for one event: 0 handled, 1 idle, 2 interrupted, 3 time limit,
 * 4 the wake-up time passed, -1 error. */
static int wait_one(struct cfl_study *s, const struct cfl_study_listener *ls,
		    struct cfl_err *err)
{
	struct cfl_pool_event ev;
	int r = cfl_study_wait(s, ls, &ev, err);

	if (r == 0)
		on_trial(s, &ev, ls);
	return r;
}

static int rung_final(const struct study_auto *a, const struct auto_cand *c);
static void settle(struct cfl_study *s, size_t k, struct cfl_err *err, int *rc);

/* Tells candidate k's score at its first rung to its family's search,
 * and, once its search is over (rung_final), settles it. */
static void tell(struct cfl_study *s, struct cfl_search *search, size_t k,
		 const struct cfl_study_listener *ls, struct cfl_err *err,
		 int *rc)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	size_t f = c->family;
	struct cfl_study_event ev;
	double best;

	c->told = 1;
	/* the GP gets the score at its first rung: those of its candidates
	 * then compare (successive halving trains few on the top rung) */
	if (c->idx >= 0 && cfl_search_tell(search, (size_t)c->idx,
					   c->rung > c->first_rung
					   ? c->rung_score[c->first_rung] : c->score, err)) {
		*rc = -1;
		return;
	}
	if (rung_final(a, c))
		settle(s, k, err, rc);
	best = a->best[f] >= 0 ? a->c[a->best[f]].score : NAN;
	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_CANDIDATE;
	ev.pool = s->pool;
	ev.what = s->plan->autop.models[f];
	ev.cand = k;
	ev.hex = c->hex;
	ev.params = &c->params;
	ev.score = c->rung > c->first_rung ? c->first_value : c->value;
	ev.best = a->best[f] >= 0 ? a->c[a->best[f]].value : best;
	ev.oof = a->cv;
	ev.proper_name = cfl_metric_info(a->proper)->name;
	ev.proper = c->rung > c->first_rung ? NAN : c->proper;
	ev.best_proper = a->best[f] >= 0 ? a->c[a->best[f]].proper : NAN;
	cfl_study_emit(ls, &ev);
}

/* 1 when candidate k's search is over: its trial at its latest rung final,
 * and that rung the top or without a score (failed, pruned, cancelled);
 * one that stays at a lower rung with a score is never over (a later
 * promotion may take it on). */
static int rung_final(const struct study_auto *a, const struct auto_cand *c)
{
	return !c->pending && (c->rung == a->n_rungs - 1 || isnan(c->rung_score[c->rung]));
}

/* Candidate k's search is over (rung_final): its score stored, its
 * family's best and count of candidates no better as it says.  *rc -1
 * with err on failure. */
static void settle(struct cfl_study *s, size_t k, struct cfl_err *err, int *rc)
{
	struct study_auto *a = s->autos;
	struct auto_cand *c = &a->c[k];
	size_t f = c->family;

	c->settled = 1;
	if (cfl_store_candidate_set_score(s->st, c->id, c->score, err)) {
		*rc = -1;
		return;
	}
	if (!isnan(c->score) &&
	    (a->best[f] < 0 || c->score > a->c[a->best[f]].score)) {
		a->best[f] = (long)k;
		a->since_best[f] = 0;
	} else if (!c->replayed && !c->pruned) {
		/* a replayed candidate counted in the session that ran it:
		 * --resume gives each family a fresh run of them.  A pruned
		 * one does not count: it took a fraction of a candidate's
		 * time, so ten of them are no evidence that the family's
		 * search stopped improving (counted, on 100,000 rows they
		 * stopped fcnn's and gbdt's searches after 5 s of training
		 * each, the run ending at 33-45 s of its 60, its first entry
		 * 0.0015 lower on test); it does not restart the count
		 * either */
		a->since_best[f]++;
	}
}

/* Cancels candidate k's trial if it is still pending: 0, or -1 with err. */
static int cancel(struct cfl_study *s, size_t k, struct cfl_err *err)
{
	struct auto_cand *c = &s->autos->c[k];
	int q;

	if (!c->pending || c->cancelled)
		return 0;
	/* 0: still queued; cancelled once it runs */
	q = cfl_pool_cancel(s->pool, c->trial_id, err);
	if (q < 0)
		return -1;
	c->cancelled = q;
	return 0;
}

static int cancel_from(struct cfl_study *s, size_t k, struct cfl_err *err)
{
	for (; k < s->autos->n; k++)
		if (cancel(s, k, err))
			return -1;
	return 0;
}

/* The most candidates in a row without a better score before a family's
 * search stops. */
static size_t stall_limit(size_t slots)
{
	return 2 * slots > STALL_CANDIDATES ? 2 * slots : STALL_CANDIDATES;
}

/* Family f's trials in flight in its search (search_family): those asked
 * and not told yet (the defaults among them while open), and the
 * promotions running of those told. */
static size_t busy(const struct study_auto *a, size_t f, size_t told, long dk)
{
	size_t n = a->n - told + (dk >= 0 && !a->c[dk].told);

	for (size_t k = 0; k < told; k++)
		n += a->c[k].family == f && (long)k != dk && a->c[k].pending;
	return n;
}

/* Larger data without a count budget: every family's defaults are
 * submitted at the start, in family order, so a slow family's defaults
 * (fcnn on many rows) run beside the others' instead of taking its share
 * alone.  The families search one after another, each until its share of
 * the search budget (what is left of it over the families left, the bags
 * of the families searched set aside) or until it stops improving (its
 * time then goes to the families after it), then round after round shares
 * what is left the same way, each family's search going on with a fresh
 * count of candidates no better, until a round after the first improves
 * no family's best; the bags get the rest but a small reserve for the
 * ensembles.  A candidate still running when its family's share ends is
 * cancelled (a failed trial, "cancelled"), unless the family has no score
 * yet (its defaults always run, for up to the family's fair share of all
 * the time left, as long as the bags of the families searched before
 * still fit); bags still running at the limit are interrupted (run again
 * by --resume).  Asks and tells follow tune's rule (one more ask each time
 * the oldest in flight is told), so --resume replays the stored
 * candidates and goes on from them.
 *
 * Searches family f until family_end (its search goes on from where an
 * earlier call left it), or until it stops: its space exhausted, or
 * stall_limit candidates in a row no better than its best (then no more
 * are asked, and those in flight finish within the share).  The bags of
 * families [0, n_before) are set aside, and its own once it has a best
 * (the first round: f; the rounds after: all).  0, or 2 / 3 (interrupted,
 * time limit) or -1. */
static int search_family(struct cfl_study *s, size_t f, size_t n_before,
			 double family_end, const struct cfl_study_listener *ls,
			 struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	struct cfl_search_opts so;
	struct cfl_search *search = a->search[f];
	size_t told = a->n, slots;
	long dk = a->dflt[f];	/* submitted at the start; told first */
	double fair_end;
	int rc = 0, said = search != NULL;	/* said in its first round only */

	fair_end = cfl_now() + (s->deadline - cfl_now()) /
				       (double)(p->autop.n_models - f);
	if (!search) {
		cfl_search_opts_init(&so);
		so.method = CFL_SEARCH_BO;
		so.seed = cfl_seed_derive(p->data.seed, p->autop.models[f], 0);
		so.maximize = 1;
		so.liar = CFL_LIAR_KRIGING;
		search = a->search[f] = cfl_search_new(p->autop.spaces[f], &so, err);
		if (!search)
			return -1;
	}
	s->wake_at = family_end;
	for (;;) {
		int r;
		double bags = s->deadline - bag_seconds(s, n_before > f ? n_before : f + 1),
		       first_end;
		int dflt_open = dk >= 0 && !a->c[dk].told;
		long pk;
		double promo_end;

		/* the told ones whose promotion ended: their search is over */
		for (size_t k = 0; k < a->n && !rc; k++)
			if (a->c[k].family == f && a->c[k].told && !a->c[k].settled &&
			    rung_final(a, &a->c[k]))
				settle(s, k, err, &rc);
		if (rc)
			goto out;
		slots = study_slots(s);	/* remote workers and ranks join late */
		/* this family's bag too is set aside once it has a best */
		if (family_end > bags)
			family_end = bags;
		if (!a->stopped[f] && a->best[f] >= 0 &&
		    a->since_best[f] >= stall_limit(slots))
			a->stopped[f] = 1;
		if (a->stopped[f] && !said) {
			char text[160];

			snprintf(text, sizeof(text), "%s: %zu candidates in a row no better "
				 "than its best; its search stops", p->autop.models[f],
				 a->since_best[f]);
			emit_phase(s, ls, text);
			said = 1;
		}
		/* successive halving: promotions first, the higher rungs
		 * first, while slots are free and the share lasts (also once
		 * the family stopped asking; without a score on the top rung
		 * yet, its defaults failed, as long as the wait for a first
		 * score below) */
		promo_end = family_end;
		if (a->best[f] < 0 && a->bag_time > 0 &&
		    s->deadline - 0.5 * a->bag_time > promo_end)
			promo_end = s->deadline - 0.5 * a->bag_time;
		while (busy(a, f, told, dk) < slots && !s->timed_out &&
		       cfl_now() < promo_end && (pk = next_promotion(s, f, err)) != -1) {
			if (pk < 0 || promote(s, (size_t)pk, err)) {
				rc = -1;
				goto out;
			}
		}
		/* ask while slots are free and the share lasts (the defaults,
		 * not told yet, hold one; so does a promotion running) */
		while (!a->stopped[f] && !a->exhausted[f] &&
		       busy(a, f, told, dk) < slots &&
		       !s->timed_out && cfl_now() < family_end) {
			struct cfl_params params;
			size_t idx = 0;

			cfl_params_init(&params);
			r = cfl_search_ask(search, &params, &idx, err);
			if (r < 0) {
				cfl_params_release(&params);
				rc = -1;
				goto out;
			}
			if (r == 1) {
				cfl_params_release(&params);
				a->exhausted[f] = 1;
				break;
			}
			if (add_cand(s, f, &params, (long)idx, err) < 0) {
				cfl_params_release(&params);
				rc = -1;
				goto out;
			}
		}
		if (told == a->n && !dflt_open && busy(a, f, told, dk) == 0)
			break;
		/* told in the order asked: the defaults, the oldest, first
		 * (once its first rung is final: it may run a promotion
		 * already) */
		if (dflt_open ? !a->c[dk].pending
		    : told < a->n && (!a->c[told].pending ||
				      a->c[told].rung > a->c[told].first_rung)) {
			tell(s, search, dflt_open ? (size_t)dk : told, ls, err, &rc);
			if (rc)
				goto out;
			told += !dflt_open;
			continue;
		}
		/* the share is over: cancel what runs, once the family has a
		 * score (else wait for one for the family's fair share of all
		 * the time left, while the bags of the families before still
		 * fit) */
		first_end = s->deadline - bag_seconds(s, n_before);
		if (first_end > fair_end)
			first_end = fair_end;
		/* on a row sample the defaults train within their budgets:
		 * they may take up to half the bags' time (planned when the
		 * bags start, from the time left then) */
		if (a->bag_time > 0)
			first_end = s->deadline - 0.5 * a->bag_time;
		if (cfl_now() >= family_end &&
		    (a->best[f] >= 0 || cfl_now() >= first_end)) {
			if ((dflt_open && cancel(s, (size_t)dk, err)) ||
			    cancel_from(s, told, err)) {
				rc = -1;
				goto out;
			}
			/* and the promotions of those told */
			for (size_t k = 0; k < told; k++)
				if (a->c[k].family == f && cancel(s, k, err)) {
					rc = -1;
					goto out;
				}
		}
		if (cfl_now() >= family_end && a->best[f] < 0)
			s->wake_at = first_end;
		r = wait_one(s, ls, err);
		if (r < 0 || r == 2 || r == 3) {
			rc = r;
			goto out;
		}
		if (r == 1)	/* idle with a trial pending: cannot happen */
			break;
	}
out:
	s->wake_at = 0;
	return rc;
}

/* ---- the search in rounds: a count budget, or small data ---- */

/* Candidates each family asks of its GP in a round: a constant, not the
 * workers, so that the proposals never depend on them. */
#define ROUND_ASKS 2

int study_auto_small(const struct cfl_study_plan *p, const struct cfl_data *d)
{
	return d->train.n + (p->data.valid_path ? 0 : d->valid.n) < STUDY_AUTO_CV_ROWS;
}

/* Each family's portfolio: configurations tried after its defaults and
 * before its Bayesian optimisation, diverse on purpose (regularised and
 * not, shallow and deep, slow and fast learning), taken from the usual
 * settings of these model kinds (scikit-learn's and XGBoost's documented
 * defaults and the ranges their guides suggest), never from runs on
 * datasets/.  A "|" separates the parameters of one configuration. */
static const struct {
	const char *model;
	const char *configs[4];
} portfolio[] = {
	{ "fcnn", { "lr=0.003|weight_decay=0.0001", "hidden=256,128|dropout=0.1",
		    "hidden=64|lr=0.01|weight_decay=0.001", NULL } },
	{ "linear", { "l2=0.01", "l2=100", "l2=0.1", "l2=10" } },
	{ "tree", { "max_depth=4", "min_samples_leaf=5", "max_depth=8|min_samples_leaf=2",
		    NULL } },
	{ "forest", { "min_samples_leaf=3", "max_features=log2",
		      "n_estimators=300|min_samples_leaf=2", NULL } },
	{ "gbdt", { "learning_rate=0.05|n_rounds=300|max_depth=4|subsample=0.8|"
		    "colsample_bytree=0.8",
		    "learning_rate=0.1|n_rounds=200|max_depth=3",
		    "learning_rate=0.03|n_rounds=500|max_depth=6|min_child_weight=2|"
		    "subsample=0.7|colsample_bytree=0.7", NULL } },
};

/* Configuration i of model's portfolio into out (cleared first): 1 when
 * there is one, 0 when the portfolio has no more, -1 with err. */
static int portfolio_config(const char *model, size_t i, struct cfl_params *out,
			    struct cfl_err *err)
{
	for (size_t m = 0; m < sizeof(portfolio) / sizeof(portfolio[0]); m++) {
		char buf[256], *save = NULL, *tok;

		if (strcmp(portfolio[m].model, model))
			continue;
		if (i >= 4 || !portfolio[m].configs[i])
			return 0;
		snprintf(buf, sizeof(buf), "%s", portfolio[m].configs[i]);
		cfl_params_release(out);
		cfl_params_init(out);
		for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
			if (cfl_params_set_arg(out, tok, err))
				return -1;
		cfl_params_sort(out);
		return 1;
	}
	return 0;
}

/* Creates family f's search (the GP over its space) if it has none yet.
 * 0, or -1 with err. */
static int ensure_search(struct cfl_study *s, size_t f, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	struct cfl_search_opts so;

	if (a->search[f])
		return 0;
	cfl_search_opts_init(&so);
	so.method = CFL_SEARCH_BO;
	so.seed = cfl_seed_derive(p->data.seed, p->autop.models[f], 0);
	so.maximize = 1;
	so.liar = CFL_LIAR_KRIGING;
	a->search[f] = cfl_search_new(p->autop.spaces[f], &so, err);
	return a->search[f] ? 0 : -1;
}

/* Waits until candidates [from, a->n) are final, then tells each in the
 * order asked.  0, or 2 / 3 (interrupted, time limit) or -1. */
static int finish_round(struct cfl_study *s, size_t from,
			const struct cfl_study_listener *ls, struct cfl_err *err)
{
	struct study_auto *a = s->autos;
	int rc = 0;

	for (;;) {
		int pending = 0, r;

		for (size_t k = from; k < a->n; k++)
			pending |= a->c[k].pending;
		if (!pending)
			break;
		r = wait_one(s, ls, err);
		if (r < 0 || r == 2 || r == 3)
			return r;
		if (r == 1)	/* idle with a trial pending: cannot happen */
			break;
	}
	for (size_t k = from; k < a->n && !rc; k++)
		tell(s, a->search[a->c[k].family], k, ls, err, &rc);
	return rc;
}

/* Asks a round's candidates, one family at a time round-robin (only
 * family `only` when it is below n_models), at most room of them: a family
 * with a portfolio configuration left asks that one, else up to ROUND_ASKS
 * of its GP.  *asked: how many.  0, or -1. */
static int ask_round(struct cfl_study *s, size_t only, size_t room,
		     size_t *asked, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	size_t n_models = p->autop.n_models;
	int took[CFL_STUDY_MAX_MODELS] = { 0 };

	*asked = 0;
	for (int i = 0; i < ROUND_ASKS; i++)
		for (size_t f = 0; f < n_models && *asked < room; f++) {
			struct cfl_params params;
			size_t idx = 0;
			int r = 0;

			if (took[f] || (only < n_models && f != only))
				continue;
			cfl_params_init(&params);
			if (a->next_config[f] >= 0) {
				r = portfolio_config(p->autop.models[f],
						     (size_t)a->next_config[f], &params, err);
				if (r == 1) {
					a->next_config[f]++;
					took[f] = 1;
					r = add_cand(s, f, &params, -1, err) < 0 ? -1 : 1;
				} else if (r == 0) {
					a->next_config[f] = -1;	/* the GP's turn */
				}
				if (r) {
					cfl_params_release(&params);
					if (r < 0)
						return -1;
					(*asked)++;
					continue;
				}
			}
			if (a->exhausted[f]) {
				cfl_params_release(&params);
				continue;
			}
			r = cfl_search_ask(a->search[f], &params, &idx, err);
			if (r == 1)
				a->exhausted[f] = 1;
			if (r == 0 && add_cand(s, f, &params, (long)idx, err) < 0)
				r = -1;
			cfl_params_release(&params);
			if (r < 0)
				return -1;
			*asked += r == 0;
		}
	return 0;
}

/* The most candidates a family asks under a time limit: its GP is fitted
 * again on every point at each ask, a cost that grows as the cube of the
 * points, paid by the coordinator while the workers wait.  A bound on that
 * time, not a choice of quality. */
#define FAMILY_MAX_CANDS 300

/* The search of small data under a time limit: each family goes through
 * its rounds (its defaults, its portfolio one configuration a round, then
 * ROUND_ASKS of its GP a round) at its own pace, a family's next round
 * asked as soon as its last is told, so a slow family (fcnn) does not hold
 * the workers idle while the quick ones wait.  A family stops when
 * another round (as long as its last took) would not finish in the time
 * left, when its space is exhausted, or at FAMILY_MAX_CANDS candidates;
 * the search says in one line why it ended.  0, or 2 / 3 (interrupted,
 * time limit) or -1. */
static int search_async(struct cfl_study *s, const struct cfl_study_listener *ls,
			struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	size_t n_models = p->autop.n_models, from[CFL_STUDY_MAX_MODELS] = { 0 };
	size_t n_time = 0, n_space = 0, n_cap = 0;
	double started[CFL_STUDY_MAX_MODELS];
	int done[CFL_STUDY_MAX_MODELS] = { 0 }, rc = 0;
	char text[256];

	for (size_t f = 0; f < n_models; f++) {
		if (ensure_search(s, f, err))
			return -1;
		started[f] = cfl_now();
	}
	snprintf(text, sizeof(text), "searching %zu families until the time limit, "
		 "each candidate scored out of fold", n_models);
	emit_phase(s, ls, text);
	for (;;) {
		int active = 0, r;

		for (size_t f = 0; f < n_models && !rc; f++) {
			size_t asked = 0, n_f = 0;
			int pending = 0;
			double now, last;

			if (done[f])
				continue;
			for (size_t k = from[f]; k < a->n; k++)
				pending |= a->c[k].family == f && a->c[k].pending;
			if (pending) {
				active = 1;
				continue;
			}
			for (size_t k = from[f]; k < a->n && !rc; k++)
				if (a->c[k].family == f && !a->c[k].told)
					tell(s, a->search[f], k, ls, err, &rc);
			for (size_t k = 0; k < a->n; k++)
				n_f += a->c[k].family == f;
			now = cfl_now();
			last = now - started[f];
			if (rc)
				break;
			if (s->deadline - sets_reserve(s) - now < last) {
				done[f] = 1;
				n_time++;
				continue;
			}
			if (n_f >= FAMILY_MAX_CANDS) {
				done[f] = 1;
				n_cap++;
				continue;
			}
			from[f] = a->n;
			started[f] = now;
			if (ask_round(s, f, SIZE_MAX, &asked, err))
				return -1;
			if (!asked) {
				done[f] = 1;
				n_space++;
				continue;
			}
			active = 1;
		}
		if (rc)
			return -1;
		if (!active)
			break;
		for (size_t k = 0; k < a->n && active < 2; k++)
			active += a->c[k].pending;
		if (active < 2)	/* asked only candidates stored done (--resume) */
			continue;
		r = wait_one(s, ls, err);
		if (r < 0)
			return -1;
		if (r == 2 || r == 3) {
			size_t scored = 0;

			for (size_t k = 0; k < a->n; k++)
				scored += !a->c[k].pending && !isnan(a->c[k].score);
			snprintf(text, sizeof(text), "the search ends: the %s stopped it "
				 "(%zu candidates scored)", r == 3 ? "time limit" : "interrupt",
				 scored);
			emit_phase(s, ls, text);
			return r;
		}
		if (r == 1)	/* idle with a trial pending: cannot happen */
			break;
	}
	snprintf(text, sizeof(text), "the search ends: %zu candidates; families "
		 "stopped: %zu as another round would not finish in the time left, "
		 "%zu with their space exhausted, %zu at %d candidates", a->n, n_time,
		 n_space, n_cap, FAMILY_MAX_CANDS);
	emit_phase(s, ls, text);
	return 0;
}

/* The search of a count budget (max_trials), on small data (candidates
 * scored out of fold) and on larger (on the validation part): every
 * family's defaults first, then its portfolio (one configuration a
 * round), then rounds in which each
 * family in turn (round-robin) asks up to ROUND_ASKS candidates of its GP,
 * until max_trials candidates over all the families, or every space
 * exhausted.  A round is submitted
 * whole and told whole once every one of its candidates is final, so the
 * GP's proposals depend on the told scores only, never on which trial
 * finished first (the workers, their speed, a --resume).  0, or 2 / 3
 * (interrupted, time limit) or -1. */
static int search_rounds(struct cfl_study *s, const struct cfl_study_listener *ls,
			 struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	size_t n_models = p->autop.n_models;
	size_t budget = (size_t)p->autop.max_trials, from = 0;
	char text[256];
	int r;

	for (size_t f = 0; f < n_models; f++)
		if (ensure_search(s, f, err))
			return -1;
	snprintf(text, sizeof(text), "searching: %zu candidates over %zu families "
		 "(--max-trials), %s", budget, n_models,
		 a->cv ? "each scored out of fold" : "each on the validation part");
	emit_phase(s, ls, text);
	for (size_t round = 1;; round++) {
		size_t asked = 0, scored = 0;

		if ((r = finish_round(s, from, ls, err)) != 0) {
			for (size_t k = 0; k < a->n; k++)
				scored += !a->c[k].pending && !isnan(a->c[k].score);
			snprintf(text, sizeof(text), "the search ends: the %s stopped "
				 "round %zu (%zu candidates scored)",
				 r == 3 ? "time limit" : "interrupt", round, scored);
			if (r > 0)
				emit_phase(s, ls, text);
			return r;
		}
		from = a->n;
		if (a->n >= budget) {
			snprintf(text, sizeof(text), "the search ends: --max-trials "
				 "reached (%zu candidates)", a->n);
			break;
		}
		if (ask_round(s, n_models, budget - a->n, &asked, err))
			return -1;
		if (!asked) {
			snprintf(text, sizeof(text), "the search ends: every family's "
				 "space is exhausted (%zu candidates)", a->n);
			break;
		}
	}
	emit_phase(s, ls, text);
	return 0;
}

/* ---- bags ---- */

/* The constant prediction's score on the validation part, signed as a
 * candidate's: the baseline model fitted on the training rows (their
 * class frequencies, or their mean), under log loss or the regression
 * metric.  NaN when there is no validation part or it cannot be scored. */
static double const_score(const struct cfl_study *s)
{
	const struct study_auto *a = s->autos;
	const struct cfl_xy *tr = &s->data->train, *v = &s->data->valid;
	const struct cfl_model_ops *ops = cfl_model_find("baseline");
	struct cfl_model *m = NULL;
	double *pred = NULL, val = NAN;
	struct cfl_err why;

	if (ops && tr->n && v->n && v->y &&
	    (pred = cfl_calloc(v->n * a->n_out, sizeof(*pred), &why)) &&
	    (m = cfl_model_new(ops, NULL, 0, &why)) &&
	    !cfl_model_fit(m, tr, NULL, &why) &&
	    !cfl_model_predict(m, v->x, v->n, pred, &why) &&
	    cfl_metric_eval(a->proper, v->y, pred, v->n, v->n_classes, &val, &why))
		val = NAN;
	cfl_model_free(m);
	free(pred);
	return isfinite(val) ? cfl_metric_info(a->proper)->sign * val : NAN;
}

/* Candidate k no better than the constant prediction on the validation
 * part, while some family's best is better: its bag is planned last, in
 * the time the others leave (the search sets none aside for it).  Such a
 * candidate is almost never picked by greedy ensemble selection, and on
 * 25,250 rows an fcnn of log loss 1.5 (the constant's: 0.59) held a third
 * of the time in its bag.  When no family beats the constant (labels
 * with no signal) the bags are planned as they always were: the run
 * still gives a model. */
static int late_bag(const struct study_auto *a, size_t k)
{
	int useful = 0;

	if (a->cv || !isfinite(a->const_score) || isnan(a->c[k].score) ||
	    a->c[k].score > a->const_score)
		return 0;
	for (size_t f = 0; f < CFL_STUDY_MAX_MODELS; f++)
		useful |= a->best[f] >= 0 && a->c[a->best[f]].score > a->const_score;
	return useful;
}

/* The candidates to bag among families [0, f): each family's best, by its
 * score, best first (the order they are queued in).  *n of them into
 * order (indexes into a->c). */
static void bag_list(const struct study_auto *a, size_t f, size_t *order,
		     size_t *n)
{
	*n = 0;
	for (size_t g = 0; g < f; g++)
		if (a->best[g] >= 0)
			order[(*n)++] = (size_t)a->best[g];
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && a->c[order[j]].score >
						a->c[order[j - 1]].score; j--) {
			size_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

double study_auto_bags_wall(double work, double longest, double slots)
{
	return slots >= 1 ? work / slots + longest * (slots - 1) / slots : work + longest;
}

/* Which bags of families [0, f) to run (bag_list's), and the wall seconds
 * they should take: each candidate's seconds x the folds (and with refit,
 * one more fit) on the pool's slots, study_auto_bags_wall.  Taken in
 * bag_list's order, a bag that would not finish in `left` seconds
 * (bags_left) after those before it is left out: queued first, a slow bag
 * would hold the slots until the limit and no bag would finish (and the
 * search need not set time aside for it).  When none fits, the quickest
 * is kept: it has a chance.  A bag no better than the constant
 * prediction (late_bag) is not planned in `left`: with late_left (the
 * time left when the bags are submitted; NaN: the search's estimate,
 * none), it runs after those planned, the best first, when every other
 * bag fits and they all would still finish in late_left.  order/fits
 * (may be NULL; CFL_STUDY_MAX_MODELS each): the list, and 1 for a bag to
 * run; *n its length. */
static double bag_plan(const struct cfl_study *s, size_t f, double left,
		       double late_left, size_t *order, int *fits, size_t *n_out)
{
	const struct study_auto *a = s->autos;
	/* the K folds (and with refit, the refit on every training row) */
	double K = s->plan->autop.folds + !!s->plan->autop.refit, t = 0, slowest = 0;
	double slots = (double)study_slots(s);
	size_t list[CFL_STUDY_MAX_MODELS], n, n_fit = 0, n_late = 0, quick = SIZE_MAX;
	int fit[CFL_STUDY_MAX_MODELS] = { 0 };

	bag_list(a, f, list, &n);
	for (size_t i = 0; i < n; i++) {
		double sec = a->c[list[i]].seconds, sl;

		/* a count budget bags every family (the clock decides
		 * nothing); no time known: nothing to set aside */
		if (s->plan->autop.max_trials || isnan(sec)) {
			fit[i] = 1;
			n_fit++;
			continue;
		}
		/* no better than the constant: in the time the others
		 * leave (submit_bags), none set aside for it */
		if (late_bag(a, list[i])) {
			n_late++;
			continue;
		}
		if (quick == SIZE_MAX || sec < a->c[list[quick]].seconds ||
		    isnan(a->c[list[quick]].seconds))
			quick = i;
		sl = sec > slowest ? sec : slowest;
		if (study_auto_bags_wall(t + K * sec, sl, slots) <= left) {
			fit[i] = 1;
			n_fit++;
			t += K * sec;
			slowest = sl;
		}
	}
	if (quick != SIZE_MAX && !n_fit) {
		double sec = a->c[list[quick]].seconds;

		fit[quick] = 1;
		n_fit = 1;
		t = K * sec;
		slowest = sec;
	}
	/* the late ones, in the time the others leave, when they all fit */
	for (size_t i = 0; i < n && n_fit + n_late == n && !isnan(late_left); i++) {
		double sec = a->c[list[i]].seconds, sl = fmax(slowest, sec);

		if (fit[i] || isnan(sec) ||
		    study_auto_bags_wall(t + K * sec, sl, slots) > late_left)
			continue;
		fit[i] = 1;
		t += K * sec;
		slowest = sl;
	}
	if (order)
		memcpy(order, list, n * sizeof(*list));
	if (fits)
		memcpy(fits, fit, n * sizeof(*fit));
	if (n_out)
		*n_out = n;
	return study_auto_bags_wall(t, slowest, slots);
}

/* The time the bags are planned in (bag_plan's left): the whole budget
 * from the search's start, the same for the search's estimate and for
 * submit_bags.  Taken from the time left instead, the estimate shrank as
 * the search went on (a bag that no longer fitted dropped out of it), the
 * search took the time, and on 25,250 rows 9 runs of 20 left a family's
 * bag out, forest's and tree's of 0.1 s a fold among them. */
static double bags_left(const struct cfl_study *s)
{
	return s->deadline - s->autos->search_t0;
}

static double bag_seconds(const struct cfl_study *s, size_t f)
{
	/* searched on a row sample: the bags train on the rows their share
	 * allows (sampled_bags), which the search leaves them whole */
	if (s->autos->bag_time > 0)
		return s->autos->bag_time;
	return bag_plan(s, f, bags_left(s), NAN, NULL, NULL, NULL);
}

/* ---- larger data: the search on a row sample, the bags on the rows
 * their time allows ----
 *
 * On many rows (a million: a default forest needs a minute) the search
 * trains every candidate on one seeded sample of the training rows (the
 * same rows for all, so their scores on the validation part compare) and
 * leaves the bags a fixed share of the time.  Each bag's folds then train
 * on as many of their rows as that share allows, estimated from the
 * candidate's search trial: its fit seconds scaled by the rows, its
 * prediction by the rows a fold predicts.  The shares are filled as water
 * fills vessels: a bag that needs less than its share gets what it needs,
 * the others split the rest, the best family's (by its search score)
 * weighing twice the others' (greedy selection ranks first, and it picks
 * the best bag unless a mix does better).  A model that takes a time
 * budget trains on at least the search's rows (what its candidate was
 * scored on), its budget then cutting its trees, rounds or epochs.  Under
 * a count budget, or with no time limit, the bags train on every row. */

/* The seconds to keep after the pool for the ensembles and the
 * leaderboard on larger data, measured rather than guessed: their work
 * (greedy's rounds and the stacking, each on at most 100,000 rows, every
 * entry's metrics on the out-of-fold, validation and test rows) is some
 * tens of passes over the training rows per entry, so one pass of log loss
 * over them is timed now (the least of three: one pass descheduled, or
 * slowed by a neighbour for a moment, would keep seconds of the run for
 * nothing; the median kept 7.4 s on a quiet machine where 2.5 s were used)
 * and scaled by FINISH_PASSES per leaderboard entry (each family's bag and
 * the three ensembles).  On 720,000 training rows with five bags on two
 * cores the whole finish took 17.5 such passes an entry on a quiet
 * machine (2.8 s), 19 at a load of 4-5 (6 s; busy loops beside it) and 13
 * at a load of 4 (4.9 s; other sessions' work beside it): the timed pass
 * slows with the load as much as the finish does, so the load no longer
 * scales the reserve (its square root did, and kept 10-15 s where 5-6 were
 * used).  The finish itself stops at the limit (greedy, the first entry,
 * right after the bags, its rounds stopped at the limit; stacking and mean
 * left out when they would not end by then: cfl_study_auto_ensembles), so
 * the reserve is about what the whole finish takes, 12 passes an entry
 * (it took 8.6 to 13.7, 12.5 the median, in nine runs at loads of 3-9 with
 * the limit; 17.5 quiet before, when the timed pass was the median of
 * three), and a finish slower than that gives up its least useful steps
 * (stacking and mean, then greedy's later rounds: the bags and greedy's
 * first round, about three quarters of it, always run) instead of the
 * run its limit.  0 when it cannot be measured. */
#define FINISH_PASSES 12
#define FINISH_MAX_SHARE 0.35	/* of the time left, at most */
/* What the command does after its leaderboard's entries are built (its
 * trial counts, the run's end, the table read back and printed): 0.1 s
 * on a million rows (the run's end to the process's, measured) */
#define FINISH_END_MARGIN 0.25
/* The part of the reserve one bag's entry takes (see entry_s) */
#define FINISH_BAG_SHARE 0.09

static double finish_seconds(const struct cfl_study *s)
{
	const struct cfl_xy *tr = &s->data->train;
	size_t k = tr->n_classes > 0 ? (size_t)tr->n_classes : 1;
	double *pred = tr->n ? malloc(tr->n * k * sizeof(double)) : NULL, v, t[3], m;
	struct cfl_err ignored;
	int rc = 0;

	if (!pred)
		return 0;
	for (size_t i = 0; i < tr->n * k; i++)
		pred[i] = 1.0 / (double)k;
	for (int r = 0; r < 3 && !rc; r++) {
		t[r] = cfl_now();
		rc = cfl_metric_eval(tr->n_classes > 0 ? CFL_M_LOGLOSS : CFL_M_MSE, tr->y,
				     pred, tr->n, tr->n_classes, &v, &ignored);
		t[r] = cfl_now() - t[r];
	}
	free(pred);
	m = fmin(t[0], fmin(t[1], t[2]));
	return rc ? 0 : m * FINISH_PASSES * (double)(s->plan->autop.n_models + 3);
}

static uint64_t search_sample(const struct cfl_study_plan *p, size_t n_train)
{
	long r = p->autop.search_rows;

	if (r < 0)
		return 0;
	if (r == 0)
		return n_train > 2 * (size_t)STUDY_AUTO_SEARCH_ROWS
		       ? STUDY_AUTO_SEARCH_ROWS : 0;
	return (size_t)r < n_train ? (uint64_t)r : 0;
}

/* How a fold's fit grows with its rows: seconds ~ rows^exponent, by model
 * kind, measured on W6's rows (20 numeric columns) between the search's
 * 50,000-row sample and a fold's 576,000 rows (11.5x), two fits at once on
 * the 2-core machine as a bag's folds run (cfl train, load 3-4): linear
 * 0.216 -> 5.37 s (1.32), a tree of depth 7 0.329 -> 7.77 s (1.29), the
 * default tree 0.395 -> 10.6 s (1.35), a forest of 4 trees 0.513 -> 15.2
 * s (1.39), gbdt of 20 rounds 0.514 -> 3.63 s (0.80: its binning is a
 * fixed part), fcnn of 2 epochs 0.33 -> 3.06 s (0.91).  More than linear
 * for the trees and linear: 50,000 rows of 20 floats fit the caches and
 * 576,000 do not, and a tree's sorts grow as n log n.  Linear in the rows,
 * the tree's folds on 576,000 rows were estimated at 1-2 s and took 4-5.6
 * s, and its bag was stopped at the limit.  fcnn and gbdt get 1 (their
 * figures below it, rounded up: an estimate short costs more than one
 * long). */
double study_auto_fit_exponent(const char *model)
{
	if (!strcmp(model, "fcnn") || !strcmp(model, "gbdt"))
		return 1.0;
	if (!strcmp(model, "forest"))
		return 1.4;
	return 1.3;
}

/* The seconds one fold trial of candidate c takes on `rows` of its rows:
 * its search trial's fit scaled by the rows to its kind's exponent (it
 * fitted c->rows: a->sample, the top rung), its prediction by the rows a fold predicts (its
 * held-out fold, the test and validation parts) over those it predicted
 * (test and validation).  *pred_out: the prediction's part. */
static double fold_seconds(const struct cfl_study *s, const struct auto_cand *c,
			   double rows, double *pred_out)
{
	const struct cfl_data *d = s->data;
	double K = s->plan->autop.folds;
	double fit = c->fit_s, pred = c->pred_s;

	if (isnan(fit) || isnan(pred)) {	/* replayed: its duration */
		fit = c->seconds;
		pred = 0;
	}
	if (d->valid.n + d->test.n)
		pred *= ((double)d->train.n / K + (double)(d->test.n + d->valid.n)) /
			(double)(d->test.n + d->valid.n);
	if (pred_out)
		*pred_out = pred + TRIAL_OVERHEAD;
	return fit * pow(rows / (double)(c->rows ? c->rows : s->autos->sample),
			 study_auto_fit_exponent(s->plan->autop.models[c->family])) +
	       pred + TRIAL_OVERHEAD;
}

static double size_est(const struct study_fold_size *f, double rows)
{
	return f->fit_s * pow(rows / f->sample, study_auto_fit_exponent(f->model)) + f->pred;
}

void study_auto_size_fold(struct study_fold_size *f)
{
	double per = f->share, r = f->ratio, rows, est;
	size_t rounds = (f->n_this + f->running + f->slots - 1) / f->slots;

	/* its bag's trials left, in rounds over the slots with those
	 * running: the last round takes what is left of the time; an
	 * earlier one no more than its bag can end in */
	if (f->n_rem + f->running <= f->slots)
		per = f->left * SAMPLE_LAST_FILL / r;
	else if (per * r * (double)rounds > f->left * SAMPLE_LAST_FILL)
		per = f->left * SAMPLE_LAST_FILL / ((double)rounds * r);
	/* the rows that per allows (size_est's inverse) */
	if (!(f->fit_s > 0))
		rows = f->sample;
	else if (per <= f->pred)
		rows = 0;
	else
		rows = f->sample * pow((per - f->pred) / f->fit_s,
				       1 / study_auto_fit_exponent(f->model));
	if (f->budgeted && rows < f->sample)
		rows = f->sample;
	if (rows < SAMPLE_MIN_ROWS)
		rows = SAMPLE_MIN_ROWS;
	if (rows >= f->fold_rows)
		rows = f->fold_rows;
	est = size_est(f, rows);
	f->budget = 0;
	if (f->budgeted) {
		/* its fit's part of per as in its estimate (a model that
		 * would not train whole within per stops its units there, and
		 * fewer trees, rounds or epochs predict quicker as well), so
		 * that an estimate that was short cuts its units rather than
		 * its bag at the limit; but a tree that would train whole
		 * gets the time to the limit (SAMPLE_LAST_FILL of it, less
		 * its prediction) as a net only: a tree cut short keeps its
		 * first splits (a fold of 0.65 where whole ones had 0.75),
		 * while a forest, gbdt or fcnn cut short only has fewer
		 * trees, rounds or epochs */
		double fit = est - f->pred;

		f->budget = fit > 0 ? per * r * fit / (fit + f->pred) : per * r;
		if (est <= per && !strcmp(f->model, "tree") &&
		    f->left * SAMPLE_LAST_FILL - f->pred * r > f->budget)
			f->budget = f->left * SAMPLE_LAST_FILL - f->pred * r;
		if (f->budget < 0.05)
			f->budget = 0.05;
		if (est > per)
			est = per;
	}
	f->per = per;
	f->rows = rows;
	f->est = est;
	f->expect = est * r > 0.05 ? est * r : 0.05;
	if (f->expect < f->least)
		f->expect = f->least;
	/* a bag about to start whose trials, in rounds over the slots with
	 * those running, would not end in the time left even so (its
	 * prediction alone, or its rows' floor) is left out whole: its
	 * folds would be stopped at the limit */
	f->leave_out = f->starts && f->left < (double)rounds * f->expect;
}

/* A bag's fold trial on a row sample, submitted once a slot is free. */
struct lazy_fold {
	size_t k;
	int fold;
	struct cfl_trial_state ts;
	double est;		/* its estimate (fold_seconds at its rows) */
	double per;		/* its seconds as expected at submission (the
				 * estimate corrected by how those done went) */
	double took;		/* its seconds, once done (else 0) */
	double fit;		/* its fit's part of them (NaN: not known) */
	int state;		/* 0 queued, 1 submitted, 2 final */
};

double study_auto_fold_floor(const struct study_fold_done *d, size_t n, size_t bag)
{
	double own = 0, other = 0;

	for (size_t i = 0; i < n; i++) {
		double rest = d[i].took - d[i].fit;

		if (!(d[i].took > 0))
			continue;
		if (d[i].bag == bag) {
			if (!(own > 0) || d[i].took < own)
				own = d[i].took;
		} else if (!isnan(d[i].fit) && rest > 0 && (!(other > 0) || rest < other)) {
			other = rest;
		}
	}
	return own > 0 ? own : other;
}

/* Bag k's trials done so far: their seconds over their estimates (a
 * tree's fold takes a tenth of a forest's, and the estimates of the two
 * err differently); with none done, the other bags' when above 1, else 1;
 * at least 0.5 and at most 4. */
static double lazy_ratio(const struct study_auto *a, size_t k)
{
	double took = 0, est = 0, r;

	for (size_t i = 0; i < a->n_lazy; i++)
		if (a->lazy[i].k == k && a->lazy[i].took > 0 && a->lazy[i].est > 0) {
			took += a->lazy[i].took;
			est += a->lazy[i].est;
		}
	if (est > 0)
		r = took / est;
	else	/* the others' bags: a slower machine, never a quicker
		 * model (one kind's estimate erring long says nothing of
		 * another's) */
		r = a->plan_s > 0 && a->obs_s > a->plan_s ? a->obs_s / a->plan_s : 1;
	return r < 0.5 ? 0.5 : r > 4 ? 4 : r;
}

/* Sizes and submits the next fold trials while bag trials run on fewer
 * than the slots: each gets its bag's share of what is left now (the
 * slots' time to the deadline, less what the running ones should still
 * take), and its rows and budget follow from that, the estimates
 * corrected by how long the bags' trials done so far took against them
 * (lazy_ratio: a loaded machine, a prediction costlier than its search
 * trial's).  So an estimate that was off shrinks or grows the trials still
 * queued, not the run's end.  The time up to the deadline is used, never
 * passed: a trial that nothing follows on its slot (the last round) gets
 * the time left, SAMPLE_LAST_FILL of it, whatever its share, and a trial
 * whose bag would not end in time at its share, in rounds over the slots,
 * is made smaller until it does; a model that takes a time budget gets
 * one for its fit on every fold (on all its rows too), so that an
 * estimate that was short cuts its trees, rounds or epochs instead of the
 * bag at the limit.  A bag about to start that cannot end in time even so
 * (its prediction alone would not) is left out whole, leaving the time to
 * those after it.  0, or -1 with err. */
static int lazy_submit(struct cfl_study *s, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	double K = p->autop.folds, T = K + !!p->autop.refit;
	double fold_rows = (double)s->data->train.n - (double)s->data->train.n / K;
	double ratio = lazy_ratio(a, SIZE_MAX);
	size_t slots = study_slots(s), running = 0;
	double busy = 0;	/* what the running ones should still take */
	struct study_fold_done *done = cfl_calloc(a->n_lazy + 1, sizeof(*done), err);

	if (!done)
		return -1;
	/* the trials done so far: none ends while this submits */
	for (size_t i = 0; i < a->n_lazy; i++) {
		done[i].bag = a->lazy[i].k;
		done[i].took = a->lazy[i].took;
		done[i].fit = a->lazy[i].fit;
	}

	for (size_t i = 0; i < a->n_lazy; i++)
		if (a->lazy[i].state == 1) {
			running++;
			busy += 0.5 * a->lazy[i].per;	/* half of it, say */
		}
	while (running < slots && a->lazy_next < a->n_lazy) {
		struct lazy_fold *l = &a->lazy[a->lazy_next++];
		struct auto_cand *c = &a->c[l->k];
		uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, 0);
		double now = cfl_now(), avail, rest = 0, scale;
		struct study_fold_size z;
		size_t i;

		memset(&z, 0, sizeof(z));
		z.model = p->autop.models[c->family];
		z.budgeted = cfl_model_takes_budget(cfl_model_find(z.model));
		z.sample = (double)(c->rows ? c->rows : a->sample);
		z.fit_s = isnan(c->fit_s) || isnan(c->pred_s) ? c->seconds : c->fit_s;
		fold_seconds(s, c, 0, &z.pred);
		z.fold_rows = fold_rows;
		z.left = s->deadline - now;
		z.running = running;
		z.slots = slots;
		z.starts = a->lazy_next == 1 || a->lazy[a->lazy_next - 2].k != l->k;
		for (i = a->lazy_next - 1; i < a->n_lazy; i++) {
			rest += a->c[a->lazy[i].k].bag_give / T;
			z.n_rem++;
			z.n_this += a->lazy[i].k == l->k;
		}
		avail = z.left * (double)slots * SAMPLE_BAG_FILL - busy;
		if (avail <= 0) {	/* no time: the bags left out */
			a->lazy_next--;
			break;
		}
		scale = rest > 0 ? avail / (rest * ratio) : 1;
		if (scale > 2)
			scale = 2;
		z.share = c->bag_give / T * (scale > 0 ? scale : 0);
		z.ratio = lazy_ratio(a, l->k);
		z.least = study_auto_fold_floor(done, a->n_lazy, l->k);
		study_auto_size_fold(&z);
		if (z.leave_out) {
			for (i = a->lazy_next - 1; i < a->n_lazy && a->lazy[i].k == l->k; i++)
				a->lazy[i].state = 2;
			a->lazy_next = i;
			/* one entry fewer to finish: its reserve goes to the
			 * bags after it */
			s->deadline += a->entry_s;
			continue;
		}
		c->bag_rows = z.rows >= fold_rows ? 0 : (uint64_t)z.rows;
		c->bag_budget_s = z.budget;
		l->est = z.est;
		l->per = z.expect;
		l->state = 1;
		running++;
		busy += 0.5 * l->per;
		if (submit_fold(s, l->k, l->fold, seed, &l->ts, c->bag_budget_s, err)) {
			free(done);
			return -1;
		}
		s->n_ran++;
	}
	free(done);
	return 0;
}

/* A bag trial of the lazy queue is final: how long it took against its
 * plan. */
static void lazy_final(struct study_auto *a, size_t k, int fold,
		       const struct cfl_pool_event *ev)
{
	for (size_t i = 0; i < a->n_lazy; i++) {
		struct lazy_fold *l = &a->lazy[i];

		if (l->k != k || l->fold != fold || l->state != 1)
			continue;
		l->state = 2;
		if (ev->status == CFL_TRIAL_DONE && ev->result) {
			l->took = ev->result->duration;
			l->fit = ev->result->fit_seconds >= 0 ? ev->result->fit_seconds : NAN;
			a->obs_s += ev->result->duration;
			a->plan_s += l->est;
			a->n_obs++;
		}
		return;
	}
}

static int sampled_bags(struct cfl_study *s, const struct cfl_study_listener *ls,
			size_t *n_sub, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	size_t order[CFL_STUDY_MAX_MODELS], n, n_open;
	int K = p->autop.folds, open[CFL_STUDY_MAX_MODELS];
	double T = K + !!p->autop.refit;	/* trials a bag runs */
	double fold_rows = (double)s->data->train.n - (double)s->data->train.n / K;
	double left = s->deadline - cfl_now(), room, need[CFL_STUDY_MAX_MODELS],
	       weight[CFL_STUDY_MAX_MODELS], w_open;
	int more = 1;

	bag_list(a, p->autop.n_models, order, &n);
	/* a family without a score has no bag to finish: its reserve goes to
	 * the bags */
	s->deadline += a->entry_s * (double)(p->autop.n_models - n);
	left = s->deadline - cfl_now();
	room = (left > 0 ? left : 0) * (double)study_slots(s) * SAMPLE_BAG_FILL;
	for (size_t i = 0; i < n; i++) {
		need[i] = T * fold_seconds(s, &a->c[order[i]], fold_rows, NULL);
		open[i] = 1;
		weight[i] = i ? 1 : 2;	/* bag_list's order: the best first */
	}
	/* water filling: those needing less than their share of what is left
	 * take what they need, until none does */
	for (n_open = n, w_open = n + 1.0; n_open && more;) {
		more = 0;
		for (size_t i = 0; i < n; i++)
			if (open[i] && need[i] <= room * weight[i] / w_open) {
				a->c[order[i]].bag_give = need[i];
				room -= need[i];
				open[i] = 0;
				n_open--;
				w_open -= weight[i];
				more = 1;
				break;
			}
	}
	for (size_t i = 0; i < n; i++) {
		struct auto_cand *c = &a->c[order[i]];
		struct cfl_study_event ev;
		char text[192];

		if (!open[i])
			continue;	/* every row */
		c->bag_give = room * weight[i] / w_open;
		snprintf(text, sizeof(text), "%s: its folds get ~%.1f s each, of %.1f s "
			 "on all their %.0f rows: they train on a sample",
			 p->autop.models[c->family], c->bag_give / T, need[i] / T,
			 fold_rows);
		memset(&ev, 0, sizeof(ev));
		ev.kind = CFL_STUDY_NOTE;
		ev.pool = s->pool;
		ev.text = text;
		cfl_study_emit(ls, &ev);
	}
	free(a->lazy);
	a->n_lazy = a->lazy_next = 0;
	if (!(a->lazy = cfl_calloc(n * (size_t)K + 1, sizeof(*a->lazy), err)))
		return -1;
	if (cfl_store_begin(s->st, err))
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t k = order[i];
		struct auto_cand *c = &a->c[k];
		uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, 0);

		c->bag = 1;
		if (!c->iters && !(c->iters = cfl_calloc((size_t)K, sizeof(size_t), err)))
			goto fail;
		for (int fold = 0; fold < K; fold++) {
			struct lazy_fold *l = &a->lazy[a->n_lazy];

			if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, 0, fold,
						      seed, CFL_PHASE_REFIT, &l->ts, err))
				goto fail;
			if (l->ts.status == CFL_TRIAL_DONE) {
				c->folds_done++;
				c->iters[fold] = study_stored_iters(a->iters, a->n_iters,
								    l->ts.id);
				continue;
			}
			l->k = k;
			l->fold = fold;
			a->n_lazy++;
		}
	}
	if (cfl_store_commit(s->st, err))
		return -1;
	*n_sub += a->n_lazy;
	return lazy_submit(s, err);
fail:
	cfl_store_rollback(s->st);
	return -1;
}

/* Says what became of each bag no better than the constant prediction
 * (late_bag): bagged last (fits[i], bag_plan), or not. */
static void say_late_bags(struct cfl_study *s, const struct cfl_study_listener *ls,
			  const size_t *order, const int *fits, size_t n)
{
	const struct cfl_study_plan *p = s->plan;
	const struct study_auto *a = s->autos;
	const struct cfl_metric_info *mi = cfl_metric_info(a->proper);

	for (size_t i = 0; i < n && !p->autop.max_trials; i++) {
		const struct auto_cand *c = &a->c[order[i]];
		struct cfl_study_event ev;
		char text[256];
		size_t len;

		if (!late_bag(a, order[i]))
			continue;
		len = (size_t)snprintf(text, sizeof(text), "%s: its best is no better than "
				       "the constant prediction on the validation part (%s "
				       "%.4g, the constant's %.4g): ",
				       p->autop.models[c->family], mi->name,
				       mi->sign * c->score, mi->sign * a->const_score);
		if (fits[i])
			snprintf(text + len, sizeof(text) - len, "bagged last, in the time "
				 "the others leave");
		else
			snprintf(text + len, sizeof(text) - len, "not bagged, as its bag "
				 "(%d x %.1f s) would not finish in the time the others leave "
				 "(--resume with more time bags it)", p->autop.folds, c->seconds);
		memset(&ev, 0, sizeof(ev));
		ev.kind = CFL_STUDY_NOTE;
		ev.pool = s->pool;
		ev.text = text;
		cfl_study_emit(ls, &ev);
	}
}

/* Submits the K fold trials of each family's best candidate that
 * bag_plan keeps, the best family first; says which it leaves out.
 * *n_sub: trials submitted. */
static int submit_bags(struct cfl_study *s, const struct cfl_study_listener *ls,
		       size_t *n_sub, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	size_t order[CFL_STUDY_MAX_MODELS], n;
	int K = p->autop.folds, fits[CFL_STUDY_MAX_MODELS];
	double left = s->deadline - cfl_now(), fold_budget = 0;
	double planned;
	size_t n_small = 0;

	if (a->bag_time > 0)
		return sampled_bags(s, ls, n_sub, err);
	planned = bag_plan(s, p->autop.n_models, bags_left(s), left, order, fits, &n);
	say_late_bags(s, ls, order, fits, n);

	/* a bag that would not finish whole, of a model that takes a time
	 * budget: its folds (and refit) train smaller, within an equal share
	 * of what the bags that fit leave (a margin kept for the rest) */
	for (size_t i = 0; i < n; i++)
		n_small += !fits[i] && !late_bag(a, order[i]) && cfl_model_takes_budget(
			cfl_model_find(p->autop.models[a->c[order[i]].family]));
	if (n_small)
		fold_budget = 0.7 * (left - planned) * (double)study_slots(s) /
			      ((double)(K + !!p->autop.refit) * (double)n_small);
	for (size_t i = 0; i < n; i++) {
		struct cfl_study_event ev;
		char text[192];
		struct auto_cand *c = &a->c[order[i]];

		if (fits[i] || late_bag(a, order[i]))	/* said by late_bags */
			continue;
		if (fold_budget >= 0.05 && cfl_model_takes_budget(
			    cfl_model_find(p->autop.models[c->family]))) {
			fits[i] = 1;
			c->bag_budget_s = fold_budget;
			snprintf(text, sizeof(text), "%s: bag of %d x %.1f s > %.1f s left: "
				 "its folds train within %.1f s each",
				 p->autop.models[c->family], K, c->seconds,
				 left > 0 ? left : 0.0, fold_budget);
		} else {
			snprintf(text, sizeof(text), "%s: its bag (%d x %.1f s over %zu slots) "
				 "would not finish in the %.1f s left; not bagged (--resume "
				 "with more time bags it)", p->autop.models[c->family], K,
				 c->seconds, study_slots(s),
				 left > 0 ? left : 0.0);
		}
		memset(&ev, 0, sizeof(ev));
		ev.kind = CFL_STUDY_NOTE;
		ev.pool = s->pool;
		ev.text = text;
		cfl_study_emit(ls, &ev);
	}
	if (cfl_store_begin(s->st, err))
		return -1;
	/* the bags that fit whole first, then those trained smaller */
	for (size_t j = 0; j < 2 * n; j++) {
		size_t i = j % n, k = order[i];
		struct auto_cand *c = &a->c[k];
		uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, 0);

		if (!fits[i] || (j < n) != !(c->bag_budget_s > 0))
			continue;
		c->bag = 1;
		if (!c->iters && !(c->iters = cfl_calloc((size_t)K, sizeof(size_t), err)))
			goto fail;
		for (int fold = 0; fold < K; fold++) {
			struct cfl_trial_state ts;

			if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, 0, fold,
						      seed, CFL_PHASE_REFIT, &ts, err))
				goto fail;
			if (ts.status == CFL_TRIAL_DONE) {
				/* done in an earlier session: what it kept */
				c->folds_done++;
				c->iters[fold] = study_stored_iters(a->iters, a->n_iters,
								    ts.id);
				continue;
			}
			double budget = 0;

			/* a candidate trained within a budget: its folds too, for
			 * the time it took */
			if (c->budget_s > 0 && !isnan(c->seconds))
				budget = c->seconds;
			if (c->bag_budget_s > 0)
				budget = c->bag_budget_s;
			if (submit_fold(s, k, fold, seed, &ts, budget, err))
				goto fail;
			(*n_sub)++;
			s->n_ran++;
		}
	}
	return cfl_store_commit(s->st, err);
fail:
	cfl_store_rollback(s->st);
	return -1;
}

/* Submits the refit of each bag whose K folds are all done: its
 * candidate trained once more on every training row, the validation part
 * included (study_refit_params: a model that stops early runs for the
 * median of what its folds kept), trial (candidate, repeat 1, fold -1).
 * The bag then predicts new rows, and the test part, with it, while its
 * folds' out-of-fold and validation predictions still score it.  *n_sub:
 * trials submitted. */
static int submit_refits(struct cfl_study *s, size_t *n_sub, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	int K = p->autop.folds;

	for (size_t k = 0; k < a->n; k++) {
		struct auto_cand *c = &a->c[k];
		uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, 0);
		struct cfl_trial_state ts;
		struct cfl_trial_spec spec;
		struct cfl_params refit;
		int on_all, rc;

		if (!p->autop.refit || !c->bag || c->refit || c->folds_done < (size_t)K)
			continue;
		c->refit = 1;
		if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id, 1, -1, seed,
					      CFL_PHASE_REFIT, &ts, err))
			return -1;
		/* a refit that failed for good stays failed: its bag predicts
		 * with its folds */
		if (ts.status == CFL_TRIAL_DONE || ts.status == CFL_TRIAL_FAILED ||
		    ts.status == CFL_TRIAL_POISON || ts.status == CFL_TRIAL_CANCELLED)
			continue;
		if (study_refit_params(p->autop.models[c->family], &c->params, c->iters,
				       (size_t)K, &refit, &on_all, err))
			return -1;
		memset(&spec, 0, sizeof(spec));
		spec.trial_id = ts.id;
		spec.model = p->autop.models[c->family];
		spec.params = &refit;
		spec.seed = seed;
		spec.fold_seed = cfl_fold_seed(p->data.seed, 0);
		spec.repeat = 1;
		spec.fold = -1;
		spec.flags = (on_all ? CFL_LEASE_REFIT : 0) | CFL_LEASE_KEEP_TEST |
			     (p->autop.save ? CFL_LEASE_KEEP_MODEL : 0);
		spec.prev_attempts = ts.attempt;
		spec.user = user_of(k, K);
		if (c->budget_s > 0 && !isnan(c->seconds))
			spec.budget_s = c->seconds;
		if (c->bag_budget_s > 0)
			spec.budget_s = c->bag_budget_s;
		rc = cfl_pool_submit(s->pool, &spec, err);
		cfl_params_release(&refit);
		if (rc)
			return -1;
		(*n_sub)++;
		s->n_ran++;
	}
	return 0;
}

/* ---- bag sets (small data) ---- */

/* The bags the final selection can use (cfl_study_auto_ensembles): the
 * STUDY_AUTO_MAX_BAGS best by the proper score out of fold (the earlier
 * candidate on ties), and each family's best.  Their indexes into a->c,
 * best first, into order (a->n of room); the count. */
static size_t bag_pool(const struct study_auto *a, size_t *order)
{
	size_t n = 0, m;

	for (size_t k = 0; k < a->n; k++) {
		size_t i = n;

		if (isnan(a->c[k].score))
			continue;
		while (i > 0 && a->c[order[i - 1]].score < a->c[k].score) {
			order[i] = order[i - 1];
			i--;
		}
		order[i] = k;
		n++;
	}
	if (n <= STUDY_AUTO_MAX_BAGS)
		return n;
	/* past the bound, only the families' best stay */
	m = STUDY_AUTO_MAX_BAGS;
	for (size_t i = m; i < n; i++)
		if (a->best[a->c[order[i]].family] == (long)order[i])
			order[m++] = order[i];
	return m;
}

/* The wall seconds one more bag set of the n bags of order should take:
 * their folds' seconds in the workers (as set 0's took), and for each
 * fold what a trial cost beyond them in this session's search (its wall
 * time over the slots against the trials' own seconds: the coordinator's
 * store and lease work, not TRIAL_OVERHEAD's guess), over the slots, plus
 * the slowest fold for the ragged end.  Once a set ran, the next is taken
 * to last as long (run_sets). */
static double set_seconds(const struct cfl_study *s, const size_t *order, size_t n)
{
	const struct study_auto *a = s->autos;
	double t = 0, slowest = 0, busy = 0, cost = 0, slots = (double)study_slots(s);
	size_t n_run = 0;

	for (size_t k = 0; k < a->n; k++) {
		const struct auto_cand *c = &a->c[k];

		if (c->replayed || isnan(c->seconds))
			continue;
		busy += c->seconds - (double)c->folds_done * TRIAL_OVERHEAD;
		n_run += c->folds_done;
	}
	if (n_run && a->search_t0 > 0)
		cost = ((cfl_now() - a->search_t0) * slots - busy) / (double)n_run;
	if (cost < 0)
		cost = 0;
	for (size_t i = 0; i < n; i++) {
		const struct auto_cand *c = &a->c[order[i]];
		double sec = c->seconds - (double)c->folds_done * (TRIAL_OVERHEAD - cost);

		if (isnan(sec))
			continue;
		if (sec < 0)
			sec = 0;
		t += sec;
		if (sec / s->plan->autop.folds > slowest)
			slowest = sec / s->plan->autop.folds;
	}
	return t / slots + slowest;
}

/* Submits bag set `set` of each of the n bags of order: K fold trials
 * (repeat set_repeat(set), fold 0..K-1) on the set's own fold partition,
 * those stored final (--resume) kept as they are.  *n_sub: trials submitted.  0, or -1
 * with err. */
static int submit_sets(struct cfl_study *s, const size_t *order, size_t n,
		       int set, size_t *n_sub, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;

	if (cfl_store_begin(s->st, err))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct auto_cand *c = &a->c[order[i]];
		uint64_t seed = cfl_trial_seed(p->data.seed, c->hex, set_repeat(set));

		for (int fold = 0; fold < p->autop.folds; fold++) {
			struct cfl_trial_state ts;

			if (cfl_store_trial_ensure_in(s->st, s->run_id, c->id,
						      set_repeat(set), fold,
						      seed, CFL_PHASE_REFIT, &ts, err))
				goto fail;
			if (ts.status == CFL_TRIAL_DONE || ts.status == CFL_TRIAL_FAILED ||
			    ts.status == CFL_TRIAL_POISON || ts.status == CFL_TRIAL_CANCELLED)
				continue;
			if (submit_set_fold(s, order[i], set, fold, seed, &ts, 0, err))
				goto fail;
			a->sets_pending++;
			(*n_sub)++;
			s->n_ran++;
		}
	}
	return cfl_store_commit(s->st, err);
fail:
	cfl_store_rollback(s->st);
	return -1;
}

/* Waits until every bag set's fold trial submitted is final.  0, or 2 / 3
 * (interrupted, time limit) or -1. */
static int wait_sets(struct cfl_study *s, const struct cfl_study_listener *ls,
		     struct cfl_err *err)
{
	while (s->autos->sets_pending) {
		int r = wait_one(s, ls, err);

		if (r < 0 || r == 2 || r == 3)
			return r;
		if (r == 1)	/* idle with a trial pending: cannot happen */
			break;
	}
	return 0;
}

/* With --refit, the bags to refit once the sets are final: each family's
 * best by the proper score over its sets, as the leaderboard will rank
 * them (not by set 0's alone).  0, or -1 with err. */
static int refit_best_bags(struct cfl_study *s, struct cfl_err *err)
{
	struct study_auto *a = s->autos;
	int64_t best[CFL_STUDY_MAX_MODELS];
	size_t n;

	if (!s->plan->autop.refit)
		return 0;
	if (study_auto_best_bags(s->st, s->run_id, s->data, a->proper, best,
				 CFL_STUDY_MAX_MODELS, &n, err))
		return -1;
	for (size_t k = 0; k < a->n; k++) {
		a->c[k].bag = 0;
		for (size_t i = 0; i < n; i++)
			a->c[k].bag |= a->c[k].id == best[i];
	}
	return 0;
}

/* Under a time limit, the most bag sets a bag gets: the search keeps time
 * for a->bag_sets (sets_reserve), what it leaves beyond goes to more sets
 * up to this many (AutoGluon's default num_bag_sets under a time limit).
 * A bound on the time spent, not a choice fitted to any data. */
#define STUDY_AUTO_TIMED_SETS 20

/* Small data: more bag sets for the bags the final selection can use
 * (bag_pool), so that it chooses on out-of-fold predictions averaged over
 * several fold partitions, not on one partition's luck (AutoGluon's
 * num_bag_sets).  Under a count budget every set up to a->bag_sets is
 * submitted at once; under a time limit set after set, each once the one
 * before is final, while the time left says another would finish (up to
 * STUDY_AUTO_TIMED_SETS).  Says
 * in one line what it did; returns once the sets are final, with --refit
 * the bags to refit chosen on them.  0, or 2 / 3 (interrupted, time limit)
 * or -1. */
static int run_sets(struct cfl_study *s, const struct cfl_study_listener *ls,
		    struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a = s->autos;
	size_t *order, n, n_sub = 0;
	int set = 1, rc = 0, most = a->bag_sets > STUDY_AUTO_TIMED_SETS
				    ? a->bag_sets : STUDY_AUTO_TIMED_SETS;
	char text[160];

	if (!a->cv || a->bag_sets <= 1 || !a->n)
		return 0;
	if (!(order = cfl_calloc(a->n, sizeof(*order), err)))
		return -1;
	n = bag_pool(a, order);
	if (!n)
		goto out;
	if (p->autop.max_trials) {
		for (; set < a->bag_sets && !rc; set++)
			rc = submit_sets(s, order, n, set, &n_sub, err);
		if (rc)
			goto out;
		snprintf(text, sizeof(text), "bag sets: %d more of %d folds for the "
			 "%zu best bags: %zu trials", a->bag_sets - 1,
			 p->autop.folds, n, n_sub);
		emit_phase(s, ls, text);
		rc = wait_sets(s, ls, err);
		goto out;
	}
	for (double last = -1; set < most; set++) {
		double need = last >= 0 ? last : set_seconds(s, order, n);
		double t0 = cfl_now(), left = s->deadline - t0;

		if (need > left) {
			snprintf(text, sizeof(text), "bag sets: %d for the %zu best bags; "
				 "another (%.1f s) would not finish in %.1f s",
				 set, n, need, left > 0 ? left : 0.0);
			break;
		}
		if (submit_sets(s, order, n, set, &n_sub, err)) {
			rc = -1;
			goto out;
		}
		if ((rc = wait_sets(s, ls, err)) != 0) {
			snprintf(text, sizeof(text), "bag sets: the %s stopped set %d "
				 "for the %zu best bags", rc == 3 ? "time limit" : "interrupt",
				 set + 1, n);
			if (rc > 0)
				emit_phase(s, ls, text);
			goto out;
		}
		last = cfl_now() - t0;
	}
	if (set == most)
		snprintf(text, sizeof(text), "bag sets: %d of %d folds for the %zu "
			 "best bags (%zu trials)", most, p->autop.folds, n, n_sub);
	emit_phase(s, ls, text);
out:
	free(order);
	if (!rc && refit_best_bags(s, err))
		rc = -1;
	return rc;
}

/* The seconds to keep for the bag sets after the search: as many sets of
 * the bags the final selection can use so far as fit in the share of the
 * time the search leaves (1 - SEARCH_MAX_SHARE, as on larger data), at
 * most a->bag_sets - 1; none when not one fits (time kept for a set that
 * cannot finish would be lost to the search). */
static double sets_reserve(const struct cfl_study *s)
{
	const struct study_auto *a = s->autos;
	size_t *order, n;
	double one, share = (1 - SEARCH_MAX_SHARE) * (s->deadline - a->search_t0);
	int k;
	struct cfl_err ignored;

	if (!a->cv || a->bag_sets <= 1 || !a->n || share <= 0 ||
	    !(order = cfl_calloc(a->n, sizeof(*order), &ignored)))
		return 0;
	n = bag_pool(a, order);
	one = n ? set_seconds(s, order, n) : 0;
	free(order);
	if (one <= 0)
		return 0;
	k = share / one < a->bag_sets - 1 ? (int)(share / one) : a->bag_sets - 1;
	return k * one;
}

/* ---- the run ---- */

int cfl_study_auto(struct cfl_study *s, const struct cfl_study_listener *ls,
		   struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct study_auto *a;
	struct cfl_study_event se;
	double t0 = cfl_now(), left, reserve, bags_t0 = NAN, bags_est;
	size_t n_models = p->autop.n_models, n_sub = 0;
	char text[384];
	int r;

	if (!s->pool || p->kind != CFL_RUN_AUTO || s->autos)
		return cfl_err_set(err, "cfl_study_auto: %s",
				   !s->pool ? "the pool is not started"
				   : s->autos ? "the run ran already" : "not an auto plan");
	if (!(a = cfl_calloc(1, sizeof(*a), err)))
		return -1;
	s->autos = a;
	for (size_t f = 0; f < CFL_STUDY_MAX_MODELS; f++)
		a->best[f] = a->dflt[f] = -1;
	a->cv = study_auto_small(p, s->data);
	if (!a->cv)
		a->sample = search_sample(p, s->data->train.n);
	a->n_rungs = 1;		/* successive halving: below, when it runs */
	a->rung_rows[0] = a->sample;
	a->n_out = s->data->train.n_classes > 0 ? (size_t)s->data->train.n_classes : 1;
	a->proper = s->data->train.n_classes > 0 ? CFL_M_LOGLOSS : p->autop.metric;
	a->bag_sets = p->autop.bag_sets > 0 ? p->autop.bag_sets : CFL_STUDY_AUTO_BAG_SETS;
	a->const_score = a->cv ? NAN : const_score(s);
	if (s->resumed &&
	    (cfl_store_run_metrics(s->st, s->run_id, CFL_SPLIT_VALID, &a->stored,
				   &a->n_stored, err) ||
	     cfl_store_trials(s->st, s->run_id, &a->trials, &a->n_trials, err) ||
	     cfl_store_run_iters(s->st, s->run_id, &a->iters, &a->n_iters, err)))
		return -1;
	/* the GP's small matrices are faster on one BLAS thread */
	cfl_worker_set_threads(1);

	/* the budget from now: the deadline was set when the run opened */
	left = s->deadline - t0;
	reserve = left * RESERVE_SHARE;
	if (reserve < RESERVE_MIN)
		reserve = RESERVE_MIN;
	if (a->sample && s->deadline > 0) {
		/* a million rows: the finish takes seconds */
		double fin = finish_seconds(s);

		if (fin > reserve) {
			reserve = fin < FINISH_MAX_SHARE * left ? fin : FINISH_MAX_SHARE * left;
			/* what one bag fewer saves: its entry alone (each
			 * took 0.2-0.3 s of finishes of 2.4-3.2 s, 8-10%;
			 * reading the predictions and greedy do not shrink
			 * with the bags: at a load of 9, two bags left out
			 * gave back an eighth each and the finish ended 1.5 s
			 * past the limit) */
			a->entry_s = reserve * FINISH_BAG_SHARE;
		}
	}
	/* the leaderboard's entries stop at the limit (greedy's rounds, and
	 * stacking and mean not started when they would not end by then),
	 * less the moment the table and the exit take; a count budget's
	 * leaderboard is the same whatever the clock says */
	if (s->deadline > 0 && !p->autop.max_trials)
		s->finish_by = s->deadline - FINISH_END_MARGIN;
	s->deadline -= reserve;	/* the pool stops here; the rest ensembles */
	if (a->sample && s->deadline > 0 && !p->autop.max_trials) {
		a->bag_time = (left - reserve) * (1 - SAMPLE_SEARCH_SHARE);
		/* the search on the sample under the time limit (search_family):
		 * successive halving on rows */
		set_rungs(a, p->autop.search_rungs);
	}

	memset(&se, 0, sizeof(se));
	se.kind = CFL_STUDY_START;
	se.pool = s->pool;
	se.n_done = s->resumed ? a->n_trials : 0;
	cfl_study_emit(ls, &se);
	if (start_pruning(s, ls, err))
		return -1;
	if (a->sample && a->n_rungs > 1) {
		char rungs[96] = "";
		size_t len = 0;

		for (int j = 0; j < a->n_rungs; j++) {
			snprintf(rungs + len, sizeof(rungs) - len, "%s%llu", j ? "/" : "",
				 (unsigned long long)a->rung_rows[j]);
			len = strlen(rungs);
		}
		snprintf(text, sizeof(text), "the search runs successive halving on rows: "
			 "%s of the %zu training rows (seeded samples; the top 1/%d of a "
			 "rung goes on); the bags on the rows their time allows; %.1f s "
			 "kept for the ensembles", rungs, s->data->train.n, SEARCH_ETA,
			 reserve);
		emit_phase(s, ls, text);
	} else if (a->sample) {
		snprintf(text, sizeof(text), "the search trains each candidate on %llu "
			 "of the %zu training rows (a seeded sample); the bags on %s; "
			 "%.1f s kept for the ensembles",
			 (unsigned long long)a->sample, s->data->train.n,
			 a->bag_time > 0 ? "the rows their time allows" : "every row",
			 reserve);
		emit_phase(s, ls, text);
	}

	for (size_t f = 0; f < n_models; f++) {
		struct cfl_params none;

		cfl_params_init(&none);
		a->dflt[f] = add_cand(s, f, &none, -1, err);
		cfl_params_release(&none);
		if (a->dflt[f] < 0)
			return -1;
	}
	a->search_t0 = cfl_now();
	if (p->autop.max_trials || a->cv) {
		r = p->autop.max_trials ? search_rounds(s, ls, err) : search_async(s, ls, err);
		if (r < 0)
			return -1;
		if (r == 2)
			return CFL_STUDY_INTERRUPTED;
		if (r == 3)
			return CFL_STUDY_TIME_LIMIT;
		if (!a->cv)
			goto bags;
		/* every candidate is a bag already; --refit refits each
		 * family's best */
		for (size_t k = 0; k < a->n; k++)
			a->c[k].bag = a->best[a->c[k].family] == (long)k;
		r = run_sets(s, ls, err);
		if (r < 0)
			return -1;
		if (r == 2)
			return CFL_STUDY_INTERRUPTED;
		if (r == 3)
			return CFL_STUDY_TIME_LIMIT;
		goto wait;
	}
	/* round after round, each family in turn, its share what is left of
	 * the search budget over the families left in the round (a family
	 * that stops early leaves its time to those after it); a round after
	 * the first starts each family's count of candidates no better afresh,
	 * and the rounds end with the budget, when one asked nothing (every
	 * space exhausted, or no time left to ask in), or when a round after
	 * the first improved no family's best (unless use_all_time) */
	for (int pass = 0, again = 0;; pass++) {
		size_t n_left = 0, n_asked = a->n;
		long best_before[CFL_STUDY_MAX_MODELS];
		int improved = 0, spent = 0;

		memcpy(best_before, a->best, sizeof(best_before));
		for (size_t f = 0; f < n_models; f++) {
			a->stopped[f] = 0;
			a->since_best[f] = 0;
			n_left += !a->exhausted[f];
		}
		if (pass && !n_left) {
			snprintf(text, sizeof(text), "the search ends: every family's "
				 "space is exhausted (%zu candidates)", a->n);
			emit_phase(s, ls, text);
			break;
		}
		for (size_t f = 0; f < n_models; f++) {
			double now = cfl_now(), end;
			size_t bagged = pass ? n_models : f;

			if (pass && a->exhausted[f])
				continue;
			a->search_end = t0 + (left - reserve) * SEARCH_MAX_SHARE;
			if (a->search_end > s->deadline - bag_seconds(s, bagged))
				a->search_end = s->deadline - bag_seconds(s, bagged);
			end = now + (a->search_end - now) / (double)n_left--;
			if (pass && end <= now) {
				spent = 1;
				break;
			}
			if (pass && !again++)	/* said once */
				emit_phase(s, ls, p->autop.use_all_time
					   ? "another round for the families, each with a "
					     "fresh count of candidates no better; rounds go "
					     "on until the search's time ends (--use-all-time)"
					   : "another round for the families, each with a "
					     "fresh count of candidates no better; rounds go "
					     "on until one improves no family's best or the "
					     "search's time ends");

			snprintf(text, sizeof(text), "%s: searching for %.1f s",
				 p->autop.models[f], end > now ? end - now : 0.0);
			if (!pass)	/* the rounds after: said once above */
				emit_phase(s, ls, text);
			r = search_family(s, f, bagged, end, ls, err);
			if (r < 0)
				return -1;
			if (r == 2)
				return CFL_STUDY_INTERRUPTED;
			if (r == 3)
				return CFL_STUDY_TIME_LIMIT;
		}
		if (pass && a->n == n_asked) {
			/* said why: the rounds on larger data ended silently
			 * when the search's time was spent */
			if (spent)
				snprintf(text, sizeof(text), "the search ends: its time is "
					 "spent (%zu candidates); the %.1f s left are the "
					 "bags' (their estimate)", a->n,
					 fmax(s->deadline - cfl_now(), 0.0));
			else
				snprintf(text, sizeof(text), "the search ends: no family "
					 "asked another candidate (%zu candidates)", a->n);
			emit_phase(s, ls, text);
			break;
		}
		for (size_t f = 0; f < n_models; f++)
			improved |= a->best[f] != best_before[f];
		if (pass && !improved && !p->autop.use_all_time) {
			emit_phase(s, ls, "the search ends: a whole round improved no "
				   "family's best");
			break;
		}
	}

bags:
	bags_t0 = cfl_now();
	bags_est = bag_seconds(s, n_models);
	if (submit_bags(s, ls, &n_sub, err))
		return -1;
	if (p->autop.max_trials)
		snprintf(text, sizeof(text), "bagging the best of each model with %d "
			 "folds: %zu trials", p->autop.folds, n_sub);
	else
		snprintf(text, sizeof(text), "bagging the best of each model with %d "
			 "folds: %zu trials in at most %.1f s (their estimate: %.1f s)",
			 p->autop.folds, n_sub, fmax(s->deadline - bags_t0, 0.0), bags_est);
	emit_phase(s, ls, text);
wait:
	for (;;) {
		/* each bag's refit once its folds are done; on a row sample
		 * the next folds as slots free up */
		if (submit_refits(s, &n_sub, err) ||
		    (a->lazy && lazy_submit(s, err)))
			return -1;
		r = wait_one(s, ls, err);
		if (r < 0)
			return -1;
		if (r == 1)
			break;
		if (r == 2)
			return CFL_STUDY_INTERRUPTED;
		if (r == 3)
			return CFL_STUDY_TIME_LIMIT;
	}
	/* larger data under a time limit: the run ends when its bags do,
	 * and says so when that leaves time unused (issue 31: a run that
	 * ends early says why) */
	if (!a->cv && !p->autop.max_trials && s->deadline > 0 && !isnan(bags_t0)) {
		snprintf(text, sizeof(text), "the bags are done after %.1f s, %.1f s before "
			 "the time limit: nothing is left to run but the ensembles",
			 cfl_now() - bags_t0, fmax(s->deadline + reserve - cfl_now(), 0.0));
		emit_phase(s, ls, text);
	}
	return 0;
}

/* ---- the leaderboard, from the store ---- */

void cfl_study_auto_summary_release(struct cfl_study_auto_summary *sum)
{
	free(sum->rows);
	free(sum->families);
	memset(sum, 0, sizeof(*sum));
}

/* Why family f would have no score, from its defaults' search trial t
 * (kept in f->why; the caller clears it when the family has a best). */
static void family_why(struct cfl_study_auto_family *f,
		       const struct cfl_trial_info *t)
{
	double ran = t->finished > t->started && t->started > 0 ?
		     t->finished - t->started : 0;

	switch (t->status) {
	case CFL_TRIAL_CANCELLED:
		snprintf(f->why, sizeof(f->why), "its defaults were cancelled at "
			 "the time limit after %.1f s", ran);
		break;
	case CFL_TRIAL_FAILED:
	case CFL_TRIAL_POISON:
		snprintf(f->why, sizeof(f->why), "its defaults failed: %.38s",
			 t->error ? t->error : "unknown");
		break;
	case CFL_TRIAL_DONE:
		snprintf(f->why, sizeof(f->why), "its defaults have no score on "
			 "the validation part");
		break;
	default:
		snprintf(f->why, sizeof(f->why), "its defaults did not finish "
			 "before the time limit");
		break;
	}
}

/* Larger data: why family f, which has a best, has no bag in the
 * leaderboard (f->no_bag; "" when it has one): its best's fold trials
 * (repeat 0) were never made or never started, or the time limit stopped
 * some. */
static void family_no_bag(const struct cfl_study_auto_summary *out,
			  struct cfl_study_auto_family *f,
			  const struct cfl_candidate_info *cands, size_t n_cands,
			  const struct cfl_trial_info *tr, size_t n_tr)
{
	size_t len = strlen(f->model), n = 0, done = 0, started = 0;
	int64_t id = -1;

	f->no_bag[0] = 0;
	if (!f->best_hex[0])
		return;
	for (size_t i = 0; i < out->n_rows; i++)
		if (!strcmp(out->rows[i].method, "bag") &&
		    !strncmp(out->rows[i].name, f->model, len) && out->rows[i].name[len] == ':')
			return;
	for (size_t c = 0; c < n_cands; c++)
		if (!strcmp(cands[c].model, f->model) && !strcmp(cands[c].hex, f->best_hex))
			id = cands[c].id;
	for (size_t i = 0; i < n_tr; i++)
		if (tr[i].cand_id == id && tr[i].repeat == 0 && tr[i].fold >= 0) {
			n++;
			done += tr[i].status == CFL_TRIAL_DONE;
			started += tr[i].status != CFL_TRIAL_QUEUED;
		}
	if (!started)
		snprintf(f->no_bag, sizeof(f->no_bag), "its folds would not finish in "
			 "the time left (--resume with more time bags it)");
	else
		snprintf(f->no_bag, sizeof(f->no_bag), "the time limit stopped its "
			 "folds (%zu of %zu done)", done, n);
}

/* The seconds and count of the trials a stored members text lists
 * ("trials 1+2+3,4+5; ..."). */
static void members_time(const char *text, const struct cfl_trial_info *tr,
			 size_t n_tr, double *seconds, size_t *n)
{
	const char *p = text;

	*seconds = 0;
	*n = 0;
	if (strncmp(p, "trials ", 7))
		return;
	for (p += 7; *p && *p != ';';) {
		char *end;
		long long id = strtoll(p, &end, 10);

		if (end == p)
			break;
		for (size_t i = 0; i < n_tr; i++)
			if (tr[i].id == id && !isnan(tr[i].duration)) {
				*seconds += tr[i].duration;
				(*n)++;
			}
		p = end;
		if (*p == '+' || *p == ',')
			p++;
	}
}

/* sign * x > sign * y first, NaN last; 0 when equal. */
static int better(double x, double y, int sign)
{
	int nx = isnan(x), ny = isnan(y);

	if (nx || ny)
		return nx - ny;
	if (sign * x != sign * y)
		return sign * x > sign * y ? -1 : 1;
	return 0;
}

/* The leaderboard's order (cfl_study_auto_summary): greedy first, then
 * the proper score out of fold, the metric out of fold, fewer seconds, the
 * name.  Never on test. */
static int by_rank(const struct cfl_study_auto_row *a,
		   const struct cfl_study_auto_row *b, int sign, int score_sign)
{
	int ga = !strcmp(a->method, "greedy") && !isnan(a->cv),
	    gb = !strcmp(b->method, "greedy") && !isnan(b->cv), r;

	if (ga != gb)
		return gb - ga;
	r = better(a->loss, b->loss, score_sign);
	if (!r)
		r = better(a->cv, b->cv, sign);
	if (!r)
		r = better(a->valid, b->valid, sign);
	if (!r)
		r = better(a->seconds, b->seconds, -1);
	return r ? r : strcmp(a->name, b->name);
}

/* The training rows the out-of-fold predictions cover: the rows of the
 * folds of the first bag whose folds are all done (every bag has the same
 * folds); 0 when there is none. */
static size_t oof_rows(struct cfl_store *st, const struct cfl_trial_info *tr,
		       size_t n_tr)
{
	for (size_t i = 0; i < n_tr;) {
		size_t j = i, n = 0;
		int all = 1;

		if (tr[i].fold < 0) {
			i++;
			continue;
		}
		while (j < n_tr && tr[j].fold >= 0 && tr[j].cand_id == tr[i].cand_id &&
		       tr[j].repeat == tr[i].repeat)
			all &= tr[j++].status == CFL_TRIAL_DONE;
		for (size_t k = i; all && k < j; k++) {
			struct cfl_pred po;
			struct cfl_err ignored;

			if (cfl_store_predictions(st, tr[k].id, CFL_SPLIT_OOF, &po, &ignored)) {
				all = 0;
				break;
			}
			n += po.n;
			cfl_pred_release(&po);
		}
		if (all && n)
			return n;
		i = j;
	}
	return 0;
}

/* The bag sets of the run's bags (trials in (candidate, repeat, fold)
 * order): a set is whole when its folds, as many as the bag's set 0
 * has, are all done. */
static void set_counts(const struct cfl_trial_info *tr, size_t n_tr,
		       struct cfl_study_auto_summary *out)
{
	for (size_t i = 0; i < n_tr;) {
		size_t j = i, n0 = 0, sets = 0;

		while (j < n_tr && tr[j].cand_id == tr[i].cand_id) {
			size_t e = j, done = 0;

			for (; e < n_tr && tr[e].cand_id == tr[i].cand_id &&
			       tr[e].repeat == tr[j].repeat; e++)
				done += tr[e].fold >= 0 && tr[e].status == CFL_TRIAL_DONE;
			if (tr[j].repeat == 0 && tr[j].fold >= 0)
				n0 = e - j;
			if (tr[j].fold >= 0 && done && done == e - j &&
			    (tr[j].repeat == 0 || done == n0))
				sets += tr[j].repeat == 0 || tr[j].repeat >= 2;
			j = e;
		}
		if (n0 && sets > 1) {
			out->n_set_bags++;
			if (sets > out->n_sets)
				out->n_sets = sets;
			out->set_folds = n0;
		}
		i = j;
	}
}

/* Sorts n rows in the leaderboard's order (by_rank); stable. */
static void sort_rows(struct cfl_study_auto_row *rows, size_t n, int sign,
		      int score_sign)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && by_rank(&rows[j], &rows[j - 1], sign,
						      score_sign) < 0; j--) {
			struct cfl_study_auto_row t = rows[j];

			rows[j] = rows[j - 1];
			rows[j - 1] = t;
		}
}

/* The value of metric for ensemble id among rows m (n of them), or NaN. */
static double metric_of(const struct cfl_metric_row *m, size_t n, int64_t id,
			const char *metric)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].ensemble_id == id && !strcmp(m[i].metric, metric))
			return m[i].value;
	return NAN;
}

int cfl_study_auto_summary(struct cfl_store *st, int64_t run_id,
			   struct cfl_study_auto_summary *out,
			   struct cfl_err *err)
{
	struct cfl_ensemble_row *ens = NULL;
	struct cfl_candidate_info *cands = NULL;
	struct cfl_trial_info *tr = NULL;
	struct cfl_metric_row *mv = NULL, *mt = NULL, *mo = NULL;
	size_t n_ens = 0, n_cands = 0, n_tr = 0, n_mv = 0, n_mt = 0, n_mo = 0;
	int rc = -1, id;

	memset(out, 0, sizeof(*out));
	out->sign = out->score_sign = 1;
	if (cfl_store_ensembles(st, run_id, &ens, &n_ens, err) ||
	    cfl_store_candidates(st, run_id, &cands, &n_cands, err) ||
	    cfl_store_trials(st, run_id, &tr, &n_tr, err) ||
	    cfl_store_run_metrics(st, run_id, CFL_SPLIT_VALID, &mv, &n_mv, err) ||
	    cfl_store_run_metrics(st, run_id, CFL_SPLIT_TEST, &mt, &n_mt, err) ||
	    cfl_store_run_metrics(st, run_id, CFL_SPLIT_OOF, &mo, &n_mo, err))
		goto out;
	/* the user's metric: the first stored (the pool's metrics put it
	 * first); the proper score: log loss when the entries have it out of
	 * fold (classification), else the metric itself */
	if (n_mv) {
		id = cfl_metric_lookup(mv[0].metric);
		snprintf(out->metric, sizeof(out->metric), "%s", mv[0].metric);
		out->sign = id >= 0 ? cfl_metric_info(id)->sign : 1;
	}
	snprintf(out->score_metric, sizeof(out->score_metric), "%s", out->metric);
	out->score_sign = out->sign;
	for (size_t i = 0; i < n_mo; i++)
		if (mo[i].ensemble_id && !strcmp(mo[i].metric, "logloss")) {
			snprintf(out->score_metric, sizeof(out->score_metric), "logloss");
			out->score_sign = -1;
		}
	out->cv_search = n_cands > 0;
	for (size_t i = 0; i < n_tr; i++)
		if (tr[i].fold < 0 && tr[i].repeat == 0)
			out->cv_search = 0;
	if (n_ens && !(out->rows = cfl_calloc(n_ens, sizeof(*out->rows), err)))
		goto out;
	for (size_t e = 0; e < n_ens; e++) {
		struct cfl_study_auto_row *r = &out->rows[out->n_rows++];

		snprintf(r->name, sizeof(r->name), "%s", ens[e].name);
		snprintf(r->method, sizeof(r->method), "%s", ens[e].method);
		r->cv = metric_of(mo, n_mo, ens[e].id, out->metric);
		r->loss = metric_of(mo, n_mo, ens[e].id, out->score_metric);
		r->valid = metric_of(mv, n_mv, ens[e].id, out->metric);
		r->test = metric_of(mt, n_mt, ens[e].id, out->metric);
		members_time(ens[e].members, tr, n_tr, &r->seconds, &r->n_trials);
	}
	out->n_oof = oof_rows(st, tr, n_tr);
	set_counts(tr, n_tr, out);
	for (size_t i = 0; i < n_tr; i++)
		out->n_unfinished += tr[i].fold >= 0 && tr[i].repeat == 0 &&
				     (tr[i].status == CFL_TRIAL_INTERRUPTED ||
				      tr[i].status == CFL_TRIAL_QUEUED ||
				      tr[i].status == CFL_TRIAL_RUNNING);
	sort_rows(out->rows, out->n_rows, out->sign, out->score_sign);

	/* the families, in the order their first candidate was stored */
	if (n_cands && !(out->families = cfl_calloc(n_cands, sizeof(*out->families), err)))
		goto out;
	for (size_t c = 0; c < n_cands; c++) {
		struct cfl_study_auto_family *f = NULL;

		for (size_t i = 0; i < out->n_families; i++)
			if (!strcmp(out->families[i].model, cands[c].model))
				f = &out->families[i];
		if (!f) {
			f = &out->families[out->n_families++];
			snprintf(f->model, sizeof(f->model), "%s", cands[c].model);
			f->best_valid = NAN;
		}
		f->n_cands++;
		{
			/* the search's trials: its ones on valid (its first,
			 * repeat 0, and its promotions to a higher rung of
			 * rows, repeat 2 and on), or (cv_search) its folds;
			 * done when all are, failed when one is */
			size_t n = 0, done = 0, failed = 0, cancelled = 0, pruned = 0;

			for (size_t i = 0; i < n_tr; i++) {
				if (tr[i].cand_id != cands[c].id ||
				    (tr[i].fold >= 0) != out->cv_search ||
				    (out->cv_search ? tr[i].repeat != 0
				     : tr[i].repeat == 1))
					continue;
				n++;
				if (tr[i].status == CFL_TRIAL_DONE) {
					done++;
					f->seconds += tr[i].duration;
				} else if (tr[i].status == CFL_TRIAL_FAILED ||
					   tr[i].status == CFL_TRIAL_POISON) {
					failed++;
				} else if (tr[i].status == CFL_TRIAL_CANCELLED) {
					cancelled++;
				} else if (tr[i].status == CFL_TRIAL_PRUNED) {
					pruned++;
				}
				if (!cands[c].kv.n && !tr[i].repeat)	/* the defaults:
									 * why no score */
					family_why(f, &tr[i]);
			}
			f->n_done += n && done == n;
			f->n_failed += failed > 0;
			f->n_cancelled += cancelled > 0 && !failed;
			f->n_pruned += pruned > 0 && !failed;
		}
		{
			/* the stored score is signed, higher better: the
			 * proper score's (an older cfl's: its metric's,
			 * and then score_sign is the metric's) */
			int sg = out->score_sign;

			if (cands[c].has_score && !isnan(cands[c].score) &&
			    (!f->best_hex[0] || cands[c].score > sg * f->best_valid)) {
				snprintf(f->best_hex, sizeof(f->best_hex), "%s", cands[c].hex);
				f->best_valid = sg * cands[c].score;
			}
		}
	}
	for (size_t i = 0; i < out->n_families; i++)
		if (out->families[i].best_hex[0])
			out->families[i].why[0] = 0;
	if (!out->cv_search)
		for (size_t i = 0; i < out->n_families; i++)
			family_no_bag(out, &out->families[i], cands, n_cands, tr, n_tr);
	rc = 0;
out:
	cfl_ensemble_rows_free(ens, n_ens);
	cfl_candidates_free(cands, n_cands);
	cfl_trials_free(tr, n_tr);
	free(mv);
	free(mt);
	free(mo);
	if (rc)
		cfl_study_auto_summary_release(out);
	return rc;
}
