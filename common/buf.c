/* buf.c - one growable byte buffer (see buf.h). */
#include "buf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN 256 /* the first allocation; each later one doubles */

void sc_buf_init(struct sc_buf *b, size_t max)
{
    *b = (struct sc_buf){.max = max};
}

/* Room for need bytes and the NUL; false if memory ran out (b unchanged). */
static bool grow(struct sc_buf *b, size_t need)
{
    if (need < SIZE_MAX && need + 1 <= b->cap)
        return true;
    if (need >= SIZE_MAX / 2)
        return false;
    size_t cap = b->cap ? b->cap : BUF_MIN;
    while (cap < need + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

sc_code sc_buf_append(struct sc_buf *b, const void *p, size_t n)
{
    if (b->err != SC_OK)
        return b->err;
    if (b->max != 0 && n > b->max - b->len)
        b->err = SC_ETOOBIG;
    else if (n > SIZE_MAX - b->len || !grow(b, b->len + n))
        b->err = SC_ENOMEM;
    if (b->err != SC_OK)
        return b->err;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return SC_OK;
}

sc_code sc_buf_puts(struct sc_buf *b, const char *s)
{
    return sc_buf_append(b, s, strlen(s));
}

sc_code sc_buf_putc(struct sc_buf *b, char c)
{
    return sc_buf_append(b, &c, 1);
}

sc_code sc_buf_take(struct sc_buf *b, char **out, size_t *len)
{
    sc_code rc = b->err == SC_OK ? sc_buf_append(b, NULL, 0) : b->err;
    *out = rc == SC_OK ? b->data : NULL;
    if (len != NULL)
        *len = rc == SC_OK ? b->len : 0;
    if (rc != SC_OK)
        free(b->data);
    sc_buf_init(b, b->max);
    return rc;
}

void sc_buf_shrink(struct sc_buf *b)
{
    char *p = b->data != NULL ? realloc(b->data, b->len + 1) : NULL;
    if (p != NULL) { /* else b keeps its larger block */
        b->data = p;
        b->cap = b->len + 1;
    }
}

void sc_buf_reset(struct sc_buf *b)
{
    b->len = 0;
    b->err = SC_OK;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void sc_buf_free(struct sc_buf *b)
{
    free(b->data);
    sc_buf_init(b, b->max);
}
