/*
 * fuzz_sigv4.c - SigV4 canonicalization and signing (sigv4/sigv4.h) of what
 * a client controls: the method, the path, the query (presigned URLs
 * included) and the x-amz-* headers the gateway forwards and signs.
 *
 * Input: '\n'-separated fields: "generic" for the generic rules (anything
 * else: S3 rules), method, path, query, then one "name:value" header per line.
 * The gateway's own host, x-amz-date and x-amz-content-sha256 come first, as
 * upstream.c sends them.
 * Invariants:
 *  - canonical query: refused exactly when the query is over SIGV4_MAX_FIELD
 *    or holds a bad escape; otherwise every piece is "name=value" encoded the
 *    canonical way (unreserved bytes plain, every other byte %XX upper-case),
 *    the pieces are sorted, and canonicalizing again changes nothing (the
 *    gateway sends the canonical query on the wire and signs it once more);
 *  - canonical request: method, path, query, headers, signed list and payload
 *    hash in their lines; S3 mode's path is the wire path decoded and encoded
 *    once; generic mode's has no ".", ".." or empty segment; the signed list
 *    is the sorted distinct lower-cased header names;
 *  - Authorization: refused whenever the canonical request is; otherwise its
 *    form is exact, signing is deterministic, the signature is the HMAC chain
 *    recomputed here with OpenSSL over that canonical request, and signing the
 *    canonical query gives the same value as signing the raw one.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdbool.h>

#include "../../common/uri.h"
#include "../../sigv4/sigv4.h"
#include "fuzz.h"

#define DATE             "20130524T000000Z"
#define ACCESS_KEY       "AKIAIOSFODNN7EXAMPLE"
#define SECRET_KEY       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define MAX_FUZZ_HEADERS 60
#define AUTH_LEN         4096

static const struct sigv4_key key = {ACCESS_KEY, SECRET_KEY, "us-east-1", "s3"};

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* True if s[0..len) is canonically encoded: plain unreserved bytes, %XX for all others. */
static bool canonical_encoding(const char *s, size_t len, bool keep_slash)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= len)
                return false;
            int hi = uri_hex_digit(s[i + 1]), lo = uri_hex_digit(s[i + 2]);
            if (hi < 0 || lo < 0 || (s[i + 1] >= 'a') || (s[i + 2] >= 'a'))
                return false;
            unsigned char b = (unsigned char)(hi << 4 | lo);
            if (unreserved(b) || (keep_slash && b == '/'))
                return false;
            i += 2;
        } else if (!unreserved(c) && !(keep_slash && c == '/')) {
            return false;
        }
    }
    return true;
}

static void check_canonical_query(const char *q)
{
    const char *prev = NULL;
    size_t prev_len = 0;
    for (const char *p = q; *p != '\0';) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        FZ_CHECK(len > 0);
        const char *eq = memchr(p, '=', len);
        FZ_CHECK(eq != NULL && memchr(eq + 1, '=', len - (size_t)(eq + 1 - p)) == NULL);
        FZ_CHECK(canonical_encoding(p, (size_t)(eq - p), false));
        FZ_CHECK(canonical_encoding(eq + 1, len - (size_t)(eq + 1 - p), false));
        if (prev != NULL) {
            /* sorted by name, then value: compare the names first */
            const char *peq = memchr(prev, '=', prev_len);
            size_t pn = (size_t)(peq - prev), n = (size_t)(eq - p);
            int c = memcmp(prev, p, pn < n ? pn : n);
            if (c == 0 && pn != n)
                c = pn < n ? -1 : 1;
            if (c == 0) {
                size_t pv = prev_len - pn - 1, v = len - n - 1;
                c = memcmp(peq + 1, eq + 1, pv < v ? pv : v);
                if (c == 0)
                    c = pv < v ? -1 : pv > v ? 1 : 0;
            }
            FZ_CHECK(c <= 0);
        }
        prev = p;
        prev_len = len;
        p += len + (amp != NULL);
        FZ_CHECK(amp == NULL || *p != '\0');
    }
}

/* Checks the canonical query of raw; returns it (malloc'd) or NULL when refused. */
static char *check_query(const char *raw)
{
    char *q = NULL, *again = NULL, *plain = NULL;
    sc_code rc = sigv4_canonical_query(raw, &q);
    if (strlen(raw) > SIGV4_MAX_FIELD) {
        FZ_CHECK(rc == SC_ETOOBIG && q == NULL);
        return NULL;
    }
    sc_code dec = uri_decode(raw, strlen(raw), &plain);
    free(plain);
    FZ_CHECK(rc == (dec == SC_OK ? SC_OK : SC_EINVAL));
    if (rc != SC_OK) {
        FZ_CHECK(q == NULL);
        return NULL;
    }
    check_canonical_query(q);
    rc = sigv4_canonical_query(q, &again);
    if (strlen(q) <= SIGV4_MAX_FIELD)
        FZ_CHECK(rc == SC_OK && strcmp(again, q) == 0);
    free(again);
    return q;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted, distinct, lower-cased names of h[0..n), joined with ';' (malloc'd). */
static char *signed_list(const struct sigv4_header *h, size_t n)
{
    char **names = calloc(n, sizeof(*names));
    size_t total = 1;
    FZ_CHECK(names != NULL);
    for (size_t i = 0; i < n; i++) {
        names[i] = fz_dup(h[i].name, strlen(h[i].name));
        for (char *p = names[i]; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        total += strlen(names[i]) + 1;
    }
    qsort(names, n, sizeof(*names), cmp_names);
    char *out = fz_dup("", total);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
            continue;
        if (out[0] != '\0')
            strcat(out, ";");
        strcat(out, names[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return out;
}

static void check_path_line(const char *line, size_t len, const char *path, bool s3_mode)
{
    if (s3_mode) {
        char *plain = NULL, *enc = NULL;
        FZ_CHECK(uri_decode(path, strlen(path), &plain) == SC_OK);
        FZ_CHECK(uri_encode(plain, strlen(plain), true, &enc) == SC_OK);
        FZ_CHECK(strlen(enc) == len && memcmp(enc, line, len) == 0);
        free(plain);
        free(enc);
        return;
    }
    FZ_CHECK(len >= 1 && line[0] == '/' && canonical_encoding(line, len, true));
    /* normalized: no empty, "." or ".." segment; a trailing '/' may stay */
    for (const char *p = line + 1, *end = line + len; p < end;) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        size_t seg = slash ? (size_t)(slash - p) : (size_t)(end - p);
        FZ_CHECK(seg > 0);
        FZ_CHECK(!(seg == 1 && p[0] == '.') && !(seg == 2 && p[0] == '.' && p[1] == '.'));
        p += seg + 1;
    }
}

/* Splits the canonical request into lines and checks each against the request. */
static void check_canonical_request(const char *cr, const struct sigv4_request *req, bool s3_mode,
                                    const char *query)
{
    const char *line[3 + SIGV4_MAX_HEADERS + 3];
    size_t len[3 + SIGV4_MAX_HEADERS + 3], n = 0;
    for (const char *p = cr;; n++) {
        FZ_CHECK(n < sizeof(line) / sizeof(line[0]));
        const char *nl = strchr(p, '\n');
        line[n] = p;
        len[n] = nl ? (size_t)(nl - p) : strlen(p);
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    n++;
    FZ_CHECK(n >= 7);
    FZ_CHECK(len[0] == strlen(req->method) && memcmp(line[0], req->method, len[0]) == 0);
    check_path_line(line[1], len[1], req->path, s3_mode);
    FZ_CHECK(query != NULL && len[2] == strlen(query) && memcmp(line[2], query, len[2]) == 0);
    FZ_CHECK(len[n - 3] == 0);
    char *sl = signed_list(req->headers, req->n_headers);
    FZ_CHECK(len[n - 2] == strlen(sl) && memcmp(line[n - 2], sl, len[n - 2]) == 0);
    FZ_CHECK(strcmp(line[n - 1], req->payload_hash) == 0);
    /* one "name:value" line per distinct name, in the signed list's order */
    size_t distinct = 1;
    for (const char *p = sl; *p; p++)
        distinct += *p == ';';
    FZ_CHECK(n - 6 == distinct);
    const char *name = sl;
    for (size_t i = 3; i < n - 3; i++) {
        size_t nl = strcspn(name, ";");
        FZ_CHECK(len[i] > nl && memcmp(line[i], name, nl) == 0 && line[i][nl] == ':');
        name += nl + (name[nl] == ';');
    }
    free(sl);
}

static void hmac(const void *k, size_t klen, const void *d, size_t dlen, unsigned char out[32])
{
    unsigned int olen = 0;
    FZ_CHECK(HMAC(EVP_sha256(), k, (int)klen, d, dlen, out, &olen) != NULL && olen == 32);
}

/* The signature of canonical request cr, computed here from the specification. */
static void expected_signature(const char *cr, char hex[65])
{
    unsigned char digest[32], k[32];
    char sts[256], dhex[65];
    unsigned int dlen = 0;
    FZ_CHECK(EVP_Digest(cr, strlen(cr), digest, &dlen, EVP_sha256(), NULL) == 1);
    for (int i = 0; i < 32; i++)
        snprintf(dhex + 2 * i, 3, "%02x", digest[i]);
    snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%.8s/us-east-1/s3/aws4_request\n%s", DATE,
             DATE, dhex);
    hmac("AWS4" SECRET_KEY, strlen("AWS4" SECRET_KEY), DATE, 8, k);
    hmac(k, 32, "us-east-1", 9, k);
    hmac(k, 32, "s3", 2, k);
    hmac(k, 32, "aws4_request", 12, k);
    hmac(k, 32, sts, strlen(sts), digest);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

static void check_authorization(const struct sigv4_request *req, const char *cr,
                                const char *canonical_query)
{
    char *auth = fz_dup("", AUTH_LEN), *again = fz_dup("", AUTH_LEN);
    sc_code rc = sigv4_authorization(req, &key, DATE, true, auth, AUTH_LEN);
    if (cr == NULL) {
        FZ_CHECK(rc != SC_OK && auth[0] == '\0');
        goto out;
    }
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL || rc == SC_ETOOBIG);
    if (rc != SC_OK) {
        FZ_CHECK(auth[0] == '\0');
        goto out;
    }
    char *sl = signed_list(req->headers, req->n_headers);
    char sig[65];
    expected_signature(cr, sig);
    snprintf(again, AUTH_LEN,
             "AWS4-HMAC-SHA256 Credential=" ACCESS_KEY "/20130524/us-east-1/s3/aws4_request, "
             "SignedHeaders=%s, Signature=%s",
             sl, sig);
    FZ_CHECK(strcmp(auth, again) == 0);
    free(sl);
    struct sigv4_request wire = *req;
    wire.query = canonical_query;
    FZ_CHECK(sigv4_authorization(&wire, &key, DATE, true, again, AUTH_LEN) == SC_OK);
    FZ_CHECK(strcmp(auth, again) == 0);
out:
    free(auth);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    fz_init(&f, data, size);
    char *mode = fz_line(&f, NULL);
    char *method = fz_line(&f, NULL);
    char *path = fz_line(&f, NULL);
    char *query = fz_line(&f, NULL);
    bool s3_mode = strcmp(mode, "generic") != 0;
    struct sigv4_header h[3 + MAX_FUZZ_HEADERS];
    char *lines[MAX_FUZZ_HEADERS];
    size_t n = 0, nl = 0;
    h[n++] = (struct sigv4_header){"host", "examplebucket.s3.amazonaws.com"};
    h[n++] = (struct sigv4_header){"x-amz-date", DATE};
    h[n++] = (struct sigv4_header){"x-amz-content-sha256", SIGV4_EMPTY_SHA256};
    while (f.left > 0 && nl < MAX_FUZZ_HEADERS) {
        char *l = lines[nl++] = fz_line(&f, NULL);
        char *colon = strchr(l, ':');
        if (colon != NULL)
            *colon = '\0';
        h[n++] = (struct sigv4_header){l, colon ? colon + 1 : ""};
    }
    struct sigv4_request req = {method, path, query, h, n, SIGV4_EMPTY_SHA256};

    char *cq = check_query(query);
    char *cr = NULL, *cr_s3 = NULL;
    sc_code rc = sigv4_canonical_request(&req, s3_mode, &cr);
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL || rc == SC_ETOOBIG);
    FZ_CHECK((rc == SC_OK) == (cr != NULL));
    if (rc == SC_OK) {
        FZ_CHECK(cq != NULL);
        check_canonical_request(cr, &req, s3_mode, cq);
    }
    if (sigv4_canonical_request(&req, true, &cr_s3) == SC_OK)
        FZ_CHECK(cq != NULL);
    check_authorization(&req, cr_s3, cq);

    free(cr);
    free(cr_s3);
    free(cq);
    for (size_t i = 0; i < nl; i++)
        free(lines[i]);
    free(mode);
    free(method);
    free(path);
    free(query);
    return 0;
}
