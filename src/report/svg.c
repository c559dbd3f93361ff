/*
 * SVG charts for the HTML report (svg.h): box and strip plots of values over
 * repeats, and scatter plots of a search's scores.  Pure text generation
 * into a cfl_buf: coordinates are printed with %.1f so the same data gives
 * the same bytes on every machine.  Depends on core only.
 */
#include "svg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C_MODEL "#4c78a8"
#define C_ENSEMBLE "#e45756"
#define C_GRID "#e3e3e3"
#define C_AXIS "#555"

int cfl_svg_escape(struct cfl_buf *b, const char *s)
{
	for (; *s; s++) {
		const char *e = NULL;

		switch (*s) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&quot;"; break;
		case '\'': e = "&#39;"; break;
		}
		if (e ? cfl_buf_puts(b, e) : cfl_buf_append(b, s, 1))
			return -1;
	}
	return 0;
}

int cfl_svg_num(struct cfl_buf *b, double v)
{
	if (v != v)
		return cfl_buf_puts(b, "nan");
	if (v == 0)
		v = 0;	/* -0 */
	return cfl_buf_printf(b, "%.6g", v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void cfl_svg_quartiles(const double *v, size_t n, double q[5])
{
	double *s = malloc(n * sizeof(double));
	static const double at[5] = { 0, 0.25, 0.5, 0.75, 1 };

	if (!s) {	/* no memory: min = max = first value, still a picture */
		for (int k = 0; k < 5; k++)
			q[k] = v[0];
		return;
	}
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	for (int k = 0; k < 5; k++) {
		double pos = at[k] * (double)(n - 1);
		size_t i = (size_t)pos;
		double f = pos - (double)i;

		q[k] = i + 1 < n ? s[i] + f * (s[i + 1] - s[i]) : s[i];
	}
	free(s);
}

void cfl_svg_nice_range(double lo, double hi, int n_ticks, double *nlo,
		    double *nhi, double *step)
{
	double raw, mag, norm, st;

	if (!(hi > lo)) {	/* one value: a small range around it */
		double half = lo != 0 ? fabs(lo) * 0.05 : 0.5;

		lo -= half;
		hi += half;
	}
	raw = (hi - lo) / (n_ticks > 0 ? n_ticks : 5);
	mag = pow(10, floor(log10(raw)));
	norm = raw / mag;
	st = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
	*nlo = floor(lo / st) * st;
	*nhi = ceil(hi / st) * st;
	if (*nhi <= *nlo)
		*nhi = *nlo + st;
	*step = st;
}

/* A tick label: v rounded to the step's precision, never "-0". */
static int put_tick(struct cfl_buf *b, double v, double step)
{
	if (fabs(v) < step * 1e-6)
		v = 0;
	return cfl_buf_printf(b, "%.6g", v);
}

static int text(struct cfl_buf *b, double x, double y, const char *anchor,
		const char *extra, const char *s)
{
	return cfl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>",
			      x, y, anchor, extra ? extra : "") ||
	       cfl_svg_escape(b, s) || cfl_buf_puts(b, "</text>\n");
}

static int begin(struct cfl_buf *b, int w, int h, const char *title)
{
	return cfl_buf_printf(b, "<svg class=\"%s\" width=\"%d\" height=\"%d\" "
				 "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
			      w < 600 ? "chart small" : "chart", w, h, w, h) ||
	       cfl_svg_escape(b, title) ||
	       cfl_buf_puts(b, "\" font-family=\"sans-serif\" font-size=\"12\">\n"
			       "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n") ||
	       text(b, 8, 18, "start", " font-weight=\"bold\" font-size=\"13\"", title);
}

static int empty_chart(struct cfl_buf *b, const char *title)
{
	return begin(b, 360, 60, title) ||
	       text(b, 8, 42, "start", " fill=\"#888\"", "no values to plot") ||
	       cfl_buf_puts(b, "</svg>\n");
}

/* ---- svg: box and strip plots ---- */

int cfl_svg_box_strip(struct cfl_buf *b, const char *title, const char *xlabel,
		  size_t n_series, const char *const *names,
		  const size_t *n_values, const double *const *values,
		  const int *highlight)
{
	const double left = 140, right = 30, top = 34, row_h = 30, bottom = 46;
	const double w = 760, plot_w = w - left - right;
	double lo = INFINITY, hi = -INFINITY, nlo, nhi, step, h, base;
	size_t n_finite = 0;

	for (size_t i = 0; i < n_series; i++)
		for (size_t j = 0; j < n_values[i]; j++)
			if (isfinite(values[i][j])) {
				lo = fmin(lo, values[i][j]);
				hi = fmax(hi, values[i][j]);
				n_finite++;
			}
	if (!n_finite)
		return empty_chart(b, title);
	cfl_svg_nice_range(lo, hi, 6, &nlo, &nhi, &step);
	h = top + (double)n_series * row_h + bottom;
	base = top + (double)n_series * row_h;
#define X(v) (left + ((v) - nlo) / (nhi - nlo) * plot_w)
	if (begin(b, (int)w, (int)h, title))
		return -1;
	/* grid and axis */
	for (double t = nlo; t <= nhi + step * 1e-9; t += step) {
		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				      "y2=\"%.1f\" stroke=\"" C_GRID "\"/>\n",
				   X(t), top, X(t), base) ||
		    cfl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
				      "fill=\"" C_AXIS "\">", X(t), base + 16) ||
		    put_tick(b, t, step) || cfl_buf_puts(b, "</text>\n"))
			return -1;
	}
	if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			      "stroke=\"" C_AXIS "\"/>\n", left, base, w - right, base) ||
	    text(b, left + plot_w / 2, base + 36, "middle", NULL, xlabel))
		return -1;
	for (size_t i = 0; i < n_series; i++) {
		const char *col = highlight && highlight[i] ? C_ENSEMBLE : C_MODEL;
		double cy = top + (double)i * row_h + row_h / 2, q[5];
		double *fin = malloc((n_values[i] + 1) * sizeof(double));
		size_t nf = 0;

		if (!fin)
			return -1;
		for (size_t j = 0; j < n_values[i]; j++)
			if (isfinite(values[i][j]))
				fin[nf++] = values[i][j];
		if ((i % 2 && cfl_buf_printf(b, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" "
						"height=\"%.0f\" fill=\"#000\" "
						"fill-opacity=\"0.03\"/>\n",
					     cy - row_h / 2, w, row_h)) ||
		    text(b, left - 8, cy + 4, "end", NULL, names[i])) {
			free(fin);
			return -1;
		}
		if (nf >= 2) {
			cfl_svg_quartiles(fin, nf, q);
			if (cfl_buf_printf(b, "<g stroke=\"%s\" fill=\"none\">"
					      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
					      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
					      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
					      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" "
					      "fill=\"%s\" fill-opacity=\"0.18\"/>"
					      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
					      "stroke-width=\"2\"/></g>\n",
					   col, X(q[0]), cy, X(q[4]), cy,
					   X(q[0]), cy - 5, X(q[0]), cy + 5,
					   X(q[4]), cy - 5, X(q[4]), cy + 5,
					   X(q[1]), cy - 8, X(q[3]) - X(q[1]), col,
					   X(q[2]), cy - 8, X(q[2]), cy + 8)) {
				free(fin);
				return -1;
			}
			for (size_t j = 0; j < nf; j++)
				if (cfl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
						      "fill=\"%s\" fill-opacity=\"0.75\"/>\n",
						   X(fin[j]),
						   cy + ((double)(j % 5) - 2) * 2.5, col)) {
					free(fin);
					return -1;
				}
		} else if (nf == 1) {
			double x = X(fin[0]);

			if (cfl_buf_printf(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f "
					      "%.1f,%.1f\" fill=\"%s\"/>\n",
					   x, cy - 7, x + 7, cy, x, cy + 7, x - 7, cy, col)) {
				free(fin);
				return -1;
			}
		} else if (text(b, left + 6, cy + 4, "start", " fill=\"#888\"",
				"no values")) {
			free(fin);
			return -1;
		}
		free(fin);
	}
#undef X
	return cfl_buf_puts(b, "</svg>\n");
}

/* ---- svg: scatter plots ---- */

/* A fixed sideways shift of point i in [-0.3, 0.3) of a category's band:
 * pseudo-random (a multiplicative hash), so the same data gives the same
 * picture. */
static double jitter(size_t i)
{
	uint32_t h = (uint32_t)(i + 1) * 2654435761u;

	return ((double)(h >> 8) / 16777216.0 - 0.5) * 0.6;
}

/* <title>s</title> when s is set: the tooltip of the element it sits in. */
static int tip(struct cfl_buf *b, const char *s)
{
	return s && s[0] && (cfl_buf_puts(b, "<title>") || cfl_svg_escape(b, s) ||
			     cfl_buf_puts(b, "</title>"));
}

static int cmp_by_x(const void *a, const void *b, void *ctx)
{
	const double *x = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	return x[i] < x[j] ? -1 : x[i] > x[j] ? 1 : (i > j) - (i < j);
}

int cfl_svg_scatter(struct cfl_buf *b, const char *title, const char *xlabel,
		const char *ylabel, size_t n, const double *x, const double *y,
		const char *const *cats, size_t n_cats, int xlog, int best_line,
		const char *const *tips)
{
	const double w = 480, h = 320, left = 70, right = 24, top = 34,
		     bottom = 52;
	const double pw = w - left - right, ph = h - top - bottom;
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	double nxlo = 0, nxhi = 1, xstep = 1, nylo, nyhi, ystep;
	size_t n_ok = 0, best = 0, *order = NULL;
	int rc = -1;

	for (size_t i = 0; i < n; i++) {
		double xv = x[i];

		if (!isfinite(xv) || !isfinite(y[i]) || (xlog && !(xv > 0)) ||
		    (cats && (xv < 0 || xv >= (double)n_cats)))
			continue;
		if (xlog)
			xv = log10(xv);
		xlo = fmin(xlo, xv);
		xhi = fmax(xhi, xv);
		ylo = fmin(ylo, y[i]);
		yhi = fmax(yhi, y[i]);
		if (!n_ok || y[i] > y[best])
			best = i;
		n_ok++;
	}
	if (!n_ok)
		return empty_chart(b, title);
	cfl_svg_nice_range(ylo, yhi, 5, &nylo, &nyhi, &ystep);
	if (xlog) {
		nxlo = floor(xlo);
		nxhi = ceil(xhi);
		if (nxhi <= nxlo)
			nxhi = nxlo + 1;
		xstep = 1;
	} else if (!cats) {
		int whole = 1;

		for (size_t i = 0; i < n && whole; i++)
			whole = !isfinite(x[i]) || x[i] == floor(x[i]);
		cfl_svg_nice_range(xlo, xhi, 6, &nxlo, &nxhi, &xstep);
		if (whole && xstep < 1) {	/* counts: no half ticks */
			xstep = 1;
			nxlo = floor(xlo);
			nxhi = fmax(ceil(xhi), nxlo + 1);
		}
	}
#define PX(v) (cats ? left + ((v) + 0.5) / (double)n_cats * pw \
		    : left + (((xlog ? log10(v) : (v))) - nxlo) / (nxhi - nxlo) * pw)
#define PY(v) (top + ph - ((v) - nylo) / (nyhi - nylo) * ph)
	if (begin(b, (int)w, (int)h, title))
		return -1;
	for (double t = nylo; t <= nyhi + ystep * 1e-9; t += ystep)
		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				      "stroke=\"" C_GRID "\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
				      "text-anchor=\"end\" fill=\"" C_AXIS "\">",
				   left, PY(t), w - right, PY(t), left - 6, PY(t) + 4) ||
		    put_tick(b, t, ystep) || cfl_buf_puts(b, "</text>\n"))
			return -1;
	if (cats) {
		for (size_t c = 0; c < n_cats; c++)
			if (text(b, PX((double)c), top + ph + 16, "middle",
				 " fill=\"" C_AXIS "\"", cats[c]))
				return -1;
	} else {
		for (double t = nxlo; t <= nxhi + xstep * 1e-9; t += xstep) {
			double px = left + (t - nxlo) / (nxhi - nxlo) * pw;

			if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
					      "y2=\"%.1f\" stroke=\"" C_GRID "\"/>\n"
					      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
					      "fill=\"" C_AXIS "\">",
					   px, top, px, top + ph, px, top + ph + 16))
				return -1;
			if (xlog ? cfl_buf_printf(b, "1e%d", (int)lround(t))
				 : put_tick(b, t, xstep))
				return -1;
			if (cfl_buf_puts(b, "</text>\n"))
				return -1;
		}
	}
	if (cfl_buf_printf(b, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" "
			      "stroke=\"" C_AXIS "\"/>\n",
			   left, top, top + ph, w - right) ||
	    text(b, left + pw / 2, h - 12, "middle", NULL, xlabel) ||
	    cfl_buf_printf(b, "<text transform=\"translate(16 %.1f) rotate(-90)\" "
			      "text-anchor=\"middle\">", top + ph / 2) ||
	    cfl_svg_escape(b, ylabel) || cfl_buf_puts(b, "</text>\n"))
		return -1;
	if (best_line && !cats) {
		struct cfl_err ignored;
		double run = -INFINITY;
		size_t k = 0;

		if (!(order = cfl_calloc(n + 1, sizeof(size_t), &ignored)))
			return -1;
		for (size_t i = 0; i < n; i++)
			if (isfinite(x[i]) && isfinite(y[i]) && (!xlog || x[i] > 0))
				order[k++] = i;
		qsort_r(order, k, sizeof(size_t), cmp_by_x, (void *)x);
		if (cfl_buf_puts(b, "<path fill=\"none\" stroke=\"" C_ENSEMBLE
				    "\" stroke-width=\"1.5\" d=\""))
			goto out;
		for (size_t i = 0; i < k; i++) {
			size_t p = order[i];

			if (i == 0) {
				run = y[p];
				if (cfl_buf_printf(b, "M%.1f %.1f", PX(x[p]), PY(run)))
					goto out;
				continue;
			}
			if (cfl_buf_printf(b, "H%.1f", PX(x[p])))
				goto out;
			if (y[p] > run) {
				run = y[p];
				if (cfl_buf_printf(b, "V%.1f", PY(run)))
					goto out;
			}
		}
		if (cfl_buf_puts(b, "\"/>\n"))
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]) || (xlog && !(x[i] > 0)) ||
		    (cats && (x[i] < 0 || x[i] >= (double)n_cats)))
			continue;
		if (cfl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\""
				      C_MODEL "\" fill-opacity=\"0.7\">",
				   PX(x[i]) + (cats ? jitter(i) * pw / (double)n_cats : 0),
				   PY(y[i])) ||
		    tip(b, tips ? tips[i] : NULL) || cfl_buf_puts(b, "</circle>\n"))
			goto out;
	}
	if (cfl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" "
			      "stroke=\"" C_ENSEMBLE "\" stroke-width=\"2\"/>\n",
			   PX(x[best]) + (cats ? jitter(best) * pw / (double)n_cats : 0),
			   PY(y[best])) ||
	    cfl_buf_puts(b, "</svg>\n"))
		goto out;
#undef PX
#undef PY
	rc = 0;
out:
	free(order);
	return rc;
}

/* ---- svg: bars (parameter importance) ---- */

int cfl_svg_bars(struct cfl_buf *b, const char *title, const char *xlabel,
	     size_t n, const char *const *names, const double *values)
{
	const double left = 160, right = 70, top = 34, row_h = 24, bottom = 40;
	const double w = 760, pw = w - left - right;
	double h = top + (double)n * row_h + bottom, base = top + (double)n * row_h;

	if (!n)
		return empty_chart(b, title);
	if (begin(b, (int)w, (int)h, title))
		return -1;
	for (int k = 0; k <= 4; k++) {
		double x = left + k / 4.0 * pw;

		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				      "y2=\"%.1f\" stroke=\"" C_GRID "\"/>\n"
				      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
				      "fill=\"" C_AXIS "\">%g</text>\n",
				   x, top, x, base, x, base + 16, k / 4.0))
			return -1;
	}
	if (text(b, left + pw / 2, base + 34, "middle", NULL, xlabel))
		return -1;
	for (size_t i = 0; i < n; i++) {
		double v = isfinite(values[i]) ? fmin(fmax(values[i], 0), 1) : 0;
		double cy = top + (double)i * row_h + row_h / 2;

		if (text(b, left - 8, cy + 4, "end", NULL, names[i]) ||
		    cfl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				      "height=\"14\" fill=\"" C_MODEL "\">",
				   left, cy - 7, fmax(v * pw, 1)) ||
		    tip(b, names[i]) ||
		    cfl_buf_printf(b, "</rect>\n<text x=\"%.1f\" y=\"%.1f\" "
				      "fill=\"" C_AXIS "\">", left + v * pw + 6, cy + 4) ||
		    cfl_svg_num(b, values[i]) || cfl_buf_puts(b, "</text>\n"))
			return -1;
	}
	return cfl_buf_puts(b, "</svg>\n");
}

/* ---- svg: parallel coordinates ---- */

/* Where value v of axis a sits, 0 (bottom) .. 1 (top), or NaN; lo and hi
 * are the axis's finite range (log10 of it on a log axis). */
static double axis_pos(const struct svg_axis *a, double v, double lo, double hi)
{
	if (!isfinite(v) || (a->log && !(v > 0)))
		return NAN;
	if (a->cats)
		return a->n_cats > 1 ? v / (double)(a->n_cats - 1) : 0.5;
	if (a->log)
		v = log10(v);
	return hi > lo ? (v - lo) / (hi - lo) : 0.5;
}

int cfl_svg_parallel(struct cfl_buf *b, const char *title, size_t n_axes,
		 const struct svg_axis *axes, size_t n, const double *color,
		 const char *const *tips)
{
	const double w = 960, h = 360, left = 60, right = 60, top = 50,
		     bottom = 56;
	const double pw = w - left - right, ph = h - top - bottom;
	double *lo = calloc(n_axes + 1, sizeof(double));
	double *hi = calloc(n_axes + 1, sizeof(double));
	double clo = INFINITY, chi = -INFINITY;
	int rc = -1;

	if (!lo || !hi)
		goto out;
	if (n_axes < 2 || !n) {
		rc = empty_chart(b, title);
		goto out;
	}
	for (size_t a = 0; a < n_axes; a++) {
		lo[a] = INFINITY;
		hi[a] = -INFINITY;
		for (size_t i = 0; i < n; i++) {
			double v = axes[a].v[i];

			if (!isfinite(v) || (axes[a].log && !(v > 0)))
				continue;
			v = axes[a].log ? log10(v) : v;
			lo[a] = fmin(lo[a], v);
			hi[a] = fmax(hi[a], v);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (isfinite(color[i])) {
			clo = fmin(clo, color[i]);
			chi = fmax(chi, color[i]);
		}
#define AX(a) (left + (n_axes > 1 ? (double)(a) / (double)(n_axes - 1) : 0.5) * pw)
#define AY(p) (top + (1 - (p)) * ph)
	if (begin(b, (int)w, (int)h, title))
		goto out;
	/* the lines first, the axes over them */
	for (size_t i = 0; i < n; i++) {
		double t = isfinite(color[i]) ? (chi > clo ? (color[i] - clo) / (chi - clo) : 1) : -1;
		int pen = 0;

		/* light blue (low) to dark blue (high); grey without a score */
		if (t < 0 ? cfl_buf_puts(b, "<path fill=\"none\" stroke=\"#bbb\" d=\"")
			  : cfl_buf_printf(b, "<path fill=\"none\" stroke=\"rgb(%d,%d,%d)\" "
					      "stroke-opacity=\"0.8\" stroke-width=\"1.5\" d=\"",
					   (int)lround(190 - 160 * t), (int)lround(215 - 140 * t),
					   (int)lround(240 - 80 * t)))
			goto out;
		for (size_t a = 0; a < n_axes; a++) {
			double p = axis_pos(&axes[a], axes[a].v[i], lo[a], hi[a]);

			if (p != p) {
				pen = 0;
				continue;
			}
			if (cfl_buf_printf(b, "%s%.1f %.1f", pen ? "L" : "M", AX(a), AY(p)))
				goto out;
			pen = 1;
		}
		if (cfl_buf_puts(b, "\">") || tip(b, tips ? tips[i] : NULL) ||
		    cfl_buf_puts(b, "</path>\n"))
			goto out;
	}
	for (size_t a = 0; a < n_axes; a++) {
		const struct svg_axis *ax = &axes[a];

		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				      "y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n",
				   AX(a), top, AX(a), top + ph) ||
		    text(b, AX(a), top - 10, "middle", " font-weight=\"bold\"", ax->name))
			goto out;
		if (ax->cats) {
			for (size_t c = 0; c < ax->n_cats; c++)
				if (text(b, AX(a) + 4, AY(axis_pos(ax, (double)c, 0, 0)) + 4,
					 "start", " fill=\"" C_AXIS "\"", ax->cats[c]))
					goto out;
		} else if (lo[a] <= hi[a]) {
			/* the two ends of the axis */
			for (int e = 0; e < 2; e++) {
				double v = e ? hi[a] : lo[a];

				if (cfl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" "
						      "text-anchor=\"start\" fill=\"" C_AXIS "\">",
						   AX(a) + 4, e ? top + 10 : top + ph) ||
				    cfl_svg_num(b, ax->log ? pow(10, v) : v) ||
				    cfl_buf_puts(b, "</text>\n"))
					goto out;
			}
		}
	}
#undef AX
#undef AY
	rc = cfl_buf_puts(b, "</svg>\n");
out:
	free(lo);
	free(hi);
	return rc;
}

/* ---- svg: a timeline of trials per worker ---- */

int cfl_svg_timeline(struct cfl_buf *b, const char *title, size_t n_lanes,
		 const char *const *lanes, size_t n, const struct svg_span *spans)
{
	const double left = 170, right = 30, top = 34, lane_h = 22, bottom = 46;
	const double w = 960, pw = w - left - right;
	double end = 0, nlo, nhi, step, base, h;

	for (size_t i = 0; i < n; i++)
		if (isfinite(spans[i].end))
			end = fmax(end, spans[i].end);
	if (!n || !n_lanes || !(end > 0))
		return empty_chart(b, title);
	cfl_svg_nice_range(0, end, 8, &nlo, &nhi, &step);
	nlo = 0;
	base = top + (double)n_lanes * lane_h;
	h = base + bottom;
#define TX(v) (left + (v) / nhi * pw)
	if (begin(b, (int)w, (int)h, title))
		return -1;
	for (double t = 0; t <= nhi + step * 1e-9; t += step)
		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				      "y2=\"%.1f\" stroke=\"" C_GRID "\"/>\n"
				      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
				      "fill=\"" C_AXIS "\">", TX(t), top, TX(t), base,
				   TX(t), base + 16) ||
		    put_tick(b, t, step) || cfl_buf_puts(b, "</text>\n"))
			return -1;
	if (text(b, left + pw / 2, base + 36, "middle", NULL,
		 "seconds since the first trial started"))
		return -1;
	for (size_t l = 0; l < n_lanes; l++) {
		double cy = top + (double)l * lane_h + lane_h / 2;

		if ((l % 2 && cfl_buf_printf(b, "<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" "
						"height=\"%.0f\" fill=\"#000\" "
						"fill-opacity=\"0.03\"/>\n",
					     cy - lane_h / 2, w, lane_h)) ||
		    text(b, left - 8, cy + 4, "end", NULL, lanes[l]))
			return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct svg_span *s = &spans[i];
		double cy = top + (double)s->lane * lane_h + lane_h / 2;

		if (s->lane >= n_lanes || !isfinite(s->start) || !isfinite(s->end) ||
		    s->end < s->start)
			continue;
		if (cfl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				      "height=\"14\" fill=\"%s\" fill-opacity=\"0.75\" "
				      "stroke=\"#fff\" stroke-width=\"0.5\">",
				   TX(s->start), cy - 7,
				   fmax(TX(s->end) - TX(s->start), 1.5),
				   s->failed ? C_ENSEMBLE : C_MODEL) ||
		    tip(b, s->tip) || cfl_buf_puts(b, "</rect>\n"))
			return -1;
	}
#undef TX
	return cfl_buf_puts(b, "</svg>\n");
}

/* ---- svg: series of points (auto's leaderboard and search) ---- */

static const char *const palette[] = {
	"#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2",
	"#72b7b2", "#9d755d", "#eeca3b",
};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))

int cfl_svg_series(struct cfl_buf *b, const char *title, const char *xlabel,
		   const char *ylabel, size_t n, const double *x, const double *y,
		   const size_t *series, size_t n_series,
		   const char *const *series_names,
		   const struct svg_series_opts *o)
{
	const double w = 720, h = 360, left = 70, right = 150, top = 34,
		     bottom = 52;
	const double pw = w - left - right, ph = h - top - bottom;
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	double nxlo, nxhi, xstep, nylo, nyhi, ystep;
	size_t n_ok = 0, *order = NULL;
	struct cfl_err ignored;
	int rc = -1;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			continue;
		xlo = fmin(xlo, x[i]);
		xhi = fmax(xhi, x[i]);
		ylo = fmin(ylo, y[i]);
		yhi = fmax(yhi, y[i]);
		n_ok++;
	}
	if (!n_ok)
		return empty_chart(b, title);
	if (o->diagonal) {	/* one scale on both axes */
		xlo = ylo = fmin(xlo, ylo);
		xhi = yhi = fmax(xhi, yhi);
	}
	cfl_svg_nice_range(ylo, yhi, 5, &nylo, &nyhi, &ystep);
	cfl_svg_nice_range(xlo, xhi, 6, &nxlo, &nxhi, &xstep);
#define PX(v) (left + ((v) - nxlo) / (nxhi - nxlo) * pw)
#define PY(v) (top + ph - ((v) - nylo) / (nyhi - nylo) * ph)
	if (begin(b, (int)w, (int)h, title))
		return -1;
	for (double t = nylo; t <= nyhi + ystep * 1e-9; t += ystep)
		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				      "stroke=\"" C_GRID "\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
				      "text-anchor=\"end\" fill=\"" C_AXIS "\">",
				   left, PY(t), left + pw, PY(t), left - 6, PY(t) + 4) ||
		    put_tick(b, t, ystep) || cfl_buf_puts(b, "</text>\n"))
			return -1;
	for (double t = nxlo; t <= nxhi + xstep * 1e-9; t += xstep)
		if (cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				      "stroke=\"" C_GRID "\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
				      "text-anchor=\"middle\" fill=\"" C_AXIS "\">",
				   PX(t), top, PX(t), top + ph, PX(t), top + ph + 16) ||
		    put_tick(b, t, xstep) || cfl_buf_puts(b, "</text>\n"))
			return -1;
	if (cfl_buf_printf(b, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" "
			      "stroke=\"" C_AXIS "\"/>\n", left, top, top + ph, left + pw) ||
	    text(b, left + pw / 2, h - 12, "middle", NULL, xlabel) ||
	    cfl_buf_printf(b, "<text transform=\"translate(16 %.1f) rotate(-90)\" "
			      "text-anchor=\"middle\">", top + ph / 2) ||
	    cfl_svg_escape(b, ylabel) || cfl_buf_puts(b, "</text>\n"))
		return -1;
	if (o->diagonal &&
	    cfl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			      "stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>\n",
			   PX(fmax(nxlo, nylo)), PY(fmax(nxlo, nylo)),
			   PX(fmin(nxhi, nyhi)), PY(fmin(nxhi, nyhi))))
		return -1;
	if (!(order = cfl_calloc(n + 1, sizeof(size_t), &ignored)))
		return -1;
	for (size_t s = 0; o->best_line && s < n_series; s++) {
		size_t k = 0;
		double run = 0;

		for (size_t i = 0; i < n; i++)
			if (series[i] == s && isfinite(x[i]) && isfinite(y[i]))
				order[k++] = i;
		if (!k)
			continue;
		qsort_r(order, k, sizeof(size_t), cmp_by_x, (void *)x);
		if (cfl_buf_printf(b, "<path fill=\"none\" stroke=\"%s\" stroke-width="
				      "\"1.5\" d=\"", palette[s % N_PALETTE]))
			goto out;
		for (size_t i = 0; i < k; i++) {
			size_t p = order[i];

			if (!i) {
				run = y[p];
				if (cfl_buf_printf(b, "M%.1f %.1f", PX(x[p]), PY(run)))
					goto out;
				continue;
			}
			if (cfl_buf_printf(b, "H%.1f", PX(x[p])))
				goto out;
			if (o->sign * y[p] > o->sign * run) {
				run = y[p];
				if (cfl_buf_printf(b, "V%.1f", PY(run)))
					goto out;
			}
		}
		if (cfl_buf_puts(b, "\"/>\n"))
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			continue;
		if (cfl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
				      "fill-opacity=\"0.75\">", PX(x[i]), PY(y[i]),
				   palette[series[i] % N_PALETTE]) ||
		    tip(b, o->tips ? o->tips[i] : NULL) || cfl_buf_puts(b, "</circle>\n"))
			goto out;
		if (o->labels && o->labels[i] &&
		    text(b, PX(x[i]) + 6, PY(y[i]) - 5, "start",
			 " font-size=\"10\" fill=\"#333\"", o->labels[i]))
			goto out;
	}
	if (o->ring >= 0 && (size_t)o->ring < n && isfinite(x[o->ring]) &&
	    isfinite(y[o->ring]) &&
	    cfl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" "
			      "stroke=\"" C_ENSEMBLE "\" stroke-width=\"2\"/>\n",
			   PX(x[o->ring]), PY(y[o->ring])))
		goto out;
	for (size_t s = 0; s < n_series; s++) {
		double ly = top + 8 + 18 * (double)s;

		if (cfl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>\n",
				   left + pw + 16, ly, palette[s % N_PALETTE]) ||
		    text(b, left + pw + 26, ly + 4, "start", NULL, series_names[s]))
			goto out;
	}
	if (cfl_buf_puts(b, "</svg>\n"))
		goto out;
#undef PX
#undef PY
	rc = 0;
out:
	free(order);
	return rc;
}
