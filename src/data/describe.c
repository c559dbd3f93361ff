/*
 * `cfl data describe`'s text: what cfl makes of a CSV file, column by
 * column, laid out for an 80-column terminal.  Reads a loaded struct
 * cfl_data only; src/cli prints the buffer.
 */
#include "cfl/data.h"

#include <stdio.h>
#include <string.h>

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

int cfl_data_describe(const struct cfl_data *d, const struct cfl_data_opts *o,
		      struct cfl_buf *b)
{
	const struct cfl_schema *s = &d->schema;
	const struct cfl_csv *csv = &d->csv;
	size_t w = 6, n_num = 0, n_cat = 0, n_drop = 0, n_int = 0, n_note = 0;
	int gap, rc = 0;
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
	rc |= cfl_buf_printf(b, "file      %s%s\n", csv->name, csv->gzip ? " (gzip)" : "");
	if (csv->recoded)
		rc |= cfl_buf_printf(b, "encoding  not UTF-8 (line %zu first): read as %s\n",
				     csv->recoded_line, csv->recoded);
	rc |= cfl_buf_printf(b, "sha256    %s\n", d->sha256_hex);
	if (d->n_no_target[0])
		rc |= cfl_buf_printf(b, "rows      %zu (%zu without a target value dropped)\n",
				     csv->n_rows, d->n_no_target[0]);
	else
		rc |= cfl_buf_printf(b, "rows      %zu\n", csv->n_rows);
	rc |= cfl_buf_printf(b, "columns   %zu (%s-separated): %zu numeric, %zu categorical, %zu dropped, 1 target\n",
			     csv->n_cols, delim, n_num, n_cat, n_drop);
	rc |= cfl_buf_printf(b, "target    %s\n", s->cols[s->target].name);
	rc |= cfl_buf_printf(b, "task      %s%s\n", task_name(s->task),
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
	rc |= cfl_buf_printf(b, "\n%-*s%*s%-11s%*s%7s%*s%8s%*s%s\n", (int)w, "column", gap, "", "type",
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
		rc |= cfl_buf_printf(b, "%-*.*s%*s%-11s%*s%7zu%*s%8s%s%*s%s\n", (int)w, (int)w, c->name,
				     gap, "", cfl_coltype_name(c->type), gap, "", c->n_missing, gap, "",
				     distinct, w + 26 + 4 * (size_t)gap + strlen(note) > 80 ? "\n     " : "",
				     gap, "", note);
	}
	if (n_int)
		rc |= cfl_buf_printf(b, "(integers: kept numeric; --categorical REGEX one-hot encodes such columns)\n");
	if (s->task == CFL_TASK_CLF) {
		size_t cw = 5;

		for (size_t i = 0; i < s->n_classes; i++)
			if (strlen(s->class_names[i]) > cw)
				cw = strlen(s->class_names[i]);
		if (cw > 40)
			cw = 40;
		rc |= cfl_buf_printf(b, "\n%-*s  %5s  %6s  %s\n", (int)cw, "class", "index", "count", "share");
		for (size_t i = 0; i < s->n_classes; i++)
			rc |= cfl_buf_printf(b, "%-*.*s  %5zu  %6zu  %5.1f%%\n", (int)cw, (int)cw,
					     s->class_names[i], i, s->class_counts[i],
					     100.0 * (double)s->class_counts[i] / (double)csv->n_rows);
	}
	rc |= cfl_buf_printf(b, "\nsplit     seed %llu: train %zu, valid %zu, test %zu%s\n",
			     (unsigned long long)o->seed, d->train.n, d->valid.n, d->test.n,
			     o->test_path ? " (test from --test)" : "");
	if (o->valid_path)
		rc |= cfl_buf_printf(b, "valid     from --valid: used by every command\n");
	else if (o->valid_frac_given)
		rc |= cfl_buf_printf(b, "valid     --valid-frac %g: held out by every command\n",
				     o->valid_frac);
	else
		rc |= cfl_buf_printf(b, "valid     held out only by a command that uses it (early stopping,\n"
				     "          tune's candidate scoring, an ensemble fitted without --folds);\n"
				     "          otherwise every model trains on all %zu rows\n",
				     d->train.n + d->valid.n);
	rc |= cfl_buf_printf(b, "encoded   %zu features\n", d->enc.d);
	return rc;
}
