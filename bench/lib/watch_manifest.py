#!/usr/bin/env python3
"""bench/lib/watch_manifest.py - follows a manifest's progress until it is warm, cheaply.

Usage: watch_manifest.py GW_URL ID T0 TIMELINE [TIMEOUT_S]

Polls GET GW_URL/_s3cached/manifests/ID every 50 ms on one kept-alive connection and appends
"seconds-since-T0 objects_cached" to TIMELINE at each poll. T0 is the start, as `date +%s.%N`
printed it (wall clock). Ends when every object is cached (exit 0), when an object failed or the
time runs out (exit 1, the last progress on stderr). Prints the last progress (JSON) and the
wall-clock time it was read, on two lines.

Why not curl and jq in a shell loop: their start-up took 40 ms of CPU per poll, half a core of
this two-core machine at 20 polls a second, taken from the gateway being measured.
"""
import http.client
import json
import sys
import time
import urllib.parse


def main():
    url, mid, t0, timeline = sys.argv[1:5]
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 600.0
    t0 = float(t0)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    path = "/_s3cached/manifests/" + mid
    deadline = time.time() + timeout
    with open(timeline, "a") as out:
        while True:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            now = time.time()
            if resp.status != 200:
                sys.exit("manifest %s: HTTP %d: %s" % (mid, resp.status, body[:200]))
            p = json.loads(body)
            out.write("%.3f %d\n" % (now - t0, p["objects_cached"]))
            if p["objects_failed"]:
                sys.exit("manifest %s: %d objects failed: %s" % (mid, p["objects_failed"], body))
            if p["objects_total"] is not None and p["objects_cached"] == p["objects_total"]:
                print(json.dumps(p))
                print("%.6f" % now)
                return
            if now > deadline:
                sys.exit("manifest %s did not warm: %s" % (mid, body))
            time.sleep(0.05)


if __name__ == "__main__":
    main()
