/*
 * cfl bundles: a run's models in one file, so that every row of its table
 * is a model that `cfl predict` can apply.  A bundle is an SQLite file
 * (docs/bundles.md): the encoder, every kept model as a whole model file
 * (.cfl text), and a manifest of rows, each a way to combine members (a
 * member: one model, or the fold models of one repeat averaged) with the
 * weights the run fitted, and the scores the run recorded for it.
 *
 * Two halves: src/store/bundle.c reads and writes the file (the only code
 * here that knows SQLite); src/study/bundle.c builds a bundle from a run in
 * the store and applies its rows to data.  Rows apply the same arithmetic,
 * in the same order, as the run did, so a row's predictions on the run's
 * own test part equal the stored ones bit for bit.
 */
#ifndef CFL_BUNDLE_H
#define CFL_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"
#include "cfl/data.h"
#include "cfl/model.h"
#include "cfl/store.h"

#define CFL_BUNDLE_FORMAT "cfl-bundle"
#define CFL_BUNDLE_VERSION 1

/* A score the run recorded for a row: the mean over its trials (model and
 * repeat rows), or the ensemble's value. */
struct cfl_bundle_score {
	char split[8];		/* "valid", "test" or (auto) "oof" */
	char metric[32];
	double value;		/* NaN: undefined */
	double std;		/* population std over the row's trials; 0 for
				 * an ensemble */
};

/* A member: models[0..n_models) (indices into the bundle's models),
 * their predictions averaged in this order (the folds of one repeat). */
struct cfl_bundle_member {
	size_t n_models;
	size_t *models;
	double weight;		/* method "weighted": its weight; else NaN */
};

/* How a row combines its members. */
enum cfl_bundle_method {
	CFL_BUNDLE_ONE,		/* one member, as it predicts */
	CFL_BUNDLE_MEAN,	/* cfl_ensemble_mean of the members */
	CFL_BUNDLE_VOTE,	/* cfl_ensemble_vote */
	CFL_BUNDLE_WEIGHTED,	/* cfl_ensemble_weighted with their weights */
};

struct cfl_bundle_row {
	char *name;		/* "fcnn", "fcnn#2", "stacking", "best" */
	char *kind;		/* "model" (a model's repeats), "repeat" (one
				 * of them), "bag" (auto: a candidate's fold
				 * models), "ensemble" */
	enum cfl_bundle_method method;
	size_t n_members;
	struct cfl_bundle_member *members;
	size_t n_scores;
	struct cfl_bundle_score *scores;
};

/* A kept model: a whole model file's text, with its trial's identity. */
struct cfl_bundle_model {
	int64_t trial;		/* its trial in the run's database */
	char *model;		/* "fcnn" */
	int repeat, fold;	/* fold -1: no folds */
	char *text;		/* the .cfl file */
};

struct cfl_bundle {
	char *cfl_version;	/* the cfl that wrote it */
	char *run;		/* the run's name and kind ("repeat", "tune") */
	char *kind;
	char *dataset;		/* the data file's path and SHA-256 */
	char *dataset_sha256;
	char *metric;		/* the first metric, the recommendation's */
	char *recommended;	/* the default row's name */
	char *encoder;		/* the encoder's text (cfl_encoder_save) */
	size_t n_models;
	struct cfl_bundle_model *models;
	size_t n_rows;
	struct cfl_bundle_row *rows;
	/* filled by cfl_bundle_load (not by a build): */
	struct cfl_encoder enc;
	struct cfl_model **fitted;	/* (n_models) */
};

/* "one", "mean", "vote", "weighted"; the method named s, or -1. */
const char *cfl_bundle_method_name(enum cfl_bundle_method m);
int cfl_bundle_method_lookup(const char *s);

/* Frees every member and zeroes b.  Safe on a zeroed bundle. */
void cfl_bundle_release(struct cfl_bundle *b);

/* ---- the file (src/store/bundle.c) ---- */

/* Writes b (its strings, models and rows) as a new SQLite file at path,
 * atomically (a temporary file renamed over path).  0, or -1 with err. */
int cfl_bundle_write(const struct cfl_bundle *b, const char *path,
		     struct cfl_err *err);
/* Reads the file at path into b (zeroed first): its strings, models and
 * rows, every reference checked (a model index out of range, a row without
 * members, an unknown method).  Errors name the file: "'x' is not a cfl
 * bundle", "bundle 'x' has format version 3, this cfl reads 1", SQLite's
 * "file is not a database" or "database disk image is malformed".  0, or
 * -1 with err and b empty. */
int cfl_bundle_read(const char *path, struct cfl_bundle *b /* OUT */,
		    struct cfl_err *err);
/* Whether path starts as an SQLite file does (so cfl predict tells a
 * bundle from a model file): 1 yes, 0 no or unreadable. */
int cfl_bundle_sniff(const char *path);

/* ---- build and apply (src/study/bundle.c) ---- */

/* Why b's default row is its default, as the study chose it, into out
 * (cap bytes): "rank 1 by METRIC out of fold" (an auto run's), "best
 * METRIC on valid", else "the mean: no validation part to choose on" or
 * "the first row: ...": never "on valid" when the run had no validation
 * scores to choose on. */
void cfl_bundle_why_default(const struct cfl_bundle *b, char *out, size_t cap);
/* Appends what `cfl bundle show` lists of b: the run, dataset and default
 * row (cfl_bundle_why_default), one entry per row (only: that row alone;
 * NULL: all; '*' marks the default) with its kind, method, members (model
 * ids joined by '+', " xWEIGHT") and recorded scores ("valid acc 0.93+-0.01";
 * undefined ones left out), wrapped within 80 columns, then the models (id,
 * trial, model, repeat, fold).  Returns 0, or -1 on allocation failure. */
int cfl_bundle_format(const struct cfl_bundle *b, const char *only,
		      struct cfl_buf *out);

/* Builds the bundle of repeat run run_id in st, whose data d is loaded
 * (the encoder and the labels; the ensembles are fitted again from the
 * stored predictions and must give the stored ones bit for bit, else an
 * error): a row per model (its repeats' mean), per model repeat
 * ("fcnn#2"), per stored ensemble.  Every done trial must have kept its
 * model ("run 'x' kept no model for trial N; start it with --save").  0,
 * or -1 with err (b empty). */
int cfl_bundle_build_repeat(struct cfl_store *st, int64_t run_id,
			    const struct cfl_data *d,
			    struct cfl_bundle *b /* OUT */, struct cfl_err *err);

/* The bundle of tune run run_id: the refit of candidate cand_id (its done
 * trials of repeat first_refit and later, which must have kept their
 * models): a row "best" (the mean of the refits' predictions; its recorded
 * scores are the refit table's mean and std) and a row per refit,
 * "best#0", "best#1", ... (each its trial's predictions).  0, or -1 with
 * err (b empty). */
int cfl_bundle_build_tune(struct cfl_store *st, int64_t run_id,
			  const struct cfl_data *d, int64_t cand_id,
			  int first_refit, struct cfl_bundle *b /* OUT */,
			  struct cfl_err *err);

/* The bundle of auto run run_id: a row per leaderboard entry
 * (cfl_study_auto_summary), each fitted again from the stored predictions
 * and checked bit for bit as for repeat: a row of kind "bag" per bag whose
 * folds all finished ("MODEL:HEX", the mean of its fold models, which must
 * have been kept), and a row of kind "ensemble" per ensemble of the bags
 * ("mean", "stacking": its bags with their weights).  Scores: valid, test
 * and oof.  The default row is the leaderboard's rank 1.  0, or -1 with
 * err (b empty): no bag finished ("... nothing to bundle"), a fold model
 * not kept. */
int cfl_bundle_build_auto(struct cfl_store *st, int64_t run_id,
			  const struct cfl_data *d, struct cfl_bundle *b /* OUT */,
			  struct cfl_err *err);

/* Whether a bundle can be written at path, checked before a run trains:
 * a file can be created next to it (as cfl_bundle_write's temporary) and
 * path is not a folder.  Creates nothing that stays.  0, or -1 with err
 * ("cannot write bundle 'x': No such file or directory"). */
int cfl_bundle_check_path(const char *path, struct cfl_err *err);

/* cfl_bundle_read, then parses the encoder and every model (each model's
 * shape must be the encoder's).  0, or -1 with err (b empty). */
int cfl_bundle_load(const char *path, struct cfl_bundle *b /* OUT */,
		    struct cfl_err *err);

/* The row named name, or NULL. */
const struct cfl_bundle_row *cfl_bundle_find(const struct cfl_bundle *b,
					     const char *name);

/* Applies row r of a loaded bundle to n encoded rows x (n, enc.d): out
 * (n, n_out) with n_out = max(enc.n_classes, 1), caller-owned.  0, or -1
 * with err (a model's error, out of memory). */
int cfl_bundle_predict(const struct cfl_bundle *b,
		       const struct cfl_bundle_row *r, const float *x,
		       size_t n, double *out /* OUT */, struct cfl_err *err);

#endif
