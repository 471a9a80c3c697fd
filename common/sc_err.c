/* sc_err.c - names for the project's error codes (see sc_err.h). */
#include "sc_err.h"

static const char *const names[SC_ECODE_MAX] = {
    [SC_OK] = "success",
    [SC_ENOMEM] = "out of memory",
    [SC_EINVAL] = "invalid argument or malformed input",
    [SC_ENOTFOUND] = "not found",
    [SC_ETOOBIG] = "exceeds a configured limit",
    [SC_EFULL] = "cache full",
    [SC_EIO] = "storage I/O error",
    [SC_ECORRUPT] = "stored data failed its checksum",
    [SC_EUPSTREAM] = "upstream transfer failed",
    [SC_ETIMEOUT] = "timed out",
    [SC_EMISMATCH] = "length or digest mismatch",
    [SC_ECANCELED] = "canceled",
    [SC_EBUSY] = "busy, try again",
    [SC_ECRYPTO] = "cryptographic failure",
    [SC_EACCES] = "permission denied",
    [SC_EEXIST] = "exists already",
};

const char *sc_strerror(sc_code code)
{
    if ((unsigned)code >= SC_ECODE_MAX || names[code] == 0)
        return "unknown error";
    return names[code];
}
