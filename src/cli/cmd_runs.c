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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfl runs [--db FILE]\n\n"
		"Lists the runs stored in a database, oldest first: name, kind, start\n"
		"date (UTC), dataset, status, trials done/total and failed, and the\n"
		"best row of the test table by the score of the first metric.\n\n"
		"Options:\n"
		"  --db FILE    the database [" CFL_STORE_DEFAULT_PATH "]\n"
		"  -h, --help   this help\n\n"
		"Examples:\n"
		"  cfl runs\n"
		"  cfl runs --db reports/iris.db\n");
}

/* "tree acc 0.960000" (best score of the first metric), or "-". */
static void best_of(struct cfl_store *st, const struct cfl_run_info *r,
		    char *out, size_t cap)
{
	struct cfl_table t;
	struct cfl_err err;
	long best = -1;

	snprintf(out, cap, "-");
	cfl_table_init(&t);
	if (cfl_table_from_run(&t, st, r->id, CFL_SPLIT_TEST,
			       r->kind == CFL_RUN_TUNE ? CFL_ROWS_BY_CANDIDATE
						       : CFL_ROWS_BY_MODEL,
			       &err) == 0 && t.n_metrics) {
		cfl_table_compute(&t);
		for (size_t i = 0; i < t.n_rows; i++)
			if (t.rows[i].score[0] == t.rows[i].score[0] &&
			    (best < 0 || t.rows[i].score[0] > t.rows[best].score[0]))
				best = (long)i;
		if (best >= 0)
			snprintf(out, cap, "%s %s %.6f", t.rows[best].name,
				 t.metric_names[0], t.rows[best].mean[0]);
	}
	cfl_table_release(&t);
}

int cmd_runs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *db = CFL_STORE_DEFAULT_PATH;
	struct cfl_run_summary *runs;
	struct cfl_store *st;
	struct cfl_err err;
	size_t n;
	int c, w_name = 4, w_data = 7;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			db = optarg;
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			return cli_usage_error("runs", "unknown option");
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
	for (size_t i = 0; i < n; i++) {
		if ((int)strlen(runs[i].info.name) > w_name)
			w_name = (int)strlen(runs[i].info.name);
		if ((int)strlen(runs[i].info.dataset) > w_data)
			w_data = (int)strlen(runs[i].info.dataset);
	}
	printf("%-*s  %-6s  %-16s  %-*s  %-11s  %9s  %6s  %s\n", w_name, "name",
	       "kind", "started (UTC)", w_data, "dataset", "status", "done",
	       "failed", "best");
	for (size_t i = 0; i < n; i++) {
		const struct cfl_run_info *r = &runs[i].info;
		time_t when = (time_t)r->created;
		struct tm tm;
		char date[32], done[48], best[160];

		gmtime_r(&when, &tm);
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M", &tm);
		snprintf(done, sizeof(done), "%zu/%zu", runs[i].n_done,
			 runs[i].n_trials);
		best_of(st, r, best, sizeof(best));
		printf("%-*s  %-6s  %-16s  %-*s  %-11s  %9s  %6zu  %s\n", w_name,
		       r->name, cfl_run_kind_name(r->kind), date, w_data,
		       r->dataset[0] ? r->dataset : "-",
		       cfl_run_status_name(r->status), done, runs[i].n_failed,
		       best);
	}
	cfl_run_summaries_free(runs, n);
	cfl_store_close(st);
	return CLI_OK;
}
