/*
 * SHA-256, libcrypto's: dataset fingerprints (a run, a resume and a remote
 * worker tell they hold the same data), the dataset cache's file names and
 * the candidates' 8-hex ids.  The one SHA-256 of the program; this file is
 * core's only contact with libcrypto (digests), so every module hashes
 * through core.h and none includes OpenSSL for it.  libcrypto picks the
 * fastest code the CPU runs (the x86-64 SHA extensions where present).
 */
#include "cfl/core.h"

#include <string.h>

#include <openssl/evp.h>

int cfl_sha256_init(struct cfl_sha256 *s, struct cfl_err *err)
{
	s->ctx = EVP_MD_CTX_new();
	if (!s->ctx || !EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(s->ctx);
		s->ctx = NULL;
		return cfl_err_set(err, "cannot start a SHA-256: out of memory");
	}
	return 0;
}

/* SHA-256 itself never fails on an initialised context (libcrypto's
 * software digest has no failure path past the allocation), hence void. */
void cfl_sha256_update(struct cfl_sha256 *s, const void *data, size_t len)
{
	if (len)
		EVP_DigestUpdate(s->ctx, data, len);
}

void cfl_sha256_final(struct cfl_sha256 *s, unsigned char out[32])
{
	unsigned int n = 32;

	EVP_DigestFinal_ex(s->ctx, out, &n);
	cfl_sha256_release(s);
}

void cfl_sha256_release(struct cfl_sha256 *s)
{
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

int cfl_sha256(const void *data, size_t len, unsigned char out[32],
	       struct cfl_err *err)
{
	static const unsigned char empty[1];

	if (!EVP_Digest(len ? data : empty, len, out, NULL, EVP_sha256(), NULL)) {
		memset(out, 0, 32);
		return cfl_err_set(err, "cannot compute a SHA-256: out of memory");
	}
	return 0;
}

void cfl_sha256_hex(const unsigned char digest[32], char hex[65])
{
	static const char d[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = d[digest[i] >> 4];
		hex[2 * i + 1] = d[digest[i] & 15];
	}
	hex[64] = '\0';
}
