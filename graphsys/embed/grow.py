"""Growing a trained model: initial state of a checkpoint over a graph with new entities.

A graph grown by :func:`graphsys.storage.append.append_edges` keeps every old node at its
(partition, local offset) and appends new nodes, so a checkpoint trained before the append
gives the first ``n_old[p]`` rows of every partition ``p``. :func:`grown_partition` builds
the full partition: old rows keep their embeddings and Adagrad sums; a new row with old
neighbours in the training edge set (either direction, any relation) starts at the mean of
their raw embeddings, one without at the usual ``N(0, init_scale)`` draw, both with Adagrad
sum 0. The old rows' ids must be those the checkpoint was trained on, in order
(:func:`check_old_ids` compares their sha256 with its ``id_digests``): a graph re-ingested
rather than appended to is refused rather than trained with shifted vectors. Relation
parameters are copied; with ``freeze_old`` only the new rows are trained.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.embed.checkpoint_files import (
    CheckpointStorage,
    id_digests,
    load_npy,
    stream_seed,
)
from graphsys.embed.model import init_embeddings
from graphsys.errors import GraphsysError
from graphsys.storage.graph import Graph


def old_sizes(meta: dict[str, Any]) -> dict[str, list[int]]:
    """Nodes per partition of every entity type a checkpoint was trained on."""
    return {t: [int(x) for x in info["partition_sizes"]]
            for t, info in meta["entity_types"].items()}


def check_shape(meta: dict[str, Any], where: str | Path, *, dimension: int, comparator: str,
                relations: list[dict[str, str]], sizes: dict[str, list[int]]) -> None:
    """Raise :class:`GraphsysError` (one line naming the key) unless the checkpoint ``meta``
    has this model's shape: ``dimension``, ``comparator``, the relations (name, lhs, rhs,
    operator, in order) and, per entity type, as many partitions, none larger than now."""
    def refuse(key: str, was: Any, now: Any) -> GraphsysError:
        return GraphsysError(f"init_from {where}: {key} is {was!r} in the checkpoint, {now!r} "
                             f"in this run (another model shape)")

    if int(meta.get("dimension", -1)) != dimension:
        raise refuse("dimension", meta.get("dimension"), dimension)
    if meta.get("comparator") != comparator:
        raise refuse("comparator", meta.get("comparator"), comparator)
    was_rels = [{k: r.get(k) for k in ("name", "lhs", "rhs", "operator")}
                for r in meta.get("relations") or []]
    for k in range(max(len(was_rels), len(relations))):
        was = was_rels[k] if k < len(was_rels) else None
        now = relations[k] if k < len(relations) else None
        if was != now:
            raise refuse(f"relations[{k}]", was, now)
    old = old_sizes(meta)
    if sorted(old) != sorted(sizes):
        raise refuse("entity_types", sorted(old), sorted(sizes))
    for t, was_sizes in old.items():
        now_sizes = sizes[t]
        if len(was_sizes) != len(now_sizes):
            raise refuse(f"entity_types.{t}.num_partitions", len(was_sizes), len(now_sizes))
        for p, (a, b) in enumerate(zip(was_sizes, now_sizes)):
            if a > b:
                raise refuse(f"entity_types.{t}.partition_sizes[{p}]", a, b)


def check_old_ids(meta: dict[str, Any], where: str | Path, graph: Graph,
                  old: dict[str, list[int]]) -> None:
    """Raise :class:`GraphsysError` (one line) unless the first ``old[t][p]`` nodes of each
    partition of ``graph`` have the original ids, in row order, that the checkpoint ``meta``
    was trained on (its ``id_digests``). A checkpoint written before ids were recorded
    cannot be checked: a warning says so."""
    for t, sizes in old.items():
        digests = meta["entity_types"][t].get("id_digests")
        if digests is None:
            warnings.warn(f"init_from {where}: the checkpoint records no entity ids; its rows "
                          f"are taken to be the first rows of each partition unchecked",
                          stacklevel=3)
            continue
        now = id_digests(graph, t, sizes)
        bad = next((p for p, (a, b) in enumerate(zip(digests, now)) if a != b), None)
        if bad is not None:
            raise GraphsysError(
                f"init_from {where}: the first {sizes[bad]:,} nodes of partition {bad} of "
                f"entity type {t!r} are not the entities the checkpoint trained (other ids or "
                f"another order): grow the old graph by appending edges to it, which keeps "
                f"every old entity in its row, instead of ingesting old and new edges afresh")


def neighbour_means(graph: Graph, edge_set: str, source: CheckpointStorage, version: int,
                    old: dict[str, list[int]]) -> dict[tuple[str, int], tuple[np.ndarray,
                                                                            np.ndarray]]:
    """Per (entity type, partition): ``(sums, counts)`` over the new rows of the trained
    embeddings of their old neighbours in ``edge_set``: sums float64 ``(n_new, d)``, counts
    int64 ``(n_new,)``; row ``k`` is local offset ``old[t][p] + k``."""
    rels = graph.relation_types
    pair_names = sorted({(r.lhs, r.rhs) for r in rels})
    pair_of_rel = np.array([pair_names.index((r.lhs, r.rhs)) for r in rels], np.int64)
    acc: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
    for t, sizes in old.items():
        now = graph.partition_sizes(t)
        for p, n_old in enumerate(sizes):
            d = load_npy(source.emb_path(t, p, version), mmap=True, root=source.root).shape[1]
            n_new = int(now[p]) - n_old
            acc[(t, p)] = (np.zeros((n_new, d)), np.zeros(n_new, np.int64))
    for b in graph.buckets("row-major", edge_set):
        for eb in b.batches():
            groups = ([((rels[0].lhs, rels[0].rhs), slice(None))] if eb.rel is None else
                      [(pair, pair_of_rel[eb.rel] == k) for k, pair in enumerate(pair_names)])
            for (lt, rt), sel in groups:
                src = np.asarray(eb.src[sel], np.int64)
                dst = np.asarray(eb.dst[sel], np.int64)
                _accumulate(acc, source, version, old, (rt, b.j, dst), (lt, b.i, src))
                _accumulate(acc, source, version, old, (lt, b.i, src), (rt, b.j, dst))
    return acc


def _accumulate(acc, source: CheckpointStorage, version: int, old: dict[str, list[int]],
                to: tuple[str, int, np.ndarray], frm: tuple[str, int, np.ndarray]) -> None:
    """Add the embeddings of old ``frm`` endpoints to the sums of new ``to`` endpoints."""
    (tt, tp, tidx), (ft, fp, fidx) = to, frm
    n_to, n_from = old[tt][tp], old[ft][fp]
    keep = (tidx >= n_to) & (fidx < n_from)
    if not keep.any():
        return
    sums, counts = acc[(tt, tp)]
    rows = tidx[keep] - n_to
    emb = load_npy(source.emb_path(ft, fp, version), mmap=True, root=source.root)
    np.add.at(sums, rows, np.asarray(emb[fidx[keep]], np.float64))
    np.add.at(counts, rows, 1)


def grown_partition(fresh: np.ndarray, state: np.ndarray, source: CheckpointStorage,
                    version: int, etype: str, p: int, n_old: int,
                    means: tuple[np.ndarray, np.ndarray]) -> None:
    """Fill the initial embeddings ``fresh`` float32 ``(n, d)`` (the seeded random init) and
    Adagrad state ``state`` (zeros, float32 ``(n,)`` or ``(n, d)``) of partition ``p`` in
    place: the old rows copied from ``source``, new rows with old neighbours set to their
    mean."""
    emb = load_npy(source.emb_path(etype, p, version), root=source.root)
    if emb.shape != (n_old, fresh.shape[1]):
        raise GraphsysError(f"init_from {source.root}: {source.emb_path(etype, p, version)} "
                            f"has shape {emb.shape}, expected ({n_old}, {fresh.shape[1]})")
    optim = load_npy(source.optim_path(etype, p, version), root=source.root)
    if optim.shape != (n_old, *state.shape[1:]):
        raise GraphsysError(f"init_from {source.root}: {source.optim_path(etype, p, version)} "
                            f"has shape {optim.shape}, expected {(n_old, *state.shape[1:])} "
                            f"(is embedding_adagrad the same?)")
    fresh[:n_old] = emb
    sums, counts = means
    has = counts > 0
    fresh[n_old:][has] = (sums[has] / counts[has, None]).astype(np.float32)
    state[:n_old] = optim


def new_edge_sets(graph: Graph, trained_on: str) -> list[str]:
    """The edge sets a checkpoint trained on the view ``trained_on`` was not trained on:
    those appended since (joined to a view or apart, ``join=False``) are the only ones that
    can name a new entity, and any other, stored before the new entities existed, joins no
    new entity to an old one (so it adds nothing to a new row's mean). Change sets
    (deletions, weight updates) hold no edges and are left out."""
    from graphsys.storage import edge_views

    m = graph.manifest
    try:
        old = edge_views.members(m, trained_on)
    except GraphsysError:  # the training edge set is gone: nothing to take means from
        return []
    return [s for s in m.edge_sets if s not in old and not m.edge_sets[s].change]


def served_rows(graph: Graph, source: CheckpointStorage, version: int, config,
                old: dict[str, list[int]], trained_on: str
                ) -> dict[tuple[str, int], np.ndarray]:
    """The rows a checkpoint lacks for the entities appended to its graph since training,
    as ``init_from`` starts them (see the module docstring): per (entity type, partition)
    that grew, float32 ``(n_new, d)``; a new entity with an old neighbour in the edge sets
    appended since ``trained_on`` (:func:`new_edge_sets`) gets their mean, any other the
    seeded ``N(0, init_scale)`` draw of a fresh run (its seed, the partition's stream)."""
    sets = new_edge_sets(graph, trained_on)
    means = neighbour_means(graph, sets, source, version, old) if sets else {}
    out = {}
    for ti, (t, sizes) in enumerate(old.items()):
        now = graph.partition_sizes(t)
        for p, n_old in enumerate(sizes):
            if int(now[p]) == n_old:
                continue
            gen = torch.Generator().manual_seed(stream_seed(config.seed, 1, ti, p))
            rows = init_embeddings(int(now[p]), config.dimension, config.init_scale,
                                   gen).numpy()[n_old:]
            if (t, p) in means:
                sums, counts = means[(t, p)]
                has = counts > 0
                rows[has] = (sums[has] / counts[has, None]).astype(np.float32)
            out[(t, p)] = rows
    return out
