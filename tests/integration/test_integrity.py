"""End-to-end verification of what the gateway serves and caches (issue 9, "Trust").

- A fill's body is checked against the full-object x-amz-checksum-* CRC the upstream returns
  to a fill (which asks for it with x-amz-checksum-mode: ENABLED), else its MD5 ETag, else a
  SHA checksum: the cheapest on offer. The last byte of a response that reaches the end of the
  object is held until the check passes; a mismatch ends the response as a failed transfer,
  is logged, and is never cached.
- A range fetched on its own beside a running fill is pinned to the fill's version (If-Match
  with the fill's ETag, and the answer's ETag compared); otherwise it is read from the fill.
- A 200 without an ETag is relayed but never cached, and crashes nothing.

s3rver and radosgw always send an ETag and never an x-amz-checksum-* header: those cases use
the fault-injecting fake upstream (harness/faulty_upstream.py), and their names say "fake".
"""
import concurrent.futures
import hashlib
import os
import time

import pytest

from harness import faulty_upstream as faults
from harness import manifests, rawhttp, s3util
from harness.checksums import CHECKSUMS
from test_metrics import scrape, value

faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests
KiB = 1024
MiB = 1024 * KiB
MULTIPART_ETAG = '"0123456789abcdef0123456789abcdef-2"'  # no digest of the body


# ---- helpers ----------------------------------------------------------------------------


_start = faults.start_gateway
_path = s3util.object_path


def _log(gw):
    with open(os.path.join(gw.workdir, "stderr.%d.log" % gw.runs), errors="replace") as f:
        return f.read()


def _assert_clean(r, body, x_cache=None, status=200):
    assert r.status == status, (r.status, r.error, r.body[:300])
    assert r.complete, "transfer ended with %s after %d bytes" % (r.error, len(r.body))
    assert r.body == body, "wrong bytes: got %d bytes, want %d" % (len(r.body), len(body))
    if x_cache:
        assert r.headers.get("x-cache") == x_cache, r.headers


def _assert_failed_transfer(r, body):
    """A 200 whose framing promised the whole body, of which the client got less."""
    assert r.status == 200, (r.status, r.error)
    assert int(r.headers["content-length"]) == len(body)
    assert not r.complete, "a body that failed its check reached the client as a success"
    assert len(r.body) < len(body)
    assert body.startswith(r.body), "the bytes that did arrive are wrong"


def _checksum_fault(alg, value, kind="FULL_OBJECT"):
    return faults.normal(etag=MULTIPART_ETAG, checksums={
        "x-amz-checksum-" + alg: value, "x-amz-checksum-type": kind})


# ---- item 3: a body that fails its check is a failed transfer, never cached ---------------


@pytest.mark.parametrize("alg", sorted(CHECKSUMS))
def test_fake_full_object_checksum_matching_is_served_and_cached(faulty_upstream, gateway, alg):
    fake = faulty_upstream
    key = "sum/good-" + alg
    body = s3util.data(300 * KiB + 3, seed=key)
    fake.put(key, body, _checksum_fault(alg, CHECKSUMS[alg](body)))
    gw = _start(gateway, fake)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "MISS")
    gw.stats_when(lambda s: s["fills_stored"] == 1)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "HIT")
    sent = fake.request_headers(key)
    assert len(sent) == 1 and sent[0].get("x-amz-checksum-mode") == "ENABLED", sent
    # counted by the check made (a multipart ETag: nothing but this checksum to check)
    samples = scrape(gw)
    assert value(samples, "s3cached_fill_checks_total", check=alg) == 1
    assert sum(v for (name, _), v in samples.items() if name == "s3cached_fill_checks_total") == 1


@pytest.mark.parametrize("alg", sorted(CHECKSUMS))
def test_fake_full_object_checksum_mismatch_fails_the_transfer_and_is_never_cached(
        faulty_upstream, gateway, alg):
    fake = faulty_upstream
    key = "sum/bad-" + alg
    body = s3util.data(300 * KiB + 3, seed=key)
    fake.put(key, body, _checksum_fault(alg, CHECKSUMS[alg](b"other bytes" + body)))
    gw = _start(gateway, fake)
    for _ in range(2):
        r = rawhttp.get(gw.endpoint, _path(gw, key))
        _assert_failed_transfer(r, body)
        assert r.headers.get("x-cache") == "MISS"
    st = gw.stats_when(lambda s: s["fills_failed"] == 2)
    assert st["fills_failed"] == 2 and st["fills_stored"] == 0 and st["objects"] == 0, st
    assert fake.count(key) == 2
    assert "does not match its x-amz-checksum-%s" % alg in _log(gw)


@pytest.mark.parametrize("alg", ["crc32", "crc32c", "crc64nvme"])
def test_fake_crc_is_checked_even_beside_an_md5_etag(faulty_upstream, gateway, alg):
    """The cheaper check is made (digest.h): S3 sends a single-part object's MD5 ETag and,
    asked, its CRC; a CRC that the body does not match fails the fill though the MD5 is
    right."""
    fake = faulty_upstream
    key = "sum/md5-and-bad-" + alg
    body = s3util.data(300 * KiB + 3, seed=key)
    fake.put(key, body, faults.normal(checksums={
        "x-amz-checksum-" + alg: CHECKSUMS[alg](b"other bytes" + body),
        "x-amz-checksum-type": "FULL_OBJECT"}))
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    _assert_failed_transfer(r, body)
    st = gw.stats_when(lambda s: s["fills_failed"] == 1)
    assert st["fills_stored"] == 0 and st["objects"] == 0, st
    assert "does not match its x-amz-checksum-%s" % alg in _log(gw)


def test_fake_composite_checksum_is_not_taken_for_a_digest_of_the_body(faulty_upstream, gateway):
    # A multipart upload's COMPOSITE checksum is a checksum of the parts' checksums.
    fake = faulty_upstream
    key = "sum/composite"
    body = s3util.data(200 * KiB, seed=key)
    fake.put(key, body, _checksum_fault("crc32c", "AAAAAA==-2", kind="COMPOSITE"))
    gw = _start(gateway, fake)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "MISS")
    gw.stats_when(lambda s: s["fills_stored"] == 1)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "HIT")


@pytest.mark.parametrize("sse", [{"x-amz-server-side-encryption": "aws:kms"},
                                 {"x-amz-server-side-encryption-customer-algorithm": "AES256"}],
                         ids=["sse-kms", "sse-c"])
def test_fake_sse_kms_or_c_etag_is_no_md5_so_the_object_is_served_and_cached(
        faulty_upstream, gateway, sse):
    # AWS gives SSE-KMS and SSE-C objects ETags that look like an MD5 but are not the
    # body's: taking them for one would fail every such object.
    fake = faulty_upstream
    key = "sse/obj"
    body = s3util.data(200 * KiB, seed=key)
    fake.put(key, body, faults.normal(etag='"%s"' % hashlib.md5(b"key" + body).hexdigest(),
                                      headers=sse))
    gw = _start(gateway, fake)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "MISS")
    gw.stats_when(lambda s: s["fills_stored"] == 1)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "HIT")
    # no MD5 and no checksum: its length was all there was to check, and the metric says so
    samples = scrape(gw)
    assert value(samples, "s3cached_fill_checks_total", check="length") == 1
    assert value(samples, "s3cached_fill_checks_total", check="md5") == 0


def test_fake_sse_kms_body_longer_than_announced_is_never_stored(faulty_upstream, gateway):
    # An SSE-KMS ETag checks nothing, so, as for a multipart ETag, the fill's connection is
    # watched after the last announced byte; here the excess comes 5 ms later.
    fake = faulty_upstream
    key = "sse/excess"
    body = s3util.data(200 * KiB, seed=key)
    half = len(body) // 2
    etag = '"%s"' % hashlib.md5(b"key" + body).hexdigest()
    sse = {"x-amz-server-side-encryption": "aws:kms"}
    fake.put(key, body, faults.late_excess(half, 0.005, etag=etag, headers=sse))
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    assert not r.complete, "a body longer than announced reached the client as a success"
    st = gw.stats_when(lambda s: s["fills_failed"] == 1)
    assert st["fills_failed"] == 1 and st["fills_stored"] == 0 and st["objects"] == 0, st


@pytest.mark.parametrize("cached", [False, True], ids=["miss", "hit"])
def test_fake_checksum_of_the_whole_object_is_never_sent_with_a_range(faulty_upstream, gateway,
                                                                      cached):
    # A client that validates x-amz-checksum-* would check a range against the whole
    # object's checksum and fail; S3 sends none with a range.
    fake = faulty_upstream
    key = "sum/range"
    body = s3util.data(100 * KiB, seed=key)
    fake.put(key, body, _checksum_fault("crc32", CHECKSUMS["crc32"](body)))
    gw = _start(gateway, fake)
    # Both ask for checksums, as SDKs do: S3 sends them only to a client that asks.
    asks = {"x-amz-checksum-mode": "ENABLED"}
    if cached:
        whole = rawhttp.get(gw.endpoint, _path(gw, key), asks)
        _assert_clean(whole, body, "MISS")
        assert whole.headers.get("x-amz-checksum-crc32") == CHECKSUMS["crc32"](body)
        gw.stats_when(lambda s: s["fills_stored"] == 1)
    r = rawhttp.get(gw.endpoint, _path(gw, key), {"Range": "bytes=10-99", **asks})
    _assert_clean(r, body[10:100], "HIT" if cached else "MISS", status=206)
    assert not [h for h in r.headers if h.startswith("x-amz-checksum")], r.headers
    # boto3 validates the CRC32 of a whole object itself, and must find it right.
    got = gw.client().get_object(Bucket=gw.bucket, Key=key, ChecksumMode="ENABLED")
    assert got["Body"].read() == body
    assert got.get("ChecksumCRC32") == CHECKSUMS["crc32"](body)


def test_fake_md5_mismatch_fails_every_concurrent_reader_of_the_fill(faulty_upstream, gateway):
    fake = faulty_upstream
    key = "md5/trickled"
    body = s3util.data(1 * MiB, seed=key)
    wrong = '"%s"' % hashlib.md5(b"x" + body).hexdigest()
    fake.put(key, body, faults.Fault("trickle", chunk=64 * KiB, interval=0.02, etag=wrong))
    gw = _start(gateway, fake)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(lambda _: rawhttp.get(gw.endpoint, _path(gw, key)), range(3)))
    for r in replies:
        _assert_failed_transfer(r, body)
    assert fake.count(key) == 1, "the readers did not share one fill"
    st = gw.stats_when(lambda s: s["fills_failed"] == 1)
    assert st["fills_stored"] == 0 and st["objects"] == 0, st


def test_fake_md5_mismatch_of_an_object_too_big_to_cache_fails_the_transfer_too(
        faulty_upstream, gateway):
    # Streamed through a bounded window, never stored: still checked before its last byte.
    fake = faulty_upstream
    key = "md5/big"
    body = s3util.data(3 * MiB + 5, seed=key)
    fake.put(key, body, faults.bad_md5())
    gw = _start(gateway, fake, "--max-object-size", "1M")
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    _assert_failed_transfer(r, body)
    assert r.headers.get("x-cache") == "BYPASS"
    assert "does not match its ETag" in _log(gw)
    fake.set_fault(key, faults.normal())
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "BYPASS")


def test_fake_md5_mismatch_of_a_body_without_content_length_fails_the_transfer(
        faulty_upstream, gateway):
    # Without a Content-Length the last byte received so far is held until the end; the
    # client's chunked transfer then ends without its last chunk.
    fake = faulty_upstream
    key = "md5/chunked"
    body = s3util.data(300 * KiB + 9, seed=key)
    wrong = '"%s"' % hashlib.md5(b"x" + body).hexdigest()
    fake.put(key, body, faults.chunked(etag=wrong))
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key))
    assert r.status == 200 and "content-length" not in r.headers, (r.status, r.headers)
    assert not r.complete and len(r.body) < len(body), (r.error, len(r.body))
    assert body.startswith(r.body)
    assert "does not match its ETag" in _log(gw)
    fake.set_fault(key, faults.chunked())
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body)


@pytest.mark.parametrize("rng", ["bytes=0-99", "bytes=150000-150099"])
def test_fake_md5_mismatch_fails_a_range_of_a_small_object_read_from_its_fill(
        faulty_upstream, gateway, rng):
    # A range that ends within 256 KiB of the end waits for the fill's verdict; a small
    # object's ranges all do.
    fake = faulty_upstream
    key = "md5/small-range"
    body = s3util.data(200 * KiB, seed=key)
    wrong = '"%s"' % hashlib.md5(b"x" + body).hexdigest()
    fake.put(key, body, faults.Fault("trickle", chunk=32 * KiB, interval=0.02, etag=wrong))
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key), {"Range": rng})
    assert r.status == 206 and not r.complete, (r.status, r.complete, r.error)
    fake.set_fault(key, faults.normal())
    first, last = (int(x) for x in rng[len("bytes="):].split("-"))
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key), {"Range": rng}),
                  body[first:last + 1], "MISS", status=206)


@pytest.mark.parametrize("query", ["versionId=v1", "response-content-type=text/plain"])
def test_fake_md5_mismatch_of_a_pass_through_get_fails_the_transfer(faulty_upstream, gateway,
                                                                    query):
    # A GET of a version, or with response header overrides, is never cached but is the
    # object's whole body: checked like a fill. (The fake ignores the query.)
    fake = faulty_upstream
    key = "md5/pass"
    body = s3util.data(200 * KiB + 1, seed=key)
    fake.put(key, body, faults.bad_md5())
    gw = _start(gateway, fake)
    r = rawhttp.get(gw.endpoint, _path(gw, key) + "?" + query)
    _assert_failed_transfer(r, body)
    assert r.headers.get("x-cache") == "BYPASS"
    assert "does not match its ETag" in _log(gw)
    # What answers other bytes than the object's (here ?tagging, which the fake answers with
    # the object anyway) is not checked against the object's ETag.
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key) + "?tagging"), body)
    fake.set_fault(key, faults.normal())
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key) + "?" + query), body, "BYPASS")


def _assert_fill_failure_logged(gw):
    """s3rver truncates and rewrites the file: the fill reads a mix (its MD5 fails) or runs
    out of bytes (the transfer fails); either is logged."""
    log = _log(gw)
    assert "does not match its ETag" in log or "Transferred a partial file" in log, log[-2000:]


def _slow_fill_then_overwrite(upstream, gateway, size, rate=1 * MiB, extra_args=()):
    """A gateway whose fills run at `rate` bytes/s, a whole GET of a fresh object started through
    it, and the object overwritten upstream once the fill is under way. Returns
    (gw, key, old, new, old_etag, pending whole GET, its pool)."""
    key = s3util.unique_key("overwritten")
    old, new = s3util.data(size, seed=key + "old"), s3util.data(size, seed=key + "new")
    client = s3util.upstream_client(upstream)
    client.put_object(Bucket=upstream.bucket, Key=key, Body=old)
    old_etag = client.head_object(Bucket=upstream.bucket, Key=key)["ETag"]
    gw = gateway(upstream, rate=rate, cache_size="64M", extra_args=list(extra_args))
    gw.require_real()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    whole = pool.submit(rawhttp.get, gw.endpoint, _path(gw, key), None, 60)
    deadline = time.monotonic() + 10
    while gw.proxy.bytes_down < 256 * KiB and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gw.proxy.bytes_down >= 256 * KiB, "the fill did not start"
    client.put_object(Bucket=upstream.bucket, Key=key, Body=new)
    return gw, key, old, new, old_etag, whole, pool


def test_whole_get_during_an_overwrite_is_one_version_or_a_failed_transfer(upstream, gateway):
    # s3rver rewrites the file in place under the running fill, whose body then fails its
    # MD5: the client must see a failed transfer, not a complete mix of both versions.
    # radosgw keeps the old version readable: the client gets it whole. (16 MiB: more than
    # loopback socket buffers hold, so that s3rver still reads the file after the overwrite.)
    # The block size is raised so that this 16 MiB object is filled whole and checked by its
    # MD5, the subject here; objects read by blocks are tested under an overwrite in
    # test_large_objects.py.
    gw, key, old, new, _, whole, pool = _slow_fill_then_overwrite(
        upstream, gateway, 16 * MiB, rate=4 * MiB, extra_args=("--block-size", "32M"))
    r = whole.result()
    pool.shutdown()
    assert r.status == 200, (r.status, r.error)
    if r.complete:
        assert r.body == old, "a complete body that is not the version its ETag names"
    else:
        assert upstream.name == "s3rver", "radosgw keeps the old version readable: %s" % r.error
        _assert_fill_failure_logged(gw)
    # Nothing mixed was stored: the next GET is the new version, whole.
    gw.stats_when(lambda s: s["fills_stored"] + s["fills_failed"] >= 1)
    again = rawhttp.get(gw.endpoint, _path(gw, key), timeout=60)
    assert again.complete and again.body in (old, new), (again.error, len(again.body))
    if again.headers.get("x-cache") == "HIT":
        assert again.body == old and r.complete


# ---- item 4: a range beside a fill is of the fill's version ---------------------------------


def test_range_beside_a_fill_never_mixes_in_an_overwritten_version(upstream, gateway):
    # The fill runs slowly (1 MiB/s through a throttling TCP proxy); meanwhile the object is
    # overwritten upstream, and a client asks for a range far ahead of the fill with
    # If-Match: <the ETag the fill is serving>. It must get the old version's bytes, or a
    # failed transfer (s3rver rewrites files in place, so its fill may itself turn out
    # mixed), never the new version's bytes under the old ETag.
    gw, key, old, new, old_etag, whole, pool = _slow_fill_then_overwrite(upstream, gateway,
                                                                         6 * MiB)
    first, last = 5 * MiB, 5 * MiB + 64 * KiB - 1
    r = rawhttp.get(gw.endpoint, _path(gw, key),
                    {"Range": "bytes=%d-%d" % (first, last), "If-Match": old_etag}, timeout=60)
    assert r.status == 206, (r.status, r.error, r.body[:300])
    assert r.headers.get("etag") == old_etag
    assert r.body != new[first:last + 1], "the new version's bytes under the old ETag"
    if r.complete:
        assert r.body == old[first:last + 1]
    else:
        # s3rver rewrote the file under the fill, which then failed its MD5: the range read
        # from it must fail too. radosgw keeps the old version readable until it is done.
        assert upstream.name == "s3rver", "radosgw keeps the old version readable: %s" % r.error
        _assert_fill_failure_logged(gw)
    w = whole.result()
    pool.shutdown()
    if w.complete:
        assert w.body == old


# ---- item 8: a 200 without an ETag ----------------------------------------------------------


def test_get_dot_dot_of_a_bucket_against_s3rver_is_answered_and_not_cached(s3rver, gateway):
    # libcurl may resolve /test/.. to / (ListBuckets: a 200 without an ETag) before it
    # reaches s3rver; whatever the upstream answers, the gateway answers and stays up.
    gw = gateway(s3rver)
    gw.require_real()
    for _ in range(2):
        r = rawhttp.get(gw.endpoint, "/%s/.." % gw.bucket)
        assert r.status is not None, r.error
        assert r.headers.get("x-cache") != "HIT", r.headers
    key = s3util.unique_key("after-dotdot")
    body = s3util.data(10 * KiB, seed=key)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=body)
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "MISS")


def _assert_etagless_reads(gw, key, body):
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key)), body, "MISS")
    r = rawhttp.get(gw.endpoint, _path(gw, key), method="HEAD")
    assert r.status == 200 and int(r.headers["content-length"]) == len(body), r
    assert "etag" not in r.headers
    far = len(body) - 1000  # beyond the part of a miss read from the fill at once
    for first, last in ((0, 9), (far, far + 99)):
        r = rawhttp.get(gw.endpoint, _path(gw, key), {"Range": "bytes=%d-%d" % (first, last)})
        _assert_clean(r, body[first:last + 1], status=206)
    r = rawhttp.get(gw.endpoint, _path(gw, key), {"If-Match": '"abc"'})
    assert r.status == 412, (r.status, r.body[:200])
    _assert_clean(rawhttp.get(gw.endpoint, _path(gw, key), {"If-None-Match": '"abc"'}), body)


def test_fake_200_without_etag_is_served_never_cached_and_survives_a_restart(
        faulty_upstream, gateway):
    fake = faulty_upstream
    key = "noetag/obj"
    body = s3util.data(600 * KiB + 11, seed=key)
    fake.put(key, body, faults.no_etag())
    gw = _start(gateway, fake)
    _assert_etagless_reads(gw, key, body)
    prog = manifests.prefetch(gw, [key])
    assert prog["objects_cached"] == 0 and prog["objects_failed"] == 1, prog
    assert "ETag" in prog["failures"][0]["reason"], prog
    assert gw.stats()["objects"] == 0
    gw.restart()  # on the same cache directory
    _assert_etagless_reads(gw, key, body)
    assert gw.stats()["objects"] == 0
