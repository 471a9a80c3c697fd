"""The path a request names is the path the upstream gets: the bytes the gateway authorizes,
caches under and signs are the bytes it sends. '.' and '..' segments are legal in S3 keys and
stay as they are (an HTTP client that removes them, as libcurl does by default, would read and
write another object than the one authorized and cached, and sign a path it does not send);
spellings of one key (percent-encoded or not) name one object, on the gateway and upstream.

The dot-segment tests run against radosgw only: s3rver stores an object in a file named after
its key (path.join), so s3rver itself takes "d/../k" for "k" and "../other/k" for a key of the
bucket "other", whatever it is sent. A TcpProxy between the gateway and radosgw records the
request lines as they went out."""
import http.client
import uuid

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness import s3util
from harness.rawhttp import get as raw_get

AK, SK = "it-paths-1", "it-paths-secret-1"
REGION = "us-east-1"


def signed_as_sent(endpoint, ak, sk, method, signed_path, sent_path, host=None, body=b""):
    """A SigV4 request whose signature covers signed_path (the canonical spelling, which is
    what S3 computes from the decoded key) while sent_path goes on the wire."""
    netloc = host or endpoint.split("//", 1)[1]
    req = AWSRequest(method=method, url="http://%s%s" % (netloc, signed_path), data=body)
    S3SigV4Auth(Credentials(ak, sk), "s3", REGION).add_auth(req)
    headers = dict(req.headers.items())
    headers["Host"] = netloc
    port = int(endpoint.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, sent_path, body=body or None, headers=headers)
        resp = conn.getresponse()
        return s3util.RawResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()},
                                  resp.read())
    finally:
        conn.close()


def upstream_body(up, key, bucket=None):
    """The object as the upstream holds it (boto3, straight to the upstream), or None."""
    c = s3util.upstream_client(up)
    try:
        return c.get_object(Bucket=bucket or up.bucket, Key=key)["Body"].read()
    except c.exceptions.NoSuchKey:
        return None


def sent_targets(gw):
    return [target for _, target in gw.proxy.request_lines()]


def test_dot_segment_keys_are_objects_of_their_own(radosgw, gateway):
    gw = gateway(radosgw, proxy=True)
    gw.require_real()
    pfx = s3util.unique_key("dots")
    plain = pfx + "/b"
    plain_body = b"the bytes of " + plain.encode()
    s3util.upstream_client(radosgw).put_object(Bucket=gw.bucket, Key=plain, Body=plain_body)
    keys = [pfx + "/a/./b", pfx + "/a/../b", pfx + "/a/..", pfx + "/.", "../" + pfx + "/b", ".."]
    bodies = {k: s3util.data(3000 + i, seed=k) for i, k in enumerate(keys)}
    for key in keys:
        path = "/%s/%s" % (gw.bucket, s3util.quote_key(key))
        r = s3util.raw(gw, "PUT", path, body=bodies[key])
        assert r.status == 200, (key, r.status, r.body)
        for want in ("MISS", "HIT"):
            r = s3util.raw(gw, "GET", path)
            assert (r.status, r.body, r.headers.get("x-cache")) == (200, bodies[key], want), key
        assert upstream_body(radosgw, key) == bodies[key], key
        assert ("PUT", path) in gw.proxy.request_lines() and ("GET", path) in gw.proxy.request_lines()
    # "b" was not touched by any of them, and a write of "b" leaves them alone.
    assert upstream_body(radosgw, plain) == plain_body
    r = s3util.raw(gw, "PUT", "/%s/%s" % (gw.bucket, plain), body=b"b again")
    assert r.status == 200
    for key in keys:
        r = s3util.raw(gw, "GET", "/%s/%s" % (gw.bucket, s3util.quote_key(key)))
        assert (r.status, r.body, r.headers.get("x-cache")) == (200, bodies[key], "HIT"), key
    assert s3util.raw(gw, "GET", "/%s/%s" % (gw.bucket, plain)).body == b"b again"


def test_dot_segments_never_lead_a_client_key_out_of_its_bucket(radosgw, gateway):
    other = "paths-other-" + uuid.uuid4().hex[:8]
    up = s3util.upstream_client(radosgw)
    up.create_bucket(Bucket=other)
    up.put_object(Bucket=other, Key="k", Body=b"other's k")
    gw = gateway(radosgw, proxy=True, client_keys=[{"access_key": AK, "secret_key": SK,
                                                    "buckets": [radosgw.bucket]}],
                 extra_args=["--vhost-domain", "s3.local"])
    gw.require_real()
    vhost = "%s.s3.local:%d" % (gw.bucket, gw.port)
    spellings = [  # (Host, path sent; {o}: the other bucket, {k}: its object): path style,
        (None, "/%s/../{o}/{k}" % gw.bucket),  # then virtual-hosted
        (None, "/%s/%%2E%%2E%%2F{o}/{k}" % gw.bucket),
        (None, "/%s/%%2e%%2E/{o}%%2F{k}" % gw.bucket),
        (vhost, "/../{o}/{k}"),
        (vhost, "/%2E%2E%2F{o}/{k}"),
    ]
    for i, (host, spelled) in enumerate(spellings):
        target = "k%d" % i  # the object of the other bucket that the spelling aims at
        up.put_object(Bucket=other, Key=target, Body=b"other's " + target.encode())
        sent = spelled.format(o=other, k=target)
        key = "../%s/%s" % (other, target)  # what the spelling names: a key of the client's bucket
        signed = ("/%s/" % gw.bucket if host is None else "/") + key
        r = signed_as_sent(gw.endpoint, AK, SK, "GET", signed, sent, host=host)
        assert r.status == 404 and b"NoSuchKey" in r.body, (host, sent, r.status, r.body)
        body = ("written as " + sent).encode()
        r = signed_as_sent(gw.endpoint, AK, SK, "PUT", signed, sent, host=host, body=body)
        assert r.status == 200, (host, sent, r.status, r.body)
        assert upstream_body(radosgw, key) == body
        assert upstream_body(radosgw, target, bucket=other) == b"other's " + target.encode()
        for want in ("MISS", "HIT"):
            r = signed_as_sent(gw.endpoint, AK, SK, "GET", signed, sent, host=host)
            assert (r.status, r.body, r.headers.get("x-cache")) == (200, body, want), sent
        assert "/%s/%s" % (gw.bucket, key) in sent_targets(gw)
    # A listing with a dot segment is a read of a key too, never a listing of the other bucket.
    signed = "/%s/../%s" % (gw.bucket, other)
    r = signed_as_sent(gw.endpoint, AK, SK, "GET", signed, signed)
    assert r.status == 404 and b"<Key>k</Key>" not in r.body
    assert upstream_body(radosgw, "k", bucket=other) == b"other's k"
    wire = sent_targets(gw)
    assert wire and all(t.startswith("/%s/" % gw.bucket) for t in wire), wire
    # The key's bucket list still refuses the other bucket by its own name.
    r = signed_as_sent(gw.endpoint, AK, SK, "GET", "/%s/k" % other, "/%s/k" % other)
    assert r.status == 403 and b"AccessDenied" in r.body


def test_spellings_of_one_key_name_one_object(upstream, gateway):
    gw = gateway(upstream, proxy=True)
    gw.require_real()
    pfx = s3util.unique_key("spell")
    key, spaced = pfx + "/A/x+y z~", pfx + "/A/x y z~"
    body, spaced_body = b"plus " + key.encode(), b"space " + spaced.encode()
    up = s3util.upstream_client(upstream)
    up.put_object(Bucket=gw.bucket, Key=key, Body=body)
    up.put_object(Bucket=gw.bucket, Key=spaced, Body=spaced_body)
    b = gw.bucket
    spellings = ["/%s/%s" % (b, s3util.quote_key(key)),
                 "/%s/%s/%%41/x%%2By%%20z~" % (b, pfx),
                 "/%s/%s/A%%2Fx%%2by%%20z%%7E" % (b, pfx),
                 "/%s/%s/A/x+y%%20z~" % (b, pfx)]  # '+' in a path is a plus, not a space
    for i, path in enumerate(spellings):
        r = raw_get(gw.endpoint, path)
        assert (r.status, r.body) == (200, body), path
        assert r.headers.get("x-cache") == ("MISS" if i == 0 else "HIT"), path
        gw.stats_when(lambda s: s["fills_stored"] >= 1)
    r = raw_get(gw.endpoint, "/%s/%s" % (b, s3util.quote_key(spaced)))
    assert (r.status, r.body, r.headers.get("x-cache")) == (200, spaced_body, "MISS")
    # Every spelling went out as the one canonical path, which both upstreams read as key.
    wire = sent_targets(gw)
    assert wire.count("/%s/%s/A/x%%2By%%20z~" % (b, pfx)) == 1, wire
    # A write under one spelling replaces what every spelling is served.
    r = s3util.raw(gw, "PUT", spellings[1], body=b"replaced")
    assert r.status == 200
    assert upstream_body(upstream, key) == b"replaced"
    for path in spellings:
        assert raw_get(gw.endpoint, path).body == b"replaced", path
    assert raw_get(gw.endpoint, "/%s/%s" % (b, s3util.quote_key(spaced))).body == spaced_body
