/*
 * Column typing in carefree-learn's spirit: what each CSV column is
 * (numeric, categorical, dropped with a reason, the target), the task and
 * the classes.  Typing looks at the whole file, never at a split, so every
 * split of one file sees the same columns.  Numbers stay numeric, integer
 * codes too (one-hot encoding an ordinal score loses its order); text is
 * categorical; --categorical makes chosen columns categorical.  --drop /
 * --only / --categorical match column names through core's regular
 * expressions.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- schema: per-column statistics ---- */

/* Counts, range and integer-ness of every column in one row-major sweep
 * (columns one at a time would stride through memory n_cols times). */
static void sweep_stats(struct cfl_schema *s, const struct cfl_csv *csv,
			size_t *first_text /* OUT n_cols */)
{
	size_t n = csv->n_rows, m = csv->n_cols;

	for (size_t j = 0; j < m; j++) {
		s->cols[j].is_int = 1;
		s->cols[j].min = INFINITY;
		s->cols[j].max = -INFINITY;
		first_text[j] = (size_t)-1;
	}
	for (size_t i = 0; i < n; i++) {
		const double *num = csv->num + i * m;

		for (size_t j = 0; j < m; j++) {
			struct cfl_column *c = &s->cols[j];
			double v = num[j];

			if (!isnan(v)) {
				if (c->is_int && (v != floor(v) || fabs(v) > 9007199254740992.0))
					c->is_int = 0;
				if (v < c->min)
					c->min = v;
				if (v > c->max)
					c->max = v;
			} else if (!csv->text[j] || !csv->text[j][i]) {
				c->n_missing++;
			} else if (!c->n_text++) {
				first_text[j] = i;
			}
		}
	}
	for (size_t j = 0; j < m; j++) {
		struct cfl_column *c = &s->cols[j];

		if (c->n_text)
			c->is_int = 0;
		if (c->min > c->max)
			c->min = c->max = 0;	/* no numbers at all */
	}
}

/* Distinct values of column j: by value when it holds only numbers (1 and
 * 1.0 are one value), else by text.  Exact as far as typing looks at it:
 * once past DISTINCT_CAP values (above every threshold typing compares
 * with) counting stops, for a column of non-integers at once (id-like is
 * for integers and text), for others once a value came twice (so the
 * column is not id-like either); n_distinct is then DISTINCT_CAP + 1 and
 * distinct_capped is set.  Counting a column of a million floats exactly
 * took a quarter of a load. */
static void count_distinct(struct cfl_column *c, const struct cfl_csv *csv,
			   size_t j, struct dset *nums, struct dset *strs)
{
	size_t n = csv->n_rows, m = csv->n_cols;
	int repeat = 0;

	c->distinct_capped = 0;
	if (c->n_text) {
		cfl_dset_clear(strs);
		char **text = csv->text[j];	/* a column with text keeps it */

		for (size_t i = 0; i < n; i++) {
			if (!text[i])
				continue;
			repeat |= !cfl_dset_add_str(strs, text[i]);
			if (strs->n > DISTINCT_CAP && repeat) {
				c->distinct_capped = 1;
				break;
			}
		}
		c->n_distinct = c->distinct_capped ? DISTINCT_CAP + 1 : strs->n;
		return;
	}
	cfl_dset_clear(nums);
	for (size_t i = 0; i < n; i++) {
		double v = csv->num[i * m + j];

		if (isnan(v))
			continue;
		repeat |= !cfl_dset_add_num(nums, v);
		if (nums->n > DISTINCT_CAP && (repeat || !c->is_int)) {
			c->distinct_capped = 1;
			break;
		}
	}
	c->n_distinct = c->distinct_capped ? DISTINCT_CAP + 1 : nums->n;
}

/* Text among mostly numbers is a broken cell, not a categorical column. */
static int check_stray_text(const struct cfl_column *c,
			    const struct cfl_csv *csv, size_t j,
			    size_t first_text, struct cfl_err *err)
{
	size_t n_present = csv->n_rows - c->n_missing;

	if (c->n_text && n_present >= 10 && 10 * c->n_text <= n_present) {
		const char *cell = csv->text[j][first_text];
		/* the option that reads it as labels, spelt out when the
		 * name needs no escaping in a regular expression */
		size_t len = strlen(c->name);
		int plain = len <= 60 &&
			    strspn(c->name, "abcdefghijklmnopqrstuvwxyz"
					    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == len;

		return cfl_err_set(err, "%s:%zu: text '%.40s' in numeric column '%s' (%zu of %zu values are numbers); fix it, write a missing value (NA), or read the column as labels with --categorical%s%s%s",
				   csv->name, csv->line[first_text], cell,
				   c->name, n_present - c->n_text, n_present,
				   plain ? " '^" : "", plain ? c->name : "",
				   plain ? "$'" : "");
	}
	return 0;
}

/* ---- schema: --drop / --only / --categorical ---- */

static struct cfl_regex *compile_re(const char *opt, const char *pattern,
				    struct cfl_err *err)
{
	struct cfl_regex *re = cfl_regex_new(pattern, CFL_REGEX_UTF, err);

	if (!re)
		cfl_err_prefix(err, "%s '%s'", opt, pattern);
	return re;
}

/* 1 when name matches re, 0 when not, -1 on a matching error. */
static int re_match(struct cfl_regex *re, const char *opt, const char *name,
		    struct cfl_err *err)
{
	struct cfl_err why;
	int rc = cfl_regex_match(re, name, strlen(name), &why);

	if (rc < 0)
		return cfl_err_set(err, "%s: cannot match column '%s' (%s)", opt,
				   name, why.msg);
	return rc;
}

/* ---- schema: target and classes ---- */

int cfl_id_name(const char *name)
{
	static const char *const exact[] = { "id", "idx", "index", "key", "uuid",
					     "guid", "row", "rowid", "row_id",
					     "row_number", "unnamed: 0" };
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcasecmp(name, exact[i]))
			return 2;
	if (n > 3 && (name[n - 3] == '_' || name[n - 3] == '-' || name[n - 3] == ' ') &&
	    !strcasecmp(name + n - 2, "id"))
		return 1;
	return n > 2 && name[n - 2] == 'I' && (name[n - 1] == 'd' || name[n - 1] == 'D') &&
	       name[n - 3] != 'I';
}

/* 1 when column t's integer values rise (or fall) strictly row by row. */
static int monotone(const struct cfl_csv *csv, size_t t)
{
	size_t m = csv->n_cols;
	int up = 1, down = 1;

	for (size_t i = 1; i < csv->n_rows && (up || down); i++) {
		double a = csv->num[(i - 1) * m + t], b = csv->num[i * m + t];

		up &= b > a;
		down &= b < a;
	}
	return up || down;
}

/* The last column taken as the target by default must not be a row
 * identifier: learning it "works" (a regression on row numbers, or as
 * many classes as rows) and prints a meaningless score.  Named by
 * --target, it is taken as asked. */
static int check_id_target(const struct cfl_column *c, const struct cfl_csv *csv,
			   size_t t, struct cfl_err *err)
{
	const char *why = NULL;

	/* "id" whatever it holds; "species_id" only when most values differ
	 * (few repeated codes are classes) */
	int named = cfl_id_name(c->name);

	if (named == 2 || (named && 2 * c->n_distinct > csv->n_rows))
		why = "its name";
	else if ((c->is_int || c->n_text) && csv->n_rows >= ID_MIN_ROWS &&
		 c->n_distinct == csv->n_rows)
		why = c->n_text ? "all distinct texts"
		      : monotone(csv, t) ? "all distinct integers, in order"
		      : "all distinct integers";
	if (!why)
		return 0;
	return cfl_err_set(err, "%s: the last column '%s' looks like a row identifier (%s), not a target; say which column is the target with --target NAME (--target %s to learn it anyway)",
			   csv->name, c->name, why, c->name);
}

static int infer_target(struct cfl_schema *s, const struct cfl_csv *csv,
			const struct cfl_schema_opts *o, size_t first_text,
			struct dset *nums, struct dset *strs,
			struct cfl_err *err)
{
	struct cfl_column *c = &s->cols[s->target];
	size_t t = s->target, n = csv->n_rows, k;
	struct cfl_err e2;

	if (c->n_missing) {
		for (size_t i = 0; i < n; i++)
			if (cfl_csv_missing(csv, i, t))
				return cfl_err_set(err, "%s:%zu: missing value in the target column '%s'",
						   csv->name, csv->line[i], c->name);
	}
	if (check_stray_text(c, csv, t, first_text, &e2) == -1 &&
	    o->task != CFL_TASK_CLF)
		return cfl_err_set(err, "%s", e2.msg);
	if (!o->target && check_id_target(c, csv, t, err))
		return -1;
	s->target_given = o->target != NULL;
	s->task_given = o->task != CFL_TASK_AUTO;
	s->task = o->task;
	if (s->task == CFL_TASK_AUTO)
		s->task = c->n_text || (c->is_int && c->n_distinct <= CLF_MAX_INT_CLASSES)
			  ? CFL_TASK_CLF : CFL_TASK_REG;
	if (s->task == CFL_TASK_REG) {
		if (c->n_text) {
			const char *cell = csv->text[t][first_text];

			return cfl_err_set(err, "%s:%zu: regression target '%s' is not a number: '%.40s'",
					   csv->name, csv->line[first_text], c->name, cell);
		}
		if (c->n_distinct < 2)
			return cfl_err_set(err, "%s: target '%s' is constant",
					   csv->name, c->name);
		return 0;
	}
	if (c->n_distinct < 2) {
		char buf[CFL_CSV_CELL_BUF];

		return cfl_err_set(err, "%s: target '%s' has one class ('%.40s'): nothing to classify",
				   csv->name, c->name, cfl_csv_cell(csv, 0, t, buf));
	}
	if (c->n_distinct > MAX_CLASSES && c->distinct_capped)
		return cfl_err_set(err, "%s: target '%s' has more than %d classes; use --task reg",
				   csv->name, c->name, MAX_CLASSES);
	if (c->n_distinct > MAX_CLASSES)
		return cfl_err_set(err, "%s: target '%s' has %zu classes (more than %d); use --task reg",
				   csv->name, c->name, c->n_distinct, MAX_CLASSES);
	k = c->n_distinct;
	s->n_classes = k;
	s->class_names = cfl_calloc(k, sizeof(char *), err);
	s->class_counts = cfl_calloc(k, sizeof(size_t), err);
	if (!s->class_names || !s->class_counts)
		return -1;
	if (!c->n_text) {
		/* numeric classes, sorted by value; names print the value */
		size_t i = 0;

		s->class_values = cfl_calloc(k, sizeof(double), err);
		if (!s->class_values)
			return -1;
		for (size_t h = 0; h < nums->cap && i < k; h++)
			if (nums->used[h]) {
				memcpy(&s->class_values[i++], &nums->keys[h], sizeof(double));
			}
		qsort(s->class_values, k, sizeof(double), cfl_cmp_double);
		for (i = 0; i < k; i++) {
			char buf[40];

			snprintf(buf, sizeof(buf), "%.17g", s->class_values[i]);
			s->class_names[i] = cfl_strdup(buf, err);
			if (!s->class_names[i])
				return -1;
		}
	} else {
		size_t i = 0;

		for (size_t h = 0; h < strs->cap && i < k; h++)
			if (strs->used[h]) {
				s->class_names[i] = cfl_strdup(strs->strs[h], err);
				if (!s->class_names[i++])
					return -1;
			}
		qsort(s->class_names, k, sizeof(char *), cfl_cmp_str);
	}
	{
		double *y = cfl_malloc(n * sizeof(double), err);

		if (!y || cfl_schema_labels(s, csv, y, err)) {
			free(y);
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			s->class_counts[(size_t)y[i]]++;
		free(y);
	}
	return 0;
}

/* Class index of a target cell, or -1 when it is not a known class. */
long cfl_class_index(char *const *names, const double *values, size_t k,
		     const char *cell, double num)
{
	size_t lo = 0, hi = k;

	if (values) {
		if (isnan(num))
			return -1;
		if (num == 0)
			num = 0;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (values[mid] < num)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < k && values[lo] == num ? (long)lo : -1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(names[mid], cell);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k && strcmp(names[lo], cell) == 0 ? (long)lo : -1;
}

int cfl_schema_labels(const struct cfl_schema *s, const struct cfl_csv *csv,
		      double *y, struct cfl_err *err)
{
	size_t m = csv->n_cols, t = s->target;
	char buf[CFL_CSV_CELL_BUF];

	for (size_t i = 0; i < csv->n_rows; i++) {
		double v = csv->num[i * m + t];
		/* the text only where it is needed: a number's is written
		 * out, which is slow */
		const char *cell = isnan(v) || (s->task != CFL_TASK_REG && !s->class_values)
				   ? cfl_csv_cell(csv, i, t, buf) : "";

		if (!cell)
			return cfl_err_set(err, "%s:%zu: missing value in the target column '%s'",
					   csv->name, csv->line[i], s->cols[t].name);
		if (s->task == CFL_TASK_REG) {
			if (isnan(v))
				return cfl_err_set(err, "%s:%zu: regression target '%s' is not a number: '%.40s'",
						   csv->name, csv->line[i], s->cols[t].name, cell);
			y[i] = v;
		} else {
			long ci = cfl_class_index(s->class_names, s->class_values,
						  s->n_classes, cell, v);

			if (ci < 0)
				return cfl_err_set(err, "%s:%zu: unknown class '%.40s' in column '%s'",
						   csv->name, csv->line[i],
						   cfl_csv_cell(csv, i, t, buf), s->cols[t].name);
			y[i] = (double)ci;
		}
	}
	return 0;
}

/* ---- schema: inference ---- */

int cfl_schema_infer(struct cfl_schema *s, const struct cfl_csv *csv,
		     const struct cfl_schema_opts *o, struct cfl_err *err)
{
	struct cfl_schema_opts none = { 0 };
	struct dset nums, strs;
	struct cfl_regex *drop = NULL, *only = NULL, *cat = NULL;
	size_t *first_text = NULL;
	long t;

	memset(s, 0, sizeof(*s));
	memset(&nums, 0, sizeof(nums));
	memset(&strs, 0, sizeof(strs));
	if (!o)
		o = &none;
	if (csv->n_cols < 2)
		return cfl_err_set(err, "%s: needs at least two columns (features and a target), found %zu",
				   csv->name, csv->n_cols);
	if (o->target) {
		t = cfl_csv_column(csv, o->target);
		if (t < 0) {
			const char *near = cfl_csv_closest_column(csv, o->target);
			char cols[512] = "";

			cfl_csv_list_columns(csv, 12, cols, sizeof(cols));
			if (near)
				return cfl_err_set(err, "%s: no column named '%s' (--target); did you mean '%s'? (columns: %s)",
						   csv->name, o->target, near, cols);
			return cfl_err_set(err, "%s: no column named '%s' (--target); the columns are %s",
					   csv->name, o->target, cols);
		}
	} else {
		t = (long)csv->n_cols - 1;
	}
	if (o->drop_re && !(drop = compile_re("--drop", o->drop_re, err)))
		goto fail;
	if (o->only_re && !(only = compile_re("--only", o->only_re, err)))
		goto fail;
	if (o->categorical_re &&
	    !(cat = compile_re("--categorical", o->categorical_re, err)))
		goto fail;
	s->n_cols = csv->n_cols;
	s->target = (size_t)t;
	s->cols = cfl_calloc(csv->n_cols, sizeof(*s->cols), err);
	first_text = cfl_calloc(csv->n_cols, sizeof(size_t), err);
	if (!s->cols || !first_text ||
	    cfl_dset_init(&nums, csv->n_rows, 0, err))
		goto fail;
	sweep_stats(s, csv, first_text);
	/* the set of strings only when some column holds text */
	for (size_t j = 0; j < csv->n_cols; j++)
		if (s->cols[j].n_text && !strs.cap &&
		    cfl_dset_init(&strs, csv->n_rows, 1, err))
			goto fail;
	for (size_t j = 0; j < csv->n_cols; j++) {
		struct cfl_column *c = &s->cols[j];

		c->name = csv->header[j];
		count_distinct(c, csv, j, &nums, &strs);
		if (j == s->target) {
			c->type = CFL_COL_TARGET;
			if (infer_target(s, csv, o, first_text[j], &nums, &strs, err))
				goto fail;
			continue;
		}
		c->type = c->n_text ? CFL_COL_CATEGORICAL : CFL_COL_NUMERIC;
		c->type_reason = c->n_text ? "text" : c->is_int ? "integers" : "numbers";
		if (only) {
			int r = re_match(only, "--only", c->name, err);

			if (r < 0)
				goto fail;
			if (!r) {
				c->type = CFL_COL_DROPPED;
				c->drop_reason = "not in --only";
				continue;
			}
		}
		if (drop) {
			int r = re_match(drop, "--drop", c->name, err);

			if (r < 0)
				goto fail;
			if (r) {
				c->type = CFL_COL_DROPPED;
				c->drop_reason = "--drop";
				continue;
			}
		}
		if (cat) {
			int r = re_match(cat, "--categorical", c->name, err);

			if (r < 0)
				goto fail;
			if (r) {
				c->type = CFL_COL_CATEGORICAL;
				c->type_reason = "--categorical";
			}
		}
		if (c->n_distinct == 0) {
			c->type = CFL_COL_DROPPED;
			c->drop_reason = "all missing";
			continue;
		}
		if (c->n_distinct == 1) {
			c->type = CFL_COL_DROPPED;
			c->drop_reason = "constant";
			continue;
		}
		/* a few text cells among numbers are broken cells, unless
		 * --categorical says the column holds labels */
		if (c->type_reason[0] != '-' &&
		    check_stray_text(c, csv, j, first_text[j], err))
			goto fail;
		if ((c->n_text || c->is_int) && csv->n_rows >= ID_MIN_ROWS &&
		    c->n_distinct == csv->n_rows) {
			c->type = CFL_COL_DROPPED;
			c->drop_reason = "id-like (all distinct)";
			continue;
		}
		if (c->type == CFL_COL_CATEGORICAL && c->n_distinct > CAT_MAX_LEVELS) {
			c->type = CFL_COL_DROPPED;
			c->drop_reason = "too many categories";
			continue;
		}
	}
	/* Integer columns stay numeric whatever their count of values: most
	 * are ordinal (ratings, counts, sizes), and one-hot encoding them
	 * throws their order away (and widens the data tenfold).  A column
	 * of true codes is named with --categorical. */
	{
		size_t n_used = 0;

		for (size_t j = 0; j < csv->n_cols; j++)
			if (s->cols[j].type == CFL_COL_NUMERIC ||
			    s->cols[j].type == CFL_COL_CATEGORICAL)
				n_used++;
		if (!n_used) {
			cfl_err_set(err, "%s: no usable feature columns (all dropped)",
				    csv->name);
			goto fail;
		}
	}
	free(first_text);
	cfl_dset_release(&nums);
	cfl_dset_release(&strs);
	cfl_regex_free(drop);
	cfl_regex_free(only);
	cfl_regex_free(cat);
	return 0;
fail:
	free(first_text);
	cfl_dset_release(&nums);
	cfl_dset_release(&strs);
	cfl_regex_free(drop);
	cfl_regex_free(only);
	cfl_regex_free(cat);
	cfl_schema_release(s);
	return -1;
}

void cfl_schema_release(struct cfl_schema *s)
{
	if (!s)
		return;
	if (s->class_names)
		for (size_t i = 0; i < s->n_classes; i++)
			free(s->class_names[i]);
	free(s->class_names);
	free(s->class_counts);
	free(s->class_values);
	free(s->cols);
	memset(s, 0, sizeof(*s));
}

const char *cfl_coltype_name(enum cfl_coltype t)
{
	switch (t) {
	case CFL_COL_NUMERIC: return "numeric";
	case CFL_COL_CATEGORICAL: return "categorical";
	case CFL_COL_DROPPED: return "dropped";
	case CFL_COL_TARGET: return "target";
	}
	return "?";
}
