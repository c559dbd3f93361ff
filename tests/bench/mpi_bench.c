/*
 * No-op trial throughput through the MPI backend (tests/bench/bench_mpi.sh).
 * Under `mpirun -n N` it runs exactly what `cfl repeat` runs (rank 0 a
 * coordinator without local workers, the other ranks workers with J slots
 * each, frames through the MPI pumps) on trials that do nothing, without
 * the store; run alone it is the local pool with J slots, for the ratio.
 *
 *   mpi_bench DATA N J     prints "N no-op trials: S s, R trials/s (BACKEND)"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cfl/backend.h"
#include "cfl/data.h"
#include "cfl/metrics.h"
#include "cfl/relay.h"
#include "cfl/run.h"

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* Starts the MPI job when launched by mpirun or srun, as cfl repeat does:
 * returns 1 in rank 0's coordinator, 0 when run alone; the pump and the
 * worker ranks exit here. */
static int start_mpi(struct cfl_mpi_job *j, const struct cfl_data_opts *d,
		     struct cfl_data *data, long jobs)
{
	static const volatile sig_atomic_t never;
	static struct cfl_relay *volatile relay;
	struct cfl_launch l;
	struct cfl_err err;
	int role, status = 0, rc;

	cfl_launch_detect(&l, env_get);
	if (!l.launcher)
		return 0;
	role = cfl_mpi_job_start(j, &l, d, data, jobs, &err);
	if (role < 0) {
		fprintf(stderr, "mpi_bench: %s\n", err.msg);
		if (j->fail == CFL_MPI_FAIL_ABORT)
			cfl_mpi_abort(&j->mpi, 1);
		exit(1);
	}
	if (role == CFL_MPI_PUMP) {
		rc = cfl_mpi_bridge(&j->mpi, j->fds, j->child, 10, &never, &status, &err);
		if (rc < 0 || rc == 2) {
			fprintf(stderr, "mpi_bench: %s\n", err.msg);
			cfl_mpi_abort(&j->mpi, 1);
		}
		cfl_mpi_finalize(&j->mpi, NULL);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}
	if (role == CFL_MPI_WORKER) {
		rc = cfl_mpi_serve(j, "bench", NULL, NULL, &relay, &err);
		if (rc < 0)
			fprintf(stderr, "mpi_bench: %s\n", err.msg);
		_exit(rc == CFL_RELAY_OVER ? 0 : 1);
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct cfl_mpi_job j;
	struct cfl_data_opts d;
	struct cfl_data data;
	struct cfl_pool_opts po;
	struct cfl_pool *pool;
	struct cfl_err err;
	long n, jobs;
	double t0, t1;
	int r, mpi;

	if (argc != 4 || (n = atol(argv[2])) < 1 || (jobs = atol(argv[3])) < 1) {
		fprintf(stderr, "usage: mpi_bench DATA N J\n");
		return 2;
	}
	cfl_data_opts_init(&d);
	d.path = argv[1];
	memset(&data, 0, sizeof(data));
	memset(&j, 0, sizeof(j));
	mpi = start_mpi(&j, &d, &data, jobs);
	/* under mpi rank 0 loaded it while MPI started */
	if (!j.data_loaded && cfl_data_load(&data, &d, &err)) {
		fprintf(stderr, "mpi_bench: %s\n", err.msg);
		return 1;
	}
	cfl_pool_opts_init(&po);
	po.data = &data;
	po.n_local = mpi ? 0 : (size_t)jobs;
	po.n_metrics = cfl_metric_defaults(data.train.n_classes, po.metrics,
					   CFL_WIRE_MAX_METRICS);
	pool = cfl_pool_new(&po, &err);
	if (!pool || (mpi && cfl_mpi_job_attach(&j, pool, &d, &po, "bench#1", 1,
						NULL, NULL, &err))) {
		fprintf(stderr, "mpi_bench: %s\n", err.msg);
		return 1;
	}
	t0 = cfl_now();
	for (long i = 0; i < n; i++) {
		struct cfl_trial_spec s;

		memset(&s, 0, sizeof(s));
		s.trial_id = i + 1;
		s.model = "baseline";
		s.seed = (uint64_t)i;
		s.fold = -1;
		s.flags = CFL_LEASE_NOOP;
		if (cfl_pool_submit(pool, &s, &err)) {
			fprintf(stderr, "mpi_bench: %s\n", err.msg);
			return 1;
		}
	}
	for (long done = 0; done < n;) {
		struct cfl_pool_event ev;

		r = cfl_pool_wait(pool, &ev, &err);
		if (r < 0) {
			fprintf(stderr, "mpi_bench: %s\n", err.msg);
			return 1;
		}
		if (r == CFL_POOL_EVENT)
			done++;
		else if (r != CFL_POOL_TICK)
			break;
	}
	t1 = cfl_now();
	printf("%ld no-op trials: %.3f s, %.0f trials/s (%s)\n", n, t1 - t0,
	       n / (t1 - t0), mpi ? "mpi" : "local");
	cfl_pool_close(pool, NULL);
	cfl_mpi_job_release(&j);
	cfl_data_release(&data);
	return 0;
}
