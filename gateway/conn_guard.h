/*
 * conn_guard.h - ends client connections that move their request or response too slowly
 * (slowloris, and its mirror, the slow reader).
 *
 * --connection-timeout is an idle timeout: every byte restarts it, so a client that sends one
 * header byte a second, or reads one response byte a second, holds a connection, and one of
 * --max-connections, for ever. The guard bounds what an idle timeout cannot:
 *   - a request head (request line and headers) must be whole within head_seconds of its
 *     first byte (the wait before that byte is idle time, --connection-timeout's business);
 *   - a request body must bring at least min_rate bytes a second, averaged over each window of
 *     head_seconds, not counting time the gateway itself holds the connection (suspended while
 *     the upstream catches up, or with bytes the client sent still unread in the socket);
 *   - a response must be taken at min_rate bytes a second too, averaged over each window of
 *     send_window seconds (--connection-timeout), counting only time the client has bytes of it
 *     waiting in the socket (time the gateway waits for the upstream is not the client's).
 * A watchdog thread looks at every connection twice a second and ends an overdue one with
 * shutdown(2) on its socket (SO_LINGER 0 first, so the close is a reset): libmicrohttpd then
 * reads the end of the input, or fails to write, and closes the connection itself. No 408 is
 * sent: the watchdog never writes to a socket libmicrohttpd owns, as nginx and Go also just
 * close a connection whose head timed out.
 *
 * Why no other connection's socket can be shut down: the watchdog shuts a socket down only
 * with the guard locked, and a connection leaves the guard (conn_guard_close, from
 * libmicrohttpd's CLOSED notification, which comes before it closes the descriptor) with the
 * guard locked, so a descriptor in the guard is always still that connection's.
 *
 * The guard knows sockets, not HTTP: server.c tells it where each connection's request is,
 * without taking the guard's lock (a request would otherwise take it three times, and every
 * HTTP thread would meet the others on it): the request's thread posts the phase to the
 * connection's entry (conn_guard_post), and the watchdog takes the latest post at its next
 * look (conn_guard_catch_up) as if the phase had been set then.
 * Every function below accepts a NULL guard or connection (no guard configured, or no memory
 * for the entry: that connection is then only under --connection-timeout) and does nothing.
 */
#ifndef GW_CONN_GUARD_H
#define GW_CONN_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/sc_err.h"

typedef struct conn_guard conn_guard;
struct guard_conn; /* one client connection in the guard */

/*
 * @brief Starts the watchdog.
 * @param[in] head_seconds bound on a request head, and the body rate's window; 0: no bound on
 *            heads (the body window is then GUARD_DEFAULT_WINDOW seconds).
 * @param[in] min_rate body bytes a second, either way; 0: no bound on bodies.
 * @param[in] send_window seconds over which a response's rate is averaged.
 * @param[out] out the guard, or NULL when both bounds are off (nothing to watch).
 * @return SC_OK, SC_ENOMEM, or SC_EIO (no thread).
 */
sc_code conn_guard_start(unsigned head_seconds, uint64_t min_rate, unsigned send_window,
                         conn_guard **out);

/* @brief Stops the watchdog and frees the guard. Call after the HTTP daemon has stopped. */
void conn_guard_stop(conn_guard *cg);

/*
 * @brief A connection was accepted on socket fd: its first request's head is awaited.
 * @return its entry, for the calls below and conn_guard_close(); NULL without memory.
 */
struct guard_conn *conn_guard_open(conn_guard *cg, int fd);

/* @brief The connection is being closed (before fd is): frees its entry. */
void conn_guard_close(conn_guard *cg, struct guard_conn *c);

/* @brief The request's head is in; a body follows when body is true (it is then timed). */
void conn_guard_head_in(conn_guard *cg, struct guard_conn *c, bool body);

/* @brief The request's body is all in: the response is timed from now on. */
void conn_guard_body_in(conn_guard *cg, struct guard_conn *c);

/* @brief The request is finished: the next one's head is awaited (keep-alive). */
void conn_guard_request_done(conn_guard *cg, struct guard_conn *c);

/*
 * @brief The gateway suspends (held true) or resumes (false) the connection: time it spends
 * suspended does not count against the client's body rate. Any thread.
 */
void conn_guard_hold(conn_guard *cg, struct guard_conn *c, bool held);

/* What the guard ended connections for; the number of each so far. */
enum guard_verdict { GUARD_OK, GUARD_SLOW_HEAD, GUARD_SLOW_BODY, GUARD_SLOW_READER };

/* @brief Connections ended so far for verdict (not GUARD_OK). */
uint64_t conn_guard_count(conn_guard *cg, enum guard_verdict verdict);

/* ---- the decision, apart from sockets and threads (unit-tested) ------------------------- */

#define GUARD_DEFAULT_WINDOW 20.0

enum guard_phase {
    GUARD_IDLE, /* between requests: waiting for the first byte of a head */
    GUARD_HEAD, /* a head has begun and is not whole yet */
    GUARD_BODY, /* the head is in, the body is arriving */
    GUARD_BUSY, /* the request is in: the response is timed while the client holds it up */
};

struct guard_limits {
    double head_seconds; /* 0: heads are not bounded */
    double min_rate;     /* bytes a second; 0: bodies are not bounded */
    double window;       /* seconds over which the request body rate is averaged */
    double send_window;  /* seconds over which the response rate is averaged */
};

/* What the watchdog knows of a connection between two looks. */
struct guard_track {
    enum guard_phase phase;
    bool have_mark; /* mark is set for this phase */
    uint64_t mark;  /* bytes received (sent, for a response) when the idle time or window began */
    double since;   /* head: when it began; bodies: when the connection was last looked at */
    double active;  /* bodies: seconds of the window the gateway waited on the client */
};

/* One look at a connection. */
struct guard_sample {
    double now;      /* seconds, monotonic */
    bool have_bytes; /* bytes and acked are known (TCP_INFO) */
    uint64_t bytes;  /* bytes received on the connection so far */
    uint64_t acked;  /* bytes sent on it that the client has acknowledged */
    bool unread;     /* bytes wait in the socket that the gateway has not read */
    bool unsent;     /* bytes wait in the socket that the client has not taken */
    bool held;       /* the gateway suspended the connection since the last look */
};

/*
 * A connection's posted phase: a count of posts << 2 | the phase, written by the request's
 * thread alone, read by the watchdog. Starts at 0 (no post, GUARD_IDLE).
 */
#define GUARD_POST_PHASE(posted) ((enum guard_phase)((posted)&3u))

/* @brief The posted word after posting phase (the count moves on even if the phase is the same). */
unsigned conn_guard_post(unsigned posted, enum guard_phase phase);

/*
 * @brief Takes what was posted since the last look (*seen): the latest posted phase, its mark
 * unset, as a set of the phase would have left t. Nothing changes if nothing was posted.
 * @return true if t changed.
 */
bool conn_guard_catch_up(struct guard_track *t, unsigned *seen, unsigned posted);

/*
 * @brief Moves t on by one look s at the connection and says whether to end it.
 * A head is overdue head_seconds after its first byte was seen; a window of a request body
 * (window seconds) or of a response (send_window seconds), counting only the time the client
 * was the one waited for, that moved fewer than min_rate bytes a second ends the connection;
 * otherwise a new window begins.
 */
enum guard_verdict conn_guard_judge(struct guard_track *t, const struct guard_sample *s,
                                    const struct guard_limits *lim);

#endif
