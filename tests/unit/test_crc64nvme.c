/* test_crc64nvme.c - CRC-64/NVME against its published check value and a bit-by-bit
 * reference, through the table and through the carry-less-multiply folding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/crc64nvme.h"
#include "pattern.h"

/* The definition, one bit at a time: the reference both implementations must match. */
static uint64_t crc64_bitwise(uint64_t crc, const unsigned char *p, size_t len)
{
    uint64_t reg = ~crc;
    for (size_t i = 0; i < len; i++) {
        reg ^= p[i];
        for (int b = 0; b < 8; b++)
            reg = (reg & 1u) ? (reg >> 1) ^ 0x9a6c9329ac4bc9b5ull : reg >> 1;
    }
    return ~reg;
}

static void check_value_matches_catalogue(void **state)
{
    (void)state;
    assert_int_equal(crc64nvme(0, "123456789", 9), 0xae8b14860a799888ull);
    assert_int_equal(crc64nvme_portable(0, "123456789", 9), 0xae8b14860a799888ull);
    assert_int_equal(crc64_bitwise(0, (const unsigned char *)"123456789", 9),
                     0xae8b14860a799888ull);
}

static void empty_input_returns_the_crc_given(void **state)
{
    (void)state;
    assert_int_equal(crc64nvme(0, NULL, 0), 0u);
    assert_int_equal(crc64nvme(0x0123456789abcdefull, NULL, 0), 0x0123456789abcdefull);
    assert_int_equal(crc64nvme_portable(42, NULL, 0), 42u);
}

/* Every length 0..1100 at alignments 0..15: one lane and four, every remainder of 16 and
 * of 64, the tail through the table. */
static void all_lengths_and_alignments_match_reference(void **state)
{
    (void)state;
    enum { MAX = 1100 };
    unsigned char *buf = malloc(MAX + 16);
    assert_non_null(buf);
    fill_bytes(buf, MAX + 16, 11);
    for (size_t align = 0; align < 16; align++)
        for (size_t len = 0; len <= MAX; len++) {
            uint64_t want = crc64_bitwise(0, buf + align, len);
            assert_int_equal(crc64nvme(0, buf + align, len), want);
            assert_int_equal(crc64nvme_portable(0, buf + align, len), want);
        }
    free(buf);
}

/* A CRC carried across calls of any split is the CRC of the whole: the register goes into
 * the folded path's first block. */
static void split_updates_match_one_update(void **state)
{
    (void)state;
    enum { LEN = 1 << 20 };
    unsigned char *buf = malloc(LEN);
    assert_non_null(buf);
    fill_bytes(buf, LEN, 3);
    uint64_t whole = crc64_bitwise(0, buf, LEN);
    assert_int_equal(crc64nvme(0, buf, LEN), whole);
    static const size_t steps[] = {1, 7, 63, 64, 65, 100, 4096, 65537};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        uint64_t crc = 0;
        for (size_t off = 0; off < LEN; off += steps[s])
            crc = crc64nvme(crc, buf + off, LEN - off < steps[s] ? LEN - off : steps[s]);
        assert_int_equal(crc, whole);
    }
    free(buf);
}

/* Bytes that fold to all ones and to zero in a lane: no special case in the constants. */
static void uniform_buffers_match_reference(void **state)
{
    (void)state;
    unsigned char buf[4096];
    for (int v = 0; v < 256; v += 85) {
        memset(buf, v, sizeof(buf));
        for (size_t len = 60; len <= sizeof(buf); len = len * 2 + 1)
            assert_int_equal(crc64nvme(0, buf, len), crc64_bitwise(0, buf, len));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_value_matches_catalogue),
        cmocka_unit_test(empty_input_returns_the_crc_given),
        cmocka_unit_test(all_lengths_and_alignments_match_reference),
        cmocka_unit_test(split_updates_match_one_update),
        cmocka_unit_test(uniform_buffers_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
