"""Concurrent misses for one key are filled by one upstream fetch."""
import concurrent.futures
import threading

from harness import s3util

MiB = 1024 * 1024


def test_concurrent_misses_for_one_key_make_one_upstream_fetch(upstream, gateway):
    size = 4 * MiB
    key = s3util.unique_key("herd")
    body = s3util.data(size, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    # 16 MiB/s per upstream connection: the fetch takes >= 0.25 s, so all
    # 16 requests arrive while the first is still in flight.
    gw = gateway(upstream, rate=16 * MiB)
    gw.require_real()
    gw.proxy.reset_counters()
    before = gw.stats()
    c = gw.client()
    start = threading.Barrier(16)

    def read(_):
        start.wait()
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        return resp["Body"].read() == body, s3util.headers_of(resp).get("x-cache")

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(read, range(16)))
    assert all(ok for ok, _ in results)
    assert all(xc in ("MISS", "HIT") for _, xc in results)
    after = gw.stats_when(lambda st: st["bytes_from_upstream"] - before["bytes_from_upstream"]
                          >= size)
    fetched = after["bytes_from_upstream"] - before["bytes_from_upstream"]
    assert size <= fetched < 2 * size, "gateway fetched %d bytes for one %d-byte object" % (
        fetched, size)
    # the proxy's own count: the upstream sent the object once (plus headers)
    assert gw.proxy.bytes_down < 2 * size, "upstream sent %d bytes" % gw.proxy.bytes_down


def test_concurrent_ranges_on_one_miss_all_correct(upstream, gateway):
    size = 3 * MiB + 333
    key = s3util.unique_key("herdrange")
    body = s3util.data(size, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    gw = gateway(upstream, rate=16 * MiB)
    c = gw.client()
    ranges = [(i * 190000, i * 190000 + 99999) for i in range(16)]
    start = threading.Barrier(len(ranges))

    def read(r):
        start.wait()
        resp = c.get_object(Bucket=gw.bucket, Key=key, Range="bytes=%d-%d" % r)
        return resp["Body"].read() == body[r[0]:r[1] + 1]

    with concurrent.futures.ThreadPoolExecutor(len(ranges)) as pool:
        assert all(pool.map(read, ranges))
    assert gw.client().get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
