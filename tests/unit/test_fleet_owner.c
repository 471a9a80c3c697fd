/*
 * test_fleet_owner.c - who owns what (fleet/owner.c, health.c): rendezvous ownership spread
 * evenly, membership changes measured (a 4th peer takes about 1/4 and only from the others, a
 * peer removed gives only its own), every gateway's view agreeing, and a failed peer owning
 * nothing for its backoff (doubling, capped, reset by an answer) on a clock the test drives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/hash.h"
#include "../../fleet/fleet_int.h"

#define SECRET "fleet-secret-0123456789"
#define NAMES  100000
#define P1     "http://127.0.0.1:9001"
#define P2     "http://127.0.0.2:9001"
#define P3     "http://127.0.0.3:9001"
#define P4     "http://127.0.0.4:9001"

static int64_t fake_now(void *arg)
{
    return *(int64_t *)arg;
}

static fleet *start(const char *peers, const char *self, unsigned min_ms, unsigned max_ms)
{
    struct fleet_config cfg = {
        .peers = peers,
        .self = self,
        .secret = (const unsigned char *)SECRET,
        .secret_len = strlen(SECRET),
        .down_min_ms = min_ms,
        .down_max_ms = max_ms,
    };
    fleet *f = NULL;
    assert_int_equal(fleet_start(&cfg, &f), SC_OK);
    return f;
}

/* The names the tests place: object names as the gateway hashes them. */
static uint64_t *names(void)
{
    uint64_t *n = malloc(NAMES * sizeof(*n));
    char key[32];
    assert_non_null(n);
    for (int i = 0; i < NAMES; i++) {
        snprintf(key, sizeof(key), "train/shard-%06d.tar", i);
        n[i] = sc_key_hash("dataset", key);
    }
    return n;
}

/* Index of url in urls, for counting. */
static int which(const char *url, const char *const *urls, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(url, urls[i]) == 0)
            return i;
    }
    fail_msg("owner %s is not a peer", url);
    return -1;
}

/* owners[i]: the index in urls of the owner of name i. */
static void owners_of(fleet *f, const uint64_t *n, const char *const *urls, int nurls, int *owners)
{
    for (int i = 0; i < NAMES; i++) {
        struct fleet_owner o;
        fleet_owner_of(f, n[i], &o);
        owners[i] = which(o.url, urls, nurls);
        assert_true(o.self == (strcmp(o.url, fleet_self(f)) == 0));
        assert_true(fleet_owns(f, n[i]) == o.self);
    }
}

static void shares_are_even(void **state)
{
    (void)state;
    static const char *const urls[] = {P1, P2, P3, P4};
    uint64_t *n = names();
    int *own = malloc(NAMES * sizeof(*own));
    for (int peers = 3; peers <= 4; peers++) {
        fleet *f = start(peers == 3 ? P1 "," P2 "," P3 : P1 "," P2 "," P3 "," P4, P1, 0, 0);
        int count[4] = {0};
        owners_of(f, n, urls, peers, own);
        for (int i = 0; i < NAMES; i++)
            count[own[i]]++;
        for (int p = 0; p < peers; p++) {
            double share = (double)count[p] / NAMES;
            printf("  %d peers: %s owns %.4f\n", peers, urls[p], share);
            assert_true(share > 1.0 / peers - 0.02 && share < 1.0 / peers + 0.02);
        }
        fleet_free(f);
    }
    free(own);
    free(n);
}

static void the_owner_is_the_highest_score(void **state)
{
    (void)state;
    static const char *const urls[] = {P1, P2, P3, P4};
    fleet *f = start(P4 "," P2 "," P3 "," P1, P3, 0, 0);
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t name = sc_hash_mix(i + 1);
        int best = 0;
        uint64_t best_score = 0;
        for (int p = 0; p < 4; p++) {
            uint64_t s = sc_hash_mix(name ^ sc_bytes_hash(urls[p], strlen(urls[p])));
            if (p == 0 || s > best_score) {
                best = p;
                best_score = s;
            }
        }
        struct fleet_owner o;
        fleet_owner_of(f, name, &o);
        assert_string_equal(o.url, urls[best]);
    }
    fleet_free(f);
}

static void every_gateway_agrees(void **state)
{
    (void)state;
    static const char *const urls[] = {P1, P2, P3, P4};
    uint64_t *n = names();
    int *a = malloc(NAMES * sizeof(*a)), *b = malloc(NAMES * sizeof(*b));
    fleet *f = start(P1 "," P2 "," P3 "," P4, P1, 0, 0);
    fleet *g = start(P4 "," P3 "," P2 "," P1, P3, 0, 0); /* listed in another order */
    owners_of(f, n, urls, 4, a);
    owners_of(g, n, urls, 4, b);
    assert_memory_equal(a, b, NAMES * sizeof(*a));
    fleet_free(f);
    fleet_free(g);
    free(a);
    free(b);
    free(n);
}

static void a_fourth_peer_takes_a_quarter_from_the_others(void **state)
{
    (void)state;
    static const char *const urls[] = {P1, P2, P3, P4};
    uint64_t *n = names();
    int *three = malloc(NAMES * sizeof(*three)), *four = malloc(NAMES * sizeof(*four));
    fleet *f3 = start(P1 "," P2 "," P3, P2, 0, 0);
    fleet *f4 = start(P1 "," P2 "," P3 "," P4, P2, 0, 0);
    owners_of(f3, n, urls, 3, three);
    owners_of(f4, n, urls, 4, four);
    int moved = 0;
    for (int i = 0; i < NAMES; i++) {
        if (three[i] == four[i])
            continue;
        moved++;
        assert_int_equal(four[i], 3); /* only to the new peer, never between old ones */
    }
    double fraction = (double)moved / NAMES;
    printf("  3 -> 4 peers: %.4f of %d names moved\n", fraction, NAMES);
    assert_true(fraction >= 0.20 && fraction <= 0.30);
    fleet_free(f3);
    fleet_free(f4);
    free(three);
    free(four);
    free(n);
}

static void a_peer_removed_gives_only_its_own(void **state)
{
    (void)state;
    static const char *const urls[] = {P1, P2, P3, P4};
    uint64_t *n = names();
    int *four = malloc(NAMES * sizeof(*four)), *three = malloc(NAMES * sizeof(*three));
    fleet *f4 = start(P1 "," P2 "," P3 "," P4, P1, 0, 0);
    fleet *f3 = start(P1 "," P2 "," P4, P1, 0, 0);
    owners_of(f4, n, urls, 4, four);
    owners_of(f3, n, urls, 4, three);
    int moved = 0;
    for (int i = 0; i < NAMES; i++) {
        assert_int_not_equal(three[i], 2);
        if (three[i] != four[i]) {
            moved++;
            assert_int_equal(four[i], 2); /* only P3's names move */
        } else {
            assert_int_not_equal(four[i], 2);
        }
    }
    printf("  4 -> 3 peers: %.4f of %d names moved\n", (double)moved / NAMES, NAMES);
    assert_true((double)moved / NAMES >= 0.20 && (double)moved / NAMES <= 0.30);
    fleet_free(f4);
    fleet_free(f3);
    free(four);
    free(three);
    free(n);
}

static void a_down_peer_owns_nothing_until_its_backoff_ends(void **state)
{
    (void)state;
    static const char *const urls[] = {P1, P2, P3, P4};
    uint64_t *n = names();
    int *before = malloc(NAMES * sizeof(*before)), *down = malloc(NAMES * sizeof(*down));
    int *without = malloc(NAMES * sizeof(*without)), *after = malloc(NAMES * sizeof(*after));
    int64_t now = 1000000;
    fleet *f = start(P1 "," P2 "," P3 "," P4, P1, 50, 400);
    fleet_set_clock(f, fake_now, &now);
    fleet *f3 = start(P1 "," P3 "," P4, P1, 0, 0);
    owners_of(f, n, urls, 4, before);
    owners_of(f3, n, urls, 4, without);

    uint64_t g0 = fleet_generation(f);
    fleet_peer_failed(f, P2);
    uint64_t g1 = fleet_generation(f);
    assert_true(g1 != g0);
    owners_of(f, n, urls, 4, down);
    /* down is as if removed: its names go to the next by score, no other name moves */
    assert_memory_equal(down, without, NAMES * sizeof(*down));
    struct fleet_peer_info p[4];
    assert_int_equal(fleet_peers(f, p, 4), 4);
    assert_true(p[1].state == FLEET_DOWN && p[1].down_for > 0.049 && p[1].down_for <= 0.050);
    assert_true(p[0].state == FLEET_UP && p[2].state == FLEET_UP);

    now += 49;
    assert_int_equal(fleet_generation(f), g1);
    owners_of(f, n, urls, 4, down);
    assert_memory_equal(down, without, NAMES * sizeof(*down));
    now += 1; /* the backoff ran out: back, and the generation says so */
    uint64_t g2 = fleet_generation(f);
    assert_true(g2 != g1);
    assert_int_equal(fleet_generation(f), g2);
    owners_of(f, n, urls, 4, after);
    assert_memory_equal(after, before, NAMES * sizeof(*after));
    assert_int_equal(fleet_peers(f, p, 4), 4);
    assert_true(p[1].state == FLEET_UP && p[1].down_for == 0);
    fleet_free(f);
    fleet_free(f3);
    free(before);
    free(down);
    free(without);
    free(after);
    free(n);
}

/* Whether P2 is down at f's clock now. */
static bool p2_down(fleet *f)
{
    struct fleet_peer_info p[3];
    assert_int_equal(fleet_peers(f, p, 3), 3);
    return p[1].state == FLEET_DOWN;
}

static void backoff_doubles_up_to_the_cap_and_an_answer_resets_it(void **state)
{
    (void)state;
    int64_t now = 5000;
    fleet *f = start(P1 "," P2 "," P3, P1, 100, 400);
    fleet_set_clock(f, fake_now, &now);
    static const int64_t backoffs[] = {100, 200, 400, 400};
    for (size_t i = 0; i < 4; i++) {
        fleet_peer_failed(f, P2);
        now += backoffs[i] - 1;
        assert_true(p2_down(f));
        now += 1;
        assert_false(p2_down(f));
    }
    /* failing again while down does not lengthen it */
    fleet_peer_failed(f, P2);
    now += 300;
    fleet_peer_failed(f, P2);
    now += 100;
    assert_false(p2_down(f));
    /* an answer ends the backoff at once (a new generation) and resets it */
    fleet_peer_failed(f, P2);
    assert_true(p2_down(f));
    uint64_t g = fleet_generation(f);
    fleet_peer_answered(f, P2, 0.25, 1000);
    assert_false(p2_down(f));
    assert_true(fleet_generation(f) != g);
    fleet_peer_failed(f, P2);
    now += 99;
    assert_true(p2_down(f));
    now += 1;
    assert_false(p2_down(f));
    fleet_free(f);
}

static void counters_and_what_is_ignored(void **state)
{
    (void)state;
    int64_t now = 5000;
    fleet *f = start(P1 "," P2 "," P3, P1, 100, 400);
    fleet_set_clock(f, fake_now, &now);
    uint64_t g = fleet_generation(f);
    fleet_peer_answered(f, P2, 0.5, 1000);
    fleet_peer_answered(f, P2, 0.25, 24);
    /* this gateway, and a URL not in the fleet, are never down and never counted */
    fleet_peer_failed(f, P1);
    fleet_peer_failed(f, "http://127.0.0.9:9001");
    fleet_peer_answered(f, "http://127.0.0.9:9001", 1, 1);
    assert_int_equal(fleet_generation(f), g);
    fleet_peer_failed(f, P3);
    struct fleet_peer_info p[3];
    assert_int_equal(fleet_peers(f, p, 3), 3);
    assert_true(p[0].self && p[0].state == FLEET_UP && p[0].requests == 0);
    assert_true(p[1].requests == 2 && p[1].errors == 0 && p[1].bytes == 1024);
    assert_true(p[1].seconds > 0.7499 && p[1].seconds < 0.7501);
    assert_true(p[2].requests == 1 && p[2].errors == 1 && p[2].state == FLEET_DOWN);
    fleet_free(f);
}

static void with_every_peer_down_this_gateway_owns_all(void **state)
{
    (void)state;
    int64_t now = 5000;
    fleet *f = start(P1 "," P2 "," P3, P2, 100, 400);
    fleet_set_clock(f, fake_now, &now);
    fleet_peer_failed(f, P1);
    fleet_peer_failed(f, P3);
    for (uint64_t i = 0; i < 1000; i++) {
        struct fleet_owner o;
        fleet_owner_of(f, sc_hash_mix(i), &o);
        assert_true(o.self);
        assert_string_equal(o.url, P2);
    }
    fleet_free(f);
}

/* A range is owned by its block's name; without blocks, or past 32-bit block indices, by its
 * object's (origin.c and serve.c both name ranges with it, so asker and owner agree). */
static void a_range_is_named_by_its_block(void **state)
{
    (void)state;
    uint64_t k = sc_key_hash("bkt", "shard-000.tar");
    assert_true(fleet_range_name(k, 0, 8u << 20) == sc_block_key_hash(k, 0));
    assert_true(fleet_range_name(k, (5ull << 23) + 7, 8u << 20) == sc_block_key_hash(k, 5));
    assert_true(fleet_range_name(k, 123, 0) == k);
    assert_true(fleet_range_name(k, (uint64_t)UINT32_MAX * 2 + 2, 1) == k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shares_are_even),
        cmocka_unit_test(a_range_is_named_by_its_block),
        cmocka_unit_test(the_owner_is_the_highest_score),
        cmocka_unit_test(every_gateway_agrees),
        cmocka_unit_test(a_fourth_peer_takes_a_quarter_from_the_others),
        cmocka_unit_test(a_peer_removed_gives_only_its_own),
        cmocka_unit_test(a_down_peer_owns_nothing_until_its_backoff_ends),
        cmocka_unit_test(backoff_doubles_up_to_the_cap_and_an_answer_resets_it),
        cmocka_unit_test(counters_and_what_is_ignored),
        cmocka_unit_test(with_every_peer_down_this_gateway_owns_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
