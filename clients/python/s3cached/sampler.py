"""GatewaySampler: a sampler that tells the gateway its plan and follows the gateway's order.

    sampler = GatewaySampler("demo", keys=keys, num_epochs=3, seed=42)
    loader = DataLoader(S3Dataset("demo"), batch_size=32, sampler=sampler, num_workers=4)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for keys, samples in loader: ...

It registers a sampling-plan manifest (docs/manifests.md) so the gateway prefetches
ahead of the trainer and plans evictions by the future, and yields, each epoch, the
order the gateway planned: GET /_s3cached/manifests/{id}/order?epoch=E. That order
is the documented deterministic shuffle (s3cached.order) with DistributedSampler's
split over ranks; it is fetched once per epoch and kept.
"""
import collections
import threading
import time
import warnings

from . import _torch
from .admin import Admin, GatewayError
from .order import SEED_MAX, check_sampling, epoch_order, num_samples

__all__ = ["GatewaySampler"]

_ORDERS_KEPT = 2  # epochs whose order is kept: the current one and one more


class _GatewaySamplerCore:
    """The sampler's logic; GatewaySampler adds torch's Sampler as a base when present.

    Parameters:
      bucket        the bucket the dataset lives in.
      keys, prefix  the dataset, exactly one of them: a list of unique keys (dataset
                    index i is keys[i]), or every key under a prefix as the gateway
                    lists it (ascending by bytes).
      num_epochs    how many epochs one manifest plans (1..1000). Training longer is
                    fine: set_epoch() past the plan registers the next window of
                    num_epochs epochs (seed + first epoch keeps the order the same).
      seed, shuffle, drop_last
                    as DistributedSampler; the shuffle is the gateway's own (see
                    s3cached.order), the same seed gives the same order everywhere.
      num_replicas (alias world_size), rank
                    the distributed split; default: from torch.distributed when it
                    is initialized, else 1 and 0.
      indices       False (default): yield keys, for a Dataset indexed by key
                    (S3Dataset). True: yield dataset indices (positions in `keys`,
                    or in the listed keys), for a Dataset indexed by integer.
      admin         an Admin, or None for Admin() from the environment, or False to
                    never contact the gateway (keys only): the order is computed
                    locally, nothing is prefetched.
      wait_warm     False, True, or a timeout in seconds: after registering a plan,
                    block until the gateway has warmed it (Admin.wait_warm).
      on_progress   callback(progress) while waiting for warmth.
      prefetch      sent with the manifest: False only tells the eviction policy.
      name          a label for the manifest.
      cache_aware   True: the gateway may order each epoch of this rank's share so that the
                    samples it holds are read first (every sample still once per epoch, each
                    rank its DistributedSampler share); see docs/manifests.md. The order is
                    then the gateway's alone: `verify` and `fallback` do not apply.
      job           a name for the job: the ranks of one job (same plan) join one plan at
                    the gateway by themselves; naming it makes the gateway refuse a rank
                    whose plan differs (docs/manifests.md, "Many readers").
      lazy          False (default): register at construction, so the gateway warms
                    up while the model is built; True: at the first iteration.
      verify        keys only: compare the gateway's order with the local one and
                    warn when they differ (costs a local shuffle per epoch).
      fallback      keys only: if the admin API fails, warn and use the locally
                    computed order instead of raising.
    """

    def __init__(self, bucket, keys=None, prefix=None, num_epochs=1, seed=0, shuffle=True,
                 num_replicas=None, rank=None, drop_last=False, admin=None, wait_warm=False,
                 world_size=None, indices=False, prefetch=True, name=None, lazy=False,
                 verify=False, fallback=False, on_progress=None, job=None,
                 cache_aware=False):
        if (keys is None) == (prefix is None):
            raise ValueError("give exactly one of keys= and prefix=")
        if world_size is not None and num_replicas is not None and world_size != num_replicas:
            raise ValueError("world_size and num_replicas disagree")
        if num_replicas is None:
            num_replicas = world_size
        if num_replicas is None or rank is None:
            dist = _torch.distributed_defaults() or (1, 0)
            num_replicas = dist[0] if num_replicas is None else num_replicas
            rank = dist[1] if rank is None else rank
        if not isinstance(bucket, str) or not bucket:
            raise ValueError("bucket must be a non-empty string")
        if not isinstance(num_epochs, int) or not 1 <= num_epochs <= 1000:
            raise ValueError("num_epochs must be an integer in 1..1000, not %r" % (num_epochs,))
        self.bucket = bucket
        self.prefix = prefix
        self.keys = None
        if keys is not None:
            self.keys = [str(k) for k in keys]
            _check_unique(self.keys)
            check_sampling(len(self.keys), num_replicas, rank, seed, drop_last)
        else:
            if not isinstance(prefix, str):
                raise ValueError("prefix must be a string")
            check_sampling(1, num_replicas, rank, seed, False)
        self.num_epochs = num_epochs
        self.seed = seed
        self.shuffle = bool(shuffle)
        self.num_replicas = num_replicas
        self.rank = rank
        self.drop_last = bool(drop_last)
        self.indices = bool(indices)
        self.prefetch = bool(prefetch)
        self.name = name
        self.job = job
        self.cache_aware = bool(cache_aware)
        if self.cache_aware and (admin is False or fallback):
            raise ValueError("cache_aware needs the gateway's order: not with admin=False or "
                             "fallback=True")
        self.verify = bool(verify)
        self.fallback = bool(fallback)
        self.wait_warm = wait_warm
        self.on_progress = on_progress
        self.offline = admin is False
        if self.offline and self.keys is None:
            raise ValueError("admin=False (offline) needs keys=: a prefix is listed by the gateway")
        self.admin = None if self.offline else (admin if admin is not None else Admin())
        self.epoch = 0
        self.manifest = None       # the reply of the registration of the current plan
        self.window_start = 0      # the first epoch the current plan covers
        self._iterated = False     # the current plan has been read from
        self._orders = collections.OrderedDict()
        self._listed_len = None    # prefix: samples per epoch, once listed
        self._lock = threading.RLock()
        if not lazy and not self.offline:
            self.register()

    # ---- the plan ------------------------------------------------------------------

    @property
    def manifest_id(self):
        """The id of the current manifest ("m7"), registering it if need be; None offline."""
        if self.offline:
            return None
        with self._lock:
            if self.manifest is None:
                self.register()
            return self.manifest["id"] if self.manifest is not None else None

    def manifest_body(self, first_epoch=0):
        """The manifest this sampler posts for a plan starting at first_epoch."""
        seed = self.seed
        if self.shuffle:
            seed = self.seed + first_epoch  # epoch e of this plan is epoch first_epoch + e
            if seed > SEED_MAX:
                raise ValueError("seed + epoch exceeds %d" % SEED_MAX)
        body = {"bucket": self.bucket, "num_epochs": self.num_epochs, "shuffle": self.shuffle,
                "seed": seed, "world_size": self.num_replicas, "rank": self.rank,
                "drop_last": self.drop_last, "prefetch": self.prefetch}
        if self.keys is not None:
            body["keys"] = self.keys
        else:
            body["prefix"] = self.prefix
        if self.name is not None:
            body["name"] = self.name
        if self.job is not None:
            body["job"] = self.job
        if self.cache_aware:
            body["cache_aware"] = True
        return body

    def register(self, first_epoch=None):
        """Registers the plan starting at first_epoch (default: the current epoch),
        canceling the plan this sampler registered before. Returns the reply."""
        if self.offline:
            return None
        with self._lock:
            first = self.epoch if first_epoch is None else first_epoch
            body = self.manifest_body(first)
            old = self.manifest
            try:
                reply = self.admin.create_manifest(body)
            except GatewayError as e:
                if not self._may_fall_back(e):
                    raise
                return None
            self.manifest = reply
            self.window_start = first
            self._iterated = False
            self._orders.clear()
            if old is not None:
                self._cancel_quietly(old["id"])
            if self.wait_warm:
                timeout = None if self.wait_warm is True else float(self.wait_warm)
                self.admin.wait_warm(reply["id"], timeout=timeout, callback=self.on_progress)
            return reply

    def progress(self):
        """The gateway's progress of the current plan (Admin.manifest)."""
        return self.admin.manifest(self.manifest_id)

    def close(self):
        """Cancels the current plan at the gateway (cached objects stay cached)."""
        with self._lock:
            if self.manifest is not None:
                self._cancel_quietly(self.manifest["id"])
                self.manifest = None
                self._orders.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _cancel_quietly(self, manifest_id):
        try:
            self.admin.cancel(manifest_id)
        except GatewayError as e:
            if e.code != "NotFound":
                warnings.warn("s3cached: could not cancel manifest %s: %s" % (manifest_id, e),
                              RuntimeWarning, stacklevel=3)

    def _may_fall_back(self, err):
        if not self.fallback or self.keys is None:
            return False
        warnings.warn("s3cached: the admin API failed (%s); using the locally computed order "
                      "(nothing is prefetched)" % err, RuntimeWarning, stacklevel=4)
        return True

    # ---- epochs --------------------------------------------------------------------

    def set_epoch(self, epoch):
        """Sets the epoch the next iteration yields, as DistributedSampler.set_epoch.

        An epoch outside the registered plan registers a new plan starting there
        (so training may run longer than num_epochs, or resume from a checkpoint);
        so does any other epoch than the plan's first before the plan was read."""
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise ValueError("epoch must be a non-negative integer, not %r" % (epoch,))
        with self._lock:
            self.epoch = epoch
            if self.offline or self.manifest is None:
                return
            inside = self.window_start <= epoch < self.window_start + self.num_epochs
            if not inside or (not self._iterated and epoch != self.window_start):
                self.register(epoch)

    def __iter__(self):
        return iter(self._order(self.epoch))

    def __len__(self):
        if self.keys is not None:
            return num_samples(len(self.keys), self.num_replicas, self.drop_last)
        with self._lock:
            if self._listed_len is None:
                prog = self._wait_listed()
                self._listed_len = prog["accesses"] // prog["epochs"]
            return self._listed_len

    def epoch_order(self, epoch=None):
        """The keys (or indices) this rank reads in `epoch` (default: the current one),
        as the gateway planned them."""
        return list(self._order(epoch))

    def _order(self, epoch):
        """The kept order of an epoch (not to be modified)."""
        with self._lock:
            if epoch is None:
                epoch = self.epoch
            if epoch in self._orders:
                self._orders.move_to_end(epoch)
                order = self._orders[epoch]
            else:
                order = self._fetch(epoch)
                self._orders[epoch] = order
                while len(self._orders) > _ORDERS_KEPT:
                    self._orders.popitem(last=False)
            if epoch == self.epoch:
                self._iterated = True
            return order

    def local_order(self, epoch=None):
        """keys only: the order computed locally (s3cached.order), as epoch_order yields it."""
        if self.keys is None:
            raise ValueError("the local order needs keys=: a prefix is listed by the gateway")
        idx = epoch_order(len(self.keys), self.epoch if epoch is None else epoch,
                          shuffle=self.shuffle, seed=self.seed, world_size=self.num_replicas,
                          rank=self.rank, drop_last=self.drop_last)
        return idx if self.indices else [self.keys[i] for i in idx]

    def _fetch(self, epoch):
        if self.offline:
            return self.local_order(epoch)
        if self.manifest is None and self.register() is None:  # failed, falling back
            return self.local_order(epoch)
        if not self.window_start <= epoch < self.window_start + self.num_epochs:
            # Only set_epoch() moves the plan; a look at another epoch does not.
            if self.keys is not None:
                return self.local_order(epoch)
            raise ValueError("epoch %d is outside the registered plan (epochs %d..%d): "
                             "set_epoch(%d) first" % (epoch, self.window_start,
                                                      self.window_start + self.num_epochs - 1,
                                                      epoch))
        try:
            if self.keys is None or self.manifest.get("state") == "parsing":
                self._wait_listed()  # a prefix listed, a large plan parsed
            reply = self.admin.order(self.manifest["id"], epoch - self.window_start)
        except GatewayError as e:
            if not self._may_fall_back(e):
                raise
            return self.local_order(epoch)
        order = reply["indices"] if self.indices else reply["keys"]
        if self.verify and self.keys is not None and not self.cache_aware:
            local = self.local_order(epoch)
            if local != order:
                warnings.warn("s3cached: the gateway's order for epoch %d differs from the "
                              "documented one computed locally; following the gateway's"
                              % epoch, RuntimeWarning, stacklevel=3)
        return order

    def _wait_listed(self, interval=0.1):
        """Waits for a prefix plan's listing (or a large plan's parsing) to end; returns its
        progress."""
        mid = self.manifest_id
        while True:
            prog = self.admin.manifest(mid)
            if prog["state"] == "failed":
                raise GatewayError(None, "ManifestFailed", "manifest %s failed: %s"
                                   % (mid, prog.get("error")))
            if prog["state"] == "canceled":
                raise GatewayError(None, "ManifestCanceled", "manifest %s was canceled" % mid)
            if prog["state"] not in ("listing", "parsing") and prog.get("epochs"):
                return prog
            time.sleep(interval)

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self):
        what = ("%d keys" % len(self.keys)) if self.keys is not None else "prefix %r" % self.prefix
        return ("GatewaySampler(bucket=%r, %s, epoch=%d, rank=%d/%d, manifest=%s)"
                % (self.bucket, what, self.epoch, self.rank, self.num_replicas,
                   self.manifest["id"] if self.manifest else None))


def _check_unique(keys):
    seen = {}
    for i, k in enumerate(keys):
        if not k:
            raise ValueError("keys[%d] is empty" % i)
        if k in seen:
            raise ValueError("keys[%d] (%r) repeats keys[%d]; the keys of a dataset must be "
                             "unique" % (i, k, seen[k]))
        seen[k] = i


if _torch.SamplerBase is object:
    class GatewaySampler(_GatewaySamplerCore):
        __doc__ = _GatewaySamplerCore.__doc__
else:
    class GatewaySampler(_GatewaySamplerCore, _torch.SamplerBase):
        __doc__ = _GatewaySamplerCore.__doc__
