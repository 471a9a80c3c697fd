"""The deployment artifacts (docker/, deploy/kubernetes/, deploy/systemd/), checked as far as a
machine without a Docker engine or a Kubernetes cluster allows.

- docker/Dockerfile: its build stage builds from exactly the directories it copies, its runtime
  stage installs the packages of every library the binary links, and its ENV, USER, VOLUME and
  HEALTHCHECK agree with the gateway's options and probes.
- docker/compose.yaml: docker-compose's own schema check, then the demo itself run as processes
  on loopback (s3rver, as in the file): the gateway configured by the environment alone
  (the image's ENV plus the compose service's), the seed and trainer commands of the file, and the
  healthchecks run against it.
- deploy/kubernetes/*.yaml: every object against the Kubernetes OpenAPI schemas (the npm package
  kubernetes-models), no field the API does not know, probes on real endpoints and ports, the
  wiring between the objects (the fleet's too: headless Service, --self, secret, peer-port
  NetworkPolicy); the gateway run as it would be there (non-root, no capabilities,
  read-only root, only the cache writable).
- deploy/kubernetes/grafana-dashboard.json: every query names only metrics and labels a running
  gateway exports, and Prometheus scraping a gateway answers each of them.
- deploy/systemd: systemd-analyze verify and security, and the env file starting the gateway.

Each checker is also fed a broken copy, to show it can fail.
"""
import copy
import glob
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from harness import gateway as gwmod
from harness import proc
from harness import s3rver as s3rvermod
from harness import s3util

REPO = gwmod.REPO
DOCKER = os.path.join(REPO, "docker")
K8S = os.path.join(REPO, "deploy", "kubernetes")
SYSTEMD = os.path.join(REPO, "deploy", "systemd")
TRAINER = os.path.join(DOCKER, "example-trainer", "train.py")
OPT_BIN = os.path.join(REPO, "build", "s3cached")  # the binary the image ships
PROBE_PATHS = {"/healthz", "/readyz"}
ADMIN_TOKEN = "deploy-test-admin-token-0123456789"


# ---------------------------------------------------------------------------------------------
# helpers

def need(path, what):
    if not os.path.exists(path):
        raise RuntimeError("%s missing (%s): run tools/install-deps.sh and make all asan" % (
            path, what))


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, **kw)


def gateway_options():
    """(flags, env names) the gateway accepts, from its own --help."""
    need(OPT_BIN, "make all")
    text = run([OPT_BIN, "--help"]).stdout
    flags = set(re.findall(r"^  --([a-z-]+)", text, re.M))
    envs = set(re.findall(r"env: (S3CACHED_[A-Z_]+)", text))
    assert "admin-token-file" in flags and "S3CACHED_ADMIN_TOKEN_FILE" in envs, text
    return flags, envs


def dockerfile():
    """The Dockerfile as stages: [{"from", "name", "instr": [(KEYWORD, args)]}]."""
    with open(os.path.join(DOCKER, "Dockerfile")) as f:
        text = re.sub(r"\\\n", " ", f.read())
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kw, _, args = line.partition(" ")
        kw = kw.upper()
        if kw == "FROM":
            parts = args.split()
            stages.append({"from": parts[0], "name": parts[2] if len(parts) > 2 else None,
                           "instr": []})
        else:
            stages[-1]["instr"].append((kw, args.strip()))
    return stages


def image_env(stage):
    env = {}
    for kw, args in stage["instr"]:
        if kw == "ENV":
            for tok in shlex.split(args):
                k, _, v = tok.partition("=")
                env[k] = v
    return env


def apt_packages(stage):
    pkgs = []
    for kw, args in stage["instr"]:
        if kw == "RUN" and "apt-get install" in args:
            tail = args.split("apt-get install", 1)[1].split("&&")[0]
            pkgs += [t for t in tail.split() if not t.startswith("-")]
    return pkgs


def healthcheck_cmd(stage):
    """The HEALTHCHECK command as an argv (exec form) or a shell string."""
    for kw, args in stage["instr"]:
        if kw == "HEALTHCHECK":
            cmd = args.split(" CMD ", 1)[1]
            return json.loads(cmd) if cmd.startswith("[") else cmd
    return None


def image_user(stage):
    """(uid, gid) of the runtime stage's USER: numeric, and the ids its useradd and groupadd
    give the user (so /etc/passwd and Kubernetes' runAsUser/runAsGroup agree)."""
    user = [a for k, a in stage["instr"] if k == "USER"][-1]
    m = re.fullmatch(r"(\d+):(\d+)", user)
    assert m, "USER %s: numeric uid:gid, so that runAsNonRoot can check it" % user
    uid, gid = int(m.group(1)), int(m.group(2))
    run_cmds = " ".join(a for k, a in stage["instr"] if k == "RUN")
    assert re.search(r"groupadd .*--gid %d\b" % gid, run_cmds), run_cmds
    assert re.search(r"useradd .*--uid %d .*--gid %d\b" % (uid, gid), run_cmds), run_cmds
    return uid, gid


def healthcheck_script(stage):
    """The repository file the runtime stage copies to where HEALTHCHECK runs it."""
    cmd = healthcheck_cmd(stage)
    assert isinstance(cmd, list) and len(cmd) == 1, cmd
    copies = [a.split() for k, a in stage["instr"] if k == "COPY" and "--from" not in a]
    srcs = [src for src, dst in copies if dst == cmd[0]]
    assert len(srcs) == 1, "HEALTHCHECK runs %s, which no COPY puts there" % cmd[0]
    return os.path.join(REPO, srcs[0])


def listen_port(listen):
    host, _, port = listen.rpartition(":")
    return host.strip("[]"), int(port)


def http(url, headers=None, method="GET", data=None, timeout=10):
    req = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def start_env_only_gateway(env, workdir, name="s3cached", wrap=()):
    """Starts the optimized gateway with no argument at all; returns (Proc, endpoint)."""
    host, port = listen_port(env["S3CACHED_LISTEN"])
    p = proc.Proc(name, list(wrap) + [OPT_BIN], os.path.join(workdir, name + ".log"), env=env)
    endpoint = "http://127.0.0.1:%d" % port
    proc.wait_until(name, lambda: proc.http_status(endpoint + "/healthz") == 200, 20, p)
    return p, endpoint


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("S3CACHED_", "AWS_")) and "proxy" not in k.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def stop_cleanly(p):
    code = p.stop(grace=10)
    assert code == 0, "gateway exited %s after SIGTERM:\n%s" % (code, p.log_tail())


# ---------------------------------------------------------------------------------------------
# docker/Dockerfile

def test_dockerfile_build_stage_builds_from_only_what_it_copies(tmp_path):
    stages = dockerfile()
    assert len(stages) == 2, "a build stage and a runtime stage"
    build, runtime = stages
    workdir = [a for k, a in build["instr"] if k == "WORKDIR"][-1]
    copies = [a.split() for k, a in build["instr"] if k == "COPY"]
    for src, dst in copies:
        dest = os.path.normpath(os.path.join(str(tmp_path), dst if not dst.startswith("/")
                                             else os.path.relpath(dst, workdir)))
        source = os.path.join(REPO, src)
        assert os.path.exists(source), "COPY %s: no such path in the repository" % src
        if os.path.isdir(source):
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("*.o"))
        else:
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            shutil.copy(source, dest if not dst.endswith("/") else os.path.join(dest, src))
    steps = [a for k, a in build["instr"] if k == "RUN" and "apt-get" not in a]
    assert steps == ["make build/s3cached"], steps
    env = clean_env()
    env.pop("CFLAGS", None)
    r = run(["make", "-j2", "build/s3cached"], timeout=900, cwd=str(tmp_path), env=env)
    assert r.returncode == 0, "the image's build step fails from the copied dirs alone:\n" + \
        r.stdout[-4000:]
    binary = tmp_path / "build" / "s3cached"
    assert run([str(binary), "--version"]).returncode == 0

    # What the runtime stage copies from the build stage is what it made, and what ENTRYPOINT
    # runs; from the repository, it copies only the health check script.
    (src, dst), = [a.split()[1:] for k, a in runtime["instr"] if k == "COPY" and "--from" in a]
    assert src == os.path.join(workdir, "build/s3cached")
    context_copies = [a.split()[0] for k, a in runtime["instr"]
                      if k == "COPY" and "--from" not in a]
    assert context_copies == ["docker/healthcheck.sh"], context_copies
    assert os.access(os.path.join(REPO, "docker/healthcheck.sh"), os.X_OK)
    entry = [json.loads(a) for k, a in runtime["instr"] if k == "ENTRYPOINT"][-1]
    assert entry == [dst]


def test_dockerfile_packages_cover_the_build_and_the_binarys_libraries():
    build, runtime = dockerfile()
    # Build stage: the -dev package of every pkg-config module and library the Makefile uses.
    with open(os.path.join(REPO, "Makefile")) as f:
        mk = f.read()
    modules = re.search(r"^PKGS\s*:=\s*(.+)$", mk, re.M).group(1).split()
    want = set()
    for mod in modules:
        pc = run(["pkg-config", "--variable=pcfiledir", mod]).stdout.strip()
        assert pc, "pkg-config knows no %s" % mod
        want.add(dpkg_owner(os.path.join(pc, mod + ".pc")))
    want.add(dpkg_owner("/usr/include/lmdb.h"))  # -llmdb, no .pc file
    missing = want - set(apt_packages(build))
    assert not missing, "the build stage does not install %s" % sorted(missing)
    assert {"build-essential", "pkg-config"} <= set(apt_packages(build))

    # Runtime stage: every shared library of the binary comes from a listed package, one of
    # their dependencies, or the base image's required packages.
    need(OPT_BIN, "make all")
    listed = apt_packages(runtime)
    closure = set(listed)
    r = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
             "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + listed)
    assert r.returncode == 0, r.stdout
    closure |= {ln.split(":")[0] for ln in r.stdout.splitlines() if ln and not ln[0].isspace()}
    libs = re.findall(r"=> (/\S+)", run(["ldd", OPT_BIN]).stdout)
    assert len(libs) >= 5, "ldd found too few libraries"
    uncovered = []
    for lib in libs:
        pkg = dpkg_owner(lib)
        prio = run(["dpkg-query", "-W", "-f", "${Priority} ${Essential}", pkg]).stdout
        if pkg not in closure and not prio.startswith("required") and "yes" not in prio:
            uncovered.append("%s (%s)" % (lib, pkg))
    assert not uncovered, "the runtime image would miss: %s" % uncovered
    assert "ca-certificates" in listed, "TLS to the upstream needs the CA bundle"
    assert "curl" in listed, "HEALTHCHECK and the Kubernetes exec probes run curl"


def dpkg_owner(path):
    for p in (path, os.path.realpath(path)):
        r = run(["dpkg", "-S", p])
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
        # merged /usr: dpkg knows /lib/... for /usr/lib/...
        if p.startswith("/usr/lib/"):
            r = run(["dpkg", "-S", p[len("/usr"):]])
            if r.returncode == 0:
                return r.stdout.split(":")[0].strip()
    raise AssertionError("no Debian package owns %s" % path)


def test_dockerfile_env_user_volume_and_healthcheck_agree_with_the_gateway():
    _, envs = gateway_options()
    _, runtime = dockerfile()
    env = image_env(runtime)
    for name in env:
        assert name in envs, "ENV %s is not an option of the gateway" % name
    host, port = listen_port(env["S3CACHED_LISTEN"])
    assert host == "0.0.0.0", "a container's listener must leave its loopback"
    volume = [json.loads(a) if a.startswith("[") else a.split()
              for k, a in runtime["instr"] if k == "VOLUME"][-1]
    assert env["S3CACHED_CACHE_DIR"] in volume
    assert ("EXPOSE", str(port)) in runtime["instr"]
    uid, gid = image_user(runtime)
    assert uid >= 1000 and gid >= 1000, "the image runs as an unprivileged user"
    run_cmds = " ".join(a for k, a in runtime["instr"] if k == "RUN")
    assert re.search(r"chown %d:%d %s" % (uid, gid, re.escape(env["S3CACHED_CACHE_DIR"])),
                     run_cmds)
    # The health check asks a probe path on the port the gateway listens on (run against a
    # gateway by test_compose_demo_runs_with_environment_only_configuration, and in the image
    # by test_docker_sidecar.py).
    with open(healthcheck_script(runtime)) as f:
        script = f.read()
    assert "S3CACHED_LISTEN" in script and "--listen" in script, script
    assert re.search(r"/(healthz|readyz)\b", script).group(0) in PROBE_PATHS, script


# ---------------------------------------------------------------------------------------------
# docker/compose.yaml

def compose_config(path=None, extra_env=None):
    """docker-compose's own validation; returns (returncode, output)."""
    exe = shutil.which("docker-compose")
    if exe is None:
        raise RuntimeError("docker-compose missing: run tools/install-deps.sh")
    env = clean_env()
    env.update(extra_env or {})
    r = run([exe, "-f", path or os.path.join(DOCKER, "compose.yaml"), "config"], env=env,
            cwd=DOCKER)
    return r.returncode, r.stdout


def resolved_compose():
    code, out = compose_config()
    assert code == 0, "docker-compose rejects docker/compose.yaml:\n" + out
    return yaml.safe_load(out)


def test_compose_file_passes_docker_compose_and_is_wired_right(tmp_path):
    _, envs = gateway_options()
    with open(os.path.join(DOCKER, "compose.yaml")) as f:
        raw = yaml.safe_load(f)
    cfg = resolved_compose()
    services = cfg["services"]
    assert {"s3cached", "trainer"} <= set(services)
    _, runtime = dockerfile()
    image = image_env(runtime)
    _, port = listen_port(image["S3CACHED_LISTEN"])

    # Builds: the gateway from docker/Dockerfile with the repository as context.
    gw_build = raw["services"]["s3cached"]["build"]
    assert os.path.normpath(os.path.join(DOCKER, gw_build["context"])) == REPO
    assert gw_build["dockerfile"] == "docker/Dockerfile"
    for name, svc in raw["services"].items():
        if "build" in svc:
            b = svc["build"] if isinstance(svc["build"], dict) else {"context": svc["build"]}
            ctx = os.path.join(DOCKER, b["context"])
            # normpath: as docker-compose resolves it (node_modules may be a symlink here)
            assert os.path.isfile(os.path.normpath(
                os.path.join(ctx, b.get("dockerfile", "Dockerfile")))), name

    gw = services["s3cached"]
    for k in gw["environment"]:
        assert not k.startswith("S3CACHED_") or k in envs, "%s is not a gateway option" % k
    # The upstream is another service, and the gateway signs with that service's key pair.
    up = urllib.parse.urlsplit(gw["environment"]["S3CACHED_UPSTREAM"])
    assert up.hostname in services, up
    upstream = services[up.hostname]
    # The upstream is s3rver built here (docker/s3rver), whose one key pair is fixed.
    up_build = raw["services"][up.hostname]["build"]
    assert os.path.normpath(os.path.join(DOCKER, up_build["context"], up_build["dockerfile"])) \
        == os.path.join(DOCKER, "s3rver", "Dockerfile")
    assert os.path.isfile(os.path.join(DOCKER, up_build["context"], "s3rver", "bin",
                                       "s3rver.js")), "the upstream's context is node_modules"
    for name in ("s3cached", "seed"):
        svc_env = services[name]["environment"]
        assert (svc_env["AWS_ACCESS_KEY_ID"], svc_env["AWS_SECRET_ACCESS_KEY"]) == \
            (s3rvermod.ACCESS_KEY, s3rvermod.SECRET_KEY), name
    # Every image is built here from Debian (no registry): FROM debian:bookworm(-slim) only.
    for name, svc in raw["services"].items():
        assert "build" in svc, "%s pulls an image: no registry is reachable" % name
        b = svc["build"] if isinstance(svc["build"], dict) else {"context": svc["build"]}
        with open(os.path.normpath(os.path.join(DOCKER, b["context"],
                                                b.get("dockerfile", "Dockerfile")))) as f:
            froms = re.findall(r"^FROM (\S+)", f.read(), re.M)
        assert froms and set(froms) <= {"debian:bookworm", "debian:bookworm-slim", "build"}, \
            (name, froms)

    # Healthchecks, and every service_healthy dependency has one.
    for name in ("s3cached", up.hostname):
        assert services[name].get("healthcheck", {}).get("test"), "%s has no healthcheck" % name
    hc = " ".join(gw["healthcheck"]["test"][1:])
    m = re.search(r"http://127\.0\.0\.1:(\d+)(/\S*)", hc)
    assert m and int(m.group(1)) == port and m.group(2) in PROBE_PATHS, hc
    for name, svc in services.items():
        for dep, how in (svc.get("depends_on") or {}).items():
            assert dep in services, (name, dep)
            if how.get("condition") == "service_healthy":
                assert services[dep].get("healthcheck"), (name, dep)
            if how.get("condition") == "service_completed_successfully":
                assert "restart" not in services[dep], "%s is a one-shot" % dep

    # Published only on the host's loopback: whoever reaches the gateway reads the bucket.
    for name, svc in services.items():
        for p in svc.get("ports", []):
            host_ip = p.get("host_ip") if isinstance(p, dict) else \
                (p.split(":")[0] if p.count(":") >= 2 else None)
            assert host_ip == "127.0.0.1", (name, p)

    # The cache is a volume at the image's cache dir; the token a declared secret.
    def mounts(svc):
        for v in svc.get("volumes", []):
            if isinstance(v, dict):
                yield v.get("source"), v["target"]
            else:
                src, _, rest = v.partition(":")
                yield src, rest.split(":")[0]

    assert any(t == image["S3CACHED_CACHE_DIR"] for _, t in mounts(gw))
    for name, svc in services.items():
        for src, _ in mounts(svc):
            if src and not src.startswith((".", "/")):
                assert src in cfg.get("volumes", {}), (name, src)
        for s in svc.get("secrets", []):
            assert s["source"] in cfg["secrets"], (name, s)
    token_file = gw["environment"]["S3CACHED_ADMIN_TOKEN_FILE"]
    assert token_file in ["/run/secrets/" + s["source"] for s in gw["secrets"]]
    assert os.path.isdir(os.path.dirname(os.path.join(
        DOCKER, raw["secrets"]["s3cached_admin_token"]["file"]))), "docker/secrets/ is missing"

    # The trainer reads through the gateway service on the image's port.
    tr = services["trainer"]
    ep = urllib.parse.urlsplit(tr["environment"]["AWS_ENDPOINT_URL"])
    assert (ep.hostname, ep.port) == ("s3cached", port)
    assert tr["environment"]["S3CACHED_ADMIN_TOKEN_FILE"] == token_file

    # The checker can fail: a misspelled key is rejected.
    with open(os.path.join(DOCKER, "compose.yaml")) as f:
        broken = f.read().replace("    read_only: true", "    read_onyl: true", 1)
    bad = tmp_path / "compose.yaml"
    bad.write_text(broken)
    code, out = compose_config(str(bad))
    assert code != 0 and "read_onyl" in out, out


def test_compose_demo_runs_with_environment_only_configuration(s3rver, tmp_path):
    """The compose file's services as processes: s3rver, build/s3cached started with no
    argument (the image's ENV and the service's environment only), seed and trainer as the file
    runs them, and both healthchecks against the gateway."""
    _, runtime = dockerfile()
    services = resolved_compose()["services"]
    port = proc.free_port()
    token = tmp_path / "admin-token"
    token.write_text(ADMIN_TOKEN + "\n")
    cache = tmp_path / "cache"

    # Only what a deployment changes: addresses, paths, and s3rver's fixed key pair.
    env = clean_env()
    env.update(image_env(runtime))
    env.update({k: str(v) for k, v in services["s3cached"]["environment"].items()})
    token_path = env["S3CACHED_ADMIN_TOKEN_FILE"]
    env.update({"S3CACHED_LISTEN": "127.0.0.1:%d" % port, "S3CACHED_CACHE_DIR": str(cache),
                "S3CACHED_UPSTREAM": s3rver.endpoint, "S3CACHED_ADMIN_TOKEN_FILE": str(token),
                "AWS_ACCESS_KEY_ID": s3rver.access_key,
                "AWS_SECRET_ACCESS_KEY": s3rver.secret_key})
    gw, endpoint = start_env_only_gateway(env, str(tmp_path))
    try:
        # The environment took effect: size, policy, token, listener.
        status, body = http(endpoint + "/_s3cached/stats")
        assert status == 401, "the admin token from S3CACHED_ADMIN_TOKEN_FILE is not required"
        status, body = http(endpoint + "/_s3cached/stats",
                            {"Authorization": "Bearer " + ADMIN_TOKEN})
        stats = json.loads(body)
        assert status == 200
        size = services["s3cached"]["environment"]["S3CACHED_CACHE_SIZE"]
        assert stats["capacity_bytes"] == int(size[:-1]) << {"M": 20, "G": 30}[size[-1]]
        assert stats["policy"] == services["s3cached"]["environment"]["S3CACHED_POLICY"]
        assert os.path.isdir(cache), "the cache went to S3CACHED_CACHE_DIR"

        # The healthchecks of the compose file and of the image, against this gateway.
        # The image's follows S3CACHED_LISTEN by itself; the compose file's names the port.
        checks = [[a.replace(":8080", ":%d" % port)
                   for a in services["s3cached"]["healthcheck"]["test"][1:]],
                  [healthcheck_script(runtime)]]
        hc_env = clean_env()
        hc_env["S3CACHED_LISTEN"] = env["S3CACHED_LISTEN"]
        for c in checks:
            r = run(c, timeout=30, env=hc_env)
            assert r.returncode == 0, (c, r.stdout)

        def trainer_env(svc):
            e = clean_env()
            e.update({k: str(v) for k, v in services[svc]["environment"].items()})
            if "SEED_ENDPOINT_URL" in e:
                e.update({"SEED_ENDPOINT_URL": s3rver.endpoint,
                          "AWS_ACCESS_KEY_ID": s3rver.access_key,
                          "AWS_SECRET_ACCESS_KEY": s3rver.secret_key})
            if "AWS_ENDPOINT_URL" in e:
                e["AWS_ENDPOINT_URL"] = endpoint
            if e.get("S3CACHED_ADMIN_TOKEN_FILE") == token_path:
                e["S3CACHED_ADMIN_TOKEN_FILE"] = str(token)
            return e

        for svc in ("seed", "trainer"):
            r = run(["/usr/bin/python3", TRAINER] + services[svc]["command"], timeout=300,
                    env=trainer_env(svc))
            assert r.returncode == 0, "%s failed:\n%s\n--- gateway:\n%s" % (
                svc, r.stdout, gw.log_tail())
            if svc == "trainer":
                epochs = re.findall(r"epoch (\d+): (\d+) objects.*HIT=(\d+) MISS=(\d+)", r.stdout)
                assert len(epochs) == int(services[svc]["environment"]["EPOCHS"]), r.stdout
                n = int(services["seed"]["environment"]["DATASET_OBJECTS"])
                for ep, objs, hit, _ in epochs[1:]:
                    assert int(objs) == n and int(hit) == n, r.stdout
                assert "manifest: m" in r.stdout, "the trainer posted its manifest"
    finally:
        stop_cleanly(gw)
    # With the gateway gone, the healthchecks fail: they test something.
    for c in checks:
        assert run(c, timeout=30, env=hc_env).returncode != 0, c


def test_invalid_environment_value_stops_the_gateway(tmp_path):
    env = clean_env()
    env.update({"S3CACHED_LISTEN": "127.0.0.1:%d" % proc.free_port(),
                "S3CACHED_CACHE_DIR": str(tmp_path / "c"), "S3CACHED_CACHE_SIZE": "lots"})
    r = run([OPT_BIN], timeout=20, env=env)
    assert r.returncode != 0 and "S3CACHED_CACHE_SIZE" in r.stdout, r.stdout


def test_example_trainer_fails_when_reads_miss_the_cache(s3rver, tmp_path):
    """--require-hits is what makes the compose trainer a check: without a gateway (straight
    to the upstream, no X-Cache) it must fail."""
    env = clean_env()
    env.update({"SEED_ENDPOINT_URL": s3rver.endpoint, "AWS_ENDPOINT_URL": s3rver.endpoint,
                "AWS_ACCESS_KEY_ID": s3rver.access_key,
                "AWS_SECRET_ACCESS_KEY": s3rver.secret_key, "DATASET_BUCKET": "datasets",
                "DATASET_PREFIX": "nocache/", "DATASET_OBJECTS": "4", "EPOCHS": "2"})
    assert run(["/usr/bin/python3", TRAINER, "seed"], env=env).returncode == 0
    r = run(["/usr/bin/python3", TRAINER, "train", "--require-hits"], env=env)
    assert r.returncode != 0 and "not cache hits" in r.stdout, r.stdout


# ---------------------------------------------------------------------------------------------
# deploy/kubernetes

def k8s_files():
    files = sorted(glob.glob(os.path.join(K8S, "*.yaml")))
    assert {os.path.basename(f) for f in files} >= {"sidecar.yaml", "daemonset.yaml"}
    return files


def k8s_docs(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        assert isinstance(d, dict) and d.get("apiVersion") and d.get("kind"), (path, d)
        assert d.get("metadata", {}).get("name"), (path, d)
    return docs


def schema_errors(docs):
    script = os.path.join(REPO, "tests", "integration", "node", "k8s_validate.mjs")
    need(os.path.join(REPO, "node_modules", "kubernetes-models"), "npm ci")
    r = subprocess.run(["node", script], input=json.dumps(docs), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return {(e["kind"], e["name"]): e["errors"] for e in json.loads(r.stdout)}


def test_kubernetes_manifests_match_the_api_schemas():
    for path in k8s_files():
        docs = k8s_docs(path)
        errors = schema_errors(docs)
        assert len(errors) == len(docs)
        bad = {k: v for k, v in errors.items() if v}
        assert not bad, "%s: %s" % (os.path.basename(path), bad)
    # The checker can fail.
    docs = k8s_docs(os.path.join(K8S, "daemonset.yaml"))
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "8080"
    del ds["spec"]["selector"]
    errs = schema_errors([ds])[("DaemonSet", "s3cached")]
    assert any("containerPort" in e for e in errs) and any("selector" in e for e in errs), errs


class TypeModels:
    """Field names of every Kubernetes type, from kubernetes-models' TypeScript declarations
    (the OpenAPI schemas it validates with accept unknown fields; the API server does not)."""

    PROP = re.compile(r'^    "([^"]+)"\??: (.*)$')

    def __init__(self):
        self.types = {}
        roots = [os.path.join(REPO, "node_modules", "kubernetes-models"),
                 os.path.join(REPO, "node_modules", "@kubernetes-models", "apimachinery")]
        for root in roots:
            need(root, "npm ci")
            for path in glob.glob(os.path.join(root, "**", "*.d.ts"), recursive=True):
                self._parse(path)
        assert len(self.types) > 500, "too few Kubernetes types found: %d" % len(self.types)

    def _parse(self, path):
        with open(path) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        for m in re.finditer(r"export interface (I\w+)[^{]*\{\n(.*?)\n\}", text, re.S):
            props, cur = {}, None
            for line in m.group(2).splitlines():
                pm = self.PROP.match(line)
                if pm:
                    cur = pm.group(1)
                    props[cur] = pm.group(2)
                elif cur and line.strip():
                    props[cur] += " " + line.strip()
            props = {k: v.strip().rstrip(";").strip() for k, v in props.items()}
            for alias in re.findall(r"\b%s as (IIoK8s\w+)" % m.group(1), text):
                self.types[alias] = props
            if os.path.basename(path)[:-5] == m.group(1)[1:]:
                self.types.setdefault(os.path.relpath(path), props)

    def top(self, doc):
        path = os.path.join(REPO, "node_modules", "kubernetes-models", doc["apiVersion"],
                            doc["kind"] + ".d.ts")
        return self.types[os.path.relpath(path)]

    def unknown_fields(self, doc):
        out = []
        self._walk(doc, self.top(doc), doc["kind"], out)
        return out

    def _walk(self, value, props, where, out):
        if not isinstance(value, dict):
            return
        for key, v in value.items():
            if key not in props:
                out.append("%s.%s" % (where, key))
                continue
            t = props[key]
            m = re.fullmatch(r"Array<(IIoK8s\w+)>", t)
            if m and isinstance(v, list) and m.group(1) in self.types:
                for i, item in enumerate(v):
                    self._walk(item, self.types[m.group(1)], "%s.%s[%d]" % (where, key, i), out)
            elif t in self.types:
                self._walk(v, self.types[t], "%s.%s" % (where, key), out)


@pytest.fixture(scope="module")
def type_models():
    return TypeModels()


def test_kubernetes_manifests_have_no_unknown_fields(type_models):
    for path in k8s_files():
        for doc in k8s_docs(path):
            bad = type_models.unknown_fields(doc)
            assert not bad, "%s: fields the API does not know: %s" % (
                os.path.basename(path), bad)
    # The checker can fail.
    docs = k8s_docs(os.path.join(K8S, "daemonset.yaml"))
    svc = next(d for d in docs if d["kind"] == "Service")
    svc["spec"]["internalTraficPolicy"] = svc["spec"].pop("internalTrafficPolicy")
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/x"
    assert type_models.unknown_fields(svc) == ["Service.spec.internalTraficPolicy"]
    assert type_models.unknown_fields(ds) == [
        "DaemonSet.spec.template.spec.containers[0].readinessProbe.httpGet.paht"]


def pod_spec(doc):
    if doc["kind"] == "Pod":
        return doc["spec"]
    if doc["kind"] in ("Job", "DaemonSet", "Deployment", "StatefulSet"):
        return doc["spec"]["template"]["spec"]
    return None


def pod_labels(doc):
    return doc["spec"]["template"]["metadata"].get("labels", {})


def is_gateway(container):
    image = container["image"].rsplit("/", 1)[-1].split(":")[0]
    return image == "s3cached" and not container.get("command")


def container_env(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def gateway_settings(c, image_defaults):
    """(listen, admin token file, cache dir) of a gateway container: args win over env."""
    env = dict(image_defaults)
    env.update({k: v for k, v in container_env(c).items() if k.startswith("S3CACHED_")})
    args = c.get("args", [])
    opts = {}
    i = 0
    while i < len(args):
        a = args[i]
        assert a.startswith("--"), args
        if "=" in a:
            k, v = a[2:].split("=", 1)
        else:
            k, v = a[2:], args[i + 1] if i + 1 < len(args) else None
            i += 1
        opts[k] = v
        i += 1
    return (opts.get("listen", env.get("S3CACHED_LISTEN")),
            opts.get("admin-token-file", env.get("S3CACHED_ADMIN_TOKEN_FILE")),
            opts.get("cache-dir", env.get("S3CACHED_CACHE_DIR")), opts)


def mounted_volume(c, spec, path):
    """The pod volume a path inside container c lies on, or None."""
    best = None
    for m in c.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best[0]):
                best = (mp, m["name"])
    if best is None:
        return None
    return next(v for v in spec.get("volumes", []) if v["name"] == best[1])


def probe_target(probe, c, listen):
    """(path, port, via) a probe checks; asserts it can reach the listener at all."""
    host, port = listen_port(listen)
    if "httpGet" in probe:
        hg = probe["httpGet"]
        p = hg["port"]
        if isinstance(p, str):
            p = next(cp["containerPort"] for cp in c.get("ports", []) if cp.get("name") == p)
        assert host not in ("127.0.0.1", "localhost", "::1"), \
            "%s: an httpGet probe comes from the kubelet to the pod IP, which a loopback " \
            "listener does not answer" % c["name"]
        assert "host" not in hg, "httpGet host is the node's address, not the pod's"
        return hg.get("path"), p, "httpGet"
    if "exec" in probe:
        cmd = " ".join(probe["exec"]["command"])
        m = re.search(r"https?://(127\.0\.0\.1|localhost|\[::1\]):(\d+)(/\S*)", cmd)
        assert m and cmd.startswith("curl ") and "-f" in cmd, cmd
        return m.group(3), int(m.group(2)), "exec"
    raise AssertionError("%s: probe of an unknown kind: %s" % (c["name"], probe))


def secret_names_created(path):
    with open(path) as f:
        text = f.read()
    made = set(re.findall(r"create secret generic ([\w.-]+)", text))
    for d in k8s_docs(path):
        if d["kind"] == "Secret":
            made.add(d["metadata"]["name"])
    return made


def test_kubernetes_pods_probe_real_endpoints_and_run_locked_down():
    flags, envs = gateway_options()
    _, runtime = dockerfile()
    image_defaults = image_env(runtime)
    image_uid, image_gid = image_user(runtime)
    seen_gateways = 0
    for path in k8s_files():
        name = os.path.basename(path)
        secrets = secret_names_created(path)
        for doc in k8s_docs(path):
            spec = pod_spec(doc)
            if spec is None:
                continue
            pod_sc = spec.get("securityContext", {})
            assert pod_sc.get("runAsNonRoot") is True, (name, doc["metadata"]["name"])
            for v in spec.get("volumes", []):
                if "secret" in v:
                    assert v["secret"]["secretName"] in secrets, (name, v)
            containers = spec.get("initContainers", []) + spec["containers"]
            for c in containers:
                where = "%s %s/%s" % (name, doc["metadata"]["name"], c["name"])
                assert c.get("resources", {}).get("requests"), "%s: no resource requests" % where
                sc = c.get("securityContext", {})
                assert sc.get("allowPrivilegeEscalation") is False, where
                assert sc.get("readOnlyRootFilesystem") is True, where
                assert sc.get("capabilities", {}).get("drop") == ["ALL"], where
                for e in c.get("env", []):
                    if e["name"].startswith("S3CACHED_"):
                        assert e["name"] in envs, "%s: %s is not an option" % (where, e["name"])
                    assert e["name"] not in ("AWS_SECRET_ACCESS_KEY", "S3CACHED_ADMIN_TOKEN") \
                        or not is_gateway(c), "%s: a secret in plain env" % where
                for ef in c.get("envFrom", []):
                    assert ef["secretRef"]["name"] in secrets, where
                if not is_gateway(c):
                    if sc.get("runAsUser") == 0:  # the cache-owner init container
                        assert sc["capabilities"].get("add") == ["CHOWN"], where
                        assert c in spec.get("initContainers", []), where
                    continue
                seen_gateways += 1
                listen, token_file, cache_dir, opts = gateway_settings(c, image_defaults)
                for k in opts:
                    assert k in flags, "%s: --%s is not an option" % (where, k)
                host, port = listen_port(listen)
                assert sc.get("runAsUser") == image_uid and sc.get("runAsNonRoot"), where
                assert sc.get("runAsGroup", image_gid) == image_gid, where
                # The token Secret is mounted 0440: readable through the pod's fsGroup.
                assert spec.get("securityContext", {}).get("fsGroup") == image_gid, where
                # The admin token: from a file on a mounted Secret (required off loopback).
                assert token_file, "%s: no admin token" % where
                vol = mounted_volume(c, spec, token_file)
                assert vol and "secret" in vol, "%s: the token file is not on a Secret" % where
                # The cache: on the node's disk, owned by the gateway's uid.
                vol = mounted_volume(c, spec, cache_dir)
                assert vol and ("hostPath" in vol or "persistentVolumeClaim" in vol), where
                if "hostPath" in vol:
                    owners = [i for i in spec.get("initContainers", [])
                              if i.get("command", [])[:2] == ["chown", "%d:%d" % (
                                  image_uid, image_gid)]]
                    assert owners and mounted_volume(owners[0], spec, owners[0]["command"][2]) \
                        == vol, "%s: nothing hands the hostPath to uid %d" % (where, image_uid)
                    if c in spec["initContainers"]:  # it must run before the gateway starts
                        inits = spec["initContainers"]
                        assert inits.index(owners[0]) < inits.index(c), where
                # Probes: liveness on /healthz (an upstream outage must not restart it),
                # readiness on /readyz, on the port the gateway listens on.
                want = {"livenessProbe": "/healthz", "readinessProbe": "/readyz",
                        "startupProbe": "/healthz"}
                for kind in ("livenessProbe", "readinessProbe"):
                    assert kind in c, "%s: no %s" % (where, kind)
                for kind, path_want in want.items():
                    if kind in c:
                        ppath, pport, _ = probe_target(c[kind], c, listen)
                        assert (ppath, pport) == (path_want, port), (where, kind, ppath, pport)
                if c in spec.get("initContainers", []):
                    # A native sidecar: runs beside the trainer, lets the Job complete.
                    assert c.get("restartPolicy") == "Always", where
                    assert "startupProbe" in c, "%s: the trainer would start before it" % where
                    assert doc["kind"] == "Job"
                    assert host == "127.0.0.1", "%s: a sidecar stays on the pod's loopback" % where
                    for t in spec["containers"]:
                        ep = urllib.parse.urlsplit(container_env(t)["AWS_ENDPOINT_URL"])
                        assert (ep.hostname, ep.port) == ("127.0.0.1", port), t["name"]
                        tf = container_env(t).get("S3CACHED_ADMIN_TOKEN_FILE")
                        if tf:
                            assert mounted_volume(t, spec, tf) == mounted_volume(
                                c, spec, token_file), "%s: another token" % t["name"]
                    assert pod_sc.get("fsGroup") is not None, "the token must be readable"
                    anti = spec["affinity"]["podAntiAffinity"][
                        "requiredDuringSchedulingIgnoredDuringExecution"][0]
                    assert anti["topologyKey"] == "kubernetes.io/hostname"
                    assert anti["labelSelector"]["matchLabels"].items() <= \
                        pod_labels(doc).items(), "two gateways could share one cache dir"
    assert seen_gateways == 2, "one gateway in sidecar.yaml, one in daemonset.yaml"


def test_kubernetes_daemonset_service_and_network_policy_fit_together():
    _, runtime = dockerfile()
    docs = k8s_docs(os.path.join(K8S, "daemonset.yaml"))
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    ds = by[("DaemonSet", "s3cached")]
    svc = by[("Service", "s3cached")]
    pol = by[("NetworkPolicy", "s3cached-clients")]
    ns = ds["metadata"]["namespace"]
    assert ("Namespace", ns) in by and svc["metadata"]["namespace"] == ns
    # `kubectl apply -f daemonset.yaml` on an empty cluster: every namespace used is created
    # in the file, ahead of the objects in it.
    order = [(d["kind"], d["metadata"]["name"]) for d in docs]
    for d in docs:
        used = d["metadata"].get("namespace")
        if used is not None:
            assert ("Namespace", used) in by, "%s %s: namespace %s is not created" % (
                d["kind"], d["metadata"]["name"], used)
            assert order.index(("Namespace", used)) < order.index(
                (d["kind"], d["metadata"]["name"])), (d["kind"], used)
    c = next(c for c in ds["spec"]["template"]["spec"]["containers"] if is_gateway(c))
    listen, _, _, _ = gateway_settings(c, image_env(runtime))
    host, port = listen_port(listen)
    assert host == "0.0.0.0", "reached through a Service: the listener must leave loopback"
    labels = pod_labels(ds)
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] == 0, \
        "a surge pod would open the same cache dir"
    # The Service: node-local, to the gateway's port.
    assert svc["spec"]["internalTrafficPolicy"] == "Local"
    assert svc["spec"]["selector"].items() <= labels.items()
    (sp,) = svc["spec"]["ports"]
    target = sp["targetPort"]
    if isinstance(target, str):
        target = next(p["containerPort"] for p in c["ports"] if p["name"] == target)
    assert target == port
    ann = ds["spec"]["template"]["metadata"]["annotations"]
    assert int(ann["prometheus.io/port"]) == port and ann["prometheus.io/path"] == "/metrics"
    # The NetworkPolicy guards the gateway pods' port and admits the example trainer.
    assert pol["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert pol["spec"]["policyTypes"] == ["Ingress"]
    assert all(p["port"] == port for rule in pol["spec"]["ingress"] for p in rule["ports"])
    job = by[("Job", "train-resnet50")]
    job_ns_labels = dict(by[("Namespace", job["metadata"]["namespace"])]["metadata"].get(
        "labels", {}))
    job_ns_labels["kubernetes.io/metadata.name"] = job["metadata"]["namespace"]
    admitted = [r for r in pol["spec"]["ingress"] for f in r["from"]
                if f.get("podSelector", {}).get("matchLabels", {}).items() <=
                pod_labels(job).items() and "podSelector" in f and
                f.get("namespaceSelector", {}).get("matchLabels", {}).items() <=
                job_ns_labels.items()]
    assert admitted, "the example trainer would be refused by the NetworkPolicy"
    (t,) = job["spec"]["template"]["spec"]["containers"]
    ep = urllib.parse.urlsplit(container_env(t)["AWS_ENDPOINT_URL"])
    assert ep.hostname in ("%s.%s.svc" % (svc["metadata"]["name"], ns),
                           "%s.%s.svc.cluster.local" % (svc["metadata"]["name"], ns))
    assert ep.port == sp["port"]
    assert job["spec"]["template"]["spec"]["nodeSelector"] == \
        ds["spec"]["template"]["spec"]["nodeSelector"], \
        "a trainer on a node without a gateway gets no endpoint (internalTrafficPolicy: Local)"


def fleet_wiring_problems(docs, image_defaults, secrets):
    """What keeps the DaemonSet's gateways from forming a fleet that only they can talk to
    (docs/fleet.md): --peers-dns must name a headless Service of ready gateway pods on the peer
    port, --self the pod's own IP on that port, --fleet-listen a second listener off loopback,
    the secret a file on a Secret of its own, and only the gateway pods may reach the peer
    port. Returns a list of problems, empty when it all fits."""
    out = []
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    ds = by[("DaemonSet", "s3cached")]
    ns = ds["metadata"]["namespace"]
    labels = pod_labels(ds)
    spec = pod_spec(ds)
    c = next(c for c in spec["containers"] if is_gateway(c))
    listen, token_file, _, opts = gateway_settings(c, image_defaults)
    missing = [k for k in ("peers-dns", "self", "fleet-listen", "fleet-secret-file")
               if not opts.get(k)]
    if missing:
        return ["the gateway has no --%s" % k for k in missing]
    fhost, fport = listen_port(opts["fleet-listen"])
    if fhost in ("127.0.0.1", "localhost", "::1"):
        out.append("--fleet-listen %s: peers on other nodes reach the pod IP" % fhost)
    if fport == listen_port(listen)[1]:
        out.append("--fleet-listen is the main listener's port")
    if not any(p.get("containerPort") == fport for p in c.get("ports", [])):
        out.append("no container port %d for --fleet-listen" % fport)
    # --peers-dns NAME:PORT: a headless Service of this namespace's ready gateway pods.
    name, _, dport = opts["peers-dns"].rpartition(":")
    if int(dport) != fport:
        out.append("--peers-dns port %s is not the peer listener's %d" % (dport, fport))
    svc = next((d for d in docs if d["kind"] == "Service" and name in (
        "%s.%s.svc" % (d["metadata"]["name"], ns),
        "%s.%s.svc.cluster.local" % (d["metadata"]["name"], ns))
        and d["metadata"].get("namespace") == ns), None)
    if svc is None:
        out.append("--peers-dns %s names no Service of namespace %s" % (name, ns))
    else:
        ss = svc["spec"]
        if ss.get("clusterIP") != "None":
            out.append("the peers Service is not headless: its name is one virtual IP")
        if ss.get("publishNotReadyAddresses", False) is not False:
            out.append("the peers Service lists pods that are not ready")
        if not ss.get("selector") or not ss["selector"].items() <= labels.items():
            out.append("the peers Service does not select the gateway pods")
        targets = []
        for p in ss.get("ports", []):
            t = p.get("targetPort", p["port"])
            if isinstance(t, str):
                t = next((cp["containerPort"] for cp in c.get("ports", [])
                          if cp.get("name") == t), None)
            targets.append(t)
        if fport not in targets:
            out.append("the peers Service does not lead to port %d" % fport)
    # --self http://$(VAR):PORT, VAR the pod's IP from the downward API.
    m = re.fullmatch(r"http://\$\((\w+)\):(\d+)", opts["self"])
    if not m:
        out.append("--self %s is not http://$(POD_IP):PORT" % opts["self"])
    else:
        env = {e["name"]: e for e in c.get("env", [])}
        src = env.get(m.group(1), {}).get("valueFrom", {}).get("fieldRef", {})
        if src.get("fieldPath") != "status.podIP":
            out.append("--self: $(%s) is not the pod IP (downward API)" % m.group(1))
        if int(m.group(2)) != fport:
            out.append("--self port %s is not the peer listener's %d" % (m.group(2), fport))
    # The secret: a file on a Secret of its own, created as the file's comment says.
    vol = mounted_volume(c, spec, opts["fleet-secret-file"])
    if not vol or "secret" not in vol:
        out.append("--fleet-secret-file is not on a Secret")
    else:
        if vol["secret"]["secretName"] not in secrets:
            out.append("nothing creates the Secret %s" % vol["secret"]["secretName"])
        if vol == mounted_volume(c, spec, token_file):
            out.append("the fleet secret shares the admin token's Secret")
    # The peer port: only the DaemonSet's own pods may reach it, through any policy.
    own = ds["spec"]["selector"]["matchLabels"]
    opened = False
    for pol in docs:
        if pol["kind"] != "NetworkPolicy" or pol["metadata"].get("namespace") != ns:
            continue
        if not pol["spec"]["podSelector"].get("matchLabels", {}).items() <= labels.items():
            continue
        for rule in pol["spec"].get("ingress", []):
            ports = [p.get("port") for p in rule.get("ports", [])]
            if ports and fport not in ports:
                continue
            opened = True
            for f in rule.get("from") or [{}]:
                sel = f.get("podSelector", {}).get("matchLabels")
                if set(f) != {"podSelector"} or not sel or not own.items() <= sel.items() \
                        or not sel.items() <= labels.items():
                    out.append("%s admits port %d from %s, not only the gateway pods" % (
                        pol["metadata"]["name"], fport, f or "anywhere"))
    if not opened:
        out.append("no NetworkPolicy admits the peers to port %d" % fport)
    return out


def test_kubernetes_fleet_membership_secret_and_peer_policy_fit_together():
    _, runtime = dockerfile()
    path = os.path.join(K8S, "daemonset.yaml")
    defaults, secrets = image_env(runtime), secret_names_created(path)
    docs = k8s_docs(path)
    assert fleet_wiring_problems(docs, defaults, secrets) == []

    # The checker can fail: each broken copy is caught.
    def broken(change):
        d = copy.deepcopy(docs)
        by = {(x["kind"], x["metadata"]["name"]): x for x in d}
        change(by, next(c for c in pod_spec(by[("DaemonSet", "s3cached")])["containers"]
                        if is_gateway(c)))
        return fleet_wiring_problems(d, defaults, secrets)

    def set_arg(c, name, value):
        c["args"] = [a for a in c["args"] if not a.startswith("--%s=" % name)]
        if value is not None:
            c["args"].append("--%s=%s" % (name, value))

    cases = {
        "peers-dns port": lambda by, c: set_arg(
            c, "peers-dns", "s3cached-peers.s3cached.svc.cluster.local:8080"),
        "not headless": lambda by, c: by[("Service", "s3cached-peers")]["spec"].pop("clusterIP"),
        "not-ready pods": lambda by, c: by[("Service", "s3cached-peers")]["spec"].update(
            publishNotReadyAddresses=True),
        "self on loopback": lambda by, c: set_arg(c, "self", "http://127.0.0.1:8081"),
        "self without POD_IP": lambda by, c: c.update(
            env=[e for e in c["env"] if e["name"] != "POD_IP"]),
        "fleet listener on loopback": lambda by, c: set_arg(c, "fleet-listen", "127.0.0.1:8081"),
        "no secret": lambda by, c: set_arg(c, "fleet-secret-file", "/cache/fleet-secret"),
        "clients reach 8081": lambda by, c: by[("NetworkPolicy", "s3cached-clients")]["spec"][
            "ingress"][0]["ports"].append({"port": 8081, "protocol": "TCP"}),
        "peers from any namespace": lambda by, c: by[("NetworkPolicy", "s3cached-peers")][
            "spec"]["ingress"][0]["from"][0].update(namespaceSelector={}),
        "peers from any pod": lambda by, c: by[("NetworkPolicy", "s3cached-peers")]["spec"][
            "ingress"][0]["from"][0].update(podSelector={}),
        "no peer policy": lambda by, c: by[("NetworkPolicy", "s3cached-peers")]["spec"].update(
            ingress=[]),
        "no fleet": lambda by, c: set_arg(c, "peers-dns", None),
    }
    for what, change in cases.items():
        assert broken(change), "a broken copy passes: %s" % what


@pytest.fixture
def request_cleanup():
    dirs = []
    yield dirs
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def test_gateway_runs_as_in_the_pod_non_root_no_capabilities_read_only_root(
        s3rver, tmp_path, request_cleanup):
    """What the manifests and the systemd unit promise: uid 10001, no capabilities, no new
    privileges, every mount read-only but the cache directory. The gateway serves, fills its
    cache and hits."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("setpriv") is None:
        raise RuntimeError("needs root, unshare and setpriv (util-linux) to build the sandbox")
    _, runtime = dockerfile()
    uid = 10001
    # Every directory on the way must be searchable by uid 10001 (pytest's tmp_path is not).
    work = tempfile.mkdtemp(prefix="s3cached-it-sandbox-")
    request_cleanup.append(work)
    os.chmod(work, 0o755)
    cache = pathlib.Path(work) / "cache"
    cache.mkdir()
    os.chown(str(cache), uid, uid)
    port = proc.free_port()
    env = clean_env()
    env.update(image_env(runtime))
    env.update({"S3CACHED_LISTEN": "127.0.0.1:%d" % port, "S3CACHED_CACHE_DIR": str(cache),
                "S3CACHED_UPSTREAM": s3rver.endpoint, "AWS_ACCESS_KEY_ID": s3rver.access_key,
                "AWS_SECRET_ACCESS_KEY": s3rver.secret_key, "HOME": str(cache)})
    sandbox = (
        'mount --bind "$CACHE" "$CACHE" || exit 97\n'
        'for m in $(awk \'{print $2}\' /proc/self/mounts | sort -u); do\n'
        '  [ "$m" = "$CACHE" ] && continue\n'
        '  mount -o remount,bind,ro "$m" 2>/dev/null\n'
        'done\n'
        'touch /tmp/.s3cached-rw-check 2>/dev/null && exit 98\n'
        'exec setpriv --reuid %d --regid %d --clear-groups --no-new-privs --inh-caps=-all '
        '--bounding-set=-all "$@"\n' % (uid, uid))
    env["CACHE"] = str(cache)
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", sandbox, "sandbox"]
    gw, endpoint = start_env_only_gateway(env, str(tmp_path), "sandboxed", wrap)
    try:
        key = s3util.unique_key("sandbox")
        body = s3util.data(200000, seed=key)
        s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=body)
        client = s3util.client(endpoint, s3rver.access_key, s3rver.secret_key)
        got = []
        for _ in range(2):
            resp = client.get_object(Bucket=s3rver.bucket, Key=key)
            assert resp["Body"].read() == body
            got.append(s3util.headers_of(resp).get("x-cache"))
        assert got == ["MISS", "HIT"], got
        assert http(endpoint + "/readyz")[0] == 200
        owners = {os.stat(os.path.join(str(cache), f)).st_uid for f in os.listdir(str(cache))}
        assert owners == {uid}, owners
        # It runs with the ids and capabilities the sandbox gave it.
        with open("/proc/%d/status" % gw.pid) as f:
            status = f.read()
        assert "Uid:\t%d\t%d" % (uid, uid) in status, "still the wrapper?"
        assert re.search(r"CapEff:\t0+\n", status) and re.search(r"NoNewPrivs:\t1", status)
    finally:
        stop_cleanly(gw)


# ---------------------------------------------------------------------------------------------
# deploy/kubernetes/grafana-dashboard.json

def dashboard():
    with open(os.path.join(K8S, "grafana-dashboard.json")) as f:
        return json.load(f)


def dashboard_targets(dash):
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return out


def scrape_names(endpoint):
    """{metric name: {label: set of values}} from a live /metrics."""
    status, text = http(endpoint + "/metrics", timeout=30)
    assert status == 200
    names = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-z_][a-z0-9_]*)(\{(.*)\})? ", line)
        labels = names.setdefault(m.group(1), {})
        for k, v in re.findall(r'([a-z_]+)="([^"]*)"', m.group(3) or ""):
            labels.setdefault(k, set()).add(v)
    return names


PROMQL_WORDS = {"sum", "min", "max", "avg", "count", "rate", "irate", "increase", "by",
                "without", "histogram_quantile", "and", "or", "unless", "on", "ignoring",
                "group_left", "group_right", "bool", "offset", "topk", "bottomk", "clamp_min",
                "clamp_max", "abs", "delta", "deriv", "le"}
SCRAPE_LABELS = {"instance", "job"}  # added by Prometheus
# Labels whose values a short run does not all produce: HTTP statuses the gateway answers.
OPEN_VALUES = {"status": {"0", "200", "204", "206", "304", "400", "403", "404", "412", "416",
                          "500", "502", "503", "504"}}


def promql_problems(expr, names):
    """Metric names, label names and label values an expression uses that the gateway does not
    export, plus any other unknown identifier."""
    problems = []
    e = expr.replace("$__rate_interval", "1m").replace("$instance", ".*")
    used = []
    for m in re.finditer(r"\b([a-z_][a-z0-9_]*)\s*(\{([^}]*)\})?", e):
        name = m.group(1)
        if not name.startswith("s3cached_"):
            continue
        if name not in names:
            problems.append("no metric %s" % name)
            continue
        used.append(name)
        for lk, op, lv in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"', m.group(3) or ""):
            if lk in SCRAPE_LABELS:
                continue
            values = names[name].get(lk)
            if values is not None:
                values = values | OPEN_VALUES.get(lk, set())
            if values is None:
                problems.append("%s has no label %s" % (name, lk))
            elif op == "=" and lv not in values:
                problems.append('%s{%s="%s"}: no such value (%s)' % (name, lk, lv,
                                                                     sorted(values)))
            elif op == "=~" and not any(re.fullmatch(lv, v) for v in values):
                problems.append('%s{%s=~"%s"} matches no value' % (name, lk, lv))
    if not used:
        problems.append("names no s3cached metric")
    known_labels = set(SCRAPE_LABELS)
    for n in used:
        known_labels |= set(names[n])
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", e):
        for lk in (x.strip() for x in group.split(",")):
            if lk not in known_labels:
                problems.append("groups by %s, which %s do not have" % (lk, used))
    if "histogram_quantile" in e:
        assert all(n.endswith("_bucket") for n in used), expr
    stripped = re.sub(r'\{[^}]*\}|\[[^\]]*\]|"[^"]*"', "", e)
    for ident in re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b", stripped):
        if ident not in PROMQL_WORDS and ident not in names and ident not in known_labels:
            problems.append("unknown identifier %s" % ident)
    if e.count("(") != e.count(")"):
        problems.append("unbalanced parentheses")
    return problems


def busy_gateway(gateway, s3rver):
    """A gateway with a hit, a miss, a write and a manifest behind it: every label in use."""
    gw = gateway(s3rver, admin_token=ADMIN_TOKEN)
    gw.require_real()
    up = s3util.upstream_client(s3rver)
    prefix = s3util.unique_key("dash") + "/"
    for i in range(3):
        up.put_object(Bucket=s3rver.bucket, Key="%s%d" % (prefix, i), Body=b"x" * 5000)
    client = gw.client()
    for _ in range(2):
        client.get_object(Bucket=s3rver.bucket, Key=prefix + "0")
    client.head_object(Bucket=s3rver.bucket, Key=prefix + "1")
    client.put_object(Bucket=s3rver.bucket, Key=prefix + "w", Body=b"w")
    client.list_objects_v2(Bucket=s3rver.bucket, Prefix=prefix)
    status, body = http(gw.endpoint + "/_s3cached/manifests", method="POST",
                        headers={"Authorization": "Bearer " + ADMIN_TOKEN,
                                 "Content-Type": "application/json"},
                        data=json.dumps({"bucket": s3rver.bucket, "prefix": prefix}).encode())
    assert status == 201, body
    http(gw.endpoint + "/healthz")
    gw.stats_when(lambda s: s["hits"] >= 1)
    return gw, prefix


def test_grafana_dashboard_names_only_what_the_gateway_exports(gateway, s3rver):
    dash = dashboard()
    assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
    var_names = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "instance"} <= var_names
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for p in dash["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert p["targets"] and len(refs) == len(set(refs)), p["title"]
    titles = " | ".join(p["title"].lower() for p in dash["panels"])
    for topic in ("hit ratio", "operation and status", "p50", "p99", "cache vs upstream",
                  "fill vs capacity", "evictions", "prefetches in flight", "manifest",
                  "upstream errors", "time to first byte"):
        assert topic in titles, "no panel for %s" % topic

    gw, _ = busy_gateway(gateway, s3rver)
    names = scrape_names(gw.endpoint)
    problems = {}
    for title, expr in dashboard_targets(dash):
        pr = promql_problems(expr, names)
        if pr:
            problems.setdefault(title, []).extend(pr)
    assert not problems, problems
    q = dash["templating"]["list"][1]["query"]["query"]
    metric = re.search(r"label_values\((\w+),", q).group(1)
    assert metric in names
    # The checker can fail.
    assert promql_problems('sum(rate(s3cached_cache_hits_total[5m]))', names)
    assert promql_problems('sum(s3cached_manifest_objects{state="done"})', names)
    assert promql_problems('sum by (bucket) (rate(s3cached_requests_total[5m]))', names)
    assert promql_problems('sum(rate(s3cached_requests_total[5m])) / up', names)


def test_grafana_dashboard_queries_answer_from_prometheus_scraping_a_gateway(
        gateway, s3rver, tmp_path):
    exe = shutil.which("prometheus")
    if exe is None:
        raise RuntimeError("prometheus missing: run tools/install-deps.sh")
    gw = gateway(s3rver, admin_token=ADMIN_TOKEN)
    gw.require_real()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "s3cached", "static_configs": [
            {"targets": ["127.0.0.1:%d" % gw.port]}]}]}))
    port = proc.free_port()
    prom = proc.Proc("prometheus", [
        exe, "--config.file=%s" % cfg, "--storage.tsdb.path=%s" % (tmp_path / "data"),
        "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
        str(tmp_path / "prometheus.log"))
    api = "http://127.0.0.1:%d/api/v1/" % port
    try:
        proc.wait_until("prometheus", lambda: proc.http_status(
            "http://127.0.0.1:%d/-/ready" % port) == 200, 60, prom)

        def query(expr):
            status, body = http(api + "query?" + urllib.parse.urlencode({"query": expr}),
                                timeout=30)
            reply = json.loads(body)
            assert status == 200 and reply["status"] == "success", (expr, body)
            return reply["data"]["result"]

        def scrapes():
            r = query("count_over_time(s3cached_capacity_bytes[1m])")
            return int(float(r[0]["value"][1])) if r else 0

        proc.wait_until("two scrapes", lambda: scrapes() >= 2, 30, prom)
        before = scrapes()
        _busy(gw, s3rver)  # traffic between scrapes, so that rates are not zero
        proc.wait_until("more scrapes", lambda: scrapes() >= before + 4, 30, prom)

        status, body = http(api + "series?" + urllib.parse.urlencode(
            {"match[]": "s3cached_capacity_bytes"}))
        assert [s["instance"] for s in json.loads(body)["data"]] == ["127.0.0.1:%d" % gw.port]

        empty = []
        values = {}
        for title, expr in dashboard_targets(dashboard()):
            e = expr.replace("$__rate_interval", "30s").replace("$instance", ".*")
            result = query(e)
            if not result and "5..|0" not in expr:  # no server errors happened: may be empty
                empty.append((title, expr))
            values[(title, expr)] = result
        assert not empty, "queries with no data from a busy gateway: %s" % empty
        hit = [v for (t, _), v in values.items() if t == "Hit ratio"][0]
        assert 0 < float(hit[0]["value"][1]) <= 1, hit
        fill = [v for (t, _), v in values.items() if t == "Cache fill"][0]
        assert 0 < float(fill[0]["value"][1]) < 1, fill
    finally:
        prom.stop()


def _busy(gw, s3rver):
    up = s3util.upstream_client(s3rver)
    prefix = s3util.unique_key("prom") + "/"
    for i in range(3):
        up.put_object(Bucket=s3rver.bucket, Key="%s%d" % (prefix, i), Body=b"y" * 7000)
    client = gw.client()
    for _ in range(3):
        client.get_object(Bucket=s3rver.bucket, Key=prefix + "0")
    client.put_object(Bucket=s3rver.bucket, Key=prefix + "w", Body=b"w")
    status, body = http(gw.endpoint + "/_s3cached/manifests", method="POST",
                        headers={"Authorization": "Bearer " + ADMIN_TOKEN,
                                 "Content-Type": "application/json"},
                        data=json.dumps({"bucket": s3rver.bucket, "prefix": prefix}).encode())
    assert status == 201, body
    gw.stats_when(lambda s: s["hits"] >= 2)


# ---------------------------------------------------------------------------------------------
# deploy/systemd

def unit_settings(path):
    out = {}
    section = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            k, _, v = line.partition("=")
            out.setdefault((section, k), []).append(v)
    return out


def env_file(path):
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                env[k] = v
    return env


def test_systemd_unit_verifies_is_hardened_and_its_env_file_starts_the_gateway(s3rver, tmp_path):
    exe = shutil.which("systemd-analyze")
    if exe is None:
        raise RuntimeError("systemd-analyze missing (Debian package systemd)")
    _, envs = gateway_options()
    unit = os.path.join(SYSTEMD, "s3cached.service")
    s = unit_settings(unit)
    svc = lambda k: s.get(("Service", k), [])  # noqa: E731
    for k, want in (("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                    ("PrivateTmp", "yes"), ("CapabilityBoundingSet", ""),
                    ("Restart", "on-failure"), ("ProtectHome", "yes")):
        assert svc(k) == [want], (k, svc(k))
    assert int(svc("LimitNOFILE")[0]) >= 65536
    assert svc("User") and svc("User") != ["root"] or svc("DynamicUser") == ["yes"]
    env = env_file(os.path.join(SYSTEMD, "s3cached.env"))
    for k in env:
        assert k.startswith("AWS_") or k in envs, "%s is not a gateway option" % k
    rw = " ".join(svc("ReadWritePaths")).split()
    assert env["S3CACHED_CACHE_DIR"] in rw, "the cache directory is not writable"
    host, _ = listen_port(env["S3CACHED_LISTEN"])
    assert host == "127.0.0.1"
    (execstart,) = svc("ExecStart")
    cred = re.match(r"admin-token:(\S+)$", svc("LoadCredential")[0])
    assert cred and "--admin-token-file %d/admin-token" in execstart, execstart

    # systemd's own checks, on the unit with ExecStart pointing at this build.
    local = tmp_path / "s3cached.service"
    binary = execstart.split()[0]
    local.write_text(open(unit).read().replace(binary, OPT_BIN))
    r = run([exe, "verify", str(local)])
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout
    r = run([exe, "security", "--offline=yes", str(local)])
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
    assert m and float(m.group(1)) <= 2.0, r.stdout[-2000:]
    bad = tmp_path / "bad" / "s3cached.service"
    bad.parent.mkdir()
    bad.write_text(local.read_text().replace("PrivateTmp=yes", "PrivateTmpp=yes"))
    assert "PrivateTmpp" in run([exe, "verify", str(bad)]).stdout

    # The env file as systemd hands it over, the token as a credential file (%d).
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "admin-token").write_text(ADMIN_TOKEN + "\n")
    port = proc.free_port()
    e = clean_env()
    e.update({k: v for k, v in env.items() if v})
    e.update({"S3CACHED_LISTEN": "127.0.0.1:%d" % port,
              "S3CACHED_CACHE_DIR": str(tmp_path / "cache"),
              "S3CACHED_UPSTREAM": s3rver.endpoint, "AWS_ACCESS_KEY_ID": s3rver.access_key,
              "AWS_SECRET_ACCESS_KEY": s3rver.secret_key})
    os.makedirs(e["S3CACHED_CACHE_DIR"])
    argv = execstart.replace(binary, OPT_BIN).replace("%d", str(creds)).split()
    p = proc.Proc("s3cached-systemd", argv, str(tmp_path / "gw.log"), env=e)
    endpoint = "http://127.0.0.1:%d" % port
    try:
        proc.wait_until("s3cached", lambda: proc.http_status(endpoint + "/healthz") == 200, 20, p)
        assert http(endpoint + "/_s3cached/stats")[0] == 401
        status, body = http(endpoint + "/_s3cached/stats",
                            {"Authorization": "Bearer " + ADMIN_TOKEN})
        assert status == 200
        size = env["S3CACHED_CACHE_SIZE"]
        assert json.loads(body)["capacity_bytes"] == int(size[:-1]) << {"G": 30, "T": 40}[size[-1]]
    finally:
        stop_cleanly(p)


# ---------------------------------------------------------------------------------------------
# Stopping: the drain ends before every supervisor's SIGKILL

DRAIN_MARGIN = 2  # seconds after the drain: the prefetcher stops, the cache's last commits


def drain_seconds(env, args, default):
    """The gateway's --shutdown-timeout from its arguments, else its environment, else default."""
    for i, a in enumerate(args):
        if a == "--shutdown-timeout":
            return int(args[i + 1])
        if a.startswith("--shutdown-timeout="):
            return int(a.split("=", 1)[1])
    return int(env.get("S3CACHED_SHUTDOWN_TIMEOUT", default))


def test_every_deployment_lets_the_drain_end_before_its_kill():
    """A supervisor that SIGKILLs during the drain cuts every client at once and loses the
    queued cache writes (exit 137): docker stop (10 s), compose's stop_grace_period,
    Kubernetes' terminationGracePeriodSeconds, systemd's TimeoutStopSec must each outlast the
    drain the deployment configures, or the gateway's default."""
    text = run([OPT_BIN, "--help"]).stdout
    default = int(re.search(r"--shutdown-timeout.*?\(default (\d+)", text, re.S).group(1))
    _, runtime = dockerfile()
    image = image_env(runtime)
    checked = []

    def check(where, drain, kill_after):
        checked.append(where)
        assert drain + DRAIN_MARGIN <= kill_after, \
            "%s: drains up to %d s, killed after %d s" % (where, drain, kill_after)

    # docker run / stop / restart: the image's ENV, Docker's 10 s.
    check("docker/Dockerfile", drain_seconds(image, [], default), 10)
    # The compose demo.
    services = resolved_compose()["services"]
    gw = services["s3cached"]
    grace = gw.get("stop_grace_period", "10s")
    check("docker/compose.yaml",
          drain_seconds(dict(image, **{k: str(v) for k, v in gw["environment"].items()}),
                        gw.get("command") or [], default),
          int(re.fullmatch(r"(\d+)s", grace).group(1)))
    # Kubernetes: every gateway container.
    for path in k8s_files():
        for doc in k8s_docs(path):
            spec = pod_spec(doc)
            if spec is None:
                continue
            for c in spec.get("initContainers", []) + spec["containers"]:
                if is_gateway(c):
                    env = dict(image, **container_env(c))
                    check("%s %s" % (os.path.basename(path), doc["metadata"]["name"]),
                          drain_seconds(env, c.get("args", []), default),
                          spec.get("terminationGracePeriodSeconds", 30))
    # systemd: the unit's TimeoutStopSec (default 90 s), its environment file.
    with open(os.path.join(SYSTEMD, "s3cached.service")) as f:
        unit = f.read()
    m = re.search(r"^TimeoutStopSec=(\d+)s?$", unit, re.M)
    with open(os.path.join(SYSTEMD, "s3cached.env")) as f:
        env = dict(ln.split("=", 1) for ln in f.read().splitlines()
                   if "=" in ln and not ln.lstrip().startswith("#"))
    exec_args = shlex.split(re.search(r"^ExecStart=(.*)$", unit, re.M).group(1))[1:]
    check("deploy/systemd", drain_seconds(env, exec_args, default),
          int(m.group(1)) if m else 90)
    assert len(checked) == 5, checked
