/*
 * The options that say how a results table meets its reader, shared by the
 * commands that print one (repeat, tune, report): --width N and --sort
 * score, and the choice the terminal makes when they are not given.  A
 * table on a terminal fits its width (the compact form when the full one is
 * wider) and marks its best cells in bold green unless NO_COLOR is set; a
 * table into a pipe or a file stays the full, plain one.
 */
#ifndef CFL_CLI_TABLE_OPTS_H
#define CFL_CLI_TABLE_OPTS_H

#include "cfl/report.h"

enum {
	CLI_OPT_WIDTH = 1090,
	CLI_OPT_SORT,
};

#define CLI_TABLE_LONGOPTS                                                   \
	{ "width", required_argument, 0, CLI_OPT_WIDTH },                   \
	{ "sort", required_argument, 0, CLI_OPT_SORT }

#define CLI_TABLE_HELP                                                       \
	"  --width N                fit the table in N columns: the compact form\n" \
	"                           when the full one is wider [the terminal's;\n" \
	"                           no limit into a pipe]\n"                     \
	"  --sort score             rows best first by the first metric's score\n" \
	"                           [the order of the run]\n"

struct cli_table_opts {
	long width;		/* --width N; 0 when not given */
	int sort_score;		/* --sort score */
};

/* Handles option c if it is one of CLI_TABLE_LONGOPTS: 1 when handled, 0
 * when c is not one, -1 (after printing a usage error for cmd) when its
 * value is bad. */
int cli_table_option(const char *cmd, int c, const char *arg,
		     struct cli_table_opts *o);

/* The style of a table printed to stdout with these options: no width
 * limit when full_asked (the user asked for the full table by name), else
 * --width, else the terminal's when stdout is one (cfl_is_terminal);
 * colour when stdout is a terminal, NO_COLOR is unset or empty and TERM is
 * not "dumb". */
void cli_table_style(const struct cli_table_opts *o, int full_asked,
		     struct cfl_table_style *style /* OUT */);

#endif
