/*
 * The MPI transport alone, under `mpirun -n N` (tests/cli/test_mpi.sh):
 * the dataset broadcast and its SHA-256 check, frames both ways between
 * rank 0 and every worker rank (sizes from 0 bytes to several MiB, in
 * order), and the bridge: forked children that never call MPI exchange a
 * byte stream through their ranks' pumps, and the child's exit status comes
 * back; every TCP socket of a rank (PMIx's to its server) has TCP_NODELAY
 * once cfl_mpi_init returns.  Rank 0 prints "mpi selftest: ok (N ranks)" when every check passed.
 *
 *   mpi_selftest          all the checks
 *   mpi_selftest badsha   rank 0 announces a wrong digest: every rank must
 *                         report the mismatch (exit 3)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cfl/backend.h"

static struct cfl_mpi m;

#define FAIL(...)                                                            \
	do {                                                                 \
		fprintf(stderr, "rank %d: ", m.rank);                        \
		fprintf(stderr, __VA_ARGS__);                                \
		fputc('\n', stderr);                                         \
		cfl_mpi_abort(&m, 1);                                        \
	} while (0)

/* Deterministic bytes: frame k of rank r. */
static void fill(char *p, size_t n, unsigned seed)
{
	unsigned x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (char)(x >> 16);
	}
}

static void sha(const void *p, size_t n, unsigned char out[32])
{
	struct cfl_err err;

	if (cfl_sha256(p, n, out, &err)) {
		fprintf(stderr, "mpi_selftest: %s\n", err.msg);
		exit(1);
	}
}

static void check_bcast(int bad)
{
	struct cfl_buf b;
	struct cfl_err err;
	unsigned char d[32] = { 0 };
	int rc;

	cfl_buf_init(&b);
	if (m.rank == 0) {
		size_t n = (3u << 20) + 17;

		cfl_buf_reserve(&b, n + 1);
		fill(b.data, n, 7);
		b.len = n;
		sha(b.data, n, d);
		if (bad)
			d[5] ^= 1;
	}
	rc = cfl_mpi_bcast_blob(&m, &b, d, &err);
	if (bad) {
		if (rc == 0)
			FAIL("a wrong digest was accepted");
		if (m.rank != 0 && !strstr(err.msg, "sha-256 mismatch"))
			FAIL("unexpected message: %s", err.msg);
		fprintf(stderr, "rank %d: refused: %s\n", m.rank, err.msg);
		cfl_buf_release(&b);
		cfl_mpi_finalize(&m, &err);
		exit(3);
	}
	if (rc < 0)
		FAIL("broadcast: %s", err.msg);
	if (b.len != (3u << 20) + 17)
		FAIL("broadcast: %zu bytes", b.len);
	{
		unsigned char again[32];
		char *want = malloc(b.len);

		fill(want, b.len, 7);
		sha(b.data, b.len, again);
		if (memcmp(want, b.data, b.len) || memcmp(again, d, 32))
			FAIL("broadcast: bytes or digest differ");
		free(want);
	}
	cfl_buf_release(&b);
}

static const size_t sizes[] = { 0, 1, 100, 65536, 100000, (5u << 20) + 3 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static void check_frames(void)
{
	struct cfl_buf b;
	struct cfl_err err;
	char *want = malloc(sizes[N_SIZES - 1]);
	int src;

	cfl_buf_init(&b);
	if (m.rank == 0) {
		for (int r = 1; r < m.size; r++)
			for (size_t k = 0; k < N_SIZES; k++) {
				fill(want, sizes[k], (unsigned)(r * 100 + k));
				if (cfl_mpi_send(&m, r, want, sizes[k], &err) < 0)
					FAIL("send: %s", err.msg);
			}
		/* every worker echoes each frame back; per sender in order */
		for (int got = 0; got < (m.size - 1) * (int)N_SIZES; got++) {
			static size_t next[1024];

			if (cfl_mpi_recv(&m, -1, &src, &b, (size_t)64 << 20, 30,
					 &err) != 1)
				FAIL("recv: %s", err.msg);
			if (src < 1 || src >= m.size || next[src] >= N_SIZES)
				FAIL("frame from rank %d out of place", src);
			fill(want, sizes[next[src]], (unsigned)(src * 100 + next[src]));
			if (b.len != sizes[next[src]] ||
			    memcmp(b.data, want, b.len))
				FAIL("echo %zu from rank %d differs", next[src], src);
			next[src]++;
		}
		/* a message over the receiver's cap is refused, not taken */
		if (cfl_mpi_send(&m, 1, want, 1000, &err) < 0)
			FAIL("send: %s", err.msg);
		if (cfl_mpi_recv(&m, 1, &src, &b, 64, 30, &err) != -1 ||
		    !strstr(err.msg, "at most 64"))
			FAIL("a too big echo was not refused");
	} else {
		for (size_t k = 0; k < N_SIZES; k++) {
			if (cfl_mpi_recv(&m, 0, &src, &b, (size_t)64 << 20, 30,
					 &err) != 1)
				FAIL("recv: %s", err.msg);
			fill(want, sizes[k], (unsigned)(m.rank * 100 + k));
			if (src != 0 || b.len != sizes[k] ||
			    memcmp(b.data, want, b.len))
				FAIL("frame %zu differs (%zu bytes)", k, b.len);
			if (cfl_mpi_send(&m, 0, b.data, b.len, &err) < 0)
				FAIL("send: %s", err.msg);
		}
		if (m.rank == 1) {
			if (cfl_mpi_recv(&m, 0, &src, &b, (size_t)64 << 20, 30,
					 &err) != 1)
				FAIL("recv: %s", err.msg);
			if (cfl_mpi_send(&m, 0, b.data, b.len, &err) < 0)
				FAIL("send: %s", err.msg);
		}
	}
	if (cfl_mpi_flush(&m, &err) < 0)
		FAIL("flush: %s", err.msg);
	free(want);
	cfl_buf_release(&b);
}

/* Blocking helpers for the children (plain sockets, no MPI). */
static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

#define STREAM ((size_t)(2u << 20) + 5)

/* Rank 0's child: streams to every worker while it reads the echoes. */
static int child_rank0(int *fds)
{
	char *want = malloc(STREAM), *got = malloc(STREAM);

	/* small round trips first: the latency through two pumps */
	for (int rr = 0; rr < 2 * (m.size - 1); rr++) {
		int r = m.size - 1 - rr % (m.size - 1);
		double t0 = cfl_now();
		int n_ping = 200;

		for (int i = 0; i < n_ping; i++) {
			char c = (char)i, d;

			if (write_all(fds[r], &c, 1) < 0 || read(fds[r], &d, 1) != 1 ||
			    d != c)
				return 14;
		}
		fprintf(stderr, "mpi selftest: rank %d round trip %.0f us\n", r,
			(cfl_now() - t0) / n_ping * 1e6);
	}
	for (int r = 1; r < m.size; r++) {
		size_t off_w = 0, off_r = 0;

		fill(want, STREAM, (unsigned)(900 + r));
		/* interleave so neither side's socket buffer fills up */
		while (off_r < STREAM) {
			if (off_w < STREAM) {
				size_t n = STREAM - off_w < 4096 ? STREAM - off_w : 4096;

				if (write_all(fds[r], want + off_w, n) < 0)
					return 10;
				off_w += n;
				if (off_w == STREAM)
					shutdown(fds[r], SHUT_WR);
			}
			while (off_r < off_w) {
				ssize_t n = read(fds[r], got + off_r, STREAM - off_r);

				if (n <= 0)
					return 11;
				off_r += (size_t)n;
				if (off_w < STREAM)
					break;
			}
		}
		if (memcmp(want, got, STREAM))
			return 12;
		/* after the echo the worker closes: EOF comes through */
		if (read(fds[r], got, 1) != 0)
			return 13;
	}
	free(want);
	free(got);
	return 42;
}

/* A worker's child: echoes the stream until EOF. */
static int child_worker(int *fds)
{
	char buf[8192];
	ssize_t n;

	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		if (write_all(fds[0], buf, (size_t)n) < 0)
			return 20;
	return n == 0 ? 7 : 21;
}

static void check_bridge(void)
{
	struct cfl_err err;
	int *fds, status;
	pid_t pid;

	if (cfl_mpi_fork_role(&m, &fds, &pid, &err) < 0)
		FAIL("fork: %s", err.msg);
	if (pid == 0) {
		int code = m.rank == 0 ? child_rank0(fds) : child_worker(fds);

		_exit(code);
	}
	if (cfl_mpi_bridge(&m, fds, pid, 5, NULL, &status, &err) < 0)
		FAIL("bridge: %s", err.msg);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != (m.rank == 0 ? 42 : 7))
		FAIL("bridge: child status %d", status);
	free(fds);
}

/* Every TCP stream socket this rank holds has TCP_NODELAY: without it
 * MPI_Finalize's fence waited 40 ms for a delayed ACK.  Returns how many. */
static int check_nodelay(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), type = 0, dom = 0, nd = 0;
		socklen_t len = sizeof(int);

		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
		    type != SOCK_STREAM ||
		    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0 ||
		    (dom != AF_INET && dom != AF_INET6))
			continue;
		if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nd, &len) < 0 || !nd)
			FAIL("TCP socket %d without TCP_NODELAY after cfl_mpi_init", fd);
		n++;
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	struct cfl_err err;
	int bad = argc > 1 && strcmp(argv[1], "badsha") == 0, n_tcp;

	if (cfl_mpi_init(&m, &err) < 0) {
		fprintf(stderr, "mpi_selftest: %s\n", err.msg);
		return 2;
	}
	if (m.size < 2)
		FAIL("needs 2 ranks or more (got %d)", m.size);
	n_tcp = check_nodelay();
	check_bcast(bad);
	check_frames();
	check_bridge();
	if (m.rank == 0)
		printf("mpi selftest: ok (%d ranks, %d on this node; %d TCP "
		       "sockets with TCP_NODELAY)\n", m.size, m.local_size, n_tcp);
	if (cfl_mpi_finalize(&m, &err) < 0) {
		fprintf(stderr, "mpi_selftest: %s\n", err.msg);
		return 1;
	}
	return 0;
}
