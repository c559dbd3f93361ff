/*
 * cfl report: carefree-learn's results table.  Rows (models, candidates or
 * ensembles) x metrics; each cell holds the values over the repeats and
 * shows mean, std (population: divided by n) and score = sign * mean - std.
 * The best cell of each column (highest sign * mean, lowest std, highest
 * score; ties all marked) is marked `-- x --` when there are two rows or
 * more.  Rendered as text (the terminal table, full or compact), Markdown,
 * CSV and JSON.
 *
 * table.c depends on core only: metric signs are given by the caller, so it
 * does not need the metrics module.  cfl_table_from_run (from_store.c)
 * builds a table from the store and looks signs up in the metrics module.
 */
#ifndef CFL_REPORT_H
#define CFL_REPORT_H

#include <stddef.h>

#include "cfl/core.h"
#include "cfl/store.h"

/* One row: a name and, per metric of the table, the values over repeats. */
struct cfl_table_row {
	char *name;
	size_t n_failed;	/* trials of this row that failed (shown in a column) */
	size_t *n_values;	/* (n_metrics) */
	double **values;	/* (n_metrics)(n_values[m]); NaN allowed */
	double *mean, *std, *score;	/* (n_metrics), set by cfl_table_compute */
	const struct cfl_params *params;	/* the row's parameters (a tune
						 * candidate's) shown by md, csv
						 * and json, or NULL; not owned */
};

struct cfl_table {
	size_t n_metrics;
	char **metric_names;	/* (n_metrics) */
	int *signs;		/* (n_metrics): +1 higher is better, -1 lower */
	size_t n_rows;
	struct cfl_table_row *rows;	/* (n_rows), in order of addition */
	/* Failed attempts listed with the table in every format (each under
	 * the row named by its candidate's hex or else its model), or NULL;
	 * not owned. */
	size_t n_failures;
	const struct cfl_attempt_info *failures;	/* (n_failures) */
};

void cfl_table_init(struct cfl_table *t);
void cfl_table_release(struct cfl_table *t);

/* Adds a metric column (sign +1 or -1) or returns the existing one of that
 * name.  Returns its index, or -1 with err (allocation, sign not +-1).
 * Metrics may be added after rows. */
int cfl_table_metric(struct cfl_table *t, const char *name, int sign,
		     struct cfl_err *err);
/* Returns the index of the row named name, adding it when new; -1 with err
 * on allocation failure. */
int cfl_table_row(struct cfl_table *t, const char *name, struct cfl_err *err);
/* Appends a value (one repeat) to cell (row, metric).  0 or -1 with err. */
int cfl_table_add(struct cfl_table *t, int row, int metric, double value,
		  struct cfl_err *err);
/* Sets the number of failed trials shown for a row. */
void cfl_table_set_failed(struct cfl_table *t, int row, size_t n_failed);

/* Computes mean, std and score of every cell.  A cell without values, or
 * with a NaN value, gets NaN (shown "nan", never marked best).  Rendering
 * calls it; call it yourself to read t->rows[r].mean etc. */
void cfl_table_compute(struct cfl_table *t);

enum cfl_table_stat { CFL_STAT_MEAN, CFL_STAT_STD, CFL_STAT_SCORE };

/* True when cell (row, metric, stat) is a best cell of its column (needs
 * two rows or more; ties within a relative 1e-12 are all best).  Call after
 * cfl_table_compute. */
int cfl_table_is_best(const struct cfl_table *t, size_t row, size_t metric,
		      enum cfl_table_stat stat);

enum cfl_table_format {
	CFL_TABLE_TEXT,	/* carefree-learn's boxed table, values %.6f */
	CFL_TABLE_MD,	/* GitHub Markdown table, best cells in bold */
	CFL_TABLE_CSV,	/* row,failed,n,<metric>_mean,<metric>_std,<metric>_score,... %.17g */
	CFL_TABLE_JSON,	/* {"metrics":[...],"rows":[...]} with values; NaN as null */
	CFL_TABLE_COMPACT,	/* text, one column per metric: "mean ± std score" */
};

/* The format named "table"/"text", "md", "csv", "json" or "compact", or -1. */
int cfl_table_format_lookup(const char *name);

/* How a table meets its reader.  All zero: the plain full table. */
struct cfl_table_style {
	/* The columns of the terminal, 0: no limit.  With a limit the text
	 * format prints the full table when it fits and the compact form
	 * when not; the compact form (either way) splits its metrics into
	 * blocks of columns that fit, one metric at least per block. */
	size_t width;
	/* Best cells in bold green (ANSI escapes) instead of the plain marks
	 * ("-- x --" in the full table, "*" in the compact one); text and
	 * compact formats only. */
	int color;
	/* Rows in leaderboard order (cfl_table_sort_by_score) in every
	 * format. */
	int sort_score;
};

/* Orders the rows by the score of the first metric, best first; rows
 * without a score (NaN) last; equal scores keep their order.  Computes the
 * table first.  No-op without metrics. */
void cfl_table_sort_by_score(struct cfl_table *t);

/* Computes the table and appends it in format fmt to out (ending with a
 * newline).  The text and Markdown tables get a "failed" column only when
 * some row has failed trials; CSV and JSON always carry it.  0 or -1 with
 * err on allocation failure. */
int cfl_table_render(struct cfl_table *t, enum cfl_table_format fmt,
		     struct cfl_buf *out, struct cfl_err *err);
/* cfl_table_render with a style (NULL: the plain one, as above); with
 * style->sort_score the rows of t are reordered in place.  The numbers are
 * the same (%.6f) in the full and the compact form.  0 or -1 with err. */
int cfl_table_render_styled(struct cfl_table *t, enum cfl_table_format fmt,
			    const struct cfl_table_style *style,
			    struct cfl_buf *out, struct cfl_err *err);

/* How cfl_table_from_run names rows. */
enum cfl_table_rows {
	CFL_ROWS_BY_MODEL,	/* one row per model name (repeat) */
	CFL_ROWS_BY_CANDIDATE,	/* one row per candidate's 8-hex id (tune) */
};

/* Fills an initialised, empty table from a stored run's metrics on split:
 * rows by model or candidate in candidate order, then one row per ensemble
 * name; metrics in the order the results listed them, signs from the
 * metrics module; failed counts from the trials (failed + poison).  0, or
 * -1 with err (database error, a metric unknown to this cfl). */
int cfl_table_from_run(struct cfl_table *t, struct cfl_store *st,
		       int64_t run_id, enum cfl_store_split split,
		       enum cfl_table_rows by, struct cfl_err *err);

/* ---- a run's report (run_report.c, html.c) ---- */

/* What a run prints as its results, rendered from the store in fmt (so
 * `cfl report` prints exactly what the run printed): for a repeat run the
 * test table with one row per model then one per ensemble; for a tune run
 * cfl_report_tune (candidates by 8-hex id on validation, ...); for an auto
 * run cfl_report_auto (its leaderboard first, in every format).  Appends
 * to out.  In the text formats (text, compact) then the run's feature
 * importance (cfl_report_feature_importance; tune: the best candidate's).
 * 0, or -1 with err (database error, unknown metric, allocation). */
int cfl_report_run(struct cfl_store *st, const struct cfl_run_info *run,
		   enum cfl_table_format fmt, struct cfl_buf *out,
		   struct cfl_err *err);
/* cfl_report_run with every table of the report rendered in style (NULL:
 * the plain one, as cfl_report_run).  0, or -1 with err. */
int cfl_report_run_styled(struct cfl_store *st, const struct cfl_run_info *run,
			  enum cfl_table_format fmt,
			  const struct cfl_table_style *style,
			  struct cfl_buf *out, struct cfl_err *err);

/* The brief feature importance section of the text report: per candidate
 * (cand_id 0: every one; a repeat run has one per model) and kind, its top
 * input columns averaged over its done trials (up to 5, as many as fit in
 * width columns, one at least; width 0: no limit), one line each, after a
 * heading; nothing when the run stored none.  Appends to out.  0, or -1
 * with err. */
int cfl_report_feature_importance(struct cfl_store *st, int64_t run_id,
				  int64_t cand_id, size_t width,
				  struct cfl_buf *out, struct cfl_err *err);

/* ---- auto's leaderboard (auto_report.c) ---- */

struct cfl_study_auto_summary;	/* cfl/study.h */

/* What an entry of auto's leaderboard is made of, read from the store
 * beside the summary. */
struct cfl_report_auto_entry {
	size_t n_members;	/* a bag: its trials (folds, refit); an
				 * ensemble: its bags with a weight above 0
				 * (every bag when it stores no weights) */
	char *members;		/* malloc'd: an ensemble's "gbdt:75e792da
				 * 0.62, forest:9c86aa88 0.38" (weights
				 * when stored; the stored text when it is
				 * not cfl's), a bag's "5 trials" */
};

/* The members of each row of sum (run run_id's summary) into *out
 * ((sum->n_rows), free with cfl_report_auto_entries_free).  0, or -1 with
 * err (database error, allocation). */
int cfl_report_auto_entries(struct cfl_store *st, int64_t run_id,
			    const struct cfl_study_auto_summary *sum,
			    struct cfl_report_auto_entry **out /* OUT */,
			    struct cfl_err *err);
void cfl_report_auto_entries_free(struct cfl_report_auto_entry *e, size_t n);

/* cfl_study_auto_summary of run (its metric the plan's when no result
 * stored one) and cfl_report_auto_entries of it.  0 with both filled
 * (release and free them), or -1 with err. */
int cfl_report_auto_load(struct cfl_store *st, const struct cfl_run_info *run,
			 struct cfl_study_auto_summary *sum /* OUT */,
			 struct cfl_report_auto_entry **entries /* OUT */,
			 struct cfl_err *err);

/* cfl_report_leaderboard's flags. */
#define CFL_BOARD_ONLY 1u	/* the leaderboard's rows alone, as a data
				 * frame reads them (cfl export): JSON an
				 * array of objects */

/* Renders auto's answer from sum in the summary's own order (the ranking
 * is the summary's; this only says it in words) and appends it to out:
 *   text (and compact): "Leaderboard by METRIC", the ranking rule as one
 *     sentence wrapped to width - 1 columns (width 0 or above 80: 79),
 *     the table (rank, entry, kind, oof, valid, test, seconds, members:
 *     their count; "(no model finished its folds)" when empty), then the
 *     search per family and a line when the time limit left fold trials
 *     unfinished;
 *   md: the same as two Markdown tables (members with their weights);
 *   csv: the leaderboard alone, a row per entry (rank, entry, kind,
 *     method, metric, oof, valid, test, seconds, trials, members,
 *     rank_oof, credit; empty cells for undefined values);
 *   json: {"metric", "sign", "ranking", "leaderboard": [...], "search":
 *     [...], "unfinished_folds"}; with CFL_BOARD_ONLY the leaderboard's
 *     array alone.  null for undefined values.
 * entries ((sum->n_rows)) may be NULL: the members are then the trials'
 * count, or empty.  0, or -1 with err on allocation failure. */
int cfl_report_leaderboard(const struct cfl_study_auto_summary *sum,
			   const struct cfl_report_auto_entry *entries,
			   enum cfl_table_format fmt, unsigned flags, size_t width,
			   struct cfl_buf *out, struct cfl_err *err);

/* A run's best in a few words into out (cap bytes), for `cfl runs`: "tree
 * acc 0.960000" (the best score of the first metric on test); a tune
 * run's chosen candidate (the best search score, on validation) with the
 * mean of its refit's test values ("1a2b3c4d acc 0.960000 (refit)"), or
 * its validation score when no refit is stored ("1a2b3c4d score 0.950000
 * (valid)"), never the candidate with the best test mean; an auto run's
 * first entry and its test value.  "-" when there is none or the store
 * fails (run_best.c). */
void cfl_report_run_best(struct cfl_store *st, const struct cfl_run_info *r,
			 char *out, size_t cap);
/* Appends `cfl runs`' listing of st's runs, oldest first, with a header:
 * name, kind, start (UTC), dataset (its file name), status, trials
 * ("done/total, N failed, N cancelled, N pruned") and the best row
 * (cfl_report_run_best).  Columns are padded to their widest cell; when the
 * lines would pass width, the kind, the start, then the dataset are left
 * out, then the best is cut (to 12 at the least).  *n_runs: how many runs
 * (nothing appended for none).  Returns 0, or -1 with err (the store, or
 * out of memory). */
int cfl_report_runs(struct cfl_store *st, size_t width, struct cfl_buf *out,
		    size_t *n_runs /* OUT */, struct cfl_err *err);

/* The report of an auto run from the store: cfl_report_auto_load, then
 * cfl_report_leaderboard in fmt with flags and width.  cfl_report_run
 * gives it for auto runs in every format; cfl auto and cfl export print it.
 * Appends to out.  The leaderboard's count of entries (0: empty), or -1
 * with err. */
int cfl_report_auto(struct cfl_store *st, const struct cfl_run_info *run,
		    enum cfl_table_format fmt, unsigned flags, size_t width,
		    struct cfl_buf *out, struct cfl_err *err);

/* The report of a tune run (tune_report.c): the validation table of the
 * candidates (repeats below the run's num_repeat; the refit's seeds are
 * left out) in fmt; in the text formats (text, compact) then each
 * candidate's parameters that vary between candidates, the Best Parameters
 * blocks per metric and overall and the test table of the best candidate's
 * refit (repeats num_repeat..2*num_repeat-1).  Tables in style (NULL: the
 * plain one).  cfl_report_run gives it for tune runs.  Appends to out.  0,
 * or -1 with err. */
int cfl_report_tune(struct cfl_store *st, const struct cfl_run_info *run,
		    enum cfl_table_format fmt, const struct cfl_table_style *style,
		    struct cfl_buf *out, struct cfl_err *err);

/* The HTML report of a run: one self-contained page (no script, no link,
 * nothing fetched) with the run's facts, its results table, per row and
 * metric the values over repeats as box and strip plots, the ensemble rows,
 * and for tune runs each candidate's score in order and the score against
 * each parameter.  Plots are inline SVG drawn by cfl.  Appends to out.  0,
 * or -1 with err. */
int cfl_report_html(struct cfl_store *st, const struct cfl_run_info *run,
		    struct cfl_buf *out, struct cfl_err *err);

/* ---- exports (export.c): the trials for notebooks and Optuna ---- */

enum cfl_export_format { CFL_EXPORT_CSV, CFL_EXPORT_JSON, CFL_EXPORT_OPTUNA };

/* "csv", "json", "optuna" to the enum; -1 when unknown. */
int cfl_export_format_lookup(const char *name);

/* The trial table of a run, one row per trial (candidate seq, repeat, fold
 * order), as Optuna's trials_dataframe() lays out a study: number, trial,
 * run, model, candidate, phase, repeat, fold, seed, status, attempt,
 * worker, datetime_start, datetime_complete (ISO 8601 in UTC,
 * "YYYY-MM-DDTHH:MM:SS.ffffff+00:00"), duration, peak_rss_kb, value
 * (Optuna's: the run's metric on the part that scores the trial: valid for
 * a search, oof for an auto bag's fold, else test), state (Optuna's
 * TrialState name), then params_NAME per parameter
 * (sorted by name), SPLIT_METRIC per split and metric (valid, test, oof),
 * and error.  CSV: a header row, RFC 4180 quoting, empty cells for what is
 * unset; JSON: an array of objects, null for what is unset, parameters as
 * numbers when they read as numbers.  fmt is CSV or JSON.  Appends to out.
 * 0, or -1 with err. */
int cfl_export_trials(struct cfl_store *st, const struct cfl_run_info *run,
		      enum cfl_export_format fmt, struct cfl_buf *out,
		      struct cfl_err *err);

/* A tune run as an Optuna study named after the run, written to path in
 * Optuna 3.1's SQLite schema (cfl_store_optuna_write): one Optuna trial per
 * candidate (number = its seq), state COMPLETE with value = sign * its
 * score (the metric's own value: mean - std, or mean + std when lower is
 * better, the study's direction then MINIMIZE), FAIL when it has none;
 * distributions from the run's stored search space (choice and fixed
 * parameters categorical, ranges float or int, log for loguniform);
 * user attributes cfl_candidate, cfl_model, cfl_score, seeds and per split and metric
 * the mean and the values of its search trials (the best candidate also
 * refit_*).  Fails on a repeat run, or as cfl_store_optuna_write.  0, or
 * -1 with err. */
int cfl_export_optuna(struct cfl_store *st, const struct cfl_run_info *run,
		      const char *path, struct cfl_err *err);

#endif
