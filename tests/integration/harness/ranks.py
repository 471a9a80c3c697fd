"""Data-parallel training jobs whose ranks read through the gateway, as on a node with
8 GPUs: each rank is its own process, with a real PyTorch DataLoader (loader workers
included) over a GatewaySampler(rank=r, world_size=W), and a model wrapped in
DistributedDataParallel over torch.distributed's gloo backend on 127.0.0.1.

The ranks advance together as under DDP on GPUs: every step's backward pass all-reduces
the gradients, which no rank passes before every rank has read its batch, so rank r's
i-th batch is read at about the time of every other rank's i-th batch (the loader
workers read up to prefetch_factor batches ahead, as they do in real training).

    job = Job("a", bucket, keys, digests, world_size=8, seed=7, epochs=3)
    results = run_jobs([job], gw.endpoint, gw.access_key, gw.secret_key)
    results["a"][r].reads   # the keys rank r read, epoch after epoch

torch is imported by the functions that need it (the module loads without it).
"""
import dataclasses
import functools
import hashlib
import multiprocessing
import os
import sys
import time
import traceback
import typing

from . import proc
from . import s3util

CLIENT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients",
                                      "python"))
FEATURES = 16  # bytes of a sample the model sees
REGISTERED_TIMEOUT = 60.0  # s: a plan's registration must be through by then


@dataclasses.dataclass
class Job:
    """One training job: world_size ranks over one dataset (keys, each object's SHA-256
    in digests), shuffled with seed, for `epochs` epochs, each step taking at least
    step_seconds (so that jobs read at different rates)."""
    name: str
    bucket: str
    keys: typing.List[str]
    digests: typing.Dict[str, str]
    world_size: int
    seed: int
    epochs: int
    batch_size: int = 8
    num_workers: int = 1
    prefetch: bool = False  # False: the manifests only tell the eviction policy
    step_seconds: float = 0.0  # the model's compute per step, beyond the tiny real one
    load_seconds: float = 0.0  # before its plan is registered (a model to load): the other
    # jobs' plans wait that long, registered, for the start (run_jobs starts all at once)


@dataclasses.dataclass
class RankResult:
    """What one rank of job `job` did: the keys it read in order, the keys whose bytes
    differed from their digest, its manifest's id."""
    job: str
    rank: int
    reads: typing.List[str]
    corrupt: typing.List[str]
    manifest_id: str


def _client_path():
    if CLIENT not in sys.path:
        sys.path.insert(0, CLIENT)


def sample(body):
    """A sample: (SHA-256 of the bytes, the first FEATURES bytes scaled to [0, 1])."""
    import torch
    x = torch.tensor(list(body[:FEATURES]), dtype=torch.float32) / 255.0
    return hashlib.sha256(body).hexdigest(), x


def collate(batch):
    """[(key, (digest, x))] -> (keys, digests, stacked x)."""
    import torch
    keys = [k for k, _ in batch]
    digests = [d for _, (d, _) in batch]
    return keys, digests, torch.stack([x for _, (_, x) in batch])


def wait_registered(admin, manifest_id, timeout=REGISTERED_TIMEOUT):
    """Waits until the gateway has the manifest's plan (its accesses are counted), so that
    no read comes before the plan it belongs to; returns its progress."""
    deadline = time.monotonic() + timeout
    while True:
        prog = admin.manifest(manifest_id)
        if prog["state"] in ("failed", "canceled"):
            raise RuntimeError("manifest %s is %s: %s" % (manifest_id, prog["state"],
                                                            prog.get("error")))
        if prog["state"] != "listing" and prog.get("accesses"):
            return prog
        if time.monotonic() > deadline:
            raise RuntimeError("manifest %s not registered after %.0f s: %r" % (
                manifest_id, timeout, prog))
        time.sleep(0.05)


def rank_main(job, rank, port, endpoint, access_key, secret_key, out, start):
    """One rank (run in a forked process): joins the job's process group, registers its
    plan through GatewaySampler, trains `job.epochs` epochs and puts a RankResult, or
    (job.name, rank, traceback) when anything failed, on out. No rank of any job reads before
    every rank of every job is ready (start): a job whose ranks were still importing and
    joining would take the cores from the other's first reads, and the jobs' read rates, which
    the gateway's plans merge by, would not be the ones the test sets."""
    try:
        _client_path()
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader
        from s3cached import Admin, GatewaySampler, S3Dataset

        torch.set_num_threads(1)  # 8 ranks and their workers share the machine's cores
        time.sleep(job.load_seconds)
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                world_size=job.world_size, rank=rank)
        admin = Admin(endpoint)
        sampler = GatewaySampler(job.bucket, keys=job.keys, num_epochs=job.epochs,
                                 seed=job.seed, shuffle=True, world_size=job.world_size,
                                 rank=rank, prefetch=job.prefetch, admin=admin,
                                 name="%s rank %d" % (job.name, rank))
        wait_registered(admin, sampler.manifest_id)
        client = functools.partial(s3util.client, endpoint, access_key, secret_key)
        dataset = S3Dataset(job.bucket, job.keys, transform=sample, client_factory=client,
                            return_key=True)
        loader = DataLoader(dataset, batch_size=job.batch_size, sampler=sampler,
                            num_workers=job.num_workers, collate_fn=collate)
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        dist.barrier()  # every rank's plan is registered before any rank reads
        start.wait(timeout=120)  # ... and every other job's ranks are ready too
        reads, corrupt = [], []
        for epoch in range(job.epochs):
            sampler.set_epoch(epoch)
            for keys, digests, x in loader:
                reads += keys
                corrupt += [k for k, d in zip(keys, digests) if d != job.digests[k]]
                opt.zero_grad()
                model(x).pow(2).mean().backward()  # all-reduce: the step barrier
                opt.step()
                if job.step_seconds:
                    time.sleep(job.step_seconds)  # a bigger model: the job reads slower
        out.put(RankResult(job.name, rank, reads, corrupt, sampler.manifest_id))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException:  # report, never leave the parent waiting
        out.put((job.name, rank, traceback.format_exc()))
        raise


def run_jobs(jobs, endpoint, access_key, secret_key, timeout=300.0):
    """Runs every rank of every job at once (forked processes), each job with its own
    process group, against the gateway at endpoint; waits for all of them.

    Returns {job name: [RankResult of rank 0, 1, ...]}; raises AssertionError with the
    rank's traceback when a rank failed, and kills what is left on the way out."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    start = ctx.Barrier(sum(job.world_size for job in jobs))
    procs = []
    for job in jobs:
        port = proc.free_port()
        for r in range(job.world_size):
            p = ctx.Process(target=rank_main, name="%s-rank%d" % (job.name, r),
                            args=(job, r, port, endpoint, access_key, secret_key, out, start))
            procs.append(p)
    try:
        for p in procs:
            p.start()
        results = {job.name: [None] * job.world_size for job in jobs}
        deadline = time.monotonic() + timeout
        for _ in procs:
            got = out.get(timeout=max(1.0, deadline - time.monotonic()))
            if isinstance(got, tuple):
                raise AssertionError("rank %d of job %s failed:\n%s" % (got[1], got[0], got[2]))
            results[got.job][got.rank] = got
        for p in procs:
            p.join(max(1.0, deadline - time.monotonic()))
        assert [p.exitcode for p in procs] == [0] * len(procs), [
            (p.name, p.exitcode) for p in procs]
        return results
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)

