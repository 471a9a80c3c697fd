/*
 * range.c - resolving a single-range Range header (see range.h).
 *
 * Parsing and resolving are separate steps: parse_spec() only reads the
 * syntax into a struct spec; resolve() applies it to the object size.
 */
#include "range.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct spec {
    bool suffix;    /* "-n": the last n bytes */
    bool open;      /* "a-": from a to the end */
    uint64_t first; /* a, or n for a suffix */
    uint64_t last;  /* b, when neither suffix nor open */
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads one or more digits, saturating at UINT64_MAX. */
static bool read_number(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    while (s < end && is_digit(*s)) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            v = UINT64_MAX;
        else
            v = v * 10 + d;
        s++;
    }
    if (s == *p)
        return false;
    *p = s;
    *out = v;
    return true;
}

/* Parses "a-b", "a-" or "-n" occupying exactly [p, end). */
static bool parse_spec(const char *p, const char *end, struct spec *sp)
{
    memset(sp, 0, sizeof(*sp));
    if (p < end && *p == '-') {
        p++;
        sp->suffix = true;
        return read_number(&p, end, &sp->first) && p == end;
    }
    if (!read_number(&p, end, &sp->first) || p == end || *p != '-')
        return false;
    p++;
    if (p == end) {
        sp->open = true;
        return true;
    }
    return read_number(&p, end, &sp->last) && p == end && sp->first <= sp->last;
}

/* Finds the range-spec in the header value, or returns false if S3 would ignore the header. */
static bool find_spec(const char *header, const char **p, const char **end)
{
    static const char unit[] = "bytes=";
    const char *s = header;
    const char *e = header + strlen(header);
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if ((size_t)(e - s) < sizeof(unit) - 1 || strncasecmp(s, unit, sizeof(unit) - 1) != 0)
        return false;
    s += sizeof(unit) - 1;
    if (memchr(s, ',', (size_t)(e - s)) != NULL)
        return false;
    *p = s;
    *end = e;
    return true;
}

static enum range_result resolve_suffix(uint64_t n, uint64_t size, uint64_t *start, uint64_t *len)
{
    if (n == 0)
        return RANGE_UNSATISFIABLE;
    if (size == 0)
        return RANGE_WHOLE; /* S3 answers 200 with the empty body */
    if (n > size)
        n = size;
    *start = size - n;
    *len = n;
    return RANGE_PARTIAL;
}

static enum range_result resolve(const struct spec *sp, uint64_t size, uint64_t *start,
                                 uint64_t *len)
{
    if (sp->suffix)
        return resolve_suffix(sp->first, size, start, len);
    if (sp->first >= size)
        return RANGE_UNSATISFIABLE;
    uint64_t last = sp->open || sp->last >= size ? size - 1 : sp->last;
    *start = sp->first;
    *len = last - sp->first + 1;
    return RANGE_PARTIAL;
}

enum range_result range_resolve(const char *header, uint64_t size, uint64_t *start, uint64_t *len)
{
    const char *p;
    const char *end;
    struct spec sp;
    *start = 0;
    *len = size;
    if (header == NULL || !find_spec(header, &p, &end) || !parse_spec(p, end, &sp))
        return RANGE_WHOLE;
    enum range_result r = resolve(&sp, size, start, len);
    if (r == RANGE_UNSATISFIABLE) {
        *start = 0;
        *len = 0;
    }
    return r;
}

bool range_span(const char *header, uint64_t *first, uint64_t *last)
{
    const char *p;
    const char *end;
    struct spec sp;
    if (header == NULL || !find_spec(header, &p, &end) || !parse_spec(p, end, &sp) || sp.suffix)
        return false;
    *first = sp.first;
    *last = sp.open ? UINT64_MAX : sp.last;
    return true;
}

sc_code range_content_range(uint64_t start, uint64_t len, uint64_t size,
                            char buf[RANGE_CONTENT_RANGE_LEN])
{
    bool inside = len > 0 && start < size && len <= size - start;
    if (!inside) {
        snprintf(buf, RANGE_CONTENT_RANGE_LEN, "bytes */%llu", (unsigned long long)size);
        return len == 0 ? SC_OK : SC_EINVAL;
    }
    snprintf(buf, RANGE_CONTENT_RANGE_LEN, "bytes %llu-%llu/%llu", (unsigned long long)start,
             (unsigned long long)(start + len - 1), (unsigned long long)size);
    return SC_OK;
}

/* Reads the decimal number at *p (digits only), advancing *p. False without one or past 2^64. */
static bool parse_u64(const char **p, uint64_t *v)
{
    const char *c = *p;
    uint64_t n = 0;
    if (*c < '0' || *c > '9')
        return false;
    for (; *c >= '0' && *c <= '9'; c++) {
        if (n > (UINT64_MAX - (uint64_t)(*c - '0')) / 10)
            return false;
        n = n * 10 + (uint64_t)(*c - '0');
    }
    *p = c;
    *v = n;
    return true;
}

bool range_parse_content_range(const char *cr, uint64_t *first, uint64_t *last, uint64_t *size)
{
    uint64_t a = 0, b = 0, n = 0;
    if (cr == NULL || strncmp(cr, "bytes ", 6) != 0)
        return false;
    cr += 6;
    if (!(parse_u64(&cr, &a) && *cr++ == '-' && parse_u64(&cr, &b) && *cr++ == '/' &&
          parse_u64(&cr, &n) && *cr == '\0' && a <= b && b < n))
        return false;
    *first = a;
    *last = b;
    *size = n;
    return true;
}
