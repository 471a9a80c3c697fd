/*
 * fuzz_awschunked.c - the aws-chunked upload decoder (proto/awschunked.h).
 *
 * Input: '\n'-separated fields: x-amz-decoded-content-length in decimal
 * (empty: not sent), a string of digits that sets the slice and buffer sizes
 * of the second pass, then the body as received.
 * Invariants: the body decoded in one call and decoded again in small slices
 * into small buffers (as proxy.c feeds it from the network) give the same
 * result: same payload bytes, same error at the same input offset, same
 * trailers, same completion. The payload is never longer than the input,
 * consumed and produced stay within their buffers, a completed body holds
 * exactly the announced bytes (and the declared length when one was sent),
 * and a failed decoder refuses everything after.
 */
#include <stdbool.h>

#include "../../proto/awschunked.h"
#include "fuzz.h"

struct pass {
    sc_code rc;
    size_t consumed; /* input accepted, up to the error if any */
    char *out;
    size_t produced;
    bool done;
};

static void one_pass(struct awschunked *d, uint64_t declared, const char *body, size_t len,
                     const char *sizes, struct pass *r)
{
    size_t nsizes = strlen(sizes), k = 0;
    awschunked_init(d, declared);
    r->out = fz_dup("", len);
    r->rc = SC_OK;
    r->consumed = r->produced = 0;
    while (r->consumed < len && r->rc == SC_OK) {
        /* slice and buffer sizes 1..10 from the digits, or everything at once without them */
        size_t slice = nsizes ? (size_t)(sizes[k++ % nsizes] - '0') + 1 : len;
        size_t cap = nsizes ? (size_t)(sizes[k++ % nsizes] - '0') + 1 : len;
        if (slice > len - r->consumed)
            slice = len - r->consumed;
        if (cap > len - r->produced)
            cap = len - r->produced;
        /* an exact-size copy, so ASan sees a read past the slice */
        char *in = fz_dup(body + r->consumed, slice);
        char *out = malloc(cap ? cap : 1);
        size_t used = 99999, made = 99999;
        FZ_CHECK(out != NULL);
        r->rc = awschunked_feed(d, in, slice, &used, out, cap, &made);
        FZ_CHECK(used <= slice && made <= cap && made <= used);
        memcpy(r->out + r->produced, out, made);
        r->consumed += used;
        r->produced += made;
        FZ_CHECK(r->produced <= r->consumed);
        /* No progress with room to spare is only allowed on an error or at the end. */
        FZ_CHECK(used > 0 || r->rc != SC_OK || cap == 0);
        free(in);
        free(out);
        if (cap == 0 && used == 0 && r->rc == SC_OK)
            break; /* the output is as long as the input: nothing more can come */
    }
    r->done = awschunked_done(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *decl_s = fz_line(&f, NULL);
    char *sizes = fz_line(&f, NULL);
    char *body = fz_rest(&f, &len);
    uint64_t declared = decl_s[0] ? fz_number(decl_s) : AWSCHUNKED_LENGTH_UNKNOWN;
    for (char *p = sizes; *p; p++)
        *p = (char)(*p >= '0' && *p <= '9' ? *p : '0');
    struct awschunked *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    struct pass whole, sliced;
    FZ_CHECK(a != NULL && b != NULL);

    one_pass(a, declared, body, len, "", &whole);
    one_pass(b, declared, body, len, sizes, &sliced);

    FZ_CHECK(whole.rc == SC_OK || whole.rc == SC_EINVAL);
    FZ_CHECK(whole.rc == sliced.rc && whole.consumed == sliced.consumed);
    FZ_CHECK(whole.produced == sliced.produced);
    FZ_CHECK(memcmp(whole.out, sliced.out, whole.produced) == 0);
    FZ_CHECK(whole.done == sliced.done);
    FZ_CHECK(whole.produced <= len);
    FZ_CHECK(awschunked_total(a) == awschunked_total(b) && awschunked_total(a) >= whole.produced);
    if (whole.done) {
        FZ_CHECK(whole.rc == SC_OK && whole.consumed == len);
        FZ_CHECK(awschunked_total(a) == whole.produced);
        FZ_CHECK(declared == AWSCHUNKED_LENGTH_UNKNOWN || declared == whole.produced);
    }
    for (size_t i = 0; i < AWSCHUNKED_TRAILERS_MAX; i++) {
        /* the same trailers, found by name in both */
        if (i < a->ntrailers) {
            const char *v = awschunked_trailer(b, a->trailers[i].name);
            FZ_CHECK(v != NULL && strlen(a->trailers[i].value) <= AWSCHUNKED_TRAILER_VALUE_MAX);
        }
    }
    FZ_CHECK(a->ntrailers == b->ntrailers);
    if (whole.rc != SC_OK) {
        char c = 'x', o;
        size_t used = 1, made = 1;
        FZ_CHECK(awschunked_feed(a, &c, 1, &used, &o, 1, &made) == SC_EINVAL);
        FZ_CHECK(used == 0 && made == 0 && !awschunked_done(a));
    }
    free(whole.out);
    free(sliced.out);
    free(a);
    free(b);
    free(decl_s);
    free(sizes);
    free(body);
    return 0;
}
