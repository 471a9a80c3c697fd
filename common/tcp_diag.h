/*
 * tcp_diag.h - the kernel's queues of a TCP connection, by its two ends (sock_diag(7)),
 * looked up in this network namespace; for a sender that must know when the bytes it handed
 * the kernel by reference (sendfile(2)) have been read by the receiving process.
 */
#ifndef SC_TCP_DIAG_H
#define SC_TCP_DIAG_H

#include <stdint.h>
#include <sys/socket.h>

#include "sc_err.h"

/* One end of each side of a connection (IPv4-mapped IPv6 addresses are kept as IPv4). */
struct sc_tcp_ends {
    struct sockaddr_storage local, remote;
};

/*
 * @brief The two ends of the connected TCP socket fd.
 * @return SC_OK, SC_EINVAL (not a connected IPv4 or IPv6 socket).
 */
sc_code sc_tcp_ends_of(int fd, struct sc_tcp_ends *out);

/* @brief The same connection seen from the other side (local and remote swapped). */
struct sc_tcp_ends sc_tcp_ends_peer(const struct sc_tcp_ends *e);

/*
 * @brief Opens a sock_diag socket for sc_tcp_look(), used by one thread at a time.
 * @return its descriptor (close it with close(2)), or -1 (errno set).
 */
int sc_tcp_diag_open(void);

/* What sc_tcp_look() finds of a socket. */
struct sc_tcp_sock {
    uint32_t unacked; /* bytes it sent that its peer has not acknowledged yet */
    uint32_t unread;  /* bytes it received that its process has not read yet */
    uint8_t state;    /* TCP_ESTABLISHED ... (netinet/tcp.h); TCP_TIME_WAIT: only the
                       * connection's remains, not its socket (which may still be open,
                       * and in no table: TCP_CLOSE, its received bytes readable) */
    uint64_t cookie;  /* the socket's cookie (as sc_tcp_destroyed() names it) */
};

/*
 * @brief Looks up the TCP socket of this network namespace whose own end is e->local and whose
 * peer is e->remote, and reads its queues, state and cookie: one netlink round trip on diag
 * (sc_tcp_diag_open).
 * @return SC_OK, SC_ENOTFOUND (no such socket here: closed, or on another host or in another
 *         network namespace), SC_EIO (sock_diag failed or is not available).
 */
sc_code sc_tcp_look(int diag, const struct sc_tcp_ends *e, struct sc_tcp_sock *out);

/*
 * @brief Opens a non-blocking sock_diag socket that receives the cookie of every TCP socket of
 * this network namespace as it is destroyed (its last reference gone: no process can read it
 * any more), for sc_tcp_destroyed(). A socket that is in no table (sc_tcp_look() answers
 * SC_ENOTFOUND) may still be open, with bytes to read: only this tells that it is gone.
 * @return its descriptor, or -1 (errno set).
 */
int sc_tcp_destroy_open(void);

/*
 * @brief Reads the destroyed sockets' cookies waiting on fd (sc_tcp_destroy_open), up to max.
 * @return SC_OK (*n cookies, 0 when none waits), SC_EFULL (the kernel dropped some: any socket
 *         may have been destroyed unseen), SC_EIO.
 */
sc_code sc_tcp_destroyed(int fd, uint64_t *cookies, size_t max, size_t *n);

#endif
