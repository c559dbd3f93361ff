/*
 * The pool options repeat and tune share (pool_opts.h): one parser, so the
 * two commands accept the same values with the same messages.  What it
 * prints goes to stderr: usage errors, and why the 'reports' folder or a
 * stored run to resume could not be had.
 */
#include "pool_opts.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int cli_pool_shared_option(const char *cmd, int c, const char *arg,
			   struct cfl_data_opts *d, struct cli_pool_opts *o,
			   struct cli_remote *remote, struct cli_cluster *cluster)
{
	/* the option ids of the four groups are disjoint: the first group
	 * that knows c handles it */
	int r = cli_data_option(cmd, c, arg, d);

	if (!r)
		r = cli_pool_option(cmd, c, arg, o);
	if (!r)
		r = cli_remote_option(remote, cmd, c, arg);
	if (!r)
		r = cli_cluster_option(cluster, cmd, c, arg);
	return r;
}

int cli_pool_parse(const char *cmd, int argc, char **argv,
		   int (*parse)(void *ctx, int argc, char **argv),
		   void (*reset)(void *ctx), void *ctx,
		   const struct cli_pool_opts *pool,
		   const struct cli_cluster *cluster, struct cfl_buf *cmdline,
		   struct cfl_buf *plancmd, char ***argv_words, char ***words)
{
	int r;

	*argv_words = *words = NULL;
	/* the command as typed: getopt_long permutes argv (options first) */
	cli_command_line(argc, argv, cmdline);
	if (plancmd)
		cli_plan_command_line(argc, argv, plancmd);
	r = parse(ctx, argc, argv);
	/* --resume NAME alone: the run's stored command fills in DATA and the
	 * plan */
	if (r == 3)
		r = cli_pool_resume_alone(cmd, pool, cluster, argc, argv, &argc,
					  argv_words, words);
	if (r != 3)
		return r;
	reset(ctx);
	argv = *argv_words;
	cmdline->len = 0;
	cli_command_line(argc, argv, cmdline);
	if (plancmd) {
		plancmd->len = 0;
		cli_plan_command_line(argc, argv, plancmd);
	}
	r = parse(ctx, argc, argv);
	if (r == 3)
		r = cli_usage_error(cmd, "missing DATA (a CSV file)");
	return r;
}

int cli_pool_resume_alone(const char *cmd, const struct cli_pool_opts *o,
			  const struct cli_cluster *cluster, int argc,
			  char **argv, int *new_argc, char ***new_argv,
			  char ***words)
{
	*new_argv = NULL;
	*words = NULL;
	if (cli_cluster_wants_mpi(cluster)) {
		long rank = cli_cluster_env_rank(cluster);

		if (rank > 0)
			return 0;	/* a worker rank: rank 0 has the run's command */
		if (rank < 0)
			return cli_usage_error(cmd, "%s", cli_cluster_resume_msg);
	}
	*new_argv = cli_resume_argv(cmd, o->db, o->resume, argc, argv, new_argc, words);
	return *new_argv ? 3 : CLI_FAIL;
}

void cli_pool_opts_apply(const struct cli_pool_opts *o,
			 struct cfl_pool_opts *po)
{
	po->n_local = (size_t)o->num_jobs;
	po->threads_per_trial = (int)o->threads_per_trial;
	po->trial_timeout = o->trial_timeout;
	po->max_retries = (int)o->max_retries;
	po->trials_per_worker = (size_t)o->trials_per_worker;
}

int cli_pool_mkdir_db(const char *db)
{
	if (strcmp(db, CFL_STORE_DEFAULT_PATH))
		return 0;
	if (mkdir("reports", 0777) && errno != EEXIST)
		return cli_failf("cannot create folder 'reports': %s", strerror(errno));
	return 0;
}
