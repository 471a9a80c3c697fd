/*
 * relay.h - one upstream response, handed to the clients reading it.
 *
 * The upstream thread produces (relay_set_head, relay_push, relay_finish);
 * HTTP workers consume through cursors (relay_read). A relay either keeps
 * every byte (a cache fill: late joiners read from offset 0 and the body is
 * stored when complete) or keeps only a window ahead of its slowest reader
 * (a pass-through: memory stays bounded and the upstream is paused when the
 * window is full, until a reader makes room).
 *
 * Waiting never blocks a thread: a reader with nothing to read is parked
 * through its waiter's park() (called with the relay locked, so no wake-up
 * can slip in between), and woken through wake() once there is progress.
 */
#ifndef GW_RELAY_H
#define GW_RELAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/sc_err.h"
#include "upstream.h"

typedef struct relay relay;

struct relay_waiter {
    void (*park)(void *arg); /* called with the relay locked: suspend, do not block */
    void (*wake)(void *arg); /* called unlocked, on the producing thread */
    void *arg;
    struct relay_waiter *next; /* the relay's list; owned by the relay while parked */
    bool parked;
};

/* A reader's position; attach before reading, detach when done. */
struct relay_cursor {
    uint64_t pos;
    uint64_t hold_at; /* bytes from here on wait for a good end (relay_hold_from) */
    struct relay_cursor *next;
};

/* The response head as the relay keeps it (owned by the relay). */
struct relay_head {
    long status;
    struct http_header *headers;
    size_t n_headers;
    int64_t content_length;
};

#define RELAY_AGAIN ((ssize_t)-1) /* parked: wake() follows */
#define RELAY_ERROR ((ssize_t)-2) /* the transfer failed: the body is incomplete */

/*
 * @brief Creates a relay holding one reference for the caller.
 * @param window bytes kept ahead of the slowest reader; 0 keeps everything.
 * @return the relay, or NULL when out of memory.
 */
relay *relay_new(size_t window);

void relay_ref(relay *r);
/* @brief Drops one reference; the last frees the relay. NULL is a no-op. */
void relay_unref(relay *r);

/* @brief The transfer to resume when a reader makes room. Borrowed: the caller keeps it
 * alive for as long as anyone reads the relay. */
void relay_set_upstream(relay *r, up_req *req);

/*
 * @brief Producer: records the head and wakes waiters. When keep_all, the
 * relay reserves content_length bytes up front.
 * @return SC_OK or SC_ENOMEM (the relay is failed).
 */
sc_code relay_set_head(relay *r, const struct http_head *head, bool keep_all);

/*
 * @brief Producer, before relay_set_head(): the body's last byte is given to no reader until
 * relay_finish() says the transfer is good (SC_OK). A body found wrong at its end (a digest
 * that does not match, bytes beyond the announced length) then reaches every reader as a
 * failed transfer, one byte short of its Content-Length, never as a complete one. Without a
 * Content-Length, the last byte received so far is held.
 */
void relay_hold_tail(relay *r);

/* @brief Producer: appends n bytes; false (nothing taken) when the window is full. */
bool relay_push(relay *r, const char *p, size_t n);

/* @brief Producer: the transfer ended with rc (SC_OK: complete). Wakes everyone. */
void relay_finish(relay *r, sc_code rc);

/*
 * @brief Consumer: returns the head, or NULL after parking w until it arrives.
 * After failure without a head, returns NULL and sets *failed.
 */
const struct relay_head *relay_head(relay *r, struct relay_waiter *w, bool *failed);

void relay_attach(relay *r, struct relay_cursor *c, uint64_t pos);
void relay_detach(relay *r, struct relay_cursor *c);

/*
 * @brief Consumer, after relay_attach(): c reads the byte at `at` and beyond only once the
 * transfer ended well, as relay_hold_tail() does for the last byte of every reader (a
 * range that ends inside the body but must not be served before the body is verified).
 */
void relay_hold_from(relay *r, struct relay_cursor *c, uint64_t at);

/*
 * @brief Consumer: copies up to max bytes at the cursor's position and
 * advances it, short of any byte held until the transfer ends well.
 * @return bytes copied (> 0), 0 at the end of a complete body, RELAY_AGAIN
 *         (parked), or RELAY_ERROR (transfer failed before this position).
 */
ssize_t relay_read(relay *r, struct relay_cursor *c, char *buf, size_t max, struct relay_waiter *w);

/*
 * @brief For a complete keep-all relay: the whole body, valid while a reference is held.
 * @return SC_OK, or SC_EBUSY if the body is not complete.
 */
sc_code relay_body(relay *r, const char **body, uint64_t *len);

/*
 * @brief Producer, once every byte was pushed and before relay_finish(): what a keep-all relay
 * holds, to check the body before the verdict. The bytes stay where they are until the relay
 * is freed, since nothing more is pushed.
 * @return SC_OK, or SC_EBUSY (not keep-all, or finished already).
 */
sc_code relay_kept(relay *r, const char **body, uint64_t *len);

/* @brief True once a keep-all relay holds every byte its head announced (and has not failed). */
bool relay_has_all(relay *r);

/* @brief True while a reader is attached (relay_attach() and not yet relay_detach()). */
bool relay_has_readers(relay *r);

/* @brief True if the byte at pos has arrived, or the transfer has ended. */
bool relay_reached(relay *r, uint64_t pos);

/* @brief Removes w if it is parked (a reader going away). */
void relay_unpark(relay *r, struct relay_waiter *w);

#endif
