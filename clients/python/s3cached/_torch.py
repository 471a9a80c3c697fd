"""torch, when it is importable: the base classes of the sampler and the dataset.

Nothing here is required: without torch (or with S3CACHED_NO_TORCH=1, which also
spares the import time) the sampler and the dataset are plain classes with the
same interface, usable by any loop that calls iter() and indexing.
"""
import os

torch = None
SamplerBase = object
DatasetBase = object

if os.environ.get("S3CACHED_NO_TORCH", "") not in ("1", "true", "yes"):
    try:
        import torch  # noqa: F811
        from torch.utils.data import Dataset as DatasetBase  # noqa: F811
        from torch.utils.data import Sampler as SamplerBase  # noqa: F811
    except ImportError:
        torch = None
        SamplerBase = object
        DatasetBase = object


def distributed_defaults():
    """(world_size, rank) of the initialized torch.distributed process group, else None."""
    if torch is None:
        return None
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return None


def to_list(x):
    """A tensor, numpy array or any iterable as a flat Python list."""
    if hasattr(x, "detach"):  # a torch tensor (possibly on a GPU, possibly requiring grad)
        x = x.detach()
        if hasattr(x, "reshape"):
            x = x.reshape(-1)
        return x.cpu().tolist()
    if hasattr(x, "tolist") and hasattr(x, "reshape"):  # numpy
        return x.reshape(-1).tolist()
    return list(x)
