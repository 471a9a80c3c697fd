"""Jobs: the manifests of one sampling plan's ranks merge into one plan (docs/manifests.md,
"Many readers: jobs and ranks"), registrations withdraw their ranks one by one, and a job's
position survives a restart. Through real upstreams and the gateway's admin API."""
import os
import time

from test_manifests import api, seed_objects, splitmix_order, wait_progress

KiB = 1024


def rank_plan(bucket, keys, rank, **extra):
    """Rank `rank` (None: no "rank" field) of a 4-rank sampling plan over keys."""
    body = {"bucket": bucket, "keys": keys, "num_epochs": 2, "shuffle": True, "seed": 7,
            "world_size": 4, "prefetch": False}
    if rank is not None:
        body["rank"] = rank
    body.update(extra)
    return body


def merged(n, epoch, ranks, world_size=4, seed=7):
    """Rank r's i-th read beside every other rank's i-th read, ranks ascending."""
    orders = [splitmix_order(n, epoch, seed, True, world_size, r, False) for r in sorted(ranks)]
    return [o[i] for i in range(len(orders[0])) for o in orders]


def test_ranks_of_one_plan_join_one_job_and_withdraw_one_by_one(s3rver, gateway):
    gw = gateway(s3rver)
    keys = ["k%03d" % i for i in range(30)]
    regs = []
    for rank in (2, 0, 3, 1):
        status, reply, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, rank))
        assert status == 201, reply
        regs.append(reply["id"])
        assert reply["job"] == regs[0]
    status, listing, _ = api(gw, "GET", "manifests")
    assert [m["id"] for m in listing["manifests"]] == [regs[0]]  # one job
    job = listing["manifests"][0]
    assert job["sampling"]["ranks"] == [0, 1, 2, 3]
    assert job["accesses"] == 2 * 8 * 4 and job["objects_total"] == 30
    for mid, rank in zip(regs, (2, 0, 3, 1)):  # each registration's order is its rank's
        status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=1" % mid)
        assert status == 200 and order["rank"] == rank
        assert order["indices"] == splitmix_order(30, 1, 7, True, 4, rank, False)
    status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=0&rank=3" % regs[1])
    assert order["indices"] == splitmix_order(30, 0, 7, True, 4, 3, False)
    status, err, _ = api(gw, "GET", "manifests/%s/order?rank=4" % regs[1])
    assert status == 400 and err["error"] == "InvalidField"

    status, left, _ = api(gw, "DELETE", "manifests/" + regs[0])  # the job's own registration
    assert status == 200 and left["state"] != "canceled"
    assert left["sampling"]["ranks"] == [0, 1, 3] and left["accesses"] == 2 * 8 * 3
    status, _, _ = api(gw, "DELETE", "manifests/" + regs[0])
    assert status == 404  # withdrawn already
    status, prog, _ = api(gw, "GET", "manifests/" + regs[2])
    assert prog["job"] == regs[0] and prog["sampling"]["ranks"] == [0, 1, 3]
    for mid in regs[1:3]:
        status, left, _ = api(gw, "DELETE", "manifests/" + mid)
        assert status == 200 and left["state"] != "canceled"
    status, last, _ = api(gw, "DELETE", "manifests/" + regs[3])
    assert status == 200 and last["state"] == "canceled"
    status, listing, _ = api(gw, "GET", "manifests")
    assert listing["manifests"] == []


def test_local_ranks_plan_the_ranks_merged_step_by_step(s3rver, gateway):
    gw = gateway(s3rver)
    keys = ["k%03d" % i for i in range(30)]
    status, reply, _ = api(gw, "POST", "manifests",
                           rank_plan(s3rver.bucket, keys, None, local_ranks=[3, 1]))
    assert status == 201, reply
    assert reply["sampling"]["ranks"] == [1, 3] and reply["accesses"] == 2 * 8 * 2
    status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=1" % reply["id"])
    assert order["rank"] is None and order["indices"] == merged(30, 1, [1, 3])
    # another rank of the same plan joins the job the local ranks made
    status, joined, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, 0))
    assert joined["job"] == reply["id"] and joined["sampling"]["ranks"] == [0, 1, 3]
    status, order, _ = api(gw, "GET", "manifests/%s/order?epoch=0" % reply["id"])
    assert order["indices"] == merged(30, 0, [0, 1, 3])


def test_a_named_job_refuses_another_dataset_and_starts_again_for_the_next_window(s3rver,
                                                                                 gateway):
    gw = gateway(s3rver)
    keys = ["k%03d" % i for i in range(10)]
    status, first, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, 0, job="j"))
    assert status == 201
    status, err, _ = api(gw, "POST", "manifests",
                         rank_plan(s3rver.bucket, keys[:9], 1, job="j"))
    assert status == 400 and err["error"] == "InvalidField"
    assert 'cannot join job "j": its dataset differs' in err["message"]
    status, err, _ = api(gw, "POST", "manifests",
                         rank_plan(s3rver.bucket, keys, 1, job="j", world_size=8))
    assert status == 400 and "its world_size differs" in err["message"]
    # the next window (seed + first epoch, as GatewaySampler posts it before it withdraws the
    # old one), and a rank registered again (a restarted trainer): another job, same name
    status, window, _ = api(gw, "POST", "manifests",
                            rank_plan(s3rver.bucket, keys, 0, job="j", seed=9))
    assert status == 201 and window["job"] == window["id"] != first["id"]
    status, again, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, 1, job="j"))
    assert status == 201 and again["job"] == first["id"]  # joins the first: rank 1 is new
    status, twice, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, 1, job="j"))
    assert status == 201 and twice["job"] == twice["id"]
    # without a job name, another seed is another job, and a rank twice is another job too
    status, other, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, 1, seed=8))
    assert status == 201 and other["job"] == other["id"]
    status, again, _ = api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, 1, seed=8))
    assert status == 201 and again["job"] == again["id"] != other["id"]


def read(gw, bucket, key):
    return gw.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def test_a_jobs_position_survives_a_restart(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    objs = seed_objects(s3rver, "resume", 40, 2 * KiB)
    keys = list(objs)
    plans = [rank_plan(s3rver.bucket, keys, r, shuffle=False) for r in (0, 1)]
    regs = [api(gw, "POST", "manifests", p)[1]["id"] for p in plans]
    for i in range(6):  # both ranks read their first 6 samples: step 6, position 12
        for r in (0, 1):
            assert read(gw, s3rver.bucket, keys[r + 4 * i]) == objs[keys[r + 4 * i]]
    wait_progress(gw, regs[0], lambda p: p["position"] == 12)
    step_file = os.path.join(gw.cache_dir, "manifests", regs[1] + ".step")
    deadline = time.monotonic() + 30
    while not (os.path.exists(step_file) and open(step_file).read().strip() == "6"):
        assert time.monotonic() < deadline, "the step was never kept"
        time.sleep(0.2)
    gw.restart()
    status, prog, _ = api(gw, "GET", "manifests/" + regs[1])
    assert status == 200 and prog["job"] == regs[0] and prog["sampling"]["ranks"] == [0, 1]
    assert prog["position"] == 12
    # the trainers go on from there: the next reads move it on, not back to the start
    assert read(gw, s3rver.bucket, keys[24]) == objs[keys[24]]
    wait_progress(gw, regs[0], lambda p: p["position"] == 13)


def test_a_large_body_is_accepted_at_once_and_parsed_off_the_request_threads(s3rver, gateway):
    gw = gateway(s3rver)
    keys = ["train/n%08d/%010d.JPEG" % (i // 1000, i) for i in range(60000)]  # ~2.3 MB
    body = {"bucket": s3rver.bucket, "keys": keys, "world_size": 2, "rank": 1,
            "prefetch": False, "shuffle": True}
    status, reply, headers = api(gw, "POST", "manifests", body)
    assert status == 202 and reply["state"] == "parsing", reply
    assert headers["Location"] == "/_s3cached/manifests/" + reply["id"]
    prog = wait_progress(gw, reply["id"], lambda p: p["state"] != "parsing")
    assert prog["state"] == "planned" and prog["objects_total"] == 30000
    status, order, _ = api(gw, "GET", "manifests/%s/order" % reply["id"])
    assert order["indices"] == splitmix_order(60000, 0, 0, True, 2, 1, False)
    # rank 0 of the same plan joins the job once parsed
    body["rank"] = 0
    status, other, _ = api(gw, "POST", "manifests", body)
    assert status == 202
    prog = wait_progress(gw, other["id"], lambda p: p["state"] != "parsing")
    assert prog["job"] == reply["id"] and prog["sampling"]["ranks"] == [0, 1]

    # a large body that is no plan fails with the reason; one canceled while parsing is gone
    bad = dict(body, colour=1)
    status, failed, _ = api(gw, "POST", "manifests", bad)
    assert status == 202
    prog = wait_progress(gw, failed["id"], lambda p: p["state"] != "parsing")
    assert prog["state"] == "failed" and 'unknown field "colour"' in prog["error"]
    body["seed"] = 1
    status, gone, _ = api(gw, "POST", "manifests", body)
    status, _, _ = api(gw, "DELETE", "manifests/" + gone["id"])
    assert status == 200
    status, _, _ = api(gw, "GET", "manifests/" + gone["id"])
    assert status == 404


def xcache(gw, bucket, key):
    r = gw.client().get_object(Bucket=bucket, Key=key)
    return r["Body"].read(), r["ResponseMetadata"]["HTTPHeaders"].get("x-cache")


def test_a_cache_aware_epoch_reads_each_ranks_cached_share_first(s3rver, gateway):
    n = 60
    gw = gateway(s3rver, cache_size="2M")  # 32 of the 60 objects
    gw.require_real()
    objs = seed_objects(s3rver, "aware", n, 64 * KiB)
    keys = list(objs)
    regs = [api(gw, "POST", "manifests", rank_plan(s3rver.bucket, keys, r, world_size=2,
                                                   num_epochs=2, cache_aware=True))[1]["id"]
            for r in (0, 1)]
    shares = {r: splitmix_order(n, 0, 7, True, 2, r, False) for r in (0, 1)}
    for r in (0, 1):  # epoch 0, decided on an empty cache: the seeded shares, all misses
        order = api(gw, "GET", "manifests/%s/order?epoch=0" % regs[r])[1]["indices"]
        assert order == shares[r]
    for i in range(n // 2):
        for r in (0, 1):
            body, _ = xcache(gw, s3rver.bucket, keys[shares[r][i]])
            assert body == objs[keys[shares[r][i]]]
    # every fill of epoch 0 stored (or evicted since): what the cache holds no longer moves
    gw.stats_when(lambda st: st["objects"] + st["evictions"] >= n)
    seeded = {r: splitmix_order(n, 1, 7, True, 2, r, False) for r in (0, 1)}
    replies = {r: api(gw, "GET", "manifests/%s/order?epoch=1" % regs[r])[1] for r in (0, 1)}
    orders = {r: replies[r]["indices"] for r in (0, 1)}
    firsts = {r: replies[r]["cached_first"] for r in (0, 1)}
    for r in (0, 1):
        # the same share as the seed gives the rank, once each: only the order moved
        assert sorted(orders[r]) == sorted(seeded[r]) and len(orders[r]) == n // 2
        # cached first, each part in the seeded order (a stable partition)
        cached = set(orders[r][:firsts[r]])
        assert orders[r] == ([k for k in seeded[r] if k in cached] +
                             [k for k in seeded[r] if k not in cached])
        assert 0 < firsts[r] < n // 2
    assert firsts[0] + firsts[1] <= 32  # what the cache holds
    # reading the epoch, the cached parts of both ranks, then the rest: hits, then misses
    for part in (lambda r: orders[r][:firsts[r]], lambda r: orders[r][firsts[r]:]):
        for r in (0, 1):
            for k in part(r):
                body, how = xcache(gw, s3rver.bucket, keys[k])
                assert body == objs[keys[k]]
                assert how == ("HIT" if k in orders[r][:firsts[r]] else "MISS"), (r, k, how)
    # every sample once in the epoch over both ranks (no padding: 60 = 2 x 30)
    assert sorted(orders[0] + orders[1]) == list(range(n))
    # the decision is kept: asked again, and after a restart, the same order
    assert api(gw, "GET", "manifests/%s/order?epoch=1" % regs[0])[1]["indices"] == orders[0]
    log = os.path.join(gw.cache_dir, "manifests", regs[0] + ".cached")
    whole = os.path.getsize(log)
    with open(log, "ab") as f:  # a record torn by a crash while it was appended
        f.write(b"epoch 0 bytes 8\n\x01\x02")
    gw.restart()
    again = api(gw, "GET", "manifests/%s/order?epoch=1" % regs[1])[1]
    assert again["indices"] == orders[1] and again["cached_first"] == firsts[1]
    assert os.path.getsize(log) == whole  # cut back, so later records are read


MiB = 1024 * 1024


def test_a_warm_job_does_not_starve_another_jobs_next_reads(s3rver, gateway):
    # job A's plan is twice the cache and its window is warm, filling the cache, when job B
    # registers. Both trainers are at their start, so B's first reads are needed before A's
    # tail: the window is shared by need (oldest first, A's window took all the room and B
    # got nothing before A's trainer moved)
    gw = gateway(s3rver, cache_size="4M", policy="clairvoyant")
    gw.require_real()
    a = seed_objects(s3rver, "warm-a", 240, 32 * KiB)
    b = seed_objects(s3rver, "warm-b", 16, 32 * KiB)
    ma = api(gw, "POST", "manifests", {"bucket": s3rver.bucket, "keys": list(a)})[1]["id"]
    before = wait_progress(gw, ma, lambda p: p["state"] == "warm")
    assert before["objects_cached"] >= 100, before
    mb = api(gw, "POST", "manifests", {"bucket": s3rver.bucket, "keys": list(b)})[1]["id"]
    wait_progress(gw, mb, lambda p: p["objects_cached"] == 16, timeout=30)
    after = wait_progress(gw, ma, lambda p: p["state"] == "warm")
    # A gave up the room of B's 16 objects at its tail, and kept its next reads
    assert before["objects_cached"] - 24 <= after["objects_cached"] <= before["objects_cached"]
    client = gw.client()
    for k in list(a)[:8]:
        r = client.get_object(Bucket=s3rver.bucket, Key=k)
        assert r["Body"].read() == a[k]
        assert r["ResponseMetadata"]["HTTPHeaders"]["x-cache"] == "HIT"


def test_a_restarted_gateway_does_not_warm_again_what_the_trainers_read(s3rver, gateway):
    # a cache of 16 of the 48 objects, clairvoyant: the window ahead of the trainer is all it
    # holds, so what was read and evicted would be fetched again from a position of 0
    gw = gateway(s3rver, cache_size="1M", policy="clairvoyant", proxy=True)
    gw.require_real()
    objs = seed_objects(s3rver, "rewarm", 48, 64 * KiB)
    keys = list(objs)
    mid = api(gw, "POST", "manifests", {"bucket": s3rver.bucket, "keys": keys})[1]["id"]
    for k in keys[:24]:
        assert read(gw, s3rver.bucket, k) == objs[k]
    wait_progress(gw, mid, lambda p: p["position"] == 24)
    step_file = os.path.join(gw.cache_dir, "manifests", mid + ".step")
    deadline = time.monotonic() + 30
    while not (os.path.exists(step_file) and open(step_file).read().strip() == "24"):
        assert time.monotonic() < deadline, "the step was never kept"
        time.sleep(0.2)
    wait_progress(gw, mid, lambda p: p["state"] == "warm")
    gw.proxy.reset_counters()
    gw.restart()
    prog = wait_progress(gw, mid, lambda p: p["state"] == "warm")
    assert prog["position"] == 24
    fetched = {target.rsplit("/", 1)[-1] for method, target in gw.proxy.request_lines()
               if method == "GET"}
    read_before = {k.rsplit("/", 1)[-1] for k in keys[:24]}
    assert not fetched & read_before, sorted(fetched & read_before)
