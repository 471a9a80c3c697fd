/*
 * client_keys.c - the client key file: read, checked, kept sorted by access key
 * (see client_keys.h).
 *
 * Parsing runs with jansson's allocators swapped for wiping ones, so that no
 * copy of a secret (the lexer's token buffer, the string values) is freed
 * without being erased first. Each key's strings are copied out of the JSON
 * tree into the table, which owns them and wipes them in ckeys_free().
 */
#include "client_keys.h"
#include "sigv4_int.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/secret_file.h"

#define ACCESS_KEY_MAX 128
#define SECRET_MAX     256 /* SIGV4_MAX_SECRET */
#define BUCKET_MAX     255
#define COMMENT_MAX    4096
#define HEADER         16 /* bytes before each wiping allocation: its size, and alignment */

struct ckeys {
    struct ckey *keys; /* sorted by access key */
    size_t n;
};

/* ---- wiping allocators for jansson ------------------------------------------------ */

static void *wiping_malloc(size_t n)
{
    if (n > SIZE_MAX - HEADER)
        return NULL;
    unsigned char *p = malloc(n + HEADER);
    if (p == NULL)
        return NULL;
    memcpy(p, &n, sizeof(n));
    return p + HEADER;
}

static void wiping_free(void *ptr)
{
    if (ptr == NULL)
        return;
    unsigned char *p = (unsigned char *)ptr - HEADER;
    size_t n;
    memcpy(&n, p, sizeof(n));
    OPENSSL_cleanse(p, n + HEADER);
    free(p);
}

/* ---- the table -------------------------------------------------------------------- */

static void key_clear(struct ckey *k)
{
    creds_clear(&k->creds);
    for (size_t i = 0; i < k->n_buckets; i++)
        free(k->buckets[i]);
    free(k->buckets);
    k->buckets = NULL;
    k->n_buckets = 0;
}

void ckeys_free(ckeys *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++)
        key_clear(&t->keys[i]);
    free(t->keys);
    free(t);
}

size_t ckeys_count(const ckeys *t)
{
    return t ? t->n : 0;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ckey *)a)->creds.access_key,
                  ((const struct ckey *)b)->creds.access_key);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const struct ckey *ckeys_find(const ckeys *t, const char *access_key)
{
    if (t == NULL || access_key == NULL)
        return NULL;
    struct ckey probe = {.creds = {.access_key = (char *)access_key}};
    return bsearch(&probe, t->keys, t->n, sizeof(*t->keys), key_cmp);
}

const char *ckey_access_key(const struct ckey *k)
{
    return k->creds.access_key;
}

const struct creds *ckey_creds(const struct ckey *k)
{
    return &k->creds;
}

bool ckey_allows_bucket(const struct ckey *k, const char *bucket)
{
    if (k->buckets == NULL)
        return true;
    if (bucket == NULL || *bucket == '\0')
        return false;
    return bsearch(&bucket, k->buckets, k->n_buckets, sizeof(char *), str_cmp) != NULL;
}

/* ---- checking one entry ---------------------------------------------------------------- */

static sc_code fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static sc_code fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return SC_EINVAL;
}

/* Printable ASCII, 1..max characters; scope_safe also refuses '/', ',' and space. */
static bool valid_text(const char *s, size_t max, bool scope_safe)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c > 0x7e)
            return false;
        if (scope_safe && (c == ' ' || c == '/' || c == ','))
            return false;
    }
    return true;
}

/* Copies the "buckets" list of entry i into k; "*" anywhere means every bucket. */
static sc_code take_buckets(json_t *list, size_t i, struct ckey *k, char *err, size_t err_len)
{
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n == 0 || n > CKEYS_MAX_BUCKETS)
        return fail(err, err_len, "keys[%zu].buckets: must be a list of 1 to %d bucket names", i,
                    CKEYS_MAX_BUCKETS);
    for (size_t j = 0; j < n; j++) {
        const char *b = json_string_value(json_array_get(list, j));
        if (b == NULL || !valid_text(b, BUCKET_MAX, true))
            return fail(err, err_len, "keys[%zu].buckets[%zu]: not a bucket name", i, j);
        if (strcmp(b, "*") == 0)
            return SC_OK; /* every bucket: buckets stays NULL */
    }
    k->buckets = calloc(n, sizeof(*k->buckets));
    if (k->buckets == NULL)
        return SC_ENOMEM;
    for (size_t j = 0; j < n; j++) {
        k->buckets[j] = strdup(json_string_value(json_array_get(list, j)));
        if (k->buckets[j] == NULL)
            return SC_ENOMEM;
        k->n_buckets = j + 1;
    }
    qsort(k->buckets, k->n_buckets, sizeof(char *), str_cmp);
    return SC_OK;
}

static bool known_field(const char *name)
{
    return strcmp(name, "access_key") == 0 || strcmp(name, "secret_key") == 0 ||
           strcmp(name, "buckets") == 0 || strcmp(name, "comment") == 0;
}

/* Checks entry i and copies it into k (which the caller clears on failure). */
static sc_code take_key(json_t *entry, size_t i, struct ckey *k, char *err, size_t err_len)
{
    const char *name;
    json_t *value;
    if (!json_is_object(entry))
        return fail(err, err_len, "keys[%zu]: must be an object", i);
    json_object_foreach(entry, name, value)
    {
        if (!known_field(name))
            return fail(err, err_len,
                        "keys[%zu]: unknown field (known: access_key, secret_key, buckets, "
                        "comment)",
                        i);
    }
    const char *ak = json_string_value(json_object_get(entry, "access_key"));
    const char *sk = json_string_value(json_object_get(entry, "secret_key"));
    json_t *comment = json_object_get(entry, "comment");
    if (ak == NULL || !valid_text(ak, ACCESS_KEY_MAX, true))
        return fail(err, err_len,
                    "keys[%zu].access_key: must be 1 to %d printable characters without '/', "
                    "',' or spaces",
                    i, ACCESS_KEY_MAX);
    if (sk == NULL || !valid_text(sk, SECRET_MAX, false))
        return fail(err, err_len, "keys[%zu].secret_key: must be 1 to %d printable characters", i,
                    SECRET_MAX);
    if (comment != NULL && (!json_is_string(comment) || json_string_length(comment) > COMMENT_MAX))
        return fail(err, err_len, "keys[%zu].comment: must be a string", i);
    k->creds.access_key = strdup(ak);
    k->creds.secret_key = strdup(sk);
    if (k->creds.access_key == NULL || k->creds.secret_key == NULL)
        return SC_ENOMEM;
    json_t *buckets = json_object_get(entry, "buckets");
    return buckets ? take_buckets(buckets, i, k, err, err_len) : SC_OK;
}

/* Builds the table from the parsed document. */
static sc_code take_table(json_t *doc, ckeys *t, char *err, size_t err_len)
{
    const char *name;
    json_t *value;
    if (!json_is_object(doc))
        return fail(err, err_len, "the file must hold a JSON object with a \"keys\" list");
    json_object_foreach(doc, name, value)
    {
        if (strcmp(name, "keys") != 0)
            return fail(err, err_len, "unknown top-level field (known: keys)");
    }
    json_t *list = json_object_get(doc, "keys");
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n == 0 || n > CKEYS_MAX_KEYS)
        return fail(err, err_len, "\"keys\" must be a list of 1 to %d key pairs", CKEYS_MAX_KEYS);
    t->keys = calloc(n, sizeof(*t->keys));
    if (t->keys == NULL)
        return SC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        t->n = i + 1;
        sc_code rc = take_key(json_array_get(list, i), i, &t->keys[i], err, err_len);
        if (rc != SC_OK)
            return rc;
    }
    qsort(t->keys, t->n, sizeof(*t->keys), key_cmp);
    for (size_t i = 1; i < t->n; i++) {
        if (strcmp(t->keys[i - 1].creds.access_key, t->keys[i].creds.access_key) == 0)
            return fail(err, err_len, "access key %s is listed twice", t->keys[i].creds.access_key);
    }
    return SC_OK;
}

sc_code ckeys_parse(const char *text, size_t len, ckeys **out, char *err, size_t err_len)
{
    json_malloc_t old_malloc;
    json_free_t old_free;
    json_error_t jerr;
    *out = NULL;
    if (len > CKEYS_MAX_FILE) {
        snprintf(err, err_len, "the file is larger than %d bytes", CKEYS_MAX_FILE);
        return SC_ETOOBIG;
    }
    ckeys *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return SC_ENOMEM;
    json_get_alloc_funcs(&old_malloc, &old_free);
    json_set_alloc_funcs(wiping_malloc, wiping_free);
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    sc_code rc = SC_OK;
    if (doc == NULL)
        rc = fail(err, err_len, "not valid JSON: line %d, column %d", jerr.line, jerr.column);
    else
        rc = take_table(doc, t, err, err_len);
    json_decref(doc);
    OPENSSL_cleanse(&jerr, sizeof(jerr)); /* its text may quote part of the file */
    json_set_alloc_funcs(old_malloc, old_free);
    if (rc == SC_ENOMEM)
        snprintf(err, err_len, "out of memory");
    if (rc != SC_OK) {
        ckeys_free(t);
        return rc;
    }
    *out = t;
    return SC_OK;
}

/* ---- the file ------------------------------------------------------------------------ */

sc_code ckeys_load(const char *path, ckeys **out, char *err, size_t err_len)
{
    char *buf = NULL;
    size_t len = 0;
    *out = NULL;
    sc_code rc = sc_secret_file_read(path, CKEYS_MAX_FILE, &buf, &len, err, err_len);
    if (rc != SC_OK)
        return rc;
    rc = ckeys_parse(buf, len, out, err, err_len);
    OPENSSL_cleanse(buf, len + 1);
    free(buf);
    return rc;
}
