/*
 * A run's life (cfl/study.h): the plan and its checks, the run in the store
 * (created, or found and compared on --resume), the pool, `cfl repeat`'s
 * trials drained with events, and the end of the run.  tune.c holds the
 * search loop on the same struct.  Prints nothing, exits never: the caller
 * hears events and reads the store.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/bundle.h"
#include "cfl/model.h"

/* ---- the plan ---- */

void cfl_study_plan_init(struct cfl_study_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->kind = CFL_RUN_REPEAT;
	cfl_data_opts_init(&p->data);
	p->num_repeat = 5;
	p->tune.num_search = 10;
	p->tune.method = CFL_SEARCH_BO;
	p->tune.liar = CFL_LIAR_KRIGING;
	p->autop.folds = 5;
	/* scikit-learn's n_iter_no_change, and fcnn's training-loss rule's */
	p->autop.fcnn_patience = 10;
	/* scikit-learn's MLP validation_fraction */
	p->autop.fcnn_valid_frac = 0.1;
	p->db = CFL_STORE_DEFAULT_PATH;
	cfl_pool_opts_init(&p->exec.pool);
	p->exec.backend = CFL_BACKEND_AUTO;
	p->exec.heartbeat = 1;
	p->exec.max_workers = 256;
}

/* The data options' lines, shared by both kinds (the same text as ever:
 * stored runs are compared with it). */
static int data_config(const struct cfl_data_opts *d, struct cfl_buf *b)
{
	return cfl_buf_printf(b, "seed=%llu\ntarget=%s\ntask=%d\ndrop=%s\nonly=%s\n"
			      "test=%s\nvalid=%s\ntest_frac=%.17g\nvalid_frac=%.17g\n",
			      (unsigned long long)d->seed,
			      d->schema.target ? d->schema.target : "", (int)d->schema.task,
			      d->schema.drop_re ? d->schema.drop_re : "",
			      d->schema.only_re ? d->schema.only_re : "",
			      d->test_path ? d->test_path : "",
			      d->valid_path ? d->valid_path : "", d->test_frac,
			      d->valid_frac) |
	       /* a line only when set, so older runs' configs still match */
	       (d->valid_min_rows
			? cfl_buf_printf(b, "valid_min_rows=%zu\n", d->valid_min_rows)
			: 0) |
	       (d->schema.categorical_re
			? cfl_buf_printf(b, "categorical=%s\n", d->schema.categorical_re)
			: 0);
}

static int repeat_config(const struct cfl_study_plan *p, struct cfl_buf *b)
{
	const struct cfl_study_repeat_plan *r = &p->repeat;
	int rc = 0;

	rc |= cfl_buf_printf(b, "models=");
	for (size_t i = 0; i < r->n_models; i++)
		rc |= cfl_buf_printf(b, "%s%s", i ? "," : "", r->models[i]);
	rc |= cfl_buf_printf(b, "\n");
	for (size_t i = 0; i < r->n_models; i++) {
		rc |= cfl_buf_printf(b, "params.%s=", r->models[i]);
		rc |= cfl_params_format(&r->params[i], b);
		rc |= cfl_buf_printf(b, "\n");
	}
	rc |= cfl_buf_printf(b, "num_repeat=%ld\nfolds=%ld\nbootstrap=%d\nmetrics=",
			     p->num_repeat, (long)r->folds, r->bootstrap);
	for (size_t i = 0; i < p->n_metrics; i++)
		rc |= cfl_buf_printf(b, "%s%s", i ? "," : "",
				     cfl_metric_info(p->metrics[i])->name);
	rc |= cfl_buf_printf(b, "\n");
	/* only when given: the configs of runs without it stay as they were */
	if (r->save)
		rc |= cfl_buf_printf(b, "save=%s\n", r->save);
	/* only when asked: the plans stored before it stay the same text */
	if (r->importance)
		rc |= cfl_buf_printf(b, "importance=1\n");
	return rc ? -1 : 0;
}

static int tune_config(const struct cfl_study_plan *p, struct cfl_buf *b)
{
	const struct cfl_study_tune_plan *t = &p->tune;
	struct cfl_buf space;
	int rc;

	cfl_buf_init(&space);
	if (t->space && cfl_space_format(t->space, &space)) {
		cfl_buf_release(&space);
		return -1;
	}
	for (char *c = space.data; c && *c; c++)
		if (*c == '\n')
			*c = ';';
	rc = cfl_buf_printf(b, "model=%s\ncommand=%s\nspace=%s\nnum_search=%ld\n"
			    "num_repeat=%ld\nnum_parallel=%ld\nmetric=%s\nsign=%d\n"
			    "method=%s\ngrid_points=%ld\nliar=%d\n",
			    t->model ? t->model : "", t->command ? t->command : "",
			    space.data ? space.data : "", t->num_search, p->num_repeat,
			    t->num_parallel, cfl_study_metric_name(p),
			    cfl_study_sign(p), cfl_search_method_name(t->method),
			    t->grid_points, (int)t->liar);
	/* --metrics: only when given, so runs stored before it compare equal */
	if (!rc && p->n_metrics) {
		rc |= cfl_buf_printf(b, "metrics=");
		for (size_t i = 0; i < p->n_metrics; i++)
			rc |= cfl_buf_printf(b, "%s%s", i ? "," : "",
					     cfl_metric_info(p->metrics[i])->name);
		rc |= cfl_buf_printf(b, "\n");
	}
	if (t->save)	/* only when given: older configs stay as they were */
		rc |= cfl_buf_printf(b, "save=%s\n", t->save);
	if (t->prune != CFL_PRUNE_NONE)	/* the same */
		rc |= cfl_buf_printf(b, "prune=%s\n", cfl_prune_kind_name(t->prune));
	cfl_buf_release(&space);
	return rc;
}

/* auto: the families, their spaces, the folds and the metric.  The time
 * limit is not part of it: a resumed run may get another. */
static int auto_config(const struct cfl_study_plan *p, struct cfl_buf *b)
{
	const struct cfl_study_auto_plan *a = &p->autop;
	int rc = 0;

	rc |= cfl_buf_printf(b, "models=");
	for (size_t i = 0; i < a->n_models; i++)
		rc |= cfl_buf_printf(b, "%s%s", i ? "," : "", a->models[i]);
	rc |= cfl_buf_printf(b, "\n");
	for (size_t i = 0; i < a->n_models; i++) {
		struct cfl_buf space;

		cfl_buf_init(&space);
		if (a->spaces[i] && cfl_space_format(a->spaces[i], &space)) {
			cfl_buf_release(&space);
			return -1;
		}
		for (char *c = space.data; c && *c; c++)
			if (*c == '\n')
				*c = ';';
		rc |= cfl_buf_printf(b, "space.%s=%s\n", a->models[i],
				     space.data ? space.data : "");
		cfl_buf_release(&space);
	}
	rc |= cfl_buf_printf(b, "folds=%d\nmetric=%s\n", a->folds,
			     cfl_metric_info(a->metric)->name);
	if (a->save)	/* only when given: older configs stay as they were */
		rc |= cfl_buf_printf(b, "save=%s\n", a->save);
	if (a->refit)
		rc |= cfl_buf_printf(b, "refit=1\n");
	if (a->fcnn_patience)	/* not in the configs of runs before it */
		rc |= cfl_buf_printf(b, "fcnn_patience=%ld\n", a->fcnn_patience);
	if (a->fcnn_valid_frac > 0)	/* nor in those before this one */
		rc |= cfl_buf_printf(b, "fcnn_valid_frac=%g\n", a->fcnn_valid_frac);
	/* the search's rows and rungs: only when given, as save */
	if (a->search_rows)
		rc |= cfl_buf_printf(b, "search_rows=%ld\n", a->search_rows);
	if (a->search_rungs)
		rc |= cfl_buf_printf(b, "search_rungs=%d\n", a->search_rungs);
	return rc ? -1 : 0;
}

int cfl_study_plan_config(const struct cfl_study_plan *p, struct cfl_buf *out)
{
	if ((p->kind == CFL_RUN_TUNE   ? tune_config(p, out)
	     : p->kind == CFL_RUN_AUTO ? auto_config(p, out)
				       : repeat_config(p, out)) ||
	    data_config(&p->data, out))
		return -1;
	return 0;
}

int cfl_study_stops_early(const char *model, const struct cfl_params *params,
			  const char **knob, const char **value)
{
	static const char *const knobs[] = { "patience", "early_stopping_rounds" };
	const struct cfl_model_ops *ops = cfl_model_find(model);

	for (size_t i = 0; ops && i < ops->n_params; i++)
		for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
			const char *v;

			if (strcmp(ops->params[i].name, knobs[k]))
				continue;
			v = params ? cfl_params_get(params, knobs[k]) : NULL;
			if (!v)
				v = ops->params[i].def;
			if (v && strtol(v, NULL, 10) != 0) {
				*knob = knobs[k];
				*value = v;
				return 1;
			}
		}
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

size_t study_stored_iters(const struct cfl_iters_row *rows, size_t n,
			  int64_t trial_id)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].trial_id == trial_id)
			return rows[i].n_iter > 0 ? (size_t)rows[i].n_iter : 0;
	return 0;
}

int study_refit_params(const char *model, const struct cfl_params *params,
		       const size_t *iters, size_t n_iters,
		       struct cfl_params *out, int *on_all, struct cfl_err *err)
{
	static const char *const count_of[][2] = {
		{ "patience", "epochs" }, { "early_stopping_rounds", "n_rounds" },
	};
	const char *knob, *value;
	size_t *known, n = 0, med;
	char buf[32];
	int rc = -1;

	cfl_params_init(out);
	*on_all = 1;
	if (cfl_params_copy(out, params, err))
		return -1;
	if (!cfl_study_stops_early(model, params, &knob, &value))
		return 0;
	known = calloc(n_iters + 1, sizeof(size_t));
	if (!known) {
		cfl_params_release(out);
		return cfl_err_set(err, "out of memory");
	}
	for (size_t r = 0; r < n_iters; r++)
		if (iters[r])
			known[n++] = iters[r];
	if (!n) {
		*on_all = 0;
		rc = 0;
		goto out;
	}
	qsort(known, n, sizeof(size_t), cmp_size);
	med = n % 2 ? known[n / 2] : (known[n / 2 - 1] + known[n / 2] + 1) / 2;
	for (size_t i = 0; i < sizeof(count_of) / sizeof(count_of[0]); i++) {
		if (strcmp(knob, count_of[i][0]))
			continue;
		snprintf(buf, sizeof(buf), "%zu", med);
		if (cfl_params_set(out, count_of[i][0], "0", err) ||
		    cfl_params_set(out, count_of[i][1], buf, err))
			goto out;
		cfl_params_sort(out);
	}
	rc = 0;
out:
	free(known);
	if (rc)
		cfl_params_release(out);
	return rc;
}

unsigned cfl_study_plan_needs_why(const struct cfl_study_plan *p, char *why,
				  size_t cap)
{
	const struct cfl_study_repeat_plan *r = &p->repeat;
	unsigned methods = 0;
	char dummy[1];

	if (!why || !cap) {
		why = dummy;
		cap = sizeof(dummy);
	}
	if (p->kind == CFL_RUN_TUNE) {
		if (p->tune.command) {
			snprintf(why, cap, "a command is scored by its own output");
			return 0;
		}
		snprintf(why, cap, "tune scores its candidates on it");
		return CFL_STUDY_NEEDS_VALID;
	}
	if (p->kind == CFL_RUN_AUTO) {
		snprintf(why, cap, "auto scores its candidates on it");
		return CFL_STUDY_NEEDS_VALID;
	}
	if (r->importance) {
		snprintf(why, cap, "--importance measures permutation importance on it");
		return CFL_STUDY_NEEDS_VALID;
	}
	for (size_t i = 0; i < r->n_models; i++) {
		const char *knob, *value;

		if (cfl_study_stops_early(r->models[i], &r->params[i], &knob, &value)) {
			snprintf(why, cap, "%s stops early on it, %s=%s",
				 r->models[i], knob, value);
			return CFL_STUDY_NEEDS_VALID;
		}
	}
	if (cfl_ensemble_parse_list(r->ensembles ? r->ensembles
				    : CFL_STUDY_ENSEMBLE_DEFAULT, &methods, NULL)) {
		snprintf(why, cap, "the ensembles may use it");
		return CFL_STUDY_NEEDS_VALID;	/* unknown: cfl_study_check says */
	}
	/* the default ensembles are built from two trained models or more */
	if (!r->ensembles && r->n_models * (size_t)p->num_repeat < 2)
		methods = 0;
	methods &= ~((1u << CFL_ENS_MEAN) | (1u << CFL_ENS_VOTE));
	/* stacking fits on OOF with folds; the default list stacks on
	 * nothing else */
	if (r->folds || !r->ensembles)
		methods &= ~(1u << CFL_ENS_STACKING);
	for (int m = 0; m < CFL_ENS_COUNT; m++)
		if (methods & (1u << m)) {
			snprintf(why, cap, "ensemble '%s' is fitted on it%s",
				 cfl_ensemble_method_name((enum cfl_ensemble_method)m),
				 m == CFL_ENS_STACKING ? " without --folds" : "");
			return CFL_STUDY_NEEDS_VALID;
		}
	snprintf(why, cap, "nothing in this run uses one");
	return 0;
}

unsigned cfl_study_plan_needs(const struct cfl_study_plan *p)
{
	return cfl_study_plan_needs_why(p, NULL, 0);
}

void cfl_study_plan_settle_valid(struct cfl_study_plan *p, char *why,
				 size_t cap)
{
	char reason[160];
	unsigned needs = cfl_study_plan_needs_why(p, reason, sizeof(reason));
	struct cfl_data_opts *d = &p->data;

	if (d->valid_path)
		snprintf(why, cap, "from '%s' (--valid)", d->valid_path);
	else if (d->valid_frac_given)
		snprintf(why, cap, "--valid-frac %g", d->valid_frac);
	else if (p->kind == CFL_RUN_AUTO) {
		/* small data is scored out of fold: the rows are known only
		 * once loaded, so the split decides (cfl_data_load) */
		d->valid_min_rows = STUDY_AUTO_CV_ROWS;
		snprintf(why, cap, "%g of train on %d rows or more: %s (on fewer, "
			 "out of fold)", d->valid_frac, STUDY_AUTO_CV_ROWS, reason);
	} else if (needs & CFL_STUDY_NEEDS_VALID)
		snprintf(why, cap, "%g of train: %s", d->valid_frac, reason);
	else {
		d->valid_frac = 0;
		snprintf(why, cap, "%s", reason);
	}
}

const char *cfl_study_metric_name(const struct cfl_study_plan *p)
{
	return p->tune.command ? "value" : cfl_metric_info(p->tune.metric)->name;
}

int cfl_study_sign(const struct cfl_study_plan *p)
{
	if (p->tune.command)
		return p->tune.maximize ? 1 : -1;
	return cfl_metric_info(p->tune.metric)->sign;
}

int cfl_study_check(const struct cfl_study_plan *p, const struct cfl_data *data,
		    struct cfl_err *err)
{
	if (p->kind == CFL_RUN_REPEAT) {
		if (p->repeat.ensembles) {
			unsigned mask = 0;

			if (cfl_ensemble_parse_list(p->repeat.ensembles, &mask, err) ||
			    (data && cfl_study_check_ensembles(mask, data->train.n_classes,
							       err)))
				return cfl_err_prefix(err, "--ensemble");
		}
		if (data && p->repeat.folds && (size_t)p->repeat.folds > data->train.n)
			return cfl_err_set(err, "--folds %ld: the training part has only %zu rows",
					   (long)p->repeat.folds, data->train.n);
		return 0;
	}
	if (p->kind == CFL_RUN_AUTO) {
		if (!p->autop.n_models)
			return cfl_err_set(err, "--models is empty");
		if (p->autop.folds < 2)
			return cfl_err_set(err, "--folds must be 2 or more, got %d",
					   p->autop.folds);
		if (data && (size_t)p->autop.folds > data->train.n)
			return cfl_err_set(err, "--folds %d: the training part has only %zu rows",
					   p->autop.folds, data->train.n);
		if (data && !data->valid.n && !study_auto_small(p, data))
			return cfl_err_set(err, "cfl auto scores candidates on the validation "
					   "part on %d training rows or more, and it has "
					   "no rows (--valid-frac 0?)", STUDY_AUTO_CV_ROWS);
		if (p->time_limit <= 0)
			return cfl_err_set(err, "cfl auto needs a time limit");
		return 0;
	}
	if (p->tune.method == CFL_SEARCH_GRID && p->tune.space) {
		struct cfl_search_opts o;
		struct cfl_search *s;

		cfl_search_opts_init(&o);
		o.method = CFL_SEARCH_GRID;
		o.grid_points = (size_t)p->tune.grid_points;
		s = cfl_search_new(p->tune.space, &o, err);
		if (!s)
			return -1;
		cfl_search_free(s);
	}
	if (p->tune.command) {
		struct cfl_params probe;
		struct cfl_buf b;
		int rc;

		/* every {name} must be a parameter of the space */
		cfl_params_init(&probe);
		cfl_buf_init(&b);
		for (size_t i = 0; p->tune.space && i < p->tune.space->n_params; i++)
			cfl_params_set(&probe, p->tune.space->params[i].name, "x", NULL);
		rc = cfl_study_substitute(p->tune.command, &probe, &b, err);
		cfl_params_release(&probe);
		cfl_buf_release(&b);
		if (rc)
			return -1;
	}
	return 0;
}

int cfl_study_substitute(const char *tmpl, const struct cfl_params *p,
			 struct cfl_buf *out, struct cfl_err *err)
{
	for (const char *s = tmpl; *s; s++) {
		if (s[0] == '{' && s[1] == '{') {
			cfl_buf_puts(out, "{");
			s++;
			continue;
		}
		if (s[0] == '}' && s[1] == '}') {
			cfl_buf_puts(out, "}");
			s++;
			continue;
		}
		if (*s != '{') {
			cfl_buf_append(out, s, 1);
			continue;
		}
		const char *e = strchr(s, '}');
		char name[128];
		const char *v;

		if (!e || (size_t)(e - s - 1) >= sizeof(name))
			return cfl_err_set(err, "--command: unclosed '{' in '%s'", tmpl);
		memcpy(name, s + 1, (size_t)(e - s - 1));
		name[e - s - 1] = '\0';
		v = cfl_params_get(p, name);
		if (!v)
			return cfl_err_set(err, "--command: '{%s}' is not a parameter of the search space", name);
		cfl_buf_puts(out, "'");
		for (; *v; v++)
			cfl_buf_puts(out, *v == '\'' ? "'\\''" : (char[]){ *v, 0 });
		cfl_buf_puts(out, "'");
		s = e;
	}
	if (!out->data)
		cfl_buf_puts(out, "");
	return 0;
}

/* ---- the run in the store ---- */

/* The value of line "key=..." of a stored config: 1 with out set (at
 * most cap-1 bytes), or 0 when there is no such line. */
static int config_value(const char *config, const char *key, char *out,
			size_t cap)
{
	size_t kl = strlen(key);

	for (const char *p = config; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(out, cap, "%.*s", (int)(len - kl - 1), p + kl + 1);
			return 1;
		}
		p = e ? e + 1 : NULL;
	}
	return 0;
}

void study_resume_valid(struct cfl_study_plan *p)
{
	struct cfl_store *st;
	struct cfl_run_info info;
	struct cfl_err err;
	char v[32];

	if (p->kind != CFL_RUN_AUTO || !p->resume)
		return;
	/* what cannot be read is said by the resume itself, later */
	st = cfl_store_open(p->db, CFL_STORE_READONLY, &err);
	if (!st)
		return;
	if (!cfl_store_run_find(st, p->resume, &info, &err)) {
		if (info.kind == CFL_RUN_AUTO && p->data.valid_min_rows &&
		    config_value(info.config, "valid_frac", v, sizeof(v)) &&
		    !config_value(info.config, "valid_min_rows", v, sizeof(v)))
			p->data.valid_min_rows = 0;
		if (info.kind == CFL_RUN_AUTO &&
		    !config_value(info.config, "fcnn_patience", v, sizeof(v)))
			p->autop.fcnn_patience = 0;
		if (info.kind == CFL_RUN_AUTO &&
		    !config_value(info.config, "fcnn_valid_frac", v, sizeof(v)))
			p->autop.fcnn_valid_frac = 0;
		cfl_run_info_release(&info);
	}
	cfl_store_close(st);
}

/* A positive integer line of a stored config: 1 with *out set, or 0. */
static int config_long(const char *config, const char *key, long max, long *out)
{
	char buf[32], *end;
	long v;

	if (!config_value(config, key, buf, sizeof(buf)))
		return 0;
	v = strtol(buf, &end, 10);
	if (v < 1 || v > max || *end)
		return 0;
	*out = v;
	return 1;
}

/* Whether the line at p is one of the keys a resume may change. */
static int skipped_line(const char *p, const char *const *skip)
{
	for (size_t i = 0; skip[i]; i++) {
		size_t kl = strlen(skip[i]);

		if (!strncmp(p, skip[i], kl) && p[kl] == '=')
			return 1;
	}
	return 0;
}

/* Compares two configs line by line, the keys in skip (NULL-terminated)
 * left out.  0 when they agree; else 1 with the first key that differs in
 * key (at most cap-1 bytes). */
/* 1 when text (key=value lines) has a line of key k (its first n bytes) */
static int has_key(const char *text, const char *k, size_t n)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, k, n) && l[n] == '=')
			return 1;
	return 0;
}

static int config_differs(const char *a, const char *b, const char *const *skip,
			  char *key, size_t cap)
{
	for (;;) {
		while (a && *a && skipped_line(a, skip))
			a = strchr(a, '\n') ? strchr(a, '\n') + 1 : NULL;
		while (b && *b && skipped_line(b, skip))
			b = strchr(b, '\n') ? strchr(b, '\n') + 1 : NULL;
		if (!a || !*a || !b || !*b) {
			const char *rest = a && *a ? a : b && *b ? b : NULL;

			if (!rest)
				return 0;
			snprintf(key, cap, "%.*s", (int)strcspn(rest, "=\n"), rest);
			return 1;
		}
		size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");

		if (la != lb || memcmp(a, b, la)) {
			size_t ka = strcspn(a, "="), kb = strcspn(b, "=");

			/* the key of the two lines; when the keys differ, the
			 * one b has that a lacks (a key given only now), else
			 * a's (one given only then) */
			if (ka == kb && !memcmp(a, b, ka))
				snprintf(key, cap, "%.*s", (int)ka, a);
			else if (kb < lb && !has_key(a, b, kb))
				snprintf(key, cap, "%.*s", (int)kb, b);
			else
				snprintf(key, cap, "%.*s", (int)(ka < la ? ka : la), a);
			return 1;
		}
		a += la + (a[la] == '\n');
		b += lb + (b[lb] == '\n');
	}
}

/* A run the resume would not change: finished, every trial of the plan
 * done (repeat) and every ensemble asked for by name stored. */
static int run_complete(struct cfl_study *s, const struct cfl_run_info *info,
			int *complete, struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	const struct cfl_study_repeat_plan *r = &p->repeat;
	struct cfl_trial_counts tc;
	struct cfl_ensemble_row *ens = NULL;
	size_t planned, n_ens = 0;
	unsigned mask = 0;

	*complete = 0;
	if (p->kind == CFL_RUN_TUNE) {
		*complete = info->status == CFL_RUN_DONE || info->status == CFL_RUN_FAILED;
		return 0;
	}
	if (info->status != CFL_RUN_DONE)
		return 0;
	planned = r->n_models * (size_t)p->num_repeat * (size_t)(r->folds ? r->folds : 1);
	if (cfl_store_trial_counts(s->st, s->run_id, &tc, err))
		return -1;
	if (tc.done != planned || tc.total != planned)
		return 0;
	if (!r->ensembles)
		return *complete = 1, 0;
	if (cfl_ensemble_parse_list(r->ensembles, &mask, NULL) ||
	    cfl_store_ensembles(s->st, s->run_id, &ens, &n_ens, err))
		return mask ? -1 : 0;
	*complete = 1;
	for (int m = 0; m < CFL_ENS_COUNT; m++) {
		int found = 0;

		if (!(mask & (1u << m)))
			continue;
		for (size_t i = 0; i < n_ens; i++)
			found |= ens[i].repeat == -1 &&
				 !strcmp(ens[i].name, cfl_ensemble_method_name(m));
		if (!found)
			*complete = 0;
	}
	cfl_ensemble_rows_free(ens, n_ens);
	return 0;
}

/* --resume: finds the run, checks it is this plan's (the count that may
 * grow aside), grows it or finds it complete, sets it running. */
static int resume(struct cfl_study *s, struct cfl_buf *config,
		  struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	static const char *const repeat_skip[] = { "num_repeat", NULL };
	static const char *const tune_skip[] = { "num_search", "budget", NULL };
	static const char *const none[] = { NULL };
	/* repeat and tune grow; an auto run resumes as it was asked */
	const char *const *skip = p->kind == CFL_RUN_TUNE ? tune_skip
				  : p->kind == CFL_RUN_REPEAT ? repeat_skip : none;
	struct cfl_run_info info;
	const char *why = NULL, *count = NULL;
	char key[64] = "", then[256] = "", now[256] = "";
	int tune = p->kind == CFL_RUN_TUNE, complete = 0, rc = -1;
	long stored_n = 0, new_n = tune ? p->tune.num_search : p->num_repeat;

	if (cfl_store_run_find(s->st, p->resume, &info, err))
		return -1;
	s->run_id = info.id;
	s->resumed = 1;
	/* tune without --num-parallel: the run's own, not one derived from
	 * this command's --num-jobs (resuming with more jobs is fine) */
	if (tune && !p->tune.num_parallel_set &&
	    config_long(info.config, "num_parallel", 1024, &s->num_parallel)) {
		struct cfl_study_plan q = *p;

		q.tune.num_parallel = s->num_parallel;
		config->len = 0;
		if (cfl_study_plan_config(&q, config)) {
			cfl_run_info_release(&info);
			return cfl_err_set(err, "out of memory");
		}
	}
	if (info.kind != p->kind)
		why = "another command";
	else if (tune ? config_differs(info.config, config->data, skip, key, sizeof(key))
		      : strcmp(info.dataset_sha256, s->data->sha256_hex))
		why = tune ? "another plan" : "another dataset (SHA-256 differs)";
	else if (tune ? s->data && strcmp(info.dataset_sha256, s->data->sha256_hex)
		      : config_differs(info.config, config->data, skip, key, sizeof(key)))
		why = tune ? "another dataset (SHA-256 differs)" : "another plan";
	if (why) {
		if (key[0]) {
			if (!config_value(info.config, key, then, sizeof(then)))
				snprintf(then, sizeof(then), "(none)");
			if (!config_value(config->data, key, now, sizeof(now)))
				snprintf(now, sizeof(now), "(none)");
			cfl_err_set(err, "cannot resume run '%s': it was started with %s "
				    "(%s '%s', now '%s'); use the options it was started "
				    "with:\n  %s", p->resume, why, key, then, now,
				    info.command ? info.command : "");
		} else {
			cfl_err_set(err, "cannot resume run '%s': it was started with %s;"
				    " use the options it was started with:\n  %s",
				    p->resume, why, info.command ? info.command : "");
		}
		goto out;
	}
	snprintf(s->name, sizeof(s->name), "%s", info.name);
	if (p->kind != CFL_RUN_TUNE && p->kind != CFL_RUN_REPEAT)
		goto running;
	/* the count a finished run may grow by */
	count = tune ? "num_search" : "num_repeat";
	if (!config_long(info.config, count, 100000, &stored_n))
		stored_n = new_n;
	s->budget = stored_n;
	if (tune)
		config_long(info.config, "budget", 100000, &s->budget);
	if (new_n < stored_n) {
		cfl_err_set(err, "cannot resume run '%s': it has %s %ld; a resume can grow "
			    "it, not shrink it (give %ld or more)", p->resume,
			    tune ? "--num-search" : "--num-repeat", stored_n, stored_n);
		goto out;
	}
	if (new_n > stored_n) {
		/* the first budget stays: a grid search replays the same picks */
		if (tune && cfl_buf_printf(config, "budget=%ld\n", s->budget)) {
			cfl_err_set(err, "out of memory");
			goto out;
		}
		if (cfl_store_run_grow(s->st, s->run_id, config->data, p->command_line, err))
			goto out;
		s->grown = 1;
	} else {
		if (run_complete(s, &info, &complete, err))
			goto out;
		if (complete) {
			s->complete = 1;	/* the store is left as it is */
			rc = 0;
			goto out;
		}
	}
running:
	rc = cfl_store_run_set_status(s->st, s->run_id, CFL_RUN_RUNNING, err);
out:
	cfl_run_info_release(&info);
	return rc;
}

static int create(struct cfl_study *s, struct cfl_buf *config,
		  struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct cfl_run_info ri;

	if (p->name)
		snprintf(s->name, sizeof(s->name), "%s", p->name);
	memset(&ri, 0, sizeof(ri));
	ri.name = s->name;
	ri.kind = p->kind;
	ri.command = (char *)(p->command_line ? p->command_line : "");
	ri.config = config->data;
	ri.dataset = (char *)(p->data.path ? p->data.path : "");
	if (s->data)
		snprintf(ri.dataset_sha256, sizeof(ri.dataset_sha256), "%s",
			 s->data->sha256_hex);
	ri.seed = p->data.seed;
	/* no name: the store picks the default name as it inserts the run,
	 * so two runs started at once get two names */
	return p->name ? cfl_store_run_create(s->st, &ri, &s->run_id, err)
		       : cfl_store_run_create_default(s->st, &ri, s->name, sizeof(s->name),
						      &s->run_id, err);
}

struct cfl_study *cfl_study_open(const struct cfl_study_plan *p,
				 const struct cfl_data *data,
				 struct cfl_err *err)
{
	struct cfl_study *s;
	struct cfl_buf config;
	int rc;

	if (!data && !(p->kind == CFL_RUN_TUNE && p->tune.command)) {
		cfl_err_set(err, "a run needs its dataset loaded");
		return NULL;
	}
	s = cfl_calloc(1, sizeof(*s), err);
	if (!s)
		return NULL;
	s->plan = p;
	s->data = data;
	s->num_parallel = p->tune.num_parallel;
	s->budget = p->tune.num_search;
	s->best = -1;
	if (p->time_limit > 0)
		s->deadline = (p->started > 0 ? p->started : cfl_now()) + p->time_limit;
	s->st = cfl_store_open(p->db, CFL_STORE_CREATE, err);
	if (!s->st) {
		free(s);
		return NULL;
	}
	cfl_buf_init(&config);
	if (cfl_study_plan_config(p, &config))
		rc = cfl_err_set(err, "out of memory");
	else
		rc = p->resume ? resume(s, &config, err) : create(s, &config, err);
	cfl_buf_release(&config);
	if (rc) {
		cfl_study_free(s);
		return NULL;
	}
	return s;
}

void cfl_study_free(struct cfl_study *s)
{
	if (!s)
		return;
	cfl_pool_close(s->pool, NULL);
	cfl_study_tune_release(s);
	cfl_study_auto_release(s);
	free(s->refs);
	cfl_store_close(s->st);
	free(s);
}

const char *cfl_study_name(const struct cfl_study *s) { return s->name; }
int64_t cfl_study_run_id(const struct cfl_study *s) { return s->run_id; }
int cfl_study_resumed(const struct cfl_study *s) { return s->resumed; }
int cfl_study_complete(const struct cfl_study *s) { return s->complete; }
int cfl_study_grown(const struct cfl_study *s) { return s->grown; }
struct cfl_store *cfl_study_store(struct cfl_study *s) { return s->st; }
struct cfl_pool *cfl_study_pool(struct cfl_study *s) { return s->pool; }

/* ---- the pool ---- */

int cfl_study_start(struct cfl_study *s, const struct cfl_pool_opts *exec,
		    struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	struct cfl_pool_opts po = *exec;

	if (s->pool)
		return cfl_err_set(err, "the pool is started already");
	po.data = s->data;
	po.store = s->st;
	po.run_id = s->run_id;
	/* the user's own --command, run by this user's processes (and under
	 * mpi by the ranks of this user's launcher), never by TCP workers */
	po.allow_commands = p->kind == CFL_RUN_TUNE && p->tune.command != NULL;
	/* the time limit is checked at least every 0.1 s; the caller's
	 * listener still hears ticks at its own period only */
	s->user_tick = po.tick;
	s->last_user_tick = cfl_now();
	if (s->deadline > 0 && (po.tick <= 0 || po.tick > 0.1))
		po.tick = 0.1;
	if (p->kind == CFL_RUN_TUNE && p->tune.prune != CFL_PRUNE_NONE) {
		po.on_progress = study_tune_progress;
		po.progress_ctx = s;
	}
	if (p->kind == CFL_RUN_AUTO) {	/* decided once the search starts */
		po.on_progress = study_auto_progress;
		po.progress_ctx = s;
	}
	po.keep_models = p->kind == CFL_RUN_REPEAT ? p->repeat.save != NULL
			 : p->kind == CFL_RUN_AUTO ? p->autop.save != NULL
						   : p->tune.save != NULL;
	if (p->kind == CFL_RUN_REPEAT) {
		po.n_metrics = p->n_metrics;
		memcpy(po.metrics, p->metrics, sizeof(po.metrics));
	} else if (!p->tune.command) {
		int have = 0;
		enum cfl_metric_id m = p->kind == CFL_RUN_AUTO ? p->autop.metric
							       : p->tune.metric;

		/* --metrics, or the task's defaults; the scored metric first if
		 * missing (auto: first always, it ranks the leaderboard) */
		if (p->n_metrics) {
			po.n_metrics = p->n_metrics;
			memcpy(po.metrics, p->metrics, sizeof(po.metrics));
		} else {
			po.n_metrics = cfl_metric_defaults(s->data->train.n_classes,
							   po.metrics,
							   CFL_WIRE_MAX_METRICS);
		}
		for (size_t i = 0; i < po.n_metrics; i++)
			if (po.metrics[i] == m) {
				have = 1;
				if (p->kind == CFL_RUN_AUTO) {
					memmove(po.metrics + 1, po.metrics,
						i * sizeof(po.metrics[0]));
					po.metrics[0] = m;
				}
			}
		if (!have) {
			memmove(po.metrics + 1, po.metrics,
				(CFL_WIRE_MAX_METRICS - 1) * sizeof(po.metrics[0]));
			po.metrics[0] = m;
			if (po.n_metrics < CFL_WIRE_MAX_METRICS)
				po.n_metrics++;
		}
	}
	s->n_metrics = po.n_metrics;
	memcpy(s->metrics, po.metrics, sizeof(s->metrics));
	s->pool = cfl_pool_new(&po, err);
	return s->pool ? 0 : -1;
}

size_t study_slots(const struct cfl_study *s)
{
	struct cfl_pool_stats st;
	size_t n = cfl_pool_opts(s->pool)->n_local;

	cfl_pool_get_stats(s->pool, &st);
	if (st.n_slots > n)
		n = st.n_slots;
	return n ? n : 1;
}

int cfl_study_close_pool(struct cfl_study *s, struct cfl_err *err)
{
	int rc = cfl_pool_close(s->pool, err);

	s->pool = NULL;
	return rc;
}

int cfl_study_timed_out(const struct cfl_study *s)
{
	return s->timed_out;
}

void cfl_study_stop_at_limit(struct cfl_study *s)
{
	s->timed_out = 1;
	if (s->pool)
		cfl_pool_interrupt_over(s->pool);
}

int cfl_study_stop(struct cfl_study *s, struct cfl_err *err)
{
	if (s->pool) {
		cfl_pool_close(s->pool, NULL);
		s->pool = NULL;
		return 0;
	}
	return cfl_store_mark_interrupted(s->st, s->run_id, err);
}

void cfl_study_emit(const struct cfl_study_listener *ls, struct cfl_study_event *ev)
{
	if (ls && ls->fn)
		ls->fn(ev, ls->ctx);
}

/* Waits for the pool's next event: 0 a trial finished (*ev), 1 idle,
 * 2 interrupted, 3 stopped by the time limit, -1 error.  Ticks go to the
 * listener. */
int cfl_study_wait(struct cfl_study *s, const struct cfl_study_listener *ls,
	       struct cfl_pool_event *ev, struct cfl_err *err)
{
	for (;;) {
		int r;

		/* the deadline interrupts the pool as Ctrl-C does: running
		 * trials are recorded interrupted, nothing more starts */
		if (s->deadline > 0 && !s->timed_out && cfl_now() >= s->deadline)
			cfl_study_stop_at_limit(s);
		r = cfl_pool_wait(s->pool, ev, err);
		if (r < 0)
			return -1;
		if (r == CFL_POOL_IDLE)
			return 1;
		if (r == CFL_POOL_INTERRUPTED)
			return s->timed_out ? 3 : 2;
		if (r == CFL_POOL_TICK) {
			struct cfl_study_event se;

			if (s->wake_at > 0 && cfl_now() >= s->wake_at) {
				s->wake_at = 0;
				return 4;
			}
			if (s->user_tick <= 0 ||
			    cfl_now() - s->last_user_tick < s->user_tick)
				continue;
			s->last_user_tick = cfl_now();
			memset(&se, 0, sizeof(se));
			se.kind = CFL_STUDY_TICK;
			se.pool = s->pool;
			study_eta_event(s, &se);
			cfl_study_emit(ls, &se);
			continue;
		}
		return 0;
	}
}

/* ---- repeat: model x repeat [x fold] ---- */

/* The trials of the plan, created or found in one transaction; those not
 * done are submitted.  *n_done: done before (--resume). */
static int repeat_submit(struct cfl_study *s, size_t *n_done, size_t *n_submit,
			 struct cfl_err *err)
{
	const struct cfl_study_plan *p = s->plan;
	const struct cfl_study_repeat_plan *r = &p->repeat;
	long n_folds = r->folds;
	size_t n_trials = r->n_models * (size_t)p->num_repeat *
			  (size_t)(n_folds ? n_folds : 1);

	s->refs = calloc(n_trials + 1, sizeof(*s->refs));
	if (!s->refs)
		return cfl_err_set(err, "out of memory");
	if (cfl_store_begin(s->st, err))
		return -1;
	for (size_t m = 0, k = 0; m < r->n_models; m++) {
		int64_t cand;

		if (cfl_store_candidate_get_or_add(s->st, s->run_id, r->models[m],
						   &r->params[m], &cand, NULL, err))
			goto fail;
		for (long rep = 0; rep < p->num_repeat; rep++)
			for (long f = n_folds ? 0 : -1; f < (n_folds ? n_folds : 0); f++, k++) {
				struct cfl_trial_state ts;
				struct cfl_trial_spec spec;
				uint64_t seed = cfl_trial_seed(p->data.seed, r->models[m], (int)rep);

				if (cfl_store_trial_ensure(s->st, s->run_id, cand, (int)rep,
							   (int)f, seed, &ts, err))
					goto fail;
				s->refs[k] = (struct study_ref){ m, (int)rep, (int)f };
				if (ts.status == CFL_TRIAL_DONE) {
					(*n_done)++;
					continue;
				}
				memset(&spec, 0, sizeof(spec));
				spec.trial_id = ts.id;
				spec.model = r->models[m];
				spec.params = &r->params[m];
				spec.seed = seed;
				spec.fold_seed = cfl_fold_seed(p->data.seed, (int)rep);
				spec.repeat = (int)rep;
				spec.fold = (int)f;
				spec.n_folds = (int)n_folds;
				spec.flags = CFL_LEASE_KEEP_VALID | CFL_LEASE_KEEP_TEST |
					     (n_folds ? CFL_LEASE_KEEP_OOF : 0) |
					     (r->bootstrap ? CFL_LEASE_BOOTSTRAP : 0) |
					     (r->save ? CFL_LEASE_KEEP_MODEL : 0) |
					     (r->importance ? CFL_LEASE_IMPORTANCE : 0);
				spec.prev_attempts = ts.attempt;
				spec.user = &s->refs[k];
				if (cfl_pool_submit(s->pool, &spec, err))
					goto fail;
				(*n_submit)++;
				s->n_ran++;
			}
	}
	if (cfl_store_commit(s->st, err))
		goto fail;
	return 0;
fail:
	cfl_store_rollback(s->st);
	return -1;
}

int cfl_study_repeat(struct cfl_study *s, const struct cfl_study_listener *ls,
		     struct cfl_err *err)
{
	struct cfl_study_event se;
	size_t n_done = 0, n_submit = 0;

	if (!s->pool || s->plan->kind != CFL_RUN_REPEAT)
		return cfl_err_set(err, "cfl_study_repeat: %s",
				   s->pool ? "not a repeat plan" : "the pool is not started");
	if (repeat_submit(s, &n_done, &n_submit, err))
		return -1;
	memset(&se, 0, sizeof(se));
	se.kind = CFL_STUDY_START;
	se.pool = s->pool;
	se.n_done = n_done;
	se.n_todo = n_submit;
	study_eta_event(s, &se);
	cfl_study_emit(ls, &se);
	for (;;) {
		struct cfl_pool_event ev;
		const struct study_ref *ref;
		int r = cfl_study_wait(s, ls, &ev, err);

		if (r < 0)
			return -1;
		if (r == 1)
			return 0;
		if (r == 2)
			return CFL_STUDY_INTERRUPTED;
		if (r == 3)
			return CFL_STUDY_TIME_LIMIT;
		ref = ev.user;
		memset(&se, 0, sizeof(se));
		se.kind = CFL_STUDY_TRIAL;
		se.pool = s->pool;
		se.trial = &ev;
		se.what = s->plan->repeat.models[ref->model];
		se.repeat = ref->repeat;
		se.fold = ref->fold;
		study_eta_event(s, &se);
		cfl_study_emit(ls, &se);
	}
}

/* ---- the end ---- */

int cfl_study_finish(struct cfl_study *s, const struct cfl_study_listener *ls,
		     struct cfl_trial_counts *counts, struct cfl_err *err)
{
	struct cfl_trial_counts tc;
	int ok;

	enum cfl_run_kind kind = s->plan->kind;
	enum cfl_run_status status;

	if (cfl_study_close_pool(s, err))
		return -1;
	/* a resumed run that trained more: its ensembles were built from
	 * fewer members */
	if (kind != CFL_RUN_TUNE && s->resumed && s->n_ran &&
	    cfl_store_ensembles_delete(s->st, s->run_id, err))
		return -1;
	if (kind == CFL_RUN_REPEAT &&
	    cfl_study_ensembles_for_run(s->st, s->run_id, s->data,
					s->plan->repeat.ensembles, ls, err))
		return -1;
	if (kind == CFL_RUN_AUTO &&
	    cfl_study_auto_ensembles(s->st, s->run_id, s->data, s->metrics,
				     s->n_metrics, s->finish_by, ls, err))
		return -1;
	if (cfl_store_trial_counts(s->st, s->run_id, &tc, err))
		return -1;
	ok = kind == CFL_RUN_TUNE ? s->best >= 0 : tc.done > 0;
	status = kind == CFL_RUN_REPEAT && s->timed_out ? CFL_RUN_INTERRUPTED
		 : ok ? CFL_RUN_DONE : CFL_RUN_FAILED;
	if (cfl_store_run_finish(s->st, s->run_id, status, err))
		return -1;
	if (counts)
		*counts = tc;
	return 0;
}

/* ---- the bundle ---- */

int cfl_study_save_bundle(struct cfl_study *s, const char *path,
			  struct cfl_err *err)
{
	struct cfl_bundle b;
	int rc;

	if (!s->data)
		return cfl_err_set(err, "cannot write bundle '%s': a tune of a command "
				   "has no models", path);
	if (s->plan->kind == CFL_RUN_TUNE && s->best < 0)
		return cfl_err_set(err, "cannot write bundle '%s': no candidate was "
				   "scored", path);
	if (s->plan->kind == CFL_RUN_REPEAT
	    ? cfl_bundle_build_repeat(s->st, s->run_id, s->data, &b, err)
	    : s->plan->kind == CFL_RUN_AUTO
	    ? cfl_bundle_build_auto(s->st, s->run_id, s->data, &b, err)
	    : cfl_bundle_build_tune(s->st, s->run_id, s->data, s->cands[s->best].id,
				    (int)s->plan->num_repeat, &b, err))
		return cfl_err_prefix(err, "cannot write bundle '%s'", path);
	rc = cfl_bundle_write(&b, path, err);
	cfl_bundle_release(&b);
	return rc;
}
