/*
 * Regular expressions (PCRE2): the params language's patterns (src/hpo) and
 * the --drop / --only column filters (src/data) match through this one small
 * API, so this file is the only one that includes pcre2.h.  A compiled
 * regex carries its own match data: one regex is used by one thread at a
 * time, and the groups read after a match are that match's.  Patterns may
 * come from a peer (the --drop / --only of a WELCOME), so a match is
 * bounded: a pattern that backtracks without end fails with an error
 * instead of taking the process's time and memory.
 */
#include "cfl/core.h"

#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* PCRE2's defaults are 10 million backtracking steps and 20 GB of heap:
 * ample for a column name, which no honest pattern needs a millionth of */
#define MATCH_LIMIT 1000000u
#define HEAP_LIMIT_KIB 8192u
#define PATTERN_MAX 4096u

struct cfl_regex {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	int matched;		/* the last cfl_regex_match found a match */
};

struct cfl_regex *cfl_regex_new(const char *pattern, unsigned flags,
				struct cfl_err *err)
{
	struct cfl_regex *re = cfl_calloc(1, sizeof(*re), err);
	uint32_t options = 0;
	int code;
	PCRE2_SIZE off;
	pcre2_compile_context *cc;

	if (!re)
		return NULL;
	if (strlen(pattern) > PATTERN_MAX) {
		cfl_err_set(err, "regular expression of %zu bytes (at most %u)",
			    strlen(pattern), PATTERN_MAX);
		free(re);
		return NULL;
	}
	cc = pcre2_compile_context_create(NULL);
	re->mc = pcre2_match_context_create(NULL);
	if (!cc || !re->mc) {
		pcre2_compile_context_free(cc);
		cfl_err_set(err, "out of memory");
		cfl_regex_free(re);
		return NULL;
	}
	pcre2_set_match_limit(re->mc, MATCH_LIMIT);
	pcre2_set_heap_limit(re->mc, HEAP_LIMIT_KIB);
	if (flags & CFL_REGEX_UTF)
		options |= PCRE2_UTF;
	if (flags & CFL_REGEX_DOTALL)
		options |= PCRE2_DOTALL;
	re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				 options, &code, &off, cc);
	pcre2_compile_context_free(cc);
	if (!re->code) {
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(code, msg, sizeof(msg));
		cfl_err_set(err, "bad regular expression at offset %zu: %s",
			    (size_t)off, (char *)msg);
		cfl_regex_free(re);
		return NULL;
	}
	re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
	if (!re->md) {
		cfl_err_set(err, "out of memory");
		cfl_regex_free(re);
		return NULL;
	}
	return re;
}

void cfl_regex_free(struct cfl_regex *re)
{
	if (!re)
		return;
	pcre2_match_data_free(re->md);
	pcre2_match_context_free(re->mc);
	pcre2_code_free(re->code);
	free(re);
}

int cfl_regex_match(struct cfl_regex *re, const char *s, size_t n,
		    struct cfl_err *err)
{
	int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, re->md, re->mc);

	re->matched = rc >= 0;
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
	    rc == PCRE2_ERROR_DEPTHLIMIT)
		return cfl_err_set(err, "the pattern backtracks too much (PCRE2's "
				   "match limit)");
	return cfl_err_set(err, "pcre2 error %d", rc);
}

int cfl_regex_group(const struct cfl_regex *re, unsigned g, size_t *start,
		    size_t *len)
{
	PCRE2_SIZE *ov;

	*start = *len = 0;
	if (!re->matched || g >= pcre2_get_ovector_count(re->md))
		return 0;
	ov = pcre2_get_ovector_pointer(re->md);
	if (ov[2 * g] == PCRE2_UNSET)
		return 0;
	*start = ov[2 * g];
	*len = ov[2 * g + 1] - ov[2 * g];
	return 1;
}
