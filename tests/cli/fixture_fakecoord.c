/*
 * Test helper: a scripted fake coordinator for one `cfl worker`, to check
 * that a TCP worker never runs a shell command it is sent
 * (tests/cli/test_worker.sh).
 *
 *   fixture_fakecoord DATA.csv MARKER early|late|announce:N TOKEN_FILE
 *
 * Listens on 127.0.0.1 (any port, printed as "port N" on stdout), accepts
 * one worker, completes the TLS handshake with the token (the library's
 * cfl_tls, as the real coordinator does), answers HELLO with
 * a WELCOME for DATA's encoded parts, then:
 *   early  answers the first FETCH with a command LEASE instead of a chunk;
 *   late   serves the dataset, leases one ordinary trial (linear) and waits
 *          for its RESULT -- the worker does run this coordinator's trials
 *          -- then sends a command LEASE;
 *   announce:N  announces a dataset of N bytes (with DATA's hash) and
 *          answers every FETCH with that many bytes of 'x' until the
 *          worker goes, then prints "served K" (the bytes it sent).
 * The command, `touch MARKER`, would create MARKER if it ran.  Prints each
 * RESULT ("result TRIAL status S: ERROR") and "eof" when the worker goes;
 * exits 0 then, 1 on any error of its own, after 60 s at most.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfl/data.h"
#include "cfl/metrics.h"
#include "cfl/net.h"
#include "cfl/wire.h"

static struct cfl_err err;
static int fd = -1;
static struct cfl_tls *tls;
static struct cfl_buf in;

static void die(const char *what)
{
	fprintf(stderr, "fixture_fakecoord: %s: %s\n", what, err.msg);
	exit(1);
}

static void wait_for(short events)
{
	struct pollfd p = { fd, events, 0 };

	poll(&p, 1, 60000);
}

static void send_all(const void *p, size_t n)
{
	while (n) {
		ssize_t k = cfl_tls_write(tls, p, n);

		if (k < 0 && errno == EAGAIN) {
			wait_for(cfl_tls_want(tls));
			continue;
		}
		if (k <= 0) {
			fprintf(stderr, "fixture_fakecoord: write failed: %s\n",
				cfl_tls_error(tls));
			exit(1);
		}
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

/* Reads more bytes into in; 0 at EOF. */
static int read_more(void)
{
	ssize_t k;

	if (cfl_buf_reserve(&in, 65536))
		exit(1);
	while ((k = cfl_tls_read(tls, in.data + in.len, 65536)) < 0 && errno == EAGAIN)
		wait_for(cfl_tls_want(tls));
	if (k <= 0)
		return 0;
	in.len += (size_t)k;
	return 1;
}

/* The next frame from the worker; 0 at EOF. */
static int recv_msg(struct cfl_wire_msg *m)
{
	for (;;) {
		struct cfl_wire_frame f;
		int r = cfl_wire_decode(in.data, in.len, &f, m, &err);

		if (r < 0)
			die("decode");
		if (r == 0) {
			memmove(in.data, in.data + f.size, in.len - f.size);
			in.len -= f.size;
			return 1;
		}
		if (!read_more())
			return 0;
	}
}

static void send_msg(const struct cfl_wire_msg *m)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	if (cfl_wire_encode(&b, 0, 0, m, &err))
		die("encode");
	send_all(b.data, b.len);
	cfl_buf_release(&b);
}

static void handshake(const struct cfl_token *token)
{
	int r = 0;

	tls = cfl_tls_new(fd, CFL_TLS_SERVER, token, &err);
	if (!tls)
		die("tls");
	while (r == 0) {
		short want = POLLIN;

		r = cfl_tls_handshake(tls, &want, NULL, &err);
		if (r < 0)
			die("handshake");
		if (r == 0)
			wait_for(want);
	}
}

static void lease(int64_t id, const char *model, unsigned flags)
{
	struct cfl_wire_msg m;

	cfl_wire_msg_init(&m, CFL_WIRE_LEASE);
	m.u.lease.trial_id = id;
	m.u.lease.attempt = 1;
	m.u.lease.model = (char *)model;
	m.u.lease.seed = 7;
	m.u.lease.flags = flags;
	m.u.lease.threads = 1;
	m.u.lease.n_metrics = 1;
	m.u.lease.metrics[0] = (uint8_t)CFL_M_ACC;
	send_msg(&m);
}

/* Prints results until the lease `until` is answered (0: until EOF). */
static void results(int64_t until)
{
	struct cfl_wire_msg m;

	while (recv_msg(&m)) {
		if (m.type == CFL_WIRE_RESULT) {
			int64_t id = m.u.result.trial_id;

			printf("result %lld status %u: %s\n", (long long)id,
			       m.u.result.status,
			       m.u.result.status ? (m.u.result.error ? m.u.result.error : "?")
						 : "ok");
			fflush(stdout);
			cfl_wire_msg_release(&m);
			if (id == until)
				return;
			continue;
		}
		cfl_wire_msg_release(&m);	/* heartbeats */
	}
	printf("eof\n");
	fflush(stdout);
	if (until) {
		fprintf(stderr, "fixture_fakecoord: no result for trial %lld\n",
			(long long)until);
		exit(1);
	}
	exit(0);
}

int main(int argc, char **argv)
{
	struct cfl_data_opts o;
	struct cfl_data d;
	struct cfl_buf parts, cmd;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct cfl_wire_msg m;
	unsigned char sha[32];
	struct cfl_token token;
	int ls, late;
	uint64_t announce = 0;

	if (argc == 5 && !strncmp(argv[3], "announce:", 9))
		announce = strtoull(argv[3] + 9, NULL, 10);
	if (argc != 5 || (strcmp(argv[3], "early") && strcmp(argv[3], "late") &&
			  !announce)) {
		fprintf(stderr, "usage: fixture_fakecoord DATA.csv MARKER "
			"early|late|announce:N TOKEN_FILE\n");
		return 2;
	}
	if (cfl_token_load(&token, argv[4], &err))
		die("token");
	late = !strcmp(argv[3], "late");
	alarm(60);
	cfl_data_opts_init(&o);
	o.path = argv[1];
	cfl_buf_init(&parts);
	cfl_buf_init(&cmd);
	cfl_buf_init(&in);
	if (cfl_data_load(&d, &o, &err) || cfl_data_pack_parts(&d, &parts, &err) ||
	    cfl_sha256(parts.data, parts.len, sha, &err))
		die(argv[1]);
	cfl_buf_printf(&cmd, "touch '%s'", argv[2]);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(ls, 1) || getsockname(ls, (struct sockaddr *)&sa, &sl)) {
		perror("fixture_fakecoord: listen");
		return 1;
	}
	printf("port %d\n", ntohs(sa.sin_port));
	fflush(stdout);
	fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
	if (fd < 0) {
		perror("fixture_fakecoord: accept");
		return 1;
	}
	handshake(&token);

	if (!recv_msg(&m) || m.type != CFL_WIRE_HELLO) {
		fprintf(stderr, "fixture_fakecoord: expected HELLO\n");
		return 1;
	}
	cfl_wire_msg_release(&m);
	cfl_wire_msg_init(&m, CFL_WIRE_WELCOME);
	m.u.welcome.proto = CFL_WIRE_VERSION;
	m.u.welcome.heartbeat_ms = 1000;
	memcpy(m.u.welcome.data_sha256, sha, 32);
	m.u.welcome.data_size = announce ? announce : parts.len;
	m.u.welcome.config = (char *)"run=fake\nthreads=1\ntrial_timeout=0\n"
				     "metrics=0\n";
	send_msg(&m);
	if (announce) {
		static uint8_t xs[CFL_TCP_CHUNK];
		uint64_t sent = 0;

		memset(xs, 'x', sizeof(xs));
		while (recv_msg(&m)) {
			uint64_t off;

			if (m.type != CFL_WIRE_FETCH) {
				cfl_wire_msg_release(&m);
				continue;
			}
			off = m.u.fetch.offset;
			cfl_wire_msg_release(&m);
			if (off >= announce)
				continue;
			cfl_wire_msg_init(&m, CFL_WIRE_CHUNK);
			memcpy(m.u.chunk.sha256, sha, 32);
			m.u.chunk.offset = off;
			m.u.chunk.total = announce;
			m.u.chunk.n = (uint32_t)(announce - off < CFL_TCP_CHUNK
						 ? announce - off : CFL_TCP_CHUNK);
			m.u.chunk.data = xs;
			send_msg(&m);
			sent += m.u.chunk.n;
		}
		printf("served %llu\n", (unsigned long long)sent);
		cfl_buf_release(&parts);
		cfl_buf_release(&cmd);
		cfl_buf_release(&in);
		cfl_data_release(&d);
		return 0;
	}

	/* FETCH requests: the early fake answers the first with a command */
	for (uint64_t sent = 0; sent < parts.len;) {
		if (!recv_msg(&m))
			results(0);
		if (m.type != CFL_WIRE_FETCH) {
			cfl_wire_msg_release(&m);
			continue;
		}
		if (!late) {
			cfl_wire_msg_release(&m);
			lease(1, cmd.data, CFL_LEASE_COMMAND);
			results(0);
		}
		cfl_wire_msg_init(&m, CFL_WIRE_CHUNK);
		memcpy(m.u.chunk.sha256, sha, 32);
		m.u.chunk.offset = sent;
		m.u.chunk.total = parts.len;
		m.u.chunk.n = (uint32_t)(parts.len - sent < CFL_TCP_CHUNK
						 ? parts.len - sent : CFL_TCP_CHUNK);
		m.u.chunk.data = (uint8_t *)parts.data + sent;
		send_msg(&m);
		sent += m.u.chunk.n;
	}
	lease(1, "linear", 0);
	results(1);
	lease(2, cmd.data, CFL_LEASE_COMMAND);
	results(0);
	return 0;
}
