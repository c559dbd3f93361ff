/*
 * cfl bundle show: what a bundle written by `cfl repeat --save` or `cfl
 * tune --save` holds: the run it comes from, its rows (the table's rows a
 * user can apply with `cfl predict --row`), each row's members and weights
 * and the scores the run recorded.  The listing is shared with
 * `cfl predict --list`.  Reading and checking the file is src/store's.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/bundle.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cfl bundle show FILE [--row ROW]\n\n"
		   "Lists what a bundle (written by 'cfl repeat --save', 'cfl tune --save'\n"
		   "or 'cfl auto --save') holds: the run and dataset it comes from, then\n"
		   "one line per row that 'cfl predict FILE DATA --row ROW' applies, with how it\n"
		   "combines its members (models, or the fold models of one repeat,\n"
		   "averaged), their weights, and the scores the run recorded (mean over\n"
		   "the row's trials, or the ensemble's value).  The row marked '*' is the\n"
		   "one cfl predict applies by default: the best on the first metric on\n"
		   "the validation part (an auto run's: its leaderboard's rank 1; a run\n"
		   "without a validation part: the mean, else the first row).\n\n"
		   "Options:\n"
		   "  --row ROW   only this row [all]\n"
		   "  -h, --help  this help\n\n"
		   "Examples:\n"
		   "  cfl bundle show iris.cfl\n"
		   "  cfl bundle show iris.cfl --row stacking\n"
		   "  cfl predict iris.cfl datasets/iris.csv --list\n");
}

/* One item of a row's members or scores after the row's columns (37
 * wide), wrapped to the next line under them past 80 columns. */
#define ROW_INDENT 37
#define ROW_WIDTH 80

static void put_item(FILE *f, size_t *col, const char *text)
{
	size_t len = strlen(text);

	if (*col > ROW_INDENT && *col + 1 + len > ROW_WIDTH) {
		fprintf(f, "\n%*s", ROW_INDENT, "");
		*col = ROW_INDENT;
	}
	fprintf(f, " %s", text);
	*col += 1 + len;
}

void cli_bundle_list(FILE *f, const struct cfl_bundle *b, const char *only)
{
	char why[96];

	cfl_bundle_why_default(b, why, sizeof(why));
	fprintf(f, "bundle of %s run '%s' (cfl %s) on '%s'\n"
		   "dataset sha256 %s\n%zu models; default row '%s' (%s)\n\n",
		b->kind, b->run, b->cfl_version, b->dataset, b->dataset_sha256,
		b->n_models, b->recommended, why);
	fprintf(f, "  %-16s %-8s %-8s %s\n", "row", "kind", "method", "members / scores");
	for (size_t i = 0; i < b->n_rows; i++) {
		const struct cfl_bundle_row *r = &b->rows[i];
		char item[160];
		size_t col, n;

		if (only && strcmp(only, r->name))
			continue;
		fprintf(f, "%c %-16s %-8s %-8s", strcmp(r->name, b->recommended) ? ' ' : '*',
			r->name, r->kind, cfl_bundle_method_name(r->method));
		col = ROW_INDENT;
		for (size_t j = 0; j < r->n_members; j++) {
			const struct cfl_bundle_member *m = &r->members[j];

			n = 0;
			for (size_t k = 0; k < m->n_models && n < sizeof(item) - 24; k++)
				n += (size_t)snprintf(item + n, sizeof(item) - n, "%s%zu",
						      k ? "+" : "", m->models[k] + 1);
			if (!isnan(m->weight))
				n += (size_t)snprintf(item + n, sizeof(item) - n, " x%.6g",
						      m->weight);
			snprintf(item + n, sizeof(item) - n, "%s",
				 j + 1 < r->n_members ? "," : "");
			put_item(f, &col, item);
		}
		fputc('\n', f);
		if (r->n_scores) {
			fprintf(f, "%*s", ROW_INDENT, "");
			col = ROW_INDENT;
			for (size_t j = 0; j < r->n_scores; j++) {
				const struct cfl_bundle_score *s = &r->scores[j];

				if (isnan(s->value))	/* a part the run had not */
					continue;
				n = (size_t)snprintf(item, sizeof(item), "%s %s %.6g",
						     s->split, s->metric, s->value);
				/* a spread of equal figures is rounding, not one */
				if (!isnan(s->std) && s->std > 1e-12 * fabs(s->value))
					snprintf(item + n, sizeof(item) - n, "+-%.3g", s->std);
				put_item(f, &col, item);
			}
			fputc('\n', f);
		}
	}
	fprintf(f, "\nmodels (id trial model repeat fold):\n");
	for (size_t i = 0; i < b->n_models; i++)
		fprintf(f, "  %zu %lld %s %d %d\n", i + 1, (long long)b->models[i].trial,
			b->models[i].model, b->models[i].repeat, b->models[i].fold);
}

int cli_bundle_unknown_row(const char *cmd, const struct cfl_bundle *b,
			   const char *path, const char *row)
{
	const char **names = calloc(b->n_rows + 1, sizeof(*names));
	const char *near;
	int rc;

	for (size_t i = 0; names && i < b->n_rows; i++)
		names[i] = b->rows[i].name;
	near = names ? cli_closest(row, names, b->n_rows) : NULL;
	if (near)
		rc = cli_usage_error(cmd, "bundle '%s' has no row '%s'; did you mean '%s'? ('cfl bundle show %s' lists them)",
				     path, row, near, path);
	else
		rc = cli_usage_error(cmd, "bundle '%s' has no row '%s' ('cfl bundle show %s' lists them)",
				     path, row, path);
	free(names);
	return rc;
}

int cmd_bundle(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, 0, 'h' },
		{ "row", required_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	const char *only = NULL;
	struct cfl_bundle b;
	struct cfl_err err = { { 0 } };
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CLI_OK;
		}
		return cli_bad_option("bundle", argc, argv, "+h", longopts);
	}
	if (optind >= argc)
		return cli_usage_error("bundle", "expected 'show FILE'");
	if (strcmp(argv[optind], "show")) {
		static const char *const subs[] = { "show" };
		const char *near = cli_closest(argv[optind], subs, 1);

		return cli_usage_error("bundle", "unknown subcommand '%s'%s%s%s",
				       argv[optind], near ? "; did you mean '" : "",
				       near ? near : "", near ? "'?" : "");
	}
	/* the options of "show": its own argv, getopt started afresh */
	argc -= optind;
	argv += optind;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CLI_OK;
		}
		if (c == 'r') {
			only = optarg;
			continue;
		}
		return cli_bad_option("bundle", argc, argv, ":h", longopts);
	}
	if (argc - optind != 1)
		return cli_usage_error("bundle", argc - optind < 1 ? "expected FILE"
				       : "expected FILE only, got '%s' too", argv[argc - 1]);
	if (cfl_bundle_read(argv[optind], &b, &err))
		return cli_fail(&err);
	if (only && !cfl_bundle_find(&b, only)) {
		int rc = cli_bundle_unknown_row("bundle", &b, argv[optind], only);

		cfl_bundle_release(&b);
		return rc;
	}
	cli_bundle_list(stdout, &b, only);
	cfl_bundle_release(&b);
	return fflush(stdout) || ferror(stdout) ? cli_failf("cannot write to stdout")
						 : CLI_OK;
}
