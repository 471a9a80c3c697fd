/*
 * crc64nvme.c - CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5, initial value and
 * final xor all ones).
 *
 * A byte-wise table does one byte per step: about 375 MB/s here, slower than the MD5 it
 * would replace. With PCLMULQDQ the buffer is folded instead: a CRC is linear, so the
 * message so far can be kept as any 128-bit value congruent to it modulo the polynomial P.
 * Appending a block B to a message A gives A * x^128 + B; writing A = lo * x^64 + hi, that
 * is lo * (x^192 mod P) + hi * (x^128 mod P) + B, two 64x64 carry-less products. Four lanes
 * folded 512 bits at a time keep the multiplier busy; they are joined at the end by folding
 * each over the lanes after it, and the last 128 bits and the tail go through the table.
 *
 * In the reflected order a register is loaded in, bit j of a 64-bit half is the coefficient
 * of x^(63-j), and the carry-less product of two such halves comes out one power of x
 * higher than the product of the polynomials: so the constants are x^(D+63) and x^(D-1)
 * mod P for a fold over D bits, computed once at first use.
 */
#include "crc64nvme.h"

#include <pthread.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#include <wmmintrin.h>
#define CRC64_HAVE_PCLMUL 1
#endif

#define POLY_REFLECTED 0x9a6c9329ac4bc9b5ull
#define POLY_NORMAL    0xad93d23594c93659ull /* P = x^64 + this, bit i the coefficient of x^i */

static uint64_t table[256]; /* the register after shifting byte b through an empty one */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint64_t b = 0; b < 256; b++) {
        uint64_t c = b;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY_REFLECTED : c >> 1;
        table[b] = c;
    }
}

static uint64_t table_update(uint64_t reg, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        reg = table[(reg ^ p[i]) & 0xffu] ^ (reg >> 8);
    return reg;
}

uint64_t crc64nvme_portable(uint64_t crc, const void *buf, size_t len)
{
    if (len == 0)
        return crc;
    pthread_once(&table_once, table_init);
    return ~table_update(~crc, buf, len);
}

#ifdef CRC64_HAVE_PCLMUL

/* The multipliers of one fold over D bits: the low half by x^(D+63), the high by x^(D-1). */
struct fold {
    uint64_t lo, hi;
};

static struct fold by512, by384, by256, by128;
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;

static uint64_t reflect64(uint64_t v)
{
    uint64_t r = 0;
    for (int i = 0; i < 64; i++, v >>= 1)
        r = (r << 1) | (v & 1);
    return r;
}

/* x^n mod P, reflected as a register half holds it. */
static uint64_t x_pow_mod(unsigned n)
{
    uint64_t r = 1;
    for (unsigned i = 0; i < n; i++)
        r = (r << 1) ^ (r >> 63 ? POLY_NORMAL : 0);
    return reflect64(r);
}

static struct fold fold_over(unsigned bits)
{
    return (struct fold){x_pow_mod(bits + 63), x_pow_mod(bits - 1)};
}

static void fold_init(void)
{
    by512 = fold_over(512);
    by384 = fold_over(384);
    by256 = fold_over(256);
    by128 = fold_over(128);
}

/* A value congruent to x * x^D modulo P (f holds D's multipliers). */
__attribute__((target("pclmul"))) static __m128i fold(__m128i x, struct fold f)
{
    __m128i k = _mm_set_epi64x((long long)f.hi, (long long)f.lo);
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

static __m128i load(const unsigned char *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* The register after len >= 64 bytes, from register reg. */
__attribute__((target("pclmul"))) static uint64_t pclmul_update(uint64_t reg,
                                                                const unsigned char *p, size_t len)
{
    pthread_once(&fold_once, fold_init);
    /* the register xored into the first 8 bytes: the same CRC from an empty register */
    __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi64_si128((long long)reg));
    __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
    p += 64;
    len -= 64;
    for (; len >= 64; p += 64, len -= 64) {
        x0 = _mm_xor_si128(fold(x0, by512), load(p));
        x1 = _mm_xor_si128(fold(x1, by512), load(p + 16));
        x2 = _mm_xor_si128(fold(x2, by512), load(p + 32));
        x3 = _mm_xor_si128(fold(x3, by512), load(p + 48));
    }
    __m128i x = _mm_xor_si128(_mm_xor_si128(fold(x0, by384), fold(x1, by256)),
                              _mm_xor_si128(fold(x2, by128), x3));
    for (; len >= 16; p += 16, len -= 16)
        x = _mm_xor_si128(fold(x, by128), load(p));
    unsigned char last[16];
    _mm_storeu_si128((__m128i *)(void *)last, x);
    return table_update(table_update(0, last, sizeof(last)), p, len);
}

#endif

uint64_t crc64nvme(uint64_t crc, const void *buf, size_t len)
{
    if (len == 0)
        return crc;
    pthread_once(&table_once, table_init);
#ifdef CRC64_HAVE_PCLMUL
    if (len >= 64 && __builtin_cpu_supports("pclmul"))
        return ~pclmul_update(~crc, buf, len);
#endif
    return ~table_update(~crc, buf, len);
}
