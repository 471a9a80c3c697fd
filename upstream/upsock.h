/*
 * upsock.h - the upstream client's sockets, kept so that a transfer can look at
 * its own connection.
 *
 * libcurl does not say which socket a transfer in a multi handle is using
 * (CURLINFO_ACTIVESOCKET only names the last finished one). The upstream client
 * therefore opens and closes the sockets itself through these callbacks and
 * finds a transfer's socket by the local port libcurl reports before sending
 * the request (CURLOPT_PREREQFUNCTION). Loop thread only; no locking.
 */
#ifndef GW_UPSOCK_H
#define GW_UPSOCK_H

#include <curl/curl.h>
#include <stddef.h>

struct upsock_entry {
    curl_socket_t fd;
    int local_port; /* 0 until first looked up */
};

struct upsock_table {
    struct upsock_entry *v;
    size_t n, cap;
};

/* @brief CURLOPT_OPENSOCKETFUNCTION; clientp is the upsock_table. Records the new socket. */
curl_socket_t upsock_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr);

/* @brief CURLOPT_CLOSESOCKETFUNCTION; clientp is the upsock_table. Forgets and closes fd. */
int upsock_close(void *clientp, curl_socket_t fd);

/* @brief The open socket whose local port is local_port, or CURL_SOCKET_BAD. */
curl_socket_t upsock_find(struct upsock_table *t, long local_port);

/* @brief Frees the table; call after curl_multi_cleanup() has closed every socket. */
void upsock_table_free(struct upsock_table *t);

#endif
