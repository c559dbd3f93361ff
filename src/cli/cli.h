/*
 * Shared helpers of the cfl commands.  src/cli is the only code that prints
 * to the user or exits: 0 success, 1 runtime failure, 2 usage error,
 * 130 interrupted.  Results go to stdout; progress and logs to stderr.
 */
#ifndef CFL_CLI_H
#define CFL_CLI_H

#include <getopt.h>
#include <stdio.h>
#include <stdint.h>

#include "cfl/core.h"
#include "cfl/data.h"
#include "cfl/metrics.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2
#define CLI_INTERRUPTED 130

/* One command: cmd_<name>(argc, argv) with argv[0] the command name. */
struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

int cmd_data(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_repeat(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_auto(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_bundle(int argc, char **argv);

/* Prints "cfl CMD: msg" and "Try 'cfl CMD --help'." to stderr; returns 2. */
/* s as one shell word, for the hints the program prints ("see it again
 * with: cfl report NAME"): s itself when it has only characters no shell
 * treats specially, else in single quotes ('\'' for a quote).  The text
 * lives until eight more calls (a ring, so one printf may quote several
 * words); never NULL. */
const char *cli_sh(const char *s);

int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints "cfl: msg" (the struct cfl_err text) to stderr; returns 1. */
int cli_fail(const struct cfl_err *err);
int cli_failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lists a bundle's run, rows (only: that row alone; NULL all), members,
 * scores and models (cmd_bundle.c; cfl bundle show and cfl predict
 * --list). */
struct cfl_bundle;
void cli_bundle_list(FILE *f, const struct cfl_bundle *b, const char *only);
/* The usage error of cmd for a row that bundle b (file path) lacks, with
 * the closest row name; returns 2. */
int cli_bundle_unknown_row(const char *cmd, const struct cfl_bundle *b,
			   const char *path, const char *row);

/* ---- unknown words (suggest.c) ---- */

/* The name among names[0..n) closest to word, case compared, a name that
 * starts with the word close too (cfl_closest_as), or NULL. */
const char *cli_closest(const char *word, const char *const *names, size_t n);
/* After getopt_long returned '?' or ':' (with opterr = 0): prints one usage
 * error for cmd about argv's bad option (unknown, with the closest known
 * one; ambiguous; a value missing or not taken) and returns 2.  argc, argv,
 * shortopts and longopts are what getopt_long was given. */
int cli_bad_option(const char *cmd, int argc, char **argv,
		   const char *shortopts, const struct option *longopts);

/* Strict number parsing for option values; -1 when malformed or out of
 * range (the caller reports with cli_usage_error). */
int cli_parse_long(const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *s, double lo, double hi, double *out);
int cli_parse_u64(const char *s, uint64_t *out);
/* The metrics of --metrics (metrics: its value, or NULL for the task's
 * defaults) into ids (CFL_M_COUNT of them) for a task of n_classes (-1:
 * names only, before the data is read): their count, or -1 after a usage
 * error for cmd. */
long cli_metric_ids(const char *cmd, const char *metrics, int n_classes,
		    enum cfl_metric_id *ids /* OUT */);
/* A size in bytes: digits with an optional K, M, G or T (powers of 1024);
 * -1 when malformed, zero or past 2^63. */
int cli_parse_size(const char *s, uint64_t *out);

/* ---- the data options every command shares ----
 * --target NAME, --task clf|reg, --drop REGEX, --only REGEX, --test FILE,
 * --valid FILE, --test-frac F, --valid-frac F, --seed S. */
enum {
	CLI_OPT_TARGET = 1000,
	CLI_OPT_TASK,
	CLI_OPT_DROP,
	CLI_OPT_ONLY,
	CLI_OPT_TEST,
	CLI_OPT_VALID,
	CLI_OPT_TEST_FRAC,
	CLI_OPT_VALID_FRAC,
	CLI_OPT_SEED,
	CLI_OPT_CATEGORICAL,
	CLI_OPT_FIRST_FREE = 1100,	/* commands number their own options from here */
};

#define CLI_DATA_LONGOPTS                                                    \
	{ "target", required_argument, 0, CLI_OPT_TARGET },                 \
	{ "task", required_argument, 0, CLI_OPT_TASK },                     \
	{ "drop", required_argument, 0, CLI_OPT_DROP },                     \
	{ "only", required_argument, 0, CLI_OPT_ONLY },                     \
	{ "categorical", required_argument, 0, CLI_OPT_CATEGORICAL },       \
	{ "test", required_argument, 0, CLI_OPT_TEST },                     \
	{ "valid", required_argument, 0, CLI_OPT_VALID },                   \
	{ "test-frac", required_argument, 0, CLI_OPT_TEST_FRAC },           \
	{ "valid-frac", required_argument, 0, CLI_OPT_VALID_FRAC },         \
	{ "seed", required_argument, 0, CLI_OPT_SEED }

/* The --help lines of the data options. */
extern const char cli_data_help[];

/* Handles option c (from getopt_long) if it is a data option: returns 1 when
 * handled, 0 when c is not a data option, -1 (after printing a usage error
 * for cmd) when its value is bad. */
int cli_data_option(const char *cmd, int c, const char *arg,
		    struct cfl_data_opts *o);
/* Warns on stderr that path was not UTF-8 and was read as Windows-1252
 * (line: its first line that was not UTF-8). */
void cli_warn_recoded(const char *path, size_t line);
/* Warns on stderr about what loading d dropped (rows without a target) and
 * about files read as Windows-1252. */
void cli_data_warn(const struct cfl_data *d, const struct cfl_data_opts *o);
/* Prints on stderr the rows cmd trains, validates and tests on, with why
 * a validation part is held out or not (valid_why: from
 * cfl_study_plan_settle_valid). */
void cli_data_facts(const char *cmd, const struct cfl_data *d,
		    const struct cfl_data_opts *o, const char *valid_why);

/* Prints on stderr what cmd learns (cfl_data_describe_target): the first
 * line of every command that trains. */
void cli_data_target(const char *cmd, const struct cfl_data *d);
/* Prints text and a newline on stderr, wrapped between words at the
 * terminal's width when stderr is a terminal (cfl_buf_wrap_lines). */
void cli_wrap_stderr(const char *text);

/* True when stderr is a terminal (progress lines are redrawn in place). */
int cli_stderr_is_tty(void);

struct sigaction;
/* Installs handler for SIGINT and SIGTERM with sa_flags flags (SA_RESTART
 * or 0); the previous actions go to *old_int / *old_term unless NULL. */
void cli_catch_stop(void (*handler)(int), int flags,
		    struct sigaction *old_int /* OUT */,
		    struct sigaction *old_term /* OUT */);

#endif
