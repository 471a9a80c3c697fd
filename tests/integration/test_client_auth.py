"""Who may use the gateway (--client-credentials): SigV4 verification of client requests
against configured key pairs, S3's own error codes, presigned URLs, bucket lists, anonymous
requests, the start-up refusal of anonymous access on the network, and --identity client,
where each radosgw user keeps its own rights even on cache hits."""
import contextlib
import datetime
import email.utils
import http.client
import importlib
import io
import os
import shutil
import subprocess
import threading
import time
import types
import urllib.error
import urllib.request
import uuid
from unittest import mock

import boto3.s3.transfer
import botocore.auth
import botocore.exceptions
import pytest
from botocore import UNSIGNED
from botocore.config import Config

from harness import awscli
from harness import gateway as gwmod
from harness import proc
from harness import s3util

HERE = os.path.dirname(os.path.abspath(__file__))
KiB = 1024
MiB = 1024 * KiB
AK, SK = "it-client-1", "it-client-secret-1/+x"
OTHER_AK, OTHER_SK = "it-client-2", "it-client-secret-2"


def key_entry(ak, sk, buckets=None):
    e = {"access_key": ak, "secret_key": sk}
    if buckets is not None:
        e["buckets"] = buckets
    return e


def start(gateway, up, keys=None, args=(), **kw):
    """A gateway verifying client signatures against keys (default: AK/SK, every bucket)."""
    gw = gateway(up, client_keys=keys or [key_entry(AK, SK)], extra_args=list(args), **kw)
    gw.require_real()
    return gw


def client(gw, ak=AK, sk=SK, **kw):
    return s3util.client(gw.endpoint, ak, sk, **kw)


def error(fn):
    """Runs fn, which must fail; returns (HTTP status, S3 error code, message)."""
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn()
    r = ei.value.response
    return (r["ResponseMetadata"]["HTTPStatusCode"], r["Error"].get("Code"),
            r["Error"].get("Message"))


def http_get(url, method="GET"):
    """An unsigned request with urllib: (status, lower-cased headers, body)."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def put_upstream(up, key, body, bucket=None):
    s3util.upstream_client(up).put_object(Bucket=bucket or up.bucket, Key=key, Body=body)


# ---- gateway identity: a configured key works, everything else is refused ----------------

def test_configured_key_gets_puts_lists_and_uploads_multipart(upstream, gateway):
    gw = start(gateway, upstream)
    c = client(gw)
    key = s3util.unique_key("auth-ok")
    body = s3util.data(300 * KiB, seed=key)
    c.put_object(Bucket=gw.bucket, Key=key, Body=body)
    got = c.get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == body and s3util.x_cache(got) == "MISS"
    got = c.get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == body and s3util.x_cache(got) == "HIT"
    assert c.head_object(Bucket=gw.bucket, Key=key)["ContentLength"] == len(body)
    listed = c.list_objects_v2(Bucket=gw.bucket, Prefix=key)
    assert [o["Key"] for o in listed["Contents"]] == [key]

    big_key = key + "-multipart"
    big = s3util.data(11 * MiB, seed=big_key)
    cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * MiB,
                                           multipart_chunksize=5 * MiB, use_threads=False)
    parts = []
    c.meta.events.register("before-call.s3.UploadPart", lambda **kw: parts.append(1))
    c.upload_fileobj(io.BytesIO(big), gw.bucket, big_key, Config=cfg)
    assert len(parts) == 3
    assert c.get_object(Bucket=gw.bucket, Key=big_key)["Body"].read() == big
    c.delete_object(Bucket=gw.bucket, Key=big_key)
    assert gw.stats()["auth_refused"] == 0


def test_aws_cli_with_a_configured_key_copies_both_ways(upstream, gateway, tmp_path):
    gw = start(gateway, upstream)
    target = types.SimpleNamespace(endpoint=gw.endpoint, access_key=AK, secret_key=SK)
    src = tmp_path / "up.bin"
    src.write_bytes(s3util.data(200 * KiB, seed="cli"))
    key = s3util.unique_key("auth-cli")
    awscli.run(target, "s3", "cp", str(src), "s3://%s/%s" % (gw.bucket, key))
    dst = tmp_path / "down.bin"
    awscli.run(target, "s3", "cp", "s3://%s/%s" % (gw.bucket, key), str(dst))
    assert dst.read_bytes() == src.read_bytes()
    wrong = types.SimpleNamespace(endpoint=gw.endpoint, access_key=AK, secret_key="nope")
    res = awscli.run(wrong, "s3", "cp", "s3://%s/%s" % (gw.bucket, key), str(dst), check=False)
    assert res.returncode != 0 and b"403" in res.stderr


def test_virtual_hosted_and_odd_keys_verify_as_sent(upstream, gateway):
    gw = start(gateway, upstream, args=["--vhost-domain", "s3.local"])
    host = "%s.s3.local:%d" % (gw.bucket, gw.port)
    keys = [s3util.unique_key("auth-vhost"), s3util.unique_key("auth odd") + "/a+b%c d=e&f;g"]
    if upstream.name == "radosgw":  # s3rver answers 404 to "//" itself
        keys.append(s3util.unique_key("auth-slashes") + "//x///y/")
    for key in keys:
        body = s3util.data(3000, seed=key)
        put_upstream(upstream, key, body)
        path = "/" + s3util.quote_key(key)
        for want in ("MISS", "HIT"):
            r = s3util.signed_request(gw.endpoint, AK, SK, "GET", path, host=host)
            assert (r.status, r.body, r.headers["x-cache"]) == (200, body, want)
        r = s3util.signed_request(gw.endpoint, AK, SK + "x", "GET", path, host=host)
        assert r.status == 403 and b"SignatureDoesNotMatch" in r.body
        got = client(gw).get_object(Bucket=gw.bucket, Key=key)  # path style, boto3's encoding
        assert got["Body"].read() == body


def test_wrong_secret_is_signature_does_not_match(upstream, gateway):
    gw = start(gateway, upstream)
    key = s3util.unique_key("auth-bad")
    put_upstream(upstream, key, b"secret data")
    status, code, _ = error(
        lambda: client(gw, sk=SK + "x").get_object(Bucket=gw.bucket, Key=key))
    assert (status, code) == (403, "SignatureDoesNotMatch")
    status, code, _ = error(
        lambda: client(gw, sk=SK + "x").put_object(Bucket=gw.bucket, Key=key, Body=b"x" * 5000))
    assert (status, code) == (403, "SignatureDoesNotMatch")
    assert s3util.upstream_client(upstream).get_object(
        Bucket=gw.bucket, Key=key)["Body"].read() == b"secret data"
    assert gw.stats()["auth_refused"] == 2


def test_unknown_key_is_invalid_access_key_id(upstream, gateway):
    gw = start(gateway, upstream)
    status, code, _ = error(
        lambda: client(gw, ak="nobody", sk=SK).list_objects_v2(Bucket=gw.bucket))
    assert (status, code) == (403, "InvalidAccessKeyId")


@contextlib.contextmanager
def signing_clock(minutes):
    """Makes botocore sign with its clock moved by minutes: its own signer, old and new
    (get_current_datetime or datetime.utcnow), and the CRT signer when awscrt is there."""
    offset = datetime.timedelta(minutes=minutes)

    class Moved(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return datetime.datetime.utcnow() + offset

    class Module:
        def __getattr__(self, name):
            return Moved if name == "datetime" else getattr(datetime, name)

    modules = [botocore.auth]
    try:
        modules.append(importlib.import_module("botocore.crt.auth"))
    except ImportError:
        pass
    with contextlib.ExitStack() as stack:
        for m in modules:
            if hasattr(m, "get_current_datetime"):
                real = m.get_current_datetime
                stack.enter_context(mock.patch.object(
                    m, "get_current_datetime", lambda *a, _r=real, **kw: _r(*a, **kw) + offset))
            if hasattr(m, "datetime"):
                stack.enter_context(mock.patch.object(m, "datetime", Module()))
        yield


def test_clock_20_minutes_off_is_request_time_too_skewed(upstream, gateway):
    gw = start(gateway, upstream)
    for minutes in (-20, 20):
        with signing_clock(minutes):
            status, code, _ = error(lambda: client(gw).list_objects_v2(Bucket=gw.bucket))
        assert (status, code) == (403, "RequestTimeTooSkewed")
    with signing_clock(-10):  # within the 15-minute window: accepted
        client(gw).list_objects_v2(Bucket=gw.bucket)


def test_presigned_get_works_is_cached_and_expires(upstream, gateway):
    gw = start(gateway, upstream)
    key = s3util.unique_key("auth-presigned") + "/a b+c"
    body = s3util.data(70 * KiB, seed=key)
    put_upstream(upstream, key, body)
    url = client(gw).generate_presigned_url(
        "get_object", Params={"Bucket": gw.bucket, "Key": key}, ExpiresIn=600)
    assert "X-Amz-Signature=" in url
    status, headers, got = http_get(url)
    assert (status, got) == (200, body)
    assert headers["x-cache"] == "MISS"  # the signature parameters are gone: a plain GET
    status, headers, got = http_get(url)
    assert (status, got, headers["x-cache"]) == (200, body, "HIT")

    tampered = url.replace("auth-presigned", "auth-presignee")
    status, _, text = http_get(tampered)
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in text

    short = client(gw).generate_presigned_url(
        "get_object", Params={"Bucket": gw.bucket, "Key": key}, ExpiresIn=1)
    time.sleep(2.2)
    status, _, text = http_get(short)
    assert status == 403 and b"<Code>AccessDenied</Code>" in text and b"expired" in text

    week = 7 * 24 * 3600 + 1
    too_long = url.replace("X-Amz-Expires=600", "X-Amz-Expires=%d" % week)
    status, _, text = http_get(too_long)
    assert status == 400 and b"<Code>AuthorizationQueryParametersError</Code>" in text


def test_presigned_get_without_client_keys_is_served_and_cached(upstream, gateway):
    # No --client-credentials: nothing is verified, but the URL's own signature must not
    # reach the upstream beside the gateway's (radosgw, strict, would refuse the pair).
    gw = gateway(upstream)
    gw.require_real()
    key = s3util.unique_key("plain-presigned")
    body = s3util.data(9 * KiB, seed=key)
    put_upstream(upstream, key, body)
    url = s3util.client(gw.endpoint, gw.access_key, gw.secret_key).generate_presigned_url(
        "get_object", Params={"Bucket": gw.bucket, "Key": key}, ExpiresIn=600)
    assert "X-Amz-Signature=" in url
    for want in ("MISS", "HIT"):
        status, headers, got = http_get(url)
        assert (status, got, headers["x-cache"]) == (200, body, want)
        gw.stats_when(lambda s: s["fills_stored"] >= 1)


def test_presigned_put_goes_upstream_without_the_signature_parameters(upstream, gateway):
    gw = start(gateway, upstream)
    key = s3util.unique_key("auth-presigned-put")
    url = client(gw).generate_presigned_url(
        "put_object", Params={"Bucket": gw.bucket, "Key": key}, ExpiresIn=600)
    req = urllib.request.Request(url, data=b"uploaded through a presigned URL", method="PUT")
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
    got = s3util.upstream_client(upstream).get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == b"uploaded through a presigned URL"


def test_key_restricted_to_buckets_gets_access_denied_elsewhere(upstream, gateway):
    other = "auth-other-" + uuid.uuid4().hex[:8]
    up_client = s3util.upstream_client(upstream)
    up_client.create_bucket(Bucket=other)
    key = s3util.unique_key("auth-buckets")
    put_upstream(upstream, key, b"in test")
    put_upstream(upstream, key, b"in other", bucket=other)
    gw = start(gateway, upstream, keys=[key_entry(AK, SK, [upstream.bucket]),
                                        key_entry(OTHER_AK, OTHER_SK, [other, "*"])])
    c = client(gw)
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == b"in test"
    status, code, _ = error(lambda: c.get_object(Bucket=other, Key=key))
    assert (status, code) == (403, "AccessDenied")
    status, code, _ = error(lambda: c.put_object(Bucket=other, Key=key, Body=b"no"))
    assert (status, code) == (403, "AccessDenied")
    status, code, _ = error(lambda: c.list_buckets())
    assert (status, code) == (403, "AccessDenied")
    # A copy into an allowed bucket from a forbidden one is a read of the forbidden one.
    status, code, _ = error(lambda: c.copy_object(
        Bucket=gw.bucket, Key=key + "-copy", CopySource={"Bucket": other, "Key": key}))
    assert (status, code) == (403, "AccessDenied")
    # "*" among the buckets means every bucket.
    c2 = client(gw, OTHER_AK, OTHER_SK)
    assert c2.get_object(Bucket=other, Key=key)["Body"].read() == b"in other"
    assert c2.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == b"in test"
    assert up_client.get_object(Bucket=other, Key=key)["Body"].read() == b"in other"


def test_unsigned_requests_are_refused_without_allow_anonymous(upstream, gateway):
    gw = start(gateway, upstream)
    key = s3util.unique_key("auth-anon")
    put_upstream(upstream, key, b"public?")
    status, _, text = http_get("%s/%s/%s" % (gw.endpoint, gw.bucket, key))
    assert status == 403 and b"<Code>AccessDenied</Code>" in text
    anon = s3util.client(gw.endpoint, "x", "y")
    anon.meta.events.register("choose-signer", lambda **kw: UNSIGNED)
    status, code, _ = error(lambda: anon.get_object(Bucket=gw.bucket, Key=key))
    assert (status, code) == (403, "AccessDenied")
    # SigV2 is not verified, so it is refused outright.
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    try:
        conn.request("GET", "/%s/%s" % (gw.bucket, key), headers={
            "Authorization": "AWS %s:c2lnbmF0dXJlYnl0ZXM=" % AK,
            "Date": email.utils.formatdate(usegmt=True)})
        resp = conn.getresponse()
        text = resp.read()
    finally:
        conn.close()
    assert resp.status == 400 and b"<Code>InvalidRequest</Code>" in text, text


def test_unsigned_x_amz_header_is_refused(upstream, gateway):
    gw = start(gateway, upstream)
    key = s3util.unique_key("auth-unsigned-header")
    c = client(gw)

    def add_header(request, **kw):
        request.headers["x-amz-meta-sneaky"] = "added after signing"

    c.meta.events.register_last("before-send.s3.PutObject", add_header)
    status, code, message = error(lambda: c.put_object(Bucket=gw.bucket, Key=key, Body=b"x"))
    assert (status, code) == (403, "AccessDenied") and "not signed" in message


def test_secrets_and_signatures_never_reach_the_log(s3rver, gateway):
    gw = start(gateway, s3rver, args=["--log-level", "debug", "--access-log"])
    key = s3util.unique_key("auth-log")
    put_upstream(s3rver, key, b"x")
    seen = []

    def grab(request, **kw):
        seen.append(request.headers["Authorization"])

    for sk in (SK, SK + "-wrong"):
        c = client(gw, sk=sk)
        c.meta.events.register_last("before-send.s3.GetObject", grab)
        try:
            c.get_object(Bucket=gw.bucket, Key=key)["Body"].read()
        except botocore.exceptions.ClientError:
            pass
    gw.stop()
    log = "".join(open(os.path.join(gw.workdir, n), errors="replace").read()
                  for n in os.listdir(gw.workdir) if n.startswith("stderr."))
    assert '"identity":"%s"' % AK in log  # the access log names the key, nothing more
    for secret in [SK, "it-client-secret"] + [a.decode() if isinstance(a, bytes) else a
                                             for a in seen]:
        assert secret not in log
    for auth in seen:
        sig = (auth.decode() if isinstance(auth, bytes) else auth).rsplit("=", 1)[1]
        assert sig not in log


def test_admin_api_and_probes_need_no_s3_signature(upstream, gateway):
    gw = start(gateway, upstream)
    for path in ("/healthz", "/readyz", "/metrics"):
        status, _, body = http_get(gw.endpoint + path)
        assert status == 200, (path, body)
    status, _, body = http_get(gw.endpoint + "/metrics")
    assert b"s3cached_auth_refused_total" in body
    assert "hits" in gw.stats()  # the admin API: loopback, no token, no signature


def test_node_sdk_works_with_a_configured_key(upstream, gateway):
    gw = start(gateway, upstream)
    node = shutil.which("node")
    assert node, "node is missing"
    env = dict(os.environ)
    env.update({
        "S3_ENDPOINT": gw.endpoint,
        "S3_BUCKET": gw.bucket,
        "S3_PREFIX": s3util.unique_key("auth-node") + "/",
        "AWS_ACCESS_KEY_ID": AK,
        "AWS_SECRET_ACCESS_KEY": SK,
        "AWS_REGION": "us-east-1",
        "S3_STREAMED_PUT": "1",  # aws-chunked with a trailer: STREAMING-* is verified as signed
    })
    res = subprocess.run([node, os.path.join(HERE, "node", "sdk_roundtrip.mjs")], env=env,
                         capture_output=True, timeout=120, cwd=HERE)
    assert res.returncode == 0, "node script failed:\n%s\n%s" % (
        res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace"))
    assert gw.stats()["auth_refused"] == 0


# ---- start-up ------------------------------------------------------------------------------

def test_anonymous_on_a_network_listener_is_refused_at_start_up(s3rver, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text('{"keys": [{"access_key": "a", "secret_key": "b"}]}')
    keys.chmod(0o600)
    base = [gwmod.binary(), "--listen", "0.0.0.0:%d" % proc.free_port(), "--upstream",
            s3rver.endpoint, "--cache-dir", str(tmp_path / "cache"),
            "--client-credentials", str(keys)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("S3CACHED_", "AWS_"))}
    res = subprocess.run(base + ["--allow-anonymous"], env=env, capture_output=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    assert res.returncode != 0
    assert b"--allow-anonymous-on-network" in res.stderr, res.stderr
    # The same through the environment twin.
    res = subprocess.run(base, env=dict(env, S3CACHED_ALLOW_ANONYMOUS="1"), capture_output=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    assert res.returncode != 0 and b"--allow-anonymous-on-network" in res.stderr
    # Without keys, --allow-anonymous means nothing: refused too.
    res = subprocess.run(base[:-2] + ["--allow-anonymous"], env=env, capture_output=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and b"--client-credentials" in res.stderr
    keys.chmod(0o666)
    res = subprocess.run(base, env=env, capture_output=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    assert res.returncode != 0 and b"writable by group or others" in res.stderr


def test_anonymous_on_a_network_listener_starts_when_confirmed(s3rver, gateway):
    gw = gateway(s3rver, client_keys=[key_entry(AK, SK)],
                 extra_args=["--allow-anonymous", "--allow-anonymous-on-network"])
    gw.require_real()
    gw.stop()
    gw.listen_host = "0.0.0.0"
    gw.start()  # clients still reach it on 127.0.0.1
    key = s3util.unique_key("auth-anon-net")
    put_upstream(s3rver, key, b"x")
    assert client(gw).get_object(Bucket=gw.bucket, Key=key)["Body"].read() == b"x"


def test_unverified_network_listener_warns_at_start_up(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    gw.stop()
    gw.listen_host = "0.0.0.0"
    gw.start()
    gw.stop()
    log = open(os.path.join(gw.workdir, "stderr.2.log"), errors="replace").read()
    assert "without --client-credentials" in log


# ---- anonymous and client identity against radosgw's own permissions -------------------------

_users = {}


def radosgw_user(radosgw, name):
    """A second radosgw user (created once a session): (uid, access key, secret key)."""
    if name not in _users:
        uid = "it-%s-%s" % (name, uuid.uuid4().hex[:6])
        ak, sk = "AK" + uuid.uuid4().hex[:16].upper(), "SK" + uuid.uuid4().hex
        radosgw.admin.create_user(uid, ak, sk)
        _users[name] = (uid, ak, sk)
    return _users[name]


def test_anonymous_gets_only_what_the_bucket_gives_anonymous_users(radosgw, gateway):
    gw = start(gateway, radosgw, args=["--allow-anonymous", "--auth-cache-ttl", "1s"])
    key = s3util.unique_key("auth-public")
    body = s3util.data(50 * KiB, seed=key)
    put_upstream(radosgw, key, body)
    url = "%s/%s/%s" % (gw.endpoint, gw.bucket, key)
    status, _, _ = http_get(url)
    assert status == 403  # private, not cached yet: radosgw refuses the unsigned GET
    c = client(gw)
    for want in ("MISS", "HIT"):
        got = c.get_object(Bucket=gw.bucket, Key=key)
        assert got["Body"].read() == body and s3util.x_cache(got) == want
    status, _, text = http_get(url)
    assert status == 403 and b"<Code>AccessDenied</Code>" in text  # cached, still refused
    status, _, _ = http_get(url, method="HEAD")
    assert status == 403
    assert gw.stats()["authz_denied"] >= 2

    s3util.upstream_client(radosgw).put_object_acl(Bucket=gw.bucket, Key=key, ACL="public-read")
    time.sleep(1.5)  # the remembered refusal expires (--auth-cache-ttl 1s)
    status, headers, got = http_get(url)
    assert (status, got, headers["x-cache"]) == (200, body, "HIT")
    # Anonymous listings and writes are the bucket's call too: radosgw refuses them.
    status, _, _ = http_get("%s/%s?list-type=2" % (gw.endpoint, gw.bucket))
    assert status == 403


def test_client_identity_keeps_each_radosgw_users_rights_on_hits(radosgw, gateway):
    uid_b, ak_b, sk_b = radosgw_user(radosgw, "reader-b")
    a = (radosgw.access_key, radosgw.secret_key)
    gw = start(gateway, radosgw, keys=[key_entry(*a), key_entry(ak_b, sk_b)],
               args=["--identity", "client", "--auth-cache-ttl", "1s"],
               gateway_credentials=False)
    ca, cb = client(gw, *a), client(gw, ak_b, sk_b)
    key = s3util.unique_key("auth-identity")
    body = s3util.data(100 * KiB, seed=key)
    put_upstream(radosgw, key, body)

    # B may not read A's object: refused before A cached it (B's own fetch, signed as B) ...
    assert error(lambda: cb.get_object(Bucket=gw.bucket, Key=key))[:2] == (403, "AccessDenied")
    got = ca.get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == body and s3util.x_cache(got) == "MISS"
    got = ca.get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == body and s3util.x_cache(got) == "HIT"
    # ... and after: the cached copy is not handed to B.
    assert error(lambda: cb.get_object(Bucket=gw.bucket, Key=key))[:2] == (403, "AccessDenied")
    assert error(lambda: cb.head_object(Bucket=gw.bucket, Key=key))[0] == 403
    assert error(lambda: cb.get_object(Bucket=gw.bucket, Key=key, Range="bytes=0-9"))[0] == 403
    assert gw.stats()["authz_denied"] >= 2  # B's own 403 was remembered: no HEAD needed

    # B's own bucket, written and read through the gateway as B: A is refused B's hits.
    b_bucket = "it-b-" + uuid.uuid4().hex[:8]
    cb.create_bucket(Bucket=b_bucket)
    cb.put_object(Bucket=b_bucket, Key="mine", Body=b"B's data")
    for want in ("MISS", "HIT"):
        got = cb.get_object(Bucket=b_bucket, Key="mine")
        assert got["Body"].read() == b"B's data" and s3util.x_cache(got) == want
    assert error(lambda: ca.get_object(Bucket=b_bucket, Key="mine"))[:2] == (403, "AccessDenied")
    assert error(lambda: cb.put_object(Bucket=gw.bucket, Key=key, Body=b"overwrite"))[0] == 403
    # A write drops the cached copy before it is forwarded, whatever the upstream answers (an
    # answer can be lost after the upstream committed: docs/architecture.md), so B's refused
    # write cost a refetch; A's next read fills the cache again, with A's bytes.
    got = ca.get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == body and s3util.x_cache(got) == "MISS"

    # A grants B read: once the remembered refusal expires, B gets the cached copy.
    s3util.upstream_client(radosgw).put_object_acl(
        Bucket=gw.bucket, Key=key, GrantRead="id=" + uid_b, GrantFullControl="id=tester")
    time.sleep(1.5)
    got = cb.get_object(Bucket=gw.bucket, Key=key)
    assert got["Body"].read() == body and s3util.x_cache(got) == "HIT"
    assert gw.stats()["authz_checks"] >= 1  # asked radosgw, as B, before the hit
    assert ca.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body


def test_client_identity_does_not_share_a_fill_in_flight_with_a_refused_user(radosgw, gateway):
    uid_b, ak_b, sk_b = radosgw_user(radosgw, "reader-b")
    a = (radosgw.access_key, radosgw.secret_key)
    # A's fill trickles at 256 KiB/s: 8 s, over which B's refusal must come.
    gw = start(gateway, radosgw, keys=[key_entry(*a), key_entry(ak_b, sk_b)],
               args=["--identity", "client"], gateway_credentials=False, rate=256 * KiB)
    ca, cb = client(gw, *a), client(gw, ak_b, sk_b)
    key = s3util.unique_key("auth-inflight")
    body = s3util.data(2 * MiB, seed=key)
    put_upstream(radosgw, key, body)
    result = {}

    def read_as_a():
        result["a"] = ca.get_object(Bucket=gw.bucket, Key=key)["Body"].read()

    t = threading.Thread(target=read_as_a)
    t.start()
    gw.stats_when(lambda s: s["upstream_fetches"] >= 1)
    started = time.monotonic()
    assert error(lambda: cb.get_object(Bucket=gw.bucket, Key=key))[:2] == (403, "AccessDenied")
    refused_after = time.monotonic() - started
    # Had B waited for A's fill, the whole body would have come through the proxy before B's
    # answer (B's own refusal adds a few hundred bytes): an order, not a time limit.
    came = gw.proxy.bytes_down
    t.join(60)
    assert result.get("a") == body
    assert came < len(body), "B waited for A's fill (%.1f s, %d bytes of the body in)" % (
        refused_after, came)


def test_space_and_plus_in_a_list_prefix_verify_and_list_what_they_mean(upstream, gateway):
    """Under --client-credentials a client's signature is checked on its query as it signed
    it (boto3: a space as %20, a plus as %2B), while the query sent upstream reads a raw '+'
    as a space (as S3 does): each prefix lists its own key, not the other."""
    gw = start(gateway, upstream)
    pre = s3util.unique_key("auth-plusq")
    put_upstream(upstream, pre + "sp ace", b"space")
    put_upstream(upstream, pre + "sp+ace", b"plus")
    c = client(gw)
    for want in ("sp ace", "sp+ace", "sp"):
        got = c.list_objects_v2(Bucket=gw.bucket, Prefix=pre + want)
        keys = sorted(o["Key"] for o in got.get("Contents", []))
        assert keys == ([pre + "sp ace", pre + "sp+ace"] if want == "sp" else [pre + want])
