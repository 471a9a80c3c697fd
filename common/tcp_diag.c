/*
 * tcp_diag.c - a TCP connection's queues by its ends (see tcp_diag.h): one
 * SOCK_DIAG_BY_FAMILY request for that exact socket on a NETLINK_SOCK_DIAG socket, which
 * answers an inet_diag_msg (idiag_wqueue: sent and not acknowledged; idiag_rqueue: received
 * and not read) or an error (ENOENT when there is no such socket). The kernel looks the
 * socket up as it would an arriving segment's, so without a connection it answers the
 * listener of the local end, if any: an answer is taken only for the connection asked. It
 * needs no privilege.
 */
#include "tcp_diag.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* An IPv4-mapped IPv6 address as the IPv4 one it maps (the kernel keeps such a socket under
 * its IPv4 ends); anything else as it is. */
static void unmap(struct sockaddr_storage *ss)
{
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
        return;
    struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = s6->sin6_port};
    memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, &s4, sizeof(s4));
}

sc_code sc_tcp_ends_of(int fd, struct sc_tcp_ends *out)
{
    socklen_t ll = sizeof(out->local), rl = sizeof(out->remote);
    memset(out, 0, sizeof(*out));
    if (getsockname(fd, (struct sockaddr *)&out->local, &ll) != 0 ||
        getpeername(fd, (struct sockaddr *)&out->remote, &rl) != 0)
        return SC_EINVAL;
    unmap(&out->local);
    unmap(&out->remote);
    if (out->local.ss_family != out->remote.ss_family ||
        (out->local.ss_family != AF_INET && out->local.ss_family != AF_INET6))
        return SC_EINVAL;
    return SC_OK;
}

struct sc_tcp_ends sc_tcp_ends_peer(const struct sc_tcp_ends *e)
{
    return (struct sc_tcp_ends){.local = e->remote, .remote = e->local};
}

/* An end's port and address as inet_diag_sockid holds them (network byte order). */
static void put_end(const struct sockaddr_storage *ss, __be16 *port, __be32 addr[4])
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        *port = s4->sin_port;
        addr[0] = s4->sin_addr.s_addr;
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        *port = s6->sin6_port;
        memcpy(addr, &s6->sin6_addr, 16);
    }
}

int sc_tcp_diag_open(void)
{
    return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
}

static uint64_t cookie_of(const struct inet_diag_msg *m)
{
    return (uint64_t)m->id.idiag_cookie[0] | (uint64_t)m->id.idiag_cookie[1] << 32;
}

sc_code sc_tcp_look(int diag, const struct sc_tcp_ends *e, struct sc_tcp_sock *out)
{
    static atomic_uint seq;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req = {
        .nlh = {.nlmsg_len = sizeof(req),
                .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST,
                .nlmsg_seq = atomic_fetch_add(&seq, 1) + 1},
        .r = {.sdiag_family = (__u8)e->local.ss_family,
              .sdiag_protocol = IPPROTO_TCP,
              .idiag_states = ~0u,
              .id = {.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}},
    };
    /* (the id's source is the socket's own end: the kernel looks it up as a packet's
     * destination) */
    put_end(&e->local, &req.r.id.idiag_sport, req.r.id.idiag_src);
    put_end(&e->remote, &req.r.id.idiag_dport, req.r.id.idiag_dst);
    union {
        struct nlmsghdr nlh;
        char bytes[8192]; /* an inet_diag_msg and a few attributes */
    } ans;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(diag, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) !=
        (ssize_t)sizeof(req))
        return SC_EIO;
    ssize_t n;
    do { /* an answer to an earlier question that was given up on is skipped */
        n = recv(diag, &ans, sizeof(ans), 0);
    } while (n >= (ssize_t)sizeof(struct nlmsghdr) && ans.nlh.nlmsg_seq != req.nlh.nlmsg_seq);
    if (n < (ssize_t)sizeof(struct nlmsghdr) || !NLMSG_OK(&ans.nlh, (size_t)n))
        return SC_EIO;
    if (ans.nlh.nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *err = NLMSG_DATA(&ans.nlh);
        bool absent = ans.nlh.nlmsg_len >= NLMSG_LENGTH(sizeof(*err)) && err->error == -ENOENT;
        return absent ? SC_ENOTFOUND : SC_EIO;
    }
    if (ans.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        ans.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
        return SC_EIO;
    const struct inet_diag_msg *m = NLMSG_DATA(&ans.nlh);
    /* A lookup that finds no connection falls back to a listener on the local end (whose
     * queues are its backlog): that is no such socket. */
    if (m->idiag_state == TCP_LISTEN || m->id.idiag_dport != req.r.id.idiag_dport ||
        memcmp(m->id.idiag_dst, req.r.id.idiag_dst, sizeof(m->id.idiag_dst)) != 0)
        return SC_ENOTFOUND;
    out->unacked = m->idiag_wqueue;
    out->unread = m->idiag_rqueue;
    out->state = m->idiag_state;
    out->cookie = cookie_of(m);
    return SC_OK;
}

int sc_tcp_destroy_open(void)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
    struct sockaddr_nl nl = {.nl_family = AF_NETLINK,
                             .nl_groups = 1u << (SKNLGRP_INET_TCP_DESTROY - 1) |
                                          1u << (SKNLGRP_INET6_TCP_DESTROY - 1)};
    int buf = 4 << 20;
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&nl, sizeof(nl)) != 0) {
        close(fd);
        return -1;
    }
    /* (as much room as allowed: past it the kernel drops events) */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) != 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    return fd;
}

sc_code sc_tcp_destroyed(int fd, uint64_t *cookies, size_t max, size_t *n)
{
    union {
        struct nlmsghdr nlh;
        char bytes[16384];
    } ans;
    *n = 0;
    while (*n < max) {
        ssize_t got = recv(fd, &ans, sizeof(ans), 0);
        if (got < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? SC_OK
                   : errno == ENOBUFS                      ? SC_EFULL
                                                           : SC_EIO;
        size_t left = (size_t)got;
        for (struct nlmsghdr *h = &ans.nlh; NLMSG_OK(h, left) && *n < max; h = NLMSG_NEXT(h, left))
            if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
                h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                cookies[(*n)++] = cookie_of(NLMSG_DATA(h));
    }
    return SC_OK;
}
