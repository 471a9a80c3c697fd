#!/usr/bin/python3
"""bench/convergence.py - does the cache-aware order (docs/manifests.md, "cache_aware") change
what a model learns? The Python half of bench/convergence.sh, which starts s3rver and a fresh
gateway per run and calls the subcommands below.

  seed       generates the dataset (deterministic: --data-seed) and PUTs its training samples
             to the upstream, one object per sample (train/00000.bin: label, then features)
  train      one training run through the gateway: GatewaySampler(cache_aware=False|True)
             yields each epoch's order, the samples are read in that order with plain GETs
             (8 at a time, one minibatch after the other) and an MLP is trained on them with
             SGD; per epoch: training loss, held-out loss and accuracy, hits and misses (the
             gateway's X-Cache), and how the epoch's order relates to the previous one
  summarize  the runs of a benchmark: medians and spreads per order, paired differences

The task: 10 classes, each a mixture of 3 Gaussian clusters in a 12-dimensional latent space,
seen through a random 2-layer tanh map into 512 features plus noise, 5 % of the labels
flipped (a sample is a 2,052-byte object). An MLP (512-128-10) trained with SGD (momentum 0.9,
lr 0.002, batch 32) still gains held-out accuracy after 8 epochs, so an order that slowed
learning would show.

Only what the brief of issue 12 needs: /usr/bin/python3 with python3-torch and numpy
(Debian), the s3cached client from clients/python.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import statistics
import struct
import sys
import threading
import time
import urllib.parse

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "clients", "python"))

CLASSES, CLUSTERS, LATENT, FEATURES = 10, 3, 12, 512
HEADER = struct.Struct("<I")  # the label, then FEATURES float32 (little-endian)
READERS = 8                   # GETs in flight, as a DataLoader's workers


# ---- the dataset ------------------------------------------------------------------------

def make_dataset(data_seed, n_train, n_test):
    """(x_train, y_train), (x_test, y_test): float32 features, int64 labels, the same for the
    same arguments on every machine (numpy's PCG64)."""
    g = np.random.default_rng(data_seed)
    centers = g.normal(0, 1.0, (CLASSES, CLUSTERS, LATENT))
    w1 = g.normal(0, 1 / np.sqrt(LATENT), (LATENT, 64))
    w2 = g.normal(0, 1 / np.sqrt(64), (64, FEATURES))

    def draw(n):
        y = g.integers(0, CLASSES, n)
        z = centers[y, g.integers(0, CLUSTERS, n)] + g.normal(0, 0.75, (n, LATENT))
        x = np.tanh(1.5 * z @ w1) @ w2 + g.normal(0, 0.3, (n, FEATURES))
        y = np.where(g.random(n) < 0.05, g.integers(0, CLASSES, n), y)
        return x.astype(np.float32), y.astype(np.int64)

    return draw(n_train), draw(n_test)


def train_keys(n):
    return ["train/%05d.bin" % i for i in range(n)]


def encode(x, y):
    return HEADER.pack(int(y)) + x.astype("<f4").tobytes()


def decode(body):
    (y,) = HEADER.unpack_from(body)
    return np.frombuffer(body, dtype="<f4", offset=HEADER.size, count=FEATURES), y


# ---- reading through the gateway ------------------------------------------------------

class Reader:
    """GETs objects of one bucket through the gateway, unsigned (the gateway signs upstream),
    READERS at a time over kept-alive connections; counts X-Cache HIT and MISS."""

    def __init__(self, endpoint, bucket):
        u = urllib.parse.urlsplit(endpoint)
        self.host, self.port, self.bucket = u.hostname, u.port, bucket
        self.pool = concurrent.futures.ThreadPoolExecutor(READERS)
        self.conns = {}
        self.hits = self.misses = 0

    def _get(self, key):
        tid = threading.get_ident()
        for attempt in (0, 1):
            conn = self.conns.get(tid)
            if conn is None:
                conn = self.conns[tid] = http.client.HTTPConnection(self.host, self.port,
                                                                    timeout=30)
            try:
                conn.request("GET", "/%s/%s" % (self.bucket, key))
                resp = conn.getresponse()
                body = resp.read()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                del self.conns[tid]
                if attempt:
                    raise
        if resp.status != 200:
            raise RuntimeError("GET %s: %d %s" % (key, resp.status, body[:200]))
        return body, resp.getheader("X-Cache", "")

    def read(self, keys):
        """The bodies of keys, in order; the batch's GETs run concurrently."""
        out = list(self.pool.map(self._get, keys))
        for _, how in out:
            if how.startswith("HIT"):
                self.hits += 1
            else:
                self.misses += 1
        return [body for body, _ in out]

    def close(self):
        self.pool.shutdown()
        for c in self.conns.values():
            c.close()


# ---- how an epoch's order departs from an independent shuffle ---------------------------

def spearman(prev, cur):
    """Spearman's rho between each sample's position in two epochs that read every sample
    once (positions are their own ranks): 0 expected for independent shuffles."""
    n = len(cur)
    pos = np.empty(n, dtype=np.int64)
    pos[np.asarray(prev)] = np.arange(n)
    d = pos[np.asarray(cur)] - np.arange(n)
    return float(1 - 6 * np.sum(d.astype(np.float64) ** 2) / (n * (n * n - 1.0)))


def tail_to_head(prev, cur):
    """The share of the previous epoch's second half that this epoch reads in its first half
    (0.5 expected for independent shuffles)."""
    half = len(cur) // 2
    tail = set(prev[len(prev) - half:])
    return sum(1 for i in cur[:half] if i in tail) / half


# ---- the subcommands ----------------------------------------------------------------------

def cmd_seed(a):
    import boto3
    from botocore.config import Config
    (x, y), _ = make_dataset(a.data_seed, a.train, a.test)
    s3 = boto3.client("s3", endpoint_url=a.s3, region_name="us-east-1",
                      aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                      config=Config(s3={"addressing_style": "path"}, max_pool_connections=8))
    keys = train_keys(a.train)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: s3.put_object(Bucket=a.bucket, Key=keys[i],
                                              Body=encode(x[i], y[i])), range(a.train)))
    print(json.dumps({"objects": a.train, "object_bytes": HEADER.size + 4 * FEATURES}))


def cmd_train(a):
    import torch
    from s3cached import Admin, GatewaySampler
    torch.set_num_threads(1)
    (_, _), (xte, yte) = make_dataset(a.data_seed, a.train, a.test)
    xte, yte = torch.from_numpy(xte), torch.from_numpy(yte)
    keys = train_keys(a.train)
    aware = a.order == "cache-aware"
    admin = Admin(a.gateway)
    sampler = GatewaySampler(a.bucket, keys=keys, num_epochs=a.epochs, seed=a.seed,
                             shuffle=True, num_replicas=1, rank=0, admin=admin, indices=True,
                             prefetch=a.prefetch, cache_aware=aware,
                             name="bench/convergence %s seed %d" % (a.order, a.seed))
    torch.manual_seed(a.seed)  # the same initial weights for both orders of a seed
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=5e-4)
    reader = Reader(a.gateway, a.bucket)
    epochs, prev, t0 = [], None, time.time()
    for e in range(a.epochs):
        sampler.set_epoch(e)
        order = list(iter(sampler))  # asks the gateway: a cache-aware epoch is decided here
        first = admin.order(sampler.manifest_id, e).get("cached_first") if aware else None
        hits0, misses0, loss_sum, correct = reader.hits, reader.misses, 0.0, 0
        t_epoch, t_read = time.time(), 0.0
        model.train()
        for b in range(0, len(order), a.batch):
            batch = order[b:b + a.batch]
            t = time.time()
            bodies = reader.read([keys[i] for i in batch])
            t_read += time.time() - t
            samples = [decode(body) for body in bodies]
            xb = torch.from_numpy(np.stack([s[0] for s in samples]))
            yb = torch.tensor([s[1] for s in samples])
            out = model(xb)
            loss = torch.nn.functional.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(batch)
            correct += int((out.argmax(1) == yb).sum())
        model.eval()
        with torch.no_grad():
            out = model(xte)
            test_loss = float(torch.nn.functional.cross_entropy(out, yte))
            test_acc = float((out.argmax(1) == yte).float().mean())
        hits, misses = reader.hits - hits0, reader.misses - misses0
        epochs.append({
            "epoch": e, "train_loss": loss_sum / len(order), "train_acc": correct / len(order),
            "test_loss": test_loss, "test_acc": test_acc, "hits": hits, "misses": misses,
            "hit_ratio": hits / (hits + misses), "cached_first": first,
            "spearman_vs_previous": spearman(prev, order) if prev is not None else None,
            "tail_to_head": tail_to_head(prev, order) if prev is not None else None,
            "wall_s": round(time.time() - t_epoch, 3), "read_s": round(t_read, 3)})
        prev = order
        print("%-11s seed %d epoch %2d  %5.1f s (reads %4.1f s)  loss %.4f  held-out %.4f / "
              "%.2f%%  hits %5.1f%%%s" % (
            a.order, a.seed, e, epochs[-1]["wall_s"], t_read, epochs[-1]["train_loss"], test_loss,
            100 * test_acc, 100 * epochs[-1]["hit_ratio"],
            "" if e == 0 else "  rho %+.3f" % epochs[-1]["spearman_vs_previous"]),
            file=sys.stderr)
    reader.close()
    sampler.close()
    with open(a.out, "w") as f:
        json.dump({"order": a.order, "seed": a.seed, "policy": a.policy,
                   "wall_s": round(time.time() - t0, 2), "epochs": epochs}, f)


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    """median, min, max of a list (None for an empty list)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def last3(run, field):
    """The mean of a run's last three epochs' field: less noisy than the last epoch alone."""
    return statistics.mean(ep[field] for ep in run["epochs"][-3:])


PAIRED = {  # what is compared between the two orders of one seed (same initial weights)
    "final_test_acc": lambda r: r["epochs"][-1]["test_acc"],
    "final_test_loss": lambda r: r["epochs"][-1]["test_loss"],
    "last3_test_acc": lambda r: last3(r, "test_acc"),
    "final_train_loss": lambda r: r["epochs"][-1]["train_loss"],
}


def paired(runs, policy, f):
    """f(cache-aware run) - f(seeded run) for each seed that has both."""
    pairs = {}
    for r in runs:
        if r["policy"] == policy:
            pairs.setdefault(r["seed"], {})[r["order"]] = f(r)
    return [p["cache-aware"] - p["seeded"] for p in pairs.values() if len(p) == 2]


def cmd_summarize(a):
    """Runs from train's files, or all the runs of an earlier results file (to summarize it
    again: its settings are kept unless --settings is given)."""
    runs, settings = [], json.loads(a.settings)
    for path in a.runs:
        with open(path) as f:
            doc = json.load(f)
        if "runs" in doc:
            runs += doc["runs"]
            settings = settings or doc.get("settings", {})
        else:
            runs.append(doc)
    out = {"settings": settings, "runs": runs, "summary": {}}
    for policy in sorted({r["policy"] for r in runs}):
        by = {}
        for order in ("seeded", "cache-aware"):
            rs = [r for r in runs if r["policy"] == policy and r["order"] == order]
            if not rs:
                continue
            n_ep = len(rs[0]["epochs"])
            later = lambda r, f: [ep[f] for ep in r["epochs"][1:] if ep[f] is not None]
            by[order] = {
                "runs": len(rs),
                "final_test_acc": spread([r["epochs"][-1]["test_acc"] for r in rs]),
                "final_test_loss": spread([r["epochs"][-1]["test_loss"] for r in rs]),
                "final_train_loss": spread([r["epochs"][-1]["train_loss"] for r in rs]),
                "last3_test_acc": spread([last3(r, "test_acc") for r in rs]),
                "per_epoch": [{f: median_or_none(r["epochs"][e][f] for r in rs)
                               for f in ("train_loss", "test_loss", "test_acc", "hit_ratio",
                                         "spearman_vs_previous", "tail_to_head")}
                              for e in range(n_ep)],
                "hit_ratio_after_epoch_0": spread([statistics.mean(later(r, "hit_ratio"))
                                                   for r in rs]),
                "spearman_vs_previous": spread([x for r in rs
                                                for x in later(r, "spearman_vs_previous")]),
                "tail_to_head": spread([x for r in rs for x in later(r, "tail_to_head")]),
            }
        by["paired_differences_cache_aware_minus_seeded"] = {
            name: spread(paired(runs, policy, f)) for name, f in PAIRED.items()}
        out["summary"][policy] = by
    json.dump(out, sys.stdout)
    report(out["summary"])


def pct(x):
    return "%.2f%%" % (100 * x)


def report(summary):
    """A table on stderr."""
    w = sys.stderr.write
    for policy, by in summary.items():
        w("\n--policy %s\n" % policy)
        w("%-12s %-28s %-28s %-22s %-24s %s\n" % ("order", "final held-out acc (med, range)",
                                                   "final train loss", "hits after epoch 0",
                                                   "rho(epoch e, e+1)", "tail->head"))
        for order in ("seeded", "cache-aware"):
            s = by.get(order)
            if s is None:
                continue
            acc, tl, h = s["final_test_acc"], s["final_train_loss"], s["hit_ratio_after_epoch_0"]
            rho, th = s["spearman_vs_previous"], s["tail_to_head"]
            w("%-12s %-28s %-28s %-22s %-24s %s\n" % (
                order, "%s (%s..%s)" % (pct(acc["median"]), pct(acc["min"]), pct(acc["max"])),
                "%.4f (%.4f..%.4f)" % (tl["median"], tl["min"], tl["max"]),
                "%s (%s..%s)" % (pct(h["median"]), pct(h["min"]), pct(h["max"])),
                "%+.3f (%+.3f..%+.3f)" % (rho["median"], rho["min"], rho["max"]),
                "%.3f (%.3f..%.3f)" % (th["median"], th["min"], th["max"])))
        d = by["paired_differences_cache_aware_minus_seeded"]
        if d["final_test_acc"]:
            w("paired differences, cache-aware - seeded, %d seeds (median, range):\n"
              % d["final_test_acc"]["n"])
        for name, scale, unit in (("final_test_acc", 100, " points"),
                                  ("last3_test_acc", 100, " points"),
                                  ("final_test_loss", 1, ""), ("final_train_loss", 1, "")):
            if d[name]:
                w("  %-17s %+.4f%s (%+.4f..%+.4f)\n" % (
                    name, scale * d[name]["median"], unit, scale * d[name]["min"],
                    scale * d[name]["max"]))
        for order in ("seeded", "cache-aware"):
            if order in by:
                w("%-12s per epoch (median): held-out acc %s\n" % (order, " ".join(
                    "%.1f" % (100 * ep["test_acc"]) for ep in by[order]["per_epoch"])))
                w("%-12s per epoch (median): hits %%     %s\n" % ("", " ".join(
                    "%.1f" % (100 * ep["hit_ratio"]) for ep in by[order]["per_epoch"])))
                w("%-12s per epoch (median): rho          %s\n" % ("", " ".join(
                    "  -  " if ep["spearman_vs_previous"] is None else
                    "%+.2f" % ep["spearman_vs_previous"] for ep in by[order]["per_epoch"])))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def dataset_args(q):
        q.add_argument("--bucket", required=True)
        q.add_argument("--train", type=int, default=3000, help="training samples (objects)")
        q.add_argument("--test", type=int, default=2000, help="held-out samples (in memory)")
        q.add_argument("--data-seed", type=int, default=20240)

    q = sub.add_parser("seed", help="PUT the training samples to the upstream")
    q.add_argument("--s3", required=True, help="the upstream's endpoint (s3rver)")
    dataset_args(q)
    q = sub.add_parser("train", help="one training run through the gateway")
    q.add_argument("--gateway", required=True)
    dataset_args(q)
    q.add_argument("--order", choices=("seeded", "cache-aware"), required=True)
    q.add_argument("--seed", type=int, required=True, help="the shuffle and the model's init")
    q.add_argument("--epochs", type=int, default=12)
    q.add_argument("--batch", type=int, default=32)
    q.add_argument("--lr", type=float, default=0.002)
    q.add_argument("--prefetch", type=int, default=0, help="1: the gateway prefetches ahead")
    q.add_argument("--policy", default="", help="the gateway's policy, for the record")
    q.add_argument("--out", required=True)
    q = sub.add_parser("summarize", help="the runs' results as JSON on stdout, a table on stderr")
    q.add_argument("--settings", default="{}", help="JSON recorded as the settings")
    q.add_argument("runs", nargs="+")
    a = p.parse_args(argv)
    {"seed": cmd_seed, "train": cmd_train, "summarize": cmd_summarize}[a.cmd](a)


if __name__ == "__main__":
    main()
