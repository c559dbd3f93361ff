/* Unit tests of the ensembles step of `cfl repeat` (cfl/study.h, ensembles
 * from the store): trials of real models on a small dataset are stored as
 * cmd_repeat stores them, then the step builds, stores and shows the
 * ensembles.  Checked: one row per ensemble with std 0, folds grouped into
 * members with out-of-fold stacking, a resumed step keeps what exists, vote
 * refused for regressions, bad shapes refused, and changing the test labels
 * leaves every stored ensemble prediction unchanged. */
#include "runner.h"

#include "cfl/study.h"

#include "cfl/model.h"
#include "cfl/report.h"

struct sim {
	char dir[64], path[96];
	struct cfl_store *st;
	struct cfl_data d;
	int64_t run;
	enum cfl_metric_id metrics[4];
	size_t n_metrics;
};

/* Loads csv, opens a fresh database, stores one trial per (model, repeat,
 * fold) with metrics and predictions on valid and test (and OOF with
 * folds).  models: "linear" (l2 varies by repeat) and "baseline". */
static void sim_run(struct sim *s, const char *csv, int n_repeat, int n_folds,
		    int flip_test_labels)
{
	static const char *const models[2] = { "linear", "baseline" };
	struct cfl_data_opts o;
	struct cfl_err err = { "" };
	struct cfl_run_info info = { 0 };
	size_t k, *fold;

	memset(s, 0, sizeof(*s));
	strcpy(s->dir, "/tmp/cfl-repens-XXXXXX");
	CHECK(mkdtemp(s->dir) != NULL);
	snprintf(s->path, sizeof(s->path), "%s/cfl.db", s->dir);
	cfl_data_opts_init(&o);
	o.path = csv;
	o.seed = 1;
	CHECK_MSG(cfl_data_load(&s->d, &o, &err) == 0, "%s", err.msg);
	if (flip_test_labels)	/* labels the ensembles must not learn from */
		for (size_t i = 0; i < s->d.test.n; i++)
			s->d.test.y[i] = s->d.test.n_classes
				? (double)(((int)s->d.test.y[i] + 1) % s->d.test.n_classes)
				: -s->d.test.y[i];
	s->st = cfl_store_open(s->path, CFL_STORE_CREATE, &err);
	CHECK_MSG(s->st, "%s", err.msg);
	info.name = "sim";
	CHECK(cfl_store_run_create(s->st, &info, &s->run, &err) == 0);
	s->n_metrics = cfl_metric_defaults(s->d.valid.n_classes, s->metrics, 4);
	k = s->d.valid.n_classes ? (size_t)s->d.valid.n_classes : 1;
	fold = calloc(s->d.train.n + 1, sizeof(size_t));
	CHECK(fold);
	if (n_folds)
		CHECK(cfl_split_kfold(fold, s->d.train.y, s->d.train.n,
				      s->d.train.n_classes, (size_t)n_folds, 5,
				      &err) == 0);
	for (int mi = 0; mi < 2; mi++) {
		int64_t cand;

		CHECK(cfl_store_candidate_get_or_add(s->st, s->run, models[mi], NULL,
						     &cand, NULL, &err) == 0);
		for (int r = 0; r < n_repeat; r++)
			for (int f = n_folds ? 0 : -1; f < n_folds; f++) {
				struct cfl_params p;
				struct cfl_model *m;
				struct cfl_xy tr, oo;
				size_t *idx = calloc(s->d.train.n, sizeof(size_t));
				size_t *oidx = calloc(s->d.train.n, sizeof(size_t));
				uint32_t *rows = calloc(s->d.train.n, sizeof(uint32_t));
				double *pv = calloc(s->d.valid.n * k, sizeof(double));
				double *pt = calloc(s->d.test.n * k, sizeof(double));
				double *po = calloc(s->d.train.n * k, sizeof(double));
				struct cfl_metric_value mv[4], mt[4];
				struct cfl_trial_result res;
				struct cfl_trial_state ts;
				size_t n = 0, no = 0;
				char l2[32];

				CHECK(idx && oidx && rows && pv && pt && po);
				cfl_params_init(&p);
				snprintf(l2, sizeof(l2), "l2=%g", 0.3 * (r + 1) * (r + 1));
				if (mi == 0)
					CHECK(cfl_params_set_arg(&p, l2, &err) == 0);
				m = cfl_model_new(cfl_model_find(models[mi]), &p,
						  (uint64_t)r, &err);
				CHECK_MSG(m, "%s", err.msg);
				cfl_params_release(&p);
				for (size_t i = 0; i < s->d.train.n; i++)
					if (f < 0 || fold[i] != (size_t)f)
						idx[n++] = i;
					else {
						rows[no] = (uint32_t)i;
						oidx[no++] = i;
					}
				cfl_xy_init(&tr);
				cfl_xy_init(&oo);
				CHECK(cfl_xy_take(&tr, &s->d.train, idx, n, &err) == 0);
				CHECK_MSG(cfl_model_fit(m, &tr, &s->d.valid, &err) == 0,
					  "%s", err.msg);
				CHECK(cfl_model_predict(m, s->d.valid.x, s->d.valid.n, pv,
							&err) == 0);
				CHECK(cfl_model_predict(m, s->d.test.x, s->d.test.n, pt,
							&err) == 0);
				for (size_t j = 0; j < s->n_metrics; j++) {
					const char *name = cfl_metric_info(s->metrics[j])->name;

					mv[j].name = mt[j].name = name;
					CHECK(cfl_metric_eval(s->metrics[j], s->d.valid.y, pv,
							      s->d.valid.n, s->d.valid.n_classes,
							      &mv[j].value, &err) == 0);
					CHECK(cfl_metric_eval(s->metrics[j], s->d.test.y, pt,
							      s->d.test.n, s->d.test.n_classes,
							      &mt[j].value, &err) == 0);
				}
				memset(&res, 0, sizeof(res));
				res.split[CFL_SPLIT_VALID] = (struct cfl_split_result){
					s->n_metrics, mv, s->d.valid.n, k, pv, NULL };
				res.split[CFL_SPLIT_TEST] = (struct cfl_split_result){
					s->n_metrics, mt, s->d.test.n, k, pt, NULL };
				if (f >= 0) {
					CHECK(cfl_xy_take(&oo, &s->d.train, oidx, no, &err) == 0);
					CHECK(cfl_model_predict(m, oo.x, no, po, &err) == 0);
					res.split[CFL_SPLIT_OOF] = (struct cfl_split_result){
						0, NULL, no, k, po, rows };
				}
				CHECK(cfl_store_trial_ensure(s->st, s->run, cand, r, f,
							     (uint64_t)r, &ts, &err) == 0);
				CHECK_MSG(cfl_store_trial_done(s->st, ts.id, 1, &res, &err) == 0,
					  "%s", err.msg);
				cfl_model_free(m);
				cfl_xy_release(&tr);
				cfl_xy_release(&oo);
				free(idx);
				free(oidx);
				free(rows);
				free(pv);
				free(pt);
				free(po);
			}
	}
	free(fold);
}

static void sim_end(struct sim *s)
{
	char cmd[128];

	cfl_store_close(s->st);
	cfl_data_release(&s->d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	CHECK(system(cmd) == 0);
}

static void step(struct sim *s, const char *list)
{
	struct cfl_err err = { "" };
	unsigned mask;

	CHECK(cfl_ensemble_parse_list(list, &mask, &err) == 0);
	CHECK_MSG(cfl_study_ensembles(s->st, s->run, &s->d, s->metrics, s->n_metrics,
				   mask, NULL, &err) == 0, "%s", err.msg);
}

/* A listener that keeps the NOTE texts, one a line. */
static void keep_notes(const struct cfl_study_event *ev, void *ctx)
{
	if (ev->kind == CFL_STUDY_NOTE)
		cfl_buf_printf(ctx, "%s\n", ev->text);
}

/* The ensemble named name's id, from the run's test metrics (0: none). */
static int64_t ens_id(struct sim *s, const char *name)
{
	struct cfl_metric_row *rows;
	struct cfl_err err;
	size_t n;
	int64_t id = 0;

	CHECK(cfl_store_run_metrics(s->st, s->run, CFL_SPLIT_TEST, &rows, &n,
				    &err) == 0);
	for (size_t i = 0; i < n && !id; i++)
		if (rows[i].ensemble_id && strcmp(rows[i].model, name) == 0)
			id = rows[i].ensemble_id;
	free(rows);
	return id;
}

static void ens_pred(struct sim *s, const char *name, enum cfl_store_split sp,
		     struct cfl_pred *p)
{
	struct cfl_err err;
	int64_t id = ens_id(s, name);

	CHECK_MSG(id > 0, "no ensemble '%s'", name);
	CHECK(cfl_store_ensemble_predictions(s->st, id, sp, p, &err) == 0);
}

static void t_rows_in_the_table(void)
{
	struct sim s;
	struct cfl_table t;
	struct cfl_err err;
	static const char *const want[] = { "linear", "baseline", "mean", "vote",
					    "weighted", "stacking", "greedy" };

	sim_run(&s, "datasets/iris.csv", 3, 0, 0);
	step(&s, "mean,vote,weighted,stacking,greedy");
	cfl_table_init(&t);
	CHECK(cfl_table_from_run(&t, s.st, s.run, CFL_SPLIT_TEST,
				 CFL_ROWS_BY_MODEL, &err) == 0);
	cfl_table_compute(&t);
	CHECK_INT(t.n_rows, 7);
	for (size_t r = 0; r < 7; r++) {
		CHECK_STR(t.rows[r].name, want[r]);
		if (r >= 2) {
			CHECK_INT(t.rows[r].n_values[0], 1);
			CHECK(t.rows[r].std[0] == 0);
			CHECK(t.rows[r].mean[0] > 0.5);
		}
	}
	CHECK_INT(t.rows[0].n_values[0], 3);
	cfl_table_release(&t);
	/* the mean's stored test predictions are the members' average: rows
	 * sum to 1 */
	{
		struct cfl_pred p;

		ens_pred(&s, "mean", CFL_SPLIT_TEST, &p);
		CHECK_INT(p.n, s.d.test.n);
		CHECK_INT(p.n_out, 3);
		for (size_t i = 0; i < p.n; i++)
			CHECK_NEAR(p.values[3 * i] + p.values[3 * i + 1] +
					   p.values[3 * i + 2], 1, 1e-9);
		cfl_pred_release(&p);
	}
	/* a resumed run: the step again keeps what exists, adds nothing */
	step(&s, "mean,stacking");
	cfl_table_init(&t);
	CHECK(cfl_table_from_run(&t, s.st, s.run, CFL_SPLIT_TEST,
				 CFL_ROWS_BY_MODEL, &err) == 0);
	CHECK_INT(t.n_rows, 7);
	CHECK_INT(t.rows[2].n_values[0], 1);
	cfl_table_release(&t);
	sim_end(&s);
}

/* Every stored ensemble prediction is the same whatever the test labels;
 * the test metrics are not. */
static void t_test_labels_change_nothing_but_scores(void)
{
	static const char *const names[] = { "mean", "weighted", "stacking", "greedy" };
	struct sim a, b;

	sim_run(&a, "datasets/iris.csv", 2, 0, 0);
	sim_run(&b, "datasets/iris.csv", 2, 0, 1);
	step(&a, "mean,weighted,stacking,greedy");
	step(&b, "mean,weighted,stacking,greedy");
	for (int i = 0; i < 4; i++) {
		struct cfl_pred pa, pb;

		for (int sp = CFL_SPLIT_VALID; sp <= CFL_SPLIT_TEST; sp++) {
			ens_pred(&a, names[i], sp, &pa);
			ens_pred(&b, names[i], sp, &pb);
			CHECK(pa.n == pb.n && pa.n_out == pb.n_out);
			CHECK_MSG(memcmp(pa.values, pb.values,
					 pa.n * pa.n_out * sizeof(double)) == 0,
				  "%s's predictions moved with the test labels",
				  names[i]);
			cfl_pred_release(&pa);
			cfl_pred_release(&pb);
		}
	}
	{
		struct cfl_table ta, tb;
		struct cfl_err err;

		cfl_table_init(&ta);
		cfl_table_init(&tb);
		CHECK(cfl_table_from_run(&ta, a.st, a.run, CFL_SPLIT_TEST,
					 CFL_ROWS_BY_MODEL, &err) == 0);
		CHECK(cfl_table_from_run(&tb, b.st, b.run, CFL_SPLIT_TEST,
					 CFL_ROWS_BY_MODEL, &err) == 0);
		cfl_table_compute(&ta);
		cfl_table_compute(&tb);
		/* the stacking row (5th) scores differently */
		CHECK_STR(ta.rows[4].name, "stacking");
		CHECK(ta.rows[4].mean[0] != tb.rows[4].mean[0]);
		cfl_table_release(&ta);
		cfl_table_release(&tb);
	}
	sim_end(&a);
	sim_end(&b);
}

/* With folds: one member per (model, repeat), stacking on OOF rows. */
static void t_folds_stack_on_oof(void)
{
	struct sim s;
	struct cfl_table t;
	struct cfl_err err;
	struct cfl_pred p;

	sim_run(&s, "datasets/iris.csv", 2, 3, 0);
	step(&s, "mean,stacking");
	CHECK(ens_id(&s, "stacking") > 0);
	/* the members column says where the meta-learner learnt */
	{
		char q[256];
		FILE *f;
		char line[512] = "";

		snprintf(q, sizeof(q), "sqlite3 '%s' \"SELECT members FROM ensembles "
			 "WHERE name='stacking'\" 2>/dev/null", s.path);
		f = popen(q, "r");
		if (f && fgets(line, sizeof(line), f) && line[0]) {
			CHECK_CONTAINS(line, "oof rows");
			/* 2 models x 2 repeats, each member 3 folds */
			CHECK_CONTAINS(line, "trials 1+2+3,4+5+6,7+8+9,10+11+12;");
		}
		if (f)
			pclose(f);
	}
	ens_pred(&s, "stacking", CFL_SPLIT_TEST, &p);
	CHECK_INT(p.n, s.d.test.n);
	cfl_pred_release(&p);
	cfl_table_init(&t);
	CHECK(cfl_table_from_run(&t, s.st, s.run, CFL_SPLIT_TEST,
				 CFL_ROWS_BY_MODEL, &err) == 0);
	CHECK_INT(t.n_rows, 4);
	CHECK_INT(t.rows[0].n_values[0], 6);	/* every fold trial */
	cfl_table_release(&t);
	sim_end(&s);
}

static void t_regression_and_errors(void)
{
	struct sim s;
	struct cfl_err err = { "" };
	unsigned mask;

	sim_run(&s, "datasets/diabetes.csv", 2, 0, 0);
	CHECK(cfl_ensemble_parse_list("vote,mean", &mask, &err) == 0);
	CHECK(cfl_study_check_ensembles(mask, 0, &err) == -1);
	CHECK_CONTAINS(err.msg, "needs classification");
	CHECK(cfl_study_check_ensembles(mask, 3, &err) == 0);
	/* asked anyway: vote is skipped (the listener is told why), mean
	 * stored */
	{
		struct cfl_buf notes;
		struct cfl_study_listener ls = { keep_notes, &notes };

		cfl_buf_init(&notes);
		CHECK(cfl_ensemble_parse_list("vote,mean,stacking", &mask, &err) == 0);
		CHECK_MSG(cfl_study_ensembles(s.st, s.run, &s.d, s.metrics, s.n_metrics,
					      mask, &ls, &err) == 0, "%s", err.msg);
		CHECK_MSG(notes.data && strstr(notes.data, "vote") &&
			  strstr(notes.data, "; skipped\n") &&
			  !strchr(strchr(notes.data, '\n') + 1, '\n'),
			  "notes: %s", notes.data ? notes.data : "(none)");
		cfl_buf_release(&notes);
	}
	CHECK(ens_id(&s, "vote") == 0);
	CHECK(ens_id(&s, "mean") > 0);
	CHECK(ens_id(&s, "stacking") > 0);
	/* stored predictions that do not match the data are as none (a
	 * stored row never makes the ensembles fail): no member, no
	 * ensemble */
	s.d.valid.n -= 1;
	CHECK_MSG(cfl_study_ensembles(s.st, s.run, &s.d, s.metrics, s.n_metrics,
				      1u << CFL_ENS_WEIGHTED, NULL, &err) == 0, "%s", err.msg);
	CHECK(ens_id(&s, "weighted") == 0);
	s.d.valid.n += 1;
	/* no method: nothing to do */
	CHECK(cfl_study_ensembles(s.st, s.run, &s.d, s.metrics, s.n_metrics, 0, NULL,
			       &err) == 0);
	sim_end(&s);
}

/* The entry point cmd_repeat calls: default list, "none", bad names. */
static void t_for_run_defaults(void)
{
	struct sim s;
	struct cfl_err err = { "" };

	sim_run(&s, "datasets/iris.csv", 2, 0, 0);
	CHECK(cfl_study_ensembles_for_run(s.st, s.run, &s.d, "bogus", NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown ensemble 'bogus'");
	CHECK(cfl_study_ensembles_for_run(s.st, s.run, &s.d, "none", NULL, &err) == 0);
	CHECK(ens_id(&s, "mean") == 0);
	CHECK_MSG(cfl_study_ensembles_for_run(s.st, s.run, &s.d, NULL, NULL, &err) == 0, "%s",
		  err.msg);
	CHECK(ens_id(&s, "mean") > 0);
	/* no folds: the default fits nothing on validation rows */
	CHECK(ens_id(&s, "stacking") == 0);
	CHECK(ens_id(&s, "greedy") == 0);
	sim_end(&s);
	/* with folds the default stacks on out-of-fold predictions */
	sim_run(&s, "datasets/iris.csv", 2, 3, 0);
	CHECK_MSG(cfl_study_ensembles_for_run(s.st, s.run, &s.d, NULL, NULL, &err) == 0, "%s",
		  err.msg);
	CHECK(ens_id(&s, "mean") > 0);
	CHECK(ens_id(&s, "stacking") > 0);
	sim_end(&s);
	/* regression: vote refused before anything is built */
	sim_run(&s, "datasets/diabetes.csv", 1, 0, 0);
	CHECK(cfl_study_ensembles_for_run(s.st, s.run, &s.d, "vote", NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "needs classification");
	sim_end(&s);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_for_run_defaults),
	TEST(t_rows_in_the_table),
	TEST(t_test_labels_change_nothing_but_scores),
	TEST(t_folds_stack_on_oof),
	TEST(t_regression_and_errors),
	{ 0 }
};
