/*
 * What a run prints as its results, rebuilt from the store: `cfl repeat`,
 * `cfl tune`, `cfl auto` and `cfl report` all render through
 * cfl_report_run, so a report printed later is byte for byte what the run
 * printed.  Depends on the store and the table (from_store.c), and for
 * auto runs on the study's leaderboard summary; never prints.
 */
#include "cfl/report.h"

int cfl_report_run(struct cfl_store *st, const struct cfl_run_info *run,
		   enum cfl_table_format fmt, struct cfl_buf *out,
		   struct cfl_err *err)
{
	return cfl_report_run_styled(st, run, fmt, NULL, out, err);
}

int cfl_report_run_styled(struct cfl_store *st, const struct cfl_run_info *run,
			  enum cfl_table_format fmt,
			  const struct cfl_table_style *style,
			  struct cfl_buf *out, struct cfl_err *err)
{
	struct cfl_table t;
	struct cfl_attempt_info *fails = NULL;
	size_t n_fails = 0;
	int rc;

	/* A search scores candidates on validation (never on test) and
	 * refits its best (tune_report.c); a repeat reports its models on
	 * test. */
	if (run->kind == CFL_RUN_TUNE)
		return cfl_report_tune(st, run, fmt, style, out, err);
	/* auto: the leaderboard it printed */
	if (run->kind == CFL_RUN_AUTO)
		return cfl_report_auto(st, run, fmt, 0, style ? style->width : 0,
				       out, err) < 0 ? -1 : 0;
	cfl_table_init(&t);
	rc = cfl_table_from_run(&t, st, run->id, CFL_SPLIT_TEST,
				CFL_ROWS_BY_MODEL, err);
	/* the failed attempts with their reasons, under the table */
	if (!rc)
		rc = cfl_store_attempts(st, run->id, &fails, &n_fails, err);
	t.failures = fails;
	t.n_failures = n_fails;
	if (!rc)
		rc = cfl_table_render_styled(&t, fmt, style, out, err);
	if (!rc && (fmt == CFL_TABLE_TEXT || fmt == CFL_TABLE_COMPACT))
		rc = cfl_report_feature_importance(st, run->id, 0,
						   style ? style->width : 0, out, err);
	cfl_table_release(&t);
	cfl_attempts_free(fails, n_fails);
	return rc;
}
