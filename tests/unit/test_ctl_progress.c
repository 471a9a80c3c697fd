/*
 * test_ctl_progress.c - s3cachectl's text formatting (tools/ctl/progress.h):
 * sizes, counts, durations, rates, the bar, progress lines on a terminal and
 * in a log, summaries, and when a plain line is due.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/ctl/progress.h"

static struct prog_snapshot warming(uint64_t cached, uint64_t total)
{
    return (struct prog_snapshot){.id = "m3",
                                  .state_name = "warming",
                                  .state = PROG_WARMING,
                                  .bucket = "b",
                                  .total_known = true,
                                  .objects_total = total,
                                  .objects_cached = cached,
                                  .bytes_cached = cached * 1024,
                                  .bytes_total = total * 1024,
                                  .rate_bytes_per_s = 2.5 * 1024 * 1024,
                                  .eta_seconds = 65};
}

static void bytes_use_binary_units_with_one_decimal(void **state)
{
    char b[PROG_FIELD_MAX];
    assert_string_equal(prog_bytes(b, sizeof(b), 0), "0 B");
    assert_string_equal(prog_bytes(b, sizeof(b), 1023), "1023 B");
    assert_string_equal(prog_bytes(b, sizeof(b), 1024), "1.0 KiB");
    assert_string_equal(prog_bytes(b, sizeof(b), 1536), "1.5 KiB");
    assert_string_equal(prog_bytes(b, sizeof(b), 5ull << 30), "5.0 GiB");
    assert_string_equal(prog_bytes(b, sizeof(b), 3ull << 40), "3.0 TiB");
    assert_string_equal(prog_bytes(b, sizeof(b), UINT64_MAX), "16.0 EiB");
}

static void bytes_just_under_a_unit_round_up_to_the_next_unit(void **state)
{
    char b[PROG_FIELD_MAX];
    assert_string_equal(prog_bytes(b, sizeof(b), (1ull << 20) - 1), "1.0 MiB");
    assert_string_equal(prog_bytes(b, sizeof(b), 1023 * 1024 + 900), "1023.9 KiB");
}

static void counts_get_thousands_separators(void **state)
{
    char b[PROG_FIELD_MAX];
    assert_string_equal(prog_count(b, sizeof(b), 0), "0");
    assert_string_equal(prog_count(b, sizeof(b), 999), "999");
    assert_string_equal(prog_count(b, sizeof(b), 1000), "1,000");
    assert_string_equal(prog_count(b, sizeof(b), 1234567), "1,234,567");
    assert_string_equal(prog_count(b, sizeof(b), UINT64_MAX), "18,446,744,073,709,551,615");
}

static void durations_pick_the_two_largest_units(void **state)
{
    char b[PROG_FIELD_MAX];
    assert_string_equal(prog_duration(b, sizeof(b), 0), "0s");
    assert_string_equal(prog_duration(b, sizeof(b), 41.6), "42s");
    assert_string_equal(prog_duration(b, sizeof(b), 59.4), "59s");
    assert_string_equal(prog_duration(b, sizeof(b), 59.6), "1m00s");
    assert_string_equal(prog_duration(b, sizeof(b), 185), "3m05s");
    assert_string_equal(prog_duration(b, sizeof(b), 3720), "1h02m");
    assert_string_equal(prog_duration(b, sizeof(b), 2 * 86400 + 3 * 3600 + 59), "2d03h");
}

static void unknown_durations_and_rates_print_as_dashes(void **state)
{
    char b[PROG_FIELD_MAX];
    assert_string_equal(prog_duration(b, sizeof(b), -1), "--");
    assert_string_equal(prog_duration(b, sizeof(b), NAN), "--");
    assert_string_equal(prog_duration(b, sizeof(b), INFINITY), "--");
    assert_string_equal(prog_rate(b, sizeof(b), 0), "--");
    assert_string_equal(prog_rate(b, sizeof(b), -5), "--");
    assert_string_equal(prog_rate(b, sizeof(b), NAN), "--");
    assert_string_equal(prog_rate(b, sizeof(b), 2.5 * 1024 * 1024), "2.5 MiB/s");
}

static void bar_fills_in_proportion_with_a_head(void **state)
{
    char b[64];
    assert_string_equal(prog_bar(b, sizeof(b), 0, 12), "[          ]");
    assert_string_equal(prog_bar(b, sizeof(b), 0.5, 12), "[=====>    ]");
    assert_string_equal(prog_bar(b, sizeof(b), 1, 12), "[==========]");
    assert_string_equal(prog_bar(b, sizeof(b), 7, 7), "[=====]");
    assert_string_equal(prog_bar(b, sizeof(b), -1, 5), "[   ]");
    assert_string_equal(prog_bar(b, sizeof(b), NAN, 5), "[   ]");
    assert_string_equal(prog_bar(b, sizeof(b), 0.5, 2), "");
}

static void formatters_cut_to_a_small_buffer(void **state)
{
    char b[6];
    assert_string_equal(prog_bar(b, sizeof(b), 1, 40), "[====");
    assert_string_equal(prog_count(b, sizeof(b), 1234567), "1,234");
    char one[1] = {'x'};
    prog_sanitize(one, sizeof(one), "abc");
    assert_int_equal(one[0], '\0');
}

static void percent_rounds_down_and_is_100_only_when_all_are_cached(void **state)
{
    struct prog_snapshot s = warming(999, 1000);
    assert_int_equal(prog_percent(&s), 99);
    s.objects_cached = 1000;
    assert_int_equal(prog_percent(&s), 100);
    s.objects_cached = 2000; /* an odd reply does not go over 100 */
    assert_int_equal(prog_percent(&s), 100);
    s.total_known = false;
    assert_int_equal(prog_percent(&s), 0);
    s = warming(0, 0);
    assert_int_equal(prog_percent(&s), 0);
}

static void states_parse_by_name_and_only_settled_ones_are_final(void **state)
{
    assert_int_equal(prog_state_parse("listing"), PROG_LISTING);
    assert_int_equal(prog_state_parse("warm"), PROG_WARM);
    assert_int_equal(prog_state_parse("canceled"), PROG_CANCELED);
    assert_int_equal(prog_state_parse("Warm"), PROG_UNKNOWN);
    assert_int_equal(prog_state_parse(NULL), PROG_UNKNOWN);
    assert_false(prog_state_is_final(PROG_LISTING));
    assert_false(prog_state_is_final(PROG_WARMING));
    assert_false(prog_state_is_final(PROG_UNKNOWN));
    assert_true(prog_state_is_final(PROG_WARM));
    assert_true(prog_state_is_final(PROG_PLANNED));
    assert_true(prog_state_is_final(PROG_DONE));
    assert_true(prog_state_is_final(PROG_CANCELED));
    assert_true(prog_state_is_final(PROG_FAILED));
}

static void eta_counts_every_object_left_at_the_mean_rate(void **state)
{
    struct prog_snapshot s = warming(40, 100);
    s.objects_failed = 10;
    s.eta_seconds = 1; /* the gateway's, from its in-flight window only */
    s.rate_objects_per_s = 5;
    assert_true(prog_eta(&s) == 10.0);
    s.objects_cached = 95; /* an odd reply: more done than planned */
    assert_true(prog_eta(&s) == 0.0);
    s.rate_objects_per_s = 0; /* no rate yet: the gateway's estimate */
    assert_true(prog_eta(&s) == 1.0);
    s.rate_objects_per_s = NAN;
    assert_true(prog_eta(&s) == 1.0);
    s.rate_objects_per_s = 5;
    s.total_known = false;
    s.eta_seconds = -1;
    assert_true(prog_eta(&s) < 0);
}

static void sanitize_replaces_control_characters_and_keeps_utf8(void **state)
{
    char b[64];
    assert_string_equal(prog_sanitize(b, sizeof(b), "a\rb\nc\033[2Jd\x7f"), "a?b?c?[2Jd?");
    assert_string_equal(prog_sanitize(b, sizeof(b), "caf\xc3\xa9"), "caf\xc3\xa9");
    assert_string_equal(prog_sanitize(b, sizeof(b), "x\xc2\x9by"), "x?y"); /* C1 CSI */
    assert_string_equal(prog_sanitize(b, sizeof(b), NULL), "-");
}

static void plain_line_has_counts_bytes_rate_eta_and_failures_but_no_bar(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(450, 1000);
    s.objects_failed = 2;
    prog_line(b, sizeof(b), &s, false, 0);
    assert_string_equal(
        b,
        "m3 warming  45%  450/1000 objects  450.0 KiB/1000.0 KiB  2.5 MiB/s  ETA 1m05s  2 failed");
    assert_null(strchr(b, '\r'));
    assert_null(strchr(b, '['));
}

static void terminal_line_has_a_bar_and_never_reaches_the_last_column(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(500, 1000);
    prog_line(b, sizeof(b), &s, true, 120);
    assert_int_equal(strncmp(b, "m3 warming [=====", 17), 0);
    assert_non_null(strstr(b, "=>   ")); /* half full, with a head */
    assert_non_null(strstr(b, " 50%  500/1000 objects"));
    assert_true(strlen(b) <= 119);
    for (unsigned width = 1; width < 130; width++) {
        prog_line(b, sizeof(b), &s, true, width);
        assert_true(strlen(b) <= (width > 1 ? width - 1 : 0) || width == 1);
    }
}

static void narrow_terminal_leaves_out_rate_and_bytes_before_the_bar(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(500, 1000);
    prog_line(b, sizeof(b), &s, true, 80);
    assert_int_equal(strncmp(b, "m3 warming [", 12), 0);
    assert_null(strstr(b, "MiB/s"));
    assert_null(strstr(b, "KiB"));
    assert_non_null(strstr(b, " 50%  500/1000 objects  ETA 1m05s  0 failed"));
    assert_true(strlen(b) <= 79);
}

static void very_narrow_terminal_drops_the_bar_then_cuts_the_line(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(500, 1000);
    s.objects_failed = 4; /* failures are the last thing left out */
    prog_line(b, sizeof(b), &s, true, 50);
    assert_string_equal(b, "m3 warming  50%  500/1000 objects  4 failed");
    prog_line(b, sizeof(b), &s, true, 20);
    assert_string_equal(b, "m3 warming  50%  50");
}

static void terminal_line_cuts_at_a_character_boundary(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = {.id = "m1",
                              .state_name = "listing",
                              .state = PROG_LISTING,
                              .bucket = "b",
                              .prefix = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"};
    prog_line(b, sizeof(b), &s, true, 22); /* "m1 listing s3://b/" is 18 columns */
    assert_string_equal(b, "m1 listing s3://b/\xc3\xa9\xc3\xa9\xc3\xa9");
    assert_int_equal(prog_width(b), 21);
    assert_int_equal(prog_width(""), 0);
}

static void listing_and_planned_lines_say_what_is_happening(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = {.id = "m2",
                              .state_name = "listing",
                              .state = PROG_LISTING,
                              .bucket = "ds",
                              .prefix = "train/"};
    assert_string_equal(prog_line(b, sizeof(b), &s, false, 0), "m2 listing s3://ds/train/ ...");
    s.state = PROG_PLANNED;
    s.state_name = "planned";
    assert_string_equal(prog_line(b, sizeof(b), &s, false, 0), "m2 planned: prefetch is off");
}

static void line_with_unknown_total_and_eta_shows_question_marks_and_dashes(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = {.id = "m4",
                              .state_name = "warming",
                              .state = PROG_WARMING,
                              .objects_cached = 3,
                              .eta_seconds = -1};
    prog_line(b, sizeof(b), &s, false, 0);
    assert_string_equal(b, "m4 warming   0%  3/? objects  0 B  ETA --  0 failed");
}

static void server_strings_cannot_put_control_characters_in_a_line(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = {.id = "m\r1",
                              .state_name = "warm\033ing",
                              .state = PROG_WARMING,
                              .total_known = true,
                              .objects_total = 1};
    prog_line(b, sizeof(b), &s, true, 200);
    for (const char *p = b; *p; p++)
        assert_true((unsigned char)*p >= 0x20);
}

static void summary_names_the_state_first(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(50, 50);
    s.state = PROG_WARM;
    s.state_name = "warm";
    s.bytes_cached = 200 * 1024;
    assert_string_equal(prog_summary(b, sizeof(b), &s, 2.2),
                        "m3 warm: 50/50 objects cached (200.0 KiB) in 2s");
    s.objects_failed = 3;
    s.objects_cached = 47;
    assert_string_equal(prog_summary(b, sizeof(b), &s, -1),
                        "m3 warm: 47/50 objects cached (200.0 KiB), 3 failed");
}

static void summary_of_a_plan_larger_than_the_cache_says_how_much_fits(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(600, 1000);
    s.state = PROG_WARM;
    s.state_name = "warm";
    s.fits = 600;
    prog_summary(b, sizeof(b), &s, 10);
    assert_non_null(strstr(b, "600 of 1000 objects fit in the cache ahead of the trainer"));
}

static void summaries_of_failed_canceled_done_and_planned(void **state)
{
    char b[PROG_LINE_MAX];
    struct prog_snapshot s = warming(5, 10);
    s.state = PROG_FAILED;
    s.error = "listing the prefix failed: NoSuchBucket (HTTP 404)";
    assert_string_equal(prog_summary(b, sizeof(b), &s, 1),
                        "m3 failed: listing the prefix failed: NoSuchBucket (HTTP 404)");
    s.error = NULL;
    assert_string_equal(prog_summary(b, sizeof(b), &s, 1), "m3 failed: no reason given");
    s.state = PROG_CANCELED;
    assert_string_equal(prog_summary(b, sizeof(b), &s, 1),
                        "m3 canceled: 5/10 objects were cached (5.0 KiB); they stay cached");
    s.state = PROG_DONE;
    assert_string_equal(
        prog_summary(b, sizeof(b), &s, 1),
        "m3 done: the trainer passed the end of the plan; 5/10 objects cached (5.0 KiB)");
    s.state = PROG_PLANNED;
    assert_string_equal(prog_summary(b, sizeof(b), &s, 1),
                        "m3 planned: prefetch is off; the eviction policy plans by it");
}

static void plain_line_is_due_first_on_state_change_and_every_interval_while_changing(void **state)
{
    struct prog_snapshot a = warming(10, 100), b = warming(10, 100);
    assert_true(prog_plain_due(NULL, 0, &a, 0, 2));
    assert_false(prog_plain_due(&a, 0, &b, 5, 2)); /* nothing changed, however long */
    b.objects_cached = 11;
    assert_false(prog_plain_due(&a, 0, &b, 1.9, 2)); /* changed, but too soon */
    assert_true(prog_plain_due(&a, 0, &b, 2.0, 2));
    b = a;
    b.objects_failed = 1;
    assert_true(prog_plain_due(&a, 0, &b, 3, 2));
    b = a;
    b.state = PROG_WARM; /* a state change is shown at once */
    assert_true(prog_plain_due(&a, 0, &b, 0.1, 2));
    b = a;
    b.rate_bytes_per_s = 1; /* rate and ETA alone are not a change */
    b.eta_seconds = 3;
    assert_false(prog_plain_due(&a, 0, &b, 10, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bytes_use_binary_units_with_one_decimal),
        cmocka_unit_test(bytes_just_under_a_unit_round_up_to_the_next_unit),
        cmocka_unit_test(counts_get_thousands_separators),
        cmocka_unit_test(durations_pick_the_two_largest_units),
        cmocka_unit_test(unknown_durations_and_rates_print_as_dashes),
        cmocka_unit_test(bar_fills_in_proportion_with_a_head),
        cmocka_unit_test(formatters_cut_to_a_small_buffer),
        cmocka_unit_test(percent_rounds_down_and_is_100_only_when_all_are_cached),
        cmocka_unit_test(states_parse_by_name_and_only_settled_ones_are_final),
        cmocka_unit_test(eta_counts_every_object_left_at_the_mean_rate),
        cmocka_unit_test(sanitize_replaces_control_characters_and_keeps_utf8),
        cmocka_unit_test(plain_line_has_counts_bytes_rate_eta_and_failures_but_no_bar),
        cmocka_unit_test(terminal_line_has_a_bar_and_never_reaches_the_last_column),
        cmocka_unit_test(narrow_terminal_leaves_out_rate_and_bytes_before_the_bar),
        cmocka_unit_test(very_narrow_terminal_drops_the_bar_then_cuts_the_line),
        cmocka_unit_test(terminal_line_cuts_at_a_character_boundary),
        cmocka_unit_test(listing_and_planned_lines_say_what_is_happening),
        cmocka_unit_test(line_with_unknown_total_and_eta_shows_question_marks_and_dashes),
        cmocka_unit_test(server_strings_cannot_put_control_characters_in_a_line),
        cmocka_unit_test(summary_names_the_state_first),
        cmocka_unit_test(summary_of_a_plan_larger_than_the_cache_says_how_much_fits),
        cmocka_unit_test(summaries_of_failed_canceled_done_and_planned),
        cmocka_unit_test(plain_line_is_due_first_on_state_change_and_every_interval_while_changing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
