/* test_httpdate.c - HTTP date parsing and formatting (proto/httpdate.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../../proto/httpdate.h"

/* timegm() is wrapped (the Makefile links this test with --wrap=timegm): glibc's takes a
 * process-wide time zone lock, which the parse must not take on every hit. */
static unsigned timegm_calls;
time_t __real_timegm(struct tm *tm);
time_t __wrap_timegm(struct tm *tm);
time_t __wrap_timegm(struct tm *tm)
{
    timegm_calls++;
    return __real_timegm(tm);
}

/* Sun, 06 Nov 1994 08:49:37 GMT, the RFC 9110 example. */
#define RFC_EXAMPLE ((time_t)784111777)

static void assert_parses_to(const char *s, time_t expected)
{
    time_t t = 12345;
    assert_int_equal(httpdate_parse(s, &t), SC_OK);
    assert_int_equal((long long)t, (long long)expected);
}

static void assert_refused(const char *s)
{
    time_t t = 12345;
    assert_int_equal(httpdate_parse(s, &t), SC_EINVAL);
    assert_int_equal((long long)t, 12345); /* untouched */
}

static void imf_fixdate_parses(void **state)
{
    (void)state;
    assert_parses_to("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE);
}

static void rfc850_parses_to_same_instant(void **state)
{
    (void)state;
    assert_parses_to("Sunday, 06-Nov-94 08:49:37 GMT", RFC_EXAMPLE);
}

static void asctime_with_space_padded_day_parses(void **state)
{
    (void)state;
    assert_parses_to("Sun Nov  6 08:49:37 1994", RFC_EXAMPLE);
}

static void asctime_with_two_digit_day_parses(void **state)
{
    (void)state;
    assert_parses_to("Sun Nov 06 08:49:37 1994", RFC_EXAMPLE);
    assert_parses_to("Thu Jan 15 00:00:00 1970", 14 * 86400);
}

static void epoch_and_the_second_before_parse(void **state)
{
    (void)state;
    assert_parses_to("Thu, 01 Jan 1970 00:00:00 GMT", 0);
    assert_parses_to("Wed, 31 Dec 1969 23:59:59 GMT", -1);
    assert_parses_to("Wed, 31 Dec 1969 23:59:58 GMT", -2);
}

static void dates_past_2038_parse(void **state)
{
    (void)state;
    assert_parses_to("Tue, 19 Jan 2038 03:14:08 GMT", (time_t)2147483648LL);
    assert_parses_to("Fri, 31 Dec 9999 23:59:59 GMT", (time_t)253402300799LL);
}

static void names_are_case_insensitive(void **state)
{
    (void)state;
    assert_parses_to("sun, 06 NOV 1994 08:49:37 gmt", RFC_EXAMPLE);
    assert_parses_to("SUNDAY, 06-nov-94 08:49:37 GMT", RFC_EXAMPLE);
}

static void surrounding_spaces_and_tabs_are_ignored(void **state)
{
    (void)state;
    assert_parses_to("  \tSun, 06 Nov 1994 08:49:37 GMT \t", RFC_EXAMPLE);
}

static void leap_day_is_accepted_only_in_leap_years(void **state)
{
    (void)state;
    assert_parses_to("Thu, 29 Feb 2024 00:00:00 GMT", (time_t)1709164800LL);
    assert_parses_to("Tue, 29 Feb 2000 00:00:00 GMT", (time_t)951782400LL);
    assert_refused("Wed, 29 Feb 2023 00:00:00 GMT");
    assert_refused("Thu, 29 Feb 1900 00:00:00 GMT");
}

static void leap_second_counts_as_next_minute(void **state)
{
    (void)state;
    assert_parses_to("Sat, 31 Dec 2016 23:59:60 GMT", (time_t)1483228800LL);
}

static void rfc850_two_digit_year_uses_fixed_window(void **state)
{
    (void)state;
    assert_parses_to("Thursday, 01-Jan-70 00:00:00 GMT", 0);
    assert_parses_to("Saturday, 01-Jan-00 00:00:00 GMT", (time_t)946684800LL);
    assert_parses_to("Tuesday, 01-Jan-69 00:00:00 GMT", (time_t)3124224000LL);
}

static void parsing_ignores_the_tz_environment(void **state)
{
    (void)state;
    const char *old = getenv("TZ");
    char *saved = old != NULL ? strdup(old) : NULL;
    setenv("TZ", "America/New_York", 1);
    tzset();
    assert_parses_to("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE);
    char buf[HTTPDATE_LEN];
    assert_int_equal(httpdate_format(RFC_EXAMPLE, buf), SC_OK);
    assert_string_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
    if (saved != NULL)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    free(saved);
}

static void garbage_is_refused(void **state)
{
    (void)state;
    assert_refused(NULL);
    assert_refused("");
    assert_refused("   ");
    assert_refused("yesterday");
    assert_refused("1994-11-06T08:49:37Z");
    assert_refused("784111777");
    assert_refused("Sun");
    assert_refused("Sun,");
}

static void wrong_names_are_refused(void **state)
{
    (void)state;
    assert_refused("Sux, 06 Nov 1994 08:49:37 GMT");
    assert_refused("Sun, 06 Nox 1994 08:49:37 GMT");
    assert_refused("Sunday, 06 Nov 1994 08:49:37 GMT"); /* long name with IMF layout */
    assert_refused("Sun, 06-Nov-94 08:49:37 GMT");      /* short name with RFC 850 layout */
    assert_refused("Sund, 06 Nov 1994 08:49:37 GMT");
}

static void zone_other_than_gmt_is_refused(void **state)
{
    (void)state;
    assert_refused("Sun, 06 Nov 1994 08:49:37 UTC");
    assert_refused("Sun, 06 Nov 1994 08:49:37 +0000");
    assert_refused("Sun, 06 Nov 1994 08:49:37");
    assert_refused("Sun, 06 Nov 1994 08:49:37 GMT+1");
}

static void trailing_garbage_is_refused(void **state)
{
    (void)state;
    assert_refused("Sun, 06 Nov 1994 08:49:37 GMTx");
    assert_refused("Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT");
    assert_refused("Sun Nov  6 08:49:37 1994 GMT");
}

static void fields_out_of_range_are_refused(void **state)
{
    (void)state;
    assert_refused("Sun, 00 Nov 1994 08:49:37 GMT");
    assert_refused("Sun, 31 Nov 1994 08:49:37 GMT");
    assert_refused("Sun, 32 Dec 1994 08:49:37 GMT");
    assert_refused("Sun, 06 Nov 1994 24:00:00 GMT");
    assert_refused("Sun, 06 Nov 1994 08:60:37 GMT");
    assert_refused("Sun, 06 Nov 1994 08:49:61 GMT");
    assert_refused("Sun, 06 Nov 1899 08:49:37 GMT");
}

static void wrong_widths_and_separators_are_refused(void **state)
{
    (void)state;
    assert_refused("Sun, 6 Nov 1994 08:49:37 GMT");
    assert_refused("Sun, 06 Nov 94 08:49:37 GMT");
    assert_refused("Sun, 06 Nov 01994 08:49:37 GMT");
    assert_refused("Sun, 06 Nov 1994 8:49:37 GMT");
    assert_refused("Sun, 06 Nov 1994 08.49.37 GMT");
    assert_refused("Sun,  06 Nov 1994 08:49:37 GMT");
    assert_refused("Sun, 06  Nov 1994 08:49:37 GMT");
    assert_refused("Sun, -6 Nov 1994 08:49:37 GMT");
    assert_refused("Sunday, 06-Nov-1994 08:49:37 GMT");
    assert_refused("Sun Nov   6 08:49:37 1994");
    assert_refused("Sun Nov  6 08:49:37 94");
}

static void format_gives_imf_fixdate(void **state)
{
    (void)state;
    char buf[HTTPDATE_LEN];
    assert_int_equal(httpdate_format(RFC_EXAMPLE, buf), SC_OK);
    assert_string_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(httpdate_format(0, buf), SC_OK);
    assert_string_equal(buf, "Thu, 01 Jan 1970 00:00:00 GMT");
}

static void format_refuses_years_beyond_four_digits(void **state)
{
    (void)state;
    char buf[HTTPDATE_LEN];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(httpdate_format((time_t)253402300800LL, buf), SC_EINVAL); /* year 10000 */
    assert_string_equal(buf, "");
    assert_int_equal(httpdate_format((time_t)-2208988801LL, buf), SC_EINVAL); /* 1899 */
    assert_string_equal(buf, "");
}

static void format_then_parse_round_trips(void **state)
{
    (void)state;
    char buf[HTTPDATE_LEN];
    for (long long t = -2208988800LL; t < 253402300799LL; t += 7777777777LL + 13) {
        time_t back;
        assert_int_equal(httpdate_format((time_t)t, buf), SC_OK);
        assert_int_equal(httpdate_parse(buf, &back), SC_OK);
        assert_int_equal((long long)back, t);
    }
}

static void parse_takes_no_time_zone_lock(void **state)
{
    time_t t;
    timegm_calls = 0;
    assert_int_equal(httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMT", &t), SC_OK);
    assert_int_equal(httpdate_parse("Sunday, 06-Nov-94 08:49:37 GMT", &t), SC_OK);
    assert_int_equal(httpdate_parse("Sun Nov  6 08:49:37 1994", &t), SC_OK);
    assert_int_equal(timegm_calls, 0);
}

/* Every day from 1900 to 2199, at two times of day, is the instant timegm() gives. */
static void every_day_of_three_centuries_agrees_with_timegm(void **state)
{
    static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    static const char *const days[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    for (int year = 1900; year < 2200; year++) {
        for (int mon = 0; mon < 12; mon++) {
            for (int mday = 1; mday <= 31; mday++) {
                struct tm tm = {.tm_year = year - 1900,
                                .tm_mon = mon,
                                .tm_mday = mday,
                                .tm_hour = 23,
                                .tm_min = 59,
                                .tm_sec = mday % 2 ? 59 : 0};
                time_t want = __real_timegm(&tm);
                if (tm.tm_mon != mon)
                    break; /* past the month's last day */
                char s[64];
                time_t got = 0;
                snprintf(s, sizeof(s), "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
                         mday, months[mon], year, 23, 59, mday % 2 ? 59 : 0);
                assert_int_equal(httpdate_parse(s, &got), SC_OK);
                assert_int_equal(got, want);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_takes_no_time_zone_lock),
        cmocka_unit_test(every_day_of_three_centuries_agrees_with_timegm),
        cmocka_unit_test(imf_fixdate_parses),
        cmocka_unit_test(rfc850_parses_to_same_instant),
        cmocka_unit_test(asctime_with_space_padded_day_parses),
        cmocka_unit_test(asctime_with_two_digit_day_parses),
        cmocka_unit_test(epoch_and_the_second_before_parse),
        cmocka_unit_test(dates_past_2038_parse),
        cmocka_unit_test(names_are_case_insensitive),
        cmocka_unit_test(surrounding_spaces_and_tabs_are_ignored),
        cmocka_unit_test(leap_day_is_accepted_only_in_leap_years),
        cmocka_unit_test(leap_second_counts_as_next_minute),
        cmocka_unit_test(rfc850_two_digit_year_uses_fixed_window),
        cmocka_unit_test(parsing_ignores_the_tz_environment),
        cmocka_unit_test(garbage_is_refused),
        cmocka_unit_test(wrong_names_are_refused),
        cmocka_unit_test(zone_other_than_gmt_is_refused),
        cmocka_unit_test(trailing_garbage_is_refused),
        cmocka_unit_test(fields_out_of_range_are_refused),
        cmocka_unit_test(wrong_widths_and_separators_are_refused),
        cmocka_unit_test(format_gives_imf_fixdate),
        cmocka_unit_test(format_refuses_years_beyond_four_digits),
        cmocka_unit_test(format_then_parse_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
