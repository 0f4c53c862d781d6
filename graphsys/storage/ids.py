"""Node ids during ingest: the set of original ids of each entity type, collected batch by
batch in bounded memory (:class:`IdCollector`), and the sorted index that maps them to dense
node indices (:class:`IdIndex`); plus the normalisation of id columns as read
(:func:`id_column`, :func:`ids_array`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphsys.errors import InputError
from graphsys.storage import kernels

#: Largest id space, in slots per id, that gets a direct map from id to dense index (8 bytes
#: per slot; the ingest's routing table is another 8): sparser integer ids are looked up by a
#: binary search within a bucket of their high bits (:func:`kernels.id_buckets`, at most 8
#: bytes per node), so the maps cost at most 16 bytes per node each.
DIRECT_MAP_SLOTS = 2


class IdCollector:
    """The set of original ids of one entity type, built batch by batch.

    Integer ids in [0, cap) are marked in a bitmap (uint64 words; 4 MiB for 2^25 ids, so
    the random marks stay in cache); other integers go to sorted runs that are merged when
    they grow; any non-integer id turns the type into a string-id type (integers
    then compare by their decimal text).
    """

    def __init__(self, name: str, memory_limit: int, kernels: ModuleType = kernels):
        self.name = name
        self.kernels = kernels  # graphsys.storage.kernels, or its NumPy twins
        self.cap = min(2**32, max(memory_limit // 4, 1 << 20))
        self.seen = np.zeros(1 << 10, np.uint64)
        self.bitmap = True
        self.int_runs: list[np.ndarray] = []
        self.str_runs: list[pa.Array] = []
        self.is_string = False
        self._pending = 0
        self._compact_at = max(memory_limit // 32, 1 << 20)

    def add(self, ids: np.ndarray | pa.Array) -> None:
        if isinstance(ids, np.ndarray):
            if self.is_string:
                self.str_runs.append(pc.unique(pa.array(ids).cast(pa.large_string())))
                self._maybe_compact(len(ids))
                return
            if self.bitmap and len(ids):
                lo, hi = int(ids.min()), int(ids.max())
                if lo >= 0 and hi < self.cap:
                    if hi >= 64 * len(self.seen):
                        grown = np.zeros(max((hi >> 6) + 1, 2 * len(self.seen)), np.uint64)
                        grown[: len(self.seen)] = self.seen
                        self.seen = grown
                    self.kernels.mark_seen(ids, self.seen)
                    return
                self.bitmap = False
                self.int_runs.append(self.kernels.seen_ids(self.seen))
                self.seen = np.zeros(0, np.uint64)
            if not self.bitmap:
                self.int_runs.append(np.unique(ids))
                self._maybe_compact(len(ids))
        else:
            if not self.is_string:
                self._to_strings()
            self.str_runs.append(pc.unique(ids.cast(pa.large_string())))
            self._maybe_compact(len(ids))

    def _to_strings(self) -> None:
        ints = self._int_ids()
        self.is_string = True
        self.bitmap = False
        self.seen = np.zeros(0, np.uint64)
        self.int_runs = []
        self.str_runs = [pa.array(ints).cast(pa.large_string())] if len(ints) else []

    def _maybe_compact(self, n: int) -> None:
        self._pending += n
        if self._pending >= self._compact_at:
            self._pending = 0
            if self.is_string:
                self.str_runs = [pc.unique(pa.chunked_array(self.str_runs,
                                                            pa.large_string()).combine_chunks())]
            else:
                self.int_runs = [np.unique(np.concatenate(self.int_runs))]

    def _int_ids(self) -> np.ndarray:
        if self.bitmap:
            return self.kernels.seen_ids(self.seen)
        return np.unique(np.concatenate(self.int_runs)) if self.int_runs else np.zeros(0, np.int64)

    def finish(self) -> IdIndex:
        if self.is_string:
            arr = (pa.chunked_array(self.str_runs, pa.large_string()).combine_chunks()
                   if self.str_runs else pa.array([], pa.large_string()))
            arr = pc.unique(arr)
            arr = arr.take(pc.sort_indices(arr))
            return IdIndex(self.name, arr, None, self.kernels)
        ids = self._int_ids()
        dense = None
        if self.bitmap and len(ids) and int(ids[-1]) + 1 <= DIRECT_MAP_SLOTS * len(ids):
            dense = np.full(int(ids[-1]) + 1, -1, np.int64)
            dense[ids] = np.arange(len(ids), dtype=np.int64)
        return IdIndex(self.name, ids, dense, self.kernels)


@dataclass
class IdIndex:
    """Sorted unique ids of one entity type and the map from original id to dense index."""

    name: str
    ids: np.ndarray | pa.Array
    dense: np.ndarray | None  # direct lookup table for small non-negative integer ids
    #: the kernels that look ids up: graphsys.storage.kernels, or its NumPy twins
    kernels: ModuleType = field(default=kernels, repr=False, compare=False)
    #: :func:`kernels.id_buckets` of integer ids without a direct map (None without one)
    buckets: tuple | None = field(init=False, default=None, repr=False)

    def __post_init__(self):
        if not self.is_string and self.dense is None and len(self.ids):
            self.buckets = self.kernels.id_buckets(self.ids)

    @property
    def is_string(self) -> bool:
        return not isinstance(self.ids, np.ndarray)

    def __len__(self) -> int:
        return len(self.ids)

    def lookup(self, values: np.ndarray | pa.Array) -> np.ndarray:
        """Dense index (int64) of every id; every id must be present."""
        if self.is_string:
            if isinstance(values, np.ndarray):
                values = pa.array(values).cast(pa.large_string())
            out = self.kernels.lookup_strings(self.ids, values)
        elif self.dense is not None:
            out = self.kernels.gather(self.dense, values,
                                      np.empty(len(values), self.dense.dtype))
        else:
            out = self.kernels.lookup_ints(self.ids, values, self.buckets)
        return out


def id_column(arr: pa.Array | pa.ChunkedArray, role: str, path: Path) -> pa.Array:
    """An id column as read: integers (int8..int64, uint8..uint64 within int64) or strings
    (dictionary-encoded ones decoded); any other type is a one-line :class:`InputError`
    (float, bool, binary, list ids are not guessed at: see docs/format.md)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_unsigned_integer(arr.type) and len(arr) and arr.type.bit_width == 64:
        big = pc.fill_null(pc.greater(arr, pa.scalar(2**63 - 1, pa.uint64())), False)
        if pc.any(big).as_py():
            i = int(np.flatnonzero(big.to_numpy(zero_copy_only=False))[0])
            raise InputError(f"{role} id {arr[i].as_py()} (row {i} of a batch) does not fit "
                             f"int64", path=path)
    if not (pa.types.is_integer(arr.type) or pa.types.is_string(arr.type)
            or pa.types.is_large_string(arr.type)):
        raise InputError(f"{role} column has type {arr.type}: ids must be integers or "
                         f"strings", path=path)
    return arr


#: Integer text of at most 18 significant digits (always within int64), surrounding
#: whitespace allowed (as the text readers parse an integer column).
_INT_TEXT = r"^\s*[+-]?0*[0-9]{1,18}\s*$"


def ids_array(arr: pa.Array) -> np.ndarray | pa.Array:
    """int64 NumPy ids when every value is an integer, else the ids as a large_string array
    in which integer text is canonical (``"01"``, ``"+1"``, ``" 1"`` and ``1`` are the same
    node in both cases: the result does not depend on the other ids of the input; a string
    id that is not integer text keeps its whitespace)."""
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        if pc.any(pc.starts_with(arr, "+")).as_py():
            arr = pc.replace_substring_regex(arr, r"^\+([0-9])", r"\1")  # "+1" is 1
        try:
            # Arrow's cast also reads hexadecimal text ("0x10" as 16): such text is a string
            # id whatever the rest of the column holds
            if pc.any(pc.match_substring_regex(arr, r"^\s*[+-]?0[xX]")).as_py():
                raise pa.ArrowInvalid("hexadecimal text")
            return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            arr = arr.cast(pa.large_string())
            is_int = pc.fill_null(pc.match_substring_regex(arr, _INT_TEXT), False)
            if not pc.any(is_int).as_py():
                return arr
            text = pc.utf8_trim_whitespace(pc.if_else(is_int, arr,
                                                      pa.scalar("0", pa.large_string())))
            ints = pc.cast(pc.replace_substring_regex(text, r"^\+", ""), pa.int64())
            if pc.all(is_int).as_py():  # integers with whitespace: still an integer type
                return ints.to_numpy(zero_copy_only=False)
            return pc.if_else(is_int, pc.cast(ints, pa.large_string()), arr)
    return arr.cast(pa.large_string())


def take_rows(ids: np.ndarray | pa.Array, mask: np.ndarray):
    """The ids at the True rows of ``mask`` (same kind as ``ids``)."""
    return ids[mask] if isinstance(ids, np.ndarray) else ids.filter(pa.array(mask))
