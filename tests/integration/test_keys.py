"""Awkward keys round-trip through the gateway: PUT, LIST, GET (miss and hit), HEAD, DELETE."""
import uuid

import pytest

from harness import s3util

KEYS = {
    "space": "dir with space/file name.txt",
    "unicode": "ünïcødé/ключ/日本語.bin",
    "plus": "a+b/c+d",
    "percent": "100%/50%25off",
    "double_slash": "a//b///c",
    "leading_slash": "/lead",
    "trailing_slash": "folder/",
    "reserved": "x=1&y=2;z,@$!'()*:[]",
    "tilde_dots": "~user/.hidden/...",
    "query_like": "what?is#this",
}


@pytest.mark.parametrize("name", list(KEYS))
def test_awkward_key_round_trips(upstream, gw, name):
    if upstream.name == "s3rver" and "//" in "/" + KEYS[name]:
        pytest.skip("s3rver itself answers 404 to keys with '//' (checked directly)")
    prefix = "keys-%s/" % uuid.uuid4().hex[:8]
    key = prefix + KEYS[name]
    body = ("content of %r" % key).encode()
    c = gw.client()
    c.put_object(Bucket=gw.bucket, Key=key, Body=body)

    listed = c.list_objects_v2(Bucket=gw.bucket, Prefix=prefix)
    assert [o["Key"] for o in listed.get("Contents", [])] == [key]
    listed_v1 = c.list_objects(Bucket=gw.bucket, Prefix=prefix)
    assert [o["Key"] for o in listed_v1.get("Contents", [])] == [key]

    for expected in ("MISS", "HIT"):
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == body
        gw.assert_cache(s3util.headers_of(resp), expected)
    assert c.head_object(Bucket=gw.bucket, Key=key)["ContentLength"] == len(body)
    # the object really is under that key upstream
    direct = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key)
    assert direct["Body"].read() == body

    c.delete_object(Bucket=gw.bucket, Key=key)
    assert c.list_objects_v2(Bucket=gw.bucket, Prefix=prefix).get("KeyCount") == 0
