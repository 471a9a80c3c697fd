/*
 * server.h - the HTTP front end: a libmicrohttpd daemon serving S3.
 */
#ifndef GW_SERVER_H
#define GW_SERVER_H

#include "../common/sc_err.h"
#include "gw.h"

/*
 * @brief Starts listening on cfg->listen_host:listen_port with cfg->threads workers.
 * @return SC_OK, SC_EINVAL (bad address), SC_EIO (cannot bind or start).
 */
sc_code server_start(struct gw *g);

/* @brief Stops accepting, ends every connection and joins the workers. */
void server_stop(struct gw *g);

#endif
