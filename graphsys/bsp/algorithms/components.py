"""Weakly connected components (min-label propagation) and label propagation communities."""

from __future__ import annotations

import torch

from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.program import ModeCombiner, VertexProgram


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



def wcc(graph, *, max_iters: int | None = None, **run_kwargs):
    """Component label (smallest global id in the component, float64 (N,)) of every node;
    at most ``max_iters`` supersteps (default N + 1)."""
    return WCC_SPEC.run(graph, max_iters=max_iters, **run_kwargs)


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
