/*
 * The encoder: what turns raw CSV cells into model inputs.  Numbers: median
 * imputation then z-score; categoricals: one-hot over the training levels
 * plus one slot for unseen or missing values; class names to 0..K-1.  All
 * statistics come from the training rows only.  The encoder is a value: it
 * is saved as text inside model files and every field is checked on load
 * (model files can be hostile).  Also struct cfl_xy, the encoded rows.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ENC_NUM = 0, ENC_CAT = 1 };

struct cfl_enc_col {
	char *name;
	int kind;		/* ENC_NUM or ENC_CAT */
	size_t offset;		/* first encoded feature */
	double median, mean, std;	/* ENC_NUM */
	int numeric_levels;	/* ENC_CAT: levels are numbers, matched by value */
	size_t n_levels;	/* ENC_CAT: width n_levels + 1 */
	char **levels;		/* sorted by value or by text */
	double *values;		/* numeric_levels: the level values */
};

/* ---- encode: encoded rows ---- */

void cfl_xy_init(struct cfl_xy *xy)
{
	memset(xy, 0, sizeof(*xy));
}

void cfl_xy_release(struct cfl_xy *xy)
{
	if (!xy)
		return;
	free(xy->x);
	free(xy->y);
	memset(xy, 0, sizeof(*xy));
}

int cfl_xy_concat(struct cfl_xy *dst, const struct cfl_xy *a,
		  const struct cfl_xy *b, struct cfl_err *err)
{
	struct cfl_xy out;
	size_t n = a->n + b->n;

	if (b->n && (a->d != b->d || a->n_classes != b->n_classes ||
		     !a->y != !b->y))
		return cfl_err_set(err, "cannot put together rows of %zu and %zu features",
				   a->d, b->d);
	cfl_xy_init(&out);
	out.n = n;
	out.d = a->d;
	out.n_classes = a->n_classes;
	out.x = cfl_calloc(n * a->d + 1, sizeof(float), err);
	if (!out.x)
		return -1;
	if (a->y && !(out.y = cfl_calloc(n + 1, sizeof(double), err))) {
		free(out.x);
		return -1;
	}
	if (a->n)
		memcpy(out.x, a->x, a->n * a->d * sizeof(float));
	if (b->n)
		memcpy(out.x + a->n * a->d, b->x, b->n * b->d * sizeof(float));
	if (a->y) {
		if (a->n)
			memcpy(out.y, a->y, a->n * sizeof(double));
		if (b->n)
			memcpy(out.y + a->n, b->y, b->n * sizeof(double));
	}
	cfl_xy_release(dst);
	*dst = out;
	return 0;
}

int cfl_xy_take(struct cfl_xy *dst, const struct cfl_xy *src,
		const size_t *idx, size_t n_idx, struct cfl_err *err)
{
	struct cfl_xy out;

	cfl_xy_init(&out);
	out.n = n_idx;
	out.d = src->d;
	out.n_classes = src->n_classes;
	out.x = cfl_calloc(n_idx * src->d + 1, sizeof(float), err);
	if (!out.x)
		return -1;
	if (src->y) {
		out.y = cfl_calloc(n_idx + 1, sizeof(double), err);
		if (!out.y) {
			free(out.x);
			return -1;
		}
	}
	for (size_t i = 0; i < n_idx; i++) {
		if (idx[i] >= src->n) {
			cfl_xy_release(&out);
			return cfl_err_set(err, "row index %zu out of range (%zu rows)",
					   idx[i], src->n);
		}
		memcpy(out.x + i * src->d, src->x + idx[i] * src->d,
		       src->d * sizeof(float));
		if (src->y)
			out.y[i] = src->y[idx[i]];
	}
	cfl_xy_release(dst);
	*dst = out;
	return 0;
}

/* ---- encode: fit ---- */

/* The k-th smallest of v[0..n) (Wirth's selection; v is reordered). */
static double select_kth(double *v, size_t n, size_t k)
{
	long l = 0, m = (long)n - 1, kk = (long)k;

	while (l < m) {
		double x = v[kk];
		long i = l, j = m;

		do {
			while (v[i] < x)
				i++;
			while (x < v[j])
				j--;
			if (i <= j) {
				double t = v[i];

				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		if (j < kk)
			l = i;
		if (kk < i)
			m = j;
	}
	return v[kk];
}

static double median(double *v, size_t n)
{
	double hi, lo;

	if (!n)
		return 0;
	hi = select_kth(v, n, n / 2);
	if (n % 2)
		return hi;
	lo = v[0];
	for (size_t i = 1; i < n / 2; i++)	/* max of the lower half */
		if (v[i] > lo)
			lo = v[i];
	return (lo + hi) / 2;
}

/* Statistics of one numeric column from its train values v[0..n) (NaN =
 * missing; v is reordered). */
static void fit_numeric(struct cfl_enc_col *c, double *v, size_t n_all)
{
	size_t n = 0;
	double sum = 0, ss = 0, mean;

	for (size_t i = 0; i < n_all; i++)
		if (!isnan(v[i]))
			v[n++] = v[i];
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	mean = n ? sum / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	c->mean = mean;
	c->std = n ? sqrt(ss / (double)n) : 1;
	if (!(c->std > 1e-12) || !isfinite(c->std))
		c->std = 1;
	c->median = median(v, n);
}

/* Numeric columns are fitted GATHER at a time: one sweep over the train
 * rows copies their values into contiguous buffers (column by column, the
 * rows would be strided through memory once per column). */
#define GATHER 8

static void fit_numeric_block(struct cfl_encoder *enc, const size_t *which,
			      const size_t *cols, size_t w,
			      const struct cfl_csv *csv, const size_t *idx,
			      size_t n_idx, double *buf)
{
	for (size_t i = 0; i < n_idx; i++) {
		const double *row = csv->num + idx[i] * csv->n_cols;

		for (size_t k = 0; k < w; k++)
			buf[k * n_idx + i] = row[cols[k]];
	}
	for (size_t k = 0; k < w; k++)
		fit_numeric(&enc->in[which[k]], buf + k * n_idx, n_idx);
}

static int fit_categorical(struct cfl_enc_col *c, const struct cfl_csv *csv,
			   size_t j, int numeric_levels, const size_t *idx,
			   size_t n_idx, struct cfl_err *err)
{
	struct dset set;
	size_t m = csv->n_cols, k = 0;

	c->numeric_levels = numeric_levels;
	if (cfl_dset_init(&set, n_idx, !numeric_levels, err))
		return -1;
	/* levels by text come from a column that has text cells, which
	 * keeps the text of all of them */
	if (!numeric_levels && !csv->text[j]) {
		cfl_dset_release(&set);
		return cfl_err_set(err, "%s: column '%s' has no text cells", csv->name,
				   csv->header[j]);
	}
	for (size_t i = 0; i < n_idx; i++) {
		if (numeric_levels) {
			double v = csv->num[idx[i] * m + j];

			if (!isnan(v))
				cfl_dset_add_num(&set, v);
		} else if (csv->text[j][idx[i]]) {
			cfl_dset_add_str(&set, csv->text[j][idx[i]]);
		}
	}
	c->n_levels = set.n;
	c->levels = cfl_calloc(set.n + 1, sizeof(char *), err);
	if (!c->levels)
		goto fail;
	if (numeric_levels) {
		c->values = cfl_calloc(set.n + 1, sizeof(double), err);
		if (!c->values)
			goto fail;
		for (size_t h = 0; h < set.cap; h++)
			if (set.used[h])
				memcpy(&c->values[k++], &set.keys[h], sizeof(double));
		qsort(c->values, k, sizeof(double), cfl_cmp_double);
		for (size_t i = 0; i < k; i++) {
			char b[40];

			snprintf(b, sizeof(b), "%.17g", c->values[i]);
			if (!(c->levels[i] = cfl_strdup(b, err)))
				goto fail;
		}
	} else {
		for (size_t h = 0; h < set.cap; h++)
			if (set.used[h] && !(c->levels[k++] = cfl_strdup(set.strs[h], err)))
				goto fail;
		qsort(c->levels, k, sizeof(char *), cfl_cmp_str);
	}
	cfl_dset_release(&set);
	return 0;
fail:
	cfl_dset_release(&set);
	return -1;
}

static int copy_classes(struct cfl_encoder *enc, const struct cfl_schema *s,
			struct cfl_err *err)
{
	size_t k = s->n_classes;

	enc->n_classes = (int)k;
	enc->class_names = cfl_calloc(k + 1, sizeof(char *), err);
	if (!enc->class_names)
		return -1;
	for (size_t i = 0; i < k; i++)
		if (!(enc->class_names[i] = cfl_strdup(s->class_names[i], err)))
			return -1;
	if (s->class_values) {
		enc->class_values = cfl_calloc(k + 1, sizeof(double), err);
		if (!enc->class_values)
			return -1;
		memcpy(enc->class_values, s->class_values, k * sizeof(double));
	}
	return 0;
}

int cfl_encoder_fit(struct cfl_encoder *enc, const struct cfl_schema *s,
		    const struct cfl_csv *csv, const size_t *idx, size_t n_idx,
		    struct cfl_err *err)
{
	double *buf = NULL;
	size_t n_in = 0, which[GATHER], cols[GATHER], w = 0;

	memset(enc, 0, sizeof(*enc));
	for (size_t j = 0; j < s->n_cols; j++)
		if (s->cols[j].type == CFL_COL_NUMERIC ||
		    s->cols[j].type == CFL_COL_CATEGORICAL)
			n_in++;
	enc->in = cfl_calloc(n_in + 1, sizeof(*enc->in), err);
	buf = cfl_malloc((GATHER * n_idx + 1) * sizeof(double), err);
	enc->target_name = cfl_strdup(s->cols[s->target].name, err);
	if (!enc->in || !buf || !enc->target_name)
		goto fail;
	if (s->task == CFL_TASK_CLF && copy_classes(enc, s, err))
		goto fail;
	for (size_t j = 0; j < s->n_cols; j++) {
		const struct cfl_column *col = &s->cols[j];
		struct cfl_enc_col *c;

		if (col->type != CFL_COL_NUMERIC && col->type != CFL_COL_CATEGORICAL)
			continue;
		c = &enc->in[enc->n_in++];
		c->offset = enc->d;
		if (!(c->name = cfl_strdup(col->name, err)))
			goto fail;
		if (col->type == CFL_COL_NUMERIC) {
			c->kind = ENC_NUM;
			which[w] = enc->n_in - 1;
			cols[w++] = j;
			if (w == GATHER) {
				fit_numeric_block(enc, which, cols, w, csv, idx, n_idx, buf);
				w = 0;
			}
			enc->d += 1;
		} else {
			c->kind = ENC_CAT;
			if (fit_categorical(c, csv, j, col->n_text == 0, idx,
					    n_idx, err))
				goto fail;
			enc->d += c->n_levels + 1;
		}
	}
	if (w)
		fit_numeric_block(enc, which, cols, w, csv, idx, n_idx, buf);
	free(buf);
	return 0;
fail:
	free(buf);
	cfl_encoder_release(enc);
	return -1;
}

/* ---- encode: apply ---- */

static size_t level_slot(const struct cfl_enc_col *c, const char *cell,
			 double num)
{
	long i;

	if (!cell)
		return c->n_levels;
	if (c->numeric_levels && isnan(num))
		return c->n_levels;	/* text in a numbers-coded column: unseen */
	i = cfl_class_index(c->levels, c->numeric_levels ? c->values : NULL,
			    c->n_levels, cell, num);
	return i < 0 ? c->n_levels : (size_t)i;
}

int cfl_encoder_apply_rows(const struct cfl_encoder *enc,
			   const struct cfl_csv *csv, const size_t *idx,
			   size_t n_idx, int with_target, struct cfl_xy *out,
			   struct cfl_err *err)
{
	size_t n = idx ? n_idx : csv->n_rows, m = csv->n_cols, *col = NULL;
	long t = -1;
	struct cfl_xy xy;

	cfl_xy_init(&xy);
	col = cfl_calloc(enc->n_in + 1, sizeof(size_t), err);
	if (!col)
		return -1;
	for (size_t k = 0; k < enc->n_in; k++) {
		long j = cfl_csv_column(csv, enc->in[k].name);

		if (j < 0) {
			const char *near = cfl_csv_closest_column(csv, enc->in[k].name);
			char list[512] = "";

			free(col);
			cfl_csv_list_columns(csv, 12, list, sizeof(list));
			if (near)
				return cfl_err_set(err, "%s: no column '%s' (the training data had it); did you mean '%s'? (columns: %s)",
						   csv->name, enc->in[k].name, near, list);
			return cfl_err_set(err, "%s: no column '%s' (the training data had it); its columns are %s",
					   csv->name, enc->in[k].name, list);
		}
		col[k] = (size_t)j;
	}
	if (with_target && enc->target_name)
		t = cfl_csv_column(csv, enc->target_name);
	if (with_target == 1 && t < 0) {
		free(col);
		return cfl_err_set(err, "%s: no target column '%s'", csv->name,
				   enc->target_name ? enc->target_name : "?");
	}
	xy.n = n;
	xy.d = enc->d;
	xy.n_classes = enc->n_classes;
	xy.x = cfl_calloc(n * enc->d + 1, sizeof(float), err);
	if (!xy.x)
		goto fail;
	cfl_advise_huge(xy.x, n * enc->d * sizeof(float));
	if (t >= 0 && !(xy.y = cfl_calloc(n + 1, sizeof(double), err)))
		goto fail;
	for (size_t r = 0; r < n; r++) {
		float *row = xy.x + r * enc->d;
		size_t i = idx ? idx[r] : r;
		char buf[CFL_CSV_CELL_BUF];

		for (size_t k = 0; k < enc->n_in; k++) {
			const struct cfl_enc_col *c = &enc->in[k];
			size_t j = col[k];
			double v = csv->num[i * m + j];

			if (c->kind == ENC_NUM) {
				if (isnan(v)) {
					const char *cell = csv->text[j] ? csv->text[j][i] : NULL;

					if (cell) {
						cfl_err_set(err, "%s:%zu: text '%.40s' in numeric column '%s'",
							    csv->name, csv->line[i], cell, c->name);
						goto fail;
					}
					v = c->median;
				}
				row[c->offset] = (float)((v - c->mean) / c->std);
			} else {
				/* numeric levels need no text (the number is it) */
				const char *cell = !c->numeric_levels ? cfl_csv_cell(csv, i, j, buf)
						   : isnan(v) ? NULL : "";

				row[c->offset + level_slot(c, cell, v)] = 1.0f;
			}
		}
		if (t >= 0) {
			double v = csv->num[i * m + (size_t)t];
			/* the text only where it is needed: a number's is
			 * written out, which is slow */
			const char *cell = (isnan(v) || (enc->n_classes && !enc->class_values))
					   ? cfl_csv_cell(csv, i, (size_t)t, buf) : "";

			if (!cell) {
				cfl_err_set(err, "%s:%zu: missing value in the target column '%s'",
					    csv->name, csv->line[i], enc->target_name);
				goto fail;
			}
			if (enc->n_classes) {
				long ci = cfl_class_index(enc->class_names, enc->class_values,
							  (size_t)enc->n_classes, cell, v);

				if (ci < 0) {
					cfl_err_set(err, "%s:%zu: unknown class '%.40s' in column '%s'",
						    csv->name, csv->line[i],
						    cfl_csv_cell(csv, i, (size_t)t, buf), enc->target_name);
					goto fail;
				}
				xy.y[r] = (double)ci;
			} else if (isnan(v)) {
				cfl_err_set(err, "%s:%zu: text '%.40s' in numeric target column '%s'",
					    csv->name, csv->line[i], cell, enc->target_name);
				goto fail;
			} else {
				xy.y[r] = v;
			}
		}
	}
	free(col);
	cfl_xy_release(out);
	*out = xy;
	return 0;
fail:
	free(col);
	cfl_xy_release(&xy);
	return -1;
}

int cfl_encoder_apply(const struct cfl_encoder *enc, const struct cfl_csv *csv,
		      int with_target, struct cfl_xy *out, struct cfl_err *err)
{
	return cfl_encoder_apply_rows(enc, csv, NULL, 0, with_target, out, err);
}

int cfl_encoder_read_csv(const struct cfl_encoder *enc, const char *path,
			 struct cfl_csv *csv /* OUT */, struct cfl_err *err)
{
	const char **keep = cfl_calloc(enc->n_in + 2, sizeof(char *), err);
	size_t n_keep = 0;
	int rc;

	if (!keep)
		return -1;
	for (size_t k = 0; k < enc->n_in; k++)
		if (enc->in[k].kind == ENC_CAT && !enc->in[k].numeric_levels)
			keep[n_keep++] = enc->in[k].name;
	if (enc->n_classes && !enc->class_values && enc->target_name)
		keep[n_keep++] = enc->target_name;
	rc = cfl_csv_read_keep(csv, path, keep, n_keep, NULL, err);
	free(keep);
	return rc;
}

void cfl_encoder_feature_name(const struct cfl_encoder *enc, size_t j,
			      char *buf, size_t cap)
{
	if (!cap)
		return;
	buf[0] = '\0';
	for (size_t k = 0; k < enc->n_in; k++) {
		const struct cfl_enc_col *c = &enc->in[k];
		size_t w = c->kind == ENC_NUM ? 1 : c->n_levels + 1;

		if (j < c->offset || j >= c->offset + w)
			continue;
		if (c->kind == ENC_NUM)
			snprintf(buf, cap, "%s", c->name);
		else if (j - c->offset < c->n_levels)
			snprintf(buf, cap, "%s=%s", c->name, c->levels[j - c->offset]);
		else
			snprintf(buf, cap, "%s=?", c->name);
		return;
	}
}

long cfl_encoder_feature_column(const struct cfl_encoder *enc, size_t j)
{
	for (size_t k = 0; k < enc->n_in; k++) {
		const struct cfl_enc_col *c = &enc->in[k];
		size_t w = c->kind == ENC_NUM ? 1 : c->n_levels + 1;

		if (j >= c->offset && j < c->offset + w)
			return (long)k;
	}
	return -1;
}

const char *cfl_encoder_column_name(const struct cfl_encoder *enc, size_t k)
{
	return k < enc->n_in ? enc->in[k].name : NULL;
}

void cfl_encoder_release(struct cfl_encoder *enc)
{
	if (!enc)
		return;
	if (enc->in)
		for (size_t k = 0; k < enc->n_in; k++) {
			struct cfl_enc_col *c = &enc->in[k];

			free(c->name);
			if (c->levels)
				for (size_t i = 0; i < c->n_levels; i++)
					free(c->levels[i]);
			free(c->levels);
			free(c->values);
		}
	free(enc->in);
	free(enc->target_name);
	if (enc->class_names)
		for (int i = 0; i < enc->n_classes; i++)
			free(enc->class_names[i]);
	free(enc->class_names);
	free(enc->class_values);
	memset(enc, 0, sizeof(*enc));
}

/* ---- encode: save and load ---- */

/* Names and levels are written as one token: bytes <= ' ', DEL and '%'
 * become %XX.  The empty string is written as a lone '%'. */
static int put_escaped(struct cfl_buf *b, const char *s)
{
	if (!*s)
		return cfl_buf_puts(b, "%");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int rc = *p <= ' ' || *p == 0x7f || *p == '%'
			 ? cfl_buf_printf(b, "%%%02X", *p)
			 : cfl_buf_append(b, p, 1);

		if (rc)
			return -1;
	}
	return 0;
}

#define TOKEN_MAX 65536

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Reads one escaped token into a new string. */
static char *get_escaped(struct cfl_reader *r, char *tok, const char *what,
			 struct cfl_err *err)
{
	char *out, *w;

	if (cfl_reader_word(r, tok, TOKEN_MAX, err))
		return NULL;
	if (strcmp(tok, "%") == 0)
		return cfl_strdup("", err);
	out = w = cfl_malloc(strlen(tok) + 1, err);
	if (!out)
		return NULL;
	for (const char *p = tok; *p; p++) {
		if (*p != '%') {
			*w++ = *p;
			continue;
		}
		int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			cfl_reader_fail(r, err, "bad escape in %s '%.40s'", what, tok);
			return NULL;
		}
		*w++ = (char)(hi * 16 + lo);
		p += 2;
	}
	*w = '\0';
	return out;
}

int cfl_encoder_save(const struct cfl_encoder *enc, struct cfl_buf *b)
{
	if (cfl_buf_puts(b, "encoder 1\ntarget ") ||
	    put_escaped(b, enc->target_name ? enc->target_name : "") ||
	    cfl_buf_printf(b, " %d\n", enc->n_classes))
		return -1;
	for (int i = 0; i < enc->n_classes; i++)
		if (cfl_buf_puts(b, "class ") || put_escaped(b, enc->class_names[i]) ||
		    cfl_buf_puts(b, "\n"))
			return -1;
	if (cfl_buf_printf(b, "inputs %zu %zu\n", enc->n_in, enc->d))
		return -1;
	for (size_t k = 0; k < enc->n_in; k++) {
		const struct cfl_enc_col *c = &enc->in[k];

		if (cfl_buf_puts(b, c->kind == ENC_NUM ? "num " : "cat ") ||
		    put_escaped(b, c->name))
			return -1;
		if (c->kind == ENC_NUM) {
			double v[3] = { c->median, c->mean, c->std };

			if (cfl_buf_doubles(b, v, 3) || cfl_buf_puts(b, "\n"))
				return -1;
			continue;
		}
		if (cfl_buf_printf(b, " %d %zu\n", c->numeric_levels, c->n_levels))
			return -1;
		for (size_t i = 0; i < c->n_levels; i++)
			if (cfl_buf_puts(b, "level ") || put_escaped(b, c->levels[i]) ||
			    cfl_buf_puts(b, "\n"))
				return -1;
	}
	if (enc->data_sha256[0] && cfl_buf_printf(b, "data %s\n", enc->data_sha256))
		return -1;
	return cfl_buf_puts(b, "end\n");
}

/* Sorted strictly ascending (so lookups by bisection are right), by value
 * when values is not NULL. */
static int check_sorted(struct cfl_reader *r, char **names, double *values,
			size_t k, const char *what, struct cfl_err *err)
{
	for (size_t i = 1; i < k; i++) {
		int ok = values ? values[i - 1] < values[i]
				: strcmp(names[i - 1], names[i]) < 0;

		if (!ok)
			return cfl_reader_fail(r, err, "%s '%.40s' out of order or repeated",
					       what, names[i]);
	}
	return 0;
}

/* Values of numeric names, or -1 when one is not a number. */
static int parse_values(char **names, size_t k, double *values)
{
	for (size_t i = 0; i < k; i++) {
		values[i] = cfl_csv_number(names[i]);
		if (isnan(values[i]))
			return -1;
		if (values[i] == 0)
			values[i] = 0;
	}
	return 0;
}

static int load_col(struct cfl_encoder *enc, struct cfl_enc_col *c,
		    struct cfl_reader *r, char *tok, struct cfl_err *err)
{
	size_t n_levels;
	long numeric;

	if (cfl_reader_word(r, tok, 16, err))
		return -1;
	if (strcmp(tok, "num") && strcmp(tok, "cat"))
		return cfl_reader_fail(r, err, "expected 'num' or 'cat', found '%.40s'", tok);
	c->kind = tok[0] == 'n' ? ENC_NUM : ENC_CAT;
	c->offset = enc->d;
	if (!(c->name = get_escaped(r, tok, "column name", err)))
		return -1;
	if (!c->name[0])
		return cfl_reader_fail(r, err, "empty column name");
	if (c->kind == ENC_NUM) {
		if (cfl_reader_double(r, &c->median, err) ||
		    cfl_reader_double(r, &c->mean, err) ||
		    cfl_reader_double(r, &c->std, err))
			return -1;
		if (!isfinite(c->median) || !isfinite(c->mean) ||
		    !isfinite(c->std) || !(c->std > 0))
			return cfl_reader_fail(r, err, "bad statistics for column '%.40s'", c->name);
		enc->d += 1;
		return 0;
	}
	if (cfl_reader_int(r, 0, 1, &numeric, err) ||
	    cfl_reader_size(r, 1u << 20, &n_levels, err))
		return -1;
	c->numeric_levels = (int)numeric;
	c->levels = cfl_calloc(n_levels + 1, sizeof(char *), err);
	if (!c->levels)
		return -1;
	for (size_t i = 0; i < n_levels; i++) {
		if (cfl_reader_expect(r, "level", err) ||
		    !(c->levels[i] = get_escaped(r, tok, "level", err)))
			return -1;
		c->n_levels = i + 1;
		if (!c->levels[i][0])
			return cfl_reader_fail(r, err, "empty level in column '%.40s'", c->name);
	}
	if (c->numeric_levels) {
		c->values = cfl_calloc(n_levels + 1, sizeof(double), err);
		if (!c->values)
			return -1;
		if (parse_values(c->levels, n_levels, c->values))
			return cfl_reader_fail(r, err, "non-numeric level in numbers-coded column '%.40s'",
					       c->name);
	}
	if (check_sorted(r, c->levels, c->values, n_levels, "level", err))
		return -1;
	if (enc->d + n_levels + 1 > (1u << 24))
		return cfl_reader_fail(r, err, "too many encoded features");
	enc->d += n_levels + 1;
	return 0;
}

int cfl_encoder_load(struct cfl_encoder *enc, struct cfl_reader *r,
		     struct cfl_err *err)
{
	char *tok;
	long version, n_classes;
	size_t n_in, d;

	memset(enc, 0, sizeof(*enc));
	tok = cfl_malloc(TOKEN_MAX, err);
	if (!tok)
		return -1;
	if (cfl_reader_expect(r, "encoder", err) ||
	    cfl_reader_int(r, 1, 1000, &version, err))
		goto fail;
	if (version != 1) {
		cfl_reader_fail(r, err, "encoder version %ld, this cfl reads version 1", version);
		goto fail;
	}
	if (cfl_reader_expect(r, "target", err) ||
	    !(enc->target_name = get_escaped(r, tok, "target name", err)) ||
	    cfl_reader_int(r, 0, MAX_CLASSES, &n_classes, err))
		goto fail;
	if (n_classes == 1) {
		cfl_reader_fail(r, err, "one class: a classifier needs two or more");
		goto fail;
	}
	enc->class_names = cfl_calloc((size_t)n_classes + 1, sizeof(char *), err);
	if (!enc->class_names)
		goto fail;
	for (long i = 0; i < n_classes; i++) {
		if (cfl_reader_expect(r, "class", err) ||
		    !(enc->class_names[i] = get_escaped(r, tok, "class", err)))
			goto fail;
		enc->n_classes = (int)i + 1;
		if (!enc->class_names[i][0]) {
			cfl_reader_fail(r, err, "empty class name");
			goto fail;
		}
	}
	if (n_classes) {
		double *v = cfl_calloc((size_t)n_classes + 1, sizeof(double), err);

		if (!v)
			goto fail;
		/* classes that are all numbers were numeric in the schema */
		if (parse_values(enc->class_names, (size_t)n_classes, v) == 0)
			enc->class_values = v;
		else
			free(v);
		if (check_sorted(r, enc->class_names, enc->class_values,
				 (size_t)n_classes, "class", err))
			goto fail;
	}
	if (cfl_reader_expect(r, "inputs", err) ||
	    cfl_reader_size(r, 1u << 20, &n_in, err) ||
	    cfl_reader_size(r, 1u << 24, &d, err))
		goto fail;
	if (n_in == 0) {
		cfl_reader_fail(r, err, "an encoder without input columns");
		goto fail;
	}
	enc->in = cfl_calloc(n_in + 1, sizeof(*enc->in), err);
	if (!enc->in)
		goto fail;
	for (size_t k = 0; k < n_in; k++) {
		enc->n_in = k + 1;
		if (load_col(enc, &enc->in[k], r, tok, err))
			goto fail;
	}
	if (enc->d != d) {
		cfl_reader_fail(r, err, "encoder width %zu does not match its columns (%zu)",
				d, enc->d);
		goto fail;
	}
	/* "data HEX" (the data file's SHA-256), when known, then "end" */
	if (cfl_reader_word(r, tok, TOKEN_MAX, err)) {
		cfl_reader_fail(r, err, "expected 'end', found the end of the file");
		goto fail;
	}
	if (!strcmp(tok, "data")) {
		if (cfl_reader_word(r, tok, TOKEN_MAX, err) || strlen(tok) != 64 ||
		    strspn(tok, "0123456789abcdef") != 64) {
			cfl_reader_fail(r, err, "expected the data file's SHA-256 (64 hex digits)");
			goto fail;
		}
		memcpy(enc->data_sha256, tok, 65);
		if (cfl_reader_word(r, tok, TOKEN_MAX, err)) {
			cfl_reader_fail(r, err, "expected 'end', found the end of the file");
			goto fail;
		}
	}
	if (strcmp(tok, "end")) {
		cfl_reader_fail(r, err, "expected 'end', found '%.40s'", tok);
		goto fail;
	}
	free(tok);
	return 0;
fail:
	free(tok);
	cfl_encoder_release(enc);
	return -1;
}

/* ---- encode: columns carried through (cfl predict --keep) ---- */

struct keep_ctx {
	const struct cfl_encoder *enc;
	const struct cfl_keep *keep;
	struct cfl_regex *re;	/* CFL_KEEP_LIST with a pattern character */
};

/* 1 when the encoder reads column name (an input or the target). */
static int enc_uses(const struct cfl_encoder *enc, const char *name)
{
	if (enc->target_name && !strcmp(enc->target_name, name))
		return 1;
	for (size_t k = 0; k < enc->n_in; k++)
		if (!strcmp(enc->in[k].name, name))
			return 1;
	return 0;
}

/* 1 when word is one of spec's comma-separated words. */
static int spec_has(const char *spec, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = spec; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/* While the file is read: the columns whose text to keep (a superset of
 * those kept in the end, which the header and the cells decide). */
static int keep_want(void *arg, const char *name)
{
	struct keep_ctx *c = arg;
	struct cfl_err why;

	switch (c->keep->mode) {
	case CFL_KEEP_ALL:
		return 1;
	case CFL_KEEP_NONE:
		return 0;
	case CFL_KEEP_LIST:
		return spec_has(c->keep->spec, name) ||
		       (c->re && cfl_regex_match(c->re, name, strlen(name), &why) == 1);
	case CFL_KEEP_IDS:
		return !enc_uses(c->enc, name);
	}
	return 0;
}

/* A column of texts or integers, every present cell distinct (the rows'
 * identifier), over two rows or more. */
static int all_distinct(const struct cfl_csv *csv, size_t j, struct cfl_err *err)
{
	struct dset set;
	size_t n = 0;
	int ok = 1;

	if (csv->n_rows < 2 || cfl_dset_init(&set, csv->n_rows, 1, err))
		return 0;
	for (size_t i = 0; i < csv->n_rows && ok; i++) {
		const char *cell = csv->text[j] ? csv->text[j][i] : NULL;
		double v = csv->num[i * csv->n_cols + j];

		if (!cell)
			continue;
		if (!isnan(v) && v != floor(v))
			ok = 0;	/* a measurement, not a key */
		else
			ok = cfl_dset_add_str(&set, cell);
		n++;
	}
	cfl_dset_release(&set);
	return ok && n == csv->n_rows;
}

int cfl_encoder_read_csv_keep(const struct cfl_encoder *enc, const char *path,
			      const struct cfl_keep *keep,
			      struct cfl_csv *csv /* OUT */,
			      size_t **cols /* OUT */, size_t *n_cols /* OUT */,
			      struct cfl_err *err)
{
	const char **names = cfl_calloc(enc->n_in + 2, sizeof(char *), err);
	struct keep_ctx ctx = { enc, keep, NULL };
	struct csv_keep ks = { NULL, 0, keep_want, &ctx };
	size_t n_names = 0, n = 0;
	int all_names = 1;

	memset(csv, 0, sizeof(*csv));
	*cols = NULL;
	*n_cols = 0;
	if (!names)
		return -1;
	for (size_t k = 0; k < enc->n_in; k++)
		if (enc->in[k].kind == ENC_CAT && !enc->in[k].numeric_levels)
			names[n_names++] = enc->in[k].name;
	if (enc->n_classes && !enc->class_values && enc->target_name)
		names[n_names++] = enc->target_name;
	ks.names = names;
	ks.n_names = n_names;
	if (keep->mode == CFL_KEEP_LIST && strpbrk(keep->spec, "^$.*+?()[]{}|\\")) {
		ctx.re = cfl_regex_new(keep->spec, CFL_REGEX_UTF, err);
		if (!ctx.re) {
			cfl_err_prefix(err, "--keep '%s'", keep->spec);
			free(names);
			return -1;
		}
	}
	if (cfl_csv_read_chosen(csv, path, &ks, NULL, err))
		goto fail;
	*cols = cfl_calloc(csv->n_cols + 1, sizeof(size_t), err);
	if (!*cols)
		goto fail;
	if (keep->mode == CFL_KEEP_LIST) {
		/* names, when every word is one */
		const char *p = keep->spec;

		for (const char *q = p; q; q = strchr(q, ',') ? strchr(q, ',') + 1 : NULL) {
			size_t len = strcspn(q, ",");
			char word[256];

			snprintf(word, sizeof(word), "%.*s", (int)(len < 255 ? len : 255), q);
			if (cfl_csv_column(csv, word) < 0) {
				all_names = 0;
				if (!ctx.re) {
					const char *near = cfl_csv_closest_column(csv, word);
					char list[512] = "";

					cfl_csv_list_columns(csv, 12, list, sizeof(list));
					if (near)
						cfl_err_set(err, "--keep: '%s' has no column '%s'; did you mean '%s'? (columns: %s)",
							    path, word, near, list);
					else
						cfl_err_set(err, "--keep: '%s' has no column '%s'; its columns are %s",
							    path, word, list);
					goto fail;
				}
			}
		}
	}
	for (size_t j = 0; j < csv->n_cols; j++) {
		const char *name = csv->header[j];
		int take = 0;

		switch (keep->mode) {
		case CFL_KEEP_ALL:
			take = 1;
			break;
		case CFL_KEEP_NONE:
			break;
		case CFL_KEEP_LIST:
			take = all_names ? spec_has(keep->spec, name)
					 : keep_want(&ctx, name);
			break;
		case CFL_KEEP_IDS:
			take = !enc_uses(enc, name) &&
			       (cfl_id_name(name) || all_distinct(csv, j, err));
			break;
		}
		if (take)
			(*cols)[n++] = j;
	}
	if (keep->mode == CFL_KEEP_LIST && !n) {
		cfl_err_set(err, "--keep '%s' matches no column of '%s'", keep->spec, path);
		goto fail;
	}
	*n_cols = n;
	cfl_regex_free(ctx.re);
	free(names);
	return 0;
fail:
	cfl_regex_free(ctx.re);
	free(names);
	free(*cols);
	*cols = NULL;
	cfl_csv_release(csv);
	return -1;
}

/* ---- predictions as CSV ---- */

int cfl_encoder_format_predictions(const struct cfl_encoder *enc,
				   const double *pred, size_t n, int proba,
				   const struct cfl_csv *csv, const size_t *cols,
				   size_t n_cols, struct cfl_buf *b)
{
	int k = enc->n_classes, rc = 0;
	char buf[CFL_CSV_CELL_BUF];

	for (size_t c = 0; c < n_cols; c++)
		rc |= cfl_buf_csv_field(b, csv->header[cols[c]]) | cfl_buf_puts(b, ",");
	rc |= cfl_buf_puts(b, "prediction");
	for (int j = 0; proba && j < k; j++) {
		char name[512];

		snprintf(name, sizeof(name), "proba_%s", enc->class_names[j]);
		rc |= cfl_buf_puts(b, ",") | cfl_buf_csv_field(b, name);
	}
	rc |= cfl_buf_puts(b, "\n");
	for (size_t i = 0; i < n && !rc; i++) {
		const double *row = pred + i * (k > 0 ? (size_t)k : 1);

		for (size_t c = 0; c < n_cols; c++) {
			const char *cell = cfl_csv_cell(csv, i, cols[c], buf);

			rc |= cfl_buf_csv_field(b, cell ? cell : "") | cfl_buf_puts(b, ",");
		}
		if (k > 0) {
			int best = 0;

			for (int j = 1; j < k; j++)
				if (row[j] > row[best])
					best = j;
			rc |= cfl_buf_csv_field(b, enc->class_names[best]);
			for (int j = 0; proba && j < k; j++)
				rc |= cfl_buf_printf(b, ",%.9g", row[j]);
		} else {
			rc |= cfl_buf_printf(b, "%.17g", row[0]);
		}
		rc |= cfl_buf_puts(b, "\n");
	}
	return rc;
}
