/*
 * The results table of a stored run: what `cfl repeat`, `cfl tune` and
 * `cfl report` print, built from the store so all three print the same.
 * Depends on the store (the rows) and the metrics module (the signs).
 */
#include "cfl/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/metrics.h"
#include "internal.h"

static const char *row_name(enum cfl_table_rows by, const char *model,
			    const char *hex)
{
	return by == CFL_ROWS_BY_CANDIDATE && hex[0] ? hex : model;
}

int cfl_table_from_run(struct cfl_table *t, struct cfl_store *st,
		       int64_t run_id, enum cfl_store_split split,
		       enum cfl_table_rows by, struct cfl_err *err)
{
	struct cfl_candidate_info *cands = NULL;
	struct cfl_metric_row *rows = NULL;
	size_t n_cands = 0, n_rows = 0;
	int rc = -1;

	if (cfl_store_candidates(st, run_id, &cands, &n_cands, err) ||
	    cfl_store_run_metrics(st, run_id, split, &rows, &n_rows, err))
		goto out;
	/* Rows in candidate order first, so a model whose trials all failed
	 * still gets its row (nan cells and its failed count). */
	for (size_t i = 0; i < n_cands; i++) {
		int r = cfl_table_row(t, row_name(by, cands[i].model,
						  cands[i].hex), err);

		if (r < 0)
			goto out;
		cfl_table_set_failed(t, r, t->rows[r].n_failed +
						   cands[i].n_failed);
	}
	for (size_t i = 0; i < n_rows; i++) {
		int id = cfl_metric_lookup(rows[i].metric), m, r;

		if (id < 0) {
			cfl_err_set(err, "run %lld: unknown metric '%s'",
				    (long long)run_id, rows[i].metric);
			goto out;
		}
		m = cfl_table_metric(t, rows[i].metric,
				     cfl_metric_info(id)->sign, err);
		r = cfl_table_row(t, row_name(by, rows[i].model, rows[i].hex),
				  err);
		if (m < 0 || r < 0 || cfl_table_add(t, r, m, rows[i].value, err))
			goto out;
	}
	rc = 0;
out:
	cfl_candidates_free(cands, n_cands);
	free(rows);
	return rc;
}

/* ---- a stored run's config (internal.h) ---- */

void cfl_report_config_get(const char *config, const char *key, char *out,
			   size_t cap)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = config; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			n -= kl + 1;
			if (n >= cap)
				n = cap - 1;
			memcpy(out, p + kl + 1, n);
			out[n] = '\0';
			return;
		}
		p = nl ? nl + 1 : p + n;
	}
}
