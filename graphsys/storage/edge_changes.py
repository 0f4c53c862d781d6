"""Change sets: deletions and weight updates stored as edge sets, applied where a view of
several edge sets is read.

A ``delete`` set lists ``(src, dst)`` pairs whose edges no longer exist, an ``update`` set
pairs with a new weight (:mod:`graphsys.storage.changes` writes them); each records its
*targets*, the edge sets it changes. A view (:mod:`graphsys.storage.edge_views`) that names
a change set reads every edge of its other members through the change sets it names, in
manifest order: a deleted pair's edges are dropped, an updated pair's get its weight (the
last update wins). A view's counts are the members' sums minus each delete set's recorded
removals, from the manifest alone; a time view counts again within its window
(:func:`removed_counts`). docs/format.md, "Change sets", gives the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import kernels, kernels_small
from graphsys.storage.format import MANIFEST, EdgeSet


@dataclasses.dataclass(frozen=True)
class BucketChange:
    """One change set's pairs in one bucket: sorted int64 keys (:func:`pair_keys`) and for an
    update the new weight of each."""

    name: str
    kind: str
    targets: frozenset[str]
    keys: np.ndarray
    weight: np.ndarray | None


#: Rows of a batch from which :func:`apply` matches them with the numba kernel
#: (:func:`graphsys.storage.kernels.pair_positions`); fewer take its NumPy twin, as numba's
#: start-up and the kernel's load would cost more than the work
PAIR_KERNEL_MIN_ROWS = 1 << 16


def pair_keys(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """One int64 per ``(src, dst)`` pair of local offsets (both below 2**31): ``src << 32 |
    dst``, ordered as the pairs are.

    Examples
    --------
    >>> pair_keys(np.array([0, 1]), np.array([3, 0])).tolist()
    [3, 4294967296]
    """
    return (np.asarray(src, np.int64) << 32) | np.asarray(dst, np.int64)


#: The most nodes whose pairs :func:`node_pair_keys` packs into one int64 ``u * n + v``
#: (``isqrt(2**63 - 1)``); beyond it that product wraps around, and two pairs shared a key
MAX_PACKED_NODES = 3_037_000_499


def node_pair_keys(u, v, n: int) -> np.ndarray:
    """One key per pair of node ids ``(u[k], v[k])`` below ``n``, ordered as the pairs are
    and equal only for equal pairs (for ``np.unique``, ``np.isin``, ``np.searchsorted``):
    int64 ``u * n + v`` up to :data:`MAX_PACKED_NODES` nodes, else a structured array of
    the two int64 ids.

    Examples
    --------
    >>> node_pair_keys(np.array([0, 1]), np.array([3, 0]), 4).tolist()
    [3, 4]
    >>> keys = node_pair_keys(np.array([2**31, 0]), np.array([0, 0]), 2**33)
    >>> len(np.unique(keys))  # u * n + v: 2**64 and 0 wrapped to one key
    2
    """
    u, v = np.asarray(u, np.int64), np.asarray(v, np.int64)
    if n <= MAX_PACKED_NODES:
        return u * n + v
    out = np.empty(u.shape, [("u", np.int64), ("v", np.int64)])
    out["u"], out["v"] = u, v
    return out


def change_members(manifest, names: Iterable[str]) -> list[str]:
    """The change sets among ``names``, in manifest order (the order they apply in)."""
    wanted = set(names)
    return [n for n, es in manifest.edge_sets.items() if n in wanted and es.change]


def check_targets(manifest, names: tuple[str, ...]) -> None:
    """Refuse, in one line, a view that names a change set without all of its targets."""
    for name in change_members(manifest, names):
        missing = [t for t in manifest.edge_sets[name].change.targets if t not in names]
        if missing:
            raise GraphsysError(f"edge set {name!r} changes {', '.join(map(repr, missing))}, "
                                f"which the view does not read: read it with its targets "
                                f"(or read the default view)")


def load_bucket(graph, name: str, i: int, j: int) -> BucketChange:
    """Change set ``name``'s pairs in bucket ``(i, j)`` (read from the stored graph, so a
    time view applies every change whatever its window), read once per stored
    :class:`~graphsys.storage.graph.Graph` (a view's CSR, then its CSC, and a repair's
    reading of the change share them)."""
    stored = getattr(graph, "stored", graph)
    cache = stored._mapped_indexes
    key = (name, "change-bucket", i, j)
    if key not in cache:
        es: EdgeSet = stored.manifest.edge_sets[name]
        bucket = stored.bucket(i, j, name)
        keys = pair_keys(bucket.src, bucket.dst) if bucket.num_edges else np.zeros(0, np.int64)
        weight = bucket.weight if es.change.kind == "update" and bucket.num_edges else None
        cache[key] = BucketChange(name, es.change.kind, frozenset(es.change.targets), keys,
                                  None if weight is None else np.asarray(weight, np.float32))
    return cache[key]


def global_keys(graph, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Change set ``name``'s pairs as global keys ``u * N + v`` over ``graph``'s ids
    (int64, in bucket order) and an update set's weights (float32; None for a delete
    set), read once per :class:`~graphsys.storage.graph.Graph` (the arrays are
    read-only, shared by every reader)."""
    cache = graph._mapped_indexes
    key = (name, "change-keys")
    if key not in cache:
        n = graph.num_nodes()
        off = np.asarray(graph.partition_offsets(), np.int64)
        keys, weights = [], []
        for i, j in sorted(graph.manifest.edge_sets[name].buckets):
            bc = load_bucket(graph, name, i, j)
            keys.append((off[i] + (bc.keys >> 32)) * n + off[j] + (bc.keys & 0xFFFFFFFF))
            if bc.weight is not None:
                weights.append(bc.weight)
        k = np.concatenate(keys) if keys else np.zeros(0, np.int64)
        w = None
        if graph.manifest.edge_sets[name].change.kind == "update":
            w = np.concatenate(weights) if weights else np.zeros(0, np.float32)
            w.flags.writeable = False
        k.flags.writeable = False
        cache[key] = (k, w)
    return cache[key]


def member_changes(graph, member: str, changes: list[str]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the change sets ``changes`` (in manifest order) do to edge set ``member``:
    sorted distinct global keys it loses, and those re-weighted (not lost) with the last
    weight each gets: ``(deleted, updated, updated_weight)``, int64, int64, float32."""
    deleted, updated, weights = [], [], []
    for c in changes:
        if member not in graph.manifest.edge_sets[c].change.targets:
            continue
        keys, w = global_keys(graph, c)
        (deleted if w is None else updated).append(keys)
        if w is not None:
            weights.append(w)
    gone = np.unique(np.concatenate(deleted)) if deleted else np.zeros(0, np.int64)
    keys, w = last_weights(updated, weights)
    keep = ~np.isin(keys, gone)
    return gone, keys[keep], w[keep]


def last_weights(keys: list, weights: list) -> tuple[np.ndarray, np.ndarray]:
    """The distinct sorted keys of ``keys`` (int64 arrays) and the last weight of
    ``weights`` (float32 arrays, one per key) each is given."""
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    k, w = np.concatenate(keys)[::-1], np.concatenate(weights)[::-1]
    uniq, first = np.unique(k, return_index=True)
    return uniq, w[first]


def apply(eb, member: str, changes: list[BucketChange], removed: dict[str, int] | None = None):
    """The record batch ``eb`` of edge set ``member`` through ``changes`` (in order): its
    deleted rows dropped, its updated rows re-weighted; ``eb`` itself when nothing
    applies. ``removed`` (when given) gets, per delete set, the rows it drops that no
    earlier one did."""
    mine = [c for c in changes if member in c.targets and len(c.keys)]
    if not mine or not len(eb):
        return eb
    src, dst = _read_only(eb.src), _read_only(eb.dst)  # one signature of the kernel
    keep = None  # bool per row once a delete hits
    weight = eb.weight
    pos = np.empty(len(src), np.int64)
    # numba's merge of two sorted lists where it repays loading the kernel
    find = kernels if len(src) >= PAIR_KERNEL_MIN_ROWS else kernels_small
    for c in mine:
        find.pair_positions(src, dst, c.keys, pos)
        found = pos >= 0
        if keep is not None:
            found &= keep
        hit = np.flatnonzero(found)
        if not len(hit):
            continue
        if c.kind == "delete":
            if keep is None:
                keep = np.ones(len(src), bool)
            keep[hit] = False
            if removed is not None:
                removed[c.name] = removed.get(c.name, 0) + len(hit)
        elif weight is not None:
            weight = np.array(weight, np.float32)  # a copy: the mapped column is read-only
            weight[hit] = c.weight[pos[hit]]
    if keep is None:
        return eb if weight is eb.weight else dataclasses.replace(eb, weight=weight)
    return dataclasses.replace(
        eb, src=eb.src[keep], dst=eb.dst[keep], rel=None if eb.rel is None else eb.rel[keep],
        weight=None if weight is None else weight[keep],
        columns={k: v[keep] for k, v in eb.columns.items()})


def _read_only(column) -> np.ndarray:
    """A read-only view of a batch's column (a bucket's mapped one, or one in memory)."""
    view = np.asarray(column).view()
    view.flags.writeable = False
    return view


def removed_counts(graph, name: str) -> dict[tuple[int, int], int]:
    """Per bucket, the edges of change set ``name``'s targets that it removes as ``graph``
    reads them (a time view: within its window), after the change sets before it."""
    manifest = getattr(graph, "stored", graph).manifest
    es = manifest.edge_sets[name]
    if es.change.kind != "delete":
        return {}
    order = change_members(manifest, (*es.change.targets, name))
    edges = [t for t in es.change.targets if not manifest.edge_sets[t].change]
    out = {}
    for i, j in sorted(es.buckets):
        changes = [load_bucket(graph, c, i, j) for c in order]
        removed: dict[str, int] = {}
        for member in edges:
            for eb in graph.bucket(i, j, member).batches():
                apply(eb, member, changes, removed)
        if removed.get(name):
            out[(i, j)] = removed[name]
    return out


def verify_changes(graph) -> int:
    """Recount what each delete set of ``graph`` removes (:func:`removed_counts`) and
    compare it with its manifest record, as :func:`graphsys.storage.verify.verify_graph`
    does; returns the change sets checked.

    Raises
    ------
    FormatError
        A delete set whose recorded counts differ from its targets' buckets (the view's
        counts would be wrong), naming it.
    """
    manifest = graph.manifest
    names = change_members(manifest, manifest.edge_sets)
    for name in names:
        change = manifest.edge_sets[name].change
        found = removed_counts(graph, name)
        if change.kind == "delete" and found != change.removed:
            raise FormatError(f"{graph.location.file(MANIFEST)}: delete set {name!r} records "
                              f"{sum(change.removed.values())} edges removed, its targets' "
                              f"buckets give {sum(found.values())} (corrupted or modified)")
    return len(names)
