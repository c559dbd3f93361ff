/*
 * cfl hpo: the params language (params/NAME.params), search spaces, and the
 * search methods of `cfl tune`: random (scrambled Sobol points), grid, and
 * Bayesian optimisation on a Gaussian process.
 *
 * A search is a deterministic function of its seed and of the sequence of
 * ask / tell calls: the same calls give the same proposals on every machine,
 * so a run that applies results in trial order reproduces its history and
 * --resume replays it.  src/hpo is the only code that includes GSL headers
 * (never together with cblas.h).
 */
#ifndef CFL_HPO_H
#define CFL_HPO_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"
#include "cfl/model.h"

/* ---- search spaces ---- */

enum cfl_dist {
	CFL_DIST_FIXED,		/* name = value */
	CFL_DIST_CHOICE,	/* name = choice(a, b, ...) */
	CFL_DIST_UNIFORM,	/* name = uniform(lo, hi) */
	CFL_DIST_LOGUNIFORM,	/* name = loguniform(lo, hi), 0 < lo */
	CFL_DIST_INT,		/* name = int(lo, hi), integers, both ends in */
};

struct cfl_space_param {
	char *name;
	enum cfl_dist dist;
	double lo, hi;		/* uniform, loguniform, int */
	int integer;		/* values are rounded to integers: int(), or a
				 * range of an integer parameter of the model */
	size_t n_choices;
	char **choices;		/* (n_choices) choice values as text */
	char *value;		/* fixed value as text */
	size_t line;		/* 1-based line in the file (0: from --set) */
};

/* A search space: parameters in file order. */
struct cfl_space {
	char *name;		/* the file it came from, for messages */
	size_t n_params;
	struct cfl_space_param *params;
};

void cfl_space_init(struct cfl_space *s);
void cfl_space_release(struct cfl_space *s);

/* Parses a params file held in text (len bytes, NUL not needed).  One
 * parameter per line (`name = choice(...) | uniform(a, b) | loguniform(a,
 * b) | int(a, b) | value`), '#' comments, blank lines; choice values and
 * fixed values may be quoted ("64,64").  When ops is not NULL every
 * parameter is checked against the model's schema (name known, type fits,
 * range inside the model's, each value accepted).  Returns 0 and fills s
 * (release it), or -1 with err = "name:line:col: what", then the line and a
 * caret under col, and s left empty. */
int cfl_space_parse(struct cfl_space *s /* OUT */, const char *name,
		    const char *text, size_t len,
		    const struct cfl_model_ops *ops, struct cfl_err *err);
/* The default search space of a model: params/MODEL.params in the current
 * folder, next to the running binary (a build tree), where `make install`
 * puts it (PREFIX/share/cfl/params beside PREFIX/bin), or under /usr/local
 * or /usr;
 * the first readable one is written into buf (cap bytes) and returned.
 * None readable: "params/MODEL.params", so that the error names it. */
const char *cfl_space_default_path(const char *model, char *buf, size_t cap);
/* cfl_space_parse on the contents of path ("cannot read 'path': ..."). */
int cfl_space_load(struct cfl_space *s /* OUT */, const char *path,
		   const struct cfl_model_ops *ops, struct cfl_err *err);
/* Fixes name to value (--set): replaces its distribution, or adds it.  With
 * ops the value is checked against the schema.  0 or -1 with err. */
int cfl_space_fix(struct cfl_space *s, const char *name, const char *value,
		  const struct cfl_model_ops *ops, struct cfl_err *err);
/* Number of parameters that are searched (not fixed). */
size_t cfl_space_n_free(const struct cfl_space *s);
/* The index of parameter name, or -1. */
int cfl_space_find(const struct cfl_space *s, const char *name);
/* Appends the space back in the params language (one line each). */
int cfl_space_format(const struct cfl_space *s, struct cfl_buf *out);

/* ---- searches ---- */

enum cfl_search_method { CFL_SEARCH_BO, CFL_SEARCH_RANDOM, CFL_SEARCH_GRID };

/* How BO fills in the values of pending (asked, not yet told) points when
 * it proposes a batch for parallel workers. */
enum cfl_liar {
	CFL_LIAR_KRIGING,	/* kriging believer: the GP mean */
	CFL_LIAR_CONSTANT,	/* constant liar: the best value seen */
};

/* "bo"/"random"/"grid" and back (-1 when unknown). */
const char *cfl_search_method_name(enum cfl_search_method m);
int cfl_search_method_lookup(const char *name);

struct cfl_search_opts {
	enum cfl_search_method method;
	uint64_t seed;
	int maximize;		/* 1: larger told values are better */
	size_t grid_points;	/* grid: values per continuous range (0: none allowed) */
	size_t budget;		/* grid: candidates the caller will ask; when
				 * smaller than the grid, the first budget asks
				 * are grid points drawn at random with seed,
				 * then the rest in grid order (0: all in grid
				 * order) */
	size_t n_init;		/* bo: Sobol points first (0: max(5, d + 1)) */
	enum cfl_liar liar;
};

/* Sets the defaults: bo, seed 0, minimise, kriging believer. */
void cfl_search_opts_init(struct cfl_search_opts *o);

struct cfl_search;

/* A search over space (copied).  Fails when the grid is asked of a space
 * with a continuous range and no grid_points, or when the grid would have
 * more than 10,000,000 points. */
struct cfl_search *cfl_search_new(const struct cfl_space *space,
				  const struct cfl_search_opts *o,
				  struct cfl_err *err);
void cfl_search_free(struct cfl_search *s);

/* Proposes the next candidate: every parameter of the space (fixed ones
 * too) as text in space order into out (cleared first), and its index
 * (0, 1, ... in ask order) into idx.  Never proposes a point asked before.
 * Returns 0; 1 when the space is exhausted (grid done, or every point of a
 * finite space asked); -1 with err on failure. */
int cfl_search_ask(struct cfl_search *s, struct cfl_params *out /* OUT */,
		   size_t *idx /* OUT, may be NULL */, struct cfl_err *err);
/* Reports the value of candidate idx; NaN (or an infinity) marks a failed
 * trial: it is never proposed again and never enters the GP's
 * hyper-parameter fit; BO gives it the worst value seen only when choosing
 * the next point, so the search moves away from it.  Telling a value twice
 * or for an index never asked is an error (-1). */
int cfl_search_tell(struct cfl_search *s, size_t idx, double value,
		    struct cfl_err *err);
/* Number of candidates asked so far. */
size_t cfl_search_n_asked(const struct cfl_search *s);
/* Grid: the number of points of the grid; other methods: 0. */
size_t cfl_search_grid_size(const struct cfl_search *s);

/* ---- the Gaussian process (exposed for tests and benchmarks) ---- */

/* A GP with a Matern-5/2 kernel, one length scale per dimension; a
 * categorical dimension (cat[i] = 1, values are category indices) adds
 * (a != b) / ls^2 to the squared distance (a Hamming kernel).  Zero mean;
 * the caller standardises outputs.  Hyper-parameters theta, (d + 2):
 * log length scales, log signal variance, log noise variance. */
struct cfl_gp;

struct cfl_gp *cfl_gp_new(size_t d, const unsigned char *cat /* (d) or NULL */,
			  struct cfl_err *err);
void cfl_gp_free(struct cfl_gp *gp);
/* Conditions on x (n, d), y (n) with the given theta (copied).  Adds jitter
 * when the kernel matrix is not positive definite.  0 or -1 with err. */
int cfl_gp_fit(struct cfl_gp *gp, const double *x, const double *y, size_t n,
	       const double *theta, struct cfl_err *err);
/* Maximum a posteriori theta for x, y: BFGS (gsl_multimin) from start
 * (may be NULL) and n_restarts random starts drawn from the prior with
 * seed; then conditions on x, y with the best theta.  0 or -1 with err. */
int cfl_gp_fit_map(struct cfl_gp *gp, const double *x, const double *y,
		   size_t n, const double *start, size_t n_restarts,
		   uint64_t seed, struct cfl_err *err);
/* theta (d + 2) in use. */
const double *cfl_gp_theta(const struct cfl_gp *gp);
/* Log marginal likelihood of the conditioned data (without the prior). */
double cfl_gp_log_ml(const struct cfl_gp *gp);
/* Posterior mean and variance of the latent function (noise excluded) at
 * m points xs (m, d).  var may be NULL. */
void cfl_gp_predict(const struct cfl_gp *gp, const double *xs, size_t m,
		    double *mean /* OUT (m) */, double *var /* OUT (m) or NULL */);

/* log expected improvement below best of a normal (mean, sd): accurate far
 * into the tail (never -inf for sd > 0); -inf when sd <= 0 and mean >= best. */
double cfl_log_ei(double mean, double sd, double best);

/* ---- pruning (prune.c) ----
 *
 * Stops trials whose intermediate validation score (higher is better;
 * fcnn: each epoch, gbdt: every few rounds) is poor, as Optuna's pruners
 * do.  A trial reports (step, score) as it trains; cfl_pruner_report says
 * whether to stop it.  The decisions depend on the reports' order only.
 *   median: prune when the trial's best score so far is below the median
 *     of the completed trials' scores at the same step (at least
 *     n_startup completed trials reported that step; no pruning before
 *     step min_step).
 *   asha: asynchronous successive halving: rungs at steps r, r*eta,
 *     r*eta^2, ... (r: min_step, or eta times the first step a trial
 *     reports: a grace period, fcnn's epoch 3, gbdt's round 30); a
 *     trial reaching a rung goes on when its score there is among the top
 *     1/eta of the scores every trial reported at that rung (the best one
 *     when fewer than eta have), else it is pruned.  It needs no
 *     completed trials, so it suits workers that finish at different times.
 */
enum cfl_prune_kind { CFL_PRUNE_NONE, CFL_PRUNE_MEDIAN, CFL_PRUNE_ASHA };

/* "none", "median", "asha"; lookup: the enum value, or -1. */
const char *cfl_prune_kind_name(enum cfl_prune_kind k);
int cfl_prune_kind_lookup(const char *name);

struct cfl_pruner_opts {
	enum cfl_prune_kind kind;
	size_t n_startup;	/* median: completed trials needed [5] */
	size_t min_step;	/* median: no pruning before; asha: the first
				 * rung (0: eta x the first step) [0] */
	double eta;		/* asha: reduction factor, > 1 [3] */
};

void cfl_pruner_opts_init(struct cfl_pruner_opts *o);

struct cfl_pruner;

/* A pruner, or NULL with err (out of memory, eta <= 1). */
struct cfl_pruner *cfl_pruner_new(const struct cfl_pruner_opts *o,
				  struct cfl_err *err);
void cfl_pruner_free(struct cfl_pruner *p);	/* NULL: no-op */
/* Trial `trial` reports score at step (steps grow for one trial; a NaN
 * score counts as the worst).  1: prune it now; 0: let it go on; -1: out
 * of memory (err). */
int cfl_pruner_report(struct cfl_pruner *p, int64_t trial, size_t step,
		      double score, struct cfl_err *err);
/* Trial `trial` finished whole: median then counts its reports among the
 * completed trials'.  A trial pruned or failed is not completed. */
void cfl_pruner_complete(struct cfl_pruner *p, int64_t trial);

/* A candidate of several seeds (tune's --num-repeat), judged as one trial
 * `cand` on the mean of its seeds.  Each seed reports its own steps, then
 * ends.  The candidate reports, at a step, the mean of the scores its
 * seeds reported there once every seed that is reporting has reached it: a
 * seed that has not reported yet (queued behind other trials) is not waited
 * for, nor one that ended (early stopped, failed), which counts as far as
 * it got.  A step is judged once: a seed that reaches it after (one that
 * started late, or a retried one) adds nothing there.  So a candidate whose
 * seeds train side by side is not stopped for one unlucky seed, the seed
 * ahead trains on (it is judged on the report of the last seed to reach
 * the step), and a seed never trains on waiting for one that has not
 * started: seeds that run one after another (one job) are judged as the
 * first goes, and when it is pruned the next stops at its first report.
 * cfl_pruner_seed_report: 1 when the candidate is pruned (now, or before:
 * every seed stops at its next report), 0 to go on, -1 out of memory. */
int cfl_pruner_seed_report(struct cfl_pruner *p, int64_t cand, int seed,
			   size_t step, double score, struct cfl_err *err);
/* Seed `seed` of cand ended (done, failed or stopped): the steps that
 * waited for it are judged.  1: the candidate is pruned (a candidate
 * judged when none of its seeds trains any more is not); 0; -1 out of
 * memory (err).  Once every seed of a candidate finished whole,
 * cfl_pruner_complete(p, cand) counts it. */
int cfl_pruner_seed_end(struct cfl_pruner *p, int64_t cand, int seed,
			struct cfl_err *err);

#endif
