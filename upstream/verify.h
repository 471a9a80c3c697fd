/*
 * verify.h - the MD5 of whole bodies, checked off the upstream thread, several at a time.
 *
 * A fill's body is whole in memory before its verdict (relay_hold_tail keeps its last byte
 * from every reader until then). Hashing it as it streams put the MD5 on the one upstream
 * thread, behind which every other transfer waited: a quarter of an epoch in
 * bench/epochs.sh (docs/benchmarks.md). The verifier's thread hashes the bodies queued since
 * its last round side by side (common/md5.h: eight AVX2 lanes), and tells each one's owner
 * whether it matched.
 *
 * Any thread may submit; the callbacks run on the verifier's thread and must not block.
 */
#ifndef GW_VERIFY_H
#define GW_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/md5.h"
#include "../common/sc_err.h"

typedef struct verifier verifier;

/* The verdict on a body: whether its MD5 is the one wanted. */
typedef void (*verify_done_fn)(void *arg, bool matches);

/* @brief Starts the thread. @return SC_OK, SC_ENOMEM, SC_EIO (no thread). */
sc_code verifier_start(verifier **out);

/*
 * @brief Queues the check that the len bytes at body have the MD5 want; done(arg, verdict)
 * follows once, on the verifier's thread, or before this returns on the caller's when the
 * verifier is stopped or out of memory (then the body is hashed here). body must stay valid
 * and unchanged until done.
 * @param patient no one waits on the verdict: it may wait a few milliseconds for other bodies
 *        to share the lanes with. Otherwise a round starts at once.
 */
void verifier_submit(verifier *v, const void *body, uint64_t len, const uint8_t want[SC_MD5_LEN],
                     bool patient, verify_done_fn done, void *arg);

/* @brief Checks whatever is queued, calls back, and joins the thread; later submissions are
 * checked on their callers' threads. Idempotent. */
void verifier_stop(verifier *v);

/* @brief Stops (if needed) and frees. NULL is a no-op. */
void verifier_free(verifier *v);

#endif
