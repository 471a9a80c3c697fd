"""Faults beyond a single bad transfer: a reset mid-body, SlowDown storms, an upstream name
that does not resolve, kill -9 under write load, and a cache directory on a full filesystem.
After each, no truncated or corrupt object is ever served (every byte is compared with the
upstream's), hits keep being served, and the gateway recovers without manual steps.

Single-transfer faults use the fault-injecting fake (harness/faulty_upstream.py); the rest
run against s3rver and radosgw."""
import concurrent.futures
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from harness import faulty_upstream as faults
from harness import gateway as gateway_proc
from harness import proc, rawhttp, s3util

faulty_upstream = faults.faulty_upstream
KiB = 1024


def gw_get(gw, key):
    """(status, body, headers) of a GET through the gateway; status 0 for a cut transfer."""
    r = rawhttp.get(gw.endpoint, "/%s/%s" % (gw.bucket, s3util.quote_key(key)))
    return (r.status if r.complete else 0), r.body, r.headers


def test_reset_mid_body_fails_the_client_and_stores_nothing(faulty_upstream, gateway):
    fake = faulty_upstream
    body = s3util.data(300 * KiB, seed="rst")
    fake.put("rst/obj", body, faults.reset_mid_body(after=100 * KiB))
    gw = gateway(fake.upstream(), extra_args=["--upstream-retries", "0"])
    gw.require_real()
    status, got, _ = gw_get(gw, "rst/obj")
    assert status != 200, "a reset transfer reached the client as a clean object"
    if status == 0:
        assert len(got) < len(body) and body.startswith(got), "the bytes that arrived are wrong"
    st = gw.stats_when(lambda s: s["fills_failed"] >= 1)
    assert st["fills_failed"] == 1 and st["objects"] == 0, st
    fake.set_fault("rst/obj", faults.normal())
    for want in ("MISS", "HIT"):
        status, got, h = gw_get(gw, "rst/obj")
        assert (status, got == body, h.get("x-cache")) == (200, True, want)
        gw.stats_when(lambda s: s["fills_stored"] >= 1)


def test_slowdown_storm_over_many_keys_recovers_and_keeps_hits(faulty_upstream, gateway):
    fake = faulty_upstream
    hot = s3util.data(20 * KiB, seed="hot")
    fake.put("storm/hot", hot, faults.normal())
    keys = ["storm/%03d" % i for i in range(40)]
    bodies = {k: s3util.data(8 * KiB, seed=k) for k in keys}
    gw = gateway(fake.upstream(), extra_args=["--upstream-retries", "1"])
    gw.require_real()
    assert gw_get(gw, "storm/hot")[0] == 200
    gw.stats_when(lambda s: s["fills_stored"] >= 1)
    for k in keys:  # 3 SlowDowns each: more than one retry can absorb
        fake.put(k, bodies[k], faults.slowdown(times=3))

    def client(k):
        return k, gw_get(gw, k), gw_get(gw, "storm/hot")

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(client, keys))
    for k, (status, got, h), (hstatus, hgot, hh) in results:
        assert status == 503, (k, status)  # the storm reaches the client as S3's SlowDown
        assert rawhttp.s3_error_code(got) == "SlowDown"
        assert (hstatus, hgot == hot, hh.get("x-cache")) == (200, True, "HIT"), "hit lost"
    assert gw.stats()["objects"] == 1, "nothing of the storm may be stored"
    for k in keys:  # one more SlowDown is left per key, which the retry absorbs
        status, got, _ = gw_get(gw, k)
        assert (status, got == bodies[k]) == (200, True), k


def test_upstream_name_that_does_not_resolve_is_a_clean_5xx_and_not_ready(tmp_path):
    """The gateway runs in a network namespace of its own whose resolver is a closed port on
    its own loopback, so the failed lookup never leaves the machine."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2 for a network namespace")
    ns = "s3c-dns-%d" % os.getpid()
    etc = "/etc/netns/" + ns
    binary = gateway_proc.binary()  # S3CACHED_BIN, as every other gateway of the tests
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    gwp = None
    try:
        os.makedirs(etc, exist_ok=True)
        with open(etc + "/resolv.conf", "w") as f:
            f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        log = str(tmp_path / "gw.log")
        gwp = proc.Proc("s3cached", ["ip", "netns", "exec", ns, binary,
                                     "--listen", "127.0.0.1:8080",
                                     "--upstream", "http://no-such-bucket-host.invalid:9000",
                                     "--cache-dir", str(tmp_path / "cache"),
                                     "--upstream-retries", "1"], log,
                        env=dict(os.environ, AWS_ACCESS_KEY_ID="AK", AWS_SECRET_ACCESS_KEY="SK"))

        def curl(path):
            res = subprocess.run(["ip", "netns", "exec", ns, "curl", "-s", "-m", "20", "-o", "-",
                                  "-w", "\n%{http_code}", "http://127.0.0.1:8080" + path],
                                 capture_output=True)
            body, _, code = res.stdout.decode(errors="replace").rpartition("\n")
            return int(code or 0), body

        proc.wait_until("s3cached", lambda: curl("/healthz")[0] == 200, 20, gwp)
        started = time.monotonic()
        status, body = curl("/bucket/key")
        assert status in (502, 503) and "<Code>" in body, (status, body)
        assert time.monotonic() - started < 15, "the failed lookup took too long"
        status, body = curl("/readyz")
        assert status == 503 and "upstream" in body
        assert curl("/healthz")[0] == 200
    finally:
        if gwp is not None:
            gwp.stop(grace=10)
            text = proc.tail(gwp.log_path, 200)
            assert "Sanitizer" not in text and "runtime error" not in text, text
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(etc, ignore_errors=True)


def test_kill_9_under_write_and_fill_load_then_restart(upstream, gateway):
    prefix = s3util.unique_key("kill9")
    client_up = s3util.upstream_client(upstream)
    seeded = {"%s/seed-%03d" % (prefix, i): s3util.data(30 * KiB + i, seed="s%d" % i)
              for i in range(60)}
    for k, v in seeded.items():
        client_up.put_object(Bucket=upstream.bucket, Key=k, Body=v)
    gw = gateway(upstream, cache_size="16M")
    gw.require_real()
    c = gw.client()
    acked = {}
    stop = threading.Event()

    def writer(n):
        i = 0
        while not stop.is_set():
            k = "%s/put-%d-%04d" % (prefix, n, i)
            body = s3util.data(20 * KiB, seed=k)
            try:
                c.put_object(Bucket=gw.bucket, Key=k, Body=body)
                acked[k] = body
            except Exception:
                pass  # cut off by the kill: not acknowledged, nothing promised
            i += 1

    def reader():
        while not stop.is_set():
            for k in seeded:
                try:
                    gw_get(gw, k)
                except Exception:
                    pass

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(3)
    # ... and at least a few PUTs acknowledged by then, however slow the machine is.
    proc.wait_until("PUTs acknowledged under load", lambda: len(acked) >= 3, 60)
    gw.stop(kill=True)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    gw.start()
    assert acked, "no PUT was acknowledged before the kill"
    for k, body in acked.items():  # nothing acknowledged is lost
        assert client_up.get_object(Bucket=upstream.bucket, Key=k)["Body"].read() == body, k
    for k, body in list(seeded.items()) + list(acked.items())[:40]:
        for _ in range(2):  # whatever the cache holds after the crash is exact
            status, got, h = gw_get(gw, k)
            assert status == 200 and got == body, (k, status, h.get("x-cache"))
    assert gw.stats()["corrupt_chunks"] == 0


def test_cache_on_a_full_filesystem_keeps_serving(upstream, gateway, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        prefix = s3util.unique_key("fullfs")
        client_up = s3util.upstream_client(upstream)
        bodies = {"%s/%02d" % (prefix, i): s3util.data(400 * KiB, seed="f%d" % i)
                  for i in range(30)}  # 12 MB for a 6 MB filesystem holding a 64 MB cache
        for k, v in bodies.items():
            client_up.put_object(Bucket=upstream.bucket, Key=k, Body=v)
        gw = gateway(upstream, cache_size="64M", cache_dir=str(mnt / "cache"))
        gw.require_real()
        for _ in range(2):
            for k, v in bodies.items():
                status, got, _ = gw_get(gw, k)
                assert status == 200 and got == v, (k, status)
        st = gw.stats()
        assert st["objects"] > 0, "nothing could be cached at all"
        assert st["hits"] > 0, st
        assert st["corrupt_chunks"] == 0
        gw.restart()  # what was stored survives the full disk intact
        for k, v in bodies.items():
            status, got, _ = gw_get(gw, k)
            assert status == 200 and got == v, (k, status)
        gw.stop()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
