/*
 * cfl data: CSV reading, column typing, encoding and splits.
 *
 * Flow: cfl_csv_read (raw cells) -> cfl_schema_infer (types, target, task)
 * -> split rows with the run seed -> cfl_encoder_fit on the train rows only
 * -> cfl_encoder_apply to every part.  cfl_data_load does all of it.  The
 * encoder is a value: it is saved inside model files and applied to new CSV
 * rows by column name.  Depends on core (its regular expressions
 * match --drop / --only / --categorical / --keep) and zlib (gzip input).
 */
#ifndef CFL_DATA_H
#define CFL_DATA_H

#include "cfl/core.h"

/* ---- CSV ---- */

/* A parsed CSV file: a header row and n_rows x n_cols cells.  A missing
 * cell ('', '?', or NA, NaN, null, N/A in any case; after trimming blanks
 * around unquoted cells) has no value.  Every cell's number is in num; a
 * column's texts are kept only when one of its cells is not a number (then
 * for every cell of it, numbers too, as written), so a file of numbers
 * costs 8 bytes a cell.  Empty header names become "column_N". */
struct cfl_csv {
	char *name;		/* path, for messages */
	char delim;		/* detected: ',', ';' or '\t' */
	size_t n_rows, n_cols;
	char **header;		/* n_cols */
	double *num;		/* (n_rows, n_cols), row-major: the cell as a
				 * number, NaN when missing or not a decimal
				 * number */
	char ***text;		/* n_cols: NULL for a column of numbers and
				 * missing cells only, else its n_rows cells'
				 * text (NULL = missing) */
	size_t *line;		/* n_rows: 1-based source line of each row */
	int gzip;		/* the bytes were gzip-compressed */
	const char *recoded;	/* NULL: the text was UTF-8 (or ASCII);
				 * "Windows-1252": it was not, and was
				 * transcoded from that (Latin-1 and its
				 * Windows superset) into UTF-8 */
	size_t recoded_line;	/* recoded: the first line with such a byte */
	void *arena;		/* owns the header and the cell text */
	char *names;		/* owns generated header names */
};

/* True when cell (i, j) is missing. */
int cfl_csv_missing(const struct cfl_csv *csv, size_t i, size_t j);
#define CFL_CSV_CELL_BUF 32
/* The text of cell (i, j): the cell as written in a column that keeps its
 * texts, NULL when missing, else (a column of numbers) its number in the
 * shortest %g that reads back the same, written into buf (which then holds
 * it until the next call with buf). */
const char *cfl_csv_cell(const struct cfl_csv *csv, size_t i, size_t j,
			 char *buf /* CFL_CSV_CELL_BUF bytes */);

/* The value of a decimal number ([+-]digits[.digits][e[+-]digits], no
 * blanks, inf, nan or hex), or NaN when s is not one. */
double cfl_csv_number(const char *s);
/* True when s spells a missing value ('' ? NA NaN null N/A, any case). */
int cfl_csv_is_missing(const char *s);

/* Parses a whole CSV buffer: RFC 4180 quoting (embedded delimiters, quotes
 * and newlines), CRLF or LF, a UTF-8 BOM, delimiter detected from the
 * header line.  gzip bytes are inflated first (csv->gzip).  Text that is
 * not UTF-8 is transcoded from Windows-1252 (csv->recoded says so, for a
 * warning) when no byte of it is UTF-8 beyond ASCII; a file that mixes
 * both is refused ("name:line: byte B: ... not UTF-8").  Fails with
 * "name:line: what" on a ragged row, an unclosed quote, an empty file or a
 * header without columns, and with "name: ... file (zip|parquet|JSON|...)"
 * and what to do for bytes that are not CSV text.  On failure csv holds
 * nothing to release. */
int cfl_csv_parse(struct cfl_csv *csv, const char *name, const char *text,
		  size_t len, struct cfl_err *err);
/* Reads and parses path a window at a time (never the whole file at once;
 * a pipe, a gzip file and a file to transcode are read whole first); "-"
 * is standard input.  "cannot open 'path': ...", "cannot read 'path':
 * ..." when it cannot, and the errors of cfl_csv_parse. */
int cfl_csv_read(struct cfl_csv *csv, const char *path, struct cfl_err *err);
void cfl_csv_release(struct cfl_csv *csv);
/* Column index of name, or -1. */
long cfl_csv_column(const struct cfl_csv *csv, const char *name);
/* The column name among csv's closest to name (edit distance at most a
 * third of name, one at least; case ignored), or NULL when none is close. */
const char *cfl_csv_closest_column(const struct cfl_csv *csv, const char *name);
/* Appends to buf (cap bytes, NUL-terminated) csv's column names quoted and
 * comma-separated, the first max of them then "and N more". */
void cfl_csv_list_columns(const struct cfl_csv *csv, size_t max, char *buf,
			  size_t cap);

/* ---- column typing ---- */

enum cfl_task { CFL_TASK_AUTO = 0, CFL_TASK_CLF, CFL_TASK_REG };

enum cfl_coltype {
	CFL_COL_NUMERIC,
	CFL_COL_CATEGORICAL,
	CFL_COL_DROPPED,	/* see drop_reason */
	CFL_COL_TARGET,
};

struct cfl_column {
	char *name;			/* points into the csv header */
	enum cfl_coltype type;
	const char *drop_reason;	/* static text: "constant", "all missing",
					 * "id-like (all distinct)", "too many
					 * categories", "--drop", "not in --only" */
	const char *type_reason;	/* static text, why numeric or
					 * categorical: "numbers", "integers"
					 * (kept numeric), "text",
					 * "--categorical" */
	size_t n_missing, n_distinct;
	int distinct_capped;		/* n_distinct is a floor: counting stopped
					 * past 1000 values (and past a repeat,
					 * for integers and text) */
	size_t n_text;			/* non-missing cells that are not numbers */
	int is_int;			/* every non-missing cell an integer */
	double min, max;		/* over the number cells (0 when none) */
};

struct cfl_schema {
	size_t n_cols;
	struct cfl_column *cols;	/* one per CSV column, in file order */
	size_t target;			/* column index of the target */
	enum cfl_task task;
	/* classification: classes sorted (numerically when all numeric,
	 * else by text) and their counts over the whole file */
	size_t n_classes;
	char **class_names;		/* owned */
	size_t *class_counts;
	double *class_values;		/* numeric classes: their values
					 * (sorted), else NULL */
	int target_given;		/* --target named the target */
	int task_given;			/* --task forced the task */
};

struct cfl_schema_opts {
	const char *target;	/* NULL: the last column */
	enum cfl_task task;	/* CFL_TASK_AUTO: inferred from the target */
	const char *drop_re;	/* PCRE2 pattern of columns to drop, or NULL */
	const char *only_re;	/* PCRE2 pattern of columns to keep, or NULL */
	const char *categorical_re;	/* PCRE2 pattern of columns to one-hot
					 * encode as categories, or NULL */
};

/* Infers each column's type: text columns are categorical, number columns
 * (integers too) numeric, and columns matching categorical_re categorical
 * whatever they hold; constant and id-like columns, and categorical ones
 * with more than 256 levels, are dropped with a reason.  The
 * target's task is inferred (text or few integer values: classification)
 * unless forced.  Fails on a missing target column (naming the closest
 * column and listing the columns), a target with one class or missing
 * target values, a bad regex (naming the option), and a target chosen by
 * default (the last column) that looks like an identifier: a name like
 * 'id', 'row_id' or 'customerId', or integers or texts all distinct (20
 * rows or more); --target NAME takes it anyway.  On failure schema holds
 * nothing to release. */
int cfl_schema_infer(struct cfl_schema *schema, const struct cfl_csv *csv,
		     const struct cfl_schema_opts *opts, struct cfl_err *err);
void cfl_schema_release(struct cfl_schema *schema);
/* "numeric", "categorical", "dropped" or "target". */
const char *cfl_coltype_name(enum cfl_coltype t);

/* ---- encoded rows ---- */

/* Encoded rows, what models train on.  For classification y holds the class
 * index 0..n_classes-1; for regression (n_classes == 0) the raw target. */
struct cfl_xy {
	size_t n, d;
	int n_classes;		/* 0: regression */
	float *x;		/* (n, d), row-major */
	double *y;		/* n */
};

void cfl_xy_init(struct cfl_xy *xy);
void cfl_xy_release(struct cfl_xy *xy);
/* Puts the rows of a then those of b (same width and task) into dst
 * (overwritten).  0, or -1 with err (shapes differ, out of memory). */
int cfl_xy_concat(struct cfl_xy *dst, const struct cfl_xy *a,
		  const struct cfl_xy *b, struct cfl_err *err);
/* Copies rows idx[0..n_idx) of src into dst (which is overwritten). */
int cfl_xy_take(struct cfl_xy *dst, const struct cfl_xy *src,
		const size_t *idx, size_t n_idx, struct cfl_err *err);

/* ---- encoding ---- */

struct cfl_enc_col;	/* one used input column: kind, statistics, levels */

/* What turns raw CSV cells into model inputs: median imputation of numbers
 * then z-score with train statistics; one-hot categoricals with one extra
 * slot for unseen or missing values; class names mapped to 0..K-1. */
struct cfl_encoder {
	size_t n_in;			/* used input columns */
	struct cfl_enc_col *in;
	size_t d;			/* encoded width */
	char *target_name;
	int n_classes;			/* 0: regression */
	char **class_names;		/* n_classes, sorted as in the schema */
	double *class_values;		/* numeric classes: their values, else NULL */
	char data_sha256[65];		/* the SHA-256 of the data file whose rows
					 * it was fitted on (cfl_data_load sets
					 * it), or "" when unknown (a file of an
					 * older cfl, a csv in memory) */
};

/* Fits the encoder on the rows idx[0..n_idx) of csv, typed by schema
 * (data_sha256 is left empty). */
int cfl_encoder_fit(struct cfl_encoder *enc, const struct cfl_schema *schema,
		    const struct cfl_csv *csv, const size_t *idx, size_t n_idx,
		    struct cfl_err *err);
/* Encodes every row of csv (matched to the encoder's columns by name) into
 * out.  with_target: 1 requires the target column, 0 ignores it, -1 uses it
 * when present (out->y is NULL when absent).  A missing column, text in a
 * numeric column or an unknown class is an error naming file, line and
 * column. */
int cfl_encoder_apply(const struct cfl_encoder *enc, const struct cfl_csv *csv,
		      int with_target, struct cfl_xy *out, struct cfl_err *err);
/* cfl_csv_read of a file to encode with enc: the columns enc matches by
 * text (categorical levels and classes that are not numbers) keep their
 * cells' text as written even where they hold only numbers, so "1.0" is
 * not taken for a level "1".  0, or -1 with err as cfl_csv_read. */
int cfl_encoder_read_csv(const struct cfl_encoder *enc, const char *path,
			 struct cfl_csv *csv /* OUT */, struct cfl_err *err);
/* Which columns of a file `cfl predict` carries through to its output. */
enum cfl_keep_mode {
	CFL_KEEP_IDS = 0,	/* the columns the model does not use (neither
				 * input nor target) that look like row
				 * identifiers: an id-like name, or texts or
				 * integers all distinct */
	CFL_KEEP_NONE,
	CFL_KEEP_LIST,		/* spec: names, comma-separated, or else a
				 * PCRE2 pattern matched against each name */
	CFL_KEEP_ALL,		/* every column */
};

struct cfl_keep {
	enum cfl_keep_mode mode;
	const char *spec;	/* CFL_KEEP_LIST only */
};

/* cfl_encoder_read_csv that also keeps the text as written ("007" stays
 * "007") of the columns keep chooses, whose indices it puts into *cols (a
 * malloc'd array in file order; free() it) and *n_cols.  A spec whose
 * comma-separated words are all column names is a list of names; else, if
 * it holds a pattern character (^$.*+?()[]{}|\), a pattern; else the word
 * that is no column is an error naming the closest column and listing
 * them.  A bad pattern, or one that matches no column, is an error too
 * ("--keep '...': ...").  0, or -1 with err and csv empty. */
int cfl_encoder_read_csv_keep(const struct cfl_encoder *enc, const char *path,
			      const struct cfl_keep *keep,
			      struct cfl_csv *csv /* OUT */,
			      size_t **cols /* OUT */, size_t *n_cols /* OUT */,
			      struct cfl_err *err);
/* Appends what `cfl predict` writes, as CSV: a header (the names of csv's
 * columns cols[0..n_cols), "prediction", with proba one "proba_CLASS" per
 * class), then one line per row: those cells as written, the most probable
 * class (the first of tied ones) or the predicted value (%.17g), with
 * proba the class probabilities (%.9g).  pred: (n, n_classes or 1) from
 * the model of enc.  Returns 0, or -1 on allocation failure. */
int cfl_encoder_format_predictions(const struct cfl_encoder *enc,
				   const double *pred, size_t n, int proba,
				   const struct cfl_csv *csv, const size_t *cols,
				   size_t n_cols, struct cfl_buf *b);
/* Encodes the rows of csv and returns class indices / target values only
 * (for splits, which need labels before the encoder exists). */
int cfl_schema_labels(const struct cfl_schema *schema, const struct cfl_csv *csv,
		      double *y /* OUT n_rows */, struct cfl_err *err);
/* Appends the encoder as text lines ("encoder ... end") to out; a known
 * data_sha256 is a line "data HEX" before "end" (optional: files without
 * it load, with data_sha256 ""). */
int cfl_encoder_save(const struct cfl_encoder *enc, struct cfl_buf *out);
/* Reads what cfl_encoder_save wrote; every field is checked. */
int cfl_encoder_load(struct cfl_encoder *enc, struct cfl_reader *in,
		     struct cfl_err *err);
void cfl_encoder_release(struct cfl_encoder *enc);
/* Name of encoded feature j (e.g. "sepal_length" or "color=red"), into buf. */
void cfl_encoder_feature_name(const struct cfl_encoder *enc, size_t j,
			      char *buf, size_t cap);
/* The input column encoded feature j comes from (0..n_in-1: a one-hot
 * column's source column), or -1 when j is out of range. */
long cfl_encoder_feature_column(const struct cfl_encoder *enc, size_t j);
/* The name of input column k (0..n_in-1), or NULL past the end; owned by
 * the encoder. */
const char *cfl_encoder_column_name(const struct cfl_encoder *enc, size_t k);

/* ---- splits ---- */

/* A hold-out split of n rows: test (stratified for classification when
 * n_classes > 0), then a validation part of what remains.  Same seed, same
 * split.  Index arrays are sorted ascending.  Each part has at least one
 * row when its fraction is > 0 (an error when n is too small). */
struct cfl_split {
	size_t n_train, n_valid, n_test;
	size_t *train, *valid, *test;
};

int cfl_split_holdout(struct cfl_split *s, const double *y, size_t n,
		      int n_classes, double test_frac, double valid_frac,
		      uint64_t seed, struct cfl_err *err);
/* The rows cfl_split_holdout gives a part of fraction frac of n rows:
 * round(n * frac), at least 1 when frac > 0, 0 when frac <= 0. */
size_t cfl_split_share(size_t n, double frac);
/* fold[i] in 0..k-1 for each of n rows, stratified when n_classes > 0; every
 * row is in exactly one fold and fold sizes differ by at most one per
 * class. */
int cfl_split_kfold(size_t *fold /* OUT n */, const double *y, size_t n,
		    int n_classes, size_t k, uint64_t seed,
		    struct cfl_err *err);
void cfl_split_release(struct cfl_split *s);

/* ---- everything at once ---- */

struct cfl_data_opts {
	const char *path;
	struct cfl_schema_opts schema;
	const char *test_path;	/* --test FILE instead of a split, or NULL */
	const char *valid_path;	/* --valid FILE, or NULL */
	double test_frac;	/* default 0.2 */
	double valid_frac;	/* default 0.1 (of train) */
	int valid_frac_given;	/* valid_frac was chosen by the user: it is
				 * held out whatever the command needs */
	size_t valid_min_rows;	/* valid_frac is held out only when the rows
				 * left after the test part number at least
				 * this (0: always): auto scores out of fold
				 * below it and needs no validation part */
	uint64_t seed;
};

void cfl_data_opts_init(struct cfl_data_opts *o);

/* A loaded dataset: the raw CSV, its schema, the encoder fitted on the train
 * rows, and the three encoded parts. */
struct cfl_data {
	struct cfl_csv csv;
	struct cfl_schema schema;
	struct cfl_encoder enc;
	struct cfl_xy train, valid, test;
	unsigned char sha256[32];	/* of the data file's bytes */
	char sha256_hex[65];
	size_t n_no_target[3];		/* rows dropped because their target
					 * cell is missing: of the data file,
					 * the --test file, the --valid file */
	size_t recoded_line[3];		/* the same files: not UTF-8, transcoded
					 * from Windows-1252 (the caller warns):
					 * the first line that was not, else 0 */
};

/* Loads o->path (and o->test_path / o->valid_path) into d.  Rows whose
 * target cell is missing are dropped before anything else and counted in
 * d->n_no_target (the caller warns); every other problem of the files is
 * an error.  0, or -1 with err and d empty. */
int cfl_data_load(struct cfl_data *d, const struct cfl_data_opts *o,
		  struct cfl_err *err);
void cfl_data_release(struct cfl_data *d);
/* What a loaded d learns, in one line for the user (no newline): "target
 * 'species' (last column): classification, 3 classes; 150 rows: 120 train,
 * 30 test", "target 'y' (--target): regression; ...".  An integer target
 * whose task was inferred, with many values or few rows a class, says
 * so and how to force the other task ("integers, 15 values, 8 rows a
 * class: --task reg to regress").  Written into buf (cap bytes, truncated
 * to fit); returns buf. */
char *cfl_data_describe_target(const struct cfl_data *d, char *buf, size_t cap);
/* Appends `cfl data describe`'s report of d, loaded with o: the file, its
 * encoding, SHA-256 and rows, the columns by type, the target and the task
 * (inferred or forced), a table of every column (type, missing and
 * distinct counts, a note on why it is typed so), the classes with their
 * counts, the split and the encoded width; every line within 80 columns
 * where the names allow.  Returns 0, or -1 on allocation failure. */
int cfl_data_describe(const struct cfl_data *d, const struct cfl_data_opts *o,
		      struct cfl_buf *b);

/* The SHA-256 of path's bytes as cfl_data_load computes it (d->sha256_hex),
 * into hex: to tell whether a file is the one a run was trained on.  0, or
 * -1 with err ("cannot open/read 'path': ..."; "-" cannot be read twice:
 * "standard input was read already"). */
int cfl_data_file_sha256(const char *path, char hex[65], struct cfl_err *err);

/* The encoded parts of d (train, valid, test), the data file's SHA-256 and
 * the encoder, as one binary blob: what a worker needs to run trials (and
 * to name input columns as the coordinator does), without the CSV
 * (rank 0 of an MPI job loads the file once and broadcasts this).  Native
 * byte order, marked, so a rank of another byte order refuses it.  Appends
 * to out; 0, or -1 with err (out of memory). */
int cfl_data_pack_parts(const struct cfl_data *d, struct cfl_buf *out,
			struct cfl_err *err);
/* Reads what cfl_data_pack_parts wrote into d (overwritten): the three
 * parts, sha256 / sha256_hex and the encoder (which must match the parts'
 * width and classes); csv and schema stay empty.
 * Every size is checked against len.  0, or -1 with err ("data parts: ..."
 * for a truncated or malformed blob); on failure d holds nothing. */
int cfl_data_unpack_parts(struct cfl_data *d, const void *blob, size_t len,
			  struct cfl_err *err);

#endif
