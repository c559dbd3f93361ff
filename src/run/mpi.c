/*
 * The MPI transport: the only file that includes mpi.h.  Rank 0 coordinates,
 * the other ranks are workers; between them travel the pool's encoded frames
 * as opaque byte messages (one tag for bytes, one for "this side closed"),
 * in order per pair of ranks, plus one broadcast of the dataset checked by
 * SHA-256.
 *
 * Invariant: a process that has called MPI never runs a trial.  Each rank's
 * MPI process forks one child for the rank's work and then only pumps bytes
 * (cfl_mpi_bridge) between its child's sockets and MPI.  Sends are
 * non-blocking (MPI_Isend), so two pumps sending to each other never wait on
 * each other.  Built without CFL_HAVE_MPI, every call fails cleanly.
 */
#include "cfl/backend.h"
#include "cfl/net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

const char cfl_mpi_missing_msg[] =
	"this cfl was built without MPI: install Open MPI "
	"(Debian: apt-get install libopenmpi-dev openmpi-bin, or 'make deps') "
	"and rebuild with 'make clean all'";

#ifndef CFL_HAVE_MPI

int cfl_mpi_built_in(void) { return 0; }

static int missing(struct cfl_err *err)
{
	return cfl_err_set(err, "%s", cfl_mpi_missing_msg);
}

int cfl_mpi_init(struct cfl_mpi *m, struct cfl_err *err)
{
	memset(m, 0, sizeof(*m));
	return missing(err);
}

int cfl_mpi_finalize(struct cfl_mpi *m, struct cfl_err *err)
{
	(void)m;
	(void)err;
	return 0;
}

void cfl_mpi_abort(struct cfl_mpi *m, int code)
{
	(void)m;
	_exit(code);
}

int cfl_mpi_bcast_blob(struct cfl_mpi *m, struct cfl_buf *blob,
		       unsigned char sha256[32], struct cfl_err *err)
{
	(void)m, (void)blob, (void)sha256;
	return missing(err);
}

int cfl_mpi_send(struct cfl_mpi *m, int to, const void *frame, size_t len,
		 struct cfl_err *err)
{
	(void)m, (void)to, (void)frame, (void)len;
	return missing(err);
}

int cfl_mpi_flush(struct cfl_mpi *m, struct cfl_err *err)
{
	(void)m;
	return missing(err);
}

int cfl_mpi_recv(struct cfl_mpi *m, int from, int *src, struct cfl_buf *frame,
		 size_t max_len, double timeout, struct cfl_err *err)
{
	(void)m, (void)from, (void)src, (void)frame, (void)max_len, (void)timeout;
	return missing(err);
}

int cfl_mpi_fork_role(struct cfl_mpi *m, int **fds, pid_t *pid,
		      struct cfl_err *err)
{
	(void)m, (void)fds, (void)pid;
	return missing(err);
}

int cfl_mpi_bridge(struct cfl_mpi *m, int *fds, pid_t child, double grace,
		   const volatile sig_atomic_t *stop, int *status,
		   struct cfl_err *err)
{
	(void)m, (void)fds, (void)child, (void)grace, (void)stop, (void)status;
	return missing(err);
}

#else /* CFL_HAVE_MPI */

#include <mpi.h>

enum {
	TAG_BYTES = 1,	/* frames (bytes of the child's stream), in order */
	TAG_EOF = 2,	/* the sender's side of the stream is closed */
};

/* Bytes read from a child socket at once: one MPI message. */
#define CHUNK ((size_t)256 << 10)
/* Back-pressure: stop reading a source while this much waits for it. */
#define QUEUE_CAP ((size_t)32 << 20)
/* Broadcast pieces stay below INT_MAX elements. */
#define BCAST_PIECE ((size_t)1 << 30)

/* ---- mpi: errors, init, finalize ---- */

static int mpi_fail(struct cfl_err *err, const char *what, int rc)
{
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;

	if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS)
		snprintf(s, sizeof(s), "error %d", rc);
	return cfl_err_set(err, "mpi: %s failed: %s", what, s);
}

int cfl_mpi_built_in(void) { return 1; }

int cfl_mpi_init(struct cfl_mpi *m, struct cfl_err *err)
{
	MPI_Comm node;
	int flag = 0, rc, provided = 0;

	memset(m, 0, sizeof(*m));
	MPI_Initialized(&flag);
	if (!flag) {
		/* Open MPI tries UCX first and spends about 0.2 s of every job's
		 * start on it (measured: MPI_Init 0.28 s, 0.06 s with ob1).  The
		 * pool's traffic is a dataset once and small frames, which ob1
		 * (shared memory, TCP) carries well: ob1 unless the user chose. */
		setenv("OMPI_MCA_pml", "ob1", 0);
		/* FUNNELED: rank 0 loads the dataset in a thread meanwhile;
		 * only this thread ever calls MPI */
		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
		if (rc != MPI_SUCCESS)
			return mpi_fail(err, "MPI_Init", rc);
	}
	/* PMIx's client talks to its server (mpirun, orted, slurmstepd) over
	 * loopback TCP without TCP_NODELAY: a message sent while the one
	 * before waits for its delayed ACK sits 40 ms (Linux's least delayed
	 * ACK), which MPI_Finalize's fence paid once per job (measured: 45 ms
	 * of a 0.15 s trivial job under mpirun -n 3, 4 ms with this). */
	cfl_net_nodelay_all();
	/* Errors come back as codes: the pump reports them and aborts the job
	 * itself, with a message that says what it was doing. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m->size);
	m->local_rank = 0;
	m->local_size = 1;
	rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
				 MPI_INFO_NULL, &node);
	if (rc == MPI_SUCCESS) {
		MPI_Comm_rank(node, &m->local_rank);
		MPI_Comm_size(node, &m->local_size);
		MPI_Comm_free(&node);
	}
	m->initialized = 1;
	return 0;
}

/* ---- mpi: point-to-point sends, queued ---- */

/* Sends in flight; the buffer lives until MPI_Test says it went. */
struct pending {
	MPI_Request req;
	char *data;
	size_t len;
	int to;
};

static struct pending *pend;
static size_t n_pend, cap_pend, pend_bytes;

/* Completes what can be completed; 0, or -1 with err. */
static int progress_sends(struct cfl_err *err)
{
	size_t j = 0;

	for (size_t i = 0; i < n_pend; i++) {
		int done = 0, rc = MPI_Test(&pend[i].req, &done, MPI_STATUS_IGNORE);

		if (rc != MPI_SUCCESS)
			return mpi_fail(err, "MPI_Test", rc);
		if (done) {
			pend_bytes -= pend[i].len;
			free(pend[i].data);
		} else {
			pend[j++] = pend[i];
		}
	}
	n_pend = j;
	return 0;
}

/* Takes ownership of data (malloc'd, may be NULL when len is 0). */
static int send_owned(int to, int tag, char *data, size_t len,
		      struct cfl_err *err)
{
	int rc;

	if (n_pend == cap_pend) {
		size_t cap = cap_pend ? 2 * cap_pend : 16;
		struct pending *p = cfl_realloc(pend, cap * sizeof(*p), err);

		if (!p) {
			free(data);
			return -1;
		}
		pend = p;
		cap_pend = cap;
	}
	rc = MPI_Isend(data, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD,
		       &pend[n_pend].req);
	if (rc != MPI_SUCCESS) {
		free(data);
		return mpi_fail(err, "MPI_Isend", rc);
	}
	pend[n_pend].data = data;
	pend[n_pend].len = len;
	pend[n_pend].to = to;
	n_pend++;
	pend_bytes += len;
	return progress_sends(err);
}

int cfl_mpi_send(struct cfl_mpi *m, int to, const void *frame, size_t len,
		 struct cfl_err *err)
{
	char *copy;

	if (!m->initialized)
		return cfl_err_set(err, "mpi: not initialised");
	if (to < 0 || to >= m->size || to == m->rank)
		return cfl_err_set(err, "mpi: no rank %d to send to", to);
	if (len > (size_t)1 << 30)
		return cfl_err_set(err, "mpi: a frame of %zu bytes is too big", len);
	copy = cfl_malloc(len, err);
	if (!copy)
		return -1;
	memcpy(copy, frame, len);
	return send_owned(to, TAG_BYTES, copy, len, err);
}

int cfl_mpi_flush(struct cfl_mpi *m, struct cfl_err *err)
{
	(void)m;
	while (n_pend) {
		int rc = MPI_Wait(&pend[0].req, MPI_STATUS_IGNORE);

		if (rc != MPI_SUCCESS)
			return mpi_fail(err, "MPI_Wait", rc);
		if (progress_sends(err) < 0)
			return -1;
	}
	return 0;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Waits for a non-blocking collective without spinning a core: MPI's own
 * blocking calls poll flat out, and a worker rank waits here while rank 0
 * loads the dataset on the same cores.  max_nap_us 0: only yield (a transfer
 * in progress needs both sides to keep calling MPI). */
static int wait_req(MPI_Request *req, long max_nap_us, const char *what,
		    struct cfl_err *err)
{
	long nap = 0;

	for (;;) {
		int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);

		if (rc != MPI_SUCCESS)
			return mpi_fail(err, what, rc);
		if (done)
			return 0;
		if (max_nap_us <= 0) {
			sched_yield();
			continue;
		}
		nap = nap ? (nap * 2 < max_nap_us ? nap * 2 : max_nap_us) : 20;
		sleep_us(nap);
	}
}

/* Receives the message `st` announced into b; -1 with err when it is over
 * max_len (received and dropped, so the stream stays in step). */
static int recv_probed(MPI_Status *st, struct cfl_buf *b, size_t max_len,
		       struct cfl_err *err)
{
	int count = 0, rc;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (count < 0)
		count = 0;
	b->len = 0;
	if ((size_t)count > max_len) {
		char *junk = malloc((size_t)count);

		if (!junk)
			return cfl_err_set(err, "out of memory (a message of %d bytes)",
					   count);
		rc = MPI_Recv(junk, count, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG,
			      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		free(junk);
		return cfl_err_set(err, "mpi: rank %d sent a message of %d bytes "
				   "(at most %zu allowed)", st->MPI_SOURCE,
				   count, max_len);
	}
	if (cfl_buf_reserve(b, (size_t)count + 1) < 0)
		return cfl_err_set(err, "out of memory (a message of %d bytes)",
				   count);
	rc = MPI_Recv(b->data, count, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG,
		      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, "MPI_Recv", rc);
	b->len = (size_t)count;
	b->data[b->len] = '\0';
	return 0;
}

int cfl_mpi_recv(struct cfl_mpi *m, int from, int *src, struct cfl_buf *frame,
		 size_t max_len, double timeout, struct cfl_err *err)
{
	double deadline = cfl_now() + (timeout > 0 ? timeout : 0);
	long nap = 20;

	if (!m->initialized)
		return cfl_err_set(err, "mpi: not initialised");
	for (;;) {
		MPI_Status st;
		int flag = 0, rc;

		rc = MPI_Iprobe(from < 0 ? MPI_ANY_SOURCE : from, TAG_BYTES,
				MPI_COMM_WORLD, &flag, &st);
		if (rc != MPI_SUCCESS)
			return mpi_fail(err, "MPI_Iprobe", rc);
		if (flag) {
			*src = st.MPI_SOURCE;
			return recv_probed(&st, frame, max_len, err) < 0 ? -1 : 1;
		}
		if (progress_sends(err) < 0)
			return -1;
		if (cfl_now() >= deadline)
			return 0;
		sleep_us(nap);
		if (nap < 1000)
			nap *= 2;
	}
}

int cfl_mpi_finalize(struct cfl_mpi *m, struct cfl_err *err)
{
	int rc;

	if (!m->initialized)
		return 0;
	if (cfl_mpi_flush(m, err) < 0)
		return -1;
	free(pend);
	pend = NULL;
	cap_pend = 0;
	m->initialized = 0;
	rc = MPI_Finalize();
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, "MPI_Finalize", rc);
	return 0;
}

void cfl_mpi_abort(struct cfl_mpi *m, int code)
{
	(void)m;
	MPI_Abort(MPI_COMM_WORLD, code);
	_exit(code);
}

/* ---- mpi: the dataset broadcast ---- */

/* What rank 0 announces before the bytes. */
struct bcast_head {
	unsigned long long len;
	unsigned char sha256[32];
	int ok;			/* 0: rank 0 failed, nothing follows */
};

/* Long naps while a rank waits for rank 0 to have something to send. */
#define WAIT_NAP_US 1000

static int bcast_bytes(void *p, size_t n, long nap, struct cfl_err *err)
{
	MPI_Request req;
	int rc = MPI_Ibcast(p, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &req);

	if (rc != MPI_SUCCESS)
		return mpi_fail(err, "dataset broadcast: MPI_Ibcast", rc);
	return wait_req(&req, nap, "dataset broadcast: MPI_Ibcast", err);
}

/* The lowest of every rank's ok. */
static int all_ok(int ok, int *all, struct cfl_err *err)
{
	MPI_Request req;
	int rc = MPI_Iallreduce(&ok, all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD,
				&req);

	if (rc != MPI_SUCCESS)
		return mpi_fail(err, "dataset broadcast: MPI_Iallreduce", rc);
	return wait_req(&req, WAIT_NAP_US, "dataset broadcast: MPI_Iallreduce",
			err);
}

int cfl_mpi_bcast_blob(struct cfl_mpi *m, struct cfl_buf *blob,
		       unsigned char sha256[32], struct cfl_err *err)
{
	struct bcast_head h;
	struct cfl_err mine = { "" };
	int ok = 1, every = 0;

	if (!m->initialized)
		return cfl_err_set(err, "mpi: not initialised");
	memset(&h, 0, sizeof(h));
	if (m->rank == 0) {
		h.len = blob->len;
		memcpy(h.sha256, sha256, 32);
		h.ok = blob->len <= CFL_MPI_MAX_BLOB;
		if (!h.ok)
			cfl_err_set(&mine, "dataset broadcast: %zu bytes is over "
				    "the limit of %zu", blob->len, CFL_MPI_MAX_BLOB);
	}
	if (bcast_bytes(&h, sizeof(h), WAIT_NAP_US, err))
		return -1;
	if (!h.ok) {
		if (m->rank == 0)
			return cfl_err_set(err, "%s", mine.msg);
		return cfl_err_set(err, "dataset broadcast: rank 0 could not "
				   "send the dataset");
	}
	if (m->rank != 0) {
		blob->len = 0;
		if (h.len > CFL_MPI_MAX_BLOB ||
		    cfl_buf_reserve(blob, (size_t)h.len + 1) < 0) {
			ok = 0;
			cfl_err_set(&mine, "dataset broadcast: out of memory "
				    "for %llu bytes", h.len);
		}
	}
	/* Every rank learns whether all can receive before any byte moves. */
	if (all_ok(ok, &every, err))
		return -1;
	if (!every)
		return cfl_err_set(err, "%s", ok ? "dataset broadcast: another "
				   "rank could not take the dataset" : mine.msg);
	for (size_t off = 0; off < h.len; off += BCAST_PIECE) {
		size_t n = h.len - off < BCAST_PIECE ? h.len - off : BCAST_PIECE;

		if (bcast_bytes(blob->data + off, n, 0, err))
			return -1;
	}
	if (m->rank != 0) {
		unsigned char got[32];

		blob->len = (size_t)h.len;
		blob->data[blob->len] = '\0';
		if (cfl_sha256(blob->data, blob->len, got, &mine)) {
			ok = 0;
		} else if (memcmp(got, h.sha256, 32) != 0) {
			char want_hex[65], got_hex[65];

			ok = 0;
			cfl_sha256_hex(h.sha256, want_hex);
			cfl_sha256_hex(got, got_hex);
			cfl_err_set(&mine, "dataset broadcast: sha-256 mismatch "
				    "on rank %d (rank 0 sent %.12s..., received "
				    "%.12s...)", m->rank, want_hex, got_hex);
		}
		memcpy(sha256, h.sha256, 32);
	}
	if (all_ok(ok, &every, err))
		return -1;
	if (!every)
		return cfl_err_set(err, "%s", ok ? "dataset broadcast: the "
				   "dataset arrived damaged on another rank" :
				   mine.msg);
	return 0;
}

/* ---- bridge: the child and its sockets ---- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int cfl_mpi_fork_role(struct cfl_mpi *m, int **fds_out, pid_t *pid,
		      struct cfl_err *err)
{
	int n = m->size, *mine, *theirs;
	pid_t parent = getpid(), p;

	*fds_out = NULL;
	*pid = -1;
	if (!m->initialized)
		return cfl_err_set(err, "mpi: not initialised");
	mine = cfl_calloc((size_t)n, sizeof(int), err);
	theirs = cfl_calloc((size_t)n, sizeof(int), err);
	if (!mine || !theirs) {
		free(mine);
		free(theirs);
		return -1;
	}
	for (int r = 0; r < n; r++)
		mine[r] = theirs[r] = -1;
	for (int r = 0; r < n; r++) {
		int sv[2];

		/* rank 0 talks to every worker; a worker only to rank 0 */
		if (m->rank == 0 ? r == 0 : r != 0)
			continue;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			cfl_err_set(err, "mpi: socketpair: %s", strerror(errno));
			goto fail;
		}
		mine[r] = sv[0];
		theirs[r] = sv[1];
	}
	fflush(NULL);
	p = fork();
	if (p < 0) {
		cfl_err_set(err, "mpi: fork: %s", strerror(errno));
		goto fail;
	}
	if (p == 0) {
		/* The child never calls MPI; it ends with its MPI parent, which
		 * is how a lost rank (the job killed) reaches it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			raise(SIGTERM);
		for (int r = 0; r < n; r++)
			if (mine[r] >= 0)
				close(mine[r]);
		free(mine);
		*fds_out = theirs;
		*pid = 0;
		return 0;
	}
	for (int r = 0; r < n; r++)
		if (theirs[r] >= 0) {
			close(theirs[r]);
			set_nonblock(mine[r]);
		}
	free(theirs);
	*fds_out = mine;
	*pid = p;
	return 0;
fail:
	for (int r = 0; r < n; r++) {
		if (mine[r] >= 0)
			close(mine[r]);
		if (theirs[r] >= 0)
			close(theirs[r]);
	}
	free(mine);
	free(theirs);
	return -1;
}

/* ---- bridge: the pump ---- */

/* One peer rank as the pump sees it. */
struct link {
	int rank;
	int fd;
	int rd_open;		/* the child may still write on fd */
	int eof_sent;		/* the peer was told this side closed */
	int eof_got;		/* the peer's side closed */
	int wr_shut;		/* fd's write side shut (child saw EOF) */
	struct cfl_buf out;	/* bytes from the peer for the child */
	size_t out_off;
};

/* Child's side of l closed: tell the peer once. */
static int close_read(struct link *l, struct cfl_err *err)
{
	l->rd_open = 0;
	if (l->eof_sent)
		return 0;
	l->eof_sent = 1;
	return send_owned(l->rank, TAG_EOF, NULL, 0, err);
}

/* Reads what the child wrote on l and sends it on; at most one chunk unless
 * drain is set (the child is gone: read all that is left). */
static int pump_read(struct link *l, int drain, int *progress,
		     struct cfl_err *err)
{
	while (l->rd_open) {
		char *chunk = cfl_malloc(CHUNK, err);
		ssize_t n;

		if (!chunk)
			return -1;
		n = recv(l->fd, chunk, CHUNK, MSG_DONTWAIT);
		if (n > 0) {
			*progress = 1;
			if (send_owned(l->rank, TAG_BYTES, chunk, (size_t)n, err) < 0)
				return -1;
			if (!drain)
				return 0;
			continue;
		}
		free(chunk);
		if (n < 0 && (errno == EINTR))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !drain)
			return 0;
		/* EOF, a reset, or nothing left of a dead child */
		*progress = 1;
		return close_read(l, err);
	}
	return 0;
}

/* Writes what the peer sent to the child, without blocking. */
static void pump_write(struct link *l, int *progress)
{
	while (l->out_off < l->out.len) {
		ssize_t n = send(l->fd, l->out.data + l->out_off,
				 l->out.len - l->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			l->out_off += (size_t)n;
			*progress = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* the child closed its end: what it did not read is moot */
		l->out_off = l->out.len;
	}
	l->out.len = l->out_off = 0;
	if (l->eof_got && !l->wr_shut) {
		shutdown(l->fd, SHUT_WR);
		l->wr_shut = 1;
		*progress = 1;
	}
}

/* Takes every message that waits from l's rank (while its queue has room). */
static int pump_mpi(struct link *l, int child_done, struct cfl_buf *tmp,
		    int *progress, struct cfl_err *err)
{
	while (!l->eof_got && l->out.len - l->out_off < QUEUE_CAP) {
		MPI_Status st;
		int flag = 0, rc = MPI_Iprobe(l->rank, MPI_ANY_TAG,
					      MPI_COMM_WORLD, &flag, &st);

		if (rc != MPI_SUCCESS)
			return mpi_fail(err, "MPI_Iprobe", rc);
		if (!flag)
			return 0;
		*progress = 1;
		/* the other pump sends the child's bytes CHUNK at a time
		 * (pump_read): a larger message is no part of the stream */
		if (recv_probed(&st, tmp, CHUNK, err) < 0)
			return -1;
		if (st.MPI_TAG == TAG_EOF) {
			l->eof_got = 1;
		} else if (!child_done && !l->wr_shut) {
			/* drop what the child has read before the queue grows */
			if (l->out_off == l->out.len) {
				l->out.len = l->out_off = 0;
			} else if (l->out_off > CHUNK) {
				memmove(l->out.data, l->out.data + l->out_off,
					l->out.len - l->out_off);
				l->out.len -= l->out_off;
				l->out_off = 0;
			}
			if (cfl_buf_append(&l->out, tmp->data, tmp->len) < 0)
				return cfl_err_set(err, "out of memory");
		}
	}
	return 0;
}

/* Names the ranks that have not closed their side: 2 with err. */
static int not_finished(const struct link *links, size_t n_links,
			double grace, struct cfl_err *err)
{
	char list[256] = "";
	size_t n = 0, len = 0;

	for (size_t i = 0; i < n_links; i++) {
		if (links[i].eof_got)
			continue;
		n++;
		if (len < sizeof(list) - 16)
			len += (size_t)snprintf(list + len, sizeof(list) - len,
						"%s%d", len ? ", " : "",
						links[i].rank);
	}
	if (!n)
		cfl_err_set(err, "sends to worker ranks still pending %g s after "
			    "the end", grace);
	else
		cfl_err_set(err, "worker rank%s %s did not finish within %g s of "
			    "the end (stopped or hung)", n > 1 ? "s" : "", list,
			    grace);
	return 2;
}

int cfl_mpi_bridge(struct cfl_mpi *m, int *fds, pid_t child, double grace,
		   const volatile sig_atomic_t *stop, int *status,
		   struct cfl_err *err)
{
	struct link *links;
	struct pollfd *pfd;
	struct cfl_buf tmp;
	size_t n_links = 0;
	int child_done = 0, rc = -1, signalled = 0;
	double eof0_at = -1, child_done_at = -1, last_progress = cfl_now();
	long nap_us = 0;

	*status = 0;
	cfl_buf_init(&tmp);
	links = cfl_calloc((size_t)m->size, sizeof(*links), err);
	pfd = cfl_calloc((size_t)m->size, sizeof(*pfd), err);
	if (!links || !pfd)
		goto out;
	for (int r = 0; r < m->size; r++)
		if (fds[r] >= 0) {
			struct link *l = &links[n_links++];

			l->rank = r;
			l->fd = fds[r];
			l->rd_open = 1;
			cfl_buf_init(&l->out);
		}
	for (;;) {
		int progress = 0, done = 1;
		size_t n_pfd = 0;
		struct timespec ts;

		if (!child_done) {
			int st;
			pid_t w = waitpid(child, &st, WNOHANG);

			if (w == child || (w < 0 && errno == ECHILD)) {
				child_done = 1;
				*status = w == child ? st : 0;
				progress = 1;
				/* what it wrote before it died is still in the
				 * sockets: send it, then close every stream */
				for (size_t i = 0; i < n_links; i++)
					if (pump_read(&links[i], 1, &progress, err) < 0)
						goto out;
			}
		}
		for (size_t i = 0; i < n_links; i++) {
			struct link *l = &links[i];

			if (pump_mpi(l, child_done, &tmp, &progress, err) < 0)
				goto out;
			if (!child_done)
				pump_write(l, &progress);
			if (l->rd_open && pend_bytes < QUEUE_CAP &&
			    pump_read(l, 0, &progress, err) < 0)
				goto out;
		}
		if (progress_sends(err) < 0)
			goto out;
		/* a worker whose coordinator is gone gets grace seconds */
		if (m->rank != 0 && !child_done && links[0].eof_got) {
			double now = cfl_now();

			if (eof0_at < 0)
				eof0_at = now;
			if (signalled == 0 && now - eof0_at > grace) {
				kill(child, SIGTERM);
				signalled = 1;
			} else if (signalled == 1 && now - eof0_at > grace + 3) {
				kill(child, SIGKILL);
				signalled = 2;
			}
		}
		for (size_t i = 0; i < n_links; i++)
			if (!links[i].eof_got || !links[i].eof_sent)
				done = 0;
		if (child_done && done && n_pend == 0)
			break;
		/* rank 0: a worker rank that never closes (stopped, hung) would
		 * keep MPI_Finalize waiting for ever */
		if (m->rank == 0 && child_done) {
			double now = cfl_now();

			if (child_done_at < 0)
				child_done_at = now;
			if (now - child_done_at > grace) {
				rc = not_finished(links, n_links, grace, err);
				goto out;
			}
		}
		if (child_done && stop && *stop) {
			rc = 1;
			goto out;
		}
		for (size_t i = 0; i < n_links && !child_done; i++) {
			struct link *l = &links[i];
			short ev = 0;

			if (l->rd_open && pend_bytes < QUEUE_CAP)
				ev |= POLLIN;
			if (l->out_off < l->out.len)
				ev |= POLLOUT;
			if (ev) {
				pfd[n_pfd].fd = l->fd;
				pfd[n_pfd].events = ev;
				pfd[n_pfd].revents = 0;
				n_pfd++;
			}
		}
		/* MPI has no descriptor to wait on: right after traffic look
		 * again at once (a reply often follows), then nap, longer the
		 * longer nothing happens; a socket still wakes us at once */
		{
			double now = cfl_now(), idle;
			long cap;

			if (progress)
				last_progress = now;
			idle = now - last_progress;
			cap = idle < 0.02 ? 100 : idle < 0.2 ? 1000 : 5000;
			if (idle < 200e-6)
				nap_us = 0;
			else
				nap_us = nap_us ? (nap_us * 2 < cap ? nap_us * 2 : cap) : 25;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = nap_us * 1000;
		if (ppoll(pfd, n_pfd, &ts, NULL) < 0 && errno != EINTR) {
			cfl_err_set(err, "mpi: poll: %s", strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	for (size_t i = 0; links && i < n_links; i++)
		cfl_buf_release(&links[i].out);
	cfl_buf_release(&tmp);
	free(links);
	free(pfd);
	return rc;
}

#endif /* CFL_HAVE_MPI */
