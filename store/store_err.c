/*
 * store_err.c - LMDB and errno codes translated into sc_code where the store
 * receives them, with the log line that says what failed (see store_int.h).
 * Every other file of store/ calls down into this one; it calls none of them.
 */
#include "store_int.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"

sc_code st_lmdb_err(int mdb_rc, const char *what)
{
    switch (mdb_rc) {
    case MDB_SUCCESS:
        return SC_OK;
    case MDB_NOTFOUND:
        return SC_ENOTFOUND;
    case MDB_MAP_FULL:
        return SC_EFULL;
    case MDB_READERS_FULL:
        return SC_EBUSY;
    case ENOMEM:
        sc_err("store: %s: %s", what, mdb_strerror(mdb_rc));
        return SC_ENOMEM;
    default:
        sc_err("store: %s: %s", what, mdb_strerror(mdb_rc));
        return SC_EIO;
    }
}

bool st_refused(int err)
{
    return err == EACCES || err == EPERM || err == EROFS;
}

/*
 * The file system refused this process the cache: a volume owned by root, files left by a
 * gateway that ran as another user, a read-only mount. Names the directory, who we are and the
 * fix, instead of a bare I/O error from deep inside LMDB.
 */
sc_code st_report_refused(const char *dir, const char *what, int err)
{
    unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();
    struct stat sb;
    if (err == EROFS)
        sc_err("store: cannot write %s %s: read-only file system; mount a writable volume there",
               what, dir);
    else if (stat(dir, &sb) == 0)
        sc_err("store: cannot write %s %s as uid %u gid %u (the directory is owned by uid %u "
               "gid %u, mode %04o): give it to this user (chown -R %u:%u %s) or run as its owner",
               what, dir, uid, gid, (unsigned)sb.st_uid, (unsigned)sb.st_gid,
               (unsigned)(sb.st_mode & 07777), uid, gid, dir);
    else
        sc_err("store: cannot write %s %s as uid %u gid %u: %s", what, dir, uid, gid,
               strerror(err));
    return SC_EACCES;
}
