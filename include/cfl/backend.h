/*
 * Where the trials of a run execute: the local fork pool, remote TCP workers,
 * or the ranks of an MPI job (mpirun, or Slurm's srun).  Two parts:
 *
 * - the choice of backend (src/run/backend.c): `--backend local|tcp|mpi`, or
 *   detected from the launcher's environment; pure logic, no MPI, testable;
 * - the MPI transport (src/run/mpi.c, the only file that includes mpi.h):
 *   rank 0 coordinates, other ranks are workers.  It moves the pool's
 *   encoded frames as opaque byte messages between rank 0 and each worker
 *   rank, and broadcasts the dataset once, checked by SHA-256.  In a build
 *   without MPI every cfl_mpi_* call fails with a message that says how to
 *   build it in.
 *
 * Nothing here prints or exits.  A trial never runs in a process that has
 * called MPI: the MPI process of a rank only pumps bytes (cfl_mpi_bridge)
 * between MPI and a forked child that runs the coordinator or the worker.
 */
#ifndef CFL_BACKEND_H
#define CFL_BACKEND_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "cfl/core.h"
#include "cfl/run.h"

/* ---- choosing the backend ---- */

enum cfl_backend {
	CFL_BACKEND_AUTO = 0,	/* not chosen: detect */
	CFL_BACKEND_LOCAL,
	CFL_BACKEND_TCP,
	CFL_BACKEND_MPI,
};

/* "local", "tcp", "mpi" (or "auto" for CFL_BACKEND_AUTO). */
const char *cfl_backend_name(enum cfl_backend b);
/* Parses a --backend value: 0 and *out set, or -1 with "unknown backend
 * 'x' (expected local, tcp or mpi)" in err. */
int cfl_backend_parse(const char *s, enum cfl_backend *out /* OUT */,
		      struct cfl_err *err);

/* What the environment says about the launcher that started this process. */
struct cfl_launch {
	const char *launcher;	/* "mpirun", "srun", or NULL when none */
	long rank, size;	/* this process's rank and the job's size */
	long local_size;	/* ranks on this node, 0 when unknown */
};

/* Reads Open MPI's (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_SIZE) and Slurm's
 * (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_ID, SLURM_NTASKS_PER_NODE or
 * SLURM_STEP_TASKS_PER_NODE) variables through get (getenv, or a fake in
 * tests).  A launcher is reported only for a job of two ranks or more: a
 * one-rank job, or the batch script of an sbatch allocation (no step id), is
 * not a cluster run.  Malformed values count as absent.  Never fails. */
void cfl_launch_detect(struct cfl_launch *l /* OUT */,
		       const char *(*get)(const char *name));

/* The backend to use: `requested` when it is not AUTO; otherwise mpi when
 * a launcher was detected, tcp when the command listens for workers
 * (has_listen), local else.  *detected is set to 1 when mpi was chosen from
 * the environment (the caller says so on stderr).  Fails (-1 with err) when
 * mpi is chosen, explicitly or detected, in a build without MPI: the message
 * says how to build it in, or how to run locally instead. */
int cfl_backend_choose(enum cfl_backend requested, const struct cfl_launch *l,
		       int has_listen, enum cfl_backend *out /* OUT */,
		       int *detected /* OUT */, struct cfl_err *err);

/* The default --jobs of a worker rank: the node's cores divided by the ranks
 * on the node (at least 1); n_cores when local_size is unknown (<= 0). */
long cfl_backend_default_jobs(long n_cores, long local_size);

/* ---- the MPI transport ---- */

/* 1 when this cfl was built with MPI, else 0. */
int cfl_mpi_built_in(void);

/* The message to give when MPI is asked for but not built in. */
extern const char cfl_mpi_missing_msg[];

/* The size cap of one dataset blob (bytes): a bigger file is refused. */
#define CFL_MPI_MAX_BLOB ((size_t)1 << 32)

/* This process's place in the MPI job. */
struct cfl_mpi {
	int rank, size;		/* in MPI_COMM_WORLD */
	int local_rank, local_size;	/* among the ranks on this node */
	int initialized;
};

/* Initialises MPI (once per process).  Returns 0 with m filled, or -1 with
 * err (MPI missing from the build, or MPI_Init failing). */
int cfl_mpi_init(struct cfl_mpi *m /* OUT */, struct cfl_err *err);
/* Shuts MPI down after every rank is done; 0 or -1 with err.  A no-op when
 * MPI was never initialised. */
int cfl_mpi_finalize(struct cfl_mpi *m, struct cfl_err *err);
/* Ends the whole job at once (MPI_Abort) with exit code `code`; used when a
 * rank cannot go on and the others would wait for it forever. */
void cfl_mpi_abort(struct cfl_mpi *m, int code);

/* Broadcast of one blob (a dataset file) from rank 0, collective: every
 * rank calls it.  On rank 0, blob and sha256 are inputs (sha256 of blob);
 * on other ranks they are outputs: blob receives the bytes and sha256 the
 * digest rank 0 announced, and the bytes are checked against it.  Returns 0,
 * or -1 with err ("dataset broadcast: sha-256 mismatch ...", a blob over
 * CFL_MPI_MAX_BLOB, out of memory).  On a failure at any rank every rank
 * returns -1, so no rank is left waiting. */
int cfl_mpi_bcast_blob(struct cfl_mpi *m, struct cfl_buf *blob,
		       unsigned char sha256[32], struct cfl_err *err);

/* Point-to-point messages of encoded frames (opaque bytes).
 * cfl_mpi_send queues a copy of the bytes and returns at once (never
 * blocks on the receiver); cfl_mpi_flush waits until every queued send is
 * done.  cfl_mpi_recv waits up to timeout seconds (0: just look) for a
 * message from `from` (-1: any rank): 1 with *src and frame set (frame's
 * contents replaced), 0 when none came, -1 with err on failure or on a
 * message over max_len bytes (it is received and dropped). */
int cfl_mpi_send(struct cfl_mpi *m, int to, const void *frame, size_t len,
		 struct cfl_err *err);
int cfl_mpi_flush(struct cfl_mpi *m, struct cfl_err *err);
int cfl_mpi_recv(struct cfl_mpi *m, int from, int *src /* OUT */,
		 struct cfl_buf *frame /* OUT */, size_t max_len,
		 double timeout, struct cfl_err *err);

/* ---- the bridge: one MPI process per rank pumping bytes for its child ----
 *
 * The MPI process of every rank forks a child (cfl_mpi_fork_role) that does
 * the rank's work and never calls MPI: on rank 0 the coordinator, which sees
 * each worker rank as a connected stream socket; on a worker rank the worker
 * with its own fork pool, which sees rank 0 as a connected stream socket.
 * The parent runs cfl_mpi_bridge: bytes written by the child on socket i go
 * to rank i as MPI messages in order, and the other way round.  The
 * encoded frames of the pool protocol travel unchanged. */

/* Forks the rank's child.  In the child: returns 0, *fds holds the child's
 * sockets (on rank 0: fds[r] talks to worker rank r, r = 1..size-1, fds[0]
 * = -1; on a worker rank: fds[0] talks to rank 0) and *pid is 0.  In the
 * parent: returns 0 with *pid the child's pid and *fds the parent's ends.
 * The child gets SIGTERM when the parent dies (a lost rank ends the job).
 * -1 with err when the sockets or the fork fail.  The caller frees *fds. */
int cfl_mpi_fork_role(struct cfl_mpi *m, int **fds /* OUT */,
		      pid_t *pid /* OUT */, struct cfl_err *err);

/* Runs the parent's pump until the child has exited and every peer has
 * closed its side, then returns 0 with the child's wait status in *status.
 * A peer closing (a worker's child exiting) is passed on to the child as
 * EOF on that socket; the child exiting closes every peer's socket.  On
 * worker ranks, when rank 0 has closed and the child has not exited after
 * grace seconds it is sent SIGTERM, then SIGKILL.  The caller's signal
 * handler should forward SIGTERM and SIGINT to the child and set *stop:
 * then the pump returns 1 as soon as the child has exited, without waiting
 * for peers that may be dead (the caller must not call MPI_Finalize then).
 * On rank 0, when the child has exited but some worker ranks have not
 * closed their side grace seconds later (stopped or hung: the coordinator
 * dropped them for silence), returns 2 with *status set and err naming
 * them; MPI_Finalize would wait for them forever, so the caller ends the
 * job with cfl_mpi_abort.  -1 with err on an MPI or socket failure (the
 * caller then aborts the job). */
int cfl_mpi_bridge(struct cfl_mpi *m, int *fds, pid_t child, double grace,
		   const volatile sig_atomic_t *stop, int *status /* OUT */,
		   struct cfl_err *err);

/* ---- the MPI peers (src/run/mpi_peer.c): what runs in the children ----
 *
 * Rank 0's coordinator sees each worker rank as a pool peer on its socket
 * (kind "mpi": multi-slot, sent CANCEL at --trial-timeout, may run command
 * trials: ranks are the user's own processes); a worker rank serves rank 0
 * with the relay (relay.h) over its socket, as `cfl worker` does over TCP
 * but without reconnecting (a lost rank ends an MPI job; --resume
 * finishes the run). */

struct cfl_pool;

/* Rank 0's view of the worker ranks. */
struct cfl_mpi_coord {
	/* set by the caller */
	unsigned char sha256[32];	/* the dataset's (its parts were
					 * broadcast): WELCOME names it */
	uint64_t data_size;		/* the broadcast blob's size */
	const char *config;		/* WELCOME's config text (relay.h) */
	double heartbeat;		/* s between HEARTBEATs to each rank; a
					 * rank silent for 5 of them is dropped */
	/* what a person should read ("worker rank 2 stopped answering"); may
	 * be NULL */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
	/* state */
	struct cfl_pool *pool;
	size_t n_alive;			/* worker ranks still connected */
};

/* Joins worker ranks 1..n_ranks-1 to pool as peers on fds[r] (the pool
 * owns them then: fds[r] becomes -1).  Each rank's HELLO gives its slots
 * and is answered with a WELCOME from c.  When every rank was dropped for
 * silence mid-run, the pool is interrupted (no one is left to run the
 * rest).  Returns 0, or -1 with err. */
int cfl_mpi_attach(struct cfl_mpi_coord *c, struct cfl_pool *pool, int *fds,
		   int n_ranks, struct cfl_err *err);

/* A worker rank bound to fewer cores than its jobs workers (mpirun binds
 * ranks when it does not oversubscribe) is let onto every core, so its
 * workers do not share those few. */
void cfl_mpi_widen_affinity(long jobs);

/* ---- an MPI job's start (src/run/mpi_job.c) ----
 *
 * Every rank runs the same command line.  cfl_mpi_job_start initialises
 * MPI while rank 0 loads the dataset in a thread, broadcasts its encoded
 * parts (no other rank reads DATA) and forks each rank's child: the
 * caller's process becomes the rank's pump (cfl_mpi_bridge), rank 0's
 * child the coordinator, a worker rank's child serves rank 0
 * (cfl_mpi_serve). */

struct cfl_data;
struct cfl_data_opts;
struct cfl_relay;

/* How a start failed: what the caller says, on which rank. */
enum cfl_mpi_fail {
	CFL_MPI_FAIL_NONE = 0,
	CFL_MPI_FAIL_SAY,	/* err, on this rank */
	CFL_MPI_FAIL_RANK,	/* err, naming this rank */
	CFL_MPI_FAIL_DATA,	/* rank 0 could not load the data: err, as a
				 * local run says it */
	CFL_MPI_FAIL_QUIET,	/* another rank says why */
	CFL_MPI_FAIL_SIZE,	/* fewer than 2 ranks: err (a usage error), on
				 * rank 0 only */
	CFL_MPI_FAIL_ABORT,	/* after the broadcast: err naming this rank,
				 * then cfl_mpi_abort (the others wait) */
};

struct cfl_mpi_job {
	struct cfl_mpi mpi;
	int *fds;		/* see cfl_mpi_fork_role */
	pid_t child;		/* in the pump: the rank's child; 0 in it */
	struct cfl_mpi_coord coord;	/* rank 0: the worker ranks as peers */
	int data_loaded;	/* rank 0 loaded the caller's data */
	struct cfl_buf blob;	/* a worker rank's copy of the parts */
	long jobs;		/* a worker rank's local workers */
	char *config;		/* rank 0: WELCOME's config (owned) */
	enum cfl_mpi_fail fail;	/* why the start failed */
};

enum cfl_mpi_role {
	CFL_MPI_PUMP = 0,	/* the rank's MPI process: run cfl_mpi_bridge
				 * for j->child, then exit */
	CFL_MPI_COORDINATOR,	/* rank 0's child: the command goes on, with
				 * no local workers; cfl_mpi_job_attach after
				 * cfl_pool_new */
	CFL_MPI_WORKER,		/* a worker rank's child: cfl_mpi_serve, then
				 * exit */
};

/* Starts the job of launch l (cfl_launch_detect's; the environment tells
 * which rank loads early) for data options d: rank 0 loads *data (NULL:
 * the command has no dataset, e.g. tune --command; empty parts go out).
 * jobs: a worker rank's local workers (0: its node's cores divided by the
 * ranks on the node).  Returns the role (above; j->data_loaded says rank
 * 0's *data is loaded: the caller releases it), or -1 with err and
 * j->fail (MPI is finalised unless j->fail is CFL_MPI_FAIL_ABORT). */
int cfl_mpi_job_start(struct cfl_mpi_job *j, const struct cfl_launch *l,
		      const struct cfl_data_opts *d, struct cfl_data *data,
		      long jobs, struct cfl_err *err);

/* Rank 0, after cfl_pool_new: joins every worker rank to pool as a peer
 * (cfl_mpi_attach), welcomed with the config of run run_key (data options
 * d, pool options po), heartbeats every heartbeat seconds; log as in
 * struct cfl_mpi_coord.  Returns 0, or -1 with err. */
int cfl_mpi_job_attach(struct cfl_mpi_job *j, struct cfl_pool *pool,
		       const struct cfl_data_opts *d,
		       const struct cfl_pool_opts *po, const char *run_key,
		       double heartbeat, void (*log)(void *ctx, const char *msg),
		       void *log_ctx, struct cfl_err *err);

/* A worker rank's child: serves rank 0 with a relay (relay.h) of j->jobs
 * local workers on the broadcast data, command trials allowed (rank 0 is
 * the user's own process), named name; *running holds the relay while it
 * serves (for a signal handler's cfl_relay_interrupt).  When the parts do
 * not unpack, rank 0 is sent an ERROR.  Returns what cfl_relay_serve
 * returns, or -1 with err. */
int cfl_mpi_serve(struct cfl_mpi_job *j, const char *name,
		  void (*log)(void *ctx, int important, const char *msg),
		  void *log_ctx, struct cfl_relay *volatile *running,
		  struct cfl_err *err);

/* Frees what the job holds (fds, blob, config); the caller's data is its
 * own. */
void cfl_mpi_job_release(struct cfl_mpi_job *j);

#endif
