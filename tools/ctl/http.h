/*
 * http.h - s3cachectl's HTTP client: one libcurl easy handle, reused so
 * polls keep their connection, sending JSON to one base URL.
 *
 * The bearer token is copied in, sent only as an Authorization header, never
 * logged (the --debug lines show method, URL, status and size), and wiped
 * when the client is closed. Redirects are not followed. curl_global_init()
 * is the caller's.
 */
#ifndef CTL_HTTP_H
#define CTL_HTTP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "../../common/sc_err.h"

typedef struct ctl_http ctl_http;

struct ctl_http_config {
    const char *base_url;              /* scheme://host[:port][/path], no trailing '/' */
    const char *token;                 /* bearer token, or NULL */
    long timeout_ms;                   /* whole request; 0 for none */
    long connect_timeout_ms;           /* 0 for curl's default */
    bool insecure;                     /* do not verify TLS certificates */
    size_t max_reply;                  /* larger reply bodies fail with SC_ETOOBIG; 0: no bound */
    FILE *debug;                       /* one line per request and reply, or NULL */
    volatile sig_atomic_t *abort_flag; /* once set, transfers stop (SC_ECANCELED); may be NULL */
};

/* One reply; body is NUL-terminated (the NUL not counted in len). */
struct ctl_http_reply {
    long status;
    char *body;
    size_t len;
};

/*
 * @brief A client for cfg (copied; the strings too).
 * @param[out] out owned by the caller; ctl_http_close() frees it.
 * @return SC_OK, SC_ENOMEM, SC_EIO (curl would not start).
 */
sc_code ctl_http_open(const struct ctl_http_config *cfg, ctl_http **out);

/*
 * @brief Sends method to base_url + path with body (NULL for none, sent as
 *        application/json) and collects the reply.
 * @param[out] reply filled on SC_OK, whatever the status; free with ctl_http_reply_free().
 * @param[out] err curl's reason on failure.
 * @return SC_OK; SC_EUPSTREAM (cannot connect, resolve, or the connection
 *         broke), SC_ETIMEOUT, SC_ECANCELED (abort_flag), SC_ETOOBIG,
 *         SC_ENOMEM, SC_EIO (anything else curl reports).
 */
sc_code ctl_http_request(ctl_http *h, const char *method, const char *path, const char *body,
                         size_t len, struct ctl_http_reply *reply, char *err, size_t err_len);

void ctl_http_reply_free(struct ctl_http_reply *reply);

/* Frees h and wipes its copy of the token; h may be NULL. */
void ctl_http_close(ctl_http *h);

#endif
