/*
 * input.c - reading a whole input file, or stdin for "-", with a size bound
 * (see ctl.h), so a wrong path or a huge file fails before any request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define READ_STEP 65536

static sc_code read_all(FILE *f, const char *name, size_t max, char **data, size_t *len, char *err,
                        size_t err_len)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    sc_code rc = SC_ENOMEM;
    for (;;) {
        if (cap - n < READ_STEP + 1) {
            size_t grown_cap = cap ? cap * 2 : READ_STEP * 2;
            char *grown = realloc(buf, grown_cap);
            if (grown == NULL)
                goto out;
            buf = grown;
            cap = grown_cap;
        }
        size_t got = fread(buf + n, 1, READ_STEP, f);
        n += got;
        if (n > max) {
            snprintf(err, err_len, "%s is larger than %zu MiB, the gateway's limit", name,
                     max >> 20);
            rc = SC_ETOOBIG;
            goto out;
        }
        if (got < READ_STEP)
            break;
    }
    if (ferror(f)) {
        snprintf(err, err_len, "cannot read %s: %s", name, strerror(errno));
        rc = SC_EIO;
        goto out;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    buf = NULL;
    rc = SC_OK;
out:
    free(buf);
    return rc;
}

sc_code ctl_read_input(const char *path, size_t max, char **data, size_t *len, char *err,
                       size_t err_len)
{
    bool is_stdin = strcmp(path, "-") == 0;
    *data = NULL;
    *len = 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
        return SC_EIO;
    }
    sc_code rc = read_all(f, is_stdin ? "stdin" : path, max, data, len, err, err_len);
    if (!is_stdin)
        fclose(f);
    if (rc == SC_ENOMEM)
        snprintf(err, err_len, "out of memory reading %s", path);
    return rc;
}
