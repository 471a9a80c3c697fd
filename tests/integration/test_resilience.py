"""The cache outlives the process and the upstream: warm restart, upstream down."""
import time

import botocore.exceptions
import pytest

from harness import s3util

KiB = 1024


def _seed(upstream, n, size, prefix):
    up = s3util.upstream_client(upstream)
    objs = {}
    for i in range(n):
        key = s3util.unique_key("%s%02d" % (prefix, i))
        objs[key] = s3util.data(size + i, seed=key)
        up.put_object(Bucket=upstream.bucket, Key=key, Body=objs[key])
    return objs


def test_warm_restart_serves_hits_with_upstream_stopped(upstream, gateway):
    objs = _seed(upstream, 5, 300 * KiB, "warm")
    gw = gateway(upstream, proxy=True)
    gw.require_real()
    c = gw.client()
    for key, body in objs.items():
        assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    gw.stop()
    gw.proxy.stop()  # the upstream is gone from here on
    gw.start()
    stats = gw.stats()
    assert stats["objects"] == len(objs)
    c = gw.client()
    for key, body in objs.items():
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == body
        gw.assert_cache(s3util.headers_of(resp), "HIT")
        part = c.get_object(Bucket=gw.bucket, Key=key, Range="bytes=100-199")
        assert part["Body"].read() == body[100:200]


def test_upstream_down_hits_served_and_miss_is_5xx_s3_error(upstream, gateway):
    objs = _seed(upstream, 2, 50 * KiB, "down")
    cached_key, missing_key = list(objs)
    gw = gateway(upstream, proxy=True)
    gw.require_real()
    c = gw.client()
    assert c.get_object(Bucket=gw.bucket, Key=cached_key)["Body"].read() == objs[cached_key]
    gw.proxy.stop()

    resp = c.get_object(Bucket=gw.bucket, Key=cached_key)
    assert resp["Body"].read() == objs[cached_key]
    gw.assert_cache(s3util.headers_of(resp), "HIT")

    started = time.monotonic()
    r = s3util.raw(gw, "GET", "/%s/%s" % (gw.bucket, s3util.quote_key(missing_key)))
    assert time.monotonic() - started < 10, "the 5xx took more than 10 s"
    assert r.status in (502, 503, 504)
    assert r.headers.get("content-type", "").startswith(("application/xml", "text/xml"))
    assert b"<Error>" in r.body and b"<Code>" in r.body
    assert b"<RequestId>" in r.body
    # a LIST is a pass-through: it fails the same way, it does not hang
    r = s3util.raw(gw, "GET", "/%s" % gw.bucket, query={"list-type": "2"})
    assert r.status in (502, 503, 504)
    assert b"<RequestId>" in r.body
    # the gateway itself still answers
    assert gw.stats()["hits"] >= 1


def test_wrong_upstream_secret_gives_client_403_from_upstream(radosgw, gateway):
    key = s3util.unique_key("auth")
    s3util.upstream_client(radosgw).put_object(Bucket=radosgw.bucket, Key=key, Body=b"secret")
    gw = gateway(radosgw, secret_key=radosgw.secret_key + "-wrong")
    gw.require_real()
    c = gw.client()
    for call in (lambda: c.get_object(Bucket=gw.bucket, Key=key),
                 lambda: c.head_object(Bucket=gw.bucket, Key=key),
                 lambda: c.put_object(Bucket=gw.bucket, Key=key, Body=b"x"),
                 lambda: c.list_objects_v2(Bucket=gw.bucket)):
        with pytest.raises(botocore.exceptions.ClientError) as err:
            call()
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    r = s3util.raw(gw, "GET", "/%s/%s" % (gw.bucket, s3util.quote_key(key)))
    assert r.status == 403 and b"SignatureDoesNotMatch" in r.body
    # nothing was cached from the refused reads
    assert gw.stats()["objects"] == 0
