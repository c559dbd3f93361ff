/*
 * `cfl runs`: the runs stored in a database, one line each: name, kind,
 * date, dataset, status, trials done / failed, and the best row of its
 * table (laid out by src/report: cfl_report_runs).  Opens the database
 * read-only, so it is safe while a run writes.
 */
#include "cli.h"

#include <stdio.h>

#include "cfl/report.h"
#include "cfl/store.h"
#include "table_opts.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfl runs [--db FILE] [--width N]\n\n"
		"Lists the runs stored in a database, oldest first: name, kind, start\n"
		"date (UTC), dataset, status, trials done/total and failed, and the\n"
		"best row of the test table by the score of the first metric (a tune\n"
		"run: the candidate it chose on validation, with its refit's test mean).\n"
		"The lines fit the width: the kind, the date and the dataset are left\n"
		"out, in that order, when they would not.\n\n"
		"Options:\n"
		"  --db FILE    the database [" CFL_STORE_DEFAULT_PATH "]\n"
		"  --width N    fit the lines in N columns [the terminal's; 80 into a pipe]\n"
		"  -h, --help   this help\n\n"
		"Examples:\n"
		"  cfl runs\n"
		"  cfl runs --db reports/iris.db\n"
		"  cfl runs --width 160\n");
}

int cmd_runs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		CLI_TABLE_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *db = CFL_STORE_DEFAULT_PATH;
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_buf out;
	size_t n;
	struct cli_table_opts topts = { 0 };
	struct cfl_table_style style;
	int c, rc = CLI_OK;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int r = cli_table_option("runs", c, optarg, &topts);

		if (r < 0)
			return CLI_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case 'd':
			db = optarg;
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			return cli_bad_option("runs", argc, argv, "h", opts);
		}
	}
	if (optind < argc)
		return cli_usage_error("runs", "unexpected argument '%s'",
				       argv[optind]);
	cli_table_style(&topts, 0, &style);
	st = cfl_store_open(db, CFL_STORE_READONLY, &err);
	cfl_buf_init(&out);
	/* a pipe gets 80 columns too: what a terminal would show */
	if (!st || cfl_report_runs(st, style.width ? style.width : 80, &out, &n, &err))
		rc = cli_fail(&err);
	else if (!n)
		printf("no runs in '%s'\n", db);
	else
		fputs(out.data, stdout);
	cfl_buf_release(&out);
	cfl_store_close(st);
	return rc;
}
