/* test_buf.c - the growable byte buffer: appends, the NUL, the bound, sticky errors, ownership. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/buf.h"

static void appends_keep_a_nul_after_the_bytes(void **state)
{
    (void)state;
    struct sc_buf b = SC_BUF_INIT;
    assert_null(b.data);
    assert_int_equal(sc_buf_puts(&b, "GET"), SC_OK);
    assert_int_equal(sc_buf_putc(&b, '\n'), SC_OK);
    assert_int_equal(sc_buf_append(&b, "/key\0tail", 9), SC_OK); /* bytes, NULs included */
    assert_int_equal(b.len, 13);
    assert_memory_equal(b.data, "GET\n/key\0tail", 14);
    assert_int_equal(b.data[b.len], '\0');
    assert_int_equal(sc_buf_append(&b, NULL, 0), SC_OK);
    assert_int_equal(b.len, 13);
    sc_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static void grows_past_many_doublings(void **state)
{
    (void)state;
    struct sc_buf b = SC_BUF_INIT;
    char chunk[1000];
    for (int i = 0; i < 1000; i++) {
        memset(chunk, 'a' + i % 26, sizeof(chunk));
        assert_int_equal(sc_buf_append(&b, chunk, sizeof(chunk)), SC_OK);
    }
    assert_int_equal(b.len, 1000000);
    assert_true(b.cap > b.len);
    for (size_t i = 0; i < b.len; i += 999)
        assert_int_equal(b.data[i], 'a' + (int)(i / 1000) % 26);
    assert_int_equal(b.data[b.len], '\0');
    sc_buf_free(&b);
}

static void the_bound_refuses_and_the_refusal_sticks(void **state)
{
    (void)state;
    struct sc_buf b;
    sc_buf_init(&b, 5);
    assert_int_equal(sc_buf_append(&b, "abc", 3), SC_OK);
    assert_int_equal(sc_buf_append(&b, "de", 2), SC_OK); /* exactly the bound */
    assert_int_equal(sc_buf_putc(&b, 'f'), SC_ETOOBIG);
    assert_int_equal(b.len, 5); /* nothing of a refused append */
    assert_string_equal(b.data, "abcde");
    assert_int_equal(sc_buf_append(&b, NULL, 0), SC_ETOOBIG); /* sticks */
    assert_int_equal(b.err, SC_ETOOBIG);
    char *out = (char *)1;
    size_t len = 7;
    assert_int_equal(sc_buf_take(&b, &out, &len), SC_ETOOBIG);
    assert_null(out);
    assert_int_equal(len, 0);
    assert_null(b.data); /* freed */
    assert_int_equal(b.max, 5);
    assert_int_equal(b.err, SC_OK);
    assert_int_equal(sc_buf_puts(&b, "12345"), SC_OK); /* usable again, with its bound */
    assert_int_equal(sc_buf_puts(&b, "6"), SC_ETOOBIG);
    sc_buf_free(&b);
}

static void take_hands_over_the_bytes_and_empties(void **state)
{
    (void)state;
    struct sc_buf b = SC_BUF_INIT;
    char *out = NULL;
    size_t len = 99;
    assert_int_equal(sc_buf_take(&b, &out, &len), SC_OK); /* empty: an allocated "" */
    assert_non_null(out);
    assert_string_equal(out, "");
    assert_int_equal(len, 0);
    free(out);
    sc_buf_puts(&b, "x=1");
    assert_int_equal(sc_buf_take(&b, &out, NULL), SC_OK);
    assert_string_equal(out, "x=1");
    assert_null(b.data); /* the caller owns it now */
    assert_int_equal(b.len, 0);
    free(out);
}

static void reset_keeps_memory_and_clears_the_error(void **state)
{
    (void)state;
    struct sc_buf b;
    sc_buf_init(&b, 4);
    sc_buf_puts(&b, "abcd");
    char *mem = b.data;
    assert_int_equal(sc_buf_putc(&b, 'e'), SC_ETOOBIG);
    sc_buf_reset(&b);
    assert_ptr_equal(b.data, mem);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    assert_int_equal(b.err, SC_OK);
    assert_int_equal(sc_buf_puts(&b, "wxyz"), SC_OK);
    assert_string_equal(b.data, "wxyz");
    sc_buf_free(&b);
}

static void shrink_keeps_the_bytes_and_their_nul(void **state)
{
    (void)state;
    struct sc_buf b = SC_BUF_INIT;
    sc_buf_shrink(&b); /* nothing to give back */
    assert_null(b.data);
    sc_buf_puts(&b, "key1");
    sc_buf_append(&b, "\0key2", 5);
    sc_buf_shrink(&b);
    assert_int_equal(b.cap, b.len + 1);
    assert_memory_equal(b.data, "key1\0key2", 10);
    assert_int_equal(sc_buf_puts(&b, "more"), SC_OK); /* still grows */
    assert_memory_equal(b.data, "key1\0key2more", 14);
    sc_buf_free(&b);
}

static void an_impossible_size_is_out_of_memory(void **state)
{
    (void)state;
    struct sc_buf b = SC_BUF_INIT;
    sc_buf_puts(&b, "ab");
    assert_int_equal(sc_buf_append(&b, "x", SIZE_MAX - 1), SC_ENOMEM); /* len + n overflows */
    assert_int_equal(b.len, 2);
    assert_string_equal(b.data, "ab");
    assert_int_equal(sc_buf_putc(&b, 'c'), SC_ENOMEM); /* sticks */
    char *out = NULL;
    assert_int_equal(sc_buf_take(&b, &out, NULL), SC_ENOMEM);
    assert_null(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_keep_a_nul_after_the_bytes),
        cmocka_unit_test(grows_past_many_doublings),
        cmocka_unit_test(the_bound_refuses_and_the_refusal_sticks),
        cmocka_unit_test(take_hands_over_the_bytes_and_empties),
        cmocka_unit_test(reset_keeps_memory_and_clears_the_error),
        cmocka_unit_test(shrink_keeps_the_bytes_and_their_nul),
        cmocka_unit_test(an_impossible_size_is_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
