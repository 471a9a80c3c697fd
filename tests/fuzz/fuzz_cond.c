/*
 * fuzz_cond.c - conditional headers (proto/cond.h) against an object.
 *
 * Input: '\n'-separated fields: the object's ETag, its Last-Modified in
 * seconds (a leading '-' for negative), "1" for GET/HEAD, then If-Match,
 * If-None-Match, If-Modified-Since and If-Unmodified-Since (empty: absent).
 * Invariants: the result is one of the three with its status (0, 304, 412)
 * and cond_overrides_range() agrees; a header of only spaces and tabs counts
 * as absent; an unparseable date is ignored; no header at all proceeds;
 * If-None-Match "*" never proceeds and 304 only for GET/HEAD; a list that
 * starts with the object's own strong tag satisfies If-Match like that tag
 * alone does; an object without an ETag (NULL) is evaluated too, and "*" still
 * matches it.
 */
#include <stdbool.h>

#include "../../proto/cond.h"
#include "../../proto/httpdate.h"
#include "fuzz.h"

static bool blank(const char *s)
{
    return s != NULL && s[strspn(s, " \t")] == '\0';
}

static void check_result(enum cond_result r, bool get)
{
    FZ_CHECK(r == COND_PROCEED || r == COND_NOT_MODIFIED || r == COND_PRECONDITION_FAILED);
    int status = cond_http_status(r);
    FZ_CHECK(status == (r == COND_PROCEED ? 0 : r == COND_NOT_MODIFIED ? 304 : 412));
    FZ_CHECK(cond_overrides_range(r) == (r != COND_PROCEED));
    FZ_CHECK(get || r != COND_NOT_MODIFIED);
}

/* The opaque part of a strong etag, quoted, or NULL when it is weak or holds a quote. */
static char *strong_own_tag(const char *etag)
{
    size_t len = strlen(etag);
    if (len >= 2 && etag[0] == 'W' && etag[1] == '/')
        return NULL;
    if (len >= 2 && etag[0] == '"' && etag[len - 1] == '"') {
        etag++;
        len -= 2;
    }
    if (memchr(etag, '"', len) != NULL)
        return NULL;
    char *q = fz_dup("", len + 2);
    q[0] = '"';
    memcpy(q + 1, etag, len);
    q[len + 1] = '"';
    return q;
}

static void check_if_match_prefix(const struct cond_headers *h, const char *etag, time_t lm,
                                  bool get)
{
    char *own = strong_own_tag(etag);
    if (own == NULL || h->if_match == NULL)
        goto out;
    size_t need = strlen(own) + strlen(h->if_match) + 2;
    char *list = fz_dup("", need);
    snprintf(list, need + 1, "%s, %s", own, h->if_match);
    struct cond_headers a = *h, b = *h;
    a.if_match = list;
    b.if_match = own;
    FZ_CHECK(cond_evaluate(&a, etag, lm, get) == cond_evaluate(&b, etag, lm, get));
    FZ_CHECK(cond_evaluate(&a, etag, lm, get) != COND_PRECONDITION_FAILED || h->if_none_match);
    free(list);
out:
    free(own);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    fz_init(&f, data, size);
    char *etag = fz_line(&f, NULL);
    char *lm_s = fz_line(&f, NULL);
    char *get_s = fz_line(&f, NULL);
    char *field[4];
    for (int i = 0; i < 4; i++)
        field[i] = fz_line(&f, NULL);
    uint64_t mag = fz_number(lm_s[0] == '-' ? lm_s + 1 : lm_s) & 0xFFFFFFFFFFFFull;
    time_t lm = lm_s[0] == '-' ? -(time_t)mag : (time_t)mag;
    bool get = get_s[0] == '1';
    struct cond_headers h = {field[0][0] ? field[0] : NULL, field[1][0] ? field[1] : NULL,
                             field[2][0] ? field[2] : NULL, field[3][0] ? field[3] : NULL};

    enum cond_result r = cond_evaluate(&h, etag, lm, get);
    check_result(r, get);
    FZ_CHECK(cond_evaluate(&h, etag, lm, get) == r);

    /* Blank headers are absent; unparseable dates are ignored. */
    struct cond_headers n = h;
    time_t ignored;
    n.if_match = blank(h.if_match) ? NULL : h.if_match;
    n.if_none_match = blank(h.if_none_match) ? NULL : h.if_none_match;
    if (h.if_modified_since && httpdate_parse(h.if_modified_since, &ignored) != SC_OK)
        n.if_modified_since = NULL;
    if (h.if_unmodified_since && httpdate_parse(h.if_unmodified_since, &ignored) != SC_OK)
        n.if_unmodified_since = NULL;
    FZ_CHECK(cond_evaluate(&n, etag, lm, get) == r);

    struct cond_headers none = {NULL, NULL, NULL, NULL};
    FZ_CHECK(cond_evaluate(&none, etag, lm, get) == COND_PROCEED);

    struct cond_headers star = h;
    star.if_none_match = "*";
    enum cond_result rs = cond_evaluate(&star, etag, lm, get);
    FZ_CHECK(rs == (get && rs != COND_PRECONDITION_FAILED ? COND_NOT_MODIFIED
                                                          : COND_PRECONDITION_FAILED));

    check_result(cond_evaluate(&h, NULL, lm, get), get);
    FZ_CHECK(cond_evaluate(&star, NULL, lm, get) != COND_PROCEED);

    check_if_match_prefix(&h, etag, lm, get);
    free(etag);
    free(lm_s);
    free(get_s);
    for (int i = 0; i < 4; i++)
        free(field[i]);
    return 0;
}
