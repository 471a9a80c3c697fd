"""The container image, built from docker/Dockerfile and run on a real Docker engine as a sidecar
in front of a real upstream (s3rver on the host's loopback).

The container shares the host's network namespace (--network host), as a sidecar shares its
pod's, and listens on 127.0.0.1 on a port other than 8080: all traffic stays on loopback, and the
image's HEALTHCHECK has to follow the configured port. It runs as the image's user (10001:10001,
the ids of the Kubernetes manifests), with a read-only root file system, no capabilities and no
new privileges, its cache on a volume.

What is proven:
- MISS then HIT, byte-exact, through the AWS CLI and boto3; Docker reports the container healthy.
- The cache outlives `docker restart`.
- `docker stop` during a large transfer lets the transfer finish and the gateway exit 0; a
  client that stops reading is cut off by the gateway's own drain timeout, before Docker's 10 s
  stop timeout would SIGKILL it (exit 137).
- A cache volume the image's user cannot write stops the gateway with a message naming the
  directory, the uid and the fix (also checked without Docker, with setpriv).
- The compose demo (docker/compose.yaml) runs with images built here.

The engine is started by tools/dockerd.sh (Debian's dockerd, in the background, if none answers)
and the base images made by it with mmdebstrap when missing. Under CI=true an engine that cannot
start fails these tests; elsewhere they are skipped with the reason.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from harness import gateway as gwmod
from harness import proc
from harness import s3util

REPO = gwmod.REPO
DOCKER = "/usr/bin/docker"  # Debian's docker.io client, not whatever else is on PATH
IMAGE = "s3cached:it"
UID = 10001
DOCKER_STOP_TIMEOUT = 10  # docker stop's default before SIGKILL
K8S_GRACE = 30  # Kubernetes' default terminationGracePeriodSeconds


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, **kw)


def docker(*args, timeout=120, check=True):
    r = run([DOCKER] + list(args), timeout=timeout)
    if check:
        assert r.returncode == 0, "docker %s failed:\n%s" % (" ".join(args), r.stdout)
    return r


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("S3CACHED_", "AWS_")) and "proxy" not in k.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


# ---------------------------------------------------------------------------------------------
# The engine and the image

@pytest.fixture(scope="session")
def engine():
    """A Docker engine that answers, with the base images; started by tools/dockerd.sh."""
    dockerd = os.path.join(REPO, "tools", "dockerd.sh")
    r = run([dockerd, "--engine"], timeout=120)
    if r.returncode != 0:
        msg = "no Docker engine could be started (tools/dockerd.sh):\n" + r.stdout
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    r = run([dockerd], timeout=900)  # the engine is up: the base images must be made
    assert r.returncode == 0, "tools/dockerd.sh could not make the base images:\n" + r.stdout
    return DOCKER


@pytest.fixture(scope="session")
def image(engine):
    """docker/Dockerfile built once per session (the layer cache makes rebuilds quick)."""
    r = run([DOCKER, "build", "-f", "docker/Dockerfile", "-t", IMAGE, "."], timeout=1800,
            cwd=REPO)
    assert r.returncode == 0, "docker build failed:\n" + r.stdout[-6000:]
    return IMAGE


class Container:
    """One detached container the test started; removed (with its volumes) at teardown."""

    def __init__(self, name):
        self.name = name

    def inspect(self, fmt):
        return docker("inspect", "-f", fmt, self.name).stdout.strip()

    def logs(self):
        return docker("logs", self.name, check=False).stdout

    def health(self):
        return self.inspect("{{.State.Health.Status}}")

    def wait_healthy(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.inspect("{{.State.Status}} {{.State.Health.Status}}")
            if state == "running healthy":
                return
            assert not state.startswith("exited"), "container exited:\n" + self.logs()
            if state.endswith(" unhealthy"):
                break
            time.sleep(0.2)
        raise AssertionError("not healthy within %d s (%s); health log %s\n%s" % (
            timeout, state, self.inspect("{{json .State.Health}}"), self.logs()))

    def wait_exited(self, timeout=60):
        code = docker("wait", self.name, timeout=timeout).stdout.strip()
        return int(code)


@pytest.fixture
def containers(engine):
    made = []

    def start(*args, image=IMAGE, cmd=()):
        name = "s3cached-it-" + uuid.uuid4().hex[:10]
        made.append(name)
        docker("run", "-d", "--name", name, *args, image, *cmd)
        return Container(name)

    yield start
    for name in made:
        docker("rm", "-f", "-v", name, check=False)


@pytest.fixture
def volume(engine):
    """A named volume, as `-v NAME:/cache` in docs/deploy.md; removed at teardown."""
    name = "s3cached-it-" + uuid.uuid4().hex[:10]
    docker("volume", "create", name)
    yield name
    docker("volume", "rm", "-f", name, check=False)


def sidecar_args(up, port, volume, *extra):
    """docker run arguments of the sidecar: host network, loopback listener, locked down."""
    return ["--network", "host", "--read-only", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges:true",
            "--health-interval", "1s", "--health-start-period", "30s",
            "-v", "%s:/cache" % volume,
            "-e", "S3CACHED_LISTEN=127.0.0.1:%d" % port,
            "-e", "S3CACHED_UPSTREAM=" + up.endpoint, "-e", "S3CACHED_REGION=us-east-1",
            "-e", "S3CACHED_CACHE_SIZE=1G",
            "-e", "AWS_ACCESS_KEY_ID=" + up.access_key,
            "-e", "AWS_SECRET_ACCESS_KEY=" + up.secret_key] + list(extra)


def stats(endpoint):
    """The admin API answers loopback clients without a token."""
    import urllib.request
    with urllib.request.urlopen(endpoint + "/_s3cached/stats", timeout=10) as r:
        return json.load(r)


# ---------------------------------------------------------------------------------------------
# A cache directory the gateway cannot write

def run_as_image_user(env, cwd):
    """The gateway (the test build) as uid and gid 10001, like the image's user; its output."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        raise RuntimeError("needs root and setpriv (util-linux) to drop to uid %d" % UID)
    argv = ["setpriv", "--reuid", str(UID), "--regid", str(UID), "--clear-groups",
            gwmod.binary()]
    r = run(argv, timeout=30, env=env, cwd=cwd)
    assert r.returncode != 0, "the gateway started:\n" + r.stdout
    return r.stdout


@pytest.fixture
def root_owned_dir():
    """A directory owned by root (0755) that uid 10001 can enter but not write."""
    work = tempfile.mkdtemp(prefix="s3cached-it-unwritable-")
    os.chmod(work, 0o755)
    yield work
    shutil.rmtree(work, ignore_errors=True)


def gateway_env(cache, **extra):
    env = clean_env()
    env.update({"S3CACHED_LISTEN": "127.0.0.1:%d" % proc.free_port(), "S3CACHED_CACHE_DIR": cache,
                "S3CACHED_UPSTREAM": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                "AWS_SECRET_ACCESS_KEY": "not-a-secret", "HOME": cache})
    env.update(extra)
    return env


@pytest.mark.parametrize("layout", ["dir", "subdir", "files"])
def test_unwritable_cache_dir_is_named_with_the_uid_and_the_fix(root_owned_dir, layout):
    """Without Docker: the gateway as uid 10001 (setpriv) on a cache it may not write: the
    directory is root's, or the directory to create is under root's, or the directory is its
    own but the LMDB files in it were left by a gateway that ran as root."""
    cache = os.path.join(root_owned_dir, "cache")
    os.mkdir(cache, 0o755)
    target, blocked = cache, cache
    if layout == "subdir":
        target = os.path.join(cache, "sub")
    if layout == "files":
        os.chown(cache, UID, UID)
        with open(os.path.join(cache, "data.mdb"), "wb") as f:
            f.write(b"")
        os.chmod(os.path.join(cache, "data.mdb"), 0o644)
    log = run_as_image_user(gateway_env(target), root_owned_dir)
    assert_clear_unwritable_message(log, blocked)


def assert_clear_unwritable_message(log, cache):
    assert "storage I/O error" not in log, log
    assert "cannot write" in log and cache in log, log
    assert "uid %d gid %d" % (UID, UID) in log, log
    assert "chown -R %d:%d %s" % (UID, UID, cache) in log, log


def test_unreadable_credentials_file_is_named_with_the_uid_and_the_fix(root_owned_dir):
    """HOME left at root's (setpriv, su without -) so ~/.aws/credentials cannot be read."""
    home = os.path.join(root_owned_dir, "home")
    os.mkdir(home, 0o700)
    cache = os.path.join(root_owned_dir, "cache")
    os.mkdir(cache, 0o700)
    os.chown(cache, UID, UID)
    env = gateway_env(cache, HOME=home)
    del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    log = run_as_image_user(env, root_owned_dir)
    assert "storage I/O error" not in log, log
    assert "AWS shared credentials file" in log and "uid %d" % UID in log, log
    assert "AWS_ACCESS_KEY_ID" in log, log


def test_unwritable_cache_volume_stops_the_container_with_a_clear_message(image, containers):
    """A bind mount owned by root, as a fresh hostPath or a forgotten chown leaves it."""
    work = tempfile.mkdtemp(prefix="s3cached-it-unwritable-")
    try:
        os.chmod(work, 0o755)  # root's: the image's user may enter but not write
        c = containers("-v", "%s:/cache" % work, "-e", "S3CACHED_UPSTREAM=http://127.0.0.1:9",
                       "--network", "none", "--read-only")
        code = c.wait_exited(timeout=60)
        log = c.logs()
        assert code != 0, log
        assert_clear_unwritable_message(log, "/cache")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The sidecar

def aws_cli(endpoint, up, *args):
    env = clean_env()
    env.update({"AWS_ACCESS_KEY_ID": up.access_key, "AWS_SECRET_ACCESS_KEY": up.secret_key,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null",
                "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"})
    r = run(["/usr/bin/aws", "--endpoint-url", endpoint] + list(args), env=env, timeout=120)
    assert r.returncode == 0, r.stdout
    return r.stdout


def test_sidecar_serves_miss_then_hit_and_keeps_its_cache_across_restart(
        image, containers, volume, s3rver, tmp_path):
    port = proc.free_port()
    endpoint = "http://127.0.0.1:%d" % port
    c = containers(*sidecar_args(s3rver, port, volume))
    # healthy: the image's HEALTHCHECK found the gateway on the port configured above, not 8080
    c.wait_healthy()

    # The image's user, as the Kubernetes manifests run it; nothing writable but the cache.
    assert c.inspect("{{.Config.User}}") == "%d:%d" % (UID, UID)
    pid = int(c.inspect("{{.State.Pid}}"))
    with open("/proc/%d/status" % pid) as f:
        status = f.read()
    assert "\nUid:\t%d\t%d\t%d\t%d\n" % ((UID,) * 4) in status, status
    assert "\nGid:\t%d\t%d\t%d\t%d\n" % ((UID,) * 4) in status, status
    assert "\nCapEff:\t0000000000000000\n" in status and "\nNoNewPrivs:\t1\n" in status
    assert c.inspect("{{.HostConfig.ReadonlyRootfs}}") == "true"
    r = docker("exec", c.name, "sh", "-c", "touch /tmp/x", check=False)  # /tmp: mode 1777
    assert r.returncode != 0 and "Read-only file system" in r.stdout, r.stdout

    up = s3util.upstream_client(s3rver)
    objects = {}
    for name, size in (("boto3", 3 * 1024 * 1024 + 17), ("cli", 5 * 1024 * 1024 + 3)):
        key = s3util.unique_key("sidecar-" + name)
        objects[name] = (key, s3util.data(size, seed=key))
        up.put_object(Bucket=s3rver.bucket, Key=key, Body=objects[name][1])

    # boto3: MISS, then HIT, byte-exact.
    client = s3util.client(endpoint, s3rver.access_key, s3rver.secret_key)
    key, body = objects["boto3"]
    seen = []
    for _ in range(2):
        resp = client.get_object(Bucket=s3rver.bucket, Key=key)
        assert resp["Body"].read() == body
        seen.append(s3util.x_cache(resp))
    assert seen == ["MISS", "HIT"], seen

    # The AWS CLI (it shows no headers: the gateway's counters tell MISS from HIT).
    key, body = objects["cli"]
    for want in ("misses", "hits"):
        before = stats(endpoint)
        out = tmp_path / ("cli-" + want)
        aws_cli(endpoint, s3rver, "s3api", "get-object", "--bucket", s3rver.bucket, "--key", key,
                str(out))
        assert out.read_bytes() == body
        after = stats(endpoint)
        assert after[want] == before[want] + 1, (want, before, after)

    # docker restart: same volume, and both objects are hits without asking the upstream.
    docker("restart", c.name, timeout=60)
    c.wait_healthy()
    for name in ("boto3", "cli"):
        key, body = objects[name]
        resp = client.get_object(Bucket=s3rver.bucket, Key=key)
        assert resp["Body"].read() == body
        assert s3util.x_cache(resp) == "HIT", name
    out = tmp_path / "cli-after-restart"
    before = stats(endpoint)
    aws_cli(endpoint, s3rver, "s3api", "get-object", "--bucket", s3rver.bucket, "--key",
            objects["cli"][0], str(out))
    assert out.read_bytes() == objects["cli"][1]
    assert stats(endpoint)["hits"] == before["hits"] + 1
    assert stats(endpoint)["misses"] == 0, "after the restart nothing was fetched again"


def test_healthcheck_follows_a_listen_argument(image, containers, volume, s3rver):
    """--listen on the command line wins over the image's S3CACHED_LISTEN: so does the check."""
    port = proc.free_port()
    args = sidecar_args(s3rver, port, volume)
    i = args.index("S3CACHED_LISTEN=127.0.0.1:%d" % port)
    del args[i - 1:i + 1]  # the image's ENV (0.0.0.0:8080) stays, the argument overrides it
    c = containers(*args, image=IMAGE, cmd=["--listen", "127.0.0.1:%d" % port])
    c.wait_healthy()
    assert proc.http_status("http://127.0.0.1:%d/healthz" % port) == 200


# ---------------------------------------------------------------------------------------------
# docker stop

def start_raw_get(endpoint, bucket, key):
    """Sends an unsigned GET (the gateway does not check client signatures by default) and
    returns (socket, the response head, the body bytes read with it)."""
    port = int(endpoint.rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.sendall(("GET /%s/%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (
        bucket, s3util.quote_key(key), port)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, "closed before the response head: %r" % buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    return s, head.decode("latin-1"), body


def put_large(up, key, size):
    body = s3util.data(size, seed=key)
    s3util.upstream_client(up).put_object(Bucket=up.bucket, Key=key, Body=body)
    return body


def docker_stop_in_background(c):
    """Runs `docker stop` (Docker's default 10 s timeout) in a thread; returns it started."""
    result = {}

    def stop():
        result["r"] = docker("stop", c.name, timeout=60, check=False)

    t = threading.Thread(target=stop)
    t.start()
    return t, result


def test_docker_stop_lets_a_large_transfer_finish_then_exits_0(
        image, containers, volume, s3rver):
    port = proc.free_port()
    endpoint = "http://127.0.0.1:%d" % port
    c = containers(*sidecar_args(s3rver, port, volume))
    c.wait_healthy()
    key = s3util.unique_key("drain")
    body = put_large(s3rver, key, 48 * 1024 * 1024)
    client = s3util.client(endpoint, s3rver.access_key, s3rver.secret_key)
    assert client.get_object(Bucket=s3rver.bucket, Key=key)["Body"].read() == body  # cached

    s, head, got = start_raw_get(endpoint, s3rver.bucket, key)
    assert head.startswith("HTTP/1.1 200") and "content-length: %d" % len(body) in head.lower()
    stopper, result = docker_stop_in_background(c)
    # The drain has begun: /readyz answers 503 while the transfer goes on.
    proc.wait_until("draining", lambda: proc.http_status(endpoint + "/readyz") == 503, 30)
    # A reader that takes a few seconds (well inside the drain) gets every byte.
    got = bytearray(got)
    with s:
        paced = len(got)
        while len(got) < len(body):
            chunk = s.recv(1024 * 1024)
            if not chunk:
                break
            got += chunk
            if len(got) - paced >= 1024 * 1024:  # about 2.5 s for the whole body
                paced = len(got)
                time.sleep(0.05)
    assert len(got) == len(body) and got == body, "the client was cut at %d of %d bytes" % (
        len(got), len(body))
    stopper.join(60)
    assert result["r"].returncode == 0, result["r"].stdout
    log = c.logs()
    assert c.inspect("{{.State.ExitCode}}") == "0", "exit %s (137: SIGKILLed)\n%s" % (
        c.inspect("{{.State.ExitCode}}"), log)
    assert "draining 1 requests in flight" in log, log
    assert "still in flight are cut off" not in log, log


def test_docker_stop_with_a_stalled_client_exits_0_before_docker_kills_it(
        image, containers, volume, s3rver):
    """A client that stops reading holds its request open: the gateway's drain must give up on
    it and exit 0 by itself before Docker's stop timeout (10 s) ends in SIGKILL, exit 137."""
    port = proc.free_port()
    endpoint = "http://127.0.0.1:%d" % port
    c = containers(*sidecar_args(s3rver, port, volume))
    c.wait_healthy()
    key = s3util.unique_key("stalled")
    put_large(s3rver, key, 48 * 1024 * 1024)
    s, head, _ = start_raw_get(endpoint, s3rver.bucket, key)
    try:
        assert head.startswith("HTTP/1.1 200"), head
        stopper, result = docker_stop_in_background(c)
        stopper.join(60)
    finally:
        s.close()
    log = c.logs()
    code = c.inspect("{{.State.ExitCode}}")
    assert result["r"].returncode == 0, result["r"].stdout
    assert code == "0", "exit %s (137: SIGKILLed after docker stop's %d s)\n%s" % (
        code, DOCKER_STOP_TIMEOUT, log)
    assert "1 requests still in flight are cut off" in log, log


# ---------------------------------------------------------------------------------------------
# docker/compose.yaml

def test_compose_demo_runs_with_images_built_here(engine, tmp_path):
    """docker-compose up on the demo as it ships: s3rver, the gateway and the trainer are all
    built here; the trainer exits 0 only if every read after its first epoch was a hit."""
    compose = shutil.which("docker-compose")
    assert compose, "docker-compose missing: run tools/install-deps.sh"
    assert os.path.isfile(os.path.join(REPO, "node_modules", "s3rver", "bin", "s3rver.js")), \
        "node_modules missing: run tools/install-deps.sh"
    project = "s3cachedit" + uuid.uuid4().hex[:8]
    token = tmp_path / "admin-token"
    token.write_text("compose-demo-admin-token-0123456789\n")
    # Only the secret's file and the published port change (docker/secrets is the user's).
    override = tmp_path / "override.yaml"
    override.write_text("services:\n  s3cached: {}\n"
                        "secrets:\n  s3cached_admin_token:\n    file: %s\n" % token)
    port = proc.free_port()
    env = clean_env()
    env.update({"S3CACHED_PORT": str(port), "DOCKER_HOST": "unix:///var/run/docker.sock",
                "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    base = [compose, "-p", project, "-f", os.path.join(REPO, "docker", "compose.yaml"),
            "-f", str(override)]
    try:
        r = run(base + ["up", "-d", "--build"], timeout=1500, env=env)
        assert r.returncode == 0, "docker-compose up failed:\n%s\n--- logs:\n%s" % (
            r.stdout[-3000:], run(base + ["logs", "--no-color"], env=env).stdout[-6000:])
        trainer = run(base + ["ps", "-q", "trainer"], env=env).stdout.strip()
        assert trainer, "no trainer container"
        code = int(docker("wait", trainer, timeout=600).stdout.strip())
        logs = run(base + ["logs", "--no-color"], env=env, timeout=60).stdout
        assert code == 0, "the trainer exited %d:\n%s" % (code, logs[-8000:])
        epochs = [ln for ln in logs.splitlines() if "epoch" in ln and "HIT=" in ln]
        assert len(epochs) == 3, logs[-8000:]
        assert "HIT=64 MISS=0" in epochs[-1], epochs
        # The gateway is published on the host's loopback, and healthy by its own check.
        gw = run(base + ["ps", "-q", "s3cached"], env=env).stdout.strip()
        assert docker("inspect", "-f", "{{.State.Health.Status}}", gw).stdout.strip() == "healthy"
        assert proc.http_status("http://127.0.0.1:%d/readyz" % port) == 200
    finally:
        run(base + ["down", "-v", "--timeout", "15"], env=env, timeout=120)
