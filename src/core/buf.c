/*
 * Growable byte buffers and whole-file I/O.  A buffer is NUL-terminated
 * whenever it holds data, so text built in it can be used as a C string.
 * Files are written through a temporary name and rename() so a reader never
 * sees half a file.
 */
#include "cfl/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cfl_buf_init(struct cfl_buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void cfl_buf_release(struct cfl_buf *b)
{
	free(b->data);
	cfl_buf_init(b);
}

int cfl_buf_reserve(struct cfl_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > (size_t)-1 - b->len - 1)
		return -1;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int cfl_buf_shell_word(struct cfl_buf *b, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789_@%+=:,./-";

	if (*s && strspn(s, safe) == strlen(s))
		return cfl_buf_puts(b, s);
	/* inside '...' only a quote is special: close, escape it, reopen */
	if (cfl_buf_puts(b, "'"))
		return -1;
	for (const char *c = s; *c; c++)
		if (*c == '\'' ? cfl_buf_puts(b, "'\\''") : cfl_buf_append(b, c, 1))
			return -1;
	return cfl_buf_puts(b, "'");
}

int cfl_buf_append(struct cfl_buf *b, const void *data, size_t len)
{
	if (cfl_buf_reserve(b, len))
		return -1;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int cfl_buf_puts(struct cfl_buf *b, const char *s)
{
	return cfl_buf_append(b, s, strlen(s));
}

int cfl_buf_vprintf(struct cfl_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0 || cfl_buf_reserve(b, (size_t)n))
		return -1;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int cfl_buf_printf(struct cfl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = cfl_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int cfl_buf_doubles(struct cfl_buf *b, const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cfl_buf_printf(b, " %.17g", v[i]))
			return -1;
	return 0;
}

int cfl_buf_floats(struct cfl_buf *b, const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cfl_buf_printf(b, " %.9g", (double)v[i]))
			return -1;
	return 0;
}

int cfl_buf_read_file(struct cfl_buf *b, const char *path, struct cfl_err *err)
{
	FILE *f = fopen(path, "rb");
	char chunk[65536];
	size_t n;

	b->len = 0;
	if (!f)
		return cfl_err_set(err, "cannot open '%s': %s", path,
				   strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (cfl_buf_append(b, chunk, n)) {
			fclose(f);
			return cfl_err_set(err, "cannot read '%s': out of memory",
					   path);
		}
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		return cfl_err_set(err, "cannot read '%s': %s", path,
				   strerror(e));
	}
	fclose(f);
	if (!b->data && cfl_buf_append(b, "", 0))
		return cfl_err_set(err, "cannot read '%s': out of memory", path);
	return 0;
}

/* Writes straight into path: for devices and pipes (-o /dev/null), which a
 * rename() would replace by a regular file. */
static int write_in_place(const char *path, const void *data, size_t len,
			  struct cfl_err *err)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return cfl_err_set(err, "cannot write '%s': %s", path,
				   strerror(errno));
	ok = fwrite(data, 1, len, f) == len;
	ok = (fclose(f) == 0) && ok;
	return ok ? 0 : cfl_err_set(err, "cannot write '%s': %s", path,
				    strerror(errno));
}

int cfl_write_file_atomic(const char *path, const void *data, size_t len,
			  struct cfl_err *err)
{
	struct cfl_buf tmp;
	struct stat st;
	FILE *f;
	int ok;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return write_in_place(path, data, len, err);
	cfl_buf_init(&tmp);
	if (cfl_buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid()))
		return cfl_err_set(err, "out of memory");
	f = fopen(tmp.data, "wb");
	if (!f) {
		cfl_err_set(err, "cannot write '%s': %s", path, strerror(errno));
		cfl_buf_release(&tmp);
		return -1;
	}
	ok = fwrite(data, 1, len, f) == len;
	ok = (fflush(f) == 0) && ok;
	ok = (fclose(f) == 0) && ok;
	if (!ok || rename(tmp.data, path) != 0) {
		cfl_err_set(err, "cannot write '%s': %s", path, strerror(errno));
		unlink(tmp.data);
		cfl_buf_release(&tmp);
		return -1;
	}
	cfl_buf_release(&tmp);
	return 0;
}

size_t cfl_json_number_len(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return 0;
	if (*p == '.') {
		if (!(p[1] >= '0' && p[1] <= '9'))
			return 0;
		p++;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return (size_t)(p - s);
}
