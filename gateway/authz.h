/*
 * authz.h - before a cached copy, or a fill another identity started, is handed to an
 * identity that the upstream judges on its own, the upstream is asked (authz.c). The
 * rules are in auth.h.
 */
#ifndef GW_AUTHZ_H
#define GW_AUTHZ_H

#include <stdbool.h>

#include "gw.h"

/* @brief True when q's identity must be authorized by the upstream before it is served
 * a cached object or another identity's fill. */
bool gw_authz_needed(const struct gw_req *q);

/*
 * @brief Before q is served a cached copy or another identity's fill: true when it may
 * go on (no check needed, or already allowed), *next untouched; false when *next says
 * what comes instead: done (a 403 was queued), or wait for GW_STEP_AUTHZ_ANSWER (a HEAD
 * went upstream and the connection is suspended until its answer).
 */
bool gw_authz_admit(struct gw_req *q, struct gw_next *next);

/*
 * @brief GW_STEP_AUTHZ_ANSWER: acts on the upstream's answer. Next: GW_STEP_LOOKUP
 * (allowed: the read starts again), done (403), or GW_STEP_PROXY (no clear answer: the
 * request itself goes upstream as this identity, uncached).
 */
struct gw_next gw_authz_answer(struct gw_req *q);

/* @brief Remembers that q's identity may (or may not) read q's object, e.g. after its own
 * fetch was answered. No-op when no check is needed. */
void gw_authz_record(struct gw_req *q, bool allowed);

#endif
