/*
 * ctl.h - the pieces of s3cachectl, the command line for the gateway's admin
 * API (docs/s3cachectl.md): the parsed command line, the endpoint and token
 * resolution, reading the gateway's replies, building a manifest, the watch
 * loop, tables, and one function per subcommand.
 *
 * Fallible functions return an sc_code and, where a person needs to know
 * why, write a message into an err buffer. Subcommands return the process's
 * exit status (enum ctl_exit) after printing what went wrong.
 */
#ifndef CTL_H
#define CTL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "../../common/sc_err.h"
#include "http.h"
#include "progress.h"

#define CTL_VERSION          "0.1.0"
#define CTL_DEFAULT_ENDPOINT "http://localhost:8080"
#define CTL_URL_MAX          2048
#define CTL_ERR_MAX          1024
#define CTL_UNSET            UINT64_MAX  /* an unsigned option that was not given */
#define CTL_MANIFEST_MAX     (64u << 20) /* the gateway's manifest body limit */
#define CTL_IMPORTANCE_MAX   (8u << 20)  /* the gateway's importance body limit */

/* The process's exit status; documented in docs/s3cachectl.md. */
enum ctl_exit {
    CTL_EXIT_OK = 0,
    CTL_EXIT_ERROR = 1,       /* the gateway refused the request, an odd reply, a local I/O error */
    CTL_EXIT_USAGE = 2,       /* bad command line */
    CTL_EXIT_UNREACHABLE = 3, /* no answer from the endpoint (refused, unresolvable, timed out) */
    CTL_EXIT_FAILED = 4,      /* the manifest failed (see its error) */
    CTL_EXIT_CANCELED = 5,    /* the manifest was canceled (or is gone) while waiting */
    CTL_EXIT_PARTIAL = 6,     /* warm, but some objects could not be fetched */
    CTL_EXIT_TIMEOUT = 7,     /* --wait-timeout passed before the manifest was warm */
    CTL_EXIT_INTERRUPTED = 130, /* Ctrl-C while waiting; the manifest keeps warming */
};

enum ctl_cmd {
    CTL_CMD_NONE,
    CTL_CMD_WARM,
    CTL_CMD_STATUS,
    CTL_CMD_MANIFESTS,
    CTL_CMD_SHOW,
    CTL_CMD_CANCEL,
    CTL_CMD_ORDER,
    CTL_CMD_IMPORTANCE,
    CTL_CMD_COUNT
};

/*
 * The command line, parsed. Strings point into argv. Unsigned options are
 * CTL_UNSET and tri-state flags -1 when not given.
 */
struct ctl_args {
    enum ctl_cmd cmd;
    bool help;
    bool version;
    /* global */
    const char *endpoint_url;
    const char *admin_token;
    double timeout; /* seconds per request; 0 for none */
    bool no_verify_ssl;
    bool debug;
    /* output and waiting */
    bool json;
    bool quiet;
    bool no_wait;
    bool wait;           /* show --wait */
    double wait_timeout; /* seconds; 0 waits for ever */
    /* positional: FILE|- (warm, importance) or ID (show, cancel, order) */
    const char *input;
    const char *id;
    /* warm */
    const char *prefix;
    const char *bucket;
    const char *keys_from;
    const char *name;
    uint64_t epochs;
    uint64_t seed;
    uint64_t world_size;
    uint64_t rank;
    int shuffle;   /* -1, 0 (--no-shuffle) or 1 (--shuffle) */
    int drop_last; /* -1, 0 or 1 */
    /* order */
    uint64_t epoch;
};

/* Where requests go, and which setting said so. */
struct ctl_endpoint {
    char url[CTL_URL_MAX]; /* scheme://host[:port][/path], no trailing '/' */
    const char *source;    /* "--endpoint-url", an environment variable's name, or "default" */
};

/* getenv(3), or a stand-in for tests. */
typedef char *(*ctl_getenv_fn)(const char *name);

/* What every subcommand works with. */
struct ctl_ctx {
    const struct ctl_args *args;
    const struct ctl_endpoint *endpoint;
    ctl_http *http;
    FILE *out;
    FILE *err;
    bool tty;                           /* out is a terminal: progress updates one line */
    volatile sig_atomic_t *interrupted; /* set by SIGINT (Ctrl-C) */
};

/* ---- cli.c: the command line ------------------------------------------------ */

/* @brief The subcommand's name ("warm"...), or "" for CTL_CMD_NONE. */
const char *ctl_cmd_name(enum ctl_cmd cmd);

/*
 * @brief Parses argv (global options may come before or after the subcommand).
 * @param[out] a filled on success; strings point into argv.
 * @param[out] err why the line is wrong, on SC_EINVAL.
 * @return SC_OK or SC_EINVAL. "--help" anywhere and "help [CMD]" set a->help
 *         and skip the checks of required arguments.
 */
sc_code ctl_parse_args(int argc, char **argv, struct ctl_args *a, char *err, size_t err_len);

/* @brief Option lines of cmd's --help (CTL_CMD_NONE: the global options). */
void ctl_print_options(FILE *to, enum ctl_cmd cmd);

/* ---- endpoint.c ------------------------------------------------------------ */

/*
 * @brief Picks the endpoint like the AWS CLI: flag (--endpoint-url), else
 *        AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (both skipped when
 *        AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is "true"), else
 *        CTL_DEFAULT_ENDPOINT. Empty values count as unset.
 * @return SC_OK, or SC_EINVAL (no http:// or https:// scheme, no host, a query,
 *         fragment or user info, too long) with err naming the setting.
 */
sc_code ctl_resolve_endpoint(const char *flag, ctl_getenv_fn env, struct ctl_endpoint *out,
                             char *err, size_t err_len);

/*
 * @brief The admin token: flag (--admin-token), else S3CACHED_ADMIN_TOKEN,
 *        else none (*out NULL).
 * @return SC_OK, or SC_EINVAL for a token with control characters. The
 *         message never contains the token.
 */
sc_code ctl_resolve_token(const char *flag, ctl_getenv_fn env, const char **out, char *err,
                          size_t err_len);

/* ---- help.c ---------------------------------------------------------------- */

/* @brief The tool's --help (cmd CTL_CMD_NONE) or a subcommand's. */
void ctl_usage(FILE *to, enum ctl_cmd cmd);

/* ---- reply.c: the gateway's replies, read defensively ------------------------ */

/*
 * @brief The reason in an error reply: "Code: message" from the admin API's
 *        JSON or an S3 XML error, else the body's first line, else "HTTP <status>".
 * @param[out] s3_xml set when the body was an S3 XML error (not the admin API).
 * @note Control characters become '?'; the text is cut to fit out.
 */
void ctl_reply_message(long status, const char *body, size_t len, char *out, size_t cap,
                       bool *s3_xml);

/* @brief o[key] if it is a string, else NULL (o may be NULL or not an object). */
const char *ctl_jstr(const json_t *o, const char *key);

/*
 * @brief o[key] as a count: an integer or a finite real, at least 0.
 * @return false (and *out untouched) for a missing, null or odd value.
 */
bool ctl_juint(const json_t *o, const char *key, uint64_t *out);

/* @brief o[key] as a finite number; false for a missing, null or odd value. */
bool ctl_jreal(const json_t *o, const char *key, double *out);

/*
 * @brief Reads a manifest progress object into s, with defaults for every
 *        missing or odd field (unknown state, counts 0, ETA unknown).
 * @note s borrows o's strings: valid while o lives. Cannot fail.
 */
void ctl_snapshot_parse(const json_t *o, struct prog_snapshot *s);

/* @brief The exit status for a watch that ended at snapshot s. */
enum ctl_exit ctl_snapshot_exit(const struct prog_snapshot *s);

/* ---- api.c: calling the admin API ------------------------------------------ */

/* Why a call failed, for ctl_api_report(). */
struct ctl_api_error {
    long status; /* the HTTP status, 0 if none came */
    bool s3_xml; /* the endpoint answered like a plain S3 server */
    char message[CTL_ERR_MAX];
};

/*
 * @brief One request to /_s3cached/<path>; prints nothing.
 * @param[out] reply the JSON object of a 2xx reply, owned by the caller.
 * @return SC_OK; SC_EUPSTREAM (could not reach the endpoint) or SC_ETIMEOUT
 *         (no reply in time); SC_EINVAL (an error status: e->status and the
 *         server's message); SC_EMISMATCH (a 2xx that is not a JSON object);
 *         SC_ECANCELED (interrupted); SC_ETOOBIG; SC_ENOMEM.
 */
sc_code ctl_api_call(struct ctl_ctx *c, const char *method, const char *path, const char *body,
                     size_t len, json_t **reply, struct ctl_api_error *e);

/* @brief Prints why a call failed to c->err, with a hint where one helps. */
void ctl_api_report(struct ctl_ctx *c, sc_code rc, const struct ctl_api_error *e);

/* @brief ctl_api_call(), then ctl_api_report() on failure. */
sc_code ctl_api(struct ctl_ctx *c, const char *method, const char *path, const char *body,
                size_t len, json_t **reply);

/* @brief The exit status for a failed call's code. */
enum ctl_exit ctl_api_exit(sc_code rc);

/*
 * @brief "manifests/<id, percent-encoded><suffix>" for the API paths of one manifest.
 * @param[out] out malloc'd, owned by the caller.
 * @return SC_OK or SC_ENOMEM.
 */
sc_code ctl_manifest_path(const char *id, const char *suffix, char **out);

/* @brief Prints o to c->out as indented JSON (the --json output); SC_OK or SC_ENOMEM. */
sc_code ctl_print_json(struct ctl_ctx *c, const json_t *o);

/* ---- input.c --------------------------------------------------------------- */

/*
 * @brief Reads a whole file ("-" is stdin) of at most max bytes.
 * @param[out] data malloc'd and NUL-terminated (the NUL not counted in *len),
 *             owned by the caller.
 * @return SC_OK, SC_EIO (err has the reason), SC_ETOOBIG, SC_ENOMEM.
 */
sc_code ctl_read_input(const char *path, size_t max, char **data, size_t *len, char *err,
                       size_t err_len);

/* ---- body.c: warm's manifest ---------------------------------------------- */

/*
 * @brief Splits "s3://BUCKET/PREFIX" into bucket and prefix ("" when absent).
 * @param[out] prefix points into uri.
 * @return SC_OK, or SC_EINVAL (not s3://, empty or too long a bucket).
 */
sc_code ctl_s3_uri_parse(const char *uri, char *bucket, size_t bucket_cap, const char **prefix);

/*
 * @brief The body to POST for warm: the manifest FILE as given (with any
 *        sampling options, --name or --bucket merged in), or one built from
 *        --prefix, or from --keys-from lines (data).
 * @param[in] data the FILE's or --keys-from's bytes; NULL for --prefix.
 * @param[out] body malloc'd, owned by the caller.
 * @return SC_OK, SC_EINVAL (err says what is wrong with the input), SC_ENOMEM.
 */
sc_code ctl_manifest_body(const struct ctl_args *a, const char *data, size_t len, char **body,
                          size_t *body_len, char *err, size_t err_len);

/* ---- table.c: aligned columns --------------------------------------------- */

struct ctl_table {
    size_t cols;
    const char *align; /* one 'l' or 'r' per column */
    size_t rows;
    size_t cap;
    char **cells; /* rows * cols, each malloc'd */
};

/* @brief An empty table; align has one 'l' or 'r' per column. Cannot fail. */
void ctl_table_init(struct ctl_table *t, size_t cols, const char *align);

/*
 * @brief Appends a row of t->cols cells (NULL or "" prints as "-"), copied
 *        with control characters replaced.
 * @return SC_OK or SC_ENOMEM.
 */
sc_code ctl_table_add(struct ctl_table *t, const char *const *cells);

/* @brief Prints t: columns two spaces apart, no trailing spaces. */
void ctl_table_print(const struct ctl_table *t, FILE *to);

void ctl_table_free(struct ctl_table *t);

/* ---- watch.c -------------------------------------------------------------- */

/*
 * @brief Follows manifest id until its state is final, --wait-timeout passes
 *        or the user interrupts: an updating line on a terminal, plain lines
 *        at most every 2 s otherwise (none with --quiet); then the summary
 *        line and any failures.
 * @return the exit status.
 */
enum ctl_exit ctl_watch(struct ctl_ctx *c, const char *id);

/*
 * @brief Prints the "failures" of a progress object to to: "  KEY: REASON"
 *        each, after a line saying how many; nothing when none failed.
 */
void ctl_print_failures(const json_t *progress, uint64_t failed, FILE *to);

/* ---- the subcommands (cmd_*.c) ------------------------------------------- */

enum ctl_exit ctl_cmd_warm(struct ctl_ctx *c);
enum ctl_exit ctl_cmd_status(struct ctl_ctx *c);
enum ctl_exit ctl_cmd_manifests(struct ctl_ctx *c);
enum ctl_exit ctl_cmd_show(struct ctl_ctx *c);
enum ctl_exit ctl_cmd_cancel(struct ctl_ctx *c);
enum ctl_exit ctl_cmd_order(struct ctl_ctx *c);
enum ctl_exit ctl_cmd_importance(struct ctl_ctx *c);

#endif
