/*
 * The backend of repeat and tune (see cluster.h): --backend, detection of
 * mpirun and srun, and what the MPI backend says.  The job itself is the
 * run module's (backend.h): cfl_mpi_job_start, rank 0's peers
 * (cfl_mpi_job_attach), a worker rank's relay (cfl_mpi_serve); here are
 * the signal handlers, the messages and the exits.
 */
#include "cluster.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cfl/relay.h"

const char cli_cluster_help[] =
	"  --backend B              where trials run: local (forked workers), tcp\n"
	"                           (with --listen) or mpi (rank 0 coordinates, the\n"
	"                           other ranks run trials, each with --num-jobs\n"
	"                           workers [its node's cores / ranks on the node]);\n"
	"                           [mpi when started by mpirun or srun, else local]\n";

void cli_cluster_init(struct cli_cluster *c)
{
	memset(c, 0, sizeof(*c));
	c->requested = CFL_BACKEND_AUTO;
}

int cli_cluster_option(struct cli_cluster *c, const char *cmd, int opt,
		       const char *arg)
{
	struct cfl_err err;

	if (opt != CLI_OPT_BACKEND)
		return 0;
	if (cfl_backend_parse(arg, &c->requested, &err)) {
		cli_usage_error(cmd, "--backend: %s", err.msg);
		return -1;
	}
	return 1;
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

int cli_cluster_wants_mpi(const struct cli_cluster *c)
{
	struct cfl_launch l;

	if (c->requested != CFL_BACKEND_AUTO)
		return c->requested == CFL_BACKEND_MPI;
	cfl_launch_detect(&l, env_get);
	return l.launcher != NULL;
}

long cli_cluster_env_rank(const struct cli_cluster *c)
{
	struct cfl_launch l;

	if (!cli_cluster_wants_mpi(c))
		return -1;
	cfl_launch_detect(&l, env_get);
	return l.launcher ? l.rank : -1;
}

const char cli_cluster_resume_msg[] =
	"with the mpi backend, --resume NAME needs DATA and the run's options "
	"again when cfl cannot tell the ranks apart before MPI starts (a "
	"launcher other than mpirun or srun): only rank 0 may open the database";

/* ---- the MPI process of a rank: pump until the child is done ---- */

static volatile sig_atomic_t g_stop;
static volatile pid_t g_child;
static char g_stop_msg[256];	/* rank 0 says it at once: the job may be
				 * killed before the coordinator is done */

static void on_pump_signal(int sig)
{
	if (!g_stop && g_stop_msg[0]) {
		ssize_t n = write(2, g_stop_msg, strlen(g_stop_msg));

		(void)n;
	}
	g_stop = 1;
	if (g_child > 0)
		kill(g_child, sig);
}

static void pump_and_exit(struct cli_cluster *c, const char *cmd, pid_t child)
{
	struct cfl_err err;
	int status = 0, code, r;

	g_child = child;
	if (c->job.mpi.rank == 0)
		snprintf(g_stop_msg, sizeof(g_stop_msg), "cfl %s: the MPI job is "
			 "ending (a rank was lost, or the job was stopped); every "
			 "result so far is stored: run the same command with "
			 "--resume NAME to finish it\n", cmd);
	cli_catch_stop(on_pump_signal, SA_RESTART, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = cfl_mpi_bridge(&c->job.mpi, c->job.fds, child, 10, &g_stop, &status, &err);
	if (r < 0) {
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->job.mpi.rank, err.msg);
		kill(child, SIGTERM);
		cfl_mpi_abort(&c->job.mpi, CLI_FAIL);
	}
	code = WIFEXITED(status) ? WEXITSTATUS(status)
	       : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : CLI_FAIL;
	if (r == 2) {
		/* the run is over and stored; only the job's end is left.  Never
		 * MPI_Abort(0): Open MPI 4.1's mpirun then fails to print its
		 * banner and can hang; the job did not end cleanly anyway */
		if (code == 0)
			code = CLI_FAIL;
		fprintf(stderr, "cfl %s: %s; every result is stored; ending the "
			"MPI job with MPI_Abort (exit code %d)\n", cmd, err.msg,
			code);
		fflush(NULL);
		cfl_mpi_abort(&c->job.mpi, code);
	}
	if (r == 0 && cfl_mpi_finalize(&c->job.mpi, &err) < 0)
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->job.mpi.rank, err.msg);
	/* stopped by a signal (the job is being killed, a rank was lost): the
	 * other ranks may be gone, so no MPI_Finalize that would wait on them */
	fflush(NULL);
	_exit(code);
}

/* ---- a worker rank's child: serves rank 0 with the relay ---- */

static struct cfl_relay *volatile g_relay;

static void on_worker_signal(int sig)
{
	(void)sig;
	cfl_relay_interrupt(g_relay);
}

/* Worker ranks are quiet: only what went wrong is printed. */
static void worker_log(void *ctx, int important, const char *msg)
{
	if (important)
		fprintf(stderr, "%s: %s\n", (const char *)ctx, msg);
}

static int run_worker(struct cli_cluster *c, const char *cmd)
{
	struct cfl_err err;
	char host[64], name[64], prefix[160];
	int r;

	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = 0;
	snprintf(name, sizeof(name), "rank %d (%.40s)", c->job.mpi.rank, host);
	snprintf(prefix, sizeof(prefix), "cfl %s: %s", cmd, name);
	cli_catch_stop(on_worker_signal, SA_RESTART, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = cfl_mpi_serve(&c->job, name, worker_log, prefix, &g_relay, &err);
	/* a lost rank 0 said why itself */
	if (r < 0)
		fprintf(stderr, "%s: %s\n", prefix, err.msg);
	return r == CFL_RELAY_OVER ? CLI_OK : CLI_FAIL;
}

/* ---- start ---- */

int cli_cluster_start(struct cli_cluster *c, const char *cmd,
		      const struct cfl_data_opts *d, struct cfl_data *data,
		      int has_listen, long *num_jobs, int num_jobs_set)
{
	struct cfl_launch l;
	struct cfl_err err;
	int detected = 0, role;

	cfl_launch_detect(&l, env_get);
	if (cfl_backend_choose(c->requested, &l, has_listen, &c->backend,
			       &detected, &err)) {
		if (c->requested == CFL_BACKEND_MPI)
			return cli_usage_error(cmd, "%s", err.msg);
		fprintf(stderr, "cfl %s: %s\n", cmd, err.msg);
		return CLI_FAIL;
	}
	if (c->backend == CFL_BACKEND_TCP && !has_listen)
		return cli_usage_error(cmd, "--backend tcp needs --listen ADDR:PORT");
	if (c->backend != CFL_BACKEND_MPI)
		return -1;
	c->cmd = cmd;
	if (has_listen)
		return cli_usage_error(cmd, "--listen and the mpi backend do not mix "
				       "(use --backend local with --listen)");
	role = cfl_mpi_job_start(&c->job, &l, d, data,
				 num_jobs_set ? *num_jobs : 0, &err);
	/* said once on rank 0 (by its MPI process, not its child), whenever MPI
	 * started */
	if (detected && c->job.mpi.size > 0 && c->job.mpi.rank == 0 &&
	    (role == CFL_MPI_PUMP || role < 0))
		fprintf(stderr, "cfl %s: started by %s with %d ranks: using the mpi "
			"backend (rank 0 coordinates; --backend local to run "
			"each rank alone)\n", cmd, l.launcher, c->job.mpi.size);
	switch (role < 0 ? (int)c->job.fail : -1) {
	case CFL_MPI_FAIL_SAY:
		fprintf(stderr, "cfl %s: %s\n", cmd, err.msg);
		return CLI_FAIL;
	case CFL_MPI_FAIL_RANK:
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->job.mpi.rank, err.msg);
		return CLI_FAIL;
	case CFL_MPI_FAIL_DATA:
		return cli_fail(&err);
	case CFL_MPI_FAIL_SIZE:
		if (c->job.mpi.rank == 0)
			fprintf(stderr, "cfl %s: %s\n", cmd, err.msg);
		return CLI_USAGE;
	case CFL_MPI_FAIL_ABORT:
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->job.mpi.rank, err.msg);
		cfl_mpi_abort(&c->job.mpi, CLI_FAIL);
		return CLI_FAIL;
	case CFL_MPI_FAIL_QUIET:
	case CFL_MPI_FAIL_NONE:
		return CLI_FAIL;
	}
	if (role == CFL_MPI_PUMP)
		pump_and_exit(c, cmd, c->job.child);	/* never returns */
	if (role == CFL_MPI_COORDINATOR) {
		/* runs no trial itself */
		c->data_loaded = c->job.data_loaded;
		*num_jobs = 0;
		return -1;
	}
	{
		int rc = run_worker(c, cmd);

		cfl_mpi_job_release(&c->job);
		fflush(NULL);
		_exit(rc);
	}
}

/* ---- rank 0: worker ranks as pool peers ---- */

static void coord_log(void *ctx, const char *msg)
{
	fprintf(stderr, "cfl %s: %s\n", (const char *)ctx, msg);
}

int cli_cluster_attach(struct cli_cluster *c, struct cfl_pool *pool,
		       const struct cfl_data_opts *d,
		       const struct cfl_pool_opts *po, const char *run_key,
		       double heartbeat)
{
	struct cfl_err err;

	if (c->backend != CFL_BACKEND_MPI || !c->job.fds)
		return 0;
	if (cfl_mpi_job_attach(&c->job, pool, d, po, run_key, heartbeat,
			       coord_log, (void *)c->cmd, &err))
		return cli_fail(&err);
	return 0;
}

const char *cli_cluster_resume_prefix(const struct cli_cluster *c, char *buf,
				      size_t cap)
{
	struct cfl_launch l;

	buf[0] = '\0';
	if (c->backend != CFL_BACKEND_MPI || !c->job.mpi.initialized)
		return buf;
	cfl_launch_detect(&l, env_get);
	snprintf(buf, cap, "%s -n %d ", l.launcher ? l.launcher : "mpirun",
		 c->job.mpi.size);
	return buf;
}

void cli_cluster_stop(struct cli_cluster *c)
{
	cfl_mpi_job_release(&c->job);
}
