/*
 * The progress display (core.h): the live progress line and the terminal's
 * width.  A line wider than the
 * terminal wraps, and "\r\033[K" then clears only its last row, leaving a
 * wrapped line behind at every update: so the line is built in a few forms,
 * richest first, and the first that fits in width - 1 columns is shown.
 * Formatting, and the estimate of the time left (cfl_eta); no output.
 */
#include "cfl/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

size_t cfl_term_width(int fd)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;

	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);

		if (!*end && v > 0 && v < 100000)
			return (size_t)v;
	}
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

int cfl_is_terminal(int fd)
{
	struct winsize ws;

	return isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0;
}

void cfl_format_duration(double s, char *out, size_t cap)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(out, cap, "%02ld:%02ld", t / 60, t % 60);
}

/* Display columns of s: UTF-8 continuation bytes take none. */
static size_t columns(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* " (fcnn 3, tree 4)" into out; "" when there are no models. */
static void per_model(const struct cfl_progress_counts *c, char *out, size_t cap)
{
	size_t len = 0;

	out[0] = 0;
	for (size_t i = 0; i < c->n_models && len + 1 < cap; i++) {
		int n = snprintf(out + len, cap - len, "%s%s %zu",
				 i ? ", " : " (", c->models[i], c->model_done[i]);

		if (n < 0 || (size_t)n >= cap - len)
			return (void)(out[0] = 0);	/* too long for any terminal */
		len += (size_t)n;
	}
	if (len && len + 2 <= cap)
		memcpy(out + len, ")", 2);
	else
		out[0] = 0;
}

/* The forms of the line, richest first: long or short words, with the
 * per-model counts or not, with the best or not.  Per-model counts come
 * before the long words: they say more than "elapsed". */
static const struct { int long_words, models, best; } forms[] = {
	{ 1, 1, 1 }, { 1, 0, 1 }, { 0, 1, 1 }, { 1, 1, 0 },
	{ 0, 0, 1 }, { 0, 1, 0 }, { 1, 0, 0 }, { 0, 0, 0 },
};

size_t cfl_progress_format(const struct cfl_progress_counts *c, size_t width,
			   char *out, size_t cap)
{
	char el[32], eta[32] = "--:--", best[160] = "", models[512];
	size_t room = width > 1 ? width - 1 : 1;
	size_t len;

	if (!cap)
		return 0;
	cfl_format_duration(c->elapsed, el, sizeof(el));
	if (c->eta >= 0) {
		eta[0] = '>';
		cfl_format_duration(c->eta, eta + !!c->eta_lower,
				    sizeof(eta) - !!c->eta_lower);
	}
	if (c->have_best)
		snprintf(best, sizeof(best), ", best %s %.4f (%s)", c->best_metric,
			 c->best_value, c->best_model);
	per_model(c, models, sizeof(models));
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		const char *m = forms[f].models ? models : "";
		const char *b = forms[f].best ? best : "";

		if ((forms[f].models && !models[0]) || (forms[f].best && !best[0]))
			continue;
		if (forms[f].long_words)
			snprintf(out, cap, "%zu/%zu done%s, %zu running, %zu failed, "
				 "%s elapsed, ETA %s%s", c->done, c->total, m,
				 c->running, c->failed, el, eta, b);
		else
			snprintf(out, cap, "%zu/%zu done%s, %zu run, %zu fail, %s el, "
				 "ETA %s%s", c->done, c->total, m, c->running,
				 c->failed, el, eta, b);
		if (columns(out) <= room)
			return strlen(out);
	}
	snprintf(out, cap, "%zu/%zu %s ETA %s", c->done, c->total, el, eta);
	/* the shortest form is still too wide: cut it (ASCII only) */
	len = strlen(out);
	if (len > room)
		out[len = room] = 0;
	return len;
}

/* ---- cfl auto's live line ---- */

size_t cfl_auto_progress_format(const struct cfl_auto_counts *c, size_t width,
				char *out, size_t cap)
{
	char el[32], left[48] = "", what[160];
	size_t room = width > 1 ? width - 1 : 1, len;

	if (!cap)
		return 0;
	cfl_format_duration(c->elapsed, el, sizeof(el));
	for (int f = 0; f < 3; f++) {
		int brief = f == 2;

		if (c->left >= 0) {
			char t[32];

			cfl_format_duration(c->left, t, sizeof(t));
			snprintf(left, sizeof(left), ", %s left", t);
		}
		if (!strcmp(c->phase, "search") && c->family)
			snprintf(what, sizeof(what), "search %s, %zu %s", c->family,
				 c->n_cands, brief ? "cand" : "candidates so far");
		else if (!strcmp(c->phase, "bags") && c->total)
			snprintf(what, sizeof(what), "bags %zu/%zu%s", c->done,
				 c->total, brief ? "" : " folds");
		else
			snprintf(what, sizeof(what), "%s", c->phase);
		snprintf(out, cap, "%s%s, %s%s%s", f ? "" : "auto: ", what, el,
			 brief ? "" : " elapsed", left);
		if (columns(out) <= room)
			return strlen(out);
	}
	len = strlen(out);
	if (len > room)
		out[len = room] = 0;
	return len;
}

/* ---- the time left of a run ---- */

double cfl_eta_compute(const struct cfl_eta_model *m, size_t n_models,
		       const struct cfl_eta_running *run, size_t n_run,
		       size_t slots, int *lower)
{
	double work = 0, longest = 0, mean[CFL_ETA_MAX_MODELS];
	size_t busy = n_run;

	*lower = 0;
	if (n_models > CFL_ETA_MAX_MODELS)
		n_models = CFL_ETA_MAX_MODELS;
	for (size_t i = 0; i < n_models; i++) {
		mean[i] = m[i].n_done ? m[i].done_seconds / (double)m[i].n_done : -1;
		busy += m[i].queued;
	}
	/* a model not timed: at least as long as its oldest running trial */
	for (size_t r = 0; r < n_run; r++)
		if (run[r].model < n_models && !m[run[r].model].n_done) {
			*lower = 1;
			if (run[r].age > mean[run[r].model])
				mean[run[r].model] = run[r].age;
		}
	for (size_t i = 0; i < n_models; i++) {
		if (m[i].queued && mean[i] < 0)
			return -1;	/* queued, never started: unknown */
		if (m[i].queued)
			work += (double)m[i].queued * mean[i];
	}
	for (size_t r = 0; r < n_run; r++)
		if (run[r].model < n_models && mean[run[r].model] > run[r].age) {
			work += mean[run[r].model] - run[r].age;
			longest = fmax(longest, mean[run[r].model] - run[r].age);
		}
	if (slots > busy)	/* the last trials run side by side */
		slots = busy;
	/* no sooner than the longest running trial's rest */
	return fmax(work / (double)(slots ? slots : 1), longest);
}

void cfl_eta_init(struct cfl_eta *e, double now)
{
	memset(e, 0, sizeof(*e));
	e->est = -1;
	e->at = now;
}

double cfl_eta_left(const struct cfl_eta *e, double now, int *lower)
{
	if (lower)
		*lower = e->lower;
	if (e->est < 0)
		return -1;
	/* a lower bound grows with the running trials' age: not counted
	 * down (the next update raises it) */
	return e->lower ? e->est : fmax(0, e->est - (now - e->at));
}
