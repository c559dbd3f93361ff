/* Unit tests of src/run: the scheduler's lease state machine, trial seeds,
 * executing one trial (metrics, predictions, bootstrap, folds), and the
 * pool's ask-tell loop with forked workers, a hostile peer and the store. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "../../src/run/internal.h"
#include "cfl/metrics.h"

static struct cfl_trial_spec spec(int64_t id)
{
	struct cfl_trial_spec s;

	memset(&s, 0, sizeof(s));
	s.trial_id = id;
	s.model = "linear";
	s.fold = -1;
	s.seed = (uint64_t)id;
	return s;
}

static void t_sched_lifecycle(void)
{
	struct sched s;
	struct cfl_err err;
	struct cfl_trial_spec a = spec(10), b = spec(20), c = spec(30);
	long i, j;

	cfl_sched_init(&s, 1);
	CHECK_INT(cfl_sched_add(&s, &a, &err), 0);
	CHECK_INT(cfl_sched_add(&s, &b, &err), 1);
	CHECK_INT(cfl_sched_add(&s, &c, &err), 2);
	CHECK_INT(cfl_sched_add(&s, &a, &err), -1);
	CHECK_CONTAINS(err.msg, "submitted twice");
	CHECK_INT(cfl_sched_find(&s, 20), 1);
	CHECK_INT(cfl_sched_find(&s, 99), -1);

	/* FIFO; attempts count from 1 */
	i = cfl_sched_take(&s);
	CHECK_INT(i, 0);
	CHECK_INT(s.t[i].attempt, 1);
	CHECK_INT(s.n_running, 1);
	/* a crash: retried once, then poison */
	CHECK_INT(cfl_sched_failed(&s, i, 1, 1, "signal SIGSEGV"), CFL_TRIAL_QUEUED);
	CHECK_INT(cfl_sched_failed(&s, i, 1, 1, "again"), -1);	/* stale */
	j = cfl_sched_take(&s);
	CHECK_INT(j, 1);	/* requeued behind the others */
	CHECK_INT(cfl_sched_take(&s), 2);
	CHECK_INT(cfl_sched_take(&s), 0);
	CHECK_INT(s.t[0].attempt, 2);
	CHECK_INT(cfl_sched_failed(&s, 0, 2, 1, "signal SIGSEGV"), CFL_TRIAL_POISON);
	CHECK_STR(s.t[0].reason, "signal SIGSEGV");
	/* a model error that keeps failing ends failed, not poison */
	CHECK_INT(cfl_sched_failed(&s, 1, 1, 0, "bad"), CFL_TRIAL_QUEUED);
	CHECK_INT(cfl_sched_take(&s), 1);
	CHECK_INT(cfl_sched_failed(&s, 1, 2, 0, "bad"), CFL_TRIAL_FAILED);
	/* first result wins; a second is a duplicate; a failure after done
	 * is stale */
	CHECK_INT(cfl_sched_done(&s, 2, 1), 0);
	CHECK_INT(cfl_sched_done(&s, 2, 1), 1);
	CHECK_INT(cfl_sched_failed(&s, 2, 1, 1, "late"), -1);
	CHECK_INT(s.t[2].status, CFL_TRIAL_DONE);
	CHECK_INT(s.n_running, 0);
	CHECK_INT(s.n_done, 1);
	CHECK_INT(s.n_failed, 2);
	CHECK_INT(s.q_len, 0);
	CHECK_INT(cfl_sched_take(&s), -1);
	cfl_sched_release(&s);
}

/* A lease lost with a remote peer (SCHED_LOST: it vanished, whatever it
 * said before) is requeued without counting, however often: only evidence
 * about the trial (a kill, a timeout, a failed result) burns attempts. */
static void t_sched_lost_leases(void)
{
	struct sched s;
	struct cfl_err err;
	struct cfl_trial_spec a = spec(10);
	int n = 1000;

	cfl_sched_init(&s, 1);
	CHECK_INT(cfl_sched_add(&s, &a, &err), 0);
	for (int i = 1; i <= n; i++) {
		CHECK_INT(cfl_sched_take(&s), 0);
		CHECK_INT(cfl_sched_failed(&s, 0, i, SCHED_LOST, "worker lost"),
			  CFL_TRIAL_QUEUED);
	}
	CHECK_INT(s.t[0].n_failed, 0);
	CHECK_INT(s.t[0].n_lost, n);
	/* evidence: a killed attempt (retried once with max_retries 1), then
	 * poison */
	CHECK_INT(cfl_sched_take(&s), 0);
	CHECK_INT(cfl_sched_failed(&s, 0, n + 1, SCHED_KILLED, "signal 9"),
		  CFL_TRIAL_QUEUED);
	CHECK_INT(cfl_sched_take(&s), 0);
	CHECK_INT(cfl_sched_failed(&s, 0, n + 2, SCHED_LOST, "lost"),
		  CFL_TRIAL_QUEUED);
	CHECK_INT(cfl_sched_take(&s), 0);
	CHECK_INT(cfl_sched_failed(&s, 0, n + 3, SCHED_KILLED, "signal 9"),
		  CFL_TRIAL_POISON);
	CHECK_INT(s.n_running, 0);
	cfl_sched_release(&s);
}

/* A late result of an attempt that was requeued (a TCP lease that expired)
 * wins, and the trial leaves the queue. */
static void t_sched_late_result(void)
{
	struct sched s;
	struct cfl_err err;
	struct cfl_trial_spec a = spec(1), b = spec(2);

	cfl_sched_init(&s, 3);
	CHECK(cfl_sched_add(&s, &a, &err) == 0);
	CHECK(cfl_sched_add(&s, &b, &err) == 1);
	CHECK_INT(cfl_sched_take(&s), 0);
	CHECK_INT(cfl_sched_failed(&s, 0, 1, 1, "timeout after 1 s"), CFL_TRIAL_QUEUED);
	CHECK_INT(s.q_len, 2);
	CHECK_INT(cfl_sched_done(&s, 0, 1), 0);
	CHECK_INT(s.q_len, 1);
	CHECK_INT(cfl_sched_take(&s), 1);
	CHECK_INT(cfl_sched_take(&s), -1);
	/* --resume: attempts continue from the stored count */
	{
		struct cfl_trial_spec c = spec(3);

		c.prev_attempts = 4;
		CHECK(cfl_sched_add(&s, &c, &err) == 2);
		CHECK_INT(cfl_sched_take(&s), 2);
		CHECK_INT(s.t[2].attempt, 5);
	}
	/* many trials: the id map grows */
	for (int k = 0; k < 1000; k++) {
		struct cfl_trial_spec d = spec(100 + k);

		CHECK(cfl_sched_add(&s, &d, &err) == 3 + k);
	}
	for (int k = 0; k < 1000; k++)
		CHECK_INT(cfl_sched_find(&s, 100 + k), 3 + k);
	cfl_sched_release(&s);
}

static void t_seeds(void)
{
	uint64_t a = cfl_trial_seed(1, "fcnn", 0);

	CHECK(a == cfl_trial_seed(1, "fcnn", 0));
	CHECK(a != cfl_trial_seed(1, "fcnn", 1));
	CHECK(a != cfl_trial_seed(1, "tree", 0));
	CHECK(a != cfl_trial_seed(2, "fcnn", 0));
	CHECK(cfl_fold_seed(1, 0) == cfl_fold_seed(1, 0));
	CHECK(cfl_fold_seed(1, 0) != cfl_fold_seed(1, 1));
}

static void load_iris(struct cfl_data *d)
{
	struct cfl_data_opts o;
	struct cfl_err err;

	cfl_data_opts_init(&o);
	o.path = "datasets/iris.csv";
	o.seed = 3;
	CHECK_MSG(cfl_data_load(d, &o, &err) == 0, "%s", err.msg);
}

static void lease_init(struct cfl_wire_lease *l, uint64_t seed)
{
	memset(l, 0, sizeof(*l));
	cfl_params_init(&l->params);
	l->trial_id = 1;
	l->attempt = 1;
	l->model = "linear";
	l->seed = seed;
	l->fold = -1;
	l->threads = 1;
	l->n_metrics = 2;
	l->metrics[0] = CFL_M_ACC;
	l->metrics[1] = CFL_M_LOGLOSS;
	l->flags = CFL_LEASE_KEEP_VALID | CFL_LEASE_KEEP_TEST;
}

static void t_execute(void)
{
	struct cfl_data d;
	struct cfl_wire_lease l;
	struct cfl_wire_result r, r2, r3;
	struct cfl_err err;

	load_iris(&d);
	lease_init(&l, 5);
	CHECK_MSG(cfl_trial_execute(&d, &l, &r, &err) == 0, "%s", err.msg);
	CHECK_INT(r.status, CFL_RESULT_OK);
	CHECK_INT(r.trial_id, 1);
	CHECK_INT(r.split[0].n_metrics, 2);
	CHECK_STR(r.split[1].metrics[0].name, "acc");
	CHECK_STR(r.split[1].metrics[1].name, "logloss");
	CHECK(r.split[1].metrics[0].value > 0.8);
	CHECK_INT(r.split[1].n, d.test.n);
	CHECK_INT(r.split[1].n_out, 3);
	CHECK_INT(r.split[0].n, d.valid.n);
	CHECK(r.split[2].n == 0 && r.split[2].n_metrics == 0);
	CHECK(r.peak_rss_kb > 0);
	CHECK(r.duration >= 0);
	CHECK_INT(r.n_iter_kept, 0);	/* the default model does not stop early */

	/* bootstrap: depends on the seed, and only on it */
	l.flags |= CFL_LEASE_BOOTSTRAP;
	CHECK(cfl_trial_execute(&d, &l, &r2, &err) == 0);
	CHECK(cfl_trial_execute(&d, &l, &r3, &err) == 0);
	CHECK(r2.split[1].metrics[1].value == r3.split[1].metrics[1].value);
	CHECK(r2.split[1].metrics[1].value != r.split[1].metrics[1].value);
	cfl_trial_result_release(&r3);
	l.seed = 6;
	CHECK(cfl_trial_execute(&d, &l, &r3, &err) == 0);
	CHECK(r2.split[1].metrics[1].value != r3.split[1].metrics[1].value);
	cfl_trial_result_release(&r);
	cfl_trial_result_release(&r2);
	cfl_trial_result_release(&r3);

	/* folds: the held-out fold's rows come back with their indices */
	l.flags = CFL_LEASE_KEEP_OOF;
	l.n_folds = 3;
	{
		size_t covered = 0;
		char *seen = calloc(d.train.n, 1);

		for (int f = 0; f < 3; f++) {
			l.fold = f;
			CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
			CHECK_INT(r.status, CFL_RESULT_OK);
			CHECK(r.split[2].rows != NULL);
			CHECK_INT(r.split[2].n_metrics, 2);
			CHECK(r.split[1].pred == NULL);
			for (uint32_t i = 0; i < r.split[2].n; i++) {
				CHECK(r.split[2].rows[i] < d.train.n);
				CHECK(!seen[r.split[2].rows[i]]);
				seen[r.split[2].rows[i]] = 1;
				covered++;
			}
			cfl_trial_result_release(&r);
		}
		CHECK_INT(covered, d.train.n);
		free(seen);
	}

	/* a bad lease: -1; a bad param: a model error result */
	l.fold = -1;
	l.model = "nosuch";
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown model 'nosuch'");
	l.model = "linear";
	CHECK(cfl_params_set(&l.params, "nosuch", "1", &err) == 0);
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK_INT(r.status, CFL_RESULT_MODEL_ERROR);
	CHECK_CONTAINS(r.error, "nosuch");
	cfl_trial_result_release(&r);
	cfl_params_release(&l.params);

	/* no-op trials do nothing */
	lease_init(&l, 1);
	l.flags = CFL_LEASE_NOOP;
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK_INT(r.status, CFL_RESULT_OK);
	CHECK_INT(r.split[1].n_metrics, 0);
	cfl_trial_result_release(&r);
	cfl_data_release(&d);
}

/* cfl tune --command: the last stdout line is the value; failures say why. */
/* A model that stops early says how many rounds it kept; tune's refit
 * (CFL_LEASE_REFIT) fits on train and validation together, without early
 * stopping and without a score on validation. */
static void t_execute_refit(void)
{
	struct cfl_data d;
	struct cfl_wire_lease l;
	struct cfl_wire_result r;
	struct cfl_err err;
	double freq[3] = { 0 };
	size_t n = 0;

	load_iris(&d);
	lease_init(&l, 5);
	l.model = "gbdt";
	cfl_params_init(&l.params);
	CHECK(cfl_params_set(&l.params, "n_rounds", "300", NULL) == 0);
	CHECK(cfl_params_set(&l.params, "early_stopping_rounds", "2", NULL) == 0);
	CHECK_MSG(cfl_trial_execute(&d, &l, &r, &err) == 0, "%s", err.msg);
	CHECK_INT(r.status, CFL_RESULT_OK);
	CHECK(r.n_iter_kept >= 1 && r.n_iter_kept < 300);
	cfl_trial_result_release(&r);
	l.flags |= CFL_LEASE_REFIT;
	CHECK_MSG(cfl_trial_execute(&d, &l, &r, &err) == 0, "%s", err.msg);
	CHECK_INT(r.status, CFL_RESULT_OK);
	CHECK_INT(r.n_iter_kept, 0);
	CHECK_INT(r.split[0].n_metrics, 0);
	CHECK(r.split[0].pred == NULL);
	CHECK_INT(r.split[1].n_metrics, 2);
	cfl_trial_result_release(&r);
	cfl_params_release(&l.params);

	/* the baseline predicts the class shares of the rows it fitted */
	cfl_params_init(&l.params);
	l.model = "baseline";
	CHECK_MSG(cfl_trial_execute(&d, &l, &r, &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < d.train.n; i++, n++)
		freq[(int)d.train.y[i]]++;
	for (size_t i = 0; i < d.valid.n; i++, n++)
		freq[(int)d.valid.y[i]]++;
	CHECK(d.valid.n > 0 && r.split[1].n > 0);
	for (int c = 0; c < 3; c++)
		CHECK(fabs(r.split[1].pred[c] - freq[c] / (double)n) < 1e-12);
	cfl_trial_result_release(&r);
	/* folds and bootstrap do not go with a refit */
	l.flags = CFL_LEASE_REFIT | CFL_LEASE_BOOTSTRAP;
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == -1);
	CHECK_CONTAINS(err.msg, "refit");
	cfl_data_release(&d);
}

static void t_command_trial(void)
{
	struct cfl_data d;
	struct cfl_wire_lease l;
	struct cfl_wire_result r;
	struct cfl_err err;

	load_iris(&d);
	lease_init(&l, 42);
	l.flags = CFL_LEASE_COMMAND;
	l.model = "echo 1; echo '  2.5 '; echo";
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK_MSG(r.status == CFL_RESULT_OK, "%s", r.error);
	CHECK_INT(r.split[0].n_metrics, 1);
	CHECK_STR(r.split[0].metrics[0].name, "value");
	CHECK(r.split[0].metrics[0].value == 2.5);
	cfl_trial_result_release(&r);
	l.model = "echo $CFL_TRIAL_SEED";
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK(r.split[0].metrics[0].value == 42);
	cfl_trial_result_release(&r);
	l.model = "echo 1; echo oops >&2; exit 3";
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK_INT(r.status, CFL_RESULT_MODEL_ERROR);
	CHECK_STR(r.error, "command exit 3: oops");
	cfl_trial_result_release(&r);
	l.model = "echo abc";
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK_INT(r.status, CFL_RESULT_MODEL_ERROR);
	CHECK_CONTAINS(r.error, "no number");
	cfl_trial_result_release(&r);
	l.model = "kill -9 $$";
	CHECK(cfl_trial_execute(&d, &l, &r, &err) == 0);
	CHECK_STR(r.error, "command killed by signal 9");
	cfl_trial_result_release(&r);
	cfl_data_release(&d);
}

static struct cfl_pool *new_pool(const struct cfl_data *d, size_t n_local,
				 struct cfl_store *st, int64_t run_id)
{
	struct cfl_pool_opts o;
	struct cfl_err err;
	struct cfl_pool *p;

	cfl_pool_opts_init(&o);
	o.data = d;
	o.n_local = n_local;
	o.store = st;
	o.run_id = run_id;
	o.n_metrics = 1;
	o.metrics[0] = CFL_M_ACC;
	p = cfl_pool_new(&o, &err);
	CHECK_MSG(p != NULL, "%s", err.msg);
	return p;
}

/* Ask-tell: submit a batch, take results one by one, submit more. */
static void t_pool_ask_tell(void)
{
	struct cfl_data d;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_pool_stats ps;
	struct cfl_err err;
	char seen[41] = { 0 };
	int n_events = 0, r;

	load_iris(&d);
	p = new_pool(&d, 2, NULL, 0);
	for (int i = 1; i <= 20; i++) {
		struct cfl_trial_spec s = spec(i);

		s.flags = i % 2 ? CFL_LEASE_NOOP : CFL_LEASE_KEEP_TEST;
		s.user = &seen[i];
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT) {
		CHECK_INT(ev.status, CFL_TRIAL_DONE);
		CHECK(ev.user == &seen[ev.trial_id]);
		CHECK(!seen[ev.trial_id]);
		seen[ev.trial_id] = 1;
		CHECK(ev.result != NULL);
		if (ev.trial_id <= 20 && ev.trial_id % 2 == 0) {
			CHECK_INT(ev.result->split[1].n_metrics, 1);
			CHECK_INT(ev.result->split[1].n, d.test.n);
		}
		/* tell: after the 10th result, ask for 20 more */
		if (++n_events == 10)
			for (int i = 21; i <= 40; i++) {
				struct cfl_trial_spec s = spec(i);

				s.flags = CFL_LEASE_NOOP;
				s.user = &seen[i];
				CHECK(cfl_pool_submit(p, &s, &err) == 0);
			}
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "wait: %d %s", r, r < 0 ? err.msg : "");
	CHECK_INT(n_events, 40);
	cfl_pool_get_stats(p, &ps);
	CHECK_INT(ps.done, 40);
	CHECK_INT(ps.running, 0);
	CHECK_INT(ps.n_slots, 2);
	CHECK(cfl_pool_close(p, &err) == 0);
	cfl_data_release(&d);
}

/* --trials-per-worker 1: a fresh child per trial, and no lease is ever
 * given to a child that is about to leave (no failed attempt). */
static void t_pool_fork_per_trial(void)
{
	struct cfl_data d;
	struct cfl_pool_opts o;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_pool_stats ps;
	struct cfl_err err;
	char workers[64][64];
	int n = 0, r;

	load_iris(&d);
	cfl_pool_opts_init(&o);
	o.data = &d;
	o.n_local = 2;
	o.trials_per_worker = 1;
	p = cfl_pool_new(&o, &err);
	CHECK(p != NULL);
	for (int i = 1; i <= 30; i++) {
		struct cfl_trial_spec s = spec(i);

		s.flags = CFL_LEASE_NOOP;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT) {
		CHECK_INT(ev.status, CFL_TRIAL_DONE);
		for (int k = 0; k < n; k++)
			CHECK_MSG(strcmp(workers[k], ev.worker), "%s ran two trials", ev.worker);
		snprintf(workers[n++], sizeof(workers[0]), "%s", ev.worker);
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "%s", err.msg);
	CHECK_INT(n, 30);
	cfl_pool_get_stats(p, &ps);
	CHECK_INT(ps.attempts_failed, 0);
	CHECK(cfl_pool_close(p, &err) == 0);
	cfl_data_release(&d);
}

/* A model error is retried, then the trial ends failed (not poison) with
 * the model's message, and the worker lives on. */
static void t_pool_model_error(void)
{
	struct cfl_data d;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_pool_stats ps;
	struct cfl_err err;
	int n_done = 0, n_failed = 0, r;

	load_iris(&d);
	setenv("CFL_TEST_FAULT", "error:1", 1);
	p = new_pool(&d, 1, NULL, 0);
	for (int i = 1; i <= 3; i++) {
		struct cfl_trial_spec s = spec(i);

		s.repeat = i - 1;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT) {
		if (ev.status == CFL_TRIAL_DONE) {
			n_done++;
			continue;
		}
		n_failed++;
		CHECK_INT(ev.trial_id, 2);
		CHECK_INT(ev.status, CFL_TRIAL_FAILED);
		CHECK_INT(ev.attempt, 2);
		CHECK_STR(ev.reason, "injected model error");
		CHECK_STR(ev.worker, "local:1");	/* the same child throughout */
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "%s", err.msg);
	CHECK_INT(n_done, 2);
	CHECK_INT(n_failed, 1);
	cfl_pool_get_stats(p, &ps);
	CHECK_INT(ps.attempts_failed, 2);
	CHECK(cfl_pool_close(p, &err) == 0);
	cfl_data_release(&d);
}

/* Children run with --threads-per-trial BLAS threads (seen by a command
 * trial in its environment). */
static void t_pool_threads(void)
{
	struct cfl_data d;
	struct cfl_pool_opts o;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_trial_spec s = spec(1);
	struct cfl_err err;

	load_iris(&d);
	cfl_pool_opts_init(&o);
	o.data = &d;
	o.n_local = 1;
	o.threads_per_trial = 3;
	o.allow_commands = 1;
	p = cfl_pool_new(&o, &err);
	CHECK(p != NULL);
	s.model = "echo $OPENBLAS_NUM_THREADS";
	s.flags = CFL_LEASE_COMMAND;
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_EVENT);
	CHECK_INT(ev.status, CFL_TRIAL_DONE);
	CHECK(ev.result->split[0].metrics[0].value == 3);
	CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_IDLE);
	CHECK(cfl_pool_close(p, &err) == 0);
	cfl_data_release(&d);
}

static const struct cfl_peer_ops fake_ops = { .kind = "fake" };

/* Shell commands run only where the pool was told its trials are the
 * user's own: a pool without allow_commands refuses to queue one, its
 * children refuse a command lease that reaches them anyway, and a peer
 * whose ops do not run commands (a TCP worker) is never leased one. */
static void t_pool_commands_contained(void)
{
	struct cfl_data d;
	struct cfl_pool_opts o;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_trial_spec s = spec(1);
	struct cfl_wire_msg m;
	struct cfl_wire_frame f;
	struct cfl_buf b;
	struct cfl_err err;
	char marker[64], cmd[128];
	int sv[2], r;

	load_iris(&d);
	snprintf(marker, sizeof(marker), "/tmp/cfl-test-cmd-%d", (int)getpid());
	snprintf(cmd, sizeof(cmd), "touch %s; echo 1", marker);
	unlink(marker);
	s.model = cmd;
	s.flags = CFL_LEASE_COMMAND;

	/* a pool that does not allow commands queues none */
	p = new_pool(&d, 0, NULL, 0);
	CHECK(cfl_pool_submit(p, &s, &err) == -1);
	CHECK_CONTAINS(err.msg, "is a shell command");
	CHECK(cfl_pool_close(p, &err) == 0);

	/* a worker not allowed to run commands answers with a refusal */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	cfl_buf_init(&b);
	cfl_wire_msg_init(&m, CFL_WIRE_LEASE);
	m.u.lease.trial_id = 5;
	m.u.lease.attempt = 1;
	m.u.lease.model = cmd;
	m.u.lease.flags = CFL_LEASE_COMMAND;
	CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
	cfl_wire_msg_init(&m, CFL_WIRE_SHUTDOWN);
	CHECK(cfl_wire_encode(&b, 2, 0, &m, &err) == 0);
	CHECK(write(sv[1], b.data, b.len) == (ssize_t)b.len);
	CHECK(cfl_worker_serve(sv[0], &d, "w", 0, 0, &err) == 0);
	b.len = 0;
	for (;;) {	/* HELLO, then the RESULT */
		ssize_t k;

		CHECK(cfl_buf_reserve(&b, 4096) == 0);
		k = read(sv[1], b.data + b.len, 4096);
		if (k <= 0)
			break;
		b.len += (size_t)k;
		if (b.len > 0 && cfl_wire_decode(b.data, b.len, &f, &m, &err) == 0) {
			size_t used = f.size;

			cfl_wire_msg_release(&m);
			if (cfl_wire_decode(b.data + used, b.len - used, &f, &m, &err) == 0)
				break;
		}
	}
	CHECK_INT(m.type, CFL_WIRE_RESULT);
	CHECK_INT(m.u.result.status, CFL_RESULT_MODEL_ERROR);
	CHECK_CONTAINS(m.u.result.error, "runs no shell commands");
	cfl_wire_msg_release(&m);
	CHECK(access(marker, F_OK) != 0);
	close(sv[0]);
	close(sv[1]);

	/* a peer without runs_commands is never leased a command trial, even
	 * in a pool that allows them */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	cfl_pool_opts_init(&o);
	o.data = &d;
	o.n_local = 0;
	o.allow_commands = 1;
	o.tick = 0.05;
	p = cfl_pool_new(&o, &err);
	CHECK(p != NULL);
	CHECK(cfl_pool_add_peer(p, sv[0], &fake_ops, NULL, 1, "fake:1", &err) != NULL);
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	for (int i = 0; i < 4; i++) {
		r = cfl_pool_wait(p, &ev, &err);
		CHECK_INT(r, CFL_POOL_TICK);
	}
	{
		char c;
		ssize_t k;

		CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
		k = read(sv[1], &c, 1);
		CHECK_MSG(k < 0 && errno == EAGAIN, "the peer was sent %zd bytes", k);
	}
	CHECK(cfl_pool_close(p, NULL) == 0);
	close(sv[1]);
	CHECK(access(marker, F_OK) != 0);
	cfl_buf_release(&b);
	cfl_data_release(&d);
}

/* A peer that sends garbage is dropped, its lease is retried elsewhere and
 * the run completes; a result for an unknown trial is acked as a duplicate. */
static void t_pool_hostile_peer(void)
{
	struct cfl_data d;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_pool_stats ps;
	struct cfl_err err;
	int sv[2], sv2[2], n = 0, r;

	load_iris(&d);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	p = new_pool(&d, 1, NULL, 0);
	CHECK(cfl_pool_add_peer(p, sv[0], &fake_ops, NULL, 1, "fake:1", &err) != NULL);
	for (int i = 1; i <= 4; i++) {
		struct cfl_trial_spec s = spec(i);

		s.flags = CFL_LEASE_NOOP;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	CHECK(write(sv[1], "GET / HTTP/1.1\r\n\r\n", 18) == 18);
	/* a second peer sends a well-formed result for a trial this pool does
	 * not know (a remote worker's result from before a --resume): acked
	 * as a duplicate; then it falls silent and is dropped */
	{
		struct cfl_buf b;
		struct cfl_wire_msg m;
		struct cfl_peer *peer2;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2) == 0);
		peer2 = cfl_pool_add_peer(p, sv2[0], &fake_ops, NULL, 1, "fake:2", &err);
		CHECK(peer2 != NULL);
		peer2->silence = 0.3;
		cfl_buf_init(&b);
		cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
		m.u.result.trial_id = 999;
		m.u.result.attempt = 1;
		CHECK(cfl_wire_encode(&b, 0, 0, &m, &err) == 0);
		CHECK(write(sv2[1], b.data, b.len) == (ssize_t)b.len);
		cfl_buf_release(&b);
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT) {
		CHECK_INT(ev.status, CFL_TRIAL_DONE);
		CHECK_STR(ev.worker, "local:1");
		n++;
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "%s", err.msg);
	CHECK_INT(n, 4);
	cfl_pool_get_stats(p, &ps);
	CHECK_INT(ps.attempts_failed, 2);
	CHECK_INT(ps.n_slots, 1);
	CHECK(cfl_pool_close(p, &err) == 0);
	close(sv[1]);
	{
		/* fake:2 got its LEASE, then the duplicate ACK */
		char buf[4096];
		ssize_t got = read(sv2[1], buf, sizeof(buf));
		size_t pos = 0;
		struct cfl_wire_frame f;
		struct cfl_wire_msg m;
		int acked = 0;

		CHECK(got > 0);
		while (cfl_wire_decode(buf + pos, (size_t)got - pos, &f, &m, &err) == 0) {
			if (m.type == CFL_WIRE_RESULT_ACK) {
				CHECK_INT(m.u.ack.trial_id, 999);
				CHECK_INT(m.u.ack.duplicate, 1);
				acked = 1;
			}
			cfl_wire_msg_release(&m);
			pos += f.size;
		}
		CHECK(acked);
		close(sv2[1]);
	}
	cfl_data_release(&d);
}

/* A peer that goes silent past its silence limit is dropped and its lease
 * runs elsewhere; a peer with a heartbeat interval gets HEARTBEAT frames. */
static void t_pool_silent_peer(void)
{
	struct cfl_data d;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_peer *peer;
	struct cfl_err err;
	struct cfl_wire_frame f;
	struct cfl_wire_msg m;
	char buf[4096];
	ssize_t got;
	int sv[2], n = 0, r, n_hb = 0;
	size_t pos = 0;

	load_iris(&d);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	p = new_pool(&d, 1, NULL, 0);
	peer = cfl_pool_add_peer(p, sv[0], &fake_ops, NULL, 1, "quiet:1", &err);
	CHECK(peer != NULL);
	peer->silence = 0.5;
	peer->heartbeat = 0.1;
	for (int i = 1; i <= 3; i++) {
		struct cfl_trial_spec s = spec(i);

		s.flags = CFL_LEASE_NOOP;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT) {
		CHECK_STR(ev.worker, "local:1");
		n++;
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "%s", err.msg);
	CHECK_INT(n, 3);
	/* what the quiet peer got: one LEASE, then HEARTBEATs */
	got = read(sv[1], buf, sizeof(buf));
	CHECK(got > 0);
	while (cfl_wire_decode(buf + pos, (size_t)got - pos, &f, &m, &err) == 0) {
		CHECK(m.type == CFL_WIRE_LEASE || m.type == CFL_WIRE_HEARTBEAT);
		n_hb += m.type == CFL_WIRE_HEARTBEAT;
		cfl_wire_msg_release(&m);
		pos += f.size;
	}
	CHECK(n_hb >= 2);
	CHECK(cfl_pool_close(p, &err) == 0);
	close(sv[1]);
	cfl_data_release(&d);
}

/* With a store: results and failures are committed; an interrupt marks the
 * running trials and the run. */
static void t_pool_store_and_interrupt(void)
{
	char dir[] = "/tmp/cfl-run-XXXXXX", path[64];
	struct cfl_data d;
	struct cfl_store *st;
	struct cfl_run_info info;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_trial_counts tc;
	struct cfl_err err;
	int64_t run_id, cand;
	int r, n = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/t.db", dir);
	load_iris(&d);
	st = cfl_store_open(path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	memset(&info, 0, sizeof(info));
	info.name = "t";
	CHECK(cfl_store_run_create(st, &info, &run_id, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run_id, "linear", NULL, &cand, NULL, &err) == 0);
	setenv("CFL_TEST_FAULT", "hang:0", 1);	/* the first leased */
	p = new_pool(&d, 2, st, run_id);
	for (int i = 0; i < 4; i++) {
		struct cfl_trial_state ts;
		struct cfl_trial_spec s;

		CHECK(cfl_store_trial_ensure(st, run_id, cand, i, -1, (uint64_t)i, &ts, &err) == 0);
		s = spec(ts.id);
		s.repeat = i;
		s.flags = CFL_LEASE_KEEP_TEST;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	/* the first hangs until interrupted; the three others finish */
	while (n < 3 && (r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT)
		n++;
	CHECK_INT(n, 3);
	cfl_pool_interrupt(p);
	CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_INTERRUPTED);
	CHECK(cfl_pool_close(p, &err) == 0);
	CHECK(cfl_store_trial_counts(st, run_id, &tc, &err) == 0);
	CHECK_INT(tc.done, 3);
	CHECK_MSG(tc.interrupted == 1, "done %zu queued %zu running %zu failed %zu poison %zu interrupted %zu", tc.done, tc.queued, tc.running, tc.failed, tc.poison, tc.interrupted);
	CHECK_INT(tc.running, 0);
	CHECK(cfl_store_run_get(st, run_id, &info, &err) == 0);
	CHECK_INT(info.status, CFL_RUN_INTERRUPTED);
	cfl_run_info_release(&info);
	cfl_store_close(st);
	cfl_data_release(&d);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CHECK(system(path) == 0);
}

/* A pool whose cfl_pool_wait returns a TICK every 50 ms: tests act while
 * trials run. */
static struct cfl_pool *new_ticking_pool(const struct cfl_data *d, size_t n_local)
{
	struct cfl_pool_opts o;
	struct cfl_err err;
	struct cfl_pool *p;

	cfl_pool_opts_init(&o);
	o.data = d;
	o.n_local = n_local;
	o.tick = 0.05;
	p = cfl_pool_new(&o, &err);
	CHECK_MSG(p != NULL, "%s", err.msg);
	return p;
}

/* Waits until n trials run (ticks while the children start). */
static void wait_running(struct cfl_pool *p, size_t n)
{
	struct cfl_pool_event ev;
	struct cfl_pool_stats ps;
	struct cfl_err err;

	for (;;) {
		cfl_pool_get_stats(p, &ps);
		if (ps.running == n)
			return;
		CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_TICK);
	}
}

/* cfl_pool_cancel kills the child running a hung trial: the trial ends
 * failed "cancelled" without a retry (max_retries is 1 here: a retry would
 * hang again), and the one slot serves the next trial in a new child.
 * Cancelling an unknown, failed or done trial changes nothing.  There is
 * no --trial-timeout: without the cancel, this test hangs. */
static void t_pool_cancel(void)
{
	struct cfl_data d;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_pool_stats ps;
	struct cfl_trial_spec s;
	struct cfl_err err;
	int r, n_failed = 0, n_done = 0;

	load_iris(&d);
	setenv("CFL_TEST_FAULT", "hang:0", 1);
	p = new_ticking_pool(&d, 1);
	s = spec(1);
	s.repeat = 0;	/* hangs */
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	wait_running(p, 1);
	CHECK_INT(cfl_pool_cancel(p, 99, &err), 0);	/* unknown */
	CHECK_INT(cfl_pool_cancel(p, 1, &err), 1);
	CHECK_INT(cfl_pool_cancel(p, 1, &err), 0);	/* cancelled already */
	s = spec(2);
	s.repeat = 1;
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT ||
	       r == CFL_POOL_TICK) {
		if (r == CFL_POOL_TICK)
			continue;
		if (ev.trial_id == 1) {
			CHECK_INT(ev.status, CFL_TRIAL_CANCELLED);
			CHECK_INT(ev.attempt, 1);
			CHECK_STR(ev.reason, "cancelled");
			CHECK_STR(ev.worker, "local:1");
			n_failed++;
		} else {
			CHECK_INT(ev.trial_id, 2);
			CHECK_INT(ev.status, CFL_TRIAL_DONE);
			CHECK_STR(ev.worker, "local:2");	/* the replacement */
			n_done++;
		}
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "%d %s", r, err.msg);
	CHECK_INT(n_failed, 1);
	CHECK_INT(n_done, 1);
	CHECK_INT(cfl_pool_cancel(p, 2, &err), 0);	/* done */
	cfl_pool_get_stats(p, &ps);
	CHECK_INT(ps.done, 1);
	CHECK_INT(ps.failed, 1);
	CHECK_INT(ps.attempts_failed, 1);
	CHECK_INT(ps.n_slots, 1);
	CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_IDLE);
	CHECK(cfl_pool_close(p, &err) == 0);
	cfl_data_release(&d);
}

/* A multi-slot peer (kept on --trial-timeout) is sent CANCEL for the
 * attempt and keeps its freed slot: the next trial is leased to it. */
static void t_pool_cancel_remote_peer(void)
{
	static const struct cfl_peer_ops remote_ops = { .kind = "remote" };
	struct cfl_data d;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_trial_spec s;
	struct cfl_err err;
	struct cfl_wire_frame f;
	struct cfl_wire_msg m;
	char buf[4096];
	ssize_t got;
	size_t pos = 0;
	int sv[2], r, step = 0;

	load_iris(&d);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	p = new_ticking_pool(&d, 0);
	CHECK(cfl_pool_add_peer(p, sv[0], &remote_ops, NULL, 1, "remote:1", &err) != NULL);
	s = spec(1);
	s.flags = CFL_LEASE_NOOP;
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	wait_running(p, 1);
	CHECK_INT(cfl_pool_cancel(p, 1, &err), 1);
	s = spec(2);
	s.flags = CFL_LEASE_NOOP;
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	r = cfl_pool_wait(p, &ev, &err);
	CHECK_INT(r, CFL_POOL_EVENT);
	CHECK_INT(ev.trial_id, 1);
	CHECK_INT(ev.status, CFL_TRIAL_CANCELLED);
	CHECK_STR(ev.reason, "cancelled");
	wait_running(p, 1);	/* trial 2, on the same peer */
	/* what the peer got: LEASE 1, CANCEL 1 (attempt 1), LEASE 2 */
	got = read(sv[1], buf, sizeof(buf));
	CHECK(got > 0);
	while (cfl_wire_decode(buf + pos, (size_t)got - pos, &f, &m, &err) == 0) {
		if (m.type != CFL_WIRE_HEARTBEAT) {
			static const int types[] = { CFL_WIRE_LEASE, CFL_WIRE_CANCEL,
						     CFL_WIRE_LEASE };
			static const int ids[] = { 1, 1, 2 };

			CHECK(step < 3);
			CHECK_INT(m.type, types[step]);
			if (m.type == CFL_WIRE_CANCEL) {
				CHECK_INT(m.u.cancel.trial_id, ids[step]);
				CHECK_INT(m.u.cancel.attempt, 1);
			} else {
				CHECK_INT(m.u.lease.trial_id, ids[step]);
			}
			step++;
		}
		cfl_wire_msg_release(&m);
		pos += f.size;
	}
	CHECK_INT(step, 3);
	CHECK(cfl_pool_close(p, &err) == 0);
	close(sv[1]);
	cfl_data_release(&d);
}

/* A result is checked against its lease and the data before it is stored:
 * an honest one passes; each single flaw a token holder could send is
 * refused with its reason. */
/* A row sample: the fit takes sample_rows of its rows, the same ones for
 * every trial drawing from the same rows (the fold seed's), whatever the
 * trial seed; a sample as large as the rows is all of them. */
static void t_execute_sample(void)
{
	struct cfl_data d;
	struct cfl_wire_lease l;
	struct cfl_wire_result full, a, b, all;
	struct cfl_err err;

	load_iris(&d);
	lease_init(&l, 5);
	l.model = "tree";
	l.fold_seed = 11;
	CHECK_MSG(cfl_trial_execute(&d, &l, &full, &err) == 0, "%s", err.msg);
	l.sample_rows = 20;
	CHECK_MSG(cfl_trial_execute(&d, &l, &a, &err) == 0, "%s", err.msg);
	l.seed = 99;	/* another trial: the same rows */
	CHECK_MSG(cfl_trial_execute(&d, &l, &b, &err) == 0, "%s", err.msg);
	l.seed = 5;
	l.sample_rows = d.train.n;
	CHECK_MSG(cfl_trial_execute(&d, &l, &all, &err) == 0, "%s", err.msg);
	CHECK_INT(a.status, CFL_RESULT_OK);
	CHECK_INT(a.split[1].n, full.split[1].n);	/* still predicts test */
	CHECK(memcmp(a.split[1].pred, full.split[1].pred,
		     full.split[1].n * full.split[1].n_out * sizeof(double)) != 0);
	CHECK(memcmp(a.split[1].pred, b.split[1].pred,
		     full.split[1].n * full.split[1].n_out * sizeof(double)) == 0);
	CHECK(memcmp(all.split[1].pred, full.split[1].pred,
		     full.split[1].n * full.split[1].n_out * sizeof(double)) == 0);
	cfl_trial_result_release(&full);
	cfl_trial_result_release(&a);
	cfl_trial_result_release(&b);
	cfl_trial_result_release(&all);
	cfl_data_release(&d);
}

static void t_result_check(void)
{
	static const enum cfl_metric_id metrics[2] = { CFL_M_ACC, CFL_M_LOGLOSS };
	struct cfl_data d;
	struct cfl_wire_lease l;
	struct cfl_wire_result r;
	struct result_check c;
	struct sched_trial t;
	struct cfl_err err;
	char why[256], *model;
	uint32_t row0;

	load_iris(&d);
	lease_init(&l, 5);
	l.flags |= CFL_LEASE_KEEP_OOF | CFL_LEASE_KEEP_MODEL;
	l.fold = 1;
	l.n_folds = 3;
	l.fold_seed = 7;
	CHECK_MSG(cfl_trial_execute(&d, &l, &r, &err) == 0, "%s", err.msg);
	CHECK_INT(r.status, CFL_RESULT_OK);
	memset(&t, 0, sizeof(t));
	t.model = "linear";
	t.flags = l.flags;
	t.fold = 1;
	t.n_folds = 3;
	t.fold_seed = 7;
	cfl_result_check_init(&c, &d, metrics, 2);
	CHECK_MSG(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 1, "%s", why);

	snprintf(r.split[1].metrics[0].name, 32, "accuracy");
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "metric 'accuracy' on test, the lease asked for 'acc'");
	snprintf(r.split[1].metrics[0].name, 32, "acc");
	r.split[0].n_metrics = 1;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "1 metrics on valid, the lease asked for 2");
	r.split[0].n_metrics = 2;
	r.split[1].metrics[1].value = INFINITY;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "non-finite result: metric logloss on test");
	r.split[1].metrics[1].value = 0.5;

	r.split[1].n_out = 1;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "predictions on test, the data has");
	r.split[1].n_out = 3;
	t.flags &= ~CFL_LEASE_KEEP_VALID;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "predictions on valid, the lease asked for none");
	t.flags |= CFL_LEASE_KEEP_VALID;
	row0 = r.split[2].rows[0];
	r.split[2].rows[0] = r.split[2].rows[1];
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "out-of-fold row 0 is not row");
	r.split[2].rows[0] = row0;
	t.fold = 2;	/* another fold's rows */
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	t.fold = 1;

	model = r.model;
	r.model = "cfl-model 1\nmodel linear\nstate\nzzz\n";
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "a model that does not load");
	r.model = NULL;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "no model, which the lease asked for");
	r.model = model;
	t.model = "tree";
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "a model 'linear', the lease asked for 'tree'");
	t.model = "linear";
	CHECK_MSG(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 1, "%s", why);
	/* linear does not train in steps: no iterations to keep */
	r.n_iter_kept = 7;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "7 iterations kept, the lease allows 0");
	r.n_iter_kept = 0;
	cfl_trial_result_release(&r);

	/* a forest the time budget cut short keeps fewer trees than its
	 * n_estimators: the check takes that count as its iterations (it
	 * refused every such forest: "the lease allows 0") */
	lease_init(&l, 5);
	l.model = "forest";
	CHECK(cfl_params_set(&l.params, "n_estimators", "30", NULL) == 0);
	l.budget_s = 1e-9;
	CHECK_MSG(cfl_trial_execute(&d, &l, &r, &err) == 0, "%s", err.msg);
	CHECK_INT(r.status, CFL_RESULT_OK);
	CHECK(r.n_iter_kept >= 1 && r.n_iter_kept < 30);
	memset(&t, 0, sizeof(t));
	t.model = "forest";
	t.params = l.params;
	t.flags = l.flags;
	t.fold = -1;
	CHECK_MSG(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 1, "%s", why);
	r.n_iter_kept = 31;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "31 iterations kept, the lease allows 30");
	cfl_trial_result_release(&r);
	cfl_params_release(&l.params);
	cfl_params_init(&t.params);
	t.model = "linear";

	/* a benchmark's empty trial, and a command's one metric "value" */
	memset(&r, 0, sizeof(r));
	t.flags = CFL_LEASE_NOOP;
	t.fold = -1;
	CHECK_MSG(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 1, "%s", why);
	t.flags = CFL_LEASE_COMMAND;
	CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	CHECK_CONTAINS(why, "0 metrics on valid, the lease asked for 1");
	{
		struct cfl_wire_metric v = { "value", 1.5 };

		r.split[0].n_metrics = 1;
		r.split[0].metrics = &v;
		CHECK_MSG(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 1, "%s", why);
		snprintf(v.name, sizeof(v.name), "acc");
		CHECK(cfl_result_check(&c, &t, &r, why, sizeof(why)) == 0);
	}
	cfl_result_check_release(&c);
	cfl_data_release(&d);
}

/* on_progress of t_pool_prune: prunes trial 2 at its second report. */
struct seen_progress {
	int n[4];
	size_t last_step[4];
};

static int prune_second(void *ctx, int64_t trial_id, void *user, size_t step,
			double score, struct cfl_err *err)
{
	struct seen_progress *sp = ctx;

	(void)user;
	(void)err;
	CHECK(trial_id >= 1 && trial_id <= 2);
	if (trial_id < 1 || trial_id > 3)
		return 0;
	CHECK(score <= 0 && score > -10);	/* minus the log loss */
	sp->n[trial_id]++;
	CHECK(step > sp->last_step[trial_id]);
	sp->last_step[trial_id] = step;
	return trial_id == 2 && sp->n[2] == 2;
}

/* Leases with CFL_LEASE_PROGRESS: the workers send an fcnn's validation
 * score each epoch, the pool asks on_progress, and a 1 prunes the trial at
 * once: it ends PRUNED ("pruned at step 2"), never retried, while the
 * other runs to its end; a lease without the flag sends nothing. */
static void t_pool_prune(void)
{
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_pool_opts po;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_params params;
	struct cfl_err err;
	struct seen_progress sp = { { 0 }, { 0 } };
	int r, got = 0;

	cfl_data_opts_init(&o);
	o.path = "datasets/iris.csv";
	o.seed = 3;
	o.valid_frac = 0.2;
	o.valid_frac_given = 1;
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	CHECK(d.valid.n > 0);
	cfl_pool_opts_init(&po);
	po.data = &d;
	po.n_local = 2;
	po.n_metrics = 1;
	po.metrics[0] = CFL_M_ACC;
	po.on_progress = prune_second;
	po.progress_ctx = &sp;
	p = cfl_pool_new(&po, &err);
	CHECK_MSG(p != NULL, "%s", err.msg);
	cfl_params_init(&params);
	CHECK(cfl_params_set(&params, "epochs", "6", &err) == 0);
	for (int i = 1; i <= 2; i++) {
		struct cfl_trial_spec s = spec(i);

		s.model = "fcnn";
		s.params = &params;
		s.flags = CFL_LEASE_PROGRESS;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
	}
	while ((r = cfl_pool_wait(p, &ev, &err)) == CFL_POOL_EVENT) {
		got++;
		if (ev.trial_id == 2) {
			CHECK_INT(ev.status, CFL_TRIAL_PRUNED);
			CHECK_STR(ev.reason, "pruned at step 2");
		} else {
			CHECK_INT(ev.status, CFL_TRIAL_DONE);
		}
	}
	CHECK_MSG(r == CFL_POOL_IDLE, "wait: %d %s", r, r < 0 ? err.msg : "");
	CHECK_INT(got, 2);
	CHECK_INT(sp.n[1], 6);
	CHECK_INT(sp.n[2], 2);
	/* without the flag: no report */
	{
		struct cfl_trial_spec s = spec(3);

		s.model = "fcnn";
		s.params = &params;
		CHECK(cfl_pool_submit(p, &s, &err) == 0);
		CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_EVENT);
		CHECK_INT(ev.status, CFL_TRIAL_DONE);
	}
	CHECK(cfl_pool_close(p, &err) == 0);
	cfl_params_release(&params);
	cfl_data_release(&d);
}

/* One fcnn trial (128-row steps on digits) on a pool of n_local workers:
 * its test predictions into *pred (n rows of k), the claims of spare
 * cores it made. */
static int run_fcnn_trial(size_t n_local, double **pred, uint32_t *n,
			  uint32_t *k)
{
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_pool *p;
	struct cfl_pool_event ev;
	struct cfl_params params;
	struct cfl_trial_spec s = spec(1);
	struct cfl_err err;
	const struct cfl_wire_split *te;
	int claims;

	cfl_data_opts_init(&o);
	o.path = "datasets/digits.csv";
	o.seed = 3;
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	p = new_pool(&d, n_local, NULL, 0);
	claims = cfl_spare_claims();
	cfl_params_init(&params);
	CHECK(cfl_params_set(&params, "hidden", "32", &err) == 0);
	CHECK(cfl_params_set(&params, "batch_size", "128", &err) == 0);
	CHECK(cfl_params_set(&params, "epochs", "8", &err) == 0);
	s.model = "fcnn";
	s.params = &params;
	s.flags = CFL_LEASE_KEEP_TEST;
	CHECK(cfl_pool_submit(p, &s, &err) == 0);
	CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_EVENT);
	CHECK_INT(ev.status, CFL_TRIAL_DONE);
	te = &ev.result->split[1];
	*n = te->n;
	*k = te->n_out;
	*pred = malloc(sizeof(double) * te->n * te->n_out + 1);
	CHECK(*pred);
	memcpy(*pred, te->pred, sizeof(double) * te->n * te->n_out);
	CHECK_INT(cfl_pool_wait(p, &ev, &err), CFL_POOL_IDLE);
	/* idle: every slot offered (an MPI rank lends them to the node's
	 * other ranks); closed: none */
	CHECK_INT(cfl_spare_count(), (int)n_local);
	CHECK(cfl_pool_close(p, &err) == 0);
	CHECK_INT(cfl_spare_count(), 0);
	cfl_params_release(&params);
	cfl_data_release(&d);
	return cfl_spare_claims() - claims;
}

/* A pool with a worker idle and nothing queued lends its core to the
 * running trial (an fcnn fit takes its steps' second halves on a second
 * thread), which gives the same predictions as on a pool of one worker,
 * where no core is spare. */
static void t_pool_spare_core(void)
{
	double *one, *two;
	uint32_t n1, k1, n2, k2;

	CHECK_INT(run_fcnn_trial(1, &one, &n1, &k1), 0);
	CHECK_INT(run_fcnn_trial(2, &two, &n2, &k2), 1);
	CHECK(n1 > 0 && n1 == n2 && k1 == k2);
	CHECK(memcmp(one, two, sizeof(double) * n1 * k1) == 0);
	free(one);
	free(two);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_sched_lifecycle),
	TEST(t_sched_late_result),
	TEST(t_sched_lost_leases),
	TEST(t_seeds),
	TEST(t_execute),
	TEST(t_execute_refit),
	TEST(t_command_trial),
	TEST(t_execute_sample),
	TEST(t_result_check),
	TEST(t_pool_ask_tell),
	TEST(t_pool_fork_per_trial),
	TEST(t_pool_threads),
	TEST(t_pool_spare_core),
	TEST_T(t_pool_model_error, 20),
	TEST(t_pool_hostile_peer),
	TEST(t_pool_commands_contained),
	TEST(t_pool_silent_peer),
	TEST(t_pool_store_and_interrupt),
	TEST_T(t_pool_cancel, 20),
	TEST_T(t_pool_cancel_remote_peer, 20),
	TEST(t_pool_prune),
	{ 0 },
};
