/*
 * What `cfl auto` shows while it runs, as text (cfl_study_auto_view): the
 * study's events made into the lines that stay -- one line per family per
 * turn the study announces ("fcnn, round 1: 22 candidates, 5 failed, best
 * logloss 0.412345 on valid (acc 0.851064)": the families searched one
 * after another on large data), and for families searched at their own
 * pace, whose candidates come interleaved, a line each time one's best
 * improves ("gbdt: 12 candidates, best logloss 0.317834 out of fold (acc
 * 0.849398)"); the round and bagging lines, a bag's failed fold or refit;
 * with verbose a line per candidate and per fold trial instead of the
 * family lines -- and the counts of the live line (phase, family,
 * candidates, elapsed, time left).  The best is the one the proper score
 * ranks first, shown by it, the metric beside.  Never prints: src/cli does.
 */
#include "cfl/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cfl/run.h"

void cfl_study_auto_view_init(struct cfl_study_auto_view *v, int verbose,
			      double time_limit, double now)
{
	memset(v, 0, sizeof(*v));
	v->verbose = verbose;
	v->metric = "";
	v->limit = time_limit;
	v->t0 = now;
	v->round = 1;
	snprintf(v->phase, sizeof(v->phase), "search");
}

size_t cfl_study_auto_view_line(const struct cfl_study_auto_view *v, double now,
				size_t width, char *line, size_t cap)
{
	struct cfl_auto_counts c = {
		.phase = v->phase, .family = v->family[0] ? v->family : v->last,
		.n_cands = v->n_cands, .done = v->bag_done,
		.total = v->bag_total, .elapsed = now - v->t0, .left = -1,
	};

	if (v->limit > 0)
		c.left = fmax(0, v->limit - c.elapsed);
	return cfl_auto_progress_format(&c, width, line, cap);
}

/* ", best logloss 0.412345 out of fold (acc 0.851064)"; by the metric
 * alone when it is the proper score (regression) or there is none. */
static void best_text(const struct cfl_study_auto_view *v, double proper,
		      double value, int oof, char *buf, size_t cap)
{
	const char *where = oof ? "out of fold" : "on valid";

	if (v->proper && strcmp(v->proper, v->metric) && isfinite(proper))
		snprintf(buf, cap, ", best %s %.6f %s (%s %.6f)", v->proper, proper,
			 where, v->metric, value);
	else
		snprintf(buf, cap, ", best %s %.6f %s", v->metric, value, where);
}

/* "NAME[, round R]: N candidates[, F failed][, C cancelled][, P pruned]BEST" */
static void family_line(struct cfl_buf *out, const char *name, int round,
			size_t cands, size_t failed, size_t cancelled,
			size_t pruned, const char *best)
{
	size_t n = cands + failed + pruned + cancelled;

	cfl_buf_printf(out, "%s", name);
	if (round > 0)
		cfl_buf_printf(out, ", round %d", round);
	cfl_buf_printf(out, ": %zu candidate%s", n, n == 1 ? "" : "s");
	if (failed)
		cfl_buf_printf(out, ", %zu failed", failed);
	/* stopped at the end of the family's share or the limit: not failed */
	if (cancelled)
		cfl_buf_printf(out, ", %zu cancelled", cancelled);
	if (pruned)
		cfl_buf_printf(out, ", %zu pruned", pruned);
	cfl_buf_printf(out, "%s\n", best);
}

/* The record of a family searched at its own pace (NULL: no room). */
static struct cfl_study_auto_paced *paced(struct cfl_study_auto_view *v,
					  const char *model)
{
	struct cfl_study_auto_paced *p;

	for (size_t i = 0; i < v->n_paced; i++)
		if (!strcmp(v->paced[i].name, model))
			return &v->paced[i];
	if (v->n_paced == CFL_STUDY_MAX_MODELS)
		return NULL;
	p = &v->paced[v->n_paced++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", model);
	return p;
}

/* The family's line for the round that ends, when it asked anything. */
void cfl_study_auto_view_end(struct cfl_study_auto_view *v, struct cfl_buf *out)
{
	char best[sizeof(v->paced[0].shown)] = "";
	size_t n = v->f_cands + v->f_failed + v->f_pruned + v->f_cancelled;

	if (!v->family[0] || v->verbose || !n) {
		v->family[0] = 0;
		v->announced = 0;
		return;
	}
	if (v->f_have_best) {
		struct cfl_study_auto_paced *p = paced(v, v->family);

		best_text(v, v->f_best_proper, v->f_best, v->f_oof, best, sizeof(best));
		/* the family's later candidates at their own pace (the
		 * rounds after the first, not announced): a line when they
		 * improve on this best */
		if (p)
			snprintf(p->shown, sizeof(p->shown), "%s", best);
	}
	family_line(out, v->family, v->round, v->f_cands, v->f_failed,
		    v->f_cancelled, v->f_pruned, best);
	v->family[0] = 0;
	v->announced = 0;
}

/* A candidate of a family at its own pace scored (p its record, counted
 * already): its line when the family's best is new (its first
 * included), with its candidates since the search began. */
static void paced_candidate(struct cfl_study_auto_view *v,
			    struct cfl_study_auto_paced *p,
			    const struct cfl_study_event *ev, struct cfl_buf *out)
{
	char best[sizeof(p->shown)];

	if (v->verbose || isnan(ev->best))
		return;
	best_text(v, ev->best_proper, ev->best, ev->oof, best, sizeof(best));
	if (!strcmp(best, p->shown))
		return;
	memcpy(p->shown, best, sizeof(best));
	family_line(out, p->name, 0, p->cands, p->failed, p->cancelled, p->pruned,
		    best);
}

static void start_family(struct cfl_study_auto_view *v, const char *model,
			 struct cfl_buf *out)
{
	size_t i = 0;

	cfl_study_auto_view_end(v, out);
	/* a family's second turn since the round began: a new round (the
	 * study announces the second round only) */
	while (i < v->n_turns && strcmp(v->turns[i], model))
		i++;
	if (i < v->n_turns) {
		v->round++;
		v->n_turns = 0;
	}
	if (v->n_turns < CFL_STUDY_MAX_MODELS)
		snprintf(v->turns[v->n_turns++], sizeof(v->turns[0]), "%s", model);
	snprintf(v->family, sizeof(v->family), "%s", model);
	v->f_cands = v->f_failed = v->f_pruned = v->f_cancelled = 0;
	v->f_have_best = 0;
}

static void on_phase(struct cfl_study_auto_view *v, const char *text,
		     struct cfl_buf *out)
{
	size_t n = v->family[0] ? strlen(v->family) : 0;
	char model[64];
	int folds;
	size_t trials;

	/* "fcnn: searching for 1.5 s": the family's turn begins */
	if (sscanf(text, "%63[^:]: searching", model) == 1 &&
	    strstr(text, ": searching for ")) {
		start_family(v, model, out);
		v->announced = 1;
		if (v->verbose)
			cfl_buf_printf(out, "%s\n", text);
		return;
	}
	/* "fcnn: 10 candidates in a row ...": the family's own remark */
	if (n && !strncmp(text, v->family, n) && text[n] == ':') {
		if (v->verbose)
			cfl_buf_printf(out, "%s\n", text);
		return;
	}
	cfl_study_auto_view_end(v, out);
	if (!strncmp(text, "another round", 13)) {
		v->round++;
		v->n_turns = 0;
	}
	if (sscanf(text, "bagging the best of each model with %d folds: %zu trials",
		   &folds, &trials) == 2) {
		snprintf(v->phase, sizeof(v->phase), "bags");
		v->last = NULL;
		v->bag_total = trials;
	}
	cfl_buf_printf(out, "%s\n", text);
}

/* 1 when ev is of the family whose announced turn it is. */
static int in_turn(const struct cfl_study_auto_view *v, const char *model)
{
	return v->announced && v->family[0] && !strcmp(v->family, model);
}

static void on_candidate(struct cfl_study_auto_view *v,
			 const struct cfl_study_event *ev, struct cfl_buf *out)
{
	const char *where = ev->oof ? "out of fold" : "on valid";
	struct cfl_study_auto_paced *p;

	if (ev->proper_name)
		v->proper = ev->proper_name;
	if (isnan(ev->score))	/* a failure was told as a trial */
		return;
	v->n_cands++;
	/* every family's count since the search began, turns or not */
	if ((p = paced(v, ev->what))) {
		p->cands++;
		v->last = p->name;
	}
	if (!in_turn(v, ev->what)) {
		if (p)
			paced_candidate(v, p, ev, out);
	} else {
		v->f_cands++;
		if (!isnan(ev->best)) {	/* none yet: its defaults failed,
					 * and its candidates still climb
					 * the rungs */
			v->f_have_best = 1;
			v->f_best = ev->best;
			v->f_best_proper = ev->best_proper;
		}
		v->f_oof = ev->oof;
	}
	if (!v->verbose)
		return;
	if (v->proper && strcmp(v->proper, v->metric) && isfinite(ev->proper))
		cfl_buf_printf(out, "  %s %s: %s %.6f %s, %s %.6f (best %s %.6f)\n",
			       ev->what, ev->hex, v->proper, ev->proper, where,
			       v->metric, ev->score, v->proper, ev->best_proper);
	else
		cfl_buf_printf(out, "  %s %s: %s %.6f %s (best %.6f)\n", ev->what,
			       ev->hex, v->metric, ev->score, where, ev->best);
}

/* A search trial that ended without a score, into a family's counts. */
static void count_fail(enum cfl_trial_status st, int repeat, size_t *cands,
		       size_t *failed, size_t *cancelled, size_t *pruned)
{
	if (st == CFL_TRIAL_PRUNED)
		++*pruned;
	else if (st == CFL_TRIAL_CANCELLED)
		++*cancelled;
	else
		++*failed;
	/* a promotion's: its candidate, counted with the score of its first
	 * rung, counts as failed or cancelled instead, as the search table
	 * has it */
	if (repeat && *cands)
		--*cands;
}

static void on_trial(struct cfl_study_auto_view *v,
		     const struct cfl_study_event *ev, struct cfl_buf *out)
{
	const struct cfl_pool_event *t = ev->trial;
	const char *fail = t->status != CFL_TRIAL_DONE
			   ? cfl_trial_status_name(t->status) : NULL;

	if (ev->fold >= 0 && !fail)
		v->bag_done++;
	/* the search's trials: repeat 0, or a promotion to a higher rung of
	 * rows (repeat 2 and on) */
	if (ev->fold < 0 && ev->repeat != 1 && fail) {
		struct cfl_study_auto_paced *p = paced(v, ev->what);

		/* the family's counts since the search began, and its
		 * turn's when it has one */
		if (p)
			count_fail(t->status, ev->repeat, &p->cands, &p->failed,
				   &p->cancelled, &p->pruned);
		if (in_turn(v, ev->what))
			count_fail(t->status, ev->repeat, &v->f_cands, &v->f_failed,
				   &v->f_cancelled, &v->f_pruned);
	}
	/* without verbose, only a bag's fold or refit that failed (it changes
	 * the bag) */
	if (fail && (v->verbose || ev->fold >= 0 || ev->repeat == 1))
		cfl_buf_printf(out, "  %s %s%s: %s: %s\n", ev->what, ev->hex,
			       ev->fold >= 0 ? " (fold)" : ev->repeat == 1 ? " (refit)"
			       : ev->repeat ? " (a higher rung)" : "",
			       fail, t->reason ? t->reason : "");
	else if (!v->verbose || fail)
		return;
	else if (ev->fold >= 0)
		cfl_buf_printf(out, "  %s %s fold %d: done in %.3f s\n", ev->what,
			       ev->hex, ev->fold, t->result->duration);
	else if (ev->repeat == 1)
		cfl_buf_printf(out, "  %s %s refit on every training row: done in "
			       "%.3f s\n", ev->what, ev->hex, t->result->duration);
	else if (ev->repeat)
		cfl_buf_printf(out, "  %s %s on a higher rung of rows: done in "
			       "%.3f s\n", ev->what, ev->hex, t->result->duration);
}

void cfl_study_auto_view_event(struct cfl_study_auto_view *v,
			       const struct cfl_study_event *ev,
			       struct cfl_buf *out)
{
	switch (ev->kind) {
	case CFL_STUDY_START:
		if (ev->n_done)
			cfl_buf_printf(out, "resuming: %zu trials stored\n", ev->n_done);
		break;
	case CFL_STUDY_PHASE:
		on_phase(v, ev->text, out);
		break;
	case CFL_STUDY_CANDIDATE:
		on_candidate(v, ev, out);
		break;
	case CFL_STUDY_TRIAL:
		on_trial(v, ev, out);
		break;
	case CFL_STUDY_DRAINED:	/* the ensembles next, unless it stopped */
		cfl_study_auto_view_end(v, out);
		if (ev->status == 0 || ev->status == CFL_STUDY_TIME_LIMIT)
			snprintf(v->phase, sizeof(v->phase), "ensembles");
		v->last = NULL;
		break;
	default:
		break;
	}
}
