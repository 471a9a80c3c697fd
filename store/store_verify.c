/*
 * store_verify.c - checksums once per residency: the record of which chunks and
 * blocks this process has checked, and the check itself.
 *
 * A read used to compute the CRC32C of every chunk and block it served, at every hit
 * (16 % of the CPU of a 100 KiB hit; most of the time to the first byte of an 8 MiB
 * block). What the check is for is bytes that changed on the disk: those reach the map
 * only when the kernel reads the page back from the disk into the page cache. So a value
 * is checked when it is not in the record, or when any of its pages is not in the page
 * cache (mincore(2) on its page-aligned range, before any of its bytes is read: the read
 * that follows faults them in, and the CRC32C checks what came); a value checked since
 * the store opened whose pages are all resident is served as it is. (Linux answers
 * mincore() on a file mapping only to a process that owns the file or may write it, and
 * claims every page resident to others; LMDB opened data.mdb for writing, so this one may.)
 *
 * A value this process's writer stores counts as checked from its commit (st_mark_written):
 * the writer computed its CRC32C from the bytes LMDB then wrote into the page cache (no
 * MDB_WRITEMAP), so a first read from there would compute the same and prove nothing; a
 * page that leaves the page cache is checked when read back, as any. Only a change made in
 * the page cache itself before the first read is then left to the scrubber (case 3 below),
 * which the first read used to catch. The writer sets the bit after its commit, and is the
 * only deleter of values, so no deletion can race the set; a check that failed between the
 * commit and the set takes the set back (st_mark_written in store_int.h).
 *
 * The record is one bit per page of the map, set on the first page of a value whose
 * check passed, or that the writer stored (map size / 32768 bytes of address space, e.g.
 * 40 MiB for a 1 TiB cache, resident only where bits were set: about 4 bytes per cached
 * 100 KiB object). A value larger than a page lives in overflow pages of its own, so at
 * any time no two values start on one page. Values of LMDB are copy-on-write: the pages
 * of a value are never written while it exists; they are freed when it is deleted (chunks
 * and blocks are never replaced in place: the writer puts them with MDB_NOOVERWRITE) and
 * another value may then start on one of them. So a bit is sound if it is cleared when
 * its value is deleted and never set again for that value afterwards:
 *   - The writer calls st_forget() for every chunk and block it deletes, in the deleting
 *     transaction T: it stores T into forgot[slot of the page], then clears the bit.
 *   - A reader sets the bit after its check passed, then loads forgot[slot]: if it is
 *     above the reader's snapshot, a deletion of the value it read (or of another in that
 *     slot) may have come after its snapshot, and it clears the bit again. Both sides are
 *     sequentially consistent, so either the reader sees T (and clears), or its set came
 *     before the writer's clear.
 *   - A reader that sees the value has a snapshot older than T; LMDB reuses pages freed by
 *     T only once every reader is past T, so the page holds no other value while such a
 *     reader could still set its bit. A reader whose snapshot is past T cannot see the old
 *     value: a bit set by it is for the value that starts there in its snapshot.
 * Object ids are never reused (next_id only grows and is saved with every commit; the scan
 * starts above every id found), but a block's key is: a block evicted or dropped for its
 * checksum may be stored again under the same id and index. Keying the record by page, not
 * by key, makes that a new value at new pages, and removal clears the old one's bit.
 *
 * What residency proves, and what it does not (docs/security.md): the kernel reads a page
 * from the disk only when something touches a page that is not in the page cache. Reads
 * of the store touch a value only after this check, and the map has MADV_RANDOM
 * (MDB_NORDAHEAD), so a fault reads the one page it needs and brings in no neighbour; the
 * scrubber takes a value out of the record before it reads it (st_uncheck) and puts it back
 * once its check passed; a failed check takes it out too, so the read beside the one that
 * found the rot checks again. So a resident value of the record holds the bytes that
 * were checked, except (1) a page evicted and read back while a response is being sent
 * after its check (the window a check before the send always had; the page then stays
 * unchecked until it leaves the page cache again or the scrubber reaches it); (2) a page
 * read in by another process (a backup reading data.mdb; LMDB's own descriptor, which
 * store_obj_file_span() hands to --zero-copy's sendfile(2) as dup(2)s, has
 * POSIX_FADV_RANDOM, so reading a checked value through it reads in no neighbour); (3) a
 * write to data.mdb by another process while the page is resident, which changes the
 * cached page itself; (4) a bit flip in RAM. The scrubber, which computes every CRC32C
 * whatever the record says, catches (1) to (4) on its next pass.
 *
 * Checking only the first and last pages, or a generation, would cost less than mincore
 * (about 2 us for a 100 KiB value here, 30 us for 8 MiB, against 9 us and 1.2-3.7 ms of
 * CRC32C) but is not sound: the pages of a value leave the page cache one by one (a range
 * read touches only some of them), and nothing cheaper tells that a page was read back.
 * Values under CHECK_ALWAYS_BELOW are checked at every read: their CRC32C costs about what
 * the system call does, and a value under a page may live in a leaf page, which LMDB
 * copies (moving the value) whenever a neighbour changes.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/crc32c.h"
#include "../common/log.h"

#define CHECK_ALWAYS_BELOW (16u * 1024u)
#define RESIDENT_BATCH     4096u /* pages mincore() reports per call */

sc_code st_verify_init(store *st)
{
    MDB_stat stat;
    if (mdb_env_stat(st->env, &stat) != 0)
        return SC_EIO;
    st->page = stat.ms_psize;
    st->os_page = (size_t)sysconf(_SC_PAGESIZE);
    if (!st->verify)
        return SC_OK; /* nothing is checked: no record */
    /* No read-ahead on LMDB's descriptor (and its dup(2)s: one open file): a read(2) or
     * sendfile(2) of a checked value reads no neighbour's pages in unchecked. */
    int err = posix_fadvise(st->data_fd, 0, 0, POSIX_FADV_RANDOM);
    if (err != 0)
        sc_warn("store: posix_fadvise(POSIX_FADV_RANDOM) on the data file: %s", strerror(err));
    if (st->map == NULL) { /* store.c's find_map() did not find it: no record */
        sc_warn("store: every read checks the CRC32C of what it serves");
        return SC_OK;
    }
    size_t words = (st->map_len / st->page + 63) / 64;
    st->checked_len = (words * sizeof(uint64_t) + st->os_page - 1) / st->os_page * st->os_page;
    /* Untouched pages of it cost no memory, and none is reserved (MAP_NORESERVE). */
    void *bits = mmap(NULL, st->checked_len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (bits == MAP_FAILED) {
        sc_err("store: no memory for the record of checked values (%zu bytes): %s", st->checked_len,
               strerror(errno));
        st->checked_len = 0;
        return SC_ENOMEM;
    }
    st->checked = bits;
    return SC_OK;
}

void st_verify_free(store *st)
{
    if (st->checked != NULL)
        munmap((void *)st->checked, st->checked_len);
    st->checked = NULL;
}

/* The page a tracked value starts on, or SIZE_MAX for a value the record does not keep. */
static size_t first_page(const store *st, const void *data, size_t len)
{
    const unsigned char *p = data;
    if (st->checked == NULL || len < CHECK_ALWAYS_BELOW || len < st->page || p < st->map ||
        (size_t)(p - st->map) >= st->map_len)
        return SIZE_MAX;
    return (size_t)(p - st->map) / st->page;
}

static size_t forgot_slot(size_t page)
{
    return (size_t)(((uint64_t)page * 0x9e3779b97f4a7c15ull) >> 54) % ST_FORGOT_SLOTS;
}

/* Whether every page of [data, data + len) is in the page cache. */
static bool resident(const store *st, const void *data, size_t len)
{
    unsigned char vec[RESIDENT_BATCH];
    size_t os_page = st->os_page;
    uintptr_t at = (uintptr_t)data & ~(uintptr_t)(os_page - 1);
    uintptr_t end = (uintptr_t)data + len;
    while (at < end) {
        size_t pages = (end - at + os_page - 1) / os_page;
        if (pages > RESIDENT_BATCH)
            pages = RESIDENT_BATCH;
        if (mincore((void *)at, pages * os_page, vec) != 0)
            return false; /* cannot tell: check */
        for (size_t i = 0; i < pages; i++)
            if ((vec[i] & 1u) == 0)
                return false;
        at += pages * os_page;
    }
    return true;
}

bool st_needs_check(store *st, const void *data, size_t len)
{
    if (!st->verify)
        return false;
    size_t page = first_page(st, data, len);
    bool known =
        page != SIZE_MAX && (atomic_load_explicit(&st->checked[page / 64], memory_order_acquire) &
                             (1ull << (page % 64))) != 0;
    if (known && resident(st, data, len))
        return false;
    atomic_fetch_add_explicit(&st->checks, 1, memory_order_relaxed);
    return true;
}

bool st_tracks_len(const store *st, size_t len)
{
    return st->verify && st->checked != NULL && len >= CHECK_ALWAYS_BELOW && len >= st->page;
}

uint64_t st_failed_checks(store *st)
{
    return atomic_load(&st->failed);
}

/* Both sides are sequentially consistent: a failing reader counts, then unchecks; the writer
 * sets its bits, then loads the count. Either the writer's load sees the count move (and takes
 * its bits back) or it came first, and then the reader's uncheck came after the writer's set. */
void st_mark_written(store *st, const struct st_written *v, size_t n, uint64_t failed_before)
{
    if (!st->verify)
        return;
    for (size_t i = 0; i < n; i++) {
        size_t page = v[i].data != NULL ? first_page(st, v[i].data, v[i].len) : SIZE_MAX;
        if (page != SIZE_MAX)
            atomic_fetch_or(&st->checked[page / 64], 1ull << (page % 64));
    }
    if (st_failed_checks(st) == failed_before)
        return;
    for (size_t i = 0; i < n; i++)
        if (v[i].data != NULL)
            st_uncheck(st, v[i].data, v[i].len);
}

void st_uncheck(store *st, const void *data, size_t len)
{
    size_t page = first_page(st, data, len);
    if (page != SIZE_MAX)
        atomic_fetch_and(&st->checked[page / 64], ~(1ull << (page % 64)));
}

bool st_check(store *st, MDB_txn *txn, const void *data, size_t len, uint32_t want)
{
    if (crc32c(0, data, len) != want) {
        atomic_fetch_add(&st->failed, 1); /* before the uncheck: st_mark_written() */
        st_uncheck(st, data, len);        /* now resident: the next read must not skip it */
        return false;
    }
    size_t page = first_page(st, data, len);
    if (page == SIZE_MAX)
        return true;
    uint64_t bit = 1ull << (page % 64);
    _Atomic uint64_t *word = &st->checked[page / 64];
    _Atomic uint64_t *forgot = &st->forgot[forgot_slot(page)];
    uint64_t snapshot = (uint64_t)mdb_txn_id(txn);
    if (atomic_load(forgot) > snapshot)
        return true; /* deleted after this snapshot, maybe: not for the record */
    if ((atomic_load_explicit(word, memory_order_relaxed) & bit) == 0)
        atomic_fetch_or(word, bit);
    if (atomic_load(forgot) > snapshot) /* the writer's deletion raced this set */
        atomic_fetch_and(word, ~bit);
    return true;
}

void st_forget(store *st, MDB_txn *txn, const void *data, size_t len)
{
    size_t page = first_page(st, data, len);
    if (page == SIZE_MAX)
        return; /* untracked, or a page this transaction wrote: no reader saw it */
    atomic_store(&st->forgot[forgot_slot(page)], (uint64_t)mdb_txn_id(txn));
    st_uncheck(st, data, len);
}
