/*
 * manifest_int.h - what manifest.c (the registry and the API) and
 * prefetch.c (the walk ahead of the trainer) share. Not for other files.
 *
 * Locks: the registry's reg_mu serializes changes (see struct mf_registry); list_lock (a
 * rwlock) guards the list, each manifest's plan ranks and decisions, and what a build makes
 * (order, future...); a manifest's mu guards everything else in it. Order: reg_mu, list_lock,
 * mu; wake_mu is taken alone.
 */
#ifndef GW_MANIFEST_INT_H
#define GW_MANIFEST_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "../common/buf.h"
#include "../policy/future_set.h"
#include "block_set.h"
#include "manifest.h"
#include "plan.h"
#include "../common/stats.h"

#define MF_ID_MAX       24
#define MF_RATE_MS      250 /* a job's position is sampled this often for its read rate */
#define MF_RATE_WINDOW  120 /* samples its rate spans: 30 s */
#define MF_MAX_FAILURES 100 /* failures listed in progress; all are counted */

enum mf_state {
    /* The active states come first: mf_get_totals() counts those up to MF_PLANNED. */
    MF_LISTING, /* a prefix manifest waiting for its keys */
    MF_WARMING, /* fetching ahead of the trainer */
    MF_WARM,    /* everything that fits before its next use is cached */
    MF_PLANNED, /* "prefetch": false: only the policy uses the plan */
    MF_DONE,    /* the trainer passed the end of the plan */
    MF_CANCELED,
    MF_FAILED,  /* the listing failed; see error */
    MF_JOINED,  /* a registration whose ranks joined another manifest's job (m->job) */
    MF_PARSING, /* a large body waiting for the registrar (m->body); no plan yet */
};

/* Bodies larger than this are parsed by the registrar thread, off the request threads. */
#define MF_PARSE_INLINE_MAX (1024u * 1024u)
/* Bytes of bodies that may wait for the registrar at once (SlowDown above): 4 of the largest. */
#define MF_PARSE_PENDING_MAX (4ull * PLAN_MAX_BODY)

/* One object's state in a manifest. */
enum mf_obj {
    MF_OBJ_PENDING = 0,
    MF_OBJ_INFLIGHT,
    MF_OBJ_CACHED,
    MF_OBJ_FAILED,
    MF_OBJ_RECHECK, /* counted cached, but the trainer read it since: the policy may have
                       evicted it (clairvoyant evicts what was just read first), so the next
                       walk that counts it asks the store */
};

/* Whether an item in state s counts as cached in the progress (cached, bytes_cached). */
static inline bool mf_obj_counted(uint8_t s)
{
    return s == MF_OBJ_CACHED || s == MF_OBJ_RECHECK;
}

/* A peer's latest progress of a job (fleet_sync.c polls it). */
struct mf_peer_report {
    char url[FLEET_URL_MAX];
    bool reported;   /* it answered the last poll with the job's progress */
    const char *why; /* when not: a static reason ("down", "no answer", "unknown manifest"...) */
    uint64_t cached, bytes_cached, inflight, failed;
};

/* A registration or a withdrawal to send to every live peer (fleet_sync.c). */
struct mf_forward {
    struct mf_forward *next;
    bool withdraw; /* DELETE /_s3cached/manifests/ID, else POST of body */
    char id[24];   /* MF_ID_MAX */
    char *body;    /* POST: the body as the client sent it, len bytes */
    size_t len;
};

struct mf_failure {
    char *key;
    struct plan_range range; /* length 0: the whole object */
    char *reason;
};

/*
 * A manifest is one registration (POST). Registrations of one job (plan_same_job: ranks of
 * one sampling plan) share one plan: the first is the job, and holds the plan, the future and
 * the state below for all the job's ranks; each later one joins it (state MF_JOINED, m->job)
 * and holds only the ranks it brought. A registration's id answers for its job.
 */
struct mf {
    atomic_int refs;
    char id[MF_ID_MAX];
    struct mf_registry *reg;
    struct mf *job;  /* MF_JOINED: the job it joined (a reference); NULL for a job */
    uint32_t *own;   /* the ranks this registration brought to its job */
    uint32_t n_own;  /* 0 once withdrawn (a job whose registration left before its ranks);
                        written under reg_mu and list_lock, read under either */
    uint64_t resume; /* a job: the step (reads of each rank) to start at, kept across restarts */
    uint64_t saved;  /* a job: the step last written to the cache directory */
    /* A job's read rate, in positions of its future per second (0: it has not read yet), over
     * the last MF_RATE_WINDOW samples of its position (taken every MF_RATE_MS; before its
     * first read, only the last sample is kept, so the window starts there); `slot`: its
     * future's index in the policy's set. Written under list_lock: for writing, or for
     * reading by the prefetcher alone. */
    double rate;
    double rate_t[MF_RATE_WINDOW];
    uint64_t rate_pos[MF_RATE_WINDOW];
    unsigned rate_n; /* samples taken since the plan was built; the newest at rate_n - 1 */
    size_t slot;
    struct plan *plan; /* NULL for MF_JOINED, MF_PARSING (and a body that failed to parse) */
    char *body;        /* MF_PARSING: the body to parse, body_len bytes */
    size_t body_len;
    future *fut;       /* NULL until the dataset is known (list_lock) */
    uint32_t n;        /* dataset items (objects or ranges) */
    uint32_t used;     /* distinct items this rank reads */
    uint64_t accesses; /* this rank's positions */
    uint32_t *order;   /* position -> dataset index */
    uint32_t *fstart;  /* a plan with ranges, or on a fleet: position -> its first position in
                          the future (a ranged access is one future entry per block, an item
                          another gateway owns none); NULL: the same */
    uint64_t *starts;  /* a plan with ranges: item_start() of each ranged item, sorted */
    uint32_t n_starts;
    uint8_t *obj;     /* enum mf_obj per dataset index */
    uint64_t *size;   /* per dataset index: its object's size; 0 while unknown */
    uint32_t *stamp;  /* per dataset index: the walk that last counted it */
    uint32_t walk;    /* the current walk's stamp */
    uint64_t read_to; /* positions before this one the trainer had read at the last walk */
    uint64_t *khash;  /* a plan with ranges: per dataset index, its key's sc_key_hash; else NULL */
    uint8_t *used_bits;   /* a bit per dataset index: read by the ranks the order merges */
    uint32_t built_ranks; /* how many ranks the order and future merge (the plan's may have
                             changed since, until the rebuild is swapped in) */
    block_set charged;    /* a plan with ranges: the blocks (and whole objects) the current walk
                             counted, so that items sharing a block charge it once */
    pthread_mutex_t mu;
    /* Changed under mu (a cancellation under reg_mu too); atomic because the scans of the
     * list (mf_active: rates, saved steps, the fleet's polls) read it under list_lock alone.
     * Such a scan may see a job end one pass late, never a torn or stale-forever value. */
    _Atomic enum mf_state state;
    char *error;          /* why the manifest failed */
    char *list_token;     /* the listing's next continuation token */
    uint64_t *list_sizes; /* sizes in listing order, until the dataset is known */
    size_t n_listed;
    uint32_t cached, inflight, failed, fits, fetched;
    uint64_t bytes_cached, bytes_known, bytes_fetched; /* bytes_known: of items, as progress */
    uint64_t whole_bytes, whole_known; /* sizes of whole items known, and how many: their mean is
                                          what a whole object of unknown size is taken to be */
    struct mf_failure failures[MF_MAX_FAILURES];
    size_t n_failures;
    time_t created;
    struct timespec first_fetch; /* when the first prefetch started; tv_sec 0 before */
    atomic_bool blocked;         /* the last walk waits for the trainer to move */
    /* A job on a fleet: every other peer's latest progress of it (NULL before the first
     * poll), n_reports entries; replaced whole by each poll (mu). */
    struct mf_peer_report *reports;
    size_t n_reports;
    struct timespec reported_at; /* when the last poll ended */
    struct mf *next;             /* the registry's list, newest first */
};

struct mf_registry {
    struct mf_config cfg; /* cfg.dir points to dir */
    char *dir;
    /* Serializes every change of the registry: registrations, joins, withdrawals, decisions,
     * a listing's end. Their slow parts (parsing, building orders and futures) run under it
     * alone; list_lock is taken for writing only to swap the results in, so requests reading
     * through the gateway (mf_observe) never wait for a build. Taken before list_lock. */
    pthread_mutex_t reg_mu;
    pthread_rwlock_t list_lock;
    struct mf *list;
    atomic_bool listed; /* list is not empty: mf_observe() takes list_lock only then (a hit
                           with no manifest registered shares no lock word with other threads) */
    uint64_t next_id;
    future_set *hinted; /* the jobs' plans the policy has, with a reference */
    pthread_mutex_t wake_mu;
    pthread_cond_t wake;
    bool stopping, kicked, running;
    pthread_t thread;
    pthread_cond_t parse_wake; /* the registrar's, with wake_mu: a body to parse */
    bool parse_pending;        /* wake_mu */
    bool registrar_running;
    pthread_t registrar;
    atomic_uint inflight; /* prefetches in flight, all manifests */
    atomic_uint_fast64_t registered_client, registered_peer; /* see mf_totals */
    /* On a fleet (cfg.fleet): the fleet thread forwards registrations and withdrawals made
     * here to every live peer, and polls the peers' progress of every job (fleet_sync.c).
     * fwd_* and fleet_wake are guarded by wake_mu. */
    struct mf_forward *fwd_head, *fwd_tail;
    uint64_t fwd_bytes; /* bodies queued, bounded by MF_PARSE_PENDING_MAX */
    pthread_cond_t fleet_wake;
    bool fleet_running;
    pthread_t fleet_thread;
    char id_tag[8]; /* "-" and 6 hex digits of this gateway's URL: fleet-unique ids; "" alone */
    struct mf_miss *misses; /* the fleet thread's alone: fleet_reconcile.c */
    size_t n_misses;
};

void mf_ref(struct mf *m);
void mf_unref(struct mf *m);

/* Whether m is a job at work: its plan known, not canceled or failed. */
static inline bool mf_active(const struct mf *m)
{
    return m->state != MF_CANCELED && m->state != MF_FAILED && m->fut != NULL;
}

/* Whether the registry is stopping (wake_mu not held): its threads' loops end. */
static inline bool mf_stopping(struct mf_registry *r)
{
    pthread_mutex_lock(&r->wake_mu);
    bool stop = r->stopping;
    pthread_mutex_unlock(&r->wake_mu);
    return stop;
}

/* The job a registration belongs to: the one it joined, or itself. */
static inline struct mf *mf_job_of(struct mf *m)
{
    return m->job != NULL ? m->job : m;
}

/* ---- build.c: a job's plan made into an order and a future ---- */

/* What a build makes of a plan for its ranks, so that a rebuild can swap it in. */
struct mf_built {
    uint32_t *order, *fstart;
    uint64_t *starts, *khash;
    uint32_t n_starts;
    uint64_t accesses;
    future *fut;
    uint8_t *used;  /* a bit per dataset index: read by the plan's ranks */
    uint32_t ranks; /* how many ranks the order merges */
};

/*
 * @brief Builds job m's order and future for its plan's ranks into b, the trainers at step
 * (a rebuild keeps what m's current future had read: future_start_like). Reads only the plan
 * (which changes under reg_mu alone) and m's constants: call it with reg_mu, no other lock.
 * @return SC_OK; SC_ENOMEM; SC_ETOOBIG (the ranges cover more blocks than a plan may read:
 *         err says so). On error b holds nothing.
 */
sc_code mf_build_into(const struct mf *m, uint64_t step, struct mf_built *b, struct api_err *err);

/* @brief Takes m's built parts out (m holds none after). */
struct mf_built mf_built_detach(struct mf *m);

/* @brief Gives m the built parts b (m holds none before). */
void mf_built_attach(struct mf *m, const struct mf_built *b);

/* @brief Frees built parts and clears b. */
void mf_built_free(struct mf_built *b);

/* @brief Counts again the items the plan reads, their bytes, and those cached (m->mu held). */
void mf_recount(struct mf *m);

/* @brief Takes the sizes a prefix's listing gave, once its dataset matches the listing. */
void mf_take_listed_sizes(struct mf *m);

/* @brief Builds every job again for the fleet's live peers (their names moved). Takes reg_mu. */
void mf_replan_for_fleet(struct mf_registry *r);

/* @brief Whether plan position pos is read through this gateway's future: always without a
 * fleet; on a fleet, when this gateway owns the item's name (build.c). */
bool mf_planned_here(const struct mf *m, uint64_t pos);

/* @brief Whether a read from byte `first` of the object khash starts an item of m's plan: a
 * whole object at byte 0, a range at its offset. */
bool mf_starts_an_item(const struct mf *m, uint64_t khash, uint64_t first);

/* ---- keep.c: what outlives a restart, in the cache directory ---- */

/* A growable list of registration ids, for the fleet thread's passes (free v). */
struct mf_ids {
    char (*v)[MF_ID_MAX];
    size_t n, cap;
};

/* @brief Keeps registration id's body (<id>.json). */
void mf_persist(struct mf_registry *r, const char *id, const char *body, size_t len);

/* @brief Keeps, in <dir>/<id>.withdrawn, that a client withdrew registration id here, on a
 * gateway that is not its origin: until the origin no longer has it, the withdrawal is sent
 * to the origin again (fleet_reconcile.c) and a copy forwarded here is refused. */
void mf_keep_withdrawal(const struct mf_registry *r, const char *id);

/* @brief Whether a withdrawal of id is kept here (mf_keep_withdrawal). */
bool mf_withdrawn_here(const struct mf_registry *r, const char *id);

/* @brief Forgets a kept withdrawal (its origin no longer has the registration). */
void mf_forget_withdrawal(const struct mf_registry *r, const char *id);

/* @brief The ids of the withdrawals kept here (free v; empty when none). */
struct mf_ids mf_withdrawals(const struct mf_registry *r);

/* @brief The id counter kept in the cache directory (<dir>/next-id; 0: none), so that an id
 * is never given twice, even after its registration was withdrawn and the gateway restarted
 * (a peer may still hold the old one: fleet_reconcile.c compares ids). */
uint64_t mf_read_next_id(const struct mf_registry *r);

/* @brief Keeps the id counter (written whole, by rename). */
void mf_save_next_id(const struct mf_registry *r, uint64_t next);

/* @brief Registration id's kept body (malloc'd, *len bytes), or NULL: none, or unreadable. */
char *mf_read_kept(const struct mf_registry *r, const char *id, size_t *len);

/* @brief The step kept for registration id's job (0: none or unreadable). */
uint64_t mf_read_step(const struct mf_registry *r, const char *id);

/* @brief Appends epoch e's decision (len bytes of bits) to registration id's log. */
void mf_log_decision(const struct mf_registry *r, const char *id, uint32_t e, const uint8_t *bits,
                     size_t len);

/* @brief Decides again in plan p (not built yet) the epochs id's log holds; cuts a torn end. */
void mf_replay_decisions(const struct mf_registry *r, const char *id, struct plan *p);

/* @brief Logs every epoch job j decided for registration id (which joins j). */
void mf_log_decisions_of(const struct mf_registry *r, const struct mf *j, const char *id);

/* @brief Wakes the prefetcher for another walk. */
void mf_kick(struct mf_registry *r);

/* @brief Gives the policy every active job's plan, merged by their read rates, if the set of
 * plans changed (list_lock held for writing). */
void mf_refresh_hint(struct mf_registry *r);

/*
 * @brief Samples each job's position and tells the policy's set its read rate: the positions
 * it moved over the window of samples (the prefetcher, every MF_RATE_MS). Steady over the
 * window, as a training job's step time is; a job that stops reads at a trickle, one that
 * has not started is not measured (the mean of the others).
 */
void mf_measure_rates(struct mf_registry *r);

/*
 * @brief Makes a listed prefix manifest a job once its listing ended: state arrays, order and
 * future (built without locks, swapped in under list_lock). reg_mu held, not list_lock or mu.
 * @return SC_OK, SC_ENOMEM, SC_ETOOBIG (the ranges cover more blocks than a future holds:
 *         err says so).
 */
sc_code mf_activate(struct mf *m, struct api_err *err);

/* @brief The step a job's trainers reached: its position over its number of ranks (reads of
 * each rank). m->fut must be set. */
uint64_t mf_step(struct mf *m);

/* @brief The registry's block size (cfg.block_size, or the store's default). */
uint32_t mf_block_size(const struct mf_registry *r);

/* @brief The trainer's position in m's plan, 0..accesses (an access read in part counts as
 * not read yet). m->fut must be set. */
uint64_t mf_position(struct mf *m);

/* @brief The bytes dataset index idx counts for in progress: its object's size, or its
 * range's length, cut to the object once its size is known (m->mu held). */
uint64_t mf_item_bytes(const struct mf *m, uint32_t idx);

/* @brief Records the size of idx's object, if not known yet (size 0: nothing), and
 * what it changes in the byte counts (m->mu held). */
void mf_learn_size(struct mf *m, uint32_t idx, uint64_t size);

/* @brief Marks dataset index idx cached; size is its object's, or 0 (m->mu held). */
void mf_mark_cached(struct mf *m, uint32_t idx, uint64_t size);

/*
 * @brief Keeps each job's step in the cache directory (<id>.step for each of its
 * registrations) where it moved since the last call, so that a restart resumes there.
 * The prefetcher calls it every MF_STEP_SAVE_MS and once when it stops.
 */
void mf_save_steps(struct mf_registry *r);

#define MF_STEP_SAVE_MS 2000 /* how often the trainers' positions are written at most */

/* @brief A new registration under id, not listed, in state MF_LISTING. NULL: no memory. */
struct mf *mf_new_registration(struct mf_registry *r, const char *id);

/*
 * @brief Registration m (not listed) takes plan p: it joins the job p belongs to, or is a job
 * of its own, activated when p is ready; its job starts at step `resume` unless further
 * already. Then m is listed and the policy hinted. reg_mu held, not list_lock.
 * @return SC_OK (p is m's, or freed); SC_EINVAL (a named job p cannot join: err), SC_ETOOBIG,
 *         SC_ENOMEM (p is still the caller's unless m->plan == p).
 */
sc_code mf_register_plan(struct mf_registry *r, struct mf *m, struct plan *p, uint64_t resume,
                         struct api_err *err);

/* @brief Forgets registration id's files in the cache directory. */
void mf_forget(struct mf_registry *r, const char *id);

/* @brief Unlinks m from the registry's list, if listed (list_lock held for writing). */
void mf_unlink(struct mf_registry *r, struct mf *m);

/* registrar.c: the registrar thread's body, which parses large bodies (MF_PARSING). */
void *mf_registrar_main(void *arg);

/* @brief Wakes the registrar: a body waits. */
void mf_kick_registrar(struct mf_registry *r);

/*
 * @brief Whether item idx of job m is cached, without counting a read with the policy: a
 * whole object as store_peek() says (a block object: all its blocks); a range also when every
 * block it covers is, or when it starts past the end of its object (of known size: no byte of
 * it exists, so nothing is warmed, not even the metadata of a small object). m->mu held.
 * @param[out] size its object's size when known, else 0.
 */
bool mf_item_cached(struct mf *m, uint32_t idx, uint64_t *size);

/* ---- fleet_sync.c: manifests on a fleet (docs/fleet.md) ---- */

#define MF_FLEET_POLL_MS 1000 /* the peers' progress of each job is asked this often */

/* @brief Queues what registration id's POST (body) or DELETE (body NULL) sends to every live
 * peer; the body is copied. No-op without a fleet. Any lock but wake_mu. */
void mf_forward(struct mf_registry *r, const char *id, const char *body, size_t len);

/* @brief The fleet thread's wait (wake_mu not held): for a forward queued, the time poll_at_ms
 * (sc_now_ms) or the end. Returns the forward (the caller's, for mf_send_forward), or NULL. */
struct mf_forward *mf_next_forward(struct mf_registry *r, int64_t poll_at_ms);

/* @brief Sends forward f to every live peer, and frees it. */
void mf_send_forward(struct mf_registry *r, struct mf_forward *f);

/* @brief Asks the live peers for their progress of every job at work and gives each job the
 * answers (by id: no lock is held while a peer is asked). */
void mf_poll_peers(struct mf_registry *r);

/* @brief Frees what is still queued (the thread stopped). */
void mf_forward_free_all(struct mf_registry *r);

/* @brief Appends id; false (nothing appended) when out of memory. */
bool mf_ids_add(struct mf_ids *l, const char *id);

/* @brief The ids of the listed registrations keep() accepts (list_lock taken here), so that
 * peers can be asked about them with no lock held. Out of memory: the ids taken so far. */
struct mf_ids mf_listed_ids(struct mf_registry *r, bool (*keep)(const struct mf *m));

/* @brief A registration's tag on a fleet (new_id): "-" and 6 hex digits of the URL of the
 * gateway it was posted to, its origin. */
void mf_fleet_tag(const char *url, char tag[8]);

/* @brief The fleet's other peers, in URL order; *n of them. NULL: out of memory. Free it. */
struct fleet_peer_info *mf_other_peers(struct mf_registry *r, size_t *n);

/* @brief GETs registration id (its progress) from one peer, fleet-signed: *status (0 when
 * there was no answer) and the answer's body, which the caller frees (sc_buf_free). No lock
 * held. Returns what up_peer_call() does. */
sc_code mf_ask_peer(struct mf_registry *r, const char *peer, const char *id, long *status,
                    struct sc_buf *answer);

/* @brief Sends registration id's POST (body, len bytes) or DELETE (body NULL) to one peer,
 * fleet-signed; false (logged) when it failed or was refused. No lock held. */
bool mf_send_to_peer(struct mf_registry *r, const char *peer, const char *id, const char *body,
                     size_t len);

/* ---- fleet_reconcile.c: peers that missed a registration or a withdrawal ---- */

#define MF_RECONCILE_MS 3000  /* how often registrations are compared with the peers' */
#define MF_REOFFER_MS   10000 /* a registration is sent again to one peer at most this often */

/* @brief One pass (the fleet thread's, no lock held): the origin of each registration sends
 * it again to a live peer that has not had it in two passes in a row. Returns the ids (free
 * v) of the copies held here whose origin has not had them in two passes in a row: withdrawn
 * there while this gateway was down, for the caller to withdraw here. */
struct mf_ids mf_reconcile(struct mf_registry *r);

/* @brief Frees the reconciler's memory (the thread stopped). */
void mf_reconcile_free(struct mf_registry *r);

/* @brief The "fleet" object of job j's progress: the sums over the gateways that reported
 * (j->mu held). NULL without a fleet. */
json_t *mf_fleet_progress(struct mf *j);

/* prefetch.c: the prefetcher thread's body. */
void *mf_prefetch_main(void *arg);

#endif
