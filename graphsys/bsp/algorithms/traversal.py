"""Frontier traversals: BFS levels and single-source shortest paths (Bellman-Ford)."""

from __future__ import annotations

import time

import numba
import torch

from graphsys.bsp.algorithms.common import (
    check_weights_non_negative,
    source_index,
    split_seconds,
    symmetric,
)
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.kernels_bfs import bfs_solve
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array

INF = float("inf")


class BFS(VertexProgram):
    """Hop levels from ``source`` (global id) along edge direction; ``inf`` = unreachable.

    Frontier = vertices reached in the previous superstep; a pull only visits unreached
    targets (``accepts``) and stops at their first frontier in-neighbour.
    """

    name = "bfs"
    message, combiner, direction = "copy", "min", "out"
    first_message_wins = True
    relax_state, relax_offset = "level", 1.0

    def __init__(self, source: int):
        self.source = source

    def init(self, ctx):
        level = ctx.full(INF)
        if ctx.lo <= self.source < ctx.hi:
            level[self.source - ctx.lo] = 0.0
        return {"level": level}, level == 0

    def send(self, ctx, state):
        return state["level"] + 1.0

    def accepts(self, ctx, state):
        return torch.isinf(state["level"])

    def update(self, ctx, state, combined, received):
        new = received & (combined < state["level"])
        state["level"] = torch.where(new, combined, state["level"])
        return new, {}

    def result(self, ctx, state):
        return state["level"]

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: direction-optimizing BFS
        (:func:`~graphsys.bsp.kernels_bfs.bfs_solve`, one numba call that also writes the
        float levels and sums the phases; bottom-up steps read the CSC, or the CSR of a
        symmetric edge set). One superstep is recorded per *phase*
        (a run of levels in one direction: ``superstep`` = its first level, ``active`` =
        the vertices expanded, ``messages_combined`` = the vertices it reached), not per
        level: a road graph has ~1,000 levels of a few microseconds each."""
        if schedule != "auto":
            return None
        out = edges.adjacency("csr")[:2]
        into = out if symmetric(ctx.graph, ctx.edge_set) else edges.adjacency("csc")[:2]
        t0 = time.perf_counter()
        rows, pulled, num_left = bfs_solve(*out, *into, self.source, host_array(state["level"]),
                                           max_iters, numba.get_num_threads())
        seconds = time.perf_counter() - t0
        supersteps = []
        for (first, _, active, e, reached), w in zip(rows.tolist(), split_seconds(
                seconds, rows[:, 2] + rows[:, 3])):
            ss = SuperstepStats(superstep=first, active=active,
                                direction="pull" if pulled[first] else "push",
                                edges_scanned=e, messages_sent=e, messages_combined=reached,
                                fused=True)
            ss.seconds["edges"] = w
            supersteps.append(ss)
        return Solved("direction-optimizing-bfs", supersteps, num_left)


class SSSP(VertexProgram):
    """Shortest-path distances (sum of float32 weights, 1 where unweighted) from ``source``;
    a vertex whose distance dropped sends ``dist + w`` along its out-edges."""

    name = "sssp"
    message, combiner, direction = "add_weight", "min", "out"
    uses_weights = True
    relax_state = "dist"

    def __init__(self, source: int):
        self.source = source

    def init(self, ctx):
        dist = ctx.full(INF)
        if ctx.lo <= self.source < ctx.hi:
            dist[self.source - ctx.lo] = 0.0
        return {"dist": dist}, dist == 0

    def send(self, ctx, state):
        return state["dist"]

    def update(self, ctx, state, combined, received):
        better = received & (combined < state["dist"])
        state["dist"] = torch.where(better, combined, state["dist"])
        return better, {}

    def result(self, ctx, state):
        return state["dist"]


def bfs(graph, source, *, max_iters: int | None = None, schedule: str = "auto",
        **run_kwargs):
    """BFS levels (float64 (N,), ``inf`` unreachable) from the original node id ``source``;
    at most ``max_iters`` supersteps (default N + 1). ``schedule`` ``auto`` (default) runs
    the direction-optimizing BFS in memory on CPU (``stats.method``), ``sync`` BSP
    supersteps; see :func:`graphsys.bsp.engine.run`."""
    return BFS_SPEC.run(graph, source, max_iters=max_iters, schedule=schedule, **run_kwargs)


def sssp(graph, source, *, max_iters: int | None = None, **run_kwargs):
    """Shortest-path distances (float64 (N,), ``inf`` unreachable) from ``source``; raises
    GraphsysError on a negative (or NaN) weight before running."""
    return SSSP_SPEC.run(graph, source, max_iters=max_iters, **run_kwargs)


def _bfs_program(graph, *, source, edge_set=None):
    return BFS(source_index(graph, source))


def _sssp_program(graph, *, source, edge_set=None):
    check_weights_non_negative(graph, edge_set)
    return SSSP(source_index(graph, source))


BFS_SPEC = AlgorithmSpec("bfs", _bfs_program, lambda n: n + 1, needs_source=True)
SSSP_SPEC = AlgorithmSpec("sssp", _sssp_program, lambda n: n + 1, needs_source=True)
