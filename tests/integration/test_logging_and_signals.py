"""Logs (JSON lines by default, text on request, an access log, a file that SIGHUP reopens)
and SIGTERM draining the requests in flight before exiting cleanly."""
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request

from harness import proc, s3util

KiB = 1024


def log_lines(gw):
    lines = []
    for run in range(1, gw.runs + 1):
        with open(os.path.join(gw.workdir, "stderr.%d.log" % run), errors="replace") as f:
            lines += f.read().splitlines()
    return lines


def is_sanitizer_line(line):
    return line.startswith("==") or line.startswith("    #") or not line.strip()


def test_default_log_is_one_json_object_per_line(upstream, gateway):
    gw = gateway(upstream, extra_args=["--log-level", "debug"])
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    client.list_objects_v2(Bucket=gw.bucket, MaxKeys=1)
    gw.stop()
    events = [json.loads(l) for l in log_lines(gw) if not is_sanitizer_line(l)]
    assert any("listening" in e["msg"] for e in events)
    for e in events:
        assert set(e) >= {"time", "level", "msg"}, e
        assert e["level"] in ("error", "warn", "info", "debug")
        assert e["time"].endswith("Z") and "T" in e["time"]


def test_access_log_records_each_request_as_json(upstream, gateway):
    key = s3util.unique_key("acc") + "/line\nbreak \u00e9\u6f22 \"quoted\""
    body = s3util.data(7 * KiB, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    gw = gateway(upstream, extra_args=["--access-log"])
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    for _ in range(2):
        assert client.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    gw.stop()
    lines = [l for l in log_lines(gw) if not is_sanitizer_line(l)]
    access = [json.loads(l) for l in lines if '"type":"access"' in l]
    gets = [a for a in access if a["method"] == "GET" and a["key"] == key]
    assert [a["cache"] for a in gets] == ["MISS", "HIT"], access
    for a in gets:
        assert a["bucket"] == gw.bucket and a["status"] == 200 and a["bytes"] == len(body)
        assert a["client"] == "127.0.0.1" and len(a["request_id"]) == 16
        assert a["duration_ms"] >= 0
    assert all(l.startswith("{") for l in lines), "a key with a newline split a line"


def test_text_format_access_log_escapes_control_characters(upstream, gateway):
    key = s3util.unique_key("acct") + "/a\nforged line"
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=b"x")
    gw = gateway(upstream, extra_args=["--access-log", "--log-format", "text"])
    gw.require_real()
    client = s3util.client(gw.endpoint, gw.access_key, gw.secret_key)
    client.get_object(Bucket=gw.bucket, Key=key)["Body"].read()
    gw.stop()
    lines = log_lines(gw)
    assert not any(l.startswith("forged line") for l in lines)
    assert any("a\\x0aforged line" in l and " access " in l for l in lines), lines[-5:]


def test_sighup_reopens_the_log_file_after_rotation(upstream, gateway, tmp_path):
    path = tmp_path / "s3cached.log"
    gw = gateway(upstream, extra_args=["--log-file", str(path), "--access-log"])
    gw.require_real()
    assert "listening" in path.read_text()
    os.rename(path, str(path) + ".1")
    os.kill(gw.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), "SIGHUP did not reopen the log"
    gw.stats()
    gw.stop()
    assert '"type":"access"' in path.read_text()
    assert "SIGHUP: log reopened" in path.read_text()


def test_sigterm_lets_a_transfer_in_flight_finish_and_refuses_new_requests(upstream, gateway):
    key = s3util.unique_key("drain")
    body = s3util.data(600 * KiB, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    # The upstream trickles at 400 KiB/s through a proxy: the transfer takes about 1.5 s. The
    # drain may take as long as the transfer does on a loaded machine (the harness's 2 s would
    # cut it off there): what is tested is that it waits for it, not how fast it is.
    gw = gateway(upstream, rate=400 * KiB, extra_args=["--shutdown-timeout", "30"])
    gw.require_real()
    url = "%s/%s/%s" % (gw.endpoint, gw.bucket, s3util.quote_key(key))
    got = {}

    def fetch():
        with urllib.request.urlopen(url, timeout=60) as r:
            got["body"] = r.read()

    t = threading.Thread(target=fetch)
    t.start()
    # The GET is in flight once the upstream's bytes flow (seen at the proxy: asking the
    # gateway would put a request of ours in flight beside it).
    proc.wait_until("the upstream transfer", lambda: gw.proxy.bytes_down > 0, 30)
    assert gw.proxy.bytes_down < len(body), "the transfer ended before the signal"
    os.kill(gw.proc.pid, signal.SIGTERM)
    # The main thread has taken the signal once it logs so (read from its log: a request of
    # ours now would be counted in flight), and the drain has begun once /readyz says so.
    proc.wait_until("the signal taken", lambda: any(
        "draining" in l for l in log_lines(gw)), 30, gw.proc)
    proc.wait_until("draining", lambda: proc.http_status(gw.endpoint + "/readyz") == 503, 30,
                    gw.proc)
    try:
        urllib.request.urlopen(gw.endpoint + "/%s/other" % gw.bucket, timeout=10)
        new_status = 200
    except urllib.error.HTTPError as e:
        new_status = e.code
    except (urllib.error.URLError, ConnectionError):
        new_status = None  # gone already would be wrong: the transfer is still running
    try:
        urllib.request.urlopen(gw.endpoint + "/readyz", timeout=10)
        ready = 200
    except urllib.error.HTTPError as e:
        ready = e.code
    t.join(timeout=60)
    assert got.get("body") == body, "the transfer in flight was cut off"
    assert new_status == 503, new_status
    assert ready == 503
    assert gw.proc.popen.wait(timeout=30) == 0, "want a clean exit once drained"
    gw.stop()
    assert not gw.problems, gw.problems
    assert any("draining 1 requests in flight" in l for l in log_lines(gw))
