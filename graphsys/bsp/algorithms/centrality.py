"""Shortest-path centralities: betweenness (Brandes), closeness and harmonic centrality,
exact or from a sample of sources, with networkx's conventions.

In memory on CPU each runs in numba, parallel over sources
(:mod:`graphsys.bsp.kernels_centrality`); otherwise (out of core, CUDA, distributed) as a
vector program that runs :data:`SOURCES_PER_PASS` searches at once, one column each.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numba
import numpy as np

from graphsys.bsp.algorithms.common import id_list, resolve_weighted, symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import document_options, fill_doc
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result
from graphsys.bsp.kernels_centrality import brandes, dag_fits, distance_sums
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.errors import GraphsysError, ParameterError, check_count, check_flag
from graphsys.progress import progress_bar
from graphsys.storage.node_reads import id_order, internal_of

if TYPE_CHECKING:
    import torch

INF = float("inf")
#: Searches one superstep of the vector programs carries (its message width): the state is
#: a few float64 (N, SOURCES_PER_PASS) arrays
SOURCES_PER_PASS = 16
#: Sources per numba call in memory (times the thread count): the progress granularity
SOURCES_PER_CALL = 32


def sample_sources(graph, k, seed, sources) -> np.ndarray | None:
    """The sources of a run as sorted internal ids, or None for every node: ``sources``
    (original ids) when given, else ``k`` drawn without replacement by
    ``numpy.random.default_rng(seed)`` among the nodes in original-id order (the same
    nodes however the graph is partitioned); ``k`` = N means every node (as networkx's)."""
    n = graph.num_nodes()
    if sources is not None:
        if k is not None:
            raise ParameterError("k", "and sources exclude each other: give one")
        ids = np.asarray(internal_of(graph, id_list(sources), "sources"), np.int64)
        if len(ids) == 0:
            raise ParameterError("sources", "is empty: give at least one node id")
        if len(np.unique(ids)) != len(ids):
            raise ParameterError("sources", "lists a node twice")
        return np.sort(ids)
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ParameterError("k", f"must be an integer from 1 to the {n:,} nodes, got {k!r}")
    seed = check_count("seed", seed, minimum=0)  # numpy's generators take no negative seed
    if k == n:
        return None
    drawn = np.random.default_rng(int(seed)).choice(n, int(k), replace=False)
    return np.sort(id_order(graph)[1][drawn].astype(np.int64))


def check_positive_weights(graph, edge_set: str | None, name: str) -> None:
    """GraphsysError when an edge weight is not a positive finite number (streamed); for
    betweenness also when the smallest weight could vanish beside a path's length in
    float64 (a path length ``L``, at most the sum of the weights and ``N - 1`` times the
    largest, plus the smallest ``lo`` must exceed ``L``: ``lo >= L * 2**-52``). Its path
    counts compare such sums for equality, and with 1.0 and 1e-17 (float32 stores 1e-38)
    an edge weighed as 0: paths were counted and scaled neither as networkx's nor as
    exact arithmetic's."""
    lo, hi, total = np.inf, 0.0, 0.0
    for _, _, _, w in graph.iter_edges(edge_set):
        if w is None or len(w) == 0:
            continue
        bad = np.flatnonzero(~((w > 0) & np.isfinite(w)))
        if bad.size:
            raise GraphsysError(f"{name} reads edge weights as lengths and needs them positive "
                                f"and finite; found {float(w[bad[0]])!r} (weighted=False "
                                f"counts every edge as 1)")
        lo, hi = min(lo, float(w.min())), max(hi, float(w.max()))
        total += float(w.sum(dtype=np.float64))
    longest = min(total, max(graph.num_nodes() - 1, 0) * hi)
    if name == "betweenness" and lo * 2.0**52 < longest:
        raise GraphsysError(f"betweenness compares sums of edge weights in float64, where the "
                            f"weight {lo:g} can vanish beside a path of length up to "
                            f"{longest:g} (the smallest weight must be at least 2**-52 of "
                            f"that); rescale or round the weights, or weighted=False counts "
                            f"every edge as 1")


def rescale(values: np.ndarray, n: int, *, normalized: bool, directed: bool,
            endpoints: bool, sampled: np.ndarray | None, lo: int = 0) -> np.ndarray:
    """networkx's betweenness scaling (``_rescale`` of networkx 3.6) of the summed
    dependencies ``values`` of the nodes ``lo..lo+len(values)-1``: by the (s, t) pairs a
    node can lie between, halved on an undirected graph unless normalized, and for a
    sample of ``k`` sources without endpoints, sampled and other nodes apart."""
    big = n if endpoints else n - 1
    if big < 2:
        return values
    k = big if sampled is None else len(sampled)
    correction = 1 if directed else 2
    if sampled is None or endpoints:
        scale = 1 / (k * (big - 1)) if normalized else big / (k * correction)
        return values * scale
    if normalized:
        source = 1 / ((k - 1) * (big - 1)) if k > 1 else math.nan
        other = 1 / (k * (big - 1))
    else:
        source = big / ((k - 1) * correction) if k > 1 else math.nan
        other = big / (k * correction)
    scale = np.full(len(values), other)
    mine = sampled[(sampled >= lo) & (sampled < lo + len(values))] - lo
    scale[mine] = source
    return values * scale


class _SourceSearches(VertexProgram):
    """Shared part of the centrality programs: the sources (global ids; every node when
    ``sampled`` is None), their searches in batches of :data:`SOURCES_PER_PASS` columns,
    and the in-memory path that runs a numba kernel over chunks of sources."""

    message, combiner = "copy", "sum"
    halt_when_inactive = False

    def __init__(self, num_nodes: int, sampled: np.ndarray | None, weighted: bool):
        self.num_nodes = num_nodes
        self.sampled = sampled
        self.sources = np.arange(num_nodes, dtype=np.int64) if sampled is None else sampled
        self.width = max(1, min(SOURCES_PER_PASS, len(self.sources)))
        self.uses_weights = weighted
        self.batch, self.phase, self.depth = -1, "next-batch", 0

    def _batch_sources(self) -> np.ndarray:
        b = self.batch
        return self.sources[b * self.width:(b + 1) * self.width]

    def _start_batch(self, ctx, state) -> torch.Tensor:
        """Columns reset for the next batch, each source at distance 0; returns the rows
        of the sources this process owns (the first frontier)."""
        import torch

        self.batch += 1
        srcs = self._batch_sources()
        dist = ctx.full(INF, width=self.width)
        mine = np.flatnonzero((srcs >= ctx.lo) & (srcs < ctx.hi))
        rows = torch.as_tensor(srcs[mine] - ctx.lo, device=ctx.device)
        cols = torch.as_tensor(mine, device=ctx.device)
        dist[rows, cols] = 0.0
        state["dist"] = dist
        active = torch.zeros(ctx.num_local, dtype=torch.bool, device=ctx.device)
        active[rows] = True
        return active

    @staticmethod
    def _own(t) -> np.ndarray:
        """A state entry's values as a NumPy array on the host."""
        return t if isinstance(t, np.ndarray) else host_array(t.cpu())

    @staticmethod
    def _values(ctx, values: np.ndarray) -> torch.Tensor:
        """:meth:`result`'s ``values`` as the state's kind (a tensor on the run's device,
        or the array itself where :attr:`Context.host`)."""
        if ctx.host:
            return values
        import torch

        return torch.as_tensor(values, device=ctx.device)

    def _idle(self, ctx) -> torch.Tensor:
        return ctx.full(0.0, width=self.width)

    def _numba_calls(self, ctx, edges, kernel, desc: str, *outputs) -> list:
        """Run ``kernel(indptr, indices, weight, weighted, sources, *outputs, in_ptr,
        in_idx)`` over the sources in chunks (one recorded superstep each, a progress bar
        on long runs); ``in_ptr``/``in_idx`` from :meth:`_in_edges`."""
        indptr, idx, w = edges.adjacency("csr")
        in_ptr, in_idx = self._in_edges(edges, indptr, idx)
        lanes = outputs[0].shape[0]
        chunk = lanes * SOURCES_PER_CALL
        steps = []
        with progress_bar(total=len(self.sources), unit="source", desc=desc) as bar:
            for i, lo in enumerate(range(0, len(self.sources), chunk)):
                srcs = self.sources[lo:lo + chunk]
                t0 = time.perf_counter()
                chunk_size = numba.set_parallel_chunksize(1)  # one source at a time
                try:
                    read = kernel(indptr, idx, w, self.uses_weights, srcs, *outputs,
                                  in_ptr, in_idx)
                finally:
                    numba.set_parallel_chunksize(chunk_size)
                ss = SuperstepStats(superstep=i, active=len(srcs), direction=desc,
                                    edges_scanned=int(read.sum()), fused=True)
                ss.seconds["edges"] = time.perf_counter() - t0
                steps.append(ss)
                bar.update(len(srcs))
        return steps

    def _in_edges(self, edges, indptr, idx) -> tuple[np.ndarray, np.ndarray]:
        """The in-edges (CSC) for the kernels' bottom-up search steps: the CSR itself on
        an edge set stored undirected, the mapped CSC index where the graph has one, else
        empty arrays (top-down steps only; no index is built for them); empty on a
        weighted run (Dijkstra reads the out-edges only)."""
        none = indptr[:0], idx[:0]
        if self.uses_weights:
            return none
        if symmetric(edges.graph, edges.edge_set):
            return indptr, idx
        if edges.graph.adjacency_index(edges.edge_set, "csc") is None:
            return none
        return edges.adjacency("csc")[:2]


class Betweenness(_SourceSearches):
    """Brandes' betweenness. Vector program, per batch of sources (one column each):
    **forward** supersteps are a breadth-first search that counts shortest paths (vertices
    at the current depth send their path counts along out-edges; an unreached receiver
    takes the sum and the next depth); **backward** supersteps walk the depths down, each
    vertex sending ``(1 + delta) / sigma`` against its in-edges, and a vertex one level up
    adding ``sigma`` times the sum to its ``delta``. Between phases and batches one empty
    superstep starts the next (decided by the halting vote).

    Examples
    --------
    What :func:`betweenness` runs (every node a source: ``sampled=None``), on a path
    1 -> 2 -> 3 -> 4:

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 2, 3], [2, 3, 4], tempfile.mkdtemp() + "/g")
    >>> program = bsp.Betweenness(g.num_nodes(), None, normalized=False, endpoints=False,
    ...                           undirected=False, weighted=False)
    >>> bsp.run(g, program).to_dict()
    {1: 0.0, 2: 2.0, 3: 2.0, 4: 0.0}
    """

    name = "betweenness"
    host_state = True  # init, solve_in_memory and result (through _own, _values)

    def __init__(self, num_nodes: int, sampled: np.ndarray | None, *, normalized: bool,
                 endpoints: bool, undirected: bool, weighted: bool):
        super().__init__(num_nodes, sampled, weighted)
        self.normalized, self.endpoints, self.undirected = normalized, endpoints, undirected
        self.pending: list[tuple[int, float]] = []  # (source, nodes it reached) to add

    @property
    def direction(self) -> str:
        return "in" if self.phase.endswith("backward") else "out"

    def init(self, ctx):
        self.batch, self.phase, self.depth, self.pending = -1, "next-batch", 0, []
        return {"bc": ctx.full(0.0)}, ctx.full(False, bool)

    def send(self, ctx, state):
        import torch

        if self.phase in ("forward", "backward"):
            if self.uses_weights:
                raise GraphsysError(f"weighted {self.name} runs in memory on the CPU (numba "
                                    f"backend, schedule auto); the supersteps search by hops "
                                    f"(weighted=False)")
            dist = state["dist"]
            at = dist == self.depth
            if self.phase == "forward":
                return torch.where(at, state["sigma"], 0.0)
            sigma = torch.where(at, state["sigma"], 1.0)
            return torch.where(at, (1.0 + state["delta"]) / sigma, 0.0)
        return self._idle(ctx)

    def update(self, ctx, state, combined, received):
        import torch

        if self.phase == "next-batch":
            active = self._start_batch(ctx, state)
            state["sigma"] = (state["dist"] == 0).to(torch.float64)
            state["delta"] = ctx.full(0.0, width=self.width)
            return active, {}
        dist = state["dist"]
        if self.phase == "forward":
            new = (combined > 0) & torch.isinf(dist)
            state["dist"] = torch.where(new, float(self.depth + 1), dist)
            state["sigma"] = torch.where(new, combined, state["sigma"])
            return new.any(1), {"new": (int(new.sum()), "sum")}
        if self.phase == "start-backward":
            return (dist == self.depth).any(1), {}
        up = dist == self.depth - 1  # backward: the level above the senders
        state["delta"] = torch.where(up, state["delta"] + state["sigma"] * combined,
                                     state["delta"])
        if self.depth > 1:
            return up.any(1), {}
        return self._finish_batch(ctx, state)

    def _finish_batch(self, ctx, state):
        """Add the batch's dependencies to ``bc``; votes the nodes each source reached."""
        import torch

        dist = state["dist"]
        between = torch.isfinite(dist) & (dist > 0)
        extra = 1.0 if self.endpoints else 0.0
        state["bc"] = state["bc"] + torch.where(between, state["delta"] + extra, 0.0).sum(1)
        reached = torch.isfinite(dist).sum(0).tolist()
        votes = {f"reached{j}": (reached[j], "sum") for j in range(len(self._batch_sources()))}
        return torch.zeros(ctx.num_local, dtype=torch.bool, device=ctx.device), votes

    def halt(self, ctx, votes):
        if self.phase == "next-batch":
            self.phase, self.depth = "forward", 0
        elif self.phase == "forward" and votes["new"] > 0:
            self.depth += 1
        elif self.phase == "forward":
            self.phase = "start-backward"
            if self.depth == 0:  # the sources reached nobody
                return self._next_batch(
                    {f"reached{j}": 1.0 for j in range(len(self._batch_sources()))})
        elif self.phase == "start-backward":
            self.phase = "backward"
        elif self.depth > 1:
            self.depth -= 1
        else:
            return self._next_batch(votes)
        return False

    def _next_batch(self, votes) -> bool:
        self.pending += [(int(s), votes[f"reached{j}"])
                         for j, s in enumerate(self._batch_sources())]
        self.phase = "next-batch"
        return (self.batch + 1) * self.width >= len(self.sources)

    def result(self, ctx, state):
        bc = self._own(state["bc"]).copy()
        if self.endpoints:
            for s, reached in self.pending:
                if ctx.lo <= s < ctx.hi:
                    bc[s - ctx.lo] += reached - 1
        scaled = rescale(bc, self.num_nodes, normalized=self.normalized,
                         directed=not self.undirected, endpoints=self.endpoints,
                         sampled=self.sampled, lo=ctx.lo)
        return self._values(ctx, scaled)

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: Brandes' algorithm in numba, parallel over the sources
        (:func:`~graphsys.bsp.kernels_centrality.brandes`), one recorded superstep per chunk
        of sources; the same values. ``max_iters`` not applied."""
        if schedule != "auto":
            return None
        acc = np.zeros((numba.get_num_threads(), ctx.num_nodes))
        steps = self._numba_calls(ctx, edges, _brandes(self.endpoints), "brandes", acc)
        host_array(state["bc"])[:] = acc.sum(0)
        self.pending = []  # the kernel added the endpoints' own terms
        return Solved("brandes", steps, 0)


def _brandes(endpoints: bool):
    def kernel(indptr, idx, w, weighted, srcs, acc, in_ptr, in_idx):
        return brandes(indptr, idx, w, weighted, srcs, endpoints, acc, in_ptr, in_idx,
                       dag_fits(acc.shape[0], idx))
    return kernel


class Closeness(_SourceSearches):
    """Closeness or harmonic centrality from the distances of the sources to every node.
    Vector program, per batch of sources (one column each): a breadth-first search (a
    min-relaxation of ``distance + 1``; ``distance + weight``, Bellman-Ford, when
    weighted) until no distance drops anywhere; each node then adds its distances from the
    batch's sources (their sum, count and reciprocals).

    Examples
    --------
    What :func:`closeness` runs (every node a source: ``sampled=None``), on the path
    1 - 2 - 3 - 4 stored undirected:

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 2, 3], [2, 3, 4], tempfile.mkdtemp() + "/g",
    ...                         undirected=True)
    >>> program = bsp.Closeness(g.num_nodes(), None, harmonic=False, wf_improved=True,
    ...                         weighted=False)
    >>> bsp.run(g, program).to_dict()
    {1: 0.5, 2: 0.75, 3: 0.75, 4: 0.5}
    """

    host_state = True  # init, solve_in_memory and result (through _own, _values)

    def __init__(self, num_nodes: int, sampled: np.ndarray | None, *, harmonic: bool,
                 wf_improved: bool, weighted: bool):
        super().__init__(num_nodes, sampled, weighted)
        self.name = "harmonic" if harmonic else "closeness"
        self.harmonic, self.wf_improved = harmonic, wf_improved
        self.combiner, self.direction = "min", "out"
        self.message = "add_weight" if weighted else "copy"

    def init(self, ctx):
        self.batch, self.phase = -1, "next-batch"
        state = {"total": ctx.full(0.0), "reached": ctx.full(0.0), "inverse": ctx.full(0.0)}
        return state, ctx.full(False, bool)

    def send(self, ctx, state):
        if self.phase == "search":
            return state["dist"] if self.uses_weights else state["dist"] + 1.0
        return self._idle(ctx)

    def update(self, ctx, state, combined, received):
        import torch

        if self.phase == "next-batch":
            self._add_batch(state)
            return self._start_batch(ctx, state), {}
        lower = combined < state["dist"]
        state["dist"] = torch.where(lower, combined, state["dist"])
        return lower.any(1), {"lowered": (int(lower.sum()), "sum")}

    def _add_batch(self, state) -> None:
        """Add the distances of the batch just searched (if any) to the sums."""
        if "dist" not in state:
            return
        import torch

        dist = state.pop("dist")
        far = torch.isfinite(dist) & (dist > 0)
        state["total"] = state["total"] + torch.where(far, dist, 0.0).sum(1)
        state["reached"] = state["reached"] + far.sum(1).to(torch.float64)
        state["inverse"] = state["inverse"] + torch.where(far, 1.0 / dist, 0.0).sum(1)

    def halt(self, ctx, votes):
        if self.phase == "next-batch":
            self.phase = "search"
            return False
        if votes["lowered"] > 0:
            return False
        self.phase = "next-batch"
        return (self.batch + 1) * self.width >= len(self.sources)

    def result(self, ctx, state):
        self._add_batch(state)
        total, reached, inverse = (self._own(state[k]) for k in ("total", "reached", "inverse"))
        return self._values(ctx, self.finish(total, reached, inverse, ctx.lo))

    def finish(self, total, reached, inverse, lo: int = 0) -> np.ndarray:
        """Closeness or harmonic values of nodes ``lo..`` from their distance sums:
        networkx's ``(r - 1) / total`` (times ``(r - 1) / (N - 1)`` with ``wf_improved``)
        and ``sum of 1 / d``, with ``r - 1`` and ``N - 1`` the sources other than the node
        that reach it and all the sources other than the node (the estimate from a sample;
        exact when every node is a source)."""
        n = self.num_nodes
        others = np.full(len(total), float(len(self.sources)))
        if self.sampled is not None:
            mine = self.sampled[(self.sampled >= lo) & (self.sampled < lo + len(total))] - lo
            others[mine] -= 1
        else:
            others -= 1
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.harmonic:
                scale = (n - 1) / others if self.sampled is not None else 1.0
                return np.where(others > 0, inverse * scale, 0.0)
            value = np.where(total > 0, reached / total, 0.0)
            if self.wf_improved:
                value = np.where(others > 0, value * reached / others, 0.0)
        return value

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: a search from every source in numba, parallel over the
        sources (:func:`~graphsys.bsp.kernels_centrality.distance_sums`), one recorded
        superstep per chunk of sources; the same values. ``max_iters`` not applied."""
        if schedule != "auto":
            return None
        lanes = numba.get_num_threads()
        total = np.zeros((lanes, ctx.num_nodes))
        reached = np.zeros((lanes, ctx.num_nodes), np.int64)
        inverse = np.zeros((lanes, ctx.num_nodes))
        steps = self._numba_calls(ctx, edges, distance_sums, "searches", total, reached,
                                  inverse)
        for key, arr in (("total", total), ("reached", reached), ("inverse", inverse)):
            host_array(state[key])[:] = arr.sum(0)
        return Solved("parallel-searches", steps, 0)


_SAMPLE_DOC = """k : int, optional
    Sample ``k`` source nodes (drawn without replacement with
    ``numpy.random.default_rng(seed)``) and scale their sums into an estimate; None
    (default): every node is a source (exact). ``k`` = N is exact too.
seed : int, default 0
    Seed of the sample of ``k`` sources (a non-negative integer; None, as for every
    parameter, the default 0, never a fresh seed), drawn among the nodes in original-id
    order: the same sources whatever the graph's partitions.
sources : node id or list of node ids, optional
    The sample itself (original ids), instead of ``k`` and ``seed``; scaled as a sample
    of ``len(sources)``.
weighted : bool, default False
    Edge weights as lengths (positive; True requires the edge set to have them); False
    (networkx's ``weight=None``) counts hops. Weighted searches (Dijkstra) run in memory
    on CPU; the supersteps count hops.
max_iters : int, optional
    Most supersteps of the vector program (default: more than any run takes: two per
    depth and batch of sources, plus a few).
schedule : {"auto", "sync"}, default "auto"
    ``auto``: in memory on CPU, numba kernels parallel over the sources (one thread per
    lane, each with its own buffers; one recorded superstep per chunk of sources), else
    ``sync``; ``sync``: the vector program in BSP supersteps, %(width)d sources at a
    time.""".replace("%(width)d", str(SOURCES_PER_PASS))


_RAISES_DOC = """ParameterError
    ``k`` not in 1..N, ``seed`` not a non-negative integer, both ``k`` and ``sources``,
    an empty or repeated ``sources``, ``weighted`` True without weights, or an unknown
    ``schedule``, ``mode``, ``backend`` or ``device``.
GraphsysError
    A weight that is not positive and finite (weighted), a node of ``sources`` not in the
    graph, or a weighted run in supersteps."""


@document_options()
@fill_doc(sample=_SAMPLE_DOC, raises=_RAISES_DOC)
def betweenness(graph, *, k: int | None = None, seed: int = 0, sources=None,
                normalized: bool = True, endpoints: bool = False,
                weighted: bool = False, max_iters: int | None = None,
                schedule: str = "auto", mode: str = "auto", device: str = "cpu",
                backend: str = "auto", threads: int | None = None,
                edge_set: str | None = None, distributed: bool = False,
                progress: bool | Callable | None = None, readahead: int = 4,
                dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    r"""Betweenness centrality: the share of shortest paths between other nodes that pass
    through each node, as networkx's :func:`~networkx.betweenness_centrality`.

    .. math::
        c_B(v) = \sum_{s \ne v \ne t} \frac{\sigma(s, t \mid v)}{\sigma(s, t)}

    :math:`\sigma(s, t)` the number of shortest paths from :math:`s` to :math:`t`,
    :math:`\sigma(s, t \mid v)` those through :math:`v`. Brandes' algorithm [1]_: one
    search per source counts the paths, a pass back over the nodes in reverse distance
    order sums the dependencies. Paths follow edge direction (both ways where the edge set
    is stored undirected); a multi-edge counts as that many paths. Scaling is networkx's:
    ``normalized`` divides by the ordered pairs ``(N - 1)(N - 2)`` (``N(N - 1)`` with
    ``endpoints``); unnormalized values of an undirected edge set are halved (each pair
    once); a sample of ``k`` sources is scaled up to all of them, sampled and other nodes
    apart when endpoints are left out (networkx 3.6's rule).

    Parameters
    ----------
    %(graph)s
    %(sample)s
    normalized : bool, default True
        Divide by the number of pairs a node can lie between.
    endpoints : bool, default False
        Count a path's two ends as on it.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) betweenness by internal node id.

    Raises
    ------
    %(raises)s

    References
    ----------
    .. [1] U. Brandes, "A faster algorithm for betweenness centrality", Journal of
       Mathematical Sociology 25(2), 2001.
    .. [2] U. Brandes, C. Pich, "Centrality estimation in large networks", International
       Journal of Bifurcation and Chaos 17(7), 2007.

    Examples
    --------
    A path 1 - 2 - 3 - 4: the inner nodes each lie on two of the three pairs around them.

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3]), np.array([2, 3, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> bsp.betweenness(g).to_dict()
    {1: 0.0, 2: 0.6666666666666666, 3: 0.6666666666666666, 4: 0.0}
    >>> bsp.betweenness(g, normalized=False).to_dict()
    {1: 0.0, 2: 2.0, 3: 2.0, 4: 0.0}
    >>> bsp.betweenness(g, mode="out-of-core").to_dict() == bsp.betweenness(g).to_dict()
    True
    """
    return BETWEENNESS_SPEC.run(graph, max_iters=max_iters, k=k, seed=seed, sources=sources,
                                normalized=normalized, endpoints=endpoints, weighted=weighted,
                                mode=mode, device=device, backend=backend, threads=threads,
                                distributed=distributed, progress=progress, edge_set=edge_set,
                                readahead=readahead, dense_divisor=dense_divisor, fuse=fuse,
                                schedule=schedule)


@document_options()
@fill_doc(sample=_SAMPLE_DOC, raises=_RAISES_DOC)
def closeness(graph, *, k: int | None = None, seed: int = 0, sources=None,
              wf_improved: bool = True, weighted: bool = False,
              max_iters: int | None = None, schedule: str = "auto", mode: str = "auto",
              device: str = "cpu", backend: str = "auto", threads: int | None = None,
              edge_set: str | None = None, distributed: bool = False,
              progress: bool | Callable | None = None, readahead: int = 4,
              dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    r"""Closeness centrality, as networkx's :func:`~networkx.closeness_centrality`.

    .. math::
        C(u) = \frac{r_u - 1}{\sum_{v \to u} d(v, u)} \cdot \frac{r_u - 1}{N - 1}

    over the nodes :math:`v` that reach :math:`u` (distances *to* :math:`u`, along edge
    direction: networkx's incoming distance on a directed graph), :math:`r_u - 1` of them;
    the second factor is Wasserman and Faust's scaling for graphs that are not connected
    (``wf_improved``, networkx's default) [1]_. With a sample of ``k`` sources the sums run
    over the sampled sources and :math:`N - 1` becomes the sampled sources other than
    :math:`u`: the mean distance and the reached share are estimated from the sample
    (Eppstein and Wang's sampling [2]_).

    Parameters
    ----------
    %(graph)s
    %(sample)s
    wf_improved : bool, default True
        Scale by the share of other nodes that reach the node.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) closeness by internal node id (0 where nothing reaches
        the node).

    Raises
    ------
    %(raises)s

    References
    ----------
    .. [1] S. Wasserman, K. Faust, "Social Network Analysis: Methods and Applications",
       Cambridge University Press, 1994.
    .. [2] D. Eppstein, J. Wang, "Fast approximation of centrality", Journal of Graph
       Algorithms and Applications 8(1), 2004.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3]), np.array([2, 3, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> {node: round(c, 4) for node, c in bsp.closeness(g).to_dict().items()}
    {1: 0.5, 2: 0.75, 3: 0.75, 4: 0.5}
    >>> bsp.closeness(g, k=4).to_dict() == bsp.closeness(g).to_dict()
    True
    """
    return CLOSENESS_SPEC.run(graph, max_iters=max_iters, k=k, seed=seed, sources=sources,
                              wf_improved=wf_improved, weighted=weighted, mode=mode, device=device,
                              backend=backend, threads=threads, distributed=distributed,
                              progress=progress, edge_set=edge_set, readahead=readahead,
                              dense_divisor=dense_divisor, fuse=fuse, schedule=schedule)


@document_options()
@fill_doc(sample=_SAMPLE_DOC, raises=_RAISES_DOC)
def harmonic(graph, *, k: int | None = None, seed: int = 0, sources=None,
             weighted: bool = False, max_iters: int | None = None,
             schedule: str = "auto", mode: str = "auto", device: str = "cpu",
             backend: str = "auto", threads: int | None = None,
             edge_set: str | None = None, distributed: bool = False,
             progress: bool | Callable | None = None, readahead: int = 4,
             dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    r"""Harmonic centrality, as networkx's :func:`~networkx.harmonic_centrality`.

    .. math::
        H(u) = \sum_{v \ne u} \frac{1}{d(v, u)}

    distances *to* :math:`u` along edge direction (:math:`1/\infty = 0`) [1]_. With a
    sample of ``k`` sources the sum runs over them and is scaled by :math:`(N - 1)` over
    the sampled sources other than :math:`u`, an unbiased estimate (networkx's
    ``harmonic_centrality(G, sources=S)`` is the unscaled sum: multiply by the sampled
    sources other than :math:`u` and divide by :math:`N - 1`).

    Parameters
    ----------
    %(graph)s
    %(sample)s
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) harmonic centrality by internal node id.

    Raises
    ------
    %(raises)s

    References
    ----------
    .. [1] P. Boldi, S. Vigna, "Axioms for centrality", Internet Mathematics 10(3-4),
       2014.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3]), np.array([2, 3, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> {node: round(h, 4) for node, h in bsp.harmonic(g).to_dict().items()}
    {1: 1.8333, 2: 2.5, 3: 2.5, 4: 1.8333}
    """
    return HARMONIC_SPEC.run(graph, max_iters=max_iters, k=k, seed=seed, sources=sources,
                             weighted=weighted, mode=mode, device=device, backend=backend,
                             threads=threads, distributed=distributed, progress=progress,
                             edge_set=edge_set, readahead=readahead, dense_divisor=dense_divisor,
                             fuse=fuse, schedule=schedule)


def _weighted(graph, edge_set, weighted, name: str) -> bool:
    use = resolve_weighted(graph, edge_set, check_flag("weighted", weighted))
    if use:
        check_positive_weights(graph, edge_set, name)
    return use


def _betweenness_program(graph, *, edge_set=None, k=None, seed=0, sources=None,
                         normalized=True, endpoints=False, weighted=False):
    return Betweenness(graph.num_nodes(), sample_sources(graph, k, seed, sources),
                       normalized=check_flag("normalized", normalized),
                       endpoints=check_flag("endpoints", endpoints),
                       undirected=symmetric(graph, edge_set),
                       weighted=_weighted(graph, edge_set, weighted, "betweenness"))


def _closeness_program(graph, *, edge_set=None, k=None, seed=0, sources=None,
                       wf_improved=True, weighted=False, harmonic=False):
    name = "harmonic" if harmonic else "closeness"
    return Closeness(graph.num_nodes(), sample_sources(graph, k, seed, sources),
                     harmonic=harmonic, wf_improved=check_flag("wf_improved", wf_improved),
                     weighted=_weighted(graph, edge_set, weighted, name))


def _most_supersteps(n: int) -> int:
    """Two supersteps per depth and batch of sources, plus four per batch."""
    return (n // SOURCES_PER_PASS + 1) * (2 * n + 8)


_SAMPLED = ("k", "seed", "sources", "weighted")
BETWEENNESS_SPEC = AlgorithmSpec("betweenness", _betweenness_program, _most_supersteps,
                                 parameters=(*_SAMPLED, "normalized", "endpoints"))
CLOSENESS_SPEC = AlgorithmSpec("closeness", _closeness_program, _most_supersteps,
                               parameters=(*_SAMPLED, "wf_improved"))
HARMONIC_SPEC = AlgorithmSpec("harmonic", partial(_closeness_program, harmonic=True,
                                                   wf_improved=False),
                              _most_supersteps, parameters=_SAMPLED)
