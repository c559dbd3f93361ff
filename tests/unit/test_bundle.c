/* Unit tests of bundles (cfl/bundle.h): a repeat run of every model family
 * with every ensemble method, with and without --folds and --bootstrap,
 * saved as a bundle, read back, and each row applied to the run's own test
 * rows read from their CSV file through the bundle's encoder: the
 * predictions must be the stored ones bit for bit (a model's repeat: its
 * trial's; a model: the mean of its repeats; an ensemble: the ensemble's).
 * Then the file's failures: a truncated bundle, a foreign SQLite file, a
 * model file, a bundle whose member names a model that is not there. */
#include "runner.h"

#include <sqlite3.h>

#include "cfl/bundle.h"
#include "cfl/ensemble.h"
#include "cfl/model.h"
#include "cfl/study.h"

/* Predictions stored for trial id on test, as the run's member arithmetic
 * sums them: sum of p / k (k the trials of the member). */
static void add_trial(struct cfl_store *st, int64_t id, size_t k, double *acc,
		      size_t len)
{
	struct cfl_pred p;
	struct cfl_err err = { "" };

	CHECK_MSG(cfl_store_predictions(st, id, CFL_SPLIT_TEST, &p, &err) == 0, "%s",
		  err.msg);
	CHECK_INT(p.n * p.n_out, len);
	for (size_t j = 0; j < len; j++)
		acc[j] += p.values[j] / (double)k;
	cfl_pred_release(&p);
}

/* What the store says row r predicts on test, into out (len doubles). */
static void expected(struct cfl_store *st, int64_t run_id,
		     const struct cfl_bundle *b, const struct cfl_bundle_row *r,
		     double *out, size_t len, size_t n, size_t n_out)
{
	struct cfl_err err = { "" };

	if (!strcmp(r->kind, "ensemble") || !strcmp(r->kind, "bag")) {
		struct cfl_ensemble_row *ens;
		size_t n_ens;
		int found = 0;

		CHECK(cfl_store_ensembles(st, run_id, &ens, &n_ens, &err) == 0);
		for (size_t i = 0; i < n_ens; i++) {
			struct cfl_pred p;

			if (strcmp(ens[i].name, r->name))
				continue;
			CHECK(cfl_store_ensemble_predictions(st, ens[i].id, CFL_SPLIT_TEST,
							     &p, &err) == 0);
			CHECK_INT(p.n * p.n_out, len);
			memcpy(out, p.values, len * sizeof(double));
			cfl_pred_release(&p);
			found = 1;
		}
		cfl_ensemble_rows_free(ens, n_ens);
		CHECK_MSG(found, "no stored ensemble '%s'", r->name);
		return;
	}
	if (!strcmp(r->kind, "repeat")) {
		const struct cfl_bundle_member *m = &r->members[0];
		struct cfl_pred p;

		if (m->n_models == 1) {	/* the trial's own predictions */
			CHECK(cfl_store_predictions(st, b->models[m->models[0]].trial,
						    CFL_SPLIT_TEST, &p, &err) == 0);
			memcpy(out, p.values, len * sizeof(double));
			cfl_pred_release(&p);
			return;
		}
		memset(out, 0, len * sizeof(double));
		for (size_t k = 0; k < m->n_models; k++)
			add_trial(st, b->models[m->models[k]].trial, m->n_models, out, len);
		return;
	}
	/* a model's row: the mean of its repeats' members */
	{
		double **preds = calloc(r->n_members, sizeof(*preds));

		CHECK(preds != NULL);
		for (size_t j = 0; j < r->n_members; j++) {
			const struct cfl_bundle_member *m = &r->members[j];

			preds[j] = calloc(len, sizeof(double));
			CHECK(preds[j] != NULL);
			for (size_t k = 0; k < m->n_models; k++)
				add_trial(st, b->models[m->models[k]].trial, m->n_models,
					  preds[j], len);
		}
		CHECK(cfl_ensemble_mean((const double *const *)preds, r->n_members, n,
					n_out, out, &err) == 0);
		for (size_t j = 0; j < r->n_members; j++)
			free(preds[j]);
		free(preds);
	}
}

/* The study of plan p on d, checked, opened and its pool of 2 started. */
static struct cfl_study *study_started(const struct cfl_study_plan *p,
				       const struct cfl_data *d)
{
	struct cfl_err err = { "" };
	struct cfl_pool_opts exec;
	struct cfl_study *s;

	CHECK_MSG(cfl_study_check(p, d, &err) == 0, "%s", err.msg);
	s = cfl_study_open(p, d, &err);
	CHECK_MSG(s, "%s", err.msg);
	cfl_pool_opts_init(&exec);
	exec.n_local = 2;
	CHECK_MSG(cfl_study_start(s, &exec, &err) == 0, "%s", err.msg);
	return s;
}

/* Loads the bundle at path into b (release it) and applies each of its
 * rows to test.csv (the run's test part) read through the bundle's
 * encoder: the predictions must be what study s stored for the row, bit
 * for bit. */
static void check_rows(struct cfl_study *s, const struct cfl_data *d,
		       const char *path, struct cfl_bundle *b, const char *what)
{
	struct cfl_err err = { "" };
	struct cfl_csv csv;
	struct cfl_xy xy;
	size_t n_out, len;

	CHECK_MSG(cfl_bundle_load(path, b, &err) == 0, "%s", err.msg);
	CHECK_INT(b->enc.n_classes, d->train.n_classes);
	CHECK_MSG(cfl_csv_read(&csv, cfl_test_path("test.csv"), &err) == 0, "%s", err.msg);
	cfl_xy_init(&xy);
	CHECK_MSG(cfl_encoder_apply(&b->enc, &csv, -1, &xy, &err) == 0, "%s", err.msg);
	CHECK_INT(xy.n, d->test.n);
	CHECK_INT(xy.d, d->test.d);
	CHECK(memcmp(xy.x, d->test.x, xy.n * xy.d * sizeof(float)) == 0);
	n_out = d->train.n_classes > 0 ? (size_t)d->train.n_classes : 1;
	len = xy.n * n_out;
	for (size_t i = 0; i < b->n_rows; i++) {
		const struct cfl_bundle_row *r = &b->rows[i];
		double *got = calloc(len, sizeof(double));
		double *want = calloc(len, sizeof(double));

		CHECK(got && want);
		CHECK_MSG(cfl_bundle_predict(b, r, xy.x, xy.n, got, &err) == 0, "%s",
			  err.msg);
		expected(cfl_study_store(s), cfl_study_run_id(s), b, r, want, len,
			 xy.n, n_out);
		for (size_t j = 0; j < len; j++)
			CHECK_MSG(!memcmp(&got[j], &want[j], sizeof(double)),
				  "%s: row '%s' [%zu]: %.17g, stored %.17g", what,
				  r->name, j, got[j], want[j]);
		free(got);
		free(want);
	}
	cfl_xy_release(&xy);
	cfl_csv_release(&csv);
}

/* A repeat run of models on NAME (its test rows in test.csv), saved as a
 * bundle; every row applied to test.csv must give the stored predictions.
 * Returns the number of rows checked. */
static size_t run_and_check(const char *name, const char *const *models,
			    size_t n_models, const char *ensembles, int folds,
			    int bootstrap)
{
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_err err = { "" };
	struct cfl_study *s;
	struct cfl_bundle b;
	char bundle[512], what[96];
	size_t n_rows;
	int n_classes;

	cfl_test_split_csv(name);
	cfl_study_plan_init(&p);
	p.data.path = strdup(cfl_test_path("train.csv"));
	p.data.test_path = strdup(cfl_test_path("test.csv"));
	p.data.seed = 11;
	p.num_repeat = 2;
	p.repeat.n_models = n_models;
	for (size_t i = 0; i < n_models; i++) {
		p.repeat.models[i] = models[i];
		cfl_params_init(&p.repeat.params[i]);
	}
	/* small and quick: the arithmetic is what is tested */
	for (size_t i = 0; i < n_models; i++) {
		if (!strcmp(models[i], "fcnn"))
			cfl_params_set(&p.repeat.params[i], "epochs", "5", NULL);
		if (!strcmp(models[i], "forest"))
			cfl_params_set(&p.repeat.params[i], "n_estimators", "5", NULL);
		if (!strcmp(models[i], "gbdt"))
			cfl_params_set(&p.repeat.params[i], "n_rounds", "10", NULL);
	}
	p.repeat.folds = folds;
	p.repeat.bootstrap = bootstrap;
	p.repeat.ensembles = ensembles;
	snprintf(bundle, sizeof(bundle), "%s", cfl_test_path("run.cfl"));
	p.repeat.save = bundle;
	p.db = strdup(cfl_test_path("cfl.db"));
	p.name = "r";
	p.command_line = "cfl repeat";
	CHECK_MSG(cfl_data_load(&d, &p.data, &err) == 0, "%s", err.msg);
	n_classes = d.train.n_classes;
	p.n_metrics = cfl_metric_defaults(n_classes, p.metrics, CFL_WIRE_MAX_METRICS);
	s = study_started(&p, &d);
	CHECK_MSG(cfl_study_repeat(s, NULL, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_study_finish(s, NULL, NULL, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_study_save_bundle(s, bundle, &err) == 0, "%s", err.msg);
	snprintf(what, sizeof(what), "%s folds=%d bootstrap=%d", name, folds, bootstrap);
	check_rows(s, &d, bundle, &b, what);
	/* every model and ensemble has its row */
	for (size_t i = 0; i < n_models; i++) {
		char rep[64];

		CHECK_MSG(cfl_bundle_find(&b, models[i]), "no row '%s'", models[i]);
		snprintf(rep, sizeof(rep), "%s#1", models[i]);
		CHECK_MSG(cfl_bundle_find(&b, rep), "no row '%s'", rep);
	}
	CHECK(cfl_bundle_find(&b, b.recommended) != NULL);
	CHECK(!strcmp(b.run, "r"));
	CHECK(!strcmp(b.dataset_sha256, d.sha256_hex));
	n_rows = b.n_rows;
	cfl_bundle_release(&b);
	cfl_study_free(s);
	for (size_t i = 0; i < n_models; i++)
		cfl_params_release(&p.repeat.params[i]);
	cfl_data_release(&d);
	free((char *)p.data.path);
	free((char *)p.data.test_path);
	free((char *)p.db);
	return n_rows;
}

static const char *const clf_models[] = { "linear", "tree", "forest", "gbdt",
					  "fcnn", "baseline" };
#define N_CLF (sizeof(clf_models) / sizeof(clf_models[0]))
#define ALL_CLF "mean,vote,weighted,stacking,greedy,top"
#define ALL_REG "mean,weighted,stacking,greedy,top"

static void t_classification(void)
{
	/* 6 models, 12 repeats, 6 ensembles */
	CHECK_INT(run_and_check("iris", clf_models, N_CLF, ALL_CLF, 0, 0), 6 + 12 + 6);
}

static void t_classification_folds(void)
{
	CHECK_INT(run_and_check("iris", clf_models, N_CLF, ALL_CLF, 3, 0), 6 + 12 + 6);
}

static void t_classification_bootstrap(void)
{
	CHECK_INT(run_and_check("wine", clf_models, N_CLF, ALL_CLF, 0, 1), 6 + 12 + 6);
}

static void t_regression(void)
{
	CHECK_INT(run_and_check("diabetes", clf_models, N_CLF, ALL_REG, 0, 0),
		  6 + 12 + 5);
}

static void t_regression_folds_bootstrap(void)
{
	CHECK_INT(run_and_check("diabetes", clf_models, N_CLF, ALL_REG, 3, 1),
		  6 + 12 + 5);
}

/* A tune run with --save: the bundle of its refit; "best#k" predicts what
 * refit trial k stored, "best" their mean.  The model fitted with gbdt
 * (trees and floats both) on wine's test rows read from test.csv. */
static void t_tune_refit(void)
{
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_space sp;
	struct cfl_err err = { "" };
	struct cfl_pool_opts exec;
	struct cfl_study *s;
	struct cfl_bundle b;
	struct cfl_csv csv;
	struct cfl_xy xy;
	char bundle[512];
	const char *text = "learning_rate = loguniform(0.01, 0.5)\n";
	size_t n_out, len;

	cfl_test_split_csv("wine");
	cfl_study_plan_init(&p);
	p.kind = CFL_RUN_TUNE;
	p.data.path = strdup(cfl_test_path("train.csv"));
	p.data.test_path = strdup(cfl_test_path("test.csv"));
	p.num_repeat = 3;
	p.db = strdup(cfl_test_path("cfl.db"));
	p.name = "t";
	p.tune.model = "gbdt";
	p.tune.metric = CFL_M_ACC;
	p.tune.method = CFL_SEARCH_RANDOM;
	p.tune.num_search = 3;
	p.tune.num_parallel = 2;
	snprintf(bundle, sizeof(bundle), "%s", cfl_test_path("tune.cfl"));
	p.tune.save = bundle;
	CHECK_MSG(cfl_space_parse(&sp, "gbdt", text, strlen(text),
				  cfl_model_find("gbdt"), &err) == 0, "%s", err.msg);
	p.tune.space = &sp;
	CHECK_MSG(cfl_data_load(&d, &p.data, &err) == 0, "%s", err.msg);
	s = cfl_study_open(&p, &d, &err);
	CHECK_MSG(s, "%s", err.msg);
	cfl_pool_opts_init(&exec);
	exec.n_local = 2;
	CHECK_MSG(cfl_study_start(s, &exec, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_study_tune(s, NULL, &err) == 0, "%s", err.msg);
	CHECK(cfl_study_close_pool(s, &err) == 0);
	CHECK_MSG(cfl_study_save_bundle(s, bundle, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_bundle_load(bundle, &b, &err) == 0, "%s", err.msg);
	CHECK_INT(b.n_models, 3);
	CHECK_INT(b.n_rows, 4);
	CHECK(!strcmp(b.recommended, "best"));
	CHECK_MSG(cfl_csv_read(&csv, cfl_test_path("test.csv"), &err) == 0, "%s", err.msg);
	cfl_xy_init(&xy);
	CHECK_MSG(cfl_encoder_apply(&b.enc, &csv, -1, &xy, &err) == 0, "%s", err.msg);
	n_out = (size_t)d.test.n_classes;
	len = xy.n * n_out;
	for (size_t i = 0; i < b.n_rows; i++) {
		double *got = calloc(len, sizeof(double));
		double *want = calloc(len, sizeof(double));

		CHECK(got && want);
		CHECK_MSG(cfl_bundle_predict(&b, &b.rows[i], xy.x, xy.n, got, &err) == 0,
			  "%s", err.msg);
		expected(cfl_study_store(s), cfl_study_run_id(s), &b, &b.rows[i], want,
			 len, xy.n, n_out);
		CHECK_MSG(!memcmp(got, want, len * sizeof(double)), "row '%s' differs",
			  b.rows[i].name);
		free(got);
		free(want);
	}
	/* the refit trials are the best candidate's repeats R..2R-1 */
	for (size_t i = 0; i < b.n_models; i++)
		CHECK_INT(b.models[i].repeat, 3 + (int)i);
	cfl_xy_release(&xy);
	cfl_csv_release(&csv);
	cfl_bundle_release(&b);
	CHECK_MSG(cfl_study_finish(s, NULL, NULL, &err) == 0, "%s", err.msg);
	cfl_study_free(s);
	cfl_space_release(&sp);
	cfl_data_release(&d);
	free((char *)p.data.path);
	free((char *)p.data.test_path);
	free((char *)p.db);
}

/* Auto's first entry, worked out again from what the run stored: each
 * bundle row's out-of-fold predictions (its members' weights over each
 * bag's fold trials' stored OOF rows) and their proper score (log loss
 * for classification, mse for regression) on the training labels.  Rank 1
 * is greedy, its stored score is the one worked out here, and it is no
 * worse than any bag's (Caruana's selection starts from the best bag and
 * keeps the best round).  Fold models only (a refit row predicts with its
 * refit). */
static void check_greedy_first(struct cfl_study *s, const struct cfl_data *d,
			       const struct cfl_bundle *b,
			       const struct cfl_study_auto_summary *sum)
{
	size_t n = d->train.n, k = d->train.n_classes ? (size_t)d->train.n_classes : 1;
	enum cfl_metric_id m = d->train.n_classes ? CFL_M_LOGLOSS : CFL_M_MSE;
	double *mix = calloc(b->n_rows * n * k, sizeof(double));
	double *score = calloc(b->n_rows, sizeof(double));
	size_t greedy = b->n_rows;
	struct cfl_err err = { "" };

	CHECK(mix && score);
	CHECK_MSG(!strcmp(sum->rows[0].name, "greedy"), "rank 1 is '%s'",
		  sum->rows[0].name);
	CHECK(!strcmp(sum->score_metric, cfl_metric_info(m)->name));
	for (size_t r = 0; r < b->n_rows; r++) {
		const struct cfl_bundle_row *row = &b->rows[r];

		for (size_t j = 0; j < row->n_members; j++) {
			const struct cfl_bundle_member *mb = &row->members[j];
			double w = row->method == CFL_BUNDLE_WEIGHTED ? mb->weight
				   : 1.0 / (double)row->n_members;
			/* a bag of several bag sets predicts each row once a
			 * set: their mean */
			double *one = calloc(n * k + 1, sizeof(double));
			size_t *hits = calloc(n + 1, sizeof(size_t));

			CHECK(one && hits);
			for (size_t q = 0; q < mb->n_models; q++) {
				struct cfl_pred po;

				CHECK_MSG(cfl_store_predictions(cfl_study_store(s),
								b->models[mb->models[q]].trial,
								CFL_SPLIT_OOF, &po, &err) == 0,
					  "%s", err.msg);
				CHECK(po.n_out == k && po.rows);
				for (size_t i = 0; i < po.n; i++) {
					hits[po.rows[i]]++;
					for (size_t c = 0; c < k; c++)
						one[po.rows[i] * k + c] += po.values[i * k + c];
				}
				cfl_pred_release(&po);
			}
			for (size_t i = 0; i < n; i++)
				for (size_t c = 0; c < k; c++)
					mix[(r * n + i) * k + c] +=
						w * one[i * k + c] / (double)(hits[i] ? hits[i] : 1);
			free(one);
			free(hits);
		}
		CHECK_MSG(cfl_metric_eval(m, d->train.y, mix + r * n * k, n,
					  d->train.n_classes, &score[r], &err) == 0,
			  "%s", err.msg);
		if (!strcmp(row->name, "greedy"))
			greedy = r;
	}
	CHECK_MSG(greedy < b->n_rows, "no greedy row");
	CHECK_MSG(fabs(score[greedy] - sum->rows[0].loss) <= 1e-9 * (1 + score[greedy]),
		  "greedy's score %.17g, stored %.17g", score[greedy], sum->rows[0].loss);
	for (size_t r = 0; r < b->n_rows; r++)
		if (!strcmp(b->rows[r].kind, "bag"))
			CHECK_MSG(score[greedy] <= score[r] + 1e-12, "greedy %.17g worse "
				  "than bag '%s' %.17g", score[greedy], b->rows[r].name,
				  score[r]);
	free(mix);
	free(score);
}

/* An auto run with --save on NAME (a count budget of 4 candidates: each
 * family's defaults and its first portfolio configuration, every one a
 * bag of 3 folds, in `sets` bag sets): the bundle has a row per leaderboard entry (each
 * family's best bag, mean, stacking, greedy) predicting on test what the store holds
 * for that entry, bit for bit (refit: with the bags' refits, else with
 * their fold models); its default row is the leaderboard's rank 1; each
 * row has its out-of-fold score. */
static void auto_save(const char *name, int refit, int sets)
{
	static const char *const spaces[2] = { "l2 = loguniform(1e-4, 100)\n",
					       "max_depth = int(2, 8)\n" };
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_space sp[2];
	struct cfl_err err = { "" };
	struct cfl_study *s;
	struct cfl_bundle b;
	struct cfl_study_auto_summary sum;
	char bundle[512];
	int r;

	cfl_test_split_csv(name);
	cfl_study_plan_init(&p);
	p.kind = CFL_RUN_AUTO;
	p.data.path = strdup(cfl_test_path("train.csv"));
	p.data.test_path = strdup(cfl_test_path("test.csv"));
	p.db = strdup(cfl_test_path("cfl.db"));
	p.name = "a";
	p.command_line = "cfl auto";
	p.time_limit = 1e8;	/* the count decides */
	p.autop.max_trials = 4;
	p.autop.n_models = 2;
	p.autop.models[0] = "linear";
	p.autop.models[1] = "tree";
	p.autop.folds = 3;
	p.autop.refit = refit;
	p.autop.bag_sets = sets;
	snprintf(bundle, sizeof(bundle), "%s", cfl_test_path("auto.cfl"));
	p.autop.save = bundle;
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(cfl_space_parse(&sp[i], p.autop.models[i], spaces[i],
					  strlen(spaces[i]), cfl_model_find(p.autop.models[i]),
					  &err) == 0, "%s", err.msg);
		p.autop.spaces[i] = &sp[i];
	}
	CHECK_MSG(cfl_data_load(&d, &p.data, &err) == 0, "%s", err.msg);
	p.autop.metric = d.train.n_classes ? CFL_M_ACC : CFL_M_MSE;
	s = study_started(&p, &d);
	r = cfl_study_auto(s, NULL, &err);
	CHECK_MSG(r == 0 || r == CFL_STUDY_TIME_LIMIT, "%d: %s", r, err.msg);
	CHECK_MSG(cfl_study_finish(s, NULL, NULL, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_study_save_bundle(s, bundle, &err) == 0, "%s", err.msg);
	check_rows(s, &d, bundle, &b, name);

	CHECK_MSG(cfl_study_auto_summary(cfl_study_store(s), cfl_study_run_id(s), &sum,
					 &err) == 0, "%s", err.msg);
	/* 2 bags (each family's best), mean, stacking and greedy */
	CHECK_MSG(sum.n_rows == 5, "%zu leaderboard entries", sum.n_rows);
	CHECK_INT(b.n_rows, sum.n_rows);
	CHECK(!strcmp(b.recommended, sum.rows[0].name));
	CHECK(!strcmp(b.kind, "auto"));
	CHECK(!strcmp(b.metric, d.train.n_classes ? "acc" : "mse"));
	if (refit) {
		/* 2 bags, each predicting with its refit on every training
		 * row (repeat 1, no fold); nothing of the search, and no
		 * fold model, since every refit finished */
		CHECK_INT(b.n_models, 2);
		for (size_t i = 0; i < b.n_models; i++)
			CHECK(b.models[i].fold == -1 && b.models[i].repeat == 1);
	} else {
		/* bags of 3 fold models in each set: the 2 bag rows' and
		 * those greedy picks */
		CHECK(b.n_models >= 6u * (size_t)sets && b.n_models <= 12u * (size_t)sets &&
		      b.n_models % (3u * (size_t)sets) == 0);
		for (size_t i = 0; i < b.n_models; i++)
			CHECK(b.models[i].fold == (int)(i % 3));
	}
	for (size_t i = 0; i < sum.n_rows; i++) {
		const struct cfl_bundle_row *row = cfl_bundle_find(&b, sum.rows[i].name);
		int has_oof = 0;

		CHECK_MSG(row, "no row '%s'", sum.rows[i].name);
		CHECK(!strcmp(row->kind, strcmp(sum.rows[i].method, "bag") ? "ensemble"
									   : "bag"));
		if (!strcmp(sum.rows[i].method, "greedy"))
			CHECK(row->n_members >= 1 && row->n_members <= (refit ? 2u : 4u));
		else
			CHECK_INT(row->n_members, strcmp(sum.rows[i].method, "bag") ? 2 : 1);
		for (size_t j = 0; j < row->n_scores; j++)
			if (!strcmp(row->scores[j].split, "oof") &&
			    !strcmp(row->scores[j].metric, b.metric)) {
				has_oof = 1;
				CHECK(row->scores[j].value == sum.rows[i].cv ||
				      (isnan(row->scores[j].value) && isnan(sum.rows[i].cv)));
			}
		CHECK_MSG(has_oof, "row '%s' has no oof score", row->name);
	}
	CHECK(cfl_bundle_find(&b, "stacking")->method == CFL_BUNDLE_WEIGHTED);
	CHECK(cfl_bundle_find(&b, "greedy")->method == CFL_BUNDLE_WEIGHTED);
	if (!refit)
		check_greedy_first(s, &d, &b, &sum);
	cfl_study_auto_summary_release(&sum);
	cfl_bundle_release(&b);
	cfl_study_free(s);
	for (int i = 0; i < 2; i++)
		cfl_space_release(&sp[i]);
	cfl_data_release(&d);
	free((char *)p.data.path);
	free((char *)p.data.test_path);
	free((char *)p.db);
}

static void t_auto_classification(void)
{
	auto_save("wine", 0, 1);
}

static void t_auto_regression(void)
{
	auto_save("diabetes", 0, 1);
}

static void t_auto_refit_classification(void)
{
	auto_save("wine", 1, 1);
}

static void t_auto_refit_regression(void)
{
	auto_save("diabetes", 1, 1);
}

/* bag sets: each bag's rows predict with the mean of its 3 x 2 fold
 * models what the store holds, bit for bit */
static void t_auto_bag_sets_classification(void)
{
	auto_save("wine", 0, 2);
}

static void t_auto_bag_sets_regression(void)
{
	auto_save("diabetes", 0, 2);
}

/* ---- the file's failures ---- */

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	CHECK(f && fwrite(p, 1, n, f) == n && fclose(f) == 0);
}

/* A small valid bundle written by hand: one linear model row. */
static void small_bundle(const char *path)
{
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_err err = { "" };
	struct cfl_model *m;
	struct cfl_params none;
	struct cfl_buf text;
	struct cfl_bundle b;
	struct cfl_bundle_model bm;
	struct cfl_bundle_row row;
	struct cfl_bundle_member mb;
	size_t idx = 0;

	cfl_data_opts_init(&o);
	o.path = "datasets/iris.csv";
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	cfl_params_init(&none);
	m = cfl_model_new(cfl_model_find("linear"), &none, 1, &err);
	CHECK(m);
	m->n_features = d.train.d;
	m->n_classes = d.train.n_classes;
	CHECK_MSG(cfl_model_fit(m, &d.train, NULL, &err) == 0, "%s", err.msg);
	memset(&b, 0, sizeof(b));
	b.cfl_version = "test";
	b.run = "r";
	b.kind = "repeat";
	b.dataset = "iris";
	b.dataset_sha256 = d.sha256_hex;
	b.metric = "acc";
	b.recommended = "linear";
	cfl_buf_init(&text);
	{
		struct cfl_buf e;

		cfl_buf_init(&e);
		CHECK(cfl_encoder_save(&d.enc, &e) == 0);
		b.encoder = e.data;
	}
	CHECK(cfl_model_format(m, &d.enc, &text, &err) == 0);
	bm = (struct cfl_bundle_model){ 1, "linear", 0, -1, text.data };
	mb = (struct cfl_bundle_member){ 1, &idx, NAN };
	row = (struct cfl_bundle_row){ "linear", "model", CFL_BUNDLE_ONE, 1, &mb, 0, NULL };
	b.n_models = 1;
	b.models = &bm;
	b.n_rows = 1;
	b.rows = &row;
	CHECK_MSG(cfl_bundle_write(&b, path, &err) == 0, "%s", err.msg);
	free(b.encoder);
	cfl_buf_release(&text);
	cfl_model_free(m);
	cfl_data_release(&d);
}

static void sql(const char *path, const char *q)
{
	sqlite3 *db;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK_MSG(sqlite3_exec(db, q, NULL, NULL, NULL) == SQLITE_OK, "%s",
		  sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* cfl bundle show's listing of a bundle built by hand: the default row
 * marked, weighted members, a score with its spread, an undefined score
 * left out, the models; --row keeps one row. */
static void t_format(void)
{
	size_t one = 0, two = 1;
	struct cfl_bundle_member mem[2] = { { 1, &one, 0.25 }, { 1, &two, 0.75 } };
	struct cfl_bundle_score sc[2] = { { "valid", "acc", 0.9, 0.01 },
					  { "test", "acc", NAN, 0 } };
	struct cfl_bundle_row rows[2] = {
		{ "weighted", "ensemble", CFL_BUNDLE_WEIGHTED, 2, mem, 2, sc },
		{ "linear", "model", CFL_BUNDLE_ONE, 1, mem, 0, NULL },
	};
	struct cfl_bundle_model models[2] = { { 7, "linear", 0, -1, NULL },
					      { 8, "tree", 0, -1, NULL } };
	struct cfl_bundle b;
	struct cfl_buf out;

	memset(&b, 0, sizeof(b));
	b.cfl_version = "0.1";
	b.run = "r";
	b.kind = "repeat";
	b.dataset = "d.csv";
	b.dataset_sha256 = "ab";
	b.metric = "acc";
	b.recommended = "weighted";
	b.n_models = 2;
	b.models = models;
	b.n_rows = 2;
	b.rows = rows;
	cfl_buf_init(&out);
	CHECK_INT(cfl_bundle_format(&b, NULL, &out), 0);
	CHECK_CONTAINS(out.data, "bundle of repeat run 'r' (cfl 0.1) on 'd.csv'\n");
	CHECK_CONTAINS(out.data, "default row 'weighted' (best acc on valid)");
	CHECK_CONTAINS(out.data, "* weighted         ensemble weighted 1 x0.25, 2 x0.75\n");
	CHECK_CONTAINS(out.data, " valid acc 0.9+-0.01\n");
	CHECK(strstr(out.data, "test acc") == NULL);
	CHECK_CONTAINS(out.data, "  linear           model    one      1 x0.25\n");
	CHECK_CONTAINS(out.data, "  2 8 tree 0 -1\n");
	out.len = 0;
	CHECK_INT(cfl_bundle_format(&b, "linear", &out), 0);
	CHECK(strstr(out.data, "* weighted") == NULL);
	CHECK_CONTAINS(out.data, "  linear ");
	cfl_buf_release(&out);
}

static void t_bad_files(void)
{
	const char *good = strdup(cfl_test_path("good.cfl"));
	const char *bad = strdup(cfl_test_path("bad.cfl"));
	struct cfl_bundle b;
	struct cfl_err err = { "" };
	struct cfl_buf all;

	small_bundle(good);
	CHECK_MSG(cfl_bundle_load(good, &b, &err) == 0, "%s", err.msg);
	CHECK_INT(b.n_rows, 1);
	CHECK(cfl_bundle_find(&b, "linear") && !cfl_bundle_find(&b, "fcnn"));
	cfl_bundle_release(&b);

	/* truncated: half the file */
	cfl_buf_init(&all);
	CHECK(cfl_buf_read_file(&all, good, &err) == 0);
	write_bytes(bad, all.data, all.len / 2);
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "bad.cfl");
	/* only the SQLite header */
	write_bytes(bad, all.data, 100);
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "bad.cfl");
	cfl_buf_release(&all);

	/* a model file, a text file */
	write_bytes(bad, "cfl-model 1\n", 12);
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "not a cfl bundle");
	/* a foreign SQLite file */
	unlink(bad);
	sql(bad, "CREATE TABLE t (x); INSERT INTO t VALUES (1);");
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "not a cfl bundle");
	/* a newer format, a member naming a missing model, a bad weight */
	unlink(bad);
	small_bundle(bad);
	sql(bad, "UPDATE meta SET value = '9' WHERE key = 'version'");
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "version 9");
	small_bundle(bad);
	sql(bad, "UPDATE members SET models = '1+7'");
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "not there");
	small_bundle(bad);
	sql(bad, "UPDATE rows SET method = 'weighted'");
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "without a weight");
	/* a model text cut short */
	small_bundle(bad);
	sql(bad, "UPDATE models SET text = substr(text, 1, length(text) / 2)");
	CHECK(cfl_bundle_load(bad, &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "bad.cfl");
	free((char *)good);
	free((char *)bad);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_format),
	TEST_T(t_classification, 240),
	TEST_T(t_classification_folds, 240),
	TEST_T(t_classification_bootstrap, 240),
	TEST_T(t_regression, 240),
	TEST_T(t_regression_folds_bootstrap, 240),
	TEST_T(t_tune_refit, 240),
	TEST_T(t_auto_classification, 120),
	TEST_T(t_auto_regression, 120),
	TEST_T(t_auto_refit_classification, 120),
	TEST_T(t_auto_refit_regression, 120),
	TEST_T(t_auto_bag_sets_classification, 120),
	TEST_T(t_auto_bag_sets_regression, 120),
	TEST(t_bad_files),
	{ 0 }
};
