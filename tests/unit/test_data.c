/* Unit tests of src/data: CSV edge cases, typing rules, encoding with train
 * statistics, the encoder's save/load, splits. */
#include "runner.h"

#include "cfl/data.h"

/* ---- helpers ---- */

static void parse_ok(struct cfl_csv *csv, const char *text)
{
	struct cfl_err err = { { 0 } };

	CHECK_MSG(cfl_csv_parse(csv, "t.csv", text, strlen(text), &err) == 0,
		  "parse failed: %s", err.msg);
}

static const char *parse_err(const char *text)
{
	static struct cfl_err err;
	struct cfl_csv csv;

	memset(&err, 0, sizeof(err));
	CHECK(cfl_csv_parse(&csv, "t.csv", text, strlen(text), &err) == -1);
	return err.msg;
}

static char cell_buf[CFL_CSV_CELL_BUF];
#define CELL(csv, i, j) cfl_csv_cell(&(csv), (i), (j), cell_buf)

static void infer_ok(struct cfl_schema *s, const struct cfl_csv *csv,
		     const struct cfl_schema_opts *o)
{
	struct cfl_err err = { { 0 } };

	CHECK_MSG(cfl_schema_infer(s, csv, o, &err) == 0, "infer failed: %s",
		  err.msg);
}

/* A file of n rows: x = i, c = one of red/green/blue, z = 7 (constant),
 * id = 1000 + i, y = i % k as class names "a", "b", ... */
static char *make_rows(size_t n, int k)
{
	struct cfl_buf b;
	static const char *colors[] = { "red", "green", "blue" };

	cfl_buf_init(&b);
	cfl_buf_puts(&b, "x,c,z,id,y\n");
	for (size_t i = 0; i < n; i++)
		cfl_buf_printf(&b, "%zu.5,%s,7,%zu,%c\n", i, colors[i % 3],
			       1000 + i, (char)('a' + (i % (size_t)k)));
	return b.data;
}

/* ---- CSV ---- */

static void t_csv_quotes(void)
{
	struct cfl_csv csv;

	parse_ok(&csv, "a,b,c\n\"x,1\",\"line1\nline2\",\"say \"\"hi\"\"\"\n2,3,4\n");
	CHECK_INT(csv.n_rows, 2);
	CHECK_INT(csv.n_cols, 3);
	CHECK_STR(CELL(csv, 0, 0), "x,1");
	CHECK_STR(CELL(csv, 0, 1), "line1\nline2");
	CHECK_STR(CELL(csv, 0, 2), "say \"hi\"");
	CHECK_INT(csv.line[0], 2);
	CHECK_INT(csv.line[1], 4);	/* the quoted newline counts */
	CHECK_NEAR(csv.num[1 * 3 + 2], 4, 0);
	CHECK(isnan(csv.num[0]));
	cfl_csv_release(&csv);
}

static void t_csv_crlf_bom_and_delimiters(void)
{
	struct cfl_csv csv;

	parse_ok(&csv, "\xEF\xBB\xBFname;v\r\nx;1,5\r\ny;2\r\n");
	CHECK_INT(csv.delim, ';');
	CHECK_STR(csv.header[0], "name");	/* the BOM is gone */
	CHECK_INT(csv.n_rows, 2);
	CHECK_NEAR(csv.num[1], 1.5, 0);	/* a decimal comma in a ';' file */
	CHECK_STR(CELL(csv, 1, 1), "2");
	CHECK_INT(csv.line[1], 3);
	cfl_csv_release(&csv);

	parse_ok(&csv, "a;b;c\n1,2,3;x,y;1,5\n");
	CHECK(isnan(csv.num[0]));	/* two commas: text */
	CHECK_STR(CELL(csv, 0, 1), "x,y");
	CHECK_NEAR(csv.num[2], 1.5, 0);
	cfl_csv_release(&csv);

	parse_ok(&csv, "a\tb c\n1\t2\n");
	CHECK_INT(csv.delim, '\t');
	CHECK_STR(csv.header[1], "b c");
	cfl_csv_release(&csv);

	/* no trailing newline, blank lines skipped, blanks trimmed */
	parse_ok(&csv, "a,b\n\n 1 , 2\n\n3,4");
	CHECK_INT(csv.n_rows, 2);
	CHECK_STR(CELL(csv, 0, 0), "1");
	CHECK_STR(CELL(csv, 1, 1), "4");
	CHECK_INT(csv.line[1], 5);
	cfl_csv_release(&csv);
}

static void t_csv_missing_values(void)
{
	struct cfl_csv csv;

	parse_ok(&csv, "a,b,c,d,e,f,g,h\n,NA,nan,NULL,?,n/a,\"\",x\n");
	for (int j = 0; j < 7; j++)
		CHECK_MSG(CELL(csv, 0, j) == NULL, "cell %d not missing", j);
	CHECK_STR(CELL(csv, 0, 7), "x");
	cfl_csv_release(&csv);
	CHECK(cfl_csv_is_missing("Na"));
	CHECK(!cfl_csv_is_missing("nana"));
	CHECK(!cfl_csv_is_missing("??"));
}

static void t_csv_numbers(void)
{
	CHECK_NEAR(cfl_csv_number("1.5"), 1.5, 0);
	CHECK_NEAR(cfl_csv_number("-0.1"), -0.1, 0);
	CHECK(cfl_csv_number("0.1") == 0.1);	/* correctly rounded */
	CHECK(cfl_csv_number("123456789.123456789") == 123456789.123456789);
	CHECK_NEAR(cfl_csv_number("1e3"), 1000, 0);
	CHECK_NEAR(cfl_csv_number(".5"), 0.5, 0);
	CHECK_NEAR(cfl_csv_number("5."), 5, 0);
	CHECK(isnan(cfl_csv_number("inf")));
	CHECK(isnan(cfl_csv_number("0x10")));
	CHECK(isnan(cfl_csv_number("1e")));
	CHECK(isnan(cfl_csv_number("-")));
	CHECK(isnan(cfl_csv_number(".")));
	CHECK(isnan(cfl_csv_number("1 2")));
	CHECK(isnan(cfl_csv_number("1e999")));
}

static void t_csv_errors(void)
{
	CHECK_CONTAINS(parse_err(""), "t.csv: empty file");
	CHECK_CONTAINS(parse_err("\n\r\n"), "empty file");
	CHECK_CONTAINS(parse_err("a,b\n"), "no data rows");
	CHECK_CONTAINS(parse_err("a,b\n1,2\n\"q\nx\",2\n3\n"),
		       "t.csv:5: row has 1 fields, the header has 2");
	CHECK_CONTAINS(parse_err("a,b\n1,2,3\n"), "t.csv:2: row has 3 fields");
	CHECK_CONTAINS(parse_err("a,b\n1,\"open\n"), "t.csv:2: unclosed quote");
	CHECK_CONTAINS(parse_err("a,b\n1,\"x\"y\n"), "t.csv:2: unexpected 'y'");
	CHECK_CONTAINS(parse_err("a,a\n1,2\n"), "duplicate column name 'a'");
	{
		struct cfl_csv csv;
		struct cfl_err err = { { 0 } };

		CHECK(cfl_csv_parse(&csv, "t.csv", "a,b\n1,\0\n", 7, &err) == -1);
		CHECK_CONTAINS(err.msg, "t.csv: binary file");
	}
}

static void t_csv_empty_header_names(void)
{
	struct cfl_csv csv;

	parse_ok(&csv, ",b,\n1,2,3\n");
	CHECK_STR(csv.header[0], "column_1");
	CHECK_STR(csv.header[2], "column_3");
	CHECK_INT(cfl_csv_column(&csv, "b"), 1);
	CHECK_INT(cfl_csv_column(&csv, "nope"), -1);
	cfl_csv_release(&csv);
}

static void t_csv_read_missing_file(void)
{
	struct cfl_csv csv;
	struct cfl_err err = { { 0 } };

	CHECK(cfl_csv_read(&csv, "/nonexistent/x.csv", &err) == -1);
	CHECK_CONTAINS(err.msg, "cannot open '/nonexistent/x.csv'");
}

/* ---- typing ---- */

static void t_schema_types_and_drops(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	char *text = make_rows(30, 3);

	parse_ok(&csv, text);
	free(text);
	infer_ok(&s, &csv, NULL);
	CHECK_INT(s.target, 4);
	CHECK_INT(s.cols[0].type, CFL_COL_NUMERIC);
	CHECK_INT(s.cols[1].type, CFL_COL_CATEGORICAL);
	CHECK_INT(s.cols[2].type, CFL_COL_DROPPED);
	CHECK_STR(s.cols[2].drop_reason, "constant");
	CHECK_INT(s.cols[3].type, CFL_COL_DROPPED);
	CHECK_STR(s.cols[3].drop_reason, "id-like (all distinct)");
	CHECK_INT(s.cols[4].type, CFL_COL_TARGET);
	CHECK_INT(s.task, CFL_TASK_CLF);
	CHECK_INT(s.n_classes, 3);
	CHECK_STR(s.class_names[0], "a");
	CHECK_INT(s.class_counts[0] + s.class_counts[1] + s.class_counts[2], 30);
	CHECK_INT(s.cols[1].n_distinct, 3);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
}

/* Distinct counts stop past 1000 where typing cannot tell more: at once
 * for non-integers, after a repeat for integers and text (which id-like
 * needs counted to the end); below that, and for id-like columns, they are
 * exact.  Columns: f (2000 floats), id (2000 distinct integers), r
 * (integers 0..1499 cycling), t (text, 999 levels cycling), few (floats,
 * 3 values), y (0/1). */
static void t_schema_distinct_cap(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_buf b;
	struct cfl_schema_opts o = { 0 };

	cfl_buf_init(&b);
	cfl_buf_puts(&b, "f,id,r,t,few,y\n");
	for (size_t i = 0; i < 2000; i++)
		cfl_buf_printf(&b, "%zu.25,%zu,%zu,w%zu,%zu.5,%zu\n", i, 5000 + i,
			       i % 1500, i % 999, i % 3, i % 2);
	parse_ok(&csv, b.data);
	free(b.data);
	o.categorical_re = "^r$";
	infer_ok(&s, &csv, &o);
	CHECK_INT(s.cols[0].n_distinct, 1001);
	CHECK(s.cols[0].distinct_capped);
	CHECK_INT(s.cols[0].type, CFL_COL_NUMERIC);
	CHECK_INT(s.cols[1].n_distinct, 2000);
	CHECK(!s.cols[1].distinct_capped);
	CHECK_STR(s.cols[1].drop_reason, "id-like (all distinct)");
	CHECK(s.cols[2].distinct_capped);
	CHECK_INT(s.cols[2].n_distinct, 1001);
	CHECK_STR(s.cols[2].drop_reason, "too many categories");
	CHECK_INT(s.cols[3].n_distinct, 999);
	CHECK(!s.cols[3].distinct_capped);
	CHECK_INT(s.cols[4].n_distinct, 3);
	CHECK(!s.cols[4].distinct_capped);
	CHECK_INT(s.n_classes, 2);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
}

static void t_schema_integer_codes(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_schema_opts o = { 0 };
	struct cfl_err err = { { 0 } };
	struct cfl_buf b;

	/* integers, few values or many: numeric (an ordinal score keeps its
	 * order); --categorical names the codes; text stays categorical */
	cfl_buf_init(&b);
	cfl_buf_puts(&b, "code,count,grade,word,y\n");
	for (int i = 0; i < 40; i++)
		cfl_buf_printf(&b, "%d,%d,%d,w%d,%d\n", i % 4 + 1, (i * 7) % 25,
			       i % 3, i % 5, i % 2);
	parse_ok(&csv, b.data);
	infer_ok(&s, &csv, NULL);
	CHECK_INT(s.cols[0].type, CFL_COL_NUMERIC);
	CHECK_STR(s.cols[0].type_reason, "integers");
	CHECK_INT(s.cols[1].type, CFL_COL_NUMERIC);
	CHECK_INT(s.cols[2].type, CFL_COL_NUMERIC);
	CHECK_INT(s.cols[3].type, CFL_COL_CATEGORICAL);
	CHECK_STR(s.cols[3].type_reason, "text");
	CHECK_INT(s.task, CFL_TASK_CLF);
	cfl_schema_release(&s);
	o.categorical_re = "^(code|count)$";
	CHECK_MSG(cfl_schema_infer(&s, &csv, &o, &err) == 0, "%s", err.msg);
	CHECK_INT(s.cols[0].type, CFL_COL_CATEGORICAL);
	CHECK_STR(s.cols[0].type_reason, "--categorical");
	CHECK_INT(s.cols[1].type, CFL_COL_CATEGORICAL);
	CHECK_INT(s.cols[2].type, CFL_COL_NUMERIC);
	CHECK_INT(s.cols[3].type, CFL_COL_CATEGORICAL);
	cfl_schema_release(&s);
	o.categorical_re = "(";
	CHECK(cfl_schema_infer(&s, &csv, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "--categorical '(': bad regular expression");
	cfl_csv_release(&csv);
	cfl_buf_release(&b);
}

static void t_schema_scale_family_stays_numeric(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_buf b;

	/* pixel-like: most integer columns have many values, so the few
	 * with 3 values are on the same scale and stay numeric */
	cfl_buf_init(&b);
	cfl_buf_puts(&b, "p0,p1,p2,p3,y\n");
	for (int i = 0; i < 60; i++)
		cfl_buf_printf(&b, "%d,%d,%d,%d,%d\n", i % 3, i % 17, (i * 5) % 16,
			       (i * 3) % 13, i % 2);
	parse_ok(&csv, b.data);
	infer_ok(&s, &csv, NULL);
	for (int j = 0; j < 4; j++)
		CHECK_INT(s.cols[j].type, CFL_COL_NUMERIC);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
	cfl_buf_release(&b);
}

static void t_schema_task_inference(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_schema_opts o = { 0 };
	struct cfl_buf b;
	struct cfl_err err = { { 0 } };

	cfl_buf_init(&b);
	cfl_buf_puts(&b, "x,y,r\n");
	for (int i = 0; i < 50; i++)
		cfl_buf_printf(&b, "%d.25,%d,%d.5\n", i, (i % 3) * 10, i);
	parse_ok(&csv, b.data);
	/* the last column: non-integer -> regression */
	infer_ok(&s, &csv, NULL);
	CHECK_INT(s.task, CFL_TASK_REG);
	CHECK_INT(s.n_classes, 0);
	cfl_schema_release(&s);
	/* --target y: integers with few values -> classes sorted numerically */
	o.target = "y";
	infer_ok(&s, &csv, &o);
	CHECK_INT(s.task, CFL_TASK_CLF);
	CHECK_INT(s.n_classes, 3);
	CHECK_STR(s.class_names[0], "0");
	CHECK_STR(s.class_names[1], "10");
	CHECK_STR(s.class_names[2], "20");
	CHECK_INT(s.cols[2].type, CFL_COL_NUMERIC);
	cfl_schema_release(&s);
	/* forced regression on y */
	o.task = CFL_TASK_REG;
	infer_ok(&s, &csv, &o);
	CHECK_INT(s.task, CFL_TASK_REG);
	cfl_schema_release(&s);
	/* missing target column */
	o.target = "nope";
	CHECK(cfl_schema_infer(&s, &csv, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "no column named 'nope'");
	cfl_csv_release(&csv);
	cfl_buf_release(&b);
}

static void t_schema_errors(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_schema_opts o = { 0 };
	struct cfl_err err = { { 0 } };
	struct cfl_buf b;

	parse_ok(&csv, "x,y\n1,a\n2,a\n3,a\n");
	CHECK(cfl_schema_infer(&s, &csv, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "target 'y' has one class ('a')");
	o.drop_re = "(";
	CHECK(cfl_schema_infer(&s, &csv, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "--drop '('");
	o.drop_re = NULL;
	o.only_re = "[z";
	CHECK(cfl_schema_infer(&s, &csv, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "--only '[z'");
	cfl_csv_release(&csv);

	parse_ok(&csv, "x,y\n1,a\n2,\n3,b\n");
	CHECK(cfl_schema_infer(&s, &csv, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "t.csv:3: missing value in the target column 'y'");
	cfl_csv_release(&csv);

	/* one text cell among many numbers: a broken cell, with its line */
	cfl_buf_init(&b);
	cfl_buf_puts(&b, "x,y\n");
	for (int i = 0; i < 30; i++)
		cfl_buf_printf(&b, "%s,%d\n", i == 17 ? "oops" : "1.5", i % 2);
	b.data[4] = '2';	/* not constant */
	parse_ok(&csv, b.data);
	CHECK(cfl_schema_infer(&s, &csv, NULL, &err) == -1);
	CHECK_CONTAINS(err.msg, "t.csv:19: text 'oops' in numeric column 'x'");
	cfl_csv_release(&csv);
	cfl_buf_release(&b);

	parse_ok(&csv, "x,y\n1,a\n2,b\n");
	o.only_re = "^nothing$";
	CHECK(cfl_schema_infer(&s, &csv, &o, &err) == -1);
	CHECK_CONTAINS(err.msg, "no usable feature columns");
	cfl_csv_release(&csv);
}

static void t_schema_regex_select(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_schema_opts o = { 0 };

	parse_ok(&csv, "a1,a2,b1,y\n1.5,2.5,3.5,x\n4.5,5.5,6.5,z\n7.5,8.5,9.5,x\n");
	o.drop_re = "2$";
	infer_ok(&s, &csv, &o);
	CHECK_INT(s.cols[0].type, CFL_COL_NUMERIC);
	CHECK_INT(s.cols[1].type, CFL_COL_DROPPED);
	CHECK_STR(s.cols[1].drop_reason, "--drop");
	cfl_schema_release(&s);
	o.drop_re = NULL;
	o.only_re = "^a";
	infer_ok(&s, &csv, &o);
	CHECK_INT(s.cols[2].type, CFL_COL_DROPPED);
	CHECK_STR(s.cols[2].drop_reason, "not in --only");
	CHECK_INT(s.cols[3].type, CFL_COL_TARGET);	/* never dropped */
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
}

/* ---- encoding ---- */

static void t_encode_train_statistics(void)
{
	struct cfl_csv tr, te;
	struct cfl_schema s;
	struct cfl_encoder enc;
	struct cfl_xy xy;
	struct cfl_err err = { { 0 } };
	size_t idx[4] = { 0, 1, 2, 3 };
	char name[64];

	/* x: 1.5,2.5,3.5,NA -> median = mean = 2.5, std sqrt(2/3);
	 * c: red/blue/red/NA */
	parse_ok(&tr, "x,c,y\n1.5,red,p\n2.5,blue,q\n3.5,red,p\nNA,,q\n");
	infer_ok(&s, &tr, NULL);
	CHECK(cfl_encoder_fit(&enc, &s, &tr, idx, 4, &err) == 0);
	CHECK_INT(enc.d, 1 + 3);	/* x, c=blue, c=red, c=? */
	CHECK_INT(enc.n_classes, 2);
	cfl_encoder_feature_name(&enc, 0, name, sizeof(name));
	CHECK_STR(name, "x");
	cfl_encoder_feature_name(&enc, 1, name, sizeof(name));
	CHECK_STR(name, "c=blue");
	cfl_encoder_feature_name(&enc, 3, name, sizeof(name));
	CHECK_STR(name, "c=?");
	cfl_xy_init(&xy);
	CHECK(cfl_encoder_apply(&enc, &tr, 1, &xy, &err) == 0);
	CHECK_NEAR(xy.x[0 * 4 + 0], (1.5 - 2.5) / sqrt(2.0 / 3), 1e-6);
	CHECK_NEAR(xy.x[3 * 4 + 0], 0, 1e-6);	/* imputed median = mean */
	CHECK_NEAR(xy.x[3 * 4 + 3], 1, 0);	/* missing -> the ? slot */
	CHECK_NEAR(xy.x[1 * 4 + 1], 1, 0);
	CHECK_NEAR(xy.y[1], 1, 0);

	/* test rows: train statistics, unseen category, columns reordered */
	parse_ok(&te, "c,y,x\ngreen,q,5\nred,p,\n");
	CHECK(cfl_encoder_apply(&enc, &te, 1, &xy, &err) == 0);
	CHECK_INT(xy.n, 2);
	CHECK_NEAR(xy.x[0], (5 - 2.5) / sqrt(2.0 / 3), 1e-6);
	CHECK_NEAR(xy.x[3], 1, 0);		/* green unseen */
	CHECK_NEAR(xy.x[4 + 2], 1, 0);		/* red */
	CHECK_NEAR(xy.x[4 + 0], 0, 1e-6);	/* imputed */
	CHECK_NEAR(xy.y[0], 1, 0);
	cfl_csv_release(&te);

	/* without the target: y stays NULL with -1, an error with 1 */
	parse_ok(&te, "x,c\n1,red\n");
	CHECK(cfl_encoder_apply(&enc, &te, -1, &xy, &err) == 0);
	CHECK(xy.y == NULL);
	CHECK(cfl_encoder_apply(&enc, &te, 1, &xy, &err) == -1);
	CHECK_CONTAINS(err.msg, "no target column 'y'");
	cfl_csv_release(&te);

	parse_ok(&te, "x,c,y\n1,red,p\nabc,red,p\n");
	CHECK(cfl_encoder_apply(&enc, &te, 1, &xy, &err) == -1);
	CHECK_CONTAINS(err.msg, "t.csv:3: text 'abc' in numeric column 'x'");
	cfl_csv_release(&te);
	parse_ok(&te, "x,c,y\n1,red,zz\n");
	CHECK(cfl_encoder_apply(&enc, &te, 1, &xy, &err) == -1);
	CHECK_CONTAINS(err.msg, "t.csv:2: unknown class 'zz'");
	cfl_csv_release(&te);
	parse_ok(&te, "c,y\nred,p\n");
	CHECK(cfl_encoder_apply(&enc, &te, 1, &xy, &err) == -1);
	CHECK_CONTAINS(err.msg, "no column 'x'");
	cfl_csv_release(&te);

	cfl_xy_release(&xy);
	cfl_encoder_release(&enc);
	cfl_schema_release(&s);
	cfl_csv_release(&tr);
}

static void t_encode_fit_uses_train_rows_only(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_encoder enc;
	struct cfl_xy xy;
	struct cfl_err err = { { 0 } };
	size_t idx[2] = { 0, 1 };

	parse_ok(&csv, "x,y\n0.5,a\n2.5,b\n100.5,a\n");
	infer_ok(&s, &csv, NULL);
	CHECK(cfl_encoder_fit(&enc, &s, &csv, idx, 2, &err) == 0);
	cfl_xy_init(&xy);
	CHECK(cfl_encoder_apply(&enc, &csv, 1, &xy, &err) == 0);
	CHECK_NEAR(xy.x[0], -1, 1e-6);	/* mean 1, std 1 from rows 0-1 */
	CHECK_NEAR(xy.x[2], 99, 1e-4);
	cfl_xy_release(&xy);
	cfl_encoder_release(&enc);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
}

/* `cfl data describe` on iris: the facts, a row per column with its
 * note, the classes with their shares, the split; no line past 80. */
static void t_data_describe(void)
{
	struct cfl_data_opts o;
	struct cfl_data d;
	struct cfl_err err = { { 0 } };
	struct cfl_buf b;

	cfl_data_opts_init(&o);
	o.path = "datasets/iris.csv";
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	cfl_buf_init(&b);
	CHECK_INT(cfl_data_describe(&d, &o, &b), 0);
	CHECK_CONTAINS(b.data, "rows      150\n");
	CHECK_CONTAINS(b.data, "columns   5 (comma-separated): 4 numeric, 0 categorical, 0 dropped, 1 target\n");
	CHECK_CONTAINS(b.data, "task      classification (inferred)\n");
	CHECK_CONTAINS(b.data, "3 classes\n");
	CHECK_CONTAINS(b.data, "  33.3%\n");
	CHECK_CONTAINS(b.data, "split     seed 0: train 108, valid 12, test 30\n");
	CHECK_CONTAINS(b.data, "encoded   4 features\n");
	for (const char *l = b.data; *l; l += strcspn(l, "\n") + 1)
		CHECK_MSG(strcspn(l, "\n") <= 80, "%.90s", l);
	cfl_buf_release(&b);
	cfl_data_release(&d);
}

/* cfl predict's CSV: kept cells as written (quoted where they must be),
 * the most probable class (the first of a tie), the probabilities. */
static void t_format_predictions(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_encoder enc;
	struct cfl_err err = { { 0 } };
	struct cfl_buf b;
	size_t idx[3] = { 0, 1, 2 }, cols[1] = { 0 };
	double pred[6] = { 0.25, 0.75, 0.5, 0.5, 0.9, 0.1 };

	parse_ok(&csv, "id,x,y\n007,1,a\n\"a,b\",2,b\n9,3,a\n");
	infer_ok(&s, &csv, NULL);
	CHECK(cfl_encoder_fit(&enc, &s, &csv, idx, 3, &err) == 0);
	CHECK_INT(enc.n_classes, 2);
	cfl_buf_init(&b);
	CHECK_INT(cfl_encoder_format_predictions(&enc, pred, 3, 1, &csv, cols, 1, &b), 0);
	CHECK_STR(b.data, "id,prediction,proba_a,proba_b\n"
		  "007,b,0.25,0.75\n\"a,b\",a,0.5,0.5\n9,a,0.9,0.1\n");
	b.len = 0;
	CHECK_INT(cfl_encoder_format_predictions(&enc, pred, 1, 0, &csv, cols, 0, &b), 0);
	CHECK_STR(b.data, "prediction\nb\n");
	cfl_buf_release(&b);
	cfl_encoder_release(&enc);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
}

static void t_encoder_save_load(void)
{
	struct cfl_csv csv;
	struct cfl_schema s;
	struct cfl_encoder enc, back, zero;
	struct cfl_xy a, b2;
	struct cfl_err err = { { 0 } };
	struct cfl_buf b, b3;
	struct cfl_reader r;
	size_t idx[5] = { 0, 1, 2, 3, 4 };

	parse_ok(&csv, "x,\"my col\",k,y\n0.1,\"a b\",1,3\n0.2,\"50%\",2,1\n0.3,\"x\ny\",3,3\n0.7,\"a b\",1,2\nNA,z,2,1\n");
	{
		struct cfl_schema_opts o = { 0 };

		o.categorical_re = "^k$";
		CHECK_MSG(cfl_schema_infer(&s, &csv, &o, &err) == 0, "%s", err.msg);
	}
	CHECK_INT(s.cols[2].type, CFL_COL_CATEGORICAL);	/* integer codes */
	CHECK(cfl_encoder_fit(&enc, &s, &csv, idx, 5, &err) == 0);
	/* an encoder without its data file's SHA-256 (an older file) loads
	 * without it */
	cfl_buf_init(&b);
	CHECK(cfl_encoder_save(&enc, &b) == 0);
	CHECK(strstr(b.data, "\ndata ") == NULL);
	cfl_reader_init(&r, "m.cfl", b.data, b.len);
	CHECK_MSG(cfl_encoder_load(&back, &r, &err) == 0, "%s", err.msg);
	CHECK_STR(back.data_sha256, "");
	cfl_encoder_release(&back);
	cfl_buf_release(&b);
	/* with it, it goes round */
	memset(enc.data_sha256, 'a', 64);
	enc.data_sha256[1] = '7';
	cfl_buf_init(&b);
	CHECK(cfl_encoder_save(&enc, &b) == 0);
	CHECK_CONTAINS(b.data, "my%20col");
	CHECK_CONTAINS(b.data, "\ndata a7aaaa");
	cfl_reader_init(&r, "m.cfl", b.data, b.len);
	CHECK_MSG(cfl_encoder_load(&back, &r, &err) == 0, "%s", err.msg);
	CHECK_STR(back.data_sha256, enc.data_sha256);
	CHECK_INT(back.d, enc.d);
	CHECK_INT(back.n_classes, 3);
	CHECK(back.class_values != NULL);
	cfl_buf_init(&b3);
	CHECK(cfl_encoder_save(&back, &b3) == 0);
	CHECK_STR(b3.data, b.data);
	cfl_xy_init(&a);
	cfl_xy_init(&b2);
	CHECK(cfl_encoder_apply(&enc, &csv, 1, &a, &err) == 0);
	CHECK(cfl_encoder_apply(&back, &csv, 1, &b2, &err) == 0);
	CHECK(memcmp(a.x, b2.x, a.n * a.d * sizeof(float)) == 0);
	CHECK(memcmp(a.y, b2.y, a.n * sizeof(double)) == 0);

	/* hostile edits: each must fail with a message, never crash */
	{
		static const char *bad[][2] = {
			{ "encoder 1", "encoder 2" },
			{ "inputs 3", "inputs 4" },
			{ "class 1", "class 9" },	/* out of order */
			{ "level 1", "level q" },	/* numeric level */
			{ "my%20col", "my%2" },
			{ "my%20col", "my%00col" },
			{ " 3\nclass", " 1\nclass" },
			{ "data a7", "data g7" },	/* not hex */
			{ "data a7", "data a" },	/* short */
			{ "\nend", "\nended" },
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct cfl_buf h;
			char *at = strstr(b.data, bad[i][0]);

			CHECK_MSG(at != NULL, "case %zu", i);
			cfl_buf_init(&h);
			cfl_buf_append(&h, b.data, (size_t)(at - b.data));
			cfl_buf_puts(&h, bad[i][1]);
			cfl_buf_puts(&h, at + strlen(bad[i][0]));
			cfl_reader_init(&r, "m.cfl", h.data, h.len);
			CHECK_MSG(cfl_encoder_load(&back, &r, &err) == -1,
				  "case %zu loaded", i);
			CHECK_CONTAINS(err.msg, "m.cfl:");
			cfl_buf_release(&h);
		}
		/* every truncation fails cleanly */
		for (size_t n = 0; n + 4 < b.len; n++) {
			cfl_reader_init(&r, "m.cfl", b.data, n);
			CHECK_MSG(cfl_encoder_load(&back, &r, &err) == -1,
				  "truncated at %zu loaded", n);
		}
	}
	memset(&zero, 0, sizeof(zero));
	cfl_encoder_release(&zero);
	cfl_xy_release(&a);
	cfl_xy_release(&b2);
	cfl_buf_release(&b);
	cfl_buf_release(&b3);
	cfl_encoder_release(&enc);
	cfl_schema_release(&s);
	cfl_csv_release(&csv);
}

static void t_xy_take(void)
{
	struct cfl_xy src, dst;
	struct cfl_err err = { { 0 } };
	float x[6] = { 1, 2, 3, 4, 5, 6 };
	double y[3] = { 0, 1, 2 };
	size_t idx[2] = { 2, 0 }, bad[1] = { 3 };

	cfl_xy_init(&src);
	src.n = 3;
	src.d = 2;
	src.x = x;
	src.y = y;
	cfl_xy_init(&dst);
	CHECK(cfl_xy_take(&dst, &src, idx, 2, &err) == 0);
	CHECK_INT(dst.n, 2);
	CHECK_NEAR(dst.x[0], 5, 0);
	CHECK_NEAR(dst.x[3], 2, 0);
	CHECK_NEAR(dst.y[0], 2, 0);
	CHECK(cfl_xy_take(&dst, &src, bad, 1, &err) == -1);
	cfl_xy_release(&dst);
}

/* ---- splits ---- */

static void t_split_stratified(void)
{
	size_t n = 200, cnt[3];
	double y[200];
	struct cfl_split s, s2, s3;
	struct cfl_err err = { { 0 } };
	const size_t total[3] = { 120, 50, 30 };

	for (size_t i = 0; i < n; i++)
		y[i] = i < 120 ? 0 : i < 170 ? 1 : 2;
	CHECK(cfl_split_holdout(&s, y, n, 3, 0.2, 0.1, 7, &err) == 0);
	CHECK_INT(s.n_test, 40);
	CHECK_INT(s.n_valid, 16);
	CHECK_INT(s.n_train + s.n_valid + s.n_test, n);
	memset(cnt, 0, sizeof(cnt));
	for (size_t i = 0; i < s.n_test; i++)
		cnt[(size_t)y[s.test[i]]]++;
	for (int c = 0; c < 3; c++)
		CHECK_MSG(fabs((double)cnt[c] - 0.2 * (double)total[c]) <= 1,
			  "class %d: %zu in test", c, cnt[c]);
	memset(cnt, 0, sizeof(cnt));
	for (size_t i = 0; i < s.n_valid; i++)
		cnt[(size_t)y[s.valid[i]]]++;
	for (int c = 0; c < 3; c++)
		CHECK_MSG(fabs((double)cnt[c] - 16.0 * (double)total[c] / 200) <= 1,
			  "class %d: %zu in valid", c, cnt[c]);
	/* sorted, disjoint, covering */
	{
		unsigned char seen[200] = { 0 };

		for (size_t i = 0; i < s.n_train; i++)
			seen[s.train[i]]++;
		for (size_t i = 0; i < s.n_valid; i++)
			seen[s.valid[i]]++;
		for (size_t i = 0; i < s.n_test; i++) {
			seen[s.test[i]]++;
			if (i)
				CHECK(s.test[i - 1] < s.test[i]);
		}
		for (size_t i = 0; i < n; i++)
			CHECK_INT(seen[i], 1);
	}
	CHECK(cfl_split_holdout(&s2, y, n, 3, 0.2, 0.1, 7, &err) == 0);
	CHECK(memcmp(s.test, s2.test, s.n_test * sizeof(size_t)) == 0);
	CHECK(memcmp(s.valid, s2.valid, s.n_valid * sizeof(size_t)) == 0);
	CHECK(cfl_split_holdout(&s3, y, n, 3, 0.2, 0.1, 8, &err) == 0);
	CHECK(memcmp(s.test, s3.test, s.n_test * sizeof(size_t)) != 0);
	cfl_split_release(&s);
	cfl_split_release(&s2);
	cfl_split_release(&s3);

	/* no validation part */
	CHECK(cfl_split_holdout(&s, y, n, 3, 0.25, 0, 1, &err) == 0);
	CHECK_INT(s.n_valid, 0);
	CHECK_INT(s.n_test, 50);
	cfl_split_release(&s);
	/* too few rows */
	CHECK(cfl_split_holdout(&s, y, 2, 0, 0.5, 0.5, 1, &err) == -1);
	CHECK_CONTAINS(err.msg, "too few rows");
	/* bad labels */
	y[3] = 5;
	CHECK(cfl_split_holdout(&s, y, n, 3, 0.2, 0, 1, &err) == -1);
}

static void t_split_regression(void)
{
	double y[50];
	struct cfl_split s;
	struct cfl_err err = { { 0 } };

	for (int i = 0; i < 50; i++)
		y[i] = i * 0.37;
	CHECK(cfl_split_holdout(&s, y, 50, 0, 0.2, 0.1, 3, &err) == 0);
	CHECK_INT(s.n_test, 10);
	CHECK_INT(s.n_valid, 4);
	CHECK_INT(s.n_train, 36);
	cfl_split_release(&s);
}

static void t_split_kfold(void)
{
	size_t n = 103, k = 5, fold[103], fold2[103], per[5][2];
	double y[103];
	struct cfl_err err = { { 0 } };
	int differ = 0;

	for (size_t i = 0; i < n; i++)
		y[i] = i % 3 == 0;
	CHECK(cfl_split_kfold(fold, y, n, 2, k, 11, &err) == 0);
	memset(per, 0, sizeof(per));
	for (size_t i = 0; i < n; i++) {
		CHECK(fold[i] < k);	/* each row in exactly one fold */
		per[fold[i]][(size_t)y[i]]++;
	}
	for (int c = 0; c < 2; c++) {
		size_t lo = n, hi = 0;

		for (size_t f = 0; f < k; f++) {
			if (per[f][c] < lo)
				lo = per[f][c];
			if (per[f][c] > hi)
				hi = per[f][c];
		}
		CHECK_MSG(hi - lo <= 1, "class %d: fold sizes %zu..%zu", c, lo, hi);
	}
	CHECK(cfl_split_kfold(fold2, y, n, 2, k, 11, &err) == 0);
	CHECK(memcmp(fold, fold2, sizeof(fold)) == 0);
	CHECK(cfl_split_kfold(fold2, y, n, 2, k, 12, &err) == 0);
	for (size_t i = 0; i < n; i++)
		differ |= fold[i] != fold2[i];
	CHECK(differ);
	/* regression folds */
	CHECK(cfl_split_kfold(fold, y, n, 0, 4, 1, &err) == 0);
	memset(per, 0, sizeof(per));
	for (size_t i = 0; i < n; i++)
		per[fold[i]][0]++;
	for (size_t f = 0; f < 4; f++)
		CHECK(per[f][0] == 25 || per[f][0] == 26);
	CHECK(cfl_split_kfold(fold, y, n, 2, 1, 1, &err) == -1);
	CHECK(cfl_split_kfold(fold, y, 3, 2, 4, 1, &err) == -1);
}

/* ---- everything at once ---- */

static void t_data_load_with_test_file(void)
{
	struct cfl_data d;
	struct cfl_data_opts o;
	struct cfl_err err = { { 0 } };
	char dir[] = "/tmp/cfl_data_XXXXXX", tr[64], te[64];
	FILE *f;
	char *text = make_rows(40, 2);

	CHECK(mkdtemp(dir) != NULL);
	snprintf(tr, sizeof(tr), "%s/tr.csv", dir);
	snprintf(te, sizeof(te), "%s/te.csv", dir);
	f = fopen(tr, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	f = fopen(te, "w");
	fputs("y,x,c,z,id\nb,1.5,purple,7,5\na,2.5,red,7,6\n", f);
	fclose(f);
	cfl_data_opts_init(&o);
	o.path = tr;
	o.test_path = te;
	o.valid_frac = 0;
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	CHECK_INT(d.train.n, 40);
	CHECK_INT(d.valid.n, 0);
	CHECK_INT(d.test.n, 2);
	CHECK_INT(d.test.d, d.train.d);
	CHECK_INT(d.train.n_classes, 2);
	CHECK_NEAR(d.test.y[0], 1, 0);
	CHECK_INT(strlen(d.sha256_hex), 64);
	cfl_data_release(&d);

	o.test_path = NULL;
	o.valid_frac = 0.1;
	CHECK(cfl_data_load(&d, &o, &err) == 0);
	CHECK_INT(d.test.n, 8);
	CHECK_INT(d.valid.n, 3);
	CHECK_INT(d.train.n, 29);
	cfl_data_release(&d);
	/* valid_min_rows: the validation part only on enough rows (32 are
	 * left after the test part), the split otherwise as without it */
	o.valid_min_rows = 33;
	CHECK(cfl_data_load(&d, &o, &err) == 0);
	CHECK_INT(d.test.n, 8);
	CHECK_INT(d.valid.n, 0);
	CHECK_INT(d.train.n, 32);
	cfl_data_release(&d);
	o.valid_min_rows = 32;
	CHECK(cfl_data_load(&d, &o, &err) == 0);
	CHECK_INT(d.valid.n, 3);
	CHECK_INT(d.train.n, 29);
	cfl_data_release(&d);
	remove(tr);
	remove(te);
	remove(dir);
}

/* The parts blob an MPI job broadcasts: a round trip gives the same parts
 * bit for bit, and every cut or damaged blob is refused with a message. */
static void t_data_pack_parts(void)
{
	struct cfl_data d, back;
	struct cfl_data_opts o;
	struct cfl_err err = { { 0 } };
	struct cfl_buf b;
	char dir[] = "/tmp/cfl_data_XXXXXX", tr[64];
	const struct cfl_xy *a[3] = { &d.train, &d.valid, &d.test };
	const struct cfl_xy *c[3] = { &back.train, &back.valid, &back.test };
	FILE *f;
	char *text = make_rows(40, 2);

	CHECK(mkdtemp(dir) != NULL);
	snprintf(tr, sizeof(tr), "%s/tr.csv", dir);
	f = fopen(tr, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	cfl_data_opts_init(&o);
	o.path = tr;
	CHECK_MSG(cfl_data_load(&d, &o, &err) == 0, "%s", err.msg);
	cfl_buf_init(&b);
	CHECK(cfl_data_pack_parts(&d, &b, &err) == 0);
	CHECK_MSG(cfl_data_unpack_parts(&back, b.data, b.len, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(c[i]->n, a[i]->n);
		CHECK_INT(c[i]->d, a[i]->d);
		CHECK_INT(c[i]->n_classes, a[i]->n_classes);
		CHECK(!memcmp(c[i]->x, a[i]->x, a[i]->n * a[i]->d * sizeof(float)));
		CHECK(!memcmp(c[i]->y, a[i]->y, a[i]->n * sizeof(double)));
	}
	CHECK_STR(back.sha256_hex, d.sha256_hex);
	CHECK(back.csv.n_rows == 0 && back.schema.n_cols == 0);
	/* the encoder too: a worker names input columns as the coordinator */
	CHECK_INT(back.enc.n_in, d.enc.n_in);
	CHECK_INT(back.enc.d, d.enc.d);
	for (size_t k = 0; k < d.enc.n_in; k++)
		CHECK_STR(cfl_encoder_column_name(&back.enc, k),
			  cfl_encoder_column_name(&d.enc, k));
	cfl_data_release(&back);

	/* every shorter blob is cut short somewhere */
	for (size_t len = 0; len < b.len; len += 1 + len / 7) {
		CHECK(cfl_data_unpack_parts(&back, b.data, len, &err) == -1);
		CHECK_CONTAINS(err.msg, "data parts: ");
		CHECK(back.train.x == NULL);
	}
	/* a trailing byte, a wrong magic, another byte order, a huge count */
	cfl_buf_append(&b, "x", 1);
	CHECK(cfl_data_unpack_parts(&back, b.data, b.len, &err) == -1);
	CHECK_CONTAINS(err.msg, "bytes after the encoder");
	b.len--;
	b.data[0] = 'X';
	CHECK(cfl_data_unpack_parts(&back, b.data, b.len, &err) == -1);
	CHECK_CONTAINS(err.msg, "not a data parts blob");
	b.data[0] = 'C';
	b.data[8] ^= 0x07;
	CHECK(cfl_data_unpack_parts(&back, b.data, b.len, &err) == -1);
	CHECK_CONTAINS(err.msg, "byte order");
	b.data[8] ^= 0x07;
	memset(b.data + 8 + 4 + 32, 0xff, 8);	/* train rows: 2^64 - 1 */
	CHECK(cfl_data_unpack_parts(&back, b.data, b.len, &err) == -1);
	CHECK_CONTAINS(err.msg, "train part");
	memset(b.data + 8 + 4 + 32 + 8, 0, 8);	/* and 0 columns */
	CHECK(cfl_data_unpack_parts(&back, b.data, b.len, &err) == -1);
	CHECK_CONTAINS(err.msg, "train part");
	cfl_buf_release(&b);
	cfl_data_release(&d);
	remove(tr);
	remove(dir);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_format_predictions),
	TEST(t_data_describe),
	TEST(t_csv_quotes),
	TEST(t_csv_crlf_bom_and_delimiters),
	TEST(t_csv_missing_values),
	TEST(t_csv_numbers),
	TEST(t_csv_errors),
	TEST(t_csv_empty_header_names),
	TEST(t_csv_read_missing_file),
	TEST(t_schema_types_and_drops),
	TEST(t_schema_distinct_cap),
	TEST(t_schema_integer_codes),
	TEST(t_schema_scale_family_stays_numeric),
	TEST(t_schema_task_inference),
	TEST(t_schema_errors),
	TEST(t_schema_regex_select),
	TEST(t_encode_train_statistics),
	TEST(t_encode_fit_uses_train_rows_only),
	TEST(t_encoder_save_load),
	TEST(t_xy_take),
	TEST(t_split_stratified),
	TEST(t_split_regression),
	TEST(t_split_kfold),
	TEST(t_data_load_with_test_file),
	TEST(t_data_pack_parts),
	{ 0 },
};
