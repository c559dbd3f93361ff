/*
 * cfl bundle show: what a bundle written by `cfl repeat --save` or `cfl
 * tune --save` holds: the run it comes from, its rows (the table's rows a
 * user can apply with `cfl predict --row`), each row's members and weights
 * and the scores the run recorded.  The listing is shared with
 * `cfl predict --list`.  Reading and checking the file is src/store's,
 * the listing's text src/study's (cfl_bundle_format).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/bundle.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cfl bundle show FILE [--row ROW]\n\n"
		   "Lists what a bundle (written by 'cfl repeat --save', 'cfl tune --save'\n"
		   "or 'cfl auto --save') holds: the run and dataset it comes from, then\n"
		   "one line per row that 'cfl predict FILE DATA --row ROW' applies, with how it\n"
		   "combines its members (models, or the fold models of one repeat,\n"
		   "averaged), their weights, and the scores the run recorded (mean over\n"
		   "the row's trials, or the ensemble's value).  The row marked '*' is the\n"
		   "one cfl predict applies by default: the best on the first metric on\n"
		   "the validation part (an auto run's: its leaderboard's rank 1; a run\n"
		   "without a validation part: the mean, else the first row).\n\n"
		   "Options:\n"
		   "  --row ROW   only this row [all]\n"
		   "  -h, --help  this help\n\n"
		   "Examples:\n"
		   "  cfl bundle show iris.cfl\n"
		   "  cfl bundle show iris.cfl --row stacking\n"
		   "  cfl predict iris.cfl datasets/iris.csv --list\n");
}

void cli_bundle_list(FILE *f, const struct cfl_bundle *b, const char *only)
{
	struct cfl_buf out;

	cfl_buf_init(&out);
	if (cfl_bundle_format(b, only, &out) == 0)
		fputs(out.data, f);
	else
		fprintf(stderr, "cfl: out of memory\n");
	cfl_buf_release(&out);
}

int cli_bundle_unknown_row(const char *cmd, const struct cfl_bundle *b,
			   const char *path, const char *row)
{
	const char **names = calloc(b->n_rows + 1, sizeof(*names));
	const char *near;
	int rc;

	for (size_t i = 0; names && i < b->n_rows; i++)
		names[i] = b->rows[i].name;
	near = names ? cli_closest(row, names, b->n_rows) : NULL;
	if (near)
		rc = cli_usage_error(cmd, "bundle '%s' has no row '%s'; did you mean '%s'? ('cfl bundle show %s' lists them)",
				     path, row, near, path);
	else
		rc = cli_usage_error(cmd, "bundle '%s' has no row '%s' ('cfl bundle show %s' lists them)",
				     path, row, path);
	free(names);
	return rc;
}

int cmd_bundle(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, 0, 'h' },
		{ "row", required_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	const char *only = NULL;
	struct cfl_bundle b;
	struct cfl_err err = { { 0 } };
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CLI_OK;
		}
		return cli_bad_option("bundle", argc, argv, "+h", longopts);
	}
	if (optind >= argc)
		return cli_usage_error("bundle", "expected 'show FILE'");
	if (strcmp(argv[optind], "show")) {
		static const char *const subs[] = { "show" };
		const char *near = cli_closest(argv[optind], subs, 1);

		return cli_usage_error("bundle", "unknown subcommand '%s'%s%s%s",
				       argv[optind], near ? "; did you mean '" : "",
				       near ? near : "", near ? "'?" : "");
	}
	/* the options of "show": its own argv, getopt started afresh */
	argc -= optind;
	argv += optind;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CLI_OK;
		}
		if (c == 'r') {
			only = optarg;
			continue;
		}
		return cli_bad_option("bundle", argc, argv, ":h", longopts);
	}
	if (argc - optind != 1)
		return cli_usage_error("bundle", argc - optind < 1 ? "expected FILE"
				       : "expected FILE only, got '%s' too", argv[argc - 1]);
	if (cfl_bundle_read(argv[optind], &b, &err))
		return cli_fail(&err);
	if (only && !cfl_bundle_find(&b, only)) {
		int rc = cli_bundle_unknown_row("bundle", &b, argv[optind], only);

		cfl_bundle_release(&b);
		return rc;
	}
	cli_bundle_list(stdout, &b, only);
	cfl_bundle_release(&b);
	return fflush(stdout) || ferror(stdout) ? cli_failf("cannot write to stdout")
						 : CLI_OK;
}
