/* test_plan.c - manifests parsed, validated and turned into orders (manifest/plan.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../manifest/plan.h"
#include "../../policy/policy.h"

static struct plan *parse_ok(const char *body)
{
    struct plan *p = NULL;
    struct api_err err = {API_OK, ""};
    sc_code rc = plan_parse(body, strlen(body), NULL, &p, &err);
    if (rc != SC_OK)
        fail_msg("refused %s: %s", body, err.message);
    assert_non_null(p);
    return p;
}

/* body is refused with rc, the API code and exactly message. */
static void refused_with(const char *body, const struct plan_limits *lim, sc_code rc,
                         enum api_err_code code, const char *message)
{
    struct plan *p = (struct plan *)&p; /* must be reset to NULL */
    struct api_err err = {API_OK, ""};
    assert_int_equal(plan_parse(body, strlen(body), lim, &p, &err), rc);
    assert_null(p);
    assert_string_equal(api_err_name(err.code), api_err_name(code));
    assert_string_equal(err.message, message);
}

static void refused(const char *body, enum api_err_code code, const char *message)
{
    refused_with(body, NULL, code == API_TOO_LARGE ? SC_ETOOBIG : SC_EINVAL, code, message);
}

static void assert_order(const struct plan *p, uint32_t e, const uint32_t *expected, uint64_t n)
{
    uint32_t *order;
    uint64_t len;
    assert_int_equal(plan_epoch_order(p, e, &order, &len), SC_OK);
    assert_int_equal(len, n);
    assert_int_equal(plan_epoch_length(p, e), n);
    assert_memory_equal(order, expected, n * sizeof(*order));
    free(order);
}

/* ---- the reference order, written from the documented algorithm ---- */

static uint64_t ref_next(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Builds the padded list explicitly (perm += perm[:pad], repeated) and slices it. */
static uint32_t *ref_order(uint32_t n, uint32_t e, int shuffle, uint64_t seed, uint32_t ws,
                           uint32_t rank, int drop_last, uint64_t *len)
{
    uint32_t *perm = malloc(sizeof(uint32_t) * (n + (size_t)ws * (n + ws)));
    uint64_t state = seed + e;
    uint64_t total;
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = (int64_t)n - 1; shuffle && i >= 1; i--) {
        uint64_t j = ref_next(&state) % (uint64_t)(i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    if (drop_last && n % ws != 0) {
        total = (n / ws) * ws;
    } else {
        total = ((n + ws - 1) / ws) * ws;
        for (uint64_t have = n; have < total;) { /* append the start, again while short */
            uint64_t take = total - have < n ? total - have : n;
            memcpy(perm + have, perm, take * sizeof(*perm));
            have += take;
        }
    }
    uint32_t *out = malloc(sizeof(uint32_t) * (total / ws + 1));
    *len = 0;
    for (uint64_t i = rank; i < total; i += ws)
        out[(*len)++] = perm[i];
    free(perm);
    return out;
}

/* A KEYS manifest of n keys "k0".."k<n-1>" plus extra fields. */
static char *keys_body(uint32_t n, const char *extra)
{
    size_t cap = 64 + strlen(extra) + (size_t)n * 16;
    char *b = malloc(cap);
    size_t at = (size_t)snprintf(b, cap, "{\"bucket\":\"b00\",%s\"keys\":[", extra);
    for (uint32_t i = 0; i < n; i++)
        at += (size_t)snprintf(b + at, cap - at, "%s\"k%u\"", i ? "," : "", i);
    snprintf(b + at, cap - at, "]}");
    return b;
}

static struct plan *sampled(uint32_t n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static struct plan *sampled(uint32_t n, const char *fmt, ...)
{
    char extra[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra, sizeof(extra), fmt, ap);
    va_end(ap);
    char *body = keys_body(n, extra);
    struct plan *p = parse_ok(body);
    free(body);
    return p;
}

/* ---- accepted forms ---- */

static void keys_form_is_one_epoch_in_the_given_order_with_defaults(void **state)
{
    struct plan *p = parse_ok("{\"bucket\": \"data\", \"keys\": [\"b.jpg\", \"a.jpg\", \"c/d\"]}");
    const struct plan_params *prm = plan_params(p);
    static const uint32_t expected[] = {0, 1, 2};
    assert_int_equal(prm->form, PLAN_FORM_KEYS);
    assert_string_equal(prm->bucket, "data");
    assert_null(prm->prefix);
    assert_null(prm->name);
    assert_true(prm->prefetch);
    assert_int_equal(prm->num_epochs, 1);
    assert_false(prm->shuffle);
    assert_int_equal(prm->seed, 0);
    assert_int_equal(prm->world_size, 1);
    assert_int_equal(prm->rank, 0);
    assert_false(prm->drop_last);
    assert_true(plan_ready(p));
    assert_true(plan_has_indices(p));
    assert_int_equal(plan_objects(p), 3);
    assert_int_equal(plan_epochs(p), 1);
    assert_int_equal(plan_accesses(p), 3);
    assert_string_equal(plan_key(p, 0), "b.jpg");
    assert_string_equal(plan_key(p, 1), "a.jpg");
    assert_string_equal(plan_key(p, 2), "c/d");
    assert_order(p, 0, expected, 3);
    plan_free(p);
}

static void every_optional_field_is_read(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"data\",\"keys\":[\"a\",\"b\",\"c\",\"d\"],"
                              "\"num_epochs\":3,\"shuffle\":true,\"seed\":9223372036854775807,"
                              "\"world_size\":2,\"rank\":1,\"drop_last\":true,"
                              "\"prefetch\":false,\"name\":\"resnet \\u00e9\"}");
    const struct plan_params *prm = plan_params(p);
    assert_int_equal(prm->num_epochs, 3);
    assert_true(prm->shuffle);
    assert_true(prm->seed == 9223372036854775807ull);
    assert_int_equal(prm->world_size, 2);
    assert_int_equal(prm->rank, 1);
    assert_true(prm->drop_last);
    assert_false(prm->prefetch);
    assert_string_equal(prm->name, "resnet \xc3\xa9");
    assert_int_equal(plan_epochs(p), 3);
    assert_int_equal(plan_accesses(p), 6);
    plan_free(p);
}

static void epochs_form_maps_keys_to_indices_of_first_appearance(void **state)
{
    struct plan *p =
        parse_ok("{\"bucket\":\"b00\",\"epochs\":[[\"k7\",\"k2\",\"k7\"],[\"k2\",\"k9\"]]}");
    static const uint32_t e0[] = {0, 1, 0};
    static const uint32_t e1[] = {1, 2};
    assert_int_equal(plan_params(p)->form, PLAN_FORM_EPOCHS);
    assert_false(plan_has_indices(p));
    assert_int_equal(plan_objects(p), 3);
    assert_string_equal(plan_key(p, 0), "k7");
    assert_string_equal(plan_key(p, 1), "k2");
    assert_string_equal(plan_key(p, 2), "k9");
    assert_int_equal(plan_epochs(p), 2);
    assert_int_equal(plan_accesses(p), 5);
    assert_order(p, 0, e0, 3);
    assert_order(p, 1, e1, 2);
    plan_free(p);
}

static void prefix_form_waits_for_its_listing_then_sorts_and_dedups(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"prefix\":\"train/\",\"world_size\":2}");
    struct api_err err;
    static const char *const listed[] = {"train/b", "train/a", "train/\xc3\xa9", "train/b",
                                         "train/B"};
    static const uint32_t rank0[] = {0, 2};
    assert_int_equal(plan_params(p)->form, PLAN_FORM_PREFIX);
    assert_string_equal(plan_params(p)->prefix, "train/");
    assert_false(plan_ready(p));
    assert_int_equal(plan_objects(p), 0);
    assert_int_equal(plan_accesses(p), 0);
    assert_int_equal(plan_epochs(p), 1);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(plan_dataset_append(p, listed[i], strlen(listed[i]), &err), SC_OK);
    assert_int_equal(plan_dataset_finish(p, &err), SC_OK);
    assert_true(plan_ready(p));
    assert_int_equal(plan_objects(p), 4);
    assert_string_equal(plan_key(p, 0), "train/B"); /* ascending by bytes */
    assert_string_equal(plan_key(p, 1), "train/a");
    assert_string_equal(plan_key(p, 2), "train/b");
    assert_string_equal(plan_key(p, 3), "train/\xc3\xa9");
    assert_int_equal(plan_accesses(p), 2);
    assert_order(p, 0, rank0, 2);
    plan_free(p);
}

static void empty_prefix_lists_the_whole_bucket(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"prefix\":\"\"}");
    assert_string_equal(plan_params(p)->prefix, "");
    plan_free(p);
}

static void listing_errors_are_precise(void **state)
{
    struct plan_limits lim;
    struct plan *p = NULL;
    struct api_err err;
    const char *body = "{\"bucket\":\"b00\",\"prefix\":\"t/\"}";
    plan_limits_default(&lim);
    lim.max_keys = 2;
    lim.max_key_len = 4;
    assert_int_equal(plan_parse(body, strlen(body), &lim, &p, &err), SC_OK);
    assert_int_equal(plan_dataset_finish(p, &err), SC_EINVAL);
    assert_string_equal(err.message, "the prefix \"t/\" matched no objects in bucket \"b00\"");
    assert_int_equal(plan_dataset_append(p, "", 0, &err), SC_EINVAL);
    assert_int_equal(err.code, API_INVALID_FIELD);
    assert_int_equal(plan_dataset_append(p, "t/a\0b", 5, &err), SC_EINVAL);
    assert_int_equal(plan_dataset_append(p, "t/a\0", 4, &err), SC_EINVAL);
    assert_string_equal(err.message,
                        "listed key \"t/a?\" (4 bytes) is not a key of 1..4 bytes without NUL");
    assert_int_equal(plan_dataset_append(p, "t/a", 3, &err), SC_OK);
    assert_int_equal(plan_dataset_append(p, "t/b", 3, &err), SC_OK);
    assert_int_equal(plan_dataset_append(p, "t/c", 3, &err), SC_ETOOBIG);
    assert_int_equal(err.code, API_TOO_LARGE);
    assert_string_equal(err.message, "the prefix \"t/\" lists more than 2 keys; the limit is 2");
    assert_int_equal(plan_dataset_finish(p, &err), SC_OK);
    assert_int_equal(plan_dataset_append(p, "t/d", 3, &err), SC_EINVAL);
    assert_int_equal(plan_dataset_finish(p, &err), SC_EINVAL);
    plan_free(p);

    p = parse_ok("{\"bucket\":\"b00\",\"keys\":[\"a\"]}");
    assert_int_equal(plan_dataset_append(p, "b", 1, &err), SC_EINVAL);
    assert_int_equal(plan_dataset_finish(p, &err), SC_EINVAL);
    plan_free(p);
}

static void prefix_listing_that_drop_last_empties_fails_at_finish(void **state)
{
    struct plan *p =
        parse_ok("{\"bucket\":\"b00\",\"prefix\":\"\",\"world_size\":4,\"drop_last\":true}");
    struct api_err err;
    assert_int_equal(plan_dataset_append(p, "x", 1, &err), SC_OK);
    assert_int_equal(plan_dataset_finish(p, &err), SC_EINVAL);
    assert_string_equal(err.message,
                        "drop_last with world_size 4 leaves no samples of the 1 keys to any rank");
    assert_false(plan_ready(p));
    plan_free(p);
}

/* ---- refusals ---- */

/* jansson's own wording may change between versions: only its gist is asserted. */
static void invalid_json_mentions(const char *body, const char *gist)
{
    struct plan *p = NULL;
    struct api_err err = {API_OK, ""};
    static const char lead[] = "the body is not valid JSON: ";
    assert_int_equal(plan_parse(body, strlen(body), NULL, &p, &err), SC_EINVAL);
    assert_null(p);
    assert_int_equal(err.code, API_INVALID_JSON);
    assert_memory_equal(err.message, lead, strlen(lead));
    assert_non_null(strstr(err.message, gist));
    assert_non_null(strstr(err.message, "(line 1, column "));
}

static void malformed_json_is_refused_as_invalid_json(void **state)
{
    invalid_json_mentions("", "expected");
    invalid_json_mentions("{\"bucket\": \"b00\",", "expected");
    invalid_json_mentions("{\"bucket\":\"b00\",\"keys\":[\"a\"]} x", "end of file expected");
    invalid_json_mentions("{\"bucket\":\"b00\",\"bucket\":\"b01\",\"keys\":[\"a\"]}",
                          "duplicate object key");
    invalid_json_mentions("{\"bucket\":\"b00\",\"keys\":[\"a\\u0000b\"]}", "\\u0000");
    invalid_json_mentions("{\"bucket\":\"b00\",\"keys\":[\"\xff\"]}", "0xff");
    invalid_json_mentions("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"seed\":99999999999999999999}",
                          "too big");
    refused("[1]", API_INVALID_JSON, "the body must be a JSON object");
}

static void nesting_deeper_than_the_limit_is_refused_before_parsing(void **state)
{
    char body[64];
    snprintf(body, sizeof(body), "{\"bucket\":\"b00\",\"keys\":[[[[[[[[\"a\"]]]]]]]]}");
    refused(body, API_INVALID_JSON, "JSON nested deeper than 8 levels");
    /* brackets inside strings do not count */
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"keys\":[\"[[[[[[[[[[\\\"[[[[\"]}");
    assert_string_equal(plan_key(p, 0), "[[[[[[[[[[\"[[[[");
    plan_free(p);
}

static void body_over_the_size_limit_is_too_large(void **state)
{
    struct plan_limits lim;
    plan_limits_default(&lim);
    assert_int_equal(lim.max_body, 64u * 1024 * 1024);
    lim.max_body = 20;
    refused_with("{\"bucket\":\"b00\",\"keys\":[\"a\"]}", &lim, SC_ETOOBIG, API_TOO_LARGE,
                 "the body is 29 bytes; the limit is 20");
}

static void fields_are_checked_by_name(void **state)
{
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"shufle\":true}", API_UNKNOWN_FIELD,
            "unknown field \"shufle\"");
    refused("{\"keys\":[\"a\"]}", API_MISSING_FIELD, "field \"bucket\" is required");
    refused("{\"bucket\":\"b00\"}", API_MISSING_FIELD,
            "one of the fields \"keys\", \"epochs\" and \"prefix\" is required");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"prefix\":\"p\"}", API_INVALID_FIELD,
            "only one of the fields \"keys\", \"epochs\" and \"prefix\" may be given (got "
            "\"keys\" and \"prefix\")");
    refused("{\"bucket\":\"b00\",\"epochs\":[[\"a\"]],\"seed\":1}", API_INVALID_FIELD,
            "field \"seed\" is not allowed with \"epochs\" (the epochs are the lists given)");
    refused("{\"bucket\":\"b00\",\"epochs\":[[\"a\"]],\"num_epochs\":1}", API_INVALID_FIELD,
            "field \"num_epochs\" is not allowed with \"epochs\" (the epochs are the lists given)");
}

static void bucket_must_be_a_valid_name(void **state)
{
    refused("{\"bucket\":7,\"keys\":[\"a\"]}", API_INVALID_FIELD,
            "field \"bucket\" must be a string");
    refused("{\"bucket\":\"ab\",\"keys\":[\"a\"]}", API_INVALID_FIELD,
            "field \"bucket\" is not a valid bucket name: \"ab\" (3 to 63 characters of a-z, 0-9, "
            "'.' and '-', starting and ending with a letter or digit)");
    assert_true(plan_bucket_valid("my-bucket.v2", 12));
    assert_true(plan_bucket_valid("abc", 3));
    assert_true(plan_bucket_valid("My_Legacy_Bucket", 16));
    assert_false(plan_bucket_valid("ab", 2));
    assert_false(plan_bucket_valid("-abc", 4));
    assert_false(plan_bucket_valid("abc.", 4));
    assert_false(plan_bucket_valid("a..b", 4));
    assert_false(plan_bucket_valid("a b c", 5));
    assert_false(plan_bucket_valid("a/bc", 4));
    assert_false(plan_bucket_valid("_abc", 4));
    char name[300];
    memset(name, 'a', sizeof(name));
    assert_true(plan_bucket_valid(name, 63));
    assert_true(plan_bucket_valid(name, 255)); /* path-style/legacy length */
    assert_false(plan_bucket_valid(name, 256));
}

static void sampling_fields_are_range_checked(void **state)
{
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"num_epochs\":0}", API_INVALID_FIELD,
            "field \"num_epochs\" must be an integer in 1..1000");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"num_epochs\":1001}", API_INVALID_FIELD,
            "field \"num_epochs\" must be an integer in 1..1000");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"num_epochs\":2.0}", API_INVALID_FIELD,
            "field \"num_epochs\" must be an integer in 1..1000");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"num_epochs\":\"2\"}", API_INVALID_FIELD,
            "field \"num_epochs\" must be an integer in 1..1000");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"seed\":-1}", API_INVALID_FIELD,
            "field \"seed\" must be an integer in 0..9223372036854775807");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":0}", API_INVALID_FIELD,
            "field \"world_size\" must be an integer in 1..1000000");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":8,\"rank\":8}", API_INVALID_FIELD,
            "field \"rank\" must be an integer in 0..world_size-1 (world_size is 8)");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"rank\":-1}", API_INVALID_FIELD,
            "field \"rank\" must be an integer in 0..world_size-1 (world_size is 1)");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"shuffle\":1}", API_INVALID_FIELD,
            "field \"shuffle\" must be true or false");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"drop_last\":null}", API_INVALID_FIELD,
            "field \"drop_last\" must be true or false");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"prefetch\":\"no\"}", API_INVALID_FIELD,
            "field \"prefetch\" must be true or false");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"name\":5}", API_INVALID_FIELD,
            "field \"name\" must be a string of at most 256 bytes");
    refused("{\"bucket\":\"b00\",\"prefix\":[]}", API_INVALID_FIELD,
            "field \"prefix\" must be a string of at most 1024 bytes");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\"],\"world_size\":3,\"drop_last\":true}",
            API_INVALID_FIELD,
            "drop_last with world_size 3 leaves no samples of the 2 keys to any rank");
}

static void name_and_prefix_lengths_are_bounded(void **state)
{
    char body[1400];
    char s[1100];
    memset(s, 'n', sizeof(s));
    s[256] = '\0';
    snprintf(body, sizeof(body), "{\"bucket\":\"b00\",\"keys\":[\"a\"],\"name\":\"%s\"}", s);
    struct plan *p = parse_ok(body);
    assert_int_equal(strlen(plan_params(p)->name), 256);
    plan_free(p);
    s[256] = 'n';
    s[257] = '\0';
    snprintf(body, sizeof(body), "{\"bucket\":\"b00\",\"keys\":[\"a\"],\"name\":\"%s\"}", s);
    refused(body, API_INVALID_FIELD, "field \"name\" must be a string of at most 256 bytes");
    s[257] = 'n';
    s[1025] = '\0';
    snprintf(body, sizeof(body), "{\"bucket\":\"b00\",\"prefix\":\"%s\"}", s);
    refused(body, API_INVALID_FIELD, "field \"prefix\" must be a string of at most 1024 bytes");
}

static void keys_must_be_unique_nonempty_bounded_strings(void **state)
{
    refused("{\"bucket\":\"b00\",\"keys\":[]}", API_INVALID_FIELD,
            "field \"keys\" must be a non-empty array of keys");
    refused("{\"bucket\":\"b00\",\"keys\":\"a\"}", API_INVALID_FIELD,
            "field \"keys\" must be a non-empty array of keys");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\",3]}", API_INVALID_FIELD,
            "keys[1] must be a string (an object key)");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\",\"\"]}", API_INVALID_FIELD,
            "keys[1] must not be empty");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a.jpg\",\"b\",\"a.jpg\"]}", API_INVALID_FIELD,
            "keys[2] (\"a.jpg\") repeats keys[0]; the keys of a dataset must be unique");

    char body[1200];
    char key[1026];
    memset(key, 'k', sizeof(key));
    key[1024] = '\0';
    snprintf(body, sizeof(body), "{\"bucket\":\"b00\",\"keys\":[\"%s\"]}", key);
    struct plan *p = parse_ok(body);
    assert_int_equal(strlen(plan_key(p, 0)), 1024);
    plan_free(p);
    key[1024] = 'k';
    key[1025] = '\0';
    snprintf(body, sizeof(body), "{\"bucket\":\"b00\",\"keys\":[\"%s\"]}", key);
    refused(body, API_INVALID_FIELD, "keys[0] is 1025 bytes; a key is at most 1024 bytes");
}

static void epochs_must_be_nonempty_arrays_of_keys(void **state)
{
    refused("{\"bucket\":\"b00\",\"epochs\":[]}", API_INVALID_FIELD,
            "field \"epochs\" must be a non-empty array of epochs (arrays of keys)");
    refused("{\"bucket\":\"b00\",\"epochs\":[\"a\"]}", API_INVALID_FIELD,
            "epochs[0] must be a non-empty array of keys");
    refused("{\"bucket\":\"b00\",\"epochs\":[[\"a\"],[]]}", API_INVALID_FIELD,
            "epochs[1] must be a non-empty array of keys");
    refused("{\"bucket\":\"b00\",\"epochs\":[[\"a\"],[\"b\",null]]}", API_INVALID_FIELD,
            "epochs[1][1] must be a string (an object key)");
}

static void counts_over_configured_limits_are_refused(void **state)
{
    struct plan_limits lim;
    plan_limits_default(&lim);
    assert_int_equal(lim.max_keys, 10000000);
    assert_int_equal(lim.max_key_len, 1024);
    assert_int_equal(lim.max_epochs, 1000);
    lim.max_keys = 3;
    lim.max_epochs = 2;
    lim.max_accesses = 5;
    lim.max_key_len = 2;
    refused_with("{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\",\"c\",\"d\"]}", &lim, SC_ETOOBIG,
                 API_TOO_LARGE, "field \"keys\" has 4 keys; the limit is 3");
    refused_with("{\"bucket\":\"b00\",\"epochs\":[[\"a\",\"b\"],[\"a\",\"b\"]]}", &lim, SC_ETOOBIG,
                 API_TOO_LARGE, "field \"epochs\" holds 4 keys; the limit is 3");
    refused_with("{\"bucket\":\"b00\",\"epochs\":[[\"a\"],[\"a\"],[\"a\"]]}", &lim, SC_EINVAL,
                 API_INVALID_FIELD, "field \"epochs\" has 3 epochs; the limit is 2");
    refused_with("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"num_epochs\":3}", &lim, SC_EINVAL,
                 API_INVALID_FIELD, "field \"num_epochs\" must be an integer in 1..2");
    refused_with("{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\",\"c\"],\"num_epochs\":2}", &lim,
                 SC_ETOOBIG, API_TOO_LARGE,
                 "the plan has 6 accesses for this rank (3 per epoch, 2 epochs); the limit is 5");
    refused_with("{\"bucket\":\"b00\",\"keys\":[\"abc\"]}", &lim, SC_EINVAL, API_INVALID_FIELD,
                 "keys[0] is 3 bytes; a key is at most 2 bytes");

    /* exactly at every limit is accepted */
    struct plan *p = NULL;
    const char *body = "{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\"],\"num_epochs\":2}";
    lim.max_accesses = 4;
    assert_int_equal(plan_parse(body, strlen(body), &lim, &p, NULL), SC_OK);
    assert_int_equal(plan_accesses(p), 4);
    plan_free(p);
    body = "{\"bucket\":\"b00\",\"epochs\":[[\"ab\",\"b\"],[\"a\"]]}";
    assert_int_equal(plan_parse(body, strlen(body), &lim, &p, NULL), SC_OK);
    assert_int_equal(plan_objects(p), 3);
    plan_free(p);
}

/* ---- orders ---- */

/* Vectors also in /work/spec/order-vectors.json, computed by a Python transcription of the docs. */
static void seed_42_over_ten_keys_and_three_ranks_matches_the_python_vectors(void **state)
{
    static const uint32_t pad[2][3][4] = {{{0, 8, 7, 3}, {9, 6, 2, 0}, {5, 4, 1, 9}},
                                          {{4, 6, 9, 0}, {2, 1, 8, 4}, {5, 3, 7, 2}}};
    static const uint32_t drop[2][3][3] = {{{0, 8, 7}, {9, 6, 2}, {5, 4, 1}},
                                           {{4, 6, 9}, {2, 1, 8}, {5, 3, 7}}};
    static const uint32_t whole[2][10] = {{0, 9, 5, 8, 6, 4, 7, 2, 1, 3},
                                          {4, 2, 5, 6, 1, 3, 9, 8, 7, 0}};
    for (uint32_t r = 0; r < 3; r++) {
        struct plan *p = sampled(10,
                                 "\"shuffle\":true,\"seed\":42,\"num_epochs\":2,"
                                 "\"world_size\":3,\"rank\":%u,",
                                 r);
        struct plan *d = sampled(10,
                                 "\"shuffle\":true,\"seed\":42,\"num_epochs\":2,"
                                 "\"world_size\":3,\"rank\":%u,\"drop_last\":true,",
                                 r);
        for (uint32_t e = 0; e < 2; e++) {
            assert_order(p, e, pad[e][r], 4);
            assert_order(d, e, drop[e][r], 3);
        }
        assert_int_equal(plan_accesses(p), 8);
        assert_int_equal(plan_accesses(d), 6);
        plan_free(p);
        plan_free(d);
    }
    struct plan *one = sampled(10, "\"shuffle\":true,\"seed\":42,\"num_epochs\":2,");
    assert_order(one, 0, whole[0], 10);
    assert_order(one, 1, whole[1], 10);
    plan_free(one);
}

static void unshuffled_split_pads_from_the_start(void **state)
{
    static const uint32_t r1[] = {1, 4, 7, 0};
    static const uint32_t r2[] = {2, 5, 8, 1};
    struct plan *p = sampled(10, "\"world_size\":3,\"rank\":1,");
    assert_order(p, 0, r1, 4);
    plan_free(p);
    p = sampled(10, "\"world_size\":3,\"rank\":2,");
    assert_order(p, 0, r2, 4);
    plan_free(p);
}

static void orders_match_the_reference_for_many_shapes(void **state)
{
    static const uint32_t ns[] = {1, 2, 7, 10, 64, 1000};
    static const uint32_t wss[] = {1, 3, 4, 5, 9};
    for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++) {
        for (size_t b = 0; b < sizeof(wss) / sizeof(wss[0]); b++) {
            uint32_t n = ns[a], ws = wss[b];
            for (int drop = 0; drop < 2; drop++) {
                if (drop && n < ws)
                    continue; /* refused: no samples */
                for (uint32_t r = 0; r < ws; r++) {
                    struct plan *p = sampled(n,
                                             "\"shuffle\":true,\"seed\":%u,\"num_epochs\":3,"
                                             "\"world_size\":%u,\"rank\":%u,\"drop_last\":%s,",
                                             n * 31 + ws, ws, r, drop ? "true" : "false");
                    for (uint32_t e = 0; e < 3; e++) {
                        uint64_t len;
                        uint32_t *ref = ref_order(n, e, 1, n * 31 + ws, ws, r, drop, &len);
                        assert_order(p, e, ref, len);
                        free(ref);
                    }
                    plan_free(p);
                }
            }
        }
    }
}

static void union_of_all_ranks_covers_the_dataset(void **state)
{
    for (int drop = 0; drop < 2; drop++) {
        uint32_t seen[10] = {0};
        uint64_t total = 0;
        for (uint32_t r = 0; r < 3; r++) {
            struct plan *p = sampled(10,
                                     "\"shuffle\":true,\"seed\":5,\"world_size\":3,"
                                     "\"rank\":%u,\"drop_last\":%s,",
                                     r, drop ? "true" : "false");
            uint32_t *order;
            uint64_t len;
            assert_int_equal(plan_epoch_order(p, 0, &order, &len), SC_OK);
            for (uint64_t i = 0; i < len; i++)
                seen[order[i]]++;
            total += len;
            free(order);
            plan_free(p);
        }
        uint32_t covered = 0, twice = 0;
        for (int i = 0; i < 10; i++) {
            covered += seen[i] > 0;
            twice += seen[i] > 1;
        }
        if (drop) { /* 9 distinct samples, one dropped, none repeated */
            assert_int_equal(total, 9);
            assert_int_equal(covered, 9);
            assert_int_equal(twice, 0);
        } else { /* every sample, two of them twice as padding */
            assert_int_equal(total, 12);
            assert_int_equal(covered, 10);
            assert_int_equal(twice, 2);
        }
    }
}

static void padding_longer_than_the_dataset_repeats_it(void **state)
{
    /* n = 2, world_size 5: positions 0..4 are perm[0], perm[1], perm[0], perm[1], perm[0] */
    static const uint32_t expect[5] = {0, 1, 0, 1, 0};
    for (uint32_t r = 0; r < 5; r++) {
        struct plan *p = sampled(2, "\"world_size\":5,\"rank\":%u,", r);
        assert_order(p, 0, &expect[r], 1);
        plan_free(p);
    }
}

static void epochs_reshuffle_with_seed_plus_epoch(void **state)
{
    /* epoch 1 of seed 41 is epoch 0 of seed 42 */
    struct plan *a = sampled(50, "\"shuffle\":true,\"seed\":41,\"num_epochs\":2,");
    struct plan *b = sampled(50, "\"shuffle\":true,\"seed\":42,");
    uint32_t *oa, *ob;
    uint64_t na, nb;
    assert_int_equal(plan_epoch_order(a, 1, &oa, &na), SC_OK);
    assert_int_equal(plan_epoch_order(b, 0, &ob, &nb), SC_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(oa, ob, na * sizeof(*oa));
    free(oa);
    assert_int_equal(plan_epoch_order(a, 0, &oa, &na), SC_OK);
    assert_memory_not_equal(oa, ob, na * sizeof(*oa));
    free(oa);
    free(ob);
    assert_int_equal(plan_epoch_order(a, 2, &oa, &na), SC_EINVAL);
    assert_null(oa);
    plan_free(a);
    plan_free(b);
}

static void iterator_walks_all_epochs_in_order(void **state)
{
    struct plan *p = sampled(7, "\"shuffle\":true,\"seed\":3,\"num_epochs\":3,\"world_size\":2,"
                                "\"rank\":1,");
    struct plan_iter it;
    uint32_t idx;
    uint64_t pos, expect_pos = 0;
    assert_int_equal(plan_accesses(p), 12);
    plan_iter_init(&it, p);
    for (uint32_t e = 0; e < 3; e++) {
        uint32_t *order;
        uint64_t len;
        assert_int_equal(plan_epoch_order(p, e, &order, &len), SC_OK);
        for (uint64_t i = 0; i < len; i++) {
            assert_int_equal(plan_iter_next(&it, &idx, &pos), SC_OK);
            assert_int_equal(idx, order[i]);
            assert_int_equal(pos, expect_pos++);
        }
        free(order);
    }
    assert_int_equal(plan_iter_next(&it, &idx, NULL), SC_ENOTFOUND);
    assert_int_equal(plan_iter_next(&it, &idx, NULL), SC_ENOTFOUND);
    assert_int_equal(expect_pos, plan_accesses(p));
    plan_iter_free(&it);
    plan_iter_free(&it);
    plan_free(p);
}

static void used_objects_counts_what_this_rank_reads(void **state)
{
    uint32_t used;
    struct plan *p = sampled(10, "\"world_size\":3,\"rank\":1,\"num_epochs\":4,");
    assert_int_equal(plan_used_objects(p, &used), SC_OK);
    assert_int_equal(used, 4); /* 1, 4, 7 and the padding 0, every epoch */
    plan_free(p);
    p = parse_ok("{\"bucket\":\"b00\",\"epochs\":[[\"x\",\"y\"],[\"y\",\"z\"]]}");
    assert_int_equal(plan_used_objects(p, &used), SC_OK);
    assert_int_equal(used, 3);
    plan_free(p);
    p = parse_ok("{\"bucket\":\"b00\",\"prefix\":\"\"}");
    assert_int_equal(plan_used_objects(p, &used), SC_EINVAL);
    plan_free(p);
}

static void key_hashes_are_the_policy_hashes(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"keys\":[\"x/1\",\"x/2\"]}");
    uint64_t *h;
    assert_int_equal(plan_key_hashes(p, &h), SC_OK);
    assert_true(h[0] == sc_key_hash("b00", "x/1"));
    assert_true(h[1] == sc_key_hash("b00", "x/2"));
    assert_true(plan_key_hash(p, 1) == h[1]);
    free(h);
    plan_free(p);
}

/* ---- JSON replies ---- */

static void order_json_has_indices_except_for_the_epochs_form(void **state)
{
    struct plan *p = sampled(4, "\"world_size\":2,\"rank\":1,");
    json_t *o = plan_order_json(p, "m3", 0, 1);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"epoch\":0,\"id\":\"m3\",\"indices\":[1,3],\"keys\":[\"k1\","
                              "\"k3\"],\"rank\":1}");
    free(text);
    json_decref(o);
    assert_null(plan_order_json(p, "m3", 1, 1));
    assert_null(plan_order_json(p, "m3", 0, 0)); /* a rank it does not read for */
    plan_free(p);

    p = parse_ok("{\"bucket\":\"b00\",\"epochs\":[[\"x\"],[\"y\",\"x\"]]}");
    o = plan_order_json(p, "m4", 1, PLAN_ALL_RANKS);
    text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"epoch\":1,\"id\":\"m4\",\"indices\":null,\"keys\":[\"y\","
                              "\"x\"],\"rank\":null}");
    free(text);
    json_decref(o);
    plan_free(p);
}

static void describe_json_holds_the_static_fields(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"prefix\":\"t/\",\"name\":\"job\","
                              "\"num_epochs\":2,\"seed\":7,\"prefetch\":false}");
    json_t *o = plan_describe_json(p);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(
        text,
        "{\"accesses\":0,\"bucket\":\"b00\",\"epochs\":2,\"form\":\"prefix\","
        "\"name\":\"job\",\"objects_total\":0,\"prefetch\":false,\"prefix\":"
        "\"t/"
        "\",\"sampling\":{\"cache_aware\":false,\"drop_last\":false,\"job\":null,\"num_epochs\":2,"
        "\"rank\":0,\"ranks\":[0],\"seed\":7,\"shuffle\":false,\"world_size\":1}}");
    free(text);
    json_decref(o);
    plan_free(p);

    p = parse_ok("{\"bucket\":\"b00\",\"epochs\":[[\"x\"],[\"y\",\"x\"]]}");
    o = plan_describe_json(p);
    text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"accesses\":3,\"bucket\":\"b00\",\"epochs\":2,\"form\":\"epochs\","
                              "\"name\":null,\"objects_total\":2,\"prefetch\":true}");
    free(text);
    json_decref(o);
    plan_free(p);
}

/*
 * The duplicate check compared a stored key with memcmp over the new key's
 * length, reading past the arena when a short key near its end shared a hash
 * slot with a long one. Here keys 1-3 (1024 bytes each) leave "dddddddddd"
 * at offset 3075 of the 4096-byte arena, and the fifth key (1024 bytes) lands
 * in its slot: ASan caught the read of 1024 bytes there.
 */
static void duplicate_check_reads_nothing_past_the_last_key(void **state)
{
    (void)state;
    size_t cap = 6 * 1100;
    char *body = malloc(cap);
    char a[1025], b[1025], c[1025], e[1025];
    memset(a, 'a', 1024);
    memset(b, 'b', 1024);
    memset(c, 'c', 1024);
    memset(e, 'e', 1020);
    a[1024] = b[1024] = c[1024] = '\0';
    memcpy(e + 1020, "0022", 5); /* sc_bytes_hash: the slot of "dddddddddd" in a 16-slot set */
    snprintf(body, cap,
             "{\"bucket\": \"bkt\", \"keys\": [\"%s\", \"%s\", \"%s\", \"dddddddddd\", \"%s\"]}", a,
             b, c, e);
    struct plan *p = parse_ok(body);
    assert_int_equal(plan_objects(p), 5);
    assert_string_equal(plan_key(p, 3), "dddddddddd");
    assert_string_equal(plan_key(p, 4), e);
    plan_free(p);
    free(body);
}

/* ---- byte ranges ---- */

static void assert_range(const struct plan *p, uint32_t idx, uint64_t offset, uint64_t length)
{
    struct plan_range r = {99, 99};
    assert_int_equal(plan_item_range(p, idx, &r), length > 0);
    assert_int_equal(r.offset, offset);
    assert_int_equal(r.length, length);
}

static void ranges_are_items_beside_whole_keys_and_share_the_key(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"keys\":[\"tok.bin\","
                              "{\"key\":\"tok.bin\",\"offset\":0,\"length\":2048},"
                              "{\"length\":2048,\"key\":\"tok.bin\",\"offset\":2048},"
                              "\"b.parquet\","
                              "{\"key\":\"b.parquet\",\"offset\":5497558138879,\"length\":1}]}");
    assert_true(plan_has_ranges(p));
    assert_int_equal(plan_objects(p), 5);
    assert_int_equal(plan_accesses(p), 5);
    assert_range(p, 0, 0, 0);
    assert_range(p, 1, 0, 2048);
    assert_range(p, 2, 2048, 2048);
    assert_range(p, 3, 0, 0);
    assert_range(p, 4, 5497558138879ull, 1);
    assert_true(plan_item_range(p, 1, NULL));
    assert_false(plan_item_range(p, 0, NULL));
    assert_string_equal(plan_key(p, 0), "tok.bin");
    assert_ptr_equal(plan_key(p, 1), plan_key(p, 0)); /* one string per key */
    assert_ptr_equal(plan_key(p, 2), plan_key(p, 0));
    assert_ptr_equal(plan_key(p, 4), plan_key(p, 3));
    assert_true(plan_key_hash(p, 2) == sc_key_hash("b00", "tok.bin"));
    plan_free(p);

    /* a plan of ranges only; 5 TiB exactly is the end of the largest object */
    p = parse_ok("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"x\",\"offset\":0,"
                 "\"length\":5497558138880}]}");
    assert_range(p, 0, 0, 5497558138880ull);
    plan_free(p);

    p = parse_ok("{\"bucket\":\"b00\",\"keys\":[\"x\",\"y\"]}");
    assert_false(plan_has_ranges(p));
    assert_range(p, 1, 0, 0);
    plan_free(p);
}

static void range_entries_are_checked_field_by_field(void **state)
{
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":1,\"len\":2}]}",
            API_UNKNOWN_FIELD,
            "unknown field \"len\" in keys[0] (a range is {\"key\", \"offset\", \"length\"})");
    refused("{\"bucket\":\"b00\",\"keys\":[\"z\",{\"offset\":0,\"length\":1}]}", API_MISSING_FIELD,
            "keys[1] has no \"key\" (a range is {\"key\", \"offset\", \"length\"})");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"length\":1}]}", API_MISSING_FIELD,
            "keys[0] has no \"offset\" (a range is {\"key\", \"offset\", \"length\"})");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":3}]}", API_MISSING_FIELD,
            "keys[0] has no \"length\" (a range is {\"key\", \"offset\", \"length\"})");
    refused("{\"bucket\":\"b00\",\"keys\":[{}]}", API_MISSING_FIELD,
            "keys[0] has no \"key\" (a range is {\"key\", \"offset\", \"length\"})");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":7,\"offset\":0,\"length\":1}]}",
            API_INVALID_FIELD, "keys[0].key must be a string (an object key)");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"\",\"offset\":0,\"length\":1}]}",
            API_INVALID_FIELD, "keys[0].key must not be empty");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":-1,\"length\":1}]}",
            API_INVALID_FIELD, "keys[0].offset must be an integer in 0..5497558138879");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":1.5,\"length\":1}]}",
            API_INVALID_FIELD, "keys[0].offset must be an integer in 0..5497558138879");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":\"0\",\"length\":1}]}",
            API_INVALID_FIELD, "keys[0].offset must be an integer in 0..5497558138879");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":5497558138880,\"length\":1}]}",
            API_INVALID_FIELD, "keys[0].offset must be an integer in 0..5497558138879");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":0}]}",
            API_INVALID_FIELD, "keys[0].length must be an integer in 1..5497558138880");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":null}]}",
            API_INVALID_FIELD, "keys[0].length must be an integer in 1..5497558138880");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":5497558138881}]}",
            API_INVALID_FIELD, "keys[0].length must be an integer in 1..5497558138880");
    refused("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":5497558138879,\"length\":2}]}",
            API_INVALID_FIELD,
            "keys[0] ends at byte 5497558138881; an object is at most 5 TiB (5497558138880 bytes)");
    refused("{\"bucket\":\"b00\",\"keys\":[[\"a\"]]}", API_INVALID_FIELD,
            "keys[0] must be a string (an object key)");
    refused("{\"bucket\":\"b00\",\"epochs\":[[\"a\",{\"key\":\"a\",\"offset\":0,\"length\":1,"
            "\"x\":1}]]}",
            API_UNKNOWN_FIELD,
            "unknown field \"x\" in epochs[0][1] (a range is {\"key\", \"offset\", \"length\"})");
    refused("{\"bucket\":\"b00\",\"epochs\":[[{\"key\":\"a\",\"offset\":0,\"length\":1}],"
            "[{\"key\":\"\",\"offset\":0,\"length\":1}]]}",
            API_INVALID_FIELD, "epochs[1][0].key must not be empty");

    struct plan_limits lim;
    plan_limits_default(&lim);
    lim.max_key_len = 2;
    refused_with("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"abc\",\"offset\":0,\"length\":1}]}",
                 &lim, SC_EINVAL, API_INVALID_FIELD,
                 "keys[0].key is 3 bytes; a key is at most 2 bytes");
}

static void keys_are_unique_as_key_offset_and_length(void **state)
{
    refused(
        "{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":10},\"a\","
        "{\"key\":\"a\",\"offset\":10,\"length\":10},{\"key\":\"a\",\"offset\":0,\"length\":10}]}",
        API_INVALID_FIELD,
        "keys[3] (\"a\", offset 0, length 10) repeats keys[0]; the entries of a dataset must "
        "be unique");
    refused(
        "{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":10},\"a\",\"a\"]}",
        API_INVALID_FIELD, "keys[2] (\"a\") repeats keys[1]; the keys of a dataset must be unique");
    /* same offset, other length; same length, other offset; other key: all distinct */
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"keys\":["
                              "{\"key\":\"a\",\"offset\":0,\"length\":10},"
                              "{\"key\":\"a\",\"offset\":0,\"length\":11},"
                              "{\"key\":\"a\",\"offset\":1,\"length\":10},"
                              "{\"key\":\"b\",\"offset\":0,\"length\":10}]}");
    assert_int_equal(plan_objects(p), 4);
    plan_free(p);
}

static void epochs_repeat_ranged_items_as_one_dataset_index(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"epochs\":[["
                              "{\"key\":\"s\",\"offset\":100,\"length\":50},\"s\","
                              "{\"key\":\"s\",\"offset\":100,\"length\":50}],"
                              "[\"t\",{\"key\":\"s\",\"offset\":100,\"length\":50},"
                              "{\"key\":\"s\",\"offset\":0,\"length\":50}]]}");
    static const uint32_t e0[] = {0, 1, 0};
    static const uint32_t e1[] = {2, 0, 3};
    assert_int_equal(plan_objects(p), 4);
    assert_order(p, 0, e0, 3);
    assert_order(p, 1, e1, 3);
    assert_range(p, 0, 100, 50);
    assert_range(p, 1, 0, 0);
    assert_range(p, 2, 0, 0);
    assert_range(p, 3, 0, 50);
    assert_string_equal(plan_key(p, 2), "t");
    assert_ptr_equal(plan_key(p, 3), plan_key(p, 0));
    plan_free(p);
}

static void entries_count_against_the_keys_limit(void **state)
{
    struct plan_limits lim;
    plan_limits_default(&lim);
    lim.max_keys = 2;
    refused_with("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":0,\"length\":1},"
                 "{\"key\":\"a\",\"offset\":1,\"length\":1},{\"key\":\"a\",\"offset\":2,"
                 "\"length\":1}]}",
                 &lim, SC_ETOOBIG, API_TOO_LARGE, "field \"keys\" has 3 keys; the limit is 2");
    refused_with("{\"bucket\":\"b00\",\"epochs\":[[{\"key\":\"a\",\"offset\":0,\"length\":1}],"
                 "[{\"key\":\"a\",\"offset\":0,\"length\":1},\"a\"]]}",
                 &lim, SC_ETOOBIG, API_TOO_LARGE, "field \"epochs\" holds 3 keys; the limit is 2");
}

/* Many items, whole ones first, so the ranges start late and grow with the offsets. */
static void many_ranges_of_one_key_keep_their_bytes(void **state)
{
    enum { N = 3000 };
    size_t cap = 80 + (size_t)N * 64;
    char *body = malloc(cap);
    size_t at = (size_t)snprintf(body, cap, "{\"bucket\":\"b00\",\"epochs\":[[\"w0\",\"w1\"");
    for (unsigned i = 0; i < N; i++)
        at += (size_t)snprintf(body + at, cap - at,
                               ",{\"key\":\"tokens.bin\",\"offset\":%u,\"length\":%u}", i * 4096,
                               4096 + i);
    snprintf(body + at, cap - at, ",\"w0\"]]}");
    struct plan *p = parse_ok(body);
    assert_int_equal(plan_objects(p), N + 2);
    assert_int_equal(plan_accesses(p), N + 3);
    assert_range(p, 0, 0, 0);
    assert_range(p, 1, 0, 0);
    for (unsigned i = 0; i < N; i++)
        assert_range(p, 2 + i, (uint64_t)i * 4096, 4096 + i);
    plan_free(p);
    free(body);
}

static void order_json_shows_each_access_range(void **state)
{
    struct plan *p = parse_ok("{\"bucket\":\"b00\",\"keys\":[{\"key\":\"a\",\"offset\":8,"
                              "\"length\":4},\"b\",{\"key\":\"a\",\"offset\":0,\"length\":8}],"
                              "\"world_size\":1}");
    json_t *o = plan_order_json(p, "m5", 0, PLAN_ALL_RANKS);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"epoch\":0,\"id\":\"m5\",\"indices\":[0,1,2],\"keys\":[\"a\","
                              "\"b\",\"a\"],\"ranges\":[[8,4],null,[0,8]],\"rank\":null}");
    free(text);
    json_decref(o);
    plan_free(p);

    p = parse_ok("{\"bucket\":\"b00\",\"epochs\":[[\"b\",{\"key\":\"a\",\"offset\":0,"
                 "\"length\":5497558138880}]]}");
    o = plan_order_json(p, "m6", 0, PLAN_ALL_RANKS);
    text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"epoch\":0,\"id\":\"m6\",\"indices\":null,\"keys\":[\"b\",\"a\"],"
                              "\"ranges\":[null,[0,5497558138880]],\"rank\":null}");
    free(text);
    json_decref(o);
    plan_free(p);
}

/* ---- the ranks of one job ---- */

static void local_ranks_interleave_the_ranks_step_by_step(void **state)
{
    /* n = 10, seed 42, world_size 3, epoch 0 (docs/manifests.md): rank 0 reads 0 8 7 3,
     * rank 2 reads 5 4 1 9; merged, each step in ascending rank order. */
    struct plan *p =
        sampled(10, "\"shuffle\":true,\"seed\":42,\"world_size\":3,\"local_ranks\":[2,0],");
    const struct plan_params *prm = plan_params(p);
    assert_int_equal(prm->n_ranks, 2);
    assert_int_equal(prm->ranks[0], 0);
    assert_int_equal(prm->ranks[1], 2);
    assert_int_equal(prm->rank, 0);
    assert_order(p, 0, (uint32_t[]){0, 5, 8, 4, 7, 1, 3, 9}, 8);
    assert_int_equal(plan_accesses(p), 8);
    uint32_t *order;
    uint64_t n;
    assert_int_equal(plan_rank_order(p, 0, 2, &order, &n), SC_OK);
    assert_int_equal(n, 4);
    assert_memory_equal(order, ((uint32_t[]){5, 4, 1, 9}), 4 * sizeof(*order));
    free(order);
    assert_int_equal(plan_rank_order(p, 0, 1, &order, &n), SC_EINVAL);
    assert_true(plan_has_rank(p, 2));
    assert_false(plan_has_rank(p, 1));
    plan_free(p);
}

static void local_ranks_are_checked(void **state)
{
    const char *msg = "field \"local_ranks\" must be an array of 1..4 distinct integers in "
                      "0..world_size-1 (world_size is 4)";
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":4,\"local_ranks\":[]}",
            API_INVALID_FIELD, msg);
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":4,\"local_ranks\":3}",
            API_INVALID_FIELD, msg);
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":4,\"local_ranks\":[0,1,2,3,0]}",
            API_INVALID_FIELD, msg);
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":4,\"local_ranks\":[1,4]}",
            API_INVALID_FIELD,
            "local_ranks[1] must be an integer in 0..world_size-1 (world_size is 4)");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":4,\"local_ranks\":[1,1]}",
            API_INVALID_FIELD,
            "rank 1 is repeated; the ranks must be distinct, in 0..world_size-1 (world_size is 4)");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"world_size\":4,\"rank\":1,"
            "\"local_ranks\":[1]}",
            API_INVALID_FIELD, "give \"rank\" or \"local_ranks\", not both");
    refused(
        "{\"bucket\":\"b00\",\"epochs\":[[\"a\"]],\"local_ranks\":[0]}", API_INVALID_FIELD,
        "field \"local_ranks\" is not allowed with \"epochs\" (the epochs are the lists given)");
    refused("{\"bucket\":\"b00\",\"keys\":[\"a\"],\"job\":\"\"}", API_INVALID_FIELD,
            "field \"job\" must not be empty");
}

/* Whether b may join a's job; with `refusal`, b is refused with exactly that message. */
static bool joins(const char *a, const char *b, const char *refusal)
{
    struct plan *pa = parse_ok(a), *pb = parse_ok(b);
    struct api_err err = {API_OK, ""};
    bool same = true;
    sc_code rc = plan_same_job(pa, pb, &same, &err);
    if (refusal != NULL) {
        assert_int_equal(rc, SC_EINVAL);
        assert_string_equal(err.message, refusal);
    } else {
        assert_int_equal(rc, SC_OK);
    }
    plan_free(pa);
    plan_free(pb);
    return same;
}

static void ranks_of_one_sampling_plan_make_one_job(void **state)
{
#define RANK(r)                                                                                    \
    "{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\",\"c\"],\"shuffle\":true,\"seed\":3,"                \
    "\"world_size\":4,\"rank\":" #r "}"
    assert_true(joins(RANK(0), RANK(1), NULL));
    assert_false(joins(RANK(1), RANK(1), NULL)); /* a rank twice: another job */
    assert_false(joins(RANK(0),
                       "{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\",\"c\"],\"shuffle\":true,"
                       "\"seed\":4,\"world_size\":4,\"rank\":1}",
                       NULL));
    assert_false(joins(RANK(0),
                       "{\"bucket\":\"b00\",\"keys\":[\"a\",\"c\",\"b\"],\"shuffle\":true,"
                       "\"seed\":3,\"world_size\":4,\"rank\":1}",
                       NULL));
    assert_false(joins(RANK(0),
                       "{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\",\"c\"],\"shuffle\":true,"
                       "\"seed\":3,\"world_size\":4,\"rank\":1,\"job\":\"j\"}",
                       NULL)); /* one named, one not */
    assert_false(joins("{\"bucket\":\"b00\",\"epochs\":[[\"a\"]]}",
                       "{\"bucket\":\"b00\",\"epochs\":[[\"a\"]]}", NULL));
    assert_true(joins("{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"job\":\"j\"}",
                      "{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"rank\":1,"
                      "\"job\":\"j\"}",
                      NULL));
    joins("{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"job\":\"j\"}",
          "{\"bucket\":\"b00\",\"prefix\":\"u/\",\"world_size\":2,\"rank\":1,\"job\":\"j\"}",
          "this plan cannot join job \"j\": its dataset differs");
    /* the next window of a named run, or a rank again: another job under the same name */
    assert_false(joins("{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"job\":\"j\"}",
                       "{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"job\":\"j\"}",
                       NULL));
    assert_false(joins("{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"job\":\"j\"}",
                       "{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"rank\":1,"
                       "\"seed\":5,\"job\":\"j\"}",
                       NULL));
    joins("{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":2,\"job\":\"j\"}",
          "{\"bucket\":\"b00\",\"prefix\":\"t/\",\"world_size\":3,\"rank\":1,\"job\":\"j\"}",
          "this plan cannot join job \"j\": its world_size differs");
#undef RANK
}

static void set_ranks_merges_the_orders_and_keeps_the_plan_on_error(void **state)
{
    struct plan *p = sampled(10, "\"shuffle\":true,\"seed\":42,\"world_size\":3,\"rank\":2,");
    struct api_err err = {API_OK, ""};
    assert_int_equal(plan_set_ranks(p, (uint32_t[]){2, 0}, 2, &err), SC_OK);
    assert_order(p, 0, (uint32_t[]){0, 5, 8, 4, 7, 1, 3, 9}, 8);
    assert_int_equal(plan_set_ranks(p, (uint32_t[]){0, 3}, 2, &err), SC_EINVAL);
    assert_string_equal(err.message, "rank 3 is out of range; the ranks must be distinct, in "
                                     "0..world_size-1 (world_size is 3)");
    assert_order(p, 0, (uint32_t[]){0, 5, 8, 4, 7, 1, 3, 9}, 8);
    plan_free(p);

    struct plan_limits lim;
    plan_limits_default(&lim);
    lim.max_accesses = 3;
    const char *body = "{\"bucket\":\"b00\",\"keys\":[\"a\",\"b\",\"c\",\"d\"],\"world_size\":2}";
    assert_int_equal(plan_parse(body, strlen(body), &lim, &p, &err), SC_OK);
    assert_int_equal(plan_set_ranks(p, (uint32_t[]){0, 1}, 2, &err), SC_ETOOBIG);
    assert_string_equal(err.message, "the plan has 4 accesses for its ranks (4 per epoch, 1 "
                                     "epochs); the limit is 3");
    assert_int_equal(plan_accesses(p), 2);
    assert_int_equal(plan_params(p)->n_ranks, 1);
    plan_free(p);
}

static void a_decided_epoch_reads_each_ranks_cached_share_first(void **state)
{
    /* shares of epoch 0 (n = 10, seed 42, world_size 3): 0 8 7 3 | 9 6 2 0 | 5 4 1 9 */
    struct plan *p = sampled(10, "\"shuffle\":true,\"seed\":42,\"world_size\":3,"
                                 "\"local_ranks\":[0,1,2],\"cache_aware\":true,\"num_epochs\":2,");
    uint8_t bits[2] = {(1u << 2) | (1u << 3), 1u << 1}; /* items 2, 3 and 9 cached */
    assert_null(plan_epoch_decision(p, 0));
    assert_int_equal(plan_decide_epoch(p, 0, bits), SC_OK);
    assert_int_equal(plan_decide_epoch(p, 0, bits), SC_EINVAL); /* decided once */
    assert_int_equal(plan_decide_epoch(p, 2, bits), SC_EINVAL);
    bits[0] = 0; /* copied */
    assert_order(p, 0, (uint32_t[]){3, 9, 9, 0, 2, 5, 8, 6, 4, 7, 0, 1}, 12);
    uint32_t *order;
    uint64_t n;
    assert_int_equal(plan_rank_order(p, 0, 1, &order, &n), SC_OK);
    assert_memory_equal(order, ((uint32_t[]){9, 2, 6, 0}), 4 * sizeof(*order));
    free(order);
    assert_non_null(plan_epoch_decision(p, 0));
    assert_null(plan_epoch_decision(p, 1)); /* epoch 1 keeps its seeded order */
    plan_free(p);

    p = sampled(10, "\"world_size\":3,");
    assert_int_equal(plan_decide_epoch(p, 0, bits), SC_EINVAL); /* not cache-aware */
    plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_form_is_one_epoch_in_the_given_order_with_defaults),
        cmocka_unit_test(every_optional_field_is_read),
        cmocka_unit_test(epochs_form_maps_keys_to_indices_of_first_appearance),
        cmocka_unit_test(prefix_form_waits_for_its_listing_then_sorts_and_dedups),
        cmocka_unit_test(empty_prefix_lists_the_whole_bucket),
        cmocka_unit_test(listing_errors_are_precise),
        cmocka_unit_test(prefix_listing_that_drop_last_empties_fails_at_finish),
        cmocka_unit_test(malformed_json_is_refused_as_invalid_json),
        cmocka_unit_test(nesting_deeper_than_the_limit_is_refused_before_parsing),
        cmocka_unit_test(body_over_the_size_limit_is_too_large),
        cmocka_unit_test(fields_are_checked_by_name),
        cmocka_unit_test(bucket_must_be_a_valid_name),
        cmocka_unit_test(sampling_fields_are_range_checked),
        cmocka_unit_test(name_and_prefix_lengths_are_bounded),
        cmocka_unit_test(keys_must_be_unique_nonempty_bounded_strings),
        cmocka_unit_test(epochs_must_be_nonempty_arrays_of_keys),
        cmocka_unit_test(counts_over_configured_limits_are_refused),
        cmocka_unit_test(seed_42_over_ten_keys_and_three_ranks_matches_the_python_vectors),
        cmocka_unit_test(unshuffled_split_pads_from_the_start),
        cmocka_unit_test(orders_match_the_reference_for_many_shapes),
        cmocka_unit_test(union_of_all_ranks_covers_the_dataset),
        cmocka_unit_test(padding_longer_than_the_dataset_repeats_it),
        cmocka_unit_test(epochs_reshuffle_with_seed_plus_epoch),
        cmocka_unit_test(iterator_walks_all_epochs_in_order),
        cmocka_unit_test(used_objects_counts_what_this_rank_reads),
        cmocka_unit_test(key_hashes_are_the_policy_hashes),
        cmocka_unit_test(order_json_has_indices_except_for_the_epochs_form),
        cmocka_unit_test(describe_json_holds_the_static_fields),
        cmocka_unit_test(duplicate_check_reads_nothing_past_the_last_key),
        cmocka_unit_test(ranges_are_items_beside_whole_keys_and_share_the_key),
        cmocka_unit_test(range_entries_are_checked_field_by_field),
        cmocka_unit_test(keys_are_unique_as_key_offset_and_length),
        cmocka_unit_test(epochs_repeat_ranged_items_as_one_dataset_index),
        cmocka_unit_test(entries_count_against_the_keys_limit),
        cmocka_unit_test(many_ranges_of_one_key_keep_their_bytes),
        cmocka_unit_test(order_json_shows_each_access_range),
        cmocka_unit_test(local_ranks_interleave_the_ranks_step_by_step),
        cmocka_unit_test(local_ranks_are_checked),
        cmocka_unit_test(ranks_of_one_sampling_plan_make_one_job),
        cmocka_unit_test(set_ranks_merges_the_orders_and_keeps_the_plan_on_error),
        cmocka_unit_test(a_decided_epoch_reads_each_ranks_cached_share_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
