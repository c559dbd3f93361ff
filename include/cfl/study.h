/*
 * cfl study: a run's life as a library, below the commands.  `cfl repeat`,
 * `cfl tune` and `cfl auto` parse options into a plan (struct
 * cfl_study_plan) and make one call, in the manner of git's
 * run_processes_parallel(opts):
 *
 *     cfl_study_plan_init(&plan);   ... the options into plan ...
 *     rc = cfl_study_run(&plan, &hooks, &outcome, &err);
 *
 * which owns every step of every kind of run on every backend (local fork
 * pool, TCP workers on --listen, the ranks of mpirun or srun):
 *
 *   1. the backend: under MPI the ranks start here; rank 0 goes on as the
 *      coordinator, every other process serves it and returns
 *      CFL_STUDY_RUN_RANK (the caller exits at once with its code)
 *   2. hooks.setup (search spaces), the plan's checks, the data load,
 *      the metrics by name (usage errors: CFL_STUDY_RUN_USAGE)
 *   3. the store: a new run, or the one to resume (cfl_study_open)
 *   4. the pool forks, remote workers and ranks join it (the run key)
 *   5. the trials drained with events: repeat's, tune's ask/tell loop,
 *      auto's search and bags; SIGINT and SIGTERM interrupt it
 *   6. the end: every result durable, ensembles, hooks.finished (the
 *      caller prints from the store), the bundle (--save)
 *
 * The steps are public too (cfl_study_open ... cfl_study_finish), for
 * tests and for a caller with its own loop.  The study tells its caller
 * what happens through events (progress is the caller's code, never the
 * study's); it never prints and never exits.  Seeds come from (run seed,
 * trial identity) only, so a run's store contents do not depend on
 * --num-jobs, the backend or timing, and a finished run holds what it
 * takes to rebuild any of its models: each trial's model, params, seed,
 * repeat and fold, and each ensemble's members.
 *
 * Depends on core, data, metrics, models, hpo, ensemble, store and run.
 */
#ifndef CFL_STUDY_H
#define CFL_STUDY_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/backend.h"
#include "cfl/core.h"
#include "cfl/data.h"
#include "cfl/ensemble.h"
#include "cfl/hpo.h"
#include "cfl/metrics.h"
#include "cfl/run.h"
#include "cfl/store.h"

/* ---- the plan: what a run is, stored with it ---- */

#define CFL_STUDY_MAX_MODELS 16

/* What `cfl repeat` trains: each model num_repeat times [x folds]. */
struct cfl_study_repeat_plan {
	size_t n_models;
	const char *models[CFL_STUDY_MAX_MODELS];	/* registered names */
	struct cfl_params params[CFL_STUDY_MAX_MODELS];	/* checked, sorted;
							 * the caller's */
	int folds;		/* 0: no folds; else K >= 2 trials per repeat */
	int bootstrap;		/* fit each trial on a bootstrap sample */
	const char *ensembles;	/* --ensemble list; NULL: the default */
	const char *save;	/* --save: the bundle file to write at the
				 * end; every trial then keeps its model (in
				 * the store, table trial_models); NULL: none */
	int importance;		/* each trial also measures permutation
				 * importance on the validation part (tree
				 * models store impurity importance anyway) */
};

/* What `cfl tune` searches: a model's space, or a command's. */
struct cfl_study_tune_plan {
	const char *model;	/* NULL with command */
	const char *command;	/* "CMD {name} ...", or NULL */
	const struct cfl_space *space;	/* loaded and fixed; the caller's */
	long num_search;
	long num_parallel;	/* candidates in flight */
	int num_parallel_set;	/* given: else a resumed run keeps its own */
	enum cfl_metric_id metric;	/* scored on validation (not command) */
	int maximize;		/* command: which values are better */
	enum cfl_search_method method;
	long grid_points;
	enum cfl_liar liar;
	double timeout;		/* ask no new candidate after this (s); 0: none */
	enum cfl_prune_kind prune;	/* --prune: stop a candidate whose
					 * intermediate validation score (the
					 * mean of its seeds') is poor (fcnn,
					 * gbdt; cfl/hpo.h's pruners); it then
					 * has no score [none] */
	const char *save;	/* --save: the bundle of the refit to write
				 * (its trials keep their models); NULL: none */
};

/* What `cfl auto` does: tune each model family on validation within a
 * share of the time limit (its defaults first, then the GP search over its
 * space), bag each family's best with `folds` folds, and build the mean and
 * constrained stacking of the bags on their out-of-fold predictions. */
struct cfl_study_auto_plan {
	size_t n_models;
	const char *models[CFL_STUDY_MAX_MODELS];	/* registered names */
	const struct cfl_space *spaces[CFL_STUDY_MAX_MODELS];	/* each
							 * model's; the caller's */
	int folds;			/* K >= 2 */
	enum cfl_metric_id metric;	/* ranks candidates and the leaderboard */
	int use_all_time;	/* search round after round until the
				 * search's share of the time ends; 0: stop
				 * after a round that improved no family's
				 * best.  Not part of the stored plan */
	long fcnn_patience;	/* on larger data (a validation part), the
				 * patience an fcnn candidate that sets none
				 * stops early with on that part (auto.c,
				 * early_stop_params); 0: none.  10 for a new
				 * run (cfl_study_plan_init); in the stored
				 * plan, so a run stored without the line (an
				 * older cfl) resumes with 0, as it was made */
	double fcnn_valid_frac;	/* on small data (out of fold, no validation
				 * part), the share of a fold's training rows
				 * such a candidate holds out to stop early
				 * on (fcnn's valid_frac); 0: none.  0.1 for
				 * a new run; stored as fcnn_patience is */
	int refit;		/* --refit: each bag's candidate refit on
				 * every training row once its folds are
				 * done, its bag then predicting with it */
	const char *save;	/* --save: the bundle of the leaderboard to
				 * write at the end; the fold trials then keep
				 * their models; NULL: none */
	long max_trials;	/* --max-trials: a count budget; 0: none.
				 * The search ends after this many candidates
				 * over all the families (their portfolios
				 * first, then rounds of Bayesian optimisation
				 * in turn), each round batch-synchronous, so
				 * that the candidates, the leaderboard and
				 * the bundle depend on the seed only, not on
				 * the workers, their speed or a --resume.
				 * The time limit still stops the run where
				 * it is reached.  Not part of the stored
				 * plan: a --resume may raise it */
	long search_rows;	/* --search-rows: on larger data, the training
				 * rows each search candidate trains on, a
				 * seeded sample (the bags train on every row
				 * their time allows, a larger sample else);
				 * 0: STUDY_AUTO_SEARCH_ROWS when the training
				 * rows are more than twice that, else all;
				 * -1: all.  In the stored plan when given
				 * (a --resume on other rows would mix
				 * scores of other samples) */
	int bag_sets;		/* --bag-sets: on small data, the bag sets
				 * (each K fold models on its own fold
				 * partition, their out-of-fold predictions
				 * averaged) of the bags the final selection
				 * uses; under a time limit the most, as
				 * time allows; 1: one partition for all;
				 * 0: CFL_STUDY_AUTO_BAG_SETS.  Not part of
				 * the stored plan: a --resume may raise it */
	enum cfl_prune_kind prune;	/* --prune (with prune_set): none, or
					 * asha (median is tune's only) */
	int prune_set;		/* 0: the default, none (measured: more
				 * candidates tried, the same first entry;
				 * docs/auto.md).  asha, on larger data under
				 * a time limit: the Bayesian candidates of
				 * fcnn and gbdt stopped by their family's
				 * asha on their validation score while they
				 * train; the defaults and the portfolio
				 * report to it as the reference and are
				 * never stopped.  Pruning depends on the order
				 * the scores arrive: asha under --max-trials
				 * gives up its byte-for-byte runs.  Never on
				 * small data (no validation part).  Not part
				 * of the stored plan */
	int search_rungs;	/* --search-rungs: on larger data under a
				 * time limit (a row sample, no
				 * --max-trials), the rungs of rows of the
				 * search's successive halving, the top one
				 * the sample (1: every candidate on the
				 * sample, no halving; at most
				 * CFL_STUDY_AUTO_MAX_RUNGS); 0: auto.c's
				 * default (3, fewer on a small sample).
				 * In the stored plan when given (a --resume
				 * on another ladder would read its rung
				 * trials at other rows) */
};

/* The most rungs --search-rungs takes */
#define CFL_STUDY_AUTO_MAX_RUNGS 6

/* auto's bag sets when --bag-sets is not given: one, auto as it was
 * before bag sets.  Three sets moved auto's first entry by no more than
 * its standard error on any set measured (20 splits each, docs/auto.md)
 * for three times the bags' trials under a count budget. */
#define CFL_STUDY_AUTO_BAG_SETS 1

/* How a run executes, none of it stored with the run: --resume may change
 * any of it. */
struct cfl_study_exec {
	struct cfl_pool_opts pool;	/* n_local (0: only remote workers),
					 * threads_per_trial, trial_timeout,
					 * max_retries, trials_per_worker, tick;
					 * the study sets the rest */
	int n_local_set;		/* n_local was given: else a worker rank
					 * takes its node's cores divided by the
					 * ranks on the node */
	enum cfl_backend backend;	/* asked for; CFL_BACKEND_AUTO: mpi under
					 * mpirun or srun, tcp with listen,
					 * local else */
	const char *listen;		/* "ADDR:PORT" (port 0: any) for `cfl
					 * worker --connect`, or NULL */
	const char *token_file;		/* the shared secret: TLS 1.3; NULL:
					 * plain TCP, loopback only */
	double heartbeat;		/* s between heartbeats; a worker or
					 * rank silent for 5 is dropped [1] */
	size_t max_workers;		/* remote workers at once [256] */
};

struct cfl_study_plan {
	enum cfl_run_kind kind;		/* CFL_RUN_REPEAT, _TUNE or _AUTO */
	struct cfl_data_opts data;	/* DATA and the data options; the run
					 * seed is data.seed */
	long num_repeat;		/* seeds per model or candidate */
	size_t n_metrics;		/* the metrics of every trial (tune: 0
					 * for the task's defaults; the scored
					 * one is put first when missing) */
	enum cfl_metric_id metrics[CFL_WIRE_MAX_METRICS];
	struct cfl_study_repeat_plan repeat;
	struct cfl_study_tune_plan tune;
	/* where it is stored; none of these is part of the stored plan */
	const char *db;			/* the database; its folder must exist */
	const char *name;		/* NULL: the store picks KIND-YYYYMMDD-HHMMSS */
	const char *resume;		/* the run to finish, or NULL: a new one */
	const char *command_line;	/* stored with a new run or a grown one
					 * ("cfl repeat ...") */
	double time_limit;		/* seconds from `started` for the
					 * whole run, the data's load
					 * included; 0: none.  Not part of
					 * the plan: --resume may change it */
	double started;			/* cfl_now() when the command started;
					 * 0: cfl_study_run sets it at its
					 * start (cfl_study_open alone: its
					 * own start).  Not part of the plan */
	struct cfl_study_auto_plan autop;	/* CFL_RUN_AUTO */
	/* named by the user, resolved by cfl_study_run once the data (and so
	 * the task) is known; a bad name is a usage error */
	const char *metrics_arg;	/* --metrics LIST into metrics; NULL:
					 * repeat takes the task's defaults */
	const char *metric_arg;		/* tune, auto: the scored metric into
					 * tune.metric / autop.metric; NULL:
					 * acc, or mse for a regression */
	struct cfl_study_exec exec;	/* how it runs; not part of the plan */
	char *models_buf;		/* owned: what models[] point into */
};

/* Zeroes p and sets the defaults: repeat, 5 repeats, tune's 10 candidates
 * by bo with the kriging liar, the default database; exec: the pool's
 * defaults (cfl_pool_opts_init), the backend detected, heartbeat 1 s,
 * 256 remote workers. */
void cfl_study_plan_init(struct cfl_study_plan *p);

/* The plan as "key=value" lines, appended to out: stored with the run and
 * compared on resume.  Execution options (workers, timeouts, retries,
 * threads) are not part of it; tune's num_parallel is, since it shapes the
 * search history.  0, or -1 on allocation failure. */
int cfl_study_plan_config(const struct cfl_study_plan *p, struct cfl_buf *out);

/* What the plan needs of the data beyond train and test. */
enum {
	CFL_STUDY_NEEDS_VALID = 1u << 0,	/* a validation part: tune scores
						 * candidates on it, a model
						 * stops early on it (fcnn's
						 * patience, gbdt's
						 * early_stopping_rounds not 0),
						 * ensembles other than mean and
						 * vote are fitted on it (stacking
						 * with folds: on OOF) */
};
/* The CFL_STUDY_NEEDS_* bits of the plan.  The default ensembles count
 * only when the plan trains two models or more (models x repeats). */
unsigned cfl_study_plan_needs(const struct cfl_study_plan *p);
/* The same, and why, as one phrase written into why (at most cap bytes;
 * why may be NULL): "fcnn stops early on it, patience=10", "tune scores
 * its candidates on it", "ensemble 'stacking' is fitted on it without
 * --folds", "nothing in this run uses one". */
unsigned cfl_study_plan_needs_why(const struct cfl_study_plan *p, char *why,
				  size_t cap);
/* Holds out a validation part only when something in the plan uses it:
 * sets p->data.valid_frac to 0 unless the plan needs one, the user chose
 * the fraction (p->data.valid_frac_given) or a --valid file is given, so
 * every model trains on all of train otherwise.  Call it before the data
 * is loaded.  Writes what is held out and why into why (cap bytes), for
 * the run's facts: "0.1 of train: fcnn stops early on it, patience=10",
 * "nothing in this run uses one" (none held out), "--valid-frac 0.2",
 * "from 'v.csv' (--valid)". */
void cfl_study_plan_settle_valid(struct cfl_study_plan *p, char *why,
				 size_t cap);

/* Checks the plan against the loaded data before any work starts (data
 * NULL: tune of a command): --folds no more than the training rows,
 * ensembles that apply to the task, a grid that fits, every {name} of a
 * command in the space.  0, or -1 with err: the caller's usage error. */
int cfl_study_check(const struct cfl_study_plan *p, const struct cfl_data *data,
		    struct cfl_err *err);

/* The shell command of a tune candidate: tmpl with each {name} replaced by
 * the shell-quoted value of parameter name in params, "{{" and "}}" by a
 * brace.  Appends to out; 0, or -1 with err on an unclosed brace or a name
 * that params lacks. */
int cfl_study_substitute(const char *tmpl, const struct cfl_params *params,
			 struct cfl_buf *out, struct cfl_err *err);

/* ---- events: what a study tells its caller ---- */

enum cfl_study_event_kind {
	CFL_STUDY_NOTE,		/* a remark for the user: text */
	CFL_STUDY_START,	/* the trials are queued: n_done, n_todo */
	CFL_STUDY_TRIAL,	/* a trial reached a final state: trial, what */
	CFL_STUDY_TICK,		/* the pool's tick (redraw progress) */
	CFL_STUDY_CANDIDATE,	/* tune: candidate cand was scored */
	CFL_STUDY_TIMEOUT,	/* tune: --timeout ended the search after
				 * n_done candidates */
	CFL_STUDY_PHASE,	/* auto: a phase starts: text ("fcnn:
				 * searching for 5.0 s") */
	/* cfl_study_run's own: */
	CFL_STUDY_LOG,		/* the backend says text, for a person
				 * (shown even when quiet): "listening for
				 * workers; start them with:\n  cfl worker
				 * ...", "worker rank 2 stopped answering" */
	CFL_STUDY_LOADED,	/* the data is loaded: data, text (why a
				 * validation part is held out or not) */
	CFL_STUDY_OPENED,	/* the run is open: text (its name), resumed */
	CFL_STUDY_DRAINED,	/* the drain ended: status (0, or
				 * CFL_STUDY_INTERRUPTED, CFL_STUDY_TIME_LIMIT,
				 * -1 on an error) */
};

struct cfl_study_event {
	enum cfl_study_event_kind kind;
	struct cfl_pool *pool;		/* for cfl_pool_get_stats; NULL
					 * outside the pool's life */
	const char *text;	/* NOTE: "ensemble 'vote' ...; skipped" */
	size_t n_done;		/* START: trials done before (repeat) or
				 * candidates stored (tune), on --resume;
				 * TIMEOUT: candidates asked */
	size_t n_todo;		/* START: trials queued (repeat) */
	/* START, TRIAL, TICK of a repeat whose caller asked for ticks
	 * (exec.pool.tick > 0: it shows a live line): the seconds left,
	 * estimated from each model's stored trial times, done and running
	 * (cfl_eta_compute); < 0: unknown, as on any other tick.  Not set in
	 * the other events.  eta_lower: it is a lower bound (a model not
	 * timed yet, priced at its oldest running trial's age). */
	double eta;
	int eta_lower;
	/* TRIAL: */
	const struct cfl_pool_event *trial;
	const char *what;	/* the model, or tune's candidate hex id */
	int repeat, fold;	/* fold -1: no folds */
	/* CANDIDATE (auto: what is the model, score and best its metric's
	 * values on valid, not signed): */
	size_t cand;		/* 0-based, in asking order */
	const char *hex;	/* its 8-hex id */
	const struct cfl_params *params;
	double score;		/* NaN: every repeat failed */
	double best;		/* the best score so far */
	int oof;		/* auto: score and best are out of fold over
				 * the training rows, not on valid */
	/* CANDIDATE of auto: the proper score that ranks the candidates
	 * (its name, "logloss", or the metric's for regression; NULL: none
	 * given), the candidate's and its family's best's (NaN: none) */
	const char *proper_name;
	double proper, best_proper;
	const struct cfl_data *data;	/* LOADED */
	int resumed;		/* OPENED */
	int status;		/* DRAINED */
};

/* Who hears the events: fn(ev, ctx), called from the study's own thread;
 * ev and what it points to are valid during the call only.  A NULL
 * listener (or fn) hears nothing. */
struct cfl_study_listener {
	void (*fn)(const struct cfl_study_event *ev, void *ctx);
	void *ctx;
};

/* ---- a run ---- */

struct cfl_study;

/* Results of cfl_study_repeat / cfl_study_tune besides 0 and -1. */
#define CFL_STUDY_INTERRUPTED 1
/* The plan's time_limit was reached: the pool was stopped as on
 * cfl_pool_interrupt (running trials recorded interrupted, queued ones not
 * started: --resume runs both), and what finished is kept.  Go on with
 * cfl_study_finish, which builds the ensembles from it. */
#define CFL_STUDY_TIME_LIMIT 2

/* Opens p->db (created when missing) and records a new run (kind, the
 * plan's config, command_line, the dataset's path and SHA-256, the seed),
 * or finds p->resume: it must be of p's kind with the same config and
 * dataset SHA-256 ("cannot resume run 'x': it was started with another
 * plan (models 'a', now 'b'); use the options it was started with:\n
 * cfl ..."), but for the count a finished run may grow by (repeat's
 * num_repeat, tune's num_search): a smaller one is refused ("... a resume
 * can grow it, not shrink it"), a larger one grows the run (its stored
 * config and command become p's, command_line included; see
 * cfl_study_grown), the same one on a complete run changes nothing (see
 * cfl_study_complete).  Otherwise the run is set running again.  data is the loaded dataset (NULL: tune of a command);
 * it and p must outlive the study.  Returns the study (free it), or NULL
 * with err. */
struct cfl_study *cfl_study_open(const struct cfl_study_plan *p,
				 const struct cfl_data *data,
				 struct cfl_err *err);
/* Closes the pool if it is still open (dropping pending work: use
 * cfl_study_finish first), the store, and frees s.  NULL is a no-op. */
void cfl_study_free(struct cfl_study *s);

const char *cfl_study_name(const struct cfl_study *s);	/* the run's name */
int64_t cfl_study_run_id(const struct cfl_study *s);
int cfl_study_resumed(const struct cfl_study *s);	/* 1 on --resume */
/* 1 when the run resumed is complete and this plan asks nothing more of it
 * (repeat: every trial done, the ensembles named by --ensemble stored;
 * tune: finished): cfl_study_open changed nothing in the store, and the
 * caller should stop there (cfl_study_free).  0 otherwise. */
int cfl_study_complete(const struct cfl_study *s);
/* 1 when the resume grew the run (a larger num_repeat or num_search): the
 * stored plan and command became this plan's, the ensembles were dropped
 * for cfl_study_finish to rebuild over every member.  0 otherwise. */
int cfl_study_grown(const struct cfl_study *s);
struct cfl_store *cfl_study_store(struct cfl_study *s);
/* The pool once started, else NULL: join peers to it (remote workers, MPI
 * ranks), interrupt it from a signal handler (cfl_pool_interrupt). */
struct cfl_pool *cfl_study_pool(struct cfl_study *s);

/* Forks the pool.  exec holds the execution options (n_local,
 * threads_per_trial, trial_timeout, max_retries, trials_per_worker, tick);
 * the study sets data, store, run, metrics (tune: the defaults of the
 * task with the scored metric first) and allow_commands (tune of a
 * command only).  0, or -1 with err. */
int cfl_study_start(struct cfl_study *s, const struct cfl_pool_opts *exec,
		    struct cfl_err *err);

/* `cfl repeat`'s trials: model x repeat [x fold], created (or found) in
 * the store in one transaction, done ones kept (--resume), the others
 * submitted, then the pool drained.  Tells START once queued, TRIAL for
 * each finished trial (what: the model), TICK as the pool ticks.  Returns
 * 0 when the pool is idle, CFL_STUDY_INTERRUPTED after cfl_pool_interrupt
 * (the run is marked interrupted), CFL_STUDY_TIME_LIMIT when the plan's
 * time_limit stopped it, or -1 with err. */
int cfl_study_repeat(struct cfl_study *s, const struct cfl_study_listener *ls,
		     struct cfl_err *err);

/* `cfl tune`'s search: asks num_parallel candidates, then one more each
 * time the oldest in flight is told, so the history depends on (seed,
 * num_parallel) only; on --resume the stored trials replay it.  A
 * candidate's score is cfl_metric_candidate_score of its repeats on
 * validation (--command: its values), stored and told to the search.  Then
 * the best (cfl_metric_best_score, the first of the highest) is refitted
 * with num_repeat fresh seeds on the test part (not for a command).  Tells
 * START, TRIAL (what: the candidate's hex id), CANDIDATE and TIMEOUT.
 * Returns 0, CFL_STUDY_INTERRUPTED or -1 with err. */
int cfl_study_tune(struct cfl_study *s, const struct cfl_study_listener *ls,
		   struct cfl_err *err);
/* After cfl_study_tune: the index of the candidate refitted, or -1 when
 * every candidate failed. */
long cfl_study_tune_best(const struct cfl_study *s);
/* Fits the best candidate in this process with the seed of its first refit
 * repeat and saves it to path (a model file for cfl predict).  0, or -1
 * with err (no best candidate, a tune of a command, a fit or write
 * error). */
int cfl_study_tune_save_best(struct cfl_study *s, const char *path,
			     struct cfl_err *err);
/* Writes the bundle of a finished run (cfl/bundle.h) to path: for repeat
 * every done trial's model, a row per model, per model repeat and per
 * ensemble; for tune (after cfl_study_tune) the refit of the best: a row
 * "best" (the mean of the refit seeds) and one per refit ("best#0", ...);
 * for auto (after cfl_study_finish) a row per leaderboard entry (each bag
 * and each ensemble of the bags), the leaderboard's rank 1 the default.
 * 0, or -1 with err (a trial without its kept model: the run was not
 * started with --save; a tune of a command; an auto run with no finished
 * bag; a write error). */
int cfl_study_save_bundle(struct cfl_study *s, const char *path,
			  struct cfl_err *err);

/* The model file of a run: "NAME.cfl" in the database's folder.  Writes at
 * most cap bytes. */
void cfl_study_model_path(const char *db, const char *name, char *out,
			  size_t cap);

/* 1 when the plan's time_limit stopped the run (CFL_STUDY_TIME_LIMIT was
 * returned), else 0. */
int cfl_study_timed_out(const struct cfl_study *s);

/* `cfl auto`'s run (plan kind CFL_RUN_AUTO), within the plan's time_limit
 * counted from the plan's started, or autop.max_trials candidates.
 * On small data (training rows under 10,000) and under a count budget the
 * search goes in rounds: every family's defaults, then one configuration
 * of its portfolio a round (diverse pre-chosen settings), then up to 2
 * candidates of its GP a round; a round is submitted whole and told whole
 * once all of it is final (so the candidates depend on the seed only).  On
 * small data each candidate is a bag of autop.folds fold trials (out-of-
 * fold predictions kept), scored on the out-of-fold predictions of every
 * training row by log loss (regression: the plan's metric); the rounds go
 * on until max_trials or every space is exhausted, or (small data, no
 * count budget) each family goes through its rounds at its own pace until
 * another round would not finish in the time left, its space is
 * exhausted, or it has 300 candidates.  On larger data the
 * candidates are single trials scored on the validation part (log loss
 * there too; regression: the plan's metric): under a count budget in the
 * same rounds, else each
 * family in turn for its share of at most 0.8 of the budget, its defaults
 * first, round after round until a round after the first improves no
 * family's best (autop.use_all_time: until the search's time ends), a
 * candidate still running at the end of its family's share cancelled
 * (once the family has a score); then each family's best is bagged.  With
 * autop.refit each family's best bag is refit on every training row.
 * PHASE events say why the search ended, in one line.  On --resume the
 * stored candidates are replayed (done trials not run again) and the
 * search goes on from them.  Tells START, PHASE, TRIAL (what: the model,
 * hex: the candidate, fold -1 for a search trial on valid), CANDIDATE
 * (score: the plan's metric, out of fold or on valid) and TICK.  Returns 0
 * when the work finished, CFL_STUDY_TIME_LIMIT when the limit stopped it
 * (both: go on with cfl_study_finish, which stores the leaderboard's
 * entries, cfl_study_auto_ensembles), CFL_STUDY_INTERRUPTED, or -1 with
 * err. */
int cfl_study_auto(struct cfl_study *s, const struct cfl_study_listener *ls,
		   struct cfl_err *err);

/* A row of auto's leaderboard: a bag or an ensemble of bags. */
struct cfl_study_auto_row {
	char name[96];		/* "greedy", "mean", "gbdt:1a2b3c4d" */
	char method[32];	/* "bag", "mean", "stacking", "greedy" (and in
				 * runs by an older cfl "top") */
	double cv;		/* the ranking metric on the out-of-fold
				 * predictions of every training row; NaN
				 * when undefined */
	double loss;		/* the proper score out of fold (the summary's
				 * score_metric: log loss for classification,
				 * the metric itself for regression); NaN when
				 * not stored (a run by an older cfl) */
	double valid, test;	/* ... the metric on the validation and test
				 * parts */
	double seconds;		/* the workers' seconds of the trials in it */
	size_t n_trials;
};

/* What auto's search did for one model family. */
struct cfl_study_auto_family {
	char model[64];
	size_t n_cands, n_done, n_failed;	/* n_failed: failed, poison */
	size_t n_cancelled;		/* stopped at the end of its share */
	size_t n_pruned;		/* stopped by its pruner (--prune) */
	char best_hex[9];		/* "" when no candidate has a score */
	char why[96];			/* no score: why ("its default was
					 * cancelled at the time limit after
					 * 9.1 s"); else "" */
	char no_bag[96];		/* a score but no bag in the
					 * leaderboard (larger data): why ("its
					 * folds would not finish in the time
					 * left"); else "" */
	double best_valid;		/* the best's score_metric as the
					 * search ranked it: out of fold
					 * (cv_search), else on valid */
	double seconds;			/* the workers' seconds of its search */
};

struct cfl_study_auto_summary {
	char metric[32];	/* the user's metric, shown beside */
	int sign;
	char score_metric[32];	/* the proper score that ranks: "logloss"
				 * (classification) or metric */
	int score_sign;
	size_t n_unfinished;	/* fold trials the time limit left
				 * interrupted or not started: their bags
				 * are not ranked */
	size_t n_rows;
	/* The leaderboard: `greedy` first (Caruana's ensemble selection by
	 * the proper score out of fold over every bag: it is the rule that
	 * picks, and it picks a single bag where no mix does better), then
	 * the others by their proper score out of fold (loss), then by cv,
	 * then fewer seconds, then name.  No constant in it was fitted to
	 * any data set.  A run by an older cfl (no loss stored) ranks by
	 * cv alone. */
	struct cfl_study_auto_row *rows;
	int cv_search;		/* the search scored its candidates out of
				 * fold (small data), not on the validation
				 * part */
	size_t n_oof;		/* the training rows the oof scores cover */
	/* bag sets (--bag-sets): the bags with more than one whole set, the
	 * most sets a bag has and the folds of each (0 0 0: none) */
	size_t n_set_bags, n_sets, set_folds;
	size_t n_families;
	struct cfl_study_auto_family *families;	/* in search order */
};

/* Reads auto run run_id's leaderboard and search summary from the store
 * (so `cfl auto` and a later reader print the same).  0 with out filled
 * (release it; no rows when nothing was bagged), or -1 with err. */
int cfl_study_auto_summary(struct cfl_store *st, int64_t run_id,
			   struct cfl_study_auto_summary *out /* OUT */,
			   struct cfl_err *err);
void cfl_study_auto_summary_release(struct cfl_study_auto_summary *sum);

/* Commits every result and closes the pool (its peers shut down): after
 * it, the results are durable.  0, or -1 with err.  A no-op when the pool
 * is closed already. */
int cfl_study_close_pool(struct cfl_study *s, struct cfl_err *err);

/* Ends the run after cfl_study_repeat, cfl_study_tune or cfl_study_auto
 * returned 0 or CFL_STUDY_TIME_LIMIT: closes the pool, builds the
 * ensembles (repeat, auto; NOTE events for those skipped; on --resume the
 * stored ones are built again when trials ran), and sets the run done (some
 * trial done; tune: some candidate scored; auto: something to rank),
 * interrupted (a repeat stopped by its time limit: --resume finishes it) or
 * failed.  counts (may be NULL) gets the run's trial counts.  0, or -1
 * with err. */
int cfl_study_finish(struct cfl_study *s, const struct cfl_study_listener *ls,
		     struct cfl_trial_counts *counts /* OUT */,
		     struct cfl_err *err);

/* After an interruption (or a stop before the pool started): closes the
 * pool without waiting for its work, or, when none was started, marks the
 * run interrupted in the store.  0, or -1 with err (the marking failed). */
int cfl_study_stop(struct cfl_study *s, struct cfl_err *err);

/* ---- the one call: a whole run on any backend ---- */

/* What the caller gives cfl_study_run besides the plan. */
struct cfl_study_hooks {
	/* Hears every event (progress, notes, the backend's log lines). */
	struct cfl_study_listener listener;
	/* Optional: on the process that coordinates (rank 0's child under
	 * MPI), before the data loads: the caller's own preparation of the
	 * plan, e.g. loading search spaces.  0, or -1 with err: a usage
	 * error (CFL_STUDY_RUN_USAGE). */
	int (*setup)(struct cfl_study_plan *p, void *ctx, struct cfl_err *err);
	/* Optional: once the run is finished (results durable, ensembles
	 * built, the run's status set), before the bundle is written: the
	 * caller prints from cfl_study_store(s).  0 to go on to the bundle
	 * (--save), 1 when the run has nothing to save (no trial done, an
	 * empty leaderboard), or -1 with err. */
	int (*finished)(struct cfl_study *s, void *ctx, struct cfl_err *err);
	void *ctx;		/* of setup and finished */
	/* Written to stderr (write(2), from a signal handler) when rank 0's
	 * MPI process is told to stop: the job may be killed before the
	 * coordinator says anything.  NULL: nothing. */
	const char *stop_note;
};

/* What cfl_study_run returns. */
enum cfl_study_run_status {
	CFL_STUDY_RUN_DONE = 0,		/* finished: the caller's finished hook
					 * ran, the bundle is written when
					 * asked and the hook returned 0 */
	CFL_STUDY_RUN_FAILED,		/* err says why (see err_how) */
	CFL_STUDY_RUN_USAGE,		/* a usage error in err, found before
					 * any work */
	CFL_STUDY_RUN_COMPLETE,		/* --resume of a complete run that this
					 * plan does not grow: nothing done */
	CFL_STUDY_RUN_INTERRUPTED,	/* SIGINT or SIGTERM: what finished is
					 * stored, the run marked interrupted */
	CFL_STUDY_RUN_RANK,		/* this process served an MPI job (a
					 * worker rank, or a rank's MPI process)
					 * and is done: the caller ends it at
					 * once with _exit(exit_code), printing
					 * nothing */
};

enum {
	CFL_STUDY_SAY_PLAIN = 0,	/* err as any error: "cfl: msg" */
	CFL_STUDY_SAY_CMD,		/* the backend's: "cfl CMD: msg" */
	CFL_STUDY_SAY_NOTHING,		/* said already, or by another rank */
};

struct cfl_study_outcome {
	char name[128];		/* the run's name; "" when none was opened */
	int64_t run_id;
	int started;		/* the pool started (an interruption before:
				 * the run is only marked interrupted) */
	int timed_out;		/* the plan's time limit stopped the run */
	struct cfl_trial_counts counts;	/* after the finish */
	long best;		/* tune: the candidate refitted, or -1 */
	char model_path[1024];	/* tune: the best's model file written, or "" */
	int bundle_written;	/* --save's file is written */
	int err_how;		/* FAILED, USAGE: CFL_STUDY_SAY_* */
	int exit_code;		/* RANK: what to _exit with */
	char launcher[64];	/* "mpirun -n 3 " (or "srun -n 3 ") on rank 0
				 * of an MPI job, for a resume hint; else "" */
	int port;		/* the port bound for --listen, or 0 */
	int signalled;		/* FAILED while SIGINT or SIGTERM stopped it */
};

/* Runs plan p from start to end (the steps at the top of this file):
 * chooses and starts the backend, runs hooks->setup, checks the plan,
 * loads the data, resolves the metric names, opens or resumes the run,
 * starts the pool with the remote workers (--listen, TLS with a token
 * file) or MPI ranks joined, drains it (repeat, tune or auto) with events
 * to hooks->listener, catches SIGINT and SIGTERM for the drain, finishes
 * the run, calls hooks->finished and writes the bundle of --save.  p is
 * updated (the validation fraction settled, the metrics resolved, a
 * coordinating rank 0's n_local set to 0).  Returns a CFL_STUDY_RUN_*
 * status with *out filled (and err for FAILED and USAGE).  Never prints,
 * never exits, but for one thing: under MPI, a lost job may end with
 * MPI_Abort once every result is stored (the message goes to the
 * listener first). */
int cfl_study_run(struct cfl_study_plan *p, const struct cfl_study_hooks *hooks,
		  struct cfl_study_outcome *out /* OUT */, struct cfl_err *err);

/* The rank this process will have in the MPI job backend (as asked; AUTO:
 * detected) would start, as the launcher's environment tells before MPI
 * starts: 0 or more; -1 when the backend will not be mpi; -2 when it will
 * but the launcher is not one cfl knows (mpirun, srun).  A worker rank
 * (> 0) takes the run from rank 0: it needs neither DATA nor, with
 * --resume NAME, the database. */
long cfl_study_launch_rank(enum cfl_backend backend);
/* Why `--resume NAME` without DATA is refused when the rank is -2. */
extern const char cfl_study_resume_msg[];
/* The rank (> 0) of this process when a launcher (mpirun, srun) started
 * it as one of two ranks or more, else 0: a command with nothing to spread
 * runs on rank 0 only. */
long cfl_study_launched_rank(void);

/* ---- the command line a run stores (--resume NAME alone replays it) ---- */

/* Appends "cfl ARGS..." to b, each argument quoted for /bin/sh when needed;
 * with skip_resume, "--resume NAME" and "--resume=NAME" are left out (the
 * command a grown run stores, which `--resume NAME` alone replays). */
void cfl_study_command_line(int argc, char **argv, int skip_resume,
			    struct cfl_buf *b);
/* Splits a line written by cfl_study_command_line into a NULL-terminated
 * argv in one malloc'd block (free() it); NULL when malformed or out of
 * memory. */
char **cfl_study_split_command(const char *cmd, int *argc_out /* OUT */);
/* For `cfl CMD --resume NAME` alone: reads run NAME's stored command from
 * db and returns argv[0], the stored arguments after "cfl CMD", then
 * argv[1..]: a malloc'd array (free() it and *words).  NULL with err when
 * the run is missing or was not started by cfl CMD. */
char **cfl_study_stored_argv(const char *cmd, const char *db, const char *name,
			     int argc, char **argv, int *new_argc /* OUT */,
			     char ***words /* OUT */, struct cfl_err *err);

/* ---- the models and params a command line names ---- */

/* 0 when model name is registered, else -1 with "unknown model 'x'
 * (known: fcnn, linear, ...)". */
int cfl_study_model_check(const char *name, struct cfl_err *err);
/* Sets the models of p (repeat's, or auto's for CFL_RUN_AUTO: set p->kind
 * first) from list ("fcnn,tree"): each registered, none twice, at most
 * CFL_STUDY_MAX_MODELS, not empty; auto refuses 'baseline' (nothing to
 * tune) and skips a family not built in when the list is not given (the
 * default).  The names point into a copy p owns (cfl_study_plan_release).
 * 0, or -1 with err (a usage error). */
int cfl_study_plan_models(struct cfl_study_plan *p, const char *list, int given,
			  struct cfl_err *err);
/* repeat's --set values, each "MODEL.KEY=VALUE" (or "KEY=VALUE" with one
 * model), into the models' params, sorted and checked against each
 * model's schema.  0, or -1 with err (a usage error). */
int cfl_study_plan_sets(struct cfl_study_plan *p, const char *const *sets,
			size_t n_sets, struct cfl_err *err);
/* tune's search space: loaded from path (checked against the model's
 * schema; a command's: any names), each of --set's "KEY=VALUE" fixed in
 * it, then set as p->tune.space (the caller's space, initialised, to
 * release).  0, or -1 with err (a usage error). */
int cfl_study_tune_space(struct cfl_study_plan *p, struct cfl_space *space,
			 const char *path, const char *const *sets,
			 size_t n_sets, struct cfl_err *err);
/* Frees what the models and sets above made p own. */
void cfl_study_plan_release(struct cfl_study_plan *p);

/* ---- ensembles from the store ----
 * A run's done trials become members (one trial, or with folds the folds of
 * one (model, repeat) averaged, their out-of-fold predictions put together
 * over d->train's rows for stacking); src/ensemble combines them; each
 * ensemble is stored like a result (metrics and predictions on validation
 * and test) named after its method, repeat -1, so the table printed from
 * the store shows one row per ensemble.  Labels and shapes come from d;
 * d->test's labels only score the finished ensembles. */

/* The default ensembles of `cfl repeat`, built when there are two trained
 * models or more (repeats x models), none otherwise: mean, and stacking
 * too when the members have out-of-fold predictions (--folds).  Without
 * folds the default fits nothing, so it holds out no validation rows: a
 * meta-learner fitted on a few validation rows can lose badly to the
 * plain mean. */
#define CFL_STUDY_ENSEMBLE_DEFAULT "mean,stacking"

/* Checks a method mask (cfl_ensemble_parse_list) against the task before
 * any training starts: vote needs classification (n_classes > 0).  0, or
 * -1 with err. */
int cfl_study_check_ensembles(unsigned methods, int n_classes,
			      struct cfl_err *err);

/* Builds every method of the mask over run run_id's done trials, scored
 * with metrics, and stores each; one already stored (a resumed run) is
 * kept.  An ensemble that cannot be built (no member with predictions, a
 * failed fit) is skipped with a NOTE event ("<why>; skipped").  0 (also
 * when methods is 0 or nothing was built), or -1 with err on a database
 * error or stored predictions whose shape does not match d. */
int cfl_study_ensembles(struct cfl_store *st, int64_t run_id,
			const struct cfl_data *d,
			const enum cfl_metric_id *metrics, size_t n_metrics,
			unsigned methods, const struct cfl_study_listener *ls,
			struct cfl_err *err);

/* The ensembles step of `cfl repeat`: builds the ensembles named in
 * methods ("mean,stacking", "none"; NULL: CFL_STUDY_ENSEMBLE_DEFAULT, then
 * only with two members or more, and stacking only when every member has
 * out-of-fold predictions) with the run's metrics (those its first
 * done trial stored on test, in their order), as cfl_study_ensembles.  0
 * (also when no trial is done), or -1 with err: an unknown method, vote on
 * a regression, a database error. */
int cfl_study_ensembles_for_run(struct cfl_store *st, int64_t run_id,
				const struct cfl_data *d, const char *methods,
				const struct cfl_study_listener *ls,
				struct cfl_err *err);

/* ---- what cfl auto shows while it runs (auto_view.c) ---- */

/* auto's display as text, fed the study's events: the lines that stay (by
 * default one per family per round of the search, "fcnn, round 1: 22
 * candidates, 5 failed, best acc 1.000000 on valid", the round and bagging
 * lines and a bag's failed fold or refit; verbose: a line per candidate
 * and per fold trial instead of the family lines) and the live line's
 * counts.  Never prints: the caller shows what it returns. */
struct cfl_study_auto_view {
	int verbose;
	const char *metric;	/* the ranking metric's name (not copied):
				 * the caller sets it once the study
				 * resolved it (CFL_STUDY_OPENED) */
	double t0, limit;	/* the run's start (cfl_now()), its limit */
	char phase[16];		/* "search", "bags", "ensembles" */
	int round;
	char turns[CFL_STUDY_MAX_MODELS][64];	/* the families that had
						 * their turn this round */
	size_t n_turns;
	size_t n_cands;		/* candidates scored, all families */
	size_t bag_done, bag_total;	/* fold trials */
	char family[64];	/* whose turn it is ("" between turns) */
	int announced;		/* the study announced the turn ("fcnn:
				 * searching for 1.5 s") */
	size_t f_cands, f_failed, f_pruned, f_cancelled;
	int f_have_best;
	double f_best, f_best_proper;	/* the metric, the proper score */
	const char *proper;	/* the proper score's name (NULL: the metric
				 * alone), from the candidates' events */
	int f_oof;		/* f_best is out of fold, not on valid */
	/* Families searched at their own pace (no turn announced: the
	 * small-data path, a count budget), whose candidates come
	 * interleaved: a line each time one's best improves, counting its
	 * candidates since the search began. */
	struct cfl_study_auto_paced {
		char name[64];
		size_t cands, failed, pruned, cancelled;
		char shown[160];	/* the best as last shown ("": none
					 * yet): a best no better at the
					 * digits shown is not shown again */
	} paced[CFL_STUDY_MAX_MODELS];
	size_t n_paced;
	const char *last;	/* the paced family scored last (a name in
				 * paced[]): the live line's, between turns */
};

/* Sets v up: verbose, the time limit (s; 0: none) counted from now. */
void cfl_study_auto_view_init(struct cfl_study_auto_view *v, int verbose,
			      double time_limit, double now);
/* Takes in one event (NOTE and LOG are the caller's to show) and appends
 * to out the lines it makes, each ending in '\n' (none for most events).
 * At CFL_STUDY_DRAINED the last family's line, and the phase becomes
 * "ensembles" when the run goes on to them. */
void cfl_study_auto_view_event(struct cfl_study_auto_view *v,
			       const struct cfl_study_event *ev,
			       struct cfl_buf *out);
/* The turn of the family searched ends: its line into out, if any. */
void cfl_study_auto_view_end(struct cfl_study_auto_view *v, struct cfl_buf *out);
/* The live line at now (cfl_now()) for a terminal of width columns
 * (cfl_auto_progress_format) into line; its length in bytes. */
size_t cfl_study_auto_view_line(const struct cfl_study_auto_view *v, double now,
				size_t width, char *line, size_t cap);

#endif
