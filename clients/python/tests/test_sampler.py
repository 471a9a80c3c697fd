"""GatewaySampler: registration, set_epoch, windows, len, ranks, indices, fallback."""
import os
import subprocess
import sys
import unittest
import warnings

import _path  # noqa: F401
from fakegw import FakeGateway
from s3cached import Admin, GatewayError, GatewaySampler
from s3cached.order import epoch_keys, epoch_order

try:
    import torch
    from torch.utils.data import DataLoader, DistributedSampler, Sampler
except ImportError:
    torch = None

KEYS = ["train/%04d.bin" % i for i in range(37)]


class WithFake(unittest.TestCase):
    def setUp(self):
        self.gw = FakeGateway().__enter__()
        self.addCleanup(self.gw.__exit__)
        self.admin = Admin(self.gw.endpoint)

    def sampler(self, **kw):
        kw.setdefault("keys", KEYS)
        kw.setdefault("admin", self.admin)
        return GatewaySampler("bkt", **kw)


class Registration(WithFake):
    def test_registers_the_sampling_plan_at_construction(self):
        s = self.sampler(num_epochs=3, seed=7, num_replicas=2, rank=1, drop_last=True,
                         name="run 1")
        self.assertEqual(self.gw.posted_manifests(), [{
            "bucket": "bkt", "keys": KEYS, "num_epochs": 3, "shuffle": True, "seed": 7,
            "world_size": 2, "rank": 1, "drop_last": True, "prefetch": True, "name": "run 1"}])
        self.assertEqual(s.manifest_id, "m1")
        self.assertEqual(s.manifest["objects"], len(KEYS))

    def test_lazy_registers_at_the_first_iteration(self):
        s = self.sampler(lazy=True)
        self.assertEqual(self.gw.posted_manifests(), [])
        list(s)
        self.assertEqual(len(self.gw.posted_manifests()), 1)

    def test_yields_the_gateways_order_fetched_once_per_epoch(self):
        s = self.sampler(num_epochs=2, seed=3)
        for epoch in range(2):
            s.set_epoch(epoch)
            want = epoch_keys(KEYS, epoch, shuffle=True, seed=3)
            self.assertEqual(list(s), want)
            self.assertEqual(list(s), want)  # again: from the kept order
        orders = [r for r in self.gw.requests if r.path.endswith("/order")]
        self.assertEqual([r.query for r in orders], [{"epoch": "0"}, {"epoch": "1"}])
        self.assertEqual(len(self.gw.posted_manifests()), 1)

    def test_an_order_the_gateway_changes_is_followed(self):
        # The gateway is the authority: its order is what the prefetcher plans by.
        s = self.sampler(verify=True)
        self.gw.force(200, {"id": "m1", "epoch": 0, "indices": [1, 0], "keys": ["b", "a"]})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(list(s), ["b", "a"])
        self.assertTrue(any("differs" in str(x.message) for x in w))

    def test_indices_mode_yields_dataset_positions(self):
        s = self.sampler(indices=True, seed=5, num_replicas=3, rank=2)
        self.assertEqual(list(s), epoch_order(len(KEYS), 0, True, 5, 3, 2))

    def test_unshuffled(self):
        s = self.sampler(shuffle=False, num_epochs=2)
        s.set_epoch(1)
        self.assertEqual(list(s), KEYS)
        self.assertFalse(self.gw.posted_manifests()[0]["shuffle"])

    def test_close_and_context_manager_cancel_the_plan(self):
        with self.sampler() as s:
            list(s)
        self.assertEqual(self.gw.count("DELETE", "/_s3cached/manifests/m1"), 1)
        self.assertEqual(self.gw.manifests, {})

    def test_wait_warm_blocks_until_warm(self):
        self.gw.listing_polls = 0
        self.gw.warm_after = 2
        seen = []
        s = self.sampler(wait_warm=5, on_progress=seen.append)
        self.assertEqual([p["state"] for p in seen], ["warming", "warming", "warm"])
        self.assertEqual(s.progress()["state"], "warm")

    def test_a_refused_plan_raises_the_gateways_error(self):
        self.gw.force(400, {"error": "InvalidField", "message": "bad bucket"})
        with self.assertRaises(GatewayError) as cm:
            self.sampler()
        self.assertEqual(cm.exception.code, "InvalidField")


    def test_copies_and_pickles(self):
        import copy
        import pickle
        s = self.sampler(seed=4)
        want = list(s)
        for twin in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
            self.assertEqual(twin.manifest_id, s.manifest_id)
            self.assertEqual(list(twin), want)
        self.assertEqual(len(self.gw.posted_manifests()), 1)


class Epochs(WithFake):
    def test_training_past_the_plan_registers_the_next_window(self):
        s = self.sampler(num_epochs=2, seed=10)
        for epoch in range(5):
            s.set_epoch(epoch)
            self.assertEqual(list(s), epoch_keys(KEYS, epoch, shuffle=True, seed=10))
        posted = self.gw.posted_manifests()
        # windows start at epochs 0, 2, 4; each plan's seed makes its epoch 0 the real one
        self.assertEqual([m["seed"] for m in posted], [10, 12, 14])
        self.assertEqual(s.window_start, 4)
        # the windows replaced each other
        self.assertEqual(self.gw.count("DELETE", "/_s3cached/manifests/"), 2)
        self.assertEqual(list(self.gw.manifests), ["m3"])

    def test_resuming_from_a_checkpoint_registers_from_the_resumed_epoch(self):
        s = self.sampler(num_epochs=10, seed=1)
        s.set_epoch(6)  # before any iteration: the plan should start where training does
        self.assertEqual([m["seed"] for m in self.gw.posted_manifests()], [1, 7])
        self.assertEqual(list(s), epoch_keys(KEYS, 6, shuffle=True, seed=1))
        s.set_epoch(7)  # inside the plan, which has been read from: kept
        self.assertEqual(len(self.gw.posted_manifests()), 2)
        self.assertEqual(list(s), epoch_keys(KEYS, 7, shuffle=True, seed=1))

    def test_looking_at_another_epoch_does_not_move_the_plan(self):
        s = self.sampler(num_epochs=2, seed=5)
        self.assertEqual(s.epoch_order(7), epoch_keys(KEYS, 7, shuffle=True, seed=5))
        self.assertEqual(s.epoch_order(1), epoch_keys(KEYS, 1, shuffle=True, seed=5))
        self.assertEqual(len(self.gw.posted_manifests()), 1)
        self.gw.listing["p/"] = KEYS
        p = GatewaySampler("bkt", prefix="p/", num_epochs=2, admin=self.admin, lazy=True)
        p.set_epoch(1)
        self.assertEqual(len(p), len(KEYS))  # registers from epoch 1, lazily
        self.assertEqual(p.window_start, 1)
        with self.assertRaises(ValueError):
            p.epoch_order(0)

    def test_without_shuffle_the_seed_is_not_moved(self):
        s = self.sampler(num_epochs=1, shuffle=False, seed=4)
        list(s)
        s.set_epoch(1)
        self.assertEqual([m["seed"] for m in self.gw.posted_manifests()], [4, 4])

    def test_set_epoch_refuses_nonsense(self):
        s = self.sampler()
        for bad in (-1, 1.5, "2", True):
            with self.assertRaises(ValueError):
                s.set_epoch(bad)


class Length(WithFake):
    def test_len_is_distributed_samplers(self):
        for ws in (1, 2, 3, 5, 8):
            for drop in (False, True):
                s = GatewaySampler("bkt", keys=KEYS, num_replicas=ws, rank=ws - 1,
                                   drop_last=drop, admin=False)
                want = (len(KEYS) // ws) if drop else -(-len(KEYS) // ws)
                self.assertEqual(len(s), want)
                self.assertEqual(len(list(s)), want)
                if torch is not None:
                    self.assertEqual(len(s), len(DistributedSampler(
                        KEYS, num_replicas=ws, rank=ws - 1, drop_last=drop)))

    def test_prefix_plans_wait_for_the_listing(self):
        listed = sorted("p/%03d" % i for i in range(11))
        self.gw.listing["p/"] = listed
        self.gw.listing_polls = 2
        s = GatewaySampler("bkt", prefix="p/", num_replicas=2, rank=0, seed=8,
                           admin=self.admin)
        self.assertEqual(self.gw.posted_manifests()[0]["prefix"], "p/")
        self.assertEqual(len(s), 6)
        self.assertEqual(list(s), epoch_keys(listed, 0, shuffle=True, seed=8, world_size=2))

    def test_a_large_plan_is_waited_for_while_the_gateway_parses_it(self):
        self.gw.parsing_polls = 3
        s = self.sampler(seed=4, num_replicas=2, rank=1, job="run-4")
        self.assertEqual(s.manifest["state"], "parsing")
        self.assertEqual(self.gw.posted_manifests()[0]["job"], "run-4")
        self.assertEqual(list(s), epoch_keys(KEYS, 0, shuffle=True, seed=4, world_size=2,
                                             rank=1))

    def test_cache_aware_is_asked_for_and_needs_the_gateway(self):
        s = self.sampler(cache_aware=True, verify=True)
        self.assertIs(self.gw.posted_manifests()[0]["cache_aware"], True)
        self.assertEqual(list(s), epoch_keys(KEYS, 0, shuffle=True))
        with self.assertRaises(ValueError):
            self.sampler(cache_aware=True, fallback=True)
        with self.assertRaises(ValueError):
            GatewaySampler("bkt", keys=KEYS, cache_aware=True, admin=False)

    def test_a_failed_listing_raises(self):
        s = GatewaySampler("bkt", prefix="none/", admin=self.admin, lazy=False)
        self.gw.manifests["m1"]["state"] = "failed"
        with self.assertRaises(GatewayError) as cm:
            len(s)
        self.assertEqual(cm.exception.code, "ManifestFailed")


class Ranks(WithFake):
    def test_ranks_partition_each_epoch_like_distributed_sampler(self):
        for drop in (False, True):
            samplers = [self.sampler(num_replicas=4, rank=r, seed=2, drop_last=drop,
                                     num_epochs=2) for r in range(4)]
            for epoch in range(2):
                seen = []
                for s in samplers:
                    s.set_epoch(epoch)
                    seen += list(s)
                if drop:
                    self.assertEqual(len(seen), len(set(seen)))
                    self.assertEqual(len(seen), len(KEYS) // 4 * 4)
                else:
                    self.assertEqual(set(seen), set(KEYS))
                    self.assertEqual(len(seen), -(-len(KEYS) // 4) * 4)

    def test_world_size_alias_and_checks(self):
        s = self.sampler(world_size=3, rank=2)
        self.assertEqual(s.num_replicas, 3)
        with self.assertRaises(ValueError):
            self.sampler(world_size=3, num_replicas=2, rank=0)
        with self.assertRaises(ValueError):
            self.sampler(num_replicas=3, rank=3)
        with self.assertRaises(ValueError):
            self.sampler(keys=["a", "b", "a"])
        with self.assertRaises(ValueError):
            GatewaySampler("bkt", keys=KEYS, prefix="p/", admin=self.admin)
        with self.assertRaises(ValueError):
            self.sampler(num_epochs=0)

    def test_defaults_are_one_rank_without_torch_distributed(self):
        s = self.sampler()
        self.assertEqual((s.num_replicas, s.rank), (1, 0))


class OfflineAndFallback(unittest.TestCase):
    def test_offline_computes_the_order_locally(self):
        s = GatewaySampler("bkt", keys=KEYS, seed=9, num_epochs=1, admin=False)
        for epoch in range(3):
            s.set_epoch(epoch)
            self.assertEqual(list(s), epoch_keys(KEYS, epoch, shuffle=True, seed=9))
        self.assertIsNone(s.manifest_id)
        with self.assertRaises(ValueError):
            GatewaySampler("bkt", prefix="p/", admin=False)

    def test_fallback_when_the_admin_api_is_down(self):
        dead = Admin("http://127.0.0.1:1", retries=0, timeout=2)
        with self.assertRaises(GatewayError):
            GatewaySampler("bkt", keys=KEYS, admin=dead)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = GatewaySampler("bkt", keys=KEYS, admin=dead, seed=3, fallback=True)
            self.assertEqual(list(s), epoch_keys(KEYS, 0, shuffle=True, seed=3))
        self.assertTrue(any("locally computed" in str(x.message) for x in w))


@unittest.skipIf(torch is None, "torch is not installed")
class Torch(WithFake):
    def test_is_a_torch_sampler_and_drives_a_dataloader(self):
        s = self.sampler(num_epochs=2, seed=11)
        self.assertIsInstance(s, Sampler)
        ds = {k: torch.tensor([i]) for i, k in enumerate(KEYS)}

        class ByKey(torch.utils.data.Dataset):
            def __getitem__(self, key):
                return key, ds[key]

        loader = DataLoader(ByKey(), batch_size=5, sampler=s)
        self.assertEqual(len(loader), 8)
        for epoch in range(2):
            s.set_epoch(epoch)
            seen = [k for keys, _ in loader for k in keys]
            self.assertEqual(seen, epoch_keys(KEYS, epoch, shuffle=True, seed=11))


class WithoutTorch(unittest.TestCase):
    def test_plain_classes_with_the_same_interface(self):
        code = ("import sys; sys.path.insert(0, %r)\n"
                "from s3cached import GatewaySampler, S3Dataset\n"
                "assert 'torch' not in sys.modules\n"
                "assert GatewaySampler.__mro__[-1] is object and len(GatewaySampler.__mro__) == 3\n"
                "s = GatewaySampler('b', keys=['a', 'b', 'c'], seed=1, admin=False)\n"
                "s.set_epoch(2); print(len(s), list(s))\n" % _path.ROOT)
        env = dict(os.environ, S3CACHED_NO_TORCH="1")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        want = epoch_keys(["a", "b", "c"], 2, shuffle=True, seed=1)
        self.assertEqual(out.stdout.strip(), "3 %r" % (want,))


if __name__ == "__main__":
    unittest.main()
