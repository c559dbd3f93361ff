/*
 * What `cfl auto` shows on stderr while it runs, driven by the study's
 * events (cfl_study_listener): by default one line per family per round of
 * the search ("fcnn, round 1: 22 candidates, 5 failed, best acc 1.000000
 * on valid"), the round and bagging lines, and on a terminal a live line
 * (phase, family, candidates, elapsed, time left: cli_auto_progress_format)
 * redrawn on every event and tick; with -v a line per candidate and per
 * fold trial instead of the family lines; nothing but notes with -q.
 * Owns the display's state; the study knows nothing of it.
 */
#include "auto_show.h"
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cfl/core.h"

void cli_auto_show_init(struct cli_auto_show *sh, int quiet, int verbose,
			const char *metric, double time_limit)
{
	memset(sh, 0, sizeof(*sh));
	sh->quiet = quiet;
	sh->verbose = verbose;
	sh->tty = !quiet && cli_is_terminal(STDERR_FILENO);
	sh->metric = metric;
	sh->limit = time_limit;
	sh->t0 = cfl_now();
	sh->round = 1;
	snprintf(sh->phase, sizeof(sh->phase), "search");
}

/* Clears the live line (before a line that stays). */
static void clear_live(struct cli_auto_show *sh)
{
	if (sh->live) {
		fputs("\r\033[K", stderr);
		sh->live = 0;
	}
}

static void draw_live(struct cli_auto_show *sh)
{
	struct cli_auto_counts c = {
		.phase = sh->phase, .family = sh->family[0] ? sh->family : NULL,
		.n_cands = sh->n_cands, .done = sh->bag_done,
		.total = sh->bag_total, .elapsed = cfl_now() - sh->t0, .left = -1,
	};
	char line[256];

	if (!sh->tty)
		return;
	if (sh->limit > 0)
		c.left = fmax(0, sh->limit - c.elapsed);
	cli_auto_progress_format(&c, cli_term_width(STDERR_FILENO), line,
				 sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	sh->live = 1;
}

/* A line that stays, the live line redrawn under it. */
static void say(struct cli_auto_show *sh, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(struct cli_auto_show *sh, const char *fmt, ...)
{
	va_list ap;

	clear_live(sh);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	draw_live(sh);
}

/* The family's line for the round that ends, when it asked anything. */
static void flush_family(struct cli_auto_show *sh)
{
	char best[96] = "";

	if (!sh->family[0] || sh->verbose || (!sh->f_cands && !sh->f_failed)) {
		sh->family[0] = 0;
		return;
	}
	if (sh->f_have_best)
		snprintf(best, sizeof(best), ", best %s %.6f on valid", sh->metric,
			 sh->f_best);
	if (sh->f_failed)
		say(sh, "%s, round %d: %zu candidates, %zu failed%s", sh->family,
		    sh->round, sh->f_cands + sh->f_failed, sh->f_failed, best);
	else
		say(sh, "%s, round %d: %zu candidates%s", sh->family, sh->round,
		    sh->f_cands, best);
	sh->family[0] = 0;
}

static void start_family(struct cli_auto_show *sh, const char *model)
{
	size_t i = 0;

	flush_family(sh);
	/* a family's second turn since the round began: a new round (the
	 * study announces the second round only) */
	while (i < sh->n_turns && strcmp(sh->turns[i], model))
		i++;
	if (i < sh->n_turns) {
		sh->round++;
		sh->n_turns = 0;
	}
	if (sh->n_turns < CFL_STUDY_MAX_MODELS)
		snprintf(sh->turns[sh->n_turns++], sizeof(sh->turns[0]), "%s", model);
	snprintf(sh->family, sizeof(sh->family), "%s", model);
	sh->f_cands = sh->f_failed = 0;
	sh->f_have_best = 0;
}

static void on_phase(struct cli_auto_show *sh, const char *text)
{
	size_t n = sh->family[0] ? strlen(sh->family) : 0;
	char model[64];
	int folds;
	size_t trials;

	/* "fcnn: searching for 1.5 s": the family's turn begins */
	if (sscanf(text, "%63[^:]: searching", model) == 1 &&
	    strstr(text, ": searching for ")) {
		start_family(sh, model);
		if (sh->verbose)
			say(sh, "%s", text);
		return;
	}
	/* "fcnn: 10 candidates in a row ...": the family's own remark */
	if (n && !strncmp(text, sh->family, n) && text[n] == ':') {
		if (sh->verbose)
			say(sh, "%s", text);
		return;
	}
	flush_family(sh);
	if (!strncmp(text, "another round", 13)) {
		sh->round++;
		sh->n_turns = 0;
	}
	if (sscanf(text, "bagging the best of each model with %d folds: %zu trials",
		   &folds, &trials) == 2) {
		snprintf(sh->phase, sizeof(sh->phase), "bags");
		sh->bag_total = trials;
	}
	say(sh, "%s", text);
}

static void on_candidate(struct cli_auto_show *sh, const struct cfl_study_event *ev)
{
	if (!sh->family[0] || strcmp(sh->family, ev->what))
		start_family(sh, ev->what);	/* a later round's turn */
	if (isnan(ev->score))	/* a failure was told as a trial */
		return;
	sh->n_cands++;
	sh->f_cands++;
	sh->f_have_best = 1;
	sh->f_best = ev->best;
	if (sh->verbose)
		say(sh, "  %s %s: %s %.6f on valid (best %.6f)", ev->what, ev->hex,
		    sh->metric, ev->score, ev->best);
}

static void on_trial(struct cli_auto_show *sh, const struct cfl_study_event *ev)
{
	const struct cfl_pool_event *t = ev->trial;

	if (ev->fold >= 0 && t->status == CFL_TRIAL_DONE)
		sh->bag_done++;
	if (ev->fold < 0 && !ev->repeat && t->status != CFL_TRIAL_DONE) {
		if (!sh->family[0] || strcmp(sh->family, ev->what))
			start_family(sh, ev->what);
		sh->f_failed++;
	}
	if (!sh->verbose) {
		/* a bag's fold or refit that failed changes the bag: say so */
		if ((ev->fold >= 0 || ev->repeat) && t->status != CFL_TRIAL_DONE)
			say(sh, "  %s %s%s: %s: %s", ev->what, ev->hex,
			    ev->fold >= 0 ? " (fold)" : " (refit)",
			    cfl_trial_status_name(t->status), t->reason ? t->reason : "");
		return;
	}
	if (t->status != CFL_TRIAL_DONE)
		say(sh, "  %s %s%s: %s: %s", ev->what, ev->hex,
		    ev->fold >= 0 ? " (fold)" : ev->repeat ? " (refit)" : "",
		    cfl_trial_status_name(t->status), t->reason ? t->reason : "");
	else if (ev->fold >= 0)
		say(sh, "  %s %s fold %d: done in %.3f s", ev->what, ev->hex,
		    ev->fold, t->result->duration);
	else if (ev->repeat)
		say(sh, "  %s %s refit on every training row: done in %.3f s",
		    ev->what, ev->hex, t->result->duration);
}

void cli_auto_show_event(const struct cfl_study_event *ev, void *ctx)
{
	struct cli_auto_show *sh = ctx;

	if (ev->kind == CFL_STUDY_NOTE) {	/* shown even with -q */
		clear_live(sh);
		fprintf(stderr, "cfl: %s\n", ev->text);
		draw_live(sh);
		return;
	}
	if (sh->quiet)
		return;
	switch (ev->kind) {
	case CFL_STUDY_START:
		if (ev->n_done)
			say(sh, "resuming: %zu trials stored", ev->n_done);
		else
			draw_live(sh);	/* before the first model finishes */
		break;
	case CFL_STUDY_PHASE:
		on_phase(sh, ev->text);
		break;
	case CFL_STUDY_CANDIDATE:
		on_candidate(sh, ev);
		break;
	case CFL_STUDY_TRIAL:
		on_trial(sh, ev);
		draw_live(sh);
		break;
	case CFL_STUDY_TICK:
		draw_live(sh);
		break;
	default:
		break;
	}
}

void cli_auto_show_phase(struct cli_auto_show *sh, const char *phase)
{
	flush_family(sh);
	snprintf(sh->phase, sizeof(sh->phase), "%s", phase);
	if (!sh->quiet)
		draw_live(sh);
}

void cli_auto_show_end(struct cli_auto_show *sh)
{
	if (sh->quiet)
		return;
	flush_family(sh);
	clear_live(sh);
	fflush(stderr);
}
