/*
 * The backend of a command that runs a pool (repeat, tune): --backend
 * local|tcp|mpi, detected from mpirun's or srun's environment when not
 * given, and the MPI backend itself.  Under MPI every rank runs the same
 * command line: rank 0's child is the coordinator (the only process that
 * opens the store and prints), each other rank's child is a worker with its
 * own fork pool, and each rank's MPI process only pumps frames
 * (src/run/mpi.c).  Built on the MPI job of backend.h (src/run/mpi_job.c).
 */
#ifndef CFL_CLI_CLUSTER_H
#define CFL_CLI_CLUSTER_H

#include "cli.h"

#include "cfl/backend.h"
#include "cfl/run.h"

/* Option id: between the data options and CLI_OPT_FIRST_FREE. */
enum {
	CLI_OPT_BACKEND = 1060,
};

#define CLI_CLUSTER_LONGOPTS                                                 \
	{ "backend", required_argument, 0, CLI_OPT_BACKEND }

/* The --help lines of the option above. */
extern const char cli_cluster_help[];

struct cli_cluster {
	enum cfl_backend requested;	/* --backend, AUTO when not given */
	enum cfl_backend backend;	/* the one in use, after start */
	struct cfl_mpi_job job;	/* the MPI job (src/run/mpi_job.c) */
	int data_loaded;		/* rank 0 loaded the caller's data */
	const char *cmd;	/* "repeat", "tune": for messages */
};

void cli_cluster_init(struct cli_cluster *c);
/* Handles option c when it is --backend: 1 handled, 0 not ours, -1 after
 * printing a usage error for cmd. */
int cli_cluster_option(struct cli_cluster *c, const char *cmd, int opt,
		       const char *arg);

/* Whether the backend will be mpi (asked for, or detected from mpirun's or
 * srun's environment); decides nothing and prints nothing. */
int cli_cluster_wants_mpi(const struct cli_cluster *c);
/* This process's rank in the MPI job it will start, as the launcher's
 * environment tells before MPI starts; -1 when the backend will not be mpi
 * or the launcher is not one cfl knows.  A worker rank (> 0) takes the run
 * from rank 0: it needs neither DATA nor, with --resume NAME, the
 * database. */
long cli_cluster_env_rank(const struct cli_cluster *c);
/* Why `--resume NAME` without DATA is refused when cfl cannot tell the
 * ranks apart before MPI starts (a launcher it does not know). */
extern const char cli_cluster_resume_msg[];

/* Chooses the backend (saying so on stderr when it was detected) and, for
 * mpi, starts it: every rank initialises MPI while rank 0 loads d into
 * *data (NULL: the command needs no dataset, e.g. tune --command), rank 0
 * broadcasts the encoded parts (cfl_data_pack_parts; no other rank reads
 * DATA), and each rank forks.  Returns -1 when the caller goes on with its
 * command: locally (data untouched), or as the coordinator of an MPI job
 * (then *num_jobs is 0: rank 0 runs no trial itself, and c->data_loaded
 * says *data is loaded: the caller must not load it again, and releases
 * it).  Otherwise returns the exit code the caller returns at once: a
 * usage or start-up error (a data error is printed as a local run prints
 * it), or a worker rank's finished work.  The MPI process of a rank never
 * returns from here: it pumps frames until its child is done, then exits.
 * num_jobs_set: whether --num-jobs was given (else a worker rank takes the
 * node's cores divided by the ranks on the node). */
int cli_cluster_start(struct cli_cluster *c, const char *cmd,
		      const struct cfl_data_opts *d, struct cfl_data *data,
		      int has_listen, long *num_jobs, int num_jobs_set);

/* On rank 0 of an MPI job, after cfl_pool_new: joins every worker rank to
 * the pool as a peer (its HELLO gives its slots; it is answered with a
 * WELCOME carrying the config, the dataset file's SHA-256 and the
 * broadcast blob's size).  A no-op (0)
 * for the other backends.  Returns 0, or 1 after printing why. */
int cli_cluster_attach(struct cli_cluster *c, struct cfl_pool *pool,
		       const struct cfl_data_opts *d,
		       const struct cfl_pool_opts *po, const char *run_key,
		       double heartbeat);

/* The launcher to name in a "finish it with" hint: "mpirun -n 3 " (or
 * "srun -n 3 ") when the run is rank 0 of an MPI job, else "".  Writes at
 * most cap bytes into buf and returns buf. */
const char *cli_cluster_resume_prefix(const struct cli_cluster *c, char *buf,
				      size_t cap);

/* After cfl_pool_close: frees what start and attach kept. */
void cli_cluster_stop(struct cli_cluster *c);

#endif
