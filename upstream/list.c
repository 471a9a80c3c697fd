/*
 * list.c - one page of ListObjectsV2 from the upstream, waited for (see list.h); the
 * answer is parsed by proto/s3_list.c.
 */
#include "list.h"

#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/uri.h"
#include "../proto/s3_xml.h"

/* The query string, with the values encoded as SigV4 canonicalizes them. */
static sc_code build_query(const char *prefix, const char *token, char **out)
{
    char *p = NULL, *t = NULL;
    sc_code rc = uri_encode(prefix, strlen(prefix), false, &p);
    if (rc == SC_OK && token)
        rc = uri_encode(token, strlen(token), false, &t);
    if (rc == SC_OK) {
        size_t len = strlen(p) + (t ? strlen(t) : 0) + 64;
        *out = malloc(len);
        if (*out == NULL)
            rc = SC_ENOMEM;
        else if (t)
            snprintf(*out, len, "continuation-token=%s&list-type=2&prefix=%s", t, p);
        else
            snprintf(*out, len, "list-type=2&prefix=%s", p);
    }
    free(p);
    free(t);
    return rc;
}

/* Takes the <Code> of an S3 error body, for the caller's message. */
static void note_error(const struct sc_buf *body, struct s3_list_page *out)
{
    const char *p = body->data, *t, *te;
    if (p && s3_xml_element(&p, body->data + body->len, "Code", &t, &te) == SC_OK)
        s3_xml_unescape(t, (size_t)(te - t), 128, &out->error_code);
}

sc_code up_list_page(upstream *up, const char *bucket, const char *prefix, const char *token,
                     struct s3_list_page *out)
{
    struct sc_buf body = {.max = S3_LIST_MAX_BODY};
    char *query = NULL;
    long status = 0;
    memset(out, 0, sizeof(*out));
    sc_code rc = build_query(prefix, token, &query);
    if (rc != SC_OK)
        return rc;
    struct up_request req = {.method = "GET",
                             .bucket = bucket,
                             .key = NULL,
                             .query = query,
                             .body_length = -1,
                             .idempotent = true};
    rc = up_call(up, &req, NULL, &status, &body);
    if (rc == SC_OK && status == 200)
        rc = s3_list_parse(body.data ? body.data : "", body.len, out);
    else if (rc == SC_OK)
        note_error(&body, out);
    out->status = status;
    sc_buf_free(&body);
    free(query);
    return rc;
}
