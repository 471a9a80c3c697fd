"""s3cached.order against vectors computed by the gateway's own code, and its contract."""
import json
import os
import unittest

import _path  # noqa: F401
from s3cached import order
from s3cached.order import epoch_keys, epoch_order, num_samples, permutation

try:
    import torch
    from torch.utils.data import DistributedSampler
except ImportError:
    torch = None


class Vectors(unittest.TestCase):
    def test_matches_the_gateway_on_every_vector(self):
        # order_vectors.json: written by gen_order_vectors.sh, which runs the gateway's
        # plan_parse() and plan_epoch_order() (manifest/plan_order.c) on each shape.
        with open(os.path.join(_path.HERE, "order_vectors.json")) as f:
            vectors = json.load(f)
        self.assertGreater(len(vectors), 400)
        for v in vectors:
            for epoch, want in enumerate(v["orders"]):
                got = epoch_order(v["n"], epoch, shuffle=v["shuffle"], seed=v["seed"],
                                  world_size=v["world_size"], rank=v["rank"],
                                  drop_last=v["drop_last"])
                self.assertEqual(got, want, "vector %r epoch %d" % (
                    {k: v[k] for k in v if k != "orders"}, epoch))

    def test_the_documented_example(self):
        self.assertEqual(permutation(10, 42), [0, 9, 5, 8, 6, 4, 7, 2, 1, 3])
        self.assertEqual(permutation(10, 43), [4, 2, 5, 6, 1, 3, 9, 8, 7, 0])
        pad = [[0, 8, 7, 3], [9, 6, 2, 0], [5, 4, 1, 9]]
        drop = [[0, 8, 7], [9, 6, 2], [5, 4, 1]]
        for r in range(3):
            self.assertEqual(epoch_order(10, 0, True, 42, 3, r), pad[r])
            self.assertEqual(epoch_order(10, 0, True, 42, 3, r, drop_last=True), drop[r])

    def test_the_docs_python_transcription_agrees(self):
        # The function printed in docs/manifests.md, verbatim.
        M64 = (1 << 64) - 1

        def doc_epoch_order(n, epoch, shuffle=False, seed=0, world_size=1, rank=0,
                            drop_last=False):
            perm = list(range(n))
            if shuffle:
                state = (seed + epoch) & M64
                for i in range(n - 1, 0, -1):
                    state = (state + 0x9E3779B97F4A7C15) & M64
                    z = state
                    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
                    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
                    j = (z ^ (z >> 31)) % (i + 1)
                    perm[i], perm[j] = perm[j], perm[i]
            if drop_last and n % world_size:
                total = n // world_size * world_size
            else:
                total = -(-n // world_size) * world_size
            return [perm[i % n] for i in range(rank, total, world_size)]

        for n in (1, 5, 33, 200):
            for ws in (1, 2, 7):
                for drop in (False, True):
                    if drop and n < ws:
                        continue
                    for r in range(ws):
                        for e in range(3):
                            self.assertEqual(
                                epoch_order(n, e, True, 1 << 62, ws, r, drop),
                                doc_epoch_order(n, e, True, 1 << 62, ws, r, drop))

    def test_splitmix64_reference_values(self):
        # splitmix64 from seed 0: the published first outputs of the generator.
        state, out = order.splitmix64(0)
        self.assertEqual(out, 0xE220A8397B1DCDAF)
        state, out = order.splitmix64(state)
        self.assertEqual(out, 0x6E789E6AA1B965F4)
        state, out = order.splitmix64(state)
        self.assertEqual(out, 0x06C45D188009454F)


class Contract(unittest.TestCase):
    def test_unshuffled_is_the_dataset_order_split_and_padded_from_the_start(self):
        self.assertEqual(epoch_order(10, 3), list(range(10)))
        self.assertEqual(epoch_order(10, 0, world_size=3, rank=1), [1, 4, 7, 0])
        self.assertEqual(epoch_order(2, 0, world_size=5, rank=4), [0])

    def test_epoch_e_of_seed_s_is_epoch_0_of_seed_s_plus_e(self):
        for e in range(4):
            self.assertEqual(epoch_order(50, e, True, 100), epoch_order(50, 0, True, 100 + e))

    def test_ranks_partition_each_epoch(self):
        for n, ws in ((10, 3), (64, 4), (101, 8), (3, 5)):
            for e in range(2):
                orders = [epoch_order(n, e, True, 9, ws, r) for r in range(ws)]
                self.assertEqual({len(o) for o in orders}, {num_samples(n, ws)})
                flat = [i for o in orders for i in o]
                self.assertEqual(set(flat), set(range(n)))
                self.assertEqual(len(flat), num_samples(n, ws) * ws)
                if n >= ws:
                    dropped = [epoch_order(n, e, True, 9, ws, r, True) for r in range(ws)]
                    flat = [i for o in dropped for i in o]
                    self.assertEqual(len(flat), len(set(flat)))
                    self.assertEqual(len(flat), n // ws * ws)

    def test_epoch_keys(self):
        keys = ["k%d" % i for i in range(10)]
        self.assertEqual(epoch_keys(keys, 0, shuffle=True, seed=42, world_size=3, rank=0),
                         ["k0", "k8", "k7", "k3"])

    def test_refuses_what_the_gateway_refuses(self):
        bad = [dict(n=0), dict(n=5, world_size=0), dict(n=5, world_size=2, rank=2),
               dict(n=5, rank=-1), dict(n=5, seed=-1), dict(n=5, seed=1 << 63),
               dict(n=2, world_size=3, drop_last=True), dict(n=5, epoch=-1),
               dict(n=5, world_size=1000001), dict(n=True)]
        for kw in bad:
            kw = dict(kw)
            n = kw.pop("n")
            epoch = kw.pop("epoch", 0)
            with self.assertRaises(ValueError, msg=repr(kw)):
                epoch_order(n, epoch, **kw)
        self.assertEqual(len(epoch_order(5, 0, True, (1 << 63) - 1)), 5)

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_per_rank_length_is_distributed_samplers(self):
        for n in (1, 2, 9, 10, 11, 100):
            for ws in (1, 2, 3, 4, 16):
                for drop in (False, True):
                    for r in (0, ws - 1):
                        ds = list(range(n))
                        want = len(DistributedSampler(ds, num_replicas=ws, rank=r,
                                                      drop_last=drop))
                        if want == 0:
                            continue  # the gateway refuses a plan that leaves nothing
                        self.assertEqual(len(epoch_order(n, 0, True, 0, ws, r, drop)), want)
                        self.assertEqual(num_samples(n, ws, drop), want)

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_split_is_distributed_samplers_given_the_same_permutation(self):
        # Without shuffling both read the dataset in order; the split and the padding
        # then must be identical, rank by rank.
        for n, ws in ((10, 3), (7, 4), (12, 4), (3, 5)):
            for drop in (False, True):
                if drop and n < ws:
                    continue
                for r in range(ws):
                    want = list(DistributedSampler(list(range(n)), num_replicas=ws, rank=r,
                                                   shuffle=False, drop_last=drop))
                    self.assertEqual(epoch_order(n, 0, False, 0, ws, r, drop), want)


if __name__ == "__main__":
    unittest.main()
