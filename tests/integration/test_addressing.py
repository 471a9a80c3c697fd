"""Virtual-hosted-style requests (bucket in the Host header) and the Node.js SDK."""
import os
import shutil
import subprocess

from harness import s3util

HERE = os.path.dirname(os.path.abspath(__file__))


def test_vhost_style_get_and_put(upstream, gateway):
    key = s3util.unique_key("vhost")
    body = s3util.data(10000, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    gw = gateway(upstream, extra_args=["--vhost-domain", "s3.local"])
    gw.require_real()
    host = "%s.s3.local:%d" % (gw.bucket, gw.port)
    path = "/" + s3util.quote_key(key)
    for expected in ("MISS", "HIT"):
        r = s3util.raw(gw, "GET", path, host=host)
        assert r.status == 200
        assert r.body == body
        gw.assert_cache(r.headers, expected)
    r = s3util.raw(gw, "GET", path, host=host, headers={"Range": "bytes=10-19"})
    assert r.status == 206 and r.body == body[10:20]

    key2 = s3util.unique_key("vhostput")
    r = s3util.raw(gw, "PUT", "/" + s3util.quote_key(key2), host=host, body=b"via vhost")
    assert r.status == 200
    direct = s3util.upstream_client(upstream).get_object(Bucket=upstream.bucket, Key=key2)
    assert direct["Body"].read() == b"via vhost"

    r = s3util.raw(gw, "GET", "/", host=host, query={"list-type": "2", "prefix": key2})
    assert r.status == 200
    assert ("<Key>%s</Key>" % key2).encode() in r.body
    # path-style keeps working next to it
    r = s3util.raw(gw, "GET", "/%s%s" % (gw.bucket, path))
    assert r.status == 200 and r.body == body


def test_node_sdk_v3_put_get_list_delete(upstream, gw):
    node = shutil.which("node")
    assert node, "node is missing"
    env = dict(os.environ)
    env.update({
        "S3_ENDPOINT": gw.endpoint,
        "S3_BUCKET": gw.bucket,
        "S3_PREFIX": s3util.unique_key("node") + "/",
        "AWS_ACCESS_KEY_ID": gw.access_key,
        "AWS_SECRET_ACCESS_KEY": gw.secret_key,
        "AWS_REGION": "us-east-1",
        # the upstreams cannot take the SDK's streamed (aws-chunked trailer) PUT themselves
        "S3_STREAMED_PUT": "0" if gw.direct else "1",
    })
    res = subprocess.run([node, os.path.join(HERE, "node", "sdk_roundtrip.mjs")], env=env,
                         capture_output=True, timeout=120, cwd=HERE)
    assert res.returncode == 0, "node script failed:\n%s\n%s" % (
        res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace"))
    assert b"ok" in res.stdout
