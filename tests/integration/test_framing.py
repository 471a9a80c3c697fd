"""Request framing: the body the gateway reads is the body it announces and sends upstream.

A request whose length is ambiguous (Transfer-Encoding with Content-Length, a
coding other than chunked, two different Content-Lengths, a folded header
line) is refused with 400 before any body is read, so no byte of it can
become a request of its own on a reused upstream connection (request
smuggling: the next client's fill would get that request's answer and cache
it under its own key). A streamed upload without a length gets 411 at once.
Headers with empty values reach the upstream as sent, and signed.

Malformed requests go over raw sockets (harness/rawhttp.py): no HTTP library
sends them. The upstreams are the real s3rver and radosgw.
"""
import subprocess

import botocore.exceptions
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
import pytest

from harness import rawhttp, s3util

KiB = 1024


@pytest.fixture
def fgw(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    yield gw
    assert gw.proc is not None and gw.proc.alive(), "the gateway process died"


def _request(method, target, *headers, body=b""):
    lines = [b"%s %s HTTP/1.1\r\n" % (method, target), b"Host: 127.0.0.1\r\n"]
    lines += [h + b"\r\n" for h in headers]
    return b"".join(lines) + b"\r\n" + body


def _target(key):
    return b"/test/" + s3util.quote_key(key).encode()


def _seed(up, prefix, size=3 * KiB):
    key = s3util.unique_key(prefix)
    body = s3util.data(size, seed=key)
    s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)
    return key, body


def _upstream_has(up, key):
    try:
        s3util.upstream_client(up).head_object(Bucket=up.bucket, Key=key)
        return True
    except botocore.exceptions.ClientError as err:
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        return False


def _assert_400(r, codes=("InvalidRequest",)):
    assert r.error != "timeout", "no answer to an ambiguously framed request"
    assert r.status == 400, (r.status, r.error, r.body[:300])
    assert rawhttp.s3_error_code(r.body) in codes, r.body[:300]


def _chunked(data):
    return b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n"


def _smuggled_get(up, key):
    """A complete request for key on the upstream, to ride in a body."""
    return b"GET /test/%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (
        s3util.quote_key(key).encode(), up.port)


# (Transfer-Encoding value, whether the body is chunk-encoded)
SMUGGLING_CODINGS = [(b"chunked", True), (b"identity", False), (b"gzip", False),
                     (b"xchunked", False)]


@pytest.mark.parametrize("coding,chunk_it", SMUGGLING_CODINGS,
                         ids=[c.decode() for c, _ in SMUGGLING_CODINGS])
def test_put_with_transfer_encoding_and_content_length_is_400_and_poisons_nothing(
        s3rver, fgw, coding, chunk_it):
    secret_key, secret = _seed(s3rver, "smuggled")
    put_key = s3util.unique_key("smuggler")
    payload = b"abcd" + _smuggled_get(s3rver, secret_key)
    body = _chunked(payload) if chunk_it else payload
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(put_key), b"Content-Length: 4",
                                            b"Transfer-Encoding: " + coding, body=body),
                         timeout=5)
    _assert_400(r)
    # The next fills on the same gateway get their own objects, never the smuggled answer.
    for _ in range(3):
        victim_key, victim = _seed(s3rver, "victim")
        got = rawhttp.get(fgw.endpoint, _target(victim_key).decode())
        assert got.status == 200 and got.complete, (got.status, got.error, got.body[:300])
        assert secret not in got.body
        assert got.body == victim
        again = rawhttp.get(fgw.endpoint, _target(victim_key).decode())
        assert again.body == victim, "the cached copy is not the victim's object"
    assert not _upstream_has(s3rver, put_key), "a refused PUT was stored upstream"


def _signed_head(gw, ak, sk, method, path, body):
    """The request line and SigV4-signed headers (no length, no blank line) of a request."""
    req = AWSRequest(method=method, url=gw.endpoint + path, data=body)
    S3SigV4Auth(Credentials(ak, sk), "s3", s3util.REGION).add_auth(req)
    lines = [b"%s %s HTTP/1.1" % (method.encode(), path.encode()),
             b"Host: 127.0.0.1:%d" % gw.port]
    lines += [b"%s: %s" % (k.encode(), v.encode()) for k, v in req.headers.items()
              if k.lower() not in ("content-length", "host")]
    return b"\r\n".join(lines) + b"\r\n"


def test_smuggling_put_with_a_client_key_reaches_no_other_bucket(s3rver, gateway):
    # Under --client-credentials, a key limited to bucket "test" smuggles a GET of an
    # object it may not read into the gateway's connection: the next fill must not get it.
    other = "framing-other"
    up = s3util.upstream_client(s3rver)
    try:
        up.create_bucket(Bucket=other)
    except botocore.exceptions.ClientError:
        pass
    secret = s3util.data(2 * KiB, seed="other-bucket-secret")
    up.put_object(Bucket=other, Key="secret", Body=secret)
    ak, sk = "AKIDFRAMINGTEST00001", "framing-test-secret-key-000000000000000"
    gw = gateway(s3rver, client_keys=[{"access_key": ak, "secret_key": sk,
                                       "buckets": ["test"]}])
    gw.require_real()
    smuggled = b"GET /%s/secret HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (other.encode(),
                                                                         s3rver.port)
    put_key = s3util.unique_key("smuggler")
    head = _signed_head(gw, ak, sk, "PUT", _target(put_key).decode(), b"abcd")
    with rawhttp.RawConnection(gw.port, timeout=5) as conn:
        conn.send(head + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + _chunked(b"abcd" + smuggled))
        r = conn.reply(timeout=5)
    _assert_400(r)
    victim_key, victim = _seed(s3rver, "victim")
    c = s3util.client(gw.endpoint, ak, sk)
    got = c.get_object(Bucket="test", Key=victim_key)["Body"].read()
    assert got == victim and secret not in got


def test_two_different_content_lengths_are_400(s3rver, fgw):
    key = s3util.unique_key("twolengths")
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), b"Content-Length: 4",
                                            b"Content-Length: 40", body=b"abcd" + b"x" * 36),
                         timeout=5)
    _assert_400(r)
    assert not _upstream_has(s3rver, key)


def test_two_equal_content_lengths_are_one_length(s3rver, fgw):
    key = s3util.unique_key("samelengths")
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), b"Content-Length: 4",
                                            b"Content-Length: 4", b"Connection: close",
                                            body=b"abcd"), timeout=10)
    assert r.status == 200, (r.status, r.error, r.body[:300])
    got = s3util.upstream_client(s3rver).get_object(Bucket="test", Key=key)["Body"].read()
    assert got == b"abcd"


@pytest.mark.parametrize("fold", [b" two", b"\ttwo", b"  two words"])
def test_folded_header_line_is_400_and_not_stored(s3rver, fgw, fold):
    key = s3util.unique_key("folded")
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), b"x-amz-meta-a: one",
                                            fold, b"Content-Length: 4", body=b"abcd"),
                         timeout=5)
    _assert_400(r)
    assert not _upstream_has(s3rver, key), "a PUT with a folded header was stored"


# Header lines some servers read one way and others another: each is refused before any
# body byte is read, so the upstream never sees a length the gateway did not frame by.
AMBIGUOUS_HEADERS = {
    "blank-before-colon": (b"Content-Length : 4",),
    "te-blank-before-colon": (b"Content-Length: 4", b"Transfer-Encoding : chunked"),
    "two-transfer-encodings": (b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked",
                               b"x-amz-decoded-content-length: 4"),
    "transfer-coding-list": (b"Transfer-Encoding: chunked, chunked",
                             b"x-amz-decoded-content-length: 4"),
    "control-in-name": (b"x-amz-meta-\x01a: v", b"Content-Length: 4"),
}


@pytest.mark.parametrize("name", sorted(AMBIGUOUS_HEADERS))
def test_ambiguous_header_lines_are_400_and_not_stored(s3rver, fgw, name):
    key = s3util.unique_key("ambiguous")
    headers = AMBIGUOUS_HEADERS[name]
    body = _chunked(b"abcd") if any(b"Transfer" in h for h in headers) else b"abcd"
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), *headers, body=body),
                         timeout=5)
    _assert_400(r)
    assert not _upstream_has(s3rver, key)


def test_blank_line_start_after_request_line_is_400(s3rver, fgw):
    # A first header line that starts with a blank (RFC 9112 2.2: reject it).
    key = s3util.unique_key("leadingblank")
    data = (b"PUT %s HTTP/1.1\r\n Content-Length: 40\r\nHost: 127.0.0.1\r\n"
            b"Content-Length: 4\r\n\r\nabcd" % _target(key))
    _assert_400(rawhttp.exchange(fgw.port, data, timeout=5))
    assert not _upstream_has(s3rver, key)


def test_unknown_transfer_coding_without_length_is_400(s3rver, fgw):
    key = s3util.unique_key("gzipte")
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), b"Transfer-Encoding: gzip",
                                            body=b"abcd"), timeout=5)
    _assert_400(r)
    assert not _upstream_has(s3rver, key)


# ---- streamed uploads without a length (item: TE chunked, no Content-Length) ------------

def test_chunked_put_without_length_gets_411_at_once(s3rver, fgw):
    key = s3util.unique_key("streamed")
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), b"Transfer-Encoding: chunked",
                                            body=_chunked(b"hello streamed")), timeout=5)
    assert r.error != "timeout", "no answer to a streamed upload"
    assert r.status == 411, (r.status, r.body[:300])
    assert rawhttp.s3_error_code(r.body) == "MissingContentLength"
    assert not _upstream_has(s3rver, key)


def test_curl_upload_from_stdin_gets_an_answer(s3rver, fgw):
    # curl -T - streams with Transfer-Encoding: chunked and Expect: 100-continue.
    key = s3util.unique_key("curlstdin")
    out = subprocess.run(
        ["curl", "-sS", "--max-time", "8", "-o", "/dev/null", "-w", "%{http_code}", "-T", "-",
         fgw.endpoint + _target(key).decode()],
        input=b"streamed from stdin", capture_output=True, timeout=20)
    assert out.returncode == 0, out.stderr  # 28 would be curl's own timeout: no answer
    assert out.stdout == b"411", out.stdout
    assert not _upstream_has(s3rver, key)


# ---- headers with empty values (pass through as sent) -------------------------------------

def test_put_with_empty_content_encoding_keeps_it(upstream, gw):
    key = s3util.unique_key("emptyce")
    resp = s3util.raw(gw, "PUT", _target(key).decode(), body=b"empty coding",
                      headers={"Content-Encoding": ""})
    assert resp.status == 200, (resp.status, resp.body[:300])
    head = s3util.raw(upstream, "HEAD", _target(key).decode())
    assert head.headers.get("content-encoding") == "", head.headers


def test_put_with_empty_metadata_and_content_type_keeps_them(upstream, gw):
    key = s3util.unique_key("emptyhdr")
    resp = s3util.raw(gw, "PUT", _target(key).decode(), body=b"empty headers",
                      headers={"x-amz-meta-x": "", "x-amz-meta-y": "y", "Content-Type": ""})
    assert resp.status == 200, (resp.status, resp.body[:300])
    got = s3util.upstream_client(upstream).head_object(Bucket=upstream.bucket, Key=key)
    assert got["Metadata"].get("y") == "y"
    assert "x" in got["Metadata"], got["Metadata"]
    assert got["Metadata"]["x"] == ""


def test_put_with_empty_content_md5_is_refused_by_strict_upstream(radosgw, gateway):
    # S3 refuses an empty Content-MD5 (InvalidDigest); dropping it stored the object unchecked.
    gw = gateway(radosgw)
    key = s3util.unique_key("emptymd5")
    resp = s3util.raw(gw, "PUT", _target(key).decode(), body=b"empty md5",
                      headers={"Content-MD5": ""})
    assert resp.status == 400, (resp.status, resp.body[:300])
    assert rawhttp.s3_error_code(resp.body) == "InvalidDigest"
    assert not _upstream_has(radosgw, key)


def test_raw_empty_metadata_header_without_blank_reaches_upstream(s3rver, fgw):
    # "x-amz-meta-z:" with nothing at all after the colon, as some clients write it.
    key = s3util.unique_key("emptyraw")
    r = rawhttp.exchange(fgw.port, _request(b"PUT", _target(key), b"x-amz-meta-z:",
                                            b"Content-Length: 4", b"Connection: close",
                                            body=b"abcd"), timeout=10)
    assert r.status == 200, (r.status, r.body[:300])
    got = s3util.upstream_client(s3rver).head_object(Bucket=s3rver.bucket, Key=key)
    assert got["Metadata"] == {"z": ""}
