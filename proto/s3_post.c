/*
 * s3_post.c - the key of a PostObject form body (see s3_post.h).
 *
 * Parts are separated by CRLF "--" boundary; each has header lines, an empty
 * line, then its value. Only Content-Disposition matters here: its name
 * parameter (compared case-insensitively, as S3 does for form field names) and,
 * on the file part, its filename.
 */
#include "s3_post.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BOUNDARY_MAX 70 /* RFC 2046 */
#define KEY_MAX      1024
#define PARAM_MAX    1024
#define FILENAME_VAR "${filename}"

struct form {
    char *key;                /* the key field's value, NULL until found */
    char filename[PARAM_MAX]; /* the file part's filename */
    bool have_file;           /* the file part's headers were read */
};

static const char *find_mem(const char *p, const char *end, const char *s, size_t n)
{
    for (; (size_t)(end - p) >= n; p++)
        if (memcmp(p, s, n) == 0)
            return p;
    return NULL;
}

/* Copies the boundary parameter of a multipart/form-data Content-Type into out. */
static sc_code boundary_of(const char *ct, char *out)
{
    if (ct == NULL || strncasecmp(ct, "multipart/form-data", 19) != 0)
        return SC_EINVAL;
    const char *b = strcasestr(ct, "boundary=");
    if (b == NULL)
        return SC_EINVAL;
    b += 9;
    bool quoted = *b == '"';
    b += quoted;
    size_t n = quoted ? strcspn(b, "\"") : strcspn(b, "; \t");
    if (n == 0 || n > BOUNDARY_MAX || (quoted && b[n] != '"'))
        return SC_EINVAL;
    memcpy(out, b, n);
    out[n] = '\0';
    return SC_OK;
}

/*
 * Copies parameter name's value from a Content-Disposition line [p, end) into out.
 * Returns SC_ENOTFOUND when absent, SC_EINVAL when it is not a plain quoted or
 * token value (escapes, RFC 5987 name*= forms).
 */
static sc_code disposition_param(const char *p, const char *end, const char *name, char *out)
{
    size_t nlen = strlen(name);
    for (const char *s = p; s < end; s++) {
        if (*s != ';')
            continue;
        const char *a = s + 1;
        while (a < end && (*a == ' ' || *a == '\t'))
            a++;
        if ((size_t)(end - a) > nlen && strncasecmp(a, name, nlen) == 0 && a[nlen] == '*')
            return SC_EINVAL;
        if ((size_t)(end - a) <= nlen || strncasecmp(a, name, nlen) != 0 || a[nlen] != '=')
            continue;
        const char *v = a + nlen + 1, *ve;
        if (v < end && *v == '"') {
            v++;
            ve = memchr(v, '"', (size_t)(end - v));
            if (ve == NULL || memchr(v, '\\', (size_t)(ve - v)) != NULL)
                return SC_EINVAL;
        } else {
            ve = v;
            while (ve < end && *ve != ';' && *ve != ' ' && *ve != '\t')
                ve++;
        }
        if ((size_t)(ve - v) >= PARAM_MAX)
            return SC_EINVAL;
        memcpy(out, v, (size_t)(ve - v));
        out[ve - v] = '\0';
        return SC_OK;
    }
    return SC_ENOTFOUND;
}

/* Finds the name (and filename) of a part from its header block [p, end). */
static sc_code part_names(const char *p, const char *end, char *name, char *filename,
                          bool *has_filename)
{
    static const char cd[] = "content-disposition:";
    sc_code rc = SC_EINVAL;
    *has_filename = false;
    while (p < end) {
        const char *eol = find_mem(p, end, "\r\n", 2);
        const char *le = eol != NULL ? eol : end;
        if ((size_t)(le - p) > sizeof(cd) - 1 && strncasecmp(p, cd, sizeof(cd) - 1) == 0) {
            if (rc == SC_OK)
                return SC_EINVAL; /* two dispositions */
            rc = disposition_param(p, le, "name", name);
            sc_code frc = rc == SC_OK ? disposition_param(p, le, "filename", filename) : rc;
            if (frc == SC_EINVAL)
                return SC_EINVAL;
            *has_filename = frc == SC_OK;
        }
        p = le + 2;
    }
    return rc;
}

/* Reads one part [p, end) (headers, CRLF CRLF, value); complete says value ends at end. */
static sc_code read_part(struct form *f, const char *p, const char *end, bool complete)
{
    const char *hend = find_mem(p, end, "\r\n\r\n", 4);
    if (hend == NULL)
        return SC_EINVAL; /* headers cut off by the end of what was kept */
    char name[PARAM_MAX];
    bool has_filename;
    sc_code rc = part_names(p, hend, name, f->filename, &has_filename);
    if (rc != SC_OK)
        return SC_EINVAL;
    if (strcasecmp(name, "file") == 0) {
        f->have_file = true;
        if (!has_filename)
            f->filename[0] = '\0';
        return SC_OK;
    }
    if (strcasecmp(name, "key") != 0)
        return SC_OK;
    const char *v = hend + 4;
    if (!complete || f->key != NULL || (size_t)(end - v) > KEY_MAX ||
        memchr(v, '\0', (size_t)(end - v)))
        return SC_EINVAL;
    f->key = strndup(v, (size_t)(end - v));
    return f->key != NULL ? SC_OK : SC_ENOMEM;
}

/* A filename every upstream takes as it is: not empty, no path, no quote or control character. */
static bool plain_filename(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '"')
            return false;
    }
    return true;
}

/* The key with "${filename}" replaced by the file's name; NULL if it has none. */
static sc_code expand_key(const struct form *f, char **out)
{
    const char *var = strstr(f->key, FILENAME_VAR);
    *out = NULL;
    if (var == NULL)
        return SC_OK;
    if (strstr(var + 1, FILENAME_VAR) != NULL || !plain_filename(f->filename))
        return SC_EINVAL; /* several, or an odd name: not certain what the upstream makes of it */
    size_t pre = (size_t)(var - f->key), nlen = strlen(f->filename);
    size_t post = strlen(var + strlen(FILENAME_VAR));
    if (pre + nlen + post > KEY_MAX)
        return SC_EINVAL;
    char *k = malloc(pre + nlen + post + 1);
    if (k == NULL)
        return SC_ENOMEM;
    memcpy(k, f->key, pre);
    memcpy(k + pre, f->filename, nlen);
    memcpy(k + pre + nlen, var + strlen(FILENAME_VAR), post + 1);
    *out = k;
    return SC_OK;
}

sc_code s3_post_form_key(const char *content_type, const char *body, size_t len, char **key,
                         char **expanded)
{
    char boundary[BOUNDARY_MAX + 1], delim[BOUNDARY_MAX + 5];
    *key = *expanded = NULL;
    if (boundary_of(content_type, boundary) != SC_OK)
        return SC_EINVAL;
    size_t dlen = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
    const char *end = body + len;
    /* The first delimiter may open the body (without the CRLF) or follow a preamble. */
    const char *p;
    if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0) {
        p = body + dlen - 2;
    } else {
        p = find_mem(body, end, delim, dlen);
        if (p == NULL)
            return SC_EINVAL;
        p += dlen;
    }
    struct form f = {.key = NULL};
    sc_code rc = SC_OK;
    while (rc == SC_OK && !f.have_file) {
        if ((size_t)(end - p) < 2 || memcmp(p, "\r\n", 2) != 0) {
            rc = SC_EINVAL; /* "--" closes the form (no file part), or it was cut */
            break;
        }
        p += 2;
        const char *next = find_mem(p, end, delim, dlen);
        rc = read_part(&f, p, next != NULL ? next : end, next != NULL);
        if (rc == SC_OK && !f.have_file && next == NULL)
            rc = SC_EINVAL; /* cut before the file part */
        p = next != NULL ? next + dlen : end;
    }
    if (rc == SC_OK && f.key == NULL)
        rc = SC_EINVAL;
    if (rc == SC_OK)
        rc = expand_key(&f, expanded);
    if (rc == SC_OK)
        *key = f.key;
    else
        free(f.key);
    return rc;
}
