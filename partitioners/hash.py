"""Hash partitioning, the PyTorch-BigGraph default: partition = hash(original id, seed) mod P."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pyarrow as pa

from partitioners.base import PartitionContext, Partitioner

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)

#: Ids hashed per NumPy pass: two uint64 buffers of this length stay in L2 cache.
_CHUNK = 1 << 16


def seed_key(seed: int) -> np.uint64:
    """The 64-bit key that ``seed`` contributes to every hash: one splitmix64 step of the seed.

    ``seed`` is any Python int; it is taken modulo 2**64.
    """
    z = (seed + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * int(_MIX1)) & _MASK64
    z = ((z ^ (z >> 27)) * int(_MIX2)) & _MASK64
    return np.uint64(z ^ (z >> 31))


def mix_inplace(z: np.ndarray, key: np.uint64, tmp: np.ndarray) -> None:
    """``z <- fmix(z ^ key)``, the splitmix64 finalizer, wrapping uint64 arithmetic.

    ``z`` and ``tmp`` are uint64 arrays of one shape; ``tmp`` is scratch.
    """
    np.bitwise_xor(z, key, out=z)
    for shift, mult in ((30, _MIX1), (27, _MIX2)):
        np.right_shift(z, np.uint64(shift), out=tmp)
        np.bitwise_xor(z, tmp, out=z)
        np.multiply(z, mult, out=z)
    np.right_shift(z, np.uint64(31), out=tmp)
    np.bitwise_xor(z, tmp, out=z)


def hash_uint64(values: np.ndarray, seed: int, num_partitions: int, out: np.ndarray) -> None:
    """Write ``fmix(values ^ seed_key(seed)) mod num_partitions`` into ``out``.

    Parameters
    ----------
    values : numpy.ndarray
        uint64, shape ``(n,)``: the 64-bit images of the ids.
    seed : int
        The hash seed.
    num_partitions : int
        ``P >= 1``.
    out : numpy.ndarray
        int32, shape ``(n,)``, written in place.
    """
    key = seed_key(seed)
    power_of_two = num_partitions & (num_partitions - 1) == 0
    p = np.uint64(num_partitions - 1 if power_of_two else num_partitions)
    z = np.empty(min(_CHUNK, len(values)), dtype=np.uint64)
    tmp = np.empty_like(z)
    for start in range(0, len(values), _CHUNK):
        chunk = values[start:start + _CHUNK]
        zc, tc = z[:len(chunk)], tmp[:len(chunk)]
        np.copyto(zc, chunk)
        mix_inplace(zc, key, tc)
        if power_of_two:  # z mod P, without the (slow) 64-bit division
            np.bitwise_and(zc, p, out=zc)
        else:
            np.remainder(zc, p, out=zc)
        out[start:start + len(chunk)] = zc


@numba.njit(cache=True, nogil=True)
def _fnv1a_64(offsets: np.ndarray, data: np.ndarray, out: np.ndarray) -> None:
    """FNV-1a 64 of the byte ranges ``data[offsets[i]:offsets[i+1]]`` into ``out[i]`` (uint64)."""
    for i in range(out.shape[0]):
        h = _FNV_OFFSET
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * _FNV_PRIME
        out[i] = h


def fnv1a_strings(arr: pa.Array) -> np.ndarray:
    """FNV-1a 64 of the UTF-8 bytes of every string of ``arr``: uint64 array of shape (len(arr),).

    ``arr`` is a pyarrow ``string`` (int32 offsets) or ``large_string`` (int64 offsets) array,
    possibly a slice (non-zero ``arr.offset``); its buffers are read in place, without copies.
    """
    if arr.null_count:
        raise ValueError(f"ids must not be null; got {arr.null_count} null id(s)")
    offset_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    _, offsets_buf, data_buf = arr.buffers()
    n = len(arr)
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[arr.offset:arr.offset + n + 1] \
        if n else np.zeros(1, dtype=offset_type)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None \
        else np.zeros(0, dtype=np.uint8)
    out = np.empty(n, dtype=np.uint64)
    _fnv1a_64(offsets, data, out)
    return out


class HashPartitioner(Partitioner):
    """partition(id) = fmix(h(id) ^ seed_key(seed)) mod P, where fmix is the splitmix64 finalizer.

    ``h(id)`` is the id's two's-complement bit pattern for integer ids and the FNV-1a 64 hash
    of its UTF-8 bytes for string ids. The partition of a node depends only on its original id,
    the seed and P: not on the other ids, their order, or the edges, so no adjacency or degree
    pass is made. Balance is statistical: each partition gets N/P ± O(sqrt(N/P)) nodes.

    Memory: the int32 output plus, for string ids, one uint64 per id; integer ids are hashed in
    cache-sized chunks.

    Parameters
    ----------
    num_partitions : int
        ``P >= 1``.
    seed : int, default 0
        Changes every node's partition; the same seed gives the same partitions.

    Examples
    --------
    >>> import numpy as np
    >>> from partitioners import EdgeListContext, HashPartitioner
    >>> hashed = HashPartitioner(4)
    >>> np.bincount(hashed.assign(EdgeListContext(10000))).tolist()
    [2535, 2460, 2489, 2516]

    A node's partition depends on its id alone, not on which other ids are present:

    >>> hashed.assign(EdgeListContext(np.array([10, 20, 30]))).tolist()
    [3, 2, 3]
    >>> hashed.assign(EdgeListContext(np.array([20, 30]))).tolist()
    [2, 3]
    """

    name = "hash"

    def assign(self, ctx: PartitionContext) -> np.ndarray:
        out = np.empty(ctx.num_nodes, dtype=np.int32)
        ids = ctx.ids
        start = 0
        for chunk in ids.chunks if isinstance(ids, pa.ChunkedArray) else [ids]:
            values = self._id_bits(chunk)
            hash_uint64(values, self.seed, self.num_partitions, out[start:start + len(values)])
            start += len(values)
        if start != ctx.num_nodes:
            raise ValueError(f"ctx.ids has {start} ids but ctx.num_nodes is {ctx.num_nodes}")
        return out

    @staticmethod
    def _id_bits(ids: Any) -> np.ndarray:
        """The 64-bit images of ``ids``: uint64 array of shape (len(ids),)."""
        if isinstance(ids, pa.Array) and (pa.types.is_string(ids.type)
                                          or pa.types.is_large_string(ids.type)):
            return fnv1a_strings(ids)
        values = np.asarray(ids)
        if not np.issubdtype(values.dtype, np.integer):
            raise TypeError(f"hash partitioner needs integer or pyarrow string ids, "
                            f"got {getattr(ids, 'type', values.dtype)}")
        return values.astype(np.int64, copy=False).view(np.uint64)
