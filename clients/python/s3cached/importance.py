"""ImportanceReporter: per-sample losses to the gateway's `importance` policy (SHADE).

    with ImportanceReporter("demo") as rep:
        for keys, x, y in loader:
            loss = F.cross_entropy(model(x), y, reduction="none")   # one loss per sample
            rep.report(keys, loss)
            loss.mean().backward(); ...

The gateway ranks the samples of each minibatch by loss and keeps the hardest ones
longest (docs/policies/importance.md). report() buffers minibatches; every `batch`
of them go in one POST /_s3cached/importance (flush() and leaving the `with` block
send the rest).
"""
import json
import operator
import threading
import warnings

from ._torch import to_list
from .admin import Admin, GatewayError, _finite

__all__ = ["ImportanceReporter"]

# The gateway's limits on one importance body (docs/manifests.md), with room to spare.
MAX_BODY_BYTES = 6 * 1024 * 1024
GATEWAY_BODY_BYTES = 8 * 1024 * 1024
MAX_MINIBATCHES = 10000
MAX_SAMPLES = 1000000


class ImportanceReporter:
    """Buffers minibatches of (key, loss) and posts them to the gateway.

    bucket   the bucket the samples' keys are in.
    admin    an Admin (default: Admin() from the environment).
    batch    minibatches per POST (1 posts every minibatch at once).
    keys     the dataset's key list: integer sample ids given to report() are
             mapped through it (for a sampler that yields indices).
    strict   False (default): a failed post is a warning and its losses are
             dropped, so a hiccup of the gateway never stops training; True: raise.

    Within a minibatch a key reported twice keeps its largest loss, and samples
    whose loss is not finite (NaN, inf) are left out (counted in `dropped`).
    Counters: `scored` (samples the gateway scored), `posts`, `failures`, `dropped`.
    Thread-safe.
    """

    def __init__(self, bucket, admin=None, batch=16, keys=None, strict=False):
        if not isinstance(batch, int) or batch < 1:
            raise ValueError("batch must be a positive integer")
        self.bucket = bucket
        self.admin = admin if admin is not None else Admin()
        self.batch = batch
        self.keys = None if keys is None else list(keys)
        self.strict = bool(strict)
        self.scored = 0
        self.posts = 0
        self.failures = 0
        self.dropped = 0
        self._pending = []
        self._lock = threading.Lock()

    def report(self, keys, losses):
        """Adds one minibatch: keys (list/tuple/tensor of keys or sample indices) and
        their losses (a tensor, numpy array or list of numbers, one per key)."""
        keys = to_list(keys) if not isinstance(keys, (list, tuple)) else list(keys)
        losses = to_list(losses)
        if len(keys) != len(losses):
            raise ValueError("%d keys but %d losses: report one loss per sample (for torch "
                             "losses, reduction='none')" % (len(keys), len(losses)))
        if len(keys) > MAX_SAMPLES:
            raise ValueError("a minibatch of %d samples is over the gateway's limit of %d"
                             % (len(keys), MAX_SAMPLES))
        mb = {}
        dropped = 0
        for k, v in zip(keys, losses):
            key = self._key(k)
            f = _finite(v)
            if f is None:
                dropped += 1
                continue
            if key not in mb or f > mb[key]:
                mb[key] = f
        if _minibatch_bytes(self.bucket, mb) > GATEWAY_BODY_BYTES:
            raise ValueError("a minibatch of %d samples is larger than the gateway takes in one "
                             "request (8 MiB of JSON)" % len(mb))
        with self._lock:
            self.dropped += dropped
            if mb:
                self._pending.append(mb)
            if len(self._pending) < self.batch:
                return
        self.flush()

    def flush(self):
        """Posts every buffered minibatch; returns how many samples the gateway scored."""
        with self._lock:
            pending, self._pending = self._pending, []
        scored = 0
        for chunk in _chunks(self.bucket, pending):
            try:
                n = self.admin.post_losses(self.bucket, chunk)
            except GatewayError as e:
                with self._lock:
                    self.failures += 1
                if self.strict:
                    raise
                warnings.warn("s3cached: %d minibatches of losses not posted: %s"
                              % (len(chunk), e), RuntimeWarning, stacklevel=2)
                continue
            scored += n
            with self._lock:
                self.scored += n
                self.posts += 1
        return scored

    @property
    def pending(self):
        """Minibatches buffered, not yet posted."""
        return len(self._pending)

    def close(self):
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.flush()

    def _key(self, k):
        if isinstance(k, str):
            return k
        if isinstance(k, bytes):
            return k.decode("utf-8")
        if self.keys is not None and not isinstance(k, bool):
            try:
                return self.keys[operator.index(k)]  # ints, numpy and 0-d tensor integers
            except TypeError:
                pass
        raise TypeError("sample %r is not a key%s" % (
            k, "" if self.keys is None else " nor an index into keys"))


def _minibatch_bytes(bucket, mb):
    """An upper bound of the JSON size of one minibatch (a loss takes at most 24 bytes)."""
    return len(json.dumps(bucket)) + 32 + sum(len(json.dumps(k)) + 26 for k in mb)


def _chunks(bucket, minibatches):
    """Splits minibatches into bodies within the gateway's limits."""
    chunk, size, samples = [], 0, 0
    for mb in minibatches:
        mb_size = _minibatch_bytes(bucket, mb)
        if chunk and (len(chunk) >= MAX_MINIBATCHES or samples + len(mb) > MAX_SAMPLES
                      or size + mb_size > MAX_BODY_BYTES):
            yield chunk
            chunk, size, samples = [], 0, 0
        chunk.append(mb)
        size += mb_size
        samples += len(mb)
    if chunk:
        yield chunk
