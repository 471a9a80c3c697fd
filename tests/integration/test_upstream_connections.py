"""--upstream-connections: at most N upstream connections at once, and requests beyond them are
sent in the order they came.

Against the fault-injecting fake upstream (harness/faulty_upstream.py), because the test needs an
upstream that holds every answer for a fixed time, and one that counts its connections.

The defect this guards against: the gateway used to cap connections with libcurl's
CURLMOPT_MAX_HOST_CONNECTIONS, whose pending list lets a newly added request take a freed
connection ahead of one that waited, and sends the loser to the back. Under 1,000 clients
against a slow radosgw, the median miss waited 3.6 s and some over 60 s (test_load.py)."""
import concurrent.futures
import threading
import time

from harness import faulty_upstream as faults
from harness import s3util
from test_metrics import scrape, value

faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests

SLOTS = 2
HOLD = 0.1  # seconds the fake holds each answer: SLOTS / HOLD = 20 requests a second at most
REQUESTS = 90
SPACING = 1 / 60  # 60 requests a second arrive: a line builds up that only order can drain
SIZE = 4096


def fire(gw, keys):
    """Sends a GET of each key on its own connection, keys[i] at SPACING * i; returns
    {key: (seconds after the start it was sent, response)}."""
    start = time.monotonic() + 0.2
    sent = {}
    lock = threading.Lock()

    def one(i):
        time.sleep(max(0.0, start + i * SPACING - time.monotonic()))
        at = time.monotonic() - start
        resp = s3util.raw(gw, "GET", s3util.object_path(gw, keys[i]))
        with lock:
            sent[keys[i]] = (at, resp)

    with concurrent.futures.ThreadPoolExecutor(len(keys)) as pool:
        list(pool.map(one, range(len(keys))))
    return sent


def test_requests_over_the_cap_reach_the_upstream_in_the_order_they_came(faulty_upstream,
                                                                            gateway):
    fake = faulty_upstream
    keys = ["q-%03d" % i for i in range(REQUESTS)]
    bodies = {k: s3util.data(SIZE, seed=k) for k in keys}
    for k in keys:
        fake.put(k, bodies[k], faults.stall(after=0, seconds=HOLD))
    gw = gateway(fake.upstream(), extra_args=["--upstream-connections", str(SLOTS)])

    sent = fire(gw, keys)

    for k in keys:
        at, resp = sent[k]
        assert resp.status == 200 and resp.body == bodies[k], (k, resp.status)
    assert fake.connections_accepted() <= SLOTS, fake.connections_accepted()
    order = [target.rsplit("/", 1)[-1] for method, target, _ in fake.requests() if method == "GET"]
    assert sorted(order) == keys, order  # each key fetched once
    # A request sent 0.1 s after another (six places later) must not reach the bucket first;
    # closer ones may swap, as the client threads' own scheduling may.
    rank = {k: i for i, k in enumerate(order)}
    overtaken = [(a, b) for a in keys for b in keys
                 if sent[b][0] >= sent[a][0] + 0.1 and rank[b] < rank[a]]
    assert not overtaken, "sent later, fetched sooner: %s (order %s)" % (overtaken[:10], order)

    samples = scrape(gw)
    assert value(samples, "s3cached_upstream_wait_seconds_count") >= REQUESTS - SLOTS, samples
    assert value(samples, "s3cached_upstream_waiting") == 0
