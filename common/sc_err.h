/*
 * sc_err.h - the one error type of s3cached.
 *
 * Every fallible function in common/, policy/, store/ and gateway/ returns an
 * sc_code: SC_OK (0) on success, or one of the values below. Codes from LMDB,
 * libcurl, OpenSSL and errno are translated where they are received and never
 * passed up raw. sc_strerror() names each code for logs and error replies.
 */
#ifndef SC_ERR_H
#define SC_ERR_H

typedef enum sc_code {
    SC_OK = 0,
    SC_ENOMEM,    /* an allocation failed */
    SC_EINVAL,    /* bad argument or malformed input */
    SC_ENOTFOUND, /* no such object or entry */
    SC_ETOOBIG,   /* input or object exceeds a configured bound */
    SC_EFULL,     /* no room even after evicting */
    SC_EIO,       /* disk or database failure */
    SC_ECORRUPT,  /* stored bytes fail their checksum */
    SC_EUPSTREAM, /* upstream unreachable or transfer failed */
    SC_ETIMEOUT,  /* an operation ran past its deadline */
    SC_EMISMATCH, /* a length or digest did not match what was announced */
    SC_ECANCELED, /* abandoned: client gone, shutdown, invalidated */
    SC_EBUSY,     /* temporarily unavailable, try again */
    SC_ECRYPTO,   /* a cryptographic primitive failed */
    SC_EACCES,    /* the file system refused: permissions or a read-only mount */
    SC_EEXIST,    /* there already: look again instead of making it */
    SC_ECODE_MAX
} sc_code;

/* Returns a static, human-readable name for code; never NULL. */
const char *sc_strerror(sc_code code);

#endif
