"""Semi-synchronous label propagation (Cordasco and Gargano): a colouring, then one colour
class per superstep; deterministic and converging (networkx's
:func:`~networkx.algorithms.community.label_propagation_communities`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import document_options
from graphsys.bsp.edges import DENSE_DIVISOR, numpy_adjacency
from graphsys.bsp.engine import Result
from graphsys.bsp.kernels_components import greedy_coloring, lpa_semi_sync
from graphsys.bsp.program import Combiner, Solved, VertexProgram, message_runs
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.kernels.arrays import read_only

if TYPE_CHECKING:
    import torch


class _PhaseCombiner(Combiner):
    """The combiner of the phase :class:`LabelPropagation` is in (its :meth:`combine`)."""

    name = "label-propagation"

    def __init__(self, program: LabelPropagation):
        self.program = program

    def combine(self, index, values, num_targets):
        return self.program.combine(index, values, num_targets)


class LabelPropagation(VertexProgram):
    """Semi-synchronous label propagation (Cordasco and Gargano), networkx's
    :func:`~networkx.algorithms.community.label_propagation_communities`.

    The rule of :func:`label_propagation`, one colour class per superstep. In supersteps
    the colouring is Jones and Plassmann's, which gives the greedy colouring of the same
    order: a superstep counts each vertex's neighbours of higher priority; then,
    alternately, the vertices whose higher neighbours are all coloured take the smallest
    colour none of them holds, and tell their lower neighbours. Every phase combines raw
    messages (:meth:`combine`). In memory on CPU :meth:`solve_in_memory` runs the same rule
    in numba.

    Examples
    --------
    What :func:`label_propagation` runs, on two triangles joined by one edge:

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 1, 2, 4, 4, 5, 3], [2, 3, 3, 5, 6, 6, 4],
    ...                         tempfile.mkdtemp() + "/g")
    >>> bsp.run(g, bsp.LabelPropagation()).to_dict()
    {1: 3.0, 2: 3.0, 3: 3.0, 4: 5.0, 5: 5.0, 6: 5.0}
    """

    name = "lpa"
    message = "copy"

    def __init__(self, both_ways: bool = True):
        self.direction = "both" if both_ways else "out"
        self.combiner = _PhaseCombiner(self)
        self.phase = "degrees"

    def init(self, ctx):
        import torch

        self.phase, self.step, self.changed, self.colors = "degrees", 0, 0, 0
        self.halt_when_inactive = False
        state = {"label": ctx.node_range(torch.float64), "color": ctx.full(-1.0),
                 "pending": ctx.full(0.0), "ready": ctx.full(False, torch.bool),
                 "new": ctx.full(False, torch.bool)}
        return state, ctx.full(False, torch.bool)

    def _priorities(self, ctx) -> torch.Tensor:
        """Every vertex's position in the colouring order (largest degree first, then id),
        streamed from the edge set's degrees; this process's part as float64."""
        import torch

        deg = ctx.graph.degrees(ctx.edge_set, "both" if self.direction == "both" else "out")
        order = np.argsort(-deg, kind="stable")
        rank = np.empty(len(deg), np.float64)
        rank[order] = np.arange(len(deg), dtype=np.float64)
        return torch.as_tensor(rank[ctx.lo:ctx.hi], device=ctx.device)

    def send(self, ctx, state):
        import torch

        if self.phase == "count":
            return state["rank"]
        if self.phase == "color":
            return state["color"]
        if self.phase == "notify":
            return torch.ones_like(state["label"])
        self.current = state["label"]
        return state["label"]

    def accepts(self, ctx, state):
        if self.phase == "color":
            return state["ready"] & (state["color"] < 0)
        if self.phase == "notify":
            return state["color"] < 0
        if self.phase == "lpa":
            return state["color"] == self.step % max(self.colors, 1)
        return None

    def combine(self, index, values, num_targets):
        import torch

        out = torch.zeros(num_targets, dtype=torch.float64, device=values.device)
        if index.numel() == 0:
            return out
        if self.phase == "count":  # neighbours of higher priority
            return out.index_add_(0, index, (values < self.mine[index]).to(torch.float64))
        if self.phase == "notify":
            return out.index_add_(0, index, values)
        idx, val, lengths = message_runs(index, values)
        if self.phase == "color":  # the smallest colour no message holds
            first = torch.ones_like(idx, dtype=torch.bool)
            first[1:] = idx[1:] != idx[:-1]
            pos = torch.arange(idx.numel(), device=idx.device)
            start = torch.cummax(torch.where(first, pos, 0), 0).values
            rank = (pos - start).to(torch.float64)
            size = torch.zeros(num_targets, dtype=torch.float64, device=idx.device)
            size.index_add_(0, idx, torch.ones_like(rank))
            miss = val != rank
            out = torch.full((num_targets,), float("inf"), dtype=torch.float64,
                             device=idx.device)
            out.scatter_reduce_(0, idx[miss], rank[miss], "amin", include_self=True)
            return torch.where(torch.isinf(out), size, out)
        best = torch.zeros(num_targets, dtype=lengths.dtype, device=idx.device)
        best.scatter_reduce_(0, idx, lengths, "amax")
        top = lengths == best[idx]
        largest = torch.full((num_targets,), -1.0, dtype=torch.float64, device=idx.device)
        largest.scatter_reduce_(0, idx[top], val[top], "amax", include_self=True)
        own = top & (val == self.current[idx])
        keep = torch.zeros(num_targets, dtype=torch.bool, device=idx.device)
        keep[idx[own]] = True
        return torch.where(keep, self.current, largest)

    def update(self, ctx, state, combined, received):
        import torch

        got = torch.where(received, combined, 0.0)
        nobody = torch.zeros(ctx.num_local, dtype=torch.bool, device=ctx.device)
        if self.phase == "degrees":
            state["rank"] = self.mine = self._priorities(ctx)
            return torch.ones_like(nobody), {}
        if self.phase == "count":
            state["pending"] = got
            state["ready"] = got == 0
            return nobody, {}
        if self.phase == "color":
            new = state["ready"] & (state["color"] < 0)
            state["color"] = torch.where(new, got, state["color"])
            state["new"] = new
            top = float(state["color"].max()) + 1 if ctx.num_local else 0.0
            return new, {"colors": (top, "max")}
        if self.phase == "notify":
            uncolored = state["color"] < 0
            state["pending"] = state["pending"] - got
            state["ready"] = uncolored & (state["pending"] == 0)
            left = int(uncolored.sum())
            return (~uncolored if left else torch.ones_like(nobody)), {"uncolored": (left,
                                                                                    "sum")}
        take = received & (state["color"] == self.step % self.colors)
        new = torch.where(take, combined, state["label"])
        changed = int((new != state["label"]).sum())
        state["label"] = new
        return torch.ones_like(received), {"changed": (changed, "sum")}

    def halt(self, ctx, votes):
        if self.phase == "degrees":
            self.phase = "count"
        elif self.phase == "count":
            self.phase = "color"
        elif self.phase == "color":
            self.colors = int(votes["colors"])
            self.phase = "notify"
        elif self.phase == "notify":
            self.phase = "lpa" if votes["uncolored"] == 0 else "color"
        else:
            self.changed += int(votes["changed"])
            self.step += 1
            if self.step % self.colors == 0:
                if self.changed == 0:
                    return True
                self.changed = 0
        return False

    def result(self, ctx, state):
        return state["label"]

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: the greedy colouring and the rounds in numba
        (:func:`~graphsys.bsp.kernels_components.greedy_coloring`,
        :func:`~graphsys.bsp.kernels_components.lpa_semi_sync`), one recorded superstep
        per round (``messages_combined``: the labels it changed); the same labels.
        ``max_iters`` bounds the rounds."""
        if schedule != "auto":
            return None
        two = self.direction == "both"
        *out, setup = numpy_adjacency(edges, "csr")
        if two:
            *into, more = numpy_adjacency(edges, "csc")
            setup += more
        else:
            into = out
        out, into = read_only(*out), read_only(*into)  # mapped or built: one signature
        t0 = time.perf_counter()
        deg = np.diff(out[0]) + (np.diff(into[0]) if two else 0)
        order = np.argsort(-deg, kind="stable")
        color = np.empty(ctx.num_nodes, np.int64)
        ncolors = greedy_coloring(*out, *into, two, order, color)
        label = np.arange(ctx.num_nodes, dtype=np.int64)
        changes = np.zeros(max(int(max_iters), 1), np.int64)
        rounds = lpa_semi_sync(*out, *into, two, color, ncolors, label, max_iters, changes)
        seconds = time.perf_counter() - t0
        host_array(state["label"])[:] = label
        read = int(out[0][-1]) + (int(into[0][-1]) if two else 0)
        steps = []
        for r in range(rounds):
            ss = SuperstepStats(superstep=r, active=ctx.num_nodes, direction="round",
                                edges_scanned=read, messages_sent=read,
                                messages_combined=int(changes[r]), fused=True)
            ss.seconds["edges"] = seconds / rounds
            steps.append(ss)
        converged = rounds > 0 and changes[rounds - 1] == 0
        return Solved("semi-synchronous", steps, 0 if converged else ctx.num_nodes,
                      setup_seconds=setup)


@document_options()
def label_propagation(graph, *, max_iters: int | None = None, schedule: str = "auto",
                      mode: str = "auto", device: str = "cpu", backend: str = "auto",
                      threads: int | None = None, edge_set: str | None = None,
                      distributed: bool = False, progress: bool | Callable | None = None,
                      readahead: int = 4, dense_divisor: float = DENSE_DIVISOR,
                      fuse: bool = True) -> Result:
    """Communities by semi-synchronous label propagation, as networkx's
    :func:`~networkx.algorithms.community.label_propagation_communities`.

    Cordasco and Gargano's rule [1]_ [2]_: labels start as internal ids; the nodes are
    coloured greedily, largest degree first, so that neighbours differ; each round updates
    the colour classes one after the other, every node of a class taking the most frequent
    label among its neighbours (ties: its own label if among them, else the largest); a
    class holds no two neighbours, so this converges [2]_. **Convergence rule**: the run
    stops after a round in which no label changed
    (every node then holds one of its most frequent neighbour labels, networkx's
    ``_labeling_complete``); ``result.stats.converged`` is False, and a warning is issued,
    if ``max_iters`` ran out first. Edges are followed both ways (once where the edge set
    is stored undirected); each stored edge counts, so a multi-edge weighs more. No seed:
    the result is deterministic.

    Parameters
    ----------
    %(graph)s
    max_iters : int, optional
        Most supersteps (default 4N + 100,000: the colouring takes at most 2N + 2, a round
        one per colour); in memory on CPU (``schedule="auto"``) the most rounds.
    schedule : {"auto", "sync"}, default "auto"
        ``auto``: in memory on CPU, the colouring and the rounds in numba (one recorded
        superstep per round, ``result.stats.method`` ``"semi-synchronous"``), else
        ``sync``; ``sync``: the colouring and one colour class per BSP superstep, with the
        same labels.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) community labels by internal node id (equal labels, same
        community; a label is the internal id some node started with).

    Raises
    ------
    ParameterError
        An unknown ``schedule``, ``mode``, ``backend`` or ``device``.

    References
    ----------
    .. [1] U. N. Raghavan, R. Albert, S. Kumara, "Near linear time algorithm to detect
       community structures in large-scale networks", Physical Review E 76, 2007.
    .. [2] G. Cordasco, L. Gargano, "Community detection via semi-synchronous label
       propagation algorithms", IEEE BASNA 2010.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src = np.array([0, 0, 1, 3, 3, 4, 2])
    >>> dst = np.array([1, 2, 2, 4, 5, 5, 3])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> result = bsp.label_propagation(g)
    >>> communities = {}
    >>> for node, label in result.to_dict().items():
    ...     communities.setdefault(label, []).append(node)
    >>> sorted(communities.values()), result.stats.converged
    ([[0, 1, 2], [3, 4, 5]], True)
    >>> bsp.label_propagation(g, mode="out-of-core").to_dict() == result.to_dict()
    True
    """
    return LPA_SPEC.run(graph, max_iters=max_iters, mode=mode, device=device, backend=backend,
                        threads=threads, distributed=distributed, progress=progress,
                        edge_set=edge_set, readahead=readahead, dense_divisor=dense_divisor,
                        fuse=fuse, schedule=schedule)


def _lpa_program(graph, *, edge_set=None):
    return LabelPropagation(both_ways=not symmetric(graph, edge_set))


LPA_SPEC = AlgorithmSpec("lpa", _lpa_program, lambda n: 4 * n + 100_000)
