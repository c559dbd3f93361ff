/*
 * `cfl report [RUN]`: prints again, from the store, the table a run printed
 * (text, Markdown, CSV or JSON), or writes its HTML report into a folder.
 * Opens the database read-only, so it is safe while a run writes; the
 * rendering itself is src/report's (cfl_report_run, cfl_report_html), the
 * same code the run printed with.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cfl/report.h"
#include "cfl/store.h"
#include "table_opts.h"

#define DEFAULT_OUT "reports"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfl report [RUN] [--db FILE] [--format FMT] [--out DIR]\n"
		"                  [--width N] [--sort score]\n\n"
		"Prints the results table of a stored run again, exactly as the run\n"
		"printed it (a repeat run: models and ensembles on the test part; a tune\n"
		"run: candidates on the validation part; an auto run: its leaderboard,\n"
		"in every format), or writes its HTML report: one self-contained page\n"
		"with the table and SVG plots of the values over seeds, the ensembles,\n"
		"for tune runs the candidates' scores in order and against each\n"
		"parameter, for auto runs the leaderboard, the search per family and a\n"
		"feature-importance panel per bag.  RUN is a run name as `cfl runs`\n"
		"lists it.\n\n"
		"Options:\n"
		"  RUN            the run to report [the latest run]\n"
		"  --db FILE      the database [" CFL_STORE_DEFAULT_PATH "]\n"
		"  --format FMT   table, compact, md, csv, json or html [table; on a\n"
		"                 terminal the compact form when the table is wider]\n"
		"  --out DIR      write the report into DIR/RUN.EXT instead of stdout\n"
		"                 (html always goes to a file) [" DEFAULT_OUT " for html]\n"
		"  --width N      fit the tables in N columns: the compact form when the\n"
		"                 full one is wider [the terminal's; no limit into a pipe]\n"
		"  --sort score   rows best first by the first metric's score\n"
		"                 [the order of the run]\n"
		"  -h, --help     this help\n\n"
		"Examples:\n"
		"  cfl report\n"
		"  cfl report repeat-20261123-101500 --format md\n"
		"  cfl report --sort score --width 80\n"
		"  cfl report --db reports/iris.db --format html --out reports/\n");
}

/* mkdir -p: each missing folder of path, then path. */
static int make_dirs(const char *path, struct cfl_err *err)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return cfl_err_set(err, "bad output folder '%s'", path);
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			struct stat sb;

			*p = 0;
			if (mkdir(buf, 0777) && errno != EEXIST)
				return cfl_err_set(err, "cannot create folder '%s': %s",
						   buf, strerror(errno));
			if (stat(buf, &sb) || !S_ISDIR(sb.st_mode))
				return cfl_err_set(err, "'%s' is not a folder", buf);
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* DIR/NAME.EXT with the run name made safe for a file name. */
static void out_path(char *out, size_t cap, const char *dir, const char *name,
		     const char *ext)
{
	char safe[256];
	size_t i;

	for (i = 0; name[i] && i < sizeof(safe) - 1; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '-' || c == '_' ||
			 (c == '.' && i > 0);

		safe[i] = ok ? c : '_';
	}
	safe[i] = 0;
	snprintf(out, cap, "%s%s%s.%s", dir,
		 dir[strlen(dir) - 1] == '/' ? "" : "/", safe, ext);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		{ "format", required_argument, 0, 'f' },
		{ "out", required_argument, 0, 'o' },
		CLI_TABLE_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	static const char *const exts[] = { "txt", "md", "csv", "json", "txt" };
	const char *db = CFL_STORE_DEFAULT_PATH, *format = NULL, *out = NULL;
	const char *name = NULL;
	struct cfl_run_info run;
	struct cfl_store *st;
	struct cfl_err err = { "" };
	struct cfl_buf b;
	struct cli_table_opts topts = { 0 };
	struct cfl_table_style style;
	int c, html, fmt = CFL_TABLE_TEXT, rc = CLI_FAIL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int r = cli_table_option("report", c, optarg, &topts);

		if (r < 0)
			return CLI_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case 'd':
			db = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			return cli_bad_option("report", argc, argv, "h", opts);
		}
	}
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		return cli_usage_error("report", "unexpected argument '%s'",
				       argv[optind]);
	html = format && strcmp(format, "html") == 0;
	if (!html && format && (fmt = cfl_table_format_lookup(format)) < 0)
		return cli_usage_error("report",
				       "unknown format '%s' (known: table, compact, md, csv, json, html)",
				       format);
	/* a file gets the table as asked; stdout fits the terminal unless
	 * the full table was asked for by name */
	cli_table_style(&topts, format && fmt == CFL_TABLE_TEXT, &style);
	if (out) {
		style.color = 0;
		if (!topts.width)
			style.width = 0;
	}
	if (out && !out[0])
		return cli_usage_error("report", "empty --out folder");
	if (html && !out)
		out = DEFAULT_OUT;

	st = cfl_store_open_run(db, name, &run, &err);
	if (!st)
		return cli_fail(&err);
	if (run.status == CFL_RUN_RUNNING || run.status == CFL_RUN_INTERRUPTED)
		fprintf(stderr, "cfl report: run '%s' is %s: the report shows the "
				"trials finished so far\n",
			run.name, cfl_run_status_name(run.status));

	cfl_buf_init(&b);
	if ((html ? cfl_report_html(st, &run, &b, &err)
		  : cfl_report_run_styled(st, &run, fmt, &style, &b, &err)) ||
	    !b.data) {
		if (!b.data && !err.msg[0])
			cfl_err_set(&err, "out of memory");
		rc = cli_fail(&err);
		goto done;
	}
	if (!out) {
		if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout)) {
			rc = cli_failf("cannot write the report: %s", strerror(errno));
			goto done;
		}
	} else {
		char path[4096 + 300];

		out_path(path, sizeof(path), out, run.name,
			 html ? "html" : exts[fmt]);
		if (make_dirs(out, &err) ||
		    cfl_write_file_atomic(path, b.data, b.len, &err)) {
			rc = cli_fail(&err);
			goto done;
		}
		printf("%s\n", path);
	}
	rc = CLI_OK;
done:
	cfl_buf_release(&b);
	cfl_run_info_release(&run);
	cfl_store_close(st);
	return rc;
}
