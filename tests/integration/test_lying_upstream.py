"""Upstreams that lie about what they answer: the fault-injecting FAKE upstream only
(harness/faulty_upstream.py), since no real S3 server answers an unconditional GET with a
206 or a 304; every test name says "fake".

A cache fill is an unconditional whole-object GET: only a 200 is the object. Any other
non-error status is an upstream error: never stored, and the client gets 502 BadGateway.
"""
import os
import time

import pytest

from harness import faulty_upstream as faults
from harness import rawhttp, s3util

faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests

KiB = 1024
MULTIPART_ETAG = '"0123456789abcdef0123456789abcdef-2"'  # no digest of the body to check


_start = faults.start_gateway
_path = s3util.object_path


def _log(gw):
    with open(os.path.join(gw.workdir, "stderr.%d.log" % gw.runs), errors="replace") as f:
        return f.read()


LIES = {
    "206-partial": lambda size: faults.lying_status(
        206, part=(0, 99), content_range="bytes 0-99/%d" % size, etag=MULTIPART_ETAG),
    "304": lambda size: faults.lying_status(304, etag=MULTIPART_ETAG),
    "204": lambda size: faults.lying_status(204, etag=MULTIPART_ETAG),
    "203-whole": lambda size: faults.lying_status(203, etag=MULTIPART_ETAG),
}


@pytest.mark.parametrize("lie", sorted(LIES))
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_fake_fill_answered_with_another_status_than_200_is_a_502_never_stored(
        faulty_upstream, gateway, lie, method):
    fake = faulty_upstream
    key = "lie/" + lie
    body = s3util.data(64 * KiB + 5, seed=key)
    fake.put(key, body, LIES[lie](len(body)))
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key), method=method)
    assert r.status == 502, (r.status, r.headers, r.body[:300])
    if method == "GET":
        assert b"<Code>BadGateway</Code>" in r.body, r.body[:300]
    # A GET is a fill; a HEAD on a miss is forwarded as the client's HEAD.
    what = "a fill" if method == "GET" else "a forwarded read"
    assert "answered %s of test/%s with status" % (what, key) in _log(gw)
    st = gw.stats()
    assert st["fills_stored"] == 0 and st["objects"] == 0, st
    # The upstream tells the truth again: the whole object, fetched afresh (nothing was kept).
    fake.set_fault(key, faults.normal(etag=MULTIPART_ETAG))
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    assert r.status == 200 and r.complete and r.body == body, (r.status, len(r.body))
    assert r.headers.get("x-cache") == "MISS", r.headers
    assert fake.count(key, method=None) == 2


def _warm(gw, fake, key, body):
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    assert r.status == 200 and r.body == body, (r.status, len(r.body))
    gw.stats_when(lambda s: s["fills_stored"] == 1)


def test_fake_revalidation_answered_304_with_another_etag_is_not_unchanged(
        faulty_upstream, gateway):
    # The object was overwritten; the fake answers the revalidation's If-None-Match with a
    # 304 whose ETag is the new one, not the cached copy's: no real server does.
    fake = faulty_upstream
    key = "lie/reval-304"
    old, new = b"old bytes " * 1000, b"new bytes, longer " * 1000
    fake.put(key, old)
    gw = _start(gateway, fake, "--revalidate-after", "1")
    _warm(gw, fake, key, old)
    fake.put(key, new, faults.lying_status(304))  # the ETag: the MD5 of the new body
    time.sleep(2.2)
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    assert not (r.status == 200 and r.body == old), "a 304 with another ETag kept the old copy"
    heads = fake.request_headers(key, method="HEAD")
    assert heads and heads[-1].get("if-none-match"), heads
    # The copy is dropped; the refill got a 304 to a plain GET too: a lie, 502.
    assert r.status == 502, (r.status, r.body[:200])
    assert gw.stats()["objects"] == 0


@pytest.mark.parametrize("part", ["before", "short"])
def test_fake_range_fetched_beside_a_fill_answered_with_another_range_is_not_served_as_it(
        faulty_upstream, gateway, part):
    # A range far into an object still arriving is fetched on its own (If-Match, explicit
    # Range). The fake answers it with a 206 of other bytes, with their true Content-Range:
    # starting before the range and ending inside it, or the range's start but shorter.
    fake = faulty_upstream
    key = "lie/range-" + part
    body = s3util.data(2 * 1024 * KiB, seed=key)
    first, last = 1024 * KiB, 1024 * KiB + 99
    lie = (first - 50, first + 49) if part == "before" else (first, first + 49)
    fake.put(key, body, faults.range_lie(lie))
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key), headers={"Range": "bytes=%d-%d" % (first, last)},
                    timeout=60)
    ranged = [h for h in fake.request_headers(key) if "range" in h]
    assert ranged, "the range was not fetched on its own: the test proves nothing"
    assert r.status == 206 and r.complete, (r.status, r.error, len(r.body))
    assert r.headers["content-range"] == "bytes %d-%d/%d" % (first, last, len(body)), r.headers
    assert r.body == body[first:last + 1], "wrong or short bytes for the range asked"
    assert "read from the fill instead" in _log(gw)


@pytest.mark.parametrize("part", ["before", "shorter"])
def test_fake_opening_of_a_large_object_answered_with_another_range_is_never_served(
        faulty_upstream, gateway, part):
    # A range of a large object not seen yet is asked with the GET of its first block, without
    # If-Match (an opening), whose 206 names the object's size and version. The fake answers
    # every ranged GET with other bytes, with their true Content-Range: the opening names
    # nothing, and no byte of the lie reaches the client, whose range fails as a 502 (every
    # block fetch is lied to as well), never a 206 of the wrong bytes.
    fake = faulty_upstream
    key = "lie/opening-" + part
    body = s3util.data(3 * 1024 * KiB + 5, seed=key)
    first, last = 1024 * KiB, 2048 * KiB - 1  # block 1 of 1 MiB blocks, whole
    lie = (first - 50, first + 49) if part == "before" else (first, first + 49)
    fake.put(key, body, faults.range_lie(lie, chunk=256 * KiB, interval=0.01))
    gw = _start(gateway, fake, "--block-size", "1M")
    r = rawhttp.get(gw.endpoint, _path(gw, key), headers={"Range": "bytes=%d-%d" % (first, last)},
                    timeout=60)
    ranged = [h for h in fake.request_headers(key) if "range" in h]
    assert any("if-match" not in h for h in ranged), "no opening was asked: the test proves nothing"
    assert r.status == 502, (r.status, r.error, len(r.body))
    assert body[lie[0]:lie[1] + 1] not in r.body
    assert "not the block" in _log(gw)


# ---- header values the upstream could parse differently -------------------------------


@pytest.mark.parametrize("value", [
    b"a\rb",
    pytest.param(b"a\x00b", marks=pytest.mark.xfail(strict=True, reason=(
        "libmicrohttpd 0.9.75 ends the value at the NUL and reports its length so: the "
        "gateway cannot see it, and forwards (and signs) the value cut short, 'a'"))),
    b"a\x01b", b"a\x7fb", b"a\x0bb"], ids=["bare-CR", "NUL", "SOH", "DEL", "VT"])
@pytest.mark.parametrize("target", ["/test/k?versionId=1", "/test/k"], ids=["pass", "read"])
def test_fake_header_value_with_a_control_character_is_400_and_never_sent_upstream(
        faulty_upstream, gateway, value, target):
    # The fake upstream only records what reaches it (nothing must). A bare CR, a NUL (which
    # would cut the value short) or another control byte in a value could be read otherwise
    # by the upstream, or be signed as other bytes than sent.
    fake = faulty_upstream
    fake.put("k", b"hello")
    gw = _start(gateway, fake)
    port = int(gw.endpoint.rsplit(":", 1)[1])
    r = rawhttp.exchange(port, b"GET " + target.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"X-Amz-Meta-Foo: " + value + b"\r\nConnection: close\r\n\r\n")
    assert r.status == 400, (r.status, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "InvalidRequest", r.body[:300]
    assert fake.requests() == [], fake.requests()


def test_fake_header_value_with_a_tab_or_obs_text_is_forwarded_as_sent(faulty_upstream, gateway):
    fake = faulty_upstream
    fake.put("k", b"hello")
    gw = _start(gateway, fake)
    port = int(gw.endpoint.rsplit(":", 1)[1])
    r = rawhttp.exchange(port, b"GET /test/k?versionId=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"X-Amz-Meta-Foo: a\tb\xff\r\nConnection: close\r\n\r\n")
    assert r.status == 200 and r.body == b"hello", (r.status, r.body[:300])
    assert [h.get("x-amz-meta-foo") for _, _, h in fake.requests()] == ["a\tb\xff"]


# ---- an authorization HEAD answered with something unexpected ---------------------------


def test_fake_authorization_head_answered_204_does_not_admit_to_the_cached_copy(
        faulty_upstream, gateway):
    # An anonymous read of a cached copy asks the upstream first (a HEAD as anonymous). The fake
    # answers it with a 204, which no S3 server sends to a HEAD Object: not a permission.
    fake = faulty_upstream
    key = "lie/authz"
    body = b"cached for a signed client " * 100
    fake.put(key, body)
    gw = gateway(fake.upstream(), client_keys=[{"access_key": "it-lie-1", "secret_key": "s-1"}],
                 extra_args=["--allow-anonymous"])
    gw.require_real()
    got = s3util.client(gw.endpoint, "it-lie-1", "s-1").get_object(Bucket="test", Key=key)
    assert got["Body"].read() == body
    gw.stats_when(lambda s: s["fills_stored"] == 1)
    fake.set_fault(key, faults.lying_status(204))
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    assert fake.count(key, method="HEAD") == 1, "no authorization HEAD: the test proves nothing"
    assert not (r.status == 200 and r.body == body), "a 204 to the HEAD admitted anonymous"
    assert r.status == 502, (r.status, r.body[:200])  # forwarded; the GET's 204 is a lie too
