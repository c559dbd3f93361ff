/*
 * What `cfl auto` shows while it runs, as text (cfl_study_auto_view): the
 * study's events made into the lines that stay -- by default one line per
 * family per round of the search ("fcnn, round 1: 22 candidates, 5 failed,
 * best acc 1.000000 on valid"), the round and bagging lines, a bag's failed
 * fold or refit; with verbose a line per candidate and per fold trial
 * instead of the family lines -- and the counts of the live line (phase,
 * family, candidates, elapsed, time left).  Never prints: src/cli does.
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
		.phase = v->phase, .family = v->family[0] ? v->family : NULL,
		.n_cands = v->n_cands, .done = v->bag_done,
		.total = v->bag_total, .elapsed = now - v->t0, .left = -1,
	};

	if (v->limit > 0)
		c.left = fmax(0, v->limit - c.elapsed);
	return cfl_auto_progress_format(&c, width, line, cap);
}

/* The family's line for the round that ends, when it asked anything. */
void cfl_study_auto_view_end(struct cfl_study_auto_view *v, struct cfl_buf *out)
{
	char best[96] = "", pruned[48] = "", cancelled[48] = "";
	size_t n = v->f_cands + v->f_failed + v->f_pruned + v->f_cancelled;

	if (!v->family[0] || v->verbose || !n) {
		v->family[0] = 0;
		return;
	}
	if (v->f_have_best)
		snprintf(best, sizeof(best), ", best %s %.6f %s", v->metric,
			 v->f_best, v->f_oof ? "out of fold" : "on valid");
	if (v->f_pruned)
		snprintf(pruned, sizeof(pruned), ", %zu pruned", v->f_pruned);
	/* stopped at the end of the family's share or the limit: not failed */
	if (v->f_cancelled)
		snprintf(cancelled, sizeof(cancelled), ", %zu cancelled", v->f_cancelled);
	if (v->f_failed)
		cfl_buf_printf(out, "%s, round %d: %zu candidate%s, %zu failed%s%s%s\n",
			       v->family, v->round, n, n == 1 ? "" : "s", v->f_failed,
			       cancelled, pruned, best);
	else
		cfl_buf_printf(out, "%s, round %d: %zu candidate%s%s%s%s\n", v->family,
			       v->round, n, n == 1 ? "" : "s", cancelled, pruned, best);
	v->family[0] = 0;
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
		v->bag_total = trials;
	}
	cfl_buf_printf(out, "%s\n", text);
}

static void on_candidate(struct cfl_study_auto_view *v,
			 const struct cfl_study_event *ev, struct cfl_buf *out)
{
	if (!v->family[0] || strcmp(v->family, ev->what))
		start_family(v, ev->what, out);	/* a later round's turn */
	if (isnan(ev->score))	/* a failure was told as a trial */
		return;
	v->n_cands++;
	v->f_cands++;
	if (!isnan(ev->best)) {	/* none yet: its defaults failed, and
				 * its candidates still climb the rungs */
		v->f_have_best = 1;
		v->f_best = ev->best;
	}
	v->f_oof = ev->oof;
	if (v->verbose)
		cfl_buf_printf(out, "  %s %s: %s %.6f %s (best %.6f)\n", ev->what,
			       ev->hex, v->metric, ev->score,
			       ev->oof ? "out of fold" : "on valid", ev->best);
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
		if (!v->family[0] || strcmp(v->family, ev->what))
			start_family(v, ev->what, out);
		if (t->status == CFL_TRIAL_PRUNED)
			v->f_pruned++;
		else if (t->status == CFL_TRIAL_CANCELLED)
			v->f_cancelled++;
		else
			v->f_failed++;
		/* a promotion's: its candidate, counted with the score of its
		 * first rung, counts as failed or cancelled instead, as the
		 * search table has it */
		if (ev->repeat && v->f_cands)
			v->f_cands--;
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
		break;
	default:
		break;
	}
}
