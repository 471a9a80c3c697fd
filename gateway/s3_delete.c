/* s3_delete.c - the keys of a DeleteObjects request body (see s3_delete.h). */
#include "s3_delete.h"

#include "../common/uri.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024

static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (; p + n <= end; p++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

/* Appends code point cp as UTF-8; false if it is not a valid XML character. */
static bool put_utf8(char *dst, size_t *n, uint32_t cp)
{
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return false;
    if (cp < 0x80) {
        dst[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        dst[(*n)++] = (char)(0xC0 | cp >> 6);
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        dst[(*n)++] = (char)(0xE0 | cp >> 12);
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        dst[(*n)++] = (char)(0xF0 | cp >> 18);
        dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return true;
}

/* Decodes one entity at p ('&' .. ';'); returns the bytes consumed, 0 if malformed. */
static size_t decode_entity(const char *p, const char *end, char *dst, size_t *n)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        size_t len = strlen(named[i].name);
        if ((size_t)(end - p) >= len && memcmp(p, named[i].name, len) == 0) {
            dst[(*n)++] = named[i].c;
            return len;
        }
    }
    if (end - p < 4 || p[1] != '#')
        return 0;
    bool hex = p[2] == 'x';
    uint32_t cp = 0;
    const char *q = p + (hex ? 3 : 2);
    const char *digits = q;
    for (; q < end && *q != ';' && q - digits < 8; q++) {
        int d = uri_hex_digit(*q);
        if (!hex && d > 9)
            d = -1;
        if (d < 0)
            return 0;
        cp = cp * (hex ? 16 : 10) + (uint32_t)d;
    }
    if (q == digits || q >= end || *q != ';' || !put_utf8(dst, n, cp))
        return 0;
    return (size_t)(q + 1 - p);
}

/* Decodes the text between p and end into a new string. */
static sc_code decode_text(const char *p, const char *end, char **out)
{
    if (end - p > KEY_MAX * 6)
        return SC_EINVAL;
    char *dst = malloc((size_t)(end - p) + 1);
    if (dst == NULL)
        return SC_ENOMEM;
    size_t n = 0;
    while (p < end) {
        size_t used = 1;
        if (*p == '&')
            used = decode_entity(p, end, dst, &n);
        else if (*p == '<')
            used = 0; /* markup inside a key: not DeleteObjects */
        else
            dst[n++] = *p;
        if (used == 0 || n > KEY_MAX) {
            free(dst);
            return SC_EINVAL;
        }
        p += used;
    }
    dst[n] = '\0';
    *out = dst;
    return SC_OK;
}

sc_code s3_delete_keys_parse(const char *body, size_t len, struct s3_delete_keys *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = body, *end = body + len;
    sc_code rc = SC_OK;
    while (rc == SC_OK && (p = find(p, end, "<Key>")) != NULL) {
        const char *text = p + 5;
        const char *close = find(text, end, "</Key>");
        if (close == NULL) {
            rc = SC_EINVAL;
            break;
        }
        if (out->n == S3_DELETE_MAX_KEYS) {
            rc = SC_ETOOBIG;
            break;
        }
        char **grown = realloc(out->keys, (out->n + 1) * sizeof(*grown));
        if (grown == NULL) {
            rc = SC_ENOMEM;
            break;
        }
        out->keys = grown;
        rc = decode_text(text, close, &out->keys[out->n]);
        if (rc == SC_OK)
            out->n++;
        p = close + 6;
    }
    if (rc != SC_OK)
        s3_delete_keys_free(out);
    return rc;
}

void s3_delete_keys_free(struct s3_delete_keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->keys[i]);
    free(k->keys);
    k->keys = NULL;
    k->n = 0;
}
