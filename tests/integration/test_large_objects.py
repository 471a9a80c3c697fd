"""Large objects cached as aligned blocks (issue 11), read by the clients that read them.

What the gateway promises for an object larger than --block-size (default 8M):
  - it is cached as aligned blocks (--max-object-size no longer caps it by default);
  - a range miss fetches only the blocks the range covers, a cold full GET fetches the
    object's blocks in parallel (--fetch-parallelism, default 4);
  - X-Cache is HIT (every byte from the cache), PARTIAL (some blocks from the cache, some
    fetched) or MISS (none from the cache);
  - blocks of two versions never meet in one response: an object overwritten under a long
    read fails that transfer (or the response is wholly one version), and the next GET
    gets the new one;
  - eviction works per block and keeps used bytes within --cache-size; a kill -9 keeps
    the blocks already stored.

Every body is checked byte for byte against the local copy it was uploaded from. What
came from the upstream is counted on the wire by the harness's TCP proxy (gw.proxy), not
by the gateway's own statistics. The bars of the issue use its sizes and the default block
size; the other tests use --block-size 1M and objects of 8-30 MiB, which cross as many
blocks and run faster.
"""
import concurrent.futures
import hashlib
import http.client
import io
import json
import os
import random
import re
import subprocess
import tarfile
import time
import urllib.parse
import urllib.request

import pytest

from harness import awscli
from harness import gateway as gwmod
from harness import rawhttp
from harness import s3util

KiB = 1024
MiB = 1024 * KiB
SMALL_BLOCKS = ["--block-size", "1M"]
BLOCK = MiB  # the block size SMALL_BLOCKS sets
X_CACHE_VALUES = ("HIT", "PARTIAL", "MISS")


# ---- helpers ---------------------------------------------------------------------------------


def _put(up, size, prefix="large"):
    """Uploads size random bytes straight to the upstream; returns (key, bytes)."""
    key = s3util.unique_key(prefix)
    body = os.urandom(size)
    s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)
    return key, body


def _path(gw, key):
    return s3util.object_path(gw, key)


def _get(gw, key, headers=None, timeout=120):
    """One unsigned GET through the gateway (it does not check signatures): a rawhttp.Reply."""
    return rawhttp.get(gw.endpoint, _path(gw, key), headers, timeout)


def _range(gw, key, first, last, timeout=120):
    return _get(gw, key, {"Range": "bytes=%d-%d" % (first, last)}, timeout)


def _same(got, want):
    """got == want, with a message that does not print megabytes."""
    if got == want:
        return True
    where = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got),
                                                                              len(want)))
    raise AssertionError("%d bytes, want %d; first difference at byte %d" % (
        len(got), len(want), where))


def _assert_whole(reply, body):
    assert reply.status == 200, (reply.status, reply.error, reply.body[:300])
    assert reply.complete, "transfer cut short: %s after %d bytes" % (reply.error,
                                                                     len(reply.body))
    assert int(reply.headers["content-length"]) == len(body)
    _same(reply.body, body)


def _assert_part(reply, body, first, last):
    assert reply.status == 206, (reply.status, reply.error, reply.body[:300])
    assert reply.complete, "transfer cut short: %s after %d bytes" % (reply.error,
                                                                     len(reply.body))
    assert reply.headers["content-range"] == "bytes %d-%d/%d" % (first, last, len(body))
    assert int(reply.headers["content-length"]) == last - first + 1
    _same(reply.body, body[first:last + 1])


def _assert_x_cache(gw, headers, *allowed):
    """X-Cache (of a lower-cased header dict) is one of allowed; nothing to check in direct
    mode. Returns it."""
    got = headers.get("x-cache")
    if not gw.direct:
        assert got in allowed, "X-Cache is %r, want one of %s" % (got, allowed)
    return got


def _upstream_bytes_settled(proxy, quiet=0.75, timeout=30):
    """proxy.bytes_down once nothing more came from the upstream for `quiet` seconds: what a
    request cost upstream includes any read-ahead it started."""
    deadline = time.monotonic() + timeout
    last = proxy.bytes_down
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = proxy.bytes_down
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= quiet:
            break
    return last


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def _blocks(first, last, block=BLOCK):
    """The indexes of the blocks bytes first..last cover."""
    return set(range(first // block, last // block + 1))


# ---- the flags, and objects below the block size (cached whole, as before) -------------------


def _refused(up, *args):
    """Runs the gateway binary with args; returns its stderr after checking it refused to
    start."""
    res = subprocess.run([gwmod.binary(), "--listen", "127.0.0.1:1", "--upstream", up.endpoint]
                         + list(args), capture_output=True, timeout=30)
    assert res.returncode != 0, "started with %s" % (args,)
    return res.stderr.decode(errors="replace")


def test_block_flags_are_documented_and_bounded(s3rver):
    text = subprocess.run([gwmod.binary(), "--help"], capture_output=True, timeout=30,
                          check=True).stdout.decode()
    assert "--block-size" in text and "--fetch-parallelism" in text
    for bad in ("512K", "65M", "0", "1X"):
        assert "block-size" in _refused(s3rver, "--block-size", bad)
    assert "fetch-parallelism" in _refused(s3rver, "--fetch-parallelism", "0")


@pytest.mark.parametrize("size", [0, 1, 700 * KiB, BLOCK], ids=["empty", "1B", "700KiB", "1MiB"])
def test_objects_up_to_the_block_size_are_cached_whole_as_before(upstream, gateway, size):
    key, body = _put(upstream, size, "small")
    gw = gateway(upstream, extra_args=SMALL_BLOCKS)
    before = gw.stats() if not gw.direct else None
    for want in ("MISS", "HIT"):
        r = _get(gw, key)
        _assert_whole(r, body)
        _assert_x_cache(gw, r.headers, want)
    if size > 10:
        r = _range(gw, key, 3, size - 2)
        _assert_part(r, body, 3, size - 2)
        _assert_x_cache(gw, r.headers, "HIT")
    if before is not None:
        after = gw.stats_when(lambda st: st["objects"] > before["objects"])
        assert after["objects"] - before["objects"] == 1
        assert after["misses"] - before["misses"] == 1


# ---- 1. the bars of issue 11 (default block size, the sizes) -------------------------


def test_bar_200_mib_object_read_twice_costs_its_size_upstream_once(s3rver, gateway):
    size = 200 * MiB
    key, body = _put(s3rver, size, "bar200")
    gw = gateway(s3rver, proxy=True, cache_size="512M")
    gw.require_real()
    before = gw.stats()
    gw.proxy.reset_counters()
    first = _get(gw, key)
    _assert_whole(first, body)
    _assert_x_cache(gw, first.headers, "MISS")
    del first
    second = _get(gw, key)
    _assert_whole(second, body)
    _assert_x_cache(gw, second.headers, "HIT")
    del second
    upstream = _upstream_bytes_settled(gw.proxy)
    assert upstream <= 1.05 * size, "two reads of %d MiB cost %.1f MiB upstream" % (
        size // MiB, upstream / MiB)
    # The gateway's own count cannot exceed what came over the wire.
    after = gw.stats()
    assert 0 < after["bytes_from_upstream"] - before["bytes_from_upstream"] <= upstream


def test_bar_1_kib_range_of_cold_64_mib_object_costs_at_most_16_mib(s3rver, gateway):
    size = 64 * MiB
    key, body = _put(s3rver, size, "bar1k")
    gw = gateway(s3rver, proxy=True, cache_size="256M")
    gw.require_real()
    gw.proxy.reset_counters()
    first = 3 * 8 * MiB + 1234567  # inside the fourth 8 MiB block
    r = _range(gw, key, first, first + KiB - 1)
    _assert_part(r, body, first, first + KiB - 1)
    _assert_x_cache(gw, r.headers, "MISS")
    upstream = _upstream_bytes_settled(gw.proxy)
    assert upstream <= 16 * MiB, "a 1 KiB range cost %.1f MiB upstream" % (upstream / MiB)


def test_bar_8_parallel_8_mib_ranges_of_cold_64_mib_object_cost_its_size(s3rver, gateway):
    """The s3torchconnector / AWS CRT pattern: the object read as 8 concurrent part ranges."""
    size, part = 64 * MiB, 8 * MiB
    key, body = _put(s3rver, size, "bar8x8")
    gw = gateway(s3rver, proxy=True, cache_size="256M")
    gw.require_real()
    gw.proxy.reset_counters()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda i: _range(gw, key, i * part, (i + 1) * part - 1),
                                range(size // part)))
    for i, r in enumerate(replies):
        _assert_part(r, body, i * part, (i + 1) * part - 1)
        _assert_x_cache(gw, r.headers, *X_CACHE_VALUES)
    upstream = _upstream_bytes_settled(gw.proxy)
    assert upstream <= 1.05 * size, "8 parallel parts cost %.1f MiB upstream for %d MiB" % (
        upstream / MiB, size // MiB)


# ---- 2. the AWS CLI: multipart ranged download -----------------------------------------------


def test_aws_s3_cp_of_large_object_cold_then_warm(upstream, gateway, tmp_path):
    """`aws s3 cp` downloads with a HEAD and concurrent 8 MiB ranged GETs (38 parts here):
    cold, every byte once from the upstream; warm, none."""
    size = 300 * MiB
    key, body = _put(upstream, size, "awscp")
    want = hashlib.sha256(body).hexdigest()
    del body
    gw = gateway(upstream, proxy=True, cache_size="1G")
    gw.proxy.reset_counters()
    url = "s3://%s/%s" % (gw.bucket, key)
    cold, warm = str(tmp_path / "cold"), str(tmp_path / "warm")
    awscli.run(gw, "s3", "cp", url, cold)
    assert os.path.getsize(cold) == size and _sha256_file(cold) == want
    os.remove(cold)
    cold_cost = _upstream_bytes_settled(gw.proxy)
    awscli.run(gw, "s3", "cp", url, warm)
    assert os.path.getsize(warm) == size and _sha256_file(warm) == want
    warm_cost = _upstream_bytes_settled(gw.proxy) - cold_cost
    gw.require_real()
    assert cold_cost <= 1.05 * size, "cold cp cost %.1f MiB upstream for %d MiB" % (
        cold_cost / MiB, size // MiB)
    assert warm_cost <= 64 * KiB, "warm cp cost %d bytes upstream" % warm_cost


# ---- 3. boto3 download_file, default TransferConfig ------------------------------------------


def test_boto3_download_file_default_transfer_config_cold_then_warm(upstream, gateway, tmp_path):
    """download_file splits objects over 8 MiB into 8 MiB ranges, 10 threads."""
    size = 24 * MiB + 12345
    key, body = _put(upstream, size, "dlfile")
    gw = gateway(upstream, proxy=True, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.proxy.reset_counters()
    c = gw.client()
    for name in ("cold", "warm"):
        dest = str(tmp_path / name)
        c.download_file(gw.bucket, key, dest)
        with open(dest, "rb") as f:
            _same(f.read(), body)
        if name == "cold":
            cold_cost = _upstream_bytes_settled(gw.proxy)
    warm_cost = _upstream_bytes_settled(gw.proxy) - cold_cost
    gw.require_real()
    assert cold_cost <= 1.05 * size, "cold download cost %.1f MiB upstream" % (cold_cost / MiB)
    assert warm_cost <= 64 * KiB, "warm download cost %d bytes upstream" % warm_cost


# ---- 4. a WebDataset-style tar shard ---------------------------------------------------------


def _tar_shard(members=300, seed=11):
    """A tar of `members` random files of 20-400 KiB (about 60 MiB): (tar bytes,
    {name: (data offset in the tar, bytes)})."""
    rng = random.Random(seed)
    buf = io.BytesIO()
    contents = {}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(members):
            name = "sample%06d.%s" % (i // 2, ("jpg", "cls")[i % 2])
            data = rng.randbytes(rng.randint(20 * KiB, 400 * KiB))
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1700000000
            tf.addfile(info, io.BytesIO(data))
            contents[name] = data
    shard = buf.getvalue()
    offsets = {}
    with tarfile.open(fileobj=io.BytesIO(shard), mode="r:") as tf:
        for m in tf.getmembers():
            offsets[m.name] = (m.offset_data, contents[m.name])
    return shard, offsets


class _Tee:
    """A file-like reader that hashes and counts what passes through it."""

    def __init__(self, raw):
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.count = 0

    def read(self, n=-1):
        got = self.raw.read(n) if n is not None and n >= 0 else self.raw.read()
        self.sha256.update(got)
        self.count += len(got)
        return got


@pytest.fixture(scope="module")
def shard():
    return _tar_shard()


def test_tar_shard_streamed_with_one_get_read_member_by_member(upstream, gateway, shard):
    """As WebDataset reads a shard: one streaming GET, tarfile in stream mode ('r|')."""
    data, members = shard
    key = s3util.unique_key("shard") + ".tar"
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=data)
    gw = gateway(upstream, cache_size="256M", extra_args=SMALL_BLOCKS)
    c = gw.client()
    for want in ("MISS", "HIT"):
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        _assert_x_cache(gw, s3util.headers_of(resp), want)
        stream = _Tee(resp["Body"])
        seen = []
        with tarfile.open(fileobj=stream, mode="r|") as tf:
            for m in tf:
                got = tf.extractfile(m).read()
                assert m.name in members, m.name
                assert got == members[m.name][1], "member %s differs" % m.name
                seen.append(m.name)
        assert seen == sorted(members, key=lambda n: members[n][0]), "members missing"
        while stream.read(MiB):  # what follows the end-of-archive blocks
            pass
        assert stream.count == len(data)
        assert stream.sha256.digest() == hashlib.sha256(data).digest()


def test_tar_shard_members_read_by_range_with_smart_open(upstream, gateway, shard):
    """smart_open (Debian python3-smart-open) reads S3 by ranges: each seek is a new GET
    `bytes=N-` of which it reads what is asked for. Members in random order, cold."""
    import smart_open  # installed by tools/install-deps.sh

    data, members = shard
    key = s3util.unique_key("shard") + ".tar"
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=data)
    gw = gateway(upstream, cache_size="256M", extra_args=SMALL_BLOCKS)
    names = sorted(members)
    random.Random(4).shuffle(names)
    url = "s3://%s/%s" % (gw.bucket, key)
    with smart_open.open(url, "rb", transport_params={"client": gw.client()}) as f:
        for name in names[:80]:
            offset, want = members[name]
            f.seek(offset)
            assert f.read(len(want)) == want, "member %s at %d differs" % (name, offset)
        f.seek(len(data) - 1024)  # the two zero blocks that end a tar
        assert f.read() == data[-1024:]


# ---- 5. ranges of every form over a large object ---------------------------------------------


def _expected(form, size):
    """(first, last) of S3's answer to a Range header over size bytes, None for a 416."""
    spec = form[len("bytes="):]
    a, b = spec.split("-")
    if a == "":
        n = int(b)
        return (max(size - n, 0), size - 1)
    first = int(a)
    if first >= size:
        return None
    last = size - 1 if b == "" else min(int(b), size - 1)
    return (first, last)


def _random_forms(rng, size, count):
    """Range headers of every form, with offsets near block boundaries and the ends."""
    nblocks = (size + BLOCK - 1) // BLOCK
    forms = []
    for i in range(count):
        kind = i % 8
        b = rng.randrange(1, nblocks - 1) * BLOCK
        if kind == 0:  # inside one block
            first = rng.randrange(0, size - 2 * KiB)
            first = first - first % BLOCK + rng.randrange(0, BLOCK - 2 * KiB)
            forms.append("bytes=%d-%d" % (first, first + rng.randrange(0, 2 * KiB)))
        elif kind == 1:  # across one boundary, a few bytes either side
            forms.append("bytes=%d-%d" % (b - rng.randrange(1, 5000), b + rng.randrange(0, 5000)))
        elif kind == 2:  # across several blocks
            first = rng.randrange(0, size - 4 * BLOCK)
            forms.append("bytes=%d-%d" % (first, first + rng.randrange(2 * BLOCK, 4 * BLOCK)))
        elif kind == 3:  # exactly one aligned block
            forms.append("bytes=%d-%d" % (b, b + BLOCK - 1))
        elif kind == 4:  # open-ended
            forms.append("bytes=%d-" % rng.randrange(size - 3 * BLOCK, size))
        elif kind == 5:  # suffix
            forms.append("bytes=-%d" % rng.choice([1, 17, BLOCK, BLOCK + 1, 2 * BLOCK + 333]))
        elif kind == 6:  # ends past the object: clamped
            forms.append("bytes=%d-%d" % (size - rng.randrange(1, 3 * BLOCK), size + 5000))
        else:  # starts at or past the end: 416
            forms.append("bytes=%d-%d" % (size + rng.randrange(0, 3), size + 10))
    return forms


@pytest.mark.parametrize("seed", [1, 2])
def test_random_ranges_of_every_form_match_the_local_copy(upstream, gateway, seed):
    size = 20 * MiB + 777  # the last block is short
    key, body = _put(upstream, size, "ranges")
    gw = gateway(upstream, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    cached = set()  # blocks some complete response covered: the gateway stores them

    def read(form):
        r = _get(gw, key, {"Range": form})
        span = _expected(form, size)
        if span is None:
            assert r.status == 416, (form, r.status, r.body[:300])
            assert rawhttp.s3_error_code(r.body) == "InvalidRange"
            return None
        first, last = span
        _assert_part(r, body, first, last)
        covered = _blocks(first, last)
        if covered <= cached:
            _assert_x_cache(gw, r.headers, "HIT")
        elif covered & cached:
            _assert_x_cache(gw, r.headers, "PARTIAL", "HIT")  # read-ahead may have stored more
        else:
            _assert_x_cache(gw, r.headers, *X_CACHE_VALUES)
        cached.update(covered)
        # Blocks may be committed just after the response's last byte: wait until the store
        # holds at least the bytes of every block read so far.
        want = sum(min(BLOCK, size - i * BLOCK) for i in cached)
        gw.stats_when(lambda st: st["used_bytes"] >= want, timeout=60)
        return r.headers.get("x-cache")

    # A block cached, then a range around it: PARTIAL; then the block again: HIT.
    inside = (5 * BLOCK + 100, 5 * BLOCK + 4195)
    assert read("bytes=%d-%d" % inside) == "MISS"
    assert read("bytes=%d-%d" % (4 * BLOCK + 10, 7 * BLOCK - 10)) == "PARTIAL"
    assert read("bytes=%d-%d" % inside) == "HIT"
    # The edges, cold: the last byte both ways, the first byte, just past the end.
    for form in ("bytes=%d-%d" % (size - 1, size - 1), "bytes=-1", "bytes=0-0",
                 "bytes=%d-" % size, "bytes=%d-%d" % (size, size)):
        read(form)
    rng = random.Random(seed)
    results = [read(form) for form in _random_forms(rng, size, 48)]
    assert "PARTIAL" in results or "HIT" in results
    # Every block has been read by now or is read here: the whole object, then a HIT.
    whole = _get(gw, key)
    _assert_whole(whole, body)
    cached.update(range((size + BLOCK - 1) // BLOCK))
    gw.stats_when(lambda st: st["used_bytes"] >= size, timeout=60)
    again = _get(gw, key)
    _assert_whole(again, body)
    _assert_x_cache(gw, again.headers, "HIT")


def _ranges_sent(proxy):
    """The Range header values of every request the gateway sent through the proxy."""
    return [m.group(1).decode() for data in proxy.sent
            for m in re.finditer(rb"\r\nRange: *(bytes=[0-9-]+)\r\n", bytes(data), re.I)]


@pytest.mark.parametrize("size", [BLOCK + 5, 4 * MiB + 5], ids=["2_blocks", "5_blocks"])
def test_cold_whole_get_takes_block_0_from_the_get_that_found_it_large(upstream, gateway, size):
    """A cold whole GET of a large object: the GET that reveals its size goes on as the fetch
    of its block 0, so the reader waits for no second round trip; only the other blocks are
    asked by range, and every block is cached. The GET, stopped after block 0, is no upstream
    failure (its body is not checked against the whole object's length or digest)."""
    key, body = _put(upstream, size, "first")
    gw = gateway(upstream, proxy=True, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    r = _get(gw, key)
    _assert_whole(r, body)
    _assert_x_cache(gw, r.headers, "MISS")
    gw.stats_when(lambda st: st["used_bytes"] >= size, timeout=60)
    ranges = _ranges_sent(gw.proxy)
    assert "bytes=0-%d" % (BLOCK - 1) not in ranges, ranges
    for i in range(1, (size + BLOCK - 1) // BLOCK):
        assert "bytes=%d-%d" % (i * BLOCK, min(size, (i + 1) * BLOCK) - 1) in ranges, ranges
    again = _get(gw, key)
    _assert_whole(again, body)
    _assert_x_cache(gw, again.headers, "HIT")
    with open(os.path.join(gw.workdir, "stderr.%d.log" % gw.runs), errors="replace") as f:
        log = f.read()
    assert "upstream body of" not in log, log[-2000:]


def _block_range(b):
    return "bytes=%d-%d" % (b * BLOCK, (b + 1) * BLOCK - 1)


def _blocks_asked(proxy):
    """The ranges of whole blocks the gateway asked for (not the 2-byte probe of If-Match)."""
    def length(r):
        first, last = r[len("bytes="):].split("-")
        return int(last) - int(first) + 1
    return sorted(r for r in _ranges_sent(proxy) if length(r) == BLOCK)


def _span(first, last):
    return "bytes=%d-%d" % (first, last)


@pytest.mark.parametrize("first,last,asked", [
    (3 * BLOCK, 4 * BLOCK - 1, [_span(3 * BLOCK, 4 * BLOCK - 1)]),
    (3 * BLOCK + 5000, 3 * BLOCK + 6023,
     [_span(3 * BLOCK + 5000, 3 * BLOCK + 6023), _span(3 * BLOCK, 4 * BLOCK - 1)]),
    (2 * BLOCK + 100, 5 * BLOCK + 99, [_span(b * BLOCK, (b + 1) * BLOCK - 1)
                                       for b in range(2, 6)])],
    ids=["a_block", "a_span_inside_one", "across_blocks"])
def test_cold_range_is_asked_in_one_round_trip_with_no_head_first(upstream, gateway, first,
                                                                    last, asked):
    """A range of an object the gateway has not seen: the GET of its first block (without
    If-Match) names the object's size and version, and its bytes start the answer, so the
    first byte comes one round trip after the request, as going direct (a HEAD asked first
    cost one more). A range that runs to its first block's end asks that whole block; a span
    inside one block is asked alone, then the block beside it. Every block is asked once, and
    cached: read again, the range is a HIT."""
    size = 8 * MiB + 3
    key, body = _put(upstream, size, "open")
    gw = gateway(upstream, proxy=True, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    r = _range(gw, key, first, last)
    _assert_part(r, body, first, last)
    _assert_x_cache(gw, r.headers, "MISS")
    methods = [m for m, target in gw.proxy.request_lines() if key in target]
    assert methods and methods[0] == "GET", methods
    blocks = _blocks(first, last)
    gw.stats_when(lambda st: st["blocks"] >= len(blocks), timeout=60)
    sent = [r for r in _ranges_sent(gw.proxy) if r != "bytes=0-1"]  # not the If-Match probe
    assert sorted(sent) == sorted(asked), sent
    again = _range(gw, key, first, last)
    _assert_part(again, body, first, last)
    _assert_x_cache(gw, again.headers, "HIT")


def test_concurrent_cold_ranges_of_one_block_share_its_opening(upstream, gateway):
    """Readers that ask the same block of an object not seen yet at once (ranks of one job
    starting on the same shard) share one GET of it: the object's bytes come once."""
    size = 8 * MiB + 3
    key, body = _put(upstream, size, "open-shared")
    gw = gateway(upstream, proxy=True, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    gw.proxy.reset_counters()
    first, last = 4 * BLOCK, 5 * BLOCK - 1
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        replies = list(ex.map(lambda _: _range(gw, key, first, last), range(6)))
    for r in replies:
        _assert_part(r, body, first, last)
    cost = _upstream_bytes_settled(gw.proxy)
    assert cost <= BLOCK + 64 * KiB, "6 readers of one cold block cost %d bytes" % cost


def test_one_range_that_happens_to_follow_another_reads_no_block_ahead(upstream, gateway):
    """Random readers (parquet row groups, a tokenized file read at random offsets) now and
    then ask for the range right after the last one. One such coincidence is no sequential
    reader: only the blocks asked for are fetched (each block fetched ahead would take the
    link from the blocks that are read). The third range in a row is one: the blocks after it
    are fetched ahead, and the next range is a HIT."""
    size = 16 * MiB
    key, body = _put(upstream, size, "ahead")
    gw = gateway(upstream, proxy=True, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    for b in (5, 6):
        _assert_part(_range(gw, key, b * BLOCK, (b + 1) * BLOCK - 1), body, b * BLOCK,
                     (b + 1) * BLOCK - 1)
    _upstream_bytes_settled(gw.proxy)
    assert _blocks_asked(gw.proxy) == [_block_range(5), _block_range(6)]
    _assert_part(_range(gw, key, 7 * BLOCK, 8 * BLOCK - 1), body, 7 * BLOCK, 8 * BLOCK - 1)
    gw.stats_when(lambda st: st["blocks"] >= 6, timeout=60)
    assert _block_range(8) in _blocks_asked(gw.proxy)
    r = _range(gw, key, 8 * BLOCK, 9 * BLOCK - 1)
    _assert_part(r, body, 8 * BLOCK, 9 * BLOCK - 1)
    _assert_x_cache(gw, r.headers, "HIT")


# ---- 6. an overwrite under a long read -------------------------------------------------------


def _slow_read(gw, key, first_part, when_read, step=128 * KiB, pause=0.02, timeout=60):
    """Reads a whole GET slowly from the socket: first_part bytes, then when_read(), then the
    rest `step` bytes at a time with a pause between. Returns (status, headers, body,
    complete, error)."""
    parsed = urllib.parse.urlsplit(gw.endpoint)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    body, error, status, headers, complete = bytearray(), None, None, {}, False
    try:
        conn.request("GET", _path(gw, key))
        resp = conn.getresponse()
        status = resp.status
        headers = {k.lower(): v for k, v in resp.getheaders()}
        body += resp.read(first_part)
        when_read()
        while True:
            more = resp.read(step)
            if not more:
                break
            body += more
            time.sleep(pause)
        complete = len(body) == int(headers["content-length"])
    except (OSError, http.client.HTTPException) as exc:
        error = type(exc).__name__
    finally:
        conn.close()
    return status, headers, bytes(body), complete, error


def test_partly_cached_object_replaced_upstream_is_fetched_afresh_not_cut_short(upstream,
                                                                                 gateway):
    """Blocks 0 and 1 cached, then the object replaced at the upstream (a write the gateway
    does not see): a whole GET would start from the cached blocks and find the change only at
    block 2, too late for anything but cutting the answer short. The fetch of the first block
    the store lacks proves the version before the first byte: the change drops the copy, and
    the answer is the new version, whole."""
    size = 6 * MiB + 7
    key, old = _put(upstream, size, "replaced")
    gw = gateway(upstream, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    _assert_part(_range(gw, key, 0, 2 * BLOCK - 1), old, 0, 2 * BLOCK - 1)
    gw.stats_when(lambda st: st["used_bytes"] >= 2 * BLOCK, timeout=60)
    new = os.urandom(size)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=new)
    _assert_whole(_get(gw, key), new)
    _assert_whole(_get(gw, key), new)


@pytest.mark.parametrize("writer", ["through_gateway", "at_upstream"])
def test_overwrite_during_long_read_is_never_a_mix_of_versions(upstream, gateway, writer):
    """The upstream sends each connection at most 4 MiB/s, and the client reads slowly: the
    overwrite lands while blocks of the old version are still to be fetched. The response
    is wholly one version or a failed transfer; the next GET is the new version."""
    size = 24 * MiB + 99
    key, old = _put(upstream, size, "overwrite")
    new = os.urandom(size)
    gw = gateway(upstream, rate=4 * MiB, cache_size="256M", extra_args=SMALL_BLOCKS)

    def overwrite():
        target = gw if writer == "through_gateway" else upstream
        client = gw.client() if writer == "through_gateway" else s3util.upstream_client(upstream)
        client.put_object(Bucket=target.bucket, Key=key, Body=new)

    status, headers, got, complete, error = _slow_read(gw, key, 2 * MiB, overwrite)
    assert status == 200, (status, error)
    assert got[:2 * MiB] == old[:2 * MiB], "the first bytes, read before the overwrite"
    if complete:
        assert got in (old, new), "a complete response that mixes two versions"
    else:
        assert len(got) < size, "complete length but reported cut short: %s" % error
    # The next GET: the new version. A response that came out whole and old after a write
    # the gateway did not see may leave the old version cached: that alone is not a mix.
    _upstream_bytes_settled(gw.proxy, quiet=0.5, timeout=20)
    again = _get(gw, key)
    assert again.status == 200 and again.complete, (again.status, again.error)
    if writer == "at_upstream" and complete and got == old:
        assert again.body in (old, new)
    else:
        _same(again.body, new)
    third = _get(gw, key)
    _assert_whole(third, again.body)


# ---- 7. eviction of blocks under pressure ----------------------------------------------------


@pytest.mark.parametrize("policy", ["lru", "s3fifo"])
def test_block_eviction_keeps_used_bytes_within_cache_size(upstream, gateway, policy):
    sizes = [24 * MiB + 1, 30 * MiB + 2, 20 * MiB + 3, 22 * MiB + 4]  # 96 MiB through 48M
    objs = [_put(upstream, s, "evict") for s in sizes]
    gw = gateway(upstream, cache_size="48M", policy=policy, extra_args=SMALL_BLOCKS)
    gw.require_real()
    for key, body in objs:
        r = _get(gw, key)
        _assert_whole(r, body)
        _assert_x_cache(gw, r.headers, "MISS")
        st = gw.stats_when(lambda s: s["used_bytes"] > 0)
        assert st["capacity_bytes"] == 48 * MiB
        assert 0 < st["used_bytes"] <= st["capacity_bytes"], st
    st = gw.stats_when(lambda s: s["evictions"] > 0)
    assert st["evictions"] > 0, st
    # The first object, partly or wholly evicted, reads back exact.
    key, body = objs[0]
    r = _get(gw, key)
    _assert_whole(r, body)
    _assert_x_cache(gw, r.headers, "PARTIAL", "MISS")
    # Ranges of every object, after all that churn, are exact too.
    for key, body in objs:
        first = len(body) // 2 - 3 * BLOCK // 2
        _assert_part(_range(gw, key, first, first + 3 * BLOCK), body, first, first + 3 * BLOCK)
    st = gw.stats_when(lambda s: False, timeout=0.5)
    assert 0 < st["used_bytes"] <= st["capacity_bytes"], st
    if policy == "lru":  # the blocks the last range read are the most recently used
        last_key, last_body = objs[-1]
        first = len(last_body) // 2 - 3 * BLOCK // 2
        r = _range(gw, last_key, first, first + 3 * BLOCK)
        _assert_part(r, last_body, first, first + 3 * BLOCK)
        _assert_x_cache(gw, r.headers, "HIT")


# ---- 8. kill -9 during a parallel cold fetch -------------------------------------------------


def test_kill_9_during_parallel_cold_fetch_keeps_stored_blocks(upstream, gateway):
    """Each upstream connection is slowed to 2 MiB/s, so the cold fetch of 30 MiB runs for
    seconds; once some blocks are stored the gateway is killed, then started again on the
    same cache directory: it starts, the object reads back exact and the blocks stored
    before the kill are served from the cache."""
    size = 30 * MiB + 5
    key, body = _put(upstream, size, "kill9")
    gw = gateway(upstream, rate=2 * MiB, cache_size="256M",
                 extra_args=SMALL_BLOCKS + ["--fetch-parallelism", "4"])
    gw.require_real()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    reader = pool.submit(_get, gw, key, None, 60)
    stored = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not reader.done():
        stored = gw.stats()["used_bytes"]
        if stored >= 4 * MiB:
            break
        time.sleep(0.05)
    assert stored >= 4 * MiB, "no 4 blocks stored while the cold fetch ran (%d bytes)" % stored
    assert not reader.done(), "the cold fetch ended before the kill"
    gw.stop(kill=True)
    pool.shutdown()
    r = reader.result()
    assert not r.complete or r.body == body

    gw.start()
    gw.proxy.reset_counters()
    r = _get(gw, key)
    _assert_whole(r, body)
    _assert_x_cache(gw, r.headers, "PARTIAL", "HIT")
    refetched = _upstream_bytes_settled(gw.proxy)
    assert refetched <= size - 2 * MiB, "%.1f MiB fetched again of %.1f MiB" % (
        refetched / MiB, size / MiB)
    again = _get(gw, key)
    _assert_whole(again, body)
    _assert_x_cache(gw, again.headers, "HIT")


def test_a_block_rotten_on_disk_is_fetched_again_and_never_served(upstream, gateway):
    """A cached block whose bytes changed on disk fails its checksum when read: a range over
    it and its cached neighbours (an answer sent from the store's map in one piece) and a
    whole GET are byte-exact, the block is counted corrupt and fetched again."""
    size = 8 * MiB + 11
    key, body = _put(upstream, size, "rot")
    gw = gateway(upstream, proxy=True, cache_size="256M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    _assert_whole(_get(gw, key), body)
    gw.stats_when(lambda st: st["used_bytes"] >= size, timeout=60)
    gw.rot_on_disk(body[3 * BLOCK + 4096:3 * BLOCK + 4160])
    first, last = 2 * BLOCK + 5, 4 * BLOCK + 5  # blocks 2..4, all cached, 3 rotten
    gw.proxy.reset_counters()
    _assert_part(_range(gw, key, first, last), body, first, last)
    assert gw.stats()["corrupt_chunks"] == 1
    assert _upstream_bytes_settled(gw.proxy) >= BLOCK, "the rotten block was not fetched again"
    gw.stats_when(lambda st: st["used_bytes"] >= size, timeout=60)
    again = _get(gw, key)
    _assert_whole(again, body)
    _assert_x_cache(gw, again.headers, "HIT")


# ---- 9. a manifest warms a large object by blocks ---------------------------------------------


def test_manifest_warms_a_large_object_by_blocks_then_reads_hit(s3rver, gateway):
    # A manifest naming a 24 MiB shard: the prefetch finds it large at the fill's head, stops
    # that fill, and fetches all 24 blocks (1 MiB each), 4 at a time. The trainer's read is then
    # a HIT of every byte, and the upstream sent the object about once.
    size = 24 * MiB
    key, body = _put(s3rver, size, "warm")
    gw = gateway(s3rver, proxy=True, cache_size="256M",
                 extra_args=SMALL_BLOCKS + ["--fetch-parallelism", "4"])
    gw.require_real()
    req = urllib.request.Request(
        gw.endpoint + "/_s3cached/manifests", method="POST",
        data=json.dumps({"bucket": s3rver.bucket, "keys": [key]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        mid = json.loads(r.read())["id"]
    deadline = time.monotonic() + 120
    while True:
        with urllib.request.urlopen(gw.endpoint + "/_s3cached/manifests/" + mid, timeout=30) as r:
            prog = json.loads(r.read())
        if prog["objects_cached"] == 1:
            break
        assert prog["objects_failed"] == 0, prog
        assert time.monotonic() < deadline, "never warmed: %r" % prog
        time.sleep(0.2)
    assert prog["bytes_cached"] == size, prog
    st = gw.stats()
    assert st["blocks"] == size // BLOCK, st
    assert st["blocks_stored"] == size // BLOCK, st
    before = _upstream_bytes_settled(gw.proxy)
    assert before <= 1.05 * size + 2 * MiB, "the warm-up fetched %d bytes for %d" % (before, size)
    reply = _get(gw, key)
    _assert_whole(reply, body)
    _assert_x_cache(gw, reply.headers, "HIT")
    assert _upstream_bytes_settled(gw.proxy) - before < 64 * KiB, "a warmed object went upstream"


def _post_manifest(gw, body):
    req = urllib.request.Request(
        gw.endpoint + "/_s3cached/manifests", method="POST", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 201
        return json.loads(r.read())["id"]


def _admin_get(gw, path):
    with urllib.request.urlopen(gw.endpoint + "/_s3cached/" + path, timeout=30) as r:
        return json.loads(r.read())


def _manifest_warm(gw, mid, timeout):
    """The manifest's progress once it is warm, none of its items failed on the way."""
    deadline = time.monotonic() + timeout
    while True:
        prog = _admin_get(gw, "manifests/" + mid)
        assert prog["objects_failed"] == 0, prog
        if prog["state"] == "warm":
            return prog
        assert time.monotonic() < deadline, "never warmed: %r" % prog
        time.sleep(0.1)


def test_manifest_of_ranges_warms_only_the_blocks_they_cover(upstream, gateway):
    # A tokenized file read by range: three ranges of a cold 64 MiB object with 8 MiB blocks,
    # one in block 0, one in block 2, one across blocks 4 and 5. The prefetch asks a HEAD and
    # fetches exactly those 4 blocks (32 MiB, not the object); progress counts the ranges'
    # bytes and reaches warm; the ranges are then HITs, other ranges of the object MISSes.
    size, block = 64 * MiB, 8 * MiB
    key, body = _put(upstream, size, "ranges")
    gw = gateway(upstream, proxy=True, cache_size="256M",
                 extra_args=["--block-size", "8M", "--fetch-parallelism", "4"])
    gw.require_real()
    ranges = [(100, 1024), (20 * MiB + 7, 100 * KiB), (40 * MiB - KiB, 2 * KiB)]
    covered = set()
    for off, length in ranges:
        covered |= _blocks(off, off + length - 1, block)
    assert covered == {0, 2, 4, 5}
    mid = _post_manifest(gw, {"bucket": upstream.bucket, "keys": [
        {"key": key, "offset": off, "length": length} for off, length in ranges]})
    prog = _manifest_warm(gw, mid, 120)
    want_bytes = sum(length for _, length in ranges)
    assert prog["objects_total"] == prog["objects_cached"] == 3, prog
    assert prog["bytes_total"] == prog["bytes_cached"] == want_bytes, prog
    st = gw.stats()
    assert st["blocks"] == len(covered), st
    assert st["blocks_stored"] == len(covered), st
    warmed = _upstream_bytes_settled(gw.proxy)
    assert len(covered) * block <= warmed <= len(covered) * block + 256 * KiB, (
        "the warm-up fetched %d bytes for %d blocks" % (warmed, len(covered)))
    order = _admin_get(gw, "manifests/%s/order?epoch=0" % mid)
    assert order["keys"] == [key] * 3
    assert order["ranges"] == [[off, length] for off, length in ranges]

    for off, length in ranges:
        reply = _range(gw, key, off, off + length - 1)
        _assert_part(reply, body, off, off + length - 1)
        _assert_x_cache(gw, reply.headers, "HIT")
    assert _upstream_bytes_settled(gw.proxy) - warmed < 64 * KiB, "a warmed range went upstream"
    for first in (9 * MiB, 63 * MiB):  # blocks 1 and 7: not named
        reply = _range(gw, key, first, first + 99)
        _assert_part(reply, body, first, first + 99)
        _assert_x_cache(gw, reply.headers, "MISS")


def test_manifest_range_of_a_small_object_warms_it_whole(s3rver, gateway):
    # A parquet footer of a file below the block size: the object is cached whole, as any small
    # object, and the whole object is then a HIT.
    key, body = _put(s3rver, 3 * MiB + 17, "footer")
    gw = gateway(s3rver, cache_size="64M", extra_args=["--block-size", "8M"])
    gw.require_real()
    mid = _post_manifest(gw, {"bucket": s3rver.bucket, "keys": [
        {"key": key, "offset": len(body) - 8, "length": 8}]})
    prog = _manifest_warm(gw, mid, 60)
    assert prog["bytes_cached"] == 8, prog
    assert gw.stats()["blocks"] == 0
    reply = _get(gw, key)
    _assert_whole(reply, body)
    _assert_x_cache(gw, reply.headers, "HIT")


def test_clairvoyant_keeps_the_blocks_a_ranged_plan_reads_next(s3rver, gateway):
    # A cache of 4 blocks, a plan that reads ranges in blocks 6, 1 and 3 of a 64 MiB object,
    # and a whole read of the object streaming all 8 blocks through the cache. lru would keep
    # the last four (4-7); planning by blocks keeps 1, 3 and 6 and lets the others go.
    size, block = 64 * MiB, 8 * MiB
    key, body = _put(s3rver, size, "plan")
    gw = gateway(s3rver, cache_size="32M", policy="clairvoyant",
                 extra_args=["--block-size", "8M", "--fetch-parallelism", "2"])
    gw.require_real()
    planned = [6 * block + 10, 1 * block + 10, 3 * block + 10]
    _post_manifest(gw, {"bucket": s3rver.bucket, "prefetch": False, "keys": [
        {"key": key, "offset": off, "length": 100} for off in planned]})
    _assert_whole(_get(gw, key), body)
    # every block is admitted (an unneeded one is always there to go first) and stored
    st = gw.stats_when(lambda st: st["blocks_stored"] >= 8, timeout=30)
    assert st["blocks_stored"] == 8, st
    assert st["used_bytes"] <= st["capacity_bytes"], st
    for off in planned:
        reply = _range(gw, key, off, off + 99)
        _assert_part(reply, body, off, off + 99)
        _assert_x_cache(gw, reply.headers, "HIT")
    reply = _range(gw, key, 10, 109)  # block 0: read by no plan, evicted first
    _assert_part(reply, body, 10, 109)
    _assert_x_cache(gw, reply.headers, "MISS")


# ---- 10. what the upstream does with If-Match decides whether blocks are checked -----------


def test_upstream_if_match_support_is_learned_once(upstream, gateway):
    # S3 and radosgw answer a GET whose If-Match names another version with 412 and serve every
    # GET from one version: a block that arrived whole is served as it is. s3rver ignores
    # If-Match (and rewrites objects in place): each block is checked with a HEAD. The gateway
    # asks once, with a two-byte GET of the first block it fetches, and logs what it learned.
    key, body = _put(upstream, 3 * MiB + 5, "ifmatch")
    gw = gateway(upstream, cache_size="64M", extra_args=SMALL_BLOCKS)
    gw.require_real()
    _assert_whole(_get(gw, key), body)
    want = "ignores" if upstream.name == "s3rver" else "honors"
    deadline = time.monotonic() + 10
    while True:
        with open(os.path.join(gw.workdir, "stderr.%d.log" % gw.runs), errors="replace") as f:
            log = f.read()
        if "If-Match on GET" in log or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "the upstream %s If-Match on GET" % want in log, log[-2000:]
    assert log.count("If-Match on GET") == 1, log[-2000:]
    # Against s3rver each block is stored after its HEAD check: under load the second read could
    # come before the last block is in (PARTIAL, seen in CI at load 17); wait for all of them.
    gw.stats_when(lambda st: st["used_bytes"] >= len(body), timeout=60)
    again = _get(gw, key)
    _assert_whole(again, body)
    _assert_x_cache(gw, again.headers, "HIT")
