"""Manifests through the admin API, for tests that only need one warmed."""
import json
import time
import urllib.request


def prefetch(gw, keys, timeout=20):
    """Posts a manifest of keys in gw's bucket and waits until its prefetcher has settled
    (warm, done or failed, nothing in flight); returns that progress."""
    data = json.dumps({"bucket": gw.bucket, "keys": keys}).encode()
    req = urllib.request.Request(gw.endpoint + "/_s3cached/manifests", data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 201
        mid = json.loads(resp.read())["id"]
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(gw.endpoint + "/_s3cached/manifests/" + mid,
                                    timeout=30) as resp:
            prog = json.loads(resp.read())
        if prog["state"] in ("warm", "done", "failed") and not prog["objects_in_flight"]:
            return prog
        assert time.monotonic() < deadline, prog
        time.sleep(0.05)
