"""Manifests: warming the cache ahead of a trainer, the order endpoint, progress,
cancellation, bad input, and the importance endpoint, through real upstreams."""
import concurrent.futures
import json
import os
import time
import urllib.error
import urllib.request

import botocore.exceptions
import pytest

from harness import proc, s3util
from harness.store_hold import StoreHeld

KiB = 1024
MiB = 1024 * 1024


# ---- helpers ------------------------------------------------------------------


def api(gw, method, path, body=None, raw=None):
    """Calls the admin API; returns (status, parsed JSON or None, headers)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(gw.endpoint + "/_s3cached/" + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            text = r.read()
            return r.status, (json.loads(text) if text else None), dict(r.headers)
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, (json.loads(text) if text else None), dict(e.headers)


def seed_objects(up, prefix, n, size):
    """Puts n objects of size bytes under prefix; returns {key: body}, keys in order."""
    client = s3util.upstream_client(up)
    objs = {"%s/%05d.bin" % (prefix, i): None for i in range(n)}
    for key in objs:
        objs[key] = s3util.data(size, seed=key)

    def put(key):
        client.put_object(Bucket=up.bucket, Key=key, Body=objs[key])

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(put, objs))
    return objs


def wait_progress(gw, mid, done, timeout=120):
    """Polls a manifest's progress until done(progress) holds; fails on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        status, prog, _ = api(gw, "GET", "manifests/" + mid)
        assert status == 200, prog
        if done(prog):
            return prog
        assert time.monotonic() < deadline, "manifest never got there: %r" % prog
        time.sleep(0.1)


def is_settled(prog):
    return prog["state"] in ("warm", "done", "failed", "canceled")


def splitmix_order(n, epoch, seed, shuffle, world_size, rank, drop_last):
    """The documented deterministic order, written independently of the gateway."""
    mask = (1 << 64) - 1
    perm = list(range(n))
    if shuffle:
        state = (seed + epoch) & mask

        def nxt():
            nonlocal state
            state = (state + 0x9E3779B97F4A7C15) & mask
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            return z ^ (z >> 31)

        for i in range(n - 1, 0, -1):
            j = nxt() % (i + 1)
            perm[i], perm[j] = perm[j], perm[i]
    if drop_last and n % world_size:
        total = (n // world_size) * world_size
        perm = perm[:total]
    else:
        total = -(-n // world_size) * world_size
        perm = [perm[i % n] for i in range(total)]
    return perm[rank:total:world_size]


# ---- the bar: 1,000 objects warm to 100%, then only hits in the gateway's order ----------


def test_manifest_warms_1000_objects_then_trainer_in_gateway_order_gets_only_hits(
        s3rver, gateway):
    gw = gateway(s3rver, cache_size="64M", policy="clairvoyant")
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("warm1k"), 1000, 4 * KiB)
    keys = list(objs)
    status, reply, headers = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": keys, "shuffle": True, "seed": 7})
    assert status == 201, reply
    mid = reply["id"]
    assert headers["Location"] == "/_s3cached/manifests/" + mid
    prog = wait_progress(gw, mid, lambda p: p["percent"] >= 100 or is_settled(p))
    assert prog["objects_total"] == 1000
    assert prog["objects_cached"] == 1000
    assert prog["objects_failed"] == 0
    assert prog["percent"] == 100
    assert prog["bytes_total"] == prog["bytes_cached"] == 1000 * 4 * KiB
    assert gw.stats()["prefetched_objects"] == 1000

    status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=0" % mid)
    assert status == 200
    assert order["keys"] == [keys[i] for i in order["indices"]]
    assert sorted(order["keys"]) == sorted(keys) and order["keys"] != keys  # shuffled
    before = gw.stats()
    c = gw.client()
    for key in order["keys"]:
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == objs[key]
        gw.assert_cache(s3util.headers_of(resp), "HIT")
    after = gw.stats()
    assert after["hits"] - before["hits"] == 1000
    assert after["misses"] == before["misses"]
    prog = wait_progress(gw, mid, lambda p: p["state"] == "done")
    assert prog["position"] == 1000


# ---- the store behind the prefetcher: a slot is freed once the body has arrived -----------
#
# StoreHeld takes LMDB's write lock from the test, so the gateway's store writer waits as
# behind a disk that does not answer: bodies that arrived stay queued in memory.


def fetches_settle(gw, want, timeout=30):
    """Waits for upstream_fetches to reach want, then a second more: a fetch past the
    bound would show by then. Returns the stats."""
    gw.stats_when(lambda s: s["upstream_fetches"] >= want, timeout=timeout)
    time.sleep(1.0)
    return gw.stats()


@pytest.mark.parametrize("buffer,in_buffer", [("0", 0), ("250K", 2)])
def test_a_stalled_store_keeps_arrived_prefetches_within_the_buffer_and_loses_none(
        upstream, gateway, buffer, in_buffer):
    size, n, slots = 100 * KiB, 20, 4
    gw = gateway(upstream, extra_args=["--prefetch-concurrency", str(slots),
                                       "--prefetch-buffer", buffer])
    gw.require_real()
    objs = seed_objects(upstream, s3util.unique_key("held"), n, size)
    keys = list(objs)
    with StoreHeld(gw.cache_dir):
        status, reply, _ = api(gw, "POST", "manifests", {"bucket": upstream.bucket, "keys": keys})
        assert status == 201, reply
        mid = reply["id"]
        # Each slot holds a body the store has not taken, and the buffer as many more as fit:
        # then the prefetcher waits, whatever is left of the manifest.
        st = fetches_settle(gw, slots + in_buffer)
        assert st["upstream_fetches"] == slots + in_buffer
        assert st["prefetch_unstored_bytes"] == in_buffer * size
        assert st["prefetch_unstored_peak_bytes"] == in_buffer * size
        assert st["fills_stored"] == 0 and st["objects"] == 0
        _, prog, _ = api(gw, "GET", "manifests/" + mid)
        assert prog["objects_cached"] == 0
        # A body arrived and not stored is read from memory, whole, with no second fetch.
        body = gw.client().get_object(Bucket=upstream.bucket, Key=keys[0])["Body"].read()
        assert body == objs[keys[0]]
        assert gw.stats()["upstream_fetches"] == slots + in_buffer
    prog = wait_progress(gw, mid, lambda p: p["objects_cached"] == n or is_settled(p))
    assert prog["objects_cached"] == n and prog["objects_failed"] == 0
    st = gw.stats_when(lambda s: s["prefetch_unstored_bytes"] == 0)
    assert st["prefetch_unstored_bytes"] == 0
    assert st["prefetch_unstored_peak_bytes"] == in_buffer * size  # never past the buffer
    assert st["upstream_fetches"] == n  # each object fetched once
    c = gw.client()
    for key in keys:
        resp = c.get_object(Bucket=upstream.bucket, Key=key)
        assert resp["Body"].read() == objs[key]
        gw.assert_cache(s3util.headers_of(resp), "HIT")


def test_an_object_overwritten_while_its_arrived_prefetch_waits_for_the_store_is_never_stale(
        upstream, gateway):
    size = 100 * KiB
    gw = gateway(upstream, extra_args=["--prefetch-buffer", "1M"])
    gw.require_real()
    key = s3util.unique_key("overwritten")
    old, new = s3util.data(size, seed="old"), s3util.data(size, seed="new")
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=old)
    held = StoreHeld(gw.cache_dir).hold()
    try:
        status, reply, _ = api(gw, "POST", "manifests", {"bucket": upstream.bucket, "keys": [key]})
        assert status == 201, reply
        st = gw.stats_when(lambda s: s["prefetch_unstored_bytes"] == size, timeout=30)
        assert st["prefetch_unstored_bytes"] == size
        # The write drops the cached copy: that removal is queued behind the old body's put.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            put = pool.submit(gw.client().put_object, Bucket=upstream.bucket, Key=key, Body=new)
            time.sleep(0.5)
            held.release()
            put.result(timeout=60)
    finally:
        held.release()
    c = gw.client()
    for _ in range(2):  # the miss, then the copy it stored
        assert c.get_object(Bucket=upstream.bucket, Key=key)["Body"].read() == new


def test_shutdown_with_arrived_prefetches_waiting_for_the_store_stores_them_and_exits_cleanly(
        s3rver, gateway):
    size, slots, in_buffer = 100 * KiB, 2, 2
    gw = gateway(s3rver, extra_args=["--prefetch-concurrency", str(slots),
                                     "--prefetch-buffer", "250K"])
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("shutdown"), 10, size)
    keys = list(objs)
    held = StoreHeld(gw.cache_dir).hold()
    try:
        status, reply, _ = api(gw, "POST", "manifests", {"bucket": s3rver.bucket, "keys": keys})
        assert status == 201, reply
        st = fetches_settle(gw, slots + in_buffer)
        assert st["upstream_fetches"] == slots + in_buffer
        assert st["prefetch_unstored_bytes"] == in_buffer * size
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            stopping = pool.submit(gw.stop)
            time.sleep(0.5)
            assert not stopping.done(), "the gateway did not wait for its store"
            held.release()
            stopping.result(timeout=60)
    finally:
        held.release()
    assert gw.problems == []  # exited 0 after SIGTERM, no sanitizer report
    gw.start()
    c = gw.client()
    for key in keys[:slots + in_buffer]:  # a manifest in order is fetched in order
        resp = c.get_object(Bucket=s3rver.bucket, Key=key)
        assert resp["Body"].read() == objs[key]
        gw.assert_cache(s3util.headers_of(resp), "HIT")


# ---- orders -----------------------------------------------------------------------


def test_sampling_plan_orders_follow_the_documented_shuffle_and_rank_split(s3rver, gateway):
    gw = gateway(s3rver)
    keys = ["k%03d" % i for i in range(10)]
    orders = {}
    first = None
    for rank in range(3):
        status, reply, _ = api(gw, "POST", "manifests", {
            "bucket": s3rver.bucket, "keys": keys, "num_epochs": 2, "shuffle": True,
            "seed": 42, "world_size": 3, "rank": rank, "prefetch": False})
        assert status == 201, reply
        first = first or reply["id"]
        # the ranks of one plan make one job: ceil(10 / 3) per epoch and rank, padded
        assert reply["job"] == first and reply["sampling"]["ranks"] == list(range(rank + 1))
        assert reply["accesses"] == 2 * 4 * (rank + 1)
        for epoch in range(2):
            status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=%d" % (reply["id"], epoch))
            assert status == 200
            want = splitmix_order(10, epoch, 42, True, 3, rank, False)
            assert order["indices"] == want
            assert order["keys"] == [keys[i] for i in want]
            orders[(rank, epoch)] = want
    for epoch in range(2):
        covered = set()
        for rank in range(3):
            covered |= set(orders[(rank, epoch)])
        assert covered == set(range(10))
    assert orders[(0, 0)] != orders[(0, 1)]  # each epoch is shuffled anew


def test_drop_last_and_explicit_epochs_forms(s3rver, gateway):
    gw = gateway(s3rver)
    keys = ["k%d" % i for i in range(10)]
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": keys, "world_size": 3, "rank": 2, "drop_last": True,
        "prefetch": False})
    assert status == 201
    status, order, _ = api(gw, "GET", "manifests/%s/order" % reply["id"])
    assert order["indices"] == splitmix_order(10, 0, 0, False, 3, 2, True) == [2, 5, 8]

    epochs = [["b", "a", "c"], ["c", "b"]]
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "epochs": epochs, "prefetch": False})
    assert status == 201, reply
    assert reply["accesses"] == 5 and reply["epochs"] == 2
    for e, want in enumerate(epochs):
        status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=%d" % (reply["id"], e))
        assert status == 200
        assert order["keys"] == want and order["indices"] is None
    status, err, _ = api(gw, "GET", "manifests/%s/order?epoch=2" % reply["id"])
    assert status == 400 and err["error"] == "InvalidField" and "2 epochs" in err["message"]


# ---- prefix manifests, through both upstreams ------------------------------------------


def test_prefix_manifest_lists_through_the_upstream_and_warms(upstream, gateway):
    gw = gateway(upstream)
    gw.require_real()
    prefix = s3util.unique_key("pfx") + "/"
    objs = seed_objects(upstream, prefix.rstrip("/"), 25, 3 * KiB + 7)
    status, reply, _ = api(gw, "POST", "manifests", {"bucket": upstream.bucket, "prefix": prefix})
    assert status == 201, reply
    prog = wait_progress(gw, reply["id"], lambda p: p["state"] in ("warm", "failed"))
    assert prog["state"] == "warm", prog
    assert prog["objects_total"] == 25 and prog["objects_cached"] == 25
    assert prog["bytes_total"] == 25 * (3 * KiB + 7)
    status, order, _ = api(gw, "GET", "manifests/%s/order" % reply["id"])
    assert order["keys"] == sorted(objs)
    c = gw.client()
    for key in order["keys"]:
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == objs[key]
        gw.assert_cache(s3util.headers_of(resp), "HIT")


def test_prefix_matching_nothing_fails_with_a_reason(s3rver, gateway):
    gw = gateway(s3rver)
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "prefix": "no-such-prefix-%s/" % s3util.unique_key("x")})
    assert status == 201
    prog = wait_progress(gw, reply["id"], is_settled)
    assert prog["state"] == "failed"
    assert "no objects" in prog["error"]


# ---- larger than the cache ------------------------------------------------------------


def test_manifest_larger_than_cache_warms_what_fits_by_next_use(s3rver, gateway):
    gw = gateway(s3rver, cache_size="2M", policy="clairvoyant")
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("big"), 60, 100 * KiB)
    keys = list(objs)
    status, reply, _ = api(gw, "POST", "manifests", {"bucket": s3rver.bucket, "keys": keys})
    assert status == 201
    prog = wait_progress(gw, reply["id"], is_settled)
    assert prog["state"] == "warm"
    assert 10 <= prog["objects_cached"] < 20  # 90% of 2 MiB is 18 objects of 100 KiB
    assert prog["objects_cached"] == prog["fits"]
    st = gw.stats()
    assert st["used_bytes"] <= st["capacity_bytes"]
    assert st["evictions"] == 0  # nothing needed soon was pushed out to make room
    # the objects cached are the first ones in the order, and the prefetcher follows the reader
    c = gw.client()
    hits = 0
    for key in keys:
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        assert resp["Body"].read() == objs[key]
        hits += s3util.headers_of(resp)["x-cache"] == "HIT"
        time.sleep(0.02)
    assert hits >= prog["objects_cached"]


def test_next_epoch_is_warmed_ahead_though_the_policy_evicted_what_the_trainer_read(
        s3rver, gateway):
    """
    clairvoyant evicts first what the trainer has just read (its next use is an epoch away).
    The prefetcher used to keep counting such items as cached until they came within 64
    cached items of the trainer, so at an epoch's end it fetched nothing further for the next
    one, and the trainer missed there. The items the trainer read are now checked against the
    store when the walk next counts them, so everything that fits is fetched before it is read:
    with the upstream cut off once the prefetcher settled, all of it is served.
    """
    gw = gateway(s3rver, proxy=True, cache_size="2M", policy="clairvoyant")
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("epochs"), 500, 8 * KiB)
    keys = list(objs)
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": keys, "num_epochs": 2, "shuffle": True, "seed": 3})
    assert status == 201, reply
    mid = reply["id"]
    c = gw.client()

    def read(key):
        try:
            resp = c.get_object(Bucket=gw.bucket, Key=key)
        except botocore.exceptions.ClientError as e:
            return "error %s" % e.response["ResponseMetadata"]["HTTPStatusCode"]
        assert resp["Body"].read() == objs[key]
        return s3util.headers_of(resp)["x-cache"]

    status, first, _ = api(gw, "GET", "manifests/%s/order?epoch=0" % mid)
    assert status == 200
    for key in first["keys"]:
        assert not read(key).startswith("error")
    assert gw.stats()["evictions"] > 0  # the dataset is twice the cache
    # The trainer is at the second epoch's start; the prefetcher warms what fits of it.
    prog = wait_progress(gw, mid, lambda p: p["state"] == "warm" and p["objects_in_flight"] == 0)
    assert prog["position"] == 500
    fits = prog["fits"]
    assert 64 + 50 < fits < 500  # beyond the 64 next to the trainer that were always checked
    status, second, _ = api(gw, "GET", "manifests/%s/order?epoch=1" % mid)
    assert status == 200
    gw.proxy.stop()  # from here, only what the cache holds can be served
    got = [read(key) for key in second["keys"][:fits]]
    missed = [(i, x) for i, x in enumerate(got) if x != "HIT"]
    assert missed == [], "positions of the second epoch not served from the cache: %r" % missed


# ---- failures, cancellation, listing, restart -------------------------------------------


def test_missing_keys_are_reported_per_key_and_the_rest_warms(s3rver, gateway):
    gw = gateway(s3rver)
    objs = seed_objects(s3rver, s3util.unique_key("some"), 5, 1 * KiB)
    missing = [s3util.unique_key("absent") for _ in range(3)]
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": list(objs) + missing})
    assert status == 201
    prog = wait_progress(gw, reply["id"], lambda p: is_settled(p) and not p["objects_in_flight"])
    assert prog["objects_cached"] == 5 and prog["objects_failed"] == 3
    assert sorted(f["key"] for f in prog["failures"]) == sorted(missing)
    assert all(f["reason"].startswith("NoSuchKey") for f in prog["failures"])


def test_cancel_removes_the_manifest_and_listing_shows_the_rest(s3rver, gateway):
    gw = gateway(s3rver)
    ids = []
    for i in range(2):
        status, reply, _ = api(gw, "POST", "manifests", {
            "bucket": s3rver.bucket, "keys": ["a%d" % i], "prefetch": False, "name": "n%d" % i})
        assert status == 201
        ids.append(reply["id"])
    status, listing, _ = api(gw, "GET", "manifests")
    assert [m["id"] for m in listing["manifests"]] == ids
    assert [m["name"] for m in listing["manifests"]] == ["n0", "n1"]
    status, final, _ = api(gw, "DELETE", "manifests/" + ids[0])
    assert status == 200 and final["state"] == "canceled"
    status, err, _ = api(gw, "GET", "manifests/" + ids[0])
    assert status == 404 and err["error"] == "NotFound"
    status, listing, _ = api(gw, "GET", "manifests")
    assert [m["id"] for m in listing["manifests"]] == ids[1:]


def test_manifests_are_registered_again_after_a_restart(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": ["x", "y"], "prefetch": False})
    assert status == 201
    gw.restart()
    status, prog, _ = api(gw, "GET", "manifests/" + reply["id"])
    assert status == 200 and prog["objects_total"] == 2
    status, again, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": ["z"], "prefetch": False})
    assert again["id"] != reply["id"]


# ---- bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("raw,code,needle", [
    (b"{not json", "InvalidJSON", ""),
    (b'{"bucket": "bkt", "keys": ["a"], "colour": 1}', "UnknownField", "colour"),
    (b'{"keys": ["a"]}', "MissingField", "bucket"),
    (b'{"bucket": "bkt", "keys": ["a"], "prefix": "p/"}', "InvalidField", ""),
    (b'{"bucket": "bkt", "keys": ["a", "a"]}', "InvalidField", ""),
    (b'{"bucket": "bkt", "keys": [1]}', "InvalidField", ""),
    (b'{"bucket": "bkt", "keys": ["a"], "world_size": 2, "rank": 2}', "InvalidField", "rank"),
    (b'{"bucket": "bkt", "keys": [{"key": "a", "offset": 0, "length": 9, "end": 8}]}',
     "UnknownField", "end"),
    (b'{"bucket": "bkt", "keys": [{"key": "a", "length": 9}]}', "MissingField", "offset"),
    (b'{"bucket": "bkt", "keys": [{"key": "a", "offset": 0, "length": 0}]}', "InvalidField",
     "keys[0].length"),
    (b'{"bucket": "bkt", "keys": [{"key": "a", "offset": 5497558138879, "length": 2}]}',
     "InvalidField", "5 TiB"),
    (b'{"bucket": "bkt", "keys": [{"key": "a", "offset": 0, "length": 9}, "a", '
     b'{"key": "a", "offset": 0, "length": 9}]}', "InvalidField", "repeats keys[0]"),
    (b"[" * 100000, "InvalidJSON", ""),
])
def test_broken_manifests_get_a_precise_400(s3rver, gateway, raw, code, needle):
    gw = gateway(s3rver)
    status, err, _ = api(gw, "POST", "manifests", raw=raw)
    assert status == 400, err
    assert err["error"] == code
    assert needle in err["message"]


def test_oversized_manifest_body_is_413_and_the_gateway_keeps_serving(s3rver, gateway):
    gw = gateway(s3rver)
    body = b'{"bucket": "bkt", "keys": [' + b'"k",' * (17 * MiB) + b'"k"]}'
    status, err, _ = api(gw, "POST", "manifests", raw=body)
    assert status == 413 and err["error"] == "TooLarge"
    assert api(gw, "GET", "manifests")[0] == 200


def test_unknown_endpoints_ids_and_methods(s3rver, gateway):
    gw = gateway(s3rver)
    assert api(gw, "GET", "manifests/m999")[0] == 404
    assert api(gw, "GET", "nothing-here")[0] == 404
    status, err, _ = api(gw, "PUT", "manifests", {"bucket": "bkt"})
    assert status == 405 and err["error"] == "MethodNotAllowed"
    status, err, _ = api(gw, "GET", "manifests/m1/order?epoch=x")
    assert status == 400


# ---- importance --------------------------------------------------------------------------


def test_importance_accepts_minibatches_and_refuses_bad_losses(s3rver, gateway):
    gw = gateway(s3rver, policy="importance")
    status, reply, _ = api(gw, "POST", "importance", {
        "bucket": s3rver.bucket, "losses": {"a": 0.7, "b": 1.3, "c": 0.1}})
    assert status == 200 and reply["scored"] == 3
    status, reply, _ = api(gw, "POST", "importance", [
        {"bucket": s3rver.bucket, "losses": {"a": 0.7}},
        {"bucket": s3rver.bucket, "losses": {"d": 2.0, "e": 0.5}}])
    assert status == 200 and reply["scored"] == 3
    status, err, _ = api(gw, "POST", "importance", raw=b'{"bucket": "bkt", "losses": {"a": "x"}}')
    assert status == 400 and err["error"] == "InvalidField"
    status, err, _ = api(gw, "POST", "importance", raw=b'{"losses": {"a": 1}}')
    assert status == 400 and err["error"] == "MissingField"


def scores_path(gw):
    return os.path.join(gw.cache_dir, "manifests", "importance.scores")


def get_x_cache(c, bucket, key):
    """A whole GET through boto3 client c: its X-Cache."""
    resp = c.get_object(Bucket=bucket, Key=key)
    resp["Body"].read()
    return s3util.x_cache(resp)


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_importance_scores_are_in_force_after_a_restart(s3rver, gateway, stop):
    # A 1 MiB cache holds 16 objects of 64 KiB. The 8 "high" objects are read first, the 8
    # "low" ones next, so the high ones are the oldest; then scores are posted for them and
    # for 8 newcomers, ranked low < new < high. After a restart the newcomers are read: each
    # outranks a low object and takes its place, and the high ones all stay. Without the
    # scores the restarted policy ranks by age alone and the newcomers push out the oldest
    # objects, the high ones. sigkill: the scores come from the periodic write, not the one
    # at shutdown.
    size = 64 * KiB
    gw = gateway(s3rver, cache_size="1M", policy="importance")
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("imp"), 24, size)
    keys = list(objs)
    high, low, new = keys[:8], keys[8:16], keys[16:]
    c = gw.client()  # the same port after the restart
    for key in high + low:
        assert get_x_cache(c, gw.bucket, key) == "MISS"
    st = gw.stats_when(lambda s: s["objects"] == 16, timeout=30)
    assert st["objects"] == 16 and st["evictions"] == 0
    losses = {key: float(i) for i, key in enumerate(low + new + high)}
    status, reply, _ = api(gw, "POST", "importance", {"bucket": gw.bucket, "losses": losses})
    assert status == 200 and reply["scored"] == 24
    want = 24 + 24 * 16 + 4  # head, 24 entries, CRC: the file holds every score
    # written at most every 5 s, and 20 times as seldom as the last write took (score_keep.h)
    proc.wait_until("the scores written", lambda: os.path.exists(scores_path(gw)) and
                    os.path.getsize(scores_path(gw)) == want, 60)
    if stop == "sigkill":
        gw.stop(kill=True)
        gw.start()
    else:
        gw.restart()
    assert gw.stats()["objects"] == 16
    for i, key in enumerate(new):
        assert get_x_cache(c, gw.bucket, key) == "MISS"
        st = gw.stats_when(lambda s, i=i: s["evictions"] == i + 1, timeout=30)
        assert st["evictions"] == i + 1 and st["objects"] == 16
    got = {key: get_x_cache(c, gw.bucket, key) for key in high + new}
    assert got == {key: "HIT" for key in high + new}
    assert [get_x_cache(c, gw.bucket, key) for key in low] == ["MISS"] * 8


def test_a_corrupt_scores_file_is_ignored_with_a_warning(s3rver, gateway):
    gw = gateway(s3rver, policy="importance")
    gw.require_real()
    gw.stop()
    with open(scores_path(gw), "wb") as f:
        f.write(b"S3CSCORE" + b"\x01" * 40)
    gw.start()
    log = os.path.join(gw.workdir, "stderr.%d.log" % gw.runs)
    with open(log, encoding="utf-8", errors="replace") as f:
        assert "importance scores in %s ignored" % scores_path(gw) in f.read()
    status, reply, _ = api(gw, "POST", "importance", {
        "bucket": gw.bucket, "losses": {"a": 0.7, "b": 1.3}})
    assert status == 200 and reply["scored"] == 2
    gw.restart()  # the shutdown wrote the scores over the corrupt file
    with open(scores_path(gw), "rb") as f:
        body = f.read()
    assert body[:8] == b"S3CSCORE" and len(body) == 24 + 2 * 16 + 4
    with open(os.path.join(gw.workdir, "stderr.%d.log" % gw.runs), encoding="utf-8") as f:
        assert "importance scores: 2 restored" in f.read()


# ---- byte ranges: a replaced object, a range past the end ---------------------------------


def ranged_get(gw, key, first, last):
    """A boto3 ranged GET through the gateway: (body, X-Cache)."""
    resp = gw.client().get_object(Bucket=gw.bucket, Key=key, Range="bytes=%d-%d" % (first, last))
    return resp["Body"].read(), s3util.x_cache(resp)


def test_range_of_an_object_replaced_upstream_is_warmed_at_the_new_version(upstream, gateway):
    # The cache holds a 4 MiB object's metadata (a first manifest warmed its block 0), then
    # the object is replaced straight at the upstream. A second manifest's range in block 2 is
    # fetched at the cached ETag: a 412 (radosgw) or another ETag (s3rver). The prefetcher asks
    # a HEAD once more, records the new version and warms the range at it, as a whole
    # object's fill would; it is not failed for good with "Mismatch".
    gw = gateway(upstream, cache_size="64M", extra_args=["--block-size", "1M"])
    gw.require_real()
    key = s3util.unique_key("replaced")
    client = s3util.upstream_client(upstream)
    old, new = s3util.data(4 * MiB, seed=key + "1"), s3util.data(4 * MiB, seed=key + "2")
    client.put_object(Bucket=upstream.bucket, Key=key, Body=old)
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": upstream.bucket, "keys": [{"key": key, "offset": 10, "length": 100}]})
    assert status == 201, reply
    prog = wait_progress(gw, reply["id"], lambda p: is_settled(p) and not p["objects_in_flight"])
    assert prog["objects_cached"] == 1 and prog["objects_failed"] == 0, prog

    client.put_object(Bucket=upstream.bucket, Key=key, Body=new)
    first = 2 * MiB + 5
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": upstream.bucket, "keys": [{"key": key, "offset": first, "length": 100}]})
    assert status == 201, reply
    prog = wait_progress(gw, reply["id"], lambda p: is_settled(p) and not p["objects_in_flight"])
    assert prog["objects_failed"] == 0, prog["failures"]
    assert prog["objects_cached"] == 1, prog
    body, cache = ranged_get(gw, key, first, first + 99)
    assert body == new[first:first + 100]
    gw.assert_cache({"x-cache": cache}, "HIT")


def test_range_past_the_end_of_a_small_object_warms_nothing(s3rver, gateway):
    # A range that starts past the end of an object below the block size has no byte to warm:
    # it counts as cached (nothing to fetch), but the object is not fetched whole (as a range
    # past the end of a large object fetches no block).
    gw = gateway(s3rver, cache_size="64M", extra_args=["--block-size", "8M"])
    gw.require_real()
    key = s3util.unique_key("short")
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key,
                                              Body=s3util.data(100 * KiB, seed=key))
    status, reply, _ = api(gw, "POST", "manifests", {
        "bucket": s3rver.bucket, "keys": [{"key": key, "offset": MiB, "length": 100}]})
    assert status == 201, reply
    prog = wait_progress(gw, reply["id"], lambda p: is_settled(p) and not p["objects_in_flight"])
    assert prog["objects_cached"] == 1 and prog["objects_failed"] == 0, prog
    assert prog["bytes_total"] == prog["bytes_cached"] == 0, prog
    time.sleep(0.5)  # ten walks or more: the range is not fetched again and again
    st = gw.stats()
    assert st["used_bytes"] == 0 and st["prefetched_objects"] == 1, st


def test_samples_in_file_order_are_prefetched_one_fetch_per_block(s3rver, gateway):
    # 4,096 samples of 4 KiB read in file order from a 16 MiB tokenized file, 1 MiB blocks.
    # The walk charges each block once (all 4,096 fit in 64 MiB) and starts one prefetch per
    # block: a sample whose block is on its way for an earlier one waits for it, so up to
    # 16 blocks are fetched at once rather than 32 prefetches of samples of block 0.
    gw = gateway(s3rver, cache_size="64M", extra_args=["--block-size", "1M"])
    gw.require_real()
    key = s3util.unique_key("tokens")
    data = s3util.data(16 * MiB, seed=key)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=data)
    sample = 4 * KiB
    status, reply, _ = api(gw, "POST", "manifests", {"bucket": s3rver.bucket, "keys": [
        {"key": key, "offset": off, "length": sample} for off in range(0, len(data), sample)]})
    assert status == 201, reply
    prog = wait_progress(gw, reply["id"], lambda p: p["objects_cached"] == 4096 or
                         p["objects_failed"])
    assert prog["objects_failed"] == 0, prog["failures"]
    assert prog["fits"] == 4096, prog
    prog = wait_progress(gw, reply["id"], is_settled)
    assert prog["state"] == "warm", prog
    assert gw.stats()["prefetched_objects"] == 16  # one per block; the other samples found cached
    off = 5 * MiB + 3 * sample
    body, cache = ranged_get(gw, key, off, off + sample - 1)
    assert body == data[off:off + sample]
    gw.assert_cache({"x-cache": cache}, "HIT")
