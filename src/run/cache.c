/*
 * The worker's dataset cache: files named by the SHA-256 of their bytes,
 * filled in chunks through a private temporary file and made visible by an
 * atomic rename() only once size and hash are verified.
 *
 * Invariant: a file named "<hex>.data" in the folder either hashes to <hex>
 * or is removed before anyone relies on its bytes: cfl_cache_get hashes it
 * first; a cfl_cache_find caller hashes what it reads (cfl_data_load does)
 * and asks cfl_cache_get when that hash differs.  Paths are built from
 * hashes only, never from a peer's text.  Two workers on one host may race on one entry:
 * each writes its own O_EXCL temporary file, and either rename wins with the
 * same bytes.  A temporary file is named after its writer (host, pid), so
 * one that a killed worker left behind is removed later (cfl_cache_init)
 * and one a live worker is writing never is.  Depends on core only
 * (errors, SHA-256).
 */
#include "cfl/net.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(const char *dir, struct cfl_err *err)
{
	char *p = cfl_strdup(dir, err);
	struct stat st;

	if (!p)
		return -1;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == 0) {
			char c = *s;

			*s = 0;
			if (mkdir(p, 0700) && errno != EEXIST) {
				cfl_err_set(err, "cannot create cache folder '%s': %s",
					    p, strerror(errno));
				free(p);
				return -1;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return cfl_err_set(err, "cache folder '%s' is not a folder", dir);
	return 0;
}

/* ---- cache: temporary files and their writers ---- */

/* This host's name as temporary file names carry it: letters, digits and
 * "-_." only, so it cannot name another folder. */
static void host_name(char *out, size_t cap)
{
	char h[256];
	size_t j = 0;

	if (gethostname(h, sizeof(h)))
		h[0] = 0;
	h[sizeof(h) - 1] = 0;
	for (size_t i = 0; h[i] && j + 1 < cap; i++)
		out[j++] = isalnum((unsigned char)h[i]) || strchr("-_.", h[i])
				   ? h[i] : '_';
	out[j] = 0;
	if (!j)
		snprintf(out, cap, "host");
}

/* The part after "<64 hex>.data.tmp." when name is a temporary file of a
 * cache fill, else NULL. */
static const char *tmp_writer(const char *name)
{
	for (int i = 0; i < 64; i++)
		if (!isdigit((unsigned char)name[i]) && !(name[i] >= 'a' && name[i] <= 'f'))
			return NULL;
	return strncmp(name + 64, ".data.tmp.", 10) ? NULL : name + 74;
}

/* Whether the writer named by w ("HOST.PID.N"; "PID.N" before names
 * carried the host) may still be writing: a live process of this host.
 * Another host's pid says nothing here: its file's age decides alone. */
static int writer_alive(const char *w, const char *host)
{
	const char *n = strrchr(w, '.'), *p;
	char *end;
	long pid;

	if (!n || n == w)
		return 0;
	for (p = n - 1; p > w && *p != '.'; p--)
		;
	if (p == w || (size_t)(p - w) != strlen(host) ||
	    strncmp(w, host, (size_t)(p - w)))
		return 0;
	errno = 0;
	pid = strtol(p + 1, &end, 10);
	if (end != n || pid <= 0 || errno)
		return 0;
	/* EPERM: alive, another user's */
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Removes the temporary files of fills no one can still be writing:
 * untouched for CFL_CACHE_TMP_AGE seconds (a live fill writes every few
 * seconds, or gives up and removes its file) and not from a live process
 * of this host (one stopped, or one in another pid namespace under the
 * same host name, keeps its file until it is old).  Best effort: what it
 * cannot read or remove stays. */
static void remove_stale_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char host[65];
	time_t now = time(NULL);

	if (!d)
		return;
	host_name(host, sizeof(host));
	while ((e = readdir(d))) {
		const char *w = tmp_writer(e->d_name);
		struct stat st;

		if (!w || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || now - st.st_mtime < CFL_CACHE_TMP_AGE ||
		    writer_alive(w, host))
			continue;
		unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

int cfl_cache_init(struct cfl_cache *c, const char *dir, struct cfl_err *err)
{
	c->dir = NULL;
	if (!dir || !*dir)
		return cfl_err_set(err, "no cache folder given");
	if (make_dirs(dir, err))
		return -1;
	c->dir = cfl_strdup(dir, err);
	if (!c->dir)
		return -1;
	remove_stale_tmp(c->dir);
	return 0;
}

void cfl_cache_release(struct cfl_cache *c)
{
	free(c->dir);
	c->dir = NULL;
}

static char *entry_path(const struct cfl_cache *c,
			const unsigned char sha256[32], struct cfl_err *err)
{
	char hex[65];
	struct cfl_buf b;

	cfl_sha256_hex(sha256, hex);
	cfl_buf_init(&b);
	if (cfl_buf_printf(&b, "%s/%s.data", c->dir, hex)) {
		cfl_buf_release(&b);
		cfl_err_set(err, "out of memory");
		return NULL;
	}
	return b.data;
}

/* Hashes an open file; returns its size or -1 with err. */
static int64_t hash_fd(int fd, const char *path, unsigned char out[32],
		       struct cfl_err *err)
{
	static __thread unsigned char buf[1 << 16];
	struct cfl_sha256 s;
	int64_t total = 0;
	ssize_t n;

	if (cfl_sha256_init(&s, err))
		return -1;
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cfl_err_set(err, "cannot read '%s': %s", path,
				    strerror(errno));
			cfl_sha256_release(&s);
			return -1;
		}
		if (n == 0)
			break;
		cfl_sha256_update(&s, buf, (size_t)n);
		total += n;
	}
	cfl_sha256_final(&s, out);
	return total;
}

int cfl_cache_get(const struct cfl_cache *c, const unsigned char sha256[32],
		  uint64_t size, char **path, struct cfl_err *err)
{
	char *p = entry_path(c, sha256, err);
	unsigned char got[32];
	int64_t n;
	int fd;

	*path = NULL;
	if (!p)
		return -1;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT) {
			free(p);
			return 0;
		}
		cfl_err_set(err, "cannot open '%s': %s", p, strerror(e));
		free(p);
		return -1;
	}
	n = hash_fd(fd, p, got, err);
	close(fd);
	if (n < 0) {
		free(p);
		return -1;
	}
	if ((uint64_t)n != size || memcmp(got, sha256, 32) != 0) {
		/* a corrupt entry (disk, a hand edit): drop it, fetch again */
		unlink(p);
		free(p);
		return 0;
	}
	*path = p;
	return 1;
}

int cfl_cache_find(const struct cfl_cache *c, const unsigned char sha256[32],
		   uint64_t size, char **path, struct cfl_err *err)
{
	char *p = entry_path(c, sha256, err);
	struct stat st;

	*path = NULL;
	if (!p)
		return -1;
	if (lstat(p, &st)) {
		int e = errno;

		if (e != ENOENT)
			cfl_err_set(err, "cannot open '%s': %s", p, strerror(e));
		free(p);
		return e == ENOENT ? 0 : -1;
	}
	/* what cfl_cache_get's O_NOFOLLOW open and read would refuse */
	if (!S_ISREG(st.st_mode)) {
		cfl_err_set(err, "cannot open '%s': not a regular file", p);
		free(p);
		return -1;
	}
	if ((uint64_t)st.st_size != size) {
		/* cut short or grown: damaged for sure, no need to hash it */
		unlink(p);
		free(p);
		return 0;
	}
	*path = p;
	return 1;
}

int cfl_cache_fill_begin(struct cfl_cache_fill *f, const struct cfl_cache *c,
			 const unsigned char sha256[32], uint64_t size,
			 struct cfl_err *err)
{
	struct cfl_buf b;
	char host[65];

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (size > CFL_CACHE_MAX_SIZE)
		return cfl_err_set(err, "dataset of %llu bytes is larger than "
				   "the cache accepts", (unsigned long long)size);
	f->final_path = entry_path(c, sha256, err);
	if (!f->final_path)
		return -1;
	cfl_buf_init(&b);
	host_name(host, sizeof(host));
	/* host, pid and a counter make the name unique per process and tell
	 * remove_stale_tmp whose it is; O_EXCL makes sure no one else (or a
	 * stale file) is behind it */
	for (unsigned i = 0; i < 100; i++) {
		static unsigned counter;

		b.len = 0;
		if (cfl_buf_printf(&b, "%s.tmp.%s.%ld.%u", f->final_path, host,
				   (long)getpid(), counter++)) {
			cfl_buf_release(&b);
			cfl_cache_fill_abort(f);
			return cfl_err_set(err, "out of memory");
		}
		f->fd = open(b.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
				     O_NOFOLLOW, 0600);
		if (f->fd >= 0 || errno != EEXIST)
			break;
	}
	if (f->fd < 0) {
		cfl_err_set(err, "cannot create '%s': %s", b.data,
			    strerror(errno));
		cfl_buf_release(&b);
		cfl_cache_fill_abort(f);
		return -1;
	}
	f->tmp_path = b.data;
	memcpy(f->sha256, sha256, 32);
	f->size = size;
	if (cfl_sha256_init(&f->hash, err)) {
		cfl_cache_fill_abort(f);
		return -1;
	}
	return 0;
}

int cfl_cache_fill_add(struct cfl_cache_fill *f, uint64_t offset,
		       const void *data, size_t n, struct cfl_err *err)
{
	const char *p = data;

	if (f->fd < 0)
		return cfl_err_set(err, "cache fill is not open");
	if (offset != f->offset)
		return cfl_err_set(err, "dataset chunk at offset %llu, expected "
				   "%llu", (unsigned long long)offset,
				   (unsigned long long)f->offset);
	if (n > f->size - f->offset)
		return cfl_err_set(err, "dataset chunk runs past its size (%llu "
				   "bytes)", (unsigned long long)f->size);
	cfl_sha256_update(&f->hash, data, n);
	while (n) {
		ssize_t w = write(f->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return cfl_err_set(err, "cannot write '%s': %s",
					   f->tmp_path, strerror(errno));
		p += w;
		n -= (size_t)w;
		f->offset += (uint64_t)w;
	}
	return 0;
}

int cfl_cache_fill_finish(struct cfl_cache_fill *f, char **path,
			  struct cfl_err *err)
{
	unsigned char got[32];
	char hex[65];

	*path = NULL;
	if (f->fd < 0) {
		cfl_cache_fill_abort(f);
		return cfl_err_set(err, "cache fill is not open");
	}
	if (f->offset != f->size) {
		cfl_err_set(err, "dataset incomplete: %llu of %llu bytes",
			    (unsigned long long)f->offset,
			    (unsigned long long)f->size);
		cfl_cache_fill_abort(f);
		return -1;
	}
	cfl_sha256_final(&f->hash, got);
	if (memcmp(got, f->sha256, 32) != 0) {
		cfl_sha256_hex(f->sha256, hex);
		cfl_err_set(err, "dataset bytes do not match their SHA-256 %.16s...",
			    hex);
		cfl_cache_fill_abort(f);
		return -1;
	}
	/* no fsync: an entry a crash left short or garbled is caught by the
	 * hash check before its next use (cfl_cache_get) and fetched again */
	if (close(f->fd)) {
		f->fd = -1;
		cfl_err_set(err, "cannot write '%s': %s", f->tmp_path,
			    strerror(errno));
		cfl_cache_fill_abort(f);
		return -1;
	}
	f->fd = -1;
	if (rename(f->tmp_path, f->final_path)) {
		cfl_err_set(err, "cannot rename '%s': %s", f->tmp_path,
			    strerror(errno));
		cfl_cache_fill_abort(f);
		return -1;
	}
	*path = f->final_path;
	f->final_path = NULL;
	free(f->tmp_path);
	f->tmp_path = NULL;
	cfl_sha256_release(&f->hash);
	return 0;
}

void cfl_cache_fill_abort(struct cfl_cache_fill *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->tmp_path)
		unlink(f->tmp_path);
	free(f->tmp_path);
	free(f->final_path);
	f->tmp_path = f->final_path = NULL;
	cfl_sha256_release(&f->hash);
}
