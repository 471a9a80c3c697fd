/*
 * status_page.c - GET /_s3cached/: the status page for people (see docs/operations.md).
 *
 * One static HTML page with its CSS and JS inline, compiled in (status_page.h). It polls
 * the admin API's JSON endpoints from the browser and draws them; the gateway only
 * serves the bytes, with headers that keep the browser from loading or running anything
 * else: a Content-Security-Policy that admits the page's own <script> and <style> by hash,
 * fetches to this origin only and data: images (its empty favicon, so that browsers do not
 * ask for /favicon.ico, which is an S3 path), nosniff, no caching, no framing, no referrer.
 */
#include <stdio.h>

#include "admin.h"
#include "../respond.h"
#include "status_page.h"

enum MHD_Result gw_status_page(struct gw_req *q, int status)
{
    char csp[384];
    snprintf(csp, sizeof(csp),
             "default-src 'none'; script-src '%s'; style-src '%s'; connect-src 'self'; "
             "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
             gw_status_page_script_hash, gw_status_page_style_hash);
    /* The bytes are constant: libmicrohttpd points at them, no copy. */
    struct MHD_Response *resp =
        gw_respond_buffer("text/html; charset=utf-8", (void *)gw_status_page_html,
                          gw_status_page_html_len, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Security-Policy", csp);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    if (status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", GW_ADMIN_CHALLENGE);
    return gw_respond_queue(q, status, resp);
}
