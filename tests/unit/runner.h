/*
 * A small unit-test runner.  Each case runs in a forked child under a time
 * limit, so a crash or a hang is one failure and the suite goes on.  A test
 * file defines its cases and lists them:
 *
 *     static void t_parse(void) { CHECK(1 + 1 == 2); }
 *     const struct cfl_test cfl_tests[] = { TEST(t_parse), { 0 } };
 *
 * A case that cannot run here calls SKIP("why") and is counted as skipped,
 * not passed.  The suite ends with "N passed, N failed, N skipped" and exits
 * 1 when any failed.
 */
#ifndef CFL_TEST_RUNNER_H
#define CFL_TEST_RUNNER_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfl_test {
	const char *name;
	void (*fn)(void);
	unsigned timeout;	/* seconds; 0: the default (60) */
};

#define TEST(fn) { #fn, fn, 0 }
#define TEST_T(fn, secs) { #fn, fn, secs }

extern const struct cfl_test cfl_tests[];

/* Marks the current case failed and leaves the child at once. */
void cfl_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/* Marks the current case skipped (it cannot run here: fmt says why) and
 * leaves the child at once. */
void cfl_test_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#define SKIP(...) cfl_test_skip(__VA_ARGS__)

/* A folder of the current case's own, created empty before the case runs
 * and removed with its contents after it: for files a case writes. */
const char *cfl_test_dir(void);
/* cfl_test_dir()/name, in a buffer the next call overwrites. */
const char *cfl_test_path(const char *name);
/* Splits datasets/NAME.csv (read from the repository's root) into
 * cfl_test_path("train.csv") and ("test.csv"), both with its header: every
 * fifth data row to test, the rest to train. */
void cfl_test_split_csv(const char *name);
/* The SHA-256, in hex, of text's bytes then n doubles' (a model's saved
 * state and its predictions: the "same bits as before" checks), in a
 * buffer the next call overwrites. */
const char *cfl_test_sha_hex(const char *text, const double *v, size_t n);

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond))                                                 \
			cfl_test_fail(__FILE__, __LINE__, "%s", #cond);      \
	} while (0)

#define CHECK_MSG(cond, ...)                                                 \
	do {                                                                 \
		if (!(cond))                                                 \
			cfl_test_fail(__FILE__, __LINE__, __VA_ARGS__);      \
	} while (0)

#define CHECK_INT(a, b)                                                      \
	do {                                                                 \
		long long a_ = (long long)(a), b_ = (long long)(b);          \
		if (a_ != b_)                                                \
			cfl_test_fail(__FILE__, __LINE__,                    \
				      "%s == %s: %lld != %lld", #a, #b, a_,  \
				      b_);                                   \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                \
	do {                                                                 \
		double a_ = (double)(a), b_ = (double)(b);                   \
		if (!(fabs(a_ - b_) <= (tol)))                               \
			cfl_test_fail(__FILE__, __LINE__,                    \
				      "%s ~ %s: %.17g vs %.17g (tol %g)",    \
				      #a, #b, a_, b_, (double)(tol));        \
	} while (0)

#define CHECK_STR(a, b)                                                      \
	do {                                                                 \
		const char *a_ = (a), *b_ = (b);                             \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                       \
			cfl_test_fail(__FILE__, __LINE__,                    \
				      "%s == %s: '%s' != '%s'", #a, #b,      \
				      a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} while (0)

/* Checks that haystack contains needle. */
#define CHECK_CONTAINS(hay, needle)                                          \
	do {                                                                 \
		const char *h_ = (hay), *n_ = (needle);                      \
		if (!h_ || !strstr(h_, n_))                                  \
			cfl_test_fail(__FILE__, __LINE__,                    \
				      "'%s' does not contain '%s'",          \
				      h_ ? h_ : "(null)", n_);               \
	} while (0)

#endif
