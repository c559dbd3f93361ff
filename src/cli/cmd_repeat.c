/*
 * `cfl repeat`: trains N seeds of each model in a pool of forked workers,
 * stores every trial, and prints carefree-learn's mean / std / score table
 * from the store.  The plan (models, params, repeats, folds, metrics, data
 * options, seed) is stored with the run, so --resume can check it and run
 * only the unfinished trials.  All the work is in src/run and src/store;
 * this file parses, shows progress and prints.
 */
#include "cli.h"
#include "remote.h"
#include "cluster.h"
#include "pool_opts.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/metrics.h"
#include "cfl/model.h"
#include "cfl/report.h"
#include "cfl/run.h"
#include "cfl/store.h"
#include "cfl/study.h"

#define MAX_MODELS 16

enum {
	OPT_MODELS = CLI_OPT_FIRST_FREE,
	OPT_NUM_REPEAT,
	OPT_METRICS,
	OPT_SET,
	OPT_FOLDS,
	OPT_BOOTSTRAP,
	OPT_ENSEMBLE,
};

static void usage(FILE *f)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	fprintf(f,
		"usage: cfl repeat DATA [options]\n\n"
		"Trains --num-repeat seeds of each model in a pool of forked workers,\n"
		"evaluates each on the test part, stores every trial in the database and\n"
		"prints one row per model: for each metric the mean, the std (population)\n"
		"and score = sign*mean - std, the best cell of each column marked -- x --.\n"
		"Each trial's seed comes from (--seed, model, repeat): the table is the same\n"
		"for any --num-jobs.\n\n"
		"Options:\n"
		"  --models LIST            comma-separated models [%s]\n"
		"  --num-repeat N           seeds per model [5]\n"
		CLI_POOL_HELP_NUM_JOBS
		"  --metrics LIST           e.g. acc,auc [acc,auc; regression: mae,mse]\n"
		"  --set MODEL.KEY=VALUE    a model parameter (repeatable; KEY=VALUE with\n"
		"                           one model)\n"
		"  --folds K                train each repeat on K folds (K trials), keeping\n"
		"                           out-of-fold predictions [0: no folds]\n"
		"  --bootstrap              fit each trial on a bootstrap sample of train\n"
		"  --ensemble LIST          ensembles of the trained models, each a row:\n"
		"                           mean, vote, weighted, stacking, greedy or none\n"
		"                           [mean,stacking with 2 trained models or more]\n"
		CLI_POOL_HELP_DB_NAME("repeat")
		"  --resume NAME            finish the run NAME: done trials are kept, the\n"
		"                           others run again; DATA and the plan come from\n"
		"                           the stored run when omitted (given, they must\n"
		"                           match it)\n"
		CLI_POOL_HELP_RETRIES
		CLI_POOL_HELP_WORKER
		CLI_POOL_HELP_QUIET
		"  -h, --help               this help\n"
		"%s%s%s\n"
		"Exit status: 0 when the run completed (failed trials are counted in the\n"
		"table), 1 when it could not run or every trial failed, 2 on a usage error,\n"
		"130 when interrupted (resume with --resume NAME).\n\n"
		"Examples:\n"
		"  cfl repeat datasets/iris.csv --num-repeat 3\n"
		"  cfl repeat datasets/breast_cancer.csv --models linear,fcnn --num-jobs 2\n"
		"  cfl repeat datasets/wine.csv --models linear --set linear.l2=0.1 --seed 7\n"
		"  cfl repeat datasets/breast_cancer.csv --models linear,tree --folds 5 \\\n"
		"      --ensemble mean,stacking,greedy\n"
		"  cfl repeat --resume nightly --num-jobs 4\n"
		"  cfl repeat data.csv --name nightly --trial-timeout 60\n"
		"  cfl repeat data.csv --name nightly --resume nightly\n"
		"  mpirun -n 5 cfl repeat data.csv --num-repeat 20\n",
		cfl_model_find("fcnn") ? "fcnn" : "linear", cores > 0 ? cores : 1,
		cli_remote_help, cli_cluster_help, cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_data_opts data;
	char *models[MAX_MODELS];
	size_t n_models;
	struct cfl_params params[MAX_MODELS];
	long num_repeat;
	const char *metrics_arg;
	enum cfl_metric_id metrics[CFL_WIRE_MAX_METRICS];
	size_t n_metrics;
	long folds;
	int bootstrap;
	const char *ensemble;
	struct cli_pool_opts pool;	/* --num-jobs, --db, --resume, -q, ... */
	struct cli_remote remote;	/* --listen: remote workers */
	struct cli_cluster cluster;	/* --backend; the mpi backend */
	char *models_buf;
	const char *sets[256];
	size_t n_sets;
};

static void plan_release(struct plan *pl)
{
	for (size_t i = 0; i < pl->n_models; i++)
		cfl_params_release(&pl->params[i]);
	free(pl->models_buf);
}

/* Splits --models into names, checking each is registered. */
static int parse_models(struct plan *pl, const char *arg)
{
	char *save = NULL, *tok;

	pl->models_buf = strdup(arg);
	if (!pl->models_buf)
		return cli_failf("out of memory");
	for (tok = strtok_r(pl->models_buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!cfl_model_find(tok)) {
			struct cfl_buf known;

			cfl_buf_init(&known);
			for (size_t i = 0; cfl_model_at(i); i++)
				cfl_buf_printf(&known, "%s%s", i ? ", " : "",
					       cfl_model_at(i)->name);
			cli_usage_error("repeat", "unknown model '%s' (known: %s)",
					tok, known.data ? known.data : "");
			cfl_buf_release(&known);
			return CLI_USAGE;
		}
		for (size_t i = 0; i < pl->n_models; i++)
			if (!strcmp(pl->models[i], tok))
				return cli_usage_error("repeat", "model '%s' listed twice", tok);
		if (pl->n_models == MAX_MODELS)
			return cli_usage_error("repeat", "at most %d models", MAX_MODELS);
		cfl_params_init(&pl->params[pl->n_models]);
		pl->models[pl->n_models++] = tok;
	}
	if (!pl->n_models)
		return cli_usage_error("repeat", "--models is empty");
	return 0;
}

/* --set MODEL.KEY=VALUE (or KEY=VALUE with one model), checked against
 * the model's schema. */
static int apply_sets(struct plan *pl)
{
	struct cfl_err err;

	for (size_t s = 0; s < pl->n_sets; s++) {
		const char *arg = pl->sets[s], *eq = strchr(arg, '='), *dot;
		size_t m = pl->n_models;

		if (!eq)
			return cli_usage_error("repeat", "--set wants MODEL.KEY=VALUE, got '%s'", arg);
		dot = memchr(arg, '.', (size_t)(eq - arg));
		if (dot)
			for (m = 0; m < pl->n_models; m++)
				if (strlen(pl->models[m]) == (size_t)(dot - arg) &&
				    !strncmp(pl->models[m], arg, (size_t)(dot - arg)))
					break;
		if (m < pl->n_models)
			arg = dot + 1;
		else if (pl->n_models == 1)
			m = 0;
		else
			return cli_usage_error("repeat", "--set '%s': say which model (MODEL.KEY=VALUE)", arg);
		if (cfl_params_set_arg(&pl->params[m], arg, &err))
			return cli_usage_error("repeat", "--set: %s", err.msg);
	}
	for (size_t m = 0; m < pl->n_models; m++) {
		cfl_params_sort(&pl->params[m]);
		if (cfl_model_check_params(cfl_model_find(pl->models[m]),
					   &pl->params[m], &err))
			return cli_usage_error("repeat", "%s", err.msg);
	}
	return 0;
}

static int parse_args(struct plan *pl, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_DATA_LONGOPTS,
		CLI_REMOTE_LONGOPTS,
		CLI_CLUSTER_LONGOPTS,
		{ "models", required_argument, 0, OPT_MODELS },
		{ "num-repeat", required_argument, 0, OPT_NUM_REPEAT },
		{ "metrics", required_argument, 0, OPT_METRICS },
		{ "set", required_argument, 0, OPT_SET },
		{ "folds", required_argument, 0, OPT_FOLDS },
		{ "bootstrap", no_argument, 0, OPT_BOOTSTRAP },
		{ "ensemble", required_argument, 0, OPT_ENSEMBLE },
		/* after the command's own: getopt lists the matches of an
		 * ambiguous abbreviation in this order, as it did before */
		CLI_POOL_LONGOPTS,
		CLI_POOL_WORKER_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *models = NULL;
	int c, r;

	cfl_data_opts_init(&pl->data);
	cli_pool_opts_init(&pl->pool);
	cli_remote_init(&pl->remote);
	cli_cluster_init(&pl->cluster);
	pl->num_repeat = 5;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("repeat", c, optarg, &pl->data, &pl->pool,
					   &pl->remote, &pl->cluster);
		if (r < 0)
			return CLI_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_MODELS:
			models = optarg;
			break;
		case OPT_NUM_REPEAT:
			if (cli_parse_long(optarg, 1, 100000, &pl->num_repeat))
				return cli_usage_error("repeat", "--num-repeat must be an integer in [1, 100000], got '%s'", optarg);
			break;
		case OPT_METRICS:
			pl->metrics_arg = optarg;
			break;
		case OPT_SET:
			if (pl->n_sets == sizeof(pl->sets) / sizeof(pl->sets[0]))
				return cli_usage_error("repeat", "too many --set options");
			pl->sets[pl->n_sets++] = optarg;
			break;
		case OPT_FOLDS:
			if (cli_parse_long(optarg, 0, 100, &pl->folds) || pl->folds == 1)
				return cli_usage_error("repeat", "--folds must be 0 or an integer in [2, 100], got '%s'", optarg);
			break;
		case OPT_BOOTSTRAP:
			pl->bootstrap = 1;
			break;
		case OPT_ENSEMBLE:
			pl->ensemble = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_usage_error("repeat", "unknown option");
		}
	}
	if (optind >= argc && pl->pool.resume)
		return 3;	/* the rest comes from the stored command */
	if (optind >= argc)
		return cli_usage_error("repeat", "missing DATA (a CSV file)");
	if (optind + 1 < argc)
		return cli_usage_error("repeat", "unexpected argument '%s'", argv[optind + 1]);
	pl->data.path = argv[optind];
	if (!pl->pool.num_jobs && !pl->remote.listen)
		return cli_usage_error("repeat", "--num-jobs 0 needs --listen (remote workers)");
	if ((r = cli_remote_check(&pl->remote, "repeat")))
		return r;
	if (pl->pool.name && pl->pool.resume && strcmp(pl->pool.name, pl->pool.resume))
		return cli_usage_error("repeat", "--name '%s' and --resume '%s' disagree",
				       pl->pool.name, pl->pool.resume);
	if ((r = parse_models(pl, models ? models
					 : cfl_model_find("fcnn") ? "fcnn" : "linear")))
		return r;
	return apply_sets(pl);
}

/* The plan as "key=value" lines: stored with the run, compared on resume.
 * Execution options (jobs, timeouts, retries, threads) are not part of it. */
static void plan_config(const struct plan *pl, struct cfl_buf *b)
{
	const struct cfl_data_opts *d = &pl->data;

	cfl_buf_printf(b, "models=");
	for (size_t i = 0; i < pl->n_models; i++)
		cfl_buf_printf(b, "%s%s", i ? "," : "", pl->models[i]);
	cfl_buf_printf(b, "\n");
	for (size_t i = 0; i < pl->n_models; i++) {
		cfl_buf_printf(b, "params.%s=", pl->models[i]);
		cfl_params_format(&pl->params[i], b);
		cfl_buf_printf(b, "\n");
	}
	cfl_buf_printf(b, "num_repeat=%ld\nfolds=%ld\nbootstrap=%d\nmetrics=",
		       pl->num_repeat, pl->folds, pl->bootstrap);
	for (size_t i = 0; i < pl->n_metrics; i++)
		cfl_buf_printf(b, "%s%s", i ? "," : "", cfl_metric_info(pl->metrics[i])->name);
	cfl_buf_printf(b, "\nseed=%llu\ntarget=%s\ntask=%d\ndrop=%s\nonly=%s\n"
		       "test=%s\nvalid=%s\ntest_frac=%.17g\nvalid_frac=%.17g\n",
		       (unsigned long long)d->seed,
		       d->schema.target ? d->schema.target : "", (int)d->schema.task,
		       d->schema.drop_re ? d->schema.drop_re : "",
		       d->schema.only_re ? d->schema.only_re : "",
		       d->test_path ? d->test_path : "",
		       d->valid_path ? d->valid_path : "", d->test_frac, d->valid_frac);
	if (d->schema.categorical_re)
		cfl_buf_printf(b, "categorical=%s\n", d->schema.categorical_re);
}

/* ---- progress ---- */

struct progress {
	int quiet, tty;
	double t0;
	size_t total, done, failed;
	int have_best;
	double best;		/* sign * value of the first metric on test */
	char best_model[64];
	const char *metric;
	int sign;
};

static void fmt_time(double s, char *out, size_t cap)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(out, cap, "%02ld:%02ld", t / 60, t % 60);
}

static void progress_line(struct progress *pr, struct cfl_pool *pool)
{
	struct cfl_pool_stats st;
	char el[32], eta[32] = "--:--", best[128] = "";
	double elapsed = cfl_now() - pr->t0;
	size_t finished = pr->done + pr->failed;

	if (pr->quiet || !pr->tty)
		return;
	cfl_pool_get_stats(pool, &st);
	fmt_time(elapsed, el, sizeof(el));
	if (finished && finished < pr->total)
		fmt_time(elapsed / (double)finished * (double)(pr->total - finished),
			 eta, sizeof(eta));
	if (pr->have_best)
		snprintf(best, sizeof(best), ", best %s %.4f (%s)", pr->metric,
			 pr->sign * pr->best, pr->best_model);
	fprintf(stderr, "\r\033[K%zu/%zu done, %zu running, %zu failed, %s elapsed, ETA %s%s",
		pr->done, pr->total, st.running, pr->failed, el, eta, best);
	fflush(stderr);
}

static void progress_event(struct progress *pr, struct cfl_pool *pool,
			   const struct cfl_pool_event *ev, const char *model,
			   int repeat, int fold)
{
	char what[96];

	if (ev->status == CFL_TRIAL_DONE) {
		const struct cfl_wire_split *t = &ev->result->split[1];

		pr->done++;
		if (t->n_metrics && !isnan(t->metrics[0].value) &&
		    (!pr->have_best || pr->sign * t->metrics[0].value > pr->best)) {
			pr->have_best = 1;
			pr->best = pr->sign * t->metrics[0].value;
			snprintf(pr->best_model, sizeof(pr->best_model), "%s", model);
		}
	} else {
		pr->failed++;
	}
	if (pr->quiet)
		return;
	if (pr->tty) {
		if (ev->status != CFL_TRIAL_DONE)
			fprintf(stderr, "\r\033[K%s repeat %d%s: %s (%s)\n", model,
				repeat, "", cfl_trial_status_name(ev->status), ev->reason);
		progress_line(pr, pool);
		return;
	}
	if (fold >= 0)
		snprintf(what, sizeof(what), "%s repeat %d fold %d", model, repeat, fold);
	else
		snprintf(what, sizeof(what), "%s repeat %d", model, repeat);
	if (ev->status == CFL_TRIAL_DONE) {
		const struct cfl_wire_split *t = &ev->result->split[1];

		fprintf(stderr, "[%zu/%zu] %s: done in %.3f s", pr->done + pr->failed,
			pr->total, what, ev->result->duration);
		for (uint32_t i = 0; i < t->n_metrics; i++)
			fprintf(stderr, ", %s %.6f", t->metrics[i].name, t->metrics[i].value);
		fprintf(stderr, "\n");
	} else {
		fprintf(stderr, "[%zu/%zu] %s: %s after %d attempt%s: %s\n",
			pr->done + pr->failed, pr->total, what,
			cfl_trial_status_name(ev->status), ev->attempt,
			ev->attempt == 1 ? "" : "s", ev->reason);
	}
}

/* A study's remark ("ensemble ...; skipped"): shown even with -q. */
static void on_note(const struct cfl_study_event *ev, void *ctx)
{
	(void)ctx;
	if (ev->kind == CFL_STUDY_NOTE)
		fprintf(stderr, "cfl: %s\n", ev->text);
}

/* ---- signals ---- */

static struct cfl_pool *volatile g_pool;
static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	g_interrupted = 1;
	if (g_pool)
		cfl_pool_interrupt(g_pool);
}

/* ---- the command ---- */

/* What the events point back to. */
struct trial_ref {
	size_t model;
	int repeat, fold;
};

int cmd_repeat(int argc, char **argv)
{
	struct plan pl;
	struct cfl_data data;
	struct cfl_err err;
	struct cfl_store *st = NULL;
	struct cfl_pool *pool = NULL;
	struct cfl_pool_opts po;
	struct cfl_buf config, cmdline, out;
	struct cfl_run_info info;
	struct trial_ref *refs = NULL;
	struct progress pr;
	struct sigaction old_int, old_term;
	char run_name[128], launcher[64];
	int64_t run_id = 0;
	size_t n_trials, n_submit = 0, n_done_before = 0;
	int rc = CLI_FAIL, r, loaded = 0, resumed = 0;
	long n_folds;
	char **rv = NULL, **rv_words = NULL;

	memset(&pl, 0, sizeof(pl));
	memset(&pr, 0, sizeof(pr));
	cfl_buf_init(&config);
	cfl_buf_init(&cmdline);
	cfl_buf_init(&out);
	r = parse_args(&pl, argc, argv);
	/* --resume NAME alone: the run's stored command fills in DATA and the
	 * plan */
	if (r == 3)
		r = cli_pool_resume_alone("repeat", &pl.pool, &pl.cluster, argc, argv,
					  &argc, &rv, &rv_words);
	if (r == 3) {
		plan_release(&pl);
		memset(&pl, 0, sizeof(pl));
		argv = rv;
		r = parse_args(&pl, argc, argv);
		if (r == 3)
			r = cli_usage_error("repeat", "missing DATA (a CSV file)");
	}
	if (r) {
		plan_release(&pl);
		free(rv);
		free(rv_words);
		return r < 0 ? CLI_OK : r;
	}
	/* under mpi, only rank 0's coordinator goes on from here */
	memset(&data, 0, sizeof(data));
	r = cli_cluster_start(&pl.cluster, "repeat", &pl.data, &data,
			      pl.remote.listen != NULL, &pl.pool.num_jobs, pl.pool.num_jobs_set);
	if (r >= 0) {
		plan_release(&pl);
		free(rv);
		free(rv_words);
		return r;
	}

	/* Ctrl-C: before the pool exists, just note it; restart reads (the
	 * data load): the pool's poll() still wakes up */
	cli_catch_stop(on_signal, SA_RESTART, &old_int, &old_term);

	/* under mpi rank 0 loaded it while MPI started */
	if (!pl.cluster.data_loaded && cfl_data_load(&data, &pl.data, &err)) {
		cli_fail(&err);
		goto done;
	}
	loaded = 1;
	cli_data_warn(&data, &pl.data);
	if (pl.metrics_arg) {
		long n = cfl_metric_parse_list(pl.metrics_arg, data.train.n_classes,
					       pl.metrics, CFL_WIRE_MAX_METRICS, &err);

		if (n < 0) {
			rc = cli_usage_error("repeat", "--metrics: %s", err.msg);
			goto done;
		}
		pl.n_metrics = (size_t)n;
	} else {
		pl.n_metrics = cfl_metric_defaults(data.train.n_classes, pl.metrics,
						   CFL_WIRE_MAX_METRICS);
	}
	if (pl.ensemble) {
		unsigned mask = 0;

		if (cfl_ensemble_parse_list(pl.ensemble, &mask, &err) ||
		    cfl_study_check_ensembles(mask, data.train.n_classes, &err)) {
			rc = cli_usage_error("repeat", "--ensemble: %s", err.msg);
			goto done;
		}
	}
	n_folds = pl.folds;
	if (n_folds && (size_t)n_folds > data.train.n) {
		rc = cli_usage_error("repeat", "--folds %ld: the training part has only %zu rows",
				     n_folds, data.train.n);
		goto done;
	}
	if (pl.pool.num_jobs * pl.pool.threads_per_trial > sysconf(_SC_NPROCESSORS_ONLN))
		fprintf(stderr, "cfl repeat: warning: %ld jobs x %ld threads per trial "
			"exceeds the %ld online cores\n", pl.pool.num_jobs,
			pl.pool.threads_per_trial,
			sysconf(_SC_NPROCESSORS_ONLN));

	/* the store: a new run, or the one to resume */
	if (cli_pool_mkdir_db(pl.pool.db))
		goto done;
	st = cfl_store_open(pl.pool.db, CFL_STORE_CREATE, &err);
	if (!st) {
		cli_fail(&err);
		goto done;
	}
	plan_config(&pl, &config);
	cli_command_line(argc, argv, &cmdline);
	if (pl.pool.resume) {
		r = cfl_store_run_find(st, pl.pool.resume, &info, &err);
		if (r) {
			cli_fail(&err);
			goto done;
		}
		run_id = info.id;
		resumed = 1;
		if (info.kind != CFL_RUN_REPEAT ||
		    strcmp(info.config ? info.config : "", config.data) ||
		    strcmp(info.dataset_sha256, data.sha256_hex)) {
			fprintf(stderr, "cfl: cannot resume run '%s': it was started with %s;"
				" use the options it was started with:\n  %s\n",
				pl.pool.resume,
				info.kind != CFL_RUN_REPEAT ? "another command"
				: strcmp(info.dataset_sha256, data.sha256_hex) ? "another dataset (SHA-256 differs)"
				: "another plan", info.command ? info.command : "");
			cfl_run_info_release(&info);
			goto done;
		}
		snprintf(run_name, sizeof(run_name), "%s", info.name);
		cfl_run_info_release(&info);
		if (cfl_store_run_set_status(st, run_id, CFL_RUN_RUNNING, &err)) {
			cli_fail(&err);
			goto done;
		}
	} else {
		struct cfl_run_info ri;

		if (pl.pool.name)
			snprintf(run_name, sizeof(run_name), "%s", pl.pool.name);
		memset(&ri, 0, sizeof(ri));
		ri.name = run_name;
		ri.kind = CFL_RUN_REPEAT;
		ri.command = cmdline.data;
		ri.config = config.data;
		ri.dataset = (char *)pl.data.path;
		snprintf(ri.dataset_sha256, sizeof(ri.dataset_sha256), "%s", data.sha256_hex);
		ri.seed = pl.data.seed;
		/* no --name: the store picks the default name as it inserts
		 * the run, so two runs started at once get two names */
		if (pl.pool.name ? cfl_store_run_create(st, &ri, &run_id, &err)
		    : cfl_store_run_create_default(st, &ri, run_name,
						   sizeof(run_name), &run_id, &err)) {
			cli_fail(&err);
			goto done;
		}
	}

	/* the pool forks now: after the data load, before any BLAS call */
	cfl_pool_opts_init(&po);
	po.data = &data;
	po.store = st;
	po.run_id = run_id;
	cli_pool_opts_apply(&pl.pool, &po);
	po.n_metrics = pl.n_metrics;
	memcpy(po.metrics, pl.metrics, sizeof(po.metrics));
	pr.tty = cli_stderr_is_tty();
	pr.quiet = pl.pool.quiet;
	po.tick = pr.tty && !pr.quiet ? 0.5 : 0;
	if (g_interrupted)
		goto interrupted_early;
	pool = cfl_pool_new(&po, &err);
	if (!pool) {
		cli_fail(&err);
		goto done;
	}
	g_pool = pool;
	if (g_interrupted)
		cfl_pool_interrupt(pool);
	{
		char key[256];

		snprintf(key, sizeof(key), "%.200s#%lld", pl.pool.db, (long long)run_id);
		if (cli_remote_start(&pl.remote, "repeat", pool, &pl.data, &data, &po,
				     key, pl.pool.quiet) ||
		    cli_cluster_attach(&pl.cluster, pool, &pl.data, &po, key,
				       pl.remote.heartbeat))
			goto done;
	}

	/* the trials: model x repeat [x fold], created (or found) in one
	 * transaction; done ones (on --resume) are kept */
	n_trials = pl.n_models * (size_t)pl.num_repeat * (size_t)(n_folds ? n_folds : 1);
	refs = calloc(n_trials, sizeof(*refs));
	if (!refs || cfl_store_begin(st, &err)) {
		if (!refs)
			cfl_err_set(&err, "out of memory");
		cli_fail(&err);
		goto done;
	}
	for (size_t m = 0, k = 0; m < pl.n_models; m++) {
		int64_t cand;

		if (cfl_store_candidate_get_or_add(st, run_id, pl.models[m],
						   &pl.params[m], &cand, NULL, &err))
			goto store_fail;
		for (long rep = 0; rep < pl.num_repeat; rep++)
			for (long f = n_folds ? 0 : -1; f < (n_folds ? n_folds : 0); f++, k++) {
				struct cfl_trial_state ts;
				struct cfl_trial_spec spec;
				uint64_t seed = cfl_trial_seed(pl.data.seed, pl.models[m], (int)rep);

				if (cfl_store_trial_ensure(st, run_id, cand, (int)rep, (int)f,
							   seed, &ts, &err))
					goto store_fail;
				refs[k] = (struct trial_ref){ m, (int)rep, (int)f };
				if (ts.status == CFL_TRIAL_DONE) {
					n_done_before++;
					continue;
				}
				memset(&spec, 0, sizeof(spec));
				spec.trial_id = ts.id;
				spec.model = pl.models[m];
				spec.params = &pl.params[m];
				spec.seed = seed;
				spec.fold_seed = cfl_fold_seed(pl.data.seed, (int)rep);
				spec.repeat = (int)rep;
				spec.fold = (int)f;
				spec.n_folds = (int)n_folds;
				spec.flags = CFL_LEASE_KEEP_VALID | CFL_LEASE_KEEP_TEST |
					     (n_folds ? CFL_LEASE_KEEP_OOF : 0) |
					     (pl.bootstrap ? CFL_LEASE_BOOTSTRAP : 0);
				spec.prev_attempts = ts.attempt;
				spec.user = &refs[k];
				if (cfl_pool_submit(pool, &spec, &err))
					goto store_fail;
				n_submit++;
			}
	}
	if (cfl_store_commit(st, &err))
		goto store_fail;

	/* run them */
	pr.t0 = cfl_now();
	pr.total = n_submit;
	pr.metric = cfl_metric_info(pl.metrics[0])->name;
	pr.sign = cfl_metric_info(pl.metrics[0])->sign;
	if (resumed && !pl.pool.quiet)
		fprintf(stderr, "resuming run '%s': %zu trials done, %zu to run\n",
			run_name, n_done_before, n_submit);
	for (;;) {
		struct cfl_pool_event ev;

		r = cfl_pool_wait(pool, &ev, &err);
		if (r < 0) {
			if (pr.tty && !pr.quiet)
				fprintf(stderr, "\n");
			cli_fail(&err);
			goto done;
		}
		if (r == CFL_POOL_IDLE)
			break;
		if (r == CFL_POOL_INTERRUPTED)
			goto interrupted;
		if (r == CFL_POOL_TICK) {
			progress_line(&pr, pool);
			continue;
		}
		{
			const struct trial_ref *ref = ev.user;

			progress_event(&pr, pool, &ev, pl.models[ref->model],
				       ref->repeat, ref->fold);
		}
	}
	if (pr.tty && !pr.quiet)
		fprintf(stderr, "\n");
	/* every result is durable before the table is printed */
	if (cfl_pool_close(pool, &err)) {
		pool = NULL;
		g_pool = NULL;
		cli_fail(&err);
		goto done;
	}
	g_pool = NULL;
	pool = NULL;
	cli_remote_stop(&pl.remote);

	/* ensembles are built from the stored predictions */
	if (cfl_study_ensembles_for_run(st, run_id, &data, pl.ensemble,
					&(struct cfl_study_listener){ on_note, NULL },
					&err)) {
		cli_fail(&err);
		goto done;
	}

	{
		struct cfl_trial_counts tc;
		struct cfl_table t;

		if (cfl_store_trial_counts(st, run_id, &tc, &err) ||
		    cfl_store_run_finish(st, run_id, tc.done ? CFL_RUN_DONE : CFL_RUN_FAILED,
					 &err)) {
			cli_fail(&err);
			goto done;
		}
		cfl_table_init(&t);
		if (cfl_table_from_run(&t, st, run_id, CFL_SPLIT_TEST, CFL_ROWS_BY_MODEL, &err) ||
		    cfl_table_render(&t, CFL_TABLE_TEXT, &out, &err)) {
			cfl_table_release(&t);
			cli_fail(&err);
			goto done;
		}
		cfl_table_release(&t);
		fputs(out.data, stdout);
		fflush(stdout);
		{
			/* "--db FILE" only when it is not the default */
			int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

			if (tc.failed + tc.poison)
				fprintf(stderr, "%zu of %zu trials failed (cfl report %s%s%s shows why)\n",
					tc.failed + tc.poison, tc.total, run_name,
					dflt ? "" : " --db ", dflt ? "" : pl.pool.db);
			fprintf(stderr, "run '%s' stored in '%s'; see it again with: cfl report %s%s%s\n",
				run_name, pl.pool.db, run_name, dflt ? "" : " --db ",
				dflt ? "" : pl.pool.db);
		}
		rc = tc.done ? CLI_OK : CLI_FAIL;
		if (!tc.done)
			fprintf(stderr, "cfl: every trial failed\n");
	}
	goto done;

store_fail:
	cfl_store_rollback(st);
	cli_fail(&err);
	goto done;
interrupted:
	if (pr.tty && !pr.quiet)
		fprintf(stderr, "\n");
	g_pool = NULL;
	cfl_pool_close(pool, NULL);
	pool = NULL;
	fprintf(stderr, "cfl repeat: interrupted; run '%s' kept in '%s'; finish it with:\n"
		"  %scfl repeat --resume %s%s%s\n", run_name, pl.pool.db,
		cli_cluster_resume_prefix(&pl.cluster, launcher, sizeof(launcher)), run_name,
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? " --db " : "",
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? pl.pool.db : "");
	rc = CLI_INTERRUPTED;
	goto done;
interrupted_early:
	if (st && run_id && cfl_store_mark_interrupted(st, run_id, &err))
		cli_fail(&err);
	fprintf(stderr, "cfl repeat: interrupted\n");
	rc = CLI_INTERRUPTED;
done:
	g_pool = NULL;
	if (pool)
		cfl_pool_close(pool, NULL);
	cli_remote_stop(&pl.remote);
	cli_cluster_stop(&pl.cluster);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	cfl_store_close(st);
	if (loaded)
		cfl_data_release(&data);
	free(refs);
	cfl_buf_release(&config);
	cfl_buf_release(&cmdline);
	cfl_buf_release(&out);
	plan_release(&pl);
	free(rv);
	free(rv_words);
	if (g_interrupted && rc == CLI_FAIL)
		rc = CLI_INTERRUPTED;
	return rc;
}
