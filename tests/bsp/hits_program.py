"""HITS written from the VertexProgram docstrings: a program whose ``direction`` changes
between supersteps (authorities pull hub scores along edges, hubs pull authority scores
against them). Run as a script under torchrun it is one rank of a 2-process run:
``python -m torch.distributed.run --nproc_per_node 2 hits_program.py GRAPH OUT STEPS`` saves
``OUT.a.npy`` and ``OUT.h.npy``.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from graphsys import bsp


class HITS(bsp.VertexProgram):
    """Even supersteps: authority a_v = sum of h_u / sum(h) over in-neighbours u (messages
    ``out``); odd ones: hub h_u = sum of a_v / sum(a) over out-neighbours v (``in``)."""

    name = "hits"
    message = "copy"
    combiner = "sum"

    def __init__(self, which: str = "a"):
        self.which = which  # the result: authorities ("a") or hubs ("h")
        self.step = 0

    @property
    def direction(self) -> str:
        return "out" if self.step % 2 == 0 else "in"

    def init(self, ctx):
        self.step = 0
        ones = ctx.full(1.0)
        return {"a": ones.clone(), "h": ones.clone()}, torch.ones(ctx.num_local, dtype=bool)

    def aggregate(self, ctx, state):
        return {"a": (state["a"].sum(), "sum"), "h": (state["h"].sum(), "sum")}

    def send(self, ctx, state):
        key = "h" if self.step % 2 == 0 else "a"
        return state[key] / ctx.aggregates[key]

    def update(self, ctx, state, combined, received):
        state["a" if self.step % 2 == 0 else "h"] = torch.where(
            received, combined, torch.zeros_like(combined))
        self.step += 1
        return torch.ones_like(received), {}

    def result(self, ctx, state):
        return state[self.which]


def reference(adj, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The same iteration on a scipy CSR adjacency (multi-edges counted): (a, h)."""
    n = adj.shape[0]
    a, h = np.ones(n), np.ones(n)
    for s in range(steps):
        if s % 2 == 0:
            a = adj.T @ (h / h.sum())
        else:
            h = adj @ (a / a.sum())
    return a, h


if __name__ == "__main__":
    import torch.distributed as dist

    from graphsys import open_graph
    from graphsys.distributed import init_from_env

    init_from_env(torch.device("cpu"))
    graph_dir, out, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for which in "ah":
        res = bsp.run(open_graph(graph_dir), HITS(which), distributed=True, max_iters=steps)
        if dist.get_rank() == 0:
            np.save(f"{out}.{which}.npy", res.values)
    dist.destroy_process_group()
