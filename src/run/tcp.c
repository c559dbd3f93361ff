/*
 * The TCP transport: remote workers (`cfl worker --connect`) as pool peers.
 * The coordinator side is one pool source (an epoll set of the listening
 * socket, connections in their TLS handshake and a heartbeat timer); a
 * connection that completes the handshake (tls.c; at once without a token)
 * becomes a peer whose bytes the pool reads and writes through its TLS
 * session (tcp_read / tcp_write).  The worker side is struct cfl_link.
 *
 * Invariants: a connection in its handshake lives at most
 * handshake_timeout seconds, and at most max_pending of them exist (when
 * they are all taken, a newcomer from a host holding fewer than the
 * busiest host takes the place of that host's oldest); nothing
 * is decoded from a peer before its handshake; a peer
 * silent for dead_after seconds is shut down, so the pool requeues its
 * leases.  Knows the wire layout only through wire.h.
 */
#include "cfl/net.h"
#include "cfl/relay.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define TICK_MS 200

/* ---- addresses ---- */

int cfl_net_parse_hostport(const char *s, char *host, size_t cap, int *port,
			   struct cfl_err *err)
{
	const char *colon, *h = s;
	size_t hl;
	long p;
	char *end;

	if (!s || !*s)
		return cfl_err_set(err, "empty address (want HOST:PORT)");
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return cfl_err_set(err, "bad address '%s' (want [IPV6]:PORT)", s);
		h = s + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return cfl_err_set(err, "bad address '%s' (want HOST:PORT)", s);
		hl = (size_t)(colon - s);
	}
	if (!hl || hl >= cap)
		return cfl_err_set(err, "bad host in '%s'", s);
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || p < 0 || p > 65535)
		return cfl_err_set(err, "bad port in '%s' (want 0..65535)", s);
	memcpy(host, h, hl);
	host[hl] = 0;
	*port = (int)p;
	return 0;
}

int cfl_net_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!strcmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* small frames (a lease, an ack) must not wait for Nagle */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int cfl_net_nodelay_all(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		int type = 0, domain = 0;
		socklen_t len = sizeof(type);

		if (*end || end == e->d_name || fd == dirfd(d))
			continue;
		if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
		    type != SOCK_STREAM)
			continue;
		len = sizeof(domain);
		if (getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
		    (domain != AF_INET && domain != AF_INET6))
			continue;
		set_nodelay((int)fd);
		n++;
	}
	closedir(d);
	return n;
}

/* ---- coordinator: state ---- */

/* A connection still in its TLS handshake. */
struct pending {
	int fd;
	char addr[64], host[64];
	double since, deadline;
	struct cfl_tls *tls;
	int started;		/* the handshake has read from the socket */
	struct pending *next;
};

/* An authenticated connection, handed to the pool as a peer. */
struct tpeer {
	struct cfl_tcp *t;
	struct cfl_peer *peer;
	struct cfl_tls *tls;	/* NULL: plain (no token) */
	char addr[64], host[64];
	double since;		/* connected at (cfl_now) */
	double last_recv, last_hb;
	int hello;
	int shut;		/* shut down by us; the pool reaps it next */
	char why[200];		/* why we dropped it (for its trials) */
	struct tpeer *next, **pprev;
};

struct cfl_tcp {
	struct cfl_pool *pool;
	struct cfl_tcp_opts o;
	struct cfl_token token;
	int lfd, efd, tfd;
	int port;
	struct cfl_buf data;	/* the dataset file's bytes */
	unsigned char sha[32];
	char *config;
	struct pending *pend;
	size_t n_pend;
	struct tpeer *peers;
	unsigned long n_refused;
};

/* The listener whose descriptors forked children must not keep: a child
 * holding a copy of a refused connection would keep it open. */
static struct cfl_tcp *g_tcp;
static int g_bound_fd = -1;	/* cfl_tcp_bind's, not yet taken over */
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	struct cfl_tcp *t = g_tcp;

	if (g_bound_fd >= 0)
		close(g_bound_fd);
	if (!t)
		return;
	if (t->lfd >= 0)
		close(t->lfd);
	if (t->tfd >= 0)
		close(t->tfd);
	for (struct pending *p = t->pend; p; p = p->next)
		close(p->fd);
	/* the epoll fd is a pool source: the pool closes it in children */
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static void logf_(struct cfl_tcp *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logf_(struct cfl_tcp *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!t || !t->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	t->o.log(t->o.log_ctx, msg);
}

/* A refusal before HELLO: logged, but a flood must not flood the log too
 * (the first 10, then every 100th). */
static void refused_(struct cfl_tcp *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void refused_(struct cfl_tcp *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!t || !t->o.log)
		return;
	if (++t->n_refused > 10 && t->n_refused % 100)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t->n_refused > 10)
		logf_(t, "%s (%lu refused so far)", msg, t->n_refused);
	else
		logf_(t, "%s", msg);
}

/* The host part of a peer address (for per-host limits). */
static void host_name(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ss)->sin_addr,
			  h, sizeof(h));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr,
			  h, sizeof(h));
	snprintf(out, cap, "%s", h);
}

static void addr_name(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char h[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
		port = ntohs(a->sin_port);
		snprintf(out, cap, "%s:%d", h, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		port = ntohs(a->sin6_port);
		snprintf(out, cap, "[%s]:%d", h, port);
	} else {
		snprintf(out, cap, "?");
	}
}

/* Best-effort send of a few bytes on a non-blocking socket (a FAIL or
 * ERROR before closing): the socket's buffer is empty then, so they fit. */
static void send_now(int fd, const void *data, size_t len)
{
	ssize_t r;

	do
		r = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
}

/* ---- coordinator: connections in their handshake ---- */

static void pending_drop(struct cfl_tcp *t, struct pending *p)
{
	struct pending **pp = &t->pend;

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp)
		*pp = p->next;
	t->n_pend--;
	epoll_ctl(t->efd, EPOLL_CTL_DEL, p->fd, NULL);
	close(p->fd);
	cfl_tls_free(p->tls);
	free(p);
}

static const struct cfl_peer_ops tcp_ops, tcp_tls_ops;

/* A connection ready for frames (its handshake done, or none without a
 * token) becomes a pool peer; tls (may be NULL) is taken over. */
static void promote(struct cfl_tcp *t, int fd, const char *addr,
		    const char *host, double since, struct cfl_tls *tls)
{
	struct tpeer *tp = calloc(1, sizeof(*tp));
	struct cfl_err err;

	if (!tp) {
		logf_(t, "refused worker %s: out of memory", addr);
		close(fd);
		cfl_tls_free(tls);
		return;
	}
	tp->t = t;
	tp->tls = tls;
	snprintf(tp->addr, sizeof(tp->addr), "%s", addr);
	snprintf(tp->host, sizeof(tp->host), "%s", host);
	tp->since = since;
	tp->last_recv = tp->last_hb = cfl_now();
	tp->peer = cfl_pool_add_peer(t->pool, fd, tls ? &tcp_tls_ops : &tcp_ops,
				     tp, 0, addr, &err);
	if (!tp->peer) {
		logf_(t, "refused worker %s: %s", addr, err.msg);
		close(fd);
		cfl_tls_free(tls);
		free(tp);
		return;
	}
	tp->next = t->peers;
	if (t->peers)
		t->peers->pprev = &tp->next;
	tp->pprev = &t->peers;
	t->peers = tp;
}

/* The handshake succeeded: the pending connection becomes a pool peer. */
static void pending_promote(struct cfl_tcp *t, struct pending *p)
{
	struct pending **pp = &t->pend;

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp)
		*pp = p->next;
	t->n_pend--;
	epoll_ctl(t->efd, EPOLL_CTL_DEL, p->fd, NULL);
	promote(t, p->fd, p->addr, p->host, p->since, p->tls);
	free(p);
}

/* A worker without a token speaks wire frames at once: tell it why it is
 * refused, in a frame it can read, instead of a TLS alert it cannot. */
static int plain_worker(struct cfl_tcp *t, struct pending *p)
{
	char head[4];
	ssize_t k = recv(p->fd, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
	struct cfl_wire_msg m;
	struct cfl_buf b;

	if (k != (ssize_t)sizeof(head) || memcmp(head, CFL_WIRE_MAGIC, 4))
		return 0;
	cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
	m.u.error.code = CFL_WIRE_E_PROTOCOL;
	m.u.error.message = "authentication failed: this coordinator speaks TLS "
			    "with a token (give the worker --token-file)";
	cfl_buf_init(&b);
	if (cfl_wire_encode(&b, 0, 0, &m, NULL) == 0)
		send_now(p->fd, b.data, b.len);
	cfl_buf_release(&b);
	logf_(t, "refused connection from %s: authentication failed (a worker "
	      "without a token)", p->addr);
	pending_drop(t, p);
	return 1;
}

static void pending_ready(struct cfl_tcp *t, struct pending *p)
{
	struct epoll_event ev;
	struct cfl_err err;
	short want = POLLIN;
	int fatal, rc;

	if (!p->started) {
		if (plain_worker(t, p))
			return;
		p->started = 1;
	}
	rc = cfl_tls_handshake(p->tls, &want, &fatal, &err);
	if (rc < 0) {
		refused_(t, "refused connection from %s: %s%s", p->addr, err.msg,
			 fatal ? " (a worker with another token?)" : "");
		pending_drop(t, p);
		return;
	}
	if (rc == 1) {
		pending_promote(t, p);
		return;
	}
	ev.events = want == POLLOUT ? EPOLLOUT : EPOLLIN;
	ev.data.ptr = p;
	epoll_ctl(t->efd, EPOLL_CTL_MOD, p->fd, &ev);
}

static void tpeer_quiet_shut(struct tpeer *tp, const char *why);

/* The oldest connection before its HELLO. */
struct oldest {
	struct pending *p;
	struct tpeer *tp;
};

/* How many connections from host (NULL: any) are still before their
 * HELLO: in the TLS handshake, or plain and silent so far; *o gets the
 * oldest of them. */
static size_t unwelcomed(struct cfl_tcp *t, const char *host, struct oldest *o)
{
	double since = 0;
	size_t n = 0;

	o->p = NULL;
	o->tp = NULL;
	for (struct pending *p = t->pend; p; p = p->next)
		if (!host || !strcmp(p->host, host)) {
			if (!n++ || p->since < since) {
				since = p->since;
				o->p = p;
			}
		}
	for (struct tpeer *tp = t->peers; tp; tp = tp->next)
		if (!tp->hello && !tp->shut && (!host || !strcmp(tp->host, host))) {
			if (!n++ || tp->since < since) {
				since = tp->since;
				o->p = NULL;
				o->tp = tp;
			}
		}
	return n;
}

/* The host with the most connections before their HELLO, into top: how
 * many it holds (0 when there are none). */
static size_t busiest_host(struct cfl_tcp *t, char *top, size_t cap)
{
	struct oldest o;
	size_t best = 0;

	top[0] = 0;
	for (struct pending *p = t->pend; p; p = p->next) {
		size_t n = unwelcomed(t, p->host, &o);

		if (n > best) {
			best = n;
			snprintf(top, cap, "%s", p->host);
		}
	}
	for (struct tpeer *tp = t->peers; tp; tp = tp->next) {
		size_t n;

		if (tp->hello || tp->shut)
			continue;
		n = unwelcomed(t, tp->host, &o);
		if (n > best) {
			best = n;
			snprintf(top, cap, "%s", tp->host);
		}
	}
	return best;
}

static void accept_all(struct cfl_tcp *t)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct pending *p;
		struct epoll_event ev;
		struct cfl_err err;
		struct oldest oldest;
		size_t n;
		int fd = accept4(t->lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		char addr[64], host[64];

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				logf_(t, "cannot accept a connection: %s",
				      strerror(errno));
			return;
		}
		addr_name(&ss, addr, sizeof(addr));
		host_name(&ss, host, sizeof(host));
		set_nodelay(fd);
		n = unwelcomed(t, host, &oldest);
		if (n >= t->o.max_pending_per_host) {
			/* idle sockets from one host must not lock out a
			 * worker from there: the oldest gives way */
			refused_(t, "dropped a connection from %s: %zu connections "
				 "from '%s' already in their handshake (the oldest "
				 "gives way to a new one)", oldest.p ? oldest.p->addr
				 : oldest.tp->addr, n, host);
			if (oldest.p)
				pending_drop(t, oldest.p);
			else
				tpeer_quiet_shut(oldest.tp, "too many connections in their "
						 "handshake from its host");
		} else if ((n = unwelcomed(t, NULL, &oldest)) >= t->o.max_pending) {
			char top[64];
			size_t n_top = busiest_host(t, top, sizeof(top));

			if (n_top <= unwelcomed(t, host, &oldest)) {
				/* its host holds as many as any: closed
				 * unanswered, the worker tries again later */
				close(fd);
				refused_(t, "refused connection from %s: %zu "
					 "connections already in their handshake",
					 addr, n);
				continue;
			}
			/* a host holding fewer takes the place of the oldest
			 * of the host holding most: a flood from a few hosts
			 * cannot shut out a worker from another */
			unwelcomed(t, top, &oldest);
			refused_(t, "dropped a connection from %s: %zu connections "
				 "in their handshake, %zu of them from '%s' (its "
				 "oldest gives way to one from '%s')",
				 oldest.p ? oldest.p->addr : oldest.tp->addr, n,
				 n_top, top, host);
			if (oldest.p)
				pending_drop(t, oldest.p);
			else
				tpeer_quiet_shut(oldest.tp, "too many connections in "
						 "their handshake");
		}
		if (!t->token.len) {
			/* no token (loopback): plain frames from the start */
			promote(t, fd, addr, host, cfl_now(), NULL);
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			continue;
		}
		p->fd = fd;
		snprintf(p->addr, sizeof(p->addr), "%s", addr);
		snprintf(p->host, sizeof(p->host), "%s", host);
		p->since = cfl_now();
		p->deadline = p->since + t->o.handshake_timeout;
		p->tls = cfl_tls_new(fd, CFL_TLS_SERVER, &t->token, &err);
		if (!p->tls) {
			logf_(t, "refused connection from %s: %s", addr, err.msg);
			free(p);
			close(fd);
			continue;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = p;
		if (epoll_ctl(t->efd, EPOLL_CTL_ADD, fd, &ev)) {
			cfl_tls_free(p->tls);
			free(p);
			close(fd);
			continue;
		}
		p->next = t->pend;
		t->pend = p;
		t->n_pend++;
	}
}

/* ---- coordinator: peers ---- */

/* Shuts a peer's socket: the pool sees EOF, reaps it and requeues its
 * leases with tp->why as the reason. */
static void tpeer_shut(struct tpeer *tp, const char *why)
{
	if (tp->shut)
		return;
	tp->shut = 1;
	snprintf(tp->why, sizeof(tp->why), "%.190s", why);
	logf_(tp->t, "dropped worker '%s' (%s): %s", tp->peer->name, tp->addr,
	      why);
	shutdown(tp->peer->fd, SHUT_RDWR);
}

/* tpeer_shut for a connection before its HELLO: the caller logs (rate
 * limited). */
static void tpeer_quiet_shut(struct tpeer *tp, const char *why)
{
	if (tp->shut)
		return;
	tp->shut = 1;
	snprintf(tp->why, sizeof(tp->why), "%.190s", why);
	shutdown(tp->peer->fd, SHUT_RDWR);
}

static void on_timer(struct cfl_tcp *t)
{
	uint64_t n;
	double now = cfl_now();
	ssize_t r = read(t->tfd, &n, sizeof(n));

	(void)r;
	for (struct pending *p = t->pend, *next; p; p = next) {
		next = p->next;
		if (now >= p->deadline) {
			refused_(t, "refused connection from %s: no handshake within "
				 "%g s", p->addr, t->o.handshake_timeout);
			pending_drop(t, p);
		}
	}
	for (struct tpeer *tp = t->peers; tp; tp = tp->next) {
		if (tp->shut)
			continue;
		if (!tp->hello && now - tp->since > t->o.handshake_timeout) {
			refused_(t, "refused connection from %s: no handshake within "
				 "%g s (no HELLO)", tp->addr, t->o.handshake_timeout);
			tpeer_quiet_shut(tp, "no HELLO");
			continue;
		}
		/* the pool is not reading it, or a large frame is coming in
		 * (the pool bounds how slowly): silence is not its fault */
		if (tp->peer->paused || tp->peer->receiving)
			tp->last_recv = now;
		if (now - tp->last_recv > t->o.dead_after) {
			char why[128];

			snprintf(why, sizeof(why), "no frame for %.1f s (missed "
				 "heartbeats)", now - tp->last_recv);
			tpeer_shut(tp, why);
			continue;
		}
		if (tp->hello && now - tp->last_hb >= t->o.heartbeat) {
			struct cfl_wire_msg m;
			struct cfl_err err;

			cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
			m.u.heartbeat.time_ms = (uint64_t)(now * 1000);
			tp->last_hb = now;
			if (cfl_peer_send(tp->peer, &m, &err))
				tpeer_shut(tp, err.msg);
		}
	}
}

static int hub_ready(struct cfl_pool *pool, void *ctx, struct cfl_err *err)
{
	struct cfl_tcp *t = ctx;
	struct epoll_event evs[64];
	int n;

	(void)pool;
	(void)err;
	n = epoll_wait(t->efd, evs, 64, 0);
	for (int i = 0; i < n; i++) {
		void *ptr = evs[i].data.ptr;

		if (ptr == &t->lfd)
			accept_all(t);
		else if (ptr == &t->tfd)
			on_timer(t);
	}
	/* pending connections after the others: accept_all may not free any,
	 * but on_timer may, so look each one up again */
	for (int i = 0; i < n; i++) {
		void *ptr = evs[i].data.ptr;

		if (ptr == &t->lfd || ptr == &t->tfd)
			continue;
		for (struct pending *p = t->pend; p; p = p->next)
			if (p == ptr) {
				pending_ready(t, p);
				break;
			}
	}
	return 0;
}

/* Sends an ERROR to a peer that is about to be dropped: written at once,
 * since the pool writes nothing more to a dropped peer.  Only used while
 * the peer's output is empty (on its HELLO), so frames stay whole. */
static void refuse_peer(struct tpeer *tp, uint32_t code, const char *msg)
{
	struct cfl_wire_msg m;
	struct cfl_buf b;

	cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
	m.u.error.code = code;
	m.u.error.message = (char *)msg;
	cfl_buf_init(&b);
	if (cfl_wire_encode(&b, 0, 0, &m, NULL) == 0) {
		if (tp->tls)
			cfl_tls_write(tp->tls, b.data, b.len);
		else
			send_now(tp->peer->fd, b.data, b.len);
	}
	cfl_buf_release(&b);
}

/* A printable worker name (at most 48 bytes). */
static void clean_name(const char *in, char *out, size_t cap)
{
	size_t k = 0;

	for (; in && in[k] && k + 1 < cap && k < 48; k++)
		out[k] = in[k] > 0x20 && in[k] < 0x7f ? in[k] : '_';
	out[k] = 0;
}

static int on_hello(struct tpeer *tp, const struct cfl_wire_frame *f,
		    struct cfl_err *err)
{
	struct cfl_tcp *t = tp->t;
	struct cfl_wire_msg m, w;
	char name[56], msg[200];
	uint32_t code;
	int rc = 0;

	if (cfl_wire_payload_decode(f->type, f->payload, f->length, &m, err))
		return -1;
	clean_name(m.u.hello.name, name, sizeof(name));
	if (!name[0])
		snprintf(name, sizeof(name), "%.48s", tp->addr);
	if (cfl_hello_check(&m.u.hello, &code, err)) {
		refuse_peer(tp, code, err->msg);
		rc = -1;
	} else {
		size_t n_workers = 0;

		for (struct tpeer *o = t->peers; o; o = o->next)
			n_workers += o != tp && o->hello && !o->shut;
		if (n_workers >= t->o.max_workers) {
			snprintf(msg, sizeof(msg), "the coordinator has its maximum "
				 "of %zu workers (--max-workers)", t->o.max_workers);
			refuse_peer(tp, CFL_WIRE_E_PROTOCOL, msg);
			rc = cfl_err_set(err, "%s", msg);
		}
		for (struct tpeer *o = t->peers; o && !rc; o = o->next)
			if (o != tp && o->hello && !o->shut &&
			    !strcmp(o->peer->name, name)) {
				snprintf(msg, sizeof(msg), "a worker named '%s' is "
					 "already connected (from %s)", name,
					 o->addr);
				refuse_peer(tp, CFL_WIRE_E_PROTOCOL, msg);
				rc = cfl_err_set(err, "%s", msg);
				break;
			}
	}
	if (rc) {
		logf_(t, "refused worker '%s' (%s): %s", name, tp->addr, err->msg);
		tp->shut = 1;
		snprintf(tp->why, sizeof(tp->why), "%.190s", err->msg);
		cfl_wire_msg_release(&m);
		return -1;
	}
	snprintf(tp->peer->name, sizeof(tp->peer->name), "%s", name);
	tp->hello = 1;
	logf_(t, "worker '%s' joined from %s with %u slots", name, tp->addr,
	      m.u.hello.n_slots);
	cfl_wire_msg_release(&m);
	cfl_welcome_init(&w, t->o.heartbeat, t->sha, t->data.len, t->config);
	return cfl_peer_send(tp->peer, &w, err);
}

static int on_fetch(struct tpeer *tp, const struct cfl_wire_frame *f,
		    struct cfl_err *err)
{
	struct cfl_tcp *t = tp->t;
	struct cfl_wire_msg m, c;
	int rc;

	if (cfl_wire_payload_decode(f->type, f->payload, f->length, &m, err))
		return -1;
	rc = cfl_fetch_answer(&m.u.fetch, t->sha, t->data.data, t->data.len,
			      &c, err);
	cfl_wire_msg_release(&m);
	return rc ? -1 : cfl_peer_send(tp->peer, &c, err);
}

static int tcp_on_frame(struct cfl_peer *peer, const struct cfl_wire_frame *f,
			struct cfl_err *err)
{
	struct tpeer *tp = peer->impl;

	if (!tp || tp->shut)
		return 1;	/* being dropped: ignore what is still buffered */
	tp->last_recv = cfl_now();
	if (!tp->hello) {
		if (f->type != CFL_WIRE_HELLO) {
			cfl_err_set(err, "%s before HELLO", cfl_wire_type_name(f->type));
			logf_(tp->t, "dropped worker %s: %s", tp->addr, err->msg);
			tp->shut = 1;
			return -1;
		}
		return on_hello(tp, f, err) ? -1 : 0;
	}
	switch (f->type) {
	case CFL_WIRE_HELLO:
		cfl_err_set(err, "a second HELLO");
		tp->shut = 1;
		return -1;
	case CFL_WIRE_FETCH:
		if (on_fetch(tp, f, err)) {
			logf_(tp->t, "dropped worker '%s': %s", peer->name, err->msg);
			tp->shut = 1;
			return -1;
		}
		return 1;
	case CFL_WIRE_HEARTBEAT:
		return 1;
	case CFL_WIRE_ERROR: {
		/* the worker leaves with a reason: say it here too (the pool
		 * then drops the peer) */
		struct cfl_wire_msg m;
		struct cfl_err e;

		if (cfl_wire_payload_decode(f->type, f->payload, f->length, &m, &e) == 0) {
			char msg[160];
			size_t k = 0;

			/* a peer's text goes to our log: printable only */
			for (const char *c = m.u.error.message; c && *c && k + 1 < sizeof(msg); c++)
				msg[k++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
			msg[k] = 0;
			logf_(tp->t, "worker '%s' refused: %s", peer->name, msg);
			cfl_wire_msg_release(&m);
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* The pool's reads and writes of a TLS peer. */
static ssize_t tcp_read(struct cfl_peer *peer, void *buf, size_t n)
{
	struct tpeer *tp = peer->impl;

	if (!tp) {
		errno = ECONNRESET;
		return -1;
	}
	return cfl_tls_read(tp->tls, buf, n);
}

static ssize_t tcp_write(struct cfl_peer *peer, const void *buf, size_t n)
{
	struct tpeer *tp = peer->impl;

	if (!tp) {
		errno = EPIPE;
		return -1;
	}
	return cfl_tls_write(tp->tls, buf, n);
}

static void tcp_kill(struct cfl_peer *peer)
{
	struct tpeer *tp = peer->impl;

	if (tp)
		tp->shut = 1;
	shutdown(peer->fd, SHUT_RDWR);
}

static void tcp_reap(struct cfl_peer *peer, char *reason, size_t cap)
{
	struct tpeer *tp = peer->impl;
	char entry[256];
	int closing = !reason[0];

	/* why the pool dropped it ("worker lost": it went by itself; "": the
	 * pool is closing) */
	snprintf(entry, sizeof(entry), "%s", reason);
	if (!strcmp(entry, "worker lost"))
		entry[0] = 0;
	snprintf(reason, cap, "connection to worker '%s' lost", peer->name);
	if (!tp)
		return;
	if (!tp->why[0] && !entry[0] && tp->tls &&
	    strcmp(cfl_tls_error(tp->tls), "connection lost"))
		snprintf(entry, sizeof(entry), "%s", cfl_tls_error(tp->tls));
	if (closing)
		;	/* the run is over: nothing to report */
	else if (tp->t && !tp->hello && !tp->why[0])
		refused_(tp->t, "refused connection from %s: %s", tp->addr,
			 entry[0] ? entry : "closed before its HELLO");
	else if (tp->t && !tp->why[0] && entry[0])
		logf_(tp->t, "dropped worker '%s' (%s): %s", peer->name, tp->addr,
		      entry);
	if (!tp->why[0] && entry[0])
		snprintf(tp->why, sizeof(tp->why), "%.190s", entry);
	if (tp->why[0])
		snprintf(reason, cap, "worker '%s': %s", peer->name, tp->why);
	else if (tp->hello)
		logf_(tp->t, "worker '%s' (%s) left", peer->name, tp->addr);
	*tp->pprev = tp->next;
	if (tp->next)
		tp->next->pprev = tp->pprev;
	cfl_tls_free(tp->tls);
	free(tp);
	peer->impl = NULL;
}

static const struct cfl_peer_ops tcp_ops = {
	.kind = "tcp",
	.on_frame = tcp_on_frame,
	.kill = tcp_kill,
	.reap = tcp_reap,
	.kill_on_timeout = 0,
	.runs_commands = 0,	/* a network peer is never sent a command */
};

static const struct cfl_peer_ops tcp_tls_ops = {
	.kind = "tcp",
	.on_frame = tcp_on_frame,
	.read = tcp_read,
	.write = tcp_write,
	.kill = tcp_kill,
	.reap = tcp_reap,
	.kill_on_timeout = 0,
	.runs_commands = 0,
};

/* ---- coordinator: listening ---- */

void cfl_tcp_opts_init(struct cfl_tcp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->heartbeat = 1;
	o->handshake_timeout = 5;
	o->max_pending = 32;
	o->max_pending_per_host = 8;
	o->max_workers = 256;
	o->lfd = -1;
}

/* The local port of a bound socket. */
static int socket_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return 0;
	return ntohs(ss.ss_family == AF_INET6
		     ? ((struct sockaddr_in6 *)&ss)->sin6_port
		     : ((struct sockaddr_in *)&ss)->sin_port);
}

/* Binds and listens on host:port: the socket, with the port bound in
 * *bound, or -1 with err. */
static int listen_on(const char *host, int port, int *bound,
		     struct cfl_err *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ps[16];
	int rc, e = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%d", port);
	rc = getaddrinfo(host, ps, &hints, &res);
	if (rc) {
		cfl_err_set(err, "cannot resolve '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int one = 1;
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
						       SOCK_CLOEXEC, 0);

		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 256) == 0) {
			*bound = socket_port(fd);
			freeaddrinfo(res);
			return fd;
		}
		e = errno;
		close(fd);
	}
	freeaddrinfo(res);
	cfl_err_set(err, "cannot listen on '%s:%d': %s", host, port,
		    strerror(e ? e : EADDRNOTAVAIL));
	return -1;
}

/* Checks addr and the token rule: 0, or -1 with err; host gets addr's host. */
static int check_addr(const char *addr, const struct cfl_token *token,
		      char *host, size_t cap, int *port, struct cfl_err *err)
{
	if (cfl_net_parse_hostport(addr, host, cap, port, err))
		return -1;
	if ((!token || !token->len) && !cfl_net_is_loopback(host))
		return cfl_err_set(err, "listening on '%s' needs a token file (only "
				   "loopback addresses may go without)", addr);
	return 0;
}

int cfl_tcp_bind(const char *addr, const struct cfl_token *token, int *port,
		 struct cfl_err *err)
{
	char host[256];
	int want, fd;

	if (check_addr(addr, token, host, sizeof(host), &want, err))
		return -1;
	fd = listen_on(host, want, port, err);
	if (fd < 0)
		return -1;
	pthread_once(&g_atfork_once, register_atfork);
	g_bound_fd = fd;
	return fd;
}

void cfl_tcp_unbind(int fd)
{
	if (fd < 0)
		return;
	if (g_bound_fd == fd)
		g_bound_fd = -1;
	close(fd);
}

struct cfl_tcp *cfl_tcp_listen(struct cfl_pool *pool,
			       const struct cfl_tcp_opts *o,
			       struct cfl_err *err)
{
	struct cfl_tcp *t;
	struct epoll_event ev;
	struct itimerspec its;
	char host[256];
	int port;

	struct cfl_buf taken;

	/* what is taken over is ours from here, freed on failure too */
	cfl_buf_init(&taken);
	if (o->data) {
		taken = *o->data;
		cfl_buf_init(o->data);
	}
	if (check_addr(o->addr, o->token, host, sizeof(host), &port, err) ||
	    !taken.data) {
		if (!taken.data)
			cfl_err_set(err, "no dataset to serve to workers");
		cfl_buf_release(&taken);
		cfl_tcp_unbind(o->lfd);
		return NULL;
	}
	t = cfl_calloc(1, sizeof(*t), err);
	if (!t) {
		cfl_buf_release(&taken);
		cfl_tcp_unbind(o->lfd);
		return NULL;
	}
	t->data = taken;
	t->pool = pool;
	t->o = *o;
	t->o.data = NULL;
	if (t->o.heartbeat <= 0)
		t->o.heartbeat = 1;
	if (t->o.dead_after <= 0)
		t->o.dead_after = 5 * t->o.heartbeat;
	if (t->o.handshake_timeout <= 0)
		t->o.handshake_timeout = 5;
	if (!t->o.max_pending)
		t->o.max_pending = 32;
	if (!t->o.max_pending_per_host)
		t->o.max_pending_per_host = 8;
	if (!t->o.max_workers)
		t->o.max_workers = 256;
	if (o->token)
		t->token = *o->token;
	t->efd = t->tfd = -1;
	/* an early socket is ours from here, closed with t */
	t->lfd = o->lfd;
	if (t->lfd >= 0) {
		if (g_bound_fd == t->lfd)
			g_bound_fd = -1;
		t->port = socket_port(t->lfd);
	}
	t->config = cfl_strdup(o->config ? o->config : "", err);
	if (!t->config)
		goto fail;
	/* workers fetch the parts the coordinator loaded (so they train on
	 * the data the table claims), and check them by this digest */
	if (cfl_sha256(t->data.data, t->data.len, t->sha, err))
		goto fail;
	if (t->lfd < 0 && (t->lfd = listen_on(host, port, &t->port, err)) < 0)
		goto fail;
	t->efd = epoll_create1(EPOLL_CLOEXEC);
	t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->efd < 0 || t->tfd < 0) {
		cfl_err_set(err, "cannot create an epoll set or timer: %s",
			    strerror(errno));
		goto fail;
	}
	memset(&its, 0, sizeof(its));
	its.it_interval.tv_nsec = its.it_value.tv_nsec = TICK_MS * 1000000L;
	timerfd_settime(t->tfd, 0, &its, NULL);
	ev.events = EPOLLIN;
	ev.data.ptr = &t->lfd;
	if (epoll_ctl(t->efd, EPOLL_CTL_ADD, t->lfd, &ev))
		goto fail_errno;
	ev.data.ptr = &t->tfd;
	if (epoll_ctl(t->efd, EPOLL_CTL_ADD, t->tfd, &ev))
		goto fail_errno;
	if (cfl_pool_add_source(pool, t->efd, hub_ready, t, err))
		goto fail;
	pthread_once(&g_atfork_once, register_atfork);
	g_tcp = t;
	return t;
fail_errno:
	cfl_err_set(err, "epoll: %s", strerror(errno));
fail:
	cfl_tcp_free(t);
	return NULL;
}

int cfl_tcp_port(const struct cfl_tcp *t)
{
	return t->port;
}

void cfl_tcp_free(struct cfl_tcp *t)
{
	if (!t)
		return;
	if (g_tcp == t)
		g_tcp = NULL;
	while (t->pend)
		pending_drop(t, t->pend);
	/* peers left (the pool was not closed): detach them */
	for (struct tpeer *tp = t->peers; tp; tp = tp->next)
		tp->t = NULL;
	if (t->lfd >= 0)
		close(t->lfd);
	if (t->tfd >= 0)
		close(t->tfd);
	if (t->efd >= 0)
		close(t->efd);
	cfl_buf_release(&t->data);
	free(t->config);
	cfl_token_clear(&t->token);
	free(t);
}

/* ---- worker: the link ---- */

void cfl_link_init(struct cfl_link *l)
{
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	cfl_buf_init(&l->in);
}

void cfl_link_close(struct cfl_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	cfl_tls_free(l->tls);
	l->tls = NULL;
	cfl_buf_release(&l->in);
	cfl_buf_init(&l->in);
}

/* Waits for fd to be ready for events until deadline; 1 ready, 0 timeout. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd pfd = { fd, events, 0 };
		double left = deadline - cfl_now();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		return r > 0;
	}
}

static int send_all(struct cfl_link *l, const void *data, size_t len,
		    double deadline, struct cfl_err *err)
{
	const char *p = data;

	while (len) {
		ssize_t k = l->tls ? cfl_tls_write(l->tls, p, len)
				   : send(l->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_fd(l->fd, l->tls ? cfl_tls_want(l->tls) : POLLOUT,
				     deadline))
				return cfl_err_set(err, "send timed out (the "
						   "coordinator does not read)");
			continue;
		}
		if (k < 0)
			return cfl_err_set(err, "send: %s", l->tls ? cfl_tls_error(l->tls)
							: strerror(errno));
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

static int connect_to(const char *host, int port, double deadline, int *out,
		      struct cfl_err *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ps[16];
	int rc, e = ECONNREFUSED;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%d", port);
	rc = getaddrinfo(host, ps, &hints, &res);
	if (rc)
		return cfl_err_set(err, "cannot resolve '%s': %s", host,
				   gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
						       SOCK_CLOEXEC, 0);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) &&
		    errno != EINPROGRESS) {
			e = errno;
			close(fd);
			continue;
		}
		if (!wait_fd(fd, POLLOUT, deadline)) {
			e = ETIMEDOUT;
			close(fd);
			continue;
		}
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr) {
			e = soerr;
			close(fd);
			continue;
		}
		set_nodelay(fd);
		freeaddrinfo(res);
		*out = fd;
		return 0;
	}
	freeaddrinfo(res);
	return cfl_err_set(err, "cannot connect to '%s:%d': %s", host, port,
			   strerror(e));
}

int cfl_link_connect(struct cfl_link *l, const char *host, int port,
		     const struct cfl_token *token, double timeout,
		     double handshake_timeout, int *fatal, struct cfl_err *err)
{
	double deadline = cfl_now() + timeout;
	int fd = -1;

	*fatal = 0;
	cfl_link_close(l);
	if (connect_to(host, port, deadline, &fd, err))
		return -1;
	/* the coordinator answers once it has loaded its data */
	deadline = cfl_now() + handshake_timeout;
	if (token && token->len) {
		struct cfl_tls *s = cfl_tls_new(fd, CFL_TLS_CLIENT, token, err);
		int rc = s ? 0 : -1;

		while (rc == 0) {
			short want = POLLIN;
			struct cfl_err e;

			rc = cfl_tls_handshake(s, &want, fatal, &e);
			if (rc < 0 && *fatal)
				cfl_err_set(err, "authentication failed (wrong token, or "
					    "a coordinator without one?): %s", e.msg);
			else if (rc < 0)
				cfl_err_set(err, "'%s:%d': %s", host, port, e.msg);
			else if (rc == 0 && !wait_fd(fd, want, deadline))
				rc = cfl_err_set(err, "no TLS handshake from '%s:%d' "
						 "within %g s", host, port,
						 handshake_timeout);
		}
		if (rc < 0) {
			cfl_tls_free(s);
			close(fd);
			return -1;
		}
		l->tls = s;
	}
	l->fd = fd;
	l->last_recv = l->last_send = cfl_now();
	return 0;
}

int cfl_link_send_frame(struct cfl_link *l, const void *frame, size_t len,
			double timeout, struct cfl_err *err)
{
	if (l->fd < 0)
		return cfl_err_set(err, "not connected");
	if (send_all(l, frame, len, cfl_now() + timeout, err))
		return -1;
	l->last_send = cfl_now();
	return 0;
}

int cfl_link_send(struct cfl_link *l, const struct cfl_wire_msg *m,
		  double timeout, struct cfl_err *err)
{
	struct cfl_buf b;
	int rc;

	cfl_buf_init(&b);
	if (cfl_wire_encode(&b, 0, 0, m, err))
		return -1;
	rc = cfl_link_send_frame(l, b.data, b.len, timeout, err);
	cfl_buf_release(&b);
	return rc;
}

int cfl_link_read(struct cfl_link *l, struct cfl_err *err)
{
	size_t got = 0;

	if (l->fd < 0)
		return cfl_err_set(err, "not connected");
	for (;;) {
		ssize_t k;

		if (cfl_buf_reserve(&l->in, 65536))
			return cfl_err_set(err, "out of memory");
		k = l->tls ? cfl_tls_read(l->tls, l->in.data + l->in.len, 65536)
			   : recv(l->fd, l->in.data + l->in.len, 65536, MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		/* what came before the end is read first; the next call
		 * reports the end */
		if (k <= 0 && got)
			return 0;
		if (k == 0)
			return cfl_err_set(err, "the coordinator closed the "
					   "connection");
		if (k < 0)
			return cfl_err_set(err, "recv: %s", l->tls ? cfl_tls_error(l->tls)
							: strerror(errno));
		l->in.len += (size_t)k;
		got += (size_t)k;
		/* a TLS session is read until it wants the socket: it may
		 * hold decrypted bytes that poll cannot see */
		if (!l->tls && k < 65536)
			return 0;
	}
}

int cfl_link_next(struct cfl_link *l, struct cfl_wire_msg *m,
		  struct cfl_err *err)
{
	struct cfl_wire_frame f;
	int r;

	if (!l->in.len)
		return 0;
	r = cfl_wire_frame_split(l->in.data, l->in.len, &f, err);
	if (r == 1)
		return 0;
	if (r < 0)
		return -1;
	if (cfl_wire_payload_decode(f.type, f.payload, f.length, m, err))
		return -1;
	memmove(l->in.data, l->in.data + f.size, l->in.len - f.size);
	l->in.len -= f.size;
	l->last_recv = cfl_now();
	return 1;
}

int cfl_link_recv(struct cfl_link *l, struct cfl_wire_msg *m, double timeout,
		  struct cfl_err *err)
{
	double deadline = cfl_now() + timeout;

	for (;;) {
		int r = cfl_link_next(l, m, err);

		if (r)
			return r;
		if (!wait_fd(l->fd, POLLIN, deadline))
			return 0;
		if (cfl_link_read(l, err))
			return -1;
	}
}
