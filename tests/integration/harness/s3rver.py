"""s3rver (a Node.js fake S3) on loopback, in a temp dir, owned by the harness.

s3rver checks SigV4 signatures made with its one built-in key pair
(S3RVER / S3RVER). It is started with --openssl-legacy-provider because its
ListObjectsV2 continuation tokens use a cipher that Node 17+ refuses otherwise.
"""
import os
import shutil
import tempfile

from . import proc
from .upstream import Upstream

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ACCESS_KEY = "S3RVER"
SECRET_KEY = "S3RVER"


class S3rver:
    """One s3rver process serving the given buckets; stop() removes its data."""

    def __init__(self, buckets=("test",), port=None):
        self.buckets = list(buckets)
        self.port = port or proc.free_port()
        self.dir = tempfile.mkdtemp(prefix="s3cached-it-s3rver-")
        self.proc = None

    def start(self):
        binary = os.path.join(REPO, "node_modules", ".bin", "s3rver")
        if not os.path.exists(binary):
            raise RuntimeError("%s missing: run tools/install-deps.sh" % binary)
        argv = ["node", "--openssl-legacy-provider", binary, "--address", "127.0.0.1",
                "--port", str(self.port), "--directory", os.path.join(self.dir, "data"),
                "--silent"]
        for b in self.buckets:
            argv += ["--configure-bucket", b]
        self.proc = proc.Proc("s3rver", argv, os.path.join(self.dir, "s3rver.log"))
        url = "http://127.0.0.1:%d/" % self.port
        proc.wait_until("s3rver", lambda: proc.http_status(url) > 0, 20, self.proc)
        return self

    def upstream(self, bucket=None):
        return Upstream("s3rver", "http://127.0.0.1:%d" % self.port, ACCESS_KEY, SECRET_KEY,
                        bucket or self.buckets[0])

    def stop(self):
        if self.proc is not None:
            self.proc.stop(grace=3)
            self.proc = None

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
