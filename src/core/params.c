/*
 * Ordered key=value lists: the parameters a user sets with --set, a search
 * candidate, or what a model file stores.  Keys are unique; the list keeps
 * the order keys were first set in, unless sorted for hashing.
 */
#include "cfl/core.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void cfl_params_init(struct cfl_params *p)
{
	p->n = 0;
	p->kv = NULL;
}

void cfl_params_release(struct cfl_params *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->kv[i].key);
		free(p->kv[i].value);
	}
	free(p->kv);
	cfl_params_init(p);
}

int cfl_params_set(struct cfl_params *p, const char *key, const char *value,
		   struct cfl_err *err)
{
	char *v = cfl_strdup(value, err), *k;
	struct cfl_kv *kv;

	if (!v)
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->kv[i].key, key) == 0) {
			free(p->kv[i].value);
			p->kv[i].value = v;
			return 0;
		}
	}
	k = cfl_strdup(key, err);
	kv = k ? cfl_realloc(p->kv, (p->n + 1) * sizeof(*kv), err) : NULL;
	if (!kv) {
		free(k);
		free(v);
		return -1;
	}
	p->kv = kv;
	p->kv[p->n].key = k;
	p->kv[p->n].value = v;
	p->n++;
	return 0;
}

int cfl_params_set_arg(struct cfl_params *p, const char *arg,
		       struct cfl_err *err)
{
	const char *eq = strchr(arg, '=');
	char key[128];
	size_t n;

	if (!eq || eq == arg)
		return cfl_err_set(err, "expected key=value, found '%s'", arg);
	n = (size_t)(eq - arg);
	if (n >= sizeof(key))
		return cfl_err_set(err, "parameter name too long in '%s'", arg);
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)arg[i]) && arg[i] != '_' &&
		    arg[i] != '.')
			return cfl_err_set(err,
					   "bad parameter name in '%s' (letters, digits, '_' and '.' only)",
					   arg);
	memcpy(key, arg, n);
	key[n] = '\0';
	return cfl_params_set(p, key, eq + 1, err);
}

const char *cfl_params_get(const struct cfl_params *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->kv[i].key, key) == 0)
			return p->kv[i].value;
	return NULL;
}

int cfl_params_copy(struct cfl_params *dst, const struct cfl_params *src,
		    struct cfl_err *err)
{
	cfl_params_init(dst);
	for (size_t i = 0; i < src->n; i++) {
		if (cfl_params_set(dst, src->kv[i].key, src->kv[i].value,
				   err)) {
			cfl_params_release(dst);
			return -1;
		}
	}
	return 0;
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct cfl_kv *)a)->key,
		      ((const struct cfl_kv *)b)->key);
}

void cfl_params_sort(struct cfl_params *p)
{
	if (p->n > 1)
		qsort(p->kv, p->n, sizeof(*p->kv), cmp_kv);
}

int cfl_params_format(const struct cfl_params *p, struct cfl_buf *b)
{
	for (size_t i = 0; i < p->n; i++)
		if (cfl_buf_printf(b, "%s%s=%s", i ? "," : "", p->kv[i].key,
				   p->kv[i].value))
			return -1;
	return 0;
}
