/*
 * cfl data: what cfl makes of a CSV file.  `describe` prints the inferred
 * schema (column types, missing and distinct counts, what was dropped and
 * why, the target, the task, the classes, the split sizes, the SHA-256);
 * `load` only loads and encodes, timing it (for benchmarks).  Everything is
 * computed and written out by src/data (cfl_data_describe); this file only
 * prints.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: cfl data describe FILE [options]\n"
		   "       cfl data load FILE [options]\n\n"
		   "describe: prints what cfl makes of a CSV file: each column's type\n"
		   "(numeric, categorical, dropped and why), missing and distinct counts, the\n"
		   "target, the task, the classes with their counts, the split sizes and the\n"
		   "file's SHA-256.\n"
		   "load: loads, types, splits and encodes the file and prints one line with\n"
		   "the shapes and the time it took (for benchmarks).\n\n"
		   "Options:\n"
		   "  -h, --help         this help\n"
		   "%s\n"
		   "Examples:\n"
		   "  cfl data describe datasets/iris.csv\n"
		   "  cfl data describe datasets/diabetes.csv --task clf\n"
		   "  cfl data describe data.csv --target price --drop '^id$|_raw$'\n"
		   "  cfl data describe data.csv --categorical '^(zip|grade)$'\n"
		   "  cfl data load build/bench/synth_clf_100k.csv\n",
		   cli_data_help);
}

int cmd_data(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, 0, 'h' },
		CLI_DATA_LONGOPTS,
		{ 0, 0, 0, 0 },
	};
	struct cfl_data_opts o;
	struct cfl_data d;
	struct cfl_err err = { { 0 } };
	const char *sub, *cmd;
	struct cfl_buf out;
	double t0, secs;
	int c, rc = CLI_OK;

	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	sub = argv[1];
	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(sub, "describe") == 0)
		cmd = "data describe";
	else if (strcmp(sub, "load") == 0)
		cmd = "data load";
	else
		return cli_usage_error("data", "unknown subcommand '%s' (describe or load)", sub);
	cfl_data_opts_init(&o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":h", longopts, NULL)) != -1) {
		int r;

		if (c == 'h') {
			usage(stdout);
			return CLI_OK;
		}
		if (c == '?' || c == ':')
			return cli_bad_option(cmd, argc - 1, argv + 1, ":h", longopts);
		r = cli_data_option(cmd, c, optarg, &o);
		if (r < 0)
			return CLI_USAGE;
		if (r == 0)
			return cli_usage_error(cmd, "unknown option");
	}
	if (optind + 1 != argc - 1)
		return cli_usage_error(cmd, optind + 1 > argc - 1 ? "missing FILE"
								  : "expected one FILE, got more");
	o.path = argv[optind + 1];
	t0 = cfl_now();
	if (cfl_data_load(&d, &o, &err))
		return cli_fail(&err);
	secs = cfl_now() - t0;
	cli_data_warn(&d, &o);
	cfl_buf_init(&out);
	if (strcmp(sub, "load") == 0)
		printf("rows %zu cols %zu features %zu train %zu valid %zu test %zu seconds %.4f\n",
		       d.csv.n_rows, d.csv.n_cols, d.enc.d, d.train.n, d.valid.n,
		       d.test.n, secs);
	else if (cfl_data_describe(&d, &o, &out) == 0)
		fputs(out.data, stdout);
	else
		rc = cli_failf("out of memory");
	cfl_buf_release(&out);
	cfl_data_release(&d);
	return rc;
}
