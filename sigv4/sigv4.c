/*
 * sigv4.c - AWS Signature Version 4 signing of upstream requests (see sigv4.h).
 *
 * The steps are the four of the specification, one static function each:
 * canonical request (build_canonical), string to sign (sigv4_string_to_sign),
 * signing key (derive_signing_key) and signature (compute_signature).
 * Strings are built in a small growable buffer whose first allocation
 * failure sticks, so a builder checks for ENOMEM once, at the end.
 */
#include "sigv4.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/buf.h"
#include "../common/uri.h"

#define ALGORITHM    "AWS4-HMAC-SHA256"
#define SCOPE_TAIL   "aws4_request"
#define SHA256_LEN   32
#define AMZ_DATE_LEN 16
#define DATE_LEN     8
#define PAYLOAD_HEX  64

/* ---- small checks ------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* "YYYYMMDDTHHMMSSZ" with digits where digits belong. */
static bool valid_amz_date(const char *s)
{
    if (s == NULL || strlen(s) != AMZ_DATE_LEN || s[8] != 'T' || s[15] != 'Z')
        return false;
    for (size_t i = 0; i < AMZ_DATE_LEN - 1; i++) {
        if (i != 8 && !is_digit(s[i]))
            return false;
    }
    return true;
}

/* "STREAMING-" and upper-case letters, digits and '-': the aws-chunked payload markers. */
static bool valid_streaming_marker(const char *s)
{
    size_t len = strlen(s);
    if (len <= 10 || len > PAYLOAD_HEX || strncmp(s, "STREAMING-", 10) != 0)
        return false;
    for (s += 10; *s; s++) {
        if (!is_digit(*s) && !(*s >= 'A' && *s <= 'Z') && *s != '-')
            return false;
    }
    return true;
}

static bool valid_payload_hash(const char *s)
{
    if (s == NULL)
        return false;
    if (strcmp(s, SIGV4_UNSIGNED_PAYLOAD) == 0 || valid_streaming_marker(s))
        return true;
    if (strlen(s) != PAYLOAD_HEX)
        return false;
    for (size_t i = 0; i < PAYLOAD_HEX; i++) {
        if (!is_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return false;
    }
    return true;
}

/* A credential-scope part: non-empty, printable, no '/', ',', or space. */
static bool valid_scope_part(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > 128)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= ' ' || c >= 0x7f || c == '/' || c == ',')
            return false;
    }
    return true;
}

/* An HTTP token (RFC 9110, section 5.6.2). */
static bool valid_header_name(const char *s)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (s == NULL || *s == '\0')
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit((char)c);
        if (!alnum && strchr(extra, c) == NULL)
            return false;
    }
    return true;
}

static sc_code check_field(const char *s)
{
    if (s == NULL)
        return SC_EINVAL;
    if (strnlen(s, SIGV4_MAX_FIELD + 1) > SIGV4_MAX_FIELD)
        return SC_ETOOBIG;
    return SC_OK;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static void hex_encode(const unsigned char *in, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * len] = '\0';
}

/* ---- crypto primitives -------------------------------------------------- */

static sc_code sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
    unsigned int out_len = 0;
    if (EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) != 1 || out_len != SHA256_LEN)
        return SC_ECRYPTO;
    return SC_OK;
}

static sc_code hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                           unsigned char out[SHA256_LEN])
{
    unsigned int out_len = 0;
    if (key_len > INT_MAX)
        return SC_EINVAL;
    if (HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &out_len) == NULL ||
        out_len != SHA256_LEN)
        return SC_ECRYPTO;
    return SC_OK;
}

/* ---- canonical URI ------------------------------------------------------ */

/* Length of the segment starting at s (up to the next '/' or the end). */
static size_t segment_len(const char *s)
{
    const char *slash = strchr(s, '/');
    return slash ? (size_t)(slash - s) : strlen(s);
}

/* Length of dst[0..n) without its last "/segment". */
static size_t drop_last_segment(const char *dst, size_t n)
{
    while (n > 0 && dst[n - 1] != '/')
        n--;
    return n > 0 ? n - 1 : 0;
}

/*
 * Resolves "." and ".." segments and drops empty ones (RFC 3986 section 5.2.4
 * plus the test suite's "//" rule). A trailing '/' is kept, and added after a
 * final "." or "..", unless the result is the root.
 */
static sc_code normalize_path(const char *path, char **out)
{
    size_t n = 0;
    bool trailing = false;
    char *dst = malloc(strlen(path) + 2);
    if (dst == NULL)
        return SC_ENOMEM;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        size_t len = segment_len(p);
        bool dot = len == 1 && p[0] == '.';
        bool dotdot = len == 2 && p[0] == '.' && p[1] == '.';
        if (dotdot) {
            n = drop_last_segment(dst, n);
        } else if (len > 0 && !dot) {
            dst[n++] = '/';
            memcpy(dst + n, p, len);
            n += len;
        }
        trailing = len == 0 || dot || dotdot;
        p += len;
    }
    if (n == 0 || trailing)
        dst[n++] = '/';
    dst[n] = '\0';
    *out = dst;
    return SC_OK;
}

static sc_code canonical_path(const char *path, bool s3_mode, char **out)
{
    char *plain = NULL;
    sc_code rc = s3_mode ? uri_decode(path, strlen(path), &plain) : normalize_path(path, &plain);
    if (rc != SC_OK)
        return rc;
    rc = uri_encode(plain, strlen(plain), true, out);
    free(plain);
    return rc;
}

/* ---- canonical query ---------------------------------------------------- */

struct qparam {
    char *name;  /* encoded */
    char *value; /* encoded */
};

static int qparam_cmp(const void *a, const void *b)
{
    const struct qparam *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

/* Decodes then re-encodes len bytes of s with S3 rules ('/' encoded); a '+' decodes to a
 * space if plus_is_space, else to itself. */
static sc_code recode(const char *s, size_t len, bool plus_is_space, char **out)
{
    char *plain = NULL;
    sc_code rc = uri_decode(s, len, &plain);
    if (rc != SC_OK)
        return rc;
    /* a '+' decoded from "%2B" is no space: only the raw bytes' '+' become spaces */
    for (size_t i = 0, j = 0; plus_is_space && i < len; i++, j++) {
        if (s[i] == '%')
            i += 2;
        else if (s[i] == '+')
            plain[j] = ' ';
    }
    rc = uri_encode(plain, strlen(plain), false, out);
    free(plain);
    return rc;
}

/* Fills p from one "name[=value]" piece of len bytes. */
static sc_code parse_param(const char *s, size_t len, bool plus_is_space, struct qparam *p)
{
    const char *eq = memchr(s, '=', len);
    size_t name_len = eq ? (size_t)(eq - s) : len;
    sc_code rc = recode(s, name_len, plus_is_space, &p->name);
    if (rc != SC_OK)
        return rc;
    if (eq)
        return recode(eq + 1, len - name_len - 1, plus_is_space, &p->value);
    return recode("", 0, false, &p->value);
}

static void free_params(struct qparam *params, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(params[i].name);
        free(params[i].value);
    }
    free(params);
}

/* Splits query on '&' (empty pieces skipped) into recoded parameters. */
static sc_code parse_query(const char *query, bool plus_is_space, struct qparam **out,
                           size_t *n_out)
{
    size_t max = 1, n = 0;
    sc_code rc = SC_OK;
    for (const char *p = query; *p; p++)
        max += *p == '&';
    struct qparam *params = calloc(max, sizeof(*params));
    if (params == NULL)
        return SC_ENOMEM;
    for (const char *p = query; *p && rc == SC_OK;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > 0)
            rc = parse_param(p, len, plus_is_space, &params[n++]);
        p += len + (amp != NULL);
    }
    if (rc != SC_OK) {
        free_params(params, n);
        return rc;
    }
    *out = params;
    *n_out = n;
    return SC_OK;
}

static sc_code canonical_query(const char *query, bool plus_is_space, char **out)
{
    struct qparam *params = NULL;
    size_t n = 0;
    struct sc_buf sb = SC_BUF_INIT;
    if (out == NULL)
        return SC_EINVAL;
    *out = NULL;
    if (query == NULL)
        query = "";
    sc_code rc = check_field(query);
    if (rc == SC_OK)
        rc = parse_query(query, plus_is_space, &params, &n);
    if (rc != SC_OK)
        return rc;
    qsort(params, n, sizeof(*params), qparam_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sc_buf_putc(&sb, '&');
        sc_buf_puts(&sb, params[i].name);
        sc_buf_putc(&sb, '=');
        sc_buf_puts(&sb, params[i].value);
    }
    free_params(params, n);
    return sc_buf_take(&sb, out, NULL);
}

sc_code sigv4_canonical_query(const char *query, char **out)
{
    return canonical_query(query, false, out);
}

sc_code sigv4_forwarded_query(const char *query, char **out)
{
    return canonical_query(query, true, out);
}

/* ---- canonical headers -------------------------------------------------- */

struct hdr {
    char *name;        /* lower-cased copy */
    const char *value; /* the caller's, untrimmed */
    size_t index;      /* position in the request, to keep repeated names in order */
};

static int hdr_cmp(const void *a, const void *b)
{
    const struct hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void free_hdrs(struct hdr *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(h[i].name);
    free(h);
}

static sc_code check_header(const struct sigv4_header *h)
{
    if (!valid_header_name(h->name) || h->value == NULL)
        return SC_EINVAL;
    sc_code rc = check_field(h->value);
    if (rc == SC_OK && strpbrk(h->value, "\r\n") != NULL)
        rc = SC_EINVAL;
    return rc;
}

static char *lower_dup(const char *s)
{
    char *d = strdup(s);
    for (char *p = d; p && *p; p++) {
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    }
    return d;
}

/* Copies, checks, lower-cases and sorts the headers of req. */
static sc_code collect_headers(const struct sigv4_request *req, struct hdr **out)
{
    sc_code rc = SC_OK;
    size_t n = 0;
    if (req->headers == NULL || req->n_headers == 0)
        return SC_EINVAL;
    if (req->n_headers > SIGV4_MAX_HEADERS)
        return SC_ETOOBIG;
    struct hdr *h = calloc(req->n_headers, sizeof(*h));
    if (h == NULL)
        return SC_ENOMEM;
    for (; n < req->n_headers && rc == SC_OK; n++) {
        rc = check_header(&req->headers[n]);
        h[n].name = rc == SC_OK ? lower_dup(req->headers[n].name) : NULL;
        h[n].value = req->headers[n].value;
        h[n].index = n;
        if (rc == SC_OK && h[n].name == NULL)
            rc = SC_ENOMEM;
    }
    if (rc != SC_OK) {
        free_hdrs(h, n);
        return rc;
    }
    qsort(h, n, sizeof(*h), hdr_cmp);
    *out = h;
    return SC_OK;
}

static bool has_header(const struct hdr *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(h[i].name, name) == 0)
            return true;
    }
    return false;
}

/* Appends v with its ends trimmed and inner runs of spaces and tabs made one space. */
static void append_trimmed(struct sc_buf *sb, const char *v)
{
    bool pending_space = false, started = false;
    for (; *v; v++) {
        if (is_blank(*v)) {
            pending_space = started;
            continue;
        }
        if (pending_space)
            sc_buf_putc(sb, ' ');
        sc_buf_putc(sb, *v);
        pending_space = false;
        started = true;
    }
}

/* "name:v1,v2\n" per distinct name, then the "a;b;c" list into signed. */
static void append_headers(struct sc_buf *sb, struct sc_buf *signed_h, const struct hdr *h,
                           size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool repeat = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
        if (repeat) {
            sc_buf_putc(sb, ',');
        } else {
            if (i > 0) {
                sc_buf_putc(sb, '\n');
                sc_buf_putc(signed_h, ';');
            }
            sc_buf_puts(sb, h[i].name);
            sc_buf_putc(sb, ':');
            sc_buf_puts(signed_h, h[i].name);
        }
        append_trimmed(sb, h[i].value);
    }
    sc_buf_putc(sb, '\n');
}

/* ---- canonical request -------------------------------------------------- */

static sc_code check_request(const struct sigv4_request *req)
{
    if (req == NULL || req->method == NULL || req->method[0] == '\0' || req->path == NULL ||
        req->path[0] != '/' || !valid_payload_hash(req->payload_hash) ||
        !valid_header_name(req->method))
        return SC_EINVAL;
    return check_field(req->path);
}

static sc_code check_required(const struct hdr *h, size_t n, bool s3_mode)
{
    if (!has_header(h, n, "host") || !has_header(h, n, "x-amz-date"))
        return SC_EINVAL;
    if (s3_mode && !has_header(h, n, "x-amz-content-sha256"))
        return SC_EINVAL;
    return SC_OK;
}

/*
 * Builds the canonical request into *request and the signed-header list into
 * *signed_headers (both malloc'd, owned by the caller; NULL on error).
 */
static sc_code build_canonical(const struct sigv4_request *req, bool s3_mode, bool required,
                               char **request, char **signed_headers)
{
    struct sc_buf sb = SC_BUF_INIT, sh = SC_BUF_INIT;
    struct hdr *h = NULL;
    char *path = NULL, *query = NULL;
    *request = NULL;
    *signed_headers = NULL;
    sc_code rc = check_request(req);
    if (rc == SC_OK)
        rc = collect_headers(req, &h);
    if (rc == SC_OK && required)
        rc = check_required(h, req->n_headers, s3_mode);
    if (rc == SC_OK)
        rc = canonical_path(req->path, s3_mode, &path);
    if (rc == SC_OK)
        rc = sigv4_canonical_query(req->query, &query);
    if (rc != SC_OK)
        goto out;
    sc_buf_puts(&sb, req->method);
    sc_buf_putc(&sb, '\n');
    sc_buf_puts(&sb, path);
    sc_buf_putc(&sb, '\n');
    sc_buf_puts(&sb, query);
    sc_buf_putc(&sb, '\n');
    append_headers(&sb, &sh, h, req->n_headers);
    sc_buf_putc(&sb, '\n');
    sc_buf_append(&sb, sh.data ? sh.data : "", sh.len);
    sc_buf_putc(&sb, '\n');
    sc_buf_puts(&sb, req->payload_hash);
    rc = sc_buf_take(&sb, request, NULL);
    if (rc == SC_OK)
        rc = sc_buf_take(&sh, signed_headers, NULL);
    else
        sc_buf_free(&sh);
    if (rc != SC_OK) {
        free(*request);
        *request = NULL;
    }
out:
    if (h)
        free_hdrs(h, req->n_headers);
    free(path);
    free(query);
    return rc;
}

sc_code sigv4_canonical_request(const struct sigv4_request *req, bool s3_mode, char **out)
{
    char *signed_headers = NULL;
    if (out == NULL)
        return SC_EINVAL;
    sc_code rc = build_canonical(req, s3_mode, true, out, &signed_headers);
    free(signed_headers);
    return rc;
}

/* ---- string to sign ----------------------------------------------------- */

static bool valid_scope(const struct sigv4_key *key, const char *amz_date)
{
    return key != NULL && valid_scope_part(key->region) && valid_scope_part(key->service) &&
           valid_amz_date(amz_date);
}

sc_code sigv4_string_to_sign(const char *canonical_request, const struct sigv4_key *key,
                             const char *amz_date, char **out)
{
    unsigned char digest[SHA256_LEN];
    char hex[2 * SHA256_LEN + 1];
    struct sc_buf sb = SC_BUF_INIT;
    if (out == NULL)
        return SC_EINVAL;
    *out = NULL;
    if (canonical_request == NULL || !valid_scope(key, amz_date))
        return SC_EINVAL;
    sc_code rc = sha256(canonical_request, strlen(canonical_request), digest);
    if (rc != SC_OK)
        return rc;
    hex_encode(digest, SHA256_LEN, hex);
    sc_buf_puts(&sb, ALGORITHM "\n");
    sc_buf_puts(&sb, amz_date);
    sc_buf_putc(&sb, '\n');
    sc_buf_append(&sb, amz_date, DATE_LEN);
    sc_buf_putc(&sb, '/');
    sc_buf_puts(&sb, key->region);
    sc_buf_putc(&sb, '/');
    sc_buf_puts(&sb, key->service);
    sc_buf_puts(&sb, "/" SCOPE_TAIL "\n");
    sc_buf_puts(&sb, hex);
    return sc_buf_take(&sb, out, NULL);
}

/* ---- signing key and signature ------------------------------------------ */

/*
 * kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service),
 * "aws4_request"). Every intermediate key is wiped; out is the caller's to wipe.
 */
static sc_code derive_signing_key(const struct sigv4_key *key, const char *amz_date,
                                  unsigned char out[SHA256_LEN])
{
    char seed[4 + SIGV4_MAX_SECRET];
    unsigned char k_date[SHA256_LEN], k_region[SHA256_LEN], k_service[SHA256_LEN];
    size_t secret_len = strlen(key->secret_key);
    sc_code rc = SC_OK;
    if (secret_len > SIGV4_MAX_SECRET)
        return SC_ETOOBIG;
    memcpy(seed, "AWS4", 4);
    memcpy(seed + 4, key->secret_key, secret_len);
    rc = hmac_sha256(seed, 4 + secret_len, amz_date, DATE_LEN, k_date);
    if (rc == SC_OK)
        rc = hmac_sha256(k_date, SHA256_LEN, key->region, strlen(key->region), k_region);
    if (rc == SC_OK)
        rc = hmac_sha256(k_region, SHA256_LEN, key->service, strlen(key->service), k_service);
    if (rc == SC_OK)
        rc = hmac_sha256(k_service, SHA256_LEN, SCOPE_TAIL, strlen(SCOPE_TAIL), out);
    OPENSSL_cleanse(seed, sizeof(seed));
    OPENSSL_cleanse(k_date, sizeof(k_date));
    OPENSSL_cleanse(k_region, sizeof(k_region));
    OPENSSL_cleanse(k_service, sizeof(k_service));
    return rc;
}

/* Hex HMAC of the string to sign under the derived key. */
static sc_code compute_signature(const struct sigv4_key *key, const char *amz_date,
                                 const char *string_to_sign, char hex[2 * SHA256_LEN + 1])
{
    unsigned char k_signing[SHA256_LEN], sig[SHA256_LEN];
    sc_code rc = derive_signing_key(key, amz_date, k_signing);
    if (rc == SC_OK)
        rc = hmac_sha256(k_signing, SHA256_LEN, string_to_sign, strlen(string_to_sign), sig);
    if (rc == SC_OK)
        hex_encode(sig, SHA256_LEN, hex);
    OPENSSL_cleanse(k_signing, sizeof(k_signing));
    return rc;
}

/* ---- Authorization header ----------------------------------------------- */

static bool valid_key(const struct sigv4_key *key)
{
    return key != NULL && valid_scope_part(key->access_key) && key->secret_key != NULL &&
           key->secret_key[0] != '\0' && valid_scope_part(key->region) &&
           valid_scope_part(key->service);
}

/* True when every header named name (any case) has the trimmed value want. */
static bool header_values_are(const struct sigv4_request *req, const char *name, const char *want)
{
    size_t want_len = strlen(want);
    for (size_t i = 0; i < req->n_headers; i++) {
        const char *v = req->headers[i].value;
        if (req->headers[i].name == NULL || v == NULL || strcasecmp(req->headers[i].name, name))
            continue;
        while (is_blank(*v))
            v++;
        size_t len = strlen(v);
        while (len > 0 && is_blank(v[len - 1]))
            len--;
        if (len != want_len || memcmp(v, want, len) != 0)
            return false;
    }
    return true;
}

static sc_code check_authorization_args(const struct sigv4_request *req,
                                        const struct sigv4_key *key, const char *amz_date,
                                        bool s3_mode)
{
    if (req == NULL || req->headers == NULL || !valid_key(key) || !valid_amz_date(amz_date) ||
        req->payload_hash == NULL)
        return SC_EINVAL;
    if (!header_values_are(req, "x-amz-date", amz_date))
        return SC_EINVAL;
    if (s3_mode && !header_values_are(req, "x-amz-content-sha256", req->payload_hash))
        return SC_EINVAL;
    return SC_OK;
}

sc_code sigv4_authorization(const struct sigv4_request *req, const struct sigv4_key *key,
                            const char *amz_date, bool s3_mode, char *out, size_t out_len)
{
    char *canonical = NULL, *signed_headers = NULL, *sts = NULL;
    char signature[2 * SHA256_LEN + 1];
    if (out == NULL || out_len == 0)
        return SC_EINVAL;
    out[0] = '\0';
    sc_code rc = check_authorization_args(req, key, amz_date, s3_mode);
    if (rc == SC_OK)
        rc = build_canonical(req, s3_mode, true, &canonical, &signed_headers);
    if (rc == SC_OK)
        rc = sigv4_string_to_sign(canonical, key, amz_date, &sts);
    if (rc == SC_OK)
        rc = compute_signature(key, amz_date, sts, signature);
    if (rc != SC_OK)
        goto out;
    int n = snprintf(
        out, out_len,
        ALGORITHM " Credential=%s/%.8s/%s/%s/" SCOPE_TAIL ", SignedHeaders=%s, Signature=%s",
        key->access_key, amz_date, key->region, key->service, signed_headers, signature);
    if (n < 0 || (size_t)n >= out_len) {
        out[0] = '\0';
        rc = SC_ETOOBIG;
    }
out:
    free(canonical);
    free(signed_headers);
    free(sts);
    return rc;
}

/* ---- verifying a client's signature ------------------------------------ */

sc_code sigv4_signature(const struct sigv4_request *req, const struct sigv4_key *key,
                        const char *amz_date, char out[2 * SHA256_LEN + 1])
{
    char *canonical = NULL, *signed_headers = NULL, *sts = NULL;
    if (out == NULL)
        return SC_EINVAL;
    out[0] = '\0';
    if (req == NULL || !valid_key(key) || !valid_amz_date(amz_date))
        return SC_EINVAL;
    sc_code rc = build_canonical(req, true, false, &canonical, &signed_headers);
    if (rc == SC_OK)
        rc = sigv4_string_to_sign(canonical, key, amz_date, &sts);
    if (rc == SC_OK)
        rc = compute_signature(key, amz_date, sts, out);
    if (rc != SC_OK)
        out[0] = '\0';
    free(canonical);
    free(signed_headers);
    free(sts);
    return rc;
}

/* ---- helpers for callers ------------------------------------------------ */

void sigv4_amz_date(time_t t, char out[17])
{
    struct tm tm;
    out[0] = '\0';
    if (gmtime_r(&t, &tm) == NULL)
        return;
    if (strftime(out, AMZ_DATE_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) != AMZ_DATE_LEN)
        out[0] = '\0';
}

void sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char digest[SHA256_LEN];
    out[0] = '\0';
    if (sha256(data, len, digest) == SC_OK)
        hex_encode(digest, SHA256_LEN, out);
}

sc_code sigv4_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                              char out[65])
{
    unsigned char mac[SHA256_LEN];
    out[0] = '\0';
    sc_code rc = hmac_sha256(key, key_len, data, len, mac);
    if (rc == SC_OK)
        hex_encode(mac, SHA256_LEN, out);
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc;
}
