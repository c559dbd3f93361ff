/*
 * The MPI transport's peers (see backend.h): rank 0's coordinator sees each
 * worker rank as a pool peer on the socket its pump (mpi.c) moves as MPI
 * messages.  Beside tcp.c's peers: the HELLO is checked by the shared
 * check and answered with the shared WELCOME (relay.h); what differs is
 * only that a rank is trusted with command trials and that a lost rank is
 * counted.  The worker rank's side is the relay.  No mpi.h here: nothing
 * in a child calls MPI.
 */
#include "cfl/backend.h"
#include "cfl/relay.h"
#include "cfl/run.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

struct mpeer {
	struct cfl_mpi_coord *c;
	int rank;
	int hello;
};

static void say(struct cfl_mpi_coord *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct cfl_mpi_coord *c, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (!c->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->log(c->log_ctx, msg);
}

static int mpi_on_frame(struct cfl_peer *peer, const struct cfl_wire_frame *f,
			struct cfl_err *err)
{
	struct mpeer *mp = peer->impl;
	struct cfl_wire_msg m;
	uint32_t code;

	if (!mp || f->type != CFL_WIRE_HELLO)
		return 0;
	if (mp->hello)
		return cfl_err_set(err, "a second HELLO from rank %d", mp->rank);
	if (cfl_wire_payload_decode(f->type, f->payload, f->length, &m, err))
		return -1;
	if (cfl_hello_check(&m.u.hello, &code, err)) {
		cfl_wire_msg_release(&m);
		return cfl_err_prefix(err, "rank %d", mp->rank);
	}
	cfl_wire_msg_release(&m);
	mp->hello = 1;
	/* HEARTBEATs come every heartbeat; the rank sends its own */
	cfl_welcome_init(&m, mp->c->heartbeat, mp->c->sha256, mp->c->data_size,
			 mp->c->config);
	if (cfl_peer_send(peer, &m, err))
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
		say(mp->c, "worker rank %d stopped answering (%s); its trials go "
		    "to the other ranks", mp->rank, reason);
	snprintf(reason, cap, "MPI rank %d lost", mp->rank);
	if (mp->c->n_alive)
		mp->c->n_alive--;
	if (!mp->c->n_alive && mid_run && mp->c->pool) {
		/* no one is left to run the rest (the ranks were dropped for
		 * silence: a lost rank would have ended the job) */
		say(mp->c, "every worker rank stopped answering");
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

int cfl_mpi_attach(struct cfl_mpi_coord *c, struct cfl_pool *pool, int *fds,
		   int n_ranks, struct cfl_err *err)
{
	c->pool = pool;
	for (int r = 1; r < n_ranks; r++) {
		struct mpeer *mp = cfl_calloc(1, sizeof(*mp), err);
		struct cfl_peer *peer;
		char name[64];

		if (!mp)
			return -1;
		mp->c = c;
		mp->rank = r;
		snprintf(name, sizeof(name), "rank:%d", r);
		peer = cfl_pool_add_peer(pool, fds[r], &mpi_ops, mp, 0, name, err);
		if (!peer) {
			free(mp);
			return -1;
		}
		/* a stopped or hung rank is dropped and its trials requeued,
		 * as a silent TCP worker is */
		peer->heartbeat = c->heartbeat;
		peer->silence = 5 * c->heartbeat;
		fds[r] = -1;	/* the pool closes it */
		c->n_alive++;
	}
	return 0;
}

void cfl_mpi_widen_affinity(long jobs)
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
