/*
 * The unit-test runner: forks each case, kills it after its time limit, and
 * counts a non-zero exit, a signal or a timeout as one failure, and the exit
 * code SKIP_EXIT (SKIP) as a skip.  Each case gets a fresh temporary folder
 * (cfl_test_dir), removed after it.  Usage: test_X [SUBSTRING] runs the
 * cases whose names contain SUBSTRING.
 */
#include "runner.h"

#include "cfl/core.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

/* The exit code of a skipped case (automake's, for the same meaning). */
#define SKIP_EXIT 77

static char case_dir[4096];

const char *cfl_test_dir(void)
{
	return case_dir;
}

const char *cfl_test_path(const char *name)
{
	static char path[sizeof(case_dir) + 256];

	snprintf(path, sizeof(path), "%s/%s", case_dir, name);
	return path;
}

const char *cfl_test_sha_hex(const char *text, const double *v, size_t n)
{
	static char hex[65];
	struct cfl_sha256 h;
	struct cfl_err err = { "" };
	unsigned char digest[32];

	CHECK_MSG(cfl_sha256_init(&h, &err) == 0, "%s", err.msg);
	cfl_sha256_update(&h, text, strlen(text));
	cfl_sha256_update(&h, v, n * sizeof(double));
	cfl_sha256_final(&h, digest);
	cfl_sha256_hex(digest, hex);
	return hex;
}

void cfl_test_split_csv(const char *name)
{
	char src[128], line[8192];
	FILE *in, *tr, *te;
	long i = 0;

	snprintf(src, sizeof(src), "datasets/%s.csv", name);
	in = fopen(src, "r");
	CHECK(in != NULL);
	tr = fopen(cfl_test_path("train.csv"), "w");
	CHECK(tr != NULL);
	te = fopen(cfl_test_path("test.csv"), "w");
	CHECK(te != NULL);
	while (fgets(line, sizeof(line), in)) {
		if (i == 0) {
			fputs(line, tr);
			fputs(line, te);
		} else {
			fputs(line, i % 5 == 0 ? te : tr);
		}
		i++;
	}
	fclose(in);
	CHECK(fclose(tr) == 0 && fclose(te) == 0);
}

void cfl_test_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "    skipped: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(SKIP_EXIT);
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void cfl_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "    %s:%d: check failed: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

/* Runs case t: 0 passed, 1 skipped, -1 failed. */
static int run_case(const struct cfl_test *t)
{
	unsigned limit = t->timeout ? t->timeout : 60;
	const char *tmp = getenv("TMPDIR");
	int status;
	pid_t pid;

	snprintf(case_dir, sizeof(case_dir), "%s/cfl-unit-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(case_dir)) {
		fprintf(stderr, "    %s: cannot create a folder in '%s': %s\n",
			t->name, tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		nftw(case_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
		return -1;
	}
	if (pid == 0) {
		alarm(limit);	/* SIGALRM kills a hung case */
		t->fn();
		fflush(stdout);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		;
	nftw(case_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_EXIT)
		return 1;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		fprintf(stderr, "    %s: %s\n", t->name,
			sig == SIGALRM ? "timed out" : strsignal(sig));
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0, skipped = 0;

	for (const struct cfl_test *t = cfl_tests; t->name; t++) {
		int r;

		if (filter && !strstr(t->name, filter))
			continue;
		r = run_case(t);
		if (r == 0) {
			passed++;
			printf("  ok   %s\n", t->name);
		} else if (r == 1) {
			skipped++;
			printf("  skip %s\n", t->name);
		} else {
			failed++;
			printf("  FAIL %s\n", t->name);
		}
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
