"""A fault-injecting fake upstream: a tiny HTTP/1.1 server that misbehaves on purpose.

This is NOT an S3 implementation and must not stand in for one: the tests of
normal behaviour run against s3rver and radosgw. It exists only because a real
S3 server cannot be made to cut a body short, lie in Content-Length, stall
mid-transfer, send an ETag or checksum that does not match the body, leave the
ETag out of a 200, answer 503 SlowDown on demand, reset a connection before any
header or mid-body, or trickle a body (s3rver and radosgw send no x-amz-checksum-*
headers, so the checksum path is tested here too).

It serves GET and HEAD on path-style "/BUCKET/KEY" for keys a test put there,
each with one Fault, and counts the requests per (method, key) so a test can
tell how many upstream fetches the gateway made, and records every request
with its headers (requests(), request_headers()) so a test can see what the gateway sent.
Unknown keys get 404 NoSuchKey; other methods get 501, but a DeleteObjects (POST ?delete) once
answer_deletes() said what its answer lists and how late its body comes. It ignores signatures
(the gateway may sign with any credentials, or none) and, unless a fault says otherwise (Fault.ranges), Range (it
answers the whole object, which the gateway must cope with anyway).

Use it through the `faulty_upstream` fixture (function scope):

    fake = faulty_upstream
    fake.put("k", body, faults.truncated(after=1000))
    gw = gateway(fake.upstream(), extra_args=[...])
    ...
    fake.set_fault("k", faults.normal())
    assert fake.count("k") == 2
"""
import dataclasses
import hashlib
import socket
import struct
import threading
import time
import urllib.parse

import pytest

from .upstream import Upstream

ACCESS_KEY = "AKIDFAULTYFAKE000000"  # dummy: the fake never checks a signature
SECRET_KEY = "faulty-upstream-dummy-secret"
LAST_MODIFIED = "Wed, 01 Jan 2025 00:00:00 GMT"
MAX_HEAD = 64 * 1024
IDLE_TIMEOUT = 30.0


@dataclasses.dataclass
class Fault:
    """How the fake answers a GET of one key (build one with the functions below)."""

    kind: str = "normal"
    after: int = 0  # body bytes sent before the fault strikes
    seconds: float = 0.0  # how long a stall lasts
    times: int = 0  # how many requests a 503 fault answers before the object is served
    chunk: int = 4096  # trickle: bytes per send
    interval: float = 0.0  # trickle: pause between sends
    etag: str = None  # the ETag header verbatim; None: the quoted MD5 of the body; "": no ETag
    # x-amz-checksum-* headers (name -> value) sent, as S3 does, only to a GET or HEAD that
    # carries x-amz-checksum-mode: ENABLED
    checksums: dict = None
    headers: dict = None  # more response headers (name -> value), sent to every GET and HEAD
    status: int = 200  # lying_status: the status line's code
    part: tuple = None  # lying_status: (first, last) body bytes sent, or None: the whole body
    ranges: bool = False  # answer a GET with Range as S3 does (206), the fault striking only
    # GETs of the whole object (a trickle trickles ranges too); False: Range is ignored
    range_gate: threading.Event = None  # held_ranges: a ranged GET is answered once it is set


def normal(etag=None, checksums=None, headers=None, ranges=False):
    """200 with the right Content-Length and an ETag that is the body's MD5 (or etag).

    checksums: x-amz-checksum-* headers to send when the request asks for them;
    headers: more headers to send with every answer; ranges: see Fault.ranges."""
    return Fault("normal", etag=etag, checksums=checksums, headers=headers, ranges=ranges)


def held_ranges(gate):
    """As normal(ranges=True), but a GET with Range is answered only once gate (a
    threading.Event) is set: the test decides when an answer to a range arrives."""
    return Fault("normal", ranges=True, range_gate=gate)


def no_etag():
    """200 with the right Content-Length and body, and no ETag header at all."""
    return Fault("normal", etag="")


def truncated(after, ranges=False, seconds=0.0):
    """Content-Length is the whole body, but only `after` bytes are sent, then, `seconds`
    later, FIN. ranges: see Fault.ranges."""
    return Fault("truncated", after=after, ranges=ranges, seconds=seconds)


def reset_mid_body(after):
    """The right headers, `after` body bytes, then a connection reset (RST)."""
    return Fault("reset_mid_body", after=after)


def short_length(length, etag=None):
    """Content-Length says `length` (less than the body), the whole body is sent, then FIN.

    The ETag is the MD5 of the whole body, as S3 would send it, unless etag is given
    (a multipart-style '"...-2"' ETag takes the digest check away from the gateway)."""
    return Fault("short_length", after=length, etag=etag)


def late_excess(length, seconds, etag=None, headers=None):
    """Content-Length says `length` (less than the body); those bytes, then after `seconds`
    the rest, then FIN: the excess arrives only after the announced end."""
    return Fault("late_excess", after=length, seconds=seconds, etag=etag, headers=headers)


def stall(after, seconds):
    """`after` bytes, then nothing for `seconds`, then the rest (if anyone still listens)."""
    return Fault("stall", after=after, seconds=seconds)


def chunked(etag=None):
    """The whole body in chunked transfer coding, without a Content-Length (etag as normal)."""
    return Fault("chunked", etag=etag)


def bad_md5():
    """The whole body, with an ETag that is a plain MD5 but of other bytes."""
    return Fault("bad_md5")


def slowdown(times):
    """503 SlowDown (S3 XML) for the next `times` GET or HEAD requests, then normal."""
    return Fault("slowdown", times=times)


def head_unavailable():
    """Every HEAD is answered 503 SlowDown; GETs are served normally, a Range (bytes=a-b) with
    its 206, as S3 does. A throttled upstream asked whether an object changed."""
    return Fault("head_unavailable")


def reset():
    """Reads the request, then resets the connection (RST) before sending any byte."""
    return Fault("reset")


def chunked_with_length(length, etag=None):
    """Transfer-Encoding: chunked (the whole body, as one chunk) and also a Content-Length
    of `length`, which RFC 9112 says a recipient must ignore. etag as for short_length."""
    return Fault("chunked_with_length", after=length, etag=etag)


def trickle(chunk, interval, ranges=False):
    """The right headers, then the body `chunk` bytes at a time, `interval` seconds apart.
    ranges: see Fault.ranges (a 206 of the range asked, trickled the same way)."""
    return Fault("trickle", chunk=chunk, interval=interval, ranges=ranges)


def lying_status(status, part=None, content_range=None, etag=None):
    """Answers every GET and HEAD with `status` (a 206, 304, 204...) whatever was asked: the
    body bytes part=(first, last) inclusive (None: the whole body; none for 204 and 304) with
    their Content-Length, and Content-Range: content_range when given. No real server answers
    an unconditional GET with these."""
    headers = {"Content-Range": content_range} if content_range else None
    return Fault("lying_status", status=status, part=part, etag=etag, headers=headers)


def range_lie(part, chunk=64 * 1024, interval=0.05):
    """A GET with a Range header gets a 206 of body bytes part=(first, last) inclusive, with
    their Content-Range, whatever range was asked; a GET without trickles the whole body
    (as trickle) so that a range far in is fetched on its own beside the fill."""
    return Fault("range_lie", part=part, chunk=chunk, interval=interval)


class _Object:
    def __init__(self, body, fault, checksums):
        self.body = body
        self.fault = fault
        self.md5 = hashlib.md5(body).hexdigest()
        self.checksums = dict(checksums or {})


class _Closed(Exception):
    """The peer went away, or the fault closed the connection on purpose."""


class FaultyUpstream:
    """The fake server; start() listens on a random 127.0.0.1 port, stop() ends everything."""

    def __init__(self, bucket="test"):
        self.bucket = bucket
        self.port = None
        self._lock = threading.Lock()
        self._objects = {}
        self._counts = {}
        self._requests_by_key = {}
        self._body_bytes = {}
        self._requests = []
        self._stopping = threading.Event()
        self._listener = None
        self._conns = set()
        self._accepted = 0
        self._threads = []
        self._delete_answer = None  # (keys, seconds): answer_deletes()

    # ---- what tests use ------------------------------------------------------------

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def upstream(self):
        """The Upstream to hand to the gateway factory (dummy credentials)."""
        return Upstream("faulty", self.endpoint, ACCESS_KEY, SECRET_KEY, self.bucket)

    def put(self, key, body, fault=None, checksums=None):
        """Serves body at key with fault (default: normal). checksums ({"x-amz-checksum-crc32":
        value, ...}) are sent, as S3 does, only to requests with x-amz-checksum-mode: ENABLED."""
        with self._lock:
            self._objects[key] = _Object(bytes(body), fault or normal(), checksums)

    def remove(self, key):
        """The key is gone: its next request gets 404 NoSuchKey."""
        with self._lock:
            self._objects.pop(key, None)

    def answer_deletes(self, keys, seconds=0.0):
        """Answers every DeleteObjects with a 200 whose <DeleteResult> lists keys as Deleted,
        whatever the request asked (an upstream that read the request's keys differently), its
        body sent `seconds` after its head. Deletes nothing itself (see remove())."""
        with self._lock:
            self._delete_answer = (list(keys), seconds)

    def set_fault(self, key, fault):
        """Changes how an existing key is served from the next request on."""
        with self._lock:
            self._objects[key].fault = fault

    def count(self, key, method="GET"):
        """Requests received for key with method (None: every method)."""
        with self._lock:
            if method is None:
                return sum(n for (_, k), n in self._counts.items() if k == key)
            return self._counts.get((method, key), 0)

    def requests(self):
        """Every request received so far, in order: (method, target, lower-cased headers)."""
        with self._lock:
            return list(self._requests)

    def request_headers(self, key, method="GET"):
        """The headers (lower-cased names) of each request received for key with method."""
        with self._lock:
            return list(self._requests_by_key.get((method, key), []))

    def connections_accepted(self):
        """Connections accepted so far (a client that keeps its connections alive and caps them
        at N opens at most N)."""
        with self._lock:
            return self._accepted

    def body_bytes_sent(self, key):
        """Body bytes written to sockets for key, over all requests."""
        with self._lock:
            return self._body_bytes.get(key, 0)

    # ---- life cycle ----------------------------------------------------------------

    def start(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", 0))
        ls.listen(256)
        self.port = ls.getsockname()[1]
        self._listener = ls
        self._spawn(self._accept_loop, ls)
        return self

    def stop(self):
        """Stops listening, wakes every stalled answer and closes every connection."""
        self._stopping.set()
        ls, self._listener = self._listener, None
        if ls is not None:
            try:
                ls.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            ls.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=5)

    def _spawn(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept_loop(self, ls):
        while not self._stopping.is_set():
            try:
                conn, _ = ls.accept()
            except OSError:
                return
            with self._lock:
                self._conns.add(conn)
                self._accepted += 1
            self._spawn(self._serve_connection, conn)

    # ---- one connection -----------------------------------------------------------

    def _serve_connection(self, conn):
        conn.settimeout(IDLE_TIMEOUT)
        buf = bytearray()
        try:
            while not self._stopping.is_set():
                head = self._read_head(conn, buf)
                method, target, headers = self._parse_head(head)
                with self._lock:
                    self._requests.append((method, target, headers))
                self._skip_body(conn, buf, headers)
                keep = self._answer(conn, method, target, headers)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (_Closed, OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    @staticmethod
    def _read_head(conn, buf):
        while b"\r\n\r\n" not in buf:
            if len(buf) > MAX_HEAD:
                raise _Closed()
            data = conn.recv(65536)
            if not data:
                raise _Closed()
            buf += data
        end = buf.index(b"\r\n\r\n") + 4
        head = bytes(buf[:end])
        del buf[:end]
        return head

    @staticmethod
    def _parse_head(head):
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        return method, target, headers

    @staticmethod
    def _skip_body(conn, buf, headers):
        left = int(headers.get("content-length", "0") or "0")
        while left > 0:
            if not buf:
                data = conn.recv(65536)
                if not data:
                    raise _Closed()
                buf += data
            take = min(left, len(buf))
            del buf[:take]
            left -= take

    def _key_of(self, target):
        path = urllib.parse.unquote(target.split("?", 1)[0])
        bucket, _, key = path.lstrip("/").partition("/")
        return (key if bucket == self.bucket else None), bucket

    def _answer(self, conn, method, target, headers):
        """Answers one request; returns whether the connection may serve another."""
        key, bucket = self._key_of(target)
        with self._lock:
            self._counts[(method, key)] = self._counts.get((method, key), 0) + 1
            self._requests_by_key.setdefault((method, key), []).append(headers)
            obj = self._objects.get(key) if key is not None else None
            fault = obj.fault if obj else None
            slowed = fault is not None and fault.kind == "slowdown" and fault.times > 0
            if slowed:
                fault.times -= 1
            delete_answer = self._delete_answer
        query = urllib.parse.parse_qs(target.partition("?")[2], keep_blank_values=True)
        if method == "POST" and "delete" in query and delete_answer is not None:
            return self._answer_delete(conn, *delete_answer)
        if method not in ("GET", "HEAD"):
            return self._error(conn, method, 501, "NotImplemented", "fake: GET and HEAD only")
        if key is None:
            return self._error(conn, method, 404, "NoSuchBucket", "no bucket %s" % bucket)
        if obj is None:
            return self._error(conn, method, 404, "NoSuchKey", "The specified key does not exist.")
        if fault.kind == "reset":
            self._reset(conn)
            raise _Closed()
        if slowed or (fault.kind == "head_unavailable" and method == "HEAD"):
            return self._error(conn, method, 503, "SlowDown", "Please reduce your request rate.")
        if (fault.ranges or fault.kind == "head_unavailable") and "range" in headers:
            return self._send_range(conn, key, obj, headers["range"], fault)
        wants_checksum = headers.get("x-amz-checksum-mode", "").upper() == "ENABLED"
        if fault.kind == "range_lie":
            fault = self._range_lie_answer(fault, obj, "range" in headers)
        return self._send_object(conn, method, key, obj, fault, wants_checksum)

    @staticmethod
    def _range_lie_answer(fault, obj, ranged):
        if not ranged:
            return dataclasses.replace(fault, kind="trickle")
        first, last = fault.part
        return lying_status(206, part=fault.part,
                            content_range="bytes %d-%d/%d" % (first, last, len(obj.body)))

    @staticmethod
    def _reset(conn):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    @staticmethod
    def _head_bytes(status, reason, headers):
        lines = ["HTTP/1.1 %d %s" % (status, reason)]
        lines += ["%s: %s" % kv for kv in headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _error(self, conn, method, status, code, message):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
                '<Message>%s</Message><RequestId>FAKE</RequestId></Error>' % (
                    code, message)).encode()
        reason = {404: "Not Found", 501: "Not Implemented", 503: "Slow Down"}[status]
        head = self._head_bytes(status, reason, [
            ("Content-Type", "application/xml"), ("Content-Length", str(len(body))),
            ("x-amz-request-id", "FAKE")])
        conn.sendall(head + (body if method != "HEAD" else b""))
        return True

    def _answer_delete(self, conn, keys, seconds):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<DeleteResult>%s</DeleteResult>' % "".join(
            "<Deleted><Key>%s</Key></Deleted>" % k for k in keys)).encode()
        conn.sendall(self._head_bytes(200, "OK", [
            ("Content-Type", "application/xml"), ("Content-Length", str(len(body))),
            ("x-amz-request-id", "FAKE")]))
        time.sleep(seconds)
        conn.sendall(body)
        return True

    def _send_object(self, conn, method, key, obj, fault, wants_checksum=False):
        body = obj.body
        etag = '"%s"' % obj.md5
        if fault.kind == "lying_status":
            body = b"" if fault.status in (204, 304) else (
                body[fault.part[0]:fault.part[1] + 1] if fault.part else body)
        length = len(body)
        if fault.kind in ("short_length", "late_excess", "chunked_with_length"):
            length = fault.after
        elif fault.kind == "bad_md5":
            etag = '"%s"' % hashlib.md5(b"not the body" + body).hexdigest()
        if fault.etag is not None:
            etag = fault.etag
        headers = [("Content-Type", "application/octet-stream")]
        if fault.kind == "chunked":
            headers.append(("Transfer-Encoding", "chunked"))
        else:
            if fault.kind == "chunked_with_length":
                headers.append(("Transfer-Encoding", "chunked"))
            headers.append(("Content-Length", str(length)))
        if etag != "":
            headers.append(("ETag", etag))
        headers += [("Last-Modified", LAST_MODIFIED), ("Accept-Ranges", "bytes"),
                    ("x-amz-request-id", "FAKE")]
        if wants_checksum:
            headers += sorted({**obj.checksums, **(fault.checksums or {})}.items())
        if fault.headers:
            headers += sorted(fault.headers.items())
        conn.sendall(self._head_bytes(fault.status, "Lie", headers))
        if method == "HEAD":
            return True
        kind = fault.kind
        if kind == "chunked_with_length":
            self._send_body(conn, key, b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            return True
        if kind == "truncated":
            self._send_body(conn, key, body[:fault.after])
            time.sleep(fault.seconds)
            conn.shutdown(socket.SHUT_WR)
            return False
        if kind == "reset_mid_body":
            self._send_body(conn, key, body[:fault.after])
            self._reset(conn)
            raise _Closed()
        if kind == "short_length":
            self._send_body(conn, key, body)
            conn.shutdown(socket.SHUT_WR)
            return False
        if kind == "late_excess":
            self._send_body(conn, key, body[:fault.after])
            if not self._stopping.wait(fault.seconds):
                self._send_body(conn, key, body[fault.after:])
            conn.shutdown(socket.SHUT_WR)
            return False
        if kind == "stall":
            self._send_body(conn, key, body[:fault.after])
            if self._stopping.wait(fault.seconds):
                return False
            self._send_body(conn, key, body[fault.after:])
            return True
        if kind == "chunked":
            for i in range(0, len(body), 64 * 1024):
                piece = body[i:i + 64 * 1024]
                self._send_body(conn, key, b"%x\r\n%s\r\n" % (len(piece), piece))
            conn.sendall(b"0\r\n\r\n")
            return True
        if kind == "trickle":
            for i in range(0, len(body), fault.chunk):
                if i and self._stopping.wait(fault.interval):
                    return False
                self._send_body(conn, key, body[i:i + fault.chunk])
            return True
        self._send_body(conn, key, body)
        return True

    def _send_range(self, conn, key, obj, value, fault):
        """A 206 of bytes=first-last (the only form the gateway sends upstream), trickled for
        a trickle fault."""
        if fault.range_gate is not None and not fault.range_gate.wait(60):
            raise _Closed()  # never released: the test failed already
        first, last = (int(x) for x in value.split("=", 1)[1].split("-"))
        last = min(last, len(obj.body) - 1)
        part = obj.body[first:last + 1]
        conn.sendall(self._head_bytes(206, "Partial Content", [
            ("Content-Type", "application/octet-stream"), ("Content-Length", str(len(part))),
            ("Content-Range", "bytes %d-%d/%d" % (first, last, len(obj.body))),
            ("ETag", '"%s"' % obj.md5), ("Last-Modified", LAST_MODIFIED),
            ("x-amz-request-id", "FAKE")]))
        if fault.kind != "trickle":
            self._send_body(conn, key, part)
            return True
        for at in range(0, len(part), fault.chunk):
            self._send_body(conn, key, part[at:at + fault.chunk])
            time.sleep(fault.interval)
        return True

    def _send_body(self, conn, key, data):
        conn.sendall(data)
        with self._lock:
            self._body_bytes[key] = self._body_bytes.get(key, 0) + len(data)


@pytest.fixture
def faulty_upstream():
    """A started FaultyUpstream with bucket "test"; stopped after the test."""
    fake = FaultyUpstream(bucket="test").start()
    try:
        yield fake
    finally:
        fake.stop()


def start_gateway(gateway, fake, *args):
    """A gateway (from the conftest's gateway factory) in front of fake, with extra
    command-line args; never direct mode, since the fake is the point of the test."""
    gw = gateway(fake.upstream(), extra_args=list(args))
    gw.require_real()
    return gw
