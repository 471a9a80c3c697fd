/* http_header.c - name/value headers (see http_header.h). */
#include "http_header.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *http_header_get(const struct http_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(h[i].name, name) == 0)
            return h[i].value;
    return NULL;
}

sc_code http_headers_copy(const struct http_header *h, size_t n, struct http_header **out,
                          size_t *n_out)
{
    *n_out = 0;
    *out = calloc(n + 1, sizeof(**out));
    if (*out == NULL)
        return SC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        char *name = strdup(h[i].name);
        char *value = strdup(h[i].value);
        (*out)[(*n_out)++] = (struct http_header){name, value};
        if (name == NULL || value == NULL)
            return SC_ENOMEM;
    }
    return SC_OK;
}

void http_headers_free(struct http_header *h, size_t n)
{
    for (size_t i = 0; h != NULL && i < n; i++) {
        free((char *)h[i].name);
        free((char *)h[i].value);
    }
    free(h);
}
