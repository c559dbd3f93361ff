/*
 * Internal to src/report: helpers its files share.  Never included from
 * outside the module.
 */
#ifndef CFL_REPORT_INTERNAL_H
#define CFL_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cfl/core.h"

/* The value of "key=" in a run's stored config (key=value lines) copied
 * into out, cut to cap - 1 bytes; "" when the key is absent or config is
 * NULL. */
void cfl_report_config_get(const char *config, const char *key, char *out,
			   size_t cap);

/* ---- an ensemble's stored members text (members.c) ---- */

struct report_member {
	int64_t *trials;	/* (n_trials): its trial, or the trials of its folds */
	size_t n_trials;
	double weight;		/* NaN without a "weights" section */
	double *coefs;		/* (n_rows, n_cols) stacking's meta-learner
				 * coefficients on this member's inputs, or NULL */
	size_t n_rows, n_cols;	/* a row per class score (one for a
				 * regression or two classes), a column per
				 * input of the member */
};

struct report_members {
	size_t n;
	struct report_member *m;	/* (n) */
	int has_weights, has_coefs;
	char *about;		/* the other sections ("meta linear l2=1 on
				 * oof"), "; "-joined, malloc'd; "" when none */
};

void cfl_report_members_init(struct report_members *ms);
void cfl_report_members_release(struct report_members *ms);
/* Parses an ensemble's members text ("trials 1+2,3+4; weights 0.5,0.5",
 * format in members.c) into ms (initialised here; release it).  0 when
 * parsed; 1 when text is NULL or not in that format (ms left empty: show
 * the text as it is); -1 with err on allocation failure. */
int cfl_report_members_parse(const char *text, struct report_members *ms /* OUT */,
			     struct cfl_err *err);

/* ---- auto's leaderboard (auto_report.c) ---- */

struct cfl_study_auto_summary;

/* The rule sum's leaderboard is ranked by, as one plain sentence (no line
 * break), appended to b.  0, or -1 on allocation failure. */
int cfl_report_auto_sentence(const struct cfl_study_auto_summary *sum,
			     struct cfl_buf *b);

/* ---- hyper-parameter importance (importance.c) ---- */

/* Fits cfl's forest on x (n, d) -> y (n scores) and fills imp (d) with each
 * column's permutation importance, shares summing to 1 (all 0 when no
 * column matters).  NaN in x is a value below every other.  0; -1 with
 * err when n < 2, d == 0, the build has no forest or memory runs out. */
int cfl_report_param_importance(const double *x, size_t n, size_t d,
				const double *y, double *imp /* OUT */,
				struct cfl_err *err);

/* Appends s to b as a CSV field (RFC 4180: quoted when it holds a comma,
 * a quote or a line break).  0, or -1 when out of memory. */
int cfl_report_csv_field(struct cfl_buf *b, const char *s);

/* Appends s to b as a JSON string literal (quotes, backslashes and
 * control characters escaped).  0, or -1 when out of memory. */
int cfl_report_json_string(struct cfl_buf *b, const char *s);

#endif
