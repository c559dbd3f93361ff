/*
 * A token reader for the text formats cfl writes (model files).  Tokens are
 * separated by blanks and newlines; every error names the source and the
 * line, and no input, however hostile, makes it read past len.
 */
#include "cfl/core.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfl_reader_init(struct cfl_reader *r, const char *name, const char *buf,
		     size_t len)
{
	r->name = name;
	r->buf = buf;
	r->len = len;
	r->pos = 0;
	r->line = 1;
}

int cfl_reader_fail(struct cfl_reader *r, struct cfl_err *err,
		    const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cfl_err_set(err, "%s:%zu: %s", r->name, r->line, msg);
}

static void skip_blanks(struct cfl_reader *r)
{
	while (r->pos < r->len) {
		char c = r->buf[r->pos];

		if (c == '\n')
			r->line++;
		else if (c != ' ' && c != '\t' && c != '\r')
			break;
		r->pos++;
	}
}

int cfl_reader_word(struct cfl_reader *r, char *out, size_t cap,
		    struct cfl_err *err)
{
	size_t start, n;

	skip_blanks(r);
	if (r->pos >= r->len)
		return cfl_reader_fail(r, err, "unexpected end of file");
	start = r->pos;
	while (r->pos < r->len) {
		char c = r->buf[r->pos];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			break;
		r->pos++;
	}
	n = r->pos - start;
	if (n + 1 > cap)
		return cfl_reader_fail(r, err, "token too long (%zu bytes)", n);
	memcpy(out, r->buf + start, n);
	out[n] = '\0';
	if (memchr(out, '\0', n))
		return cfl_reader_fail(r, err, "NUL byte in text");
	return 0;
}

int cfl_reader_expect(struct cfl_reader *r, const char *word,
		      struct cfl_err *err)
{
	char tok[128];

	if (cfl_reader_word(r, tok, sizeof(tok), err))
		return cfl_reader_fail(r, err, "expected '%s', found the end of the file", word);
	if (strcmp(tok, word) != 0)
		return cfl_reader_fail(r, err, "expected '%s', found '%s'",
				       word, tok);
	return 0;
}

int cfl_reader_double(struct cfl_reader *r, double *out, struct cfl_err *err)
{
	char tok[64], *end;

	if (cfl_reader_word(r, tok, sizeof(tok), err))
		return -1;
	errno = 0;
	*out = strtod(tok, &end);
	if (*end || end == tok)
		return cfl_reader_fail(r, err,
				       "expected a number, found '%s'", tok);
	return 0;
}

int cfl_reader_float(struct cfl_reader *r, float *out, struct cfl_err *err)
{
	char tok[64], *end;

	if (cfl_reader_word(r, tok, sizeof(tok), err))
		return -1;
	*out = strtof(tok, &end);
	if (*end || end == tok)
		return cfl_reader_fail(r, err,
				       "expected a number, found '%s'", tok);
	return 0;
}

int cfl_reader_int(struct cfl_reader *r, long lo, long hi, long *out,
		   struct cfl_err *err)
{
	char tok[64], *end;
	long v;

	if (cfl_reader_word(r, tok, sizeof(tok), err))
		return -1;
	errno = 0;
	v = strtol(tok, &end, 10);
	if (*end || end == tok || errno)
		return cfl_reader_fail(r, err,
				       "expected an integer, found '%s'", tok);
	if (v < lo || v > hi)
		return cfl_reader_fail(r, err,
				       "%ld is out of range [%ld, %ld]", v, lo,
				       hi);
	*out = v;
	return 0;
}

int cfl_reader_size(struct cfl_reader *r, size_t max, size_t *out,
		    struct cfl_err *err)
{
	char tok[64], *end;
	unsigned long long v;

	if (cfl_reader_word(r, tok, sizeof(tok), err))
		return -1;
	errno = 0;
	v = strtoull(tok, &end, 10);
	if (*end || end == tok || errno || tok[0] == '-')
		return cfl_reader_fail(r, err, "expected a count, found '%s'",
				       tok);
	if (v > max)
		return cfl_reader_fail(r, err, "count %llu is larger than %zu",
				       v, max);
	*out = (size_t)v;
	return 0;
}

int cfl_reader_u64(struct cfl_reader *r, uint64_t *out, struct cfl_err *err)
{
	char tok[64], *end;

	if (cfl_reader_word(r, tok, sizeof(tok), err))
		return -1;
	errno = 0;
	*out = strtoull(tok, &end, 10);
	if (*end || end == tok || errno || tok[0] == '-')
		return cfl_reader_fail(r, err,
				       "expected an unsigned integer, found '%s'",
				       tok);
	return 0;
}

int cfl_reader_doubles(struct cfl_reader *r, double *out, size_t n,
		       struct cfl_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (cfl_reader_double(r, &out[i], err))
			return -1;
	return 0;
}

int cfl_reader_floats(struct cfl_reader *r, float *out, size_t n,
		      struct cfl_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (cfl_reader_float(r, &out[i], err))
			return -1;
	return 0;
}

char *cfl_reader_line(struct cfl_reader *r, struct cfl_err *err)
{
	size_t start, end;
	char *s;

	while (r->pos < r->len && (r->buf[r->pos] == ' ' ||
				   r->buf[r->pos] == '\t'))
		r->pos++;
	start = r->pos;
	while (r->pos < r->len && r->buf[r->pos] != '\n')
		r->pos++;
	end = r->pos;
	if (end > start && r->buf[end - 1] == '\r')
		end--;
	s = cfl_malloc(end - start + 1, err);
	if (!s)
		return NULL;
	memcpy(s, r->buf + start, end - start);
	s[end - start] = '\0';
	return s;
}
