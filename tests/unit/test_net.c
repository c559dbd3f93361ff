/* Unit tests of the remote-worker security and cache (src/run/tls.c,
 * src/run/tcp.c, src/run/cache.c): token files, TLS sessions (a wrong
 * token, tampered, replayed and dropped records, garbage), the TCP
 * transport with and without TLS, and the dataset cache. */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include "cfl/net.h"
#include "cfl/run.h"
#include "cfl/wire.h"

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

/* TCP_NODELAY on every TCP socket of the process (MPI's PMIx client
 * socket is one nobody else sets it on), none other touched. */
static int nodelay_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) < 0)
		return -1;
	return v;
}

static void t_nodelay_all(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int lst = socket(AF_INET, SOCK_STREAM, 0), cli = socket(AF_INET, SOCK_STREAM, 0);
	int udp = socket(AF_INET, SOCK_DGRAM, 0), srv, un[2], n;

	CHECK(lst >= 0 && cli >= 0 && udp >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(lst, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(lst, 1) == 0);
	CHECK(getsockname(lst, (struct sockaddr *)&a, &len) == 0);
	CHECK(connect(cli, (struct sockaddr *)&a, sizeof(a)) == 0);
	srv = accept(lst, NULL, NULL);
	CHECK(srv >= 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, un) == 0);
	CHECK_INT(nodelay_of(cli), 0);
	CHECK_INT(nodelay_of(srv), 0);
	n = cfl_net_nodelay_all();
	CHECK_MSG(n >= 3, "set on %d sockets, want the listener and both ends", n);
	CHECK_INT(nodelay_of(cli), 1);
	CHECK_INT(nodelay_of(srv), 1);
	CHECK_INT(nodelay_of(lst), 1);
	/* a Unix socket and a datagram socket have no TCP level to set */
	CHECK_INT(nodelay_of(un[0]), -1);
	CHECK_INT(nodelay_of(udp), -1);
	CHECK_INT(cfl_net_nodelay_all(), n);
	close(cli), close(srv), close(lst), close(udp), close(un[0]), close(un[1]);
}

static void t_token_load(void)
{
	struct cfl_token t;
	struct cfl_err err;
	const char *p = cfl_test_path("tok");

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

	CHECK_INT(cfl_token_load(&t, cfl_test_path("missing"), &err), -1);
	CHECK_CONTAINS(err.msg, "cannot open token file");
	CHECK_INT(cfl_token_load(&t, cfl_test_dir(), &err), -1);
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
}

/* ---- TLS sessions ---- */

/* A client and a server session with their own tokens, joined through a
 * test-controlled middle: client <-> c[0] | c[1] <-> (the test) <->
 * s[1] | s[0] <-> server, so bytes in flight can be looked at, changed,
 * replayed or dropped. */
struct duo {
	int c[2], s[2];
	struct cfl_tls *cli, *srv;
};

static void duo_open(struct duo *d, const char *tc, const char *ts)
{
	struct cfl_token kc, ks;
	struct cfl_err err;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, d->c) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, d->s) == 0);
	make_token(&kc, tc);
	make_token(&ks, ts);
	d->cli = cfl_tls_new(d->c[0], CFL_TLS_CLIENT, &kc, &err);
	CHECK_MSG(d->cli != NULL, "%s", err.msg);
	d->srv = cfl_tls_new(d->s[0], CFL_TLS_SERVER, &ks, &err);
	CHECK_MSG(d->srv != NULL, "%s", err.msg);
	cfl_token_clear(&kc);
	cfl_token_clear(&ks);
}

static void duo_close(struct duo *d)
{
	cfl_tls_free(d->cli);
	cfl_tls_free(d->srv);
	close(d->c[0]);
	close(d->c[1]);
	close(d->s[0]);
	close(d->s[1]);
}

/* Moves what is in flight from one middle end to the other; returns the
 * bytes moved (the last chunk is kept in *last, up to its size). */
static size_t pass(int from, int to, unsigned char *last, size_t *n_last)
{
	unsigned char buf[65536];
	size_t moved = 0;
	ssize_t k;

	while ((k = recv(from, buf, sizeof(buf), 0)) > 0) {
		CHECK(send(to, buf, (size_t)k, 0) == k);
		if (last) {
			memcpy(last, buf, (size_t)k);
			*n_last = (size_t)k;
		}
		moved += (size_t)k;
	}
	return moved;
}

/* Runs both handshakes to the end.  Returns 1 when both finished, -1 when
 * either failed (errors and fatal flags in ec / es, fc / fs). */
static int duo_handshake(struct duo *d, struct cfl_err *ec, struct cfl_err *es,
			 int *fc, int *fs)
{
	int dc = 0, ds = 0;

	ec->msg[0] = es->msg[0] = 0;
	*fc = *fs = 0;
	for (int round = 0; round < 20 && !(dc == 1 && ds == 1); round++) {
		short want;

		if (dc == 0)
			dc = cfl_tls_handshake(d->cli, &want, fc, ec);
		pass(d->c[1], d->s[1], NULL, NULL);
		if (ds == 0)
			ds = cfl_tls_handshake(d->srv, &want, fs, es);
		pass(d->s[1], d->c[1], NULL, NULL);
		if (dc < 0 || ds < 0) {
			/* let the other side see the alert */
			if (dc == 0)
				dc = cfl_tls_handshake(d->cli, &want, fc, ec);
			if (ds == 0)
				ds = cfl_tls_handshake(d->srv, &want, fs, es);
			return -1;
		}
	}
	return dc == 1 && ds == 1 ? 1 : 0;
}

/* Reads everything the session has (until EAGAIN) into b.  Returns the
 * last read's result: -1 (EAGAIN or an error: see errno), 0 at EOF. */
static ssize_t drain(struct cfl_tls *s, struct cfl_buf *b)
{
	for (;;) {
		ssize_t k;

		CHECK(cfl_buf_reserve(b, 65536) == 0);
		k = cfl_tls_read(s, b->data + b->len, 65536);
		if (k <= 0)
			return k;
		b->len += (size_t)k;
	}
}

static void t_tls_handshake_and_data(void)
{
	struct duo d;
	struct cfl_err ec, es;
	struct cfl_buf got;
	unsigned char *big = malloc(3 << 20);
	size_t off = 0;
	int fc, fs;

	CHECK(big != NULL);
	for (size_t i = 0; i < (3u << 20); i++)
		big[i] = (unsigned char)(i * 7 + (i >> 13));
	duo_open(&d, "a shared token of 32 bytes......", "a shared token of 32 bytes......");
	CHECK_MSG(duo_handshake(&d, &ec, &es, &fc, &fs) == 1, "%s / %s", ec.msg, es.msg);
	/* 3 MiB client -> server through partial writes, the bytes in flight
	 * encrypted (the plaintext pattern never shows) */
	cfl_buf_init(&got);
	while (off < (3u << 20) || got.len < (3u << 20)) {
		unsigned char seen[65536];
		size_t n_seen = 0;

		if (off < (3u << 20)) {
			ssize_t k = cfl_tls_write(d.cli, big + off, (3u << 20) - off);

			CHECK(k > 0 || (k < 0 && errno == EAGAIN));
			if (k > 0)
				off += (size_t)k;
		}
		pass(d.c[1], d.s[1], seen, &n_seen);
		if (n_seen >= 64)
			CHECK(memmem(seen, n_seen, big + 4096, 64) == NULL);
		CHECK(drain(d.srv, &got) < 0 && errno == EAGAIN);
	}
	CHECK_INT(got.len, 3u << 20);
	CHECK(memcmp(got.data, big, got.len) == 0);
	/* and back */
	got.len = 0;
	CHECK_INT(cfl_tls_write(d.srv, "pong", 4), 4);
	pass(d.s[1], d.c[1], NULL, NULL);
	CHECK(drain(d.cli, &got) < 0 && errno == EAGAIN);
	CHECK_INT(got.len, 4);
	CHECK(memcmp(got.data, "pong", 4) == 0);
	/* the peer's close (without close_notify) is an EOF */
	shutdown(d.s[1], SHUT_WR);
	got.len = 0;
	CHECK_INT(drain(d.srv, &got), 0);
	CHECK_INT(got.len, 0);
	cfl_buf_release(&got);
	free(big);
	duo_close(&d);
}

static void t_tls_wrong_token(void)
{
	struct duo d;
	struct cfl_err ec, es;
	int fc, fs;

	duo_open(&d, "one token of more than 16 bytes", "another token of 16+ bytes");
	CHECK_INT(duo_handshake(&d, &ec, &es, &fc, &fs), -1);
	/* the server catches the wrong key (its binder), the client learns
	 * from the alert: neither will do better by trying again */
	CHECK_CONTAINS(es.msg, "TLS handshake failed");
	CHECK_MSG(fc == 1, "client: %s (fatal %d)", ec.msg, fc);
	CHECK_CONTAINS(ec.msg, "alert");
	duo_close(&d);
	/* a token is required */
	{
		struct cfl_token none;
		struct cfl_err err;

		memset(&none, 0, sizeof(none));
		CHECK(cfl_tls_new(0, CFL_TLS_SERVER, &none, &err) == NULL);
		CHECK_CONTAINS(err.msg, "needs a token");
	}
}

/* A record changed, replayed or dropped in flight ends the session. */
static void t_tls_tamper_replay_drop(void)
{
	for (int what = 0; what < 3; what++) {
		struct duo d;
		struct cfl_err ec, es;
		struct cfl_buf got;
		unsigned char rec[65536], rec2[65536];
		size_t n = 0, n2 = 0;
		ssize_t r;
		int fc, fs;

		duo_open(&d, "a shared token of 32 bytes......", "a shared token of 32 bytes......");
		CHECK(duo_handshake(&d, &ec, &es, &fc, &fs) == 1);
		cfl_buf_init(&got);
		/* two records taken out of the pipe by hand; the first is
		 * delivered as it is (except when dropped) */
		CHECK_INT(cfl_tls_write(d.cli, "frame one", 9), 9);
		n = (size_t)recv(d.c[1], rec, sizeof(rec), 0);
		CHECK(n > 9 && n < sizeof(rec));
		CHECK_INT(cfl_tls_write(d.cli, "frame two", 9), 9);
		n2 = (size_t)recv(d.c[1], rec2, sizeof(rec2), 0);
		CHECK(n2 > 9 && n2 < sizeof(rec2));
		if (what != 2)
			CHECK(send(d.s[1], rec, n, 0) == (ssize_t)n);
		if (what == 0) {
			rec2[n2 - 3] ^= 1;	/* a flipped bit */
			CHECK(send(d.s[1], rec2, n2, 0) == (ssize_t)n2);
		} else if (what == 1) {
			/* frame two twice: the second copy is a replay */
			CHECK(send(d.s[1], rec2, n2, 0) == (ssize_t)n2);
			CHECK(send(d.s[1], rec2, n2, 0) == (ssize_t)n2);
		} else {
			/* frame one was dropped: frame two comes first */
			CHECK(send(d.s[1], rec2, n2, 0) == (ssize_t)n2);
		}
		r = drain(d.srv, &got);
		CHECK_MSG(r < 0 && errno == EPROTO, "case %d: read %zd errno %d, got %zu bytes",
			  what, r, errno, got.len);
		/* what came before the bad record was delivered */
		CHECK_INT(got.len, what == 0 ? 9 : what == 1 ? 18 : 0);
		CHECK_CONTAINS(cfl_tls_error(d.srv), "TLS read failed");
		cfl_buf_release(&got);
		duo_close(&d);
	}
}

/* Bytes that are not TLS: a fatal handshake failure, never a crash. */
static void t_tls_garbage(void)
{
	static const char *junk[] = { "GET / HTTP/1.1\r\n\r\n",
				      "CFLW\001\001\000\000", "\x16\x03\x01\xff\xff" };

	for (size_t i = 0; i < sizeof(junk) / sizeof(*junk); i++) {
		struct duo d;
		struct cfl_err es;
		short want;
		int fs, r;

		duo_open(&d, "a shared token of 32 bytes......", "a shared token of 32 bytes......");
		CHECK(send(d.s[1], junk[i], strlen(junk[i]), 0) > 0);
		shutdown(d.s[1], SHUT_WR);
		r = cfl_tls_handshake(d.srv, &want, &fs, &es);
		CHECK_INT(r, -1);
		duo_close(&d);
	}
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
	const char *dir = cfl_test_path("cache/sub");

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
}

static void t_cache_rejects_bad_bytes(void)
{
	struct cfl_cache c;
	struct cfl_cache_fill f;
	struct cfl_err err;
	const char data[] = "x,y\n1,0\n";
	unsigned char sha[32];
	char *path = NULL;
	const char *dir = cfl_test_path("cache2");

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
	const char *dir = cfl_test_path("cache5");
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
	const char *dir = cfl_test_path("cache4");

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
}

/* Two processes fill the same entry at once, in small interleaved chunks:
 * both succeed, the entry is right, no temporary is left. */
static void t_cache_two_writers(void)
{
	struct cfl_cache c;
	struct cfl_err err;
	static char data[200000];
	unsigned char sha[32];
	const char *dir = cfl_test_path("cache3");
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
}

/* ---- the TCP transport against a real pool ----
 *
 * A forked child runs a coordinator: a pool with no local workers, N
 * trials and a TCP listener.  The test plays a remote worker by hand with
 * struct cfl_link, so it can send what an honest worker never would. */

#define N_TRIALS 3

/* The token of the coordinator and workers of the TCP tests (NULL: none,
 * plain TCP on loopback). */
static const struct cfl_token *g_tok;
/* The coordinator's trials and retries (N_TRIALS and 5 unless a test says
 * otherwise); it exits 0 when every trial is done. */
static int g_n_trials = N_TRIALS, g_max_retries = 5;

static void coordinator(int port_fd, const char *csv)
{
	struct cfl_buf bytes;
	struct cfl_pool_opts o;
	struct cfl_tcp_opts to;
	struct cfl_pool *p;
	struct cfl_tcp *t;
	struct cfl_err err;
	struct cfl_pool_event ev;
	int port, r, n_done = 0;

	/* never outlive the test case, whatever happens */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(30);
	cfl_pool_opts_init(&o);
	o.n_local = 0;
	o.max_retries = g_max_retries;
	p = cfl_pool_new(&o, &err);
	if (!p)
		_exit(10);
	for (int i = 1; i <= g_n_trials; i++) {
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
	to.data = &bytes;
	to.config = "run=test\n";
	to.handshake_timeout = 2;
	to.token = g_tok;
	t = cfl_tcp_listen(p, &to, &err);
	if (!t)
		_exit(12);
	if (bytes.data)	/* the bytes were taken over, not copied */
		_exit(17);
	port = cfl_tcp_port(t);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		_exit(13);
	while ((r = cfl_pool_wait(p, &ev, &err)) != CFL_POOL_IDLE) {
		if (r < 0)
			_exit(14);
		if (r == CFL_POOL_EVENT && ev.status == CFL_TRIAL_DONE)
			n_done++;
	}
	cfl_pool_close(p, NULL);
	cfl_tcp_free(t);
	_exit(n_done == g_n_trials ? 0 : 15);
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
	CHECK_MSG(cfl_link_connect(l, "127.0.0.1", port, g_tok, 5, 5, &fatal, &err) == 0,
		  "%s", err.msg);
	cfl_wire_msg_init(&m, CFL_WIRE_HELLO);
	m.u.hello.proto = proto;
	m.u.hello.n_slots = 1;
	m.u.hello.name = (char *)name;
	CHECK(cfl_link_send(l, &m, 5, &err) == 0);
	CHECK(next_msg(l, reply) == 0);
}

/* Sends a RESULT with one test prediction pred (NAN: none kept). */
static void send_result_pred(struct cfl_link *l, int64_t trial, uint32_t attempt,
			     double pred, struct cfl_buf *frame /* OUT, or NULL */)
{
	struct cfl_wire_msg m;
	struct cfl_buf b;
	struct cfl_err err;
	uint32_t row = 0;

	cfl_wire_msg_init(&m, CFL_WIRE_RESULT);
	m.u.result.trial_id = trial;
	m.u.result.attempt = attempt;
	if (!isnan(pred) || signbit(pred)) {
		/* -NAN: a NaN prediction */
		m.u.result.split[1].n = 1;
		m.u.result.split[1].n_out = 1;
		m.u.result.split[1].pred = &pred;
		m.u.result.split[1].rows = &row;
	}
	cfl_buf_init(&b);
	CHECK(cfl_wire_encode(&b, 0, 0, &m, &err) == 0);
	CHECK(cfl_link_send_frame(l, b.data, b.len, 5, &err) == 0);
	if (frame)
		*frame = b;
	else
		cfl_buf_release(&b);
}

static void send_result(struct cfl_link *l, int64_t trial, uint32_t attempt,
			struct cfl_buf *frame /* OUT: the sent bytes, or NULL */)
{
	send_result_pred(l, trial, attempt, NAN, frame);
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

static void tcp_protocol(void)
{
	const char *csv = cfl_test_path("d.csv");
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
	/* a result of t1 from w2, which does not hold it (w1's copy sent
	 * again, or a forgery): dropped, acked as a duplicate, and t1 stays
	 * queued */
	send_result(&l2, t1, 1, NULL);
	expect_ack(&l2, t1, 1, 1);
	send_result(&l2, 2, 1, &sealed);
	expect_ack(&l2, 2, 1, 0);
	/* the slot is free again: the next trial */
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
	/* with TLS, a frame written around the session (bytes that are no
	 * record of it) ends the connection; trial 3 is queued again behind
	 * trial 1.  Without a token, the worker just leaves. */
	if (g_tok) {
		CHECK(send_all_raw(l2.fd, sealed.data, sealed.len) == 0);
		CHECK(next_msg(&l2, &m) < 0);
	}
	cfl_link_close(&l2);
	join(&l3, port, "w3", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	cfl_wire_msg_release(&m);
	CHECK(next_msg(&l3, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	CHECK_INT(m.u.lease.trial_id, t1);
	CHECK_INT(m.u.lease.attempt, 2);
	cfl_wire_msg_release(&m);
	/* a NaN prediction: a failed attempt (acked as not stored), t1 is
	 * queued again behind trial 3 */
	send_result_pred(&l3, t1, 2, -NAN, NULL);
	expect_ack(&l3, t1, 2, 1);
	CHECK(next_msg(&l3, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	CHECK_INT(m.u.lease.trial_id, 3);
	CHECK_INT(m.u.lease.attempt, 2);
	cfl_wire_msg_release(&m);
	send_result_pred(&l3, 3, 2, 0.5, NULL);
	expect_ack(&l3, 3, 2, 0);
	CHECK(next_msg(&l3, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
	CHECK_INT(m.u.lease.trial_id, t1);
	CHECK_INT(m.u.lease.attempt, 3);
	cfl_wire_msg_release(&m);
	send_result(&l3, t1, 3, NULL);
	expect_ack(&l3, t1, 3, 0);
	/* all done: SHUTDOWN, and the coordinator saw each trial once */
	CHECK(next_msg(&l3, &m) == 0);
	CHECK_STR(cfl_wire_type_name(m.type), "SHUTDOWN");
	cfl_wire_msg_release(&m);
	cfl_link_close(&l3);
	cfl_buf_release(&sealed);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "coordinator status %d", st);
}

/* 22 connections that each join, take a lease and vanish without a word
 * do not turn 12 trials into poison (max_retries 1: before, each lost
 * lease counted as an attempt that killed its worker); an honest worker
 * then runs every trial. */
static void t_tcp_vanishing_peers_do_not_poison(void)
{
	const char *csv = cfl_test_path("d.csv");
	const char data[] = "a,y\n1,0\n2,1\n3,0\n4,1\n";
	struct cfl_link l;
	struct cfl_wire_msg m;
	int pfd[2], port, st, n_done = 0;
	pid_t pid;

	g_tok = NULL;
	g_n_trials = 12;
	g_max_retries = 1;
	write_file(csv, data, 0600);
	CHECK(pipe(pfd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		coordinator(pfd[1], csv);
	CHECK(read(pfd[0], &port, sizeof(port)) == sizeof(port));
	for (int i = 0; i < 22; i++) {
		char name[32];

		snprintf(name, sizeof(name), "ghost%d", i);
		join(&l, port, name, CFL_WIRE_VERSION, &m);
		CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
		cfl_wire_msg_release(&m);
		CHECK(next_msg(&l, &m) == 0);
		CHECK_STR(cfl_wire_type_name(m.type), "LEASE");
		cfl_wire_msg_release(&m);
		cfl_link_close(&l);
	}
	join(&l, port, "honest", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	cfl_wire_msg_release(&m);
	for (;;) {
		int64_t id;
		uint32_t at;

		CHECK(next_msg(&l, &m) == 0);
		if (m.type != CFL_WIRE_LEASE) {
			CHECK_STR(cfl_wire_type_name(m.type), "SHUTDOWN");
			cfl_wire_msg_release(&m);
			break;
		}
		id = m.u.lease.trial_id;
		at = m.u.lease.attempt;
		cfl_wire_msg_release(&m);
		send_result(&l, id, at, NULL);
		expect_ack(&l, id, at, 0);
		n_done++;
	}
	CHECK_INT(n_done, 12);
	cfl_link_close(&l);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "coordinator status %d", st);
}

static void t_tcp_protocol_plain(void)
{
	g_tok = NULL;
	tcp_protocol();
}

static void t_tcp_protocol_tls(void)
{
	static struct cfl_token tok;

	make_token(&tok, "the coordinator's token, 32 byte");
	g_tok = &tok;
	tcp_protocol();
}

/* Garbage instead of a TLS handshake: the coordinator closes the
 * connection, and an honest worker still gets in.  A worker without a
 * token is told why it is refused, in a frame it reads. */
static void t_tcp_garbage_then_honest(void)
{
	static struct cfl_token tok;
	const char *csv = cfl_test_path("d.csv");
	const char data[] = "a,y\n1,0\n2,1\n";
	unsigned char sha[32], buf[64];
	struct cfl_link l;
	struct cfl_wire_msg m;
	struct sockaddr_in a;
	int pfd[2], port, fd;
	ssize_t n;
	pid_t pid;

	make_token(&tok, "the coordinator's token, 32 byte");
	g_tok = &tok;
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
	/* at most an alert, then the end (EOF, or a reset: our bytes were
	 * left unread) */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		CHECK(buf[0] == 0x15);
	CHECK(n <= 0);
	close(fd);
	/* a worker without a token */
	{
		struct cfl_link p;
		struct cfl_wire_msg h;
		struct cfl_err err;
		int fatal;

		cfl_link_init(&p);
		CHECK(cfl_link_connect(&p, "127.0.0.1", port, NULL, 5, 5, &fatal, &err) == 0);
		cfl_wire_msg_init(&h, CFL_WIRE_HELLO);
		h.u.hello.proto = CFL_WIRE_VERSION;
		h.u.hello.n_slots = 1;
		CHECK(cfl_link_send(&p, &h, 5, &err) == 0);
		CHECK(next_msg(&p, &m) == 0);
		CHECK_STR(cfl_wire_type_name(m.type), "ERROR");
		CHECK_CONTAINS(m.u.error.message, "authentication failed");
		cfl_wire_msg_release(&m);
		cfl_link_close(&p);
	}
	/* a worker with another token: refused for good */
	{
		struct cfl_link p;
		struct cfl_token other;
		struct cfl_err err;
		int fatal = 0;

		make_token(&other, "not the coordinator's token......");
		cfl_link_init(&p);
		CHECK(cfl_link_connect(&p, "127.0.0.1", port, &other, 5, 5, &fatal, &err) == -1);
		CHECK_INT(fatal, 1);
		CHECK_CONTAINS(err.msg, "authentication failed");
	}
	join(&l, port, "honest", CFL_WIRE_VERSION, &m);
	CHECK_STR(cfl_wire_type_name(m.type), "WELCOME");
	cfl_wire_msg_release(&m);
	cfl_link_close(&l);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_nodelay_all),
	TEST(t_token_load),
	TEST(t_tls_handshake_and_data),
	TEST(t_tls_wrong_token),
	TEST(t_tls_tamper_replay_drop),
	TEST(t_tls_garbage),
	TEST(t_cache_fill_get),
	TEST(t_cache_rejects_bad_bytes),
	TEST(t_cache_two_writers),
	TEST(t_cache_find_leaves_the_check_to_the_reader),
	TEST(t_cache_stale_tmp_removed),
	TEST(t_tcp_protocol_plain),
	TEST(t_tcp_protocol_tls),
	TEST(t_tcp_vanishing_peers_do_not_poison),
	TEST(t_tcp_garbage_then_honest),
	{ 0 }
};
