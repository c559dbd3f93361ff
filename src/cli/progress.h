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
	double eta;		/* seconds left (cli_eta_left); < 0: unknown,
				 * shown "--:--" */
	int eta_lower;		/* eta is a lower bound: shown ">00:20" */
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
 *   ("7/30 done (fcnn 3, tree 4), 2 run, 0 fail, 00:03 el, ETA 00:10, best ...");
 *   long words without the best; short words without the models, then
 *   without the best; long, then short words alone; "7/30 00:03 ETA 00:10",
 *   and at last that cut to width - 1.  The elapsed time is in every form.  Returns the line's length in bytes
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

/* ---- the time left of a repeat, from per-model trial times ---- */

#define CLI_ETA_MAX_MODELS 16

/* What the estimate knows of one model's trials. */
struct cli_eta_model {
	size_t queued;		/* not started (queued, interrupted) */
	size_t n_done;		/* done and timed */
	double done_seconds;	/* their durations' sum */
};

/* One running trial: its model's index and how long it has run. */
struct cli_eta_running {
	size_t model;
	double age;
};

/* The seconds left for n_models models of trials and n_run running trials
 * on slots slots: each model's queued trials at its mean trial time, each
 * running trial the rest of that mean (0 when it ran longer), the sum over
 * the slots busy, and no less than the longest rest of a running trial.  A model not timed yet is priced at the age of its
 * oldest running trial, a lower bound (*lower set to 1; else 0); with
 * trials left and neither, the time is unknown: -1. */
double cli_eta_compute(const struct cli_eta_model *m, size_t n_models,
		       const struct cli_eta_running *run, size_t n_run,
		       size_t slots, int *lower /* OUT */);

/* A run's estimate kept up to date from the store: its done trials'
 * durations (a resumed run's stored ones too, so the estimate is there
 * from the first line) and its running trials' start times. */
struct cli_eta {
	struct cfl_store *st;
	long long run_id;
	size_t n_models;
	const char *const *models;	/* (n_models) the caller's */
	double est, at;		/* the estimate and when it was made (est
				 * -1: unknown) */
	int lower;		/* est is a lower bound */
	int made;		/* an update read the store */
};

struct cfl_store;

/* Sets e up for run run_id of st and the models of its plan (names not
 * copied) and makes the first estimate (cli_eta_update). */
void cli_eta_init(struct cli_eta *e, struct cfl_store *st, long long run_id,
		  size_t n_models, const char *const *models, size_t slots,
		  double now);
/* Estimates again from the run's trials as the store holds them now (on a
 * finished trial and on the progress line's tick; now: cfl_now(), the
 * running trials' ages from the wall clock), at most every quarter of a
 * second (a read of every trial: not on each of thousands of quick ones);
 * a store error keeps the last estimate. */
void cli_eta_update(struct cli_eta *e, size_t slots, double now);
/* The seconds left at now, counted down since the estimate was made; -1
 * when unknown.  *lower (may be NULL): 1 when it is a lower bound. */
double cli_eta_left(const struct cli_eta *e, double now, int *lower /* OUT */);

/* "MM:SS" or "H:MM:SS" of s seconds (negative as 0) into out. */
void cli_format_duration(double s, char *out, size_t cap);

#endif
