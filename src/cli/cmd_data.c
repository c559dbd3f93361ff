/*
 * cfl data: what cfl makes of a CSV file.  `describe` prints the inferred
 * schema (column types, missing and distinct counts, what was dropped and
 * why, the target, the task, the classes, the split sizes, the SHA-256);
 * `load` only loads and encodes, timing it (for benchmarks).  Everything is
 * computed by src/data; this file only prints.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: cfl data describe FILE [options]\n"
		   "       cfl data load FILE [options]\n\n"
		   "describe: prints what cfl makes of a CSV file: each column's type\n"
		   "(numeric, categorical, dropped and why), missing and distinct counts, the\n"
		   "target, the task, the classes with their counts, the split sizes and the\n"
		   "file's SHA-256.\n"
		   "load: loads, types, splits and encodes the file and prints one line with\n"
		   "the shapes and the time it took (for benchmarks).\n\n"
		   "Options:\n"
		   "  -h, --help         this help\n"
		   "%s\n"
		   "Examples:\n"
		   "  cfl data describe datasets/iris.csv\n"
		   "  cfl data describe datasets/diabetes.csv --task clf\n"
		   "  cfl data describe data.csv --target price --drop '^id$|_raw$'\n"
		   "  cfl data describe data.csv --categorical '^(zip|grade)$'\n"
		   "  cfl data load build/bench/synth_clf_100k.csv\n",
		   cli_data_help);
}

static const char *task_name(enum cfl_task t)
{
	return t == CFL_TASK_CLF ? "classification" : "regression";
}

/* The note column of column c's row: why it is typed so. */
static void col_note(const struct cfl_schema *s, const struct cfl_column *c,
		     char *note, size_t cap)
{
	note[0] = '\0';
	if (c->type == CFL_COL_DROPPED)
		snprintf(note, cap, "dropped: %s", c->drop_reason);
	else if (c->type == CFL_COL_NUMERIC)
		snprintf(note, cap, "%.6g .. %.6g%s", c->min, c->max,
			 c->is_int ? ", integers" : "");
	else if (c->type == CFL_COL_TARGET && s->task == CFL_TASK_REG)
		snprintf(note, cap, "%.6g .. %.6g", c->min, c->max);
	else if (c->type == CFL_COL_CATEGORICAL)
		snprintf(note, cap, "one-hot, %s", c->type_reason);
	else if (c->type == CFL_COL_TARGET)
		snprintf(note, cap, "%zu classes", s->n_classes);
}

static void print_describe(const struct cfl_data *d,
			   const struct cfl_data_opts *o)
{
	const struct cfl_schema *s = &d->schema;
	const struct cfl_csv *csv = &d->csv;
	size_t w = 6, n_num = 0, n_cat = 0, n_drop = 0, n_int = 0, n_note = 0;
	int gap;
	const char *delim = csv->delim == ',' ? "comma" :
			    csv->delim == ';' ? "semicolon" : "tab";

	for (size_t j = 0; j < s->n_cols; j++) {
		size_t l = strlen(s->cols[j].name);

		if (l > w)
			w = l;
		n_num += s->cols[j].type == CFL_COL_NUMERIC;
		n_cat += s->cols[j].type == CFL_COL_CATEGORICAL;
		n_drop += s->cols[j].type == CFL_COL_DROPPED;
	}
	if (w > 40)
		w = 40;
	printf("file      %s%s\n", csv->name, csv->gzip ? " (gzip)" : "");
	if (csv->recoded)
		printf("encoding  not UTF-8 (line %zu first): read as %s\n",
		       csv->recoded_line, csv->recoded);
	printf("sha256    %s\n", d->sha256_hex);
	if (d->n_no_target[0])
		printf("rows      %zu (%zu without a target value dropped)\n",
		       csv->n_rows, d->n_no_target[0]);
	else
		printf("rows      %zu\n", csv->n_rows);
	printf("columns   %zu (%s-separated): %zu numeric, %zu categorical, %zu dropped, 1 target\n",
	       csv->n_cols, delim, n_num, n_cat, n_drop);
	printf("target    %s\n", s->cols[s->target].name);
	printf("task      %s%s\n", task_name(s->task),
	       o->schema.task == CFL_TASK_AUTO ? " (inferred)" : " (forced by --task)");
	/* two blanks between the columns, one when that keeps every row
	 * within 80 columns; a note that still does not fit gets a line */
	for (size_t j = 0; j < s->n_cols; j++) {
		char note[128];

		col_note(s, &s->cols[j], note, sizeof(note));
		if (strlen(note) > n_note)
			n_note = strlen(note);
	}
	gap = w + 34 + n_note > 80 ? 1 : 2;
	printf("\n%-*s%*s%-11s%*s%7s%*s%8s%*s%s\n", (int)w, "column", gap, "", "type",
	       gap, "", "missing", gap, "", "distinct", gap, "", "note");
	for (size_t j = 0; j < s->n_cols; j++) {
		const struct cfl_column *c = &s->cols[j];
		char note[128], distinct[24];

		col_note(s, c, note, sizeof(note));
		if (c->distinct_capped)
			snprintf(distinct, sizeof(distinct), ">%zu", c->n_distinct - 1);
		else
			snprintf(distinct, sizeof(distinct), "%zu", c->n_distinct);
		n_int += c->type == CFL_COL_NUMERIC && c->is_int;
		printf("%-*.*s%*s%-11s%*s%7zu%*s%8s%s%*s%s\n", (int)w, (int)w, c->name,
		       gap, "", cfl_coltype_name(c->type), gap, "", c->n_missing, gap, "",
		       distinct, w + 26 + 4 * (size_t)gap + strlen(note) > 80 ? "\n     " : "",
		       gap, "", note);
	}
	if (n_int)
		printf("(integers: kept numeric; --categorical REGEX one-hot encodes such columns)\n");
	if (s->task == CFL_TASK_CLF) {
		size_t cw = 5;

		for (size_t i = 0; i < s->n_classes; i++)
			if (strlen(s->class_names[i]) > cw)
				cw = strlen(s->class_names[i]);
		if (cw > 40)
			cw = 40;
		printf("\n%-*s  %5s  %6s  %s\n", (int)cw, "class", "index", "count", "share");
		for (size_t i = 0; i < s->n_classes; i++)
			printf("%-*.*s  %5zu  %6zu  %5.1f%%\n", (int)cw, (int)cw,
			       s->class_names[i], i, s->class_counts[i],
			       100.0 * (double)s->class_counts[i] / (double)csv->n_rows);
	}
	printf("\nsplit     seed %llu: train %zu, valid %zu, test %zu%s\n",
	       (unsigned long long)o->seed, d->train.n, d->valid.n, d->test.n,
	       o->test_path ? " (test from --test)" : "");
	if (o->valid_path)
		printf("valid     from --valid: used by every command\n");
	else if (o->valid_frac_given)
		printf("valid     --valid-frac %g: held out by every command\n",
		       o->valid_frac);
	else
		printf("valid     held out only by a command that uses it (early stopping,\n"
		       "          tune's candidate scoring, an ensemble fitted without --folds);\n"
		       "          otherwise every model trains on all %zu rows\n",
		       d->train.n + d->valid.n);
	printf("encoded   %zu features\n", d->enc.d);
}

int cmd_data(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, 0, 'h' },
		CLI_DATA_LONGOPTS,
		{ 0, 0, 0, 0 },
	};
	struct cfl_data_opts o;
	struct cfl_data d;
	struct cfl_err err = { { 0 } };
	const char *sub, *cmd;
	double t0, secs;
	int c;

	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	sub = argv[1];
	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(sub, "describe") == 0)
		cmd = "data describe";
	else if (strcmp(sub, "load") == 0)
		cmd = "data load";
	else
		return cli_usage_error("data", "unknown subcommand '%s' (describe or load)", sub);
	cfl_data_opts_init(&o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":h", longopts, NULL)) != -1) {
		int r;

		if (c == 'h') {
			usage(stdout);
			return CLI_OK;
		}
		if (c == '?' || c == ':')
			return cli_bad_option(cmd, argc - 1, argv + 1, ":h", longopts);
		r = cli_data_option(cmd, c, optarg, &o);
		if (r < 0)
			return CLI_USAGE;
		if (r == 0)
			return cli_usage_error(cmd, "unknown option");
	}
	if (optind + 1 != argc - 1)
		return cli_usage_error(cmd, optind + 1 > argc - 1 ? "missing FILE"
								  : "expected one FILE, got more");
	o.path = argv[optind + 1];
	t0 = cfl_now();
	if (cfl_data_load(&d, &o, &err))
		return cli_fail(&err);
	secs = cfl_now() - t0;
	cli_data_warn(&d, &o);
	if (strcmp(sub, "load") == 0)
		printf("rows %zu cols %zu features %zu train %zu valid %zu test %zu seconds %.4f\n",
		       d.csv.n_rows, d.csv.n_cols, d.enc.d, d.train.n, d.valid.n,
		       d.test.n, secs);
	else
		print_describe(&d, &o);
	cfl_data_release(&d);
	return CLI_OK;
}
