"""Link-prediction evaluation (:func:`evaluate`): MRR, Hits@1/3/10 and mean rank, with the
ranking protocol named in the result (:func:`protocol_name`; the protocols and when each
applies: ``docs/embed.md``). Ranks follow :mod:`graphsys.ranking`'s rule (ties half, NaN
worst); sampled candidates are shared by a batch of :data:`EVAL_BATCH` triples.
"""

from __future__ import annotations

import numpy as np
import torch

from graphsys.embed.checkpoint_files import check_graph
from graphsys.embed.embeddings import Embeddings
from graphsys.errors import GraphsysError, ParameterError, check_count
from graphsys.ranking import protocol, rank_metrics, ranks
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.triples import KnownAnswers, known_triples, triples

EVAL_BATCH = 500
KS = (1, 3, 10)  # the k of the hits@k that evaluate reports


def _check_fits(candidates: int, dimension: int) -> None:
    """Refuse a sampled-candidate count whose batch (ids, rows, and a score, validity and
    filter entry per triple of :data:`EVAL_BATCH`) exceeds the RAM available: 10**9 failed
    in NumPy's allocator with a traceback."""
    from graphsys.memory import over_budget

    if short := over_budget(candidates * (8 + 8 * dimension + 10 * EVAL_BATCH)):
        raise ParameterError("candidates", f"{candidates} sampled candidates need {short}")


def protocol_name(filtered: bool, candidates: str | int | list) -> str:
    """The name of a ranking protocol, as :func:`evaluate` reports it in ``protocol``.

    The names are :func:`graphsys.ranking.protocol`'s, shared by every engine: candidates
    (``full``: every entity of the type; ``sampled@N``: ``N`` uniformly sampled ones, as
    PyTorch-BigGraph evaluates large graphs), then ``filtered`` (every other true answer
    removed first, the standard knowledge-graph protocol) or ``raw``, then ``both sides``
    (each triple's tail and head are ranked). Entity types evaluated under different
    candidate counts give the names joined by ``" + "``.

    Parameters
    ----------
    filtered : bool
        Whether known true triples were removed.
    candidates : "all", int or list of them
        ``evaluate``'s ``candidates`` result: ``"all"`` (full ranking), a sample size, or
        a list of both when entity types differ.

    Returns
    -------
    str

    Examples
    --------
    >>> from graphsys.embed.evaluation import protocol_name
    >>> protocol_name(True, "all")
    'full, filtered, both sides'
    >>> protocol_name(False, 1000)
    'sampled@1000, raw, both sides'
    >>> protocol_name(True, ["all", 1000])
    'full, filtered, both sides + sampled@1000, filtered, both sides'
    """
    if isinstance(candidates, list):
        return " + ".join(protocol_name(filtered, c) for c in candidates)
    return protocol(None if candidates == "all" else int(candidates), filtered=filtered,
                    both_sides=True)


def _require_graph_of(emb: Embeddings, graph: Graph) -> None:
    """Refuse, in one line, a ``graph`` whose ids do not index ``emb``'s rows: one that
    is not the graph the embeddings map ids with, nor a copy of it (the same entities in
    the same partitions, :func:`~graphsys.embed.checkpoint_files.check_graph`). Another
    ingest of the same triples was ranked with the wrong rows, reported as success.
    Embeddings whose recorded graph is gone take ``graph``, as ``Embeddings.load(graph=)``."""
    try:
        if graph is emb.graph:
            return
    except GraphsysError:   # the recorded graph is gone (or not recorded): map with this one
        emb._set_graph(graph)
        return
    grown = check_graph(emb.meta, graph, emb.path, grown=True)
    if grown != emb._grown or any(graph.num_nodes(t) != emb.num_entities(t)
                                  for t in emb.entity_types):
        raise GraphsysError(f"{emb.path}: the graph {graph.path} has other entities than the "
                            f"graph {emb.graph.path} these embeddings map ids with; load "
                            f"them with graph={graph.path} (Embeddings.load)")


def evaluate(emb: Embeddings, graph: Graph | str, edge_set: str, *, filtered: bool = True,
             candidates: str | int = "auto", relation_wise: bool = False, seed: int = 0,
             progress=None) -> dict:
    """Link-prediction metrics of trained embeddings on an edge set: MRR, Hits@k, mean rank.

    Every triple ``(h, r, t)`` of ``edge_set`` is ranked twice: its tail among the
    candidate tails of ``(h, r, ?)`` and its head among the candidate heads of
    ``(?, r, t)``, the latter by the reciprocal relation's operator (Lacroix et al.'s
    protocol [2]_). Ties count half (a model scoring everything equal gets the middle
    rank). *Filtered* ranking, the standard protocol since Bordes et al. [1]_, first
    removes every other candidate that forms a true triple in any edge set of the graph.
    The result names its protocol (:func:`protocol_name`); figures of different protocols
    are not comparable.

    Parameters
    ----------
    emb : Embeddings
        The trained embeddings (with relation operators).
    graph : Graph, str or Path
        The graph holding ``edge_set`` (and, when filtering, the known triples), or its
        directory.
    edge_set : str
        The edge set to rank, e.g. ``"test"``.
    filtered : bool, optional
        Filtered (default) or raw ranking.
    candidates : {"auto", "all"} or int, optional
        ``"all"``: every entity of the type (full ranking); an int: that many sampled
        uniformly, shared by a batch of triples (as PyTorch-BigGraph); ``"auto"``
        (default): full up to the config's ``eval_full_max_candidates`` entities per type,
        else ``eval_num_uniform_negs`` sampled.
    relation_wise : bool, optional
        Also report the metrics of each relation (default False).
    seed : int, optional
        Seed of the sampled candidates (default 0).
    progress : callable, optional
        ``progress(n)`` is called after every ``n`` triples ranked.

    Returns
    -------
    dict
        ``mrr``, ``hits@1``, ``hits@3``, ``hits@10``, ``mean_rank`` over both sides of
        every triple, ``count`` (triples), ``filtered``, ``candidates``, ``protocol``
        (:func:`protocol_name` of the two) and, with ``relation_wise``, ``relations``
        (relation name -> the same metrics).

    Raises
    ------
    GraphsysError
        Embeddings without relation operators, an unknown edge set, or a graph whose
        entities are not those the embeddings were loaded with.
    ParameterError
        ``candidates`` neither ``"auto"``, ``"all"`` nor a positive integer.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys.embed
    >>> from graphsys.generators import knowledge_graph
    >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
    >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
    ...                   "rel": [f"r{r}" for r in t["rel"]]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
    >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
    >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
    >>> res = graphsys.embed.evaluate(emb, g, g.edge_set().name)
    >>> res["count"], res["protocol"], 0 < res["mrr"] <= 1
    (150, 'full, filtered, both sides', True)
    >>> graphsys.embed.evaluate(emb, g, g.edge_set().name, filtered=False,
    ...                         candidates=10)["protocol"]
    'sampled@10, raw, both sides'

    References
    ----------
    .. [1] A. Bordes, N. Usunier, A. Garcia-Duran, J. Weston, O. Yakhnenko, "Translating
       Embeddings for Modeling Multi-relational Data", NeurIPS 2013.
    .. [2] T. Lacroix, N. Usunier, G. Obozinski, "Canonical Tensor Decomposition for
       Knowledge Base Completion", ICML 2018.
    .. [3] A. Lerer et al., "PyTorch-BigGraph: A Large-scale Graph Embedding System",
       SysML 2019.
    """
    if candidates not in ("auto", "all"):   # 2.5 was cut to 2, True read as 1, -3 crashed
        if isinstance(candidates, str):
            raise ParameterError("candidates", f"must be 'auto', 'all' or a positive "
                                               f"integer, got {candidates!r}")
        candidates = check_count("candidates", candidates)
        _check_fits(candidates, emb.dimension)
    seed = check_count("seed", seed, minimum=0)   # -1 or "x" raised in NumPy's generator
    emb.require_relations("link-prediction evaluation")
    # a directory, as train and Embeddings.load take, raised AttributeError
    graph = graph if isinstance(graph, Graph) else open_graph(graph)
    _require_graph_of(emb, graph)
    test = triples(graph, graph.edge_set(edge_set).name)
    m = max(graph.num_nodes(t) for t in graph.entity_types) + 1
    filt_tail = filt_head = None
    if filtered:
        known = known_triples(graph)
        filt_tail = KnownAnswers(known.r * m + known.h, known.t, m)
        filt_head = KnownAnswers(known.r * m + known.t, known.h, m)
    rels = emb.relations
    lhs_of = np.array([emb.entity_types.index(x["lhs"]) for x in rels])
    rhs_of = np.array([emb.entity_types.index(x["rhs"]) for x in rels])
    cache: dict[str, torch.Tensor] = {}
    gen = np.random.default_rng(seed)
    cfg = emb.config

    def cand_matrix(etype: str) -> torch.Tensor:
        if etype not in cache:
            cache[etype] = emb.comparator.prepare(torch.from_numpy(emb.to_numpy(etype)))
        return cache[etype]

    def mode(etype: str) -> int | None:
        if candidates == "all":
            return None
        if candidates == "auto":
            n = emb.num_entities(etype)
            return None if n <= cfg.eval_full_max_candidates else cfg.eval_num_uniform_negs
        return int(candidates)

    ranks_tail = np.zeros(len(test.h))
    ranks_head = np.zeros(len(test.h))
    used = set()
    for lt in np.unique(lhs_of[test.r]) if len(test.h) else []:
        for rt in np.unique(rhs_of[test.r]):
            sel = np.flatnonzero((lhs_of[test.r] == lt) & (rhs_of[test.r] == rt))
            ltn, rtn = emb.entity_types[lt], emb.entity_types[rt]
            for start in range(0, len(sel), EVAL_BATCH):
                rows = sel[start:start + EVAL_BATCH]
                h, r, t = test.h[rows], test.r[rows], test.t[rows]
                for side, anchor, answer, anchor_t, cand_t, filt, out in (
                        ("rhs", h, t, ltn, rtn, filt_tail, ranks_tail),
                        ("lhs", t, h, rtn, ltn, filt_head, ranks_head)):
                    q = emb._query(side, emb.rows(anchor, anchor_t), r)
                    k = mode(cand_t)
                    used.add("all" if k is None else k)
                    if k is None:
                        cands = cand_matrix(cand_t)
                        scores = emb.comparator.neg(q, cands)
                        ar = torch.arange(len(rows))
                        pos = scores[ar, torch.from_numpy(answer)]
                        valid = torch.ones(scores.shape, dtype=torch.bool)
                        valid[ar, torch.from_numpy(answer)] = False
                        if filt is not None:
                            qr, ans = filt.answers(r * m + anchor)
                            keep = ans != answer[qr]
                            valid[torch.from_numpy(qr[keep]), torch.from_numpy(ans[keep])] = False
                    else:
                        n = emb.num_entities(cand_t)
                        cidx = gen.integers(0, n, size=k)
                        cands = emb.comparator.prepare(torch.from_numpy(emb.rows(cidx, cand_t)))
                        scores = emb.comparator.neg(q, cands)
                        own = emb.comparator.prepare(torch.from_numpy(emb.rows(answer, cand_t)))
                        pos = emb.comparator.neg(q.unsqueeze(1), own.unsqueeze(1)).reshape(-1)
                        drop = cidx[None, :] == answer[:, None]
                        if filt is not None:
                            drop |= filt.contains(r * m + anchor, cidx)
                        valid = torch.from_numpy(~drop)
                    out[rows] = ranks(pos, scores, valid)
                if progress is not None:
                    progress(len(rows))
    result = rank_metrics(np.concatenate([ranks_tail, ranks_head]), KS, mean=True)
    result["count"] = len(test.h)
    result["filtered"] = bool(filtered)
    result["candidates"] = min(used, key=str) if len(used) == 1 else sorted(used, key=str)
    if not used:
        result["candidates"] = "all" if candidates == "auto" else candidates
    result["protocol"] = protocol_name(bool(filtered), result["candidates"])
    if relation_wise:
        per = {}
        for ri in np.unique(test.r):
            sel = test.r == ri
            d = rank_metrics(np.concatenate([ranks_tail[sel], ranks_head[sel]]), KS, mean=True)
            d["count"] = int(sel.sum())
            per[rels[ri]["name"]] = d
        result["relations"] = per
    return result
