/*
 * s3_delete.c - the keys of a DeleteObjects request body (see s3_delete.h).
 *
 * A small XML reader, enough to read the keys the way the upstream's parser does:
 * it walks the markup (declarations and processing instructions, comments, CDATA
 * sections, start, end and empty-element tags with attributes, checking that tags
 * nest), and gathers the text of every element whose local name is "Key" (any
 * namespace prefix): its character data with entities decoded, its CDATA sections
 * verbatim, its comments skipped. A document type declaration (which could define
 * entities) or anything else it cannot read for certain fails the whole parse.
 */
#include "s3_delete.h"

#include "s3_xml.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_MAX      1024
#define DEPTH_MAX    16
#define TAG_NAME_MAX 128

struct reader {
    const char *p, *end;
    int depth;
    const char *names[DEPTH_MAX]; /* the open elements' qualified names */
    size_t name_lens[DEPTH_MAX];
    int key_depth;   /* depth of the open Key element, or -1 */
    char *key;       /* its text so far */
    size_t key_len;  /* bytes of key */
    bool key_nested; /* an element opened inside Key */
    struct s3_delete_keys *out;
};

static const char *find_str(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    for (; (size_t)(end - p) >= n; p++)
        if (memcmp(p, s, n) == 0)
            return p;
    return NULL;
}

static bool starts(const struct reader *r, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(r->end - r->p) >= n && memcmp(r->p, s, n) == 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_name_char(char c)
{
    return !is_space(c) && c != '>' && c != '/' && c != '=' && c != '<' && c != '"' && c != '\'' &&
           c != '&';
}

/* Whether a qualified name's local part (after any prefix) is "Key". */
static bool is_key_name(const char *name, size_t len)
{
    const char *colon = memchr(name, ':', len);
    if (colon != NULL) {
        len -= (size_t)(colon + 1 - name);
        name = colon + 1;
    }
    return len == 3 && memcmp(name, "Key", 3) == 0;
}

/* Appends raw bytes to the open key, as XML reads them: CR LF and lone CR become LF. */
static sc_code key_append_raw(struct reader *r, const char *p, size_t n)
{
    if (r->key_len + n > KEY_MAX)
        return SC_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\0')
            return SC_EINVAL; /* no XML character */
        if (p[i] == '\r') {
            r->key[r->key_len++] = '\n';
            if (i + 1 < n && p[i + 1] == '\n')
                i++;
        } else {
            r->key[r->key_len++] = p[i];
        }
    }
    return SC_OK;
}

/* Appends character data (entities still encoded) to the open key. */
static sc_code key_append_text(struct reader *r, const char *p, size_t n)
{
    char *norm = malloc(n + 1), *text = NULL;
    if (norm == NULL)
        return SC_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
            continue;
        norm[m++] = p[i] == '\r' ? '\n' : p[i];
    }
    sc_code rc = s3_xml_unescape(norm, m, KEY_MAX, &text);
    free(norm);
    if (rc != SC_OK)
        return rc;
    size_t len = strlen(text);
    if (r->key_len + len > KEY_MAX)
        rc = SC_EINVAL;
    else
        memcpy(r->key + r->key_len, text, len);
    r->key_len += rc == SC_OK ? len : 0;
    free(text);
    return rc;
}

/* Character data up to the next '<'. */
static sc_code read_text(struct reader *r)
{
    const char *lt = memchr(r->p, '<', (size_t)(r->end - r->p));
    const char *stop = lt != NULL ? lt : r->end;
    sc_code rc = SC_OK;
    if (r->key_depth >= 0)
        rc = key_append_text(r, r->p, (size_t)(stop - r->p));
    r->p = stop;
    return rc;
}

/* Skips from the current position past the first occurrence of close. */
static sc_code skip_past(struct reader *r, const char *close)
{
    const char *c = find_str(r->p, r->end, close);
    if (c == NULL)
        return SC_EINVAL;
    r->p = c + strlen(close);
    return SC_OK;
}

static sc_code read_cdata(struct reader *r)
{
    const char *text = r->p + strlen("<![CDATA[");
    const char *c = find_str(text, r->end, "]]>");
    if (c == NULL)
        return SC_EINVAL;
    r->p = c + 3;
    if (r->key_depth < 0)
        return SC_OK;
    return key_append_raw(r, text, (size_t)(c - text));
}

static sc_code read_name(struct reader *r, const char **name, size_t *len)
{
    *name = r->p;
    while (r->p < r->end && is_name_char(*r->p))
        r->p++;
    *len = (size_t)(r->p - *name);
    return *len > 0 && *len <= TAG_NAME_MAX ? SC_OK : SC_EINVAL;
}

static void skip_space(struct reader *r)
{
    while (r->p < r->end && is_space(*r->p))
        r->p++;
}

/* Skips a tag's attributes (name="value" or name='value') up to '>' or "/>". */
static sc_code skip_attributes(struct reader *r)
{
    for (;;) {
        skip_space(r);
        if (r->p >= r->end)
            return SC_EINVAL;
        if (*r->p == '>' || starts(r, "/>"))
            return SC_OK;
        const char *name;
        size_t len;
        if (read_name(r, &name, &len) != SC_OK)
            return SC_EINVAL;
        skip_space(r);
        if (r->p >= r->end || *r->p != '=')
            return SC_EINVAL;
        r->p++;
        skip_space(r);
        if (r->p >= r->end || (*r->p != '"' && *r->p != '\''))
            return SC_EINVAL;
        const char *q = memchr(r->p + 1, *r->p, (size_t)(r->end - r->p - 1));
        if (q == NULL || memchr(r->p + 1, '<', (size_t)(q - r->p - 1)) != NULL)
            return SC_EINVAL;
        r->p = q + 1;
    }
}

/* Ends the open Key element: its text becomes one of the keys. */
static sc_code finish_key(struct reader *r)
{
    r->key_depth = -1;
    if (r->key_nested)
        return SC_EINVAL; /* markup inside a key: not a key we can name */
    if (r->key_len == 0)
        return SC_OK; /* an empty key names no object */
    if (r->out->n == S3_DELETE_MAX_KEYS)
        return SC_ETOOBIG;
    char **grown = realloc(r->out->keys, (r->out->n + 1) * sizeof(*grown));
    if (grown == NULL)
        return SC_ENOMEM;
    r->out->keys = grown;
    char *k = malloc(r->key_len + 1);
    if (k == NULL)
        return SC_ENOMEM;
    memcpy(k, r->key, r->key_len);
    k[r->key_len] = '\0';
    r->out->keys[r->out->n++] = k;
    return SC_OK;
}

static sc_code open_element(struct reader *r, const char *name, size_t len, bool empty)
{
    if (r->key_depth >= 0)
        r->key_nested = true;
    bool key = is_key_name(name, len) && r->key_depth < 0;
    if (empty) /* <Key/>: an empty key */
        return r->key_depth >= 0 ? SC_EINVAL : SC_OK;
    if (r->depth == DEPTH_MAX)
        return SC_EINVAL;
    r->names[r->depth] = name;
    r->name_lens[r->depth] = len;
    if (key) {
        r->key_depth = r->depth;
        r->key_len = 0;
        r->key_nested = false;
    }
    r->depth++;
    return SC_OK;
}

static sc_code read_start_tag(struct reader *r)
{
    r->p++; /* '<' */
    const char *name;
    size_t len;
    if (read_name(r, &name, &len) != SC_OK || skip_attributes(r) != SC_OK)
        return SC_EINVAL;
    bool empty = *r->p == '/';
    r->p += empty ? 2 : 1;
    return open_element(r, name, len, empty);
}

static sc_code read_end_tag(struct reader *r)
{
    r->p += 2; /* "</" */
    const char *name;
    size_t len;
    if (read_name(r, &name, &len) != SC_OK)
        return SC_EINVAL;
    skip_space(r);
    if (r->p >= r->end || *r->p != '>' || r->depth == 0)
        return SC_EINVAL;
    r->p++;
    r->depth--;
    if (r->name_lens[r->depth] != len || memcmp(r->names[r->depth], name, len) != 0)
        return SC_EINVAL; /* tags do not nest */
    return r->depth == r->key_depth ? finish_key(r) : SC_OK;
}

/* The XML declaration: a body in another encoding than UTF-8 has other key bytes. */
static sc_code read_declaration(struct reader *r)
{
    const char *start = r->p;
    sc_code rc = skip_past(r, "?>");
    if (rc != SC_OK)
        return rc;
    const char *enc = find_str(start, r->p, "encoding");
    if (enc == NULL)
        return SC_OK;
    const char *q = enc + strlen("encoding");
    while (q < r->p && (is_space(*q) || *q == '='))
        q++;
    if (q >= r->p || (*q != '"' && *q != '\''))
        return SC_EINVAL;
    static const char utf8[] = "utf-8";
    size_t n = sizeof(utf8) - 1;
    if ((size_t)(r->p - q) < n + 2 || strncasecmp(q + 1, utf8, n) != 0 || q[n + 1] != *q)
        return SC_EINVAL;
    return SC_OK;
}

static sc_code read_markup(struct reader *r)
{
    if (starts(r, "<?xml") && r->depth == 0)
        return read_declaration(r);
    if (starts(r, "<?"))
        return skip_past(r, "?>");
    if (starts(r, "<!--"))
        return skip_past(r, "-->");
    if (starts(r, "<![CDATA["))
        return read_cdata(r);
    if (starts(r, "<!"))
        return SC_EINVAL; /* a DOCTYPE may declare entities: not ours to expand */
    if (starts(r, "</"))
        return read_end_tag(r);
    return read_start_tag(r);
}

sc_code s3_delete_keys_parse(const char *body, size_t len, struct s3_delete_keys *out)
{
    memset(out, 0, sizeof(*out));
    struct reader r = {.p = body, .end = body + len, .key_depth = -1, .out = out};
    r.key = malloc(KEY_MAX + 1);
    if (r.key == NULL)
        return SC_ENOMEM;
    if (starts(&r, "\xEF\xBB\xBF"))
        r.p += 3; /* a UTF-8 byte order mark */
    if (memchr(body, '\0', len) != NULL) {
        free(r.key);
        return SC_EINVAL; /* UTF-16 or UTF-32, or no XML at all */
    }
    /* Leniency (text or a second element outside the root) can only add keys: the
     * upstream refuses such a body, and dropping a cached copy too many is harmless. */
    sc_code rc = SC_OK;
    while (rc == SC_OK && r.p < r.end)
        rc = *r.p == '<' ? read_markup(&r) : read_text(&r);
    if (rc == SC_OK && r.depth != 0)
        rc = SC_EINVAL; /* unterminated */
    free(r.key);
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
