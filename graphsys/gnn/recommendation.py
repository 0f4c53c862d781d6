"""Item recommendations from a trained link-task (PinSage) checkpoint, and their metrics.

:func:`recommend` returns each user's top-``k`` items in original ids, with the item type's
``title`` node column when it has one (read for the recommended items only);
:func:`evaluate` ranks held-out interactions (e.g. the ``test`` edge set of ``graphsys
datasets ingest movielens-100k --split temporal``) and reports hits@K, recall@K and MRR.
``graphsys gnn recommend`` runs both.

Scoring is the item task's (:mod:`graphsys.gnn.item_task`), read from the checkpoint: the
item embeddings ``z`` are the checkpoint's model over its training graph with fixed-seed
PinSage neighbourhoods (:func:`~graphsys.gnn.embed_checkpoint`), ``b`` is the learned
per-item bias (checkpoint tensor ``input.bias``). User ``u``'s query is the normalised mean
of the unit embeddings of ``H(u)``, the items of ``u``'s edges in the *history* edge set
(default: the training edge set, ``train`` when the graph has one), and item ``j`` scores
``<q_u, z_j / |z_j|> + b_j``. A user without history has ``q_u = 0``: the bias alone,
the items' learned popularity, ranks the items.

A checkpoint of the link task on held-out edges between two entity types (``link_split``
``random`` or ``time``, e.g. MovieLens' ``user -> item`` ratings) is scored as that task
scored its edges: every node's embedding over the run's training graph (re-derived from the
checkpoint's seed and fractions), and ``s(z_u, z_j)`` of its decoder (``mlp``, ``dot`` or
``distmult``) for user ``u`` (a node of the relation's left type) and item ``j`` (its right
type); the history edge set only says which items are not ranked. Either checkpoint is used
only on a graph with the nodes it was trained on, in the same partitions and order
(:func:`~graphsys.gnn.checkpoint.check_graph`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from graphsys.errors import GraphsysError, ParameterError, check_count
from graphsys.gnn.checkpoint import (
    check_graph,
    check_task_dimensions,
    grown_rows,
    load_checkpoint,
    meta_field,
    train_config_of,
)
from graphsys.gnn.config import RGCN
from graphsys.gnn.item_task import RANKED
from graphsys.ranking import rank_metrics, ranks, recall_at_k
from graphsys.sampling.adjacency import typed_edges
from graphsys.storage.embedding_files import read_embedding_files
from graphsys.storage.graph import Graph, open_graph
from graphsys.views.rows import from_pairs

#: Users scored per matrix product (bounds the (users, items) score matrix in memory).
_CHUNK = 256


@dataclass
class _Interactions:
    """Per-user item lists of one edge set, CSR over type-local user ids."""

    indptr: np.ndarray
    items: np.ndarray

    def of(self, u: int) -> np.ndarray:
        return self.items[self.indptr[u]:self.indptr[u + 1]]


class _Scorer:
    """The scoring rule of one link-task checkpoint on one graph (see the module
    docstring): an item checkpoint (split ``user``) scores ``<q_u, unit(z_j)> + b_j``, a
    held-out-edge checkpoint between two entity types (split ``random`` or ``time``) its
    decoder's ``s(z_u, z_j)``."""

    def __init__(self, checkpoint: str | Path, graph: Graph | str | Path | None):
        state, config, meta = load_checkpoint(checkpoint)
        if meta.get("task") != "link" or config.get("model") == RGCN:
            what = "an R-GCN" if config.get("model") == RGCN else f"a {meta.get('task')!r}-task"
            raise ParameterError("checkpoint", f"{checkpoint} is {what} checkpoint; "
                                               f"recommendations need one of the link task "
                                               f"on a bipartite user-item graph")
        if graph is None:
            graph = meta_field(meta, "graph", checkpoint)
        self.graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
        old = check_graph(meta, self.graph, checkpoint, grown=True)
        self.pairs = "other_type" not in meta
        if self.pairs and old is not None:
            raise GraphsysError(f"{checkpoint}: a held-out-edge checkpoint serves the graph it "
                                f"was trained on, and {self.graph.path} grew since (entities "
                                f"appended); train on the grown graph")
        if self.pairs:
            check_task_dimensions(checkpoint, config, train_config_of(meta, checkpoint), state)
            self._held_out_edges(checkpoint, state, meta)
        else:
            item_type = meta_field(meta, "entity_type", checkpoint)
            if old is not None and item_type in old:  # new items: bias 0, rows from neighbours
                state = grown_rows(state, "input.", self.graph, item_type, old[item_type])
            self._items(checkpoint, state, meta)
        self.num_items = self.graph.num_nodes(self.item_type)
        self.rel = next(r for r in self.graph.relation_types
                        if {r.lhs, r.rhs} == {self.item_type, self.user_type})
        self._interactions: dict[str, _Interactions] = {}

    def _items(self, checkpoint, state: dict, meta: dict) -> None:
        """An item-task checkpoint: unit item embeddings and the item bias."""
        from graphsys.gnn.embed import embed_checkpoint

        self.item_type = meta_field(meta, "entity_type", checkpoint)
        self.user_type = meta_field(meta, "other_type", checkpoint)
        for t in (self.item_type, self.user_type):
            if t not in self.graph.entity_types:
                raise ParameterError("graph", f"{self.graph.path} has no entity type {t!r} "
                                              f"(the checkpoint's)")
        num_items = self.graph.num_nodes(self.item_type)
        if "input.bias" not in state:
            raise GraphsysError(f"{checkpoint}: checkpoint lacks the item bias tensor "
                                f"'input.bias'")
        self.bias = state["input.bias"].numpy().astype(np.float32)
        if self.bias.shape != (num_items,):
            raise ParameterError("graph", f"has {num_items:,} {self.item_type!r} nodes, "
                                          f"the checkpoint's item bias {self.bias.shape[0]:,}")
        with tempfile.TemporaryDirectory(prefix="graphsys-recommend-") as work:
            embed_checkpoint(checkpoint, Path(work) / "emb", graph=self.graph)
            files = read_embedding_files(Path(work) / "emb")
            z = np.concatenate(files.partitions) if files.partitions else np.zeros((0, 0))
        norm = np.linalg.norm(z, axis=1, keepdims=True)
        self.unit = (z / np.maximum(norm, 1e-12)).astype(np.float32)

    def _held_out_edges(self, checkpoint, state: dict, meta: dict) -> None:
        """A checkpoint of the link task on held-out edges between two entity types:
        every node's embedding over its training graph, and its decoder."""
        from graphsys.gnn.link_task import load_link_model

        types = meta_field(meta, "types", checkpoint, list)
        if len(types) != 2:
            raise ParameterError("checkpoint", f"{checkpoint} is a link checkpoint on one "
                                               f"entity type ({types[0][0] if types else '?'}, "
                                               f"split {meta.get('link_split')!r}); "
                                               f"recommendations need users and items of two "
                                               f"entity types (a bipartite graph)")
        z, self.decoder, data = load_link_model(checkpoint, state, meta, self.graph)
        (self.user_type, ulo, _), (self.item_type, ilo, ihi) = data.types
        self.z_users, self.z_items = z[ulo:ilo].float(), z[ilo:ihi].float()

    def edge_set_name(self, edge_set: str | None, param: str) -> str:
        """The name of ``edge_set`` (None: the graph's training edge set)."""
        try:
            return self.graph.edge_set(edge_set).name
        except GraphsysError as exc:
            raise ParameterError(param, str(exc)) from None

    def interactions(self, edge_set: str) -> _Interactions:
        """The users' items in ``edge_set`` (cached)."""
        if edge_set not in self._interactions:
            s, d, _ = typed_edges(self.graph, edge_set, self.rel.lhs, self.rel.rhs)
            users, items = (s, d) if self.rel.lhs == self.user_type else (d, s)
            self._interactions[edge_set] = _Interactions(*from_pairs(
                self.graph.num_nodes(self.user_type), users, items))
        return self._interactions[edge_set]

    def scores(self, users: np.ndarray, history: _Interactions) -> np.ndarray:
        """float32 (len(users), num_items): ``<q_u, unit(z_j)> + b_j`` (item checkpoint),
        or the decoder's ``s(z_u, z_j)`` (held-out-edge checkpoint)."""
        if self.pairs:
            return self._pair_scores(users)
        q = np.zeros((len(users), self.unit.shape[1]), np.float32)
        for r, u in enumerate(users):
            seen = history.of(u)
            if len(seen):
                q[r] = self.unit[seen].mean(0)
        q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        return q @ self.unit.T + self.bias[None, :]

    @torch.no_grad()
    def _pair_scores(self, users: np.ndarray) -> np.ndarray:
        zu = self.z_users[torch.as_tensor(np.asarray(users, np.int64))]
        n, d = self.z_items.shape
        out = np.empty((len(users), n), np.float32)
        # the decoder sees (user, item) pairs: at most 2**22 products' elements at a time
        step = max(1, (1 << 22) // max(1, n * d))
        for a in range(0, len(users), step):
            h = zu[a:a + step].unsqueeze(1)
            out[a:a + step] = self.decoder(h, self.z_items.unsqueeze(0)).numpy()
        return out


def _user_ids(scorer: _Scorer, users) -> tuple[list, np.ndarray]:
    """``(original ids as a list, type-local ids)`` of ``users`` (one id or several)."""
    ids = [users] if np.isscalar(users) or isinstance(users, str) else list(users)
    if not ids:
        raise ParameterError("users", "is empty: give at least one user id")
    if scorer.graph.entity_type(scorer.user_type).id_type == "int64":
        # integer ids also as text ("42", as read from a command line)
        try:
            ids = [int(u) if isinstance(u, str) else u for u in ids]
        except ValueError:
            raise ParameterError("users", f"must be integer ids of {scorer.user_type!r} "
                                          f"nodes, got {users!r}") from None
    try:
        internal = scorer.graph.to_internal(ids, scorer.user_type)
    except GraphsysError as exc:
        raise ParameterError("users", f"must be ids of {scorer.user_type!r} nodes: {exc}"
                             ) from None
    return ids, np.asarray(internal, np.int64)


def _title_values(scorer: _Scorer, title_column: str | None
                  ) -> tuple[str | None, np.ndarray | pa.Array | None]:
    """The item node column shown beside each recommendation, or ``(None, None)``."""
    columns = scorer.graph.node_columns(scorer.item_type)
    name = title_column if title_column is not None else ("title" if "title" in columns
                                                           else None)
    if name is None:
        return None, None
    if name not in columns:
        raise ParameterError("title_column", f"{name!r} is not a node column of "
                                             f"{scorer.item_type!r} (columns: "
                                             f"{', '.join(columns) or 'none'})")
    kind = next(c.kind for c in scorer.graph.entity_type(scorer.item_type).columns
                if c.name == name)
    if kind == "string":  # mapped: only the recommended items' strings are read
        return name, scorer.graph.string_column(name, scorer.item_type)
    values = np.asarray(scorer.graph.node_column(name, scorer.item_type))
    if values.ndim != 1:
        raise ParameterError("title_column", f"{name!r} is a feature column of width "
                                             f"{values.shape[1]}, not one value per item")
    return name, values


def recommend(checkpoint: str | Path, users, k: int = 10, *,
              graph: Graph | str | Path | None = None, exclude_seen: bool = True,
              edge_set: str | None = None, title_column: str | None = None) -> pa.Table:
    """Top-``k`` items for each user, scored as the trained link-task model scores them.

    Item ``j`` scores ``<q_u, z_j / |z_j|> + b_j`` for user ``u``: ``z`` are the
    checkpoint's item embeddings (as :func:`~graphsys.gnn.embed_checkpoint` computes
    them), ``b`` its learned item bias, and ``q_u`` the normalised mean of the unit
    embeddings of the items of ``u``'s edges in ``edge_set``; a checkpoint of held-out
    edges (split ``random`` or ``time``) scores with its decoder (see
    :mod:`graphsys.gnn.recommendation`). Items tie-break by internal id.

    Parameters
    ----------
    checkpoint : str or Path
        A link-task checkpoint directory (``gnn train --task link --out DIR`` writes
        ``DIR/checkpoint``).
    users : int, str or sequence of them
        Original ids of nodes of the checkpoint's user type (integer ids may be given as
        text).
    k : int, default 10
        Items per user; fewer when a user has fewer than ``k`` unseen items.
    graph : Graph, str or Path, optional
        The graph (default: the one the checkpoint was trained on).
    exclude_seen : bool, default True
        Leave out the items of the user's edges in ``edge_set``.
    edge_set : str, optional
        The users' history: the edge set whose items form the query and are excluded
        (default: the training edge set, ``train`` when the graph has one, else its
        only or ``default`` edge set).
    title_column : str, optional
        An item node column (one value per item: a string column such as MovieLens'
        titles, or a label) added as column ``title``; default: the item column ``title``
        when there is one, else none.

    Returns
    -------
    pyarrow.Table
        One row per recommendation, users in the order given, best first: ``user`` and
        ``item`` (original ids), ``rank`` int32 (1 = best), ``score`` float32, and
        ``title`` when a title column is used.

    Raises
    ------
    ParameterError
        A node-task or R-GCN checkpoint, a link checkpoint on one entity type, an unknown
        user id or edge set, ``k`` not a positive integer, a ``title_column`` the item type
        lacks.
    GraphsysError
        A graph whose nodes are not the checkpoint's (other ids, or another partitioning).

    See Also
    --------
    evaluate : hits@K, recall@K and MRR of held-out edges under the same scores.

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    A small user -> item graph, a PinSage model trained for one epoch, and two users'
    top 3 (items they rated are not recommended):

    >>> import tempfile, numpy as np, pyarrow as pa
    >>> from graphsys.storage.format import RelationType
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> from graphsys.gnn import TrainConfig, train
    >>> from graphsys.gnn import recommend
    >>> rng = np.random.default_rng(0)
    >>> users, items = rng.integers(0, 30, 600), rng.integers(100, 140, 600)
    >>> work = tempfile.mkdtemp()
    >>> rated = EdgeSource(table=pa.table({"src": users, "dst": items}), relation="rated")
    >>> _ = ingest_sources([rated], work + "/g", IngestOptions(
    ...     relation_types=[RelationType("rated", "user", "item")]))
    >>> _ = train(work + "/g", TrainConfig(task="link", model="pinsage", hidden=8, epochs=1,
    ...                                     fanouts=[3, 3]), out=work + "/run")
    >>> recs = recommend(work + "/run/checkpoint", [0, 1], k=3)
    >>> recs.column_names, recs.num_rows, recs.column("rank").to_pylist()
    (['user', 'rank', 'item', 'score'], 6, [1, 2, 3, 1, 2, 3])
    >>> seen = set(items[users == 0].tolist())
    >>> any(r["item"] in seen for r in recs.to_pylist() if r["user"] == 0)
    False
    """
    k = check_count("k", k)
    scorer = _Scorer(checkpoint, graph)
    ids, internal = _user_ids(scorer, users)
    history = scorer.interactions(scorer.edge_set_name(edge_set, "edge_set"))
    title_name, titles = _title_values(scorer, title_column)
    out_user, out_rank, out_item, out_score = [], [], [], []
    for a in range(0, len(internal), _CHUNK):
        chunk = internal[a:a + _CHUNK]
        scores = scorer.scores(chunk, history)
        for r, u in enumerate(chunk):
            row = scores[r]
            if exclude_seen:
                row[history.of(u)] = -np.inf
            top = np.argsort(-row, kind="stable")[:k]
            top = top[np.isfinite(row[top])]
            out_user += [ids[a + r]] * len(top)
            out_rank.append(np.arange(1, len(top) + 1, dtype=np.int32))
            out_item.append(top)
            out_score.append(row[top])
    items = np.concatenate(out_item) if out_item else np.zeros(0, np.int64)
    table = {"user": pa.array(out_user),
             "rank": pa.array(np.concatenate(out_rank) if out_rank else [], pa.int32()),
             "item": pa.array(scorer.graph.to_original(items, scorer.item_type)),
             "score": pa.array(np.concatenate(out_score) if out_score else [], pa.float32())}
    if title_name is not None:
        table["title"] = (titles.take(pa.array(items)) if isinstance(titles, pa.Array)
                          else pa.array(titles[items]))
    return pa.table(table)


def ranking_metrics(scores: np.ndarray, targets: Sequence[np.ndarray],
                    excluded: Sequence[np.ndarray], ks: Iterable[int] = (10,)
                    ) -> dict[str, float]:
    """hits@K, recall@K and MRR of held-out items under a score matrix.

    For each row ``u`` (a user) with at least one target: the candidates are every item
    except ``excluded[u]`` (targets stay candidates even when excluded); each target ranks
    among them by :func:`graphsys.ranking.ranks` (ties half, NaN worst). ``hits@K`` = 1 if
    some target ranks <= K; ``recall@K`` = the share of the targets that rank <= K;
    reciprocal rank = 1 / the best target's rank. Each is averaged over the rows with
    targets (rows without are skipped; NaN for none, :mod:`graphsys.ranking`'s rule).

    Parameters
    ----------
    scores : numpy.ndarray
        float (U, N).
    targets, excluded : sequence of numpy.ndarray
        U int arrays of item indices each.
    ks : iterable of int, default (10,)
        The cut-offs K.

    Returns
    -------
    dict
        ``users`` (rows with targets), ``hits@K`` and ``recall@K`` for each K, ``mrr``.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[0.9, 0.8, 0.1, 0.5], [0.2, 0.4, 0.3, 0.1]])
    >>> m = ranking_metrics(s, [np.array([2]), np.array([0, 3])],
    ...                     [np.array([0]), np.array([], int)], ks=[1, 3])
    >>> m["users"], m["hits@1"], m["hits@3"], m["recall@3"], round(m["mrr"], 4)
    (2, 0.0, 1.0, 0.75, 0.3333)
    """
    ks = sorted({check_count("ks", k) for k in ks})
    if not ks:
        raise ParameterError("ks", "is empty: give at least one cut-off K")
    parts, users, best = [], [], []
    for u in range(scores.shape[0]):
        tgt = np.unique(np.asarray(targets[u], np.int64))
        if len(tgt) == 0:
            continue
        row = np.asarray(scores[u], np.float64)
        valid = np.ones((len(tgt), len(row)), bool)
        valid[:, np.setdiff1d(np.asarray(excluded[u], np.int64), tgt)] = False
        valid[np.arange(len(tgt)), tgt] = False              # not its own rival
        parts.append(ranks(row[tgt], np.broadcast_to(row, valid.shape), valid))
        users.append(np.full(len(tgt), u))
        best.append(parts[-1].min())
    # some target within K <=> the best one is: hits@K and MRR of the best ranks; recall@K
    # per user, the other targets competing (graphsys.ranking.recall_at_k)
    rank, users = (np.concatenate(x) if x else np.zeros(0) for x in (parts, users))
    return {"users": len(best), **rank_metrics(best, ks),
            **{f"recall@{k}": recall_at_k(rank, users, k) for k in ks}}


def evaluate(checkpoint: str | Path, *, graph: Graph | str | Path | None = None,
             edge_set: str = "test", history: str | None = None,
             exclude: Sequence[str] | None = None, ks: Iterable[int] = (10,)
             ) -> dict[str, float]:
    """hits@K, recall@K and MRR of held-out interactions, ranked as :func:`recommend` ranks.

    Every user with edges in ``edge_set`` is scored against all items (see
    :func:`recommend`: the query is the user's items in ``history``); the items of the
    user's edges in ``history`` and in the ``exclude`` edge sets are not ranked, the
    held-out items are (:func:`ranking_metrics` defines the metrics). With the temporal
    split of ``graphsys datasets ingest movielens-100k --split temporal`` this is the
    leave-last-out protocol: each user's last interaction ranked among the items they
    never rated.

    Parameters
    ----------
    checkpoint : str or Path
        A link-task checkpoint directory.
    graph : Graph, str or Path, optional
        The graph (default: the one the checkpoint was trained on).
    edge_set : str, default "test"
        The held-out interactions.
    history : str, optional
        The edge set of the users' known items (default: the training edge set, as in
        :func:`recommend`).
    exclude : sequence of str, optional
        Further edge sets whose items are not ranked for their users (default: every edge
        set other than ``edge_set`` and ``history``, e.g. ``valid`` when evaluating
        ``test``).
    ks : iterable of int, default (10,)
        The cut-offs K of hits@K and recall@K.

    Returns
    -------
    dict
        ``users`` evaluated, ``hits@K`` and ``recall@K`` for each K, ``mrr``, their
        ``protocol`` (``"full, filtered"``: every item ranked, the user's known ones left
        out; :func:`graphsys.ranking.protocol`), and the ``edge_set``, ``history`` and
        ``exclude`` used.

    Raises
    ------
    ParameterError
        A node-task checkpoint, an unknown edge set, ``edge_set`` equal to ``history``,
        a K that is not a positive integer.

    References
    ----------
    .. [1] R. Ying et al., "Graph Convolutional Neural Networks for Web-Scale Recommender
       Systems", KDD 2018, https://arxiv.org/abs/1806.01973 (hit-rate and MRR).

    Examples
    --------
    A user -> item graph whose last 30 edges are held out as ``test``:

    >>> import tempfile, numpy as np, pyarrow as pa
    >>> from graphsys.storage.format import RelationType
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> from graphsys.gnn import TrainConfig, train
    >>> from graphsys.gnn.recommendation import evaluate
    >>> rng = np.random.default_rng(0)
    >>> users, items = rng.integers(0, 30, 600), rng.integers(100, 140, 600)
    >>> work = tempfile.mkdtemp()
    >>> sources = [EdgeSource(table=pa.table({"src": users[a:b], "dst": items[a:b]}),
    ...                       relation="rated", edge_set=name)
    ...            for name, a, b in (("train", 0, 570), ("test", 570, 600))]
    >>> _ = ingest_sources(sources, work + "/g",
    ...                    IngestOptions(relation_types=[RelationType("rated", "user", "item")]))
    >>> _ = train(work + "/g", TrainConfig(task="link", model="pinsage", hidden=8, epochs=1,
    ...                                     fanouts=[3, 3]), out=work + "/run")
    >>> m = evaluate(work + "/run/checkpoint", ks=[5, 10])
    >>> m["history"], sorted(k for k in m if "@" in k)
    ('train', ['hits@10', 'hits@5', 'recall@10', 'recall@5'])
    >>> 0.0 <= m["hits@5"] <= m["hits@10"] <= 1.0
    True
    """
    ks = list(ks)
    scorer = _Scorer(checkpoint, graph)
    held = scorer.edge_set_name(edge_set, "edge_set")
    hist = scorer.edge_set_name(history, "history")
    if held == hist:
        raise ParameterError("edge_set", f"is the history edge set {hist!r}; evaluate an "
                                         f"edge set held out of training")
    if exclude is None:
        exclude = [e for e in scorer.graph.edge_sets if e not in (held, hist)]
    exclude = [scorer.edge_set_name(e, "exclude") for e in exclude]
    targets_of = scorer.interactions(held)
    history_of = scorer.interactions(hist)
    others = [scorer.interactions(e) for e in exclude]
    users = np.flatnonzero(np.diff(targets_of.indptr) > 0)
    totals: dict[str, float] = {}
    count = 0
    for a in range(0, len(users), _CHUNK):
        chunk = users[a:a + _CHUNK]
        scores = scorer.scores(chunk, history_of)
        excluded = [np.concatenate([history_of.of(u), *(o.of(u) for o in others)])
                    for u in chunk]
        m = ranking_metrics(scores, [targets_of.of(u) for u in chunk], excluded, ks)
        for key, value in m.items():
            if key != "users":
                totals[key] = totals.get(key, 0.0) + value * m["users"]
        count += m["users"]
    if count == 0:
        raise ParameterError("edge_set", f"{held!r} has no {scorer.rel.name!r} edges "
                                         f"between {scorer.user_type!r} and "
                                         f"{scorer.item_type!r} nodes")
    return {"users": count, **{key: v / count for key, v in totals.items()},
            "protocol": RANKED, "edge_set": held, "history": hist,
            "exclude": list(exclude)}
