/*
 * An MPI job's start and its children's work (see backend.h): rank 0 loads
 * the dataset in a thread while MPI starts (both take about as long), packs
 * its parts and broadcasts them; each rank forks its child; rank 0's child
 * coordinates with the worker ranks as peers (mpi_peer.c), a worker rank's
 * child serves rank 0 with the relay.  No mpi.h here (mpi.c holds the
 * transport primitives), nothing printed: the caller says what failed.
 */
#include "cfl/backend.h"
#include "cfl/data.h"
#include "cfl/net.h"
#include "cfl/relay.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- start ---- */

/* Rank 0's load, in a thread while MPI starts; joined before any fork. */
struct load_job {
	struct cfl_data *data;
	const struct cfl_data_opts *opts;
	struct cfl_err err;
	int rc;
	pthread_t th;
	int threaded;
};

static void *load_thread(void *arg)
{
	struct load_job *lj = arg;

	lj->rc = cfl_data_load(lj->data, lj->opts, &lj->err);
	return NULL;
}

/* The load is not wanted after all: waits for it and frees what it read. */
static void load_abandon(struct load_job *lj)
{
	if (!lj->threaded)
		return;
	pthread_join(lj->th, NULL);
	if (!lj->rc)
		cfl_data_release(lj->data);
	lj->threaded = 0;
}

static int job_fail(struct cfl_mpi_job *j, enum cfl_mpi_fail how)
{
	j->fail = how;
	return -1;
}

/* Rank 0: loads the data (or takes the thread's load), packs its parts
 * into blob for the broadcast (a command without data sends empty parts)
 * and their SHA-256 into blob_sha.  On failure marks the blob too big,
 * which tells the other ranks that nothing follows, and fills err. */
static int rank0_blob(struct cfl_mpi_job *j, struct load_job *lj,
		      struct cfl_buf *blob, unsigned char blob_sha[32],
		      struct cfl_err *err)
{
	struct cfl_data none;

	if (lj->data) {
		if (lj->threaded)
			pthread_join(lj->th, NULL);
		else
			lj->rc = cfl_data_load(lj->data, lj->opts, &lj->err);
		lj->threaded = 0;
		if (lj->rc) {
			*err = lj->err;
			blob->len = CFL_MPI_MAX_BLOB + 1;
			return -1;
		}
		j->data_loaded = 1;
	} else {
		memset(&none, 0, sizeof(none));
	}
	if (cfl_data_pack_parts(lj->data ? lj->data : &none, blob, err)) {
		blob->len = CFL_MPI_MAX_BLOB + 1;
		return -1;
	}
	memcpy(j->coord.sha256, lj->data ? lj->data->sha256 : none.sha256, 32);
	if (cfl_sha256(blob->data, blob->len, blob_sha, err)) {
		blob->len = CFL_MPI_MAX_BLOB + 1;
		return -1;
	}
	return 0;
}

int cfl_mpi_job_start(struct cfl_mpi_job *j, const struct cfl_launch *l,
		      const struct cfl_data_opts *d, struct cfl_data *data,
		      long jobs, struct cfl_err *err)
{
	struct load_job lj;
	unsigned char blob_sha[32] = { 0 };
	enum cfl_mpi_fail data_fail = CFL_MPI_FAIL_NONE;
	struct cfl_err derr;
	pid_t pid;

	memset(j, 0, sizeof(*j));
	cfl_buf_init(&j->blob);
	/* rank 0 (known from the launcher's environment) starts loading */
	memset(&lj, 0, sizeof(lj));
	lj.data = data;
	lj.opts = d;
	if (data && l->launcher && l->rank == 0) {
		/* MPI_Init sets environment variables (setenv: Open MPI's
		 * own, and cfl_mpi_init's OMPI_MCA_pml) while the thread
		 * loads, and libcrypto reads OPENSSL_CONF (getenv) the first
		 * time it digests, which the load does (the data's
		 * fingerprint): the two at once crashed in getenv now and then
		 * (CONF_get1_default_config_file, a segfault of rank 0).  So
		 * libcrypto starts here, on this thread, with a digest of
		 * nothing; nothing the load does reads the environment after
		 * it. */
		unsigned char none_sha[32];
		struct cfl_err ignored;

		(void)cfl_sha256("", 0, none_sha, &ignored);
		lj.threaded = pthread_create(&lj.th, NULL, load_thread, &lj) == 0;
	}
	if (cfl_mpi_init(&j->mpi, err)) {
		load_abandon(&lj);
		return job_fail(j, CFL_MPI_FAIL_SAY);
	}
	/* a rank numbered differently by MPI than by its environment */
	if (j->mpi.rank != 0)
		load_abandon(&lj);
	if (j->mpi.size < 2) {
		cfl_err_set(err, "the mpi backend needs 2 ranks or more (a "
			    "coordinator and workers), this job has %d; start it "
			    "with e.g. mpirun -n 3", j->mpi.size);
		load_abandon(&lj);
		cfl_mpi_finalize(&j->mpi, NULL);
		return job_fail(j, CFL_MPI_FAIL_SIZE);
	}
	/* the encoded parts, once, from rank 0: no other rank reads DATA */
	if (j->mpi.rank == 0 && rank0_blob(j, &lj, &j->blob, blob_sha, &derr))
		data_fail = CFL_MPI_FAIL_DATA;
	if (cfl_mpi_bcast_blob(&j->mpi, &j->blob, blob_sha, err)) {
		enum cfl_mpi_fail how = CFL_MPI_FAIL_SAY;

		if (data_fail) {
			*err = derr;
			how = data_fail;
		} else if (j->mpi.rank != 0) {
			how = strstr(err->msg, "rank 0 could not") ? CFL_MPI_FAIL_QUIET
								   : CFL_MPI_FAIL_RANK;
		}
		if (j->data_loaded) {
			cfl_data_release(data);
			j->data_loaded = 0;
		}
		cfl_buf_release(&j->blob);
		cfl_mpi_finalize(&j->mpi, NULL);
		return job_fail(j, how);
	}
	j->coord.data_size = j->blob.len;
	j->jobs = jobs > 0 ? jobs
		  : cfl_backend_default_jobs(sysconf(_SC_NPROCESSORS_ONLN),
					     j->mpi.local_size);
	if (j->jobs < 1)
		j->jobs = 1;
	if (cfl_mpi_fork_role(&j->mpi, &j->fds, &pid, err))
		return job_fail(j, CFL_MPI_FAIL_ABORT);
	if (pid > 0 || j->mpi.rank == 0) {
		/* neither the pump nor the coordinator needs the blob, nor the
		 * pump the data */
		cfl_buf_release(&j->blob);
		cfl_buf_init(&j->blob);
	}
	if (pid > 0) {
		if (j->data_loaded)
			cfl_data_release(data);
		j->data_loaded = 0;
		j->child = pid;
		return CFL_MPI_PUMP;
	}
	return j->mpi.rank == 0 ? CFL_MPI_COORDINATOR : CFL_MPI_WORKER;
}

/* ---- rank 0 ---- */

int cfl_mpi_job_attach(struct cfl_mpi_job *j, struct cfl_pool *pool,
		       const struct cfl_data_opts *d,
		       const struct cfl_pool_opts *po, const char *run_key,
		       double heartbeat, void (*log)(void *ctx, const char *msg),
		       void *log_ctx, struct cfl_err *err)
{
	struct cfl_buf config;

	cfl_buf_init(&config);
	if (cfl_run_config_format(&config, run_key, d, po, err)) {
		cfl_buf_release(&config);
		return -1;
	}
	free(j->config);
	j->config = config.data;	/* owned now */
	j->coord.config = j->config;
	j->coord.heartbeat = heartbeat;
	j->coord.log = log;
	j->coord.log_ctx = log_ctx;
	return cfl_mpi_attach(&j->coord, pool, j->fds, j->mpi.size, err);
}

/* ---- a worker rank ---- */

int cfl_mpi_serve(struct cfl_mpi_job *j, const char *name,
		  void (*log)(void *ctx, int important, const char *msg),
		  void *log_ctx, struct cfl_relay *volatile *running,
		  struct cfl_err *err)
{
	struct cfl_relay_opts o;
	struct cfl_fd_link link;
	struct cfl_relay *r;
	struct cfl_data data;
	int rc;

	cfl_fd_link_init(&link, j->fds[0]);
	/* the parts rank 0 loaded and broadcast: nothing to parse here */
	if (cfl_data_unpack_parts(&data, j->blob.data, j->blob.len, err)) {
		struct cfl_wire_msg m;
		struct cfl_err e;

		/* tell rank 0, so the run does not wait for this rank's slots */
		cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
		m.u.error.code = CFL_WIRE_E_DATA;
		m.u.error.message = err->msg;
		cfl_fd_link_relay(&link).ops->send(&link, &m, 2, &e);
		return -1;
	}
	cfl_mpi_widen_affinity(j->jobs);
	cfl_relay_opts_init(&o);
	o.name = name;
	o.peer = "rank 0";
	o.n_slots = (size_t)j->jobs;
	/* rank 0 is the user's own process, started with this rank by the
	 * user's launcher: its --command trials may run here */
	o.allow_commands = 1;
	o.data = &data;
	o.data_size = j->blob.len;
	o.log = log;
	o.log_ctx = log_ctx;
	r = cfl_relay_new(&o, err);
	if (!r) {
		cfl_data_release(&data);
		return -1;
	}
	*running = r;
	rc = cfl_relay_serve(r, cfl_fd_link_relay(&link), err);
	*running = NULL;
	cfl_relay_free(r);	/* closes the link */
	j->fds[0] = -1;
	cfl_data_release(&data);
	return rc;
}

void cfl_mpi_job_release(struct cfl_mpi_job *j)
{
	if (j->fds) {
		for (int r = 0; r < j->mpi.size; r++)
			if (j->fds[r] >= 0)
				close(j->fds[r]);
		free(j->fds);
		j->fds = NULL;
	}
	cfl_buf_release(&j->blob);
	cfl_buf_init(&j->blob);
	free(j->config);
	j->config = NULL;
	j->coord.config = NULL;
	j->coord.pool = NULL;
}
