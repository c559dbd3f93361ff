/*
 * cfl_study_run: a whole run in one call, for repeat, tune and auto alike
 * and on every backend (cfl/study.h lists its steps).  One invariant: the
 * pool forks after the data is loaded and before any BLAS call, and under
 * MPI only rank 0's coordinator gets past study_backend_start.  The
 * commands give a plan and hooks and print from the store; everything
 * between is here.  Never prints, never exits.
 */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cfl/bundle.h"

/* ---- signals: SIGINT and SIGTERM interrupt the pool ---- */

static struct cfl_pool *volatile g_pool;
static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	g_interrupted = 1;
	if (g_pool)
		cfl_pool_interrupt(g_pool);
}

/* ---- one run's state ---- */

struct run {
	struct cfl_study_plan *p;
	const struct cfl_study_hooks *h;
	struct study_backend b;
	struct cfl_data data;
	int loaded;			/* data is ours to release */
	struct cfl_study *study;
	int caught;			/* the handlers below are ours */
	struct sigaction old_int, old_term;
	char valid_why[256];
};

static void emit(struct run *r, enum cfl_study_event_kind kind,
		 const char *text, int status)
{
	struct cfl_study_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = kind;
	ev.text = text;
	ev.status = status;
	ev.data = r->loaded ? &r->data : NULL;
	ev.resumed = r->study ? cfl_study_resumed(r->study) : 0;
	cfl_study_emit(&r->h->listener, &ev);
}

static void catch_signals(struct run *r)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	/* restart reads (the data load): the pool's poll() still wakes up */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &r->old_int);
	sigaction(SIGTERM, &sa, &r->old_term);
	r->caught = 1;
}

/* The metrics the plan names, now that the task is known. */
static int resolve_metrics(struct cfl_study_plan *p, const struct cfl_data *d,
			   struct cfl_err *err)
{
	int n_classes = d->train.n_classes;
	enum cfl_metric_id id;
	long n;

	if (p->kind != CFL_RUN_REPEAT) {
		if (!p->metric_arg)
			id = (enum cfl_metric_id)cfl_metric_lookup(n_classes ? "acc" : "mse");
		else if (strchr(p->metric_arg, ','))
			return cfl_err_set(err, "--metric: one metric only");
		else if (cfl_metric_parse_list(p->metric_arg, n_classes, &id, 1, err) != 1)
			return cfl_err_prefix(err, "--metric");
		if (p->kind == CFL_RUN_TUNE)
			p->tune.metric = id;
		else
			p->autop.metric = id;
	}
	if (!p->metrics_arg) {
		if (p->kind == CFL_RUN_REPEAT)
			p->n_metrics = cfl_metric_defaults(n_classes, p->metrics,
							   CFL_WIRE_MAX_METRICS);
		return 0;
	}
	n = cfl_metric_parse_list(p->metrics_arg, n_classes, p->metrics,
				  CFL_WIRE_MAX_METRICS, err);
	if (n < 0)
		return cfl_err_prefix(err, "--metrics");
	p->n_metrics = (size_t)n;
	return 0;
}

/* The options that cannot go together, before anything starts. */
static int check_options(const struct cfl_study_plan *p, struct cfl_err *err)
{
	const struct cfl_study_tune_plan *t = &p->tune;

	if (p->kind == CFL_RUN_TUNE && t->command) {
		if (t->model)
			return cfl_err_set(err, "--model and --command exclude each other");
		if ((p->metric_arg && strcmp(p->metric_arg, "value")) || p->metrics_arg)
			return cfl_err_set(err, "--command gives one metric, 'value'");
	}
	if (p->name && p->resume && strcmp(p->name, p->resume))
		return cfl_err_set(err, "--name '%s' and --resume '%s' disagree",
				   p->name, p->resume);
	if (!p->exec.pool.n_local && !p->exec.listen)
		return cfl_err_set(err, "--num-jobs 0 needs --listen (remote workers)");
	if (p->kind == CFL_RUN_TUNE && t->command && t->save)
		return cfl_err_set(err, "--save writes models; a --command run has none");
	if (p->kind == CFL_RUN_TUNE && t->command && p->exec.listen)
		return cfl_err_set(err, "--listen does not run --command trials (a "
				   "worker never receives a command)");
	return 0;
}

/* Steps 1-2: the backend, the checks, the data.  -1 to go on, else the
 * status to return. */
static int prepare(struct run *r, struct cfl_study_outcome *out,
		   struct cfl_err *err)
{
	struct cfl_study_plan *p = r->p;
	int usage, rc, no_data = p->kind == CFL_RUN_TUNE && p->tune.command;

	if (check_options(p, err))
		return CFL_STUDY_RUN_USAGE;
	if (study_backend_check(&r->b, &p->exec, &usage, err))
		return usage ? CFL_STUDY_RUN_USAGE : CFL_STUDY_RUN_FAILED;
	/* a validation part only when something in the run uses it */
	cfl_study_plan_settle_valid(p, r->valid_why, sizeof(r->valid_why));
	study_resume_valid(p);
	/* under mpi, only rank 0's coordinator goes on from here */
	rc = study_backend_start(&r->b, p, no_data ? NULL : &r->data,
				 r->h->stop_note, out, err);
	if (rc >= 0)
		return rc;
	r->loaded = r->b.data_loaded;
	if (r->h->setup && r->h->setup(p, r->h->ctx, err))
		return CFL_STUDY_RUN_USAGE;
	if (p->kind != CFL_RUN_REPEAT && cfl_study_check(p, NULL, err))
		return CFL_STUDY_RUN_USAGE;
	/* a bundle that cannot be written fails now, not after the run */
	if (p->kind == CFL_RUN_AUTO && p->autop.save &&
	    cfl_bundle_check_path(p->autop.save, err))
		return CFL_STUDY_RUN_FAILED;
	catch_signals(r);
	/* remote workers connect and start while the data loads */
	if (study_backend_bind(&r->b, &p->exec, err))
		return CFL_STUDY_RUN_FAILED;
	out->port = r->b.port;
	if (no_data)
		return -1;
	if (!r->loaded) {
		if (cfl_data_load(&r->data, &p->data, err))
			return CFL_STUDY_RUN_FAILED;
		r->loaded = 1;
	}
	emit(r, CFL_STUDY_LOADED, r->valid_why, 0);
	if (resolve_metrics(p, &r->data, err) || cfl_study_check(p, &r->data, err))
		return CFL_STUDY_RUN_USAGE;
	return -1;
}

/* Step 3: the run in the store.  -1 to go on, else the status. */
static int open_run(struct run *r, struct cfl_study_outcome *out,
		    struct cfl_err *err)
{
	struct cfl_study_plan *p = r->p;

	/* the default database's folder is made; --db's must exist */
	if (!strcmp(p->db, CFL_STORE_DEFAULT_PATH) && mkdir("reports", 0777) &&
	    errno != EEXIST) {
		cfl_err_set(err, "cannot create folder 'reports': %s", strerror(errno));
		return CFL_STUDY_RUN_FAILED;
	}
	r->study = cfl_study_open(p, r->loaded ? &r->data : NULL, err);
	if (!r->study)
		return CFL_STUDY_RUN_FAILED;
	snprintf(out->name, sizeof(out->name), "%s", cfl_study_name(r->study));
	out->run_id = cfl_study_run_id(r->study);
	/* nothing to run, and the store (and the model file) untouched */
	if (cfl_study_complete(r->study))
		return CFL_STUDY_RUN_COMPLETE;
	emit(r, CFL_STUDY_OPENED, out->name, 0);
	return -1;
}

/* Step 4: the pool forks (after the data load, before any BLAS call), the
 * remote workers and ranks join it.  -1 to go on, else the status. */
static int start_pool(struct run *r, struct cfl_study_outcome *out,
		      struct cfl_err *err)
{
	struct cfl_study_plan *p = r->p;
	struct cfl_pool *pool;
	char key[256];

	if (g_interrupted) {
		if (cfl_study_stop(r->study, err))
			return CFL_STUDY_RUN_FAILED;
		return CFL_STUDY_RUN_INTERRUPTED;
	}
	if (cfl_study_start(r->study, &p->exec.pool, err))
		return CFL_STUDY_RUN_FAILED;
	pool = cfl_study_pool(r->study);
	g_pool = pool;
	if (g_interrupted)
		cfl_pool_interrupt(pool);
	out->started = 1;
	/* the run key: a worker of another run (or database) is refused */
	snprintf(key, sizeof(key), "%.200s#%lld", p->db, (long long)out->run_id);
	if (study_backend_join(&r->b, &p->exec, pool, &p->data,
			       r->loaded ? &r->data : NULL, key, err))
		return CFL_STUDY_RUN_FAILED;
	return -1;
}

/* Steps 5-6: drain, finish, the caller's print, the bundle. */
static int drain_and_finish(struct run *r, struct cfl_study_outcome *out,
			    struct cfl_err *err)
{
	struct cfl_study_plan *p = r->p;
	const struct cfl_study_listener *ls = &r->h->listener;
	const char *save = p->kind == CFL_RUN_REPEAT ? p->repeat.save
			   : p->kind == CFL_RUN_TUNE ? p->tune.save : p->autop.save;
	int rc;

	rc = p->kind == CFL_RUN_REPEAT ? cfl_study_repeat(r->study, ls, err)
	     : p->kind == CFL_RUN_TUNE ? cfl_study_tune(r->study, ls, err)
				       : cfl_study_auto(r->study, ls, err);
	emit(r, CFL_STUDY_DRAINED, NULL, rc);
	if (rc < 0)
		return CFL_STUDY_RUN_FAILED;
	g_pool = NULL;
	if (rc == CFL_STUDY_INTERRUPTED) {
		cfl_study_stop(r->study, NULL);
		return CFL_STUDY_RUN_INTERRUPTED;
	}
	/* every result is durable before anything is printed */
	rc = cfl_study_close_pool(r->study, err);
	study_backend_stop_remote(&r->b);
	if (rc)
		return CFL_STUDY_RUN_FAILED;
	if (p->kind == CFL_RUN_TUNE) {
		out->best = cfl_study_tune_best(r->study);
		if (out->best >= 0 && !p->tune.command) {
			cfl_study_model_path(p->db, out->name, out->model_path,
					     sizeof(out->model_path));
			if (cfl_study_tune_save_best(r->study, out->model_path, err)) {
				out->model_path[0] = 0;
				return CFL_STUDY_RUN_FAILED;
			}
		}
	}
	/* the ensembles, from the stored predictions; the run's status */
	if (cfl_study_finish(r->study, ls, &out->counts, err))
		return CFL_STUDY_RUN_FAILED;
	out->timed_out = cfl_study_timed_out(r->study);
	rc = r->h->finished ? r->h->finished(r->study, r->h->ctx, err) : 0;
	if (rc < 0)
		return CFL_STUDY_RUN_FAILED;
	if (!rc && save) {
		if (cfl_study_save_bundle(r->study, save, err))
			return CFL_STUDY_RUN_FAILED;
		out->bundle_written = 1;
	}
	return CFL_STUDY_RUN_DONE;
}

int cfl_study_run(struct cfl_study_plan *p, const struct cfl_study_hooks *h,
		  struct cfl_study_outcome *out, struct cfl_err *err)
{
	struct run r;
	int rc;

	memset(out, 0, sizeof(*out));
	out->best = -1;
	memset(&r, 0, sizeof(r));
	r.p = p;
	r.h = h;
	r.b.lfd = -1;
	r.b.ls = &h->listener;
	g_interrupted = 0;
	/* the time limit counts the data's load too: the command ends
	 * within it (a million rows take seconds to read) */
	if (!(p->started > 0))
		p->started = cfl_now();
	rc = prepare(&r, out, err);
	if (rc < 0)
		rc = open_run(&r, out, err);
	if (rc < 0)
		rc = start_pool(&r, out, err);
	if (rc < 0)
		rc = drain_and_finish(&r, out, err);
	g_pool = NULL;
	if (r.study)
		cfl_study_close_pool(r.study, NULL);
	study_backend_release(&r.b);
	if (r.caught) {
		sigaction(SIGINT, &r.old_int, NULL);
		sigaction(SIGTERM, &r.old_term, NULL);
	}
	cfl_study_free(r.study);
	if (r.loaded)
		cfl_data_release(&r.data);
	/* a failure caused by the interruption is one */
	if (rc == CFL_STUDY_RUN_FAILED && g_interrupted)
		out->signalled = 1;
	return rc;
}
