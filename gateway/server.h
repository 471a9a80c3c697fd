/*
 * server.h - the HTTP front end: a libmicrohttpd daemon serving S3.
 */
#ifndef GW_SERVER_H
#define GW_SERVER_H

#include "../common/sc_err.h"
#include "gw.h"

/*
 * @brief Starts listening on cfg->listen_host:listen_port with cfg->threads workers, and on
 * cfg->fleet_listen_host:fleet_listen_port (--fleet-listen) for signed peer requests only
 * (everything else is refused there: auth.h). g->fleet must be set before.
 * @return SC_OK, SC_EINVAL (bad address), SC_EIO (cannot bind or start; nothing listens).
 */
sc_code server_start(struct gw *g);

/* @brief Stops accepting (both listeners), ends every connection and joins the workers. */
void server_stop(struct gw *g);

#endif
