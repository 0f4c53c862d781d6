r"""Synthetic knowledge graphs with planted, learnable relations.

Entities fall into *clusters* of ``cluster_size`` members (the last takes the remainder),
scattered over ids by a seeded bijection, and the clusters sit on a near-square 2-D lattice
(row-major). Relation ``r`` (``"r0"``, ``"r1"``, ...) is a lattice shift
:math:`\delta_r = (dy, dx)`: distinct non-zero shifts with ``|dy|, |dx| <= w`` (the smallest
radius with enough of them), no two inverse. The *planted tail set* of ``(h, r)`` is every
member of the cluster at ``cluster(h) + delta_r``, when that is on the lattice
(:meth:`KnowledgeGraph.planted_tails`): exactly representable by TransE, ComplEx and RotatE.

The ``M = num_triples`` triples are drawn from the planted facts in RNG blocks of heads, each
block an exact proportional quota, its ``(head, relation)`` pairs in random order giving
**all** their planted tails until the quota is met (at most one pair per block gives part of
its set), so a held-out triple usually has its siblings in training and filtered MRR of a
model that learned the structure approaches 1.

Splits (:meth:`KnowledgeGraph.split`): each triple goes to train / valid / test at random in
the given fractions, then every held-out triple whose head, tail or relation never occurs in
train is moved to train (the held-out fractions come out slightly below the request).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from graphsys.errors import GraphsysError, ParameterError, check_real
from graphsys.generators._random import (
    Chunk,
    IdPermutation,
    block_rng,
    concat,
    rechunk,
    stratified_quota,
)
from graphsys.generators._validate import check_int, check_seed

DEFAULT_RELATIONS = 10
DEFAULT_CLUSTER_SIZE = 4
DEFAULT_CHUNK_TRIPLES = 1 << 22
SPLIT_NAMES = ("train", "valid", "test")
#: Planted facts per RNG block of heads: a block holds ``max(1, RNG_BLOCK_FACTS // (R * S))``
#: head entities (fixed: changing it changes every generated graph). Bounds block memory.
RNG_BLOCK_FACTS = 1 << 22
MAX_CLUSTER_SIZE = 1 << 10
_TAG_SHIFTS, _TAG_PERMUTATION, _TAG_TRIPLES, _TAG_SPLIT = 31, 32, 33, 34


def knowledge_graph(num_entities: int, num_triples: int | None = None, *,
                    relations: int = DEFAULT_RELATIONS,
                    cluster_size: int = DEFAULT_CLUSTER_SIZE,
                    seed: int = 0) -> KnowledgeGraph:
    """Build a knowledge graph whose relations an embedding model can recover.

    Entities are grouped into clusters on a 2-D lattice and each relation is a lattice
    shift: ``(h, r, t)`` is a planted fact when ``t``'s cluster is ``h``'s cluster moved
    by relation ``r``'s shift. Translation (TransE), rotation (RotatE) and complex
    bilinear (ComplEx) models can represent that exactly, so a trained model's filtered
    MRR on held-out triples shows whether training works. Triples are drawn from the
    planted facts, all the tails of a ``(head, relation)`` pair together (see the module
    docstring).

    Parameters
    ----------
    num_entities : int
        ``E``; entity ids are in ``[0, E)``.
    num_triples : int, optional
        The exact number of triples ``M``, at most :attr:`KnowledgeGraph.max_triples`
        (about ``E * relations * cluster_size``, less the shifts that leave the lattice);
        default ``min(10 * E, max_triples)``.
    relations : int, default 10
        Number of relations ``R``, named ``r0 .. r{R-1}``.
    cluster_size : int, default 4
        Entities per cluster = planted tails per ``(head, relation)``.
    seed : int, default 0
        Any integer in ``[0, 2**63)``.

    Returns
    -------
    KnowledgeGraph
        :meth:`KnowledgeGraph.triples` yields ``{"src", "rel", "dst"}`` chunks (``rel``
        indexes ``relation_names``); :meth:`KnowledgeGraph.split` yields
        ``(split_name, chunk)`` pairs for train / valid / test; and
        :meth:`KnowledgeGraph.planted_tails` is the ground truth of a ``(head, relation)``.

    Raises
    ------
    ParameterError
        A value out of range, or ``num_triples`` above ``max_triples``.

    Examples
    --------
    >>> from graphsys.generators import knowledge_graph
    >>> kg = knowledge_graph(100, 500, relations=4, seed=0)
    >>> kg.relation_names, kg.num_clusters, kg.max_triples
    (['r0', 'r1', 'r2', 'r3'], 25, 1152)
    >>> triples = next(kg.triples())
    >>> len(triples["src"]), sorted(triples)
    (500, ['dst', 'rel', 'src'])
    >>> h, r = int(triples["src"][0]), int(triples["rel"][0])
    >>> int(triples["dst"][0]) in kg.planted_tails(h, r)
    True
    >>> {name: len(chunk["src"]) for name, chunk in kg.split((0.8, 0.1, 0.1))}
    {'train': 390, 'valid': 53, 'test': 57}
    """
    return KnowledgeGraph(
        num_entities=check_int(num_entities, "num_entities"),
        num_triples=None if num_triples is None else check_int(num_triples, "num_triples"),
        relations=check_int(relations, "relations", maximum=1 << 20),
        cluster_size=check_int(cluster_size, "cluster_size", maximum=MAX_CLUSTER_SIZE),
        seed=check_seed(seed),
    )


def check_fractions(fractions: Sequence[float], name: str = "fractions") -> tuple[float, ...]:
    """Three non-negative train / valid / test fractions summing to 1, train > 0."""
    if isinstance(fractions, (str, bytes)) or not hasattr(fractions, "__len__") or len(
            fractions) != 3:  # None or 5 raised a raw TypeError (no len())
        raise ParameterError(name, f"must be three numbers train,valid,test, got {fractions!r}")
    values = tuple(check_real(name, f, low=0, high=1) for f in fractions)
    if abs(sum(values) - 1.0) > 1e-6:
        raise ParameterError(name, f"must sum to 1, got {sum(values):g}")
    if values[0] <= 0:
        raise ParameterError(name, f"must have a train fraction > 0, got {values[0]:g}")
    return values


class KnowledgeGraph:
    """A planted knowledge graph. Build it with :func:`knowledge_graph` (which validates).

    Attributes
    ----------
    relation_names : list of str
        ``["r0", ...]``; triple chunks carry ``rel`` as an index into it.
    shifts : numpy.ndarray
        int64 ``[R, 2]``, the lattice shift ``(dy, dx)`` of each relation.
    num_clusters : int
        ``C = max(1, E // cluster_size)``.
    side : int
        Lattice columns.
    max_triples : int
        Number of planted facts, the largest valid ``num_triples``.

    Examples
    --------
    >>> from graphsys.generators import knowledge_graph
    >>> kg = knowledge_graph(40, 100, relations=2, cluster_size=4, seed=0)
    >>> kg.relation_names, kg.num_clusters, kg.side, kg.max_triples, kg.shifts.tolist()
    (['r0', 'r1'], 10, 4, 176, [[1, 1], [0, 1]])
    >>> chunk = next(kg.triples())
    >>> h, r, t = (int(chunk[key][0]) for key in ("src", "rel", "dst"))
    >>> len(chunk["src"]), t in kg.planted_tails(h, r)
    (100, True)
    """

    def __init__(self, *, num_entities: int, num_triples: int | None, relations: int,
                 cluster_size: int, seed: int):
        self.num_entities = num_entities
        self.num_relations, self.cluster_size, self.seed = relations, cluster_size, seed
        self.relation_names = [f"r{i}" for i in range(relations)]
        self.num_clusters = max(1, num_entities // cluster_size)
        self.side = math.isqrt(self.num_clusters - 1) + 1
        self.shifts = _pick_shifts(relations, block_rng(seed, _TAG_SHIFTS, 0))
        self._permutation = IdPermutation(num_entities, seed, _TAG_PERMUTATION)
        self._block_heads = max(1, RNG_BLOCK_FACTS // (relations * cluster_size))
        self._num_blocks = -(-num_entities // self._block_heads)
        block_facts = [int(self._pairs(b)[3].sum()) for b in range(self._num_blocks)]
        self._facts_before = np.concatenate([[0], np.cumsum(block_facts)]).tolist()
        self.max_triples = self._facts_before[-1]
        if self.max_triples == 0:
            raise GraphsysError(f"no planted facts: {num_entities} entities in clusters of "
                                f"{cluster_size} leave no room for any relation's shift; use "
                                f"more entities or smaller clusters")
        if num_triples is None:
            num_triples = min(10 * num_entities, self.max_triples)
        self.num_triples = num_triples
        if num_triples > self.max_triples:
            raise ParameterError(
                "num_triples", f"must be <= {self.max_triples} (planted facts for "
                               f"{num_entities} entities, {relations} relations, clusters of "
                               f"{cluster_size}), got {num_triples}")

    # -- structure -----------------------------------------------------------------------------
    def cluster_of(self, ids: np.ndarray) -> np.ndarray:
        """Cluster index of each entity id; int64, same shape."""
        position = self._permutation.forward(np.asarray(ids, dtype=np.int64))
        return np.minimum(position // self.cluster_size, self.num_clusters - 1)

    def planted_tails(self, head: int, rel: int) -> np.ndarray:
        """Entity ids of the planted tail set of ``(head, rel)`` (sorted int64; empty when the
        relation's shift leaves the lattice for this head's cluster)."""
        cluster = self.cluster_of(np.array([head]))
        target = self._target(cluster, rel)[0]
        if target < 0:
            return np.empty(0, dtype=np.int64)
        start, size = self._cluster_span(np.array([target]))
        return np.sort(self._permutation.inverse(np.arange(start[0], start[0] + size[0])))

    def _target(self, cluster: np.ndarray, rel: int) -> np.ndarray:
        dy, dx = (int(v) for v in self.shifts[rel])
        y, x = np.divmod(cluster, self.side)
        target = cluster + dy * self.side + dx
        ok = (x + dx >= 0) & (x + dx < self.side) & (y + dy >= 0) & (target < self.num_clusters)
        return np.where(ok, target, -1)

    def _cluster_span(self, cluster: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        start = cluster * self.cluster_size
        last = cluster == self.num_clusters - 1
        size = np.where(last, self.num_entities - start, self.cluster_size)
        return start, size

    def _pairs(self, b: int) -> tuple[np.ndarray, ...]:
        """Valid ``(head position, rel)`` pairs of head block ``b`` in (head, rel) order:
        head positions, relations, target cluster starts, target sizes."""
        first = b * self._block_heads
        heads = np.arange(first, min(self.num_entities, first + self._block_heads),
                          dtype=np.int64)
        cluster = np.minimum(heads // self.cluster_size, self.num_clusters - 1)
        targets = np.stack([self._target(cluster, r) for r in range(self.num_relations)], axis=1)
        head_index, rel = np.nonzero(targets >= 0)
        start, size = self._cluster_span(targets[head_index, rel])
        return heads[head_index], rel.astype(np.int64), start, size

    # -- triples -------------------------------------------------------------------------------
    def triples(self, chunk_triples: int = DEFAULT_CHUNK_TRIPLES) -> Iterator[Chunk]:
        """All ``num_triples`` triples, ordered by head block, in chunks of ``chunk_triples``
        rows: ``{"src": int64[n] head, "rel": int64[n] index into relation_names,
        "dst": int64[n] tail}``."""
        chunk_triples = check_int(chunk_triples, "chunk_triples")
        return rechunk((self._block(b) for b in range(self._num_blocks)), chunk_triples)

    def split(self, fractions: Sequence[float] = (0.9, 0.05, 0.05)
              ) -> Iterator[tuple[str, Chunk]]:
        """The triples split into train / valid / test, as ``(name, chunk)`` pairs.

        Chunks have at most one RNG block of rows each. Train chunks of the first pass come
        first; the second pass yields valid / test chunks and train chunks of moved triples.
        Memory: one bool per entity. See the module notes for the guarantees.
        """
        fractions = check_fractions(fractions)
        bounds = np.cumsum(fractions)[:2]
        seen = np.zeros(self.num_entities, dtype=bool)
        seen_rel = np.zeros(self.num_relations, dtype=bool)
        return self._split(bounds, seen, seen_rel)

    def _split(self, bounds: np.ndarray, seen: np.ndarray, seen_rel: np.ndarray
               ) -> Iterator[tuple[str, Chunk]]:
        for second_pass in (False, True):
            for b in range(self._num_blocks):
                chunk = self._block(b)
                n = len(chunk["src"])
                if n == 0:
                    continue
                where = np.searchsorted(bounds, block_rng(self.seed, _TAG_SPLIT, b).random(n),
                                        side="right")
                if not second_pass:
                    train = where == 0
                else:  # held out, but with an entity or relation train has not seen
                    train = (where > 0) & ~(seen[chunk["src"]] & seen[chunk["dst"]]
                                            & seen_rel[chunk["rel"]])
                    where = np.where(train, 0, where)
                if train.any():
                    part = {k: v[train] for k, v in chunk.items()}
                    seen[part["src"]] = True
                    seen[part["dst"]] = True
                    seen_rel[part["rel"]] = True
                    yield "train", part
                if second_pass:
                    for s in (1, 2):
                        mask = where == s
                        if mask.any():
                            yield SPLIT_NAMES[s], {k: v[mask] for k, v in chunk.items()}

    def _block(self, b: int) -> Chunk:
        heads, rel, start, size = self._pairs(b)
        quota = stratified_quota(self.num_triples, self.max_triples, self._facts_before[b],
                                 self._facts_before[b + 1])
        empty = np.empty(0, dtype=np.int64)
        if quota == 0:
            return {"src": empty, "rel": empty, "dst": empty}
        rng = block_rng(self.seed, _TAG_TRIPLES, b)
        order = rng.permutation(heads.size)
        filled = np.cumsum(size[order])
        full = int(np.searchsorted(filled, quota, side="right"))
        chosen = np.sort(order[:full])
        tails_taken = size[chosen]
        pieces = [_expand(heads[chosen], rel[chosen], start[chosen], tails_taken)]
        leftover = quota - (int(filled[full - 1]) if full else 0)
        if leftover:
            p = order[full]
            offsets = np.sort(rng.choice(int(size[p]), leftover, replace=False))
            pieces.append({"src": np.full(leftover, heads[p]), "rel": np.full(leftover, rel[p]),
                           "dst": start[p] + offsets})
        triples = concat(pieces) if len(pieces) > 1 else pieces[0]
        return {"src": self._permutation.inverse(triples["src"]), "rel": triples["rel"],
                "dst": self._permutation.inverse(triples["dst"])}


def _expand(heads: np.ndarray, rel: np.ndarray, start: np.ndarray, size: np.ndarray) -> Chunk:
    """One triple per (pair, tail offset): heads/rels repeated, tails start..start+size-1."""
    total = int(size.sum())
    first = np.repeat(np.cumsum(size) - size, size)
    offset = np.arange(total, dtype=np.int64) - first
    return {"src": np.repeat(heads, size), "rel": np.repeat(rel, size),
            "dst": np.repeat(start, size) + offset}


def _pick_shifts(relations: int, rng: np.random.Generator) -> np.ndarray:
    radius = 1
    while 2 * radius * (radius + 1) < relations:
        radius += 1
    span = np.arange(-radius, radius + 1)
    dy, dx = (a.ravel() for a in np.meshgrid(span, span, indexing="ij"))
    canonical = (dy > 0) | ((dy == 0) & (dx > 0))  # one of each +-delta pair
    candidates = np.stack([dy[canonical], dx[canonical]], axis=1).astype(np.int64)
    return candidates[rng.choice(len(candidates), relations, replace=False)]
