/*
 * Tests of the relay and the session every transport shares (relay.h):
 * the HELLO check, WELCOME's config codec, the FETCH / CHUNK exchange, and
 * the relay itself in-process: over a socketpair against a scripted
 * coordinator, and over TCP against a real pool with a listener.
 */
#include "runner.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cfl/backend.h"
#include "cfl/data.h"
#include "cfl/net.h"
#include "cfl/relay.h"
#include "cfl/run.h"
#include "cfl/wire.h"

static void load_iris(struct cfl_data *d)
{
	struct cfl_data_opts o;
	struct cfl_err err;

	cfl_data_opts_init(&o);
	o.path = "datasets/iris.csv";
	o.seed = 3;
	CHECK_MSG(cfl_data_load(d, &o, &err) == 0, "%s", err.msg);
}

/* ---- HELLO ---- */

static void t_hello_check(void)
{
	struct cfl_wire_hello h = { CFL_WIRE_VERSION, 4, 0, "w", { 0 }, { 0 } };
	struct cfl_err err;
	uint32_t code = 0;

	CHECK(cfl_hello_check(&h, &code, &err) == 0);
	h.proto = CFL_WIRE_VERSION + 1;
	CHECK(cfl_hello_check(&h, &code, &err) == -1);
	CHECK_INT(code, CFL_WIRE_E_VERSION);
	CHECK(strstr(err.msg, "version mismatch") != NULL);
	h.proto = CFL_WIRE_VERSION;
	h.n_slots = 0;
	CHECK(cfl_hello_check(&h, &code, &err) == -1);
	CHECK_INT(code, CFL_WIRE_E_PROTOCOL);
	h.n_slots = 1025;
	CHECK(cfl_hello_check(&h, &code, &err) == -1);
	CHECK(strstr(err.msg, "1..1024 slots, not 1025") != NULL);
}

/* ---- WELCOME's config ---- */

static void t_config_round_trip(void)
{
	struct cfl_data_opts d;
	struct cfl_pool_opts po;
	struct cfl_run_config c;
	struct cfl_buf b;
	struct cfl_err err;

	cfl_data_opts_init(&d);
	d.schema.target = "species";
	d.schema.drop_re = "^id$";
	d.schema.task = CFL_TASK_CLF;
	d.test_frac = 0.25;
	d.valid_frac = 0.1;
	d.seed = 18446744073709551615ull;
	cfl_pool_opts_init(&po);
	po.threads_per_trial = 3;
	po.trial_timeout = 1.5;
	po.n_metrics = 2;
	po.metrics[0] = CFL_M_ACC;
	po.metrics[1] = CFL_M_AUC;
	cfl_buf_init(&b);
	CHECK(cfl_run_config_format(&b, "run#7", &d, &po, &err) == 0);
	CHECK(cfl_run_config_parse(&c, b.data, &err) == 0);
	CHECK(!strcmp(c.run, "run#7"));
	CHECK(!strcmp(c.data.schema.target, "species"));
	CHECK(!strcmp(c.data.schema.drop_re, "^id$"));
	CHECK(c.data.schema.only_re == NULL);
	CHECK_INT(c.data.schema.task, CFL_TASK_CLF);
	CHECK(c.data.test_frac == 0.25 && c.data.valid_frac == 0.1);
	CHECK(c.data.seed == 18446744073709551615ull);
	CHECK_INT(c.threads, 3);
	CHECK(c.trial_timeout == 1.5);
	CHECK_INT(c.n_metrics, 2);
	CHECK_INT(c.metrics[1], CFL_M_AUC);
	cfl_run_config_release(&c);
	/* a value that cannot travel */
	d.schema.only_re = "a\nb";
	b.len = 0;
	CHECK(cfl_run_config_format(&b, "r", &d, &po, &err) == -1);
	CHECK(strstr(err.msg, "--only cannot be sent") != NULL);
	cfl_buf_release(&b);
}

static void t_config_bad(void)
{
	static const char *bad[] = {
		"seed=-1\n", "seed=1x\n", "threads=0\n", "task=3\n",
		"test_frac=2\n", "metrics=1,99\n", "colour=red\n", "no equals\n",
	};
	struct cfl_run_config c;
	struct cfl_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK_MSG(cfl_run_config_parse(&c, bad[i], &err) == -1, "%s", bad[i]);
		cfl_run_config_release(&c);
	}
	CHECK(cfl_run_config_parse(&c, "colour=red\n", &err) == -1);
	CHECK(strstr(err.msg, "unknown config key 'colour'") != NULL);
	cfl_run_config_release(&c);
	/* empty: the defaults */
	CHECK(cfl_run_config_parse(&c, NULL, &err) == 0);
	CHECK_INT(c.threads, 1);
	cfl_run_config_release(&c);
}

/* ---- FETCH / CHUNK ---- */

/* Moves a 2.5-chunk file from the answering side into a cache, as the
 * relay and a coordinator do, with the chunks coming back in order, and
 * keeps its bytes in memory too. */
static void t_fetch_into_cache(void)
{
	size_t len = 2 * CFL_TCP_CHUNK + CFL_TCP_CHUNK / 2;
	unsigned char *bytes = malloc(len), sha[32];
	struct cfl_cache cache;
	struct cfl_fetch f;
	struct cfl_wire_msg req[8], chunk;
	struct cfl_buf got, kept;
	struct cfl_err err;
	char *path = NULL;
	size_t n_req = 0, n_chunks = 0;
	int r;

	CHECK(bytes != NULL);
	for (size_t i = 0; i < len; i++)
		bytes[i] = (unsigned char)(i * 7 + (i >> 11));
	CHECK(cfl_sha256(bytes, len, sha, &err) == 0);
	CHECK(cfl_cache_init(&cache, cfl_test_path("cache"), &err) == 0);
	cfl_buf_init(&kept);
	CHECK(cfl_buf_append(&kept, "stale", 5) == 0);	/* emptied first */
	CHECK(cfl_fetch_begin(&f, &cache, sha, len, &kept, &path, &err) == 0);
	for (r = 0; r == 0;) {
		while (n_req < 8 && cfl_fetch_request(&f, &req[n_req]))
			n_req++;
		CHECK(n_req > 0);
		CHECK(cfl_fetch_answer(&req[0].u.fetch, sha, bytes, len, &chunk, &err) == 0);
		memmove(req, req + 1, --n_req * sizeof(*req));
		r = cfl_fetch_chunk(&f, &chunk.u.chunk, &path, &err);
		n_chunks++;
	}
	CHECK_MSG(r == 1, "%s", err.msg);
	CHECK_INT(n_chunks, 3);
	CHECK_INT(n_req, 0);	/* never asked past the end */
	cfl_buf_init(&got);
	CHECK(cfl_buf_read_file(&got, path, &err) == 0);
	CHECK(got.len == len && !memcmp(got.data, bytes, len));
	cfl_buf_release(&got);
	/* and the same bytes were kept in memory for the caller */
	CHECK(kept.len == len && !memcmp(kept.data, bytes, len));
	cfl_buf_release(&kept);
	free(path);
	/* now it is in the cache */
	CHECK(cfl_fetch_begin(&f, &cache, sha, len, NULL, &path, &err) == 1);
	free(path);
	/* a request for other bytes, or past the end, is refused */
	cfl_wire_msg_init(&req[0], CFL_WIRE_FETCH);
	memcpy(req[0].u.fetch.sha256, sha, 32);
	req[0].u.fetch.offset = len + 1;
	CHECK(cfl_fetch_answer(&req[0].u.fetch, sha, bytes, len, &chunk, &err) == -1);
	req[0].u.fetch.offset = 0;
	req[0].u.fetch.sha256[0] ^= 1;
	CHECK(cfl_fetch_answer(&req[0].u.fetch, sha, bytes, len, &chunk, &err) == -1);
	/* a chunk of other data ends the fetch */
	sha[0] ^= 1;
	CHECK(cfl_fetch_begin(&f, &cache, sha, len, NULL, &path, &err) == 0);
	sha[0] ^= 1;
	cfl_wire_msg_init(&chunk, CFL_WIRE_CHUNK);
	memcpy(chunk.u.chunk.sha256, sha, 32);
	chunk.u.chunk.total = len;
	chunk.u.chunk.n = 10;
	chunk.u.chunk.data = bytes;
	CHECK(cfl_fetch_chunk(&f, &chunk.u.chunk, &path, &err) == -1);
	CHECK(strstr(err.msg, "a bad dataset chunk") != NULL);
	cfl_fetch_abort(&f);	/* a no-op now */
	cfl_cache_release(&cache);
	free(bytes);
}

/* ---- the relay over a socketpair ---- */

/* Runs a relay over fd in a child: its exit status is 10 + what
 * cfl_relay_serve returned (9 for -1). */
static pid_t relay_child(int fd, int other, const struct cfl_data *d,
			 size_t slots, int allow_commands)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		struct cfl_relay_opts o;
		struct cfl_fd_link link;
		struct cfl_relay *r;
		struct cfl_err err;
		int rc;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		close(other);
		cfl_relay_opts_init(&o);
		o.name = "relay-test";
		o.n_slots = slots;
		o.allow_commands = allow_commands;
		o.data = d;
		o.data_size = 1234;
		r = cfl_relay_new(&o, &err);
		if (!r)
			_exit(5);
		cfl_fd_link_init(&link, fd);
		rc = cfl_relay_serve(r, cfl_fd_link_relay(&link), &err);
		if (rc < 0)
			fprintf(stderr, "relay: %s\n", err.msg);
		cfl_relay_free(r);
		_exit(10 + rc);
	}
	close(fd);
	return pid;
}

/* The next message from the relay that is not a heartbeat. */
static void next_msg(struct cfl_fd_link *l, struct cfl_wire_msg *m)
{
	struct cfl_relay_link rl = cfl_fd_link_relay(l);
	struct cfl_err err;

	for (;;) {
		int r = rl.ops->recv(rl.ctx, m, 10, &err);

		CHECK_MSG(r == 1, "no message from the relay: %s", r ? err.msg : "timeout");
		if (m->type != CFL_WIRE_HEARTBEAT)
			return;
		cfl_wire_msg_release(m);
	}
}

static void send_msg(struct cfl_fd_link *l, const struct cfl_wire_msg *m)
{
	struct cfl_relay_link rl = cfl_fd_link_relay(l);
	struct cfl_err err;

	CHECK_MSG(rl.ops->send(rl.ctx, m, 5, &err) == 0, "%s", err.msg);
}

/* Says WELCOME for data d on the coordinator's end. */
static void welcome(struct cfl_fd_link *l, const struct cfl_data *d)
{
	struct cfl_data_opts dopts;
	struct cfl_pool_opts po;
	struct cfl_wire_msg m;
	struct cfl_buf cfg;
	struct cfl_err err;

	next_msg(l, &m);
	CHECK_INT(m.type, CFL_WIRE_HELLO);
	CHECK(!strcmp(m.u.hello.name, "relay-test"));
	CHECK_INT(m.u.hello.n_slots, 1);
	cfl_wire_msg_release(&m);
	cfl_data_opts_init(&dopts);
	cfl_pool_opts_init(&po);
	po.n_metrics = 1;
	po.metrics[0] = CFL_M_ACC;
	cfl_buf_init(&cfg);
	CHECK(cfl_run_config_format(&cfg, "run#1", &dopts, &po, &err) == 0);
	cfl_wire_msg_init(&m, CFL_WIRE_WELCOME);
	m.u.welcome.proto = CFL_WIRE_VERSION;
	m.u.welcome.heartbeat_ms = 200;
	memcpy(m.u.welcome.data_sha256, d->sha256, 32);
	m.u.welcome.data_size = 1234;
	m.u.welcome.config = cfg.data;
	send_msg(l, &m);
	cfl_buf_release(&cfg);
}

static void lease(struct cfl_fd_link *l, int64_t trial, int repeat,
		  const char *model, unsigned flags)
{
	struct cfl_wire_msg m;

	cfl_wire_msg_init(&m, CFL_WIRE_LEASE);
	m.u.lease.trial_id = trial;
	m.u.lease.attempt = 1;
	m.u.lease.model = (char *)model;
	m.u.lease.seed = 7;
	m.u.lease.repeat = repeat;
	m.u.lease.flags = flags;
	m.u.lease.threads = 1;
	m.u.lease.n_metrics = 1;
	m.u.lease.metrics[0] = (uint8_t)CFL_M_ACC;
	send_msg(l, &m);
}

static int wait_child(pid_t pid)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Ends the run: SHUTDOWN, and the relay ends with CFL_RELAY_OVER. */
static void shutdown_relay(struct cfl_fd_link *l, pid_t pid)
{
	struct cfl_wire_msg m;

	cfl_wire_msg_init(&m, CFL_WIRE_SHUTDOWN);
	send_msg(l, &m);
	CHECK_INT(wait_child(pid), 10 + CFL_RELAY_OVER);
}

/* A lease becomes a local trial and its RESULT comes back under the
 * coordinator's trial id and attempt; CANCEL stops a hung trial at once
 * (its slot serves the next lease; no RESULT for it); SHUTDOWN ends the
 * relay with CFL_RELAY_OVER. */
static void t_relay_socketpair(void)
{
	struct cfl_fd_link l;
	struct cfl_wire_msg m;
	struct cfl_data d;
	int sv[2];
	pid_t pid;

	load_iris(&d);
	setenv("CFL_TEST_FAULT", "hang:1", 1);	/* repeat 1 never ends */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = relay_child(sv[1], sv[0], &d, 1, 0);
	cfl_fd_link_init(&l, sv[0]);
	welcome(&l, &d);
	lease(&l, 41, 0, "baseline", 0);
	next_msg(&l, &m);
	CHECK_INT(m.type, CFL_WIRE_RESULT);
	CHECK_INT(m.u.result.trial_id, 41);
	CHECK_INT(m.u.result.attempt, 1);
	CHECK_INT(m.u.result.status, CFL_RESULT_OK);
	CHECK(m.u.result.duration >= 0);
	cfl_wire_msg_release(&m);
	/* the one slot hangs on trial 42 until it is cancelled */
	lease(&l, 42, 1, "baseline", 0);
	lease(&l, 43, 0, "baseline", 0);
	usleep(300000);
	cfl_wire_msg_init(&m, CFL_WIRE_CANCEL);
	m.u.cancel.trial_id = 42;
	m.u.cancel.attempt = 1;
	send_msg(&l, &m);
	next_msg(&l, &m);
	CHECK_INT(m.type, CFL_WIRE_RESULT);
	CHECK_INT(m.u.result.trial_id, 43);
	CHECK_INT(m.u.result.status, CFL_RESULT_OK);
	cfl_wire_msg_release(&m);
	shutdown_relay(&l, pid);
	close(sv[0]);
	cfl_buf_release(&l.in);
	cfl_data_release(&d);
}

/* Without allow_commands a command lease is refused with a failed RESULT
 * and an ERROR, the command never runs, and the relay ends with an error;
 * with it (an MPI rank) the command runs. */
static void t_relay_command_leases(void)
{
	const char *ran = cfl_test_path("ran");
	char cmd[600];
	struct cfl_fd_link l;
	struct cfl_wire_msg m;
	struct cfl_data d;
	struct stat st;
	int sv[2];
	pid_t pid;

	load_iris(&d);
	snprintf(cmd, sizeof(cmd), "touch '%s'; echo 0.5", ran);
	for (int allow = 0; allow <= 1; allow++) {
		unlink(ran);
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		pid = relay_child(sv[1], sv[0], &d, 1, allow);
		cfl_fd_link_init(&l, sv[0]);
		welcome(&l, &d);
		lease(&l, 7, 0, cmd, CFL_LEASE_COMMAND);
		next_msg(&l, &m);
		CHECK_INT(m.type, CFL_WIRE_RESULT);
		CHECK_INT(m.u.result.trial_id, 7);
		if (!allow) {
			CHECK_INT(m.u.result.status, CFL_RESULT_MODEL_ERROR);
			CHECK(!strcmp(m.u.result.error,
				      "refused: a TCP worker never runs a shell command"));
			cfl_wire_msg_release(&m);
			next_msg(&l, &m);
			CHECK_INT(m.type, CFL_WIRE_ERROR);
			CHECK(strstr(m.u.error.message, "refused trial 7") != NULL);
			cfl_wire_msg_release(&m);
			CHECK_INT(wait_child(pid), 9);
			CHECK(stat(ran, &st) == -1);
		} else {
			CHECK_MSG(m.u.result.status == CFL_RESULT_OK, "%s",
				  m.u.result.error ? m.u.result.error : "");
			cfl_wire_msg_release(&m);
			CHECK(stat(ran, &st) == 0);
			shutdown_relay(&l, pid);
		}
		close(sv[0]);
		cfl_buf_release(&l.in);
	}
	cfl_data_release(&d);
}

/* A WELCOME for another dataset than the one the relay holds ends it with
 * an error it also sends back; an EOF before WELCOME is CFL_RELAY_LOST. */
static void t_relay_wrong_dataset_and_eof(void)
{
	struct cfl_fd_link l;
	struct cfl_wire_msg m;
	struct cfl_data d, other;
	int sv[2];
	pid_t pid;

	load_iris(&d);
	memset(&other, 0, sizeof(other));
	memcpy(other.sha256, d.sha256, 32);
	other.sha256[5] ^= 0x40;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = relay_child(sv[1], sv[0], &d, 1, 0);
	cfl_fd_link_init(&l, sv[0]);
	welcome(&l, &other);
	next_msg(&l, &m);
	CHECK_INT(m.type, CFL_WIRE_ERROR);
	CHECK(strstr(m.u.error.message, "another dataset") != NULL);
	cfl_wire_msg_release(&m);
	CHECK_INT(wait_child(pid), 9);
	close(sv[0]);
	cfl_buf_release(&l.in);

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = relay_child(sv[1], sv[0], &d, 1, 0);
	cfl_fd_link_init(&l, sv[0]);
	next_msg(&l, &m);
	CHECK_INT(m.type, CFL_WIRE_HELLO);
	cfl_wire_msg_release(&m);
	close(sv[0]);
	CHECK_INT(wait_child(pid), 10 + CFL_RELAY_LOST);
	cfl_buf_release(&l.in);
	cfl_data_release(&d);
}

/* ---- the relay over TCP, against a pool with a listener ---- */

#define N_TCP_TRIALS 12

/* A relay with a TCP link that fetches the dataset into its cache serves
 * every trial of a real coordinator, and ends when the pool closes. */
static void t_relay_tcp(void)
{
	struct cfl_pool_opts po;
	struct cfl_tcp_opts to;
	struct cfl_data_opts dopts;
	struct cfl_pool *p;
	struct cfl_tcp *t;
	struct cfl_data d;
	struct cfl_buf parts, cfg;
	struct cfl_err err;
	size_t n_done = 0;
	int port, r;
	pid_t pid;

	load_iris(&d);
	cfl_pool_opts_init(&po);
	po.data = &d;
	po.n_local = 0;
	po.n_metrics = 1;
	po.metrics[0] = CFL_M_ACC;
	p = cfl_pool_new(&po, &err);
	CHECK_MSG(p != NULL, "%s", err.msg);
	for (int i = 1; i <= N_TCP_TRIALS; i++) {
		struct cfl_trial_spec sp;

		memset(&sp, 0, sizeof(sp));
		sp.trial_id = i;
		sp.model = "baseline";
		sp.seed = (uint64_t)i;
		sp.fold = -1;
		CHECK(cfl_pool_submit(p, &sp, &err) == 0);
	}
	cfl_buf_init(&parts);
	cfl_buf_init(&cfg);
	cfl_data_opts_init(&dopts);
	CHECK(cfl_data_pack_parts(&d, &parts, &err) == 0);
	CHECK(cfl_run_config_format(&cfg, "tcp#1", &dopts, &po, &err) == 0);
	cfl_tcp_opts_init(&to);
	to.addr = "127.0.0.1:0";
	to.data = &parts;	/* taken over */
	to.config = cfg.data;
	t = cfl_tcp_listen(p, &to, &err);
	CHECK_MSG(t != NULL, "%s", err.msg);
	port = cfl_tcp_port(t);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct cfl_tcp_relay_link link;
		struct cfl_relay_opts o;
		struct cfl_relay *rl;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		cfl_relay_opts_init(&o);
		o.name = "tcp-relay";
		o.n_slots = 2;
		o.cache_dir = cfl_test_path("tcp-cache");
		o.retry_for = 10;
		rl = cfl_relay_new(&o, &err);
		if (!rl)
			_exit(5);
		cfl_tcp_relay_link_init(&link, "127.0.0.1", port, NULL);
		r = cfl_relay_serve(rl, cfl_tcp_relay_link(&link), &err);
		if (r < 0)
			fprintf(stderr, "relay: %s\n", err.msg);
		_exit(10 + r + 0 * (int)cfl_relay_n_done(rl));
	}
	while ((r = cfl_pool_wait(p, &(struct cfl_pool_event){ 0 }, &err)) != CFL_POOL_IDLE) {
		CHECK_MSG(r >= 0, "%s", err.msg);
		if (r == CFL_POOL_EVENT)
			n_done++;
	}
	CHECK_INT(n_done, N_TCP_TRIALS);
	CHECK(cfl_pool_close(p, &err) == 0);	/* SHUTDOWN */
	CHECK_INT(wait_child(pid), 10 + CFL_RELAY_OVER);
	cfl_tcp_free(t);
	cfl_buf_release(&parts);
	cfl_buf_release(&cfg);
	cfl_data_release(&d);
}

/* ---- the relay against the MPI peers, over socketpairs ---- */

/* Two "worker ranks" (relays over socketpairs, as behind the pump) serve a
 * pool whose peers cfl_mpi_attach made: every trial is done, a command
 * trial among them (ranks may run commands), and the relays end when the
 * pool closes. */
static void t_relay_mpi_peers(void)
{
	const char *ran = cfl_test_path("ran-mpi");
	char cmd[600];
	struct cfl_mpi_coord c;
	struct cfl_pool_opts po;
	struct cfl_data_opts dopts;
	struct cfl_pool *p;
	struct cfl_data d;
	struct cfl_buf cfg;
	struct cfl_err err;
	int fds[3] = { -1, -1, -1 }, sv[3][2];
	pid_t pid[3];
	size_t n_done = 0;
	int r;

	load_iris(&d);
	cfl_pool_opts_init(&po);
	po.data = &d;
	po.n_local = 0;
	po.allow_commands = 1;
	po.n_metrics = 1;
	po.metrics[0] = CFL_M_ACC;
	p = cfl_pool_new(&po, &err);
	CHECK_MSG(p != NULL, "%s", err.msg);
	snprintf(cmd, sizeof(cmd), "touch '%s'; echo 0.25", ran);
	for (int i = 1; i <= N_TCP_TRIALS; i++) {
		struct cfl_trial_spec sp;

		memset(&sp, 0, sizeof(sp));
		sp.trial_id = i;
		sp.model = i == 5 ? cmd : "baseline";
		sp.flags = i == 5 ? CFL_LEASE_COMMAND : 0;
		sp.seed = (uint64_t)i;
		sp.fold = -1;
		CHECK_MSG(cfl_pool_submit(p, &sp, &err) == 0, "%s", err.msg);
	}
	for (int k = 1; k <= 2; k++) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[k]) == 0);
		pid[k] = relay_child(sv[k][1], sv[k][0], &d, 1, 1);
		fds[k] = sv[k][0];
	}
	memset(&c, 0, sizeof(c));
	memcpy(c.sha256, d.sha256, 32);
	c.data_size = 1234;	/* what relay_child announces */
	c.heartbeat = 0.2;
	cfl_buf_init(&cfg);
	cfl_data_opts_init(&dopts);
	CHECK(cfl_run_config_format(&cfg, "mpi#1", &dopts, &po, &err) == 0);
	c.config = cfg.data;
	CHECK_MSG(cfl_mpi_attach(&c, p, fds, 3, &err) == 0, "%s", err.msg);
	CHECK_INT(c.n_alive, 2);
	CHECK(fds[1] == -1 && fds[2] == -1);
	for (;;) {
		struct cfl_pool_event ev;

		r = cfl_pool_wait(p, &ev, &err);
		CHECK_MSG(r >= 0, "%s", err.msg);
		if (r == CFL_POOL_IDLE)
			break;
		if (r != CFL_POOL_EVENT)
			continue;
		CHECK_MSG(ev.status == CFL_TRIAL_DONE, "trial %lld: %s",
			  (long long)ev.trial_id, ev.reason ? ev.reason : "");
		CHECK(!strncmp(ev.worker, "rank:", 5));
		n_done++;
	}
	CHECK_INT(n_done, N_TCP_TRIALS);
	CHECK(access(ran, F_OK) == 0);
	CHECK(cfl_pool_close(p, &err) == 0);	/* SHUTDOWN */
	CHECK_INT(wait_child(pid[1]), 10 + CFL_RELAY_OVER);
	CHECK_INT(wait_child(pid[2]), 10 + CFL_RELAY_OVER);
	CHECK_INT(c.n_alive, 0);
	cfl_buf_release(&cfg);
	cfl_data_release(&d);
}

/* A rank whose HELLO speaks another protocol is dropped, never
 * welcomed. */
static void t_mpi_peer_checks_hello(void)
{
	struct cfl_mpi_coord c;
	struct cfl_pool_opts po;
	struct cfl_pool *p;
	struct cfl_fd_link l;
	struct cfl_wire_msg m;
	struct cfl_err err;
	struct cfl_data d;
	int fds[2] = { -1, -1 }, sv[2], r;

	load_iris(&d);
	cfl_pool_opts_init(&po);
	po.data = &d;
	po.n_local = 0;
	p = cfl_pool_new(&po, &err);
	CHECK(p != NULL);
	CHECK(cfl_pool_submit(p, &(struct cfl_trial_spec){ .trial_id = 1,
		.model = "baseline", .fold = -1 }, &err) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	fds[1] = sv[0];
	memset(&c, 0, sizeof(c));
	c.heartbeat = 1;
	c.config = "";
	CHECK(cfl_mpi_attach(&c, p, fds, 2, &err) == 0);
	cfl_fd_link_init(&l, sv[1]);
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION + 1;
	m.u.hello.n_slots = 2;
	m.u.hello.name = "old";
	send_msg(&l, &m);
	/* the pool drops the peer: the worker's end sees EOF, no WELCOME */
	for (int i = 0; i < 20 && c.n_alive; i++) {
		r = cfl_pool_wait(p, &(struct cfl_pool_event){ 0 }, &err);
		CHECK(r >= 0);
	}
	CHECK_INT(c.n_alive, 0);
	r = cfl_fd_link_relay(&l).ops->recv(&l, &m, 2, &err);
	CHECK_MSG(r == -1, "got %d", r);
	cfl_pool_close(p, NULL);
	close(sv[1]);
	cfl_buf_release(&l.in);
	cfl_data_release(&d);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_hello_check),
	TEST(t_config_round_trip),
	TEST(t_config_bad),
	TEST(t_fetch_into_cache),
	TEST(t_relay_socketpair),
	TEST(t_relay_command_leases),
	TEST(t_relay_wrong_dataset_and_eof),
	TEST(t_relay_tcp),
	TEST(t_relay_mpi_peers),
	TEST(t_mpi_peer_checks_hello),
	{ 0 },
};
