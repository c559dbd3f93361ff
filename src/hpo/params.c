/*
 * The params language: one parameter per line, `name = choice(a, b) |
 * uniform(lo, hi) | loguniform(lo, hi) | int(lo, hi) | value`, '#'
 * comments and blank lines.  Lines are split by regular expressions
 * (core's, PCRE2 syntax); every error is "file:line:col: what" followed by
 * the line and a caret.
 *
 * Invariant: a space that parsed is valid (ranges ordered, log ranges
 * positive, values accepted by the model's schema when one was given).
 */
#include "cfl/hpo.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TEXT 256		/* longest name or value */
#define MAX_CHOICES 4096

void cfl_space_init(struct cfl_space *s)
{
	memset(s, 0, sizeof(*s));
}

static void param_release(struct cfl_space_param *p)
{
	free(p->name);
	for (size_t i = 0; i < p->n_choices; i++)
		free(p->choices[i]);
	free(p->choices);
	free(p->value);
	memset(p, 0, sizeof(*p));
}

void cfl_space_release(struct cfl_space *s)
{
	for (size_t i = 0; i < s->n_params; i++)
		param_release(&s->params[i]);
	free(s->params);
	free(s->name);
	cfl_space_init(s);
}

int cfl_space_find(const struct cfl_space *s, const char *name)
{
	for (size_t i = 0; i < s->n_params; i++)
		if (strcmp(s->params[i].name, name) == 0)
			return (int)i;
	return -1;
}

size_t cfl_space_n_free(const struct cfl_space *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_params; i++)
		n += s->params[i].dist != CFL_DIST_FIXED;
	return n;
}

/* ---- error messages with the line and a caret ---- */

struct ctx {
	const char *name;	/* file name */
	const char *line;	/* start of the current line (not NUL-terminated) */
	size_t line_len;	/* text before any comment */
	size_t show_len;	/* the whole line, shown under errors */
	size_t line_no;
	const struct cfl_model_ops *ops;
	struct cfl_err *err;
};

/* "name:line:col: msg\n    text\n    ^" where col is a 0-based byte offset
 * into the line; returns -1. */
static int perr(const struct ctx *c, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(const struct ctx *c, size_t col, const char *fmt, ...)
{
	char msg[512], shown[201];
	size_t n = c->show_len < 200 ? c->show_len : 200;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)c->line[i];

		/* tabs and control bytes as spaces keep the caret aligned */
		shown[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	shown[n] = '\0';
	if (col > n)
		col = n;
	return cfl_err_set(c->err, "%s:%zu:%zu: %s\n    %s\n    %*s^", c->name,
			   c->line_no, col + 1, msg, shown, (int)col, "");
}

/* ---- patterns ---- */

struct patterns {
	struct cfl_regex *assign;	/* name = rhs */
	struct cfl_regex *call;		/* fn(args) */
	struct cfl_regex *bare;		/* an unquoted value */
	struct cfl_regex *lead;		/* a name at the start of a line */
	struct cfl_regex *last;		/* the last one matched */
};

static const char RE_ASSIGN[] =
	"^[ \\t]*([A-Za-z_][A-Za-z0-9_.]*)[ \\t]*=[ \\t]*(.*?)[ \\t\\r]*$";
static const char RE_CALL[] = "^([A-Za-z_][A-Za-z0-9_]*)[ \\t]*\\((.*)\\)$";
static const char RE_BARE[] = "^[^\\s\"'(),=#]+$";
static const char RE_LEAD[] = "^[ \\t]*([A-Za-z_][A-Za-z0-9_.]*)?[ \\t]*";

static void patterns_free(struct patterns *p)
{
	cfl_regex_free(p->assign);
	cfl_regex_free(p->call);
	cfl_regex_free(p->bare);
	cfl_regex_free(p->lead);
}

static int patterns_init(struct patterns *p, struct cfl_err *err)
{
	memset(p, 0, sizeof(*p));
	p->assign = cfl_regex_new(RE_ASSIGN, CFL_REGEX_DOTALL, NULL);
	p->call = cfl_regex_new(RE_CALL, CFL_REGEX_DOTALL, NULL);
	p->bare = cfl_regex_new(RE_BARE, CFL_REGEX_DOTALL, NULL);
	p->lead = cfl_regex_new(RE_LEAD, CFL_REGEX_DOTALL, NULL);
	if (!p->assign || !p->call || !p->bare || !p->lead) {
		patterns_free(p);
		return cfl_err_set(err, "cannot compile the params patterns");
	}
	return 0;
}

/* Matches s[0..n); returns 1 with the groups kept for group(), 0 on no
 * match. */
static int match(struct patterns *p, struct cfl_regex *re, const char *s,
		 size_t n)
{
	p->last = re;
	return cfl_regex_match(re, s, n, NULL) == 1;
}

/* Group g of the last match (0, 0 when it did not take part). */
static void group(struct patterns *p, int g, size_t *start, size_t *len)
{
	cfl_regex_group(p->last, (unsigned)g, start, len);
}

/* ---- values ---- */

/* A value token at line offset col: "quoted", 'quoted' or bare.  Copies the
 * unquoted text into out.  Returns 0 or -1 with the error reported. */
static int parse_value(struct ctx *c, struct patterns *p, size_t col,
		       size_t n, char *out)
{
	const char *v = c->line + col;

	if (n == 0)
		return perr(c, col, "missing value");
	if (v[0] == '"' || v[0] == '\'') {
		if (n < 2 || v[n - 1] != v[0])
			return perr(c, col, "unterminated quoted value");
		for (size_t i = 1; i + 1 < n; i++)
			if (v[i] == v[0] || (unsigned char)v[i] < 0x20)
				return perr(c, col + i, "unexpected character in quoted value");
		if (n - 2 >= MAX_TEXT)
			return perr(c, col, "value too long (at most %d bytes)",
				    MAX_TEXT - 1);
		memcpy(out, v + 1, n - 2);
		out[n - 2] = '\0';
		return 0;
	}
	if (!match(p, p->bare, v, n)) {
		size_t i = 0;

		while (i < n && !isspace((unsigned char)v[i]) &&
		       !strchr("\"'(),=#", v[i]))
			i++;
		return perr(c, col + i,
			    "unexpected '%c' in value (quote values with spaces, commas or parentheses)",
			    isprint((unsigned char)v[i]) ? v[i] : '?');
	}
	if (n >= MAX_TEXT)
		return perr(c, col, "value too long (at most %d bytes)",
			    MAX_TEXT - 1);
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* A finite number at col; -1 with the error reported. */
static int parse_number(struct ctx *c, size_t col, const char *text,
			double *out)
{
	char *end;

	errno = 0;
	*out = strtod(text, &end);
	if (end == text || *end || !isfinite(*out) || errno == ERANGE)
		return perr(c, col, "expected a finite number, found '%s'", text);
	return 0;
}

/* ---- schema checks ---- */

static const struct cfl_param_spec *find_spec(const struct cfl_model_ops *ops,
					      const char *name)
{
	for (size_t i = 0; i < ops->n_params; i++)
		if (strcmp(ops->params[i].name, name) == 0)
			return &ops->params[i];
	return NULL;
}

/* Checks one value of name against the model; on failure reports the
 * model's message at col. */
static int check_value(struct ctx *c, size_t col, const char *name,
		       const char *value)
{
	struct cfl_params one;
	struct cfl_kv kv;
	struct cfl_err e;

	if (!c->ops)
		return 0;
	kv.key = (char *)name;
	kv.value = (char *)value;
	one.n = 1;
	one.kv = &kv;
	if (cfl_model_check_params(c->ops, &one, &e) == 0)
		return 0;
	return perr(c, col, "%s", e.msg);
}

static int unknown_param(struct ctx *c, size_t col, const char *name)
{
	char list[400];
	size_t n = 0;

	list[0] = '\0';
	for (size_t i = 0; i < c->ops->n_params && n < sizeof(list) - 1; i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      i ? ", " : "", c->ops->params[i].name);
	return perr(c, col, "%s has no parameter '%s' (it has: %s)",
		    c->ops->name, name, n ? list : "none");
}

/* ---- one line ---- */

struct arg {
	size_t col, len;	/* trimmed, in line offsets */
};

/* Splits args (line offsets [col, col+n)) at commas outside quotes. */
static int split_args(struct ctx *c, size_t col, size_t n, struct arg **out,
		      size_t *n_out)
{
	struct arg *a = NULL;
	size_t na = 0, start = col, end = col + n;
	char q = 0;

	*out = NULL;
	*n_out = 0;
	for (size_t i = col; i <= end; i++) {
		char ch = i < end ? c->line[i] : ',';

		if (q) {
			if (ch == q)
				q = 0;
			if (i < end)
				continue;
		} else if (ch == '"' || ch == '\'') {
			q = ch;
			continue;
		}
		if (ch != ',' && i < end)
			continue;
		if (na >= MAX_CHOICES) {
			free(a);
			return perr(c, i, "too many values (at most %d)",
				    MAX_CHOICES);
		}
		struct arg *t = cfl_realloc(a, (na + 1) * sizeof(*a), c->err);
		if (!t) {
			free(a);
			return -1;
		}
		a = t;
		size_t s = start, e = i;
		while (s < e && isspace((unsigned char)c->line[s]))
			s++;
		while (e > s && isspace((unsigned char)c->line[e - 1]))
			e--;
		a[na].col = s;
		a[na].len = e - s;
		na++;
		start = i + 1;
	}
	*out = a;
	*n_out = na;
	return 0;
}

static int parse_choice(struct ctx *c, struct patterns *p,
			struct cfl_space_param *sp, const struct arg *a,
			size_t na, size_t open_col)
{
	char v[MAX_TEXT];

	if (na == 1 && a[0].len == 0)
		return perr(c, open_col, "choice() needs at least one value");
	sp->choices = cfl_calloc(na, sizeof(char *), c->err);
	if (!sp->choices)
		return -1;
	for (size_t i = 0; i < na; i++) {
		if (parse_value(c, p, a[i].col, a[i].len, v))
			return -1;
		for (size_t j = 0; j < sp->n_choices; j++)
			if (strcmp(sp->choices[j], v) == 0)
				return perr(c, a[i].col, "choice value '%s' given twice", v);
		if (check_value(c, a[i].col, sp->name, v))
			return -1;
		sp->choices[sp->n_choices] = cfl_strdup(v, c->err);
		if (!sp->choices[sp->n_choices])
			return -1;
		sp->n_choices++;
	}
	return 0;
}

static int parse_range(struct ctx *c, struct patterns *p,
		       struct cfl_space_param *sp, const char *fn,
		       const struct arg *a, size_t na, size_t open_col)
{
	const struct cfl_param_spec *spec = c->ops ? find_spec(c->ops, sp->name) : NULL;
	char v[2][MAX_TEXT];
	double x[2];

	if (na != 2 || a[0].len == 0 || (na == 2 && a[1].len == 0))
		return perr(c, na == 2 && a[0].len ? a[1].col : open_col,
			    "%s() takes two numbers (low, high), got %s", fn,
			    na == 1 && a[0].len == 0 ? "none" :
			    na == 1 ? "one" : na == 2 ? "an empty one" : "more");
	for (int i = 0; i < 2; i++)
		if (parse_value(c, p, a[i].col, a[i].len, v[i]) ||
		    parse_number(c, a[i].col, v[i], &x[i]))
			return -1;
	if (spec && spec->type != CFL_P_INT && spec->type != CFL_P_FLOAT)
		return perr(c, open_col - strlen(fn),
			    "'%s' is not a number parameter of %s: use choice(...) or a fixed value",
			    sp->name, c->ops->name);
	if (spec && spec->type == CFL_P_INT)
		sp->integer = 1;
	if (sp->dist == CFL_DIST_INT)
		sp->integer = 1;
	if (sp->integer)
		for (int i = 0; i < 2; i++)
			if (x[i] != floor(x[i]) || fabs(x[i]) > 9.0e15)
				return perr(c, a[i].col,
					    "'%s' takes integers, found '%s'",
					    sp->name, v[i]);
	if (sp->dist == CFL_DIST_LOGUNIFORM && x[0] <= 0)
		return perr(c, a[0].col,
			    "loguniform() needs a positive low end, found '%s'", v[0]);
	if (sp->integer ? x[0] > x[1] : x[0] >= x[1])
		return perr(c, a[1].col, "empty range: high %s is not above low %s",
			    v[1], v[0]);
	for (int i = 0; i < 2; i++)
		if (check_value(c, a[i].col, sp->name, v[i]))
			return -1;
	sp->lo = x[0];
	sp->hi = x[1];
	return 0;
}

static int parse_line(struct ctx *c, struct patterns *p, struct cfl_space *s)
{
	size_t name_col, name_len, rhs_col, rhs_len;
	char name[MAX_TEXT], v[MAX_TEXT];
	struct cfl_space_param sp;
	int rc = -1;

	if (!match(p, p->assign, c->line, c->line_len)) {
		size_t i;

		size_t start, len;

		match(p, p->lead, c->line, c->line_len);
		group(p, 1, &name_col, &name_len);
		group(p, 0, &start, &len);
		i = start + len;
		if (!name_len)
			return perr(c, i, "expected a parameter name");
		return perr(c, i, "expected '=' after '%.*s'", (int)name_len,
			    c->line + name_col);
	}
	group(p, 1, &name_col, &name_len);
	group(p, 2, &rhs_col, &rhs_len);
	if (name_len >= 64)
		return perr(c, name_col, "parameter name too long (at most 63 bytes)");
	memcpy(name, c->line + name_col, name_len);
	name[name_len] = '\0';
	{
		int prev = cfl_space_find(s, name);

		if (prev >= 0)
			return perr(c, name_col, "'%s' is set twice (first on line %zu)",
				    name, s->params[prev].line);
	}
	if (c->ops && !find_spec(c->ops, name))
		return unknown_param(c, name_col, name);
	if (rhs_len == 0)
		return perr(c, rhs_col, "missing value after '='");

	memset(&sp, 0, sizeof(sp));
	sp.line = c->line_no;
	sp.name = cfl_strdup(name, c->err);
	if (!sp.name)
		return -1;
	if (match(p, p->call, c->line + rhs_col, rhs_len)) {
		size_t fn_col, fn_len, args_col, args_len;
		struct arg *a;
		size_t na;
		char fn[32];

		group(p, 1, &fn_col, &fn_len);
		group(p, 2, &args_col, &args_len);
		fn_col += rhs_col;
		args_col += rhs_col;
		snprintf(fn, sizeof(fn), "%.*s", (int)(fn_len < 31 ? fn_len : 31),
			 c->line + fn_col);
		if (strcmp(fn, "choice") == 0)
			sp.dist = CFL_DIST_CHOICE;
		else if (strcmp(fn, "uniform") == 0)
			sp.dist = CFL_DIST_UNIFORM;
		else if (strcmp(fn, "loguniform") == 0)
			sp.dist = CFL_DIST_LOGUNIFORM;
		else if (strcmp(fn, "int") == 0)
			sp.dist = CFL_DIST_INT;
		else {
			perr(c, fn_col, "unknown distribution '%s' (expected choice, uniform, loguniform or int)",
			     fn);
			goto out;
		}
		if (split_args(c, args_col, args_len, &a, &na))
			goto out;
		if (sp.dist == CFL_DIST_CHOICE)
			rc = parse_choice(c, p, &sp, a, na, args_col - 1);
		else
			rc = parse_range(c, p, &sp, fn, a, na, args_col - 1);
		free(a);
		if (rc)
			goto out;
		rc = -1;
	} else {
		const char *paren = memchr(c->line + rhs_col, '(', rhs_len);

		if (paren && (paren == c->line + rhs_col ||
			      isalpha((unsigned char)c->line[rhs_col]))) {
			const char *close = memchr(paren, ')', rhs_len -
				(size_t)(paren - (c->line + rhs_col)));

			perr(c, close ? (size_t)(close - c->line) + 1 :
				 rhs_col + rhs_len,
			     close ? "unexpected text after ')'" :
				     "missing ')'");
			goto out;
		}
		if (parse_value(c, p, rhs_col, rhs_len, v) ||
		    check_value(c, rhs_col, name, v))
			goto out;
		sp.dist = CFL_DIST_FIXED;
		sp.value = cfl_strdup(v, c->err);
		if (!sp.value)
			goto out;
	}
	{
		struct cfl_space_param *t = cfl_realloc(s->params,
			(s->n_params + 1) * sizeof(*t), c->err);

		if (!t)
			goto out;
		s->params = t;
		s->params[s->n_params++] = sp;
		return 0;
	}
out:
	param_release(&sp);
	return rc;
}

/* The length of line text before a '#' comment outside quotes. */
static size_t strip_comment(const char *line, size_t n)
{
	char q = 0;

	for (size_t i = 0; i < n; i++) {
		if (q) {
			if (line[i] == q)
				q = 0;
		} else if (line[i] == '"' || line[i] == '\'') {
			q = line[i];
		} else if (line[i] == '#') {
			return i;
		}
	}
	return n;
}

int cfl_space_parse(struct cfl_space *s, const char *name, const char *text,
		    size_t len, const struct cfl_model_ops *ops,
		    struct cfl_err *err)
{
	struct patterns p;
	struct ctx c;
	size_t pos = 0;

	cfl_space_init(s);
	if (patterns_init(&p, err))
		return -1;
	s->name = cfl_strdup(name ? name : "params", err);
	if (!s->name)
		goto fail;
	c.name = s->name;
	c.ops = ops;
	c.err = err;
	c.line_no = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len, n;

		c.line = text + pos;
		c.line_len = end - pos;
		c.show_len = c.line_len;
		c.line_no++;
		pos = end + 1;
		if (memchr(c.line, '\0', c.line_len)) {
			perr(&c, (size_t)((const char *)memchr(c.line, '\0', c.line_len) - c.line),
			     "unexpected NUL byte");
			goto fail;
		}
		n = strip_comment(c.line, c.line_len);
		while (n > 0 && isspace((unsigned char)c.line[n - 1]))
			n--;
		{
			size_t i = 0;

			while (i < n && isspace((unsigned char)c.line[i]))
				i++;
			if (i == n)
				continue;
		}
		/* errors show the whole line; the patterns see the text
		 * before the comment */
		c.line_len = n;
		if (parse_line(&c, &p, s))
			goto fail;
	}
	patterns_free(&p);
	return 0;
fail:
	patterns_free(&p);
	cfl_space_release(s);
	return -1;
}

/* ---- where the default spaces live ---- */

const char *cfl_space_default_path(const char *model, char *buf, size_t cap)
{
	/* "@" is the folder of the cfl binary: a checkout (./params beside
	 * ./cfl) or an install under any PREFIX (PREFIX/bin/cfl finds
	 * PREFIX/share/cfl/params), then the usual prefixes. */
	static const char *const dirs[] = { "params", "@/params", "@/../share/cfl/params",
					    "/usr/local/share/cfl/params",
					    "/usr/share/cfl/params" };
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	if (strrchr(exe, '/'))
		*strrchr(exe, '/') = '\0';
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (dirs[i][0] != '@')
			snprintf(buf, cap, "%s/%.64s.params", dirs[i], model);
		else if (exe[0])
			snprintf(buf, cap, "%.400s%s/%.64s.params", exe, dirs[i] + 1, model);
		else
			continue;
		if (access(buf, R_OK) == 0)
			return buf;
	}
	snprintf(buf, cap, "params/%s.params", model);
	return buf;
}

int cfl_space_load(struct cfl_space *s, const char *path,
		   const struct cfl_model_ops *ops, struct cfl_err *err)
{
	struct cfl_buf b;
	int rc;

	cfl_space_init(s);
	cfl_buf_init(&b);
	if (cfl_buf_read_file(&b, path, err)) {
		cfl_buf_release(&b);
		return -1;
	}
	rc = cfl_space_parse(s, path, b.data ? b.data : "", b.len, ops, err);
	cfl_buf_release(&b);
	return rc;
}

int cfl_space_fix(struct cfl_space *s, const char *name, const char *value,
		  const struct cfl_model_ops *ops, struct cfl_err *err)
{
	struct cfl_space_param sp;
	int i;

	if (ops) {
		struct cfl_params one;
		struct cfl_kv kv = { (char *)name, (char *)value };

		one.n = 1;
		one.kv = &kv;
		if (cfl_model_check_params(ops, &one, err))
			return -1;
	}
	memset(&sp, 0, sizeof(sp));
	sp.dist = CFL_DIST_FIXED;
	sp.name = cfl_strdup(name, err);
	sp.value = cfl_strdup(value, err);
	if (!sp.name || !sp.value) {
		param_release(&sp);
		return -1;
	}
	i = cfl_space_find(s, name);
	if (i >= 0) {
		sp.line = s->params[i].line;
		param_release(&s->params[i]);
		s->params[i] = sp;
		return 0;
	}
	{
		struct cfl_space_param *t = cfl_realloc(s->params,
			(s->n_params + 1) * sizeof(*t), err);

		if (!t) {
			param_release(&sp);
			return -1;
		}
		s->params = t;
		s->params[s->n_params++] = sp;
	}
	return 0;
}

/* Appends v, quoted when the language needs it. */
static int put_value(struct cfl_buf *out, const char *v)
{
	int bare = *v != '\0';

	for (const char *q = v; *q; q++)
		if (isspace((unsigned char)*q) || strchr("\"'(),=#", *q))
			bare = 0;
	if (bare)
		return cfl_buf_puts(out, v);
	return cfl_buf_printf(out, strchr(v, '"') ? "'%s'" : "\"%s\"", v);
}

int cfl_space_format(const struct cfl_space *s, struct cfl_buf *out)
{
	static const char *const fn[] = { "", "choice", "uniform", "loguniform",
					  "int" };

	for (size_t i = 0; i < s->n_params; i++) {
		const struct cfl_space_param *p = &s->params[i];
		int rc = cfl_buf_printf(out, "%s = ", p->name);

		switch (p->dist) {
		case CFL_DIST_FIXED:
			rc |= put_value(out, p->value);
			break;
		case CFL_DIST_CHOICE:
			rc |= cfl_buf_puts(out, "choice(");
			for (size_t j = 0; j < p->n_choices; j++) {
				if (j)
					rc |= cfl_buf_puts(out, ", ");
				rc |= put_value(out, p->choices[j]);
			}
			rc |= cfl_buf_puts(out, ")");
			break;
		default:
			rc |= cfl_buf_printf(out, "%s(%.17g, %.17g)", fn[p->dist],
					     p->lo, p->hi);
			break;
		}
		rc |= cfl_buf_puts(out, "\n");
		if (rc)
			return -1;
	}
	return 0;
}
