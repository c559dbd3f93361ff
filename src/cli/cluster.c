/*
 * The backend of repeat and tune (see cluster.h): --backend, detection of
 * mpirun and srun, and the MPI backend's two ends.  Rank 0's coordinator
 * sees each worker rank as a pool peer on a socket; a worker rank's child
 * serves that socket with a local fork pool, as `cfl worker` does over TCP
 * but without reconnecting (a lost rank ends an MPI job; --resume finishes
 * the run).  No trial ever runs in a process that called MPI, and nothing
 * here includes mpi.h.
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

/* ---- a worker rank's child: serves rank 0 with a local pool ---- */

struct mworker {
	int fd;
	char name[64];
	struct cfl_buf in;
	struct cfl_pool *pool;
	struct cfl_data data;
	struct cfl_run_config cfg;
	int have_data, have_cfg;
	struct { int64_t local, trial; uint32_t attempt; } *map;
	size_t n_map, cap_map;
	int64_t next_local;
	int shutdown, gone, fatal;
	size_t n_done;
};

static struct mworker *g_mw;

/* Children of the local pool must not hold rank 0's socket.  Forgotten
 * once closed: the handler runs again in every fork below (a --command
 * trial forks its program), where the number may be another file's. */
static void atfork_child(void)
{
	if (g_mw && g_mw->fd >= 0) {
		close(g_mw->fd);
		g_mw->fd = -1;
	}
}

static void on_worker_signal(int sig)
{
	(void)sig;
	if (g_mw && g_mw->pool)
		cfl_pool_interrupt(g_mw->pool);
	if (g_mw)
		g_mw->gone = 1;
}

/* Writes a whole message, waiting for the socket as needed. */
static int mw_send(struct mworker *w, const struct cfl_wire_msg *m,
		   struct cfl_err *err)
{
	struct cfl_buf b;
	size_t off = 0;
	int rc = 0;

	cfl_buf_init(&b);
	if (cfl_wire_encode(&b, 0, 0, m, err))
		return -1;
	while (off < b.len) {
		ssize_t n = send(w->fd, b.data + off, b.len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd p = { w->fd, POLLOUT, 0 };

			poll(&p, 1, 1000);
		} else {
			rc = cfl_err_set(err, "lost rank 0: %s",
					 n < 0 ? strerror(errno) : "closed");
			w->gone = 1;
			break;
		}
	}
	cfl_buf_release(&b);
	return rc;
}

static int mw_submit(struct mworker *w, const struct cfl_wire_lease *l,
		     struct cfl_err *err)
{
	struct cfl_trial_spec spec;

	if (w->n_map == w->cap_map) {
		size_t cap = w->cap_map ? 2 * w->cap_map : 64;
		void *p = cfl_realloc(w->map, cap * sizeof(*w->map), err);

		if (!p)
			return -1;
		w->map = p;
		w->cap_map = cap;
	}
	cfl_trial_spec_from_lease(&spec, l, ++w->next_local);
	if (cfl_pool_submit(w->pool, &spec, err))
		return -1;
	w->map[w->n_map].local = spec.trial_id;
	w->map[w->n_map].trial = l->trial_id;
	w->map[w->n_map].attempt = l->attempt;
	w->n_map++;
	return 0;
}

/* Rank 0 failed lease (trial, attempt) at its --trial-timeout: stop the
 * local trial now, so its slot serves the next lease, and forget it, so no
 * RESULT goes for it.  A lease not running here (done, unknown, another
 * attempt) is left as it is. */
static int mw_cancel(struct mworker *w, int64_t trial, uint32_t attempt,
		     struct cfl_err *err)
{
	for (size_t i = 0; i < w->n_map; i++) {
		int r;

		if (w->map[i].trial != trial || w->map[i].attempt != attempt)
			continue;
		r = cfl_pool_cancel(w->pool, w->map[i].local, err);
		if (r == 1)
			w->map[i] = w->map[--w->n_map];
		return r < 0 ? -1 : 0;
	}
	return 0;
}

/* Decodes and handles every whole frame in w->in.  Before the pool exists
 * only WELCOME (or ERROR) is expected; *welcome receives it. */
static int mw_frames(struct mworker *w, struct cfl_wire_msg *welcome,
		     struct cfl_err *err)
{
	size_t pos = 0;
	int rc = 0;

	while (pos < w->in.len && !rc) {
		struct cfl_wire_frame f;
		struct cfl_wire_msg m;
		int r = cfl_wire_decode(w->in.data + pos, w->in.len - pos, &f, &m, err);

		if (r == 1)
			break;
		if (r < 0) {
			rc = cfl_err_prefix(err, "a bad frame from rank 0");
			break;
		}
		pos += f.size;
		switch (m.type) {
		case CFL_WIRE_WELCOME:
			if (welcome && !welcome->type) {
				*welcome = m;	/* the caller owns it now */
				memset(&m, 0, sizeof(m));
				rc = 1;	/* leases after it wait for the pool */
			} else {
				rc = cfl_err_set(err, "a second WELCOME from rank 0");
			}
			break;
		case CFL_WIRE_LEASE:
			if (!w->pool)
				rc = cfl_err_set(err, "a LEASE before WELCOME");
			else
				rc = mw_submit(w, &m.u.lease, err);
			break;
		case CFL_WIRE_SHUTDOWN:
			w->shutdown = 1;
			break;
		case CFL_WIRE_ERROR:
			rc = cfl_err_set(err, "rank 0 refused this worker: %s",
					 m.u.error.message);
			break;
		case CFL_WIRE_HEARTBEAT:
			/* rank 0 drops a rank that stops answering */
			rc = mw_send(w, &m, err);
			break;
		case CFL_WIRE_CANCEL:
			if (w->pool)
				rc = mw_cancel(w, m.u.cancel.trial_id,
					       m.u.cancel.attempt, err);
			break;
		case CFL_WIRE_RESULT_ACK:
			break;
		default:
			rc = cfl_err_set(err, "an unexpected %s from rank 0",
					 cfl_wire_type_name(m.type));
			break;
		}
		cfl_wire_msg_release(&m);
	}
	if (pos) {
		memmove(w->in.data, w->in.data + pos, w->in.len - pos);
		w->in.len -= pos;
	}
	return rc < 0 ? -1 : 0;
}

/* Reads what rank 0 sent without blocking (EOF: w->gone). */
static int mw_read(struct mworker *w, struct cfl_err *err)
{
	for (;;) {
		ssize_t n;

		if (cfl_buf_reserve(&w->in, 65536))
			return cfl_err_set(err, "out of memory");
		n = recv(w->fd, w->in.data + w->in.len, 65536, MSG_DONTWAIT);
		if (n > 0) {
			w->in.len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		w->gone = 1;
		return 0;
	}
}

static int mw_on_ready(struct cfl_pool *p, void *ctx, struct cfl_err *err)
{
	struct mworker *w = ctx;
	struct cfl_err e;

	(void)p;
	(void)err;
	if (mw_read(w, &e) || mw_frames(w, NULL, &e)) {
		fprintf(stderr, "cfl: %s: %s\n", w->name, e.msg);
		w->fatal = 1;
		cfl_pool_interrupt(w->pool);
	}
	if (w->gone || w->shutdown)
		cfl_pool_interrupt(w->pool);
	return 0;
}

/* A finished local trial: its RESULT for rank 0. */
static int mw_event(struct mworker *w, const struct cfl_pool_event *ev,
		    struct cfl_err *err)
{
	struct cfl_wire_msg m;
	int64_t trial = 0;
	uint32_t attempt = 0;

	for (size_t i = 0; i < w->n_map; i++)
		if (w->map[i].local == ev->trial_id) {
			trial = w->map[i].trial;
			attempt = w->map[i].attempt;
			w->map[i] = w->map[--w->n_map];
			break;
		}
	if (!trial)
		return 0;
	w->n_done++;
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	if (ev->status == CFL_TRIAL_DONE && ev->result) {
		m.u.result = *ev->result;	/* borrowed: not released */
	} else {
		/* the local pool makes a crashed trial process POISON (no local
		 * retries) and a model error FAILED: rank 0 retries the first
		 * and counts it toward poison, as for its own workers */
		m.u.result.status = ev->status == CFL_TRIAL_POISON ? CFL_RESULT_CRASHED
								   : CFL_RESULT_MODEL_ERROR;
		m.u.result.error = (char *)(ev->reason ? ev->reason
					    : "failed on the worker");
	}
	m.u.result.trial_id = trial;
	m.u.result.attempt = attempt;
	return mw_send(w, &m, err);
}

/* A rank bound to fewer cores than its workers (mpirun binds ranks when
 * it does not oversubscribe) would run them all on those cores. */
static void widen_affinity(long jobs)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) >= jobs)
		return;
	CPU_ZERO(&set);
	for (long i = 0; i < n && i < CPU_SETSIZE; i++)
		CPU_SET((int)i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int run_worker(struct cli_cluster *c, const char *cmd, long jobs,
		      const struct cfl_buf *blob, int quiet)
{
	static struct mworker w;
	struct cfl_wire_msg m, welcome;
	struct cfl_pool_opts po;
	struct cfl_err err;
	char host[64];
	int rc = CLI_FAIL;

	memset(&w, 0, sizeof(w));
	memset(&welcome, 0, sizeof(welcome));
	cfl_buf_init(&w.in);
	w.fd = c->fds[0];
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = 0;
	snprintf(w.name, sizeof(w.name), "rank %d (%.40s)", c->mpi.rank, host);
	g_mw = &w;
	pthread_atfork(NULL, NULL, atfork_child);
	cli_catch_stop(on_worker_signal, SA_RESTART, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* the parts rank 0 loaded and broadcast: nothing to parse here */
	if (cfl_data_unpack_parts(&w.data, blob->data, blob->len, &err))
		goto fail;
	w.have_data = 1;
	/* HELLO, then wait for WELCOME */
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION;
	m.u.hello.n_slots = (uint32_t)jobs;
	m.u.hello.name = w.name;
	if (mw_send(&w, &m, &err))
		goto fail;
	while (!welcome.type) {
		struct pollfd p = { w.fd, POLLIN, 0 };

		if (poll(&p, 1, 1000) < 0 && errno != EINTR) {
			cfl_err_set(&err, "poll: %s", strerror(errno));
			goto fail;
		}
		if (mw_read(&w, &err) || mw_frames(&w, &welcome, &err))
			goto fail;
		if (w.shutdown && !welcome.type) {
			rc = CLI_OK;	/* the run ended before we joined */
			goto out;
		}
		if (w.gone && !welcome.type)
			goto out;	/* rank 0 stopped early and said why */
	}
	if (memcmp(welcome.u.welcome.data_sha256, w.data.sha256, 32) ||
	    welcome.u.welcome.data_size != blob->len) {
		cfl_err_set(&err, "rank 0 serves another dataset than it broadcast "
			    "(the file changed?)");
		goto fail;
	}
	w.have_cfg = 1;
	if (cfl_run_config_parse(&w.cfg, welcome.u.welcome.config, &err))
		goto fail;
	widen_affinity(jobs);

	cfl_pool_opts_init(&po);
	po.data = &w.data;
	po.n_local = (size_t)jobs;
	po.threads_per_trial = w.cfg.threads;
	po.max_retries = 0;	/* rank 0 decides on retries */
	/* rank 0 is the user's own process, started with this rank by the
	 * user's launcher: its --command trials may run here */
	po.allow_commands = 1;
	/* a hung trial is failed and CANCELled by rank 0 at its
	 * --trial-timeout, which kills its process here at once; this later
	 * timeout is only a safety net */
	if (w.cfg.trial_timeout > 0)
		po.trial_timeout = w.cfg.trial_timeout * 1.1 + 1;
	po.commit_interval = 0;
	po.tick = 0;
	po.n_metrics = w.cfg.n_metrics;
	memcpy(po.metrics, w.cfg.metrics, sizeof(po.metrics));
	w.pool = cfl_pool_new(&po, &err);
	if (!w.pool || cfl_pool_add_source(w.pool, w.fd, mw_on_ready, &w, &err))
		goto fail;
	if (!quiet)
		fprintf(stderr, "cfl %s: %s: %ld local workers\n", cmd, w.name, jobs);
	/* leases that came with WELCOME */
	if (mw_frames(&w, NULL, &err))
		goto fail;
	while (!w.shutdown && !w.gone && !w.fatal) {
		struct cfl_pool_event ev;
		int r = cfl_pool_wait(w.pool, &ev, &err);

		if (r < 0)
			goto fail;
		if (r == CFL_POOL_INTERRUPTED)
			break;
		if (r == CFL_POOL_EVENT && mw_event(&w, &ev, &err))
			goto fail;
		if (r == CFL_POOL_IDLE) {
			/* nothing to run: wait for rank 0 */
			struct pollfd p = { w.fd, POLLIN, 0 };

			if (poll(&p, 1, 200) > 0)
				mw_on_ready(w.pool, &w, &err);
		}
	}
	if (w.fatal)
		goto out;
	rc = w.shutdown ? CLI_OK : CLI_FAIL;
	if (!w.shutdown && !quiet)
		fprintf(stderr, "cfl %s: %s: rank 0 is gone\n", cmd, w.name);
	goto out;
fail:
	fprintf(stderr, "cfl %s: %s: %s\n", cmd, w.name, err.msg);
	/* tell rank 0, so the run does not wait for this rank's slots */
	cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
	m.u.error.code = CFL_WIRE_E_DATA;
	m.u.error.message = err.msg;
	if (!w.gone)
		mw_send(&w, &m, NULL);
out:
	g_mw = NULL;
	cfl_pool_close(w.pool, NULL);
	cfl_wire_msg_release(&welcome);
	if (w.have_data)
		cfl_data_release(&w.data);
	if (w.have_cfg)
		cfl_run_config_release(&w.cfg);
	cfl_buf_release(&w.in);
	free(w.map);
	return rc;
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
	memcpy(c->sha256, data ? data->sha256 : none.sha256, 32);
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
	int detected = 0, quiet, threaded = 0;
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
	quiet = c->mpi.rank != 0;
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
	c->data_size = blob.len;
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
		int rc = run_worker(c, cmd, jobs, &blob, quiet);

		cfl_buf_release(&blob);
		fflush(NULL);
		_exit(rc);
	}
}

/* ---- rank 0: worker ranks as pool peers ---- */

struct mpeer {
	struct cli_cluster *c;
	int rank;
	int hello;
};

static int mpi_on_frame(struct cfl_peer *peer, const struct cfl_wire_frame *f,
			struct cfl_err *err)
{
	struct mpeer *mp = peer->impl;
	struct cfl_wire_msg w;

	if (!mp || f->type != CFL_WIRE_HELLO)
		return 0;
	if (mp->hello)
		return cfl_err_set(err, "a second HELLO from rank %d", mp->rank);
	mp->hello = 1;
	cfl_wire_msg_init(&w, CFL_WIRE_WELCOME);
	w.u.welcome.proto = CFL_WIRE_VERSION;
	/* HEARTBEATs come every heartbeat_ms; the worker echoes them */
	w.u.welcome.heartbeat_ms = (uint32_t)(mp->c->heartbeat * 1000);
	memcpy(w.u.welcome.data_sha256, mp->c->sha256, 32);
	w.u.welcome.data_size = mp->c->data_size;
	w.u.welcome.config = mp->c->config;
	if (cfl_peer_send(peer, &w, err))
		return -1;
	return 0;	/* the pool takes the slots from HELLO */
}

static void mpi_kill(struct cfl_peer *peer)
{
	shutdown(peer->fd, SHUT_RDWR);
}

static void mpi_reap(struct cfl_peer *peer, char *reason, size_t cap)
{
	struct mpeer *mp = peer->impl;
	int mid_run = reason[0] != '\0';	/* "" when the pool closes */

	if (!mp)
		return;
	if (!strncmp(reason, "no word", 7))
		fprintf(stderr, "cfl %s: worker rank %d stopped answering (%s); its "
			"trials go to the other ranks\n", mp->c->cmd, mp->rank,
			reason);
	snprintf(reason, cap, "MPI rank %d lost", mp->rank);
	if (mp->c->n_alive)
		mp->c->n_alive--;
	if (!mp->c->n_alive && mid_run && mp->c->pool) {
		/* no one is left to run the rest (the ranks were dropped for
		 * silence: a lost rank would have ended the job) */
		fprintf(stderr, "cfl %s: every worker rank stopped answering\n",
			mp->c->cmd);
		cfl_pool_interrupt(mp->c->pool);
	}
	free(mp);
	peer->impl = NULL;
}

static const struct cfl_peer_ops mpi_ops = {
	.kind = "mpi",
	.on_frame = mpi_on_frame,
	.kill = mpi_kill,
	.reap = mpi_reap,
	.kill_on_timeout = 0,
	.runs_commands = 1,	/* ranks are the user's own processes */
};

int cli_cluster_attach(struct cli_cluster *c, struct cfl_pool *pool,
		       const struct cfl_data_opts *d,
		       const struct cfl_pool_opts *po, const char *run_key,
		       double heartbeat)
{
	struct cfl_peer *peer;
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
	c->pool = pool;
	c->heartbeat = heartbeat;
	for (int r = 1; r < c->mpi.size; r++) {
		struct mpeer *mp = cfl_calloc(1, sizeof(*mp), &err);
		char name[64];

		if (!mp)
			return cli_fail(&err);
		mp->c = c;
		mp->rank = r;
		snprintf(name, sizeof(name), "rank:%d", r);
		peer = cfl_pool_add_peer(pool, c->fds[r], &mpi_ops, mp, 0, name, &err);
		if (!peer) {
			free(mp);
			return cli_fail(&err);
		}
		/* a stopped or hung rank is dropped and its trials requeued,
		 * as a silent TCP worker is */
		peer->heartbeat = heartbeat;
		peer->silence = 5 * heartbeat;
		c->fds[r] = -1;	/* the pool closes it */
		c->n_alive++;
	}
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
	c->pool = NULL;
}
