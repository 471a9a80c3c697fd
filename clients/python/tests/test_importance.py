"""ImportanceReporter: buffering, shapes of losses, cleaning, limits, failures."""
import unittest
import warnings
from unittest import mock

import _path  # noqa: F401
from fakegw import FakeGateway
from s3cached import Admin, GatewayError, ImportanceReporter
from s3cached import importance as imp

try:
    import torch
except ImportError:
    torch = None


class Reporter(unittest.TestCase):
    def setUp(self):
        self.gw = FakeGateway().__enter__()
        self.addCleanup(self.gw.__exit__)
        self.admin = Admin(self.gw.endpoint, retries=0)

    def posts(self):
        """Every importance body as a list of minibatches (one minibatch goes as an object)."""
        bodies = [r.json() for r in self.gw.requests if r.path == "/_s3cached/importance"]
        return [b if isinstance(b, list) else [b] for b in bodies]

    def test_buffers_batch_minibatches_per_post(self):
        rep = ImportanceReporter("bkt", admin=self.admin, batch=3)
        for i in range(7):
            rep.report(["a%d" % i, "b%d" % i], [0.5, 1.5])
        self.assertEqual(len(self.posts()), 2)
        self.assertEqual(rep.pending, 1)
        self.assertEqual(self.posts()[0], [
            {"bucket": "bkt", "losses": {"a%d" % i: 0.5, "b%d" % i: 1.5}} for i in range(3)])
        self.assertEqual(rep.flush(), 2)
        self.assertEqual(self.posts()[-1], [{"bucket": "bkt", "losses": {"a6": 0.5, "b6": 1.5}}])
        self.assertEqual((rep.scored, rep.posts, rep.failures), (14, 3, 0))
        self.assertEqual(rep.flush(), 0)
        self.assertEqual(len(self.posts()), 3)

    def test_context_manager_flushes(self):
        with ImportanceReporter("bkt", admin=self.admin, batch=100) as rep:
            rep.report(("x", "y"), (1, 2))
            self.assertEqual(self.posts(), [])
        self.assertEqual(rep.scored, 2)

    def test_duplicates_keep_the_largest_loss_and_nonfinite_are_dropped(self):
        rep = ImportanceReporter("bkt", admin=self.admin, batch=1)
        rep.report(["a", "b", "a", "c", "d"], [0.1, 0.2, 0.9, float("nan"), float("inf")])
        self.assertEqual(self.posts(), [[{"bucket": "bkt", "losses": {"a": 0.9, "b": 0.2}}]])
        self.assertEqual(rep.dropped, 2)
        rep.report(["e"], [float("nan")])  # nothing left: nothing posted
        self.assertEqual(len(self.posts()), 1)

    def test_indices_are_mapped_through_keys(self):
        rep = ImportanceReporter("bkt", admin=self.admin, batch=1, keys=["k0", "k1", "k2"])
        rep.report([2, 0], [1.0, 2.0])
        self.assertEqual(self.posts()[0][0]["losses"], {"k2": 1.0, "k0": 2.0})
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None:
            rep.report(list(numpy.array([1])), numpy.array([3.0]))
            self.assertEqual(self.posts()[1][0]["losses"], {"k1": 3.0})
        with self.assertRaises(TypeError):
            ImportanceReporter("bkt", admin=self.admin).report([1], [1.0])
        with self.assertRaises(ValueError):
            rep.report(["a", "b"], [1.0])

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_tensors(self):
        rep = ImportanceReporter("bkt", admin=self.admin, batch=1, keys=["k0", "k1", "k2"])
        loss = torch.tensor([[0.25], [0.75]], requires_grad=True) * 2
        rep.report(torch.tensor([1, 2]), loss)
        self.assertEqual(self.posts()[0][0]["losses"], {"k1": 0.5, "k2": 1.5})

    def test_failures_warn_by_default_and_raise_when_strict(self):
        rep = ImportanceReporter("bkt", admin=self.admin, batch=1)
        self.gw.force(400, {"error": "InvalidField", "message": "key too long"})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            rep.report(["a"], [1.0])
        self.assertIn("key too long", str(w[0].message))
        self.assertEqual((rep.failures, rep.scored, rep.pending), (1, 0, 0))
        strict = ImportanceReporter("bkt", admin=self.admin, batch=1, strict=True)
        self.gw.force(400, {"error": "InvalidField", "message": "key too long"})
        with self.assertRaises(GatewayError):
            strict.report(["a"], [1.0])

    def test_bodies_stay_within_the_gateways_limits(self):
        mbs = [{"k%d-%d" % (i, j): 1.0 for j in range(3)} for i in range(25000)]
        chunks = list(imp._chunks("bkt", mbs))
        self.assertEqual([len(c) for c in chunks], [10000, 10000, 5000])
        big = [{"x" * 1000 + str(j): 1.0 for j in range(2000)} for _ in range(5)]
        chunks = list(imp._chunks("bkt", big))
        self.assertTrue(all(len(c) <= 3 for c in chunks), [len(c) for c in chunks])
        many = [{"%d-%d" % (i, j): 1.0 for j in range(3)} for i in range(4)]
        with mock.patch.object(imp, "MAX_SAMPLES", 9):
            self.assertEqual([len(c) for c in imp._chunks("bkt", many)], [3, 1])

    def test_a_minibatch_over_the_limits_is_refused_at_once(self):
        rep = ImportanceReporter("bkt", admin=self.admin, batch=1)
        with self.assertRaises(ValueError):
            rep.report(["k%07d" % i for i in range(400000)], [1.0] * 400000)
        self.assertEqual(self.posts(), [])


if __name__ == "__main__":
    unittest.main()
