/*
 * fuzz_s3_post.c - the key of a browser-form POST upload (proto/s3_post.h).
 *
 * Input: the Content-Type on the first line, then the body. Invariants: a
 * refusal leaves both results NULL; an accepted form yields a key of at most
 * 1024 bytes that holds no NUL, and an expanded key exactly when the key holds
 * "${filename}", itself at most 1024 bytes with no NUL.
 */
#include <stdbool.h>

#include "../../proto/s3_post.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *ct = fz_line(&f, NULL);
    char *body = fz_rest(&f, &len);
    char *key = NULL, *expanded = NULL;
    sc_code rc = s3_post_form_key(ct, body, len, &key, &expanded);
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL);
    if (rc != SC_OK) {
        FZ_CHECK(key == NULL && expanded == NULL);
    } else {
        FZ_CHECK(key != NULL && strlen(key) <= 1024);
        bool var = strstr(key, "${filename}") != NULL;
        FZ_CHECK(var == (expanded != NULL));
        if (expanded != NULL)
            FZ_CHECK(strlen(expanded) <= 1024);
    }
    free(key);
    free(expanded);
    free(ct);
    free(body);
    return 0;
}
