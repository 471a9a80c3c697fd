"""The fleet as one cache (issue 13): several gateways on loopback, real upstreams, readers
spread over the gateways as trainers on different nodes would be.

Each gateway has its own client port and peer port (harness/fleet.py); one counting proxy in
front of the bucket sees every request the fleet sends it. Readers never retry (the harness's
boto3 clients make one attempt), so a read that fails anywhere on the way fails the test.
"""
import concurrent.futures
import random
import threading
import time
import urllib.request

import pytest

from harness import s3util

KiB = 1024
SIZE = 8 * KiB
OBJECTS = 900  # many names, so that each of 3 owners' share is within a few % of a third


def seed(up, prefix, n=OBJECTS, size=SIZE):
    c = s3util.upstream_client(up)
    bodies = {}
    for i in range(n):
        key = "%s/%04d" % (prefix, i)
        bodies[key] = s3util.data(size, seed=key)
        c.put_object(Bucket=up.bucket, Key=key, Body=bodies[key])
    return bodies


def read_epoch(fleet, bodies, order, readers=None, workers=6):
    """Reads the keys in order, key i through gateway readers[i % len(readers)]; returns the
    number of failed or wrong reads (with the first few reasons)."""
    readers = readers if readers is not None else list(range(len(fleet)))
    clients = {r: fleet[r].client() for r in readers}

    def one(i_key):
        i, key = i_key
        gw = readers[i % len(readers)]
        try:
            got = clients[gw].get_object(Bucket=fleet.up.bucket, Key=key)["Body"].read()
        except Exception as exc:  # a failed read is what the test counts
            return "%s via %d: %s" % (key, gw, exc)
        return None if got == bodies[key] else "%s via %d: wrong bytes" % (key, gw)

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        bad = [r for r in pool.map(one, enumerate(order)) if r is not None]
    return bad


def shuffled(keys, epoch):
    order = sorted(keys)
    random.Random(1000 + epoch).shuffle(order)
    return order


def capacity_for(n, size, ratio):
    """A cache size (bytes) such that n objects of size are ratio caches."""
    return int(n * size / ratio)


def test_three_gateways_fetch_each_object_once_and_hit_after_the_first_epoch(upstream, make_fleet):
    """The bar: each cache C, a dataset of 2.5C, 3 shuffled epochs over the 3 gateways:
    upstream GETs <= 1.05x the objects, epochs 2 and 3 >= 95 % hits (local or peer), every
    byte exact."""
    prefix = s3util.unique_key("fleet-once")
    bodies = seed(upstream, prefix)
    fleet = make_fleet(upstream, cache_size=str(capacity_for(OBJECTS, SIZE, 2.5)))
    gets = []
    for epoch in (1, 2, 3):
        before = len(fleet.upstream_gets(prefix))
        assert read_epoch(fleet, bodies, shuffled(bodies, epoch)) == []
        gets.append(len(fleet.upstream_gets(prefix)) - before)
    assert sum(gets) <= 1.05 * OBJECTS, gets
    for epoch_gets in gets[1:]:
        assert epoch_gets <= 0.05 * OBJECTS, gets  # >= 95 % of reads were local or peer hits
    # Each object is held once in the fleet: the sum of what the gateways hold is the dataset.
    held = sum(g.stats()["objects"] for g in fleet.gateways)
    assert OBJECTS * 0.95 <= held <= OBJECTS * 1.05, held


def test_independent_gateways_fetch_the_dataset_once_per_node(upstream, make_fleet):
    """The comparison the fleet is for: the same trace on 3 independent gateways pulls about
    3x the objects (each node misses on what the others hold), and keeps missing."""
    prefix = s3util.unique_key("fleet-indep")
    bodies = seed(upstream, prefix, n=400)  # a cache of 1.3 MB: above the 1 MiB minimum
    fleet = make_fleet(upstream, cache_size=str(capacity_for(400, SIZE, 2.5)), fleet=False)
    for epoch in (1, 2):
        assert read_epoch(fleet, bodies, shuffled(bodies, epoch)) == []
    assert len(fleet.upstream_gets(prefix)) > 1.5 * 400


def trace(keys, n, seed_):
    """A skewed trace: a fifth of the keys get most reads (what a cache can win on)."""
    rng = random.Random(seed_)
    keys = sorted(keys)
    hot = keys[: len(keys) // 5]
    return [rng.choice(hot) if rng.random() < 0.7 else rng.choice(keys) for _ in range(n)]


def test_hit_ratio_of_three_caches_is_close_to_one_cache_three_times_larger(upstream, gateway,
                                                                          make_fleet):
    prefix = s3util.unique_key("fleet-ratio")
    bodies = seed(upstream, prefix, n=600)
    c = capacity_for(600, SIZE, 4.0)  # the dataset is 4C: it fits neither
    reads = trace(bodies, 2400, 7)
    fleet = make_fleet(upstream, cache_size=str(c))
    assert read_epoch(fleet, bodies, reads, workers=1) == []
    fleet_misses = len(fleet.upstream_gets(prefix))
    one = make_fleet(upstream, n=1, cache_size=str(3 * c), fleet=False)
    assert read_epoch(one, bodies, reads, workers=1) == []
    one_misses = len(one.upstream_gets(prefix))
    fleet_ratio, one_ratio = 1 - fleet_misses / len(reads), 1 - one_misses / len(reads)
    assert one_ratio > 0.3, one_ratio  # the trace is one a cache wins on
    assert abs(fleet_ratio - one_ratio) <= 0.05, (fleet_ratio, one_ratio)


def peer_metric(gw, name, peer_url):
    with urllib.request.urlopen(gw.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and 'peer="%s"' % peer_url in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no %s for %s in /metrics" % (name, peer_url))


def test_a_peer_killed_mid_epoch_fails_no_read_and_comes_back(upstream, make_fleet):
    """Readers on gateways 0 and 1; gateway 2 owns a third of the names and is killed with
    SIGKILL in the middle of epoch 3: no read fails (its names come from the bucket through
    the others). Restarted on its ports with its cache, it owns its names again: reads of them
    no longer go to the bucket."""
    prefix = s3util.unique_key("fleet-kill")
    bodies = seed(upstream, prefix, n=600)
    fleet = make_fleet(upstream, cache_size=str(capacity_for(600, SIZE, 1.5)))
    readers = [0, 1]
    for epoch in (1, 2):
        assert read_epoch(fleet, bodies, shuffled(bodies, epoch), readers) == []
    order = shuffled(bodies, 3)
    half = len(order) // 2
    assert read_epoch(fleet, bodies, order[:half], readers) == []
    errors_before = peer_metric(fleet[0], "s3cached_peer_errors_total", fleet.urls[2])
    fleet[2].stop(kill=True)
    assert read_epoch(fleet, bodies, order[half:], readers) == []
    # It was found dead: each failed request puts it down for its backoff (1 s, doubling). Whether
    # it is down at this instant depends on when the last backoff ended (CI once read it up, the
    # last backoff over before the scrape), so the count of failures is what is checked.
    assert peer_metric(fleet[0], "s3cached_peer_errors_total", fleet.urls[2]) > errors_before
    fleet[2].start()
    # Its backoff ends by itself; then its names are asked of it again, and it holds them.
    # The backoff doubles with each failure after it ends (up to 30 s), so a slow half epoch
    # leaves up to 30 s of it, and each epoch read meanwhile is slow too: a generous deadline.
    deadline = time.monotonic() + 180
    while True:
        before = len(fleet.upstream_gets(prefix))
        assert read_epoch(fleet, bodies, shuffled(bodies, 4), readers) == []
        if len(fleet.upstream_gets(prefix)) - before == 0:
            break
        assert time.monotonic() < deadline, "the restarted peer never served its names again"
        time.sleep(1)
    assert peer_metric(fleet[0], "s3cached_peer_up", fleet.urls[2]) == 1


def test_fleet_copy_all_keeps_what_peers_gave(upstream, make_fleet):
    """--fleet-copy all: an asker keeps a copy, so a second read through it is a local hit;
    with none (the default) it keeps nothing and asks the owner again."""
    prefix = s3util.unique_key("fleet-copy")
    bodies = seed(upstream, prefix, n=60)
    for copy, keeps in (("all", True), ("none", False)):
        fleet = make_fleet(upstream, copy=copy, cache_size="4M")
        c = fleet[0].client()
        for key in sorted(bodies):
            assert c.get_object(Bucket=upstream.bucket, Key=key)["Body"].read() == bodies[key]
        held = fleet[0].stats_when(lambda st: st["objects"] >= 60 if keeps else True)["objects"]
        if keeps:
            assert held == 60, held
        else:
            assert held < 40, held  # only what gateway 0 owns (about a third)


def test_membership_from_dns_follows_the_records(upstream, gateway, tmp_path):
    """--peers-dns: every address of the name is a peer, re-resolved while running. The name
    resolves through a private hosts file bind-mounted over /etc/hosts in a mount namespace
    of each gateway's own (unshare -m), so nothing outside the test sees it; the gateways stay
    in this network namespace and reach the upstream on loopback. A third record added while
    they run becomes a peer that owns about a third of the names."""
    import os
    import shutil
    import subprocess
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a private /etc/hosts")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot create a mount namespace here")
    hosts = tmp_path / "hosts"
    name = "peers.fleet.test"
    hosts.write_text("127.0.0.1 localhost\n127.0.0.2 %s\n127.0.0.3 %s\n" % (name, name))
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef")
    os.chmod(secret, 0o600)
    from harness import proc
    from harness.tcp_proxy import TcpProxy
    proxy = TcpProxy(upstream.port).start()
    peer_port = proc.free_port()
    wrap = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
            str(hosts)]
    gws = []
    try:
        for i in range(3):
            addr = "127.0.0.%d" % (i + 2)
            gws.append(gateway(upstream, upstream_endpoint=proxy.endpoint, cache_size="8M",
                               wrap=wrap, extra_args=[
                                   "--peers-dns", "%s:%d" % (name, peer_port),
                                   "--peers-dns-interval", "1",
                                   "--self", "http://%s:%d" % (addr, peer_port),
                                   "--fleet-listen", "%s:%d" % (addr, peer_port),
                                   "--fleet-secret-file", str(secret)]))
        for g in gws:
            g.require_real()
        prefix = s3util.unique_key("fleet-dns")
        bodies = seed(upstream, prefix, n=300)
        third = "http://127.0.0.4:%d" % peer_port

        def peers_of(g):
            return {p["url"] for p in g.stats()["fleet"]["peers"]}

        assert third not in peers_of(gws[0])  # not in the records yet
        with open(hosts, "r+") as f:  # in place: the bind mount follows the inode
            f.seek(0, 2)
            f.write("127.0.0.4 %s\n" % name)
        deadline = time.monotonic() + 20
        while not all(third in peers_of(g) for g in gws[:2]):
            assert time.monotonic() < deadline, "the new record never became a peer"
            time.sleep(0.5)
        c = gws[0].client()
        for key in sorted(bodies):
            assert c.get_object(Bucket=upstream.bucket, Key=key)["Body"].read() == bodies[key]
        held = gws[2].stats_when(lambda st: st["objects"] >= 60)["objects"]
        assert 60 <= held <= 140, held  # about a third of 300
    finally:
        proxy.stop()


def test_concurrent_misses_on_one_object_from_every_gateway_fetch_it_once(upstream, make_fleet):
    """Twenty-four readers spread over the 3 gateways ask for the same cold object at once (a
    slow bucket keeps the fetch open while they arrive): the bucket serves it once for the
    fleet, and every reader gets every byte."""
    prefix = s3util.unique_key("fleet-herd")
    key = prefix + "/big"
    body = s3util.data(3 * 1024 * KiB, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    fleet = make_fleet(upstream, cache_size="16M")
    fleet.proxy.rate = 2 * 1024 * KiB  # bytes/s from the bucket: the fetch takes 1.5 s
    clients = [g.client() for g in fleet.gateways]
    barrier = threading.Barrier(24)

    def one(i):
        barrier.wait()
        got = clients[i % 3].get_object(Bucket=upstream.bucket, Key=key)["Body"].read()
        return got == body

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        assert all(pool.map(one, range(24)))
    assert len(fleet.upstream_gets(prefix)) == 1, fleet.proxy.request_lines()
