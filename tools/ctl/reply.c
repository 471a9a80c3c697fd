/*
 * reply.c - the gateway's replies, read defensively (see ctl.h): an error
 * reply's reason (admin JSON, S3 XML or plain text), fields that may be
 * missing, null or of the wrong type, and a manifest's progress object.
 * Nothing here trusts the reply's shape.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

#define EXCERPT_MAX 200 /* bytes of a plain-text error body shown */

const char *ctl_jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

bool ctl_jreal(const json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return false;
    *out = json_number_value(v);
    return true;
}

bool ctl_juint(const json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    double d = json_is_real(v) ? json_real_value(v) : -1;
    if (!isfinite(d) || d < 0 || d >= 1.8e19)
        return false;
    *out = (uint64_t)d;
    return true;
}

/* ---- error replies --------------------------------------------------------- */

/* The text between <tag> and </tag> in body, entities decoded; false if absent. */
static bool xml_field(const char *body, size_t len, const char *tag, char *out, size_t cap)
{
    static const struct {
        const char *name;
        char c;
    } entities[] = {
        {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char open[32], close[32];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *start = memmem(body, len, open, strlen(open));
    if (start == NULL)
        return false;
    start += strlen(open);
    const char *end = memmem(start, len - (size_t)(start - body), close, strlen(close));
    if (end == NULL)
        return false;
    size_t n = 0;
    for (const char *p = start; p < end && n + 1 < cap; p++) {
        char c = *p;
        for (size_t i = 0; c == '&' && i < sizeof(entities) / sizeof(entities[0]); i++) {
            size_t el = strlen(entities[i].name);
            if ((size_t)(end - p) >= el && memcmp(p, entities[i].name, el) == 0) {
                c = entities[i].c;
                p += el - 1;
                break;
            }
        }
        out[n++] = c;
    }
    out[n] = '\0';
    return true;
}

/* "Code: message" from {"error", "message"}; false if body is not such an object. */
static bool json_reason(const char *body, size_t len, char *out, size_t cap)
{
    json_t *o = json_loadb(body, len, 0, NULL);
    const char *code = ctl_jstr(o, "error");
    const char *msg = ctl_jstr(o, "message");
    bool found = code != NULL || msg != NULL;
    if (code && msg)
        snprintf(out, cap, "%s: %s", code, msg);
    else if (found)
        snprintf(out, cap, "%s", code ? code : msg);
    json_decref(o);
    return found;
}

static bool xml_reason(const char *body, size_t len, char *out, size_t cap)
{
    char code[128], msg[CTL_ERR_MAX / 2];
    bool has_code = xml_field(body, len, "Code", code, sizeof(code));
    bool has_msg = xml_field(body, len, "Message", msg, sizeof(msg));
    if (has_code && has_msg)
        snprintf(out, cap, "%s: %s", code, msg);
    else if (has_code || has_msg)
        snprintf(out, cap, "%s", has_code ? code : msg);
    return has_code || has_msg;
}

/* The body's first non-blank line, cut to EXCERPT_MAX bytes; false if there is none. */
static bool text_reason(const char *body, size_t len, char *out, size_t cap)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
        i++;
    size_t n = 0;
    while (i + n < len && body[i + n] != '\n' && body[i + n] != '\r' && body[i + n] != '\0' &&
           n < EXCERPT_MAX)
        n++;
    if (n == 0)
        return false;
    snprintf(out, cap, "%.*s%s", (int)n, body + i, n == EXCERPT_MAX ? "..." : "");
    return true;
}

void ctl_reply_message(long status, const char *body, size_t len, char *out, size_t cap,
                       bool *s3_xml)
{
    char raw[CTL_ERR_MAX];
    *s3_xml = false;
    if (body == NULL)
        len = 0;
    if (len > 0 && json_reason(body, len, raw, sizeof(raw))) {
        /* the admin API's own error */
    } else if (len > 0 && xml_reason(body, len, raw, sizeof(raw))) {
        *s3_xml = true;
    } else if (len == 0 || !text_reason(body, len, raw, sizeof(raw))) {
        snprintf(raw, sizeof(raw), "HTTP %ld with no explanation", status);
    }
    prog_sanitize(out, cap, raw);
}

/* ---- progress objects -------------------------------------------------------- */

void ctl_snapshot_parse(const json_t *o, struct prog_snapshot *s)
{
    memset(s, 0, sizeof(*s));
    s->eta_seconds = -1;
    s->id = ctl_jstr(o, "id");
    s->state_name = ctl_jstr(o, "state");
    s->state = prog_state_parse(s->state_name);
    s->name = ctl_jstr(o, "name");
    s->bucket = ctl_jstr(o, "bucket");
    s->form = ctl_jstr(o, "form");
    s->prefix = ctl_jstr(o, "prefix");
    s->error = ctl_jstr(o, "error");
    s->total_known = ctl_juint(o, "objects_total", &s->objects_total);
    ctl_juint(o, "objects_cached", &s->objects_cached);
    ctl_juint(o, "objects_in_flight", &s->objects_in_flight);
    ctl_juint(o, "objects_failed", &s->objects_failed);
    ctl_juint(o, "fits", &s->fits);
    ctl_juint(o, "bytes_total", &s->bytes_total);
    ctl_juint(o, "bytes_cached", &s->bytes_cached);
    ctl_juint(o, "epochs", &s->epochs);
    ctl_juint(o, "accesses", &s->accesses);
    ctl_juint(o, "position", &s->position);
    if (!ctl_jreal(o, "rate_bytes_per_s", &s->rate_bytes_per_s) || s->rate_bytes_per_s < 0)
        s->rate_bytes_per_s = 0;
    if (!ctl_jreal(o, "rate_objects_per_s", &s->rate_objects_per_s) || s->rate_objects_per_s < 0)
        s->rate_objects_per_s = 0;
    if (!ctl_jreal(o, "eta_seconds", &s->eta_seconds) || s->eta_seconds < 0)
        s->eta_seconds = -1;
    if (s->state_name == NULL)
        s->state_name = "unknown";
    if (s->id == NULL)
        s->id = "?";
}

enum ctl_exit ctl_snapshot_exit(const struct prog_snapshot *s)
{
    switch (s->state) {
    case PROG_WARM:
    case PROG_DONE:
        return s->objects_failed > 0 ? CTL_EXIT_PARTIAL : CTL_EXIT_OK;
    case PROG_PLANNED:
        return CTL_EXIT_OK;
    case PROG_FAILED:
        return CTL_EXIT_FAILED;
    case PROG_CANCELED:
        return CTL_EXIT_CANCELED;
    default:
        return CTL_EXIT_ERROR;
    }
}
