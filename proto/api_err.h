/*
 * api_err.h - the errors of the admin API (/_s3cached/...): a code, the HTTP
 * status it maps to, and a precise message for the client.
 *
 * Replies carry {"error": "<Code>", "message": "<text>"}. Parsers in gateway/
 * (plan.c, importance_req.c) fill a struct api_err; the HTTP layer renders it
 * with api_err_json() and sends it with api_err_status().
 */
#ifndef API_ERR_H
#define API_ERR_H

#define API_ERR_MSG_MAX 512 /* bytes of message, NUL included; longer text is cut */

enum api_err_code {
    API_OK = 0,
    API_INVALID_JSON,       /* "InvalidJSON": not JSON, too deep, not the expected shape */
    API_UNKNOWN_FIELD,      /* "UnknownField" */
    API_MISSING_FIELD,      /* "MissingField" */
    API_INVALID_FIELD,      /* "InvalidField": wrong type, out of range, duplicate key... */
    API_TOO_LARGE,          /* "TooLarge": body, key count or access count over a limit */
    API_NOT_FOUND,          /* "NotFound" */
    API_METHOD_NOT_ALLOWED, /* "MethodNotAllowed" */
    API_UNAUTHORIZED,       /* "Unauthorized": no or wrong admin token (401) */
    API_FORBIDDEN,          /* "AccessDenied": the admin API is not open to this client (403) */
    API_BUSY,               /* "SlowDown": too much work queued; retry later (503) */
};

struct api_err {
    enum api_err_code code;
    char message[API_ERR_MSG_MAX];
};

/* @brief The code's name as sent in "error" ("InvalidJSON", ...); static storage, never NULL. */
const char *api_err_name(enum api_err_code code);

/* @brief The HTTP status for code: 400, 413 (TooLarge), 404, 405, 401, 403, 503 (SlowDown);
 * 200 for API_OK. */
unsigned api_err_status(enum api_err_code code);

/*
 * @brief Sets e to code and a printf-formatted message (cut to fit).
 * @param[out] e may be NULL (nothing is written).
 */
void api_err_set(struct api_err *e, enum api_err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * @brief Renders e as {"error": ..., "message": ...}.
 * @return a NUL-terminated string the caller frees with free(), or NULL when
 *         out of memory.
 */
char *api_err_json(const struct api_err *e);

#endif
