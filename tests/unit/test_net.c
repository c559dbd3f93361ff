/* Unit tests of the remote-worker security and cache (src/run/auth.c,
 * src/run/cache.c): token files, the mutual handshake, per-frame MACs
 * against tampering and replay, and the dataset cache. */
#include "runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include "cfl/net.h"
#include "cfl/run.h"
#include "cfl/wire.h"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
	static char p[512];

	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/cfl-test-net-XXXXXX");
		CHECK(mkdtemp(tmpdir) != NULL);
	}
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	return p;
}

/* Removes the test's temporary folder (a failed case leaves it to look at). */
static void cleanup(void)
{
	char cmd[300];

	if (!tmpdir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	CHECK(system(cmd) == 0);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

static int send_all_raw(int fd, const void *p, size_t n)
{
	return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static void make_token(struct cfl_token *t, const char *text)
{
	memset(t, 0, sizeof(*t));
	t->len = strlen(text);
	memcpy(t->key, text, t->len);
}

/* ---- token files ---- */

static void t_token_load(void)
{
	struct cfl_token t;
	struct cfl_err err;
	const char *p = tmp_path("tok");

	write_file(p, "0123456789abcdef0123\n", 0600);
	CHECK_INT(cfl_token_load(&t, p, &err), 0);
	CHECK_INT(t.len, 20);	/* the newline is cut */
	CHECK(memcmp(t.key, "0123456789abcdef0123", 20) == 0);

	CHECK(chmod(p, 0644) == 0);
	CHECK_INT(cfl_token_load(&t, p, &err), -1);
	CHECK_CONTAINS(err.msg, "readable by others (mode 0644)");
	CHECK_CONTAINS(err.msg, "chmod 600");
	CHECK(chmod(p, 0640) == 0);
	CHECK_INT(cfl_token_load(&t, p, &err), -1);
	CHECK(chmod(p, 0400) == 0);
	CHECK_INT(cfl_token_load(&t, p, &err), 0);

	write_file(p, "short\n", 0600);
	CHECK_INT(cfl_token_load(&t, p, &err), -1);
	CHECK_CONTAINS(err.msg, "too short");

	CHECK_INT(cfl_token_load(&t, tmp_path("missing"), &err), -1);
	CHECK_CONTAINS(err.msg, "cannot open token file");
	CHECK_INT(cfl_token_load(&t, tmpdir, &err), -1);
	CHECK_CONTAINS(err.msg, "not a regular file");

	{
		char big[CFL_TOKEN_MAX + 10];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		write_file(p, big, 0600);
		CHECK_INT(cfl_token_load(&t, p, &err), -1);
		CHECK_CONTAINS(err.msg, "too long");
	}
	cfl_token_clear(&t);
	CHECK_INT(t.len, 0);
	cleanup();
}

/* ---- handshake ---- */

/* Runs a handshake between a worker and a coordinator holding tokens tw and
 * tc, moving bytes both ways in pieces of at most `piece` bytes.  Returns
 * 1 when both finished, -1 when either failed (errors in ew / ec). */
static int handshake(const char *tw, const char *tc, size_t piece,
		     struct cfl_mac *mw, struct cfl_mac *mc,
		     struct cfl_err *ew, struct cfl_err *ec)
{
	struct cfl_token kw, kc;
	struct cfl_auth aw, ac;
	struct cfl_buf to_c, to_w;	/* bytes in flight */
	int dw = 0, dc = 0, rc = 0, failed_w = 0;

	ew->msg[0] = ec->msg[0] = 0;
	make_token(&kw, tw);
	make_token(&kc, tc);
	cfl_buf_init(&to_c);
	cfl_buf_init(&to_w);
	CHECK_INT(cfl_auth_init(&aw, CFL_AUTH_WORKER, &kw, &to_c, ew), 0);
	CHECK_INT(cfl_auth_init(&ac, CFL_AUTH_COORDINATOR, &kc, &to_w, ec), 0);
	for (int round = 0; round < 1000 && !(dw && dc); round++) {
		size_t used, n;

		/* the coordinator reads what arrived so far, a piece at a time */
		n = to_c.len < piece ? to_c.len : piece;
		if (!dc && n) {
			struct cfl_buf in;

			cfl_buf_init(&in);
			cfl_buf_append(&in, to_c.data, n);
			rc = cfl_auth_step(&ac, in.data, in.len, &used, &to_w,
					   mc, ec);
			cfl_buf_release(&in);
			if (rc < 0)
				break;
			if (used) {
				memmove(to_c.data, to_c.data + used, to_c.len - used);
				to_c.len -= used;
			} else if (n == to_c.len) {
				/* incomplete and nothing more to come yet */
			} else {
				piece++;
			}
			dc = rc == 1;
		}
		n = to_w.len < piece ? to_w.len : piece;
		if (!dw && n) {
			rc = cfl_auth_step(&aw, to_w.data, n, &used, &to_c, mw,
					   ew);
			if (rc < 0) {
				failed_w = 1;
				break;
			}
			if (used) {
				memmove(to_w.data, to_w.data + used, to_w.len - used);
				to_w.len -= used;
			} else if (n < to_w.len) {
				piece++;
			}
			dw = rc == 1;
		}
	}
	/* a failing side may have queued a FAIL for the other: deliver it */
	if (rc < 0) {
		size_t used;

		if (failed_w && to_c.len)
			cfl_auth_step(&ac, to_c.data, to_c.len, &used, &to_w, mc,
				      ec);
		if (!failed_w && to_w.len)
			cfl_auth_step(&aw, to_w.data, to_w.len, &used, &to_c, mw,
				      ew);
	}
	cfl_auth_release(&aw);
	cfl_auth_release(&ac);
	cfl_buf_release(&to_c);
	cfl_buf_release(&to_w);
	return dw && dc ? 1 : -1;
}

static void t_handshake_ok(void)
{
	struct cfl_mac mw, mc;
	struct cfl_err ew, ec;
	unsigned char mac[32];
	const char msg[] = "seq 1 frame";

	for (size_t piece = 1; piece <= 80; piece += 13) {
		CHECK_INT(handshake("the shared token 123", "the shared token 123",
				    piece, &mw, &mc, &ew, &ec), 1);
		CHECK(memcmp(mw.send_key, mc.recv_key, 32) == 0);
		CHECK(memcmp(mw.recv_key, mc.send_key, 32) == 0);
		CHECK(memcmp(mw.send_key, mw.recv_key, 32) != 0);
	}
	/* the empty token (loopback without a token file) works too */
	CHECK_INT(handshake("", "", 64, &mw, &mc, &ew, &ec), 1);
	/* frames flow both ways */
	CHECK_INT(cfl_mac_next_seq(&mw), 1);
	cfl_mac_sign(&mw, msg, sizeof(msg), mac);
	CHECK_INT(cfl_mac_check(&mc, 1, msg, sizeof(msg), mac, &ec), 0);
	CHECK_INT(cfl_mac_next_seq(&mc), 1);
	cfl_mac_sign(&mc, msg, sizeof(msg), mac);
	CHECK_INT(cfl_mac_check(&mw, 1, msg, sizeof(msg), mac, &ew), 0);
}

static void t_handshake_keys_fresh(void)
{
	struct cfl_mac a1, c1, a2, c2;
	struct cfl_err ew, ec;

	/* two sessions with one token get different keys (fresh nonces), so
	 * frames of one connection cannot be replayed into another */
	CHECK_INT(handshake("the shared token 123", "the shared token 123", 64,
			    &a1, &c1, &ew, &ec), 1);
	CHECK_INT(handshake("the shared token 123", "the shared token 123", 64,
			    &a2, &c2, &ew, &ec), 1);
	CHECK(memcmp(a1.send_key, a2.send_key, 32) != 0);
}

static void t_handshake_wrong_token(void)
{
	struct cfl_mac mw, mc;
	struct cfl_err ew, ec;

	CHECK_INT(handshake("the shared token 123", "another token 456789", 7,
			    &mw, &mc, &ew, &ec), -1);
	/* the worker finds out first (the coordinator proves first) and both
	 * sides have a message */
	CHECK_CONTAINS(ew.msg, "authentication failed");
	CHECK_CONTAINS(ew.msg, "wrong token");
	CHECK_CONTAINS(ec.msg, "the worker refused: authentication failed");
	/* empty token on one side only */
	CHECK_INT(handshake("", "the shared token 123", 64, &mw, &mc, &ew, &ec),
		  -1);
	CHECK_CONTAINS(ew.msg, "authentication failed");
}

/* A coordinator fed a fixed byte string: its result and message. */
static int coord_feed(const void *in, size_t len, struct cfl_buf *out,
		      struct cfl_err *err, size_t *used)
{
	struct cfl_auth a;
	struct cfl_mac m;
	int rc;

	CHECK_INT(cfl_auth_init(&a, CFL_AUTH_COORDINATOR, NULL, out, err), 0);
	rc = cfl_auth_step(&a, in, len, used, out, &m, err);
	cfl_auth_release(&a);
	return rc;
}

static void t_handshake_garbage(void)
{
	struct cfl_buf out;
	struct cfl_err err;
	size_t used;
	unsigned char f[8 + 32] = { 'C', 'F', 'L', 'A', 1, 1, 32, 0 };

	cfl_buf_init(&out);
	CHECK_INT(coord_feed("GET / HTTP/1.1\r\n", 16, &out, &err, &used), -1);
	CHECK_CONTAINS(err.msg, "not a cfl handshake");
	CHECK(out.len > 8);	/* a FAIL for the peer */
	CHECK(memcmp(out.data, "CFLA", 4) == 0);
	CHECK_INT(out.data[5], 4);

	/* a good challenge is accepted (proof appended) */
	out.len = 0;
	CHECK_INT(coord_feed(f, sizeof(f), &out, &err, &used), 0);
	CHECK_INT(used, 40);
	CHECK_INT(out.len, 8 + 64);
	/* a partial one waits */
	out.len = 0;
	CHECK_INT(coord_feed(f, 20, &out, &err, &used), 0);
	CHECK_INT(used, 0);
	CHECK_INT(out.len, 0);
	/* wrong version */
	f[4] = 9;
	out.len = 0;
	CHECK_INT(coord_feed(f, sizeof(f), &out, &err, &used), -1);
	CHECK_CONTAINS(err.msg, "version mismatch: the peer speaks handshake version 9");
	f[4] = 1;
	/* a huge length */
	f[6] = 0xff, f[7] = 0xff;
	CHECK_INT(coord_feed(f, sizeof(f), &out, &err, &used), -1);
	CHECK_CONTAINS(err.msg, "too long");
	/* a short body, a frame out of turn */
	f[6] = 31, f[7] = 0;
	CHECK_INT(coord_feed(f, 39, &out, &err, &used), -1);
	CHECK_CONTAINS(err.msg, "expected a challenge");
	f[6] = 32, f[5] = 3;
	CHECK_INT(coord_feed(f, 40, &out, &err, &used), -1);
	CHECK_CONTAINS(err.msg, "expected a challenge");
	/* a FAIL with unprintable bytes is shown sanitised */
	{
		unsigned char ff[] = { 'C', 'F', 'L', 'A', 7, 4, 5, 0, 2,
				       'n', 0x1b, 'o', '\n' };

		CHECK_INT(coord_feed(ff, sizeof(ff), &out, &err, &used), -1);
		CHECK_STR(err.msg, "the worker refused: n?o?");
	}
	cfl_buf_release(&out);
}

/* ---- per-frame MACs ---- */

static void t_mac_tamper_replay(void)
{
	struct cfl_mac mw, mc;
	struct cfl_err ew, ec;
	unsigned char frame[64], mac[32], mac2[32];
	uint64_t seq;

	CHECK_INT(handshake("the shared token 123", "the shared token 123", 64,
			    &mw, &mc, &ew, &ec), 1);
	for (int i = 0; i < 64; i++)
		frame[i] = (unsigned char)i;
	/* frame 1: accepted */
	seq = cfl_mac_next_seq(&mw);
	memcpy(frame + 8, &seq, 8);
	cfl_mac_sign(&mw, frame, sizeof(frame), mac);
	CHECK_INT(cfl_mac_check(&mc, seq, frame, sizeof(frame), mac, &ec), 0);
	/* the same frame again: replay */
	CHECK_INT(cfl_mac_check(&mc, seq, frame, sizeof(frame), mac, &ec), -1);
	CHECK_CONTAINS(ec.msg, "replayed or reordered frame (sequence 1, expected 2)");
	/* frame 2, one bit flipped anywhere: tampered */
	seq = cfl_mac_next_seq(&mw);
	memcpy(frame + 8, &seq, 8);
	cfl_mac_sign(&mw, frame, sizeof(frame), mac);
	for (size_t i = 0; i < sizeof(frame); i += 7) {
		frame[i] ^= 0x10;
		CHECK_INT(cfl_mac_check(&mc, seq, frame, sizeof(frame), mac, &ec), -1);
		CHECK_CONTAINS(ec.msg, "frame MAC mismatch");
		frame[i] ^= 0x10;
	}
	memcpy(mac2, mac, 32);
	mac2[31] ^= 1;
	CHECK_INT(cfl_mac_check(&mc, seq, frame, sizeof(frame), mac2, &ec), -1);
	/* the failures changed nothing: the genuine frame 2 still passes */
	CHECK_INT(cfl_mac_check(&mc, seq, frame, sizeof(frame), mac, &ec), 0);
	/* skipping a number (a dropped frame) is refused too */
	cfl_mac_next_seq(&mw);
	seq = cfl_mac_next_seq(&mw);
	memcpy(frame + 8, &seq, 8);
	cfl_mac_sign(&mw, frame, sizeof(frame), mac);
	CHECK_INT(cfl_mac_check(&mc, seq, frame, sizeof(frame), mac, &ec), -1);
	CHECK_CONTAINS(ec.msg, "expected 3");
	/* a frame the coordinator signed is not valid coming back (keys per
	 * direction: no reflection) */
	seq = cfl_mac_next_seq(&mc);
	cfl_mac_sign(&mc, frame, sizeof(frame), mac);
	CHECK_INT(cfl_mac_check(&mc, 3, frame, sizeof(frame), mac, &ec), -1);
	CHECK_CONTAINS(ec.msg, "MAC mismatch");
}

/* ---- dataset cache ---- */

static void sha_of(const char *s, size_t n, unsigned char out[32])
{
	CHECK_INT(cfl_sha256(s, n, out, NULL), 0);
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void t_cache_fill_get(void)
{
	struct cfl_cache c;
	struct cfl_cache_fill f;
	struct cfl_err err;
	const char data[] = "a,b,y\n1,2,0\n3,4,1\n5,6,0\n";
	size_t n = sizeof(data) - 1;
	unsigned char sha[32];
	char *path, hex[65], want[600];
	struct cfl_buf b;
	const char *dir = tmp_path("cache/sub");

	sha_of(data, n, sha);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	CHECK_INT(cfl_cache_get(&c, sha, n, &path, &err), 0);
	CHECK(path == NULL);

	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, n, &err), 0);
	CHECK_INT(cfl_cache_fill_add(&f, 0, data, 5, &err), 0);
	/* out of order and too long are refused */
	CHECK_INT(cfl_cache_fill_add(&f, 0, data, 5, &err), -1);
	CHECK_CONTAINS(err.msg, "offset 0, expected 5");
	CHECK_INT(cfl_cache_fill_add(&f, 5, data, n, &err), -1);
	CHECK_CONTAINS(err.msg, "runs past");
	/* not visible before finish */
	CHECK_INT(cfl_cache_get(&c, sha, n, &path, &err), 0);
	CHECK_INT(cfl_cache_fill_add(&f, 5, data + 5, n - 5, &err), 0);
	CHECK_INT(cfl_cache_fill_finish(&f, &path, &err), 0);
	cfl_sha256_hex(sha, hex);
	snprintf(want, sizeof(want), "%s/%s.data", dir, hex);
	CHECK_STR(path, want);
	free(path);
	CHECK_INT(count_files(dir), 1);	/* no temporary left */

	CHECK_INT(cfl_cache_get(&c, sha, n, &path, &err), 1);
	cfl_buf_init(&b);
	CHECK_INT(cfl_buf_read_file(&b, path, &err), 0);
	CHECK_STR(b.data, data);
	cfl_buf_release(&b);
	free(path);
	/* a wrong size or corrupted bytes: treated as missing and removed */
	CHECK_INT(cfl_cache_get(&c, sha, n + 1, &path, &err), 0);
	CHECK(path == NULL);
	CHECK_INT(count_files(dir), 0);
	cfl_cache_release(&c);
	cleanup();
}

static void t_cache_rejects_bad_bytes(void)
{
	struct cfl_cache c;
	struct cfl_cache_fill f;
	struct cfl_err err;
	const char data[] = "x,y\n1,0\n";
	unsigned char sha[32];
	char *path = NULL;
	const char *dir = tmp_path("cache2");

	sha_of(data, 8, sha);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, 8, &err), 0);
	CHECK_INT(cfl_cache_fill_add(&f, 0, "x,y\n1,1\n", 8, &err), 0);
	CHECK_INT(cfl_cache_fill_finish(&f, &path, &err), -1);
	CHECK_CONTAINS(err.msg, "do not match their SHA-256");
	CHECK(path == NULL);
	CHECK_INT(count_files(dir), 0);
	/* incomplete */
	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, 8, &err), 0);
	CHECK_INT(cfl_cache_fill_add(&f, 0, data, 4, &err), 0);
	CHECK_INT(cfl_cache_fill_finish(&f, &path, &err), -1);
	CHECK_CONTAINS(err.msg, "incomplete: 4 of 8 bytes");
	CHECK_INT(count_files(dir), 0);
	/* abort removes the temporary */
	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, 8, &err), 0);
	CHECK_INT(count_files(dir), 1);
	cfl_cache_fill_abort(&f);
	cfl_cache_fill_abort(&f);
	CHECK_INT(count_files(dir), 0);
	/* absurd sizes are refused before anything is written */
	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, CFL_CACHE_MAX_SIZE + 1, &err),
		  -1);
	/* an entry corrupted on disk is dropped at the next get */
	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, 8, &err), 0);
	CHECK_INT(cfl_cache_fill_add(&f, 0, data, 8, &err), 0);
	CHECK_INT(cfl_cache_fill_finish(&f, &path, &err), 0);
	write_file(path, "x,y\n1,9\n", 0600);
	free(path);
	CHECK_INT(cfl_cache_get(&c, sha, 8, &path, &err), 0);
	CHECK_INT(count_files(dir), 0);
	cfl_cache_release(&c);
	cleanup();
}

/* Sets a file's times seconds into the past. */
static void age_file(const char *path, long seconds)
{
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= seconds;
	ts[1] = ts[0];
	CHECK_MSG(utimensat(AT_FDCWD, path, ts, 0) == 0, "utimensat '%s'", path);
}

static int file_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* A temporary file that a writer killed mid-fill left behind is removed by
 * the next cfl_cache_init once it is CFL_CACHE_TMP_AGE old; an old one of
 * a live process of this host (a fill in progress), a recent one, another
 * host's recent one and files that are no fill's stay; another host's or
 * an unnamed writer's old file goes by age alone. */
static void t_cache_stale_tmp_removed(void)
{
	struct cfl_cache c;
	struct cfl_cache_fill live;
	struct cfl_err err;
	unsigned char sha[32];
	char hex[65], dead[600] = "", other[600], unnamed[600], other_new[600],
	     entry[600], notes[600];
	const char *dir = tmp_path("cache5");
	long old = CFL_CACHE_TMP_AGE + 60;
	struct dirent *e;
	DIR *d;
	pid_t pid;
	int status;

	sha_of("x,y\n1,0\n", 8, sha);
	cfl_sha256_hex(sha, hex);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	/* a worker killed mid-download: its temporary file stays behind */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct cfl_cache_fill f;

		_exit(cfl_cache_fill_begin(&f, &c, sha, 8, &err) ||
		      cfl_cache_fill_add(&f, 0, "x,y\n", 4, &err) ? 1 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	d = opendir(dir);
	CHECK(d != NULL);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".tmp."))
			snprintf(dead, sizeof(dead), "%s/%s", dir, e->d_name);
	closedir(d);
	CHECK_MSG(dead[0], "the killed writer left no temporary file");
	{
		/* named after its writer: ".tmp.HOST.PID.N" */
		char pid_part[32];

		snprintf(pid_part, sizeof(pid_part), ".%ld.", (long)pid);
		CHECK_CONTAINS(dead, pid_part);
	}
	/* this process fills the same entry meanwhile */
	CHECK_INT(cfl_cache_fill_begin(&live, &c, sha, 8, &err), 0);
	snprintf(other, sizeof(other), "%s/%s.data.tmp.cfl-no-such-host.1.0", dir, hex);
	snprintf(other_new, sizeof(other_new), "%s/%s.data.tmp.cfl-no-such-host.2.0", dir, hex);
	snprintf(unnamed, sizeof(unnamed), "%s/%s.data.tmp.1.0", dir, hex);
	snprintf(entry, sizeof(entry), "%s/%s.data", dir, hex);
	snprintf(notes, sizeof(notes), "%s/notes.data.tmp.cfl-no-such-host.1.0", dir);
	write_file(other, "x", 0600);
	write_file(other_new, "x", 0600);
	write_file(unnamed, "x", 0600);
	write_file(entry, "x", 0600);
	write_file(notes, "x", 0600);
	age_file(live.tmp_path, old);
	age_file(other, old);
	age_file(unnamed, old);
	age_file(entry, old);
	age_file(notes, old);
	cfl_cache_release(&c);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	CHECK_MSG(file_exists(dead), "a recent file of a dead writer was removed");
	CHECK_MSG(file_exists(live.tmp_path), "a live fill's file was removed");
	CHECK_MSG(!file_exists(other), "another host's old file stayed");
	CHECK_MSG(!file_exists(unnamed), "an unnamed writer's old file stayed");
	CHECK_MSG(file_exists(other_new), "another host's recent file was removed");
	CHECK_MSG(file_exists(entry), "an entry was removed");
	CHECK_MSG(file_exists(notes), "a file of no fill was removed");
	/* an hour later the dead writer's file goes; the live fill's stays */
	age_file(dead, old);
	cfl_cache_release(&c);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	CHECK_MSG(!file_exists(dead), "a dead writer's old file stayed");
	CHECK_MSG(file_exists(live.tmp_path), "a live fill's file was removed");
	cfl_cache_fill_abort(&live);
	cfl_cache_release(&c);
	cleanup();
}

/* cfl_cache_find reads nothing: a corrupt entry of the right size is
 * returned (its reader's hash must catch it, and cfl_cache_get then removes
 * it); a wrong size is removed; what is no regular file is an error. */
static void t_cache_find_leaves_the_check_to_the_reader(void)
{
	struct cfl_cache c;
	struct cfl_cache_fill f;
	struct cfl_err err;
	const char data[] = "x,y\n1,0\n";
	unsigned char sha[32];
	char *path = NULL, *found = NULL;
	const char *dir = tmp_path("cache4");

	sha_of(data, 8, sha);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	CHECK_INT(cfl_cache_find(&c, sha, 8, &found, &err), 0);
	CHECK(found == NULL);
	CHECK_INT(cfl_cache_fill_begin(&f, &c, sha, 8, &err), 0);
	CHECK_INT(cfl_cache_fill_add(&f, 0, data, 8, &err), 0);
	CHECK_INT(cfl_cache_fill_finish(&f, &path, &err), 0);
	CHECK_INT(cfl_cache_find(&c, sha, 8, &found, &err), 1);
	CHECK_STR(found, path);
	free(found);
	/* corrupt, same size: found all the same, until a get checks it */
	write_file(path, "x,y\n1,9\n", 0600);
	CHECK_INT(cfl_cache_find(&c, sha, 8, &found, &err), 1);
	free(found);
	CHECK_INT(count_files(dir), 1);
	CHECK_INT(cfl_cache_get(&c, sha, 8, &found, &err), 0);
	CHECK_INT(count_files(dir), 0);
	/* another size: removed without reading */
	write_file(path, "x,y\n1,0\n2,1\n", 0600);
	CHECK_INT(cfl_cache_find(&c, sha, 8, &found, &err), 0);
	CHECK(found == NULL);
	CHECK_INT(count_files(dir), 0);
	/* a symlink is refused, not followed, and left alone */
	CHECK_INT(symlink("/etc/hostname", path), 0);
	CHECK_INT(cfl_cache_find(&c, sha, 8, &found, &err), -1);
	CHECK_CONTAINS(err.msg, "not a regular file");
	CHECK(found == NULL);
	CHECK_INT(count_files(dir), 1);
	free(path);
	cfl_cache_release(&c);
	cleanup();
}

/* Two processes fill the same entry at once, in small interleaved chunks:
 * both succeed, the entry is right, no temporary is left. */
static void t_cache_two_writers(void)
{
	struct cfl_cache c;
	struct cfl_err err;
	static char data[200000];
	unsigned char sha[32];
	const char *dir = tmp_path("cache3");
	pid_t pid[2];
	char *path;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i * 7 % 26);
	sha_of(data, sizeof(data), sha);
	CHECK_INT(cfl_cache_init(&c, dir, &err), 0);
	for (int k = 0; k < 2; k++) {
		pid[k] = fork();
		CHECK(pid[k] >= 0);
		if (pid[k] == 0) {
			struct cfl_cache_fill f;
			char *p;

			if (cfl_cache_fill_begin(&f, &c, sha, sizeof(data), &err))
				_exit(1);
			for (size_t off = 0; off < sizeof(data); off += 1000) {
				if (cfl_cache_fill_add(&f, off, data + off, 1000, &err))
					_exit(2);
				if (off % 20000 == 0)
					usleep(1000);
			}
			if (cfl_cache_fill_finish(&f, &p, &err))
				_exit(3);
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st;

		CHECK(waitpid(pid[k], &st, 0) == pid[k]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK_INT(count_files(dir), 1);
	CHECK_INT(cfl_cache_get(&c, sha, sizeof(data), &path, &err), 1);
	free(path);
	cfl_cache_release(&c);
	cleanup();
}

/* ---- the TCP transport against a real pool ----
 *
 * A forked child runs a coordinator: a pool with no local workers, N
 * trials and a TCP listener.  The test plays a remote worker by hand with
 * struct cfl_link, so it can send what an honest worker never would. */

#define N_TRIALS 3

static void coordinator(int port_fd, const char *csv)
{
	struct cfl_buf bytes;
	struct cfl_pool_opts o;
	struct cfl_tcp_opts to;
	struct cfl_pool *p;
	struct cfl_tcp *t;
	struct cfl_err err;
	int port, r, n_done = 0;

	/* never outlive the test case, whatever happens */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(30);
	cfl_pool_opts_init(&o);
	o.n_local = 0;
	o.max_retries = 5;
	p = cfl_pool_new(&o, &err);
	if (!p)
		_exit(10);
	for (int i = 1; i <= N_TRIALS; i++) {
		struct cfl_trial_spec sp;

		memset(&sp, 0, sizeof(sp));
		sp.trial_id = i;
		sp.model = "baseline";
		sp.seed = (uint64_t)i;
		sp.fold = -1;
		if (cfl_pool_submit(p, &sp, &err))
			_exit(11);
	}
	cfl_tcp_opts_init(&to);
	to.addr = "127.0.0.1:0";
	/* opaque bytes to the transport (cfl serves encoded parts) */
	cfl_buf_init(&bytes);
	if (cfl_buf_read_file(&bytes, csv, &err))
		_exit(16);
	to.data = bytes.data;
	to.data_len = bytes.len;
	to.config = "run=test\n";
	to.handshake_timeout = 2;
	t = cfl_tcp_listen(p, &to, &err);
	if (!t)
		_exit(12);
	port = cfl_tcp_port(t);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		_exit(13);
	while ((r = cfl_pool_wait(p, &(struct cfl_pool_event){ 0 }, &err)) != CFL_POOL_IDLE) {
		if (r < 0)
			_exit(14);
		if (r == CFL_POOL_EVENT)
			n_done++;
	}
	cfl_pool_close(p, NULL);
	cfl_tcp_free(t);
	_exit(n_done == N_TRIALS ? 0 : 15);
}

/* The next message that is not a heartbeat (within 5 s). */
static int next_msg(struct cfl_link *l, struct cfl_wire_msg *m)
{
	struct cfl_err err;
	int r;

	for (;;) {
		r = cfl_link_recv(l, m, 5, &err);
		if (r <= 0)
			return -1;
		if (m->type != CFL_WIRE_HEARTBEAT)
			return 0;
		cfl_wire_msg_release(m);
	}
}

static void join(struct cfl_link *l, int port, const char *name,
		 uint32_t proto, struct cfl_wire_msg *reply)
{
	struct cfl_wire_msg m;
	struct cfl_err err;
	int fatal;

	cfl_link_init(l);
	CHECK_MSG(cfl_link_connect(l, "127.0.0.1", port, NULL, 5, &fatal, &err) == 0,
		  "%s", err.msg);
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = proto;
	m.u.hello.n_slots = 1;
	m.u.hello.name = (char *)name;
	CHECK(cfl_link_send(l, &m, 5, &err) == 0);
	CHECK(next_msg(l, reply) == 0);
}

static void send_result(struct cfl_link *l, int64_t trial, uint32_t attempt,
			struct cfl_buf *frame /* OUT: the sealed bytes, or NULL */)
{
	struct cfl_wire_msg m;
	struct cfl_buf b;
	struct cfl_err err;

	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	m.u.result.trial_id = trial;
	m.u.result.attempt = attempt;
	cfl_buf_init(&b);
	CHECK(cfl_wire_encode(&b, 0, CFL_WIRE_F_MAC, &m, &err) == 0);
	CHECK(cfl_link_send_frame(l, b.data, b.len, 5, &err) == 0);
	if (frame)
		*frame = b;
	else
		cfl_buf_release(&b);
}

static void expect_ack(struct cfl_link *l, int64_t trial, uint32_t attempt,
		       uint32_t dup)
{
	struct cfl_wire_msg m;

	CHECK(next_msg(l, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "RESULT_ACK");
	CHECK_INT(m.u.ack.trial_id, trial);
	CHECK_INT(m.u.ack.attempt, attempt);
	CHECK_INT(m.u.ack.duplicate, dup);
	cfl_wire_msg_release(&m);
}

static void t_tcp_protocol(void)
{
	const char *csv = tmp_path("d.csv");
	const char data[] = "a,y\n1,0\n2,1\n3,0\n4,1\n5,0\n6,1\n7,0\n8,1\n";
	unsigned char sha[32];
	struct cfl_link l1, l2, l3;
	struct cfl_wire_msg m;
	struct cfl_buf sealed;
	struct cfl_err err;
	int pfd[2], port, st;
	int64_t t1;
	uint32_t a1;
	pid_t pid;

	write_file(csv, data, 0600);
	sha_of(data, strlen(data), sha);
	CHECK(pipe(pfd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		coordinator(pfd[1], csv);
	CHECK(read(pfd[0], &port, sizeof(port)) == sizeof(port));

	/* a worker of another protocol version is told so */
	join(&l1, port, "old", CFL_WIRE_VERSION + 1, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "ERROR");
	CHECK_CONTAINS(m.u.error.message, "version mismatch");
	cfl_wire_msg_release(&m);
	cfl_link_close(&l1);

	/* WELCOME names the data; FETCH gets its bytes */
	join(&l1, port, "w1", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	CHECK(memcmp(m.u.welcome.data_sha256, sha, 32) == 0);
	CHECK_INT(m.u.welcome.data_size, strlen(data));
	CHECK_STR(m.u.welcome.config, "run=test\n");
	cfl_wire_msg_release(&m);
	CHECK(next_msg(&l1, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	t1 = m.u.lease.trial_id;
	a1 = m.u.lease.attempt;
	CHECK_INT(a1, 1);
	cfl_wire_msg_release(&m);
	cfl_wire_msg_init(&m, CFL_WIRE_FETCH);
	memcpy(m.u.fetch.sha256, sha, 32);
	m.u.fetch.offset = 4;
	m.u.fetch.max_len = 8;
	CHECK(cfl_link_send(&l1, &m, 5, &err) == 0);
	CHECK(next_msg(&l1, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "CHUNK");
	CHECK_INT(m.u.chunk.n, 8);
	CHECK(memcmp(m.u.chunk.data, data + 4, 8) == 0);
	cfl_wire_msg_release(&m);

	/* a second worker with the same name is refused */
	join(&l2, port, "w1", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "ERROR");
	CHECK_CONTAINS(m.u.error.message, "'w1' is already connected");
	cfl_wire_msg_release(&m);
	cfl_link_close(&l2);

	/* w1 vanishes holding trial t1: requeued (behind the others) */
	cfl_link_close(&l1);
	join(&l2, port, "w2", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	cfl_wire_msg_release(&m);
	CHECK(next_msg(&l2, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	CHECK_INT(m.u.lease.trial_id, 2);
	cfl_wire_msg_release(&m);
	/* w1's late result of t1 (kept and sent again by w1 after a
	 * reconnect) is accepted although w2 does not hold it: first wins,
	 * and t1 leaves the queue */
	send_result(&l2, t1, 1, NULL);
	expect_ack(&l2, t1, 1, 0);
	send_result(&l2, 2, 1, &sealed);
	expect_ack(&l2, 2, 1, 0);
	/* the slot is free again: the last trial */
	CHECK(next_msg(&l2, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	CHECK_INT(m.u.lease.trial_id, 3);
	cfl_wire_msg_release(&m);
	/* the same result again (as after a lost ack): a duplicate; so is a
	 * result for a trial the coordinator does not know */
	send_result(&l2, 2, 1, NULL);
	expect_ack(&l2, 2, 1, 1);
	send_result(&l2, 999, 1, NULL);
	expect_ack(&l2, 999, 1, 1);
	/* a replayed frame (its old sequence number and MAC) ends the
	 * connection; trial 3 goes to the next worker as attempt 2 */
	CHECK(send_all_raw(l2.fd, sealed.data, sealed.len) == 0);
	CHECK(next_msg(&l2, &m) < 0);
	cfl_link_close(&l2);
	join(&l3, port, "w3", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	cfl_wire_msg_release(&m);
	CHECK(next_msg(&l3, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	CHECK_INT(m.u.lease.trial_id, 3);
	CHECK_INT(m.u.lease.attempt, 2);
	cfl_wire_msg_release(&m);
	send_result(&l3, 3, 2, NULL);
	expect_ack(&l3, 3, 2, 0);
	/* all done: SHUTDOWN, and the coordinator saw each trial once */
	CHECK(next_msg(&l3, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "SHUTDOWN");
	cfl_wire_msg_release(&m);
	cfl_link_close(&l3);
	cfl_buf_release(&sealed);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "coordinator status %d", st);
	cleanup();
}

/* Garbage instead of a handshake: the coordinator answers FAIL and closes,
 * and an honest worker still gets in. */
static void t_tcp_garbage_then_honest(void)
{
	const char *csv = tmp_path("d.csv");
	const char data[] = "a,y\n1,0\n2,1\n";
	unsigned char sha[32], buf[64];
	struct cfl_link l;
	struct cfl_wire_msg m;
	struct sockaddr_in a;
	int pfd[2], port, fd;
	ssize_t n;
	pid_t pid;

	write_file(csv, data, 0600);
	sha_of(data, strlen(data), sha);
	CHECK(pipe(pfd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		coordinator(pfd[1], csv);
	CHECK(read(pfd[0], &port, sizeof(port)) == sizeof(port));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(0x7f000001);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(write(fd, "\x00\x01garbage", 9) == 9);
	n = read(fd, buf, sizeof(buf));
	CHECK(n > 8);
	CHECK(memcmp(buf, "CFLA", 4) == 0);
	CHECK_INT(buf[5], 4);	/* FAIL */
	CHECK_INT(read(fd, buf, sizeof(buf)), 0);	/* then EOF */
	close(fd);
	join(&l, port, "honest", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	cfl_wire_msg_release(&m);
	cfl_link_close(&l);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cleanup();
}

const struct cfl_test cfl_tests[] = {
	TEST(t_token_load),
	TEST(t_handshake_ok),
	TEST(t_handshake_keys_fresh),
	TEST(t_handshake_wrong_token),
	TEST(t_handshake_garbage),
	TEST(t_mac_tamper_replay),
	TEST(t_cache_fill_get),
	TEST(t_cache_rejects_bad_bytes),
	TEST(t_cache_two_writers),
	TEST(t_cache_find_leaves_the_check_to_the_reader),
	TEST(t_cache_stale_tmp_removed),
	TEST(t_tcp_protocol),
	TEST(t_tcp_garbage_then_honest),
	{ 0 }
};
