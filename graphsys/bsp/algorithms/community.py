"""Communities: Louvain and Leiden modularity optimisation and the modularity of any
labelling (label propagation: :mod:`graphsys.bsp.algorithms.label_propagation`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np

from graphsys.bsp import kernels_community as kc
from graphsys.bsp import kernels_leiden as kl
from graphsys.bsp.algorithms.common import open_if_path, resolve_weighted, symmetric
from graphsys.bsp.algorithms.community_level import Level
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import document_options, fill_doc
from graphsys.bsp.edges import DENSE_DIVISOR, build_adjacency
from graphsys.bsp.engine import Result
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.errors import GraphsysError, ParameterError, check_count, check_real
from graphsys.kernels.arrays import read_only

#: Louvain and Leiden stop adding levels when one gains at most this much modularity
#: (networkx's ``threshold``)
THRESHOLD = 1e-7
#: Louvain's local moving over one level (and its refinement) stops when a sweep gains
#: at most this much modularity: the late sweeps revisit the hubs for little gain
SWEEP_TOL = 1e-3
#: Louvain's local moving over one level (and its refinement) also stops when a sweep
#: gains less than this share of what the sweeps before it gained: on social graphs the
#: sweeps after that gain a few thousandths of the level's modularity, and the refinement
#: and the next levels recover most of it
SWEEP_SHARE = 0.05
#: Most sweeps of Louvain's local moving over one level
MAX_SWEEPS = 1000
#: Leiden's randomness in the refinement (``theta``; igraph's ``beta``), in units of edge
#: weight (the modularity gain times the total edge weight)
THETA = 0.01


def louvain_levels(level: Level, gamma: float, rng: np.random.Generator, *,
                   start: np.ndarray | None = None, threshold: float = THRESHOLD,
                   max_levels: int | None = None) -> tuple[np.ndarray, float, list[dict]]:
    """One pass of Louvain from the partition ``start`` (None: every node alone), as
    :func:`~graphsys.bsp.louvain` describes: local moving in a random order from ``rng``
    (on the first level the nodes of fewest neighbours first, which gives higher and
    steadier modularity on social graphs; ties by id, in storage order), sweeps until one
    gains at most ``max(threshold, SWEEP_TOL)`` or less than :data:`SWEEP_SHARE` of the
    sweeps before, aggregation until a level moves nothing, gains at most ``threshold`` or
    ``max_levels`` ran, then refinement from the top level down. Returns (community of
    every node, int64 (N,), its modularity, one record per level: nodes, moves, sweeps,
    visits, modularity gained, moves of its refinement)."""
    levels: list[tuple[Level, np.ndarray]] = []  # each level and its nodes' communities
    records: list[dict] = []
    while max_levels is None or len(records) < max_levels:
        if start is not None and not records:
            comm = start.copy()
        else:
            comm = np.arange(level.n, dtype=np.int64)
        if records:
            order = rng.permutation(level.n)
        elif level.ids is not None:  # level 0 renumbered in that order already
            order = np.arange(level.n, dtype=np.int64)
        else:  # the nodes of fewest neighbours first, ties by id (the stored neighbours)
            order = kc.by_degree(level.sptr, np.arange(level.n, dtype=np.int64))
        moves, sweeps, gained, visits = kc.move_nodes(*level.arrays, level.kout, level.kin,
                                                      level.m, gamma, comm, order,
                                                      max(threshold, SWEEP_TOL), SWEEP_SHARE,
                                                      MAX_SWEEPS, False, level.unit, level.sym)
        records.append({"nodes": level.n, "moves": int(moves), "sweeps": int(sweeps),
                        "visits": int(visits), "gained": float(gained), "refined": 0})
        ncomm = kc.relabel(comm, comm)
        levels.append((level, comm))
        # a pass started from communities aggregates them even where no node moves: the
        # gains left are between communities, on the levels above
        started = start is not None and len(records) == 1
        if ncomm == level.n or gained <= threshold and not started:
            break
        level = level.aggregate(comm, ncomm)
    else:  # max_levels ended the pass before it settled
        records[-1]["cut"] = True
    top, part = levels[-1]
    q = top.modularity(part, gamma)  # (the same on every level: aggregation keeps it)
    for i in range(len(levels) - 2, -1, -1):  # refine on the way down
        level, comm = levels[i]
        part = part[comm]
        # the first level by id: its sweeps read the arrays in storage order
        order = rng.permutation(level.n) if i else np.arange(level.n, dtype=np.int64)
        moves, _, gained, _ = kc.move_nodes(*level.arrays, level.kout, level.kin, level.m,
                                            gamma, part, order, max(threshold, SWEEP_TOL),
                                            SWEEP_SHARE, MAX_SWEEPS, True, level.unit,
                                            level.sym)
        q += gained
        records[i]["refined"] = int(moves)
        kc.relabel(part, part)
    return part, q, records


def leiden_levels(level: Level, gamma: float, rng: np.random.Generator, *,
                  start: np.ndarray | None = None, theta: float = THETA,
                  max_levels: int | None = None) -> tuple[np.ndarray, list[dict]]:
    """One pass of Leiden from the partition ``start`` (None: every node alone), as
    :func:`~graphsys.bsp.leiden` describes: fast local moving, refinement within each
    community, aggregation by the refined communities (the coarse ones as the next level's
    start) until every community is one node or ``max_levels`` ran; a level whose
    refinement merges nothing is aggregated by its communities' connected parts (else the
    pass would not end). Returns (community of every node, int64 (N,), one record per
    level: nodes, moves, visits, merges)."""
    comm = np.arange(level.n, dtype=np.int64) if start is None else start.copy()
    member = np.arange(level.n, dtype=np.int64)
    records: list[dict] = []
    while max_levels is None or len(records) < max_levels:
        moves, visits = kl.move_nodes_fast(*level.arrays, level.kout, level.kin, level.m,
                                           gamma, comm, rng.permutation(level.n), level.unit)
        ncomm = kc.relabel(comm, comm)
        records.append({"nodes": level.n, "moves": int(moves), "visits": int(visits),
                        "merges": 0})
        if ncomm == level.n:
            break
        ref = np.empty(level.n, np.int64)
        merges = kl.refine(*level.arrays, level.kout, level.kin, level.m, gamma, theta, comm,
                           rng.permutation(level.n), rng.random(level.n), ref, level.unit)
        records[-1]["merges"] = int(merges)
        if merges == 0:  # the communities' connected parts, each a community of its own
            kl.connected_parts(*level.arrays, comm, ref, level.unit)
            comm = ref
        nref = kc.relabel(ref, ref)
        coarse = np.empty(nref, np.int64)
        coarse[ref] = comm
        member = ref[member]
        level = level.aggregate(ref, nref)
        comm = coarse
    else:  # max_levels ended the pass before it settled
        records[-1]["cut"] = True
    parts = np.empty(level.n, np.int64)  # (the communities themselves unless max_levels)
    kl.connected_parts(*level.arrays, comm, parts, level.unit)
    return parts[member], records


def optimise(level: Level, gamma: float, seed: int, *, leiden: bool = False,
             iterations: int = -1, theta: float = THETA, threshold: float = THRESHOLD,
             max_levels: int | None = None) -> tuple[np.ndarray, float, list[dict]]:
    """Passes of Louvain or Leiden (:func:`louvain_levels`, :func:`leiden_levels`), each
    from the partition the last one found, ``iterations`` of them (negative: until a pass
    gains at most ``threshold``); the best partition is kept. Random orders from
    ``numpy.random.default_rng(seed)``. Returns (community of every node, int64 (N,), its
    modularity, one record per level of every pass); a level without edges: every node
    alone, modularity NaN."""
    if level.m == 0:  # no edge: every node alone (as networkx's), modularity undefined
        return np.arange(level.n, dtype=np.int64), float("nan"), [{"nodes": level.n,
                                                                   "moves": 0}]
    rng = np.random.default_rng(seed)
    best, best_q = None, -np.inf
    records: list[dict] = []
    done = 0
    while iterations < 0 or done < iterations:
        done += 1
        if leiden:
            member, recs = leiden_levels(level, gamma, rng, start=best, theta=theta,
                                         max_levels=max_levels)
            q = level.modularity(member, gamma)
        else:
            member, q, recs = louvain_levels(level, gamma, rng, start=best,
                                             threshold=threshold, max_levels=max_levels)
        records += [dict(r, iteration=done) for r in recs]
        gained = q - best_q
        if gained > 0 or best is None:
            best, best_q = member, q
        if not gained > threshold:
            break
    return best, float(best_q), records


class Louvain(VertexProgram):
    """Louvain (and, with ``leiden=True``, Leiden) as a whole-graph method of the engine:
    :meth:`solve_in_memory` runs the levels in numba and writes each node's community
    (its smallest internal id); there is no superstep form (a run out of core, on CUDA or
    with ``schedule="sync"`` is refused in one line).

    Examples
    --------
    What :func:`louvain` runs (with ``schedule="auto"``), on two triangles joined by one
    edge:

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 1, 2, 4, 4, 5, 3], [2, 3, 3, 5, 6, 6, 4],
    ...                         tempfile.mkdtemp() + "/g")
    >>> program = bsp.Louvain(resolution=1.0, seed=0, weighted=False, directed=False,
    ...                       undirected_store=False)
    >>> result = bsp.run(g, program, schedule="auto")
    >>> result.to_dict(), round(result.stats.scores["modularity"], 4)
    ({1: 0.0, 2: 0.0, 3: 0.0, 4: 3.0, 5: 3.0, 6: 3.0}, 0.3571)
    """

    message, combiner = "copy", "sum"
    host_state = True  # init and result are Context calls (an in-memory run imports no torch)

    def __init__(self, *, resolution: float, seed: int, weighted: bool, directed: bool,
                 undirected_store: bool, leiden: bool = False, theta: float = THETA,
                 iterations: int = 2):
        self.name = "leiden" if leiden else "louvain"
        self.resolution, self.seed, self.leiden = resolution, seed, leiden
        self.theta, self.iterations = theta, iterations
        self.uses_weights, self.directed = weighted, directed
        self.undirected_store = undirected_store
        #: what the run reached (:attr:`~graphsys.bsp.stats.RunStats.scores`)
        self.scores: dict[str, float] = {}

    def init(self, ctx):
        return {"label": ctx.full(0.0)}, ctx.full(True, bool)

    def send(self, ctx, state):
        raise GraphsysError(f"{self.name} runs in memory on the CPU (mode memory, numba "
                            f"backend, schedule auto, one process)")

    def update(self, ctx, state, combined, received):  # pragma: no cover - never reached
        return received, {}

    def result(self, ctx, state):
        return state["label"]

    def level0(self, edges) -> Level:
        """Level 0 of the edge set; where it reads the stored index itself (stored both
        ways, unweighted, no self-loop) it is kept beside the mapped index
        (:meth:`~graphsys.bsp.edges.MemoryEdges.derived`): later runs skip its pass."""
        out, into = (edges.adjacency("csr"), None) if self.undirected_store else \
            edges.adjacencies("csr", "csc")
        built: list[Level] = []

        def build() -> Level | None:  # the level where it holds no entries of its own
            built.append(Level.from_adjacency(out, into, self.directed,
                                              visit_order=not self.leiden))
            return built[-1] if built[-1].sidx is out[1] else None

        if into is None and not len(out[2]):  # unweighted, stored both ways
            level = edges.derived("community-level0-unweighted", ("csr",), build)
            if level is not None:
                return level
        if not built:  # not kept (weighted, one way, self-loops), or kept as not kept
            build()
        return built[-1]

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: the levels in numba; one recorded superstep per level
        (``active`` its nodes, ``messages_combined`` the nodes that moved)."""
        if schedule != "auto":
            return None
        t0 = time.perf_counter()
        level = self.level0(edges)
        setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        member, q, records = optimise(level, self.resolution, self.seed, leiden=self.leiden,
                                      iterations=self.iterations, theta=self.theta,
                                      max_levels=max_iters)
        seconds = time.perf_counter() - t0
        if level.ids is not None:  # back to the stored ids
            stored = np.empty_like(member)
            stored[level.ids] = member
            member = stored
        communities = kc.smallest_member(member, host_array(state["label"]))
        self.scores = {"modularity": q, "communities": float(communities)}
        edges_read = int(level.sptr[-1])
        steps = []
        for i, rec in enumerate(records):
            ss = SuperstepStats(superstep=i, active=rec["nodes"], direction=self.name,
                                edges_scanned=edges_read, messages_combined=rec["moves"],
                                fused=True)
            ss.seconds["edges"] = seconds / len(records)
            steps.append(ss)
        # a pass that max_iters ended before it settled: not converged (its nodes left)
        left = sum(rec["nodes"] for rec in records if rec.get("cut"))
        return Solved(self.name, steps, left, setup_seconds=setup)


_RETURNS_DOC = """Result
    ``values``: float64 (N,) community labels by internal node id (a community's smallest
    internal id); ``result.stats.scores["modularity"]`` the modularity reached (NaN on a
    graph without edges, where every node is alone), ``["communities"]`` their number;
    one recorded superstep per level."""
_COMMUNITY_DOC = """resolution : float, default 1.0
    The resolution ``gamma`` of the modularity (larger: more, smaller communities).
seed : int, default 0
    Non-negative seed of the random node orders (``numpy.random.default_rng(seed)``;
    None, as for every parameter, the default 0, never a fresh seed): the same seed,
    graph and thread count give the same communities. The orders and ties run over
    internal ids, so the same edges ingested into other partitions may give others.
weighted : bool, optional
    Edge weights as strengths: None (default) when the edge set has them (networkx's
    ``weight="weight"``), True requires them, False counts every edge as 1.
directed : bool, optional
    Optimise the directed modularity of Leicht and Newman (networkx's on a ``DiGraph``):
    None (default) on a directed edge set, never on an undirected one; False treats every
    edge as undirected (igraph's and NetworKit's, which take undirected graphs).
max_iters : int, optional
    Most levels of a pass (default 64; a level at least halves the nodes or ends the
    pass); a pass it ends before the pass settles leaves the run unconverged
    (``result.stats.converged`` False, a ConvergenceWarning).
schedule : {"auto"}, default "auto"
    The levels run in memory on CPU, in numba; ``result.stats.method`` names the method."""


@document_options("edge_set", "progress", "device", "backend", "mode", "threads",
                  "distributed", "readahead", "dense_divisor", "fuse")
@fill_doc(community=_COMMUNITY_DOC, returns=_RETURNS_DOC)
def louvain(graph, *, resolution: float = 1.0, seed: int = 0, weighted: bool | None = None,
            directed: bool | None = None, iterations: int = 1, max_iters: int | None = None,
            schedule: str = "auto", mode: str = "auto", device: str = "cpu",
            backend: str = "auto", threads: int | None = None, edge_set: str | None = None,
            distributed: bool = False, progress: bool | Callable | None = None,
            readahead: int = 4, dense_divisor: float = DENSE_DIVISOR,
            fuse: bool = True) -> Result:
    """Communities by Louvain modularity optimisation, as networkx's
    :func:`~networkx.algorithms.community.louvain_communities`.

    Levels of local moving and aggregation [1]_: each node, in a random order (on the
    first level, the nodes of fewest neighbours first, ties by id), moves to the
    neighbouring community that raises the modularity most, in sweeps until a sweep gains
    at most 1e-3, or less than a twentieth of what the sweeps before it gained; then every
    community becomes one node of the next level, until a level moves nothing or gains at
    most 1e-7 (networkx's ``threshold``). Then, level by level back down, the communities
    are refined by the same local moving (NetworKit's PLM refinement [2]_). A sweep visits
    only the nodes a neighbour of which changed community since their last visit (Ozaki,
    Tezuka and Inaba's pruning [3]_). Modularity is Newman's, with resolution ``gamma``;
    on a directed edge set Leicht and Newman's directed form unless ``directed=False``
    (see :func:`modularity`).

    Parameters
    ----------
    %(graph)s
    %(community)s
    iterations : int, default 1
        Passes, each from the partition the last found (its communities as the first
        level's start; the best is kept); negative: until a pass gains at most 1e-7.
    %(engine_options)s

    Returns
    -------
    %(returns)s

    Raises
    ------
    ParameterError
        ``resolution`` not positive, ``seed`` not a non-negative integer, ``iterations`` 0,
        ``weighted`` True without weights, ``directed`` True on an undirected edge set, or
        an unknown ``mode``, ``backend`` or ``device``.
    GraphsysError
        A negative or non-finite weight, or a run that is not in memory on the CPU.

    See Also
    --------
    leiden : the refined method, with communities that are guaranteed connected.
    modularity : the score of any labelling.

    References
    ----------
    .. [1] V. D. Blondel, J.-L. Guillaume, R. Lambiotte, E. Lefebvre, "Fast unfolding of
       communities in large networks", Journal of Statistical Mechanics, P10008, 2008.
    .. [2] C. L. Staudt, H. Meyerhenke, "Engineering parallel algorithms for community
       detection in massive networks", IEEE TPDS 27(1), 2016 (PLM's refinement).
    .. [3] N. Ozaki, H. Tezuka, M. Inaba, "A simple acceleration method for the Louvain
       algorithm", International Journal of Computer and Electrical Engineering 8(3),
       2016.

    Examples
    --------
    Two triangles joined by one edge:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 1, 2, 4, 4, 5, 3]), np.array([2, 3, 3, 5, 6, 6, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> result = bsp.louvain(g)
    >>> communities = {}
    >>> for node, label in result.to_dict().items():
    ...     communities.setdefault(label, []).append(node)
    >>> sorted(communities.values())
    [[1, 2, 3], [4, 5, 6]]
    >>> round(result.stats.scores["modularity"], 4)
    0.3571
    """
    return LOUVAIN_SPEC.run(graph, max_iters=max_iters, resolution=resolution, seed=seed,
                            weighted=weighted, directed=directed, iterations=iterations, mode=mode,
                            device=device, backend=backend, threads=threads,
                            distributed=distributed, progress=progress, edge_set=edge_set,
                            readahead=readahead, dense_divisor=dense_divisor, fuse=fuse,
                            schedule=schedule)


@document_options("edge_set", "progress", "device", "backend", "mode", "threads",
                  "distributed", "readahead", "dense_divisor", "fuse")
@fill_doc(community=_COMMUNITY_DOC, returns=_RETURNS_DOC)
def leiden(graph, *, resolution: float = 1.0, seed: int = 0, weighted: bool | None = None,
           directed: bool | None = None, iterations: int = 2, theta: float = THETA,
           max_iters: int | None = None, schedule: str = "auto", mode: str = "auto",
           device: str = "cpu", backend: str = "auto", threads: int | None = None,
           edge_set: str | None = None, distributed: bool = False,
           progress: bool | Callable | None = None, readahead: int = 4,
           dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    """Communities by the Leiden algorithm (modularity), as igraph's
    ``community_leiden(objective_function="modularity")``.

    Leiden [1]_ refines Louvain: a queue-based local moving (a node moves to the
    neighbouring community that raises the modularity most, or leaves to be alone; a node
    that moved queues its neighbours outside its new community), then, within each
    community, a refinement that merges nodes into sub-communities, drawn with probability
    ``exp(gain / theta)``; the aggregate graph has one node per refined community, started
    in its coarse community, until every community is one node. Every community found is
    connected: a refined community grows only by a node linked to it. A level whose
    refinement merges nothing, and a pass that ``max_iters`` ends, are split into their
    communities' connected parts (which share no edge: splitting raises the modularity).
    The whole procedure runs ``iterations`` times, each from the partition the last found.

    Parameters
    ----------
    %(graph)s
    %(community)s
    iterations : int, default 2
        Passes of the whole procedure (igraph's ``n_iterations``, default 2); negative:
        until a pass gains at most 1e-7 in modularity (each pass usually still gains a
        little: many passes).
    theta : float, default 0.01
        Randomness of the refinement (igraph's ``beta``): a merge is drawn with
        probability proportional to ``exp(gain / theta)``, the gain in units of edge
        weight (the modularity gain times the total edge weight); 0 merges greedily.
    %(engine_options)s

    Returns
    -------
    %(returns)s

    Raises
    ------
    ParameterError
        ``resolution`` not positive, ``theta`` negative, ``iterations`` 0, ``seed`` not
        a non-negative integer, ``weighted`` True without weights, ``directed`` True on an
        undirected edge set, or an unknown ``mode``, ``backend`` or ``device``.
    GraphsysError
        A negative or non-finite weight, or a run that is not in memory on the CPU.

    References
    ----------
    .. [1] V. A. Traag, L. Waltman, N. J. van Eck, "From Louvain to Leiden: guaranteeing
       well-connected communities", Scientific Reports 9, 5233, 2019.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 1, 2, 4, 4, 5, 3]), np.array([2, 3, 3, 5, 6, 6, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> result = bsp.leiden(g)
    >>> len(set(result.to_dict().values())), round(result.stats.scores["modularity"], 4)
    (2, 0.3571)
    """
    return LEIDEN_SPEC.run(graph, max_iters=max_iters, resolution=resolution, seed=seed,
                           weighted=weighted, directed=directed, iterations=iterations, theta=theta,
                           mode=mode, device=device, backend=backend, threads=threads,
                           distributed=distributed, progress=progress, edge_set=edge_set,
                           readahead=readahead, dense_divisor=dense_divisor, fuse=fuse,
                           schedule=schedule)


def modularity(graph, communities, *, resolution: float = 1.0, weighted: bool | None = None,
               directed: bool | None = None, edge_set: str | None = None) -> float:
    r"""The modularity of a labelling of the nodes, as networkx's
    :func:`~networkx.algorithms.community.modularity`.

    .. math::
        Q = \sum_c \left( \frac{L_c}{M} - \gamma \left(\frac{d_c}{2M}\right)^2 \right)

    :math:`L_c` the (weighted) edges inside community :math:`c`, :math:`d_c` its summed
    degrees (a self-loop counts twice), :math:`M` all edges. On a directed edge set (unless
    ``directed=False``) Leicht and Newman's directed form, :math:`\sum_c L_c / M - \gamma
    d^{out}_c d^{in}_c / M^2` (networkx's on a ``DiGraph``). The adjacency is read once
    (mapped where the graph has an adjacency index).

    Parameters
    ----------
    graph : Graph or str or Path
        An opened graph or a graph directory.
    communities : Result or array-like or dict or list of sets
        The labelling: a :class:`~graphsys.bsp.Result` of :func:`louvain`, :func:`wcc`,
        ...; N labels by internal node id; ``{original id: label}`` for every node; or
        networkx's form, a list of disjoint sets of original ids covering the nodes.
    resolution : float, default 1.0
        The resolution ``gamma``.
    weighted : bool, optional
        None (default): edge weights when the edge set has them; True requires them;
        False counts every edge as 1.
    directed : bool, optional
        None (default): the directed form on a directed edge set; False: every edge as
        undirected.
    edge_set : str, optional
        The edge set (default: the graph's default).

    Returns
    -------
    float
        The modularity (NaN for a graph without edges).

    Raises
    ------
    ParameterError
        A labelling of the wrong length, a dict or list that misses or repeats a node,
        ``resolution`` not positive, ``weighted`` True without weights, ``directed`` True
        on an undirected edge set.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 1, 2, 4, 4, 5, 3]), np.array([2, 3, 3, 5, 6, 6, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> round(bsp.modularity(g, [{1, 2, 3}, {4, 5, 6}]), 4)
    0.3571
    >>> round(bsp.modularity(g, {1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0}), 4)
    0.0
    """
    graph = open_if_path(graph)
    es = graph.edge_set(edge_set).name
    comm = _labels(graph, communities)
    program = _community_program(graph, edge_set=edge_set, resolution=resolution,
                                 weighted=weighted, directed=directed)
    out = build_adjacency(graph, es, "csr", program.uses_weights)
    into = None if program.undirected_store else build_adjacency(graph, es, "csc",
                                                                  program.uses_weights)
    none = np.zeros(0, np.float32)
    # read-only, as the engine's adjacency is: one signature of the symmetrising kernels
    level = Level.from_adjacency(read_only(out[0], out[1], out[2] if out[2] is not None else none),
                                 None if into is None else read_only(
                                     into[0], into[1], into[2] if into[2] is not None else none),
                                 program.directed)
    return level.modularity(comm, program.resolution)


def _labels(graph, communities) -> np.ndarray:
    """A labelling as int64 (N,) labels 0..C-1 by internal id, numbered by first
    appearance."""
    n = graph.num_nodes()
    if isinstance(communities, Result):
        raw = np.asarray(communities.values)
    elif isinstance(communities, dict):
        if len(communities) != n:
            raise ParameterError("communities", f"labels {len(communities):,} nodes; the "
                                                f"graph has {n:,}")
        idx = graph.to_internal(list(communities))
        raw = np.empty(n, object)
        raw[idx] = list(communities.values())
        if len(np.unique(idx)) != n:
            raise ParameterError("communities", "labels a node twice")
    elif isinstance(communities, (list, tuple)) and communities and not np.isscalar(
            communities[0]):
        raw = np.full(n, -1, np.int64)
        for c, group in enumerate(communities):
            idx = graph.to_internal(list(group))
            if (raw[idx] != -1).any():
                raise ParameterError("communities", "puts a node in two communities")
            raw[idx] = c
        if (raw == -1).any():
            raise ParameterError("communities", f"leaves {int((raw == -1).sum()):,} nodes "
                                                f"out of every community")
    else:
        raw = np.asarray(communities)
    if raw.ndim != 1 or len(raw) != n:
        raise ParameterError("communities", f"must label each of the {n:,} nodes once, got "
                                            f"shape {raw.shape}")
    _, comm = np.unique(raw.astype(str) if raw.dtype == object else raw, return_inverse=True)
    comm = comm.astype(np.int64)
    kc.relabel(comm, comm)  # by first appearance: the same grouping, the same sums
    return comm


def _community_program(graph, *, edge_set=None, resolution=1.0, seed=0, weighted=None,
                       directed=None, leiden=False, theta=THETA, iterations=2) -> Louvain:
    resolution = check_real("resolution", resolution, low=0, low_open=True)
    seed = check_count("seed", seed, minimum=0)  # numpy's generators take no negative seed
    if directed is not None and not isinstance(directed, (bool, np.bool_)):
        raise ParameterError("directed", f"must be True, False or None, got {directed!r}")
    store = symmetric(graph, edge_set)
    if directed and store:
        raise ParameterError("directed", "is True but the edge set is stored undirected")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or (
            iterations == 0):
        raise ParameterError("iterations", f"must be a non-zero integer, got {iterations!r}")
    use = resolve_weighted(graph, edge_set, weighted)
    if use:
        for _, _, _, w in graph.iter_edges(edge_set):
            if w is not None and len(w) and not ((w >= 0) & np.isfinite(w)).all():
                bad = w[~((w >= 0) & np.isfinite(w))][0]
                raise GraphsysError(f"modularity needs non-negative finite edge weights; "
                                    f"found {float(bad)!r} (weighted=False counts every "
                                    f"edge as 1)")
    return Louvain(resolution=resolution, seed=int(seed), weighted=use,
                   directed=not store and directed is not False, undirected_store=store,
                   leiden=leiden, theta=check_real("theta", theta, low=0),
                   iterations=int(iterations))


_COMMUNITY_PARAMETERS = ("resolution", "seed", "weighted", "directed")
#: max_iters counts the levels of a pass: 64 is ample
LOUVAIN_SPEC = AlgorithmSpec("louvain", partial(_community_program, iterations=1), lambda n: 64,
                             parameters=(*_COMMUNITY_PARAMETERS, "iterations"))
LEIDEN_SPEC = AlgorithmSpec("leiden", partial(_community_program, leiden=True), lambda n: 64,
                            parameters=(*_COMMUNITY_PARAMETERS, "iterations", "theta"))
