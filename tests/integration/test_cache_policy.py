"""Cache sizing: eviction under a small capacity, and --max-object-size bypass."""
import concurrent.futures

import pytest

from harness import s3util

KiB = 1024
MiB = 1024 * 1024


def test_eviction_keeps_used_bytes_within_capacity(upstream, gateway):
    gw = gateway(upstream, cache_size="1M")
    gw.require_real()
    up = s3util.upstream_client(upstream)
    objs = {}
    for i in range(30):
        key = s3util.unique_key("evict%02d" % i)
        objs[key] = s3util.data(100 * KiB, seed=key)
        up.put_object(Bucket=upstream.bucket, Key=key, Body=objs[key])
    c = gw.client()
    for _ in range(2):
        for key, body in objs.items():
            assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    stats = gw.stats_when(lambda st: st["evictions"] > 0)
    assert stats["capacity_bytes"] == MiB
    assert 0 < stats["used_bytes"] <= stats["capacity_bytes"]
    assert stats["evictions"] > 0
    assert stats["objects"] <= 10  # at most 10 objects of 100 KiB fit in 1 MiB
    # the most recently read object is still cached
    last_key = list(objs)[-1]
    resp = c.get_object(Bucket=gw.bucket, Key=last_key)
    assert resp["Body"].read() == objs[last_key]
    gw.assert_cache(s3util.headers_of(resp), "HIT")


def test_lru_keeps_hot_object_while_cold_ones_stream_past(upstream, gateway):
    gw = gateway(upstream, cache_size="1M")  # the harness passes --policy lru
    gw.require_real()
    up = s3util.upstream_client(upstream)
    hot = s3util.unique_key("hot")
    hot_body = s3util.data(100 * KiB, seed=hot)
    up.put_object(Bucket=upstream.bucket, Key=hot, Body=hot_body)
    c = gw.client()
    assert c.get_object(Bucket=gw.bucket, Key=hot)["Body"].read() == hot_body
    for i in range(20):
        key = s3util.unique_key("cold%02d" % i)
        body = s3util.data(100 * KiB, seed=key)
        up.put_object(Bucket=upstream.bucket, Key=key, Body=body)
        assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
        resp = c.get_object(Bucket=gw.bucket, Key=hot)  # keep it recently used
        assert resp["Body"].read() == hot_body
        gw.assert_cache(s3util.headers_of(resp), "HIT")


def test_object_over_max_object_size_streams_through_as_bypass(upstream, gateway):
    gw = gateway(upstream, extra_args=["--max-object-size", "1M"])
    gw.require_real()
    up = s3util.upstream_client(upstream)
    big, small = s3util.unique_key("big"), s3util.unique_key("small")
    big_body, small_body = s3util.data(3 * MiB, seed=big), s3util.data(512 * KiB, seed=small)
    up.put_object(Bucket=upstream.bucket, Key=big, Body=big_body)
    up.put_object(Bucket=upstream.bucket, Key=small, Body=small_body)
    c = gw.client()
    before = gw.stats()
    for _ in range(2):
        resp = c.get_object(Bucket=gw.bucket, Key=big)
        assert resp["Body"].read() == big_body
        gw.assert_cache(s3util.headers_of(resp), "BYPASS")
    resp = c.get_object(Bucket=gw.bucket, Key=big, Range="bytes=1000-1099")
    assert resp["Body"].read() == big_body[1000:1100]
    gw.assert_cache(s3util.headers_of(resp), "BYPASS")
    for expected in ("MISS", "HIT"):
        resp = c.get_object(Bucket=gw.bucket, Key=small)
        assert resp["Body"].read() == small_body
        gw.assert_cache(s3util.headers_of(resp), expected)
    after = gw.stats_when(lambda st: st["bypasses"] - before["bypasses"] >= 3
                          and st["objects"] - before["objects"] >= 1)
    assert after["bypasses"] - before["bypasses"] >= 3
    assert after["objects"] - before["objects"] == 1
    assert after["used_bytes"] < 3 * MiB


def test_parallel_reads_of_many_objects_all_correct(upstream, gateway):
    gw = gateway(upstream, cache_size="8M")
    up = s3util.upstream_client(upstream)
    objs = {}
    for i in range(24):
        key = s3util.unique_key("par%02d" % i)
        objs[key] = s3util.data(150 * KiB + i, seed=key)
        up.put_object(Bucket=upstream.bucket, Key=key, Body=objs[key])
    c = gw.client()

    def read(key):
        return c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == objs[key]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            assert all(pool.map(read, list(objs)))


@pytest.mark.parametrize("first,then", [("lru", "s3fifo"), ("s3fifo", "clairvoyant"),
                                        ("importance", "fixed"), ("fixed", "lru")])
def test_policy_can_change_between_restarts_on_an_existing_cache(s3rver, gateway, first, then):
    gw = gateway(s3rver, cache_size="1M", policy=first)
    gw.require_real()
    up = s3util.upstream_client(s3rver)
    objs = {}
    for i in range(6):
        key = s3util.unique_key("switch%d" % i)
        objs[key] = s3util.data(100 * KiB, seed=key)
        up.put_object(Bucket=s3rver.bucket, Key=key, Body=objs[key])
    c = gw.client()
    for key, body in objs.items():
        assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    cached = gw.stats_when(lambda st: st["objects"] == 6)["objects"]
    assert cached == 6
    gw.policy = then
    gw.restart()
    assert gw.stats()["policy"] == then
    assert gw.stats()["objects"] == 6
    for key, body in objs.items():
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == body
        gw.assert_cache(s3util.headers_of(resp), "HIT")
    # the new policy evicts within the capacity once more objects arrive
    for i in range(12):
        key = s3util.unique_key("more%d" % i)
        body = s3util.data(100 * KiB, seed=key)
        up.put_object(Bucket=s3rver.bucket, Key=key, Body=body)
        assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    st = gw.stats_when(lambda s: s["objects"] >= 9, timeout=3)  # settles; may hold fewer
    assert st["used_bytes"] <= st["capacity_bytes"]
