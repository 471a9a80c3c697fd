"""S3Dataset: a map-style dataset that reads objects through the gateway with boto3.

    ds = S3Dataset("demo", keys, transform=decode)   # ds["train/0001.jpg"] or ds[17]

It is indexed by key (what GatewaySampler yields) or by integer position in `keys`.
The boto3 client is created lazily, once per process: DataLoader workers (fork or
spawn) each open their own on first use, never sharing the parent's connections.
"""
import os

from . import _torch
from .admin import resolve_endpoint

__all__ = ["S3Dataset", "default_client"]


def default_client(endpoint=None):
    """A boto3 S3 client to the gateway: endpoint as Admin resolves it ($AWS_ENDPOINT_URL_S3,
    $AWS_ENDPOINT_URL, else localhost:8080, which also works with boto3 older than 1.28),
    path-style addressing, standard retries, credentials from the usual AWS places and
    unsigned requests when there are none (the gateway signs upstream requests itself)."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    session = boto3.session.Session()
    kw = {}
    if session.get_credentials() is None:
        kw["signature_version"] = UNSIGNED
    cfg = Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 5},
                 max_pool_connections=16, **kw)
    region = session.region_name or "us-east-1"
    return session.client("s3", endpoint_url=resolve_endpoint(endpoint), region_name=region,
                          config=cfg)


class _S3DatasetCore:
    """Objects of one bucket as samples.

    bucket          the bucket.
    keys            the dataset's keys, for integer indexing and len(); may be None
                    when the sampler yields keys (a prefix plan).
    transform       transform(body: bytes) -> sample; default: the bytes.
    client_factory  a callable returning a boto3 S3 client (default: default_client()),
                    called once per process.
    return_key      yield (key, sample) pairs, so a training loop knows which
                    samples a minibatch holds (for ImportanceReporter).
    """

    def __init__(self, bucket, keys=None, transform=None, client_factory=None,
                 return_key=False):
        self.bucket = bucket
        self.keys = None if keys is None else [str(k) for k in keys]
        self.transform = transform
        self.client_factory = client_factory or default_client
        self.return_key = bool(return_key)
        self._client = None
        self._pid = None

    def client(self):
        """This process's boto3 client, created on first use."""
        pid = os.getpid()
        client = self._client
        if client is None or self._pid != pid:
            # No lock: a lock copied by fork could be held forever in the child; two
            # threads racing here only build one client too many.
            client = self.client_factory()
            self._client, self._pid = client, pid
        return client

    def key_of(self, item):
        """The key for a dataset index (an int) or a key (a str)."""
        if isinstance(item, str):
            return item
        if self.keys is None:
            raise TypeError("S3Dataset without keys= is indexed by key, not %r" % (item,))
        return self.keys[int(item)]

    def read(self, key):
        """The object's bytes, read through the gateway."""
        resp = self.client().get_object(Bucket=self.bucket, Key=key)
        body = resp["Body"]
        try:
            return body.read()
        finally:
            body.close()

    def __getitem__(self, item):
        key = self.key_of(item)
        data = self.read(key)
        sample = self.transform(data) if self.transform is not None else data
        return (key, sample) if self.return_key else sample

    def __len__(self):
        if self.keys is None:
            raise TypeError("S3Dataset without keys= has no length")
        return len(self.keys)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_client"] = None
        state["_pid"] = None
        return state

    def __repr__(self):
        return "S3Dataset(%r, %s)" % (
            self.bucket, "%d keys" % len(self.keys) if self.keys is not None else "by key")


if _torch.DatasetBase is object:
    class S3Dataset(_S3DatasetCore):
        __doc__ = _S3DatasetCore.__doc__
else:
    class S3Dataset(_S3DatasetCore, _torch.DatasetBase):
        __doc__ = _S3DatasetCore.__doc__
