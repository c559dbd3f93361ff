/*
 * The session every transport shares (see relay.h): the HELLO check a
 * coordinator makes, WELCOME's config text, and the dataset's FETCH /
 * CHUNK exchange on both ends.  No I/O: the transports and the relay move
 * the messages.  The config is plain "key=value" lines, so a worker of the
 * same protocol version loads exactly what the coordinator loaded.
 */
#include "cfl/relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- HELLO ---- */

int cfl_hello_check(const struct cfl_wire_hello *h, uint32_t *code,
		    struct cfl_err *err)
{
	if (h->proto != CFL_WIRE_VERSION) {
		*code = CFL_WIRE_E_VERSION;
		return cfl_err_set(err, "version mismatch: the coordinator speaks "
				   "protocol %d, the worker %u", CFL_WIRE_VERSION,
				   h->proto);
	}
	if (h->n_slots < 1 || h->n_slots > 1024) {
		*code = CFL_WIRE_E_PROTOCOL;
		return cfl_err_set(err, "a worker has 1..1024 slots, not %u",
				   h->n_slots);
	}
	return 0;
}

void cfl_welcome_init(struct cfl_wire_msg *m, double heartbeat,
		      const unsigned char data_sha256[32], uint64_t data_size,
		      const char *config)
{
	cfl_wire_msg_init(m, CFL_WIRE_WELCOME);
	m->u.welcome.proto = CFL_WIRE_VERSION;
	m->u.welcome.heartbeat_ms = (uint32_t)(heartbeat * 1000);
	memcpy(m->u.welcome.data_sha256, data_sha256, 32);
	m->u.welcome.data_size = data_size;
	m->u.welcome.config = (char *)config;
}

/* ---- WELCOME's config ---- */

static int put_str(struct cfl_buf *b, const char *key, const char *v,
		   struct cfl_err *err)
{
	if (!v)
		return 0;
	if (strchr(v, '\n') || strchr(v, '\r'))
		return cfl_err_set(err, "--%s cannot be sent to workers: it holds a "
				   "line break", key);
	return cfl_buf_printf(b, "%s=%s\n", key, v) ? cfl_err_set(err, "out of memory") : 0;
}

int cfl_run_config_format(struct cfl_buf *b, const char *run_key,
			  const struct cfl_data_opts *d,
			  const struct cfl_pool_opts *po, struct cfl_err *err)
{
	if (put_str(b, "run", run_key, err) ||
	    put_str(b, "target", d->schema.target, err) ||
	    put_str(b, "drop", d->schema.drop_re, err) ||
	    put_str(b, "only", d->schema.only_re, err))
		return -1;
	cfl_buf_printf(b, "task=%d\ntest_frac=%.17g\nvalid_frac=%.17g\n"
		       "seed=%llu\nthreads=%d\ntrial_timeout=%.17g\nmetrics=",
		       (int)d->schema.task, d->test_frac, d->valid_frac,
		       (unsigned long long)d->seed, po->threads_per_trial,
		       po->trial_timeout);
	for (size_t i = 0; i < po->n_metrics; i++)
		cfl_buf_printf(b, "%s%d", i ? "," : "", (int)po->metrics[i]);
	if (cfl_buf_puts(b, "\n"))
		return cfl_err_set(err, "out of memory");
	return 0;
}

static int parse_num(const char *v, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return !*v || *end || errno || !(*out >= lo && *out <= hi) ? -1 : 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
	unsigned long long x;
	char *end;

	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (*end || errno)
		return -1;
	*out = x;
	return 0;
}

int cfl_run_config_parse(struct cfl_run_config *c, const char *text,
			 struct cfl_err *err)
{
	const char *p = text ? text : "";

	memset(c, 0, sizeof(*c));
	cfl_data_opts_init(&c->data);
	c->threads = 1;
	while (*p) {
		const char *nl = strchr(p, '\n'), *eq;
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[4096], *v;
		double x;

		if (n >= sizeof(line))
			return cfl_err_set(err, "config line too long");
		memcpy(line, p, n);
		line[n] = 0;
		p += n + (nl ? 1 : 0);
		if (!n)
			continue;
		eq = strchr(line, '=');
		if (!eq)
			return cfl_err_set(err, "config line without '=': '%.60s'", line);
		line[eq - line] = 0;
		v = line + (eq - line) + 1;
		if (!strcmp(line, "run")) {
			snprintf(c->run, sizeof(c->run), "%s", v);
		} else if (!strcmp(line, "target") || !strcmp(line, "drop") ||
			   !strcmp(line, "only")) {
			char **slot = line[0] == 't' ? &c->target
				      : line[0] == 'd' ? &c->drop : &c->only;

			free(*slot);
			*slot = cfl_strdup(v, err);
			if (!*slot)
				return -1;
		} else if (!strcmp(line, "task")) {
			if (parse_num(v, 0, 2, &x))
				return cfl_err_set(err, "bad task '%s'", v);
			c->data.schema.task = (enum cfl_task)(int)x;
		} else if (!strcmp(line, "test_frac")) {
			if (parse_num(v, 0, 1, &c->data.test_frac))
				return cfl_err_set(err, "bad test_frac '%s'", v);
		} else if (!strcmp(line, "valid_frac")) {
			if (parse_num(v, 0, 1, &c->data.valid_frac))
				return cfl_err_set(err, "bad valid_frac '%s'", v);
		} else if (!strcmp(line, "seed")) {
			if (parse_u64(v, &c->data.seed))
				return cfl_err_set(err, "bad seed '%s'", v);
		} else if (!strcmp(line, "threads")) {
			if (parse_num(v, 1, 256, &x))
				return cfl_err_set(err, "bad threads '%s'", v);
			c->threads = (int)x;
		} else if (!strcmp(line, "trial_timeout")) {
			if (parse_num(v, 0, 1e9, &c->trial_timeout))
				return cfl_err_set(err, "bad trial_timeout '%s'", v);
		} else if (!strcmp(line, "metrics")) {
			char *save = NULL, *tok;

			c->n_metrics = 0;
			for (tok = strtok_r(v, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (c->n_metrics == CFL_WIRE_MAX_METRICS ||
				    parse_num(tok, 0, CFL_M_COUNT - 1, &x))
					return cfl_err_set(err, "bad metrics '%s'", tok);
				c->metrics[c->n_metrics++] = (enum cfl_metric_id)(int)x;
			}
		} else {
			return cfl_err_set(err, "unknown config key '%.60s' (a newer "
					   "coordinator?)", line);
		}
	}
	c->data.schema.target = c->target;
	c->data.schema.drop_re = c->drop;
	c->data.schema.only_re = c->only;
	return 0;
}

void cfl_run_config_release(struct cfl_run_config *c)
{
	free(c->target);
	free(c->drop);
	free(c->only);
	c->target = c->drop = c->only = NULL;
}

/* ---- the dataset: FETCH / CHUNK ---- */

int cfl_fetch_answer(const struct cfl_wire_fetch *req,
		     const unsigned char sha256[32], const void *data,
		     uint64_t len, struct cfl_wire_msg *chunk,
		     struct cfl_err *err)
{
	uint64_t off = req->offset;
	uint32_t n = req->max_len;

	if (memcmp(req->sha256, sha256, 32) || off > len)
		return cfl_err_set(err, "FETCH of unknown data or past its end");
	if (n > CFL_TCP_CHUNK)
		n = CFL_TCP_CHUNK;
	if (n > len - off)
		n = (uint32_t)(len - off);
	cfl_wire_msg_init(chunk, CFL_WIRE_CHUNK);
	memcpy(chunk->u.chunk.sha256, sha256, 32);
	chunk->u.chunk.offset = off;
	chunk->u.chunk.total = len;
	chunk->u.chunk.n = n;
	chunk->u.chunk.data = (uint8_t *)data + off;
	return 0;
}

int cfl_fetch_begin(struct cfl_fetch *f, const struct cfl_cache *c,
		    const unsigned char sha256[32], uint64_t size,
		    struct cfl_buf *keep, char **path, struct cfl_err *err)
{
	int r;

	memset(f, 0, sizeof(*f));
	memcpy(f->sha256, sha256, 32);
	f->size = size;
	*path = NULL;
	r = cfl_cache_find(c, sha256, size, path, err);
	if (r)
		return r;
	if (cfl_cache_fill_begin(&f->fill, c, sha256, size, err))
		return -1;
	if (keep) {
		/* grown as bytes arrive, not sized from the announcement: a
		 * coordinator that announces gigabytes and sends a few makes
		 * us hold a few */
		keep->len = 0;
		f->keep = keep;
	}
	f->filling = 1;
	return 0;
}

int cfl_fetch_request(struct cfl_fetch *f, struct cfl_wire_msg *m)
{
	if (!f->filling || f->next_req >= f->size ||
	    f->next_req - f->fill.offset >= 4 * (uint64_t)CFL_TCP_CHUNK)
		return 0;
	cfl_wire_msg_init(m, CFL_WIRE_FETCH);
	memcpy(m->u.fetch.sha256, f->sha256, 32);
	m->u.fetch.offset = f->next_req;
	m->u.fetch.max_len = CFL_TCP_CHUNK;
	f->next_req += CFL_TCP_CHUNK;
	return 1;
}

int cfl_fetch_chunk(struct cfl_fetch *f, const struct cfl_wire_chunk *c,
		    char **path, struct cfl_err *err)
{
	if (!f->filling)
		return cfl_err_set(err, "a dataset chunk nobody asked for");
	if (memcmp(c->sha256, f->sha256, 32) || c->total != f->size || !c->n) {
		cfl_fetch_abort(f);
		return cfl_err_set(err, "a bad dataset chunk");
	}
	if (cfl_cache_fill_add(&f->fill, c->offset, c->data, c->n, err)) {
		cfl_fetch_abort(f);
		return -1;
	}
	/* in order and within the size (the fill checked) */
	if (f->keep && cfl_buf_append(f->keep, c->data, c->n)) {
		cfl_fetch_abort(f);
		return cfl_err_set(err, "out of memory (a dataset of %llu bytes)",
				   (unsigned long long)f->size);
	}
	if (f->fill.offset < f->size)
		return 0;
	f->filling = 0;
	return cfl_cache_fill_finish(&f->fill, path, err) ? -1 : 1;
}

void cfl_fetch_abort(struct cfl_fetch *f)
{
	if (!f->filling)
		return;
	cfl_cache_fill_abort(&f->fill);
	f->filling = 0;
}
