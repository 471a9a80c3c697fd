"""Query-string authentication (presigned URLs) beyond the SigV4 basics of test_client_auth.py:
SigV2 presigned URLs (what s3cmd signurl and older SDKs make), signatures kept out of the log,
and CORS preflights of presigned URLs, which S3 answers without authentication."""
import http.client
import os
import urllib.parse
import uuid

import boto3
from botocore.config import Config

from harness import s3util
from harness.rawhttp import get as raw_get
from harness.rawhttp import s3_error_code

AK, SK = "it-query-1", "it-query-secret-1"
ORIGIN = "http://app.example"


def keys(buckets=None):
    e = {"access_key": AK, "secret_key": SK}
    if buckets is not None:
        e["buckets"] = buckets
    return [e]


def presign_v2(endpoint, ak, sk, method, bucket, key):
    """A Signature Version 2 presigned URL (?AWSAccessKeyId=..&Expires=..&Signature=..)."""
    c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                     region_name="us-east-1",
                     config=Config(signature_version="s3", s3={"addressing_style": "path"}))
    url = c.generate_presigned_url(method, Params={"Bucket": bucket, "Key": key}, ExpiresIn=600)
    assert "AWSAccessKeyId=" in url and "Signature=" in url and "X-Amz-" not in url
    return url


def path_and_query(url):
    u = urllib.parse.urlsplit(url)
    return u.path + ("?" + u.query if u.query else "")


def gateway_log(gw):
    gw.stop()
    return "".join(open(os.path.join(gw.workdir, n), errors="replace").read()
                   for n in sorted(os.listdir(gw.workdir)) if n.startswith("stderr."))


# ---- SigV2 presigned URLs -------------------------------------------------------------------

def test_sigv2_presigned_url_is_served_and_cached_without_client_keys(upstream, gateway):
    # The gateway signs anew: the URL's own SigV2 parameters must not travel beside it
    # (S3 refuses a request authenticated twice).
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("v2-presigned") + "/a b+c"
    body = s3util.data(12 * 1024, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=gw.bucket, Key=key, Body=body)
    url = presign_v2(gw.endpoint, gw.access_key, gw.secret_key, "get_object", gw.bucket, key)
    for want in ("MISS", "HIT"):
        r = raw_get(gw.endpoint, path_and_query(url))
        assert (r.status, r.body, r.headers.get("x-cache")) == (200, body, want), r.body[:300]
        gw.stats_when(lambda s: s["fills_stored"] >= 1)


def test_sigv2_presigned_put_without_client_keys_reaches_the_upstream(upstream, gateway):
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("v2-presigned-put")
    url = presign_v2(gw.endpoint, gw.access_key, gw.secret_key, "put_object", gw.bucket, key)
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    try:
        conn.request("PUT", path_and_query(url), body=b"put through a SigV2 URL")
        resp = conn.getresponse()
        text = resp.read()
    finally:
        conn.close()
    assert resp.status == 200, text
    got = s3util.upstream_client(upstream).get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == b"put through a SigV2 URL"


def test_sigv2_presigned_url_is_refused_as_unsupported_with_client_keys(s3rver, gateway):
    gw = gateway(s3rver, client_keys=keys())
    gw.require_real()
    url = presign_v2(gw.endpoint, AK, SK, "get_object", gw.bucket, "any-key")
    r = raw_get(gw.endpoint, path_and_query(url))
    assert r.status == 400 and b"<Code>InvalidRequest</Code>" in r.body, r.body


# ---- signatures never reach the log ---------------------------------------------------------

def test_presigned_signatures_never_reach_the_debug_log(s3rver, gateway):
    other = "query-other-" + uuid.uuid4().hex[:8]
    s3util.upstream_client(s3rver).create_bucket(Bucket=other)
    gw = gateway(s3rver, client_keys=keys([s3rver.bucket]),
                 extra_args=["--log-level", "debug", "--log-format", "text"])
    gw.require_real()
    c = s3util.client(gw.endpoint, AK, SK)
    # Valid URLs the gateway answers itself: a bucket the key may not use, an unsupported SigV2.
    v4 = c.generate_presigned_url("get_object", Params={"Bucket": other, "Key": "k"},
                                  ExpiresIn=600)
    v2 = presign_v2(gw.endpoint, AK, SK, "get_object", s3rver.bucket, "k")
    r = raw_get(gw.endpoint, path_and_query(v4))
    assert r.status == 403 and b"AccessDenied" in r.body
    r = raw_get(gw.endpoint, path_and_query(v2))
    assert r.status == 400 and b"InvalidRequest" in r.body
    log = gateway_log(gw)
    assert "-> 403 AccessDenied" in log and "-> 400 InvalidRequest" in log  # they were logged
    secrets = []
    for url in (v4, v2):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        for name in ("X-Amz-Signature", "X-Amz-Credential", "Signature"):
            for v in q.get(name, []):
                secrets += [v, urllib.parse.quote(v, safe=""), urllib.parse.quote(v, safe="/")]
    assert len(secrets) == 9
    for s in secrets:
        assert s not in log, s
    assert "X-Amz-Signature=REDACTED" in log and "Signature=REDACTED" in log


# ---- CORS preflights --------------------------------------------------------------------------

def cors_bucket(up):
    name = "query-cors-" + uuid.uuid4().hex[:8]
    c = s3util.upstream_client(up)
    c.create_bucket(Bucket=name)
    c.put_bucket_cors(Bucket=name, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": [ORIGIN], "AllowedMethods": ["GET", "PUT"],
        "AllowedHeaders": ["*"], "MaxAgeSeconds": 60}]})
    c.put_object(Bucket=name, Key="k", Body=b"cors")
    return name


def preflight(endpoint, path, origin=True):
    headers = {"Access-Control-Request-Method": "GET"}
    if origin:
        headers["Origin"] = ORIGIN
    return raw_get(endpoint, path, headers=headers, method="OPTIONS")


def test_cors_preflight_of_a_presigned_url_is_answered_as_the_upstream_answers_it(
        upstream, gateway):
    bucket = cors_bucket(upstream)
    gw = gateway(upstream, client_keys=keys([bucket]))
    gw.require_real()
    url = s3util.client(gw.endpoint, AK, SK).generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "k"}, ExpiresIn=600)
    signed = path_and_query(url)
    plain = "/%s/k" % bucket
    for path in (signed, plain):  # a preflight carries no credentials of its own
        want = preflight(upstream.endpoint, plain)
        got = preflight(gw.endpoint, path)
        allow = want.headers.get("access-control-allow-origin")  # s3rver: "*", radosgw: ORIGIN
        assert want.status == 200 and allow in (ORIGIN, "*")
        assert (got.status, got.headers.get("access-control-allow-origin")) == (200, allow), \
               (path, got.status, got.body)
        assert "GET" in got.headers.get("access-control-allow-methods", "")
        # Without an Origin: the upstream's refusal (radosgw 400, s3rver 403 BadRequest),
        # not the gateway's verdict on the signature.
        want = preflight(upstream.endpoint, plain, origin=False)
        got = preflight(gw.endpoint, path, origin=False)
        assert want.status in (400, 403)
        assert (got.status, s3_error_code(got.body)) == (want.status, s3_error_code(want.body)), \
               (path, got.status, got.body)
    # The presigned GET itself is still verified, and still works.
    r = raw_get(gw.endpoint, signed)
    assert (r.status, r.body) == (200, b"cors")
    r = raw_get(gw.endpoint, signed.replace("X-Amz-Signature=", "X-Amz-Signature=0"))
    assert r.status == 403


def test_signature_parameters_of_an_anonymous_request_never_reach_the_upstream(upstream, gateway):
    # Unverified SigV2-looking parameters (any case) on an unsigned request: the upstream would
    # take them for the client's query authentication and judge that instead of the bucket's
    # anonymous access; they are dropped, and the request is the plain anonymous read it is.
    gw = gateway(upstream, client_keys=keys(), extra_args=["--allow-anonymous"])
    gw.require_real()
    key = s3util.unique_key("anon-sig-params")
    s3util.upstream_client(upstream).put_object(Bucket=gw.bucket, Key=key, Body=b"public",
                                               ACL="public-read")
    for query in ("Signature=c2ln&Expires=1", "awsaccesskeyid=x&signature=c2ln&expires=1"):
        r = raw_get(gw.endpoint, "/%s/%s?%s" % (gw.bucket, key, query))
        assert (r.status, r.body) == (200, b"public"), (query, r.status, r.body)
