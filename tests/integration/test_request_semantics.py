"""What a request means to S3 survives the gateway: headers that change S3's answer are
honoured or bypass the cache, methods S3 does not have are refused before anything is
signed with the gateway's credentials, and the gateway's own errors read like S3's.

The upstreams are s3rver and radosgw. Where only a fake can show what the gateway sends
(a header S3 would check, a request that must never reach the upstream), the recording
fake of harness/faulty_upstream.py is used and named as such.
"""
import json
import xml.etree.ElementTree as ET

import pytest

from harness import faulty_upstream as faults
from harness import proc, rawhttp, s3util
from harness.checksums import CHECKSUMS
from harness.upstream import Upstream

faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests


def _error_fields(body):
    root = ET.fromstring(body)
    assert root.tag == "Error", body[:300]
    return root.findtext("Code"), root.findtext("RequestId")


def _assert_own_error(r, status, code):
    """An error the gateway answered itself: S3 XML whose RequestId is the header's."""
    assert r.status == status, (r.status, r.error, r.body[:300])
    got_code, body_id = _error_fields(r.body)
    assert got_code == code, (got_code, r.body[:300])
    header_id = r.headers.get("x-amz-request-id")
    assert header_id and body_id == header_id, (header_id, body_id)


@pytest.mark.parametrize("request_bytes, status, code", [
    (b"GET /test/%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400, "InvalidURI"),
    (b"GET /ab/key HTTP/1.1\r\nHost: h\r\n\r\n", 400, "InvalidBucketName"),
    (b"GET /test/" + b"k" * 1100 + b" HTTP/1.1\r\nHost: h\r\n\r\n", 400, "KeyTooLongError"),
], ids=["invalid-uri", "invalid-bucket", "key-too-long"])
def test_own_errors_carry_the_request_id_of_their_header(s3rver, gateway, request_bytes, status,
                                                         code):
    gw = gateway(s3rver)
    gw.require_real()
    _assert_own_error(rawhttp.exchange(gw.port, request_bytes), status, code)



def _start_on_fake(gateway, fake, *args):
    gw = gateway(fake.upstream(), extra_args=list(args))
    gw.require_real()
    return gw


# ---- methods S3 does not have ----------------------------------------------------------------

@pytest.mark.parametrize("method", ["PATCH", "TRACE", "1GET", "PROPFIND", "get"])
@pytest.mark.parametrize("body", [b"", b"hello"], ids=["no-body", "body"])
def test_methods_s3_does_not_have_are_refused_before_the_upstream(faulty_upstream, gateway,
                                                                  method, body):
    """Recording fake upstream: it shows that nothing was sent, which no real S3 server can."""
    fake = faulty_upstream
    fake.put("k", b"object bytes")
    gw = _start_on_fake(gateway, fake)
    for path in (b"/test/k", b"/test", b"/test/k?tagging"):
        request = b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s" % (
            method.encode(), path, len(body), body)
        r = rawhttp.exchange(gw.port, request)
        _assert_own_error(r, 405, "MethodNotAllowed")
    assert fake.requests() == [], "a method S3 does not have was sent upstream, signed"
    r = rawhttp.get(gw.endpoint, "/test/k")  # the gateway still works
    assert r.status == 200 and r.body == b"object bytes", (r.status, r.body[:200])


def test_admin_api_answers_other_methods_in_its_own_json(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    r = rawhttp.exchange(gw.port, b"PATCH /_s3cached/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Content-Length: 0\r\n\r\n")
    assert r.status == 405 and json.loads(r.body)["error"] == "MethodNotAllowed", (r.status,
                                                                                  r.body)


# ---- headers that change what S3 answers -------------------------------------------------------

SSE_C_KEY = bytes(range(32))  # a customer key for SSE-C: 256 bits


def _sse_c_headers(key=SSE_C_KEY):
    import base64
    import hashlib
    return {
        "x-amz-server-side-encryption-customer-algorithm": "AES256",
        "x-amz-server-side-encryption-customer-key": base64.b64encode(key).decode(),
        "x-amz-server-side-encryption-customer-key-MD5":
            base64.b64encode(hashlib.md5(key).digest()).decode(),
    }


def test_sse_c_object_is_read_with_its_key_and_never_cached(radosgw, gateway):
    """radosgw stores SSE-C objects (rgw_crypt_require_ssl = false on the loopback rig): a
    GET or HEAD with the key reaches it with the key; without it, the upstream's refusal."""
    up = radosgw
    gw = gateway(up)
    gw.require_real()
    key = s3util.unique_key("sse-c/obj")
    body = s3util.data(100 * 1024, seed=key)
    s3util.upstream_client(up).put_object(
        Bucket=up.bucket, Key=key, Body=body, SSECustomerAlgorithm="AES256",
        SSECustomerKey=SSE_C_KEY)
    path = "/%s/%s" % (up.bucket, s3util.quote_key(key))
    for _ in range(2):
        r = s3util.raw(gw, "GET", path, headers=_sse_c_headers())
        assert r.status == 200 and r.body == body, (r.status, r.body[:300])
        assert r.headers.get("x-cache") == "BYPASS", r.headers
        assert r.headers.get("x-amz-server-side-encryption-customer-algorithm") == "AES256"
        h = s3util.raw(gw, "HEAD", path, headers=_sse_c_headers())
        assert h.status == 200 and int(h.headers["content-length"]) == len(body), h.status
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    got = client.get_object(Bucket=up.bucket, Key=key, SSECustomerAlgorithm="AES256",
                            SSECustomerKey=SSE_C_KEY)
    assert got["Body"].read() == body
    for headers in ({}, _sse_c_headers(bytes(32))):  # no key, and a wrong one
        r = s3util.raw(gw, "GET", path, headers=headers)
        assert r.status in (400, 403) and body not in r.body, (r.status, r.body[:300])
    st = gw.stats()
    assert st["objects"] == 0 and st["hits"] == 0, st


def test_plain_object_overwritten_with_sse_c_is_not_served_from_the_cache(radosgw, gateway):
    """A cached plain object rewritten through the gateway as SSE-C: a read without the key
    gets the upstream's refusal, never the old bytes; a read with it, the new ones."""
    up = radosgw
    gw = gateway(up)
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    key = s3util.unique_key("sse-c/rewritten")
    path = "/%s/%s" % (up.bucket, s3util.quote_key(key))
    old, new = b"plain old bytes" * 100, b"secret new bytes" * 100
    client.put_object(Bucket=up.bucket, Key=key, Body=old)
    assert rawhttp.get(gw.endpoint, path).body == old
    gw.stats_when(lambda s: s["objects"] == 1)
    client.put_object(Bucket=up.bucket, Key=key, Body=new, SSECustomerAlgorithm="AES256",
                      SSECustomerKey=SSE_C_KEY)
    r = rawhttp.get(gw.endpoint, path)
    assert r.status == 400 and old not in r.body and new not in r.body, (r.status, r.body[:300])
    r = s3util.raw(gw, "GET", path, headers=_sse_c_headers())
    assert r.status == 200 and r.body == new and r.headers.get("x-cache") == "BYPASS"
    assert gw.stats()["objects"] == 0


@pytest.mark.parametrize("headers", [
    _sse_c_headers(),
    {"x-amz-request-payer": "requester"},
    {"x-amz-expected-bucket-owner": "111122223333"},
    {"x-amz-some-future-header": "1"},
], ids=["sse-c", "request-payer", "expected-bucket-owner", "unknown-x-amz"])
def test_headers_that_change_s3s_answer_reach_the_upstream_uncached(faulty_upstream, gateway,
                                                                    headers):
    """Recording fake upstream: it shows which headers the gateway sent, and S3 would check
    them (the expected owner, the payer, the key) in ways a test rig cannot."""
    fake = faulty_upstream
    body = b"plain object bytes" * 100
    fake.put("k", body)
    gw = _start_on_fake(gateway, fake)
    for method in ("GET", "HEAD", "GET"):
        before = len(fake.requests())
        r = rawhttp.get(gw.endpoint, "/test/k", headers=dict(headers), method=method)
        assert r.status == 200 and r.headers.get("x-cache") == "BYPASS", (r.status, r.headers)
        sent = fake.requests()[before:]
        assert [m for m, _, _ in sent] == [method], sent
        for name, value in headers.items():
            assert sent[0][2].get(name.lower()) == value, (name, sent[0][2])
    assert gw.stats()["objects"] == 0
    r = rawhttp.get(gw.endpoint, "/test/k")  # without them, the object is cached as ever
    assert r.status == 200 and r.headers.get("x-cache") == "MISS"
    assert rawhttp.get(gw.endpoint, "/test/k").headers.get("x-cache") == "HIT"


def test_a_cached_object_is_not_served_to_a_request_with_sse_c_headers(faulty_upstream, gateway):
    """Recording fake upstream: once a plain object is cached, a GET with SSE-C headers still
    goes upstream, where S3 would refuse a key the object was not written with."""
    fake = faulty_upstream
    fake.put("k", b"cached bytes")
    gw = _start_on_fake(gateway, fake)
    assert rawhttp.get(gw.endpoint, "/test/k").headers.get("x-cache") == "MISS"
    gw.stats_when(lambda s: s["objects"] == 1)
    before = fake.count("k")
    r = rawhttp.get(gw.endpoint, "/test/k", headers=_sse_c_headers())
    assert r.headers.get("x-cache") == "BYPASS" and fake.count("k") == before + 1




def test_checksum_mode_is_honoured_on_misses_and_hits(faulty_upstream, gateway):
    """Fake upstream: neither s3rver nor radosgw 16 returns checksums. SDKs send
    x-amz-checksum-mode: ENABLED on every GET (botocore >= 1.36), so such reads stay
    cacheable, and get the object's checksums on whole-object answers as from S3."""
    fake = faulty_upstream
    body = b"checksummed bytes" * 1000
    crc = {"x-amz-checksum-crc32": CHECKSUMS["crc32"](body), "x-amz-checksum-type": "FULL_OBJECT"}
    fake.put("k", body, checksums=crc)
    gw = _start_on_fake(gateway, fake)
    asked = {"x-amz-checksum-mode": "ENABLED"}
    for want in ("MISS", "HIT"):
        r = rawhttp.get(gw.endpoint, "/test/k", headers=asked)
        assert r.status == 200 and r.body == body and r.headers.get("x-cache") == want, (
            r.status, r.headers)
        for name, value in crc.items():
            assert r.headers.get(name) == value, (want, r.headers)
        if want == "MISS":
            gw.stats_when(lambda s: s["objects"] == 1)
    h = rawhttp.get(gw.endpoint, "/test/k", headers=asked, method="HEAD")
    assert h.status == 200 and h.headers.get("x-amz-checksum-crc32") == crc["x-amz-checksum-crc32"]
    plain = rawhttp.get(gw.endpoint, "/test/k")
    assert plain.headers.get("x-cache") == "HIT" and "x-amz-checksum-crc32" not in plain.headers
    part = rawhttp.get(gw.endpoint, "/test/k", headers=dict(asked, Range="bytes=0-99"))
    assert part.status == 206 and part.body == body[:100]
    assert "x-amz-checksum-crc32" not in part.headers, "a whole-object checksum on a part"
    assert fake.count("k") == 1


def test_boto3_reads_with_checksum_mode_are_cached(upstream, gateway):
    """botocore >= 1.36 asks for checksums on every GET by default (ChecksumMode here, for
    the older botocore of the test rig): such reads must not lose the cache."""
    gw = gateway(upstream)
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    key = s3util.unique_key("checksum-mode/obj")
    body = s3util.data(10 * 1024, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    seen = []
    client.meta.events.register(
        "before-send.s3.GetObject",
        lambda request, **kw: seen.append(request.headers.get("x-amz-checksum-mode")))
    results = []
    for _ in range(2):
        resp = client.get_object(Bucket=upstream.bucket, Key=key, ChecksumMode="ENABLED")
        assert resp["Body"].read() == body
        results.append(s3util.x_cache(resp))
        gw.stats_when(lambda s: s["objects"] >= 1)
    assert seen and seen[0] in (b"ENABLED", "ENABLED"), seen
    assert results == ["MISS", "HIT"], results


# ---- the gateway's errors and the upstream's ---------------------------------------------------

@pytest.mark.parametrize("path", ["/test/some-key", "/test?list-type=2"], ids=["fill", "pass"])
def test_unreachable_upstream_is_502_bad_gateway_with_matching_request_id(gateway, path):
    """No server at all on the upstream port: the gateway answers itself."""
    dead = Upstream("dead", "http://127.0.0.1:%d" % proc.free_port(), "AKIDDEAD", "dead", "test")
    gw = gateway(dead, extra_args=["--upstream-retries", "0"])
    gw.require_real()
    _assert_own_error(rawhttp.get(gw.endpoint, path), 502, "BadGateway")


def test_relayed_upstream_errors_keep_the_upstreams_request_id(radosgw, gateway):
    """radosgw names its request in the error body; the header must name the same one."""
    gw = gateway(radosgw)
    gw.require_real()
    for path in ("/test/%s" % s3util.unique_key("missing"),  # a fill's error
                 "/no-such-bucket-%s?list-type=2" % proc.free_port()):  # pass-through
        r = rawhttp.get(gw.endpoint, path)
        assert r.status == 404, (r.status, r.body[:300])
        code, body_id = _error_fields(r.body)
        assert body_id and r.headers.get("x-amz-request-id") == body_id, (
            code, body_id, r.headers)
        assert r.headers.get("x-s3cached-request-id"), r.headers  # the access log's id
