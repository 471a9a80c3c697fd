/* test_clock.c - the monotonic clock helpers agree with each other and with clock_gettime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../common/clock.h"

static void the_units_agree_and_never_go_back(void **state)
{
    (void)state;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int64_t ns = sc_now_ns();
    int64_t ms = sc_now_ms();
    double s = sc_now_seconds();
    int64_t ns2 = sc_now_ns();
    assert_true(ns >= (int64_t)start.tv_sec * 1000000000 + start.tv_nsec);
    assert_true(ns2 >= ns);
    assert_true(ms >= ns / 1000000 && ms <= ns2 / 1000000);
    assert_true(s >= (double)ns / 1e9 - 1e-6 && s <= (double)ns2 / 1e9 + 1e-6);
    assert_true(sc_seconds_since(&start) >= 0);
}

static void a_deadline_is_normalized(void **state)
{
    (void)state;
    int64_t before = sc_now_ns();
    struct timespec t = sc_deadline_in_ns(999999999L);
    int64_t after = sc_now_ns();
    assert_true(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
    int64_t at = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    assert_true(at >= before + 999999999L && at <= after + 999999999L);
}

static void a_deadline_in_ms_spans_seconds(void **state)
{
    (void)state;
    int64_t before = sc_now_ns();
    struct timespec t = sc_deadline_in_ms(5999);
    int64_t after = sc_now_ns();
    assert_true(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
    int64_t at = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    assert_true(at >= before + 5999000000LL && at <= after + 5999000000LL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_units_agree_and_never_go_back),
        cmocka_unit_test(a_deadline_is_normalized),
        cmocka_unit_test(a_deadline_in_ms_spans_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
