/*
 * creds.c - loads the gateway's upstream credentials from the environment or
 * the shared credentials file (see creds.h).
 *
 * The file is read whole (bounded by CREDS_MAX_FILE) into one buffer that is
 * parsed in place; the buffer holds secrets, so it is wiped before it is
 * freed, and so is every handle, by creds_free().
 */
#include "creds.h"
#include "sigv4_int.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PROFILE "default"
#define DEFAULT_FILE    "/.aws/credentials"

/* What the wanted profile says; pointers into the file buffer. */
struct profile {
    const char *access_key;
    const char *secret_key;
    const char *session_token;
    bool found;     /* a [name] section for the profile exists */
    bool malformed; /* a line of the profile, or a section header, is broken */
};

/* ---- environment -------------------------------------------------------- */

/* Returns the variable, or NULL when it is unset or empty. */
static const char *env_get(creds_getenv_fn getenv_fn, void *ctx, const char *name)
{
    const char *v = getenv_fn(ctx, name);
    return v && *v ? v : NULL;
}

/* Duplicates the three strings into out; on ENOMEM out is cleared. */
static sc_code fill_creds(const char *key, const char *secret, const char *token, struct creds *out)
{
    out->access_key = strdup(key);
    out->secret_key = strdup(secret);
    out->session_token = token ? strdup(token) : NULL;
    if (!out->access_key || !out->secret_key || (token && !out->session_token)) {
        creds_clear(out);
        return SC_ENOMEM;
    }
    return SC_OK;
}

/* SC_ENOTFOUND when AWS_ACCESS_KEY_ID is unset, as the SDKs do. */
static sc_code from_env(creds_getenv_fn getenv_fn, void *ctx, struct creds *out)
{
    const char *key = env_get(getenv_fn, ctx, "AWS_ACCESS_KEY_ID");
    const char *secret = env_get(getenv_fn, ctx, "AWS_SECRET_ACCESS_KEY");
    if (key == NULL)
        return SC_ENOTFOUND;
    if (secret == NULL)
        return SC_EINVAL;
    return fill_creds(key, secret, env_get(getenv_fn, ctx, "AWS_SESSION_TOKEN"), out);
}

/* ---- the file ----------------------------------------------------------- */

static char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

/* The credentials file path (malloc'd), or SC_ENOTFOUND when none can be named. */
static sc_code credentials_path(creds_getenv_fn getenv_fn, void *ctx, char **out)
{
    const char *file = env_get(getenv_fn, ctx, "AWS_SHARED_CREDENTIALS_FILE");
    const char *home = env_get(getenv_fn, ctx, "HOME");
    if (file && strncmp(file, "~/", 2) == 0 && home)
        *out = join(home, file + 1);
    else if (file)
        *out = strdup(file);
    else if (home)
        *out = join(home, DEFAULT_FILE);
    else
        return SC_ENOTFOUND;
    return *out ? SC_OK : SC_ENOMEM;
}

static sc_code open_file(const char *path, int *fd_out, size_t *size)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        return SC_ENOTFOUND;
    if (fd < 0)
        return errno == EACCES || errno == EPERM ? SC_EACCES : SC_EIO;
    sc_code rc = SC_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = SC_EIO;
    else if (st.st_size > CREDS_MAX_FILE)
        rc = SC_ETOOBIG;
    if (rc != SC_OK) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    *size = (size_t)st.st_size;
    return SC_OK;
}

/* Reads the whole file into a NUL-terminated malloc'd buffer of *len bytes. */
static sc_code read_file(const char *path, char **buf_out, size_t *len_out)
{
    int fd = -1;
    size_t size = 0, len = 0;
    sc_code rc = open_file(path, &fd, &size);
    if (rc != SC_OK)
        return rc;
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        rc = SC_ENOMEM;
        goto out;
    }
    while (len < size) {
        ssize_t n = read(fd, buf + len, size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = SC_EIO;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    buf = NULL;
out:
    if (buf) {
        OPENSSL_cleanse(buf, size + 1);
        free(buf);
    }
    close(fd);
    return rc;
}

/* ---- INI parsing -------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Trims s in place at both ends; returns the new start. */
static char *trim(char *s)
{
    while (is_space(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Cuts s at the first '#' or ';' that follows whitespace. */
static void strip_inline_comment(char *s)
{
    for (char *p = s + 1; *s && *p; p++) {
        if ((*p == '#' || *p == ';') && is_space(p[-1])) {
            *p = '\0';
            return;
        }
    }
}

/* Parses "[name]" (after trimming); false when the closing ']' is missing. */
static bool parse_section(char *line, char **name)
{
    char *end = strchr(line, ']');
    if (end == NULL)
        return false;
    *end = '\0';
    char *rest = trim(end + 1);
    if (*rest != '\0' && *rest != '#' && *rest != ';')
        return false;
    *name = trim(line + 1);
    return true;
}

/* Records one "key = value" line of the wanted profile. */
static void parse_property(char *line, struct profile *p)
{
    char *eq = strchr(line, '=');
    if (eq == NULL) {
        p->malformed = true;
        return;
    }
    *eq = '\0';
    char *key = trim(line);
    char *value = eq + 1;
    strip_inline_comment(value);
    value = trim(value);
    if (strcasecmp(key, "aws_access_key_id") == 0)
        p->access_key = value;
    else if (strcasecmp(key, "aws_secret_access_key") == 0)
        p->secret_key = value;
    else if (strcasecmp(key, "aws_session_token") == 0)
        p->session_token = value;
}

/* Scans buf (modified in place) for the section named profile. */
static void parse_profile(char *buf, const char *profile, struct profile *p)
{
    bool inside = false;
    for (char *line = buf; line != NULL;) {
        /* LF, CRLF (an empty line between) or a lone CR ends a line, as botocore reads it */
        char *nl = strpbrk(line, "\r\n");
        if (nl)
            *nl = '\0';
        char *s = trim(line);
        char *name = NULL;
        if (*s == '[' && !parse_section(s, &name)) {
            p->malformed = true;
            inside = false;
        } else if (*s == '[') {
            inside = strcmp(name, profile) == 0;
            p->found = p->found || inside;
        } else if (inside && *s != '\0' && *s != '#' && *s != ';') {
            parse_property(s, p);
        }
        line = nl ? nl + 1 : NULL;
    }
}

static sc_code from_file(creds_getenv_fn getenv_fn, void *ctx, struct creds *out)
{
    char *path = NULL, *buf = NULL;
    size_t len = 0;
    struct profile p = {0};
    const char *profile = env_get(getenv_fn, ctx, "AWS_PROFILE");
    sc_code rc = credentials_path(getenv_fn, ctx, &path);
    if (rc == SC_OK)
        rc = read_file(path, &buf, &len);
    if (rc != SC_OK)
        goto out;
    parse_profile(buf, profile ? profile : DEFAULT_PROFILE, &p);
    if (!p.found || p.malformed || !p.access_key || !*p.access_key || !p.secret_key ||
        !*p.secret_key) {
        rc = SC_EINVAL;
        goto out;
    }
    rc = fill_creds(p.access_key, p.secret_key,
                    p.session_token && *p.session_token ? p.session_token : NULL, out);
out:
    if (buf) {
        OPENSSL_cleanse(buf, len);
        free(buf);
    }
    free(path);
    return rc;
}

/* ---- public ------------------------------------------------------------- */

/* Loads into a zeroed c; on failure c is left zeroed. */
static sc_code load_into(creds_getenv_fn getenv_fn, void *ctx, struct creds *c)
{
    sc_code rc = from_env(getenv_fn, ctx, c);
    if (rc == SC_ENOTFOUND)
        rc = from_file(getenv_fn, ctx, c);
    if (rc != SC_OK)
        creds_clear(c);
    return rc;
}

sc_code creds_load_from(creds_getenv_fn getenv_fn, void *ctx, struct creds **out)
{
    if (out == NULL)
        return SC_EINVAL;
    *out = NULL;
    if (getenv_fn == NULL)
        return SC_EINVAL;
    struct creds *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return SC_ENOMEM;
    sc_code rc = load_into(getenv_fn, ctx, c);
    if (rc != SC_OK) {
        free(c);
        return rc;
    }
    *out = c;
    return SC_OK;
}

static const char *process_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

sc_code creds_load(struct creds **out)
{
    return creds_load_from(process_getenv, NULL, out);
}

sc_code creds_new(const char *access_key, const char *secret_key, const char *token,
                  struct creds **out)
{
    *out = NULL;
    struct creds *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return SC_ENOMEM;
    sc_code rc = fill_creds(access_key, secret_key, token, c);
    if (rc != SC_OK) {
        free(c);
        return rc;
    }
    *out = c;
    return SC_OK;
}

sc_code creds_copy(const struct creds *c, struct creds **out)
{
    return creds_new(c->access_key, c->secret_key, c->session_token, out);
}

const char *creds_access_key(const struct creds *c)
{
    return c->access_key;
}

const char *creds_session_token(const struct creds *c)
{
    return c->session_token;
}

sc_code creds_authorization(const struct creds *c, const struct sigv4_request *req,
                            const char *region, const char *amz_date, char **out)
{
    /* Credential scope and signature take ~200 bytes; SignedHeaders lists every name. */
    size_t cap = 256 + strlen(c->access_key) + strlen(region);
    for (size_t i = 0; i < req->n_headers; i++)
        cap += strlen(req->headers[i].name) + 1;
    *out = malloc(cap);
    if (*out == NULL)
        return SC_ENOMEM;
    struct sigv4_key key = {c->access_key, c->secret_key, region, "s3"};
    sc_code rc = sigv4_authorization(req, &key, amz_date, true, *out, cap);
    if (rc != SC_OK) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

static void wipe_free(char **s)
{
    if (*s) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void creds_clear(struct creds *c)
{
    if (c == NULL)
        return;
    wipe_free(&c->access_key);
    wipe_free(&c->secret_key);
    wipe_free(&c->session_token);
}

void creds_free(struct creds *c)
{
    creds_clear(c);
    free(c);
}
