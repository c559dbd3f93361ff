/*
 * The model file format: "cfl-model 1", the model's name, seed, shape and
 * params, the data encoder, then the model's own state and "end".  Text in
 * the C locale with floats that read back exactly; written atomically.
 * Every field is checked on load, so a truncated or hostile file is an error
 * naming the file and line, never a crash.
 */
#include "cfl/model.h"

#include <stdlib.h>
#include <string.h>

#define MODEL_MAGIC "cfl-model"
#define MODEL_VERSION 1

int cfl_model_format(const struct cfl_model *m, const struct cfl_encoder *enc,
		     struct cfl_buf *b, struct cfl_err *err)
{
	if (cfl_buf_printf(b, "%s %d\nmodel %s\nseed %llu\nshape %zu %d\nparams %zu\n",
			   MODEL_MAGIC, MODEL_VERSION, m->ops->name,
			   (unsigned long long)m->seed, m->n_features,
			   m->n_classes, m->params.n))
		goto oom;
	for (size_t i = 0; i < m->params.n; i++)
		if (cfl_buf_printf(b, "param %s %s\n", m->params.kv[i].key,
				   m->params.kv[i].value))
			goto oom;
	if ((enc && cfl_encoder_save(enc, b)) || cfl_buf_puts(b, "state\n"))
		goto oom;
	if (m->ops->save(m, b, err))
		return -1;
	if (cfl_buf_puts(b, "\nend\n"))
		goto oom;
	return 0;
oom:
	return cfl_err_set(err, "%s: out of memory", m->ops->name);
}

int cfl_model_text_add_encoder(const char *text, size_t len,
			       const struct cfl_encoder *enc,
			       struct cfl_buf *out, struct cfl_err *err)
{
	/* the header's lines all start with a keyword other than "state"
	 * ("param k v" included), so the first line "state" is the marker */
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break;
		if (nl - p == 5 && memcmp(p, "state", 5) == 0) {
			if (cfl_buf_append(out, text, (size_t)(p - text)) ||
			    cfl_encoder_save(enc, out) ||
			    cfl_buf_append(out, p, (size_t)(end - p)))
				return cfl_err_set(err, "out of memory");
			return 0;
		}
		p = nl + 1;
	}
	return cfl_err_set(err, "a model text without a 'state' line");
}

int cfl_model_save_file(const struct cfl_model *m,
			const struct cfl_encoder *enc, const char *path,
			struct cfl_err *err)
{
	struct cfl_buf b;
	int rc = -1;

	cfl_buf_init(&b);
	if (cfl_model_format(m, enc, &b, err))
		cfl_err_prefix(err, "cannot write '%s'", path);
	else
		rc = cfl_write_file_atomic(path, b.data, b.len, err);
	cfl_buf_release(&b);
	return rc;
}

struct cfl_model *cfl_model_parse(const char *name, const char *text,
				  size_t len, struct cfl_encoder *enc,
				  struct cfl_err *err)
{
	struct cfl_reader r;
	struct cfl_model *m = NULL;
	const struct cfl_model_ops *ops;
	char word[128], key[128];
	struct cfl_params params;
	uint64_t seed;
	size_t n_features, n_params;
	long version, n_classes;

	memset(enc, 0, sizeof(*enc));
	cfl_params_init(&params);
	cfl_reader_init(&r, name, text, len);
	if (cfl_reader_word(&r, word, sizeof(word), err) ||
	    strcmp(word, MODEL_MAGIC) != 0) {
		cfl_err_set(err, "%s: not a cfl model file (bad magic)", name);
		return NULL;
	}
	if (cfl_reader_int(&r, 0, 1000000, &version, err))
		return NULL;
	if (version != MODEL_VERSION) {
		cfl_err_set(err, "%s: model file version %ld, this cfl reads version %d",
			    name, version, MODEL_VERSION);
		return NULL;
	}
	if (cfl_reader_expect(&r, "model", err) ||
	    cfl_reader_word(&r, word, sizeof(word), err))
		return NULL;
	ops = cfl_model_find(word);
	if (!ops) {
		cfl_reader_fail(&r, err, "unknown model '%s'", word);
		return NULL;
	}
	if (cfl_reader_expect(&r, "seed", err) ||
	    cfl_reader_u64(&r, &seed, err) ||
	    cfl_reader_expect(&r, "shape", err) ||
	    cfl_reader_size(&r, 1u << 24, &n_features, err) ||
	    cfl_reader_int(&r, 0, 1 << 20, &n_classes, err) ||
	    cfl_reader_expect(&r, "params", err) ||
	    cfl_reader_size(&r, 1024, &n_params, err))
		return NULL;
	for (size_t i = 0; i < n_params; i++) {
		char *value;

		if (cfl_reader_expect(&r, "param", err) ||
		    cfl_reader_word(&r, key, sizeof(key), err))
			goto fail;
		value = cfl_reader_line(&r, err);
		if (!value || cfl_params_set(&params, key, value, err)) {
			free(value);
			goto fail;
		}
		free(value);
	}
	m = cfl_model_new(ops, &params, seed, err);
	if (!m) {
		cfl_err_prefix(err, "%s", name);
		goto fail;
	}
	m->n_features = n_features;
	m->n_classes = (int)n_classes;
	if (cfl_encoder_load(enc, &r, err))
		goto fail;
	if (enc->d != n_features ||
	    enc->n_classes != (int)n_classes) {
		cfl_reader_fail(&r, err, "encoder shape (%zu features, %d classes) does not match the model's (%zu, %ld)",
				enc->d, enc->n_classes, n_features, n_classes);
		goto fail;
	}
	if (cfl_reader_expect(&r, "state", err) || ops->load(m, &r, err) ||
	    cfl_reader_expect(&r, "end", err))
		goto fail;
	cfl_params_release(&params);
	return m;
fail:
	cfl_params_release(&params);
	cfl_model_free(m);
	cfl_encoder_release(enc);
	return NULL;
}

struct cfl_model *cfl_model_load_file(const char *path,
				      struct cfl_encoder *enc,
				      struct cfl_err *err)
{
	struct cfl_buf b;
	struct cfl_model *m;

	memset(enc, 0, sizeof(*enc));
	cfl_buf_init(&b);
	if (cfl_buf_read_file(&b, path, err))
		return NULL;
	m = cfl_model_parse(path, b.data, b.len, enc, err);
	cfl_buf_release(&b);
	return m;
}
