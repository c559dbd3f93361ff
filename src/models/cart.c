/*
 * Exact CART for tree and forest, and the flat trees every tree model
 * predicts with and saves.
 *
 * Rows are sorted once per feature (radix sort, cfl_cart_data); a tree keeps
 * one sorted list per feature and partitions every list stably at each
 * split, so a node's rows occupy the same range [start, end) of every list
 * and no node sorts again.  Features with few distinct values (pixels,
 * one-hot columns) keep no list: a node counting-sorts its rows on their
 * value ranks when it scans them.  Candidate splits follow scikit-learn:
 * features drawn in random order (constant ones skipped and not counted),
 * thresholds halfway between consecutive distinct values, the first
 * strictly best proxy wins.  Features found constant in a node are never looked at again
 * below it.  splitter=random (Extra-Trees) keeps no lists: each feature
 * drawn is read off the node's rows once for its range, gets one uniform
 * threshold in it and one pass for the split's statistics, so a node costs
 * O(rows x max_features) and a split moves the rows only.  Deterministic
 * for a given rng; no globals, no printing.
 */
#include "tree_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* scikit-learn's: values closer than this are one value */
#define FEATURE_THRESHOLD 1e-7

/* ---- flat trees ---- */

void cfl_ttree_init(struct cfl_ttree *t, size_t n_out)
{
	memset(t, 0, sizeof(*t));
	t->n_out = n_out;
}

void cfl_ttree_release(struct cfl_ttree *t)
{
	if (!t)
		return;
	free(t->node);
	free(t->value);
	free(t->gain);
	cfl_ttree_init(t, t->n_out);
}

long cfl_ttree_add(struct cfl_ttree *t, struct cfl_err *err)
{
	if (t->n_nodes == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct cfl_tnode *nn;
		double *nv;

		if (cap > INT32_MAX)
			return cfl_err_set(err, "tree: too many nodes");
		nn = cfl_realloc(t->node, cap * sizeof(*nn), err);
		if (!nn)
			return -1;
		t->node = nn;
		nv = cfl_realloc(t->value, cap * t->n_out * sizeof(*nv), err);
		if (!nv)
			return -1;
		t->value = nv;
		nv = cfl_realloc(t->gain, cap * sizeof(*nv), err);
		if (!nv)
			return -1;
		t->gain = nv;
		t->cap = cap;
	}
	t->gain[t->n_nodes] = 0;
	t->node[t->n_nodes] = (struct cfl_tnode){ .feat = -1 };
	memset(t->value + t->n_nodes * t->n_out, 0, t->n_out * sizeof(double));
	return (long)t->n_nodes++;
}

const double *cfl_ttree_leaf(const struct cfl_ttree *t, const float *x)
{
	const struct cfl_tnode *nd = t->node;
	size_t i = 0;

	while (nd[i].feat >= 0) {
		float v = x[nd[i].feat];

		if (isnan(v))
			i = (size_t)(nd[i].miss_left ? nd[i].left : nd[i].right);
		else
			i = (size_t)((double)v <= nd[i].thr ? nd[i].left :
				     nd[i].right);
	}
	return t->value + i * t->n_out;
}

int cfl_ttree_save(const struct cfl_ttree *t, struct cfl_buf *out)
{
	if (cfl_buf_printf(out, "nodes %zu\n", t->n_nodes))
		return -1;
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct cfl_tnode *nd = &t->node[i];
		int rc;

		if (nd->feat >= 0)
			rc = cfl_buf_printf(out, "s %d %.17g %d %d %d\n",
					    (int)nd->feat, nd->thr,
					    (int)nd->left, (int)nd->right,
					    (int)nd->miss_left);
		else
			rc = cfl_buf_puts(out, "l") ||
			     cfl_buf_doubles(out, t->value + i * t->n_out,
					     t->n_out) ||
			     cfl_buf_puts(out, "\n");
		if (rc)
			return -1;
	}
	return 0;
}

void cfl_ttree_add_gains(const struct cfl_ttree *t, double *out)
{
	for (size_t i = 0; t->gain && i < t->n_nodes; i++)
		if (t->node[i].feat >= 0)
			out[t->node[i].feat] += t->gain[i];
}

void cfl_importance_normalize(double *out, size_t d)
{
	double s = 0;

	for (size_t j = 0; j < d; j++)
		s += out[j];
	if (s > 0)
		for (size_t j = 0; j < d; j++)
			out[j] /= s;
}

int cfl_ttree_load(struct cfl_ttree *t, struct cfl_reader *in,
		   size_t n_features, size_t n_out, struct cfl_err *err)
{
	size_t n;
	char kind[4];

	cfl_ttree_init(t, n_out);
	if (cfl_reader_expect(in, "nodes", err) ||
	    cfl_reader_size(in, INT32_MAX, &n, err))
		return -1;
	/* a node takes three bytes at least: a hostile count cannot make us
	 * allocate more than the file could fill */
	if (n == 0 || n > (in->len - in->pos) / 3)
		return cfl_reader_fail(in, err, "tree has a bad node count %zu",
				       n);
	for (size_t i = 0; i < n; i++) {
		struct cfl_tnode *nd;
		long f, l, r, miss;
		double thr;

		if (cfl_ttree_add(t, err) < 0 ||
		    cfl_reader_word(in, kind, sizeof(kind), err))
			goto fail;
		nd = &t->node[i];
		if (strcmp(kind, "l") == 0) {
			double *v = t->value + i * n_out;

			if (cfl_reader_doubles(in, v, n_out, err))
				goto fail;
			for (size_t k = 0; k < n_out; k++)
				if (!isfinite(v[k])) {
					cfl_reader_fail(in, err, "leaf value is not finite");
					goto fail;
				}
			continue;
		}
		if (strcmp(kind, "s") != 0) {
			cfl_reader_fail(in, err, "expected a node ('s' or 'l'), found '%s'",
					kind);
			goto fail;
		}
		if (cfl_reader_int(in, 0, (long)n_features - 1, &f, err) ||
		    cfl_reader_double(in, &thr, err) ||
		    cfl_reader_int(in, (long)i + 1, (long)n - 1, &l, err) ||
		    cfl_reader_int(in, (long)i + 1, (long)n - 1, &r, err) ||
		    cfl_reader_int(in, 0, 1, &miss, err))
			goto fail;
		if (isnan(thr)) {
			cfl_reader_fail(in, err, "split threshold is not a number");
			goto fail;
		}
		nd->feat = (int32_t)f;
		nd->thr = thr;
		nd->left = (int32_t)l;
		nd->right = (int32_t)r;
		nd->miss_left = (int32_t)miss;
	}
	return 0;
fail:
	cfl_ttree_release(t);
	return -1;
}

/* ---- presorting ---- */

void cfl_pairs_sort(uint32_t *key, uint32_t *row, uint32_t *k2, uint32_t *r2,
		    size_t n)
{
	static const int shift[3] = { 0, 11, 22 };
	uint32_t *sk = key, *sr = row, *dk = k2, *dr = r2, *t;
	uint32_t count[3][2048];

	if (n == 0)
		return;
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++) {
		count[0][key[i] & 2047]++;
		count[1][(key[i] >> 11) & 2047]++;
		count[2][key[i] >> 22]++;
	}
	for (int s = 0; s < 3; s++) {
		uint32_t *c = count[s], sum = 0;

		if (c[(sk[0] >> shift[s]) & 2047] == n)
			continue;
		for (size_t b = 0; b < 2048; b++) {
			uint32_t x = c[b];

			c[b] = sum;
			sum += x;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t at = c[(sk[i] >> shift[s]) & 2047]++;

			dk[at] = sk[i];
			dr[at] = sr[i];
		}
		t = sk, sk = dk, dk = t;
		t = sr, sr = dr, dr = t;
	}
	if (sk != key) {
		memcpy(key, sk, n * sizeof(*key));
		memcpy(row, sr, n * sizeof(*row));
	}
}

/* Ranks feature j's values (values closer than FEATURE_THRESHOLD share a
 * rank, as they never split) when there are few enough. */
static void set_codes(struct cfl_cart_data *cd, size_t j)
{
	size_t n = cd->n, nv = 1;
	const float *kv = cd->key + j * n;
	const uint32_t *row = cd->order + j * n;
	uint8_t *code = cd->code + j * n;
	float *lo = cd->code_lo + j * 256, *hi = cd->code_hi + j * 256;

	for (size_t i = 1; i < n; i++)
		if ((double)kv[i] > (double)kv[i - 1] + FEATURE_THRESHOLD &&
		    ++nv > CFL_CART_HIST_MAX)
			return;
	nv = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || (double)kv[i] > (double)kv[i - 1] + FEATURE_THRESHOLD)
			lo[nv++] = kv[i];
		hi[nv - 1] = kv[i];
		code[row[i]] = (uint8_t)(nv - 1);
	}
	cd->n_codes[j] = (uint16_t)nv;
}

int cfl_floats_sort(float *v, size_t n, struct cfl_err *err)
{
	uint32_t *key = cfl_calloc(n + 1, 4 * sizeof(uint32_t), err);

	if (!key)
		return -1;
	for (size_t i = 0; i < n; i++)
		key[i] = cfl_float_key(v[i]);
	/* the row arrays ride along unused */
	cfl_pairs_sort(key, key + n, key + 2 * n, key + 3 * n, n);
	for (size_t i = 0; i < n; i++)
		v[i] = cfl_key_float(key[i]);
	free(key);
	return 0;
}

/* Ranks feature j directly when it has at most CFL_CART_HIST_MAX distinct
 * values (a small hash set, then a counting sort of the rows by rank): a
 * radix sort would cost more than it.  Returns 0 when there are more. */
static int small_codes(struct cfl_cart_data *cd, size_t j)
{
	enum { SLOTS = 256 };
	size_t n = cd->n, d = cd->d;
	uint32_t hk[SLOTS], pos[CFL_CART_HIST_MAX + 1];
	int16_t hv[SLOTS];
	float dv[CFL_CART_HIST_MAX];
	int perm[CFL_CART_HIST_MAX], code_of[CFL_CART_HIST_MAX];
	int nd = 0, nv = 0;
	uint8_t *code = cd->code + j * n;
	float *lo = cd->code_lo + j * 256, *hi = cd->code_hi + j * 256;

	memset(hv, -1, sizeof(hv));
	for (size_t i = 0; i < n; i++) {
		float v = cd->x[i * d + j];
		uint32_t u, h;

		if (isnan(v))
			v = FLT_MAX;
		if (v == 0)
			v = 0;
		memcpy(&u, &v, sizeof(u));
		h = (u * 2654435761u) >> 24;
		while (hv[h] >= 0 && hk[h] != u)
			h = (h + 1) & (SLOTS - 1);
		if (hv[h] < 0) {
			if (nd == CFL_CART_HIST_MAX)
				return 0;
			hk[h] = u;
			hv[h] = (int16_t)nd;
			dv[nd++] = v;
		}
		code[i] = (uint8_t)hv[h];
	}
	/* distinct values in order, then ranks (close values share one) */
	for (int a = 0; a < nd; a++) {
		int b = a;

		while (b > 0 && dv[perm[b - 1]] > dv[a]) {
			perm[b] = perm[b - 1];
			b--;
		}
		perm[b] = a;
	}
	for (int a = 0; a < nd; a++) {
		float v = dv[perm[a]];

		if (a == 0 || (double)v > (double)dv[perm[a - 1]] + FEATURE_THRESHOLD)
			lo[nv++] = v;
		hi[nv - 1] = v;
		code_of[perm[a]] = nv - 1;
	}
	memset(pos, 0, sizeof(pos));
	for (size_t i = 0; i < n; i++) {
		code[i] = (uint8_t)code_of[code[i]];
		pos[code[i] + 1]++;
	}
	for (int v = 0; v < nv; v++)
		pos[v + 1] += pos[v];
	for (size_t i = 0; i < n; i++) {
		float v = cd->x[i * d + j];
		uint32_t at = pos[code[i]]++;

		cd->order[j * n + at] = (uint32_t)i;
		cd->key[j * n + at] = isnan(v) ? FLT_MAX : v;
	}
	cd->n_codes[j] = (uint16_t)nv;
	cd->constant[j] = nv == 1;
	return 1;
}

/* The columns of x for splitter=random, and which are constant: their
 * values one number (closer than FEATURE_THRESHOLD), or missing. */
static int columns(struct cfl_cart_data *cd, struct cfl_err *err)
{
	size_t n = cd->n, d = cd->d;

	cd->col = cfl_calloc(d ? d : 1, n * sizeof(*cd->col), err);
	if (!cd->col)
		return -1;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < d; j++)
			cd->col[j * n + i] = cd->x[i * d + j];
	for (size_t j = 0; j < d; j++) {
		const float *c = cd->col + j * n;
		double lo = INFINITY, hi = -INFINITY;
		size_t n_miss = 0;

		for (size_t i = 0; i < n; i++) {
			if (isnan(c[i])) {
				n_miss++;
				continue;
			}
			lo = fmin(lo, c[i]);
			hi = fmax(hi, c[i]);
		}
		cd->constant[j] = !(hi > lo + FEATURE_THRESHOLD) &&
				  (n_miss == 0 || n_miss == n);
	}
	return 0;
}

int cfl_cart_data_init(struct cfl_cart_data *cd, const struct cfl_xy *xy,
		       int random_split, struct cfl_err *err)
{
	size_t n = xy->n, d = xy->d;
	uint32_t *key = NULL, *k2 = NULL, *r2 = NULL;

	memset(cd, 0, sizeof(*cd));
	if (n == 0)
		return cfl_err_set(err, "tree: no training rows");
	if (n >= UINT32_MAX)
		return cfl_err_set(err, "tree: too many training rows");
	cd->n = n;
	cd->d = d;
	cd->n_classes = xy->n_classes;
	cd->x = xy->x;
	cd->y = xy->y;
	for (size_t i = 0; i < n; i++) {
		double y = xy->y[i];

		if (!isfinite(y))
			return cfl_err_set(err, "tree: target of row %zu is not a finite number", i);
		if (xy->n_classes > 0 && (y < 0 || y >= xy->n_classes ||
					  y != floor(y)))
			return cfl_err_set(err, "tree: label %.17g of row %zu is not a class in [0, %d)",
					   y, i, xy->n_classes);
	}
	if (xy->n_classes > 0) {
		cd->cls = cfl_calloc(n, sizeof(*cd->cls), err);
		if (!cd->cls)
			goto fail;
		for (size_t i = 0; i < n; i++)
			cd->cls[i] = (int32_t)xy->y[i];
	}
	cd->order = cfl_calloc(d ? d : 1, n * sizeof(*cd->order), err);
	cd->key = cfl_calloc(d ? d : 1, n * sizeof(*cd->key), err);
	cd->constant = cfl_calloc(d ? d : 1, 1, err);
	key = cfl_calloc(n, sizeof(*key), err);
	k2 = cfl_calloc(n, sizeof(*k2), err);
	r2 = cfl_calloc(n, sizeof(*r2), err);
	cd->n_codes = cfl_calloc(d ? d : 1, sizeof(*cd->n_codes), err);
	cd->code = cfl_calloc(d ? d : 1, n, err);
	cd->code_lo = cfl_calloc(d ? d : 1, 256 * sizeof(float), err);
	cd->code_hi = cfl_calloc(d ? d : 1, 256 * sizeof(float), err);
	if (!cd->order || !cd->key || !cd->constant || !key || !k2 || !r2 ||
	    !cd->n_codes || !cd->code || !cd->code_lo || !cd->code_hi)
		goto fail;
	if (random_split) {
		if (columns(cd, err))
			goto fail;
		d = 0;	/* nothing to sort */
	}
	for (size_t j = 0; j < d; j++) {
		uint32_t *row = cd->order + j * n;
		float *kv = cd->key + j * n;

		if (small_codes(cd, j))
			continue;
		for (size_t i = 0; i < n; i++) {
			key[i] = cfl_float_key(xy->x[i * d + j]);
			row[i] = (uint32_t)i;
		}
		cfl_pairs_sort(key, row, k2, r2, n);
		for (size_t i = 0; i < n; i++) {
			float v = xy->x[(size_t)row[i] * d + j];

			kv[i] = isnan(v) ? FLT_MAX : v;
		}
		cd->constant[j] = (double)kv[n - 1] <= (double)kv[0] +
					FEATURE_THRESHOLD;
		set_codes(cd, j);
	}
	free(key);
	free(k2);
	free(r2);
	return 0;
fail:
	free(key);
	free(k2);
	free(r2);
	cfl_cart_data_release(cd);
	return -1;
}

void cfl_cart_data_release(struct cfl_cart_data *cd)
{
	if (!cd)
		return;
	free(cd->cls);
	free(cd->order);
	free(cd->key);
	free(cd->constant);
	free(cd->n_codes);
	free(cd->code);
	free(cd->code_lo);
	free(cd->code_hi);
	free(cd->col);
	memset(cd, 0, sizeof(*cd));
}

/* ---- growing ---- */

struct sv {
	float v;
	uint32_t r;
};

struct task {
	size_t start, end;	/* range in every list and in rows */
	long depth;
	long node;
	size_t n_feat;		/* live features, in the task's arena slot */
};

struct cfl_cart_work {
	const struct cfl_cart_data *cd;
	struct sv *list;	/* (d, n): per list feature, the node's rows sorted */
	struct sv *tmp;		/* n */
	uint32_t *rows, *rtmp;	/* n: the node's rows, in list order */
	uint32_t *w;		/* n: weight of each row */
	unsigned char *goleft;	/* n */
	double *ctot, *cl, *cr;	/* n_classes */
	uint32_t *hrow;		/* (2, 256): rows per rank, then offsets */
	double *xlogx;		/* n_xlogx: k log k */
	size_t n_xlogx;
	int32_t *cur;		/* d */
	size_t *lpos;		/* d: slot of each list feature in list */
	struct task *stack;
	int32_t *feats;		/* (stack_cap, d) */
	size_t stack_cap;
};

struct cfl_cart_work *cfl_cart_work_new(const struct cfl_cart_data *cd,
					struct cfl_err *err)
{
	struct cfl_cart_work *w = cfl_calloc(1, sizeof(*w), err);
	size_t n = cd->n, d = cd->d ? cd->d : 1, k = cd->n_classes + 1;
	size_t n_list = 0;

	if (!w)
		return NULL;
	for (size_t j = 0; j < cd->d && !cd->col; j++)
		n_list += !cd->n_codes[j] && !cd->constant[j];
	w->cd = cd;
	w->list = cfl_calloc(n_list ? n_list : 1, n * sizeof(*w->list), err);
	w->tmp = cfl_calloc(n, sizeof(*w->tmp), err);
	w->rows = cfl_calloc(n, sizeof(*w->rows), err);
	w->rtmp = cfl_calloc(n, sizeof(*w->rtmp), err);
	w->w = cfl_calloc(n, sizeof(*w->w), err);
	w->goleft = cfl_calloc(n, 1, err);
	w->ctot = cfl_calloc(3 * k, sizeof(double), err);
	w->hrow = cfl_calloc(2 * 256, sizeof(*w->hrow), err);
	w->cur = cfl_calloc(d, sizeof(*w->cur), err);
	w->lpos = cfl_calloc(d, sizeof(*w->lpos), err);
	if (!w->list || !w->tmp || !w->rows || !w->rtmp || !w->w ||
	    !w->goleft || !w->ctot || !w->hrow || !w->cur ||
	    !w->lpos) {
		cfl_cart_work_free(w);
		return NULL;
	}
	/* list features get consecutive slots of list */
	n_list = 0;
	for (size_t j = 0; j < cd->d && !cd->col; j++)
		w->lpos[j] = !cd->n_codes[j] && !cd->constant[j] ? n_list++ : 0;
	w->cl = w->ctot + k;
	w->cr = w->cl + k;
	return w;
}

void cfl_cart_work_free(struct cfl_cart_work *w)
{
	if (!w)
		return;
	free(w->list);
	free(w->tmp);
	free(w->rows);
	free(w->rtmp);
	free(w->w);
	free(w->goleft);
	free(w->ctot);
	free(w->hrow);
	free(w->xlogx);
	free(w->cur);
	free(w->lpos);
	free(w->stack);
	free(w->feats);
	free(w);
}

static int push(struct cfl_cart_work *w, size_t *top, struct task t,
		const int32_t *feats, struct cfl_err *err)
{
	size_t d = w->cd->d ? w->cd->d : 1;

	if (*top == w->stack_cap) {
		size_t cap = w->stack_cap ? 2 * w->stack_cap : 64;
		struct task *s = cfl_realloc(w->stack, cap * sizeof(*s), err);
		int32_t *f;

		if (!s)
			return -1;
		w->stack = s;
		f = cfl_realloc(w->feats, cap * d * sizeof(*f), err);
		if (!f)
			return -1;
		w->feats = f;
		w->stack_cap = cap;
	}
	w->stack[*top] = t;
	memcpy(w->feats + *top * d, feats, t.n_feat * sizeof(*feats));
	(*top)++;
	return 0;
}

struct best {
	long feat;
	size_t pos;		/* rows going left */
	int code;		/* ranked features: last rank going left */
	double thr, proxy;
};

static double thr_between(float a, float b)
{
	double t = (double)a / 2 + (double)b / 2;

	if (t == (double)b || isinf(t))
		t = a;
	return t;
}

/* The running class statistics of a scan: sq is sum c^2 (gini) or
 * sum c log c (entropy) over the classes of one side. */
static inline void move_class(double *cl, double *cr, double *sqL,
			      double *sqR, int c, double ww, int gini,
			      const double *X)
{
	if (gini) {
		*sqL += ww * (2 * cl[c] + ww);
		*sqR -= ww * (2 * cr[c] - ww);
	} else {
		*sqL += X[(size_t)(cl[c] + ww)] - X[(size_t)cl[c]];
		*sqR += X[(size_t)(cr[c] - ww)] - X[(size_t)cr[c]];
	}
	cl[c] += ww;
	cr[c] -= ww;
}

static inline double clf_proxy(int gini, double sqL, double sqR, double wL,
			       double wR, const double *X)
{
	if (gini)
		return sqL / wL + sqR / wR;
	return sqL - X[(size_t)wL] + sqR - X[(size_t)wR];
}

/* Scans one list feature's sorted rows for the best split by the
 * criterion's proxy; updates b when strictly better. */
static void scan_list_clf(struct cfl_cart_work *w, const struct sv *L,
			  size_t n, long f, long msl, int gini, double wn,
			  struct best *b)
{
	const int32_t *cls = w->cd->cls;
	int k = w->cd->n_classes;
	double *cl = w->cl, *cr = w->cr, *X = w->xlogx;
	double sqL = 0, sqR = 0, wL = 0, wR = wn;

	for (int c = 0; c < k; c++) {
		cl[c] = 0;
		cr[c] = w->ctot[c];
		sqR += gini ? cr[c] * cr[c] : X[(size_t)cr[c]];
	}
	for (size_t p = 0; p + 1 < n; p++) {
		uint32_t r = L[p].r;
		double ww = w->w[r], proxy;

		move_class(cl, cr, &sqL, &sqR, cls[r], ww, gini, X);
		wL += ww;
		wR -= ww;
		if ((double)L[p + 1].v <= (double)L[p].v + FEATURE_THRESHOLD)
			continue;
		if ((long)(p + 1) < msl)
			continue;
		if ((long)(n - p - 1) < msl)
			break;
		proxy = clf_proxy(gini, sqL, sqR, wL, wR, X);
		if (proxy > b->proxy) {
			b->proxy = proxy;
			b->feat = f;
			b->pos = p + 1;
			b->thr = thr_between(L[p].v, L[p + 1].v);
		}
	}
}

static void scan_list_reg(struct cfl_cart_work *w, const struct sv *L,
			  size_t n, long f, long msl, double wn, double sum,
			  struct best *b)
{
	const double *y = w->cd->y;
	double sL = 0, sR = sum, wL = 0, wR = wn;

	for (size_t p = 0; p + 1 < n; p++) {
		uint32_t r = L[p].r;
		double ww = w->w[r], proxy;

		sL += ww * y[r];
		sR -= ww * y[r];
		wL += ww;
		wR -= ww;
		if ((double)L[p + 1].v <= (double)L[p].v + FEATURE_THRESHOLD)
			continue;
		if ((long)(p + 1) < msl)
			continue;
		if ((long)(n - p - 1) < msl)
			break;
		proxy = sL * sL / wL + sR * sR / wR;
		if (proxy > b->proxy) {
			b->proxy = proxy;
			b->feat = f;
			b->pos = p + 1;
			b->thr = thr_between(L[p].v, L[p + 1].v);
		}
	}
}

/* Scans a ranked feature: the node's rows sorted by rank with a counting
 * sort (stable, O(rows + ranks)), then the same scan as a list feature,
 * thresholds halfway between the ranks' values.  Returns 0 when the
 * feature is constant in the node. */
static int scan_codes(struct cfl_cart_work *w, const uint32_t *rows,
		      size_t n, long f, long msl, enum cfl_cart_crit crit,
		      double wn, double sum, struct best *b)
{
	const struct cfl_cart_data *cd = w->cd;
	const uint8_t *code = cd->code + (size_t)f * cd->n;
	const float *lo = cd->code_lo + (size_t)f * 256;
	const float *hi = cd->code_hi + (size_t)f * 256;
	int nv = cd->n_codes[f], k = cd->n_classes;
	int gini = crit == CFL_CART_GINI;
	double *cl = w->cl, *cr = w->cr, *X = w->xlogx, proxy;
	double sqL = 0, sqR = 0, wL = 0, wR = wn, sL = 0, sR = sum;
	uint32_t *h1 = w->hrow, *h2 = w->hrow + 256, *srt = w->rtmp, at = 0;
	size_t half = n / 2;

	/* two halves counted and placed side by side: rows of one rank in
	 * a row would otherwise chain every increment on the last one */
	memset(h1, 0, (size_t)nv * sizeof(*h1));
	memset(h2, 0, (size_t)nv * sizeof(*h2));
	for (size_t p = 0; p < half; p++) {
		h1[code[rows[p]]]++;
		h2[code[rows[half + p]]]++;
	}
	if (n & 1)
		h2[code[rows[n - 1]]]++;
	for (int v = 0; v < nv; v++) {
		uint32_t c1 = h1[v], c2 = h2[v];

		if (c1 + c2 == n)
			return 0;
		h1[v] = at;
		h2[v] = at + c1;
		at += c1 + c2;
	}
	for (size_t p = 0; p < half; p++) {
		uint32_t r1 = rows[p], r2 = rows[half + p];

		srt[h1[code[r1]]++] = r1;
		srt[h2[code[r2]]++] = r2;
	}
	if (n & 1)
		srt[h2[code[rows[n - 1]]]++] = rows[n - 1];
	if (k > 0) {
		for (int c = 0; c < k; c++) {
			cl[c] = 0;
			cr[c] = w->ctot[c];
			sqR += gini ? cr[c] * cr[c] : X[(size_t)cr[c]];
		}
	}
	for (size_t p = 0; p + 1 < n; p++) {
		uint32_t r = srt[p];
		double ww = w->w[r];
		int c0 = code[r], c1 = code[srt[p + 1]];

		if (k > 0) {
			move_class(cl, cr, &sqL, &sqR, cd->cls[r], ww, gini, X);
		} else {
			sL += ww * cd->y[r];
			sR -= ww * cd->y[r];
		}
		wL += ww;
		wR -= ww;
		if (c1 == c0 || (long)(p + 1) < msl)
			continue;
		if ((long)(n - p - 1) < msl)
			break;
		proxy = k > 0 ? clf_proxy(gini, sqL, sqR, wL, wR, X) :
				sL * sL / wL + sR * sR / wR;
		if (proxy > b->proxy) {
			b->proxy = proxy;
			b->feat = f;
			b->pos = p + 1;
			b->code = c0;
			b->thr = thr_between(hi[c0], lo[c1]);
		}
	}
	return 1;
}

/* splitter=random: feature f of the node's rows gets one threshold drawn
 * uniformly in [min, max) of its values there (scikit-learn's: a draw equal
 * to max becomes min), missing values going right; a feature whose values
 * are one number and missing splits the two apart (threshold: the number).
 * Updates b when the split leaves min_samples_leaf rows on each side and
 * its proxy is strictly better.  Returns 0 when the feature is constant in
 * the node (no draw made). */
static int split_random(struct cfl_cart_work *w, const uint32_t *rows,
			size_t n, long f, long msl, enum cfl_cart_crit crit,
			double wn, double sum, struct cfl_rng *rng,
			struct best *b)
{
	const struct cfl_cart_data *cd = w->cd;
	const float *x = cd->col + (size_t)f * cd->n;
	size_t n_miss = 0, nl = 0;
	int k = cd->n_classes;
	struct sv *v = w->tmp;
	double lo = INFINITY, hi = -INFINITY, thr, proxy, wL = 0, sL = 0;

	for (size_t p = 0; p < n; p++) {
		float e = x[rows[p]];

		v[p] = (struct sv){ e, rows[p] };
		if (isnan(e)) {
			n_miss++;
			continue;
		}
		/* not fmin/fmax: those are calls */
		lo = e < lo ? e : lo;
		hi = e > hi ? e : hi;
	}
	if (hi > lo + FEATURE_THRESHOLD) {
		thr = lo + cfl_rng_uniform(rng) * (hi - lo);
		if (!(thr < hi))	/* also NaN from infinite values */
			thr = lo;
	} else if (n_miss && n_miss < n) {
		thr = hi;
	} else {
		return 0;
	}
	for (int c = 0; c < k; c++)
		w->cl[c] = 0;
	/* branch-free: sides are random, a branch would mispredict (adding
	 * 0 leaves every sum exactly as skipping would) */
	for (size_t p = 0; p < n; p++) {
		uint32_t r = v[p].r;
		size_t left = (double)v[p].v <= thr;	/* NaN: 0 */
		double ww = left ? w->w[r] : 0;

		nl += left;
		wL += ww;
		if (k > 0)
			w->cl[cd->cls[r]] += ww;
		else
			sL += ww * cd->y[r];
	}
	if ((long)nl < msl || (long)(n - nl) < msl)
		return 1;
	if (k > 0) {
		double sqL = 0, sqR = 0, wR = wn - wL;
		int gini = crit == CFL_CART_GINI;
		const double *X = w->xlogx;

		for (int c = 0; c < k; c++) {
			double cl = w->cl[c], cr = w->ctot[c] - cl;

			sqL += gini ? cl * cl : X[(size_t)cl];
			sqR += gini ? cr * cr : X[(size_t)cr];
		}
		proxy = clf_proxy(gini, sqL, sqR, wL, wR, X);
	} else {
		proxy = sL * sL / wL + (sum - sL) * (sum - sL) / (wn - wL);
	}
	if (proxy > b->proxy) {
		b->proxy = proxy;
		b->feat = f;
		b->pos = nl;
		b->thr = thr;
	}
	return 1;
}

/* Node impurity from weighted class counts (gini or entropy) or from the
 * weighted sum and sum of squares (variance). */
static double impurity(enum cfl_cart_crit crit, const double *cnt, int k,
		       double wn, double sum, double sumsq)
{
	double s = 0;

	if (crit == CFL_CART_MSE)
		return fmax(0, sumsq / wn - (sum / wn) * (sum / wn));
	for (int c = 0; c < k; c++) {
		double p = cnt[c] / wn;

		if (crit == CFL_CART_GINI)
			s += p * p;
		else if (p > 0)
			s -= p * log(p);
	}
	return crit == CFL_CART_GINI ? 1 - s : s;
}

/* The weighted impurity decrease of the split in goleft of the rows
 * [start, end), as scikit-learn defines it (relative to the whole training
 * weight). */
static double improvement(struct cfl_cart_work *w,
			  const struct cfl_cart_opts *o, size_t start,
			  size_t end, double wn, double w_total, double imp)
{
	int k = w->cd->n_classes;
	double wl = 0, sl = 0, ql = 0, sr = 0, qr = 0, wr = 0;
	double il, ir;

	for (int c = 0; c < k; c++)
		w->cl[c] = w->cr[c] = 0;
	for (size_t p = start; p < end; p++) {
		uint32_t r = w->rows[p];
		double ww = w->w[r], y = w->cd->y[r];
		int left = w->goleft[r];

		if (k > 0)
			(left ? w->cl : w->cr)[w->cd->cls[r]] += ww;
		if (left)
			wl += ww, sl += ww * y, ql += ww * y * y;
		else
			wr += ww, sr += ww * y, qr += ww * y * y;
	}
	il = impurity(o->crit, w->cl, k, wl, sl, ql);
	ir = impurity(o->crit, w->cr, k, wr, sr, qr);
	return wn / w_total * (imp - wl / wn * il - wr / wn * ir);
}

/* improvement() from the scan's proxy of the best split, without a pass
 * over the rows: the children's weighted impurities sum to wn - proxy
 * (gini: w (1 - sum c^2 / w^2) = w - sum c^2 / w), -proxy (entropy:
 * w log w - sum c log c), sumsq - proxy (variance), so the decrease is
 * (wn * imp - that) / w_total; for the variance wn * imp = sumsq -
 * sum^2 / wn leaves (proxy - sum^2 / wn) / w_total. */
static double proxy_gain(enum cfl_cart_crit crit, const struct best *b,
			 double wn, double sum, double imp, double w_total)
{
	double g;

	if (crit == CFL_CART_GINI)
		g = wn * imp - (wn - b->proxy);
	else if (crit == CFL_CART_ENTROPY)
		g = wn * imp + b->proxy;
	else
		g = b->proxy - sum * sum / wn;
	return fmax(0, g) / w_total;
}

/* Stable partition of list[start, end) by goleft. */
static void partition(struct cfl_cart_work *w, struct sv *L, size_t start,
		      size_t end)
{
	size_t a = start, nr = 0;

	/* branch-free: sides are random, a branch would mispredict */
	for (size_t p = start; p < end; p++) {
		struct sv e = L[p];
		size_t g = w->goleft[e.r];

		L[a] = e;
		w->tmp[nr] = e;
		a += g;
		nr += 1 - g;
	}
	memcpy(L + a, w->tmp, nr * sizeof(*L));
}

static int ensure_xlogx(struct cfl_cart_work *w, size_t total,
			struct cfl_err *err)
{
	double *t;

	if (w->n_xlogx > total)
		return 0;
	t = cfl_realloc(w->xlogx, (total + 1) * sizeof(*t), err);
	if (!t)
		return -1;
	t[0] = 0;
	for (size_t i = 1; i <= total; i++)
		t[i] = (double)i * log((double)i);
	w->xlogx = t;
	w->n_xlogx = total + 1;
	return 0;
}

int cfl_cart_grow(struct cfl_cart_work *w, const struct cfl_cart_opts *o,
		  const uint32_t *weight, struct cfl_rng *rng,
		  struct cfl_ttree *t, struct cfl_err *err)
{
	const struct cfl_cart_data *cd = w->cd;
	size_t n = cd->n, d = cd->d, n_act = 0, top = 0, wtot = 0, n_split = 0;
	size_t dd = d ? d : 1;
	int k = cd->n_classes;
	struct task root = { 0 };
	long msl = o->min_samples_leaf;

	if (o->random_split != (cd->col != NULL))
		return cfl_err_set(err, "tree: the rows were prepared for the other splitter");
	/* the rows in the bag, their weights, and the live features */
	for (size_t i = 0; i < n; i++) {
		uint32_t wi = weight ? weight[i] : 1;

		w->w[i] = wi;
		if (wi) {
			w->rows[n_act++] = (uint32_t)i;
			wtot += wi;
		}
	}
	if (!n_act)
		return cfl_err_set(err, "tree: no training rows in the sample");
	t->has_gain = 1;
	for (size_t j = 0; j < d; j++) {
		const uint32_t *ord = cd->order + j * n;
		const float *kv = cd->key + j * n;
		struct sv *L = w->list + w->lpos[j] * n;
		size_t m = 0;

		if (cd->constant[j])
			continue;
		w->cur[root.n_feat++] = (int32_t)j;
		if (cd->n_codes[j] || o->random_split)
			continue;
		if (!weight) {
			for (size_t i = 0; i < n; i++)
				L[i] = (struct sv){ kv[i], ord[i] };
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (w->w[ord[i]])
				L[m++] = (struct sv){ kv[i], ord[i] };
	}
	if (o->crit == CFL_CART_ENTROPY && ensure_xlogx(w, wtot, err))
		return -1;
	root.end = n_act;
	root.node = cfl_ttree_add(t, err);
	if (root.node < 0 || push(w, &top, root, w->cur, err))
		return -1;

	while (top) {
		struct task tk = w->stack[--top];
		size_t nr = tk.end - tk.start, n_live = tk.n_feat, n_keep;
		const uint32_t *rows = w->rows + tk.start;
		double wn = 0, sum = 0, sumsq = 0, imp = 0, gain;
		double ymin = INFINITY, ymax = -INFINITY;
		double *val = t->value + (size_t)tk.node * t->n_out;
		struct best b = { .feat = -1, .proxy = -INFINITY };
		int leaf, n_nonzero = 0;
		long visited = 0;
		size_t pos = 0;

		memcpy(w->cur, w->feats + top * dd, n_live * sizeof(*w->cur));
		/* node statistics and value */
		for (int c = 0; c < k; c++)
			w->ctot[c] = 0;
		for (size_t p = 0; p < nr; p++) {
			uint32_t r = rows[p];
			double ww = w->w[r], y = cd->y[r];

			wn += ww;
			if (k > 0) {
				w->ctot[cd->cls[r]] += ww;
			} else {
				sum += ww * y;
				sumsq += ww * y * y;
				ymin = fmin(ymin, y);
				ymax = fmax(ymax, y);
			}
		}
		if (k > 0) {
			for (int c = 0; c < k; c++) {
				val[c] = w->ctot[c] / wn;
				n_nonzero += w->ctot[c] > 0;
			}
		} else {
			val[0] = sum / wn;
		}
		leaf = (long)nr < o->min_samples_split ||
		       (long)nr < 2 * msl ||
		       (o->max_depth > 0 && tk.depth >= o->max_depth) ||
		       (k > 0 ? n_nonzero <= 1 : ymin == ymax);
		if (leaf)
			continue;
		/* out of time: the nodes left are leaves (a tree all the same) */
		if (o->budget && cfl_budget_over(o->budget, n_split)) {
			if (o->cut)
				*o->cut = 1;
			continue;
		}
		n_split++;

		/* draw features until max_features non-constant ones are
		 * scanned; constants move past n_keep and stay out below */
		n_keep = n_live;
		while (pos < n_keep && visited < o->max_features) {
			size_t j = pos + (size_t)cfl_rng_below(rng, n_keep - pos);
			int32_t f = w->cur[j];
			int live;

			w->cur[j] = w->cur[pos];
			w->cur[pos] = f;
			if (o->random_split) {
				live = split_random(w, rows, nr, f, msl, o->crit,
						    wn, sum, rng, &b);
			} else if (cd->n_codes[f]) {
				live = scan_codes(w, rows, nr, f, msl, o->crit,
						  wn, sum, &b);
			} else {
				const struct sv *L = w->list +
					w->lpos[f] * n + tk.start;

				live = (double)L[nr - 1].v > (double)L[0].v +
							     FEATURE_THRESHOLD;
				if (live && k > 0)
					scan_list_clf(w, L, nr, f, msl,
						      o->crit == CFL_CART_GINI,
						      wn, &b);
				else if (live)
					scan_list_reg(w, L, nr, f, msl, wn,
						      sum, &b);
			}
			if (!live) {
				w->cur[pos] = w->cur[n_keep - 1];
				w->cur[n_keep - 1] = f;
				n_keep--;
				continue;
			}
			visited++;
			pos++;
		}
		if (b.feat < 0)
			continue;

		/* which rows go left */
		if (o->random_split) {
			const float *x = cd->col + (size_t)b.feat * n;

			for (size_t p = 0; p < nr; p++)
				w->goleft[rows[p]] = (double)x[rows[p]] <= b.thr;
		} else if (cd->n_codes[b.feat]) {
			const uint8_t *code = cd->code + (size_t)b.feat * n;

			for (size_t p = 0; p < nr; p++)
				w->goleft[rows[p]] = code[rows[p]] <= b.code;
		} else {
			const struct sv *B = w->list + w->lpos[b.feat] * n +
					     tk.start;

			for (size_t p = 0; p < nr; p++)
				w->goleft[B[p].r] = p < b.pos;
		}
		/* the weighted impurity decrease: the split's importance, and
		 * what min_impurity_decrease asks of it (then counted over the
		 * rows, as ever) */
		imp = impurity(o->crit, w->ctot, k, wn, sum, sumsq);
		if (o->min_impurity_decrease > 0) {
			gain = improvement(w, o, tk.start, tk.end, wn, (double)wtot, imp);
			if (gain + DBL_EPSILON < o->min_impurity_decrease)
				continue;
		} else {
			gain = proxy_gain(o->crit, &b, wn, sum, imp, (double)wtot);
		}
		t->gain[tk.node] = gain;

		/* split: every live list and the rows, stably */
		{
			size_t mid = tk.start + b.pos, a = tk.start, m = 0;
			struct task lt, rt;
			long ln, rn;

			for (size_t i = 0; i < n_keep && !o->random_split; i++) {
				int32_t f = w->cur[i];

				if (!cd->n_codes[f])
					partition(w, w->list + w->lpos[f] * n,
						  tk.start, tk.end);
			}
			for (size_t p = tk.start; p < tk.end; p++) {
				uint32_t r = w->rows[p];
				size_t g = w->goleft[r];

				w->rows[a] = r;
				w->rtmp[m] = r;
				a += g;
				m += 1 - g;
			}
			memcpy(w->rows + a, w->rtmp, m * sizeof(*w->rows));
			ln = cfl_ttree_add(t, err);
			rn = ln < 0 ? -1 : cfl_ttree_add(t, err);
			if (rn < 0)
				return -1;
			t->node[tk.node].feat = (int32_t)b.feat;
			t->node[tk.node].thr = b.thr;
			t->node[tk.node].left = (int32_t)ln;
			t->node[tk.node].right = (int32_t)rn;
			t->node[tk.node].miss_left = 0;
			lt = (struct task){ tk.start, mid, tk.depth + 1, ln, n_keep };
			rt = (struct task){ mid, tk.end, tk.depth + 1, rn, n_keep };
			if (push(w, &top, rt, w->cur, err) ||
			    push(w, &top, lt, w->cur, err))
				return -1;
		}
	}
	return 0;
}

int cfl_cart_crit_parse(const char *name, const char *s, int n_classes,
			enum cfl_cart_crit *out, struct cfl_err *err)
{
	if (strcmp(s, "auto") == 0) {
		*out = n_classes > 0 ? CFL_CART_GINI : CFL_CART_MSE;
		return 0;
	}
	if (strcmp(s, "gini") == 0 || strcmp(s, "entropy") == 0) {
		if (n_classes <= 0)
			return cfl_err_set(err, "%s: criterion '%s' needs a classification target",
					   name, s);
		*out = s[0] == 'g' ? CFL_CART_GINI : CFL_CART_ENTROPY;
		return 0;
	}
	if (strcmp(s, "squared_error") == 0) {
		if (n_classes > 0)
			return cfl_err_set(err, "%s: criterion 'squared_error' needs a regression target",
					   name);
		*out = CFL_CART_MSE;
		return 0;
	}
	return cfl_err_set(err, "%s: unknown criterion '%s'", name, s);
}

int cfl_cart_opts_get(const struct cfl_model *m, size_t d, int sqrt_auto,
		      struct cfl_cart_opts *o, struct cfl_err *err)
{
	long mf = cfl_param_int(m, "max_features");
	enum cfl_cart_crit crit;

	if (cfl_cart_crit_parse(m->ops->name, cfl_param_str(m, "criterion"),
				m->n_classes, &crit, err))
		return -1;
	o->crit = crit;
	o->budget = NULL;
	o->cut = NULL;
	o->max_depth = cfl_param_int(m, "max_depth");
	o->min_samples_split = cfl_param_int(m, "min_samples_split");
	o->min_samples_leaf = cfl_param_int(m, "min_samples_leaf");
	o->min_impurity_decrease = cfl_param_float(m, "min_impurity_decrease");
	o->random_split = strcmp(cfl_param_str(m, "splitter"), "random") == 0;
	if (mf == 0)	/* auto */
		mf = sqrt_auto && m->n_classes > 0 ? -1 : -3;
	if (mf == -1)
		mf = (long)sqrt((double)d);
	else if (mf == -2)
		mf = (long)log2((double)(d ? d : 1));
	else if (mf == -3 || mf > (long)d)
		mf = (long)d;
	o->max_features = mf < 1 ? 1 : mf;
	return 0;
}
