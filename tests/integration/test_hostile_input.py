"""Hostile and malformed client input: refused cleanly, never a hang, a crash or a stored object.

Requests go over raw sockets (harness/rawhttp.py), since no HTTP library
sends most of them; the upstream is s3rver. After each case the gateway
process must still run and answer GET /_s3cached/stats. An error the gateway
words itself as an S3 error is S3 XML with a <Code>; refusals made inside
libmicrohttpd before any request handler runs (431, 505, a malformed request
line) only need to be a 4xx or a closed connection.
"""
import base64
import os
import socket
import threading
import time
import zlib

import botocore.exceptions
import pytest

from harness import rawhttp, s3util
from harness.checksums import CHECKSUMS

KiB = 1024
HOST = b"Host: 127.0.0.1\r\n"


@pytest.fixture
def hgw(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    yield gw
    _assert_healthy(gw)


def _assert_healthy(gw):
    assert gw.proc is not None and gw.proc.alive(), "the gateway process died"
    st = gw.stats()
    assert "requests" in st


def _seed(s3rver, size=10 * KiB):
    key = s3util.unique_key("hostile")
    body = s3util.data(size, seed=key)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=body)
    return key, body


def _request(method, target, *headers, body=b""):
    lines = [b"%s %s HTTP/1.1\r\n" % (method, target), HOST]
    lines += [h + b"\r\n" for h in headers]
    return b"".join(lines) + b"\r\n" + body


def _assert_s3_error(r, status, code):
    assert r.status == status, (r.status, r.error, r.body[:300])
    assert r.headers.get("content-type", "").startswith(("application/xml", "text/xml")), r.headers
    assert rawhttp.s3_error_code(r.body) == code
    assert r.headers.get("x-amz-request-id")


def _assert_refused(r, timeout):
    """A 4xx, or the connection closed without a reply; never a hang."""
    assert r.error != "timeout", "no reply and no close after %.1f s" % timeout
    if r.status is None:
        assert r.closed, r
    else:
        assert 400 <= r.status < 500, (r.status, r.body[:300])
        if "xml" in r.headers.get("content-type", ""):
            rawhttp.s3_error_code(r.body)


def _upstream_has(s3rver, key):
    try:
        s3util.upstream_client(s3rver).head_object(Bucket=s3rver.bucket, Key=key)
        return True
    except botocore.exceptions.ClientError as err:
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        return False


@pytest.mark.parametrize("target", [b"/test/%zz", b"/test/a%zzb", b"/test/abc%", b"/test/abc%4",
                                    b"/test/a%00b", b"/test/%00"])
def test_bad_or_nul_percent_escape_is_400_invalid_uri(hgw, target):
    r = rawhttp.exchange(hgw.port, _request(b"GET", target, b"Connection: close"))
    _assert_s3_error(r, 400, "InvalidURI")


def test_20_kib_url_is_400_invalid_uri(hgw):
    r = rawhttp.exchange(hgw.port, _request(b"GET", b"/test/" + b"u" * (20 * KiB),
                                            b"Connection: close"))
    _assert_s3_error(r, 400, "InvalidURI")


def test_200_kb_of_headers_is_refused_without_hang(hgw):
    pad = b"p" * 1000
    headers = [b"X-Pad-%d: %s" % (i, pad) for i in range(200)]
    r = rawhttp.exchange(hgw.port, _request(b"GET", b"/test/any", *headers), timeout=10)
    _assert_refused(r, 10)
    assert r.status is None or r.status in (400, 413, 431), r.status


@pytest.mark.parametrize("data", [
    b"NOT A REQUEST\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET /test/x HTTP/1.1 extra\r\n\r\n",
    b"\xff\xfe garbage \x7f\r\n\r\n",
], ids=["words", "tls-hello", "method-only", "extra-token", "binary"])
def test_garbage_request_line_is_refused_at_once(hgw, data):
    r = rawhttp.exchange(hgw.port, data, timeout=5)
    _assert_refused(r, 5)
    assert r.elapsed < 2.0


def test_nul_led_request_line_is_dropped_by_connection_timeout(s3rver, gateway):
    # libmicrohttpd 0.9.75 reads a line starting with NUL as an empty line (which
    # may precede a request) and keeps waiting: only --connection-timeout ends it.
    gw = gateway(s3rver, extra_args=["--connection-timeout", "2"])
    gw.require_real()
    r = rawhttp.exchange(gw.port, b"\x00\xff\xfe garbage \x7f\r\n\r\n", timeout=8)
    _assert_refused(r, 8)
    _assert_healthy(gw)


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/3.0", b"HTTP/9.9"])
def test_unsupported_http_version_is_505_or_refused(hgw, version):
    data = b"GET /test/x %s\r\n%sConnection: close\r\n\r\n" % (version, HOST)
    r = rawhttp.exchange(hgw.port, data, timeout=10)
    assert r.error != "timeout"
    assert r.status in (400, 505) or (r.status is None and r.closed), (r.status, r.body[:200])


def test_key_of_1025_bytes_is_key_too_long_and_1024_passes(hgw):
    r = rawhttp.exchange(hgw.port, _request(b"GET", b"/test/" + b"k" * 1025, b"Connection: close"))
    _assert_s3_error(r, 400, "KeyTooLongError")
    # 1024 bytes is S3's limit, and allowed: the (missing) key reaches s3rver.
    key = ("/".join(["a" * 99] * 10) + "/" + "b" * 24).encode()
    assert len(key) == 1024
    r = rawhttp.exchange(hgw.port, _request(b"GET", b"/test/" + key, b"Connection: close"))
    _assert_s3_error(r, 404, "NoSuchKey")


@pytest.mark.parametrize("rng", [b"bytes=abc", b"bytes=", b"bytes=--1", b"lines=0-9",
                                 b"bytes=1-2-3"])
def test_unparsable_range_returns_whole_object_on_miss_and_hit(s3rver, hgw, rng):
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode()
    for want_cache in ("MISS", "HIT"):
        r = rawhttp.exchange(hgw.port, _request(b"GET", target, b"Range: " + rng,
                                                b"Connection: close"))
        assert r.status == 200, (r.status, r.body[:300])
        assert r.body == body and r.complete
        assert "content-range" not in r.headers
        assert r.headers.get("x-cache") == want_cache
        hgw.stats_when(lambda st: st["objects"] == 1)


def test_request_body_on_get_is_discarded_and_connection_stays_in_sync(s3rver, hgw):
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode()
    # The body looks like a request of its own: it must never be answered as one.
    smuggled = b"GET /_s3cached/stats HTTP/1.1\r\nHost: x\r\n\r\n"
    first = _request(b"GET", target, b"Content-Length: %d" % len(smuggled), body=smuggled)
    with rawhttp.RawConnection(hgw.port) as conn:
        for want_cache in ("MISS", "HIT"):
            assert conn.send(first)
            r = conn.reply(timeout=5)
            assert r.status == 200 and r.complete, (
                "GET with a %d-byte body: status %s, error %s, closed %s" % (
                    len(smuggled), r.status, r.error, r.closed))
            assert r.body == body
            assert r.headers.get("x-cache") == want_cache
            hgw.stats_when(lambda st: st["objects"] == 1)
        assert conn.send(_request(b"GET", target, b"Connection: close"))
        r = conn.reply(timeout=5)
        assert r.status == 200 and r.body == body
        extra = conn.reply(timeout=2)
        assert extra.status is None, "a reply to the smuggled request: %r" % extra.body[:200]


@pytest.mark.parametrize("query", [b"versionId=null", b"partNumber=1",
                                   b"response-content-type=text/plain"])
def test_request_body_on_pass_through_get_never_writes_upstream(s3rver, hgw, query):
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode() + b"?" + query
    r = rawhttp.exchange(hgw.port, _request(b"GET", target, b"Content-Length: 5",
                                            b"Connection: close", body=b"EVIL!"), timeout=5)
    assert r.error != "timeout"
    now = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)["Body"].read()
    assert now == body, "a GET with a body replaced the object upstream with %r" % now[:20]
    if r.status == 200:
        assert r.body == body


@pytest.mark.parametrize("target", [b"/test/" + b"k" * 1025, b"/test/%zz", b"/test/a%00"],
                         ids=["key-1025", "bad-escape", "nul"])
def test_refused_put_with_body_gets_s3_error_at_once(hgw, target):
    data = _request(b"PUT", target, b"Content-Length: 5", b"Connection: close", body=b"hello")
    r = rawhttp.exchange(hgw.port, data, timeout=3)
    assert r.error != "timeout", "no reply within 3 s to a PUT with a refused target"
    assert r.status == 400, (r.status, r.error, r.closed)
    assert rawhttp.s3_error_code(r.body) in ("KeyTooLongError", "InvalidURI")


def _cpu_seconds(pid):
    """User plus system CPU time of a process so far (Linux /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_refused_put_with_body_then_hangup_leaves_gateway_idle(hgw):
    with rawhttp.RawConnection(hgw.port) as conn:
        conn.send(_request(b"PUT", b"/test/%zz", b"Content-Length: 5", body=b"hello"))
        conn.reply(timeout=0.5)
    time.sleep(0.2)
    before = _cpu_seconds(hgw.proc.pid)
    time.sleep(1.5)
    used = _cpu_seconds(hgw.proc.pid) - before
    assert used < 0.3, "an idle gateway burned %.2f s of CPU in 1.5 s after a client hung up" % (
        used)


def test_admin_api_with_request_body_answers(hgw):
    r = rawhttp.exchange(hgw.port, _request(b"GET", b"/_s3cached/stats", b"Content-Length: 5",
                                            b"Connection: close", body=b"hello"), timeout=5)
    assert r.error != "timeout"
    assert r.status is not None, "connection closed without a reply"
    assert r.status == 200 or 400 <= r.status < 500, r.status


def _chunk(data, sig="0" * 64):
    return b"%x;chunk-signature=%s\r\n" % (len(data), sig.encode()) + data + b"\r\n"


def _broken_chunked_bodies(payload):
    half = len(payload) // 2
    a, b = payload[:half], payload[half:]
    final = _chunk(b"")
    return {
        "bad-size": b"zz;chunk-signature=" + b"0" * 64 + b"\r\n" + payload + b"\r\n" + final,
        "size-larger-than-data": (b"%x;chunk-signature=" % (len(a) + 100)) + b"0" * 64 + b"\r\n"
                                 + a + b"\r\n" + _chunk(b) + final,
        "bare-lf": _chunk(a).replace(b"\r\n", b"\n", 1) + _chunk(b) + final,
        "no-final-chunk": _chunk(a) + _chunk(b),
        "garbage-after-data": _chunk(a) + _chunk(b) + b"garbage\r\n\r\n",
        "cut-mid-chunk": _chunk(a) + _chunk(b)[:100],
    }


def _chunked_put(key, payload, raw):
    return _request(
        b"PUT", b"/test/" + s3util.quote_key(key).encode(),
        b"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        b"Content-Encoding: aws-chunked",
        b"x-amz-decoded-content-length: %d" % len(payload),
        b"x-amz-date: 20250101T000000Z",
        b"Content-Length: %d" % len(raw),
        b"Connection: close",
        body=raw)


def test_aws_chunked_put_with_good_framing_is_stored_decoded(s3rver, hgw):
    # The control for the broken variants below: the same request, framed right.
    key = s3util.unique_key("goodchunk")
    payload = s3util.data(128 * KiB, seed=key)
    half = len(payload) // 2
    raw = _chunk(payload[:half]) + _chunk(payload[half:]) + _chunk(b"")
    r = rawhttp.exchange(hgw.port, _chunked_put(key, payload, raw), timeout=15)
    assert r.status == 200, (r.status, r.error, r.body[:300])
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)["Body"].read()
    assert got == payload


@pytest.mark.parametrize("variant", ["bad-size", "size-larger-than-data", "bare-lf",
                                     "no-final-chunk", "garbage-after-data", "cut-mid-chunk"])
def test_aws_chunked_put_with_broken_framing_is_400_and_not_stored(s3rver, hgw, variant):
    key = s3util.unique_key("badchunk")
    payload = s3util.data(128 * KiB, seed=key)
    raw = _broken_chunked_bodies(payload)[variant]
    r = rawhttp.exchange(hgw.port, _chunked_put(key, payload, raw), timeout=15)
    assert r.error != "timeout", "no answer to a broken aws-chunked body"
    assert r.status is not None and 400 <= r.status < 500, (r.status, r.body[:300])
    assert rawhttp.s3_error_code(r.body) in ("IncompleteBody", "InvalidRequest",
                                            "InvalidArgument")
    time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
    assert not _upstream_has(s3rver, key), "a body the client got 4xx for was stored upstream"


def _send_with_pause(port, request, split, pause):
    """Sends request[:split], waits pause seconds, sends the rest; returns the one reply."""
    with rawhttp.RawConnection(port, timeout=15) as conn:
        conn.send(request[:split])
        time.sleep(pause)
        conn.send(request[split:])
        return conn.reply(timeout=15)


def _upstream_size(up, key):
    """The stored object's length upstream, or None if there is none."""
    try:
        head = s3util.upstream_client(up).head_object(Bucket=up.bucket, Key=key)
    except botocore.exceptions.ClientError as err:
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        return None
    return head["ContentLength"]


def test_broken_aws_chunked_body_that_fits_the_pipe_never_reaches_the_upstream(s3rver, hgw):
    # s3rver (unlike S3 and radosgw) keeps what an aborted PUT had sent as the object, so
    # an upstream PUT the gateway starts and then aborts leaves one behind. A body that fits
    # the gateway's pipe (256 KiB decoded) is therefore held until it is known whole and
    # well-formed: a broken one never reaches the upstream at all. The client pauses
    # mid-body, so that an upstream PUT started with the headers would be under way.
    key = s3util.unique_key("badchunk-paused")
    payload = s3util.data(128 * KiB, seed=key)
    raw = _broken_chunked_bodies(payload)["cut-mid-chunk"]
    request = _chunked_put(key, payload, raw)
    r = _send_with_pause(hgw.port, request, len(request) - len(raw) + 1000, pause=1.0)
    assert r.status == 400, (r.status, r.error, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "IncompleteBody"
    time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
    assert _upstream_size(s3rver, key) is None, "a body the client got 400 for reached s3rver"


@pytest.mark.parametrize("ending", [b"garbage\r\n\r\n", b"0",
                                    b"0\r\nx-amz-checksum-crc32:AAAAAA==\r\n"],
                         ids=["garbage", "cut-final-chunk", "cut-trailers"])
def test_aws_chunked_upstream_never_gets_a_whole_body_before_the_final_chunk(upstream, gateway,
                                                                            ending):
    # All the data chunks of a body larger than the pipe arrive, then the client pauses:
    # the gateway has streamed the decoded bytes upstream meanwhile, but must hold back the
    # last one until the final chunk and trailers are verified. Then the body ends badly
    # (garbage where the final chunk belongs, or cut in the final chunk or its trailers,
    # Content-Length saying so): the client gets 400 and the upstream PUT is aborted one
    # byte short, so no object is stored. s3rver keeps an aborted PUT's bytes as the object
    # (S3 and radosgw do not): there, the bar is that it never got the whole body.
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("badchunk-end")
    payload = s3util.data(1024 * KiB, seed=key)
    chunks = b"".join(_chunk(payload[i:i + 64 * KiB]) for i in range(0, len(payload), 64 * KiB))
    request = _chunked_put(key, payload, chunks + ending)
    r = _send_with_pause(gw.port, request, len(request) - len(ending), pause=1.0)
    assert r.status == 400, (r.status, r.error, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "IncompleteBody"
    time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
    size, whole = _upstream_size(upstream, key), len(payload)
    if upstream.name == "s3rver":
        assert size != whole, "the upstream got the whole of a body the client got 400 for"
    else:
        assert size is None, "a body the client got 400 for was stored upstream"
    _assert_healthy(gw)


def _sdk_streamed_put(key, payload, aws_body, trailer=b"x-amz-checksum-crc32"):
    """A PUT as the JavaScript SDK v3 streams one: aws-chunked with a checksum trailer (CRC32
    unless told), sent with Transfer-Encoding: chunked (one HTTP chunk per piece of aws_body)."""
    head = _request(
        b"PUT", b"/test/" + s3util.quote_key(key).encode(),
        b"x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        b"Content-Encoding: aws-chunked",
        b"x-amz-decoded-content-length: %d" % len(payload),
        b"x-amz-trailer: " + trailer,
        b"x-amz-date: 20250101T000000Z",
        b"Transfer-Encoding: chunked",
        b"Connection: close")
    return head, [b"%x\r\n%s\r\n" % (len(p), p) for p in aws_body] + [b"0\r\n\r\n"]


@pytest.mark.parametrize("framing", ["content-length", "transfer-encoding"])
def test_aws_chunked_put_with_a_pause_before_the_final_chunk_is_stored(upstream, gateway,
                                                                       framing):
    # A well-formed aws-chunked body longer than the pipe (so it streams), whose final
    # chunk and trailer come a moment after the data, as the JavaScript SDK sends them
    # (it computes the CRC32 trailer once the data is out). Meanwhile the upstream has all
    # but the last payload byte; the late final chunk must still be read as the end of a
    # good body, and the object stored whole, not answered 400 IncompleteBody.
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("chunk-late-end")
    payload = s3util.data(300 * KiB, seed=key)
    crc = base64.b64encode(zlib.crc32(payload).to_bytes(4, "big"))
    data = b"%x\r\n%s\r\n" % (len(payload), payload)
    end = b"0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % crc
    if framing == "content-length":
        request = _chunked_put(key, payload, data + end)
        split = len(request) - len(end)
    else:
        head, pieces = _sdk_streamed_put(key, payload, [data, end])
        request, split = head + b"".join(pieces), len(head) + len(pieces[0])
    r = _send_with_pause(gw.port, request, split, pause=1.0)
    assert r.status == 200, (r.status, r.error, r.body[:300])
    got = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key)
    assert got["Body"].read() == payload
    _assert_healthy(gw)


@pytest.mark.parametrize("size_kib", [128, 1024], ids=["fits-the-pipe", "streams"])
def test_aws_chunked_put_with_a_wrong_trailer_checksum_is_400_and_not_stored(upstream, gateway,
                                                                            size_kib):
    # The SDK's CRC32 trailer is the body's only checksum, and the upstream never sees it
    # (it gets a plain body): the gateway checks it, before the upstream may have the last
    # byte. A body that does not match is refused as S3 refuses it (400 BadDigest), and
    # not stored: s3rver keeps an aborted PUT's bytes (S3 and radosgw do not), so there
    # the bar is that it never got the whole body.
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("chunk-bad-crc")
    payload = s3util.data(size_kib * KiB, seed=key)
    crc = base64.b64encode((zlib.crc32(payload) ^ 1).to_bytes(4, "big"))
    pieces = [b"%x\r\n%s\r\n" % (64 * KiB, payload[i:i + 64 * KiB])
              for i in range(0, len(payload), 64 * KiB)]
    pieces.append(b"0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % crc)
    head, http_chunks = _sdk_streamed_put(key, payload, pieces)
    r = rawhttp.exchange(gw.port, head + b"".join(http_chunks), timeout=15)
    assert r.status == 400, (r.status, r.error, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "BadDigest"
    time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
    size, whole = _upstream_size(upstream, key), len(payload)
    if upstream.name == "s3rver" and size_kib * KiB > 256 * KiB:
        assert size != whole, "the upstream got the whole of a body the client got 400 for"
    else:
        assert size is None, "a body the client got 400 for was stored upstream"
    _assert_healthy(gw)


@pytest.mark.parametrize("alg", sorted(CHECKSUMS))
def test_aws_chunked_put_checks_every_trailer_checksum_s3_sends(upstream, gateway, alg):
    # Every checksum an SDK may name in x-amz-trailer is checked by the gateway (the upstream
    # never sees the trailer): the right value is stored, a wrong one is 400 BadDigest and not
    # stored. Until the trailer check shared digest.c with fills, a crc64nvme trailer was taken
    # unchecked.
    gw = gateway(upstream)
    gw.require_real()
    payload = s3util.data(128 * KiB, seed=alg)
    for good in (True, False):
        key = s3util.unique_key("chunk-trailer-" + alg)
        value = CHECKSUMS[alg](payload if good else b"x" + payload).encode()
        end = b"0\r\nx-amz-checksum-%s:%s\r\n\r\n" % (alg.encode(), value)
        head, http_chunks = _sdk_streamed_put(
            key, payload, [b"%x\r\n%s\r\n" % (len(payload), payload), end],
            trailer=b"x-amz-checksum-" + alg.encode())
        r = rawhttp.exchange(gw.port, head + b"".join(http_chunks), timeout=15)
        if good:
            assert r.status == 200, (alg, r.status, r.error, r.body[:300])
            got = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key)
            assert got["Body"].read() == payload
        else:
            assert r.status == 400, (alg, r.status, r.error, r.body[:300])
            assert rawhttp.s3_error_code(r.body) == "BadDigest"
            time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
            assert _upstream_size(upstream, key) is None, "a body with a wrong trailer was stored"
    _assert_healthy(gw)


def test_aws_chunked_put_cut_by_a_half_close_is_not_stored(upstream, gateway):
    # Transfer-Encoding: chunked as the SDK sends it; all the data chunks go out, then the
    # client shuts its sending side down with neither the final aws chunk nor the final
    # HTTP chunk. libmicrohttpd takes a chunked body that ends in a half-close as complete,
    # so it is the gateway that must tell the body was cut: the upstream, which has all but
    # the last payload byte by then, must not complete the PUT.
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("chunk-half-close")
    payload = s3util.data(1024 * KiB, seed=key)
    pieces = [b"%x\r\n%s\r\n" % (64 * KiB, payload[i:i + 64 * KiB])
              for i in range(0, len(payload), 64 * KiB)]
    head, http_chunks = _sdk_streamed_put(key, payload, pieces)
    with rawhttp.RawConnection(gw.port, timeout=15) as conn:
        conn.send(head + b"".join(http_chunks[:-1]))  # all but the final HTTP chunk
        time.sleep(1.0)  # the upstream has what the gateway may give it
        conn.sock.shutdown(socket.SHUT_WR)
        r = conn.reply(timeout=15)
    _assert_refused(r, 15)
    time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
    size, whole = _upstream_size(upstream, key), len(payload)
    if upstream.name == "s3rver":
        assert size != whole, "the upstream got the whole of a body that was cut"
    else:
        assert size is None, "a body that was cut was stored upstream"
    _assert_healthy(gw)


def test_broken_aws_chunked_empty_body_is_not_stored(upstream, gateway):
    # An aws-chunked PUT of no payload bytes (x-amz-decoded-content-length: 0) whose
    # framing is broken after the final chunk: there is no payload byte to hold back, so
    # the upstream must not get the (empty) PUT before the framing is known good. The
    # client pauses before the bad bytes, so that a PUT sent with the headers would be done.
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("badchunk-empty")
    raw = _chunk(b"") + b"garbage\r\n\r\n"
    request = _chunked_put(key, b"", raw)
    r = _send_with_pause(gw.port, request, len(request) - len(raw) + 20, pause=1.0)
    assert r.status == 400, (r.status, r.error, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "IncompleteBody"
    time.sleep(0.3)  # an upstream PUT the gateway failed to stop would be done by now
    assert _upstream_size(upstream, key) is None, "a body the client got 400 for was stored"
    _assert_healthy(gw)


def test_aws_chunked_put_the_upstream_refuses_early_gets_the_upstreams_answer(radosgw, gateway):
    # The upstream may answer before it has read the body: here radosgw (s3rver checks no
    # signature) gets a gateway signing with a wrong secret, and answers 403
    # SignatureDoesNotMatch right after the headers. The client's well-formed aws-chunked
    # body (longer than the pipe, so it streams) is then drained, and the client gets the
    # upstream's answer: not a 400 that blames its body.
    upstream = radosgw
    gw = gateway(upstream, secret_key=upstream.secret_key + "-wrong")
    gw.require_real()
    key = s3util.unique_key("chunk-refused")
    payload = s3util.data(1024 * KiB, seed=key)
    chunks = b"".join(_chunk(payload[i:i + 64 * KiB]) for i in range(0, len(payload), 64 * KiB))
    r = rawhttp.exchange(gw.port, _chunked_put(key, payload, chunks + _chunk(b"")), timeout=15)
    assert r.status == 403, (r.status, r.error, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "SignatureDoesNotMatch"
    assert _upstream_size(upstream, key) is None
    _assert_healthy(gw)


def test_slowloris_headers_do_not_delay_other_clients(s3rver, hgw):
    """Normal requests are answered while slow clients are still sending their headers: an
    order, not a time limit (a gateway that waited for the slow ones would answer nothing
    before their last header byte)."""
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode()
    slow = [rawhttp.RawConnection(hgw.port, timeout=30) for _ in range(8)]
    head = _request(b"GET", target)
    slow_bytes = 10  # at most, one byte a second on each slow connection (--header-timeout 20)
    trickled = [0]  # bytes of head each slow connection has been sent
    stop = threading.Event()

    def trickle():
        for i in range(slow_bytes):
            for c in slow:
                c.send(head[i:i + 1])
            trickled[0] = i + 1
            if stop.wait(1.0):
                return

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(0.5)
        for n in range(4):
            r = rawhttp.exchange(hgw.port, _request(b"GET", target, b"Connection: close"))
            assert r.status == 200 and r.body == body, (r.status, r.error)
            assert sender.is_alive(), (
                "request %d was answered only after the slow clients' trickle ended" % n)
            time.sleep(0.5)
        stop.set()
        sender.join(timeout=15)
        assert not sender.is_alive()
        # the slow clients are served too once their request is complete
        for c in slow:
            assert c.send(head[trickled[0]:])
        for c in slow:
            r = c.reply()
            assert r.status == 200 and r.body == body, (r.status, r.error)
    finally:
        stop.set()
        for c in slow:
            c.close()


# ---- slow clients: --header-timeout and --min-body-rate ------------------------------------
# Small bounds keep these short: a head must be in 2 s after its first byte, and a body must
# bring 1 KiB a second over each 2 s window. The idle timeout stays long (30 s), so only the new
# bounds can cut a client that sends something every half second.

SLOW_ARGS = ["--header-timeout", "2", "--min-body-rate", "1K", "--connection-timeout", "30"]


def _dribble_until_closed(conn, data, every, give_up):
    """Sends data a slice at a time (each slice after `every` seconds) until the server closes the
    connection or give_up seconds pass; returns the seconds it took the server to close, or
    None if it never did. data is (slice, ...)."""
    started = time.monotonic()
    for piece in data:
        if not conn.send(piece):
            return time.monotonic() - started
        conn.sock.settimeout(every)
        try:
            got = conn.sock.recv(65536)
        except socket.timeout:
            got = None
        except OSError:
            return time.monotonic() - started
        if got == b"":
            return time.monotonic() - started
        assert not got, "the server answered a request it never got whole: %r" % got[:200]
        if time.monotonic() - started > give_up:
            return None
    return None


def _byte_by_byte(head):
    return [head[i:i + 1] for i in range(len(head))]


def _slow_clients_closed(gw, phase):
    r = rawhttp.get(gw.endpoint, "/metrics")
    assert r.status == 200, (r.status, r.error)
    want = 's3cached_slow_clients_closed_total{phase="%s"} ' % phase
    lines = [l for l in r.body.decode().splitlines() if l.startswith(want)]
    assert len(lines) == 1, r.body[-1000:]
    return int(lines[0].split()[-1])


def test_head_dribbled_past_header_timeout_is_cut_while_others_are_served(s3rver, gateway):
    gw = gateway(s3rver, extra_args=SLOW_ARGS)
    gw.require_real()
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode()
    head = _request(b"GET", target, b"X-Pad: " + b"a" * 100)
    results = {}

    def dribbler(i):
        with rawhttp.RawConnection(gw.port, timeout=30) as c:
            results[i] = _dribble_until_closed(c, _byte_by_byte(head), 0.5, 12)

    threads = [threading.Thread(target=dribbler, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    r = rawhttp.exchange(gw.port, _request(b"GET", target, b"Connection: close"))
    assert r.status == 200 and r.body == body, (r.status, r.error)
    for t in threads:
        t.join(timeout=20)
    for i in range(3):
        took = results.get(i)
        assert took is not None, "a head dribbled one byte each 0.5 s was never cut"
        assert 1.5 <= took <= 6, "cut after %.1f s, not about 2 s after its first byte" % took
    assert _slow_clients_closed(gw, "head") == 3
    assert _slow_clients_closed(gw, "body") == 0
    _assert_healthy(gw)


def test_keep_alive_idle_is_not_cut_but_a_dribbled_second_head_is(s3rver, gateway):
    gw = gateway(s3rver, extra_args=SLOW_ARGS)
    gw.require_real()
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode()
    with rawhttp.RawConnection(gw.port, timeout=30) as c:
        assert c.send(_request(b"GET", target))
        r = c.reply()
        assert r.status == 200 and r.body == body, (r.status, r.error)
        # Idle between requests for longer than --header-timeout: only the idle timeout
        # (--connection-timeout, 30 s here) may end that.
        time.sleep(3.5)
        assert c.send(_request(b"GET", target))
        r = c.reply()
        assert r.status == 200 and r.body == body, (r.status, r.error)
        # The next head, dribbled, is timed from its first byte.
        took = _dribble_until_closed(c, _byte_by_byte(_request(b"GET", target)), 0.5, 12)
    assert took is not None, "a dribbled second head on a kept-alive connection was never cut"
    assert 1.5 <= took <= 6, "cut after %.1f s, not about 2 s after its first byte" % took


def test_max_connections_of_dribblers_do_not_lock_out_a_normal_client(s3rver, gateway):
    gw = gateway(s3rver, extra_args=SLOW_ARGS + ["--max-connections", "4", "--threads", "1"])
    gw.require_real()
    key, body = _seed(s3rver)
    target = b"/test/" + s3util.quote_key(key).encode()
    head = _request(b"GET", target, b"X-Pad: " + b"a" * 100)
    stop = threading.Event()
    slow = []

    def trickle():
        # every connection the gateway allows, each sending one byte every 0.5 s for 30 s
        for i in range(60):
            for c in slow:
                c.send(head[i:i + 1])
            if stop.wait(0.5):
                return

    # the stats request of _assert_healthy must find a free slot too, so open them after it
    slow.extend(rawhttp.RawConnection(gw.port, timeout=30) for _ in range(4))
    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(0.5)
        # The dribblers hold every slot: before the bound the request waits (or is refused);
        # once they are cut it is served. Without a head bound they would hold them for 30 s.
        deadline = time.monotonic() + 12
        r = None
        while time.monotonic() < deadline:
            r = rawhttp.exchange(gw.port, _request(b"GET", target, b"Connection: close"),
                                 timeout=max(0.5, deadline - time.monotonic()))
            if r.status is not None:
                break
            time.sleep(0.2)
        assert r.status == 200 and r.body == body, (r.status, r.error)
    finally:
        stop.set()
        sender.join(timeout=5)
        for c in slow:
            c.close()
    _assert_healthy(gw)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_body_dribbled_below_min_body_rate_is_cut_and_not_stored(radosgw, gateway, framing):
    # On radosgw: s3rver stores the part of a body it got before the connection dropped, so
    # only a strict upstream shows whether the gateway let a cut body through.
    gw = gateway(radosgw, extra_args=SLOW_ARGS)
    gw.require_real()
    key = s3util.unique_key("slowbody")
    size = 20000
    target = b"/%s/%s" % (radosgw.bucket.encode(), key.encode())
    if framing == "chunked":  # an admin API body: the gateway reads it whole, chunk by chunk
        head = _request(b"POST", b"/_s3cached/manifests", b"Transfer-Encoding: chunked")
        pieces = [b"64\r\n" + b"x" * 100 + b"\r\n"] * (size // 100)
    else:
        head = _request(b"PUT", target, b"Content-Length: %d" % size)
        pieces = [b"x" * 100] * (size // 100)
    with rawhttp.RawConnection(gw.port, timeout=30) as c:
        assert c.send(head)
        # 100 bytes each 0.5 s: 200 bytes a second, a fifth of the minimum
        took = _dribble_until_closed(c, pieces, 0.5, 12)
    assert took is not None, "a body at 200 bytes/s was never cut"
    assert took <= 8, "a body at 200 bytes/s was cut only after %.1f s" % took
    assert _slow_clients_closed(gw, "body") == 1
    time.sleep(0.3)
    assert not _upstream_has(radosgw, key), "a body that was cut off was stored upstream"
    _assert_healthy(gw)


def test_slow_upload_above_min_body_rate_completes(s3rver, gateway):
    gw = gateway(s3rver, extra_args=SLOW_ARGS)
    gw.require_real()
    key = s3util.unique_key("slowok")
    payload = s3util.data(24 * KiB, seed=key)
    head = _request(b"PUT", b"/test/" + key.encode(), b"Content-Length: %d" % len(payload))
    with rawhttp.RawConnection(gw.port, timeout=30) as c:
        assert c.send(head)
        # 4 KiB a second (four times the minimum) for 6 s: three windows
        for i in range(0, len(payload), 512):
            assert c.send(payload[i:i + 512]), "a body at 4 KiB/s was cut"
            time.sleep(0.125)
        r = c.reply(timeout=20)
    assert r.status == 200, (r.status, r.error, r.body[:300])
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)
    assert got["Body"].read() == payload
    assert _slow_clients_closed(gw, "body") == 0


def test_put_to_a_stalled_upstream_is_not_cut_by_min_body_rate(s3rver, gateway):
    # The upstream reads nothing for 5 s (two and a half windows) while the client sends 16 MiB
    # as fast as it can: the gateway fills its upload pipe, suspends the connection, and the
    # client's bytes wait unread. The client is not the slow one, so it is not cut.
    gw = gateway(s3rver, extra_args=SLOW_ARGS, stall_up=5)
    gw.require_real()
    key = s3util.unique_key("slowup")
    payload = s3util.data(16 * 1024 * KiB, seed=key)
    head = _request(b"PUT", b"/test/" + key.encode(), b"Content-Length: %d" % len(payload))
    with rawhttp.RawConnection(gw.port, timeout=60) as c:
        assert c.send(head + payload), "the upload was cut"
        r = c.reply(timeout=60)
    assert r.status == 200, (r.status, r.error, r.body[:300])
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)
    assert got["Body"].read() == payload
    assert _slow_clients_closed(gw, "body") == 0


def test_response_read_below_min_body_rate_is_cut(s3rver, gateway):
    # A reader that takes a response one trickle at a time keeps --connection-timeout from ever
    # firing (each byte it makes room for is sent at once), and a hit holds an LMDB read
    # transaction, and one of --max-connections, the whole time.
    gw = gateway(s3rver, extra_args=["--header-timeout", "2", "--min-body-rate", "64K",
                                     "--connection-timeout", "6"])
    gw.require_real()
    key, body = _seed(s3rver, size=16 * 1024 * KiB)  # more than the socket buffers hold
    target = b"/test/" + s3util.quote_key(key).encode()
    r = rawhttp.exchange(gw.port, _request(b"GET", target), timeout=30)
    assert r.status == 200 and r.body == body, (r.status, r.error)  # now a hit
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)  # small segments: frequent room
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.settimeout(10)
    s.connect(("127.0.0.1", gw.port))
    got, closed_after = 0, None
    try:
        s.sendall(_request(b"GET", target))
        started = time.monotonic()
        while time.monotonic() - started < 30:
            try:
                data = s.recv(4096)  # 4 KiB each 0.25 s: 16 KiB/s, a quarter of the minimum
            except OSError:
                data = b""
            if not data:
                closed_after = time.monotonic() - started
                break
            got += len(data)
            time.sleep(0.25)
    finally:
        s.close()
    assert closed_after is not None, "a reader taking 16 KiB/s held its connection for 30 s"
    # reset, not left to trickle out what the kernel still held for it
    assert closed_after < 15, "the reader got bytes for %.1f s" % closed_after
    assert got < len(body)
    # closed by the rate bound (a 6 s window), not by the idle timeout, which it kept from firing
    closed = _slow_clients_closed(gw, "response")
    assert closed == 1, "closed after %.1f s, %d bytes read, by the guard %d times" % (
        closed_after, got, closed)
    _assert_healthy(gw)
