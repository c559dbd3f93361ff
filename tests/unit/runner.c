/*
 * The unit-test runner: forks each case, kills it after its time limit, and
 * counts a non-zero exit, a signal or a timeout as one failure.  Usage:
 * test_X [SUBSTRING] runs the cases whose names contain SUBSTRING.
 */
#include "runner.h"

#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

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

static int run_case(const struct cfl_test *t)
{
	unsigned limit = t->timeout ? t->timeout : 60;
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
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
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
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
	int passed = 0, failed = 0;

	for (const struct cfl_test *t = cfl_tests; t->name; t++) {
		if (filter && !strstr(t->name, filter))
			continue;
		if (run_case(t) == 0) {
			passed++;
			printf("  ok   %s\n", t->name);
		} else {
			failed++;
			printf("  FAIL %s\n", t->name);
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
