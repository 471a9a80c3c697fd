/* test_crc32c.c - CRC-32C against published check values and a bit-by-bit reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/crc32c.h"
#include "pattern.h"

/* The definition, one bit at a time: the reference both implementations must match. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t len)
{
    uint32_t reg = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        reg ^= p[i];
        for (int b = 0; b < 8; b++)
            reg = (reg & 1u) ? (reg >> 1) ^ 0x82f63b78u : reg >> 1;
    }
    return ~reg;
}

/* CRC catalogue check value and two common strings. */
static void check_values_match_catalogue(void **state)
{
    (void)state;
    assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c_portable(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c(0, "a", 1), 0xc1d04330u);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    assert_int_equal(crc32c(0, fox, strlen(fox)), 0x22620404u);
    assert_int_equal(crc32c_portable(0, fox, strlen(fox)), 0x22620404u);
}

/* The four 32-byte vectors of RFC 3720, appendix B.4. */
static void rfc3720_vectors_match(void **state)
{
    (void)state;
    unsigned char buf[32];
    memset(buf, 0, sizeof(buf));
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x8a9136aau);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x46dd794eu);
    assert_int_equal(crc32c_portable(0, buf, sizeof(buf)), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    assert_int_equal(crc32c(0, buf, sizeof(buf)), 0x113fdb5cu);
}

static void empty_input_returns_the_crc_given(void **state)
{
    (void)state;
    assert_int_equal(crc32c(0, NULL, 0), 0u);
    assert_int_equal(crc32c(0x12345678u, NULL, 0), 0x12345678u);
    assert_int_equal(crc32c_portable(0xdeadbeefu, NULL, 0), 0xdeadbeefu);
}

/* Every length 0..300 at every alignment 0..7: the 8-byte loop and its head and tail. */
static void all_lengths_and_alignments_match_reference(void **state)
{
    (void)state;
    unsigned char buf[320];
    fill_bytes(buf, sizeof(buf), 7);
    for (size_t align = 0; align < 8; align++) {
        for (size_t len = 0; len <= 300; len++) {
            uint32_t want = crc32c_bitwise(buf + align, len);
            assert_int_equal(crc32c(0, buf + align, len), want);
            assert_int_equal(crc32c_portable(0, buf + align, len), want);
        }
    }
}

/* Feeding the bytes in pieces gives the CRC of the whole. */
static void incremental_equals_one_shot(void **state)
{
    (void)state;
    static unsigned char buf[100000];
    fill_bytes(buf, sizeof(buf), 99);
    uint32_t whole = crc32c(0, buf, sizeof(buf));
    assert_int_equal(whole, crc32c_bitwise(buf, sizeof(buf)));
    uint32_t parts = 0;
    size_t cuts[] = {0, 1, 9, 4096, 4097, 65536, 99999, sizeof(buf)};
    for (size_t i = 1; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        parts = crc32c(parts, buf + cuts[i - 1], cuts[i] - cuts[i - 1]);
    assert_int_equal(parts, whole);
    assert_int_equal(
        crc32c_portable(crc32c_portable(0, buf, 12345), buf + 12345, sizeof(buf) - 12345), whole);
}

static void long_buffers_around_the_lane_joins_match_reference(void **state)
{
    /* 3 lanes of 2 KiB are joined per 6 KiB: lengths on, before and after those edges. */
    static unsigned char buf[3 * 6144 + 64 + 3];
    fill_bytes(buf, sizeof(buf), 99);
    const size_t lens[] = {6143, 6144, 6145, 12287, 12288, 12289, 18432, 18432 + 63};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t off = 0; off < 3; off++)
            assert_int_equal(crc32c(0x12345678u, buf + off, lens[i]),
                             crc32c_portable(0x12345678u, buf + off, lens[i]));
}

static void single_bit_flip_changes_crc(void **state)
{
    (void)state;
    unsigned char buf[4096];
    fill_bytes(buf, sizeof(buf), 3);
    uint32_t before = crc32c(0, buf, sizeof(buf));
    buf[2048] ^= 0x10;
    assert_int_not_equal(crc32c(0, buf, sizeof(buf)), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_values_match_catalogue),
        cmocka_unit_test(rfc3720_vectors_match),
        cmocka_unit_test(empty_input_returns_the_crc_given),
        cmocka_unit_test(all_lengths_and_alignments_match_reference),
        cmocka_unit_test(incremental_equals_one_shot),
        cmocka_unit_test(long_buffers_around_the_lane_joins_match_reference),
        cmocka_unit_test(single_bit_flip_changes_crc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
