/*
 * cfl store: the SQLite database of runs, candidates, trials, metrics,
 * predictions and ensembles (default reports/cfl.db; schema in docs/database.md).
 *
 * src/store is the only code that includes sqlite3.h.  The coordinator alone
 * writes; workers never open the database.  Every state change is one
 * transaction (a trial's result = status + metrics + predictions together),
 * so a crash or kill -9 at any moment leaves a consistent database: a trial
 * is either done with all its metrics and predictions, or not done at all.
 * Functions may nest inside cfl_store_begin / cfl_store_commit to batch many
 * changes into one transaction (e.g. creating 10,000 trials).
 *
 * Unless said otherwise, functions return 0 on success and -1 with err
 * filled ("database 'reports/cfl.db': ...") on failure; on failure nothing
 * of the call is written.  IDs are SQLite rowids (> 0).
 */
#ifndef CFL_STORE_H
#define CFL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"

/* The schema version this code writes (PRAGMA user_version and meta). */
#define CFL_STORE_SCHEMA_VERSION 3
/* The default database of the commands (its folder is the caller's job). */
#define CFL_STORE_DEFAULT_PATH "reports/cfl.db"

struct cfl_store;	/* opaque: one open database */

/* ---- enums, stored as the text their _name() gives ---- */

enum cfl_run_kind { CFL_RUN_REPEAT, CFL_RUN_TUNE, CFL_RUN_AUTO };

enum cfl_run_status {
	CFL_RUN_RUNNING,
	CFL_RUN_DONE,
	CFL_RUN_FAILED,
	CFL_RUN_INTERRUPTED,
};

/* A trial's life: queued -> running (leased, attempt n) -> done | failed |
 * poison; a failed attempt that will be retried goes back to queued; Ctrl-C
 * turns running into interrupted (run again by --resume).  The caller may
 * stop a running trial: cancelled (auto's time limit; not a failure) or
 * pruned (its intermediate score was poor: step and score in
 * trial_pruned, cfl_store_trial_pruned). */
enum cfl_trial_status {
	CFL_TRIAL_QUEUED,
	CFL_TRIAL_RUNNING,
	CFL_TRIAL_DONE,
	CFL_TRIAL_FAILED,
	CFL_TRIAL_POISON,
	CFL_TRIAL_INTERRUPTED,
	CFL_TRIAL_CANCELLED,
	CFL_TRIAL_PRUNED,
};

/* The parts a trial is scored on.  OOF: out-of-fold predictions of a
 * --folds trial (rows of the training part, see struct cfl_split_result). */
enum cfl_store_split { CFL_SPLIT_VALID, CFL_SPLIT_TEST, CFL_SPLIT_OOF, CFL_SPLIT_COUNT };

/* The part of a run a trial belongs to: a trial of `cfl repeat`, of a
 * candidate during a search (tune, auto), or of the best candidate trained
 * again after it (tune's refit with fresh seeds, auto's bags on folds). */
enum cfl_trial_phase { CFL_PHASE_REPEAT, CFL_PHASE_SEARCH, CFL_PHASE_REFIT };

/* "repeat"/"tune"/"auto", "running"/"done"/..., "valid"/"test"/"oof",
 * "repeat"/"search"/"refit". */
const char *cfl_run_kind_name(enum cfl_run_kind k);
const char *cfl_run_status_name(enum cfl_run_status s);
const char *cfl_trial_status_name(enum cfl_trial_status s);
const char *cfl_store_split_name(enum cfl_store_split s);
const char *cfl_trial_phase_name(enum cfl_trial_phase p);
/* The enum value of name, or -1 when unknown. */
int cfl_store_split_lookup(const char *name);

/* ---- opening ---- */

enum cfl_store_mode {
	CFL_STORE_CREATE,	/* read-write; creates the file (not its folder) */
	CFL_STORE_READONLY,	/* the file must exist; no writes (cfl runs, report) */
};

/* Opens (creating when mode is CFL_STORE_CREATE) the database at path, sets
 * WAL, foreign keys and a busy timeout, and creates or checks the schema.
 * Returns the store, or NULL with err filled when: the folder does not exist
 * ("cannot open database 'x/cfl.db': folder 'x' does not exist"), path is a
 * folder, the file is not an SQLite database, it is an SQLite database of
 * another program (no cfl meta table), or its schema version is newer than
 * CFL_STORE_SCHEMA_VERSION ("... was written by a newer cfl (schema 3 > 2)").
 * An older schema is migrated in place, in one transaction, whatever the
 * mode (a read-only open migrates through a read-write handle first);
 * when that fails (e.g. a file it may not write), nothing changes and NULL
 * is returned with err saying so.  The caller creates reports/ for the
 * default path. */
struct cfl_store *cfl_store_open(const char *path, enum cfl_store_mode mode,
				 struct cfl_err *err);
/* Closes the database (checkpointing the WAL).  NULL is a no-op. */
void cfl_store_close(struct cfl_store *st);
/* The path given to cfl_store_open. */
const char *cfl_store_path(const struct cfl_store *st);

/* Batches every following call into one transaction until cfl_store_commit
 * (nestable: only the outermost commit writes).  A call that fails inside a
 * batch undoes only itself.  cfl_store_rollback undoes the whole batch; so
 * does a failed cfl_store_commit, and cfl_store_close of a store with a
 * batch still open.  A struct cfl_store is for one thread. */
int cfl_store_begin(struct cfl_store *st, struct cfl_err *err);
int cfl_store_commit(struct cfl_store *st, struct cfl_err *err);
void cfl_store_rollback(struct cfl_store *st);

/* ---- runs ---- */

/* A run.  For cfl_store_run_create the caller fills name..seed (strings it
 * owns; command/config/dataset may be NULL = empty); the store sets the
 * rest.  Filled by the reading functions below, every string is malloc'd and
 * freed by cfl_run_info_release. */
struct cfl_run_info {
	int64_t id;
	char *name;		/* unique in the database */
	enum cfl_run_kind kind;
	char *command;		/* the command line as typed */
	char *config;		/* the plan as "key=value" lines (models, repeats, metrics, ...) */
	char *dataset;		/* dataset path as given */
	char dataset_sha256[65];/* lowercase hex of the file's SHA-256 ("" if unknown) */
	uint64_t seed;		/* the run seed (stored as its int64 bit pattern) */
	char version[32];	/* cfl version that created the run (CFL_VERSION) */
	enum cfl_run_status status;
	double created;		/* wall-clock epoch seconds */
	double finished;	/* 0 while running or never finished */
};

void cfl_run_info_release(struct cfl_run_info *r);

/* Records a new run with status running and created = now.  Fails ("run
 * 'x' already exists in 'db'; use --resume x or another --name") when the
 * name is taken, or when name is empty. */
int cfl_store_run_create(struct cfl_store *st, const struct cfl_run_info *info,
			 int64_t *run_id /* OUT */, struct cfl_err *err);
/* cfl_store_run_create under a default name "KIND-YYYYMMDD-HHMMSS" (UTC,
 * now), with "-2", "-3", ... appended when that is taken; info->name is
 * ignored.  The name is picked in the transaction that inserts the run, so
 * runs started at the same moment on one database get different names.
 * name gets it (at most cap-1 bytes; 64 is plenty). */
int cfl_store_run_create_default(struct cfl_store *st,
				 const struct cfl_run_info *info,
				 char *name /* OUT */, size_t cap,
				 int64_t *run_id /* OUT */, struct cfl_err *err);

/* Looks a run up by name (cfl_store_run_find) or id (cfl_store_run_get), or
 * the most recently created run (cfl_store_run_latest).  Returns 0 and fills
 * out (release with cfl_run_info_release); 1 when there is no such run (err
 * says "no run 'x' in 'db'" / "no runs in 'db'"; out is zeroed); -1 on a
 * database error. */
int cfl_store_run_find(struct cfl_store *st, const char *name,
		       struct cfl_run_info *out /* OUT */, struct cfl_err *err);
int cfl_store_run_get(struct cfl_store *st, int64_t run_id,
		      struct cfl_run_info *out /* OUT */, struct cfl_err *err);
int cfl_store_run_latest(struct cfl_store *st,
			 struct cfl_run_info *out /* OUT */, struct cfl_err *err);
/* What a command that reads one run does first: opens the database at path
 * read-only and looks up the run named name, or the latest run when name
 * is NULL, into *run (cfl_run_info_release it).  Returns the store (close
 * it), or NULL with err (no database, no such run: as above). */
struct cfl_store *cfl_store_open_run(const char *path, const char *name,
				     struct cfl_run_info *run /* OUT */,
				     struct cfl_err *err);

/* Sets a run's status: running clears finished (used by --resume), any
 * other status sets finished = now. */
int cfl_store_run_set_status(struct cfl_store *st, int64_t run_id,
			     enum cfl_run_status status, struct cfl_err *err);
/* cfl_store_run_set_status with done / failed. */
int cfl_store_run_finish(struct cfl_store *st, int64_t run_id,
			 enum cfl_run_status status, struct cfl_err *err);

/* Deletes the run's ensembles (with their metrics and predictions), so
 * that a resumed run that trained more builds them again.  0 (also when
 * there were none), or -1 with err. */
int cfl_store_ensembles_delete(struct cfl_store *st, int64_t run_id,
			       struct cfl_err *err);

/* A finished run grows (--resume with a larger --num-repeat or
 * --num-search): in one transaction, its config and command become the
 * given ones (NULL: empty) and its ensembles are deleted, to be rebuilt
 * over every member. */
int cfl_store_run_grow(struct cfl_store *st, int64_t run_id, const char *config,
		       const char *command, struct cfl_err *err);

/* Ctrl-C: in one transaction, every running trial of the run becomes
 * interrupted (its attempt recorded in trial_attempts with reason
 * "interrupted") and the run interrupted (finished = now).  Queued, done,
 * failed and poison trials are kept as they are. */
int cfl_store_mark_interrupted(struct cfl_store *st, int64_t run_id,
			       struct cfl_err *err);

/* A run with its trial counts, for `cfl runs`. */
struct cfl_run_summary {
	struct cfl_run_info info;
	size_t n_trials, n_done, n_failed;	/* n_failed counts failed + poison */
	size_t n_cancelled, n_pruned;
};

/* Every run, oldest first, into a malloc'd array (*n_runs may be 0, then
 * *runs may be NULL).  Free with cfl_run_summaries_free. */
int cfl_store_runs_list(struct cfl_store *st,
			struct cfl_run_summary **runs /* OUT */,
			size_t *n_runs /* OUT */, struct cfl_err *err);
void cfl_run_summaries_free(struct cfl_run_summary *runs, size_t n_runs);

/* ---- candidates: (model, params) of a run ---- */

/* The 8-hex id of a candidate: the first 8 hex digits of
 * SHA-256("model|k1=v1,k2=v2") with the params sorted by key (params may be
 * NULL or empty: "model|").  Pure; same inputs, same id, on every machine. */
void cfl_candidate_hex(const char *model, const struct cfl_params *params,
		       char hex[9] /* OUT */);

/* Returns the candidate of (run, model, params) (params compared sorted),
 * adding it when new.  cand_id and hex (may be NULL) are filled.  The
 * params are stored as a JSON object, keys sorted (numbers as numbers).  seq is the order of
 * addition in the run (0, 1, ...): the order a search proposed them. */
int cfl_store_candidate_get_or_add(struct cfl_store *st, int64_t run_id,
				   const char *model,
				   const struct cfl_params *params,
				   int64_t *cand_id /* OUT */,
				   char hex[9] /* OUT, may be NULL */,
				   struct cfl_err *err);
/* Records the value a search gave the candidate (its objective); NaN clears
 * it. */
int cfl_store_candidate_set_score(struct cfl_store *st, int64_t cand_id,
				  double score, struct cfl_err *err);

struct cfl_candidate_info {
	int64_t id;
	size_t seq;
	char model[64];
	char hex[9];
	char *params;		/* "k=v,..." sorted, malloc'd ("" when none):
				 * for display; a value may hold ',' */
	struct cfl_params kv;	/* the same pairs, sorted by key */
	int has_score;
	double score;		/* when has_score */
	size_t n_trials, n_done, n_failed;	/* n_failed: failed + poison */
	size_t n_pruned;
};

/* The candidates of a run in seq order; free with cfl_candidates_free. */
int cfl_store_candidates(struct cfl_store *st, int64_t run_id,
			 struct cfl_candidate_info **cands /* OUT */,
			 size_t *n_cands /* OUT */, struct cfl_err *err);
void cfl_candidates_free(struct cfl_candidate_info *cands, size_t n_cands);

/* ---- trials ---- */

/* The stored state of one trial. */
struct cfl_trial_state {
	int64_t id;
	enum cfl_trial_status status;
	int attempt;		/* last attempt leased (0: never leased) */
};

/* Returns the trial (candidate, repeat, fold) of a run, creating it queued
 * when new (fold -1 = no folds), in phase repeat in a repeat run, search
 * in a tune or auto run.  Idempotent: on --resume it returns the existing trial with
 * its status (its stored phase kept) so done trials are not run again.  Fails
 * when an existing trial has another seed ("trial ... was stored with seed
 * X, not Y": the plan changed). */
int cfl_store_trial_ensure(struct cfl_store *st, int64_t run_id,
			   int64_t cand_id, int repeat, int fold,
			   uint64_t seed, struct cfl_trial_state *out /* OUT */,
			   struct cfl_err *err);
/* cfl_store_trial_ensure creating the trial in the phase given (a tune's
 * refit, auto's bags). */
int cfl_store_trial_ensure_in(struct cfl_store *st, int64_t run_id,
			      int64_t cand_id, int repeat, int fold,
			      uint64_t seed, enum cfl_trial_phase phase,
			      struct cfl_trial_state *out /* OUT */,
			      struct cfl_err *err);

/* A trial was handed to a worker: status running, attempt, worker (free
 * text, e.g. "local:3" or "host:pid"; may be NULL), started = now.  Returns
 * 1 and changes nothing when the trial is already done. */
int cfl_store_trial_leased(struct cfl_store *st, int64_t trial_id, int attempt,
			   const char *worker, struct cfl_err *err);

/* One metric value.  NaN is stored as NULL (an undefined metric). */
struct cfl_metric_value {
	const char *name;	/* e.g. "acc"; unique within a split */
	double value;
};

/* What a trial produced on one split.  pred: (n, n_out) row-major, NULL
 * when not kept (then n = n_out = 0).  rows: NULL when pred covers the
 * split's rows in order; else n row indices into the split (OOF: into the
 * training part). */
struct cfl_split_result {
	size_t n_metrics;
	const struct cfl_metric_value *metrics;
	size_t n, n_out;
	const double *pred;	/* (n, n_out) */
	const uint32_t *rows;	/* (n) or NULL */
};

/* A finished trial as a worker reports it.  split[] is indexed by enum
 * cfl_store_split; unused splits are all zero. */
struct cfl_trial_result {
	double duration;	/* seconds the worker spent (fit + predict + metrics) */
	long peak_rss_kb;	/* the worker's peak RSS, 0 if unknown */
	struct cfl_split_result split[CFL_SPLIT_COUNT];
	const char *model;	/* the fitted model's text (a model file
				 * without its encoder), or NULL: not kept */
};

/* Stores a result in ONE transaction: status done, attempt, finished = now,
 * duration, peak RSS, every metric and prediction, the model text.  The
 * first result wins:
 * returns 1 and stores nothing when the trial is already done (a duplicate:
 * ack it as such).  Returns -1 and stores nothing (the trial keeps its
 * status) on a bad result (empty or duplicate metric name, pred NULL with
 * n > 0, n * n_out too large) or a database error.  A result is accepted
 * whatever the trial's status otherwise (a late result of an attempt that
 * timed out is still a valid result). */
int cfl_store_trial_done(struct cfl_store *st, int64_t trial_id, int attempt,
			 const struct cfl_trial_result *res,
			 struct cfl_err *err);

/* A failed attempt: records (trial, attempt, worker, reason, time) in
 * trial_attempts and sets the trial's status to final_status: QUEUED when
 * it will be retried, FAILED or POISON when it will not, INTERRUPTED on
 * Ctrl-C, CANCELLED or PRUNED when the caller stopped it.  reason: "signal SIGSEGV", "exit 3", "timeout after 10 s", or the
 * model's error message (stored as the trial's error too).  Returns 1 and
 * changes nothing when the trial is already done. */
int cfl_store_trial_failed(struct cfl_store *st, int64_t trial_id, int attempt,
			   const char *reason,
			   enum cfl_trial_status final_status,
			   struct cfl_err *err);

struct cfl_trial_counts {
	size_t total, queued, running, done, failed, poison, interrupted;
	size_t cancelled, pruned;
};

/* Counts the trials of a run by status. */
int cfl_store_trial_counts(struct cfl_store *st, int64_t run_id,
			   struct cfl_trial_counts *out /* OUT */,
			   struct cfl_err *err);

struct cfl_trial_info {
	int64_t id, cand_id;
	int repeat, fold, attempt;
	uint64_t seed;
	enum cfl_trial_status status;
	enum cfl_trial_phase phase;
	char worker[64];
	double started, finished;	/* epoch seconds, 0 when unset */
	double duration;		/* NaN when not done */
	long peak_rss_kb;
	char *error;			/* last failure reason, malloc'd, or NULL */
};

/* The trials of a run ordered by (candidate seq, repeat, fold); free with
 * cfl_trials_free. */
int cfl_store_trials(struct cfl_store *st, int64_t run_id,
		     struct cfl_trial_info **trials /* OUT */,
		     size_t *n_trials /* OUT */, struct cfl_err *err);
void cfl_trials_free(struct cfl_trial_info *trials, size_t n_trials);

/* One failed attempt of a trial (a row of trial_attempts). */
struct cfl_attempt_info {
	int64_t trial_id;
	char model[64];
	char hex[9];		/* the candidate's 8-hex id */
	int repeat, fold, attempt;
	char worker[64];	/* "" when unknown */
	double started, finished;	/* epoch seconds, started 0 when unknown */
	char outcome[16];	/* as stored: "failed", "poison", "interrupted", ... */
	char *reason;		/* malloc'd, never NULL */
};

/* The failed attempts of a run's trials ordered by (candidate seq, repeat,
 * fold, attempt); *n may be 0.  Free with cfl_attempts_free. */
int cfl_store_attempts(struct cfl_store *st, int64_t run_id,
		       struct cfl_attempt_info **attempts /* OUT */,
		       size_t *n /* OUT */, struct cfl_err *err);
void cfl_attempts_free(struct cfl_attempt_info *attempts, size_t n);

/* The model text cfl_store_trial_done stored for a trial: 0 with *text
 * (malloc'd, free it), 1 when none is stored (*text NULL; also in a
 * read-only file older than the trial_models table), -1 with err. */
int cfl_store_trial_model(struct cfl_store *st, int64_t trial_id,
			  char **text /* OUT */, struct cfl_err *err);

/* ---- reading metrics and predictions ---- */

/* One metric value of a done trial or of an ensemble. */
struct cfl_metric_row {
	int64_t cand_id;	/* 0 for an ensemble */
	int64_t trial_id;	/* 0 for an ensemble */
	int64_t ensemble_id;	/* 0 for a trial */
	char model[64];		/* model name, or the ensemble's name */
	char hex[9];		/* candidate's 8-hex id ("" for an ensemble) */
	int repeat, fold;	/* ensemble: its repeat (-1 = over all repeats), fold -1 */
	char metric[32];
	double value;		/* NaN when stored NULL */
};

/* Every metric value on split of the run's done trials, then of its
 * ensembles: trials ordered by (candidate seq, repeat, fold), ensembles by
 * id, metrics within one trial in the order the result listed them.  The
 * array is malloc'd (free()); *n_rows may be 0. */
int cfl_store_run_metrics(struct cfl_store *st, int64_t run_id,
			  enum cfl_store_split split,
			  struct cfl_metric_row **rows /* OUT */,
			  size_t *n_rows /* OUT */, struct cfl_err *err);

/* Stored predictions (owned by the struct; cfl_pred_release frees). */
struct cfl_pred {
	size_t n, n_out;
	double *values;		/* (n, n_out) */
	uint32_t *rows;		/* (n) or NULL */
};

void cfl_pred_release(struct cfl_pred *p);

/* The predictions of a trial (cfl_store_predictions) or an ensemble
 * (cfl_store_ensemble_predictions) on split.  Returns 0 and fills out, 1
 * when none are stored (out zeroed) -- also when the stored row cannot be
 * predictions (a blob whose size is not n x n_out doubles, or row indices
 * not n): a reader skips such a row as it skips a missing one --, -1 on a
 * database error. */
int cfl_store_predictions(struct cfl_store *st, int64_t trial_id,
			  enum cfl_store_split split, struct cfl_pred *out /* OUT */,
			  struct cfl_err *err);

/* ---- feature importance of trials ---- */

/* Stores a done trial's importance of kind ("impurity" or "permutation")
 * for n input columns named features (non-empty), replacing what the trial
 * had of that kind; a value that is not finite is stored NULL.  One
 * transaction (or part of the caller's). */
int cfl_store_trial_importance(struct cfl_store *st, int64_t trial_id,
			       const char *kind, size_t n,
			       const char *const *features, const double *values,
			       struct cfl_err *err);

/* A column's importance averaged over a candidate's done trials. */
struct cfl_importance_row {
	int64_t cand_id;
	char model[64];
	char hex[9];
	char kind[16];		/* "impurity" or "permutation" */
	char feature[128];
	double mean;		/* NaN when every value was NULL */
	size_t n_trials;	/* values averaged */
};

/* The importance of run run_id's done trials by (candidate, kind, column),
 * ordered by candidate seq, kind, then mean value, largest first.  The
 * array is malloc'd (free()); *n_rows may be 0, also for a database made
 * before importance was stored. */
int cfl_store_run_importance(struct cfl_store *st, int64_t run_id,
			     struct cfl_importance_row **rows /* OUT */,
			     size_t *n_rows /* OUT */, struct cfl_err *err);

/* ---- auto's credits ---- */

/* Stores that auto's leaderboard ranks ensemble ens_id with credit (in
 * the units of the run's ranking metric) added to its out-of-fold score
 * (subtracted, for a metric where lower is better).  One statement; a
 * second call replaces the first. */
int cfl_store_ensemble_credit(struct cfl_store *st, int64_t ens_id, double credit,
			      struct cfl_err *err);
/* Run run_id's credits: (ensemble id, credit) pairs, malloc'd (free());
 * *n may be 0, also for a database made before they were stored. */
struct cfl_credit_row {
	int64_t ensemble_id;
	double credit;
};
int cfl_store_run_credits(struct cfl_store *st, int64_t run_id,
			  struct cfl_credit_row **rows /* OUT */, size_t *n /* OUT */,
			  struct cfl_err *err);

/* ---- iterations a trial kept ---- */

/* Stores that done trial trial_id's model stopped early and kept n_iter
 * iterations (fcnn's epochs, gbdt's rounds), so that a refit after a
 * --resume runs as many as one in the session that ran the trial did.
 * One statement (or part of the caller's transaction). */
/* Where a pruned trial stopped: its last intermediate step (epochs or
 * rounds) and score there (higher is better; NaN stored as NULL), in
 * trial_pruned (the trial's status is set by cfl_store_trial_failed). */
int cfl_store_trial_pruned(struct cfl_store *st, int64_t trial_id, long step,
			   double score, struct cfl_err *err);
int cfl_store_trial_iters(struct cfl_store *st, int64_t trial_id, long n_iter,
			  struct cfl_err *err);

/* The iterations kept by run run_id's done trials that stopped early:
 * (trial id, count) pairs, malloc'd (free()); *n may be 0, also for a
 * database made before they were stored. */
struct cfl_iters_row {
	int64_t trial_id;
	long n_iter;
};
int cfl_store_run_iters(struct cfl_store *st, int64_t run_id,
			struct cfl_iters_row **rows /* OUT */, size_t *n /* OUT */,
			struct cfl_err *err);

/* ---- ensembles: stored like trial results ---- */

struct cfl_ensemble_info {
	const char *name;	/* table row name, e.g. "mean", "stacking" */
	const char *method;	/* e.g. "mean", "vote", "weighted", "stacking", "greedy" */
	const char *members;	/* free text: member trial ids / weights, may be NULL */
	int repeat;		/* -1: one ensemble over all repeats; else per repeat */
};

/* Adds an ensemble with its metrics and predictions (res->split[]; duration
 * and peak_rss_kb are stored too) in one transaction.  (run, name, repeat)
 * is unique: returns 1 and stores nothing when it already exists (a resumed
 * run), -1 on a bad result as in cfl_store_trial_done. */
int cfl_store_ensemble_add(struct cfl_store *st, int64_t run_id,
			   const struct cfl_ensemble_info *info,
			   const struct cfl_trial_result *res,
			   int64_t *ens_id /* OUT, may be NULL */,
			   struct cfl_err *err);
int cfl_store_ensemble_predictions(struct cfl_store *st, int64_t ens_id,
				   enum cfl_store_split split,
				   struct cfl_pred *out /* OUT */,
				   struct cfl_err *err);

/* A stored ensemble as cfl_store_ensembles reads it back. */
struct cfl_ensemble_row {
	int64_t id;
	char name[64];		/* its table row name */
	char method[32];
	int repeat;		/* -1: over all repeats */
	char *members;		/* the stored text, malloc'd ("" when none) */
};

/* The ensembles of a run in the order they were stored (by id).  0 with
 * *ens (free with cfl_ensemble_rows_free; NULL when there are none) and
 * *n_ens set, or -1 with err on a database or allocation error. */
int cfl_store_ensembles(struct cfl_store *st, int64_t run_id,
			struct cfl_ensemble_row **ens /* OUT */,
			size_t *n_ens /* OUT */, struct cfl_err *err);
void cfl_ensemble_rows_free(struct cfl_ensemble_row *ens, size_t n_ens);

/* ---- Optuna's storage: a study written in Optuna's own schema ---- */

/* What cfl_store_optuna_write writes: one study, its trials in order.
 * Strings and arrays are the caller's. */
struct cfl_optuna_attr {
	const char *key;
	const char *value_json;	/* a JSON value, e.g. "[1, 2]" or "\"x\"" */
};

struct cfl_optuna_param {
	const char *name;
	double value;		/* Optuna's internal form: a number, or the
				 * index of a categorical choice */
	const char *distribution_json;	/* e.g. {"name": "FloatDistribution", ...} */
};

struct cfl_optuna_trial {
	const char *state;	/* "COMPLETE", "FAIL", "RUNNING", ... */
	double value;		/* the objective; NaN: none (not COMPLETE) */
	double start, complete;	/* epoch seconds; 0: unknown */
	size_t n_params, n_attrs;
	const struct cfl_optuna_param *params;	/* (n_params) */
	const struct cfl_optuna_attr *attrs;	/* (n_attrs): user attributes */
};

struct cfl_optuna_study {
	const char *name;
	const char *direction;	/* "MAXIMIZE" or "MINIMIZE" */
	size_t n_attrs, n_trials;
	const struct cfl_optuna_attr *attrs;	/* (n_attrs): user attributes */
	const struct cfl_optuna_trial *trials;	/* (n_trials), numbered 0, 1, ... */
};

/* Writes study into the SQLite file path in the schema Optuna 3.1's
 * RDBStorage creates (alembic revision v3.0.0.d, as Debian's python3-optuna
 * has it), so optuna.load_study(study_name=NAME, storage="sqlite:///PATH")
 * reads it.  A new file is created whole (written beside path, then
 * renamed); an existing Optuna file of that revision gets the study added
 * in one transaction.  Datetimes are written in UTC.  0, or -1 with err
 * (nothing written) when path is another kind of file, an Optuna file of
 * another revision, already holds a study of that name, or cannot be
 * written. */
int cfl_store_optuna_write(const char *path, const struct cfl_optuna_study *study,
			   struct cfl_err *err);

#endif
