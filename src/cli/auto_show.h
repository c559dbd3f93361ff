/*
 * `cfl auto`'s display on stderr (auto_show.c): the study's events as one
 * line per family per round (-v: per candidate and fold trial) and, on a
 * terminal, a live line with the phase, the family, the candidates, the
 * elapsed time and the time left.  Pass cli_auto_show_event and the state
 * as the study's listener.
 */
#ifndef CFL_CLI_AUTO_SHOW_H
#define CFL_CLI_AUTO_SHOW_H

#include <stddef.h>

#include "cfl/study.h"

struct cli_auto_show {
	int quiet, verbose, tty, live;	/* live: a live line is drawn */
	const char *metric;
	double t0, limit;		/* the run's start, its time limit */
	char phase[16];			/* "search", "bags", "ensembles" */
	int round;
	char turns[CFL_STUDY_MAX_MODELS][64];	/* the families that had
						 * their turn this round */
	size_t n_turns;
	size_t n_cands;			/* candidates scored, all families */
	size_t bag_done, bag_total;	/* fold trials */
	/* the family whose turn it is ("" between turns) */
	char family[64];
	size_t f_cands, f_failed;
	int f_have_best;
	double f_best;
};

/* Sets sh up: quiet (-q: notes only), verbose (-v), the ranking metric's
 * name (not copied), the time limit (s; 0: none) counted from now.  The
 * live line is drawn only when stderr is a terminal and not quiet. */
void cli_auto_show_init(struct cli_auto_show *sh, int quiet, int verbose,
			const char *metric, double time_limit);
/* The study's listener function; ctx is the struct cli_auto_show. */
void cli_auto_show_event(const struct cfl_study_event *ev, void *ctx);
/* A phase the events do not announce begins ("ensembles"). */
void cli_auto_show_phase(struct cli_auto_show *sh, const char *phase);
/* Prints the last family's line and clears the live line. */
void cli_auto_show_end(struct cli_auto_show *sh);

#endif
