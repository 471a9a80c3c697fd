"""S3 client helpers: boto3 clients, raw SigV4-signed requests, test data.

Clients always get the endpoint explicitly (this botocore ignores
AWS_ENDPOINT_URL), path-style addressing and no retries, so a test sees
exactly what one request returned.
"""
import hashlib
import http.client
import urllib.parse
import uuid

import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

REGION = "us-east-1"


def client(endpoint, access_key, secret_key, addressing="path", timeout=60):
    """A boto3 S3 client for endpoint that signs with the given key pair."""
    cfg = Config(
        region_name=REGION,
        signature_version="s3v4",
        s3={"addressing_style": addressing},
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=10,
        read_timeout=timeout,
        max_pool_connections=32,
    )
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access_key,
        aws_secret_access_key=secret_key, config=cfg)


def upstream_client(up):
    """A boto3 client straight to the upstream."""
    return client(up.endpoint, up.access_key, up.secret_key)


def data(size, seed=None):
    """Deterministic pseudo-random bytes of the given size (seeded by a string)."""
    seed = (seed or "s3cached").encode()
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(seed + counter.to_bytes(8, "big")).digest() * 64
        counter += 1
    return bytes(out[:size])


def unique_key(prefix):
    """A key no other test uses, so tests can share one bucket."""
    return "%s/%s" % (prefix, uuid.uuid4().hex[:12])


def headers_of(resp):
    """The lower-cased HTTP headers of a boto3 response dict."""
    return resp["ResponseMetadata"]["HTTPHeaders"]


def x_cache(resp):
    """The X-Cache header of a boto3 response, or None."""
    return headers_of(resp).get("x-cache")


class RawResponse:
    """status, lower-cased headers dict and body of one raw HTTP exchange."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


def signed_request(endpoint, access_key, secret_key, method, path, host=None, headers=None,
                   body=b"", query=None, timeout=60):
    """Sends one SigV4-signed request to endpoint with http.client.

    path is the raw, already percent-encoded path; host overrides the Host header
    (for virtual-hosted-style requests to a loopback address).
    """
    parsed = urllib.parse.urlsplit(endpoint)
    netloc = host or parsed.netloc
    qs = ("?" + urllib.parse.urlencode(query)) if query else ""
    url = "http://%s%s%s" % (netloc, path, qs)
    hdrs = dict(headers or {})
    req = AWSRequest(method=method, url=url, data=body, headers=hdrs)
    S3SigV4Auth(Credentials(access_key, secret_key), "s3", REGION).add_auth(req)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    try:
        send_headers = {k: v for k, v in req.headers.items()}
        send_headers["Host"] = netloc
        conn.request(method, path + qs, body=body or None, headers=send_headers)
        resp = conn.getresponse()
        payload = resp.read()
        return RawResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload)
    finally:
        conn.close()


def raw(gw_or_up, method, path, **kw):
    """signed_request() with the endpoint and keys of a gateway or an upstream."""
    return signed_request(gw_or_up.endpoint, gw_or_up.access_key, gw_or_up.secret_key, method,
                          path, **kw)


def quote_key(key):
    """Percent-encodes a key for a request path as S3 clients do (keeping '/')."""
    return urllib.parse.quote(key, safe="/~")


def object_path(gw, key):
    """The path-style target of key in gw's bucket, percent-encoded as S3 clients send it."""
    return "/%s/%s" % (gw.bucket, quote_key(key))


def cache_via(gw, key, body):
    """Reads key twice through gw so it is cached; checks the second read is a HIT. Returns
    the client it read with."""
    c = gw.client()
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    resp = c.get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == body
    gw.assert_cache(headers_of(resp), "HIT")
    return c
