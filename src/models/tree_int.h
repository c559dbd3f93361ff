/*
 * Internal to the tree models (tree.c, forest.c, gbdt.c): the flat binary
 * tree they all predict with and save, and the exact CART grower shared by
 * tree and forest (cart.c).
 *
 * Invariant: a node's children always have larger indices than the node, so
 * a walk from the root ends in at most n_nodes steps, also for a tree read
 * from a hostile file.  Nothing here prints or depends on the CLI.
 */
#ifndef CFL_TREE_INT_H
#define CFL_TREE_INT_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cfl/model.h"

/* ---- flat trees ---- */

struct cfl_tnode {
	int32_t feat;		/* split feature, -1 for a leaf */
	int32_t left, right;	/* children, > this node's index */
	int32_t miss_left;	/* NaN goes left (1) or right (0) */
	double thr;		/* x <= thr goes left */
};

struct cfl_ttree {
	size_t n_nodes, cap;
	size_t n_out;		/* values per node */
	struct cfl_tnode *node;	/* n_nodes; node 0 is the root */
	double *value;		/* (n_nodes, n_out); meaningful at leaves */
	double *gain;		/* (n_nodes) what each split gained, as the
				 * grower measures it (CART: the weighted
				 * impurity decrease; gbdt: the loss gain); 0 at
				 * leaves.  Not saved: a tree read from a file
				 * has zeros */
	int has_gain;		/* grown here, not read from a file */
};

void cfl_ttree_init(struct cfl_ttree *t, size_t n_out);
void cfl_ttree_release(struct cfl_ttree *t);
/* Appends a node (a leaf with zero values) and returns its index, or -1 on
 * allocation failure (err filled). */
long cfl_ttree_add(struct cfl_ttree *t, struct cfl_err *err);
/* The leaf values of the leaf row x (d features) falls in. */
const double *cfl_ttree_leaf(const struct cfl_ttree *t, const float *x);
/* Appends "nodes N" then one line per node: "s feat thr left right miss" or
 * "l v...": floats exactly. */
int cfl_ttree_save(const struct cfl_ttree *t, struct cfl_buf *out);
/* Reads what cfl_ttree_save wrote, checking every field (features below
 * n_features, children after their parent and in range, finite values). */
int cfl_ttree_load(struct cfl_ttree *t, struct cfl_reader *in,
		   size_t n_features, size_t n_out, struct cfl_err *err);

/* Adds each split's gain to out[feat] (out: the model's features). */
void cfl_ttree_add_gains(const struct cfl_ttree *t, double *out);
/* Scales out[0..d) to sum 1 (left as it is when the sum is not positive). */
void cfl_importance_normalize(double *out, size_t d);

/* Sorts n floats (no NaN) ascending in O(n) (radix); -0 becomes 0.
 * -1 with err when out of memory. */
int cfl_floats_sort(float *v, size_t n, struct cfl_err *err);

/* A float's sort key: unsigned order is the floats' order; -0 keys as 0,
 * NaN as FLT_MAX. */
static inline uint32_t cfl_float_key(float v)
{
	uint32_t u;

	if (isnan(v))
		v = FLT_MAX;
	if (v == 0)
		v = 0;	/* -0 sorts with 0 */
	memcpy(&u, &v, sizeof(u));
	return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* The float a key of cfl_float_key stands for. */
static inline float cfl_key_float(uint32_t u)
{
	float v;

	u = (u & 0x80000000u) ? u & 0x7fffffffu : ~u;
	memcpy(&v, &u, sizeof(v));
	return v;
}

/* Sorts (key, row) pairs by key, stably: an LSD radix sort of 11 bits a
 * pass, the three passes' counts made in one read, a pass skipped when
 * every key has the same digit.  k2 and r2 are scratch of n each. */
void cfl_pairs_sort(uint32_t *key, uint32_t *row, uint32_t *k2, uint32_t *r2,
		    size_t n);

/* ---- exact CART (cart.c) ---- */

enum cfl_cart_crit { CFL_CART_GINI, CFL_CART_ENTROPY, CFL_CART_MSE };

struct cfl_cart_opts {
	enum cfl_cart_crit crit;
	long max_depth;			/* 0: unlimited */
	long min_samples_split;		/* >= 2 */
	long min_samples_leaf;		/* >= 1 */
	long max_features;		/* features tried per split, 1..d */
	double min_impurity_decrease;
	/* splitter=random (Extra-Trees, Geurts et al. 2006, as scikit-learn's
	 * ExtraTrees*): each feature tried gets one threshold drawn uniformly
	 * between its smallest and largest value in the node, the best of
	 * those wins; 0: the best threshold of each feature (exact CART) */
	int random_split;
	/* A time budget (tree's; a forest's trees have none: it counts
	 * trees): once cfl_budget_over says the next split would pass it,
	 * every node left becomes a leaf and *cut is set.  NULL: none. */
	const struct cfl_budget *budget;
	int *cut;
};

/* Training rows sorted once per feature, shared read-only by every tree of
 * a forest (and its threads). */
struct cfl_cart_data {
	size_t n, d;
	int n_classes;			/* 0: regression */
	const float *x;			/* (n, d) */
	const double *y;		/* n */
	int32_t *cls;			/* n class indices, or NULL */
	uint32_t *order;		/* (d, n): rows by ascending feature, NaN last */
	float *key;			/* (d, n): the sorted values (NaN as FLT_MAX) */
	unsigned char *constant;	/* d: the feature is constant over all rows */
	/* Features with at most CFL_CART_HIST_MAX distinct values are split
	 * by sorting the node's rows on their value ranks (a counting sort)
	 * instead of keeping sorted lists: exact, and no list to partition. */
	uint16_t *n_codes;		/* d: distinct values, 0 for list features */
	uint8_t *code;			/* (d, n): the row's value rank */
	float *code_lo, *code_hi;	/* (d, 256): each rank's value range */
	/* splitter=random keeps none of the above (order, key and code stay
	 * zero; n_codes all 0), only the columns: */
	float *col;			/* (d, n): x by feature, or NULL */
};

#define CFL_CART_HIST_MAX 64

/* Checks labels and sorts (random_split: copies x by columns instead);
 * -1 with err on bad labels or no memory. */
int cfl_cart_data_init(struct cfl_cart_data *cd, const struct cfl_xy *xy,
		       int random_split, struct cfl_err *err);
void cfl_cart_data_release(struct cfl_cart_data *cd);

struct cfl_cart_work;	/* per-thread scratch, reused across trees */

struct cfl_cart_work *cfl_cart_work_new(const struct cfl_cart_data *cd,
					struct cfl_err *err);
void cfl_cart_work_free(struct cfl_cart_work *w);

/* Grows one tree into t (initialised by the caller with n_out = classes or
 * 1) on the rows with weight[i] > 0 (integer counts; NULL: all once),
 * drawing features with rng.  Leaves hold class frequencies or means. */
int cfl_cart_grow(struct cfl_cart_work *w, const struct cfl_cart_opts *o,
		  const uint32_t *weight, struct cfl_rng *rng,
		  struct cfl_ttree *t, struct cfl_err *err);

/* The criterion param value for the task: "auto" picks gini or
 * squared_error; -1 with err when it does not fit the task. */
int cfl_cart_crit_parse(const char *name, const char *s, int n_classes,
			enum cfl_cart_crit *out, struct cfl_err *err);

/* The CART options of a tree or forest model from its params (criterion,
 * max_depth, min_samples_split, min_samples_leaf, max_features,
 * min_impurity_decrease, splitter) for d features; max_features "auto" is sqrt(d)
 * when sqrt_auto and the task is classification, else d. */
int cfl_cart_opts_get(const struct cfl_model *m, size_t d, int sqrt_auto,
		      struct cfl_cart_opts *o, struct cfl_err *err);

/* The out-of-bag score (accuracy or R^2) of a fitted forest, or NaN when
 * it was not computed (oob_score=false or no bootstrap). */
double cfl_forest_oob(const struct cfl_model *m);
/* The trees of the last fit grown on a spare core's thread
 * (cfl_spare_claim); 0 without a fit. */
size_t cfl_forest_spare_trees(const struct cfl_model *m);

/* Parameter specs both tree and forest use, in this order. */
#define CFL_CART_PARAMS(mf_def, mf_help)                                      \
	{ "criterion", CFL_P_CHOICE, "auto", 0, 0,                            \
	  "auto|gini|entropy|squared_error",                                  \
	  "split quality: auto is gini (classification) or squared_error" },  \
	{ "max_depth", CFL_P_INT, "none", 1, 1e6, "none=0",                   \
	  "deepest level of a leaf; none grows until leaves are pure" },      \
	{ "min_samples_split", CFL_P_INT, "2", 2, 1e9, NULL,                  \
	  "fewest rows a node needs to be split" },                           \
	{ "min_samples_leaf", CFL_P_INT, "1", 1, 1e9, NULL,                   \
	  "fewest rows on each side of a split" },                            \
	{ "max_features", CFL_P_INT, mf_def, 1, 1e9,                          \
	  "auto=0|all=-3|sqrt=-1|log2=-2", mf_help },                         \
	{ "min_impurity_decrease", CFL_P_FLOAT, "0", 0, 1e300, NULL,          \
	  "split only when the weighted impurity drops by this much" },       \
	{ "splitter", CFL_P_CHOICE, "best", 0, 0, "best|random",              \
	  "thresholds of each feature tried: best scans them all (CART); "    \
	  "random draws one uniformly between the node's min and max, "       \
	  "missing values going right (Extra-Trees)" }

#endif
