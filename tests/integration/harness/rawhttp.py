"""Unsigned HTTP exchanges that report how a transfer ended, not just what it carried.

The gateway does not check client signatures, so these helpers send plain
requests. get() tells a clean response from one cut short (an error the
client must see); exchange() writes arbitrary bytes on a raw socket, for
requests no HTTP library would send, and reports a reply, a close or a hang.
"""
import dataclasses
import http.client
import socket
import time
import urllib.parse
import xml.etree.ElementTree as ET


@dataclasses.dataclass
class Reply:
    """The outcome of one exchange.

    status is None when no status line came back; complete is True only when
    the body ended exactly where the framing said; error names what went wrong
    (IncompleteRead, ConnectionResetError, timeout...), or is None."""

    status: object = None
    headers: dict = dataclasses.field(default_factory=dict)
    body: bytes = b""
    complete: bool = False
    error: object = None
    closed: bool = False  # the server closed the connection (no reply, or after it)
    elapsed: float = 0.0


def get(endpoint, path, headers=None, timeout=15.0, method="GET"):
    """One request with http.client; never raises for a short or failed transfer."""
    parsed = urllib.parse.urlsplit(endpoint)
    started = time.monotonic()
    reply = Reply()
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        reply.status = resp.status
        reply.headers = {k.lower(): v for k, v in resp.getheaders()}
        try:
            reply.body = resp.read()
            reply.complete = True
        except http.client.IncompleteRead as exc:
            reply.body = exc.partial
            reply.error = "IncompleteRead"
    except (OSError, http.client.HTTPException) as exc:
        reply.error = type(exc).__name__
    finally:
        conn.close()
        reply.elapsed = time.monotonic() - started
    return reply


class RawConnection:
    """One client socket to 127.0.0.1:port that sends raw bytes and reads replies in order.

    Bytes after one reply stay buffered for the next, so pipelined or
    smuggled responses are seen as the separate replies they are."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = bytearray()
        self.closed = False

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        """Sends data; returns False if the server closed or reset the connection meanwhile."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def _fill(self, reply, deadline):
        """Reads more into the buffer; False (with reply.closed or reply.error set) at the end."""
        left = deadline - time.monotonic()
        if left <= 0:
            reply.error = "timeout"
            return False
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            reply.error = "timeout"
            return False
        except OSError as exc:
            reply.error = type(exc).__name__
            reply.closed = self.closed = True
            return False
        if not data:
            reply.closed = self.closed = True
            return False
        self.buf += data
        return True

    def reply(self, timeout=10.0, head_only=False):
        """Reads one reply: status line, headers, and a body framed by Content-Length (or
        read to the close). head_only: a reply to HEAD, no body. Never raises."""
        started = time.monotonic()
        deadline = started + timeout
        reply = Reply()
        while b"\r\n\r\n" not in self.buf:
            if not self._fill(reply, deadline):
                reply.elapsed = time.monotonic() - started
                return reply
        end = self.buf.index(b"\r\n\r\n") + 4
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        del self.buf[:end]
        parts = lines[0].split(" ", 2)
        reply.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                reply.headers[name.strip().lower()] = value.strip()
        want = reply.headers.get("content-length")
        want = int(want) if want is not None and want.isdigit() else None
        if head_only:
            want = 0
        while want is None or len(self.buf) < want:
            if not self._fill(reply, deadline):
                break
        if want is None:
            reply.body = bytes(self.buf)
            self.buf.clear()
        else:
            reply.complete = len(self.buf) >= want
            reply.body = bytes(self.buf[:want])
            del self.buf[:want]
        reply.elapsed = time.monotonic() - started
        return reply


def exchange(port, data, timeout=10.0):
    """Writes data to 127.0.0.1:port on a new connection and reads one reply.

    A reply with a Content-Length is read to that length; one without, to the
    close. Hitting the timeout sets error "timeout": the server hung."""
    with RawConnection(port, timeout) as conn:
        conn.send(data)
        return conn.reply(timeout)


def s3_error_code(body):
    """The <Code> of an S3 XML error body; fails the test if the body is not one."""
    root = ET.fromstring(body)
    assert root.tag == "Error", "not an S3 error body: %r" % body[:300]
    code = root.findtext("Code")
    assert code, "S3 error body without <Code>: %r" % body[:300]
    return code
