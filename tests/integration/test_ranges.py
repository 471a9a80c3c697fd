"""Single-range GETs on a cache miss and on a hit, with S3's semantics.

Expected bytes and Content-Range are computed from the known content as S3
defines them (RFC 9110 byte ranges), never read back from the upstream: s3rver
answers `bytes=-N` with bytes 0..N and `bytes=0-0` with the whole object, both
wrong, and the gateway must still give S3's answer.
"""

import botocore.exceptions
import pytest

from harness import rawhttp, s3util

SIZE = 100 * 1024 + 7

# (Range header, first byte, last byte) for SIZE-byte objects.
RANGES = [
    ("bytes=0-9", 0, 9),
    ("bytes=10-", 10, SIZE - 1),
    ("bytes=-5", SIZE - 5, SIZE - 1),
    ("bytes=0-0", 0, 0),
    ("bytes=%d-%d" % (SIZE - 3, SIZE + 1000), SIZE - 3, SIZE - 1),  # end clamped to the size
    ("bytes=-%d" % (SIZE + 50), 0, SIZE - 1),  # suffix longer than the object: whole object
    ("bytes=70000-70099", 70000, 70099),  # inside, not chunk-aligned
]


def _put(upstream, size=SIZE):
    key = s3util.unique_key("range")
    body = s3util.data(size, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    return key, body


def _check_range(resp, body, first, last):
    got = resp["Body"].read()
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got == body[first:last + 1]
    hdrs = s3util.headers_of(resp)
    assert hdrs["content-range"] == "bytes %d-%d/%d" % (first, last, len(body))
    assert int(hdrs["content-length"]) == last - first + 1


@pytest.mark.parametrize("rng,first,last", RANGES, ids=[r[0] for r in RANGES])
def test_range_on_miss_returns_s3_bytes_and_content_range(upstream, gw, rng, first, last):
    key, body = _put(upstream)
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key, Range=rng)
    _check_range(resp, body, first, last)


@pytest.mark.parametrize("rng,first,last", RANGES, ids=[r[0] for r in RANGES])
def test_range_on_hit_returns_s3_bytes_and_content_range(upstream, gw, rng, first, last):
    key, body = _put(upstream)
    c = gw.client()
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    resp = c.get_object(Bucket=gw.bucket, Key=key, Range=rng)
    gw.assert_cache(s3util.headers_of(resp), "HIT")
    _check_range(resp, body, first, last)


@pytest.mark.parametrize("cached", [False, True], ids=["miss", "hit"])
@pytest.mark.parametrize("rng", ["bytes=%d-" % SIZE, "bytes=%d-%d" % (SIZE + 10, SIZE + 20)])
def test_range_starting_beyond_size_is_416_invalid_range(upstream, gw, cached, rng):
    key, body = _put(upstream)
    c = gw.client()
    if cached:
        assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    with pytest.raises(botocore.exceptions.ClientError) as err:
        c.get_object(Bucket=gw.bucket, Key=key, Range=rng)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416
    assert err.value.response["Error"]["Code"] == "InvalidRange"


BIG = 16 * 1024 * 1024
BIG_RANGES = [("bytes=-65536", BIG - 65536, BIG - 1),
              ("bytes=0-65535", 0, 65535),
              ("bytes=9000000-9065535", 9000000, 9065535)]


@pytest.mark.parametrize("rng,first,last", BIG_RANGES, ids=["tail", "head", "middle"])
def test_range_on_miss_of_large_object_does_not_wait_for_whole_object(upstream, gateway, rng,
                                                                      first, last):
    """A 64 KiB range of a cold 16 MiB object (the tail is where a Parquet footer lives) is
    answered from what it needs, not from its whole block or object: every upstream
    connection stalls for good after 1 MiB of its answer, and the range is still answered
    whole (a gateway waiting for more would leave the client to its timeout)."""
    key, body = _put(upstream, BIG)
    gw = gateway(upstream, proxy=True, cache_size="256M")
    gw.proxy.down_limit = 1024 * 1024
    r = rawhttp.get(gw.endpoint, s3util.object_path(gw, key), {"Range": rng}, timeout=20)
    assert r.status == 206 and r.complete, (r.status, r.error, len(r.body))
    assert r.headers["content-range"] == "bytes %d-%d/%d" % (first, last, BIG)
    assert r.body == body[first:last + 1]
