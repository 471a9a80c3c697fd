/* s3_list.c - ListObjectsV2 through the upstream (see s3_list.h). */
#include "s3_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/uri.h"
#include "s3_xml.h"

#define KEY_MAX   1024
#define TOKEN_MAX 4096

/* Reads [t, te) as a size: decimal digits only (no sign, no space), within 64 bits. */
static bool parse_size(const char *t, const char *te, uint64_t *out)
{
    uint64_t v = 0;
    if (t == te)
        return false;
    for (; t < te; t++) {
        unsigned d = (unsigned)(*t - '0');
        if (*t < '0' || *t > '9' || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Appends one <Contents> element's key and size. */
static sc_code add_entry(struct s3_list_page *out, const char *p, const char *end)
{
    const char *t, *te;
    const char *q = p;
    if (s3_xml_element(&q, end, "Key", &t, &te) != SC_OK)
        return SC_EINVAL;
    struct s3_list_entry e = {0};
    sc_code rc = s3_xml_unescape(t, (size_t)(te - t), KEY_MAX, &e.key);
    if (rc != SC_OK)
        return rc;
    q = p;
    if (s3_xml_element(&q, end, "Size", &t, &te) == SC_OK && !parse_size(t, te, &e.size)) {
        free(e.key);
        return SC_EINVAL;
    }
    struct s3_list_entry *grown = realloc(out->entries, (out->n + 1) * sizeof(*grown));
    if (grown == NULL) {
        free(e.key);
        return SC_ENOMEM;
    }
    out->entries = grown;
    out->entries[out->n++] = e;
    return SC_OK;
}

sc_code s3_list_parse(const char *body, size_t len, struct s3_list_page *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = body, *end = body + len, *t, *te;
    sc_code rc;
    if (s3_xml_element(&p, end, "IsTruncated", &t, &te) == SC_OK)
        out->truncated = (size_t)(te - t) == 4 && memcmp(t, "true", 4) == 0;
    p = body;
    if (out->truncated) {
        rc = s3_xml_element(&p, end, "NextContinuationToken", &t, &te);
        if (rc == SC_OK)
            rc = s3_xml_unescape(t, (size_t)(te - t), TOKEN_MAX, &out->next_token);
        if (rc != SC_OK)
            goto fail;
    }
    p = body;
    while ((rc = s3_xml_element(&p, end, "Contents", &t, &te)) == SC_OK)
        if ((rc = add_entry(out, t, te)) != SC_OK)
            goto fail;
    if (rc == SC_ENOTFOUND)
        return SC_OK;
fail:
    s3_list_page_free(out);
    return rc == SC_ENOTFOUND ? SC_EINVAL : rc;
}

void s3_list_page_free(struct s3_list_page *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->entries[i].key);
    free(p->entries);
    free(p->next_token);
    free(p->error_code);
    memset(p, 0, sizeof(*p));
}
