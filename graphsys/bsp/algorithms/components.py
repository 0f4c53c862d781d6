"""Weakly connected components (min-label propagation) and label propagation communities."""

from __future__ import annotations

import time

import numpy as np
import torch

from graphsys.bsp import afforest
from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.program import ModeCombiner, Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array


class _LabelProgram(VertexProgram):
    """Shared part of WCC and LPA: labels start as global ids, every vertex sends its
    label, along out-edges or both ways, and the answer is the final label."""

    def __init__(self, both_ways: bool = True):
        self.direction = "both" if both_ways else "out"

    def init(self, ctx):
        label = ctx.node_range().to(torch.float64)
        return {"label": label}, torch.ones(ctx.num_local, dtype=torch.bool, device=ctx.device)

    def send(self, ctx, state):
        return state["label"]

    def result(self, ctx, state):
        return state["label"]


class WCC(_LabelProgram):
    """Every vertex ends with the smallest global id of its weakly connected component.
    Messages go both ways along edges (one way when the edge set is stored undirected);
    only vertices whose label dropped send."""

    name = "wcc"
    message, combiner = "copy", "min"
    relax_state = "label"

    def update(self, ctx, state, combined, received):
        new = received & (combined < state["label"])
        state["label"] = torch.where(new, combined, state["label"])
        return new, {}

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: union-find in one numba call, Afforest or a one-pass
        union-find as :func:`graphsys.bsp.afforest.choose` picks for the graph's average
        degree (``stats.method``); recorded as one superstep. ``max_iters`` not applied."""
        if schedule != "auto":
            return None
        directed = self.direction == "both"
        method = afforest.choose(ctx.num_nodes, edges.num_edges, directed)
        indptr, idx, _ = edges.adjacency("csr")
        into = edges.adjacency("csc")[:2] if method == "afforest" and directed else (
            indptr, idx)
        t0 = time.perf_counter()
        comp = np.empty(ctx.num_nodes, idx.dtype)
        if method == "afforest":
            read, _ = afforest.afforest(indptr, idx, *into, directed, 0, comp)
        else:
            read = afforest.union_find(indptr, idx, comp)
        host_array(state["label"])[:] = comp
        ss = SuperstepStats(superstep=0, active=ctx.num_nodes, direction=method,
                            edges_scanned=int(read), messages_sent=int(read), fused=True)
        ss.seconds["edges"] = time.perf_counter() - t0
        return Solved(method, [ss], 0)


class LabelPropagation(_LabelProgram):
    """Synchronous label propagation: each vertex takes the most frequent label among its
    neighbours and itself (ties: smallest label); labels start as global ids. All vertices
    send every superstep; halts when no label changes."""

    name = "lpa"
    message = "copy"
    combiner = ModeCombiner()
    include_self = True

    def update(self, ctx, state, combined, received):
        new = torch.where(received, combined, state["label"])
        changed = int((new != state["label"]).sum())
        state["label"] = new
        return torch.ones_like(received), {"changed": (changed, "sum")}

    def halt(self, ctx, votes):
        return votes["changed"] == 0



def wcc(graph, *, max_iters: int | None = None, schedule: str = "auto", **run_kwargs):
    """Component label (smallest global id in the component, float64 (N,)) of every node;
    at most ``max_iters`` supersteps (default N + 1). ``schedule`` ``auto`` (default) runs
    Afforest or union-find in memory on CPU (``stats.method`` says which), ``sync`` BSP
    supersteps; see :func:`graphsys.bsp.engine.run`."""
    return WCC_SPEC.run(graph, max_iters=max_iters, schedule=schedule, **run_kwargs)


def label_propagation(graph, *, max_iters: int | None = None, **run_kwargs):
    """Community label (a global id, float64 (N,)) of every node; at most ``max_iters``
    supersteps (default 20: synchronous LPA can oscillate)."""
    return LPA_SPEC.run(graph, max_iters=max_iters, **run_kwargs)


def _wcc_program(graph, *, edge_set=None):
    return WCC(both_ways=not symmetric(graph, edge_set))


def _lpa_program(graph, *, edge_set=None):
    return LabelPropagation(both_ways=not symmetric(graph, edge_set))


WCC_SPEC = AlgorithmSpec("wcc", _wcc_program, lambda n: n + 1)
LPA_SPEC = AlgorithmSpec("lpa", _lpa_program, lambda n: 20)
