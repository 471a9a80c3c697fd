/*
 * step.h - the steps of a request and what a step returns: the vocabulary of the dispatcher
 * (server.c runs the step table; its head comment draws the path). Values only, so that the
 * pure decisions (route.h) need nothing else of the gateway.
 */
#ifndef GW_STEP_H
#define GW_STEP_H

#include <microhttpd.h>

/*
 * The steps of a request (server.c runs them; its head comment draws the path). A step
 * is one function, run by the dispatcher; it returns what comes next (struct gw_next).
 */
enum gw_step {
    GW_STEP_HEAD,         /* first call, headers in: framing check; a body? identify now */
    GW_STEP_PARSE,        /* the raw target into bucket, key and kind (server.c) */
    GW_STEP_AUTHENTICATE, /* who sent it; the identity upstream requests carry (auth.c) */
    GW_STEP_BODY,         /* a body is announced: forwarded, collected or drained (server.c) */
    GW_STEP_GATE,         /* each later call: body bytes, then probe, draining, parse (server.c) */
    GW_STEP_ROUTE,        /* by kind: admin, object read, pass-through (server.c) */
    GW_STEP_UNAVAILABLE,  /* shutting down: 503 (server.c) */
    GW_STEP_UNROUTABLE,   /* a kind no step takes: 500 (server.c) */
    GW_STEP_PROBE,        /* /healthz, /readyz, /metrics (probe.c) */
    GW_STEP_ADMIN,        /* /_s3cached/... (admin/admin.c) */
    GW_STEP_LOOKUP,       /* GET/HEAD Object: the cached copy, if any and usable (serve.c) */
    GW_STEP_AUTHZ_ANSWER, /* resumed: the upstream said whether the identity may read (authz.c) */
    GW_STEP_REVAL_ANSWER, /* resumed: the upstream said whether the copy changed (revalidate.c) */
    GW_STEP_MISS,         /* join or start the object's fill (serve.c) */
    GW_STEP_FILL_HEAD,    /* the fill's head (or a range's beside it): answer from it (serve.c) */
    GW_STEP_BLOCK_META,   /* resumed: the size of an object a range misses on (blocks.c) */
    GW_STEP_BLOCKS,       /* a large object: answer block by block (blocks.c) */
    GW_STEP_PROXY,        /* forward the request upstream as it came (proxy.c) */
    GW_STEP_UPLOAD,       /* stream the request body upstream (proxy.c) */
    GW_STEP_PASS_HEAD,    /* the forwarded request's head: relay the answer (proxy.c) */
    GW_STEP_RESPONDED,    /* a response is queued: terminal */
    GW_STEP_COUNT
};

/* What a step asks the dispatcher to do (server.c alone acts on it). */
enum gw_verdict {
    GW_VERDICT_GO,    /* run step now */
    GW_VERDICT_WAIT,  /* return to libmicrohttpd; the next call (body bytes, a resume) runs step */
    GW_VERDICT_DONE,  /* a response is queued */
    GW_VERDICT_CLOSE, /* no response could be queued: libmicrohttpd closes the connection */
};

struct gw_next {
    enum gw_verdict verdict;
    enum gw_step step; /* for GW_GO and GW_WAIT */
};

/* The step results: go on to step s now; wait for the next call, then run s; answered;
 * close. */
#define GW_NEXT(s) ((struct gw_next){GW_VERDICT_GO, (s)})
#define GW_WAIT(s) ((struct gw_next){GW_VERDICT_WAIT, (s)})
#define GW_DONE    ((struct gw_next){GW_VERDICT_DONE, GW_STEP_RESPONDED})
#define GW_CLOSE   ((struct gw_next){GW_VERDICT_CLOSE, GW_STEP_RESPONDED})
/* What a step returns after queueing a response (respond.h): queued, or the connection closes. */
#define GW_SENT(ret) ((ret) == MHD_YES ? GW_DONE : GW_CLOSE)

#endif
