/*
 * Test helper: a token holder's attacks on a coordinator at 127.0.0.1
 * without a token (plain frames; tests/cli/test_forged.sh, and by hand to
 * measure them).
 *
 *   fixture_forged proxy LISTEN_PORT COORD_PORT KIND N
 *       A man in the middle between one real `cfl worker` (connecting to
 *       LISTEN_PORT; 0: any free port, printed as "listening PORT") and
 *       the coordinator: the worker runs the trials, and
 *       the first N of its OK RESULTs are changed on the way (KIND):
 *         metric  test's first metric renamed 'accuracy'
 *         shape   test's predictions cut to 3 rows x 1
 *         rows    the first out-of-fold row index made 9999
 *         model   the model text replaced by one that does not load
 *         extra   valid's predictions kept though the lease did not ask
 *       Prints "forged K" when the worker's connection ends.
 *   fixture_forged vanish PORT CYCLES hb|nohb
 *       CYCLES times: connect, HELLO with 64 slots, take every lease the
 *       coordinator sends (until none comes for 0.5 s), with hb send one
 *       HEARTBEAT, then reset the connection.  Prints "leases K".
 *
 * Exits 0, or 1 on an error of its own.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cfl/net.h"
#include "cfl/wire.h"

static int die(const char *what, const char *msg)
{
	fprintf(stderr, "fixture_forged: %s: %s\n", what, msg);
	return 1;
}

/* ---- vanish ---- */

static int vanish(int port, int cycles, int hb)
{
	int leases = 0;

	for (int i = 0; i < cycles; i++) {
		struct cfl_link l;
		struct cfl_wire_msg m;
		struct cfl_err err;
		struct linger lg = { 1, 0 };
		char name[32];
		int fatal, r;

		cfl_link_init(&l);
		if (cfl_link_connect(&l, "127.0.0.1", port, NULL, 10, 10, &fatal, &err))
			return die("connect", err.msg);
		snprintf(name, sizeof(name), "vanish%d", i);
		cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
		m.u.hello.proto = CFL_WIRE_VERSION;
		m.u.hello.n_slots = 64;
		m.u.hello.name = name;
		if (cfl_link_send(&l, &m, 10, &err))
			return die("send", err.msg);
		while ((r = cfl_link_recv(&l, &m, 0.5, &err)) == 1) {
			int type = m.type;

			cfl_wire_msg_release(&m);
			leases += type == CFL_WIRE_LEASE;
			if (type == CFL_WIRE_ERROR || type == CFL_WIRE_SHUTDOWN)
				break;
		}
		if (hb) {
			cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
			if (cfl_link_send(&l, &m, 10, &err) == 0)
				usleep(50000);	/* read before the reset */
		}
		/* a reset, not a FIN: linger 0 */
		setsockopt(l.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		cfl_link_close(&l);
	}
	printf("leases %d\n", leases);
	return 0;
}

/* ---- proxy ---- */

static const char *kind;
static int n_forge, n_forged;

/* Changes r as kind says; 1 when it did. */
static int forge(struct cfl_wire_result *r)
{
	struct cfl_wire_split *test = &r->split[1], *valid = &r->split[0];
	struct cfl_wire_split *oof = &r->split[2];

	if (r->status != CFL_RESULT_OK)
		return 0;
	if (!strcmp(kind, "metric") && test->n_metrics) {
		snprintf(test->metrics[0].name, sizeof(test->metrics[0].name), "accuracy");
		return 1;
	}
	if (!strcmp(kind, "shape") && test->pred && test->n >= 3) {
		test->n = 3;
		test->n_out = 1;
		return 1;
	}
	if (!strcmp(kind, "rows") && oof->rows && oof->n) {
		oof->rows[0] = 9999;
		return 1;
	}
	if (!strcmp(kind, "model") && r->model) {
		free(r->model);
		r->model = strdup("cfl-model 1\nmodel linear\nstate\nnothing\n");
		return 1;
	}
	if (!strcmp(kind, "extra") && !valid->pred && test->pred) {
		valid->pred = malloc(test->n * test->n_out * sizeof(double));
		if (!valid->pred)
			return 0;
		memcpy(valid->pred, test->pred, test->n * test->n_out * sizeof(double));
		valid->n = test->n;
		valid->n_out = test->n_out;
		return 1;
	}
	return 0;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Forwards the whole frames in in (worker -> coordinator), forging
 * RESULTs; keeps a partial frame.  0, or -1. */
static int pass_frames(struct cfl_buf *in, int to)
{
	size_t pos = 0;

	for (;;) {
		struct cfl_wire_frame f;
		struct cfl_wire_msg m;
		struct cfl_err err;
		int r = cfl_wire_frame_split(in->data + pos, in->len - pos, &f, &err);

		if (r == 1)
			break;
		if (r < 0)
			return die("frame", err.msg);
		if (f.type == CFL_WIRE_RESULT && n_forged < n_forge &&
		    cfl_wire_payload_decode(f.type, f.payload, f.length, &m, &err) == 0) {
			struct cfl_buf out;

			cfl_buf_init(&out);
			if (forge(&m.u.result)) {
				if (cfl_wire_encode(&out, f.seq, f.flags, &m, &err))
					return die("encode", err.msg);
				n_forged++;
				cfl_wire_msg_release(&m);
				if (send_all(to, out.data, out.len))
					return -1;
				cfl_buf_release(&out);
				pos += f.size;
				continue;
			}
			cfl_wire_msg_release(&m);
		}
		if (send_all(to, in->data + pos, f.size))
			return -1;
		pos += f.size;
	}
	memmove(in->data, in->data + pos, in->len - pos);
	in->len -= pos;
	return 0;
}

static int proxy(int listen_port, int coord_port)
{
	struct sockaddr_in a;
	int one = 1, ls, w, c;
	struct cfl_buf in;
	char buf[65536];

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)listen_port);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 4))
		return die("listen", strerror(errno));
	{
		socklen_t al = sizeof(a);

		getsockname(ls, (struct sockaddr *)&a, &al);
		printf("listening %d\n", ntohs(a.sin_port));
	}
	fflush(stdout);
	w = accept(ls, NULL, NULL);
	if (w < 0)
		return die("accept", strerror(errno));
	a.sin_port = htons((uint16_t)coord_port);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
		return die("connect", strerror(errno));
	cfl_buf_init(&in);
	for (;;) {
		struct pollfd p[2] = { { w, POLLIN, 0 }, { c, POLLIN, 0 } };
		ssize_t k;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return die("poll", strerror(errno));
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			k = recv(c, buf, sizeof(buf), 0);
			if (k <= 0 || send_all(w, buf, (size_t)k))
				break;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			k = recv(w, buf, sizeof(buf), 0);
			if (k <= 0 || cfl_buf_append(&in, buf, (size_t)k) ||
			    pass_frames(&in, c))
				break;
		}
	}
	close(w);
	close(c);
	close(ls);
	cfl_buf_release(&in);
	printf("forged %d\n", n_forged);
	return 0;
}

int main(int argc, char **argv)
{
	alarm(300);
	if (argc == 5 && !strcmp(argv[1], "vanish"))
		return vanish(atoi(argv[2]), atoi(argv[3]), !strcmp(argv[4], "hb"));
	if (argc == 6 && !strcmp(argv[1], "proxy")) {
		kind = argv[4];
		n_forge = atoi(argv[5]);
		return proxy(atoi(argv[2]), atoi(argv[3]));
	}
	fprintf(stderr, "usage: fixture_forged proxy LISTEN_PORT COORD_PORT KIND N\n"
		"       fixture_forged vanish PORT CYCLES hb|nohb\n");
	return 2;
}
