#include "cfl/report.h"
int cfl_report_html(struct cfl_store *st, const struct cfl_run_info *run,
		    struct cfl_buf *out, struct cfl_err *err)
{
	return cfl_report_run(st, run, CFL_TABLE_MD, out, err);
}
