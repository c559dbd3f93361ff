/*
 * The pool: the coordinator's poll loop over peers (forked children, TCP
 * connections, ...).  It hands queued trials to free slots as LEASE frames,
 * reads RESULT frames, turns a dead peer or an expired lease into a failed
 * attempt, writes every state change to the store (commits grouped for at
 * most commit_interval / commit_max) and gives the caller one finished
 * trial at a time.  Besides keeping its forked children (fork.c) alive it
 * knows no transport: each peer's ops do the rest.
 * Invariant: a slot holds a lease exactly while the scheduler thinks the
 * attempt runs; every event given out is in the store's open or committed
 * transaction.
 */
#include "internal.h"
#include "cfl/model.h"
#include "cfl/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct slot {
	long idx;		/* scheduler index, -1 when free */
	int attempt;
	double deadline;	/* 0: none */
	int cancelled;		/* timed out, CANCEL sent (kept peers) */
};

struct peer {
	struct cfl_peer pub;	/* first: transports see this part */
	struct cfl_buf in, out;
	struct slot *slots;
	size_t n_busy;
	uint64_t seq;
	size_t n_leased;
	double last_heard, last_sent_hb;
	size_t n_results;	/* results accepted from it (any status) */
	int dead;
	int hello;
	size_t held;		/* bytes of its large frame in p->held */
	double held_at;		/* cfl_now() when they were reserved */
	char why[256];		/* a protocol error that made us drop it */
};

struct source {
	int fd;
	int (*on_ready)(struct cfl_pool *p, void *ctx, struct cfl_err *err);
	void *ctx;
};

struct event {
	struct cfl_pool_event ev;
	struct cfl_wire_msg msg;	/* owns the result of a DONE event */
	char worker[64];
	char reason[256];
};

struct cfl_pool {
	struct cfl_pool_opts o;
	struct sched s;
	struct peer **peers;
	size_t n_peers, cap_peers;
	struct source *sources;
	size_t n_sources;
	int wake[2];			/* self-pipe: interrupt -> poll */
	volatile sig_atomic_t interrupted;
	int over;		/* interrupted because the run is over */
	int stopped;
	/* finished trials not yet given out; ev_cur is the one last given */
	struct event *evq;
	size_t ev_head, ev_len, ev_cap;
	struct event ev_cur;
	int has_cur;
	/* grouped store commits */
	int in_batch;
	double batch_start;
	size_t batch_n;
	double last_tick;
	size_t n_local_alive;
	void (*log)(void *ctx, const char *msg);	/* may be NULL */
	void *log_ctx;
	uint32_t result_max;	/* the largest RESULT this run's data allows */
	struct result_check check;	/* what a RESULT must be to be stored */
	/* Leases a remote peer may hold before its first result (doubled by
	 * each result it gives): halved each time one vanishes holding leases
	 * without giving a result, doubled again by each peer's first result.
	 * Connections that take leases and vanish burn no attempt
	 * (SCHED_LOST) but would delay the run; this bounds what each new
	 * one takes. */
	size_t probation;
	uint64_t model_max;	/* keep_models: the largest model text (with
				 * its header) of a trial submitted so far */
	size_t held;		/* bytes reserved for large frames in flight */
	int released;		/* some were released: paused peers go on */
};

#define PROBATION_MAX 4096

/* ---- pool: options ---- */

void cfl_pool_opts_init(struct cfl_pool_opts *o)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	memset(o, 0, sizeof(*o));
	o->n_local = n > 0 ? (size_t)n : 1;
	o->threads_per_trial = 1;
	o->max_retries = 1;
	o->trials_per_worker = 0;
	o->commit_interval = 0.02;
	o->commit_max = 256;
}

const struct cfl_pool_opts *cfl_pool_opts(const struct cfl_pool *p)
{
	return &p->o;
}

void cfl_pool_set_log(struct cfl_pool *p, void (*log)(void *ctx, const char *msg),
		      void *ctx)
{
	p->log = log;
	p->log_ctx = ctx;
}

static void plog(struct cfl_pool *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void plog(struct cfl_pool *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!p->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->log(p->log_ctx, msg);
}

size_t cfl_pool_n_queued(const struct cfl_pool *p)
{
	return p->s.q_len;
}

void cfl_pool_each_fd(struct cfl_pool *p, void (*fn)(int fd, void *ctx), void *ctx)
{
	for (size_t i = 0; i < p->n_peers; i++)
		if (p->peers[i]->pub.fd >= 0)
			fn(p->peers[i]->pub.fd, ctx);
	for (size_t i = 0; i < p->n_sources; i++)
		fn(p->sources[i].fd, ctx);
	fn(p->wake[0], ctx);
	fn(p->wake[1], ctx);
}

/* ---- pool: store writes, grouped into transactions ---- */

static int batch_open(struct cfl_pool *p, struct cfl_err *err)
{
	if (!p->o.store || p->in_batch)
		return 0;
	if (cfl_store_begin(p->o.store, err))
		return -1;
	p->in_batch = 1;
	p->batch_start = cfl_now();
	p->batch_n = 0;
	return 0;
}

int cfl_pool_flush(struct cfl_pool *p, struct cfl_err *err)
{
	if (!p->in_batch)
		return 0;
	p->in_batch = 0;
	return cfl_store_commit(p->o.store, err);
}

/* Commits when the group is old or large enough (or grouping is off). */
static int batch_maybe_commit(struct cfl_pool *p, struct cfl_err *err)
{
	if (!p->in_batch)
		return 0;
	if (p->o.commit_interval <= 0 || p->batch_n >= p->o.commit_max ||
	    cfl_now() - p->batch_start >= p->o.commit_interval)
		return cfl_pool_flush(p, err);
	return 0;
}

static int store_leased(struct cfl_pool *p, const struct sched_trial *t,
			const char *worker, struct cfl_err *err)
{
	if (!p->o.store)
		return 0;
	if (batch_open(p, err))
		return -1;
	return cfl_store_trial_leased(p->o.store, t->id, t->attempt, worker,
				      err) < 0 ? -1 : 0;
}

/* A result's importance by input column, named by the coordinator's
 * encoder (a result whose column count is not the encoder's is ignored: it
 * cannot be named).  Inside the result's transaction. */
static int store_importance(struct cfl_pool *p, int64_t trial_id,
			    const struct cfl_wire_result *r, struct cfl_err *err)
{
	const struct cfl_encoder *enc = p->o.data ? &p->o.data->enc : NULL;
	const char **names;
	int rc = 0;

	if (!enc || !r->n_columns || r->n_columns != enc->n_in)
		return 0;
	names = cfl_calloc(r->n_columns, sizeof(*names), err);
	if (!names)
		return -1;
	for (uint32_t i = 0; i < r->n_columns; i++)
		names[i] = cfl_encoder_column_name(enc, i);
	if (r->impurity)
		rc = cfl_store_trial_importance(p->o.store, trial_id, "impurity",
						r->n_columns, names, r->impurity, err);
	if (!rc && r->permutation)
		rc = cfl_store_trial_importance(p->o.store, trial_id, "permutation",
						r->n_columns, names, r->permutation, err);
	free(names);
	return rc;
}

/* Returns 0 (stored), 1 (a duplicate), -1 (err). */
static int store_done(struct cfl_pool *p, const struct sched_trial *t,
		      const struct cfl_wire_result *r, struct cfl_err *err)
{
	struct cfl_trial_result tr;
	struct cfl_metric_value mv[CFL_WIRE_N_SPLITS][CFL_WIRE_MAX_METRICS];
	int rc;

	if (!p->o.store)
		return 0;
	memset(&tr, 0, sizeof(tr));
	tr.duration = r->duration;
	tr.peak_rss_kb = (long)r->peak_rss_kb;
	for (int s = 0; s < CFL_WIRE_N_SPLITS && s < CFL_SPLIT_COUNT; s++) {
		const struct cfl_wire_split *ws = &r->split[s];

		for (uint32_t i = 0; i < ws->n_metrics; i++) {
			mv[s][i].name = ws->metrics[i].name;
			mv[s][i].value = ws->metrics[i].value;
		}
		tr.split[s].n_metrics = ws->n_metrics;
		tr.split[s].metrics = mv[s];
		tr.split[s].n = ws->n;
		tr.split[s].n_out = ws->n_out;
		tr.split[s].pred = ws->pred;
		tr.split[s].rows = ws->rows;
	}
	tr.model = r->model;
	if (batch_open(p, err))
		return -1;
	rc = cfl_store_trial_done(p->o.store, t->id, (int)r->attempt, &tr, err);
	if (rc == 0 && (store_importance(p, t->id, r, err) ||
			(r->n_iter_kept &&
			 cfl_store_trial_iters(p->o.store, t->id, (long)r->n_iter_kept, err))))
		return -1;
	if (rc >= 0)
		p->batch_n++;
	return rc;
}

static int store_failed(struct cfl_pool *p, const struct sched_trial *t,
			int attempt, const char *reason,
			enum cfl_trial_status st, struct cfl_err *err)
{
	if (!p->o.store)
		return 0;
	if (batch_open(p, err))
		return -1;
	p->batch_n++;
	return cfl_store_trial_failed(p->o.store, t->id, attempt, reason, st,
				      err) < 0 ? -1 : 0;
}

/* ---- pool: events ---- */

static struct event *event_push(struct cfl_pool *p, struct cfl_err *err)
{
	struct event *e;

	if (p->ev_len == p->ev_cap) {
		size_t cap = p->ev_cap ? p->ev_cap * 2 : 16;
		struct event *q = cfl_calloc(cap, sizeof(*q), err);

		if (!q)
			return NULL;
		for (size_t i = 0; i < p->ev_len; i++)
			q[i] = p->evq[(p->ev_head + i) % p->ev_cap];
		free(p->evq);
		p->evq = q;
		p->ev_cap = cap;
		p->ev_head = 0;
	}
	e = &p->evq[(p->ev_head + p->ev_len) % p->ev_cap];
	memset(e, 0, sizeof(*e));
	p->ev_len++;
	return e;
}

static void release_cur(struct cfl_pool *p)
{
	if (p->has_cur) {
		cfl_wire_msg_release(&p->ev_cur.msg);
		p->has_cur = 0;
	}
}

static void drop_events(struct cfl_pool *p)
{
	release_cur(p);
	while (p->ev_len) {
		cfl_wire_msg_release(&p->evq[p->ev_head].msg);
		p->ev_head = (p->ev_head + 1) % p->ev_cap;
		p->ev_len--;
	}
}

/* ---- pool: peers ---- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int peer_set_slots(struct peer *pe, size_t n, struct cfl_err *err)
{
	struct slot *s;

	if (n > 4096)
		return cfl_err_set(err, "peer '%s' asks for %zu slots", pe->pub.name, n);
	s = cfl_realloc(pe->slots, (n ? n : 1) * sizeof(*s), err);
	if (!s)
		return -1;
	for (size_t i = pe->pub.n_slots; i < n; i++)
		s[i] = (struct slot){ -1, 0, 0, 0 };
	pe->slots = s;
	pe->pub.n_slots = n;
	return 0;
}

struct cfl_peer *cfl_pool_add_peer(struct cfl_pool *p, int fd,
				   const struct cfl_peer_ops *ops, void *impl,
				   size_t n_slots, const char *name,
				   struct cfl_err *err)
{
	struct peer *pe;

	if (set_nonblock(fd)) {
		cfl_err_set(err, "cannot set peer '%s' non-blocking: %s", name,
			    strerror(errno));
		return NULL;
	}
	if (p->n_peers == p->cap_peers) {
		size_t cap = p->cap_peers ? p->cap_peers * 2 : 8;
		struct peer **np = cfl_realloc(p->peers, cap * sizeof(*np), err);

		if (!np)
			return NULL;
		p->peers = np;
		p->cap_peers = cap;
	}
	pe = cfl_calloc(1, sizeof(*pe), err);
	if (!pe)
		return NULL;
	pe->pub.ops = ops;
	pe->pub.impl = impl;
	pe->pub.fd = fd;
	pe->pub.pool = p;
	pe->last_heard = pe->last_sent_hb = cfl_now();
	snprintf(pe->pub.name, sizeof(pe->pub.name), "%s", name);
	cfl_buf_init(&pe->in);
	cfl_buf_init(&pe->out);
	if (peer_set_slots(pe, n_slots, err)) {
		free(pe);
		return NULL;
	}
	p->peers[p->n_peers++] = pe;
	return &pe->pub;
}

int cfl_peer_send(struct cfl_peer *peer, const struct cfl_wire_msg *m,
		  struct cfl_err *err)
{
	struct peer *pe = (struct peer *)peer;
	size_t off = pe->out.len;

	if (pe->dead)
		return 0;
	if (cfl_wire_encode(&pe->out, pe->seq++, peer->send_flags, m, err))
		return -1;
	if (peer->ops->on_send && peer->ops->on_send(peer, &pe->out, off, err)) {
		pe->out.len = off;
		return -1;
	}
	return 0;
}

int cfl_pool_add_source(struct cfl_pool *p, int fd,
			int (*on_ready)(struct cfl_pool *, void *, struct cfl_err *),
			void *ctx, struct cfl_err *err)
{
	struct source *s = cfl_realloc(p->sources,
				       (p->n_sources + 1) * sizeof(*s), err);

	if (!s)
		return -1;
	p->sources = s;
	s[p->n_sources++] = (struct source){ fd, on_ready, ctx };
	return 0;
}

/* Attempt `attempt` of trial idx, run by pe, failed (how: enum
 * sched_fail): record it, then requeue the trial or finish it (failed,
 * poison) with an event.  A stale failure (the trial moved on) is ignored. */
static int attempt_failed(struct cfl_pool *p, struct peer *pe, long idx,
			  int attempt, int how, const char *reason,
			  struct cfl_err *err)
{
	int st = cfl_sched_failed(&p->s, idx, attempt, how, reason);

	if (st < 0)
		return 0;
	if (store_failed(p, &p->s.t[idx], attempt, reason, st, err))
		return -1;
	if (st == CFL_TRIAL_FAILED || st == CFL_TRIAL_POISON ||
	    st == CFL_TRIAL_CANCELLED || st == CFL_TRIAL_PRUNED) {
		struct event *e = event_push(p, err);

		if (!e)
			return -1;
		e->ev.trial_id = p->s.t[idx].id;
		e->ev.user = p->s.t[idx].user;
		e->ev.status = st;
		e->ev.attempt = attempt;
		snprintf(e->worker, sizeof(e->worker), "%s", pe->pub.name);
		snprintf(e->reason, sizeof(e->reason), "%s", reason);
	}
	return 0;
}

/* A lease of (pe, slot k) failed: free the slot, then as attempt_failed. */
static int lease_failed(struct cfl_pool *p, struct peer *pe, size_t k,
			int how, const char *reason, struct cfl_err *err)
{
	struct slot *sl = &pe->slots[k];
	long idx = sl->idx;
	int attempt = sl->attempt;

	sl->idx = -1;
	pe->n_busy--;
	return attempt_failed(p, pe, idx, attempt, how, reason, err);
}

/* Ends the lease of (pe, slot k) before its result comes: a peer that runs
 * one trial per process (kill_on_timeout) is killed, and buried by the loop
 * (a local replacement is forked when work is queued), unless the trial is
 * pruned and the peer stops it at its next report (prunes_in_place: the
 * trial reports, so it will); any other is sent CANCEL and kept.  Then as
 * lease_failed (a result of the stopped lease is dropped when it comes). */
static int lease_stop(struct cfl_pool *p, struct peer *pe, size_t k, int how,
		      const char *reason, struct cfl_err *err)
{
	if (pe->pub.ops->kill_on_timeout &&
	    !(how == SCHED_PRUNED && pe->pub.ops->prunes_in_place)) {
		if (pe->pub.ops->kill)
			pe->pub.ops->kill(&pe->pub);
		pe->dead = 1;	/* no new lease, nothing more read from it */
	} else {
		struct cfl_wire_msg m;

		cfl_wire_msg_init(&m, CFL_WIRE_CANCEL);
		m.u.cancel.trial_id = p->s.t[pe->slots[k].idx].id;
		m.u.cancel.attempt = (uint32_t)pe->slots[k].attempt;
		if (cfl_peer_send(&pe->pub, &m, err))
			return -1;
	}
	return lease_failed(p, pe, k, how, reason, err);
}

/* Closes pe's descriptor and frees it (already out of p->peers). */
static void peer_free(struct peer *pe)
{
	if (pe->pub.fd >= 0)
		close(pe->pub.fd);
	cfl_buf_release(&pe->in);
	cfl_buf_release(&pe->out);
	free(pe->slots);
	free(pe);
}

/* ---- pool: the bytes held for peers' frames ---- */

/*
 * A peer's buffer holds one partial frame and one read (64 KiB) at most.
 * A frame larger than SMALL_FRAME (a RESULT with many predictions or a
 * model) first reserves its whole size from HOLD_MAX, shared by every
 * peer; a peer whose frame does not fit is paused (not read, its silence
 * forgiven) until another large frame is done.  A frame larger than
 * HOLD_MAX comes in alone.  So 32 connections each sending the largest
 * frame they may make the coordinator hold HOLD_MAX (or that one frame),
 * not 32 of them.  A reserved frame must come in at HOLD_RATE bytes/s at
 * least (after HOLD_GRACE s), or its peer is dropped: a peer that sends a
 * large frame's header and then trickles cannot pause the others for ever.
 */
#define SMALL_FRAME (64u << 10)
#define HOLD_MAX ((size_t)32 << 20)
#define HOLD_RATE (256u << 10)
#define HOLD_GRACE 30.0

/* Whether pe may read on into a frame of size bytes (header included)
 * whose header it has sent: 1, or 0 when it is paused. */
static int hold_frame(struct cfl_pool *p, struct peer *pe, size_t size)
{
	if (pe->held || size <= SMALL_FRAME)
		return 1;
	if (p->held && p->held + size > HOLD_MAX) {
		pe->pub.paused = 1;
		return 0;
	}
	pe->held = size;
	pe->held_at = cfl_now();
	p->held += size;
	pe->pub.paused = 0;
	pe->pub.receiving = 1;
	return 1;
}

/* pe's large frame is done (or pe is gone): its bytes go back. */
static void release_frame(struct cfl_pool *p, struct peer *pe)
{
	if (!pe->held)
		return;
	p->held -= pe->held;
	pe->held = 0;
	pe->pub.receiving = 0;
	p->released = 1;
	/* a large buffer is not kept for the small frames that follow */
	if (pe->in.cap > 4 * SMALL_FRAME && pe->in.len < SMALL_FRAME) {
		struct cfl_buf b;

		cfl_buf_init(&b);
		if (!cfl_buf_append(&b, pe->in.data ? pe->in.data : "", pe->in.len)) {
			cfl_buf_release(&pe->in);
			pe->in = b;
		}
	}
}

/* The peer is gone (EOF, error or killed): fail its leases and free it
 * (the loop forks a replacement for a local worker when work is queued). */
static int peer_dead(struct cfl_pool *p, size_t i, struct cfl_err *err)
{
	struct peer *pe = p->peers[i];
	char reason[256];
	int had_leases = pe->n_busy > 0;

	snprintf(reason, sizeof(reason), "%s", pe->why[0] ? pe->why : "worker lost");
	if (pe->pub.ops->reap)
		pe->pub.ops->reap(&pe->pub, reason, sizeof(reason));
	if (had_leases && !strcmp(reason, "exit 0"))
		snprintf(reason, sizeof(reason), "worker exited without a result");
	if (pe->why[0])
		snprintf(reason, sizeof(reason), "%s", pe->why);
	/* a remote peer runs its trials in processes of its own, which it
	 * reports on (CRASHED): its connection's end says nothing about them.
	 * One that gave no result for what it held makes the next ones
	 * start with fewer leases. */
	if (!pe->pub.ops->kill_on_timeout && had_leases && !pe->n_results) {
		size_t half = pe->n_busy / 2 ? pe->n_busy / 2 : 1;

		if (half < p->probation)
			p->probation = half;
		plog(p, "worker '%s' left holding %zu leases and no result: they "
		     "are leased again; a new worker now starts with %zu",
		     pe->pub.name, pe->n_busy, p->probation);
	}
	for (size_t k = 0; k < pe->pub.n_slots; k++) {
		int how = pe->pub.ops->kill_on_timeout ? SCHED_KILLED : SCHED_LOST;

		if (pe->slots[k].idx >= 0 &&
		    lease_failed(p, pe, k, how, reason, err))
			return -1;
	}
	p->peers[i] = p->peers[--p->n_peers];
	release_frame(p, pe);
	peer_free(pe);
	return 0;
}

/* A RESULT from pe.  Returns 0, or -1 on a store error (fatal).  Only a
 * result of a (trial, attempt) that pe holds counts; one that its lease
 * and the run refuse (cfl_result_check) is a failed attempt. */
static int handle_result(struct cfl_pool *p, struct peer *pe,
			 struct cfl_wire_msg *msg, struct cfl_err *err)
{
	struct cfl_wire_result *r = &msg->u.result;
	struct cfl_wire_msg ack;
	long idx = cfl_sched_find(&p->s, r->trial_id);
	size_t k;
	int dup;

	/* free the slot that held this lease */
	for (k = 0; k < pe->pub.n_slots; k++)
		if (pe->slots[k].idx >= 0 && pe->slots[k].idx == idx &&
		    pe->slots[k].attempt == (int)r->attempt)
			break;
	if (idx < 0 || k == pe->pub.n_slots) {
		/* not a lease this peer holds: a forged or stale result, a kept
		 * copy a worker sends again after a reconnect (the lease was
		 * requeued when its connection ended), a trial done before a
		 * --resume, the late error of a cancelled lease.  Dropped; an
		 * OK one is acknowledged as a duplicate so a worker forgets its
		 * copy */
		int ok = r->status == CFL_RESULT_OK;

		plog(p, "dropped a result from worker '%s' for trial %lld attempt "
		     "%u: not a lease it holds", pe->pub.name,
		     (long long)r->trial_id, r->attempt);
		cfl_wire_msg_init(&ack, CFL_WIRE_RESULT_ACK);
		ack.u.ack.trial_id = r->trial_id;
		ack.u.ack.attempt = r->attempt;
		ack.u.ack.duplicate = 1;
		cfl_wire_msg_release(msg);
		return ok ? cfl_peer_send(&pe->pub, &ack, err) : 0;
	}
	if (r->status == CFL_RESULT_OK) {
		char why[200], reason[256];

		if (!cfl_result_check(&p->check, &p->s.t[idx], r, why, sizeof(why))) {
			int attempt = (int)r->attempt;

			snprintf(reason, sizeof(reason), "refused result: %s", why);
			plog(p, "worker '%s', trial %lld attempt %d: %s: a failed "
			     "attempt", pe->pub.name, (long long)r->trial_id,
			     attempt, reason);
			cfl_wire_msg_init(&ack, CFL_WIRE_RESULT_ACK);
			ack.u.ack.trial_id = r->trial_id;
			ack.u.ack.attempt = r->attempt;
			ack.u.ack.duplicate = 1;
			cfl_wire_msg_release(msg);
			pe->slots[k].idx = -1;
			pe->n_busy--;
			if (cfl_peer_send(&pe->pub, &ack, err))
				return -1;
			return attempt_failed(p, pe, idx, attempt, SCHED_MODEL_ERROR,
					      reason, err);
		}
	}
	pe->slots[k].idx = -1;
	pe->n_busy--;
	if (!pe->n_results++ && p->probation < PROBATION_MAX)
		p->probation *= 2;
	if (r->status != CFL_RESULT_OK) {
		/* a model error: a failed attempt that did not kill the worker;
		 * CRASHED: a remote worker's process died running it */
		int attempt = (int)r->attempt;
		int how = r->status == CFL_RESULT_CRASHED ? SCHED_KILLED
							  : SCHED_MODEL_ERROR;
		char reason[256];

		snprintf(reason, sizeof(reason), "%s", r->error ? r->error : "model error");
		cfl_wire_msg_release(msg);	/* r is zeroed from here on */
		return attempt_failed(p, pe, idx, attempt, how, reason, err);
	}
	dup = cfl_sched_done(&p->s, idx, (int)r->attempt);
	if (!dup) {
		int rc = store_done(p, &p->s.t[idx], r, err);

		if (rc < 0) {
			cfl_wire_msg_release(msg);
			return -1;
		}
		dup = rc == 1;
	}
	cfl_wire_msg_init(&ack, CFL_WIRE_RESULT_ACK);
	ack.u.ack.trial_id = r->trial_id;
	ack.u.ack.attempt = r->attempt;
	ack.u.ack.duplicate = (uint32_t)dup;
	if (cfl_peer_send(&pe->pub, &ack, err)) {
		cfl_wire_msg_release(msg);
		return -1;
	}
	if (dup) {
		cfl_wire_msg_release(msg);
		return 0;
	}
	{
		struct event *e = event_push(p, err);

		if (!e) {
			cfl_wire_msg_release(msg);
			return -1;
		}
		e->msg = *msg;	/* the event owns the result now */
		e->ev.trial_id = p->s.t[idx].id;
		e->ev.user = p->s.t[idx].user;
		e->ev.status = CFL_TRIAL_DONE;
		e->ev.attempt = (int)r->attempt;
		snprintf(e->worker, sizeof(e->worker), "%s", pe->pub.name);
	}
	return 0;
}

/* A PROGRESS frame of pe: asks the caller whether to prune the trial,
 * and prunes it.  Frames of a lease pe no longer runs are dropped.  0, or
 * -1 on a store or caller error. */
static int handle_progress(struct cfl_pool *p, struct peer *pe,
			   const struct cfl_wire_progress *pr, struct cfl_err *err)
{
	long idx = cfl_sched_find(&p->s, pr->trial_id);
	size_t k;
	int r;
	char reason[64];

	if (!p->o.on_progress || idx < 0)
		return 0;
	for (k = 0; k < pe->pub.n_slots; k++)
		if (pe->slots[k].idx == idx && pe->slots[k].attempt == (int)pr->attempt)
			break;
	if (k == pe->pub.n_slots || p->s.t[idx].status != CFL_TRIAL_RUNNING)
		return 0;
	r = p->o.on_progress(p->o.progress_ctx, pr->trial_id, p->s.t[idx].user,
			     pr->step, pr->score, err);
	if (r <= 0)
		return r;
	if (p->o.store) {
		if (batch_open(p, err) ||
		    cfl_store_trial_pruned(p->o.store, pr->trial_id, (long)pr->step,
					   pr->score, err))
			return -1;
		p->batch_n++;
	}
	snprintf(reason, sizeof(reason), "pruned at step %u", pr->step);
	return lease_stop(p, pe, k, SCHED_PRUNED, reason, err);
}

/* One decoded frame from a peer.  Returns 0, or -1 (err) to drop the peer;
 * a store error sets *fatal. */
static int handle_frame(struct cfl_pool *p, struct peer *pe,
			const struct cfl_wire_frame *f, int *fatal,
			struct cfl_err *err)
{
	struct cfl_wire_msg msg;

	if (pe->pub.ops->on_frame) {
		int r = pe->pub.ops->on_frame(&pe->pub, f, err);

		if (r)
			return r < 0 ? -1 : 0;
	}
	if (cfl_wire_payload_decode(f->type, f->payload, f->length, &msg, err))
		return -1;
	switch (msg.type) {
	case CFL_WIRE_HELLO: {
		uint32_t code;

		if (cfl_hello_check(&msg.u.hello, &code, err)) {
			cfl_err_prefix(err, "peer '%s'", pe->pub.name);
			cfl_wire_msg_release(&msg);
			return -1;
		}
		if (!pe->pub.n_slots &&
		    peer_set_slots(pe, msg.u.hello.n_slots, err)) {
			cfl_wire_msg_release(&msg);
			return -1;
		}
		pe->hello = 1;
		break;
	}
	case CFL_WIRE_RESULT: {
		int r = handle_result(p, pe, &msg, err);

		if (r == -1)
			*fatal = 1;	/* a store error: the run cannot go on */
		return r ? -1 : 0;	/* msg moved or released */
	}
	case CFL_WIRE_HEARTBEAT:
		break;
	case CFL_WIRE_PROGRESS: {
		int r = handle_progress(p, pe, &msg.u.progress, err);

		if (r < 0)
			*fatal = 1;
		return r;
	}
	case CFL_WIRE_ERROR:
		cfl_err_set(err, "peer '%s': %s", pe->pub.name,
			    msg.u.error.message);
		cfl_wire_msg_release(&msg);
		return -1;
	default:
		cfl_err_set(err, "peer '%s' sent an unexpected %s frame",
			    pe->pub.name, cfl_wire_type_name(msg.type));
		cfl_wire_msg_release(&msg);
		return -1;
	}
	cfl_wire_msg_release(&msg);
	return 0;
}

/* Handles every whole frame buffered from pe.  Returns 0, 1 when the
 * peer is to be dropped (a protocol error), -1 on a store error.  A peer
 * that waits for its HELLO (no slots yet) may send nothing else first, so
 * before it is accepted it can make us hold CFL_WIRE_HELLO_MAX bytes at
 * most (the codec bounds each frame type's payload). */
static int peer_frames(struct cfl_pool *p, struct peer *pe, struct cfl_err *err)
{
	size_t pos = 0;
	int rc = 0;

	while (pos < pe->in.len) {
		struct cfl_wire_frame f;
		struct cfl_err ferr;
		int fatal = 0;
		int r = cfl_wire_frame_split(pe->in.data + pos, pe->in.len - pos,
					     &f, &ferr);

		/* a RESULT cannot be larger than this run's data makes one:
		 * refused from its header, before we hold its bytes */
		if (r >= 0 && pe->in.len - pos >= CFL_WIRE_HEADER_SIZE &&
		    f.type == CFL_WIRE_RESULT && f.length > p->result_max) {
			cfl_err_set(&ferr, "a RESULT of %u bytes, more than this run's "
				    "results can be (%u)", f.length, p->result_max);
			r = -1;
		}
		/* a type no worker sends (a 63 MiB CHUNK): refused from
		 * its header too */
		if (r >= 0 && pe->in.len - pos >= CFL_WIRE_HEADER_SIZE &&
		    !cfl_wire_from_worker(f.type)) {
			cfl_err_set(&ferr, "a %s frame, which a worker never sends",
				    cfl_wire_type_name(f.type));
			r = -1;
		}
		if (r >= 0 && !pe->hello && !pe->pub.n_slots &&
		    pe->in.len - pos >= 6 &&
		    (uint8_t)pe->in.data[pos + 5] != CFL_WIRE_HELLO) {
			cfl_err_set(&ferr, "%s frame before HELLO",
				    cfl_wire_type_name((uint8_t)pe->in.data[pos + 5]));
			r = -1;
		}
		if (r == 1) {
			size_t need = CFL_WIRE_HEADER_SIZE + (size_t)f.length +
				      (f.flags & CFL_WIRE_F_MAC ? CFL_WIRE_MAC_SIZE : 0);

			/* a held frame gets its room at once (and a read's
			 * more): one allocation, not a doubling buffer's
			 * copies, which the allocator may keep */
			if (pe->in.len - pos >= CFL_WIRE_HEADER_SIZE &&
			    hold_frame(p, pe, need) && need > SMALL_FRAME)
				cfl_buf_reserve(&pe->in, pos + need + 65536 - pe->in.len);
			break;
		}
		if (r < 0 || handle_frame(p, pe, &f, &fatal, &ferr)) {
			if (fatal) {
				*err = ferr;
				rc = -1;
				break;
			}
			/* a hostile or broken peer: drop it, the run goes on */
			snprintf(pe->why, sizeof(pe->why), "%.255s", ferr.msg);
			pe->dead = 1;
			if (pe->pub.ops->kill)
				pe->pub.ops->kill(&pe->pub);
			rc = 1;
			break;
		}
		pos += f.size;
		if (pe->held) {
			/* the large frame is handled: what follows it starts
			 * at the buffer's head before its bytes go back */
			memmove(pe->in.data, pe->in.data + pos, pe->in.len - pos);
			pe->in.len -= pos;
			pos = 0;
			release_frame(p, pe);
		}
		if (pe->dead)	/* pruned, and killed: read nothing more */
			break;
	}
	if (pos) {
		memmove(pe->in.data, pe->in.data + pos, pe->in.len - pos);
		pe->in.len -= pos;
	}
	return rc;
}

/* Reads what the peer sent and handles every whole frame as it comes (so
 * the buffer holds one partial frame and one read at most).  Returns 0, 1
 * when the peer is gone (EOF, I/O or protocol error), -1 on a store error. */
static int peer_read(struct cfl_pool *p, struct peer *pe, struct cfl_err *err)
{
	for (;;) {
		ssize_t k;
		int r;

		if (pe->pub.paused)
			break;	/* read again once bytes are released */
		if (cfl_buf_reserve(&pe->in, 65536))
			return cfl_err_set(err, "out of memory");
		k = pe->pub.ops->read
			    ? pe->pub.ops->read(&pe->pub, pe->in.data + pe->in.len, 65536)
			    : read(pe->pub.fd, pe->in.data + pe->in.len, 65536);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (k <= 0) {
			pe->dead = 1;
			break;
		}
		pe->in.len += (size_t)k;
		pe->last_heard = cfl_now();
		r = peer_frames(p, pe, err);
		if (r)
			return r;
		if ((size_t)k < 65536 && !pe->pub.ops->read)
			break;	/* a read hook is read until EAGAIN */
	}
	return pe->dead ? 1 : 0;
}

static void peer_write(struct peer *pe)
{
	while (pe->out.len) {
		/* MSG_NOSIGNAL: a dead peer is an EPIPE here, not a SIGPIPE
		 * that kills the coordinator */
		ssize_t k = pe->pub.ops->write
			    ? pe->pub.ops->write(&pe->pub, pe->out.data, pe->out.len)
			    : send(pe->pub.fd, pe->out.data, pe->out.len, MSG_NOSIGNAL);

		if (k < 0 && errno == ENOTSOCK && !pe->pub.ops->write)
			k = write(pe->pub.fd, pe->out.data, pe->out.len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			pe->dead = 1;	/* EPIPE: seen as EOF on the read side */
			pe->out.len = 0;
			return;
		}
		memmove(pe->out.data, pe->out.data + k, pe->out.len - (size_t)k);
		pe->out.len -= (size_t)k;
	}
}

/* Hands queued trials to free slots. */
static int assign(struct cfl_pool *p, struct cfl_err *err)
{
	for (size_t i = 0; i < p->n_peers && p->s.q_len; i++) {
		struct peer *pe = p->peers[i];

		if (pe->dead)
			continue;
		/* a command trial goes only to a peer that may run one (the
		 * queue is FIFO: the head waits for such a peer) */
		if (!pe->pub.ops->runs_commands && p->s.q_len &&
		    (p->s.t[p->s.q[p->s.q_head]].flags & CFL_LEASE_COMMAND))
			continue;
		for (size_t k = 0; k < pe->pub.n_slots && p->s.q_len; k++) {
			if (pe->pub.max_leases && pe->n_leased >= pe->pub.max_leases)
				break;	/* it will leave: no lease would run */
			/* on probation: its allowance doubles with each result */
			if (!pe->pub.ops->kill_on_timeout && pe->n_results < 12 &&
			    pe->n_busy >= p->probation << pe->n_results)
				break;
			struct cfl_wire_msg m;
			struct sched_trial *t;
			long idx;

			if (pe->slots[k].idx >= 0)
				continue;
			idx = cfl_sched_take(&p->s);
			t = &p->s.t[idx];
			cfl_wire_msg_init(&m, CFL_WIRE_LEASE);
			m.u.lease.trial_id = t->id;
			m.u.lease.attempt = (uint32_t)t->attempt;
			m.u.lease.model = t->model;
			m.u.lease.params = t->params;	/* borrowed: not released */
			m.u.lease.seed = t->seed;
			m.u.lease.fold_seed = t->fold_seed;
			m.u.lease.repeat = t->repeat;
			m.u.lease.fold = t->fold;
			m.u.lease.n_folds = (uint32_t)(t->fold >= 0 ? t->n_folds : 0);
			m.u.lease.flags = t->flags;
			m.u.lease.budget_s = t->budget_s;
			m.u.lease.sample_rows = t->sample_rows;
			m.u.lease.threads = (uint32_t)p->o.threads_per_trial;
			m.u.lease.n_metrics = (uint32_t)p->o.n_metrics;
			for (size_t j = 0; j < p->o.n_metrics; j++)
				m.u.lease.metrics[j] = (uint8_t)p->o.metrics[j];
			if (cfl_peer_send(&pe->pub, &m, err) ||
			    store_leased(p, t, pe->pub.name, err))
				return -1;
			pe->slots[k] = (struct slot){
				idx, t->attempt,
				p->o.trial_timeout > 0 ? cfl_now() + p->o.trial_timeout : 0,
				0 };
			pe->n_busy++;
			pe->n_leased++;
		}
	}
	return 0;
}

/* With nothing queued, the idle slots of local workers are cores a
 * running trial may borrow for a second thread (cfl_spare_offer: an fcnn
 * fit's steps in two halves, a forest's trees), this pool's or, for MPI
 * ranks on one node, another rank's; with work queued, none. */
static void offer_spare(struct cfl_pool *p)
{
	int n = 0;

	if (!p->s.q_len)
		for (size_t i = 0; i < p->n_peers; i++) {
			const struct peer *pe = p->peers[i];

			if (!pe->dead && !strcmp(pe->pub.ops->kind, "fork"))
				n += (int)(pe->pub.n_slots - pe->n_busy);
		}
	cfl_spare_offer(n);
}

/* Fails leases past their deadline. */
static int check_timeouts(struct cfl_pool *p, struct cfl_err *err)
{
	double now = cfl_now();

	for (size_t i = 0; i < p->n_peers; i++) {
		struct peer *pe = p->peers[i];

		for (size_t k = 0; k < pe->pub.n_slots; k++) {
			struct slot *sl = &pe->slots[k];
			char reason[64];

			if (sl->idx < 0 || !sl->deadline || now < sl->deadline)
				continue;
			snprintf(reason, sizeof(reason), "timeout after %g s",
				 p->o.trial_timeout);
			if (lease_stop(p, pe, k, SCHED_KILLED, reason, err))
				return -1;
		}
		if (pe->held && !pe->dead &&
		    now - pe->held_at > HOLD_GRACE + (double)pe->held / HOLD_RATE) {
			snprintf(pe->why, sizeof(pe->why), "a frame of %zu bytes "
				 "still incomplete after %.0f s", pe->held,
				 now - pe->held_at);
			pe->dead = 1;
			if (pe->pub.ops->kill)
				pe->pub.ops->kill(&pe->pub);
			continue;
		}
		if (pe->pub.silence > 0 && !pe->dead && !pe->pub.paused &&
		    now - pe->last_heard > pe->pub.silence) {
			snprintf(pe->why, sizeof(pe->why),
				 "no word from worker for %g s", pe->pub.silence);
			pe->dead = 1;
			if (pe->pub.ops->kill)
				pe->pub.ops->kill(&pe->pub);
			continue;
		}
		if (pe->pub.heartbeat > 0 && !pe->dead &&
		    now - pe->last_sent_hb >= pe->pub.heartbeat) {
			struct cfl_wire_msg m;

			cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
			m.u.heartbeat.time_ms = (uint64_t)(now * 1000);
			m.u.heartbeat.n_running = (uint32_t)pe->n_busy;
			if (cfl_peer_send(&pe->pub, &m, err))
				return -1;
			pe->last_sent_hb = now;
		}
	}
	return 0;
}

/* Seconds until the next thing the loop must do without input, or -1. */
static int poll_timeout_ms(struct cfl_pool *p)
{
	double now = cfl_now(), next = -1;

	for (size_t i = 0; i < p->n_peers; i++)
		for (size_t k = 0; k < p->peers[i]->pub.n_slots; k++) {
			double d = p->peers[i]->slots[k].deadline;

			if (p->peers[i]->slots[k].idx >= 0 && d > 0 &&
			    (next < 0 || d < next))
				next = d;
		}
	for (size_t i = 0; i < p->n_peers; i++) {
		const struct peer *pe = p->peers[i];

		if (pe->pub.silence > 0 && !pe->pub.paused &&
		    (next < 0 || pe->last_heard + pe->pub.silence < next))
			next = pe->last_heard + pe->pub.silence;
		if (pe->held) {
			double d = pe->held_at + HOLD_GRACE + (double)pe->held / HOLD_RATE;

			if (next < 0 || d < next)
				next = d;
		}
		if (pe->pub.heartbeat > 0 &&
		    (next < 0 || pe->last_sent_hb + pe->pub.heartbeat < next))
			next = pe->last_sent_hb + pe->pub.heartbeat;
	}
	if (p->in_batch && p->o.commit_interval > 0) {
		double d = p->batch_start + p->o.commit_interval;

		if (next < 0 || d < next)
			next = d;
	}
	if (p->o.tick > 0) {
		double d = p->last_tick + p->o.tick;

		if (next < 0 || d < next)
			next = d;
	}
	if (next < 0)
		return -1;
	next -= now;
	return next <= 0 ? 0 : (int)ceil(next * 1000);
}

/* ---- pool: the loop ---- */

static size_t count_local(const struct cfl_pool *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_peers; i++)
		if (!p->peers[i]->dead && !strcmp(p->peers[i]->pub.ops->kind, "fork") &&
		    (!p->peers[i]->pub.max_leases ||
		     p->peers[i]->n_leased < p->peers[i]->pub.max_leases))
			n++;
	return n;
}

/* The largest RESULT payload a trial on d can produce: predictions (at most
 * one double per class, or one, and a row index) for every row in each of
 * the three splits, doubled for slack, plus 64 KiB for metrics, timings and
 * an error text; plus model_max twice when results carry models (0: no
 * model submitted yet).  Without data, or with a model of no known bound
 * (model_max UINT64_MAX): the codec's limit. */
static uint32_t result_limit(const struct cfl_data *d, uint64_t model_max)
{
	uint64_t rows, n_out, lim;

	if (!d)
		return model_max ? cfl_wire_max_payload(CFL_WIRE_RESULT)
				 : CFL_WIRE_MAX_PAYLOAD;
	rows = (uint64_t)d->train.n + d->valid.n + d->test.n;
	n_out = d->train.n_classes > 0 ? (uint64_t)d->train.n_classes : 1;
	lim = (64u << 10) + 2 * CFL_WIRE_N_SPLITS * rows * (8 * n_out + 4);
	if (lim > CFL_WIRE_MAX_PAYLOAD)
		lim = CFL_WIRE_MAX_PAYLOAD;
	if (model_max > CFL_WIRE_MAX_MODEL / 2)
		return cfl_wire_max_payload(CFL_WIRE_RESULT);
	return (uint32_t)(lim + 2 * model_max);
}

/* keep_models: the most text trial t's model may take in a RESULT (a bound
 * from the model's kind, its params and the data's shape, with the model
 * file's header: params and the encoder), or UINT64_MAX when none is
 * known. */
static uint64_t model_text_limit(const struct cfl_pool *p,
				 const struct cfl_trial_spec *t)
{
	const struct cfl_data *d = p->o.data;
	struct cfl_buf b;
	uint64_t m, head = 64u << 10;

	if (!d)
		return UINT64_MAX;
	m = cfl_model_text_max(t->model, t->params, d->train.d,
			       d->train.n_classes > 0 ? (size_t)d->train.n_classes : 1,
			       d->train.n + d->valid.n + d->test.n);
	if (!m)
		return UINT64_MAX;
	cfl_buf_init(&b);
	if (t->params)
		cfl_params_format(t->params, &b);
	head += 2 * b.len;
	b.len = 0;
	if (cfl_encoder_save(&d->enc, &b) == 0)
		head += b.len;
	cfl_buf_release(&b);
	return m + head;
}

struct cfl_pool *cfl_pool_new(const struct cfl_pool_opts *o, struct cfl_err *err)
{
	struct cfl_pool *p = cfl_calloc(1, sizeof(*p), err);

	if (!p)
		return NULL;
	p->o = *o;
	if (p->o.threads_per_trial < 1)
		p->o.threads_per_trial = 1;
	if (p->o.commit_max < 1)
		p->o.commit_max = 1;
	if (p->o.n_metrics > CFL_WIRE_MAX_METRICS)
		p->o.n_metrics = CFL_WIRE_MAX_METRICS;
	cfl_sched_init(&p->s, o->max_retries);
	cfl_result_check_init(&p->check, p->o.data, p->o.metrics, p->o.n_metrics);
	p->result_max = result_limit(o->data, 0);
	p->probation = PROBATION_MAX;
	p->wake[0] = p->wake[1] = -1;
	p->last_tick = cfl_now();
	if (pipe(p->wake) || set_nonblock(p->wake[0]) || set_nonblock(p->wake[1])) {
		cfl_err_set(err, "cannot create a pipe: %s", strerror(errno));
		cfl_pool_close(p, NULL);
		return NULL;
	}
	fcntl(p->wake[0], F_SETFD, FD_CLOEXEC);
	fcntl(p->wake[1], F_SETFD, FD_CLOEXEC);
	for (size_t i = 0; i < o->n_local; i++)
		if (cfl_fork_spawn(p, err)) {
			cfl_pool_close(p, NULL);
			return NULL;
		}
	return p;
}

int cfl_pool_submit(struct cfl_pool *p, const struct cfl_trial_spec *t,
		    struct cfl_err *err)
{
	if (p->stopped)
		return cfl_err_set(err, "the pool was interrupted");
	if ((t->flags & CFL_LEASE_COMMAND) && !p->o.allow_commands)
		return cfl_err_set(err, "trial %lld is a shell command, and this "
				   "pool runs none", (long long)t->trial_id);
	if (p->o.keep_models && (t->flags & CFL_LEASE_KEEP_MODEL)) {
		uint64_t m = model_text_limit(p, t);

		if (m > p->model_max) {
			p->model_max = m;
			p->result_max = result_limit(p->o.data, m);
		}
	}
	return cfl_sched_add(&p->s, t, err) < 0 ? -1 : 0;
}

int cfl_pool_cancel(struct cfl_pool *p, int64_t trial_id,
		    struct cfl_err *err)
{
	long idx = cfl_sched_find(&p->s, trial_id);

	if (idx < 0 || p->s.t[idx].status != CFL_TRIAL_RUNNING)
		return 0;
	for (size_t i = 0; i < p->n_peers; i++) {
		struct peer *pe = p->peers[i];

		for (size_t k = 0; k < pe->pub.n_slots; k++)
			if (pe->slots[k].idx == idx &&
			    pe->slots[k].attempt == p->s.t[idx].attempt)
				return lease_stop(p, pe, k, SCHED_CANCELLED,
						  "cancelled", err) ? -1 : 1;
	}
	return 0;
}

void cfl_pool_interrupt(struct cfl_pool *p)
{
	char c = 1;
	ssize_t r;

	p->interrupted = 1;
	r = write(p->wake[1], &c, 1);
	(void)r;
}

void cfl_pool_interrupt_over(struct cfl_pool *p)
{
	p->over = 1;
	cfl_pool_interrupt(p);
}

void cfl_pool_get_stats(const struct cfl_pool *p, struct cfl_pool_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->submitted = p->s.n;
	out->queued = p->s.q_len;
	out->running = p->s.n_running;
	out->done = p->s.n_done;
	out->failed = p->s.n_failed;
	out->attempts_failed = p->s.n_attempts_failed;
	for (size_t i = 0; i < p->n_peers; i++)
		if (!p->peers[i]->dead)
			out->n_slots += p->peers[i]->pub.n_slots;
}

static void close_gracefully(struct cfl_pool *p);

/* Ctrl-C: kill every peer, record running trials as interrupted. */
static int stop(struct cfl_pool *p, struct cfl_err *err)
{
	int rc = 0;

	p->stopped = 1;
	cfl_spare_offer(0);
	cfl_spare_unlink();
	if (p->over) {	/* the run is over: TCP workers may go home */
		for (size_t i = 0; i < p->n_peers; i++) {
			struct cfl_wire_msg m;

			if (strcmp(p->peers[i]->pub.ops->kind, "tcp"))
				continue;
			cfl_wire_msg_init(&m, CFL_WIRE_SHUTDOWN);
			if (cfl_peer_send(&p->peers[i]->pub, &m, NULL) == 0)
				peer_write(p->peers[i]);
		}
		close_gracefully(p);
	}
	for (size_t i = 0; i < p->n_peers; i++)
		if (p->peers[i]->pub.ops->kill)
			p->peers[i]->pub.ops->kill(&p->peers[i]->pub);
	while (p->n_peers) {
		struct peer *pe = p->peers[--p->n_peers];
		char reason[128] = "";

		if (pe->pub.ops->reap)
			pe->pub.ops->reap(&pe->pub, reason, sizeof(reason));
		peer_free(pe);
	}
	cfl_sched_interrupt(&p->s);
	if (cfl_pool_flush(p, err))
		rc = -1;
	if (p->o.store && cfl_store_mark_interrupted(p->o.store, p->o.run_id,
						     rc ? NULL : err))
		rc = -1;
	return rc;
}

int cfl_pool_wait(struct cfl_pool *p, struct cfl_pool_event *ev,
		  struct cfl_err *err)
{
	release_cur(p);
	for (;;) {
		struct pollfd *fds;
		size_t n_fds = 0;
		int timeout, r;

		if (p->interrupted) {
			if (!p->stopped) {
				drop_events(p);
				if (stop(p, err))
					return -1;
			}
			return CFL_POOL_INTERRUPTED;
		}
		if (p->ev_len) {
			p->ev_cur = p->evq[p->ev_head];
			p->ev_head = (p->ev_head + 1) % p->ev_cap;
			p->ev_len--;
			p->has_cur = 1;
			*ev = p->ev_cur.ev;
			ev->worker = p->ev_cur.worker;
			ev->reason = p->ev_cur.ev.status == CFL_TRIAL_DONE ? NULL
									   : p->ev_cur.reason;
			ev->result = p->ev_cur.ev.status == CFL_TRIAL_DONE
					     ? &p->ev_cur.msg.u.result : NULL;
			return CFL_POOL_EVENT;
		}
		if (p->o.tick > 0 && cfl_now() - p->last_tick >= p->o.tick) {
			p->last_tick = cfl_now();
			return CFL_POOL_TICK;
		}
		/* keep n_local children alive while there is work: a child
		 * that crashed, was killed or ran its trials_per_worker trials
		 * is replaced here */
		while (p->s.q_len && count_local(p) < p->o.n_local)
			if (cfl_fork_spawn(p, err))
				return -1;
		if (assign(p, err))
			return -1;
		offer_spare(p);
		if (!p->s.q_len && !p->s.n_running) {
			if (cfl_pool_flush(p, err))
				return -1;
			return CFL_POOL_IDLE;
		}
		if (p->s.q_len && !p->n_peers && !p->n_sources)
			return cfl_err_set(err, "no worker left to run %zu queued trials",
					   p->s.q_len);

		fds = cfl_calloc(p->n_peers + p->n_sources + 1, sizeof(*fds), err);
		if (!fds)
			return -1;
		fds[n_fds++] = (struct pollfd){ p->wake[0], POLLIN, 0 };
		for (size_t i = 0; i < p->n_sources; i++)
			fds[n_fds++] = (struct pollfd){ p->sources[i].fd, POLLIN, 0 };
		for (size_t i = 0; i < p->n_peers; i++)
			fds[n_fds++] = (struct pollfd){
				p->peers[i]->pub.fd,
				(short)((p->peers[i]->pub.paused ? 0 : POLLIN) |
					(p->peers[i]->out.len ? POLLOUT : 0)), 0 };
		timeout = poll_timeout_ms(p);
		r = poll(fds, n_fds, timeout);
		if (r < 0 && errno != EINTR) {
			free(fds);
			return cfl_err_set(err, "poll: %s", strerror(errno));
		}
		if (r > 0 && (fds[0].revents & POLLIN)) {
			char buf[64];

			while (read(p->wake[0], buf, sizeof(buf)) > 0)
				;
		}
		for (size_t i = 0; r > 0 && i < p->n_sources; i++)
			if (fds[1 + i].revents & (POLLIN | POLLERR | POLLHUP))
				if (p->sources[i].on_ready(p, p->sources[i].ctx, err)) {
					free(fds);
					return -1;
				}
		/* peers: the poll array's order is the peer order before any
		 * peer was added by a source; read by index of that order */
		for (size_t i = 0, j = 1 + p->n_sources; r > 0 && j < n_fds; j++) {
			struct peer *pe = NULL;

			/* find the peer of fds[j] (peers may have been added) */
			for (; i < p->n_peers; i++)
				if (p->peers[i]->pub.fd == fds[j].fd) {
					pe = p->peers[i];
					break;
				}
			/* a peer killed meanwhile (cfl_pool_cancel from a
			 * source): what it sent before is no result any more */
			if (!pe || pe->dead)
				continue;
			if (fds[j].revents & POLLOUT)
				peer_write(pe);
			if (pe->pub.paused && (fds[j].revents & (POLLERR | POLLHUP)))
				pe->dead = 1;	/* gone while paused */
			else if (fds[j].revents & (POLLIN | POLLERR | POLLHUP)) {
				if (peer_read(p, pe, err) < 0) {
					free(fds);
					return -1;
				}
			}
		}
		free(fds);
		/* large frames done: paused peers read on (what their
		 * transport buffered too, which poll would not show) */
		while (p->released) {
			p->released = 0;
			for (size_t i = 0; i < p->n_peers; i++) {
				struct peer *pe = p->peers[i];

				if (!pe->pub.paused || pe->dead)
					continue;
				pe->pub.paused = 0;
				if (peer_read(p, pe, err) < 0)
					return -1;
			}
		}
		if (check_timeouts(p, err))
			return -1;
		/* write what handling produced (acks), then bury the dead */
		for (size_t i = 0; i < p->n_peers; i++)
			if (p->peers[i]->out.len && !p->peers[i]->dead)
				peer_write(p->peers[i]);
		for (size_t i = 0; i < p->n_peers;) {
			if (p->peers[i]->dead) {
				if (peer_dead(p, i, err))
					return -1;
				continue;	/* slot i now holds another peer */
			}
			i++;
		}
		if (batch_maybe_commit(p, err))
			return -1;
	}
}

/* TCP workers get the SHUTDOWN before their connection goes.  Closing a
 * socket with their heartbeats or results unread in it resets the
 * connection, and a reset can drop the SHUTDOWN still in flight: the
 * worker then reconnects for --retry-for and gives up with exit 1 although
 * the run ended well (a run stopped by its time limit with folds running
 * there).  So: write what is queued and read (and drop) what they send
 * until they close, for at most CLOSE_GRACE seconds. */
#define CLOSE_GRACE 2.0

static void close_gracefully(struct cfl_pool *p)
{
	double end = cfl_now() + CLOSE_GRACE;
	char scratch[16384];

	for (;;) {
		struct pollfd fds[64];
		struct peer *who[64];
		size_t n = 0;
		double left = end - cfl_now();

		for (size_t i = 0; i < p->n_peers && n < 64; i++) {
			struct peer *pe = p->peers[i];

			if (pe->dead || strcmp(pe->pub.ops->kind, "tcp"))
				continue;
			fds[n].fd = pe->pub.fd;
			fds[n].events = POLLIN | (pe->out.len ? POLLOUT : 0);
			fds[n].revents = 0;
			who[n++] = pe;
		}
		if (!n || left <= 0 || poll(fds, n, (int)(left * 1000) + 1) < 0)
			return;
		for (size_t j = 0; j < n; j++) {
			struct peer *pe = who[j];

			if (fds[j].revents & POLLOUT)
				peer_write(pe);
			if (!(fds[j].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			for (;;) {	/* until EAGAIN (a TLS session buffers) */
				ssize_t k = pe->pub.ops->read
					    ? pe->pub.ops->read(&pe->pub, scratch, sizeof(scratch))
					    : read(pe->pub.fd, scratch, sizeof(scratch));

				if (k > 0)
					continue;
				if (k < 0 && errno == EINTR)
					continue;
				if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
					pe->dead = 1;	/* closed: done with it */
				break;
			}
		}
	}
}

int cfl_pool_close(struct cfl_pool *p, struct cfl_err *err)
{
	int rc = 0;

	if (!p)
		return 0;
	cfl_spare_offer(0);
	cfl_spare_unlink();
	drop_events(p);
	if (cfl_pool_flush(p, err))
		rc = -1;
	/* ask politely, then make sure */
	for (size_t i = 0; i < p->n_peers; i++) {
		struct cfl_wire_msg m;

		cfl_wire_msg_init(&m, CFL_WIRE_SHUTDOWN);
		if (cfl_peer_send(&p->peers[i]->pub, &m, NULL) == 0)
			peer_write(p->peers[i]);
	}
	close_gracefully(p);
	while (p->n_peers) {
		struct peer *pe = p->peers[--p->n_peers];
		char reason[128] = "";

		if (pe->n_busy && pe->pub.ops->kill)
			pe->pub.ops->kill(&pe->pub);
		if (pe->pub.ops->reap)
			pe->pub.ops->reap(&pe->pub, reason, sizeof(reason));
		peer_free(pe);
	}
	free(p->peers);
	free(p->sources);
	free(p->evq);
	cfl_sched_release(&p->s);
	cfl_result_check_release(&p->check);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	free(p);
	return rc;
}
