"""s3cachectl against a real gateway and upstream: warming by manifest file, by
prefix and by key list until warm (then every GET is a HIT), the progress output on
a terminal and in a log, status/manifests/show/order/cancel/importance, the gateway's
refusals, failed objects and manifests, timeouts and Ctrl-C, the endpoint settings,
an unreachable endpoint, and a fake admin API for the token and odd replies.

The binary is build/s3cachectl (S3CACHECTL_BIN overrides it, e.g. build/asan/s3cachectl).
"""
import fcntl
import http.server
import json
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time

import pytest

from harness import proc
from harness import s3util
from test_manifests import seed_objects, splitmix_order

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KiB = 1024
CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # anything but \n
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXIT_FAILED, EXIT_CANCELED, EXIT_PARTIAL, EXIT_TIMEOUT, EXIT_INTERRUPTED = 4, 5, 6, 7, 130


# ---- running the tool -------------------------------------------------------------


def binary():
    return os.environ.get("S3CACHECTL_BIN") or os.path.join(REPO, "build", "s3cachectl")


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def lines(self):
        return self.out.splitlines()

    def __repr__(self):
        return "exit %s\n-- stdout:\n%s\n-- stderr:\n%s" % (self.code, self.out, self.err)


def tool_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and not k.startswith("S3CACHED_")}
    env.update(extra or {})
    return env


def ctl(*args, endpoint=None, env=None, stdin=None, timeout=120):
    """Runs s3cachectl with stdout and stderr captured (not a terminal)."""
    if not os.access(binary(), os.X_OK):
        raise RuntimeError("%s missing: run make first" % binary())
    argv = [binary()] + (["--endpoint-url", endpoint] if endpoint else []) + list(args)
    p = subprocess.run(argv, input=stdin.encode() if stdin is not None else None,
                       capture_output=True, timeout=timeout, env=tool_env(env))
    return Result(p.returncode, p.stdout.decode("utf-8", "replace"),
                  p.stderr.decode("utf-8", "replace"))


def ctl_tty(*args, endpoint=None, columns=120, timeout=120):
    """Runs s3cachectl on a pseudo-terminal of the given width; returns its raw output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    argv = [binary(), "--endpoint-url", endpoint] + list(args)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         env=tool_env(), close_fds=True)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = p.wait(timeout=10)
    return Result(code, b"".join(chunks).decode("utf-8", "replace"), "")


def assert_plain(text):
    """No carriage return, escape or other control character: safe for logs."""
    assert not CONTROL_RE.search(text), "control character in %r" % text


def registered_id(res):
    m = re.match(r"(m\d+) registered: ", res.lines()[0])
    assert m, res
    return m.group(1)


def assert_all_hits(gw, keys, objs=None):
    c = gw.client()
    for key in keys:
        resp = c.get_object(Bucket=gw.bucket, Key=key)
        body = resp["Body"].read()
        if objs is not None:
            assert body == objs[key]
        gw.assert_cache(s3util.headers_of(resp), "HIT")


def manifest_file(tmp_path, body, name="manifest.json"):
    path = tmp_path / name
    path.write_text(json.dumps(body) if not isinstance(body, str) else body)
    return str(path)


# ---- warming ------------------------------------------------------------------------


def test_warm_manifest_file_until_warm_then_every_get_is_a_hit(upstream, gateway, tmp_path):
    gw = gateway(upstream)
    gw.require_real()
    objs = seed_objects(upstream, s3util.unique_key("ctl-file"), 36, 8 * KiB)
    path = manifest_file(tmp_path, {"bucket": upstream.bucket, "keys": list(objs),
                                    "name": "file run"})
    res = ctl("warm", path, endpoint=gw.endpoint)
    assert res.code == EXIT_OK, res
    assert_plain(res.out)
    mid = registered_id(res)
    assert res.lines()[0] == "%s registered: 36 objects, 36 reads over 1 epoch" % mid
    assert re.match(r"%s warm: 36/36 objects cached \(288\.0 KiB\) in \d+s$" % mid,
                    res.lines()[-1]), res
    assert res.err == ""
    st = gw.stats()
    assert st["prefetched_objects"] == 36
    assert st["objects"] >= 36
    assert_all_hits(gw, objs, objs)


def test_warm_prefix_with_a_sampling_plan_then_inspect_it(upstream, gateway):
    gw = gateway(upstream)
    gw.require_real()
    prefix = s3util.unique_key("ctl-prefix")
    objs = seed_objects(upstream, prefix, 30, 4 * KiB)
    seed_objects(upstream, prefix + "-not-under", 3, KiB)  # shares the name, not the prefix
    res = ctl("warm", "--prefix", "s3://%s/%s/" % (upstream.bucket, prefix), "--epochs", "2",
              "--shuffle", "--seed", "5", "--name", "prefix run", endpoint=gw.endpoint)
    assert res.code == EXIT_OK, res
    assert_plain(res.out)
    mid = registered_id(res)
    assert res.lines()[0] == "%s registered: listing s3://%s/%s/" % (mid, upstream.bucket, prefix)
    assert res.lines()[-1].startswith("%s warm: 30/30 objects cached (120.0 KiB)" % mid), res
    assert_all_hits(gw, objs, objs)

    listing = ctl("manifests", endpoint=gw.endpoint)
    assert listing.code == EXIT_OK, listing
    header, row = listing.lines()[0].split(), None
    assert header == ["ID", "STATE", "DONE", "OBJECTS", "FAILED", "CACHED", "EPOCHS", "DATASET",
                      "NAME"]
    row = next(line for line in listing.lines() if line.startswith(mid + " "))
    assert row.split()[:8] == [mid, "warm", "100%", "30/30", "0", "120.0", "KiB", "2"], row
    assert row.endswith("s3://%s/%s/  prefix run" % (upstream.bucket, prefix))
    as_json = json.loads(ctl("manifests", "--json", endpoint=gw.endpoint).out)
    assert [m["id"] for m in as_json["manifests"]] == [mid]

    show = ctl("show", mid, endpoint=gw.endpoint)
    assert show.code == EXIT_OK, show
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in show.lines())
    assert fields["state"] == "warm"
    assert fields["name"] == "prefix run"
    assert fields["plan"] == "2 epochs, 60 reads; shuffled with seed 5; rank 0 of 1"
    assert "30/30 objects" in fields["cached"] and "100%" in fields["cached"]
    assert fields["failed"] == "0"
    assert json.loads(ctl("show", mid, "--json", endpoint=gw.endpoint).out)["objects_cached"] == 30

    keys = sorted(objs)
    for epoch in (0, 1):
        order = ctl("order", mid, "--epoch", str(epoch), endpoint=gw.endpoint)
        assert order.code == EXIT_OK, order
        want = [keys[i] for i in splitmix_order(30, epoch, 5, True, 1, 0, False)]
        assert order.lines() == want
    assert ctl("order", mid, endpoint=gw.endpoint).lines() == ctl(
        "order", mid, "--epoch", "0", endpoint=gw.endpoint).lines()
    out_of_range = ctl("order", mid, "--epoch", "2", endpoint=gw.endpoint)
    assert out_of_range.code == EXIT_ERROR
    assert "InvalidField: epoch 2 is out of range: the plan has 2 epochs" in out_of_range.err


def test_warm_keys_from_a_file_and_from_stdin(s3rver, gateway, tmp_path):
    gw = gateway(s3rver)
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("ctl-keys"), 24, 2 * KiB)
    keys = list(objs)
    (tmp_path / "keys.txt").write_text("\n".join(keys[:12]) + "\n")
    res = ctl("warm", "--keys-from", str(tmp_path / "keys.txt"), "--bucket", s3rver.bucket,
              "--quiet", endpoint=gw.endpoint)
    assert res.code == EXIT_OK, res
    assert len(res.lines()) == 1 and " warm: 12/12 objects cached" in res.out, res
    uris = "".join("s3://%s/%s\r\n" % (s3rver.bucket, k) for k in keys[12:])
    res = ctl("warm", "--keys-from", "-", "--quiet", endpoint=gw.endpoint, stdin=uris)
    assert res.code == EXIT_OK, res
    assert " warm: 12/12 objects cached" in res.out
    assert_all_hits(gw, keys)


def test_status_shows_the_counters_as_a_table_and_as_json(s3rver, gateway, tmp_path):
    gw = gateway(s3rver, cache_size="64M")
    gw.require_real()
    objs = seed_objects(s3rver, s3util.unique_key("ctl-status"), 10, 4 * KiB)
    assert ctl("warm", manifest_file(tmp_path, {"bucket": s3rver.bucket, "keys": list(objs)}),
               "--quiet", endpoint=gw.endpoint).code == EXIT_OK
    assert_all_hits(gw, objs)
    st = gw.stats_when(lambda s: s["hits"] >= 10)
    res = ctl("status", endpoint=gw.endpoint)
    assert res.code == EXIT_OK, res
    assert_plain(res.out)
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in res.lines())
    assert fields["endpoint"] == gw.endpoint
    assert fields["policy"] == "lru"
    assert fields["cache"] == "40.0 KiB used of 64.0 MiB (0%%), %d objects" % st["objects"]
    assert fields["hit ratio"].startswith("%.1f%% (%d hits, %d misses; 0 bypasses)" % (
        100.0 * st["hits"] / (st["hits"] + st["misses"]), st["hits"], st["misses"]))
    assert fields["prefetched objects"] == "10"
    raw = json.loads(ctl("status", "--json", endpoint=gw.endpoint).out)
    assert raw["prefetched_objects"] == 10 and raw["objects"] == st["objects"]
    with_token = ctl("status", "--json", endpoint=gw.endpoint,
                     env={"S3CACHED_ADMIN_TOKEN": "t0ken"})  # the gateway does not check it yet
    assert with_token.code == EXIT_OK and json.loads(with_token.out)["objects"] == st["objects"]


def test_no_wait_prints_only_the_id_then_cancel_and_show(s3rver, gateway, tmp_path):
    gw = gateway(s3rver)
    path = manifest_file(tmp_path, {"bucket": s3rver.bucket, "keys": ["a", "b", "c"],
                                    "prefetch": False})
    res = ctl("warm", path, "--no-wait", endpoint=gw.endpoint)
    assert res.code == EXIT_OK, res
    assert re.fullmatch(r"m\d+\n", res.out), res
    mid = res.out.strip()
    planned = ctl("warm", path, endpoint=gw.endpoint)  # nothing to warm: done at once
    assert planned.code == EXIT_OK, planned
    assert planned.lines()[-1].endswith("planned: prefetch is off; the eviction policy plans by it")
    show = ctl("show", mid, endpoint=gw.endpoint)
    assert show.code == EXIT_OK and re.search(r"^state\s+planned$", show.out, re.M), show
    cancel = ctl("cancel", mid, endpoint=gw.endpoint)
    assert cancel.code == EXIT_OK, cancel
    assert cancel.out == "%s canceled: 0/3 objects were cached (0 B); they stay cached\n" % mid
    gone = ctl("show", mid, endpoint=gw.endpoint)
    assert gone.code == EXIT_ERROR
    assert gone.out == ""
    assert "HTTP 404: NotFound: no such manifest" in gone.err
    assert ctl("cancel", mid, endpoint=gw.endpoint).code == EXIT_ERROR
    assert "no manifests" not in ctl("manifests", endpoint=gw.endpoint).out  # the planned one
    ctl("cancel", registered_id(planned), endpoint=gw.endpoint)
    assert ctl("manifests", endpoint=gw.endpoint).out == "no manifests\n"


# ---- failures ------------------------------------------------------------------------


@pytest.mark.parametrize("body, needle", [
    ('{"bucket": "test", "keys": ["a"], "shufle": true}', 'UnknownField: unknown field "shufle"'),
    ('{"bucket": "test", "keys": ["a"]', "InvalidJSON: the body is not valid JSON"),
    ('{"bucket": "test", "keys": ["a"], "rank": 3, "world_size": 2}', 'InvalidField: field "rank"'),
    ('{"keys": ["a"]}', 'MissingField: field "bucket" is required'),
])
def test_bad_manifest_exits_1_with_the_gateways_message(s3rver, gateway, tmp_path, body, needle):
    gw = gateway(s3rver)
    res = ctl("warm", manifest_file(tmp_path, body), endpoint=gw.endpoint)
    assert res.code == EXIT_ERROR, res
    assert res.out == ""
    assert res.err.startswith("s3cachectl: the gateway answered HTTP 400: ")
    assert needle in res.err, res
    piped = ctl("warm", "-", endpoint=gw.endpoint, stdin=body)
    assert piped.code == EXIT_ERROR and needle in piped.err


def test_local_input_problems_exit_before_any_request(s3rver, gateway, tmp_path):
    gw = gateway(s3rver)
    res = ctl("warm", str(tmp_path / "missing.json"), endpoint=gw.endpoint)
    assert res.code == EXIT_ERROR and "cannot open" in res.err, res
    res = ctl("warm", manifest_file(tmp_path, "{oops"), "--epochs", "2", endpoint=gw.endpoint)
    assert res.code == EXIT_ERROR and "is not valid JSON" in res.err, res
    res = ctl("warm", "--keys-from", "-", endpoint=gw.endpoint, stdin="a\nb\n")
    assert res.code == EXIT_ERROR and "a bare key needs --bucket" in res.err, res
    res = ctl("warm", "--prefix", "train/", endpoint=gw.endpoint)
    assert res.code == EXIT_USAGE and "Try 's3cachectl warm --help'" in res.err, res
    assert ctl("manifests", endpoint=gw.endpoint).out == "no manifests\n"


def test_objects_that_fail_are_listed_with_reasons_and_exit_6(s3rver, gateway):
    gw = gateway(s3rver)
    objs = seed_objects(s3rver, s3util.unique_key("ctl-partial"), 8, KiB)
    keys = list(objs) + ["ctl-partial/none-1", "ctl-partial/none-2"]
    res = ctl("warm", "--keys-from", "-", "--bucket", s3rver.bucket, endpoint=gw.endpoint,
              stdin="\n".join(keys))
    assert res.code == EXIT_PARTIAL, res
    assert re.search(r" warm: 8/10 objects cached \(8\.0 KiB\) in \d+s, 2 failed$",
                     res.lines()[-1]), res
    err = res.err.splitlines()
    assert err[0] == "2 objects could not be fetched:"
    assert sorted(err[1:]) == ["  ctl-partial/none-%d: NoSuchKey: the object does not exist "
                               "upstream" % i for i in (1, 2)]


def test_failed_prefix_manifest_exits_4_with_the_reason(s3rver, gateway):
    gw = gateway(s3rver)
    res = ctl("warm", "--prefix", "s3://%s/no-such-prefix-ctl/" % s3rver.bucket,
              endpoint=gw.endpoint)
    assert res.code == EXIT_FAILED, res
    assert res.lines()[-1].endswith(
        'failed: the prefix "no-such-prefix-ctl/" matched no objects in bucket "%s"'
        % s3rver.bucket)


def test_unreachable_endpoint_gives_a_hint_and_exits_3():
    port = proc.free_port()
    url = "http://127.0.0.1:%d" % port
    for args, env, source in [(["--endpoint-url", url], None, "--endpoint-url"),
                              ([], {"AWS_ENDPOINT_URL": url}, "AWS_ENDPOINT_URL"),
                              ([], {"AWS_ENDPOINT_URL_S3": url + "/"}, "AWS_ENDPOINT_URL_S3")]:
        res = ctl(*(args + ["status"]), env=env)
        assert res.code == EXIT_UNREACHABLE, res
        assert res.out == ""
        assert ("s3cachectl: cannot reach the gateway at %s (endpoint from %s)" % (url, source)
                in res.err), res
        assert "hint: is s3cached running and listening there?" in res.err


def test_endpoint_comes_from_the_s3_variable_before_the_generic_one(s3rver, gateway):
    gw = gateway(s3rver)
    dead = "http://127.0.0.1:%d" % proc.free_port()
    res = ctl("manifests", env={"AWS_ENDPOINT_URL_S3": gw.endpoint, "AWS_ENDPOINT_URL": dead})
    assert res.code == EXIT_OK, res
    res = ctl("manifests", "--timeout", "5", env={"AWS_ENDPOINT_URL": gw.endpoint,
                                                  "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"})
    if res.code != EXIT_OK:  # unless something listens on localhost:8080 on this machine
        assert "localhost:8080 (endpoint from default)" in res.err, res
    bad = ctl("status", env={"AWS_ENDPOINT_URL": "127.0.0.1:1"})
    assert bad.code == EXIT_USAGE
    assert "bad endpoint URL from AWS_ENDPOINT_URL" in bad.err


def test_importance_posts_losses_and_reports_refusals(s3rver, gateway, tmp_path):
    gw = gateway(s3rver)
    body = [{"bucket": s3rver.bucket, "losses": {"a": 0.5, "b": 1.5}},
            {"bucket": s3rver.bucket, "losses": {"c": 0.1}}]
    res = ctl("importance", "-", endpoint=gw.endpoint, stdin=json.dumps(body))
    assert res.code == EXIT_OK and res.out == "scored 3 samples\n", res
    res = ctl("importance", manifest_file(tmp_path, body[1]), "--json", endpoint=gw.endpoint)
    assert json.loads(res.out) == {"scored": 1}
    bad = ctl("importance", "-", endpoint=gw.endpoint,
              stdin='{"bucket": "test", "losses": {"a": "high"}}')
    assert bad.code == EXIT_ERROR
    assert 'InvalidField: the loss of "a" must be a finite number' in bad.err, bad


# ---- progress on a terminal and in a log, waiting and stopping ---------------------------


def slow_gateway(gateway, up):
    """A gateway whose upstream sends 24 KiB/s per connection, two prefetches at a time."""
    gw = gateway(up, rate=24 * KiB, extra_args=["--prefetch-concurrency", "2"])
    gw.require_real()
    return gw


def test_plain_output_is_one_line_per_change_at_most_every_2s(s3rver, gateway):
    gw = slow_gateway(gateway, s3rver)
    prefix = s3util.unique_key("ctl-plain")
    seed_objects(s3rver, prefix, 12, 16 * KiB)  # 192 KiB at 48 KiB/s: about 4 s
    start = time.monotonic()
    res = ctl("warm", "--prefix", "s3://%s/%s/" % (s3rver.bucket, prefix), endpoint=gw.endpoint)
    took = time.monotonic() - start
    assert res.code == EXIT_OK, res
    assert_plain(res.out)
    progress = [line for line in res.lines()[1:-1] if " warming " in line]
    assert 2 <= len(progress) <= took / 2 + 2, res
    for line in progress:
        assert re.match(r"m\d+ warming +\d+%  \d+/12 objects  [\d.]+ \w*B(/[\d.]+ \w*B)?"
                        r"(  [\d.]+ \w*B/s)?  ETA \S+  0 failed$", line), line
    assert len(set(progress)) == len(progress)  # a line only for a change
    assert res.lines()[-1].startswith(registered_id(res) + " warm: 12/12 objects cached")


def test_terminal_output_updates_one_line_with_a_bar(s3rver, gateway):
    gw = slow_gateway(gateway, s3rver)
    prefix = s3util.unique_key("ctl-tty")
    seed_objects(s3rver, prefix, 8, 16 * KiB)
    res = ctl_tty("warm", "--prefix", "s3://%s/%s/" % (s3rver.bucket, prefix),
                  endpoint=gw.endpoint, columns=100)
    assert res.code == EXIT_OK, res
    screen = res.out.split("\r\n")  # the terminal turns each \n into \r\n
    assert re.match(r"m\d+ registered: listing ", screen[0]), res
    updates = [u for u in screen[1].split("\r") if u.strip()]
    assert any(re.match(r"m\d+ warming \[[= >]+\] +\d+%  \d+/8 objects", u) for u in updates), res
    assert all(len(u.rstrip()) <= 99 for u in updates)
    assert re.match(r"m\d+ warm: 8/8 objects cached \(128\.0 KiB\) in \d+s$",
                    updates[-1].rstrip()), res


def test_wait_timeout_exits_7_and_the_manifest_keeps_warming(s3rver, gateway):
    gw = slow_gateway(gateway, s3rver)
    prefix = s3util.unique_key("ctl-timeout")
    seed_objects(s3rver, prefix, 12, 16 * KiB)
    res = ctl("warm", "--prefix", "s3://%s/%s/" % (s3rver.bucket, prefix), "--wait-timeout",
              "1", endpoint=gw.endpoint)
    assert res.code == EXIT_TIMEOUT, res
    mid = registered_id(res)
    assert re.search(r"not warm after \d s \(--wait-timeout\); manifest %s keeps warming in the "
                     r"gateway \('s3cachectl cancel %s' stops it\)" % (mid, mid), res.err), res
    assert re.match(r"%s (listing|warming): \d+/(12|\?) objects cached" % mid, res.lines()[-1])
    follow = ctl("show", mid, "--wait", "--quiet", endpoint=gw.endpoint)
    assert follow.code == EXIT_OK, follow
    assert follow.lines() == [follow.lines()[-1]]
    assert follow.out.startswith("%s warm: 12/12 objects cached" % mid)


def test_ctrl_c_stops_watching_with_130_and_says_how_to_cancel(s3rver, gateway):
    gw = slow_gateway(gateway, s3rver)
    prefix = s3util.unique_key("ctl-sigint")
    seed_objects(s3rver, prefix, 12, 16 * KiB)
    p = subprocess.Popen([binary(), "--endpoint-url", gw.endpoint, "warm", "--prefix",
                          "s3://%s/%s/" % (s3rver.bucket, prefix)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=tool_env())
    first = p.stdout.readline().decode()
    mid = first.split()[0]
    time.sleep(0.7)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == EXIT_INTERRUPTED, (out, err)
    assert ("stopped watching; manifest %s keeps warming in the gateway ('s3cachectl cancel %s' "
            "stops it)" % (mid, mid)) in err.decode()
    cancel = ctl("cancel", mid, endpoint=gw.endpoint)
    assert cancel.code == EXIT_OK and cancel.out.startswith(mid + " canceled: "), cancel


def test_manifest_canceled_while_watching_exits_5(s3rver, gateway):
    gw = slow_gateway(gateway, s3rver)
    prefix = s3util.unique_key("ctl-cancel")
    seed_objects(s3rver, prefix, 12, 16 * KiB)
    p = subprocess.Popen([binary(), "--endpoint-url", gw.endpoint, "warm", "--prefix",
                          "s3://%s/%s/" % (s3rver.bucket, prefix)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=tool_env())
    mid = p.stdout.readline().decode().split()[0]
    assert ctl("cancel", mid, endpoint=gw.endpoint).code == EXIT_OK
    out, err = p.communicate(timeout=20)
    assert p.returncode == EXIT_CANCELED, (out, err)
    assert out.decode().splitlines()[-1] == "%s canceled: the manifest is gone from the gateway" % mid


# ---- the command line itself ------------------------------------------------------------


def test_help_and_version_and_usage_errors():
    res = ctl("--help")
    assert res.code == EXIT_OK
    for cmd in ("warm", "status", "manifests", "show", "cancel", "order", "importance"):
        assert re.search(r"^  %s " % cmd, res.out, re.M), cmd
        sub = ctl(cmd, "--help")
        assert sub.code == EXIT_OK and sub.out.startswith("Usage: s3cachectl %s" % cmd), sub
        assert ctl("help", cmd).out == sub.out
        assert all(len(line) <= 80 for line in sub.out.splitlines()), sub
    assert "AWS_ENDPOINT_URL_S3" in res.out and "Exit status" in res.out
    assert all(len(line) <= 80 for line in res.out.splitlines())
    assert re.fullmatch(r"s3cachectl \d+\.\d+\.\d+\n", ctl("--version").out)
    none = ctl()
    assert none.code == EXIT_USAGE and "Usage:" in none.err
    bad = ctl("status", "--bogus")
    assert bad.code == EXIT_USAGE
    assert bad.err == "s3cachectl: unknown option '--bogus'\nTry 's3cachectl status --help'.\n"


# ---- a fake admin API: the token, odd replies ---------------------------------------------


class FakeAdmin(http.server.BaseHTTPRequestHandler):
    """Answers from the class's routes: path -> (status, content type, body)."""

    routes = {}
    seen = []

    def do_GET(self):
        self.seen.append((self.command, self.path, self.headers.get("Authorization")))
        status, ctype, body = self.routes.get(self.path, (404, "text/plain", b"nothing here"))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_DELETE = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_admin():
    FakeAdmin.routes = {}
    FakeAdmin.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAdmin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_admin_token_is_sent_as_bearer_and_never_printed(fake_admin):
    secret = "s3cr3t-t0ken"
    FakeAdmin.routes["/_s3cached/stats"] = (
        401, "application/json", b'{"error": "Unauthorized", "message": "a valid token is needed"}')
    for args, env in [(["--admin-token", secret], None), ([], {"S3CACHED_ADMIN_TOKEN": secret})]:
        res = ctl(*(args + ["status", "--debug"]), endpoint=fake_admin, env=env)
        assert res.code == EXIT_ERROR, res
        assert "HTTP 401: Unauthorized: a valid token is needed" in res.err
        assert "hint: give the admin token" in res.err
        assert secret not in res.out and secret not in res.err
        assert "> GET %s/_s3cached/stats" % fake_admin in res.err  # --debug shows the request
    assert [s[2] for s in FakeAdmin.seen] == ["Bearer " + secret] * 2
    ctl("status", endpoint=fake_admin)
    assert FakeAdmin.seen[-1][2] is None
    evil = ctl("status", endpoint=fake_admin, env={"S3CACHED_ADMIN_TOKEN": "a\r\nX-Evil: 1"})
    assert evil.code == EXIT_USAGE and "control character" in evil.err


def test_plain_s3_server_at_the_endpoint_gets_a_hint(fake_admin):
    FakeAdmin.routes["/_s3cached/manifests"] = (
        404, "application/xml",
        b"<?xml version='1.0'?><Error><Code>NoSuchBucket</Code><Message>The specified bucket "
        b"does not exist</Message></Error>")
    res = ctl("manifests", endpoint=fake_admin)
    assert res.code == EXIT_ERROR, res
    assert "HTTP 404: NoSuchBucket: The specified bucket does not exist" in res.err
    assert "answered like a plain S3 server, not an s3cached gateway" in res.err


@pytest.mark.parametrize("body", [
    b"", b"not json", b"[1, 2]", b'{"manifests": 5}', b'{"manifests": [5, null, {"id": 7}]}',
    b'{"manifests": [{"id": "m1", "state": "\\u001b[2Jwarm", "objects_total": "x",'
    b' "name": "a\\nb", "bucket": 3, "percent": 1e400}]}',
])
def test_odd_replies_never_crash_the_tool(fake_admin, body):
    for path in ("/_s3cached/manifests", "/_s3cached/stats", "/_s3cached/manifests/m1",
                 "/_s3cached/manifests/m1/order?epoch=0"):
        FakeAdmin.routes[path] = (200, "application/json", body)
    for args in (["manifests"], ["status"], ["show", "m1"], ["show", "m1", "--wait",
                                                             "--wait-timeout", "1"],
                 ["order", "m1"], ["cancel", "m1"]):
        res = ctl(*args, endpoint=fake_admin, timeout=30)
        assert res.code in (EXIT_OK, EXIT_ERROR, EXIT_TIMEOUT), (args, res)
        assert_plain(res.out)
        assert "Sanitizer" not in res.err and "runtime error" not in res.err, res
