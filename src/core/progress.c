/*
 * The progress display (core.h): the live progress line and the terminal's
 * width.  A line wider than the
 * terminal wraps, and "\r\033[K" then clears only its last row, leaving a
 * wrapped line behind at every update: so the line is built in a few forms,
 * richest first, and the first that fits in width - 1 columns is shown.
 * Pure formatting: no state, no output.
 */
#include "cfl/core.h"

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
	size_t finished = c->done + c->failed, room = width > 1 ? width - 1 : 1;
	size_t len;

	if (!cap)
		return 0;
	cfl_format_duration(c->elapsed, el, sizeof(el));
	if (finished && finished < c->total)
		cfl_format_duration(c->elapsed / (double)finished *
				    (double)(c->total - finished), eta, sizeof(eta));
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
			snprintf(out, cap, "%zu/%zu done%s, %zu run, %zu fail, ETA %s%s",
				 c->done, c->total, m, c->running, c->failed, eta, b);
		if (columns(out) <= room)
			return strlen(out);
	}
	snprintf(out, cap, "%zu/%zu ETA %s", c->done, c->total, eta);
	/* the shortest form is still too wide: cut it (ASCII only) */
	len = strlen(out);
	if (len > room)
		out[len = room] = 0;
	return len;
}
