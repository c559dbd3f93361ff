/*
 * cfl predict: applies a model file written by `cfl train`, or a row of a
 * bundle written by `cfl repeat --save` / `cfl tune --save`, to a CSV file
 * with the same columns (matched by name, in any order; extra columns are
 * ignored).  The file's encoder turns raw rows into model inputs, so a
 * missing column or text in a numeric column is an error naming the file,
 * line and column.  When the target column is present the metrics are
 * printed too.  The work is done by src/data, src/models, src/study (the
 * bundle's rows) and src/metrics.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/bundle.h"
#include "cfl/metrics.h"
#include "cfl/model.h"

enum { OPT_METRICS = CLI_OPT_FIRST_FREE, OPT_ROW, OPT_LIST, OPT_KEEP, OPT_KEEP_ALL };

static void usage(FILE *f)
{
	fprintf(f, "usage: cfl predict MODEL DATA [--keep COLS] [--proba] [-o OUT.csv]\n"
		   "       cfl predict BUNDLE DATA [--row ROW] [--keep COLS] [--proba] [-o OUT.csv]\n"
		   "       cfl predict BUNDLE --list\n\n"
		   "Applies MODEL (a file written by 'cfl train') or a row of BUNDLE (a file\n"
		   "written by 'cfl repeat/tune/auto --save') to DATA, a CSV\n"
		   "file with the columns the model was trained on (by name, any order;\n"
		   "others ignored; gzip or '-' for standard input too).  Writes one CSV\n"
		   "row per data row: the columns --keep carries through (as written, in\n"
		   "DATA's order), the column 'prediction' (the most probable class, or the\n"
		   "predicted value), and with --proba one column 'proba_CLASS' per class.\n"
		   "When DATA has the target column, also prints the metrics: to stdout\n"
		   "with -o, else to stderr; a bundle's metrics on its run's own data file\n"
		   "(the same SHA-256) are said to include the rows it trained on.\n\n"
		   "A bundle's rows are its run's table rows: a model ('fcnn': the mean of\n"
		   "its repeats), one repeat ('fcnn#2'), an ensemble ('stacking', 'mean',\n"
		   "...), tune's refit ('best'), auto's leaderboard ('linear:2ef38b55': a\n"
		   "bag, 'mean', 'stacking').  A row's predictions on the run's own test\n"
		   "part are the ones the run stored, bit for bit.\n\n"
		   "Options:\n"
		   "  --row ROW          the bundle's row to apply [the run's recommendation:\n"
		   "                     the best on the first metric on validation;\n"
		   "                     auto: the leaderboard's rank 1]\n"
		   "  --list             list the bundle's rows, members and scores (as\n"
		   "                     'cfl bundle show'), then exit\n"
		   "  --keep COLS        DATA's columns to write before the predictions:\n"
		   "                     names, comma-separated, or a PCRE2 pattern; ''\n"
		   "                     for none [the columns the model does not use that\n"
		   "                     look like row ids: a name like id, row_id,\n"
		   "                     customerId, or texts or integers all distinct]\n"
		   "  --keep-all         write every column of DATA before the predictions\n"
		   "  --proba            add the class probabilities (classification\n"
		   "                     models only) [off]\n"
		   "  -o, --output FILE  write the predictions to FILE [stdout]\n"
		   "  --metrics LIST     metrics to print when DATA has the target,\n"
		   "                     comma-separated [acc,auc for classification,\n"
		   "                     mae,mse for regression]\n"
		   "  -h, --help         this help\n\n"
		   "Examples:\n"
		   "  cfl predict iris.cfl datasets/iris.csv --proba\n"
		   "  cfl predict churn.cfl customers.csv.gz --keep customer_id -o out.csv\n"
		   "  cfl predict iris.cfl datasets/iris.csv --keep '^petal_|^target$'\n"
		   "  cfl predict diabetes.cfl new_rows.csv -o predictions.csv\n"
		   "  cfl predict model.cfl test.csv --metrics acc,f1 -o /dev/null\n"
		   "  cfl predict run.cfl new_rows.csv --row stacking\n"
		   "  cfl predict run.cfl --list\n");
}

/* --list: the rows of the bundle at path, as `cfl bundle show`. */
static int list_rows(const char *path)
{
	struct cfl_bundle b;
	struct cfl_err err = { { 0 } };

	if (cfl_bundle_read(path, &b, &err))
		return cli_fail(&err);
	cli_bundle_list(stdout, &b, NULL);
	cfl_bundle_release(&b);
	return CLI_OK;
}

/* The model to apply: a bundle's row (row_name, else the run's
 * recommendation) into *b and *row, or a model file into *m and *enc;
 * returns the encoder of the two, or NULL after printing why (*rc: the
 * exit code). */
static const struct cfl_encoder *load(const char *path, const char *row_name,
				      struct cfl_bundle *b,
				      const struct cfl_bundle_row **row,
				      struct cfl_model **m, struct cfl_encoder *enc,
				      int *rc)
{
	struct cfl_err err = { { 0 } };

	if (!cfl_bundle_sniff(path)) {
		*m = cfl_model_load_file(path, enc, &err);
		if (!*m)
			*rc = cli_fail(&err);
		else if (row_name)
			*rc = cli_usage_error("predict", "--row needs a bundle; '%s' is a model file",
					      path);
		return *m && !row_name ? enc : NULL;
	}
	if (cfl_bundle_load(path, b, &err)) {
		*rc = cli_fail(&err);
		return NULL;
	}
	*row = cfl_bundle_find(b, row_name ? row_name : b->recommended);
	if (!*row) {
		*rc = row_name ? cli_bundle_unknown_row("predict", b, path, row_name)
			       : cli_failf("bundle '%s': its default row '%s' is not there",
					   path, b->recommended);
		return NULL;
	}
	if (!row_name)
		fprintf(stderr, "cfl predict: row '%s' (the run's %s; --row to choose)\n",
			(*row)->name, strcmp(b->kind, "auto") ? "best on validation"
			: "leaderboard's rank 1");
	return &b->enc;
}

/* Prints the metrics of pred against xy's target on mf (a failing one is
 * a warning), after a note when DATA is the very file the model was fitted
 * on (fit_sha: its SHA-256, or NULL): then they are not held out. */
static void print_metrics(FILE *mf, const enum cfl_metric_id *ids, long n_ids,
			  const struct cfl_xy *xy, const double *pred,
			  int n_classes, const char *data_path,
			  const char *fit_sha, int is_row)
{
	struct cfl_err err = { { 0 } };
	char hex[65];

	if (n_ids && fit_sha && strcmp(data_path, "-") &&
	    cfl_data_file_sha256(data_path, hex, &err) == 0 && !strcmp(hex, fit_sha))
		cli_wrap_stderr(is_row ? "cfl predict: note: DATA is the run's own data file (the same SHA-256): its rows include the rows the run trained on, so these metrics are not held out (the run's table has the test part's)"
				: "cfl predict: note: DATA is the file the model was trained on (the same SHA-256): its rows include the training rows, so these metrics are not held out (cfl train printed the test part's)");
	for (long i = 0; i < n_ids; i++) {
		const struct cfl_metric_info *mi = cfl_metric_info(ids[i]);
		double v;

		if (cfl_metric_eval(ids[i], xy->y, pred, xy->n, n_classes, &v, &err) == 0)
			fprintf(mf, "%-8s %.10g\n", mi->name, v);
		else
			fprintf(stderr, "cfl predict: warning: %s: %s\n", mi->name, err.msg);
	}
}

int cmd_predict(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, 0, 'h' },
		{ "proba", no_argument, 0, 'p' },
		{ "output", required_argument, 0, 'o' },
		{ "metrics", required_argument, 0, OPT_METRICS },
		{ "row", required_argument, 0, OPT_ROW },
		{ "list", no_argument, 0, OPT_LIST },
		{ "keep", required_argument, 0, OPT_KEEP },
		{ "keep-all", no_argument, 0, OPT_KEEP_ALL },
		{ 0, 0, 0, 0 },
	};
	const char *output = NULL, *metrics = NULL, *model_path, *data_path;
	const char *row_name = NULL;
	struct cfl_keep keep = { CFL_KEEP_IDS, NULL };
	size_t *cols = NULL, n_cols = 0;
	struct cfl_encoder enc;
	const struct cfl_encoder *encp;
	struct cfl_bundle b;
	const struct cfl_bundle_row *row = NULL;
	struct cfl_csv csv;
	struct cfl_xy xy;
	struct cfl_err err = { { 0 } };
	struct cfl_model *m = NULL;
	enum cfl_metric_id ids[CFL_M_COUNT];
	long n_ids = 0;
	double *pred = NULL;
	struct cfl_buf out;
	size_t n_out;
	int c, proba = 0, list = 0, rc = CLI_FAIL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return CLI_OK;
		case 'p':
			proba = 1;
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_METRICS:
			metrics = optarg;
			break;
		case OPT_ROW:
			row_name = optarg;
			break;
		case OPT_LIST:
			list = 1;
			break;
		case OPT_KEEP:
			keep.mode = *optarg ? CFL_KEEP_LIST : CFL_KEEP_NONE;
			keep.spec = optarg;
			break;
		case OPT_KEEP_ALL:
			keep.mode = CFL_KEEP_ALL;
			break;
		default:
			return cli_bad_option("predict", argc, argv, ":ho:", longopts);
		}
	}
	if (list)
		return argc - optind != 1
		       ? cli_usage_error("predict", "--list expects BUNDLE only")
		       : list_rows(argv[optind]);
	if (argc - optind != 2)
		return cli_usage_error("predict", argc - optind < 2
				       ? "expected MODEL and DATA"
				       : "expected MODEL and DATA only, got '%s' too",
				       argv[argc - 1]);
	model_path = argv[optind];
	data_path = argv[optind + 1];
	if (metrics && cli_metric_ids("predict", metrics, -1, ids) < 0)
		return CLI_USAGE;

	memset(&b, 0, sizeof(b));
	memset(&enc, 0, sizeof(enc));
	memset(&csv, 0, sizeof(csv));
	cfl_xy_init(&xy);
	cfl_buf_init(&out);
	encp = load(model_path, row_name, &b, &row, &m, &enc, &rc);
	if (!encp)
		goto out;
	if (proba && encp->n_classes == 0) {
		rc = cli_usage_error("predict", "--proba needs a classification model; '%s' predicts a regression target ('%s')",
				     model_path, encp->target_name ? encp->target_name : "?");
		goto out;
	}
	n_out = encp->n_classes > 0 ? (size_t)encp->n_classes : 1;
	if (cfl_encoder_read_csv_keep(encp, data_path, &keep, &csv, &cols,
				      &n_cols, &err))
		goto fail;
	if (csv.recoded)
		cli_warn_recoded(data_path, csv.recoded_line);
	if (cfl_encoder_apply(encp, &csv, -1, &xy, &err))
		goto fail;
	if (xy.y) {
		n_ids = cli_metric_ids("predict", metrics, encp->n_classes, ids);
		if (n_ids < 0) {
			rc = CLI_USAGE;
			goto out;
		}
	}
	pred = cfl_calloc(xy.n ? xy.n : 1, n_out * sizeof(double), &err);
	if (!pred || (row ? cfl_bundle_predict(&b, row, xy.x, xy.n, pred, &err)
			  : cfl_model_predict(m, xy.x, xy.n, pred, &err)))
		goto fail;
	if (cfl_encoder_format_predictions(encp, pred, xy.n, proba, &csv, cols,
					   n_cols, &out)) {
		rc = cli_failf("out of memory");
		goto out;
	}
	/* -o: written atomically, no half-written file when something fails */
	if (output && cfl_write_file_atomic(output, out.data, out.len, &err))
		goto fail;
	if (!output && (fwrite(out.data, 1, out.len, stdout) != out.len ||
			fflush(stdout))) {
		rc = cli_failf("cannot write the predictions to 'stdout'");
		goto out;
	}
	/* the encoder (and a bundle) knows the data file it was fitted on:
	 * the same bytes hold the rows the model trained on */
	print_metrics(output ? stdout : stderr, ids, n_ids, &xy, pred,
		      encp->n_classes, data_path,
		      encp->data_sha256[0] ? encp->data_sha256
		      : row ? b.dataset_sha256 : NULL, row != NULL);
	rc = CLI_OK;
	goto out;
fail:
	rc = cli_fail(&err);
out:
	free(cols);
	cfl_buf_release(&out);
	free(pred);
	cfl_xy_release(&xy);
	cfl_csv_release(&csv);
	cfl_encoder_release(&enc);
	cfl_model_free(m);
	cfl_bundle_release(&b);
	return rc;
}
