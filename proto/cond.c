/*
 * cond.c - conditional request evaluation (see cond.h).
 *
 * Entity-tag lists are scanned in place: no allocation, one pass, so an
 * arbitrarily long header costs time linear in its length and nothing else.
 */
#include "cond.h"

#include <stddef.h>
#include <string.h>

#include "httpdate.h"

/* An entity tag's opaque part (without W/ and quotes), pointing into its source; p is NULL
 * for an object that has no ETag at all. */
struct tag {
    const char *p;
    size_t len;
    bool weak;
};

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static const char *skip_ows(const char *s)
{
    while (is_ows(*s))
        s++;
    return s;
}

/* True if s is non-NULL and holds something other than spaces and tabs. */
static bool present(const char *s)
{
    return s != NULL && *skip_ows(s) != '\0';
}

/* Splits the object's own etag into a tag; tolerant of missing quotes. */
static struct tag own_tag(const char *etag)
{
    if (etag == NULL)
        return (struct tag){NULL, 0, false};
    struct tag t = {etag, strlen(etag), false};
    if (t.len >= 2 && t.p[0] == 'W' && t.p[1] == '/') {
        t.weak = true;
        t.p += 2;
        t.len -= 2;
    }
    if (t.len >= 2 && t.p[0] == '"' && t.p[t.len - 1] == '"') {
        t.p++;
        t.len -= 2;
    }
    return t;
}

/*
 * Reads one list element at *s into t (or sets *star); advances *s past the
 * element and its trailing OWS. Returns false on a malformed element.
 */
static bool read_element(const char **s, struct tag *t, bool *star)
{
    const char *p = *s;
    *star = false;
    t->weak = false;
    if (*p == '*') {
        *star = true;
        p++;
    } else {
        if ((p[0] == 'W' || p[0] == 'w') && p[1] == '/') {
            t->weak = true;
            p += 2;
        }
        if (*p == '"') {
            const char *close = strchr(p + 1, '"');
            if (close == NULL)
                return false;
            t->p = p + 1;
            t->len = (size_t)(close - t->p);
            p = close + 1;
        } else {
            t->p = p;
            while (*p != '\0' && *p != ',' && !is_ows(*p) && *p != '"')
                p++;
            t->len = (size_t)(p - t->p);
            if (t->len == 0)
                return false;
        }
    }
    p = skip_ows(p);
    if (*p != '\0' && *p != ',')
        return false;
    *s = p;
    return true;
}

static bool tags_equal(const struct tag *a, const struct tag *b, bool strong)
{
    if (a->p == NULL || b->p == NULL)
        return false; /* no ETag: no tag names it */
    if (strong && (a->weak || b->weak))
        return false;
    return a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

/* True if any element of list matches ours ("*" matches everything). */
static bool list_matches(const char *list, const struct tag *ours, bool strong)
{
    const char *s = list;
    for (;;) {
        while (*s == ',' || is_ows(*s))
            s++;
        if (*s == '\0')
            return false;
        struct tag t;
        bool star;
        if (!read_element(&s, &t, &star))
            return false;
        if (star || tags_equal(&t, ours, strong))
            return true;
    }
}

/* If-Unmodified-Since holds: not modified after the date. Invalid dates hold. */
static bool unmodified_since(const char *value, time_t last_modified)
{
    time_t when;
    if (httpdate_parse(value, &when) != SC_OK)
        return true;
    return last_modified <= when;
}

/* If-Modified-Since holds: modified after the date. Invalid dates hold. */
static bool modified_since(const char *value, time_t last_modified)
{
    time_t when;
    if (httpdate_parse(value, &when) != SC_OK)
        return true;
    return last_modified > when;
}

enum cond_result cond_evaluate(const struct cond_headers *h, const char *etag, time_t last_modified,
                               bool is_get_or_head)
{
    struct tag ours = own_tag(etag);
    if (present(h->if_match)) {
        if (!list_matches(h->if_match, &ours, true))
            return COND_PRECONDITION_FAILED;
    } else if (present(h->if_unmodified_since)) {
        if (!unmodified_since(h->if_unmodified_since, last_modified))
            return COND_PRECONDITION_FAILED;
    }
    if (present(h->if_none_match)) {
        if (list_matches(h->if_none_match, &ours, false))
            return is_get_or_head ? COND_NOT_MODIFIED : COND_PRECONDITION_FAILED;
    } else if (is_get_or_head && present(h->if_modified_since)) {
        if (!modified_since(h->if_modified_since, last_modified))
            return COND_NOT_MODIFIED;
    }
    return COND_PROCEED;
}

int cond_http_status(enum cond_result r)
{
    switch (r) {
    case COND_NOT_MODIFIED:
        return 304;
    case COND_PRECONDITION_FAILED:
        return 412;
    case COND_PROCEED:
        break;
    }
    return 0;
}

bool cond_overrides_range(enum cond_result r)
{
    return r != COND_PROCEED;
}
