"""build/s3cached-trainsim, the DataLoader emulator (tools/trainsim): seeding a dataset,
training epochs through the gateway (hit ratios from its stats), reading in a manifest's
order, the ranks of one job reading their shares and stepping together, and the exit codes
for corrupted bytes, failed requests and bad command lines.

S3CACHED_TRAINSIM_BIN overrides the binary (default build/s3cached-trainsim).
"""
import csv
import hashlib
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.request

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness import s3util

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KiB = 1024


def binary():
    return os.environ.get("S3CACHED_TRAINSIM_BIN") or os.path.join(
        REPO, "build", "s3cached-trainsim")


def trainsim(mode, endpoint, up, *args, creds=True, extra_env=None, timeout=300):
    """Runs the emulator against endpoint with up's bucket (and key pair when creds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3CACHED_"))}
    if creds:
        env.update({"AWS_ACCESS_KEY_ID": up.access_key, "AWS_SECRET_ACCESS_KEY": up.secret_key})
    env.update(extra_env or {})
    argv = [binary(), mode, "--endpoint", endpoint, "--bucket", up.bucket] + [str(a) for a in args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def ok(res):
    assert res.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (
        res.returncode, res.stdout, res.stderr)
    return res


def admin(gw, path):
    with urllib.request.urlopen(gw.endpoint + "/_s3cached/" + path, timeout=30) as r:
        return json.loads(r.read())


def digest(keys):
    """The order fingerprint the emulator reports: SHA-256 of the keys, each + newline."""
    return hashlib.sha256("".join(k + "\n" for k in keys).encode()).hexdigest()


def documented_shuffle(n, epoch, seed):
    """docs/manifests.md's order (one rank, shuffled), written independently of the tool."""
    mask = (1 << 64) - 1
    perm = list(range(n))
    state = (seed + epoch) & mask
    for i in range(n - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        j = (z ^ (z >> 31)) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def test_two_epochs_through_the_gateway_second_epoch_only_hits(upstream, gateway, tmp_path):
    gw = gateway(upstream, cache_size="64M")
    prefix = s3util.unique_key("trainsim") + "/"
    data = ["--prefix", prefix, "--objects", 200, "--size", "8K", "--size-dist", "lognormal",
            "--sigma", "0.6", "--data-seed", 5]
    res = ok(trainsim("seed", gw.endpoint, upstream, *data, "--workers", 8, "--quiet"))
    assert "seeded 200 of 200 objects" in res.stdout

    out_json, out_csv = tmp_path / "run.json", tmp_path / "run.csv"
    res = ok(trainsim("train", gw.endpoint, upstream, *data, "--epochs", 2, "--batch-size", 16,
                      "--workers", 8, "--prefetch-batches", 3, "--compute-ms", 2,
                      "--json", out_json, "--csv", out_csv))
    assert "epoch 2/2" in res.stderr  # the progress line, plain lines when not a terminal
    assert "hit_ratio" in res.stdout
    run = json.loads(out_json.read_text())
    assert run["status"] == "ok"
    cfg = run["config"]
    assert cfg["objects"] == 200 and cfg["batch_size"] == 16 and cfg["size_dist"] == "lognormal"
    assert [e["epoch"] for e in run["epochs"]] == [1, 2]
    for e in run["epochs"]:
        assert e["objects"] == 200 and e["bytes"] == cfg["dataset_bytes"]
        assert e["corrupt"] == 0 and e["failed"] == 0
        assert 0 <= e["stall_s"] <= e["wall_s"] and abs(e["compute_s"] - 13 * 0.002) < 1e-9
        assert 0 < e["lat_p50_ms"] <= e["lat_p99_ms"] <= e["lat_max_ms"]
    assert run["epochs"][0]["order_sha256"] != run["epochs"][1]["order_sha256"]
    rows = list(csv.DictReader(out_csv.read_text().splitlines()))
    assert [r["epoch"] for r in rows] == ["1", "2"]

    gw.require_real()
    first, second = run["epochs"]
    assert first["hits"] + first["misses"] == 200 and first["hit_ratio"] < 1
    assert second["hits"] == 200 and second["misses"] == 0 and second["hit_ratio"] == 1.0
    assert rows[1]["hit_ratio"] == "1.000000"
    assert "1.000" in res.stdout.splitlines()[-1]


def test_gateway_order_reads_each_epoch_in_the_manifest_order(upstream, gateway, tmp_path):
    gw = gateway(upstream)
    gw.require_real()
    prefix = s3util.unique_key("trainsim-order") + "/"
    data = ["--prefix", prefix, "--objects", 60, "--size", "4K"]
    ok(trainsim("seed", upstream.endpoint, upstream, *data, "--quiet"))  # straight to the bucket
    loader = ["--epochs", 2, "--batch-size", 8, "--compute-ms", 1, "--shuffle-seed", 11, "--quiet"]

    out = tmp_path / "gw.json"
    ok(trainsim("train", gw.endpoint, upstream, *data, *loader, "--gateway-order", "--json", out))
    run = json.loads(out.read_text())
    mid = run["config"]["manifest_id"]
    assert run["config"]["order"] == "gateway" and mid
    prog = admin(gw, "manifests/" + mid)
    assert prog["epochs"] == 2 and prog["objects_total"] == 60 and prog["accesses"] == 120
    keys = ["%s%08d.bin" % (prefix, i) for i in range(60)]
    for e in range(2):
        order = admin(gw, "manifests/%s/order?epoch=%d" % (mid, e))
        assert order["keys"] == [keys[i] for i in documented_shuffle(60, e, 11)]
        assert run["epochs"][e]["order_sha256"] == digest(order["keys"])
        assert run["epochs"][e]["objects"] == 60
    deadline = time.monotonic() + 5
    while admin(gw, "manifests/" + mid)["position"] < 120 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert admin(gw, "manifests/" + mid)["position"] == 120  # the gateway saw its plan followed

    # The tool's own shuffle is the documented one: the same seed gives the same orders;
    # --manifest-id reads an existing manifest's order.
    for extra in ([], ["--manifest-id", mid]):
        out = tmp_path / "again.json"
        ok(trainsim("train", gw.endpoint, upstream, *data, *loader, *extra, "--json", out))
        again = json.loads(out.read_text())
        assert [e["order_sha256"] for e in again["epochs"]] == [
            e["order_sha256"] for e in run["epochs"]]
        assert again["config"]["manifest_id"] == (mid if extra else None)
        assert [e["hit_ratio"] for e in again["epochs"]] == [1.0, 1.0]


def test_ranks_read_their_share_and_step_together(s3rver, gateway, tmp_path):
    gw = gateway(s3rver)
    gw.require_real()
    n, world, steps = 61, 4, 4  # 16 samples a rank and epoch (61 padded to 64), batches of 4
    prefix = s3util.unique_key("trainsim-ranks") + "/"
    data = ["--prefix", prefix, "--objects", n, "--size", "2K"]
    ok(trainsim("seed", s3rver.endpoint, s3rver, *data, "--quiet"))
    keys = ["%s%08d.bin" % (prefix, i) for i in range(n)]

    def run_ranks(tag, *extra):
        """Runs the 4 ranks at once; rank 0's model computes 100 ms a step, the others' 0."""
        barrier = tmp_path / (tag + ".steps")
        procs = []
        for r in range(world):
            argv = [binary(), "train", "--endpoint", gw.endpoint, "--bucket", s3rver.bucket] + [
                str(a) for a in data + ["--epochs", 2, "--batch-size", 4, "--shuffle-seed", 11,
                                        "--world-size", world, "--rank", r, "--step-barrier",
                                        barrier, "--compute-ms", 100 if r == 0 else 0,
                                        "--quiet", "--json", tmp_path / ("%s%d.json" % (tag, r))]
                + list(extra)]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3CACHED_"))}
            env.update({"AWS_ACCESS_KEY_ID": s3rver.access_key,
                        "AWS_SECRET_ACCESS_KEY": s3rver.secret_key})
            procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, out, err)
        return [json.loads((tmp_path / ("%s%d.json" % (tag, r))).read_text())
                for r in range(world)]

    runs = run_ranks("gw", "--gateway-order")
    for e in range(2):
        perm = documented_shuffle(n, e, 11)
        padded = perm + perm[:world * 16 - n]
        shares = [[keys[i] for i in padded[r::world]] for r in range(world)]
        assert set(k for sh in shares for k in sh) == set(keys)
        for r, run in enumerate(runs):
            mid = run["config"]["manifest_id"]
            assert (run["config"]["world_size"], run["config"]["rank"]) == (world, r)
            assert admin(gw, "manifests/" + mid)["accesses"] == 2 * 16 * world  # one job
            assert admin(gw, "manifests/%s/order?epoch=%d" % (mid, e))["keys"] == shares[r]
            assert run["epochs"][e]["order_sha256"] == digest(shares[r])
            assert run["epochs"][e]["objects"] == 16
    assert len({run["config"]["manifest_id"] for run in runs}) == world
    # the barrier: the ranks that compute nothing wait for rank 0's 100 ms steps
    for e in range(2):
        slow = runs[0]["epochs"][e]
        assert slow["wall_s"] >= steps * 0.1
        for run in runs[1:]:
            fast = run["epochs"][e]
            assert fast["wall_s"] >= 0.9 * steps * 0.1, fast
            assert fast["sync_s"] >= 0.7 * steps * 0.1, fast
            assert fast["sync_s"] > 5 * slow["sync_s"], (fast, slow)

    # the tool's own split is the manifest's
    own = run_ranks("own")
    assert [[ep["order_sha256"] for ep in run["epochs"]] for run in own] == [
        [ep["order_sha256"] for ep in run["epochs"]] for run in runs]
    assert all(run["config"]["order"] == "shuffle" for run in own)
    # a barrier file of an earlier run is refused (exit 1), not taken for a new one
    stale = tmp_path / "gw.steps"
    stale.write_bytes(b"\x01" * 8 * world)
    res = trainsim("train", gw.endpoint, s3rver, *data, "--epochs", 1, "--world-size", world,
                   "--rank", 0, "--step-barrier", stale, "--quiet")
    assert res.returncode == 1 and "not this run's" in res.stderr, res.stderr


def test_gateway_order_waits_while_the_gateway_parses_a_large_plan(s3rver, gateway, tmp_path):
    gw = gateway(s3rver)
    gw.require_real()
    # keys of about 860 bytes: 1,300 of them make a manifest body over 1 MiB, which the
    # gateway answers 202 and parses later (docs/manifests.md, "Large plans")
    prefix = s3util.unique_key("trainsim-large") + "/" + ("x" * 200 + "/") * 4
    data = ["--prefix", prefix, "--objects", 1300, "--size", 16]
    ok(trainsim("seed", s3rver.endpoint, s3rver, *data, "--workers", 16, "--quiet"))
    out = tmp_path / "large.json"
    res = ok(trainsim("train", gw.endpoint, s3rver, *data, "--epochs", 1, "--batch-size", 64,
                      "--compute-ms", 0, "--shuffle-seed", 3, "--gateway-order", "--json", out))
    run = json.loads(out.read_text())
    mid = run["config"]["manifest_id"]
    assert "reading in the order of manifest %s" % mid in res.stderr
    keys = ["%s%08d.bin" % (prefix, i) for i in range(1300)]
    assert run["epochs"][0]["order_sha256"] == digest([keys[i] for i in
                                                        documented_shuffle(1300, 0, 3)])
    assert run["epochs"][0]["objects"] == 1300
    assert admin(gw, "manifests/" + mid)["accesses"] == 1300


def test_the_admin_token_comes_from_the_environment(upstream, gateway, tmp_path):
    token = "trainsim-admin-token-0123456789"
    gw = gateway(upstream, admin_token=token)
    gw.require_real()
    prefix = s3util.unique_key("trainsim-token") + "/"
    data = ["--prefix", prefix, "--objects", 10, "--size", "1K"]
    ok(trainsim("seed", gw.endpoint, upstream, *data, "--quiet"))
    run = ["--epochs", 1, "--compute-ms", 0, "--quiet"]
    res = ok(trainsim("train", gw.endpoint, upstream, *data, *run))
    assert "n/a" in res.stdout  # the stats answer 401 without the token
    res = trainsim("train", gw.endpoint, upstream, *data, *run, "--gateway-order")
    assert res.returncode == 1 and "answered 401" in res.stderr
    out = tmp_path / "token.json"
    env = {"S3CACHED_ADMIN_TOKEN": token}
    ok(trainsim("train", gw.endpoint, upstream, *data, *run, "--gateway-order", "--json", out,
                extra_env=env))
    epoch = json.loads(out.read_text())["epochs"][0]
    assert epoch["hits"] + epoch["misses"] == 10 and epoch["hit_ratio"] is not None


def test_a_corrupted_object_is_named_and_exits_3(upstream, tmp_path):
    prefix = s3util.unique_key("trainsim-bad") + "/"
    data = ["--prefix", prefix, "--objects", 40, "--size", "4K"]
    ok(trainsim("seed", upstream.endpoint, upstream, *data, "--quiet"))
    bad = "%s%08d.bin" % (prefix, 17)
    s3util.upstream_client(upstream).put_object(
        Bucket=upstream.bucket, Key=bad, Body=s3util.data(4 * KiB, seed="other bytes"))

    out = tmp_path / "bad.json"
    res = trainsim("train", upstream.endpoint, upstream, *data, "--epochs", 2, "--compute-ms", 0,
                   "--stats-url", "none", "--json", out, "--quiet")
    assert res.returncode == 3, res.stderr
    assert "CORRUPT %s: first wrong byte at offset" % bad in res.stderr
    run = json.loads(out.read_text())
    assert run["status"] == "corrupt" and run["config"]["stats_url"] is None
    assert len(run["epochs"]) == 1  # the epoch that saw it is the last
    e = run["epochs"][0]
    assert e["corrupt"] == 1 and e["objects"] == 39 and e["hit_ratio"] is None

    # A dataset seeded with other options is caught too, with its header decoded.
    res = trainsim("train", upstream.endpoint, upstream, *data[:-1], "5K", "--objects", 1,
                   "--epochs", 1, "--stats-url", "none", "--quiet")
    assert res.returncode == 3
    assert "its header reads object 0, size 4096 (expected 0, 5120)" in res.stderr


def test_missing_objects_fail_the_run_with_exit_4(upstream):
    prefix = s3util.unique_key("trainsim-missing") + "/"
    ok(trainsim("seed", upstream.endpoint, upstream, "--prefix", prefix, "--objects", 5,
                "--size", 100, "--quiet"))
    res = trainsim("train", upstream.endpoint, upstream, "--prefix", prefix, "--objects", 8,
                   "--size", 100, "--epochs", 1, "--stats-url", "none", "--quiet")
    assert res.returncode == 4, res.stderr
    for i in (5, 6, 7):
        assert "FAILED GET %s%08d.bin: HTTP 404" % (prefix, i) in res.stderr
    assert "n/a" in res.stdout  # no stats asked for


class _Capture(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        type(self).seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_requests_are_signed_as_botocore_signs_them():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = "http://127.0.0.1:%d" % server.server_port
        up = type("Up", (), {"bucket": "bkt", "access_key": "AKIDEXAMPLE",
                             "secret_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"})
        res = trainsim("train", endpoint, up, "--prefix", "a b/+~", "--objects", 1, "--epochs",
                       1, "--stats-url", "none", "--quiet",
                       extra_env={"AWS_REGION": "eu-west-3", "AWS_SESSION_TOKEN": "tok/en=="})
        assert res.returncode == 4, res.stderr
    finally:
        server.shutdown()
        server.server_close()
    path, headers = _Capture.seen[0]
    assert path == "/bkt/a%20b/%2B~00000000.bin"
    auth = headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-3/s3/aws4_request" in auth
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert signed == ["host", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token"]
    req = AWSRequest(method="GET", url=endpoint + path,
                     headers={k: headers[k] for k in signed if k != "host"})
    req.context["timestamp"] = headers["x-amz-date"]
    signer = S3SigV4Auth(Credentials(up.access_key, up.secret_key, "tok/en=="), "s3", "eu-west-3")
    want = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    assert auth.endswith("Signature=" + want)


def test_bad_command_lines_exit_2():
    up = type("Up", (), {"bucket": "b", "access_key": "k", "secret_key": "s"})
    e = "http://127.0.0.1:9"
    for args in (["--objects", 0, "--epochs", 1],
                 ["--epochs", 1],
                 ["--objects", 5],  # train needs --epochs
                 ["--objects", 5, "--epochs", 1, "--size-dist", "uniform"],
                 ["--objects", 5, "--epochs", 1, "--size", "12Q"],
                 ["--objects", 5, "--epochs", 1, "--frobnicate"],
                 ["--objects", 5, "--epochs", 1001, "--gateway-order"]):
        res = trainsim("train", e, up, *args)
        assert res.returncode == 2, (args, res.stderr)
        assert "s3cached-trainsim" in res.stderr
    res = trainsim("seed", e, up, "--objects", 5, "--epochs", 2)
    assert res.returncode == 2 and "--epochs applies to train only" in res.stderr
    res = trainsim("train", e + "/some/path", up, "--objects", 5, "--epochs", 1)
    assert res.returncode == 2 and "--endpoint" in res.stderr
    res = subprocess.run([binary(), "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--prefetch-batches" in res.stdout
