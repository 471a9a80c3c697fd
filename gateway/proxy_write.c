/*
 * proxy_write.c - what a write passed through changes in the cache (proxy_int.h).
 *
 * Writes drop the cached copies of what they change before the upstream can have committed
 * them, whatever it answers later (or if its answer never arrives): a write on a key drops it
 * before it is forwarded; a write whose keys are in its body (DeleteObjects, a browser-form
 * POST upload, DeleteBucket) drops them once the whole body is in hand, or the whole bucket's
 * cached objects when the body cannot be read for certain. From before forwarding until the
 * transfer is over, no fill of an affected key is stored (fill_write_begin), so a read racing
 * the write cannot put the old bytes back.
 *
 * On a fleet, the other gateways hold copies too (the key's owner, askers with --fleet-copy):
 * every key a write drops here (or its whole bucket) is noted, and when the write is over at
 * the upstream (proxy_write_end) the live peers are told to drop it as well
 * (peer_invalidate.h).
 */
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../proto/s3_delete.h"
#include "../proto/s3_post.h"
#include "../upstream/peer_invalidate.h"
#include "proxy_int.h"
#include "req.h"

/*
 * Notes a key dropped here (NULL: the whole bucket), for the fleet's other gateways to drop
 * when the write is over; once it is over, tells them at once. A key that cannot be noted (no
 * memory) widens to the bucket. Any thread: the request's keys are noted by its HTTP thread,
 * a DeleteObjects answer's by the upstream thread, maybe after its head ended the write.
 */
static void note_peer_drop(struct upload *u, const char *key)
{
    if (u == NULL || u->fleet == NULL)
        return;
    pthread_mutex_lock(&u->mu);
    bool late = u->peers_told;
    if (!late) {
        char *copy = key != NULL && !u->peer_bucket ? strdup(key) : NULL;
        char **grown = copy ? realloc(u->peer_keys, (u->n_peer_keys + 1) * sizeof(*grown)) : NULL;
        if (grown != NULL) {
            u->peer_keys = grown;
            u->peer_keys[u->n_peer_keys++] = copy;
        } else {
            free(copy);
            u->peer_bucket = true;
        }
    }
    pthread_mutex_unlock(&u->mu);
    if (late)
        peer_invalidate(u->up, u->fleet, u->write_bucket, key);
}

/* What write_end() tells the peers: the keys noted until then, taken from the upload. */
struct peer_drops {
    char **keys;
    size_t n;
    bool bucket;
};

/* Takes the noted keys (mu held); from now on note_peer_drop() tells each key itself. */
static struct peer_drops take_peer_drops(struct upload *u)
{
    struct peer_drops d = {u->peer_keys, u->n_peer_keys, u->peer_bucket};
    u->peer_keys = NULL;
    u->n_peer_keys = 0;
    u->peers_told = true;
    return d;
}

/* Tells the live peers to drop what the write dropped here, and frees the list. */
static void tell_peers(struct upload *u, struct peer_drops *d)
{
    if (d->bucket)
        peer_invalidate(u->up, u->fleet, u->write_bucket, NULL);
    for (size_t i = 0; !d->bucket && i < d->n; i++)
        if (peer_invalidate(u->up, u->fleet, u->write_bucket, d->keys[i]) != SC_OK)
            break;
    for (size_t i = 0; i < d->n; i++)
        free(d->keys[i]);
    free(d->keys);
}

static void drop_stored(struct gw_req *q, struct upload *u, const char *key)
{
    if (store_remove(q->g->st, q->tgt.bucket, key) != SC_OK)
        sc_err("could not drop cached %s/%s", q->tgt.bucket, key);
    note_peer_drop(u, key);
}

/* Like drop_stored() without waiting: store_flush() waits for them all at once. */
static void queue_drop(struct gw_req *q, struct upload *u, const char *key)
{
    if (store_remove_queued(q->g->st, q->tgt.bucket, key) != SC_OK)
        sc_err("could not drop cached %s/%s", q->tgt.bucket, key);
    note_peer_drop(u, key);
}

/*
 * Drops key, and key without the white space around it if that differs: some upstreams
 * (s3rver) trim the text of a <Key>, and then delete that other key.
 */
static void drop_stored_and_trimmed(struct gw_req *q, struct upload *u, char *key)
{
    queue_drop(q, u, key);
    static const char ws[] = " \t\r\n";
    size_t lead = strspn(key, ws), len = strlen(key);
    while (len > lead && strchr(ws, key[len - 1]) != NULL)
        len--;
    if (lead == 0 && key[len] == '\0')
        return;
    key[len] = '\0';
    if (len > lead)
        queue_drop(q, u, key + lead);
}

/* Drops every cached object of the bucket: the write may have changed any of them. */
static void drop_bucket(struct gw_req *q, struct upload *u, const char *why)
{
    uint64_t n = 0;
    if (store_remove_prefix(q->g->st, q->tgt.bucket, "", &n) != SC_OK)
        sc_err("could not drop the cached objects of bucket %s", q->tgt.bucket);
    note_peer_drop(u, NULL);
    sc_warn("%s %s: %s; dropped its %llu cached objects", q->method, q->tgt.bucket, why,
            (unsigned long long)n);
}

static bool is_delete_objects(const struct gw_req *q)
{
    return s3_target_param(&q->tgt, "delete") != NULL;
}

/* How much of the body a write whose keys are in its body must keep to read them. */
size_t proxy_write_tee_cap(const struct gw_req *q)
{
    if (s3_target_invalidation(&q->tgt) != S3_INVALIDATE_BUCKET || q->tgt.method != S3_METHOD_POST)
        return 0;
    return is_delete_objects(q) ? S3_DELETE_MAX_BODY : S3_POST_FIELDS_MAX;
}

/* Drops the cached copies of the keys a DeleteObjects body names, or the bucket's. */
static void drop_deleted_keys(struct gw_req *q, struct upload *u)
{
    struct s3_delete_keys keys;
    if (u->tee_overflow) {
        drop_bucket(q, u, "DeleteObjects body too long to read");
        return;
    }
    if (s3_delete_keys_parse(u->tee, u->tee_len, &keys) != SC_OK) {
        drop_bucket(q, u, "DeleteObjects body not readable");
        return;
    }
    for (size_t i = 0; i < keys.n; i++)
        drop_stored_and_trimmed(q, u, keys.keys[i]);
    store_flush(q->g->st);
    s3_delete_keys_free(&keys);
}

/* Drops the cached copy of the key a PostObject form names (both spellings), or the bucket's. */
static void drop_posted_key(struct gw_req *q, struct upload *u)
{
    char *key = NULL, *expanded = NULL;
    if (s3_post_form_key(gw_req_header(q, "Content-Type"), u->tee, u->tee_len, &key, &expanded) !=
        SC_OK) {
        drop_bucket(q, u, "POST form upload whose key is not readable");
        return;
    }
    drop_stored(q, u, key);
    if (expanded != NULL)
        drop_stored(q, u, expanded);
    free(key);
    free(expanded);
}

/*
 * Notes the write in the fill table, so that no fill of what it changes gets stored
 * until it is over, and drops the key's cached copy (for keys named in the body, see
 * proxy_write_keys_in_body).
 */
static sc_code write_note(struct gw_req *q, struct upload *u)
{
    sc_code rc = fill_write_begin(u->fills, u->write_bucket, u->write_key);
    if (rc != SC_OK)
        return rc;
    u->noted = true;
    pthread_mutex_lock(&u->mu);
    u->writing = true;
    pthread_mutex_unlock(&u->mu);
    if (u->write_key != NULL)
        drop_stored(q, u, u->write_key);
    return SC_OK;
}

/* For a write whose keys are in its body: drops their cached copies (body complete). */
void proxy_write_keys_in_body(struct gw_req *q, struct upload *u)
{
    if (u->writes != S3_INVALIDATE_BUCKET)
        return;
    if (!u->noted && write_note(q, u) != SC_OK)
        sc_err("no memory to note a write to bucket %s: a fill may store what it replaces",
               q->tgt.bucket);
    if (u->tee == NULL)
        drop_bucket(q, u, "a write that does not name its keys");
    else if (is_delete_objects(q))
        drop_deleted_keys(q, u);
    else
        drop_posted_key(q, u);
}

/*
 * Prepares for a write about to be forwarded. A write on a key is noted now. A write
 * whose keys are in its body is noted once the body is complete (end_body), since the
 * upstream cannot commit it sooner: a client holding such a body open must not keep
 * the whole bucket from being cached. SC_ENOMEM: the write must not be forwarded.
 */
sc_code proxy_write_begin(struct gw_req *q, struct upload *u, bool body_pending)
{
    enum s3_invalidate writes = s3_target_invalidation(&q->tgt);
    if (writes == S3_INVALIDATE_NONE)
        return SC_OK;
    const char *key = writes == S3_INVALIDATE_KEY ? q->tgt.key : NULL;
    u->write_bucket = strdup(q->tgt.bucket);
    u->write_key = key != NULL ? strdup(key) : NULL;
    if (u->write_bucket == NULL || (key != NULL && u->write_key == NULL))
        return SC_ENOMEM;
    u->writes = writes;
    u->fills = q->g->fills;
    u->st = q->g->st;
    u->up = q->g->up;
    u->fleet = q->g->fleet;
    u->delete_objects = writes == S3_INVALIDATE_BUCKET && is_delete_objects(q);
    if (writes == S3_INVALIDATE_BUCKET && body_pending)
        return SC_OK;
    return write_note(q, u);
}

/*
 * Ends what write_begin() began, once: when the upstream's answer is in, when the
 * transfer ends, or when the request goes, whichever comes first (any thread). From
 * then on a fill reads what the upstream holds after the write, unless its outcome is
 * unknown (forwarded, and no answer or a 5xx): the upstream may still commit it.
 */
void proxy_write_end(struct upload *u)
{
    pthread_mutex_lock(&u->mu);
    bool was = u->writing;
    bool in_doubt = u->submitted && (u->status == 0 || u->status >= 500);
    bool refused = u->status >= 400 && u->status < 500; /* the upstream changed nothing */
    bool tell = was && u->submitted && !refused && u->fleet != NULL;
    struct peer_drops drops = tell ? take_peer_drops(u) : (struct peer_drops){0};
    u->writing = false;
    pthread_mutex_unlock(&u->mu);
    if (!was)
        return;
    fill_write_end(u->fills, u->write_bucket, u->write_key, in_doubt);
    if (tell)
        tell_peers(u, &drops);
}

/* Deleted and Error alike: one store commit, waited for on the upstream thread, only for
 * DeleteObjects. */
void proxy_write_drop_listed(struct upload *u)
{
    struct s3_delete_keys keys;
    if (s3_delete_keys_parse(u->answer.data, u->answer.len, &keys) == SC_OK) {
        for (size_t i = 0; i < keys.n; i++) {
            if (store_remove_queued(u->st, u->write_bucket, keys.keys[i]) != SC_OK)
                sc_err("could not drop cached %s/%s", u->write_bucket, keys.keys[i]);
            note_peer_drop(u, keys.keys[i]);
        }
        store_flush(u->st);
        s3_delete_keys_free(&keys);
    } else {
        sc_warn("DeleteObjects answer from the upstream not readable: its request keys alone "
                "were dropped");
    }
}

void proxy_write_release(struct upload *u)
{
    free(u->write_bucket);
    free(u->write_key);
    for (size_t i = 0; i < u->n_peer_keys; i++)
        free(u->peer_keys[i]);
    free(u->peer_keys);
}
