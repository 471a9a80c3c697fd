/* uri.c - percent-encoding for S3 paths and SigV4 (see uri.h). */
#include "uri.h"

#include <stdlib.h>

static bool is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int uri_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

sc_code uri_encode(const char *src, size_t len, bool keep_slash, char **out)
{
    static const char hex[] = "0123456789ABCDEF";
    char *dst = malloc(len * 3 + 1);
    if (dst == NULL)
        return SC_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (is_unreserved(c) || (keep_slash && c == '/')) {
            dst[n++] = (char)c;
        } else {
            dst[n++] = '%';
            dst[n++] = hex[c >> 4];
            dst[n++] = hex[c & 15];
        }
    }
    dst[n] = '\0';
    *out = dst;
    return SC_OK;
}

sc_code uri_decode(const char *src, size_t len, char **out)
{
    char *dst = malloc(len + 1);
    if (dst == NULL)
        return SC_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] != '%') {
            dst[n++] = src[i];
            continue;
        }
        int hi = i + 1 < len ? uri_hex_digit(src[i + 1]) : -1;
        int lo = i + 2 < len ? uri_hex_digit(src[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(dst);
            return SC_EINVAL;
        }
        dst[n++] = (char)(hi << 4 | lo);
        i += 2;
    }
    dst[n] = '\0';
    *out = dst;
    return SC_OK;
}
