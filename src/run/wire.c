/*
 * The wire codec: frames and messages of the pool protocol (see wire.h for
 * the layout).  Pure functions on buffers: no I/O, no globals, so the
 * decoder can be fuzzed.  Invariant: the decoder never reads past len and
 * never allocates more than the bytes left in the payload justify.
 * Depends on core only.
 */
#include "cfl/wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {
	[CFL_WIRE_HELLO] = "HELLO",
	[CFL_WIRE_WELCOME] = "WELCOME",
	[CFL_WIRE_LEASE] = "LEASE",
	[CFL_WIRE_RESULT] = "RESULT",
	[CFL_WIRE_RESULT_ACK] = "RESULT_ACK",
	[CFL_WIRE_HEARTBEAT] = "HEARTBEAT",
	[CFL_WIRE_CANCEL] = "CANCEL",
	[CFL_WIRE_FETCH] = "FETCH",
	[CFL_WIRE_CHUNK] = "CHUNK",
	[CFL_WIRE_ERROR] = "ERROR",
	[CFL_WIRE_SHUTDOWN] = "SHUTDOWN",
	[CFL_WIRE_PROGRESS] = "PROGRESS",
};

const char *cfl_wire_type_name(int type)
{
	if (type < CFL_WIRE_HELLO || type >= CFL_WIRE_TYPE_END)
		return "?";
	return type_names[type];
}

void cfl_wire_msg_init(struct cfl_wire_msg *m, enum cfl_wire_type type)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	if (type == CFL_WIRE_LEASE) {
		cfl_params_init(&m->u.lease.params);
		m->u.lease.fold = -1;
	}
}

void cfl_wire_msg_release(struct cfl_wire_msg *m)
{
	switch (m->type) {
	case CFL_WIRE_HELLO:
		free(m->u.hello.name);
		break;
	case CFL_WIRE_WELCOME:
		free(m->u.welcome.config);
		break;
	case CFL_WIRE_LEASE:
		free(m->u.lease.model);
		cfl_params_release(&m->u.lease.params);
		break;
	case CFL_WIRE_RESULT:
		free(m->u.result.error);
		for (int s = 0; s < CFL_WIRE_N_SPLITS; s++) {
			free(m->u.result.split[s].metrics);
			free(m->u.result.split[s].pred);
			free(m->u.result.split[s].rows);
		}
		free(m->u.result.model);
		free(m->u.result.impurity);
		free(m->u.result.permutation);
		break;
	case CFL_WIRE_CHUNK:
		free(m->u.chunk.data);
		break;
	case CFL_WIRE_ERROR:
		free(m->u.error.message);
		break;
	default:
		break;
	}
	memset(m, 0, sizeof(*m));
}

/* ---- wire: little-endian encoding ---- */

/* Appends with a sticky failure flag, so an encoder checks once at the end. */
struct enc {
	struct cfl_buf *b;
	int bad;
	const char *why;	/* static text of the first failure */
};

static void put(struct enc *e, const void *p, size_t n)
{
	if (!n)
		return;
	if (!e->bad && cfl_buf_append(e->b, p, n)) {
		e->bad = 1;
		e->why = "out of memory";
	}
}

static void put_u8(struct enc *e, uint8_t v)
{
	put(e, &v, 1);
}

static void put_u32(struct enc *e, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(e, b, 4);
}

static void put_u64(struct enc *e, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(e, b, 8);
}

static void put_f64(struct enc *e, double v)
{
	uint64_t u;

	memcpy(&u, &v, 8);
	put_u64(e, u);
}

static void put_str(struct enc *e, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > CFL_WIRE_MAX_PAYLOAD + CFL_WIRE_MAX_MODEL) {
		e->bad = 1;
		e->why = "string too long";
		return;
	}
	put_u32(e, (uint32_t)n);
	put(e, s, n);
}

static void fail_enc(struct enc *e, const char *why)
{
	if (!e->bad) {
		e->bad = 1;
		e->why = why;
	}
}

static void enc_lease(struct enc *e, const struct cfl_wire_lease *l)
{
	if (l->params.n > CFL_WIRE_MAX_PARAMS)
		return fail_enc(e, "too many params");
	if (l->n_metrics > CFL_WIRE_MAX_METRICS)
		return fail_enc(e, "too many metrics");
	if (l->flags & ~CFL_LEASE_KNOWN)
		return fail_enc(e, "unknown lease flags");
	put_u64(e, (uint64_t)l->trial_id);
	put_u32(e, l->attempt);
	put_str(e, l->model);
	put_u32(e, (uint32_t)l->params.n);
	for (size_t i = 0; i < l->params.n; i++) {
		put_str(e, l->params.kv[i].key);
		put_str(e, l->params.kv[i].value);
	}
	put_u64(e, l->seed);
	put_u64(e, l->fold_seed);
	put_u32(e, (uint32_t)l->repeat);
	put_u32(e, (uint32_t)l->fold);
	put_u32(e, l->n_folds);
	put_u32(e, l->flags);
	put_u32(e, l->threads);
	put_u32(e, l->n_metrics);
	put(e, l->metrics, l->n_metrics);
	if (!(l->budget_s >= 0) || isinf(l->budget_s))
		return fail_enc(e, "bad time budget");
	if (l->budget_s > 0 || l->sample_rows)
		put_f64(e, l->budget_s);
	if (l->sample_rows)
		put_u64(e, l->sample_rows);
}

static void enc_result(struct enc *e, const struct cfl_wire_result *r)
{
	put_u64(e, (uint64_t)r->trial_id);
	put_u32(e, r->attempt);
	put_u32(e, r->status);
	put_str(e, r->error);
	put_f64(e, r->duration);
	put_f64(e, r->fit_seconds);
	put_f64(e, r->predict_seconds);
	put_u64(e, r->peak_rss_kb);
	for (int s = 0; s < CFL_WIRE_N_SPLITS; s++) {
		const struct cfl_wire_split *sp = &r->split[s];
		uint64_t cells = (uint64_t)sp->n * sp->n_out;

		if (sp->n_metrics > CFL_WIRE_MAX_METRICS)
			return fail_enc(e, "too many metrics");
		if (cells * 8 > CFL_WIRE_MAX_PAYLOAD)
			return fail_enc(e, "predictions too large");
		if (cells && !sp->pred)
			return fail_enc(e, "predictions missing");
		put_u32(e, sp->n_metrics);
		for (uint32_t i = 0; i < sp->n_metrics; i++) {
			if (memchr(sp->metrics[i].name, 0,
				   sizeof(sp->metrics[i].name)) == NULL)
				return fail_enc(e, "metric name too long");
			put_str(e, sp->metrics[i].name);
			put_f64(e, sp->metrics[i].value);
		}
		put_u32(e, sp->n);
		put_u32(e, sp->n_out);
		for (uint64_t i = 0; i < cells; i++)
			put_f64(e, sp->pred[i]);
		put_u8(e, sp->rows != NULL && sp->n > 0);
		if (sp->rows && sp->n > 0)
			for (uint32_t i = 0; i < sp->n; i++)
				put_u32(e, sp->rows[i]);
	}
	put_u32(e, r->n_iter_kept);
	if (r->model && strlen(r->model) > CFL_WIRE_MAX_MODEL)
		return fail_enc(e, "model text too large");
	put_str(e, r->model);
	/* importance: u32 columns, u8 kinds (1 impurity, 2 permutation), then
	 * the values of each kind; nothing at all when there is none */
	if (r->n_columns && (r->impurity || r->permutation)) {
		if ((uint64_t)r->n_columns * 16 > CFL_WIRE_MAX_PAYLOAD)
			return fail_enc(e, "too many importance columns");
		put_u32(e, r->n_columns);
		put_u8(e, (uint8_t)((r->impurity ? 1 : 0) | (r->permutation ? 2 : 0)));
		for (uint32_t i = 0; r->impurity && i < r->n_columns; i++)
			put_f64(e, r->impurity[i]);
		for (uint32_t i = 0; r->permutation && i < r->n_columns; i++)
			put_f64(e, r->permutation[i]);
	}
}

static void enc_payload(struct enc *e, const struct cfl_wire_msg *m)
{
	switch (m->type) {
	case CFL_WIRE_HELLO:
		put_u32(e, m->u.hello.proto);
		put_u32(e, m->u.hello.n_slots);
		put_u64(e, m->u.hello.caps);
		put_str(e, m->u.hello.name);
		put(e, m->u.hello.nonce, 32);
		put(e, m->u.hello.proof, 32);
		break;
	case CFL_WIRE_WELCOME:
		put_u32(e, m->u.welcome.proto);
		put_u32(e, m->u.welcome.heartbeat_ms);
		put(e, m->u.welcome.nonce, 32);
		put(e, m->u.welcome.proof, 32);
		put(e, m->u.welcome.data_sha256, 32);
		put_u64(e, m->u.welcome.data_size);
		put_str(e, m->u.welcome.config);
		break;
	case CFL_WIRE_LEASE:
		enc_lease(e, &m->u.lease);
		break;
	case CFL_WIRE_RESULT:
		enc_result(e, &m->u.result);
		break;
	case CFL_WIRE_RESULT_ACK:
		put_u64(e, (uint64_t)m->u.ack.trial_id);
		put_u32(e, m->u.ack.attempt);
		put_u32(e, m->u.ack.duplicate);
		break;
	case CFL_WIRE_HEARTBEAT:
		put_u64(e, m->u.heartbeat.time_ms);
		put_u32(e, m->u.heartbeat.n_running);
		break;
	case CFL_WIRE_CANCEL:
		put_u64(e, (uint64_t)m->u.cancel.trial_id);
		put_u32(e, m->u.cancel.attempt);
		break;
	case CFL_WIRE_FETCH:
		put(e, m->u.fetch.sha256, 32);
		put_u64(e, m->u.fetch.offset);
		put_u32(e, m->u.fetch.max_len);
		break;
	case CFL_WIRE_CHUNK:
		if (m->u.chunk.n && !m->u.chunk.data)
			return fail_enc(e, "chunk data missing");
		put(e, m->u.chunk.sha256, 32);
		put_u64(e, m->u.chunk.offset);
		put_u64(e, m->u.chunk.total);
		put_u32(e, m->u.chunk.n);
		put(e, m->u.chunk.data, m->u.chunk.n);
		break;
	case CFL_WIRE_ERROR:
		put_u32(e, m->u.error.code);
		put_str(e, m->u.error.message);
		break;
	case CFL_WIRE_SHUTDOWN:
		put_u32(e, m->u.shutdown.reason);
		break;
	case CFL_WIRE_PROGRESS:
		if (!m->u.progress.step)
			return fail_enc(e, "progress at step 0");
		put_u64(e, (uint64_t)m->u.progress.trial_id);
		put_u32(e, m->u.progress.attempt);
		put_u32(e, m->u.progress.step);
		put_f64(e, m->u.progress.score);
		break;
	default:
		fail_enc(e, "unknown message type");
	}
}

uint32_t cfl_wire_max_payload(int type)
{
	switch (type) {
	case CFL_WIRE_HELLO:
		return CFL_WIRE_HELLO_MAX;
	case CFL_WIRE_RESULT:	/* predictions of every row kept, a model */
		return CFL_WIRE_MAX_PAYLOAD + CFL_WIRE_MAX_MODEL;
	case CFL_WIRE_CHUNK:	/* the dataset's bytes */
		return CFL_WIRE_MAX_PAYLOAD;
	case CFL_WIRE_WELCOME:	/* the config text */
	case CFL_WIRE_LEASE:	/* up to CFL_WIRE_MAX_PARAMS params */
		return 1u << 20;
	case CFL_WIRE_ERROR:	/* a message */
		return 64u << 10;
	case CFL_WIRE_RESULT_ACK:
	case CFL_WIRE_HEARTBEAT:
	case CFL_WIRE_CANCEL:
	case CFL_WIRE_FETCH:
	case CFL_WIRE_SHUTDOWN:
	case CFL_WIRE_PROGRESS:
		return 256;
	default:
		return 0;
	}
}

int cfl_wire_from_worker(int type)
{
	switch (type) {
	case CFL_WIRE_HELLO:
	case CFL_WIRE_RESULT:
	case CFL_WIRE_HEARTBEAT:
	case CFL_WIRE_FETCH:
	case CFL_WIRE_ERROR:
	case CFL_WIRE_PROGRESS:	/* an intermediate score, for a pruner */
		return 1;
	default:
		return 0;
	}
}

int cfl_wire_encode(struct cfl_buf *out, uint64_t seq, uint16_t flags,
		    const struct cfl_wire_msg *m, struct cfl_err *err)
{
	size_t start = out->len;
	struct enc e = { out, 0, NULL };
	uint8_t hdr[CFL_WIRE_HEADER_SIZE] = { 0 };
	size_t plen;

	if (flags & ~CFL_WIRE_F_KNOWN)
		return cfl_err_set(err, "wire: unknown flags 0x%x", flags);
	put(&e, hdr, sizeof(hdr));	/* filled once the length is known */
	enc_payload(&e, m);
	if (!e.bad && out->len - start - CFL_WIRE_HEADER_SIZE >
			      cfl_wire_max_payload(m->type))
		fail_enc(&e, "payload too large");
	if (e.bad) {
		out->len = start;
		if (out->data)
			out->data[start] = 0;
		return cfl_err_set(err, "wire: cannot encode %s: %s",
				   cfl_wire_type_name(m->type), e.why);
	}
	plen = out->len - start - CFL_WIRE_HEADER_SIZE;
	memcpy(hdr, CFL_WIRE_MAGIC, 4);
	hdr[4] = CFL_WIRE_VERSION;
	hdr[5] = (uint8_t)m->type;
	hdr[6] = (uint8_t)flags;
	hdr[7] = (uint8_t)(flags >> 8);
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (uint8_t)(seq >> (8 * i));
	for (int i = 0; i < 4; i++)
		hdr[16 + i] = (uint8_t)(plen >> (8 * i));
	memcpy(out->data + start, hdr, sizeof(hdr));
	if (flags & CFL_WIRE_F_MAC) {
		uint8_t zero[CFL_WIRE_MAC_SIZE] = { 0 };

		put(&e, zero, sizeof(zero));
		if (e.bad) {
			out->len = start;
			out->data[start] = 0;
			return cfl_err_set(err, "wire: out of memory");
		}
	}
	return 0;
}

/* ---- wire: frame decoding ---- */

static uint32_t rd_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const uint8_t *p)
{
	return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

int cfl_wire_frame_split(const void *buf, size_t len,
			 struct cfl_wire_frame *f, struct cfl_err *err)
{
	const uint8_t *p = buf;
	size_t need;

	if (len < CFL_WIRE_HEADER_SIZE) {
		/* Report a wrong magic early: a peer that is not cfl at all. */
		size_t k = len < 4 ? len : 4;

		if (k && memcmp(p, CFL_WIRE_MAGIC, k) != 0)
			return cfl_err_set(err, "wire: bad magic (not a cfl peer)");
		return 1;
	}
	if (memcmp(p, CFL_WIRE_MAGIC, 4) != 0)
		return cfl_err_set(err, "wire: bad magic (not a cfl peer)");
	f->version = p[4];
	f->type = p[5];
	f->flags = (uint16_t)(p[6] | p[7] << 8);
	f->seq = rd_u64(p + 8);
	f->length = rd_u32(p + 16);
	if (f->version != CFL_WIRE_VERSION)
		return cfl_err_set(err, "wire: unsupported version %u (this cfl speaks %u)",
				   f->version, CFL_WIRE_VERSION);
	if (f->type < CFL_WIRE_HELLO || f->type >= CFL_WIRE_TYPE_END)
		return cfl_err_set(err, "wire: unknown frame type %u", f->type);
	if (f->flags & ~CFL_WIRE_F_KNOWN)
		return cfl_err_set(err, "wire: unknown flags 0x%x in %s frame",
				   f->flags, cfl_wire_type_name(f->type));
	if (f->length > cfl_wire_max_payload(f->type))
		return cfl_err_set(err, "wire: %s payload of %u bytes exceeds the limit of %u",
				   cfl_wire_type_name(f->type), f->length,
				   cfl_wire_max_payload(f->type));
	need = CFL_WIRE_HEADER_SIZE + (size_t)f->length +
	       ((f->flags & CFL_WIRE_F_MAC) ? CFL_WIRE_MAC_SIZE : 0);
	if (len < need)
		return 1;
	f->payload = p + CFL_WIRE_HEADER_SIZE;
	f->mac = (f->flags & CFL_WIRE_F_MAC) ? f->payload + f->length : NULL;
	f->size = need;
	return 0;
}

/* ---- wire: payload decoding ---- */

struct dec {
	const uint8_t *p;
	size_t len, pos;
	int bad;
	const char *why;
};

static void fail_dec(struct dec *d, const char *why)
{
	if (!d->bad) {
		d->bad = 1;
		d->why = why;
	}
}

static int take(struct dec *d, void *out, size_t n)
{
	if (!n)
		return d->bad ? -1 : 0;
	if (d->bad || d->len - d->pos < n) {
		fail_dec(d, "truncated");
		if (out)
			memset(out, 0, n);
		return -1;
	}
	if (out)
		memcpy(out, d->p + d->pos, n);
	d->pos += n;
	return 0;
}

static uint8_t get_u8(struct dec *d)
{
	uint8_t v = 0;

	take(d, &v, 1);
	return v;
}

static uint32_t get_u32(struct dec *d)
{
	uint8_t b[4];

	if (take(d, b, 4))
		return 0;
	return rd_u32(b);
}

static uint64_t get_u64(struct dec *d)
{
	uint8_t b[8];

	if (take(d, b, 8))
		return 0;
	return rd_u64(b);
}

static double get_f64(struct dec *d)
{
	uint64_t u = get_u64(d);
	double v;

	memcpy(&v, &u, 8);
	return v;
}

/* A length-prefixed string copied into a malloc'd C string (NULL on
 * failure).  A NUL inside is an error: the rest of cfl uses C strings. */
static char *get_str(struct dec *d)
{
	uint32_t n = get_u32(d);
	char *s;

	if (d->bad)
		return NULL;
	if (d->len - d->pos < n) {
		fail_dec(d, "truncated string");
		return NULL;
	}
	if (n && memchr(d->p + d->pos, 0, n)) {
		fail_dec(d, "NUL inside a string");
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		fail_dec(d, "out of memory");
		return NULL;
	}
	if (n)
		memcpy(s, d->p + d->pos, n);
	s[n] = 0;
	d->pos += n;
	return s;
}

/* A count of items of at least item_size bytes each: checked against the
 * bytes left, so a forged count cannot make us allocate. */
static uint32_t get_count(struct dec *d, size_t item_size, uint32_t max)
{
	uint32_t n = get_u32(d);

	if (d->bad)
		return 0;
	if (n > max || (item_size && (uint64_t)n * item_size > d->len - d->pos)) {
		fail_dec(d, "count out of range");
		return 0;
	}
	return n;
}

static void dec_lease(struct dec *d, struct cfl_wire_lease *l)
{
	uint32_t n;

	l->trial_id = (int64_t)get_u64(d);
	l->attempt = get_u32(d);
	l->model = get_str(d);
	n = get_count(d, 8, CFL_WIRE_MAX_PARAMS);
	for (uint32_t i = 0; i < n && !d->bad; i++) {
		char *k = get_str(d), *v = get_str(d);

		if (!d->bad && !k[0])
			fail_dec(d, "empty param key");
		if (!d->bad) {
			for (size_t j = 0; j < l->params.n; j++)
				if (!strcmp(l->params.kv[j].key, k))
					fail_dec(d, "duplicate param key");
		}
		if (!d->bad && cfl_params_set(&l->params, k, v, NULL))
			fail_dec(d, "out of memory");
		free(k);
		free(v);
	}
	l->seed = get_u64(d);
	l->fold_seed = get_u64(d);
	l->repeat = (int32_t)get_u32(d);
	l->fold = (int32_t)get_u32(d);
	l->n_folds = get_u32(d);
	l->flags = get_u32(d);
	l->threads = get_u32(d);
	l->n_metrics = get_count(d, 1, CFL_WIRE_MAX_METRICS);
	take(d, l->metrics, l->n_metrics);
	if (!d->bad && d->pos < d->len) {
		l->budget_s = get_f64(d);
		/* 0 only when a row sample follows */
		if (!d->bad && d->pos < d->len) {
			l->sample_rows = get_u64(d);
			if (!d->bad && !l->sample_rows)
				fail_dec(d, "bad row sample");
		}
		if (!d->bad && (!(l->budget_s >= 0) || isinf(l->budget_s) ||
				(l->budget_s == 0 && !l->sample_rows)))
			fail_dec(d, "bad time budget");
	}
	if (d->bad)
		return;
	if (l->flags & ~CFL_LEASE_KNOWN)
		fail_dec(d, "unknown lease flags");
	else if (!l->model[0])
		fail_dec(d, "empty model name");
	else if (l->fold < -1 || (l->fold >= 0 && (uint32_t)l->fold >= l->n_folds))
		fail_dec(d, "fold out of range");
	else if (l->attempt == 0)
		fail_dec(d, "attempt 0");
}

static void dec_result(struct dec *d, struct cfl_wire_result *r)
{
	r->trial_id = (int64_t)get_u64(d);
	r->attempt = get_u32(d);
	r->status = get_u32(d);
	r->error = get_str(d);
	r->duration = get_f64(d);
	r->fit_seconds = get_f64(d);
	r->predict_seconds = get_f64(d);
	r->peak_rss_kb = get_u64(d);
	if (!d->bad && r->status > CFL_RESULT_CRASHED)
		fail_dec(d, "unknown result status");
	for (int s = 0; s < CFL_WIRE_N_SPLITS && !d->bad; s++) {
		struct cfl_wire_split *sp = &r->split[s];
		uint64_t cells;
		uint8_t has_rows;

		sp->n_metrics = get_count(d, 12, CFL_WIRE_MAX_METRICS);
		if (sp->n_metrics) {
			sp->metrics = calloc(sp->n_metrics, sizeof(*sp->metrics));
			if (!sp->metrics)
				fail_dec(d, "out of memory");
		}
		for (uint32_t i = 0; i < sp->n_metrics && !d->bad; i++) {
			char *name = get_str(d);

			if (!d->bad && (!name[0] || strlen(name) >= sizeof(sp->metrics[i].name)))
				fail_dec(d, "bad metric name");
			if (!d->bad)
				strcpy(sp->metrics[i].name, name);
			free(name);
			sp->metrics[i].value = get_f64(d);
			for (uint32_t j = 0; j < i && !d->bad; j++)
				if (!strcmp(sp->metrics[j].name, sp->metrics[i].name))
					fail_dec(d, "duplicate metric name");
		}
		sp->n = get_u32(d);
		sp->n_out = get_u32(d);
		if (d->bad)
			break;
		cells = (uint64_t)sp->n * sp->n_out;
		if ((sp->n == 0) != (sp->n_out == 0) ||
		    cells * 8 > d->len - d->pos) {
			fail_dec(d, "prediction shape out of range");
			break;
		}
		if (cells) {
			sp->pred = malloc((size_t)cells * sizeof(double));
			if (!sp->pred) {
				fail_dec(d, "out of memory");
				break;
			}
			for (uint64_t i = 0; i < cells; i++)
				sp->pred[i] = get_f64(d);
		}
		has_rows = get_u8(d);
		if (has_rows > 1) {
			fail_dec(d, "bad row-list flag");
			break;
		}
		if (has_rows) {
			if (!sp->n || (uint64_t)sp->n * 4 > d->len - d->pos) {
				fail_dec(d, "row list out of range");
				break;
			}
			sp->rows = malloc((size_t)sp->n * sizeof(uint32_t));
			if (!sp->rows) {
				fail_dec(d, "out of memory");
				break;
			}
			for (uint32_t i = 0; i < sp->n; i++)
				sp->rows[i] = get_u32(d);
		}
	}
	r->n_iter_kept = get_u32(d);
	if (d->bad)
		return;
	r->model = get_str(d);
	if (!d->bad && strlen(r->model) > CFL_WIRE_MAX_MODEL)
		fail_dec(d, "model text too large");
	if (!d->bad && !r->model[0]) {
		free(r->model);
		r->model = NULL;
	}
	if (d->bad || d->pos == d->len)
		return;	/* no importance */
	{
		uint32_t n = get_u32(d);
		uint8_t kinds = get_u8(d);
		double **v[2] = { &r->impurity, &r->permutation };

		if (d->bad)
			return;
		if (!n || !kinds || kinds > 3 ||
		    (uint64_t)n * 8 * (uint64_t)((kinds & 1) + (kinds >> 1)) > d->len - d->pos) {
			fail_dec(d, "importance out of range");
			return;
		}
		r->n_columns = n;
		for (int k = 0; k < 2; k++) {
			if (!(kinds & (1 << k)))
				continue;
			*v[k] = malloc((size_t)n * sizeof(double));
			if (!*v[k]) {
				fail_dec(d, "out of memory");
				return;
			}
			for (uint32_t i = 0; i < n; i++)
				(*v[k])[i] = get_f64(d);
		}
	}
}

int cfl_wire_payload_decode(int type, const uint8_t *payload, size_t len,
			    struct cfl_wire_msg *m, struct cfl_err *err)
{
	struct dec d = { payload, len, 0, 0, NULL };

	if (type < CFL_WIRE_HELLO || type >= CFL_WIRE_TYPE_END)
		return cfl_err_set(err, "wire: unknown frame type %d", type);
	if (len > cfl_wire_max_payload(type))
		return cfl_err_set(err, "wire: payload too large");
	cfl_wire_msg_init(m, type);
	switch (type) {
	case CFL_WIRE_HELLO:
		m->u.hello.proto = get_u32(&d);
		m->u.hello.n_slots = get_u32(&d);
		m->u.hello.caps = get_u64(&d);
		m->u.hello.name = get_str(&d);
		take(&d, m->u.hello.nonce, 32);
		take(&d, m->u.hello.proof, 32);
		if (!d.bad && m->u.hello.n_slots == 0)
			fail_dec(&d, "zero slots");
		break;
	case CFL_WIRE_WELCOME:
		m->u.welcome.proto = get_u32(&d);
		m->u.welcome.heartbeat_ms = get_u32(&d);
		take(&d, m->u.welcome.nonce, 32);
		take(&d, m->u.welcome.proof, 32);
		take(&d, m->u.welcome.data_sha256, 32);
		m->u.welcome.data_size = get_u64(&d);
		m->u.welcome.config = get_str(&d);
		break;
	case CFL_WIRE_LEASE:
		dec_lease(&d, &m->u.lease);
		break;
	case CFL_WIRE_RESULT:
		dec_result(&d, &m->u.result);
		break;
	case CFL_WIRE_RESULT_ACK:
		m->u.ack.trial_id = (int64_t)get_u64(&d);
		m->u.ack.attempt = get_u32(&d);
		m->u.ack.duplicate = get_u32(&d);
		if (!d.bad && m->u.ack.duplicate > 1)
			fail_dec(&d, "bad duplicate flag");
		break;
	case CFL_WIRE_HEARTBEAT:
		m->u.heartbeat.time_ms = get_u64(&d);
		m->u.heartbeat.n_running = get_u32(&d);
		break;
	case CFL_WIRE_CANCEL:
		m->u.cancel.trial_id = (int64_t)get_u64(&d);
		m->u.cancel.attempt = get_u32(&d);
		break;
	case CFL_WIRE_FETCH:
		take(&d, m->u.fetch.sha256, 32);
		m->u.fetch.offset = get_u64(&d);
		m->u.fetch.max_len = get_u32(&d);
		break;
	case CFL_WIRE_CHUNK:
		take(&d, m->u.chunk.sha256, 32);
		m->u.chunk.offset = get_u64(&d);
		m->u.chunk.total = get_u64(&d);
		m->u.chunk.n = get_count(&d, 1, CFL_WIRE_MAX_PAYLOAD);
		if (!d.bad && m->u.chunk.n) {
			m->u.chunk.data = malloc(m->u.chunk.n);
			if (!m->u.chunk.data)
				fail_dec(&d, "out of memory");
			take(&d, m->u.chunk.data, m->u.chunk.n);
		}
		if (!d.bad && (m->u.chunk.offset > m->u.chunk.total ||
			       m->u.chunk.n > m->u.chunk.total - m->u.chunk.offset))
			fail_dec(&d, "chunk outside the file");
		break;
	case CFL_WIRE_ERROR:
		m->u.error.code = get_u32(&d);
		m->u.error.message = get_str(&d);
		break;
	case CFL_WIRE_SHUTDOWN:
		m->u.shutdown.reason = get_u32(&d);
		break;
	case CFL_WIRE_PROGRESS:
		m->u.progress.trial_id = (int64_t)get_u64(&d);
		m->u.progress.attempt = get_u32(&d);
		m->u.progress.step = get_u32(&d);
		m->u.progress.score = get_f64(&d);
		if (!d.bad && !m->u.progress.step)
			fail_dec(&d, "progress at step 0");
		break;
	}
	if (!d.bad && d.pos != len) {
		cfl_err_set(err, "wire: %zu trailing bytes in %s payload",
			    len - d.pos, cfl_wire_type_name(type));
		cfl_wire_msg_release(m);
		return -1;
	}
	if (d.bad) {
		cfl_err_set(err, "wire: bad %s payload: %s",
			    cfl_wire_type_name(type), d.why);
		cfl_wire_msg_release(m);
		return -1;
	}
	return 0;
}

int cfl_wire_decode(const void *buf, size_t len, struct cfl_wire_frame *f,
		    struct cfl_wire_msg *m, struct cfl_err *err)
{
	int rc = cfl_wire_frame_split(buf, len, f, err);

	if (rc)
		return rc;
	return cfl_wire_payload_decode(f->type, f->payload, f->length, m, err);
}
