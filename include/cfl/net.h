/*
 * cfl net: what remote workers need beyond the wire codec -- the shared
 * token, the TLS 1.3 channel keyed by it, the TCP transport and the
 * worker's dataset cache.
 *
 * Security model: both ends hold the same secret token (a file of mode
 * 0600).  With a token every connection is TLS 1.3 (OpenSSL's libssl) with
 * an external pre-shared key derived from the token, in the mode that adds
 * a fresh ECDHE exchange (forward secrecy); no certificates.  Completing the
 * handshake proves to each side that the other holds the token; TLS then
 * encrypts every frame and rejects a tampered, replayed, reordered or
 * dropped record by ending the connection.  Without a token (loopback
 * addresses only) connections are plain TCP: anyone on the machine may
 * connect.
 *
 * Only src/run/tls.c includes OpenSSL's TLS headers; nothing here knows the
 * wire layout except the TCP transport (through wire.h).  Depends on core.
 */
#ifndef CFL_NET_H
#define CFL_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfl/core.h"

/* ---- token ---- */

#define CFL_TOKEN_MIN 16	/* bytes; shorter tokens are refused */
#define CFL_TOKEN_MAX 1024

struct cfl_token {
	size_t len;		/* 0: no token (loopback only) */
	unsigned char key[CFL_TOKEN_MAX];
};

/* Reads a token file: a regular file owned by the current user whose mode
 * gives no access to group or others, holding CFL_TOKEN_MIN..CFL_TOKEN_MAX
 * bytes once trailing whitespace is cut.  Returns 0 with t filled, or -1
 * with err: "token file 'F' is readable by others (mode 0644): run
 * chmod 600 'F'", "... is too short", "cannot open ...", ... */
int cfl_token_load(struct cfl_token *t /* OUT */, const char *path,
		   struct cfl_err *err);
/* Wipes the key (memory that held a secret is cleansed, not just freed). */
void cfl_token_clear(struct cfl_token *t);

/* ---- TLS (src/run/tls.c) ----
 *
 * One end of a TLS 1.3 session on a non-blocking socket.  The PSK is
 * HMAC-SHA256(token, "cfl-tls-psk-1") under the identity "cfl-1"; the
 * suites are TLS_AES_128_GCM_SHA256 and TLS_CHACHA20_POLY1305_SHA256; no
 * session tickets, no early data.  A reader must call cfl_tls_read until it
 * fails with EAGAIN before polling the socket again (decrypted bytes may
 * wait inside the session, where poll cannot see them).
 */

struct cfl_tls;

enum cfl_tls_role { CFL_TLS_CLIENT = 0, CFL_TLS_SERVER = 1 };

/* Starts a session for role on the connected socket fd (it stays the
 * caller's to close; the session never closes it) keyed by token, which
 * must not be empty.  Returns it (free with cfl_tls_free), or NULL with err
 * ("TLS needs a token", "cannot start a TLS session: ..."). */
struct cfl_tls *cfl_tls_new(int fd, enum cfl_tls_role role,
			    const struct cfl_token *token, struct cfl_err *err);
/* Advances the handshake without blocking.  Returns 1 when it is done; 0
 * when it must be called again once fd is ready for *want (POLLIN or
 * POLLOUT); -1 with err when it failed ("TLS handshake failed: ...",
 * "connection closed during the TLS handshake").  *fatal (may be NULL) is
 * set on -1 when the peer spoke and refused (another token: "tlsv1 alert
 * decrypt error" or "binder does not verify"), or spoke no TLS at all --
 * retrying cannot help; it is clear when the connection just closed or
 * failed. */
int cfl_tls_handshake(struct cfl_tls *s, short *want /* OUT */,
		      int *fatal /* OUT */, struct cfl_err *err);
/* Like recv(2) / send(2) on the session: > 0 bytes; 0 (read) at the
 * peer's end of the connection; -1 with errno EAGAIN when the socket must
 * become ready for cfl_tls_want(s) first, or another errno (EPROTO for a
 * TLS error such as a record that fails its check, EPIPE, ECONNRESET) with
 * cfl_tls_error(s) saying why.  A write may be partial; one that failed
 * with EAGAIN must be repeated with at least the same bytes (more may
 * follow them; the buffer may move). */
ssize_t cfl_tls_read(struct cfl_tls *s, void *buf, size_t n);
ssize_t cfl_tls_write(struct cfl_tls *s, const void *buf, size_t n);
short cfl_tls_want(const struct cfl_tls *s);
/* Why the last call failed ("TLS read failed: bad record mac"). */
const char *cfl_tls_error(const struct cfl_tls *s);
/* Frees the session (and wipes its key); NULL is a no-op.  Sends nothing. */
void cfl_tls_free(struct cfl_tls *s);

/* ---- dataset cache ----
 *
 * A folder of files named by the SHA-256 of their bytes ("<hex>.data"),
 * filled in chunks through a private temporary file that is verified
 * (size and hash) before an atomic rename() makes it visible.  Two workers
 * on one host may fill the same entry at once: each writes its own
 * temporary file and the renames replace equal bytes with equal bytes.  An
 * entry is hashed again before each use (by cfl_cache_get, or by the
 * reader of a cfl_cache_find); a corrupt one is removed.  Names come from
 * hashes only, so no peer can name a path outside the folder.
 */

#define CFL_CACHE_MAX_SIZE ((uint64_t)1 << 36)	/* 64 GiB: larger is refused */
#define CFL_CACHE_TMP_AGE 3600	/* s: a temporary file untouched this long
				 * has no live fill behind it */

struct cfl_cache {
	char *dir;
};

/* Creates dir (and its parents, mode 0700) when missing, and removes the
 * temporary files that fills left there (a worker killed mid-download):
 * those untouched for CFL_CACHE_TMP_AGE seconds whose writer is not a live
 * process of this host (one from another host: by age only); never one a
 * live fill is writing.  That cleanup is best effort (a file it cannot
 * remove stays, silently).  Returns 0, or -1 with err ("cannot create
 * cache folder 'D': ..."). */
int cfl_cache_init(struct cfl_cache *c, const char *dir, struct cfl_err *err);
void cfl_cache_release(struct cfl_cache *c);

/* The entry for sha256 of size bytes.  Returns 1 with *path (malloc'd, the
 * caller frees) when it exists and hashes to sha256; 0 when it is missing
 * (a corrupt or wrong-size entry is removed and counts as missing); -1 with
 * err on an I/O error. */
int cfl_cache_get(const struct cfl_cache *c, const unsigned char sha256[32],
		  uint64_t size, char **path /* OUT */, struct cfl_err *err);

/* Like cfl_cache_get without reading the entry: 1 with *path (malloc'd)
 * when a regular file of size bytes is there, 0 when it is missing (a
 * wrong-size one is removed), -1 with err (cannot stat it, not a regular
 * file).  Its bytes are NOT checked: for a reader that hashes them anyway
 * (cfl_data_load), which must compare that hash with sha256 and, when they
 * differ, call cfl_cache_get (which removes a corrupt entry) before
 * trusting or fetching anything. */
int cfl_cache_find(const struct cfl_cache *c, const unsigned char sha256[32],
		   uint64_t size, char **path /* OUT */, struct cfl_err *err);

/* One entry being filled. */
struct cfl_cache_fill {
	char *tmp_path, *final_path;
	int fd;
	unsigned char sha256[32];
	uint64_t size, offset;	/* expected total; bytes written so far */
	struct cfl_sha256 hash;	/* of the bytes written so far */
};

/* Opens a private temporary file for an entry of size bytes, named
 * "<hex>.data.tmp.HOST.PID.N" after its writer.  Returns 0,
 * or -1 with err (size above CFL_CACHE_MAX_SIZE, cannot create). */
int cfl_cache_fill_begin(struct cfl_cache_fill *f /* OUT */,
			 const struct cfl_cache *c,
			 const unsigned char sha256[32], uint64_t size,
			 struct cfl_err *err);
/* Appends a chunk that must start at f->offset and end within the size.
 * Returns 0, or -1 with err (out of order, too long, write error). */
int cfl_cache_fill_add(struct cfl_cache_fill *f, uint64_t offset,
		       const void *data, size_t n, struct cfl_err *err);
/* When all bytes are in: checks the hash and renames into place.
 * Returns 0 with *path (malloc'd) naming the entry, or -1 with err (bytes
 * missing, "dataset bytes do not match their SHA-256 ...", I/O); the
 * temporary file is gone either way and f is released. */
int cfl_cache_fill_finish(struct cfl_cache_fill *f, char **path /* OUT */,
			  struct cfl_err *err);
/* Drops an unfinished fill and its temporary file; a no-op after finish. */
void cfl_cache_fill_abort(struct cfl_cache_fill *f);

/* ---- TCP transport (src/run/tcp.c) ----
 *
 * Coordinator: cfl_tcp_listen adds one poll source to a pool (an epoll set
 * holding the listening socket, the connections still in their TLS
 * handshake and a timer).  A connection that completes the handshake (at
 * once without a token) becomes a pool peer whose bytes go through its TLS
 * session; its HELLO gives its slots, the coordinator answers with
 * WELCOME (the dataset's SHA-256 and size, the data options) and serves
 * FETCH requests with CHUNKs of the dataset.  Heartbeats go both ways; a
 * peer silent for dead_after seconds is dropped and its leases requeued by
 * the pool.  Limits: before its HELLO a connection may send a HELLO of
 * CFL_WIRE_HELLO_MAX bytes and nothing else, within handshake_timeout
 * seconds (TLS handshake included); max_pending such connections at once
 * (when all are taken, a newcomer from a host holding fewer than the
 * busiest host takes the place of that host's oldest), max_pending_per_host
 * from one host (the oldest gives way); max_workers accepted workers; only
 * the frame types cfl_wire_from_worker allows, each within its payload
 * limit (cfl_wire_max_payload; the pool bounds RESULT by the run and holds
 * large frames within one budget).
 *
 * Worker: struct cfl_link is one connection to a coordinator (TLS with a
 * token, plain without) with blocking (deadline-bounded) sends and
 * buffered receives.
 */

struct cfl_pool;
struct cfl_wire_msg;

#define CFL_TCP_CHUNK (1u << 20)	/* dataset bytes per CHUNK */

/* Splits "HOST:PORT" ("[v6]:PORT" too) into host (cap bytes) and port
 * (0..65535).  Returns 0, or -1 with err naming the argument. */
int cfl_net_parse_hostport(const char *s, char *host, size_t cap, int *port,
			   struct cfl_err *err);
/* Whether host is a loopback address or "localhost". */
int cfl_net_is_loopback(const char *host);
/* Sets TCP_NODELAY on every TCP socket this process holds (Linux: the
 * descriptors of /proc/self/fd), those of libraries too.  Returns how many
 * it set, or -1 where the descriptors cannot be listed. */
int cfl_net_nodelay_all(void);

struct cfl_tcp_opts {
	const char *addr;		/* "HOST:PORT" to listen on (port 0: any) */
	const struct cfl_token *token;	/* NULL: the empty token (loopback only) */
	double heartbeat;		/* seconds between heartbeats [1] */
	double dead_after;		/* drop a peer silent this long [5 x heartbeat] */
	double handshake_timeout;	/* seconds [5] */
	size_t max_pending;		/* connections before their HELLO (in
					 * the TLS handshake, or plain and
					 * silent): more are refused [32] */
	size_t max_pending_per_host;	/* ... from one host: a new one makes
					 * the oldest give way [8] */
	size_t max_workers;		/* workers (HELLO accepted) at once;
					 * more are refused with ERROR [256] */
	struct cfl_buf *data;		/* the bytes workers fetch: the encoded
					 * parts (cfl_data_pack_parts), taken
					 * over, not copied (left empty, on
					 * failure too) */
	const char *config;		/* WELCOME's config text (key=value lines) */
	int lfd;			/* a socket from cfl_tcp_bind on o->addr,
					 * taken over (closed on failure too);
					 * -1: bind o->addr here [-1] */
	/* where events go ("worker 'h:12' joined ...", refusals); may be NULL */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
};

void cfl_tcp_opts_init(struct cfl_tcp_opts *o);

struct cfl_tcp;

/* Binds and listens on addr ("HOST:PORT", port 0: any) before the pool
 * exists, so that workers can connect while the coordinator still loads its
 * data: the kernel completes their connections and holds them (and their
 * first bytes) until cfl_tcp_listen takes the socket over (opts.lfd).
 * Refuses a non-loopback address without a token (token NULL or empty).
 * The socket is closed in children forked meanwhile.  Returns the socket
 * with the port actually bound in *port, or -1 with err ("cannot listen on
 * 'H:P': Address already in use", ...). */
int cfl_tcp_bind(const char *addr, const struct cfl_token *token, int *port,
		 struct cfl_err *err);
/* Closes a socket from cfl_tcp_bind that was never taken over; -1 is a
 * no-op. */
void cfl_tcp_unbind(int fd);

/* Listens on o->addr and joins the pool as a source.  Refuses a non-loopback
 * address without a token.  Keeps a copy of the data bytes and serves them
 * by their SHA-256.  Returns the listener, or NULL with err ("cannot listen on
 * 'H:P': Address already in use", ...).  Free it after cfl_pool_close. */
struct cfl_tcp *cfl_tcp_listen(struct cfl_pool *pool,
			       const struct cfl_tcp_opts *o,
			       struct cfl_err *err);
/* The port actually bound (useful with port 0). */
int cfl_tcp_port(const struct cfl_tcp *t);
/* Closes the listener and pending connections; NULL is a no-op.  Peers
 * already handed to the pool are closed by cfl_pool_close, which must come
 * first. */
void cfl_tcp_free(struct cfl_tcp *t);

/* One connection to a coordinator, seen from the worker.  Poll fd for
 * input, then call cfl_link_read (which drains the TLS session). */
struct cfl_link {
	int fd;			/* -1: not connected */
	struct cfl_tls *tls;	/* NULL: plain TCP (no token) */
	struct cfl_buf in;	/* received bytes not yet decoded */
	double last_recv, last_send;	/* cfl_now() of the last frame */
};

void cfl_link_init(struct cfl_link *l);
/* Connects to host:port within timeout seconds and, with a token (NULL or
 * empty: none, plain TCP), runs the TLS handshake within handshake_timeout
 * more (a coordinator still loading its data answers only then).  Returns
 * 0, or -1 with err; *fatal is set when trying again cannot help
 * ("authentication failed (wrong token?): ..."; a coordinator that speaks no
 * TLS), clear when it may (refused, unreachable, closed: the coordinator
 * busy). */
int cfl_link_connect(struct cfl_link *l, const char *host, int port,
		     const struct cfl_token *token, double timeout,
		     double handshake_timeout, int *fatal, struct cfl_err *err);
/* Encodes m and sends it, waiting at most timeout seconds for
 * the socket.  Returns 0, or -1 with err (the link is then unusable). */
int cfl_link_send(struct cfl_link *l, const struct cfl_wire_msg *m,
		  double timeout, struct cfl_err *err);
/* Sends an already encoded frame as it is (a kept result sent again on a
 * new connection).  Returns 0, or -1 with err. */
int cfl_link_send_frame(struct cfl_link *l, const void *frame, size_t len,
			double timeout, struct cfl_err *err);
/* Reads what has arrived without blocking.  Returns 0, or -1 with err on
 * EOF or an error. */
int cfl_link_read(struct cfl_link *l, struct cfl_err *err);
/* Decodes the next buffered frame into m.
 * Returns 1 with m filled (release it), 0 when no whole frame is buffered,
 * -1 with err on a bad frame (the link is then unusable). */
int cfl_link_next(struct cfl_link *l, struct cfl_wire_msg *m /* OUT */,
		  struct cfl_err *err);
/* Waits up to timeout seconds for the next message: 1 with m, 0 on
 * timeout, -1 with err on EOF or a bad frame. */
int cfl_link_recv(struct cfl_link *l, struct cfl_wire_msg *m /* OUT */,
		  double timeout, struct cfl_err *err);
void cfl_link_close(struct cfl_link *l);

#endif
