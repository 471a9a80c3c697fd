"""The s3cached gateway under test, run as a child process.

By default this is build/asan/s3cached (S3CACHED_BIN overrides it), run with
AddressSanitizer/UBSan options; its stderr is kept in a file and a gateway
whose stderr holds any sanitizer report, or that does not exit 0 within 5 s
of SIGTERM, fails the test that started it.

With S3CACHED_IT_DIRECT=1 no gateway is started and tests talk to the upstream
itself: that checks the harness and the client calls, and every assertion on
gateway-only behaviour (X-Cache, stats, restarts) is skipped.
"""
import json
import os
import re
import shutil
import tempfile
import time
import urllib.request

import pytest

from . import proc
from . import s3util

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SANITIZER_RE = re.compile(
    r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer"
    r"|runtime error:|SUMMARY: \w+Sanitizer"
    r"|ERROR SUMMARY: [1-9]|definitely lost: [1-9]|indirectly lost: [1-9]")


def valgrind_mode():
    """S3CACHED_IT_VALGRIND=1: run the optimized build under valgrind memcheck (make valgrind)."""
    return os.environ.get("S3CACHED_IT_VALGRIND") == "1"


VALGRIND = ["valgrind", "--tool=memcheck", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite", "--track-fds=no", "--error-exitcode=0",
            "--suppressions=" + os.path.join(REPO, "tests", "integration", "valgrind.supp")]
STATS_FIELDS = ("hits", "misses", "bypasses", "bytes_from_cache", "bytes_from_upstream",
                "objects", "used_bytes", "capacity_bytes", "evictions")


def binary():
    return os.environ.get("S3CACHED_BIN") or os.path.join(REPO, "build", "asan", "s3cached")


def direct_mode():
    return os.environ.get("S3CACHED_IT_DIRECT") == "1"


def _resident(path, offset, length):
    """Whether the pages of path at [offset, offset + length) are in the page cache
    (mincore(2) on a mapping of them, which faults nothing in)."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    pages = (length + 4095) // 4096
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), length, offset=offset)
        try:
            view = ctypes.c_char.from_buffer(m)
            vec = (ctypes.c_ubyte * pages)()
            rc = libc.mincore(ctypes.c_void_p(ctypes.addressof(view)), ctypes.c_size_t(length),
                              vec)
            del view
            assert rc == 0, "mincore: errno %d" % ctypes.get_errno()
            return all(v & 1 for v in vec)
        finally:
            m.close()


class Gateway:
    """One gateway process in front of an upstream (or a proxy to it).

    endpoint, access_key, secret_key and bucket are what a client uses; clients
    sign with the upstream's key pair.
    """

    direct = False

    def __init__(self, upstream, upstream_endpoint=None, cache_size="64M", extra_args=(),
                 cache_dir=None, secret_key=None, policy="lru", admin_token=None, binary_path=None,
                 client_keys=None, gateway_credentials=True, port=None, wrap=()):
        self.upstream = upstream
        self.upstream_endpoint = upstream_endpoint or upstream.endpoint
        self.access_key = upstream.access_key
        self.secret_key = upstream.secret_key
        self.gateway_secret = secret_key or upstream.secret_key
        self.bucket = upstream.bucket
        self.cache_size = cache_size
        self.extra_args = list(extra_args)
        self.policy = policy
        self.binary_path = binary_path or (
            os.path.join(REPO, "build", "s3cached") if valgrind_mode() else binary())
        self.listen_host = "127.0.0.1"  # clients still connect to 127.0.0.1
        self.admin_token = admin_token  # sent in the environment, never on the command line
        self.workdir = tempfile.mkdtemp(prefix="s3cached-it-gw-")
        # client_keys: the --client-credentials entries ({"access_key", "secret_key",
        # "buckets"}), written to a 0600 file; gateway_credentials=False starts the
        # gateway with no upstream credentials of its own.
        self.client_keys_file = None
        if client_keys is not None:
            self.client_keys_file = os.path.join(self.workdir, "client-keys.json")
            fd = os.open(self.client_keys_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"keys": list(client_keys)}, f)
        self.gateway_credentials = gateway_credentials
        self.cache_dir = cache_dir or os.path.join(self.workdir, "cache")
        self.port = port  # None: a free port is taken at the first start
        self.wrap = list(wrap)  # a command the gateway runs under (it must exec it)
        self.proc = None
        self.runs = 0
        self.problems = []

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def argv(self):
        prefix = self.wrap + (VALGRIND if valgrind_mode() else [])
        return prefix + [self.binary_path, "--listen", "%s:%d" % (self.listen_host, self.port),
                "--upstream", self.upstream_endpoint, "--region", "us-east-1",
                "--cache-dir", self.cache_dir, "--cache-size", str(self.cache_size),
                "--policy", self.policy,
                # below stop()'s grace, so a request a test leaves hanging never delays teardown
                "--shutdown-timeout", "2"] + (
                    ["--client-credentials", self.client_keys_file]
                    if self.client_keys_file else []) + (
                    ["--zero-copy"] if os.environ.get("S3CACHED_IT_ZERO_COPY") else []) + (
                    self.extra_args)

    def env(self):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("S3CACHED_") or k.startswith("AWS_"):
                del env[k]
        env.update({
            "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        })
        if self.gateway_credentials:
            env.update({
                "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.gateway_secret,
            })
        else:
            env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(self.workdir, "no-credentials")
        if self.admin_token:
            env["S3CACHED_ADMIN_TOKEN"] = self.admin_token
        return env

    def admin_headers(self):
        """The headers the admin API needs from this test: the bearer token, if any."""
        return {"Authorization": "Bearer " + self.admin_token} if self.admin_token else {}

    def start(self):
        """Starts the gateway and waits until GET /_s3cached/stats answers 200."""
        if not os.access(self.binary_path, os.X_OK):
            raise RuntimeError("gateway binary %s missing: build it first" % self.binary_path)
        os.makedirs(self.cache_dir, exist_ok=True)
        if self.port is None:
            self.port = proc.free_port()
        self.runs += 1
        log = os.path.join(self.workdir, "stderr.%d.log" % self.runs)
        self.proc = proc.Proc("s3cached", self.argv(), log, env=self.env())
        url = self.endpoint + "/_s3cached/stats"
        headers = self.admin_headers()
        # A wait, not a bound on start-up time: under valgrind, or on a CI machine at load 17,
        # loading the binary and the first answer can take well over 20 s.
        proc.wait_until("s3cached", lambda: proc.http_status(url, headers=headers) == 200,
                        180 if valgrind_mode() else 60, self.proc)
        return self

    def stats(self):
        """GET /_s3cached/stats as a dict."""
        req = urllib.request.Request(self.endpoint + "/_s3cached/stats",
                                     headers=self.admin_headers())
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
            return json.loads(r.read())

    def stats_when(self, predicate, timeout=30.0):
        """Polls stats until predicate(stats) holds; returns the last stats either way.

        A response's counters may be added just after its last byte reaches the
        client, and fills and blocks are committed by the store's thread after it, so a
        test that reads and then checks the stats waits. The default is generous (it costs
        nothing once the predicate holds; at 3 s, fills under valgrind or on a CI machine
        at load 17 were not in yet). A caller that waits for something that should NOT
        happen (a negative check) passes its own short timeout."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.stats()
            if predicate(st) or time.monotonic() >= deadline:
                return st
            time.sleep(0.05)

    def require_real(self):
        """Gateway-only assertions follow: nothing to do here (see DirectGateway)."""

    def client(self, **kw):
        """A boto3 client to this gateway, signing with the upstream's key pair."""
        return s3util.client(self.endpoint, self.access_key, self.secret_key, **kw)

    def assert_cache(self, headers, want):
        """Asserts the X-Cache header (headers: lower-cased dict) equals want."""
        got = headers.get("x-cache")
        assert got == want, "X-Cache is %r, want %r" % (got, want)

    def stop(self, kill=False):
        """Stops the process and records any sanitizer report or unclean exit."""
        if self.proc is None:
            return
        p, self.proc = self.proc, None
        code = p.kill() if kill else p.stop(grace=60 if valgrind_mode() else 5)
        text = proc.tail(p.log_path, 100000)
        if SANITIZER_RE.search(text):
            self.problems.append("sanitizer report in %s:\n%s" % (p.log_path, proc.tail(
                p.log_path, 80)))
        elif not kill and code != 0:
            self.problems.append("gateway exited %s after SIGTERM (want 0):\n%s" % (
                code, proc.tail(p.log_path, 30)))

    def flip_in_store(self, needle):
        """Flips one byte of the only copy of needle in the store's data file, under the
        running gateway (its read-only map and a sendfile from the file both see the change)."""
        path = os.path.join(self.cache_dir, "data.mdb")
        with open(path, "r+b") as f:
            data = f.read()
            at = data.find(needle)
            assert at >= 0 and data.find(needle, at + 1) < 0, "the bytes are not in data.mdb once"
            f.seek(at)
            f.write(bytes([data[at] ^ 0xFF]))

    def rot_on_disk(self, needle):
        """Flips one byte of the only copy of needle in data.mdb on the disk, as rot would,
        under the running gateway: written with O_DIRECT, which also drops that page from
        the page cache (and from the gateway's map), so the next read of it comes from the
        disk. (flip_in_store changes the cached page itself, which only the scrubber sees
        once the value was checked, or written by this gateway.) A cache dir on a file system
        without O_DIRECT (tmpfs: no disk behind the page cache) skips the test."""
        self._rewrite_on_disk(needle, flip=True)

    def drop_from_page_cache(self, needle):
        """Drops the page of data.mdb that holds needle from the page cache, bytes unchanged
        (the same page written back with O_DIRECT): its next read comes from the disk."""
        self._rewrite_on_disk(needle, flip=False)

    def _rewrite_on_disk(self, needle, flip):
        import mmap
        path = os.path.join(self.cache_dir, "data.mdb")
        with open(path, "rb") as f:
            data = f.read()
        at = data.find(needle)
        assert at >= 0 and data.find(needle, at + 1) < 0, "the bytes are not in data.mdb once"
        page = 4096
        base = at - at % page
        try:
            fd = os.open(path, os.O_RDWR | os.O_DIRECT)
        except OSError as e:
            pytest.skip("no O_DIRECT on the cache dir's file system (%s): no disk" % e)
        try:
            buf = mmap.mmap(-1, page)  # page-aligned, as O_DIRECT needs
            assert os.preadv(fd, [buf], base) == page
            if flip:
                buf[at - base] ^= 0xFF
            assert os.pwritev(fd, [buf], base) == page
        finally:
            os.close(fd)
        if _resident(path, base, page):  # tmpfs takes O_DIRECT as a buffered write
            pytest.skip("the page stayed in the page cache: no disk behind %s" % path)

    def restart(self):
        """Stops and starts again on the same port and cache dir."""
        self.stop()
        return self.start()

    def log_tails(self, lines=60):
        """The end of each run's stderr, for a failed test's report."""
        out = []
        for run in range(1, self.runs + 1):
            path = os.path.join(self.workdir, "stderr.%d.log" % run)
            out.append("== %s\n%s" % (path, proc.tail(path, lines)))
        return "\n".join(out)

    def close(self, keep_logs=False):
        """Stops the gateway and removes its cache; returns the problems found.

        The stderr logs stay (and their paths are in the problem text) when
        there were problems or keep_logs is set."""
        self.stop()
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        if not self.problems and not keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return self.problems


class DirectGateway(Gateway):
    """Stands in for the gateway in direct mode: the endpoint is the upstream's."""

    direct = True

    @property
    def endpoint(self):
        return self.upstream_endpoint

    def start(self):
        return self

    def stats(self):
        pytest.skip("direct mode: no gateway stats")

    def stats_when(self, predicate, timeout=30.0):
        pytest.skip("direct mode: no gateway stats")

    def require_real(self):
        pytest.skip("direct mode: this test needs the gateway")

    def stop(self, kill=False):
        pass

    def assert_cache(self, headers, want):
        pass  # the upstream sends no X-Cache

    def restart(self):
        pytest.skip("direct mode: no gateway to restart")

    def log_tails(self, lines=60):
        return ""
