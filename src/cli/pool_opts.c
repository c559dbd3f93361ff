/*
 * What repeat, tune and auto share (pool_opts.h): one parser of the pool,
 * remote and backend options, so the commands accept the same values with
 * the same messages, and one call of the study with what its outcome says.
 * What it prints goes to stderr.
 */
#include "pool_opts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/report.h"

void cli_pool_opts_init(struct cli_pool_opts *o)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(o, 0, sizeof(*o));
	o->num_jobs = cores > 0 ? cores : 1;
	o->max_retries = 1;
	o->threads_per_trial = 1;
	o->db = CFL_STORE_DEFAULT_PATH;
}

int cli_pool_option(const char *cmd, int c, const char *arg,
		    struct cli_pool_opts *o)
{
	int r = cli_table_option(cmd, c, arg, &o->table);

	if (r)
		return r;
	switch (c) {
	case CLI_OPT_NUM_JOBS:
		/* 0 is allowed here: with --listen remote workers do the work,
		 * which the command checks once every option is known */
		if (cli_parse_long(arg, 0, 1024, &o->num_jobs))
			return cli_usage_error(cmd, "--num-jobs must be an integer in [1, 1024] (0 with --listen), got '%s'", arg), -1;
		o->num_jobs_set = 1;
		return 1;
	case CLI_OPT_TRIAL_TIMEOUT:
		if (cli_parse_double(arg, 0, 1e7, &o->trial_timeout))
			return cli_usage_error(cmd, "--trial-timeout must be a number of seconds >= 0, got '%s'", arg), -1;
		return 1;
	case CLI_OPT_MAX_RETRIES:
		if (cli_parse_long(arg, 0, 100, &o->max_retries))
			return cli_usage_error(cmd, "--max-retries must be an integer in [0, 100], got '%s'", arg), -1;
		return 1;
	case CLI_OPT_THREADS_PER_TRIAL:
		if (cli_parse_long(arg, 1, 256, &o->threads_per_trial))
			return cli_usage_error(cmd, "--threads-per-trial must be an integer in [1, 256], got '%s'", arg), -1;
		return 1;
	case CLI_OPT_TRIALS_PER_WORKER:
		if (cli_parse_long(arg, 0, 1L << 40, &o->trials_per_worker))
			return cli_usage_error(cmd, "--trials-per-worker must be an integer >= 0, got '%s'", arg), -1;
		return 1;
	case CLI_OPT_DB:
		o->db = arg;
		return 1;
	case CLI_OPT_NAME:
		o->name = arg;
		return 1;
	case CLI_OPT_RESUME:
		o->resume = arg;
		return 1;
	case 'q':
		o->quiet = 1;
		return 1;
	}
	return 0;
}

/* --listen and the rest, --backend: into the plan's exec part. */
static int exec_option(const char *cmd, int c, const char *arg,
		       struct cfl_study_exec *x)
{
	struct cfl_err err;
	long n;

	switch (c) {
	case CLI_OPT_LISTEN:
		x->listen = arg;
		return 1;
	case CLI_OPT_TOKEN_FILE:
		x->token_file = arg;
		return 1;
	case CLI_OPT_HEARTBEAT:
		if (cli_parse_double(arg, 0.05, 3600, &x->heartbeat))
			return cli_usage_error(cmd, "--heartbeat must be a number of seconds "
					       "in [0.05, 3600], got '%s'", arg), -1;
		return 1;
	case CLI_OPT_MAX_WORKERS:
		if (cli_parse_long(arg, 1, 100000, &n))
			return cli_usage_error(cmd, "--max-workers must be an integer in "
					       "[1, 100000], got '%s'", arg), -1;
		x->max_workers = (size_t)n;
		return 1;
	case CLI_OPT_BACKEND:
		if (cfl_backend_parse(arg, &x->backend, &err))
			return cli_usage_error(cmd, "--backend: %s", err.msg), -1;
		return 1;
	}
	return 0;
}

int cli_pool_shared_option(const char *cmd, int c, const char *arg,
			   struct cfl_study_plan *sp, struct cli_pool_opts *o)
{
	/* the option ids of the groups are disjoint: the first group that
	 * knows c handles it */
	int r = cli_data_option(cmd, c, arg, &sp->data);

	if (!r)
		r = cli_pool_option(cmd, c, arg, o);
	if (!r)
		r = exec_option(cmd, c, arg, &sp->exec);
	return r;
}

int cli_pool_parse(const char *cmd, int argc, char **argv,
		   int (*parse)(void *ctx, int argc, char **argv),
		   void (*reset)(void *ctx), void *ctx,
		   const struct cli_pool_opts *pool,
		   const enum cfl_backend *backend, struct cfl_buf *cmdline,
		   struct cfl_buf *plancmd, char ***argv_words, char ***words)
{
	int r;

	*argv_words = *words = NULL;
	/* the command as typed: getopt_long permutes argv (options first) */
	cfl_study_command_line(argc, argv, 0, cmdline);
	if (plancmd)
		cfl_study_command_line(argc, argv, 1, plancmd);
	r = parse(ctx, argc, argv);
	/* --resume NAME alone: the run's stored command fills in DATA and the
	 * plan */
	if (r == 3)
		r = cli_pool_resume_alone(cmd, pool, *backend, argc, argv, &argc,
					  argv_words, words);
	if (r != 3)
		return r;
	reset(ctx);
	argv = *argv_words;
	cmdline->len = 0;
	cfl_study_command_line(argc, argv, 0, cmdline);
	if (plancmd) {
		plancmd->len = 0;
		cfl_study_command_line(argc, argv, 1, plancmd);
	}
	r = parse(ctx, argc, argv);
	if (r == 3)
		r = cli_usage_error(cmd, "missing DATA (a CSV file)");
	return r;
}

int cli_pool_resume_alone(const char *cmd, const struct cli_pool_opts *o,
			  enum cfl_backend backend, int argc, char **argv,
			  int *new_argc, char ***new_argv, char ***words)
{
	long rank = cfl_study_launch_rank(backend);
	struct cfl_err err;

	*new_argv = NULL;
	*words = NULL;
	if (rank > 0)
		return 0;	/* a worker rank: rank 0 has the run's command */
	if (rank == -2)
		return cli_usage_error(cmd, "%s", cfl_study_resume_msg);
	*new_argv = cfl_study_stored_argv(cmd, o->db, o->resume, argc, argv, new_argc,
					 words, &err);
	return *new_argv ? 3 : cli_fail(&err);
}

void cli_pool_to_plan(const struct cli_pool_opts *o, struct cfl_study_plan *sp)
{
	struct cfl_pool_opts *po = &sp->exec.pool;

	po->n_local = (size_t)o->num_jobs;
	po->threads_per_trial = (int)o->threads_per_trial;
	po->trial_timeout = o->trial_timeout;
	po->max_retries = (int)o->max_retries;
	po->trials_per_worker = (size_t)o->trials_per_worker;
	sp->exec.n_local_set = o->num_jobs_set;
	sp->db = o->db;
	sp->name = o->name;
	sp->resume = o->resume;
}

const char *cli_db_flag(const char *db, char *buf, size_t cap)
{
	if (!strcmp(db, CFL_STORE_DEFAULT_PATH))
		buf[0] = 0;
	else
		snprintf(buf, cap, " --db %s", cli_sh(db));
	return buf;
}

int cli_study_said(const char *cmd, const struct cfl_study_event *ev)
{
	if (ev->kind == CFL_STUDY_NOTE)	/* "ensemble ...; skipped" */
		fprintf(stderr, "cfl: %s\n", ev->text);
	else if (ev->kind == CFL_STUDY_LOG)
		fprintf(stderr, "cfl %s: %s\n", cmd, ev->text);
	else
		return 0;
	return 1;
}

int cli_study_run(const char *cmd, struct cfl_study_plan *sp,
		  const struct cli_pool_opts *o, const struct cfl_study_hooks *h,
		  const char *grow, const char *verb, struct cfl_study_outcome *out)
{
	static char stop_note[256];
	struct cfl_study_hooks hooks = *h;
	struct cfl_err err;
	char db[1100];
	int rc;

	snprintf(stop_note, sizeof(stop_note), "cfl %s: the MPI job is ending (a "
		 "rank was lost, or the job was stopped); every result so far is "
		 "stored: run the same command with --resume NAME to finish it\n", cmd);
	hooks.stop_note = stop_note;
	err.msg[0] = 0;
	rc = cfl_study_run(sp, &hooks, out, &err);
	cli_db_flag(o->db, db, sizeof(db));
	switch (rc) {
	case CFL_STUDY_RUN_DONE:
		return -1;
	case CFL_STUDY_RUN_RANK:
		fflush(NULL);
		_exit(out->exit_code);
	case CFL_STUDY_RUN_USAGE:
	case CFL_STUDY_RUN_FAILED:
		if (out->err_how == CFL_STUDY_SAY_CMD)
			fprintf(stderr, "cfl %s: %s\n", cmd, err.msg);
		else if (out->err_how == CFL_STUDY_SAY_PLAIN && rc == CFL_STUDY_RUN_USAGE)
			cli_usage_error(cmd, "%s", err.msg);
		else if (out->err_how == CFL_STUDY_SAY_PLAIN)
			cli_fail(&err);
		if (rc == CFL_STUDY_RUN_USAGE)
			return CLI_USAGE;
		return out->signalled ? CLI_INTERRUPTED : CLI_FAIL;
	case CFL_STUDY_RUN_COMPLETE:
		fprintf(stderr, "cfl %s: run '%s' is complete; nothing to do (cfl report "
			"%s%s shows it; %s)\n", cmd, out->name, cli_sh(out->name), db, grow);
		return CLI_OK;
	case CFL_STUDY_RUN_INTERRUPTED:
		if (!out->started && !strcmp(cmd, "repeat"))
			fprintf(stderr, "cfl %s: interrupted\n", cmd);
		else
			fprintf(stderr, "cfl %s: interrupted; run '%s' kept in '%s'; %s it "
				"with:\n  %scfl %s --resume %s%s\n", cmd, out->name, o->db,
				verb, out->launcher, cmd, cli_sh(out->name), db);
		return CLI_INTERRUPTED;
	}
	return CLI_FAIL;
}

int cli_print_run(struct cfl_study *study, const struct cli_table_opts *t,
		  struct cfl_err *err)
{
	struct cfl_store *st = cfl_study_store(study);
	struct cfl_table_style style;
	struct cfl_run_info info;
	struct cfl_buf out;
	int rc;

	cli_table_style(t, 0, &style);
	if (cfl_store_run_get(st, cfl_study_run_id(study), &info, err))
		return -1;
	cfl_buf_init(&out);
	rc = cfl_report_run_styled(st, &info, CFL_TABLE_TEXT, &style, &out, err);
	cfl_run_info_release(&info);
	if (!rc)
		fputs(out.data ? out.data : "", stdout);
	cfl_buf_release(&out);
	return rc;
}
