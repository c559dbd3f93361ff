/*
 * Metrics over model outputs, equal to scikit-learn 1.2's on the fixtures
 * in tests/unit/metrics_fixtures.h (see include/cfl/metrics.h for the exact
 * sklearn call each one matches).  Every input is checked first (n > 0,
 * labels in range, finite values), so a bad trial gives an error message,
 * never a NaN in a table or a crash.  Depends on core only.
 */
#include "cfl/metrics.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct cfl_metric_info infos[CFL_M_COUNT] = {
	[CFL_M_ACC] = { "acc", +1, 1, 0,
			"accuracy: share of rows whose most probable class is the true one" },
	[CFL_M_AUC] = { "auc", +1, 1, 0,
			"area under the ROC curve (one-vs-rest macro for more than two classes)" },
	[CFL_M_F1] = { "f1", +1, 1, 0,
		       "macro F1: mean over classes of the harmonic mean of precision and recall" },
	[CFL_M_LOGLOSS] = { "logloss", -1, 1, 0,
			    "mean negative log of the probability given to the true class" },
	[CFL_M_BER] = { "ber", -1, 1, 0,
			"balanced error rate: 1 - mean recall over the classes" },
	[CFL_M_MAE] = { "mae", -1, 0, 1, "mean absolute error" },
	[CFL_M_MSE] = { "mse", -1, 0, 1, "mean squared error" },
	[CFL_M_RMSE] = { "rmse", -1, 0, 1, "root mean squared error" },
	[CFL_M_R2] = { "r2", +1, 0, 1,
		       "coefficient of determination: 1 - SS_res / SS_tot" },
	[CFL_M_CORR] = { "corr", +1, 0, 1,
			 "Pearson correlation between targets and predictions" },
};

const struct cfl_metric_info *cfl_metric_info(enum cfl_metric_id id)
{
	if ((int)id < 0 || id >= CFL_M_COUNT)
		return NULL;
	return &infos[id];
}

int cfl_metric_lookup(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < CFL_M_COUNT; i++)
		if (strcmp(infos[i].name, name) == 0)
			return i;
	if (strcmp(name, "correlation") == 0)
		return CFL_M_CORR;
	return -1;
}

size_t cfl_metric_defaults(int n_classes, enum cfl_metric_id *out, size_t cap)
{
	enum cfl_metric_id clf[] = { CFL_M_ACC, CFL_M_AUC };
	enum cfl_metric_id reg[] = { CFL_M_MAE, CFL_M_MSE };
	const enum cfl_metric_id *ids = n_classes > 0 ? clf : reg;

	for (size_t i = 0; i < 2 && i < cap; i++)
		out[i] = ids[i];
	return 2;
}

long cfl_metric_parse_list(const char *list, int n_classes,
			   enum cfl_metric_id *out, size_t cap,
			   struct cfl_err *err)
{
	const char *p = list ? list : "";
	long n = 0;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[32];
		int id, dup = 0;

		if (len == 0 || len >= sizeof(name)) {
			if (len == 0 && !comma && n == 0)
				return cfl_err_set(err, "empty metric list");
			if (len == 0)
				return cfl_err_set(err, "empty metric name in '%s'",
						   list);
			return cfl_err_set(err, "unknown metric '%.*s'", (int)len, p);
		}
		memcpy(name, p, len);
		name[len] = 0;
		id = cfl_metric_lookup(name);
		if (id < 0)
			return cfl_err_set(err,
					   "unknown metric '%s' (known: acc, auc, f1, logloss, ber, mae, mse, rmse, r2, corr)",
					   name);
		if (n_classes > 0 && !infos[id].clf)
			return cfl_err_set(err, "metric '%s' does not apply to classification",
					   name);
		if (n_classes == 0 && !infos[id].reg)
			return cfl_err_set(err, "metric '%s' does not apply to regression",
					   name);
		for (long i = 0; i < n && (size_t)i < cap; i++)
			dup |= out[i] == (enum cfl_metric_id)id;
		if (!dup) {
			if ((size_t)n < cap)
				out[n] = id;
			n++;
		}
		if (!comma)
			return n;
		p = comma + 1;
	}
}

/* ---- metrics: classification ---- */

/* The predicted class of a row: its argmax, the first column on ties (as
 * numpy.argmax). */
static int argmax(const double *row, int k)
{
	int best = 0;

	for (int j = 1; j < k; j++)
		if (row[j] > row[best])
			best = j;
	return best;
}

static double accuracy(const double *y, const double *out, size_t n, int k)
{
	size_t hit = 0;

	for (size_t i = 0; i < n; i++)
		hit += argmax(out + i * k, k) == (int)y[i];
	return (double)hit / (double)n;
}

/* Fills cm (k, k): cm[true * k + predicted] counts. */
static void confusion(const double *y, const double *out, size_t n, int k,
		      size_t *cm)
{
	memset(cm, 0, (size_t)k * k * sizeof(*cm));
	for (size_t i = 0; i < n; i++)
		cm[(size_t)y[i] * k + argmax(out + i * k, k)]++;
}

/* sklearn's f1_score(average='macro') with the default labels: the classes
 * present in y or in the predictions. */
static double f1_macro(const size_t *cm, int k)
{
	double sum = 0;
	int n_labels = 0;

	for (int c = 0; c < k; c++) {
		size_t tp = cm[(size_t)c * k + c], n_true = 0, n_pred = 0;
		double prec, rec;

		for (int j = 0; j < k; j++) {
			n_true += cm[(size_t)c * k + j];
			n_pred += cm[(size_t)j * k + c];
		}
		if (!n_true && !n_pred)
			continue;
		n_labels++;
		prec = n_pred ? (double)tp / (double)n_pred : 0;
		rec = n_true ? (double)tp / (double)n_true : 0;
		if (prec + rec > 0)
			sum += 2 * prec * rec / (prec + rec);
	}
	return sum / n_labels;
}

/* 1 - balanced_accuracy_score: the mean recall over classes present in y. */
static double ber(const size_t *cm, int k)
{
	double sum = 0;
	int n_present = 0;

	for (int c = 0; c < k; c++) {
		size_t n_true = 0;

		for (int j = 0; j < k; j++)
			n_true += cm[(size_t)c * k + j];
		if (!n_true)
			continue;
		n_present++;
		sum += (double)cm[(size_t)c * k + c] / (double)n_true;
	}
	return 1 - sum / n_present;
}

/* sklearn 1.2's log_loss: clip to [eps, 1 - eps], renormalise each row,
 * then the mean of -log p(true class). */
static double row_logloss(const double *row, int k, int label)
{
	const double eps = DBL_EPSILON;
	double sum = 0, p = 0;

	for (int j = 0; j < k; j++) {
		double v = fmin(fmax(row[j], eps), 1 - eps);

		sum += v;
		if (j == label)
			p = v;
	}
	return -log(p / sum);
}

static double logloss(const double *y, const double *out, size_t n, int k)
{
	double total = 0;

	for (size_t i = 0; i < n; i++)
		total += row_logloss(out + i * k, k, (int)y[i]);
	return total / (double)n;
}

struct scored {
	double score;
	int pos;
};

static int cmp_scored(const void *a, const void *b)
{
	double x = ((const struct scored *)a)->score;
	double z = ((const struct scored *)b)->score;

	return (x > z) - (x < z);
}

/* The key of a finite double whose unsigned order is the double's: the
 * sign bit flipped for positives, every bit for negatives. */
static uint64_t score_key(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return (u >> 63) ? ~u : u | (1ULL << 63);
}

/* Sorts s by score, ascending: on many rows four passes of 16 bits
 * (auto's fold trials score 424,000 rows each, its ensembles 720,000, and
 * qsort's comparisons took a seventh of the CPU of a run on a million
 * rows), on few qsort.  The AUC reads only the order of the scores and
 * which are equal, so either gives the same value to the bit (-0 and +0,
 * adjacent here, compare equal there). */
#define RADIX_MIN_ROWS 4096
static void sort_scored(struct scored *s, size_t n)
{
	struct scored *tmp = n >= RADIX_MIN_ROWS ? malloc(n * sizeof(*tmp)) : NULL;
	size_t *count = tmp ? calloc(65536, sizeof(*count)) : NULL;

	if (!count) {	/* few rows, or no memory for the fast way */
		free(tmp);
		qsort(s, n, sizeof(*s), cmp_scored);
		return;
	}
	for (int pass = 0; pass < 4; pass++) {
		int shift = 16 * pass;
		size_t sum = 0;

		memset(count, 0, 65536 * sizeof(*count));
		for (size_t i = 0; i < n; i++)
			count[(score_key(s[i].score) >> shift) & 0xffff]++;
		for (size_t d = 0; d < 65536; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(score_key(s[i].score) >> shift) & 0xffff]++] = s[i];
		memcpy(s, tmp, n * sizeof(*s));
	}
	free(count);
	free(tmp);
}

/* The binary AUC of column col against "y == cls": the Mann-Whitney U over
 * average ranks, which is what the trapezoidal ROC area gives with ties.
 * s is scratch of n items.  -1 when one side is empty. */
static int auc_column(const double *y, const double *out, size_t n, int k,
		      int col, int cls, struct scored *s, double *auc)
{
	double n_pos = 0, rank_sum = 0;

	for (size_t i = 0; i < n; i++) {
		s[i].score = out[i * k + col];
		s[i].pos = (int)y[i] == cls;
		n_pos += s[i].pos;
	}
	if (n_pos == 0 || n_pos == (double)n)
		return -1;
	sort_scored(s, n);
	for (size_t i = 0; i < n;) {
		size_t j = i, n_pos_here = 0;

		while (j < n && s[j].score == s[i].score)
			n_pos_here += s[j++].pos;
		/* ranks i+1 .. j share their mean (i + 1 + j) / 2 */
		rank_sum += (double)n_pos_here * (double)(i + 1 + j) / 2;
		i = j;
	}
	*auc = (rank_sum - n_pos * (n_pos + 1) / 2) /
	       (n_pos * ((double)n - n_pos));
	return 0;
}

static int auc(const double *y, const double *out, size_t n, int k,
	       double *value, struct cfl_err *err)
{
	struct scored *s = cfl_malloc(n * sizeof(*s), err);
	double sum = 0, a;

	if (!s)
		return -1;
	if (k == 2) {
		if (auc_column(y, out, n, k, 1, 1, s, &a)) {
			free(s);
			return cfl_err_set(err, "auc is undefined: only class %d occurs in y",
					   (int)y[0]);
		}
		*value = a;
		free(s);
		return 0;
	}
	for (int c = 0; c < k; c++) {
		if (auc_column(y, out, n, k, c, c, s, &a)) {
			free(s);
			return cfl_err_set(err, "auc is undefined: class %d %s in y",
					   c, (int)y[0] == c ? "is the only class" :
					   "does not occur");
		}
		sum += a;
	}
	free(s);
	*value = sum / k;
	return 0;
}

/* ---- metrics: regression ---- */

static double mean(const double *v, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s / (double)n;
}

static int r2(const double *y, const double *p, size_t n, double *value,
	      struct cfl_err *err)
{
	double my, ss_res = 0, ss_tot = 0;

	if (n < 2)
		return cfl_err_set(err, "r2 is undefined with fewer than two rows");
	my = mean(y, n);
	for (size_t i = 0; i < n; i++) {
		ss_res += (y[i] - p[i]) * (y[i] - p[i]);
		ss_tot += (y[i] - my) * (y[i] - my);
	}
	/* sklearn's force_finite: constant y scores 1 if exact, else 0 */
	if (ss_tot == 0)
		*value = ss_res == 0 ? 1 : 0;
	else
		*value = 1 - ss_res / ss_tot;
	return 0;
}

static int corr(const double *y, const double *p, size_t n, double *value,
		struct cfl_err *err)
{
	double my, mp, sxy = 0, sxx = 0, syy = 0, r;

	if (n < 2)
		return cfl_err_set(err, "corr is undefined with fewer than two rows");
	my = mean(y, n);
	mp = mean(p, n);
	for (size_t i = 0; i < n; i++) {
		sxy += (y[i] - my) * (p[i] - mp);
		syy += (y[i] - my) * (y[i] - my);
		sxx += (p[i] - mp) * (p[i] - mp);
	}
	if (syy == 0)
		return cfl_err_set(err, "corr is undefined: the target is constant");
	if (sxx == 0)
		return cfl_err_set(err, "corr is undefined: the predictions are constant");
	r = sxy / (sqrt(syy) * sqrt(sxx));
	*value = fmax(-1, fmin(1, r));
	return 0;
}

/* ---- evaluation ---- */

static int check_inputs(const struct cfl_metric_info *mi, const double *y,
			const double *out, size_t n, int n_classes,
			struct cfl_err *err)
{
	size_t n_out = n_classes > 0 ? (size_t)n_classes : 1;

	if (n_classes > 0 && !mi->clf)
		return cfl_err_set(err, "metric '%s' does not apply to classification",
				   mi->name);
	if (n_classes == 0 && !mi->reg)
		return cfl_err_set(err, "metric '%s' does not apply to regression",
				   mi->name);
	if (n_classes == 1 || n_classes < 0)
		return cfl_err_set(err, "%s: cannot score %d classes", mi->name,
				   n_classes);
	if (n == 0)
		return cfl_err_set(err, "%s: no rows to score", mi->name);
	if (n_out > ((size_t)-1) / sizeof(double) / n)
		return cfl_err_set(err, "%s: too many rows", mi->name);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return cfl_err_set(err, "%s: target of row %zu is not a finite number",
					   mi->name, i);
		if (n_classes > 0 &&
		    (y[i] < 0 || y[i] >= n_classes || y[i] != floor(y[i])))
			return cfl_err_set(err, "%s: label %.17g of row %zu is not a class in [0, %d)",
					   mi->name, y[i], i, n_classes);
	}
	for (size_t i = 0; i < n * n_out; i++)
		if (!isfinite(out[i]))
			return cfl_err_set(err, "%s: prediction of row %zu is not a finite number",
					   mi->name, i / n_out);
	return 0;
}

int cfl_metric_eval(enum cfl_metric_id id, const double *y, const double *out,
		    size_t n, int n_classes, double *value, struct cfl_err *err)
{
	const struct cfl_metric_info *mi = cfl_metric_info(id);
	double s = 0;
	size_t *cm;
	int k = n_classes;

	if (!mi)
		return cfl_err_set(err, "unknown metric id %d", (int)id);
	if (check_inputs(mi, y, out, n, n_classes, err))
		return -1;
	switch (id) {
	case CFL_M_ACC:
		*value = accuracy(y, out, n, k);
		return 0;
	case CFL_M_AUC:
		return auc(y, out, n, k, value, err);
	case CFL_M_F1:
	case CFL_M_BER:
		cm = cfl_calloc((size_t)k * k, sizeof(*cm), err);
		if (!cm)
			return -1;
		confusion(y, out, n, k, cm);
		*value = id == CFL_M_F1 ? f1_macro(cm, k) : ber(cm, k);
		free(cm);
		return 0;
	case CFL_M_LOGLOSS:
		*value = logloss(y, out, n, k);
		return 0;
	case CFL_M_MAE:
		for (size_t i = 0; i < n; i++)
			s += fabs(y[i] - out[i]);
		*value = s / (double)n;
		return 0;
	case CFL_M_MSE:
	case CFL_M_RMSE:
		for (size_t i = 0; i < n; i++)
			s += (y[i] - out[i]) * (y[i] - out[i]);
		s /= (double)n;
		*value = id == CFL_M_RMSE ? sqrt(s) : s;
		return 0;
	case CFL_M_R2:
		return r2(y, out, n, value, err);
	case CFL_M_CORR:
		return corr(y, out, n, value, err);
	case CFL_M_COUNT:
		break;
	}
	return cfl_err_set(err, "unknown metric id %d", (int)id);
}

/* ---- metrics: per row ---- */

int cfl_metric_row_losses(enum cfl_metric_id id, const double *y,
			  const double *out, size_t n, int n_classes,
			  double *loss, struct cfl_err *err)
{
	const struct cfl_metric_info *mi = cfl_metric_info(id);
	int k = n_classes;

	if (!mi)
		return cfl_err_set(err, "unknown metric id %d", (int)id);
	if (check_inputs(mi, y, out, n, n_classes, err))
		return -1;
	for (size_t i = 0; i < n; i++) {
		double e = mi->reg ? out[i] - y[i] : 0;

		switch (id) {
		case CFL_M_LOGLOSS:
			loss[i] = row_logloss(out + i * k, k, (int)y[i]);
			break;
		case CFL_M_MAE:
			loss[i] = fabs(e);
			break;
		case CFL_M_MSE:
		case CFL_M_RMSE:
		case CFL_M_R2:
		case CFL_M_CORR:
			loss[i] = e * e;
			break;
		default:	/* acc, and for auc, f1 and ber the row's error */
			loss[i] = argmax(out + i * k, k) != (int)y[i];
			break;
		}
	}
	return 0;
}

double cfl_metric_loss_slope(enum cfl_metric_id id, double mean_loss,
			     const double *y, size_t n)
{
	double mean = 0, ss = 0;

	switch (id) {
	case CFL_M_ACC:
	case CFL_M_LOGLOSS:
	case CFL_M_MAE:
	case CFL_M_MSE:
		return 1;
	case CFL_M_RMSE:	/* d sqrt(m) = dm / (2 sqrt(m)) */
		return mean_loss > 0 ? 1 / (2 * sqrt(mean_loss)) : NAN;
	case CFL_M_R2:		/* 1 - m / (SS_tot / n) */
		for (size_t i = 0; i < n; i++)
			mean += y[i] / (double)n;
		for (size_t i = 0; i < n; i++)
			ss += (y[i] - mean) * (y[i] - mean);
		return ss > 0 ? (double)n / ss : NAN;
	default:
		return NAN;
	}
}

/* ---- scores ---- */

double cfl_metric_score(int sign, double mean, double std)
{
	return sign * mean - std;
}

/* The stats of the values, those that are NaN left out when skip_nan. */
static void summarise(const double *values, size_t n, int sign, int skip_nan,
		      struct cfl_metric_stats *out)
{
	double sum = 0, ss = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!skip_nan || !isnan(values[i])) {
			sum += values[i];
			k++;
		}
	out->n = k;
	if (!k) {
		out->mean = out->std = out->score = NAN;
		return;
	}
	out->mean = sum / (double)k;
	for (size_t i = 0; i < n; i++)
		if (!skip_nan || !isnan(values[i]))
			ss += (values[i] - out->mean) * (values[i] - out->mean);
	/* population std, as carefree-learn (np.std) */
	out->std = sqrt(ss / (double)k);
	out->score = cfl_metric_score(sign, out->mean, out->std);
}

void cfl_metric_stats(const double *values, size_t n, int sign,
		      struct cfl_metric_stats *out)
{
	summarise(values, n, sign, 0, out);
}

double cfl_metric_candidate_score(const double *values, size_t n, int sign)
{
	struct cfl_metric_stats st;

	summarise(values, n, sign, 1, &st);
	return isfinite(st.score) ? st.score : NAN;
}

long cfl_metric_best_score(const double *scores, size_t n)
{
	long best = -1;

	for (size_t i = 0; i < n; i++)
		if (!isnan(scores[i]) && (best < 0 || scores[i] > scores[best]))
			best = (long)i;
	return best;
}
