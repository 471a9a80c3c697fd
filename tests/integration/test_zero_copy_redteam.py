"""Red-team tests for --zero-copy (gateway/zerocopy.c): cases test_zero_copy.py leaves out."""
import os
import socket
import time

import pytest

from harness import s3util
from test_zero_copy import (KiB, ZC, _cached, _held_after_the_request, _put, _read_answer)

MIB = 1024 * KiB


def _request_unread(gw, key, close=False):
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % (
        s3util.object_path(gw, key), "Connection: close\r\n" if close else "")).encode())
    return s


# How the client's socket leaves the kernel's tables (so sock_diag no longer finds it) while
# its process still holds it, every byte of the answer unread in its receive queue:
#  - "close-then-shutdown": the request says Connection: close, the gateway sends all and its
#    FIN; later the client half-closes (CLOSE_WAIT -> LAST_ACK -> CLOSE: unhashed).
#  - "shutdown-then-close": keep-alive; the client half-closes after the answer is queued,
#    the gateway closes in turn (FIN_WAIT2 -> TIME_WAIT: the full socket is unhashed).
# In both the client can still read every queued byte afterwards (Linux keeps the receive
# queue of a socket in CLOSE), and those bytes are the data file's pages.
#  - "close-then-write": Connection: close, the gateway sends all and closes; the client then
#    writes (a next request): the gateway's closed socket answers RST, the client's socket goes
#    to CLOSE (unhashed) and its queued bytes can still be read before ECONNRESET.
@pytest.mark.parametrize("how", ["close-then-shutdown", "shutdown-then-close", "close-then-write"])
def test_a_half_closed_late_reader_gets_the_old_version_exactly(s3rver, gateway, how):
    size = 200 * KiB
    key, old = _put(s3rver, size, "zchalf")
    gw = gateway(s3rver, cache_size="4M", extra_args=ZC)
    gw.require_real()
    _cached(gw, key, old)
    s = _request_unread(gw, key, close=how.startswith("close-then"))
    try:
        _held_after_the_request(gw)
        time.sleep(0.2)  # (close-then-shutdown: the gateway's FIN is in)
        if how == "close-then-write":
            s.sendall(b"GET / HTTP/1.1\r\n\r\n")  # answered by a RST
        else:
            s.shutdown(socket.SHUT_WR)  # still reading: only the writing side is done
        time.sleep(0.3)
        held = gw.stats()["zero_copy_held"]
        client = gw.client()
        new = os.urandom(size)
        client.put_object(Bucket=gw.bucket, Key=key, Body=new)
        _cached(gw, key, new)
        for _ in range(24):  # past --cache-size: LMDB reuses the freed pages
            k, b = _put(s3rver, size, "zcchurn")
            _cached(gw, k, b)
        try:
            head, got = _read_answer(s, size)
        except ConnectionResetError:
            pytest.fail("reset before the answer was read")
    finally:
        s.close()
    assert head.split(" ")[1] == "200", head
    assert len(got) == size
    if got != old:
        where = next(i for i in range(size) if got[i] != old[i])
        pytest.fail("the late reader got other bytes from byte %d on (held after the "
                    "half-close: %d; new version's bytes: %s)" % (
                        where, held, got[where:where + 4096] in new))
    st = gw.stats_when(lambda st: st["zero_copy_held"] == 0, timeout=30)
    assert st["zero_copy_held"] == 0, "the view was not let go once the client's socket went"


def _raw_req(gw, key, rcvbuf):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect(("127.0.0.1", gw.port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % s3util.object_path(gw, key)).encode())
    return s


def test_held_cap_counts_views_still_in_their_requests(s3rver, gateway):
    # 140 slow clients all get their answer started (sendfile) before any request ends: the
    # cap is checked against views already handed over (0 here), so all 140 go zero-copy and,
    # once each request ends with bytes unread, more than GW_ZC_HELD_MAX are held.
    size = 3 * MIB
    key, old = _put(s3rver, size, "zccap")
    gw = gateway(s3rver, cache_size="64M", extra_args=ZC + ["--chunk-size", "4M"])
    _cached(gw, key, old)
    socks = []
    try:
        for i in range(140):
            s = _raw_req(gw, key, rcvbuf=4096)
            s.recv(100)
            socks.append(s)
        gw.stats_when(lambda s: s["hits"] >= 140, 60)
        for s in socks:  # read most of each body: the request ends, the rest unread
            got = 0
            while got < size - 200 * KiB:
                n = len(s.recv(1 << 20))
                assert n > 0
                got += n
        st = gw.stats_when(lambda s: s["zero_copy_held"] > 128, 10)
        assert st["hits_zero_copy"] >= 128, st  # (the cap was reached, not zero-copy off)
        assert st["zero_copy_held"] <= 128, "held %d views" % st["zero_copy_held"]
    finally:
        for s in socks:
            s.close()
