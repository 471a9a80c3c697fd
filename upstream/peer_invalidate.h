/*
 * peer_invalidate.h - telling the other gateways of the fleet that an object changed.
 *
 * A write through one gateway (PUT, DELETE, DeleteObjects, CopyObject, a completed multipart
 * upload) drops that gateway's cached copy; the owner of the key, and askers keeping copies
 * (--fleet-copy hot|all), hold theirs on other nodes. When the write is over at the bucket,
 * its gateway sends every live peer a fleet-signed
 *
 *   POST /_s3cached/fleet/invalidate?bucket=B&key=K     (no body; without key: the bucket)
 *
 * which the peer answers 204 once its fills of the key will not be stored and its copy is
 * gone (gateway/admin/admin.c). The request is peer-only (up_request.peer_only): it never
 * reaches the bucket. Fire and forget: a peer that does not answer is marked down by the
 * upstream module as for any peer request, and keeps its copy (docs/fleet.md, "Coherence").
 */
#ifndef GW_PEER_INVALIDATE_H
#define GW_PEER_INVALIDATE_H

#include "../common/sc_err.h"
#include "../fleet/fleet.h"
#include "upstream.h"

/* The path of the invalidation, under the admin prefix (bucket names cannot start with '_'). */
#define PEER_INVALIDATE_PATH "/_s3cached/fleet/invalidate"

/*
 * @brief Sends the invalidation of (bucket, key) (key NULL: every cached object of bucket)
 * to every live peer but this gateway; returns once they are queued. Any thread, the
 * upstream thread included (a write's end). f NULL, or no other live peer: nothing is sent.
 * @return SC_OK (queued to every live peer), SC_ENOMEM, SC_ECANCELED (shutting down); the
 *         outcome of each request is logged, not returned.
 */
sc_code peer_invalidate(upstream *up, fleet *f, const char *bucket, const char *key);

#endif
