/* Unit tests of the CSV reader's windows: a file is read a window at a
 * time, so every row may cross a window's end (inside a quote, between CR
 * and LF, after a delimiter); the texts of a column whose first text comes
 * after numbers are read in a second pass; a file of numbers holds 8 bytes
 * a cell, not a copy of the file. */
#include "runner.h"

#include "cfl/data.h"
#include "../../src/data/internal.h"

#include <sys/resource.h>
#include <zlib.h>

/* ---- helpers ---- */

static int same_num(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

/* The csv parsed with windows of w bytes (0: the default). */
static int parse_window(struct cfl_csv *csv, const char *text, size_t w,
			struct cfl_err *err)
{
	size_t keep = cfl_csv_window;
	int rc;

	if (w)
		cfl_csv_window = w;
	rc = cfl_csv_parse(csv, "t.csv", text, strlen(text), err);
	cfl_csv_window = keep;
	return rc;
}

/* Every cell, number, line and header name of a equal to b's. */
static void check_same(const struct cfl_csv *a, const struct cfl_csv *b,
		       size_t w)
{
	char ba[CFL_CSV_CELL_BUF], bb[CFL_CSV_CELL_BUF];

	CHECK_MSG(a->n_rows == b->n_rows && a->n_cols == b->n_cols,
		  "window %zu: %zu x %zu vs %zu x %zu", w, a->n_rows, a->n_cols,
		  b->n_rows, b->n_cols);
	CHECK_INT(a->delim, b->delim);
	for (size_t j = 0; j < a->n_cols; j++) {
		CHECK_STR(a->header[j], b->header[j]);
		CHECK_MSG(!a->text[j] == !b->text[j], "window %zu: column %zu keeps text in one only", w, j);
	}
	for (size_t i = 0; i < a->n_rows; i++) {
		CHECK_MSG(a->line[i] == b->line[i], "window %zu: row %zu on line %zu vs %zu",
			  w, i, a->line[i], b->line[i]);
		for (size_t j = 0; j < a->n_cols; j++) {
			const char *ca = cfl_csv_cell(a, i, j, ba);
			const char *cb = cfl_csv_cell(b, i, j, bb);

			CHECK_MSG(same_num(a->num[i * a->n_cols + j], b->num[i * b->n_cols + j]),
				  "window %zu: cell (%zu, %zu) number differs", w, i, j);
			CHECK_MSG((!ca && !cb) || (ca && cb && !strcmp(ca, cb)),
				  "window %zu: cell (%zu, %zu) '%s' vs '%s'", w, i, j,
				  ca ? ca : "(missing)", cb ? cb : "(missing)");
		}
	}
}

static const char *const texts[] = {
	"a,b,c\n\"x,1\",\"line1\nline2\",\"say \"\"hi\"\"\"\n5,6,4\n",
	"\xEF\xBB\xBFname;v\r\nx;1,5\r\n\r\ny;2\r\n",
	"a;b\nx,y;1,5\n",
	"a\tb c\n1\t2\n",
	"a,b\n\n1,2\r\n\n\r\n3,4\n",
	"a,b,c,d,e,f,g,h\n,NA,nan,NULL,?,n/a,\"\",x\n",
	"a,b\n1, 2 \n \"q\" ,4\n5,\n6,",
	"a,b\r1,2\r3,4\r",
	/* numbers first, then text: the first pass cannot know */
	"a,b\n1.50,1\n+2,0\n007,1\n1e0,0\nNA,1\nred,0\n2,1\n",
	",b,\n1,2,3\n",
};

/* ---- cases ---- */

static void t_csv_every_window_end(void)
{
	for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
		struct cfl_csv ref;
		struct cfl_err err = { { 0 } };

		CHECK_MSG(parse_window(&ref, texts[k], 0, &err) == 0, "text %zu: %s", k, err.msg);
		for (size_t w = 2; w <= strlen(texts[k]) + 2; w++) {
			struct cfl_csv c;

			CHECK_MSG(parse_window(&c, texts[k], w, &err) == 0,
				  "text %zu, window %zu: %s", k, w, err.msg);
			check_same(&c, &ref, w);
			cfl_csv_release(&c);
		}
		cfl_csv_release(&ref);
	}
}

static void t_csv_errors_at_every_window(void)
{
	static const char *const bad[][2] = {
		{ "a,b\n1,2\n\"q\nx\",2\n3\n", "t.csv:5: row has 1 fields, the header has 2" },
		{ "a,b\n1,\"open\n", "t.csv:2: unclosed quote" },
		{ "a,b\n1,\"x\"y\n", "t.csv:2: unexpected 'y'" },
		{ "a,b\n", "t.csv:2: no data rows" },
		{ "\n\r\n", "t.csv: empty file" },
	};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		for (size_t w = 2; w <= strlen(bad[k][0]) + 2; w++) {
			struct cfl_csv c;
			struct cfl_err err = { { 0 } };

			CHECK_MSG(parse_window(&c, bad[k][0], w, &err) == -1,
				  "case %zu, window %zu parsed", k, w);
			CHECK_MSG(strstr(err.msg, bad[k][1]), "case %zu, window %zu: '%s'",
				  k, w, err.msg);
		}
}

/* A column whose text comes late keeps its numbers' text as written, and
 * is typed on those texts (levels "1.50", "+2", "007" are not numbers). */
static void t_csv_late_text_keeps_number_text(void)
{
	struct cfl_csv c;
	struct cfl_err err = { { 0 } };
	struct cfl_schema s;

	CHECK(parse_window(&c, texts[8], 4, &err) == 0);
	CHECK(c.text[0] != NULL);
	CHECK(c.text[1] == NULL);	/* only numbers: no text kept */
	CHECK_STR(c.text[0][0], "1.50");
	CHECK_STR(c.text[0][1], "+2");
	CHECK_STR(c.text[0][2], "007");
	CHECK_STR(c.text[0][3], "1e0");
	CHECK(c.text[0][4] == NULL);
	CHECK(cfl_csv_missing(&c, 4, 0));
	CHECK(!cfl_csv_missing(&c, 5, 0));
	CHECK_NEAR(c.num[0], 1.5, 0);
	CHECK(cfl_schema_infer(&s, &c, NULL, &err) == 0);
	CHECK_INT(s.cols[0].type, CFL_COL_CATEGORICAL);
	CHECK_INT(s.cols[0].n_distinct, 6);	/* 1.50 +2 007 1e0 red 2 */
	cfl_schema_release(&s);
	cfl_csv_release(&c);
}

/* A file of many windows: cfl_csv_read from a file gives what the parse
 * of the same text gives, with the late column's text found again. */
static void t_csv_read_file_in_windows(void)
{
	const char *path = cfl_test_path("big.csv");
	FILE *f = fopen(path, "w");
	struct cfl_csv a, b;
	struct cfl_err err = { { 0 } };
	char *text;
	long len;
	size_t keep = cfl_csv_window;

	CHECK(f != NULL);
	fputs("id,x,\"q\",s\r\n", f);
	for (int i = 0; i < 20000; i++)
		fprintf(f, "%d,%.6g,%s,%s\r\n", i, (i % 97) * 0.25,
			i == 19990 ? "late text" : i % 7 ? "1.0" : "NA",
			i % 13 == 0 ? "\"a\nb\"" : "b");
	CHECK(fclose(f) == 0);
	f = fopen(path, "rb");
	CHECK(f != NULL);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	text = malloc((size_t)len + 1);
	CHECK(text && fread(text, 1, (size_t)len, f) == (size_t)len);
	text[len] = '\0';
	fclose(f);
	CHECK_MSG(cfl_csv_parse(&a, path, text, (size_t)len, &err) == 0, "%s", err.msg);
	cfl_csv_window = 4096;
	CHECK_MSG(cfl_csv_read(&b, path, &err) == 0, "%s", err.msg);
	cfl_csv_window = keep;
	check_same(&a, &b, 4096);
	CHECK_INT(b.n_rows, 20000);
	CHECK(b.text[2] != NULL);
	CHECK_STR(b.text[2][1], "1.0");
	CHECK(b.text[2][0] == NULL);
	CHECK_STR(b.text[3][13], "a\nb");
	CHECK_INT(b.line[19999], 20000 + 1 + 20000 / 13 + 1);
	free(text);
	cfl_csv_release(&a);
	cfl_csv_release(&b);
}

/* The peak memory of cfl_data_load on a file of numbers: the rise of this
 * process's maximum resident set over the load of a 17 MB file (8 bytes a
 * cell, as many as its numbers take) is 1.85 times the file; the reader
 * that kept the file and a pointer a cell took 3.7 times.  The bound, 2.5,
 * leaves room for the allocator and still catches either copy coming
 * back. */
static void t_data_load_numbers_peak_memory(void)
{
#if defined(__SANITIZE_ADDRESS__)
	SKIP("AddressSanitizer keeps freed blocks resident (its quarantine)");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	SKIP("AddressSanitizer keeps freed blocks resident (its quarantine)");
#endif
#endif
	const char *path = cfl_test_path("numbers.csv");
	FILE *f = fopen(path, "w");
	struct cfl_data_opts o;
	struct cfl_data d;
	struct cfl_err err = { { 0 } };
	struct rusage before, after;
	struct cfl_rng rng;
	long size;
	double rise;

	CHECK(f != NULL);
	cfl_rng_seed(&rng, 21);
	for (int j = 0; j < 20; j++)
		fprintf(f, "x%d,", j);
	fputs("y\n", f);
	for (int i = 0; i < 100000; i++) {
		for (int j = 0; j < 20; j++)
			fprintf(f, "%.6g,", (cfl_rng_uniform(&rng) - 0.5) * (j + 1) * 100);
		fprintf(f, "%d\n", i % 2);
	}
	size = ftell(f);
	CHECK(fclose(f) == 0);
	cfl_data_opts_init(&o);
	o.path = path;
	getrusage(RUSAGE_SELF, &before);
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	getrusage(RUSAGE_SELF, &after);
	CHECK_INT(d.csv.n_rows, 100000);
	cfl_data_release(&d);
	rise = (double)(after.ru_maxrss - before.ru_maxrss) * 1024.0;
	CHECK_MSG(rise < 2.5 * (double)size,
		  "the load's peak rose by %.1f MB on a %.1f MB file (%.2fx, at most 2.5x)",
		  rise / 1e6, (double)size / 1e6, rise / (double)size);
}

/* ---- bytes that are not plain UTF-8 CSV ---- */

/* gzip bytes parse as the text they hold, from memory and from a file
 * whatever its name; a cut gzip stream is an error, not a short table. */
static void t_csv_gzip(void)
{
	const char *text = "a,b\n1,x\n2,y\n3,x\n";
	const char *path = cfl_test_path("g.csv");	/* not .gz: the bytes say */
	struct cfl_csv a, b;
	struct cfl_err err = { { 0 } };
	unsigned char z[256];
	uLongf zlen = sizeof(z);
	z_stream zs;
	FILE *f;

	/* a gzip member (windowBits 15 + 16) */
	memset(&zs, 0, sizeof(zs));
	CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	zs.next_in = (unsigned char *)text;
	zs.avail_in = (uInt)strlen(text);
	zs.next_out = z;
	zs.avail_out = sizeof(z);
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	zlen = zs.total_out;
	deflateEnd(&zs);
	CHECK_MSG(cfl_csv_parse(&a, "m.csv.gz", (char *)z, zlen, &err) == 0, "%s", err.msg);
	CHECK_INT(a.gzip, 1);
	CHECK_INT(a.n_rows, 3);
	CHECK_STR(a.text[1][2], "x");
	f = fopen(path, "wb");
	CHECK(f && fwrite(z, 1, zlen, f) == zlen && fclose(f) == 0);
	CHECK_MSG(cfl_csv_read(&b, path, &err) == 0, "%s", err.msg);
	check_same(&a, &b, 0);
	cfl_csv_release(&a);
	cfl_csv_release(&b);
	CHECK(cfl_csv_parse(&a, "cut.gz", (char *)z, zlen - 12, &err) == -1);
	CHECK(!strncmp(err.msg, "cut.gz: gzip data cut short (after ", 35));
}

/* Other binary formats are named, with what to do. */
static void t_csv_binary_named(void)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *msg;
	} cases[] = {
		{ "PK\3\4\24\0\0\0", 8, "b: not a CSV file: it looks like a zip archive" },
		{ "PAR1\25\0\25", 7, "b: not a CSV file: it looks like a Parquet file; convert it" },
		{ "[\n  {\"a\": 1}]", 13, "b: not a CSV file: it looks like JSON" },
		{ "{\"a\": [1, 2]}", 13, "b: not a CSV file: it looks like JSON" },
		{ "\xff\xfe" "a\0,\0", 6, "b: not a CSV file: it looks like UTF-16 text" },
		{ "a,b\n1,\0\n", 8, "b: binary file (a NUL byte at byte offset 6)" },
	};
	struct cfl_csv c;
	struct cfl_err err = { { 0 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(cfl_csv_parse(&c, "b", cases[i].bytes, cases[i].len, &err) == -1);
		CHECK_MSG(!strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)),
			  "case %zu: %s", i, err.msg);
	}
	/* a tar archive (what is inside a .tar.gz) */
	{
		char tar[600];

		memset(tar, 0, sizeof(tar));
		memcpy(tar, "a.csv", 5);
		memcpy(tar + 257, "ustar", 5);
		CHECK(cfl_csv_parse(&c, "t.tar", tar, sizeof(tar), &err) == -1);
		CHECK_STR(err.msg, "t.tar: not a CSV file: it looks like a tar archive; extract the CSV from it (tar xf FILE)");
	}
	/* a header that starts with '[' is still CSV */
	CHECK_MSG(cfl_csv_parse(&c, "b", "[a],b\n1,2\n", 10, &err) == 0, "%s", err.msg);
	cfl_csv_release(&c);
}

/* Text that is not UTF-8: Windows-1252 throughout is transcoded (at every
 * window size: the bad byte may be in any window), a mix is refused at its
 * first bad byte with the line and offset, UTF-8 cut by a window's end is
 * not taken for a bad byte. */
static void t_csv_encoding(void)
{
	const char *latin = "name,v\nM\xfcnchen,1\nK\xf6ln \x80,2\nZ\xfcrich,3\n";
	const char *utf8 = "name,v\nM\xc3\xbcnchen,1\nK\xc3\xb6ln \xe2\x82\xac,2\nZ\xc3\xbcrich,3\n";
	const char *mixed = "name,v\nM\xc3\xbcnchen,1\nK\xf6ln,2\n";
	struct cfl_csv a, b;
	struct cfl_err err = { { 0 } };

	for (size_t w = 1; w <= 48; w++) {
		CHECK_MSG(parse_window(&a, latin, w, &err) == 0, "window %zu: %s", w, err.msg);
		CHECK_MSG(parse_window(&b, utf8, w, &err) == 0, "window %zu: %s", w, err.msg);
		check_same(&a, &b, w);
		CHECK_STR(a.recoded, "Windows-1252");
		CHECK_INT(a.recoded_line, 2);
		CHECK(b.recoded == NULL);
		CHECK_STR(a.text[0][1], "K\xc3\xb6ln \xe2\x82\xac");
		cfl_csv_release(&a);
		cfl_csv_release(&b);
		CHECK(parse_window(&a, mixed, w, &err) == -1);
		CHECK_STR(err.msg, "t.csv:3: byte 0xF6 at byte offset 19 is not UTF-8, and the text has UTF-8 elsewhere: the file mixes encodings; convert the part that is not (iconv -f LATIN1 -t UTF-8)");
	}
	/* overlong forms and surrogates are not UTF-8 either */
	CHECK(parse_window(&a, "a,b\n\xc0\xaf,1\n\xc3\xa9,2\n", 0, &err) == -1);
	CHECK(strstr(err.msg, "t.csv:2: byte 0xC0 at byte offset 4") != NULL);
	CHECK(parse_window(&a, "a,b\n\xed\xa0\x80,1\n\xc3\xa9,2\n", 0, &err) == -1);
	CHECK(strstr(err.msg, "byte 0xED at byte offset 4") != NULL);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_csv_every_window_end),
	TEST(t_csv_errors_at_every_window),
	TEST(t_csv_late_text_keeps_number_text),
	TEST(t_csv_read_file_in_windows),
	TEST(t_data_load_numbers_peak_memory),
	TEST(t_csv_gzip),
	TEST(t_csv_binary_named),
	TEST(t_csv_encoding),
	{ 0 },
};
