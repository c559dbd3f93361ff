/*
 * The choice of backend: an explicit --backend, or what the launcher's
 * environment says (Open MPI's mpirun, Slurm's srun).  Pure logic: the
 * environment comes through a getter so tests can fake it, and nothing here
 * includes mpi.h (whether MPI is built in is asked of src/run/mpi.c).
 */
#include "cfl/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *cfl_backend_name(enum cfl_backend b)
{
	switch (b) {
	case CFL_BACKEND_LOCAL: return "local";
	case CFL_BACKEND_TCP: return "tcp";
	case CFL_BACKEND_MPI: return "mpi";
	default: return "auto";
	}
}

int cfl_backend_parse(const char *s, enum cfl_backend *out, struct cfl_err *err)
{
	static const enum cfl_backend all[] = {
		CFL_BACKEND_LOCAL, CFL_BACKEND_TCP, CFL_BACKEND_MPI,
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (s && strcmp(s, cfl_backend_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	return cfl_err_set(err, "unknown backend '%s' (expected local, tcp or mpi)",
			   s ? s : "");
}

/* A whole non-negative decimal number, or -1 when absent or malformed. */
static long env_long(const char *(*get)(const char *), const char *name)
{
	const char *s = get(name);
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end)
		return -1;
	return v;
}

/* Slurm writes tasks per node as "2(x3),1": the first count is this node's
 * when all nodes are alike, which is the common case; take it. */
static long slurm_tasks_per_node(const char *(*get)(const char *))
{
	const char *s = get("SLURM_STEP_TASKS_PER_NODE");
	long v;

	if (!s)
		s = get("SLURM_NTASKS_PER_NODE");
	if (!s || *s < '0' || *s > '9')
		return 0;
	v = strtol(s, NULL, 10);
	return v > 0 ? v : 0;
}

void cfl_launch_detect(struct cfl_launch *l, const char *(*get)(const char *))
{
	long rank, size;

	memset(l, 0, sizeof(*l));
	l->size = 1;
	rank = env_long(get, "OMPI_COMM_WORLD_RANK");
	size = env_long(get, "OMPI_COMM_WORLD_SIZE");
	if (rank >= 0 && size >= 2 && rank < size) {
		long local = env_long(get, "OMPI_COMM_WORLD_LOCAL_SIZE");

		l->launcher = "mpirun";
		l->rank = rank;
		l->size = size;
		l->local_size = local > 0 ? local : 0;
		return;
	}
	/* Inside an sbatch script SLURM_PROCID and SLURM_NTASKS describe the
	 * allocation but no step runs yet: only srun sets SLURM_STEP_ID. */
	rank = env_long(get, "SLURM_PROCID");
	size = env_long(get, "SLURM_NTASKS");
	if (rank >= 0 && size >= 2 && rank < size &&
	    env_long(get, "SLURM_STEP_ID") >= 0) {
		l->launcher = "srun";
		l->rank = rank;
		l->size = size;
		l->local_size = slurm_tasks_per_node(get);
	}
}

int cfl_backend_choose(enum cfl_backend requested, const struct cfl_launch *l,
		       int has_listen, enum cfl_backend *out, int *detected,
		       struct cfl_err *err)
{
	enum cfl_backend b = requested;

	*detected = 0;
	if (b == CFL_BACKEND_AUTO) {
		if (l && l->launcher) {
			b = CFL_BACKEND_MPI;
			*detected = 1;
		} else {
			b = has_listen ? CFL_BACKEND_TCP : CFL_BACKEND_LOCAL;
		}
	}
	if (b == CFL_BACKEND_MPI && !cfl_mpi_built_in()) {
		if (*detected)
			/* Running on regardless would make every rank a full
			 * local run writing the same database. */
			return cfl_err_set(err, "started by %s as rank %ld of %ld, "
					   "but %s; or pass --backend local",
					   l->launcher, l->rank, l->size,
					   cfl_mpi_missing_msg);
		return cfl_err_set(err, "--backend mpi: %s", cfl_mpi_missing_msg);
	}
	*out = b;
	return 0;
}

long cfl_backend_default_jobs(long n_cores, long local_size)
{
	long n;

	if (n_cores < 1)
		n_cores = 1;
	if (local_size <= 0)
		return n_cores;
	n = n_cores / local_size;
	return n > 0 ? n : 1;
}
