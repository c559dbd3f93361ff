/*
 * SHA-256 (FIPS 180-4), used to fingerprint datasets so a run, a resume and
 * a remote worker can tell they hold the same data.  Not used for secrets:
 * authentication uses OpenSSL's libcrypto in the run module (core must not
 * link it).
 *
 * Every data load hashes its whole file, so the block function is chosen at
 * run time: the x86-64 SHA extensions (SHA-NI) where the CPU has them, about
 * as fast as libcrypto's, else unrolled plain C.  Only that one function is
 * compiled for SHA-NI (a target attribute), so the build flags stay generic
 * and the binary still runs on CPUs without it.  Both paths must give the
 * same digest; tests/unit/test_core.c checks them against each other.
 */
#include "cfl/core.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SHANI_CODE 1
#include <cpuid.h>
#include <immintrin.h>
#endif

/* Round constants; 16-byte aligned so the SHA-NI path loads four at once. */
static const uint32_t K[64] __attribute__((aligned(16))) = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* ---- sha256: portable block function ---- */

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define BSIG0(x) (ROR(x, 2) ^ ROR(x, 13) ^ ROR(x, 22))
#define BSIG1(x) (ROR(x, 6) ^ ROR(x, 11) ^ ROR(x, 25))
#define SSIG0(x) (ROR(x, 7) ^ ROR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROR(x, 17) ^ ROR(x, 19) ^ ((x) >> 10))
/* Ch and Maj with one operation fewer than the textbook forms. */
#define CH(e, f, g) ((g) ^ ((e) & ((f) ^ (g))))
#define MAJ(a, b, c) (((a) & (b)) | ((c) & ((a) | (b))))

/* The message schedule lives in a 16-word ring: word t replaces word
 * t - 16 in slot t & 15. */
#define W_LOAD(j) (w[j])
#define W_NEXT(j) (w[j] += SSIG1(w[((j) + 14) & 15]) + w[((j) + 9) & 15] + \
			   SSIG0(w[((j) + 1) & 15]))

/* One round with the variables renamed instead of shifted: after it, h
 * holds the new a and d the new e. */
#define RND(a, b, c, d, e, f, g, h, i, j, WX)                                \
	do {                                                                 \
		uint32_t t1_ = h + BSIG1(e) + CH(e, f, g) + K[(i) + (j)] +   \
			       WX(j);                                        \
		d += t1_;                                                    \
		h = t1_ + BSIG0(a) + MAJ(a, b, c);                           \
	} while (0)

#define RND16(i, WX)                                                         \
	do {                                                                 \
		RND(a, b, c, d, e, f, g, h, i, 0, WX);                       \
		RND(h, a, b, c, d, e, f, g, i, 1, WX);                       \
		RND(g, h, a, b, c, d, e, f, i, 2, WX);                       \
		RND(f, g, h, a, b, c, d, e, i, 3, WX);                       \
		RND(e, f, g, h, a, b, c, d, i, 4, WX);                       \
		RND(d, e, f, g, h, a, b, c, i, 5, WX);                       \
		RND(c, d, e, f, g, h, a, b, i, 6, WX);                       \
		RND(b, c, d, e, f, g, h, a, i, 7, WX);                       \
		RND(a, b, c, d, e, f, g, h, i, 8, WX);                       \
		RND(h, a, b, c, d, e, f, g, i, 9, WX);                       \
		RND(g, h, a, b, c, d, e, f, i, 10, WX);                      \
		RND(f, g, h, a, b, c, d, e, i, 11, WX);                      \
		RND(e, f, g, h, a, b, c, d, i, 12, WX);                      \
		RND(d, e, f, g, h, a, b, c, i, 13, WX);                      \
		RND(c, d, e, f, g, h, a, b, i, 14, WX);                      \
		RND(b, c, d, e, f, g, h, a, i, 15, WX);                      \
	} while (0)

static void blocks_portable(uint32_t st[8], const unsigned char *p,
			    size_t n_blocks)
{
	for (; n_blocks; n_blocks--, p += 64) {
		uint32_t w[16];
		uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
		uint32_t e = st[4], f = st[5], g = st[6], h = st[7];

		for (int j = 0; j < 16; j++)
			w[j] = (uint32_t)p[4 * j] << 24 |
			       (uint32_t)p[4 * j + 1] << 16 |
			       (uint32_t)p[4 * j + 2] << 8 | (uint32_t)p[4 * j + 3];
		RND16(0, W_LOAD);
		RND16(16, W_NEXT);
		RND16(32, W_NEXT);
		RND16(48, W_NEXT);
		st[0] += a; st[1] += b; st[2] += c; st[3] += d;
		st[4] += e; st[5] += f; st[6] += g; st[7] += h;
	}
}

/* ---- sha256: SHA-NI block function ---- */

#ifdef HAVE_SHANI_CODE
/*
 * sha256rnds2 runs two rounds on the state split as ABEF / CDGH; each group
 * of four rounds adds K to four message words and runs it twice (the upper
 * pair moved down for the second).  sha256msg1 / sha256msg2 extend the
 * schedule four words at a time, m[g & 3] holding words 4g .. 4g+3:
 * group g finishes words 4(g+1).. (msg2 on the sum with the words seven
 * back), then starts words 4(g+3).. (msg1), which reads nothing msg2 still
 * needs.
 */
#define SHANI_GROUP(g)                                                       \
	do {                                                                 \
		__m128i k_ = _mm_add_epi32(m[(g) & 3],                        \
			_mm_load_si128((const __m128i *)&K[4 * (g)]));        \
		cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k_);                \
		abef = _mm_sha256rnds2_epu32(abef, cdgh,                     \
					     _mm_shuffle_epi32(k_, 0x0e));   \
		if ((g) >= 3 && (g) <= 14)                                   \
			m[((g) + 1) & 3] = _mm_sha256msg2_epu32(             \
				_mm_add_epi32(m[((g) + 1) & 3],              \
					_mm_alignr_epi8(m[(g) & 3],          \
							m[((g) - 1) & 3], 4)),\
				m[(g) & 3]);                                 \
		if ((g) >= 1 && (g) <= 12)                                   \
			m[((g) - 1) & 3] = _mm_sha256msg1_epu32(             \
				m[((g) - 1) & 3], m[(g) & 3]);               \
	} while (0)

__attribute__((target("sha,sse4.1")))
static void blocks_shani(uint32_t st[8], const unsigned char *p,
			 size_t n_blocks)
{
	/* pshufb mask: big-endian words to lanes */
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
					     0x0405060700010203ULL);
	__m128i t, abef, cdgh, m[4];

	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xb1);
	cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1b);
	abef = _mm_alignr_epi8(t, cdgh, 8);
	cdgh = _mm_blend_epi16(cdgh, t, 0xf0);
	for (; n_blocks; n_blocks--, p += 64) {
		__m128i abef0 = abef, cdgh0 = cdgh;

		for (int j = 0; j < 4; j++)
			m[j] = _mm_shuffle_epi8(
				_mm_loadu_si128((const __m128i *)(p + 16 * j)),
				bswap);
		SHANI_GROUP(0); SHANI_GROUP(1); SHANI_GROUP(2); SHANI_GROUP(3);
		SHANI_GROUP(4); SHANI_GROUP(5); SHANI_GROUP(6); SHANI_GROUP(7);
		SHANI_GROUP(8); SHANI_GROUP(9); SHANI_GROUP(10); SHANI_GROUP(11);
		SHANI_GROUP(12); SHANI_GROUP(13); SHANI_GROUP(14); SHANI_GROUP(15);
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	t = _mm_shuffle_epi32(abef, 0x1b);
	cdgh = _mm_shuffle_epi32(cdgh, 0xb1);
	_mm_storeu_si128((__m128i *)&st[0], _mm_blend_epi16(t, cdgh, 0xf0));
	_mm_storeu_si128((__m128i *)&st[4], _mm_alignr_epi8(cdgh, t, 8));
}

/* SHA-NI and the SSSE3 / SSE4.1 shuffles around it, asked of cpuid. */
static int cpu_has_shani(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) ||
	    !(c & bit_SSE4_1))
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (b & bit_SHA) != 0;
}
#else
static int cpu_has_shani(void)
{
	return 0;
}
#endif

/* ---- sha256: choosing the block function ---- */

/* 0 until the first use looks at the CPU (cpuid is slow under a hypervisor,
 * so once per process); atomic because a data load hashes in a helper
 * thread while other threads may hash too. */
static _Atomic int g_impl;

static int detect(void)
{
	return cpu_has_shani() ? CFL_SHA256_SHANI : CFL_SHA256_PORTABLE;
}

int cfl_sha256_select(enum cfl_sha256_impl impl)
{
	switch (impl) {
	case CFL_SHA256_AUTO:
		atomic_store_explicit(&g_impl, detect(), memory_order_relaxed);
		return 0;
	case CFL_SHA256_PORTABLE:
		atomic_store_explicit(&g_impl, CFL_SHA256_PORTABLE,
				      memory_order_relaxed);
		return 0;
	case CFL_SHA256_SHANI:
		if (!cpu_has_shani())
			return -1;
		atomic_store_explicit(&g_impl, CFL_SHA256_SHANI,
				      memory_order_relaxed);
		return 0;
	}
	return -1;
}

static void blocks(uint32_t st[8], const unsigned char *p, size_t n_blocks)
{
	int impl = atomic_load_explicit(&g_impl, memory_order_relaxed);

	if (!impl) {
		impl = detect();
		atomic_store_explicit(&g_impl, impl, memory_order_relaxed);
	}
#ifdef HAVE_SHANI_CODE
	if (impl == CFL_SHA256_SHANI) {
		blocks_shani(st, p, n_blocks);
		return;
	}
#endif
	blocks_portable(st, p, n_blocks);
}

/* ---- sha256: streaming API ---- */

void cfl_sha256_init(struct cfl_sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->n_bytes = 0;
	s->n_block = 0;
}

void cfl_sha256_update(struct cfl_sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->n_bytes += len;
	if (s->n_block) {
		size_t take = 64 - s->n_block < len ? 64 - s->n_block : len;

		memcpy(s->block + s->n_block, p, take);
		s->n_block += take;
		p += take;
		len -= take;
		if (s->n_block < 64)
			return;
		blocks(s->h, s->block, 1);
		s->n_block = 0;
	}
	if (len >= 64) {
		blocks(s->h, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	memcpy(s->block, p, len);
	s->n_block = len;
}

void cfl_sha256_final(struct cfl_sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->n_bytes * 8;
	size_t n = s->n_block;

	/* 0x80, zeros up to 8 bytes short of a block end, the bit length */
	s->block[n++] = 0x80;
	if (n > 56) {
		memset(s->block + n, 0, 64 - n);
		blocks(s->h, s->block, 1);
		n = 0;
	}
	memset(s->block + n, 0, 56 - n);
	for (int i = 0; i < 8; i++)
		s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	blocks(s->h, s->block, 1);
	s->n_block = 0;
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
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
