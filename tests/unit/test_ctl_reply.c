/*
 * test_ctl_reply.c - how s3cachectl reads the gateway's replies
 * (tools/ctl/reply.c): error reasons from admin JSON, S3 XML and plain text;
 * fields of the wrong type; progress objects with odd or missing fields; the
 * exit status a watch ends with. Also the aligned tables (tools/ctl/table.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/ctl/ctl.h"

static void message(long status, const char *body, char *out, size_t cap, bool *xml)
{
    ctl_reply_message(status, body, body ? strlen(body) : 0, out, cap, xml);
}

static void admin_json_error_gives_code_and_message(void **state)
{
    char m[CTL_ERR_MAX];
    bool xml = true;
    message(400, "{\"error\":\"UnknownField\",\"message\":\"unknown field \\\"shufle\\\"\"}", m,
            sizeof(m), &xml);
    assert_string_equal(m, "UnknownField: unknown field \"shufle\"");
    assert_false(xml);
    message(404, "{\"error\":\"NotFound\"}", m, sizeof(m), &xml);
    assert_string_equal(m, "NotFound");
}

static void s3_xml_error_is_recognized_and_its_entities_decoded(void **state)
{
    char m[CTL_ERR_MAX];
    bool xml = false;
    message(404,
            "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The bucket &quot;_"
            "s3cached&quot; &lt;does not&gt; exist &amp; never will</Message></Error>",
            m, sizeof(m), &xml);
    assert_string_equal(m, "NoSuchBucket: The bucket \"_s3cached\" <does not> exist & never will");
    assert_true(xml);
}

static void plain_text_error_gives_its_first_line_cut_short(void **state)
{
    char m[CTL_ERR_MAX], body[600];
    bool xml = true;
    message(502, "\n  Bad Gateway\nfrom nginx", m, sizeof(m), &xml);
    assert_string_equal(m, "Bad Gateway");
    assert_false(xml);
    memset(body, 'x', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    message(500, body, m, sizeof(m), &xml);
    assert_int_equal(strlen(m), 203); /* 200 bytes and "..." */
}

static void empty_or_blank_error_body_names_the_status(void **state)
{
    char m[CTL_ERR_MAX];
    bool xml;
    message(503, "", m, sizeof(m), &xml);
    assert_string_equal(m, "HTTP 503 with no explanation");
    message(503, NULL, m, sizeof(m), &xml);
    assert_string_equal(m, "HTTP 503 with no explanation");
    message(500, " \r\n ", m, sizeof(m), &xml);
    assert_string_equal(m, "HTTP 500 with no explanation");
}

static void error_reasons_lose_control_characters_and_fit_the_buffer(void **state)
{
    char m[16];
    bool xml;
    message(400, "{\"error\":\"X\",\"message\":\"a\\u001b[31mb\\nc and much more\"}", m, sizeof(m),
            &xml);
    assert_string_equal(m, "X: a?[31mb?c an");
}

static void unterminated_xml_falls_back_to_text(void **state)
{
    char m[CTL_ERR_MAX];
    bool xml = true;
    message(400, "<Error><Code>Oops", m, sizeof(m), &xml);
    assert_false(xml);
    assert_string_equal(m, "<Error><Code>Oops");
}

static void fields_of_the_wrong_type_read_as_absent(void **state)
{
    json_t *o =
        json_loads("{\"s\":\"x\",\"n\":-3,\"r\":2.7,\"big\":1e30,\"z\":null,\"i\":7}", 0, NULL);
    uint64_t u = 99;
    double d = 0;
    assert_string_equal(ctl_jstr(o, "s"), "x");
    assert_null(ctl_jstr(o, "i"));
    assert_null(ctl_jstr(o, "missing"));
    assert_null(ctl_jstr(NULL, "s"));
    assert_false(ctl_juint(o, "n", &u));
    assert_false(ctl_juint(o, "big", &u));
    assert_false(ctl_juint(o, "z", &u));
    assert_false(ctl_juint(o, "s", &u));
    assert_int_equal(u, 99);
    assert_true(ctl_juint(o, "r", &u));
    assert_int_equal(u, 2);
    assert_true(ctl_juint(o, "i", &u));
    assert_int_equal(u, 7);
    assert_true(ctl_jreal(o, "n", &d));
    assert_true(d == -3);
    assert_false(ctl_jreal(o, "z", &d));
    json_decref(o);
}

static void progress_object_is_read_field_by_field(void **state)
{
    json_t *o = json_loads(
        "{\"id\":\"m1\",\"name\":\"run\",\"bucket\":\"demo\",\"form\":\"prefix\","
        "\"prefix\":\"train/\",\"state\":\"warming\",\"epochs\":3,\"accesses\":150,"
        "\"position\":12,\"objects_total\":50,\"objects_cached\":8,\"objects_in_flight\":16,"
        "\"objects_failed\":1,\"fits\":50,\"bytes_total\":4100,\"bytes_cached\":650,"
        "\"rate_bytes_per_s\":1200.5,\"rate_objects_per_s\":15,\"eta_seconds\":28.2,"
        "\"percent\":16,\"error\":null}",
        0, NULL);
    struct prog_snapshot s;
    ctl_snapshot_parse(o, &s);
    assert_string_equal(s.id, "m1");
    assert_string_equal(s.name, "run");
    assert_string_equal(s.prefix, "train/");
    assert_int_equal(s.state, PROG_WARMING);
    assert_true(s.total_known);
    assert_int_equal(s.objects_total, 50);
    assert_int_equal(s.objects_cached, 8);
    assert_int_equal(s.objects_in_flight, 16);
    assert_int_equal(s.objects_failed, 1);
    assert_int_equal(s.bytes_cached, 650);
    assert_int_equal(s.position, 12);
    assert_true(s.rate_bytes_per_s == 1200.5);
    assert_true(s.eta_seconds == 28.2);
    assert_null(s.error);
    json_decref(o);
}

static void odd_progress_objects_give_safe_defaults(void **state)
{
    const char *odd[] = {
        "{}",
        ("{\"id\":5,\"state\":[],\"objects_total\":null,\"objects_cached\":\"many\","
         "\"eta_seconds\":null,\"rate_bytes_per_s\":-4}"),
        "{\"state\":\"frozen\",\"objects_total\":-1,\"eta_seconds\":-2}",
        "[1,2,3]",
    };
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        json_t *o = json_loads(odd[i], 0, NULL);
        struct prog_snapshot s;
        char line[PROG_LINE_MAX];
        ctl_snapshot_parse(o, &s);
        assert_string_equal(s.id, "?");
        assert_int_equal(s.state, PROG_UNKNOWN);
        assert_false(s.total_known);
        assert_int_equal(s.objects_cached, 0);
        assert_true(s.eta_seconds < 0);
        assert_true(s.rate_bytes_per_s == 0);
        assert_false(prog_state_is_final(s.state)); /* an unknown state keeps the watch going */
        prog_line(line, sizeof(line), &s, true, 80);
        prog_summary(line, sizeof(line), &s, 1);
        json_decref(o);
    }
    struct prog_snapshot s;
    ctl_snapshot_parse(NULL, &s);
    assert_string_equal(s.state_name, "unknown");
}

static void final_states_map_to_distinct_exit_statuses(void **state)
{
    struct prog_snapshot s = {.state = PROG_WARM};
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_OK);
    s.objects_failed = 1;
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_PARTIAL);
    s.state = PROG_DONE;
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_PARTIAL);
    s.objects_failed = 0;
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_OK);
    s.state = PROG_PLANNED;
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_OK);
    s.state = PROG_FAILED;
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_FAILED);
    s.state = PROG_CANCELED;
    assert_int_equal(ctl_snapshot_exit(&s), CTL_EXIT_CANCELED);
    assert_int_equal(ctl_api_exit(SC_EUPSTREAM), CTL_EXIT_UNREACHABLE);
    assert_int_equal(ctl_api_exit(SC_ETIMEOUT), CTL_EXIT_UNREACHABLE);
    assert_int_equal(ctl_api_exit(SC_ECANCELED), CTL_EXIT_INTERRUPTED);
    assert_int_equal(ctl_api_exit(SC_EINVAL), CTL_EXIT_ERROR);
}

static void manifest_paths_percent_encode_the_id(void **state)
{
    char *p = NULL;
    assert_int_equal(ctl_manifest_path("m12", "/order?epoch=1", &p), SC_OK);
    assert_string_equal(p, "manifests/m12/order?epoch=1");
    free(p);
    assert_int_equal(ctl_manifest_path("../stats?x", "", &p), SC_OK);
    assert_string_equal(p, "manifests/..%2Fstats%3Fx");
    free(p);
}

/* ---- tables ------------------------------------------------------------------ */

static char *print_table(const struct ctl_table *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    ctl_table_print(t, f);
    fclose(f);
    return text;
}

static void table_aligns_columns_left_or_right_without_trailing_spaces(void **state)
{
    struct ctl_table t;
    ctl_table_init(&t, 3, "lrl");
    const char *r1[] = {"ID", "DONE", "NAME"};
    const char *r2[] = {"m1", "5%", "resnet"};
    const char *r3[] = {"m10", "100%", NULL};
    assert_int_equal(ctl_table_add(&t, r1), SC_OK);
    assert_int_equal(ctl_table_add(&t, r2), SC_OK);
    assert_int_equal(ctl_table_add(&t, r3), SC_OK);
    char *text = print_table(&t);
    assert_string_equal(text, "ID   DONE  NAME\n"
                              "m1     5%  resnet\n"
                              "m10  100%  -\n");
    free(text);
    ctl_table_free(&t);
}

static void table_counts_characters_and_removes_control_bytes(void **state)
{
    struct ctl_table t;
    ctl_table_init(&t, 2, "ll");
    const char *r1[] = {"caf\xc3\xa9", "x"};
    const char *r2[] = {"ab\033c", ""};
    assert_int_equal(ctl_table_add(&t, r1), SC_OK);
    assert_int_equal(ctl_table_add(&t, r2), SC_OK);
    char *text = print_table(&t);
    assert_string_equal(text, "caf\xc3\xa9  x\nab?c  -\n");
    free(text);
    ctl_table_free(&t);
}

static void table_grows_past_its_first_allocation(void **state)
{
    struct ctl_table t;
    char n[16];
    ctl_table_init(&t, 1, "r");
    for (int i = 0; i < 100; i++) {
        snprintf(n, sizeof(n), "%d", i);
        const char *row[] = {n};
        assert_int_equal(ctl_table_add(&t, row), SC_OK);
    }
    char *text = print_table(&t);
    assert_int_equal(strncmp(text, " 0\n 1\n", 6), 0);
    assert_non_null(strstr(text, "\n99\n"));
    free(text);
    ctl_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admin_json_error_gives_code_and_message),
        cmocka_unit_test(s3_xml_error_is_recognized_and_its_entities_decoded),
        cmocka_unit_test(plain_text_error_gives_its_first_line_cut_short),
        cmocka_unit_test(empty_or_blank_error_body_names_the_status),
        cmocka_unit_test(error_reasons_lose_control_characters_and_fit_the_buffer),
        cmocka_unit_test(unterminated_xml_falls_back_to_text),
        cmocka_unit_test(fields_of_the_wrong_type_read_as_absent),
        cmocka_unit_test(progress_object_is_read_field_by_field),
        cmocka_unit_test(odd_progress_objects_give_safe_defaults),
        cmocka_unit_test(final_states_map_to_distinct_exit_statuses),
        cmocka_unit_test(manifest_paths_percent_encode_the_id),
        cmocka_unit_test(table_aligns_columns_left_or_right_without_trailing_spaces),
        cmocka_unit_test(table_counts_characters_and_removes_control_bytes),
        cmocka_unit_test(table_grows_past_its_first_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
