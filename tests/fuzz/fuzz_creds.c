/*
 * fuzz_creds.c - the shared credentials file parser (sigv4/creds.h).
 *
 * Input: the file. When its first line is "#profile=NAME" (a comment to the
 * parser) NAME is the AWS_PROFILE; otherwise the profile is "default". The
 * file is handed over as a memfd, the environment is a table.
 * Invariants: the result is one of the documented codes and leaves nothing
 * behind on error; loaded credentials are a non-empty key and secret and an
 * optional non-empty token, each free of surrounding whitespace, of line
 * breaks and of inline comments, and each a substring of the file; loading
 * twice gives the same.
 */
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../sigv4/creds.h"
#include "../../sigv4/sigv4_int.h"
#include "fuzz.h"

struct env {
    char path[64];
    const char *profile;
};

static const char *fake_getenv(void *ctx, const char *name)
{
    struct env *e = ctx;
    if (strcmp(name, "AWS_SHARED_CREDENTIALS_FILE") == 0)
        return e->path;
    if (strcmp(name, "AWS_PROFILE") == 0)
        return e->profile;
    return NULL; /* no keys in the environment, no HOME */
}

static void check_value(const char *v, const char *file, size_t len)
{
    size_t n = strlen(v);
    FZ_CHECK(n > 0 && strpbrk(v, "\r\n") == NULL);
    FZ_CHECK(strchr(" \t\f\v", v[0]) == NULL && strchr(" \t\f\v", v[n - 1]) == NULL);
    for (size_t i = 1; i < n; i++)
        FZ_CHECK(!((v[i] == '#' || v[i] == ';') && strchr(" \t\f\v", v[i - 1]) != NULL));
    bool found = false;
    for (size_t i = 0; !found && i + n <= len; i++)
        found = memcmp(file + i, v, n) == 0;
    FZ_CHECK(found);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    struct env e = {{0}, NULL};
    fz_init(&f, data, size);
    char *file = fz_rest(&f, &len);
    char *profile = NULL;
    if (strncmp(file, "#profile=", 9) == 0) {
        size_t n = strcspn(file + 9, "\n");
        profile = fz_dup(file + 9, n);
        e.profile = profile;
    }
    int fd = memfd_create("fuzz-creds", MFD_CLOEXEC);
    FZ_CHECK(fd >= 0);
    FZ_CHECK(write(fd, file, len) == (ssize_t)len);
    snprintf(e.path, sizeof(e.path), "/proc/self/fd/%d", fd);

    struct creds *c = NULL, *c2 = NULL;
    sc_code rc = creds_load_from(fake_getenv, &e, &c);
    sc_code rc2 = creds_load_from(fake_getenv, &e, &c2);
    FZ_CHECK(rc == rc2);
    if (rc != SC_OK) {
        FZ_CHECK(rc == SC_EINVAL || rc == SC_ENOMEM);
        FZ_CHECK(c == NULL && c2 == NULL); /* nothing handed out */
    } else {
        check_value(c->access_key, file, len);
        check_value(c->secret_key, file, len);
        if (c->session_token != NULL)
            check_value(c->session_token, file, len);
        FZ_CHECK(strcmp(c->access_key, c2->access_key) == 0);
        FZ_CHECK(strcmp(c->secret_key, c2->secret_key) == 0);
        FZ_CHECK((c->session_token == NULL) == (c2->session_token == NULL));
    }
    creds_free(c);
    creds_free(c2);
    close(fd);
    free(profile);
    free(file);
    return 0;
}
