"""The Python client (clients/python) against a real gateway and s3rver: a PyTorch
DataLoader with several workers follows the gateway's order through GatewaySampler and
reads every sample as a hit once the plan is warm; ranks split epochs like
DistributedSampler (also from a real torch.distributed process group); clairvoyant
caching reaches the optimum Belady allows where lru does not; ImportanceReporter's
losses decide what the importance policy evicts."""
import collections
import concurrent.futures
import functools
import multiprocessing
import os
import sys
import time
import warnings

import pytest

from harness import proc
from harness import s3util
from harness.optimum import belady_hits, lru_hits

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402

CLIENT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
if CLIENT not in sys.path:
    sys.path.insert(0, CLIENT)

from s3cached import Admin, GatewaySampler, ImportanceReporter, S3Dataset  # noqa: E402
from s3cached.order import epoch_keys  # noqa: E402

KiB = 1024
FEATURES = 64

# The brief asks for 3 loader workers; torch warns that this machine has 2 cores.
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


# ---- helpers ------------------------------------------------------------------------


@pytest.fixture
def client_env(monkeypatch):
    """Points the client's defaults at a gateway, as a trainer's environment would:
    AWS_ENDPOINT_URL for the admin API and boto3, the upstream's key pair to sign with.
    Returns a function taking the gateway."""
    harness = ("S3CACHED_BIN", "S3CACHED_IT_")  # which gateway the tests run, not the client's
    for var in list(os.environ):
        if var.startswith("AWS_") or (var.startswith("S3CACHED_") and not var.startswith(harness)):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    def point(gw):
        monkeypatch.setenv("AWS_ENDPOINT_URL", gw.endpoint)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", gw.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", gw.secret_key)
        return gw

    return point


def seed_samples(up, n, size, tag):
    """Puts n objects under a fresh prefix; returns their keys, in dataset order.

    The bytes depend only on (tag, index), so the samples, and a model trained on
    them, are the same in every run."""
    prefix = s3util.unique_key("pyclient-" + tag)
    client = s3util.upstream_client(up)
    keys = ["%s/%05d.bin" % (prefix, i) for i in range(n)]

    def put(i):
        client.put_object(Bucket=up.bucket, Key=keys[i],
                          Body=s3util.data(size, seed="%s-%d" % (tag, i)))

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(n)))
    return keys


def decode(body):
    """A sample: the first FEATURES bytes scaled to [0, 1]; its label: is byte 0 >= 128."""
    x = torch.tensor(list(body[:FEATURES]), dtype=torch.float32) / 255.0
    return x, torch.tensor([1.0 if body[0] >= 128 else 0.0])


def hits_and_misses(before, after):
    return after["hits"] - before["hits"], after["misses"] - before["misses"]


def settled_stats(gw, want_hits, timeout=30.0):
    """Stats once the gateway has counted want_hits hits more (counters follow the bytes)."""
    return gw.stats_when(lambda st: st["hits"] >= want_hits, timeout=timeout)


# ---- 1. a DataLoader with workers follows the gateway's order, and only hits ------------


def test_dataloader_with_workers_follows_the_gateway_order_and_only_hits_once_warm(
        s3rver, gateway, client_env):
    gw = client_env(gateway(s3rver, cache_size="64M"))
    gw.require_real()
    n, epochs, seed = 200, 3, 1234
    keys = seed_samples(s3rver, n, 4 * KiB, "train")
    admin = Admin()  # from AWS_ENDPOINT_URL, as a trainer would
    assert admin.endpoint == gw.endpoint

    progress = []
    sampler = GatewaySampler(gw.bucket, keys=keys, num_epochs=epochs, seed=seed,
                             wait_warm=120, on_progress=progress.append, name="pyclient")
    mid = sampler.manifest_id
    assert progress and progress[-1]["state"] == "warm"
    prog = admin.manifest(mid)
    assert prog["objects_cached"] == n and prog["accesses"] == n * epochs
    assert prog["name"] == "pyclient"

    dataset = S3Dataset(gw.bucket, keys, transform=decode, return_key=True)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler, num_workers=3)
    assert len(loader) == (n + 15) // 16

    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    lossf = torch.nn.BCEWithLogitsLoss()
    before = gw.stats()
    seen, epoch_loss = [], []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        order, total = [], 0.0
        for batch_keys, (x, y) in loader:
            order += list(batch_keys)
            opt.zero_grad()
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(batch_keys)
        seen.append(order)
        epoch_loss.append(total / len(order))

    after = settled_stats(gw, before["hits"] + n * epochs)
    # every read of every epoch was served from the cache
    assert hits_and_misses(before, after) == (n * epochs, 0)
    assert after["bypasses"] == before["bypasses"]
    # in exactly the order the gateway planned, which is the documented one
    for epoch in range(epochs):
        planned = admin.order(mid, epoch)
        assert seen[epoch] == planned["keys"]
        assert planned["keys"] == [keys[i] for i in planned["indices"]]
        assert seen[epoch] == epoch_keys(keys, epoch, shuffle=True, seed=seed)
        assert sorted(seen[epoch]) == keys
    assert seen[0] != seen[1] != seen[2]
    # the gateway followed the trainer to the end of the plan
    prog = wait_for(lambda: admin.manifest(mid), lambda p: p["state"] == "done")
    assert prog["position"] == n * epochs
    # and the model learned something from what it read
    assert all(l == l for l in epoch_loss)  # no NaN
    assert epoch_loss[-1] < epoch_loss[0], epoch_loss
    sampler.close()
    assert mid not in [m["id"] for m in admin.manifests()]


def wait_for(get, done, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if done(value):
            return value
        assert time.monotonic() < deadline, "never got there: %r" % (value,)
        time.sleep(0.05)


# ---- 1b. clairvoyant reaches what Belady allows; lru does not --------------------------


class SettlingDataset(S3Dataset):
    """Reads one object at a time and, after a miss, waits until the gateway has stored or
    refused the fill, so that every eviction decision is taken before the next read, as in
    the offline trace (the store writes fills in the background)."""

    def __init__(self, gw, *a, **kw):
        super().__init__(*a, **kw)
        self.gw = gw
        self.log = os.path.join(gw.workdir, "stderr.%d.log" % gw.runs)
        self.outcomes = collections.Counter()

    def read(self, key):
        stored = self.gw.stats()["fills_stored"]
        log_at = os.path.getsize(self.log)
        resp = self.client().get_object(Bucket=self.bucket, Key=key)
        body = resp["Body"].read()
        if s3util.x_cache(resp) == "MISS":
            refused = ("not cached %s/%s:" % (self.bucket, key)).encode()
            deadline = time.monotonic() + 20
            while True:
                if self.gw.stats()["fills_stored"] > stored:
                    self.outcomes["stored"] += 1
                    break
                with open(self.log, "rb") as f:
                    f.seek(log_at)
                    if refused in f.read():
                        self.outcomes["refused"] += 1
                        break
                assert time.monotonic() < deadline, "the fill of %s never settled" % key
                time.sleep(0.005)
        else:
            self.outcomes["hit"] += 1
        return body


def run_plan_through(gw, keys, epochs, seed):
    """Trains nothing: reads `epochs` epochs of the plan through a DataLoader, one read at
    a time; returns (hits counted by the gateway, keys read, outcomes)."""
    sampler = GatewaySampler(gw.bucket, keys=keys, num_epochs=epochs, seed=seed,
                             prefetch=False)  # only the policy uses the plan: demand paging
    assert sampler.progress()["state"] == "planned"
    client = functools.partial(s3util.client, gw.endpoint, gw.access_key, gw.secret_key)
    ds = SettlingDataset(gw, gw.bucket, keys, client_factory=client)
    loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=0,
                        collate_fn=lambda batch: batch)
    before = gw.stats()
    read = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            read.append(len(batch))
    after = gw.stats()
    assert after["misses"] - before["misses"] + after["hits"] - before["hits"] == sum(read)
    assert after["used_bytes"] <= after["capacity_bytes"]
    return after["hits"] - before["hits"], sampler, ds.outcomes


def test_clairvoyant_hits_what_belady_allows_and_more_than_lru(s3rver, gateway, client_env):
    n, epochs, seed, size = 40, 3, 42, 64 * KiB
    capacity = 16  # --cache-size 1M (the smallest) holds 16 objects of 64 KiB
    keys = seed_samples(s3rver, n, size, "belady")
    trace = [k for e in range(epochs) for k in epoch_keys(keys, e, shuffle=True, seed=seed)]
    optimum, lru_model = belady_hits(trace, capacity), lru_hits(trace, capacity)
    assert optimum > lru_model + 10  # the plan is one where knowing the future pays

    got = {}
    for policy in ("clairvoyant", "lru"):
        gw = client_env(gateway(s3rver, cache_size="1M", policy=policy,
                                extra_args=["--log-level", "debug"]))
        gw.require_real()
        got[policy], sampler, outcomes = run_plan_through(gw, keys, epochs, seed)
        assert sampler.progress()["position"] == len(trace)
        gw.stop()
    assert got["clairvoyant"] == optimum, (got, optimum, outcomes)
    assert got["lru"] < got["clairvoyant"], got


# ---- 2. ranks split each epoch like DistributedSampler -----------------------------------


def test_two_ranks_partition_each_epoch_like_distributed_sampler(s3rver, gateway, client_env):
    gw = client_env(gateway(s3rver, cache_size="64M"))
    gw.require_real()
    n, epochs, seed = 51, 2, 5
    keys = seed_samples(s3rver, n, 2 * KiB, "ranks")
    samplers = [GatewaySampler(gw.bucket, keys=keys, num_epochs=epochs, seed=seed,
                               num_replicas=2, rank=r, wait_warm=60) for r in range(2)]
    # the ranks of one plan make one job; objects: the distinct keys its ranks read over both
    # epochs (each reshuffled): rank 0's when it registered, then both ranks'
    assert samplers[1].manifest["job"] == samplers[0].manifest["id"]
    assert [s.manifest["objects"] for s in samplers] == [
        len({k for e in range(epochs) for r in range(ranks)
             for k in epoch_keys(keys, e, shuffle=True, seed=seed, world_size=2, rank=r)})
        for ranks in (1, 2)]
    dropped = [GatewaySampler(gw.bucket, keys=keys, num_epochs=epochs, seed=seed,
                              world_size=2, rank=r, drop_last=True, prefetch=False)
               for r in range(2)]
    for r in range(2):
        ds_len = len(DistributedSampler(keys, num_replicas=2, rank=r))
        assert len(samplers[r]) == ds_len == 26
        assert len(dropped[r]) == len(DistributedSampler(keys, num_replicas=2, rank=r,
                                                         drop_last=True)) == 25

    dataset = S3Dataset(gw.bucket, keys, return_key=True)
    before = gw.stats()
    for epoch in range(epochs):
        per_rank = []
        for r, s in enumerate(samplers):
            s.set_epoch(epoch)
            loader = DataLoader(dataset, batch_size=5, sampler=s, num_workers=2,
                                collate_fn=lambda batch: [k for k, _ in batch])
            got = [k for batch in loader for k in batch]
            assert got == epoch_keys(keys, epoch, shuffle=True, seed=seed, world_size=2,
                                     rank=r)
            assert got == s.admin.order(s.manifest_id, epoch)["keys"]
            per_rank.append(got)
        # together the ranks read every key; the only repeat is the padding
        assert set(per_rank[0]) | set(per_rank[1]) == set(keys)
        together = collections.Counter(per_rank[0] + per_rank[1])
        assert sorted(together.values()) == [1] * 50 + [2]
        # the same with drop_last: disjoint, one key left out
        d = [s.epoch_order(epoch) for s in dropped]
        assert len(set(d[0]) | set(d[1])) == 50 and not set(d[0]) & set(d[1])
    after = settled_stats(gw, before["hits"] + 2 * 26 * epochs)
    assert hits_and_misses(before, after) == (2 * 26 * epochs, 0)


def _rank_main(rank, port, endpoint_env, keys, bucket, out):
    """One rank of a real torch.distributed job (forked): the sampler takes its rank and
    world size from the process group."""
    import torch.distributed as dist
    os.environ.update(endpoint_env)
    try:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                world_size=2, rank=rank)
        s = GatewaySampler(bucket, keys=keys, num_epochs=2, seed=77, prefetch=False)
        s.set_epoch(1)
        loader = DataLoader(S3Dataset(bucket, keys, return_key=True), batch_size=4, sampler=s,
                            num_workers=2, collate_fn=lambda batch: [k for k, _ in batch])
        got = [k for batch in loader for k in batch]
        out.put((rank, s.num_replicas, s.rank, s.manifest_id, got))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException as e:  # report, never hang the parent
        out.put((rank, None, None, None, repr(e)))
        raise


def test_sampler_takes_its_rank_from_torch_distributed(s3rver, gateway, client_env):
    gw = client_env(gateway(s3rver, cache_size="64M"))
    keys = seed_samples(s3rver, 9, 1 * KiB, "dist")
    env = {k: os.environ[k] for k in os.environ if k.startswith("AWS_")}
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    port = proc.free_port()
    ranks = [ctx.Process(target=_rank_main, args=(r, port, env, keys, gw.bucket, out))
             for r in range(2)]
    for p in ranks:
        p.start()
    try:
        results = sorted(out.get(timeout=120) for _ in ranks)
    finally:
        for p in ranks:
            p.join(30)
            if p.is_alive():
                p.kill()
    for rank, world, got_rank, mid, got in results:
        assert (world, got_rank) == (2, rank), got
        assert got == epoch_keys(keys, 1, shuffle=True, seed=77, world_size=2, rank=rank)
        body = Admin(gw.endpoint).manifest(mid)
        assert body["sampling"]["rank"] == rank and body["sampling"]["world_size"] == 2
    assert len({r[3] for r in results}) == 2  # one manifest per rank
    assert [p.exitcode for p in ranks] == [0, 0]


# ---- more plans: prefix listing, windows past num_epochs, resuming -----------------------


def test_prefix_plans_windows_and_resuming(s3rver, gateway, client_env):
    gw = client_env(gateway(s3rver, cache_size="64M"))
    keys = seed_samples(s3rver, 23, 1 * KiB, "prefix")
    prefix = keys[0].rsplit("/", 1)[0] + "/"
    s = GatewaySampler(gw.bucket, prefix=prefix, num_epochs=2, seed=3, num_replicas=3, rank=1,
                       indices=False)
    assert len(s) == 8  # waits for the listing: ceil(23 / 3)
    for epoch in range(5):  # two epochs per plan: a new plan at epochs 2 and 4
        s.set_epoch(epoch)
        assert list(s) == epoch_keys(sorted(keys), epoch, shuffle=True, seed=3, world_size=3,
                                     rank=1)
    assert s.window_start == 4
    live = Admin().manifests()
    assert [m["id"] for m in live] == [s.manifest_id]  # earlier windows were canceled
    # indices into the listed keys
    idx = GatewaySampler(gw.bucket, prefix=prefix, seed=3, indices=True, prefetch=False)
    assert [sorted(keys)[i] for i in idx] == epoch_keys(sorted(keys), 0, shuffle=True, seed=3)
    # resuming at epoch 6 of a 10-epoch run registers the plan from there
    r = GatewaySampler(gw.bucket, keys=keys, num_epochs=10, seed=3, prefetch=False,
                       verify=True)
    r.set_epoch(6)
    assert r.window_start == 6 and r.manifest_body(6)["seed"] == 9
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # verify=True: the gateway agrees with the local order
        assert list(r) == epoch_keys(keys, 6, shuffle=True, seed=3)
    assert Admin().manifest(r.manifest_id)["accesses"] == 10 * 23


# ---- 3. importance: losses reach the gateway and decide what goes --------------------------


def test_importance_reporter_losses_decide_what_is_evicted(s3rver, gateway, client_env):
    size, capacity = 64 * KiB, 16  # --cache-size 1M holds 16 objects of 64 KiB
    gw = client_env(gateway(s3rver, cache_size="1M", policy="importance"))
    gw.require_real()
    keys = seed_samples(s3rver, capacity + 1, size, "importance")
    data, newcomer = keys[:capacity], keys[capacity]

    # One epoch of training over data, one minibatch holding all of it, reporting its
    # per-sample losses; the reads fill the cache exactly.
    sampler = GatewaySampler(gw.bucket, keys=data, seed=1, prefetch=False)
    loader = DataLoader(S3Dataset(gw.bucket, data, transform=decode, return_key=True),
                        batch_size=capacity, sampler=sampler, num_workers=3)
    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1)
    lossf = torch.nn.BCEWithLogitsLoss(reduction="none")
    losses = {}
    with ImportanceReporter(gw.bucket, batch=4) as reporter:
        for batch_keys, (x, y) in loader:
            loss = lossf(model(x), y).squeeze(1)
            reporter.report(batch_keys, loss)
            losses.update(zip(batch_keys, loss.tolist()))
            loss.mean().backward()
        assert reporter.pending == 1 and reporter.scored == 0
    assert reporter.scored == capacity and reporter.posts == 1 and reporter.failures == 0
    assert len(set(losses.values())) == capacity  # distinct losses: ranks 1..16
    st = gw.stats_when(lambda s: s["objects"] == capacity, timeout=30)
    assert st["objects"] == capacity and st["used_bytes"] == capacity * size

    # A newcomer whose posted loss ranks 3rd of its minibatch (score log 13) beats the
    # lowest-ranked cached sample (log 11) and takes its place; the others all stay.
    admin = Admin()
    assert admin.post_losses(gw.bucket, {"ghost-a": 0.0, "ghost-b": 0.0, newcomer: 9.0}) == 3
    c = gw.client()
    stored = gw.stats()["fills_stored"]
    assert s3util.x_cache(c.get_object(Bucket=gw.bucket, Key=newcomer)) == "MISS"
    st = gw.stats_when(lambda s: s["fills_stored"] > stored, timeout=30)
    assert st["evictions"] == 1 and st["objects"] == capacity
    lowest = min(losses, key=losses.get)
    highest = max(losses, key=losses.get)
    for key in sorted(data, key=losses.get, reverse=True):
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        resp["Body"].read()
        want = "MISS" if key == lowest else "HIT"
        assert s3util.x_cache(resp) == want, (key == highest, losses[key], sorted(losses.values()))
    assert s3util.x_cache(c.get_object(Bucket=gw.bucket, Key=newcomer)) == "HIT"
