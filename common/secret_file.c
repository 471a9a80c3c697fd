/* secret_file.c - reading a file that holds a secret (see secret_file.h). */
#define _DEFAULT_SOURCE /* explicit_bzero */
#include "secret_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* Opens path and checks it is a regular file nobody else may change, of at most max bytes;
 * warns if others can read it. */
static sc_code open_checked(const char *path, size_t max, int *fd_out, size_t *size, char *err,
                            size_t err_len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
        return SC_EIO;
    }
    sc_code rc = SC_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "%s is not a regular file", path);
        rc = SC_EIO;
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, err_len, "%s is writable by group or others (mode %03o): chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
        rc = SC_EIO;
    } else if ((uint64_t)st.st_size > max) {
        snprintf(err, err_len, "%s is larger than %zu bytes", path, max);
        rc = SC_ETOOBIG;
    }
    if (rc != SC_OK) {
        close(fd);
        return rc;
    }
    if (st.st_mode & (S_IRGRP | S_IROTH))
        sc_warn("%s is readable by group or others (mode %03o): chmod 600 it", path,
                (unsigned)(st.st_mode & 0777));
    *fd_out = fd;
    *size = (size_t)st.st_size;
    return SC_OK;
}

sc_code sc_secret_file_read(const char *path, size_t max, char **out, size_t *len, char *err,
                            size_t err_len)
{
    int fd = -1;
    size_t size = 0, got = 0;
    *out = NULL;
    *len = 0;
    sc_code rc = open_checked(path, max, &fd, &size, err, err_len);
    if (rc != SC_OK)
        return rc;
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        close(fd);
        snprintf(err, err_len, "out of memory");
        return SC_ENOMEM;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, err_len, "cannot read %s: %s", path, strerror(errno));
            explicit_bzero(buf, size + 1);
            free(buf);
            close(fd);
            return SC_EIO;
        }
        if (n == 0)
            break; /* it shrank meanwhile: what is there */
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return SC_OK;
}
