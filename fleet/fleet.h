/*
 * fleet.h - the gateways of many nodes acting as one cache: who is in the fleet, who owns
 * what, which peers are down, and how a peer request proves that a peer sent it.
 *
 * Membership comes from the platform, never from a consensus of our own: a static list of
 * URLs (--peers) or every A/AAAA record of a DNS name (--peers-dns NAME:PORT, a Kubernetes
 * headless Service), re-resolved every resolve_ms on a thread of this module. One entry is
 * this gateway (--self, or the entry whose address is one of this host's).
 *
 * Ownership is rendezvous hashing: the owner of a name (sc_key_hash() of (bucket, key) for
 * a whole object, sc_block_key_hash() for one block of a large object) is the live peer
 * with the highest sc_hash_mix(name ^ hash of the peer's URL). Adding or losing one of N
 * peers moves only the names that peer wins or won: about 1/N of them.
 *
 * A peer that fails a request (no answer, a 5xx, a refused fleet signature) is down for a
 * backoff period (down_min_ms, doubling up to down_max_ms) and owns nothing meanwhile: its
 * names go to the next peer by score. When the period ends it is live again; the next
 * request to it decides whether it stays.
 *
 * Every function is safe from any thread.
 */
#ifndef SC_FLEET_H
#define SC_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../common/sc_err.h"

#define FLEET_URL_MAX    96 /* "http://[v6 address]:port" fits */
#define FLEET_MAX_PEERS  256
#define FLEET_SECRET_MIN 16 /* bytes */

/* The headers of a peer request (fleet_sign), besides the request's own. */
#define FLEET_H_DATE      "x-s3cached-fleet-date"      /* seconds since the epoch, decimal */
#define FLEET_H_IDENTITY  "x-s3cached-fleet-identity"  /* whose request: fleet_signed.identity */
#define FLEET_H_SIGNATURE "x-s3cached-fleet-signature" /* lowercase hex HMAC-SHA256 */
/* A peer's answer to a request whose fleet signature it refused carries this header. */
#define FLEET_H_REFUSED "x-s3cached-fleet-refused"
/* A peer's answer with a 5xx of its own (it failed: draining, out of memory, its bucket
 * unreachable) carries this header; a 5xx without it is the bucket's answer, relayed. */
#define FLEET_H_FAILED "x-s3cached-fleet-failed"
/* A signed request older or newer than this (seconds) is refused (clock skew, replays). */
#define FLEET_MAX_SKEW 300

typedef struct fleet fleet;

struct fleet_config {
    const char *peers;           /* "URL,URL,..." (--peers), or NULL */
    const char *peers_dns;       /* "NAME:PORT" (--peers-dns), or NULL; exactly one of the two */
    const char *self;            /* this gateway's URL as its peers reach it, or NULL: detected */
    const unsigned char *secret; /* the fleet secret, copied; at least FLEET_SECRET_MIN bytes */
    size_t secret_len;
    unsigned resolve_ms;  /* DNS re-resolution period; 0: 5000 */
    unsigned down_min_ms; /* first backoff of a failed peer; 0: 1000 */
    unsigned down_max_ms; /* longest backoff; 0: 30000 */
};

/*
 * @brief Parses the peers, resolves the DNS name once (an answer without this host, or no
 * answer, is not an error: the fleet is then only this gateway until a later resolution finds
 * it), and starts the re-resolution thread when there is a name.
 *
 * URLs are "http://HOST:PORT" or "https://HOST:PORT" (HOST a name, an IPv4 address or an
 * [IPv6] address; the port required; a trailing '/' allowed, nothing else), at most
 * FLEET_URL_MAX - 1 bytes, compared in a canonical form (lower case, addresses as inet_ntop
 * writes them). A DNS record becomes "http://ADDR:PORT" or "http://[V6]:PORT".
 * This gateway's entry: the one equal to --self; without --self, in a static list the one
 * entry whose address is one of this host's (getifaddrs); from DNS every such record.
 * The reason for an SC_EINVAL is logged (sc_err); the secret never is.
 * @param[out] out the fleet; release with fleet_free().
 * @return SC_OK, SC_EINVAL (a malformed URL or NAME:PORT, an empty or repeated entry, more
 *         than FLEET_MAX_PEERS, both or neither given, a secret too short, --self not in a
 *         static list, no entry or several are this host), SC_ENOMEM.
 */
sc_code fleet_start(const struct fleet_config *cfg, fleet **out);

/* @brief Stops the thread (at once, unless it is inside a DNS lookup) and frees the fleet.
 * NULL is a no-op. */
void fleet_free(fleet *f);

/* @brief This gateway's URL in the fleet (canonical, see fleet_start); "" while a DNS
 * fleet without --self has not yet found this host among its records. */
const char *fleet_self(const fleet *f);

/* Who owns a name. */
struct fleet_owner {
    bool self;               /* this gateway (also when no other peer is live) */
    char url[FLEET_URL_MAX]; /* the owner's URL, without a trailing '/' */
};

/* @brief The live peer that owns name (see above): no allocation, one pass over the members
 * under a read lock (it runs on every miss). */
void fleet_owner_of(fleet *f, uint64_t name, struct fleet_owner *out);

/* @brief The name of the bytes from offset `first` of the object whose sc_key_hash() is khash,
 * as the fleet owns them: the name of the block they lie in (sc_block_key_hash) at block_size,
 * or khash itself when blocks do not apply (block_size 0, or a block index past 32 bits). */
uint64_t fleet_range_name(uint64_t khash, uint64_t first, uint32_t block_size);

/* @brief Whether this gateway owns name now. */
bool fleet_owns(fleet *f, uint64_t name);

/* @brief A number that changes whenever the live set changes (a peer joins, leaves, goes
 * down or comes back), so that what was planned by ownership can be planned again. */
uint64_t fleet_generation(fleet *f);

/* @brief Records that a request to the peer at url failed (it is down for its backoff; a peer
 * already down stays down for what is left of it). A url not in the fleet, or this gateway's,
 * is ignored. */
void fleet_peer_failed(fleet *f, const char *url);

/* @brief Records a request to url that was answered: seconds to its head, bytes of its body;
 * ends any backoff. */
void fleet_peer_answered(fleet *f, const char *url, double seconds, uint64_t bytes);

enum fleet_state { FLEET_UP, FLEET_DOWN };

/* One peer as metrics and the status page show it. */
struct fleet_peer_info {
    char url[FLEET_URL_MAX];
    bool self;
    enum fleet_state state;
    uint64_t requests, errors, bytes; /* requests this gateway sent it, failed ones, body bytes */
    double seconds;                   /* sum of seconds to the head of answered requests */
    double down_for;                  /* seconds of backoff left, 0 when up */
};

/* @brief Copies up to cap peers (this gateway included) in URL order.
 * @return how many peers there are (may exceed cap). */
size_t fleet_peers(fleet *f, struct fleet_peer_info *out, size_t cap);

/* What a fleet signature covers: a peer request's method, path and query exactly as sent,
 * whose request it carries, and the headers that change its answer. NULL fields count as "". */
struct fleet_signed {
    const char *method;
    const char *path;     /* as on the request line, percent-encoded, without the query */
    const char *query;    /* without '?' */
    const char *identity; /* "gateway", "anonymous" or "key:" followed by an access key id */
    const char *range;    /* the Range header */
    const char *if_match; /* the If-Match header */
    int64_t date;         /* seconds since the epoch */
};

/* @brief The signature of what, as lowercase hex (65 bytes with the NUL), with f's secret:
 * HMAC-SHA256 over the fields joined by '\n' in the order of struct fleet_signed (the date
 * in decimal). A field holding '\n' would let text move between fields, so none may.
 * @param[out] sig the signature; "" on error.
 * @return SC_OK, SC_EINVAL (a field holds '\n'), SC_ETOOBIG (over 64 KiB), SC_ENOMEM,
 *         SC_ECRYPTO. */
sc_code fleet_sign(const fleet *f, const struct fleet_signed *what, char sig[65]);

/*
 * @brief Checks a peer request's signature (constant time) and date (within
 * FLEET_MAX_SKEW of now, seconds since the epoch: the caller's wall clock).
 * @param sig the FLEET_H_SIGNATURE header: 64 lowercase hex digits, or NULL when missing.
 * @return SC_OK, or SC_EACCES (missing, malformed, wrong or out of date, or a field holding
 *         '\n').
 */
sc_code fleet_verify(const fleet *f, const struct fleet_signed *what, const char *sig, int64_t now);

#endif
