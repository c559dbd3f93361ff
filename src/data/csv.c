/*
 * CSV reading: RFC 4180 quoting, CRLF or LF, a UTF-8 BOM, the delimiter
 * detected from the header line, missing-value spellings.
 *
 * Speed: the file is parsed in place in one buffer (unquoting only ever
 * shrinks a cell, delimiters become NULs), cells are pointers into it and
 * every cell's number is parsed once here, so typing and encoding never call
 * strtod again.  No per-cell allocation.  Depends on core only.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- csv: numbers and missing values ---- */

static const double pow10_exact[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* A decimal number: [+-]digits[.digits][(e|E)[+-]digits] with at least one
 * digit in the mantissa, nothing else (no inf, nan, hex, blanks).  Returns
 * NaN otherwise.  Short decimals (a digit string below 2^53, <= 22 after
 * the point, no exponent) take Clinger's exact fast path: an integer below
 * 2^53 divided by an exact power of ten is correctly rounded, like strtod;
 * the rest go to strtod. */
double cfl_csv_number(const char *s)
{
	const char *p = s, *d0;
	uint64_t mant = 0;
	size_t n_int, n_frac = 0;
	int neg = 0;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	d0 = p;
	while ((unsigned)(*p - '0') < 10)
		mant = mant * 10 + (uint64_t)(*p++ - '0');
	n_int = (size_t)(p - d0);
	if (*p == '.') {
		const char *f0 = ++p;

		while ((unsigned)(*p - '0') < 10)
			mant = mant * 10 + (uint64_t)(*p++ - '0');
		n_frac = (size_t)(p - f0);
	}
	if (n_int + n_frac == 0)
		return NAN;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if ((unsigned)(*p - '0') >= 10)
			return NAN;
		while ((unsigned)(*p - '0') < 10)
			p++;
		if (*p)
			return NAN;
		n_frac = 99;	/* take the slow path */
	}
	if (*p)
		return NAN;
	/* at most 19 digits cannot overflow; below 2^53 the integer is exact,
	 * and one division by an exact power of ten rounds correctly */
	if (n_int + n_frac <= 19 && n_frac <= 22 && mant <= (1ULL << 53)) {
		double v = (double)mant / pow10_exact[n_frac];

		return neg ? -v : v;
	} else {
		double v = strtod(s, NULL);

		return isfinite(v) ? v : NAN;
	}
}

/* Missing: '', '?', and NA, NaN, null, N/A in any case. */
int cfl_csv_is_missing(const char *s)
{
	switch (s[0]) {
	case '\0':
		return 1;
	case '?':
		return s[1] == '\0';
	case 'n': case 'N':
		return strcasecmp(s, "na") == 0 || strcasecmp(s, "nan") == 0 ||
		       strcasecmp(s, "null") == 0 || strcasecmp(s, "n/a") == 0;
	}
	return 0;
}

/* ---- csv: memory ---- */

/* Asks for huge pages under a big block (the file, the cells, their
 * numbers: 2.5 times the file): on a virtual machine a page fault costs
 * microseconds, and 4 KiB pages made faults a third of a load's time.
 * Only a hint; where the kernel says no (or transparent huge pages are
 * off) nothing changes. */
static void advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t b = ((uintptr_t)p + n) & ~(page - 1);

	if (n >= (size_t)4 << 20 && b > a)
		madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

/* ---- csv: parsing ---- */

static char detect_delim(const char *p, const char *end)
{
	size_t n_comma = 0, n_semi = 0, n_tab = 0;
	int quoted = 0;

	for (; p < end; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (quoted)
			continue;
		else if (*p == '\n' || *p == '\r')
			break;
		else if (*p == ',')
			n_comma++;
		else if (*p == ';')
			n_semi++;
		else if (*p == '\t')
			n_tab++;
	}
	if (n_semi > n_comma && n_semi >= n_tab)
		return ';';
	if (n_tab > n_comma && n_tab > n_semi)
		return '\t';
	return ',';
}

/* Strips blanks around an unquoted cell (never the delimiter). */
static char *trim(char *s, char *e, char delim)
{
	while (s < e && (*s == ' ' || (*s == '\t' && delim != '\t')))
		s++;
	while (e > s && (e[-1] == ' ' || (e[-1] == '\t' && delim != '\t')))
		e--;
	*e = '\0';
	return s;
}

struct parse_state {
	struct cfl_csv *csv;
	char **cells;		/* growing row-major array, header first */
	double *num;		/* the cells' numbers, parsed while hot */
	int decimal_comma;	/* ';'-separated: "1,5" is 1.5 */
	int header;		/* the header's cells get no number */
	size_t n_cells, cap_cells;
	size_t n_header;	/* num[i] is the number of cells[n_header + i] */
	size_t *line;
	size_t cap_rows;
};

static int grow_cells(struct parse_state *st, size_t cap, struct cfl_err *err)
{
	char **c = cfl_realloc(st->cells, cap * sizeof(*c), err);
	double *v;

	if (!c)
		return -1;
	st->cells = c;
	v = cfl_realloc(st->num, cap * sizeof(*v), err);
	if (!v)
		return -1;
	st->num = v;
	st->cap_cells = cap;
	advise_huge(c, cap * sizeof(*c));
	advise_huge(v, cap * sizeof(*v));
	return 0;
}

static int push_cell(struct parse_state *st, char *cell, struct cfl_err *err)
{
	if (st->n_cells == st->cap_cells) {
		size_t cap = st->cap_cells ? 2 * st->cap_cells : 1024;
		char **c = cfl_realloc(st->cells, cap * sizeof(*c), err);
		double *v;

		if (!c)
			return -1;
		st->cells = c;
		v = cfl_realloc(st->num, cap * sizeof(*v), err);
		if (!v)
			return -1;
		st->num = v;
		st->cap_cells = cap;
	}
	if (!st->header) {
		double *v = &st->num[st->n_cells - st->n_header];

		*v = cell ? cfl_csv_number(cell) : NAN;
		if (st->decimal_comma && cell && isnan(*v)) {
			/* semicolon files often write 1,5 for 1.5 */
			char *comma = strchr(cell, ',');

			if (comma && !strchr(comma + 1, ',') && !strchr(cell, '.')) {
				*comma = '.';
				*v = cfl_csv_number(cell);
				if (isnan(*v))
					*comma = ',';
			}
		}
	}
	st->cells[st->n_cells++] = cell;
	return 0;
}

static int push_row_line(struct parse_state *st, size_t row, size_t line,
			 struct cfl_err *err)
{
	if (row == st->cap_rows) {
		size_t cap = st->cap_rows ? 2 * st->cap_rows : 256;
		size_t *l = cfl_realloc(st->line, cap * sizeof(*l), err);

		if (!l)
			return -1;
		st->line = l;
		st->cap_rows = cap;
	}
	st->line[row] = line;
	return 0;
}

/* Parses buf[0..len) in place; buf[len] must be writable (the NUL). */
static int parse_owned(struct cfl_csv *csv, char *buf, size_t len,
		       struct cfl_err *err)
{
	struct parse_state st = { .csv = csv, .header = 1 };
	char *p = buf, *end = buf + len;
	size_t line = 1, row_start_line, n_fields, n_header = 0, row = 0;
	unsigned char stop[256] = { 0 };	/* bytes that end an unquoted cell */
	int header = 1;
	char delim;

	if (memchr(buf, '\0', len))
		return cfl_err_set(err, "%s: binary file (NUL byte)", csv->name);
	if (len >= 3 && (unsigned char)p[0] == 0xEF &&
	    (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
		p += 3;
	delim = detect_delim(p, end);
	csv->delim = delim;
	st.decimal_comma = delim == ';';
	stop[0] = stop['\n'] = stop['\r'] = stop[(unsigned char)delim] = 1;
	while (p < end) {
		/* a blank line (only CR/LF) is skipped */
		if (*p == '\n' || *p == '\r') {
			if (*p == '\n' || p + 1 >= end || p[1] != '\n')
				line++;
			p++;
			continue;
		}
		row_start_line = line;
		n_fields = 0;
		for (;;) {
			char *cell, *q = p, c;

			while (q < end && *q == ' ')
				q++;
			if (q < end && *q == '"') {
				/* quoted: unquote in place, "" is one quote */
				char *w, *start;
				size_t qline = line;

				p = q + 1;
				w = start = p;
				for (;;) {
					if (p >= end) {
						cfl_err_set(err, "%s:%zu: unclosed quote",
							    csv->name, qline);
						goto fail;
					}
					if (*p == '"') {
						if (p + 1 < end && p[1] == '"') {
							*w++ = '"';
							p += 2;
							continue;
						}
						p++;
						break;
					}
					if (*p == '\n')
						line++;
					*w++ = *p++;
				}
				/* blanks may follow the closing quote */
				while (p < end && *p == ' ')
					p++;
				if (p < end && *p != delim && *p != '\n' && *p != '\r') {
					cfl_err_set(err, "%s:%zu: unexpected '%c' after a closing quote",
						    csv->name, line, *p);
					goto fail;
				}
				c = p < end ? *p : '\0';
				*w = '\0';	/* w < p: the closing quote was consumed */
				cell = start;
			} else {
				char *s = p;

				/* buf[len] is NUL, and NUL stops the scan */
				while (!stop[(unsigned char)*p])
					p++;
				c = p < end ? *p : '\0';
				cell = trim(s, p, delim);
			}
			/* c is what ended the cell: delim, '\n', '\r' or '\0' (EOF) */
			if (!header && cfl_csv_is_missing(cell))
				cell = NULL;
			if (push_cell(&st, cell, err))
				goto fail;
			n_fields++;
			if (c == delim) {
				*p++ = '\0';
				if (p >= end) {
					/* a delimiter at the very end: one more empty cell */
					if (push_cell(&st, header ? end : NULL, err))
						goto fail;
					n_fields++;
					break;
				}
				continue;
			}
			if (c == '\r') {
				*p++ = '\0';
				if (p < end && *p == '\n')
					p++;
				line++;
			} else if (c == '\n') {
				*p++ = '\0';
				line++;
			}
			break;
		}
		if (header) {
			/* size the arrays once from the count of line ends, so
			 * a big file is not copied by repeated growth */
			size_t n_lines = 1;

			for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))); q++)
				n_lines++;
			n_header = n_fields;
			header = 0;
			st.header = 0;
			st.n_header = n_header;
			if (n_lines < ((size_t)-1 / 16) / (n_header + 1) &&
			    grow_cells(&st, (n_lines + 1) * n_header + 1, err))
				goto fail;
			continue;
		}
		if (n_fields != n_header) {
			cfl_err_set(err, "%s:%zu: row has %zu fields, the header has %zu",
				    csv->name, row_start_line, n_fields, n_header);
			goto fail;
		}
		if (push_row_line(&st, row, row_start_line, err))
			goto fail;
		row++;
	}
	if (header) {
		free(st.cells);
		free(st.num);
		free(st.line);
		return cfl_err_set(err, "%s: empty file", csv->name);
	}
	if (row == 0) {
		cfl_err_set(err, "%s:%zu: no data rows after the header",
			    csv->name, line);
		goto fail;
	}
	csv->n_cols = n_header;
	csv->n_rows = row;
	csv->header = st.cells;
	csv->cells = st.cells + n_header;
	csv->line = st.line;
	csv->num = st.num;	/* the header row has no numbers */
	return 0;
fail:
	free(st.cells);
	free(st.num);
	free(st.line);
	return -1;
}

/* Header names: empty ones become "column_N"; duplicates are an error (the
 * encoder matches columns by name). */
static int fix_header(struct cfl_csv *csv, struct cfl_err *err)
{
	size_t n_empty = 0;
	char *w;

	for (size_t j = 0; j < csv->n_cols; j++)
		if (!csv->header[j][0])
			n_empty++;
	if (n_empty) {
		csv->names = cfl_malloc(n_empty * 32, err);
		if (!csv->names)
			return -1;
		w = csv->names;
		for (size_t j = 0; j < csv->n_cols; j++)
			if (!csv->header[j][0]) {
				snprintf(w, 32, "column_%zu", j + 1);
				csv->header[j] = w;
				w += 32;
			}
	}
	/* duplicates: O(n^2) over the header is fine for thousands of columns */
	if (csv->n_cols <= 4096) {
		for (size_t j = 0; j < csv->n_cols; j++)
			for (size_t k = 0; k < j; k++)
				if (strcmp(csv->header[j], csv->header[k]) == 0)
					return cfl_err_set(err, "%s:1: duplicate column name '%s'",
							   csv->name, csv->header[j]);
	}
	return 0;
}


int cfl_csv_parse_owned(struct cfl_csv *csv, const char *name, char *buf,
			size_t len, struct cfl_err *err)
{
	memset(csv, 0, sizeof(*csv));
	csv->store = buf;
	csv->name = cfl_strdup(name ? name : "<csv>", err);
	if (!csv->name) {
		free(buf);
		csv->store = NULL;
		return -1;
	}
	if (parse_owned(csv, buf, len, err) || fix_header(csv, err)) {
		cfl_csv_release(csv);
		return -1;
	}
	return 0;
}

int cfl_csv_parse(struct cfl_csv *csv, const char *name, const char *text,
		  size_t len, struct cfl_err *err)
{
	char *buf;

	memset(csv, 0, sizeof(*csv));
	buf = cfl_malloc(len + 1, err);
	if (!buf)
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return cfl_csv_parse_owned(csv, name, buf, len, err);
}

/* Reads a whole file with one read of its size (no growing buffer). */
char *cfl_csv_slurp(const char *path, size_t *len /* OUT */, struct cfl_err *err)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf;
	size_t n = 0, cap;

	if (!f)
		return cfl_err_set(err, "cannot open '%s': %s", path,
				   strerror(errno)), NULL;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return cfl_err_set(err, "cannot read '%s': Is a directory", path), NULL;
	}
	cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
	buf = cfl_malloc(cap, err);
	if (buf)
		advise_huge(buf, cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		n += got;
		if (got == 0)
			break;
		if (n + 1 == cap) {
			/* full: grow only when there is more (the file grew,
			 * or its size was unknown), not to find the end of a
			 * file read whole (the copy took a tenth of a load) */
			int ch = getc(f);
			char *b2;

			if (ch == EOF)
				break;
			b2 = cfl_realloc(buf, 2 * cap, err);
			if (!b2) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b2;
			cap *= 2;
			buf[n++] = (char)ch;
		}
	}
	if (buf && ferror(f)) {
		cfl_err_set(err, "cannot read '%s': %s", path, strerror(errno));
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

int cfl_csv_read(struct cfl_csv *csv, const char *path, struct cfl_err *err)
{
	size_t len;
	char *buf;

	memset(csv, 0, sizeof(*csv));
	buf = cfl_csv_slurp(path, &len, err);
	if (!buf)
		return -1;
	return cfl_csv_parse_owned(csv, path, buf, len, err);
}

void cfl_csv_release(struct cfl_csv *csv)
{
	if (!csv)
		return;
	free(csv->name);
	free(csv->header);	/* cells live in the same array */
	free(csv->line);
	free(csv->num);
	free(csv->names);
	free(csv->store);
	memset(csv, 0, sizeof(*csv));
}

long cfl_csv_column(const struct cfl_csv *csv, const char *name)
{
	for (size_t j = 0; j < csv->n_cols; j++)
		if (strcmp(csv->header[j], name) == 0)
			return (long)j;
	return -1;
}
