/*
 * The backend of repeat and tune (see cluster.h): --backend, detection of
 * mpirun and srun, and the start of the MPI backend.  Rank 0's coordinator
 * sees each worker rank as a pool peer (cfl_mpi_attach); a worker rank's
 * child serves rank 0 with the relay (relay.h), as `cfl worker` does over
 * TCP but without reconnecting.  No trial ever runs in a process that
 * called MPI, and nothing here includes mpi.h.
 */
#include "cluster.h"
#include "remote.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cfl/net.h"
#include "cfl/relay.h"
#include "cfl/wire.h"

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
	if (c->mpi.rank == 0)
		snprintf(g_stop_msg, sizeof(g_stop_msg), "cfl %s: the MPI job is "
			 "ending (a rank was lost, or the job was stopped); every "
			 "result so far is stored: run the same command with "
			 "--resume NAME to finish it\n", cmd);
	cli_catch_stop(on_pump_signal, SA_RESTART, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = cfl_mpi_bridge(&c->mpi, c->fds, child, 10, &g_stop, &status, &err);
	if (r < 0) {
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->mpi.rank, err.msg);
		kill(child, SIGTERM);
		cfl_mpi_abort(&c->mpi, CLI_FAIL);
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
		cfl_mpi_abort(&c->mpi, code);
	}
	if (r == 0 && cfl_mpi_finalize(&c->mpi, &err) < 0)
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->mpi.rank, err.msg);
	/* stopped by a signal (the job is being killed, a rank was lost): the
	 * other ranks may be gone, so no MPI_Finalize that would wait on them */
	fflush(NULL);
	_exit(code);
}

/* ---- a worker rank's child: serves rank 0 with the relay ---- */

static struct cfl_relay *g_relay;

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

static int run_worker(struct cli_cluster *c, const char *cmd, long jobs,
		      const struct cfl_buf *blob)
{
	struct cfl_relay_opts o;
	struct cfl_fd_link link;
	struct cfl_data data;
	struct cfl_err err;
	char host[64], name[64], prefix[160];
	int r;

	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = 0;
	snprintf(name, sizeof(name), "rank %d (%.40s)", c->mpi.rank, host);
	snprintf(prefix, sizeof(prefix), "cfl %s: %s", cmd, name);
	cfl_fd_link_init(&link, c->fds[0]);
	/* the parts rank 0 loaded and broadcast: nothing to parse here */
	if (cfl_data_unpack_parts(&data, blob->data, blob->len, &err)) {
		struct cfl_wire_msg m;

		fprintf(stderr, "%s: %s\n", prefix, err.msg);
		/* tell rank 0, so the run does not wait for this rank's slots */
		cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
		m.u.error.code = CFL_WIRE_E_DATA;
		m.u.error.message = err.msg;
		cfl_fd_link_relay(&link).ops->send(&link, &m, 2, &err);
		return CLI_FAIL;
	}
	cfl_mpi_widen_affinity(jobs);
	cfl_relay_opts_init(&o);
	o.name = name;
	o.peer = "rank 0";
	o.n_slots = (size_t)jobs;
	/* rank 0 is the user's own process, started with this rank by the
	 * user's launcher: its --command trials may run here */
	o.allow_commands = 1;
	o.data = &data;
	o.data_size = blob->len;
	o.log = worker_log;
	o.log_ctx = prefix;
	g_relay = cfl_relay_new(&o, &err);
	if (!g_relay) {
		fprintf(stderr, "%s: %s\n", prefix, err.msg);
		cfl_data_release(&data);
		return CLI_FAIL;
	}
	cli_catch_stop(on_worker_signal, SA_RESTART, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = cfl_relay_serve(g_relay, cfl_fd_link_relay(&link), &err);
	/* a lost rank 0 said why itself */
	if (r < 0)
		fprintf(stderr, "%s: %s\n", prefix, err.msg);
	cfl_relay_free(g_relay);
	g_relay = NULL;
	cfl_data_release(&data);
	return r == CFL_RELAY_OVER ? CLI_OK : CLI_FAIL;
}

/* ---- start ---- */

/* Rank 0 loads the dataset in a thread while MPI starts (both take about
 * as long); the thread is joined before anything forks. */
struct load_job {
	struct cfl_data *data;
	const struct cfl_data_opts *opts;
	struct cfl_err err;
	int rc;
};

static void *load_thread(void *arg)
{
	struct load_job *j = arg;

	j->rc = cfl_data_load(j->data, j->opts, &j->err);
	return NULL;
}

/* The load is not wanted after all: waits for it and frees what it read;
 * *threaded is cleared. */
static void load_abandon(pthread_t *th, struct load_job *j, int *threaded)
{
	if (!*threaded)
		return;
	pthread_join(*th, NULL);
	if (!j->rc)
		cfl_data_release(j->data);
	*threaded = 0;
}

/* Rank 0: loads the data (or takes the thread's load), packs its parts
 * into blob for the broadcast (a command without data sends empty parts)
 * and their SHA-256 into blob_sha.  On failure prints why and marks the
 * blob too big, which tells the other ranks that nothing follows. */
static void rank0_blob(struct cli_cluster *c, const struct cfl_data_opts *d,
		       struct cfl_data *data, struct load_job *job,
		       pthread_t *th, struct cfl_buf *blob,
		       unsigned char blob_sha[32])
{
	struct cfl_data none;
	struct cfl_err err;

	if (data) {
		if (th)
			pthread_join(*th, NULL);
		else
			job->rc = cfl_data_load(data, d, &job->err);
		if (job->rc) {
			cli_fail(&job->err);
			blob->len = CFL_MPI_MAX_BLOB + 1;
			return;
		}
		c->data_loaded = 1;
	} else {
		memset(&none, 0, sizeof(none));
	}
	if (cfl_data_pack_parts(data ? data : &none, blob, &err)) {
		cli_fail(&err);
		blob->len = CFL_MPI_MAX_BLOB + 1;
		return;
	}
	memcpy(c->coord.sha256, data ? data->sha256 : none.sha256, 32);
	cfl_net_sha256(blob->data, blob->len, blob_sha);
}

int cli_cluster_start(struct cli_cluster *c, const char *cmd,
		      const struct cfl_data_opts *d, struct cfl_data *data,
		      int has_listen, long *num_jobs, int num_jobs_set)
{
	struct cfl_launch l;
	struct cfl_err err;
	struct cfl_buf blob;
	struct load_job job;
	unsigned char blob_sha[32] = { 0 };
	pthread_t th;
	int detected = 0, threaded = 0;
	long jobs;
	pid_t pid;

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
	/* rank 0 (known from the launcher's environment) starts loading */
	memset(&job, 0, sizeof(job));
	job.data = data;
	job.opts = d;
	if (data && l.launcher && l.rank == 0)
		threaded = pthread_create(&th, NULL, load_thread, &job) == 0;
	if (cfl_mpi_init(&c->mpi, &err)) {
		fprintf(stderr, "cfl %s: %s\n", cmd, err.msg);
		load_abandon(&th, &job, &threaded);
		return CLI_FAIL;
	}
	if (detected && c->mpi.rank == 0)
		fprintf(stderr, "cfl %s: started by %s with %d ranks: using the mpi "
			"backend (rank 0 coordinates; --backend local to run "
			"each rank alone)\n", cmd, l.launcher, c->mpi.size);
	/* a rank numbered differently by MPI than by its environment */
	if (c->mpi.rank != 0)
		load_abandon(&th, &job, &threaded);
	if (c->mpi.size < 2) {
		if (c->mpi.rank == 0)
			fprintf(stderr, "cfl %s: the mpi backend needs 2 ranks or more "
				"(a coordinator and workers), this job has %d; start "
				"it with e.g. mpirun -n 3\n", cmd, c->mpi.size);
		load_abandon(&th, &job, &threaded);
		cfl_mpi_finalize(&c->mpi, NULL);
		return CLI_USAGE;
	}
	/* the encoded parts, once, from rank 0: no other rank reads DATA */
	cfl_buf_init(&blob);
	if (c->mpi.rank == 0)
		rank0_blob(c, d, data, &job, threaded ? &th : NULL, &blob, blob_sha);
	if (cfl_mpi_bcast_blob(&c->mpi, &blob, blob_sha, &err)) {
		if (c->mpi.rank == 0 && blob.len <= CFL_MPI_MAX_BLOB)
			fprintf(stderr, "cfl %s: %s\n", cmd, err.msg);
		else if (c->mpi.rank != 0 && !strstr(err.msg, "rank 0 could not"))
			fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->mpi.rank, err.msg);
		if (c->data_loaded) {
			cfl_data_release(data);
			c->data_loaded = 0;
		}
		cfl_buf_release(&blob);
		cfl_mpi_finalize(&c->mpi, NULL);
		return CLI_FAIL;
	}
	c->coord.data_size = blob.len;
	jobs = num_jobs_set ? *num_jobs
	       : cfl_backend_default_jobs(sysconf(_SC_NPROCESSORS_ONLN),
					  c->mpi.local_size);
	if (jobs < 1)
		jobs = 1;
	if (cfl_mpi_fork_role(&c->mpi, &c->fds, &pid, &err)) {
		fprintf(stderr, "cfl %s: rank %d: %s\n", cmd, c->mpi.rank, err.msg);
		cfl_mpi_abort(&c->mpi, CLI_FAIL);
	}
	if (pid > 0) {
		/* the pump needs neither the data nor the blob */
		cfl_buf_release(&blob);
		if (c->data_loaded)
			cfl_data_release(data);
		pump_and_exit(c, cmd, pid);	/* never returns */
	}
	if (c->mpi.rank == 0) {
		/* the coordinator: runs no trial itself */
		cfl_buf_release(&blob);
		*num_jobs = 0;
		return -1;
	}
	{
		int rc = run_worker(c, cmd, jobs, &blob);

		cfl_buf_release(&blob);
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
	struct cfl_buf config;
	struct cfl_err err;

	if (c->backend != CFL_BACKEND_MPI || !c->fds)
		return 0;
	cfl_buf_init(&config);
	if (cfl_run_config_format(&config, run_key, d, po, &err)) {
		cfl_buf_release(&config);
		return cli_fail(&err);
	}
	c->config = config.data;	/* owned now */
	c->coord.config = c->config;
	c->coord.heartbeat = heartbeat;
	c->coord.log = coord_log;
	c->coord.log_ctx = (void *)c->cmd;
	if (cfl_mpi_attach(&c->coord, pool, c->fds, c->mpi.size, &err))
		return cli_fail(&err);
	return 0;
}

const char *cli_cluster_resume_prefix(const struct cli_cluster *c, char *buf,
				      size_t cap)
{
	struct cfl_launch l;

	buf[0] = '\0';
	if (c->backend != CFL_BACKEND_MPI || !c->mpi.initialized)
		return buf;
	cfl_launch_detect(&l, env_get);
	snprintf(buf, cap, "%s -n %d ", l.launcher ? l.launcher : "mpirun",
		 c->mpi.size);
	return buf;
}

void cli_cluster_stop(struct cli_cluster *c)
{
	if (c->fds) {
		for (int r = 0; r < c->mpi.size; r++)
			if (c->fds[r] >= 0)
				close(c->fds[r]);
		free(c->fds);
		c->fds = NULL;
	}
	free(c->config);
	c->config = NULL;
	c->coord.pool = NULL;
}
