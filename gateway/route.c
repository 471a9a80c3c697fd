/* route.c - where a request goes (see route.h). */
#include "route.h"

#include <string.h>

enum gw_step gw_route_gate(bool probe, bool draining, bool have_target)
{
    if (probe)
        return GW_STEP_PROBE;
    if (draining)
        return GW_STEP_UNAVAILABLE;
    return have_target ? GW_STEP_ROUTE : GW_STEP_PARSE;
}

enum gw_step gw_route_kind(enum s3_req_kind kind)
{
    switch (kind) {
    case S3_REQ_ADMIN:
        return GW_STEP_ADMIN;
    case S3_REQ_GET_OBJECT:
    case S3_REQ_HEAD_OBJECT:
        return GW_STEP_LOOKUP;
    case S3_REQ_PASS:
        return GW_STEP_PROXY;
    }
    return GW_STEP_UNROUTABLE;
}

enum gw_body_fate gw_route_body(enum s3_req_kind kind, const char *method)
{
    bool read = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (kind == S3_REQ_PASS && !read)
        return GW_BODY_FORWARD;
    return kind == S3_REQ_ADMIN ? GW_BODY_COLLECT : GW_BODY_DRAIN;
}
