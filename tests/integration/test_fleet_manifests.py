"""Manifests on a fleet (issue 13, docs/fleet.md): a registration posted to any gateway is
forwarded to every peer, each gateway warms the names it owns, progress is the fleet's on any
gateway, ranks registered on different gateways join one job everywhere, a withdrawal through
any gateway withdraws everywhere, and a forwarded registration is never forwarded again.

Three gateways on loopback (harness/fleet.py), real upstreams; the counting proxy in front of
the bucket sees every request the fleet sends it.
"""
import time
import urllib.request

from harness import s3util
from test_fleet_cache import seed
from test_manifests import api

OBJECTS = 300  # 8 KiB each: the dataset fits every gateway's cache many times over


def wait_for(what, check, timeout=60):
    """Polls check() until it returns something true; returns it, or fails naming what."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError("%s never happened (last: %r)" % (what, last))


def progress(gw, mid):
    status, prog, _ = api(gw, "GET", "manifests/" + mid)
    return prog if status == 200 else None


def registrations(gw, source):
    with urllib.request.urlopen(gw.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    want = 's3cached_manifest_registrations_total{from="%s"} ' % source
    for line in text.splitlines():
        if line.startswith(want):
            return int(line.rsplit(" ", 1)[1])
    raise AssertionError("no %s in /metrics" % want)


def known_everywhere(fleet, mid):
    return all(progress(g, mid) is not None for g in fleet.gateways)


def register_everywhere(fleet, upstream, bodies):
    """Registers bodies' keys through gateway 0 and waits until every gateway holds the
    registration; returns its id."""
    mid = register_keys(fleet[0], upstream, bodies)["id"]
    wait_for("the registration on every gateway", lambda: known_everywhere(fleet, mid))
    return mid


def test_manifest_posted_to_one_gateway_warms_the_dataset_once_over_the_fleet(upstream,
                                                                             make_fleet):
    prefix = s3util.unique_key("fleet-mf-warm")
    bodies = seed(upstream, prefix, n=OBJECTS)
    fleet = make_fleet(upstream)
    status, reply, _ = api(fleet[0], "POST", "manifests",
                           {"bucket": upstream.bucket, "keys": sorted(bodies)})
    assert status == 201, reply
    mid = reply["id"]

    # Progress asked of gateway 2, which never saw the POST, reaches the whole dataset.
    def fleet_warm():
        prog = progress(fleet[2], mid)
        f = prog and prog.get("fleet")
        return f if f and f["reporting"] == 3 and f["objects_cached"] == OBJECTS else None

    total = wait_for("the fleet's progress reaching the dataset on gateway 2", fleet_warm)
    assert total["gateways"] == 3 and total["objects_total"] == OBJECTS, total
    assert total["objects_failed"] == 0, total
    assert total["bytes_cached"] == OBJECTS * 8 * 1024, total
    assert all(p["reporting"] for p in total["peers"]), total

    # Each object came from the bucket exactly once, for the whole fleet.
    gets = fleet.upstream_gets(prefix)
    assert sorted(t.split("/", 2)[2] for t in gets) == sorted(bodies), len(gets)
    # Each gateway warmed its own share: about a third of the dataset.
    held = [g.stats()["objects"] for g in fleet.gateways]
    assert sum(held) == OBJECTS, held
    assert all(OBJECTS * 0.2 <= h <= OBJECTS * 0.47 for h in held), held
    # What gateway 2 says of itself is its share, not the fleet's.
    own = progress(fleet[2], mid)
    assert own["objects_cached"] < OBJECTS, own


def test_ranks_registered_on_three_gateways_form_one_job_on_each(upstream, make_fleet):
    prefix = s3util.unique_key("fleet-mf-ranks")
    seed(upstream, prefix, n=30)
    fleet = make_fleet(upstream)
    ids = []
    for rank in range(3):  # a trainer on each of 3 nodes registers its own rank
        status, reply, _ = api(fleet[rank], "POST", "manifests", {
            "bucket": upstream.bucket, "prefix": prefix + "/", "num_epochs": 2,
            "shuffle": True, "seed": 7, "world_size": 3, "rank": rank, "prefetch": False})
        assert status == 201, reply
        ids.append(reply["id"])
    assert len(set(ids)) == 3, ids  # fleet-unique ids

    for g in fleet.gateways:
        def one_job_of_three_ranks(g=g):
            _, listing, _ = api(g, "GET", "manifests")
            jobs = listing["manifests"]
            ok = len(jobs) == 1 and jobs[0]["sampling"]["ranks"] == [0, 1, 2]
            return jobs if ok else None

        jobs = wait_for("one job of ranks 0, 1, 2 on %s" % g.endpoint, one_job_of_three_ranks)
        # Every registration's id answers on every gateway, for that one job.
        for mid in ids:
            prog = progress(g, mid)
            assert prog is not None and prog["job"] == jobs[0]["id"], (mid, prog)


def register_keys(g, up, bodies):
    """Registers a manifest of bodies' keys (no prefetch) on gateway g; returns the reply."""
    status, reply, _ = api(g, "POST", "manifests",
                           {"bucket": up.bucket, "keys": sorted(bodies), "prefetch": False})
    assert status == 201, reply
    return reply


def test_withdrawal_through_any_gateway_withdraws_everywhere(upstream, make_fleet):
    prefix = s3util.unique_key("fleet-mf-del")
    bodies = seed(upstream, prefix, n=20)
    fleet = make_fleet(upstream)
    mid = register_everywhere(fleet, upstream, bodies)

    status, gone, _ = api(fleet[1], "DELETE", "manifests/" + mid)  # not where it was posted
    assert status == 200 and gone["state"] == "canceled", gone

    def withdrawn_everywhere():
        return all(progress(g, mid) is None and api(g, "GET", "manifests")[1]["manifests"] == []
                   for g in fleet.gateways)

    wait_for("the withdrawal on every gateway", withdrawn_everywhere)


def test_a_forwarded_registration_is_not_forwarded_again(upstream, make_fleet):
    prefix = s3util.unique_key("fleet-mf-storm")
    bodies = seed(upstream, prefix, n=20)
    fleet = make_fleet(upstream)
    reply = register_keys(fleet[1], upstream, bodies)
    wait_for("the registration on every gateway", lambda: known_everywhere(fleet, reply["id"]))
    time.sleep(3)  # what a peer would forward again has arrived by now
    assert [registrations(g, "client") for g in fleet.gateways] == [0, 1, 0]
    assert [registrations(g, "peer") for g in fleet.gateways] == [1, 0, 1]


def test_progress_says_which_peer_did_not_report(upstream, make_fleet):
    prefix = s3util.unique_key("fleet-mf-gone")
    bodies = seed(upstream, prefix, n=20)
    fleet = make_fleet(upstream)
    reply = register_keys(fleet[0], upstream, bodies)
    mid = reply["id"]

    def reporting(k):
        def check():
            f = (progress(fleet[0], mid) or {}).get("fleet")
            return f if f and f["reporting"] == k else None
        return check

    wait_for("every gateway reporting", reporting(3))
    fleet[2].stop(kill=True)
    f = wait_for("gateway 2 missing from the sums", reporting(2))
    assert f["gateways"] == 3, f
    gone = [p for p in f["peers"] if p["url"] == fleet.urls[2]]
    assert len(gone) == 1 and not gone[0]["reporting"], f
    assert gone[0]["why"] in ("down", "no answer"), f


def test_a_gateway_down_at_a_registration_gets_it_when_it_returns(upstream, make_fleet):
    """The registration is sent once to the peers up at the time; the gateway it was posted to
    sends it again to one that did not have it (down then, or joined since)."""
    prefix = s3util.unique_key("fleet-mf-late")
    bodies = seed(upstream, prefix, n=20)
    fleet = make_fleet(upstream)
    fleet[2].stop(kill=True)
    reply = register_keys(fleet[0], upstream, bodies)
    mid = reply["id"]
    wait_for("the registration on gateway 1", lambda: progress(fleet[1], mid))
    fleet[2].start()
    prog = wait_for("the registration on the returned gateway 2", lambda: progress(fleet[2], mid))
    assert prog["id"] == mid and prog["objects_total"] == 20, prog
    assert registrations(fleet[2], "peer") == 1  # sent again once, by its origin alone

    def every_gateway_reports():
        f = (progress(fleet[1], mid) or {}).get("fleet")
        return f if f and f["reporting"] == 3 else None

    wait_for("gateway 2 in the fleet's progress asked of gateway 1", every_gateway_reports)


def test_a_gateway_down_at_a_withdrawal_drops_it_when_it_returns(upstream, make_fleet):
    """Gateway 2 keeps the registration in its cache directory across its restart; the
    withdrawal it missed is learnt from the origin, which no longer has it."""
    prefix = s3util.unique_key("fleet-mf-gone-while-down")
    bodies = seed(upstream, prefix, n=20)
    fleet = make_fleet(upstream)
    mid = register_everywhere(fleet, upstream, bodies)
    fleet[2].stop(kill=True)
    status, gone, _ = api(fleet[1], "DELETE", "manifests/" + mid)
    assert status == 200 and gone["state"] == "canceled", gone
    wait_for("the withdrawal on gateways 0 and 1",
             lambda: progress(fleet[0], mid) is None and progress(fleet[1], mid) is None)
    fleet[2].start()
    assert "manifest %s registered again" % mid in fleet[2].log_tails(1000)  # from its disk
    wait_for("the withdrawal on the returned gateway 2",
             lambda: progress(fleet[2], mid) is None
             and api(fleet[2], "GET", "manifests")[1]["manifests"] == [])
    # The origin does not send it back: it stays withdrawn everywhere.
    time.sleep(2 * 3 + 1)
    assert [progress(g, mid) for g in fleet.gateways] == [None, None, None]


def test_a_manifest_over_a_mib_registers_on_a_fleet(upstream, make_fleet):
    """A body over 1 MiB is parsed by the registrar thread. On a fleet, handing it over used to
    wait for the fleet thread to end (which it does only at shutdown): the POST never got an
    answer, and every later registration waited behind it."""
    prefix = s3util.unique_key("fleet-mf-big")
    bodies = seed(upstream, prefix, n=5)
    fleet = make_fleet(upstream)
    keys = sorted(bodies) + ["%s/never-read/%07d-%s" % (prefix, i, "x" * 20)
                             for i in range(30000)]  # about 1.6 MB of JSON
    status, reply, _ = api(fleet[0], "POST", "manifests",
                           {"bucket": upstream.bucket, "keys": keys, "prefetch": False})
    assert status in (201, 202), reply
    mid = reply["id"]
    wait_for("the large registration on every gateway", lambda: known_everywhere(fleet, mid))
    small = register_keys(fleet[0], upstream, bodies)  # the registry is not stuck
    wait_for("a later registration on every gateway",
             lambda: known_everywhere(fleet, small["id"]))


def test_an_id_is_never_given_twice_even_after_a_withdrawal_and_a_restart(upstream,
                                                                          make_fleet):
    """Mending compares ids: a withdrawn registration's id given again to another body (after
    the origin restarted with nothing above it kept) would pass a stale copy on a peer that
    was down for the new one, and the peer would never get the new one."""
    prefix = s3util.unique_key("fleet-mf-ids")
    bodies = seed(upstream, prefix, n=10)
    fleet = make_fleet(upstream)
    old = register_keys(fleet[0], upstream, bodies)["id"]
    wait_for("the registration on every gateway", lambda: known_everywhere(fleet, old))
    fleet[2].stop(kill=True)
    status, gone, _ = api(fleet[0], "DELETE", "manifests/" + old)
    assert status == 200, gone
    fleet[0].restart()
    half = {k: bodies[k] for k in sorted(bodies)[:5]}
    new = register_keys(fleet[0], upstream, half)["id"]
    assert new != old
    fleet[2].start()
    wait_for("gateway 2 without the withdrawn registration and with the new one",
             lambda: progress(fleet[2], old) is None and progress(fleet[2], new) is not None)
    assert progress(fleet[2], new)["objects_total"] == 5


def test_a_withdrawal_through_a_peer_while_the_origin_is_down_reaches_it_when_it_returns(
        upstream, make_fleet):
    """The origin mends peers that lack its registrations; one withdrawn through another
    gateway while the origin was down must reach the origin, not come back from it."""
    prefix = s3util.unique_key("fleet-mf-origin-down")
    bodies = seed(upstream, prefix, n=10)
    fleet = make_fleet(upstream)
    mid = register_everywhere(fleet, upstream, bodies)
    fleet[0].stop(kill=True)
    status, gone, _ = api(fleet[1], "DELETE", "manifests/" + mid)
    assert status == 200 and gone["state"] == "canceled", gone
    wait_for("the withdrawal on gateway 2", lambda: progress(fleet[2], mid) is None)
    fleet[0].start()  # registers it again from its cache directory
    wait_for("the withdrawal on the returned origin", lambda: progress(fleet[0], mid) is None)
    time.sleep(2 * 3 + 1)  # two mending passes: nothing sends it out again
    assert [progress(g, mid) for g in fleet.gateways] == [None, None, None]
