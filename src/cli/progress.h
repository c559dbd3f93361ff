/*
 * What a person sees on the terminal while a run works: the terminal's width
 * and the live progress line, formatted to fit it.  The commands keep their
 * counts and call cli_progress_format() with them; this file owns no state
 * and never prints, so a study loop with an event callback and the commands
 * of today can both use it.
 */
#ifndef CFL_CLI_PROGRESS_H
#define CFL_CLI_PROGRESS_H

#include <stddef.h>

/* The columns of the terminal on fd: $COLUMNS when it is a positive number
 * (the user's word wins, as for ls and Python), else what the terminal says
 * (TIOCGWINSZ), else 80.  Never 0. */
size_t cli_term_width(int fd);

/* True when fd is a terminal a person looks at: a tty with a size.  The
 * pty Open MPI's mpirun gives its ranks for stdout is a tty of 0 columns:
 * what goes through it lands in mpirun's own stdout, often a pipe, so it
 * is not taken for a terminal. */
int cli_is_terminal(int fd);

/* The counts a progress line shows. */
struct cli_progress_counts {
	size_t done, failed, running, total;	/* trials */
	double elapsed;		/* seconds since the pool started */
	int have_best;		/* best_* below are set */
	const char *best_metric;	/* the first metric's name */
	double best_value;	/* its best value on test so far */
	const char *best_model;
	size_t n_models;	/* per model (0: not shown) */
	const char *const *models;	/* (n_models) names */
	const size_t *model_done;	/* (n_models) trials done */
};

/* Writes into out (cap bytes, NUL-terminated) the progress line for a
 * terminal of width columns: the first of these forms that fits in
 * width - 1 columns (the last column is left free, so the line never wraps
 * on a terminal that wraps at the margin):
 *   "7/30 done (fcnn 3, tree 4), 2 running, 0 failed, 00:03 elapsed, ETA 00:10, best acc 0.9667 (tree)"
 *   the same without the per-model counts; with short words
 *   ("7/30 done (fcnn 3, tree 4), 2 run, 0 fail, ETA 00:10, best ...");
 *   long words without the best; short words without the models, then
 *   without the best; long, then short words alone; "7/30 ETA 00:10", and
 *   at last that cut to width - 1.  Returns the line's length in bytes
 *   (ASCII only when the model names are). */
size_t cli_progress_format(const struct cli_progress_counts *c, size_t width,
			   char *out, size_t cap);

/* What `cfl auto`'s live line shows. */
struct cli_auto_counts {
	const char *phase;	/* "search", "bags", "ensembles" */
	const char *family;	/* search: the family searched, or NULL */
	size_t n_cands;		/* search: candidates scored so far (all
				 * families) */
	size_t done, total;	/* bags: fold trials done of total (total
				 * 0: unknown) */
	double elapsed;		/* seconds since the run started */
	double left;		/* seconds to its time limit (< 0: none) */
};

/* Writes into out (cap bytes) auto's live line for a terminal of width
 * columns, the first form that fits in width - 1 columns:
 *   "auto: search fcnn, 12 candidates so far, 00:03 elapsed, 00:07 left"
 *   "auto: bags 12/25 folds, 00:06 elapsed, 00:04 left"
 *   "auto: ensembles, 00:09 elapsed, 00:01 left"
 * then without "auto: ", with short words ("12 cand", "el", "left"), and
 * at last cut to width - 1.  Returns its length in bytes. */
size_t cli_auto_progress_format(const struct cli_auto_counts *c, size_t width,
				char *out, size_t cap);

/* "MM:SS" or "H:MM:SS" of s seconds (negative as 0) into out. */
void cli_format_duration(double s, char *out, size_t cap);

#endif
