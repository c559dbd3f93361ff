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
#include "cli.h"
#include "pool_opts.h"

#include <math.h>
#include <signal.h>
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
		"--metric); on larger data it is scored on the validation part, and each\n"
		"family's best is bagged afterwards.  Each family tries its defaults, a\n"
		"portfolio of diverse configurations, then Bayesian optimisation over\n"
		"params/MODEL.params, round after round until the limit.  Then greedy\n"
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
		"                           time limit then defaults to none) [0: none]\n"
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
		"  -h, --help               this help\n"
		"%s\n"
		"Exit status: 0 when the leaderboard has an entry, 1 when nothing finished\n"
		"its folds within the time limit (or the run could not start), 2 on a\n"
		"usage error, 130 when interrupted (continue with --resume NAME).\n\n"
		"Examples:\n"
		"  cfl auto datasets/breast_cancer.csv\n"
		"  cfl auto datasets/wine.csv --time-limit 30 --models linear,gbdt\n"
		"  cfl auto datasets/iris.csv --save iris-auto.cfl\n"
		"  cfl auto train.csv --test test.csv --time-limit 300 --name night\n"
		"  cfl auto --resume night --time-limit 120\n",
		cores > 0 ? cores : 1, cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_study_plan sp;
	struct cli_pool_opts pool;
	struct cli_remote remote;	/* unused: auto runs locally */
	struct cli_cluster cluster;	/* unused: auto runs locally */
	const char *metric;
	char *models_buf;
	struct cfl_space spaces[CFL_STUDY_MAX_MODELS];
	char params_buf[512];
};

static void plan_release(struct plan *pl)
{
	for (size_t i = 0; i < CFL_STUDY_MAX_MODELS; i++)
		cfl_space_release(&pl->spaces[i]);
	free(pl->models_buf);
}

static int parse_models(struct plan *pl, const char *arg, int given)
{
	struct cfl_study_auto_plan *a = &pl->sp.autop;
	char *save = NULL, *tok;

	pl->models_buf = strdup(arg);
	if (!pl->models_buf)
		return cli_failf("out of memory");
	for (tok = strtok_r(pl->models_buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!cfl_model_find(tok)) {
			if (!given)	/* a default family not built in */
				continue;
			return cli_usage_error("auto", "unknown model '%s'", tok);
		}
		if (!strcmp(tok, "baseline"))
			return cli_usage_error("auto", "model 'baseline' has nothing to tune");
		for (size_t i = 0; i < a->n_models; i++)
			if (!strcmp(a->models[i], tok))
				return cli_usage_error("auto", "model '%s' listed twice", tok);
		if (a->n_models == CFL_STUDY_MAX_MODELS)
			return cli_usage_error("auto", "at most %d models", CFL_STUDY_MAX_MODELS);
		a->models[a->n_models++] = tok;
	}
	if (!a->n_models)
		return cli_usage_error("auto", "--models is empty");
	return 0;
}

static int parse_args(void *ctx, int argc, char **argv)
{
	struct plan *pl = ctx;
	static const struct option opts[] = {
		CLI_DATA_LONGOPTS,
		{ "models", required_argument, 0, OPT_MODELS },
		{ "time-limit", required_argument, 0, OPT_TIME_LIMIT },
		{ "folds", required_argument, 0, OPT_FOLDS },
		{ "metric", required_argument, 0, OPT_METRIC },
		{ "save", required_argument, 0, OPT_SAVE },
		{ "use-all-time", no_argument, 0, OPT_USE_ALL_TIME },
		{ "refit", no_argument, 0, OPT_REFIT },
		{ "max-trials", required_argument, 0, OPT_MAX_TRIALS },
		CLI_POOL_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *models = NULL;
	long folds;
	int c, r, limit_given = 0;

	cfl_study_plan_init(&pl->sp);
	pl->sp.kind = CFL_RUN_AUTO;
	pl->sp.time_limit = 60;
	cli_pool_opts_init(&pl->pool);
	cli_remote_init(&pl->remote);
	cli_cluster_init(&pl->cluster);
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("auto", c, optarg, &pl->sp.data, &pl->pool,
					   &pl->remote, &pl->cluster);
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
		case OPT_FOLDS:
			if (cli_parse_long(optarg, 2, 100, &folds))
				return cli_usage_error("auto", "--folds must be an integer in [2, 100], got '%s'", optarg);
			pl->sp.autop.folds = (int)folds;
			break;
		case OPT_METRIC:
			pl->metric = optarg;
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
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("auto", argc, argv, "qh", opts);
		}
	}
	if (pl->sp.autop.max_trials && !limit_given)
		pl->sp.time_limit = 1e8;	/* the count, not the clock */
	if (optind >= argc && pl->pool.resume)
		return 3;	/* the rest comes from the stored command */
	if (optind >= argc)
		return cli_usage_error("auto", "missing DATA (a CSV file)");
	if (optind + 1 < argc)
		return cli_usage_error("auto", "unexpected argument '%s'", argv[optind + 1]);
	pl->sp.data.path = argv[optind];
	if (!pl->pool.num_jobs)
		return cli_usage_error("auto", "--num-jobs must be 1 or more");
	if (pl->pool.name && pl->pool.resume && strcmp(pl->pool.name, pl->pool.resume))
		return cli_usage_error("auto", "--name '%s' and --resume '%s' disagree",
				       pl->pool.name, pl->pool.resume);
	return parse_models(pl, models ? models : DEFAULT_MODELS, models != NULL);
}

static const char *default_params(struct plan *pl, const char *model)
{
	return cli_default_params(model, pl->params_buf, sizeof(pl->params_buf));
}

/* ---- progress ---- */

struct show {
	int quiet;
	const char *metric;
};

static void on_study_event(const struct cfl_study_event *ev, void *ctx)
{
	const struct show *sh = ctx;

	if (ev->kind == CFL_STUDY_NOTE) {	/* shown even with -q */
		fprintf(stderr, "cfl: %s\n", ev->text);
		return;
	}
	if (sh->quiet)
		return;
	switch (ev->kind) {
	case CFL_STUDY_START:
		if (ev->n_done)
			fprintf(stderr, "resuming: %zu trials stored\n", ev->n_done);
		break;
	case CFL_STUDY_PHASE:
		fprintf(stderr, "%s\n", ev->text);
		break;
	case CFL_STUDY_CANDIDATE:
		if (!isnan(ev->score))	/* a failure was told as a trial */
			fprintf(stderr, "  %s %s: %s %.6f on valid (best %.6f)\n", ev->what,
				ev->hex, sh->metric, ev->score, ev->best);
		break;
	case CFL_STUDY_TRIAL:
		if (ev->trial->status != CFL_TRIAL_DONE)
			fprintf(stderr, "  %s %s%s: %s: %s\n", ev->what, ev->hex,
				ev->fold >= 0 ? " (fold)" : ev->repeat ? " (refit)" : "",
				cfl_trial_status_name(ev->trial->status),
				ev->trial->reason ? ev->trial->reason : "");
		else if (ev->fold >= 0)
			fprintf(stderr, "  %s %s fold %d: done in %.3f s\n", ev->what,
				ev->hex, ev->fold, ev->trial->result->duration);
		else if (ev->repeat)
			fprintf(stderr, "  %s %s refit on every training row: done in "
				"%.3f s\n", ev->what, ev->hex, ev->trial->result->duration);
		break;
	default:
		break;
	}
}

/* ---- the leaderboard ---- */

/* Prints the leaderboard as `cfl report` renders it.  0 when it has an
 * entry, 1 when not, -1 with err. */
static int print_leaderboard(struct cfl_store *st, int64_t run_id,
			     struct cfl_err *err)
{
	struct cfl_study_auto_summary sum;
	struct cfl_run_info info;
	struct cfl_buf b;
	int rc = -1;

	memset(&info, 0, sizeof(info));
	cfl_buf_init(&b);
	if (cfl_study_auto_summary(st, run_id, &sum, err))
		return -1;
	if (cfl_store_run_get(st, run_id, &info, err) ||
	    cfl_report_run_styled(st, &info, CFL_TABLE_TEXT, NULL, &b, err))
		goto out;
	if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout)) {
		cfl_err_set(err, "cannot write the leaderboard to stdout");
		goto out;
	}
	rc = sum.n_rows > 0 ? 0 : 1;
out:
	cfl_buf_release(&b);
	cfl_run_info_release(&info);
	cfl_study_auto_summary_release(&sum);
	return rc;
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
	plan_release(pl);
	memset(pl, 0, sizeof(struct plan));
}

int cmd_auto(int argc, char **argv)
{
	struct plan pl;
	struct cfl_data data;
	struct cfl_err err;
	struct cfl_study *study = NULL;
	struct cfl_pool_opts po;
	struct cfl_buf cmdline;
	struct sigaction old_int, old_term;
	struct show sh;
	struct cfl_study_listener ls = { on_study_event, &sh };
	const char *run_name = "";
	int rc = CLI_FAIL, r, loaded = 0, dflt;
	char **rv = NULL, **rv_words = NULL;

	memset(&pl, 0, sizeof(pl));
	memset(&sh, 0, sizeof(sh));
	memset(&data, 0, sizeof(data));
	cfl_buf_init(&cmdline);
	r = cli_pool_parse("auto", argc, argv, parse_args, reset_cb, &pl, &pl.pool,
			   &pl.cluster, &cmdline, NULL, &rv, &rv_words);
	if (r) {
		plan_release(&pl);
		free(rv);
		free(rv_words);
		cfl_buf_release(&cmdline);
		return r < 0 ? CLI_OK : r;
	}
	for (size_t i = 0; i < pl.sp.autop.n_models; i++) {
		const char *m = pl.sp.autop.models[i];

		if (cfl_space_load(&pl.spaces[i], default_params(&pl, m),
				   cfl_model_find(m), &err)) {
			rc = cli_usage_error("auto", "%s", err.msg);
			goto done;
		}
		pl.sp.autop.spaces[i] = &pl.spaces[i];
	}
	if (cfl_study_check(&pl.sp, NULL, &err)) {
		rc = cli_usage_error("auto", "%s", err.msg);
		goto done;
	}
	/* a bundle that cannot be written fails now, not after the run */
	if (pl.sp.autop.save && cfl_bundle_check_path(pl.sp.autop.save, &err)) {
		rc = cli_fail(&err);
		goto done;
	}

	cli_catch_stop(on_signal, SA_RESTART, &old_int, &old_term);
	if (cfl_data_load(&data, &pl.sp.data, &err)) {
		cli_fail(&err);
		goto done_sig;
	}
	loaded = 1;
	cli_data_warn(&data, &pl.sp.data);
	if (pl.metric) {
		enum cfl_metric_id id;

		if (strchr(pl.metric, ',') ||
		    cfl_metric_parse_list(pl.metric, data.train.n_classes, &id, 1, &err) != 1) {
			rc = cli_usage_error("auto", "--metric: %s",
					     strchr(pl.metric, ',') ? "one metric only" : err.msg);
			goto done_sig;
		}
		pl.sp.autop.metric = id;
	} else {
		pl.sp.autop.metric = (enum cfl_metric_id)cfl_metric_lookup(
			data.train.n_classes ? "acc" : "mse");
	}
	sh.metric = cfl_metric_info(pl.sp.autop.metric)->name;
	sh.quiet = pl.pool.quiet;
	if (cfl_study_check(&pl.sp, &data, &err)) {
		rc = cli_usage_error("auto", "%s", err.msg);
		goto done_sig;
	}

	if (cli_pool_mkdir_db(pl.pool.db))
		goto done_sig;
	pl.sp.command_line = cmdline.data;
	pl.sp.db = pl.pool.db;
	pl.sp.name = pl.pool.name;
	pl.sp.resume = pl.pool.resume;
	study = cfl_study_open(&pl.sp, &data, &err);
	if (!study) {
		cli_fail(&err);
		goto done_sig;
	}
	run_name = cfl_study_name(study);
	cfl_pool_opts_init(&po);
	cli_pool_opts_apply(&pl.pool, &po);
	if (g_interrupted)
		goto interrupted;
	if (cfl_study_start(study, &po, &err)) {
		cli_fail(&err);
		goto done_sig;
	}
	g_pool = cfl_study_pool(study);
	if (g_interrupted)
		cfl_pool_interrupt(g_pool);

	r = cfl_study_auto(study, &ls, &err);
	if (r < 0) {
		cli_fail(&err);
		goto done_sig;
	}
	if (r == CFL_STUDY_INTERRUPTED)
		goto interrupted;
	g_pool = NULL;
	if (cfl_study_finish(study, &ls, NULL, &err)) {
		cli_fail(&err);
		goto done_sig;
	}
	r = print_leaderboard(cfl_study_store(study), cfl_study_run_id(study), &err);
	if (r < 0) {
		cli_fail(&err);
		goto done_sig;
	}
	if (!r && pl.sp.autop.save) {
		if (cfl_study_save_bundle(study, pl.sp.autop.save, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
		fprintf(stderr, "bundle written to '%s'; apply it with:\n"
			"  cfl predict %s DATA [--row ROW]\n", pl.sp.autop.save,
			pl.sp.autop.save);
	}
	dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);
	fprintf(stderr, "run '%s' stored in '%s'; give it more time with:\n"
		"  cfl auto --resume %s%s%s --time-limit SEC\n", run_name, pl.pool.db,
		run_name, dflt ? "" : " --db ", dflt ? "" : pl.pool.db);
	if (r) {
		fprintf(stderr, "cfl: no model finished its folds within the time "
			"limit; give it a longer --time-limit\n");
		if (pl.sp.autop.save)
			fprintf(stderr, "cfl: no bundle written to '%s': it would "
				"have no row\n", pl.sp.autop.save);
		rc = CLI_FAIL;
	} else {
		rc = CLI_OK;
	}
	goto done_sig;

interrupted:
	g_pool = NULL;
	cfl_study_stop(study, NULL);
	dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);
	fprintf(stderr, "cfl auto: interrupted; run '%s' kept in '%s'; continue it with:\n"
		"  cfl auto --resume %s%s%s\n", run_name, pl.pool.db, run_name,
		dflt ? "" : " --db ", dflt ? "" : pl.pool.db);
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
	cfl_buf_release(&cmdline);
	plan_release(&pl);
	free(rv);
	free(rv_words);
	if (g_interrupted && rc == CLI_FAIL)
		rc = CLI_INTERRUPTED;
	return rc;
}
