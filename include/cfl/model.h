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
	/* out: (n, n_out) probabilities or values. */
	int (*predict)(const struct cfl_model *m, const float *x, size_t n,
		       double *out, struct cfl_err *err);
	/* Appends the fitted state as text; load reads it back exactly. */
	int (*save)(const struct cfl_model *m, struct cfl_buf *out,
		    struct cfl_err *err);
	int (*load)(struct cfl_model *m, struct cfl_reader *in,
		    struct cfl_err *err);
	void (*release)(struct cfl_model *m);	/* frees m->state */
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
					 * rounds (gbdt) it kept, the best; 0
					 * when it did not stop early */
};

/* ---- registry ---- */

/* The model named name, or NULL. */
const struct cfl_model_ops *cfl_model_find(const char *name);
/* The i-th registered model (NULL past the end), for listings. */
const struct cfl_model_ops *cfl_model_at(size_t i);

/* Limits the BLAS the models call to n threads (n >= 1) in this process;
 * BLAS itself stays behind the models (OpenBLAS's setter, in linear.c). */
void cfl_model_set_threads(int n);

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
/* out must hold n * cfl_model_n_out(m) doubles. */
int cfl_model_predict(const struct cfl_model *m, const float *x, size_t n,
		      double *out, struct cfl_err *err);

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
