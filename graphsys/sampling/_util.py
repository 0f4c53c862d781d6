"""Seed validation, derived RNG seeds and per-thread scratch arrays for the samplers."""

from __future__ import annotations

import operator
import threading
from contextlib import contextmanager

import numpy as np
import torch

from graphsys.errors import GraphsysError, ParameterError, check_count, first_bool

_MASK63 = (1 << 63) - 1
_NEGATIVE = 0xD6E8FEB86659FD93   # the word a negative seed part mixes after its own
_local = threading.local()


def as_seed_array(seed_nodes, num_nodes: int, what: str = "seed") -> np.ndarray:
    """``seed_nodes`` (tensor, array or sequence of ints) as int64 NumPy (S,), checked to lie
    in ``[0, num_nodes)``; raises :class:`GraphsysError` naming the first bad id."""
    if isinstance(seed_nodes, torch.Tensor):
        if seed_nodes.is_floating_point() or seed_nodes.dtype == torch.bool:
            raise GraphsysError(f"{what} ids must be integers, got dtype {seed_nodes.dtype}")
        arr = seed_nodes.detach().cpu().numpy()
    else:
        arr = np.asarray(seed_nodes)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise GraphsysError(f"{what} ids must be integers, got {arr.dtype}")
        if first_bool(seed_nodes) is not None:  # np.asarray([True, 2]) is [1, 2]
            raise GraphsysError(f"{what} ids must be integers, got a bool among them")
    arr = arr.reshape(-1)
    if arr.dtype.kind == "u":   # unsigned ids are checked before the cast could wrap them
        bad = arr >= num_nodes
    else:
        arr = np.ascontiguousarray(arr, dtype=np.int64)
        bad = (arr < 0) | (arr >= num_nodes)
    if bad.any():
        valid = f"valid: 0..{num_nodes - 1}" if num_nodes else "it has no nodes"
        raise GraphsysError(f"{what} id {int(arr[np.flatnonzero(bad)[0]])} is outside the "
                            f"graph ({valid})")
    return np.ascontiguousarray(arr, dtype=np.int64)


def seed_entropy(seed, name: str | None = None) -> int:
    """``seed``, an integer in [-2**63, 2**64) (NumPy and torch integers too), as a distinct
    non-negative int (a negative ``s`` as ``2**64 + ~s``: seed -1 is not seed 2**64 - 1):
    the entropy of ``numpy.random.default_rng`` and of :func:`derive_seed`. A float, a bool,
    None or a string (``rng_seed=1.5`` drew seed 1's sample), or an integer outside the
    range (``2**64`` drew seed 0's), is refused in one line (a :class:`ParameterError`
    naming ``name`` when given)."""
    try:
        if isinstance(seed, (bool, np.bool_)):
            raise TypeError
        p = operator.index(seed)
        if not -(1 << 63) <= p < 1 << 64:
            raise TypeError
    except TypeError:
        if name is not None:
            raise ParameterError(name, f"must be an integer in [-2**63, 2**64) (a random "
                                       f"seed), got {seed!r}") from None
        raise GraphsysError(f"a random seed must be an integer in [-2**63, 2**64), got "
                            f"{seed!r}") from None
    return p if p >= 0 else (1 << 64) + ~p


def kernel_seed(rng_seed) -> int:
    """``rng_seed`` of a kernel that seeds its draws with it as given (an int64), checked
    to be an integer in ``[0, 2**63)`` (True read as 1, ``2**63`` as 0, -1 as ``2**63-1``)."""
    return check_count("rng_seed", rng_seed, minimum=0, maximum=(1 << 63) - 1)


def derive_seed(*parts: int) -> int:
    """A 63-bit seed from integers (e.g. base seed, epoch, batch, layer), each checked and
    read by :func:`seed_entropy` (a negative part mixes a marker word after its low 64
    bits); stable across runs and platforms."""
    h = 0x243F6A8885A308D3
    for p in parts:
        e = seed_entropy(p)
        for word in ((e, _NEGATIVE) if e >> 64 else (e,)):
            h = (h ^ (word & ((1 << 64) - 1))) * 0x100000001B3 & ((1 << 64) - 1)
            h ^= h >> 29
            h = h * 0xBF58476D1CE4E5B9 & ((1 << 64) - 1)
            h ^= h >> 32
    return h & _MASK63


def _per_thread(kind: str, key, make) -> np.ndarray:
    """This thread's array ``key`` of the cache ``kind``, made by ``make()`` on first use."""
    cache = vars(_local).setdefault(kind, {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def scratch(num_nodes: int) -> np.ndarray:
    """This thread's int32 array of ``num_nodes`` entries, all -1 (kernels restore it);
    int32 halves the cache footprint of the random accesses of relabeling."""
    return _per_thread("arrays", num_nodes, lambda: np.full(num_nodes, -1, np.int32))


def visit_counters(chunks: int, num_nodes: int) -> np.ndarray:
    """This thread's int32 zero array (chunks, num_nodes) of walk visit counters (the
    kernels leave it zeroed)."""
    return _per_thread("counters", (chunks, num_nodes),
                       lambda: np.zeros((chunks, num_nodes), np.int32))


@contextmanager
def serial_kernels():
    """Within the block, samplers called with ``parallel=None`` in this thread run their
    numba kernels on this thread alone: a loader's worker threads are the parallelism, and
    numba's OpenMP threads, spin-waiting after each parallel call, would take the cores
    from torch's intra-op threads."""
    before = getattr(_local, "serial", False)
    _local.serial = True
    try:
        yield
    finally:
        _local.serial = before


def run_parallel(parallel: bool | None) -> bool:
    """``parallel`` as given, or for None: True unless inside :func:`serial_kernels`."""
    return not getattr(_local, "serial", False) if parallel is None else bool(parallel)
