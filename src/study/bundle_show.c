/*
 * The text of `cfl bundle show` and `cfl predict --list`: a bundle's run,
 * its rows with their members, weights and scores (wrapped under the row's
 * columns within 80), and its models.  Reads a struct cfl_bundle only.
 */
#include "cfl/bundle.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One item of a row's members or scores after the row's columns (37
 * wide), wrapped to the next line under them past 80 columns. */
#define ROW_INDENT 37
#define ROW_WIDTH 80

static int put_item(struct cfl_buf *b, size_t *col, const char *text)
{
	size_t len = strlen(text);
	int rc = 0;

	if (*col > ROW_INDENT && *col + 1 + len > ROW_WIDTH) {
		rc = cfl_buf_printf(b, "\n%*s", ROW_INDENT, "");
		*col = ROW_INDENT;
	}
	*col += 1 + len;
	return rc | cfl_buf_printf(b, " %s", text);
}

int cfl_bundle_format(const struct cfl_bundle *b, const char *only,
		      struct cfl_buf *out)
{
	char why[96];
	int rc;

	cfl_bundle_why_default(b, why, sizeof(why));
	rc = cfl_buf_printf(out, "bundle of %s run '%s' (cfl %s) on '%s'\n"
			    "dataset sha256 %s\n%zu models; default row '%s' (%s)\n\n",
			    b->kind, b->run, b->cfl_version, b->dataset,
			    b->dataset_sha256, b->n_models, b->recommended, why);
	rc |= cfl_buf_printf(out, "  %-16s %-8s %-8s %s\n", "row", "kind", "method",
			     "members / scores");
	for (size_t i = 0; i < b->n_rows; i++) {
		const struct cfl_bundle_row *r = &b->rows[i];
		char item[160];
		size_t col, n;

		if (only && strcmp(only, r->name))
			continue;
		rc |= cfl_buf_printf(out, "%c %-16s %-8s %-8s",
				     strcmp(r->name, b->recommended) ? ' ' : '*', r->name,
				     r->kind, cfl_bundle_method_name(r->method));
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
			rc |= put_item(out, &col, item);
		}
		rc |= cfl_buf_puts(out, "\n");
		if (r->n_scores) {
			rc |= cfl_buf_printf(out, "%*s", ROW_INDENT, "");
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
				rc |= put_item(out, &col, item);
			}
			rc |= cfl_buf_puts(out, "\n");
		}
	}
	rc |= cfl_buf_printf(out, "\nmodels (id trial model repeat fold):\n");
	for (size_t i = 0; i < b->n_models; i++)
		rc |= cfl_buf_printf(out, "  %zu %lld %s %d %d\n", i + 1,
				     (long long)b->models[i].trial, b->models[i].model,
				     b->models[i].repeat, b->models[i].fold);
	return rc;
}
