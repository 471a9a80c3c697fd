/* resume.c - the arithmetic of resuming a peer's response from the bucket (see resume.h). */
#include "resume.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../proto/range.h"

bool up_span_of_head(long status, const char *content_range, int64_t content_length,
                     struct up_span *out)
{
    if (content_length <= 0)
        return false;
    if (status == 200) {
        *out = (struct up_span){0, (uint64_t)content_length - 1, (uint64_t)content_length};
        return true;
    }
    struct up_span s;
    if (status != 206 || !range_parse_content_range(content_range, &s.first, &s.last, &s.size) ||
        s.last - s.first + 1 != (uint64_t)content_length)
        return false;
    *out = s;
    return true;
}

/* The first byte not handed over yet; false when none is left. */
static bool next_byte(const struct up_span *s, uint64_t handed, uint64_t *next)
{
    if (handed > s->last - s->first)
        return false; /* the whole span (or more) was handed over */
    *next = s->first + handed;
    return true;
}

bool up_resume_range(const struct up_span *s, uint64_t handed, char *range, size_t cap)
{
    uint64_t next = 0;
    if (!next_byte(s, handed, &next))
        return false;
    int n = snprintf(range, cap, "bytes=%" PRIu64 "-%" PRIu64, next, s->last);
    return n > 0 && (size_t)n < cap;
}

bool up_resume_proves(const struct up_span *s, uint64_t handed, const char *etag, long status,
                      const char *content_range, int64_t content_length, const char *answer_etag)
{
    uint64_t next = 0;
    struct up_span got;
    return next_byte(s, handed, &next) && status == 206 && etag != NULL && answer_etag != NULL &&
           strcmp(etag, answer_etag) == 0 &&
           up_span_of_head(status, content_range, content_length, &got) && got.first == next &&
           got.last == s->last && got.size == s->size;
}
