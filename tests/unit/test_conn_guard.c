/* test_conn_guard.c - when the slow-client guard ends a connection (conn_guard_judge). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../gateway/conn_guard.h"

/*
 * Heads within 2 s of their first byte; request bodies at 1000 bytes a second over 2 s windows,
 * responses over 4 s windows.
 */
static const struct guard_limits LIM = {
    .head_seconds = 2, .min_rate = 1000, .window = 2, .send_window = 4};

/* One look at the connection at time now, with bytes received so far. */
static enum guard_verdict look(struct guard_track *t, double now, uint64_t bytes, bool unread,
                               bool held)
{
    struct guard_sample s = {
        .now = now, .have_bytes = true, .bytes = bytes, .unread = unread, .held = held};
    return conn_guard_judge(t, &s, &LIM);
}

static struct guard_track new_connection(void)
{
    return (struct guard_track){.phase = GUARD_IDLE, .have_mark = true, .mark = 0};
}

static void idle_connection_is_never_cut_by_the_head_bound(void **state)
{
    struct guard_track t = new_connection();
    for (double now = 0; now < 60; now += 0.5)
        assert_int_equal(look(&t, now, 0, false, false), GUARD_OK);
    assert_int_equal(t.phase, GUARD_IDLE);
}

static void head_is_timed_from_its_first_byte(void **state)
{
    struct guard_track t = new_connection();
    assert_int_equal(look(&t, 10.0, 0, false, false), GUARD_OK);
    assert_int_equal(look(&t, 10.5, 1, false, false), GUARD_OK); /* first byte seen */
    assert_int_equal(t.phase, GUARD_HEAD);
    assert_int_equal(look(&t, 12.0, 4, false, false), GUARD_OK); /* dribbling, 1.5 s in */
    assert_int_equal(look(&t, 12.5, 5, false, false), GUARD_SLOW_HEAD);
}

static void unread_bytes_also_begin_a_head(void **state)
{
    struct guard_track t = new_connection();
    assert_int_equal(look(&t, 1.0, 0, true, false), GUARD_OK);
    assert_int_equal(t.phase, GUARD_HEAD);
}

static void next_head_on_kept_alive_connection_is_timed_from_new_bytes(void **state)
{
    struct guard_track t = {.phase = GUARD_IDLE, .have_mark = false}; /* a request just ended */
    assert_int_equal(look(&t, 100.0, 5000, false, false), GUARD_OK);  /* takes the count */
    assert_int_equal(look(&t, 130.0, 5000, false, false), GUARD_OK);  /* idle 30 s: fine */
    assert_int_equal(t.phase, GUARD_IDLE);
    assert_int_equal(look(&t, 130.5, 5001, false, false), GUARD_OK);
    assert_int_equal(t.phase, GUARD_HEAD);
    assert_int_equal(look(&t, 132.5, 5009, false, false), GUARD_SLOW_HEAD);
}

static void no_byte_count_times_the_head_from_the_end_of_the_last_request(void **state)
{
    struct guard_track t = {.phase = GUARD_IDLE, .have_mark = false};
    struct guard_sample s = {.now = 5.0, .have_bytes = false};
    assert_int_equal(conn_guard_judge(&t, &s, &LIM), GUARD_OK);
    s.now = 7.0;
    assert_int_equal(conn_guard_judge(&t, &s, &LIM), GUARD_SLOW_HEAD);
}

static void head_bound_zero_never_cuts(void **state)
{
    struct guard_limits off = LIM;
    off.head_seconds = 0;
    struct guard_track t = {.phase = GUARD_HEAD, .since = 0};
    struct guard_sample s = {.now = 1000.0, .have_bytes = true, .bytes = 1};
    assert_int_equal(conn_guard_judge(&t, &s, &off), GUARD_OK);
}

static void body_below_rate_over_a_window_is_cut(void **state)
{
    struct guard_track t = {.phase = GUARD_BODY, .have_mark = false};
    assert_int_equal(look(&t, 0.0, 300, false, false), GUARD_OK); /* the window begins */
    assert_int_equal(look(&t, 1.0, 500, false, false), GUARD_OK);
    assert_int_equal(look(&t, 2.0, 700, false, false), GUARD_SLOW_BODY); /* 400 B in 2 s */
}

static void body_at_rate_passes_window_after_window(void **state)
{
    struct guard_track t = {.phase = GUARD_BODY, .have_mark = false};
    uint64_t bytes = 300;
    assert_int_equal(look(&t, 0.0, bytes, false, false), GUARD_OK);
    for (double now = 0.5; now <= 20.0; now += 0.5) {
        bytes += 600; /* 1200 bytes a second */
        assert_int_equal(look(&t, now, bytes, false, false), GUARD_OK);
    }
}

static void fast_start_does_not_buy_a_later_stall(void **state)
{
    struct guard_track t = {.phase = GUARD_BODY, .have_mark = false};
    assert_int_equal(look(&t, 0.0, 0, false, false), GUARD_OK);
    assert_int_equal(look(&t, 2.0, 10000000, false, false), GUARD_OK); /* 10 MB at once */
    assert_int_equal(look(&t, 3.0, 10000100, false, false), GUARD_OK);
    assert_int_equal(look(&t, 4.0, 10000200, false, false), GUARD_SLOW_BODY);
}

static void time_the_gateway_holds_the_connection_is_not_counted(void **state)
{
    struct guard_track t = {.phase = GUARD_BODY, .have_mark = false};
    assert_int_equal(look(&t, 0.0, 1000, false, false), GUARD_OK);
    for (double now = 0.5; now <= 30.0; now += 0.5) /* suspended: no byte moves for 30 s */
        assert_int_equal(look(&t, now, 1000, false, true), GUARD_OK);
    for (double now = 30.5; now <= 60.0; now += 0.5) /* bytes wait unread in the socket */
        assert_int_equal(look(&t, now, 1000, true, false), GUARD_OK);
    assert_int_equal(look(&t, 61.0, 1000, false, false), GUARD_OK); /* 1 s of the client's */
    assert_int_equal(look(&t, 62.0, 1000, false, false), GUARD_SLOW_BODY);
}

/* One look at a response, of which acked bytes were taken; unsent: bytes wait for the client. */
static enum guard_verdict look_out(struct guard_track *t, double now, uint64_t acked, bool unsent)
{
    struct guard_sample s = {.now = now, .have_bytes = true, .acked = acked, .unsent = unsent};
    return conn_guard_judge(t, &s, &LIM);
}

static void response_waiting_on_the_gateway_is_never_cut(void **state)
{
    struct guard_track t = {.phase = GUARD_BUSY, .have_mark = false};
    for (double now = 0; now < 100; now += 0.5) /* the socket is empty: nothing to take */
        assert_int_equal(look_out(&t, now, 0, false), GUARD_OK);
}

static void response_taken_below_rate_is_cut(void **state)
{
    struct guard_track t = {.phase = GUARD_BUSY, .have_mark = false};
    assert_int_equal(look_out(&t, 0.0, 100, true), GUARD_OK);
    assert_int_equal(look_out(&t, 2.0, 1100, true), GUARD_OK);
    assert_int_equal(look_out(&t, 4.0, 2100, true), GUARD_SLOW_READER); /* 500 B/s over 4 s */
}

static void response_taken_at_rate_is_not_cut(void **state)
{
    struct guard_track t = {.phase = GUARD_BUSY, .have_mark = false};
    uint64_t acked = 0;
    assert_int_equal(look_out(&t, 0.0, acked, true), GUARD_OK);
    for (double now = 0.5; now <= 30.0; now += 0.5) {
        acked += 600; /* 1200 bytes a second */
        assert_int_equal(look_out(&t, now, acked, true), GUARD_OK);
    }
}

static void rate_zero_never_cuts_a_body(void **state)
{
    struct guard_limits off = LIM;
    off.min_rate = 0;
    struct guard_track t = {.phase = GUARD_BODY, .have_mark = false};
    for (double now = 0; now < 100; now += 0.5) {
        struct guard_sample s = {.now = now, .have_bytes = true, .bytes = 1};
        assert_int_equal(conn_guard_judge(&t, &s, &off), GUARD_OK);
    }
}

/* ---- phases posted by request threads, taken by the watchdog at its next look ---- */

static void nothing_posted_changes_nothing(void **state)
{
    struct guard_track t = new_connection();
    unsigned seen = 0;
    assert_false(conn_guard_catch_up(&t, &seen, 0));
    assert_int_equal(t.phase, GUARD_IDLE);
    assert_true(t.have_mark);
}

static void latest_of_several_posts_between_looks_is_taken(void **state)
{
    struct guard_track t = new_connection();
    unsigned seen = 0, posted = 0;
    posted = conn_guard_post(posted, GUARD_BODY); /* head in, with a body */
    posted = conn_guard_post(posted, GUARD_BUSY); /* body in */
    assert_true(conn_guard_catch_up(&t, &seen, posted));
    assert_int_equal(t.phase, GUARD_BUSY);
    assert_false(t.have_mark);
    assert_false(conn_guard_catch_up(&t, &seen, posted)); /* once */
}

/* A whole request between two looks ends where it began, but its mark is fresh: a kept-alive
 * connection's next head is timed from bytes after that request, as when the lock set it. */
static void request_done_between_looks_resets_the_idle_mark(void **state)
{
    struct guard_track t = new_connection();
    unsigned seen = 0, posted = 0;
    assert_int_equal(look(&t, 0, 100, false, false), GUARD_OK); /* a head began: HEAD */
    posted = conn_guard_post(posted, GUARD_BUSY);
    posted = conn_guard_post(posted, GUARD_IDLE);
    assert_int_equal(GUARD_POST_PHASE(posted), GUARD_IDLE);
    assert_true(conn_guard_catch_up(&t, &seen, posted));
    assert_int_equal(t.phase, GUARD_IDLE);
    assert_false(t.have_mark);
    assert_int_equal(look(&t, 10, 500, false, false), GUARD_OK); /* takes the mark */
    assert_int_equal(look(&t, 20, 500, false, false), GUARD_OK); /* nothing new: still idle */
    assert_int_equal(t.phase, GUARD_IDLE);
}

/* The same phase posted again still counts as a new post (a new request's BUSY). */
static void same_phase_posted_again_is_a_new_post(void **state)
{
    unsigned p1 = conn_guard_post(0, GUARD_BUSY);
    unsigned p2 = conn_guard_post(p1, GUARD_BUSY);
    assert_int_not_equal(p1, p2);
    assert_int_equal(GUARD_POST_PHASE(p2), GUARD_BUSY);
    struct guard_track t = new_connection();
    unsigned seen = p1;
    t.phase = GUARD_BUSY;
    t.have_mark = true;
    assert_true(conn_guard_catch_up(&t, &seen, p2));
    assert_false(t.have_mark);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_connection_is_never_cut_by_the_head_bound),
        cmocka_unit_test(head_is_timed_from_its_first_byte),
        cmocka_unit_test(unread_bytes_also_begin_a_head),
        cmocka_unit_test(next_head_on_kept_alive_connection_is_timed_from_new_bytes),
        cmocka_unit_test(no_byte_count_times_the_head_from_the_end_of_the_last_request),
        cmocka_unit_test(head_bound_zero_never_cuts),
        cmocka_unit_test(body_below_rate_over_a_window_is_cut),
        cmocka_unit_test(body_at_rate_passes_window_after_window),
        cmocka_unit_test(fast_start_does_not_buy_a_later_stall),
        cmocka_unit_test(time_the_gateway_holds_the_connection_is_not_counted),
        cmocka_unit_test(response_waiting_on_the_gateway_is_never_cut),
        cmocka_unit_test(response_taken_below_rate_is_cut),
        cmocka_unit_test(response_taken_at_rate_is_not_cut),
        cmocka_unit_test(rate_zero_never_cuts_a_body),
        cmocka_unit_test(nothing_posted_changes_nothing),
        cmocka_unit_test(latest_of_several_posts_between_looks_is_taken),
        cmocka_unit_test(request_done_between_looks_resets_the_idle_mark),
        cmocka_unit_test(same_phase_posted_again_is_a_new_post),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
