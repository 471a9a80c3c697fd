/* test_relay.c - the relay between one upstream response and its readers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../upstream/relay.h"

struct fake_conn {
    int parked;
    int woken;
};

static void park(void *arg)
{
    ((struct fake_conn *)arg)->parked++;
}

static void wake(void *arg)
{
    ((struct fake_conn *)arg)->woken++;
}

/* The transfers the relay resumed (linked with --wrap=up_req_resume: no upstream thread). */
static up_req *resumed;
void __wrap_up_req_resume(up_req *req);
void __wrap_up_req_resume(up_req *req)
{
    resumed = req;
}

static struct http_head head_of(long status, int64_t length)
{
    static struct http_header h[] = {{"ETag", "\"abc\""}, {"Content-Type", "text/plain"}};
    return (struct http_head){status, h, 2, length};
}

static void reader_parks_until_head_arrives_then_is_woken(void **state)
{
    relay *r = relay_new(0);
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    bool failed = true;
    assert_null(relay_head(r, &w, &failed));
    assert_false(failed);
    assert_int_equal(c.parked, 1);
    struct http_head h = head_of(200, 5);
    assert_int_equal(relay_set_head(r, &h, true), SC_OK);
    assert_int_equal(c.woken, 1);
    const struct relay_head *got = relay_head(r, &w, &failed);
    assert_non_null(got);
    assert_int_equal(got->status, 200);
    assert_string_equal(got->headers[0].value, "\"abc\"");
    relay_unref(r);
}

static void keep_all_relay_serves_late_reader_from_offset_zero(void **state)
{
    relay *r = relay_new(0);
    struct http_head h = head_of(200, 10);
    relay_set_head(r, &h, true);
    assert_true(relay_push(r, "hello", 5));
    assert_true(relay_push(r, "world", 5));
    relay_finish(r, SC_OK);
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 0);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 10);
    assert_memory_equal(buf, "helloworld", 10);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 0);
    const char *body;
    uint64_t len;
    assert_int_equal(relay_body(r, &body, &len), SC_OK);
    assert_int_equal(len, 10);
    relay_detach(r, &cur);
    relay_unref(r);
}

static void short_body_is_an_error_not_an_end(void **state)
{
    relay *r = relay_new(0);
    struct http_head h = head_of(200, 10);
    relay_set_head(r, &h, true);
    relay_push(r, "hello", 5);
    relay_finish(r, SC_OK); /* the transfer claims success with 5 of 10 bytes */
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 0);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 5);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_ERROR);
    const char *body;
    uint64_t len;
    assert_int_equal(relay_body(r, &body, &len), SC_EBUSY);
    relay_detach(r, &cur);
    relay_unref(r);
}

static void more_bytes_than_announced_fail_the_relay(void **state)
{
    relay *r = relay_new(0);
    struct http_head h = head_of(200, 4);
    relay_set_head(r, &h, true);
    relay_push(r, "hello", 5);
    relay_finish(r, SC_OK);
    const char *body;
    uint64_t len;
    assert_int_equal(relay_body(r, &body, &len), SC_EBUSY);
    relay_unref(r);
}

static void reader_at_the_end_parks_and_push_wakes_it(void **state)
{
    relay *r = relay_new(0);
    struct http_head h = head_of(200, 6);
    relay_set_head(r, &h, true);
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 0);
    char buf[8];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_AGAIN);
    assert_int_equal(c.parked, 1);
    relay_push(r, "abc", 3);
    assert_int_equal(c.woken, 1);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 3);
    relay_detach(r, &cur);
    relay_unref(r);
}

/* A windowed relay of 8 bytes with one reader at cur, full: its producer was refused "9". */
static relay *full_window(struct relay_cursor *cur)
{
    relay *r = relay_new(8);
    struct http_head h = head_of(200, -1);
    relay_set_head(r, &h, false);
    relay_attach(r, cur, 0);
    assert_true(relay_push(r, "12345678", 8));
    assert_false(relay_push(r, "9", 1)); /* window full: the producer pauses */
    return r;
}

static void windowed_relay_refuses_data_until_the_reader_makes_room(void **state)
{
    struct relay_cursor cur;
    relay *r = full_window(&cur);
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    char buf[8];
    assert_int_equal(relay_read(r, &cur, buf, 6, &w), 6);
    assert_true(relay_push(r, "9", 1)); /* room again: what was read is dropped */
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 3);
    assert_memory_equal(buf, "789", 3);
    relay_finish(r, SC_OK);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 0);
    relay_detach(r, &cur);
    relay_unref(r);
}

/* A fill's transfer may fill the window before its starter names it (relay_set_upstream), and
 * another reader of the fill may make room meanwhile: the pause waits for the transfer to be
 * named, then resumes it. It used to be cleared with nobody to resume, and the transfer stayed
 * paused for good, its readers parked. */
static void room_made_before_the_transfer_is_named_resumes_it_once_named(void **state)
{
    struct relay_cursor cur;
    relay *r = full_window(&cur);
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    char buf[8];
    resumed = NULL;
    assert_int_equal(relay_read(r, &cur, buf, 6, &w), 6); /* room, and no transfer to resume */
    assert_null(resumed);
    static char transfer; /* stands for the fill's up_req, never dereferenced by the relay */
    relay_set_upstream(r, (up_req *)&transfer);
    assert_ptr_equal(resumed, (up_req *)&transfer);
    resumed = NULL;
    assert_int_equal(relay_read(r, &cur, buf, 2, &w), 2); /* resumed once, not again */
    assert_null(resumed);
    relay_finish(r, SC_OK);
    relay_detach(r, &cur);
    relay_unref(r);
}

static void windowed_relay_keeps_bytes_until_the_first_reader_attaches(void **state)
{
    relay *r = relay_new(8);
    struct http_head h = head_of(200, 12);
    relay_set_head(r, &h, false);
    assert_true(relay_push(r, "abcd", 4)); /* nobody reads yet: kept, not dropped */
    assert_true(relay_push(r, "efgh", 4));
    assert_false(relay_push(r, "ijkl", 4)); /* window full: paused until a reader comes */
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 0);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 8);
    assert_memory_equal(buf, "abcdefgh", 8);
    relay_detach(r, &cur);
    relay_unref(r);
}

static void failure_before_head_is_reported_to_waiters(void **state)
{
    relay *r = relay_new(0);
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    bool failed = false;
    assert_null(relay_head(r, &w, &failed));
    relay_finish(r, SC_EUPSTREAM);
    assert_int_equal(c.woken, 1);
    assert_null(relay_head(r, &w, &failed));
    assert_true(failed);
    relay_unref(r);
}

static void unparked_reader_is_not_woken(void **state)
{
    relay *r = relay_new(0);
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    bool failed;
    relay_head(r, &w, &failed);
    relay_unpark(r, &w);
    relay_finish(r, SC_EUPSTREAM);
    assert_int_equal(c.woken, 0);
    relay_unref(r);
}

/* A body found wrong at its end must reach readers as a failed transfer, never complete. */
static void held_tail_is_withheld_until_the_verdict_and_lost_on_a_mismatch(void **state)
{
    relay *r = relay_new(0);
    relay_hold_tail(r);
    struct http_head h = head_of(200, 10);
    relay_set_head(r, &h, true);
    relay_push(r, "helloworld", 10);
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 0);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 9);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_AGAIN);
    relay_finish(r, SC_EMISMATCH);
    assert_int_equal(c.woken, 1);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_ERROR);
    relay_detach(r, &cur);
    relay_unref(r);
}

static void held_tail_is_released_when_the_body_is_good(void **state)
{
    relay *r = relay_new(0);
    relay_hold_tail(r);
    struct http_head h = head_of(200, 10);
    relay_set_head(r, &h, true);
    relay_push(r, "helloworld", 10);
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 9);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_AGAIN);
    relay_finish(r, SC_OK);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 1);
    assert_int_equal(buf[0], 'd');
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 0);
    relay_detach(r, &cur);
    relay_unref(r);
}

static void held_tail_without_a_length_is_the_last_byte_so_far(void **state)
{
    relay *r = relay_new(64); /* no length: windowed, as a fill of such a body is */
    relay_hold_tail(r);
    struct http_head h = head_of(200, -1);
    relay_set_head(r, &h, false);
    relay_push(r, "hello", 5);
    struct relay_cursor cur;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 0);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 4);
    relay_push(r, "world", 5);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 5);
    assert_memory_equal(buf, "oworl", 5);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_AGAIN);
    relay_finish(r, SC_EMISMATCH);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_ERROR);
    relay_detach(r, &cur);
    relay_unref(r);
}

/* A range that must come from a verified body waits for the verdict before its last byte. */
static void cursor_hold_withholds_a_range_end_until_the_verdict(void **state)
{
    relay *r = relay_new(0);
    struct http_head h = head_of(200, 10);
    relay_set_head(r, &h, true);
    relay_push(r, "helloworld", 10);
    struct relay_cursor cur, other;
    struct fake_conn c = {0};
    struct relay_waiter w = {park, wake, &c, NULL, false};
    relay_attach(r, &cur, 2);
    relay_hold_from(r, &cur, 5);
    relay_attach(r, &other, 2);
    char buf[16];
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), 3);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_AGAIN);
    assert_int_equal(relay_read(r, &other, buf, sizeof(buf), &w), 8); /* no hold of its own */
    relay_finish(r, SC_EMISMATCH);
    assert_int_equal(relay_read(r, &cur, buf, sizeof(buf), &w), RELAY_ERROR);
    relay_detach(r, &other);
    relay_detach(r, &cur);
    relay_unref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(held_tail_is_withheld_until_the_verdict_and_lost_on_a_mismatch),
        cmocka_unit_test(held_tail_is_released_when_the_body_is_good),
        cmocka_unit_test(held_tail_without_a_length_is_the_last_byte_so_far),
        cmocka_unit_test(cursor_hold_withholds_a_range_end_until_the_verdict),
        cmocka_unit_test(reader_parks_until_head_arrives_then_is_woken),
        cmocka_unit_test(keep_all_relay_serves_late_reader_from_offset_zero),
        cmocka_unit_test(short_body_is_an_error_not_an_end),
        cmocka_unit_test(more_bytes_than_announced_fail_the_relay),
        cmocka_unit_test(reader_at_the_end_parks_and_push_wakes_it),
        cmocka_unit_test(windowed_relay_refuses_data_until_the_reader_makes_room),
        cmocka_unit_test(room_made_before_the_transfer_is_named_resumes_it_once_named),
        cmocka_unit_test(windowed_relay_keeps_bytes_until_the_first_reader_attaches),
        cmocka_unit_test(failure_before_head_is_reported_to_waiters),
        cmocka_unit_test(unparked_reader_is_not_woken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
