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
 * signed as that identity with 200 (authz.h); the answer (200 or 403) is remembered
 * for --auth-cache-ttl. A 403 becomes 403 AccessDenied; any other answer sends the
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
 * @brief The "authenticate" step of an S3 request, right after parsing (GW_STEP_AUTHENTICATE,
 * run by server.c): verifies its
 * signature, admits it as a key or anonymous, applies the key's bucket list (the
 * bucket, and the bucket of x-amz-copy-source), and drops the signature parameters
 * of a presigned URL (SigV4 or SigV2, s3_auth_is_query_param) from q->tgt, so they
 * are never forwarded and a plain presigned GET is cacheable; without client keys
 * only the dropping is done, after refusing (403 AccessDenied) what a browser sends
 * from another web site, or on a loopback listener addressed to a name other than
 * localhost, an IP address or the --vhost-domain (gw_from_other_site). An OPTIONS (CORS preflight)
 * is not verified: it is admitted as anonymous, so it goes upstream unsigned. Refusals are answered
 * as S3 XML errors. Once admitted, q->as says how q's upstream requests are signed (the table
 * above), computed here once and only read afterwards.
 * @return what the access handler returns; q->status is set when refused.
 */
enum MHD_Result gw_authenticate(struct gw_req *q);

/*
 * Peer requests (fleet.h): a request that carries any fleet header (FLEET_H_SIGNATURE,
 * FLEET_H_IDENTITY, FLEET_H_DATE), on either listener, and every request on the peer listener
 * (--fleet-listen), is verified by gw_authenticate() as a peer request and nothing else: its
 * fleet signature (fleet_verify() over the method, the target as received, FLEET_H_IDENTITY,
 * Range and If-Match, dated within FLEET_MAX_SKEW) must hold, it must be a GET or HEAD of an
 * object, a peer's invalidation (POST PEER_INVALIDATE_PATH without a body, as "gateway";
 * peer_invalidate.h; the admin step carries it out, gw_admin()), or a call of a manifest route of
 * the admin API (POST /_s3cached/manifests, GET or DELETE /_s3cached/manifests/ID:
 * docs/fleet.md, "Manifests on a fleet"; the signature stands for the admin token, admin.c). A
 * read's identity is "gateway" (the gateway's own), "anonymous" (where anonymous reads are
 * checked: g->authz), or "key:AKID", a key of --client-credentials under --identity client
 * (whose bucket list applies), so that --identity client holds across the fleet. Anything else
 * is refused with 403 AccessDenied and the header FLEET_H_REFUSED (gw_auth_refuse_peer()), which
 * tells the asking peer to read from the bucket instead. Once admitted, q->peer.from is set.
 */

/* @brief True when q carries any fleet header: it is a peer request, or refused. */
bool gw_auth_is_peer_request(const struct gw_req *q);

/* @brief True when q's target is a peer's invalidation (POST PEER_INVALIDATE_PATH): admitted
 * only as a verified peer request (then q->peer.from is set). */
bool gw_auth_is_peer_invalidation(const struct gw_req *q);

/* @brief Refuses q as a peer request (403 AccessDenied with FLEET_H_REFUSED), why the message.
 * @return what the access handler returns. */
enum MHD_Result gw_auth_refuse_peer(struct gw_req *q, const char *why);

/* @brief The identity for logs: the access key, "anonymous", or NULL when not verified. */
const char *gw_auth_identity_name(const struct gw_req *q);

#endif
