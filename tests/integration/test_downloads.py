"""Whole-object GETs through the gateway: exact bytes, MISS then HIT, HEAD."""
import hashlib

import pytest

from harness import s3util
from harness.gateway import STATS_FIELDS

SIZES = {
    "empty": 0,
    "1KiB": 1024,
    "100KiB": 100 * 1024,
    "9MiB": 9 * 1024 * 1024 + 17,  # crosses several cache chunks, not chunk-aligned
}


@pytest.mark.parametrize("size", SIZES.values(), ids=list(SIZES))
def test_get_returns_exact_bytes_on_miss_and_on_hit(upstream, gw, size):
    key = s3util.unique_key("dl")
    body = s3util.data(size, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    c = gw.client()

    first = c.get_object(Bucket=gw.bucket, Key=key)
    got = first["Body"].read()
    assert len(got) == size and hashlib.sha256(got).digest() == hashlib.sha256(body).digest()
    assert int(s3util.headers_of(first)["content-length"]) == size
    gw.assert_cache(s3util.headers_of(first), "MISS")

    second = c.get_object(Bucket=gw.bucket, Key=key)
    got = second["Body"].read()
    assert got == body
    assert int(s3util.headers_of(second)["content-length"]) == size
    gw.assert_cache(s3util.headers_of(second), "HIT")


def test_stats_count_one_miss_then_one_hit_with_bytes(upstream, gw):
    gw.require_real()
    key = s3util.unique_key("stats")
    body = s3util.data(200 * 1024, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    before = gw.stats()
    for name in STATS_FIELDS:
        assert isinstance(before[name], (int, float)), name
    c = gw.client()
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    after = gw.stats_when(lambda st: st["bytes_from_cache"] - before["bytes_from_cache"]
                          >= len(body) and st["objects"] - before["objects"] >= 1)
    delta = {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], (int, float))}
    assert delta["misses"] == 1, delta
    assert delta["hits"] == 1, delta
    assert delta["bytes_from_upstream"] >= len(body), delta
    assert delta["bytes_from_cache"] == len(body), delta
    assert delta["objects"] == 1, delta
    assert after["used_bytes"] >= len(body)
    assert after["capacity_bytes"] == 64 * 1024 * 1024


def test_head_reports_size_and_etag_without_body(upstream, gw):
    key = s3util.unique_key("head")
    body = s3util.data(5000, seed=key)
    put = s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    c = gw.client()
    h1 = c.head_object(Bucket=gw.bucket, Key=key)
    assert h1["ContentLength"] == 5000
    assert h1["ETag"] == put["ETag"]
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    h2 = c.head_object(Bucket=gw.bucket, Key=key)
    assert h2["ContentLength"] == 5000
    assert h2["ETag"] == put["ETag"]
    gw.assert_cache(s3util.headers_of(h2), "HIT")


def test_get_missing_key_is_404_nosuchkey_xml(upstream, gw):
    key = s3util.unique_key("missing")
    r = s3util.raw(gw, "GET", "/%s/%s" % (gw.bucket, key))
    assert r.status == 404
    assert b"<Code>NoSuchKey</Code>" in r.body
    # a second try must not be served from a cached negative answer of another key
    r2 = s3util.raw(gw, "GET", "/%s/%s" % (gw.bucket, key))
    assert r2.status == 404
