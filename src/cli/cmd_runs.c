/*
 * `cfl runs`: the runs stored in a database, one line each: name, kind,
 * date, dataset, status, trials done / failed, and the best row of its
 * table.  Opens the database read-only, so it is safe while a run writes.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ---- the listing: columns that fit the width ---- */

/* The columns, in the order shown.  When the lines are wider than the
 * width, whole columns go in the order of drop_order (the name says the
 * kind of a default-named run; the date and the dataset are in `cfl report`
 * too), then the best is cut. */
enum { COL_NAME, COL_KIND, COL_STARTED, COL_DATA, COL_STATUS, COL_TRIALS,
       COL_BEST, N_COLS };
static const char *const col_head[N_COLS] = {
	"name", "kind", "started (UTC)", "dataset", "status", "trials", "best",
};
static const int drop_order[] = { COL_KIND, COL_STARTED, COL_DATA };

struct runs_line {
	char cell[N_COLS][192];
};

static void fill_line(struct cfl_store *st, const struct cfl_run_summary *s,
		      struct runs_line *l)
{
	const struct cfl_run_info *r = &s->info;
	time_t when = (time_t)r->created;
	const char *base = strrchr(r->dataset, '/');
	struct tm tm;

	snprintf(l->cell[COL_NAME], sizeof(l->cell[0]), "%s", r->name);
	snprintf(l->cell[COL_KIND], sizeof(l->cell[0]), "%s", cfl_run_kind_name(r->kind));
	gmtime_r(&when, &tm);
	strftime(l->cell[COL_STARTED], sizeof(l->cell[0]), "%Y-%m-%d %H:%M", &tm);
	/* the file's name: the folder is the same for most runs */
	snprintf(l->cell[COL_DATA], sizeof(l->cell[0]), "%s",
		 r->dataset[0] ? (base ? base + 1 : r->dataset) : "-");
	snprintf(l->cell[COL_STATUS], sizeof(l->cell[0]), "%s",
		 cfl_run_status_name(r->status));
	{
		/* what did not finish, and why: failures apart from the
		 * trials the run stopped itself (time limit, pruning) */
		char *c = l->cell[COL_TRIALS];
		size_t cap = sizeof(l->cell[0]), n;

		n = (size_t)snprintf(c, cap, "%zu/%zu", s->n_done, s->n_trials);
		if (s->n_failed && n < cap)
			n += (size_t)snprintf(c + n, cap - n, ", %zu failed", s->n_failed);
		if (s->n_cancelled && n < cap)
			n += (size_t)snprintf(c + n, cap - n, ", %zu cancelled",
					      s->n_cancelled);
		if (s->n_pruned && n < cap)
			snprintf(c + n, cap - n, ", %zu pruned", s->n_pruned);
	}
	cfl_report_run_best(st, r, l->cell[COL_BEST], sizeof(l->cell[0]));
}

static void print_lines(const struct runs_line *lines, size_t n, size_t width)
{
	size_t w[N_COLS], total;
	int shown[N_COLS];

	for (int c = 0; c < N_COLS; c++) {
		shown[c] = 1;
		w[c] = strlen(col_head[c]);
		for (size_t i = 0; i < n; i++)
			if (strlen(lines[i].cell[c]) > w[c])
				w[c] = strlen(lines[i].cell[c]);
	}
	for (size_t d = 0;; d++) {
		total = 0;
		for (int c = 0; c < N_COLS; c++)
			if (shown[c])
				total += w[c] + (c < COL_BEST ? 2 : 0);
		if (total <= width || d == sizeof(drop_order) / sizeof(drop_order[0]))
			break;
		shown[drop_order[d]] = 0;
	}
	/* still too wide: the best gets what is left (never less than 12) */
	if (total > width && w[COL_BEST] > 12)
		w[COL_BEST] = total - width >= w[COL_BEST] - 12 ? 12
							 : w[COL_BEST] - (total - width);
	for (size_t i = 0; i <= n; i++) {
		const char *const *cells = i ? NULL : col_head;

		for (int c = 0; c < N_COLS; c++) {
			const char *text = cells ? cells[c] : lines[i - 1].cell[c];

			if (!shown[c])
				continue;
			if (c == COL_BEST)
				printf("%.*s\n", (int)w[c], text);
			else
				printf("%-*s  ", (int)w[c], text);
		}
	}
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
	struct cfl_run_summary *runs;
	struct cfl_store *st;
	struct cfl_err err;
	size_t n;
	struct runs_line *lines;
	struct cli_table_opts topts = { 0 };
	struct cfl_table_style style;
	int c;

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
	st = cfl_store_open(db, CFL_STORE_READONLY, &err);
	if (!st)
		return cli_fail(&err);
	if (cfl_store_runs_list(st, &runs, &n, &err)) {
		cfl_store_close(st);
		return cli_fail(&err);
	}
	if (!n) {
		printf("no runs in '%s'\n", db);
		cfl_store_close(st);
		return CLI_OK;
	}
	lines = calloc(n, sizeof(*lines));
	if (!lines) {
		cfl_run_summaries_free(runs, n);
		cfl_store_close(st);
		return cli_failf("out of memory");
	}
	for (size_t i = 0; i < n; i++)
		fill_line(st, &runs[i], &lines[i]);
	cli_table_style(&topts, 0, &style);
	/* a pipe gets 80 columns too: what a terminal would show */
	print_lines(lines, n, style.width ? style.width : 80);
	free(lines);
	cfl_run_summaries_free(runs, n);
	cfl_store_close(st);
	return CLI_OK;
}
