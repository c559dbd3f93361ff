/*
 * cfl worker: runs trials for a coordinator (`cfl repeat|tune --listen`)
 * over TCP, with its own local pool of forked workers.
 *
 * The worker connects, proves it holds the token, says how many slots it
 * has, fetches the dataset into its cache (by SHA-256), loads it with the
 * coordinator's data options, then turns each LEASE into a trial of its
 * local pool and each finished trial into a RESULT.  Invariant: a result
 * is kept (as an encoded frame) until the coordinator acknowledges it, and
 * sent again after a reconnect; the coordinator's "first result wins" makes
 * that safe.  A lost coordinator is retried with backoff; SHUTDOWN ends the
 * worker with status 0.  It never opens the coordinator's database.
 */
#include "cli.h"
#include "remote.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/data.h"
#include "cfl/net.h"
#include "cfl/run.h"
#include "cfl/wire.h"

enum {
	OPT_CONNECT = CLI_OPT_FIRST_FREE,
	OPT_JOBS,
	OPT_TOKEN_FILE,
	OPT_CACHE_DIR,
	OPT_NAME,
	OPT_RETRY_FOR,
};

static void usage(FILE *f)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	fprintf(f,
		"usage: cfl worker --connect HOST:PORT [options]\n\n"
		"Runs trials for a coordinator started with `cfl repeat|tune --listen`,\n"
		"in a local pool of forked workers.  The dataset is fetched once into a\n"
		"cache by its SHA-256; results are kept until the coordinator acknowledges\n"
		"them; a lost connection is retried with backoff.  Exits 0 when the run\n"
		"is over.\n\n"
		"Options:\n"
		"  --connect HOST:PORT      the coordinator (as it printed) [required]\n"
		"  --jobs N                 local worker processes [%ld: the online cores]\n"
		"  --token-file FILE        the coordinator's token (mode 0600); required\n"
		"                           unless HOST is loopback [none]\n"
		"  --cache-dir DIR          dataset cache [$CFL_CACHE_DIR, else\n"
		"                           $XDG_CACHE_HOME/cfl, else ~/.cache/cfl]\n"
		"  --name NAME              this worker's name, unique per run [HOST:PID]\n"
		"  --retry-for SEC          give up when the coordinator stays unreachable\n"
		"                           this long [300]\n"
		"  -q, --quiet              no progress on stderr\n"
		"  -h, --help               this help\n\n"
		"Exit status: 0 when the run is over, 1 when the coordinator refused this\n"
		"worker or stayed unreachable, 2 on a usage error.\n\n"
		"Examples:\n"
		"  cfl worker --connect 127.0.0.1:7070\n"
		"  cfl worker --connect 10.0.0.5:7070 --jobs 8 --token-file ~/.cfl-token\n"
		"  ssh -N -L 7070:127.0.0.1:7070 coordinator-host &\n"
		"  cfl worker --connect 127.0.0.1:7070 --jobs 4\n",
		cores > 0 ? cores : 1);
}

/* A result not yet acknowledged, as the frame that carries it. */
struct kept {
	int64_t trial_id;
	uint32_t attempt;
	struct cfl_buf frame;
};

/* A lease running in the local pool under a local id. */
struct running {
	int64_t local_id;
	int64_t trial_id;
	uint32_t attempt;
};

struct worker {
	/* options */
	char host[256];
	int port;
	long jobs;
	const char *token_file;
	struct cfl_token token;
	char cache_dir[4096];
	char name[64];
	double retry_for;
	int quiet;
	/* connection */
	struct cfl_link link;
	int src_fd;		/* the fd number the pool polls (stable) */
	int idle[2];		/* a pipe never written: stands in when offline */
	double heartbeat, dead_after;
	double next_try, backoff, last_contact;
	int connected;
	/* the run */
	char run[256];
	unsigned char data_sha[32];
	int have_data;
	struct cfl_data data;
	struct cli_remote_config cfg;
	struct cfl_pool *pool;
	/* leases that came before the pool existed */
	struct cfl_wire_msg *early;
	size_t n_early;
	struct running *run_map;
	size_t n_run, cap_run;
	int64_t next_local;
	struct kept *kept;
	size_t n_kept;
	int shutdown;
	int fatal;
	size_t n_done;
};

static struct worker *g_w;
static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
	if (g_w && g_w->pool)
		cfl_pool_interrupt(g_w->pool);
}

/* Children of the local pool must not hold the coordinator's connection. */
static void atfork_child(void)
{
	/* once: the handler runs again in any fork below, where the number
	 * may belong to another file */
	if (g_w && g_w->src_fd >= 0) {
		close(g_w->src_fd);
		g_w->src_fd = -1;
	}
}

static void say(const struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (w->quiet)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "cfl worker: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* ---- connection ---- */

static void disconnect(struct worker *w, const char *why)
{
	if (!w->connected)
		return;
	say(w, "lost the coordinator: %s; reconnecting", why);
	w->connected = 0;
	/* the pool keeps polling src_fd: point it at a pipe that never
	 * becomes readable, which also closes the socket */
	if (w->src_fd >= 0 && w->link.fd == w->src_fd) {
		dup2(w->idle[0], w->src_fd);
		w->link.fd = -1;
	}
	cfl_link_close(&w->link);
	w->backoff = 0.2;
	w->next_try = cfl_now() + w->backoff;
}

static int send_msg(struct worker *w, const struct cfl_wire_msg *m)
{
	struct cfl_err err;

	if (!w->connected)
		return -1;
	if (cfl_link_send(&w->link, m, w->dead_after, &err)) {
		disconnect(w, err.msg);
		return -1;
	}
	return 0;
}

static void send_kept(struct worker *w, struct kept *k)
{
	struct cfl_err err;

	if (!w->connected)
		return;
	if (cfl_link_send_frame(&w->link, k->frame.data, k->frame.len,
				w->dead_after, &err))
		disconnect(w, err.msg);
}

/* ---- dataset ---- */

static void default_cache_dir(char *out, size_t cap)
{
	const char *d = getenv("CFL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
		   *h = getenv("HOME");

	if (d && *d)
		snprintf(out, cap, "%s", d);
	else if (x && *x)
		snprintf(out, cap, "%s/cfl", x);
	else
		snprintf(out, cap, "%s/.cache/cfl", h && *h ? h : "/tmp");
}

/* A lease whose model is a shell command: a TCP worker never runs one.
 * Its coordinator is a network peer (anyone on the machine when no token
 * is used, any token holder otherwise), and a command would hand it a
 * shell here; only the MPI path, whose ranks the user's own launcher
 * started, runs commands.  The lease fails with the reason, and the
 * worker stops (w->fatal): a coordinator that sends commands is not one to
 * serve again.  Returns 1 when l was refused, 0 for any other lease. */
static int refuse_command(struct worker *w, const struct cfl_wire_lease *l)
{
	struct cfl_wire_msg m;

	if (!(l->flags & CFL_LEASE_COMMAND))
		return 0;
	fprintf(stderr, "cfl worker: refused trial %lld: the coordinator sent a "
		"shell command to run, and a TCP worker never runs one; "
		"disconnecting\n", (long long)l->trial_id);
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	m.u.result.trial_id = l->trial_id;
	m.u.result.attempt = l->attempt;
	m.u.result.status = CFL_RESULT_MODEL_ERROR;
	m.u.result.error = (char *)"refused: a TCP worker never runs a shell command";
	send_msg(w, &m);	/* borrowed strings: not released */
	w->fatal = 1;
	return 1;
}

/* Keeps a LEASE that arrived while the dataset was still coming. */
static int keep_early(struct worker *w, struct cfl_wire_msg *m)
{
	struct cfl_wire_msg *e = realloc(w->early, (w->n_early + 1) * sizeof(*e));

	if (!e)
		return -1;
	w->early = e;
	e[w->n_early++] = *m;	/* owns it now */
	memset(m, 0, sizeof(*m));
	return 0;
}

/* Finds the dataset in the cache, unchecked (*verified = 0), or fetches
 * it into the cache, hashed on the way in (*verified = 1).  Returns the
 * path (malloc'd) or NULL with err. */
static char *fetch_data(struct worker *w, struct cfl_cache *cache,
			uint64_t size, int *verified /* OUT */,
			struct cfl_err *err)
{
	struct cfl_cache_fill fill;
	char *path = NULL;
	uint64_t next_req = 0;
	int r;

	*verified = 0;
	r = cfl_cache_find(cache, w->data_sha, size, &path, err);
	if (r)
		return r > 0 ? path : NULL;
	*verified = 1;
	if (cfl_cache_fill_begin(&fill, cache, w->data_sha, size, err))
		return NULL;
	while (fill.offset < size) {
		struct cfl_wire_msg m;

		/* a few requests in flight, so the link never idles for a
		 * round trip between chunks (they come back in order) */
		while (next_req < size && next_req - fill.offset < 4 * (uint64_t)CFL_TCP_CHUNK) {
			cfl_wire_msg_init(&m, CFL_WIRE_FETCH);
			memcpy(m.u.fetch.sha256, w->data_sha, 32);
			m.u.fetch.offset = next_req;
			m.u.fetch.max_len = CFL_TCP_CHUNK;
			if (cfl_link_send(&w->link, &m, w->dead_after, err))
				goto fail;
			next_req += CFL_TCP_CHUNK;
		}
		for (;;) {
			r = cfl_link_recv(&w->link, &m, w->dead_after, err);
			if (r == 0)
				cfl_err_set(err, "no dataset bytes for %g s", w->dead_after);
			if (r <= 0)
				goto fail;
			if (m.type == CFL_WIRE_CHUNK)
				break;
			if (m.type == CFL_WIRE_LEASE) {
				if (refuse_command(w, &m.u.lease)) {
					cfl_wire_msg_release(&m);
					cfl_err_set(err, "refused a shell command");
					goto fail;
				}
				if (keep_early(w, &m)) {
					cfl_wire_msg_release(&m);
					cfl_err_set(err, "out of memory");
					goto fail;
				}
				continue;
			}
			if (m.type == CFL_WIRE_ERROR) {
				cfl_err_set(err, "the coordinator: %s", m.u.error.message);
				cfl_wire_msg_release(&m);
				goto fail;
			}
			cfl_wire_msg_release(&m);	/* heartbeats */
		}
		if (memcmp(m.u.chunk.sha256, w->data_sha, 32) ||
		    m.u.chunk.total != size || !m.u.chunk.n ||
		    cfl_cache_fill_add(&fill, m.u.chunk.offset, m.u.chunk.data,
				       m.u.chunk.n, err)) {
			if (!m.u.chunk.n || memcmp(m.u.chunk.sha256, w->data_sha, 32))
				cfl_err_set(err, "a bad dataset chunk");
			cfl_wire_msg_release(&m);
			goto fail;
		}
		cfl_wire_msg_release(&m);
	}
	if (cfl_cache_fill_finish(&fill, &path, err))
		return NULL;
	return path;
fail:
	cfl_cache_fill_abort(&fill);
	return NULL;
}

/* Reads the coordinator's encoded parts (cfl_data_pack_parts) from path
 * into d, with the SHA-256 of the bytes read in sha: when it is not the
 * announced one the parts are not unpacked (d stays empty) and 0 is
 * returned, for the caller to compare.  -1 with err when the file cannot be
 * read or its parts are malformed. */
static int load_parts(struct cfl_data *d, const char *path,
		      unsigned char sha[32], const unsigned char want[32],
		      struct cfl_err *err)
{
	struct cfl_buf b;
	int r = 0;

	memset(d, 0, sizeof(*d));
	cfl_buf_init(&b);
	if (cfl_buf_read_file(&b, path, err))
		return -1;
	cfl_net_sha256(b.data, b.len, sha);
	if (!memcmp(sha, want, 32))
		r = cfl_data_unpack_parts(d, b.data, b.len, err);
	cfl_buf_release(&b);
	return r;
}

/* Finds the dataset in the cache or fetches it, and loads it into w->data.
 * A cached entry is not hashed before the load: the load hashes every byte
 * it reads, so comparing that hash with the announced one checks the entry
 * in the same pass.  When the check or the load fails on an entry
 * found in the cache, the cache checks the entry itself (removing it when
 * it is damaged) and the dataset is fetched or loaded again; a few rounds,
 * in case another worker on this host is replacing the entry meanwhile.
 * Returns 0; -1 with err when the coordinator or the cache failed (worth a
 * new connection); -2 when trying again cannot help (the reason printed). */
static int load_data(struct worker *w, uint64_t size, struct cfl_err *err)
{
	struct cfl_cache cache;
	int rc = -2;

	if (cfl_cache_init(&cache, w->cache_dir, err))
		return -1;
	for (int round = 1;; round++) {
		struct cfl_err lerr;
		char *path, *checked = NULL;
		unsigned char got[32];
		int verified, r, intact;

		path = fetch_data(w, &cache, size, &verified, err);
		if (!path) {
			rc = -1;
			break;
		}
		r = load_parts(&w->data, path, got, w->data_sha, &lerr);
		if (!r && !memcmp(got, w->data_sha, 32)) {
			free(path);
			rc = 0;
			break;
		}
		if (!r)
			cfl_data_release(&w->data);
		if (!verified && round < 3) {
			intact = cfl_cache_get(&cache, w->data_sha, size, &checked, err);
			free(checked);
			if (intact < 0) {
				free(path);
				rc = -1;
				break;
			}
			if (!intact)
				say(w, "cached dataset '%s' was damaged (removed); "
				    "fetching it again", path);
			/* intact but read with another hash: replaced while
			 * we read it, so read it again; intact and failing to
			 * load: the file's own error, reported below */
			if (!intact || !r) {
				free(path);
				continue;
			}
		}
		if (r)
			fprintf(stderr, "cfl worker: cannot load the dataset: %s\n",
				lerr.msg);
		else
			fprintf(stderr, "cfl worker: the cached dataset '%s' changed "
				"while loading\n", path);
		free(path);
		break;
	}
	cfl_cache_release(&cache);
	return rc;
}

/* ---- leases and results ---- */

static int submit_lease(struct worker *w, const struct cfl_wire_lease *l)
{
	struct cfl_trial_spec spec;
	struct cfl_err err;

	if (w->n_run == w->cap_run) {
		size_t cap = w->cap_run ? 2 * w->cap_run : 64;
		struct running *r = realloc(w->run_map, cap * sizeof(*r));

		if (!r)
			return -1;
		w->run_map = r;
		w->cap_run = cap;
	}
	cfl_trial_spec_from_lease(&spec, l, ++w->next_local);
	if (cfl_pool_submit(w->pool, &spec, &err)) {
		fprintf(stderr, "cfl worker: %s\n", err.msg);
		return -1;
	}
	w->run_map[w->n_run++] = (struct running){ spec.trial_id, l->trial_id,
						   l->attempt };
	return 0;
}

/* The coordinator failed lease (trial_id, attempt) at its --trial-timeout:
 * stop the local trial now, so its slot serves the next lease, and forget
 * it, so no RESULT goes for it.  A lease that is not running here (done,
 * its result already kept or sent; unknown; another attempt) is left as
 * it is.  Returns 0, or -1 when the local pool failed. */
static int cancel_lease(struct worker *w, int64_t trial_id, uint32_t attempt)
{
	struct cfl_err err;
	int r;

	for (size_t i = 0; i < w->n_run; i++) {
		if (w->run_map[i].trial_id != trial_id ||
		    w->run_map[i].attempt != attempt)
			continue;
		r = cfl_pool_cancel(w->pool, w->run_map[i].local_id, &err);
		if (r < 0) {
			fprintf(stderr, "cfl worker: %s\n", err.msg);
			return -1;
		}
		if (r == 1)
			w->run_map[i] = w->run_map[--w->n_run];
		return 0;
	}
	return 0;
}

/* One message from the coordinator once the run is set up. */
static void handle_msg(struct worker *w, struct cfl_wire_msg *m)
{
	switch (m->type) {
	case CFL_WIRE_LEASE:
		if (refuse_command(w, &m->u.lease))
			break;	/* w->fatal: the loop ends, the link is closed */
		if (submit_lease(w, &m->u.lease))
			w->fatal = 1;
		break;
	case CFL_WIRE_RESULT_ACK:
		for (size_t i = 0; i < w->n_kept; i++)
			if (w->kept[i].trial_id == m->u.ack.trial_id &&
			    w->kept[i].attempt == m->u.ack.attempt) {
				cfl_buf_release(&w->kept[i].frame);
				w->kept[i] = w->kept[--w->n_kept];
				break;
			}
		break;
	case CFL_WIRE_SHUTDOWN:
		w->shutdown = 1;
		break;
	case CFL_WIRE_ERROR:
		fprintf(stderr, "cfl worker: the coordinator refused: %s\n",
			m->u.error.message);
		disconnect(w, "refused");
		break;
	case CFL_WIRE_CANCEL:
		if (cancel_lease(w, m->u.cancel.trial_id, m->u.cancel.attempt))
			w->fatal = 1;
		break;
	case CFL_WIRE_HEARTBEAT:
		break;
	default:
		disconnect(w, "unexpected frame");
		break;
	}
	cfl_wire_msg_release(m);
}

static void drain(struct worker *w)
{
	struct cfl_wire_msg m;
	struct cfl_err err;
	int r;

	while (w->connected && !w->shutdown && !w->fatal &&
	       (r = cfl_link_next(&w->link, &m, &err)) != 0) {
		if (r < 0) {
			disconnect(w, err.msg);
			return;
		}
		handle_msg(w, &m);
	}
}

/* The pool calls this when the coordinator's socket is readable. */
static int on_link_ready(struct cfl_pool *p, void *ctx, struct cfl_err *err)
{
	struct worker *w = ctx;
	struct cfl_err e;

	(void)p;
	(void)err;
	if (!w->connected)
		return 0;
	if (cfl_link_read(&w->link, &e))
		disconnect(w, e.msg);
	else
		drain(w);
	return 0;
}

/* A finished local trial: a RESULT for the coordinator, kept until acked. */
static int on_event(struct worker *w, const struct cfl_pool_event *ev)
{
	struct running r = { 0, 0, 0 };
	struct cfl_wire_msg m;
	struct cfl_err err;
	size_t i;

	for (i = 0; i < w->n_run; i++)
		if (w->run_map[i].local_id == ev->trial_id) {
			r = w->run_map[i];
			w->run_map[i] = w->run_map[--w->n_run];
			break;
		}
	if (!r.local_id)
		return 0;
	w->n_done++;
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	if (ev->status == CFL_TRIAL_DONE && ev->result) {
		struct kept *k;

		m.u.result = *ev->result;	/* borrowed: not released */
		m.u.result.trial_id = r.trial_id;
		m.u.result.attempt = r.attempt;
		k = realloc(w->kept, (w->n_kept + 1) * sizeof(*k));
		if (!k)
			return -1;
		w->kept = k;
		k = &w->kept[w->n_kept];
		k->trial_id = r.trial_id;
		k->attempt = r.attempt;
		cfl_buf_init(&k->frame);
		if (cfl_wire_encode(&k->frame, 0, 0, &m, &err)) {
			fprintf(stderr, "cfl worker: %s\n", err.msg);
			return -1;
		}
		w->n_kept++;
		send_kept(w, k);
		return 0;
	}
	/* a model error or a crashed local process: reported once (a lost
	 * report only means the coordinator retries the trial) */
	m.u.result.trial_id = r.trial_id;
	m.u.result.attempt = r.attempt;
	/* the local pool makes a crash POISON (no local retries), a model
	 * error FAILED: the coordinator retries the first, not the second */
	m.u.result.status = ev->status == CFL_TRIAL_POISON ? CFL_RESULT_CRASHED
							   : CFL_RESULT_MODEL_ERROR;
	m.u.result.error = (char *)(ev->reason ? ev->reason : "failed on the worker");
	send_msg(w, &m);
	return 0;
}

/* ---- sessions ---- */

/* Connects, says HELLO, reads WELCOME and, the first time, fetches and
 * loads the dataset and starts the local pool.  Returns 0, or -1 (not
 * connected; w->fatal set when retrying cannot help). */
static int session(struct worker *w)
{
	struct cfl_wire_msg m;
	struct cfl_err err;
	int fatal = 0, r;
	uint64_t size;

	if (cfl_link_connect(&w->link, w->host, w->port,
			     w->token_file ? &w->token : NULL, 10, &fatal, &err)) {
		if (fatal) {
			fprintf(stderr, "cfl worker: %s\n", err.msg);
			w->fatal = 1;
		} else if (!w->quiet && w->backoff >= 1.6) {
			say(w, "%s", err.msg);
		}
		return -1;
	}
	w->connected = 1;
	w->dead_after = 10;
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION;
	m.u.hello.n_slots = (uint32_t)w->jobs;
	m.u.hello.name = w->name;
	if (cfl_link_send(&w->link, &m, 10, &err))
		goto lost;
	r = cfl_link_recv(&w->link, &m, 10, &err);
	if (r == 0)
		cfl_err_set(&err, "no WELCOME within 10 s");
	if (r <= 0)
		goto lost;
	if (m.type == CFL_WIRE_ERROR) {
		/* a duplicate name may be our own previous connection, not yet
		 * timed out: retry; anything else will not change */
		fprintf(stderr, "cfl worker: the coordinator refused: %s\n",
			m.u.error.message);
		if (m.u.error.code != CFL_WIRE_E_PROTOCOL ||
		    !strstr(m.u.error.message, "already connected"))
			w->fatal = 1;
		cfl_wire_msg_release(&m);
		cfl_link_close(&w->link);
		w->connected = 0;
		return -1;
	}
	if (m.type != CFL_WIRE_WELCOME) {
		cfl_err_set(&err, "expected WELCOME, got %s", cfl_wire_type_name(m.type));
		cfl_wire_msg_release(&m);
		goto lost;
	}
	{
		struct cli_remote_config cfg;

		if (cli_remote_config_parse(&cfg, m.u.welcome.config, &err)) {
			cli_remote_config_release(&cfg);
			fprintf(stderr, "cfl worker: bad config from the coordinator: %s\n",
				err.msg);
			cfl_wire_msg_release(&m);
			w->fatal = 1;
			goto closed;
		}
		if (w->have_data && (memcmp(w->data_sha, m.u.welcome.data_sha256, 32) ||
				     strcmp(w->run, cfg.run))) {
			/* another run behind the same address: our results and
			 * loaded data belong to the old one */
			fprintf(stderr, "cfl worker: the coordinator now serves another "
				"run (%s, not %s); this worker's run is over\n", cfg.run, w->run);
			{
				struct cfl_wire_msg e;

				cfl_wire_msg_init(&e, CFL_WIRE_ERROR);
				e.u.error.code = CFL_WIRE_E_PROTOCOL;
				e.u.error.message = "this worker served another run; "
						    "start a new worker for this one";
				cfl_link_send(&w->link, &e, 2, &err);
			}
			cli_remote_config_release(&cfg);
			cfl_wire_msg_release(&m);
			w->shutdown = 1;
			goto closed;
		}
		if (!w->have_data) {
			cli_remote_config_release(&w->cfg);	/* an earlier try's */
			w->cfg = cfg;
			snprintf(w->run, sizeof(w->run), "%s", cfg.run);
			memcpy(w->data_sha, m.u.welcome.data_sha256, 32);
		} else {
			cli_remote_config_release(&cfg);
		}
	}
	w->heartbeat = m.u.welcome.heartbeat_ms ? m.u.welcome.heartbeat_ms / 1000.0 : 1;
	w->dead_after = 5 * w->heartbeat;
	if (w->dead_after < 2)
		w->dead_after = 2;
	size = m.u.welcome.data_size;
	cfl_wire_msg_release(&m);
	w->last_contact = cfl_now();

	if (!w->have_data) {
		struct cfl_pool_opts po;
		char hex[65];

		cfl_sha256_hex(w->data_sha, hex);
		r = load_data(w, size, &err);
		if (r == -1)
			goto lost;
		if (r) {
			w->fatal = 1;
			goto closed;
		}
		w->have_data = 1;
		say(w, "dataset %.12s... (%llu bytes) ready; %ld local workers", hex,
		    (unsigned long long)size, w->jobs);
		cfl_pool_opts_init(&po);
		po.data = &w->data;
		po.n_local = (size_t)w->jobs;
		po.threads_per_trial = w->cfg.threads;
		po.max_retries = 0;	/* the coordinator decides on retries */
		/* a hung trial is failed and CANCELled by the coordinator at
		 * its --trial-timeout, which kills its child here at once; this
		 * later timeout is the safety net for a CANCEL that never came
		 * (the connection was lost meanwhile) */
		if (w->cfg.trial_timeout > 0)
			po.trial_timeout = w->cfg.trial_timeout * 1.1 + 2 * w->heartbeat;
		po.commit_interval = 0;
		po.tick = 0.2;
		po.n_metrics = w->cfg.n_metrics;
		memcpy(po.metrics, w->cfg.metrics, sizeof(po.metrics));
		w->src_fd = w->link.fd;
		w->pool = cfl_pool_new(&po, &err);
		if (!w->pool ||
		    cfl_pool_add_source(w->pool, w->src_fd, on_link_ready, w, &err)) {
			fprintf(stderr, "cfl worker: %s\n", err.msg);
			w->fatal = 1;
			goto closed;
		}
		for (size_t i = 0; i < w->n_early; i++) {
			if (submit_lease(w, &w->early[i].u.lease))
				w->fatal = 1;
			cfl_wire_msg_release(&w->early[i]);
		}
		w->n_early = 0;
		if (w->fatal)
			goto closed;
	} else {
		/* keep the fd number the pool polls */
		if (w->link.fd != w->src_fd) {
			if (dup2(w->link.fd, w->src_fd) < 0) {
				cfl_err_set(&err, "dup2: %s", strerror(errno));
				goto lost;
			}
			close(w->link.fd);
			w->link.fd = w->src_fd;
		}
	}
	say(w, "connected to %s:%d as '%s'%s", w->host, w->port, w->name,
	    w->n_kept ? "; sending kept results" : "");
	/* results the coordinator has not acknowledged: again (a copy of a
	 * result it has is acknowledged as a duplicate) */
	for (size_t i = 0; i < w->n_kept && w->connected; i++)
		send_kept(w, &w->kept[i]);
	drain(w);
	return w->connected ? 0 : -1;
lost:
	if (w->link.fd >= 0 && w->link.fd == w->src_fd) {
		dup2(w->idle[0], w->src_fd);
		w->link.fd = -1;
	}
	cfl_link_close(&w->link);
	w->connected = 0;
	/* leases that came during a failed fetch were requeued by the
	 * coordinator when the connection went */
	if (!w->have_data) {
		for (size_t i = 0; i < w->n_early; i++)
			cfl_wire_msg_release(&w->early[i]);
		w->n_early = 0;
	}
	if (!w->quiet)
		say(w, "%s", err.msg);
	return -1;
closed:
	if (w->link.fd >= 0 && w->link.fd == w->src_fd) {
		dup2(w->idle[0], w->src_fd);
		w->link.fd = -1;
	}
	cfl_link_close(&w->link);
	w->connected = 0;
	return -1;
}

/* ---- options ---- */

static int parse_args(struct worker *w, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "connect", required_argument, 0, OPT_CONNECT },
		{ "jobs", required_argument, 0, OPT_JOBS },
		{ "token-file", required_argument, 0, OPT_TOKEN_FILE },
		{ "cache-dir", required_argument, 0, OPT_CACHE_DIR },
		{ "name", required_argument, 0, OPT_NAME },
		{ "retry-for", required_argument, 0, OPT_RETRY_FOR },
		{ "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *connect = NULL;
	struct cfl_err err;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	char host[200];
	int c;

	w->jobs = cores > 0 ? cores : 1;
	w->retry_for = 300;
	default_cache_dir(w->cache_dir, sizeof(w->cache_dir));
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = 0;
	snprintf(w->name, sizeof(w->name), "%.40s:%ld", host, (long)getpid());
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_CONNECT:
			connect = optarg;
			break;
		case OPT_JOBS:
			if (cli_parse_long(optarg, 1, 1024, &w->jobs))
				return cli_usage_error("worker", "--jobs must be an integer in [1, 1024], got '%s'", optarg);
			break;
		case OPT_TOKEN_FILE:
			w->token_file = optarg;
			break;
		case OPT_CACHE_DIR:
			snprintf(w->cache_dir, sizeof(w->cache_dir), "%s", optarg);
			break;
		case OPT_NAME:
			if (!*optarg || strlen(optarg) > 48)
				return cli_usage_error("worker", "--name must have 1 to 48 characters");
			snprintf(w->name, sizeof(w->name), "%s", optarg);
			break;
		case OPT_RETRY_FOR:
			if (cli_parse_double(optarg, 0, 1e7, &w->retry_for))
				return cli_usage_error("worker", "--retry-for must be a number of seconds >= 0, got '%s'", optarg);
			break;
		case 'q':
			w->quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_usage_error("worker", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage_error("worker", "unexpected argument '%s'", argv[optind]);
	if (!connect)
		return cli_usage_error("worker", "--connect HOST:PORT is required");
	if (cfl_net_parse_hostport(connect, w->host, sizeof(w->host), &w->port, &err))
		return cli_usage_error("worker", "--connect: %s", err.msg);
	if (!w->port)
		return cli_usage_error("worker", "--connect: port 0 is not a port to connect to");
	if (!w->token_file && !cfl_net_is_loopback(w->host))
		return cli_usage_error("worker", "--connect %s: a non-loopback address "
				       "needs --token-file (or use an SSH tunnel to "
				       "127.0.0.1)", connect);
	if (w->token_file && cfl_token_load(&w->token, w->token_file, &err))
		return cli_fail(&err);
	return 0;
}

int cmd_worker(int argc, char **argv)
{
	static struct worker w;
	int rc = CLI_FAIL, r;

	memset(&w, 0, sizeof(w));
	cfl_link_init(&w.link);
	w.src_fd = -1;
	w.idle[0] = w.idle[1] = -1;
	r = parse_args(&w, argc, argv);
	if (r)
		return r < 0 ? CLI_OK : r;
	if (pipe(w.idle)) {
		perror("cfl worker: pipe");
		return CLI_FAIL;
	}
	g_w = &w;
	pthread_atfork(NULL, NULL, atfork_child);
	cli_catch_stop(on_signal, 0, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);

	w.last_contact = cfl_now();
	w.backoff = 0.2;
	w.heartbeat = 1;
	w.dead_after = 10;
	while (!w.shutdown && !w.fatal && !g_stop) {
		double now = cfl_now();

		if (!w.connected) {
			if (now - w.last_contact > w.retry_for) {
				fprintf(stderr, "cfl worker: gave up: no coordinator at "
					"%s:%d for %g s\n", w.host, w.port, w.retry_for);
				goto out;
			}
			if (now >= w.next_try) {
				if (session(&w) == 0) {
					w.backoff = 0.2;
				} else {
					if (w.fatal || w.shutdown)
						break;
					w.backoff = w.backoff * 2 > 5 ? 5 : w.backoff * 2;
					w.next_try = cfl_now() + w.backoff;
				}
				continue;
			}
		}
		if (!w.pool) {
			/* never connected yet: nothing to run */
			usleep(50000);
			continue;
		}
		{
			struct cfl_pool_event ev;
			struct cfl_err err;

			r = cfl_pool_wait(w.pool, &ev, &err);
			if (r < 0) {
				fprintf(stderr, "cfl worker: %s\n", err.msg);
				goto out;
			}
			if (r == CFL_POOL_INTERRUPTED)
				break;
			if (r == CFL_POOL_EVENT && on_event(&w, &ev))
				goto out;
			if (r == CFL_POOL_IDLE) {
				/* nothing to run: wait for the coordinator */
				struct pollfd pfd = { w.connected ? w.link.fd : w.idle[0],
						      POLLIN, 0 };

				if (poll(&pfd, 1, 200) > 0 && w.connected)
					on_link_ready(w.pool, &w, &err);
			}
		}
		if (w.connected) {
			struct cfl_pool_stats st;

			now = cfl_now();
			if (now - w.link.last_recv > w.dead_after) {
				char why[96];

				snprintf(why, sizeof(why), "no frame for %.1f s",
					 now - w.link.last_recv);
				disconnect(&w, why);
			} else if (now - w.link.last_send >= w.heartbeat) {
				struct cfl_wire_msg m;

				cfl_pool_get_stats(w.pool, &st);
				cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
				m.u.heartbeat.time_ms = (uint64_t)(now * 1000);
				m.u.heartbeat.n_running = (uint32_t)st.running;
				send_msg(&w, &m);
			}
			w.last_contact = now;
		}
	}
	if (w.shutdown) {
		say(&w, "the run is over (%zu trials here)", w.n_done);
		rc = CLI_OK;
	} else if (g_stop) {
		rc = CLI_INTERRUPTED;
	}
out:
	g_w = NULL;
	/* children still running a trial are killed: the run is over or we
	 * are leaving, and the coordinator requeues what we held */
	cfl_pool_close(w.pool, NULL);
	if (w.connected && w.link.fd == w.src_fd)
		w.src_fd = -1;	/* closed by cfl_link_close */
	cfl_link_close(&w.link);
	if (w.src_fd >= 0)
		close(w.src_fd);
	close(w.idle[0]);
	close(w.idle[1]);
	for (size_t i = 0; i < w.n_kept; i++)
		cfl_buf_release(&w.kept[i].frame);
	free(w.kept);
	for (size_t i = 0; i < w.n_early; i++)
		cfl_wire_msg_release(&w.early[i]);
	free(w.early);
	free(w.run_map);
	if (w.have_data)
		cfl_data_release(&w.data);
	cli_remote_config_release(&w.cfg);
	cfl_token_clear(&w.token);
	return rc;
}
