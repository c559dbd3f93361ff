/*
 * Ensembles from the store (cfl/study.h): reads the done trials'
 * predictions, groups the folds of one (model, repeat) into one member,
 * hands the arrays to src/ensemble (pure arithmetic) and stores what comes
 * back.  Test labels go in only to score the finished ensembles.  Prints
 * nothing: an ensemble skipped is a NOTE event for the caller.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cfl_study_check_ensembles(unsigned methods, int n_classes,
			      struct cfl_err *err)
{
	if ((methods & (1u << CFL_ENS_VOTE)) && n_classes == 0)
		return cfl_err_set(err, "ensemble 'vote' needs classification; "
					"this is a regression");
	return 0;
}

void study_members_release(struct study_members *ms)
{
	for (size_t i = 0; i < ms->n; i++) {
		free(ms->m[i].valid);
		free(ms->m[i].test);
		free(ms->m[i].oof);
		free(ms->m[i].ids);
		cfl_buf_release(&ms->m[i].trials);
	}
	free(ms->m);
	memset(ms, 0, sizeof(*ms));
}

/* Loads a trial's predictions on split into out (zeroed when none, and
 * when they have a shape other than (n, n_out): a row no check let in, or
 * an older cfl's, leaves its member out rather than failing the run). */
static int load(struct cfl_store *st, int64_t trial, enum cfl_store_split split,
		size_t n, size_t n_out, struct cfl_pred *out, struct cfl_err *err)
{
	int rc = cfl_store_predictions(st, trial, split, out, err);

	if (rc)
		return rc < 0 ? -1 : 0;
	if (out->n_out != n_out || (split != CFL_SPLIT_OOF && out->n != n) ||
	    (split != CFL_SPLIT_OOF && out->rows))
		cfl_pred_release(out);
	return 0;
}

/* Adds the done trials among [first, last) (one candidate and repeat, or
 * auto: one candidate's bag sets, each a repeat) as a member when each has
 * validation (when there is a validation part) and test predictions.
 * Folds are averaged; each set's OOF rows are put together, kept when they
 * cover every training row exactly once, and averaged over the sets (one
 * set: its rows as they are).  refit (auto: the done refit of a bag, or
 * NULL): its test predictions replace the folds' mean there, and it is
 * listed last among the member's trials. */
static int add_member(struct cfl_store *st, const struct cfl_data *d,
		      size_t n_out, const struct cfl_trial_info *tr,
		      size_t first, size_t last,
		      const struct cfl_trial_info *refit,
		      struct study_members *ms, struct cfl_err *err)
{
	size_t nv = d->valid.n, nt = d->test.n, ntr = d->train.n;
	size_t k = 0, n_oof = 0, n_sets = 0;
	int set = -1;
	struct study_member m;
	unsigned char *seen = NULL;
	int ok = 1, oof_ok = 1, rc = -1;

	memset(&m, 0, sizeof(m));
	cfl_buf_init(&m.trials);
	m.cand_id = tr[first].cand_id;
	if (!(m.valid = cfl_calloc(nv * n_out + 1, sizeof(double), err)) ||
	    !(m.test = cfl_calloc(nt * n_out + 1, sizeof(double), err)) ||
	    !(m.oof = cfl_calloc(ntr * n_out + 1, sizeof(double), err)) ||
	    !(seen = cfl_calloc(ntr + 1, 1, err)))
		goto out;
	for (size_t i = first; i < last; i++)
		k += tr[i].status == CFL_TRIAL_DONE;
	if (!k) {
		rc = 0;
		goto out;
	}
	for (size_t i = first; i < last; i++) {
		struct cfl_pred pv, pt, po;

		if (tr[i].status != CFL_TRIAL_DONE)
			continue;

		if (load(st, tr[i].id, CFL_SPLIT_VALID, nv, n_out, &pv, err) ||
		    load(st, tr[i].id, CFL_SPLIT_TEST, nt, n_out, &pt, err))
			goto out;
		/* no validation part (nothing needed one): no predictions
		 * on it either */
		if ((nv && !pv.values) || !pt.values)
			ok = 0;
		for (size_t j = 0; ok && j < nv * n_out; j++)
			m.valid[j] += pv.values[j] / (double)k;
		for (size_t j = 0; ok && j < nt * n_out; j++)
			m.test[j] += pt.values[j] / (double)k;
		cfl_pred_release(&pv);
		cfl_pred_release(&pt);
		if (cfl_buf_printf(&m.trials, "%s%lld", m.trials.len ? "+" : "",
				   (long long)tr[i].id))
			goto out;
		if (!m.ids && !(m.ids = cfl_calloc(last - first, sizeof(int64_t), err)))
			goto out;
		m.ids[m.n_ids++] = tr[i].id;
		if (tr[i].fold < 0)
			continue;
		if (tr[i].repeat != set) {	/* the next bag set */
			if (n_sets && n_oof != ntr)
				oof_ok = 0;
			set = tr[i].repeat;
			n_sets++;
			n_oof = 0;
			memset(seen, 0, ntr);
		}
		if (load(st, tr[i].id, CFL_SPLIT_OOF, 0, n_out, &po, err))
			goto out;
		for (size_t r = 0; r < po.n; r++) {
			size_t row = po.rows ? po.rows[r] : r;

			if (row >= ntr || seen[row]) {
				oof_ok = 0;	/* not a partition: unused */
				break;
			}
			seen[row] = 1;
			if (n_sets == 1)
				memcpy(m.oof + row * n_out, po.values + r * n_out,
				       n_out * sizeof(double));
			else
				for (size_t j = 0; j < n_out; j++)
					m.oof[row * n_out + j] += po.values[r * n_out + j];
			n_oof++;
		}
		cfl_pred_release(&po);
	}
	if (!oof_ok || n_oof != ntr || ntr == 0) {
		free(m.oof);
		m.oof = NULL;
	}
	m.n_sets = n_sets;
	/* the sets' mean: a row's R out-of-fold predictions, summed in set
	 * order, over R (one set: its own, bit for bit) */
	for (size_t j = 0; m.oof && n_sets > 1 && j < ntr * n_out; j++)
		m.oof[j] /= (double)n_sets;
	if (ok && refit) {
		struct cfl_pred pt;

		if (load(st, refit->id, CFL_SPLIT_TEST, nt, n_out, &pt, err))
			goto out;
		if (pt.values) {	/* else: the folds' mean, as without one */
			memcpy(m.test, pt.values, nt * n_out * sizeof(double));
			m.refit = refit->id;
			if (cfl_buf_printf(&m.trials, "+%lld", (long long)refit->id))
				ok = -1;
		}
		cfl_pred_release(&pt);
		if (ok < 0)
			goto out;
	}
	if (ok) {
		if (ms->n == ms->cap) {
			size_t cap = ms->cap ? 2 * ms->cap : 8;
			void *p = cfl_realloc(ms->m, cap * sizeof(*ms->m), err);

			if (!p)
				goto out;
			ms->m = p;
			ms->cap = cap;
		}
		ms->m[ms->n++] = m;
		memset(&m, 0, sizeof(m));
	}
	rc = 0;
out:
	free(m.valid);
	free(m.test);
	free(m.oof);
	free(m.ids);
	cfl_buf_release(&m.trials);
	free(seen);
	return rc;
}

/* bagged: only the fold trials of each (candidate, repeat), kept when
 * every fold finished (auto, whose search trials have no folds). */
int study_collect(struct cfl_store *st, int64_t run_id,
		  const struct cfl_data *d, size_t n_out, int bagged,
		   struct study_members *ms, struct cfl_err *err)
{
	struct cfl_trial_info *tr = NULL, *refits = NULL;
	size_t n_tr = 0, first = 0, n_refits = 0;
	int rc = 0;

	if (cfl_store_trials(st, run_id, &tr, &n_tr, err))
		return -1;
	if (bagged) {
		size_t n = 0;

		/* auto's refits (repeat 1, fold -1), kept apart: each goes
		 * with the bag of its candidate */
		if (!(refits = cfl_calloc(n_tr + 1, sizeof(*refits), err))) {
			cfl_trials_free(tr, n_tr);
			return -1;
		}
		for (size_t i = 0; i < n_tr; i++) {
			if (tr[i].fold < 0) {
				free(tr[i].error);
				tr[i].error = NULL;
				if (tr[i].repeat == 1 && tr[i].status == CFL_TRIAL_DONE)
					refits[n_refits++] = tr[i];
				continue;
			}
			tr[n++] = tr[i];
		}
		n_tr = n;
		/* a bag set (repeat r: its own fold partition) with a fold not
		 * done is left out of its bag; a bag without its set 0 whole
		 * is no member */
		for (size_t i = 0; i < n_tr;) {
			size_t j = i, n0 = 0;
			int all0 = 0;

			for (size_t e; j < n_tr && tr[j].cand_id == tr[i].cand_id; j = e) {
				size_t n = 0;
				int all = 1;

				for (e = j; e < n_tr && tr[e].cand_id == tr[i].cand_id &&
					    tr[e].repeat == tr[j].repeat; e++, n++)
					all &= tr[e].status == CFL_TRIAL_DONE;
				if (tr[j].repeat == 0) {
					n0 = n;
					all0 = all;
				}
				/* sets after 0 with all of set 0's folds */
				for (size_t k = j; (!all || !all0 || n != n0) && k < e; k++)
					tr[k].status = CFL_TRIAL_QUEUED;
			}
			i = j;
		}
	}
	/* Trials come ordered by (candidate, repeat, fold): a group is a run
	 * of equal (candidate, repeat), or (bagged) of one candidate, its
	 * bag sets together. */
	while (first < n_tr && rc == 0) {
		size_t last = first;
		const struct cfl_trial_info *refit = NULL;

		while (last < n_tr && tr[last].cand_id == tr[first].cand_id &&
		       (bagged || tr[last].repeat == tr[first].repeat))
			last++;
		for (size_t i = 0; i < n_refits && !refit; i++)
			if (refits[i].cand_id == tr[first].cand_id)
				refit = &refits[i];
		rc = add_member(st, d, n_out, tr, first, last, refit, ms, err);
		first = last;
	}
	cfl_trials_free(tr, n_tr);
	free(refits);
	return rc;
}

/* Appends "; coefs ..." for a stacking: per member (","-separated) the
 * meta-learner's coefficients on that member's inputs, so a report can
 * say how much each member counts.  A member's coefficients are one row
 * per class score ("/"-separated), each with one value per input column
 * of the member (" "-separated): one row for a regression or for two
 * classes (class 1's, as class 0's row is all zeros), all k rows for k >= 3
 * classes.  -1 on allocation failure. */
static int describe_coefs(const struct cfl_stacker *s, struct cfl_buf *b)
{
	const struct cfl_linear *lm = &s->meta;
	size_t m = s->n_members, cols = m ? lm->d / m : 0;
	size_t r0 = lm->n_out == 2 ? 1 : 0;

	if (!m || !cols || !lm->w)	/* not fitted: nothing to tell */
		return 0;
	if (cfl_buf_puts(b, "; coefs "))
		return -1;
	for (size_t j = 0; j < m; j++) {
		if (j && cfl_buf_puts(b, ","))
			return -1;
		for (size_t r = r0; r < lm->n_out; r++)
			for (size_t q = 0; q < cols; q++)
				if (cfl_buf_printf(b, "%s%.6g",
						   q ? " " : r > r0 ? "/" : "",
						   lm->w[r * lm->d + j * cols + q]))
					return -1;
	}
	return 0;
}

/* Stores ensemble method: its metrics and predictions on valid and test.
 * Its members text: "trials 1+2+3,4+5+6; " (one member per comma, its
 * fold trials joined by "+"), then cfl_ens_output_describe's text, then
 * for stacking describe_coefs'. */
static int store(struct cfl_store *st, int64_t run_id,
		 enum cfl_ensemble_method method, const char *name,
		 const char *method_name, const struct study_members *ms,
		 const struct cfl_ens_input *in, const struct cfl_ens_output *o,
		 const double *oof_metrics, double seconds, const char *about,
		 int64_t *ens_id, struct cfl_err *err)
{
	struct cfl_metric_value *mv;
	struct cfl_trial_result res;
	struct cfl_ensemble_info info;
	struct cfl_buf text;
	int rc = -1;

	mv = cfl_calloc(3 * in->n_metrics + 1, sizeof(*mv), err);
	if (!mv)
		return -1;
	cfl_buf_init(&text);
	if (cfl_buf_puts(&text, "trials "))
		goto out;
	for (size_t j = 0; j < ms->n; j++)
		if (cfl_buf_printf(&text, "%s%s", j ? "," : "", ms->m[j].trials.data))
			goto out;
	if (cfl_buf_puts(&text, "; ") ||
	    cfl_ens_output_describe(o, method, in->l2, &text) ||
	    (method == CFL_ENS_STACKING && describe_coefs(&o->stacker, &text)) ||
	    (about && cfl_buf_printf(&text, "; %s", about))) {
		cfl_err_set(err, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < in->n_metrics; k++) {
		const char *name = cfl_metric_info(in->metrics[k])->name;

		mv[k] = (struct cfl_metric_value){ name, o->valid_metrics[k] };
		mv[in->n_metrics + k] =
			(struct cfl_metric_value){ name, o->test_metrics[k] };
		if (oof_metrics)
			mv[2 * in->n_metrics + k] =
				(struct cfl_metric_value){ name, oof_metrics[k] };
	}
	memset(&res, 0, sizeof(res));
	res.duration = seconds;
	res.split[CFL_SPLIT_VALID] = (struct cfl_split_result){
		in->n_metrics, mv, in->n_valid, in->n_out, o->valid, NULL };
	res.split[CFL_SPLIT_TEST] = (struct cfl_split_result){
		in->n_metrics, mv + in->n_metrics, in->n_test, in->n_out, o->test,
		NULL };
	if (oof_metrics)	/* metrics only: the members' OOF rows are theirs */
		res.split[CFL_SPLIT_OOF] = (struct cfl_split_result){
			in->n_metrics, mv + 2 * in->n_metrics, 0, 0, NULL, NULL };
	info.name = name ? name : cfl_ensemble_method_name(method);
	info.method = method_name ? method_name : info.name;
	info.members = text.data;
	info.repeat = -1;
	rc = cfl_store_ensemble_add(st, run_id, &info, &res, ens_id, err) < 0 ? -1 : 0;
out:
	cfl_buf_release(&text);
	free(mv);
	return rc;
}

/* auto's scores on the out-of-fold predictions of every training row: the
 * members' OOF rows mixed with the ensemble's weights (a bag: its one
 * member's).  An undefined metric is NaN, and so is every metric when a
 * member lacks OOF predictions.  loss, when not NULL, gets the rows'
 * losses for the first metric (cfl_metric_row_losses), or NaN in loss[0]
 * when they cannot be computed.  -1 only on allocation failure. */
static int oof_scores(const struct cfl_ens_input *in, const double *weights,
		      double *out /* (n_metrics) */, double *loss /* (n_train) */,
		      struct cfl_err *err)
{
	const double **po = NULL;
	double *mix = NULL;
	double one = 1.0;
	int rc = -1;

	if (!(po = cfl_calloc(in->n_members + 1, sizeof(*po), err)) ||
	    !(mix = cfl_calloc(in->n_train * in->n_out + 1, sizeof(*mix), err)))
		goto out;
	for (size_t j = 0; j < in->n_members; j++) {
		if (!in->members[j].oof) {	/* nothing to score */
			for (size_t k = 0; k < in->n_metrics; k++)
				out[k] = NAN;
			if (loss)
				loss[0] = NAN;
			rc = 0;
			goto out;
		}
		po[j] = in->members[j].oof;
	}
	if (cfl_ensemble_weighted(po, weights ? weights : &one, in->n_members,
				  in->n_train, in->n_out, mix, err))
		goto out;
	for (size_t k = 0; k < in->n_metrics; k++) {
		struct cfl_err why;

		if (cfl_metric_eval(in->metrics[k], in->y_train, mix, in->n_train,
				    in->n_classes, &out[k], &why))
			out[k] = NAN;
	}
	if (loss && in->n_metrics) {
		struct cfl_err why;

		if (cfl_metric_row_losses(in->metrics[0], in->y_train, mix, in->n_train,
					  in->n_classes, loss, &why))
			loss[0] = NAN;
	}
	rc = 0;
out:
	free(po);
	free(mix);
	return rc;
}

/* "MODEL:HEX" of candidate cand_id of the run: a bag's row name. */
static int bag_name(struct cfl_store *st, int64_t run_id, int64_t cand_id,
		    char *out, size_t cap, struct cfl_err *err)
{
	struct cfl_candidate_info *c = NULL;
	size_t n = 0;

	if (cfl_store_candidates(st, run_id, &c, &n, err))
		return -1;
	snprintf(out, cap, "bag %lld", (long long)cand_id);
	for (size_t i = 0; i < n; i++)
		if (c[i].id == cand_id)
			snprintf(out, cap, "%s:%s", c[i].model, c[i].hex);
	cfl_candidates_free(c, n);
	return 0;
}

/* Tells the listener, if any, text as a NOTE. */
static void note(const struct cfl_study_listener *ls, const char *text)
{
	struct cfl_study_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CFL_STUDY_NOTE;
	ev.text = text;
	cfl_study_emit(ls, &ev);
}

/* Tells the listener, if any, that an ensemble was skipped and why. */
static void note_skipped(const struct cfl_study_listener *ls, const char *why)
{
	char text[sizeof(((struct cfl_err *)0)->msg) + 16];

	snprintf(text, sizeof(text), "%s; skipped", why);
	note(ls, text);
}

void study_ens_input(const struct cfl_data *d, const struct study_members *ms,
		     struct cfl_ens_member *em, const enum cfl_metric_id *metrics,
		     size_t n_metrics, struct cfl_ens_input *in)
{
	int n_classes = d->train.n_classes;	/* valid may have no rows */

	for (size_t j = 0; j < ms->n; j++)
		em[j] = (struct cfl_ens_member){ ms->m[j].valid, ms->m[j].test,
						 ms->m[j].oof };
	memset(in, 0, sizeof(*in));
	in->n_members = ms->n;
	in->members = em;
	in->n_out = n_classes > 0 ? (size_t)n_classes : 1;
	in->n_classes = n_classes;
	in->n_valid = d->valid.n;
	in->n_test = d->test.n;
	in->n_train = d->train.n;
	in->y_valid = d->valid.y;
	in->y_test = d->test.y;
	in->y_train = d->train.y;
	in->n_metrics = n_metrics;
	in->metrics = metrics;
	in->l2 = CFL_ENS_DEFAULT_L2;
	in->greedy_rounds = CFL_ENS_DEFAULT_GREEDY_ROUNDS;
}

/* cfl_study_ensembles; with min_members 2 (the default list) nothing is
 * built for a single member, and stacking only on out-of-fold
 * predictions. */
static int build_all(struct cfl_store *st, int64_t run_id,
		     const struct cfl_data *d, const enum cfl_metric_id *metrics,
		     size_t n_metrics, unsigned methods, size_t min_members,
		     const struct cfl_study_listener *ls, struct cfl_err *err)
{
	int n_classes = d->train.n_classes;	/* valid may have no rows */
	size_t n_out = n_classes > 0 ? (size_t)n_classes : 1;
	struct study_members ms = { 0 };
	struct cfl_ens_member *em = NULL;
	struct cfl_ens_input in;
	int rc = -1;

	if (!methods)
		return 0;
	if (n_metrics > CFL_M_COUNT)
		return cfl_err_set(err, "%zu metrics: too many", n_metrics);
	if (study_collect(st, run_id, d, n_out, 0, &ms, err))
		goto out;
	if (ms.n < min_members) {
		rc = 0;
		goto out;
	}
	/* the default list stacks only on out-of-fold predictions */
	for (size_t j = 0; min_members > 1 && j < ms.n; j++)
		if (!ms.m[j].oof)
			methods &= ~(1u << CFL_ENS_STACKING);
	if (!(em = cfl_calloc(ms.n + 1, sizeof(*em), err)))
		goto out;
	study_ens_input(d, &ms, em, metrics, n_metrics, &in);
	for (int m = 0; m < CFL_ENS_COUNT; m++) {
		struct cfl_ens_output o;
		struct cfl_err why;
		double t0 = cfl_now();

		if (!(methods & (1u << m)))
			continue;
		if (cfl_ensemble_build(m, &in, &o, &why)) {
			note_skipped(ls, why.msg);
			continue;
		}
		if (store(st, run_id, m, NULL, NULL, &ms, &in, &o, NULL,
			  cfl_now() - t0, NULL, NULL, err)) {
			cfl_ens_output_release(&o);
			goto out;
		}
		cfl_ens_output_release(&o);
	}
	rc = 0;
out:
	free(em);
	study_members_release(&ms);
	return rc;
}

#define AUTO_GREEDY_MAX_BAGS STUDY_AUTO_MAX_BAGS

/* The model family of candidate cand_id, an index into cands. */
static size_t family_of(const struct cfl_candidate_info *cands, size_t n_cands,
			int64_t cand_id)
{
	for (size_t i = 0; i < n_cands; i++)
		if (cands[i].id == cand_id)
			for (size_t j = 0; j <= i; j++)
				if (!strcmp(cands[j].model, cands[i].model))
					return j;
	return n_cands;
}

/* auto's ranking of the bags ms: key[j] each bag's proper score out of
 * fold, signed (higher better; -INFINITY: not to be chosen), and fam
 * (*n_fam) each family's best bag, in the order of the families' first.
 * 0, or -1 with err. */
static int rank_bags(const struct study_members *ms, const struct cfl_data *d,
		     enum cfl_metric_id proper,
		     const struct cfl_candidate_info *cands, size_t n_cands,
		     double *key, size_t *fam, size_t *n_fam, struct cfl_err *err)
{
	int n_classes = d->train.n_classes;
	size_t *sets;

	*n_fam = 0;
	/* each bag's proper score out of fold, signed: higher is better */
	for (size_t j = 0; j < ms->n; j++) {
		struct cfl_err why;
		double v = NAN;

		if (!ms->m[j].oof ||
		    cfl_metric_eval(proper, d->train.y, ms->m[j].oof, d->train.n,
				    n_classes, &v, &why) || !isfinite(v))
			key[j] = -INFINITY;
		else
			key[j] = cfl_metric_info(proper)->sign * v;
	}
	/* bags with more than one set (bag_pool's in auto.c) were chosen to
	 * be compared with each other on their sets' averaged predictions:
	 * the family's bags of one set, scored on one partition's luck, are
	 * left out of the choice (a set the time limit stopped half way
	 * leaves some bags with a set fewer than others: they stay) */
	if (!(sets = cfl_calloc(n_cands + 1, sizeof(*sets), err)))
		return -1;
	for (size_t j = 0; j < ms->n; j++) {
		size_t f = family_of(cands, n_cands, ms->m[j].cand_id);

		if (key[j] != -INFINITY && ms->m[j].n_sets > sets[f])
			sets[f] = ms->m[j].n_sets;
	}
	for (size_t j = 0; j < ms->n; j++)
		if (ms->m[j].n_sets < 2 &&
		    sets[family_of(cands, n_cands, ms->m[j].cand_id)] >= 2)
			key[j] = -INFINITY;
	/* each family's best bag, in the order of the families' first */
	for (size_t j = 0; j < ms->n; j++) {
		size_t f = family_of(cands, n_cands, ms->m[j].cand_id), i;

		for (i = 0; i < *n_fam; i++)
			if (family_of(cands, n_cands, ms->m[fam[i]].cand_id) == f)
				break;
		if (i == *n_fam)
			fam[(*n_fam)++] = j;
		else if (key[j] > key[fam[i]])
			fam[i] = j;
	}
	free(sets);
	return 0;
}

int study_auto_best_bags(struct cfl_store *st, int64_t run_id,
			 const struct cfl_data *d, enum cfl_metric_id proper,
			 int64_t *best, size_t cap, size_t *n, struct cfl_err *err)
{
	size_t n_out = d->train.n_classes > 0 ? (size_t)d->train.n_classes : 1;
	struct study_members ms = { 0 };
	struct cfl_candidate_info *cands = NULL;
	size_t n_cands = 0, n_fam = 0, *fam = NULL;
	double *key = NULL;
	int rc = -1;

	*n = 0;
	if (study_collect(st, run_id, d, n_out, 1, &ms, err) ||
	    cfl_store_candidates(st, run_id, &cands, &n_cands, err) ||
	    !(key = cfl_calloc(ms.n + 1, sizeof(*key), err)) ||
	    !(fam = cfl_calloc(ms.n + 1, sizeof(*fam), err)) ||
	    rank_bags(&ms, d, proper, cands, n_cands, key, fam, &n_fam, err))
		goto out;
	for (size_t i = 0; i < n_fam && *n < cap; i++)
		best[(*n)++] = ms.m[fam[i]].cand_id;
	rc = 0;
out:
	free(key);
	free(fam);
	cfl_candidates_free(cands, n_cands);
	study_members_release(&ms);
	return rc;
}

size_t study_greedy_rounds(const char *members, size_t rounds)
{
	const char *at;
	size_t r = 0;

	if (((at = strstr(members, "; " STUDY_GREEDY_BEST)) &&
	     sscanf(at + 2 + strlen(STUDY_GREEDY_BEST), "%zu of", &r) == 1) ||
	    ((at = strstr(members, "; " STUDY_GREEDY_CUT)) &&
	     sscanf(at + 2 + strlen(STUDY_GREEDY_CUT), "%zu of", &r) == 1))
		return r > 0 && r < rounds ? r : rounds;
	return rounds;
}

int study_greedy_build(struct cfl_ens_input *in, struct cfl_ens_member *em,
		       size_t *keep, struct cfl_ens_output *o, char *cut, char *best,
		       size_t cap, struct cfl_err *why)
{
	size_t n = in->n_members, k = 0;

	*cut = *best = 0;
	in->members = em;
	if (cfl_ensemble_build(CFL_ENS_GREEDY, in, o, why))
		return 1;
	if (o->rounds < in->greedy_rounds)
		snprintf(cut, cap, STUDY_GREEDY_CUT "%zu of %zu rounds", o->rounds,
			 in->greedy_rounds);
	if (o->best_round < o->rounds)
		snprintf(best, cap, STUDY_GREEDY_BEST "%zu of %zu", o->best_round,
			 in->greedy_rounds);
	/* built again over the members it picked up to its best round,
	 * with that many rounds and no deadline: the picks among them, in
	 * their order, are the same, so are the weights.  (With all its
	 * rounds, the picks after the best one, among fewer members, could
	 * go another way, to another best.) */
	in->greedy_rounds = o->best_round;
	in->deadline = 0;
	for (size_t j = 0; j < n; j++)
		if (o->weights[j] > 0) {
			keep[k] = j;
			em[k++] = em[j];
		}
	if (k == n)
		return 0;
	cfl_ens_output_release(o);
	in->n_members = k;
	return cfl_ensemble_build(CFL_ENS_GREEDY, in, o, why) ? 1 : 0;
}

/* Builds and stores one ensemble (method) over the members sel[0..n) of ms,
 * scored out of fold too; greedy as study_greedy_build, its members text
 * saying why it was cut (in a note too) and at which round its weights
 * are, which the bundle builds it again with.  Skipped with a NOTE when it
 * cannot be built.  0, or -1 with err. */
static int build_auto_one(struct cfl_store *st, int64_t run_id,
			  enum cfl_ensemble_method method, const char *name,
			  const char *kind, const struct study_members *ms,
			  const size_t *sel, size_t n, const struct cfl_ens_input *all,
			  const struct cfl_ens_member *em_all,
			  const struct cfl_study_listener *ls, struct cfl_err *err)
{
	struct study_members sub = { n, n, NULL };
	struct cfl_ens_member *em = NULL;
	struct cfl_ens_input in = *all;
	struct cfl_ens_output o;
	struct cfl_err why;
	double oof[CFL_M_COUNT + 1], t0 = cfl_now();
	char about[80] = "", best[80] = "", text[168];
	int rc = -1;

	if (method != CFL_ENS_GREEDY)
		in.deadline = 0;
	if (!(sub.m = cfl_calloc(n + 1, sizeof(*sub.m), err)) ||
	    !(em = cfl_calloc(n + 1, sizeof(*em), err)))
		goto out;
	for (size_t j = 0; j < n; j++) {
		sub.m[j] = ms->m[sel[j]];	/* shallow: ms owns them */
		em[j] = em_all[sel[j]];
	}
	in.n_members = n;
	in.members = em;
	if (method == CFL_ENS_GREEDY) {
		/* greedy keeps only the bags it picked, so its row, its
		 * trials and its bundle hold no bag it gives no weight */
		size_t *keep = cfl_calloc(n + 1, sizeof(*keep), err);

		if (!keep)
			goto out;
		if (study_greedy_build(&in, em, keep, &o, about, best, sizeof(best), &why)) {
			free(keep);
			note_skipped(ls, why.msg);
			rc = 0;
			goto out;
		}
		for (size_t k = 0; k < in.n_members; k++)
			sub.m[k] = sub.m[keep[k]];
		sub.n = in.n_members;
		free(keep);
	} else if (cfl_ensemble_build(method, &in, &o, &why)) {
		note_skipped(ls, why.msg);
		rc = 0;
		goto out;
	}
	if (*about) {
		snprintf(text, sizeof(text), "%s: %s", cfl_ensemble_method_name(method),
			 about);
		note(ls, text);
	}
	snprintf(text, sizeof(text), "%s%s%s", about, *about && *best ? "; " : "", best);
	rc = oof_scores(&in, o.weights, oof, NULL, err) ||
	     store(st, run_id, method, name, kind, &sub, &in, &o, oof,
		   kind ? 0 : cfl_now() - t0, *text ? text : NULL, NULL, err) ? -1 : 0;
	cfl_ens_output_release(&o);
out:
	free(sub.m);
	free(em);
	return rc;
}

/* auto's entries over its bags (every candidate whose folds all
 * finished), each scored out of fold with the run's metrics and, for
 * classification, log loss, the proper score the leaderboard ranks by:
 * a "MODEL:HEX" bag row for each family's best bag (by the proper score
 * out of fold; the first on ties), `mean` and `stacking` of those, and
 * `greedy`, Caruana's ensemble selection with replacement by the proper
 * score over every bag (the AUTO_GREEDY_MAX_BAGS best). */
static int build_auto(struct cfl_store *st, int64_t run_id,
		      const struct cfl_data *d, const enum cfl_metric_id *metrics,
		      size_t n_metrics, double deadline,
		      const struct cfl_study_listener *ls, struct cfl_err *err)
{
	int n_classes = d->train.n_classes;
	size_t n_out = n_classes > 0 ? (size_t)n_classes : 1;
	struct study_members ms = { 0 };
	struct cfl_ens_member *em = NULL;
	struct cfl_ens_input in;
	struct cfl_candidate_info *cands = NULL;
	size_t n_cands = 0, n_fam = 0, n_all = 0, *fam = NULL, *all = NULL;
	enum cfl_metric_id mets[CFL_M_COUNT + 1], proper;
	size_t n_mets = 0;
	double *key = NULL, t0 = cfl_now(), t_bag = 0, t_greedy = 0;
	int rc = -1, have = 0, refits = 0;
	char skipped[64] = "";

	if (n_metrics > CFL_M_COUNT)
		return cfl_err_set(err, "%zu metrics: too many", n_metrics);
	for (size_t k = 0; k < n_metrics; k++) {
		mets[n_mets++] = metrics[k];
		have |= metrics[k] == CFL_M_LOGLOSS;
	}
	if (n_classes > 0 && !have)
		mets[n_mets++] = CFL_M_LOGLOSS;
	proper = n_classes > 0 ? CFL_M_LOGLOSS : metrics[0];
	if (study_collect(st, run_id, d, n_out, 1, &ms, err) ||
	    cfl_store_candidates(st, run_id, &cands, &n_cands, err))
		goto out;
	if (!ms.n) {
		rc = 0;
		goto out;
	}
	if (!(em = cfl_calloc(ms.n + 1, sizeof(*em), err)) ||
	    !(key = cfl_calloc(ms.n + 1, sizeof(*key), err)) ||
	    !(fam = cfl_calloc(ms.n + 1, sizeof(*fam), err)) ||
	    !(all = cfl_calloc(ms.n + 1, sizeof(*all), err)))
		goto out;
	study_ens_input(d, &ms, em, mets, n_mets, &in);
	in.select_on_oof = 1;
	in.select_metric = &proper;
	if (rank_bags(&ms, d, proper, cands, n_cands, key, fam, &n_fam, err))
		goto out;
	/* a bag with more than one set is scored on their mean: so is its
	 * candidate in the search table */
	for (size_t j = 0; j < ms.n; j++)
		if (ms.m[j].n_sets > 1 && key[j] != -INFINITY &&
		    cfl_store_candidate_set_score(st, ms.m[j].cand_id, key[j], err))
			goto out;
	for (size_t i = 0; i < n_fam; i++) {
		char name[96];
		double t = cfl_now();

		if (bag_name(st, run_id, ms.m[fam[i]].cand_id, name, sizeof(name), err) ||
		    build_auto_one(st, run_id, CFL_ENS_MEAN, name, "bag", &ms, &fam[i], 1,
				   &in, em, ls, err))
			goto out;
		if (cfl_now() - t > t_bag)
			t_bag = cfl_now() - t;
	}
	/* without a deadline mean and stacking come before greedy (as they
	 * always did: a count budget's run stays the same, ids and all) */
	if (!(deadline > 0) && n_fam >= 2 &&
	    (build_auto_one(st, run_id, CFL_ENS_MEAN, NULL, NULL, &ms, fam, n_fam, &in,
			    em, ls, err) ||
	     build_auto_one(st, run_id, CFL_ENS_STACKING, NULL, NULL, &ms, fam, n_fam,
			    &in, em, ls, err)))
		goto out;
	/* greedy: the best bags with out-of-fold predictions, best first
	 * (a stable insertion sort: the earlier candidate on ties); with
	 * --refit only those refitted (each family's best), so that every
	 * bag of the bundle predicts with one model */
	for (size_t j = 0; j < ms.n; j++)
		refits |= ms.m[j].refit != 0;
	for (size_t j = 0; j < ms.n; j++) {
		size_t i = n_all;

		if (key[j] == -INFINITY || (refits && !ms.m[j].refit))
			continue;
		while (i > 0 && key[all[i - 1]] < key[j]) {
			if (i < AUTO_GREEDY_MAX_BAGS)
				all[i] = all[i - 1];
			i--;
		}
		if (i < AUTO_GREEDY_MAX_BAGS)
			all[i] = j;
		if (n_all < AUTO_GREEDY_MAX_BAGS)
			n_all++;
	}
	in.deadline = deadline;
	t_greedy = cfl_now();
	if (n_all >= 2 &&
	    build_auto_one(st, run_id, CFL_ENS_GREEDY, NULL, NULL, &ms, all, n_all, &in,
			   em, ls, err))
		goto out;
	t_greedy = cfl_now() - t_greedy;
	/* with a deadline greedy (the first entry) came first; stacking (an
	 * iterative fit on as many rows as greedy's) and mean (a bag's work
	 * over more members) follow when what they took there still fits */
	if (deadline > 0 && n_fam >= 2) {
		if (cfl_now() + t_greedy <= deadline) {
			if (build_auto_one(st, run_id, CFL_ENS_STACKING, NULL, NULL, &ms, fam,
					   n_fam, &in, em, ls, err))
				goto out;
		} else {
			snprintf(skipped, sizeof(skipped), "stacking");
		}
		if (cfl_now() + 2 * t_bag <= deadline) {
			if (build_auto_one(st, run_id, CFL_ENS_MEAN, NULL, NULL, &ms, fam,
					   n_fam, &in, em, ls, err))
				goto out;
		} else {
			snprintf(skipped + strlen(skipped), sizeof(skipped) - strlen(skipped),
				 "%smean", *skipped ? ", " : "");
		}
	}
	if (deadline > 0) {
		char text[192];
		double now = cfl_now();

		/* within 80 columns after "cfl: " */
		snprintf(text, sizeof(text), "the ensembles took %.1f s, %.1f s %s the "
			 "limit%s%s%s", now - t0, fabs(deadline - now),
			 now <= deadline ? "before" : "past", *skipped ? "; " : "",
			 skipped, *skipped ? " left out" : "");
		note(ls, text);
	}
	rc = 0;
out:
	free(em);
	free(key);
	free(fam);
	free(all);
	cfl_candidates_free(cands, n_cands);
	study_members_release(&ms);
	return rc;
}

int cfl_study_ensembles(struct cfl_store *st, int64_t run_id,
			const struct cfl_data *d,
			const enum cfl_metric_id *metrics, size_t n_metrics,
			unsigned methods, const struct cfl_study_listener *ls,
			struct cfl_err *err)
{
	return build_all(st, run_id, d, metrics, n_metrics, methods, 1, ls, err);
}

int cfl_study_auto_ensembles(struct cfl_store *st, int64_t run_id,
			     const struct cfl_data *d,
			     const enum cfl_metric_id *metrics, size_t n_metrics,
			     double deadline, const struct cfl_study_listener *ls,
			     struct cfl_err *err)
{
	return build_auto(st, run_id, d, metrics, n_metrics, deadline, ls, err);
}

/* The metrics of the run's trials on test, in the order results listed
 * them (those of its first done trial). */
long study_run_metrics(struct cfl_store *st, int64_t run_id,
			enum cfl_metric_id *out, size_t cap,
			struct cfl_err *err)
{
	struct cfl_metric_row *rows;
	size_t n_rows, n = 0;

	if (cfl_store_run_metrics(st, run_id, CFL_SPLIT_TEST, &rows, &n_rows, err))
		return -1;
	for (size_t i = 0; i < n_rows && n < cap; i++) {
		int id;

		if (!rows[i].trial_id || rows[i].trial_id != rows[0].trial_id)
			break;
		if ((id = cfl_metric_lookup(rows[i].metric)) < 0) {
			free(rows);
			return cfl_err_set(err, "run %lld: unknown metric '%s'",
					   (long long)run_id, rows[i].metric);
		}
		out[n++] = id;
	}
	free(rows);
	return (long)n;
}

int cfl_study_ensembles_for_run(struct cfl_store *st, int64_t run_id,
				const struct cfl_data *data, const char *methods,
				const struct cfl_study_listener *ls,
				struct cfl_err *err)
{
	enum cfl_metric_id metrics[CFL_M_COUNT];
	unsigned mask;
	long n_metrics;

	if (cfl_ensemble_parse_list(methods ? methods : CFL_STUDY_ENSEMBLE_DEFAULT,
				    &mask, err) ||
	    cfl_study_check_ensembles(mask, data->train.n_classes, err))
		return -1;
	if (!mask)
		return 0;
	n_metrics = study_run_metrics(st, run_id, metrics, CFL_M_COUNT, err);
	if (n_metrics < 0)
		return -1;
	if (n_metrics == 0)	/* no trial finished: nothing to combine */
		return 0;
	return build_all(st, run_id, data, metrics, (size_t)n_metrics, mask,
			 methods ? 1 : 2, ls, err);
}
