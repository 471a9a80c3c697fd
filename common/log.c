/* log.c - leveled logging to stderr (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum sc_log_level current_level = SC_LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void sc_log_set_level(enum sc_log_level level)
{
    current_level = level;
}

int sc_log_parse_level(const char *name)
{
    for (int i = 0; i <= SC_LOG_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

void sc_log(enum sc_log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    /* One fprintf per line so concurrent threads never interleave within a line. */
    fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s %s\n", tm.tm_year + 1900,
            tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
            level_names[level], line);
}
