/*
 * progress.c - the progress line on stderr: on a terminal one line rewritten
 * with '\r' five times a second; otherwise (a log file, a pipe) a plain line
 * every 10 seconds; nothing with --quiet.
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "trainsim.h"

#define TTY_EVERY_NS   200000000ll
#define PLAIN_EVERY_NS 10000000000ll

void ts_progress_init(struct ts_progress *p, bool quiet)
{
    memset(p, 0, sizeof(*p));
    p->quiet = quiet;
    p->tty = isatty(STDERR_FILENO) == 1;
    p->last_ns = sc_now_ns();
}

void ts_progress_show(struct ts_progress *p, bool force, const char *fmt, ...)
{
    if (p->quiet)
        return;
    int64_t now = sc_now_ns();
    if (!force && now - p->last_ns < (p->tty ? TTY_EVERY_NS : PLAIN_EVERY_NS))
        return;
    p->last_ns = now;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (!p->tty) {
        fprintf(stderr, "%s\n", line);
        return;
    }
    size_t len = strlen(line);
    int pad = p->last_len > len ? (int)(p->last_len - len) : 0;
    fprintf(stderr, "\r%s%*s", line, pad, "");
    fflush(stderr);
    p->last_len = len;
}

void ts_progress_done(struct ts_progress *p)
{
    if (!p->quiet && p->tty && p->last_len > 0)
        fputc('\n', stderr);
    p->last_len = 0;
}
