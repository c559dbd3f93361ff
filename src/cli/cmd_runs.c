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
		"best row of the test table by the score of the first metric (a tune\n"
		"run: the candidate it chose on validation, with its refit's test mean).\n\n"
		"Options:\n"
		"  --db FILE    the database [" CFL_STORE_DEFAULT_PATH "]\n"
		"  -h, --help   this help\n\n"
		"Examples:\n"
		"  cfl runs\n"
		"  cfl runs --db reports/iris.db\n");
}

/* The value of "key=" in a run's config lines into out ("" when absent). */
static void config_get(const char *config, const char *key, char *out, size_t cap)
{
	size_t n = strlen(key);

	out[0] = 0;
	for (const char *p = config; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == '=') {
			size_t len = strcspn(p + n + 1, "\n");

			snprintf(out, cap, "%.*s", (int)len, p + n + 1);
			return;
		}
}

/* A tune run's best: the candidate the run chose (the best search score,
 * on validation), with the mean of its refit's test values of the tune
 * metric ("1a2b3c4d acc 0.960000 (refit)"), or its validation score when
 * no refit is stored ("1a2b3c4d score 0.950000 (valid)").  Never the
 * candidate with the best test mean: choosing by test would be peeking. */
static void best_of_tune(struct cfl_store *st, const struct cfl_run_info *r,
			 char *out, size_t cap)
{
	struct cfl_candidate_info *cands = NULL;
	struct cfl_metric_row *rows = NULL;
	size_t n_cands = 0, n_rows = 0, n = 0;
	struct cfl_err err;
	char metric[32], buf[32];
	double sum = 0;
	long best = -1, R;

	config_get(r->config, "num_repeat", buf, sizeof(buf));
	R = atol(buf) > 0 ? atol(buf) : 1;
	config_get(r->config, "metric", metric, sizeof(metric));
	if (cfl_store_candidates(st, r->id, &cands, &n_cands, &err))
		return;
	for (size_t i = 0; i < n_cands; i++)
		if (cands[i].has_score && cands[i].score == cands[i].score &&
		    (best < 0 || cands[i].score > cands[best].score))
			best = (long)i;
	if (best >= 0 && metric[0] &&
	    cfl_store_run_metrics(st, r->id, CFL_SPLIT_TEST, &rows, &n_rows, &err) == 0)
		for (size_t i = 0; i < n_rows; i++)
			if (rows[i].cand_id == cands[best].id && rows[i].repeat >= R &&
			    !strcmp(rows[i].metric, metric) && rows[i].value == rows[i].value) {
				sum += rows[i].value;
				n++;
			}
	if (best >= 0 && n)
		snprintf(out, cap, "%s %s %.6f (refit)", cands[best].hex, metric,
			 sum / (double)n);
	else if (best >= 0)
		snprintf(out, cap, "%s score %.6f (valid)", cands[best].hex,
			 cands[best].score);
	free(rows);
	cfl_candidates_free(cands, n_cands);
}

/* "tree acc 0.960000" (best score of the first metric), or "-"; for a tune
 * run see best_of_tune. */
static void best_of(struct cfl_store *st, const struct cfl_run_info *r,
		    char *out, size_t cap)
{
	struct cfl_table t;
	struct cfl_err err;
	long best = -1;

	snprintf(out, cap, "-");
	if (r->kind == CFL_RUN_TUNE) {
		best_of_tune(st, r, out, cap);
		return;
	}
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
