/*
 * The worker: executes one trial (fit, predict, metrics) on data already in
 * memory, and serves leases over a file descriptor.  Runs in a forked child
 * (or a TCP worker's child): it never opens the store and never prints.
 * Invariant: a trial's outcome depends only on the lease (model, params,
 * seed, fold) and the data, never on the process or time it runs in.
 */
#include "cfl/run.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfl/model.h"

uint64_t cfl_trial_seed(uint64_t run_seed, const char *model, int repeat)
{
	return cfl_seed_derive(run_seed, model, (uint64_t)(int64_t)repeat);
}

uint64_t cfl_fold_seed(uint64_t run_seed, int repeat)
{
	return cfl_seed_derive(run_seed, "cfl-folds", (uint64_t)(int64_t)repeat);
}

void cfl_trial_spec_from_lease(struct cfl_trial_spec *spec,
			       const struct cfl_wire_lease *l, int64_t local_id)
{
	memset(spec, 0, sizeof(*spec));
	spec->trial_id = local_id;
	spec->model = l->model;
	spec->params = &l->params;
	spec->seed = l->seed;
	spec->fold_seed = l->fold_seed;
	spec->repeat = l->repeat;
	spec->fold = l->fold;
	spec->n_folds = (int)l->n_folds;
	spec->flags = l->flags;
	spec->prev_attempts = (int)l->attempt - 1;
	spec->budget_s = l->budget_s;
	spec->sample_rows = l->sample_rows;
}

void cfl_worker_set_threads(int n)
{
	char v[16];

	if (n < 1)
		n = 1;
	snprintf(v, sizeof(v), "%d", n);
	setenv("OPENBLAS_NUM_THREADS", v, 1);
	setenv("OMP_NUM_THREADS", v, 1);
	cfl_model_set_threads(n);
}

/* ---- worker: fault injection (tests only) ---- */

/* CFL_TEST_FAULT=KIND[:REPEAT[:ATTEMPTS]] makes the trials of repeat REPEAT
 * (every trial when absent) fail on attempts 1..ATTEMPTS (every attempt when
 * absent): segv (killed by SIGSEGV), hang (never returns), exit3 (the child
 * exits with 3), oom (allocates until refused), error (a model error), slow
 * (no failure: the trial takes 0.3 s longer). */
static void maybe_fault(const struct cfl_wire_lease *l, struct cfl_wire_result *res)
{
	const char *fault = getenv("CFL_TEST_FAULT");
	char kind[16];
	long rep = -1, attempts = -1;
	int n;

	if (!fault || !*fault)
		return;
	n = sscanf(fault, "%15[a-z0-9]:%ld:%ld", kind, &rep, &attempts);
	if (n < 1 || (n >= 2 && rep != l->repeat) ||
	    (n >= 3 && (long)l->attempt > attempts))
		return;
	if (!strcmp(kind, "segv")) {
		struct sigaction sa;

		/* the default action, even under a sanitizer's handler */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGSEGV, &sa, NULL);
		kill(getpid(), SIGSEGV);
	} else if (!strcmp(kind, "hang")) {
		for (;;)
			pause();
	} else if (!strcmp(kind, "slow")) {
		/* not a fault: the trial takes 0.3 s longer (tests that act
		 * while trials run) */
		struct timespec ts = { 0, 300000000L };

		nanosleep(&ts, NULL);
	} else if (!strcmp(kind, "exit3")) {
		_exit(3);
	} else if (!strcmp(kind, "oom")) {
#if defined(__SANITIZE_ADDRESS__)
		/* ASan reserves terabytes of shadow memory: no address-space
		 * limit possible, so pretend */
		res->status = CFL_RESULT_MODEL_ERROR;
		res->error = strdup("out of memory");
		return;
#else
		/* bound the damage on a shared machine: 256 MB of address
		 * space more than now, then free it all so the child lives on */
		struct rlimit old, rl;
		void *head = NULL;
		unsigned long vm_pages = 0;
		FILE *f = fopen("/proc/self/statm", "r");

		if (f) {
			if (fscanf(f, "%lu", &vm_pages) != 1)
				vm_pages = 0;
			fclose(f);
		}
		getrlimit(RLIMIT_AS, &old);
		rl = old;
		rl.rlim_cur = (rlim_t)vm_pages * (rlim_t)sysconf(_SC_PAGESIZE) +
			      ((rlim_t)256 << 20);
		if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < rl.rlim_cur)
			rl.rlim_cur = old.rlim_cur;
		setrlimit(RLIMIT_AS, &rl);
		for (;;) {
			void **p = malloc(16 << 20);

			if (!p)
				break;
			memset(p, 1, 16 << 20);
			*p = head;
			head = p;
		}
		while (head) {
			void *next = *(void **)head;

			free(head);
			head = next;
		}
		setrlimit(RLIMIT_AS, &old);
		res->status = CFL_RESULT_MODEL_ERROR;
		res->error = strdup("out of memory");
		return;
#endif
	} else if (!strcmp(kind, "error")) {
		res->status = CFL_RESULT_MODEL_ERROR;
		res->error = strdup("injected model error");
	}
}

/* ---- worker: a command trial (cfl tune --command) ---- */

static void set_model_error(struct cfl_wire_result *res, const char *msg);

/* Appends what is readable on fd to b (at most cap bytes kept: the tail);
 * returns 0 at EOF, 1 when more may come. */
static int drain(int fd, struct cfl_buf *b, size_t cap)
{
	char chunk[4096];
	ssize_t k = read(fd, chunk, sizeof(chunk));

	if (k < 0 && errno == EINTR)
		return 1;
	if (k <= 0)
		return 0;
	cfl_buf_append(b, chunk, (size_t)k);
	if (b->len > cap) {
		memmove(b->data, b->data + b->len - cap, cap);
		b->len = cap;
		b->data[cap] = 0;
	}
	return 1;
}

/* ---- worker: containing a command's processes ---- */

/*
 * A command may start processes of its own (a subshell, a background job,
 * a training script's data loaders, `timeout`, which moves its child to a
 * process group of its own).  Each trial's command runs under a small
 * supervisor process between the worker and the command:
 *
 *     worker --ctl socket-- supervisor --fork-- sh -c CMD
 *
 * The supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER): a
 * descendant whose parent dies becomes its child, not init's, so every
 * process the command starts stays below it whatever group or session it
 * moves to (setsid, setpgid, `set -m`, nohup, a double fork).  When the
 * command ends, and when the worker goes -- EOF on the control socket,
 * whatever killed the worker (--trial-timeout, a cancel, a crash, kill -9,
 * or the coordinator's own death, which kills the worker through its
 * PR_SET_PDEATHSIG) -- the supervisor kills every descendant (read from
 * /proc) until it has no child left.  PR_SET_PDEATHSIG on the command
 * alone would not do: it reaches only the shell, and a process killed with
 * SIGKILL cannot clean up after itself; the supervisor runs no trial code,
 * so it outlives the worker long enough to clean up.  What still escapes:
 * work a command hands to a process that is not its descendant (a daemon
 * it asks to start something: systemd-run, at, docker, ssh to another
 * machine), and everything when the supervisor itself is killed with
 * SIGKILL (its orphans then go to init).
 */

/* Sends SIGKILL to every process below self (pids from /proc; parents
 * listed after their children are found in the next round).  Returns how
 * many were signalled. */
static size_t kill_descendants(pid_t self)
{
	pid_t *pid = NULL, *ppid = NULL;
	size_t n = 0, cap = 0, n_killed = 0;
	unsigned char *mark;
	DIR *dir = opendir("/proc");
	struct dirent *de;

	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		char path[64], buf[512], *rp;
		long v, pp;
		ssize_t k;
		int fd;

		v = strtol(de->d_name, &rp, 10);
		if (*rp || v <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", v);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (k <= 0)
			continue;
		buf[k] = 0;
		/* "pid (comm) state ppid ...": comm may hold anything, so
		 * read after its last ')' */
		rp = strrchr(buf, ')');
		if (!rp || sscanf(rp + 1, " %*c %ld", &pp) != 1)
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 512;
			pid_t *a = realloc(pid, nc * sizeof(*a));
			pid_t *b = a ? realloc(ppid, nc * sizeof(*b)) : NULL;

			if (a)
				pid = a;
			if (!b)
				break;
			ppid = b;
			cap = nc;
		}
		pid[n] = (pid_t)v;
		ppid[n++] = (pid_t)pp;
	}
	closedir(dir);
	mark = calloc(n ? n : 1, 1);
	/* the closure of "parent is self or marked" (a few passes: a tree
	 * is shallow) */
	for (int changed = 1; mark && changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (mark[i])
				continue;
			if (ppid[i] == self)
				mark[i] = 1;
			for (size_t j = 0; j < n && !mark[i]; j++)
				if (mark[j] && pid[j] == ppid[i])
					mark[i] = 1;
			changed |= mark[i];
		}
	}
	for (size_t i = 0; mark && i < n; i++)
		if (mark[i] && kill(pid[i], SIGKILL) == 0)
			n_killed++;
	free(mark);
	free(pid);
	free(ppid);
	return n_killed;
}

/* Kills everything below the supervisor and reaps it: done when no child
 * is left (a subreaper's orphans are its children, so none is below it
 * then either). */
static void kill_all_below(void)
{
	pid_t self = getpid();

	for (;;) {
		pid_t r;

		kill_descendants(self);
		r = waitpid(-1, NULL, 0);
		if (r < 0 && errno == ECHILD)
			break;
	}
}

/* The command (a child of the supervisor): never returns. */
static void command_exec(const struct cfl_wire_lease *l, int out_fd, int err_fd,
			 const sigset_t *mask)
{
	char v[32];
	int null_fd;

	/* its own group, so a Ctrl-C meant for cfl does not reach it (the
	 * supervisor sets it too, so a kill never races the child's
	 * setpgid) */
	setpgid(0, 0);
	/* belt and braces: the shell dies with the supervisor */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	/* no terminal input: a background group reading it would stop */
	null_fd = open("/dev/null", O_RDONLY);
	if (null_fd >= 0 && null_fd != 0) {
		dup2(null_fd, 0);
		close(null_fd);
	}
	dup2(out_fd, 1);
	dup2(err_fd, 2);
	if (out_fd > 2)
		close(out_fd);
	if (err_fd > 2)
		close(err_fd);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)l->seed);
	setenv("CFL_TRIAL_SEED", v, 1);
	snprintf(v, sizeof(v), "%d", l->repeat);
	setenv("CFL_TRIAL_REPEAT", v, 1);
	execl("/bin/sh", "sh", "-c", l->model, (char *)NULL);
	_exit(127);
}

/* The supervisor (a child of the worker): starts the command in its own
 * group, then waits for whichever comes first: the command's end (its wait
 * status goes to the worker over ctl) or EOF on ctl (the worker is gone).
 * Either way every process below it is killed first.  Never returns. */
static void supervise(const struct cfl_wire_lease *l, int ctl, int out_fd,
		      int err_fd)
{
	sigset_t chld, old;
	struct pollfd pf[2];
	int sfd, status = 0;
	pid_t pid;

	/* SIGCHLD through a descriptor, so one poll sees both events (and
	 * not ignored, or the command would be reaped unseen) */
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC);
	if (sfd < 0)
		_exit(126);
	/* orphans below us become our children, not init's (see above) */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		_exit(126);
	pid = fork();
	if (pid < 0)
		_exit(126);
	if (pid == 0) {
		close(ctl);
		close(sfd);
		command_exec(l, out_fd, err_fd, &old);
	}
	setpgid(pid, pid);
	close(out_fd);
	close(err_fd);
	pf[0].fd = ctl;
	pf[0].events = POLLIN;
	pf[1].fd = sfd;
	pf[1].events = POLLIN;
	for (;;) {
		siginfo_t si;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)	/* EOF (or a byte): the worker is gone */
			break;
		if (pf[1].revents) {
			struct signalfd_siginfo ssi;
			ssize_t k = read(sfd, &ssi, sizeof(ssi));

			(void)k;
		}
		/* reap orphans that ended (they became our children);
		 * WNOWAIT first: the command stays a zombie until every
		 * process below us is killed */
		for (;;) {
			si.si_pid = 0;
			if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) ||
			    !si.si_pid || si.si_pid == pid)
				break;
			waitpid(si.si_pid, NULL, 0);
		}
		if (si.si_pid == pid) {
			ssize_t k;

			/* the command is over, and so is every process it
			 * left behind */
			kill(-pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			kill_all_below();
			k = send(ctl, &status, sizeof(status), MSG_NOSIGNAL);
			_exit(k == (ssize_t)sizeof(status) ? 0 : 1);
		}
	}
	kill(-pid, SIGKILL);
	kill_all_below();
	_exit(0);
}

/* Runs l->model with /bin/sh -c, CFL_TRIAL_SEED and CFL_TRIAL_REPEAT in its
 * environment, contained as above; the last non-empty line of its stdout
 * must be a number: the metric "value" on the validation split.  Anything
 * else is a model error naming the exit status and the tail of stderr. */
static void run_command(const struct cfl_wire_lease *l, struct cfl_wire_result *res)
{
	struct cfl_buf out, errb;
	int po[2], pe[2], ctl[2], status = 0, have_status = 0;
	size_t got = 0;
	pid_t pid;
	char msg[1024];

	cfl_buf_init(&out);
	cfl_buf_init(&errb);
	/* close-on-exec everywhere: the command gets its pipes through dup2,
	 * and nothing else of ours (above all the worker's end of ctl, whose
	 * EOF tells the supervisor the worker is gone) */
	if (pipe2(po, O_CLOEXEC)) {
		set_model_error(res, "cannot create a pipe");
		return;
	}
	if (pipe2(pe, O_CLOEXEC)) {
		close(po[0]);
		close(po[1]);
		set_model_error(res, "cannot create a pipe");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl)) {
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		set_model_error(res, "cannot create a socketpair");
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		close(ctl[0]);
		close(ctl[1]);
		set_model_error(res, "cannot fork the command");
		return;
	}
	if (pid == 0) {
		close(po[0]);
		close(pe[0]);
		close(ctl[0]);
		supervise(l, ctl[1], po[1], pe[1]);
	}
	close(po[1]);
	close(pe[1]);
	close(ctl[1]);
	{
		int open_o = 1, open_e = 1, open_c = 1;
		double deadline = -1;

		/* until the supervisor has said how the command ended and the
		 * pipes are drained; a pipe still open a second after the
		 * group was killed is held by a process that left the group:
		 * not waited for */
		while (open_o || open_e || open_c) {
			struct pollfd pf[3];
			int timeout = -1, n;

			if (!open_c && deadline < 0)
				deadline = cfl_now() + 1.0;
			if (deadline >= 0) {
				double left = deadline - cfl_now();

				if (left <= 0)
					break;
				timeout = (int)(left * 1000) + 1;
			}
			pf[0].fd = open_o ? po[0] : -1;
			pf[1].fd = open_e ? pe[0] : -1;
			pf[2].fd = open_c ? ctl[0] : -1;
			for (int i = 0; i < 3; i++)
				pf[i].events = POLLIN;
			n = poll(pf, 3, timeout);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if (open_o && pf[0].revents)
				open_o = drain(po[0], &out, 65536);
			if (open_e && pf[1].revents)
				open_e = drain(pe[0], &errb, 600);
			if (open_c && pf[2].revents) {
				ssize_t k = read(ctl[0], (char *)&status + got,
						 sizeof(status) - got);

				if (k < 0 && errno == EINTR)
					continue;
				if (k > 0)
					got += (size_t)k;
				if (k <= 0 || got == sizeof(status)) {
					have_status = got == sizeof(status);
					open_c = 0;
				}
			}
		}
	}
	close(po[0]);
	close(pe[0]);
	close(ctl[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (!have_status) {
		set_model_error(res, "the command's supervisor was lost");
		goto out;
	}
	{
		char *line = NULL, *end;
		double v;

		/* the last non-empty line of stdout */
		if (out.data) {
			char *p = out.data + out.len;

			while (p > out.data && (p[-1] == '\n' || p[-1] == '\r' ||
						p[-1] == ' ' || p[-1] == '\t'))
				*--p = 0;
			while (p > out.data && p[-1] != '\n')
				p--;
			line = p;
			while (*line == ' ' || *line == '\t')
				line++;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && line && *line) {
			errno = 0;
			v = strtod(line, &end);
			if (end != line && !*end && !errno && isfinite(v)) {
				res->split[0].metrics = calloc(1, sizeof(*res->split[0].metrics));
				if (res->split[0].metrics) {
					res->split[0].n_metrics = 1;
					snprintf(res->split[0].metrics[0].name,
						 sizeof(res->split[0].metrics[0].name), "value");
					res->split[0].metrics[0].value = v;
				}
				goto out;
			}
		}
		if (WIFSIGNALED(status))
			snprintf(msg, sizeof(msg), "command killed by signal %d", WTERMSIG(status));
		else if (WEXITSTATUS(status))
			snprintf(msg, sizeof(msg), "command exit %d", WEXITSTATUS(status));
		else
			snprintf(msg, sizeof(msg), "command printed no number on its last line ('%.80s')",
				 line ? line : "");
		if (errb.len) {
			size_t n = strlen(msg);

			snprintf(msg + n, sizeof(msg) - n, ": %s", errb.data);
			n = strlen(msg);
			while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
				msg[--n] = 0;
		}
		set_model_error(res, msg);
	}
out:
	cfl_buf_release(&out);
	cfl_buf_release(&errb);
}

/* ---- worker: one trial ---- */

void cfl_trial_result_release(struct cfl_wire_result *res)
{
	struct cfl_wire_msg m;

	m.type = CFL_WIRE_RESULT;
	m.u.result = *res;
	cfl_wire_msg_release(&m);
	memset(res, 0, sizeof(*res));
}

/* Predicts x and computes the lease's metrics into sp (pred kept when keep). */
static int score_split(const struct cfl_model *m, const struct cfl_xy *xy,
		       const struct cfl_wire_lease *l, int keep,
		       struct cfl_wire_split *sp, struct cfl_err *err)
{
	size_t n_out = cfl_model_n_out(m);
	double *out;

	if (xy->n == 0)
		return 0;
	out = cfl_calloc(xy->n * n_out, sizeof(double), err);
	if (!out)
		return -1;
	if (cfl_model_predict(m, xy->x, xy->n, out, err)) {
		free(out);
		return -1;
	}
	if (l->n_metrics) {
		sp->metrics = cfl_calloc(l->n_metrics, sizeof(*sp->metrics), err);
		if (!sp->metrics) {
			free(out);
			return -1;
		}
	}
	for (uint32_t i = 0; i < l->n_metrics; i++) {
		const struct cfl_metric_info *mi = cfl_metric_info(l->metrics[i]);
		struct cfl_err merr;
		double v;

		snprintf(sp->metrics[i].name, sizeof(sp->metrics[i].name), "%s",
			 mi ? mi->name : "?");
		/* an undefined metric (auc with a class missing) is NaN */
		if (!mi || cfl_metric_eval(l->metrics[i], xy->y, out, xy->n,
					   xy->n_classes, &v, &merr))
			v = NAN;
		sp->metrics[i].value = v;
	}
	sp->n_metrics = l->n_metrics;
	if (keep) {
		sp->n = (uint32_t)xy->n;
		sp->n_out = (uint32_t)n_out;
		sp->pred = out;
	} else {
		free(out);
	}
	return 0;
}

static void set_model_error(struct cfl_wire_result *res, const char *msg)
{
	for (int s = 0; s < CFL_WIRE_N_SPLITS; s++) {
		free(res->split[s].metrics);
		free(res->split[s].pred);
		free(res->split[s].rows);
		memset(&res->split[s], 0, sizeof(res->split[s]));
	}
	free(res->model);
	res->model = NULL;
	res->status = CFL_RESULT_MODEL_ERROR;
	free(res->error);
	res->error = strdup(msg[0] ? msg : "model error");
}

/* Shuffles per column for a trial's permutation importance. */
#define IMPORTANCE_REPEATS 5

/* The fitted model's importance by input column into res: impurity when
 * the model has it, permutation on the validation part when the lease asks.
 * What cannot be computed (a metric undefined on the validation part) is
 * left out: the trial's result stands without it. */
static void trial_importance(const struct cfl_model *m, const struct cfl_data *data,
			     const struct cfl_wire_lease *l, struct cfl_wire_result *res)
{
	struct cfl_importance imp;
	struct cfl_err ierr;
	int perm = (l->flags & CFL_LEASE_IMPORTANCE) && data->valid.n && l->n_metrics;

	if (cfl_importance_by_column(m, &data->enc, perm ? &data->valid : NULL,
				     perm ? l->metrics[0] : 0, IMPORTANCE_REPEATS,
				     cfl_seed_derive(l->seed, "importance", 0), &imp, &ierr) &&
	    (!perm || cfl_importance_by_column(m, &data->enc, NULL, 0, 0, 0, &imp, &ierr)))
		return;
	if (!imp.n || (!imp.impurity && !imp.permutation)) {
		cfl_importance_release(&imp);
		return;
	}
	res->n_columns = (uint32_t)imp.n;
	res->impurity = imp.impurity;
	res->permutation = imp.permutation;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

int cfl_trial_execute(const struct cfl_data *data,
		      const struct cfl_wire_lease *l,
		      struct cfl_wire_result *res, struct cfl_err *err)
{
	return cfl_trial_execute_progress(data, l, NULL, NULL, res, err);
}

int cfl_trial_execute_progress(const struct cfl_data *data,
			       const struct cfl_wire_lease *l,
			       int (*progress)(void *ctx, size_t step, double score),
			       void *ctx, struct cfl_wire_result *res,
			       struct cfl_err *err)
{
	const struct cfl_model_ops *ops;
	struct cfl_model *m = NULL;
	struct cfl_xy fit, oof;
	const struct cfl_xy *fit_rows = &fit;
	struct cfl_err merr;
	size_t *idx = NULL, *fold = NULL, n_fit = 0, n_oof = 0;
	uint32_t *oof_rows = NULL;
	double t0 = cfl_now(), t1, t2;
	struct rusage ru;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	res->trial_id = l->trial_id;
	res->attempt = l->attempt;
	cfl_xy_init(&fit);
	cfl_xy_init(&oof);
	maybe_fault(l, res);
	if (res->status != CFL_RESULT_OK || (l->flags & CFL_LEASE_NOOP))
		goto timings;
	if (l->flags & CFL_LEASE_COMMAND) {
		run_command(l, res);
		goto timings;
	}
	ops = cfl_model_find(l->model);
	if (!ops) {
		cfl_err_set(err, "unknown model '%s'", l->model);
		goto fail;
	}
	if (l->fold >= 0 && (l->n_folds < 2 || (size_t)l->n_folds > data->train.n)) {
		cfl_err_set(err, "fold %d of %u: bad fold count", l->fold, l->n_folds);
		goto fail;
	}

	/* the rows to fit on: train, minus a fold, or a bootstrap sample */
	idx = cfl_calloc(data->train.n ? data->train.n : 1, sizeof(size_t), err);
	if (!idx)
		goto fail;
	if (l->fold >= 0) {
		fold = cfl_calloc(data->train.n, sizeof(size_t), err);
		oof_rows = cfl_calloc(data->train.n, sizeof(uint32_t), err);
		if (!fold || !oof_rows ||
		    cfl_split_kfold(fold, data->train.y, data->train.n,
				    data->train.n_classes, l->n_folds,
				    l->fold_seed, err))
			goto fail;
		for (size_t i = 0; i < data->train.n; i++) {
			if (fold[i] == (size_t)l->fold)
				oof_rows[n_oof++] = (uint32_t)i;
			else
				idx[n_fit++] = i;
		}
	} else {
		for (size_t i = 0; i < data->train.n; i++)
			idx[n_fit++] = i;
	}
	if (l->sample_rows && l->sample_rows < n_fit &&
	    !(l->flags & CFL_LEASE_REFIT)) {
		/* a row sample (auto's search and bags on large data): the
		 * first sample_rows of a seeded shuffle, kept in row order;
		 * drawn with the fold seed, so every trial of the run picking
		 * from the same rows gets the same sample (and a larger one
		 * holds a smaller) */
		struct cfl_rng r;

		cfl_rng_seed(&r, cfl_seed_derive(l->fold_seed, "sample", 0));
		for (size_t i = 0; i < l->sample_rows; i++) {
			size_t j = i + cfl_rng_below(&r, n_fit - i), t = idx[i];

			idx[i] = idx[j];
			idx[j] = t;
		}
		n_fit = (size_t)l->sample_rows;
		qsort(idx, n_fit, sizeof(*idx), cmp_size);
	}
	if ((l->flags & CFL_LEASE_REFIT) && (l->fold >= 0 || (l->flags & CFL_LEASE_BOOTSTRAP))) {
		cfl_err_set(err, "a refit on train and validation takes neither folds nor a bootstrap");
		goto fail;
	}
	if (l->flags & CFL_LEASE_BOOTSTRAP) {
		/* n_fit draws with replacement from the rows kept so far; the
		 * sample depends on the trial seed only */
		struct cfl_rng r;
		size_t *pick = cfl_calloc(n_fit ? n_fit : 1, sizeof(size_t), err);

		if (!pick)
			goto fail;
		cfl_rng_seed(&r, cfl_seed_derive(l->seed, "bootstrap", 0));
		for (size_t i = 0; i < n_fit; i++)
			pick[i] = idx[cfl_rng_below(&r, n_fit)];
		free(idx);
		idx = pick;
	}
	if (l->flags & CFL_LEASE_REFIT) {
		/* tune's refit: every row the search saw, train and validation */
		if (cfl_xy_concat(&fit, &data->train, &data->valid, err))
			goto fail;
	} else if (l->fold < 0 && !(l->flags & CFL_LEASE_BOOTSTRAP) &&
		   n_fit == data->train.n) {
		/* every train row in order: the rows themselves (a copy
		 * would double the memory and the cache they take) */
		fit_rows = &data->train;
	} else if (cfl_xy_take(&fit, &data->train, idx, n_fit, err)) {
		goto fail;
	}

	m = cfl_model_new(ops, &l->params, l->seed, &merr);
	if (!m) {
		set_model_error(res, merr.msg);
		goto timings;
	}
	if (l->budget_s > 0) {
		/* what is left of the trial's budget after picking its rows
		 * (at least a sliver: the model still makes its first unit) */
		double left = l->budget_s - (cfl_now() - t0);

		m->budget_s = left > 1e-6 ? left : 1e-6;
	}
	if (progress && (l->flags & CFL_LEASE_PROGRESS)) {
		m->report = progress;
		m->report_ctx = ctx;
	}
	if (cfl_model_fit(m, fit_rows, data->valid.n && !(l->flags & CFL_LEASE_REFIT)
				   ? &data->valid : NULL, &merr)) {
		set_model_error(res, merr.msg);
		goto timings;
	}
	t1 = cfl_now();
	res->fit_seconds = t1 - t0;
	res->n_iter_kept = (uint32_t)m->n_iter_kept;
	/* a refit trained on the validation rows: no score there */
	if ((!(l->flags & CFL_LEASE_REFIT) &&
	     score_split(m, &data->valid, l, !!(l->flags & CFL_LEASE_KEEP_VALID),
			 &res->split[0], &merr)) ||
	    score_split(m, &data->test, l, !!(l->flags & CFL_LEASE_KEEP_TEST),
			&res->split[1], &merr)) {
		set_model_error(res, merr.msg);
		goto timings;
	}
	if (n_oof) {
		size_t *oi = cfl_calloc(n_oof, sizeof(size_t), err);

		if (!oi)
			goto fail;
		for (size_t i = 0; i < n_oof; i++)
			oi[i] = oof_rows[i];
		if (cfl_xy_take(&oof, &data->train, oi, n_oof, err)) {
			free(oi);
			goto fail;
		}
		free(oi);
		if (score_split(m, &oof, l, !!(l->flags & CFL_LEASE_KEEP_OOF),
				&res->split[2], &merr)) {
			set_model_error(res, merr.msg);
			goto timings;
		}
		if (res->split[2].pred) {
			res->split[2].rows = oof_rows;
			oof_rows = NULL;
		}
	}
	if (l->flags & CFL_LEASE_KEEP_MODEL) {
		struct cfl_buf text;

		/* the fitted model itself, for a bundle: without the encoder,
		 * which remote workers do not have (the coordinator adds it) */
		cfl_buf_init(&text);
		if (cfl_model_format(m, NULL, &text, &merr)) {
			cfl_buf_release(&text);
			set_model_error(res, merr.msg);
			goto timings;
		}
		res->model = text.data;
	}
	t2 = cfl_now();
	res->predict_seconds = t2 - t1;
	trial_importance(m, data, l, res);
timings:
	res->duration = cfl_now() - t0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		res->peak_rss_kb = (uint64_t)ru.ru_maxrss;
	rc = 0;
fail:
	if (rc)
		cfl_trial_result_release(res);
	cfl_model_free(m);
	cfl_xy_release(&fit);
	cfl_xy_release(&oof);
	free(idx);
	free(fold);
	free(oof_rows);
	return rc;
}

/* ---- worker: serving leases over a descriptor ---- */

static int write_all(int fd, const void *buf, size_t len, struct cfl_err *err)
{
	const char *p = buf;

	while (len) {
		ssize_t k = write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return cfl_err_set(err, "worker: cannot write: %s",
					   strerror(errno));
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

static int send_msg(int fd, uint64_t *seq, const struct cfl_wire_msg *m,
		    struct cfl_buf *b, struct cfl_err *err)
{
	b->len = 0;
	if (cfl_wire_encode(b, (*seq)++, 0, m, err))
		return -1;
	return write_all(fd, b->data, b->len, err);
}

/* Where a running trial's PROGRESS frames go: the coordinator's fd; in:
 * the serve loop's buffer of frames read and not handled yet. */
struct progress_sink {
	int fd;
	uint64_t *seq;
	const struct cfl_wire_lease *lease;
	struct cfl_buf *in;
};

/* Reads into ps->in what the coordinator has sent so far, without
 * waiting, and takes out a CANCEL of the running lease if one came: 1
 * then (the coordinator pruned it), else 0.  The other frames stay for
 * the serve loop, in their order; a broken or half frame is left to it. */
static int cancelled_now(struct progress_sink *ps)
{
	struct cfl_buf *in = ps->in;
	struct pollfd pfd = { ps->fd, POLLIN, 0 };
	size_t off = 0;

	while (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN)) {
		ssize_t k;

		if (cfl_buf_reserve(in, 65536))
			break;
		k = read(ps->fd, in->data + in->len, 65536);
		if (k <= 0)	/* EOF or an error: the serve loop sees it */
			break;
		in->len += (size_t)k;
	}
	while (off < in->len) {
		struct cfl_wire_frame f;
		struct cfl_wire_msg msg;
		struct cfl_err err;
		int hit;

		/* frames split, only a CANCEL's payload decoded */
		if (cfl_wire_frame_split(in->data + off, in->len - off, &f, &err))
			return 0;
		hit = f.type == CFL_WIRE_CANCEL &&
		      !cfl_wire_payload_decode(f.type, f.payload, f.length, &msg, &err);
		if (hit) {
			hit = msg.u.cancel.trial_id == ps->lease->trial_id &&
			      msg.u.cancel.attempt == ps->lease->attempt;
			cfl_wire_msg_release(&msg);
		}
		if (hit) {
			memmove(in->data + off, in->data + off + f.size,
				in->len - off - f.size);
			in->len -= f.size;
			return 1;
		}
		off += f.size;
	}
	return 0;
}

/* Sends the model's intermediate score, then looks whether the
 * coordinator pruned the trial on the scores before (its CANCEL): 1 stops
 * the fit there (it fails "pruned at step N", a result the coordinator
 * drops), so this process serves the next lease instead of being killed
 * and forked again.  A frame that cannot be sent is dropped: the result
 * still counts. */
static int send_progress(void *ctx, size_t step, double score)
{
	struct progress_sink *ps = ctx;
	struct cfl_wire_msg m;
	struct cfl_buf b;
	struct cfl_err err;

	cfl_wire_msg_init(&m, CFL_WIRE_PROGRESS);
	m.u.progress.trial_id = ps->lease->trial_id;
	m.u.progress.attempt = ps->lease->attempt;
	m.u.progress.step = step > UINT32_MAX ? UINT32_MAX : (uint32_t)step;
	m.u.progress.score = score;
	cfl_buf_init(&b);
	if (!cfl_wire_encode(&b, (*ps->seq)++, 0, &m, &err))
		(void)write_all(ps->fd, b.data, b.len, &err);
	cfl_buf_release(&b);
	return cancelled_now(ps);
}

int cfl_worker_serve(int fd, const struct cfl_data *data, const char *name,
		     size_t max_trials, int allow_commands, struct cfl_err *err)
{
	struct cfl_buf in, out;
	struct cfl_wire_msg m;
	uint64_t seq = 0;
	size_t n_done = 0;
	int rc = -1, threads = 0;

	cfl_buf_init(&in);
	cfl_buf_init(&out);
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = CFL_WIRE_VERSION;
	m.u.hello.n_slots = 1;
	m.u.hello.name = (char *)name;
	if (send_msg(fd, &seq, &m, &out, err))
		goto done;
	for (;;) {
		struct cfl_wire_frame f;
		struct cfl_wire_msg msg;
		int r = cfl_wire_decode(in.data, in.len, &f, &msg, err);

		if (r < 0)
			goto done;
		if (r == 1) {
			ssize_t k;

			if (cfl_buf_reserve(&in, 65536)) {
				cfl_err_set(err, "worker: out of memory");
				goto done;
			}
			k = read(fd, in.data + in.len, 65536);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				cfl_err_set(err, "worker: cannot read: %s",
					    strerror(errno));
				goto done;
			}
			if (k == 0) {	/* the coordinator is gone */
				rc = 0;
				goto done;
			}
			in.len += (size_t)k;
			continue;
		}
		memmove(in.data, in.data + f.size, in.len - f.size);
		in.len -= f.size;
		if (msg.type == CFL_WIRE_SHUTDOWN) {
			cfl_wire_msg_release(&msg);
			rc = 0;
			goto done;
		}
		if (msg.type == CFL_WIRE_LEASE) {
			struct cfl_wire_msg res;
			struct cfl_err terr;

			/* the lease says how many BLAS threads it may use */
			if (msg.u.lease.threads && (int)msg.u.lease.threads != threads) {
				threads = (int)msg.u.lease.threads;
				cfl_worker_set_threads(threads);
			}

			cfl_wire_msg_init(&res, CFL_WIRE_RESULT);
			r = 0;
			if ((msg.u.lease.flags & CFL_LEASE_COMMAND) && !allow_commands) {
				/* a pool that was not told its trials are the
				 * user's own commands runs none: the lease may
				 * come from a network peer */
				res.u.result.trial_id = msg.u.lease.trial_id;
				res.u.result.attempt = msg.u.lease.attempt;
				set_model_error(&res.u.result, "refused: this worker "
						"runs no shell commands");
			} else {
				struct progress_sink ps = { fd, &seq, &msg.u.lease, &in };

				r = cfl_trial_execute_progress(data, &msg.u.lease,
							       send_progress, &ps,
							       &res.u.result, &terr);
			}
			if (r) {
				res.u.result.trial_id = msg.u.lease.trial_id;
				res.u.result.attempt = msg.u.lease.attempt;
				res.u.result.status = CFL_RESULT_MODEL_ERROR;
				res.u.result.error = strdup(terr.msg);
			}
			cfl_wire_msg_release(&msg);
			r = send_msg(fd, &seq, &res, &out, err);
			cfl_wire_msg_release(&res);
			if (r)
				goto done;
			if (max_trials && ++n_done >= max_trials) {
				rc = 0;
				goto done;
			}
			continue;
		}
		/* RESULT_ACK, CANCEL (one slot, synchronous: nothing to
		 * cancel), HEARTBEAT, WELCOME: nothing to do */
		cfl_wire_msg_release(&msg);
	}
done:
	cfl_buf_release(&in);
	cfl_buf_release(&out);
	return rc;
}
