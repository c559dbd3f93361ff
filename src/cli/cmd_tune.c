/*
 * `cfl tune`: searches a model's hyper-parameters (or any command's) with
 * src/hpo's search methods, running each candidate's --num-repeat seeds in
 * the pool and scoring it on the VALIDATION part by sign*mean - std of
 * --metric; then refits the best candidate with fresh seeds, reports it on
 * the test part and saves its model.
 *
 * A thin driver over the study (cfl/study.h), which owns the ask/tell loop
 * and its determinism: this file parses options into a plan, loads the
 * search space, shows the study's events and prints.  Everything printed
 * comes from the store (cfl_report_run), so `cfl report` prints it again.
 */
#include "cli.h"
#include "pool_opts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/hpo.h"
#include "cfl/metrics.h"
#include "cfl/model.h"
#include "cfl/report.h"
#include "cfl/run.h"
#include "cfl/store.h"
#include "cfl/study.h"

enum {
	OPT_MODEL = CLI_OPT_FIRST_FREE,
	OPT_PARAMS,
	OPT_SET,
	OPT_NUM_SEARCH,
	OPT_NUM_REPEAT,
	OPT_NUM_PARALLEL,
	OPT_METRIC,
	OPT_METHOD,
	OPT_GRID_POINTS,
	OPT_LIAR,
	OPT_TIMEOUT,
	OPT_PRUNE,
	OPT_COMMAND,
	OPT_DIRECTION,
	OPT_METRICS,
	OPT_SAVE,
};

static void usage(FILE *f)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	fprintf(f,
		"usage: cfl tune DATA [options]\n"
		"       cfl tune --command 'CMD {name} ...' --params FILE [options]\n\n"
		"Searches hyper-parameters: each candidate runs --num-repeat seeds in a pool\n"
		"of worker processes and is scored on the validation part (never the test\n"
		"part) by score = sign*mean - std of --metric.  Prints one row per candidate\n"
		"(an 8-hex id of its params), a Best Parameters block per metric and\n"
		"overall, then refits the best candidate with --num-repeat fresh seeds,\n"
		"reports it on the test part and saves its model for cfl predict.\n"
		"With --command, each candidate runs CMD with {name} replaced by the\n"
		"candidate's value (shell-quoted); the number on the last line of its\n"
		"stdout is its value; a non-zero exit or no number is a failed trial.\n\n"
		"Options:\n"
		"  --model NAME             the model to tune [%s]\n"
		"  --params FILE            the search space [params/MODEL.params, here or\n"
		"                           next to the cfl binary]\n"
		"  --set KEY=VALUE          fix a parameter (repeatable)\n"
		"  --num-search N           candidates to try [10]\n"
		"  --num-repeat R           seeds per candidate [2]\n"
		CLI_POOL_HELP_NUM_JOBS
		"  --num-parallel P         candidates in flight at once [J; with\n"
		"                           --num-jobs 0: the online cores]\n"
		"  --metric NAME            the metric scored [acc; regression: mse;\n"
		"                           --command: value]\n"
		"  --metrics LIST           metrics of every trial, shown in the tables,\n"
		"                           the scored one first [acc,auc; regression:\n"
		"                           mae,mse]\n"
		"  --method bo|random|grid  the search method [bo]\n"
		"  --grid-points N          grid: values per continuous range [0: none]\n"
		"  --liar kriging|constant  bo: values of candidates in flight [kriging]\n"
		"  --command CMD            tune a program instead of a model\n"
		"  --direction min|max      --command: which values are better [min]\n"
		"  --save FILE              also write the refit as a bundle FILE: row\n"
		"                           'best' (the mean of the refit seeds) and one\n"
		"                           row per seed, 'best#0', ... (docs/bundles.md)\n"
		"                           [none; the first seed's model is saved as\n"
		"                           DB-FOLDER/NAME.cfl either way]\n"
		CLI_POOL_HELP_DB_NAME("tune")
		"  --resume NAME            continue the run NAME after a crash: the next\n"
		"                           proposal is the one the run would have made;\n"
		"                           a larger --num-search grows a finished run\n"
		"  --timeout SEC            ask no new candidate after SEC seconds [0: none]\n"
		"  --prune median|asha      stop candidates whose validation score while\n"
		"                           training (their seeds' mean; fcnn: each epoch,\n"
		"                           gbdt: every 10 rounds) is poor: below the\n"
		"                           median of the finished ones / out of their\n"
		"                           rung's top third [none]\n"
		CLI_POOL_HELP_RETRIES
		CLI_POOL_HELP_QUIET
		"  -h, --help               this help\n"
		CLI_REMOTE_HELP CLI_CLUSTER_HELP "%s\n"
		"Exit status: 0 when the search ran (failed candidates are shown), 1 when\n"
		"it could not run or every candidate failed, 2 on a usage error, 130 when\n"
		"interrupted (continue with --resume NAME).\n\n"
		"Examples:\n"
		"  cfl tune datasets/breast_cancer.csv --model fcnn --num-search 10 \\\n"
		"      --num-repeat 2\n"
		"  cfl tune datasets/wine.csv --model linear --method random --num-search 20\n"
		"  cfl tune datasets/iris.csv --model linear --method grid --grid-points 5\n"
		"  cfl tune data.csv --set epochs=20 --num-parallel 4 --name night\n"
		"  cfl tune --resume night\n"
		"  cfl tune datasets/wine.csv --model gbdt --save wine-tuned.cfl\n"
		"  cfl tune --resume night --num-search 60\n"
		"  cfl tune --command 'python3 train.py --lr {lr}' --params lr.params \\\n"
		"      --direction max\n"
		"  cfl tune data.csv --model linear --num-jobs 0 --listen 127.0.0.1:7070\n"
		"  mpirun -n 5 cfl tune data.csv --model linear --num-search 40 --num-parallel 8\n",
		cfl_model_find("fcnn") ? "fcnn" : "linear", cores > 0 ? cores : 1,
		cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_study_plan sp;	/* data options, the search, repeats */
	const char *params_path;
	const char *sets[256];
	size_t n_sets;
	int direction_set;
	struct cli_pool_opts pool;	/* --num-jobs, --db, --resume, -q, ... */
	char params_buf[512];
	struct cfl_space space;		/* the search space, loaded by setup */
};

static int parse_args(void *ctx, int argc, char **argv)
{
	struct plan *pl = ctx;
	static const struct option opts[] = {
		CLI_DATA_LONGOPTS,
		CLI_CLUSTER_LONGOPTS,
		CLI_REMOTE_LONGOPTS,
		{ "model", required_argument, 0, OPT_MODEL },
		{ "params", required_argument, 0, OPT_PARAMS },
		{ "set", required_argument, 0, OPT_SET },
		{ "num-search", required_argument, 0, OPT_NUM_SEARCH },
		{ "num-repeat", required_argument, 0, OPT_NUM_REPEAT },
		{ "num-parallel", required_argument, 0, OPT_NUM_PARALLEL },
		{ "metric", required_argument, 0, OPT_METRIC },
		{ "metrics", required_argument, 0, OPT_METRICS },
		{ "method", required_argument, 0, OPT_METHOD },
		{ "grid-points", required_argument, 0, OPT_GRID_POINTS },
		{ "liar", required_argument, 0, OPT_LIAR },
		{ "timeout", required_argument, 0, OPT_TIMEOUT },
		{ "prune", required_argument, 0, OPT_PRUNE },
		{ "command", required_argument, 0, OPT_COMMAND },
		{ "direction", required_argument, 0, OPT_DIRECTION },
		{ "save", required_argument, 0, OPT_SAVE },
		/* last, as repeat's: getopt lists the matches of an ambiguous
		 * abbreviation in this order */
		CLI_POOL_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct cfl_study_tune_plan *t = &pl->sp.tune;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	struct cfl_err err;
	int c, r;

	cfl_study_plan_init(&pl->sp);
	pl->sp.kind = CFL_RUN_TUNE;
	cli_pool_opts_init(&pl->pool);
	cfl_space_init(&pl->space);
	pl->sp.num_repeat = 2;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("tune", c, optarg, &pl->sp, &pl->pool);
		if (r < 0)
			return CLI_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_MODEL:
			t->model = optarg;
			break;
		case OPT_PARAMS:
			pl->params_path = optarg;
			break;
		case OPT_SET:
			if (pl->n_sets == sizeof(pl->sets) / sizeof(pl->sets[0]))
				return cli_usage_error("tune", "too many --set options");
			pl->sets[pl->n_sets++] = optarg;
			break;
		case OPT_NUM_SEARCH:
			if (cli_parse_long(optarg, 1, 100000, &t->num_search))
				return cli_usage_error("tune", "--num-search must be an integer in [1, 100000], got '%s'", optarg);
			break;
		case OPT_NUM_REPEAT:
			if (cli_parse_long(optarg, 1, 1000, &pl->sp.num_repeat))
				return cli_usage_error("tune", "--num-repeat must be an integer in [1, 1000], got '%s'", optarg);
			break;
		case OPT_NUM_PARALLEL:
			if (cli_parse_long(optarg, 1, 1024, &t->num_parallel))
				return cli_usage_error("tune", "--num-parallel must be an integer in [1, 1024], got '%s'", optarg);
			t->num_parallel_set = 1;
			break;
		case OPT_METRIC:
			pl->sp.metric_arg = optarg;
			break;
		case OPT_METRICS:
			pl->sp.metrics_arg = optarg;
			break;
		case OPT_METHOD:
			r = cfl_search_method_lookup(optarg);
			if (r < 0)
				return cli_usage_error("tune", "--method must be bo, random or grid, got '%s'", optarg);
			t->method = (enum cfl_search_method)r;
			break;
		case OPT_GRID_POINTS:
			if (cli_parse_long(optarg, 1, 100000, &t->grid_points))
				return cli_usage_error("tune", "--grid-points must be an integer in [1, 100000], got '%s'", optarg);
			break;
		case OPT_LIAR:
			if (!strcmp(optarg, "kriging"))
				t->liar = CFL_LIAR_KRIGING;
			else if (!strcmp(optarg, "constant"))
				t->liar = CFL_LIAR_CONSTANT;
			else
				return cli_usage_error("tune", "--liar must be kriging or constant, got '%s'", optarg);
			break;
		case OPT_TIMEOUT:
			if (cli_parse_double(optarg, 0, 1e9, &t->timeout))
				return cli_usage_error("tune", "--timeout must be a number of seconds >= 0, got '%s'", optarg);
			break;
		case OPT_PRUNE: {
			int k = cfl_prune_kind_lookup(optarg);

			if (k < 0)
				return cli_usage_error("tune", "--prune must be none, median or asha, got '%s'", optarg);
			t->prune = (enum cfl_prune_kind)k;
			break;
		}
		case OPT_COMMAND:
			t->command = optarg;
			break;
		case OPT_SAVE:
			if (!*optarg)
				return cli_usage_error("tune", "--save needs a file name");
			t->save = optarg;
			break;
		case OPT_DIRECTION:
			if (!strcmp(optarg, "min"))
				t->maximize = 0;
			else if (!strcmp(optarg, "max"))
				t->maximize = 1;
			else
				return cli_usage_error("tune", "--direction must be min or max, got '%s'", optarg);
			pl->direction_set = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("tune", argc, argv, "qh", opts);
		}
	}
	if (optind < argc)
		pl->sp.data.path = argv[optind];
	if (optind + 1 < argc)
		return cli_usage_error("tune", "unexpected argument '%s'", argv[optind + 1]);
	if (!pl->sp.data.path && !t->command)
		return pl->pool.resume ? 3 : cli_usage_error("tune", "missing DATA (a CSV file)");
	if (t->command && !t->model && !pl->params_path)
		return cli_usage_error("tune", "--command needs --params FILE");
	if (!t->command && pl->direction_set)
		return cli_usage_error("tune", "--direction applies to --command only (metrics know their direction)");
	if (!t->command && !t->model)
		t->model = cfl_model_find("fcnn") ? "fcnn" : "linear";
	if (t->model && cfl_study_model_check(t->model, &err))
		return cli_usage_error("tune", "%s", err.msg);
	cli_pool_to_plan(&pl->pool, &pl->sp);
	if (!t->num_parallel)
		t->num_parallel = pl->pool.num_jobs ? pl->pool.num_jobs : (cores > 0 ? cores : 1);
	return 0;
}

static const char *default_params(struct plan *pl)
{
	return cfl_space_default_path(pl->sp.tune.model, pl->params_buf,
				  sizeof(pl->params_buf));
}

/* ---- the study's events ---- */

struct show {
	struct plan *pl;
	struct cfl_study_outcome *out;
	int resumed;
};

/* On the process that coordinates: the search space, checked against the
 * model's schema, with --set's values fixed. */
static int setup(struct cfl_study_plan *sp, void *ctx, struct cfl_err *err)
{
	struct plan *pl = ((struct show *)ctx)->pl;

	return cfl_study_tune_space(sp, &pl->space, pl->params_path ? pl->params_path
				    : default_params(pl), pl->sets, pl->n_sets, err);
}

static void on_study_event(const struct cfl_study_event *ev, void *ctx)
{
	const struct show *sh = ctx;
	const struct plan *pl = sh->pl;

	if (cli_study_said("tune", ev))
		return;
	if (ev->kind == CFL_STUDY_OPENED)
		((struct show *)ctx)->resumed = ev->resumed;
	if (ev->kind == CFL_STUDY_LOADED) {
		cli_data_target("tune", ev->data);
		cli_data_warn(ev->data, &pl->sp.data);
	}
	if (pl->pool.quiet)
		return;
	switch (ev->kind) {
	case CFL_STUDY_LOADED:
		cli_data_facts("tune", ev->data, &pl->sp.data, ev->text);
		break;
	case CFL_STUDY_START:
		if (sh->resumed)
			fprintf(stderr, "resuming run '%s': %zu candidates stored\n",
				sh->out->name, ev->n_done);
		break;
	case CFL_STUDY_TRIAL:
		if (ev->trial->status != CFL_TRIAL_DONE)
			fprintf(stderr, "%s repeat %d: %s: %s\n", ev->what, ev->repeat,
				cfl_trial_status_name(ev->trial->status),
				ev->trial->reason ? ev->trial->reason : "");
		break;
	case CFL_STUDY_CANDIDATE: {
		char p[200];
		struct cfl_buf b;

		cfl_buf_init(&b);
		cfl_params_format(ev->params, &b);
		cfl_params_spaced(b.data ? b.data : "", p, sizeof(p));
		cfl_buf_release(&b);
		if (isnan(ev->score))
			fprintf(stderr, "[%zu/%ld] %s failed: %s\n", ev->cand + 1,
				pl->sp.tune.num_search, ev->hex, p);
		else {
			char line[300];	/* wrapped at a terminal's width */

			snprintf(line, sizeof(line), "[%zu/%ld] %s score %.6f (best %.6f): %s",
				 ev->cand + 1, pl->sp.tune.num_search, ev->hex, ev->score,
				 ev->best, p);
			cli_wrap_stderr(line);
		}
		break;
	}
	case CFL_STUDY_TIMEOUT:
		fprintf(stderr, "--timeout %.0f s reached after %zu candidates\n",
			pl->sp.tune.timeout, ev->n_done);
		break;
	default:
		break;
	}
}

/* The run is over: its tables as `cfl report` prints them, and where the
 * best model went.  1 when every candidate failed (no bundle). */
static int on_finished(struct cfl_study *study, void *ctx, struct cfl_err *err)
{
	const struct show *sh = ctx;

	if (cli_print_run(study, &sh->pl->pool.table, err))
		return -1;
	if (sh->out->model_path[0])
		printf("\nBest model saved to %s (apply it with: cfl predict %s DATA)\n",
		       sh->out->model_path, cli_sh(sh->out->model_path));
	fflush(stdout);
	return sh->out->best >= 0 ? 0 : 1;
}

static void reset_cb(void *pl)
{
	memset(pl, 0, sizeof(struct plan));
}

int cmd_tune(int argc, char **argv)
{
	struct plan pl;
	struct show sh = { &pl, NULL, 0 };
	struct cfl_study_outcome out;
	struct cfl_study_hooks hooks = { { on_study_event, &sh }, setup, on_finished,
					 &sh, NULL };
	struct cfl_buf cmdline, plancmd;
	char **rv = NULL, **rv_words = NULL, db[1100];
	int rc;

	memset(&pl, 0, sizeof(pl));
	cfl_space_init(&pl.space);
	cfl_buf_init(&cmdline);
	cfl_buf_init(&plancmd);
	rc = cli_pool_parse("tune", argc, argv, parse_args, reset_cb, &pl, &pl.pool,
			    &pl.sp.exec.backend, &cmdline, &plancmd, &rv, &rv_words);
	if (rc) {
		rc = rc < 0 ? CLI_OK : rc;
		goto done;
	}
	pl.sp.command_line = pl.pool.resume ? plancmd.data : cmdline.data;
	sh.out = &out;
	rc = cli_study_run("tune", &pl.sp, &pl.pool, &hooks,
			   "a larger --num-search grows it", "continue", &out);
	if (rc >= 0)
		goto done;
	if (out.bundle_written)
		printf("The refit saved as bundle %s (rows best, best#0, ...: cfl predict %s DATA --row best)\n",
		       pl.sp.tune.save, cli_sh(pl.sp.tune.save));
	fflush(stdout);
	fprintf(stderr, "run '%s' stored in '%s'; see it again with:\n  cfl report %s%s\n",
		out.name, pl.pool.db, cli_sh(out.name), cli_db_flag(pl.pool.db, db, sizeof(db)));
	rc = CLI_OK;
	if (out.best < 0) {
		fprintf(stderr, "cfl: every candidate failed\n");
		rc = CLI_FAIL;
	}
done:
	cfl_space_release(&pl.space);
	cfl_buf_release(&cmdline);
	cfl_buf_release(&plancmd);
	free(rv);
	free(rv_words);
	return rc;
}
