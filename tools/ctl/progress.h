/*
 * progress.h - pure text formatting for s3cachectl: sizes, counts, durations,
 * rates, the progress bar, a manifest's one-line progress and final summary,
 * and when a plain (not a terminal) progress line is due.
 *
 * Nothing here does I/O, reads the clock or allocates: every formatter writes
 * into the caller's buffer, always NUL-terminated (cut to fit), and returns it.
 */
#ifndef CTL_PROGRESS_H
#define CTL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROG_FIELD_MAX 48  /* room for any single formatted value */
#define PROG_LINE_MAX  512 /* room for a progress line or a summary */

/* A manifest's state, as docs/manifests.md names them. */
enum prog_state {
    PROG_UNKNOWN, /* a name this version does not know */
    PROG_LISTING,
    PROG_WARMING,
    PROG_WARM,
    PROG_PLANNED,
    PROG_DONE,
    PROG_CANCELED,
    PROG_FAILED,
};

/*
 * One manifest progress object from the gateway, read defensively (see
 * ctl_snapshot_parse() in ctl.h). Strings are borrowed from the JSON reply and
 * valid only while it lives; each may be NULL.
 */
struct prog_snapshot {
    const char *id;
    const char *state_name; /* as the gateway spelled it */
    enum prog_state state;
    const char *name;
    const char *bucket;
    const char *form;   /* "keys", "epochs" or "prefix" */
    const char *prefix; /* prefix manifests only */
    const char *error;  /* why it failed */
    bool total_known;   /* objects_total is known (not while listing) */
    uint64_t objects_total;
    uint64_t objects_cached;
    uint64_t objects_in_flight;
    uint64_t objects_failed;
    uint64_t fits; /* objects that fit in the cache ahead of the trainer */
    uint64_t bytes_total;
    uint64_t bytes_cached;
    uint64_t epochs;
    uint64_t accesses;
    uint64_t position;
    double rate_bytes_per_s;
    double rate_objects_per_s;
    double eta_seconds; /* < 0 when unknown */
};

/* @brief The state named name (NULL gives PROG_UNKNOWN). Cannot fail. */
enum prog_state prog_state_parse(const char *name);

/*
 * @brief Whether a manifest in state s stops changing on its own, so a
 *        watcher is done: warm, planned, done, canceled, failed.
 * @note "warm" goes back to "warming" as the trainer moves on; a watcher
 *       waiting for the cache to be warm stops at the first "warm".
 */
bool prog_state_is_final(enum prog_state s);

/* @brief Bytes in binary units: "0 B", "512 B", "1.5 KiB", "12.0 GiB". */
char *prog_bytes(char *buf, size_t cap, uint64_t bytes);

/* @brief A count with thousands separators: "1,234,567". */
char *prog_count(char *buf, size_t cap, uint64_t n);

/*
 * @brief A duration rounded to the second: "42s", "3m05s", "1h02m", "2d03h";
 *        "--" when seconds is negative or not finite (unknown).
 */
char *prog_duration(char *buf, size_t cap, double seconds);

/* @brief A transfer rate: "2.1 MiB/s"; "--" when not positive or not finite. */
char *prog_rate(char *buf, size_t cap, double bytes_per_s);

/*
 * @brief A bar of width characters, brackets included: "[=====>    ]".
 * @param[in] fraction done, clamped to 0..1 (NaN counts as 0).
 * @param[in] width at least 3; smaller widths give "".
 */
char *prog_bar(char *buf, size_t cap, double fraction, unsigned width);

/* @brief Percent done, 0..100, rounded down (100 only when all are cached). */
unsigned prog_percent(const struct prog_snapshot *s);

/*
 * @brief Seconds until every object is cached or failed, at the mean fetch
 *        rate so far; the gateway's eta_seconds when the rate or the total is
 *        not known yet (< 0: unknown).
 * @note The gateway's own estimate counts only the objects its prefetcher
 *       has reached, which under a low --prefetch-concurrency is the few in
 *       flight; this one counts the whole plan.
 */
double prog_eta(const struct prog_snapshot *s);

/* @brief Terminal columns of UTF-8 text s: its characters (bytes not continuing one). */
size_t prog_width(const char *s);

/* @brief A copy of s (NULL gives "-") with control bytes replaced by '?'. */
char *prog_sanitize(char *buf, size_t cap, const char *s);

/*
 * @brief One progress line, without a line end.
 * @param[in] tty true for the updating terminal line (with a bar, cut to
 *            width - 1 columns so it never wraps), false for a plain log line.
 * @param[in] width terminal columns (ignored when tty is false).
 */
char *prog_line(char *buf, size_t cap, const struct prog_snapshot *s, bool tty, unsigned width);

/*
 * @brief The final line of a watch, saying the state first: "m3 warm: 50/50
 *        objects cached (200.0 KiB) in 2s".
 * @param[in] elapsed seconds the watch took (negative: not shown).
 */
char *prog_summary(char *buf, size_t cap, const struct prog_snapshot *s, double elapsed);

/*
 * @brief Whether a plain progress line is due: always for the first one
 *        (last NULL) or a state change; for changed counts (cached, failed,
 *        total) only once interval seconds have passed since the last line.
 * @note Reads only the states and counts of last and cur, never their strings.
 */
bool prog_plain_due(const struct prog_snapshot *last, double last_at,
                    const struct prog_snapshot *cur, double now, double interval);

#endif
