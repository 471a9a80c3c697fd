/*
 * test_latency_relay.c - the pure pieces of the benchmark's latency relay
 * (tools/latency-relay): the held-chunk queue, the timer heap and the options.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "../../tools/latency-relay/lrelay.h"

static struct lr_chunk *filled(struct lr_pool *p, const char *s)
{
    struct lr_chunk *c = lr_chunk_new(p);
    assert_non_null(c);
    c->len = (uint32_t)strlen(s);
    memcpy(c->data, s, c->len);
    return c;
}

/* Concatenates what the iovecs offer. */
static size_t gather(const struct iovec *iov, int n, char *out)
{
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    out[len] = '\0';
    return len;
}

static void chunk_is_held_until_its_release_time(void **state)
{
    (void)state;
    struct lr_pool p = {0};
    struct lr_queue q;
    lr_queue_init(&q);
    lr_queue_push(&q, filled(&p, "abc"), 100);
    struct iovec iov[4];
    assert_int_equal(lr_queue_due_iov(&q, 99, iov, 4), 0);
    assert_int_equal(lr_queue_next_release(&q), 100);
    char out[64];
    assert_int_equal(lr_queue_due_iov(&q, 100, iov, 4), 1);
    assert_int_equal(gather(iov, 1, out), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(q.bytes, 3);
    lr_queue_clear(&q, &p);
    lr_pool_drain(&p);
}

static void due_chunks_come_out_in_order_and_stop_at_the_first_not_due(void **state)
{
    (void)state;
    struct lr_pool p = {0};
    struct lr_queue q;
    lr_queue_init(&q);
    lr_queue_push(&q, filled(&p, "one "), 10);
    lr_queue_push(&q, filled(&p, "two "), 20);
    lr_queue_push(&q, filled(&p, "three"), 30);
    struct iovec iov[4];
    char out[64];
    int n = lr_queue_due_iov(&q, 25, iov, 4);
    assert_int_equal(n, 2);
    gather(iov, n, out);
    assert_string_equal(out, "one two ");
    assert_int_equal(lr_queue_due_iov(&q, 25, iov, 1), 1); /* max is honoured */
    lr_queue_clear(&q, &p);
    assert_int_equal(q.chunks, 0);
    assert_int_equal(q.bytes, 0);
    lr_pool_drain(&p);
}

static void partial_write_resumes_mid_chunk(void **state)
{
    (void)state;
    struct lr_pool p = {0};
    struct lr_queue q;
    lr_queue_init(&q);
    lr_queue_push(&q, filled(&p, "hello "), 0);
    lr_queue_push(&q, filled(&p, "world"), 0);
    lr_queue_consume(&q, &p, 8); /* "hello wo" written */
    assert_int_equal(q.bytes, 3);
    assert_int_equal(q.chunks, 1);
    assert_int_equal(p.n_free, 1); /* the spent chunk went back to the pool */
    struct iovec iov[4];
    char out[64];
    int n = lr_queue_due_iov(&q, 0, iov, 4);
    gather(iov, n, out);
    assert_string_equal(out, "rld");
    lr_queue_consume(&q, &p, 3);
    assert_null(q.head);
    assert_null(q.tail);
    assert_int_equal(lr_queue_next_release(&q), INT64_MAX);
    lr_pool_drain(&p);
}

static void earlier_release_than_the_tail_is_raised_to_keep_order(void **state)
{
    (void)state;
    struct lr_pool p = {0};
    struct lr_queue q;
    lr_queue_init(&q);
    lr_queue_push(&q, filled(&p, "a"), 50);
    lr_queue_push(&q, filled(&p, "b"), 40);
    assert_int_equal(q.tail->release_ns, 50);
    struct iovec iov[4];
    assert_int_equal(lr_queue_due_iov(&q, 45, iov, 4), 0);
    assert_int_equal(lr_queue_due_iov(&q, 50, iov, 4), 2);
    lr_queue_clear(&q, &p);
    lr_pool_drain(&p);
}

static void eof_passes_only_after_every_byte_before_it(void **state)
{
    (void)state;
    struct lr_pool p = {0};
    struct lr_queue q;
    lr_queue_init(&q);
    lr_queue_push(&q, filled(&p, "last"), 10);
    assert_int_equal(lr_queue_push_eof(&q, &p, 10), SC_OK);
    assert_false(lr_queue_eof_due(&q, 10)); /* data still ahead of it */
    struct iovec iov[4];
    assert_int_equal(lr_queue_due_iov(&q, 10, iov, 4), 1); /* the marker is not data */
    lr_queue_consume(&q, &p, 4);
    assert_false(lr_queue_eof_due(&q, 9));
    assert_true(lr_queue_eof_due(&q, 10));
    assert_int_equal(lr_queue_due_iov(&q, 10, iov, 4), 0);
    lr_queue_consume(&q, &p, 100); /* never eats the marker */
    assert_true(lr_queue_eof_due(&q, 10));
    lr_queue_pop_eof(&q, &p);
    assert_null(q.head);
    assert_int_equal(q.chunks, 0);
    lr_pool_drain(&p);
}

static void pool_keeps_at_most_its_limit(void **state)
{
    (void)state;
    struct lr_pool p = {0};
    struct lr_chunk *v[LR_POOL_KEEP + 5];
    for (size_t i = 0; i < LR_POOL_KEEP + 5; i++)
        v[i] = lr_chunk_new(&p);
    for (size_t i = 0; i < LR_POOL_KEEP + 5; i++)
        lr_chunk_free(&p, v[i]);
    assert_int_equal(p.n_free, LR_POOL_KEEP);
    struct lr_chunk *c = lr_chunk_new(&p);
    assert_int_equal(c->len, 0);
    assert_false(c->eof);
    assert_int_equal(p.n_free, LR_POOL_KEEP - 1);
    lr_chunk_free(&p, c);
    lr_chunk_free(&p, NULL);
    lr_pool_drain(&p);
    assert_int_equal(p.n_free, 0);
}

static void heap_yields_timers_earliest_first_after_moves_and_removals(void **state)
{
    (void)state;
    enum { N = 500 };
    struct lr_heap h;
    lr_heap_init(&h);
    struct lr_timer *t = calloc(N, sizeof(*t));
    assert_non_null(t);
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        assert_int_equal(lr_heap_set(&h, &t[i], (int64_t)(x >> 40)), SC_OK);
    }
    for (int i = 0; i < N; i += 3) { /* move some, both ways */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        assert_int_equal(lr_heap_set(&h, &t[i], (int64_t)(x >> 40)), SC_OK);
    }
    for (int i = 1; i < N; i += 7)
        lr_heap_remove(&h, &t[i]);
    lr_heap_remove(&h, &t[1]); /* not in the heap any more: a no-op */
    size_t left = h.n;
    int64_t prev = INT64_MIN;
    for (size_t k = 0; k < left; k++) {
        struct lr_timer *m = lr_heap_min(&h);
        assert_non_null(m);
        assert_true(m->at_ns >= prev);
        prev = m->at_ns;
        lr_heap_remove(&h, m);
        assert_int_equal(m->pos, 0);
    }
    assert_null(lr_heap_min(&h));
    lr_heap_free(&h);
    free(t);
}

static void addresses_parse_numeric_hosts_with_ports(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    socklen_t len;
    assert_int_equal(lr_parse_addr("127.0.0.1:8080", &ss, &len), SC_OK);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 8080);
    assert_int_equal(lr_parse_addr("[::1]:443", &ss, &len), SC_OK);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(lr_parse_addr("10.77.0.2:80", &ss, &len), SC_OK);
    assert_int_equal(lr_parse_addr("localhost:80", &ss, &len), SC_EINVAL);
    assert_int_equal(lr_parse_addr("127.0.0.1", &ss, &len), SC_EINVAL);
    assert_int_equal(lr_parse_addr("127.0.0.1:0", &ss, &len), SC_EINVAL);
    assert_int_equal(lr_parse_addr("127.0.0.1:65536", &ss, &len), SC_EINVAL);
    assert_int_equal(lr_parse_addr("127.0.0.1:80x", &ss, &len), SC_EINVAL);
    assert_int_equal(lr_parse_addr("::1:80", &ss, &len), SC_EINVAL);
    assert_int_equal(lr_parse_addr(":80", &ss, &len), SC_EINVAL);
}

static void delay_and_window_are_range_checked(void **state)
{
    (void)state;
    int64_t ns;
    assert_int_equal(lr_parse_ms("10", &ns), SC_OK);
    assert_int_equal(ns, 10000000);
    assert_int_equal(lr_parse_ms("2.5", &ns), SC_OK);
    assert_int_equal(ns, 2500000);
    assert_int_equal(lr_parse_ms("0", &ns), SC_OK);
    assert_int_equal(lr_parse_ms("-1", &ns), SC_EINVAL);
    assert_int_equal(lr_parse_ms("60001", &ns), SC_EINVAL);
    assert_int_equal(lr_parse_ms("1ms", &ns), SC_EINVAL);
    assert_int_equal(lr_parse_ms("nan", &ns), SC_EINVAL);
    size_t w;
    assert_int_equal(lr_parse_window("4M", &w), SC_OK);
    assert_int_equal(w, 4u << 20);
    assert_int_equal(lr_parse_window("65536", &w), SC_OK);
    assert_int_equal(lr_parse_window("1G", &w), SC_OK);
    assert_int_equal(lr_parse_window("2G", &w), SC_EINVAL);
    assert_int_equal(lr_parse_window("1000", &w), SC_EINVAL);
    assert_int_equal(lr_parse_window("4MB", &w), SC_EINVAL);
    assert_int_equal(lr_parse_window("99999999999999999999G", &w), SC_EINVAL);
}

static void rate_is_range_checked(void **state)
{
    (void)state;
    uint64_t r;
    assert_int_equal(lr_parse_rate("100M", &r), SC_OK);
    assert_true(r == 100ull << 20);
    assert_int_equal(lr_parse_rate("1K", &r), SC_OK);
    assert_int_equal(lr_parse_rate("64G", &r), SC_OK);
    assert_int_equal(lr_parse_rate("65G", &r), SC_EINVAL);
    assert_int_equal(lr_parse_rate("1023", &r), SC_EINVAL);
    assert_int_equal(lr_parse_rate("-1", &r), SC_EINVAL);
    assert_int_equal(lr_parse_rate("1MB", &r), SC_EINVAL);
}

/* A direction bound to a rate: each chunk leaves after the delay and after those before it
 * have passed at that rate; without a rate, after the delay alone. */
static void release_times_follow_delay_then_rate(void **state)
{
    (void)state;
    int64_t free_ns = 0;
    const int64_t ms = 1000000;
    /* No bound: the delay only, whatever came before. */
    assert_true(lr_release_at(0, 15 * ms, 0, 1 << 20, &free_ns) == 15 * ms);
    assert_true(free_ns == 0);
    /* 1 MiB/s: 64 KiB take 62.5 ms once the delay has passed. */
    const uint64_t rate = 1 << 20;
    assert_true(lr_release_at(0, 15 * ms, rate, 64 << 10, &free_ns) == 15 * ms + 62500000);
    /* The next chunk, read at once, queues behind the first. */
    assert_true(lr_release_at(1 * ms, 15 * ms, rate, 64 << 10, &free_ns) == 15 * ms + 125000000);
    /* One read long after the direction went idle waits only for the delay and its own bytes. */
    assert_true(lr_release_at(1000 * ms, 15 * ms, rate, 64 << 10, &free_ns) ==
                1015 * ms + 62500000);
    /* An end-of-stream marker (0 bytes) leaves once what came before has passed. */
    int64_t eof = lr_release_at(1000 * ms, 15 * ms, rate, 0, &free_ns);
    assert_true(eof == 1015 * ms + 62500000);
}

static void command_line_needs_both_addresses(void **state)
{
    (void)state;
    struct lr_opts o;
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    char *ok[] = {"latency-relay", "--listen",   "127.0.0.1:1", "--target",
                  "127.0.0.1:2",   "--delay-ms", "15",          "--no-connect-rtt"};
    assert_int_equal(lr_opts_parse(8, ok, &o, null, null), 0);
    assert_int_equal(o.delay_ns, 15000000);
    assert_false(o.connect_rtt);
    assert_int_equal(o.window, 4u << 20);
    char *missing[] = {"latency-relay", "--listen", "127.0.0.1:1"};
    assert_int_equal(lr_opts_parse(3, missing, &o, null, null), 2);
    char *extra[] = {"latency-relay", "--listen", "127.0.0.1:1", "--target", "127.0.0.1:2", "x"};
    assert_int_equal(lr_opts_parse(6, extra, &o, null, null), 2);
    char *help[] = {"latency-relay", "--help"};
    assert_int_equal(lr_opts_parse(2, help, &o, null, null), 1);
    fclose(null);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunk_is_held_until_its_release_time),
        cmocka_unit_test(due_chunks_come_out_in_order_and_stop_at_the_first_not_due),
        cmocka_unit_test(partial_write_resumes_mid_chunk),
        cmocka_unit_test(earlier_release_than_the_tail_is_raised_to_keep_order),
        cmocka_unit_test(eof_passes_only_after_every_byte_before_it),
        cmocka_unit_test(pool_keeps_at_most_its_limit),
        cmocka_unit_test(heap_yields_timers_earliest_first_after_moves_and_removals),
        cmocka_unit_test(addresses_parse_numeric_hosts_with_ports),
        cmocka_unit_test(delay_and_window_are_range_checked),
        cmocka_unit_test(rate_is_range_checked),
        cmocka_unit_test(release_times_follow_delay_then_rate),
        cmocka_unit_test(command_line_needs_both_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
