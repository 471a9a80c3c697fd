/*
 * httpdate.c - parsing and formatting HTTP dates (see httpdate.h).
 *
 * The parser walks the string with a small cursor and fills a struct tm by
 * hand (strptime would depend on the locale); timegm() turns it into seconds
 * without looking at TZ.
 */
#include "httpdate.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const day_short[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const day_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                        "Thursday", "Friday", "Saturday"};
static const char *const month_short[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct cursor {
    const char *p;
    const char *end;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool expect(struct cursor *c, char ch)
{
    if (c->p >= c->end || *c->p != ch)
        return false;
    c->p++;
    return true;
}

/* Reads exactly n decimal digits. */
static bool read_digits(struct cursor *c, int n, int *out)
{
    int v = 0;
    if (c->end - c->p < n)
        return false;
    for (int i = 0; i < n; i++) {
        if (!is_digit(c->p[i]))
            return false;
        v = v * 10 + (c->p[i] - '0');
    }
    c->p += n;
    *out = v;
    return true;
}

/* Reads a run of letters and finds it (case-insensitively) in names[0..n). */
static bool read_name(struct cursor *c, const char *const *names, int n, int *idx)
{
    const char *start = c->p;
    while (c->p < c->end && is_alpha(*c->p))
        c->p++;
    size_t len = (size_t)(c->p - start);
    for (int i = 0; i < n; i++) {
        if (strlen(names[i]) == len && strncasecmp(start, names[i], len) == 0) {
            *idx = i;
            return true;
        }
    }
    return false;
}

static bool read_gmt(struct cursor *c)
{
    if (c->end - c->p < 3 || strncasecmp(c->p, "GMT", 3) != 0)
        return false;
    c->p += 3;
    return true;
}

/* time-of-day = hour ":" minute ":" second, each two digits. */
static bool read_time(struct cursor *c, struct tm *tm)
{
    return read_digits(c, 2, &tm->tm_hour) && expect(c, ':') && read_digits(c, 2, &tm->tm_min) &&
           expect(c, ':') && read_digits(c, 2, &tm->tm_sec);
}

static bool read_month(struct cursor *c, struct tm *tm)
{
    return read_name(c, month_short, 12, &tm->tm_mon);
}

/* ", 06 Nov 1994 08:49:37 GMT" after a three-letter day name. */
static bool parse_imf(struct cursor *c, struct tm *tm)
{
    int year;
    if (!(expect(c, ',') && expect(c, ' ') && read_digits(c, 2, &tm->tm_mday) && expect(c, ' ') &&
          read_month(c, tm) && expect(c, ' ') && read_digits(c, 4, &year) && expect(c, ' ') &&
          read_time(c, tm) && expect(c, ' ') && read_gmt(c)))
        return false;
    tm->tm_year = year - 1900;
    return true;
}

/* ", 06-Nov-94 08:49:37 GMT" after a full day name. */
static bool parse_rfc850(struct cursor *c, struct tm *tm)
{
    int yy;
    if (!(expect(c, ',') && expect(c, ' ') && read_digits(c, 2, &tm->tm_mday) && expect(c, '-') &&
          read_month(c, tm) && expect(c, '-') && read_digits(c, 2, &yy) && expect(c, ' ') &&
          read_time(c, tm) && expect(c, ' ') && read_gmt(c)))
        return false;
    tm->tm_year = yy < 70 ? yy + 100 : yy;
    return true;
}

/* " Nov  6 08:49:37 1994" after a three-letter day name; the day is "06" or " 6". */
static bool parse_asctime(struct cursor *c, struct tm *tm)
{
    int year;
    if (!(expect(c, ' ') && read_month(c, tm) && expect(c, ' ')))
        return false;
    if (expect(c, ' ')) {
        if (!read_digits(c, 1, &tm->tm_mday))
            return false;
    } else if (!read_digits(c, 2, &tm->tm_mday)) {
        return false;
    }
    if (!(expect(c, ' ') && read_time(c, tm) && expect(c, ' ') && read_digits(c, 4, &year)))
        return false;
    tm->tm_year = year - 1900;
    return true;
}

static bool is_leap(int year)
{
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static bool fields_in_range(const struct tm *tm)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int year = tm->tm_year + 1900;
    int last = mdays[tm->tm_mon] + (tm->tm_mon == 1 && is_leap(year) ? 1 : 0);
    return year >= 1900 && tm->tm_mday >= 1 && tm->tm_mday <= last && tm->tm_hour <= 23 &&
           tm->tm_min <= 59 && tm->tm_sec <= 60;
}

/*
 * Seconds since the epoch of tm (fields_in_range), UTC: what timegm() gives, without the time
 * zone lock glibc takes in it (every hit parses the Last-Modified it has cached, on every HTTP
 * thread). Days from the civil date as in H. Hinnant's days_from_civil; a leap second (60) is
 * the next minute's first, as timegm() normalizes it.
 */
static time_t utc_seconds(const struct tm *tm)
{
    int64_t y = (int64_t)tm->tm_year + 1900, m = tm->tm_mon + 1;
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                             /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + tm->tm_mday - 1; /* from March 1 */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468; /* 719468: 0000-03-01 to 1970-01-01 */
    return (time_t)(days * 86400 + tm->tm_hour * 3600 + tm->tm_min * 60 + tm->tm_sec);
}

static void trim(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
    while (c->end > c->p && (c->end[-1] == ' ' || c->end[-1] == '\t'))
        c->end--;
}

/* Dispatches on the day name: "Sun," is IMF-fixdate, "Sunday," RFC 850, "Sun " asctime. */
static bool parse_any(struct cursor *c, struct tm *tm)
{
    struct cursor probe = *c;
    int wday;
    if (read_name(&probe, day_short, 7, &wday)) {
        *c = probe;
        if (c->p < c->end && *c->p == ',')
            return parse_imf(c, tm);
        return parse_asctime(c, tm);
    }
    return read_name(c, day_long, 7, &wday) && parse_rfc850(c, tm);
}

sc_code httpdate_parse(const char *s, time_t *out)
{
    if (s == NULL)
        return SC_EINVAL;
    struct cursor c = {s, s + strlen(s)};
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    trim(&c);
    if (!parse_any(&c, &tm) || c.p != c.end || !fields_in_range(&tm))
        return SC_EINVAL;
    *out = utc_seconds(&tm);
    return SC_OK;
}

sc_code httpdate_format(time_t t, char buf[HTTPDATE_LEN])
{
    struct tm tm;
    buf[0] = '\0';
    if (gmtime_r(&t, &tm) == NULL)
        return SC_EINVAL;
    int year = tm.tm_year + 1900;
    if (year < 1900 || year > 9999)
        return SC_EINVAL;
    int n =
        snprintf(buf, HTTPDATE_LEN, "%s, %02d %s %04d %02d:%02d:%02d GMT", day_short[tm.tm_wday],
                 tm.tm_mday, month_short[tm.tm_mon], year, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (n != HTTPDATE_LEN - 1) {
        buf[0] = '\0';
        return SC_EINVAL;
    }
    return SC_OK;
}
