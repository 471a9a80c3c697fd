"""A client for the gateway's admin API under /_s3cached/ (standard library only).

    from s3cached import Admin
    admin = Admin()          # $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else localhost:8080
    m = admin.create_manifest({"bucket": "demo", "prefix": "train/", "num_epochs": 3,
                               "shuffle": True, "seed": 42})
    admin.wait_warm(m["id"], timeout=600, callback=lambda p: print(p["percent"]))
    admin.order(m["id"], epoch=0)["keys"]

Every refusal raises GatewayError with the HTTP status, the gateway's error code
(InvalidField, NotFound, ...) and its message. The API itself is documented in
docs/manifests.md.
"""
import http.client
import json
import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Admin", "GatewayError", "GatewayUnreachable", "resolve_endpoint", "DEFAULT_ENDPOINT"]

DEFAULT_ENDPOINT = "http://localhost:8080"
PREFIX = "/_s3cached/"

# States of a manifest that waiting for warmth ends on.
_WARM_STATES = ("warm", "done", "planned")
_DEAD_STATES = ("failed", "canceled")


class GatewayError(Exception):
    """The gateway refused a request, or could not be asked.

    status: the HTTP status (None when no answer came), code: the gateway's error
    code ("InvalidField", "NotFound", "TooLarge", ...), message: its explanation.
    """

    def __init__(self, status, code, message, method=None, path=None):
        self.status = status
        self.code = code
        self.message = message
        self.method = method
        self.path = path
        where = " (%s %s)" % (method, path) if method else ""
        super().__init__("%s%s: %s%s" % (code, "" if status is None else " %d" % status,
                                          message, where))


class GatewayUnreachable(GatewayError):
    """No HTTP answer: connection refused, reset, timed out, DNS failure."""


def resolve_endpoint(endpoint=None):
    """The gateway's URL: the argument, else $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL,
    else http://localhost:8080 (the AWS CLI/SDK conventions for a service endpoint)."""
    for candidate in (endpoint, os.environ.get("AWS_ENDPOINT_URL_S3"),
                      os.environ.get("AWS_ENDPOINT_URL")):
        if candidate:
            break
    else:
        candidate = DEFAULT_ENDPOINT
    candidate = candidate.strip()
    if "://" not in candidate:
        candidate = "http://" + candidate
    parsed = urllib.parse.urlsplit(candidate)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError("not an http(s) endpoint URL: %r" % (candidate,))
    return "%s://%s%s" % (parsed.scheme, parsed.netloc, parsed.path.rstrip("/"))


def _error_from_body(status, body, method, path):
    """A GatewayError from an error reply: the admin API's JSON, or an S3 XML error."""
    text = body.decode("utf-8", "replace") if body else ""
    code, message = "HTTP%d" % status, text.strip()[:500] or "no message"
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and "error" in doc:
            code, message = str(doc["error"]), str(doc.get("message") or "")
    except ValueError:
        m = re.search(r"<Code>([^<]*)</Code>", text)
        if m:
            code = m.group(1)
            m = re.search(r"<Message>([^<]*)</Message>", text)
            message = m.group(1) if m else ""
    return GatewayError(status, code, message, method, path)


def _finite(x):
    """x as a finite float, or None."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


class Admin:
    """The admin API of one gateway.

    endpoint: see resolve_endpoint(). token: sent as "Authorization: Bearer <token>"
    on every request (default $S3CACHED_ADMIN_TOKEN), for a gateway whose admin API is
    behind an authenticating proxy. timeout: seconds per request. retries: how many
    times a request that is safe to repeat (GET, DELETE, importance posts) is tried
    again after a 503 or a connection failure, with a short backoff.

    Holds no connection: an Admin can be pickled and used from any process.
    """

    def __init__(self, endpoint=None, token=None, timeout=30.0, retries=2):
        self.endpoint = resolve_endpoint(endpoint)
        self.token = token if token is not None else os.environ.get("S3CACHED_ADMIN_TOKEN")
        self.timeout = timeout
        self.retries = retries
        self._opener = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_opener"] = None
        return state

    def _open(self, req):
        """urlopen, never through an HTTP proxy for a gateway on loopback (the sidecar case:
        a trainer's HTTP_PROXY is meant for the outside world)."""
        if self._opener is None:
            host = urllib.parse.urlsplit(self.endpoint).hostname or ""
            loopback = host == "localhost" or host.startswith("127.") or host == "::1"
            handlers = [urllib.request.ProxyHandler({})] if loopback else []
            self._opener = urllib.request.build_opener(*handlers)
        return self._opener.open(req, timeout=self.timeout)

    def __repr__(self):
        return "Admin(%r)" % self.endpoint

    # ---- transport ----------------------------------------------------------------

    def request(self, method, path, body=None, query=None, retry=None):
        """Sends one request to /_s3cached/<path>; returns the parsed JSON reply.

        body is JSON-encoded when given. Raises GatewayError for any non-2xx reply
        and GatewayUnreachable when no reply came."""
        url = self.endpoint + PREFIX + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if retry is None:
            retry = method in ("GET", "HEAD", "DELETE")
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(attempts):
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with self._open(req) as resp:
                    text = resp.read()
                return json.loads(text) if text else None
            except urllib.error.HTTPError as e:
                try:
                    payload = e.read()
                finally:
                    e.close()
                err = _error_from_body(e.code, payload, method, PREFIX + path)
                if e.code != 503 or attempt + 1 == attempts:
                    raise err from None
            except (OSError, http.client.HTTPException) as e:
                reason = getattr(e, "reason", e)
                err = GatewayUnreachable(None, "Unreachable",
                                         "cannot reach the gateway at %s: %s"
                                         % (self.endpoint, reason), method, PREFIX + path)
                if attempt + 1 == attempts:
                    raise err from None
            except ValueError as e:  # a 2xx whose body is not JSON
                raise GatewayError(None, "InvalidReply", "the reply is not JSON: %s" % e,
                                   method, PREFIX + path) from None
            time.sleep(min(0.1 * 2 ** attempt, 2.0))
        raise AssertionError("unreachable")

    # ---- endpoints ----------------------------------------------------------------

    def stats(self):
        """GET /_s3cached/stats: the counters (hits, misses, objects, policy, ...)."""
        return self.request("GET", "stats")

    def create_manifest(self, manifest):
        """POST /_s3cached/manifests: registers a manifest (a dict, see docs/manifests.md);
        returns the reply: id, state, objects, accesses, epochs, ...

        Not retried: a lost reply could otherwise register the plan twice."""
        if not isinstance(manifest, dict):
            raise TypeError("a manifest is a dict, not %s" % type(manifest).__name__)
        return self.request("POST", "manifests", body=manifest)

    def manifest(self, manifest_id):
        """GET /_s3cached/manifests/{id}: progress (state, position, objects_cached, ...)."""
        return self.request("GET", "manifests/" + _quote_id(manifest_id))

    def manifests(self):
        """GET /_s3cached/manifests: every manifest's progress, oldest first."""
        return self.request("GET", "manifests")["manifests"]

    def order(self, manifest_id, epoch=0, rank=None):
        """GET /_s3cached/manifests/{id}/order?epoch=E[&rank=R]: {"id", "epoch", "rank",
        "indices", "keys"}, the order this manifest's rank (or rank R of its job) reads in
        that epoch."""
        query = {"epoch": int(epoch)}
        if rank is not None:
            query["rank"] = int(rank)
        return self.request("GET", "manifests/%s/order" % _quote_id(manifest_id), query=query)

    def cancel(self, manifest_id):
        """DELETE /_s3cached/manifests/{id}: withdraws the manifest's ranks from its job (the
        job stops with its last rank); returns the job's progress."""
        return self.request("DELETE", "manifests/" + _quote_id(manifest_id))

    def post_losses(self, bucket, losses):
        """POST /_s3cached/importance: per-sample losses for the `importance` policy.

        losses: one minibatch as a {key: loss} dict (or a list of (key, loss) pairs),
        or a list of such minibatches. Returns the gateway's "scored" count.
        Keys must be unique within a minibatch and losses finite (see ImportanceReporter
        for a buffered, forgiving front end)."""
        if isinstance(losses, dict) or _is_pair_list(losses):
            batches = [dict(losses)]
        else:
            batches = [dict(b) for b in losses]
        if not batches:
            return 0
        for b in batches:
            for k, v in b.items():
                if _finite(v) is None:
                    raise ValueError("loss of %r is not a finite number: %r" % (k, v))
        body = [{"bucket": bucket, "losses": {k: float(v) for k, v in b.items()}}
                for b in batches]
        reply = self.request("POST", "importance", body=body[0] if len(body) == 1 else body,
                             retry=True)
        return int(reply.get("scored", 0))

    def wait_warm(self, manifest_id, timeout=None, callback=None, interval=0.25):
        """Polls a manifest until it is warm; returns its last progress.

        Warm means state "warm" (every object that fits before its next use is
        cached), "done" or "planned" (nothing to prefetch). callback(progress) is
        called after every poll. Raises GatewayError when the manifest failed or was
        canceled, TimeoutError after `timeout` seconds (None: wait for ever)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            prog = self.manifest(manifest_id)
            if callback is not None:
                callback(prog)
            state = prog.get("state")
            if state in _WARM_STATES:
                return prog
            if state in _DEAD_STATES:
                raise GatewayError(None, "Manifest" + state.capitalize(),
                                   "manifest %s is %s%s" % (
                                       manifest_id, state,
                                       ": " + prog["error"] if prog.get("error") else ""))
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("manifest %s not warm after %ss: state %s, %s of %s objects "
                                   "cached" % (manifest_id, timeout, state,
                                               prog.get("objects_cached"),
                                               prog.get("objects_total")))
            time.sleep(interval if deadline is None
                       else max(0.0, min(interval, deadline - time.monotonic())))


def _quote_id(manifest_id):
    return urllib.parse.quote(str(manifest_id), safe="")


def _is_pair_list(x):
    return (isinstance(x, (list, tuple)) and len(x) > 0 and isinstance(x[0], (list, tuple))
            and len(x[0]) == 2 and isinstance(x[0][0], str))
