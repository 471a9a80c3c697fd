"""Stalls a gateway's store from outside: holds the LMDB write lock of its cache.

LMDB admits one write transaction at a time across every process that opens the
environment (the lock lives in lock.mdb). While a test holds one, the gateway's store
writer waits in mdb_txn_begin, as behind a disk that does not answer: queued puts stay
queued, readers go on. Through the system's liblmdb, with ctypes (nothing to install).
"""
import ctypes
import ctypes.util

MDB_NOTLS = 0x200000


def _lib():
    path = ctypes.util.find_library("lmdb") or "liblmdb.so.0"
    lib = ctypes.CDLL(path)
    lib.mdb_env_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.mdb_env_set_maxdbs.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    lib.mdb_env_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint, ctypes.c_int]
    lib.mdb_env_close.argtypes = [ctypes.c_void_p]
    lib.mdb_txn_begin.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                  ctypes.POINTER(ctypes.c_void_p)]
    lib.mdb_txn_abort.argtypes = [ctypes.c_void_p]
    lib.mdb_strerror.restype = ctypes.c_char_p
    return lib


class StoreHeld:
    """A context manager: the cache in cache_dir takes no write while it is held.

    release() ends it early (idempotent), so a test can let the store go at a moment of
    its choosing, e.g. while the gateway is shutting down."""

    def __init__(self, cache_dir):
        self.cache_dir = cache_dir
        self.lib = _lib()
        self.env = ctypes.c_void_p()
        self.txn = None

    def _check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s on %s: %s" % (what, self.cache_dir,
                                                   self.lib.mdb_strerror(rc).decode()))

    def hold(self):
        lib = self.lib
        self._check(lib.mdb_env_create(ctypes.byref(self.env)), "mdb_env_create")
        self._check(lib.mdb_env_set_maxdbs(self.env, 16), "mdb_env_set_maxdbs")
        self._check(lib.mdb_env_open(self.env, self.cache_dir.encode(), MDB_NOTLS, 0o600),
                    "mdb_env_open")
        txn = ctypes.c_void_p()
        self._check(lib.mdb_txn_begin(self.env, None, 0, ctypes.byref(txn)), "mdb_txn_begin")
        self.txn = txn
        return self

    def release(self):
        if self.txn is not None:
            self.lib.mdb_txn_abort(self.txn)
            self.txn = None
        if self.env:
            self.lib.mdb_env_close(self.env)
            self.env = ctypes.c_void_p()

    def __enter__(self):
        return self.hold()

    def __exit__(self, *exc):
        self.release()
