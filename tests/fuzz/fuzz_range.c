/*
 * fuzz_range.c - the Range header (proto/range.h) against an object size.
 *
 * Input: the object size in decimal, '\n', then the header value (no '\n':
 * the header is absent). Invariants: the result is one of the three; WHOLE is
 * [0, size); PARTIAL lies inside the object, is at least one byte, formats as
 * a Content-Range that range_content_range() accepts, and "bytes=a-b" of that
 * range resolves to the same bytes; UNSATISFIABLE is (0, 0) and formats as
 * "bytes *" "/size"; a header with a ',' or without the bytes unit is WHOLE.
 * range_span(), without the size, names the first byte and the last (or the
 * end) of every first-pos range, as resolving it against the size does.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <strings.h>

#include "../../proto/range.h"
#include "fuzz.h"

static bool has_bytes_unit(const char *h)
{
    while (*h == ' ' || *h == '\t')
        h++;
    return strncasecmp(h, "bytes=", 6) == 0;
}

static void check_partial(uint64_t start, uint64_t len, uint64_t size)
{
    char cr[RANGE_CONTENT_RANGE_LEN];
    char again[80];
    uint64_t s2, l2;
    FZ_CHECK(len >= 1 && start < size && len <= size - start);
    FZ_CHECK(range_content_range(start, len, size, cr) == SC_OK);
    snprintf(again, sizeof(again), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, start, start + len - 1,
             size);
    FZ_CHECK(strcmp(cr, again) == 0);
    snprintf(again, sizeof(again), "bytes=%" PRIu64 "-%" PRIu64, start, start + len - 1);
    FZ_CHECK(range_resolve(again, size, &s2, &l2) == RANGE_PARTIAL);
    FZ_CHECK(s2 == start && l2 == len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    bool present = memchr(data, '\n', size) != NULL;
    char *size_line = fz_line(&f, NULL);
    char *header = fz_rest(&f, &len);
    uint64_t obj = fz_number(size_line);
    uint64_t start = 7, n = 7;
    char cr[RANGE_CONTENT_RANGE_LEN];

    enum range_result r = range_resolve(present ? header : NULL, obj, &start, &n);
    switch (r) {
    case RANGE_WHOLE:
        FZ_CHECK(start == 0 && n == obj);
        break;
    case RANGE_PARTIAL:
        FZ_CHECK(present && has_bytes_unit(header) && strchr(header, ',') == NULL);
        check_partial(start, n, obj);
        break;
    case RANGE_UNSATISFIABLE:
        FZ_CHECK(present && has_bytes_unit(header) && strchr(header, ',') == NULL);
        FZ_CHECK(start == 0 && n == 0);
        FZ_CHECK(range_content_range(start, n, obj, cr) == SC_OK);
        FZ_CHECK(strncmp(cr, "bytes */", 8) == 0 && fz_number(cr + 8) == obj);
        break;
    default:
        FZ_CHECK(!"unknown range_result");
    }
    /* range_span() reads the same bytes before the size is known: resolved, they are its. */
    uint64_t first, last;
    if (range_span(present ? header : NULL, &first, &last)) {
        FZ_CHECK(first <= last);
        FZ_CHECK(first >= obj ? r == RANGE_UNSATISFIABLE
                              : r == RANGE_PARTIAL && start == first &&
                                    n == (last < obj - 1 ? last : obj - 1) - first + 1);
    }
    free(size_line);
    free(header);
    return 0;
}
