/*
 * Shared helpers of the commands: error and usage printing, strict number
 * parsing, and the data options every command takes.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Errors go through cli_wrap_stderr: on a terminal they fit its width. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[4096];
	int n = snprintf(msg, sizeof(msg), "cfl %s: ", cmd);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	cli_wrap_stderr(msg);
	fprintf(stderr, "Try 'cfl %s --help'.\n", cmd);
	return CLI_USAGE;
}

int cli_fail(const struct cfl_err *err)
{
	char msg[sizeof(err->msg) + 8];

	snprintf(msg, sizeof(msg), "cfl: %s", err->msg[0] ? err->msg : "failed");
	cli_wrap_stderr(msg);
	return CLI_FAIL;
}

int cli_failf(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg + 5, sizeof(msg) - 5, fmt, ap);
	va_end(ap);
	memcpy(msg, "cfl: ", 5);
	cli_wrap_stderr(msg);
	return CLI_FAIL;
}

int cli_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end || errno)
		return -1;
	*out = v;
	return 0;
}

const char cli_data_help[] =
	"Data options:\n"
	"  --target NAME      the target column [the last column]\n"
	"  --task clf|reg     force classification or regression [inferred]\n"
	"  --drop REGEX       drop the columns whose names match (PCRE2)\n"
	"  --only REGEX       use only the columns whose names match (PCRE2)\n"
	"  --categorical REGEX  one-hot encode the columns whose names match\n"
	"                     (PCRE2) [text columns; numbers stay numeric]\n"
	"  --test FILE        a separate test file with the same columns [a split]\n"
	"  --valid FILE       a separate validation file [a split of train]\n"
	"  --test-frac F      share of rows held out for test [0.2]\n"
	"  --valid-frac F     share of train held out for validation [0.1 when\n"
	"                     the command uses it, else 0]\n"
	"  --seed S           the run seed: splits, initialisation, shuffles [0]\n";

long cli_metric_ids(const char *cmd, const char *metrics, int n_classes,
		    enum cfl_metric_id *ids)
{
	struct cfl_err err = { { 0 } };
	long n = metrics ? cfl_metric_parse_list(metrics, n_classes, ids,
						 CFL_M_COUNT, &err)
		 : (long)cfl_metric_defaults(n_classes, ids, CFL_M_COUNT);

	return n < 0 ? cli_usage_error(cmd, "--metrics: %s", err.msg), -1 : n;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	const char *units = "KMGT";
	const char *u;
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end) {
		u = strchr(units, *end);
		if (!u || end[1])
			return -1;
		shift = 10 * (int)(u - units + 1);
	}
	if (!v || v > (1ull << 63) >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_data_option(const char *cmd, int c, const char *arg,
		    struct cfl_data_opts *o)
{
	switch (c) {
	case CLI_OPT_TARGET:
		o->schema.target = arg;
		return 1;
	case CLI_OPT_TASK:
		if (strcmp(arg, "clf") == 0 || strcmp(arg, "classification") == 0)
			o->schema.task = CFL_TASK_CLF;
		else if (strcmp(arg, "reg") == 0 || strcmp(arg, "regression") == 0)
			o->schema.task = CFL_TASK_REG;
		else
			return cli_usage_error(cmd, "--task must be clf or reg, got '%s'", arg), -1;
		return 1;
	case CLI_OPT_DROP:
		o->schema.drop_re = arg;
		return 1;
	case CLI_OPT_ONLY:
		o->schema.only_re = arg;
		return 1;
	case CLI_OPT_CATEGORICAL:
		o->schema.categorical_re = arg;
		return 1;
	case CLI_OPT_TEST:
		o->test_path = arg;
		return 1;
	case CLI_OPT_VALID:
		o->valid_path = arg;
		return 1;
	case CLI_OPT_TEST_FRAC:
		if (cli_parse_double(arg, 0.0, 0.9, &o->test_frac) || o->test_frac <= 0)
			return cli_usage_error(cmd, "--test-frac must be a number in (0, 0.9], got '%s'", arg), -1;
		return 1;
	case CLI_OPT_VALID_FRAC:
		if (cli_parse_double(arg, 0.0, 0.9, &o->valid_frac))
			return cli_usage_error(cmd, "--valid-frac must be a number in [0, 0.9], got '%s'", arg), -1;
		o->valid_frac_given = 1;
		return 1;
	case CLI_OPT_SEED:
		if (cli_parse_u64(arg, &o->seed))
			return cli_usage_error(cmd, "--seed must be a non-negative integer, got '%s'", arg), -1;
		return 1;
	}
	return 0;
}

void cli_data_warn(const struct cfl_data *d, const struct cfl_data_opts *o)
{
	const char *paths[3] = { o->path, o->test_path, o->valid_path };

	for (int i = 0; i < 3; i++)
		if (d->n_no_target[i])
			fprintf(stderr, "cfl: warning: '%s': %zu row%s without a target value dropped\n",
				paths[i] ? paths[i] : "?", d->n_no_target[i],
				d->n_no_target[i] == 1 ? "" : "s");
	for (int i = 0; i < 3; i++)
		if (d->recoded_line[i])
			cli_warn_recoded(paths[i] ? paths[i] : "?", d->recoded_line[i]);
}

void cli_warn_recoded(const char *path, size_t line)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "cfl: warning: '%s' is not UTF-8 (line %zu first): read as Windows-1252 (Latin-1); if that is wrong, convert it: iconv -f ENCODING -t UTF-8",
		 path, line);
	cli_wrap_stderr(msg);
}

void cli_wrap_stderr(const char *text)
{
	/* on a terminal, wrapped at its width between words (a wrapped line
	 * would break the progress line's redraws) */
	size_t width = cli_stderr_is_tty() ? cfl_term_width(STDERR_FILENO) : 0;
	struct cfl_buf b;

	cfl_buf_init(&b);
	if (cfl_buf_wrap_lines(&b, text, width))
		fprintf(stderr, "%s\n", text);
	else
		fputs(b.data, stderr);
	cfl_buf_release(&b);
}

void cli_data_facts(const char *cmd, const struct cfl_data *d,
		    const struct cfl_data_opts *o, const char *valid_why)
{
	char line[1024];

	snprintf(line, sizeof(line), "cfl %s: '%s': train %zu rows, validation %zu (%s), test %zu%s",
		 cmd, o->path, d->train.n, d->valid.n, valid_why, d->test.n,
		 o->test_path ? " (--test)" : "");
	cli_wrap_stderr(line);
}

void cli_data_target(const char *cmd, const struct cfl_data *d)
{
	char what[512], line[600];

	snprintf(line, sizeof(line), "cfl %s: %s", cmd,
		 cfl_data_describe_target(d, what, sizeof(what)));
	cli_wrap_stderr(line);
}

const char *cli_sh(const char *s)
{
	/* a ring, so that one printf can quote several words */
	static struct cfl_buf ring[8];
	static unsigned next;
	struct cfl_buf *b = &ring[next++ % 8];

	b->len = 0;
	if (cfl_buf_shell_word(b, s ? s : ""))
		return "''";	/* quoting nothing is safer than pasting s */
	return b->data;
}

int cli_stderr_is_tty(void)
{
	return isatty(STDERR_FILENO);
}

void cli_catch_stop(void (*handler)(int), int flags, struct sigaction *old_int,
		    struct sigaction *old_term)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}
