/*
 * --width, --sort and the terminal's say in how a results table is shown
 * (see table_opts.h).  The rendering itself is src/report's.
 */
#include "table_opts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_table_option(const char *cmd, int c, const char *arg,
		     struct cli_table_opts *o)
{
	switch (c) {
	case CLI_OPT_WIDTH:
		if (cli_parse_long(arg, 20, 100000, &o->width))
			return cli_usage_error(cmd, "--width must be an integer in [20, 100000], got '%s'", arg), -1;
		return 1;
	case CLI_OPT_SORT:
		if (strcmp(arg, "score"))
			return cli_usage_error(cmd, "--sort knows 'score' only, got '%s'", arg), -1;
		o->sort_score = 1;
		return 1;
	}
	return 0;
}

void cli_table_style(const struct cli_table_opts *o, int full_asked,
		     struct cfl_table_style *style)
{
	const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
	int tty = cfl_is_terminal(STDOUT_FILENO);

	memset(style, 0, sizeof(*style));
	style->sort_score = o->sort_score;
	if (full_asked)
		style->width = 0;
	else if (o->width > 0)
		style->width = (size_t)o->width;
	else if (tty)
		style->width = cfl_term_width(STDOUT_FILENO);
	/* https://no-color.org: set and not empty means no colour */
	style->color = tty && !(no_color && *no_color) &&
		       !(term && !strcmp(term, "dumb"));
}
