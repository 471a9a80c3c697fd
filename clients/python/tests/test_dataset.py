"""S3Dataset: indexing by key or position, transform, one client per process, pickling."""
import io
import os
import pickle
import unittest
from unittest import mock

import _path  # noqa: F401
from s3cached import S3Dataset
from s3cached.dataset import default_client


class FakeS3:
    made = 0

    def __init__(self):
        FakeS3.made += 1
        self.pid = os.getpid()
        self.gets = []

    def get_object(self, Bucket, Key):
        self.gets.append((Bucket, Key))
        return {"Body": io.BytesIO(("%s/%s" % (Bucket, Key)).encode())}


class Dataset(unittest.TestCase):
    def test_by_key_by_index_transform_and_return_key(self):
        ds = S3Dataset("bkt", ["a", "b"], transform=lambda b: b.upper(), client_factory=FakeS3)
        self.assertEqual(ds["b"], b"BKT/B")
        self.assertEqual(ds[0], b"BKT/A")
        self.assertEqual(len(ds), 2)
        ds = S3Dataset("bkt", client_factory=FakeS3, return_key=True)
        self.assertEqual(ds["x/y"], ("x/y", b"bkt/x/y"))
        with self.assertRaises(TypeError):
            ds[0]
        with self.assertRaises(TypeError):
            len(ds)

    def test_one_client_per_process(self):
        FakeS3.made = 0
        ds = S3Dataset("bkt", client_factory=FakeS3)
        ds["a"]
        ds["b"]
        self.assertEqual(FakeS3.made, 1)
        self.assertEqual(len(ds.client().gets), 2)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a forked DataLoader worker must not reuse the parent's client
            try:
                c = ds.client()
                ok = c.pid == os.getpid() and not c.gets and ds["c"] == b"bkt/c"
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        self.assertEqual(os.read(r, 1), b"1")
        os.close(r)
        os.close(w)
        self.assertEqual(len(ds.client().gets), 2)  # the parent's is untouched

    def test_pickles_without_its_client(self):
        ds = S3Dataset("bkt", ["a"], client_factory=FakeS3)
        ds["a"]
        copy = pickle.loads(pickle.dumps(ds))
        self.assertIsNone(copy._client)
        self.assertEqual(copy["a"], b"bkt/a")

    def test_default_client_points_at_the_gateway(self):
        try:
            import boto3  # noqa: F401
        except ImportError:
            self.skipTest("boto3 is not installed")
        env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:8999", "AWS_ACCESS_KEY_ID": "k",
               "AWS_SECRET_ACCESS_KEY": "s"}
        with mock.patch.dict(os.environ, env):
            c = default_client()
        self.assertEqual(c.meta.endpoint_url, "http://127.0.0.1:8999")
        self.assertEqual(c.meta.config.s3["addressing_style"], "path")


if __name__ == "__main__":
    unittest.main()
