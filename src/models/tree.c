/*
 * tree: one CART decision tree (scikit-learn's DecisionTreeClassifier /
 * DecisionTreeRegressor with their defaults: full depth, every feature
 * tried at each split in a seeded random order).  Leaves hold class
 * frequencies or the mean.  The grower is cart.c's; this file is the
 * model's parameters, fit, predict, save and load.
 */
#include "tree_int.h"

#include <stdlib.h>
#include <string.h>

static const struct cfl_param_spec tree_params[] = {
	CFL_CART_PARAMS("all", "features tried per split: a count, all, sqrt or log2"),
};

static void tree_release(struct cfl_model *m)
{
	cfl_ttree_release(m->state);
	free(m->state);
	m->state = NULL;
}

static int tree_fit(struct cfl_model *m, const struct cfl_xy *train,
		    const struct cfl_xy *valid, struct cfl_err *err)
{
	struct cfl_cart_opts o;
	struct cfl_cart_data cd;
	struct cfl_cart_work *w = NULL;
	struct cfl_ttree *t;
	struct cfl_rng rng;
	struct cfl_budget budget;
	int rc = -1, cut = 0;

	(void)valid;
	cfl_budget_start(&budget, m);
	if (cfl_cart_opts_get(m, train->d, 0, &o, err))
		return -1;
	if (m->budget_s > 0) {
		o.budget = &budget;
		o.cut = &cut;
	}
	t = cfl_calloc(1, sizeof(*t), err);
	if (!t)
		return -1;
	cfl_ttree_init(t, cfl_model_n_out(m));
	if (cfl_cart_data_init(&cd, train, o.random_split, err)) {
		free(t);
		return -1;
	}
	cfl_rng_seed(&rng, m->seed);
	w = cfl_cart_work_new(&cd, err);
	cfl_budget_units(&budget);
	if (w && cfl_cart_grow(w, &o, NULL, &rng, t, err) == 0)
		rc = 0;
	m->budget_cut = cut;
	cfl_cart_work_free(w);
	cfl_cart_data_release(&cd);
	if (rc) {
		cfl_ttree_release(t);
		free(t);
		return -1;
	}
	m->state = t;
	return 0;
}

static int tree_predict(const struct cfl_model *m, const float *x, size_t n,
			double *out, struct cfl_err *err)
{
	const struct cfl_ttree *t = m->state;
	size_t d = m->n_features, k = t->n_out;

	(void)err;
	for (size_t i = 0; i < n; i++)
		memcpy(out + i * k, cfl_ttree_leaf(t, x + i * d),
		       k * sizeof(double));
	return 0;
}

/* scikit-learn's feature_importances_: each feature's weighted impurity
 * decrease, scaled to sum 1; 1 when the tree was read from a file. */
static int tree_importance(const struct cfl_model *m, double *out,
			   struct cfl_err *err)
{
	const struct cfl_ttree *t = m->state;

	(void)err;
	if (!t->has_gain)
		return 1;
	memset(out, 0, m->n_features * sizeof(*out));
	cfl_ttree_add_gains(t, out);
	cfl_importance_normalize(out, m->n_features);
	return 0;
}

static int tree_save(const struct cfl_model *m, struct cfl_buf *out,
		     struct cfl_err *err)
{
	if (cfl_buf_puts(out, "tree\n") || cfl_ttree_save(m->state, out))
		return cfl_err_set(err, "out of memory");
	return 0;
}

static int tree_load(struct cfl_model *m, struct cfl_reader *in,
		     struct cfl_err *err)
{
	struct cfl_ttree *t;

	if (cfl_reader_expect(in, "tree", err))
		return -1;
	t = cfl_calloc(1, sizeof(*t), err);
	if (!t)
		return -1;
	if (cfl_ttree_load(t, in, m->n_features, cfl_model_n_out(m), err)) {
		free(t);
		return -1;
	}
	m->state = t;
	return 0;
}

const struct cfl_model_ops cfl_tree_ops = {
	.name = "tree",
	.summary = "CART decision tree (gini, entropy or squared error)",
	.params = tree_params,
	.n_params = sizeof(tree_params) / sizeof(tree_params[0]),
	.fit = tree_fit,
	.predict = tree_predict,
	.save = tree_save,
	.load = tree_load,
	.release = tree_release,
	.importance = tree_importance,
};
