"""``graphsys warmup --all``: compile the kernels of every public analysis, not only the
vertex algorithms'.

:func:`graphsys.bsp.warmup.warmup` runs the registered vertex algorithms; :func:`warmup_all`
runs it, then every public function of :mod:`graphsys.bsp`, :mod:`graphsys.mining`,
:mod:`graphsys.measures`, the samplers of :mod:`graphsys.sampling` and the functions of the
NetworkX backend (:data:`_nx_graphsys.FUNCTIONS`) once on small generated graphs, in each
layout the library hands its kernels: a directed R-MAT graph (with edge weights), an
undirected one (both directions stored, as the registry's undirected datasets are), the
same with stored adjacency indexes (``csr``, ``csc``, ``push``, ``sym``: mapped, read-only
arrays, which numba compiles for apart), and NetworkX ``Graph`` and ``DiGraph`` objects;
then the runs given a previous result after a graph changed (:func:`_changes_calls`: the
repairs of WCC, BFS and SSSP, PageRank's delta push).
The calls are the ones a user's first call makes (:data:`CALLS`, :data:`NX_CALLS`), so the
kernel signatures they compile are the ones real calls look up; the storage and shared
kernel modules (``storage/``, ``kernels/``) are compiled along the way. One progress line
per area names the kernel modules it compiled or loaded. The kernels of model training
(``embed/``, ``gnn/``) are left to a first training step, whose own run is long.
"""

from __future__ import annotations

import itertools
import re
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: Nodes and edges of the generated graphs: every layout rule takes its default path at this
#: size, and each call takes milliseconds once compiled.
NODES, EDGES = 1 << 9, 1 << 12

#: Nodes of each component of the distance measures' larger graph (:func:`_two_components`).
LARGE_NODES = 1 << 14

#: Node pairs a link score is asked for (original ids; modulo the graph's nodes).
PAIRS = np.array([[0, 1], [1, 2], [2, 3], [0, 5]], dtype=np.int64)


def _bsp_calls() -> dict[str, Callable]:
    from graphsys import bsp

    return {
        "bfs": lambda g, s: bsp.bfs(g, s), "sssp": lambda g, s: bsp.sssp(g, s),
        "wcc": lambda g, s: bsp.wcc(g), "scc": lambda g, s: bsp.scc(g),
        "kcore": lambda g, s: bsp.kcore(g), "pagerank": lambda g, s: bsp.pagerank(g),
        "personalized_pagerank": lambda g, s: bsp.personalized_pagerank(g, [s]),
        "hits": lambda g, s: bsp.hits(g),
        "label_propagation": lambda g, s: bsp.label_propagation(g),
        "betweenness": lambda g, s: bsp.betweenness(g, k=50),
        "closeness": lambda g, s: bsp.closeness(g, k=50),
        "harmonic": lambda g, s: bsp.harmonic(g, k=50),
        # weighted where the graph has weights: its searches are kernels of their own
        "betweenness_weighted": lambda g, s: bsp.betweenness(g, k=50, weighted=_weighted(g)),
        "closeness_weighted": lambda g, s: bsp.closeness(g, k=50, weighted=_weighted(g)),
        "louvain": lambda g, s: bsp.louvain(g), "leiden": lambda g, s: bsp.leiden(g),
        "modularity": lambda g, s: bsp.modularity(g, bsp.wcc(g)),
    }


def _weighted(g) -> bool:
    """Whether ``g``'s default edge set has weights."""
    return bool(g.edge_set().has_weight)


def _mining_calls() -> dict[str, Callable]:
    from graphsys import mining

    path = mining.Pattern([(0, 1), (1, 2)], directed=True)  # its matches read directions
    return {
        "triangle_count": lambda g, s: mining.triangle_count(g),
        "triangles": lambda g, s: mining.triangles(g),
        "clustering": lambda g, s: mining.clustering(g),
        "average_clustering": lambda g, s: mining.average_clustering(g),
        "transitivity": lambda g, s: mining.transitivity(g),
        "triangle_stats": lambda g, s: mining.triangle_stats(g, per_node=True),
        "triangle_work": lambda g, s: mining.triangle_work(g),
        "triad_census": lambda g, s: mining.triad_census(g),
        "clique_count": lambda g, s: mining.clique_count(g, 4),
        "clique_counts": lambda g, s: mining.clique_counts(g, 4),
        "cliques": lambda g, s: mining.cliques(g, 4, limit=100),
        "motifs": lambda g, s: mining.motifs(g, 3),
        "motifs_4": lambda g, s: mining.motifs(g, 4),
        "motifs_5": lambda g, s: mining.motifs(g, 5),
        "motifs_directed": lambda g, s: mining.motifs(g, 3, directed=True),
        "motifs_sampled": lambda g, s: mining.motifs(g, 4, method="sampled", samples=10_000),
        "count": lambda g, s: mining.count(g, "diamond"),
        "count_induced": lambda g, s: mining.count(g, "diamond", induced=True),
        "matches": lambda g, s: mining.matches(g, "diamond", limit=100),
        "matches_directed": lambda g, s: mining.matches(g, path, limit=100),
        "iter_matches": lambda g, s: list(itertools.islice(
            mining.iter_matches(g, "diamond", chunk=64), 100)),
        "frequent_subgraphs": lambda g, s: mining.frequent_subgraphs(
            g, np.arange(g.num_nodes()) % 3, 2, max_edges=2),
    }


def _measures_calls() -> dict[str, Callable]:
    from graphsys import measures
    from graphsys.measures import METHODS

    calls = {
        "degree_stats": lambda g, s: measures.degree_stats(g),
        "density": lambda g, s: measures.density(g),
        "reciprocity": lambda g, s: measures.reciprocity(g),
        "degree_assortativity": lambda g, s: measures.degree_assortativity(g),
        "diameter": lambda g, s: measures.diameter(g),
        "diameter_exact": lambda g, s: measures.diameter(g, exact=True),
        "eccentricity": lambda g, s: measures.eccentricity(g, [s]),
        "common_neighbors": lambda g, s: measures.common_neighbors(g, s, s),
    }
    for method in METHODS:
        calls[f"link_scores_{method}"] = (
            lambda g, s, m=method: measures.link_scores(g, _pairs(g), m))
        calls[f"top_links_{method}"] = (
            lambda g, s, m=method: measures.top_links(g, [s], 10, m))
    return calls


def _pairs(g) -> np.ndarray:
    ids = g.node_ids()
    return ids[PAIRS % len(ids)]


def _nx_calls() -> dict[str, Callable]:
    """NetworkX's name -> ``call(G, source)`` through the graphsys backend."""
    import networkx as nx

    from _nx_graphsys import FUNCTIONS

    links = ("jaccard_coefficient", "adamic_adar_index", "resource_allocation_index",
             "preferential_attachment")
    out = {}
    for name in FUNCTIONS:
        f = _nx_function(nx, name)
        if not hasattr(f, "backends"):
            continue  # not dispatched by this NetworkX (nx.density): no call reaches graphsys
        if name in links:
            out[name] = (lambda G, s, f=f:
                         list(f(G, [(s, t) for t in list(G)[:4]], backend="graphsys")))
        else:
            out[name] = (lambda G, s, f=f, a=_nx_arguments(f), kw=NX_KEYWORDS.get(name, {}):
                         _drain(f(G, *a(G, s), backend="graphsys", **kw)))
    return out


#: Keyword arguments of the NetworkX functions whose defaults do not suit the generated
#: graphs: Katz's default alpha (0.1) diverges where the largest eigenvalue exceeds 10.
NX_KEYWORDS = {name: {"alpha": 0.01} for name in ("katz_centrality", "katz_centrality_numpy")}


def _nx_function(nx, name: str):
    """NetworkX's function ``name``, wherever NetworkX keeps it (top level, community or
    bipartite), or None."""
    for where in (nx, nx.community, nx.bipartite):
        if hasattr(where, name):
            return getattr(where, name)
    return None


def _nx_arguments(f) -> Callable:
    """``(G, source)`` -> the required arguments after the graph of NetworkX's ``f``,
    by their names: a node is ``source``, a second one the graph's last node, a node set the
    first two nodes, ``k``/``distance`` 1, ``communities`` one community of every node."""
    import inspect

    names = [p.name for p in list(inspect.signature(f).parameters.values())[1:]
             if p.default is inspect.Parameter.empty
             and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def value(G, s, name: str):
        if name in ("source", "n", "u"):
            return s
        if name in ("target", "v"):
            return list(G)[-1]
        if name in ("k", "distance"):
            return 1
        if name == "communities":
            return [set(G)]
        return list(G)[:2]  # S, nbunch1, sources

    return lambda G, s: tuple(value(G, s, n) for n in names)


def _drain(value):
    """A generator's first :data:`DRAIN` items (NetworkX returns some results lazily, as
    each item is asked for: all of an all-pairs one is n² entries), else the value."""
    return list(itertools.islice(value, DRAIN)) if hasattr(value, "__next__") else value


#: Items of a lazy NetworkX result a call takes: each is computed by the same kernels.
DRAIN = 3


#: Area -> a function returning its public calls, ``name -> call(graph, source)`` on a stored
#: graph and one of its original node ids; ``nx_backend``'s take a NetworkX graph and one
#: of its nodes instead (each area imports its engine when its calls are built).
CALLS: dict[str, Callable[[], dict[str, Callable]]] = {
    "bsp": _bsp_calls, "mining": _mining_calls, "measures": _measures_calls,
    "nx_backend": _nx_calls}


#: The packages whose kernels :func:`warmup_all` compiles; the kernel modules of the others
#: (model training's) are compiled by a first training step.
COVERED = ("bsp", "kernels", "measures", "mining", "nx_backend", "sampling", "storage", "views")


#: A numba kernel's decorator at the start of a line, or ``name = njit(...)(function)``.
_DECORATOR = re.compile(r"^(\s*@|\w+ = )(numba\.)?njit\b", re.MULTILINE)


def kernel_modules() -> list[str]:
    """The dotted names of graphsys's modules that define a numba kernel, found by reading
    the sources (nothing is imported)."""
    from graphsys.jit_cache import PACKAGE, module_name

    return [module_name(path) for path in sorted(PACKAGE.rglob("*.py"))
            if _DECORATOR.search(path.read_text(encoding="utf-8"))]


def _import_covered() -> None:
    """Import every covered kernel module: a kernel declared with its signatures is
    compiled (or loaded) as its module is imported."""
    import importlib

    for name in kernel_modules():
        if name.split(".")[1] in COVERED:
            importlib.import_module(name)


def _sampling_calls() -> dict[str, Callable]:
    from graphsys import sampling

    def ppr(g, s):
        fw = sampling.homogeneous_adjacency(g, symmetric=False, direction="out")
        bw = sampling.homogeneous_adjacency(g, symmetric=False, direction="in")
        return sampling.PPRHardNegativeSampler(fw, bw, 1, 8, 2)(np.array([0, 1]))

    return {
        "neighbor": lambda g, s: sampling.NeighborSampler(g, [4, 2]).sample_blocks([0, 1]),
        "neighbor_replace": lambda g, s: sampling.NeighborSampler(
            g, [4, 2], replace=True).sample_blocks([0, 1]),
        "uniform_negative": lambda g, s: sampling.UniformNegativeSampler(
            g.num_nodes(), 2)(np.array([0, 1])),
        "ppr_negative": ppr,
        "temporal_recent": lambda g, s: sampling.TemporalNeighborSampler(
            g, [3, 2]).sample_blocks(sampling.SamplerInput([0, 1, 2], [5, 9, 12])),
        "temporal_uniform": lambda g, s: sampling.TemporalNeighborSampler(
            g, [3, 2], strategy="uniform").sample_blocks(
                sampling.SamplerInput([0, 1, 2], [5, 9, 12])),
    }


def _storage_calls() -> dict[str, Callable]:
    """Ingests of edge files (which run the numba kernels; in-memory arrays of
    ``from_numpy``'s sizes take NumPy's), an append with its merged index, a subgraph,
    ego graphs in memory (of one centre and of several) and an ego mask: each
    ``call(work, seed)`` in a fresh directory."""
    from graphsys import ingest, open_graph
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.subgraph import ego_adjacency, ego_mask

    def edge_file(work: Path, seed: int, names: bool) -> Path:
        rng = np.random.default_rng(seed)
        src, dst = rng.integers(0, NODES, EDGES), rng.integers(0, NODES, EDGES)
        rows = (f"{'n' if names else ''}{a}\t{'n' if names else ''}{b}\t{w:.3f}\n"
                for a, b, w in zip(src, dst, rng.random(EDGES)))
        path = work / f"edges-{seed}-{int(names)}.tsv"
        path.write_text("".join(rows), encoding="utf-8")
        return path

    def files(work, seed):
        ingest(edge_file(work, seed, False), work / "ints", partitions=2, weight_col=2,
               dedupe=True, drop_self_loops=True)
        ingest(edge_file(work, seed, True), work / "names", partitions=2, undirected=True)

    def append(work, seed):
        g = ingest(edge_file(work, seed, False), work / "grown", partitions=2)
        build_index(g, ("csr", "csc", "sym"))
        ingest(edge_file(work, seed + 1, False), work / "grown", append=True,
               edge_set="more")
        g = open_graph(work / "grown")
        g.csr("default,more")
        g.subgraph(np.arange(0, NODES, 3), work / "sub")
        ego_adjacency(g, 0, 2, internal=True)
        ego_adjacency(g, [0, 1], 1, internal=True)
        ego_mask(g, 0, 1, internal=True)

    return {"files": files, "append_index_subgraph": append}


def _changes_calls() -> dict[str, Callable]:
    """Runs given a previous result after the graph changed (:mod:`graphsys.bsp.incremental`,
    :mod:`graphsys.kernels.repair`, :mod:`graphsys.kernels.pagerank_push`): WCC, BFS, SSSP
    and PageRank on a directed weighted R-MAT graph, with and without stored CSR and CSC
    indexes, after edges were deleted, re-weighted and appended (the repairs, the union of
    the appended edges, PageRank's warm start), and PageRank on a sparse indexed graph after
    one edge was deleted (the delta push): each ``call(work, seed)`` in a fresh directory."""
    from graphsys import bsp, open_graph
    from graphsys.interop import from_numpy
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.append import append_edges
    from graphsys.storage.changes import delete_edges, update_weights
    from graphsys.storage.ingest_inputs import EdgeSource

    def changed(work: Path, seed: int, indexed: bool) -> None:
        work.mkdir()
        src, dst = _rmat(NODES, EDGES, seed)
        weight = np.random.default_rng(seed).random(len(src))
        g = from_numpy(src, dst, work / "g", weight=weight, seed=seed)
        if indexed:
            build_index(g, ("csr", "csc"))
        s = g.to_original(np.zeros(1, np.int64))[0].item()
        runs = {"wcc": lambda g, **kw: bsp.wcc(g, **kw),
                "bfs": lambda g, **kw: bsp.bfs(g, s, **kw),
                "sssp": lambda g, **kw: bsp.sssp(g, s, **kw),
                "pagerank": lambda g, **kw: bsp.pagerank(g, **kw)}
        before = {name: run(g).to_table() for name, run in runs.items()}
        delete_edges(work / "g", src[:2], dst[:2], allow_missing=True)
        update_weights(work / "g", src[2:4], dst[2:4], [0.5, 0.25], allow_missing=True)
        more = work / "more.tsv"
        more.write_text("".join(f"{a}\t{b}\t0.5\n" for a, b in zip(src[8:12], dst[16:20])),
                        encoding="utf-8")
        append_edges(work / "g", [EdgeSource([more], edge_set="more", weight_col=2)])
        g = open_graph(work / "g")
        for name, run in runs.items():
            run(g, init=before[name])

    def matched(work: Path, seed: int) -> None:
        # the numba matcher of a batch's rows with a change's pairs, which batches of
        # edge_changes.PAIR_KERNEL_MIN_ROWS rows or more take (larger than these graphs')
        from graphsys.storage.kernels import pair_positions

        rows = np.arange(4, dtype=np.int32)
        rows.flags.writeable = False  # as apply hands them
        pair_positions(rows, rows, np.arange(2, dtype=np.int64), np.empty(4, np.int64))

    def delta(work: Path, seed: int) -> None:
        n = 1 << 12  # out-degree 2: one deleted edge's residual reaches few nodes
        src = np.repeat(np.arange(n), 2)
        dst = np.random.default_rng(seed).integers(0, n, 2 * n)
        g = from_numpy(src, dst, work / "sparse", num_nodes=n)
        build_index(g, ("csr",))
        before = bsp.pagerank(g).to_table()
        delete_edges(work / "sparse", src[:1], dst[:1])
        bsp.pagerank(open_graph(work / "sparse"), init=before)

    return {"repair_indexed": lambda work, seed: changed(work / "indexed", seed, True),
            "repair_built": lambda work, seed: changed(work / "built", seed, False),
            "pagerank_delta": delta, "matched": matched}


def _rmat(nodes: int, edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of an R-MAT graph."""
    from graphsys.generators import rmat_edges
    from graphsys.generators._random import concat

    edges = concat(list(rmat_edges(nodes, edges, seed=seed)))
    return edges["src"], edges["dst"]


def _graphs(work: Path, seed: int) -> list[tuple[str, Any]]:
    """(label, graph) of each layout every call gets: directed and weighted, undirected,
    and undirected with every stored index."""
    from graphsys.interop import from_numpy
    from graphsys.storage.adjacency_index import build_index

    src, dst = _rmat(NODES, EDGES, seed)
    weight = np.random.default_rng(seed).random(len(src))
    directed = from_numpy(src, dst, work / "directed", weight=weight, seed=seed)
    undirected = from_numpy(src, dst, work / "undirected", undirected=True, seed=seed)
    indexed = from_numpy(src, dst, work / "indexed", undirected=True, seed=seed)
    build_index(indexed, ("csr", "csc", "push", "sym"))
    return [("directed, weighted", directed), ("undirected", undirected),
            ("undirected, indexed", indexed)]


def _two_components(work: Path, seed: int) -> tuple[str, Any]:
    """Two R-MAT components of :data:`LARGE_NODES` nodes each, undirected: as many nodes as
    a distance search takes its large levels on threads at
    (:data:`graphsys.measures.kernels_distance.THREADS_FROM`), and a second component that
    the diameter searches from its own hub."""
    from graphsys.interop import from_numpy

    parts = [_rmat(LARGE_NODES, 4 * LARGE_NODES, seed + k) for k in range(2)]
    src, dst = (np.concatenate([x[0], x[1] + LARGE_NODES]) for x in zip(*parts))
    return "two components", from_numpy(src, dst, work / "two-components", undirected=True,
                                        seed=seed)


def _temporal_graph(work: Path, seed: int) -> tuple[str, Any]:
    """A directed graph with a ``timestamp`` per edge (the temporal samplers' input)."""
    import pyarrow as pa

    from graphsys.interop import from_arrow

    rng = np.random.default_rng(seed)
    edges = pa.table({"src": rng.integers(0, NODES // 4, EDGES // 4),
                      "dst": rng.integers(0, NODES // 4, EDGES // 4),
                      "timestamp": rng.integers(0, 16, EDGES // 4)})
    return "temporal", from_arrow(edges, work / "temporal", edge_columns=["timestamp"])


def _nx_graphs(seed: int) -> list[tuple[str, Any]]:
    import networkx as nx

    G = nx.gnm_random_graph(NODES // 4, EDGES // 4, seed=seed)
    for k, (u, v) in enumerate(G.edges):
        G.edges[u, v]["weight"] = 1.0 + (k % 7)
    D = nx.gnm_random_graph(NODES // 4, EDGES // 4, seed=seed, directed=True)
    return [("networkx Graph", G), ("networkx DiGraph", D)]


def _first(g) -> Any:
    """The original id of ``g``'s first node."""
    return g.to_original(np.zeros(1, np.int64))[0].item()


def _module_counts() -> dict[str, dict[str, int]]:
    """Kernel module -> its signatures compiled and loaded so far in this process."""
    from graphsys import jit

    out: dict[str, dict[str, int]] = {}
    for d in jit.kernels():
        _, hits, misses = jit.kernel_cache(d)
        row = out.setdefault(d.py_func.__module__, {"compiled": 0, "loaded": 0})
        row["compiled"] += misses
        row["loaded"] += hits
    return out


def _delta(before: dict, after: dict) -> dict[str, dict[str, int]]:
    out = {}
    for module, row in after.items():
        old = before.get(module, {"compiled": 0, "loaded": 0})
        d = {k: row[k] - old[k] for k in ("compiled", "loaded")}
        if any(d.values()):
            out[module] = d
    return out


def run_calls(calls: dict[str, Callable], inputs: list[tuple[str, Any]],
              source: Callable[[Any], Any]) -> list[str]:
    """Each call on each input; the calls an input does not take (an error of graphsys's,
    or NetworkX's refusal of a graph kind) as ``"name on label: reason"``."""
    from graphsys.errors import GraphsysError

    refused = (GraphsysError, NotImplementedError, ImportError)
    try:
        import networkx as nx

        refused += (nx.NetworkXException,)
    except ImportError:
        pass
    skipped = []
    for label, graph in inputs:
        s = source(graph)
        for name, call in calls.items():
            try:
                call(graph, s)
            except refused as exc:
                skipped.append(f"{name} on {label}: {(str(exc).splitlines() or [''])[0]}")
    return skipped


def _area(name: str, calls: Callable[[], dict], inputs, source, progress) -> dict:
    t0 = time.perf_counter()
    before = _module_counts()
    skipped = run_calls(calls(), inputs, source)
    modules = _delta(before, _module_counts())
    row = {"seconds": round(time.perf_counter() - t0, 3),
           "compiled": sum(m["compiled"] for m in modules.values()),
           "loaded": sum(m["loaded"] for m in modules.values()), "modules": modules}
    if skipped:
        row["skipped"] = skipped
    if progress is not None:
        names = ", ".join(m.removeprefix("graphsys.") for m in sorted(modules)) or "none"
        progress(f"{name}: {row['compiled']} kernel signatures compiled, {row['loaded']} "
                 f"loaded ({row['seconds']:.2f} s; {names})")
    return row


#: Each area's seconds of compiling into an empty cache on one core, roughly (as a process
#: of its own takes them): the weights that :func:`~graphsys.bsp.warmup.balanced` splits the
#: areas by (``bsp``: the vertex algorithms' :func:`~graphsys.bsp.warmup.warmup`;
#: ``bsp-api``, whose kernels are mostly its, is warmed after it in its process).
AREAS: dict[str, float] = {"bsp": 70, "bsp-api": 5, "mining": 34, "measures": 90,
                           "sampling": 10, "storage": 15, "changes": 17, "nx_backend": 18}


def warmup_all(*, seed: int = 0, progress: Callable[[str], None] | None = None,
               jobs: int = 1) -> dict:
    """Compile (or load) the kernels of every public analysis: the vertex algorithms'
    warm-up (:func:`graphsys.bsp.warmup.warmup`), then every call of :data:`CALLS`,
    the samplers and the NetworkX backend's functions on small generated graphs (see the
    module docstring).

    Parameters
    ----------
    seed : int, default 0
        Seed of the generated graphs.
    progress : callable, optional
        Called with one line per vertex algorithm and per area as it finishes.
    jobs : int, default 1
        Processes that compile at once: above 1, the areas (:data:`AREAS`) are split into
        up to ``jobs`` groups of about equal compile time, each warmed in a fresh process
        (:func:`graphsys.bsp.warmup.in_workers`) into the one kernel cache; 1 warms them
        in this process.

    Returns
    -------
    dict
        ``cache``, ``seconds``, ``compiled``, ``loaded`` (kernel signatures; a signature
        two processes both compiled counts twice), ``bsp``
        (:func:`~graphsys.bsp.warmup.warmup`'s report) and per area (``bsp-api``,
        ``mining``, ``measures``, ``sampling``, ``storage``, ``changes``, ``nx_backend``)
        its seconds, signatures
        compiled and loaded, per kernel module, and the calls a graph did not take.

    Raises
    ------
    ParameterError
        ``jobs`` below 1.
    GraphsysError
        A worker process's failure, in one line.
    """
    from graphsys.bsp.warmup import balanced, in_workers, merged
    from graphsys.errors import check_count

    t0 = time.perf_counter()
    if check_count("jobs", jobs) == 1:
        reports = [_warm(list(AREAS), seed=seed, progress=progress)]
    else:
        groups = balanced(list(AREAS), jobs, AREAS, {"bsp-api": "bsp"})
        reports = in_workers(_warm, groups, progress, seed=seed)
    areas = {k: v for r in reports for k, v in r.items() if k in AREAS}
    return {**merged(reports, t0), **{a: areas[a] for a in AREAS}}


def _warm(areas: list[str], *, seed: int, progress: Callable[[str], None] | None) -> dict:
    """:func:`warmup_all` of ``areas`` (names of :data:`AREAS`, in their order) in this
    process."""
    from graphsys import jit
    from graphsys.bsp.warmup import warmup

    start = jit.cache_counts()
    _import_covered()
    out: dict[str, Any] = {}
    calls = {"bsp-api": CALLS["bsp"], "mining": CALLS["mining"], "measures": CALLS["measures"],
             "sampling": _sampling_calls, "storage": _storage_calls,
             "changes": _changes_calls, "nx_backend": CALLS["nx_backend"]}
    with tempfile.TemporaryDirectory(prefix="graphsys-warmup-all-") as tmp:
        graphs: list = []
        for name in areas:
            if name == "bsp":
                out[name] = warmup(seed=seed, progress=progress)
                continue
            if name in ("storage", "changes"):
                (Path(tmp) / name).mkdir()
                inputs, source = [(name, Path(tmp) / name)], lambda _: seed
            elif name == "nx_backend":
                inputs, source = _nx_graphs(seed), lambda G: next(iter(G))
            else:
                graphs = graphs or _graphs(Path(tmp), seed)
                extra = {"sampling": _temporal_graph, "measures": _two_components}.get(name)
                inputs = graphs + ([extra(Path(tmp), seed)] if extra else [])
                source = _first
            with warnings.catch_warnings():
                if name == "nx_backend":  # NetworkX's note on its cache of conversions
                    warnings.simplefilter("ignore")
                out[name] = _area(name, calls[name], inputs, source, progress)
    end = jit.cache_counts()
    return {"cache": jit.cache_location(), "compiled": end["compiled"] - start["compiled"],
            "loaded": end["loaded"] - start["loaded"], **out}
