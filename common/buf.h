/*
 * buf.h - one growable byte buffer: bytes appended at the end, always followed
 * by a NUL, with an optional bound on their number.
 *
 * Used to collect a body (an upstream listing, an admin reply) or to build a
 * string piece by piece (a canonical request). Not thread-safe: one owner at a
 * time.
 *
 * Ownership: the buffer owns data until sc_buf_take() hands it to the caller
 * (who then frees it with free()) or sc_buf_free() releases it. A zeroed struct
 * (SC_BUF_INIT) is an empty buffer with no bound and owns nothing.
 *
 * Errors stick: once an append fails (SC_ENOMEM, or SC_ETOOBIG past the bound),
 * later appends change nothing and return the same code, so a builder may
 * append many times and look once, at sc_buf_take() or b->err. sc_buf_reset()
 * clears it.
 */
#ifndef SC_BUF_H
#define SC_BUF_H

#include <stddef.h>

#include "sc_err.h"

struct sc_buf {
    char *data;  /* NULL until the first byte; then data[len] == '\0' */
    size_t len;  /* bytes held, without the NUL */
    size_t cap;  /* bytes allocated at data */
    size_t max;  /* most bytes held; 0 means no bound */
    sc_code err; /* the first append that failed, or SC_OK */
};

#define SC_BUF_INIT ((struct sc_buf){.data = NULL})

/* @brief An empty buffer that holds at most max bytes (0: no bound); owns nothing yet. */
void sc_buf_init(struct sc_buf *b, size_t max);

/*
 * @brief Appends n bytes from p (p may be NULL when n is 0).
 * @return SC_OK; SC_ETOOBIG if len would pass max (nothing is appended); SC_ENOMEM; or
 * the error of an earlier append.
 */
sc_code sc_buf_append(struct sc_buf *b, const void *p, size_t n);

/* @brief sc_buf_append() of a NUL-terminated string, without its NUL. */
sc_code sc_buf_puts(struct sc_buf *b, const char *s);

/* @brief sc_buf_append() of one byte. */
sc_code sc_buf_putc(struct sc_buf *b, char c);

/*
 * @brief Hands the bytes to the caller and leaves b empty (its bound kept, no error).
 * @param[out] out the NUL-terminated bytes, never NULL on success (an empty buffer gives an
 * allocated ""); the caller frees it. NULL on failure.
 * @param[out] len their number, without the NUL; may be NULL.
 * @return SC_OK, SC_ENOMEM, or the sticky error of an append (the bytes are then freed).
 */
sc_code sc_buf_take(struct sc_buf *b, char **out, size_t *len);

/* @brief Gives back the memory past the bytes and their NUL, for a buffer kept long once full. */
void sc_buf_shrink(struct sc_buf *b);

/* @brief Forgets the bytes and the error but keeps the memory and the bound. */
void sc_buf_reset(struct sc_buf *b);

/* @brief Frees the memory; b is then an empty buffer with its bound, owning nothing. */
void sc_buf_free(struct sc_buf *b);

#endif
