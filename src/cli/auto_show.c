/*
 * What `cfl auto` shows on stderr while it runs: the lines of the study's
 * auto view (src/study/auto_view.c) and, on a terminal, the live line
 * under them (cfl_auto_progress_format), redrawn on every event and tick;
 * nothing but notes with -q.
 */
#include "auto_show.h"
#include "pool_opts.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void cli_auto_show_init(struct cli_auto_show *sh, int quiet, int verbose,
			double time_limit)
{
	sh->quiet = quiet;
	sh->tty = !quiet && cfl_is_terminal(STDERR_FILENO);
	sh->live = sh->over = 0;
	cfl_study_auto_view_init(&sh->v, verbose, time_limit, cfl_now());
}

/* Clears the live line, then draws it again when draw (on a terminal,
 * until the display ended). */
static void live(struct cli_auto_show *sh, int draw)
{
	char line[256];

	if (sh->live)
		fputs("\r\033[K", stderr);
	sh->live = 0;
	if (draw && sh->tty && !sh->over) {
		cfl_study_auto_view_line(&sh->v, cfl_now(), cfl_term_width(STDERR_FILENO),
					 line, sizeof(line));
		fputs(line, stderr);
		sh->live = 1;
	}
	fflush(stderr);
}

/* Lines that stay, the live line redrawn under them. */
static void say(struct cli_auto_show *sh, const struct cfl_buf *b)
{
	if (b->len) {
		live(sh, 0);
		if (sh->tty) {	/* each line wrapped at the terminal's width */
			char *p = b->data, *nl;

			while ((nl = strchr(p, '\n'))) {
				*nl = 0;
				cli_wrap_stderr(p);
				p = nl + 1;
			}
		} else {
			fwrite(b->data, 1, b->len, stderr);
		}
	}
	live(sh, 1);
}

void cli_auto_show_event(const struct cfl_study_event *ev, void *ctx)
{
	struct cli_auto_show *sh = ctx;
	struct cfl_buf b;

	if (ev->kind == CFL_STUDY_NOTE || ev->kind == CFL_STUDY_LOG) {
		live(sh, 0);	/* shown even with -q */
		cli_study_said("auto", ev);
		live(sh, 1);
		return;
	}
	if (sh->quiet)
		return;
	cfl_buf_init(&b);
	cfl_study_auto_view_event(&sh->v, ev, &b);
	if (ev->kind == CFL_STUDY_DRAINED && strcmp(sh->v.phase, "ensembles"))
		sh->over = 1;	/* stopped: what follows is printed plainly */
	say(sh, &b);
	cfl_buf_release(&b);
}

void cli_auto_show_end(struct cli_auto_show *sh)
{
	struct cfl_buf b;

	if (sh->quiet)
		return;
	cfl_buf_init(&b);
	cfl_study_auto_view_end(&sh->v, &b);
	sh->over = 1;
	say(sh, &b);
	cfl_buf_release(&b);
}
