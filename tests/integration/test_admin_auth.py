"""Who may use the admin API (/_s3cached/): the bearer token when one is configured,
loopback clients only when none is, and the S3 data path never gated by either."""
import json
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest

from harness import gateway as gateway_proc
from harness import s3util

TOKEN = "it-admin-token-" + uuid.uuid4().hex


def call(gw, method, path, token=None, body=None, base=None):
    """Calls the admin API; returns (status, parsed JSON body or None)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request((base or gw.endpoint) + "/_s3cached/" + path, data=data,
                                 method=method)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None


def gateway_log(gw):
    out = []
    for name in sorted(os.listdir(gw.workdir)):
        if name.startswith("stderr."):
            with open(os.path.join(gw.workdir, name), errors="replace") as f:
                out.append(f.read())
    return "".join(out)


def test_admin_token_is_required_when_configured(upstream, gateway):
    gw = gateway(upstream, admin_token=TOKEN, extra_args=["--log-level", "debug"])
    gw.require_real()
    for token in (None, "", TOKEN[:-1] + "x", TOKEN + "x", "short"):
        status, body = call(gw, "GET", "stats", token=token)
        assert status == 401, (token, status, body)
        assert body["error"] == "Unauthorized" and "Bearer" in body["message"]
    status, body = call(gw, "GET", "stats", token=TOKEN)
    assert status == 200 and "hits" in body
    assert call(gw, "GET", "buckets")[0] == 401
    assert call(gw, "GET", "buckets", token=TOKEN)[0] == 200

    # A refused POST creates nothing.
    manifest = {"bucket": upstream.bucket, "keys": ["a", "b"]}
    assert call(gw, "POST", "manifests", body=manifest)[0] == 401
    status, listed = call(gw, "GET", "manifests", token=TOKEN)
    assert status == 200
    assert listed["manifests"] == [], listed
    assert call(gw, "POST", "manifests", token=TOKEN, body=manifest)[0] == 201


def test_s3_requests_do_not_need_the_admin_token(upstream, gateway):
    key = s3util.unique_key("auth")
    body = s3util.data(5000, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    gw = gateway(upstream, admin_token=TOKEN)
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    for _ in range(2):
        assert client.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body


def test_admin_token_never_reaches_the_log(upstream, gateway):
    gw = gateway(upstream, admin_token=TOKEN, extra_args=["--log-level", "debug"])
    gw.require_real()
    call(gw, "GET", "stats", token=TOKEN)
    call(gw, "GET", "stats", token=TOKEN + "-wrong")
    gw.stop()
    log = gateway_log(gw)
    assert "listening" in log, "the log was not captured"
    assert TOKEN not in log


def test_too_short_admin_token_refuses_to_start(upstream):
    env = dict(os.environ, S3CACHED_ADMIN_TOKEN="tooshort")
    binary = gateway_proc.binary()  # S3CACHED_BIN, as every other gateway of the tests
    res = subprocess.run([binary, "--listen", "127.0.0.1:1", "--upstream", upstream.endpoint],
                         env=env, capture_output=True, timeout=30)
    assert res.returncode != 0
    assert b"admin token" in res.stderr
    assert b"tooshort" not in res.stderr


def test_wildcard_listener_without_token_still_answers_loopback_clients(upstream, gateway):
    gw = gateway(upstream)
    gw.require_real()
    gw.stop()
    gw.listen_host = "0.0.0.0"
    gw.start()
    status, body = call(gw, "GET", "stats")
    assert status == 200, body
    assert "admin API answers loopback clients only" in gateway_log(gw)


def _has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_ipv6_wildcard_listener_is_dual_stack_and_not_loopback(upstream, gateway):
    if not _has_ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback (::1) to connect from")
    gw = gateway(upstream)
    gw.require_real()
    gw.stop()
    gw.listen_host = "[::]"
    gw.start()  # waits for an answer on 127.0.0.1: an IPv6-only listener never gives one
    status, body = call(gw, "GET", "stats")  # from ::ffff:127.0.0.1, a loopback client
    assert status == 200 and "hits" in body, body
    status, body = call(gw, "GET", "stats", base="http://[::1]:%d" % gw.port)
    assert status == 200 and "hits" in body, body
    # [::] is every address, not loopback: the checks for network listeners apply.
    log = gateway_log(gw)
    assert "admin API answers loopback clients only" in log
    assert "without --client-credentials" in log


NS = "s3c-it-%d" % os.getpid()
HOST_IP, NS_IP = "10.203.%d.1" % (os.getpid() % 250), "10.203.%d.2" % (os.getpid() % 250)


@pytest.fixture
def netns():
    """A network namespace joined to this one by a veth pair (private addresses only):
    a client that is not on loopback, without leaving the machine."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2 to create a network namespace")
    veth = "s3cv%d" % (os.getpid() % 100000)

    def ip(*args, ns=False):
        cmd = (["ip", "netns", "exec", NS] if ns else []) + ["ip"] + list(args)
        subprocess.run(cmd, check=True, capture_output=True)

    try:
        ip("netns", "add", NS)
    except subprocess.CalledProcessError as e:
        pytest.skip("cannot create a network namespace here: %s" % e.stderr.decode().strip())
    try:
        ip("link", "add", veth, "type", "veth", "peer", "name", veth + "p")
        ip("link", "set", veth + "p", "netns", NS)
        ip("addr", "add", HOST_IP + "/30", "dev", veth)
        ip("link", "set", veth, "up")
        ip("addr", "add", NS_IP + "/30", "dev", veth + "p", ns=True)
        ip("link", "set", veth + "p", "up", ns=True)
        ip("link", "set", "lo", "up", ns=True)
        yield NS
    finally:
        subprocess.run(["ip", "link", "del", veth], capture_output=True)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def curl_in_ns(ns, url, token=None):
    cmd = ["ip", "netns", "exec", ns, "curl", "-sS", "-o", "-", "-w", "\n%{http_code}", url]
    if token:
        cmd[5:5] = ["-H", "Authorization: Bearer " + token]
    res = subprocess.run(cmd, capture_output=True, timeout=30)
    body, _, code = res.stdout.decode().rpartition("\n")
    return int(code or 0), body


def test_non_loopback_client_is_refused_without_token_and_admitted_with_it(upstream, gateway,
                                                                           netns):
    gw = gateway(upstream)
    gw.require_real()
    gw.stop()
    gw.listen_host = "0.0.0.0"
    gw.start()
    url = "http://%s:%d/_s3cached/stats" % (HOST_IP, gw.port)
    status, body = curl_in_ns(netns, url)
    assert status == 403, body
    assert json.loads(body)["error"] == "AccessDenied"
    assert "--admin-token" in json.loads(body)["message"]
    # The status page and its data are refused the same way (no token could help here).
    for path in ("", "index.html", "buckets"):
        status, body = curl_in_ns(netns, "http://%s:%d/_s3cached/%s" % (HOST_IP, gw.port, path))
        assert status == 403 and json.loads(body)["error"] == "AccessDenied", path

    gw.stop()
    gw.admin_token = TOKEN
    gw.start()
    assert curl_in_ns(netns, url)[0] == 401
    status, body = curl_in_ns(netns, url, token=TOKEN)
    assert status == 200 and "hits" in json.loads(body)
    page = "http://%s:%d/_s3cached/" % (HOST_IP, gw.port)
    status, body = curl_in_ns(netns, page)
    assert status == 401 and "<title>s3cached status</title>" in body  # the page asks for it
    assert curl_in_ns(netns, page, token=TOKEN)[0] == 200


def raw_admin(gw, method, path, headers):
    """An admin request with exactly these extra headers: (status, JSON body)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    body = b'{"bucket": "test", "keys": ["a"]}' if method == "POST" else None
    conn.request(method, "/_s3cached/" + path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, json.loads(data) if data else None


@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://evil.example"},
    {"Origin": "http://127.0.0.1:1"},
    {"Origin": "null"},  # sandboxed iframes, file: pages, some redirects: an opaque origin
    {"Host": "evil.example:8080"},
], ids=["cross-site", "same-site", "foreign-origin", "other-port-origin", "null-origin",
        "rebound-host"])
def test_browser_requests_from_other_sites_are_refused(upstream, gateway, headers):
    gw = gateway(upstream)
    gw.require_real()
    for method, path in (("POST", "manifests"), ("GET", "stats")):
        status, body = raw_admin(gw, method, path, dict(headers))
        assert status == 403 and body["error"] == "AccessDenied", (method, status, body)
    status, listed = call(gw, "GET", "manifests")
    assert status == 200 and listed["manifests"] == [], "a refused POST created a manifest"


def test_same_origin_browser_requests_and_plain_clients_are_answered(upstream, gateway):
    gw = gateway(upstream)
    gw.require_real()
    host = "127.0.0.1:%d" % gw.port
    for headers in ({}, {"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host},
                    {"Sec-Fetch-Site": "none"}, {"Host": "localhost:%d" % gw.port}):
        assert raw_admin(gw, "GET", "stats", headers)[0] == 200, headers


def test_with_a_token_any_host_name_is_answered_but_not_other_sites(upstream, gateway):
    gw = gateway(upstream, admin_token=TOKEN)
    gw.require_real()
    auth = {"Authorization": "Bearer " + TOKEN}
    assert raw_admin(gw, "GET", "stats", dict(auth, Host="s3cached.ml.svc:8080"))[0] == 200
    assert raw_admin(gw, "GET", "stats", dict(auth, Origin="http://evil.example"))[0] == 403
