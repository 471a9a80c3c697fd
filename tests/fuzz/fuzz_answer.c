/*
 * fuzz_answer.c - what to answer a GET or HEAD of an object (proto/answer.h): the conditional
 * headers, then Range, for an object of a given size, ETag and date.
 *
 * Input: '\n'-separated fields: the object's size in decimal, its ETag, its Last-Modified,
 * then If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since and Range; an empty
 * field is an absent header (or no ETag, no date).
 * Invariants: the status is one of 200, 206, 304, 412, 416; a 200 is the whole object; a 206
 * is a non-empty part inside it; 416 comes only with a Range, 304 only with If-None-Match or
 * If-Modified-Since, 412 only with If-Match or If-Unmodified-Since; without any of them the
 * answer is the whole object; the same question gets the same answer.
 */
#include <stdbool.h>

#include "../../proto/answer.h"
#include "fuzz.h"

#define N_FIELDS 8

static const char *present(const char *s)
{
    return s[0] != '\0' ? s : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    char *field[N_FIELDS];
    fz_init(&f, data, size);
    for (int i = 0; i < N_FIELDS; i++)
        field[i] = fz_line(&f, NULL);
    uint64_t obj = strtoull(field[0], NULL, 10);
    struct cond_headers ch = {present(field[3]), present(field[4]), present(field[5]),
                              present(field[6])};
    const char *range = present(field[7]);
    struct answer a = answer_decide(&ch, range, present(field[1]), present(field[2]), obj);
    struct answer again = answer_decide(&ch, range, present(field[1]), present(field[2]), obj);
    FZ_CHECK(a.status == again.status && a.start == again.start && a.len == again.len);
    switch (a.status) {
    case 200:
        FZ_CHECK(a.start == 0 && a.len == obj);
        break;
    case 206:
        FZ_CHECK(range != NULL && a.len > 0 && a.start < obj && a.len <= obj - a.start);
        break;
    case 416:
        FZ_CHECK(range != NULL);
        break;
    case 304:
        FZ_CHECK(ch.if_none_match != NULL || ch.if_modified_since != NULL);
        break;
    case 412:
        FZ_CHECK(ch.if_match != NULL || ch.if_unmodified_since != NULL);
        break;
    default:
        FZ_CHECK(false);
    }
    bool plain = range == NULL && ch.if_match == NULL && ch.if_none_match == NULL &&
                 ch.if_modified_since == NULL && ch.if_unmodified_since == NULL;
    if (plain)
        FZ_CHECK(a.status == 200);
    for (int i = 0; i < N_FIELDS; i++)
        free(field[i]);
    return 0;
}
