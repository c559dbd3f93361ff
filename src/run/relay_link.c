/*
 * The two links a relay runs over (see relay.h): plain frames on a
 * connected stream socket (an MPI worker rank's socket to its pump, a
 * socketpair in tests), and the TCP link of `cfl worker`, which only wraps
 * struct cfl_link's public functions (tcp.c owns its handshake and MACs).
 */
#include "cfl/relay.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

/* ---- plain frames on a socket ---- */

void cfl_fd_link_init(struct cfl_fd_link *l, int fd)
{
	l->fd = fd;
	cfl_buf_init(&l->in);
}

static int fd_send(void *ctx, const struct cfl_wire_msg *m, double timeout,
		   struct cfl_err *err)
{
	struct cfl_fd_link *l = ctx;
	double deadline = cfl_now() + timeout;
	struct cfl_buf b;
	size_t off = 0;
	int rc = 0;

	if (l->fd < 0)
		return cfl_err_set(err, "not connected");
	cfl_buf_init(&b);
	if (cfl_wire_encode(&b, 0, 0, m, err))
		return -1;
	while (off < b.len) {
		ssize_t n = send(l->fd, b.data + off, b.len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			off += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd p = { l->fd, POLLOUT, 0 };
			double left = deadline - cfl_now();

			if (left <= 0) {
				rc = cfl_err_set(err, "send timed out (the "
						 "coordinator does not read)");
				break;
			}
			poll(&p, 1, (int)(left * 1000) + 1);
		} else {
			rc = cfl_err_set(err, "the coordinator is gone: %s",
					 n < 0 ? strerror(errno) : "closed");
			break;
		}
	}
	cfl_buf_release(&b);
	return rc;
}

/* Decodes the next buffered frame: 1 with m, 0 when none is whole. */
static int fd_next(struct cfl_fd_link *l, struct cfl_wire_msg *m,
		   struct cfl_err *err)
{
	struct cfl_wire_frame f;
	int r;

	if (!l->in.len)
		return 0;
	r = cfl_wire_decode(l->in.data, l->in.len, &f, m, err);
	if (r == 1)
		return 0;
	if (r < 0)
		return cfl_err_prefix(err, "a bad frame from the coordinator");
	memmove(l->in.data, l->in.data + f.size, l->in.len - f.size);
	l->in.len -= f.size;
	return 1;
}

/* Reads what has arrived without blocking; -1 with err on EOF. */
static int fd_read(struct cfl_fd_link *l, struct cfl_err *err)
{
	for (;;) {
		ssize_t n;

		if (cfl_buf_reserve(&l->in, 65536))
			return cfl_err_set(err, "out of memory");
		n = recv(l->fd, l->in.data + l->in.len, 65536, MSG_DONTWAIT);
		if (n > 0) {
			l->in.len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return cfl_err_set(err, "the coordinator closed the connection");
	}
}

static int fd_recv(void *ctx, struct cfl_wire_msg *m, double timeout,
		   struct cfl_err *err)
{
	struct cfl_fd_link *l = ctx;
	double deadline = cfl_now() + timeout;

	if (l->fd < 0)
		return cfl_err_set(err, "not connected");
	for (;;) {
		struct pollfd p = { l->fd, POLLIN, 0 };
		double left;
		int r = fd_next(l, m, err);

		if (r)
			return r;
		left = deadline - cfl_now();
		if (timeout > 0 && left > 0 &&
		    poll(&p, 1, (int)(left * 1000) + 1) == 0)
			return 0;
		/* a frame cut by EOF is what came before the EOF: read it
		 * first, then report the EOF */
		if (fd_read(l, err)) {
			r = fd_next(l, m, err);
			return r ? r : -1;
		}
		if (timeout <= 0 || left <= 0)
			return fd_next(l, m, err);
	}
}

static int fd_fd(void *ctx)
{
	return ((struct cfl_fd_link *)ctx)->fd;
}

static void fd_close(void *ctx)
{
	struct cfl_fd_link *l = ctx;

	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	cfl_buf_release(&l->in);
	cfl_buf_init(&l->in);
}

static const struct cfl_relay_link_ops fd_ops = {
	.send = fd_send,
	.recv = fd_recv,
	.fd = fd_fd,
	.close = fd_close,
	.connect = NULL,	/* a lost socket is the end */
};

struct cfl_relay_link cfl_fd_link_relay(struct cfl_fd_link *l)
{
	return (struct cfl_relay_link){ &fd_ops, l };
}

/* ---- TCP: struct cfl_link ---- */

void cfl_tcp_relay_link_init(struct cfl_tcp_relay_link *l, const char *host,
			     int port, const struct cfl_token *token)
{
	cfl_link_init(&l->link);
	l->host = host;
	l->port = port;
	l->token = token;
}

static int tcp_send(void *ctx, const struct cfl_wire_msg *m, double timeout,
		    struct cfl_err *err)
{
	return cfl_link_send(&((struct cfl_tcp_relay_link *)ctx)->link, m,
			     timeout, err);
}

static int tcp_recv(void *ctx, struct cfl_wire_msg *m, double timeout,
		    struct cfl_err *err)
{
	struct cfl_link *l = &((struct cfl_tcp_relay_link *)ctx)->link;
	int r;

	if (timeout > 0)
		return cfl_link_recv(l, m, timeout, err);
	r = cfl_link_next(l, m, err);
	if (r)
		return r;
	if (cfl_link_read(l, err)) {
		/* frames that came before the EOF first */
		r = cfl_link_next(l, m, err);
		return r ? r : -1;
	}
	return cfl_link_next(l, m, err);
}

static int tcp_fd(void *ctx)
{
	return ((struct cfl_tcp_relay_link *)ctx)->link.fd;
}

static void tcp_close(void *ctx)
{
	cfl_link_close(&((struct cfl_tcp_relay_link *)ctx)->link);
}

static int tcp_connect(void *ctx, int *fatal, struct cfl_err *err)
{
	struct cfl_tcp_relay_link *l = ctx;

	return cfl_link_connect(&l->link, l->host, l->port, l->token, 10,
				CFL_RELAY_WELCOME_WAIT, fatal, err);
}

static const struct cfl_relay_link_ops tcp_ops = {
	.send = tcp_send,
	.recv = tcp_recv,
	.fd = tcp_fd,
	.close = tcp_close,
	.connect = tcp_connect,
};

struct cfl_relay_link cfl_tcp_relay_link(struct cfl_tcp_relay_link *l)
{
	return (struct cfl_relay_link){ &tcp_ops, l };
}
