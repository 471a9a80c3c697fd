"""Fresh data: hits served until evicted or invalidated by default, --revalidate-after
asking the upstream first (304 keeps, 200 replaces, errors serve the stale copy and say so),
and POST /_s3cached/invalidate for keys or a prefix."""
import json
import time
import urllib.error
import urllib.request

import pytest

from harness import s3util


def put_direct(up, key, body):
    s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)


def get(gw, key):
    """GET through the gateway: (status, body, lower-cased headers)."""
    url = "%s/%s/%s" % (gw.endpoint, gw.bucket, s3util.quote_key(key))
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read(), {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, e.read(), {k.lower(): v for k, v in e.headers.items()}


def invalidate(gw, body):
    req = urllib.request.Request(gw.endpoint + "/_s3cached/invalidate", method="POST",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def warm(gw, key, body):
    for want in ("MISS", "HIT"):
        status, got, h = get(gw, key)
        assert status == 200 and got == body and h["x-cache"] == want
        gw.stats_when(lambda s: s["fills_stored"] >= 1)


def test_by_default_a_hit_is_served_until_invalidated(upstream, gateway):
    key = s3util.unique_key("fresh")
    put_direct(upstream, key, b"version 1")
    gw = gateway(upstream)
    gw.require_real()
    warm(gw, key, b"version 1")
    put_direct(upstream, key, b"version 2, behind the gateway's back")
    status, got, h = get(gw, key)
    assert (status, got, h["x-cache"]) == (200, b"version 1", "HIT")

    assert invalidate(gw, {"bucket": gw.bucket, "keys": [key]}) == (200, {"removed": 1})
    status, got, h = get(gw, key)
    assert (status, got, h["x-cache"]) == (200, b"version 2, behind the gateway's back", "MISS")


def test_revalidation_keeps_an_unchanged_copy_without_refetching(upstream, gateway):
    key = s3util.unique_key("reval")
    body = s3util.data(50000, seed=key)
    put_direct(upstream, key, body)
    gw = gateway(upstream, extra_args=["--revalidate-after", "1s"])
    gw.require_real()
    warm(gw, key, body)
    before = gw.stats()
    time.sleep(2.2)
    for _ in range(2):
        status, got, h = get(gw, key)
        assert (status, got, h["x-cache"]) == (200, body, "HIT")
        assert "x-s3cached-stale" not in h
    after = gw.stats()
    assert after["bytes_from_upstream"] == before["bytes_from_upstream"], "refetched the body"
    assert after["fills_stored"] == before["fills_stored"]


def test_revalidation_replaces_a_changed_object(upstream, gateway):
    key = s3util.unique_key("revalchg")
    put_direct(upstream, key, b"old bytes")
    gw = gateway(upstream, extra_args=["--revalidate-after", "1"])
    gw.require_real()
    warm(gw, key, b"old bytes")
    put_direct(upstream, key, b"new bytes, longer than before")
    time.sleep(2.2)
    status, got, h = get(gw, key)
    assert (status, got, h["x-cache"]) == (200, b"new bytes, longer than before", "MISS")
    gw.stats_when(lambda s: s["fills_stored"] >= 2)
    status, got, h = get(gw, key)
    assert (status, got, h["x-cache"]) == (200, b"new bytes, longer than before", "HIT")


def test_revalidation_of_a_deleted_object_answers_404(upstream, gateway):
    key = s3util.unique_key("revaldel")
    put_direct(upstream, key, b"soon gone")
    gw = gateway(upstream, extra_args=["--revalidate-after", "1"])
    gw.require_real()
    warm(gw, key, b"soon gone")
    s3util.upstream_client(upstream).delete_object(Bucket=upstream.bucket, Key=key)
    time.sleep(2.2)
    status, _, _ = get(gw, key)
    assert status == 404
    assert gw.stats()["objects"] == 0


def test_revalidation_failure_serves_the_stale_copy_and_says_so(upstream, gateway):
    key = s3util.unique_key("revalstale")
    body = s3util.data(20000, seed=key)
    put_direct(upstream, key, body)
    gw = gateway(upstream, proxy=True,
                 extra_args=["--revalidate-after", "1", "--upstream-retries", "0"])
    gw.require_real()
    warm(gw, key, body)
    gw.proxy.stop()
    time.sleep(2.2)
    status, got, h = get(gw, key)
    assert (status, got, h["x-cache"]) == (200, body, "HIT")
    assert h["x-s3cached-stale"] == "true"
    assert "Revalidation Failed" in h["warning"]


def test_invalidate_prefix_drops_only_that_prefix(upstream, gateway):
    base = s3util.unique_key("invp")
    keys = {base + "/a/1": b"a1", base + "/a/2": b"a2", base + "/b/1": b"b1"}
    for k, v in keys.items():
        put_direct(upstream, k, v)
    gw = gateway(upstream)
    gw.require_real()
    for k, v in keys.items():
        warm(gw, k, v)
    gw.stats_when(lambda s: s["objects"] >= 3)
    assert invalidate(gw, {"bucket": gw.bucket, "prefix": base + "/a/"}) == (200, {"removed": 2})
    assert get(gw, base + "/a/1")[2]["x-cache"] == "MISS"
    assert get(gw, base + "/b/1")[2]["x-cache"] == "HIT"


@pytest.mark.parametrize("body,code", [
    ({"keys": ["k"]}, "MissingField"),
    ({"bucket": "b"}, "MissingField"),
    ({"bucket": "b", "keys": ["k"], "prefix": "p"}, "MissingField"),
    ({"bucket": "b", "keys": []}, "InvalidField"),
    ({"bucket": "b", "keys": [7]}, "InvalidField"),
    ({"bucket": "b", "prefix": "p", "extra": 1}, "UnknownField"),
])
def test_invalidate_rejects_bad_bodies_precisely(upstream, gateway, body, code):
    gw = gateway(upstream)
    gw.require_real()
    status, reply = invalidate(gw, body)
    assert status == 400 and reply["error"] == code, reply
