/* test_api_err.c - admin API errors (proto/api_err.h) and bounded JSON loading
 * (proto/json_in.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/api_err.h"
#include "../../proto/json_in.h"

static void codes_have_contract_names_and_statuses(void **state)
{
    assert_string_equal(api_err_name(API_INVALID_JSON), "InvalidJSON");
    assert_string_equal(api_err_name(API_UNKNOWN_FIELD), "UnknownField");
    assert_string_equal(api_err_name(API_MISSING_FIELD), "MissingField");
    assert_string_equal(api_err_name(API_INVALID_FIELD), "InvalidField");
    assert_string_equal(api_err_name(API_TOO_LARGE), "TooLarge");
    assert_string_equal(api_err_name(API_NOT_FOUND), "NotFound");
    assert_string_equal(api_err_name(API_METHOD_NOT_ALLOWED), "MethodNotAllowed");
    assert_int_equal(api_err_status(API_INVALID_FIELD), 400);
    assert_int_equal(api_err_status(API_TOO_LARGE), 413);
    assert_int_equal(api_err_status(API_NOT_FOUND), 404);
    assert_int_equal(api_err_status(API_METHOD_NOT_ALLOWED), 405);
}

static void error_renders_as_json_with_escapes(void **state)
{
    struct api_err e;
    api_err_set(&e, API_UNKNOWN_FIELD, "unknown field \"%s\"", "a\\b");
    char *text = api_err_json(&e);
    assert_string_equal(
        text, "{\"error\":\"UnknownField\",\"message\":\"unknown field \\\"a\\\\b\\\"\"}");
    free(text);
    api_err_set(NULL, API_TOO_LARGE, "ignored"); /* no target: nothing happens */
}

static void message_that_is_not_utf8_degrades_to_ascii(void **state)
{
    struct api_err e;
    api_err_set(&e, API_INVALID_FIELD, "bad \xff key");
    char *text = api_err_json(&e);
    assert_string_equal(text, "{\"error\":\"InvalidField\",\"message\":\"bad ? key\"}");
    free(text);
}

static void long_message_is_cut_to_fit(void **state)
{
    struct api_err e;
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    api_err_set(&e, API_INVALID_FIELD, "%s", big);
    assert_int_equal(strlen(e.message), API_ERR_MSG_MAX - 1);
}

static void excerpt_cuts_at_a_character_boundary(void **state)
{
    char buf[JSON_IN_EXCERPT_CAP];
    char s[100];
    assert_string_equal(json_in_excerpt(buf, sizeof(buf), "abc", 3), "abc");
    assert_string_equal(json_in_excerpt(buf, sizeof(buf), "a\nb\xff", 4), "a?b?");
    /* 63 ASCII bytes then a 2-byte character that would cross byte 64 */
    memset(s, 'a', 63);
    memcpy(s + 63, "\xc3\xa9zz", 4);
    json_in_excerpt(buf, sizeof(buf), s, 67);
    assert_int_equal(strlen(buf), 66);
    assert_memory_equal(buf + 60, "aaa...", 6);
    json_in_excerpt(buf, 8, s, 67); /* a small buffer still ends in "..." */
    assert_string_equal(buf, "aaaa...");
}

static void loader_bounds_size_and_depth(void **state)
{
    json_t *j;
    struct api_err e;
    assert_int_equal(json_in_load("[[1]]", 5, 5, 2, &j, &e), SC_OK);
    json_decref(j);
    assert_int_equal(json_in_load("[[1]]", 5, 4, 2, &j, &e), SC_ETOOBIG);
    assert_null(j);
    assert_string_equal(e.message, "the body is 5 bytes; the limit is 4");
    assert_int_equal(json_in_load("[[[1]]]", 7, 100, 2, &j, &e), SC_EINVAL);
    assert_int_equal(e.code, API_INVALID_JSON);
    assert_string_equal(e.message, "JSON nested deeper than 2 levels");
    /* brackets and escaped quotes inside strings are not nesting */
    const char *s = "[\"[[[\\\"{{{\"]";
    assert_int_equal(json_in_load(s, strlen(s), 100, 1, &j, &e), SC_OK);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(codes_have_contract_names_and_statuses),
        cmocka_unit_test(error_renders_as_json_with_escapes),
        cmocka_unit_test(message_that_is_not_utf8_degrades_to_ascii),
        cmocka_unit_test(long_message_is_cut_to_fit),
        cmocka_unit_test(excerpt_cuts_at_a_character_boundary),
        cmocka_unit_test(loader_bounds_size_and_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
