/*
 * store.c - opening and closing the store, and its counters.
 *
 * The LMDB environment lives in cfg->dir with flags MDB_NOTLS (a read view
 * owns its reader slot, so it can be closed on any thread) and MDB_NORDAHEAD
 * (chunks are read at random; read-ahead would evict useful pages). Writes
 * keep LMDB's default durability: every commit is synced, and the writer
 * commits queued jobs in batches to spread that cost.
 *
 * One process at a time: store_open() takes an exclusive flock(2) on
 * <dir>/s3cached.lock and holds it until store_close(). LMDB itself admits
 * several processes, but object ids, used bytes and the policy's state are
 * this process's writer's alone; a second gateway on the directory would
 * hand out the same ids and overwrite another object's chunks.
 *
 * The map is capacity + capacity/4 + 64 MiB. The slack is needed because
 * LMDB cannot reuse pages freed after the oldest open read view, and chunks
 * take whole overflow pages; the writer still handles a full map (see
 * store_writer.c).
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"

#define MAP_SLACK           (64ull * 1024 * 1024)
#define CAPACITY_MAX        (1ull << 60)
#define DEFAULT_MAX_READERS 512u
#define N_DBIS              5
#define N_LOCKS             8 /* see init_locks() */
#define LOCK_FILE           "s3cached.lock"

/* The directory must be writable (and searchable) with this process's effective ids. */
static sc_code check_writable(const char *dir)
{
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0)
        return SC_OK;
    int err = errno;
    if (st_refused(err))
        return st_report_refused(dir, "the cache directory", err);
    sc_err("store: %s: %s", dir, strerror(err));
    return SC_EIO;
}

/* Creates dir and its missing parents (mode 0700), like mkdir -p. */
static sc_code make_dirs(const char *dir)
{
    char path[PATH_MAX];
    size_t len = strnlen(dir, sizeof(path));
    if (len == 0 || len >= sizeof(path))
        return SC_EINVAL;
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            int err = errno;
            if (st_refused(err)) {
                char *slash = strrchr(path, '/'); /* the parent refused the new directory */
                if (slash != NULL && slash != path)
                    *slash = '\0';
                return st_report_refused(slash == path ? "/" : path, "into the directory", err);
            }
            sc_err("store: mkdir %s: %s", path, strerror(err));
            return SC_EIO;
        }
        path[i] = saved;
    }
    return SC_OK;
}

/* Takes the directory's lock for this store; SC_EBUSY if another process holds it. The
 * kernel drops it when the process ends, however it ends. */
static sc_code lock_dir(store *st, const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, LOCK_FILE) >= (int)sizeof(path))
        return SC_EINVAL;
    st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (st->lock_fd < 0) {
        sc_err("store: cannot open %s: %s", path, strerror(errno));
        return SC_EIO;
    }
    if (flock(st->lock_fd, LOCK_EX | LOCK_NB) == 0)
        return SC_OK;
    if (errno == EWOULDBLOCK) {
        sc_err("store: %s is in use by another s3cached process; one cache directory serves "
               "one gateway at a time",
               dir);
        return SC_EBUSY;
    }
    sc_err("store: cannot lock %s: %s", path, strerror(errno));
    return SC_EIO;
}

static bool policy_complete(const struct policy_ops *p)
{
    return p != NULL && p->init != NULL && p->on_insert != NULL && p->on_hit != NULL &&
           p->on_remove != NULL && p->pick_victim != NULL && p->free != NULL;
}

static sc_code check_config(const struct store_config *cfg)
{
    if (cfg == NULL || cfg->dir == NULL || !policy_complete(cfg->policy))
        return SC_EINVAL;
    if (cfg->capacity_bytes == 0 || cfg->capacity_bytes > CAPACITY_MAX)
        return SC_EINVAL;
    if (cfg->chunk_size != 0 && (cfg->chunk_size < ST_CHUNK_MIN || cfg->chunk_size > ST_CHUNK_MAX))
        return SC_EINVAL;
    if (cfg->block_size != 0 &&
        (cfg->block_size < STORE_BLOCK_MIN || cfg->block_size > STORE_BLOCK_MAX))
        return SC_EINVAL;
    return SC_OK;
}

static size_t map_size(uint64_t capacity)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t want = capacity + capacity / 4 + MAP_SLACK;
    return (size_t)((want + page - 1) / page * page);
}

/*
 * Finds where LMDB mapped the data file, for store_obj_file_span(): the mapping of that file
 * (its device and inode) from offset 0 in /proc/self/maps. mdb_env_info()'s me_mapaddr does
 * not say: it is the address recorded in the meta page, set only with MDB_FIXEDMAP. Not
 * found (no /proc), st->map stays NULL and every span is refused.
 */
static void find_map(store *st)
{
    struct stat sb;
    char line[512];
    FILE *f = fstat(st->data_fd, &sb) == 0 ? fopen("/proc/self/maps", "re") : NULL;
    if (f == NULL) {
        sc_warn("store: cannot find the map of the data file: hits are sent from memory");
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long start, end, offset, inode;
        unsigned dev_major, dev_minor;
        if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &start, &end, &offset, &dev_major,
                   &dev_minor, &inode) == 6 &&
            offset == 0 && inode == (unsigned long long)sb.st_ino &&
            dev_major == major(sb.st_dev) && dev_minor == minor(sb.st_dev)) {
            st->map = (const unsigned char *)(uintptr_t)start;
            st->map_len = (size_t)(end - start);
            break;
        }
    }
    fclose(f);
    if (st->map == NULL)
        sc_warn("store: cannot find the map of the data file: hits are sent from memory");
}

static sc_code open_env(store *st, const struct store_config *cfg)
{
    unsigned readers = cfg->max_readers != 0 ? cfg->max_readers : DEFAULT_MAX_READERS;
    int dead = 0;
    int mrc = mdb_env_create(&st->env);
    if (mrc != 0)
        return st_lmdb_err(mrc, "mdb_env_create");
    mrc = mdb_env_set_maxdbs(st->env, N_DBIS);
    if (mrc == 0)
        mrc = mdb_env_set_maxreaders(st->env, readers);
    /* Set before opening, this also replaces the size an existing environment was created with. */
    if (mrc == 0)
        mrc = mdb_env_set_mapsize(st->env, map_size(cfg->capacity_bytes));
    if (mrc == 0)
        mrc = mdb_env_open(st->env, cfg->dir, MDB_NOTLS | MDB_NORDAHEAD, 0600);
    if (mrc == 0)
        mrc = mdb_reader_check(st->env, &dead);
    if (st_refused(mrc)) /* the directory is writable, its files are not */
        return st_report_refused(cfg->dir, "the cache files in", mrc);
    if (mrc != 0)
        return st_lmdb_err(mrc, "opening the environment");
    if (dead > 0)
        sc_warn("store: cleared %d stale reader slots", dead);
    mrc = mdb_env_get_fd(st->env, &st->data_fd);
    if (mrc != 0)
        return st_lmdb_err(mrc, "mdb_env_get_fd");
    find_map(st);
    return SC_OK;
}

/*
 * Removes objects oldest-first until the used bytes fit the capacity (after
 * a restart with a smaller capacity).
 */
static sc_code fit_capacity(store *st)
{
    struct st_wtxn w;
    sc_code rc;
    if (st->used <= st->capacity)
        return SC_OK;
    rc = st_wtxn_begin(st, &w);
    if (rc != SC_OK)
        return rc;
    rc = st_wtxn_evict(&w, st->capacity);
    if (rc != SC_OK) {
        st_wtxn_abort(&w);
        return rc;
    }
    return st_wtxn_commit(&w);
}

static void destroy_locks(store *st, int made)
{
    if (made > 7)
        pthread_cond_destroy(&st->scrub_wake);
    if (made > 6)
        pthread_mutex_destroy(&st->scrub_lock);
    if (made > 5)
        st_readers_free(st);
    if (made > 4)
        pthread_cond_destroy(&st->q_done);
    if (made > 3)
        pthread_cond_destroy(&st->q_work);
    if (made > 2)
        pthread_mutex_destroy(&st->q_lock);
    if (made > 1)
        pthread_mutex_destroy(&st->stats_lock);
    if (made > 0)
        pthread_mutex_destroy(&st->pol_lock);
}

/* Initializes the five locks, the readers' slots and the scrubber's lock and condition;
 * *made counts those initialized, for destroy_locks(). */
static sc_code init_locks(store *st, unsigned max_readers, int *made)
{
    sc_code rc = SC_ENOMEM;
    *made = 0;
    if (pthread_mutex_init(&st->pol_lock, NULL) != 0)
        goto out;
    (*made)++;
    if (pthread_mutex_init(&st->stats_lock, NULL) != 0)
        goto out;
    (*made)++;
    if (pthread_mutex_init(&st->q_lock, NULL) != 0)
        goto out;
    (*made)++;
    if (pthread_cond_init(&st->q_work, NULL) != 0)
        goto out;
    (*made)++;
    if (pthread_cond_init(&st->q_done, NULL) != 0)
        goto out;
    (*made)++;
    if (st_readers_init(st, max_readers) != SC_OK)
        goto out;
    (*made)++;
    if (pthread_mutex_init(&st->scrub_lock, NULL) != 0)
        goto out;
    (*made)++;
    if (sc_cond_init_monotonic(&st->scrub_wake) != 0)
        goto out;
    (*made)++;
    rc = SC_OK;
out:
    return rc;
}

/* Frees what store_open() built, in reverse; the writer must not be running. */
static void release(store *st, int locks)
{
    if (st->env != NULL) {
        st_rtxn_drop_idle(st);
        mdb_env_close(st->env);
    }
    if (st->lock_fd >= 0)
        close(st->lock_fd); /* after the environment: nobody else writes before it is shut */
    if (st->pol_state != NULL)
        st->pol->free(st->pol_state);
    st_verify_free(st);
    destroy_locks(st, locks);
    free(st);
}

sc_code store_open(const struct store_config *cfg, store **out)
{
    store *st = NULL;
    int locks = 0;
    sc_code rc = check_config(cfg);
    *out = NULL;
    if (rc != SC_OK)
        goto out;
    rc = SC_ENOMEM;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        goto out;
    st->lock_fd = -1;
    st->capacity = cfg->capacity_bytes;
    st->chunk_size = cfg->chunk_size != 0 ? cfg->chunk_size : STORE_DEFAULT_CHUNK_SIZE;
    st->block_size = cfg->block_size != 0 ? cfg->block_size : STORE_DEFAULT_BLOCK_SIZE;
    st->verify = cfg->verify_checksums;
    st->scrub_rate = cfg->scrub_rate;
    st->pol = cfg->policy;
    st->stats.capacity_bytes = cfg->capacity_bytes;
    rc = init_locks(st, cfg->max_readers != 0 ? cfg->max_readers : DEFAULT_MAX_READERS, &locks);
    if (rc != SC_OK)
        goto out;
    rc = make_dirs(cfg->dir);
    if (rc == SC_OK)
        rc = check_writable(cfg->dir);
    if (rc == SC_OK)
        rc = lock_dir(st, cfg->dir);
    if (rc != SC_OK)
        goto out;
    rc = open_env(st, cfg);
    if (rc == SC_OK)
        rc = st_verify_init(st);
    if (rc != SC_OK)
        goto out;
    rc = st->pol->init(cfg->capacity_bytes, &st->pol_state);
    if (rc != SC_OK)
        goto out;
    rc = st_scan(st);
    if (rc != SC_OK)
        goto out;
    rc = fit_capacity(st);
    if (rc != SC_OK)
        goto out;
    rc = st_writer_start(st);
    if (rc != SC_OK)
        goto out;
    rc = st_scrub_start(st);
    if (rc != SC_OK) {
        st_writer_stop(st);
        goto out;
    }
    sc_info("store: %s: %llu objects (%llu in %llu blocks), %llu of %llu bytes used", cfg->dir,
            (unsigned long long)st->objects, (unsigned long long)st->block_objects,
            (unsigned long long)st->blocks, (unsigned long long)st->used,
            (unsigned long long)st->capacity);
    *out = st;
    st = NULL;
out:
    if (st != NULL)
        release(st, locks);
    return rc;
}

void store_close(store *st)
{
    if (st == NULL)
        return;
    st_scrub_stop(st); /* before the writer: it queues removals */
    st_writer_stop(st);
    release(st, N_LOCKS);
}

sc_code store_hint(store *st, const struct policy_hint *h)
{
    if (st->pol->hint == NULL)
        return SC_OK;
    st_hits_drain(st); /* the hint comes after every hit so far */
    pthread_mutex_lock(&st->pol_lock);
    sc_code rc = st->pol->hint(st->pol_state, h);
    pthread_mutex_unlock(&st->pol_lock);
    return rc;
}

bool store_would_admit(store *st, const char *bucket, const char *key, uint64_t size)
{
    struct policy_obj obj = {.id = 0, .size = size, .bucket = bucket, .key = key};
    return st_pol_admit(st, &obj);
}

bool store_would_admit_block(store *st, const char *bucket, const char *key, uint32_t idx,
                             uint64_t size)
{
    struct policy_obj obj = {
        .id = 0, .size = size, .bucket = bucket, .key = key, .is_block = true, .block = idx};
    return st_pol_admit(st, &obj);
}

void store_get_stats(store *st, struct store_stats *out)
{
    pthread_mutex_lock(&st->stats_lock);
    *out = st->stats;
    pthread_mutex_unlock(&st->stats_lock);
    out->checks = atomic_load_explicit(&st->checks, memory_order_relaxed);
}
