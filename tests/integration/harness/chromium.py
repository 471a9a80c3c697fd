"""Debian's headless Chromium, driven over the DevTools protocol through a pipe.

Chromium started with --remote-debugging-pipe reads protocol messages (JSON, each
ended by a NUL byte) on fd 3 and writes answers and events on fd 4: no port, no
websocket library, nothing but the standard library. One Chromium per test, with its
own profile in a temp dir, stopped (Browser.close, then SIGKILL) at close().

    with Chromium() as browser:
        page = browser.new_page(1280, 900)
        page.navigate(url)
        page.wait_for("document.body.dataset.polls >= 2")
        page.evaluate("document.title"); page.screenshot(path)
        page.requests          # every URL the page asked for (Network.requestWillBeSent)
        page.problems()        # console errors, CSP violations, uncaught exceptions
"""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time


def binary():
    """The Chromium binary (S3CACHED_CHROMIUM overrides), or None if it is not installed."""
    override = os.environ.get("S3CACHED_CHROMIUM")
    if override:
        return override if os.access(override, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(RuntimeError):
    pass


class Chromium:
    """A headless Chromium process and its DevTools pipe."""

    def __init__(self, timeout=30.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="s3cached-it-chromium-")
        self.log_path = os.path.join(self.profile, "chromium.log")
        self.popen = None
        self._next_id = 0
        self._pending = {}  # id -> [event, answer]
        self._events = []  # (sessionId, method, params)
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def start(self):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds_3_and_4():
            # Via fds >= 10 first, so that dup2 never overwrites a pipe end still needed.
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        argv = [binary(), "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio",
                "--hide-scrollbars", "--window-size=1280,900", "about:blank"]
        self._log = open(self.log_path, "ab")
        self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                      stderr=subprocess.STDOUT, preexec_fn=fds_3_and_4,
                                      pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self.call("Browser.getVersion")
        return self

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def _read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg and msg["id"] in self._pending:
                        self._pending[msg["id"]][1] = msg
                    elif "method" in msg:
                        self._events.append((msg.get("sessionId"), msg["method"],
                                             msg.get("params", {})))
                    self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def call(self, method, params=None, session=None, timeout=None):
        """Sends one command and returns its result; raises CdpError on an error answer."""
        with self._cond:
            self._next_id += 1
            mid = self._next_id
            self._pending[mid] = [None, None]
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        with self._lock:
            os.write(self._to_chrome, data)
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while self._pending[mid][1] is None:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    del self._pending[mid]
                    raise CdpError("%s: no answer from Chromium (%s)\n%s" % (
                        method, "closed" if self._closed else "timeout", self.log_tail()))
                self._cond.wait(left)
            answer = self._pending.pop(mid)[1]
        if "error" in answer:
            raise CdpError("%s: %s" % (method, answer["error"]))
        return answer.get("result", {})

    def events(self, session=None, method=None):
        with self._cond:
            return [(m, p) for s, m, p in self._events
                    if (session is None or s == session) and (method is None or m == method)]

    def wait_event(self, session, method, seen=0, timeout=None):
        """Waits until session has had more than `seen` events `method`; returns the last one's
        params."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                found = [p for s, m, p in self._events if s == session and m == method]
                if len(found) > seen:
                    return found[-1]
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise CdpError("no %s event from Chromium\n%s" % (method, self.log_tail()))
                self._cond.wait(left)

    def new_page(self, width, height):
        """Opens a blank tab of width x height CSS pixels; returns a Page."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(domain + ".enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        return page

    def close(self):
        if self.popen is None:
            return
        try:
            if self.popen.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except CdpError:
                    pass
                try:
                    self.popen.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait()
        finally:
            os.close(self._to_chrome)
            self._reader.join(timeout=5)
            os.close(self._from_chrome)
            self._log.close()
            self.popen = None
            shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One tab: navigate, evaluate JavaScript, wait for a condition, take a screenshot."""

    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def call(self, method, params=None, timeout=None):
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def navigate(self, url):
        """Loads url and waits for its load event."""
        seen = len(self.browser.events(self.session, "Page.loadEventFired"))
        answer = self.call("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise CdpError("navigating to %s: %s" % (url, answer["errorText"]))
        self.browser.wait_event(self.session, "Page.loadEventFired", seen=seen)

    def evaluate(self, expression):
        """The value of a JavaScript expression (JSON-able), evaluated in the page."""
        answer = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in answer:
            raise CdpError("%s: %s" % (expression, answer["exceptionDetails"]))
        return answer["result"].get("value")

    def wait_for(self, expression, timeout=20.0):
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() >= deadline:
                raise CdpError("still false after %.0f s: %s" % (timeout, expression))
            time.sleep(0.1)

    def screenshot(self, path):
        """Saves a PNG of the viewport to path."""
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    @property
    def requests(self):
        """(url, headers) of every request the page made, in order."""
        return [(p["request"]["url"], p["request"].get("headers", {}))
                for _, p in self.browser.events(self.session, "Network.requestWillBeSent")]

    def problems(self):
        """Console errors, browser log errors (CSP violations among them) and exceptions."""
        out = []
        for method, p in self.browser.events(self.session):
            if method == "Runtime.exceptionThrown":
                out.append("exception: %s" % p["exceptionDetails"].get("text"))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.%s: %s" % (p["type"], [a.get("value") for a in p["args"]]))
            elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append("log (%s): %s" % (p["entry"]["source"], p["entry"]["text"]))
        return out
