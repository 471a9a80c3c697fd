"""Hits sent from the cache's data file with sendfile (issue 14, gateway/zerocopy.h).

A hit whose body is one contiguous value of the store (a whole object of one chunk, a range
inside one chunk, a range inside one block of a large object) is sent from the data file;
anything else from the map as before. The counters `hits_zero_copy` and `bytes_zero_copy`
(GET /_s3cached/stats) tell which path served each request, so every test below checks the
bytes and the path.

What must hold whatever the path:
  - the bytes are exact, for every range form;
  - a chunk or block whose bytes changed on disk after it was stored is never served;
  - the read view is held until the client has read the bytes, not only until the gateway
    handed them to the kernel: the kernel reads a sendfile's pages when the receiver reads
    them (on loopback), so a client that reads late while the object is overwritten and its
    pages rewritten must still get the old version's exact bytes.
"""
import json
import os
import socket
import time
import urllib.request

import pytest

from harness import rawhttp, s3util

KiB = 1024
MiB = 1024 * KiB
CHUNK = 256 * KiB  # the default --chunk-size
MIN = 64 * KiB     # GW_ZC_MIN_BYTES: shorter bodies are copied
BLOCK = MiB        # with --block-size 1M
ZC = ["--zero-copy"]  # off by default (docs/operations.md)


def _put(up, size, prefix="zc"):
    """Random (so unique on disk) bytes straight to the upstream; returns (key, body)."""
    key = s3util.unique_key(prefix)
    body = os.urandom(size)
    s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)
    return key, body


def _get(gw, key, headers=None, method="GET"):
    return rawhttp.get(gw.endpoint, s3util.object_path(gw, key), headers, 60, method)


def _counters(gw):
    st = gw.stats()
    return st["hits_zero_copy"], st["bytes_zero_copy"]


def _stored(st):
    return st["fills_stored"] + st["blocks_stored"]


def _cached(gw, key, body, block=None):
    """A first GET (the miss) stores the object; waits until it is stored (each of its blocks,
    for a large object of block size block)."""
    before = _stored(gw.stats())
    want = before + (1 if block is None else -(-len(body) // block))
    r = _get(gw, key)
    assert r.status == 200 and r.complete and r.body == body
    st = gw.stats_when(lambda st: _stored(st) >= want, timeout=60)
    assert _stored(st) >= want, "not stored"


def _one_cached(s3rver, gateway, size, args=ZC, block=None, **kw):
    """A gateway (args: ZC, with more or without) with one object of size bytes cached
    (of blocks of block bytes if large): (gw, key, body)."""
    key, body = _put(s3rver, size, "zcblk" if block else "zc")
    gw = gateway(s3rver, extra_args=args + (["--block-size", "1M"] if block else []), **kw)
    gw.require_real()
    _cached(gw, key, body, block)
    return gw, key, body


def _expect(gw, key, body, rng, first, last, zero_copy):
    """GETs key (with Range rng, or whole), checks the bytes, X-Cache HIT and whether the
    zero-copy counters moved by exactly this body."""
    hits, sent = _counters(gw)
    r = _get(gw, key, {"Range": rng} if rng else None)
    want = body[first:last + 1]
    assert r.status == (206 if rng else 200), (rng, r.status, r.body[:200])
    assert r.complete and r.body == want, "%s: %d bytes, want %d" % (rng, len(r.body),
                                                                      len(want))
    assert r.headers.get("x-cache") == "HIT"
    if rng:
        assert r.headers.get("content-range") == "bytes %d-%d/%d" % (first, last, len(body))
    n = len(want) if zero_copy else 0
    st = gw.stats_when(lambda s: (s["hits_zero_copy"], s["bytes_zero_copy"]) ==
                       (hits + (1 if zero_copy else 0), sent + n))
    assert (st["hits_zero_copy"] - hits, st["bytes_zero_copy"] - sent) == (
        1 if zero_copy else 0, n), "%s: zero-copy should be %s" % (rng, zero_copy)


# ---- whole objects ---------------------------------------------------------------------------


def test_one_chunk_object_and_its_ranges_are_sent_zero_copy_byte_exact(s3rver, gateway):
    size = 200 * KiB + 7  # one chunk
    gw, key, body = _one_cached(s3rver, gateway, size)
    assert _counters(gw) == (0, 0), "a miss is not a zero-copy hit"
    _expect(gw, key, body, None, 0, size - 1, True)
    _expect(gw, key, body, "bytes=0-99999", 0, 99999, True)  # from the first byte
    _expect(gw, key, body, "bytes=100000-", 100000, size - 1, True)  # to the last
    _expect(gw, key, body, "bytes=-70000", size - 70000, size - 1, True)  # a suffix
    _expect(gw, key, body, "bytes=%d-%d" % (size - MIN, size + 500), size - MIN, size - 1,
            True)  # past the end: clamped
    _expect(gw, key, body, "bytes=-%d" % (size + 10), 0, size - 1, True)  # longer suffix
    _expect(gw, key, body, "bytes=12345-%d" % (12345 + MIN - 1), 12345, 12345 + MIN - 1, True)
    # Bodies under GW_ZC_MIN_BYTES are copied: the first byte, the last, one short of the bound.
    _expect(gw, key, body, "bytes=0-0", 0, 0, False)
    _expect(gw, key, body, "bytes=-1", size - 1, size - 1, False)
    _expect(gw, key, body, "bytes=5-%d" % (5 + MIN - 2), 5, 5 + MIN - 2, False)


def test_many_chunk_object_is_zero_copy_only_inside_one_chunk(s3rver, gateway):
    size = 3 * CHUNK + 1000
    gw, key, body = _one_cached(s3rver, gateway, size)
    _expect(gw, key, body, None, 0, size - 1, False)  # four chunks: from the map
    _expect(gw, key, body, "bytes=%d-%d" % (CHUNK, 2 * CHUNK - 1), CHUNK, 2 * CHUNK - 1,
            True)  # exactly chunk 1
    _expect(gw, key, body, "bytes=%d-" % (3 * CHUNK - MIN), 3 * CHUNK - MIN, size - 1,
            False)  # across the last boundary
    _expect(gw, key, body, "bytes=%d-" % (2 * CHUNK), 2 * CHUNK, size - 1, False)
    _expect(gw, key, body, "bytes=%d-" % (3 * CHUNK - 1000), 3 * CHUNK - 1000, size - 1, False)
    _expect(gw, key, body, "bytes=%d-%d" % (CHUNK + 5, CHUNK + 5 + MIN), CHUNK + 5,
            CHUNK + 5 + MIN, True)


def test_larger_chunk_size_makes_a_4mib_object_one_value_sent_zero_copy(s3rver, gateway):
    size = 4 * MiB
    gw, key, body = _one_cached(s3rver, gateway, size, ZC + ["--chunk-size", "4M"])
    _expect(gw, key, body, None, 0, size - 1, True)


def test_head_and_bodiless_answers_send_nothing_zero_copy(s3rver, gateway):
    size = 150 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size)
    etag = _get(gw, key, method="HEAD").headers["etag"]
    before = _counters(gw)
    head = _get(gw, key, method="HEAD")
    assert head.status == 200 and head.body == b"" and head.headers["x-cache"] == "HIT"
    assert int(head.headers["content-length"]) == size
    assert _get(gw, key, {"If-None-Match": etag}).status == 304
    assert _get(gw, key, {"If-Match": '"other"'}).status == 412
    assert _get(gw, key, {"Range": "bytes=%d-" % (size + 1)}).status == 416
    assert _counters(gw) == before
    _expect(gw, key, body, None, 0, size - 1, True)
    r = _get(gw, key, {"If-Match": etag, "Range": "bytes=1000-"})  # conditional and ranged
    assert r.status == 206 and r.body == body[1000:]


def test_without_the_zero_copy_flag_every_hit_is_copied(s3rver, gateway):
    size = 200 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size, [])  # without --zero-copy
    _expect(gw, key, body, None, 0, size - 1, False)
    _expect(gw, key, body, "bytes=0-99999", 0, 99999, False)


def test_unverified_store_still_sends_zero_copy(s3rver, gateway):
    size = 200 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size, ZC + ["--no-verify-checksums"])
    _expect(gw, key, body, None, 0, size - 1, True)


def test_access_log_counts_a_zero_copy_hits_bytes(s3rver, gateway):
    size = 200 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size, ZC + ["--access-log"])
    _expect(gw, key, body, "bytes=1000-", 1000, size - 1, True)
    gw.stop()
    with open(os.path.join(gw.workdir, "stderr.%d.log" % gw.runs), errors="replace") as f:
        access = [json.loads(l) for l in f if l.startswith("{") and '"type":"access"' in l]
    hits = [a for a in access if a.get("key") == key and a["cache"] == "HIT"]
    assert [(a["status"], a["bytes"]) for a in hits] == [(206, size - 1000)], access


def test_metrics_show_zero_copy_hits_and_bytes(s3rver, gateway):
    size = 100 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size)
    _expect(gw, key, body, None, 0, size - 1, True)
    gw.stats_when(lambda st: st["zero_copy_held"] == 0)  # read and closed: let go at once
    with urllib.request.urlopen(gw.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    lines = dict(l.rsplit(" ", 1) for l in text.splitlines() if l and not l.startswith("#"))
    assert lines["s3cached_zero_copy_hits_total"] == "1"
    assert lines["s3cached_zero_copy_bytes_total"] == str(size)
    assert lines["s3cached_zero_copy_held"] == "0"


# ---- block objects ---------------------------------------------------------------------------


def test_range_inside_one_block_is_zero_copy_and_across_blocks_is_not(s3rver, gateway):
    size = 3 * BLOCK + 200 * KiB  # four blocks, the last of 200 KiB
    gw, key, body = _one_cached(s3rver, gateway, size, block=BLOCK, cache_size="64M")
    assert gw.stats()["blocks"] == 4
    _expect(gw, key, body, None, 0, size - 1, False)  # four blocks
    _expect(gw, key, body, "bytes=%d-%d" % (BLOCK, 2 * BLOCK - 1), BLOCK, 2 * BLOCK - 1,
            True)  # block 1 exactly
    _expect(gw, key, body, "bytes=0-%d" % (MIN - 1), 0, MIN - 1, True)  # the first byte on
    _expect(gw, key, body, "bytes=%d-" % (3 * BLOCK + 1), 3 * BLOCK + 1, size - 1,
            True)  # to the object's end, inside the last block
    _expect(gw, key, body, "bytes=-%d" % (100 * KiB), size - 100 * KiB, size - 1, True)
    _expect(gw, key, body, "bytes=%d-%d" % (2 * BLOCK - MIN, 2 * BLOCK + MIN), 2 * BLOCK - MIN,
            2 * BLOCK + MIN, False)  # across a boundary: from the map
    _expect(gw, key, body, "bytes=%d-" % (BLOCK + 10), BLOCK + 10, size - 1, False)


# ---- rotten bytes on disk --------------------------------------------------------------------


def test_a_chunk_rotten_before_its_first_hit_is_never_sent(s3rver, gateway):
    size = 200 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size)
    gw.rot_on_disk(body[50000:50064])
    hits, sent = _counters(gw)
    stored = _stored(gw.stats())
    r = _get(gw, key)
    assert r.status == 200 and r.complete and r.body == body
    assert r.headers.get("x-cache") == "MISS", "the rotten copy was served"
    st = gw.stats_when(lambda s: s["corrupt_chunks"] == 1)
    assert st["corrupt_chunks"] == 1
    assert (st["hits_zero_copy"], st["bytes_zero_copy"]) == (hits, sent)
    gw.stats_when(lambda s: _stored(s) > stored, timeout=60)  # stored again
    _expect(gw, key, body, None, 0, size - 1, True)


def test_a_block_rotten_before_its_first_hit_is_never_sent(s3rver, gateway):
    size = 2 * BLOCK + 300 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size, block=BLOCK, cache_size="64M")
    gw.rot_on_disk(body[BLOCK + 4096:BLOCK + 4160])
    hits, sent = _counters(gw)
    stored = _stored(gw.stats())
    first, last = BLOCK + 100, BLOCK + 300 * KiB
    r = _get(gw, key, {"Range": "bytes=%d-%d" % (first, last)})
    assert r.status == 206 and r.complete and r.body == body[first:last + 1]
    st = gw.stats_when(lambda s: s["corrupt_chunks"] == 1)
    assert st["corrupt_chunks"] == 1
    assert (st["hits_zero_copy"], st["bytes_zero_copy"]) == (hits, sent)
    gw.stats_when(lambda s: _stored(s) > stored and s["blocks"] == 3, timeout=60)  # again
    _expect(gw, key, body, "bytes=%d-%d" % (first, last), first, last, True)


# ---- the view outlives the send -------------------------------------------------------------


def _request_unread(gw, key, headers=None):
    """Sends a GET for key on a raw socket and reads nothing; the answer is small enough
    (200 KiB) for the kernel's queues, so the gateway queues every byte and ends the request."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    extra = "".join("%s: %s\r\n" % kv for kv in (headers or {}).items())
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" %
               (s3util.object_path(gw, key), extra)).encode())
    return s


def _read_answer(s, size):
    """Reads one response of a size-byte body from s: (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        assert got, "closed before the head"
        data += got
    head, body = data.split(b"\r\n\r\n", 1)
    while len(body) < size:
        got = s.recv(1 << 20)
        if not got:
            break
        body += got
    return head.decode("latin-1"), body


def _held_after_the_request(gw):
    """Waits until the zero-copy view is held past its request (the gateway queued the last
    byte and the request ended) and its client has not read it."""
    st = gw.stats_when(lambda st: st["zero_copy_held"] == 1, timeout=60)
    assert st["hits_zero_copy"] == 1
    assert st["zero_copy_held"] == 1, "the request did not end with its bytes unread"


LATE = [  # (object size, its block size if large, the answer's first and last byte)
    ("chunk", 200 * KiB, None, 0, 200 * KiB - 1),
    ("block", 3 * MiB, BLOCK, MiB + 1000, MiB + 1000 + 200 * KiB - 1),
]


@pytest.mark.parametrize("churn", ["overwritten", "evicted"])
@pytest.mark.parametrize("what,size,block,first,last", LATE, ids=[l[0] for l in LATE])
def test_a_late_reader_gets_the_old_version_exactly_while_its_pages_are_reused(
        s3rver, gateway, what, size, block, first, last, churn):
    # A 200 KiB answer from one value (a whole object of one chunk, or a range inside one
    # block) is requested and not read: the gateway queues it all and the request ends. Then
    # the key is overwritten through the gateway (or evicted by others) and objects of its
    # size are stored, so that LMDB reuses its freed pages as soon as no reader holds them.
    # Read late, the answer must be the old version's bytes exactly: the kernel reads a
    # sendfile's pages when the client reads them, so the view is held until then.
    key, old = _put(s3rver, size, "zclate")
    gw = gateway(s3rver, cache_size="4M" if what == "chunk" else "8M",
                 extra_args=ZC + (["--block-size", "1M"] if block else []))
    gw.require_real()
    _cached(gw, key, old, block)
    ranged = {"Range": "bytes=%d-%d" % (first, last)} if what == "block" else None
    s = _request_unread(gw, key, ranged)
    try:
        _held_after_the_request(gw)
        client = gw.client()
        if churn == "overwritten":
            new = os.urandom(size)
            client.put_object(Bucket=gw.bucket, Key=key, Body=new)  # through: drops the copy
            _cached(gw, key, new, block)
        others = []
        for _ in range(24 if what == "chunk" else 4):  # past --cache-size: the old copy goes
            k, b = _put(s3rver, size, "zcchurn")
            _cached(gw, k, b, block)
            others.append((k, b))
        if churn == "evicted":
            assert gw.stats()["evictions"] > 0
        assert gw.stats()["zero_copy_held"] == 1, "the view was let go before its bytes were read"
        head, got = _read_answer(s, last - first + 1)
    finally:
        s.close()
    assert head.split(" ")[1] == ("206" if ranged else "200"), head
    want = old[first:last + 1]
    assert len(got) == len(want)
    if got != want:
        where = next(i for i in range(len(want)) if got[i] != want[i])
        pytest.fail("the late reader got other bytes from byte %d on" % where)
    st = gw.stats_when(lambda st: st["zero_copy_held"] == 0, timeout=30)
    assert st["zero_copy_held"] == 0, "the view was not let go once its bytes were read"
    for k, b in others[-2:]:  # what the churn stored is intact
        assert _get(gw, k).body == b


def test_a_client_that_goes_away_unread_lets_its_view_go(s3rver, gateway):
    size = 200 * KiB
    gw, key, body = _one_cached(s3rver, gateway, size)
    s = _request_unread(gw, key)
    _held_after_the_request(gw)
    time.sleep(0.3)
    assert gw.stats()["zero_copy_held"] == 1  # nothing read: still held
    s.close()  # unread: its queue goes with the socket
    st = gw.stats_when(lambda st: st["zero_copy_held"] == 0, timeout=30)
    assert st["zero_copy_held"] == 0
    _expect(gw, key, body, None, 0, size - 1, True)
