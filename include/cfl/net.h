/*
 * cfl net: what remote workers need beyond the wire codec -- the shared
 * token, the mutual HMAC-SHA256 handshake, the MAC and sequence number on
 * every frame after it, and the worker's dataset cache.
 *
 * Security model: both ends hold the same secret token (a file of mode
 * 0600).  The handshake proves to each side that the other holds it without
 * sending it, and derives one key per direction from it and two fresh
 * nonces; every later frame carries a MAC under that key over its bytes,
 * sequence number included, and sequence numbers must grow by exactly one,
 * so a tampered, replayed, reordered or dropped frame ends the connection.
 * Frames are authenticated, not encrypted: use an SSH tunnel on networks
 * you do not trust.  Without a token (loopback only) the key is empty: the
 * MACs still catch corruption but prove nothing.
 *
 * The crypto is OpenSSL's libcrypto (HMAC, RAND_bytes, CRYPTO_memcmp), which
 * only src/run/auth.c includes.  Nothing here knows the wire layout: the
 * transport passes the bytes a MAC covers.  Depends on core only.
 */
#ifndef CFL_NET_H
#define CFL_NET_H

#include <stddef.h>
#include <stdint.h>

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

/* ---- per-frame MACs ---- */

#define CFL_MAC_SIZE 32

/* The keys and sequence numbers of one authenticated connection. */
struct cfl_mac {
	unsigned char send_key[32], recv_key[32];
	uint64_t send_seq;	/* last sequence number sent (0: none yet) */
	uint64_t recv_seq;	/* last sequence number accepted */
};

/* The sequence number the next sent frame must carry (1, 2, ...). */
uint64_t cfl_mac_next_seq(struct cfl_mac *m);
/* HMAC-SHA256 of data under the send key into out. */
void cfl_mac_sign(const struct cfl_mac *m, const void *data, size_t len,
		  unsigned char out[CFL_MAC_SIZE]);
/* Checks a received frame: data (which must contain seq) against mac under
 * the receive key, then seq against the last accepted one plus one.
 * Returns 0 and accepts seq, or -1 with err: "frame MAC mismatch (tampered
 * frame or wrong key)" or "replayed or reordered frame (sequence 3,
 * expected 5)"; m is unchanged on failure. */
int cfl_mac_check(struct cfl_mac *m, uint64_t seq, const void *data,
		  size_t len, const unsigned char mac[CFL_MAC_SIZE],
		  struct cfl_err *err);
void cfl_mac_clear(struct cfl_mac *m);

/* ---- handshake ----
 *
 * Four small frames before any wire frame, each "CFLA" (4), version (1),
 * type (1), body length (2, little-endian), body:
 *
 *   worker -> coordinator  CHALLENGE  nonce_w (32)
 *   coordinator -> worker  PROOF      nonce_c (32), HMAC(token, "cfl-auth-1
 *                                     coordinator" | nonce_w | nonce_c)
 *   worker -> coordinator  PROOF      HMAC(token, "cfl-auth-1 worker" |
 *                                     nonce_w | nonce_c)
 *   coordinator -> worker  OK         (empty)
 *
 * or, from either side at any step, FAIL: a code (1) and a short printable
 * message, after which the sender closes.  The worker checks the
 * coordinator's proof before it proves anything itself, so a fake
 * coordinator learns nothing; distinct labels stop a proof being reflected.
 * Keys per direction: HMAC(token, "cfl-auth-1 key w2c" | nonce_w | nonce_c)
 * and "... key c2w".
 */

#define CFL_AUTH_VERSION 1
#define CFL_AUTH_MAX_FRAME 264	/* largest handshake frame: 8 + 256 */

enum cfl_auth_role { CFL_AUTH_WORKER, CFL_AUTH_COORDINATOR };

/* FAIL codes. */
#define CFL_AUTH_E_PROTOCOL 1	/* malformed or unexpected frame */
#define CFL_AUTH_E_VERSION 2	/* the peer speaks another handshake version */
#define CFL_AUTH_E_AUTH 3	/* wrong proof: the tokens differ */
#define CFL_AUTH_E_REFUSED 4	/* refused for another reason (the message says) */

struct cfl_auth {
	enum cfl_auth_role role;
	int state;		/* internal: which frame comes next */
	struct cfl_token token;
	unsigned char nonce_w[32], nonce_c[32];
	int peer_failed;	/* the peer sent FAIL (its message is in err) */
	int fail_code;		/* on failure: a CFL_AUTH_E_* code */
};

/* Starts a handshake for role with token (NULL: the empty token).  A worker
 * appends its CHALLENGE to out.  Returns 0, or -1 with err when no random
 * nonce can be drawn or out cannot grow. */
int cfl_auth_init(struct cfl_auth *a, enum cfl_auth_role role,
		  const struct cfl_token *token, struct cfl_buf *out,
		  struct cfl_err *err);

/* Feeds received bytes in[0..len).  Consumes at most one handshake frame
 * and sets *used to the bytes consumed (0 when the frame is incomplete);
 * appends what to send to out.  Returns:
 *    0  continue (send out, call again with more or the rest of the input);
 *    1  done: mac holds the connection's keys (sequence numbers at 0), and
 *       bytes after *used are the first wire frames;
 *   -1  failed: err says why (for logs), a->fail_code classifies it, and
 *       out may end with a FAIL frame to send before closing.
 * Malformed input (bad magic, version, type, length, a frame out of turn,
 * a wrong proof) fails; it never reads past len or allocates per frame. */
int cfl_auth_step(struct cfl_auth *a, const void *in, size_t len,
		  size_t *used /* OUT */, struct cfl_buf *out,
		  struct cfl_mac *mac /* OUT */, struct cfl_err *err);

/* Appends a FAIL frame with code and message (cut to fit; bytes that are
 * not printable ASCII become '?') to out, so a coordinator can refuse a
 * peer after the handshake's own checks (too many connections, ...).
 * Returns 0, or -1 when out cannot grow. */
int cfl_auth_fail_frame(struct cfl_buf *out, int code, const char *msg);

/* Wipes the token and nonces. */
void cfl_auth_release(struct cfl_auth *a);

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
 * holding the listening socket, the connections still in their handshake
 * and a timer).  A connection that passes the handshake becomes a pool
 * peer whose frames carry a MAC and sequence number (checked before the
 * pool sees them); its HELLO gives its slots, the coordinator answers with
 * WELCOME (the dataset's SHA-256 and size, the data options) and serves
 * FETCH requests with CHUNKs of the dataset.  Heartbeats go both ways; a
 * peer silent for dead_after seconds is dropped and its leases requeued by
 * the pool.  Limits: max_pending connections in their handshake (more are
 * refused), handshake_timeout seconds each, CFL_WIRE_MAX_PAYLOAD per frame.
 *
 * Worker: struct cfl_link is one authenticated connection to a coordinator
 * with blocking (deadline-bounded) sends and buffered receives.
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

struct cfl_tcp_opts {
	const char *addr;		/* "HOST:PORT" to listen on (port 0: any) */
	const struct cfl_token *token;	/* NULL: the empty token (loopback only) */
	double heartbeat;		/* seconds between heartbeats [1] */
	double dead_after;		/* drop a peer silent this long [5 x heartbeat] */
	double handshake_timeout;	/* seconds [5] */
	size_t max_pending;		/* connections in their handshake [32] */
	const void *data;		/* the bytes workers fetch: the encoded
					 * parts (cfl_data_pack_parts); copied */
	size_t data_len;
	const char *config;		/* WELCOME's config text (key=value lines) */
	/* where events go ("worker 'h:12' joined ...", refusals); may be NULL */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
};

void cfl_tcp_opts_init(struct cfl_tcp_opts *o);

struct cfl_tcp;

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

/* One authenticated connection, seen from the worker. */
struct cfl_link {
	int fd;			/* -1: not connected */
	struct cfl_mac mac;
	struct cfl_buf in;	/* received bytes not yet decoded */
	double last_recv, last_send;	/* cfl_now() of the last frame */
};

void cfl_link_init(struct cfl_link *l);
/* Connects to host:port and runs the handshake, within timeout seconds.
 * Returns 0, or -1 with err; *fatal is set when trying again cannot help
 * (wrong token, another handshake version), clear when it may (refused,
 * unreachable, the coordinator busy). */
int cfl_link_connect(struct cfl_link *l, const char *host, int port,
		     const struct cfl_token *token, double timeout,
		     int *fatal /* OUT */, struct cfl_err *err);
/* Encodes m, signs it and sends it, waiting at most timeout seconds for
 * the socket.  Returns 0, or -1 with err (the link is then unusable). */
int cfl_link_send(struct cfl_link *l, const struct cfl_wire_msg *m,
		  double timeout, struct cfl_err *err);
/* Sends an already encoded frame (encoded with CFL_WIRE_F_MAC) after
 * giving it this link's next sequence number and MAC (frame is modified).
 * Used to send a kept result again on a new connection. */
int cfl_link_send_frame(struct cfl_link *l, void *frame, size_t len,
			double timeout, struct cfl_err *err);
/* Reads what has arrived without blocking.  Returns 0, or -1 with err on
 * EOF or an error. */
int cfl_link_read(struct cfl_link *l, struct cfl_err *err);
/* Decodes the next buffered frame into m (checking its MAC and sequence).
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
