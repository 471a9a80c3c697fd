/* test_awschunked.c - the aws-chunked decoder (proto/awschunked.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/awschunked.h"

#define SIG     ";chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG_END ";chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

/* What decoding a whole body produced. */
struct result {
    sc_code rc;
    bool done;
    size_t consumed; /* input bytes used in total */
    size_t len;      /* payload bytes */
    char *payload;
};

/*
 * Decodes body[0..len) feeding at most step input bytes per call into an
 * output buffer of out_cap bytes, as a caller would in a loop.
 */
static struct result decode_with(struct awschunked *d, const char *body, size_t len,
                                 uint64_t declared, size_t step, size_t out_cap)
{
    struct result r = {SC_OK, false, 0, 0, malloc(len + 1)};
    char *out = malloc(out_cap);
    assert_non_null(r.payload);
    assert_non_null(out);
    awschunked_init(d, declared);
    while (r.consumed < len) {
        size_t n = len - r.consumed < step ? len - r.consumed : step;
        size_t used;
        size_t made;
        r.rc = awschunked_feed(d, body + r.consumed, n, &used, out, out_cap, &made);
        assert_true(used <= n);
        assert_true(made <= out_cap);
        memcpy(r.payload + r.len, out, made);
        r.len += made;
        r.consumed += used;
        if (r.rc != SC_OK)
            break;
        assert_true(used > 0 || made > 0); /* progress with a non-empty buffer */
    }
    r.done = awschunked_done(d);
    free(out);
    return r;
}

static struct result decode(struct awschunked *d, const char *body, uint64_t declared)
{
    return decode_with(d, body, strlen(body), declared, SIZE_MAX, 65536);
}

static void assert_payload(const struct result *r, const char *expected, size_t len)
{
    assert_int_equal(r->rc, SC_OK);
    assert_true(r->done);
    assert_int_equal(r->len, len);
    assert_memory_equal(r->payload, expected, len);
}

static void assert_refused(const char *body, uint64_t declared)
{
    struct awschunked d;
    struct result r = decode(&d, body, declared);
    assert_int_equal(r.rc, SC_EINVAL);
    assert_false(r.done);
    free(r.payload);
    /* the same body fed a byte at a time fails too */
    r = decode_with(&d, body, strlen(body), declared, 1, 1);
    assert_int_equal(r.rc, SC_EINVAL);
    assert_false(r.done);
    free(r.payload);
}

/* Builds a signed body of payload split into chunks of chunk bytes; *len gets its length. */
static char *encode(const char *payload, size_t plen, size_t chunk, const char *trailers,
                    size_t *len)
{
    size_t cap = plen + (plen / chunk + 2) * 128 + strlen(trailers) + 16;
    char *b = malloc(cap);
    size_t n = 0;
    assert_non_null(b);
    for (size_t off = 0; off < plen; off += chunk) {
        size_t c = plen - off < chunk ? plen - off : chunk;
        n += (size_t)snprintf(b + n, cap - n, "%zx" SIG "\r\n", c);
        memcpy(b + n, payload + off, c);
        n += c;
        n += (size_t)snprintf(b + n, cap - n, "\r\n");
    }
    n += (size_t)snprintf(b + n, cap - n, "0" SIG_END "\r\n%s\r\n", trailers);
    *len = n;
    return b;
}

static char *pattern(size_t len)
{
    char *p = malloc(len);
    assert_non_null(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (char)(i * 131 + 7); /* every byte value, CR and LF included */
    return p;
}

static void signed_chunks_decode_to_payload(void **state)
{
    (void)state;
    struct awschunked d;
    const char *body = "5" SIG "\r\nhello\r\n6" SIG "\r\n world\r\n0" SIG_END "\r\n\r\n";
    struct result r = decode(&d, body, 11);
    assert_payload(&r, "hello world", 11);
    assert_int_equal(r.consumed, strlen(body));
    assert_int_equal(awschunked_total(&d), 11);
    assert_null(awschunked_trailer(&d, "x-amz-checksum-crc32"));
    free(r.payload);
}

static void unsigned_chunks_decode_to_payload(void **state)
{
    (void)state;
    struct awschunked d;
    struct result r = decode(&d, "3\r\nabc\r\n0\r\n\r\n", 3);
    assert_payload(&r, "abc", 3);
    free(r.payload);
}

static void byte_at_a_time_equals_whole_feeding(void **state)
{
    (void)state;
    size_t len = 70000;
    size_t blen;
    char *payload = pattern(len);
    char *body = encode(payload, len, 8192, "x-amz-checksum-crc32:AAAAAA==\r\n", &blen);
    struct awschunked whole;
    struct awschunked bytewise;
    struct result a = decode_with(&whole, body, blen, len, SIZE_MAX, 1 << 20);
    struct result b = decode_with(&bytewise, body, blen, len, 1, 1);
    assert_payload(&a, payload, len);
    assert_payload(&b, payload, len);
    assert_int_equal(a.consumed, blen);
    assert_int_equal(b.consumed, blen);
    assert_string_equal(awschunked_trailer(&whole, "x-amz-checksum-crc32"), "AAAAAA==");
    assert_string_equal(awschunked_trailer(&bytewise, "x-amz-checksum-crc32"), "AAAAAA==");
    free(a.payload);
    free(b.payload);
    free(body);
    free(payload);
}

static void odd_slice_and_buffer_sizes_give_same_payload(void **state)
{
    (void)state;
    size_t len = 5000;
    size_t blen;
    char *payload = pattern(len);
    char *body = encode(payload, len, 1000, "", &blen);
    static const size_t steps[] = {1, 2, 3, 7, 64, 999, 1000, 1001, 4096};
    static const size_t caps[] = {1, 5, 999, 1000, 1001, 9000};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        for (size_t j = 0; j < sizeof(caps) / sizeof(caps[0]); j++) {
            struct awschunked d;
            struct result r = decode_with(&d, body, blen, len, steps[i], caps[j]);
            assert_payload(&r, payload, len);
            assert_int_equal(r.consumed, blen);
            free(r.payload);
        }
    }
    free(body);
    free(payload);
}

static void empty_payload_decodes(void **state)
{
    (void)state;
    struct awschunked d;
    struct result r = decode(&d, "0" SIG_END "\r\n\r\n", 0);
    assert_payload(&r, "", 0);
    free(r.payload);
    r = decode(&d, "0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_payload(&r, "", 0);
    free(r.payload);
}

static void trailers_are_collected(void **state)
{
    (void)state;
    struct awschunked d;
    const char *body = "4\r\ndata\r\n0\r\n"
                       "x-amz-checksum-crc32:  sOO8/Q==\t\r\n"
                       "X-Amz-Trailer-Signature:63bddb248ad2590c92712055f51b8e78ab024eead08276b2"
                       "4f010b0efd74843f\r\n"
                       "x-empty:\r\n"
                       "\r\n";
    struct result r = decode(&d, body, 4);
    assert_payload(&r, "data", 4);
    assert_string_equal(awschunked_trailer(&d, "x-amz-checksum-crc32"), "sOO8/Q==");
    assert_string_equal(awschunked_trailer(&d, "x-amz-trailer-signature"),
                        "63bddb248ad2590c92712055f51b8e78ab024eead08276b24f010b0efd74843f");
    assert_string_equal(awschunked_trailer(&d, "X-EMPTY"), "");
    assert_null(awschunked_trailer(&d, "x-amz-checksum-crc32c"));
    free(r.payload);
}

static void trailers_survive_byte_at_a_time(void **state)
{
    (void)state;
    struct awschunked d;
    const char *body = "1;chunk-signature=x\r\nZ\r\n0\r\nx-amz-checksum-sha256:abc=\r\n\r\n";
    struct result r = decode_with(&d, body, strlen(body), 1, 1, 1);
    assert_payload(&r, "Z", 1);
    assert_string_equal(awschunked_trailer(&d, "x-amz-checksum-sha256"), "abc=");
    free(r.payload);
}

static void uppercase_hex_and_leading_zeros_are_accepted(void **state)
{
    (void)state;
    struct awschunked d;
    char body[64];
    char data[27];
    memset(data, 'q', 26);
    data[26] = '\0';
    snprintf(body, sizeof(body), "001A\r\n%s\r\n000\r\n\r\n", data);
    struct result r = decode(&d, body, 26);
    assert_payload(&r, data, 26);
    free(r.payload);
}

static void unknown_decoded_length_accepts_any_length(void **state)
{
    (void)state;
    struct awschunked d;
    struct result r = decode(&d, "2\r\nab\r\n1\r\nc\r\n0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_payload(&r, "abc", 3);
    assert_int_equal(awschunked_total(&d), 3);
    free(r.payload);
}

static void zero_out_cap_consumes_framing_only(void **state)
{
    (void)state;
    struct awschunked d;
    const char *body = "3\r\nabc\r\n0\r\n\r\n";
    size_t used;
    size_t made;
    char out[8];
    awschunked_init(&d, 3);
    assert_int_equal(awschunked_feed(&d, body, strlen(body), &used, out, 0, &made), SC_OK);
    assert_int_equal(used, 3); /* "3\r\n" */
    assert_int_equal(made, 0);
    assert_int_equal(
        awschunked_feed(&d, body + used, strlen(body) - used, &used, out, sizeof(out), &made),
        SC_OK);
    assert_int_equal(made, 3);
    assert_memory_equal(out, "abc", 3);
    assert_true(awschunked_done(&d));
}

static void incomplete_body_is_not_done(void **state)
{
    (void)state;
    struct awschunked d;
    struct result r = decode(&d, "3\r\nabc\r\n0\r\n", 3);
    assert_int_equal(r.rc, SC_OK);
    assert_false(r.done);
    assert_int_equal(r.len, 3);
    free(r.payload);
}

static void missing_crlf_after_data_is_refused(void **state)
{
    (void)state;
    assert_refused("3\r\nabcd\r\n0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_refused("3\r\nabc\n0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_refused("3\r\nabc\r0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
}

static void bare_cr_or_lf_in_lines_is_refused(void **state)
{
    (void)state;
    assert_refused("3\nabc\r\n0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_refused("3\r\r\nabc\r\n0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_refused("3;a\rb\r\nabc\r\n0\r\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_refused("0\r\n\n", AWSCHUNKED_LENGTH_UNKNOWN);
    assert_refused("0\r\nx:y\n\r\n", AWSCHUNKED_LENGTH_UNKNOWN);
}

static void bad_size_lines_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\r\nabc\r\n0\r\n\r\n",          /* empty size */
        "g\r\n",                         /* not hex */
        "0x3\r\nabc\r\n0\r\n\r\n",       /* C prefix */
        " 3\r\nabc\r\n0\r\n\r\n",        /* leading space */
        "3 \r\nabc\r\n0\r\n\r\n",        /* trailing space */
        "+3\r\nabc\r\n0\r\n\r\n",        /* sign */
        "-1\r\n",                        /* negative */
        ";chunk-signature=x\r\n",        /* extension without size */
        "3;sig\x01\r\nabc\r\n0\r\n\r\n", /* control character in extension */
        "3;sig\x7f\r\nabc\r\n0\r\n\r\n", /* DEL in extension */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_refused(bad[i], AWSCHUNKED_LENGTH_UNKNOWN);
}

static void size_overflow_is_refused(void **state)
{
    (void)state;
    assert_refused("10000000000000000\r\n", AWSCHUNKED_LENGTH_UNKNOWN); /* 2^64 */
    assert_refused("fffffffffffffffff\r\n", AWSCHUNKED_LENGTH_UNKNOWN); /* 17 f */
}

static void largest_chunk_size_is_accepted(void **state)
{
    (void)state;
    struct awschunked d;
    size_t used;
    size_t made;
    char out[4];
    awschunked_init(&d, AWSCHUNKED_LENGTH_UNKNOWN);
    assert_int_equal(awschunked_feed(&d, "ffffffffffffffff\r\n", 18, &used, out, 0, &made), SC_OK);
    assert_int_equal(used, 18);
    assert_int_equal(awschunked_total(&d), UINT64_MAX);
}

static void many_leading_zeros_do_not_overflow(void **state)
{
    (void)state;
    struct awschunked d;
    struct result r = decode(&d, "000000000000000000000000000001\r\nQ\r\n0\r\n\r\n", 1);
    assert_payload(&r, "Q", 1);
    free(r.payload);
}

static void longest_allowed_line_is_accepted_and_one_more_refused(void **state)
{
    (void)state;
    size_t ext = AWSCHUNKED_LINE_MAX - 1; /* "1" + ext bytes = the limit */
    char *body = malloc(AWSCHUNKED_LINE_MAX + 64);
    assert_non_null(body);
    body[0] = '1';
    memset(body + 1, 'a', ext);
    body[1] = ';';
    strcpy(body + 1 + ext, "\r\nX\r\n0\r\n\r\n");
    struct awschunked d;
    struct result r = decode(&d, body, 1);
    assert_payload(&r, "X", 1);
    free(r.payload);
    body[0] = '1';
    memset(body + 1, 'a', ext + 1);
    body[1] = ';';
    strcpy(body + 2 + ext, "\r\nX\r\n0\r\n\r\n");
    assert_refused(body, 1);
    free(body);
}

static void endless_line_is_refused_without_crlf(void **state)
{
    (void)state;
    size_t len = 100000;
    char *body = malloc(len + 1);
    assert_non_null(body);
    memset(body, '0', len);
    body[len] = '\0';
    struct awschunked d;
    struct result r = decode(&d, body, AWSCHUNKED_LENGTH_UNKNOWN);
    assert_int_equal(r.rc, SC_EINVAL);
    assert_int_equal(r.consumed, AWSCHUNKED_LINE_MAX); /* failed at the first byte over */
    free(r.payload);
    free(body);
}

static void more_than_declared_length_is_refused(void **state)
{
    (void)state;
    assert_refused("4\r\nabcd\r\n0\r\n\r\n", 3);
    assert_refused("2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n", 3);
}

static void more_than_declared_is_caught_at_the_chunk_header(void **state)
{
    (void)state;
    struct awschunked d;
    size_t used;
    size_t made;
    char out[16];
    awschunked_init(&d, 10);
    assert_int_equal(awschunked_feed(&d, "b\r\n", 3, &used, out, sizeof(out), &made), SC_EINVAL);
    assert_int_equal(made, 0);
}

static void less_than_declared_length_is_refused(void **state)
{
    (void)state;
    assert_refused("3\r\nabc\r\n0\r\n\r\n", 4);
    assert_refused("0\r\n\r\n", 1);
}

static void bytes_after_the_end_are_refused(void **state)
{
    (void)state;
    assert_refused("3\r\nabc\r\n0\r\n\r\nX", 3);
    assert_refused("3\r\nabc\r\n0\r\n\r\n\r\n", 3);
}

static void malformed_trailers_are_refused(void **state)
{
    (void)state;
    assert_refused("0\r\nno-colon\r\n\r\n", 0);
    assert_refused("0\r\n:value\r\n\r\n", 0);
    assert_refused("0\r\nbad name:v\r\n\r\n", 0);
    assert_refused("0\r\nname:v\x01\r\n\r\n", 0);
    assert_refused("0\r\nna(me:v\r\n\r\n", 0);
}

static void oversized_trailer_parts_are_refused(void **state)
{
    (void)state;
    char body[1024];
    char name[AWSCHUNKED_TRAILER_NAME_MAX + 2];
    char value[AWSCHUNKED_TRAILER_VALUE_MAX + 2];
    struct awschunked d;

    memset(name, 'n', sizeof(name) - 2);
    name[sizeof(name) - 2] = '\0';
    snprintf(body, sizeof(body), "0\r\n%s:v\r\n\r\n", name);
    struct result r = decode(&d, body, 0);
    assert_int_equal(r.rc, SC_OK);
    assert_string_equal(awschunked_trailer(&d, name), "v");
    free(r.payload);
    name[sizeof(name) - 2] = 'n';
    name[sizeof(name) - 1] = '\0';
    snprintf(body, sizeof(body), "0\r\n%s:v\r\n\r\n", name);
    assert_refused(body, 0);

    memset(value, 'v', sizeof(value) - 2);
    value[sizeof(value) - 2] = '\0';
    snprintf(body, sizeof(body), "0\r\nn:%s\r\n\r\n", value);
    r = decode(&d, body, 0);
    assert_int_equal(r.rc, SC_OK);
    assert_string_equal(awschunked_trailer(&d, "n"), value);
    free(r.payload);
    value[sizeof(value) - 2] = 'v';
    value[sizeof(value) - 1] = '\0';
    snprintf(body, sizeof(body), "0\r\nn:%s\r\n\r\n", value);
    assert_refused(body, 0);
}

static void too_many_trailers_are_refused(void **state)
{
    (void)state;
    char body[1024];
    size_t n = (size_t)snprintf(body, sizeof(body), "0\r\n");
    for (int i = 0; i < AWSCHUNKED_TRAILERS_MAX; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n, "t%d:v\r\n", i);
    snprintf(body + n, sizeof(body) - n, "\r\n");
    struct awschunked d;
    struct result r = decode(&d, body, 0);
    assert_int_equal(r.rc, SC_OK);
    assert_true(r.done);
    free(r.payload);
    snprintf(body + n, sizeof(body) - n, "extra:v\r\n\r\n");
    assert_refused(body, 0);
}

static void failure_is_sticky(void **state)
{
    (void)state;
    struct awschunked d;
    size_t used;
    size_t made;
    char out[8];
    awschunked_init(&d, AWSCHUNKED_LENGTH_UNKNOWN);
    assert_int_equal(awschunked_feed(&d, "z\r\n", 3, &used, out, sizeof(out), &made), SC_EINVAL);
    assert_int_equal(awschunked_feed(&d, "0\r\n\r\n", 5, &used, out, sizeof(out), &made),
                     SC_EINVAL);
    assert_int_equal(used, 0);
    assert_int_equal(awschunked_feed(&d, "", 0, &used, out, sizeof(out), &made), SC_EINVAL);
    assert_false(awschunked_done(&d));
}

static void init_resets_a_used_decoder(void **state)
{
    (void)state;
    struct awschunked d;
    struct result r = decode(&d, "0\r\nx-a:1\r\n\r\n", 0);
    assert_true(r.done);
    free(r.payload);
    r = decode(&d, "1\r\nq\r\n0\r\n\r\n", 1);
    assert_payload(&r, "q", 1);
    assert_null(awschunked_trailer(&d, "x-a"));
    free(r.payload);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(signed_chunks_decode_to_payload),
        cmocka_unit_test(unsigned_chunks_decode_to_payload),
        cmocka_unit_test(byte_at_a_time_equals_whole_feeding),
        cmocka_unit_test(odd_slice_and_buffer_sizes_give_same_payload),
        cmocka_unit_test(empty_payload_decodes),
        cmocka_unit_test(trailers_are_collected),
        cmocka_unit_test(trailers_survive_byte_at_a_time),
        cmocka_unit_test(uppercase_hex_and_leading_zeros_are_accepted),
        cmocka_unit_test(unknown_decoded_length_accepts_any_length),
        cmocka_unit_test(zero_out_cap_consumes_framing_only),
        cmocka_unit_test(incomplete_body_is_not_done),
        cmocka_unit_test(missing_crlf_after_data_is_refused),
        cmocka_unit_test(bare_cr_or_lf_in_lines_is_refused),
        cmocka_unit_test(bad_size_lines_are_refused),
        cmocka_unit_test(size_overflow_is_refused),
        cmocka_unit_test(largest_chunk_size_is_accepted),
        cmocka_unit_test(many_leading_zeros_do_not_overflow),
        cmocka_unit_test(longest_allowed_line_is_accepted_and_one_more_refused),
        cmocka_unit_test(endless_line_is_refused_without_crlf),
        cmocka_unit_test(more_than_declared_length_is_refused),
        cmocka_unit_test(more_than_declared_is_caught_at_the_chunk_header),
        cmocka_unit_test(less_than_declared_length_is_refused),
        cmocka_unit_test(bytes_after_the_end_are_refused),
        cmocka_unit_test(malformed_trailers_are_refused),
        cmocka_unit_test(oversized_trailer_parts_are_refused),
        cmocka_unit_test(too_many_trailers_are_refused),
        cmocka_unit_test(failure_is_sticky),
        cmocka_unit_test(init_resets_a_used_decoder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
