/*
 * An ensemble's stored "members" text, parsed for the reports.  The text
 * is written by src/study/ensembles.c:
 *
 *     trials 1+2+3,4+5+6; weights 0.5,0.5
 *     trials 1,2; meta linear l2=1 on oof; coefs 0.8,-0.1
 *
 * "trials": one member per comma, the trials of its folds joined by "+";
 * then "; "-separated sections: "weights" (one per member), "coefs" (per
 * member, stacking's meta-learner coefficients, see describe_coefs) and
 * free descriptions ("meta linear ...", "majority vote").  Databases
 * written before "coefs" existed simply lack that section.  The text comes
 * from a file, so nothing here trusts it: a text that does not parse is
 * reported as such, never half read.  Pure: no store, no I/O.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void cfl_report_members_init(struct report_members *ms)
{
	memset(ms, 0, sizeof(*ms));
}

void cfl_report_members_release(struct report_members *ms)
{
	for (size_t j = 0; ms->m && j < ms->n; j++) {
		free(ms->m[j].trials);
		free(ms->m[j].coefs);
	}
	free(ms->m);
	free(ms->about);
	cfl_report_members_init(ms);
}

/* The number in [p, end) into *v: the whole span must be one number. */
static int parse_double(const char *p, const char *end, double *v)
{
	char tmp[64], *e;
	size_t n = (size_t)(end - p);

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	*v = strtod(tmp, &e);
	return *e ? -1 : 0;
}

/* A trial id in [p, end): decimal digits only, positive, fits int64. */
static int parse_id(const char *p, const char *end, int64_t *v)
{
	int64_t x = 0;

	if (p == end)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || x > (INT64_MAX - 9) / 10)
			return -1;
		x = 10 * x + (*p - '0');
	}
	*v = x;
	return x > 0 ? 0 : -1;
}

/* The end of the item starting at p in [p, end): the next sep or end. */
static const char *item_end(const char *p, const char *end, char sep)
{
	const char *q = memchr(p, sep, (size_t)(end - p));

	return q ? q : end;
}

static size_t count_items(const char *p, const char *end, char sep)
{
	size_t n = 1;

	for (; p < end; p++)
		n += *p == sep;
	return n;
}

/* "1+2+3,4+5+6" in [p, end): allocates ms->m.  1 when malformed. */
static int parse_trials(const char *p, const char *end,
			struct report_members *ms, struct cfl_err *err)
{
	size_t n = count_items(p, end, ',');

	if (!(ms->m = cfl_calloc(n, sizeof(*ms->m), err)))
		return -1;
	for (size_t j = 0; j < n; j++) {
		struct report_member *m = &ms->m[j];
		const char *e = item_end(p, end, ',');
		size_t k = count_items(p, e, '+');

		ms->n = j + 1;
		m->weight = NAN;
		if (!(m->trials = cfl_calloc(k, sizeof(int64_t), err)))
			return -1;
		for (size_t i = 0; i < k; i++) {
			const char *f = item_end(p, e, '+');

			if (parse_id(p, f, &m->trials[i]))
				return 1;
			p = f + 1;
		}
		m->n_trials = k;
		p = e + 1;
	}
	return 0;
}

/* "0.5,0.25,0.25": one weight per member.  1 when malformed. */
static int parse_weights(const char *p, const char *end,
			 struct report_members *ms)
{
	if (count_items(p, end, ',') != ms->n)
		return 1;
	for (size_t j = 0; j < ms->n; j++) {
		const char *e = item_end(p, end, ',');

		if (parse_double(p, e, &ms->m[j].weight))
			return 1;
		p = e + 1;
	}
	ms->has_weights = 1;
	return 0;
}

/* "a b/c d,..." per member: rows by "/", values by " ", every member the
 * same shape.  1 when malformed. */
static int parse_coefs(const char *p, const char *end,
		       struct report_members *ms, struct cfl_err *err)
{
	if (count_items(p, end, ',') != ms->n)
		return 1;
	for (size_t j = 0; j < ms->n; j++) {
		struct report_member *m = &ms->m[j];
		const char *e = item_end(p, end, ',');
		size_t rows = count_items(p, e, '/');
		size_t cols = count_items(p, item_end(p, e, '/'), ' ');

		/* each value takes a character and a separator: a shape
		 * larger than the text is malformed (and not allocated) */
		if (rows > (size_t)(e - p) + 1 || rows * cols > (size_t)(e - p) + 1)
			return 1;
		if (!(m->coefs = cfl_calloc(rows * cols, sizeof(double), err)))
			return -1;
		for (size_t r = 0; r < rows; r++) {
			const char *re = item_end(p, e, '/');

			if (count_items(p, re, ' ') != cols)
				return 1;
			for (size_t c = 0; c < cols; c++) {
				const char *ve = item_end(p, re, ' ');

				if (parse_double(p, ve, &m->coefs[r * cols + c]))
					return 1;
				p = ve + 1;
			}
			p = re + 1;
		}
		if (j && (rows != ms->m[0].n_rows || cols != ms->m[0].n_cols))
			return 1;
		m->n_rows = rows;
		m->n_cols = cols;
		p = e + 1;
	}
	ms->has_coefs = 1;
	return 0;
}

/* Appends [p, end) to ms->about, "; "-separated. */
static int add_about(const char *p, const char *end, struct report_members *ms,
		     struct cfl_err *err)
{
	size_t old = ms->about ? strlen(ms->about) : 0, n = (size_t)(end - p);
	char *s = cfl_realloc(ms->about, old + 2 + n + 1, err);

	if (!s)
		return -1;
	if (old) {
		memcpy(s + old, "; ", 2);
		old += 2;
	}
	memcpy(s + old, p, n);
	s[old + n] = '\0';
	ms->about = s;
	return 0;
}

static int starts(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

int cfl_report_members_parse(const char *text, struct report_members *ms,
			     struct cfl_err *err)
{
	const char *p = text, *end;
	int rc;

	cfl_report_members_init(ms);
	if (!text || !starts(p, p + strlen(p), "trials "))
		return 1;
	end = strstr(p, "; ");
	if (!end)
		end = p + strlen(p);
	if ((rc = parse_trials(p + 7, end, ms, err)))
		goto fail;
	while (*end) {
		const char *e;

		p = end + 2;
		e = strstr(p, "; ");
		end = e ? e : p + strlen(p);
		if (starts(p, end, "weights "))
			rc = ms->has_weights ? 1 : parse_weights(p + 8, end, ms);
		else if (starts(p, end, "coefs "))
			rc = ms->has_coefs ? 1 : parse_coefs(p + 6, end, ms, err);
		else if (p < end)
			rc = add_about(p, end, ms, err);
		if (rc)
			goto fail;
	}
	if (!ms->about && add_about(p, p, ms, err)) {
		rc = -1;
		goto fail;
	}
	return 0;
fail:
	cfl_report_members_release(ms);
	return rc;
}
