/* addr.h - client and listener addresses. */
#ifndef GW_ADDR_H
#define GW_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct gw_req;

/* True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. NULL is not loopback. */
bool gw_addr_is_loopback(const struct sockaddr *sa);

/* sa as text into out (INET6_ADDRSTRLEN bytes), an IPv4-mapped address as IPv4. */
void gw_addr_string(const struct sockaddr *sa, char *out, size_t len);

/* The client's address, or NULL if libmicrohttpd does not say. */
const struct sockaddr *gw_client_addr(struct gw_req *q);

#endif
