/*
 * json_in.c - bounded loading of client JSON bodies (json_in.h): the size
 * and nesting depth are checked before jansson builds anything. A hollow load
 * reads the top-level object ahead (json_scan.c) to leave its large arrays out
 * of the tree, then has jansson parse the rest, the skeleton: the body with
 * "[]" for each array left out. Whatever goes wrong on the way, the whole body
 * is loaded as json_in_load() does, so that errors read the same.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json_in.h"

#define EXCERPT_MAX 64 /* bytes of a quoted value in a message */

/* The deepest nesting of [ and { outside strings; stops counting past limit. */
static unsigned max_nesting(const char *s, size_t len, unsigned limit)
{
    unsigned depth = 0;
    unsigned deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < len && deepest <= limit; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped character cannot end the string */
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return deepest;
}

/* The size and depth bounds, checked before anything is parsed. */
static sc_code check_bounds(const char *body, size_t len, size_t max_body, unsigned max_depth,
                            struct api_err *err)
{
    if (len > max_body) {
        api_err_set(err, API_TOO_LARGE, "the body is %zu bytes; the limit is %zu", len, max_body);
        return SC_ETOOBIG;
    }
    if (max_nesting(body, len, max_depth) > max_depth) {
        api_err_set(err, API_INVALID_JSON, "JSON nested deeper than %u levels", max_depth);
        return SC_EINVAL;
    }
    return SC_OK;
}

/* jansson's tree of a body within the bounds. */
static sc_code load_tree(const char *body, size_t len, json_t **out, struct api_err *err)
{
    json_error_t je;
    *out = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (*out == NULL) {
        api_err_set(err, API_INVALID_JSON, "the body is not valid JSON: %s (line %d, column %d)",
                    je.text, je.line, je.column);
        return SC_EINVAL;
    }
    return SC_OK;
}

sc_code json_in_load(const char *body, size_t len, size_t max_body, unsigned max_depth,
                     json_t **out, struct api_err *err)
{
    *out = NULL;
    sc_code rc = check_bounds(body, len, max_body, max_depth, err);
    return rc == SC_OK ? load_tree(body, len, out, err) : rc;
}

/* ---- hollow loading ---- */

/* Which of names[0..n) the string s[0..len) is, or n. */
static size_t name_index(const char *s, size_t len, const char *const *names, size_t n)
{
    size_t k = 0;
    while (k < n && !(strlen(names[k]) == len && memcmp(names[k], s, len) == 0))
        k++;
    return k;
}

/*
 * The value of one member of the top-level object at body[*at]: the first array of the member
 * names[k] (k < n_names) is checked (spans[k] set), any other value skipped unchecked (jansson
 * checks it in the skeleton). False when the body cannot be read ahead this way.
 */
static bool scan_member_value(const char *body, size_t len, size_t *at, size_t k, size_t n_names,
                              unsigned max_depth, struct json_span *spans)
{
    size_t end;
    if (k < n_names && spans[k].p == NULL && body[*at] == '[') {
        if (!json_scan_array(body, len, *at, max_depth - 1, &end))
            return false; /* the top level is depth 1 */
        spans[k] = (struct json_span){body + *at, end - *at};
    } else {
        end = json_scan_skip(body, len, *at);
    }
    *at = end;
    return end != 0;
}

/*
 * Reads the top-level object's members, checking the arrays to leave out (see
 * json_in_load_hollow). False when the body is not an object read this way to its end, a
 * member array is not valid, or none is found: the whole tree is then loaded.
 */
static bool find_hollows(const char *body, size_t len, const char *const *names, size_t n,
                         unsigned max_depth, struct json_span *spans, struct sc_buf *scratch)
{
    size_t i = json_scan_ws(body, len, 0), end, name_len;
    bool found = false;
    if (i >= len || body[i] != '{' || max_depth < 2)
        return false;
    i = json_scan_ws(body, len, i + 1);
    while (i < len && body[i] != '}') {
        if (!json_scan_string(body, len, i, &end, NULL))
            return false;
        const char *name =
            json_scan_decode((struct json_span){body + i, end - i}, scratch, &name_len);
        size_t k = name ? name_index(name, name_len, names, n) : n;
        i = json_scan_ws(body, len, end);
        if (i >= len || body[i] != ':')
            return false;
        i = json_scan_ws(body, len, i + 1);
        if (i >= len || !scan_member_value(body, len, &i, k, n, max_depth, spans))
            return false;
        found |= k < n && spans[k].p != NULL;
        i = json_scan_ws(body, len, i);
        if (i < len && body[i] == ',')
            i = json_scan_ws(body, len, i + 1);
        else if (i >= len || body[i] != '}')
            return false;
    }
    return found && i < len && json_scan_ws(body, len, i + 1) == len;
}

/* The body without the inside of each span: "[]" in its place. NULL when out of memory. */
static char *skeleton(const char *body, size_t len, const struct json_span *spans, size_t n,
                      size_t *out_len)
{
    struct sc_buf b = SC_BUF_INIT;
    const char *at = body;
    for (;;) {
        const struct json_span *next = NULL; /* the earliest span after at */
        for (size_t k = 0; k < n; k++)
            if (spans[k].p != NULL && spans[k].p >= at && (next == NULL || spans[k].p < next->p))
                next = &spans[k];
        if (next == NULL)
            break;
        sc_buf_append(&b, at, (size_t)(next->p - at));
        sc_buf_append(&b, "[]", 2);
        at = next->p + next->len;
    }
    sc_buf_append(&b, at, (size_t)(body + len - at));
    char *out = NULL;
    return sc_buf_take(&b, &out, out_len) == SC_OK ? out : NULL;
}

sc_code json_in_load_hollow(const char *body, size_t len, size_t max_body, unsigned max_depth,
                            const char *const *names, size_t n, struct json_span *spans,
                            json_t **out, struct api_err *err)
{
    struct sc_buf scratch = SC_BUF_INIT;
    size_t skel_len = 0;
    char *skel = NULL;
    *out = NULL;
    for (size_t k = 0; k < n; k++)
        spans[k] = (struct json_span){NULL, 0};
    sc_code rc = check_bounds(body, len, max_body, max_depth, err);
    if (rc != SC_OK)
        return rc;
    if (find_hollows(body, len, names, n, max_depth, spans, &scratch))
        skel = skeleton(body, len, spans, n, &skel_len);
    sc_buf_free(&scratch);
    if (skel != NULL)
        *out = json_loadb(skel, skel_len, JSON_REJECT_DUPLICATES, NULL);
    free(skel);
    if (*out != NULL)
        return SC_OK;
    /* Not read ahead, or refused: the whole tree, for jansson's own error and position. */
    for (size_t k = 0; k < n; k++)
        spans[k] = (struct json_span){NULL, 0};
    return load_tree(body, len, out, err);
}

/* Length of the valid UTF-8 character at s[0..left), or 0. Overlongs are not checked. */
static size_t utf8_char_len(const unsigned char *s, size_t left)
{
    size_t n;
    if (s[0] >= 0x20 && s[0] < 0x7f)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4;
    else
        return 0; /* control character, DEL, continuation or invalid lead byte */
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    }
    return n;
}

const char *json_in_excerpt(char *buf, size_t cap, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t room = cap > 4 ? cap - 4 : 0; /* keep space for "..." and NUL */
    size_t limit = room < EXCERPT_MAX ? room : EXCERPT_MAX;
    size_t in = 0;
    size_t o = 0;
    while (in < len) {
        size_t n = utf8_char_len(u + in, len - in);
        size_t w = n == 0 ? 1 : n;
        if (o + w > limit)
            break;
        if (n == 0)
            buf[o] = '?';
        else
            memcpy(buf + o, s + in, n);
        o += w;
        in += w;
    }
    if (in < len && cap >= 4) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    if (cap > 0)
        buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}
