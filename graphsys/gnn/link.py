"""Link prediction on held-out edges: the target edges of a graph, their seeded (or
time-ordered) train/validation/test split, the training graph message passing runs on, the
score decoders and the filtered evaluation.

Target edges. On one entity type: the distinct unordered node pairs of the stored edges
(self-loops dropped; the first stored orientation kept as ``(head, tail)``), every node a
candidate tail. Between two entity types (a relation ``lhs -> rhs``): the distinct
``(lhs, rhs)`` pairs, the ``rhs`` nodes the candidate tails; the two types share one node
space, ``lhs`` nodes first (ids ``0..n_lhs-1``), ``rhs`` nodes after (``n_lhs + j``).

Message passing runs over the training edges only, in both directions: no validation or
test edge is in any sampled neighbourhood, in training or in evaluation. A training
minibatch's own target edges are removed from its blocks as well (:func:`exclude_pairs`),
so that training, like evaluation, scores pairs whose edge the encoder does not see.

Evaluation (OGB's filtered protocol). Each held-out ``(head, tail)`` is ranked, tail side,
against ``negatives`` uniform candidate tails per positive (fixed by the seed, the same at
every evaluation), or against every candidate tail (``negatives=-1``); negatives that are
true edges of the graph (in any split) or the head itself are filtered out. ``mrr``,
``hits@k``, and ``recall@k`` (per head: the share of its held-out tails in its top ``k``,
averaged over heads) follow from the ranks, and ``auc`` pools the positives' scores against
the filtered negatives' (with ``negatives=-1``: one filtered uniform negative per
positive), under :mod:`graphsys.ranking`'s rules.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from graphsys.errors import GraphsysError, ParameterError, check_real
from graphsys.gnn.config import LINK_DECODERS, check_choice
from graphsys.ranking import auc, group_positions, rank_metrics, ranks, recall_at_k
from graphsys.sampling._util import seed_entropy
from graphsys.sampling.adjacency import Adjacency, from_coo, typed_edges
from graphsys.sampling.block import Block
from graphsys.storage.edge_changes import node_pair_keys
from graphsys.storage.graph import Graph


def split_edges(num_edges: int, val_fraction: float, test_fraction: float, seed: int,
                time: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks ``(train, val, test)`` over ``num_edges`` edges.

    Without ``time``: a ``numpy.random.default_rng(seed)`` permutation (``seed`` an integer
    in [-2**63, 2**64), as a sampler's; None is refused, not fresh entropy); its first
    ``round(test_fraction * E)`` edges are test, the next ``round(val_fraction * E)``
    validation, the rest training. With ``time`` (one timestamp per edge; ``seed`` unused):
    the edges ordered by timestamp in the column's own type (int64 nanoseconds stay exact),
    the latest ``round(test_fraction * E)`` test, the ``round(val_fraction * E)`` before
    them validation, so the model is trained on the past and asked about the future.

    Ties: a cut never splits equal timestamps. Edges stamped like the last edge before a
    cut go to the earlier side (training before validation, validation before test, as
    TGL's and TGB's ``t <= cut`` splits do), so every validation stamp is strictly later
    than every training stamp and every test stamp strictly later than both; a held-out
    side can hold fewer edges than its fraction asks, and a side the ties leave empty is
    refused.

    Raises
    ------
    ParameterError
        A fraction outside [0, 1), fractions leaving no training edge, ``time`` not one
        finite number (or datetime) per edge, or ties leaving a held-out side empty.

    Examples
    --------
    >>> from graphsys.gnn.link import split_edges
    >>> train, val, test = split_edges(10, 0.1, 0.2, seed=0, time=range(10, 0, -1))
    >>> int(train.sum()), val.nonzero()[0].tolist(), test.nonzero()[0].tolist()
    (7, [2], [0, 1])

    Validation asks for 2 edges, but the earlier of them ties with a training edge (stamp
    3): both stay in training, and validation holds the one later edge:

    >>> train, val, test = split_edges(6, 0.34, 0.17, seed=0, time=[3, 5, 1, 4, 3, 2])
    >>> train.nonzero()[0].tolist(), val.nonzero()[0].tolist(), test.nonzero()[0].tolist()
    ([0, 2, 4, 5], [3], [1])
    """
    for name, f in (("link_val_fraction", val_fraction), ("link_test_fraction", test_fraction)):
        # a string or None raised a raw TypeError, True was read as a fraction 1
        check_real(name, f, low=0, high=1, high_open=True)
    n_test, n_val = round(test_fraction * num_edges), round(val_fraction * num_edges)
    if n_test + n_val >= num_edges:
        raise ParameterError("link_test_fraction", f"and link_val_fraction leave no training "
                                                   f"edge of {num_edges:,}")
    masks = [np.zeros(num_edges, bool) for _ in range(3)]
    if time is None:
        order = np.random.default_rng(seed_entropy(seed)).permutation(num_edges)
        masks[2][order[:n_test]] = True
        masks[1][order[n_test:n_test + n_val]] = True
        masks[0][order[n_test + n_val:]] = True
        return masks[0], masks[1], masks[2]
    t = _checked_times(time, num_edges)
    order = np.argsort(t, kind="stable")  # earliest first, exact in the stamps' own type
    ts = t[order]
    val_cut, test_cut = (_tie_cut(ts, num_edges - n_test - n_val),
                         _tie_cut(ts, num_edges - n_test))
    val_cut = min(val_cut, test_cut)
    for name, want, cut, got in (
            ("link_test_fraction", n_test, num_edges - n_test, num_edges - test_cut),
            ("link_val_fraction", n_val, num_edges - n_test - n_val, test_cut - val_cut)):
        if want and not got:
            raise ParameterError(name, f"asks for {want:,} held-out edges, but the edges "
                                       f"from the cut on share the timestamp "
                                       f"{ts[cut - 1]} of the edge before it, and a cut "
                                       f"never splits equal timestamps: none is left")
    masks[0][order[:val_cut]] = True
    masks[1][order[val_cut:test_cut]] = True
    masks[2][order[test_cut:]] = True
    return masks[0], masks[1], masks[2]


def _checked_times(time, num_edges: int) -> np.ndarray:
    """``time`` as one integer, float or datetime64 stamp per edge (ParameterError
    otherwise: another shape or kind, NaN, infinity or NaT)."""
    t = np.asarray(time)
    if t.shape != (num_edges,):
        raise ParameterError("time", f"must hold one timestamp per edge ({num_edges:,}), "
                                     f"got shape {t.shape}")
    if t.dtype.kind not in "iufM":
        raise ParameterError("time", f"must hold integer, float or datetime64 timestamps, "
                                     f"got dtype {t.dtype}")
    bad = (np.isnat(t) if t.dtype.kind == "M" else ~np.isfinite(t) if t.dtype.kind == "f"
           else np.zeros(num_edges, bool))
    if bad.any():
        raise ParameterError("time", f"edge {int(np.argmax(bad))} has timestamp "
                                     f"{t[np.argmax(bad)]}: every edge needs a finite one")
    return t


def _tie_cut(ts: np.ndarray, cut: int) -> int:
    """The cut ``cut`` of the sorted stamps ``ts`` moved later past the stamps equal to
    the last one before it (ties go to the earlier side)."""
    if cut <= 0 or cut >= len(ts):
        return cut
    return int(np.searchsorted(ts, ts[cut - 1], side="right"))


#: The edge column :func:`edge_timestamps` reads.
TIME_COLUMN = "timestamp"


def edge_timestamps(graph: Graph, entity_type: str | None = None) -> np.ndarray:
    """One timestamp per target edge of the link task, for :func:`split_edges` by time.

    Read from the edge column ``timestamp`` of the graph's default edge set (kept at ingest:
    ``graphsys ingest --edge-columns timestamp``, or a registry dataset that has one, such
    as ``movielens-100k``). A target edge is a distinct node pair (:func:`target_edges`,
    same order); a pair stored more than once (both orientations, or rated twice) takes its
    earliest timestamp, when the pair was first seen. Returns (E,) timestamps in the
    column's own dtype, aligned with :func:`target_edges`' head and tail; ParameterError
    (``link_split``) when the edge set has no ``timestamp`` column.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.gnn.link import edge_timestamps, target_edges
    >>> d = tempfile.mkdtemp()
    >>> edges = pa.table({"src": [0, 1, 2, 1], "dst": [1, 2, 0, 0],
    ...                   "timestamp": [40, 10, 30, 20]})
    >>> g = graphsys.from_arrow(edges, d + "/g", edge_columns=["timestamp"])
    >>> head, tail = target_edges(g)[:2]
    >>> sorted(zip(head.tolist(), tail.tolist(), edge_timestamps(g).tolist()))
    [(0, 1, 20), (1, 2, 10), (2, 0, 30)]
    """
    es = graph.edge_set(None)
    if TIME_COLUMN not in {c.name for c in es.columns}:
        have = ", ".join(c.name for c in es.columns) or "none"
        raise ParameterError("link_split", f"'time' needs the edge column {TIME_COLUMN!r} "
                                           f"({graph.path}, edge set {es.name!r} has edge "
                                           f"columns: {have}; keep it at ingest as an "
                                           f"edge column); split 'random' holds out a "
                                           f"seeded share instead")
    return _targets(graph, entity_type, time=True)[6]


@dataclass
class LinkData:
    """Target edges, their split and the training graph of the link task.

    Attributes
    ----------
    head, tail : numpy.ndarray
        int64 (E,): the target edges in the shared node space.
    train, val, test : numpy.ndarray
        bool (E,) split masks.
    num_nodes : int
        Size of the node space.
    tails : tuple of int
        ``(lo, hi)``: the candidate tails are nodes ``lo..hi-1``.
    symmetric : bool
        Whether a pair is unordered (one entity type): ``(h, t)`` and ``(t, h)`` are the
        same edge.
    types : list of (str, int, int)
        ``(entity_type, lo, hi)``: the node-space range of each entity type.
    adj : Adjacency
        The training edges in both directions (what message passing samples).
    known : scipy.sparse.csr_matrix
        Every target edge (all splits), both orientations when ``symmetric``: the filter.
    """

    head: np.ndarray
    tail: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    num_nodes: int
    tails: tuple[int, int]
    symmetric: bool
    types: list[tuple[str, int, int]]
    adj: Adjacency
    known: object


def target_edges(graph: Graph, entity_type: str | None = None
                 ) -> tuple[np.ndarray, np.ndarray, int, tuple[int, int], bool,
                            list[tuple[str, int, int]]]:
    """``(head, tail, num_nodes, tails, symmetric, types)`` of the link task (see the
    module docstring): the entity type ``entity_type`` (default: the graph's only one)
    with itself, or, on a graph whose edges join two entity types, the first such
    relation (the one touching ``entity_type`` when given)."""
    return _targets(graph, entity_type)[:6]


def _typed_times(graph: Graph, lhs: str, rhs: str) -> np.ndarray:
    """The ``timestamp`` of every edge :func:`typed_edges` gives for ``(lhs, rhs)``, in
    its order (the same filter over the same batches)."""
    toff = graph.type_offsets
    lo_s, hi_s = toff[lhs], toff[lhs] + graph.num_nodes(lhs)
    lo_d, hi_d = toff[rhs], toff[rhs] + graph.num_nodes(rhs)
    out = [t[(s >= lo_s) & (s < hi_s) & (d >= lo_d) & (d < hi_d)]
           for (s, d, _, _), t in zip(graph.iter_edges(None), graph.edge_column(TIME_COLUMN))]
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def _first_pairs(key: np.ndarray, time: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of the first occurrence of each distinct ``key``, in stored order, and (with
    ``time``) each key's earliest time, aligned with them."""
    if time is None:
        _, first = np.unique(key, return_index=True)
        first.sort()
        return first, None
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    earliest = time[first]  # in the stamps' own type: int64 nanoseconds stay exact
    np.minimum.at(earliest, inverse.ravel(), time)
    order = np.argsort(first, kind="stable")
    return first[order], earliest[order]


def _targets(graph: Graph, entity_type: str | None, time: bool = False):
    """:func:`target_edges` and, with ``time``, a seventh item: each target edge's
    earliest ``timestamp`` (else None)."""
    rels = graph.relation_types
    same = [r for r in rels if r.lhs == r.rhs and entity_type in (None, r.lhs)]
    cross = [r for r in rels if r.lhs != r.rhs and entity_type in (None, r.lhs, r.rhs)]
    if same and (entity_type is not None or len(graph.entity_types) == 1 or not cross):
        et = same[0].lhs
        n = graph.num_nodes(et)
        s, d, _ = typed_edges(graph, None, et, et)
        keep = s != d
        s, d = s[keep], d[keep]
        t = _typed_times(graph, et, et)[keep] if time else None
        first, t = _first_pairs(node_pair_keys(np.minimum(s, d), np.maximum(s, d), n), t)
        return s[first], d[first], n, (0, n), True, [(et, 0, n)], t
    if cross:
        r = cross[0]
        nl, nr = graph.num_nodes(r.lhs), graph.num_nodes(r.rhs)
        s, d, _ = typed_edges(graph, None, r.lhs, r.rhs)
        first, t = _first_pairs(node_pair_keys(s, d, max(nl, nr)),
                                _typed_times(graph, r.lhs, r.rhs) if time else None)
        return (s[first], d[first] + nl, nl + nr, (nl, nl + nr), False,
                [(r.lhs, 0, nl), (r.rhs, nl, nl + nr)], t)
    where = f" of entity type {entity_type!r}" if entity_type else ""
    raise GraphsysError(f"the link task needs edges{where}; {graph.path} has relations "
                        f"{[f'{r.lhs}->{r.rhs}' for r in rels]}")


def link_data(graph: Graph, entity_type: str | None, val_fraction: float,
              test_fraction: float, seed: int, split: str = "random", *,
              cut=None) -> LinkData:
    """The target edges of ``graph`` (:func:`target_edges`) split ``split`` (``random``:
    seeded; ``time``: by timestamp, :func:`edge_timestamps`) into train/val/test
    (:func:`split_edges`; with ``time`` and ``cut``, ``cut(stamps)`` gives the masks, e.g.
    :func:`graphsys.gnn.time_split.split_at_times` at given times), with the training graph
    and the filter of known edges."""
    head, tail, n, tails, symmetric, types = target_edges(graph, entity_type)
    if len(head) < 3:
        raise GraphsysError(f"the link task needs at least 3 distinct edges to split, "
                            f"{graph.path} has {len(head)}")
    time = edge_timestamps(graph, entity_type) if split == "time" else None
    if time is not None and cut is not None:
        train, val, test = cut(time)
    else:
        train, val, test = split_edges(len(head), val_fraction, test_fraction, seed, time)
    for side, mask, name, fraction in (("validation", val, "link_val_fraction", val_fraction),
                                       ("test", test, "link_test_fraction", test_fraction)):
        if not mask.any():  # select or report on no edge: refused, not a metric of 0
            raise ParameterError(name, f"= {fraction} holds out no {side} edge of "
                                       f"{len(head):,}")
    h, t = head[train], tail[train]
    adj = from_coo(np.r_[h, t], np.r_[t, h], n, n)
    rows, cols = (np.r_[head, tail], np.r_[tail, head]) if symmetric else (head, tail)
    known = from_coo(rows, cols, n, n).to_scipy()
    return LinkData(head, tail, train, val, test, n, tails, symmetric, types, adj, known)


def exclude_pairs(blocks: list[Block], heads: np.ndarray, tails: np.ndarray,
                  num_nodes: int) -> list[Block]:
    """``blocks`` without any edge that joins a pair ``(heads[i], tails[i])``, in either
    direction, in any layer: a minibatch's targets, so that the encoder learns to predict
    an edge rather than detect it in the message-passing graph (DGL's
    ``as_edge_prediction_sampler(exclude="reverse_id")``). Nodes and the other edges stay.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling.block import Block
    >>> from graphsys.gnn.link import exclude_pairs
    >>> b = Block(torch.tensor([0, 1, 2]), 2, torch.tensor([1, 0, 2]),
    ...           torch.tensor([0, 1, 1]))                   # 1 -> 0, 0 -> 1, 2 -> 1
    >>> out = exclude_pairs([b], np.array([0]), np.array([1]), 3)[0]
    >>> out.edge_src.tolist(), out.edge_dst.tolist()
    ([2], [1])
    """
    heads, tails = np.asarray(heads, np.int64), np.asarray(tails, np.int64)
    target = np.unique(node_pair_keys(np.minimum(heads, tails), np.maximum(heads, tails),
                                      num_nodes))
    out = []
    for b in blocks:
        u = b.src_nodes[b.edge_src].numpy()
        v = b.src_nodes[b.edge_dst].numpy()
        drop = np.isin(node_pair_keys(np.minimum(u, v), np.maximum(u, v), num_nodes), target)
        if not drop.any():
            out.append(b)
            continue
        keep = torch.from_numpy(~drop)
        out.append(Block(b.src_nodes, b.num_dst_nodes, b.edge_src[keep], b.edge_dst[keep],
                         None if b.edge_weight is None else b.edge_weight[keep],
                         src_degree=b.src_degree))
    return out


class LinkDecoder(nn.Module):
    """Score of (head, tail) embedding pairs: ``dot`` ``<h, t>``, ``distmult``
    ``<h, diag(r), t>`` (Yang et al. 2015; one learned relation vector ``r``, initialised
    to ones), or ``mlp``: a two-layer perceptron on the Hadamard product ``h * t`` (the
    decoder of OGB's GraphSAGE/GCN link baselines; symmetric in ``h`` and ``t``).
    Broadcasts over leading dimensions."""

    def __init__(self, kind: str, dim: int):
        super().__init__()
        check_choice("link_decoder", kind, LINK_DECODERS)
        self.kind = kind
        self.rel = nn.Parameter(torch.ones(dim)) if kind == "distmult" else None
        self.mlp = (nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))
                    if kind == "mlp" else None)

    def forward(self, h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if self.mlp is not None:
            return self.mlp(h * t).squeeze(-1)
        return ((h * self.rel) * t).sum(-1) if self.rel is not None else (h * t).sum(-1)


def _known(known, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
    """Whether each ``(heads[i], tails[i, j])`` is a known edge: bool like ``tails``."""
    out = np.zeros(tails.shape, bool)
    for r, h in enumerate(heads):
        row = known.indices[known.indptr[h]:known.indptr[h + 1]]
        if len(row):
            out[r] = np.isin(tails[r], row, assume_unique=False)
    return out


@torch.no_grad()
def evaluate_links(z: torch.Tensor, decoder: LinkDecoder, data: LinkData, mask: np.ndarray,
                   negatives: int, ks, seed: int, *, chunk: int = 256) -> dict[str, float]:
    """Filtered ranking metrics of the edges under ``mask`` (see the module docstring):
    ``mrr``, ``hits@k``, ``recall@k`` for each ``k`` in ``ks``, and ``auc``.

    ``z`` float (num_nodes, D): every node's embedding, computed over the training graph,
    scored by ``decoder``; ``negatives``: uniform negatives per positive, or -1 for every
    candidate tail; ``seed``: fixes the negatives (the same ones at every evaluation of a
    split). :func:`evaluate_scores` does the same for any pair score."""
    z = z.float().cpu()
    rel = None if decoder.rel is None else decoder.rel.detach().float().cpu()
    zr = z if rel is None else z * rel                      # <h, diag(r), t> = <h * r, t>
    lo, hi = data.tails

    mlp = None if decoder.mlp is None else copy.deepcopy(decoder.mlp).float().cpu()

    def pairs(h: np.ndarray, t: np.ndarray) -> np.ndarray:
        # the ids may be read-only views (a mapped split): torch.as_tensor copies them then
        prod = zr[torch.as_tensor(np.require(h, np.int64, "W"))].unsqueeze(1) * z[
            torch.as_tensor(np.require(t, np.int64, "W"))]
        return (prod.sum(-1) if mlp is None else mlp(prod).squeeze(-1)).numpy()

    def every(h: np.ndarray) -> np.ndarray:
        if mlp is None:
            return (zr[torch.from_numpy(h)] @ z[lo:hi].T).numpy()
        # the perceptron sees each (head, tail) product: candidate tails in slices of at
        # most 2**22 products' elements, so memory stays bounded on any node count
        step = max(1, (1 << 22) // max(1, len(h) * z.shape[1]))
        return np.concatenate([pairs(h, np.broadcast_to(np.arange(a, min(a + step, hi)),
                                                       (len(h), min(a + step, hi) - a)))
                               for a in range(lo, hi, step)], axis=1)

    return evaluate_scores(pairs, every, data, mask, negatives, ks, seed, chunk=chunk)


def evaluate_scores(pairs, every, data: LinkData, mask: np.ndarray, negatives: int, ks,
                    seed: int, *, chunk: int = 256) -> dict[str, float]:
    """:func:`evaluate_links` for any score: ``pairs(h (P,), t (P, M)) -> (P, M)`` scores
    of head ``h[i]`` with each ``t[i, j]``, ``every(h (P,)) -> (P, C)`` scores against every
    candidate tail (called only when ``negatives`` is -1)."""
    heads, tails = data.head[mask], data.tail[mask]
    lo, hi = data.tails
    rng = np.random.default_rng(seed_entropy(seed))
    rank_parts, pos_all, aucneg = [], [], []
    neg_ids = rng.integers(lo, hi, (len(heads), negatives if negatives > 0 else 1))
    for a in range(0, len(heads), chunk):
        h, t, neg = heads[a:a + chunk], tails[a:a + chunk], neg_ids[a:a + chunk]
        pos = np.asarray(pairs(h, t[:, None]), np.float64)[:, 0]
        valid = ~_known(data.known, h, neg) & (neg != h[:, None])
        sampled = np.asarray(pairs(h, neg), np.float64)
        aucneg.append(sampled[valid])
        if negatives > 0:
            rank_parts.append(ranks(pos, sampled, valid))
        else:
            ok = ~data.known[h][:, lo:hi].toarray().astype(bool)
            inside = (h >= lo) & (h < hi)
            ok[np.flatnonzero(inside), h[inside] - lo] = False        # the head itself
            rank_parts.append(ranks(pos, np.asarray(every(h), np.float64), ok))
        pos_all.append(pos)
    rank = np.concatenate(rank_parts) if rank_parts else np.zeros(0)
    pos = np.concatenate(pos_all) if pos_all else np.zeros(0)
    at = group_positions(rank, pos, heads)
    neg = np.concatenate(aucneg) if aucneg else np.zeros(0)
    return {**rank_metrics(rank, ks), **{f"recall@{k}": recall_at_k(at, heads, k) for k in ks},
            "auc": auc(pos, neg)}
