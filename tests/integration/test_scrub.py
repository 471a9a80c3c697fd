"""Checksums once per residency, and the scrubber (--scrub-rate).

A hit checks a chunk's CRC32C when its bytes may have come from the disk: the first time it
serves one stored before the start, and again only once its pages have left the page cache
(what the gateway's writer stored is in the page cache as the writer checked it). What
changes in data.mdb while it stays resident (another process writing the file) is caught by
the scrubber, which checks every chunk and block in turn whether anyone reads it or not. The
tests change data.mdb through the page cache of the running gateway, or on the disk with
O_DIRECT (harness/gateway.py); the upstream is the fault-injecting fake, which counts the GETs
it answers.
"""
import os
import re
import urllib.request

from harness import faulty_upstream as faults
from harness import rawhttp, s3util

faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests
KiB = 1024


def _get_exact(gw, key, body, x_cache):
    r = rawhttp.get(gw.endpoint, s3util.object_path(gw, key))
    assert r.status == 200 and r.complete, (r.status, r.error)
    assert r.body == body, "wrong bytes: got %d bytes, want %d" % (len(r.body), len(body))
    assert r.headers.get("x-cache") == x_cache, r.headers
    return r


def _metric(gw, name):
    with urllib.request.urlopen(gw.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
    assert m, "%s is not on /metrics" % name
    return int(m.group(1))


def test_the_scrubber_finds_a_rotten_chunk_and_the_next_get_refetches_it(faulty_upstream,
                                                                        gateway):
    fake = faulty_upstream
    key = "scrub/obj"
    body = os.urandom(300 * KiB)  # two chunks of the default 256 KiB, found in data.mdb by bytes
    fake.put(key, body, faults.normal())
    gw = faults.start_gateway(gateway, fake, "--scrub-rate", "64M")
    _get_exact(gw, key, body, "MISS")
    gw.stats_when(lambda s: s["fills_stored"] == 1)
    _get_exact(gw, key, body, "HIT")  # checked once; its pages stay in the page cache
    st = gw.stats_when(lambda s: s["scrubbed"] >= 2, timeout=60)
    assert st["scrubbed"] >= 2 and st["scrub_corrupt"] == 0, st

    gw.flip_in_store(body[260 * KiB:260 * KiB + 64])  # in the second chunk
    st = gw.stats_when(lambda s: s["scrub_corrupt"] == 1 and s["objects"] == 0, timeout=60)
    assert st["scrub_corrupt"] == 1 and st["corrupt_chunks"] == 1, st
    assert st["objects"] == 0, "the rotten object was not dropped: %r" % st
    assert fake.count(key) == 1

    _get_exact(gw, key, body, "MISS")  # fetched again, byte for byte
    assert fake.count(key) == 2
    gw.stats_when(lambda s: s["fills_stored"] == 2)
    _get_exact(gw, key, body, "HIT")
    assert _metric(gw, "s3cached_scrub_corrupt_total") == 1
    assert _metric(gw, "s3cached_corrupt_chunks_total") == 1
    assert _metric(gw, "s3cached_scrubbed_total") >= 2
    assert _metric(gw, "s3cached_scrubbed_bytes_total") >= len(body)


def test_a_hit_checks_a_chunk_only_when_its_bytes_come_back_from_the_disk(faulty_upstream,
                                                                        gateway):
    """The store's writer computed the CRC32C of the bytes it wrote into the page cache: hits
    of them are not checked. Once a page of the chunk has left the page cache, the next hit
    checks it (its bytes come back from the disk), and then not again while it stays."""
    fake = faulty_upstream
    key = "once/obj"
    body = os.urandom(100 * KiB)  # found in data.mdb by its bytes
    fake.put(key, body, faults.normal())
    gw = faults.start_gateway(gateway, fake, "--scrub-rate", "0")
    _get_exact(gw, key, body, "MISS")
    gw.stats_when(lambda s: s["fills_stored"] == 1)
    assert gw.stats()["checksums"] == 0  # the fill served the upstream's bytes
    for _ in range(5):
        _get_exact(gw, key, body, "HIT")
    assert gw.stats()["checksums"] == 0  # the writer's bytes, still in the page cache
    gw.drop_from_page_cache(body[50 * KiB:50 * KiB + 64])
    for _ in range(5):
        _get_exact(gw, key, body, "HIT")
    st = gw.stats()
    assert st["checksums"] == 1, st
    assert st["scrubbed"] == 0, st
    assert _metric(gw, "s3cached_checksums_total") == 1
