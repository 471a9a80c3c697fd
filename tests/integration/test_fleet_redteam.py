"""Adversarial checks of the fleet (issue 13): what a peer request signs against what the
gateway that answers it uses, and what a client or an eavesdropper can make of fleet headers.

Real gateways over s3rver (harness/fleet.py); the test plays the peer or the attacker with
test_fleet.py's signing helpers, byte for byte.
"""
import pytest

from harness import s3util
from test_fleet import (KiB, assert_refused, make_fleet, peer_get, put, secret_of, send,  # noqa: F401
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
