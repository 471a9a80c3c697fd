"""The gateway's deterministic sampling order, computed locally in pure Python.

This is the contract of docs/manifests.md ("The deterministic order"): the gateway
(manifest/plan_order.c), this module and any other implementation derive the same
order from the same fields, so a trainer can check the gateway or work without it.

For each epoch e (0-based) over a dataset of n samples (indices 0..n-1):

1. perm = [0..n-1]; if shuffle, Fisher-Yates driven by splitmix64 seeded with
   seed + e: for i from n-1 down to 1, j = next() % (i + 1), swap perm[i], perm[j].
2. DistributedSampler split: with drop_last and n % world_size != 0 the
   permutation is cut to (n // world_size) * world_size; otherwise it is padded to
   ceil(n / world_size) * world_size by repeating it from its start.
3. Rank r reads perm[r], perm[r + world_size], ...

The shuffle is the gateway's own, not torch.randperm: the same seed gives a
different permutation than torch's DistributedSampler, but the split is the same.
"""

M64 = (1 << 64) - 1
SEED_MAX = (1 << 63) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

__all__ = ["epoch_order", "epoch_keys", "permutation", "num_samples", "splitmix64",
           "check_sampling"]


def splitmix64(state):
    """One step of splitmix64: returns (new_state, output), all modulo 2**64."""
    state = (state + _GOLDEN) & M64
    z = state
    z = ((z ^ (z >> 30)) * _MIX1) & M64
    z = ((z ^ (z >> 27)) * _MIX2) & M64
    return state, z ^ (z >> 31)


def permutation(n, seed):
    """The shuffled permutation of range(n) for generator seed `seed` (seed + epoch)."""
    perm = list(range(n))
    state = seed & M64
    # splitmix64 inlined: this loop is the whole cost of a local order.
    for i in range(n - 1, 0, -1):
        state = (state + _GOLDEN) & M64
        z = state
        z = ((z ^ (z >> 30)) * _MIX1) & M64
        z = ((z ^ (z >> 27)) * _MIX2) & M64
        j = (z ^ (z >> 31)) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_sampling(n, world_size=1, rank=0, seed=0, drop_last=False):
    """Raises ValueError for fields the gateway would refuse (InvalidField)."""
    if not _is_int(n) or n < 1:
        raise ValueError("the dataset must have at least one sample (n=%r)" % (n,))
    if not _is_int(world_size) or not 1 <= world_size <= 1000000:
        raise ValueError("world_size must be an integer in 1..1000000, not %r" % (world_size,))
    if not _is_int(rank) or not 0 <= rank < world_size:
        raise ValueError("rank must be an integer in 0..world_size-1 (world_size is %d), not %r"
                         % (world_size, rank))
    if not _is_int(seed) or not 0 <= seed <= SEED_MAX:
        raise ValueError("seed must be an integer in 0..%d, not %r" % (SEED_MAX, seed))
    if drop_last and n < world_size:
        raise ValueError("drop_last with world_size %d leaves no samples of the %d keys to any rank"
                         % (world_size, n))


def num_samples(n, world_size=1, drop_last=False):
    """Samples per rank per epoch: len() of a DistributedSampler with these fields."""
    if drop_last and n % world_size:
        return n // world_size
    return -(-n // world_size)


def epoch_order(n, epoch, shuffle=False, seed=0, world_size=1, rank=0, drop_last=False):
    """The dataset indices rank `rank` reads in epoch `epoch`, in order.

    >>> epoch_order(10, 0, shuffle=True, seed=42, world_size=3, rank=1)
    [9, 6, 2, 0]
    """
    check_sampling(n, world_size, rank, seed, drop_last)
    if not _is_int(epoch) or epoch < 0:
        raise ValueError("epoch must be a non-negative integer, not %r" % (epoch,))
    perm = permutation(n, seed + epoch) if shuffle else None
    per_rank = num_samples(n, world_size, drop_last)
    positions = range(rank, rank + per_rank * world_size, world_size)
    if perm is None:
        return [k % n for k in positions]
    return [perm[k % n] for k in positions]


def epoch_keys(keys, epoch, **sampling):
    """epoch_order() over a key list: the keys rank `rank` reads in epoch `epoch`."""
    keys = list(keys)
    return [keys[i] for i in epoch_order(len(keys), epoch, **sampling)]
