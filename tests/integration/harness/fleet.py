"""Several gateways on loopback that form one fleet (issue 13), behind one counting proxy.

Each gateway has its own client port and its own peer port (--fleet-listen), all on
127.0.0.1; every gateway lists every peer URL (--peers) and names itself (--self). They share
a fleet secret file (0600) and one TcpProxy to the upstream, so request_lines() counts what
the whole fleet asked of the bucket.
"""
import os
import secrets
import tempfile

_MASK = (1 << 64) - 1
_FNV_BASIS = 0xcbf29ce484222325
_FNV_PRIME = 0x100000001b3


def _fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return h


def _mix(h):
    """common/hash.c sc_hash_mix (the splitmix64 finalizer)."""
    h ^= h >> 30
    h = (h * 0xbf58476d1ce4e5b9) & _MASK
    h ^= h >> 27
    h = (h * 0x94d049bb133111eb) & _MASK
    return h ^ (h >> 31)


def key_hash(bucket, key):
    """common/hash.c sc_key_hash: the name of an object."""
    h = _fnv1a(_FNV_BASIS, bucket.encode() + b"\0")
    return _mix(_fnv1a(h, key.encode()))


def block_key_hash(khash, idx):
    """common/hash.c sc_block_key_hash: the name of block idx of an object."""
    return _mix(khash ^ ((0x9E3779B97F4A7C15 * (idx + 1)) & _MASK))


def owner_index(urls, name):
    """fleet/owner.c: the index in urls of the owner of name when every peer is live (the
    highest sc_hash_mix(name ^ sc_bytes_hash(url)); a tie goes to the smaller URL)."""
    best, best_score = None, -1
    for i in sorted(range(len(urls)), key=lambda i: urls[i]):
        score = _mix(name ^ _mix(_fnv1a(_FNV_BASIS, urls[i].encode())))
        if score > best_score:
            best, best_score = i, score
    return best

from . import proc
from .tcp_proxy import TcpProxy


class Fleet:
    def __init__(self, make_gateway, up, n=3, cache_size="8M", extra_args=(), copy="none",
                 secret=None, fleet=True, **kw):
        """make_gateway: the conftest `gateway` factory. fleet=False: the same gateways,
        independent (no peers), for comparisons."""
        self.up = up
        self.proxy = TcpProxy(up.port).start()
        self.dir = tempfile.mkdtemp(prefix="s3cached-it-fleet-")
        self.secret_file = os.path.join(self.dir, "fleet-secret")
        fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secret or secrets.token_hex(24))
        self.ports = [proc.free_port() for _ in range(n)]
        self.peer_ports = [proc.free_port() for _ in range(n)]
        self.urls = ["http://127.0.0.1:%d" % p for p in self.peer_ports]
        self.gateways = []
        for i in range(n):
            args = list(extra_args)
            if fleet:
                args += ["--peers", ",".join(self.urls), "--self", self.urls[i],
                         "--fleet-listen", "127.0.0.1:%d" % self.peer_ports[i],
                         "--fleet-secret-file", self.secret_file, "--fleet-copy", copy]
            self.gateways.append(make_gateway(up, upstream_endpoint=self.proxy.endpoint,
                                              cache_size=cache_size, extra_args=args,
                                              port=self.ports[i], **kw))

    def __getitem__(self, i):
        return self.gateways[i]

    def __len__(self):
        return len(self.gateways)

    def owner_of(self, bucket, key):
        """The index of the gateway that owns (bucket, key) while every peer is live."""
        return owner_index(self.urls, key_hash(bucket, key))

    def block_owner_of(self, bucket, key, idx):
        """The index of the gateway that owns block idx of (bucket, key), every peer live."""
        return owner_index(self.urls, block_key_hash(key_hash(bucket, key), idx))

    def key_owned_by(self, i, prefix="k", bucket=None):
        """A key under prefix that gateway i owns."""
        bucket = bucket or self.up.bucket
        n = 0
        while self.owner_of(bucket, "%s%d" % (prefix, n)) != i:
            n += 1
        return "%s%d" % (prefix, n)

    def upstream_gets(self, prefix=""):
        """Object GETs the fleet sent the bucket (path-style targets under prefix)."""
        want = "/%s/%s" % (self.up.bucket, prefix)
        return [t for m, t in self.proxy.request_lines() if m == "GET" and t.startswith(want)]

    def close(self):
        self.proxy.stop()
