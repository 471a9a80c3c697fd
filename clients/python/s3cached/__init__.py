"""s3cached: the Python side of the s3cached caching gateway.

  Admin                the admin API (/_s3cached/): stats, manifests, orders, importance
  GatewayError         what every refusal raises (status, code, message)
  GatewaySampler       a (torch) Sampler that registers a sampling plan and yields the
                       gateway's order, with DistributedSampler's set_epoch semantics
  S3Dataset            a map-style dataset reading objects through the gateway (boto3)
  ImportanceReporter   posts per-sample losses for the `importance` policy
  order.epoch_order    the documented deterministic order, computed locally

Standard library only; torch is used when importable (the sampler and the dataset
then subclass torch.utils.data.Sampler and Dataset), boto3 only by S3Dataset. The
sampler, dataset and reporter are imported on first use, so `import s3cached` does
not import torch.
"""
from .admin import Admin, GatewayError, GatewayUnreachable, resolve_endpoint
from .order import epoch_keys, epoch_order

__version__ = "0.1.0"

__all__ = ["Admin", "GatewayError", "GatewayUnreachable", "GatewaySampler", "S3Dataset",
           "ImportanceReporter", "epoch_order", "epoch_keys", "resolve_endpoint"]

_LAZY = {"GatewaySampler": "sampler", "S3Dataset": "dataset",
         "ImportanceReporter": "importance"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        mod = importlib.import_module("." + _LAZY[name], __name__)
        value = getattr(mod, name)
        globals()[name] = value
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
