/*
 * auth.h - who sent an S3 request (auth.c), and whether that identity may be
 * handed what the cache holds (authz.c). The rules are in docs/security.md.
 *
 * Without --client-credentials nothing is verified and every request is the
 * gateway's (as before client authentication existed), except what a browser sends
 * from another web site (web_origin.c). With it, each S3
 * request is verified (s3_auth.h) and is either a configured key or, with
 * --allow-anonymous, anonymous. Upstream, a request is signed:
 *
 *                       --identity gateway        --identity client
 *   signed by a key     the gateway's key pair    that client's key pair
 *   anonymous           unsigned                  unsigned
 *
 * The cache is shared by everyone, so an identity that signs upstream requests
 * with its own key (client mode) or with none (anonymous) gets a cached copy, or
 * a fill another identity started, only after the upstream answered a HEAD
 * signed as that identity with 2xx; the answer (2xx or 403) is remembered for
 * --auth-cache-ttl. A 403 becomes 403 AccessDenied; any other answer sends the
 * request itself upstream, uncached. The admin API, /metrics, /healthz and
 * /readyz are not S3 requests and are never verified here.
 */
#ifndef GW_AUTH_H
#define GW_AUTH_H

#include <microhttpd.h>
#include <stdbool.h>

#include "../common/sc_err.h"
#include "../upstream/upstream.h"

struct gw;
struct gw_req;

/*
 * @brief Start-up checks of the listener against the authentication settings:
 * refuses --allow-anonymous on a listener that is not loopback unless
 * --allow-anonymous-on-network is given, and warns when requests are not verified
 * on such a listener. g->listen_loopback must be set.
 * @return SC_OK or SC_EINVAL (logged).
 */
sc_code gw_auth_check_listener(const struct gw *g);

/*
 * @brief The "authenticate" step of an S3 request, right after parsing: verifies its
 * signature, admits it as a key or anonymous, applies the key's bucket list (the
 * bucket, and the bucket of x-amz-copy-source), and drops the signature parameters
 * of a presigned URL (SigV4 or SigV2, s3_auth_is_query_param) from q->tgt, so they
 * are never forwarded and a plain presigned GET is cacheable; without client keys
 * only the dropping is done, after refusing (403 AccessDenied) what a browser sends
 * from another web site, or on a loopback listener addressed to a name other than
 * localhost, an IP address or the --vhost-domain (gw_from_other_site). An OPTIONS (CORS preflight)
 * is not verified: it is admitted as anonymous, so it goes upstream unsigned. Refusals are answered
 * as S3 XML errors.
 * @return what the access handler returns; q->phase is GW_PHASE_RESPONDED when refused.
 */
enum MHD_Result gw_authenticate(struct gw_req *q);

/* @brief How q's upstream requests are signed (see the table above). */
void gw_sign_as(const struct gw_req *q, struct up_identity *as);

/* @brief The identity for logs: the access key, "anonymous", or NULL when not verified. */
const char *gw_identity_name(const struct gw_req *q);

/* @brief True when q's identity must be authorized by the upstream before it is served
 * a cached object or another identity's fill. */
bool gw_authz_needed(const struct gw_req *q);

/*
 * @brief Before q is served a cached copy or another identity's fill: true when it may
 * go on (no check needed, or already allowed); false when *ret holds what to return: a
 * 403 was queued, or a HEAD went upstream and the connection is suspended until
 * gw_authz_resume() (phase GW_PHASE_AUTHZ).
 */
bool gw_authz_admit(struct gw_req *q, enum MHD_Result *ret);

/* @brief Phase GW_PHASE_AUTHZ: acts on the upstream's answer. Returns what the access
 * handler returns. */
enum MHD_Result gw_authz_resume(struct gw_req *q);

/* @brief Remembers that q's identity may (or may not) read q's object, e.g. after its own
 * fetch was answered. No-op when no check is needed. */
void gw_authz_record(struct gw_req *q, bool allowed);

#endif
