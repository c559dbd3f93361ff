/*
 * CSV reading: RFC 4180 quoting, CRLF or LF, a UTF-8 BOM, the delimiter
 * detected from the header line, missing-value spellings; gzip inflated
 * (zlib), "-" for standard input, other binary formats named in the error,
 * text that is not UTF-8 transcoded from Windows-1252 or refused.
 *
 * Speed: the file is parsed in place in one buffer (unquoting only ever
 * shrinks a cell, delimiters become NULs), cells are pointers into it and
 * every cell's number is parsed once here, so typing and encoding never call
 * strtod again.  No per-cell allocation.  Depends on core and zlib (the
 * only file of cfl that includes zlib.h).
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

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

/* The header's and the text cells' strings live in blocks that never move
 * (so cells can point into them); a block is freed with the csv. */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	char data[];
};

#define ARENA_BLOCK (64u << 10)

static char *arena_dup(struct arena_block **arena, const char *s, size_t len,
		       struct cfl_err *err)
{
	struct arena_block *b = *arena;
	char *out;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > ARENA_BLOCK ? len + 1 : ARENA_BLOCK;

		b = cfl_malloc(sizeof(*b) + cap, err);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = *arena;
		*arena = b;
	}
	out = b->data + b->used;
	memcpy(out, s, len);
	out[len] = '\0';
	b->used += len + 1;
	return out;
}

static void arena_free(struct arena_block *b)
{
	while (b) {
		struct arena_block *next = b->next;

		free(b);
		b = next;
	}
}

/* ---- csv: the bytes, a window at a time ---- */

/* The file is read cfl_csv_window bytes at a time (more when one row is longer),
 * never whole: a load holds the numbers of the cells, the text of the
 * text columns and one window, not a copy of the file.  A text in memory
 * goes through the same window. */
size_t cfl_csv_window = 1u << 20;

struct source {
	const char *name;
	int fd;			/* -1: read from mem */
	const char *mem;
	size_t mem_len;
	char *buf;		/* buf[0..end) are bytes, buf[end] = '\0' */
	size_t cap, end;
	size_t pos;		/* offset in the source of buf[0] */
	size_t size;		/* the source's size when known, else 0 */
	int eof;
	int check_utf8;		/* windows are checked to be UTF-8 */
	size_t bad_utf8;	/* offset of the first byte that is not
				 * UTF-8 (the parse failed there), else
				 * SIZE_MAX */
};

/* ---- csv: what the bytes are ---- */

/* Offset of the first byte of p[0..n) that neither starts nor continues a
 * well-formed UTF-8 sequence (overlong forms and surrogates are not), or
 * n.  A sequence cut by the end counts as well formed unless at_end (the
 * window's next fill reads it again whole).  *n_multi (when not NULL) gets
 * the count of multibyte sequences before that offset. */
static size_t utf8_check(const unsigned char *p, size_t n, int at_end,
			 size_t *n_multi)
{
	size_t i = 0, multi = 0;

	while (i < n) {
		unsigned c = p[i], lo = 0x80, hi = 0xBF;
		size_t k, j;
		uint64_t w;

		/* ASCII eight bytes at a time: most files are all ASCII */
		if (i + 8 <= n && (memcpy(&w, p + i, 8), !(w & 0x8080808080808080ULL))) {
			i += 8;
			continue;
		}
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			k = 1;
		} else if (c >= 0xE0 && c <= 0xEF) {
			k = 2;
			lo = c == 0xE0 ? 0xA0 : 0x80;
			hi = c == 0xED ? 0x9F : 0xBF;
		} else if (c >= 0xF0 && c <= 0xF4) {
			k = 3;
			lo = c == 0xF0 ? 0x90 : 0x80;
			hi = c == 0xF4 ? 0x8F : 0xBF;
		} else {
			break;
		}
		for (j = 1; j <= k; j++) {
			unsigned b;

			if (i + j >= n) {
				if (!at_end)
					i = n;	/* cut by the window's end */
				goto out;
			}
			b = p[i + j];
			if (b < (j == 1 ? lo : 0x80) || b > (j == 1 ? hi : 0xBF))
				goto out;
		}
		multi++;
		i += k + 1;
	}
out:
	if (n_multi)
		*n_multi = multi;
	return i;
}

/* Windows-1252's bytes 0x80-0x9F (Latin-1 has C1 controls there; the five
 * Windows leaves undefined keep them).  0xA0-0xFF are Latin-1's, U+00A0-FF. */
static const unsigned short cp1252_80[32] = {
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
};

/* p[0..n) from Windows-1252 into a new NUL-terminated UTF-8 buffer. */
static char *from_cp1252(const unsigned char *p, size_t n, size_t *out_len,
			 struct cfl_err *err)
{
	char *out = cfl_malloc(3 * n + 1, err), *w = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned c = p[i];

		if (c >= 0x80 && c < 0xA0)
			c = cp1252_80[c - 0x80];
		if (c < 0x80) {
			*w++ = (char)c;
		} else if (c < 0x800) {
			*w++ = (char)(0xC0 | c >> 6);
			*w++ = (char)(0x80 | (c & 0x3F));
		} else {
			*w++ = (char)(0xE0 | c >> 12);
			*w++ = (char)(0x80 | ((c >> 6) & 0x3F));
			*w++ = (char)(0x80 | (c & 0x3F));
		}
	}
	*w = '\0';
	*out_len = (size_t)(w - out);
	return out;
}

enum { BYTES_TEXT, BYTES_GZIP };

/* What the first bytes of a file say it is: BYTES_GZIP, BYTES_TEXT (CSV,
 * as far as one can tell), or -1 with err naming the format (zip, Parquet,
 * JSON, ...) and what to do. */
static int sniff(const char *name, const unsigned char *p, size_t n,
		 struct cfl_err *err)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *what, *todo;
	} kinds[] = {
		{ "PK\3\4", 4, "a zip archive (an .xlsx workbook is one)",
		  "unzip it, or save the sheet as CSV" },
		{ "PAR1", 4, "a Parquet file",
		  "convert it to CSV, e.g. in Python: pandas.read_parquet(F).to_csv(OUT, index=False)" },
		{ "ARROW1", 6, "an Arrow (Feather) file",
		  "convert it to CSV, e.g. in Python: pandas.read_feather(F).to_csv(OUT, index=False)" },
		{ "BZh", 3, "bzip2 data",
		  "decompress it, or pipe it: bzip2 -dc FILE | cfl ... -" },
		{ "\xfd" "7zXZ", 5, "xz data",
		  "decompress it, or pipe it: xz -dc FILE | cfl ... -" },
		{ "\x28\xb5\x2f\xfd", 4, "zstd data",
		  "decompress it, or pipe it: zstd -dc FILE | cfl ... -" },
		{ "\xd0\xcf\x11\xe0", 4, "an Excel 97-2003 workbook (.xls)",
		  "save the sheet as CSV" },
		{ "SQLite format 3", 15, "an SQLite database",
		  "export a table as CSV: sqlite3 -header -csv FILE 'SELECT * FROM t'" },
		{ "%PDF-", 5, "a PDF document", "cfl reads CSV text" },
		{ "\xff\xfe", 2, "UTF-16 text",
		  "convert it to UTF-8: iconv -f UTF-16 -t UTF-8 FILE > OUT.csv" },
		{ "\xfe\xff", 2, "UTF-16 text",
		  "convert it to UTF-8: iconv -f UTF-16 -t UTF-8 FILE > OUT.csv" },
	};
	size_t i = 0;

	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return BYTES_GZIP;
	if (n >= 262 && !memcmp(p + 257, "ustar", 5))
		return cfl_err_set(err, "%s: not a CSV file: it looks like a tar archive; extract the CSV from it (tar xf FILE)",
				   name);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (n >= kinds[k].len && !memcmp(p, kinds[k].magic, kinds[k].len))
			return cfl_err_set(err, "%s: not a CSV file: it looks like %s; %s",
					   name, kinds[k].what, kinds[k].todo);
	/* JSON: an object, or an array of objects or arrays */
	if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
		i = 3;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	if (i < n && p[i] == '[') {
		size_t j = i + 1;

		while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\r' || p[j] == '\n'))
			j++;
		if (j < n && (p[j] == '{' || p[j] == '['))
			i = j;
	}
	if (i < n && p[i] == '{')
		return cfl_err_set(err, "%s: not a CSV file: it looks like JSON; convert it to CSV, e.g. in Python: pandas.read_json(F).to_csv(OUT, index=False)",
				   name);
	return BYTES_TEXT;
}

/* Inflates gzip (or zlib) data, members one after another as gunzip
 * does, into a new NUL-terminated buffer. */
static char *inflate_all(const char *name, const unsigned char *in, size_t len,
			 size_t *out_len, struct cfl_err *err)
{
	z_stream z;
	size_t cap = len < ((size_t)1 << 40) ? 4 * len + 4096 : len, n = 0;
	char *out = cfl_malloc(cap + 1, err);
	int zrc = Z_OK;

	if (!out)
		return NULL;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 32) != Z_OK) {	/* +32: gzip or zlib header */
		free(out);
		return cfl_err_set(err, "%s: cannot start zlib", name), NULL;
	}
	for (;;) {
		size_t left = len - (size_t)(z.next_in ? z.next_in - in : 0);

		if (!z.next_in)
			z.next_in = (unsigned char *)in;
		if (!z.avail_in)
			z.avail_in = (uInt)(left < (1u << 30) ? left : (1u << 30));
		if (n == cap) {
			char *b = cfl_realloc(out, 2 * cap + 1, err);

			if (!b)
				goto fail;
			out = b;
			cap *= 2;
		}
		z.next_out = (unsigned char *)out + n;
		z.avail_out = (uInt)(cap - n < (1u << 30) ? cap - n : (1u << 30));
		zrc = inflate(&z, Z_NO_FLUSH);
		n = (size_t)((char *)z.next_out - out);
		left = len - (size_t)(z.next_in - in);
		if (zrc == Z_STREAM_END) {
			/* another member after this one (cat a.gz b.gz) */
			if (left && inflateReset(&z) == Z_OK)
				continue;
			break;
		}
		if (zrc == Z_BUF_ERROR && !left && !z.avail_in) {
			cfl_err_set(err, "%s: gzip data cut short (after %zu bytes)", name, n);
			goto fail;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			cfl_err_set(err, "%s: corrupt gzip data (%s)", name,
				    z.msg ? z.msg : "inflate failed");
			goto fail;
		}
	}
	inflateEnd(&z);
	out[n] = '\0';
	*out_len = n;
	return out;
fail:
	inflateEnd(&z);
	free(out);
	return NULL;
}

/* Moves the window to start at buf[keep] (a row that went past its end)
 * and fills it, twice as big when that row took half of it.  The bytes
 * from keep on are read again rather than moved: the parse wrote into them.
 * 0, or -1 with err ("cannot read", "binary file (NUL byte)"). */
static int source_fill(struct source *s, size_t keep, struct cfl_err *err)
{
	size_t n = 0;

	if (!s->buf || s->end - keep >= s->cap / 2) {
		size_t cap = s->cap ? 2 * s->cap : cfl_csv_window;
		char *b = cfl_realloc(s->buf, cap + 1, err);

		if (!b)
			return -1;
		s->buf = b;
		s->cap = cap;
	}
	s->pos += keep;
	s->eof = 0;
	if (s->fd >= 0 && lseek(s->fd, (off_t)s->pos, SEEK_SET) < 0)
		return cfl_err_set(err, "cannot read '%s': %s", s->name,
				   strerror(errno));
	while (n < s->cap && !s->eof) {
		ssize_t got;

		if (s->fd < 0) {
			size_t left = s->pos + n < s->mem_len ? s->mem_len - s->pos - n : 0;

			got = (ssize_t)(left < s->cap - n ? left : s->cap - n);
			memcpy(s->buf + n, s->mem + s->pos + n, (size_t)got);
		} else {
			got = read(s->fd, s->buf + n, s->cap - n);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return cfl_err_set(err, "cannot read '%s': %s", s->name,
						   strerror(errno));
		}
		if (got == 0)
			s->eof = 1;
		n += (size_t)got;
	}
	s->end = n;
	s->buf[n] = '\0';
	if (memchr(s->buf, '\0', n))
		return cfl_err_set(err, "%s: binary file (a NUL byte at byte offset %zu), not CSV text",
				   s->name, s->pos + (size_t)((char *)memchr(s->buf, '\0', n) - s->buf));
	if (s->check_utf8) {
		size_t bad = utf8_check((unsigned char *)s->buf, n, s->eof, NULL);

		if (bad < n) {
			/* parse_named reads it all again and decides */
			s->bad_utf8 = s->pos + bad;
			return cfl_err_set(err, "%s: not UTF-8", s->name);
		}
	}
	return 0;
}

/* Starts s over at the first byte (a second pass). */
static void source_rewind(struct source *s)
{
	s->pos = 0;
	s->end = 0;
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

/* 1 when p..end holds the whole first line (its end outside quotes). */
static int has_first_line(const char *p, const char *end)
{
	int quoted = 0;

	for (; p < end; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (!quoted && (*p == '\n' || *p == '\r'))
			return 1;
	}
	return 0;
}

struct parse_state {
	struct cfl_csv *csv;
	struct source *src;
	char delim;
	int decimal_comma;	/* ';'-separated: "1,5" is 1.5 */
	unsigned char stop[256];	/* bytes that end an unquoted cell */
	/* the row being read: its cells, unquoted and NUL-terminated in
	 * place in the window (NULL: the missing cell after a delimiter
	 * that ends the file) */
	char **cell;
	size_t n_fields, cap_fields;
	/* the columns */
	size_t n_cols, n_rows, cap_rows;
	size_t done;		/* source bytes up to the end of the row */
	unsigned char *seen_num;	/* n_cols: a number came before any text */
	size_t *late;		/* n_cols: first text row of a column that had
				 * numbers before it (their text is read in a
				 * second pass), or 0 */
	struct arena_block *arena;
};

static int row_cell(struct parse_state *st, char *cell, struct cfl_err *err)
{
	if (st->n_fields == st->cap_fields) {
		size_t cap = st->cap_fields ? 2 * st->cap_fields : 64;
		char **c = cfl_realloc(st->cell, cap * sizeof(*c), err);

		if (!c)
			return -1;
		st->cell = c;
		st->cap_fields = cap;
	}
	st->cell[st->n_fields++] = cell;
	return 0;
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

/* Reads one row starting at *pp (not a blank line) in place: unquoting
 * only ever shrinks a cell, delimiters become NULs.  Returns 1 with *pp
 * after its end, 0 when the window ends inside the row and the source goes
 * on (the row's bytes were written to: read them again, try again), -1 on
 * an error. */
static int read_row(struct parse_state *st, char **pp, size_t *line,
		    struct cfl_err *err)
{
	char *p = *pp, *end = st->src->buf + st->src->end;
	char delim = st->delim;
	int eof = st->src->eof;

	st->n_fields = 0;
	for (;;) {
		char *cell, *q = p, c;

		while (q < end && *q == ' ')
			q++;
		if (q >= end && !eof)
			return 0;
		if (q < end && *q == '"') {
			/* quoted: unquote in place, "" is one quote */
			char *w, *start;
			size_t qline = *line;

			p = q + 1;
			w = start = p;
			for (;;) {
				if (p >= end) {
					if (!eof)
						return 0;
					return cfl_err_set(err, "%s:%zu: unclosed quote",
							   st->csv->name, qline);
				}
				if (*p == '"') {
					if (p + 1 >= end && !eof)
						return 0;
					if (p + 1 < end && p[1] == '"') {
						*w++ = '"';
						p += 2;
						continue;
					}
					p++;
					break;
				}
				if (*p == '\n')
					(*line)++;
				*w++ = *p++;
			}
			/* blanks may follow the closing quote */
			while (p < end && *p == ' ')
				p++;
			if (p >= end && !eof)
				return 0;
			if (p < end && *p != delim && *p != '\n' && *p != '\r')
				return cfl_err_set(err, "%s:%zu: unexpected '%c' after a closing quote",
						   st->csv->name, *line, *p);
			c = p < end ? *p : '\0';
			*w = '\0';	/* w < p: the closing quote was consumed */
			cell = start;
		} else {
			char *s = p;

			/* buf[end] is NUL, and NUL stops the scan */
			while (!st->stop[(unsigned char)*p])
				p++;
			if (p >= end && !eof)
				return 0;
			c = p < end ? *p : '\0';
			cell = trim(s, p, delim);
		}
		if (row_cell(st, cell, err))
			return -1;
		/* c is what ended the cell: delim, '\n', '\r' or '\0' (EOF) */
		if (c == delim) {
			*p++ = '\0';
			if (p >= end) {
				if (!eof)
					return 0;
				/* a delimiter at the very end: one more empty cell */
				if (row_cell(st, NULL, err))
					return -1;
				break;
			}
			continue;
		}
		if (c == '\r') {
			*p++ = '\0';
			if (p >= end && !eof)
				return 0;	/* is a '\n' next? */
			if (p < end && *p == '\n')
				p++;
			(*line)++;
		} else if (c == '\n') {
			*p++ = '\0';
			(*line)++;
		}
		break;
	}
	*pp = p;
	return 1;
}

/* The number of a cell that is not missing, NaN when it is text.  In a
 * ';' file "1,5" is 1.5, and the cell's text becomes "1.5". */
static double cell_number(const struct parse_state *st, char *cell)
{
	double v = cfl_csv_number(cell);

	if (st->decimal_comma && isnan(v)) {
		/* semicolon files often write 1,5 for 1.5 */
		char *comma = strchr(cell, ',');

		if (comma && !strchr(comma + 1, ',') && !strchr(cell, '.')) {
			*comma = '.';
			v = cfl_csv_number(cell);
			if (isnan(v))
				*comma = ',';
		}
	}
	return v;
}

static int grow_rows(struct parse_state *st, struct cfl_err *err)
{
	struct cfl_csv *csv = st->csv;
	size_t cap = st->cap_rows ? 2 * st->cap_rows : 1024, m = st->n_cols;

	/* the rows to come from the bytes to come: one copy of what was
	 * read so far instead of one per doubling */
	if (st->n_rows && st->done && st->src->size > st->done) {
		double per_row = (double)st->done / (double)st->n_rows;
		double est = (double)st->src->size / per_row * 1.05 + 1024;

		if (est > (double)cap && est < (double)((size_t)-1 / 16))
			cap = (size_t)est;
	}
	double *num;
	size_t *line;

	if (cap > ((size_t)-1 / sizeof(double)) / (m + 1))
		return cfl_err_set(err, "%s: too many cells", csv->name);
	/* big blocks are their own mappings, which realloc moves without
	 * copying */
	num = cfl_realloc(csv->num, cap * m * sizeof(*num), err);
	if (!num)
		return -1;
	csv->num = num;
	cfl_advise_huge(num, cap * m * sizeof(*num));
	line = cfl_realloc(csv->line, cap * sizeof(*line), err);
	if (!line)
		return -1;
	csv->line = line;
	for (size_t j = 0; j < m; j++)
		if (csv->text[j]) {
			char **t = cfl_realloc(csv->text[j], cap * sizeof(*t), err);

			if (!t)
				return -1;
			csv->text[j] = t;
		}
	st->cap_rows = cap;
	return 0;
}

/* Stores the row just read as data row st->n_rows. */
static int store_row(struct parse_state *st, size_t line, struct cfl_err *err)
{
	struct cfl_csv *csv = st->csv;
	size_t m = st->n_cols, i = st->n_rows;
	double *num;

	if (i == st->cap_rows && grow_rows(st, err))
		return -1;
	num = csv->num + i * m;
	csv->line[i] = line;
	for (size_t j = 0; j < m; j++) {
		char *cell = st->cell[j];
		char **text = csv->text[j];
		double v;

		if (!cell || cfl_csv_is_missing(cell)) {
			num[j] = NAN;
			if (text)
				text[i] = NULL;
			continue;
		}
		v = num[j] = cell_number(st, cell);
		if (!text) {
			if (!isnan(v)) {
				st->seen_num[j] = 1;
				continue;
			}
			/* the column's first text: from now on every cell
			 * of it keeps its text (levels are texts then) */
			text = csv->text[j] = cfl_calloc(st->cap_rows, sizeof(*text), err);
			if (!text)
				return -1;
			if (st->seen_num[j])
				st->late[j] = i;
		}
		text[i] = arena_dup(&st->arena, cell, strlen(cell), err);
		if (!text[i])
			return -1;
	}
	st->n_rows++;
	return 0;
}

/* The second pass: the text of the number cells that came before a
 * column's first text (rows below st->late[j]). */
static int store_late(struct parse_state *st, size_t i, size_t line,
		      struct cfl_err *err)
{
	struct cfl_csv *csv = st->csv;
	size_t m = st->n_cols;

	if (i >= st->n_rows || csv->line[i] != line || st->n_fields != m)
		return cfl_err_set(err, "'%s' changed while it was read", csv->name);
	for (size_t j = 0; j < m; j++) {
		char *cell = st->cell[j];

		if (i >= st->late[j] || !cell || isnan(csv->num[i * m + j]))
			continue;
		cell_number(st, cell);	/* the same text as the first pass */
		csv->text[j][i] = arena_dup(&st->arena, cell, strlen(cell), err);
		if (!csv->text[j][i])
			return -1;
	}
	return 0;
}

/* The header row just read. */
static int store_header(struct parse_state *st, struct cfl_err *err)
{
	struct cfl_csv *csv = st->csv;
	size_t m = st->n_fields;

	st->n_cols = csv->n_cols = m;
	csv->header = cfl_calloc(m + 1, sizeof(char *), err);
	csv->text = cfl_calloc(m + 1, sizeof(char **), err);
	st->seen_num = cfl_calloc(m + 1, 1, err);
	st->late = cfl_calloc(m + 1, sizeof(size_t), err);
	if (!csv->header || !csv->text || !st->seen_num || !st->late)
		return -1;
	for (size_t j = 0; j < m; j++) {
		const char *cell = st->cell[j] ? st->cell[j] : "";

		if (!(csv->header[j] = arena_dup(&st->arena, cell, strlen(cell), err)))
			return -1;
	}
	return 0;
}

/* One pass over the source: the header, then every row (stored, or in
 * the second pass, its late texts). */
static int parse_pass(struct parse_state *st, int second, struct cfl_err *err)
{
	struct source *src = st->src;
	struct cfl_csv *csv = st->csv;
	char *p;
	size_t line = 1, row = 0, row_line;
	int header = 1;

	if (source_fill(src, 0, err))
		return -1;
	/* the first line whole in the window (for the delimiter) */
	while (!src->eof && !has_first_line(src->buf, src->buf + src->end))
		if (source_fill(src, 0, err))
			return -1;
	p = src->buf;
	if (src->end >= 3 && (unsigned char)p[0] == 0xEF &&
	    (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
		p += 3;
	if (!second) {
		st->delim = csv->delim = detect_delim(p, src->buf + src->end);
		st->decimal_comma = st->delim == ';';
		st->stop[0] = st->stop['\n'] = st->stop['\r'] = 1;
		st->stop[(unsigned char)st->delim] = 1;
	}
	for (;;) {
		const char *end = src->buf + src->end;
		int rc;

		if (p >= end || (*p == '\r' && p + 1 >= end)) {
			if (src->eof && p >= end)
				break;
			if (!src->eof) {
				size_t at = (size_t)(p - src->buf);

				if (source_fill(src, at, err))
					return -1;
				p = src->buf;
				continue;
			}
		}
		/* a blank line (only CR/LF) is skipped */
		if (*p == '\n' || *p == '\r') {
			if (*p == '\n' || p + 1 >= end || p[1] != '\n')
				line++;
			p++;
			continue;
		}
		row_line = line;
		rc = read_row(st, &p, &line, err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			/* the row goes past the window: read more, again */
			size_t at = (size_t)(p - src->buf);

			line = row_line;
			if (source_fill(src, at, err))
				return -1;
			p = src->buf;
			continue;
		}
		if (header) {
			header = 0;
			if (!second && store_header(st, err))
				return -1;
			continue;
		}
		if (st->n_fields != st->n_cols)
			return cfl_err_set(err, "%s:%zu: row has %zu fields, the header has %zu",
					   csv->name, row_line, st->n_fields, st->n_cols);
		st->done = src->pos + (size_t)(p - src->buf);
		if (second ? store_late(st, row, row_line, err)
			   : store_row(st, row_line, err))
			return -1;
		row++;
	}
	if (header)
		return cfl_err_set(err, "%s: empty file", csv->name);
	if (row == 0)
		return cfl_err_set(err, "%s:%zu: no data rows after the header",
				   csv->name, line);
	if (second && row != st->n_rows)
		return cfl_err_set(err, "'%s' changed while it was read", csv->name);
	return 0;
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

/* Parses src into csv: one pass, and a second one when a column's text
 * came after some of its numbers.  Columns keep chooses (NULL: none) keep
 * their text from the first row on. */
static int parse_source(struct cfl_csv *csv, struct source *src,
			const struct csv_keep *keep,
			struct cfl_err *err)
{
	struct parse_state st;
	int rc = -1, any_late = 0;

	memset(&st, 0, sizeof(st));
	st.csv = csv;
	st.src = src;
	if (parse_pass(&st, 0, err))
		goto out;
	csv->n_cols = st.n_cols;
	csv->n_rows = st.n_rows;
	for (size_t j = 0; j < st.n_cols; j++)
		any_late |= st.late[j] != 0;
	for (size_t j = 0; keep && j < st.n_cols; j++) {
		int want = keep->want && keep->want(keep->ctx, csv->header[j]);

		for (size_t k = 0; k < keep->n_names && !want; k++)
			want = !strcmp(csv->header[j], keep->names[k]);
		if (want && !csv->text[j]) {
			/* every cell holds a number or nothing: all late */
			csv->text[j] = cfl_calloc(st.cap_rows, sizeof(char *), err);
			if (!csv->text[j])
				goto out;
			st.late[j] = st.n_rows;
			any_late = 1;
		}
	}
	if (any_late && (source_rewind(src), parse_pass(&st, 1, err)))
		goto out;
	/* give back what the doubling left unused (a shrink moves nothing) */
	{
		size_t n = st.n_rows, m = st.n_cols;
		double *num = realloc(csv->num, n * m * sizeof(double) + 1);
		size_t *line = realloc(csv->line, n * sizeof(size_t) + 1);

		if (num)
			csv->num = num;
		if (line)
			csv->line = line;
	}
	rc = fix_header(csv, err);
out:
	csv->arena = st.arena;
	free(st.cell);
	free(st.seen_num);
	free(st.late);
	return rc;
}

/* Reads the whole of fd (from its start when it seeks) into a new
 * NUL-terminated buffer. */
static char *read_fd(int fd, const char *name, size_t *len, struct cfl_err *err)
{
	size_t n = 0, cap = 1u << 16;
	struct stat st;
	char *buf;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		cap = (size_t)st.st_size + 1;
		if (lseek(fd, 0, SEEK_SET) < 0)
			return cfl_err_set(err, "cannot read '%s': %s", name,
					   strerror(errno)), NULL;
	}
	if (!(buf = cfl_malloc(cap + 1, err)))
		return NULL;
	for (;;) {
		ssize_t got;

		if (n == cap) {
			char *b = cfl_realloc(buf, 2 * cap + 1, err);

			if (!b) {
				free(buf);
				return NULL;
			}
			buf = b;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			cfl_err_set(err, "cannot read '%s': %s", name, strerror(errno));
			free(buf);
			return NULL;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* After a parse stopped at a byte that is not UTF-8: the whole text is
 * transcoded from Windows-1252 when none of it is UTF-8 beyond ASCII (a
 * file written by Excel or an older system: one encoding throughout), and
 * parsed again; a text with UTF-8 and other bytes both is refused, naming
 * the first bad byte (transcoding it would garble the UTF-8 part). */
static int parse_recoded(struct cfl_csv *csv, struct source *src,
			 const struct csv_keep *keep,
			 struct cfl_err *err)
{
	struct source again = { .fd = -1, .name = src->name, .bad_utf8 = SIZE_MAX };
	char *raw = NULL, *text, *name = csv->name;
	const unsigned char *bytes = (const unsigned char *)src->mem;
	size_t len = src->mem_len, bad, n_multi, line = 1, text_len;
	int rc;

	csv->name = NULL;	/* what the failed parse left, gone */
	cfl_csv_release(csv);
	csv->name = name;
	if (src->fd >= 0) {
		if (!(raw = read_fd(src->fd, src->name, &len, err)))
			return -1;
		bytes = (const unsigned char *)raw;
	}
	src->pos = 0;
	src->end = len;	/* what was read, for cfl_csv_read_keep's count */
	/* the first bad byte, and the UTF-8 sequences in the whole text */
	bad = utf8_check(bytes, len, 1, &n_multi);
	for (size_t at = bad + 1, m; at < len; at += m + 1) {
		size_t k;

		m = utf8_check(bytes + at, len - at, 1, &k);
		n_multi += k;
	}
	for (size_t i = 0; i < bad && i < len; i++)
		line += bytes[i] == '\n';
	if (n_multi || bad >= len) {
		if (bad >= len)
			rc = cfl_err_set(err, "'%s' changed while it was read", src->name);
		else
			rc = cfl_err_set(err, "%s:%zu: byte 0x%02X at byte offset %zu is not UTF-8, and the text has UTF-8 elsewhere: the file mixes encodings; convert the part that is not (iconv -f LATIN1 -t UTF-8)",
					 src->name, line, bytes[bad], bad);
		free(raw);
		return rc;
	}
	text = from_cp1252(bytes, len, &text_len, err);
	free(raw);
	if (!text)
		return -1;
	again.mem = text;
	again.mem_len = again.size = text_len;
	rc = parse_source(csv, &again, keep, err);
	free(again.buf);
	free(text);
	if (!rc) {
		csv->recoded = "Windows-1252";
		csv->recoded_line = line;
	}
	return rc;
}

static int parse_named(struct cfl_csv *csv, const char *name,
		       struct source *src, const struct csv_keep *keep, struct cfl_err *err)
{
	int rc;

	memset(csv, 0, sizeof(*csv));
	src->name = name ? name : "<csv>";
	src->check_utf8 = 1;
	src->bad_utf8 = SIZE_MAX;
	csv->name = cfl_strdup(src->name, err);
	rc = csv->name ? parse_source(csv, src, keep, err) : -1;
	free(src->buf);
	src->buf = NULL;
	if (rc && src->bad_utf8 != SIZE_MAX)
		rc = parse_recoded(csv, src, keep, err);
	if (rc)
		cfl_csv_release(csv);
	return rc;
}

/* Parses bytes in memory: gzip inflated first, other binary refused. */
static int parse_bytes(struct cfl_csv *csv, const char *name, const char *text,
		       size_t len, const struct csv_keep *keep,
		       struct cfl_err *err)
{
	struct source src = { .fd = -1, .mem = text, .mem_len = len, .size = len };
	const char *shown = name ? name : "<csv>";
	int kind = sniff(shown, (const unsigned char *)text, len, err);
	char *plain;
	size_t plain_len;
	int rc = -1;

	memset(csv, 0, sizeof(*csv));
	if (kind < 0)
		return -1;
	if (kind == BYTES_TEXT)
		return parse_named(csv, name, &src, keep, err);
	plain = inflate_all(shown, (const unsigned char *)text, len, &plain_len, err);
	if (!plain)
		return -1;
	/* what was inside may not be CSV either (a .tar.gz, a .gz.gz) */
	kind = sniff(shown, (unsigned char *)plain, plain_len, err);
	if (kind == BYTES_GZIP)
		cfl_err_set(err, "%s: gzip data inside gzip data; decompress it once: gzip -dc FILE > OUT.csv.gz",
			    shown);
	if (kind == BYTES_TEXT) {
		src.mem = plain;
		src.mem_len = src.size = plain_len;
		rc = parse_named(csv, name, &src, keep, err);
	}
	if (!rc)
		csv->gzip = 1;
	free(plain);
	return rc;
}

int cfl_csv_parse(struct cfl_csv *csv, const char *name, const char *text,
		  size_t len, struct cfl_err *err)
{
	return parse_bytes(csv, name, text, len, NULL, err);
}

/* Reads a whole file with one read of its size (no growing buffer); "-"
 * is standard input. */
char *cfl_csv_slurp(const char *path, size_t *len /* OUT */, struct cfl_err *err)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
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
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		n += got;
		if (got == 0)
			break;
		if (n + 1 == cap) {
			/* full: grow only when there is more (the file grew,
			 * or its size was unknown), not to find the end of a
			 * file read whole */
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
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

int cfl_csv_read_keep(struct cfl_csv *csv, const char *path,
		      const char *const *keep, size_t n_keep,
		      size_t *n_bytes /* OUT, may be NULL */,
		      struct cfl_err *err)
{
	struct csv_keep ks = { keep, n_keep, NULL, NULL };

	return cfl_csv_read_chosen(csv, path, &ks, n_bytes, err);
}

int cfl_csv_read_chosen(struct cfl_csv *csv, const char *path,
			const struct csv_keep *ks,
			size_t *n_bytes /* OUT, may be NULL */,
			struct cfl_err *err)
{
	struct source src = { .fd = -1 };
	struct stat st;
	unsigned char head[512];
	char *buf = NULL;
	size_t len = 0;
	ssize_t got;
	int rc, kind;

	memset(csv, 0, sizeof(*csv));
	if (!strcmp(path, "-")) {
		if (!(buf = cfl_csv_slurp(path, &len, err)))
			return -1;
		goto in_memory;
	}
	src.fd = open(path, O_RDONLY);
	if (src.fd < 0)
		return cfl_err_set(err, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(src.fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(src.fd);
		return cfl_err_set(err, "cannot read '%s': Is a directory", path);
	}
	if (fstat(src.fd, &st) || !S_ISREG(st.st_mode)) {
		/* a pipe cannot be read twice: read it whole first */
		close(src.fd);
		if (!(buf = cfl_csv_slurp(path, &len, err)))
			return -1;
		goto in_memory;
	}
	/* a compressed file is inflated whole; another binary one refused */
	while ((got = pread(src.fd, head, sizeof(head), 0)) < 0 && errno == EINTR)
		;
	kind = got < 0 ? BYTES_TEXT : sniff(path, head, (size_t)got, err);
	if (kind < 0) {
		close(src.fd);
		return -1;
	}
	if (kind == BYTES_GZIP) {
		buf = read_fd(src.fd, path, &len, err);
		close(src.fd);
		if (!buf)
			return -1;
		goto in_memory;
	}
	src.size = (size_t)st.st_size;
	rc = parse_named(csv, path, &src, ks, err);
	if (n_bytes)
		*n_bytes = src.pos + src.end;
	close(src.fd);
	return rc;
in_memory:
	rc = parse_bytes(csv, path, buf, len, ks, err);
	if (n_bytes)
		*n_bytes = len;
	free(buf);
	return rc;
}

int cfl_csv_read(struct cfl_csv *csv, const char *path, struct cfl_err *err)
{
	return cfl_csv_read_keep(csv, path, NULL, 0, NULL, err);
}

void cfl_csv_release(struct cfl_csv *csv)
{
	if (!csv)
		return;
	free(csv->name);
	free(csv->header);
	if (csv->text)
		for (size_t j = 0; j < csv->n_cols; j++)
			free(csv->text[j]);
	free(csv->text);
	free(csv->line);
	free(csv->num);
	free(csv->names);
	arena_free(csv->arena);
	memset(csv, 0, sizeof(*csv));
}

int cfl_csv_missing(const struct cfl_csv *csv, size_t i, size_t j)
{
	return isnan(csv->num[i * csv->n_cols + j]) &&
	       (!csv->text[j] || !csv->text[j][i]);
}

const char *cfl_csv_cell(const struct cfl_csv *csv, size_t i, size_t j,
			 char *buf /* CFL_CSV_CELL_BUF */)
{
	double v = csv->num[i * csv->n_cols + j];

	if (csv->text[j])
		return csv->text[j][i];
	if (isnan(v))
		return NULL;
	/* the shortest %g that reads back as the same number */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, CFL_CSV_CELL_BUF, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

long cfl_csv_column(const struct cfl_csv *csv, const char *name)
{
	for (size_t j = 0; j < csv->n_cols; j++)
		if (strcmp(csv->header[j], name) == 0)
			return (long)j;
	return -1;
}

/* ---- csv: column names for messages ---- */

const char *cfl_csv_closest_column(const struct cfl_csv *csv, const char *name)
{
	return cfl_closest(name, (const char *const *)csv->header, csv->n_cols);
}

void cfl_csv_list_columns(const struct cfl_csv *csv, size_t max, char *buf,
			  size_t cap)
{
	size_t len = strlen(buf);

	for (size_t j = 0; j < csv->n_cols && len + 1 < cap; j++) {
		if (j == max) {
			snprintf(buf + len, cap - len, " and %zu more",
				 csv->n_cols - max);
			return;
		}
		snprintf(buf + len, cap - len, "%s'%s'", j ? ", " : "",
			 csv->header[j]);
		len += strlen(buf + len);
	}
}
