/*
 * fleet_reconcile.c - mends the peers that missed a registration or a withdrawal (docs/fleet.md,
 * "Manifests on a fleet"). The fleet thread sends each one once, to the peers up at that time
 * (fleet_sync.c); a peer that was down, or that joins later, would never learn it. Each
 * registration's origin, the gateway it was posted to (named by its id's tag, new_id), is
 * where it is true:
 *  - the origin asks every live peer for each registration it holds, and sends it again to a
 *    peer that answers 404 in two passes in a row (one pass could race the first sending);
 *  - a gateway holding a copy asks the origin, and withdraws its copy when the origin answers
 *    404 in two passes in a row: the registration was withdrawn while this gateway was down;
 *  - a gateway through which a client withdrew a registration posted elsewhere sends the
 *    withdrawal to the origin again until the origin answers 404 (the origin may have been
 *    down, and would otherwise send the registration out again when back).
 * A registration whose origin is not in the membership (gone, or come back under another URL)
 * is left as it is, as are ids two members' tags would both claim.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../upstream/call.h"
#include "manifest_int.h"

/* A peer that answered 404 for a registration in the last pass. */
struct mf_miss {
    char id[MF_ID_MAX];
    char url[FLEET_URL_MAX];
    unsigned passes;    /* passes in a row that it did */
    int64_t offered_ms; /* when it was last sent the registration again (0: never) */
};

struct misses {
    struct mf_miss *v;
    size_t n, cap;
};

void mf_reconcile_free(struct mf_registry *r)
{
    free(r->misses);
    r->misses = NULL;
    r->n_misses = 0;
}

/* A registration held here: parsed, not withdrawn. */
static bool held(const struct mf *m)
{
    return m->n_own > 0 && m->state != MF_CANCELED;
}

/* Whether peer answers 404 for registration id: it does not hold it. No answer is not 404. */
static bool peer_lacks(struct mf_registry *r, const char *peer, const char *id)
{
    struct sc_buf answer;
    long status;
    sc_code rc = mf_ask_peer(r, peer, id, &status, &answer);
    sc_buf_free(&answer);
    return rc == SC_OK && status == 404;
}

/* Records that peer lacked id in this pass, after the last pass's record (if any); returns
 * the new record, or NULL (out of memory: the next pass starts again). */
static struct mf_miss *missed(struct mf_registry *r, struct misses *now, const char *id,
                              const char *peer)
{
    if (now->n == now->cap) {
        size_t cap = now->cap ? 2 * now->cap : 8;
        struct mf_miss *grown = realloc(now->v, cap * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        now->v = grown;
        now->cap = cap;
    }
    struct mf_miss *m = &now->v[now->n++];
    *m = (struct mf_miss){.passes = 1};
    snprintf(m->id, sizeof(m->id), "%s", id);
    snprintf(m->url, sizeof(m->url), "%s", peer);
    for (size_t i = 0; i < r->n_misses; i++)
        if (strcmp(r->misses[i].id, id) == 0 && strcmp(r->misses[i].url, peer) == 0) {
            m->passes = r->misses[i].passes + 1;
            m->offered_ms = r->misses[i].offered_ms;
        }
    return m;
}

/* The origin's side: sends registration id again to each live peer that lacks it. */
static void offer_where_missing(struct mf_registry *r, const char *id,
                                const struct fleet_peer_info *peers, size_t n, struct misses *now)
{
    for (size_t i = 0; i < n; i++) {
        if (peers[i].state != FLEET_UP || !peer_lacks(r, peers[i].url, id))
            continue;
        struct mf_miss *m = missed(r, now, id, peers[i].url);
        int64_t t = sc_now_ms();
        if (m == NULL || m->passes < 2 || (m->offered_ms && t - m->offered_ms < MF_REOFFER_MS))
            continue;
        m->offered_ms = t;
        size_t len;
        char *body = mf_read_kept(r, id, &len);
        if (body == NULL) {
            sc_warn("manifest %s: %s does not have it, and its body is not kept here", id,
                    peers[i].url);
            continue;
        }
        sc_info("manifest %s: %s does not have it (it was down, or joined since): sent again", id,
                peers[i].url);
        mf_send_to_peer(r, peers[i].url, id, body, len);
        free(body);
    }
}

/* The live peer whose tag is tag, alone in having it; NULL if none or more than one. */
static const struct fleet_peer_info *origin_of(const char *tag, const struct fleet_peer_info *peers,
                                               size_t n)
{
    const struct fleet_peer_info *found = NULL;
    for (size_t i = 0; i < n; i++) {
        char t[8];
        mf_fleet_tag(peers[i].url, t);
        if (strcmp(t, tag) != 0)
            continue;
        if (found != NULL)
            return NULL;
        found = &peers[i];
    }
    return found;
}

/* A copy's side: whether registration id's origin no longer has it, two passes in a row. */
static bool withdrawn_at_origin(struct mf_registry *r, const char *id, const char *tag,
                                const struct fleet_peer_info *peers, size_t n, struct misses *now)
{
    const struct fleet_peer_info *origin = origin_of(tag, peers, n);
    if (origin == NULL || origin->state != FLEET_UP || !peer_lacks(r, origin->url, id))
        return false;
    struct mf_miss *m = missed(r, now, id, origin->url);
    if (m == NULL || m->passes < 2)
        return false;
    sc_info("manifest %s: withdrawn here, as %s, where it was posted, no longer has it", id,
            origin->url);
    now->n--; /* withdrawn: nothing more to count */
    return true;
}

/*
 * The withdrawals a client made here of registrations posted elsewhere: sent to the origin
 * again while it still has the registration (it may have been down, or the first sending
 * failed); forgotten once it answers 404. Until then a copy forwarded here is refused
 * (manifest.c), so the origin's mending cannot bring the registration back here.
 */
static void retry_withdrawals(struct mf_registry *r, const struct fleet_peer_info *peers, size_t n)
{
    struct mf_ids gone = mf_withdrawals(r);
    for (size_t i = 0; i < gone.n; i++) {
        const char *id = gone.v[i];
        const char *tag = strchr(id, '-');
        const struct fleet_peer_info *origin = tag ? origin_of(tag, peers, n) : NULL;
        if (origin == NULL || origin->state != FLEET_UP)
            continue; /* kept until the origin can be asked */
        if (peer_lacks(r, origin->url, id))
            mf_forget_withdrawal(r, id);
        else
            mf_send_to_peer(r, origin->url, id, NULL, 0);
    }
    free(gone.v);
}

struct mf_ids mf_reconcile(struct mf_registry *r)
{
    size_t n_peers = 0, k = 0;
    struct mf_ids list = mf_listed_ids(r, held);
    char(*ids)[MF_ID_MAX] = list.v;
    size_t n_ids = list.n;
    struct fleet_peer_info *peers = mf_other_peers(r, &n_peers);
    struct misses now = {0};
    if (peers != NULL)
        retry_withdrawals(r, peers, n_peers);
    for (size_t i = 0; peers && i < n_ids; i++) {
        const char *tag = strchr(ids[i], '-');
        if (tag == NULL) /* registered before this gateway was on a fleet */
            continue;
        if (strcmp(tag, r->id_tag) == 0)
            offer_where_missing(r, ids[i], peers, n_peers, &now);
        else if (withdrawn_at_origin(r, ids[i], tag, peers, n_peers, &now))
            memmove(ids[k++], ids[i], MF_ID_MAX); /* k <= i: the ids to withdraw, in place */
    }
    free(peers);
    free(r->misses);
    r->misses = now.v;
    r->n_misses = now.n;
    list.n = k;
    return list;
}
