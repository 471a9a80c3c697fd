/*
 * s3_list.h - a ListObjectsV2 answer, parsed (pure). The request that fetches a page
 * is upstream/list.h; manifests that name a prefix instead of keys use both.
 */
#ifndef GW_S3_LIST_H
#define GW_S3_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

#define S3_LIST_MAX_BODY (16u * 1024u * 1024u) /* a page of 1000 keys is far smaller */

struct s3_list_entry {
    char *key; /* decoded, malloc'd */
    uint64_t size;
};

struct s3_list_page {
    struct s3_list_entry *entries;
    size_t n;
    bool truncated;
    char *next_token; /* NextContinuationToken when truncated, malloc'd */
    long status;      /* the upstream's HTTP status (up_list_page only) */
    char *error_code; /* its S3 error <Code> when status is not 200, malloc'd or NULL */
};

/*
 * @brief Parses a ListObjectsV2 response body.
 * @param[out] out the page, owned by the caller; release with s3_list_page_free().
 * @return SC_OK, SC_EINVAL (malformed), SC_ENOMEM.
 */
sc_code s3_list_parse(const char *body, size_t len, struct s3_list_page *out);

/* @brief Frees everything the page holds. Safe on a zeroed page. */
void s3_list_page_free(struct s3_list_page *p);

#endif
