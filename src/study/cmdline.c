/*
 * The command line a run stores, and --resume NAME alone: the stored
 * command's arguments replayed before the new ones.  Shared by repeat, tune
 * and auto, whose stored plans must survive a round trip through the
 * database exactly.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "cfl/model.h"

/* Quotes for /bin/sh what needs it, so the stored line can be pasted;
 * with skip_resume, "--resume NAME" and "--resume=NAME" are left out. */
static void command_line(int argc, char **argv, int skip_resume, struct cfl_buf *b)
{
	cfl_buf_puts(b, "cfl");
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (skip_resume && i > 0 && !strcmp(a, "--resume")) {
			i++;
			continue;
		}
		if (skip_resume && i > 0 && !strncmp(a, "--resume=", 9))
			continue;

		if (a[0] && !strpbrk(a, " \t\n'\"\\$`*?;&|<>(){}")) {
			cfl_buf_printf(b, " %s", a);
			continue;
		}
		cfl_buf_puts(b, " '");
		for (; *a; a++)
			cfl_buf_puts(b, *a == '\'' ? "'\\''" : (char[]){ *a, 0 });
		cfl_buf_puts(b, "'");
	}
}

void cfl_study_command_line(int argc, char **argv, int skip_resume,
			    struct cfl_buf *b)
{
	command_line(argc, argv, skip_resume, b);
}

/* Splits a line as command_line() wrote it (words separated by blanks,
 * '...' quoting, backslash escapes). */
char **cfl_study_split_command(const char *cmd, int *argc_out)
{
	size_t len = strlen(cmd);
	char **argv = malloc((len / 2 + 2) * sizeof(char *) + len + 1);
	char *o;
	int n = 0;

	if (!argv)
		return NULL;
	o = (char *)(argv + len / 2 + 2);
	for (const char *p = cmd; *p;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		argv[n++] = o;
		while (*p && *p != ' ') {
			if (*p == '\'') {
				for (p++; *p && *p != '\''; p++)
					*o++ = *p;
				if (!*p) {
					free(argv);
					return NULL;
				}
				p++;
			} else if (*p == '\\' && p[1]) {
				*o++ = p[1];
				p += 2;
			} else {
				*o++ = *p++;
			}
		}
		*o++ = 0;
	}
	argv[n] = NULL;
	*argc_out = n;
	return argv;
}

char **cfl_study_stored_argv(const char *cmd, const char *db, const char *name,
			     int argc, char **argv, int *new_argc, char ***words,
			     struct cfl_err *err)
{
	struct cfl_store *st;
	struct cfl_run_info info;
	char **w, **nv;
	int n_w = 0, k = 0;

	st = cfl_store_open(db, CFL_STORE_READONLY, err);
	if (!st)
		return NULL;
	if (cfl_store_run_find(st, name, &info, err)) {
		cfl_store_close(st);
		return NULL;
	}
	cfl_store_close(st);
	w = cfl_study_split_command(info.command ? info.command : "", &n_w);
	if (!w || n_w < 2 || strcmp(w[0], "cfl") || strcmp(w[1], cmd)) {
		cfl_err_set(err, "cannot resume run '%s': it was not started by cfl %s "
			    "(command: %s)", name, cmd, info.command ? info.command : "");
		cfl_run_info_release(&info);
		free(w);
		return NULL;
	}
	cfl_run_info_release(&info);
	nv = malloc(((size_t)n_w + (size_t)argc + 1) * sizeof(char *));
	if (!nv) {
		free(w);
		cfl_err_set(err, "out of memory");
		return NULL;
	}
	nv[k++] = argv[0];
	for (int i = 2; i < n_w; i++)
		nv[k++] = w[i];
	for (int i = 1; i < argc; i++)
		nv[k++] = argv[i];
	nv[k] = NULL;
	*new_argc = k;
	*words = w;
	return nv;
}

/* ---- the models and params a command line names ---- */

int cfl_study_model_check(const char *name, struct cfl_err *err)
{
	struct cfl_buf known;

	if (cfl_model_find(name))
		return 0;
	cfl_buf_init(&known);
	for (size_t i = 0; cfl_model_at(i); i++)
		cfl_buf_printf(&known, "%s%s", i ? ", " : "", cfl_model_at(i)->name);
	cfl_err_set(err, "unknown model '%s' (known: %s)", name,
		    known.data ? known.data : "");
	cfl_buf_release(&known);
	return -1;
}

int cfl_study_plan_models(struct cfl_study_plan *p, const char *list, int given,
			  struct cfl_err *err)
{
	int is_auto = p->kind == CFL_RUN_AUTO;
	size_t *n = is_auto ? &p->autop.n_models : &p->repeat.n_models;
	const char **names = is_auto ? p->autop.models : p->repeat.models;
	char *save = NULL, *tok;

	free(p->models_buf);
	p->models_buf = strdup(list);
	if (!p->models_buf)
		return cfl_err_set(err, "out of memory");
	for (tok = strtok_r(p->models_buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!cfl_model_find(tok) && is_auto && !given)
			continue;	/* a default family not built in */
		if (cfl_study_model_check(tok, err))
			return -1;
		/* CFL_BENCH_AUTO_BASELINE=1 (tests/bench/bench_auto_backends.sh
		 * only): baseline fits in microseconds, so auto's coordinator
		 * is what a run of it measures */
		if (is_auto && !strcmp(tok, "baseline") &&
		    !(getenv("CFL_BENCH_AUTO_BASELINE") &&
		      !strcmp(getenv("CFL_BENCH_AUTO_BASELINE"), "1")))
			return cfl_err_set(err, "model 'baseline' has nothing to tune");
		for (size_t i = 0; i < *n; i++)
			if (!strcmp(names[i], tok))
				return cfl_err_set(err, "model '%s' listed twice", tok);
		if (*n == CFL_STUDY_MAX_MODELS)
			return cfl_err_set(err, "at most %d models", CFL_STUDY_MAX_MODELS);
		if (!is_auto)
			cfl_params_init(&p->repeat.params[*n]);
		names[(*n)++] = tok;
	}
	if (!*n)
		return cfl_err_set(err, "--models is empty");
	return 0;
}

int cfl_study_plan_sets(struct cfl_study_plan *p, const char *const *sets,
			size_t n_sets, struct cfl_err *err)
{
	struct cfl_study_repeat_plan *r = &p->repeat;

	for (size_t s = 0; s < n_sets; s++) {
		const char *arg = sets[s], *eq = strchr(arg, '='), *dot;
		size_t m = r->n_models;

		if (!eq)
			return cfl_err_set(err, "--set wants MODEL.KEY=VALUE, got '%s'", arg);
		dot = memchr(arg, '.', (size_t)(eq - arg));
		if (dot)
			for (m = 0; m < r->n_models; m++)
				if (strlen(r->models[m]) == (size_t)(dot - arg) &&
				    !strncmp(r->models[m], arg, (size_t)(dot - arg)))
					break;
		if (m < r->n_models)
			arg = dot + 1;
		else if (r->n_models == 1)
			m = 0;
		else
			return cfl_err_set(err, "--set '%s': say which model "
					   "(MODEL.KEY=VALUE)", arg);
		if (cfl_params_set_arg(&r->params[m], arg, err))
			return cfl_err_prefix(err, "--set");
	}
	for (size_t m = 0; m < r->n_models; m++) {
		cfl_params_sort(&r->params[m]);
		if (cfl_model_check_params(cfl_model_find(r->models[m]),
					   &r->params[m], err))
			return -1;
	}
	return 0;
}

void cfl_study_plan_release(struct cfl_study_plan *p)
{
	for (size_t i = 0; i < p->repeat.n_models; i++)
		cfl_params_release(&p->repeat.params[i]);
	p->repeat.n_models = 0;
	free(p->models_buf);
	p->models_buf = NULL;
}

int cfl_study_tune_space(struct cfl_study_plan *p, struct cfl_space *space,
			 const char *path, const char *const *sets,
			 size_t n_sets, struct cfl_err *err)
{
	const struct cfl_model_ops *ops = p->tune.model ? cfl_model_find(p->tune.model)
							: NULL;
	int rc = 0;

	if (cfl_space_load(space, path, ops, err))
		return -1;
	for (size_t i = 0; !rc && i < n_sets; i++) {
		struct cfl_params one;

		cfl_params_init(&one);
		if (cfl_params_set_arg(&one, sets[i], err) ||
		    cfl_space_fix(space, one.kv[0].key, one.kv[0].value, ops, err))
			rc = cfl_err_prefix(err, "--set");
		cfl_params_release(&one);
	}
	p->tune.space = space;
	return rc;
}
