/*
 * framing.c - the request's framing, checked once when its headers are in (see framing.h):
 * where its body ends, and headers the gateway decides on that came twice.
 */
#include "framing.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* What the headers say about where the request's body ends. */
struct framing {
    const char *content_length; /* the first Content-Length */
    bool lengths_differ;        /* another Content-Length with a different value */
    unsigned transfer_encodings;
    bool chunked;          /* the (last) Transfer-Encoding is exactly "chunked" */
    bool folded;           /* a header line was continued on the next one (obs-fold) */
    bool bad_name;         /* a header name that is not a token ("Content-Length : 4") */
    unsigned decided_seen; /* bit i: decided_headers[i] came once */
    const char *duplicate; /* a decided-on header that came twice, or NULL */
    bool bad_value;        /* a control character (CR, NUL...) but HTAB in a header value */
};

/*
 * Headers the gateway reads (with libmicrohttpd's lookup, which gives the first line) to
 * decide something: who may do what, which bytes, which bucket, how the body ends. Every
 * line is forwarded, so a second line would reach the upstream undecided (a copy source
 * in a bucket the client key may not read, another range): two lines of one are refused.
 */
static const char *const decided_headers[] = {
    "Host",
    "Authorization",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-decoded-content-length",
    "x-amz-trailer",
    "x-amz-copy-source",
    "x-amz-copy-source-range",
    "Range",
    "If-Match",
    "If-None-Match",
    "If-Modified-Since",
    "If-Unmodified-Since",
    "x-amz-checksum-mode",
    "Content-Type",
    "Origin",
    "Sec-Fetch-Site",
};

/* Notes name if it is a decided-on header, and whether it came before. */
static void note_decided(struct framing *f, const char *name)
{
    for (size_t i = 0; i < sizeof(decided_headers) / sizeof(decided_headers[0]); i++) {
        if (strcasecmp(name, decided_headers[i]) != 0)
            continue;
        if (f->decided_seen & (1u << i))
            f->duplicate = decided_headers[i];
        f->decided_seen |= 1u << i;
        return;
    }
}

/* True if name is an RFC 9110 token: no blank, control character or separator. */
static bool is_token(const char *name)
{
    if (*name == '\0')
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *p) != NULL)
            return false;
    return true;
}

/*
 * True if libmicrohttpd joined a continuation line (obs-fold, RFC 9112 5.2) into this header.
 * It parses a line in place ("name\0 value") but appends a continuation to the *name*, in a
 * new block of its memory pool (0.9.75: "x-amz-meta-a: one" CRLF " two" arrives as
 * "x-amz-meta-atwo: one"), so the value no longer follows its name and the blanks after
 * the colon. tests/integration/test_framing.py fails if a newer libmicrohttpd changes this.
 */
static bool header_was_folded(const char *name, const char *value)
{
    const char *after_colon = name + strlen(name) + 1;
    if ((uintptr_t)value < (uintptr_t)after_colon)
        return true;
    for (const char *p = after_colon; p < value; p++)
        if (*p != ' ' && *p != '\t')
            return true;
    return false;
}

/*
 * True if a header value holds a control character other than HTAB (RFC 9110 5.5): a bare CR
 * or an LF some servers end a line at, a DEL. Forwarded, the upstream could read it otherwise
 * than it was signed. (A NUL is not seen: libmicrohttpd 0.9.75 ends the value there.)
 */
static bool value_has_control(const char *value, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return true;
    }
    return false;
}

static enum MHD_Result note_value(void *cls, enum MHD_ValueKind kind, const char *name,
                                  size_t name_size, const char *value, size_t value_size)
{
    struct framing *f = cls;
    if (value != NULL && value_has_control(value, value_size))
        f->bad_value = true;
    return MHD_YES;
}

static enum MHD_Result note_framing(void *cls, enum MHD_ValueKind kind, const char *name,
                                    const char *value)
{
    struct framing *f = cls;
    if (!is_token(name))
        f->bad_name = true;
    note_decided(f, name);
    if (value == NULL)
        return MHD_YES;
    if (header_was_folded(name, value))
        f->folded = true;
    if (strcasecmp(name, "Content-Length") == 0) {
        if (f->content_length == NULL)
            f->content_length = value;
        else if (strcmp(f->content_length, value) != 0)
            f->lengths_differ = true;
    } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
        f->transfer_encodings++;
        f->chunked = strcasecmp(value, "chunked") == 0;
    }
    return MHD_YES;
}

const char *gw_framing_fault(struct gw_req *q, char *msg, size_t cap)
{
    struct framing f = {.content_length = NULL};
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, note_framing, &f);
    if (f.duplicate != NULL) {
        snprintf(msg, cap, "The request has more than one %s header.", f.duplicate);
        return msg;
    }
    MHD_get_connection_values_n(q->conn, MHD_HEADER_KIND, note_value, &f);
    if (f.bad_value)
        return "A header value holds a control character.";
    if (f.folded)
        return "A header line continued on the next line (obs-fold) is not accepted.";
    if (f.bad_name) /* a blank before the colon: some servers would still read the header */
        return "A header name is not a valid token.";
    if (f.lengths_differ)
        return "The request has Content-Length headers with different values.";
    if (f.transfer_encodings > 0 && f.content_length != NULL)
        return "The request has both Transfer-Encoding and Content-Length.";
    if (f.transfer_encodings > 1 || (f.transfer_encodings == 1 && !f.chunked))
        return "Transfer-Encoding other than chunked is not accepted.";
    return NULL;
}

bool gw_framing_has_body(struct gw_req *q)
{
    const char *cl = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Transfer-Encoding");
    return te != NULL || (cl != NULL && strcmp(cl, "0") != 0);
}
