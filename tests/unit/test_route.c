/* test_route.c - where the dispatcher sends a request (gateway/route.h), for every kind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../gateway/route.h"

static const enum s3_req_kind every_kind[] = {S3_REQ_PASS, S3_REQ_GET_OBJECT, S3_REQ_HEAD_OBJECT,
                                              S3_REQ_ADMIN};
#define N_KINDS (sizeof(every_kind) / sizeof(every_kind[0]))

static void probe_is_answered_first(void **state)
{
    for (int draining = 0; draining < 2; draining++)
        for (int parsed = 0; parsed < 2; parsed++)
            assert_int_equal(gw_route_gate(true, draining, parsed), GW_STEP_PROBE);
}

static void draining_refuses_the_rest(void **state)
{
    assert_int_equal(gw_route_gate(false, true, false), GW_STEP_UNAVAILABLE);
    assert_int_equal(gw_route_gate(false, true, true), GW_STEP_UNAVAILABLE);
}

static void unparsed_is_parsed_parsed_is_routed(void **state)
{
    assert_int_equal(gw_route_gate(false, false, false), GW_STEP_PARSE);
    assert_int_equal(gw_route_gate(false, false, true), GW_STEP_ROUTE);
}

static void every_kind_has_its_step(void **state)
{
    assert_int_equal(gw_route_kind(S3_REQ_ADMIN), GW_STEP_ADMIN);
    assert_int_equal(gw_route_kind(S3_REQ_GET_OBJECT), GW_STEP_LOOKUP);
    assert_int_equal(gw_route_kind(S3_REQ_HEAD_OBJECT), GW_STEP_LOOKUP);
    assert_int_equal(gw_route_kind(S3_REQ_PASS), GW_STEP_PROXY);
    assert_int_equal(gw_route_kind((enum s3_req_kind)99), GW_STEP_UNROUTABLE);
}

/* Only a pass-through that is not a read forwards its body; the admin API collects its own;
 * every other body (GET or HEAD) is drained. */
static void body_fate_for_every_kind_and_method(void **state)
{
    static const char *const methods[] = {"GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"};
    for (size_t k = 0; k < N_KINDS; k++) {
        for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
            enum s3_req_kind kind = every_kind[k];
            bool read = m < 2;
            enum gw_body_fate want = kind == S3_REQ_ADMIN           ? GW_BODY_COLLECT
                                     : kind == S3_REQ_PASS && !read ? GW_BODY_FORWARD
                                                                    : GW_BODY_DRAIN;
            assert_int_equal(gw_route_body(kind, methods[m]), want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(probe_is_answered_first),
        cmocka_unit_test(draining_refuses_the_rest),
        cmocka_unit_test(unparsed_is_parsed_parsed_is_routed),
        cmocka_unit_test(every_kind_has_its_step),
        cmocka_unit_test(body_fate_for_every_kind_and_method),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
