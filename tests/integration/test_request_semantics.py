"""What a request means to S3 survives the gateway: headers that change S3's answer are
honoured or bypass the cache, methods S3 does not have are refused before anything is
signed with the gateway's credentials, and the gateway's own errors read like S3's.

The upstreams are s3rver and radosgw. Where only a fake can show what the gateway sends
(a header S3 would check, a request that must never reach the upstream), the recording
fake of harness/faulty_upstream.py is used and named as such.
"""
import xml.etree.ElementTree as ET

import pytest

from harness import faulty_upstream as faults
from harness import proc, rawhttp, s3util
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
