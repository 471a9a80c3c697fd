"""Object headers are the same on a MISS and on a HIT as the upstream sent them."""
from harness import s3util

KEPT = ("etag", "last-modified", "content-type", "content-encoding", "content-disposition",
        "cache-control", "content-length", "x-amz-meta-color", "x-amz-meta-mixed-case")


def test_headers_preserved_between_miss_and_hit(upstream, gw):
    key = s3util.unique_key("hdr")
    body = s3util.data(4321, seed=key)
    s3util.upstream_client(upstream).put_object(
        Bucket=upstream.bucket, Key=key, Body=body, ContentType="application/x-tar",
        ContentEncoding="gzip", ContentDisposition='attachment; filename="shard 0.tar"',
        CacheControl="max-age=60", Metadata={"color": "blue", "Mixed-Case": "a b=c"})
    direct = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key)
    want = {h: s3util.headers_of(direct).get(h) for h in KEPT}
    assert want["x-amz-meta-color"] == "blue"
    assert want["x-amz-meta-mixed-case"] == "a b=c"

    c = gw.client()
    for expected in ("MISS", "HIT"):
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == body
        hdrs = s3util.headers_of(resp)
        gw.assert_cache(hdrs, expected)
        assert {h: hdrs.get(h) for h in KEPT} == want, expected
    head = c.head_object(Bucket=gw.bucket, Key=key)
    assert {h: s3util.headers_of(head).get(h) for h in KEPT} == want
    assert head["Metadata"] == {"color": "blue", "mixed-case": "a b=c"}


def test_put_with_many_metadata_headers_is_signed_and_kept(upstream, gw):
    # Every x-amz-meta-* header is signed upstream: 60 of them make a long SignedHeaders list.
    key = s3util.unique_key("manymeta")
    meta = {"field-number-%02d" % i: "value %d" % i for i in range(60)}
    c = gw.client()
    c.put_object(Bucket=gw.bucket, Key=key, Body=b"meta", Metadata=meta)
    got = s3util.upstream_client(upstream).head_object(Bucket=upstream.bucket, Key=key)
    assert got["Metadata"] == meta
