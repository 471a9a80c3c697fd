/*
 * admin.h - the gateway's own API under /_s3cached/ and its status page (admin.c,
 * status_page.c). Not S3: JSON in and out, guarded by the admin token (or loopback).
 */
#ifndef GW_ADMIN_H
#define GW_ADMIN_H

#include <microhttpd.h>
#include <stddef.h>

#include "../gw.h"

/* The most of a request body the admin API reads; a longer one is read and dropped. */
#define GW_ADMIN_BODY_MAX (64u * 1024u * 1024u)

/* What a 401 from the admin API asks for, in its WWW-Authenticate header. */
#define GW_ADMIN_CHALLENGE "Bearer realm=\"s3cached admin API\""

/* @brief Keeps n more bytes of q's body in q->admin.body, up to GW_ADMIN_BODY_MAX (past it,
 * q->admin.body.err is SC_ETOOBIG and gw_admin() answers 413). Freed when q is finished. */
void gw_admin_collect(struct gw_req *q, const char *data, size_t n);

/* @brief Answers an admin API request (GW_STEP_ADMIN), its body collected whole.
 * @return what the access handler returns. */
enum MHD_Result gw_admin(struct gw_req *q);

/* @brief The status page's HTML with status (200, or 401: the page asks for the token).
 * @return what the access handler returns. */
enum MHD_Result gw_status_page(struct gw_req *q, int status);

#endif
