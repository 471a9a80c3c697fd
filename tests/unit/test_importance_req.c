/* test_importance_req.c - importance bodies parsed and scored (manifest/importance_req.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../manifest/importance_req.h"
#include "../../policy/policy.h"

/* Doubles equal to within rounding (this cmocka has no assert_double_equal). */
#define assert_near(a, b) assert_true(fabs((a) - (b)) <= 1e-12)

static void parse_ok(const char *body, struct importance_req *r)
{
    struct api_err err = {API_OK, ""};
    if (importance_req_parse(body, strlen(body), NULL, r, &err) != SC_OK)
        fail_msg("refused %s: %s", body, err.message);
}

static void refused_with(const char *body, const struct importance_limits *lim,
                         enum api_err_code code, const char *message)
{
    struct importance_req r;
    struct api_err err = {API_OK, ""};
    sc_code rc = importance_req_parse(body, strlen(body), lim, &r, &err);
    assert_int_equal(rc, code == API_TOO_LARGE ? SC_ETOOBIG : SC_EINVAL);
    assert_null(r.samples);
    assert_int_equal(r.nsamples, 0);
    assert_string_equal(api_err_name(err.code), api_err_name(code));
    assert_string_equal(err.message, message);
}

static void refused(const char *body, enum api_err_code code, const char *message)
{
    refused_with(body, NULL, code, message);
}

/* The sample of r named key (in any minibatch b). */
static const struct importance_sample *find(const struct importance_req *r, size_t b,
                                            const char *key)
{
    for (size_t i = r->batch_start[b]; i < r->batch_start[b + 1]; i++) {
        if (strcmp(r->samples[i].key, key) == 0)
            return &r->samples[i];
    }
    fail_msg("no sample %s in minibatch %zu", key, b);
    return NULL;
}

static void one_minibatch_ranks_by_ascending_loss(void **state)
{
    struct importance_req r;
    parse_ok("{\"bucket\":\"data\",\"losses\":{\"a\":0.7,\"b\":1.3,\"c\":0.1,\"d\":2}}", &r);
    assert_int_equal(r.nbatches, 1);
    assert_int_equal(r.nsamples, 4);
    assert_int_equal(r.batch_start[0], 0);
    assert_int_equal(r.batch_start[1], 4);
    /* ranks: c=1, a=2, b=3, d=4; score log(rank + 10) */
    assert_near(find(&r, 0, "c")->score, log(11.0));
    assert_near(find(&r, 0, "a")->score, log(12.0));
    assert_near(find(&r, 0, "b")->score, log(13.0));
    assert_near(find(&r, 0, "d")->score, log(14.0));
    assert_near(find(&r, 0, "d")->loss, 2.0);
    assert_string_equal(find(&r, 0, "a")->bucket, "data");
    assert_true(find(&r, 0, "a")->khash == sc_key_hash("data", "a"));
    importance_req_free(&r);
    importance_req_free(&r); /* twice is harmless */
}

static void several_minibatches_are_ranked_separately(void **state)
{
    struct importance_req r;
    parse_ok("[{\"bucket\":\"b00\",\"losses\":{\"x\":5.0,\"y\":6.0}},"
             "{\"bucket\":\"b01\",\"losses\":{\"x\":0.5}},"
             "{\"bucket\":\"b00\",\"losses\":{}}]",
             &r);
    assert_int_equal(r.nbatches, 3);
    assert_int_equal(r.nsamples, 3);
    assert_int_equal(r.batch_start[2], 3);
    assert_int_equal(r.batch_start[3], 3);
    assert_near(find(&r, 0, "x")->score, log(11.0));
    assert_near(find(&r, 0, "y")->score, log(12.0));
    /* the smallest loss of all ranks first in its own minibatch */
    assert_near(find(&r, 1, "x")->score, log(11.0));
    assert_string_equal(find(&r, 1, "x")->bucket, "b01");
    assert_true(find(&r, 1, "x")->khash == sc_key_hash("b01", "x"));
    importance_req_free(&r);
}

static void equal_losses_share_the_smaller_rank(void **state)
{
    struct importance_req r;
    parse_ok("{\"bucket\":\"b00\",\"losses\":{\"a\":1,\"b\":1,\"c\":-3e2}}", &r);
    assert_near(find(&r, 0, "c")->score, log(11.0));
    assert_near(find(&r, 0, "a")->score, log(12.0));
    assert_near(find(&r, 0, "b")->score, log(12.0));
    importance_req_free(&r);
}

static void empty_array_scores_nothing(void **state)
{
    struct importance_req r;
    parse_ok("[]", &r);
    assert_int_equal(r.nbatches, 0);
    assert_int_equal(r.nsamples, 0);
    importance_req_free(&r);
}

static void malformed_bodies_are_refused(void **state)
{
    refused("[5]", API_INVALID_JSON, "minibatch 0: a minibatch must be a JSON object");
    refused("[{\"bucket\":\"b00\",\"losses\":{}}, 3]", API_INVALID_JSON,
            "minibatch 1: a minibatch must be a JSON object");
    refused("{\"bucket\":\"b00\",\"losses\":{\"a\":1},\"loss\":{}}", API_UNKNOWN_FIELD,
            "unknown field \"loss\"");
    refused("[{\"losses\":{}}]", API_MISSING_FIELD, "minibatch 0: field \"bucket\" is required");
    refused("{\"bucket\":\"b00\"}", API_MISSING_FIELD, "field \"losses\" is required");
    refused("{\"bucket\":\"B\",\"losses\":{}}", API_INVALID_FIELD,
            "field \"bucket\" must be a valid bucket name");
    refused("{\"bucket\":\"b00\",\"losses\":[1,2]}", API_INVALID_FIELD,
            "field \"losses\" must be an object mapping keys to losses");
    refused("{\"bucket\":\"b00\",\"losses\":{\"a\":\"0.5\"}}", API_INVALID_FIELD,
            "the loss of \"a\" must be a finite number");
    refused("{\"bucket\":\"b00\",\"losses\":{\"a\":null}}", API_INVALID_FIELD,
            "the loss of \"a\" must be a finite number");
    refused("{\"bucket\":\"b00\",\"losses\":{\"\":1}}", API_INVALID_FIELD,
            "\"losses\" key \"\" is 0 bytes; a key is 1..1024 bytes");

    struct importance_req r;
    struct api_err err;
    const char *dup = "{\"bucket\":\"b00\",\"losses\":{\"a\":1,\"a\":2}}";
    assert_int_equal(importance_req_parse(dup, strlen(dup), NULL, &r, &err), SC_EINVAL);
    assert_int_equal(err.code, API_INVALID_JSON);
    assert_non_null(strstr(err.message, "duplicate object key"));
}

static void non_finite_losses_cannot_be_written(void **state)
{
    struct importance_req r;
    struct api_err err;
    static const char *const bodies[] = {
        "{\"bucket\":\"b00\",\"losses\":{\"a\":NaN}}",
        "{\"bucket\":\"b00\",\"losses\":{\"a\":Infinity}}",
        "{\"bucket\":\"b00\",\"losses\":{\"a\":1e999}}",
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(importance_req_parse(bodies[i], strlen(bodies[i]), NULL, &r, &err),
                         SC_EINVAL);
        assert_int_equal(err.code, API_INVALID_JSON);
    }
}

static void limits_are_enforced(void **state)
{
    struct importance_limits lim;
    importance_limits_default(&lim);
    assert_int_equal(lim.max_samples, 1000000);
    lim.max_body = 60;
    lim.max_batches = 2;
    lim.max_samples = 3;
    lim.max_key_len = 3;
    refused_with("[{\"bucket\":\"b00\",\"losses\":{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}}]",
                 &lim, API_TOO_LARGE, "the body is 70 bytes; the limit is 60");
    refused_with("[{},{},{}]", &lim, API_TOO_LARGE, "the body holds 3 minibatches; the limit is 2");
    lim.max_body = 4096;
    refused_with("[{\"bucket\":\"b00\",\"losses\":{\"a\":1,\"b\":1}},"
                 "{\"bucket\":\"b00\",\"losses\":{\"c\":1,\"d\":1}}]",
                 &lim, API_TOO_LARGE, "the body holds more than 3 samples; the limit is 3");
    refused_with("{\"bucket\":\"b00\",\"losses\":{\"abcd\":1}}", &lim, API_INVALID_FIELD,
                 "\"losses\" key \"abcd\" is 4 bytes; a key is 1..3 bytes");
    refused_with("[[[[{}]]]]", &lim, API_INVALID_JSON, "JSON nested deeper than 4 levels");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_minibatch_ranks_by_ascending_loss),
        cmocka_unit_test(several_minibatches_are_ranked_separately),
        cmocka_unit_test(equal_losses_share_the_smaller_rank),
        cmocka_unit_test(empty_array_scores_nothing),
        cmocka_unit_test(malformed_bodies_are_refused),
        cmocka_unit_test(non_finite_losses_cannot_be_written),
        cmocka_unit_test(limits_are_enforced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
