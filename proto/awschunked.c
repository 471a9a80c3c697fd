/*
 * awschunked.c - the aws-chunked decoder (see awschunked.h).
 *
 * A byte-driven state machine. Header and trailer lines are gathered into
 * d->line (bounded) and parsed once their CRLF arrives; chunk data is copied
 * straight from input to output in the largest run that fits.
 */
#include "awschunked.h"

#include "../common/uri.h"

#include <string.h>
#include <strings.h>

enum state {
    ST_SIZE_LINE, /* reading "hex[;ext]" up to CRLF */
    ST_DATA,      /* copying d->remaining payload bytes */
    ST_DATA_CR,   /* expecting the CR after a chunk's data */
    ST_DATA_LF,   /* expecting the LF after a chunk's data */
    ST_TRAILER,   /* reading trailer lines; an empty one ends the body */
    ST_DONE,      /* the body is complete */
    ST_FAILED,    /* an error was returned; stays failed */
};

void awschunked_init(struct awschunked *d, uint64_t decoded_length)
{
    memset(d, 0, sizeof(*d));
    d->state = ST_SIZE_LINE;
    d->declared = decoded_length;
}

bool awschunked_done(const struct awschunked *d)
{
    return d->state == ST_DONE;
}

uint64_t awschunked_total(const struct awschunked *d)
{
    return d->total;
}

const char *awschunked_trailer(const struct awschunked *d, const char *name)
{
    for (size_t i = 0; i < d->ntrailers; i++) {
        if (strcasecmp(d->trailers[i].name, name) == 0)
            return d->trailers[i].value;
    }
    return NULL;
}

/* Visible ASCII and spaces/tabs: what a chunk extension or trailer value may hold. */
static bool is_text(char c)
{
    unsigned char u = (unsigned char)c;
    return (u >= 0x20 && u < 0x7f) || u == '\t';
}

/* RFC 9110 tchar. */
static bool is_token_char(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Parses "hex[;ext]" in line[0..len) into *size. */
static sc_code parse_size_line(const char *line, size_t len, uint64_t *size)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < len && uri_hex_digit(line[i]) >= 0; i++) {
        if (v > (UINT64_MAX >> 4))
            return SC_EINVAL;
        v = (v << 4) | (uint64_t)uri_hex_digit(line[i]);
    }
    if (i == 0 || (i < len && line[i] != ';'))
        return SC_EINVAL;
    for (; i < len; i++) {
        if (!is_text(line[i]))
            return SC_EINVAL;
    }
    *size = v;
    return SC_OK;
}

/* Parses "name:value" in line[0..len) into the next trailer slot. */
static sc_code parse_trailer_line(struct awschunked *d, const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len);
    if (colon == NULL || colon == line || d->ntrailers == AWSCHUNKED_TRAILERS_MAX)
        return SC_EINVAL;
    size_t name_len = (size_t)(colon - line);
    if (name_len > AWSCHUNKED_TRAILER_NAME_MAX)
        return SC_EINVAL;
    for (size_t i = 0; i < name_len; i++) {
        if (!is_token_char(line[i]))
            return SC_EINVAL;
    }
    const char *v = colon + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t value_len = (size_t)(end - v);
    if (value_len > AWSCHUNKED_TRAILER_VALUE_MAX)
        return SC_EINVAL;
    for (size_t i = 0; i < value_len; i++) {
        if (!is_text(v[i]))
            return SC_EINVAL;
    }
    struct awschunked_trailer *t = &d->trailers[d->ntrailers++];
    memcpy(t->name, line, name_len);
    t->name[name_len] = '\0';
    memcpy(t->value, v, value_len);
    t->value[value_len] = '\0';
    return SC_OK;
}

/* Acts on a complete chunk-size line. */
static sc_code end_size_line(struct awschunked *d)
{
    uint64_t size;
    sc_code rc = parse_size_line(d->line, d->line_len, &size);
    if (rc != SC_OK)
        return rc;
    if (size > UINT64_MAX - d->total)
        return SC_EINVAL;
    d->total += size;
    if (d->declared != AWSCHUNKED_LENGTH_UNKNOWN && d->total > d->declared)
        return SC_EINVAL;
    if (size == 0) {
        if (d->declared != AWSCHUNKED_LENGTH_UNKNOWN && d->total != d->declared)
            return SC_EINVAL;
        d->state = ST_TRAILER;
        return SC_OK;
    }
    d->remaining = size;
    d->state = ST_DATA;
    return SC_OK;
}

/* Acts on a complete trailer line; an empty one ends the body. */
static sc_code end_trailer_line(struct awschunked *d)
{
    if (d->line_len == 0) {
        d->state = ST_DONE;
        return SC_OK;
    }
    return parse_trailer_line(d, d->line, d->line_len);
}

/*
 * Adds one byte to the current line. A CR must be followed by LF; the line
 * is complete once the LF arrives (*complete is then set).
 */
static sc_code line_byte(struct awschunked *d, char c, bool *complete)
{
    bool after_cr = d->line_len > 0 && d->line[d->line_len - 1] == '\r';
    *complete = false;
    if (after_cr && c != '\n')
        return SC_EINVAL;
    if (c == '\n') {
        if (!after_cr)
            return SC_EINVAL;
        d->line_len--;
        *complete = true;
        return SC_OK;
    }
    if (d->line_len >= AWSCHUNKED_LINE_MAX + (c == '\r' ? 1u : 0u))
        return SC_EINVAL; /* the line, CRLF excluded, is over AWSCHUNKED_LINE_MAX */
    d->line[d->line_len++] = c;
    return SC_OK;
}

/* Feeds one framing byte in a line state. */
static sc_code framing_line_byte(struct awschunked *d, char c)
{
    bool complete;
    sc_code rc = line_byte(d, c, &complete);
    if (rc != SC_OK || !complete)
        return rc;
    rc = d->state == ST_SIZE_LINE ? end_size_line(d) : end_trailer_line(d);
    d->line_len = 0;
    return rc;
}

/* Feeds one framing byte in the CRLF-after-data states. */
static sc_code data_crlf_byte(struct awschunked *d, char c)
{
    if (d->state == ST_DATA_CR) {
        if (c != '\r')
            return SC_EINVAL;
        d->state = ST_DATA_LF;
        return SC_OK;
    }
    if (c != '\n')
        return SC_EINVAL;
    d->state = ST_SIZE_LINE;
    return SC_OK;
}

/* Copies the largest run of chunk data that input and output allow. */
static void copy_data(struct awschunked *d, const char *in, size_t avail, char *out, size_t room,
                      size_t *used)
{
    size_t n = avail < room ? avail : room;
    if ((uint64_t)n > d->remaining)
        n = (size_t)d->remaining;
    memcpy(out, in, n);
    d->remaining -= n;
    if (d->remaining == 0)
        d->state = ST_DATA_CR;
    *used = n;
}

sc_code awschunked_feed(struct awschunked *d, const char *in, size_t in_len, size_t *consumed,
                        char *out, size_t out_cap, size_t *produced)
{
    sc_code rc = SC_OK;
    size_t i = 0;
    size_t o = 0;
    while (i < in_len && rc == SC_OK) {
        switch (d->state) {
        case ST_DATA: {
            size_t n;
            if (o == out_cap)
                goto out;
            copy_data(d, in + i, in_len - i, out + o, out_cap - o, &n);
            i += n;
            o += n;
            break;
        }
        case ST_SIZE_LINE:
        case ST_TRAILER:
            rc = framing_line_byte(d, in[i]);
            i += rc == SC_OK;
            break;
        case ST_DATA_CR:
        case ST_DATA_LF:
            rc = data_crlf_byte(d, in[i]);
            i += rc == SC_OK;
            break;
        default:
            rc = SC_EINVAL; /* bytes after the end, or already failed */
            break;
        }
    }
out:
    if (d->state == ST_FAILED)
        rc = SC_EINVAL;
    if (rc != SC_OK)
        d->state = ST_FAILED;
    *consumed = i;
    *produced = o;
    return rc;
}
