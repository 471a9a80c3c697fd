"""After a write the gateway forwarded, it never serves the copy the write replaced.

The writes here are the ones the gateway used to miss: DeleteObjects bodies its
old scanner could not read (a key in CDATA, a key split by a comment, entities,
a namespace prefix, a body over 2 MiB), a write whose answer never reached the
gateway although the upstream committed it, and a browser-form POST upload
(PostObject). Each case checks what the gateway serves against what the
upstream holds, whatever the upstream made of the request.
"""
import base64
import hashlib
import http.client
import threading
import time
import uuid

import botocore.exceptions
import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness import s3util

MiB = 1024 * 1024


_cache = s3util.cache_via


def _read(client, bucket, key):
    """The object's bytes, or None when it does not exist."""
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as err:
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 404, err.response
        return None


def _read_settled(client, bucket, key):
    """The object's bytes, or None if absent or while the upstream is still writing it
    (s3rver writes an upload in place: a read meanwhile can be cut short, or fail 500)."""
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
        return None


def _assert_coherent(upstream, gw, keys):
    """What the gateway serves for each key is what the upstream holds now."""
    up, g = s3util.upstream_client(upstream), gw.client()
    for k in keys:
        assert _read(g, gw.bucket, k) == _read(up, upstream.bucket, k), k


def _delete_objects_raw(gw, body):
    """Sends body as a DeleteObjects request through the gateway, signed as it is."""
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    return s3util.raw(gw, "POST", "/%s?delete" % gw.bucket, body=body,
                      headers={"Content-MD5": md5, "Content-Type": "application/xml"})


def _cached_keys(upstream, gw, n, tag):
    # one folder per key: s3rver fails (InternalError) deleting two keys of one folder
    keys = ["%s-%s/obj" % (tag, uuid.uuid4().hex[:12]) for _ in range(n)]
    for k in keys:
        s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=k,
                                                    Body=k.encode())
        _cache(gw, k, k.encode())
    return keys


def _objects(*keys):
    return "".join("<Object><Key>%s</Key></Object>" % k for k in keys)


# Each builds a DeleteObjects body naming the given keys in a way the old scanner
# (a search for "<Key>" followed by entity decoding) could not read.
DELETE_BODIES = {
    "cdata": lambda ks: "<Delete>%s</Delete>" % "".join(
        "<Object><Key><![CDATA[%s]]></Key></Object>" % k for k in ks),
    "comment_split": lambda ks: "<Delete>%s</Delete>" % "".join(
        "<Object><Key>%s<!-- x -->%s</Key></Object>" % (k[:5], k[5:]) for k in ks),
    "namespace_prefix": lambda ks: (
        '<s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">%s</s3:Delete>' % "".join(
            "<s3:Object><s3:Key>%s</s3:Key></s3:Object>" % k for k in ks)),
    "char_refs": lambda ks: "<Delete>%s</Delete>" % "".join(
        "<Object><Key>%s</Key></Object>" % "".join("&#%d;" % ord(ch) for ch in k) for k in ks),
    "whitespace_around": lambda ks: "<Delete>%s</Delete>" % "".join(
        "<Object><Key>\n  %s  \n</Key></Object>" % k for k in ks),
    "over_2mib": lambda ks: "<Delete>%s%s</Delete>" % (" " * (2 * MiB + 10), _objects(*ks)),
}


@pytest.mark.parametrize("variant", sorted(DELETE_BODIES))
def test_delete_objects_body_in_any_xml_form_leaves_no_stale_hit(upstream, gw, variant):
    keys = _cached_keys(upstream, gw, 2, "xmldel-" + variant.replace("_", ""))
    body = ('<?xml version="1.0" encoding="UTF-8"?>' + DELETE_BODIES[variant](keys)).encode()
    r = _delete_objects_raw(gw, body)
    # An upstream may refuse a form (radosgw answers a body over its limit with 416), and
    # then deletes nothing; either way the cache must agree with it afterwards.
    assert r.status == 200 or 400 <= r.status < 500, (r.status, r.body[:500])
    _assert_coherent(upstream, gw, keys)


def test_delete_objects_cdata_key_is_deleted_and_not_served(upstream, gw):
    """s3rver and radosgw both read CDATA: the key goes, and so does the cached copy."""
    keys = _cached_keys(upstream, gw, 1, "cdatadel")
    body = ('<Delete><Object><Key><![CDATA[%s]]></Key></Object></Delete>' % keys[0]).encode()
    r = _delete_objects_raw(gw, body)
    assert r.status == 200, r.body[:500]
    assert _read(s3util.upstream_client(upstream), upstream.bucket, keys[0]) is None
    assert _read(gw.client(), gw.bucket, keys[0]) is None


def test_write_committed_upstream_but_answer_lost_drops_cached_copy(s3rver, gateway):
    """The answer to a PUT never reaches the gateway (a TCP proxy between them, a test
    harness part, swallows what the upstream sends back) although s3rver stored it; the
    client gets a 502. The old cached copy must not be served afterwards."""
    gw = gateway(s3rver, proxy=True, extra_args=["--upstream-stall-timeout", "2"])
    key = s3util.unique_key("lostanswer")
    old, new = s3util.data(4000, seed="old" + key), s3util.data(6000, seed="new" + key)
    up = s3util.upstream_client(s3rver)
    up.put_object(Bucket=s3rver.bucket, Key=key, Body=old)
    _cache(gw, key, old)
    gw.proxy.swallow_down = True
    try:
        r = s3util.raw(gw, "PUT", "/%s/%s" % (gw.bucket, s3util.quote_key(key)), body=new,
                       timeout=30)
    finally:
        gw.proxy.swallow_down = False
    assert r.status == 502, (r.status, r.body[:300])
    assert up.get_object(Bucket=s3rver.bucket, Key=key)["Body"].read() == new
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == new
    gw.assert_cache(s3util.headers_of(resp), "MISS")


def _post_form(gw, key_field, body, filename="upload.bin"):
    """A browser-form POST upload (PostObject) of body to key_field through gw."""
    c = gw.client()
    post = c.generate_presigned_post(Bucket=gw.bucket, Key=key_field)
    files = {"file": (filename, body, "application/octet-stream")}
    return requests.post(post["url"], data=post["fields"], files=files, timeout=60)


def test_post_object_form_upload_drops_cached_copy(upstream, gw):
    key = s3util.unique_key("postform")
    old, new = s3util.data(3000, seed="old" + key), s3util.data(5000, seed="new" + key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=old)
    _cache(gw, key, old)
    r = _post_form(gw, key, new)
    assert r.status_code in (200, 201, 204), (r.status_code, r.text[:500])
    direct = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key)
    assert direct["Body"].read() == new
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == new
    gw.assert_cache(s3util.headers_of(resp), "MISS")


def test_post_object_form_upload_with_filename_variable_drops_cached_copy(upstream, gw):
    """A key field "dir/${filename}": radosgw (like S3) writes dir/<the file's name>,
    s3rver writes the key literally. Both are cached first; after the upload each must
    be served as the upstream now holds it."""
    folder = "postvar-%s" % uuid.uuid4().hex[:12]
    name = "photo.bin"
    keys = [folder + "/" + name, folder + "/${filename}"]
    up = s3util.upstream_client(upstream)
    for k in keys:
        old = s3util.data(2000, seed="old" + k)
        up.put_object(Bucket=upstream.bucket, Key=k, Body=old)
        _cache(gw, k, old)
    new = s3util.data(4000, seed="new" + folder)
    r = _post_form(gw, folder + "/${filename}", new, filename=name)
    assert r.status_code in (200, 201, 204), (r.status_code, r.text[:500])
    assert new in [_read(up, upstream.bucket, k) for k in keys]  # the upload went somewhere
    _assert_coherent(upstream, gw, keys)


def test_fill_running_across_a_write_is_not_stored(s3rver, gateway):
    """A miss whose fill started before a PUT and finishes after it read the old bytes:
    its reader gets them (the write came later), but they are not stored. The upstream's
    answers are slowed by a TCP proxy (a test harness part) so the fill outlasts the PUT
    (1.5 MiB at 256 KiB/s: 6 s, for a PUT whose client is made beforehand)."""
    gw = gateway(s3rver, rate=256 * 1024)
    key = s3util.unique_key("overlap")
    old, new = s3util.data(3 * MiB // 2, seed="old" + key), s3util.data(1000, seed="new" + key)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=old)
    got = {}
    reader_client, writer = gw.client(), gw.client()

    def slow_get():
        got["body"] = reader_client.get_object(Bucket=gw.bucket, Key=key)["Body"].read()

    reader = threading.Thread(target=slow_get)
    reader.start()
    deadline = time.monotonic() + 10
    while gw.proxy.bytes_down < 64 * 1024 and time.monotonic() < deadline:
        time.sleep(0.02)  # the fill is under way
    assert reader.is_alive(), "the fill ended before the write: nothing overlaps"
    writer.put_object(Bucket=gw.bucket, Key=key, Body=new)
    assert reader.is_alive(), "the fill ended before the write's answer: nothing overlaps"
    reader.join(timeout=30)
    assert got["body"] == old
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == new
    gw.assert_cache(s3util.headers_of(resp), "MISS")


def _start_slow_put(gw, key, body, method="PUT", path=None, headers=None):
    """Sends a signed request's headers and the first half of its body (a PUT of key
    unless told otherwise); returns the open connection, for _finish_slow_put."""
    path = path or "/%s/%s" % (gw.bucket, s3util.quote_key(key))
    url = "%s%s" % (gw.endpoint, path)
    hdrs = dict(headers or {}, **{"Content-Length": str(len(body))})
    req = AWSRequest(method=method, url=url, data=body, headers=hdrs)
    S3SigV4Auth(Credentials(gw.access_key, gw.secret_key), "s3", s3util.REGION).add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", "127.0.0.1:%d" % gw.port)
    for name, value in req.headers.items():
        conn.putheader(name, value)
    conn.endheaders()
    conn.send(body[:len(body) // 2])
    return conn


def _finish_slow_put(conn, body):
    conn.send(body[len(body) // 2:])
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp.status


def test_miss_during_a_write_is_not_stored(upstream, gw):
    """A GET that misses while a PUT is still uploading reads the old bytes from the
    upstream (nothing is committed yet); it may serve them, but must not store them:
    after the PUT is answered, the new bytes are served. (s3rver writes an upload in
    place, so what it serves meanwhile is not the old object; radosgw's is.)"""
    key = s3util.unique_key("midwrite")
    old, new = s3util.data(5000, seed="old" + key), s3util.data(256 * 1024, seed="new" + key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=old)
    _cache(gw, key, old)
    conn = _start_slow_put(gw, key, new)
    try:
        c = gw.client()
        for _ in range(2):  # a miss whose fill completes during the write, then another read
            during = _read_settled(c, gw.bucket, key)
            if upstream.name == "radosgw":
                assert during == old
    finally:
        status = _finish_slow_put(conn, new)
    assert status == 200
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == new
    gw.assert_cache(s3util.headers_of(resp), "MISS")


def _versioned_bucket(up):
    c = s3util.upstream_client(up)
    bucket = "versioned"
    try:
        c.create_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as err:
        if err.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
            raise
    c.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return c, bucket


def test_versioned_writes_change_what_is_served(radosgw, gateway):
    """On a versioned bucket (radosgw only: s3rver has no versioning), deleting the
    current version by versionId makes the previous one current, and a delete marker
    hides the object: neither may leave the cached current copy served."""
    c, bucket = _versioned_bucket(radosgw)
    key = s3util.unique_key("verwrite")
    c.put_object(Bucket=bucket, Key=key, Body=b"version one")
    v2 = c.put_object(Bucket=bucket, Key=key, Body=b"version two, longer")["VersionId"]
    gw = gateway(radosgw)
    g = gw.client()
    for expected in ("MISS", "HIT"):
        resp = g.get_object(Bucket=bucket, Key=key)
        assert resp["Body"].read() == b"version two, longer"
        gw.assert_cache(s3util.headers_of(resp), expected)
    g.delete_object(Bucket=bucket, Key=key, VersionId=v2)
    assert g.get_object(Bucket=bucket, Key=key)["Body"].read() == b"version one"
    g.delete_object(Bucket=bucket, Key=key)  # a delete marker
    assert _read(g, bucket, key) is None


def test_write_committed_after_the_gateway_gave_up_leaves_no_old_copy(s3rver, gateway):
    """The PUT reaches s3rver only after the gateway's stall timeout (a TCP proxy
    between them, a test harness part, holds the request's bytes), so the client gets a
    502 and s3rver commits the write later. A miss in between reads the old bytes: it may
    serve them, but must not store them, or they would be served after the commit."""
    gw = gateway(s3rver, proxy=True, extra_args=["--upstream-stall-timeout", "2"])
    key = s3util.unique_key("latecommit")
    old, new = s3util.data(4000, seed="old" + key), s3util.data(6000, seed="new" + key)
    up = s3util.upstream_client(s3rver)
    up.put_object(Bucket=s3rver.bucket, Key=key, Body=old)
    _cache(gw, key, old)
    gw.proxy.hold_up = True
    try:
        r = s3util.raw(gw, "PUT", "/%s/%s" % (gw.bucket, s3util.quote_key(key)), body=new,
                       timeout=30)
    finally:
        gw.proxy.hold_up = False
    assert r.status == 502, (r.status, r.body[:300])
    assert up.get_object(Bucket=s3rver.bucket, Key=key)["Body"].read() == old  # not yet
    assert gw.client().get_object(Bucket=gw.bucket, Key=key)["Body"].read() == old
    gw.proxy.release_held()
    deadline = time.monotonic() + 20
    while _read_settled(up, s3rver.bucket, key) != new:
        assert time.monotonic() < deadline, "s3rver never got the held PUT"
        time.sleep(0.1)
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == new
    gw.assert_cache(s3util.headers_of(resp), "MISS")


def test_body_held_open_does_not_stop_caching_of_its_bucket(upstream, gw):
    """A DeleteObjects whose body is still arriving names its keys only at its end, and
    the upstream cannot act on it sooner: meanwhile the other objects of the bucket are
    cached as usual (a client holding such a body open must not turn the cache off)."""
    victim, other = _cached_keys(upstream, gw, 1, "heldbody")[0], s3util.unique_key("heldother")
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=other, Body=b"o" * 999)
    body = ("<Delete><Object><Key>%s</Key></Object></Delete>" % victim).encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    conn = _start_slow_put(gw, None, body, method="POST", path="/%s?delete" % gw.bucket,
                           headers={"Content-MD5": md5, "Content-Type": "application/xml"})
    try:
        _cache(gw, other, b"o" * 999)
    finally:
        status = _finish_slow_put(conn, body)
    assert status == 200
    _assert_coherent(upstream, gw, [victim, other])
