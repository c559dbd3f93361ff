/*
 * `cfl auto`: the whole job in one command within a time limit -- tune each
 * model family on the validation part, bag the best of each with --folds,
 * ensemble the bags on their out-of-fold predictions -- and print a
 * leaderboard sorted by validation score, with --save as a bundle.  A thin
 * driver over the study (cfl_study_auto): this file parses options into a
 * plan, loads each family's search space, shows the study's events and
 * prints the leaderboard rendered from the store (cfl_report_run, as `cfl
 * report` does).
 */
#include "auto_show.h"
#include "cli.h"
#include "pool_opts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfl/hpo.h"
#include "cfl/metrics.h"
#include "cfl/bundle.h"
#include "cfl/model.h"
#include "cfl/report.h"
#include "cfl/run.h"
#include "cfl/store.h"
#include "cfl/study.h"

enum {
	OPT_MODELS = CLI_OPT_FIRST_FREE,
	OPT_TIME_LIMIT,
	OPT_FOLDS,
	OPT_METRIC,
	OPT_SAVE,
	OPT_USE_ALL_TIME,
	OPT_REFIT,
	OPT_MAX_TRIALS,
	OPT_SEARCH_ROWS,
	OPT_BAG_SETS,
	OPT_PRUNE,
	OPT_SEARCH_RUNGS,
};

#define DEFAULT_MODELS "fcnn,linear,tree,forest,gbdt"

static void usage(FILE *f)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	fprintf(f,
		"usage: cfl auto DATA [options]\n\n"
		"Finds a good model for DATA within --time-limit seconds (or --max-trials\n"
		"candidates), in one run of the pool and the database.  On small data\n"
		"(under 10,000 training rows) every candidate is trained on --folds folds\n"
		"and scored out of fold on every training row by log loss (regression:\n"
		"--metric), and no validation part is held out; on larger data it is\n"
		"scored on the validation part, and each family's best is bagged\n"
		"afterwards.  Each family tries its defaults, a portfolio of diverse\n"
		"configurations, then Bayesian optimisation over params/MODEL.params,\n"
		"round after round until the limit.  Then greedy\n"
		"ensemble selection (Caruana's, by log loss out of fold) over every bag,\n"
		"and mean and stacking of each family's best bag.  Prints a leaderboard:\n"
		"greedy first, the others by log loss out of fold, --metric beside, the\n"
		"test score (never used to choose) and the seconds each entry took.\n"
		"With --save, every entry of the leaderboard goes into one bundle file\n"
		"for cfl predict (its default row: the leaderboard's rank 1).\n\n"
		"Options:\n"
		"  --time-limit SEC         the whole run's time [60]\n"
		"  --models LIST            the model families [" DEFAULT_MODELS ",\n"
		"                           those built in]\n"
		"  --folds K                folds of each candidate's bag [5]\n"
		"  --metric NAME            shown beside log loss; for regression it\n"
		"                           ranks [acc; regression: mse]\n"
		"  --use-all-time           search on until the search's time ends, even\n"
		"                           after a round of every family improved nothing\n"
		"  --max-trials N           end the search after N candidates over all\n"
		"                           the families: a run that depends on --seed\n"
		"                           only, not on the workers or the clock (the\n"
		"                           time limit then defaults to none) [none]\n"
		"  --search-rows N|all      on larger data, the rows each search candidate\n"
		"                           trains on (a seeded sample; the bags then\n"
		"                           train on every row their time allows)\n"
		"                           [50000 when there are over 100000]\n"
		"  --search-rungs N         under a time limit on that sample, successive\n"
		"                           halving on rows: the Bayesian candidates\n"
		"                           start on 1/2^(N-1) of it, the top half of a\n"
		"                           rung goes on to twice the rows; 1: off\n"
		"                           (fewer rungs below 1000 rows) [3]\n"
		"  --bag-sets R             on small data, R sets of folds (each its own\n"
		"                           partition, their out-of-fold predictions\n"
		"                           averaged) for the bags the final selection\n"
		"                           uses; under a time limit as many as fit in\n"
		"                           a fifth of the time, more if time is left\n"
		"                           (up to 20); 1: one partition for all [%d]\n"
		"  --prune none|asha        on larger data, stop fcnn's and gbdt's Bayesian\n"
		"                           candidates whose validation score while\n"
		"                           training is below the top third of their\n"
		"                           rung (asynchronous successive halving; the\n"
		"                           defaults and portfolio are never stopped)\n"
		"                           (only under a time limit) [none]\n"
		"  --refit                  refit each family's best bag's candidate on\n"
		"                           every training row, and predict with\n"
		"                           that one model instead of its K fold models:\n"
		"                           a K times smaller bundle, K times quicker\n"
		"                           predictions, a little less accurate\n"
		"  --save FILE              keep the bags' models and write the\n"
		"                           leaderboard as a bundle FILE (rows: each bag\n"
		"                           MODEL:HEX, mean, stacking, greedy)\n"
		"                           [none]\n"
		CLI_POOL_HELP_NUM_JOBS
		CLI_POOL_HELP_DB_NAME("auto")
		"  --resume NAME            continue the run NAME with a new time limit:\n"
		"                           its candidates and folds done are kept, the\n"
		"                           search goes on from them\n"
		"  --trial-timeout SEC      kill a trial after SEC seconds [0: never]\n"
		CLI_POOL_HELP_QUIET
		"  -v, --verbose            a line per candidate and fold trial, not\n"
		"                           one per family when its best improves\n"
		"                           (small data) or per family's round\n"
		"  -h, --help               this help\n"
		CLI_REMOTE_HELP CLI_CLUSTER_HELP "%s\n"
		"Exit status: 0 when the leaderboard has an entry, 1 when nothing finished\n"
		"its folds within the time limit (or the run could not start), 2 on a\n"
		"usage error, 130 when interrupted (continue with --resume NAME).\n\n"
		"Examples:\n"
		"  cfl auto datasets/breast_cancer.csv\n"
		"  cfl auto datasets/wine.csv --time-limit 30 --models linear,gbdt\n"
		"  cfl auto datasets/iris.csv --save iris-auto.cfl\n"
		"  cfl auto train.csv --test test.csv --time-limit 300 --name night\n"
		"  cfl auto --resume night --time-limit 120\n"
		"  cfl auto data.csv --listen 0.0.0.0:7070 --token-file tok --name big\n"
		"  mpirun -n 5 cfl auto data.csv --time-limit 600 --name big\n",
		CFL_STUDY_AUTO_BAG_SETS, cores > 0 ? cores : 1, cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_study_plan sp;
	struct cli_pool_opts pool;
	int verbose;		/* -v: a line per candidate and fold trial */
	struct cfl_space spaces[CFL_STUDY_MAX_MODELS];
	char params_buf[512];
};

static void plan_release(struct plan *pl)
{
	for (size_t i = 0; i < CFL_STUDY_MAX_MODELS; i++)
		cfl_space_release(&pl->spaces[i]);
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
		{ "time-limit", required_argument, 0, OPT_TIME_LIMIT },
		{ "folds", required_argument, 0, OPT_FOLDS },
		{ "metric", required_argument, 0, OPT_METRIC },
		{ "save", required_argument, 0, OPT_SAVE },
		{ "use-all-time", no_argument, 0, OPT_USE_ALL_TIME },
		{ "refit", no_argument, 0, OPT_REFIT },
		{ "verbose", no_argument, 0, 'v' },
		{ "max-trials", required_argument, 0, OPT_MAX_TRIALS },
		{ "search-rows", required_argument, 0, OPT_SEARCH_ROWS },
		{ "bag-sets", required_argument, 0, OPT_BAG_SETS },
		{ "prune", required_argument, 0, OPT_PRUNE },
		{ "search-rungs", required_argument, 0, OPT_SEARCH_RUNGS },
		CLI_POOL_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *models = NULL;
	struct cfl_err err;
	long folds;
	int c, r, limit_given = 0;

	cfl_study_plan_init(&pl->sp);
	pl->sp.kind = CFL_RUN_AUTO;
	pl->sp.time_limit = 60;
	cli_pool_opts_init(&pl->pool);
	optind = 1;
	while ((c = getopt_long(argc, argv, "qhv", opts, NULL)) != -1) {
		r = cli_pool_shared_option("auto", c, optarg, &pl->sp, &pl->pool);
		if (r < 0)
			return CLI_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_MODELS:
			models = optarg;
			break;
		case OPT_TIME_LIMIT:
			if (cli_parse_double(optarg, 0.5, 1e8, &pl->sp.time_limit))
				return cli_usage_error("auto", "--time-limit must be a number of seconds >= 0.5, got '%s'", optarg);
			limit_given = 1;
			break;
		case OPT_MAX_TRIALS:
			if (cli_parse_long(optarg, 1, 1000000, &pl->sp.autop.max_trials))
				return cli_usage_error("auto", "--max-trials must be an integer in [1, 1000000], got '%s'", optarg);
			break;
		case OPT_SEARCH_ROWS:
			if (!strcmp(optarg, "all"))
				pl->sp.autop.search_rows = -1;
			else if (cli_parse_long(optarg, 1, 1000000000, &pl->sp.autop.search_rows))
				return cli_usage_error("auto", "--search-rows must be 'all' or an integer in [1, 1000000000], got '%s'", optarg);
			break;
		case OPT_BAG_SETS:
			if (cli_parse_long(optarg, 1, 100, &folds))
				return cli_usage_error("auto", "--bag-sets must be an integer in [1, 100], got '%s'", optarg);
			pl->sp.autop.bag_sets = (int)folds;
			break;
		case OPT_SEARCH_RUNGS:
			if (cli_parse_long(optarg, 1, CFL_STUDY_AUTO_MAX_RUNGS, &folds))
				return cli_usage_error("auto", "--search-rungs must be an integer in [1, %d], got '%s'", CFL_STUDY_AUTO_MAX_RUNGS, optarg);
			pl->sp.autop.search_rungs = (int)folds;
			break;
		case OPT_PRUNE:
			r = cfl_prune_kind_lookup(optarg);
			if (r != CFL_PRUNE_NONE && r != CFL_PRUNE_ASHA)
				return cli_usage_error("auto", "--prune must be none or asha, got '%s'", optarg);
			pl->sp.autop.prune = (enum cfl_prune_kind)r;
			pl->sp.autop.prune_set = 1;
			break;
		case OPT_FOLDS:
			if (cli_parse_long(optarg, 2, 100, &folds))
				return cli_usage_error("auto", "--folds must be an integer in [2, 100], got '%s'", optarg);
			pl->sp.autop.folds = (int)folds;
			break;
		case OPT_METRIC:
			pl->sp.metric_arg = optarg;
			break;
		case OPT_SAVE:
			if (!optarg[0])
				return cli_usage_error("auto", "--save needs a file name");
			pl->sp.autop.save = optarg;
			break;
		case OPT_USE_ALL_TIME:
			pl->sp.autop.use_all_time = 1;
			break;
		case OPT_REFIT:
			pl->sp.autop.refit = 1;
			break;
		case 'v':
			pl->verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("auto", argc, argv, "qhv", opts);
		}
	}
	if (pl->sp.autop.max_trials && !limit_given)
		pl->sp.time_limit = 1e8;	/* the count, not the clock */
	/* pruning depends on the order the scores arrive */
	if (pl->sp.autop.max_trials && !limit_given && pl->sp.autop.prune_set &&
	    pl->sp.autop.prune != CFL_PRUNE_NONE)
		return cli_usage_error("auto", "--prune asha needs --time-limit beside --max-trials (a count budget alone gives the same run on any workers and after --resume)");
	if (optind >= argc && pl->pool.resume)
		return 3;	/* the rest comes from the stored command */
	if (optind >= argc)
		return cli_usage_error("auto", "missing DATA (a CSV file)");
	if (optind + 1 < argc)
		return cli_usage_error("auto", "unexpected argument '%s'", argv[optind + 1]);
	pl->sp.data.path = argv[optind];
	cli_pool_to_plan(&pl->pool, &pl->sp);
	if (cfl_study_plan_models(&pl->sp, models ? models : DEFAULT_MODELS,
				  models != NULL, &err))
		return cli_usage_error("auto", "%s", err.msg);
	return 0;
}

static const char *default_params(struct plan *pl, const char *model)
{
	return cfl_space_default_path(model, pl->params_buf, sizeof(pl->params_buf));
}

/* ---- progress ---- */

struct show {
	struct plan *pl;
	struct cfl_study_outcome *out;
	struct cli_auto_show as;	/* the lines on stderr (auto_show.c) */
	int empty;		/* the leaderboard has no entry */
};

/* On the process that coordinates: each family's search space. */
static int setup(struct cfl_study_plan *sp, void *ctx, struct cfl_err *err)
{
	struct plan *pl = ((struct show *)ctx)->pl;

	for (size_t i = 0; i < sp->autop.n_models; i++) {
		const char *m = sp->autop.models[i];

		if (cfl_space_load(&pl->spaces[i], default_params(pl, m),
				   cfl_model_find(m), err))
			return -1;
		sp->autop.spaces[i] = &pl->spaces[i];
	}
	return 0;
}

static void on_study_event(const struct cfl_study_event *ev, void *ctx)
{
	struct show *sh = ctx;

	if (ev->kind == CFL_STUDY_LOADED) {
		cli_data_target("auto", ev->data);
		cli_data_warn(ev->data, &sh->pl->sp.data);
	}
	if (ev->kind == CFL_STUDY_OPENED)
		sh->as.v.metric = cfl_metric_info(sh->pl->sp.autop.metric)->name;
	cli_auto_show_event(ev, &sh->as);
}

/* ---- the leaderboard ---- */

/* Prints the leaderboard as `cfl report` renders it (src/report).  0 when
 * it has an entry, 1 when not, -1 with err. */
static int print_leaderboard(struct cfl_store *st, int64_t run_id,
			     struct cfl_err *err)
{
	struct cfl_run_info info;
	struct cfl_buf b;
	int n = -1;

	memset(&info, 0, sizeof(info));
	cfl_buf_init(&b);
	/* the sentence above it wraps to a narrow terminal too */
	if (!cfl_store_run_get(st, run_id, &info, err))
		n = cfl_report_auto(st, &info, CFL_TABLE_TEXT, 0,
				    cfl_is_terminal(STDOUT_FILENO)
				    ? cfl_term_width(STDOUT_FILENO) : 0, &b, err);
	if (n >= 0 && (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout))) {
		cfl_err_set(err, "cannot write the leaderboard to stdout");
		n = -1;
	}
	cfl_buf_release(&b);
	cfl_run_info_release(&info);
	return n < 0 ? -1 : n > 0 ? 0 : 1;
}

/* The run is over: the leaderboard.  1 when it has no entry (no bundle). */
static int on_finished(struct cfl_study *study, void *ctx, struct cfl_err *err)
{
	struct show *sh = ctx;
	int r;

	cli_auto_show_end(&sh->as);
	r = print_leaderboard(cfl_study_store(study), cfl_study_run_id(study), err);

	sh->empty = r == 1;
	return r;
}

static void reset_cb(void *pl)
{
	plan_release(pl);
	memset(pl, 0, sizeof(struct plan));
}

int cmd_auto(int argc, char **argv)
{
	struct plan pl;
	struct show sh;
	struct cfl_study_outcome out;
	struct cfl_study_hooks hooks = { { on_study_event, &sh }, setup, on_finished,
					 &sh, NULL };
	struct cfl_buf cmdline;
	char **rv = NULL, **rv_words = NULL, db[1100];
	int rc;

	memset(&pl, 0, sizeof(pl));
	memset(&sh, 0, sizeof(sh));
	cfl_buf_init(&cmdline);
	rc = cli_pool_parse("auto", argc, argv, parse_args, reset_cb, &pl, &pl.pool,
			    &pl.sp.exec.backend, &cmdline, NULL, &rv, &rv_words);
	if (rc) {
		rc = rc < 0 ? CLI_OK : rc;
		goto done;
	}
	pl.sp.command_line = cmdline.data;
	sh.pl = &pl;
	sh.out = &out;
	cli_auto_show_init(&sh.as, pl.pool.quiet, pl.verbose, pl.sp.time_limit);
	pl.sp.exec.pool.tick = sh.as.tty ? 0.5 : 0;	/* the live line's clock */
	rc = cli_study_run("auto", &pl.sp, &pl.pool, &hooks, "", "continue", &out);
	cli_auto_show_end(&sh.as);
	if (rc >= 0)
		goto done;
	if (out.bundle_written)
		fprintf(stderr, "bundle written to '%s'; apply it with:\n"
			"  cfl predict %s DATA [--row ROW]\n", pl.sp.autop.save,
			cli_sh(pl.sp.autop.save));
	cli_db_flag(pl.pool.db, db, sizeof(db));
	fprintf(stderr, "run '%s' stored in '%s'; give it more time with:\n"
		"  %scfl auto --resume %s%s --time-limit SEC\n", out.name, pl.pool.db,
		out.launcher, cli_sh(out.name), db);
	rc = CLI_OK;
	if (sh.empty) {
		fprintf(stderr, "cfl: no model finished its folds within the time "
			"limit; give it a longer --time-limit\n");
		if (pl.sp.autop.save)
			fprintf(stderr, "cfl: no bundle written to '%s': it would "
				"have no row\n", pl.sp.autop.save);
		rc = CLI_FAIL;
	}
done:
	cfl_buf_release(&cmdline);
	plan_release(&pl);
	free(rv);
	free(rv_words);
	return rc;
}
