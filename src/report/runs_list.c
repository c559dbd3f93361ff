/*
 * The listing of `cfl runs`: one line per stored run (name, kind, start,
 * dataset, status, trials, the best row), whole columns left out in a set
 * order when the lines would be wider than the width.
 */
#include "cfl/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static int put_lines(const struct runs_line *lines, size_t n, size_t width,
		     struct cfl_buf *out)
{
	size_t w[N_COLS], total;
	int shown[N_COLS], rc = 0;

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
				rc |= cfl_buf_printf(out, "%.*s\n", (int)w[c], text);
			else
				rc |= cfl_buf_printf(out, "%-*s  ", (int)w[c], text);
		}
	}
	return rc;
}

int cfl_report_runs(struct cfl_store *st, size_t width, struct cfl_buf *out,
		    size_t *n_runs, struct cfl_err *err)
{
	struct cfl_run_summary *runs;
	struct runs_line *lines;
	size_t n;
	int rc;

	*n_runs = 0;
	if (cfl_store_runs_list(st, &runs, &n, err))
		return -1;
	lines = calloc(n ? n : 1, sizeof(*lines));
	if (!lines) {
		cfl_run_summaries_free(runs, n);
		return cfl_err_set(err, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		fill_line(st, &runs[i], &lines[i]);
	rc = n ? put_lines(lines, n, width, out) : 0;
	if (rc)
		cfl_err_set(err, "out of memory");
	*n_runs = n;
	free(lines);
	cfl_run_summaries_free(runs, n);
	return rc;
}
