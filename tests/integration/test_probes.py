"""Liveness and readiness probes (/healthz, /readyz): open to anyone, honest about the
upstream, and never in the way of a bucket that happens to be named like them."""
import urllib.error
import urllib.request

from harness import s3util


def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_healthz_and_readyz_answer_ok_without_admin_token(upstream, gateway):
    gw = gateway(upstream, admin_token="probe-test-token-0123456789")
    gw.require_real()
    assert get(gw.endpoint + "/healthz") == (200, "ok\n")
    assert get(gw.endpoint + "/readyz") == (200, "ok\n")
    assert get(gw.endpoint + "/_s3cached/stats")[0] == 401


def test_readyz_follows_whether_the_upstream_answers(upstream, gateway):
    key = s3util.unique_key("probe")
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=b"x" * 100)
    gw = gateway(upstream, proxy=True, extra_args=["--upstream-retries", "0"])
    gw.require_real()
    path = "%s/%s/%s" % (gw.endpoint, gw.bucket, s3util.quote_key(key))
    assert get(gw.endpoint + "/readyz")[0] == 200

    gw.proxy.stop()
    status, _ = get(path + "-missing-while-down")
    assert status in (502, 503), status
    status, body = get(gw.endpoint + "/readyz")
    assert status == 503 and "upstream" in body
    assert get(gw.endpoint + "/healthz") == (200, "ok\n"), "alive while the upstream is down"

    gw.proxy.start()
    assert get(path)[0] in (200, 403), "the upstream answers again"
    assert get(gw.endpoint + "/readyz") == (200, "ok\n")


def test_listing_a_bucket_named_healthz_is_not_taken_for_the_probe(upstream, gateway):
    gw = gateway(upstream)
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    try:
        client.list_objects_v2(Bucket="healthz")
    except client.exceptions.NoSuchBucket:
        pass  # the upstream's answer, passed through: what a client expects
    except Exception as e:  # any S3 error from the upstream is fine too, not the probe's "ok"
        assert "NoSuchBucket" in str(e) or "AccessDenied" in str(e), e
