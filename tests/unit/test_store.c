/* Unit tests of src/store: schema creation and checks, runs, candidates,
 * trials (idempotent ensure, first result wins, one transaction per
 * result), reading back metrics and predictions, reopening for --resume,
 * and clear errors on bad files. */
#include "runner.h"

#include <stdint.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <sqlite3.h>

#include "cfl/data.h"
#include "cfl/store.h"

static struct cfl_store *open_new(const char *name)
{
	struct cfl_err err;
	struct cfl_store *st = cfl_store_open(cfl_test_path(name), CFL_STORE_CREATE,
					      &err);

	CHECK_MSG(st != NULL, "open: %s", err.msg);
	return st;
}

static int64_t new_run(struct cfl_store *st, const char *name)
{
	struct cfl_run_info info = { 0 };
	struct cfl_err err;
	int64_t id = 0;

	info.name = (char *)name;
	info.kind = CFL_RUN_REPEAT;
	info.command = "cfl repeat iris.csv";
	info.config = "models=fcnn,tree\nnum_repeat=3\n";
	info.dataset = "datasets/iris.csv";
	snprintf(info.dataset_sha256, sizeof(info.dataset_sha256), "%064d", 7);
	info.seed = UINT64_MAX - 5;	/* survives the int64 round trip */
	CHECK_MSG(cfl_store_run_create(st, &info, &id, &err) == 0, "%s",
		  err.msg);
	CHECK(id > 0);
	return id;
}

/* A result with metrics acc, auc on test (and acc on valid) and 3x2
 * predictions on test. */
static const double pred6[6] = { 0.25, 0.75, 1.0 / 3, 2.0 / 3, -0.0, 1e-300 };

static struct cfl_trial_result make_result(struct cfl_metric_value *m,
					   double acc)
{
	struct cfl_trial_result r;

	memset(&r, 0, sizeof(r));
	m[0].name = "acc";
	m[0].value = acc;
	m[1].name = "auc";
	m[1].value = 0.5 + acc / 2;
	r.duration = 1.5;
	r.peak_rss_kb = 12345;
	r.split[CFL_SPLIT_TEST].n_metrics = 2;
	r.split[CFL_SPLIT_TEST].metrics = m;
	r.split[CFL_SPLIT_TEST].n = 3;
	r.split[CFL_SPLIT_TEST].n_out = 2;
	r.split[CFL_SPLIT_TEST].pred = pred6;
	r.split[CFL_SPLIT_VALID].n_metrics = 1;
	r.split[CFL_SPLIT_VALID].metrics = m;
	return r;
}

static void t_enum_names(void)
{
	CHECK_STR(cfl_trial_status_name(CFL_TRIAL_POISON), "poison");
	CHECK_STR(cfl_run_status_name(CFL_RUN_INTERRUPTED), "interrupted");
	CHECK_STR(cfl_run_kind_name(CFL_RUN_TUNE), "tune");
	CHECK_STR(cfl_store_split_name(CFL_SPLIT_VALID), "valid");
	CHECK_INT(cfl_store_split_lookup("test"), CFL_SPLIT_TEST);
	CHECK_INT(cfl_store_split_lookup("train"), -1);
}

static void t_create_run_and_find(void)
{
	struct cfl_store *st = open_new("a.db");
	struct cfl_run_info r, info = { 0 };
	struct cfl_err err;
	int64_t id = new_run(st, "r1"), id2;
	char name[64];

	CHECK_INT(cfl_store_run_find(st, "r1", &r, &err), 0);
	CHECK_INT(r.id, id);
	CHECK_STR(r.name, "r1");
	CHECK_INT(r.kind, CFL_RUN_REPEAT);
	CHECK_STR(r.command, "cfl repeat iris.csv");
	CHECK_STR(r.config, "models=fcnn,tree\nnum_repeat=3\n");
	CHECK_STR(r.dataset, "datasets/iris.csv");
	CHECK_INT(strlen(r.dataset_sha256), 64);
	CHECK(r.seed == UINT64_MAX - 5);
	CHECK_STR(r.version, CFL_VERSION);
	CHECK_INT(r.status, CFL_RUN_RUNNING);
	CHECK(r.created > 1e9 && r.finished == 0);
	cfl_run_info_release(&r);

	/* a taken name is refused with a hint */
	info.name = "r1";
	CHECK_INT(cfl_store_run_create(st, &info, &id2, &err), -1);
	CHECK_CONTAINS(err.msg, "run 'r1' already exists");
	CHECK_CONTAINS(err.msg, "--resume r1");
	info.name = "";
	CHECK_INT(cfl_store_run_create(st, &info, &id2, &err), -1);

	CHECK_INT(cfl_store_run_find(st, "nope", &r, &err), 1);
	CHECK_CONTAINS(err.msg, "no run 'nope'");
	CHECK_INT(cfl_store_run_get(st, id, &r, &err), 0);
	CHECK_STR(r.name, "r1");
	cfl_run_info_release(&r);

	CHECK_INT(cfl_store_run_finish(st, id, CFL_RUN_DONE, &err), 0);
	CHECK_INT(cfl_store_run_get(st, id, &r, &err), 0);
	CHECK_INT(r.status, CFL_RUN_DONE);
	CHECK(r.finished >= r.created);
	cfl_run_info_release(&r);
	CHECK_INT(cfl_store_run_set_status(st, id, CFL_RUN_RUNNING, &err), 0);
	CHECK_INT(cfl_store_run_get(st, id, &r, &err), 0);
	CHECK(r.finished == 0);
	cfl_run_info_release(&r);
	CHECK_INT(cfl_store_run_set_status(st, 999, CFL_RUN_DONE, &err), -1);
	CHECK_CONTAINS(err.msg, "no run 999");

	/* default names are unique, and the name given is ignored */
	info.name = "r1";
	info.kind = CFL_RUN_REPEAT;
	CHECK_INT(cfl_store_run_create_default(st, &info, name, sizeof(name),
					       &id2, &err), 0);
	CHECK(strncmp(name, "repeat-20", 9) == 0);
	CHECK_INT(strlen(name), strlen("repeat-20261123-010203"));
	CHECK_INT(cfl_store_run_get(st, id2, &r, &err), 0);
	CHECK_STR(r.name, name);
	cfl_run_info_release(&r);
	{
		char name2[64];
		int64_t id3;

		CHECK_INT(cfl_store_run_create_default(st, &info, name2,
						       sizeof(name2), &id3,
						       &err), 0);
		CHECK(strcmp(name, name2) != 0);
		CHECK(id3 != id2);
		/* the same second: the suffix "-2" */
		if (strncmp(name2, name, strlen(name)) == 0)
			CHECK_STR(name2 + strlen(name), "-2");
	}
	CHECK_INT(cfl_store_run_latest(st, &r, &err), 0);
	CHECK(r.id != id);
	cfl_run_info_release(&r);
	cfl_store_close(st);
}

static void t_candidates(void)
{
	struct cfl_store *st = open_new("c.db");
	struct cfl_params p, q;
	struct cfl_err err;
	struct cfl_candidate_info *c;
	size_t n;
	int64_t run = new_run(st, "r"), a, b, a2, e;
	char hex[9], hex2[9], hexp[9];

	cfl_params_init(&p);
	cfl_params_init(&q);
	CHECK(cfl_params_set(&p, "lr", "0.1", &err) == 0);
	CHECK(cfl_params_set(&p, "epochs", "10", &err) == 0);
	CHECK(cfl_params_set(&q, "epochs", "10", &err) == 0);
	CHECK(cfl_params_set(&q, "lr", "0.1", &err) == 0);
	CHECK_INT(cfl_store_candidate_get_or_add(st, run, "fcnn", &p, &a, hex,
						 &err), 0);
	/* same set in another order: the same candidate */
	CHECK_INT(cfl_store_candidate_get_or_add(st, run, "fcnn", &q, &a2, hex2,
						 &err), 0);
	CHECK_INT(a, a2);
	CHECK_STR(hex, hex2);
	CHECK_INT(strlen(hex), 8);
	cfl_candidate_hex("fcnn", &q, hexp);
	CHECK_STR(hex, hexp);
	CHECK_INT(cfl_store_candidate_get_or_add(st, run, "tree", NULL, &b, NULL,
						 &err), 0);
	CHECK(a != b);
	CHECK_INT(cfl_store_candidate_get_or_add(st, run, "", NULL, &e, NULL,
						 &err), -1);
	CHECK_INT(cfl_store_candidate_set_score(st, b, 0.75, &err), 0);
	CHECK_INT(cfl_store_candidates(st, run, &c, &n, &err), 0);
	CHECK_INT(n, 2);
	CHECK_INT(c[0].seq, 0);
	CHECK_STR(c[0].model, "fcnn");
	CHECK_STR(c[0].params, "epochs=10,lr=0.1");
	CHECK_STR(c[0].hex, hex);
	CHECK(!c[0].has_score);
	CHECK_INT(c[1].seq, 1);
	CHECK_STR(c[1].params, "");
	CHECK(c[1].has_score && c[1].score == 0.75);
	cfl_candidates_free(c, n);
	cfl_params_release(&p);
	cfl_params_release(&q);
	cfl_store_close(st);
}

/* Values with commas, quotes, backslashes, control characters and UTF-8
 * survive the JSON round trip as text; numbers are JSON numbers with their
 * literal kept ("1e-3" stays "1e-3"), other text is a JSON string. */
static void t_candidate_params_json(void)
{
	static const char *const kv[][2] = {
		{ "hidden", "64,64" }, { "lr", "1e-3" }, { "name", "a \"b\" \\c" },
		{ "tab", "x\ty\n\x01" }, { "utf", "\xc3\xa9t\xc3\xa9" },
		{ "n", "-0.50" }, { "dot", "1." }, { "plus", "+1" }, { "b", "true" },
		{ "empty", "" }, { "lead0", "01" },
	};
	struct cfl_store *st = open_new("j.db");
	struct cfl_err err;
	struct cfl_params p;
	struct cfl_candidate_info *c;
	size_t n;
	int64_t run = new_run(st, "r"), id, id2;
	char hex[9];
	sqlite3 *db;
	sqlite3_stmt *s;

	cfl_params_init(&p);
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		CHECK(cfl_params_set(&p, kv[i][0], kv[i][1], &err) == 0);
	CHECK_INT(cfl_store_candidate_get_or_add(st, run, "fcnn", &p, &id, hex,
						 &err), 0);
	CHECK_INT(cfl_store_candidate_get_or_add(st, run, "fcnn", &p, &id2, NULL,
						 &err), 0);
	CHECK_INT(id, id2);
	CHECK_INT(cfl_store_candidates(st, run, &c, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_INT(c[0].kv.n, sizeof(kv) / sizeof(kv[0]));
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		CHECK_MSG(cfl_params_get(&c[0].kv, kv[i][0]) &&
			  !strcmp(cfl_params_get(&c[0].kv, kv[i][0]), kv[i][1]),
			  "%s: '%s'", kv[i][0], cfl_params_get(&c[0].kv, kv[i][0]));
	CHECK(!strncmp(c[0].params, "b=true,dot=1.,empty=,hidden=64,64,", 34));
	cfl_candidates_free(c, n);
	cfl_store_close(st);
	/* what SQLite's JSON1 makes of it */
	CHECK(sqlite3_open(cfl_test_path("j.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "SELECT json_extract(params, '$.hidden'), "
				 "json_type(params, '$.lr'), json_extract(params, '$.lr'), "
				 "json_type(params, '$.n'), json_type(params, '$.dot'), "
				 "json_type(params, '$.lead0'), json_extract(params, '$.name'), "
				 "json_valid(params) FROM candidates", -1, &s, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(s) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(s, 0), "64,64");
	CHECK_STR((const char *)sqlite3_column_text(s, 1), "real");
	CHECK(sqlite3_column_double(s, 2) == 1e-3);
	CHECK_STR((const char *)sqlite3_column_text(s, 3), "real");
	CHECK_STR((const char *)sqlite3_column_text(s, 4), "text");
	CHECK_STR((const char *)sqlite3_column_text(s, 5), "text");
	CHECK_STR((const char *)sqlite3_column_text(s, 6), "a \"b\" \\c");
	CHECK_INT(sqlite3_column_int(s, 7), 1);
	sqlite3_finalize(s);
	/* JSON written by another tool: escapes, spaces, null, nesting refused */
	CHECK(sqlite3_exec(db, "UPDATE candidates SET params = "
			   "' { \"k\" : \"\\u00e9\\ud83d\\ude00\\/\" , \"z\":null, \"t\":false } '",
			   NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	st = cfl_store_open(cfl_test_path("j.db"), CFL_STORE_READONLY, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK_INT(cfl_store_candidates(st, run, &c, &n, &err), 0);
	CHECK_STR(cfl_params_get(&c[0].kv, "k"), "\xc3\xa9\xf0\x9f\x98\x80/");
	CHECK_STR(cfl_params_get(&c[0].kv, "z"), "");
	CHECK_STR(cfl_params_get(&c[0].kv, "t"), "false");
	CHECK_STR(c[0].params, "k=\xc3\xa9\xf0\x9f\x98\x80/,t=false,z=");
	cfl_candidates_free(c, n);
	cfl_store_close(st);
	CHECK(sqlite3_open(cfl_test_path("j.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "UPDATE candidates SET params = '{\"k\":[1,2]}'",
			   NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	st = cfl_store_open(cfl_test_path("j.db"), CFL_STORE_READONLY, &err);
	CHECK(st != NULL);
	CHECK_INT(cfl_store_candidates(st, run, &c, &n, &err), -1);
	CHECK_CONTAINS(err.msg, "not a flat JSON object");
	cfl_store_close(st);
	cfl_params_release(&p);
}

/* Trials of a repeat run are in phase repeat, of a tune run in search by
 * default; the refit's are created so. */
static void t_trial_phases(void)
{
	struct cfl_store *st = open_new("ph.db");
	struct cfl_run_info info = { 0 };
	struct cfl_err err;
	struct cfl_trial_state ts;
	struct cfl_trial_info *t;
	size_t n;
	int64_t rr = new_run(st, "rep"), rt, cr, ct;

	info.name = "tun";
	info.kind = CFL_RUN_TUNE;
	CHECK(cfl_store_run_create(st, &info, &rt, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, rr, "tree", NULL, &cr, NULL, &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, rt, "tree", NULL, &ct, NULL, &err) == 0);
	CHECK(cfl_store_trial_ensure(st, rr, cr, 0, -1, 1, &ts, &err) == 0);
	CHECK(cfl_store_trial_ensure(st, rt, ct, 0, -1, 1, &ts, &err) == 0);
	CHECK(cfl_store_trial_ensure_in(st, rt, ct, 1, -1, 2, CFL_PHASE_REFIT,
					&ts, &err) == 0);
	/* an existing trial keeps its phase */
	CHECK(cfl_store_trial_ensure_in(st, rt, ct, 0, -1, 1, CFL_PHASE_REFIT,
					&ts, &err) == 0);
	CHECK_INT(cfl_store_trial_ensure_in(st, rt, ct, 2, -1, 3, 7, &ts, &err), -1);
	CHECK_INT(cfl_store_trials(st, rr, &t, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_STR(cfl_trial_phase_name(t[0].phase), "repeat");
	cfl_trials_free(t, n);
	CHECK_INT(cfl_store_trials(st, rt, &t, &n, &err), 0);
	CHECK_INT(n, 2);
	CHECK_STR(cfl_trial_phase_name(t[0].phase), "search");
	CHECK_STR(cfl_trial_phase_name(t[1].phase), "refit");
	cfl_trials_free(t, n);
	cfl_store_close(st);
}

/* Schema 1's DDL as cfl 0.x wrote it (tables only; the indexes do not
 * matter here). */
static const char V1_DDL[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	" kind TEXT NOT NULL CHECK (kind IN ('repeat','tune')), command TEXT NOT"
	" NULL DEFAULT '', config TEXT NOT NULL DEFAULT '', dataset TEXT NOT NULL"
	" DEFAULT '', dataset_sha256 TEXT NOT NULL DEFAULT '', seed INTEGER NOT"
	" NULL, cfl_version TEXT NOT NULL, status TEXT NOT NULL, created REAL NOT"
	" NULL, finished REAL);"
	"CREATE TABLE candidates (id INTEGER PRIMARY KEY, run INTEGER NOT NULL"
	" REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL, model TEXT"
	" NOT NULL, params TEXT NOT NULL, hex TEXT NOT NULL, score REAL,"
	" UNIQUE (run, model, params));"
	"CREATE TABLE trials (id INTEGER PRIMARY KEY, run INTEGER NOT NULL, "
	" candidate INTEGER NOT NULL, repeat INTEGER NOT NULL, fold INTEGER NOT"
	" NULL DEFAULT -1, seed INTEGER NOT NULL, status TEXT NOT NULL, attempt"
	" INTEGER NOT NULL DEFAULT 0, worker TEXT, started REAL, finished REAL,"
	" duration REAL, peak_rss_kb INTEGER, error TEXT,"
	" UNIQUE (candidate, repeat, fold));"
	"CREATE TABLE trial_attempts (id INTEGER PRIMARY KEY, trial INTEGER NOT"
	" NULL, attempt INTEGER NOT NULL, worker TEXT, started REAL, finished"
	" REAL NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL);"
	"CREATE TABLE metrics (trial INTEGER NOT NULL, split TEXT NOT NULL,"
	" metric TEXT NOT NULL, value REAL, PRIMARY KEY (trial, split, metric));"
	"CREATE TABLE predictions (trial INTEGER NOT NULL, split TEXT NOT NULL,"
	" n INTEGER NOT NULL, n_out INTEGER NOT NULL, data BLOB NOT NULL, rows"
	" BLOB, PRIMARY KEY (trial, split));"
	"CREATE TABLE ensembles (id INTEGER PRIMARY KEY, run INTEGER NOT NULL,"
	" name TEXT NOT NULL, method TEXT NOT NULL, members TEXT NOT NULL DEFAULT"
	" '', repeat INTEGER NOT NULL DEFAULT -1, duration REAL, peak_rss_kb"
	" INTEGER, created REAL NOT NULL, UNIQUE (run, name, repeat));"
	"CREATE TABLE ensemble_metrics (ensemble INTEGER NOT NULL, split TEXT NOT"
	" NULL, metric TEXT NOT NULL, value REAL, PRIMARY KEY (ensemble, split,"
	" metric));"
	"CREATE TABLE ensemble_predictions (ensemble INTEGER NOT NULL, split TEXT"
	" NOT NULL, n INTEGER NOT NULL, n_out INTEGER NOT NULL, data BLOB NOT"
	" NULL, rows BLOB, PRIMARY KEY (ensemble, split));"
	"INSERT INTO meta VALUES ('app', 'cfl'), ('schema_version', '1');"
	"PRAGMA user_version = 1;";

/* A schema 1 file: params "k=v" text becomes JSON (commas kept whole, hex
 * untouched, the hex of the same params made anew agreeing), tune trials
 * from num_repeat on are the refit; a bad params text rolls it all back. */
static void t_migrate_v1(void)
{
	struct cfl_store *st;
	struct cfl_err err;
	struct cfl_candidate_info *c;
	struct cfl_trial_info *t;
	struct cfl_params p;
	size_t n;
	sqlite3 *db;
	char hex[9];
	int64_t id;

	CHECK(sqlite3_open(cfl_test_path("v1.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, V1_DDL, NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db,
		"INSERT INTO runs VALUES (1, 'tn', 'tune', '', 'model=fcnn\n"
		"num_repeat=2\nnum_parallel=1\n', '', '', 1, '0.1', 'done', 1, 2);"
		"INSERT INTO runs VALUES (2, 'rp', 'repeat', '', 'num_repeat=1\n', "
		"'', '', 1, '0.1', 'done', 1, 2);"
		"INSERT INTO candidates VALUES (1, 1, 0, 'fcnn', "
		"'hidden=64,64,lr=0.1,opt=adam', 'aaaaaaaa', 0.5);"
		"INSERT INTO candidates VALUES (2, 1, 1, 'fcnn', "
		"'hidden=8,lr=1e-3,opt=sgd', 'bbbbbbbb', 0.7);"
		"INSERT INTO candidates VALUES (3, 2, 0, 'tree', '', 'cccccccc', NULL);"
		"INSERT INTO trials (id, run, candidate, repeat, seed, status) VALUES"
		" (1, 1, 1, 0, 1, 'done'), (2, 1, 1, 1, 2, 'done'),"
		" (3, 1, 2, 0, 3, 'done'), (4, 1, 2, 1, 4, 'failed'),"
		" (5, 1, 2, 2, 5, 'done'), (6, 1, 2, 3, 6, 'done'),"
		" (7, 2, 3, 0, 7, 'done');", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);

	st = cfl_store_open(cfl_test_path("v1.db"), CFL_STORE_READONLY, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK_INT(cfl_store_candidates(st, 1, &c, &n, &err), 0);
	CHECK_INT(n, 2);
	CHECK_STR(c[0].hex, "aaaaaaaa");
	CHECK_STR(cfl_params_get(&c[0].kv, "hidden"), "64,64");
	CHECK_STR(c[0].params, "hidden=64,64,lr=0.1,opt=adam");
	CHECK_STR(cfl_params_get(&c[1].kv, "lr"), "1e-3");
	CHECK_STR(c[1].hex, "bbbbbbbb");
	cfl_candidates_free(c, n);
	CHECK_INT(cfl_store_trials(st, 1, &t, &n, &err), 0);
	CHECK_INT(n, 6);
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(t[i].phase == (t[i].repeat >= 2 ? CFL_PHASE_REFIT
							  : CFL_PHASE_SEARCH),
			  "trial %lld phase %d", (long long)t[i].id, t[i].phase);
	cfl_trials_free(t, n);
	CHECK_INT(cfl_store_trials(st, 2, &t, &n, &err), 0);
	CHECK_INT(t[0].phase, CFL_PHASE_REPEAT);
	cfl_trials_free(t, n);
	cfl_store_close(st);

	/* a candidate added now finds the migrated one (same params) */
	st = open_new("v1.db");
	cfl_params_init(&p);
	CHECK(cfl_params_set_arg(&p, "opt=sgd", &err) == 0);
	CHECK(cfl_params_set_arg(&p, "lr=1e-3", &err) == 0);
	CHECK(cfl_params_set_arg(&p, "hidden=8", &err) == 0);
	CHECK_INT(cfl_store_candidate_get_or_add(st, 1, "fcnn", &p, &id, hex, &err), 0);
	CHECK_INT(id, 2);
	CHECK_STR(hex, "bbbbbbbb");
	cfl_params_release(&p);
	cfl_store_close(st);

	/* text that is not k=v: nothing changes */
	CHECK(sqlite3_open(cfl_test_path("bad.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, V1_DDL, NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db,
		"INSERT INTO runs VALUES (1, 'tn', 'tune', '', '', '', '', 1, '0.1',"
		" 'done', 1, 2);"
		"INSERT INTO candidates VALUES (1, 1, 0, 'fcnn', 'lr=0.1', 'a', 0);"
		"INSERT INTO candidates VALUES (2, 1, 1, 'fcnn', 'junk', 'b', 0);",
		NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(cfl_store_open(cfl_test_path("bad.db"), CFL_STORE_CREATE, &err) == NULL);
	CHECK_CONTAINS(err.msg, "cannot migrate");
	CHECK_CONTAINS(err.msg, "'junk' is not key=value");
	CHECK(sqlite3_open(cfl_test_path("bad.db"), &db) == SQLITE_OK);
	{
		sqlite3_stmt *s;

		CHECK(sqlite3_prepare_v2(db, "SELECT (SELECT params FROM candidates "
					 "WHERE id = 1), (SELECT count(*) FROM "
					 "pragma_table_info('trials') WHERE name = "
					 "'phase'), (SELECT user_version FROM "
					 "pragma_user_version)", -1, &s, NULL) == SQLITE_OK);
		CHECK(sqlite3_step(s) == SQLITE_ROW);
		CHECK_STR((const char *)sqlite3_column_text(s, 0), "lr=0.1");
		CHECK_INT(sqlite3_column_int(s, 1), 0);
		CHECK_INT(sqlite3_column_int(s, 2), 1);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
}

static void t_trials_results_read_back(void)
{
	struct cfl_store *st = open_new("t.db");
	struct cfl_err err;
	struct cfl_trial_state ts, ts2;
	struct cfl_metric_value m[2];
	struct cfl_trial_result res;
	struct cfl_metric_row *rows;
	struct cfl_trial_counts cnt;
	struct cfl_trial_info *ti;
	struct cfl_pred pr;
	size_t n;
	int64_t run = new_run(st, "r"), cf, ct, trial[4];

	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &cf, NULL,
					     &err) == 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "tree", NULL, &ct, NULL,
					     &err) == 0);
	for (int i = 0; i < 4; i++) {
		CHECK_MSG(cfl_store_trial_ensure(st, run, i < 2 ? cf : ct, i % 2,
						 -1, 100 + i, &ts, &err) == 0,
			  "%s", err.msg);
		CHECK_INT(ts.status, CFL_TRIAL_QUEUED);
		CHECK_INT(ts.attempt, 0);
		trial[i] = ts.id;
	}
	/* idempotent */
	CHECK_INT(cfl_store_trial_ensure(st, run, cf, 1, -1, 101, &ts2, &err), 0);
	CHECK_INT(ts2.id, trial[1]);
	/* another seed for the same trial: the plan changed */
	CHECK_INT(cfl_store_trial_ensure(st, run, cf, 1, -1, 555, &ts2, &err), -1);
	CHECK_CONTAINS(err.msg, "seed 101, not 555");

	/* trial 0: done at first attempt */
	CHECK_INT(cfl_store_trial_leased(st, trial[0], 1, "local:1", &err), 0);
	res = make_result(m, 0.9);
	CHECK_MSG(cfl_store_trial_done(st, trial[0], 1, &res, &err) == 0, "%s",
		  err.msg);
	/* first result wins: a second result is a duplicate, ignored */
	res = make_result(m, 0.1);
	CHECK_INT(cfl_store_trial_done(st, trial[0], 2, &res, &err), 1);
	CHECK_INT(cfl_store_trial_leased(st, trial[0], 2, "local:2", &err), 1);
	CHECK_INT(cfl_store_trial_failed(st, trial[0], 2, "exit 3",
					 CFL_TRIAL_FAILED, &err), 1);
	/* trial 1: crashes, retried, then done */
	CHECK_INT(cfl_store_trial_leased(st, trial[1], 1, "local:2", &err), 0);
	CHECK_INT(cfl_store_trial_failed(st, trial[1], 1, "signal SIGSEGV",
					 CFL_TRIAL_QUEUED, &err), 0);
	CHECK_INT(cfl_store_trial_ensure(st, run, cf, 1, -1, 101, &ts2, &err), 0);
	CHECK_INT(ts2.status, CFL_TRIAL_QUEUED);
	CHECK_INT(ts2.attempt, 1);
	CHECK_INT(cfl_store_trial_leased(st, trial[1], 2, "local:1", &err), 0);
	res = make_result(m, 0.8);
	CHECK_INT(cfl_store_trial_done(st, trial[1], 2, &res, &err), 0);
	/* trial 2: poison; trial 3: done with NaN metric */
	CHECK_INT(cfl_store_trial_leased(st, trial[2], 1, NULL, &err), 0);
	CHECK_INT(cfl_store_trial_failed(st, trial[2], 1, "timeout after 10 s",
					 CFL_TRIAL_POISON, &err), 0);
	CHECK_INT(cfl_store_trial_failed(st, trial[2], 1, "x", CFL_TRIAL_DONE,
					 &err), -1);
	res = make_result(m, NAN);
	CHECK_INT(cfl_store_trial_done(st, trial[3], 1, &res, &err), 0);

	CHECK_INT(cfl_store_trial_counts(st, run, &cnt, &err), 0);
	CHECK_INT(cnt.total, 4);
	CHECK_INT(cnt.done, 3);
	CHECK_INT(cnt.poison, 1);
	CHECK_INT(cnt.queued + cnt.running + cnt.failed + cnt.interrupted, 0);

	CHECK_INT(cfl_store_run_metrics(st, run, CFL_SPLIT_TEST, &rows, &n,
					&err), 0);
	CHECK_INT(n, 6);
	CHECK_STR(rows[0].model, "fcnn");
	CHECK_STR(rows[0].metric, "acc");
	CHECK(rows[0].value == 0.9);
	CHECK_STR(rows[1].metric, "auc");
	CHECK(rows[1].value == 0.95);
	CHECK_INT(rows[2].repeat, 1);
	CHECK(rows[2].value == 0.8);
	CHECK_STR(rows[4].model, "tree");
	CHECK_INT(rows[4].trial_id, trial[3]);
	CHECK(isnan(rows[4].value));
	CHECK_INT(rows[4].fold, -1);
	CHECK_INT(strlen(rows[4].hex), 8);
	free(rows);
	CHECK_INT(cfl_store_run_metrics(st, run, CFL_SPLIT_VALID, &rows, &n,
					&err), 0);
	CHECK_INT(n, 3);
	free(rows);

	/* predictions round-trip bit for bit */
	CHECK_INT(cfl_store_predictions(st, trial[0], CFL_SPLIT_TEST, &pr, &err), 0);
	CHECK_INT(pr.n, 3);
	CHECK_INT(pr.n_out, 2);
	CHECK(memcmp(pr.values, pred6, sizeof(pred6)) == 0);
	CHECK(pr.rows == NULL);
	cfl_pred_release(&pr);
	CHECK_INT(cfl_store_predictions(st, trial[0], CFL_SPLIT_VALID, &pr, &err), 1);
	CHECK_INT(cfl_store_predictions(st, trial[2], CFL_SPLIT_TEST, &pr, &err), 1);

	CHECK_INT(cfl_store_trials(st, run, &ti, &n, &err), 0);
	CHECK_INT(n, 4);
	CHECK_INT(ti[1].attempt, 2);
	CHECK_STR(ti[1].worker, "local:1");
	CHECK_INT(ti[0].peak_rss_kb, 12345);
	CHECK(ti[0].duration == 1.5);
	CHECK_INT(ti[2].status, CFL_TRIAL_POISON);
	CHECK_STR(ti[2].error, "timeout after 10 s");
	CHECK(ti[0].error == NULL);
	CHECK(ti[3].seed == 103);
	cfl_trials_free(ti, n);
	cfl_store_close(st);

	/* the attempts history, as an analyst would query it */
	{
		sqlite3 *db;
		sqlite3_stmt *s;

		CHECK(sqlite3_open(cfl_test_path("t.db"), &db) == SQLITE_OK);
		CHECK(sqlite3_prepare_v2(db, "SELECT group_concat(reason, ';') "
					 "FROM trial_attempts", -1, &s,
					 NULL) == SQLITE_OK);
		CHECK(sqlite3_step(s) == SQLITE_ROW);
		CHECK_STR((const char *)sqlite3_column_text(s, 0),
			  "signal SIGSEGV;timeout after 10 s");
		sqlite3_finalize(s);
		sqlite3_close(db);
	}
}

static void t_bad_result_stores_nothing(void)
{
	struct cfl_store *st = open_new("x.db");
	struct cfl_err err;
	struct cfl_trial_state ts;
	struct cfl_metric_value m[2];
	struct cfl_trial_result res;
	struct cfl_metric_row *rows;
	struct cfl_pred pr;
	size_t n;
	int64_t run = new_run(st, "r"), c;

	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &c, NULL,
					     &err) == 0);
	CHECK(cfl_store_trial_ensure(st, run, c, 0, -1, 1, &ts, &err) == 0);
	CHECK(cfl_store_trial_leased(st, ts.id, 1, "w", &err) == 0);
	/* The second metric repeats the first's name: the database refuses
	 * it after the predictions and first metric went in, and the whole
	 * result must vanish. */
	res = make_result(m, 0.9);
	m[1].name = "acc";
	CHECK_INT(cfl_store_trial_done(st, ts.id, 1, &res, &err), -1);
	CHECK_CONTAINS(err.msg, "result of trial");
	CHECK_CONTAINS(err.msg, "UNIQUE");
	CHECK_INT(cfl_store_run_metrics(st, run, CFL_SPLIT_VALID, &rows, &n,
					&err), 0);
	CHECK_INT(n, 0);
	free(rows);
	CHECK_INT(cfl_store_predictions(st, ts.id, CFL_SPLIT_TEST, &pr, &err), 1);
	CHECK_INT(cfl_store_trial_ensure(st, run, c, 0, -1, 1, &ts, &err), 0);
	CHECK_INT(ts.status, CFL_TRIAL_RUNNING);
	/* checked before any write */
	res = make_result(m, 0.9);
	m[1].name = "";
	CHECK_INT(cfl_store_trial_done(st, ts.id, 1, &res, &err), -1);
	CHECK_CONTAINS(err.msg, "has no name");
	res = make_result(m, 0.9);
	res.split[CFL_SPLIT_TEST].pred = NULL;
	CHECK_INT(cfl_store_trial_done(st, ts.id, 1, &res, &err), -1);
	CHECK_CONTAINS(err.msg, "predictions missing");
	CHECK_INT(cfl_store_trial_done(st, 424242, 1, &res, &err), -1);
	/* a good result still goes in afterwards */
	res = make_result(m, 0.9);
	CHECK_MSG(cfl_store_trial_done(st, ts.id, 1, &res, &err) == 0, "%s",
		  err.msg);
	CHECK_INT(cfl_store_run_metrics(st, run, CFL_SPLIT_TEST, &rows, &n,
					&err), 0);
	CHECK_INT(n, 2);
	free(rows);
	cfl_store_close(st);
}

static void t_batch_and_rollback(void)
{
	struct cfl_store *st = open_new("b.db");
	struct cfl_err err;
	struct cfl_trial_state ts;
	struct cfl_trial_counts cnt;
	int64_t run = new_run(st, "r"), c;

	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &c, NULL,
					     &err) == 0);
	CHECK_INT(cfl_store_begin(st, &err), 0);
	for (int i = 0; i < 100; i++)
		CHECK(cfl_store_trial_ensure(st, run, c, i, -1, i, &ts, &err) == 0);
	/* a failing call inside a batch undoes only itself */
	CHECK_INT(cfl_store_trial_ensure(st, run, c, 5, -1, 9999, &ts, &err), -1);
	CHECK_INT(cfl_store_commit(st, &err), 0);
	CHECK_INT(cfl_store_trial_counts(st, run, &cnt, &err), 0);
	CHECK_INT(cnt.total, 100);
	CHECK_INT(cfl_store_begin(st, &err), 0);
	for (int i = 100; i < 110; i++)
		CHECK(cfl_store_trial_ensure(st, run, c, i, -1, i, &ts, &err) == 0);
	cfl_store_rollback(st);
	CHECK_INT(cfl_store_trial_counts(st, run, &cnt, &err), 0);
	CHECK_INT(cnt.total, 100);
	CHECK_INT(cfl_store_commit(st, &err), -1);
	cfl_store_close(st);
}

/* kill -9 or Ctrl-C, then --resume: reopen, find the run, ensure the same
 * trials, rerun only what is not done. */
static void t_reopen_and_resume(void)
{
	struct cfl_store *st = open_new("r.db");
	struct cfl_err err;
	struct cfl_trial_state ts;
	struct cfl_metric_value m[2];
	struct cfl_trial_result res;
	struct cfl_run_info r;
	struct cfl_run_summary *sum;
	struct cfl_trial_counts cnt;
	size_t n;
	int64_t run = new_run(st, "resumable"), c, ids[3];

	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &c, NULL,
					     &err) == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(cfl_store_trial_ensure(st, run, c, i, -1, 10 + i, &ts,
					     &err) == 0);
		ids[i] = ts.id;
	}
	res = make_result(m, 0.9);
	CHECK(cfl_store_trial_leased(st, ids[0], 1, "w", &err) == 0);
	CHECK(cfl_store_trial_done(st, ids[0], 1, &res, &err) == 0);
	CHECK(cfl_store_trial_leased(st, ids[1], 1, "w", &err) == 0);
	CHECK_INT(cfl_store_mark_interrupted(st, run, &err), 0);
	/* a batch left open by a crash is rolled back by close */
	CHECK(cfl_store_begin(st, &err) == 0);
	CHECK(cfl_store_trial_leased(st, ids[2], 1, "w", &err) == 0);
	cfl_store_close(st);

	st = cfl_store_open(cfl_test_path("r.db"), CFL_STORE_CREATE, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK_INT(cfl_store_run_find(st, "resumable", &r, &err), 0);
	CHECK_INT(r.status, CFL_RUN_INTERRUPTED);
	CHECK_INT(strlen(r.dataset_sha256), 64);
	CHECK(r.seed == UINT64_MAX - 5);
	cfl_run_info_release(&r);
	CHECK_INT(cfl_store_trial_counts(st, run, &cnt, &err), 0);
	CHECK_INT(cnt.done, 1);
	CHECK_INT(cnt.interrupted, 1);
	CHECK_INT(cnt.queued, 1);
	CHECK_INT(cfl_store_run_set_status(st, run, CFL_RUN_RUNNING, &err), 0);
	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &c, NULL,
					     &err) == 0);
	CHECK(cfl_store_trial_ensure(st, run, c, 0, -1, 10, &ts, &err) == 0);
	CHECK_INT(ts.id, ids[0]);
	CHECK_INT(ts.status, CFL_TRIAL_DONE);
	CHECK(cfl_store_trial_ensure(st, run, c, 1, -1, 11, &ts, &err) == 0);
	CHECK_INT(ts.status, CFL_TRIAL_INTERRUPTED);
	CHECK_INT(ts.attempt, 1);
	CHECK_INT(cfl_store_runs_list(st, &sum, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_STR(sum[0].info.name, "resumable");
	CHECK_INT(sum[0].n_trials, 3);
	CHECK_INT(sum[0].n_done, 1);
	CHECK_INT(sum[0].n_failed, 0);
	cfl_run_summaries_free(sum, n);
	cfl_store_close(st);

	/* read-only opening sees the same and refuses writes */
	st = cfl_store_open(cfl_test_path("r.db"), CFL_STORE_READONLY, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK_INT(cfl_store_run_find(st, "resumable", &r, &err), 0);
	cfl_run_info_release(&r);
	CHECK_INT(cfl_store_run_finish(st, run, CFL_RUN_DONE, &err), -1);
	CHECK_CONTAINS(err.msg, "read-only");
	cfl_store_close(st);
}

static void t_ensembles(void)
{
	struct cfl_store *st = open_new("e.db");
	struct cfl_err err;
	struct cfl_metric_value m[2];
	struct cfl_trial_result res;
	struct cfl_ensemble_info ei = { "mean", "mean", "1,2,3", -1 };
	struct cfl_metric_row *rows;
	struct cfl_pred pr;
	uint32_t idx[3] = { 7, 0, 4000000000u };
	size_t n;
	int64_t run = new_run(st, "r"), e, e2;

	res = make_result(m, 0.97);
	res.split[CFL_SPLIT_OOF].n = 3;
	res.split[CFL_SPLIT_OOF].n_out = 1;
	res.split[CFL_SPLIT_OOF].pred = pred6;
	res.split[CFL_SPLIT_OOF].rows = idx;
	CHECK_MSG(cfl_store_ensemble_add(st, run, &ei, &res, &e, &err) == 0,
		  "%s", err.msg);
	CHECK_INT(cfl_store_ensemble_add(st, run, &ei, &res, &e2, &err), 1);
	CHECK_INT(e, e2);
	CHECK_INT(cfl_store_run_metrics(st, run, CFL_SPLIT_TEST, &rows, &n,
					&err), 0);
	CHECK_INT(n, 2);
	CHECK_STR(rows[0].model, "mean");
	CHECK_INT(rows[0].ensemble_id, e);
	CHECK_INT(rows[0].trial_id, 0);
	CHECK_INT(rows[0].repeat, -1);
	CHECK(rows[0].value == 0.97);
	free(rows);
	CHECK_INT(cfl_store_ensemble_predictions(st, e, CFL_SPLIT_OOF, &pr,
						 &err), 0);
	CHECK_INT(pr.n, 3);
	CHECK_INT(pr.n_out, 1);
	CHECK(pr.rows && pr.rows[2] == 4000000000u && pr.rows[0] == 7);
	CHECK(memcmp(pr.values, pred6, 3 * sizeof(double)) == 0);
	cfl_pred_release(&pr);
	cfl_store_close(st);
}

static void t_bad_files(void)
{
	struct cfl_err err;
	struct cfl_store *st;
	FILE *f;
	sqlite3 *db;

	/* a folder */
	CHECK(cfl_store_open(cfl_test_path(""), CFL_STORE_CREATE, &err) == NULL);
	CHECK_CONTAINS(err.msg, "is a folder");
	/* a missing folder */
	CHECK(cfl_store_open(cfl_test_path("nodir/cfl.db"), CFL_STORE_CREATE,
			     &err) == NULL);
	CHECK_CONTAINS(err.msg, "does not exist");
	/* read-only on a missing file */
	CHECK(cfl_store_open(cfl_test_path("missing.db"), CFL_STORE_READONLY,
			     &err) == NULL);
	CHECK_CONTAINS(err.msg, "no database");
	/* not SQLite */
	f = fopen(cfl_test_path("text.db"), "w");
	CHECK(f != NULL);
	fputs("x,y\n1,2\nthis is a CSV file, not a database at all.........\n", f);
	fclose(f);
	CHECK(cfl_store_open(cfl_test_path("text.db"), CFL_STORE_CREATE, &err) == NULL);
	CHECK_CONTAINS(err.msg, "is not a cfl database");
	/* another program's SQLite database */
	CHECK(sqlite3_open(cfl_test_path("other.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(cfl_store_open(cfl_test_path("other.db"), CFL_STORE_CREATE, &err) == NULL);
	CHECK_CONTAINS(err.msg, "but not a cfl one");
	/* a newer schema */
	st = open_new("new.db");
	cfl_store_close(st);
	CHECK(sqlite3_open(cfl_test_path("new.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL) ==
	      SQLITE_OK);
	sqlite3_close(db);
	CHECK(cfl_store_open(cfl_test_path("new.db"), CFL_STORE_CREATE, &err) == NULL);
	CHECK_CONTAINS(err.msg, "newer cfl (schema 99 > 3)");
	CHECK(cfl_store_open(NULL, CFL_STORE_CREATE, &err) == NULL);
	cfl_store_close(NULL);
}

static void t_schema_is_wal_with_foreign_keys(void)
{
	struct cfl_store *st = open_new("w.db");
	sqlite3 *db;
	sqlite3_stmt *s;

	cfl_store_close(st);
	CHECK(sqlite3_open(cfl_test_path("w.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL) ==
	      SQLITE_OK);
	CHECK(sqlite3_step(s) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(s, 0), "wal");
	sqlite3_finalize(s);
	CHECK(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = "
				 "'schema_version'", -1, &s, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(s) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(s, 0), "3");
	sqlite3_finalize(s);
	sqlite3_close(db);
}

/* A reader (cfl runs) while the coordinator is inside a transaction: WAL
 * lets it read at once, and it sees only committed states. */
static void t_reader_during_write(void)
{
	struct cfl_store *w = open_new("rw.db"), *r;
	struct cfl_err err;
	struct cfl_run_summary *sum;
	size_t n;

	new_run(w, "committed");
	CHECK(cfl_store_begin(w, &err) == 0);
	new_run(w, "pending");
	r = cfl_store_open(cfl_test_path("rw.db"), CFL_STORE_READONLY, &err);
	CHECK_MSG(r != NULL, "%s", err.msg);
	CHECK_MSG(cfl_store_runs_list(r, &sum, &n, &err) == 0, "%s", err.msg);
	CHECK_INT(n, 1);
	CHECK_STR(sum[0].info.name, "committed");
	cfl_run_summaries_free(sum, n);
	CHECK(cfl_store_commit(w, &err) == 0);
	CHECK(cfl_store_runs_list(r, &sum, &n, &err) == 0);
	CHECK_INT(n, 2);
	cfl_run_summaries_free(sum, n);
	cfl_store_close(r);
	cfl_store_close(w);
}

/* kill -9 in the middle of a result: the database keeps the state before
 * it, never half of it. */
static void t_kill_mid_transaction(void)
{
	struct cfl_store *st = open_new("k.db");
	struct cfl_err err;
	struct cfl_trial_state ts;
	struct cfl_metric_row *rows;
	struct cfl_trial_counts cnt;
	struct cfl_metric_value m[2];
	struct cfl_trial_result res;
	size_t n;
	int64_t run = new_run(st, "r"), c;
	pid_t pid;
	int status;

	CHECK(cfl_store_candidate_get_or_add(st, run, "fcnn", NULL, &c, NULL,
					     &err) == 0);
	CHECK(cfl_store_trial_ensure(st, run, c, 0, -1, 1, &ts, &err) == 0);
	cfl_store_close(st);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		st = cfl_store_open(cfl_test_path("k.db"), CFL_STORE_CREATE, &err);
		if (!st || cfl_store_begin(st, &err))
			_exit(1);
		res = make_result(m, 0.9);
		if (cfl_store_trial_done(st, ts.id, 1, &res, &err) != 0)
			_exit(1);
		raise(SIGKILL);	/* before the outer commit */
		_exit(1);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	st = cfl_store_open(cfl_test_path("k.db"), CFL_STORE_CREATE, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK(cfl_store_trial_counts(st, run, &cnt, &err) == 0);
	CHECK_INT(cnt.queued, 1);
	CHECK_INT(cnt.done, 0);
	CHECK(cfl_store_run_metrics(st, run, CFL_SPLIT_TEST, &rows, &n, &err) == 0);
	CHECK_INT(n, 0);
	free(rows);
	/* and the trial can be done now */
	res = make_result(m, 0.9);
	CHECK_INT(cfl_store_trial_done(st, ts.id, 1, &res, &err), 0);
	cfl_store_close(st);
}

/* Cancelled and pruned trials (schema 3): stored as such, counted apart
 * from the failed ones, a pruned one with its step and score; a schema 2
 * file (trials' CHECK without them) is migrated, its rows and views kept. */
static void t_cancelled_pruned_and_v2(void)
{
	struct cfl_store *st = open_new("v2.db");
	struct cfl_err err;
	struct cfl_trial_state ts;
	struct cfl_trial_counts tc;
	struct cfl_run_summary *runs;
	struct cfl_candidate_info *c;
	size_t n;
	int64_t run = new_run(st, "r"), cand, t[3];
	sqlite3 *db;
	sqlite3_stmt *q;

	CHECK(cfl_store_candidate_get_or_add(st, run, "tree", NULL, &cand, NULL, &err) == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(cfl_store_trial_ensure(st, run, cand, i, -1, 1, &ts, &err) == 0);
		t[i] = ts.id;
	}
	CHECK_INT(cfl_store_trial_failed(st, t[0], 1, "boom", CFL_TRIAL_FAILED, &err), 0);
	cfl_store_close(st);
	/* make it a schema 2 file: trials' CHECK as version 2 wrote it */
	CHECK(sqlite3_open(cfl_test_path("v2.db"), &db) == SQLITE_OK);
	CHECK_MSG(sqlite3_exec(db, "PRAGMA writable_schema = ON;"
		"UPDATE sqlite_master SET sql = replace(sql, ',''cancelled'',''pruned''', '')"
		" WHERE name = 'trials';"
		"UPDATE meta SET value = '2' WHERE key = 'schema_version';"
		"PRAGMA user_version = 2;", NULL, NULL, NULL) == SQLITE_OK,
		"%s", sqlite3_errmsg(db));
	sqlite3_close(db);
	CHECK(sqlite3_open(cfl_test_path("v2.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "UPDATE trials SET status = 'cancelled' WHERE id = 2",
			   NULL, NULL, NULL) != SQLITE_OK);	/* really version 2 */
	sqlite3_close(db);

	st = open_new("v2.db");
	CHECK_INT(cfl_store_trial_failed(st, t[1], 1, "cancelled", CFL_TRIAL_CANCELLED, &err), 0);
	CHECK_INT(cfl_store_trial_failed(st, t[2], 1, "pruned at step 20",
					 CFL_TRIAL_PRUNED, &err), 0);
	CHECK_INT(cfl_store_trial_pruned(st, t[2], 20, 0.875, &err), 0);
	CHECK_INT(cfl_store_trial_counts(st, run, &tc, &err), 0);
	CHECK_INT(tc.total, 3);
	CHECK_INT(tc.failed, 1);
	CHECK_INT(tc.cancelled, 1);
	CHECK_INT(tc.pruned, 1);
	CHECK_INT(cfl_store_runs_list(st, &runs, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK_INT(runs[0].n_failed, 1);
	CHECK_INT(runs[0].n_cancelled, 1);
	CHECK_INT(runs[0].n_pruned, 1);
	cfl_run_summaries_free(runs, n);
	CHECK_INT(cfl_store_candidates(st, run, &c, &n, &err), 0);
	CHECK_INT(c[0].n_failed, 1);
	CHECK_INT(c[0].n_pruned, 1);
	cfl_candidates_free(c, n);
	cfl_store_close(st);
	CHECK(sqlite3_open(cfl_test_path("v2.db"), &db) == SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "SELECT (SELECT group_concat(status) FROM "
		"(SELECT status FROM trial_rows ORDER BY trial)), (SELECT step || ' ' || "
		"score FROM trial_pruned), (SELECT user_version FROM pragma_user_version)",
		-1, &q, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(q) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(q, 0), "failed,cancelled,pruned");
	CHECK_STR((const char *)sqlite3_column_text(q, 1), "20 0.875");
	CHECK_INT(sqlite3_column_int(q, 2), 3);
	sqlite3_finalize(q);
	sqlite3_close(db);
}

/* A reading command's first step: the named run, else the latest; a
 * missing run or database is NULL with the reason. */
static void t_open_run(void)
{
	struct cfl_store *st = open_new("o.db");
	struct cfl_run_info r;
	struct cfl_err err;

	new_run(st, "first");
	new_run(st, "second");
	cfl_store_close(st);
	st = cfl_store_open_run(cfl_test_path("o.db"), "first", &r, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK_STR(r.name, "first");
	cfl_run_info_release(&r);
	cfl_store_close(st);
	st = cfl_store_open_run(cfl_test_path("o.db"), NULL, &r, &err);
	CHECK_MSG(st != NULL, "%s", err.msg);
	CHECK_STR(r.name, "second");
	cfl_run_info_release(&r);
	cfl_store_close(st);
	CHECK(cfl_store_open_run(cfl_test_path("o.db"), "third", &r, &err) == NULL);
	CHECK_CONTAINS(err.msg, "no run 'third'");
	CHECK(cfl_store_open_run(cfl_test_path("none.db"), NULL, &r, &err) == NULL);
	CHECK(err.msg[0] != 0);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_open_run),
	TEST(t_enum_names),
	TEST(t_create_run_and_find),
	TEST(t_candidates),
	TEST(t_candidate_params_json),
	TEST(t_trial_phases),
	TEST(t_migrate_v1),
	TEST(t_cancelled_pruned_and_v2),
	TEST(t_trials_results_read_back),
	TEST(t_bad_result_stores_nothing),
	TEST(t_batch_and_rollback),
	TEST(t_reopen_and_resume),
	TEST(t_ensembles),
	TEST(t_bad_files),
	TEST(t_schema_is_wal_with_foreign_keys),
	TEST(t_reader_during_write),
	TEST(t_kill_mid_transaction),
	{ 0 }
};
