/*
 * barrier.c - the step barrier the ranks of one emulated data-parallel job share
 * (trainsim.h). The file holds world_size 64-bit counters, rank r's at offset 8r;
 * every rank maps it shared, stores its own counter (release) and reads the
 * others' (acquire). Zeros are the start, so a new file needs no set-up: ranks
 * may open it in any order, and growing it to its size is the same for each.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trainsim.h"

struct ts_barrier {
    uint64_t *counts; /* the mapped file: arrivals of each rank */
    size_t map_len;
    uint32_t world_size, rank;
    uint64_t arrived; /* this rank's arrivals */
};

/* Maps fd, grown to len bytes if it is empty; SC_EINVAL for a file of another size. */
static sc_code map_counts(int fd, size_t len, uint64_t **out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return SC_EIO;
    if (st.st_size != 0 && (uint64_t)st.st_size != len)
        return SC_EINVAL;
    if (st.st_size == 0 && ftruncate(fd, (off_t)len) != 0)
        return SC_EIO;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return SC_EIO;
    *out = m;
    return SC_OK;
}

sc_code ts_barrier_open(const char *path, const struct ts_split *split, ts_barrier **out)
{
    *out = NULL;
    ts_barrier *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return SC_ENOMEM;
    b->world_size = split->world_size;
    b->rank = split->rank;
    b->map_len = (size_t)split->world_size * sizeof(uint64_t);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    sc_code rc = fd < 0 ? SC_EIO : map_counts(fd, b->map_len, &b->counts);
    if (fd >= 0)
        close(fd); /* the mapping stays */
    if (rc == SC_OK && __atomic_load_n(&b->counts[b->rank], __ATOMIC_ACQUIRE) != 0)
        rc = SC_EINVAL; /* an earlier run's file: its counts would let this one pass */
    if (rc != SC_OK) {
        if (b->counts)
            munmap(b->counts, b->map_len);
        free(b);
        return rc;
    }
    *out = b;
    return SC_OK;
}

void ts_barrier_close(ts_barrier *b)
{
    if (b == NULL)
        return;
    __atomic_store_n(&b->counts[b->rank], TS_BARRIER_GONE, __ATOMIC_RELEASE);
    munmap(b->counts, b->map_len);
    free(b);
}

void ts_barrier_arrive(ts_barrier *b)
{
    b->arrived++;
    __atomic_store_n(&b->counts[b->rank], b->arrived, __ATOMIC_RELEASE);
}

bool ts_barrier_passed(const ts_barrier *b)
{
    for (uint32_t r = 0; r < b->world_size; r++)
        if (__atomic_load_n(&b->counts[r], __ATOMIC_ACQUIRE) < b->arrived)
            return false;
    return true;
}

sc_code ts_barrier_sync(ts_barrier *b, int64_t timeout_ms)
{
    int64_t deadline = sc_now_ns() + timeout_ms * 1000000;
    ts_barrier_arrive(b);
    while (!ts_barrier_passed(b)) {
        if (sc_now_ns() > deadline)
            return SC_ETIMEOUT;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    return SC_OK;
}
