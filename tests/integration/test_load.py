"""A bounded load test: 1,000 concurrent keep-alive connections mixing hits, misses and
pass-through for 60 s against a real radosgw upstream. No request may fail, and neither file
descriptors nor memory may grow between the first and the last 10 s.

The gateway is the optimized build here (build/s3cached): ASan's quarantine would make memory
growth meaningless. S3CACHED_LOAD_SECONDS shortens the run for development."""
import concurrent.futures
import json
import os
import re
import resource
import shutil
import subprocess
import threading
import tempfile
import time

import pytest

from harness import gateway as gwmod
from harness import s3util

HERE = os.path.dirname(os.path.abspath(__file__))
SECONDS = int(os.environ.get("S3CACHED_LOAD_SECONDS", "60"))
CONNECTIONS = 1000
HOT, COLD, SIZE = 200, 800, 8 * 1024


def seed(up, prefix):
    client = s3util.upstream_client(up)

    def put(name):
        client.put_object(Bucket=up.bucket, Key=prefix + name, Body=s3util.data(SIZE, seed=name))

    names = ["hot-%05d" % i for i in range(HOT)] + ["cold-%05d" % i for i in range(COLD)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, names))


def sample(pid):
    """(open file descriptors, resident set size in KiB) of pid."""
    fds = len(os.listdir("/proc/%d/fd" % pid))
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return fds, rss


def slowest_requests(path, count=20):
    """The count slowest requests of the access log, and how many took over 5 s: whether a
    client's wait was spent in the gateway (or behind it) or before its request was read."""
    rows = []
    with open(path) as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if "duration_ms" in entry:
                rows.append(entry)
    rows.sort(key=lambda e: -e["duration_ms"])
    slow = sum(1 for e in rows if e["duration_ms"] > 5000)
    lines = ["%d requests logged, %d over 5 s; slowest:" % (len(rows), slow)]
    lines += [json.dumps(e) for e in rows[:count]]
    return "\n".join(lines)


def test_thousand_connections_for_a_minute_without_failures_or_growth(radosgw, gateway):
    wrk = shutil.which("wrk")
    assert wrk, "wrk is missing (tools/install-deps.sh installs it)"
    binary = os.path.join(gwmod.REPO, "build", "s3cached")
    assert os.access(binary, os.X_OK), "build/s3cached missing: run make first"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 4 * CONNECTIONS:
        pytest.skip("the file descriptor limit (%d) is below what 1,000 connections need" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by wrk and the gateway

    prefix = s3util.unique_key("load") + "/"
    seed(radosgw, prefix)
    access_log = os.path.join(tempfile.mkdtemp(prefix="s3cached-it-load-"), "access.log")
    gw = gateway(radosgw, cache_size="4M", binary_path=binary,
                 extra_args=["--max-connections", "3000", "--log-level", "warn", "--access-log",
                             "--log-file", access_log])
    for i in range(HOT):  # warm the hot set
        s3util.raw(gw, "GET", "/%s/%shot-%05d" % (gw.bucket, prefix, i))

    samples = []

    def watch():
        start = time.monotonic()
        for at in (min(10, SECONDS / 6), SECONDS - min(10, SECONDS / 6)):
            time.sleep(max(0.0, start + at - time.monotonic()))
            samples.append(sample(gw.proc.pid))

    watcher = threading.Thread(target=watch)
    env = dict(os.environ, LOAD_BUCKET=gw.bucket, LOAD_PREFIX=prefix, LOAD_HOT=str(HOT),
               LOAD_COLD=str(COLD))
    watcher.start()
    res = subprocess.run([wrk, "-t2", "-c%d" % CONNECTIONS, "-d%ds" % SECONDS, "--timeout", "30s",
                          "-s", os.path.join(HERE, "load", "mix.lua"), gw.endpoint],
                         capture_output=True, env=env, timeout=SECONDS + 120)
    watcher.join()
    out = res.stdout.decode() + res.stderr.decode()
    print(out)
    print(slowest_requests(access_log))
    assert res.returncode == 0, out
    total = int(re.search(r"(\d+) requests in", out).group(1))
    assert total > CONNECTIONS, out
    assert "Non-2xx or 3xx responses" not in out, out
    assert "Socket errors" not in out, out
    assert "unexpected status" not in out, out

    stats = gw.stats()
    assert stats["hits"] > 0 and stats["misses"] > 0 and stats["passthrough"] > 0, stats
    (fds0, rss0), (fds1, rss1) = samples
    print("fds %d -> %d, rss %d -> %d KiB, %d requests" % (fds0, fds1, rss0, rss1, total))
    assert fds1 <= fds0 + 64, "file descriptors grew from %d to %d" % (fds0, fds1)
    assert rss1 <= rss0 * 1.25 + 16 * 1024, "memory grew from %d to %d KiB" % (rss0, rss1)
