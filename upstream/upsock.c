/*
 * upsock.c - the upstream client's sockets (see upsock.h).
 */
#include "upsock.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

curl_socket_t upsock_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct upsock_table *t = clientp;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct upsock_entry *grown = realloc(t->v, cap * sizeof(*grown));
        if (grown == NULL)
            return CURL_SOCKET_BAD; /* libcurl fails the connect: out of memory */
        t->v = grown;
        t->cap = cap;
    }
    curl_socket_t fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
    if (fd == CURL_SOCKET_BAD)
        return fd;
    t->v[t->n++] = (struct upsock_entry){.fd = fd, .local_port = 0};
    return fd;
}

int upsock_close(void *clientp, curl_socket_t fd)
{
    struct upsock_table *t = clientp;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].fd == fd) {
            t->v[i] = t->v[--t->n];
            break;
        }
    return close(fd);
}

/* The socket's local port, or -1. */
static int local_port_of(curl_socket_t fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

curl_socket_t upsock_find(struct upsock_table *t, long local_port)
{
    for (size_t i = 0; i < t->n; i++) {
        struct upsock_entry *e = &t->v[i];
        if (e->local_port <= 0)
            e->local_port = local_port_of(e->fd); /* known once connected; cached from then */
        if (e->local_port == local_port)
            return e->fd;
    }
    return CURL_SOCKET_BAD;
}

void upsock_table_free(struct upsock_table *t)
{
    free(t->v);
    *t = (struct upsock_table){0};
}
