/* answer.c - the status, and the bytes, of an answer to a read (see answer.h). */
#include "answer.h"

#include <time.h>

#include "httpdate.h"
#include "range.h"

struct answer answer_decide(const struct cond_headers *ch, const char *range, const char *etag,
                            const char *last_modified, uint64_t size)
{
    struct cond_headers c = *ch;
    time_t lm = 0;
    if (last_modified == NULL || httpdate_parse(last_modified, &lm) != SC_OK) {
        /* No usable date to compare: the date conditions cannot apply. */
        c.if_modified_since = NULL;
        c.if_unmodified_since = NULL;
    }
    enum cond_result cr = cond_evaluate(&c, etag, lm, true);
    if (cond_overrides_range(cr))
        return (struct answer){cond_http_status(cr), 0, 0};
    struct answer a = {200, 0, size};
    switch (range_resolve(range, size, &a.start, &a.len)) {
    case RANGE_WHOLE:
        a.start = 0;
        a.len = size;
        break;
    case RANGE_PARTIAL:
        a.status = 206;
        break;
    case RANGE_UNSATISFIABLE:
        a.status = 416;
        break;
    }
    return a;
}
