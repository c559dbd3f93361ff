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

#include "cluster.h"

#include "cfl/data.h"
#include "cfl/metrics.h"
#include "cfl/run.h"

int main(int argc, char **argv)
{
	struct cli_cluster c;
	struct cfl_data_opts d;
	struct cfl_data data;
	struct cfl_pool_opts po;
	struct cfl_pool *pool;
	struct cfl_err err;
	long n, jobs;
	double t0, t1;
	int r;

	if (argc != 4 || (n = atol(argv[2])) < 1 || (jobs = atol(argv[3])) < 1) {
		fprintf(stderr, "usage: mpi_bench DATA N J\n");
		return 2;
	}
	cli_cluster_init(&c);
	cfl_data_opts_init(&d);
	d.path = argv[1];
	memset(&data, 0, sizeof(data));
	r = cli_cluster_start(&c, "bench", &d, &data, 0, &jobs, 1);
	if (r >= 0)
		return r;	/* a worker rank's child, done */
	/* under mpi rank 0 loaded it while MPI started */
	if (!c.data_loaded && cfl_data_load(&data, &d, &err)) {
		fprintf(stderr, "mpi_bench: %s\n", err.msg);
		return 1;
	}
	cfl_pool_opts_init(&po);
	po.data = &data;
	po.n_local = (size_t)jobs;
	po.n_metrics = cfl_metric_defaults(data.train.n_classes, po.metrics,
					   CFL_WIRE_MAX_METRICS);
	pool = cfl_pool_new(&po, &err);
	if (!pool || cli_cluster_attach(&c, pool, &d, &po, "bench#1", 1)) {
		fprintf(stderr, "mpi_bench: %s\n", pool ? "attach failed" : err.msg);
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
	       n / (t1 - t0), cfl_backend_name(c.backend));
	cfl_pool_close(pool, NULL);
	cli_cluster_stop(&c);
	cfl_data_release(&data);
	return 0;
}
