/* web_origin.h - requests a browser sends from another web site (web_origin.c). */
#ifndef GW_WEB_ORIGIN_H
#define GW_WEB_ORIGIN_H

#include <stdbool.h>

struct gw_req;

/*
 * True (with the reason) if a browser sent q from another site (Sec-Fetch-Site,
 * an Origin not the gateway's own, Origin: null), or, with check_host, addressed it to a name
 * other than localhost, an IP address or the --vhost-domain (DNS rebinding). Guards the admin
 * API without a token, and S3 requests without --client-credentials.
 */
bool gw_from_other_site(struct gw_req *q, bool check_host, const char **why);

#endif
