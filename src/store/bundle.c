/*
 * The bundle file (cfl/bundle.h, docs/bundles.md): an SQLite file with a
 * meta table (format, version, cfl version, run, dataset, the recommended
 * row, the encoder), the models as whole model files, and the manifest:
 * rows, their members (model ids joined by '+', a weight) and their
 * recorded scores.  Written to a temporary file and renamed, so a reader
 * never sees half a bundle; read back with every reference checked, so a
 * truncated or foreign file is an error naming it, never a crash.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfl/bundle.h"

static const char BUNDLE_SCHEMA[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
	"CREATE TABLE models (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  trial INTEGER NOT NULL,\n"
	"  model TEXT NOT NULL,\n"
	"  repeat INTEGER NOT NULL,\n"
	"  fold INTEGER NOT NULL,\n"
	"  text TEXT NOT NULL\n"
	");\n"
	"CREATE TABLE rows (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  name TEXT NOT NULL UNIQUE,\n"
	"  kind TEXT NOT NULL,\n"
	"  method TEXT NOT NULL\n"
	");\n"
	"CREATE TABLE members (\n"
	"  row INTEGER NOT NULL REFERENCES rows(id),\n"
	"  pos INTEGER NOT NULL,\n"
	"  models TEXT NOT NULL,\n"
	"  weight REAL,\n"
	"  PRIMARY KEY (row, pos)\n"
	");\n"
	"CREATE TABLE scores (\n"
	"  row INTEGER NOT NULL REFERENCES rows(id),\n"
	"  split TEXT NOT NULL,\n"
	"  metric TEXT NOT NULL,\n"
	"  value REAL,\n"
	"  std REAL,\n"
	"  PRIMARY KEY (row, split, metric)\n"
	");\n";

static const char *const method_names[] = { "one", "mean", "vote", "weighted" };

const char *cfl_bundle_method_name(enum cfl_bundle_method m)
{
	return name_of(method_names, N_OF(method_names), (int)m);
}

int cfl_bundle_method_lookup(const char *s)
{
	return lookup(method_names, N_OF(method_names), s);
}

void cfl_bundle_release(struct cfl_bundle *b)
{
	if (!b)
		return;
	free(b->cfl_version);
	free(b->run);
	free(b->kind);
	free(b->dataset);
	free(b->dataset_sha256);
	free(b->metric);
	free(b->recommended);
	free(b->encoder);
	for (size_t i = 0; i < b->n_models; i++) {
		free(b->models[i].model);
		free(b->models[i].text);
		if (b->fitted)
			cfl_model_free(b->fitted[i]);
	}
	free(b->models);
	free(b->fitted);
	for (size_t i = 0; i < b->n_rows; i++) {
		struct cfl_bundle_row *r = &b->rows[i];

		free(r->name);
		free(r->kind);
		for (size_t j = 0; j < r->n_members; j++)
			free(r->members[j].models);
		free(r->members);
		free(r->scores);
	}
	free(b->rows);
	cfl_encoder_release(&b->enc);
	memset(b, 0, sizeof(*b));
}

int cfl_bundle_sniff(const char *path)
{
	char head[16];
	FILE *f = fopen(path, "rb");
	int yes;

	if (!f)
		return 0;
	yes = fread(head, 1, sizeof(head), f) == sizeof(head) &&
	      memcmp(head, "SQLite format 3", 16) == 0;
	fclose(f);
	return yes;
}

/* ---- bundle: writing ---- */

static int wfail(sqlite3 *db, const char *path, struct cfl_err *err)
{
	return cfl_err_set(err, "cannot write bundle '%s': %s", path,
			   db ? sqlite3_errmsg(db) : "out of memory");
}

/* Runs sql with text bindings (NULL: SQL NULL); 0 or -1. */
static int run_sql(sqlite3 *db, const char *sql, sqlite3_stmt **cache)
{
	if (!*cache && sqlite3_prepare_v2(db, sql, -1, cache, NULL) != SQLITE_OK)
		return -1;
	return 0;
}

static int step_reset(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int put_meta(sqlite3 *db, sqlite3_stmt **s, const char *key,
		    const char *value)
{
	if (run_sql(db, "INSERT INTO meta (key, value) VALUES (?, ?)", s))
		return -1;
	sqlite3_bind_text(*s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(*s, 2, value ? value : "", -1, SQLITE_STATIC);
	return step_reset(*s);
}

static int write_all(sqlite3 *db, const struct cfl_bundle *b)
{
	sqlite3_stmt *sm = NULL, *smod = NULL, *srow = NULL, *smem = NULL,
		     *ssc = NULL;
	struct cfl_buf ids;
	char ver[16];
	int rc = -1;

	cfl_buf_init(&ids);
	snprintf(ver, sizeof(ver), "%d", CFL_BUNDLE_VERSION);
	if (sqlite3_exec(db, BUNDLE_SCHEMA, NULL, NULL, NULL) != SQLITE_OK ||
	    put_meta(db, &sm, "format", CFL_BUNDLE_FORMAT) ||
	    put_meta(db, &sm, "version", ver) ||
	    put_meta(db, &sm, "cfl_version", b->cfl_version) ||
	    put_meta(db, &sm, "run", b->run) ||
	    put_meta(db, &sm, "kind", b->kind) ||
	    put_meta(db, &sm, "dataset", b->dataset) ||
	    put_meta(db, &sm, "dataset_sha256", b->dataset_sha256) ||
	    put_meta(db, &sm, "metric", b->metric) ||
	    put_meta(db, &sm, "recommended", b->recommended) ||
	    put_meta(db, &sm, "encoder", b->encoder))
		goto out;
	for (size_t i = 0; i < b->n_models; i++) {
		const struct cfl_bundle_model *m = &b->models[i];

		if (run_sql(db, "INSERT INTO models (id, trial, model, repeat, "
			    "fold, text) VALUES (?, ?, ?, ?, ?, ?)", &smod))
			goto out;
		sqlite3_bind_int64(smod, 1, (sqlite3_int64)i + 1);
		sqlite3_bind_int64(smod, 2, m->trial);
		sqlite3_bind_text(smod, 3, m->model, -1, SQLITE_STATIC);
		sqlite3_bind_int(smod, 4, m->repeat);
		sqlite3_bind_int(smod, 5, m->fold);
		sqlite3_bind_text(smod, 6, m->text, -1, SQLITE_STATIC);
		if (step_reset(smod))
			goto out;
	}
	for (size_t i = 0; i < b->n_rows; i++) {
		const struct cfl_bundle_row *r = &b->rows[i];

		if (run_sql(db, "INSERT INTO rows (id, name, kind, method) "
			    "VALUES (?, ?, ?, ?)", &srow))
			goto out;
		sqlite3_bind_int64(srow, 1, (sqlite3_int64)i + 1);
		sqlite3_bind_text(srow, 2, r->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(srow, 3, r->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(srow, 4, cfl_bundle_method_name(r->method), -1,
				  SQLITE_STATIC);
		if (step_reset(srow))
			goto out;
		for (size_t j = 0; j < r->n_members; j++) {
			const struct cfl_bundle_member *mb = &r->members[j];

			ids.len = 0;
			for (size_t k = 0; k < mb->n_models; k++)
				if (cfl_buf_printf(&ids, "%s%zu", k ? "+" : "",
						   mb->models[k] + 1))
					goto out;
			if (run_sql(db, "INSERT INTO members (row, pos, models, "
				    "weight) VALUES (?, ?, ?, ?)", &smem))
				goto out;
			sqlite3_bind_int64(smem, 1, (sqlite3_int64)i + 1);
			sqlite3_bind_int64(smem, 2, (sqlite3_int64)j);
			sqlite3_bind_text(smem, 3, ids.data ? ids.data : "", -1,
					  SQLITE_STATIC);
			if (isnan(mb->weight))
				sqlite3_bind_null(smem, 4);
			else
				sqlite3_bind_double(smem, 4, mb->weight);
			if (step_reset(smem))
				goto out;
		}
		for (size_t j = 0; j < r->n_scores; j++) {
			const struct cfl_bundle_score *sc = &r->scores[j];

			if (run_sql(db, "INSERT OR REPLACE INTO scores (row, split, "
				    "metric, value, std) VALUES (?, ?, ?, ?, ?)", &ssc))
				goto out;
			sqlite3_bind_int64(ssc, 1, (sqlite3_int64)i + 1);
			sqlite3_bind_text(ssc, 2, sc->split, -1, SQLITE_STATIC);
			sqlite3_bind_text(ssc, 3, sc->metric, -1, SQLITE_STATIC);
			if (isnan(sc->value))
				sqlite3_bind_null(ssc, 4);
			else
				sqlite3_bind_double(ssc, 4, sc->value);
			if (isnan(sc->std))
				sqlite3_bind_null(ssc, 5);
			else
				sqlite3_bind_double(ssc, 5, sc->std);
			if (step_reset(ssc))
				goto out;
		}
	}
	rc = 0;
out:
	cfl_buf_release(&ids);
	sqlite3_finalize(sm);
	sqlite3_finalize(smod);
	sqlite3_finalize(srow);
	sqlite3_finalize(smem);
	sqlite3_finalize(ssc);
	return rc;
}

int cfl_bundle_check_path(const char *path, struct cfl_err *err)
{
	char tmp[4096];
	struct stat sb;
	int fd;

	if (!path[0])
		return cfl_err_set(err, "cannot write bundle '': empty file name");
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
		return cfl_err_set(err, "cannot write bundle '%s': it is a folder", path);
	/* the temporary cfl_bundle_write makes, made and removed */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path,
			     (long)getpid()) >= sizeof(tmp))
		return cfl_err_set(err, "bundle path '%s' too long", path);
	unlink(tmp);	/* a crashed run's, as cfl_bundle_write does */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0)
		return cfl_err_set(err, "cannot write bundle '%s': %s", path,
				   strerror(errno));
	close(fd);
	unlink(tmp);
	return 0;
}

int cfl_bundle_write(const struct cfl_bundle *b, const char *path,
		     struct cfl_err *err)
{
	char tmp[4096];
	sqlite3 *db = NULL;
	int rc = -1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path,
			     (long)getpid()) >= sizeof(tmp))
		return cfl_err_set(err, "bundle path '%s' too long", path);
	unlink(tmp);
	if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) != SQLITE_OK) {
		cfl_err_set(err, "cannot write bundle '%s': %s", path,
			    db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	if (sqlite3_exec(db, "PRAGMA journal_mode = DELETE; BEGIN", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    write_all(db, b) ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		wfail(db, path, err);
		goto out;
	}
	if (sqlite3_close(db) != SQLITE_OK) {
		wfail(db, path, err);
		goto out;
	}
	db = NULL;
	if (rename(tmp, path)) {
		cfl_err_set(err, "cannot write bundle '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (db)
		sqlite3_close(db);
	if (rc)
		unlink(tmp);
	return rc;
}

/* ---- bundle: reading ---- */

struct rd {
	sqlite3 *db;
	const char *path;
	struct cfl_err *err;
};

static int rfail(struct rd *r, const char *what)
{
	return cfl_err_set(r->err, "cannot read bundle '%s': %s", r->path,
			   what ? what : sqlite3_errmsg(r->db));
}

static char *meta(struct rd *r, const char *key, int required)
{
	sqlite3_stmt *s;
	char *v = NULL;
	int rc;

	if (sqlite3_prepare_v2(r->db, "SELECT value FROM meta WHERE key = ?", -1,
			       &s, NULL) != SQLITE_OK) {
		rfail(r, NULL);
		return NULL;
	}
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		v = cfl_strdup((const char *)sqlite3_column_text(s, 0), r->err);
	else if (rc == SQLITE_DONE && !required)
		v = cfl_strdup("", r->err);
	else if (rc == SQLITE_DONE)
		cfl_err_set(r->err, "bundle '%s' has no '%s' in its meta table",
			    r->path, key);
	else
		rfail(r, NULL);
	sqlite3_finalize(s);
	return v;
}

static int read_models(struct rd *r, struct cfl_bundle *b)
{
	sqlite3_stmt *s;
	int rc;
	size_t cap = 0;

	if (sqlite3_prepare_v2(r->db, "SELECT id, trial, model, repeat, fold, text "
			       "FROM models ORDER BY id", -1, &s, NULL) != SQLITE_OK)
		return rfail(r, NULL);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct cfl_bundle_model *m;

		if (sqlite3_column_int64(s, 0) != (sqlite3_int64)b->n_models + 1) {
			sqlite3_finalize(s);
			return rfail(r, "model ids are not 1, 2, 3, ...");
		}
		if (b->n_models == cap) {
			size_t nc = cap ? 2 * cap : 16;
			void *p = realloc(b->models, nc * sizeof(*b->models));

			if (!p) {
				sqlite3_finalize(s);
				return rfail(r, "out of memory");
			}
			b->models = p;
			cap = nc;
		}
		m = &b->models[b->n_models++];
		memset(m, 0, sizeof(*m));
		m->trial = sqlite3_column_int64(s, 1);
		m->repeat = sqlite3_column_int(s, 3);
		m->fold = sqlite3_column_int(s, 4);
		if (!(m->model = col_strdup(s, 2, r->err)) ||
		    !(m->text = col_strdup(s, 5, r->err))) {
			sqlite3_finalize(s);
			return -1;
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : rfail(r, NULL);
}

/* "3+4+5" into member m: ids 1..n_models. */
static int parse_ids(struct rd *r, const char *text, size_t n_models,
		     struct cfl_bundle_member *m)
{
	size_t n = 1;

	for (const char *p = text; *p; p++)
		n += *p == '+';
	if (!(m->models = cfl_calloc(n, sizeof(size_t), r->err)))
		return -1;
	for (const char *p = text; m->n_models < n;) {
		char *end;
		unsigned long long v;

		if (*p < '0' || *p > '9')
			return rfail(r, "bad model list in members");
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || v < 1 || v > n_models || (*end && *end != '+'))
			return rfail(r, "a member names a model that is not there");
		m->models[m->n_models++] = (size_t)v - 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int read_rows(struct rd *r, struct cfl_bundle *b)
{
	sqlite3_stmt *s, *sm = NULL, *ss = NULL;
	sqlite3_int64 n_rows = 0;
	int rc = -1, st;

	if (sqlite3_prepare_v2(r->db, "SELECT count(*) FROM rows", -1, &s, NULL) !=
	    SQLITE_OK)
		return rfail(r, NULL);
	if (sqlite3_step(s) == SQLITE_ROW)
		n_rows = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (n_rows <= 0 || n_rows > 1000000)
		return rfail(r, "it has no rows");
	if (!(b->rows = cfl_calloc((size_t)n_rows, sizeof(*b->rows), r->err)))
		return -1;
	if (sqlite3_prepare_v2(r->db, "SELECT id, name, kind, method FROM rows "
			       "ORDER BY id", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "SELECT models, weight FROM members WHERE "
			       "row = ? ORDER BY pos", -1, &sm, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "SELECT split, metric, value, std FROM "
			       "scores WHERE row = ? ORDER BY rowid", -1, &ss,
			       NULL) != SQLITE_OK) {
		rfail(r, NULL);
		goto out;
	}
	while ((st = sqlite3_step(s)) == SQLITE_ROW && b->n_rows < (size_t)n_rows) {
		struct cfl_bundle_row *row = &b->rows[b->n_rows++];
		sqlite3_int64 id = sqlite3_column_int64(s, 0);
		const char *method = (const char *)sqlite3_column_text(s, 3);
		int m = method ? cfl_bundle_method_lookup(method) : -1;
		size_t cap = 0;

		if (!(row->name = col_strdup(s, 1, r->err)) ||
		    !(row->kind = col_strdup(s, 2, r->err)))
			goto out;
		if (m < 0) {
			cfl_err_set(r->err, "cannot read bundle '%s': row '%s' has an "
				    "unknown method '%s'", r->path, row->name,
				    method ? method : "");
			goto out;
		}
		row->method = (enum cfl_bundle_method)m;
		sqlite3_bind_int64(sm, 1, id);
		while ((st = sqlite3_step(sm)) == SQLITE_ROW) {
			struct cfl_bundle_member *mb;

			if (row->n_members == cap) {
				size_t nc = cap ? 2 * cap : 8;
				void *p = realloc(row->members, nc * sizeof(*mb));

				if (!p) {
					rfail(r, "out of memory");
					goto out;
				}
				row->members = p;
				cap = nc;
			}
			mb = &row->members[row->n_members++];
			memset(mb, 0, sizeof(*mb));
			mb->weight = sqlite3_column_type(sm, 1) == SQLITE_NULL
				     ? NAN : sqlite3_column_double(sm, 1);
			if (parse_ids(r, (const char *)sqlite3_column_text(sm, 0)
				      ? (const char *)sqlite3_column_text(sm, 0) : "",
				      b->n_models, mb))
				goto out;
		}
		sqlite3_reset(sm);
		if (st != SQLITE_DONE) {
			rfail(r, NULL);
			goto out;
		}
		if (!row->n_members ||
		    (row->method == CFL_BUNDLE_ONE && row->n_members != 1)) {
			cfl_err_set(r->err, "cannot read bundle '%s': row '%s' has %zu "
				    "members", r->path, row->name, row->n_members);
			goto out;
		}
		for (size_t j = 0; j < row->n_members; j++)
			if (row->method == CFL_BUNDLE_WEIGHTED &&
			    !isfinite(row->members[j].weight)) {
				cfl_err_set(r->err, "cannot read bundle '%s': row '%s' "
					    "has a member without a weight", r->path,
					    row->name);
				goto out;
			}
		cap = 0;
		sqlite3_bind_int64(ss, 1, id);
		while ((st = sqlite3_step(ss)) == SQLITE_ROW) {
			struct cfl_bundle_score *sc;

			if (row->n_scores == cap) {
				size_t nc = cap ? 2 * cap : 8;
				void *p = realloc(row->scores, nc * sizeof(*sc));

				if (!p) {
					rfail(r, "out of memory");
					goto out;
				}
				row->scores = p;
				cap = nc;
			}
			sc = &row->scores[row->n_scores++];
			col_copy(ss, 0, sc->split, sizeof(sc->split));
			col_copy(ss, 1, sc->metric, sizeof(sc->metric));
			sc->value = sqlite3_column_type(ss, 2) == SQLITE_NULL
				    ? NAN : sqlite3_column_double(ss, 2);
			sc->std = sqlite3_column_type(ss, 3) == SQLITE_NULL
				  ? NAN : sqlite3_column_double(ss, 3);
		}
		sqlite3_reset(ss);
		if (st != SQLITE_DONE) {
			rfail(r, NULL);
			goto out;
		}
	}
	if (st != SQLITE_DONE && st != SQLITE_ROW) {
		rfail(r, NULL);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(sm);
	sqlite3_finalize(ss);
	return rc;
}

int cfl_bundle_read(const char *path, struct cfl_bundle *b,
		    struct cfl_err *err)
{
	struct rd r = { NULL, path, err };
	sqlite3_stmt *s;
	char *format = NULL, *version = NULL;
	long long has_meta = 0;
	int rc = -1;

	memset(b, 0, sizeof(*b));
	if (access(path, R_OK))
		return cfl_err_set(err, "cannot open '%s': %s", path, strerror(errno));
	if (!cfl_bundle_sniff(path))
		return cfl_err_set(err, "'%s' is not a cfl bundle (not an SQLite file)",
				   path);
	if (sqlite3_open_v2(path, &r.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rfail(&r, r.db ? NULL : "out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(r.db, "SELECT count(*) FROM sqlite_master WHERE "
			       "type = 'table' AND name IN ('meta', 'models', "
			       "'rows', 'members', 'scores')", -1, &s, NULL) != SQLITE_OK) {
		rfail(&r, NULL);
		goto out;
	}
	if (sqlite3_step(s) != SQLITE_ROW) {
		rfail(&r, NULL);
		sqlite3_finalize(s);
		goto out;
	}
	has_meta = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (has_meta != 5) {
		cfl_err_set(err, "'%s' is not a cfl bundle (an SQLite file without "
			    "its tables)", path);
		goto out;
	}
	if (!(format = meta(&r, "format", 1)))
		goto out;
	if (strcmp(format, CFL_BUNDLE_FORMAT)) {
		cfl_err_set(err, "'%s' is not a cfl bundle (format '%s')", path, format);
		goto out;
	}
	if (!(version = meta(&r, "version", 1)))
		goto out;
	if (strcmp(version, "1")) {
		cfl_err_set(err, "bundle '%s' has format version %s, this cfl reads %d",
			    path, version, CFL_BUNDLE_VERSION);
		goto out;
	}
	if (!(b->cfl_version = meta(&r, "cfl_version", 0)) ||
	    !(b->run = meta(&r, "run", 0)) || !(b->kind = meta(&r, "kind", 0)) ||
	    !(b->dataset = meta(&r, "dataset", 0)) ||
	    !(b->dataset_sha256 = meta(&r, "dataset_sha256", 0)) ||
	    !(b->metric = meta(&r, "metric", 0)) ||
	    !(b->recommended = meta(&r, "recommended", 1)) ||
	    !(b->encoder = meta(&r, "encoder", 1)) ||
	    read_models(&r, b) || read_rows(&r, b))
		goto out;
	rc = 0;
out:
	free(format);
	free(version);
	sqlite3_close(r.db);
	if (rc)
		cfl_bundle_release(b);
	return rc;
}
