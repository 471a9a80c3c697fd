/*
 * fuzz.h - what every libFuzzer target in tests/fuzz shares: cutting the input
 * into fields, and an invariant check that aborts with a message.
 *
 * Inputs are text so that seeds stay readable: most targets take '\n'-separated
 * fields (fz_line), then the rest as one blob (fz_rest). Every field is copied
 * into a malloc'd buffer of exactly its size (plus the NUL), so AddressSanitizer
 * sees any read past its end. Nothing here keeps state between runs.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
    const char *p;
    size_t left;
};

/* An invariant of the parser under test; a failure aborts, which libFuzzer reports as a crash. */
#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static inline void fz_init(struct fz *f, const uint8_t *data, size_t size)
{
    f->p = (const char *)data;
    f->left = size;
}

/* A malloc'd copy of len bytes at s with a NUL after them; aborts when out of memory. */
static inline char *fz_dup(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d == NULL)
        abort();
    if (len > 0)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* The next field up to '\n' (not included), malloc'd; "" once the input is used up. */
static inline char *fz_line(struct fz *f, size_t *len_out)
{
    const char *nl = f->left > 0 ? memchr(f->p, '\n', f->left) : NULL;
    size_t len = nl != NULL ? (size_t)(nl - f->p) : f->left;
    char *s = fz_dup(f->p, len);
    f->p += len + (nl != NULL);
    f->left -= len + (nl != NULL);
    if (len_out != NULL)
        *len_out = len;
    return s;
}

/* Everything left, malloc'd with a NUL after it (the bytes may hold NULs too). */
static inline char *fz_rest(struct fz *f, size_t *len_out)
{
    char *s = fz_dup(f->p, f->left);
    *len_out = f->left;
    f->p += f->left;
    f->left = 0;
    return s;
}

/* A decimal number at the start of s (saturating), for fields such as sizes and times. */
static inline uint64_t fz_number(const char *s)
{
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    return v;
}

/*
 * Length of the well-formed UTF-8 character at s (at most avail bytes), or 0
 * when there is none (stray byte, overlong form, surrogate, past U+10FFFF,
 * truncated). Written from RFC 3629 independently of the code under test.
 */
static inline size_t fz_utf8_len(const unsigned char *s, size_t avail, uint32_t *cp)
{
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n = s[0] < 0x80             ? 1
               : (s[0] & 0xE0) == 0xC0 ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    if (n == 0 || n > avail)
        return 0;
    uint32_t v = n == 1 ? s[0] : s[0] & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3Fu);
    }
    if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

#endif
