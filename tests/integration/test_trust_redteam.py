"""Hostile-review findings beyond issue 9's list: each test names what a client sent and
what the gateway must do. Upstreams are the real s3rver and radosgw fixtures; where the
right answer is the upstream's own, the test asks the upstream directly and compares.
"""
import shutil
import time
import uuid

import botocore.exceptions
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness import faulty_upstream as faults
from harness import gateway as gwmod
from harness import rawhttp, s3util

faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests

KiB = 1024


def _seed(up, size=10 * KiB, prefix="redteam"):
    key = s3util.unique_key(prefix)
    body = s3util.data(size, seed=key)
    put = s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)
    return key, body, put["ETag"]


def _raw_get(endpoint, path, headers):
    r = rawhttp.get(endpoint, path, headers=headers)
    assert r.error is None, r.error
    return r


# ---- probes shadowing objects -------------------------------------------------------------


@pytest.mark.parametrize("name", ["metrics", "healthz", "readyz"])
def test_vhost_object_named_like_a_probe_is_the_object(s3rver, gateway, name):
    """With --vhost-domain, "GET /metrics" with Host "test.s3.local" is GetObject of key
    "metrics" in bucket "test", not the gateway's Prometheus page: a probe's answer in its
    place is a 200 with the wrong bytes."""
    body = s3util.data(3000, seed=name)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=name, Body=body)
    gw = gateway(s3rver, extra_args=["--vhost-domain", "s3.local"])
    gw.require_real()
    host = "%s.s3.local:%d" % (gw.bucket, gw.port)
    for _ in ("MISS", "HIT"):
        r = s3util.raw(gw, "GET", "/" + name, host=host)
        assert r.status == 200
        assert r.body == body, "got %r instead of the object" % r.body[:80]
    # The probes still answer at the gateway's own name.
    assert rawhttp.get(gw.endpoint, "/healthz").body == b"ok\n"


# ---- framing after a refusal -------------------------------------------------------------


def test_body_of_refused_request_is_never_read_as_a_request(s3rver, gateway):
    """A PUT refused when its headers arrive (bad target) announces a body holding a whole
    second request. The gateway must not parse that body as the next request on the
    connection: one reply, then the connection closes (or the body is drained)."""
    gw = gateway(s3rver)
    key, body, _ = _seed(s3rver)
    inner = b"DELETE /test/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n" % (
        key.encode())
    outer = (b"PUT /test/%%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" %
             len(inner)) + inner
    with rawhttp.RawConnection(gw.port) as conn:
        conn.send(outer)
        first = conn.reply(timeout=3)
        assert first.status == 400, (first.status, first.error)
        second = conn.reply(timeout=2)
    assert second.status is None, "the refused request's body was answered as a request: %r" % (
        second.status,)
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)
    assert got["Body"].read() == body


# Framings an RFC 9112 intermediary refuses (6.3, 5.1) but the gateway read its own way: the
# request's tail holds a DELETE that only the gateway's framing turns into a request.
SPLIT_FRAMINGS = {
    # two Content-Length values: libmicrohttpd frames by the first
    "two-content-lengths": lambda n: b"Content-Length: 2\r\nContent-Length: %d\r\n" % n,
    # whitespace between field name and colon: libmicrohttpd still reads it as Content-Length
    "space-before-colon": lambda n: b"Content-Length : 2\r\n",
}


@pytest.mark.parametrize("framing", list(SPLIT_FRAMINGS))
def test_ambiguous_request_framing_is_refused_not_split(s3rver, gateway, framing):
    """A PUT whose length an intermediary reads differently hides a DELETE in its body:
    the request must be refused, and nothing of it reach the bucket."""
    gw = gateway(s3rver)
    victim, body, _ = _seed(s3rver)
    inner = b"DELETE /test/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n" % (
        victim.encode())
    put_key = s3util.unique_key("split")
    outer = (b"PUT /test/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nhi" % (
        put_key.encode(), SPLIT_FRAMINGS[framing](2 + len(inner)))) + inner
    with rawhttp.RawConnection(gw.port) as conn:
        conn.send(outer)
        first = conn.reply(timeout=3)  # its body may be chunked: count status lines instead
        while True:  # every further reply, until the gateway closes or goes quiet
            more = conn.reply(timeout=2)
            if more.error is not None or more.closed:
                break
        stream = first.body + bytes(conn.buf)
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=victim)
    assert got["Body"].read() == body, "the hidden DELETE reached the bucket"
    assert b"HTTP/1.1 " not in stream, "a second request was read from the first one's body"
    assert first.status == 400, (first.status, first.error)


# ---- browsers reaching a loopback gateway ---------------------------------------------------


def test_s3_api_without_client_keys_refuses_a_dns_rebound_page(s3rver, gateway):
    """The default gateway: loopback listener, no --client-credentials, so "only this host
    can reach it". A browser on this host visiting a hostile page defeats that: the page's
    name is made to resolve to 127.0.0.1, its script fetches /test/KEY from its own origin
    (Host: rebind.attacker.example:PORT, Sec-Fetch-Site: same-origin) and can read the reply.
    The gateway must not answer such a request with the bucket's object."""
    gw = gateway(s3rver)
    key, body, _ = _seed(s3rver, prefix="rebind")
    path = "/%s/%s" % (gw.bucket, key)
    for own in ("127.0.0.1:%d" % gw.port, "localhost:%d" % gw.port):  # its clients still read
        r = rawhttp.get(gw.endpoint, path, headers={"Host": own})
        assert r.status == 200 and r.body == body, (own, r.status)
    r = rawhttp.get(gw.endpoint, path, headers={
        "Host": "rebind.attacker.example:%d" % gw.port, "Sec-Fetch-Site": "same-origin",
        "Sec-Fetch-Mode": "cors", "User-Agent": "Mozilla/5.0"})
    leaked = r.body == body
    assert not leaked, "a DNS-rebound page read the private object"
    assert r.status == 403, r.status


def test_s3_api_without_client_keys_refuses_a_cross_site_delete(upstream, gateway):
    """A page on another site posts a DeleteObjects body to http://127.0.0.1:PORT/BUCKET?delete
    as text/plain: a request browsers send without a CORS preflight. The object must stay."""
    gw = gateway(upstream)
    key, body, _ = _seed(upstream, prefix="csrf")
    xml = ("<Delete><Object><Key>%s</Key></Object></Delete>" % key).encode()
    raw = (b"POST /%s?delete HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: https://evil.example\r\n"
           b"Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: no-cors\r\nContent-Type: text/plain"
           b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
               upstream.bucket.encode(), gw.port, len(xml))) + xml
    r = rawhttp.exchange(gw.port, raw)
    got = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key)
    assert got["Body"].read() == body
    assert r.status == 403, r.status


def test_s3_api_without_client_keys_refuses_other_sites_but_serves_its_own(s3rver, gateway):
    """The refusal of browsers' cross-site requests must not catch the gateway's real clients:
    SDKs and curl (no Origin, no Sec-Fetch-*), its own page (same Origin, Sec-Fetch-Site
    same-origin or none), and names under --vhost-domain. What a page on another site sends,
    a CORS preflight included, is refused with S3's 403 AccessDenied, before it goes upstream."""
    gw = gateway(s3rver, extra_args=["--vhost-domain", "s3.local"])
    key, body, _ = _seed(s3rver, prefix="websites")
    path = "/%s/%s" % (gw.bucket, key)
    own = "127.0.0.1:%d" % gw.port
    served = [
        {"Host": own},
        {"Host": "[::1]:%d" % gw.port},
        {"Host": "LocalHost:%d" % gw.port, "User-Agent": "Boto3/1.34 md/Botocore"},
        {"Host": own, "Origin": "http://" + own, "Sec-Fetch-Site": "same-origin"},
        {"Host": own, "Sec-Fetch-Site": "none"},
        {"Host": "s3.local:%d" % gw.port},
    ]
    for headers in served:
        r = _raw_get(gw.endpoint, path, headers)
        assert r.status == 200 and r.body == body, (headers, r.status)
    r = _raw_get(gw.endpoint, "/" + key, {"Host": "%s.s3.local:%d" % (gw.bucket, gw.port)})
    assert r.status == 200 and r.body == body, r.status
    refused = [
        ({"Host": own, "Origin": "null"}, "GET"),
        ({"Host": own, "Origin": "http://127.0.0.1:%d" % (gw.port + 1)}, "GET"),
        ({"Host": own, "Sec-Fetch-Site": "same-site"}, "GET"),
        ({"Host": own, "Origin": "https://evil.example",
          "Access-Control-Request-Method": "DELETE"}, "OPTIONS"),
        ({"Host": "s3.local.evil.example:%d" % gw.port}, "GET"),
        ({"Host": "evil.example"}, "HEAD"),
    ]
    for headers, method in refused:
        r = rawhttp.get(gw.endpoint, path, headers=headers, method=method)
        assert r.error is None and r.status == 403, (headers, method, r.status, r.error)
        assert body not in r.body
        if method != "HEAD":
            assert b"<Code>AccessDenied</Code>" in r.body, (headers, r.body[:300])
    assert s3util.raw(gw, "GET", path).body == body  # the SDK-style path still reads


# ---- query semantics ---------------------------------------------------------------------


def test_plus_in_list_prefix_means_space_as_upstream_reads_it(s3rver, gateway):
    """ListObjectsV2 with "prefix=<p>sp+ace" sent on the wire: s3rver (like S3) lists the
    key "<p>sp ace". Through the gateway, the same request must list the same key, not
    "<p>sp+ace", a different object."""
    gw = gateway(s3rver)
    pre = s3util.unique_key("plusq")
    up = s3util.upstream_client(s3rver)
    up.put_object(Bucket=s3rver.bucket, Key=pre + "sp ace", Body=b"space")
    up.put_object(Bucket=s3rver.bucket, Key=pre + "sp+ace", Body=b"plus")
    query = {"list-type": "2", "prefix": pre + "sp ace"}  # urlencode sends the space as '+'
    direct = s3util.raw(s3rver, "GET", "/" + s3rver.bucket, query=query)
    via = s3util.raw(gw, "GET", "/" + s3rver.bucket, query=query)
    assert direct.status == 200 and via.status == 200
    assert ("<Key>%ssp ace</Key>" % pre).encode() in direct.body  # what the upstream means
    assert via.body.count(b"<Key>") == direct.body.count(b"<Key>") == 1
    assert ("<Key>%ssp ace</Key>" % pre).encode() in via.body, via.body[:400]


# ---- upstreams that lie (the fake upstream: no real S3 server sends these) ---------------


def test_upstream_chunked_body_with_shorter_content_length_is_not_cut_and_stored(
        faulty_upstream, gateway):
    """The fake upstream sends Transfer-Encoding: chunked with the whole 200 KiB object and
    also Content-Length: 100 KiB, under a multipart ETag (no MD5 to check). The chunked
    framing is the message's; the client must never get a clean 200 of the first 100 KiB,
    and the cut object must never become a hit."""
    fake = faulty_upstream
    key = "tecl/obj"
    body = s3util.data(200 * KiB, seed=key)
    fake.put(key, body, faults.chunked_with_length(100 * KiB,
                                                   etag='"0123456789abcdef0123456789abcdef-2"'))
    gw = gateway(fake.upstream())
    gw.require_real()
    path = "/%s/%s" % (gw.bucket, key)
    first = rawhttp.get(gw.endpoint, path)
    assert not (first.status == 200 and first.complete and first.body != body), (
        "a clean 200 of %d bytes, not the %d-byte object" % (len(first.body), len(body)))
    time.sleep(0.5)  # a fill that was going to be stored is stored by now
    again = rawhttp.get(gw.endpoint, path)
    assert again.headers.get("x-cache") != "HIT" or again.body == body, (
        "a %d-byte cut of the object is served as a hit" % len(again.body))


# ---- writes the gateway does not see as writes -------------------------------------------


@pytest.mark.parametrize("method,query", [("PUT", "uploadId="), ("PUT", "uploadId"),
                                          ("DELETE", "uploadId=")],
                         ids=["put-empty", "put-bare", "delete-empty"])
def test_write_with_empty_upload_id_drops_the_cached_copy(radosgw, gateway, method, query):
    """The object is cached; a PUT (or DELETE) of the key with "?uploadId=" reaches radosgw,
    which replaces (or deletes) the object. The next read must not be the old cached bytes."""
    gw = gateway(radosgw)
    key, old, _ = _seed(radosgw, size=1000, prefix="emptyupload")
    _get_stored(gw, key, old)
    path = "/%s/%s" % (radosgw.bucket, key)
    w = s3util.raw(gw, method, path + "?" + query, body=b"new" if method == "PUT" else b"")
    assert w.status in (200, 204), (w.status, w.body[:300])
    r = rawhttp.get(gw.endpoint, path)
    stale = r.status == 200 and r.body == old
    assert not stale, "the %s reached the bucket, but the old copy is still a %s" % (
        method, r.headers.get("x-cache"))
    if method == "PUT":
        assert r.status == 200 and r.body == b"new"
    else:
        assert r.status == 404


# ---- headers forwarded on writes ---------------------------------------------------------


# "gzip" then "aws-chunked" (the marker in a second line) is
# test_aws_chunked_in_a_second_content_encoding_line_is_decoded_not_stored_framed: the body
# must then be aws-chunked, as when the marker comes in the first line (a plain body under
# the marker without x-amz-decoded-content-length gets 411 on either line).
@pytest.mark.parametrize("second", [b"br"])
def test_content_encoding_in_two_header_lines_reaches_the_bucket_whole(s3rver, gateway, second):
    """RFC 9110 lets a list header come as several lines: "Content-Encoding: gzip" then
    "Content-Encoding: br" means "gzip, br". The object's stored Content-Encoding must keep
    gzip, or every later reader gets compressed bytes as if they were the content."""
    gw = gateway(s3rver)
    key = s3util.unique_key("ce")
    raw = (b"PUT /test/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\n"
           b"Content-Encoding: %s\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi" % (
               key.encode(), second))
    r = rawhttp.exchange(gw.port, raw)
    assert r.status == 200, (r.status, r.body[:300])
    head = s3util.upstream_client(s3rver).head_object(Bucket=s3rver.bucket, Key=key)
    stored = [c.strip() for c in head.get("ContentEncoding", "").split(",") if c.strip()]
    assert stored == ["gzip", second.decode()], head.get("ContentEncoding")


def test_aws_chunked_in_a_second_content_encoding_line_is_decoded_not_stored_framed(
        s3rver, gateway):
    """"Content-Encoding: gzip" then "Content-Encoding: aws-chunked" with an aws-chunked body:
    the marker is removed from what is forwarded, so the body must be decoded too, as it is
    when aws-chunked comes in the first line; otherwise the chunk framing is stored as the
    object's bytes."""
    gw = gateway(s3rver)
    key = s3util.unique_key("ce-chunked")
    sig = b";chunk-signature=" + b"0" * 64 + b"\r\n"
    body = b"2" + sig + b"hi\r\n" + b"0" + sig + b"\r\n"
    raw = (b"PUT /test/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\n"
           b"Content-Encoding: aws-chunked\r\nx-amz-decoded-content-length: 2\r\n"
           b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (
               key.encode(), len(body), body))
    r = rawhttp.exchange(gw.port, raw)
    assert r.status == 200, (r.status, r.body[:300])
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)
    assert got["Body"].read() == b"hi"
    assert got.get("ContentEncoding") == "gzip"


# ---- the store ---------------------------------------------------------------------------


def _get_stored(gw, key, body):
    """GETs key through gw (its body must be body) and waits until gw has stored it."""
    before = gw.stats()["fills_stored"]
    r = rawhttp.get(gw.endpoint, "/%s/%s" % (gw.bucket, key))
    assert r.status == 200 and r.body == body, (r.status, len(r.body))
    gw.stats_when(lambda s: s["fills_stored"] > before)


def test_second_gateway_on_one_cache_dir_never_serves_another_objects_bytes(s3rver, gateway):
    """Two gateways started on one cache directory (two sidecars on one hostPath) each hand
    out object ids from their own counter, so both give id 1 to different objects and one
    overwrites the other's chunks; with --no-verify-checksums the first gateway's hit of X
    is then Y's bytes. The second gateway must refuse the directory, or, if it runs, every
    object must still come back as itself."""
    first = gateway(s3rver, extra_args=["--no-verify-checksums"])
    first.require_real()
    x, xbody, _ = _seed(s3rver, size=100 * KiB, prefix="twogw-x")
    y, ybody, _ = _seed(s3rver, size=100 * KiB, prefix="twogw-y")
    second = gwmod.Gateway(s3rver, cache_dir=first.cache_dir,
                           extra_args=["--no-verify-checksums"])
    try:
        try:
            second.start()
        except RuntimeError as exc:
            assert "in use" in str(exc), str(exc)[-2000:]  # refused, and says why
            assert first.proc.alive()
            _get_stored(first, x, xbody)
            return
        _get_stored(first, x, xbody)
        _get_stored(second, y, ybody)
        for gw in (first, second):
            for key, body in ((x, xbody), (y, ybody)):
                r = rawhttp.get(gw.endpoint, "/%s/%s" % (gw.bucket, key))
                assert r.status == 200
                assert r.body == body, "%s via gateway %d: another object's bytes (X-Cache %s)" % (
                    key, 1 if gw is first else 2, r.headers.get("x-cache"))
    finally:
        second.stop()
        shutil.rmtree(second.workdir, ignore_errors=True)


def test_hit_of_an_object_of_more_than_1024_chunks_is_served_whole(s3rver, gateway):
    """A hit goes out as one iovec per stored chunk. With --chunk-size 4K a 10 MiB object
    was 2,560 chunks: libmicrohttpd 0.9.75 sent nothing (over IOV_MAX, 1,024) and then
    aborted the whole gateway ("Failed to destroy mutex"); at 1,025 chunks every hit hung.
    The same happens with the default 256 KiB chunks to any object over 256 MiB once
    --max-object-size admits it."""
    gw = gateway(s3rver, extra_args=["--chunk-size", "4K"])
    gw.require_real()
    key = s3util.unique_key("chunks")
    body = s3util.data(2560 * 4 * KiB + 123, seed=key)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=body)
    path = "/%s/%s" % (gw.bucket, key)
    _get_stored(gw, key, body)
    for rng, want in ((None, body), ("bytes=5000-", body[5000:]),
                      ("bytes=4095-9000000", body[4095:9000001])):
        r = rawhttp.get(gw.endpoint, path, headers={"Range": rng} if rng else {}, timeout=10)
        gw.assert_cache(r.headers, "HIT")
        assert r.complete, "the hit ended with %s after %d bytes" % (r.error, len(r.body))
        assert r.body == want
    assert gw.proc.alive()


# ---- one header, two lines ----------------------------------------------------------------


def _signed_raw(gw, ak, sk, method, path, headers):
    """A raw request signed with ak/sk, each (name, value) of headers on its own line.
    SigV4 signs a repeated header as its values joined by ',', so the signature is computed
    over that join: the gateway's verification accepts it, as S3 would."""
    joined = {}
    for name, value in headers:
        joined[name] = joined[name] + "," + value if name in joined else value
    url = "http://127.0.0.1:%d%s" % (gw.port, path)
    req = AWSRequest(method=method, url=url, data=b"", headers=joined)
    S3SigV4Auth(Credentials(ak, sk), "s3", s3util.REGION).add_auth(req)
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1:%d" % gw.port]
    for name, value in req.headers.items():
        if name.lower() in (n.lower() for n, _ in headers) or name.lower() == "host":
            continue
        lines.append("%s: %s" % (name, value))
    lines += ["%s: %s" % (n, v) for n, v in headers]
    lines += ["Content-Length: 0", "Connection: close", "", ""]
    return rawhttp.exchange(gw.port, "\r\n".join(lines).encode())


def test_second_copy_source_header_is_refused_not_copied_from_a_forbidden_bucket(
        upstream, gateway):
    """A client key limited to the test bucket sends a CopyObject with two x-amz-copy-source
    lines: the first in its bucket (the one the authorization looked at), the second in a
    bucket it may not read. The request must be refused (400 InvalidRequest) before anything
    reaches the upstream: no copy of the forbidden object may appear."""
    other = "dup-other-" + uuid.uuid4().hex[:8]
    up = s3util.upstream_client(upstream)
    up.create_bucket(Bucket=other)
    key = s3util.unique_key("dupsrc")
    up.put_object(Bucket=upstream.bucket, Key=key, Body=b"allowed")
    up.put_object(Bucket=other, Key=key, Body=b"secret")
    ak, sk = "dup-client", "dup-client-secret"
    gw = gateway(upstream, client_keys=[{"access_key": ak, "secret_key": sk,
                                         "buckets": [upstream.bucket]}])
    gw.require_real()
    dest = key + "-copy"
    r = _signed_raw(gw, ak, sk, "PUT", "/%s/%s" % (upstream.bucket, dest),
                    [("x-amz-copy-source", "/%s/%s" % (upstream.bucket, key)),
                     ("x-amz-copy-source", "/%s/%s" % (other, key))])
    assert r.status == 400 and rawhttp.s3_error_code(r.body) == "InvalidRequest", (
        r.status, r.body[:300])
    with pytest.raises(botocore.exceptions.ClientError):
        up.head_object(Bucket=upstream.bucket, Key=dest)


@pytest.mark.parametrize("name,values", [
    ("Range", ("bytes=0-9", "bytes=10-19")),
    ("If-Match", ('"abc"', '"def"')),
    ("Host", ("127.0.0.1", "example.com")),
    ("x-amz-copy-source-range", ("bytes=0-1", "bytes=2-3")),
    ("x-amz-content-sha256", ("UNSIGNED-PAYLOAD", "UNSIGNED-PAYLOAD")),
], ids=["range", "if-match", "host", "copy-source-range", "content-sha256"])
def test_header_the_gateway_decides_on_in_two_lines_is_refused(s3rver, gateway, name, values):
    """The gateway decides on the first line of a header (libmicrohttpd's lookup) but would
    forward every line: two lines of one it decides on are refused with 400 InvalidRequest."""
    gw = gateway(s3rver)
    key, _, _ = _seed(s3rver, size=100, prefix="duphdr")
    lines = [b"GET /%s/%s HTTP/1.1" % (s3rver.bucket.encode(), key.encode())]
    if name != "Host":
        lines.append(b"Host: 127.0.0.1")
    lines += [b"%s: %s" % (name.encode(), v.encode()) for v in values]
    lines += [b"Connection: close", b"", b""]
    r = rawhttp.exchange(gw.port, b"\r\n".join(lines))
    assert r.status == 400 and rawhttp.s3_error_code(r.body) == "InvalidRequest", (
        r.status, r.body[:300])
