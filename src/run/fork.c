/*
 * The fork transport: each local worker is a child forked from the
 * coordinator after the data is loaded, talking wire frames over a
 * socketpair.  The child inherits the data copy-on-write, never opens the
 * store, and leaves with _exit().  A child's death is seen as EOF on its
 * socket and explained by waitpid (signal name or exit code).
 */
#include "cfl/model.h"
#include "cfl/run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct fork_peer {
	pid_t pid;
	int reaped;
	int spare_index;	/* in the spare-core count's table, or -1 */
};

static void fork_kill(struct cfl_peer *peer)
{
	struct fork_peer *fp = peer->impl;

	if (fp && !fp->reaped && fp->pid > 0)
		kill(fp->pid, SIGKILL);
}

static void fork_reap(struct cfl_peer *peer, char *reason, size_t cap)
{
	struct fork_peer *fp = peer->impl;
	int status = 0;

	snprintf(reason, cap, "worker lost");
	if (!fp)
		return;
	if (!fp->reaped) {
		pid_t r;

		/* EOF on the socket means the child is exiting: wait for it.
		 * A child that closed its socket but lingers is killed. */
		do
			r = waitpid(fp->pid, &status, 0);
		while (r < 0 && errno == EINTR);
		fp->reaped = 1;
		if (r == fp->pid) {
			if (WIFSIGNALED(status))
				snprintf(reason, cap, "signal %s",
					 sigabbrev_np(WTERMSIG(status))
						 ? sigabbrev_np(WTERMSIG(status)) : "?");
			else if (WIFEXITED(status))
				snprintf(reason, cap, "exit %d", WEXITSTATUS(status));
		}
	}
	/* "signal SEGV" reads better as "signal SIGSEGV" */
	if (!strncmp(reason, "signal ", 7) && strncmp(reason + 7, "SIG", 3)) {
		char name[32];

		snprintf(name, sizeof(name), "%s", reason + 7);
		snprintf(reason, cap, "signal SIG%s", name);
	}
	cfl_spare_lost(fp->spare_index);
	free(fp);
	peer->impl = NULL;
}

static const struct cfl_peer_ops fork_ops = {
	.kind = "fork",
	.kill = fork_kill,
	.reap = fork_reap,
	.kill_on_timeout = 1,
	.prunes_in_place = 1,
	.runs_commands = 1,	/* the child refuses them unless allow_commands */
};

struct close_ctx {
	int keep;
};

static void close_fd(int fd, void *ctx)
{
	if (fd != ((struct close_ctx *)ctx)->keep)
		close(fd);
}

/* The child: never returns. */
static void child_main(struct cfl_pool *p, int fd, const char *name,
		       int spare_index)
{
	const struct cfl_pool_opts *o = cfl_pool_opts(p);
	struct close_ctx cc = { fd };
	struct cfl_err err;
	int rc;

	/* Die with the coordinator (even on kill -9): a hung trial must not
	 * outlive its run. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Ctrl-C reaches the whole process group: the coordinator decides,
	 * and kills us, so the database is left consistent. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_DFL);
	/* Only the coordinator may hold the other ends of the sockets, or a
	 * sibling's death would never show as EOF. */
	cfl_pool_each_fd(p, close_fd, &cc);
	/* One BLAS thread per trial (or --threads-per-trial): J workers each
	 * running a multi-threaded BLAS would oversubscribe the cores, and a
	 * threaded BLAS may sum in a different order from run to run, so
	 * results would depend on the thread count.  Set before the first
	 * BLAS call of this process. */
	cfl_worker_set_threads(o->threads_per_trial);
	cfl_spare_worker(spare_index);
	rc = cfl_worker_serve(fd, o->data, name, o->trials_per_worker,
			      o->allow_commands, &err);
	/* _exit, not exit: no atexit handlers or stdio buffers inherited from
	 * the coordinator (they would flush its output twice or touch its
	 * SQLite handle) */
	_exit(rc ? 1 : 0);
}

int cfl_fork_spawn(struct cfl_pool *p, struct cfl_err *err)
{
	static unsigned long n_spawned;
	struct fork_peer *fp;
	struct cfl_peer *peer;
	struct cfl_err serr;
	char name[32];
	int sv[2];
	pid_t pid;

	fp = cfl_calloc(1, sizeof(*fp), err);
	if (!fp)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		free(fp);
		return cfl_err_set(err, "cannot create a socketpair: %s",
				   strerror(errno));
	}
	snprintf(name, sizeof(name), "local:%lu", ++n_spawned);
	/* the count of spare cores is shared with the workers: mapped before
	 * the first fork (without it, no trial borrows a core) */
	fp->spare_index = cfl_spare_init(&serr) ? -1 : cfl_spare_index();
	fflush(NULL);	/* nothing buffered is copied into the child */
	/* The child inherits BLAS's thread count: one, unless it asks for
	 * more (--threads-per-trial), so that it need not start OpenBLAS's
	 * thread pool again (cfl_model_set_threads).  The coordinator's own
	 * BLAS work, the GP's small matrices, is quicker on one thread. */
	cfl_model_set_threads(1);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		cfl_spare_lost(fp->spare_index);
		free(fp);
		return cfl_err_set(err, "cannot fork a worker: %s", strerror(errno));
	}
	if (pid == 0) {
		close(sv[0]);
		child_main(p, sv[1], name, fp->spare_index);
	}
	close(sv[1]);
	fp->pid = pid;
	peer = cfl_pool_add_peer(p, sv[0], &fork_ops, fp, 1, name, err);
	if (peer)
		peer->max_leases = cfl_pool_opts(p)->trials_per_worker;
	if (!peer) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(sv[0]);
		cfl_spare_lost(fp->spare_index);
		free(fp);
		return -1;
	}
	return 0;
}
