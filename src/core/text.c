/*
 * Text laid out for people: words wrapped at a width, CSV fields quoted,
 * parameter lists given room to break.  Everything formats into a struct
 * cfl_buf; src/cli decides where the bytes go (a terminal, a file).
 */
#include "cfl/core.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int cfl_buf_wrap(struct cfl_buf *b, const char *text, size_t col,
		 size_t indent, size_t width)
{
	const char *p = text;
	int first = 1, rc = 0;

	for (;;) {
		size_t n;

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (!n)
			break;
		if (col > indent && col + !first + n > width) {
			rc |= cfl_buf_printf(b, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			rc |= cfl_buf_puts(b, " ");
			col++;
		}
		rc |= cfl_buf_append(b, p, n);
		col += n;
		p += n;
		first = 0;
	}
	return rc | cfl_buf_puts(b, "\n");
}

int cfl_buf_wrap_lines(struct cfl_buf *b, const char *text, size_t width)
{
	size_t col = 0;
	const char *p = text;
	int rc = 0;

	if (!width)
		return cfl_buf_printf(b, "%s\n", text);
	while (*p) {
		size_t n;

		if (*p == '\n') {
			rc |= cfl_buf_puts(b, "\n");
			col = 0;
			p++;
			continue;
		}
		if (*p == ' ' && col) {
			p++;
			continue;
		}
		/* a line's leading blanks stay with its first word */
		n = col ? strcspn(p, " \n")
			: strspn(p, " ") + strcspn(p + strspn(p, " "), " \n");
		if (col && col + 1 + n > width) {
			rc |= cfl_buf_puts(b, "\n ");
			col = 1;
		} else if (col) {
			rc |= cfl_buf_puts(b, " ");
			col++;
		}
		rc |= cfl_buf_append(b, p, n);
		col += n;
		p += n;
	}
	return rc | cfl_buf_puts(b, "\n");
}

int cfl_buf_csv_field(struct cfl_buf *b, const char *s)
{
	int rc = 0;

	/* blanks at either end are quoted too: readers may trim them */
	if (!strpbrk(s, ",\"\r\n") && s[0] != ' ' &&
	    (!*s || s[strlen(s) - 1] != ' '))
		return cfl_buf_puts(b, s);
	rc |= cfl_buf_puts(b, "\"");
	for (; *s; s++)
		rc |= *s == '"' ? cfl_buf_puts(b, "\"\"") : cfl_buf_append(b, s, 1);
	return rc | cfl_buf_puts(b, "\"");
}

void cfl_params_spaced(const char *params, char *out, size_t cap)
{
	size_t k = 0;

	for (const char *q = params; q && *q && k + 2 < cap; q++) {
		const char *r = q + 1;

		out[k++] = *q;
		if (*q != ',')
			continue;
		while (*r && (isalnum((unsigned char)*r) || *r == '_' || *r == '.'))
			r++;
		if (r > q + 1 && *r == '=')
			out[k++] = ' ';
	}
	if (cap)
		out[k < cap ? k : cap - 1] = '\0';
}

char *cfl_path_default_output(const char *path, const char *ext)
{
	const char *base = strcmp(path, "-") ? strrchr(path, '/') : NULL;
	const char *dot;
	size_t n, n_ext = strlen(ext);
	char *out;

	if (!strcmp(path, "-"))
		path = "stdin";
	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 3 && !strcmp(base + n - 3, ".gz"))
		n -= 3;
	dot = memrchr(base, '.', n);
	n = dot && dot != base ? (size_t)(dot - base) : n;
	out = malloc(n + n_ext + 1);
	if (out) {
		memcpy(out, base, n);
		memcpy(out + n, ext, n_ext + 1);
	}
	return out;
}
