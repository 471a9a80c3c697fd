/*
 * store_fixture.h - what the store's unit tests share: a store opened in its own mkdtemp
 * directory and removed with it, reopened to test restarts, a job's done callback recorded,
 * and reproducible bodies. Include after <cmocka.h> and store.h.
 */
#ifndef SC_TEST_STORE_FIXTURE_H
#define SC_TEST_STORE_FIXTURE_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pattern.h"

struct fixture {
    char dir[64];
    struct store_config cfg;
    store *st;
};

/* What a job's done callback reported. */
struct outcome {
    int calls;
    sc_code rc;
};

static inline void record_outcome(void *arg, sc_code rc)
{
    struct outcome *o = arg;
    o->calls++;
    o->rc = rc;
}

static inline unsigned char *make_body(size_t len, uint32_t seed)
{
    unsigned char *b = malloc(len > 0 ? len : 1);
    assert_non_null(b);
    fill_bytes(b, len, seed);
    return b;
}

static inline void open_store(struct fixture *f)
{
    assert_int_equal(store_open(&f->cfg, &f->st), SC_OK);
    assert_non_null(f->st);
}

static inline void close_store(struct fixture *f)
{
    store_close(f->st);
    f->st = NULL;
}

static inline void reopen_store(struct fixture *f)
{
    close_store(f);
    open_store(f);
}

/*
 * Makes /tmp/sc-<tag>-XXXXXX and opens a store there with cfg (its dir set to it); the
 * fixture goes to *state for fixture_teardown(). cfg.policy must be set.
 */
static inline int fixture_setup(void **state, const char *tag, struct store_config cfg)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/sc-%s-XXXXXX", tag);
    assert_non_null(mkdtemp(f->dir));
    f->cfg = cfg;
    f->cfg.dir = f->dir;
    assert_non_null(f->cfg.policy);
    open_store(f);
    *state = f;
    return 0;
}

static inline int fixture_remove_entry(const char *path, const struct stat *sb, int flag,
                                       struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Closes the store (if open) and removes its directory. */
static inline int fixture_teardown(void **state)
{
    struct fixture *f = *state;
    if (f->st)
        store_close(f->st);
    nftw(f->dir, fixture_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

#endif
