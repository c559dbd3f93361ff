/*
 * Pool overhead: runs N no-op trials through the pool (J forked workers,
 * each running trials_per_worker trials, 0 = no limit) and prints the wall
 * time per trial in microseconds, from the first submit to the last result
 * committed.  With a database path, each trial is created, leased and
 * stored as `cfl repeat` does it; with "-", no store (the pool alone).
 * Usage: pool_bench DATA.csv DB|- N J TRIALS_PER_WORKER
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/run.h"

int main(int argc, char **argv)
{
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_pool_opts po;
	struct cfl_pool *p;
	struct cfl_store *st = NULL;
	struct cfl_err err;
	struct cfl_pool_event ev;
	int64_t run_id = 0, cand = 0, *ids;
	long n, j, tpw, got = 0;
	double t0, t1;
	int r;

	if (argc != 6) {
		fprintf(stderr, "usage: pool_bench DATA DB|- N J TRIALS_PER_WORKER\n");
		return 2;
	}
	n = atol(argv[3]);
	j = atol(argv[4]);
	tpw = atol(argv[5]);
	cfl_data_opts_init(&o);
	o.path = argv[1];
	if (cfl_data_load(&d, &o, &err))
		goto fail;
	ids = calloc((size_t)n, sizeof(*ids));
	if (strcmp(argv[2], "-")) {
		struct cfl_run_info info = { 0 };

		st = cfl_store_open(argv[2], CFL_STORE_CREATE, &err);
		info.name = "bench";
		if (!st || cfl_store_run_create(st, &info, &run_id, &err) ||
		    cfl_store_candidate_get_or_add(st, run_id, "baseline", NULL, &cand, NULL, &err) ||
		    cfl_store_begin(st, &err))
			goto fail;
		for (long i = 0; i < n; i++) {
			struct cfl_trial_state ts;

			if (cfl_store_trial_ensure(st, run_id, cand, (int)i, -1, (uint64_t)i, &ts, &err))
				goto fail;
			ids[i] = ts.id;
		}
		if (cfl_store_commit(st, &err))
			goto fail;
	} else {
		for (long i = 0; i < n; i++)
			ids[i] = i + 1;
	}
	cfl_pool_opts_init(&po);
	po.data = &d;
	po.store = st;
	po.run_id = run_id;
	po.n_local = (size_t)j;
	po.trials_per_worker = (size_t)tpw;
	p = cfl_pool_new(&po, &err);
	if (!p)
		goto fail;
	t0 = cfl_now();
	for (long i = 0; i < n; i++) {
		struct cfl_trial_spec s;

		memset(&s, 0, sizeof(s));
		s.trial_id = ids[i];
		s.model = "baseline";
		s.fold = -1;
		s.repeat = (int)i;
		s.flags = CFL_LEASE_NOOP;
		if (cfl_pool_submit(p, &s, &err))
			goto fail;
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT)
		got += ev.status == CFL_TRIAL_DONE;
	if (r < 0 || cfl_pool_flush(p, &err))
		goto fail;
	t1 = cfl_now();
	if (got != n) {
		fprintf(stderr, "pool_bench: %ld of %ld trials done\n", got, n);
		return 1;
	}
	printf("%.2f\n", (t1 - t0) / (double)n * 1e6);
	cfl_pool_close(p, NULL);
	cfl_store_close(st);
	cfl_data_release(&d);
	free(ids);
	return 0;
fail:
	fprintf(stderr, "pool_bench: %s\n", err.msg);
	return 1;
}
