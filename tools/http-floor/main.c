/*
 * http-floor - the least CPU a server can spend on a hit on this machine (bench/floor.sh).
 *
 * One thread, one epoll loop, no parsing beyond finding each request's end: every request
 * on every connection gets the same file as a 200 with a Content-Length. It is the floor
 * under any HTTP cache, nginx's and the gateway's alike, for the two ways a body can go out:
 *
 *   copy       the body sent from a read-only mmap of the file with sendmsg(2), header and
 *              body in one call (what the gateway does from LMDB's map);
 *   sendfile   the header sent with MSG_MORE, then the body with sendfile(2), CHUNK bytes a
 *              call (nginx's sendfile_max_chunk is 2 MiB; libmicrohttpd's is 128 KiB).
 *
 * Every connection gets TCP_NODELAY and, with sendfile, the header goes with MSG_MORE (what
 * libmicrohttpd and nginx do, near enough); "nagle" leaves Nagle's algorithm on and sends
 * the header alone, to show how far the sender's share of a loopback transfer moves with
 * the socket's flags alone (docs/benchmarks.md, the floor).
 *
 * Not a server to deploy: it checks nothing, answers every request alike and keeps at most
 * 4 KiB of a request. Usage: http-floor PORT FILE copy|sendfile [CHUNK [nagle]]
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_EVENTS 64
#define REQ_MAX    4096

struct body {
    int fd;
    const char *map;
    size_t len;
    char head[128];
    size_t head_len;
    bool use_sendfile;
    size_t chunk;
    bool nagle; /* no TCP_NODELAY, no MSG_MORE on the header */
};

struct conn {
    int fd;
    char in[REQ_MAX];
    size_t in_len;
    unsigned queued; /* requests read and not answered yet */
    size_t sent;     /* bytes of the current answer sent: head, then body */
    bool sending;
};

/* Counts the complete requests at the front of c->in and drops them. */
static void take_requests(struct conn *c)
{
    char *end;
    while ((end = memmem(c->in, c->in_len, "\r\n\r\n", 4)) != NULL) {
        size_t used = (size_t)(end - c->in) + 4;
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        c->queued++;
    }
}

/* One call's worth of the current answer; returns the bytes sent, -1 on EAGAIN or error. */
static ssize_t send_some(const struct body *b, struct conn *c)
{
    if (!b->use_sendfile) {
        struct iovec iov[2];
        int n = 0;
        if (c->sent < b->head_len)
            iov[n++] = (struct iovec){(char *)b->head + c->sent, b->head_len - c->sent};
        size_t body_off = c->sent < b->head_len ? 0 : c->sent - b->head_len;
        iov[n++] = (struct iovec){(char *)b->map + body_off, b->len - body_off};
        return sendmsg(c->fd, &(struct msghdr){.msg_iov = iov, .msg_iovlen = (size_t)n},
                       MSG_NOSIGNAL);
    }
    if (c->sent < b->head_len)
        return send(c->fd, b->head + c->sent, b->head_len - c->sent,
                    MSG_NOSIGNAL | (b->nagle ? 0 : MSG_MORE));
    off_t off = (off_t)(c->sent - b->head_len);
    size_t left = b->len - (size_t)off;
    return sendfile(c->fd, b->fd, &off, left < b->chunk ? left : b->chunk);
}

/* Sends queued answers until the socket is full; false when the connection must close. */
static bool answer(const struct body *b, struct conn *c)
{
    while (c->queued > 0) {
        ssize_t n = send_some(b, c);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK;
        c->sent += (size_t)n;
        if (c->sent == b->head_len + b->len) {
            c->sent = 0;
            c->queued--;
        }
    }
    return true;
}

/* Reads what the client sent; false when the connection must close. */
static bool read_requests(struct conn *c)
{
    for (;;) {
        if (c->in_len == REQ_MAX)
            return false; /* a request longer than this server keeps */
        ssize_t n = recv(c->fd, c->in + c->in_len, REQ_MAX - c->in_len, 0);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK;
        c->in_len += (size_t)n;
        take_requests(c);
    }
}

static void accept_all(int ep, int lfd, bool nagle)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int one = 1;
        if (!nagle)
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            free(c);
        }
    }
}

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 1024) != 0) {
        perror("http-floor: listen");
        exit(1);
    }
    return fd;
}

static void load_body(struct body *b, const char *path, const char *mode, const char *chunk,
                      const char *flags)
{
    struct stat st;
    b->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (b->fd < 0 || fstat(b->fd, &st) != 0 || st.st_size == 0) {
        perror("http-floor: the file");
        exit(1);
    }
    b->len = (size_t)st.st_size;
    b->map = mmap(NULL, b->len, PROT_READ, MAP_SHARED, b->fd, 0);
    if (b->map == MAP_FAILED) {
        perror("http-floor: mmap");
        exit(1);
    }
    b->use_sendfile = strcmp(mode, "sendfile") == 0;
    if (!b->use_sendfile && strcmp(mode, "copy") != 0) {
        fprintf(stderr, "http-floor: the mode is copy or sendfile\n");
        exit(2);
    }
    b->chunk = chunk ? strtoull(chunk, NULL, 10) : b->len;
    if (b->chunk == 0)
        b->chunk = b->len;
    b->nagle = flags != NULL && strcmp(flags, "nagle") == 0;
    b->head_len = (size_t)snprintf(b->head, sizeof(b->head),
                                   "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                                   "Content-Type: application/octet-stream\r\n\r\n",
                                   b->len);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: http-floor PORT FILE copy|sendfile [CHUNK [nagle]]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* sendfile(2) has no MSG_NOSIGNAL; a client leaving is EPIPE */
    struct body b;
    load_body(&b, argv[2], argv[3], argc > 4 ? argv[4] : NULL, argc > 5 ? argv[5] : NULL);
    int lfd = listen_on(atoi(argv[1]));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) != 0) {
        perror("http-floor: epoll");
        return 1;
    }
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c == NULL) {
                accept_all(ep, lfd, b.nagle);
                continue;
            }
            bool alive = !(evs[i].events & (EPOLLERR | EPOLLHUP));
            if (alive && (evs[i].events & EPOLLIN))
                alive = read_requests(c);
            if (alive)
                alive = answer(&b, c);
            if (!alive) {
                close(c->fd);
                free(c);
            }
        }
    }
}
