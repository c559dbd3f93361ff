/* Unit tests of src/core: SHA-256, random streams, buffers, the text reader,
 * parameter lists. */
#include "runner.h"

#include "cfl/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* The digest of len bytes fed in pieces of 1..max_piece bytes (random,
 * from r); max_piece 0 feeds them at once. */
static void sha256_pieces(const unsigned char *p, size_t len, size_t max_piece,
			  struct cfl_rng *r, char hex[65])
{
	struct cfl_sha256 s;
	unsigned char d[32];
	size_t off = 0;

	CHECK_INT(cfl_sha256_init(&s, NULL), 0);
	while (off < len) {
		size_t n = max_piece ? 1 + (size_t)cfl_rng_below(r, max_piece) : len;

		if (n > len - off)
			n = len - off;
		cfl_sha256_update(&s, p + off, n);
		off += n;
	}
	cfl_sha256_final(&s, d);
	CHECK(s.ctx == NULL);
	cfl_sha256_hex(d, hex);
}

/* FIPS 180-2 appendix B (plus the empty message), streamed and in one
 * call; the million 'a' in uneven pieces; then every message length up to
 * 299 against digests from another SHA-256 (Python's hashlib). */
static void t_sha256_vectors(void)
{
	static const struct {
		const char *msg, *hex;
	} v[] = {
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		/* 448 bits: the padding needs a second block */
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		/* 896 bits */
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		  "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	unsigned char d[32];
	char hex[65];
	struct cfl_sha256 s;
	struct cfl_err err;
	char million[1001];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256_pieces((const unsigned char *)v[i].msg, strlen(v[i].msg), 0,
			      NULL, hex);
		CHECK_STR(hex, v[i].hex);
		CHECK_INT(cfl_sha256(v[i].msg, strlen(v[i].msg), d, &err), 0);
		cfl_sha256_hex(d, hex);
		CHECK_STR(hex, v[i].hex);
	}
	memset(million, 'a', sizeof(million));
	CHECK_INT(cfl_sha256_init(&s, &err), 0);
	for (int i = 0; i < 1000; i++)
		cfl_sha256_update(&s, million, i % 2 ? 999 : 1001);
	cfl_sha256_final(&s, d);
	cfl_sha256_hex(d, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

	/* every length 0..299 (each padding case: 55, 56, 63, 64 bytes in
	 * the last block): the SHA-256 of the 300 digests of the prefixes of
	 * bytes i*31+7, as Python's hashlib computes it */
	{
		unsigned char pat[300];
		struct cfl_sha256 all;

		for (int i = 0; i < 300; i++)
			pat[i] = (unsigned char)(i * 31 + 7);
		CHECK_INT(cfl_sha256_init(&all, &err), 0);
		for (size_t len = 0; len < 300; len++) {
			CHECK_INT(cfl_sha256(pat, len, d, &err), 0);
			cfl_sha256_update(&all, d, 32);
		}
		cfl_sha256_final(&all, d);
		cfl_sha256_hex(d, hex);
		CHECK_STR(hex, "82d1c86ef5eb80a2f7cb650e4770f5293bdbe86a5b577e54026c9295bbcf0e8d");
	}
}

/* Random messages of 0..1000 bytes fed in random pieces (every split of a
 * block comes up) give the digest of the message fed at once; a hash
 * abandoned half way is released (the sanitizer build sees a leak), and a
 * second release is a no-op. */
static void t_sha256_pieces_and_release(void)
{
	static unsigned char msg[1000];
	struct cfl_rng r, pr;
	char whole[65], pieces[65];
	struct cfl_sha256 s;

	cfl_rng_seed(&r, 180);
	for (int it = 0; it < 1000; it++) {
		size_t len = (size_t)cfl_rng_below(&r, sizeof(msg) + 1);
		size_t max_piece = 1 + (size_t)cfl_rng_below(&r, it % 3 ? 130 : 8);

		for (size_t i = 0; i < len; i++)
			msg[i] = (unsigned char)cfl_rng_u64(&r);
		sha256_pieces(msg, len, 0, NULL, whole);
		cfl_rng_seed(&pr, cfl_rng_u64(&r));
		sha256_pieces(msg, len, max_piece, &pr, pieces);
		CHECK_MSG(!strcmp(whole, pieces), "%zu bytes in pieces of up to "
			  "%zu: %s, at once: %s", len, max_piece, pieces, whole);
	}
	CHECK_INT(cfl_sha256_init(&s, NULL), 0);
	cfl_sha256_update(&s, msg, 100);
	cfl_sha256_release(&s);
	CHECK(s.ctx == NULL);
	cfl_sha256_release(&s);
}

/* Regular expressions: groups of a match, an optional group left out, a
 * failed match clearing the groups, UTF-8 and compile errors. */
static void t_regex(void)
{
	struct cfl_err err;
	struct cfl_regex *re = cfl_regex_new("^ *([a-z]+)(=([0-9]+))?", 0, &err);
	size_t start, len;

	CHECK_MSG(re != NULL, "%s", err.msg);
	CHECK_INT(cfl_regex_match(re, "  ab=12 x", 9, &err), 1);
	CHECK_INT(cfl_regex_group(re, 0, &start, &len), 1);
	CHECK(start == 0 && len == 7);
	CHECK_INT(cfl_regex_group(re, 1, &start, &len), 1);
	CHECK(start == 2 && len == 2);
	CHECK_INT(cfl_regex_group(re, 3, &start, &len), 1);
	CHECK(start == 5 && len == 2);
	/* the subject is s[0..n), not up to a NUL */
	CHECK_INT(cfl_regex_match(re, "cd=34", 3, &err), 1);
	CHECK_INT(cfl_regex_group(re, 2, &start, &len), 0);
	CHECK(start == 0 && len == 0);
	CHECK_INT(cfl_regex_group(re, 9, &start, &len), 0);
	CHECK_INT(cfl_regex_match(re, "12", 2, &err), 0);
	CHECK_INT(cfl_regex_group(re, 0, &start, &len), 0);
	cfl_regex_free(re);

	re = cfl_regex_new("^caf.$", CFL_REGEX_UTF, &err);
	CHECK(re != NULL);
	CHECK_INT(cfl_regex_match(re, "caf\xc3\xa9", 5, &err), 1);
	cfl_regex_free(re);
	re = cfl_regex_new("a.b", 0, &err);
	CHECK_INT(cfl_regex_match(re, "a\nb", 3, &err), 0);
	cfl_regex_free(re);
	re = cfl_regex_new("a.b", CFL_REGEX_DOTALL, &err);
	CHECK_INT(cfl_regex_match(re, "a\nb", 3, &err), 1);
	cfl_regex_free(re);

	CHECK(cfl_regex_new("ab(", 0, &err) == NULL);
	CHECK_CONTAINS(err.msg, "bad regular expression at offset 3");
	cfl_regex_free(NULL);
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

/* A pattern that backtracks without end (it may come from a peer: the
 * --drop of a WELCOME) fails at PCRE2's match limit, well below PCRE2's
 * own default (10 million steps, 20 GB of heap); an over-long pattern is
 * refused. */
static void t_regex_limits(void)
{
	struct cfl_err err;
	struct cfl_regex *re = cfl_regex_new("^(a|aa)*$", 0, &err);
	char subject[64], *big;

	CHECK_MSG(re != NULL, "%s", err.msg);
	memset(subject, 'a', 60);
	subject[60] = '!';
	subject[61] = 0;
	CHECK_INT(cfl_regex_match(re, subject, 61, &err), -1);
	CHECK_CONTAINS(err.msg, "backtracks too much");
	CHECK_INT(cfl_regex_match(re, "aaaa", 4, &err), 1);
	cfl_regex_free(re);
	big = malloc(5000);
	CHECK(big != NULL);
	memset(big, 'a', 4999);
	big[4999] = 0;
	CHECK(cfl_regex_new(big, 0, &err) == NULL);
	CHECK_CONTAINS(err.msg, "at most 4096");
	free(big);
}

/* Words wrapped from a column with an indent; a word longer than the
 * room stays whole, on a line of its own. */
static void t_buf_wrap(void)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	CHECK_INT(cfl_buf_wrap(&b, "  one two  three four", 4, 2, 14), 0);
	CHECK_STR(b.data, "one two\n  three four\n");
	b.len = 0;
	CHECK_INT(cfl_buf_wrap(&b, "abcdefghijklmnop x", 10, 2, 12), 0);
	CHECK_STR(b.data, "\n  abcdefghijklmnop\n  x\n");
	b.len = 0;
	CHECK_INT(cfl_buf_wrap(&b, "", 0, 0, 80), 0);
	CHECK_STR(b.data, "\n");
	cfl_buf_release(&b);
}

/* Each line wrapped at width with one blank before a continued line;
 * a line's leading blanks kept; width 0 leaves the text alone. */
static void t_buf_wrap_lines(void)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	CHECK_INT(cfl_buf_wrap_lines(&b, "cfl: aa bb cc dd\n  ee ff", 10), 0);
	CHECK_STR(b.data, "cfl: aa bb\n cc dd\n  ee ff\n");
	b.len = 0;
	CHECK_INT(cfl_buf_wrap_lines(&b, "a  b   c", 0), 0);
	CHECK_STR(b.data, "a  b   c\n");
	cfl_buf_release(&b);
}

static void t_buf_csv_field(void)
{
	struct cfl_buf b;

	cfl_buf_init(&b);
	CHECK_INT(cfl_buf_csv_field(&b, "plain"), 0);
	CHECK_INT(cfl_buf_puts(&b, "|"), 0);
	CHECK_INT(cfl_buf_csv_field(&b, "a,\"b\""), 0);
	CHECK_INT(cfl_buf_puts(&b, "|"), 0);
	CHECK_INT(cfl_buf_csv_field(&b, " x"), 0);
	CHECK_INT(cfl_buf_puts(&b, "|"), 0);
	CHECK_INT(cfl_buf_csv_field(&b, ""), 0);
	CHECK_STR(b.data, "plain|\"a,\"\"b\"\"\"|\" x\"|");
	cfl_buf_release(&b);
}

/* A blank after the commas that start a key, none inside a value. */
static void t_params_spaced(void)
{
	char out[64], tiny[6];

	cfl_params_spaced("hidden=64,64,lr=0.1,x.y=2", out, sizeof(out));
	CHECK_STR(out, "hidden=64,64, lr=0.1, x.y=2");
	cfl_params_spaced(NULL, out, sizeof(out));
	CHECK_STR(out, "");
	cfl_params_spaced("a=1,b=2", tiny, sizeof(tiny));
	CHECK_STR(tiny, "a=1, ");
}

/* A missing output name: the input's basename and the extension. */
static void t_path_default_output(void)
{
	static const char *const cases[][2] = {
		{ "datasets/iris.csv", "iris.cfl" }, { "a/b.c/data.csv.gz", "data.cfl" },
		{ "-", "stdin.cfl" }, { ".hidden", ".hidden.cfl" }, { "noext", "noext.cfl" },
		{ "x.gz", "x.cfl" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = cfl_path_default_output(cases[i][0], ".cfl");

		CHECK(out != NULL);
		CHECK_STR(out, cases[i][1]);
		free(out);
	}
}

/* "did you mean": a third of the word may be wrong, one letter at least,
 * swaps of neighbours count once; by default case is ignored, and with
 * the option rules it counts and a name the word starts is close. */
static void t_closest(void)
{
	static const char *const cols[] = { "Species", "sepal_length", NULL, "petal" };
	static const char *const opts[] = { "model", "models", "num-jobs", "seed" };

	CHECK_STR(cfl_closest("species", cols, 4), "Species");
	CHECK_STR(cfl_closest("sepla_length", cols, 4), "sepal_length");
	CHECK(cfl_closest("width", cols, 4) == NULL);
	CHECK(cfl_closest("", cols, 4) == NULL);
	CHECK_STR(cfl_closest("SPECIES", cols, 4), "Species");
	CHECK(cfl_closest_as("SPECIES", cols, 4, CFL_CLOSEST_CASE) == NULL);
	CHECK_STR(cfl_closest_as("modelz", opts, 4, CFL_CLOSEST_CASE), "model");
	CHECK_STR(cfl_closest_as("num", opts, 4, CFL_CLOSEST_CASE | CFL_CLOSEST_PREFIX),
		  "num-jobs");
	CHECK(cfl_closest_as("num", opts, 4, CFL_CLOSEST_CASE) == NULL);
	/* the word itself is no suggestion */
	CHECK_STR(cfl_closest_as("models", opts, 4, CFL_CLOSEST_CASE | CFL_CLOSEST_PREFIX),
		  "model");
}

/* A child that maps the spare count as MPI rank `local` of job ns and
 * then: offers n (n >= 0) and waits for a byte on go before leaving, or
 * (n < 0) exits 0 when it claims one core, gives it back and finds the
 * count where it was. */
static pid_t spare_rank(const char *ns, int local, int n, int ready, int go)
{
	pid_t pid = fork();
	char v[16], b;
	struct cfl_err err;

	if (pid)
		return pid;
	setenv("PMIX_NAMESPACE", ns, 1);
	snprintf(v, sizeof(v), "%d", local);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", v, 1);
	if (cfl_spare_init(&err))
		_exit(2);
	if (n >= 0) {
		cfl_spare_offer(n);
		if (write(ready, "r", 1) != 1 || read(go, &b, 1) != 1)
			_exit(3);
		cfl_spare_offer(0);
		_exit(0);
	}
	if (!cfl_spare_claim())
		_exit(4);
	if (cfl_spare_count() != 0)
		_exit(5);
	cfl_spare_return();
	_exit(cfl_spare_count() == 1 ? 0 : 6);
}

/* Two MPI ranks of one job on one node share one count (a POSIX shared
 * memory object named after the job): what one rank's pool offers,
 * another rank's trial can claim; another job's ranks cannot. */
static void t_spare_shared_by_mpi_ranks(void)
{
	char ns[64], other[64];
	int ready[2], go[2], st;
	pid_t a, b;
	char r;

	snprintf(ns, sizeof(ns), "cfl-test-%d", (int)getpid());
	snprintf(other, sizeof(other), "cfl-test-%d-other", (int)getpid());
	CHECK(pipe(ready) == 0 && pipe(go) == 0);
	a = spare_rank(ns, 0, 1, ready[1], go[0]);
	CHECK(read(ready[0], &r, 1) == 1);
	b = spare_rank(ns, 1, -1, -1, -1);
	CHECK(waitpid(b, &st, 0) == b);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "same job: status %d", st);
	b = spare_rank(other, 1, -1, -1, -1);
	CHECK(waitpid(b, &st, 0) == b);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 4, "another job: status %d", st);
	CHECK(write(go[1], "g", 1) == 1);
	CHECK(waitpid(a, &st, 0) == a);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "offering rank: status %d", st);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	/* the ranks left with _exit, which does not remove the objects */
	for (int i = 0; i < 2; i++) {
		char name[160];

		snprintf(name, sizeof(name), "/cfl-spare-%u-%s", (unsigned)getuid(),
			 i ? other : ns);
		CHECK_MSG(shm_unlink(name) == 0, "%s", name);
	}
}

const struct cfl_test cfl_tests[] = {
	TEST(t_spare_shared_by_mpi_ranks),
	TEST(t_closest),
	TEST(t_path_default_output),
	TEST(t_buf_wrap),
	TEST(t_buf_wrap_lines),
	TEST(t_buf_csv_field),
	TEST(t_params_spaced),
	TEST(t_sha256_vectors),
	TEST(t_sha256_pieces_and_release),
	TEST(t_regex),
	TEST(t_regex_limits),
	TEST(t_rng_deterministic),
	TEST(t_buf_and_doubles_round_trip),
	TEST(t_reader_errors_name_line),
	TEST(t_params),
	{ 0 },
};
