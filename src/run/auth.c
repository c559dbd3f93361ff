/*
 * Authentication of remote workers: the token file, the mutual HMAC-SHA256
 * handshake and the per-frame MACs (see include/cfl/net.h for the protocol).
 *
 * Invariant: no secret is ever sent, compared with memcmp, or left in
 * memory we release; a proof is checked before anything is derived from
 * it.  The parser reads fixed-size fields of a frame whose length it checked
 * first, so it is safe on any bytes (tests/fuzz/fuzz_auth.c).  This is the
 * one file that includes OpenSSL; it knows nothing of the wire codec.
 */
#include "cfl/net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define LABEL_COORD "cfl-auth-1 coordinator"
#define LABEL_WORKER "cfl-auth-1 worker"
#define LABEL_KEY_W2C "cfl-auth-1 key w2c"
#define LABEL_KEY_C2W "cfl-auth-1 key c2w"

enum { T_CHALLENGE = 1, T_PROOF = 2, T_OK = 3, T_FAIL = 4 };

/* Handshake states: the frame each role expects next. */
enum {
	S_COORD_CHALLENGE,	/* coordinator waits for the worker's nonce */
	S_COORD_PROOF,		/* ... for the worker's proof */
	S_WORKER_PROOF,		/* worker waits for the coordinator's proof */
	S_WORKER_OK,		/* ... for OK */
	S_DONE,
	S_FAILED,
};

#define HDR 8
#define MAX_BODY (CFL_AUTH_MAX_FRAME - HDR)
#define MAX_FAIL_MSG 200

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

/* ---- HMAC helpers ---- */

/* HMAC-SHA256(key, label | a | b) into out.  An empty key is legal HMAC
 * (it is padded with zeros); OpenSSL wants a non-NULL pointer for it. */
static int hmac3(const unsigned char *key, size_t key_len, const char *label,
		 const unsigned char a[32], const unsigned char b[32],
		 unsigned char out[32])
{
	static const unsigned char empty[1];
	unsigned char msg[64 + 64];
	size_t n = strlen(label);
	unsigned int out_len = 32;
	int ok;

	memcpy(msg, label, n);
	memcpy(msg + n, a, 32);
	memcpy(msg + n + 32, b, 32);
	ok = HMAC(EVP_sha256(), key_len ? key : empty, (int)key_len, msg,
		  n + 64, out, &out_len) != NULL;
	OPENSSL_cleanse(msg, sizeof(msg));
	return ok && out_len == 32 ? 0 : -1;
}

/* ---- per-frame MACs ---- */

uint64_t cfl_mac_next_seq(struct cfl_mac *m)
{
	return ++m->send_seq;
}

static void mac_of(const unsigned char key[32], const void *data, size_t len,
		   unsigned char out[32])
{
	static const unsigned char empty[1];
	unsigned int out_len = 32;

	if (!HMAC(EVP_sha256(), key, 32, len ? data : empty, len, out, &out_len))
		memset(out, 0, 32);	/* cannot happen with SHA-256; never matches a real MAC by chance */
}

void cfl_mac_sign(const struct cfl_mac *m, const void *data, size_t len,
		  unsigned char out[CFL_MAC_SIZE])
{
	mac_of(m->send_key, data, len, out);
}

int cfl_mac_check(struct cfl_mac *m, uint64_t seq, const void *data,
		  size_t len, const unsigned char mac[CFL_MAC_SIZE],
		  struct cfl_err *err)
{
	unsigned char want[32];
	int bad;

	mac_of(m->recv_key, data, len, want);
	bad = CRYPTO_memcmp(want, mac, 32) != 0;
	OPENSSL_cleanse(want, sizeof(want));
	if (bad)
		return cfl_err_set(err, "frame MAC mismatch (tampered frame or "
				   "wrong key)");
	if (seq != m->recv_seq + 1)
		return cfl_err_set(err, "replayed or reordered frame (sequence "
				   "%llu, expected %llu)",
				   (unsigned long long)seq,
				   (unsigned long long)(m->recv_seq + 1));
	m->recv_seq = seq;
	return 0;
}

void cfl_mac_clear(struct cfl_mac *m)
{
	OPENSSL_cleanse(m, sizeof(*m));
}

/* ---- handshake frames ---- */

static int put_frame(struct cfl_buf *out, int type, const void *body,
		     size_t n)
{
	unsigned char h[HDR] = { 'C', 'F', 'L', 'A', CFL_AUTH_VERSION,
				 (unsigned char)type, (unsigned char)(n & 0xff),
				 (unsigned char)(n >> 8) };

	if (cfl_buf_reserve(out, HDR + n))
		return -1;
	cfl_buf_append(out, h, HDR);
	return n ? cfl_buf_append(out, body, n) : 0;
}

int cfl_auth_fail_frame(struct cfl_buf *out, int code, const char *msg)
{
	unsigned char body[1 + MAX_FAIL_MSG];
	size_t n = 0;

	body[0] = (unsigned char)code;
	for (; msg && msg[n] && n < MAX_FAIL_MSG; n++)
		body[1 + n] = msg[n] >= 0x20 && msg[n] < 0x7f ? (unsigned char)msg[n]
							      : '?';
	return put_frame(out, T_FAIL, body, 1 + n);
}

/* Fails the handshake: err gets the local message, out a FAIL frame for
 * the peer (best effort: a full buffer only loses the courtesy). */
static int fail(struct cfl_auth *a, struct cfl_buf *out, struct cfl_err *err,
		int code, const char *to_peer, const char *local)
{
	a->state = S_FAILED;
	a->fail_code = code;
	if (to_peer)
		cfl_auth_fail_frame(out, code, to_peer);
	return cfl_err_set(err, "%s", local);
}

int cfl_auth_init(struct cfl_auth *a, enum cfl_auth_role role,
		  const struct cfl_token *token, struct cfl_buf *out,
		  struct cfl_err *err)
{
	memset(a, 0, sizeof(*a));
	a->role = role;
	if (token)
		a->token = *token;
	if (role == CFL_AUTH_WORKER) {
		if (RAND_bytes(a->nonce_w, 32) != 1)
			return cfl_err_set(err, "cannot draw a random nonce");
		if (put_frame(out, T_CHALLENGE, a->nonce_w, 32))
			return cfl_err_set(err, "out of memory");
		a->state = S_WORKER_PROOF;
	} else {
		a->state = S_COORD_CHALLENGE;
	}
	return 0;
}

static int derive_keys(struct cfl_auth *a, struct cfl_mac *mac)
{
	unsigned char w2c[32], c2w[32];
	int rc;

	rc = hmac3(a->token.key, a->token.len, LABEL_KEY_W2C, a->nonce_w,
		   a->nonce_c, w2c) ||
	     hmac3(a->token.key, a->token.len, LABEL_KEY_C2W, a->nonce_w,
		   a->nonce_c, c2w);
	memset(mac, 0, sizeof(*mac));
	memcpy(mac->send_key, a->role == CFL_AUTH_WORKER ? w2c : c2w, 32);
	memcpy(mac->recv_key, a->role == CFL_AUTH_WORKER ? c2w : w2c, 32);
	OPENSSL_cleanse(w2c, sizeof(w2c));
	OPENSSL_cleanse(c2w, sizeof(c2w));
	return rc ? -1 : 0;
}

/* Checks that proof is HMAC(token, label | nonce_w | nonce_c). */
static int proof_ok(struct cfl_auth *a, const char *label,
		    const unsigned char *proof)
{
	unsigned char want[32];
	int ok;

	if (hmac3(a->token.key, a->token.len, label, a->nonce_w, a->nonce_c,
		  want))
		return 0;
	ok = CRYPTO_memcmp(want, proof, 32) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

/* The peer's FAIL message as printable text for err. */
static int peer_failed(struct cfl_auth *a, const unsigned char *body,
		       size_t n, struct cfl_err *err)
{
	char msg[MAX_FAIL_MSG + 1];
	size_t k = 0;

	a->state = S_FAILED;
	a->peer_failed = 1;
	a->fail_code = n ? body[0] : CFL_AUTH_E_PROTOCOL;
	for (size_t i = 1; i < n && k < MAX_FAIL_MSG; i++)
		msg[k++] = body[i] >= 0x20 && body[i] < 0x7f ? (char)body[i] : '?';
	msg[k] = 0;
	return cfl_err_set(err, "the %s refused: %s",
			   a->role == CFL_AUTH_WORKER ? "coordinator" : "worker",
			   k ? msg : "(no reason given)");
}

int cfl_auth_step(struct cfl_auth *a, const void *in, size_t len,
		  size_t *used, struct cfl_buf *out, struct cfl_mac *mac,
		  struct cfl_err *err)
{
	const unsigned char *p = in;
	const unsigned char *body;
	size_t n;
	int type;

	*used = 0;
	if (a->state == S_DONE || a->state == S_FAILED)
		return cfl_err_set(err, "handshake already over");
	/* the header, checked field by field as soon as it arrives, so a
	 * peer speaking HTTP or nothing at all is told at once */
	for (size_t i = 0; i < len && i < 4; i++)
		if (p[i] != (unsigned char)"CFLA"[i])
			return fail(a, out, err, CFL_AUTH_E_PROTOCOL,
				    "not a cfl handshake",
				    "not a cfl handshake (bad magic)");
	if (len < HDR)
		return 0;
	type = p[5];
	n = (size_t)p[6] | (size_t)p[7] << 8;
	if (n > MAX_BODY)
		return fail(a, out, err, CFL_AUTH_E_PROTOCOL, "frame too long",
			    "handshake frame too long");
	if (len < HDR + n)
		return 0;
	body = p + HDR;
	*used = HDR + n;
	/* FAIL is read whatever the version, so a peer of another version
	 * can still say why it leaves */
	if (type == T_FAIL)
		return peer_failed(a, body, n, err);
	if (p[4] != CFL_AUTH_VERSION) {
		char local[128], remote[128];
		const char *me = a->role == CFL_AUTH_WORKER ? "worker"
							    : "coordinator";

		snprintf(local, sizeof(local), "version mismatch: the peer "
			 "speaks handshake version %u, this %s %d", p[4], me,
			 CFL_AUTH_VERSION);
		snprintf(remote, sizeof(remote), "version mismatch: the %s "
			 "speaks handshake version %d", me, CFL_AUTH_VERSION);
		return fail(a, out, err, CFL_AUTH_E_VERSION, remote, local);
	}

	switch (a->state) {
	case S_COORD_CHALLENGE:
		if (type != T_CHALLENGE || n != 32)
			return fail(a, out, err, CFL_AUTH_E_PROTOCOL,
				    "expected a challenge",
				    "expected a challenge");
		memcpy(a->nonce_w, body, 32);
		if (RAND_bytes(a->nonce_c, 32) != 1)
			return fail(a, out, err, CFL_AUTH_E_REFUSED,
				    "internal error", "cannot draw a random "
				    "nonce");
		{
			unsigned char b[64];

			memcpy(b, a->nonce_c, 32);
			if (hmac3(a->token.key, a->token.len, LABEL_COORD,
				  a->nonce_w, a->nonce_c, b + 32) ||
			    put_frame(out, T_PROOF, b, 64))
				return fail(a, out, err, CFL_AUTH_E_REFUSED,
					    "internal error",
					    "cannot compute a proof");
		}
		a->state = S_COORD_PROOF;
		return 0;
	case S_WORKER_PROOF:
		if (type != T_PROOF || n != 64)
			return fail(a, out, err, CFL_AUTH_E_PROTOCOL,
				    "expected a proof", "expected the "
				    "coordinator's proof");
		memcpy(a->nonce_c, body, 32);
		if (!proof_ok(a, LABEL_COORD, body + 32))
			return fail(a, out, err, CFL_AUTH_E_AUTH,
				    "authentication failed: the coordinator's "
				    "proof does not match this worker's token",
				    "authentication failed: the coordinator's "
				    "proof does not match our token (wrong "
				    "token?)");
		{
			unsigned char b[32];

			if (hmac3(a->token.key, a->token.len, LABEL_WORKER,
				  a->nonce_w, a->nonce_c, b) ||
			    put_frame(out, T_PROOF, b, 32))
				return fail(a, out, err, CFL_AUTH_E_REFUSED,
					    "internal error",
					    "cannot compute a proof");
		}
		a->state = S_WORKER_OK;
		return 0;
	case S_COORD_PROOF:
		if (type != T_PROOF || n != 32)
			return fail(a, out, err, CFL_AUTH_E_PROTOCOL,
				    "expected a proof", "expected the worker's "
				    "proof");
		if (!proof_ok(a, LABEL_WORKER, body))
			return fail(a, out, err, CFL_AUTH_E_AUTH,
				    "authentication failed: the worker's proof "
				    "does not match the coordinator's token",
				    "authentication failed: the worker's proof "
				    "does not match our token (wrong token?)");
		if (put_frame(out, T_OK, NULL, 0) || derive_keys(a, mac))
			return fail(a, out, err, CFL_AUTH_E_REFUSED,
				    "internal error", "cannot derive keys");
		a->state = S_DONE;
		return 1;
	case S_WORKER_OK:
		if (type != T_OK || n != 0)
			return fail(a, out, err, CFL_AUTH_E_PROTOCOL,
				    "expected OK", "expected the coordinator's "
				    "OK");
		if (derive_keys(a, mac))
			return fail(a, out, err, CFL_AUTH_E_REFUSED,
				    "internal error", "cannot derive keys");
		a->state = S_DONE;
		return 1;
	}
	return fail(a, out, err, CFL_AUTH_E_PROTOCOL, "protocol error",
		    "handshake in a bad state");
}

void cfl_auth_release(struct cfl_auth *a)
{
	OPENSSL_cleanse(a, sizeof(*a));
}
