/* log.c - leveled logging and the access log (see log.h). */
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "uri.h"

#define LINE_MAX_BYTES 4096

static enum sc_log_level current_level = SC_LOG_INFO;
static bool json_lines;
static char *log_path; /* NULL: stderr */
static int log_fd = STDERR_FILENO;
static pthread_mutex_t reopen_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void sc_log_set_level(enum sc_log_level level)
{
    current_level = level;
}

void sc_log_set_json(bool json)
{
    json_lines = json;
}

int sc_log_parse_level(const char *name)
{
    for (int i = 0; i <= SC_LOG_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

int sc_log_open(const char *path)
{
    if (path == NULL)
        return 0;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return errno;
    char *copy = strdup(path);
    if (copy == NULL) {
        close(fd);
        return ENOMEM;
    }
    free(log_path);
    log_path = copy;
    log_fd = fd;
    return 0;
}

int sc_log_reopen(void)
{
    if (log_path == NULL)
        return 0;
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return errno;
    /* dup2 swaps the file under log_fd atomically: writers never see a closed descriptor. */
    pthread_mutex_lock(&reopen_mu);
    dup2(fd, log_fd);
    pthread_mutex_unlock(&reopen_mu);
    close(fd);
    return 0;
}

/* Writes a finished line with one write(2), so lines from threads never interleave. */
static void emit(const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = write(log_fd, line, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        line += n;
        len -= (size_t)n;
    }
}

/* Appends to a line buffer, never past its end. */
struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct line *l, const char *fmt, ...)
{
    if (l->len >= sizeof(l->buf) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->len += (size_t)n < sizeof(l->buf) - l->len ? (size_t)n : sizeof(l->buf) - 1 - l->len;
}

/* Appends n bytes as they are, never past the line's end. */
static void put_bytes(struct line *l, const char *p, size_t n)
{
    if (l->len >= sizeof(l->buf) - 1)
        return;
    size_t room = sizeof(l->buf) - 1 - l->len;
    if (n > room)
        n = room;
    memcpy(l->buf + l->len, p, n);
    l->len += n;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 if none starts there. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = (s[0] & 0xE0) == 0xC0   ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    if (n == 0 || (n == 2 && s[0] < 0xC2))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Appends s as a JSON string; control characters escaped, invalid UTF-8 as U+FFFD. */
static void put_json_string(struct line *l, const char *s)
{
    put(l, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        if (*p == '"' || *p == '\\') {
            put(l, "\\%c", *p++);
        } else if (*p < 0x20) {
            put(l, "\\u%04x", *p++);
        } else {
            size_t n = utf8_len(p);
            if (n == 0) {
                put(l, "\\ufffd");
                p++;
            } else {
                put_bytes(l, (const char *)p, n);
                p += n;
            }
        }
    }
    put(l, "\"");
}

/* Appends s for a text line: control characters as \xNN, so a key cannot forge a line. */
static void put_text(struct line *l, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            put(l, "\\x%02x", *p);
        else
            put_bytes(l, (const char *)p, 1);
    }
}

static void put_time(struct line *l)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    put(l, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
        tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

static void finish(struct line *l)
{
    if (l->len > sizeof(l->buf) - 2)
        l->len = sizeof(l->buf) - 2; /* a cut line still ends in a newline */
    l->buf[l->len++] = '\n';
    emit(l->buf, l->len);
}

/* ---- redaction ------------------------------------------------------------------ */

/* Parameters whose values sign or carry credentials, in a query or an Authorization header. */
static const char *const secret_names[] = {
    "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token",
    "Signature",       "Credential",       "AWSAccessKeyId",
};

#define REDACTED "REDACTED"

/* A name may start the message or follow one of these (query, header list, quotes). */
static bool starts_name(char prev)
{
    return strchr(" \t?&;,\"'(/", prev) != NULL;
}

/* A value ends at one of these, or at the end of the message. */
static bool ends_value(char c)
{
    return c == '\0' || strchr("& \t,;\"')", c) != NULL;
}

/* True if the len bytes at p, percent-escapes decoded, are want in any case. */
static bool name_is(const char *p, size_t len, const char *want)
{
    size_t i = 0;
    for (; *want != '\0'; want++) {
        if (i == len)
            return false;
        int c = (unsigned char)p[i++];
        if (c == '%' && i + 1 < len && uri_hex_digit(p[i]) >= 0 && uri_hex_digit(p[i + 1]) >= 0) {
            c = uri_hex_digit(p[i]) << 4 | uri_hex_digit(p[i + 1]);
            i += 2;
        }
        if (tolower(c) != tolower((unsigned char)*want))
            return false;
    }
    return i == len;
}

/* Length of the "name=" at p when name is a secret parameter, else 0. */
static size_t secret_name_len(const char *p)
{
    size_t len = strcspn(p, "= \t&;,\"'?/()");
    if (len == 0 || p[len] != '=')
        return 0;
    for (size_t i = 0; i < sizeof(secret_names) / sizeof(secret_names[0]); i++)
        if (name_is(p, len, secret_names[i]))
            return len + 1;
    return 0;
}

size_t sc_log_redact(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; in[i] != '\0' && n + 1 < cap;) {
        size_t name = i == 0 || starts_name(in[i - 1]) ? secret_name_len(in + i) : 0;
        if (name == 0) {
            out[n++] = in[i++];
            continue;
        }
        for (size_t k = 0; k < name && n + 1 < cap; k++)
            out[n++] = in[i++];
        for (const char *r = REDACTED; *r != '\0' && n + 1 < cap; r++)
            out[n++] = *r;
        while (!ends_value(in[i]))
            i++;
    }
    out[n] = '\0';
    return n;
}

void sc_log(enum sc_log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    char raw[1024], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    sc_log_redact(raw, msg, sizeof(msg)); /* here, so that no caller can forget it */
    struct line l = {.len = 0};
    if (json_lines) {
        put(&l, "{\"time\":\"");
        put_time(&l);
        put(&l, "\",\"level\":\"%s\",\"msg\":", level_names[level]);
        put_json_string(&l, msg);
        put(&l, "}");
    } else {
        put_time(&l);
        put(&l, " %-5s ", level_names[level]);
        put_text(&l, msg);
    }
    finish(&l);
}

void sc_log_access(const struct sc_access *a)
{
    struct line l = {.len = 0};
    if (json_lines) {
        put(&l, "{\"time\":\"");
        put_time(&l);
        put(&l, "\",\"level\":\"info\",\"type\":\"access\",\"request_id\":");
        put_json_string(&l, a->request_id);
        put(&l, ",\"client\":");
        put_json_string(&l, a->client);
        put(&l, ",\"method\":");
        put_json_string(&l, a->method);
        put(&l, ",\"bucket\":");
        put_json_string(&l, a->bucket);
        put(&l, ",\"key\":");
        put_json_string(&l, a->key);
        put(&l, ",\"status\":%u,\"bytes\":%llu,\"cache\":", a->status,
            (unsigned long long)a->bytes);
        if (a->cache)
            put_json_string(&l, a->cache);
        else
            put(&l, "null");
        put(&l, ",\"identity\":");
        if (a->identity)
            put_json_string(&l, a->identity);
        else
            put(&l, "null");
        put(&l, ",\"duration_ms\":%.3f}", a->seconds * 1000.0);
    } else {
        put_time(&l);
        put(&l, " info  access %s ", a->request_id ? a->request_id : "-");
        put_text(&l, a->client ? a->client : "-");
        put(&l, " ");
        put_text(&l, a->method ? a->method : "-");
        put(&l, " /");
        put_text(&l, a->bucket);
        put(&l, "/");
        put_text(&l, a->key);
        put(&l, " %u %llu %s %.3fms", a->status, (unsigned long long)a->bytes,
            a->cache ? a->cache : "-", a->seconds * 1000.0);
        if (a->identity) {
            put(&l, " identity=");
            put_text(&l, a->identity);
        }
    }
    finish(&l);
}
