/*
 * s3_auth.c - SigV4 verification of incoming S3 requests (see s3_auth.h).
 *
 * The steps, for either kind: find which kind the request is (classify), read
 * its parts into a struct sig (parse_header_auth or parse_query_auth), check
 * the credential scope against the request time and the gateway's region
 * (check_scope), find the key, check the time, recompute the signature with
 * sigv4_signature() and compare it in constant time (check_signature), then
 * check that every x-amz-* header was signed. Each refusal is one call to
 * refuse() naming the fault and the client's message.
 */
#include "s3_auth.h"
#include "sigv4_int.h"

#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/uri.h"
#include "../proto/httpdate.h"

#define ALGORITHM      "AWS4-HMAC-SHA256"
#define ALGORITHM_V4A  "AWS4-ECDSA-P256-SHA256"
#define SIG_HEX        64
#define CREDENTIAL_MAX 512
#define SIGNED_MAX     4096
#define SHORT_MAX      64

/* Each fault answers with an entry of the one S3 error table (proto/s3_xml.h), and with a
 * message that says what exactly was wrong. */
static const struct {
    enum s3_xml_error e;
    const char *message;
} faults[S3_AUTH_FAULT_MAX] = {
    [S3_AUTH_FAULT_NONE] = {S3_XML_ERROR_MAX, ""},
    [S3_AUTH_FAULT_UNSUPPORTED] = {S3_XML_INVALID_REQUEST,
                                   "The authorization mechanism you have provided is not "
                                   "supported. Please use AWS4-HMAC-SHA256."},
    [S3_AUTH_FAULT_TWO_MECHANISMS] = {S3_XML_INVALID_ARGUMENT,
                                      "Only one auth mechanism allowed; only the X-Amz-Algorithm "
                                      "query parameter, Signature query string parameter or the "
                                      "Authorization header should be specified"},
    [S3_AUTH_FAULT_HEADER_MALFORMED] = {S3_XML_AUTH_HEADER_MALFORMED,
                                        "The authorization header is malformed"},
    [S3_AUTH_FAULT_QUERY_MALFORMED] = {S3_XML_AUTH_QUERY_MALFORMED,
                                       "The query-string authentication parameters are malformed"},
    [S3_AUTH_FAULT_MISSING_SHA256] = {S3_XML_INVALID_REQUEST,
                                      "Missing required header for this request: "
                                      "x-amz-content-sha256"},
    [S3_AUTH_FAULT_BAD_SHA256] = {S3_XML_INVALID_ARGUMENT,
                                  "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* "
                                  "value, or a valid sha256 value."},
    [S3_AUTH_FAULT_NO_DATE] = {S3_XML_ACCESS_DENIED,
                               "AWS authentication requires a valid Date or x-amz-date header"},
    [S3_AUTH_FAULT_UNKNOWN_KEY] = {S3_XML_INVALID_ACCESS_KEY_ID,
                                   "The AWS Access Key Id you provided does not exist in our "
                                   "records."},
    [S3_AUTH_FAULT_SKEWED] = {S3_XML_REQUEST_TIME_TOO_SKEWED,
                              "The difference between the request time and the current time is "
                              "too large."},
    [S3_AUTH_FAULT_EXPIRED] = {S3_XML_ACCESS_DENIED, "Request has expired"},
    [S3_AUTH_FAULT_NOT_YET_VALID] = {S3_XML_ACCESS_DENIED, "Request is not valid yet"},
    [S3_AUTH_FAULT_SIGNATURE] = {S3_XML_SIGNATURE_DOES_NOT_MATCH,
                                 "The request signature we calculated does not match the "
                                 "signature you provided. Check your key and signing method."},
    [S3_AUTH_FAULT_UNSIGNED_HEADERS] = {S3_XML_ACCESS_DENIED,
                                        "There were headers present in the request which were "
                                        "not signed"},
};

enum s3_xml_error s3_auth_fault_error(enum s3_auth_fault f)
{
    if ((unsigned)f >= S3_AUTH_FAULT_MAX || f == S3_AUTH_FAULT_NONE)
        f = S3_AUTH_FAULT_SIGNATURE;
    return faults[f].e;
}

const struct s3_xml_error_info *s3_auth_fault_info(enum s3_auth_fault f)
{
    return s3_xml_error_info(s3_auth_fault_error(f));
}

/* Records why the request is refused; fmt NULL gives the fault's usual message. */
static sc_code refuse(struct s3_auth_result *out, enum s3_auth_fault f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static sc_code refuse(struct s3_auth_result *out, enum s3_auth_fault f, const char *fmt, ...)
{
    out->fault = f;
    out->key = NULL;
    if (fmt == NULL) {
        snprintf(out->message, sizeof(out->message), "%s", faults[f].message);
        return SC_EINVAL;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
    return SC_EINVAL;
}

/* ---- what one signature says ---------------------------------------------------- */

/* The parts of a signature, header or query alike, copied and bounded. */
struct sig {
    char credential[CREDENTIAL_MAX + 1];
    char signed_headers[SIGNED_MAX + 1];
    char signature[SIG_HEX + 1];
    bool signature_ok;              /* 64 characters were given */
    char amz_date[17];              /* the request time, "YYYYMMDDTHHMMSSZ" */
    time_t when;                    /* the same, in seconds */
    long expires;                   /* presigned: X-Amz-Expires */
    const char *payload;            /* the payload hash signed */
    char *names[SIGV4_MAX_HEADERS]; /* SignedHeaders, split (pointing into signed_headers) */
    size_t n_names;
    /* The credential scope, split (pointing into scope_buf). */
    char scope_buf[CREDENTIAL_MAX + 1];
    const char *access_key, *date, *region, *service, *terminal;
};

/* Copies s into dst (cap bytes); false if it does not fit. */
static bool copy_bounded(char *dst, size_t cap, const char *s, size_t len)
{
    if (len >= cap)
        return false;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return true;
}

static bool is_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
    }
    return true;
}

static int two(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* Parses "YYYYMMDDTHHMMSSZ" into seconds; false for anything else or an impossible date. */
static bool parse_amz_date(const char *s, time_t *out)
{
    if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z' || !is_digits(s, 8) || !is_digits(s + 9, 6))
        return false;
    struct tm tm = {
        .tm_year = two(s) * 100 + two(s + 2) - 1900,
        .tm_mon = two(s + 4) - 1,
        .tm_mday = two(s + 6),
        .tm_hour = two(s + 9),
        .tm_min = two(s + 11),
        .tm_sec = two(s + 13),
    };
    struct tm check = tm;
    if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
        return false;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != check.tm_mday || tm.tm_mon != check.tm_mon)
        return false; /* 31 April and the like were normalized: refuse */
    *out = t;
    return true;
}

static bool is_token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c);
}

/* Splits SignedHeaders ("host;x-amz-date") into names; false if malformed. */
static bool split_signed_headers(struct sig *s)
{
    s->n_names = 0;
    if (s->signed_headers[0] == '\0')
        return false;
    for (char *p = s->signed_headers; p != NULL;) {
        char *semi = strchr(p, ';');
        if (semi)
            *semi = '\0';
        if (*p == '\0' || s->n_names == SIGV4_MAX_HEADERS)
            return false;
        for (const char *c = p; *c; c++) {
            if (!is_token_char(*c))
                return false; /* upper case, spaces, anything else */
        }
        for (size_t i = 0; i < s->n_names; i++) {
            if (strcmp(s->names[i], p) == 0)
                return false;
        }
        s->names[s->n_names++] = p;
        p = semi ? semi + 1 : NULL;
    }
    return true;
}

static bool is_signed(const struct sig *s, const char *name)
{
    for (size_t i = 0; i < s->n_names; i++) {
        if (strcasecmp(s->names[i], name) == 0)
            return true;
    }
    return false;
}

/* Splits the credential "AK/YYYYMMDD/region/service/aws4_request"; false if not 5 parts. */
static bool split_scope(struct sig *s)
{
    const char **parts[] = {&s->access_key, &s->date, &s->region, &s->service, &s->terminal};
    snprintf(s->scope_buf, sizeof(s->scope_buf), "%s", s->credential);
    char *p = s->scope_buf;
    for (size_t i = 0; i < 5; i++) {
        char *slash = strchr(p, '/');
        if ((slash == NULL) != (i == 4))
            return false;
        if (slash)
            *slash = '\0';
        if (*p == '\0')
            return false;
        *parts[i] = p;
        p = slash ? slash + 1 : NULL;
    }
    return true;
}

/* ---- the request's headers ------------------------------------------------------- */

/* The first value of header name (any case), and how many there are. */
static const char *header(const struct s3_auth_input *in, const char *name, size_t *count)
{
    const char *first = NULL;
    size_t n = 0;
    for (size_t i = 0; i < in->n_headers; i++) {
        if (in->headers[i].name && strcasecmp(in->headers[i].name, name) == 0) {
            if (n++ == 0)
                first = in->headers[i].value;
        }
    }
    if (count)
        *count = n;
    return first;
}

static bool valid_payload(const char *v)
{
    size_t n = strlen(v);
    if (strcmp(v, SIGV4_UNSIGNED_PAYLOAD) == 0)
        return true;
    if (n > 10 && n <= SIG_HEX && strncmp(v, "STREAMING-", 10) == 0) {
        for (const char *c = v + 10; *c; c++) {
            if (!((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
                return false;
        }
        return true;
    }
    if (n != SIG_HEX)
        return false;
    for (const char *c = v; *c; c++) {
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    }
    return true;
}

/* ---- the query -------------------------------------------------------------------- */

enum qparam { Q_ALGORITHM, Q_CREDENTIAL, Q_DATE, Q_EXPIRES, Q_SIGNED_HEADERS, Q_SIGNATURE, Q_MAX };

static const char *const qnames[Q_MAX] = {
    [Q_ALGORITHM] = "X-Amz-Algorithm",
    [Q_CREDENTIAL] = "X-Amz-Credential",
    [Q_DATE] = "X-Amz-Date",
    [Q_EXPIRES] = "X-Amz-Expires",
    [Q_SIGNED_HEADERS] = "X-Amz-SignedHeaders",
    [Q_SIGNATURE] = "X-Amz-Signature",
};

/* The presigned-URL parameters of a query, decoded. */
struct qauth {
    char *value[Q_MAX]; /* malloc'd, or NULL */
    unsigned count[Q_MAX];
    bool any;   /* one of them is present */
    bool sigv2; /* AWSAccessKeyId is present */
};

static void qauth_free(struct qauth *qa)
{
    for (size_t i = 0; i < Q_MAX; i++)
        free(qa->value[i]);
}

/* Query authentication version 2 (s3cmd signurl, older SDKs): not verified, never forwarded. */
static const char *const sigv2_qnames[] = {"AWSAccessKeyId", "Expires", "Signature"};

bool s3_auth_is_query_param(const char *name)
{
    for (size_t i = 0; i < Q_MAX; i++) {
        if (strcasecmp(name, qnames[i]) == 0)
            return true;
    }
    for (size_t i = 0; i < sizeof(sigv2_qnames) / sizeof(sigv2_qnames[0]); i++) {
        if (strcasecmp(name, sigv2_qnames[i]) == 0)
            return true;
    }
    return strcasecmp(name, "X-Amz-Security-Token") == 0;
}

/* Looks at one "name[=value]" piece of the query. */
static sc_code scan_piece(const char *p, size_t len, struct qauth *qa)
{
    const char *eq = memchr(p, '=', len);
    size_t name_len = eq ? (size_t)(eq - p) : len;
    char *name = NULL;
    sc_code rc = uri_decode(p, name_len, &name);
    if (rc != SC_OK)
        return rc;
    if (strcmp(name, "AWSAccessKeyId") == 0)
        qa->sigv2 = true;
    for (size_t i = 0; i < Q_MAX && rc == SC_OK; i++) {
        if (strcasecmp(name, qnames[i]) != 0)
            continue;
        qa->any = true;
        if (qa->count[i]++ > 0)
            break;
        rc = eq ? uri_decode(eq + 1, len - name_len - 1, &qa->value[i])
                : uri_decode("", 0, &qa->value[i]);
    }
    free(name);
    return rc;
}

static sc_code scan_query(const char *query, struct qauth *qa)
{
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        sc_code rc = len ? scan_piece(p, len, qa) : SC_OK;
        if (rc != SC_OK)
            return rc;
        p = amp ? amp + 1 : NULL;
    }
    return SC_OK;
}

/* Copies the pieces of raw_query whose decoded name drop() refuses, joined by '&'. */
static sc_code filter_query(const char *raw_query, bool (*drop)(const char *name), char **out)
{
    size_t len = strlen(raw_query), n = 0;
    char *dst = malloc(len + 1);
    if (dst == NULL)
        return SC_ENOMEM;
    for (const char *p = raw_query; *p;) {
        const char *amp = strchr(p, '&');
        size_t plen = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', plen);
        char *name = NULL;
        sc_code rc = uri_decode(p, eq ? (size_t)(eq - p) : plen, &name);
        if (rc != SC_OK) {
            free(dst);
            return rc;
        }
        if (plen > 0 && !drop(name)) {
            if (n > 0)
                dst[n++] = '&';
            memcpy(dst + n, p, plen);
            n += plen;
        }
        free(name);
        p += plen + (amp != NULL);
    }
    dst[n] = '\0';
    *out = dst;
    return SC_OK;
}

static bool is_signature_param(const char *name)
{
    return strcasecmp(name, "X-Amz-Signature") == 0;
}

sc_code s3_auth_strip_query(const char *raw_query, char **out)
{
    *out = NULL;
    if (raw_query == NULL)
        return SC_OK;
    sc_code rc = filter_query(raw_query, s3_auth_is_query_param, out);
    if (rc == SC_OK && **out == '\0') {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- reading a signature ------------------------------------------------------------ */

/* Splits "Name=value" pieces of an Authorization header after the algorithm. */
static sc_code parse_header_parts(const char *p, struct sig *s, struct s3_auth_result *out)
{
    bool seen[3] = {false, false, false};
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        size_t len = strcspn(p, ",");
        size_t trimmed = len;
        while (trimmed > 0 && (p[trimmed - 1] == ' ' || p[trimmed - 1] == '\t'))
            trimmed--;
        const char *eq = memchr(p, '=', trimmed);
        size_t name_len = eq ? (size_t)(eq - p) : trimmed;
        const char *v = eq ? eq + 1 : p + trimmed;
        size_t vlen = trimmed - (size_t)(v - p);
        int which = -1;
        if (eq && name_len == 10 && strncmp(p, "Credential", 10) == 0)
            which = copy_bounded(s->credential, sizeof(s->credential), v, vlen) ? 0 : -2;
        if (eq && name_len == 13 && strncmp(p, "SignedHeaders", 13) == 0)
            which = copy_bounded(s->signed_headers, sizeof(s->signed_headers), v, vlen) ? 1 : -2;
        if (eq && name_len == 9 && strncmp(p, "Signature", 9) == 0) {
            which = 2;
            s->signature_ok =
                copy_bounded(s->signature, sizeof(s->signature), v, vlen) && vlen == SIG_HEX;
        }
        if (which < 0 || seen[which])
            return refuse(out, S3_AUTH_FAULT_HEADER_MALFORMED,
                          "The authorization header is malformed; expected "
                          "\"Credential=..., SignedHeaders=..., Signature=...\"");
        seen[which] = true;
        p += len;
    }
    if (!seen[0] || !seen[1] || !seen[2])
        return refuse(out, S3_AUTH_FAULT_HEADER_MALFORMED,
                      "The authorization header is malformed; it needs Credential, "
                      "SignedHeaders and Signature");
    return SC_OK;
}

/* The request time of a header-signed request: x-amz-date, else Date. */
static sc_code header_time(const struct s3_auth_input *in, struct sig *s,
                           struct s3_auth_result *out)
{
    const char *amz = header(in, "x-amz-date", NULL);
    if (amz != NULL) {
        if (!copy_bounded(s->amz_date, sizeof(s->amz_date), amz, strlen(amz)) ||
            !parse_amz_date(s->amz_date, &s->when))
            return refuse(out, S3_AUTH_FAULT_NO_DATE, NULL);
        return SC_OK;
    }
    if (httpdate_parse(header(in, "date", NULL), &s->when) != SC_OK)
        return refuse(out, S3_AUTH_FAULT_NO_DATE, NULL);
    sigv4_amz_date(s->when, s->amz_date);
    return s->amz_date[0] ? SC_OK : refuse(out, S3_AUTH_FAULT_NO_DATE, NULL);
}

static sc_code parse_header_auth(const struct s3_auth_input *in, const char *auth, struct sig *s,
                                 struct s3_auth_result *out)
{
    while (*auth == ' ' || *auth == '\t')
        auth++;
    size_t alg_len = strcspn(auth, " \t");
    if (alg_len != strlen(ALGORITHM) || strncmp(auth, ALGORITHM, alg_len) != 0)
        return refuse(out, S3_AUTH_FAULT_UNSUPPORTED, NULL); /* SigV2 "AWS ", SigV4A, others */
    sc_code rc = parse_header_parts(auth + alg_len, s, out);
    if (rc != SC_OK)
        return rc;
    if (!split_signed_headers(s))
        return refuse(out, S3_AUTH_FAULT_HEADER_MALFORMED,
                      "The authorization header is malformed; SignedHeaders must be a ';' list of "
                      "lower-case header names");
    rc = header_time(in, s, out);
    if (rc != SC_OK)
        return rc;
    size_t n_sha = 0;
    s->payload = header(in, "x-amz-content-sha256", &n_sha);
    if (s->payload == NULL)
        return refuse(out, S3_AUTH_FAULT_MISSING_SHA256, NULL);
    if (n_sha > 1 || !valid_payload(s->payload))
        return refuse(out, S3_AUTH_FAULT_BAD_SHA256, NULL);
    return SC_OK;
}

static sc_code parse_query_auth(const struct qauth *qa, struct sig *s, struct s3_auth_result *out)
{
    for (size_t i = 0; i < Q_MAX; i++) {
        if (qa->count[i] != 1)
            return refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED,
                          "Query-string authentication version 4 requires the X-Amz-Algorithm, "
                          "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, "
                          "and X-Amz-Expires parameters.");
    }
    const char *alg = qa->value[Q_ALGORITHM];
    if (strcmp(alg, ALGORITHM_V4A) == 0)
        return refuse(out, S3_AUTH_FAULT_UNSUPPORTED, NULL);
    if (strcmp(alg, ALGORITHM) != 0)
        return refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED,
                      "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
    const char *date = qa->value[Q_DATE], *exp = qa->value[Q_EXPIRES];
    if (!copy_bounded(s->amz_date, sizeof(s->amz_date), date, strlen(date)) ||
        !parse_amz_date(s->amz_date, &s->when))
        return refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED,
                      "X-Amz-Date must be in the ISO8601 Long Format "
                      "\"yyyyMMdd'T'HHmmss'Z'\"");
    size_t elen = strlen(exp);
    if (elen == 0 || elen > 9 || !is_digits(exp, elen))
        return refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED,
                      "X-Amz-Expires should be a number of seconds");
    s->expires = strtol(exp, NULL, 10);
    if (s->expires > S3_AUTH_MAX_EXPIRES)
        return refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED,
                      "X-Amz-Expires must be less than a week (in seconds) that is 604800");
    const char *cred = qa->value[Q_CREDENTIAL], *sh = qa->value[Q_SIGNED_HEADERS];
    const char *sig = qa->value[Q_SIGNATURE];
    if (!copy_bounded(s->credential, sizeof(s->credential), cred, strlen(cred)) ||
        !copy_bounded(s->signed_headers, sizeof(s->signed_headers), sh, strlen(sh)) ||
        !split_signed_headers(s))
        return refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED,
                      "X-Amz-SignedHeaders must be a ';' list of lower-case header names");
    s->signature_ok = copy_bounded(s->signature, sizeof(s->signature), sig, strlen(sig)) &&
                      strlen(sig) == SIG_HEX;
    s->payload = SIGV4_UNSIGNED_PAYLOAD;
    return SC_OK;
}

/* ---- checking it ---------------------------------------------------------------------- */

/* The credential scope against the request time, the region and the service. */
static sc_code check_scope(const struct s3_auth_input *in, struct sig *s, bool query,
                           struct s3_auth_result *out)
{
    enum s3_auth_fault f = query ? S3_AUTH_FAULT_QUERY_MALFORMED : S3_AUTH_FAULT_HEADER_MALFORMED;
    const char *lead = query ? "Error parsing the X-Amz-Credential parameter; "
                             : "The authorization header is malformed; ";
    if (!split_scope(s))
        return refuse(out, f,
                      "%sthe Credential is mal-formed; expecting "
                      "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
                      lead);
    if (strlen(s->date) != 8 || strncmp(s->date, s->amz_date, 8) != 0)
        return refuse(out, f,
                      "%sinvalid credential date \"%.16s\": it is not the date of the request "
                      "(%.8s).",
                      lead, s->date, s->amz_date);
    if (strcmp(s->region, in->region) != 0)
        return refuse(out, f, "%sthe region '%.64s' is wrong; expecting '%.64s'", lead, s->region,
                      in->region);
    if (strcmp(s->service, "s3") != 0)
        return refuse(out, f, "%sincorrect service \"%.32s\". This endpoint belongs to \"s3\".",
                      lead, s->service);
    if (strcmp(s->terminal, "aws4_request") != 0)
        return refuse(out, f,
                      "%sincorrect terminal \"%.32s\". This endpoint uses \"aws4_request\".", lead,
                      s->terminal);
    if (!is_signed(s, "host"))
        return refuse(out, f, "%sthe signed headers must include host.", lead);
    return SC_OK;
}

static sc_code check_time(const struct s3_auth_input *in, const struct sig *s, bool query,
                          struct s3_auth_result *out)
{
    if (query && in->now < s->when - S3_AUTH_SKEW_SECONDS)
        return refuse(out, S3_AUTH_FAULT_NOT_YET_VALID, NULL);
    if (query && in->now > s->when + s->expires)
        return refuse(out, S3_AUTH_FAULT_EXPIRED, NULL);
    if (!query &&
        (in->now > s->when + S3_AUTH_SKEW_SECONDS || in->now < s->when - S3_AUTH_SKEW_SECONDS))
        return refuse(out, S3_AUTH_FAULT_SKEWED, NULL);
    return SC_OK;
}

/* The signed headers as sigv4 wants them: each value received, "" for one that is absent. */
static size_t gather_signed(const struct s3_auth_input *in, const struct sig *s,
                            struct sigv4_header *h)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_names; i++) {
        bool found = false;
        for (size_t j = 0; j < in->n_headers; j++) {
            if (strcasecmp(in->headers[j].name, s->names[i]) != 0)
                continue;
            if (n == SIGV4_MAX_HEADERS)
                return SIGV4_MAX_HEADERS + 1;
            h[n++] = (struct sigv4_header){s->names[i], in->headers[j].value};
            found = true;
        }
        if (!found && n == SIGV4_MAX_HEADERS)
            return SIGV4_MAX_HEADERS + 1;
        if (!found)
            h[n++] = (struct sigv4_header){s->names[i], ""};
    }
    return n;
}

/* Recomputes the signature with key and compares it with the client's in constant time. */
static sc_code check_signature(const struct s3_auth_input *in, const struct sig *s,
                               const struct ckey *key, const char *query,
                               struct s3_auth_result *out)
{
    struct sigv4_header h[SIGV4_MAX_HEADERS];
    char want[SIG_HEX + 1];
    size_t n = gather_signed(in, s, h);
    if (n > SIGV4_MAX_HEADERS)
        return refuse(out, S3_AUTH_FAULT_SIGNATURE, NULL);
    struct sigv4_request req = {in->method, in->raw_path, query, h, n, s->payload};
    struct sigv4_key k = {key->creds.access_key, key->creds.secret_key, in->region, "s3"};
    sc_code rc = sigv4_signature(&req, &k, s->amz_date, want);
    if (rc == SC_ENOMEM || rc == SC_ECRYPTO)
        return rc;
    bool match = rc == SC_OK && s->signature_ok && CRYPTO_memcmp(want, s->signature, SIG_HEX) == 0;
    OPENSSL_cleanse(want, sizeof(want));
    return match ? SC_OK : refuse(out, S3_AUTH_FAULT_SIGNATURE, NULL);
}

/* S3 refuses x-amz-* headers that the signature does not cover (but x-amz-content-sha256). */
static sc_code check_all_signed(const struct s3_auth_input *in, const struct sig *s,
                                struct s3_auth_result *out)
{
    for (size_t i = 0; i < in->n_headers; i++) {
        const char *name = in->headers[i].name;
        if (strncasecmp(name, "x-amz-", 6) != 0 || strcasecmp(name, "x-amz-content-sha256") == 0)
            continue;
        if (!is_signed(s, name))
            return refuse(out, S3_AUTH_FAULT_UNSIGNED_HEADERS,
                          "There were headers present in the request which were not signed: "
                          "%.64s",
                          name);
    }
    return SC_OK;
}

/* Everything after parsing, the same for both kinds. */
static sc_code check(const struct s3_auth_input *in, struct sig *s, bool query,
                     const char *canonical_query, struct s3_auth_result *out)
{
    sc_code rc = check_scope(in, s, query, out);
    if (rc != SC_OK)
        return rc;
    const struct ckey *key = ckeys_find(in->keys, s->access_key);
    if (key == NULL)
        return refuse(out, S3_AUTH_FAULT_UNKNOWN_KEY, NULL);
    rc = check_time(in, s, query, out);
    if (rc == SC_OK)
        rc = check_signature(in, s, key, canonical_query, out);
    if (rc == SC_OK)
        rc = check_all_signed(in, s, out);
    if (rc == SC_OK)
        out->key = key;
    return rc;
}

static sc_code verify_presigned(const struct s3_auth_input *in, const struct qauth *qa,
                                struct sig *s, struct s3_auth_result *out)
{
    char *query = NULL;
    sc_code rc = parse_query_auth(qa, s, out);
    if (rc == SC_OK)
        rc = filter_query(in->raw_query, is_signature_param, &query);
    if (rc == SC_OK)
        rc = check(in, s, true, query, out);
    free(query);
    return rc;
}

sc_code s3_auth_verify(const struct s3_auth_input *in, struct s3_auth_result *out)
{
    struct qauth qa = {0};
    size_t n_auth = 0;
    *out = (struct s3_auth_result){.kind = S3_AUTH_ANONYMOUS};
    const char *auth = header(in, "authorization", &n_auth);
    sc_code rc = scan_query(in->raw_query, &qa);
    if (rc == SC_EINVAL)
        rc = refuse(out, S3_AUTH_FAULT_QUERY_MALFORMED, NULL);
    if (rc != SC_OK)
        goto out;
    struct sig *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        rc = SC_ENOMEM;
        goto out;
    }
    if (auth != NULL && (qa.any || qa.sigv2)) {
        rc = refuse(out, S3_AUTH_FAULT_TWO_MECHANISMS, NULL);
    } else if (n_auth > 1) {
        rc = refuse(out, S3_AUTH_FAULT_HEADER_MALFORMED,
                    "The authorization header is malformed; it is sent more than once");
    } else if (auth != NULL) {
        out->kind = S3_AUTH_HEADER;
        rc = parse_header_auth(in, auth, s, out);
        if (rc == SC_OK)
            rc = check(in, s, false, in->raw_query, out);
    } else if (qa.any) {
        out->kind = S3_AUTH_PRESIGNED;
        rc = verify_presigned(in, &qa, s, out);
    } else if (qa.sigv2) {
        rc = refuse(out, S3_AUTH_FAULT_UNSUPPORTED, NULL);
    }
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
out:
    qauth_free(&qa);
    if (rc != SC_OK)
        out->key = NULL;
    return rc;
}
