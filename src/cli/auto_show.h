/*
 * `cfl auto`'s display on stderr (auto_show.c): the lines the study's
 * auto view makes of its events (cfl_study_auto_view: one per family per
 * round, -v: per candidate and fold trial) and, on a terminal, the live
 * line under them, redrawn on every event and tick.  Pass
 * cli_auto_show_event and the state as the study's listener.
 */
#ifndef CFL_CLI_AUTO_SHOW_H
#define CFL_CLI_AUTO_SHOW_H

#include "cfl/study.h"

struct cli_auto_show {
	int quiet, tty, live;	/* live: a live line is drawn */
	int over;		/* ended: no live line any more */
	struct cfl_study_auto_view v;	/* v.metric: the caller sets it */
};

/* Sets sh up: quiet (-q: notes only), verbose (-v), the time limit (s; 0:
 * none) counted from now.  The live line is drawn only when stderr is a
 * terminal and not quiet. */
void cli_auto_show_init(struct cli_auto_show *sh, int quiet, int verbose,
			double time_limit);
/* The study's listener function; ctx is the struct cli_auto_show.  Notes
 * and log lines are shown even with -q. */
void cli_auto_show_event(const struct cfl_study_event *ev, void *ctx);
/* Prints the last family's line and clears the live line for good (the
 * lines that follow are printed plainly); again: a no-op. */
void cli_auto_show_end(struct cli_auto_show *sh);

#endif
