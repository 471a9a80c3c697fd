/*
 * fuzz_s3_delete.c - the keys of a DeleteObjects request body
 * (proto/s3_delete.h), as a client sends it.
 *
 * Input: the body. Invariants: a refusal leaves the list empty; an accepted
 * body yields at most S3_DELETE_MAX_KEYS keys of at most 1024 bytes, no more
 * than the body has "Key" element names (any prefix, any attributes); and the
 * keys written back as a body
 * (every ASCII byte as a numeric character reference, the others as they are)
 * parse to the same keys.
 */
#include "../../proto/s3_delete.h"
#include "fuzz.h"

static size_t count(const char *s, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        n += memcmp(s + i, needle, nl) == 0;
    return n;
}

/* Writes keys as a DeleteObjects body, each ASCII byte as "&#xHH;" (malloc'd). */
static char *rebuild(const struct s3_delete_keys *k, size_t *len)
{
    size_t need = 64;
    for (size_t i = 0; i < k->n; i++)
        need += 32 + 6 * strlen(k->keys[i]);
    char *b = fz_dup("", need);
    size_t at = (size_t)snprintf(b, need, "<Delete><Quiet>true</Quiet>");
    for (size_t i = 0; i < k->n; i++) {
        at += (size_t)snprintf(b + at, need - at, "<Object><Key>");
        for (const unsigned char *p = (const unsigned char *)k->keys[i]; *p; p++) {
            if (*p < 0x80)
                at += (size_t)snprintf(b + at, need - at, "&#x%02X;", *p);
            else
                b[at++] = (char)*p;
        }
        at += (size_t)snprintf(b + at, need - at, "</Key></Object>");
    }
    at += (size_t)snprintf(b + at, need - at, "</Delete>");
    *len = at;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *body = fz_rest(&f, &len);
    struct s3_delete_keys k;
    sc_code rc = s3_delete_keys_parse(body, len, &k);
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL || rc == SC_ETOOBIG);
    if (rc != SC_OK) {
        FZ_CHECK(k.n == 0 && k.keys == NULL);
    } else {
        FZ_CHECK(k.n <= S3_DELETE_MAX_KEYS && k.n <= count(body, len, "Key"));
        for (size_t i = 0; i < k.n; i++)
            FZ_CHECK(strlen(k.keys[i]) <= 1024);
        size_t blen;
        char *again = rebuild(&k, &blen);
        struct s3_delete_keys k2;
        rc = s3_delete_keys_parse(again, blen, &k2);
        FZ_CHECK(rc == SC_OK && k2.n == k.n);
        for (size_t i = 0; i < k.n; i++)
            FZ_CHECK(strcmp(k.keys[i], k2.keys[i]) == 0);
        s3_delete_keys_free(&k2);
        free(again);
    }
    s3_delete_keys_free(&k);
    FZ_CHECK(k.n == 0 && k.keys == NULL);
    free(body);
    return 0;
}
