"""A stand-in for the gateway's admin API on a local http.server, for the unit tests.

It records every request and answers like the gateway would (docs/manifests.md),
keeping manifests in memory and deriving orders with s3cached.order. Tests can
queue forced replies (status, body) and script a manifest's states.
"""
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from s3cached.order import epoch_order


class Request:
    def __init__(self, method, path, query, headers, body):
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "%s %s %s" % (self.method, self.path, self.query)


class FakeGateway:
    def __init__(self):
        self.requests = []
        self.forced = []            # (status, body bytes, content type) for the next requests
        self.manifests = {}         # id -> {"body": ..., "states": [...], "state": ...}
        self.listing = {}           # prefix -> sorted keys, for prefix manifests
        self.listing_polls = 1      # progress polls that still say "listing"
        self.warm_after = 0         # progress polls that say "warming" before "warm"
        self.parsing_polls = 0      # progress polls that say "parsing" (a large body), first
        self.scored = 0
        self.lock = threading.Lock()
        self.next_id = 1
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                url = urllib.parse.urlsplit(self.path)
                req = Request(self.command, url.path, dict(urllib.parse.parse_qsl(url.query)),
                              {k.lower(): v for k, v in self.headers.items()}, body)
                with fake.lock:
                    fake.requests.append(req)
                    if fake.forced:
                        status, payload, ctype = fake.forced.pop(0)
                    else:
                        status, payload = fake.answer(req)
                        ctype = "application/json"
                if status is None:  # drop the connection without an answer
                    self.close_connection = True
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def force(self, status, body, ctype="application/json"):
        self.forced.append((status, body if isinstance(body, bytes) else json.dumps(body).encode(),
                            ctype))

    def posted_manifests(self):
        return [r.json() for r in self.requests
                if r.method == "POST" and r.path == "/_s3cached/manifests"]

    def count(self, method, path_start):
        return sum(1 for r in self.requests if r.method == method and r.path.startswith(path_start))

    # ---- the API ------------------------------------------------------------------

    def answer(self, req):
        p = req.path
        if not p.startswith("/_s3cached/"):
            return 404, {"error": "NotFound", "message": "no such admin endpoint"}
        what = p[len("/_s3cached/"):]
        if what == "stats":
            return 200, {"hits": 1, "misses": 2, "policy": "lru"}
        if what == "manifests":
            if req.method == "POST":
                return self.create(req.json())
            return 200, {"manifests": [self.progress(i) for i in sorted(self.manifests)]}
        if what == "importance":
            doc = req.json()
            batches = doc if isinstance(doc, list) else [doc]
            n = sum(len(b["losses"]) for b in batches)
            self.scored += n
            return 200, {"scored": n}
        if what.startswith("manifests/"):
            rest = what[len("manifests/"):]
            mid, _, sub = rest.partition("/")
            if mid not in self.manifests:
                return 404, {"error": "NotFound", "message": "no manifest \"%s\"" % mid}
            m = self.manifests[mid]
            if sub == "order":
                return self.order(mid, int(req.query.get("epoch", "0")))
            if req.method == "DELETE":
                m["state"] = "canceled"
                out = self.progress(mid)
                del self.manifests[mid]
                return 200, out
            return 200, self.poll(mid)
        return 404, {"error": "NotFound", "message": "no such admin endpoint"}

    def create(self, body):
        if "bucket" not in body:
            return 400, {"error": "MissingField", "message": "field \"bucket\" is required"}
        mid = "m%d" % self.next_id
        self.next_id += 1
        state = "listing" if "prefix" in body else ("warming" if body.get("prefetch", True)
                                                   else "planned")
        self.manifests[mid] = {"body": body, "state": state, "polls": 0, "after": state}
        if self.parsing_polls:
            self.manifests[mid]["state"] = "parsing"
            return 202, {"id": mid, "state": "parsing", "error": None}
        out = self.progress(mid)
        out["objects"] = None if state == "listing" else len(self.dataset(mid))
        return 201, out

    def dataset(self, mid):
        b = self.manifests[mid]["body"]
        return b["keys"] if "keys" in b else self.listing.get(b["prefix"], [])

    def per_epoch(self, mid):
        b = self.manifests[mid]["body"]
        n, ws = len(self.dataset(mid)), b.get("world_size", 1)
        return n // ws if b.get("drop_last") and n % ws else -(-n // ws)

    def poll(self, mid):
        m = self.manifests[mid]
        m["polls"] += 1
        if m["state"] == "parsing":
            if m["polls"] <= self.parsing_polls:
                return {"id": mid, "state": "parsing", "error": None}
            m["state"], m["polls"] = m["after"], 1
        if m["state"] == "listing" and m["polls"] > self.listing_polls:
            m["state"] = "warming"
        if m["state"] == "warming" and m["polls"] > self.listing_polls + self.warm_after:
            m["state"] = "warm"
        return self.progress(mid)

    def progress(self, mid):
        m = self.manifests[mid]
        b = m["body"]
        listed = m["state"] != "listing" and bool(self.dataset(mid))
        epochs = b.get("num_epochs", 1)
        return {"id": mid, "state": m["state"], "bucket": b["bucket"], "epochs": epochs,
                "accesses": self.per_epoch(mid) * epochs if listed else 0,
                "objects_total": len(self.dataset(mid)) if listed else None,
                "objects_cached": 0, "percent": 0.0, "error": None}

    def order(self, mid, epoch):
        m = self.manifests[mid]
        b = m["body"]
        if m["state"] in ("listing", "parsing"):
            return 400, {"error": "InvalidField",
                         "message": "manifest %s is still %s" % (mid, m["state"])}
        if epoch >= b.get("num_epochs", 1):
            return 400, {"error": "InvalidField",
                         "message": "epoch %d is out of range: the plan has %d epochs"
                                    % (epoch, b.get("num_epochs", 1))}
        keys = self.dataset(mid)
        idx = epoch_order(len(keys), epoch, shuffle=b.get("shuffle", False),
                          seed=b.get("seed", 0), world_size=b.get("world_size", 1),
                          rank=b.get("rank", 0), drop_last=b.get("drop_last", False))
        return 200, {"id": mid, "epoch": epoch, "indices": idx, "keys": [keys[i] for i in idx]}
