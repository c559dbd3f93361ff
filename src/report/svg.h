/*
 * Internal to src/report: small SVG charts drawn as text into a cfl_buf,
 * for the HTML report.  Each chart is one <svg> element, sized in pixels,
 * with no script, no external reference and no xmlns (it is inline HTML).
 * NaN values are left out of every chart; a chart with no finite value
 * says so instead of drawing axes.  Every function returns 0, or -1 when
 * the buffer cannot grow.
 */
#ifndef CFL_REPORT_SVG_H
#define CFL_REPORT_SVG_H

#include <stddef.h>

#include "cfl/core.h"

/* Appends s with & < > " ' escaped for HTML text and attributes. */
int cfl_svg_escape(struct cfl_buf *b, const char *s);

/* Quartiles of v (n > 0, finite values, any order) with linear
 * interpolation between order statistics (numpy's default):
 * q[0] min, q[1] Q1, q[2] median, q[3] Q3, q[4] max. */
void cfl_svg_quartiles(const double *v, size_t n, double q[5]);

/* Round axis limits and a tick step covering [lo, hi] with about n_ticks
 * ticks (1, 2 or 5 times a power of ten). */
void cfl_svg_nice_range(double lo, double hi, int n_ticks, double *nlo,
		    double *nhi, double *step);

/* One row per series: its values over repeats as a box (quartiles, median,
 * whiskers to min and max) with the values drawn over it as points (a
 * strip plot).  Series with one value (ensembles) are a diamond.
 * highlight[i] (may be NULL) colours series i as an ensemble. */
int cfl_svg_box_strip(struct cfl_buf *b, const char *title, const char *xlabel,
		  size_t n_series, const char *const *names,
		  const size_t *n_values, const double *const *values,
		  const int *highlight);

/* v at the shortest precision that reads back exactly or at 6
 * significant digits (%.6g: trailing zeros dropped), "nan" for NaN, never
 * "-0". */
int cfl_svg_num(struct cfl_buf *b, double v);

/* A scatter of (x[i], y[i]).  With cats (n_cats names) x holds category
 * indices, drawn evenly spaced and labelled, each point shifted sideways
 * by a fixed pseudo-random amount (jitter: equal scores stay visible);
 * else x is numeric, on a log scale when xlog.  With best_line the
 * running maximum of y in order of x is drawn as a step line (a search's
 * best so far).  The point with the highest y is ringed.  tips (may be
 * NULL) gives each point a <title> tooltip. */
int cfl_svg_scatter(struct cfl_buf *b, const char *title, const char *xlabel,
		const char *ylabel, size_t n, const double *x, const double *y,
		const char *const *cats, size_t n_cats, int xlog, int best_line,
		const char *const *tips);

/* Horizontal bars, one per name, values in [0, 1] drawn as shares with
 * their value printed beside; in the order given. */
int cfl_svg_bars(struct cfl_buf *b, const char *title, const char *xlabel,
	     size_t n, const char *const *names, const double *values);

/* One axis of a parallel-coordinates plot: n values, numeric (on a log
 * scale when log) or category indices into cats. */
struct svg_axis {
	const char *name;
	const double *v;	/* (n) NaN: the line skips this axis */
	const char *const *cats;	/* (n_cats) or NULL */
	size_t n_cats;
	int log;
};

/* Parallel coordinates: one vertical axis per entry of axes, one line per
 * item through its values, coloured by color[i] (light: low, dark: high;
 * NaN grey), with tips[i] (may be NULL) as its tooltip. */
int cfl_svg_parallel(struct cfl_buf *b, const char *title, size_t n_axes,
		 const struct svg_axis *axes, size_t n, const double *color,
		 const char *const *tips);

/* One bar of a timeline: lane (0 .. n_lanes-1), start and end in seconds
 * from the timeline's origin, failed drawn red, tip its tooltip. */
struct svg_span {
	size_t lane;
	double start, end;
	int failed;
	const char *tip;
};

/* A timeline: one lane per name, each span a bar from start to end. */
int cfl_svg_timeline(struct cfl_buf *b, const char *title, size_t n_lanes,
		 const char *const *lanes, size_t n, const struct svg_span *spans);

/* What cfl_svg_series draws beside the points. */
struct svg_series_opts {
	int sign;		/* +1: higher y is better, -1: lower */
	int best_line;		/* per series the best y so far in order of x,
				 * as a step line (a search over time) */
	int diagonal;		/* the line y = x (two scores of one thing) */
	long ring;		/* the point ringed (rank 1), or -1 */
	const char *const *labels;	/* (n) a text beside each point, or NULL */
	const char *const *tips;	/* (n) tooltips, or NULL */
};

/* Points (x[i], y[i]) of n_series series, point i in series[i], each series
 * its own colour and named in a legend; non-finite points are left out.
 * 720 x 360 px. */
int cfl_svg_series(struct cfl_buf *b, const char *title, const char *xlabel,
		   const char *ylabel, size_t n, const double *x, const double *y,
		   const size_t *series, size_t n_series,
		   const char *const *series_names,
		   const struct svg_series_opts *o);

#endif
