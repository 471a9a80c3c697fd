"""A loopback TCP forwarder put between the gateway and an upstream.

It lets a test cut the upstream off (stop: new connections are refused and
open ones are closed), slow it down (a per-connection byte rate from the
upstream), and measure how much the upstream sent and how many connections
the gateway opened, independently of the gateway's own statistics. With
swallow_down set, what the upstream sends is read and thrown away: the upstream
did its work but its answer never reaches the gateway. With hold_up set, a
connection that carries bytes to the upstream meanwhile keeps them until
release_held(), even after the gateway gave up on it: the upstream gets the
request, and commits it, only after the gateway's transfer ended.
"""
import socket
import threading
import time

from . import proc


class TcpProxy:
    """Forwards 127.0.0.1:port to target_port; counts bytes; can be stopped and restarted."""

    def __init__(self, target_port, rate=None):
        self.target_port = target_port
        self.port = proc.free_port()
        self.rate = rate  # bytes/s per connection from the upstream, None: unlimited
        self.lock = threading.Lock()
        self.bytes_down = 0  # upstream -> gateway
        self.bytes_up = 0  # gateway -> upstream
        self.connections = 0
        self.swallow_down = False  # drop upstream -> gateway bytes (an answer lost on the way)
        self.hold_up = False  # keep gateway -> upstream bytes until release_held()
        self._released = threading.Event()
        self._listener = None
        self._socks = set()
        self._thread = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(128)
        self._listener = ls
        self._thread = threading.Thread(target=self._accept_loop, args=(ls,), daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Refuses new connections and resets every open one."""
        ls, self._listener = self._listener, None
        if ls is not None:
            try:
                ls.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            ls.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with self.lock:
            socks, self._socks = self._socks, set()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def release_held(self):
        """Sends what held connections kept to the upstream."""
        self.hold_up = False
        self._released.set()

    def reset_counters(self):
        with self.lock:
            self.bytes_down = self.bytes_up = self.connections = 0

    def _accept_loop(self, ls):
        while True:
            try:
                client, _ = ls.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.connections += 1
                self._socks.update((client, upstream))
            pair = {"open": 2, "socks": (client, upstream)}
            threading.Thread(target=self._pump, args=(client, upstream, False, pair),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True, pair),
                             daemon=True).start()

    def _pump(self, src, dst, down, pair):
        started = time.monotonic()
        sent = 0
        held = None  # bytes kept for the upstream, once this connection is held
        try:
            while True:
                try:
                    buf = src.recv(65536)
                except OSError:
                    buf = b""
                if not buf:
                    break
                if not down and (held is not None or self.hold_up):
                    held = (held or b"") + buf
                    continue
                if down and self.rate:
                    sent += len(buf)
                    ahead = sent / self.rate - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)
                if down and self.swallow_down:
                    continue
                dst.sendall(buf)
                with self.lock:
                    if down:
                        self.bytes_down += len(buf)
                    else:
                        self.bytes_up += len(buf)
        except OSError:
            pass
        finally:
            self._finish(pair)
        if held is not None:  # the gateway is gone: deliver late, as a slow network would
            self._deliver_late(held)

    def _deliver_late(self, held):
        """Sends held bytes (whole requests) on a fresh upstream connection once released,
        and reads the answer, which nobody gets."""
        self._released.wait(timeout=60)
        try:
            with socket.create_connection(("127.0.0.1", self.target_port), timeout=10) as up:
                up.sendall(held)
                answer = b""
                while b"\r\n\r\n" not in answer:  # the head is enough: the request was taken
                    more = up.recv(65536)
                    if not more:
                        break
                    answer += more
        except OSError:
            pass

    def _finish(self, pair):
        """Shuts both sockets of a pair down; the second pump to finish closes them."""
        for s in pair["socks"]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.lock:
            pair["open"] -= 1
            last = pair["open"] == 0
            if last:
                self._socks.difference_update(pair["socks"])
        if last:
            for s in pair["socks"]:
                s.close()
