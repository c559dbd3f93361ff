/*
 * The secure channel of remote workers: the token file, and TLS 1.3 from
 * OpenSSL's libssl with an external pre-shared key derived from the token
 * (no certificates).  TLS gives the connection its integrity, its
 * confidentiality and its protection from replay; the coordinator and the
 * worker prove to each other that they hold the token by completing the
 * handshake at all (a wrong key fails the PSK binder check).
 *
 * Invariants: no secret is ever sent or left in memory we release; sockets
 * are written with MSG_NOSIGNAL (a peer gone is an error, never a SIGPIPE);
 * a session's decrypted bytes are read until OpenSSL wants more from the
 * socket, so polling the descriptor never misses buffered data.  This is
 * the one file that includes OpenSSL's TLS headers; it knows nothing of the
 * wire codec.
 */
#include "cfl/net.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>

/* ---- token ---- */

int cfl_token_load(struct cfl_token *t, const char *path, struct cfl_err *err)
{
	struct stat st;
	unsigned char buf[CFL_TOKEN_MAX + 2];
	ssize_t n;
	size_t len = 0;
	int fd;

	memset(t, 0, sizeof(*t));
	fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return cfl_err_set(err, "cannot open token file '%s': %s", path,
				   strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return cfl_err_set(err, "cannot stat token file '%s': %s", path,
				   strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return cfl_err_set(err, "token file '%s' is not a regular file",
				   path);
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return cfl_err_set(err, "token file '%s' belongs to another user "
				   "(uid %ld)", path, (long)st.st_uid);
	}
	if (st.st_mode & 077) {
		close(fd);
		return cfl_err_set(err, "token file '%s' is readable by others "
				   "(mode %04o): run chmod 600 '%s'", path,
				   (unsigned)(st.st_mode & 07777), path);
	}
	/* read one byte more than allowed, to tell "too long" from "just fits" */
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			OPENSSL_cleanse(buf, sizeof(buf));
			return cfl_err_set(err, "cannot read token file '%s': %s",
					   path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
		       buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len > CFL_TOKEN_MAX) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return cfl_err_set(err, "token file '%s' is too long (at most %d "
				   "bytes)", path, CFL_TOKEN_MAX);
	}
	if (len < CFL_TOKEN_MIN) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return cfl_err_set(err, "token file '%s' is too short (%zu bytes; "
				   "at least %d): make one with 'head -c 32 "
				   "/dev/urandom | base64 >%s'", path, len,
				   CFL_TOKEN_MIN, path);
	}
	memcpy(t->key, buf, len);
	t->len = len;
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

void cfl_token_clear(struct cfl_token *t)
{
	OPENSSL_cleanse(t, sizeof(*t));
}

void cfl_net_sha256(const void *data, size_t len, unsigned char out[32])
{
	static const unsigned char empty[1];

	if (!EVP_Digest(len ? data : empty, len, out, NULL, EVP_sha256(), NULL))
		memset(out, 0, 32);	/* never a real digest of these bytes */
}

/* ---- TLS: contexts ---- */

#define PSK_IDENTITY "cfl-1"
#define PSK_LABEL "cfl-tls-psk-1"
/* TLS 1.3 suites whose hash is SHA-256, the hash OpenSSL gives a PSK from
 * the callbacks below */
#define SUITES "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"

struct cfl_tls {
	SSL *ssl;
	int fd;
	short want;		/* what the last EAGAIN waits for */
	unsigned char psk[32];
	char why[200];		/* the last failure */
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static SSL_CTX *g_ctx[2];	/* client, server: shared by every session */
static BIO_METHOD *g_bio;
static int g_ex = -1;		/* SSL ex_data index of the struct cfl_tls */

static struct cfl_tls *of_ssl(SSL *ssl)
{
	return SSL_get_ex_data(ssl, g_ex);
}

static unsigned int psk_client(SSL *ssl, const char *hint, char *identity,
			       unsigned int max_identity_len,
			       unsigned char *psk, unsigned int max_psk_len)
{
	struct cfl_tls *s = of_ssl(ssl);

	(void)hint;
	if (!s || max_identity_len < sizeof(PSK_IDENTITY) ||
	    max_psk_len < sizeof(s->psk))
		return 0;
	memcpy(identity, PSK_IDENTITY, sizeof(PSK_IDENTITY));
	memcpy(psk, s->psk, sizeof(s->psk));
	return sizeof(s->psk);
}

static unsigned int psk_server(SSL *ssl, const char *identity,
			       unsigned char *psk, unsigned int max_psk_len)
{
	struct cfl_tls *s = of_ssl(ssl);

	if (!s || !identity || strcmp(identity, PSK_IDENTITY) ||
	    max_psk_len < sizeof(s->psk))
		return 0;
	memcpy(psk, s->psk, sizeof(s->psk));
	return sizeof(s->psk);
}

/* A socket BIO of our own: OpenSSL's writes with write(2), and a peer that
 * has gone would raise SIGPIPE in the coordinator. */
static int bio_write(BIO *b, const char *data, int len)
{
	ssize_t k;

	BIO_clear_retry_flags(b);
	do
		k = send(BIO_get_fd(b, NULL), data, (size_t)len,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_write(b);
	return (int)k;
}

static int bio_read(BIO *b, char *data, int len)
{
	ssize_t k;

	BIO_clear_retry_flags(b);
	do
		k = recv(BIO_get_fd(b, NULL), data, (size_t)len, MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_read(b);
	return (int)k;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	switch (cmd) {
	case BIO_C_SET_FD:
		BIO_set_data(b, (void *)(intptr_t)*(int *)ptr);
		BIO_set_init(b, 1);
		(void)num;
		return 1;
	case BIO_C_GET_FD:
		if (ptr)
			*(int *)ptr = (int)(intptr_t)BIO_get_data(b);
		return (int)(intptr_t)BIO_get_data(b);
	case BIO_CTRL_FLUSH:
		return 1;
	default:
		return 0;
	}
}

static void tls_setup(void)
{
	const SSL_METHOD *m[2] = { TLS_client_method(), TLS_server_method() };

	g_ex = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	g_bio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
			     BIO_TYPE_DESCRIPTOR, "cfl socket");
	if (g_bio) {
		BIO_meth_set_write(g_bio, bio_write);
		BIO_meth_set_read(g_bio, bio_read);
		BIO_meth_set_ctrl(g_bio, bio_ctrl);
	}
	for (int i = 0; i < 2; i++) {
		SSL_CTX *c = SSL_CTX_new(m[i]);

		if (!c)
			continue;
		if (!SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) ||
		    !SSL_CTX_set_ciphersuites(c, SUITES)) {
			SSL_CTX_free(c);
			continue;
		}
		/* no resumption tickets (each connection runs the full PSK
		 * handshake), no renegotiation; a peer that closes without
		 * close_notify is an ordinary EOF: every frame is whole or
		 * not received at all, and the wire protocol copes with a
		 * lost connection */
		SSL_CTX_set_num_tickets(c, 0);
		SSL_CTX_set_options(c, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
		SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE |
				 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
		if (i)
			SSL_CTX_set_psk_server_callback(c, psk_server);
		else
			SSL_CTX_set_psk_client_callback(c, psk_client);
		g_ctx[i] = c;
	}
}

/* The reason of OpenSSL's last error (its queue is cleared). */
static void take_error(struct cfl_tls *s, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	if (r)
		snprintf(s->why, sizeof(s->why), "%s: %s", what, r);
	else if (errno)
		snprintf(s->why, sizeof(s->why), "%s: %s", what, strerror(errno));
	else
		snprintf(s->why, sizeof(s->why), "%s", what);
	ERR_clear_error();
}

/* ---- TLS: sessions ---- */

struct cfl_tls *cfl_tls_new(int fd, enum cfl_tls_role role,
			    const struct cfl_token *token, struct cfl_err *err)
{
	static const char label[] = PSK_LABEL;
	struct cfl_tls *s;
	unsigned int n = 32;
	BIO *b;

	pthread_once(&g_once, tls_setup);
	if (!token || !token->len) {
		cfl_err_set(err, "TLS needs a token");
		return NULL;
	}
	if (!g_ctx[role] || !g_bio || g_ex < 0) {
		cfl_err_set(err, "cannot set up TLS 1.3 with a pre-shared key "
			    "(OpenSSL: %s)", ERR_reason_error_string(ERR_get_error()));
		return NULL;
	}
	s = cfl_calloc(1, sizeof(*s), err);
	if (!s)
		return NULL;
	s->fd = fd;
	/* the PSK: a key derived from the token, never the token itself */
	if (!HMAC(EVP_sha256(), token->key, (int)token->len,
		  (const unsigned char *)label, sizeof(label) - 1, s->psk, &n) ||
	    n != 32)
		goto fail;
	s->ssl = SSL_new(g_ctx[role]);
	b = BIO_new(g_bio);
	if (!s->ssl || !b) {
		BIO_free(b);
		goto fail;
	}
	BIO_set_fd(b, fd, BIO_NOCLOSE);
	SSL_set_bio(s->ssl, b, b);
	SSL_set_ex_data(s->ssl, g_ex, s);
	if (role == CFL_TLS_SERVER)
		SSL_set_accept_state(s->ssl);
	else
		SSL_set_connect_state(s->ssl);
	return s;
fail:
	cfl_err_set(err, "cannot start a TLS session: %s",
		    ERR_reason_error_string(ERR_get_error()));
	ERR_clear_error();
	cfl_tls_free(s);
	return NULL;
}

int cfl_tls_handshake(struct cfl_tls *s, short *want, int *fatal,
		      struct cfl_err *err)
{
	int r, e;

	if (fatal)
		*fatal = 0;
	errno = 0;
	r = SSL_do_handshake(s->ssl);
	if (r == 1)
		return 1;
	e = SSL_get_error(s->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return 0;
	}
	if (e == SSL_ERROR_SSL) {
		/* the peer answered with something: an alert (it holds another
		 * token), or bytes that are not our TLS */
		if (fatal)
			*fatal = 1;
		take_error(s, "TLS handshake failed");
	} else {
		take_error(s, errno ? "connection failed during the TLS handshake"
				    : "connection closed during the TLS handshake");
	}
	return cfl_err_set(err, "%s", s->why);
}

/* Sets errno and s->why after a failed SSL_read / SSL_write. */
static ssize_t io_failed(struct cfl_tls *s, int r, const char *what)
{
	int e = SSL_get_error(s->ssl, r);

	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		s->want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		errno = EAGAIN;
		return -1;
	}
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;	/* close_notify: EOF */
	if (e == SSL_ERROR_SYSCALL && !errno && !ERR_peek_error())
		return 0;	/* EOF without close_notify */
	take_error(s, what);
	errno = e == SSL_ERROR_SSL ? EPROTO : (errno ? errno : ECONNRESET);
	return -1;
}

ssize_t cfl_tls_read(struct cfl_tls *s, void *buf, size_t n)
{
	size_t got = 0;
	int r;

	errno = 0;
	r = SSL_read_ex(s->ssl, buf, n, &got);
	if (r == 1)
		return (ssize_t)got;
	return io_failed(s, 0, "TLS read failed");
}

ssize_t cfl_tls_write(struct cfl_tls *s, const void *buf, size_t n)
{
	size_t put = 0;
	int r;

	if (!n)
		return 0;
	errno = 0;
	r = SSL_write_ex(s->ssl, buf, n, &put);
	if (r == 1)
		return (ssize_t)put;
	r = (int)io_failed(s, 0, "TLS write failed");
	if (r == 0) {
		errno = EPIPE;
		return -1;
	}
	return r;
}

short cfl_tls_want(const struct cfl_tls *s)
{
	return s->want ? s->want : POLLIN;
}

const char *cfl_tls_error(const struct cfl_tls *s)
{
	return s->why[0] ? s->why : "connection lost";
}

void cfl_tls_free(struct cfl_tls *s)
{
	if (!s)
		return;
	SSL_free(s->ssl);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}
