/* Unit tests of the study layer (cfl/study.h) in-process: the stored plan
 * text (resume compares it with what older runs stored), the plan checks,
 * a repeat run drained with events then resumed with nothing left to run,
 * a resume refused for another plan or dataset, and a tune run whose
 * refitted candidate is the one cfl_metric_best_score picks from the
 * stored scores, and the one call cfl_study_run. */
#include "runner.h"

#include "cfl/model.h"
#include "cfl/store.h"
#include "cfl/study.h"

#include <math.h>
#include <unistd.h>

struct tmpdb {
	char dir[64], path[96];
};

static void tmpdb_new(struct tmpdb *t)
{
	strcpy(t->dir, "/tmp/cfl-study-XXXXXX");
	CHECK(mkdtemp(t->dir) != NULL);
	snprintf(t->path, sizeof(t->path), "%s/cfl.db", t->dir);
}

static void tmpdb_end(struct tmpdb *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	CHECK(system(cmd) == 0);
}

/* What the listener heard. */
struct heard {
	size_t n_start, n_trial, n_done_trials, n_tick, n_cand, n_note;
	size_t start_done, start_todo;
	int folds_seen;		/* a TRIAL with fold >= 0 */
	size_t n_loaded, n_opened, n_drained;	/* cfl_study_run's own */
};

static void listen(const struct cfl_study_event *ev, void *ctx)
{
	struct heard *h = ctx;

	switch (ev->kind) {
	case CFL_STUDY_START:
		h->n_start++;
		h->start_done = ev->n_done;
		h->start_todo = ev->n_todo;
		break;
	case CFL_STUDY_TRIAL:
		h->n_trial++;
		h->n_done_trials += ev->trial->status == CFL_TRIAL_DONE;
		h->folds_seen |= ev->fold >= 0;
		CHECK(ev->what && (!strcmp(ev->what, "linear") ||
				   !strcmp(ev->what, "baseline") || strlen(ev->what) == 8));
		break;
	case CFL_STUDY_TICK:
		h->n_tick++;
		break;
	case CFL_STUDY_CANDIDATE:
		h->n_cand++;
		break;
	case CFL_STUDY_NOTE:
		h->n_note++;
		break;
	case CFL_STUDY_LOADED:
		h->n_loaded++;
		CHECK(ev->data && ev->data->train.n > 0 && ev->text);
		break;
	case CFL_STUDY_OPENED:
		h->n_opened++;
		break;
	case CFL_STUDY_DRAINED:
		h->n_drained++;
		CHECK_INT(ev->status, 0);
		break;
	default:
		break;
	}
}

static void repeat_plan(struct cfl_study_plan *p, const char *db)
{
	cfl_study_plan_init(p);
	p->data.path = "datasets/iris.csv";
	p->data.seed = 3;
	p->num_repeat = 2;
	p->n_metrics = cfl_metric_defaults(3, p->metrics, CFL_WIRE_MAX_METRICS);
	p->repeat.n_models = 2;
	p->repeat.models[0] = "linear";
	p->repeat.models[1] = "baseline";
	cfl_params_init(&p->repeat.params[0]);
	cfl_params_init(&p->repeat.params[1]);
	p->db = db;
	p->name = "r";
	p->command_line = "cfl repeat datasets/iris.csv";
}

/* The stored plan is the text runs have always stored: --resume of a run
 * made by an older cfl compares against it. */
static void t_plan_config_text(void)
{
	struct cfl_study_plan p;
	struct cfl_buf b;

	repeat_plan(&p, "x.db");
	p.repeat.folds = 3;
	cfl_buf_init(&b);
	CHECK(cfl_study_plan_config(&p, &b) == 0);
	CHECK_MSG(!strcmp(b.data, "models=linear,baseline\nparams.linear=\n"
			  "params.baseline=\nnum_repeat=2\nfolds=3\nbootstrap=0\n"
			  "metrics=acc,auc\nseed=3\ntarget=\ntask=0\ndrop=\nonly=\n"
			  "test=\nvalid=\ntest_frac=0.20000000000000001\n"
			  "valid_frac=0.10000000000000001\n"), "%s", b.data);
	cfl_buf_release(&b);
}

/* What a plan needs of the data, and the checks before any work. */
static void t_plan_needs_and_checks(void)
{
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_err err = { "" };

	repeat_plan(&p, "x.db");
	/* the default ensembles fit nothing without folds (mean) ... */
	CHECK(cfl_study_plan_needs(&p) == 0);
	/* ... and stack on out-of-fold predictions with them */
	p.repeat.folds = 5;
	CHECK(cfl_study_plan_needs(&p) == 0);
	p.repeat.folds = 0;
	/* stacking asked for without folds fits on validation */
	p.repeat.ensembles = "stacking";
	CHECK(cfl_study_plan_needs(&p) == CFL_STUDY_NEEDS_VALID);
	p.repeat.ensembles = "mean,vote";
	CHECK(cfl_study_plan_needs(&p) == 0);
	p.repeat.ensembles = "stacking";
	p.repeat.folds = 5;	/* stacking on out-of-fold predictions */
	CHECK(cfl_study_plan_needs(&p) == 0);
	p.repeat.ensembles = "greedy";
	CHECK(cfl_study_plan_needs(&p) == CFL_STUDY_NEEDS_VALID);
	/* a model that stops early watches the validation part */
	p.repeat.ensembles = "mean";
	p.repeat.models[1] = "fcnn";	/* stops on its training loss by default */
	CHECK(cfl_study_plan_needs(&p) == 0);
	CHECK(cfl_params_set_arg(&p.repeat.params[1], "patience=10", &err) == 0);
	CHECK(cfl_study_plan_needs(&p) == CFL_STUDY_NEEDS_VALID);
	cfl_params_release(&p.repeat.params[1]);
	cfl_params_init(&p.repeat.params[1]);
	p.repeat.models[1] = "baseline";
	p.kind = CFL_RUN_TUNE;
	CHECK(cfl_study_plan_needs(&p) == CFL_STUDY_NEEDS_VALID);
	p.tune.command = "echo {x}";
	CHECK(cfl_study_plan_needs(&p) == 0);

	cfl_data_opts_init(&o);
	o.path = "datasets/diabetes.csv";
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	repeat_plan(&p, "x.db");
	p.repeat.ensembles = "mean,vote";
	CHECK(cfl_study_check(&p, &d, &err) == -1);
	CHECK_MSG(strstr(err.msg, "--ensemble: ") == err.msg &&
		  strstr(err.msg, "needs classification"), "%s", err.msg);
	p.repeat.ensembles = "bogus";
	CHECK(cfl_study_check(&p, &d, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown ensemble 'bogus'");
	p.repeat.ensembles = NULL;
	p.repeat.folds = (int)d.train.n + 1;
	CHECK(cfl_study_check(&p, &d, &err) == -1);
	CHECK_CONTAINS(err.msg, "the training part has only");
	p.repeat.folds = 5;
	CHECK(cfl_study_check(&p, &d, &err) == 0);
	cfl_data_release(&d);
	/* a command's {name} must be in the space */
	{
		struct cfl_space sp;

		cfl_study_plan_init(&p);
		p.kind = CFL_RUN_TUNE;
		CHECK(cfl_space_parse(&sp, "t", "x = uniform(0, 1)\n", 18, NULL, &err) == 0);
		p.tune.space = &sp;
		p.tune.command = "echo {x} {y}";
		CHECK(cfl_study_check(&p, NULL, &err) == -1);
		CHECK_CONTAINS(err.msg, "'{y}' is not a parameter");
		p.tune.command = "echo {x} {{y}}";
		CHECK_MSG(cfl_study_check(&p, NULL, &err) == 0, "%s", err.msg);
		cfl_space_release(&sp);
	}
}

/* Runs a plan start to finish; returns the trial counts. */
static struct cfl_trial_counts run_repeat(const struct cfl_study_plan *p,
					  const struct cfl_data *d,
					  struct heard *h)
{
	struct cfl_study_listener ls = { listen, h };
	struct cfl_pool_opts exec;
	struct cfl_trial_counts tc;
	struct cfl_err err = { "" };
	struct cfl_study *s = cfl_study_open(p, d, &err);

	CHECK_MSG(s, "%s", err.msg);
	CHECK(!strcmp(cfl_study_name(s), "r"));
	cfl_pool_opts_init(&exec);
	exec.n_local = 2;
	CHECK_MSG(cfl_study_start(s, &exec, &err) == 0, "%s", err.msg);
	CHECK(cfl_study_pool(s) != NULL);
	CHECK_MSG(cfl_study_repeat(s, &ls, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_study_finish(s, &ls, &tc, &err) == 0, "%s", err.msg);
	CHECK(cfl_study_pool(s) == NULL);
	cfl_study_free(s);
	return tc;
}

static void t_repeat_then_resume(void)
{
	struct tmpdb t;
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_err err = { "" };
	struct cfl_trial_counts tc;
	struct heard h;
	struct cfl_study *s;

	tmpdb_new(&t);
	repeat_plan(&p, t.path);
	p.repeat.folds = 2;
	p.repeat.ensembles = "mean";
	CHECK_MSG(cfl_data_load(&d, &p.data, &err) == 0, "%s", err.msg);
	memset(&h, 0, sizeof(h));
	tc = run_repeat(&p, &d, &h);
	/* 2 models x 2 repeats x 2 folds */
	CHECK_INT(tc.total, 8);
	CHECK_INT(tc.done, 8);
	CHECK_INT(h.n_start, 1);
	CHECK_INT(h.start_todo, 8);
	CHECK_INT(h.start_done, 0);
	CHECK_INT(h.n_trial, 8);
	CHECK_INT(h.n_done_trials, 8);
	CHECK(h.folds_seen);
	{
		struct cfl_store *st = cfl_store_open(t.path, CFL_STORE_READONLY, &err);
		struct cfl_run_info info;
		struct cfl_ensemble_row *ens;
		size_t n_ens;

		CHECK_MSG(st, "%s", err.msg);
		CHECK(cfl_store_run_find(st, "r", &info, &err) == 0);
		CHECK(info.status == CFL_RUN_DONE);
		CHECK(!strcmp(info.dataset_sha256, d.sha256_hex));
		CHECK(!strcmp(info.command, "cfl repeat datasets/iris.csv"));
		CHECK(cfl_store_ensembles(st, info.id, &ens, &n_ens, &err) == 0);
		CHECK_INT(n_ens, 1);
		cfl_ensemble_rows_free(ens, n_ens);
		cfl_run_info_release(&info);
		cfl_store_close(st);
	}

	/* the same plan again under its name: nothing left to run */
	p.name = NULL;
	p.resume = "r";
	memset(&h, 0, sizeof(h));
	tc = run_repeat(&p, &d, &h);
	CHECK_INT(tc.done, 8);
	CHECK_INT(h.start_done, 8);
	CHECK_INT(h.start_todo, 0);
	CHECK_INT(h.n_trial, 0);

	/* complete: the study says so and changes nothing */
	s = cfl_study_open(&p, &d, &err);
	CHECK_MSG(s, "%s", err.msg);
	CHECK_INT(cfl_study_complete(s), 1);
	CHECK_INT(cfl_study_grown(s), 0);
	{
		struct cfl_run_info info;

		CHECK(cfl_store_run_find(cfl_study_store(s), "r", &info, &err) == 0);
		CHECK(info.status == CFL_RUN_DONE);
		cfl_run_info_release(&info);
	}
	cfl_study_free(s);

	/* another plan, another dataset: refused, saying which */
	p.repeat.folds = 3;
	s = cfl_study_open(&p, &d, &err);
	CHECK(s == NULL);
	CHECK_CONTAINS(err.msg, "cannot resume run 'r': it was started with another plan "
		       "(folds '2', now '3')");
	CHECK_CONTAINS(err.msg, "\n  cfl repeat datasets/iris.csv");
	p.repeat.folds = 2;
	p.num_repeat = 1;
	s = cfl_study_open(&p, &d, &err);
	CHECK(s == NULL);
	CHECK_CONTAINS(err.msg, "it has --num-repeat 2; a resume can grow it, not shrink it");

	/* a larger count grows it: the new repeats only, ensembles rebuilt */
	p.num_repeat = 3;
	p.command_line = "cfl repeat datasets/iris.csv --num-repeat 3";
	memset(&h, 0, sizeof(h));
	tc = run_repeat(&p, &d, &h);
	CHECK_INT(tc.done, 12);
	CHECK_INT(h.start_done, 8);
	CHECK_INT(h.start_todo, 4);
	{
		struct cfl_store *st = cfl_store_open(t.path, CFL_STORE_READONLY, &err);
		struct cfl_run_info info;
		struct cfl_ensemble_row *ens;
		size_t n_ens;

		CHECK_MSG(st, "%s", err.msg);
		CHECK(cfl_store_run_find(st, "r", &info, &err) == 0);
		CHECK_CONTAINS(info.config, "\nnum_repeat=3\n");
		CHECK_STR(info.command, "cfl repeat datasets/iris.csv --num-repeat 3");
		CHECK(cfl_store_ensembles(st, info.id, &ens, &n_ens, &err) == 0);
		CHECK_INT(n_ens, 1);
		{
			/* "trials a+b,c+d,...; ...": one member per (model,
			 * repeat), its folds joined */
			size_t n_members = 1;

			for (const char *c = ens[0].members; *c && *c != ';'; c++)
				n_members += *c == ',';
			CHECK_INT(n_members, 6);
		}
		cfl_ensemble_rows_free(ens, n_ens);
		cfl_run_info_release(&info);
		cfl_store_close(st);
	}
	p.num_repeat = 2;
	d.sha256_hex[0] = d.sha256_hex[0] == '0' ? '1' : '0';
	s = cfl_study_open(&p, &d, &err);
	CHECK(s == NULL);
	CHECK_CONTAINS(err.msg, "another dataset (SHA-256 differs)");
	p.resume = "nope";
	s = cfl_study_open(&p, &d, &err);
	CHECK(s == NULL);
	CHECK_CONTAINS(err.msg, "no run 'nope'");
	cfl_data_release(&d);
	tmpdb_end(&t);
}

/* A run without a name gets the default one; a stop before the pool
 * started marks the run interrupted. */
static void t_stop_before_start(void)
{
	struct tmpdb t;
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_err err = { "" };
	struct cfl_study *s;
	struct cfl_run_info info;

	tmpdb_new(&t);
	repeat_plan(&p, t.path);
	p.name = NULL;	/* the store picks repeat-YYYYMMDD-HHMMSS */
	CHECK_MSG(cfl_data_load(&d, &p.data, &err) == 0, "%s", err.msg);
	s = cfl_study_open(&p, &d, &err);
	CHECK_MSG(s, "%s", err.msg);
	CHECK_MSG(!strncmp(cfl_study_name(s), "repeat-", 7) &&
		  strlen(cfl_study_name(s)) >= 22, "%s", cfl_study_name(s));
	CHECK(cfl_study_repeat(s, NULL, &err) == -1);	/* no pool yet */
	CHECK(cfl_study_stop(s, &err) == 0);
	CHECK(cfl_store_run_get(cfl_study_store(s), cfl_study_run_id(s), &info, &err) == 0);
	CHECK(info.status == CFL_RUN_INTERRUPTED);
	cfl_run_info_release(&info);
	cfl_study_free(s);
	cfl_data_release(&d);
	tmpdb_end(&t);
}

static void t_tune_refits_the_best(void)
{
	struct tmpdb t;
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_space sp;
	struct cfl_err err = { "" };
	struct cfl_pool_opts exec;
	struct heard h;
	struct cfl_study_listener ls = { listen, &h };
	struct cfl_study *s;
	struct cfl_candidate_info *ci;
	size_t n_ci;
	double scores[8];
	char path[160];

	tmpdb_new(&t);
	cfl_study_plan_init(&p);
	p.kind = CFL_RUN_TUNE;
	p.data.path = "datasets/iris.csv";
	p.num_repeat = 2;
	p.db = t.path;
	p.name = "t";
	p.tune.model = "linear";
	p.tune.metric = CFL_M_ACC;
	p.tune.method = CFL_SEARCH_RANDOM;
	p.tune.num_search = 4;
	p.tune.num_parallel = 2;
	CHECK(cfl_space_parse(&sp, "linear", "l2 = loguniform(1e-4, 100)\n", 27,
			      cfl_model_find("linear"), &err) == 0);
	p.tune.space = &sp;
	CHECK_MSG(cfl_data_load(&d, &p.data, &err) == 0, "%s", err.msg);
	s = cfl_study_open(&p, &d, &err);
	CHECK_MSG(s, "%s", err.msg);
	cfl_pool_opts_init(&exec);
	exec.n_local = 2;
	CHECK_MSG(cfl_study_start(s, &exec, &err) == 0, "%s", err.msg);
	memset(&h, 0, sizeof(h));
	CHECK_MSG(cfl_study_tune(s, &ls, &err) == 0, "%s", err.msg);
	CHECK_INT(h.n_cand, 4);
	/* 4 candidates x 2 repeats, then the best's 2 refit repeats */
	CHECK_INT(h.n_trial, 10);
	CHECK(cfl_study_close_pool(s, &err) == 0);
	CHECK(cfl_store_candidates(cfl_study_store(s), cfl_study_run_id(s), &ci, &n_ci,
				   &err) == 0);
	CHECK_INT(n_ci, 4);
	for (size_t i = 0; i < n_ci; i++)
		scores[i] = ci[i].has_score ? ci[i].score : NAN;
	cfl_candidates_free(ci, n_ci);
	CHECK(cfl_study_tune_best(s) >= 0);
	CHECK_INT(cfl_study_tune_best(s), cfl_metric_best_score(scores, n_ci));
	cfl_study_model_path(t.path, "t", path, sizeof(path));
	CHECK(strstr(path, "/t.cfl") && !strncmp(path, t.dir, strlen(t.dir)));
	CHECK_MSG(cfl_study_tune_save_best(s, path, &err) == 0, "%s", err.msg);
	CHECK(access(path, R_OK) == 0);
	CHECK_MSG(cfl_study_finish(s, &ls, NULL, &err) == 0, "%s", err.msg);
	cfl_study_free(s);
	cfl_space_release(&sp);
	cfl_data_release(&d);
	tmpdb_end(&t);
}

/* One auto leaderboard entry stored as cfl_study_auto_ensembles stores it:
 * acc on valid, test and out of fold; members "trials A+B" (the trials'
 * seconds are the entry's). */
static void add_entry(struct cfl_store *st, int64_t run, const char *name,
		      const char *method, double oof, double valid,
		      const int64_t *trial, size_t n_trial)
{
	struct cfl_metric_value mv = { "acc", valid }, mt = { "acc", 0.5 },
				mo = { "acc", oof };
	struct cfl_trial_result res;
	struct cfl_ensemble_info info;
	struct cfl_err err;
	char members[128] = "trials ";

	for (size_t i = 0; i < n_trial; i++)
		snprintf(members + strlen(members), sizeof(members) - strlen(members),
			 "%s%lld", i ? "+" : "", (long long)trial[i]);
	memset(&res, 0, sizeof(res));
	res.split[CFL_SPLIT_VALID] = (struct cfl_split_result){ 1, &mv, 0, 0, NULL, NULL };
	res.split[CFL_SPLIT_TEST] = (struct cfl_split_result){ 1, &mt, 0, 0, NULL, NULL };
	res.split[CFL_SPLIT_OOF] = (struct cfl_split_result){ 1, &mo, 0, 0, NULL, NULL };
	info.name = name;
	info.method = method;
	info.members = members;
	info.repeat = -1;
	CHECK_MSG(cfl_store_ensemble_add(st, run, &info, &res, NULL, &err) == 0,
		  "%s", err.msg);
}

/* The leaderboard's order: greedy first (the rule that picks, even when
 * another entry scores better out of fold), then the proper score out of
 * fold (a run without log loss stored: its metric), then valid; entries
 * equal on both go cheaper first, then by name (no kind is preferred). */
static void t_auto_summary_ties(void)
{
	static const struct { const char *model; double seconds; } fam[] = {
		{ "fcnn", 2.0 }, { "linear", 0.1 }, { "tree", 0.5 }, { "gbdt", 1.0 },
	};
	static const char *want[] = { "greedy", "gbdt:x", "linear:x", "mean",
				      "tree:x", "fcnn:x", "stacking" };
	struct tmpdb t;
	struct cfl_err err;
	struct cfl_store *st;
	struct cfl_run_info info = { 0 };
	struct cfl_study_auto_summary sum;
	int64_t run, tr[4][2];

	tmpdb_new(&t);
	st = cfl_store_open(t.path, CFL_STORE_CREATE, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	info.name = "a";
	info.kind = CFL_RUN_AUTO;
	info.command = "cfl auto x.csv";
	info.config = "";
	info.dataset = "x.csv";
	CHECK_MSG(cfl_store_run_create(st, &info, &run, &err) == 0, "%s", err.msg);
	for (size_t f = 0; f < 4; f++) {
		int64_t c;

		CHECK(cfl_store_candidate_get_or_add(st, run, fam[f].model, NULL, &c,
						     NULL, &err) == 0);
		for (int k = 0; k < 2; k++) {
			struct cfl_trial_state ts;
			struct cfl_metric_value m = { "acc", 0.9 };
			struct cfl_trial_result res;

			CHECK(cfl_store_trial_ensure_in(st, run, c, 0, k, 7, CFL_PHASE_REFIT,
							&ts, &err) == 0);
			memset(&res, 0, sizeof(res));
			res.duration = fam[f].seconds;
			res.split[CFL_SPLIT_VALID] =
				(struct cfl_split_result){ 1, &m, 0, 0, NULL, NULL };
			CHECK(cfl_store_trial_leased(st, ts.id, 1, "local:1", &err) == 0);
			CHECK_MSG(cfl_store_trial_done(st, ts.id, 1, &res, &err) == 0, "%s",
				  err.msg);
			tr[f][k] = ts.id;
		}
	}
	/* stored in an order that is none of the expected ones */
	add_entry(st, run, "stacking", "stacking", 0.98, 0.97, tr[0], 2);
	add_entry(st, run, "tree:x", "bag", 0.98, 0.97, tr[2], 2);
	add_entry(st, run, "mean", "mean", 0.98, 0.97, tr[1], 2);
	add_entry(st, run, "fcnn:x", "bag", 0.98, 0.97, tr[0], 2);
	add_entry(st, run, "linear:x", "bag", 0.98, 0.97, tr[1], 2);
	add_entry(st, run, "gbdt:x", "bag", 0.99, 0.90, tr[3], 2);
	add_entry(st, run, "greedy", "greedy", 0.90, 0.90, tr[3], 2);
	CHECK_MSG(cfl_study_auto_summary(st, run, &sum, &err) == 0, "%s", err.msg);
	CHECK_INT(sum.n_rows, 7);
	CHECK(!strcmp(sum.score_metric, "acc"));
	for (size_t i = 0; i < sum.n_rows && i < 7; i++)
		CHECK_MSG(!strcmp(sum.rows[i].name, want[i]), "rank %zu: %s, expected %s",
			  i + 1, sum.rows[i].name, want[i]);
	CHECK(sum.n_rows > 2 && fabs(sum.rows[2].seconds - 0.2) < 1e-9);
	cfl_study_auto_summary_release(&sum);
	cfl_store_close(st);
	tmpdb_end(&t);
}

/* cfl_study_run's finished hook: the run is stored and done when it is
 * called, before the bundle. */
static int finished(struct cfl_study *s, void *ctx, struct cfl_err *err)
{
	struct cfl_run_info info;

	(*(int *)ctx)++;
	if (cfl_store_run_get(cfl_study_store(s), cfl_study_run_id(s), &info, err))
		return -1;
	CHECK(info.status == CFL_RUN_DONE);
	cfl_run_info_release(&info);
	return 0;
}

/* The one call: a repeat run from plan to finish on the local pool, its
 * events and hooks, the metrics resolved by name; then a usage error
 * before any work (no database made), the resume of a complete run, and
 * options that cannot go together. */
static void t_run_one_call(void)
{
	struct tmpdb t;
	struct cfl_study_plan p;
	struct cfl_study_outcome out;
	struct cfl_err err = { "" };
	struct heard h;
	int n_finished = 0;
	struct cfl_study_hooks hooks = { { listen, &h }, NULL, finished, &n_finished, NULL };
	char other[128];

	tmpdb_new(&t);
	repeat_plan(&p, t.path);
	p.n_metrics = 0;
	p.metrics_arg = "acc,logloss";
	p.repeat.ensembles = "mean";
	p.exec.pool.n_local = 2;
	memset(&h, 0, sizeof(h));
	CHECK_MSG(cfl_study_run(&p, &hooks, &out, &err) == CFL_STUDY_RUN_DONE, "%s", err.msg);
	CHECK_INT(n_finished, 1);
	CHECK_INT(out.counts.done, 4);
	CHECK_STR(out.name, "r");
	CHECK(out.started && !out.timed_out && !out.bundle_written);
	CHECK_INT(p.n_metrics, 2);
	CHECK_INT(h.n_loaded, 1);
	CHECK_INT(h.n_opened, 1);
	CHECK_INT(h.n_drained, 1);
	CHECK_INT(h.n_done_trials, 4);
	/* the same plan again: complete, nothing done */
	p.resume = "r";
	CHECK_INT(cfl_study_run(&p, &hooks, &out, &err), CFL_STUDY_RUN_COMPLETE);
	CHECK_INT(n_finished, 1);
	/* a metric that is not one: a usage error before any database */
	snprintf(other, sizeof(other), "%s/other.db", t.dir);
	repeat_plan(&p, other);
	p.metrics_arg = "acc,nope";
	p.exec.pool.n_local = 1;
	CHECK_INT(cfl_study_run(&p, &hooks, &out, &err), CFL_STUDY_RUN_USAGE);
	CHECK_MSG(strstr(err.msg, "--metrics") != NULL, "%s", err.msg);
	CHECK(access(other, F_OK) != 0);
	/* no worker anywhere */
	repeat_plan(&p, other);
	p.exec.pool.n_local = 0;
	CHECK_INT(cfl_study_run(&p, &hooks, &out, &err), CFL_STUDY_RUN_USAGE);
	CHECK_MSG(strstr(err.msg, "needs --listen") != NULL, "%s", err.msg);
	CHECK_INT(n_finished, 1);
	tmpdb_end(&t);
}

/* The time limit counts from the command's start, the data's load
 * included: a plan started 100 s ago with 50 s of limit is over before
 * its first trial (counted from the run's opening, it ran them all). */
static void t_limit_counts_from_start(void)
{
	struct tmpdb t;
	struct cfl_study_plan p;
	struct cfl_study_outcome out;
	struct cfl_err err = { "" };
	struct cfl_study_hooks hooks = { { NULL, NULL }, NULL, NULL, NULL, NULL };

	tmpdb_new(&t);
	repeat_plan(&p, t.path);
	p.exec.pool.n_local = 1;
	p.time_limit = 50;
	p.started = cfl_now() - 100;
	cfl_study_run(&p, &hooks, &out, &err);
	CHECK(out.timed_out);
	CHECK_INT(out.counts.done, 0);
	/* unset, it is set at the run's start: the trials run */
	repeat_plan(&p, t.path);
	p.name = "again";
	p.exec.pool.n_local = 1;
	p.time_limit = 50;
	CHECK_MSG(cfl_study_run(&p, &hooks, &out, &err) == CFL_STUDY_RUN_DONE, "%s", err.msg);
	CHECK(!out.timed_out);
	CHECK_INT(out.counts.done, 4);
	CHECK(p.started > 0 && p.started <= cfl_now());
	tmpdb_end(&t);
}

/* auto's round line counts a search candidate the end of its family's
 * share cancelled as cancelled, not failed (issue 33: everywhere). */
static void t_auto_view_counts_cancelled(void)
{
	struct cfl_study_auto_view v;
	struct cfl_pool_event pe[3];
	struct cfl_study_event ev;
	enum cfl_trial_status st[3] = { CFL_TRIAL_CANCELLED, CFL_TRIAL_FAILED,
					CFL_TRIAL_CANCELLED };
	struct cfl_buf b;

	cfl_buf_init(&b);
	cfl_study_auto_view_init(&v, 0, 60, 0);
	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_PHASE;
	ev.text = "linear: searching for 1.5 s";
	cfl_study_auto_view_event(&v, &ev, &b);
	for (int i = 0; i < 3; i++) {
		memset(&pe[i], 0, sizeof(pe[i]));
		pe[i].status = st[i];
		pe[i].reason = "stopped";
		memset(&ev, 0, sizeof(ev));
		ev.kind = CFL_STUDY_TRIAL;
		ev.trial = &pe[i];
		ev.what = "linear";
		ev.hex = "0123abcd";
		ev.fold = -1;
		cfl_study_auto_view_event(&v, &ev, &b);
	}
	cfl_study_auto_view_end(&v, &b);
	CHECK_MSG(b.data && strstr(b.data, "linear, round 1: 3 candidates, 1 failed, 2 cancelled\n"),
		  "%s", b.data ? b.data : "(nothing)");
	cfl_buf_release(&b);
}

/* A candidate event of auto's view: family what, its metric value and
 * proper score, and its family's best's. */
static void view_cand(struct cfl_study_auto_view *v, struct cfl_buf *b,
		      const char *what, const char *proper_name, double value,
		      double proper, double best, double best_proper)
{
	struct cfl_study_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_CANDIDATE;
	ev.what = what;
	ev.hex = "0123abcd";
	ev.oof = 1;
	ev.proper_name = proper_name;
	ev.score = value;
	ev.proper = proper;
	ev.best = best;
	ev.best_proper = best_proper;
	cfl_study_auto_view_event(v, &ev, b);
}

/* A fresh view of the metric's name with an empty buffer for its lines. */
static void view_open(struct cfl_study_auto_view *v, struct cfl_buf *b,
		      const char *metric)
{
	cfl_buf_init(b);
	cfl_study_auto_view_init(v, 0, 60, 0);
	v->metric = metric;
}

/* The view's lines are want (then the buffer is emptied for the next). */
#define CHECK_LINES(b, want)                                                  \
	do {                                                                  \
		CHECK_MSG((b).data && !strcmp((b).data, want), "%s",          \
			  (b).data ? (b).data : "(nothing)");                 \
		cfl_buf_release(&(b));                                        \
		cfl_buf_init(&(b));                                           \
	} while (0)

/* Families at their own pace (small data: no turn announced, their
 * candidates interleaved): a line when a family's best by the proper
 * score is new, counting its candidates so far, the metric beside; no
 * round numbers, which interleaved turns would make up. */
static void t_auto_view_paced_lines(void)
{
	struct cfl_study_auto_view v;
	struct cfl_pool_event pe;
	struct cfl_study_event ev;
	struct cfl_buf b;

	view_open(&v, &b, "acc");
	view_cand(&v, &b, "linear", "logloss", 0.9, 0.3, 0.9, 0.3);
	view_cand(&v, &b, "tree", "logloss", 0.95, 1.2, 0.95, 1.2);
	CHECK_LINES(b, "linear: 1 candidate, best logloss 0.300000 out of fold (acc 0.900000)\n"
		       "tree: 1 candidate, best logloss 1.200000 out of fold (acc 0.950000)\n");
	memset(&pe, 0, sizeof(pe));
	pe.status = CFL_TRIAL_FAILED;
	pe.reason = "broke";
	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_TRIAL;
	ev.trial = &pe;
	ev.what = "linear";
	ev.hex = "0123abcd";
	ev.fold = -1;
	cfl_study_auto_view_event(&v, &ev, &b);
	/* no better: no line; a tree whose best acc is lower but whose log
	 * loss is better: a line, by the proper score */
	view_cand(&v, &b, "linear", "logloss", 0.95, 0.4, 0.9, 0.3);
	view_cand(&v, &b, "tree", "logloss", 0.8, 0.7, 0.8, 0.7);
	view_cand(&v, &b, "linear", "logloss", 0.93, 0.25, 0.93, 0.25);
	/* better beyond the digits shown: not shown again */
	view_cand(&v, &b, "linear", "logloss", 0.93, 0.2500000001, 0.93, 0.2500000001);
	CHECK_LINES(b, "tree: 2 candidates, best logloss 0.700000 out of fold (acc 0.800000)\n"
		       "linear: 4 candidates, 1 failed, best logloss 0.250000 out of fold (acc 0.930000)\n");
	CHECK(v.last && !strcmp(v.last, "linear"));
	cfl_buf_release(&b);

	/* regression: the metric is the proper score, shown once */
	view_open(&v, &b, "rmse");
	view_cand(&v, &b, "gbdt", "rmse", 2.5, 2.5, 2.5, 2.5);
	CHECK_LINES(b, "gbdt: 1 candidate, best rmse 2.500000 out of fold\n");
	cfl_buf_release(&b);
}

/* Larger data: the first round's turns are announced, one line each; the
 * rounds after it are not, and a family's line then comes when its best
 * improves on the one its turn showed, counting every candidate since the
 * search began. */
static void t_auto_view_turn_then_paced(void)
{
	struct cfl_study_auto_view v;
	struct cfl_study_event ev;
	struct cfl_buf b;

	view_open(&v, &b, "acc");
	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_PHASE;
	ev.text = "linear: searching for 1.5 s";
	cfl_study_auto_view_event(&v, &ev, &b);
	view_cand(&v, &b, "linear", "logloss", 0.9, 0.3, 0.9, 0.3);
	view_cand(&v, &b, "linear", "logloss", 0.8, 0.5, 0.9, 0.3);
	ev.text = "another round for the families";
	cfl_study_auto_view_event(&v, &ev, &b);
	view_cand(&v, &b, "linear", "logloss", 0.8, 0.4, 0.9, 0.3);
	view_cand(&v, &b, "linear", "logloss", 0.91, 0.2, 0.91, 0.2);
	CHECK_LINES(b, "linear, round 1: 2 candidates, best logloss 0.300000 out of fold (acc 0.900000)\n"
		       "another round for the families\n"
		       "linear: 4 candidates, best logloss 0.200000 out of fold (acc 0.910000)\n");
	cfl_buf_release(&b);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_auto_view_counts_cancelled),
	TEST(t_auto_view_paced_lines),
	TEST(t_auto_view_turn_then_paced),
	TEST(t_plan_config_text),
	TEST(t_plan_needs_and_checks),
	TEST(t_repeat_then_resume),
	TEST(t_stop_before_start),
	TEST(t_tune_refits_the_best),
	TEST(t_auto_summary_ties),
	TEST(t_run_one_call),
	TEST(t_limit_counts_from_start),
	{ 0 }
};
