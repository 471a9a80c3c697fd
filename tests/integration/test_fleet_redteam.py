"""Adversarial checks of the fleet (issue 13): what a peer request signs against what the
gateway that answers it uses, and what a client or an eavesdropper can make of fleet headers.

Real gateways over s3rver (harness/fleet.py); the test plays the peer or the attacker with
test_fleet.py's signing helpers, byte for byte.
"""
import pytest

from harness import s3util
from test_fleet import (KiB, assert_refused, peer_get, put, secret_of, send,  # noqa: F401
                        sign, target_of)

VHOST = "s3.redteam.test"


def test_a_signed_peer_request_cannot_be_turned_to_another_bucket_by_its_host(s3rver, make_fleet):
    """The fleet signature covers the path, not the Host header. With --vhost-domain a Host of
    "<bucket>.<domain>" names the bucket and the whole path becomes the key: a signed (or
    replayed) peer request for /B/K would then read object "B/K" of the Host's bucket, which no
    peer asked for. Peers ask path-style only (fleet.h), so a peer request whose Host names a
    bucket must be refused, or at least answer the object signed."""
    fleet = make_fleet(s3rver, extra_args=["--vhost-domain", VHOST])
    key = s3util.unique_key("fleet-vhost")
    signed_body = s3util.data(4 * KiB, seed=key)
    other_body = s3util.data(4 * KiB, seed=key + "-other")
    put(s3rver, key, signed_body)
    put(s3rver, "%s/%s" % (s3rver.bucket, key), other_body)  # what the retargeted path names
    target = target_of(s3rver, key)
    secret = secret_of(fleet)
    for port in (fleet.peer_ports[0], fleet[0].port):
        headers = sign(secret, "GET", target, "gateway")
        headers["Host"] = "%s.%s" % (s3rver.bucket, VHOST)
        status, hdrs, body = send(port, "GET", target, headers)
        assert body != other_body, "a signed peer request for %s read another object" % target
        if status == 200:
            assert body == signed_body
        else:
            assert_refused((status, hdrs, body), "a peer request addressed by its Host")


# ---- a bucket's error is not a peer's failure -----------------------------------------------

def test_a_buckets_5xx_for_one_object_does_not_put_its_owner_down(gateway):
    """The owner relays the bucket's answer; a 503 SlowDown (or 500) the bucket gives for one
    object is the bucket's, the owner is healthy. Today the asker reads any 5xx from a peer as
    the peer failing (upstream.c peer_head_failed) and marks it down: one client reading one
    throttled or broken object takes a healthy gateway out of the fleet for every name (its
    backoff doubling on each read), and the fleet's generation changes (replanning).
    The bucket is the fault-injecting fake (harness/faulty_upstream.py): s3rver cannot answer
    503 on cue; the gateways are real."""
    from harness import faulty_upstream as faults
    from harness.fleet import Fleet
    from harness import rawhttp
    from test_fleet import metrics
    fake = faults.FaultyUpstream(bucket="test").start()
    fleet = None
    try:
        fake.put("bad", s3util.data(4 * KiB, seed="bad"), faults.slowdown(times=10 ** 6))
        fleet = Fleet(gateway, fake.upstream(), n=2)
        for g in fleet.gateways:
            g.require_real()
        for g in fleet.gateways:  # one of them is not the owner: it asks the owner first
            r = rawhttp.get(g.endpoint, s3util.object_path(g, "bad"))
            assert r.status == 503, r.status
        for i, g in enumerate(fleet.gateways):
            other = fleet.urls[1 - i]
            text = metrics(g)
            assert 's3cached_peer_up{peer="%s"} 1' % other in text, (
                "gateway %d marked the healthy peer %s down for the bucket's 503" % (i, other))
    finally:
        if fleet is not None:
            fleet.close()
        fake.stop()


# ---- resume edge cases ------------------------------------------------------------------------

@pytest.mark.parametrize("cut", [0, 1])
def test_a_peer_dying_right_after_its_head_is_resumed_from_the_first_byte(gateway, tmp_path, cut):
    """The peer sends its head (200, Content-Length, ETag) and dies after `cut` body bytes:
    the rest comes from the bucket (Range from the next byte, If-Match), the client gets the
    exact object. The peer is the fault-injecting fake (a real gateway cannot be made to die
    on cue); the bucket is a second fake with the same bytes, as in test_fleet_path.py."""
    import hashlib
    from harness import faulty_upstream as faults
    from test_fleet_path import asked_of, assert_exact, fleet_member, put_both, N_KEYS
    peer = faults.FaultyUpstream(bucket="test").start()
    bucket = faults.FaultyUpstream(bucket="test").start()
    try:
        size = 64 * KiB
        keys = ["edge%d/%02d" % (cut, i) for i in range(N_KEYS)]
        bodies = put_both(peer, bucket, keys, size, faults.truncated(after=cut))
        gw = fleet_member(gateway, bucket, peer.endpoint, tmp_path)
        for k in keys:
            assert_exact(gw, k, bodies[k])
        resumed = [k for k in keys if asked_of(peer, k)]
        assert resumed, "no name was asked of the peer"
        for k in resumed:
            rest = bucket.request_headers(k)[-1]
            assert rest["range"] == "bytes=%d-%d" % (cut, size - 1), rest
            assert rest["if-match"] == '"%s"' % hashlib.md5(bodies[k]).hexdigest(), rest
    finally:
        peer.stop()
        bucket.stop()


def test_peers_whose_names_lie_under_the_vhost_domain_read_path_style(s3rver, gateway, tmp_path):
    """A peer's Host is its own name (curl sends the peer URL's host). When that name lies
    under --vhost-domain (a StatefulSet's pod names under the domain clients use for
    virtual-hosted buckets; here peers on 127.0.0.2 under the domain "0.0.2", clients on
    127.0.0.1), the owner took the Host's first label for the bucket ("127") and the whole path
    for the key: every peer miss asked the wrong bucket (a 404 relayed to the client as the
    bucket's answer)."""
    from harness import proc
    from test_fleet import metrics
    from test_fleet_path import secret_file
    n = 3
    peer_ports = [proc.free_port() for _ in range(n)]
    urls = ["http://127.0.0.2:%d" % p for p in peer_ports]
    secret = secret_file(tmp_path)
    gws = []
    for i in range(n):
        g = gateway(s3rver, extra_args=[
            "--vhost-domain", "0.0.2", "--peers", ",".join(urls), "--self", urls[i],
            "--fleet-listen", "127.0.0.2:%d" % peer_ports[i], "--fleet-secret-file", secret])
        g.require_real()
        gws.append(g)
    keys = [s3util.unique_key("fleet-vhost-peer") for _ in range(12)]
    for k in keys:
        put(s3rver, k, s3util.data(4 * KiB, seed=k))
    for g in gws:
        c = g.client()
        for k in keys:
            assert c.get_object(Bucket=s3rver.bucket, Key=k)["Body"].read() == \
                s3util.data(4 * KiB, seed=k), k
    for i, g in enumerate(gws):
        text = metrics(g)
        for url in urls:
            if url != urls[i]:
                assert 's3cached_peer_up{peer="%s"} 1' % url in text, (i, url)
