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
#include "pool_opts.h"

#include <math.h>
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
		CLI_REMOTE_HELP CLI_CLUSTER_HELP "%s\n"
		"Exit status: 0 when the run completed or stopped at --time-limit (failed\n"
		"trials are counted in the table), 1 when it could not run or every trial\n"
		"failed, 2 on a usage error, 130 when interrupted (resume with --resume\n"
		"NAME).\n\n"
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
		cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_study_plan sp;	/* data options, models, params, repeats,
					 * folds, metrics, ensembles */
	struct cli_pool_opts pool;	/* --num-jobs, --db, --resume, -q, ... */
	const char *sets[256];
	size_t n_sets;
};

static void plan_release(struct plan *pl)
{
	cfl_study_plan_release(&pl->sp);
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
	struct cfl_err err;
	long folds = 0;
	int c, r;

	cfl_study_plan_init(&pl->sp);
	cli_pool_opts_init(&pl->pool);
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("repeat", c, optarg, &pl->sp, &pl->pool);
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
			pl->sp.metrics_arg = optarg;
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
	cli_pool_to_plan(&pl->pool, &pl->sp);
	if (cfl_study_plan_models(&pl->sp, models ? models
				  : cfl_model_find("fcnn") ? "fcnn" : "linear", 1, &err) ||
	    cfl_study_plan_sets(&pl->sp, pl->sets, pl->n_sets, &err))
		return cli_usage_error("repeat", "%s", err.msg);
	return 0;
}

/* ---- progress ---- */

struct progress {
	const struct plan *pl;
	struct cfl_study_outcome *out;	/* the run's name, its counts */
	int quiet, tty, resumed;
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
	double eta;		/* the study's estimate of the time left */
	int eta_lower;
};

static void progress_line(struct progress *pr, struct cfl_pool *pool)
{
	struct cfl_pool_stats st;
	struct cfl_progress_counts c = {
		.done = pr->done, .failed = pr->failed, .total = pr->total,
		.elapsed = cfl_now() - pr->t0, .have_best = pr->have_best,
		.best_metric = pr->metric, .best_value = pr->sign * pr->best,
		.best_model = pr->best_model, .n_models = pr->n_models,
		.models = pr->models, .model_done = pr->model_done,
		.eta = pr->eta, .eta_lower = pr->eta_lower,
	};
	char line[1024];

	if (pr->quiet || !pr->tty)
		return;
	cfl_pool_get_stats(pool, &st);
	c.running = st.running;
	cfl_progress_format(&c, cfl_term_width(STDERR_FILENO), line, sizeof(line));
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

/* The study's events: progress on stderr (none with -q, but notes and the
 * backend's lines). */
static void on_study_event(const struct cfl_study_event *ev, void *ctx)
{
	struct progress *pr = ctx;
	const struct plan *pl = pr->pl;

	if (cli_study_said("repeat", ev))
		return;
	if (ev->kind == CFL_STUDY_START || ev->kind == CFL_STUDY_TRIAL ||
	    ev->kind == CFL_STUDY_TICK) {
		pr->eta = ev->eta;
		pr->eta_lower = ev->eta_lower;
	}
	switch (ev->kind) {
	case CFL_STUDY_LOADED:
		cli_data_target("repeat", ev->data);
		cli_data_warn(ev->data, &pl->sp.data);
		if (!pr->quiet)
			cli_data_facts("repeat", ev->data, &pl->sp.data, ev->text);
		break;
	case CFL_STUDY_OPENED:
		pr->resumed = ev->resumed;
		pr->metric = cfl_metric_info(pl->sp.metrics[0])->name;
		pr->sign = cfl_metric_info(pl->sp.metrics[0])->sign;
		if ((long)pl->sp.exec.pool.n_local * pl->pool.threads_per_trial >
		    sysconf(_SC_NPROCESSORS_ONLN))
			fprintf(stderr, "cfl repeat: warning: %ld jobs x %ld threads per trial "
				"exceeds the %ld online cores\n", pl->pool.num_jobs,
				pl->pool.threads_per_trial, sysconf(_SC_NPROCESSORS_ONLN));
		break;
	case CFL_STUDY_START:
		pr->t0 = cfl_now();
		pr->total = ev->n_todo;
		if (pr->resumed && !pr->quiet)
			fprintf(stderr, "resuming run '%s': %zu trials done, %zu to run\n",
				pr->out->name, ev->n_done, ev->n_todo);
		break;
	case CFL_STUDY_TRIAL:
		progress_event(pr, ev->pool, ev->trial, ev->what, ev->repeat, ev->fold);
		break;
	case CFL_STUDY_TICK:
		progress_line(pr, ev->pool);
		break;
	case CFL_STUDY_DRAINED:
		if (pr->tty && !pr->quiet)	/* the progress line ends */
			fprintf(stderr, "\n");
		if (ev->status == CFL_STUDY_TIME_LIMIT)
			fprintf(stderr, "cfl repeat: stopped at its time limit (%g s); the "
				"table holds the trials done\n", pl->sp.time_limit);
		break;
	default:
		break;
	}
}

/* The run is over: the table as `cfl report` prints it, then the
 * failures and how to see it again.  1 when no trial is done (no bundle). */
static int on_finished(struct cfl_study *study, void *ctx, struct cfl_err *err)
{
	struct progress *pr = ctx;
	const struct plan *pl = pr->pl;
	const struct cfl_trial_counts *tc = &pr->out->counts;
	const char *name = pr->out->name;
	char db[1100];

	cli_db_flag(pl->pool.db, db, sizeof(db));
	if (cli_print_run(study, &pl->pool.table, err))
		return -1;
	fflush(stdout);
	if (tc->failed + tc->poison)
		fprintf(stderr, "%zu of %zu trials failed (cfl report %s%s shows why)\n",
			tc->failed + tc->poison, tc->total, cli_sh(name), db);
	fprintf(stderr, "run '%s' stored in '%s'; see it again with:\n  cfl report "
		"%s%s\n", name, pl->pool.db, cli_sh(name), db);
	if (pr->out->timed_out && tc->done < tc->total)
		fprintf(stderr, "%zu of %zu trials done at the time limit (%zu "
			"interrupted, %zu not started); finish the run with:\n"
			"  %scfl repeat --resume %s%s\n", tc->done, tc->total,
			tc->interrupted, tc->queued, pr->out->launcher, cli_sh(name), db);
	if (!tc->done)
		fprintf(stderr, "cfl: %s\n", pr->out->timed_out
			? "no trial finished within the time limit" : "every trial failed");
	return tc->done ? 0 : 1;
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
	struct progress pr;
	struct cfl_study_outcome out;
	struct cfl_study_hooks hooks = { { on_study_event, &pr }, NULL, on_finished,
					 &pr, NULL };
	struct cfl_buf cmdline, plancmd;
	char **rv = NULL, **rv_words = NULL;
	int rc;

	memset(&pl, 0, sizeof(pl));
	memset(&pr, 0, sizeof(pr));
	cfl_buf_init(&cmdline);
	cfl_buf_init(&plancmd);
	rc = cli_pool_parse("repeat", argc, argv, parse_args, reset_cb, &pl, &pl.pool,
			    &pl.sp.exec.backend, &cmdline, &plancmd, &rv, &rv_words);
	if (rc) {
		rc = rc < 0 ? CLI_OK : rc;
		goto done;
	}
	pl.sp.command_line = pl.pool.resume ? plancmd.data : cmdline.data;
	pr.pl = &pl;
	pr.out = &out;
	pr.tty = cli_stderr_is_tty();
	pr.quiet = pl.pool.quiet;
	pr.n_models = pl.sp.repeat.n_models;
	pr.models = (const char *const *)pl.sp.repeat.models;
	pl.sp.exec.pool.tick = pr.tty && !pr.quiet ? 0.5 : 0;
	rc = cli_study_run("repeat", &pl.sp, &pl.pool, &hooks,
			   "a larger --num-repeat grows it", "finish", &out);
	if (rc >= 0)
		goto done;
	rc = out.counts.done ? CLI_OK : CLI_FAIL;
	if (out.bundle_written)
		fprintf(stderr, "bundle written to '%s'; apply it with:\n"
			"  cfl predict %s DATA [--row ROW]\n",
			pl.sp.repeat.save, cli_sh(pl.sp.repeat.save));
done:
	cfl_buf_release(&cmdline);
	cfl_buf_release(&plancmd);
	plan_release(&pl);
	free(rv);
	free(rv_words);
	return rc;
}
