/*
 * Test helper: token holders that try to make the coordinator hold memory
 * (tests/cli/test_flood.sh, and by hand to measure its peak RSS).
 *
 *   fixture_hog PORT N TYPE SIZE [TOKEN_FILE]
 *
 * N connections (one process each) to 127.0.0.1:PORT, with the token when
 * given, that each join (HELLO, then wait for WELCOME; one after the other,
 * so the coordinator's per-host limit on connections in their handshake
 * does not drop them) and then, all at once, send
 * a frame of type TYPE (a number: 4 RESULT, 9 CHUNK, ...) announcing SIZE
 * payload bytes, then all of them but the last.  Each prints "sent" once
 * it has, or "dropped" when the coordinator closed it first, then waits to
 * be killed.  Exits 0 (the parent, once every child printed), or 1 on an
 * error of its own.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfl/net.h"
#include "cfl/wire.h"

static int join(struct cfl_link *l, int port, int i, const struct cfl_token *tok)
{
	struct cfl_wire_msg m;
	struct cfl_err err;
	char name[32];
	int fatal, r;

	cfl_link_init(l);
	if (cfl_link_connect(l, "127.0.0.1", port, tok, 30, 30, &fatal, &err)) {
		fprintf(stderr, "fixture_hog: %s\n", err.msg);
		return -1;
	}
	snprintf(name, sizeof(name), "hog%d", i);
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION;
	m.u.hello.n_slots = 1;
	m.u.hello.name = name;
	if (cfl_link_send(l, &m, 30, &err)) {
		fprintf(stderr, "fixture_hog: %s\n", err.msg);
		return -1;
	}
	while ((r = cfl_link_recv(l, &m, 30, &err)) == 1) {
		int type = m.type;

		cfl_wire_msg_release(&m);
		if (type == CFL_WIRE_WELCOME)
			return 0;
		if (type == CFL_WIRE_ERROR || type == CFL_WIRE_SHUTDOWN)
			break;
	}
	fprintf(stderr, "fixture_hog: not welcomed\n");
	return -1;
}

/* The header, then all but the last payload byte. */
static int send_hog(struct cfl_link *l, int type, uint32_t size)
{
	static char block[1 << 16];
	unsigned char h[CFL_WIRE_HEADER_SIZE] = { 'C', 'F', 'L', 'W', CFL_WIRE_VERSION,
						  (unsigned char)type };
	size_t left = size ? (size_t)size - 1 : 0;
	struct cfl_err err;

	for (int i = 0; i < 4; i++)
		h[16 + i] = (unsigned char)(size >> (8 * i));
	if (cfl_link_send_frame(l, h, sizeof(h), 600, &err))
		return -1;
	memset(block, 'x', sizeof(block));
	while (left) {
		size_t k = left < sizeof(block) ? left : sizeof(block);

		if (cfl_link_send_frame(l, block, k, 600, &err))
			return -1;	/* the coordinator dropped us */
		left -= k;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cfl_token tok, *tp = NULL;
	struct cfl_err err;
	int port, n, type;
	uint32_t size;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: fixture_hog PORT N TYPE SIZE [TOKEN_FILE]\n");
		return 2;
	}
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	type = atoi(argv[3]);
	size = (uint32_t)strtoul(argv[4], NULL, 10);
	if (argc == 6) {
		if (cfl_token_load(&tok, argv[5], &err)) {
			fprintf(stderr, "fixture_hog: %s\n", err.msg);
			return 1;
		}
		tp = &tok;
	}
	signal(SIGPIPE, SIG_IGN);
	alarm(600);
	for (int i = 0; i < n; i++) {
		struct cfl_link l;
		int go[2];
		char c = 0;

		if (pipe(go))
			return 1;
		if (fork() != 0) {
			/* on to the next once this one joined (or failed) */
			close(go[1]);
			if (read(go[0], &c, 1) != 1 || c != 'j')
				return 1;
			close(go[0]);
			continue;
		}
		close(go[0]);
		/* a child dies with the parent (a test kills the parent, maybe
		 * before it learned every child's pid); alarms are not
		 * inherited */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(600);
		if (join(&l, port, i, tp))
			_exit(1);
		c = 'j';
		if (write(go[1], &c, 1) != 1)
			_exit(1);
		close(go[1]);
		printf("%s\n", send_hog(&l, type, size) == 0 ? "sent" : "dropped");
		fflush(stdout);
		pause();
		_exit(0);
	}
	pause();
	return 0;
}
