/* s3_delete.c - the keys of a DeleteObjects request body (see s3_delete.h). */
#include "s3_delete.h"

#include "s3_xml.h"

#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024

sc_code s3_delete_keys_parse(const char *body, size_t len, struct s3_delete_keys *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = body, *end = body + len;
    sc_code rc = SC_OK;
    const char *text, *close;
    while (rc == SC_OK && (rc = s3_xml_element(&p, end, "Key", &text, &close)) == SC_OK) {
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
        rc = s3_xml_unescape(text, (size_t)(close - text), KEY_MAX, &out->keys[out->n]);
        if (rc == SC_OK)
            out->n++;
    }
    if (rc == SC_ENOTFOUND)
        rc = SC_OK; /* no more keys */
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
