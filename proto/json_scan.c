/*
 * json_scan.c - JSON text read in place (json_scan.h). The string rules follow jansson
 * 2.14's lexer (src/load.c: stream_get's UTF-8 check, lex_scan_string, and parse_value's
 * refusal of NUL), so that a body is accepted here exactly when jansson would accept it.
 */
#include <stdint.h>
#include <string.h>

#include "../common/uri.h"
#include "json_scan.h"

/* What jansson flags every value it parses with (json_in.c loads bodies the same way). */
#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t json_scan_ws(const char *s, size_t len, size_t i)
{
    while (i < len && is_ws(s[i]))
        i++;
    return i;
}

/* Length of the valid UTF-8 sequence at s[0..left) with a lead byte >= 0x80, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
    size_t n;
    uint32_t v;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        v = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        v = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        v = s[0] & 0x07u;
    } else {
        return 0; /* a continuation byte, an overlong lead (C0, C1), or past U+10FFFF */
    }
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3fu);
    }
    if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
        return 0; /* overlong; two bytes cannot be, as C0 and C1 are refused */
    return n;
}

/* The code unit of "\uXXXX" at s[i] (s[i] is the backslash), or -1. */
static int32_t unicode_escape(const char *s, size_t len, size_t i)
{
    int32_t v = 0;
    if (len - i < 6 || s[i] != '\\' || s[i + 1] != 'u')
        return -1;
    for (size_t k = i + 2; k < i + 6; k++) {
        int d = uri_hex_digit(s[k]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/*
 * The escape at s[i] (a backslash) of a string: its code point in *cp (a pair of surrogate
 * escapes makes one) and its length in bytes, or 0 when jansson refuses it. *cp is -1 for
 * the one-letter escapes, whose byte is then *byte.
 */
static size_t escape(const char *s, size_t len, size_t i, int32_t *cp, char *byte)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    *cp = -1;
    if (i + 1 >= len)
        return 0;
    if (s[i + 1] != 'u') {
        const char *at = memchr(from, s[i + 1], sizeof(from) - 1);
        if (at == NULL)
            return 0;
        *byte = to[at - from];
        return 2;
    }
    int32_t hi = unicode_escape(s, len, i);
    if (hi <= 0 || (hi >= 0xdc00 && hi <= 0xdfff))
        return 0; /* \u0000 (a NUL), a malformed escape, a lone low surrogate */
    if (hi < 0xd800 || hi > 0xdbff) {
        *cp = hi;
        return 6;
    }
    int32_t lo = unicode_escape(s, len, i + 6);
    if (lo < 0xdc00 || lo > 0xdfff)
        return 0; /* a high surrogate not followed by a low one */
    *cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
    return 12;
}

bool json_scan_string(const char *text, size_t len, size_t at, size_t *end, bool *plain)
{
    const unsigned char *u = (const unsigned char *)text;
    bool escaped = false;
    size_t i = at + 1;
    if (at >= len || text[at] != '"')
        return false;
    for (;;) {
        while (i < len && u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' && u[i] != '\\')
            i++; /* the common case: printable ASCII */
        if (i >= len || u[i] < 0x20)
            return false; /* no closing quote, or a control character */
        if (u[i] == '"')
            break;
        size_t n;
        if (u[i] == '\\') {
            int32_t cp;
            char byte;
            n = escape(text, len, i, &cp, &byte);
            escaped = true;
        } else {
            n = utf8_seq(u + i, len - i);
        }
        if (n == 0)
            return false;
        i += n;
    }
    if (end != NULL)
        *end = i + 1;
    if (plain != NULL)
        *plain = !escaped;
    return true;
}

/* Appends code point cp (not a surrogate, at most U+10FFFF) to b as UTF-8. */
static sc_code put_utf8(struct sc_buf *b, int32_t cp)
{
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return sc_buf_append(b, out, n);
}

const char *json_scan_decode(struct json_span str, struct sc_buf *scratch, size_t *n)
{
    const char *s = str.p + 1;
    size_t len = str.len - 2, i = 0;
    const char *bs = memchr(s, '\\', len);
    if (bs == NULL) {
        *n = len;
        return s;
    }
    sc_buf_reset(scratch);
    while (i < len) {
        const char *next = memchr(s + i, '\\', len - i);
        size_t plain = next ? (size_t)(next - (s + i)) : len - i;
        sc_buf_append(scratch, s + i, plain);
        i += plain;
        if (i == len)
            break;
        int32_t cp;
        char byte;
        size_t step = escape(s, len, i, &cp, &byte);
        if (step == 0)
            step = len - i; /* not an accepted string: the caller broke the contract */
        else if (cp < 0)
            sc_buf_putc(scratch, byte);
        else
            put_utf8(scratch, cp);
        i += step;
    }
    if (sc_buf_append(scratch, NULL, 0) != SC_OK)
        return NULL;
    *n = scratch->len;
    return scratch->data;
}

/* One past the string at s[i] (a quote) without checking it, or 0 when it does not end. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

static bool ends_scalar(char c)
{
    return is_ws(c) || c == ',' || c == ':' || c == ']' || c == '}' || c == '"' || c == '[' ||
           c == '{';
}

size_t json_scan_skip(const char *text, size_t len, size_t at)
{
    size_t depth = 0, i = at;
    if (at >= len)
        return 0;
    if (text[at] == '"')
        return skip_string(text, len, at);
    if (text[at] != '[' && text[at] != '{') {
        while (i < len && !ends_scalar(text[i]))
            i++;
        return i > at ? i : 0;
    }
    while (i < len) {
        char c = text[i];
        if (c == '"') {
            i = skip_string(text, len, i);
            if (i == 0)
                return 0;
            continue;
        }
        if (c == '[' || c == '{')
            depth++;
        else if ((c == ']' || c == '}') && --depth == 0)
            return i + 1;
        i++;
    }
    return 0;
}

/* Whether jansson accepts text[at..end) as one value. */
static bool jansson_accepts(const char *text, size_t at, size_t end)
{
    json_t *v = json_loadb(text + at, end - at, LOAD_FLAGS, NULL);
    json_decref(v);
    return v != NULL;
}

/* One element at text[at]: checked, *end set past it. */
static bool scan_element(const char *text, size_t len, size_t at, unsigned depth_left, size_t *end)
{
    if (text[at] == '"')
        return json_scan_string(text, len, at, end, NULL);
    if (text[at] == '[')
        return json_scan_array(text, len, at, depth_left, end);
    *end = json_scan_skip(text, len, at);
    if (*end == 0)
        return false;
    if (text[at] == '{' && depth_left == 0)
        return false; /* deeper than the limit: the caller refuses it anyway */
    return jansson_accepts(text, at, *end);
}

bool json_scan_array(const char *text, size_t len, size_t at, unsigned max_depth, size_t *end)
{
    size_t i;
    if (max_depth == 0 || at >= len || text[at] != '[')
        return false;
    i = json_scan_ws(text, len, at + 1);
    if (i < len && text[i] == ']') {
        *end = i + 1;
        return true;
    }
    while (i < len) {
        if (!scan_element(text, len, i, max_depth - 1, &i))
            return false;
        i = json_scan_ws(text, len, i);
        if (i < len && text[i] == ']') {
            *end = i + 1;
            return true;
        }
        if (i >= len || text[i] != ',')
            return false;
        i = json_scan_ws(text, len, i + 1);
    }
    return false;
}

void json_scan_cursor_init(struct json_scan_cursor *c, struct json_span array)
{
    c->p = array.p;
    c->len = array.len;
    c->at = 1; /* past the '[' */
}

bool json_scan_next(struct json_scan_cursor *c, struct json_scan_elem *e)
{
    size_t i = json_scan_ws(c->p, c->len, c->at);
    if (i < c->len && c->p[i] == ',')
        i = json_scan_ws(c->p, c->len, i + 1);
    if (i >= c->len || c->p[i] == ']') {
        c->at = c->len;
        return false;
    }
    size_t end = json_scan_skip(c->p, c->len, i);
    if (end == 0) { /* not an accepted array: the caller broke the contract */
        c->at = c->len;
        return false;
    }
    e->kind = c->p[i] == '"'   ? JSON_SCAN_STRING
              : c->p[i] == '[' ? JSON_SCAN_ARRAY
                               : JSON_SCAN_OTHER;
    e->text = (struct json_span){c->p + i, end - i};
    c->at = end;
    return true;
}

size_t json_scan_count(struct json_span array)
{
    struct json_scan_cursor c;
    struct json_scan_elem e;
    size_t n = 0;
    json_scan_cursor_init(&c, array);
    while (json_scan_next(&c, &e))
        n++;
    return n;
}

json_t *json_scan_value(struct json_span value)
{
    return json_loadb(value.p, value.len, LOAD_FLAGS, NULL);
}
