/*
 * progress.c - s3cachectl's text formatting (see progress.h): pure functions
 * from numbers and a manifest snapshot to bounded strings.
 */
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define BAR_MIN 12 /* a narrower bar is left out */
#define BAR_MAX 32

static const char *const state_names[] = {
    [PROG_UNKNOWN] = "unknown",   [PROG_LISTING] = "listing", [PROG_WARMING] = "warming",
    [PROG_WARM] = "warm",         [PROG_PLANNED] = "planned", [PROG_DONE] = "done",
    [PROG_CANCELED] = "canceled", [PROG_FAILED] = "failed",
};

#define N_STATES (sizeof(state_names) / sizeof(state_names[0]))

/* A bounded string being appended to; len never passes cap - 1. */
struct sbuf {
    char *p;
    size_t cap;
    size_t len;
};

static struct sbuf sbuf_init(char *p, size_t cap)
{
    if (cap > 0)
        p[0] = '\0';
    return (struct sbuf){p, cap, 0};
}

static void sbuf_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sbuf_add(struct sbuf *b, const char *fmt, ...)
{
    if (b->cap == 0 || b->len + 1 >= b->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    b->len = b->len + (size_t)n < b->cap ? b->len + (size_t)n : b->cap - 1;
}

enum prog_state prog_state_parse(const char *name)
{
    for (size_t i = 1; name != NULL && i < N_STATES; i++)
        if (strcmp(name, state_names[i]) == 0)
            return (enum prog_state)i;
    return PROG_UNKNOWN;
}

bool prog_state_is_final(enum prog_state s)
{
    return s == PROG_WARM || s == PROG_PLANNED || s == PROG_DONE || s == PROG_CANCELED ||
           s == PROG_FAILED;
}

char *prog_bytes(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    const unsigned last = sizeof(units) / sizeof(units[0]) - 1;
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024 && u < last) {
        v /= 1024;
        u++;
    }
    if (v >= 1023.95 && u < last) { /* would print as "1024.0" */
        v /= 1024;
        u++;
    }
    snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

char *prog_count(char *buf, size_t cap, uint64_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
    struct sbuf b = sbuf_init(buf, cap);
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            sbuf_add(&b, ",");
        sbuf_add(&b, "%c", digits[i]);
    }
    return buf;
}

char *prog_duration(char *buf, size_t cap, double seconds)
{
    if (!isfinite(seconds) || seconds < 0 || seconds > 1e10) {
        snprintf(buf, cap, "--");
        return buf;
    }
    unsigned long long s = (unsigned long long)(seconds + 0.5);
    if (s < 60)
        snprintf(buf, cap, "%llus", s);
    else if (s < 3600)
        snprintf(buf, cap, "%llum%02llus", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, cap, "%lluh%02llum", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, cap, "%llud%02lluh", s / 86400, s % 86400 / 3600);
    return buf;
}

char *prog_rate(char *buf, size_t cap, double bytes_per_s)
{
    char b[PROG_FIELD_MAX];
    if (!isfinite(bytes_per_s) || bytes_per_s <= 0 || bytes_per_s > 1.8e19) {
        snprintf(buf, cap, "--");
        return buf;
    }
    snprintf(buf, cap, "%s/s", prog_bytes(b, sizeof(b), (uint64_t)bytes_per_s));
    return buf;
}

char *prog_bar(char *buf, size_t cap, double fraction, unsigned width)
{
    struct sbuf b = sbuf_init(buf, cap);
    if (width < 3)
        return buf;
    if (!(fraction > 0)) /* also NaN */
        fraction = 0;
    if (fraction > 1)
        fraction = 1;
    unsigned inner = width - 2;
    unsigned full = (unsigned)(fraction * inner);
    sbuf_add(&b, "[");
    for (unsigned i = 0; i < inner; i++)
        sbuf_add(&b, "%c", i < full ? '=' : (i == full && fraction > 0) ? '>' : ' ');
    sbuf_add(&b, "]");
    return buf;
}

unsigned prog_percent(const struct prog_snapshot *s)
{
    if (!s->total_known || s->objects_total == 0)
        return 0;
    if (s->objects_cached >= s->objects_total)
        return 100;
    return (unsigned)(s->objects_cached * 100 / s->objects_total);
}

double prog_eta(const struct prog_snapshot *s)
{
    if (!s->total_known || !(s->rate_objects_per_s > 0) || !isfinite(s->rate_objects_per_s))
        return s->eta_seconds;
    uint64_t done = s->objects_cached + s->objects_failed;
    uint64_t left = s->objects_total > done ? s->objects_total - done : 0;
    return (double)left / s->rate_objects_per_s;
}

size_t prog_width(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* Length of the C1 control character (U+0080..U+009F, as UTF-8) at p, or 0. */
static size_t c1_len(const unsigned char *p)
{
    return p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f ? 2 : 0;
}

char *prog_sanitize(char *buf, size_t cap, const char *s)
{
    struct sbuf b = sbuf_init(buf, cap);
    if (s == NULL) {
        sbuf_add(&b, "-");
        return buf;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        size_t c1 = c1_len(p);
        if (*p < 0x20 || *p == 0x7f || c1 > 0) {
            sbuf_add(&b, "?");
            p += c1 > 0 ? c1 - 1 : 0;
        } else {
            sbuf_add(&b, "%c", *p);
        }
    }
    return buf;
}

/* "450/1000 objects" ("?" for an unknown total). */
static void add_objects(struct sbuf *b, const struct prog_snapshot *s)
{
    if (s->total_known)
        sbuf_add(b, "%llu/%llu objects", (unsigned long long)s->objects_cached,
                 (unsigned long long)s->objects_total);
    else
        sbuf_add(b, "%llu/? objects", (unsigned long long)s->objects_cached);
}

/* "1.2 MiB", or "1.2 MiB/3.0 MiB" when more bytes are known than cached. */
static void add_bytes(struct sbuf *b, const struct prog_snapshot *s)
{
    char cached[PROG_FIELD_MAX], total[PROG_FIELD_MAX];
    prog_bytes(cached, sizeof(cached), s->bytes_cached);
    if (s->bytes_total > s->bytes_cached)
        sbuf_add(b, "%s/%s", cached, prog_bytes(total, sizeof(total), s->bytes_total));
    else
        sbuf_add(b, "%s", cached);
}

/* The parts of a progress line after the counts, most expendable last. */
enum {
    PART_FAILED = 1u << 0,
    PART_ETA = 1u << 1,
    PART_BYTES = 1u << 2,
    PART_RATE = 1u << 3,
    PART_ALL = (1u << 4) - 1,
};

/* Everything after the state (and the bar): percent, counts, then the parts asked for. */
static void add_numbers(struct sbuf *b, const struct prog_snapshot *s, unsigned parts)
{
    char rate[PROG_FIELD_MAX], eta[PROG_FIELD_MAX];
    sbuf_add(b, "%3u%%  ", prog_percent(s));
    add_objects(b, s);
    if (parts & PART_BYTES) {
        sbuf_add(b, "  ");
        add_bytes(b, s);
    }
    if ((parts & PART_RATE) && s->rate_bytes_per_s > 0)
        sbuf_add(b, "  %s", prog_rate(rate, sizeof(rate), s->rate_bytes_per_s));
    if ((parts & PART_ETA) && !prog_state_is_final(s->state))
        sbuf_add(b, "  ETA %s", prog_duration(eta, sizeof(eta), prog_eta(s)));
    if ((parts & PART_FAILED) || s->objects_failed > 0)
        sbuf_add(b, "  %llu failed", (unsigned long long)s->objects_failed);
}

/*
 * The terminal line's numbers (into r) and bar width (0: none) for width
 * columns: the bar gets at least BAR_MIN, found by leaving out rate, bytes,
 * a zero failure count and the ETA, in that order.
 */
static unsigned fit_terminal(struct sbuf *r, const struct prog_snapshot *s, size_t head,
                             unsigned width)
{
    static const unsigned tries[] = {PART_ALL, PART_ALL & ~PART_RATE,
                                     PART_ALL & ~(PART_RATE | PART_BYTES), PART_ETA, 0};
    long avail = 0;
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
        r->len = 0;
        r->p[0] = '\0';
        add_numbers(r, s, tries[i]);
        avail = (long)width - 1 - (long)head - 2 - (long)r->len;
        if (avail >= BAR_MIN)
            return avail > BAR_MAX ? BAR_MAX : (unsigned)avail;
    }
    return 0; /* the smallest line, without a bar; prog_line cuts it */
}

/* Cuts buf to at most max columns, at a UTF-8 character boundary. */
static void cut_at(char *buf, size_t max)
{
    size_t cols = 0;
    for (size_t i = 0; buf[i] != '\0'; i++) {
        if (((unsigned char)buf[i] & 0xc0) == 0x80)
            continue;
        if (cols++ == max) {
            buf[i] = '\0';
            return;
        }
    }
}

char *prog_line(char *buf, size_t cap, const struct prog_snapshot *s, bool tty, unsigned width)
{
    char id[PROG_FIELD_MAX], state[PROG_FIELD_MAX], bucket[PROG_LINE_MAX / 4],
        prefix[PROG_LINE_MAX / 4], rest[PROG_LINE_MAX], bar[BAR_MAX + 1];
    struct sbuf b = sbuf_init(buf, cap);
    struct sbuf r = sbuf_init(rest, sizeof(rest));
    prog_sanitize(id, sizeof(id), s->id);
    prog_sanitize(state, sizeof(state), s->state_name);
    if (s->state == PROG_LISTING) {
        sbuf_add(&b, "%s listing s3://%s/%s ...", id,
                 prog_sanitize(bucket, sizeof(bucket), s->bucket),
                 s->prefix ? prog_sanitize(prefix, sizeof(prefix), s->prefix) : "");
    } else if (s->state == PROG_PLANNED) {
        sbuf_add(&b, "%s planned: prefetch is off", id);
    } else {
        unsigned bar_width = 0;
        if (tty)
            bar_width = fit_terminal(&r, s, prog_width(id) + 1 + prog_width(state), width);
        else
            add_numbers(&r, s, PART_ALL);
        prog_bar(bar, sizeof(bar), (double)prog_percent(s) / 100.0, bar_width);
        if (bar[0] != '\0')
            sbuf_add(&b, "%s %s %s %s", id, state, bar, rest);
        else
            sbuf_add(&b, "%s %s %s", id, state, rest);
    }
    if (tty && width > 1)
        cut_at(buf, width - 1);
    return buf;
}

/* ", 3 failed" when any failed. */
static void add_failed(struct sbuf *b, const struct prog_snapshot *s)
{
    if (s->objects_failed > 0)
        sbuf_add(b, ", %llu failed", (unsigned long long)s->objects_failed);
}

char *prog_summary(char *buf, size_t cap, const struct prog_snapshot *s, double elapsed)
{
    char id[PROG_FIELD_MAX], state[PROG_FIELD_MAX], bytes[PROG_FIELD_MAX], took[PROG_FIELD_MAX],
        why[PROG_LINE_MAX / 2];
    struct sbuf b = sbuf_init(buf, cap);
    prog_sanitize(id, sizeof(id), s->id);
    prog_sanitize(state, sizeof(state), s->state_name);
    prog_bytes(bytes, sizeof(bytes), s->bytes_cached);
    switch (s->state) {
    case PROG_PLANNED:
        sbuf_add(&b, "%s planned: prefetch is off; the eviction policy plans by it", id);
        return buf;
    case PROG_FAILED:
        sbuf_add(&b, "%s failed: %s", id,
                 s->error ? prog_sanitize(why, sizeof(why), s->error) : "no reason given");
        return buf;
    case PROG_CANCELED:
        sbuf_add(&b, "%s canceled: ", id);
        add_objects(&b, s);
        sbuf_add(&b, " were cached (%s); they stay cached", bytes);
        return buf;
    case PROG_DONE:
        sbuf_add(&b, "%s done: the trainer passed the end of the plan; ", id);
        add_objects(&b, s);
        sbuf_add(&b, " cached (%s)", bytes);
        add_failed(&b, s);
        return buf;
    default:
        break;
    }
    sbuf_add(&b, "%s %s: ", id, state);
    add_objects(&b, s);
    sbuf_add(&b, " cached (%s)", bytes);
    if (elapsed >= 0)
        sbuf_add(&b, " in %s", prog_duration(took, sizeof(took), elapsed));
    add_failed(&b, s);
    if (s->state == PROG_WARM && s->total_known && s->fits > 0 && s->fits < s->objects_total)
        sbuf_add(&b, "; %llu of %llu objects fit in the cache ahead of the trainer",
                 (unsigned long long)s->fits, (unsigned long long)s->objects_total);
    return buf;
}

bool prog_plain_due(const struct prog_snapshot *last, double last_at,
                    const struct prog_snapshot *cur, double now, double interval)
{
    if (last == NULL || last->state != cur->state)
        return true;
    bool changed = last->objects_cached != cur->objects_cached ||
                   last->objects_failed != cur->objects_failed ||
                   last->objects_total != cur->objects_total ||
                   last->total_known != cur->total_known;
    return changed && now - last_at >= interval;
}
