/* Unit tests of src/core: SHA-256, random streams, buffers, the text reader,
 * parameter lists. */
#include "runner.h"

#include "cfl/core.h"

static void t_sha256_vectors(void)
{
	unsigned char d[32];
	char hex[65];
	struct cfl_sha256 s;
	char million[1001];

	cfl_sha256_init(&s);
	cfl_sha256_update(&s, "abc", 3);
	cfl_sha256_final(&s, d);
	cfl_sha256_hex(d, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

	cfl_sha256_init(&s);
	cfl_sha256_final(&s, d);
	cfl_sha256_hex(d, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

	/* one million 'a', fed in uneven pieces */
	memset(million, 'a', sizeof(million));
	cfl_sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		cfl_sha256_update(&s, million, i % 2 ? 999 : 1001);
	cfl_sha256_final(&s, d);
	cfl_sha256_hex(d, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void t_rng_deterministic(void)
{
	struct cfl_rng a, b;
	double sum = 0;
	size_t v[10], seen = 0;

	cfl_rng_seed(&a, 42);
	cfl_rng_seed(&b, 42);
	for (int i = 0; i < 1000; i++)
		CHECK(cfl_rng_u64(&a) == cfl_rng_u64(&b));
	cfl_rng_seed(&b, 43);
	CHECK(cfl_rng_u64(&a) != cfl_rng_u64(&b));
	for (int i = 0; i < 100000; i++) {
		double u = cfl_rng_uniform(&a);

		CHECK(u >= 0 && u < 1);
		sum += u;
	}
	CHECK_NEAR(sum / 100000, 0.5, 0.01);
	for (size_t i = 0; i < 10; i++)
		v[i] = i;
	cfl_rng_shuffle(&a, v, 10);
	for (size_t i = 0; i < 10; i++)
		seen |= (size_t)1 << v[i];
	CHECK_INT(seen, 1023);
	CHECK(cfl_seed_derive(1, "fcnn", 0) == cfl_seed_derive(1, "fcnn", 0));
	CHECK(cfl_seed_derive(1, "fcnn", 0) != cfl_seed_derive(1, "fcnn", 1));
	CHECK(cfl_seed_derive(1, "fcnn", 0) != cfl_seed_derive(1, "tree", 0));
	CHECK(cfl_seed_derive(1, "fcnn", 0) != cfl_seed_derive(2, "fcnn", 0));
}

static void t_buf_and_doubles_round_trip(void)
{
	struct cfl_buf b;
	struct cfl_reader r;
	struct cfl_err err;
	double v[3] = { 0.1, -1e-300, 1.0 / 3.0 }, w[3];
	float f[2] = { 0.1f, 3.3333333f }, g[2];

	cfl_buf_init(&b);
	CHECK(cfl_buf_doubles(&b, v, 3) == 0);
	CHECK(cfl_buf_floats(&b, f, 2) == 0);
	cfl_reader_init(&r, "mem", b.data, b.len);
	CHECK(cfl_reader_doubles(&r, w, 3, &err) == 0);
	CHECK(cfl_reader_floats(&r, g, 2, &err) == 0);
	CHECK(memcmp(v, w, sizeof(v)) == 0);
	CHECK(memcmp(f, g, sizeof(f)) == 0);
	CHECK(cfl_reader_double(&r, &w[0], &err) == -1);
	CHECK_CONTAINS(err.msg, "mem:1: unexpected end of file");
	cfl_buf_release(&b);
}

static void t_reader_errors_name_line(void)
{
	const char *text = "magic 1\nvalue x\n";
	struct cfl_reader r;
	struct cfl_err err;
	double d;
	long l;

	cfl_reader_init(&r, "m.cfl", text, strlen(text));
	CHECK(cfl_reader_expect(&r, "magic", &err) == 0);
	CHECK(cfl_reader_int(&r, 0, 0, &l, &err) == -1);
	CHECK_CONTAINS(err.msg, "out of range");
	CHECK(cfl_reader_expect(&r, "value", &err) == 0);
	CHECK(cfl_reader_double(&r, &d, &err) == -1);
	CHECK_STR(err.msg, "m.cfl:2: expected a number, found 'x'");
}

static void t_params(void)
{
	struct cfl_params p, q;
	struct cfl_err err;
	struct cfl_buf b;

	cfl_params_init(&p);
	CHECK(cfl_params_set_arg(&p, "lr=0.01", &err) == 0);
	CHECK(cfl_params_set_arg(&p, "hidden=64,64", &err) == 0);
	CHECK(cfl_params_set_arg(&p, "lr=0.1", &err) == 0);
	CHECK_INT(p.n, 2);
	CHECK_STR(cfl_params_get(&p, "lr"), "0.1");
	CHECK(cfl_params_get(&p, "epochs") == NULL);
	CHECK(cfl_params_set_arg(&p, "noequals", &err) == -1);
	CHECK_CONTAINS(err.msg, "expected key=value");
	CHECK(cfl_params_set_arg(&p, "a b=1", &err) == -1);
	CHECK(cfl_params_copy(&q, &p, &err) == 0);
	cfl_params_sort(&q);
	cfl_buf_init(&b);
	cfl_params_format(&q, &b);
	CHECK_STR(b.data, "hidden=64,64,lr=0.1");
	cfl_buf_release(&b);
	cfl_params_release(&p);
	cfl_params_release(&q);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_sha256_vectors),
	TEST(t_rng_deterministic),
	TEST(t_buf_and_doubles_round_trip),
	TEST(t_reader_errors_name_line),
	TEST(t_params),
	{ 0 },
};
