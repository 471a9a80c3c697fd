"""What a cache could hit on a trace, to compare the gateway's hits with.

    trace = [key for key, cache in gateway_reads(gw, bucket, keys)]
    belady_hits(trace, capacity)   # the offline optimum (Belady's MIN with bypass)
    lru_hits(trace, capacity)      # what an exact LRU cache of that size hits

Both count objects, not bytes: they hold for traces of objects of one size, with room
for `capacity` of them (the gateway charges a cached object its body size only, so a
--cache-size of capacity * size holds exactly capacity of them).

gateway_reads() is the trace as the gateway saw it: its access log (--access-log), one
line per request in the order the requests ended, with the X-Cache it answered.
"""
import collections
import heapq
import json
import os

NEVER = float("inf")


def next_uses(trace):
    """nxt[p]: the position of the next access to trace[p] after p, or NEVER."""
    nxt = [NEVER] * len(trace)
    last = {}
    for p in range(len(trace) - 1, -1, -1):
        nxt[p] = last.get(trace[p], NEVER)
        last[trace[p]] = p
    return nxt


def belady_hits(trace, capacity):
    """Hits of Belady's MIN with bypass over a trace of equal-sized objects, with room
    for `capacity` of them: the most hits any cache of that size can get, knowing the
    whole trace (on a miss, the object is kept only if its next use comes before that
    of the cached object needed furthest away, which then goes; an object never needed
    again is not kept). O(len(trace) log capacity)."""
    if capacity <= 0:
        return 0
    nxt = next_uses(trace)
    cached = {}  # key -> its next use
    furthest = []  # max-heap of (-next use, key); an entry is stale once cached[key] moved
    hits = 0
    for p, key in enumerate(trace):
        use = nxt[p]
        if key in cached:
            hits += 1
        elif use == NEVER:
            continue  # bypass: keeping it can only cost a hit on something else
        elif len(cached) >= capacity:
            while cached.get(furthest[0][1]) != -furthest[0][0]:
                heapq.heappop(furthest)
            victim_use, victim = -furthest[0][0], furthest[0][1]
            if use > victim_use:
                continue  # bypass: it would be the first to go
            heapq.heappop(furthest)
            del cached[victim]
        cached[key] = use
        heapq.heappush(furthest, (-use, key))
    return hits


def lru_hits(trace, capacity):
    """Hits of an LRU cache with room for `capacity` equal-sized objects."""
    cached, hits = collections.OrderedDict(), 0
    for key in trace:
        if key in cached:
            hits += 1
            cached.move_to_end(key)
        else:
            cached[key] = True
            if len(cached) > capacity:
                cached.popitem(last=False)
    return hits


def gateway_reads(gw, bucket, keys=None):
    """[(key, X-Cache)] of every GET of bucket (of one of `keys`, when given) in the access
    logs of all of gw's runs, in the order the gateway logged them (as the requests
    ended). The gateway must run with --access-log (JSON format, the default); stop it
    first, so that every line is written."""
    wanted = None if keys is None else set(keys)
    reads = []
    for run in range(1, gw.runs + 1):
        path = os.path.join(gw.workdir, "stderr.%d.log" % run)
        with open(path, "rb") as f:
            for line in f:
                if b'"type":"access"' not in line:
                    continue
                a = json.loads(line)
                if a["method"] != "GET" or a["bucket"] != bucket:
                    continue
                if wanted is None or a["key"] in wanted:
                    reads.append((a["key"], a["cache"]))
    return reads
