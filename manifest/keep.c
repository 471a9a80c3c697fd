/*
 * keep.c - what the registry keeps in the cache directory (<cache-dir>/manifests/), so that a
 * restart resumes where the trainers are: each registration's body (<id>.json), its job's step
 * (<id>.step, written whole by rename) and a cache-aware job's decisions (<id>.cached,
 * appended, a torn end cut off).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "manifest_int.h"

/* The path of registration id's file with this suffix in the cache directory; false if none. */
static bool file_of(const struct mf_registry *r, const char *id, const char *suffix, char *path,
                    size_t cap)
{
    return r->cfg.dir != NULL && snprintf(path, cap, "%s/%s%s", r->cfg.dir, id, suffix) < (int)cap;
}

/* Keeps the body in the cache directory, so the manifest outlives a restart. */
void mf_persist(struct mf_registry *r, const char *id, const char *body, size_t len)
{
    char path[4096];
    if (!file_of(r, id, ".json", path, sizeof(path)))
        return;
    FILE *f = fopen(path, "wbx");
    bool ok = f && fwrite(body, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        sc_warn("cannot keep manifest %s in %s: %s", id, r->cfg.dir, strerror(errno));
}

char *mf_read_kept(const struct mf_registry *r, const char *id, size_t *len)
{
    char path[4096];
    FILE *f = file_of(r, id, ".json", path, sizeof(path)) ? fopen(path, "rb") : NULL;
    long size = -1;
    char *body = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        body = malloc((size_t)size + 1);
    if (body && fread(body, 1, (size_t)size, f) != (size_t)size) {
        free(body);
        body = NULL;
    }
    if (f)
        fclose(f);
    *len = body ? (size_t)size : 0;
    return body;
}

void mf_forget(struct mf_registry *r, const char *id)
{
    char path[4096];
    if (file_of(r, id, ".json", path, sizeof(path)))
        unlink(path);
    if (file_of(r, id, ".step", path, sizeof(path)))
        unlink(path);
    if (file_of(r, id, ".cached", path, sizeof(path)))
        unlink(path);
}

/*
 * The state log of a cache-aware job (<id>.cached, one per registration): a record per
 * decided epoch, "epoch E bytes N\n" then the N bytes of plan_epoch_decision() and "\n",
 * appended when decided. A torn last record is ignored.
 */
void mf_log_decision(const struct mf_registry *r, const char *id, uint32_t e, const uint8_t *bits,
                     size_t len)
{
    char path[4096];
    FILE *f = file_of(r, id, ".cached", path, sizeof(path)) ? fopen(path, "ab") : NULL;
    bool ok = f && fprintf(f, "epoch %u bytes %zu\n", e, len) > 0 &&
              fwrite(bits, 1, len, f) == len && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok && r->cfg.dir != NULL)
        sc_warn("cannot log the cache-aware order of manifest %s, epoch %u: %s", id, e,
                strerror(errno));
}

/*
 * Decides again, in plan p, the epochs registration id's log holds (p not built yet). A torn
 * last record (a crash while appending) is cut off, so that records appended later are read.
 */
void mf_replay_decisions(const struct mf_registry *r, const char *id, struct plan *p)
{
    char path[4096];
    FILE *f = file_of(r, id, ".cached", path, sizeof(path)) ? fopen(path, "r+b") : NULL;
    size_t want = ((size_t)plan_objects(p) + 7) / 8, len;
    unsigned e;
    long good = 0;
    uint8_t *bits = malloc(want ? want : 1);
    while (f && bits && fscanf(f, "epoch %u bytes %zu", &e, &len) == 2 && fgetc(f) == '\n' &&
           len == want && fread(bits, 1, len, f) == len && fgetc(f) == '\n') {
        plan_decide_epoch(p, e, bits); /* a repeat or a wrong epoch is refused, harmlessly */
        good = ftell(f);
    }
    if (f && bits && fseek(f, 0, SEEK_END) == 0 && ftell(f) > good && good >= 0 &&
        ftruncate(fileno(f), good) != 0)
        sc_warn("manifest %s: cannot cut the torn end of %s: %s", id, path, strerror(errno));
    free(bits);
    if (f)
        fclose(f);
}

/* Copies job j's decided epochs into registration id's log, so it holds them when it becomes
 * the job's first registration (after the others withdrew, and a restart). */
void mf_log_decisions_of(const struct mf_registry *r, const struct mf *j, const char *id)
{
    size_t len = ((size_t)plan_objects(j->plan) + 7) / 8;
    for (uint32_t e = 0; e < plan_epochs(j->plan); e++)
        if (plan_epoch_decision(j->plan, e) != NULL)
            mf_log_decision(r, id, e, plan_epoch_decision(j->plan, e), len);
}

void mf_keep_withdrawal(const struct mf_registry *r, const char *id)
{
    char path[4096];
    FILE *f = file_of(r, id, ".withdrawn", path, sizeof(path)) ? fopen(path, "w") : NULL;
    if ((f == NULL || fclose(f) != 0) && r->cfg.dir != NULL)
        sc_warn("manifest %s: cannot keep its withdrawal in %s: %s", id, r->cfg.dir,
                strerror(errno));
}

bool mf_withdrawn_here(const struct mf_registry *r, const char *id)
{
    char path[4096];
    return file_of(r, id, ".withdrawn", path, sizeof(path)) && access(path, F_OK) == 0;
}

void mf_forget_withdrawal(const struct mf_registry *r, const char *id)
{
    char path[4096];
    if (file_of(r, id, ".withdrawn", path, sizeof(path)))
        unlink(path);
}

struct mf_ids mf_withdrawals(const struct mf_registry *r)
{
    static const char suffix[] = ".withdrawn";
    struct mf_ids l = {0};
    char id[MF_ID_MAX];
    DIR *d = r->cfg.dir ? opendir(r->cfg.dir) : NULL;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), idlen = len - (sizeof(suffix) - 1);
        if (len <= sizeof(suffix) - 1 || idlen >= MF_ID_MAX || e->d_name[0] != 'm' ||
            strcmp(e->d_name + idlen, suffix) != 0)
            continue;
        snprintf(id, sizeof(id), "%.*s", (int)idlen, e->d_name);
        if (!mf_ids_add(&l, id))
            break;
    }
    if (d != NULL)
        closedir(d);
    return l;
}

/* The number kept in the file name + suffix of the cache directory (0: none, or unreadable). */
static uint64_t read_number(const struct mf_registry *r, const char *name, const char *suffix)
{
    char path[4096], line[32];
    unsigned long long n = 0;
    FILE *f = file_of(r, name, suffix, path, sizeof(path)) ? fopen(path, "r") : NULL;
    if (f && (fgets(line, sizeof(line), f) == NULL || line[0] < '0' || line[0] > '9' ||
              sscanf(line, "%llu", &n) != 1))
        n = 0;
    if (f)
        fclose(f);
    return n;
}

/* Writes n into the file name + suffix, whole or not at all (a new file renamed over the
 * old); false (errno set) when it could not. */
static bool write_number(const struct mf_registry *r, const char *name, const char *suffix,
                         uint64_t n)
{
    char path[4096], tmp[4096], tmp_suffix[32];
    snprintf(tmp_suffix, sizeof(tmp_suffix), "%s.new", suffix);
    if (!file_of(r, name, suffix, path, sizeof(path)) ||
        !file_of(r, name, tmp_suffix, tmp, sizeof(tmp)))
        return true; /* nothing kept without a cache directory */
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "%llu\n", (unsigned long long)n) > 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return false;
    }
    return true;
}

uint64_t mf_read_next_id(const struct mf_registry *r)
{
    return read_number(r, "next-id", "");
}

void mf_save_next_id(const struct mf_registry *r, uint64_t next)
{
    if (!write_number(r, "next-id", "", next))
        sc_warn("cannot keep the manifests' id counter in %s: %s", r->cfg.dir, strerror(errno));
}

/* The step kept for registration id's job (0: none), so a restart resumes there. */
uint64_t mf_read_step(const struct mf_registry *r, const char *id)
{
    return read_number(r, id, ".step"); /* unreadable: from the start */
}

/* Writes step as registration id's, whole or not at all. */
static void write_step(const struct mf_registry *r, const char *id, uint64_t step)
{
    if (!write_number(r, id, ".step", step))
        sc_warn("cannot keep the position of manifest %s in %s: %s", id, r->cfg.dir,
                strerror(errno));
}

void mf_save_steps(struct mf_registry *r)
{
    if (r->cfg.dir == NULL)
        return;
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *j = r->list; j; j = j->next) {
        if (j->job != NULL || !mf_active(j))
            continue;
        uint64_t step = mf_step(j);
        if (step == j->saved)
            continue;
        j->saved = step;
        for (struct mf *m = r->list; m; m = m->next)
            if (m->n_own > 0 && mf_job_of(m) == j)
                write_step(r, m->id, step);
    }
    pthread_rwlock_unlock(&r->list_lock);
}
