/*
 * cfl relay: a worker that serves a coordinator with a local pool, whatever
 * carries the frames (a TCP connection for `cfl worker`, a socket to the
 * MPI pump for a worker rank), and the session both ends of any transport
 * agree on: HELLO checked in one place, WELCOME's config text, the dataset
 * FETCH / CHUNK exchange.
 *
 * The relay says HELLO, reads WELCOME (the run, the data options, the
 * dataset's SHA-256), fetches the dataset into a cache when it does not
 * have it, starts its pool, turns each LEASE into a local trial and each
 * finished trial into a RESULT, honours CANCEL, and keeps every RESULT until
 * the coordinator acknowledges it (sent again after a reconnect; "first
 * result wins" on the coordinator makes that safe).  It never opens the
 * coordinator's database, never prints and never exits: what a person
 * should read goes to a log callback.
 */
#ifndef CFL_RELAY_H
#define CFL_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"
#include "cfl/data.h"
#include "cfl/net.h"
#include "cfl/run.h"
#include "cfl/wire.h"

/* Seconds a worker waits, once connected, for the coordinator's TLS
 * handshake and WELCOME: a coordinator listens before it loads its data
 * and answers only after, which takes a while on a large file. */
#define CFL_RELAY_WELCOME_WAIT 120

/* ---- the link: what a transport gives the relay ----
 *
 * One connection to the coordinator carrying whole messages.  send and recv
 * are required; connect is optional: a link with connect is connected by
 * the relay (and again after a loss, with backoff), one without is
 * connected already and cannot be re-established (its loss ends the relay).
 */
struct cfl_relay_link_ops {
	/* Sends m within timeout seconds.  0, or -1 with err (the link is
	 * then unusable). */
	int (*send)(void *ctx, const struct cfl_wire_msg *m, double timeout,
		    struct cfl_err *err);
	/* The next message, waiting at most timeout seconds (0: only what has
	 * arrived).  1 with m filled (release it), 0 when none came, -1 with
	 * err on EOF or a bad frame (the link is then unusable). */
	int (*recv)(void *ctx, struct cfl_wire_msg *m /* OUT */,
		    double timeout, struct cfl_err *err);
	/* The descriptor that becomes readable when a message may have come;
	 * -1 when not connected. */
	int (*fd)(void *ctx);
	/* Closes the connection (a no-op when closed). */
	void (*close)(void *ctx);
	/* Optional: (re)connects.  0, or -1 with err; *fatal set when trying
	 * again cannot help (a wrong token). */
	int (*connect)(void *ctx, int *fatal /* OUT */, struct cfl_err *err);
};

struct cfl_relay_link {
	const struct cfl_relay_link_ops *ops;
	void *ctx;
};

/* A link over a connected stream socket carrying plain frames (no MAC):
 * an MPI worker rank's socket to its pump, a socketpair in tests.  The
 * relay link from cfl_fd_link_relay cannot reconnect; close closes fd. */
struct cfl_fd_link {
	int fd;
	struct cfl_buf in;	/* received bytes not yet decoded */
};
void cfl_fd_link_init(struct cfl_fd_link *l, int fd);
struct cfl_relay_link cfl_fd_link_relay(struct cfl_fd_link *l);

/* A TCP link (struct cfl_link, used through its public functions only)
 * that connects to host:port with token (NULL: the empty token). */
struct cfl_tcp_relay_link {
	struct cfl_link link;
	const char *host;
	int port;
	const struct cfl_token *token;
};
void cfl_tcp_relay_link_init(struct cfl_tcp_relay_link *l, const char *host,
			     int port, const struct cfl_token *token);
struct cfl_relay_link cfl_tcp_relay_link(struct cfl_tcp_relay_link *l);

/* ---- the relay ---- */

struct cfl_relay_opts {
	const char *name;	/* HELLO's name (unique per run) */
	const char *peer;	/* the coordinator, for messages ("h:7070") */
	size_t n_slots;		/* local worker processes [1] */
	/* Whether CFL_LEASE_COMMAND leases run [0].  Without it such a lease
	 * is refused: a failed RESULT "refused: a TCP worker never runs a
	 * shell command" goes back, the link is dropped and the relay ends
	 * with an error.  Only a relay whose coordinator the user's own
	 * launcher started (an MPI rank) sets it. */
	int allow_commands;
	/* The dataset already here (an MPI rank's broadcast) and its size in
	 * bytes as WELCOME announces it; WELCOME must then name data->sha256.
	 * NULL: fetched by SHA-256 into cache_dir (cfl_cache). */
	const struct cfl_data *data;
	uint64_t data_size;
	const char *cache_dir;
	/* A WELCOME announcing a dataset larger than this many bytes ends
	 * the relay with an error before any byte is fetched
	 * [CFL_RELAY_MAX_DATA; 0: that default]. */
	uint64_t max_data_size;
	/* With a link that connects: give up when the coordinator stayed
	 * unreachable this long [300]. */
	double retry_for;
	/* Messages for a person: important = 0 for progress (a quiet worker
	 * drops them), 1 for what went wrong but did not end the relay. */
	void (*log)(void *ctx, int important, const char *msg);
	void *log_ctx;
};

/* The default largest dataset a worker accepts: 8 GiB. */
#define CFL_RELAY_MAX_DATA ((uint64_t)8 << 30)

void cfl_relay_opts_init(struct cfl_relay_opts *o);

struct cfl_relay;

/* A relay with options o (copied; the strings and data must outlive it).
 * NULL with err when out of memory or o is invalid. */
struct cfl_relay *cfl_relay_new(const struct cfl_relay_opts *o,
				struct cfl_err *err);

enum {
	CFL_RELAY_OVER = 0,		/* the coordinator said SHUTDOWN (or now
					 * serves another run) */
	CFL_RELAY_INTERRUPTED = 1,	/* cfl_relay_interrupt was called */
	CFL_RELAY_LOST = 2,		/* a link without connect went (EOF):
					 * the coordinator is gone; err says
					 * how */
};

/* Serves the coordinator over link until the run is over.  Returns
 * CFL_RELAY_OVER, CFL_RELAY_INTERRUPTED, CFL_RELAY_LOST (err set), or -1
 * with err when the relay cannot go on: the coordinator refused this
 * worker or sent a bad config or another dataset, a command lease was
 * refused, the dataset cannot be had, a link with connect stayed
 * unreachable for retry_for seconds, or the local pool failed (the
 * coordinator is then sent an ERROR with the reason when still
 * connected).  Running local trials are killed when
 * it returns.  Call once per relay. */
int cfl_relay_serve(struct cfl_relay *r, struct cfl_relay_link link,
		    struct cfl_err *err);

/* Trials whose RESULT was sent (or, failed, reported) so far. */
size_t cfl_relay_n_done(const struct cfl_relay *r);

/* Async-signal-safe: asks cfl_relay_serve to stop (Ctrl-C). */
void cfl_relay_interrupt(struct cfl_relay *r);

/* Closes the link and frees the relay; NULL is a no-op. */
void cfl_relay_free(struct cfl_relay *r);

/* ---- the session: HELLO, WELCOME's config ---- */

/* Checks a HELLO as every coordinator does: the protocol version and
 * 1..1024 slots.  Returns 0, or -1 with err (the text to send back) and
 * *code the CFL_WIRE_E_* of the ERROR to send. */
int cfl_hello_check(const struct cfl_wire_hello *h, uint32_t *code /* OUT */,
		    struct cfl_err *err);

/* The WELCOME a coordinator answers a good HELLO with: heartbeats every
 * heartbeat seconds, the dataset the leases refer to (its SHA-256 and
 * size) and the config text (borrowed: m must not be released). */
void cfl_welcome_init(struct cfl_wire_msg *m /* OUT */, double heartbeat,
		      const unsigned char data_sha256[32], uint64_t data_size,
		      const char *config);

/* What a worker needs besides the dataset bytes: WELCOME's config, plain
 * "key=value" lines so a worker of the same protocol version reads exactly
 * the data options the coordinator loaded with. */
struct cfl_run_config {
	char run[256];		/* run key: a new key means another run */
	struct cfl_data_opts data;	/* path left NULL */
	char *target, *drop, *only;	/* owned strings of data.schema */
	int threads;
	double trial_timeout;	/* the coordinator's --trial-timeout (0: none) */
	size_t n_metrics;
	enum cfl_metric_id metrics[CFL_WIRE_MAX_METRICS];
};

/* Appends the config lines of run run_key (data options d, pool options
 * po) to b.  Returns 0, or -1 with err when a value cannot travel (a line
 * break in a regex). */
int cfl_run_config_format(struct cfl_buf *b, const char *run_key,
			  const struct cfl_data_opts *d,
			  const struct cfl_pool_opts *po, struct cfl_err *err);
/* Parses a config received from a coordinator.  Returns 0, or -1 with err
 * on an unknown key or a bad value (release c either way). */
int cfl_run_config_parse(struct cfl_run_config *c, const char *text,
			 struct cfl_err *err);
void cfl_run_config_release(struct cfl_run_config *c);

/* ---- the dataset: FETCH / CHUNK ---- */

/* Coordinator: the CHUNK answering FETCH req for the bytes data[0..len)
 * whose SHA-256 is sha256.  chunk points into data (do not release it).
 * Returns 0, or -1 with err when req asks for other data or past its end. */
int cfl_fetch_answer(const struct cfl_wire_fetch *req,
		     const unsigned char sha256[32], const void *data,
		     uint64_t len, struct cfl_wire_msg *chunk /* OUT */,
		     struct cfl_err *err);

/* Worker: one dataset coming into a cache, a few requests in flight so the
 * link never idles for a round trip between chunks. */
struct cfl_fetch {
	struct cfl_cache_fill fill;
	unsigned char sha256[32];
	uint64_t size, next_req;
	int filling;
	struct cfl_buf *keep;	/* also gathers the bytes here, or NULL */
};

/* Looks for sha256 (size bytes) in cache c: returns 1 with *path
 * (malloc'd; unchecked) when it is there, 0 when the fetch has begun (send
 * cfl_fetch_request's messages), -1 with err.  When keep is not NULL the
 * fetched bytes are also gathered into it (emptied first, grown as they
 * arrive, never sized from the announced size), so
 * that a caller who loads them at once need not read the entry back: after
 * cfl_fetch_chunk returns 1 it holds exactly the checked bytes; after a
 * failure or an abort its content is meaningless. */
int cfl_fetch_begin(struct cfl_fetch *f /* OUT */, const struct cfl_cache *c,
		    const unsigned char sha256[32], uint64_t size,
		    struct cfl_buf *keep, char **path /* OUT */,
		    struct cfl_err *err);
/* 1 with m the next FETCH to send, 0 when enough are in flight. */
int cfl_fetch_request(struct cfl_fetch *f, struct cfl_wire_msg *m /* OUT */);
/* Adds a received CHUNK.  Returns 0 when more is wanted, 1 when the entry
 * is complete and checked (*path malloc'd; f released), -1 with err (a
 * chunk of other data, out of order, the hash does not match; f
 * released). */
int cfl_fetch_chunk(struct cfl_fetch *f, const struct cfl_wire_chunk *c,
		    char **path /* OUT */, struct cfl_err *err);
/* Drops an unfinished fetch; a no-op once finished. */
void cfl_fetch_abort(struct cfl_fetch *f);

#endif
