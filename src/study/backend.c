/*
 * Where a run's trials execute (cfl_study_run's step 1 and 4): the local
 * fork pool, remote `cfl worker`s on --listen (TLS 1.3 keyed by a token
 * file), or the ranks of mpirun or srun.  Under MPI every rank runs the same
 * command line: rank 0's child is the coordinator (the only process that
 * opens the store), each other rank's child serves it with its own fork
 * pool (cfl_mpi_serve), and each rank's MPI process only pumps frames
 * (cfl_mpi_bridge).  The jobs themselves are the run module's (backend.h,
 * net.h); here are the choice, the signals of the pump and the worker, and
 * what a person is told, as CFL_STUDY_LOG events.  Never prints.
 */
#include "internal.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cfl/relay.h"

const char cfl_study_resume_msg[] =
	"with the mpi backend, --resume NAME needs DATA and the run's options "
	"again when cfl cannot tell the ranks apart before MPI starts (a "
	"launcher other than mpirun or srun): only rank 0 may open the database";

static const char *env_get(const char *name)
{
	return getenv(name);
}

long cfl_study_launch_rank(enum cfl_backend backend)
{
	struct cfl_launch l;

	cfl_launch_detect(&l, env_get);
	if (backend == CFL_BACKEND_AUTO ? !l.launcher : backend != CFL_BACKEND_MPI)
		return -1;
	return l.launcher ? l.rank : -2;
}

long cfl_study_launched_rank(void)
{
	struct cfl_launch l;

	cfl_launch_detect(&l, env_get);
	return l.launcher && l.rank > 0 ? l.rank : 0;
}

/* A CFL_STUDY_LOG event. */
static void say(const struct study_backend *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const struct study_backend *b, const char *fmt, ...)
{
	struct cfl_study_event ev;
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_LOG;
	ev.text = text;
	cfl_study_emit(b->ls, &ev);
}

static void log_line(void *ctx, const char *msg)
{
	say(ctx, "%s", msg);
}

/* ---- the checks, before anything starts ---- */

int study_backend_check(struct study_backend *b, const struct cfl_study_exec *x,
			int *usage, struct cfl_err *err)
{
	char host[256];
	int port;

	b->lfd = -1;
	*usage = 1;
	if (!x->listen) {
		if (x->token_file)
			return cfl_err_set(err, "--token-file needs --listen");
		return 0;
	}
	if (cfl_net_parse_hostport(x->listen, host, sizeof(host), &port, err))
		return cfl_err_prefix(err, "--listen");
	if (!x->token_file && !cfl_net_is_loopback(host))
		return cfl_err_set(err, "--listen %s: a non-loopback address needs "
				   "--token-file (or listen on 127.0.0.1 and use an "
				   "SSH tunnel)", x->listen);
	*usage = 0;
	if (x->token_file && cfl_token_load(&b->token, x->token_file, err))
		return -1;
	return 0;
}

/* ---- the MPI process of a rank: pump until the child is done ---- */

static volatile sig_atomic_t g_stop;
static volatile pid_t g_child;
static const char *g_stop_note;	/* rank 0 says it at once: the job may
				 * be killed before the coordinator is done */

static void on_pump_signal(int sig)
{
	if (!g_stop && g_stop_note) {
		ssize_t n = write(2, g_stop_note, strlen(g_stop_note));

		(void)n;
	}
	g_stop = 1;
	if (g_child > 0)
		kill(g_child, sig);
}

static void catch_stop(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The exit code of the rank's MPI process. */
static int pump(struct study_backend *b, const char *stop_note)
{
	struct cfl_mpi *m = &b->job.mpi;
	struct cfl_err err;
	int status = 0, code, r;

	g_child = b->job.child;
	g_stop_note = m->rank == 0 ? stop_note : NULL;
	catch_stop(on_pump_signal);
	r = cfl_mpi_bridge(m, b->job.fds, b->job.child, 10, &g_stop, &status, &err);
	if (r < 0) {
		say(b, "rank %d: %s", m->rank, err.msg);
		kill(b->job.child, SIGTERM);
		cfl_mpi_abort(m, 1);
	}
	code = WIFEXITED(status) ? WEXITSTATUS(status)
	       : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	if (r == 2) {
		/* the run is over and stored; only the job's end is left.  Never
		 * MPI_Abort(0): Open MPI 4.1's mpirun then fails to print its
		 * banner and can hang; the job did not end cleanly anyway */
		if (code == 0)
			code = 1;
		say(b, "%s; every result is stored; ending the MPI job with "
		    "MPI_Abort (exit code %d)", err.msg, code);
		fflush(NULL);
		cfl_mpi_abort(m, code);
	}
	/* stopped by a signal (the job is being killed, a rank was lost): the
	 * other ranks may be gone, so no MPI_Finalize that would wait on them */
	if (r == 0 && cfl_mpi_finalize(m, &err) < 0)
		say(b, "rank %d: %s", m->rank, err.msg);
	return code;
}

/* ---- a worker rank's child: serves rank 0 with the relay ---- */

static struct cfl_relay *volatile g_relay;

static void on_worker_signal(int sig)
{
	(void)sig;
	cfl_relay_interrupt(g_relay);
}

/* Worker ranks are quiet: only what went wrong is told. */
static void worker_log(void *ctx, int important, const char *msg)
{
	const struct study_backend *b = ctx;

	if (important)
		say(b, "%s: %s", b->rank_name, msg);
}

static int serve(struct study_backend *b)
{
	struct cfl_err err;
	char host[64];
	int r;

	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = 0;
	snprintf(b->rank_name, sizeof(b->rank_name), "rank %d (%.40s)",
		 b->job.mpi.rank, host);
	catch_stop(on_worker_signal);
	r = cfl_mpi_serve(&b->job, b->rank_name, worker_log, b, &g_relay, &err);
	/* a lost rank 0 said why itself */
	if (r < 0)
		say(b, "%s: %s", b->rank_name, err.msg);
	return r == CFL_RELAY_OVER ? 0 : 1;
}

/* ---- start ---- */

int study_backend_start(struct study_backend *b, struct cfl_study_plan *p,
			struct cfl_data *data, const char *stop_note,
			struct cfl_study_outcome *out, struct cfl_err *err)
{
	struct cfl_study_exec *x = &p->exec;
	struct cfl_launch l;
	int detected = 0, role, listen = x->listen != NULL;

	cfl_launch_detect(&l, env_get);
	if (cfl_backend_choose(x->backend, &l, listen, &b->backend, &detected, err)) {
		if (x->backend == CFL_BACKEND_MPI)
			return CFL_STUDY_RUN_USAGE;
		out->err_how = CFL_STUDY_SAY_CMD;
		return CFL_STUDY_RUN_FAILED;
	}
	if (b->backend == CFL_BACKEND_TCP && !listen) {
		cfl_err_set(err, "--backend tcp needs --listen ADDR:PORT");
		return CFL_STUDY_RUN_USAGE;
	}
	if (b->backend != CFL_BACKEND_MPI)
		return -1;
	if (listen) {
		cfl_err_set(err, "--listen and the mpi backend do not mix (use "
			    "--backend local with --listen)");
		return CFL_STUDY_RUN_USAGE;
	}
	role = cfl_mpi_job_start(&b->job, &l, &p->data, data,
				 x->n_local_set ? (long)x->pool.n_local : 0, err);
	/* said once on rank 0 (by its MPI process, not its child), whenever MPI
	 * started */
	if (detected && b->job.mpi.size > 0 && b->job.mpi.rank == 0 &&
	    (role == CFL_MPI_PUMP || role < 0))
		say(b, "started by %s with %d ranks: using the mpi backend (rank 0 "
		    "coordinates; --backend local to run each rank alone)",
		    l.launcher, b->job.mpi.size);
	if (role < 0) {
		out->err_how = CFL_STUDY_SAY_CMD;
		switch (b->job.fail) {
		case CFL_MPI_FAIL_SAY:
			break;
		case CFL_MPI_FAIL_RANK:
			cfl_err_prefix(err, "rank %d", b->job.mpi.rank);
			break;
		case CFL_MPI_FAIL_DATA:
			out->err_how = CFL_STUDY_SAY_PLAIN;
			break;
		case CFL_MPI_FAIL_SIZE:
			if (b->job.mpi.rank != 0)
				out->err_how = CFL_STUDY_SAY_NOTHING;
			return CFL_STUDY_RUN_USAGE;
		case CFL_MPI_FAIL_ABORT:
			say(b, "rank %d: %s", b->job.mpi.rank, err->msg);
			cfl_mpi_abort(&b->job.mpi, 1);
			out->err_how = CFL_STUDY_SAY_NOTHING;
			break;
		default:
			out->err_how = CFL_STUDY_SAY_NOTHING;
			break;
		}
		return CFL_STUDY_RUN_FAILED;
	}
	if (role == CFL_MPI_PUMP) {
		out->exit_code = pump(b, stop_note);
		return CFL_STUDY_RUN_RANK;
	}
	if (role == CFL_MPI_WORKER) {
		out->exit_code = serve(b);
		cfl_mpi_job_release(&b->job);
		return CFL_STUDY_RUN_RANK;
	}
	/* the coordinator runs no trial itself */
	b->data_loaded = b->job.data_loaded;
	x->pool.n_local = 0;
	snprintf(out->launcher, sizeof(out->launcher), "%s -n %d ",
		 l.launcher ? l.launcher : "mpirun", b->job.mpi.size);
	return -1;
}

/* ---- remote workers: listen early, serve once the pool exists ---- */

int study_backend_bind(struct study_backend *b, const struct cfl_study_exec *x,
		       struct cfl_err *err)
{
	char host[256];
	int port;

	if (!x->listen || b->lfd >= 0)
		return 0;
	b->lfd = cfl_tcp_bind(x->listen, x->token_file ? &b->token : NULL,
			      &b->port, err);
	if (b->lfd < 0)
		return -1;
	cfl_net_parse_hostport(x->listen, host, sizeof(host), &port, err);
	/* the exact line to paste elsewhere (always told: it is how a user or
	 * a script learns the port) */
	{
		struct cfl_buf tok;	/* shell-quoted: the line is pasted */

		cfl_buf_init(&tok);
		if (x->token_file && cfl_buf_shell_word(&tok, x->token_file))
			tok.len = 0;
		say(b, "listening for workers; start them with:\n"
		    "  cfl worker --connect %s%s%s:%d%s%s", strchr(host, ':') ? "[" : "",
		    host, strchr(host, ':') ? "]" : "", b->port,
		    x->token_file ? " --token-file " : "",
		    x->token_file && tok.len ? tok.data : x->token_file ? "''" : "");
		cfl_buf_release(&tok);
	}
	return 0;
}

int study_backend_join(struct study_backend *b, const struct cfl_study_exec *x,
		       struct cfl_pool *pool, const struct cfl_data_opts *d,
		       const struct cfl_data *data, const char *run_key,
		       struct cfl_err *err)
{
	const struct cfl_pool_opts *po = cfl_pool_opts(pool);

	if (x->listen) {
		struct cfl_tcp_opts o;
		struct cfl_buf config, parts;

		if (study_backend_bind(b, x, err))
			return -1;
		cfl_buf_init(&config);
		cfl_buf_init(&parts);
		/* workers get the encoded parts, not the file: they parse nothing */
		if (cfl_run_config_format(&config, run_key, d, po, err) ||
		    cfl_data_pack_parts(data, &parts, err)) {
			cfl_buf_release(&config);
			cfl_buf_release(&parts);
			return -1;
		}
		cfl_tcp_opts_init(&o);
		o.addr = x->listen;
		o.token = x->token_file ? &b->token : NULL;
		o.heartbeat = x->heartbeat;
		o.max_workers = x->max_workers;
		o.data = &parts;	/* taken over, not copied */
		o.config = config.data;
		o.lfd = b->lfd;
		o.log = log_line;
		o.log_ctx = b;
		b->lfd = -1;	/* the listener's now, even when it fails */
		b->tcp = cfl_tcp_listen(pool, &o, err);
		cfl_pool_set_log(pool, log_line, b);
		cfl_buf_release(&config);
		cfl_buf_release(&parts);
		if (!b->tcp)
			return -1;
	}
	if (b->backend == CFL_BACKEND_MPI && b->job.fds &&
	    cfl_mpi_job_attach(&b->job, pool, d, po, run_key, x->heartbeat,
			       log_line, b, err))
		return -1;
	return 0;
}

void study_backend_stop_remote(struct study_backend *b)
{
	cfl_tcp_free(b->tcp);
	b->tcp = NULL;
	cfl_tcp_unbind(b->lfd);
	b->lfd = -1;
}

void study_backend_release(struct study_backend *b)
{
	study_backend_stop_remote(b);
	cfl_token_clear(&b->token);
	cfl_mpi_job_release(&b->job);
}
