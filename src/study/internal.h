/*
 * What the files of src/study share: the study itself (the run, its pool,
 * and tune's search state) and the helpers of the drain loop.  Not a public
 * header: only src/study includes it.
 */
#ifndef CFL_STUDY_INTERNAL_H
#define CFL_STUDY_INTERNAL_H

#include "cfl/study.h"
#include "cfl/net.h"

/* What a repeat trial's events point back to. */
struct study_ref {
	size_t model;
	int repeat, fold;
};

/* One tune candidate. */
struct study_cand {
	int64_t id;
	char hex[9];
	struct cfl_params params;
	size_t n_pending;	/* trials not final yet */
	double *vals;		/* (R) the metric on valid; NaN: failed or not done */
	size_t *iters;		/* (R) the epochs or rounds each search repeat
				 * kept when it stopped early; 0: unknown (a
				 * repeat done before a --resume) or none */
	double score;		/* once told: cfl_metric_candidate_score */
	int told;
	int pruned;		/* the pruner stopped it: no score */
};

/* What a tune trial's events point back to. */
struct study_tref {
	size_t cand;
	int repeat;
};

struct cfl_study {
	const struct cfl_study_plan *plan;
	const struct cfl_data *data;	/* NULL: tune of a command */
	struct cfl_store *st;
	struct cfl_pool *pool;
	int64_t run_id;
	char name[128];
	int resumed;
	int complete;			/* resumed, nothing to do: untouched */
	int grown;			/* resumed with a larger count */
	struct study_ref *refs;		/* repeat: (n_trials) */
	/* tune */
	long num_parallel;		/* the plan's, or the resumed run's */
	long budget;			/* the search's budget: the first
					 * num_search of the run */
	struct cfl_search *search;
	struct cfl_pruner *pruner;	/* --prune: judges each candidate on
					 * its seeds' mean; NULL: none */
	struct study_cand *cands;	/* (num_search) */
	size_t n_cands;
	struct study_tref *trefs;	/* ((num_search + 1) * R) */
	size_t n_trefs;
	struct cfl_metric_row *stored;	/* valid metrics stored (resume) */
	size_t n_stored, n_stored_cands;
	struct cfl_iters_row *iters;	/* iterations trials kept (resume) */
	size_t n_iters;
	double best_score;
	int has_best;
	long best;			/* the candidate refitted, or -1 */
	/* the time limit */
	double deadline;		/* cfl_now() at which to stop; 0: none */
	double finish_by;		/* auto: when its leaderboard's entries
					 * must be built by (0: no limit) */
	int timed_out;			/* the deadline stopped the pool */
	double user_tick, last_user_tick;	/* the caller's tick period */
	double wake_at;			/* cfl_study_wait returns 4 once this
					 * passes (auto's shares); 0: never */
	size_t n_ran;			/* trials submitted by this process */
	size_t n_metrics;		/* the pool's metrics */
	enum cfl_metric_id metrics[CFL_WIRE_MAX_METRICS];
	struct cfl_eta eta;		/* repeat: the time left (eta.c) */
	/* auto */
	struct study_auto *autos;
};

/* Sets se's eta and eta_lower (a repeat's START, TRIAL and TICK events
 * when the caller asked for ticks; else -1), estimated again from the store when the last
 * estimate is older than a quarter of a second (eta.c). */
void study_eta_event(struct cfl_study *s, struct cfl_study_event *se);

/* Whether a model with these params stops early on the validation part:
 * the schema's early-stopping knob (fcnn's patience, gbdt's
 * early_stopping_rounds), given or by default, is not 0.  The knob and its
 * value go to *knob / *value. */
int cfl_study_stops_early(const char *model, const struct cfl_params *params,
			  const char **knob, const char **value);
/* The iterations stored trial trial_id kept (its model stopped early), or
 * 0: from rows (n), as cfl_store_run_iters read them. */
size_t study_stored_iters(const struct cfl_iters_row *rows, size_t n,
			  int64_t trial_id);
/* The params of a refit on train and validation together into out
 * (initialised here): params, and when the model stops early, the
 * early-stopping knob off and the iteration count (fcnn's epochs, gbdt's
 * n_rounds) set to the median of the non-zero counts among iters (what the
 * fits it follows kept), since the refit has no validation part to stop
 * on.  *on_all: 1 when the refit trains on train and validation together;
 * 0 when the model stops early but no count is known (trials run by a cfl
 * that did not store the counts): then it refits on train and stops early
 * on validation.  0, or -1 with err. */
int study_refit_params(const char *model, const struct cfl_params *params,
		       const size_t *iters, size_t n_iters,
		       struct cfl_params *out, int *on_all, struct cfl_err *err);

/* ---- ensembles.c: members from the store ---- */

/* One member: a trial, or the done folds of one (candidate, repeat), their
 * predictions averaged (sum of p / k in trial order). */
struct study_member {
	double *valid, *test, *oof;	/* (n_valid|n_test|n_train, n_out) */
	struct cfl_buf trials;		/* "12" or "12+13+14" */
	int64_t *ids;			/* (n_ids) the same trials */
	size_t n_ids;
	int64_t cand_id;
	size_t n_sets;			/* auto: its bag sets (repeats) */
	/* auto: the bag's refit on every training row, or 0; its test
	 * predictions are the member's (trials lists it last, after the
	 * folds, and ids leaves it out) and its model predicts new rows */
	int64_t refit;
};

struct study_members {
	size_t n, cap;
	struct study_member *m;
};

void study_members_release(struct study_members *ms);
/* The members of run run_id, in (candidate seq, repeat) order: a group of
 * done trials with validation and test predictions each (bagged: only the
 * fold trials of each (candidate, repeat), kept when every fold finished,
 * as auto's ensembles take them).  0, or -1 with err (a database error,
 * predictions of the wrong shape). */
int study_collect(struct cfl_store *st, int64_t run_id,
		  const struct cfl_data *d, size_t n_out, int bagged,
		  struct study_members *ms /* OUT */, struct cfl_err *err);
/* auto: the candidate ids of each family's best bag, by the proper score
 * out of fold over its bag sets, as cfl_study_auto_ensembles chooses them
 * (at most cap into best; *n of them).  0, or -1 with err. */
int study_auto_best_bags(struct cfl_store *st, int64_t run_id,
			 const struct cfl_data *d, enum cfl_metric_id proper,
			 int64_t *best /* OUT */, size_t cap, size_t *n,
			 struct cfl_err *err);
/* The ensemble input over ms and d's labels, as the run builds it; em
 * (ms->n) is filled and pointed to. */
void study_ens_input(const struct cfl_data *d, const struct study_members *ms,
		     struct cfl_ens_member *em, const enum cfl_metric_id *metrics,
		     size_t n_metrics, struct cfl_ens_input *in /* OUT */);
/* The metrics of the run's trials on test, in the order of its first done
 * trial's result; the count, or -1 with err. */
long study_run_metrics(struct cfl_store *st, int64_t run_id,
		       enum cfl_metric_id *out, size_t cap, struct cfl_err *err);

/* tune's metric name ("value" for a command) and its sign. */
const char *cfl_study_metric_name(const struct cfl_study_plan *p);
int cfl_study_sign(const struct cfl_study_plan *p);

/* Calls the listener, if any. */
void cfl_study_emit(const struct cfl_study_listener *ls,
		    struct cfl_study_event *ev);
/* Waits for the pool's next finished trial: 0 with *ev, 1 when idle, 2
 * when interrupted, 3 when the time limit stopped the pool, 4 once
 * wake_at passed (it is then cleared), -1 with err.
 * Ticks go to the listener at the caller's tick period. */
int cfl_study_wait(struct cfl_study *s, const struct cfl_study_listener *ls,
		   struct cfl_pool_event *ev /* OUT */, struct cfl_err *err);
/* The trials the pool runs at once: the slots of every live peer (local
 * workers, remote workers, MPI ranks; they join while the run goes on),
 * at least the local workers asked for, at least 1. */
size_t study_slots(const struct cfl_study *s);
/* Frees tune's search state (a no-op for repeat). */
void cfl_study_tune_release(struct cfl_study *s);
/* Frees auto's state. */
void cfl_study_auto_release(struct cfl_study *s);
/* Training rows (before any validation part is carved) below which auto
 * scores its candidates out of fold, each a bag of --folds fold trials,
 * and holds out no validation part (cfl_study_plan_settle_valid): its fold
 * models train on (K-1)/K of every training row.  AutoGluon bags every
 * model on small data for the same reason: a validation part of a few
 * dozen rows ties most candidates. */
#define STUDY_AUTO_CV_ROWS 10000
/* auto on larger data: the rows its search trains on by default (a
 * sample, when the training rows are more than twice as many) */
#define STUDY_AUTO_SEARCH_ROWS 50000
/* The most bags auto's final selection (greedy) chooses among, the best
 * by their proper score out of fold, and so the most that get more bag
 * sets: a bound on its memory and time (each round tries every bag on
 * every training row), not a choice of quality. */
#define STUDY_AUTO_MAX_BAGS 50
/* 1 when auto scores out of fold on d loaded for p: the training rows and
 * the validation part carved from them (not a --valid file) number fewer
 * than STUDY_AUTO_CV_ROWS; else 0. */
int study_auto_small(const struct cfl_study_plan *p, const struct cfl_data *d);
/* auto on larger data: how a fold's fit seconds grow with its rows
 * (seconds ~ rows^exponent), by model kind, measured (auto.c says how) */
double study_auto_fit_exponent(const char *model);
/* auto on larger data: the wall seconds trials of `work` seconds in all,
 * the longest `longest`, take on `slots` slots, each taken by the first
 * slot free (Graham's bound for list scheduling: work / slots + (1 - 1 /
 * slots) x longest; the ragged end is the longest trial starting as the
 * others end).  It was work / slots + longest with a margin of 1.5 on top:
 * on 18,180 rows (fcnn's default 4.4 s a fit) the bags were set 24 s aside
 * and took 16 s, and the search was left 5 s of 30. */
double study_auto_bags_wall(double work, double longest, double slots);
/* auto on larger data: how one fold trial of a bag on a row sample is
 * sized when a slot frees up (auto.c's lazy_submit; pure, given the clock
 * as `left`).  The estimate of a fold on R rows, in seconds of the search
 * trial's kind, is fit_s * (R / sample)^exponent + pred; ratio turns it
 * into the seconds the trials take. */
struct study_fold_size {
	/* in */
	const char *model;
	int budgeted;		/* the model stops its units at a budget */
	double sample;		/* the rows its search trial fitted */
	double fit_s;		/* that trial's fit seconds (0: not known) */
	double pred;		/* a fold's prediction seconds, estimated */
	double fold_rows;	/* the rows a fold has */
	double share;		/* its share of the bags' time (estimate) */
	double ratio;		/* trials' seconds over their estimates */
	double left;		/* seconds to the pool's deadline */
	size_t n_rem;		/* trials queued, this one included */
	size_t n_this;		/* of them its bag's */
	size_t running, slots;	/* trials running; the pool's slots */
	int starts;		/* the first trial of its bag */
	double least;		/* the least its trial should take
				 * (study_auto_fold_floor); 0: none done */
	/* out */
	double per;		/* its seconds (estimate): its share; the
				 * time left when nothing follows on its
				 * slot (the last round); less when its bag
				 * would not end in time at its share */
	double rows;		/* the rows per allows (at least sample for
				 * a budgeted model, at most fold_rows) */
	double budget;		/* a budgeted model's fit budget (seconds of
				 * the trials); else 0 */
	double est, expect;	/* its estimate at rows; expect = est * ratio,
				 * at least `least` */
	int leave_out;		/* a bag about to start that would not end
				 * in time even so: left out whole */
};
void study_auto_size_fold(struct study_fold_size *f);
/* A bag's fold trial on a row sample that is done: its bag, its seconds
 * and its fit's part of them (NaN: not known). */
struct study_fold_done {
	size_t bag;
	double took, fit;
};
/* The least a fold trial of bag `bag` is expected to take (study_fold_size's
 * least): the least one of its own bag's took, once one is done; before
 * that the least the others' took apart from their fit (data, prediction,
 * metrics: what a fold cut to one tree still pays), not their whole
 * seconds, which say how long their models fit, not how long this one
 * does (linear's and a tree's bags after fcnn's, gbdt's and a forest's
 * were left out on W9 with 6 s to spare, their folds taken to need the
 * 2.6 s of gbdt's quickest).  0: none done. */
double study_auto_fold_floor(const struct study_fold_done *d, size_t n, size_t bag);
/* auto's successive halving on rows (auto.c; ASHA's rule): among the n
 * candidates of a family finished at a rung, their scores there (higher
 * better; NaN: failed, neither counted nor promoted) and promoted[i] 1 for
 * those trained on the next rung already, the one to train on the next
 * rung's rows now: the best not promoted yet among the top
 * floor(n_scored / eta) (n_scored: those with a score; the earlier on
 * ties).  Its index, or -1 when there is none (eta < 2: -1). */
long study_auto_promote(const double *scores, const int *promoted, size_t n,
			unsigned eta);
/* An auto run stored by a cfl that held out a validation part on small
 * data too (its config has no valid_min_rows line) resumes on the split
 * it was made with: p->data.valid_min_rows back to 0; one stored before
 * fcnn stopped early on the validation part (no fcnn_patience line)
 * resumes without it: p->autop.fcnn_patience 0.  Call it after
 * cfl_study_plan_settle_valid; a no-op for other plans, new runs and
 * runs that cannot be read (the resume says why). */
void study_resume_valid(struct cfl_study_plan *p);
/* Stops the pool now as the time limit does (running trials interrupted,
 * queued ones not started); the next cfl_study_wait returns 3. */
void cfl_study_stop_at_limit(struct cfl_study *s);

/* The ensembles of auto: a "bag" row per bagged candidate whose folds all
 * finished (its folds' mean), then mean and stacking over those bags on
 * their out-of-fold predictions, then greedy; trials without folds (the
 * search's) are no members.  With a deadline (cfl_now() seconds; 0: none)
 * greedy comes right after the bags, its rounds stop at the deadline (its
 * members text then ends "; " STUDY_GREEDY_CUT "R of N rounds", which
 * cfl_bundle_build_auto builds it again with), stacking and mean follow
 * when what greedy and a bag took still fits before it (NOTE events say
 * what was cut, and what the entries took).  As cfl_study_ensembles
 * otherwise. */
#define STUDY_GREEDY_CUT "stopped at the time limit after "
/* greedy's members text ends "; " STUDY_GREEDY_BEST "R of N" when its
 * weights are the picks of round R, before the last round it ran: it is
 * stored built again over the bags it picked with R rounds, and so the
 * bundle builds it (a run stored before this text existed has none: it
 * was built again with every round it ran, and so the bundle builds it) */
#define STUDY_GREEDY_BEST "the best at round "
/* Greedy ensemble selection over the in->n_members members em (in->members
 * set to em; in->deadline stopping its rounds), then built again over the
 * members it picked up to its best round with that many rounds and no
 * deadline (the same weights): em (in place), in->n_members and
 * in->greedy_rounds become those, keep[k] the index among the original
 * members of the k-th kept (keep: room for n_members), o the output over
 * them.  cut (cap bytes): STUDY_GREEDY_CUT
 * "R of N rounds" when the deadline stopped it, else ""; best (cap
 * bytes): STUDY_GREEDY_BEST "R of N" when its weights are from a round
 * before the last it ran, else "".  0; 1 when it cannot be built (why
 * says why; o then holds nothing). */
int study_greedy_build(struct cfl_ens_input *in, struct cfl_ens_member *em,
		       size_t *keep, struct cfl_ens_output *o, char *cut, char *best,
		       size_t cap, struct cfl_err *why);
/* The rounds to build greedy again with from its members text: the R of
 * its STUDY_GREEDY_BEST, else of its STUDY_GREEDY_CUT, when below rounds
 * (greedy's rounds); else rounds. */
size_t study_greedy_rounds(const char *members, size_t rounds);
int cfl_study_auto_ensembles(struct cfl_store *st, int64_t run_id,
			     const struct cfl_data *d,
			     const enum cfl_metric_id *metrics, size_t n_metrics,
			     double deadline, const struct cfl_study_listener *ls,
			     struct cfl_err *err);

/* ---- backend.c: where the trials execute (cfl_study_run) ---- */

struct study_backend {
	enum cfl_backend backend;	/* the one in use, after start */
	struct cfl_mpi_job job;		/* mpi */
	int data_loaded;		/* rank 0 loaded the run's data */
	struct cfl_token token;		/* --token-file's */
	int lfd;			/* the bound listener until served, -1 */
	int port;
	struct cfl_tcp *tcp;
	const struct cfl_study_listener *ls;	/* hears CFL_STUDY_LOG */
	char rank_name[64];		/* a worker rank's "rank 1 (host)" */
};

/* The --listen and --token-file checks before any work: 0, or -1 with err
 * and *usage (1: a usage error; 0: the token file cannot be had). */
int study_backend_check(struct study_backend *b, const struct cfl_study_exec *x,
			int *usage, struct cfl_err *err);
/* Chooses the backend and, for mpi, starts the job (rank 0 loads *data:
 * data NULL for tune of a command).  -1 when the caller goes on locally
 * or as the coordinator (p->exec.pool.n_local then 0, b->data_loaded set
 * when *data is loaded); otherwise the CFL_STUDY_RUN_* status to return
 * (RANK with out->exit_code once a rank's own work is over). */
int study_backend_start(struct study_backend *b, struct cfl_study_plan *p,
			struct cfl_data *data, const char *stop_note,
			struct cfl_study_outcome *out, struct cfl_err *err);
/* Listens on --listen early (workers connect while the data loads) and
 * tells the `cfl worker` line.  0, or -1 with err.  No-op without it. */
int study_backend_bind(struct study_backend *b, const struct cfl_study_exec *x,
		       struct cfl_err *err);
/* Joins the remote workers and the MPI ranks to the pool, welcomed with
 * the config of run run_key.  0, or -1 with err. */
int study_backend_join(struct study_backend *b, const struct cfl_study_exec *x,
		       struct cfl_pool *pool, const struct cfl_data_opts *d,
		       const struct cfl_data *data, const char *run_key,
		       struct cfl_err *err);
/* Closes the listener (after the pool closed). */
void study_backend_stop_remote(struct study_backend *b);
void study_backend_release(struct study_backend *b);

/* The pool's on_progress of a tune run with --prune (tune.c): the
 * pruner's decision on a search repeat's intermediate score. */
int study_tune_progress(void *ctx, int64_t trial_id, void *user, size_t step,
			double score, struct cfl_err *err);
/* ... of an auto run (auto.c): its family's pruner's decision on a search
 * candidate's intermediate score (0 when the run does not prune). */
int study_auto_progress(void *ctx, int64_t trial_id, void *user, size_t step,
			double score, struct cfl_err *err);

#endif
