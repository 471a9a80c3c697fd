/*
 * proxy_int.h - inside the pass-through (proxy.c): the transfer the request and the upstream
 * thread share, and what its write changes in the cache (proxy_write.c). Not for other files.
 *
 * The lock (mu) guards the fields marked so; the others belong to one side: the request's
 * HTTP thread until the transfer is submitted, the upstream thread's callbacks after.
 */
#ifndef GW_PROXY_INT_H
#define GW_PROXY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../fleet/fleet.h"
#include "../proto/awschunked.h"
#include "../proto/digest.h"
#include "../store/store.h"
#include "../upstream/fill.h"
#include "gw.h"

/* One pass-through transfer, shared by the request and the upstream thread. */
struct upload {
    atomic_int refs;
    pthread_mutex_t mu;
    relay *relay;     /* the response; the upload holds one reference */
    up_req *req;      /* NULL until the request is forwarded */
    struct gw_req *q; /* NULL once the request is gone */
    char *buf;        /* the request body pipe */
    size_t len;
    bool eof;         /* the whole request body is in the pipe, and well-formed */
    bool finished;    /* the transfer ended: further body bytes are dropped */
    bool up_paused;   /* read_body found nothing it may hand over */
    bool conn_parked; /* the connection waits for room in the pipe */
    bool chunked;     /* aws-chunked framing to remove */
    bool unforwarded; /* the upstream request could not be made: the body is drained */
    struct awschunked dec;
    digest *sum;               /* of the decoded payload, for its trailer; NULL: unchecked */
    const char *trailer;       /* the trailer that carries the checksum (x-amz-trailer) */
    sc_code error;             /* malformed body */
    enum s3_invalidate writes; /* what the request writes (write_begin) */
    bool noted;                /* write_note() ran (request side) */
    bool writing;              /* the write is noted in flight until write_end() (mu) */
    bool submitted;            /* handed to the upstream module */
    long status;               /* the upstream's answer, 0 until its head is in (mu) */
    fill_table *fills;         /* where it is noted */
    store *st;
    upstream *up;     /* sends the peers' invalidations (write_end) */
    fleet *fleet;     /* the fleet, or NULL */
    char **peer_keys; /* the keys dropped here, for the peers to drop too (mu) */
    size_t n_peer_keys;
    bool peer_bucket; /* the whole bucket was dropped here (mu) */
    /* write_end() handed the keys noted so far to the peers (mu): a key noted after that (a
     * DeleteObjects answer read after its head ended the write) is told on its own. */
    bool peers_told;
    char *write_bucket, *write_key;
    bool delete_objects;  /* DeleteObjects: its answer lists what the upstream deleted */
    bool holding;         /* the answer is kept from the client until read (upstream thread) */
    struct sc_buf answer; /* what is held, up to S3_DELETE_MAX_ANSWER bytes */
    char *tee;            /* the body's first tee_cap bytes, to learn which keys it writes */
    size_t tee_len, tee_cap;
    bool tee_overflow; /* the body was longer than tee_cap */
    int64_t announced; /* the body length the upstream is told */
    int64_t taken;     /* body bytes put into the pipe so far (decoded) */
    char *checked; /* bucket, NUL, key of a whole-object answer whose body is checked; or NULL */
    struct body_check check; /* upstream thread */
};

/*
 * @brief Prepares for a write about to be forwarded. A write on a key is noted now (no fill
 * of it is stored until proxy_write_end) and its cached copy dropped. A write whose keys are
 * in its body is noted once the body is complete (proxy_write_keys_in_body), since the
 * upstream cannot commit it sooner. Copies what it keeps of q into u.
 * @return SC_OK, SC_ENOMEM (the write must not be forwarded).
 */
sc_code proxy_write_begin(struct gw_req *q, struct upload *u, bool body_pending);

/*
 * @brief For a write whose keys are in its body (DeleteObjects, a form POST, a write that
 * names none), once the body is complete: notes the write if not yet, and drops the cached
 * copies of the keys the body names (u->tee), or the whole bucket's.
 */
void proxy_write_keys_in_body(struct gw_req *q, struct upload *u);

/*
 * @brief Drops the keys a DeleteObjects answer held in u->answer lists (upstream thread): an
 * upstream may read a key of the body differently from the gateway.
 */
void proxy_write_drop_listed(struct upload *u);

/*
 * @brief Ends what proxy_write_begin() began, once (any thread; later calls do nothing): the
 * fill table learns the write is over, and on a fleet the live peers are told what it dropped.
 */
void proxy_write_end(struct upload *u);

/* @brief How much of the body a write whose keys are in its body keeps to read them (0: none). */
size_t proxy_write_tee_cap(const struct gw_req *q);

/* @brief Frees what proxy_write_begin() kept and the drops noted for the peers (u is being freed).
 */
void proxy_write_release(struct upload *u);

#endif
