"""Admin against a local fake of the admin API: request shapes, errors, retries, waiting."""
import os
import unittest
from unittest import mock

import _path  # noqa: F401
from fakegw import FakeGateway
from s3cached import Admin, GatewayError, GatewayUnreachable, resolve_endpoint


class Endpoint(unittest.TestCase):
    def env(self, **kw):
        clean = {k: v for k, v in os.environ.items()
                 if k not in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "S3CACHED_ADMIN_TOKEN")}
        clean.update(kw)
        return mock.patch.dict(os.environ, clean, clear=True)

    def test_argument_then_s3_variable_then_generic_then_localhost(self):
        with self.env(AWS_ENDPOINT_URL_S3="http://s3only:1", AWS_ENDPOINT_URL="http://generic:2"):
            self.assertEqual(resolve_endpoint("http://arg:3/"), "http://arg:3")
            self.assertEqual(resolve_endpoint(), "http://s3only:1")
        with self.env(AWS_ENDPOINT_URL="http://generic:2"):
            self.assertEqual(Admin().endpoint, "http://generic:2")
        with self.env():
            self.assertEqual(Admin().endpoint, "http://localhost:8080")
        with self.env(AWS_ENDPOINT_URL="127.0.0.1:9000"):
            self.assertEqual(Admin().endpoint, "http://127.0.0.1:9000")
        with self.assertRaises(ValueError):
            resolve_endpoint("ftp://x")

    def test_token_from_argument_or_environment(self):
        with self.env(S3CACHED_ADMIN_TOKEN="envtok"):
            self.assertEqual(Admin("http://x").token, "envtok")
            self.assertEqual(Admin("http://x", token="argtok").token, "argtok")
        with self.env():
            self.assertIsNone(Admin("http://x").token)


class Requests(unittest.TestCase):
    def setUp(self):
        self.gw = FakeGateway().__enter__()
        self.addCleanup(self.gw.__exit__)
        self.admin = Admin(self.gw.endpoint, token="sekrit", retries=2)

    def last(self):
        return self.gw.requests[-1]

    def test_stats(self):
        self.assertEqual(self.admin.stats()["hits"], 1)
        r = self.last()
        self.assertEqual((r.method, r.path), ("GET", "/_s3cached/stats"))
        self.assertEqual(r.headers["authorization"], "Bearer sekrit")

    def test_no_authorization_without_a_token(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            Admin(self.gw.endpoint).stats()
        self.assertNotIn("authorization", self.last().headers)

    def test_manifest_lifecycle(self):
        body = {"bucket": "b", "keys": ["a", "b", "c"], "num_epochs": 2, "shuffle": True,
                "seed": 42}
        reply = self.admin.create_manifest(body)
        r = self.last()
        self.assertEqual((r.method, r.path), ("POST", "/_s3cached/manifests"))
        self.assertEqual(r.headers["content-type"], "application/json")
        self.assertEqual(r.json(), body)
        mid = reply["id"]
        self.assertEqual(reply["objects"], 3)
        self.assertEqual(self.admin.manifest(mid)["id"], mid)
        self.assertEqual(self.last().path, "/_s3cached/manifests/" + mid)
        self.assertEqual([m["id"] for m in self.admin.manifests()], [mid])
        order = self.admin.order(mid, epoch=1)
        self.assertEqual(self.last().path, "/_s3cached/manifests/%s/order" % mid)
        self.assertEqual(self.last().query, {"epoch": "1"})
        self.assertEqual(sorted(order["keys"]), ["a", "b", "c"])
        self.assertEqual(self.admin.cancel(mid)["state"], "canceled")
        self.assertEqual(self.last().method, "DELETE")
        with self.assertRaises(GatewayError) as cm:
            self.admin.manifest(mid)
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "NotFound"))
        self.assertIn(mid, cm.exception.message)

    def test_manifest_ids_are_quoted(self):
        with self.assertRaises(GatewayError):
            self.admin.manifest("../stats")
        self.assertEqual(self.last().path, "/_s3cached/manifests/..%2Fstats")

    def test_a_refusal_carries_status_code_and_message(self):
        self.gw.force(400, {"error": "InvalidField",
                            "message": "field \"rank\" must be an integer in 0..world_size-1"})
        with self.assertRaises(GatewayError) as cm:
            self.admin.create_manifest({"bucket": "b", "keys": ["a"], "rank": 3})
        e = cm.exception
        self.assertEqual((e.status, e.code), (400, "InvalidField"))
        self.assertIn("rank", e.message)
        self.assertIn("InvalidField 400", str(e))

    def test_an_s3_xml_error_is_understood_too(self):
        self.gw.force(403, b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>"
                           b"<Message>nope</Message></Error>", "application/xml")
        with self.assertRaises(GatewayError) as cm:
            self.admin.stats()
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.message),
                         (403, "AccessDenied", "nope"))

    def test_gets_are_retried_after_503_but_manifest_posts_are_not(self):
        self.gw.force(503, {"error": "SlowDown", "message": "Out of memory, please retry"})
        self.assertEqual(self.admin.stats()["hits"], 1)
        self.assertEqual(self.gw.count("GET", "/_s3cached/stats"), 2)
        self.gw.force(503, {"error": "SlowDown", "message": "Out of memory, please retry"})
        with self.assertRaises(GatewayError) as cm:
            self.admin.create_manifest({"bucket": "b", "keys": ["a"]})
        self.assertEqual(cm.exception.status, 503)
        self.assertEqual(self.gw.count("POST", "/_s3cached/manifests"), 1)
        for _ in range(3):
            self.gw.force(503, {"error": "SlowDown", "message": "x"})
        with self.assertRaises(GatewayError):
            self.admin.stats()
        self.assertEqual(self.gw.count("GET", "/_s3cached/stats"), 2 + 3)

    def test_a_loopback_gateway_is_never_reached_through_a_proxy(self):
        env = {"http_proxy": "http://127.0.0.1:1", "HTTP_PROXY": "http://127.0.0.1:1",
               "no_proxy": "", "NO_PROXY": ""}
        with mock.patch.dict(os.environ, env):
            self.assertEqual(Admin(self.gw.endpoint).stats()["hits"], 1)

    def test_pickles(self):
        import pickle
        self.admin.stats()
        copy = pickle.loads(pickle.dumps(self.admin))
        self.assertEqual((copy.endpoint, copy.token), (self.admin.endpoint, "sekrit"))
        self.assertEqual(copy.stats()["hits"], 1)

    def test_unreachable(self):
        admin = Admin("http://127.0.0.1:1", retries=0, timeout=2)
        with self.assertRaises(GatewayUnreachable) as cm:
            admin.stats()
        self.assertIsNone(cm.exception.status)
        self.assertIn("127.0.0.1:1", cm.exception.message)
        self.gw.force(None, b"")  # the connection closes without an answer, then one answers
        self.assertEqual(self.admin.stats()["hits"], 1)

    def test_post_losses_shapes(self):
        self.assertEqual(self.admin.post_losses("b", {"a": 0.5, "b": 1}), 2)
        self.assertEqual(self.last().json(), {"bucket": "b", "losses": {"a": 0.5, "b": 1.0}})
        self.assertEqual(self.admin.post_losses("b", [("x", 1.0), ("y", 2.0)]), 2)
        self.assertEqual(self.last().json(), {"bucket": "b", "losses": {"x": 1.0, "y": 2.0}})
        self.assertEqual(self.admin.post_losses("b", [{"a": 1}, {"c": 2, "d": 3}]), 3)
        self.assertEqual(self.last().json(), [{"bucket": "b", "losses": {"a": 1.0}},
                                              {"bucket": "b", "losses": {"c": 2.0, "d": 3.0}}])
        n = len(self.gw.requests)
        self.assertEqual(self.admin.post_losses("b", []), 0)
        with self.assertRaises(ValueError):
            self.admin.post_losses("b", {"a": float("nan")})
        self.assertEqual(len(self.gw.requests), n)


class WaitWarm(unittest.TestCase):
    def setUp(self):
        self.gw = FakeGateway().__enter__()
        self.addCleanup(self.gw.__exit__)
        self.admin = Admin(self.gw.endpoint)

    def test_polls_until_warm_and_reports_progress(self):
        self.gw.listing_polls = 0
        self.gw.warm_after = 3
        mid = self.admin.create_manifest({"bucket": "b", "keys": ["a"]})["id"]
        seen = []
        prog = self.admin.wait_warm(mid, timeout=10, callback=seen.append, interval=0.01)
        self.assertEqual(prog["state"], "warm")
        self.assertEqual([p["state"] for p in seen], ["warming"] * 3 + ["warm"])

    def test_planned_counts_as_warm(self):
        mid = self.admin.create_manifest({"bucket": "b", "keys": ["a"], "prefetch": False})["id"]
        self.assertEqual(self.admin.wait_warm(mid, timeout=1)["state"], "planned")

    def test_timeout_and_failure(self):
        self.gw.warm_after = 10 ** 6
        mid = self.admin.create_manifest({"bucket": "b", "keys": ["a"]})["id"]
        with self.assertRaises(TimeoutError):
            self.admin.wait_warm(mid, timeout=0.2, interval=0.05)
        self.gw.manifests[mid]["state"] = "failed"
        with self.assertRaises(GatewayError) as cm:
            self.admin.wait_warm(mid, timeout=1)
        self.assertEqual(cm.exception.code, "ManifestFailed")


if __name__ == "__main__":
    unittest.main()
