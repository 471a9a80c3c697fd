/*
 * fuzz_s3_list.c - ListObjectsV2 pages (proto/s3_list.h) as the upstream
 * sends them, for prefix manifests.
 *
 * Input: the response body. Invariants: a refusal leaves the page zeroed; an
 * accepted page has one entry per <Contents> at most, keys of at most 1024
 * bytes, a continuation token exactly when it is truncated, and each size is
 * the decimal number its <Size> holds (digits only, no sign or spaces, within
 * 64 bits); the page written back as XML parses to the same page.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>

#include "../../proto/s3_list.h"
#include "../../proto/s3_xml.h"
#include "fuzz.h"

static size_t count(const char *s, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        n += memcmp(s + i, needle, nl) == 0;
    return n;
}

/* Each <Size> of the page's <Contents>, found as the parser finds them, is plain decimal. */
static void check_sizes(const char *body, size_t len, const struct s3_list_page *pg)
{
    const char *p = body, *end = body + len, *c, *ce;
    size_t i = 0;
    while (s3_xml_element(&p, end, "Contents", &c, &ce) == SC_OK) {
        const char *q = c, *t, *te;
        FZ_CHECK(i < pg->n);
        if (s3_xml_element(&q, ce, "Size", &t, &te) == SC_OK) {
            size_t n = (size_t)(te - t);
            FZ_CHECK(n >= 1);
            uint64_t v = 0;
            for (size_t k = 0; k < n; k++) {
                FZ_CHECK(t[k] >= '0' && t[k] <= '9');
                FZ_CHECK(v <= (UINT64_MAX - (uint64_t)(t[k] - '0')) / 10);
                v = v * 10 + (uint64_t)(t[k] - '0');
            }
            FZ_CHECK(pg->entries[i].size == v);
        } else {
            FZ_CHECK(pg->entries[i].size == 0);
        }
        i++;
    }
    FZ_CHECK(i == pg->n);
}

/* Appends s with every ASCII byte as "&#xHH;". */
static size_t put_text(char *b, size_t at, size_t need, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x80)
            at += (size_t)snprintf(b + at, need - at, "&#x%02X;", *p);
        else
            b[at++] = (char)*p;
    }
    return at;
}

static char *rebuild(const struct s3_list_page *pg, size_t *len)
{
    size_t need = 256 + (pg->next_token ? 6 * strlen(pg->next_token) : 0);
    for (size_t i = 0; i < pg->n; i++)
        need += 128 + 6 * strlen(pg->entries[i].key);
    char *b = fz_dup("", need);
    size_t at = (size_t)snprintf(b, need, "<ListBucketResult><IsTruncated>%s</IsTruncated>",
                                 pg->truncated ? "true" : "false");
    for (size_t i = 0; i < pg->n; i++) {
        at += (size_t)snprintf(b + at, need - at, "<Contents><Key>");
        at = put_text(b, at, need, pg->entries[i].key);
        at += (size_t)snprintf(b + at, need - at, "</Key><Size>%" PRIu64 "</Size></Contents>",
                               pg->entries[i].size);
    }
    if (pg->next_token != NULL) {
        at += (size_t)snprintf(b + at, need - at, "<NextContinuationToken>");
        at = put_text(b, at, need, pg->next_token);
        at += (size_t)snprintf(b + at, need - at, "</NextContinuationToken>");
    }
    at += (size_t)snprintf(b + at, need - at, "</ListBucketResult>");
    *len = at;
    return b;
}

static bool zero_page(const struct s3_list_page *pg)
{
    static const struct s3_list_page zero;
    return memcmp(pg, &zero, sizeof(zero)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *body = fz_rest(&f, &len);
    struct s3_list_page pg;
    sc_code rc = s3_list_parse(body, len, &pg);
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL);
    if (rc != SC_OK) {
        FZ_CHECK(zero_page(&pg));
    } else {
        FZ_CHECK(pg.n <= count(body, len, "<Contents>"));
        FZ_CHECK(pg.truncated == (pg.next_token != NULL));
        FZ_CHECK(pg.status == 0 && pg.error_code == NULL);
        for (size_t i = 0; i < pg.n; i++)
            FZ_CHECK(strlen(pg.entries[i].key) <= 1024);
        check_sizes(body, len, &pg);
        size_t blen;
        char *again = rebuild(&pg, &blen);
        struct s3_list_page pg2;
        FZ_CHECK(s3_list_parse(again, blen, &pg2) == SC_OK);
        FZ_CHECK(pg2.n == pg.n && pg2.truncated == pg.truncated);
        FZ_CHECK(pg.next_token == NULL || strcmp(pg.next_token, pg2.next_token) == 0);
        for (size_t i = 0; i < pg.n; i++) {
            FZ_CHECK(strcmp(pg.entries[i].key, pg2.entries[i].key) == 0);
            FZ_CHECK(pg.entries[i].size == pg2.entries[i].size);
        }
        s3_list_page_free(&pg2);
        free(again);
    }
    s3_list_page_free(&pg);
    FZ_CHECK(zero_page(&pg));
    free(body);
    return 0;
}
