/*
 * The relay (see relay.h): a worker that serves a coordinator with a local
 * pool, over any link.  `cfl worker` runs it over TCP, an MPI worker rank
 * over the socket to its pump.
 *
 * Invariants: a result is kept (as an encoded frame) until the coordinator
 * acknowledges it, and sent again after a reconnect; a lease that came
 * before the pool existed waits for it; without allow_commands no command
 * lease ever reaches the pool.  The pool polls one descriptor number for
 * the link (src_fd, a dup) that stays valid across reconnects: while the
 * link is down it is a pipe that is never written.
 */
#include "cfl/relay.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

struct cfl_relay {
	struct cfl_relay_opts o;
	struct cfl_relay_link link;
	int connected;
	int link_fd;		/* the link's own descriptor while connected */
	int src_fd;		/* the number the pool polls (stable) */
	int idle[2];		/* a pipe never written: stands in when offline */
	double heartbeat, dead_after;
	double last_recv, last_send, last_contact, next_try, backoff;
	/* the run */
	char run[256];
	unsigned char data_sha[32];
	int have_data;
	struct cfl_data own;	/* fetched and loaded here (o.data NULL) */
	struct cfl_run_config cfg;
	struct cfl_pool *pool;
	/* leases that came before the pool existed */
	struct cfl_wire_msg *early;
	size_t n_early;
	struct running *run_map;
	size_t n_run, cap_run;
	int64_t next_local;
	struct kept *kept;
	size_t n_kept;
	int shutdown, fatal;
	int lost;		/* a link that cannot reconnect went */
	volatile sig_atomic_t stop;
	struct cfl_err why;	/* what ended it, when fatal or lost */
	size_t n_done;
};

/* The relay whose descriptors forked children must not keep: a child
 * holding the coordinator's connection would keep it open after we die. */
static struct cfl_relay *g_relay;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	struct cfl_relay *r = g_relay;

	/* once: the handler runs again in any fork below (a command trial
	 * forks its shell), where the numbers may be other files' */
	if (!r)
		return;
	if (r->link_fd >= 0)
		close(r->link_fd);
	r->link_fd = -1;
	g_relay = NULL;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static void say(struct cfl_relay *r, int important, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct cfl_relay *r, int important, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	if (!r->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->o.log(r->o.log_ctx, important, msg);
}

/* The relay cannot go on: remembers why (the first reason wins). */
static void fail(struct cfl_relay *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct cfl_relay *r, const char *fmt, ...)
{
	va_list ap;

	if (r->fatal)
		return;
	r->fatal = 1;
	va_start(ap, fmt);
	vsnprintf(r->why.msg, sizeof(r->why.msg), fmt, ap);
	va_end(ap);
}

/* A link that cannot reconnect went: the relay ends (not an error of its
 * own when the coordinator is what went). */
static void lose(struct cfl_relay *r, const char *why)
{
	if (r->fatal || r->lost)
		return;
	r->lost = 1;
	snprintf(r->why.msg, sizeof(r->why.msg), "lost the coordinator: %.900s", why);
}

void cfl_relay_opts_init(struct cfl_relay_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->n_slots = 1;
	o->retry_for = 300;
	o->max_data_size = CFL_RELAY_MAX_DATA;
}

struct cfl_relay *cfl_relay_new(const struct cfl_relay_opts *o,
				struct cfl_err *err)
{
	struct cfl_relay *r;

	if (!o->name || !*o->name)
		return cfl_err_set(err, "a relay needs a name"), NULL;
	if (o->n_slots < 1 || o->n_slots > 1024)
		return cfl_err_set(err, "a relay has 1..1024 slots, not %zu",
				   o->n_slots), NULL;
	if (!o->data && !o->cache_dir)
		return cfl_err_set(err, "a relay needs its data or a cache "
				   "directory"), NULL;
	r = cfl_calloc(1, sizeof(*r), err);
	if (!r)
		return NULL;
	r->o = *o;
	r->link_fd = r->src_fd = -1;
	r->idle[0] = r->idle[1] = -1;
	if (pipe(r->idle)) {
		cfl_err_set(err, "pipe: %s", strerror(errno));
		free(r);
		return NULL;
	}
	r->heartbeat = 1;
	r->dead_after = 10;
	r->backoff = 0.2;
	return r;
}

size_t cfl_relay_n_done(const struct cfl_relay *r)
{
	return r->n_done;
}

void cfl_relay_interrupt(struct cfl_relay *r)
{
	if (!r)
		return;
	r->stop = 1;
	if (r->pool)
		cfl_pool_interrupt(r->pool);
}

/* ---- the link ---- */

static void link_down(struct cfl_relay *r)
{
	/* the pool keeps polling src_fd: a pipe that never becomes readable
	 * stands in until the next connection */
	if (r->src_fd >= 0)
		dup2(r->idle[0], r->src_fd);
	r->link.ops->close(r->link.ctx);
	r->link_fd = -1;
	r->connected = 0;
}

static void disconnect(struct cfl_relay *r, const char *why)
{
	if (!r->connected)
		return;
	link_down(r);
	if (!r->link.ops->connect) {
		lose(r, why);
		return;
	}
	say(r, 0, "lost the coordinator: %s; reconnecting", why);
	r->backoff = 0.2;
	r->next_try = cfl_now() + r->backoff;
}

/* The relay ends on an error of its own: the coordinator is told why, so
 * it does not wait for this worker's slots. */
static void tell_fatal(struct cfl_relay *r)
{
	struct cfl_wire_msg m;
	struct cfl_err err;

	if (!r->fatal || !r->connected)
		return;
	cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
	m.u.error.code = CFL_WIRE_E_DATA;
	m.u.error.message = r->why.msg;
	r->link.ops->send(r->link.ctx, &m, 2, &err);
}

static int send_msg(struct cfl_relay *r, const struct cfl_wire_msg *m)
{
	struct cfl_err err;

	if (!r->connected)
		return -1;
	if (r->link.ops->send(r->link.ctx, m, r->dead_after, &err)) {
		disconnect(r, err.msg);
		return -1;
	}
	r->last_send = cfl_now();
	return 0;
}

static void send_kept(struct cfl_relay *r, const struct kept *k)
{
	struct cfl_wire_frame f;
	struct cfl_wire_msg m;
	struct cfl_err err;

	if (cfl_wire_decode(k->frame.data, k->frame.len, &f, &m, &err)) {
		fail(r, "a kept result: %s", err.msg);
		return;
	}
	send_msg(r, &m);
	cfl_wire_msg_release(&m);
}

/* ---- leases and results ---- */

/* Refuses a lease whose model is a shell command unless commands are
 * allowed.  A TCP worker's coordinator is a network peer (anyone on the
 * machine when no token is used, any token holder otherwise), and a
 * command would hand it a shell here; only an MPI rank, which the user's
 * own launcher started, runs commands.  The lease fails with the reason,
 * and the relay stops: a coordinator that sends commands is not one to
 * serve again.  Returns 1 when l was refused, 0 for any other lease. */
static int refuse_command(struct cfl_relay *r, const struct cfl_wire_lease *l)
{
	struct cfl_wire_msg m;

	if (r->o.allow_commands || !(l->flags & CFL_LEASE_COMMAND))
		return 0;
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	m.u.result.trial_id = l->trial_id;
	m.u.result.attempt = l->attempt;
	m.u.result.status = CFL_RESULT_MODEL_ERROR;
	m.u.result.error = (char *)"refused: a TCP worker never runs a shell command";
	send_msg(r, &m);	/* borrowed strings: not released */
	fail(r, "refused trial %lld: the coordinator sent a shell command to "
	     "run, and a TCP worker never runs one; disconnecting",
	     (long long)l->trial_id);
	return 1;
}

static int submit_lease(struct cfl_relay *r, const struct cfl_wire_lease *l)
{
	struct cfl_trial_spec spec;
	struct cfl_err err;

	if (r->n_run == r->cap_run) {
		size_t cap = r->cap_run ? 2 * r->cap_run : 64;
		struct running *m = cfl_realloc(r->run_map, cap * sizeof(*m), &err);

		if (!m) {
			fail(r, "%s", err.msg);
			return -1;
		}
		r->run_map = m;
		r->cap_run = cap;
	}
	cfl_trial_spec_from_lease(&spec, l, ++r->next_local);
	if (cfl_pool_submit(r->pool, &spec, &err)) {
		fail(r, "%s", err.msg);
		return -1;
	}
	r->run_map[r->n_run++] = (struct running){ spec.trial_id, l->trial_id,
						   l->attempt };
	return 0;
}

/* Keeps a LEASE that came while the dataset was still coming. */
static int keep_early(struct cfl_relay *r, struct cfl_wire_msg *m)
{
	struct cfl_err err;
	struct cfl_wire_msg *e = cfl_realloc(r->early, (r->n_early + 1) * sizeof(*e),
					     &err);

	if (!e) {
		fail(r, "%s", err.msg);
		return -1;
	}
	r->early = e;
	e[r->n_early++] = *m;	/* owns it now */
	memset(m, 0, sizeof(*m));
	return 0;
}

static void drop_early(struct cfl_relay *r)
{
	for (size_t i = 0; i < r->n_early; i++)
		cfl_wire_msg_release(&r->early[i]);
	r->n_early = 0;
}

/* The coordinator failed lease (trial_id, attempt) at its --trial-timeout:
 * stop the local trial now, so its slot serves the next lease, and forget
 * it, so no RESULT goes for it.  A lease that is not running here (done,
 * its result already kept or sent; unknown; another attempt) is left as
 * it is. */
static void cancel_lease(struct cfl_relay *r, int64_t trial_id,
			 uint32_t attempt)
{
	struct cfl_err err;

	for (size_t i = 0; i < r->n_run; i++) {
		int k;

		if (r->run_map[i].trial_id != trial_id ||
		    r->run_map[i].attempt != attempt)
			continue;
		k = cfl_pool_cancel(r->pool, r->run_map[i].local_id, &err);
		if (k < 0)
			fail(r, "%s", err.msg);
		else if (k == 1)
			r->run_map[i] = r->run_map[--r->n_run];
		return;
	}
}

/* A local trial's intermediate score (a lease with CFL_LEASE_PROGRESS):
 * sent on to the coordinator under the lease's own id, for its pruner to
 * decide (its CANCEL then stops the trial here, as at a timeout).  Never
 * pruned here; a frame that cannot be sent is dropped (the link's loss is
 * handled where it is found). */
static int on_progress(void *ctx, int64_t local_id, void *user, size_t step,
		       double score, struct cfl_err *err)
{
	struct cfl_relay *r = ctx;

	(void)user;
	(void)err;
	for (size_t i = 0; i < r->n_run; i++) {
		struct cfl_wire_msg m;

		if (r->run_map[i].local_id != local_id)
			continue;
		cfl_wire_msg_init(&m, CFL_WIRE_PROGRESS);
		m.u.progress.trial_id = r->run_map[i].trial_id;
		m.u.progress.attempt = r->run_map[i].attempt;
		m.u.progress.step = step > UINT32_MAX ? UINT32_MAX : (uint32_t)step;
		m.u.progress.score = score;
		(void)send_msg(r, &m);
		break;
	}
	return 0;
}

/* One message from the coordinator once the run is set up. */
static void handle_msg(struct cfl_relay *r, struct cfl_wire_msg *m)
{
	switch (m->type) {
	case CFL_WIRE_LEASE:
		if (!refuse_command(r, &m->u.lease))
			submit_lease(r, &m->u.lease);
		break;
	case CFL_WIRE_RESULT_ACK:
		for (size_t i = 0; i < r->n_kept; i++)
			if (r->kept[i].trial_id == m->u.ack.trial_id &&
			    r->kept[i].attempt == m->u.ack.attempt) {
				cfl_buf_release(&r->kept[i].frame);
				r->kept[i] = r->kept[--r->n_kept];
				break;
			}
		break;
	case CFL_WIRE_SHUTDOWN:
		r->shutdown = 1;
		break;
	case CFL_WIRE_ERROR:
		if (r->link.ops->connect)
			say(r, 1, "the coordinator refused: %s", m->u.error.message);
		else
			fail(r, "the coordinator refused this worker: %s",
			     m->u.error.message);
		disconnect(r, "refused");
		break;
	case CFL_WIRE_CANCEL:
		cancel_lease(r, m->u.cancel.trial_id, m->u.cancel.attempt);
		break;
	case CFL_WIRE_HEARTBEAT:
		break;
	default:
		disconnect(r, "unexpected frame");
		break;
	}
	cfl_wire_msg_release(m);
}

/* Handles every message that has arrived. */
static void drain(struct cfl_relay *r)
{
	struct cfl_wire_msg m;
	struct cfl_err err;
	int k;

	while (r->connected && !r->shutdown && !r->fatal && !r->lost &&
	       (k = r->link.ops->recv(r->link.ctx, &m, 0, &err)) != 0) {
		if (k < 0) {
			disconnect(r, err.msg);
			break;
		}
		r->last_recv = cfl_now();
		handle_msg(r, &m);
	}
	if ((r->shutdown || r->fatal || r->lost) && r->pool)
		cfl_pool_interrupt(r->pool);
}

/* The pool calls this when the link's descriptor is readable. */
static int on_link_ready(struct cfl_pool *p, void *ctx, struct cfl_err *err)
{
	(void)p;
	(void)err;
	drain(ctx);
	return 0;
}

/* A finished local trial: a RESULT for the coordinator, kept until acked. */
static void on_event(struct cfl_relay *r, const struct cfl_pool_event *ev)
{
	struct running run = { 0, 0, 0 };
	struct cfl_wire_msg m;
	struct cfl_err err;

	for (size_t i = 0; i < r->n_run; i++)
		if (r->run_map[i].local_id == ev->trial_id) {
			run = r->run_map[i];
			r->run_map[i] = r->run_map[--r->n_run];
			break;
		}
	if (!run.local_id)
		return;	/* cancelled */
	r->n_done++;
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	if (ev->status == CFL_TRIAL_DONE && ev->result) {
		struct kept *k = cfl_realloc(r->kept, (r->n_kept + 1) * sizeof(*k),
					     &err);

		if (!k) {
			fail(r, "%s", err.msg);
			return;
		}
		r->kept = k;
		m.u.result = *ev->result;	/* borrowed: not released */
		m.u.result.trial_id = run.trial_id;
		m.u.result.attempt = run.attempt;
		k = &r->kept[r->n_kept];
		k->trial_id = run.trial_id;
		k->attempt = run.attempt;
		cfl_buf_init(&k->frame);
		if (cfl_wire_encode(&k->frame, 0, 0, &m, &err)) {
			fail(r, "%s", err.msg);
			return;
		}
		r->n_kept++;
		send_msg(r, &m);
		return;
	}
	/* a model error or a crashed local process: reported once (a lost
	 * report only means the coordinator retries the trial).  The local
	 * pool makes a crash POISON (no local retries), a model error FAILED:
	 * the coordinator retries the first and counts it toward poison, as
	 * for its own workers, and not the second */
	m.u.result.trial_id = run.trial_id;
	m.u.result.attempt = run.attempt;
	m.u.result.status = ev->status == CFL_TRIAL_POISON ? CFL_RESULT_CRASHED
							   : CFL_RESULT_MODEL_ERROR;
	m.u.result.error = (char *)(ev->reason ? ev->reason : "failed on the worker");
	send_msg(r, &m);
}

/* ---- the dataset ---- */

/* Waits for the next message during set-up (the dataset coming): a LEASE
 * waits for the pool (a command lease is refused at once), HEARTBEATs are
 * dropped, an ERROR ends the wait.  Returns 1 with m the message of type
 * want, 0 when the wait failed (err; worth another connection, or r->fatal
 * set). */
static int await(struct cfl_relay *r, enum cfl_wire_type want,
		 struct cfl_wire_msg *m, struct cfl_err *err)
{
	for (;;) {
		int k = r->link.ops->recv(r->link.ctx, m, r->dead_after, err);

		if (k == 0)
			cfl_err_set(err, "nothing from the coordinator for %g s",
				    r->dead_after);
		if (k <= 0)
			return 0;
		r->last_recv = cfl_now();
		if (m->type == want)
			return 1;
		if (m->type == CFL_WIRE_LEASE) {
			if (refuse_command(r, &m->u.lease) || keep_early(r, m)) {
				cfl_wire_msg_release(m);
				cfl_err_set(err, "%s", r->why.msg);
				return 0;
			}
			continue;
		}
		if (m->type == CFL_WIRE_SHUTDOWN) {
			r->shutdown = 1;
			cfl_wire_msg_release(m);
			cfl_err_set(err, "the run is over");
			return 0;
		}
		if (m->type == CFL_WIRE_ERROR) {
			cfl_err_set(err, "the coordinator: %s", m->u.error.message);
			cfl_wire_msg_release(m);
			return 0;
		}
		cfl_wire_msg_release(m);	/* heartbeats */
	}
}

/* Finds the dataset in the cache, unchecked (*verified = 0), or fetches
 * it into the cache, hashed on the way in, with its bytes also in *bytes
 * (*verified = 1).  Returns the path (malloc'd) or NULL with err. */
static char *fetch_data(struct cfl_relay *r, struct cfl_cache *cache,
			uint64_t size, struct cfl_buf *bytes,
			int *verified /* OUT */, struct cfl_err *err)
{
	struct cfl_fetch f;
	char *path = NULL;
	int k;

	*verified = 0;
	k = cfl_fetch_begin(&f, cache, r->data_sha, size, bytes, &path, err);
	if (k)
		return k > 0 ? path : NULL;
	*verified = 1;
	for (;;) {
		struct cfl_wire_msg m;

		while (cfl_fetch_request(&f, &m))
			if (r->link.ops->send(r->link.ctx, &m, r->dead_after, err))
				goto fail;
		r->last_send = cfl_now();
		if (!await(r, CFL_WIRE_CHUNK, &m, err))
			goto fail;
		k = cfl_fetch_chunk(&f, &m.u.chunk, &path, err);
		cfl_wire_msg_release(&m);
		if (k < 0)
			return NULL;
		if (k > 0)
			return path;
	}
fail:
	cfl_fetch_abort(&f);
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
	int k = 0;

	memset(d, 0, sizeof(*d));
	cfl_buf_init(&b);
	if (cfl_buf_read_file(&b, path, err))
		return -1;
	if (cfl_sha256(b.data, b.len, sha, err)) {
		cfl_buf_release(&b);
		return -1;
	}
	if (!memcmp(sha, want, 32))
		k = cfl_data_unpack_parts(d, b.data, b.len, err);
	cfl_buf_release(&b);
	return k;
}

/* Finds the dataset in the cache or fetches it, and loads it into r->own.
 * Fetched bytes were checked on the way in and are loaded from memory.  A
 * cached entry is not hashed before the load: the load hashes every byte
 * it reads, so comparing that hash with the announced one checks the entry
 * in the same pass.  When the check or the load fails on an entry
 * found in the cache, the cache checks the entry itself (removing it when
 * it is damaged) and the dataset is fetched or loaded again; a few rounds,
 * in case another worker on this host is replacing the entry meanwhile.
 * Returns 0; -1 with err when the coordinator or the cache failed (worth a
 * new connection); -2 when trying again cannot help (r->fatal set). */
static int load_data(struct cfl_relay *r, uint64_t size, struct cfl_err *err)
{
	struct cfl_cache cache;
	struct cfl_buf bytes;
	uint64_t max = r->o.max_data_size ? r->o.max_data_size : CFL_RELAY_MAX_DATA;
	int rc = -2;

	if (size > max) {
		fail(r, "the coordinator announces a dataset of %llu bytes, more "
		     "than this worker accepts (%llu: --max-dataset-size)",
		     (unsigned long long)size, (unsigned long long)max);
		return -2;
	}
	if (cfl_cache_init(&cache, r->o.cache_dir, err))
		return -1;
	cfl_buf_init(&bytes);
	for (int round = 1;; round++) {
		struct cfl_err lerr;
		char *path, *checked = NULL;
		unsigned char got[32];
		int verified, k, intact;

		path = fetch_data(r, &cache, size, &bytes, &verified, err);
		if (!path) {
			rc = r->fatal || r->shutdown ? -2 : -1;
			break;
		}
		if (verified)	/* its hash was checked on the way in */
			k = cfl_data_unpack_parts(&r->own, bytes.data, bytes.len,
						  &lerr);
		else
			k = load_parts(&r->own, path, got, r->data_sha, &lerr);
		if (!k && (verified || !memcmp(got, r->data_sha, 32))) {
			free(path);
			rc = 0;
			break;
		}
		if (!k)
			cfl_data_release(&r->own);
		if (!verified && round < 3) {
			intact = cfl_cache_get(&cache, r->data_sha, size, &checked, err);
			free(checked);
			if (intact < 0) {
				free(path);
				rc = -1;
				break;
			}
			if (!intact)
				say(r, 0, "cached dataset '%s' was damaged (removed); "
				    "fetching it again", path);
			/* intact but read with another hash: replaced while
			 * we read it, so read it again; intact and failing to
			 * load: the file's own error, reported below */
			if (!intact || !k) {
				free(path);
				continue;
			}
		}
		if (k)
			fail(r, "cannot load the dataset: %s", lerr.msg);
		else
			fail(r, "the cached dataset '%s' changed while loading", path);
		free(path);
		break;
	}
	cfl_buf_release(&bytes);
	cfl_cache_release(&cache);
	return rc;
}

/* ---- sessions ---- */

/* The run is set up: starts the local pool with WELCOME's options and
 * submits the leases that came first.  Returns 0, or -1 (r->fatal). */
static int start_pool(struct cfl_relay *r)
{
	const struct cfl_data *data = r->o.data ? r->o.data : &r->own;
	struct cfl_pool_opts po;
	struct cfl_err err;

	cfl_pool_opts_init(&po);
	po.data = data;
	po.n_local = r->o.n_slots;
	po.threads_per_trial = r->cfg.threads;
	po.max_retries = 0;	/* the coordinator decides on retries */
	po.allow_commands = r->o.allow_commands;
	po.keep_models = 1;	/* its own children; the coordinator asks */
	/* a hung trial is failed and CANCELled by the coordinator at its
	 * --trial-timeout, which kills its child here at once; this later
	 * timeout is the safety net for a CANCEL that never came (the
	 * connection was lost meanwhile) */
	if (r->cfg.trial_timeout > 0)
		po.trial_timeout = r->cfg.trial_timeout * 1.1 + 2 * r->heartbeat;
	po.commit_interval = 0;
	po.tick = 0.2;		/* heartbeats and silence between events */
	po.n_metrics = r->cfg.n_metrics;
	memcpy(po.metrics, r->cfg.metrics, sizeof(po.metrics));
	po.on_progress = on_progress;
	po.progress_ctx = r;
	r->pool = cfl_pool_new(&po, &err);
	if (!r->pool) {
		fail(r, "%s", err.msg);
		return -1;
	}
	/* after the fork of the first children (the link's own descriptor
	 * is closed in them by atfork_child); later ones close the pool's
	 * sources themselves */
	r->src_fd = dup(r->link_fd);
	if (r->src_fd < 0) {
		fail(r, "dup: %s", strerror(errno));
		return -1;
	}
	if (cfl_pool_add_source(r->pool, r->src_fd, on_link_ready, r, &err)) {
		fail(r, "%s", err.msg);
		return -1;
	}
	for (size_t i = 0; i < r->n_early && !r->fatal; i++)
		submit_lease(r, &r->early[i].u.lease);
	drop_early(r);
	return r->fatal ? -1 : 0;
}

/* Reads WELCOME: the first time it sets up the run, later it must name the
 * same run.  Returns 0 with *size the dataset's; 1 when the relay ends
 * (r->shutdown or r->fatal); -1 with err (worth another connection). */
static int welcome(struct cfl_relay *r, uint64_t *size, struct cfl_err *err)
{
	struct cfl_run_config cfg;
	struct cfl_wire_msg m;
	int k = r->link.ops->recv(r->link.ctx, &m, CFL_RELAY_WELCOME_WAIT, err);

	if (k == 0)
		cfl_err_set(err, "no WELCOME within %d s", CFL_RELAY_WELCOME_WAIT);
	if (k <= 0)
		return -1;
	r->last_recv = cfl_now();
	if (m.type == CFL_WIRE_ERROR) {
		/* a duplicate name may be our own previous connection, not yet
		 * timed out: retry; anything else will not change */
		if (r->link.ops->connect && m.u.error.code == CFL_WIRE_E_PROTOCOL &&
		    strstr(m.u.error.message, "already connected")) {
			say(r, 1, "the coordinator refused: %s", m.u.error.message);
			cfl_err_set(err, "refused");
			cfl_wire_msg_release(&m);
			return -1;
		}
		fail(r, "the coordinator refused: %s", m.u.error.message);
		cfl_wire_msg_release(&m);
		return 1;
	}
	if (m.type == CFL_WIRE_SHUTDOWN) {
		r->shutdown = 1;	/* the run ended before we joined */
		cfl_wire_msg_release(&m);
		return 1;
	}
	if (m.type != CFL_WIRE_WELCOME) {
		cfl_err_set(err, "expected WELCOME, got %s", cfl_wire_type_name(m.type));
		cfl_wire_msg_release(&m);
		return -1;
	}
	if (cfl_run_config_parse(&cfg, m.u.welcome.config, err)) {
		cfl_run_config_release(&cfg);
		fail(r, "bad config from the coordinator: %s", err->msg);
		cfl_wire_msg_release(&m);
		return 1;
	}
	if (r->have_data && (memcmp(r->data_sha, m.u.welcome.data_sha256, 32) ||
			     strcmp(r->run, cfg.run))) {
		/* another run behind the same address: our results and loaded
		 * data belong to the old one */
		struct cfl_wire_msg e;

		say(r, 1, "the coordinator now serves another run (%s, not %s); "
		    "this worker's run is over", cfg.run, r->run);
		cfl_wire_msg_init(&e, CFL_WIRE_ERROR);
		e.u.error.code = CFL_WIRE_E_PROTOCOL;
		e.u.error.message = "this worker served another run; start a new "
				    "worker for this one";
		r->link.ops->send(r->link.ctx, &e, 2, err);
		cfl_run_config_release(&cfg);
		cfl_wire_msg_release(&m);
		r->shutdown = 1;
		return 1;
	}
	if (r->o.data && (memcmp(m.u.welcome.data_sha256, r->o.data->sha256, 32) ||
			  m.u.welcome.data_size != r->o.data_size)) {
		fail(r, "the coordinator serves another dataset than the one here "
		     "(the file changed?)");
		cfl_run_config_release(&cfg);
		cfl_wire_msg_release(&m);
		return 1;
	}
	if (!r->have_data) {
		cfl_run_config_release(&r->cfg);	/* an earlier try's */
		r->cfg = cfg;
		snprintf(r->run, sizeof(r->run), "%s", cfg.run);
		memcpy(r->data_sha, m.u.welcome.data_sha256, 32);
	} else {
		cfl_run_config_release(&cfg);
	}
	r->heartbeat = m.u.welcome.heartbeat_ms ? m.u.welcome.heartbeat_ms / 1000.0 : 1;
	r->dead_after = 5 * r->heartbeat;
	if (r->dead_after < 2)
		r->dead_after = 2;
	*size = m.u.welcome.data_size;
	cfl_wire_msg_release(&m);
	return 0;
}

/* Says HELLO on a connected link, reads WELCOME and, the first time, gets
 * the dataset and starts the local pool; then sends the kept results
 * again.  Returns 0 (connected), or -1 (not connected; r->fatal or
 * r->shutdown set when the relay ends, else err says why). */
static int session(struct cfl_relay *r, struct cfl_err *err)
{
	struct cfl_wire_msg m;
	uint64_t size;
	int k;

	r->connected = 1;
	r->link_fd = r->link.ops->fd(r->link.ctx);
	r->last_recv = r->last_send = cfl_now();
	r->dead_after = 10;
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION;
	m.u.hello.n_slots = (uint32_t)r->o.n_slots;
	m.u.hello.name = (char *)r->o.name;
	if (r->link.ops->send(r->link.ctx, &m, 10, err))
		goto lost;
	k = welcome(r, &size, err);
	if (k)
		goto lost;
	r->last_contact = cfl_now();
	if (!r->have_data) {
		if (!r->o.data) {
			char hex[65];

			k = load_data(r, size, err);
			if (k)
				goto lost;
			cfl_sha256_hex(r->data_sha, hex);
			say(r, 0, "dataset %.12s... (%llu bytes) ready; %zu local "
			    "workers", hex, (unsigned long long)size, r->o.n_slots);
		} else {
			say(r, 0, "%zu local workers", r->o.n_slots);
		}
		r->have_data = 1;
		if (start_pool(r))
			goto lost;
	} else if (dup2(r->link_fd, r->src_fd) < 0) {
		/* the pool polls the same number as before */
		cfl_err_set(err, "dup2: %s", strerror(errno));
		goto lost;
	}
	if (r->link.ops->connect)
		say(r, 0, "connected to %s as '%s'%s", r->o.peer ? r->o.peer : "the coordinator",
		    r->o.name, r->n_kept ? "; sending kept results" : "");
	/* results the coordinator has not acknowledged: again (a copy of a
	 * result it has is acknowledged as a duplicate) */
	for (size_t i = 0; i < r->n_kept && r->connected; i++)
		send_kept(r, &r->kept[i]);
	drain(r);
	return r->connected ? 0 : -1;
lost:
	tell_fatal(r);
	link_down(r);
	/* leases that came during a failed fetch were requeued by the
	 * coordinator when the connection went */
	if (!r->have_data)
		drop_early(r);
	if (!r->fatal && !r->shutdown && !r->link.ops->connect)
		lose(r, err->msg);
	return -1;
}

/* Connects (again) when it is time, backing off after each failure; sets
 * r->fatal when the coordinator stayed unreachable for retry_for seconds or
 * trying again cannot help. */
static void try_connect(struct cfl_relay *r)
{
	struct cfl_err err;
	int fatal = 0;
	double now = cfl_now();

	if (now - r->last_contact > r->o.retry_for) {
		fail(r, "gave up: no coordinator at %s for %g s",
		     r->o.peer ? r->o.peer : "its address", r->o.retry_for);
		return;
	}
	if (now < r->next_try)
		return;
	if (r->link.ops->connect(r->link.ctx, &fatal, &err)) {
		if (fatal)
			fail(r, "%s", err.msg);
		else if (r->backoff >= 1.6)
			say(r, 0, "%s", err.msg);
	} else if (session(r, &err) == 0) {
		r->backoff = 0.2;
		return;
	} else if (!r->fatal && !r->shutdown) {
		say(r, 0, "%s", err.msg);
	}
	r->backoff = r->backoff * 2 > 5 ? 5 : r->backoff * 2;
	r->next_try = cfl_now() + r->backoff;
}

/* Heartbeats out, silence in: a link that can reconnect is dropped when
 * the coordinator says nothing for dead_after seconds; one that cannot
 * waits for its EOF (an MPI rank 0 busy between pool runs is no loss). */
static void keep_alive(struct cfl_relay *r)
{
	double now = cfl_now();

	if (!r->connected)
		return;
	if (r->link.ops->connect && now - r->last_recv > r->dead_after) {
		char why[96];

		snprintf(why, sizeof(why), "no frame for %.1f s", now - r->last_recv);
		disconnect(r, why);
		return;
	}
	if (now - r->last_send >= r->heartbeat) {
		struct cfl_pool_stats st;
		struct cfl_wire_msg m;

		cfl_pool_get_stats(r->pool, &st);
		cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
		m.u.heartbeat.time_ms = (uint64_t)(now * 1000);
		m.u.heartbeat.n_running = (uint32_t)st.running;
		send_msg(r, &m);
	}
	r->last_contact = now;
}

int cfl_relay_serve(struct cfl_relay *r, struct cfl_relay_link link,
		    struct cfl_err *err)
{
	int rc = -1;

	r->link = link;
	g_relay = r;
	pthread_once(&g_atfork_once, register_atfork);
	r->last_contact = cfl_now();
	if (!link.ops->connect) {
		struct cfl_err e;

		session(r, &e);	/* fails r when it fails */
	}
	while (!r->shutdown && !r->fatal && !r->lost && !r->stop) {
		struct cfl_pool_event ev;
		struct cfl_err e;
		int k;

		if (!r->connected && link.ops->connect) {
			try_connect(r);
			if (!r->connected && !r->pool) {
				/* never connected yet: nothing to run */
				if (!r->fatal && !r->shutdown && !r->stop)
					usleep(50000);
				continue;
			}
		}
		if (!r->pool)
			break;
		k = cfl_pool_wait(r->pool, &ev, &e);
		if (k < 0) {
			fail(r, "%s", e.msg);
			break;
		}
		if (k == CFL_POOL_INTERRUPTED)
			break;
		if (k == CFL_POOL_EVENT)
			on_event(r, &ev);
		if (k == CFL_POOL_IDLE) {
			/* nothing to run: wait for the coordinator */
			struct pollfd p = { r->connected ? r->link_fd : r->idle[0],
					    POLLIN, 0 };

			if (poll(&p, 1, 200) > 0 && r->connected)
				drain(r);
		}
		keep_alive(r);
	}
	if (r->shutdown) {
		say(r, 0, "the run is over (%zu trials here)", r->n_done);
		rc = CFL_RELAY_OVER;
	} else if (r->fatal) {
		cfl_err_set(err, "%s", r->why.msg);
	} else if (r->stop) {
		rc = CFL_RELAY_INTERRUPTED;
	} else {
		rc = CFL_RELAY_LOST;
		cfl_err_set(err, "%s", r->lost ? r->why.msg : "lost the coordinator");
	}
	tell_fatal(r);
	/* children still running a trial are killed: the run is over or we
	 * are leaving, and the coordinator requeues what we held */
	cfl_pool_close(r->pool, NULL);
	r->pool = NULL;
	if (r->connected)
		link_down(r);
	g_relay = NULL;
	return rc;
}

void cfl_relay_free(struct cfl_relay *r)
{
	if (!r)
		return;
	if (g_relay == r)
		g_relay = NULL;
	cfl_pool_close(r->pool, NULL);
	if (r->connected)
		r->link.ops->close(r->link.ctx);
	if (r->src_fd >= 0)
		close(r->src_fd);
	close(r->idle[0]);
	close(r->idle[1]);
	for (size_t i = 0; i < r->n_kept; i++)
		cfl_buf_release(&r->kept[i].frame);
	free(r->kept);
	drop_early(r);
	free(r->early);
	free(r->run_map);
	if (r->have_data && !r->o.data)
		cfl_data_release(&r->own);
	cfl_run_config_release(&r->cfg);
	free(r);
}
