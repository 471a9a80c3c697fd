/*
 * watch.c - following a manifest until it is warm (see ctl.h): poll its
 * progress every half second; on a terminal rewrite one line with '\r',
 * otherwise print a plain line when something changed, at most every 2 s;
 * end with a summary line that names the state, and the failures.
 *
 * The gateway may restart or drop a connection while a long warm-up runs,
 * so being unreachable is tolerated for RETRY_WINDOW seconds; a manifest
 * that disappears (404) was canceled.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "ctl.h"

#define POLL_MS        500
#define PLAIN_INTERVAL 2.0  /* seconds between plain lines */
#define RETRY_WINDOW   30.0 /* seconds of an unreachable gateway tolerated while watching */

struct watch {
    struct ctl_ctx *c;
    const char *id;
    char *path;
    double start;
    json_t *latest;               /* the last progress object, for a summary when we stop early */
    struct prog_snapshot printed; /* last plain line's counts (its strings are not kept) */
    bool has_printed;
    double printed_at;
    size_t shown;             /* columns of the terminal line now on screen */
    double unreachable_since; /* < 0 while the gateway answers */
};

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL); /* a signal ends it early: the loop then looks at the flag */
}

static unsigned term_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    long n = cols ? strtol(cols, NULL, 10) : 0;
    return n > 0 && n < 10000 ? (unsigned)n : 80;
}

/* Replaces the terminal line with line (padding over a longer previous one). */
static void tty_show(struct watch *w, const char *line)
{
    size_t n = prog_width(line);
    fprintf(w->c->out, "\r%s", line);
    for (size_t i = n; i < w->shown; i++)
        fputc(' ', w->c->out);
    fflush(w->c->out);
    w->shown = n;
}

/* Ends the terminal line, so other output starts on a fresh one. */
static void tty_end(struct watch *w)
{
    if (w->shown > 0) {
        fputc('\n', w->c->out);
        fflush(w->c->out);
    }
    w->shown = 0;
}

static void show(struct watch *w, const struct prog_snapshot *s)
{
    char line[PROG_LINE_MAX];
    if (w->c->args->quiet)
        return;
    if (w->c->tty) {
        tty_show(w, prog_line(line, sizeof(line), s, true, term_width()));
        return;
    }
    double t = sc_now_seconds();
    if (!prog_plain_due(w->has_printed ? &w->printed : NULL, w->printed_at, s, t, PLAIN_INTERVAL))
        return;
    fprintf(w->c->out, "%s\n", prog_line(line, sizeof(line), s, false, 0));
    fflush(w->c->out);
    w->printed = *s;
    w->printed.id = w->printed.state_name = w->printed.name = w->printed.bucket = NULL;
    w->printed.form = w->printed.prefix = w->printed.error = NULL;
    w->has_printed = true;
    w->printed_at = t;
}

void ctl_print_failures(const json_t *progress, uint64_t failed, FILE *to)
{
    char key[PROG_LINE_MAX], reason[PROG_LINE_MAX];
    json_t *list = json_object_get(progress, "failures");
    size_t listed = json_is_array(list) ? json_array_size(list) : 0;
    if (failed == 0 && listed == 0)
        return;
    fprintf(to, "%llu object%s could not be fetched:\n", (unsigned long long)failed,
            failed == 1 ? "" : "s");
    for (size_t i = 0; i < listed; i++) {
        json_t *f = json_array_get(list, i);
        fprintf(to, "  %s: %s\n", prog_sanitize(key, sizeof(key), ctl_jstr(f, "key")),
                prog_sanitize(reason, sizeof(reason), ctl_jstr(f, "reason")));
    }
    if (failed > listed)
        fprintf(to, "  ... and %llu more (the gateway keeps the first %zu)\n",
                (unsigned long long)(failed - listed), listed);
}

/* The summary line (replacing the terminal line), then the failures on stderr. */
static void finish(struct watch *w, const struct prog_snapshot *s, const json_t *o)
{
    char line[PROG_LINE_MAX];
    prog_summary(line, sizeof(line), s, sc_now_seconds() - w->start);
    if (w->c->tty && w->shown > 0) {
        tty_show(w, line);
        tty_end(w);
    } else {
        fprintf(w->c->out, "%s\n", line);
        fflush(w->c->out);
    }
    ctl_print_failures(o, s->objects_failed, w->c->err);
}

/* Where the manifest stood when we stopped early, for the user's record. */
static void stopped(struct watch *w, const char *why)
{
    char line[PROG_LINE_MAX];
    struct prog_snapshot s;
    tty_end(w);
    if (w->latest != NULL) {
        ctl_snapshot_parse(w->latest, &s);
        fprintf(w->c->out, "%s\n",
                prog_summary(line, sizeof(line), &s, sc_now_seconds() - w->start));
        fflush(w->c->out);
    }
    fprintf(w->c->err,
            "s3cachectl: %s; manifest %s keeps warming in the gateway ('s3cachectl cancel %s' "
            "stops it)\n",
            why, w->id, w->id);
}

/* A failed poll: true to keep watching (gateway briefly unreachable), else *ex is set. */
static bool poll_failed(struct watch *w, sc_code rc, const struct ctl_api_error *e,
                        enum ctl_exit *ex)
{
    char line[PROG_LINE_MAX];
    if (rc == SC_EINVAL && e->status == 404 && !e->s3_xml) {
        tty_end(w);
        fprintf(w->c->out, "%s canceled: the manifest is gone from the gateway\n", w->id);
        *ex = CTL_EXIT_CANCELED;
        return false;
    }
    bool transient = rc == SC_EUPSTREAM || rc == SC_ETIMEOUT;
    double t = sc_now_seconds();
    if (transient && w->unreachable_since < 0)
        w->unreachable_since = t;
    if (transient && t - w->unreachable_since < RETRY_WINDOW) {
        snprintf(line, sizeof(line), "%s: the gateway does not answer; retrying for %.0f s", w->id,
                 RETRY_WINDOW);
        if (w->c->tty)
            tty_show(w, line);
        else if (w->unreachable_since == t)
            fprintf(w->c->out, "%s\n", line);
        return true;
    }
    if (rc == SC_ECANCELED) {
        stopped(w, "stopped watching");
        *ex = CTL_EXIT_INTERRUPTED;
        return false;
    }
    tty_end(w);
    ctl_api_report(w->c, rc, e);
    *ex = ctl_api_exit(rc);
    return false;
}

/* One poll; true while the manifest is not final and nothing went wrong. */
static bool poll_once(struct watch *w, enum ctl_exit *ex)
{
    struct ctl_api_error e;
    struct prog_snapshot s;
    json_t *o = NULL;
    sc_code rc = ctl_api_call(w->c, "GET", w->path, NULL, 0, &o, &e);
    if (rc != SC_OK)
        return poll_failed(w, rc, &e, ex);
    w->unreachable_since = -1;
    json_decref(w->latest);
    w->latest = o;
    ctl_snapshot_parse(o, &s);
    if (!prog_state_is_final(s.state)) {
        show(w, &s);
        return true;
    }
    finish(w, &s, o);
    *ex = ctl_snapshot_exit(&s);
    return false;
}

enum ctl_exit ctl_watch(struct ctl_ctx *c, const char *id)
{
    struct watch w = {.c = c, .id = id, .start = sc_now_seconds(), .unreachable_since = -1};
    enum ctl_exit ex = CTL_EXIT_ERROR;
    char why[96];
    if (ctl_manifest_path(id, "", &w.path) != SC_OK) {
        fprintf(c->err, "s3cachectl: out of memory\n");
        return CTL_EXIT_ERROR;
    }
    while (poll_once(&w, &ex)) {
        double waited = sc_now_seconds() - w.start;
        if (!*c->interrupted && c->args->wait_timeout > 0 && waited >= c->args->wait_timeout) {
            snprintf(why, sizeof(why), "not warm after %.0f s (--wait-timeout)", waited);
            stopped(&w, why);
            ex = CTL_EXIT_TIMEOUT;
            break;
        }
        if (!*c->interrupted)
            sleep_ms(POLL_MS);
        if (*c->interrupted) {
            stopped(&w, "stopped watching");
            ex = CTL_EXIT_INTERRUPTED;
            break;
        }
    }
    json_decref(w.latest);
    free(w.path);
    return ex;
}
