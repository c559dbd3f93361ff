/*
 * cfl models: one interface for every model (fit, predict, save, load and a
 * parameter schema) and the registry of models by name.
 *
 * A model's output for n rows is (n, n_out): class probabilities summing to
 * one when n_classes > 0, else one predicted value.  Parameters are checked
 * against the model's schema before any training.  Only fcnn and linear
 * include cblas.h; models never print.
 */
#ifndef CFL_MODEL_H
#define CFL_MODEL_H

#include "cfl/core.h"
#include "cfl/data.h"

enum cfl_ptype {
	CFL_P_INT,	/* integer in [lo, hi] */
	CFL_P_FLOAT,	/* real in [lo, hi] */
	CFL_P_CHOICE,	/* one of choices: "sgd|momentum|adam" */
	CFL_P_INTLIST,	/* comma-separated integers, each in [lo, hi]; "" allowed when lo <= 0 means none */
	CFL_P_BOOL,	/* 0/1, true/false, yes/no, on/off */
};

struct cfl_param_spec {
	const char *name;
	enum cfl_ptype type;
	const char *def;	/* default as text; "auto" allowed where help says so */
	double lo, hi;
	const char *choices;	/* CHOICE: "a|b"; INT: optional word aliases
				 * "none=0|sqrt=-1" (accepted beside numbers) */
	const char *help;
};

struct cfl_model;

struct cfl_model_ops {
	const char *name;
	const char *summary;	/* one line for --help */
	const struct cfl_param_spec *params;
	size_t n_params;
	/* Fits on train; valid (may be NULL) serves early stopping.  The
	 * model's params are already checked; m->n_features, m->n_classes and
	 * m->seed are set. */
	int (*fit)(struct cfl_model *m, const struct cfl_xy *train,
		   const struct cfl_xy *valid, struct cfl_err *err);
	/* The parameter that turns early stopping on valid on (when > 0);
	 * the model then has a valid_frac parameter too, and cfl_model_fit
	 * given no validation part holds that share of train out as one.
	 * NULL: the model does not stop early on a validation part. */
	const char *early_stop;
	/* out: (n, n_out) probabilities or values. */
	int (*predict)(const struct cfl_model *m, const float *x, size_t n,
		       double *out, struct cfl_err *err);
	/* Appends the fitted state as text; load reads it back exactly. */
	int (*save)(const struct cfl_model *m, struct cfl_buf *out,
		    struct cfl_err *err);
	int (*load)(struct cfl_model *m, struct cfl_reader *in,
		    struct cfl_err *err);
	void (*release)(struct cfl_model *m);	/* frees m->state */
	/* Impurity-based importance of each feature into out (n_features),
	 * summing to 1 (all 0 when the model made no split): 0; 1 when the
	 * fitted state does not know it (read from a file); NULL for models
	 * without one. */
	int (*importance)(const struct cfl_model *m, double *out,
			  struct cfl_err *err);
};

struct cfl_model {
	const struct cfl_model_ops *ops;
	struct cfl_params params;	/* as given; defaults are not filled in */
	size_t n_features;
	int n_classes;			/* 0: regression */
	uint64_t seed;
	void *state;
	size_t n_iter_kept;		/* after a fit that stopped early on
					 * valid: the epochs (fcnn) or boosting
					 * rounds (gbdt) it kept, the best; after
					 * a fit the budget cut: the units kept
					 * (trees, rounds, epochs); else 0 */
	/* Set by the caller before cfl_model_fit (cfl_model_new zeroes them). */
	double budget_s;		/* > 0: the fit's time budget in seconds
					 * (forest, gbdt, fcnn, tree; others
					 * ignore it); 0: none */
	/* Intermediate validation scores (fcnn: each epoch; gbdt: every
	 * CFL_MODEL_REPORT_ROUNDS rounds), higher is better, step counting
	 * epochs or rounds from 1; only when the fit has validation rows.
	 * A non-zero return stops the fit there: it returns -1 with err
	 * "pruned at step N".  NULL: not asked for. */
	int (*report)(void *ctx, size_t step, double score);
	void *report_ctx;
	int budget_cut;			/* after a fit: 1 when budget_s stopped
					 * it before its trees, rounds or
					 * epochs were all made */
};

/* gbdt reports its validation score every this many rounds. */
#define CFL_MODEL_REPORT_ROUNDS 10

/* ---- time budget (for the models' fits) ----
 *
 * A fit with m->budget_s > 0 makes its units (trees, rounds, epochs) one
 * by one and, before each one after the first, asks cfl_budget_over:
 * the time per unit measured so far says whether the next one would end
 * past the deadline.  The first unit is always made, so the model is a
 * model; what it kept goes into m->n_iter_kept and m->budget_cut. */
struct cfl_budget {
	double deadline;	/* cfl_now() seconds; 0: no budget */
	double t0;		/* when the first unit started */
};

/* 1 when the model honours budget_s (forest, gbdt, fcnn; tree: its nodes
 * left become leaves), else 0. */
int cfl_model_takes_budget(const struct cfl_model_ops *ops);
/* Starts the clock at the fit's entry: the deadline is now + budget_s. */
void cfl_budget_start(struct cfl_budget *b, const struct cfl_model *m);
/* Marks the start of the first unit (what came before, binning or
 * sorting, counts against the deadline but not per unit). */
void cfl_budget_units(struct cfl_budget *b);
/* 1 when n_done (>= 1) units are made and one more would pass the
 * deadline; 0 otherwise, and always without a budget or before a unit. */
int cfl_budget_over(const struct cfl_budget *b, size_t n_done);

/* ---- registry ---- */

/* The model named name, or NULL. */
const struct cfl_model_ops *cfl_model_find(const char *name);
/* The i-th registered model (NULL past the end), for listings. */
const struct cfl_model_ops *cfl_model_at(size_t i);
/* Appends the help of one model for `cfl train --model NAME --help`: a
 * blank line, "NAME: " and its summary, then "Parameters (--set
 * KEY=VALUE):" and one entry per parameter (name, help, [default] and
 * (range or choices)), wrapped at width columns.  Returns 0, or -1 on
 * allocation failure. */
int cfl_model_help(const struct cfl_model_ops *ops, size_t width,
		   struct cfl_buf *b);

/* Limits the BLAS the models call to n threads (n >= 1) in this process;
 * BLAS itself stays behind the models (OpenBLAS's setter, in linear.c). */
void cfl_model_set_threads(int n);

/* OpenBLAS's kernels.  Debian's OpenBLAS picks them when it loads, from
 * the CPU's model number; on a CPU it does not know (a newer Xeon in a
 * virtual machine, say) it falls back to its generic SSE3 ones
 * ("Prescott"), 2-3 times slower on fcnn's products.
 *
 * cfl_blas_core: the name of the kernels OpenBLAS chose ("Haswell").
 * cfl_blas_better_core: the kernels to ask for instead of core on a CPU
 * with AVX2 and FMA (avx2_fma) or AVX-512 F/CD/BW/DQ/VL (avx512): NULL
 * when core already uses them, or the CPU has neither.
 * cfl_blas_pick_core: when OPENBLAS_CORETYPE is unset and there are better
 * kernels for this CPU, sets OPENBLAS_CORETYPE to them and executes the
 * program again with argv (OpenBLAS reads it only when it loads); returns
 * when there is nothing better, or the exec failed (cfl runs on as it
 * was).  Call it first in main, before any thread or file. */
const char *cfl_blas_core(void);
const char *cfl_blas_better_core(const char *core, int avx2_fma, int avx512);
void cfl_blas_pick_core(char **argv);

/* ---- parameters ---- */

/* Checks every key of params is one of the model's and every value is of
 * its type and in range: "fcnn: lr must be a number in [0, 10], got 'x'". */
int cfl_model_check_params(const struct cfl_model_ops *ops,
			   const struct cfl_params *params,
			   struct cfl_err *err);
/* Typed getters: the value set in params, else the spec's default.  They
 * assume params were checked; name must be in the model's schema. */
long cfl_param_int(const struct cfl_model *m, const char *name);
double cfl_param_float(const struct cfl_model *m, const char *name);
const char *cfl_param_str(const struct cfl_model *m, const char *name);
int cfl_param_bool(const struct cfl_model *m, const char *name);
/* Parses an INTLIST value into out (up to cap items); returns the count, or
 * -1 when malformed. */
long cfl_param_intlist(const struct cfl_model *m, const char *name,
		       long *out, size_t cap);

/* ---- life cycle ---- */

/* Creates an unfitted model of ops with a copy of params (checked here). */
struct cfl_model *cfl_model_new(const struct cfl_model_ops *ops,
				const struct cfl_params *params,
				uint64_t seed, struct cfl_err *err);
void cfl_model_free(struct cfl_model *m);
int cfl_model_fit(struct cfl_model *m, const struct cfl_xy *train,
		  const struct cfl_xy *valid, struct cfl_err *err);
/* Number of output columns: n_classes, or 1 for regression. */
size_t cfl_model_n_out(const struct cfl_model *m);
/* An upper bound in bytes on the state text ops->save writes for model
 * name with params (NULL: the defaults) once fitted on at most n_rows rows
 * of n_features features with n_out outputs: from the kind's shape (a
 * linear model's weights, a network's layers, at most 2 n_rows - 1 nodes a
 * tree, times the trees of a forest or a boosting), every number counted
 * at its longest.  Lets a coordinator bound the model text a worker sends
 * back.  0 when name is not a registered model (no bound). */
uint64_t cfl_model_text_max(const char *name, const struct cfl_params *params,
			    size_t n_features, size_t n_out, size_t n_rows);
/* out must hold n * cfl_model_n_out(m) doubles. */
int cfl_model_predict(const struct cfl_model *m, const float *x, size_t n,
		      double *out, struct cfl_err *err);

/* ---- feature importance (importance.c) ---- */

/* The impurity-based importance of each feature of a fitted tree model
 * (tree, forest: scikit-learn's feature_importances_, the weighted impurity
 * decrease of each feature's splits; gbdt: the total loss gain of its
 * splits), scaled to sum 1, into out (n_features; all 0 when the model
 * never split).  0; 1 when the model has none (not a tree model, or read
 * from a file: the gains are not saved); -1 with err. */
int cfl_model_importance(const struct cfl_model *m, double *out /* OUT */,
			 struct cfl_err *err);

/* Permutation importance of groups of features on xy (n_classes as the
 * model's): for each group g (group[j] is feature j's group, 0..n_groups-1:
 * one source column and its one-hot columns), the mean over n_repeats of
 * score - score with the group's columns shuffled together (the same row
 * permutation), where score = sign * metric of the model's predictions:
 * positive when the model relies on the group.  The permutations come from
 * seed alone.  out: (n_groups).  0, or -1 with err (no rows, a predict
 * error, out of memory). */
int cfl_model_permutation_importance(const struct cfl_model *m,
				     const struct cfl_xy *xy, const int *group,
				     size_t n_groups, int metric, int n_repeats,
				     uint64_t seed, double *out /* OUT */,
				     struct cfl_err *err);

/* Importance by input column: a one-hot column's features folded back
 * into their source column (impurity: summed, so the columns still sum to
 * 1; permutation: the column's features shuffled together). */
struct cfl_importance {
	size_t n;		/* input columns, in the encoder's order */
	double *impurity;	/* (n), or NULL: the model has none */
	double *permutation;	/* (n), or NULL: not asked for */
};

/* Fills out (release it) for a model fitted on features enc made: the
 * impurity importance when the model has one, and with xy (not NULL) the
 * permutation importance on xy (metric, n_repeats, seed as in
 * cfl_model_permutation_importance).  0, or -1 with err (out left empty). */
int cfl_importance_by_column(const struct cfl_model *m,
			     const struct cfl_encoder *enc,
			     const struct cfl_xy *xy, int metric, int n_repeats,
			     uint64_t seed, struct cfl_importance *out /* OUT */,
			     struct cfl_err *err);
void cfl_importance_release(struct cfl_importance *imp);
/* Appends imp as `cfl train --importance` prints it: a blank line, a title
 * line, a header, the top columns (0 or more than imp->n: all) by impurity
 * importance when there is one, else by permutation importance, largest
 * first (ties in the encoder's order), then, with permutation importance, a
 * line saying what it is (metric: its name, n_repeats: the shuffles).
 * Needs imp->impurity or imp->permutation.  Returns 0, or -1 on allocation
 * failure. */
int cfl_importance_format(const struct cfl_importance *imp,
			  const struct cfl_encoder *enc, long top,
			  const char *metric, int n_repeats, struct cfl_buf *b);

/* ---- model files ---- */

/* A model file: "cfl-model 1", the model name, its params, seed and shape,
 * the data encoder, then the model's own state, then "end".  Written
 * atomically; read back exactly. */
int cfl_model_save_file(const struct cfl_model *m,
			const struct cfl_encoder *enc, const char *path,
			struct cfl_err *err);
/* The text of a model file appended to b; enc NULL leaves out the encoder
 * (a worker's model travels without it: the coordinator owns the encoder,
 * cfl_model_text_add_encoder puts it back).  0, or -1 with err. */
int cfl_model_format(const struct cfl_model *m, const struct cfl_encoder *enc,
		     struct cfl_buf *b, struct cfl_err *err);
/* A model file's text: text[0..len) (written by cfl_model_format without
 * an encoder) with enc put in its place, appended to out.  0, or -1 with
 * err (no "state" line, out of memory). */
int cfl_model_text_add_encoder(const char *text, size_t len,
			       const struct cfl_encoder *enc,
			       struct cfl_buf *out, struct cfl_err *err);
/* Parses a model file held in text (for fuzzing and tests). */
struct cfl_model *cfl_model_parse(const char *name, const char *text,
				  size_t len, struct cfl_encoder *enc /* OUT */,
				  struct cfl_err *err);
struct cfl_model *cfl_model_load_file(const char *path,
				      struct cfl_encoder *enc /* OUT */,
				      struct cfl_err *err);

#endif
