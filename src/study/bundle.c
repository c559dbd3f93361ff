/*
 * Bundles from the store, and their rows applied to data (cfl/bundle.h).
 * Building: every done trial's kept model with the run's encoder put back,
 * a row per model (its repeats' mean), per model repeat, per stored
 * ensemble (auto: the fold models of its finished bags, a row per bag and
 * per ensemble of the bags: its leaderboard).  The ensembles are fitted again from the stored predictions
 * (the same members, labels and code as the run) and must give the stored
 * predictions bit for bit: the weights the bundle keeps are then exactly
 * the run's, never a rounded copy of the members text.  Applying: each
 * member's models predict, folds are summed as p / k in order, and the row
 * combines its members with the ensemble module's own arithmetic.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/bundle.h"
#include "cfl/model.h"

/* ---- bundle: building ---- */

static char *dup_or_null(const char *s, struct cfl_err *err)
{
	return cfl_strdup(s ? s : "", err);
}

static struct cfl_bundle_row *add_row(struct cfl_bundle *b, size_t *cap,
				      const char *name, const char *kind,
				      enum cfl_bundle_method method,
				      struct cfl_err *err)
{
	struct cfl_bundle_row *r;

	for (size_t i = 0; i < b->n_rows; i++)
		if (!strcmp(b->rows[i].name, name)) {
			cfl_err_set(err, "two rows named '%s'", name);
			return NULL;
		}
	if (b->n_rows == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		void *p = cfl_realloc(b->rows, nc * sizeof(*b->rows), err);

		if (!p)
			return NULL;
		b->rows = p;
		*cap = nc;
	}
	r = &b->rows[b->n_rows];
	memset(r, 0, sizeof(*r));
	if (!(r->name = cfl_strdup(name, err)) || !(r->kind = cfl_strdup(kind, err))) {
		free(r->name);
		return NULL;
	}
	r->method = method;
	b->n_rows++;
	return r;
}

static struct cfl_bundle_member *add_member(struct cfl_bundle_row *r,
					    size_t n_models, struct cfl_err *err)
{
	struct cfl_bundle_member *m;
	void *p = cfl_realloc(r->members, (r->n_members + 1) * sizeof(*m), err);

	if (!p)
		return NULL;
	r->members = p;
	m = &r->members[r->n_members];
	memset(m, 0, sizeof(*m));
	m->weight = NAN;
	if (!(m->models = cfl_calloc(n_models ? n_models : 1, sizeof(size_t), err)))
		return NULL;
	r->n_members++;
	return m;
}

/* The model index of trial id, or -1. */
static long model_of(const struct cfl_bundle *b, int64_t id)
{
	for (size_t i = 0; i < b->n_models; i++)
		if (b->models[i].trial == id)
			return (long)i;
	return -1;
}

/* Scores of a row over trials ids: per split and metric, the mean and
 * population std of the trials' values (NaN ones left out). */
static int trial_scores(struct cfl_bundle_row *r, const int64_t *ids, size_t n_ids,
			const struct cfl_metric_row *const rows[2],
			const size_t n_rows[2], const enum cfl_metric_id *metrics,
			size_t n_metrics, struct cfl_err *err)
{
	static const char *const split_names[2] = { "valid", "test" };

	if (!(r->scores = cfl_calloc(2 * n_metrics + 1, sizeof(*r->scores), err)))
		return -1;
	for (int sp = 0; sp < 2; sp++)
		for (size_t k = 0; k < n_metrics; k++) {
			const char *name = cfl_metric_info(metrics[k])->name;
			double sum = 0, sq = 0, mean;
			size_t n = 0;
			struct cfl_bundle_score *sc;

			for (size_t i = 0; i < n_rows[sp]; i++) {
				const struct cfl_metric_row *m = &rows[sp][i];
				int hit = 0;

				for (size_t j = 0; j < n_ids && !hit; j++)
					hit = m->trial_id == ids[j];
				if (!hit || strcmp(m->metric, name) || isnan(m->value))
					continue;
				sum += m->value;
				n++;
			}
			if (!n)
				continue;
			mean = sum / (double)n;
			for (size_t i = 0; i < n_rows[sp]; i++) {
				const struct cfl_metric_row *m = &rows[sp][i];
				int hit = 0;

				for (size_t j = 0; j < n_ids && !hit; j++)
					hit = m->trial_id == ids[j];
				if (hit && !strcmp(m->metric, name) && !isnan(m->value))
					sq += (m->value - mean) * (m->value - mean);
			}
			sc = &r->scores[r->n_scores++];
			snprintf(sc->split, sizeof(sc->split), "%s", split_names[sp]);
			snprintf(sc->metric, sizeof(sc->metric), "%s", name);
			sc->value = mean;
			sc->std = sqrt(sq / (double)n);
		}
	return 0;
}

/* An ensemble's stored scores on valid, test and (auto) oof. */
static int ensemble_scores(struct cfl_bundle_row *r, int64_t ens_id,
			   const struct cfl_metric_row *const rows[3],
			   const size_t n_rows[3], struct cfl_err *err)
{
	static const char *const split_names[3] = { "valid", "test", "oof" };
	size_t n = 0;

	for (int sp = 0; sp < 3; sp++)
		for (size_t i = 0; i < n_rows[sp]; i++)
			n += rows[sp][i].ensemble_id == ens_id;
	if (!(r->scores = cfl_calloc(n + 1, sizeof(*r->scores), err)))
		return -1;
	for (int sp = 0; sp < 3; sp++)
		for (size_t i = 0; i < n_rows[sp]; i++) {
			struct cfl_bundle_score *sc;

			if (rows[sp][i].ensemble_id != ens_id)
				continue;
			sc = &r->scores[r->n_scores++];
			snprintf(sc->split, sizeof(sc->split), "%s", split_names[sp]);
			snprintf(sc->metric, sizeof(sc->metric), "%s", rows[sp][i].metric);
			sc->value = rows[sp][i].value;
			sc->std = 0;
		}
	return 0;
}

/* Whether a and b (n doubles each) are the same bits. */
static int same_bits(const double *a, const double *b, size_t n)
{
	return n == 0 || memcmp(a, b, n * sizeof(double)) == 0;
}

/* The members of ms that a stored members text ("trials 12+13+14,15+16;
 * ...") lists, in its order, into sel (ms->n + 1 entries): their count, or
 * 0 when one of them is not in ms (or the text lists none). */
static size_t text_members(const struct study_members *ms, const char *text,
			   size_t *sel)
{
	size_t n = 0;

	if (strncmp(text, "trials ", 7))
		return 0;
	text += 7;
	while (*text && *text != ';' && n < ms->n) {
		size_t len = strcspn(text, ",;"), j;

		for (j = 0; j < ms->n; j++)
			if (ms->m[j].trials.len == len &&
			    !memcmp(ms->m[j].trials.data, text, len))
				break;
		if (j == ms->n)
			return 0;
		sel[n++] = j;
		text += len;
		if (*text == ',')
			text++;
	}
	return n;
}

/* The stored ensembles as rows: each fitted again on the collected members
 * and checked against its stored predictions.  bagged (auto): the members
 * are the bags whose folds all finished, and an ensemble of method "bag"
 * is the mean of the one bag its members text names (a row of kind
 * "bag"), as cfl_study_auto_ensembles built it. */
static int ensemble_rows(struct cfl_store *st, int64_t run_id,
			 const struct cfl_data *d, struct cfl_bundle *b,
			 size_t *cap, const enum cfl_metric_id *metrics,
			 size_t n_metrics, int bagged,
			 const struct cfl_metric_row *const rows[3],
			 const size_t n_rows[3], struct cfl_err *err)
{
	struct cfl_ensemble_row *ens = NULL;
	size_t n_ens = 0, n_out = d->train.n_classes > 0 ? (size_t)d->train.n_classes : 1;
	struct study_members ms = { 0 };
	struct cfl_ens_member *em = NULL, *sub_em = NULL;
	struct cfl_ens_input in;
	size_t *sel = NULL;
	/* auto's greedy selects by the proper score (cfl_study_auto_ensembles) */
	enum cfl_metric_id proper = d->train.n_classes > 0 ? CFL_M_LOGLOSS
				    : n_metrics ? metrics[0] : CFL_M_MSE;
	int rc = -1;

	if (cfl_store_ensembles(st, run_id, &ens, &n_ens, err))
		return -1;
	if (!n_ens) {
		rc = 0;
		goto out;
	}
	if (study_collect(st, run_id, d, n_out, bagged, &ms, err) ||
	    !(em = cfl_calloc(ms.n + 1, sizeof(*em), err)) ||
	    !(sub_em = cfl_calloc(ms.n + 1, sizeof(*sub_em), err)) ||
	    !(sel = cfl_calloc(ms.n + 1, sizeof(*sel), err)))
		goto out;
	study_ens_input(d, &ms, em, metrics, n_metrics, &in);
	in.select_on_oof = bagged;
	if (bagged)
		in.select_metric = &proper;
	for (size_t e = 0; e < n_ens; e++) {
		int bag = bagged && !strcmp(ens[e].method, "bag");
		int method = bag ? CFL_ENS_MEAN : cfl_ensemble_method_lookup(ens[e].method);
		struct cfl_ens_input sub = in;
		struct cfl_ens_output o;
		struct cfl_pred pv, pt;
		struct cfl_bundle_row *r;
		size_t n_sel = ms.n;
		int same, skip = 0;

		if (method < 0 || ens[e].repeat != -1) {
			cfl_err_set(err, "ensemble '%s': method '%s' is not one this cfl "
				    "can put in a bundle", ens[e].name, ens[e].method);
			goto out;
		}
		for (size_t j = 0; j < ms.n; j++)
			sel[j] = j;
		if (bagged) {	/* the bags its members text lists */
			n_sel = text_members(&ms, ens[e].members, sel);
			if (!n_sel || (bag && n_sel != 1)) {
				cfl_err_set(err, "%s '%s': a bag's folds are not all done "
					    "with their predictions", bag ? "bag" : "ensemble",
					    ens[e].name);
				goto out;
			}
			for (size_t j = 0; j < n_sel; j++)
				sub_em[j] = em[sel[j]];
			sub.n_members = n_sel;
			sub.members = sub_em;
		}
		if (method == CFL_ENS_GREEDY)
			sub.greedy_rounds = study_greedy_rounds(ens[e].members,
								sub.greedy_rounds);
		if (cfl_ensemble_build(method, &sub, &o, err))
			goto out;
		memset(&pv, 0, sizeof(pv));
		memset(&pt, 0, sizeof(pt));
		if (cfl_store_ensemble_predictions(st, ens[e].id, CFL_SPLIT_VALID, &pv, err) < 0 ||
		    cfl_store_ensemble_predictions(st, ens[e].id, CFL_SPLIT_TEST, &pt, err) < 0) {
			cfl_ens_output_release(&o);
			goto out;
		}
		same = pv.n == sub.n_valid && pt.n == sub.n_test &&
		       (!pv.n || pv.n_out == n_out) && pt.n_out == n_out &&
		       same_bits(pv.values, o.valid, pv.n * n_out) &&
		       same_bits(pt.values, o.test, pt.n * n_out);
		cfl_pred_release(&pv);
		cfl_pred_release(&pt);
		if (!same) {
			cfl_ens_output_release(&o);
			cfl_err_set(err, "ensemble '%s' does not come out as stored when "
				    "fitted again (was the run's data changed?)",
				    ens[e].name);
			goto out;
		}
		r = add_row(b, cap, ens[e].name, bag ? "bag" : "ensemble",
			    method == CFL_ENS_MEAN ? CFL_BUNDLE_MEAN
			    : method == CFL_ENS_VOTE ? CFL_BUNDLE_VOTE
			    : CFL_BUNDLE_WEIGHTED, err);
		for (size_t i = 0; r && !skip && i < n_sel; i++) {
			/* a bag refit on every training row predicts with that
			 * one model (its test predictions are the member's) */
			size_t j = sel[i];
			const int64_t *ids = ms.m[j].refit ? &ms.m[j].refit : ms.m[j].ids;
			size_t n_ids = ms.m[j].refit ? 1 : ms.m[j].n_ids;
			struct cfl_bundle_member *mb = add_member(r, n_ids, err);

			if (!mb)
				r = NULL;
			for (size_t k = 0; r && k < n_ids; k++) {
				long mi = model_of(b, ids[k]);

				if (mi < 0) {
					/* a model that does not load: no row */
					skip = 1;
					break;
				}
				mb->models[mb->n_models++] = (size_t)mi;
			}
			if (r && r->method == CFL_BUNDLE_WEIGHTED)
				mb->weight = o.weights[i];
		}
		cfl_ens_output_release(&o);
		if (r && skip) {
			for (size_t j = 0; j < r->n_members; j++)
				free(r->members[j].models);
			free(r->members);
			free(r->name);
			free(r->kind);
			b->n_rows--;
			continue;
		}
		if (!r || ensemble_scores(r, ens[e].id, rows, n_rows, err))
			goto out;
	}
	rc = 0;
out:
	free(em);
	free(sub_em);
	free(sel);
	study_members_release(&ms);
	cfl_ensemble_rows_free(ens, n_ens);
	return rc;
}

/* The row the run recommends: the best score (sign * mean - std) of the
 * first metric on validation among the model and ensemble rows, the first
 * of the best; with no validation score, "mean" if there is one, else the
 * first row.  Never chosen on test. */
static const char *recommend(const struct cfl_bundle *b, const char *metric)
{
	int id = metric ? cfl_metric_lookup(metric) : -1;
	int sign = id >= 0 ? cfl_metric_info(id)->sign : 1;
	const char *best = NULL;
	double best_score = -INFINITY;

	for (size_t i = 0; i < b->n_rows; i++) {
		const struct cfl_bundle_row *r = &b->rows[i];

		if (!strcmp(r->kind, "repeat"))
			continue;
		for (size_t j = 0; j < r->n_scores; j++) {
			const struct cfl_bundle_score *sc = &r->scores[j];
			double score;

			if (strcmp(sc->split, "valid") || strcmp(sc->metric, metric) ||
			    isnan(sc->value))
				continue;
			score = sign * sc->value - (isnan(sc->std) ? 0 : sc->std);
			if (!best || score > best_score) {
				best = r->name;
				best_score = score;
			}
		}
	}
	if (best)
		return best;
	for (size_t i = 0; i < b->n_rows; i++)
		if (!strcmp(b->rows[i].name, "mean"))
			return "mean";
	return b->n_rows ? b->rows[0].name : "";
}

/* Run info, encoder and models: every done trial's kept model, as a whole
 * model file (only_cand not 0: that candidate's trials of repeat
 * min_repeat and later only).  A kept model that does not load (a row no
 * check let in, or an older cfl's) leaves its trial out: its status in tr
 * becomes failed, and an ensemble of it is no row. */
static int build_models(struct cfl_store *st, int64_t run_id,
			const struct cfl_data *d, struct cfl_trial_info *tr,
			size_t n_tr, const struct cfl_candidate_info *cands,
			size_t n_cands, int64_t only_cand, int min_repeat,
			struct cfl_bundle *b, struct cfl_err *err)
{
	struct cfl_run_info info;
	struct cfl_buf enc;
	int rc = -1;

	memset(&info, 0, sizeof(info));
	cfl_buf_init(&enc);
	if (cfl_store_run_get(st, run_id, &info, err))
		return -1;
	if (!(b->cfl_version = cfl_strdup(CFL_VERSION, err)) ||
	    !(b->run = dup_or_null(info.name, err)) ||
	    !(b->kind = cfl_strdup(cfl_run_kind_name(info.kind), err)) ||
	    !(b->dataset = dup_or_null(info.dataset, err)) ||
	    !(b->dataset_sha256 = cfl_strdup(info.dataset_sha256, err)))
		goto out;
	if (cfl_encoder_save(&d->enc, &enc) ||
	    !(b->encoder = cfl_strdup(enc.data ? enc.data : "", err))) {
		cfl_err_set(err, "out of memory");
		goto out;
	}
	if (!(b->models = cfl_calloc(n_tr + 1, sizeof(*b->models), err)))
		goto out;
	for (size_t i = 0; i < n_tr; i++) {
		struct cfl_bundle_model *m;
		const char *model = "?";
		struct cfl_buf full;
		char *text;
		int r;

		if (tr[i].status != CFL_TRIAL_DONE ||
		    (only_cand && (tr[i].cand_id != only_cand || tr[i].repeat < min_repeat)))
			continue;
		for (size_t c = 0; c < n_cands; c++)
			if (cands[c].id == tr[i].cand_id)
				model = cands[c].model;
		r = cfl_store_trial_model(st, tr[i].id, &text, err);
		if (r < 0)
			goto out;
		if (r) {
			cfl_err_set(err, "run '%s' kept no model for trial %lld (%s "
				    "repeat %d); a bundle needs a run started with --save",
				    info.name, (long long)tr[i].id, model, tr[i].repeat);
			goto out;
		}
		cfl_buf_init(&full);
		r = cfl_model_text_add_encoder(text, strlen(text), &d->enc, &full, err);
		free(text);
		if (!r) {
			struct cfl_encoder e;
			struct cfl_model *fm = cfl_model_parse("model", full.data,
							       full.len, &e, err);

			r = fm ? 0 : -1;
			cfl_model_free(fm);
			cfl_encoder_release(&e);
		}
		if (r) {
			cfl_buf_release(&full);
			tr[i].status = CFL_TRIAL_FAILED;
			continue;
		}
		m = &b->models[b->n_models++];
		m->trial = tr[i].id;
		m->repeat = tr[i].repeat;
		m->fold = tr[i].fold;
		m->text = full.data;
		if (!(m->model = cfl_strdup(model, err)))
			goto out;
	}
	rc = 0;
out:
	cfl_buf_release(&enc);
	cfl_run_info_release(&info);
	return rc;
}

/* What a builder reads of run run_id: its trials, candidates, metric rows
 * on valid and test (and oof: auto's) and its metrics.  0, or -1 with err;
 * the caller frees what was read either way (run_free). */
struct run_read {
	struct cfl_trial_info *tr;
	size_t n_tr;
	struct cfl_candidate_info *cands;
	size_t n_cands;
	struct cfl_metric_row *mrows[3];	/* valid, test, oof */
	size_t n_mrows[3];
	enum cfl_metric_id metrics[CFL_M_COUNT];
	long n_metrics;
};

static int run_read(struct cfl_store *st, int64_t run_id, int oof,
		    struct run_read *rr, struct cfl_err *err)
{
	memset(rr, 0, sizeof(*rr));
	if (cfl_store_trials(st, run_id, &rr->tr, &rr->n_tr, err) ||
	    cfl_store_candidates(st, run_id, &rr->cands, &rr->n_cands, err) ||
	    cfl_store_run_metrics(st, run_id, CFL_SPLIT_VALID, &rr->mrows[0],
				  &rr->n_mrows[0], err) ||
	    cfl_store_run_metrics(st, run_id, CFL_SPLIT_TEST, &rr->mrows[1],
				  &rr->n_mrows[1], err) ||
	    (oof && cfl_store_run_metrics(st, run_id, CFL_SPLIT_OOF, &rr->mrows[2],
					  &rr->n_mrows[2], err)))
		return -1;
	rr->n_metrics = study_run_metrics(st, run_id, rr->metrics, CFL_M_COUNT, err);
	return rr->n_metrics < 0 ? -1 : 0;
}

static void run_free(struct run_read *rr)
{
	for (int sp = 0; sp < 3; sp++)
		free(rr->mrows[sp]);
	cfl_trials_free(rr->tr, rr->n_tr);
	cfl_candidates_free(rr->cands, rr->n_cands);
	memset(rr, 0, sizeof(*rr));
}

int cfl_bundle_build_repeat(struct cfl_store *st, int64_t run_id,
			    const struct cfl_data *d, struct cfl_bundle *b,
			    struct cfl_err *err)
{
	struct run_read rr;
	struct cfl_trial_info *tr;
	struct cfl_candidate_info *cands;
	struct cfl_metric_row **mrows = rr.mrows;
	size_t n_tr, n_cands, *n_mrows = rr.n_mrows, cap = 0;
	const enum cfl_metric_id *metrics = rr.metrics;
	int64_t *ids = NULL;
	long n_metrics;
	int rc = -1;

	memset(b, 0, sizeof(*b));
	if (run_read(st, run_id, 0, &rr, err))
		goto out;
	tr = rr.tr;
	n_tr = rr.n_tr;
	cands = rr.cands;
	n_cands = rr.n_cands;
	n_metrics = rr.n_metrics;
	if (build_models(st, run_id, d, tr, n_tr, cands, n_cands, 0, 0, b, err))
		goto out;
	if (!b->n_models) {
		cfl_err_set(err, "run '%s' has no done trial: nothing to bundle", b->run);
		goto out;
	}
	if (!(b->metric = cfl_strdup(n_metrics ? cfl_metric_info(metrics[0])->name
					       : "", err)) ||
	    !(ids = cfl_calloc(n_tr + 1, sizeof(*ids), err)))
		goto out;
	/* a row per model (its repeats' mean), then per repeat of it */
	for (size_t c = 0; c < n_cands; c++) {
		struct cfl_bundle_row *mr = NULL;
		size_t n_ids = 0;

		for (size_t i = 0; i < n_tr; i++) {
			size_t last = i;
			struct cfl_bundle_member *mb;
			struct cfl_bundle_row *rr;
			char name[96];
			size_t first_id = n_ids;

			if (tr[i].cand_id != cands[c].id || tr[i].status != CFL_TRIAL_DONE)
				continue;
			/* the done trials of this (candidate, repeat) */
			if (!mr && !(mr = add_row(b, &cap, cands[c].model, "model",
						  CFL_BUNDLE_MEAN, err)))
				goto out;
			while (last < n_tr && tr[last].cand_id == tr[i].cand_id &&
			       tr[last].repeat == tr[i].repeat)
				last++;
			snprintf(name, sizeof(name), "%s#%d", cands[c].model, tr[i].repeat);
			if (!(rr = add_row(b, &cap, name, "repeat", CFL_BUNDLE_ONE, err)))
				goto out;
			/* add_row may move mr */
			for (size_t q = 0; q < b->n_rows; q++)
				if (!strcmp(b->rows[q].name, cands[c].model))
					mr = &b->rows[q];
			if (!(mb = add_member(rr, last - i, err)))
				goto out;
			for (size_t k = i; k < last; k++)
				if (tr[k].status == CFL_TRIAL_DONE) {
					mb->models[mb->n_models++] = (size_t)model_of(b, tr[k].id);
					ids[n_ids++] = tr[k].id;
				}
			if (trial_scores(rr, ids + first_id, n_ids - first_id,
					 (const struct cfl_metric_row *const *)mrows,
					 n_mrows, metrics, (size_t)n_metrics, err))
				goto out;
			{
				struct cfl_bundle_member *mm = add_member(mr, mb->n_models, err);

				if (!mm)
					goto out;
				memcpy(mm->models, mb->models, mb->n_models * sizeof(size_t));
				mm->n_models = mb->n_models;
			}
			i = last - 1;
		}
		if (mr && trial_scores(mr, ids, n_ids,
				       (const struct cfl_metric_row *const *)mrows,
				       n_mrows, metrics, (size_t)n_metrics, err))
			goto out;
	}
	if (ensemble_rows(st, run_id, d, b, &cap, metrics, (size_t)n_metrics, 0,
			  (const struct cfl_metric_row *const *)mrows, n_mrows, err) ||
	    !(b->recommended = cfl_strdup(recommend(b, b->metric), err)))
		goto out;
	rc = 0;
out:
	free(ids);
	run_free(&rr);
	if (rc)
		cfl_bundle_release(b);
	return rc;
}

int cfl_bundle_build_tune(struct cfl_store *st, int64_t run_id,
			  const struct cfl_data *d, int64_t cand_id,
			  int first_refit, struct cfl_bundle *b, struct cfl_err *err)
{
	struct run_read rr;
	struct cfl_metric_row **mrows = rr.mrows;
	size_t *n_mrows = rr.n_mrows, cap = 0;
	const enum cfl_metric_id *metrics = rr.metrics;
	struct cfl_bundle_row *best;
	int64_t *ids = NULL;
	long n_metrics;
	int rc = -1;

	memset(b, 0, sizeof(*b));
	if (run_read(st, run_id, 0, &rr, err) ||
	    build_models(st, run_id, d, rr.tr, rr.n_tr, rr.cands, rr.n_cands, cand_id,
			 first_refit, b, err))
		goto out;
	n_metrics = rr.n_metrics;
	if (!b->n_models) {
		cfl_err_set(err, "run '%s' has no done refit: nothing to bundle", b->run);
		goto out;
	}
	if (!(b->metric = cfl_strdup(n_metrics ? cfl_metric_info(metrics[0])->name
					       : "", err)) ||
	    !(b->recommended = cfl_strdup("best", err)) ||
	    !(ids = cfl_calloc(b->n_models, sizeof(*ids), err)) ||
	    !add_row(b, &cap, "best", "model", CFL_BUNDLE_MEAN, err))
		goto out;
	for (size_t i = 0; i < b->n_models; i++) {
		struct cfl_bundle_row *r;
		struct cfl_bundle_member *mb;
		char name[32];

		ids[i] = b->models[i].trial;
		snprintf(name, sizeof(name), "best#%d", b->models[i].repeat - first_refit);
		if (!(r = add_row(b, &cap, name, "repeat", CFL_BUNDLE_ONE, err)) ||
		    !(mb = add_member(r, 1, err)))
			goto out;
		mb->models[mb->n_models++] = i;
		if (trial_scores(r, ids + i, 1, (const struct cfl_metric_row *const *)mrows,
				 n_mrows, metrics, (size_t)n_metrics, err))
			goto out;
		best = &b->rows[0];
		if (!(mb = add_member(best, 1, err)))
			goto out;
		mb->models[mb->n_models++] = i;
	}
	best = &b->rows[0];
	if (trial_scores(best, ids, b->n_models, (const struct cfl_metric_row *const *)mrows,
			 n_mrows, metrics, (size_t)n_metrics, err))
		goto out;
	rc = 0;
out:
	free(ids);
	run_free(&rr);
	if (rc)
		cfl_bundle_release(b);
	return rc;
}

/* ---- bundle: loading and applying ---- */

int cfl_bundle_load(const char *path, struct cfl_bundle *b, struct cfl_err *err)
{
	struct cfl_reader r;

	if (cfl_bundle_read(path, b, err))
		return -1;
	cfl_reader_init(&r, path, b->encoder, strlen(b->encoder));
	if (cfl_encoder_load(&b->enc, &r, err)) {
		cfl_err_prefix(err, "bundle '%s': its encoder", path);
		goto fail;
	}
	if (!(b->fitted = cfl_calloc(b->n_models + 1, sizeof(*b->fitted), err)))
		goto fail;
	for (size_t i = 0; i < b->n_models; i++) {
		struct cfl_encoder enc;
		char name[64];
		struct cfl_model *m;

		snprintf(name, sizeof(name), "model %zu", i + 1);
		m = cfl_model_parse(name, b->models[i].text, strlen(b->models[i].text),
				    &enc, err);
		if (!m) {
			cfl_err_prefix(err, "bundle '%s'", path);
			goto fail;
		}
		cfl_encoder_release(&enc);
		b->fitted[i] = m;
		if (m->n_features != b->enc.d || m->n_classes != b->enc.n_classes) {
			cfl_err_set(err, "bundle '%s': model %zu takes %zu features and "
				    "%d classes, the encoder gives %zu and %d", path,
				    i + 1, m->n_features, m->n_classes, b->enc.d,
				    b->enc.n_classes);
			goto fail;
		}
	}
	return 0;
fail:
	cfl_bundle_release(b);
	return -1;
}

const struct cfl_bundle_row *cfl_bundle_find(const struct cfl_bundle *b,
					     const char *name)
{
	for (size_t i = 0; i < b->n_rows; i++)
		if (!strcmp(b->rows[i].name, name))
			return &b->rows[i];
	return NULL;
}

/* A member's prediction into out (n, n_out): its models' predictions
 * summed as p / k in order, as the run averaged the folds of a member; raw:
 * a single model's prediction as it is (a repeat row equals its trial's). */
static int member_predict(const struct cfl_bundle *b,
			  const struct cfl_bundle_member *mb, const float *x,
			  size_t n, size_t n_out, int raw, double *out,
			  double *tmp, struct cfl_err *err)
{
	size_t len = n * n_out;

	if (raw && mb->n_models == 1)
		return cfl_model_predict(b->fitted[mb->models[0]], x, n, out, err);
	memset(out, 0, len * sizeof(double));
	for (size_t k = 0; k < mb->n_models; k++) {
		if (cfl_model_predict(b->fitted[mb->models[k]], x, n, tmp, err))
			return -1;
		for (size_t j = 0; j < len; j++)
			out[j] += tmp[j] / (double)mb->n_models;
	}
	return 0;
}

int cfl_bundle_predict(const struct cfl_bundle *b, const struct cfl_bundle_row *r,
		       const float *x, size_t n, double *out, struct cfl_err *err)
{
	size_t n_out = b->enc.n_classes > 0 ? (size_t)b->enc.n_classes : 1;
	size_t len = n * n_out, m = r->n_members;
	double **preds = NULL, *tmp = NULL, *w = NULL;
	int rc = -1;

	if (!b->fitted)
		return cfl_err_set(err, "the bundle is not loaded");
	if (!(tmp = cfl_calloc(len + 1, sizeof(double), err)))
		return -1;
	if (r->method == CFL_BUNDLE_ONE) {
		rc = member_predict(b, &r->members[0], x, n, n_out, 1, out, tmp, err);
		goto out;
	}
	if (!(preds = cfl_calloc(m, sizeof(*preds), err)) ||
	    !(w = cfl_calloc(m, sizeof(double), err)))
		goto out;
	for (size_t j = 0; j < m; j++) {
		if (!(preds[j] = cfl_calloc(len + 1, sizeof(double), err)) ||
		    member_predict(b, &r->members[j], x, n, n_out, 0, preds[j], tmp, err))
			goto out;
		w[j] = r->members[j].weight;
	}
	switch (r->method) {
	case CFL_BUNDLE_MEAN:
		rc = cfl_ensemble_mean((const double *const *)preds, m, n, n_out, out, err);
		break;
	case CFL_BUNDLE_VOTE:
		rc = cfl_ensemble_vote((const double *const *)preds, m, n, n_out, out, err);
		break;
	default:
		rc = cfl_ensemble_weighted((const double *const *)preds, w, m, n, n_out,
					   out, err);
		break;
	}
out:
	if (rc)
		cfl_err_prefix(err, "row '%s'", r->name);
	for (size_t j = 0; preds && j < m; j++)
		free(preds[j]);
	free(preds);
	free(w);
	free(tmp);
	return rc;
}

/* Whether trial id is listed in the members text of one of the n_ens
 * ensembles ("trials 12+13,14; ..."). */
static int listed(const struct cfl_ensemble_row *ens, size_t n_ens, int64_t id)
{
	for (size_t e = 0; e < n_ens; e++) {
		const char *p = ens[e].members;

		if (strncmp(p, "trials ", 7))
			continue;
		for (p += 7; *p && *p != ';';) {
			char *end;
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			if (v == id)
				return 1;
			p = end;
			if (*p == '+' || *p == ',')
				p++;
		}
	}
	return 0;
}

int cfl_bundle_build_auto(struct cfl_store *st, int64_t run_id,
			  const struct cfl_data *d, struct cfl_bundle *b,
			  struct cfl_err *err)
{
	struct cfl_ensemble_row *ens = NULL;
	size_t n_ens = 0;
	struct run_read rr;
	struct cfl_trial_info *folds = NULL;
	struct cfl_study_auto_summary sum;
	size_t n_folds = 0, cap = 0;
	int rc = -1;

	memset(b, 0, sizeof(*b));
	memset(&sum, 0, sizeof(sum));
	if (run_read(st, run_id, 1, &rr, err) ||
	    cfl_study_auto_summary(st, run_id, &sum, err) ||
	    cfl_store_ensembles(st, run_id, &ens, &n_ens, err) ||
	    !(folds = cfl_calloc(rr.n_tr + 1, sizeof(*folds), err)))
		goto out;
	/* the models: the fold trials of each bag whose folds all finished
	 * and the bags' done refits (shallow copies; the search's trials,
	 * repeat 0 and fold -1, keep none) */
	for (size_t i = 0; i < rr.n_tr;) {
		size_t j = i;
		int all = 1;

		if (rr.tr[i].fold < 0) {
			/* only the bags an entry uses (auto scores every
			 * candidate as a bag) */
			if (rr.tr[i].repeat == 1 && rr.tr[i].status == CFL_TRIAL_DONE &&
			    listed(ens, n_ens, rr.tr[i].id))
				folds[n_folds++] = rr.tr[i];
			i++;
			continue;
		}
		while (j < rr.n_tr && rr.tr[j].fold >= 0 &&
		       rr.tr[j].cand_id == rr.tr[i].cand_id &&
		       rr.tr[j].repeat == rr.tr[i].repeat)
			all &= rr.tr[j++].status == CFL_TRIAL_DONE;
		/* a bag refit predicts with its refit alone (repeat 1, fold
		 * -1 of the same candidate, after its set 0's folds and
		 * before its later bag sets') */
		for (size_t k = 0; k < rr.n_tr; k++)
			if (rr.tr[k].cand_id == rr.tr[i].cand_id &&
			    rr.tr[k].repeat == 1 && rr.tr[k].fold < 0 &&
			    rr.tr[k].status == CFL_TRIAL_DONE)
				all = 0;
		for (size_t k = i; all && k < j; k++)
			if (listed(ens, n_ens, rr.tr[k].id))
				folds[n_folds++] = rr.tr[k];
		i = j;
	}
	if (build_models(st, run_id, d, folds, n_folds, rr.cands, rr.n_cands, 0, 0,
			 b, err))
		goto out;
	if (!b->n_models || !sum.n_rows) {
		cfl_err_set(err, "run '%s' has no bag whose folds all finished: "
			    "nothing to bundle", b->run);
		goto out;
	}
	/* the default row is the leaderboard's rank 1: chosen out of fold,
	 * never on test */
	if (!(b->metric = cfl_strdup(sum.metric, err)) ||
	    !(b->recommended = cfl_strdup(sum.rows[0].name, err)) ||
	    ensemble_rows(st, run_id, d, b, &cap, rr.metrics, (size_t)rr.n_metrics, 1,
			  (const struct cfl_metric_row *const *)rr.mrows, rr.n_mrows,
			  err))
		goto out;
	rc = 0;
out:
	free(folds);
	cfl_ensemble_rows_free(ens, n_ens);
	cfl_study_auto_summary_release(&sum);
	run_free(&rr);
	if (rc)
		cfl_bundle_release(b);
	return rc;
}

/* Why the default row is the default, as recommend chose it. */
void cfl_bundle_why_default(const struct cfl_bundle *b, char *out, size_t cap)
{
	int has_valid = 0;

	for (size_t i = 0; i < b->n_rows && !has_valid; i++)
		for (size_t j = 0; j < b->rows[i].n_scores && !has_valid; j++)
			has_valid = !strcmp(b->rows[i].scores[j].split, "valid") &&
				    !strcmp(b->rows[i].scores[j].metric, b->metric) &&
				    !isnan(b->rows[i].scores[j].value);
	if (!strcmp(b->kind, "auto"))	/* the leaderboard's rank 1 */
		snprintf(out, cap, "rank 1 by %s out of fold", b->metric);
	else if (has_valid)
		snprintf(out, cap, "best %s on valid", b->metric);
	else if (!strcmp(b->recommended, "mean"))
		snprintf(out, cap, "the mean: no validation part to choose on");
	else
		snprintf(out, cap, "the first row: no validation part to choose on");
}
