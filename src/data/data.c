/*
 * cfl_data_load: everything a command needs from a data file, in order:
 * read (hashing the bytes), type the columns, split with the run seed, fit
 * the encoder on the train rows only, encode every part.  A separate
 * --test / --valid file replaces that part of the split and is encoded with
 * the training file's statistics.  The SHA-256 of the file is computed by
 * a helper thread while the main thread parses a copy (hashing costs about
 * as much as parsing); the thread is joined before returning, so callers
 * that fork later see a single-threaded process.
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void cfl_data_opts_init(struct cfl_data_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->schema.task = CFL_TASK_AUTO;
	o->test_frac = 0.2;
	o->valid_frac = 0.1;
}

/* Encodes a separate file with the encoder (target required). */
static int load_part(struct cfl_xy *out, const struct cfl_encoder *enc,
		     const char *path, struct cfl_err *err)
{
	struct cfl_csv csv;
	int rc;

	if (cfl_csv_read(&csv, path, err))
		return -1;
	rc = cfl_encoder_apply(enc, &csv, 1, out, err);
	cfl_csv_release(&csv);
	return rc;
}

struct hash_job {
	const char *buf;
	size_t len;
	unsigned char *out;
};

static void *hash_thread(void *arg)
{
	struct hash_job *job = arg;
	struct cfl_sha256 sha;

	cfl_sha256_init(&sha);
	cfl_sha256_update(&sha, job->buf, job->len);
	cfl_sha256_final(&sha, job->out);
	return NULL;
}

/* Parses buf (taking it) while another thread hashes it; the parse runs on
 * a copy because it writes into its buffer. */
static int parse_and_hash(struct cfl_data *d, const char *path, char *buf,
			  size_t len, struct cfl_err *err)
{
	struct hash_job job = { buf, len, d->sha256 };
	pthread_t th;
	char *copy = len >= (1u << 20) ? malloc(len + 1) : NULL;
	int rc;

	if (!copy || pthread_create(&th, NULL, hash_thread, &job) != 0) {
		free(copy);
		hash_thread(&job);
		return csv_parse_owned(&d->csv, path, buf, len, err);
	}
	memcpy(copy, buf, len + 1);
	rc = csv_parse_owned(&d->csv, path, copy, len, err);
	pthread_join(th, NULL);
	free(buf);
	return rc;
}

int cfl_data_load(struct cfl_data *d, const struct cfl_data_opts *o,
		  struct cfl_err *err)
{
	char *buf;
	size_t len;
	struct cfl_split split;
	struct cfl_xy all;
	double *y = NULL;
	int n_classes;

	memset(d, 0, sizeof(*d));
	memset(&split, 0, sizeof(split));
	cfl_xy_init(&all);
	if (!o->path)
		return cfl_err_set(err, "no data file given");
	buf = csv_slurp(o->path, &len, err);
	if (!buf)
		return -1;
	if (parse_and_hash(d, o->path, buf, len, err))
		goto fail;
	cfl_sha256_hex(d->sha256, d->sha256_hex);
	if (cfl_schema_infer(&d->schema, &d->csv, &o->schema, err))
		goto fail;
	n_classes = d->schema.task == CFL_TASK_CLF ? (int)d->schema.n_classes : 0;
	y = cfl_malloc(d->csv.n_rows * sizeof(double), err);
	if (!y || cfl_schema_labels(&d->schema, &d->csv, y, err))
		goto fail;
	if (cfl_split_holdout(&split, y, d->csv.n_rows, n_classes,
			      o->test_path ? 0 : o->test_frac,
			      o->valid_path ? 0 : o->valid_frac, o->seed, err)) {
		cfl_err_prefix(err, "%s", o->path);
		goto fail;
	}
	if (cfl_encoder_fit(&d->enc, &d->schema, &d->csv, split.train,
			    split.n_train, err) ||
	    cfl_encoder_apply(&d->enc, &d->csv, 1, &all, err) ||
	    cfl_xy_take(&d->train, &all, split.train, split.n_train, err) ||
	    cfl_xy_take(&d->valid, &all, split.valid, split.n_valid, err) ||
	    cfl_xy_take(&d->test, &all, split.test, split.n_test, err))
		goto fail;
	if (o->test_path && load_part(&d->test, &d->enc, o->test_path, err))
		goto fail;
	if (o->valid_path && load_part(&d->valid, &d->enc, o->valid_path, err))
		goto fail;
	free(y);
	cfl_xy_release(&all);
	cfl_split_release(&split);
	return 0;
fail:
	free(y);
	cfl_xy_release(&all);
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
