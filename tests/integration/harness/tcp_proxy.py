"""A loopback TCP forwarder put between the gateway and an upstream.

It lets a test cut the upstream off (stop: new connections are refused and
open ones are closed), slow it down (a per-connection byte rate from the
upstream, or a stall before it reads what is sent to the upstream), and measure how much the
upstream sent and how many connections the gateway opened, independently of the gateway's own
statistics; it also keeps the start of what the gateway sent on each connection, so a test can
read the request targets exactly as they went out on the wire. With swallow_down set, what the
upstream sends is read and thrown away: the upstream did its work but its answer never reaches
the gateway. With hold_up set, a connection that carries bytes to the upstream meanwhile keeps
them until release_held(), even after the gateway gave up on it: the upstream gets the request,
and commits it, only after the gateway's transfer ended.
"""
import re
import socket
import threading
import time

from . import proc


RECORD_MAX = 1 << 20
_REQUEST_LINE = re.compile(rb"(GET|HEAD|PUT|POST|DELETE|OPTIONS) (/\S*) HTTP/1\.[01]\r\n")


class TcpProxy:
    """Forwards 127.0.0.1:port to target_port; counts bytes; can be stopped and restarted."""

    def __init__(self, target_port, rate=None, stall_up=None):
        self.target_port = target_port
        self.port = proc.free_port()
        self.rate = rate  # bytes/s per connection from the upstream, None: unlimited
        self.stall_up = stall_up  # seconds each connection reads nothing toward the upstream
        self.lock = threading.Lock()
        self.bytes_down = 0  # upstream -> gateway
        self.bytes_up = 0  # gateway -> upstream
        self.connections = 0
        self.sent = []  # per connection: the first RECORD_MAX bytes the gateway sent
        self.swallow_down = False  # drop upstream -> gateway bytes (an answer lost on the way)
        self.hold_up = False  # keep gateway -> upstream bytes until release_held()
        # bytes each connection passes from the upstream; then it passes nothing more until
        # the proxy stops (an upstream connection that stalls mid-answer). None: no limit
        self.down_limit = None
        self._stopping = threading.Event()
        self._released = threading.Event()
        self._listener = None
        self._socks = set()
        self._thread = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        self._stopping.clear()
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
        self._stopping.set()  # stalled connections end too
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
            self.sent = []

    def request_lines(self):
        """(method, target) of each request line the gateway sent, as bytes on the wire.

        Found by pattern anywhere in what was recorded (a request follows the previous
        one's body directly), so a body holding text like a request line would count
        too: tests send bodies without one."""
        with self.lock:
            streams = [bytes(b) for b in self.sent]
        return [(m.group(1).decode(), m.group(2).decode("latin-1"))
                for data in streams for m in _REQUEST_LINE.finditer(data)]

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
            pair = {"open": 2, "socks": (client, upstream), "record": bytearray()}
            with self.lock:
                self.sent.append(pair["record"])
            threading.Thread(target=self._pump, args=(client, upstream, False, pair),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True, pair),
                             daemon=True).start()

    def _pump(self, src, dst, down, pair):
        started = time.monotonic()
        sent = 0
        passed = 0  # toward down_limit
        if not down and self.stall_up:
            time.sleep(self.stall_up)  # the gateway's writes pile up in the socket buffers
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
                stalled = False
                if down and self.down_limit is not None:
                    stalled = passed + len(buf) > self.down_limit
                    buf = buf[:max(self.down_limit - passed, 0)]
                    passed += len(buf)
                dst.sendall(buf)
                with self.lock:
                    if down:
                        self.bytes_down += len(buf)
                    else:
                        self.bytes_up += len(buf)
                        room = RECORD_MAX - len(pair["record"])
                        pair["record"] += buf[:max(room, 0)]
                if stalled:
                    self._stopping.wait()
                    break
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
