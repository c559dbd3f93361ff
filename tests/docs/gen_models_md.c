/*
 * gen_models_md: regenerates the parameter tables of docs/models.md from the
 * models' own parameter schemas (the struct cfl_param_spec tables each model
 * registers), so the page cannot drift from the code.
 *
 *   gen_models_md PAGE      prints PAGE with every block between
 *                           <!-- BEGIN params NAME ... -->
 *                           <!-- END params NAME -->
 *                           replaced by model NAME's table (marker lines kept)
 *   gen_models_md --list    prints the registered models' names, one a line
 *
 * Every registered model must have exactly one block and every block must
 * name a registered model: a new model without a table, a removed one still
 * documented, or a broken marker is an error (exit 1).  `make docs` writes the
 * output back to the page; tests/cli/test_docs.sh checks the committed page
 * equals it.  A tool beside the tests, not part of cfl: it prints and exits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/model.h"

#define BEGIN_TAG "<!-- BEGIN params "
#define END_TAG "<!-- END params "

/* A number as a person writes it: 1000000 -> 1e6, 0.95 -> 0.95, 1e-06 -> 1e-6. */
static void fmt_num(char *out, size_t cap, double v)
{
	char tmp[64], *e;

	if (v == floor(v) && fabs(v) < 1e6)
		snprintf(tmp, sizeof(tmp), "%.0f", v);
	else
		snprintf(tmp, sizeof(tmp), "%g", v);
	/* "1e+06" -> "1e6", "1e-06" -> "1e-6" */
	e = strchr(tmp, 'e');
	if (e) {
		char *p = e + 1, sign = 0;

		if (*p == '+' || *p == '-')
			sign = *p++;
		while (*p == '0' && p[1])
			p++;
		snprintf(out, cap, "%.*se%s%s", (int)(e - tmp), tmp,
			 sign == '-' ? "-" : "", p);
	} else {
		snprintf(out, cap, "%s", tmp);
	}
}

/* "a|b|c" -> "`a`, `b`, `c`"; for an INT's aliases "none=0|sqrt=-1" the words only. */
static void fmt_words(char *out, size_t cap, const char *choices)
{
	size_t len = 0;
	const char *p = choices;

	out[0] = 0;
	while (*p && len + 8 < cap) {
		size_t n = strcspn(p, "=|");

		len += (size_t)snprintf(out + len, cap - len, "%s`%.*s`",
					len ? ", " : "", (int)n, p);
		p += n;
		if (*p == '=')
			p += strcspn(p, "|");
		if (*p == '|')
			p++;
	}
}

static void fmt_range(char *out, size_t cap, const struct cfl_param_spec *sp)
{
	char lo[64], hi[64], words[256];

	fmt_num(lo, sizeof(lo), sp->lo);
	fmt_num(hi, sizeof(hi), sp->hi);
	switch (sp->type) {
	case CFL_P_CHOICE:
		fmt_words(out, cap, sp->choices);
		return;
	case CFL_P_BOOL:
		snprintf(out, cap, "bool");
		return;
	case CFL_P_INTLIST:
		snprintf(out, cap, "comma-separated integers in [%s, %s], or `none`",
			 lo, hi);
		return;
	case CFL_P_INT:
	case CFL_P_FLOAT:
		if (sp->hi >= 1e300)
			snprintf(out, cap, "%s >= %s",
				 sp->type == CFL_P_INT ? "an integer" : "a number", lo);
		else
			snprintf(out, cap, "%s in [%s, %s]",
				 sp->type == CFL_P_INT ? "an integer" : "a number",
				 lo, hi);
		if (sp->type == CFL_P_INT && sp->choices) {
			size_t len = strlen(out);

			fmt_words(words, sizeof(words), sp->choices);
			snprintf(out + len, cap - len, ", or %s", words);
		}
		return;
	}
	snprintf(out, cap, "?");
}

/* A table cell: '|' would end the cell early. */
static void put_cell(const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", stdout);
		else
			putchar(*s);
	}
}

static void print_table(const struct cfl_model_ops *ops)
{
	printf("| parameter | default | range | meaning |\n"
	       "|---|---|---|---|\n");
	for (size_t i = 0; i < ops->n_params; i++) {
		const struct cfl_param_spec *sp = &ops->params[i];
		char range[512];

		fmt_range(range, sizeof(range), sp);
		printf("| `%s` | ", sp->name);
		put_cell(sp->def && *sp->def ? sp->def : "(none)");
		fputs(" | ", stdout);
		put_cell(range);
		fputs(" | ", stdout);
		put_cell(sp->help ? sp->help : "");
		fputs(" |\n", stdout);
	}
}

/* The model a marker line names ("<!-- BEGIN params fcnn ... -->"), in name. */
static int marker_name(const char *line, const char *tag, char *name, size_t cap)
{
	size_t n;

	if (strncmp(line, tag, strlen(tag)) != 0)
		return 0;
	line += strlen(tag);
	n = strcspn(line, " :\t\n-");
	if (n == 0 || n >= cap)
		return -1;
	memcpy(name, line, n);
	name[n] = 0;
	return 1;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, got;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			char *nb;

			cap = cap ? 2 * cap : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[len] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	const struct cfl_model_ops *ops;
	size_t n_models = 0, lineno = 0;
	int *seen, inside = 0;
	char cur[64] = "", name[64];
	char *text, *line, *next;
	const char *path;

	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; (ops = cfl_model_at(i)); i++)
			printf("%s\n", ops->name);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: gen_models_md PAGE | --list\n");
		return 2;
	}
	path = argv[1];
	text = read_all(path);
	if (!text) {
		fprintf(stderr, "gen_models_md: cannot read '%s'\n", path);
		return 1;
	}
	while (cfl_model_at(n_models))
		n_models++;
	seen = calloc(n_models + 1, sizeof(*seen));
	if (!seen) {
		fprintf(stderr, "gen_models_md: out of memory\n");
		return 1;
	}
	for (line = text; *line; line = next) {
		int is_begin, is_end;

		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		lineno++;
		is_begin = marker_name(line, BEGIN_TAG, name, sizeof(name));
		is_end = marker_name(line, END_TAG, name, sizeof(name));
		if (is_begin < 0 || is_end < 0) {
			fprintf(stderr, "gen_models_md: %s:%zu: marker without a model name\n",
				path, lineno);
			return 1;
		}
		if (is_begin) {
			size_t i;

			if (inside) {
				fprintf(stderr, "gen_models_md: %s:%zu: block of '%s' not ended before this one\n",
					path, lineno, cur);
				return 1;
			}
			for (i = 0; i < n_models; i++)
				if (strcmp(cfl_model_at(i)->name, name) == 0)
					break;
			if (i == n_models) {
				fprintf(stderr, "gen_models_md: %s:%zu: no model '%s' is built in\n",
					path, lineno, name);
				return 1;
			}
			if (seen[i]++) {
				fprintf(stderr, "gen_models_md: %s:%zu: second block of model '%s'\n",
					path, lineno, name);
				return 1;
			}
			fwrite(line, 1, (size_t)(next - line), stdout);
			print_table(cfl_model_at(i));
			snprintf(cur, sizeof(cur), "%s", name);
			inside = 1;
			continue;
		}
		if (is_end) {
			if (!inside || strcmp(name, cur) != 0) {
				fprintf(stderr, "gen_models_md: %s:%zu: END of '%s' without its BEGIN\n",
					path, lineno, name);
				return 1;
			}
			inside = 0;
		}
		if (!inside)
			fwrite(line, 1, (size_t)(next - line), stdout);
	}
	if (inside) {
		fprintf(stderr, "gen_models_md: %s: block of '%s' never ended\n", path, cur);
		return 1;
	}
	for (size_t i = 0; i < n_models; i++)
		if (!seen[i]) {
			fprintf(stderr, "gen_models_md: %s: no parameter table for model '%s' "
				"(add '" BEGIN_TAG "%s -->' and '" END_TAG "%s -->' lines)\n",
				path, cfl_model_at(i)->name, cfl_model_at(i)->name,
				cfl_model_at(i)->name);
			return 1;
		}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "gen_models_md: cannot write the page\n");
		return 1;
	}
	free(seen);
	free(text);
	return 0;
}
