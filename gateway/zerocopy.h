/*
 * zerocopy.h - hits sent from the store's data file with sendfile(2) instead of from its map
 * (--zero-copy; off by default: over loopback, the only place it can be made safe, below, it
 * cost more CPU per hit than the copy, docs/operations.md).
 *
 * A response whose body is one contiguous span of the map (a whole object of one chunk, a
 * range inside one chunk, a range inside one block) is answered with an fd response on a
 * dup(2) of the data file at the span's offset (store_obj_file_span): libmicrohttpd 0.9.75
 * then sends it with sendfile(2) in 128 KiB calls (no TLS here; it falls back to pread(2) on
 * a sendfile error, and reads offsets past 2 GiB with sendfile64). The gateway copies nothing.
 *
 * The read view must outlive more than the response. sendfile(2) queues references to the
 * page cache's pages, not their bytes: they are read when the segment is sent and, when the
 * receiver is a process on this host (loopback, a veth), only when that process reads its
 * socket, however long after the call returned and after the peer acknowledged them. LMDB
 * reuses freed pages in place, so once the view closes a writer may rewrite those pages and
 * the client would read another version's or another object's bytes. So the view is held
 * until the receiving process has read every byte: at the request's end (its cleanup) it goes
 * to a drain, whose thread closes it once the gateway's socket has nothing unacknowledged and
 * the client's socket nothing unread (tcp_diag.h), or the client's socket has been destroyed
 * (sc_tcp_destroyed: a socket missing from the tables may still be open with its bytes unread).
 * That can be seen only for a client in this network namespace (a sidecar's trainer, a client
 * on the node's own network): for any other the body is sent from the map as before (copied),
 * because a client on another host cannot be told from one in a pod on this host, whose unread
 * bytes this namespace cannot see.
 *
 * "Read" means copied out of the socket: a client that moves its socket's bytes on with
 * splice(2) (a proxy in this namespace splicing, as HAProxy can) keeps the pages referenced
 * after its socket is empty, which this cannot see.
 *
 * At most GW_ZC_HELD_MAX views are held past their requests: beyond that (clients that do
 * not read), hits are copied again until some are read. A held view holds a reader slot and
 * keeps LMDB from reusing the pages freed since it opened, as a slow response always did.
 */
#ifndef GW_ZEROCOPY_H
#define GW_ZEROCOPY_H

#include <microhttpd.h>
#include <stdint.h>

#include "../store/store.h"
#include "gw.h"

/* Zero-copy views (held after their requests ended, or in requests still sending) at most;
 * then hits are copied. */
#define GW_ZC_HELD_MAX 128
/* Bodies shorter than this are copied: a sendfile costs two socket lookups besides. */
#define GW_ZC_MIN_BYTES (64u * 1024u)

/*
 * @brief Starts the drain (g->zc) with --zero-copy, unless libmicrohttpd cannot send files
 * (g->zc stays NULL: every hit is copied).
 * @return SC_OK, SC_ENOMEM, SC_EIO (no thread).
 */
sc_code gw_zc_start(struct gw *g);

/* @brief Waits up to GW_ZC_STOP_SECONDS (2 s) for the held views' bytes to be read, closes every
 * held view and stops the drain. After the HTTP daemons have stopped, before the store closes. */
void gw_zc_stop(struct gw *g);

/*
 * @brief A response whose body is the len bytes at data, inside view's map, sent from the
 * data file. On success q takes over view (held until its bytes are read, as above) and the
 * hit is counted as zero-copy; NULL when the response cannot be sent so (off, too short, too
 * many held, a client this namespace cannot watch, no memory): the caller still owns view and
 * sends the body its usual way.
 */
struct MHD_Response *gw_zc_response(struct gw_req *q, store_obj *view, const void *data,
                                    uint64_t len);

/* @brief Views held now, after their requests ended, for bytes their clients have not read. */
unsigned gw_zc_held(const struct gw *g);

#endif
