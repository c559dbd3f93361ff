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
#include "cluster.h"
#include "pool_opts.h"
#include "remote.h"

#include <math.h>
#include <signal.h>
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
		CLI_POOL_HELP_RETRIES
		CLI_POOL_HELP_QUIET
		"  -h, --help               this help\n"
		"%s%s%s\n"
		"Exit status: 0 when the search ran (failed candidates are shown), 1 when\n"
		"it could not run or every candidate failed, 2 on a usage error, 130 when\n"
		"interrupted (continue with --resume NAME).\n\n"
		"Examples:\n"
		"  cfl tune datasets/breast_cancer.csv --model fcnn --num-search 10 --num-repeat 2\n"
		"  cfl tune datasets/wine.csv --model linear --method random --num-search 20\n"
		"  cfl tune datasets/iris.csv --model linear --method grid --grid-points 5\n"
		"  cfl tune data.csv --set epochs=20 --num-parallel 4 --name night\n"
		"  cfl tune --resume night\n"
		"  cfl tune datasets/wine.csv --model gbdt --save wine-tuned.cfl\n"
		"  cfl tune --resume night --num-search 60\n"
		"  cfl tune --command 'python3 train.py --lr {lr}' --params lr.params --direction max\n"
		"  cfl tune data.csv --model linear --num-jobs 0 --listen 127.0.0.1:7070\n"
		"  mpirun -n 5 cfl tune data.csv --model linear --num-search 40 --num-parallel 8\n",
		cfl_model_find("fcnn") ? "fcnn" : "linear", cores > 0 ? cores : 1,
		cli_remote_help, cli_cluster_help, cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_study_plan sp;	/* data options, the search, repeats */
	const char *params_path;
	const char *sets[256];
	size_t n_sets;
	const char *metric;
	const char *metrics;	/* --metrics LIST */
	int direction_set;
	struct cli_pool_opts pool;	/* --num-jobs, --db, --resume, -q, ... */
	char params_buf[512];
	struct cli_cluster cluster;	/* --backend; the mpi backend */
	struct cli_remote remote;	/* --listen: remote workers */
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
	int c, r;

	cfl_study_plan_init(&pl->sp);
	pl->sp.kind = CFL_RUN_TUNE;
	cli_pool_opts_init(&pl->pool);
	cli_cluster_init(&pl->cluster);
	cli_remote_init(&pl->remote);
	pl->sp.num_repeat = 2;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("tune", c, optarg, &pl->sp.data, &pl->pool,
					   &pl->remote, &pl->cluster);
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
			pl->metric = optarg;
			break;
		case OPT_METRICS:
			pl->metrics = optarg;
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
	if (t->command) {
		if (t->model)
			return cli_usage_error("tune", "--model and --command exclude each other");
		if (!pl->params_path)
			return cli_usage_error("tune", "--command needs --params FILE");
		if ((pl->metric && strcmp(pl->metric, "value")) || pl->metrics)
			return cli_usage_error("tune", "--command gives one metric, 'value'");
	} else if (pl->direction_set) {
		return cli_usage_error("tune", "--direction applies to --command only (metrics know their direction)");
	}
	if (pl->pool.name && pl->pool.resume && strcmp(pl->pool.name, pl->pool.resume))
		return cli_usage_error("tune", "--name '%s' and --resume '%s' disagree",
				       pl->pool.name, pl->pool.resume);
	if (!t->command && !t->model)
		t->model = cfl_model_find("fcnn") ? "fcnn" : "linear";
	if (t->model && !cfl_model_find(t->model)) {
		struct cfl_buf known;

		cfl_buf_init(&known);
		for (size_t i = 0; cfl_model_at(i); i++)
			cfl_buf_printf(&known, "%s%s", i ? ", " : "", cfl_model_at(i)->name);
		cli_usage_error("tune", "unknown model '%s' (known: %s)", t->model,
				known.data ? known.data : "");
		cfl_buf_release(&known);
		return CLI_USAGE;
	}
	if (!pl->pool.num_jobs && !pl->remote.listen)
		return cli_usage_error("tune", "--num-jobs 0 needs --listen (remote workers)");
	if (t->command && t->save)
		return cli_usage_error("tune", "--save writes models; a --command run has none");
	if (t->command && pl->remote.listen)
		return cli_usage_error("tune", "--listen does not run --command trials "
				       "(a worker never receives a command)");
	if ((r = cli_remote_check(&pl->remote, "tune")))
		return r;
	if (!t->num_parallel)
		t->num_parallel = pl->pool.num_jobs ? pl->pool.num_jobs : (cores > 0 ? cores : 1);
	return 0;
}

static const char *default_params(struct plan *pl)
{
	return cli_default_params(pl->sp.tune.model, pl->params_buf,
				  sizeof(pl->params_buf));
}

/* ---- the study's events ---- */

struct show {
	const struct plan *pl;
	const char *run_name;
	int resumed;
};

static void on_study_event(const struct cfl_study_event *ev, void *ctx)
{
	const struct show *sh = ctx;
	const struct plan *pl = sh->pl;

	if (pl->pool.quiet)
		return;
	switch (ev->kind) {
	case CFL_STUDY_START:
		if (sh->resumed)
			fprintf(stderr, "resuming run '%s': %zu candidates stored\n",
				sh->run_name, ev->n_done);
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
		snprintf(p, sizeof(p), "%s", b.data ? b.data : "");
		cfl_buf_release(&b);
		if (isnan(ev->score))
			fprintf(stderr, "[%zu/%ld] %s failed: %s\n", ev->cand + 1,
				pl->sp.tune.num_search, ev->hex, p);
		else
			fprintf(stderr, "[%zu/%ld] %s score %.6f (best %.6f): %s\n",
				ev->cand + 1, pl->sp.tune.num_search, ev->hex, ev->score,
				ev->best, p);
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

static void reset_cb(void *pl)
{
	memset(pl, 0, sizeof(struct plan));
}

int cmd_tune(int argc, char **argv)
{
	struct plan pl;
	struct cfl_data data;
	struct cfl_space space;
	struct cfl_err err;
	struct cfl_pool_opts po;
	struct cfl_study *study = NULL;
	struct cfl_pool *pool;
	struct cfl_buf cmdline, plancmd, out;
	struct sigaction old_int, old_term;
	struct show sh;
	struct cfl_study_listener ls = { on_study_event, &sh };
	const struct cfl_model_ops *ops = NULL;
	enum cfl_metric_id metric_id = 0;
	char launcher[64];
	const char *run_name = "";
	int rc = CLI_FAIL, r, loaded = 0;
	char **rv = NULL, **rv_words = NULL;
	char valid_why[256];

	memset(&pl, 0, sizeof(pl));
	memset(&sh, 0, sizeof(sh));
	cfl_space_init(&space);
	cfl_buf_init(&cmdline);
	cfl_buf_init(&plancmd);
	cfl_buf_init(&out);
	r = cli_pool_parse("tune", argc, argv, parse_args, reset_cb, &pl, &pl.pool,
			   &pl.cluster, &cmdline, &plancmd, &rv, &rv_words);
	if (r) {
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
	r = cli_cluster_start(&pl.cluster, "tune", &pl.sp.data,
			      pl.sp.tune.command ? NULL : &data, pl.remote.listen != NULL,
			      &pl.pool.num_jobs, pl.pool.num_jobs_set);
	if (r >= 0) {
		free(rv);
		free(rv_words);
		cfl_buf_release(&cmdline);
		cfl_buf_release(&plancmd);
		return r;
	}
	loaded = pl.cluster.data_loaded;	/* under mpi, while MPI started */

	/* the search space, checked against the model's schema */
	if (pl.sp.tune.model)
		ops = cfl_model_find(pl.sp.tune.model);
	if (cfl_space_load(&space, pl.params_path ? pl.params_path : default_params(&pl),
			   ops, &err)) {
		rc = cli_usage_error("tune", "%s", err.msg);
		goto done;
	}
	for (size_t i = 0; i < pl.n_sets; i++) {
		struct cfl_params one;

		cfl_params_init(&one);
		if (cfl_params_set_arg(&one, pl.sets[i], &err) ||
		    cfl_space_fix(&space, one.kv[0].key, one.kv[0].value, ops, &err)) {
			cfl_params_release(&one);
			rc = cli_usage_error("tune", "--set: %s", err.msg);
			goto done;
		}
		cfl_params_release(&one);
	}
	pl.sp.tune.space = &space;
	/* the grid fits, every {name} of --command is in the space */
	if (cfl_study_check(&pl.sp, NULL, &err)) {
		rc = cli_usage_error("tune", "%s", err.msg);
		goto done;
	}

	cli_catch_stop(on_signal, SA_RESTART, &old_int, &old_term);
	/* remote workers connect and start while the data loads */
	if (cli_remote_bind(&pl.remote, "tune"))
		goto done_sig;

	/* the data and the metric */
	if (!pl.sp.tune.command) {
		int n_classes;

		if (!loaded && cfl_data_load(&data, &pl.sp.data, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
		loaded = 1;
		cli_data_warn(&data, &pl.sp.data);
		if (!pl.pool.quiet)
			cli_data_facts("tune", &data, &pl.sp.data, valid_why);
		n_classes = data.train.n_classes;
		if (pl.metric) {
			if (cfl_metric_parse_list(pl.metric, n_classes, &metric_id, 1, &err) != 1 ||
			    strchr(pl.metric, ',')) {
				rc = cli_usage_error("tune", "--metric: %s",
						     strchr(pl.metric, ',') ? "one metric only" : err.msg);
				goto done_sig;
			}
		} else {
			metric_id = (enum cfl_metric_id)cfl_metric_lookup(n_classes ? "acc" : "mse");
		}
		pl.sp.tune.metric = metric_id;
		if (pl.metrics) {
			long n = cfl_metric_parse_list(pl.metrics, n_classes, pl.sp.metrics,
						       CFL_WIRE_MAX_METRICS, &err);

			if (n < 0) {
				rc = cli_usage_error("tune", "--metrics: %s", err.msg);
				goto done_sig;
			}
			pl.sp.n_metrics = (size_t)n;
		}
	}

	/* the store: a new run, or the one to resume */
	if (cli_pool_mkdir_db(pl.pool.db))
		goto done_sig;
	pl.sp.command_line = pl.pool.resume ? plancmd.data : cmdline.data;
	pl.sp.db = pl.pool.db;
	pl.sp.name = pl.pool.name;
	pl.sp.resume = pl.pool.resume;
	study = cfl_study_open(&pl.sp, loaded ? &data : NULL, &err);
	if (!study) {
		cli_fail(&err);
		goto done_sig;
	}
	run_name = cfl_study_name(study);
	if (cfl_study_complete(study)) {
		/* nothing to run, and the store (and the model file) untouched */
		int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

		fprintf(stderr, "cfl tune: run '%s' is complete; nothing to do (cfl report %s%s%s "
			"shows it; a larger --num-search grows it)\n", run_name, cli_sh(run_name),
			dflt ? "" : " --db ", dflt ? "" : cli_sh(pl.pool.db));
		rc = CLI_OK;
		goto done_sig;
	}
	sh.pl = &pl;
	sh.run_name = run_name;
	sh.resumed = cfl_study_resumed(study);

	/* the pool forks now: after the data load, before any BLAS call */
	cfl_pool_opts_init(&po);
	cli_pool_opts_apply(&pl.pool, &po);
	if (g_interrupted)
		goto interrupted;
	if (cfl_study_start(study, &po, &err)) {
		cli_fail(&err);
		goto done_sig;
	}
	pool = cfl_study_pool(study);
	{
		char key[256];

		snprintf(key, sizeof(key), "%.200s#%lld", pl.pool.db,
			 (long long)cfl_study_run_id(study));
		if (cli_remote_start(&pl.remote, "tune", pool, &pl.sp.data,
				     &data, cfl_pool_opts(pool), key, pl.pool.quiet) ||
		    cli_cluster_attach(&pl.cluster, pool, &pl.sp.data,
				       cfl_pool_opts(pool), key, pl.remote.heartbeat)) {
			rc = CLI_FAIL;
			goto done_sig;
		}
	}
	g_pool = pool;

	/* the search, then the refit of the best on the test part */
	r = cfl_study_tune(study, &ls, &err);
	if (r < 0) {
		cli_fail(&err);
		goto done_sig;
	}
	if (r == CFL_STUDY_INTERRUPTED)
		goto interrupted;
	{
		long best = cfl_study_tune_best(study);
		char path[1024];

		g_pool = NULL;
		r = cfl_study_close_pool(study, &err);
		cli_remote_stop(&pl.remote);
		if (r) {
			cli_fail(&err);
			goto done_sig;
		}
		if (best >= 0 && !pl.sp.tune.command) {
			cfl_study_model_path(pl.pool.db, run_name, path, sizeof(path));
			if (cfl_study_tune_save_best(study, path, &err)) {
				cli_fail(&err);
				goto done_sig;
			}
		}
		if (cfl_study_finish(study, &ls, NULL, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
		{
			struct cfl_run_info info;
			struct cfl_table_style style;

			cli_table_style(&pl.pool.table, 0, &style);
			if (cfl_store_run_get(cfl_study_store(study), cfl_study_run_id(study),
					      &info, &err) ||
			    cfl_report_run_styled(cfl_study_store(study), &info, CFL_TABLE_TEXT,
						  &style, &out, &err)) {
				cli_fail(&err);
				goto done_sig;
			}
			cfl_run_info_release(&info);
		}
		fputs(out.data ? out.data : "", stdout);
		if (best >= 0 && !pl.sp.tune.command)
			printf("\nBest model saved to %s (apply it with: cfl predict %s DATA)\n",
			       path, cli_sh(path));
		if (best >= 0 && pl.sp.tune.save) {
			if (cfl_study_save_bundle(study, pl.sp.tune.save, &err)) {
				fflush(stdout);
				rc = cli_fail(&err);
				goto done_sig;
			}
			printf("The refit saved as bundle %s (rows best, best#0, ...: cfl predict %s DATA --row best)\n",
			       pl.sp.tune.save, cli_sh(pl.sp.tune.save));
		}
		fflush(stdout);
		{
			int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

			fprintf(stderr, "run '%s' stored in '%s'; see it again with:\n  cfl report %s%s%s\n",
				run_name, pl.pool.db, cli_sh(run_name), dflt ? "" : " --db ",
				dflt ? "" : cli_sh(pl.pool.db));
		}
		if (best < 0) {
			fprintf(stderr, "cfl: every candidate failed\n");
			rc = CLI_FAIL;
		} else {
			rc = CLI_OK;
		}
	}
	goto done_sig;

interrupted:
	g_pool = NULL;
	cfl_study_stop(study, NULL);
	fprintf(stderr, "cfl tune: interrupted; run '%s' kept in '%s'; continue it with:\n"
		"  %scfl tune --resume %s%s%s\n", run_name, pl.pool.db,
		cli_cluster_resume_prefix(&pl.cluster, launcher, sizeof(launcher)), cli_sh(run_name),
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? " --db " : "",
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? cli_sh(pl.pool.db) : "");
	rc = CLI_INTERRUPTED;
done_sig:
	g_pool = NULL;
	if (study)
		cfl_study_close_pool(study, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
done:
	cfl_study_free(study);
	if (loaded)
		cfl_data_release(&data);
	cfl_space_release(&space);
	cfl_buf_release(&cmdline);
	cfl_buf_release(&plancmd);
	cfl_buf_release(&out);
	free(rv);
	free(rv_words);
	cli_cluster_stop(&pl.cluster);
	cli_remote_stop(&pl.remote);
	if (g_interrupted && rc == CLI_FAIL)
		rc = CLI_INTERRUPTED;
	return rc;
}
