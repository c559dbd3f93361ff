/*
 * cfl_data_load: everything a command needs from a data file, in order:
 * read (hashing the bytes), drop the rows without a target value (counted),
 * type the columns, split with the run seed, fit the encoder on the train
 * rows only, encode every part.  A separate
 * --test / --valid file replaces that part of the split and is encoded with
 * the training file's statistics.  The SHA-256 of the file is computed by
 * a helper thread while the main thread parses (hashing costs about as much
 * as parsing): a regular file is read again from the page cache in small
 * pieces for the hash, a pipe is read whole first; the thread is joined
 * before returning, so callers that fork later see a single-threaded
 * process.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cfl_data_opts_init(struct cfl_data_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->schema.task = CFL_TASK_AUTO;
	o->test_frac = 0.2;
	o->valid_frac = 0.1;
}

/* Drops the rows whose target cell (column t) is missing, keeping the
 * others in order; returns how many went.  A row without a label can be
 * neither trained on nor scored, and one such row must not stop a run. */
static size_t drop_missing_target(struct cfl_csv *csv, long t)
{
	size_t m = csv->n_cols, k = 0, n = csv->n_rows;

	if (t < 0)
		return 0;	/* no such column: typing says so */
	for (size_t i = 0; i < n; i++) {
		if (cfl_csv_missing(csv, i, (size_t)t))
			continue;
		if (k != i) {
			memmove(csv->num + k * m, csv->num + i * m, m * sizeof(double));
			for (size_t j = 0; j < m; j++)
				if (csv->text[j])
					csv->text[j][k] = csv->text[j][i];
			csv->line[k] = csv->line[i];
		}
		k++;
	}
	csv->n_rows = k;
	return n - k;
}

/* Encodes a separate file with the encoder (target required; rows
 * without one are dropped and counted in *n_dropped). */
static int load_part(struct cfl_xy *out, const struct cfl_encoder *enc,
		     const char *path, size_t *n_dropped, size_t *recoded_line,
		     struct cfl_err *err)
{
	struct cfl_csv csv;
	int rc;

	if (cfl_encoder_read_csv(enc, path, &csv, err))
		return -1;
	*recoded_line = csv.recoded ? csv.recoded_line : 0;
	*n_dropped = drop_missing_target(&csv, cfl_csv_column(&csv, enc->target_name));
	if (*n_dropped && !csv.n_rows) {
		cfl_err_set(err, "%s: every row's target '%s' is missing", path,
			    enc->target_name);
		cfl_csv_release(&csv);
		return -1;
	}
	rc = cfl_encoder_apply(enc, &csv, 1, out, err);
	cfl_csv_release(&csv);
	return rc;
}

struct hash_job {
	const char *buf;	/* the bytes, or NULL: read path again */
	const char *path;
	size_t len;
	unsigned char *out;
	int rc;
	struct cfl_err err;
};

static void *hash_thread(void *arg)
{
	struct hash_job *job = arg;

	job->rc = cfl_sha256(job->buf, job->len, job->out, &job->err);
	return NULL;
}

#define REHASH_CHUNK (1u << 20)

/* Hashes job->path read again, REHASH_CHUNK bytes at a time: the parse
 * writes into the buffer the file was read into, and a copy of it for the
 * hash would double the peak memory of a load.  The file must still hold
 * the job->len bytes it held (else "'path' changed while it was read"). */
static void *rehash_thread(void *arg)
{
	struct hash_job *job = arg;
	struct cfl_sha256 h;
	char *chunk = NULL;
	size_t total = 0;
	int fd = -1;

	job->rc = -1;
	if (cfl_sha256_init(&h, &job->err))
		return NULL;
	if (!(chunk = cfl_malloc(REHASH_CHUNK, &job->err)))
		goto out;
	if ((fd = open(job->path, O_RDONLY)) < 0) {
		cfl_err_set(&job->err, "cannot open '%s': %s", job->path, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t got = read(fd, chunk, REHASH_CHUNK);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			cfl_err_set(&job->err, "cannot read '%s': %s", job->path, strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		cfl_sha256_update(&h, chunk, (size_t)got);
		total += (size_t)got;
	}
	if (total != job->len) {
		cfl_err_set(&job->err, "'%s' changed while it was read", job->path);
		goto out;
	}
	cfl_sha256_final(&h, job->out);
	job->rc = 0;
out:
	if (job->rc)
		cfl_sha256_release(&h);
	if (fd >= 0)
		close(fd);
	free(chunk);
	return NULL;
}

int cfl_data_file_sha256(const char *path, char hex[65], struct cfl_err *err)
{
	unsigned char sum[32];
	struct hash_job job = { NULL, path, 0, sum, 0, { "" } };
	struct stat st;

	if (!strcmp(path, "-"))
		return cfl_err_set(err, "standard input was read already");
	if (stat(path, &st))
		return cfl_err_set(err, "cannot open '%s': %s", path, strerror(errno));
	job.len = (size_t)st.st_size;
	rehash_thread(&job);
	if (job.rc)
		return cfl_err_set(err, "%s", job.err.msg);
	cfl_sha256_hex(sum, hex);
	return 0;
}

/* Parses path while another thread hashes it.  A regular file is read
 * twice, a window at a time each (from the page cache the second time):
 * neither the parse nor the hash holds a copy of the file.  Anything else
 * (a pipe) is read whole once, hashed, then parsed. */
static int parse_and_hash(struct cfl_data *d, const char *path,
			  struct cfl_err *err)
{
	struct hash_job job = { NULL, path, 0, d->sha256, 0, { "" } };
	struct stat st;
	pthread_t th;
	size_t n_read = 0;
	char *buf;
	int rc, threaded;

	if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		job.len = (size_t)st.st_size;
		threaded = pthread_create(&th, NULL, rehash_thread, &job) == 0;
		rc = cfl_csv_read_keep(&d->csv, path, NULL, 0, &n_read, err);
		if (threaded)
			pthread_join(th, NULL);
		else if (!rc)
			rehash_thread(&job);
		if (!rc && n_read != job.len)
			return cfl_err_set(err, "'%s' changed while it was read", path);
		if (!rc && job.rc)
			return cfl_err_set(err, "%s", job.err.msg);
		return rc;
	}
	buf = cfl_csv_slurp(path, &job.len, err);
	if (!buf)
		return -1;
	job.buf = buf;
	hash_thread(&job);
	rc = job.rc ? cfl_err_set(err, "%s", job.err.msg)
		    : cfl_csv_parse(&d->csv, path, buf, job.len, err);
	free(buf);
	return rc;
}

/* Encodes rows idx[0..n) of d->csv into out (an empty part may come with
 * idx NULL, which to cfl_encoder_apply_rows means every row). */
static int encode_part(struct cfl_data *d, const size_t *idx, size_t n,
		       struct cfl_xy *out, struct cfl_err *err)
{
	static const size_t none[1];

	return cfl_encoder_apply_rows(&d->enc, &d->csv, n ? idx : none, n, 1,
				      out, err);
}

int cfl_data_load(struct cfl_data *d, const struct cfl_data_opts *o,
		  struct cfl_err *err)
{
	struct cfl_split split;
	double *y = NULL, valid_frac;
	int n_classes;

	memset(d, 0, sizeof(*d));
	memset(&split, 0, sizeof(split));
	if (!o->path)
		return cfl_err_set(err, "no data file given");
	if (parse_and_hash(d, o->path, err))
		goto fail;
	cfl_sha256_hex(d->sha256, d->sha256_hex);
	d->recoded_line[0] = d->csv.recoded ? d->csv.recoded_line : 0;
	{
		long t = o->schema.target ? cfl_csv_column(&d->csv, o->schema.target)
					  : (long)d->csv.n_cols - 1;

		d->n_no_target[0] = drop_missing_target(&d->csv, t);
		if (d->n_no_target[0] && !d->csv.n_rows) {
			cfl_err_set(err, "%s: every row's target '%s' is missing",
				    o->path, d->csv.header[t]);
			goto fail;
		}
	}
	if (cfl_schema_infer(&d->schema, &d->csv, &o->schema, err))
		goto fail;
	n_classes = d->schema.task == CFL_TASK_CLF ? (int)d->schema.n_classes : 0;
	y = cfl_malloc(d->csv.n_rows * sizeof(double), err);
	if (!y || cfl_schema_labels(&d->schema, &d->csv, y, err))
		goto fail;
	{
		/* a validation part only on enough rows, when asked so */
		size_t n = d->csv.n_rows;
		size_t n_test = o->test_path ? 0 : cfl_split_share(n, o->test_frac);

		valid_frac = o->valid_path ? 0 : o->valid_frac;
		if (o->valid_min_rows && n - (n_test < n ? n_test : n) < o->valid_min_rows)
			valid_frac = 0;
	}
	if (cfl_split_holdout(&split, y, d->csv.n_rows, n_classes,
			      o->test_path ? 0 : o->test_frac,
			      valid_frac, o->seed, err)) {
		cfl_err_prefix(err, "%s", o->path);
		goto fail;
	}
	if (cfl_encoder_fit(&d->enc, &d->schema, &d->csv, split.train,
			    split.n_train, err) ||
	    encode_part(d, split.train, split.n_train, &d->train, err) ||
	    encode_part(d, split.valid, split.n_valid, &d->valid, err) ||
	    encode_part(d, split.test, split.n_test, &d->test, err))
		goto fail;
	memcpy(d->enc.data_sha256, d->sha256_hex, sizeof(d->enc.data_sha256));
	if (o->test_path && load_part(&d->test, &d->enc, o->test_path,
				      &d->n_no_target[1], &d->recoded_line[1], err))
		goto fail;
	if (o->valid_path && load_part(&d->valid, &d->enc, o->valid_path,
				       &d->n_no_target[2], &d->recoded_line[2], err))
		goto fail;
	free(y);
	cfl_split_release(&split);
	return 0;
fail:
	free(y);
	cfl_split_release(&split);
	cfl_data_release(d);
	return -1;
}

void cfl_data_release(struct cfl_data *d)
{
	if (!d)
		return;
	cfl_xy_release(&d->train);
	cfl_xy_release(&d->valid);
	cfl_xy_release(&d->test);
	cfl_encoder_release(&d->enc);
	cfl_schema_release(&d->schema);
	cfl_csv_release(&d->csv);
	memset(d, 0, sizeof(*d));
}

/* ---- data: the encoded parts as one blob ---- */

/* "CFLPARTS", a byte-order mark, the data file's SHA-256, then per part:
 * n, d (u64), n_classes (i64), has_y (u64), x (n*d floats), y (n doubles);
 * then the encoder: its text's length (u64; 0: none, as without data) and
 * text (cfl_encoder_save),
 * so that a worker names input columns (feature importance) as the
 * coordinator does. */
static const char parts_magic[8] = { 'C', 'F', 'L', 'P', 'A', 'R', 'T', 'S' };
#define PARTS_ORDER 0x01020304u

static int pack_u64(struct cfl_buf *b, uint64_t v)
{
	return cfl_buf_append(b, &v, sizeof(v));
}

int cfl_data_pack_parts(const struct cfl_data *d, struct cfl_buf *out,
			struct cfl_err *err)
{
	const struct cfl_xy *parts[3] = { &d->train, &d->valid, &d->test };
	uint32_t order = PARTS_ORDER;
	size_t size = sizeof(parts_magic) + sizeof(order) + 32;
	struct cfl_buf enc;
	int bad;

	cfl_buf_init(&enc);
	/* no encoder (no data: an MPI job without a file) travels as none */
	if (d->enc.n_in && cfl_encoder_save(&d->enc, &enc)) {
		cfl_buf_release(&enc);
		return cfl_err_set(err, "out of memory (packing the data parts)");
	}
	size += sizeof(uint64_t) + enc.len;
	for (int i = 0; i < 3; i++)	/* sized once, not grown by copies */
		size += 4 * sizeof(uint64_t) +
			parts[i]->n * parts[i]->d * sizeof(float) +
			(parts[i]->y ? parts[i]->n * sizeof(double) : 0);
	if (cfl_buf_reserve(out, size)) {
		cfl_buf_release(&enc);
		return cfl_err_set(err, "out of memory (packing the data parts)");
	}
	cfl_advise_huge(out->data + out->len, size);
	bad = cfl_buf_append(out, parts_magic, sizeof(parts_magic)) ||
	      cfl_buf_append(out, &order, sizeof(order)) ||
	      cfl_buf_append(out, d->sha256, 32);
	for (int i = 0; i < 3 && !bad; i++) {
		const struct cfl_xy *p = parts[i];

		bad = pack_u64(out, p->n) || pack_u64(out, p->d) ||
		      pack_u64(out, (uint64_t)(int64_t)p->n_classes) ||
		      pack_u64(out, p->y != NULL) ||
		      cfl_buf_append(out, p->x, p->n * p->d * sizeof(float)) ||
		      (p->y && cfl_buf_append(out, p->y, p->n * sizeof(double)));
	}
	bad = bad || pack_u64(out, enc.len) ||
	      (enc.len && cfl_buf_append(out, enc.data, enc.len));
	cfl_buf_release(&enc);
	return bad ? cfl_err_set(err, "out of memory (packing the data parts)") : 0;
}

/* Reader over a blob: take() fails once the blob is short. */
struct unpack {
	const char *p;
	size_t left;
};

static const void *take(struct unpack *u, size_t n)
{
	const void *at = u->p;

	if (n > u->left)
		return NULL;
	u->p += n;
	u->left -= n;
	return at;
}

static int take_u64(struct unpack *u, uint64_t *v)
{
	const void *at = take(u, sizeof(*v));

	if (at)
		memcpy(v, at, sizeof(*v));
	return at ? 0 : -1;
}

static int unpack_part(struct cfl_xy *xy, struct unpack *u, const char *name,
		       struct cfl_err *err)
{
	uint64_t n, d, k, has_y;
	const void *x, *y = NULL;

	if (take_u64(u, &n) || take_u64(u, &d) || take_u64(u, &k) ||
	    take_u64(u, &has_y))
		return cfl_err_set(err, "data parts: the %s part's header is cut short",
				   name);
	if ((int64_t)k < 0 || (int64_t)k > 1 << 20 || has_y > 1 ||
	    n > SIZE_MAX / sizeof(double) ||
	    (d && n > (SIZE_MAX / sizeof(double)) / d))
		return cfl_err_set(err, "data parts: the %s part's header is "
				   "malformed (%llu rows, %llu columns)", name,
				   (unsigned long long)n, (unsigned long long)d);
	x = take(u, (size_t)(n * d) * sizeof(float));
	if (x && has_y)
		y = take(u, (size_t)n * sizeof(double));
	if (!x || (has_y && !y))
		return cfl_err_set(err, "data parts: the %s part is cut short "
				   "(%llu rows of %llu columns)", name,
				   (unsigned long long)n, (unsigned long long)d);
	xy->n = (size_t)n;
	xy->d = (size_t)d;
	xy->n_classes = (int)k;
	xy->x = cfl_malloc((size_t)(n * d) * sizeof(float) + sizeof(float), err);
	if (!xy->x)
		return -1;
	cfl_advise_huge(xy->x, (size_t)(n * d) * sizeof(float));
	memcpy(xy->x, x, (size_t)(n * d) * sizeof(float));
	if (has_y) {
		xy->y = cfl_malloc((size_t)n * sizeof(double) + sizeof(double), err);
		if (!xy->y)
			return -1;
		cfl_advise_huge(xy->y, (size_t)n * sizeof(double));
		memcpy(xy->y, y, (size_t)n * sizeof(double));
	}
	return 0;
}

/* The encoder after the parts: it must describe them (their width and
 * classes). */
static int unpack_encoder(struct cfl_data *d, struct unpack *u, struct cfl_err *err)
{
	struct cfl_reader r;
	uint64_t n;
	const char *text;

	if (take_u64(u, &n) || !(text = take(u, (size_t)n)))
		return cfl_err_set(err, "data parts: the encoder is cut short");
	if (!n)
		return 0;	/* none: the parts hold no data */
	cfl_reader_init(&r, "data parts: encoder", text, (size_t)n);
	if (cfl_encoder_load(&d->enc, &r, err))
		return -1;
	if (d->enc.d != d->train.d || d->enc.n_classes != d->train.n_classes)
		return cfl_err_set(err, "data parts: the encoder (%zu features, %d "
				   "classes) does not match the parts (%zu, %d)",
				   d->enc.d, d->enc.n_classes, d->train.d,
				   d->train.n_classes);
	return 0;
}

int cfl_data_unpack_parts(struct cfl_data *d, const void *blob, size_t len,
			  struct cfl_err *err)
{
	struct unpack u = { blob, len };
	struct cfl_xy *parts[3] = { &d->train, &d->valid, &d->test };
	static const char *names[3] = { "train", "valid", "test" };
	const char *magic, *sha;
	const void *order;
	uint32_t o = 0;

	memset(d, 0, sizeof(*d));
	magic = take(&u, sizeof(parts_magic));
	order = take(&u, sizeof(o));
	sha = take(&u, 32);
	if (!magic || memcmp(magic, parts_magic, sizeof(parts_magic)))
		return cfl_err_set(err, "data parts: not a data parts blob");
	if (!order || !sha)
		return cfl_err_set(err, "data parts: the header is cut short");
	memcpy(&o, order, sizeof(o));
	if (o != PARTS_ORDER)
		return cfl_err_set(err, "data parts: written on a machine of "
				   "another byte order");
	memcpy(d->sha256, sha, 32);
	cfl_sha256_hex(d->sha256, d->sha256_hex);
	for (int i = 0; i < 3; i++)
		if (unpack_part(parts[i], &u, names[i], err)) {
			cfl_data_release(d);
			return -1;
		}
	if (unpack_encoder(d, &u, err)) {
		cfl_data_release(d);
		return -1;
	}
	if (u.left) {
		cfl_data_release(d);
		return cfl_err_set(err, "data parts: %zu bytes after the encoder",
				   u.left);
	}
	if (d->valid.d != d->train.d || d->test.d != d->train.d ||
	    d->valid.n_classes != d->train.n_classes ||
	    d->test.n_classes != d->train.n_classes) {
		cfl_data_release(d);
		return cfl_err_set(err, "data parts: the parts disagree on their "
				   "columns or classes");
	}
	return 0;
}

/* ---- data: what is learned, in words ---- */

char *cfl_data_describe_target(const struct cfl_data *d, char *buf, size_t cap)
{
	const struct cfl_schema *s = &d->schema;
	const struct cfl_column *c = s->cols ? &s->cols[s->target] : NULL;
	size_t n = d->train.n + d->valid.n + d->test.n, len;
	char hint[160] = "";

	if (!c) {
		snprintf(buf, cap, "no target");
		return buf;
	}
	/* an integer target typed by its count of values: say how, and the
	 * way to the other task when the choice is a close one */
	if (!s->task_given && c->is_int && !c->n_text) {
		if (s->task == CFL_TASK_CLF && s->n_classes > 2 &&
		    (s->n_classes > 10 || n / s->n_classes < 20))
			snprintf(hint, sizeof(hint), " (integers, %zu values, %zu rows a class: --task reg to regress)",
				 s->n_classes, n / s->n_classes);
		else if (s->task == CFL_TASK_REG && c->n_distinct <= 100)
			snprintf(hint, sizeof(hint), " (integers, %zu values, more than %d: --task clf to classify)",
				 c->n_distinct, CLF_MAX_INT_CLASSES);
	}
	if (s->task == CFL_TASK_CLF)
		snprintf(buf, cap, "target '%s' (%s): classification, %zu classes%s; ",
			 c->name, s->target_given ? "--target" : "last column",
			 s->n_classes, hint);
	else
		snprintf(buf, cap, "target '%s' (%s): regression%s; ", c->name,
			 s->target_given ? "--target" : "last column", hint);
	len = strlen(buf);
	if (d->valid.n)
		snprintf(buf + len, cap - len, "%zu rows: %zu train, %zu valid, %zu test",
			 n, d->train.n, d->valid.n, d->test.n);
	else
		snprintf(buf + len, cap - len, "%zu rows: %zu train, %zu test", n,
			 d->train.n, d->test.n);
	return buf;
}
