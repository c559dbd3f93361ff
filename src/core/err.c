/*
 * Errors and allocation.  Library code reports failure through a
 * caller-owned struct cfl_err; nothing here prints or exits.
 */
#include "cfl/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

int cfl_err_set(struct cfl_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int cfl_err_prefix(struct cfl_err *err, const char *fmt, ...)
{
	char prefix[512], old[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%.500s: %.500s", prefix, old);
	return -1;
}

void *cfl_malloc(size_t size, struct cfl_err *err)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		cfl_err_set(err, "out of memory (asked for %zu bytes)", size);
	return p;
}

void *cfl_calloc(size_t n, size_t size, struct cfl_err *err)
{
	void *p;

	if (size && n > (size_t)-1 / size) {
		cfl_err_set(err, "out of memory (%zu x %zu bytes)", n, size);
		return NULL;
	}
	p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		cfl_err_set(err, "out of memory (asked for %zu x %zu bytes)",
			    n, size);
	return p;
}

void *cfl_realloc(void *p, size_t size, struct cfl_err *err)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		cfl_err_set(err, "out of memory (asked for %zu bytes)", size);
	return q;
}

char *cfl_strdup(const char *s, struct cfl_err *err)
{
	size_t n;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	d = cfl_malloc(n, err);
	if (d)
		memcpy(d, s, n);
	return d;
}

void cfl_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t b = ((uintptr_t)p + n) & ~(page - 1);

	if (p && n >= (size_t)4 << 20 && b > a)
		madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}
