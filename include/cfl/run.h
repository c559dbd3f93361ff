/*
 * cfl run: the process pool that runs trials.  Three layers, each usable
 * alone:
 *
 *   scheduler  the lease state machine of the trials (queued -> leased
 *              (attempt) -> done | failed | poison), retries, first result
 *              wins.  Pure bookkeeping: no I/O, no clock of its own.
 *   pool       a poll loop over "peers" (a forked local worker, a TCP
 *              connection with N slots, ...) that hands out leases as wire
 *              frames, reads results, enforces --trial-timeout, writes every
 *              state change to the store (grouped commits) and gives the
 *              caller one finished trial at a time (ask-tell).
 *   worker     executes one trial on loaded data (cfl_trial_execute) and
 *              serves leases over a file descriptor (cfl_worker_serve).
 *
 * Transports add peers: fork.c (socketpairs) is built in; a TCP or MPI
 * transport is one more file using the "transports" section below (tcp.c,
 * mpi_peer.c), and on the worker's side a link for the relay (relay.h), the
 * one worker that serves a coordinator with its own pool.  The
 * coordinator alone writes the store; workers never open it.
 */
#ifndef CFL_RUN_H
#define CFL_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfl/core.h"
#include "cfl/data.h"
#include "cfl/metrics.h"
#include "cfl/store.h"
#include "cfl/wire.h"

/* ---- trials ---- */

/* What a trial is: everything a worker needs besides the data.  The strings
 * and params are copied by cfl_pool_submit.  The caller creates the trial
 * in the store first (cfl_store_candidate_get_or_add, then
 * cfl_store_trial_ensure gives trial_id and, on --resume, the status and
 * attempt to skip done trials and continue attempt numbers). */
struct cfl_trial_spec {
	int64_t trial_id;	/* the store's trial id (unique key; > 0) */
	const char *model;	/* registered model name */
	const struct cfl_params *params;	/* may be NULL: defaults */
	uint64_t seed;		/* cfl_trial_seed(run seed, model, repeat) */
	uint64_t fold_seed;	/* cfl_fold_seed(run seed, repeat) */
	int repeat;
	int fold;		/* -1: no folds */
	int n_folds;		/* 0 when fold == -1 */
	unsigned flags;		/* CFL_LEASE_BOOTSTRAP, CFL_LEASE_KEEP_*, CFL_LEASE_NOOP,
				 * CFL_LEASE_COMMAND (model is then a shell command) */
	int prev_attempts;	/* attempts already made (from the store, on --resume) */
	double budget_s;	/* > 0: the fit's time budget in seconds (the
				 * model makes fewer trees, rounds or epochs;
				 * struct cfl_model's budget_s); 0: none */
	uint64_t sample_rows;	/* > 0: fit on a seeded sample of at most
				 * this many of its rows (the lease's); 0: all */
	void *user;		/* caller's pointer, given back in events */
};

/* The seed of a trial: derived from (run seed, model, repeat) only, never
 * from timing or from which worker runs it, so tables are identical for
 * any --num-jobs.  Candidates of a search pass their 8-hex id as model. */
uint64_t cfl_trial_seed(uint64_t run_seed, const char *model, int repeat);
/* The seed of the k-fold assignment of a repeat: shared by every model so
 * their out-of-fold predictions cover the same rows. */
uint64_t cfl_fold_seed(uint64_t run_seed, int repeat);

/* For a worker that runs a coordinator's leases in its own pool: the spec
 * of lease l as local trial local_id (a local id, since the coordinator
 * may lease one trial again, a new attempt, while the old one still runs).
 * spec points into l (model, params): l must outlive the submit. */
void cfl_trial_spec_from_lease(struct cfl_trial_spec *spec /* OUT */,
			       const struct cfl_wire_lease *l,
			       int64_t local_id);

/* ---- worker: one trial ---- */

/* Runs the lease on data: fits on data->train (minus fold `fold` of
 * n_folds when fold >= 0; then, with sample_rows, a seeded sample of
 * that many of those rows (the fold seed's shuffle, in row order); then,
 * with CFL_LEASE_BOOTSTRAP, a bootstrap sample of those rows drawn with
 * the trial seed),
 * with data->valid for early stopping; predicts valid, test (and the
 * held-out fold); computes the lease's metrics on each; fills res (release
 * with cfl_wire_msg_release on the enclosing message, or
 * cfl_trial_result_release).  A model error is not a failure of this call:
 * it returns 0 with res->status CFL_RESULT_MODEL_ERROR and res->error set.
 * With CFL_LEASE_KEEP_MODEL, res->model is the fitted model's text
 * (cfl_model_format without the encoder).
 * Returns -1 (err) only when the lease itself is invalid (unknown model,
 * fold out of range; bad params are a model error) -- also reported as a
 * model error by cfl_worker_serve.  Honours CFL_TEST_FAULT (see docs/repeat.md: tests only).
 * With CFL_LEASE_COMMAND, lease->model is a shell command run by /bin/sh -c
 * (CFL_TRIAL_SEED and CFL_TRIAL_REPEAT in its environment): the number on
 * the last non-empty line of its stdout is metric "value" of split valid;
 * a non-zero exit, a signal or no number is a model error naming it with
 * the tail of its stderr.  The command runs in its own process group under
 * a supervisor process that kills the whole group when the command ends
 * and when the calling process dies (however it dies), so no process of
 * the trial outlives it (short of one that leaves the group itself). */
int cfl_trial_execute(const struct cfl_data *data,
		      const struct cfl_wire_lease *lease,
		      struct cfl_wire_result *res /* OUT */,
		      struct cfl_err *err);
/* cfl_trial_execute, with a sink for the model's intermediate validation
 * scores: with CFL_LEASE_PROGRESS (and validation rows, no REFIT) the
 * model calls progress(ctx, step, score) as it trains (fcnn: each epoch;
 * gbdt: every CFL_MODEL_REPORT_ROUNDS rounds; other models never); a
 * non-zero return stops the fit there, a model error "pruned at step N".
 * progress NULL: exactly cfl_trial_execute. */
int cfl_trial_execute_progress(const struct cfl_data *data,
			       const struct cfl_wire_lease *lease,
			       int (*progress)(void *ctx, size_t step, double score),
			       void *ctx, struct cfl_wire_result *res /* OUT */,
			       struct cfl_err *err);
void cfl_trial_result_release(struct cfl_wire_result *res);

/* Serves one coordinator over fd (blocking): sends HELLO (name, 1 slot),
 * then answers each LEASE with a RESULT until SHUTDOWN, EOF, or max_trials
 * trials (0: no limit).  A CFL_LEASE_COMMAND lease runs its command only
 * when allow_commands is set; otherwise its RESULT is a model error
 * ("refused: ...") and nothing runs.  Returns 0 on a clean end, -1 with err
 * on an I/O or protocol error.  Used by forked children. */
int cfl_worker_serve(int fd, const struct cfl_data *data, const char *name,
		     size_t max_trials, int allow_commands, struct cfl_err *err);

/* Limits BLAS to n threads in this process (OPENBLAS_NUM_THREADS and
 * cfl_model_set_threads).  Call in each child before it runs a model. */
void cfl_worker_set_threads(int n);

/* ---- pool: the coordinator's API (ask-tell) ---- */

struct cfl_pool_opts {
	const struct cfl_data *data;	/* loaded before the pool forks */
	struct cfl_store *store;	/* NULL: keep nothing (tests, benches) */
	int64_t run_id;			/* the run the trials belong to */
	size_t n_local;			/* forked local workers (J); may be 0
					 * when other peers join */
	int threads_per_trial;		/* BLAS threads per trial [1] */
	double trial_timeout;		/* seconds; 0: none [0] */
	int max_retries;		/* retries of a failed trial [1] */
	size_t trials_per_worker;	/* a child runs this many trials then
					 * exits; 0: no limit; 1: fork per trial */
	double commit_interval;		/* group store commits for up to this
					 * many seconds [0.02]; 0: commit every
					 * change at once */
	size_t commit_max;		/* ... or this many results [256] */
	double tick;			/* cfl_pool_wait returns CFL_POOL_TICK
					 * at least this often (s); 0: never */
	size_t n_metrics;
	enum cfl_metric_id metrics[CFL_WIRE_MAX_METRICS];
	/* Whether CFL_LEASE_COMMAND trials may be submitted and run by the
	 * forked children [0].  Only a pool whose trials come from this user's
	 * own command line sets it (a local or MPI `cfl tune --command`); a
	 * remote worker's pool never does, since its leases come from a
	 * network peer. */
	int allow_commands;
	/* Whether results may carry a model's text (CFL_LEASE_KEEP_MODEL
	 * trials) [0]: a RESULT frame may then be CFL_WIRE_MAX_MODEL bytes
	 * larger than this run's predictions make one. */
	int keep_models;
	/* Intermediate scores of running trials (leases with
	 * CFL_LEASE_PROGRESS), called as their PROGRESS frames come, from
	 * cfl_pool_wait: 1 prunes the trial (stopped as cfl_pool_cancel does;
	 * it ends PRUNED with reason "pruned at step N", its step and score in
	 * the store's trial_pruned); 0 lets it go on; -1 is a fatal error
	 * (err filled).  NULL: PROGRESS frames are dropped. */
	int (*on_progress)(void *ctx, int64_t trial_id, void *user, size_t step,
			   double score, struct cfl_err *err);
	void *progress_ctx;
};

/* Fills o with the defaults above (no data, no store, J = online cores). */
void cfl_pool_opts_init(struct cfl_pool_opts *o);

struct cfl_pool;

/* Creates the pool and forks its n_local workers now (call after the data
 * is loaded and before any BLAS call: children inherit the data
 * copy-on-write and start with one BLAS thread).  Returns NULL with err on
 * a fork or socket failure (children already forked are killed). */
struct cfl_pool *cfl_pool_new(const struct cfl_pool_opts *o,
			      struct cfl_err *err);

/* Queues a trial (FIFO).  It will be leased when a slot is free (a
 * CFL_LEASE_COMMAND trial only to a peer whose ops have runs_commands).
 * Returns 0, or -1 with err (duplicate trial_id, out of memory, a command
 * trial in a pool without opts.allow_commands). */
int cfl_pool_submit(struct cfl_pool *p, const struct cfl_trial_spec *t,
		    struct cfl_err *err);

/* A trial that reached a final state. */
struct cfl_pool_event {
	int64_t trial_id;
	void *user;			/* from the spec */
	enum cfl_trial_status status;	/* DONE, FAILED or POISON */
	int attempt;			/* the attempt that decided it */
	const char *worker;		/* peer name, e.g. "local:2" */
	const struct cfl_wire_result *result;	/* DONE: metrics, predictions,
						 * timings; valid until the next
						 * cfl_pool_wait */
	const char *reason;		/* FAILED / POISON: the last failure */
};

enum {
	CFL_POOL_IDLE = 0,	/* nothing queued or running: submit more or stop */
	CFL_POOL_EVENT = 1,	/* ev holds a finished trial */
	CFL_POOL_TICK = 2,	/* opts.tick elapsed (redraw progress) */
	CFL_POOL_INTERRUPTED = 3,	/* cfl_pool_interrupt was called */
};

/* Runs the loop until something happens.  A failed attempt (the worker
 * died: signal, exit, --trial-timeout, lost connection; or the model
 * reported an error) is recorded in the store and retried up to
 * max_retries times; then the trial ends POISON (its last attempt killed
 * the worker) or FAILED (the model failed).  Returns CFL_POOL_EVENT with ev
 * filled, CFL_POOL_IDLE (pending store writes are committed first),
 * CFL_POOL_TICK, or CFL_POOL_INTERRUPTED: then every child was killed,
 * pending writes committed, running trials and the run marked interrupted
 * in the store, and the pool accepts nothing more.  Returns -1 with err on
 * a store error or when no worker can be started; the pool must be freed.
 * Failed attempts that will be retried are not events. */
int cfl_pool_wait(struct cfl_pool *p, struct cfl_pool_event *ev /* OUT */,
		  struct cfl_err *err);

/* Counts for a progress line. */
struct cfl_pool_stats {
	size_t submitted, queued, running, done, failed;	/* failed: + poison,
								 * cancelled, pruned */
	size_t attempts_failed;		/* failed attempts, retried or not */
	size_t n_slots;			/* slots of live peers */
};
void cfl_pool_get_stats(const struct cfl_pool *p,
			struct cfl_pool_stats *out /* OUT */);

/* Stops the running attempt of trial trial_id at once, for a caller that
 * no longer wants it (a remote worker whose coordinator cancelled it): the
 * peer running it is stopped as at --trial-timeout.  A local child is
 * killed (and replaced when trials are queued, as after a crash); what it
 * sent and was not read yet is dropped.  A multi-slot peer is sent CANCEL
 * and kept; a result it sends anyway still wins (first result wins).  The
 * trial ends CANCELLED with reason "cancelled", never retried, recorded in
 * the store; a later cfl_pool_wait gives it as an event.  May be called
 * between waits or from a source's on_ready.  Returns 1 when it stopped
 * the trial; 0 when there was nothing to stop (trial_id unknown, still
 * queued, or finished: its event comes as usual); -1 with err on a store
 * error or out of memory (the pool must then be closed). */
int cfl_pool_cancel(struct cfl_pool *p, int64_t trial_id, struct cfl_err *err);

/* Async-signal-safe: asks the loop to stop (Ctrl-C); the next or current
 * cfl_pool_wait returns CFL_POOL_INTERRUPTED. */
void cfl_pool_interrupt(struct cfl_pool *p);
/* cfl_pool_interrupt for a run that is over (its time limit), not stopped
 * by the user: TCP workers are told SHUTDOWN before their connections go,
 * so they exit 0 instead of reconnecting for --retry-for (which serves a
 * Ctrl-C'd run that may be resumed).  Async-signal-safe too. */
void cfl_pool_interrupt_over(struct cfl_pool *p);

/* Commits pending store writes (results grouped by commit_interval): after
 * it returns 0, every result given as an event is durable.  The caller may
 * write to the store between waits (a candidate's score): such writes may
 * join the pool's open transaction and become durable with it. */
int cfl_pool_flush(struct cfl_pool *p, struct cfl_err *err);

/* Commits pending writes, sends SHUTDOWN to every peer, waits for local
 * children (killing those that linger) and frees everything.  NULL is a
 * no-op.  Returns 0, or -1 when the final commit failed (err). */
int cfl_pool_close(struct cfl_pool *p, struct cfl_err *err);

/* ---- transports: how a new kind of peer joins the pool ----
 *
 * A peer is one connection (a fd carrying wire frames both ways) with
 * n_slots trials at once.  The pool owns reading, writing, framing, lease
 * bookkeeping, timeouts and the store; a transport provides the ops below
 * and calls cfl_pool_add_peer.  Frames a peer sends before the pool knows
 * its slots (HELLO) are handled by the pool: a peer added with n_slots 0
 * gets its slots from its HELLO.  Extra fds (a listening socket) join the
 * poll set with cfl_pool_add_source.
 */
struct cfl_peer;

struct cfl_peer_ops {
	const char *kind;	/* "fork", "tcp", "mpi" */
	/* Optional: sees every received frame first (check a MAC, run an
	 * authentication handshake).  Returns 0: the pool handles the frame;
	 * 1: consumed; -1: drop the peer (err says why). */
	int (*on_frame)(struct cfl_peer *peer, const struct cfl_wire_frame *f,
			struct cfl_err *err);
	/* Optional: the pool appended one frame at offset off of out (flags
	 * passed to cfl_wire_encode come from send_flags). */
	int (*on_send)(struct cfl_peer *peer, struct cfl_buf *out, size_t off,
		       struct cfl_err *err);
	/* Optional: reads / writes the peer's bytes instead of read(2) /
	 * send(2) on fd (a TLS session).  Contract of recv / send: > 0 bytes,
	 * 0 at EOF (read), -1 with errno (EAGAIN: again once fd is ready).
	 * A read hook is called until EAGAIN each time fd is readable; a
	 * write that failed with EAGAIN is repeated with the same bytes
	 * first (perhaps more after them, perhaps moved). */
	ssize_t (*read)(struct cfl_peer *peer, void *buf, size_t n);
	ssize_t (*write)(struct cfl_peer *peer, const void *buf, size_t n);
	/* Stops the peer now (fork: SIGKILL the child). */
	void (*kill)(struct cfl_peer *peer);
	/* The peer's fd reached EOF or failed, or it was killed: write why its
	 * running trials failed ("signal SIGSEGV", "exit 3", "connection
	 * lost") and release the transport's state (close nothing: the pool
	 * closes fd).  On entry reason holds why the pool dropped the peer
	 * mid-run ("no word from worker for N s"), "worker lost" when it went
	 * by itself, or "" when the pool is closing or interrupted. */
	void (*reap)(struct cfl_peer *peer, char *reason, size_t cap);
	/* On --trial-timeout or cfl_pool_cancel: 1 kills the peer (a forked
	 * child running one trial); 0 sends CANCEL and keeps it (a multi-slot
	 * remote worker). */
	int kill_on_timeout;
	/* 1 (with kill_on_timeout): a pruned trial is sent CANCEL, which the
	 * peer honours at its model's next report (a forked worker reads it
	 * there: cfl_worker_serve), and the peer is kept; so a search that
	 * prunes most of its candidates does not fork a worker for each. */
	int prunes_in_place;
	/* 1: the peer may be leased CFL_LEASE_COMMAND trials (a forked child;
	 * an MPI rank, the user's own process started by the user's
	 * launcher).  0: never (a TCP worker: a network peer must not be
	 * asked to run a shell command, and refuses one). */
	int runs_commands;
};

/* Public fields of a peer (the pool keeps more behind it). */
struct cfl_peer {
	const struct cfl_peer_ops *ops;
	void *impl;		/* the transport's state */
	int fd;
	char name[64];		/* "local:3", "host:port" */
	size_t n_slots;
	uint16_t send_flags;	/* e.g. CFL_WIRE_F_MAC */
	size_t max_leases;	/* the peer leaves after this many leases (a
				 * child with --trials-per-worker); 0: no limit */
	double heartbeat;	/* send it a HEARTBEAT every this many s; 0: never */
	double silence;		/* drop it (its leases fail: "no word from
				 * worker for N s") when nothing came from it
				 * for this many s; 0: never (fork: EOF suffices) */
	struct cfl_pool *pool;
	int paused;		/* not read for now (the bytes held for all
				 * peers' frames are at their limit): its
				 * silence is not its own */
	int receiving;		/* a large frame is coming in: the pool
				 * bounds how slowly, so a transport's own
				 * silence rule (no whole frame for a while)
				 * need not */
};

/* Adds a peer on fd (non-blocking is set here) with n_slots (0: wait for
 * its HELLO).  Returns the peer, or NULL with err. */
struct cfl_peer *cfl_pool_add_peer(struct cfl_pool *p, int fd,
				   const struct cfl_peer_ops *ops, void *impl,
				   size_t n_slots, const char *name,
				   struct cfl_err *err);
/* Sends a message to a peer (queued; written when the fd is writable). */
int cfl_peer_send(struct cfl_peer *peer, const struct cfl_wire_msg *m,
		  struct cfl_err *err);
/* Polls fd too; on_ready(pool, ctx) is called when it is readable. */
int cfl_pool_add_source(struct cfl_pool *p, int fd,
			int (*on_ready)(struct cfl_pool *p, void *ctx,
					struct cfl_err *err),
			void *ctx, struct cfl_err *err);
/* Where the pool says what it drops (a RESULT for a lease the peer does not
 * hold, a result with a non-finite prediction or metric); log NULL: say
 * nothing (the default). */
void cfl_pool_set_log(struct cfl_pool *p,
		      void (*log)(void *ctx, const char *msg), void *ctx);
/* The options the pool was made with (data, store, threads, ...). */
const struct cfl_pool_opts *cfl_pool_opts(const struct cfl_pool *p);
/* Whether trials are queued (a transport may stop accepting otherwise). */
size_t cfl_pool_n_queued(const struct cfl_pool *p);
/* Calls fn(fd, ctx) for every descriptor the pool owns (peer sockets,
 * sources, its wake-up pipe): a forked child closes them all so that only
 * the coordinator holds the other ends (EOF then means death). */
void cfl_pool_each_fd(struct cfl_pool *p, void (*fn)(int fd, void *ctx),
		      void *ctx);

/* The fork transport: starts one local worker child as a peer (kind
 * "fork").  The pool calls it to keep opts.n_local children alive while
 * trials are queued. */
int cfl_fork_spawn(struct cfl_pool *p, struct cfl_err *err);

#endif
