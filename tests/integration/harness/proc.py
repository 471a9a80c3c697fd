"""Child processes the harness owns: start with logs to a file, wait until ready, stop.

Every process is started by pid and stopped by pid (SIGTERM, then SIGKILL after a
grace period). Processes still alive when the interpreter exits are killed by an
atexit hook, so an interrupted run leaves nothing behind.
"""
import atexit
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

_LIVE = []


_HANDED_OUT = set()


def free_port():
    """Returns a TCP port on 127.0.0.1 that was free a moment ago and that this process
    has not handed out before. The kernel gives a closed port out again (14 repeats in 500
    calls here), so a fleet's client and peer ports could be the same one."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def tail(path, lines=40):
    """Returns the last lines of a text file, or a note that it is missing."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return "(no %s)" % path
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


class Proc:
    """One child process whose stdout and stderr go to log_path."""

    def __init__(self, name, argv, log_path, env=None, cwd=None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.popen = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=env, cwd=cwd)
        _LIVE.append(self)

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def log_tail(self, lines=40):
        return tail(self.log_path, lines)

    def stop(self, grace=5.0):
        """SIGTERM, then SIGKILL after grace seconds. Returns the exit status."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self in _LIVE:
            _LIVE.remove(self)
        self._log.close()
        return self.popen.returncode

    def kill(self):
        """SIGKILL at once, for a crash-like stop."""
        if self.alive():
            self.popen.kill()
        self.popen.wait()
        if self in _LIVE:
            _LIVE.remove(self)
        self._log.close()
        return self.popen.returncode


def wait_until(what, predicate, timeout, proc=None, interval=0.05):
    """Polls predicate() until it returns a true value, which is returned.

    Raises RuntimeError naming `what` on time-out, or at once if proc died.
    """
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            raise RuntimeError("%s: %s exited with %s while waiting\n%s" % (
                what, proc.name, proc.popen.returncode, proc.log_tail()))
        try:
            result = predicate()
            if result:
                return result
        except Exception as exc:  # the thing is not ready yet
            last_exc = exc
        time.sleep(interval)
    detail = "" if proc is None else "\n" + proc.log_tail()
    raise RuntimeError("%s: not ready after %.0f s (last error: %r)%s" % (
        what, timeout, last_exc, detail))


def http_status(url, timeout=2.0, headers=None):
    """Returns the HTTP status of a GET to url (error statuses included)."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@atexit.register
def _kill_leftovers():
    for p in list(_LIVE):
        try:
            p.kill()
        except Exception:
            pass
