/*
 * Helpers shared by the files of src/data (not part of the API): a hash set
 * of numbers or strings used to count distinct values and collect levels.
 * The set never owns the strings it holds.
 */
#ifndef CFL_DATA_INTERNAL_H
#define CFL_DATA_INTERNAL_H

#include "cfl/data.h"

struct dset {
	size_t cap, n;		/* cap: a power of two >= 2 * expected */
	int strings;
	uint64_t *keys;		/* numbers: their bits (-0 as +0) */
	const char **strs;	/* strings: the pointers */
	unsigned char *used;
};

int cfl_dset_init(struct dset *s, size_t n_expected, int strings,
		  struct cfl_err *err);
void cfl_dset_clear(struct dset *s);
void cfl_dset_release(struct dset *s);
/* Adds a value; returns 1 when it was new, 0 when already there. */
int cfl_dset_add_num(struct dset *s, double v);
int cfl_dset_add_str(struct dset *s, const char *v);

/* cfl_csv_read, where the columns named keep[0..n_keep) (when present)
 * keep their text even when every cell is a number, and *n_bytes (when not
 * NULL) gets the count of bytes read. */
int cfl_csv_read_keep(struct cfl_csv *csv, const char *path,
		      const char *const *keep, size_t n_keep,
		      size_t *n_bytes /* OUT, may be NULL */,
		      struct cfl_err *err);

/* The columns whose text a read keeps as written even when every cell is
 * a number: those named names[0..n_names), and those want(ctx, name) says
 * yes to (when want is not NULL). */
struct csv_keep {
	const char *const *names;
	size_t n_names;
	int (*want)(void *ctx, const char *name);
	void *ctx;
};
/* cfl_csv_read_keep with the columns chosen by ks (NULL: none). */
int cfl_csv_read_chosen(struct cfl_csv *csv, const char *path,
			const struct csv_keep *ks,
			size_t *n_bytes /* OUT, may be NULL */,
			struct cfl_err *err);
/* Whether a column's name is one people give a row identifier: 2 for a
 * name that is nothing else (id, ID, idx, index, key, uuid, guid, row,
 * rowid, row_id, row_number, "Unnamed: 0"), 1 for one that ends like one
 * (customer_id, customer-id, customerId, CustomerID), else 0. */
int cfl_id_name(const char *name);

/* The bytes a CSV file is read in at first [1 MiB] (tests shrink it so
 * that rows cross window ends everywhere). */
extern size_t cfl_csv_window;

/* Reads a whole file into a new NUL-terminated buffer; NULL with
 * "cannot open 'path': ..." in err. */
char *cfl_csv_slurp(const char *path, size_t *len /* OUT */, struct cfl_err *err);

/* cfl_encoder_apply on the rows idx[0..n_idx) of csv only (out row r is
 * csv row idx[r]; every row when idx is NULL), so a split's parts are
 * encoded without an encoded copy of the whole file.  idx must be in
 * range.  0, or -1 with err as cfl_encoder_apply. */
int cfl_encoder_apply_rows(const struct cfl_encoder *enc,
			   const struct cfl_csv *csv, const size_t *idx,
			   size_t n_idx, int with_target, struct cfl_xy *out,
			   struct cfl_err *err);

/* qsort comparators */
int cfl_cmp_double(const void *a, const void *b);
int cfl_cmp_str(const void *a, const void *b);

/* Class index of a target cell among sorted classes (by value when values
 * is not NULL, else by text), or -1 when it is not a known class. */
long cfl_class_index(char *const *names, const double *values, size_t k,
		     const char *cell, double num);

#define CAT_MAX_LEVELS 256	/* text columns with more levels are dropped */
#define CLF_MAX_INT_CLASSES 20	/* integer targets with <= this many values: classification */
#define ID_MIN_ROWS 20		/* id-like detection needs at least this many rows */
#define MAX_CLASSES 1000
/* distinct values counted exactly up to here (the largest threshold above) */
#define DISTINCT_CAP MAX_CLASSES

#endif
