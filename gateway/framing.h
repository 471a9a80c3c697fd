/*
 * framing.h - the GW_STEP_HEAD check of a request's framing, before any body byte is read.
 */
#ifndef GW_FRAMING_H
#define GW_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

#include "gw.h"

/*
 * @brief Why the end of the request's body is ambiguous, or NULL if it is not. libmicrohttpd
 * frames a body by Transfer-Encoding while the upstream would be told the Content-Length:
 * any difference between the two would let body bytes become a request of their own on
 * a reused upstream connection (smuggling). RFC 9112 6.1 and 6.3. A header the gateway
 * decides on in two lines is refused too (decided_headers in framing.c), and a header value
 * with a control character, a folded line or a name that is not a token.
 * @return the reason, for the client (static text, or written into msg of cap bytes).
 */
const char *gw_framing_fault(struct gw_req *q, char *msg, size_t cap);

/* @brief True if the client announced a request body (Transfer-Encoding, or a Content-Length
 * other than 0). */
bool gw_framing_has_body(struct gw_req *q);

#endif
