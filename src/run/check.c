/*
 * Result checks: whether a RESULT may be stored as its trial's outcome,
 * judged against the lease that asked for it and the run's data -- the
 * numbers finite, the metric names the lease's, the predictions of the
 * parts' shapes, the model text one that loads for the data's width.  A
 * worker (a forked child, a TCP worker, an MPI rank) may send wrong numbers
 * for a trial it was leased; it must not be able to store a row that makes
 * the run's ensembles, report, --resume or bundle fail.  No I/O, no store:
 * the pool (pool.c) turns a refusal into a failed attempt.
 */
#include "internal.h"

#include "cfl/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const split_name[CFL_WIRE_N_SPLITS] = { "valid", "test", "oof" };

void cfl_result_check_init(struct result_check *c, const struct cfl_data *data,
			   const enum cfl_metric_id *metrics, size_t n_metrics)
{
	memset(c, 0, sizeof(*c));
	c->data = data;
	c->metrics = metrics;
	c->n_metrics = n_metrics;
}

void cfl_result_check_release(struct result_check *c)
{
	free(c->fold);
	memset(c, 0, sizeof(*c));
}

/* Whether every number of r is one a run may store: a prediction finite;
 * a metric finite or NaN (undefined on this data, such as auc with a class
 * missing; stored as NULL); timings finite. */
static int finite_numbers(const struct cfl_wire_result *r, char *why, size_t cap)
{
	if (!isfinite(r->duration) || !isfinite(r->fit_seconds) ||
	    !isfinite(r->predict_seconds)) {
		snprintf(why, cap, "non-finite result: a timing is not a number");
		return 0;
	}
	for (int s = 0; s < CFL_WIRE_N_SPLITS; s++) {
		const struct cfl_wire_split *ws = &r->split[s];
		size_t n = (size_t)ws->n * ws->n_out;

		for (uint32_t i = 0; i < ws->n_metrics; i++)
			if (isinf(ws->metrics[i].value)) {
				snprintf(why, cap, "non-finite result: metric %.31s on %s is %g",
					 ws->metrics[i].name, split_name[s],
					 ws->metrics[i].value);
				return 0;
			}
		for (size_t i = 0; ws->pred && i < n; i++)
			if (!isfinite(ws->pred[i])) {
				snprintf(why, cap, "non-finite result: prediction %zu "
					 "of row %zu on %s is %g", i % ws->n_out,
					 i / ws->n_out, split_name[s], ws->pred[i]);
				return 0;
			}
	}
	for (uint32_t i = 0; i < r->n_columns; i++)
		if ((r->impurity && isinf(r->impurity[i])) ||
		    (r->permutation && isinf(r->permutation[i]))) {
			snprintf(why, cap, "non-finite result: the importance of "
				 "column %u is infinite", i);
			return 0;
		}
	return 1;
}

/* The fold of each train row for (fold_seed, n_folds): the one the
 * worker split by (kept for the next result of the same repeat).  0, or
 * -1 when it cannot be made (why says so). */
static int fold_rows(struct result_check *c, const struct sched_trial *t,
		     char *why, size_t cap)
{
	const struct cfl_xy *tr = &c->data->train;
	struct cfl_err err;

	if (c->fold && c->fold_seed == t->fold_seed && c->n_folds == t->n_folds)
		return 0;
	free(c->fold);
	c->fold = NULL;
	if (t->n_folds < 2 || (size_t)t->n_folds > tr->n || t->fold >= t->n_folds) {
		snprintf(why, cap, "fold %d of %d on %zu rows", t->fold, t->n_folds,
			 tr->n);
		return -1;
	}
	c->fold = cfl_calloc(tr->n + 1, sizeof(*c->fold), &err);
	if (!c->fold || cfl_split_kfold(c->fold, tr->y, tr->n, tr->n_classes,
					(size_t)t->n_folds, t->fold_seed, &err)) {
		free(c->fold);
		c->fold = NULL;
		snprintf(why, cap, "cannot check the folds: %.150s", err.msg);
		return -1;
	}
	c->fold_seed = t->fold_seed;
	c->n_folds = t->n_folds;
	return 0;
}

/* The metrics of split s: want of them, named as the lease's metrics (a
 * command's: "value"). */
static int check_metrics(const struct result_check *c, const struct sched_trial *t,
			 const struct cfl_wire_split *ws, int s, size_t want,
			 char *why, size_t cap)
{
	int command = !!(t->flags & CFL_LEASE_COMMAND);

	if (ws->n_metrics != want) {
		snprintf(why, cap, "%u metrics on %s, the lease asked for %zu",
			 ws->n_metrics, split_name[s], want);
		return 0;
	}
	for (uint32_t i = 0; i < ws->n_metrics; i++) {
		const struct cfl_metric_info *mi = command ? NULL
					: cfl_metric_info(c->metrics[i]);
		const char *name = command ? "value" : mi ? mi->name : "?";

		if (strcmp(ws->metrics[i].name, name)) {
			snprintf(why, cap, "metric '%.31s' on %s, the lease asked "
				 "for '%s'", ws->metrics[i].name, split_name[s], name);
			return 0;
		}
	}
	return 1;
}

/* Split s of r against what the lease asked: the lease's metrics when
 * scored (none otherwise), and predictions of n rows x n_out when scored
 * and kept (none otherwise); oof rows are the fold's. */
static int check_split(const struct result_check *c, const struct sched_trial *t,
		       const struct cfl_wire_result *r, int s, int scored,
		       size_t n, size_t n_out, int keep, char *why, size_t cap)
{
	const struct cfl_wire_split *ws = &r->split[s];
	size_t want = !scored ? 0 : (t->flags & CFL_LEASE_COMMAND) ? 1 : c->n_metrics;

	if (!check_metrics(c, t, ws, s, want, why, cap))
		return 0;
	if (!keep || !scored) {
		if (ws->pred || ws->n || ws->rows) {
			snprintf(why, cap, "%u x %u predictions on %s, the lease "
				 "asked for none", ws->n, ws->n_out, split_name[s]);
			return 0;
		}
		return 1;
	}
	if (!ws->pred || ws->n != n || ws->n_out != n_out) {
		snprintf(why, cap, "%u x %u predictions on %s, the data has "
			 "%zu x %zu", ws->pred ? ws->n : 0, ws->pred ? ws->n_out : 0,
			 split_name[s], n, n_out);
		return 0;
	}
	if (s != 2) {
		if (ws->rows) {
			snprintf(why, cap, "row indices on %s", split_name[s]);
			return 0;
		}
		return 1;
	}
	/* out of fold: exactly the fold's rows, in order */
	for (size_t i = 0, k = 0; i < c->data->train.n; i++) {
		if (c->fold[i] != (size_t)t->fold)
			continue;
		if (!ws->rows || k >= n || ws->rows[k] != i) {
			snprintf(why, cap, "out-of-fold row %zu is not row %zu "
				 "of fold %d", k, i, t->fold);
			return 0;
		}
		k++;
	}
	return 1;
}

/* The most iterations a trial of t may say it kept (n_iter_kept, which a
 * tune's or auto's refit trains for): its epochs or rounds as the lease
 * or the model's default sets them, the most the model's schema allows
 * when that is "auto"; 0 for a model that does not train in steps. */
static unsigned long iters_limit(const struct sched_trial *t)
{
	static const char *const knobs[] = { "epochs", "n_rounds", "n_estimators" };
	const struct cfl_model_ops *ops = cfl_model_find(t->model);

	for (size_t i = 0; ops && i < ops->n_params; i++)
		for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
			const char *v;
			char *end;
			unsigned long n;

			if (strcmp(ops->params[i].name, knobs[k]))
				continue;
			v = cfl_params_get(&t->params, knobs[k]);
			if (!v)
				v = ops->params[i].def;
			if (v && (n = strtoul(v, &end, 10)) > 0 && !*end)
				return n;
			return (unsigned long)ops->params[i].hi;	/* "auto" */
		}
	return 0;
}

/* The model text parses for the data: its width, its classes (the
 * coordinator's encoder put in its place) and the lease's model. */
static int check_model(struct result_check *c, const struct sched_trial *t,
		       const char *text, char *why, size_t cap)
{
	const struct cfl_data *d = c->data;
	struct cfl_buf full;
	struct cfl_encoder enc;
	struct cfl_model *m;
	struct cfl_err err;
	int ok = 0;

	cfl_buf_init(&full);
	if (cfl_model_text_add_encoder(text, strlen(text), &d->enc, &full, &err)) {
		snprintf(why, cap, "a model that does not load: %.180s", err.msg);
		return 0;
	}
	m = cfl_model_parse("model", full.data, full.len, &enc, &err);
	cfl_buf_release(&full);
	if (!m) {
		snprintf(why, cap, "a model that does not load: %.180s", err.msg);
		return 0;
	}
	if (strcmp(m->ops->name, t->model))
		snprintf(why, cap, "a model '%.40s', the lease asked for '%.40s'",
			 m->ops->name, t->model);
	else
		ok = 1;
	cfl_model_free(m);
	cfl_encoder_release(&enc);
	return ok;
}

int cfl_result_check(struct result_check *c, const struct sched_trial *t,
		     const struct cfl_wire_result *r, char *why, size_t cap)
{
	const struct cfl_data *d = c->data;
	unsigned f = t->flags;
	size_t n_out, n_oof = 0;
	int inert = !!(f & (CFL_LEASE_NOOP | CFL_LEASE_COMMAND));

	if (!finite_numbers(r, why, cap))
		return 0;
	if (f & CFL_LEASE_NOOP) {
		/* a benchmark's empty trial: nothing to store but timings */
		for (int s = 0; s < CFL_WIRE_N_SPLITS; s++)
			if (r->split[s].n_metrics || r->split[s].pred) {
				snprintf(why, cap, "a result for an empty trial");
				return 0;
			}
	}
	if ((r->model != NULL) != !!((f & CFL_LEASE_KEEP_MODEL) && !inert)) {
		snprintf(why, cap, r->model ? "a model the lease did not ask for"
					    : "no model, which the lease asked for");
		return 0;
	}
	if (!d) {
		/* a pool without data (tests): the metric names only */
		for (int s = 0; s < CFL_WIRE_N_SPLITS; s++)
			if (r->split[s].n_metrics &&
			    !check_metrics(c, t, &r->split[s], s,
					   (f & CFL_LEASE_COMMAND) ? 1 : c->n_metrics,
					   why, cap))
				return 0;
		return 1;
	}
	if (r->n_iter_kept && !(f & CFL_LEASE_COMMAND) &&
	    r->n_iter_kept > iters_limit(t)) {
		snprintf(why, cap, "%u iterations kept, the lease allows %lu",
			 r->n_iter_kept, iters_limit(t));
		return 0;
	}
	if (r->n_columns && r->n_columns != d->enc.n_in && d->enc.n_in) {
		snprintf(why, cap, "importance of %u columns, the data has %zu",
			 r->n_columns, d->enc.n_in);
		return 0;
	}
	if (f & CFL_LEASE_NOOP)
		return 1;
	n_out = d->train.n_classes > 0 ? (size_t)d->train.n_classes : 1;
	if (t->fold >= 0 && !(f & CFL_LEASE_COMMAND)) {
		if (fold_rows(c, t, why, cap))
			return 0;
		for (size_t i = 0; i < d->train.n; i++)
			n_oof += c->fold[i] == (size_t)t->fold;
	}
	if (!check_split(c, t, r, 0, (f & CFL_LEASE_COMMAND) ||
				 (d->valid.n && !(f & CFL_LEASE_REFIT)),
			 d->valid.n, n_out, (f & CFL_LEASE_KEEP_VALID) && !inert,
			 why, cap) ||
	    !check_split(c, t, r, 1, d->test.n && !(f & CFL_LEASE_COMMAND),
			 d->test.n, n_out, (f & CFL_LEASE_KEEP_TEST) && !inert,
			 why, cap) ||
	    !check_split(c, t, r, 2, n_oof > 0, n_oof, n_out,
			 (f & CFL_LEASE_KEEP_OOF) && !inert, why, cap))
		return 0;
	/* without the encoder (a pool on bytes from an older coordinator)
	 * the model cannot be put together: the coordinator checks it */
	if (r->model && d->enc.d == d->train.d &&
	    !check_model(c, t, r->model, why, cap))
		return 0;
	return 1;
}
