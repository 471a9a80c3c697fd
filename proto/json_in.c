/*
 * json_in.c - bounded loading of client JSON bodies (json_in.h): the size
 * and nesting depth are checked before jansson builds anything.
 */
#include <stdbool.h>
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

sc_code json_in_load(const char *body, size_t len, size_t max_body, unsigned max_depth,
                     json_t **out, struct api_err *err)
{
    json_error_t je;
    *out = NULL;
    if (len > max_body) {
        api_err_set(err, API_TOO_LARGE, "the body is %zu bytes; the limit is %zu", len, max_body);
        return SC_ETOOBIG;
    }
    if (max_nesting(body, len, max_depth) > max_depth) {
        api_err_set(err, API_INVALID_JSON, "JSON nested deeper than %u levels", max_depth);
        return SC_EINVAL;
    }
    *out = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (*out == NULL) {
        api_err_set(err, API_INVALID_JSON, "the body is not valid JSON: %s (line %d, column %d)",
                    je.text, je.line, je.column);
        return SC_EINVAL;
    }
    return SC_OK;
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
