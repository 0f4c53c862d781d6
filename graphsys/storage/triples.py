"""The triples of an edge set and the known answers of queries: what filtered ranking
(:mod:`graphsys.embed.evaluation`, the R-GCN link task) and filtered prediction
(:meth:`graphsys.embed.Embeddings.predict_tails`) remove from the candidates. Ids are
type-global (partition offset + local id), int64."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphsys.storage import edge_changes
from graphsys.storage.graph import Graph


@dataclass
class Triples:
    """Type-global ids: ``h``, ``t``, ``r`` int64 ``(E,)``."""

    h: np.ndarray
    r: np.ndarray
    t: np.ndarray


def triples(graph: Graph, edge_set: str, *, changed: bool = False) -> Triples:
    """All triples of an edge set in type-global ids (memory: 3 x 8 bytes per edge);
    ``changed``: a stored edge set read through every change set that targets it (its
    deleted triples left out), as the graph now holds it."""
    rels = graph.relation_types
    hs, rs, ts = [], [], []
    offs = {t: graph.partition_offsets(t) for t in graph.entity_types}
    lhs_off = np.stack([offs[r.lhs][:-1] for r in rels])
    rhs_off = np.stack([offs[r.rhs][:-1] for r in rels])
    for b in graph.buckets("row-major", edge_set):
        changes = [edge_changes.load_bucket(graph, c, b.i, b.j)
                   for c in (graph.change_sets if changed else ())]
        for eb in b.batches():
            eb = edge_changes.apply(eb, edge_set, changes)
            rel = np.zeros(len(eb), np.int64) if eb.rel is None else eb.rel.astype(np.int64)
            hs.append(lhs_off[rel, b.i] + eb.src)
            ts.append(rhs_off[rel, b.j] + eb.dst)
            rs.append(rel)
    cat = (lambda x: np.concatenate(x) if x else np.zeros(0, np.int64))
    return Triples(cat(hs), cat(rs), cat(ts))


def known_triples(graph: Graph, edge_sets=None) -> Triples:
    """The true triples of ``edge_sets`` (stored edge set names; default every edge set of
    the graph) as the graph now holds them (:func:`triples` with ``changed``): what
    filtered ranking and filtered prediction leave out. A deleted triple is no fact."""
    every = [triples(graph, n, changed=True)
             for n in (graph.edge_sets if edge_sets is None else edge_sets)]
    return Triples(*(np.concatenate([getattr(x, k) for x in every] or [np.zeros(0, np.int64)])
                     for k in ("h", "r", "t")))


class KnownAnswers:
    """True answers of queries ``(key = r * M + anchor)``: sorted compound ``g * M + answer``
    where ``g`` is the index of the key among the sorted distinct keys."""

    def __init__(self, key: np.ndarray, answer: np.ndarray, m: int):
        order = np.lexsort((answer, key))
        key, answer = key[order], answer[order]
        self.keys, first = np.unique(key, return_index=True)
        group = np.repeat(np.arange(len(self.keys)), np.diff(np.append(first, len(key))))
        self.compound = group * m + answer
        self.answer, self.first, self.m = answer, first, m
        self.count = np.diff(np.append(first, len(key)))

    def answers(self, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query row, answer) pairs of every true answer of each query key."""
        g = np.searchsorted(self.keys, key)
        g = np.minimum(g, len(self.keys) - 1)
        ok = self.keys[g] == key
        lengths = np.where(ok, self.count[g], 0)
        starts = self.first[g]
        rows = np.repeat(np.arange(len(key)), lengths)
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return rows, self.answer[np.repeat(starts, lengths) + within]

    def contains(self, key: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """bool ``(Q, C)``: is ``cand[c]`` a true answer of query ``key[q]``."""
        g = np.searchsorted(self.keys, key)
        g = np.minimum(g, len(self.keys) - 1)
        ok = self.keys[g] == key
        comp = g[:, None] * self.m + cand[None, :]
        pos = np.searchsorted(self.compound, comp).clip(max=len(self.compound) - 1)
        return ok[:, None] & (self.compound[pos] == comp)
