/*
 * fuzz_json_in.c - bounded loading of admin API bodies (proto/json_in.h)
 * and the excerpts its callers quote in error messages.
 *
 * Input: one byte for the depth limit (1..8), then the body.
 * Invariants: json_in_load agrees with jansson itself (duplicate keys
 * refused) whenever the value is no deeper than the limit, and refuses
 * deeper values with InvalidJSON: the depth pre-scan is never fooled by
 * strings, escapes or stray brackets, in either direction. Errors leave *out
 * NULL with an error message. An excerpt of any bytes is at most 64 bytes
 * plus "...", holds only printable ASCII and whole UTF-8 sequences, is the
 * input itself when that is short clean text, and never overflows a small
 * buffer. json_in_load_hollow() agrees with json_in_load() on every body: the same error
 * word for word, or the same tree once the arrays it left out are put back.
 */
#include <stdbool.h>

#include <jansson.h>

#include "../../proto/json_in.h"
#include "fuzz.h"

static unsigned depth(json_t *v)
{
    unsigned d = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            unsigned c = depth(json_array_get(v, i));
            d = c > d ? c : d;
        }
        return d + 1;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c)
        {
            unsigned cd = depth(c);
            d = cd > d ? cd : d;
        }
        return d + 1;
    }
    return 0;
}

/* Printable ASCII or a complete multi-byte sequence (lead byte C2..F4 and continuations). */
static bool excerpt_clean(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p >= 0x20 && *p < 0x7f    ? 1
                   : *p >= 0xc2 && *p <= 0xdf ? 2
                   : *p >= 0xe0 && *p <= 0xef ? 3
                   : *p >= 0xf0 && *p <= 0xf4 ? 4
                                              : 0;
        if (n == 0)
            return false;
        for (size_t i = 1; i < n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
        }
        p += n;
    }
    return true;
}

static void check_excerpt(const char *s, size_t len)
{
    char buf[JSON_IN_EXCERPT_CAP];
    const char *e = json_in_excerpt(buf, sizeof(buf), s, len);
    FZ_CHECK(e == buf && strlen(buf) <= 64 + 3 && excerpt_clean(buf));
    bool clean = len <= 64 && memchr(s, '\0', len) == NULL;
    for (size_t i = 0; clean && i < len; i++)
        clean = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f;
    if (clean)
        FZ_CHECK(strlen(buf) == len && memcmp(buf, s, len) == 0);
    else if (len > 64)
        FZ_CHECK(strlen(buf) >= 3 && strcmp(buf + strlen(buf) - 3, "...") == 0);
    /* small buffers: exactly cap bytes written at most, always terminated */
    for (size_t cap = 1; cap < 12; cap++) {
        char *small = malloc(cap);
        FZ_CHECK(small != NULL);
        json_in_excerpt(small, cap, s, len);
        FZ_CHECK(strnlen(small, cap) < cap);
        free(small);
    }
}

/*
 * The hollow load agrees with the whole one: the same result and error word for word, and
 * the hollow tree with each left-out array put back (parsed by jansson from its span) is the
 * whole tree.
 */
static void check_hollow(const char *body, size_t len, unsigned max_depth, sc_code rc_whole,
                         json_t *whole, const struct api_err *want)
{
    static const char *const names[] = {"keys", "epochs"};
    struct json_span spans[2];
    struct api_err err = {0};
    json_t *out = (json_t *)1;
    sc_code rc = json_in_load_hollow(body, len, 64 * 1024, max_depth, names, 2, spans, &out, &err);
    FZ_CHECK(rc == rc_whole);
    if (rc != SC_OK) {
        FZ_CHECK(out == NULL && spans[0].p == NULL && spans[1].p == NULL);
        FZ_CHECK(err.code == want->code && strcmp(err.message, want->message) == 0);
        return;
    }
    for (size_t k = 0; k < 2; k++) {
        if (spans[k].p == NULL)
            continue;
        FZ_CHECK(spans[k].p >= body && spans[k].p + spans[k].len <= body + len);
        json_t *hole = json_object_get(out, names[k]);
        FZ_CHECK(json_is_array(hole) && json_array_size(hole) == 0);
        json_t *a = json_loadb(spans[k].p, spans[k].len, JSON_REJECT_DUPLICATES, NULL);
        FZ_CHECK(a != NULL && json_scan_count(spans[k]) == json_array_size(a));
        FZ_CHECK(json_object_set_new(out, names[k], a) == 0);
    }
    FZ_CHECK(json_equal(out, whole));
    json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned max_depth = (unsigned)(data[0] % 8) + 1;
    char *body = fz_dup((const char *)data + 1, size - 1);
    size_t len = size - 1;
    json_t *out = (json_t *)1;
    struct api_err err = {0};

    sc_code rc = json_in_load(body, len, 64 * 1024, max_depth, &out, &err);
    json_t *ref = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    check_hollow(body, len, max_depth, rc, out, &err);
    if (rc == SC_OK) {
        FZ_CHECK(out != NULL && ref != NULL && json_equal(out, ref));
        FZ_CHECK(depth(out) <= max_depth);
        json_decref(out);
    } else {
        FZ_CHECK(rc == SC_EINVAL && out == NULL);
        FZ_CHECK(err.code == API_INVALID_JSON && err.message[0] != '\0');
        FZ_CHECK(ref == NULL || depth(ref) > max_depth);
    }
    json_decref(ref);
    check_excerpt(body, len);
    free(body);
    return 0;
}
