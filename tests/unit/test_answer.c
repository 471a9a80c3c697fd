/* test_answer.c - the status and bytes of an answer to a read (proto/answer.h): the
 * conditional headers first, with S3's precedence, then Range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../proto/answer.h"

#define ETAG   "\"abc123\""
#define OTHER  "\"zzz\""
#define AT_LM  "Sun, 06 Nov 1994 08:49:37 GMT"
#define BEFORE "Sun, 06 Nov 1994 08:49:36 GMT"
#define AFTER  "Sun, 06 Nov 1994 08:49:38 GMT"
#define SIZE   1000u

static struct answer decide(const char *im, const char *inm, const char *ims, const char *ius,
                            const char *range)
{
    struct cond_headers ch = {im, inm, ims, ius};
    return answer_decide(&ch, range, ETAG, AT_LM, SIZE);
}

static void assert_answer(struct answer a, int status, uint64_t start, uint64_t len)
{
    assert_int_equal(a.status, status);
    assert_int_equal(a.start, start);
    assert_int_equal(a.len, len);
}

static void plain_read_is_the_whole_object(void **state)
{
    assert_answer(decide(NULL, NULL, NULL, NULL, NULL), 200, 0, SIZE);
}

static void range_is_partial(void **state)
{
    assert_answer(decide(NULL, NULL, NULL, NULL, "bytes=10-19"), 206, 10, 10);
    assert_answer(decide(NULL, NULL, NULL, NULL, "bytes=-100"), 206, 900, 100);
}

static void range_past_the_end_is_unsatisfiable(void **state)
{
    assert_int_equal(decide(NULL, NULL, NULL, NULL, "bytes=1000-").status, 416);
}

static void unreadable_range_is_ignored(void **state)
{
    assert_answer(decide(NULL, NULL, NULL, NULL, "lines=1-2"), 200, 0, SIZE);
}

static void if_none_match_hit_is_not_modified_whatever_the_range(void **state)
{
    assert_answer(decide(NULL, ETAG, NULL, NULL, "bytes=0-9"), 304, 0, 0);
}

static void if_match_miss_is_precondition_failed_before_range(void **state)
{
    assert_answer(decide(OTHER, NULL, NULL, NULL, "bytes=1000-"), 412, 0, 0);
}

static void if_match_hit_lets_range_apply(void **state)
{
    assert_answer(decide(ETAG, NULL, NULL, NULL, "bytes=0-0"), 206, 0, 1);
}

static void if_modified_since_after_is_not_modified(void **state)
{
    assert_int_equal(decide(NULL, NULL, AFTER, NULL, NULL).status, 304);
    assert_int_equal(decide(NULL, NULL, BEFORE, NULL, NULL).status, 200);
}

static void if_unmodified_since_before_fails(void **state)
{
    assert_int_equal(decide(NULL, NULL, NULL, BEFORE, NULL).status, 412);
    assert_int_equal(decide(NULL, NULL, NULL, AFTER, NULL).status, 200);
}

/* S3: If-Match that holds wins over If-Unmodified-Since that does not. */
static void if_match_overrides_if_unmodified_since(void **state)
{
    assert_int_equal(decide(ETAG, NULL, NULL, BEFORE, NULL).status, 200);
}

/* Without a usable Last-Modified the date conditions do not apply. */
static void date_conditions_need_a_date(void **state)
{
    struct cond_headers ch = {NULL, NULL, AFTER, BEFORE};
    assert_int_equal(answer_decide(&ch, NULL, ETAG, NULL, SIZE).status, 200);
    assert_int_equal(answer_decide(&ch, NULL, ETAG, "not a date", SIZE).status, 200);
}

static void empty_object_with_range_is_unsatisfiable(void **state)
{
    struct cond_headers ch = {NULL, NULL, NULL, NULL};
    assert_answer(answer_decide(&ch, NULL, ETAG, AT_LM, 0), 200, 0, 0);
    assert_int_equal(answer_decide(&ch, "bytes=0-0", ETAG, AT_LM, 0).status, 416);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_read_is_the_whole_object),
        cmocka_unit_test(range_is_partial),
        cmocka_unit_test(range_past_the_end_is_unsatisfiable),
        cmocka_unit_test(unreadable_range_is_ignored),
        cmocka_unit_test(if_none_match_hit_is_not_modified_whatever_the_range),
        cmocka_unit_test(if_match_miss_is_precondition_failed_before_range),
        cmocka_unit_test(if_match_hit_lets_range_apply),
        cmocka_unit_test(if_modified_since_after_is_not_modified),
        cmocka_unit_test(if_unmodified_since_before_fails),
        cmocka_unit_test(if_match_overrides_if_unmodified_since),
        cmocka_unit_test(date_conditions_need_a_date),
        cmocka_unit_test(empty_object_with_range_is_unsatisfiable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
