/*
 * fuzz_hdrblob.c - stored header blobs (proto/hdrblob.h): read back from
 * the cache on every hit, so a damaged record must never be read past its end.
 *
 * Input: the blob, any bytes.
 * Invariants: iterating yields pairs that lie inside the blob, each name and
 * value ending at a NUL inside it, with the position strictly increasing up to
 * the length; hdrblob_get finds the first pair of a name, in any case; and
 * the pairs encoded again keep exactly the replayable ones, in order, and
 * iterate back to them.
 */
#include <stdbool.h>
#include <strings.h>

#include "../../proto/hdrblob.h"
#include "fuzz.h"

#define MAX_PAIRS 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *blob = fz_dup((const char *)data, size);
    struct http_header h[MAX_PAIRS];
    size_t n = 0, pos = 0, prev = 0;
    const char *name, *value;
    while (n < MAX_PAIRS && hdrblob_next(blob, size, &pos, &name, &value)) {
        FZ_CHECK(pos > prev && pos <= size);
        FZ_CHECK(name >= blob && value > name && value < blob + size);
        FZ_CHECK(name + strlen(name) + 1 == value && value + strlen(value) + 1 == blob + pos);
        h[n++] = (struct http_header){name, value};
        prev = pos;
    }
    for (size_t i = 0; i < n; i++) {
        const char *v = hdrblob_get(blob, size, h[i].name);
        size_t first = 0;
        while (strcasecmp(h[first].name, h[i].name) != 0)
            first++;
        FZ_CHECK(v == h[first].value);
    }

    char *enc = NULL;
    size_t elen = 0;
    FZ_CHECK(hdrblob_encode(h, n, &enc, &elen) == SC_OK);
    size_t k = 0;
    pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (!hdrblob_keeps(h[i].name))
            continue;
        FZ_CHECK(hdrblob_next(enc, elen, &pos, &name, &value));
        FZ_CHECK(strcmp(name, h[i].name) == 0 && strcmp(value, h[i].value) == 0);
        k++;
    }
    FZ_CHECK(!hdrblob_next(enc, elen, &pos, &name, &value) && pos == elen);
    FZ_CHECK(k > 0 || elen == 0);
    free(enc);
    free(blob);
    return 0;
}
