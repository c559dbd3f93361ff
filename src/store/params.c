/*
 * A candidate's parameters as the store keeps them: one flat JSON object,
 * keys sorted, so SQLite's JSON1 reads them (json_extract(params, '$.lr'))
 * and a value holding commas (hidden=64,64) stays whole.  A value that is a
 * JSON number is written as a number, every other one as a string; reading
 * gives back each value's text exactly as written (a number's literal is
 * kept, never reformatted), so "1e-3" stays "1e-3".  Also the reader of
 * schema 1's "k=v,k=v" text, for the migration.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- store: parameters as JSON ---- */

static int put_string(struct cfl_buf *b, const char *s)
{
	int rc = cfl_buf_puts(b, "\"");

	for (; !rc && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"')
			rc = cfl_buf_puts(b, "\\\"");
		else if (c == '\\')
			rc = cfl_buf_puts(b, "\\\\");
		else if (c == '\n')
			rc = cfl_buf_puts(b, "\\n");
		else if (c == '\t')
			rc = cfl_buf_puts(b, "\\t");
		else if (c < 0x20)
			rc = cfl_buf_printf(b, "\\u%04x", c);
		else
			rc = cfl_buf_printf(b, "%c", c);
	}
	return rc || cfl_buf_puts(b, "\"");
}

int cfl_store_params_json(const struct cfl_params *params, struct cfl_buf *b,
			  struct cfl_err *err)
{
	struct cfl_params sorted;
	int rc = 0;

	cfl_params_init(&sorted);
	if (params && cfl_params_copy(&sorted, params, err))
		return -1;
	cfl_params_sort(&sorted);
	rc |= cfl_buf_puts(b, "{");
	for (size_t i = 0; !rc && i < sorted.n; i++) {
		const char *v = sorted.kv[i].value ? sorted.kv[i].value : "";
		size_t n = cfl_json_number_len(v);

		rc |= (i && cfl_buf_puts(b, ",")) || put_string(b, sorted.kv[i].key) ||
		      cfl_buf_puts(b, ":");
		if (!rc)
			rc |= n && !v[n] ? cfl_buf_puts(b, v) : put_string(b, v);
	}
	rc |= cfl_buf_puts(b, "}");
	cfl_params_release(&sorted);
	return rc ? cfl_err_set(err, "out of memory") : 0;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static int put_utf8(struct cfl_buf *b, unsigned cp)
{
	if (cp < 0x80)
		return cfl_buf_printf(b, "%c", (int)cp);
	if (cp < 0x800)
		return cfl_buf_printf(b, "%c%c", 0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
	if (cp < 0x10000)
		return cfl_buf_printf(b, "%c%c%c", 0xe0 | (cp >> 12),
				      0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
	return cfl_buf_printf(b, "%c%c%c%c", 0xf0 | (cp >> 18),
			      0x80 | ((cp >> 12) & 0x3f),
			      0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
}

/* A JSON string at *pp (at its opening quote) into b (NUL-terminated);
 * *pp moves past it.  -1 when malformed. */
static int get_string(const char **pp, struct cfl_buf *b)
{
	const char *p = *pp;

	b->len = 0;
	if (*p++ != '"')
		return -1;
	while (*p != '"') {
		unsigned cp, lo;
		int rc;

		if (!*p || (unsigned char)*p < 0x20)
			return -1;
		if (*p != '\\') {
			if (cfl_buf_printf(b, "%c", *p++))
				return -1;
			continue;
		}
		p++;
		switch (*p) {
		case '"': case '\\': case '/':
			rc = cfl_buf_printf(b, "%c", *p);
			break;
		case 'b': rc = cfl_buf_puts(b, "\b"); break;
		case 'f': rc = cfl_buf_puts(b, "\f"); break;
		case 'n': rc = cfl_buf_puts(b, "\n"); break;
		case 'r': rc = cfl_buf_puts(b, "\r"); break;
		case 't': rc = cfl_buf_puts(b, "\t"); break;
		case 'u':
			if (hex4(p + 1, &cp))
				return -1;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &lo) ||
				    lo < 0xdc00 || lo >= 0xe000)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return -1;
			}
			if (cp == 0)	/* a NUL would cut the text */
				return -1;
			rc = put_utf8(b, cp);
			break;
		default:
			return -1;
		}
		if (rc)
			return -1;
		p++;
	}
	*pp = p + 1;
	return cfl_buf_puts(b, "") ? -1 : 0;
}

int cfl_store_params_parse_json(const char *json, struct cfl_params *out,
				struct cfl_err *err)
{
	struct cfl_buf key, val;
	const char *p = skip_ws(json ? json : "");
	int rc = -1;

	cfl_buf_init(&key);
	cfl_buf_init(&val);
	if (*p++ != '{')
		goto bad;
	p = skip_ws(p);
	if (*p == '}') {
		p++;
		goto end;
	}
	for (;;) {
		size_t n;

		if (get_string(&p, &key))
			goto bad;
		p = skip_ws(p);
		if (*p++ != ':')
			goto bad;
		p = skip_ws(p);
		val.len = 0;
		if (*p == '"') {
			if (get_string(&p, &val))
				goto bad;
		} else if ((n = cfl_json_number_len(p)) ||
			   (n = !strncmp(p, "true", 4) ? 4 :
				!strncmp(p, "false", 5) ? 5 : 0)) {
			if (cfl_buf_printf(&val, "%.*s", (int)n, p))
				goto oom;
			p += n;
		} else if (!strncmp(p, "null", 4)) {
			if (cfl_buf_puts(&val, ""))
				goto oom;
			p += 4;
		} else {
			goto bad;	/* arrays and objects: not a parameter */
		}
		if (cfl_params_set(out, key.data, val.data, err))
			goto out;
		p = skip_ws(p);
		if (*p == '}') {
			p++;
			break;
		}
		if (*p++ != ',')
			goto bad;
		p = skip_ws(p);
	}
end:
	if (*skip_ws(p))
		goto bad;
	rc = 0;
	goto out;
oom:
	cfl_err_set(err, "out of memory");
	goto out;
bad:
	cfl_err_set(err, "parameters '%.60s' are not a flat JSON object",
		    json ? json : "");
out:
	cfl_buf_release(&key);
	cfl_buf_release(&val);
	return rc;
}

/* Schema 1 joined "k=v" pairs with ',' and did not escape a ',' inside a
 * value; keys never hold ',' or '=' (cfl_params_set_arg's rule), so a
 * piece without '=' continues the value before it: "hidden=64,64,lr=0.1"
 * is hidden "64,64" and lr "0.1". */
int cfl_store_params_parse_v1(const char *text, struct cfl_params *out,
			      struct cfl_err *err)
{
	struct cfl_buf key, val;
	const char *p = text ? text : "";
	int rc = -1;

	cfl_buf_init(&key);
	cfl_buf_init(&val);
	while (*p) {
		const char *end = strchr(p, ','), *eq;
		size_t n = end ? (size_t)(end - p) : strlen(p);

		eq = memchr(p, '=', n);
		if (eq) {
			if (key.len && cfl_params_set(out, key.data, val.data, err))
				goto out;
			key.len = val.len = 0;
			if (cfl_buf_printf(&key, "%.*s", (int)(eq - p), p) ||
			    cfl_buf_printf(&val, "%.*s", (int)(n - (size_t)(eq - p) - 1),
					   eq + 1))
				goto oom;
		} else if (!key.len) {
			cfl_err_set(err, "parameters '%.60s': '%.*s' is not "
				    "key=value", text, (int)n, p);
			goto out;
		} else if (cfl_buf_printf(&val, ",%.*s", (int)n, p)) {
			goto oom;
		}
		p += n + (end != NULL);
	}
	if (key.len && cfl_params_set(out, key.data, val.data ? val.data : "", err))
		goto out;
	rc = 0;
	goto out;
oom:
	cfl_err_set(err, "out of memory");
out:
	cfl_buf_release(&key);
	cfl_buf_release(&val);
	return rc;
}
