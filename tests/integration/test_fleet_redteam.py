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
