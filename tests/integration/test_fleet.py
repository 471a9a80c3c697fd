"""Peer requests on the gateway side (issue 13): who may speak as a peer, on which listener,
with which identity, and what a gateway does with a peer's miss.

Three gateways on loopback form a fleet (harness/fleet.py: each its own client port and peer
port, --fleet-listen, a shared 0600 secret file). The test itself plays a peer: it signs
requests as fleet/fleet.h says (HMAC-SHA256 with the fleet secret over the method, the path
and query as sent, the identity, Range, If-Match and the date, joined by newlines) and sends
them with http.client, byte for byte as written here.
"""
import hashlib
import hmac
import http.client
import time
import urllib.parse
import urllib.request
import uuid

import botocore.exceptions
import pytest

from harness import proc
from harness import s3util
from test_metrics import scrape

KiB = 1024
REFUSED = "x-s3cached-fleet-refused"
AK, SK = "it-fleet-client", "it-fleet-client-secret"


def secret_of(fleet):
    with open(fleet.secret_file, "rb") as f:
        return f.readline().rstrip(b"\r\n")


def sign(secret, method, target, identity, rng=None, if_match=None, date=None):
    """The fleet headers of a peer request for target ("/bucket/key?query")."""
    date = int(time.time()) if date is None else date
    path, _, query = target.partition("?")
    text = "\n".join([method, path, query, identity, rng or "", if_match or "", str(date)])
    sig = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
    return {"x-s3cached-fleet-date": str(date), "x-s3cached-fleet-identity": identity,
            "x-s3cached-fleet-signature": sig}


def send(port, method, target, headers):
    """(status, lower-cased headers, body) of one request to 127.0.0.1:port, sent as given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, target, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def peer_get(port, secret, target, identity="gateway", method="GET", extra=None, **kw):
    headers = dict(extra or {})
    headers.update(sign(secret, method, target, identity, rng=headers.get("Range"), **kw))
    return send(port, method, target, headers)


def put(up, key, body):
    s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)


def target_of(up, key):
    return "/%s/%s" % (up.bucket, urllib.parse.quote(key))


def metrics(gw):
    with urllib.request.urlopen(gw.endpoint + "/metrics", timeout=10) as r:
        return r.read().decode()


def metric(gw, name):
    for line in metrics(gw).splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no %s in /metrics" % name)


def assert_refused(res, why):
    status, headers, body = res
    assert status == 403, (why, status, body[:300])
    assert headers.get(REFUSED) == "true", (why, headers)
    assert b"AccessDenied" in body, (why, body[:300])


# ---- who may speak as a peer -----------------------------------------------------------------

def test_peer_requests_are_refused_without_a_good_signature_on_both_listeners(upstream,
                                                                              make_fleet):
    fleet = make_fleet(upstream)
    key = s3util.unique_key("fleet-sig")
    body = s3util.data(20 * KiB, seed=key)
    put(upstream, key, body)
    secret, target = secret_of(fleet), target_of(upstream, key)
    g = fleet[0]
    refused_before = metric(g, "s3cached_peer_requests_refused_total")
    for port in (g.port, fleet.peer_ports[0]):
        now = int(time.time())
        good = sign(secret, "GET", target, "gateway", date=now)
        no_sig = {k: v for k, v in good.items() if k != "x-s3cached-fleet-signature"}
        assert_refused(send(port, "GET", target, no_sig), "no signature")
        other = sign(b"another-secret-0123456789abcdef", "GET", target, "gateway", date=now)
        assert_refused(send(port, "GET", target, other), "another secret")
        stale = sign(secret, "GET", target, "gateway", date=now - 3600)
        assert_refused(send(port, "GET", target, stale), "an hour old")
        moved = sign(secret, "GET", target + "x", "gateway", date=now)  # signed for another key
        assert_refused(send(port, "GET", target, moved), "another path")
        ranged = dict(good, Range="bytes=0-99")  # a Range the signature does not cover
        assert_refused(send(port, "GET", target, ranged), "an unsigned Range")
        bad_date = dict(good, **{"x-s3cached-fleet-date": "%d.0" % now})
        assert_refused(send(port, "GET", target, bad_date), "a malformed date")
        # identities this gateway (no --client-credentials) cannot hold to the bucket's rights
        assert_refused(peer_get(port, secret, target, identity="anonymous"), "anonymous")
        assert_refused(peer_get(port, secret, target, identity="key:" + upstream.access_key),
                       "a key")
        status, headers, got = send(port, "GET", target, good)
        assert status == 200 and got == body, (port, status, got[:200])
        assert REFUSED not in headers
        assert not any(k.startswith("x-s3cached-fleet") for k in headers), headers
    assert metric(g, "s3cached_peer_requests_refused_total") - refused_before == 16
    # a plain client request on the main listener is still a client's
    c = g.client()
    assert c.get_object(Bucket=upstream.bucket, Key=key)["Body"].read() == body


def test_peers_may_only_read_objects(s3rver, make_fleet):
    fleet = make_fleet(s3rver)
    key = s3util.unique_key("fleet-verbs")
    body = s3util.data(4 * KiB, seed=key)
    put(s3rver, key, body)
    secret, target = secret_of(fleet), target_of(s3rver, key)
    port = fleet.peer_ports[1]
    status, headers, _ = peer_get(port, secret, target, method="HEAD")
    assert status == 200 and headers["content-length"] == str(len(body))
    for method, t in (("PUT", target), ("DELETE", target), ("POST", target + "?uploads"),
                      ("GET", "/%s" % s3rver.bucket), ("GET", "/"),
                      ("GET", "/_s3cached/stats"), ("GET", target + "?acl")):
        assert_refused(peer_get(port, secret, t, method=method,
                                extra={"Content-Length": "0"} if method in ("PUT", "POST")
                                else None), "%s %s" % (method, t))
    got = s3util.upstream_client(s3rver).get_object(Bucket=s3rver.bucket, Key=key)
    assert got["Body"].read() == body  # nothing was written or deleted


def test_the_peer_listener_answers_signed_peer_requests_only(s3rver, make_fleet):
    fleet = make_fleet(s3rver)
    key = s3util.unique_key("fleet-listener")
    body = s3util.data(4 * KiB, seed=key)
    put(s3rver, key, body)
    port = fleet.peer_ports[2]
    for target in ("/healthz", "/readyz", "/metrics", "/_s3cached/", "/_s3cached/stats",
                   target_of(s3rver, key), "/%s" % s3rver.bucket):
        assert_refused(send(port, "GET", target, {}), target)
    # a client's SigV4-signed read, as good as it is on the main listener, is not a peer's
    peer_client = s3util.client("http://127.0.0.1:%d" % port, s3rver.access_key,
                                s3rver.secret_key)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        peer_client.get_object(Bucket=s3rver.bucket, Key=key)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"].get(REFUSED) == "true"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        peer_client.put_object(Bucket=s3rver.bucket, Key=key, Body=b"overwritten")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # the same requests on the main listener are answered as usual
    g = fleet[2]
    assert proc.http_status(g.endpoint + "/readyz") == 200
    assert g.client().get_object(Bucket=s3rver.bucket, Key=key)["Body"].read() == body
    status, _, got = peer_get(port, secret_of(fleet), target_of(s3rver, key))
    assert status == 200 and got == body


def test_a_client_cannot_smuggle_fleet_headers(s3rver, make_fleet):
    """A client that adds fleet headers to a request it signed with its own key (or to none)
    is refused: it cannot take the gateway's identity, nor another client's, without the
    fleet secret. Without them its request is served as its own."""
    other_ak, other_sk = "it-fleet-other", "it-fleet-other-secret"
    fleet = make_fleet(s3rver, client_keys=[
        {"access_key": AK, "secret_key": SK, "buckets": ["no-such-bucket"]},
        {"access_key": other_ak, "secret_key": other_sk}],
        extra_args=["--allow-anonymous"])
    key = s3util.unique_key("fleet-smuggle")
    body = s3util.data(4 * KiB, seed=key)
    put(s3rver, key, body)
    g = fleet[0]
    c = s3util.client(g.endpoint, AK, SK)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        c.get_object(Bucket=s3rver.bucket, Key=key)  # its bucket list refuses this bucket
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert REFUSED not in e.value.response["ResponseMetadata"]["HTTPHeaders"]
    for smuggled in ({"x-s3cached-fleet-identity": "gateway"},
                     {"x-s3cached-fleet-identity": "key:" + other_ak},
                     {"x-s3cached-fleet-identity": "gateway",
                      "x-s3cached-fleet-date": str(int(time.time())),
                      "x-s3cached-fleet-signature": "0" * 64},
                     {"x-s3cached-fleet-date": str(int(time.time()))}):
        def add(request, **_):
            for k, v in smuggled.items():
                request.headers[k] = v
        c = s3util.client(g.endpoint, AK, SK)
        c.meta.events.register("before-sign.s3.GetObject", add)
        with pytest.raises(botocore.exceptions.ClientError) as e:
            c.get_object(Bucket=s3rver.bucket, Key=key)
        meta = e.value.response["ResponseMetadata"]
        assert meta["HTTPStatusCode"] == 403 and meta["HTTPHeaders"].get(REFUSED) == "true", (
            smuggled, meta)
        # unsigned (an anonymous client), on both listeners
        for port in (g.port, fleet.peer_ports[0]):
            assert_refused(send(port, "GET", target_of(s3rver, key), smuggled), smuggled)
    # signed by a peer, a key is refused here: --identity gateway would read it with the
    # gateway's credentials; anonymous is checked (--allow-anonymous) and served
    secret, target = secret_of(fleet), target_of(s3rver, key)
    assert_refused(peer_get(fleet.peer_ports[0], secret, target, identity="key:" + other_ak),
                   "a key where the gateway signs as itself")
    status, _, got = peer_get(fleet.peer_ports[0], secret, target, identity="anonymous")
    assert status == 200 and got == body, status
    # the other key, which may read the bucket, reads it as itself
    c = s3util.client(g.endpoint, other_ak, other_sk)
    assert c.get_object(Bucket=s3rver.bucket, Key=key)["Body"].read() == body


# ---- identity across the fleet ---------------------------------------------------------------

def radosgw_user(radosgw, name):
    uid = "it-%s-%s" % (name, uuid.uuid4().hex[:6])
    ak, sk = "AK" + uuid.uuid4().hex[:16].upper(), "SK" + uuid.uuid4().hex
    radosgw.admin.create_user(uid, ak, sk)
    return ak, sk


def test_identity_client_holds_across_peers(radosgw, make_fleet):
    """--identity client on every gateway: a key the bucket refuses is refused through any
    gateway, and as a peer's identity on any gateway, even where the object is cached; the
    bucket's owner reads through all of them; a key a gateway does not know is refused."""
    stranger_ak, stranger_sk = radosgw_user(radosgw, "fleet-stranger")
    owner = {"access_key": radosgw.access_key, "secret_key": radosgw.secret_key}
    stranger = {"access_key": stranger_ak, "secret_key": stranger_sk}
    fleet = make_fleet(radosgw, client_keys=[owner, stranger],
                       extra_args=["--identity", "client", "--auth-cache-ttl", "0"])
    key = s3util.unique_key("fleet-identity")
    body = s3util.data(30 * KiB, seed=key)
    put(radosgw, key, body)
    secret, target = secret_of(fleet), target_of(radosgw, key)
    for g in fleet.gateways:  # the owner reads through every gateway: cached somewhere now
        c = s3util.client(g.endpoint, radosgw.access_key, radosgw.secret_key)
        assert c.get_object(Bucket=radosgw.bucket, Key=key)["Body"].read() == body
    for i, g in enumerate(fleet.gateways):
        c = s3util.client(g.endpoint, stranger_ak, stranger_sk)
        with pytest.raises(botocore.exceptions.ClientError) as e:
            c.get_object(Bucket=radosgw.bucket, Key=key)
        assert e.value.response["Error"]["Code"] == "AccessDenied", (i, e.value.response)
        # as a peer's identity: the bucket's refusal, not the fleet's (no FLEET_H_REFUSED)
        status, headers, _ = peer_get(fleet.peer_ports[i], secret, target,
                                      identity="key:" + stranger_ak)
        assert status == 403 and REFUSED not in headers, (i, status, headers)
        status, _, got = peer_get(fleet.peer_ports[i], secret, target,
                                  identity="key:" + radosgw.access_key)
        assert status == 200 and got == body, (i, status)
        assert_refused(peer_get(fleet.peer_ports[i], secret, target, identity="key:AKNOBODY"),
                       "a key no gateway knows")
        assert_refused(peer_get(fleet.peer_ports[i], secret, target, identity="root"),
                       "an identity that is none")


# ---- a peer's miss ---------------------------------------------------------------------------

def test_only_the_owner_caches_a_name_peers_ask(upstream, make_fleet):
    """A peer request that misses is filled (and cached) by the gateway that owns its name;
    any other gateway passes it to the bucket uncached."""
    fleet = make_fleet(upstream)
    secret = secret_of(fleet)
    prefix = s3util.unique_key("fleet-owner")
    owners = []
    for n in range(12):
        key = "%s/%02d" % (prefix, n)
        body = s3util.data(3 * KiB, seed=key)
        put(upstream, key, body)
        first = []
        for port in fleet.peer_ports:
            status, headers, got = peer_get(port, secret, target_of(upstream, key))
            assert status == 200 and got == body
            first.append(headers.get("x-cache"))
        assert sorted(first) == ["BYPASS", "BYPASS", "MISS"], (key, first)
        owner = first.index("MISS")
        owners.append(owner)
        status, headers, got = peer_get(fleet.peer_ports[owner], secret,
                                        target_of(upstream, key))
        assert status == 200 and got == body and headers.get("x-cache") == "HIT", headers
    assert len(set(owners)) > 1, owners  # rendezvous spreads the names
    # the bucket got one GET from each gateway asked (the owner's fill, the others' passes),
    # and never a fleet header
    assert len(fleet.upstream_gets(prefix)) == 3 * 12, fleet.upstream_gets(prefix)
    with fleet.proxy.lock:
        sent = [bytes(b).lower() for b in fleet.proxy.sent]
    assert sent and not any(b"x-s3cached-fleet" in b for b in sent)
    passed = sum(metric(g, "s3cached_peer_requests_passed_total") for g in fleet.gateways)
    assert passed == 24
    held = [g.stats_when(lambda st: st["objects"] >= owners.count(i))["objects"]
            for i, g in enumerate(fleet.gateways)]
    assert held == [owners.count(i) for i in range(len(fleet))], (held, owners)


# ---- what the fleet shows, and what it never decides ------------------------------------------

def test_metrics_and_stats_show_the_fleet(s3rver, make_fleet):
    fleet = make_fleet(s3rver)
    g = fleet[1]
    st = g.stats()["fleet"]
    assert st["self"] == fleet.urls[1] and st["copy"] == "none"
    assert sorted(p["url"] for p in st["peers"]) == sorted(fleet.urls)
    assert [p["url"] for p in st["peers"] if p["self"]] == [fleet.urls[1]]
    assert all(p["state"] == "up" for p in st["peers"])
    samples = scrape(g)  # every line well formed, every counter named *_total
    assert samples[("s3cached_peer_up", frozenset({("peer", fleet.urls[0])}))] == 1
    text = metrics(g)
    for url in fleet.urls:
        line = 's3cached_peer_up{peer="%s"} 1' % url
        assert (line in text) == (url != fleet.urls[1]), (url, text[-2000:])
        for name in ("s3cached_peer_requests_total", "s3cached_peer_errors_total",
                     "s3cached_peer_bytes_total", "s3cached_peer_seconds_total"):
            assert ('%s{peer="%s"}' % (name, url) in text) == (url != fleet.urls[1]), name


def test_a_gateway_alone_shows_no_fleet(s3rver, gateway):
    g = gateway(s3rver)
    g.require_real()
    assert g.stats()["fleet"] is None
    assert "s3cached_peer_up" not in metrics(g)


def test_readyz_never_depends_on_peers(s3rver, gateway, tmp_path):
    """Two of three peers that never answer (nothing listens there): every read succeeds from
    the bucket, every request to a dead peer fails, and /readyz stays 200 throughout."""
    secret = tmp_path / "fleet-secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    secret.chmod(0o600)
    me, dead = proc.free_port(), [proc.free_port(), proc.free_port()]
    urls = ["http://127.0.0.1:%d" % p for p in [me] + dead]
    g = gateway(s3rver, port=me, extra_args=[
        "--peers", ",".join(urls), "--self", urls[0], "--fleet-secret-file", str(secret),
        "--peer-timeout", "20"])
    g.require_real()
    prefix = s3util.unique_key("fleet-ready")
    c = g.client()
    for n in range(30):
        key = "%s/%02d" % (prefix, n)
        body = s3util.data(2 * KiB, seed=key)
        put(s3rver, key, body)
        assert c.get_object(Bucket=s3rver.bucket, Key=key)["Body"].read() == body
        assert proc.http_status(g.endpoint + "/readyz") == 200
    st = g.stats()["fleet"]
    failed = [p for p in st["peers"] if not p["self"] and p["errors"] > 0]
    assert failed, st  # the dead peers were asked, and failed (each time: down, then back)
    assert all(p["errors"] == p["requests"] and p["bytes"] == 0 for p in failed), st
    assert proc.http_status(g.endpoint + "/readyz") == 200
    assert proc.http_status(g.endpoint + "/healthz") == 200


def test_a_fleet_needs_its_secret_file_checked(s3rver, tmp_path):
    """The gateway does not start with a fleet secret file that others may write, or without
    one; the secret never reaches the log."""
    from harness import gateway as gwmod
    secret = tmp_path / "fleet-secret"
    text = "do-not-log-me-0123456789abcdef"
    secret.write_text(text + "\n")
    secret.chmod(0o666)
    base = [gwmod.binary(), "--listen", "127.0.0.1:%d" % proc.free_port(), "--upstream",
            s3rver.endpoint, "--cache-dir", str(tmp_path / "cache"),
            "--peers", "http://127.0.0.1:1,http://127.0.0.1:2", "--self", "http://127.0.0.1:1"]
    import subprocess
    for extra, want in ((["--fleet-secret-file", str(secret)], "writable by group or others"),
                        ([], "--fleet-secret-file")):
        r = subprocess.run(base + extra, capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and want in r.stderr, (r.returncode, r.stderr)
        assert text not in r.stderr + r.stdout


def test_a_peer_reading_range_after_range_starts_no_read_ahead(s3rver, gateway, tmp_path):
    """Read-ahead is the asking gateway's, for its own reader: the blocks a peer asks for one
    after the other are fetched, and none beyond them; a client reading the same way gets the
    blocks after its range fetched ahead (the control). A fleet of one: it owns every name."""
    secret = tmp_path / "fleet-secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    secret.chmod(0o600)
    MiB = 1024 * KiB
    me = proc.free_port()
    url = "http://127.0.0.1:%d" % me
    g = gateway(s3rver, port=me, extra_args=[
        "--peers", url, "--self", url, "--fleet-secret-file", str(secret),
        "--block-size", "1M", "--fetch-parallelism", "2"])
    g.require_real()
    fetched = []
    for who in ("peer", "client"):
        key = s3util.unique_key("fleet-ahead-" + who)
        body = s3util.data(16 * MiB, seed=key)
        put(s3rver, key, body)
        before = g.stats()["block_fetches"]
        for b in range(4):
            rng = "bytes=%d-%d" % (b * MiB, (b + 1) * MiB - 1)
            if who == "peer":
                status, _, got = peer_get(me, secret.read_bytes().strip(), target_of(s3rver, key),
                                          extra={"Range": rng})
            else:
                status, _, got = send(me, "GET", target_of(s3rver, key), {"Range": rng})
            assert status == 206 and got == body[b * MiB:(b + 1) * MiB], (who, b, status)
        time.sleep(0.5)  # fetches started ahead are counted as they start
        fetched.append(g.stats()["block_fetches"] - before)
    peer, client = fetched
    assert peer == 4, fetched
    assert client > 4, fetched
