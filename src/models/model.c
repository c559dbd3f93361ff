/*
 * The model interface: registry, parameter checking, life cycle and the
 * model file format.  Model-specific code lives in one file per model; this
 * file knows none of their internals.
 */
#include "cfl/model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- registry ---- */

/* Each model defines one ops value in its own file; this table is the
 * list of models, in the order listings show them.  A model missing from
 * the build is a link error, never a model silently left out. */
extern const struct cfl_model_ops cfl_fcnn_ops;
extern const struct cfl_model_ops cfl_linear_ops;
extern const struct cfl_model_ops cfl_tree_ops;
extern const struct cfl_model_ops cfl_forest_ops;
extern const struct cfl_model_ops cfl_gbdt_ops;
extern const struct cfl_model_ops cfl_baseline_ops;

static const struct cfl_model_ops *const models[] = {
	&cfl_fcnn_ops, &cfl_linear_ops, &cfl_tree_ops,
	&cfl_forest_ops, &cfl_gbdt_ops, &cfl_baseline_ops,
};

#define N_MODELS (sizeof(models) / sizeof(models[0]))

static const struct cfl_model_ops *registry(size_t i)
{
	return i < N_MODELS ? models[i] : NULL;
}

const struct cfl_model_ops *cfl_model_at(size_t i)
{
	return registry(i);
}

const struct cfl_model_ops *cfl_model_find(const char *name)
{
	const struct cfl_model_ops *ops;

	for (size_t i = 0; (ops = registry(i)); i++)
		if (strcmp(ops->name, name) == 0)
			return ops;
	return NULL;
}

/* The values sp takes, as the help shows them: "a|b", "true|false",
 * "[lo, hi]", and an INT's word aliases ("none=0|sqrt=-1") by their
 * words: "[0, 100] or none|sqrt". */
static int param_range(const struct cfl_param_spec *sp, struct cfl_buf *b)
{
	int rc;

	switch (sp->type) {
	case CFL_P_CHOICE:
		return cfl_buf_puts(b, sp->choices);
	case CFL_P_BOOL:
		return cfl_buf_puts(b, "true|false");
	case CFL_P_INTLIST:
		return cfl_buf_printf(b, "list of [%g, %g]", sp->lo, sp->hi);
	default:
		rc = cfl_buf_printf(b, "[%g, %g]", sp->lo, sp->hi);
	}
	if (sp->type == CFL_P_INT && sp->choices) {
		rc |= cfl_buf_puts(b, " or ");
		for (const char *p = sp->choices; *p; p += strcspn(p, "|")) {
			if (*p == '|')
				rc |= cfl_buf_append(b, p++, 1);
			rc |= cfl_buf_append(b, p, strcspn(p, "=|"));
		}
	}
	return rc;
}

int cfl_model_help(const struct cfl_model_ops *ops, size_t width,
		   struct cfl_buf *b)
{
	struct cfl_buf text;
	int rc = cfl_buf_printf(b, "\n%s: ", ops->name);

	rc |= cfl_buf_wrap(b, ops->summary, strlen(ops->name) + 2, 2, width);
	rc |= cfl_buf_puts(b, "Parameters (--set KEY=VALUE):\n");
	cfl_buf_init(&text);
	for (size_t i = 0; i < ops->n_params; i++) {
		const struct cfl_param_spec *sp = &ops->params[i];

		/* the name, then its text wrapped (a long name has a line of
		 * its own) */
		text.len = 0;
		rc |= cfl_buf_printf(&text, "%s [%s] (", sp->help, sp->def ? sp->def : "");
		rc |= param_range(sp, &text) | cfl_buf_puts(&text, ")");
		if (strlen(sp->name) > 14)
			rc |= cfl_buf_printf(b, "  %s\n%17s", sp->name, "");
		else
			rc |= cfl_buf_printf(b, "  %-14s ", sp->name);
		rc |= text.data ? cfl_buf_wrap(b, text.data, 17, 17, width) : -1;
	}
	cfl_buf_release(&text);
	return rc;
}

/* ---- parameters ---- */

static const struct cfl_param_spec *find_spec(const struct cfl_model_ops *ops,
					      const char *name)
{
	for (size_t i = 0; i < ops->n_params; i++)
		if (strcmp(ops->params[i].name, name) == 0)
			return &ops->params[i];
	return NULL;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return (end == s || *end || errno) ? -1 : 0;
}

/* A long at the start of s, ending at '|' or the end. */
static int parse_long_prefix(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return (end == s || (*end && *end != '|') || errno) ? -1 : 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (end == s || *end || errno || !isfinite(*out)) ? -1 : 0;
}

static int parse_bool(const char *s, int *out)
{
	static const char *yes[] = { "1", "true", "yes", "on" };
	static const char *no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = 0, 0;
	}
	return -1;
}

static int choice_ok(const char *choices, const char *v)
{
	size_t n = strlen(v);
	const char *p = choices;

	while (p && *p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && strncmp(p, v, n) == 0)
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

/* Parses an int list "64,64" with each item in [lo, hi]; "" or "none" is
 * the empty list.  Returns the count or -1. */
static long parse_intlist(const char *s, double lo, double hi, long *out,
			  size_t cap)
{
	long n = 0;

	if (!*s || strcmp(s, "none") == 0)
		return 0;
	for (;;) {
		char *end;
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || errno || v < lo || v > hi)
			return -1;
		if (out && (size_t)n < cap)
			out[n] = v;
		n++;
		if (!*end)
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

/* An INT param's word alias ("none=0|sqrt=-1"): its value into out, or -1
 * when v is not one of the words. */
static int int_alias(const struct cfl_param_spec *sp, const char *v,
		     long *out)
{
	size_t n = strlen(v);
	const char *p = sp->type == CFL_P_INT ? sp->choices : NULL;

	while (p && *p) {
		const char *eq = strchr(p, '='), *bar = strchr(p, '|');

		if (!eq || (bar && bar < eq))
			return -1;
		if ((size_t)(eq - p) == n && strncmp(p, v, n) == 0)
			return parse_long_prefix(eq + 1, out);
		p = bar ? bar + 1 : NULL;
	}
	return -1;
}

static int check_value(const struct cfl_model_ops *ops,
		       const struct cfl_param_spec *sp, const char *v,
		       struct cfl_err *err)
{
	long l;
	double d;
	int b;

	if (strcmp(v, "auto") == 0 && sp->def && strcmp(sp->def, "auto") == 0)
		return 0;
	switch (sp->type) {
	case CFL_P_INT:
		if (int_alias(sp, v, &l) == 0)
			return 0;
		if (parse_long(v, &l) || l < sp->lo || l > sp->hi)
			return cfl_err_set(err,
					   "%s: %s must be an integer in [%.17g, %.17g]%s%s, got '%s'",
					   ops->name, sp->name, sp->lo, sp->hi,
					   sp->choices ? " or one of " : "",
					   sp->choices ? sp->choices : "", v);
		return 0;
	case CFL_P_FLOAT:
		if (parse_double(v, &d) || d < sp->lo || d > sp->hi)
			return cfl_err_set(err,
					   "%s: %s must be a number in [%.17g, %.17g], got '%s'",
					   ops->name, sp->name, sp->lo, sp->hi, v);
		return 0;
	case CFL_P_CHOICE:
		if (!choice_ok(sp->choices, v))
			return cfl_err_set(err, "%s: %s must be one of %s, got '%s'",
					   ops->name, sp->name, sp->choices, v);
		return 0;
	case CFL_P_INTLIST:
		if (parse_intlist(v, sp->lo, sp->hi, NULL, 0) < 0)
			return cfl_err_set(err,
					   "%s: %s must be a comma-separated list of integers in [%.17g, %.17g], got '%s'",
					   ops->name, sp->name, sp->lo, sp->hi, v);
		return 0;
	case CFL_P_BOOL:
		if (parse_bool(v, &b))
			return cfl_err_set(err,
					   "%s: %s must be true or false, got '%s'",
					   ops->name, sp->name, v);
		return 0;
	}
	return cfl_err_set(err, "%s: %s has an unknown type", ops->name,
			   sp->name);
}

int cfl_model_check_params(const struct cfl_model_ops *ops,
			   const struct cfl_params *params,
			   struct cfl_err *err)
{
	for (size_t i = 0; i < params->n; i++) {
		const struct cfl_param_spec *sp = find_spec(ops,
							    params->kv[i].key);

		if (!sp) {
			struct cfl_buf names;

			cfl_buf_init(&names);
			for (size_t j = 0; j < ops->n_params; j++)
				cfl_buf_printf(&names, "%s%s", j ? ", " : "",
					       ops->params[j].name);
			cfl_err_set(err, "%s has no parameter '%s' (it has: %s)",
				    ops->name, params->kv[i].key,
				    names.data ? names.data : "none");
			cfl_buf_release(&names);
			return -1;
		}
		if (check_value(ops, sp, params->kv[i].value, err))
			return -1;
	}
	return 0;
}

static const char *raw_value(const struct cfl_model *m, const char *name,
			     const struct cfl_param_spec **spec)
{
	const struct cfl_param_spec *sp = find_spec(m->ops, name);
	const char *v = cfl_params_get(&m->params, name);

	*spec = sp;
	if (v)
		return v;
	return sp && sp->def ? sp->def : "";
}

long cfl_param_int(const struct cfl_model *m, const char *name)
{
	const struct cfl_param_spec *sp;
	const char *v = raw_value(m, name, &sp);
	long l = 0;

	if (sp && int_alias(sp, v, &l) == 0)
		return l;
	parse_long(v, &l);
	return l;
}

double cfl_param_float(const struct cfl_model *m, const char *name)
{
	const struct cfl_param_spec *sp;
	double d = 0;

	parse_double(raw_value(m, name, &sp), &d);
	return d;
}

const char *cfl_param_str(const struct cfl_model *m, const char *name)
{
	const struct cfl_param_spec *sp;

	return raw_value(m, name, &sp);
}

int cfl_param_bool(const struct cfl_model *m, const char *name)
{
	const struct cfl_param_spec *sp;
	int b = 0;

	parse_bool(raw_value(m, name, &sp), &b);
	return b;
}

long cfl_param_intlist(const struct cfl_model *m, const char *name,
		       long *out, size_t cap)
{
	const struct cfl_param_spec *sp;
	const char *v = raw_value(m, name, &sp);

	if (!sp)
		return -1;
	return parse_intlist(v, sp->lo, sp->hi, out, cap);
}

/* ---- life cycle ---- */

struct cfl_model *cfl_model_new(const struct cfl_model_ops *ops,
				const struct cfl_params *params,
				uint64_t seed, struct cfl_err *err)
{
	struct cfl_model *m;

	if (params && cfl_model_check_params(ops, params, err))
		return NULL;
	m = cfl_calloc(1, sizeof(*m), err);
	if (!m)
		return NULL;
	m->ops = ops;
	m->seed = seed;
	cfl_params_init(&m->params);
	if (params && cfl_params_copy(&m->params, params, err)) {
		free(m);
		return NULL;
	}
	return m;
}

void cfl_model_free(struct cfl_model *m)
{
	if (!m)
		return;
	if (m->state && m->ops->release)
		m->ops->release(m);
	cfl_params_release(&m->params);
	free(m);
}

/* ops->fit on the rest of train, the share valid_frac of its rows held
 * out as the validation part (stratified by class, drawn with the
 * model's seed: the same model and rows give the same part wherever it
 * runs), as scikit-learn's MLP validation_fraction. */
static int fit_holdout(struct cfl_model *m, const struct cfl_xy *train,
		       double frac, struct cfl_err *err)
{
	struct cfl_split sp;
	struct cfl_xy tr, va;
	char salt[64];
	int rc = -1;

	if (train->n < 4)
		return cfl_err_set(err, "%s: %zu training rows are too few to hold out valid_frac=%g of them",
				   m->ops->name, train->n, frac);
	snprintf(salt, sizeof(salt), "%s.valid", m->ops->name);
	if (cfl_split_holdout(&sp, train->y, train->n, train->n_classes, 0, frac,
			      cfl_seed_derive(m->seed, salt, 0), err))
		return -1;
	cfl_xy_init(&tr);
	cfl_xy_init(&va);
	if (!cfl_xy_take(&tr, train, sp.train, sp.n_train, err) &&
	    !cfl_xy_take(&va, train, sp.valid, sp.n_valid, err))
		rc = m->ops->fit(m, &tr, &va, err);
	cfl_xy_release(&tr);
	cfl_xy_release(&va);
	cfl_split_release(&sp);
	return rc;
}

int cfl_model_fit(struct cfl_model *m, const struct cfl_xy *train,
		  const struct cfl_xy *valid, struct cfl_err *err)
{
	double frac;

	if (!train->n)
		return cfl_err_set(err, "%s: no training rows", m->ops->name);
	if (valid && valid->n && valid->d != train->d)
		return cfl_err_set(err, "%s: validation rows have %zu features, training rows %zu",
				   m->ops->name, valid->d, train->d);
	if (m->state && m->ops->release)
		m->ops->release(m);
	m->state = NULL;
	m->n_features = train->d;
	m->n_classes = train->n_classes;
	m->n_iter_kept = 0;
	m->budget_cut = 0;
	if ((!valid || !valid->n) && m->ops->early_stop &&
	    cfl_param_int(m, m->ops->early_stop) > 0 &&
	    (frac = cfl_param_float(m, "valid_frac")) > 0)
		return fit_holdout(m, train, frac, err);
	return m->ops->fit(m, train, valid && valid->n ? valid : NULL, err);
}

/* ---- time budget ---- */

int cfl_model_takes_budget(const struct cfl_model_ops *ops)
{
	return ops && (!strcmp(ops->name, "forest") || !strcmp(ops->name, "gbdt") ||
		       !strcmp(ops->name, "fcnn") || !strcmp(ops->name, "tree"));
}

void cfl_budget_start(struct cfl_budget *b, const struct cfl_model *m)
{
	double now = cfl_now();

	b->deadline = m->budget_s > 0 ? now + m->budget_s : 0;
	b->t0 = now;
}

void cfl_budget_units(struct cfl_budget *b)
{
	b->t0 = cfl_now();
}

int cfl_budget_over(const struct cfl_budget *b, size_t n_done)
{
	double now;

	if (b->deadline <= 0 || n_done == 0)
		return 0;
	now = cfl_now();
	return now + (now - b->t0) / (double)n_done > b->deadline;
}

size_t cfl_model_n_out(const struct cfl_model *m)
{
	return m->n_classes > 0 ? (size_t)m->n_classes : 1;
}

/* ---- the size of a model's text ---- */

#define NUM_MAX 26	/* "%.17g" at its longest, and a separator */
#define NODE_MAX 80	/* "s FEAT THR LEFT RIGHT MISS\n" at its longest */

/* params' value of key as a whole number (rounded up), 0 for "none"
 * (no limit), dflt when unset; a value that is no number gives 0 too, so
 * a size it would limit is not limited here (the model refuses it). */
static uint64_t param_u64(const struct cfl_params *params, const char *key,
			  uint64_t dflt)
{
	const char *v = params ? cfl_params_get(params, key) : NULL;
	char *end;
	double x;

	if (!v)
		return dflt;
	x = strtod(v, &end);
	if (end == v || *end || !(x >= 0) || x > 1e15)
		return 0;
	return (uint64_t)ceil(x);
}

/* a * b, or UINT64_MAX past it */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A tree of at most n_rows rows: 2 n_rows - 1 nodes (each leaf holds one
 * row at least), fewer when max_depth or max_leaves (> 0) says so. */
static uint64_t tree_text_max(uint64_t n_rows, uint64_t n_out,
			      uint64_t max_depth, uint64_t max_leaves)
{
	uint64_t nodes = 2 * (n_rows ? n_rows : 1) - 1;

	if (max_depth > 0 && max_depth < 40 && ((uint64_t)2 << max_depth) - 1 < nodes)
		nodes = ((uint64_t)2 << max_depth) - 1;
	if (max_leaves > 0 && 2 * max_leaves - 1 < nodes)
		nodes = 2 * max_leaves - 1;
	return add_sat(32, mul_sat(nodes, NODE_MAX + mul_sat(NUM_MAX, n_out)));
}

uint64_t cfl_model_text_max(const char *name, const struct cfl_params *params,
			    size_t n_features, size_t n_out, size_t n_rows)
{
	uint64_t d = n_features, o = n_out ? n_out : 1, n = n_rows;

	if (!name || !cfl_model_find(name))
		return 0;
	if (!strcmp(name, "baseline"))
		return 64 + NUM_MAX * o;
	if (!strcmp(name, "linear"))
		return 64 + NUM_MAX * (d + 1) * o;
	if (!strcmp(name, "fcnn")) {
		const char *h = params ? cfl_params_get(params, "hidden") : NULL;
		uint64_t in = d, total = 64 + 2 * NUM_MAX;
		/* auto: two layers of at most max(1024, 2 d) (auto_width) */
		uint64_t w_auto = 2 * d > 1024 ? 2 * d : 1024;
		int n_hidden = 0;

		while (n_hidden < 64) {
			uint64_t w;

			if (!h || !strcmp(h, "auto")) {
				if (n_hidden == 2)
					break;
				w = w_auto;
			} else if (!strcmp(h, "none") || !*h) {
				break;
			} else {
				char *end;

				w = strtoull(h, &end, 10);
				if (end == h || (*end && *end != ',') || w > 1u << 20)
					return 0;	/* not a list of widths */
				h = *end == ',' ? end + 1 : "";
			}
			/* weights, biases and batch norm's four vectors */
			total = add_sat(total, 64 + NUM_MAX * ((in + 1) * w + 4 * w));
			in = w;
			n_hidden++;
		}
		return add_sat(total, 64 + mul_sat(NUM_MAX * (in + 1), o));
	}
	if (!strcmp(name, "tree"))
		return tree_text_max(n, o, param_u64(params, "max_depth", 0), 0);
	if (!strcmp(name, "forest")) {
		uint64_t k = param_u64(params, "n_estimators", 100);

		return k ? add_sat(64, mul_sat(k, tree_text_max(n, o,
				param_u64(params, "max_depth", 0), 0))) : 0;
	}
	if (!strcmp(name, "gbdt")) {
		uint64_t k = param_u64(params, "n_rounds", 100);

		return k ? add_sat(64 + NUM_MAX * o, mul_sat(mul_sat(k, o),
				tree_text_max(n, o, param_u64(params, "max_depth", 6),
					      param_u64(params, "max_leaves", 0)))) : 0;
	}
	return 0;	/* a model this bound does not know yet */
}

int cfl_model_predict(const struct cfl_model *m, const float *x, size_t n,
		      double *out, struct cfl_err *err)
{
	if (!m->state)
		return cfl_err_set(err, "%s: model is not fitted", m->ops->name);
	return m->ops->predict(m, x, n, out, err);
}
