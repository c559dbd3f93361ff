/*
 * Remote-worker throughput: N no-op trials through 2 loopback `cfl worker`
 * processes (1 slot each), or through the local pool's 2 forked workers
 * for comparison; prints trials per second from the first submit to the
 * last result (workers already connected, no store).
 * Usage: tcp_bench CFL DATA.csv N tcp|local [TOKEN_FILE] (a token: TLS)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfl/net.h"
#include "cfl/run.h"

static int run_all(struct cfl_pool *p, long first, long n, struct cfl_err *err)
{
	struct cfl_pool_event ev;
	long got = 0;
	int r;

	for (long i = 0; i < n; i++) {
		struct cfl_trial_spec s;

		memset(&s, 0, sizeof(s));
		s.trial_id = first + i;
		s.model = "baseline";
		s.fold = -1;
		s.flags = CFL_LEASE_NOOP;
		if (cfl_pool_submit(p, &s, err))
			return -1;
	}
	while ((r = cfl_pool_wait(p, &ev, err)) == CFL_POOL_EVENT ||
	       r == CFL_POOL_TICK)
		got += r == CFL_POOL_EVENT && ev.status == CFL_TRIAL_DONE;
	if (r < 0)
		return -1;
	return got == n ? 0 : cfl_err_set(err, "%ld of %ld trials done", got, n);
}

int main(int argc, char **argv)
{
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_pool_opts po;
	struct cfl_pool *p;
	struct cfl_tcp *t = NULL;
	struct cfl_err err;
	pid_t kids[2] = { 0, 0 };
	struct cfl_token tok = { 0 };
	long n, next = 1;
	int tcp;
	double t0;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: tcp_bench CFL DATA N tcp|local [TOKEN_FILE]\n");
		return 2;
	}
	if (argc == 6 && cfl_token_load(&tok, argv[5], &err))
		goto fail;
	n = atol(argv[3]);
	tcp = !strcmp(argv[4], "tcp");
	cfl_data_opts_init(&o);
	o.path = argv[2];
	if (cfl_data_load(&d, &o, &err))
		goto fail;
	cfl_pool_opts_init(&po);
	po.data = &d;
	po.n_local = tcp ? 0 : 2;
	po.commit_interval = 0;
	p = cfl_pool_new(&po, &err);
	if (!p)
		goto fail;
	if (tcp) {
		struct cfl_tcp_opts to;
		struct cfl_buf parts;
		struct cfl_pool_stats st;
		char port[16];

		cfl_tcp_opts_init(&to);
		to.addr = "127.0.0.1:0";
		cfl_buf_init(&parts);
		if (cfl_data_pack_parts(&d, &parts, &err))
			goto fail;
		to.data = &parts;	/* taken over */
		to.config = "run=bench\nthreads=1\n";
		to.token = tok.len ? &tok : NULL;	/* TLS with a token */
		t = cfl_tcp_listen(p, &to, &err);
		cfl_buf_release(&parts);
		if (!t)
			goto fail;
		snprintf(port, sizeof(port), "127.0.0.1:%d", cfl_tcp_port(t));
		for (int k = 0; k < 2; k++) {
			kids[k] = fork();
			if (kids[k] == 0) {
				if (tok.len)
					execl(argv[1], argv[1], "worker", "--connect", port,
					      "--jobs", "1", "-q", "--token-file", argv[5],
					      (char *)NULL);
				else
					execl(argv[1], argv[1], "worker", "--connect", port,
					      "--jobs", "1", "-q", (char *)NULL);
				_exit(127);
			}
		}
		/* warm up until both workers have joined */
		do {
			if (run_all(p, next, 2, &err))
				goto fail;
			next += 2;
			cfl_pool_get_stats(p, &st);
		} while (st.n_slots < 2);
	}
	t0 = cfl_now();
	if (run_all(p, next, n, &err))
		goto fail;
	printf("%.0f\n", (double)n / (cfl_now() - t0));
	cfl_pool_close(p, NULL);
	cfl_tcp_free(t);
	for (int k = 0; k < 2; k++)
		if (kids[k] > 0)
			waitpid(kids[k], NULL, 0);
	cfl_data_release(&d);
	return 0;
fail:
	fprintf(stderr, "tcp_bench: %s\n", err.msg);
	for (int k = 0; k < 2; k++)
		if (kids[k] > 0)
			kill(kids[k], SIGKILL);
	return 1;
}
