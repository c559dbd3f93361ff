/*
 * `cfl tune`: searches a model's hyper-parameters (or any command's) with
 * src/hpo's search methods, running each candidate's --num-repeat seeds in
 * the pool and scoring it on the VALIDATION part by sign*mean - std of
 * --metric; then refits the best candidate with fresh seeds, reports it on
 * the test part and saves its model.
 *
 * Determinism: results are told to the search in candidate order, and a
 * new candidate is asked only after the oldest one in flight is told, so
 * the history depends on (--seed, --num-parallel) only, never on which
 * trial finishes first; --resume replays that history from the store.
 * Everything printed comes from the store (cfl_report_run), so `cfl
 * report` prints it again.
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
		"  --method bo|random|grid  the search method [bo]\n"
		"  --grid-points N          grid: values per continuous range [0: none]\n"
		"  --liar kriging|constant  bo: values of candidates in flight [kriging]\n"
		"  --command CMD            tune a program instead of a model\n"
		"  --direction min|max      --command: which values are better [min]\n"
		CLI_POOL_HELP_DB_NAME("tune")
		"  --resume NAME            continue the run NAME after a crash: the next\n"
		"                           proposal is the one the run would have made\n"
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
		"  cfl tune --command 'python3 train.py --lr {lr}' --params lr.params --direction max\n"
		"  cfl tune data.csv --model linear --num-jobs 0 --listen 127.0.0.1:7070\n"
		"  mpirun -n 5 cfl tune data.csv --model linear --num-search 40 --num-parallel 8\n",
		cfl_model_find("fcnn") ? "fcnn" : "linear", cores > 0 ? cores : 1,
		cli_remote_help, cli_cluster_help, cli_data_help);
}

/* ---- options ---- */

struct plan {
	struct cfl_data_opts data;
	const char *model;
	const char *params_path;
	const char *sets[256];
	size_t n_sets;
	long num_search, num_repeat, num_parallel;
	int num_parallel_set;	/* given, not derived from --num-jobs */
	const char *metric;
	enum cfl_search_method method;
	long grid_points;
	enum cfl_liar liar;
	const char *command;
	int maximize;		/* --direction max */
	int direction_set;
	double timeout;
	struct cli_pool_opts pool;	/* --num-jobs, --db, --resume, -q, ... */
	char params_buf[512];
	struct cli_cluster cluster;	/* --backend; the mpi backend */
	struct cli_remote remote;	/* --listen: remote workers */
};

static int parse_args(struct plan *pl, int argc, char **argv)
{
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
		{ "method", required_argument, 0, OPT_METHOD },
		{ "grid-points", required_argument, 0, OPT_GRID_POINTS },
		{ "liar", required_argument, 0, OPT_LIAR },
		{ "timeout", required_argument, 0, OPT_TIMEOUT },
		{ "command", required_argument, 0, OPT_COMMAND },
		{ "direction", required_argument, 0, OPT_DIRECTION },
		/* last, as repeat's: getopt lists the matches of an ambiguous
		 * abbreviation in this order */
		CLI_POOL_LONGOPTS,
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int c, r;

	cfl_data_opts_init(&pl->data);
	cli_pool_opts_init(&pl->pool);
	cli_cluster_init(&pl->cluster);
	cli_remote_init(&pl->remote);
	pl->num_search = 10;
	pl->num_repeat = 2;
	pl->method = CFL_SEARCH_BO;
	pl->liar = CFL_LIAR_KRIGING;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		r = cli_pool_shared_option("tune", c, optarg, &pl->data, &pl->pool,
					   &pl->remote, &pl->cluster);
		if (r < 0)
			return CLI_USAGE;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_MODEL:
			pl->model = optarg;
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
			if (cli_parse_long(optarg, 1, 100000, &pl->num_search))
				return cli_usage_error("tune", "--num-search must be an integer in [1, 100000], got '%s'", optarg);
			break;
		case OPT_NUM_REPEAT:
			if (cli_parse_long(optarg, 1, 1000, &pl->num_repeat))
				return cli_usage_error("tune", "--num-repeat must be an integer in [1, 1000], got '%s'", optarg);
			break;
		case OPT_NUM_PARALLEL:
			if (cli_parse_long(optarg, 1, 1024, &pl->num_parallel))
				return cli_usage_error("tune", "--num-parallel must be an integer in [1, 1024], got '%s'", optarg);
			pl->num_parallel_set = 1;
			break;
		case OPT_METRIC:
			pl->metric = optarg;
			break;
		case OPT_METHOD:
			r = cfl_search_method_lookup(optarg);
			if (r < 0)
				return cli_usage_error("tune", "--method must be bo, random or grid, got '%s'", optarg);
			pl->method = (enum cfl_search_method)r;
			break;
		case OPT_GRID_POINTS:
			if (cli_parse_long(optarg, 1, 100000, &pl->grid_points))
				return cli_usage_error("tune", "--grid-points must be an integer in [1, 100000], got '%s'", optarg);
			break;
		case OPT_LIAR:
			if (!strcmp(optarg, "kriging"))
				pl->liar = CFL_LIAR_KRIGING;
			else if (!strcmp(optarg, "constant"))
				pl->liar = CFL_LIAR_CONSTANT;
			else
				return cli_usage_error("tune", "--liar must be kriging or constant, got '%s'", optarg);
			break;
		case OPT_TIMEOUT:
			if (cli_parse_double(optarg, 0, 1e9, &pl->timeout))
				return cli_usage_error("tune", "--timeout must be a number of seconds >= 0, got '%s'", optarg);
			break;
		case OPT_COMMAND:
			pl->command = optarg;
			break;
		case OPT_DIRECTION:
			if (!strcmp(optarg, "min"))
				pl->maximize = 0;
			else if (!strcmp(optarg, "max"))
				pl->maximize = 1;
			else
				return cli_usage_error("tune", "--direction must be min or max, got '%s'", optarg);
			pl->direction_set = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_usage_error("tune", "unknown option");
		}
	}
	if (optind < argc)
		pl->data.path = argv[optind];
	if (optind + 1 < argc)
		return cli_usage_error("tune", "unexpected argument '%s'", argv[optind + 1]);
	if (!pl->data.path && !pl->command)
		return pl->pool.resume ? 3 : cli_usage_error("tune", "missing DATA (a CSV file)");
	if (pl->command) {
		if (pl->model)
			return cli_usage_error("tune", "--model and --command exclude each other");
		if (!pl->params_path)
			return cli_usage_error("tune", "--command needs --params FILE");
		if (pl->metric && strcmp(pl->metric, "value"))
			return cli_usage_error("tune", "--command gives one metric, 'value'");
	} else if (pl->direction_set) {
		return cli_usage_error("tune", "--direction applies to --command only (metrics know their direction)");
	}
	if (pl->pool.name && pl->pool.resume && strcmp(pl->pool.name, pl->pool.resume))
		return cli_usage_error("tune", "--name '%s' and --resume '%s' disagree",
				       pl->pool.name, pl->pool.resume);
	if (!pl->command && !pl->model)
		pl->model = cfl_model_find("fcnn") ? "fcnn" : "linear";
	if (pl->model && !cfl_model_find(pl->model)) {
		struct cfl_buf known;

		cfl_buf_init(&known);
		for (size_t i = 0; cfl_model_at(i); i++)
			cfl_buf_printf(&known, "%s%s", i ? ", " : "", cfl_model_at(i)->name);
		cli_usage_error("tune", "unknown model '%s' (known: %s)", pl->model,
				known.data ? known.data : "");
		cfl_buf_release(&known);
		return CLI_USAGE;
	}
	if (!pl->pool.num_jobs && !pl->remote.listen)
		return cli_usage_error("tune", "--num-jobs 0 needs --listen (remote workers)");
	if (pl->command && pl->remote.listen)
		return cli_usage_error("tune", "--listen does not run --command trials "
				       "(a worker never receives a command)");
	if ((r = cli_remote_check(&pl->remote, "tune")))
		return r;
	if (!pl->num_parallel)
		pl->num_parallel = pl->pool.num_jobs ? pl->pool.num_jobs : (cores > 0 ? cores : 1);
	return 0;
}

/* The num_parallel line of a stored config: 1 with *out set, or 0. */
static int stored_num_parallel(const char *config, long *out)
{
	const char *p = config;

	while (p && *p) {
		if (!strncmp(p, "num_parallel=", 13)) {
			char *end;
			long v = strtol(p + 13, &end, 10);

			if (v < 1 || v > 1024 || (*end && *end != '\n'))
				return 0;
			*out = v;
			return 1;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

/* The default space of a model: params/MODEL.params here, next to the
 * binary (a build tree), or where `make install` puts it. */
static const char *default_params(struct plan *pl)
{
	/* "@" is the folder of the cfl binary: a checkout (./params beside
	 * ./cfl) or an install under any PREFIX (PREFIX/bin/cfl finds
	 * PREFIX/share/cfl/params), then the usual prefixes. */
	static const char *const dirs[] = { "params", "@/params", "@/../share/cfl/params",
					    "/usr/local/share/cfl/params",
					    "/usr/share/cfl/params" };
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	if (strrchr(exe, '/'))
		*strrchr(exe, '/') = '\0';
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (dirs[i][0] != '@')
			snprintf(pl->params_buf, sizeof(pl->params_buf), "%s/%.64s.params",
				 dirs[i], pl->model);
		else if (exe[0])
			snprintf(pl->params_buf, sizeof(pl->params_buf), "%.400s%s/%.64s.params",
				 exe, dirs[i] + 1, pl->model);
		else
			continue;
		if (access(pl->params_buf, R_OK) == 0)
			return pl->params_buf;
	}
	snprintf(pl->params_buf, sizeof(pl->params_buf), "params/%s.params", pl->model);
	return pl->params_buf;
}

/* ---- the plan, stored with the run and compared by --resume ---- */

/* The plan as "key=value" lines: stored with the run, compared on
 * --resume, read back by tune_render.  Execution options (jobs, timeouts)
 * are left out; --num-parallel is in, since it shapes the history. */
static void plan_config(const struct plan *pl, const struct cfl_space *sp,
			const char *metric, int sign, struct cfl_buf *b)
{
	const struct cfl_data_opts *d = &pl->data;
	struct cfl_buf space;

	cfl_buf_init(&space);
	cfl_space_format(sp, &space);
	for (char *p = space.data; p && *p; p++)
		if (*p == '\n')
			*p = ';';
	cfl_buf_printf(b, "model=%s\ncommand=%s\nspace=%s\nnum_search=%ld\n"
		       "num_repeat=%ld\nnum_parallel=%ld\nmetric=%s\nsign=%d\n"
		       "method=%s\ngrid_points=%ld\nliar=%d\n",
		       pl->model ? pl->model : "", pl->command ? pl->command : "",
		       space.data ? space.data : "", pl->num_search, pl->num_repeat,
		       pl->num_parallel, metric, sign,
		       cfl_search_method_name(pl->method), pl->grid_points,
		       (int)pl->liar);
	cfl_buf_printf(b, "seed=%llu\ntarget=%s\ntask=%d\ndrop=%s\nonly=%s\n"
		       "test=%s\nvalid=%s\ntest_frac=%.17g\nvalid_frac=%.17g\n",
		       (unsigned long long)d->seed,
		       d->schema.target ? d->schema.target : "", (int)d->schema.task,
		       d->schema.drop_re ? d->schema.drop_re : "",
		       d->schema.only_re ? d->schema.only_re : "",
		       d->test_path ? d->test_path : "",
		       d->valid_path ? d->valid_path : "", d->test_frac, d->valid_frac);
	if (d->schema.categorical_re)
		cfl_buf_printf(b, "categorical=%s\n", d->schema.categorical_re);
	cfl_buf_release(&space);
}

/* ---- the search loop ---- */

struct cand {
	int64_t id;
	char hex[9];
	struct cfl_params params;
	size_t n_pending;	/* trials not final yet */
	double *vals;		/* (R) --metric on valid; NaN: failed or not done */
	double score;		/* once told: cfl_metric_candidate_score */
	int told;
};

struct tref {
	size_t cand;
	int repeat;
};

struct tune {
	struct plan *pl;
	struct cfl_store *st;
	struct cfl_pool *pool;
	struct cfl_search *search;
	const struct cfl_data *data;
	int64_t run_id;
	uint64_t seed;
	const char *metric;
	int sign;
	struct cand *cands;
	size_t n_cands;
	struct tref *trefs;	/* (num_search * R + R) */
	size_t n_trefs;
	struct cfl_metric_row *stored;	/* valid metrics stored (resume) */
	size_t n_stored;
	double t0;
	size_t n_failed_cands;
	double best_score;
	int has_best;
};

/* The shell-quoted command of a candidate: {name} -> 'value'; {{ -> {. */
static int substitute(const char *tmpl, const struct cfl_params *p,
		      struct cfl_buf *out, struct cfl_err *err)
{
	for (const char *s = tmpl; *s; s++) {
		if (s[0] == '{' && s[1] == '{') {
			cfl_buf_puts(out, "{");
			s++;
			continue;
		}
		if (s[0] == '}' && s[1] == '}') {
			cfl_buf_puts(out, "}");
			s++;
			continue;
		}
		if (*s != '{') {
			cfl_buf_append(out, s, 1);
			continue;
		}
		const char *e = strchr(s, '}');
		char name[128];
		const char *v;

		if (!e || (size_t)(e - s - 1) >= sizeof(name))
			return cfl_err_set(err, "--command: unclosed '{' in '%s'", tmpl);
		memcpy(name, s + 1, (size_t)(e - s - 1));
		name[e - s - 1] = '\0';
		v = cfl_params_get(p, name);
		if (!v)
			return cfl_err_set(err, "--command: '{%s}' is not a parameter of the search space", name);
		cfl_buf_puts(out, "'");
		for (; *v; v++)
			cfl_buf_puts(out, *v == '\'' ? "'\\''" : (char[]){ *v, 0 });
		cfl_buf_puts(out, "'");
		s = e;
	}
	if (!out->data)
		cfl_buf_puts(out, "");
	return 0;
}

static double stored_value(const struct tune *tu, int64_t cand_id, int repeat)
{
	for (size_t i = 0; i < tu->n_stored; i++)
		if (tu->stored[i].cand_id == cand_id && tu->stored[i].repeat == repeat &&
		    !strcmp(tu->stored[i].metric, tu->metric))
			return tu->stored[i].value;
	return NAN;
}

/* Submits the trials (repeats [r0, r1)) of candidate k; done ones (on
 * --resume) take their stored values. */
static int submit_trials(struct tune *tu, size_t k, int r0, int r1,
			 struct cfl_err *err)
{
	struct cand *c = &tu->cands[k];
	struct cfl_buf cmd;
	int rc = -1;

	cfl_buf_init(&cmd);
	if (tu->pl->command && substitute(tu->pl->command, &c->params, &cmd, err))
		return -1;
	if (cfl_store_begin(tu->st, err))
		goto out;
	for (int rep = r0; rep < r1; rep++) {
		struct cfl_trial_state ts;
		struct cfl_trial_spec spec;
		uint64_t seed = cfl_trial_seed(tu->seed, c->hex, rep);
		struct tref *tr = &tu->trefs[tu->n_trefs];

		if (cfl_store_trial_ensure(tu->st, tu->run_id, c->id, rep, -1, seed,
					   &ts, err))
			goto fail;
		if (ts.status == CFL_TRIAL_DONE) {
			if (rep < tu->pl->num_repeat)
				c->vals[rep] = stored_value(tu, c->id, rep);
			continue;
		}
		if (ts.status == CFL_TRIAL_FAILED || ts.status == CFL_TRIAL_POISON) {
			/* a failed trial stays failed: the history is replayed */
			continue;
		}
		tr->cand = k;
		tr->repeat = rep;
		tu->n_trefs++;
		memset(&spec, 0, sizeof(spec));
		spec.trial_id = ts.id;
		spec.model = tu->pl->command ? cmd.data : tu->pl->model;
		spec.params = tu->pl->command ? NULL : &c->params;
		spec.seed = seed;
		spec.fold_seed = cfl_fold_seed(tu->seed, rep);
		spec.repeat = rep;
		spec.fold = -1;
		spec.flags = tu->pl->command ? CFL_LEASE_COMMAND : 0;
		spec.prev_attempts = ts.attempt;
		spec.user = tr;
		if (cfl_pool_submit(tu->pool, &spec, err))
			goto fail;
		c->n_pending++;
	}
	if (cfl_store_commit(tu->st, err))
		goto out;
	rc = 0;
	goto out;
fail:
	cfl_store_rollback(tu->st);
out:
	cfl_buf_release(&cmd);
	return rc;
}

/* Asks the next candidate and submits its trials.  1: the space is
 * exhausted. */
static int ask_one(struct tune *tu, struct cfl_err *err)
{
	struct cand *c = &tu->cands[tu->n_cands];
	size_t idx;
	int r;

	cfl_params_init(&c->params);
	r = cfl_search_ask(tu->search, &c->params, &idx, err);
	if (r)
		return r;
	c->vals = malloc((size_t)tu->pl->num_repeat * sizeof(double));
	if (!c->vals)
		return cfl_err_set(err, "out of memory");
	for (long i = 0; i < tu->pl->num_repeat; i++)
		c->vals[i] = NAN;
	if (cfl_store_candidate_get_or_add(tu->st, tu->run_id,
					   tu->pl->command ? "command" : tu->pl->model,
					   &c->params, &c->id, c->hex, err))
		return -1;
	tu->n_cands++;
	return submit_trials(tu, tu->n_cands - 1, 0, (int)tu->pl->num_repeat, err);
}

/* Candidate k is complete: its score goes to the store and the search. */
static int tell_one(struct tune *tu, size_t k, struct cfl_err *err)
{
	struct cand *c = &tu->cands[k];
	double score = cfl_metric_candidate_score(c->vals,
						  (size_t)tu->pl->num_repeat,
						  tu->sign);

	c->score = score;
	if (cfl_store_candidate_set_score(tu->st, c->id, score, err) ||
	    cfl_search_tell(tu->search, k, score, err))
		return -1;
	c->told = 1;
	if (isnan(score))
		tu->n_failed_cands++;
	else if (!tu->has_best || score > tu->best_score) {
		tu->has_best = 1;
		tu->best_score = score;
	}
	if (!tu->pl->pool.quiet) {
		char p[200];
		struct cfl_buf b;

		cfl_buf_init(&b);
		cfl_params_format(&c->params, &b);
		snprintf(p, sizeof(p), "%s", b.data ? b.data : "");
		cfl_buf_release(&b);
		if (isnan(score))
			fprintf(stderr, "[%zu/%ld] %s failed: %s\n", k + 1,
				tu->pl->num_search, c->hex, p);
		else
			fprintf(stderr, "[%zu/%ld] %s score %.6f (best %.6f): %s\n",
				k + 1, tu->pl->num_search, c->hex, score,
				tu->best_score, p);
	}
	return 0;
}

/* Records a finished trial. */
static void on_event(struct tune *tu, const struct cfl_pool_event *ev)
{
	const struct tref *tr = ev->user;
	struct cand *c = &tu->cands[tr->cand];

	if (c->n_pending)
		c->n_pending--;
	if (ev->status != CFL_TRIAL_DONE) {
		if (!tu->pl->pool.quiet)
			fprintf(stderr, "%s repeat %d: %s: %s\n", c->hex, tr->repeat,
				cfl_trial_status_name(ev->status),
				ev->reason ? ev->reason : "");
		return;
	}
	if (tr->repeat >= tu->pl->num_repeat)
		return;
	{
		const struct cfl_wire_split *v = &ev->result->split[CFL_SPLIT_VALID];

		for (uint32_t i = 0; i < v->n_metrics; i++)
			if (!strcmp(v->metrics[i].name, tu->metric))
				c->vals[tr->repeat] = v->metrics[i].value;
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

/* Waits for one event; 0 event handled, 1 idle, 2 interrupted, -1 error. */
static int wait_one(struct tune *tu, struct cfl_err *err)
{
	for (;;) {
		struct cfl_pool_event ev;
		int r = cfl_pool_wait(tu->pool, &ev, err);

		if (r < 0)
			return -1;
		if (r == CFL_POOL_IDLE)
			return 1;
		if (r == CFL_POOL_INTERRUPTED)
			return 2;
		if (r == CFL_POOL_TICK)
			continue;
		on_event(tu, &ev);
		return 0;
	}
}

/* The model file of a run: next to the database, NAME.cfl. */
static void model_path(const char *db, const char *name, char *out, size_t cap)
{
	const char *slash = strrchr(db, '/');

	if (slash)
		snprintf(out, cap, "%.*s/%s.cfl", (int)(slash - db), db, name);
	else
		snprintf(out, cap, "%s.cfl", name);
}

/* Fits the best candidate in this process with the seed of its first
 * refit repeat and saves it. */
static int save_best(struct tune *tu, size_t k, const char *path,
		     struct cfl_err *err)
{
	const struct cfl_model_ops *ops = cfl_model_find(tu->pl->model);
	struct cand *c = &tu->cands[k];
	struct cfl_model *m;
	int rc;

	m = cfl_model_new(ops, &c->params,
			  cfl_trial_seed(tu->seed, c->hex, (int)tu->pl->num_repeat), err);
	if (!m)
		return -1;
	rc = cfl_model_fit(m, &tu->data->train, &tu->data->valid, err);
	if (!rc)
		rc = cfl_model_save_file(m, &tu->data->enc, path, err);
	cfl_model_free(m);
	return rc;
}

int cmd_tune(int argc, char **argv)
{
	struct plan pl;
	struct tune tu;
	struct cfl_data data;
	struct cfl_space space;
	struct cfl_err err;
	struct cfl_pool_opts po;
	struct cfl_search_opts so;
	struct cfl_buf config, cmdline, out;
	struct sigaction old_int, old_term;
	const struct cfl_model_ops *ops = NULL;
	enum cfl_metric_id metric_id = 0;
	char run_name[128], metric_name[32], launcher[64];
	int rc = CLI_FAIL, r, loaded = 0, resumed = 0;
	char **rv = NULL, **rv_words = NULL;
	size_t n_stored_cands = 0;

	memset(&pl, 0, sizeof(pl));
	memset(&tu, 0, sizeof(tu));
	cfl_space_init(&space);
	cfl_buf_init(&config);
	cfl_buf_init(&cmdline);
	cfl_buf_init(&out);
	r = parse_args(&pl, argc, argv);
	/* --resume NAME alone: the run's stored command fills in the rest */
	if (r == 3)
		r = cli_pool_resume_alone("tune", &pl.pool, &pl.cluster, argc, argv,
					  &argc, &rv, &rv_words);
	if (r == 3) {
		memset(&pl, 0, sizeof(pl));
		argv = rv;
		r = parse_args(&pl, argc, argv);
		if (r == 3)
			r = cli_usage_error("tune", "missing DATA (a CSV file)");
	}
	if (r) {
		free(rv);
		free(rv_words);
		return r < 0 ? CLI_OK : r;
	}
	/* under mpi, only rank 0's coordinator goes on from here */
	memset(&data, 0, sizeof(data));
	r = cli_cluster_start(&pl.cluster, "tune", &pl.data,
			      pl.command ? NULL : &data, pl.remote.listen != NULL,
			      &pl.pool.num_jobs, pl.pool.num_jobs_set);
	if (r >= 0) {
		free(rv);
		free(rv_words);
		return r;
	}
	loaded = pl.cluster.data_loaded;	/* under mpi, while MPI started */

	/* the search space, checked against the model's schema */
	if (pl.model)
		ops = cfl_model_find(pl.model);
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
	if (pl.method == CFL_SEARCH_GRID) {
		struct cfl_search_opts o;
		struct cfl_search *s;

		cfl_search_opts_init(&o);
		o.method = CFL_SEARCH_GRID;
		o.grid_points = (size_t)pl.grid_points;
		s = cfl_search_new(&space, &o, &err);
		if (!s) {
			rc = cli_usage_error("tune", "%s", err.msg);
			goto done;
		}
		cfl_search_free(s);
	}
	if (pl.command) {
		struct cfl_params probe;
		struct cfl_buf b;

		/* every {name} must be a parameter of the space */
		cfl_params_init(&probe);
		cfl_buf_init(&b);
		for (size_t i = 0; i < space.n_params; i++)
			cfl_params_set(&probe, space.params[i].name, "x", NULL);
		r = substitute(pl.command, &probe, &b, &err);
		cfl_params_release(&probe);
		cfl_buf_release(&b);
		if (r) {
			rc = cli_usage_error("tune", "%s", err.msg);
			goto done;
		}
	}

	cli_catch_stop(on_signal, SA_RESTART, &old_int, &old_term);

	/* the data and the metric */
	if (!pl.command) {
		int n_classes;

		if (!loaded && cfl_data_load(&data, &pl.data, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
		loaded = 1;
		cli_data_warn(&data, &pl.data);
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
		snprintf(metric_name, sizeof(metric_name), "%s", cfl_metric_info(metric_id)->name);
		tu.sign = cfl_metric_info(metric_id)->sign;
	} else {
		snprintf(metric_name, sizeof(metric_name), "value");
		tu.sign = pl.maximize ? 1 : -1;
	}
	tu.metric = metric_name;
	tu.pl = &pl;
	tu.data = &data;
	tu.seed = pl.data.seed;

	/* the store: a new run, or the one to resume */
	if (cli_pool_mkdir_db(pl.pool.db))
		goto done_sig;
	tu.st = cfl_store_open(pl.pool.db, CFL_STORE_CREATE, &err);
	if (!tu.st) {
		cli_fail(&err);
		goto done_sig;
	}
	plan_config(&pl, &space, metric_name, tu.sign, &config);
	cli_command_line(argc, argv, &cmdline);
	if (pl.pool.resume) {
		struct cfl_run_info info;
		struct cfl_candidate_info *sc = NULL;

		if (cfl_store_run_find(tu.st, pl.pool.resume, &info, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
		tu.run_id = info.id;
		resumed = 1;
		/* --num-parallel not given: the run's own, not one derived from
		 * this command's --num-jobs (resuming with more jobs is fine) */
		if (!pl.num_parallel_set && stored_num_parallel(info.config, &pl.num_parallel)) {
			config.len = 0;
			plan_config(&pl, &space, metric_name, tu.sign, &config);
		}
		if (info.kind != CFL_RUN_TUNE ||
		    strcmp(info.config ? info.config : "", config.data) ||
		    (!pl.command && strcmp(info.dataset_sha256, data.sha256_hex))) {
			fprintf(stderr, "cfl: cannot resume run '%s': it was started with %s;"
				" use the options it was started with:\n  %s\n", pl.pool.resume,
				info.kind != CFL_RUN_TUNE ? "another command" :
				strcmp(info.config ? info.config : "", config.data) ?
				"another plan" : "another dataset (SHA-256 differs)",
				info.command ? info.command : "");
			cfl_run_info_release(&info);
			goto done_sig;
		}
		snprintf(run_name, sizeof(run_name), "%s", info.name);
		cfl_run_info_release(&info);
		if (cfl_store_candidates(tu.st, tu.run_id, &sc, &n_stored_cands, &err) ||
		    cfl_store_run_metrics(tu.st, tu.run_id, CFL_SPLIT_VALID, &tu.stored,
					  &tu.n_stored, &err) ||
		    cfl_store_run_set_status(tu.st, tu.run_id, CFL_RUN_RUNNING, &err)) {
			cfl_candidates_free(sc, n_stored_cands);
			cli_fail(&err);
			goto done_sig;
		}
		cfl_candidates_free(sc, n_stored_cands);
	} else {
		struct cfl_run_info ri;

		if (pl.pool.name)
			snprintf(run_name, sizeof(run_name), "%s", pl.pool.name);
		memset(&ri, 0, sizeof(ri));
		ri.name = run_name;
		ri.kind = CFL_RUN_TUNE;
		ri.command = cmdline.data;
		ri.config = config.data;
		ri.dataset = (char *)(pl.data.path ? pl.data.path : "");
		if (loaded)
			snprintf(ri.dataset_sha256, sizeof(ri.dataset_sha256), "%s",
				 data.sha256_hex);
		ri.seed = pl.data.seed;
		/* no --name: the store picks the default name as it inserts
		 * the run, so two runs started at once get two names */
		if (pl.pool.name ? cfl_store_run_create(tu.st, &ri, &tu.run_id, &err)
		    : cfl_store_run_create_default(tu.st, &ri, run_name,
						   sizeof(run_name), &tu.run_id, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
	}

	/* the pool forks now: after the data load, before any BLAS call */
	cfl_pool_opts_init(&po);
	po.data = loaded ? &data : NULL;
	po.store = tu.st;
	po.run_id = tu.run_id;
	cli_pool_opts_apply(&pl.pool, &po);
	/* the user's own --command, run by this user's processes (and under
	 * mpi by the ranks of this user's launcher), never by TCP workers */
	po.allow_commands = pl.command != NULL;
	if (!pl.command) {
		po.n_metrics = cfl_metric_defaults(data.train.n_classes, po.metrics,
						   CFL_WIRE_MAX_METRICS);
		{
			int have = 0;

			for (size_t i = 0; i < po.n_metrics; i++)
				have |= po.metrics[i] == metric_id;
			if (!have) {
				memmove(po.metrics + 1, po.metrics,
					(CFL_WIRE_MAX_METRICS - 1) * sizeof(po.metrics[0]));
				po.metrics[0] = metric_id;
				if (po.n_metrics < CFL_WIRE_MAX_METRICS)
					po.n_metrics++;
			}
		}
	}
	if (g_interrupted)
		goto interrupted;
	tu.pool = cfl_pool_new(&po, &err);
	if (!tu.pool) {
		cli_fail(&err);
		goto done_sig;
	}
	{
		char key[256];

		snprintf(key, sizeof(key), "%.200s#%lld", pl.pool.db, (long long)tu.run_id);
		if (cli_remote_start(&pl.remote, "tune", tu.pool, &pl.data,
				     &data, &po, key, pl.pool.quiet) ||
		    cli_cluster_attach(&pl.cluster, tu.pool, &pl.data,
				       &po, key, pl.remote.heartbeat)) {
			rc = CLI_FAIL;
			goto done_sig;
		}
	}
	g_pool = tu.pool;
	/* the GP's small matrices are faster on one BLAS thread */
	cfl_worker_set_threads(1);

	cfl_search_opts_init(&so);
	so.method = pl.method;
	so.seed = cfl_seed_derive(pl.data.seed, "tune", 0);
	so.maximize = 1;	/* scores: higher is better */
	so.grid_points = (size_t)pl.grid_points;
	so.budget = (size_t)pl.num_search;
	so.liar = pl.liar;
	tu.search = cfl_search_new(&space, &so, &err);
	tu.cands = calloc((size_t)pl.num_search, sizeof(*tu.cands));
	tu.trefs = calloc((size_t)(pl.num_search + 1) * (size_t)pl.num_repeat,
			  sizeof(*tu.trefs));
	if (!tu.search || !tu.cands || !tu.trefs) {
		if (tu.search)
			cfl_err_set(&err, "out of memory");
		cli_fail(&err);
		goto done_sig;
	}
	if (resumed && !pl.pool.quiet)
		fprintf(stderr, "resuming run '%s': %zu candidates stored\n", run_name,
			n_stored_cands);

	/* ask P, then one more each time the oldest in flight is told */
	tu.t0 = cfl_now();
	{
		size_t told = 0;
		int exhausted = 0;

		for (;;) {
			while (!exhausted && tu.n_cands < (size_t)pl.num_search &&
			       tu.n_cands - told < (size_t)pl.num_parallel &&
			       !(pl.timeout > 0 && tu.n_cands >= n_stored_cands &&
				 cfl_now() - tu.t0 > pl.timeout)) {
				r = ask_one(&tu, &err);
				if (r < 0) {
					cli_fail(&err);
					goto done_sig;
				}
				if (r == 1)
					exhausted = 1;
			}
			if (told == tu.n_cands)
				break;
			if (tu.cands[told].n_pending == 0) {
				if (tell_one(&tu, told, &err)) {
					cli_fail(&err);
					goto done_sig;
				}
				told++;
				continue;
			}
			r = wait_one(&tu, &err);
			if (r < 0) {
				cli_fail(&err);
				goto done_sig;
			}
			if (r == 2)
				goto interrupted;
			if (r == 1) {
				/* idle with trials pending cannot happen; do not spin */
				cli_failf("the pool went idle with trials pending");
				goto done_sig;
			}
		}
		if (pl.timeout > 0 && tu.n_cands < (size_t)pl.num_search && !exhausted &&
		    !pl.pool.quiet)
			fprintf(stderr, "--timeout %.0f s reached after %zu candidates\n",
				pl.timeout, tu.n_cands);
	}

	/* the refit of the best: num_repeat fresh seeds, on the test part */
	{
		int best = -1;
		char path[1024];

		/* the first candidate reaching the best score */
		{
			double *scores = calloc(tu.n_cands + 1, sizeof(double));

			if (!scores) {
				cli_failf("out of memory");
				goto done_sig;
			}
			for (size_t i = 0; i < tu.n_cands; i++)
				scores[i] = tu.cands[i].score;
			best = (int)cfl_metric_best_score(scores, tu.n_cands);
			free(scores);
		}
		if (best >= 0 && !pl.command) {
			if (submit_trials(&tu, (size_t)best, (int)pl.num_repeat,
					  2 * (int)pl.num_repeat, &err)) {
				cli_fail(&err);
				goto done_sig;
			}
			while (tu.cands[best].n_pending) {
				r = wait_one(&tu, &err);
				if (r < 0) {
					cli_fail(&err);
					goto done_sig;
				}
				if (r == 2)
					goto interrupted;
				if (r == 1)
					break;
			}
		}
		g_pool = NULL;
		r = cfl_pool_close(tu.pool, &err);
		tu.pool = NULL;
		cli_remote_stop(&pl.remote);
		if (r) {
			cli_fail(&err);
			goto done_sig;
		}
		if (best >= 0 && !pl.command) {
			model_path(pl.pool.db, run_name, path, sizeof(path));
			if (save_best(&tu, (size_t)best, path, &err)) {
				cli_fail(&err);
				goto done_sig;
			}
		}
		if (cfl_store_run_finish(tu.st, tu.run_id,
					 best >= 0 ? CFL_RUN_DONE : CFL_RUN_FAILED, &err)) {
			cli_fail(&err);
			goto done_sig;
		}
		{
			struct cfl_run_info info;

			if (cfl_store_run_get(tu.st, tu.run_id, &info, &err) ||
			    cfl_report_run(tu.st, &info, CFL_TABLE_TEXT, &out, &err)) {
				cli_fail(&err);
				goto done_sig;
			}
			cfl_run_info_release(&info);
		}
		fputs(out.data ? out.data : "", stdout);
		if (best >= 0 && !pl.command)
			printf("\nBest model saved to %s (apply it with: cfl predict %s DATA)\n",
			       path, path);
		fflush(stdout);
		{
			int dflt = !strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH);

			fprintf(stderr, "run '%s' stored in '%s'; see it again with: cfl report %s%s%s\n",
				run_name, pl.pool.db, run_name, dflt ? "" : " --db ",
				dflt ? "" : pl.pool.db);
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
	if (tu.pool)
		cfl_pool_close(tu.pool, NULL);
	else if (tu.st && tu.run_id)
		cfl_store_mark_interrupted(tu.st, tu.run_id, NULL);
	tu.pool = NULL;
	fprintf(stderr, "cfl tune: interrupted; run '%s' kept in '%s'; continue it with:\n"
		"  %scfl tune --resume %s%s%s\n", run_name, pl.pool.db,
		cli_cluster_resume_prefix(&pl.cluster, launcher, sizeof(launcher)), run_name,
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? " --db " : "",
		strcmp(pl.pool.db, CFL_STORE_DEFAULT_PATH) ? pl.pool.db : "");
	rc = CLI_INTERRUPTED;
done_sig:
	g_pool = NULL;
	if (tu.pool)
		cfl_pool_close(tu.pool, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
done:
	cfl_search_free(tu.search);
	for (size_t i = 0; i < tu.n_cands; i++) {
		cfl_params_release(&tu.cands[i].params);
		free(tu.cands[i].vals);
	}
	if (tu.cands && tu.n_cands < (size_t)pl.num_search)
		cfl_params_release(&tu.cands[tu.n_cands].params);
	free(tu.cands);
	free(tu.trefs);
	free(tu.stored);
	cfl_store_close(tu.st);
	if (loaded)
		cfl_data_release(&data);
	cfl_space_release(&space);
	cfl_buf_release(&config);
	cfl_buf_release(&cmdline);
	cfl_buf_release(&out);
	free(rv);
	free(rv_words);
	cli_cluster_stop(&pl.cluster);
	cli_remote_stop(&pl.remote);
	if (g_interrupted && rc == CLI_FAIL)
		rc = CLI_INTERRUPTED;
	return rc;
}
