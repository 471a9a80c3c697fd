/*
 * log.h - leveled logging, one line per event: human-readable text or one JSON
 * object per line, to stderr or a file that SIGHUP reopens; plus an optional
 * access log line per request.
 *
 * Configured once at start-up, before threads start. Never pass secrets (keys,
 * signatures, tokens) to these functions; as a last guard, sc_log() redacts the
 * values of signature parameters (sc_log_redact) in every message.
 */
#ifndef SC_LOG_H
#define SC_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sc_log_level { SC_LOG_ERROR, SC_LOG_WARN, SC_LOG_INFO, SC_LOG_DEBUG };

void sc_log_set_level(enum sc_log_level level);
/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int sc_log_parse_level(const char *name);

/* @brief Chooses JSON lines (true) or text (false, the default). */
void sc_log_set_json(bool json);

/*
 * @brief Sends the log to path (appending, created 0640) instead of stderr; NULL means
 * stderr. Reopening the same path later (sc_log_reopen) follows log rotation.
 * @return 0, or an errno value (the log stays where it was).
 */
int sc_log_open(const char *path);

/* @brief Reopens the log file after rotation (SIGHUP); a no-op for stderr. Returns 0 or errno. */
int sc_log_reopen(void);

void sc_log(enum sc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * @brief Copies in to out with the value of every X-Amz-Signature, X-Amz-Credential,
 * X-Amz-Security-Token, Signature, Credential and AWSAccessKeyId parameter replaced by
 * "REDACTED". A parameter is "name=value" where the name (percent-escapes decoded, any
 * case) starts the text or follows one of ` \t?&;,"'(/`, and the value runs to the next
 * one of `& \t,;"')` or the end: presigned URLs and Authorization headers alike.
 * @param[out] out receives at most cap - 1 bytes and a NUL (cap > 0).
 * @return the length written to out.
 */
size_t sc_log_redact(const char *in, char *out, size_t cap);

/* One request, as the access log records it. Strings may be NULL. */
struct sc_access {
    const char *request_id;
    const char *client; /* the client's address */
    const char *method;
    const char *bucket;
    const char *key;
    unsigned status;      /* 0: the client left before an answer */
    uint64_t bytes;       /* object body bytes sent */
    const char *cache;    /* HIT, MISS, BYPASS or NULL */
    const char *identity; /* the client's access key, "anonymous", or NULL (not verified) */
    double seconds;
};

/* @brief Writes one access log line (at level info, whatever --log-level says). */
void sc_log_access(const struct sc_access *a);

#define sc_err(...)   sc_log(SC_LOG_ERROR, __VA_ARGS__)
#define sc_warn(...)  sc_log(SC_LOG_WARN, __VA_ARGS__)
#define sc_info(...)  sc_log(SC_LOG_INFO, __VA_ARGS__)
#define sc_debug(...) sc_log(SC_LOG_DEBUG, __VA_ARGS__)

#endif
