/*
 * cfl train: trains one model on the train part of a data file (a
 * validation part is held out only for early stopping, or when
 * --valid-frac says so), prints its metrics on the test
 * part and writes a model file holding the model and the data encoder, so
 * `cfl predict` can apply it to raw CSV rows.  Parameters are checked before
 * the data is read: a bad one fails at once.  All the work is done by
 * src/data, src/models and src/metrics; this file parses options and prints.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/fcnn.h"
#include "cfl/metrics.h"
#include "cfl/model.h"
#include "cfl/study.h"

enum { OPT_SET = CLI_OPT_FIRST_FREE, OPT_METRICS, OPT_IMPORTANCE };

/* Shuffles per column for permutation importance (scikit-learn's default). */
#define IMPORTANCE_REPEATS 5

static void model_help(FILE *f, const struct cfl_model_ops *ops)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	if (cfl_model_help(ops, 80, &b) == 0)
		fputs(b.data, f);
	cfl_buf_release(&b);
}

/* The help; with a model (--model NAME --help), its parameters after. */
static void usage(FILE *f, const struct cfl_model_ops *model)
{
	const struct cfl_model_ops *ops;

	fprintf(f, "usage: cfl train DATA [--model NAME] [--set KEY=VALUE ...] [--seed S] [-o MODEL]\n\n"
		   "Trains one model on the train part of DATA (a CSV file, gzip or not, or\n"
		   "'-' for standard input; target last unless --target), stopping early\n"
		   "on a validation part when the model does (a part held out of train only\n"
		   "then, or when --valid-frac is given), prints its metrics on the test\n"
		   "part and writes a model file that holds the model and the data encoding\n"
		   "(`cfl predict` reads it).  It says first on stderr what it learns: the\n"
		   "target, the task and the rows.\n\n"
		   "Options:\n"
		   "  -m, --model NAME   the model [fcnn]; one of:\n"
		   "                    ");
	for (size_t i = 0; (ops = cfl_model_at(i)); i++)
		fprintf(f, " %s", ops->name);
	fprintf(f, "\n"
		   "  --set KEY=VALUE    a model parameter, repeatable ('cfl train --model M\n"
		   "                     --help' lists M's parameters) [the model's defaults]\n"
		   "  -o, --output FILE  the model file [DATA's basename with .cfl, here]\n"
		   "  --metrics LIST     metrics to print, comma-separated [acc,auc for\n"
		   "                     classification, mae,mse for regression]\n"
		   "  --importance[=N]   print the N most important input columns [20; 0: all]:\n"
		   "                     impurity (tree models: each column's share of the\n"
		   "                     splits' gain) and permutation (the drop of the first\n"
		   "                     metric on the validation part when the column is\n"
		   "                     shuffled, mean of %d seeded shuffles)\n"
		   "  -h, --help         this help (with --model: that model's parameters)\n"
		   "%s\n"
		   "Output (stdout): one 'key value' line each for the model, the seed, the\n"
		   "rows of each part, fit_seconds, for fcnn epochs_run and best_epoch (whose\n"
		   "weights were kept), test_METRIC per metric, model_file; with --importance\n"
		   "then a table of columns (one-hot columns folded into their source).\n\n"
		   "Examples:\n"
		   "  cfl train datasets/iris.csv --model linear --set l2=0.1\n"
		   "  cfl train datasets/digits.csv --model fcnn --set hidden=64,64 \\\n"
		   "      --set optimizer=adam --set lr=0.001 --set batch_size=128 \\\n"
		   "      --set epochs=40 --set patience=0 --seed 1\n"
		   "  cfl train datasets/diabetes.csv --model fcnn -o diabetes.cfl \\\n"
		   "      --metrics rmse,r2\n"
		   "  cfl train data.csv.gz --target price --model gbdt\n"
		   "  zcat data.csv.gz | cfl train - --model linear -o data.cfl\n"
		   "  cfl train datasets/wine.csv --model forest --importance=5\n",
		   IMPORTANCE_REPEATS, cli_data_help);
	if (model)
		model_help(f, model);
}

/* Says on stderr what the model trains on, after the target line. */
static void say_rows(const struct cfl_model *m, const struct cfl_data *d,
		     const char *valid_why)
{
	char line[512];

	snprintf(line, sizeof(line), "cfl train: %s: %zu train rows, %zu valid (%s), %zu test, %zu features, seed %llu",
		 m->ops->name, d->train.n, d->valid.n, valid_why, d->test.n,
		 d->enc.d, (unsigned long long)m->seed);
	cli_wrap_stderr(line);
}

/* Prints the 'key value' lines of the fit before the metrics. */
static void print_facts(const struct cfl_model *m, const struct cfl_data *d,
			uint64_t seed, double fit_secs)
{
	size_t n_run, best;

	printf("model        %s\n", m->ops->name);
	printf("seed         %llu\n", (unsigned long long)seed);
	printf("train_rows   %zu\n", d->train.n);
	printf("valid_rows   %zu\n", d->valid.n);
	printf("test_rows    %zu\n", d->test.n);
	printf("fit_seconds  %.6f\n", fit_secs);
	/* early stopping: how far it went, and which epoch it kept */
	if (!strcmp(m->ops->name, "fcnn") && cfl_fcnn_epochs(m, &n_run, &best) == 0) {
		printf("epochs_run   %zu\n", n_run);
		printf("best_epoch   %zu\n", best);
	}
}

/* Prints test_METRIC lines; an undefined metric is a warning, not a failure
 * (the model is still good to save). */
static void print_metrics(const enum cfl_metric_id *ids, size_t n_ids,
			  const struct cfl_xy *xy, const double *out)
{
	for (size_t i = 0; i < n_ids; i++) {
		const struct cfl_metric_info *mi = cfl_metric_info(ids[i]);
		struct cfl_err err = { { 0 } };
		char key[32];
		double v;

		snprintf(key, sizeof(key), "test_%s", mi->name);
		if (cfl_metric_eval(ids[i], xy->y, out, xy->n, xy->n_classes, &v,
				    &err) == 0)
			printf("%-12s %.10g\n", key, v);
		else
			fprintf(stderr, "cfl train: warning: test %s: %s\n",
				mi->name, err.msg);
	}
}

/* --importance: the model's columns by impurity importance (else by
 * permutation importance), the top ones. */
static int print_importance(const struct cfl_model *m, const struct cfl_data *d,
			    enum cfl_metric_id metric, long top, struct cfl_err *err)
{
	struct cfl_importance imp;
	const struct cfl_xy *xy = d->valid.n ? &d->valid : NULL;
	struct cfl_buf b;
	int rc;

	if (!xy)
		fprintf(stderr, "cfl train: no validation part: no permutation importance\n");
	if (cfl_importance_by_column(m, &d->enc, xy, metric, IMPORTANCE_REPEATS,
				     cfl_seed_derive(m->seed, "importance", 0), &imp, err))
		return -1;
	if (!imp.impurity && !imp.permutation) {
		fprintf(stderr, "cfl train: %s has no impurity importance and there is no "
			"validation part: no importance to print\n", m->ops->name);
		cfl_importance_release(&imp);
		return 0;
	}
	cfl_buf_init(&b);
	rc = cfl_importance_format(&imp, &d->enc, top, cfl_metric_info(metric)->name,
				   IMPORTANCE_REPEATS, &b);
	if (rc)
		cfl_err_set(err, "out of memory");
	else
		fputs(b.data, stdout);
	cfl_buf_release(&b);
	cfl_importance_release(&imp);
	return rc;
}

/* A validation part only when the model stops early on it, or importance
 * of a model without impurity importance needs it for permutation
 * importance: the study's rule (why into why), applied to o. */
static void settle_valid(struct cfl_data_opts *o, const struct cfl_model_ops *ops,
			 const struct cfl_params *params, int importance,
			 char *why, size_t cap)
{
	struct cfl_study_plan sp;

	cfl_study_plan_init(&sp);
	sp.data = *o;
	sp.num_repeat = 1;
	sp.repeat.n_models = 1;
	sp.repeat.models[0] = ops->name;
	sp.repeat.params[0] = *params;	/* read only */
	sp.repeat.ensembles = "none";
	sp.repeat.importance = importance && !ops->importance;
	cfl_study_plan_settle_valid(&sp, why, cap);
	*o = sp.data;
}

/* What the command line asks for. */
struct train_args {
	const char *output, *metrics;
	const struct cfl_model_ops *ops;
	struct cfl_params params;	/* --set */
	struct cfl_data_opts o;
	long top;	/* --importance: columns to print; -1: none */
};

/* Parses and checks the command line into a (a->params to release in
 * every case): -1 to go on, else the exit code (0 after --help; 2 after a
 * usage error, printed). */
static int parse_args(struct train_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, 0, 'h' },
		{ "model", required_argument, 0, 'm' },
		{ "set", required_argument, 0, OPT_SET },
		{ "output", required_argument, 0, 'o' },
		{ "metrics", required_argument, 0, OPT_METRICS },
		{ "importance", optional_argument, 0, OPT_IMPORTANCE },
		CLI_DATA_LONGOPTS,
		{ 0, 0, 0, 0 },
	};
	const char *model_name = "fcnn";
	struct cfl_err err = { { 0 } };
	enum cfl_metric_id ids[CFL_M_COUNT];
	int c, r, help = 0, model_set = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hm:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help = 1;
			continue;
		case 'm':
			model_name = optarg;
			model_set = 1;
			continue;
		case 'o':
			a->output = optarg;
			continue;
		case OPT_METRICS:
			a->metrics = optarg;
			continue;
		case OPT_IMPORTANCE:
			a->top = 20;
			if (optarg && cli_parse_long(optarg, 0, 1000000, &a->top))
				return cli_usage_error("train", "--importance=N wants a count >= 0, got '%s'",
						       optarg);
			continue;
		case OPT_SET:
			if (cfl_params_set_arg(&a->params, optarg, &err))
				return cli_usage_error("train", "--set: %s", err.msg);
			continue;
		case '?':
		case ':':
			return cli_bad_option("train", argc, argv, ":hm:o:", longopts);
		}
		r = cli_data_option("train", c, optarg, &a->o);
		if (r <= 0)
			return r < 0 ? CLI_USAGE : cli_usage_error("train", "unknown option");
	}
	a->ops = cfl_model_find(model_name);
	/* --help about a model that is not there is an error, not the
	 * help of none */
	if (!a->ops && (!help || model_set)) {
		cfl_study_model_check(model_name, &err);
		return cli_usage_error("train", "%s", err.msg);
	}
	if (help) {
		usage(stdout, a->ops);
		return CLI_OK;
	}
	if (optind + 1 != argc)
		return optind >= argc ? cli_usage_error("train", "missing DATA")
		       : cli_usage_error("train", "expected one DATA file, got '%s' too",
					 argv[optind + 1]);
	if (cfl_model_check_params(a->ops, &a->params, &err))
		return cli_usage_error("train", "%s", err.msg);
	a->o.path = argv[optind];
	/* the names now, before the data is read; the task's fit later */
	if (a->metrics && cli_metric_ids("train", a->metrics, -1, ids) < 0)
		return CLI_USAGE;
	return -1;
}

int cmd_train(int argc, char **argv)
{
	struct train_args a = { .top = -1 };
	struct cfl_data d;
	struct cfl_err err = { { 0 } };
	struct cfl_model *m = NULL;
	enum cfl_metric_id ids[CFL_M_COUNT];
	long n_ids;
	char *out_path = NULL, valid_why[256];
	double *pred = NULL, t0, fit_secs;
	int rc;

	cfl_data_opts_init(&a.o);
	cfl_params_init(&a.params);
	memset(&d, 0, sizeof(d));
	rc = parse_args(&a, argc, argv);
	if (rc >= 0)
		goto out;
	rc = CLI_FAIL;
	settle_valid(&a.o, a.ops, &a.params, a.top >= 0, valid_why, sizeof(valid_why));
	out_path = a.output ? strdup(a.output) : cfl_path_default_output(a.o.path, ".cfl");
	if (!out_path) {
		rc = cli_failf("out of memory");
		goto out;
	}
	if (cfl_data_load(&d, &a.o, &err))
		goto fail;
	cli_data_target("train", &d);
	cli_data_warn(&d, &a.o);
	n_ids = cli_metric_ids("train", a.metrics, d.train.n_classes, ids);
	if (n_ids < 0) {
		rc = CLI_USAGE;
		goto out;
	}
	m = cfl_model_new(a.ops, &a.params, a.o.seed, &err);
	if (!m)
		goto fail;
	say_rows(m, &d, valid_why);
	t0 = cfl_now();
	if (cfl_model_fit(m, &d.train, &d.valid, &err))
		goto fail;
	fit_secs = cfl_now() - t0;
	pred = cfl_calloc(d.test.n ? d.test.n : 1,
			  cfl_model_n_out(m) * sizeof(double), &err);
	if (!pred || cfl_model_predict(m, d.test.x, d.test.n, pred, &err))
		goto fail;
	if (cfl_model_save_file(m, &d.enc, out_path, &err))
		goto fail;
	print_facts(m, &d, a.o.seed, fit_secs);
	print_metrics(ids, (size_t)n_ids, &d.test, pred);
	printf("model_file   %s\n", out_path);
	if (a.top >= 0 && print_importance(m, &d, ids[0], a.top, &err))
		goto fail;
	rc = CLI_OK;
	goto out;
fail:
	rc = cli_fail(&err);
out:
	free(pred);
	cfl_model_free(m);
	cfl_data_release(&d);
	cfl_params_release(&a.params);
	free(out_path);
	return rc;
}
