/* Unit tests of auto's finish against its deadline (issue 33: end within
 * the limit, not a pessimistic reserve before it): with a deadline
 * greedy (the first entry) comes right after the bags, its rounds stop
 * at the deadline and its members text says after how many, which the
 * bundle builds it again with (bit for bit); stacking and mean are not
 * built when they would not end in time, and the run says so.  A run
 * with a count budget stores its entries in the order it always did.
 * The deadline is injected (one passed, one far away): nothing here is
 * timed. */
#include "runner.h"

#include "../../src/study/internal.h"
#include "cfl/bundle.h"
#include "cfl/ensemble.h"
#include "cfl/model.h"
#include "cfl/store.h"
#include "cfl/study.h"

struct notes {
	char text[4096];
};

static void on_event(const struct cfl_study_event *ev, void *ctx)
{
	struct notes *n = ctx;
	size_t len = strlen(n->text);

	if (ev->kind == CFL_STUDY_NOTE && ev->text)
		snprintf(n->text + len, sizeof(n->text) - len, "%s\n", ev->text);
}

static char bundle_path[512];
static struct cfl_space spaces[2];

/* An auto run of breast_cancer's train.csv with --save (a count budget of
 * 4 candidates of linear and tree, every one a bag of 3 folds: 4 bags for
 * greedy), finished, its entries then deleted: the study, for the test to
 * build them again. */
static struct cfl_study *auto_done(struct cfl_study_plan *p, struct cfl_data *d)
{
	static const char *const text[2] = { "l2 = loguniform(1e-4, 100)\n",
					     "max_depth = int(2, 8)\n" };
	struct cfl_err err = { "" };
	struct cfl_pool_opts exec;
	struct cfl_study *s;
	int r;

	cfl_test_split_csv("breast_cancer");
	cfl_study_plan_init(p);
	p->kind = CFL_RUN_AUTO;
	p->data.path = strdup(cfl_test_path("train.csv"));
	p->data.test_path = strdup(cfl_test_path("test.csv"));
	p->db = strdup(cfl_test_path("cfl.db"));
	p->name = "a";
	p->command_line = "cfl auto";
	p->time_limit = 1e8;	/* the count decides */
	p->autop.max_trials = 4;
	p->autop.n_models = 2;
	p->autop.models[0] = "linear";
	p->autop.models[1] = "tree";
	p->autop.folds = 3;
	p->autop.bag_sets = 1;
	snprintf(bundle_path, sizeof(bundle_path), "%s", cfl_test_path("auto.cfl"));
	p->autop.save = bundle_path;
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(cfl_space_parse(&spaces[i], p->autop.models[i], text[i],
					  strlen(text[i]), cfl_model_find(p->autop.models[i]),
					  &err) == 0, "%s", err.msg);
		p->autop.spaces[i] = &spaces[i];
	}
	CHECK_MSG(cfl_data_load(d, &p->data, &err) == 0, "%s", err.msg);
	p->autop.metric = CFL_M_ACC;
	CHECK_MSG(cfl_study_check(p, d, &err) == 0, "%s", err.msg);
	s = cfl_study_open(p, d, &err);
	CHECK_MSG(s, "%s", err.msg);
	cfl_pool_opts_init(&exec);
	exec.n_local = 2;
	CHECK_MSG(cfl_study_start(s, &exec, &err) == 0, "%s", err.msg);
	r = cfl_study_auto(s, NULL, &err);
	CHECK_MSG(r == 0, "%d: %s", r, err.msg);
	CHECK_MSG(cfl_study_finish(s, NULL, NULL, &err) == 0, "%s", err.msg);
	return s;
}

/* The stored entries' methods in the order stored, space-separated, and
 * greedy's members text into greedy (cap bytes). */
static void entries(struct cfl_study *s, char *methods, size_t cap_m, char *greedy,
		    size_t cap, int64_t *greedy_id)
{
	struct cfl_ensemble_row *ens = NULL;
	size_t n = 0, len = 0;
	struct cfl_err err = { "" };

	*methods = *greedy = 0;
	*greedy_id = 0;
	CHECK_MSG(cfl_store_ensembles(cfl_study_store(s), cfl_study_run_id(s), &ens, &n,
				      &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		snprintf(methods + len, cap_m - len, "%s%s", len ? " " : "", ens[i].method);
		len = strlen(methods);
		if (!strcmp(ens[i].method, "greedy")) {
			snprintf(greedy, cap, "%s", ens[i].members);
			*greedy_id = ens[i].id;
		}
	}
	cfl_ensemble_rows_free(ens, n);
}

/* The run's entries deleted and built again under deadline, its notes
 * into n; then the stored entries, as entries() reads them. */
static void rebuild(struct cfl_study *s, const struct cfl_data *d, double deadline,
		    struct notes *n, char *methods, size_t cap_m, char *greedy, size_t cap,
		    int64_t *greedy_id)
{
	struct cfl_study_listener ls = { on_event, n };
	struct cfl_err err = { "" };

	CHECK(cfl_store_ensembles_delete(cfl_study_store(s), cfl_study_run_id(s), &err) == 0);
	CHECK_MSG(cfl_study_auto_ensembles(cfl_study_store(s), cfl_study_run_id(s), d,
					   s->metrics, s->n_metrics, deadline, &ls, &err) == 0,
		  "%s", err.msg);
	entries(s, methods, cap_m, greedy, cap, greedy_id);
}

/* The bundle's greedy row predicts on the test part what the store holds
 * for greedy, bit for bit. */
static void greedy_predicts_as_stored(struct cfl_study *s, const struct cfl_data *d,
				      int64_t greedy_id)
{
	struct cfl_err err = { "" };
	struct cfl_bundle b;
	struct cfl_pred pt;
	const struct cfl_bundle_row *row;
	double *got;
	size_t len = d->test.n * (size_t)d->train.n_classes;

	CHECK_MSG(cfl_study_save_bundle(s, bundle_path, &err) == 0, "%s", err.msg);
	CHECK_MSG(cfl_bundle_load(bundle_path, &b, &err) == 0, "%s", err.msg);
	row = cfl_bundle_find(&b, "greedy");
	CHECK_MSG(row, "no greedy row in the bundle");
	CHECK(!strcmp(b.recommended, "greedy"));
	got = calloc(len, sizeof(double));
	CHECK(got != NULL);
	CHECK_MSG(cfl_bundle_predict(&b, row, d->test.x, d->test.n, got, &err) == 0, "%s",
		  err.msg);
	memset(&pt, 0, sizeof(pt));
	CHECK(cfl_store_ensemble_predictions(cfl_study_store(s), greedy_id, CFL_SPLIT_TEST,
					     &pt, &err) == 0);
	CHECK_INT(pt.n, d->test.n);
	CHECK(!memcmp(pt.values, got, len * sizeof(double)));
	cfl_pred_release(&pt);
	free(got);
	cfl_bundle_release(&b);
}

static void done(struct cfl_study *s, struct cfl_study_plan *p, struct cfl_data *d)
{
	cfl_study_free(s);
	cfl_data_release(d);
	for (int i = 0; i < 2; i++)
		cfl_space_release(&spaces[i]);
	free((char *)p->data.path);
	free((char *)p->data.test_path);
	free((char *)p->db);
}

/* A count budget (no deadline): mean and stacking before greedy, all of
 * greedy's rounds, no note of a deadline. */
static void t_no_deadline_as_before(void)
{
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_study *s = auto_done(&p, &d);
	char methods[256], greedy[1024];
	int64_t gid;

	entries(s, methods, sizeof(methods), greedy, sizeof(greedy), &gid);
	CHECK_MSG(!strcmp(methods, "bag bag mean stacking greedy"), "%s", methods);
	CHECK_MSG(!strstr(greedy, STUDY_GREEDY_CUT), "%s", greedy);
	greedy_predicts_as_stored(s, &d, gid);
	done(s, &p, &d);
}

/* A deadline already passed: the bags (the leaderboard cannot do without
 * them), then greedy's first round alone, said in its members text and in
 * a note; stacking and mean not built, said in a note.  The bundle builds
 * greedy again with its one round: its predictions are the stored ones. */
static void t_deadline_passed_cuts_the_finish(void)
{
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_study *s = auto_done(&p, &d);
	struct notes n = { "" };
	char methods[256], greedy[1024];
	int64_t gid;

	rebuild(s, &d, cfl_now() - 1, &n, methods, sizeof(methods), greedy, sizeof(greedy), &gid);
	CHECK_MSG(!strcmp(methods, "bag bag greedy"), "%s", methods);
	CHECK_MSG(strstr(greedy, "; " STUDY_GREEDY_CUT "1 of 25 rounds"), "%s", greedy);
	/* one round: one bag, weight 1 */
	CHECK_MSG(strstr(greedy, "weights 1;") && !strchr(greedy, ','), "%s", greedy);
	CHECK_MSG(strstr(n.text, "greedy: " STUDY_GREEDY_CUT "1 of 25 rounds\n"), "%s",
		  n.text);
	CHECK_MSG(strstr(n.text, "s past the limit; stacking, mean left out\n"), "%s",
		  n.text);
	greedy_predicts_as_stored(s, &d, gid);
	done(s, &p, &d);
}

/* A deadline far away: greedy first after the bags, all its rounds, then
 * stacking and mean; the note says how long the entries took. */
static void t_deadline_far_builds_all(void)
{
	struct cfl_study_plan p;
	struct cfl_data d;
	struct cfl_study *s = auto_done(&p, &d);
	struct notes n = { "" };
	char methods[256], greedy[1024];
	int64_t gid;

	rebuild(s, &d, cfl_now() + 1e6, &n, methods, sizeof(methods), greedy, sizeof(greedy), &gid);
	CHECK_MSG(!strcmp(methods, "bag bag greedy stacking mean"), "%s", methods);
	CHECK_MSG(!strstr(greedy, STUDY_GREEDY_CUT), "%s", greedy);
	CHECK_MSG(strstr(n.text, "the ensembles took ") &&
		  strstr(n.text, "s before the limit\n") && !strstr(n.text, "left out"),
		  "%s", n.text);
	greedy_predicts_as_stored(s, &d, gid);
	done(s, &p, &d);
}

/* in: greedy's input over the n members m, their predictions on the same
 * rows (n_rows of them, targets y) for validation, test and out of fold,
 * selected out of fold by metric; n_classes 0: a regression (one output),
 * else that many outputs. */
static void greedy_input(struct cfl_ens_input *in, struct cfl_ens_member *m, size_t n,
			 const double *y, size_t n_rows, int n_classes,
			 const enum cfl_metric_id *metric)
{
	memset(in, 0, sizeof(*in));
	in->n_members = n;
	in->members = m;
	in->n_out = n_classes > 0 ? (size_t)n_classes : 1;
	in->n_classes = n_classes;
	in->n_valid = in->n_test = in->n_train = n_rows;
	in->y_valid = in->y_test = in->y_train = y;
	in->n_metrics = 1;
	in->metrics = metric;
	in->greedy_rounds = CFL_ENS_DEFAULT_GREEDY_ROUNDS;
	in->select_on_oof = 1;
}

/* src/ensemble's greedy: a deadline passed runs one round (out.rounds),
 * none runs them all; built again with out.rounds rounds and no deadline,
 * the same weights. */
static void t_greedy_rounds_stop_at_deadline(void)
{
	double y[6] = { 0, 1, 1, 0, 1, 0 }, a[12], b[12], c[12];
	struct cfl_ens_member m[3] = { { a, a, a }, { b, b, b }, { c, c, c } };
	enum cfl_metric_id ll = CFL_M_LOGLOSS;
	struct cfl_ens_input in;
	struct cfl_ens_output o1, o2, o3;
	struct cfl_err err = { "" };

	for (int i = 0; i < 6; i++) {
		int t = (int)y[i];

		a[2 * i + t] = 0.6, a[2 * i + 1 - t] = 0.4;
		b[2 * i + t] = i % 2 ? 0.9 : 0.3, b[2 * i + 1 - t] = 1 - b[2 * i + t];
		c[2 * i + t] = i % 3 ? 0.8 : 0.45, c[2 * i + 1 - t] = 1 - c[2 * i + t];
	}
	greedy_input(&in, m, 3, y, 6, 2, &ll);
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &o1, &err) == 0, "%s", err.msg);
	CHECK_INT(o1.rounds, CFL_ENS_DEFAULT_GREEDY_ROUNDS);
	in.deadline = cfl_now() - 1;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &o2, &err) == 0, "%s", err.msg);
	CHECK_INT(o2.rounds, 1);
	in.deadline = 0;
	in.greedy_rounds = o2.rounds;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &o3, &err) == 0, "%s", err.msg);
	CHECK(!memcmp(o2.weights, o3.weights, 3 * sizeof(double)));
	CHECK(!memcmp(o2.test, o3.test, 12 * sizeof(double)));
	cfl_ens_output_release(&o1);
	cfl_ens_output_release(&o2);
	cfl_ens_output_release(&o3);
}

/* study_greedy_build: greedy over three members (a regression by MSE)
 * whose best is at round 11 of 25 (7 picks of a, 4 of c), b picked in a
 * later round.  Built again over a and c with all 25 rounds, the picks
 * after round 11 go another way, to another best (16 and 9 of 25): so
 * it is built again with 11, and keeps greedy's weights over all three,
 * its members text saying at which round. */
static void t_greedy_kept_at_its_best_round(void)
{
	double y[6] = { 1, 1, 0, 0, 1, 1 };
	double a[6] = { 4, 2, 0, 1, 3, 1 }, b[6] = { 0, 0, -1, 2, 4, 4 };
	double c[6] = { -2, -2, -3, -3, -1, 2 };
	struct cfl_ens_member m[3] = { { a, a, a }, { b, b, b }, { c, c, c } };
	enum cfl_metric_id mse = CFL_M_MSE;
	struct cfl_ens_input in;
	struct cfl_ens_output all, o;
	struct cfl_err err = { "" };
	char cut[80], best[80];
	size_t keep[3];

	greedy_input(&in, m, 3, y, 6, 0, &mse);
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &all, &err) == 0, "%s", err.msg);
	CHECK_INT(all.best_round, 11);
	CHECK(fabs(all.weights[0] - 7.0 / 11) < 1e-12 && all.weights[1] == 0 &&
	      fabs(all.weights[2] - 4.0 / 11) < 1e-12);
	/* what all 25 rounds over a and c alone give: not greedy's weights */
	m[1] = m[2];
	in.n_members = 2;
	CHECK_MSG(cfl_ensemble_build(CFL_ENS_GREEDY, &in, &o, &err) == 0, "%s", err.msg);
	CHECK_MSG(o.best_round == 25 && fabs(o.weights[0] - 16.0 / 25) < 1e-12, "%zu %g",
		  o.best_round, o.weights[0]);
	cfl_ens_output_release(&o);
	m[1] = (struct cfl_ens_member){ b, b, b };
	in.n_members = 3;
	CHECK_MSG(study_greedy_build(&in, m, keep, &o, cut, best, sizeof(cut), &err) == 0,
		  "%s", err.msg);
	CHECK_INT(in.n_members, 2);
	CHECK(keep[0] == 0 && keep[1] == 2 && in.members[1].test == c);
	CHECK_INT(in.greedy_rounds, 11);
	CHECK(o.weights[0] == all.weights[0] && o.weights[1] == all.weights[2]);
	CHECK_MSG(!strcmp(best, STUDY_GREEDY_BEST "11 of 25") && !*cut, "%s|%s", best, cut);
	for (int i = 0; i < 6; i++)
		CHECK(fabs(o.test[i] - all.test[i]) < 1e-12);
	cfl_ens_output_release(&o);
	cfl_ens_output_release(&all);
}

/* The rounds the bundle builds greedy again with, from its members text:
 * its best round's, else those the time limit let it run, else all. */
static void t_greedy_rounds_from_members_text(void)
{
	CHECK_INT(study_greedy_rounds("trials 1+2,3+4; weights 0.5,0.5", 25), 25);
	CHECK_INT(study_greedy_rounds("trials 1+2,3+4; weights 0.5,0.5; "
				      STUDY_GREEDY_BEST "16 of 25", 25), 16);
	CHECK_INT(study_greedy_rounds("trials 1+2; weights 1; " STUDY_GREEDY_CUT
				      "7 of 25 rounds", 25), 7);
	CHECK_INT(study_greedy_rounds("trials 1+2; weights 1; " STUDY_GREEDY_CUT
				      "7 of 25 rounds; " STUDY_GREEDY_BEST "5 of 25", 25), 5);
	/* nothing to cut: none, 0, or not below the rounds */
	CHECK_INT(study_greedy_rounds("weights 1; " STUDY_GREEDY_BEST "0 of 25", 25), 25);
	CHECK_INT(study_greedy_rounds("weights 1; " STUDY_GREEDY_BEST "30 of 25", 25), 25);
	CHECK_INT(study_greedy_rounds("weights 1; " STUDY_GREEDY_BEST "x", 25), 25);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_greedy_rounds_from_members_text),
	TEST(t_greedy_rounds_stop_at_deadline),
	TEST(t_greedy_kept_at_its_best_round),
	TEST_T(t_no_deadline_as_before, 120),
	TEST_T(t_deadline_passed_cuts_the_finish, 120),
	TEST_T(t_deadline_far_builds_all, 120),
	{ 0 },
};
