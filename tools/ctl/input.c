/*
 * input.c - reading a whole input file, or stdin for "-", with a size bound
 * (see ctl.h), so a wrong path or a huge file fails before any request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "ctl.h"

#define READ_STEP 65536

static sc_code read_all(FILE *f, const char *name, size_t max, char **data, size_t *len, char *err,
                        size_t err_len)
{
    struct sc_buf buf;
    char chunk[READ_STEP];
    size_t got;
    sc_code rc;
    sc_buf_init(&buf, max);
    do {
        got = fread(chunk, 1, sizeof(chunk), f);
        rc = sc_buf_append(&buf, chunk, got);
    } while (rc == SC_OK && got == sizeof(chunk));
    if (rc == SC_ETOOBIG)
        snprintf(err, err_len, "%s is larger than %zu MiB, the gateway's limit", name, max >> 20);
    if (rc == SC_OK && ferror(f)) {
        snprintf(err, err_len, "cannot read %s: %s", name, strerror(errno));
        rc = SC_EIO;
    }
    if (rc == SC_OK)
        return sc_buf_take(&buf, data, len);
    sc_buf_free(&buf);
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
