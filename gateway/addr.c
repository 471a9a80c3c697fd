/* addr.c - client and listener addresses (see addr.h). */
#include "addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "gw.h"

const struct sockaddr *gw_client_addr(struct gw_req *q)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return ci ? ci->client_addr : NULL;
}

void gw_addr_string(const struct sockaddr *sa, char *out, size_t len)
{
    const struct in6_addr *a6 =
        sa && sa->sa_family == AF_INET6 ? &((const struct sockaddr_in6 *)sa)->sin6_addr : NULL;
    if (len > 0)
        out[0] = '\0';
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)len);
    else if (a6 && IN6_IS_ADDR_V4MAPPED(a6)) /* an IPv4 client of a dual-stack listener */
        inet_ntop(AF_INET, &a6->s6_addr[12], out, (socklen_t)len);
    else if (a6)
        inet_ntop(AF_INET6, a6, out, (socklen_t)len);
}

bool gw_addr_is_loopback(const struct sockaddr *sa)
{
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a6))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127;
    }
    return false;
}
