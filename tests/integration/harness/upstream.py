"""What a test needs to know about one upstream S3 service."""
import dataclasses


@dataclasses.dataclass
class Upstream:
    """An S3 endpoint with one bucket and a key pair that may write to it."""

    name: str  # "s3rver" or "radosgw"
    endpoint: str  # http://127.0.0.1:PORT, no trailing '/'
    access_key: str
    secret_key: str
    bucket: str
    admin: object = None  # radosgw: the cluster (harness.radosgw.Radosgw), to add users

    @property
    def port(self):
        return int(self.endpoint.rsplit(":", 1)[1])
