/* Unit tests of src/run/wire.c: every message survives encode -> decode
 * bit for bit; every prefix of a frame asks for more bytes; wrong magic,
 * version, type, flags, oversized lengths, forged counts, trailing bytes
 * and NULs inside strings are rejected with a message. */
#include "runner.h"

#include <stdint.h>

#include "cfl/wire.h"

static struct cfl_wire_msg roundtrip(const struct cfl_wire_msg *m,
				     uint64_t seq, uint16_t flags)
{
	struct cfl_buf b;
	struct cfl_err err;
	struct cfl_wire_frame f;
	struct cfl_wire_msg out;

	cfl_buf_init(&b);
	CHECK_MSG(cfl_wire_encode(&b, seq, flags, m, &err) == 0, "%s", err.msg);
	/* every strict prefix is incomplete, never an error */
	for (size_t k = 0; k < b.len; k++) {
		int rc = cfl_wire_frame_split(b.data, k, &f, &err);

		CHECK_MSG(rc == 1, "prefix %zu of %zu: rc %d (%s)", k, b.len,
			  rc, rc < 0 ? err.msg : "");
	}
	CHECK_MSG(cfl_wire_decode(b.data, b.len, &f, &out, &err) == 0, "%s",
		  err.msg);
	CHECK_INT(f.size, b.len);
	CHECK_INT(f.seq, seq);
	CHECK_INT(f.type, m->type);
	CHECK_INT(f.flags, flags);
	CHECK_INT(out.type, m->type);
	cfl_buf_release(&b);
	return out;
}

static void t_hello_welcome(void)
{
	struct cfl_wire_msg m, o;

	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = 1;
	m.u.hello.n_slots = 4;
	m.u.hello.caps = 0x123456789abcULL;
	m.u.hello.name = "host:42";
	for (int i = 0; i < 32; i++) {
		m.u.hello.nonce[i] = (uint8_t)i;
		m.u.hello.proof[i] = (uint8_t)(255 - i);
	}
	o = roundtrip(&m, 7, 0);
	CHECK_INT(o.u.hello.n_slots, 4);
	CHECK_INT(o.u.hello.caps, 0x123456789abcULL);
	CHECK_STR(o.u.hello.name, "host:42");
	CHECK(!memcmp(o.u.hello.nonce, m.u.hello.nonce, 32));
	CHECK(!memcmp(o.u.hello.proof, m.u.hello.proof, 32));
	cfl_wire_msg_release(&o);

	cfl_wire_msg_init(&m, CFL_WIRE_WELCOME);
	m.u.welcome.proto = 1;
	m.u.welcome.heartbeat_ms = 1000;
	m.u.welcome.data_sha256[0] = 0xab;
	m.u.welcome.data_size = 1ULL << 40;
	m.u.welcome.config = "target=y\nseed=3\n";
	o = roundtrip(&m, 0, CFL_WIRE_F_MAC);
	CHECK_INT(o.u.welcome.heartbeat_ms, 1000);
	CHECK_INT(o.u.welcome.data_sha256[0], 0xab);
	CHECK_INT(o.u.welcome.data_size, 1ULL << 40);
	CHECK_STR(o.u.welcome.config, "target=y\nseed=3\n");
	cfl_wire_msg_release(&o);
}

static void t_lease(void)
{
	struct cfl_wire_msg m, o;
	struct cfl_err err;

	cfl_wire_msg_init(&m, CFL_WIRE_LEASE);
	m.u.lease.trial_id = 123456789012LL;
	m.u.lease.attempt = 2;
	m.u.lease.model = "fcnn";
	CHECK(cfl_params_set(&m.u.lease.params, "hidden", "64,32", &err) == 0);
	CHECK(cfl_params_set(&m.u.lease.params, "lr", "0.01", &err) == 0);
	m.u.lease.seed = 0xfedcba9876543210ULL;
	m.u.lease.fold_seed = 17;
	m.u.lease.repeat = 5;
	m.u.lease.fold = 2;
	m.u.lease.n_folds = 5;
	m.u.lease.flags = CFL_LEASE_BOOTSTRAP | CFL_LEASE_KEEP_TEST;
	m.u.lease.threads = 2;
	m.u.lease.n_metrics = 2;
	m.u.lease.metrics[0] = 0;
	m.u.lease.metrics[1] = 1;
	o = roundtrip(&m, UINT64_MAX, 0);
	CHECK_INT(o.u.lease.trial_id, 123456789012LL);
	CHECK_INT(o.u.lease.attempt, 2);
	CHECK_STR(o.u.lease.model, "fcnn");
	CHECK_INT(o.u.lease.params.n, 2);
	CHECK_STR(cfl_params_get(&o.u.lease.params, "hidden"), "64,32");
	CHECK_STR(cfl_params_get(&o.u.lease.params, "lr"), "0.01");
	CHECK_INT(o.u.lease.seed, 0xfedcba9876543210ULL);
	CHECK_INT(o.u.lease.fold_seed, 17);
	CHECK_INT(o.u.lease.repeat, 5);
	CHECK_INT(o.u.lease.fold, 2);
	CHECK_INT(o.u.lease.n_folds, 5);
	CHECK_INT(o.u.lease.flags, CFL_LEASE_BOOTSTRAP | CFL_LEASE_KEEP_TEST);
	CHECK_INT(o.u.lease.threads, 2);
	CHECK_INT(o.u.lease.n_metrics, 2);
	CHECK_INT(o.u.lease.metrics[1], 1);
	CHECK(o.u.lease.budget_s == 0);	/* none: nothing sent */
	cfl_wire_msg_release(&o);
	/* a time budget travels at the end, bit for bit */
	m.u.lease.budget_s = 2.75;
	o = roundtrip(&m, 3, 0);
	CHECK(o.u.lease.budget_s == 2.75);
	CHECK_INT(o.u.lease.n_metrics, 2);
	CHECK_INT(o.u.lease.sample_rows, 0);
	cfl_wire_msg_release(&o);
	/* a row sample after it, with or without a budget */
	m.u.lease.sample_rows = 50000;
	o = roundtrip(&m, 3, 0);
	CHECK(o.u.lease.budget_s == 2.75);
	CHECK_INT(o.u.lease.sample_rows, 50000);
	cfl_wire_msg_release(&o);
	m.u.lease.budget_s = 0;
	o = roundtrip(&m, 3, 0);
	CHECK(o.u.lease.budget_s == 0);
	CHECK_INT(o.u.lease.sample_rows, 50000);
	cfl_wire_msg_release(&o);
	m.u.lease.sample_rows = 0;
	m.u.lease.budget_s = 2.75;
	{
		struct cfl_buf b;

		cfl_buf_init(&b);
		m.u.lease.budget_s = -1;
		CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == -1);
		CHECK_CONTAINS(err.msg, "bad time budget");
		cfl_buf_release(&b);
		m.u.lease.budget_s = 0;
	}

	/* PROGRESS: a running trial's intermediate score */
	{
		struct cfl_wire_msg pm, po;
		struct cfl_buf b;

		cfl_wire_msg_init(&pm, CFL_WIRE_PROGRESS);
		pm.u.progress.trial_id = 77;
		pm.u.progress.attempt = 2;
		pm.u.progress.step = 30;
		pm.u.progress.score = -0.1234567890123;
		po = roundtrip(&pm, 9, 0);
		CHECK_INT(po.u.progress.trial_id, 77);
		CHECK_INT(po.u.progress.attempt, 2);
		CHECK_INT(po.u.progress.step, 30);
		CHECK(po.u.progress.score == -0.1234567890123);
		cfl_wire_msg_release(&po);
		pm.u.progress.step = 0;
		cfl_buf_init(&b);
		CHECK(cfl_wire_encode(&b, 1, 0, &pm, &err) == -1);
		CHECK_CONTAINS(err.msg, "step 0");
		cfl_buf_release(&b);
	}

	/* a fold outside n_folds is refused by the decoder */
	{
		struct cfl_buf b;
		struct cfl_wire_frame f;

		cfl_buf_init(&b);
		m.u.lease.fold = 5;
		CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
		CHECK(cfl_wire_decode(b.data, b.len, &f, &o, &err) == -1);
		CHECK_CONTAINS(err.msg, "fold out of range");
		cfl_buf_release(&b);
	}
	cfl_params_release(&m.u.lease.params);
}

static void expect_bad(const void *buf, size_t len, const char *needle);

static void t_result(void)
{
	struct cfl_wire_msg m, o;
	double pv[6] = { 0.1, 0.9, -0.0, 1e-300, 0.5, 0.5 };
	double pt[2] = { 1.0 / 3.0, 2.0 / 3.0 };
	uint32_t rows[3] = { 7, 3, 1 };
	struct cfl_wire_metric mv[2] = { { "acc", 0.75 }, { "auc", 0.0 } };
	struct cfl_wire_metric mt[1] = { { "acc", 1.0 } };

	mv[1].value = NAN;
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	m.u.result.trial_id = 9;
	m.u.result.attempt = 1;
	m.u.result.duration = 0.125;
	m.u.result.fit_seconds = 0.1;
	m.u.result.predict_seconds = 0.02;
	m.u.result.peak_rss_kb = 12345;
	m.u.result.n_iter_kept = 37;
	m.u.result.split[0] = (struct cfl_wire_split){ 2, mv, 3, 2, pv, NULL };
	m.u.result.split[1] = (struct cfl_wire_split){ 1, mt, 1, 2, pt, NULL };
	m.u.result.split[2] = (struct cfl_wire_split){ 0, NULL, 3, 2, pv, rows };
	o = roundtrip(&m, 3, 0);
	CHECK_INT(o.u.result.trial_id, 9);
	CHECK_INT(o.u.result.status, CFL_RESULT_OK);
	CHECK_STR(o.u.result.error, "");
	CHECK(o.u.result.duration == 0.125);
	CHECK_INT(o.u.result.peak_rss_kb, 12345);
	CHECK_INT(o.u.result.n_iter_kept, 37);
	CHECK_INT(o.u.result.split[0].n_metrics, 2);
	CHECK_STR(o.u.result.split[0].metrics[0].name, "acc");
	CHECK(o.u.result.split[0].metrics[0].value == 0.75);
	CHECK(isnan(o.u.result.split[0].metrics[1].value));
	CHECK(!memcmp(o.u.result.split[0].pred, pv, sizeof(pv)));
	CHECK(o.u.result.split[0].rows == NULL);
	CHECK(!memcmp(o.u.result.split[1].pred, pt, sizeof(pt)));
	CHECK_INT(o.u.result.split[2].n, 3);
	CHECK(!memcmp(o.u.result.split[2].rows, rows, sizeof(rows)));
	CHECK(o.u.result.model == NULL);	/* none kept: none sent */
	cfl_wire_msg_release(&o);

	/* a kept model travels as its text */
	m.u.result.model = "cfl-model 1\nmodel linear\nstate\nw 1 2\nend\n";
	o = roundtrip(&m, 5, 0);
	CHECK_STR(o.u.result.model, m.u.result.model);
	CHECK(!memcmp(o.u.result.split[1].pred, pt, sizeof(pt)));
	cfl_wire_msg_release(&o);

	CHECK_INT(o.u.result.n_columns, 0);	/* none sent: none decoded */
	CHECK(!o.u.result.impurity && !o.u.result.permutation);
	cfl_wire_msg_release(&o);

	/* with importance: impurity alone, then both kinds */
	{
		double imp[3] = { 0.5, 0.25, 0.25 }, perm[3] = { 0.1, -0.02, 0 };
		struct cfl_buf b;
		struct cfl_err err;
		size_t plain;

		m.u.result.n_columns = 3;
		m.u.result.impurity = imp;
		o = roundtrip(&m, 5, 0);
		CHECK_INT(o.u.result.n_columns, 3);
		CHECK(!memcmp(o.u.result.impurity, imp, sizeof(imp)));
		CHECK(o.u.result.permutation == NULL);
		CHECK(!memcmp(o.u.result.split[2].rows, rows, sizeof(rows)));
		cfl_wire_msg_release(&o);
		m.u.result.permutation = perm;
		o = roundtrip(&m, 6, 0);
		CHECK(!memcmp(o.u.result.impurity, imp, sizeof(imp)));
		CHECK(!memcmp(o.u.result.permutation, perm, sizeof(perm)));
		cfl_wire_msg_release(&o);
		/* a count that claims more values than sent is refused */
		cfl_buf_init(&b);
		m.u.result.permutation = NULL;
		m.u.result.n_columns = 0;
		CHECK(cfl_wire_encode(&b, 7, 0, &m, &err) == 0);
		plain = b.len;
		cfl_buf_release(&b);
		cfl_buf_init(&b);
		m.u.result.n_columns = 3;
		CHECK(cfl_wire_encode(&b, 7, 0, &m, &err) == 0);
		CHECK_INT(b.len, plain + 5 + 3 * 8);
		b.data[plain] = 4;	/* 4 columns, 3 values */
		expect_bad(b.data, b.len, "importance out of range");
		cfl_buf_release(&b);
		m.u.result.n_columns = 0;
		m.u.result.impurity = NULL;
	}

	/* a model error */
	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	m.u.result.trial_id = 1;
	m.u.result.attempt = 3;
	m.u.result.status = CFL_RESULT_MODEL_ERROR;
	m.u.result.error = "fcnn: loss is NaN";
	o = roundtrip(&m, 4, 0);
	CHECK_INT(o.u.result.status, CFL_RESULT_MODEL_ERROR);
	CHECK_STR(o.u.result.error, "fcnn: loss is NaN");
	cfl_wire_msg_release(&o);
}

static void t_small_messages(void)
{
	struct cfl_wire_msg m, o;
	uint8_t bytes[5] = { 1, 2, 3, 0, 5 };

	cfl_wire_msg_init(&m, CFL_WIRE_RESULT_ACK);
	m.u.ack = (struct cfl_wire_ack){ -5, 2, 1 };
	o = roundtrip(&m, 1, 0);
	CHECK_INT(o.u.ack.trial_id, -5);
	CHECK_INT(o.u.ack.duplicate, 1);

	cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
	m.u.heartbeat = (struct cfl_wire_heartbeat){ 99, 3 };
	o = roundtrip(&m, 1, 0);
	CHECK_INT(o.u.heartbeat.time_ms, 99);
	CHECK_INT(o.u.heartbeat.n_running, 3);

	cfl_wire_msg_init(&m, CFL_WIRE_CANCEL);
	m.u.cancel = (struct cfl_wire_cancel){ 77, 4 };
	o = roundtrip(&m, 1, 0);
	CHECK_INT(o.u.cancel.trial_id, 77);
	CHECK_INT(o.u.cancel.attempt, 4);

	cfl_wire_msg_init(&m, CFL_WIRE_FETCH);
	m.u.fetch.offset = 100;
	m.u.fetch.max_len = 4096;
	m.u.fetch.sha256[31] = 9;
	o = roundtrip(&m, 1, 0);
	CHECK_INT(o.u.fetch.offset, 100);
	CHECK_INT(o.u.fetch.max_len, 4096);
	CHECK_INT(o.u.fetch.sha256[31], 9);

	cfl_wire_msg_init(&m, CFL_WIRE_CHUNK);
	m.u.chunk.offset = 10;
	m.u.chunk.total = 15;
	m.u.chunk.n = 5;
	m.u.chunk.data = bytes;
	o = roundtrip(&m, 1, 0);
	CHECK_INT(o.u.chunk.n, 5);
	CHECK(!memcmp(o.u.chunk.data, bytes, 5));
	cfl_wire_msg_release(&o);

	cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
	m.u.error.code = CFL_WIRE_E_AUTH;
	m.u.error.message = "bad token";
	o = roundtrip(&m, 1, CFL_WIRE_F_MAC);
	CHECK_INT(o.u.error.code, CFL_WIRE_E_AUTH);
	CHECK_STR(o.u.error.message, "bad token");
	cfl_wire_msg_release(&o);

	cfl_wire_msg_init(&m, CFL_WIRE_SHUTDOWN);
	m.u.shutdown.reason = 1;
	o = roundtrip(&m, 1, 0);
	CHECK_INT(o.u.shutdown.reason, 1);
	CHECK_STR(cfl_wire_type_name(CFL_WIRE_SHUTDOWN), "SHUTDOWN");
	CHECK_STR(cfl_wire_type_name(0), "?");
	CHECK_STR(cfl_wire_type_name(99), "?");
}

/* A valid HEARTBEAT frame to corrupt. */
static void heartbeat_frame(struct cfl_buf *b)
{
	struct cfl_wire_msg m;
	struct cfl_err err;

	cfl_buf_init(b);
	cfl_wire_msg_init(&m, CFL_WIRE_HEARTBEAT);
	m.u.heartbeat.time_ms = 5;
	CHECK(cfl_wire_encode(b, 1, 0, &m, &err) == 0);
	CHECK_INT(b->len, CFL_WIRE_HEADER_SIZE + 12);
}

static void expect_bad(const void *buf, size_t len, const char *needle)
{
	struct cfl_wire_frame f;
	struct cfl_wire_msg m;
	struct cfl_err err;
	int rc = cfl_wire_decode(buf, len, &f, &m, &err);

	CHECK_MSG(rc == -1, "rc %d, expected an error with '%s'", rc, needle);
	CHECK_CONTAINS(err.msg, needle);
}

static void t_bad_headers(void)
{
	struct cfl_buf b;
	struct cfl_wire_frame f;
	struct cfl_err err;

	heartbeat_frame(&b);
	b.data[0] = 'X';
	expect_bad(b.data, b.len, "bad magic");
	/* a wrong magic is seen before the header is complete */
	CHECK_INT(cfl_wire_frame_split("GET / HTTP/1.1", 3, &f, &err), -1);
	CHECK_INT(cfl_wire_frame_split("CFL", 3, &f, &err), 1);
	CHECK_INT(cfl_wire_frame_split("", 0, &f, &err), 1);
	cfl_buf_release(&b);

	heartbeat_frame(&b);
	b.data[4] = CFL_WIRE_VERSION + 1;
	expect_bad(b.data, b.len, "unsupported version");
	b.data[4] = 1;	/* before results carried models */
	expect_bad(b.data, b.len, "unsupported version 1");
	b.data[4] = CFL_WIRE_VERSION;
	b.data[5] = 0;
	expect_bad(b.data, b.len, "unknown frame type 0");
	b.data[5] = CFL_WIRE_TYPE_END;
	expect_bad(b.data, b.len, "unknown frame type");
	b.data[5] = CFL_WIRE_HEARTBEAT;
	b.data[7] = 0x80;
	expect_bad(b.data, b.len, "unknown flags");
	b.data[7] = 0;
	/* oversized length: rejected from the header alone */
	b.data[19] = 0x7f;
	CHECK_INT(cfl_wire_frame_split(b.data, CFL_WIRE_HEADER_SIZE, &f, &err), -1);
	CHECK_CONTAINS(err.msg, "exceeds the limit");
	b.data[19] = 0;
	/* a length that disagrees with the payload */
	b.data[16] = 11;
	expect_bad(b.data, b.len - 1, "truncated");
	b.data[16] = 13;
	CHECK_INT(cfl_wire_frame_split(b.data, b.len, &f, &err), 1);
	cfl_buf_append(&b, "z", 1);
	expect_bad(b.data, b.len, "1 trailing bytes in HEARTBEAT");
	cfl_buf_release(&b);
}

static void t_bad_payloads(void)
{
	struct cfl_wire_msg m, o;
	struct cfl_buf b;
	struct cfl_err err;
	struct cfl_wire_frame f;
	size_t off;

	/* a forged string length larger than the payload */
	cfl_buf_init(&b);
	cfl_wire_msg_init(&m, CFL_WIRE_ERROR);
	m.u.error.message = "abc";
	CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
	off = CFL_WIRE_HEADER_SIZE + 4;	/* the string length */
	b.data[off + 3] = 0x40;
	expect_bad(b.data, b.len, "truncated string");
	b.data[off + 3] = 0;
	/* a NUL inside a string */
	b.data[off + 5] = 0;
	expect_bad(b.data, b.len, "NUL inside a string");
	cfl_buf_release(&b);

	/* a RESULT whose prediction count claims more cells than sent */
	{
		double p[2] = { 0.5, 0.5 };

		cfl_buf_init(&b);
		cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
		m.u.result.attempt = 1;
		m.u.result.split[1] = (struct cfl_wire_split){ 0, NULL, 1, 2, p, NULL };
		CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
		CHECK(cfl_wire_decode(b.data, b.len, &f, &o, &err) == 0);
		cfl_wire_msg_release(&o);
		/* payload: id 8, attempt 4, status 4, error 4, 3 f64, u64 rss,
		 * split 0: 4 + 4 + 4 + 1; split 1: n_metrics 4, then n */
		off = CFL_WIRE_HEADER_SIZE + 8 + 4 + 4 + 4 + 24 + 8 + 13 + 4;
		CHECK_INT((unsigned char)b.data[off], 1);
		b.data[off] = (char)0xff;
		b.data[off + 1] = (char)0xff;
		expect_bad(b.data, b.len, "prediction shape out of range");
		cfl_buf_release(&b);
	}

	/* a LEASE with too many params cannot be encoded */
	cfl_buf_init(&b);
	cfl_wire_msg_init(&m, CFL_WIRE_LEASE);
	m.u.lease.model = "linear";
	m.u.lease.attempt = 1;
	m.u.lease.n_metrics = CFL_WIRE_MAX_METRICS + 1;
	CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == -1);
	CHECK_CONTAINS(err.msg, "too many metrics");
	CHECK_INT(b.len, 0);
	m.u.lease.n_metrics = 0;
	CHECK(cfl_wire_encode(&b, 1, 0x8000, &m, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown flags");
	/* an empty model name and attempt 0 are refused on decode */
	m.u.lease.model = NULL;
	CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
	expect_bad(b.data, b.len, "empty model name");
	cfl_buf_release(&b);
	cfl_buf_init(&b);
	m.u.lease.model = "linear";
	m.u.lease.attempt = 0;
	CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
	expect_bad(b.data, b.len, "attempt 0");
	cfl_buf_release(&b);
}

/* Two frames back to back in one buffer: the split consumes exactly one. */
static void t_stream(void)
{
	struct cfl_buf b;
	struct cfl_wire_msg m, o;
	struct cfl_wire_frame f;
	struct cfl_err err;
	size_t first;

	cfl_buf_init(&b);
	cfl_wire_msg_init(&m, CFL_WIRE_CANCEL);
	m.u.cancel.trial_id = 1;
	CHECK(cfl_wire_encode(&b, 1, 0, &m, &err) == 0);
	first = b.len;
	m.u.cancel.trial_id = 2;
	CHECK(cfl_wire_encode(&b, 2, 0, &m, &err) == 0);
	CHECK(cfl_wire_decode(b.data, b.len, &f, &o, &err) == 0);
	CHECK_INT(f.size, first);
	CHECK_INT(o.u.cancel.trial_id, 1);
	CHECK(cfl_wire_decode(b.data + f.size, b.len - f.size, &f, &o, &err) == 0);
	CHECK_INT(o.u.cancel.trial_id, 2);
	CHECK_INT(f.seq, 2);
	cfl_buf_release(&b);
}

/* Random garbage after a valid header never crashes and never succeeds
 * with trailing bytes; deterministic so a failure reproduces. */
static void t_garbage(void)
{
	struct cfl_rng r;
	uint8_t buf[256];

	cfl_rng_seed(&r, 42);
	for (int it = 0; it < 20000; it++) {
		size_t len = (size_t)cfl_rng_below(&r, sizeof(buf) - CFL_WIRE_HEADER_SIZE);
		struct cfl_wire_frame f;
		struct cfl_wire_msg m;
		struct cfl_err err;
		int rc;

		memcpy(buf, CFL_WIRE_MAGIC, 4);
		buf[4] = CFL_WIRE_VERSION;
		buf[5] = (uint8_t)(1 + cfl_rng_below(&r, CFL_WIRE_TYPE_END - 1));
		buf[6] = buf[7] = 0;
		for (int i = 8; i < 16; i++)
			buf[i] = (uint8_t)cfl_rng_u64(&r);
		buf[16] = (uint8_t)len;
		buf[17] = buf[18] = buf[19] = 0;
		for (size_t i = 0; i < len; i++)
			buf[CFL_WIRE_HEADER_SIZE + i] = (uint8_t)cfl_rng_u64(&r);
		rc = cfl_wire_decode(buf, CFL_WIRE_HEADER_SIZE + len, &f, &m, &err);
		CHECK(rc == 0 || rc == -1);
		if (rc == 0)
			cfl_wire_msg_release(&m);
	}
}

/* Each type's payload limit: a header over it is refused before its
 * payload arrives (a HELLO of 1025 bytes, a HEARTBEAT of 257), a frame at
 * it is whole; the encoder refuses to build a frame over it. */
static void t_per_type_limits(void)
{
	uint8_t h[CFL_WIRE_HEADER_SIZE] = { 'C', 'F', 'L', 'W', CFL_WIRE_VERSION };
	struct cfl_wire_frame f;
	struct cfl_wire_msg m;
	struct cfl_buf b;
	struct cfl_err err;
	char name[CFL_WIRE_HELLO_MAX + 1];

	CHECK_INT(cfl_wire_max_payload(CFL_WIRE_HELLO), 1024);
	CHECK_INT(cfl_wire_max_payload(CFL_WIRE_RESULT),
		  CFL_WIRE_MAX_PAYLOAD + CFL_WIRE_MAX_MODEL);
	CHECK_INT(cfl_wire_max_payload(CFL_WIRE_CHUNK), CFL_WIRE_MAX_PAYLOAD);
	CHECK(cfl_wire_max_payload(CFL_WIRE_LEASE) < CFL_WIRE_MAX_PAYLOAD);
	CHECK_INT(cfl_wire_max_payload(0), 0);
	for (int t = CFL_WIRE_HELLO; t < CFL_WIRE_TYPE_END; t++) {
		uint32_t max = cfl_wire_max_payload(t);

		CHECK(max >= 64);
		if (t != CFL_WIRE_RESULT && t != CFL_WIRE_CHUNK)
			CHECK(max <= (1u << 20));
		h[5] = (uint8_t)t;
		for (int i = 0; i < 4; i++)
			h[16 + i] = (uint8_t)(max >> (8 * i));
		CHECK_INT(cfl_wire_frame_split(h, sizeof(h), &f, &err), 1);
		max++;
		for (int i = 0; i < 4; i++)
			h[16 + i] = (uint8_t)(max >> (8 * i));
		CHECK_INT(cfl_wire_frame_split(h, sizeof(h), &f, &err), -1);
		CHECK_CONTAINS(err.msg, "exceeds the limit");
		CHECK_CONTAINS(err.msg, cfl_wire_type_name(t));
	}
	/* a HELLO whose name makes it too long is not encoded */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.name = name;
	cfl_buf_init(&b);
	CHECK_INT(cfl_wire_encode(&b, 0, 0, &m, &err), -1);
	CHECK_CONTAINS(err.msg, "payload too large");
	CHECK_INT(b.len, 0);
	name[900] = 0;
	CHECK_INT(cfl_wire_encode(&b, 0, 0, &m, &err), 0);
	cfl_buf_release(&b);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_per_type_limits),
	TEST(t_hello_welcome),
	TEST(t_lease),
	TEST(t_result),
	TEST(t_small_messages),
	TEST(t_bad_headers),
	TEST(t_bad_payloads),
	TEST(t_stream),
	TEST(t_garbage),
	{ 0 },
};
