/* hdrblob.c - encoding of the headers kept with a cached object (see hdrblob.h). */
#include "hdrblob.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Headers about one response or one connection, not about the object. */
static const char *const per_response[] = {
    "date",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "server",
    "x-amz-request-id",
    "x-amz-id-2",
    "accept-ranges",
    "content-range",
    "trailer",
    "upgrade",
    "proxy-authenticate",
    "x-cache",
    "x-amz-expiration",
    "set-cookie",
    "vary",
    "te",
};

bool hdrblob_keeps(const char *name)
{
    for (size_t i = 0; i < sizeof(per_response) / sizeof(per_response[0]); i++)
        if (strcasecmp(name, per_response[i]) == 0)
            return false;
    return *name != '\0';
}

sc_code hdrblob_encode(const struct http_header *h, size_t n, char **blob, size_t *len)
{
    size_t size = 0;
    for (size_t i = 0; i < n; i++)
        if (hdrblob_keeps(h[i].name))
            size += strlen(h[i].name) + strlen(h[i].value) + 2;
    char *out = malloc(size ? size : 1);
    if (out == NULL)
        return SC_ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (!hdrblob_keeps(h[i].name))
            continue;
        size_t nl = strlen(h[i].name) + 1, vl = strlen(h[i].value) + 1;
        memcpy(out + at, h[i].name, nl);
        memcpy(out + at + nl, h[i].value, vl);
        at += nl + vl;
    }
    *blob = out;
    *len = size;
    return SC_OK;
}

bool hdrblob_next(const char *blob, size_t len, size_t *pos, const char **name, const char **value)
{
    if (*pos >= len)
        return false;
    const char *n = blob + *pos;
    const char *nend = memchr(n, '\0', len - *pos);
    if (nend == NULL)
        return false;
    const char *v = nend + 1;
    const char *vend = v < blob + len ? memchr(v, '\0', (size_t)(blob + len - v)) : NULL;
    if (vend == NULL)
        return false;
    *name = n;
    *value = v;
    *pos = (size_t)(vend + 1 - blob);
    return true;
}

const char *hdrblob_get(const char *blob, size_t len, const char *name)
{
    size_t pos = 0;
    const char *n, *v;
    while (hdrblob_next(blob, len, &pos, &n, &v))
        if (strcasecmp(n, name) == 0)
            return v;
    return NULL;
}
