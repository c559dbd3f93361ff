/*
 * `cfl repeat`: trains N seeds of each model in a pool of forked workers,
 * stores every trial, and prints carefree-learn's mean / std / score table
 * from the store.  The plan (models, params, repeats, folds, metrics, data
 * options, seed) is stored with the run, so --resume can check it and run
 * only the unfinished trials.  A thin driver over the study (cfl/study.h):
 * this file parses options into a plan, shows progress from the study's
 * events and prints the table from the store.
 */
#include "cli.h"
#include "remote.h"
#include "cluster.h"
#include "pool_opts.h"
#include "progress.h"

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

enum {
	OPT_MODELS = CLI_OPT_FIRST_FREE,
	OPT_NUM_REPEAT,
	OPT_METRICS,
	OPT_SET,
	OPT_FOLDS,
	OPT_BOOTSTRAP,
	OPT_ENSEMBLE,
	OPT_TIME_LIMIT,
	OPT_SAVE,
	OPT_IMPORTANCE,
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
		"                           mean, vote, weighted, stacking, greedy, top\n"
		"                           or none\n"
		"                           [mean with 2 trained models or more; with\n"
		"                           --folds mean,stacking (on out-of-fold\n"
		"                           predictions)]\n"
		"  --save FILE              keep every trial's model and write them, with\n"
		"                           the ensembles, as one bundle FILE that\n"
		"                           'cfl predict FILE DATA --row ROW' applies\n"
		"                           (docs/bundles.md) [none]\n"
		"  --importance             each trial also measures permutation importance\n"
		"                           on the validation part (tree models store\n"
		"                           impurity importance anyway); shown after the\n"
		"                           table\n"
		CLI_POOL_HELP_DB_NAME("repeat")
		"  --resume NAME            finish the run NAME: done trials are kept, the\n"
		"                           others run again; DATA and the plan come from\n"
		"                           the stored run when omitted (given, they must\n"
		"                           match it); a larger --num-repeat grows it\n"
		"  --time-limit SEC         stop the whole run after SEC seconds: running\n"
		"                           trials are stopped and kept as interrupted,\n"
		"                           the table and ensembles come from the trials\n"
		"                           done; --resume NAME finishes it [0: none]\n"
		CLI_POOL_HELP_RETRIES
		CLI_POOL_HELP_WORKER
		CLI_POOL_HELP_QUIET
		"  -h, --help               this help\n"
		"%s%s%s\n"
		"Exit status: 0 when the run completed or stopped at --time-limit (failed\n"
		"trials are counted in the table), 1 when it could not run or every trial failed, 2 on a usage error,\n"
		"130 when interrupted (resume with --resume NAME).\n\n"
		"Examples:\n"
		"  cfl repeat datasets/iris.csv --num-repeat 3\n"
		"  cfl repeat datasets/breast_cancer.csv --models linear,fcnn --num-jobs 2\n"
		"  cfl repeat datasets/wine.csv --models linear --set linear.l2=0.1 --seed 7\n"
		"  cfl repeat datasets/breast_cancer.csv --models linear,tree --folds 5 \\\n"
		"      --ensemble mean,stacking,greedy\n"
		"  cfl repeat datasets/iris.csv --models fcnn,linear --save iris.cfl\n"
		"  cfl repeat --resume nightly --num-jobs 4\n"
		"  cfl repeat --resume nightly --num-repeat 10\n"
		"  cfl repeat data.csv --name nightly --trial-timeout 60\n"
		"  cfl repeat data.csv --name nightly --resume nightly\n"
		"  mpirun -n 5 cfl repeat data.csv --num-repeat 20\n",
		cfl_model_find("fcnn") ? "fcnn" : "linear", cores > 0 ? cores : 1,
		cli_remote_help, cli_cluster_help, cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_study_plan sp;	/* data options, models, params, repeats,
					 * folds, metrics, ensembles */
	const char *metrics_arg;
	struct cli_pool_opts pool;	/* --num-jobs, --db, --resume, -q, ... */
	struct cli_remote remote;	/* --listen: remote workers */
	struct cli_cluster cluster;	/* --backend; the mpi backend */
	char *models_buf;
	const char *sets[256];
	size_t n_sets;
};

static void plan_release(struct plan *pl)
{
	for (size_t i = 0; i < pl->sp.repeat.n_models; i++)
		cfl_params_release(&pl->sp.repeat.params[i]);
	free(pl->models_buf);
}

/* Splits --models into names, checking each is registered. */
static int parse_models(struct plan *pl, const char *arg)
{
	struct cfl_study_repeat_plan *r = &pl->sp.repeat;
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
		for (size_t i = 0; i < r->n_models; i++)
			if (!strcmp(r->models[i], tok))
				return cli_usage_error("repeat", "model '%s' listed twice", tok);
		if (r->n_models == CFL_STUDY_MAX_MODELS)
			return cli_usage_error("repeat", "at most %d models", CFL_STUDY_MAX_MODELS);
		cfl_params_init(&r->params[r->n_models]);
		r->models[r->n_models++] = tok;
	}
	if (!r->n_models)
		return cli_usage_error("repeat", "--models is empty");
	return 0;
}

/* --set MODEL.KEY=VALUE (or KEY=VALUE with one model), checked against
 * the model's schema. */
static int apply_sets(struct plan *pl)
{
	struct cfl_study_repeat_plan *r = &pl->sp.repeat;
	struct cfl_err err;

	for (size_t s = 0; s < pl->n_sets; s++) {
		const char *arg = pl->sets[s], *eq = strchr(arg, '='), *dot;
		size_t m = r->n_models;

		if (!eq)
			return cli_usage_error("repeat", "--set wants MODEL.KEY=VALUE, got '%s'", arg);
		dot = memchr(arg, '.', (size_t)(eq - arg));
		if (dot)
			for (m = 0; m < r->n_models; m++)
				if (strlen(r->models[m]) == (size_t)(dot - arg) &&
				    !strncmp(r->models[m], arg, (size_t)(dot - arg)))
					break;
		if (m < r->n_models)
			arg = dot + 1;
		else if (r->n_models == 1)
			m = 0;
		else
			return cli_usage_error("repeat", "--set '%s': say which model (MODEL.KEY=VALUE)", arg);
		if (cfl_params_set_arg(&r->params[m], arg, &err))
			return cli_usage_error("repeat", "--set: %s", err.msg);
	}
	for (size_t m = 0; m < r->n_models; m++) {
		cfl_params_sort(&r->params[m]);
		if (cfl_model_check_params(cfl_model_find(r->models[m]),
					   &r->params[m], &err))
			return cli_usage_error("repeat", "%s", err.msg);
	}
	return 0;
}

static int parse_args(void *ctx, int argc, char **argv)
{
	struct plan *pl = ctx;
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
		{ "time-limit", required_argument, 0, OPT_TIME_LIMIT },
		{ "save", required_argument, 0, OPT_SAVE },
		{ "importance", no_argument, 0, OPT_IMPORTANCE },
		/* after the command's own: getopt lists the matches of an
		 * ambiguous abbreviation in this order, as it did before */
		CLI_POOL_LONGOPTS,
		CLI_POOL_WORKER_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *models = NULL;
	long folds = 0;
	int c, r;

	cfl_study_plan_init(&pl->sp);
	cli_pool_opts_init(&pl->pool);
	cli_remote_init(&pl->remote);
	cli_cluster_init(&pl->cluster);
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("repeat", c, optarg, &pl->sp.data, &pl->pool,
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
			if (cli_parse_long(optarg, 1, 100000, &pl->sp.num_repeat))
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
			if (cli_parse_long(optarg, 0, 100, &folds) || folds == 1)
				return cli_usage_error("repeat", "--folds must be 0 or an integer in [2, 100], got '%s'", optarg);
			pl->sp.repeat.folds = (int)folds;
			break;
		case OPT_BOOTSTRAP:
			pl->sp.repeat.bootstrap = 1;
			break;
		case OPT_ENSEMBLE:
			pl->sp.repeat.ensembles = optarg;
			break;
		case OPT_TIME_LIMIT:
			if (cli_parse_double(optarg, 0, 1e9, &pl->sp.time_limit))
				return cli_usage_error("repeat", "--time-limit must be a number of seconds >= 0, got '%s'", optarg);
			break;
		case OPT_SAVE:
			if (!*optarg)
				return cli_usage_error("repeat", "--save needs a file name");
			pl->sp.repeat.save = optarg;
			break;
		case OPT_IMPORTANCE:
			pl->sp.repeat.importance = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("repeat", argc, argv, "qh", opts);
		}
	}
	if (optind >= argc && pl->pool.resume)
		return 3;	/* the rest comes from the stored command */
	if (optind >= argc)
		return cli_usage_error("repeat", "missing DATA (a CSV file)");
	if (optind + 1 < argc)
		return cli_usage_error("repeat", "unexpected argument '%s'", argv[optind + 1]);
	pl->sp.data.path = argv[optind];
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

/* ---- progress ---- */

struct progress {
	int quiet, tty, resumed;
	const char *run_name;
	double t0;
	size_t total, done, failed;
	int have_best;
	double best;		/* sign * value of the first metric on test */
	char best_model[64];
	const char *metric;
	int sign;
	size_t n_models;	/* trials done per model, for the line */
	const char *const *models;
	size_t model_done[CFL_STUDY_MAX_MODELS];
};

static void progress_line(struct progress *pr, struct cfl_pool *pool)
{
	struct cfl_pool_stats st;
	struct cli_progress_counts c = {
		.done = pr->done, .failed = pr->failed, .total = pr->total,
		.elapsed = cfl_now() - pr->t0, .have_best = pr->have_best,
		.best_metric = pr->metric, .best_value = pr->sign * pr->best,
		.best_model = pr->best_model, .n_models = pr->n_models,
		.models = pr->models, .model_done = pr->model_done,
	};
	char line[1024];

	if (pr->quiet || !pr->tty)
		return;
	cfl_pool_get_stats(pool, &st);
	c.running = st.running;
	cli_progress_format(&c, cli_term_width(STDERR_FILENO), line, sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
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
		for (size_t i = 0; i < pr->n_models; i++)
			if (!strcmp(pr->models[i], model))
				pr->model_done[i]++;
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

/* The study's events: progress on stderr (none with -q, but notes). */
static void on_study_event(const struct cfl_study_event *ev, void *ctx)
{
	struct progress *pr = ctx;

	switch (ev->kind) {
	case CFL_STUDY_NOTE:	/* "ensemble ...; skipped": shown even with -q */
		fprintf(stderr, "cfl: %s\n", ev->text);
		break;
	case CFL_STUDY_START:
		pr->t0 = cfl_now();
		pr->total = ev->n_todo;
		if (pr->resumed && !pr->quiet)
			fprintf(stderr, "resuming run '%s': %zu trials done, %zu to run\n",
				pr->run_name, ev->n_done, ev->n_todo);
		break;
	case CFL_STUDY_TRIAL:
		progress_event(pr, ev->pool, ev->trial, ev->what, ev->repeat, ev->fold);
		break;
	case CFL_STUDY_TICK:
		progress_line(pr, ev->pool);
		break;
	default:
		break;
	}
}

/* ---- the command ---- */

static void reset_cb(void *pl)
{
	plan_release(pl);
	memset(pl, 0, sizeof(struct plan));
}

int cmd_repeat(int argc, char **argv)
{
	struct plan pl;
	struct cfl_data data;
	struct cfl_err err;
	struct cfl_study *study = NULL;
	struct cfl_pool *pool;
	struct cfl_pool_opts po;
	struct cfl_buf cmdline, plancmd, out;
	struct progress pr;
	struct cfl_study_listener ls = { on_study_event, &pr };
	struct sigaction old_int, old_term;
	char launcher[64];
	const char *run_name = "";
	int rc = CLI_FAIL, r, loaded = 0;
	char **rv = NULL, **rv_words = NULL;
	char valid_why[256];

	memset(&pl, 0, sizeof(pl));
	memset(&pr, 0, sizeof(pr));
	cfl_buf_init(&cmdline);
	cfl_buf_init(&plancmd);
	cfl_buf_init(&out);
	r = cli_pool_parse("repeat", argc, argv, parse_args, reset_cb, &pl, &pl.pool,
			   &pl.cluster, &cmdline, &plancmd, &rv, &rv_words);
	if (r) {
		plan_release(&pl);
		free(rv);
		free(rv_words);
		cfl_buf_release(&cmdline);
		cfl_buf_release(&plancmd);
		return r < 0 ? CLI_OK : r;
	}
	/* a validation part only when something in the run uses it */
	cfl_study_plan_settle_valid(&pl.sp, valid_why, sizeof(valid_why));
	/* under mpi, only rank 0's coordinator goes on from here */
	memset(&data, 0, sizeof(data));
	r = cli_cluster_start(&pl.cluster, "repeat", &pl.sp.data, &data,
			      pl.remote.listen != NULL, &pl.pool.num_jobs, pl.pool.num_jobs_set);
	if (r >= 0) {
		plan_release(&pl);
		free(rv);
		free(rv_words);
		cfl_buf_release(&cmdline);
		cfl_buf_release(&plancmd);
		return r;
	}

	/* Ctrl-C: before the pool exists, just note it; restart reads (the
	 * data load): the pool's poll() still wakes up */
	cli_catch_stop(on_signal, SA_RESTART, &old_int, &old_term);

	/* remote workers connect and start while the data loads */
	if (cli_remote_bind(&pl.remote, "repeat"))
		goto done;
	/* under mpi rank 0 loaded it while MPI started */
	if (!pl.cluster.data_loaded && cfl_data_load(&data, &pl.sp.data, &err)) {
		cli_fail(&err);
		goto done;
	}
	loaded = 1;
	cli_data_warn(&data, &pl.sp.data);
	if (!pl.pool.quiet)
		cli_data_facts("repeat", &data, &pl.sp.data, valid_why);
	if (pl.metrics_arg) {
		long n = cfl_metric_parse_list(pl.metrics_arg, data.train.n_classes,
					       pl.sp.metrics, CFL_WIRE_MAX_METRICS, &err);

		if (n < 0) {
			rc = cli_usage_error("repeat", "--metrics: %s", err.msg);
			goto done;
		}
		pl.sp.n_metrics = (size_t)n;
	} else {
		pl.sp.n_metrics = cfl_metric_defaults(data.train.n_classes, pl.sp.metrics,
						      CFL_WIRE_MAX_METRICS);
	}
	if (cfl_study_check(&pl.sp, &data, &err)) {
		rc = cli_usage_error("repeat", "%s", err.msg);
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
	pl.sp.command_line = pl.pool.resume ? plancmd.data : cmdline.data;
	pl.sp.db = pl.pool.db;
	pl.sp.name = pl.pool.name;
	pl.sp.resume = pl.pool.resume;
	study = cfl_study_open(&pl.sp, &data, &err);
	if (!study) {
		cli_fail(&err);
		goto done;
	}
	run_name = cfl_study_name(study);
	if (cfl_study_complete(study)) {
		/* nothing to run, and the store (and the model file) untouched */
		int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

		fprintf(stderr, "cfl repeat: run '%s' is complete; nothing to do (cfl report %s%s%s "
			"shows it; a larger --num-repeat grows it)\n", run_name, cli_sh(run_name),
			dflt ? "" : " --db ", dflt ? "" : cli_sh(pl.pool.db));
		rc = CLI_OK;
		goto done;
	}

	/* the pool forks now: after the data load, before any BLAS call */
	cfl_pool_opts_init(&po);
	cli_pool_opts_apply(&pl.pool, &po);
	pr.tty = cli_stderr_is_tty();
	pr.quiet = pl.pool.quiet;
	pr.resumed = cfl_study_resumed(study);
	pr.run_name = run_name;
	pr.metric = cfl_metric_info(pl.sp.metrics[0])->name;
	pr.sign = cfl_metric_info(pl.sp.metrics[0])->sign;
	pr.n_models = pl.sp.repeat.n_models;
	pr.models = (const char *const *)pl.sp.repeat.models;
	po.tick = pr.tty && !pr.quiet ? 0.5 : 0;
	if (g_interrupted)
		goto interrupted_early;
	if (cfl_study_start(study, &po, &err)) {
		cli_fail(&err);
		goto done;
	}
	pool = cfl_study_pool(study);
	g_pool = pool;
	if (g_interrupted)
		cfl_pool_interrupt(pool);
	{
		char key[256];

		snprintf(key, sizeof(key), "%.200s#%lld", pl.pool.db,
			 (long long)cfl_study_run_id(study));
		if (cli_remote_start(&pl.remote, "repeat", pool, &pl.sp.data, &data,
				     cfl_pool_opts(pool), key, pl.pool.quiet) ||
		    cli_cluster_attach(&pl.cluster, pool, &pl.sp.data, cfl_pool_opts(pool),
				       key, pl.remote.heartbeat))
			goto done;
	}

	/* the trials: model x repeat [x fold]; done ones (on --resume) kept */
	r = cfl_study_repeat(study, &ls, &err);
	if (r < 0) {
		if (pr.tty && !pr.quiet)
			fprintf(stderr, "\n");
		cli_fail(&err);
		goto done;
	}
	if (r == CFL_STUDY_INTERRUPTED)
		goto interrupted;
	if (pr.tty && !pr.quiet)
		fprintf(stderr, "\n");
	if (r == CFL_STUDY_TIME_LIMIT)
		fprintf(stderr, "cfl repeat: stopped at its time limit (%g s); the table "
			"holds the trials done\n", pl.sp.time_limit);
	/* every result is durable before the table is printed */
	g_pool = NULL;
	if (cfl_study_close_pool(study, &err)) {
		cli_fail(&err);
		goto done;
	}
	cli_remote_stop(&pl.remote);

	{
		struct cfl_trial_counts tc;
		struct cfl_run_info info;
		struct cfl_table_style style;

		cli_table_style(&pl.pool.table, 0, &style);
		/* the ensembles, from the stored predictions; the run's status */
		if (cfl_study_finish(study, &ls, &tc, &err)) {
			cli_fail(&err);
			goto done;
		}
		/* as `cfl report` prints it: the table, then the failures */
		if (cfl_store_run_get(cfl_study_store(study), cfl_study_run_id(study),
				      &info, &err)) {
			cli_fail(&err);
			goto done;
		}
		if (cfl_report_run_styled(cfl_study_store(study), &info, CFL_TABLE_TEXT,
					  &style, &out, &err)) {
			cfl_run_info_release(&info);
			cli_fail(&err);
			goto done;
		}
		cfl_run_info_release(&info);
		fputs(out.data, stdout);
		fflush(stdout);
		{
			/* "--db FILE" only when it is not the default */
			int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

			if (tc.failed + tc.poison)
				fprintf(stderr, "%zu of %zu trials failed (cfl report %s%s%s shows why)\n",
					tc.failed + tc.poison, tc.total, cli_sh(run_name),
					dflt ? "" : " --db ", dflt ? "" : cli_sh(pl.pool.db));
			fprintf(stderr, "run '%s' stored in '%s'; see it again with:\n  cfl report %s%s%s\n",
				run_name, pl.pool.db, cli_sh(run_name), dflt ? "" : " --db ",
				dflt ? "" : cli_sh(pl.pool.db));
		}
		rc = tc.done ? CLI_OK : CLI_FAIL;
		if (cfl_study_timed_out(study) && tc.done < tc.total) {
			int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

			fprintf(stderr, "%zu of %zu trials done at the time limit (%zu "
				"interrupted, %zu not started); finish the run with:\n"
				"  %scfl repeat --resume %s%s%s\n", tc.done, tc.total,
				tc.interrupted, tc.queued,
				cli_cluster_resume_prefix(&pl.cluster, launcher, sizeof(launcher)),
				cli_sh(run_name), dflt ? "" : " --db ", dflt ? "" : cli_sh(pl.pool.db));
		}
		if (!tc.done)
			fprintf(stderr, "cfl: %s\n", cfl_study_timed_out(study)
				? "no trial finished within the time limit"
				: "every trial failed");
		else if (pl.sp.repeat.save) {
			if (cfl_study_save_bundle(study, pl.sp.repeat.save, &err)) {
				rc = cli_fail(&err);
				goto done;
			}
			fprintf(stderr, "bundle written to '%s'; apply it with:\n"
				"  cfl predict %s DATA [--row ROW]\n",
				pl.sp.repeat.save, cli_sh(pl.sp.repeat.save));
		}
	}
	goto done;

interrupted:
	if (pr.tty && !pr.quiet)
		fprintf(stderr, "\n");
	g_pool = NULL;
	cfl_study_stop(study, NULL);
	fprintf(stderr, "cfl repeat: interrupted; run '%s' kept in '%s'; finish it with:\n"
		"  %scfl repeat --resume %s%s%s\n", run_name, pl.pool.db,
		cli_cluster_resume_prefix(&pl.cluster, launcher, sizeof(launcher)), cli_sh(run_name),
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? " --db " : "",
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? cli_sh(pl.pool.db) : "");
	rc = CLI_INTERRUPTED;
	goto done;
interrupted_early:
	if (cfl_study_stop(study, &err))
		cli_fail(&err);
	fprintf(stderr, "cfl repeat: interrupted\n");
	rc = CLI_INTERRUPTED;
done:
	g_pool = NULL;
	if (study)
		cfl_study_close_pool(study, NULL);
	cli_remote_stop(&pl.remote);
	cli_cluster_stop(&pl.cluster);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	cfl_study_free(study);
	if (loaded)
		cfl_data_release(&data);
	cfl_buf_release(&cmdline);
	cfl_buf_release(&plancmd);
	cfl_buf_release(&out);
	plan_release(&pl);
	free(rv);
	free(rv_words);
	if (g_interrupted && rc == CLI_FAIL)
		rc = CLI_INTERRUPTED;
	return rc;
}
