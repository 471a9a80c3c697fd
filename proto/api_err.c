/*
 * api_err.c - admin API error codes, their HTTP statuses, and the JSON reply
 * body {"error", "message"}.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_err.h"

static const struct {
    const char *name;
    unsigned status;
} codes[] = {
    [API_OK] = {"OK", 200},
    [API_INVALID_JSON] = {"InvalidJSON", 400},
    [API_UNKNOWN_FIELD] = {"UnknownField", 400},
    [API_MISSING_FIELD] = {"MissingField", 400},
    [API_INVALID_FIELD] = {"InvalidField", 400},
    [API_TOO_LARGE] = {"TooLarge", 413},
    [API_NOT_FOUND] = {"NotFound", 404},
    [API_METHOD_NOT_ALLOWED] = {"MethodNotAllowed", 405},
    [API_UNAUTHORIZED] = {"Unauthorized", 401},
    [API_FORBIDDEN] = {"AccessDenied", 403},
    [API_BUSY] = {"SlowDown", 503},
};

#define NCODES (sizeof(codes) / sizeof(codes[0]))

const char *api_err_name(enum api_err_code code)
{
    return (size_t)code < NCODES ? codes[code].name : "InternalError";
}

unsigned api_err_status(enum api_err_code code)
{
    return (size_t)code < NCODES ? codes[code].status : 500;
}

void api_err_set(struct api_err *e, enum api_err_code code, const char *fmt, ...)
{
    if (e == NULL)
        return;
    va_list ap;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

/* Replaces every byte outside printable ASCII with '?' (for a message that is not UTF-8). */
static void ascii_only(char *s)
{
    for (; *s != '\0'; s++) {
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
    }
}

char *api_err_json(const struct api_err *e)
{
    char msg[API_ERR_MSG_MAX];
    char *text = NULL;
    json_t *m = json_string(e->message);
    if (m == NULL) { /* not valid UTF-8 (cut mid-character): degrade to ASCII */
        snprintf(msg, sizeof(msg), "%s", e->message);
        ascii_only(msg);
        m = json_string(msg);
    }
    json_t *o = json_object();
    if (m == NULL || o == NULL)
        goto out;
    if (json_object_set_new(o, "error", json_string(api_err_name(e->code))) != 0 ||
        json_object_set(o, "message", m) != 0)
        goto out;
    text = json_dumps(o, JSON_COMPACT);
out:
    json_decref(m);
    json_decref(o);
    return text;
}
