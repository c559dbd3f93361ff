/*
 * Test helper: hostile or vanishing workers against a coordinator on
 * 127.0.0.1 without a token (tests/cli/test_worker.sh, and by hand to
 * measure the coordinator's memory).
 *
 *   fixture_ghost PORT N ghost     N times: join (HELLO), wait for a LEASE,
 *                                  vanish without a word; prints "leases K"
 *   fixture_ghost PORT N big       N connections (one process each, at
 *                                  once) that each join and then send all
 *                                  but the last byte of a RESULT of the
 *                                  largest size the codec allows; each
 *                                  prints "held" or "dropped", then waits
 *                                  to be killed
 *   fixture_ghost PORT N prebig    the same without joining first
 *
 * Exits 0, or 1 on an error of its own.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfl/net.h"
#include "cfl/wire.h"

static int join(struct cfl_link *l, int port, int i, int wait_lease)
{
	struct cfl_wire_msg m;
	struct cfl_err err;
	char name[32];
	int fatal, r;

	cfl_link_init(l);
	if (cfl_link_connect(l, "127.0.0.1", port, NULL, 10, 10, &fatal, &err)) {
		fprintf(stderr, "fixture_ghost: %s\n", err.msg);
		return -1;
	}
	snprintf(name, sizeof(name), "ghost%d", i);
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION;
	m.u.hello.n_slots = 1;
	m.u.hello.name = name;
	if (cfl_link_send(l, &m, 10, &err)) {
		fprintf(stderr, "fixture_ghost: %s\n", err.msg);
		return -1;
	}
	while ((r = cfl_link_recv(l, &m, 10, &err)) == 1) {
		int type = m.type;

		cfl_wire_msg_release(&m);
		if (type == CFL_WIRE_LEASE || (!wait_lease && type == CFL_WIRE_WELCOME))
			return 1;
		if (type == CFL_WIRE_ERROR || type == CFL_WIRE_SHUTDOWN)
			return 0;
	}
	return 0;
}

/* All but the last byte of the largest RESULT frame. */
static int send_big(int fd)
{
	static char block[1 << 16];
	unsigned char h[CFL_WIRE_HEADER_SIZE] = { 'C', 'F', 'L', 'W', CFL_WIRE_VERSION,
						  CFL_WIRE_RESULT };
	uint32_t n = CFL_WIRE_MAX_PAYLOAD;
	size_t left = (size_t)n - 1;

	for (int i = 0; i < 4; i++)
		h[16 + i] = (unsigned char)(n >> (8 * i));
	if (send(fd, h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h))
		return -1;
	memset(block, 'x', sizeof(block));
	while (left) {
		size_t k = left < sizeof(block) ? left : sizeof(block);
		ssize_t w = send(fd, block, k, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;	/* the coordinator dropped us */
		left -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int port, n, leases = 0;
	const char *mode;

	if (argc != 4) {
		fprintf(stderr, "usage: fixture_ghost PORT N ghost|big|prebig\n");
		return 2;
	}
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	mode = argv[3];
	alarm(300);
	if (!strcmp(mode, "ghost")) {
		for (int i = 0; i < n; i++) {
			struct cfl_link l;
			int r = join(&l, port, i, 1);

			cfl_link_close(&l);
			if (r < 0)
				return 1;
			leases += r;
		}
		printf("leases %d\n", leases);
		return 0;
	}
	if (strcmp(mode, "big") && strcmp(mode, "prebig"))
		return 2;
	for (int i = 0; i < n; i++) {
		struct cfl_link l;

		if (fork() != 0)
			continue;
		if (!strcmp(mode, "big")) {
			if (join(&l, port, i, 0) <= 0)
				_exit(1);
		} else {
			struct cfl_err err;
			int fatal;

			cfl_link_init(&l);
			if (cfl_link_connect(&l, "127.0.0.1", port, NULL, 10, 10, &fatal, &err))
				_exit(1);
		}
		printf("%s\n", send_big(l.fd) == 0 ? "held" : "dropped");
		fflush(stdout);
		pause();
		_exit(0);
	}
	pause();
	return 0;
}
