"""GET /metrics: the Prometheus text format, counted right, open without the admin token."""
import json
import re
import time
import urllib.request

from harness import s3util

LINE = re.compile(r'^([a-z_][a-z0-9_]*)(\{([a-z_]+="[^"\\]*"(,[a-z_]+="[^"\\]*")*)?\})? '
                  r'(-?[0-9.e+-]+|\+Inf)$')


def scrape(gw):
    """Returns {(name, frozenset(labels.items())): value} after checking every line's form."""
    with urllib.request.urlopen(gw.endpoint + "/metrics", timeout=30) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples, typed = {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            typed[name] = kind
            continue
        m = LINE.match(line)
        assert m, "not a Prometheus sample line: %r" % line
        labels = dict(re.findall(r'([a-z_]+)="([^"]*)"', m.group(3) or ""))
        samples[(m.group(1), frozenset(labels.items()))] = float(m.group(5))
    for (name, _) in samples:
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or base in typed, "no # TYPE for %s" % name
    for name, kind in typed.items():
        assert (kind == "counter") == name.endswith("_total"), name
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_requests_cache_results_and_bytes(upstream, gateway):
    key = s3util.unique_key("metrics")
    body = s3util.data(30000, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    gw = gateway(upstream, admin_token="metrics-test-token-0123456789")
    gw.require_real()
    before = scrape(gw)
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    for _ in range(2):
        assert client.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    client.put_object(Bucket=gw.bucket, Key=key + "-put", Body=b"abc")
    gw.stats_when(lambda s: s["hits"] >= 1)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    # A request is counted when its connection reports completion, just after its last byte,
    # and the fill when the store commits it: wait (as long as it takes) until the three
    # requests and the fill are, then check every count exactly.
    deadline = time.monotonic() + 30
    while True:
        after = scrape(gw)
        if (delta("s3cached_requests_total", operation="GetObject", status="200") >= 2 and
                delta("s3cached_requests_total", operation="Put", status="200") >= 1 and
                delta("s3cached_fills_total", result="stored") >= 1) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.05)

    assert delta("s3cached_requests_total", operation="GetObject", status="200") == 2
    assert delta("s3cached_requests_total", operation="Put", status="200") == 1
    assert delta("s3cached_cache_requests_total", result="hit") == 1
    assert delta("s3cached_cache_requests_total", result="miss") == 1
    assert delta("s3cached_served_bytes_total", source="cache") == len(body)
    assert delta("s3cached_served_bytes_total", source="upstream") == len(body)
    assert value(after, "s3cached_cached_objects") >= 1
    assert value(after, "s3cached_capacity_bytes") == 64 * 1024 * 1024
    assert delta("s3cached_fills_total", result="stored") == 1
    # s3rver and radosgw send a single-part upload's MD5 ETag and no x-amz-checksum-*
    checks = {c: delta("s3cached_fill_checks_total", check=c)
              for c in ("md5", "crc64nvme", "crc32c", "crc32", "sha256", "sha1", "length")}
    assert checks == {"md5": 1, "crc64nvme": 0, "crc32c": 0, "crc32": 0, "sha256": 0, "sha1": 0,
                      "length": 0}, checks
    assert value(after, "s3cached_upstream_reachable") == 1
    assert value(after, "s3cached_upstream_response_seconds_count") >= 2

    # Histogram buckets are cumulative and end at the count.
    name = "s3cached_request_duration_seconds"
    buckets = sorted(((float(dict(lbl)["le"]), v) for (n, lbl), v in after.items()
                      if n == name + "_bucket" and dict(lbl)["operation"] == "GetObject"))
    counts = [v for _, v in buckets]
    assert counts == sorted(counts) and buckets[-1][0] == float("inf")
    assert counts[-1] == value(after, name + "_count", operation="GetObject") >= 2
    assert value(after, name + "_sum", operation="GetObject") > 0


def test_metrics_show_manifest_progress(upstream, gateway):
    prefix = s3util.unique_key("mfmetrics")
    client = s3util.upstream_client(upstream)
    keys = ["%s/%03d" % (prefix, i) for i in range(20)]
    for k in keys:
        client.put_object(Bucket=upstream.bucket, Key=k, Body=s3util.data(2000, seed=k))
    gw = gateway(upstream)
    gw.require_real()
    req = urllib.request.Request(gw.endpoint + "/_s3cached/manifests", method="POST",
                                 data=json.dumps({"bucket": gw.bucket, "keys": keys}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        mid = json.loads(r.read())["id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(gw.endpoint + "/_s3cached/manifests/" + mid) as r:
            if json.loads(r.read())["state"] == "warm":
                break
        time.sleep(0.1)
    m = scrape(gw)
    assert value(m, "s3cached_manifests_active") == 1
    assert value(m, "s3cached_manifest_objects", state="total") == 20
    assert value(m, "s3cached_manifest_objects", state="cached") == 20
    assert value(m, "s3cached_prefetched_objects_total") == 20
    assert value(m, "s3cached_prefetch_inflight") == 0
