"""A one-node Ceph cluster with radosgw on loopback, owned by the harness.

radosgw verifies every SigV4 signature strictly, so it proves that the
gateway re-signs each kind of request correctly. The cluster is one ceph-mon,
one ceph-osd on memstore (RAM only) and radosgw with the beast frontend, all
run in the foreground as our children, with every path (mon data, sockets,
logs, keyring, pid files) in one temp dir. Settings that matter here:
  - cephx off (auth_*_required = none) plus ms_mon_client_mode = crc; without
    the latter radosgw retries auth error -13 forever and never listens;
  - one replica (osd_pool_default_size/min_size = 1, mon_allow_pool_size_one);
  - osd_pool_default_pg_num = 8, so radosgw's pools fit one OSD's PG limit;
  - paxos_propose_interval = 0.1, so the first maps commit in ~1 s, not ~8 s.
Starting takes a few seconds and ~150 MiB of memory.
"""
import json
import os
import shutil
import subprocess
import tempfile
import uuid

from . import proc
from .upstream import Upstream

ACCESS_KEY = "s3cachedAK"
SECRET_KEY = "s3cachedSecretKey0123456789"

_CONF = """[global]
fsid = {fsid}
mon_host = v2:127.0.0.1:{mon_port}
mon_initial_members = a
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_mon_client_mode = crc
mon_allow_pool_size_one = true
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
paxos_propose_interval = 0.1
osd_objectstore = memstore
memstore_device_bytes = 4294967296
osd_crush_chooseleaf_type = 0
run_dir = {d}/run
crash_dir = {d}/crash
admin_socket = {d}/run/$name.asok
pid_file = {d}/run/$name.pid
log_file = {d}/log/$name.log
keyring = {d}/keyring
mon_data = {d}/mon/$cluster-$id
osd_data = {d}/osd/$cluster-$id
[client.rgw]
rgw_frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw_thread_pool_size = 64
# SSE-C over plain HTTP: the rig is loopback only (test_request_semantics.py)
rgw_crypt_require_ssl = false
"""


class Radosgw:
    """The cluster; start() brings it up with one user and one bucket, close() removes it."""

    def __init__(self, bucket="test"):
        self.bucket = bucket
        self.dir = tempfile.mkdtemp(prefix="s3cached-it-ceph-")
        self.conf = os.path.join(self.dir, "ceph.conf")
        self.mon_port = proc.free_port()
        self.rgw_port = proc.free_port()
        self.procs = []

    def _path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _run(self, *argv, timeout=60):
        """Runs a ceph tool against this cluster; returns stdout or raises with its output."""
        res = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=timeout, cwd=self.dir)
        if res.returncode != 0:
            raise RuntimeError("%s failed (%d): %s%s" % (
                " ".join(argv), res.returncode, res.stdout.decode(errors="replace"),
                res.stderr.decode(errors="replace")))
        return res.stdout.decode()

    def _ceph(self, *args, timeout=30):
        return self._run("ceph", "-c", self.conf, "--connect-timeout", "10", *args,
                         timeout=timeout)

    def _daemon(self, name, *argv):
        p = proc.Proc(name, list(argv), self._path("log", name + ".out"), cwd=self.dir)
        self.procs.append(p)
        return p

    def _write_conf(self):
        for sub in ("run", "crash", "log", "mon", "osd"):
            os.makedirs(self._path(sub), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(_CONF.format(fsid=uuid.uuid4(), mon_port=self.mon_port,
                                 rgw_port=self.rgw_port, d=self.dir))

    def _start_mon(self):
        fsid = self._run("ceph-conf", "-c", self.conf, "--lookup", "fsid").strip()
        self._run("ceph-authtool", "--create-keyring", self._path("keyring"), "--gen-key",
                  "-n", "mon.", "--cap", "mon", "allow *")
        self._run("monmaptool", "--create", "--fsid", fsid, "--addv", "a",
                  "[v2:127.0.0.1:%d]" % self.mon_port, self._path("monmap"))
        self._run("ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap",
                  self._path("monmap"), "--keyring", self._path("keyring"))
        mon = self._daemon("mon.a", "ceph-mon", "-c", self.conf, "-i", "a", "-f")
        proc.wait_until("ceph-mon", lambda: self._ceph("mon", "stat"), 30, mon)

    def _start_osd(self):
        osd_id = self._ceph("osd", "create").strip()
        os.makedirs(self._path("osd", "ceph-" + osd_id), exist_ok=True)
        self._run("ceph-osd", "-c", self.conf, "-i", osd_id, "--mkfs")
        osd = self._daemon("osd." + osd_id, "ceph-osd", "-c", self.conf, "-i", osd_id, "-f")

        def osd_up():
            stat = json.loads(self._ceph("osd", "stat", "-f", "json"))
            return stat.get("num_up_osds") == 1 and stat.get("num_in_osds") == 1

        proc.wait_until("ceph-osd", osd_up, 30, osd)

    def _start_rgw(self):
        rgw = self._daemon("client.rgw", "radosgw", "-c", self.conf, "-n", "client.rgw", "-f")
        url = "http://127.0.0.1:%d/" % self.rgw_port
        proc.wait_until("radosgw", lambda: proc.http_status(url) == 200, 60, rgw)
        self._run("radosgw-admin", "-c", self.conf, "-n", "client.admin", "user", "create",
                  "--uid", "tester", "--display-name", "s3cached tests",
                  "--access-key", ACCESS_KEY, "--secret", SECRET_KEY)

    def start(self):
        self._write_conf()
        self._start_mon()
        self._start_osd()
        self._start_rgw()
        return self

    def create_user(self, uid, access_key, secret_key):
        """Adds an S3 user with its own key pair and no access to other users' buckets."""
        self._run("radosgw-admin", "-c", self.conf, "-n", "client.admin", "user", "create",
                  "--uid", uid, "--display-name", uid, "--access-key", access_key,
                  "--secret", secret_key)

    def upstream(self):
        return Upstream("radosgw", "http://127.0.0.1:%d" % self.rgw_port, ACCESS_KEY, SECRET_KEY,
                        self.bucket, admin=self)

    def logs(self):
        return "\n".join("== %s\n%s" % (p.name, p.log_tail(20)) for p in self.procs)

    def close(self):
        for p in reversed(self.procs):
            p.stop(grace=2)
        self.procs = []
        shutil.rmtree(self.dir, ignore_errors=True)
