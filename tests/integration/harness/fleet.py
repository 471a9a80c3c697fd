"""Several gateways on loopback that form one fleet (issue 13), behind one counting proxy.

Each gateway has its own client port and its own peer port (--fleet-listen), all on
127.0.0.1; every gateway lists every peer URL (--peers) and names itself (--self). They share
a fleet secret file (0600) and one TcpProxy to the upstream, so request_lines() counts what
the whole fleet asked of the bucket.
"""
import os
import secrets
import tempfile

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

    def upstream_gets(self, prefix=""):
        """Object GETs the fleet sent the bucket (path-style targets under prefix)."""
        want = "/%s/%s" % (self.up.bucket, prefix)
        return [t for m, t in self.proxy.request_lines() if m == "GET" and t.startswith(want)]

    def close(self):
        self.proxy.stop()
