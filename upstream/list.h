/*
 * list.h - listing a prefix of a bucket through the upstream (ListObjectsV2), for
 * manifests that name a prefix instead of keys.
 *
 * up_list_page() is blocking: it waits for the upstream thread to answer, so only a
 * thread of the gateway's own (the prefetcher) may call it, never an HTTP worker.
 */
#ifndef UP_LIST_H
#define UP_LIST_H

#include "../proto/s3_list.h"
#include "upstream.h"

/*
 * @brief Fetches one page of keys under prefix, starting at token (NULL: the first page).
 * @param[out] out the page; when out->status is not 200 it holds no entries.
 * @return SC_OK (see out->status), SC_EUPSTREAM (no answer), SC_EINVAL (malformed
 *         answer), SC_ETOOBIG, SC_ENOMEM, SC_ECANCELED (shutting down).
 */
sc_code up_list_page(upstream *up, const char *bucket, const char *prefix, const char *token,
                     struct s3_list_page *out);

#endif
