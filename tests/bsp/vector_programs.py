"""Vector programs of the tests: a width-d feature propagation (``A·X`` with a sum, min or
max combiner per column) and its numpy/scipy reference. Run as a script under torchrun it
is one rank of a 2-process run: ``python -m torch.distributed.run --nproc_per_node 2
vector_programs.py GRAPH OUT`` saves ``OUT.<job>.npy`` for every job of :data:`JOBS`.
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp
import torch

from graphsys import bsp
from graphsys.bsp.algorithms.pagerank import PageRankRows


def features(n: int, d: int, seed: int = 3) -> np.ndarray:
    """float64 (n, d) features by global id, with negative entries (min/max see signs)."""
    return np.random.default_rng(seed).normal(size=(n, d))


class Propagate(bsp.VertexProgram):
    """``hops`` rounds of X <- A·X (``direction="in"``: a vertex combines ``w_uv * x_v``
    over its out-edges ``u -> v``), or A^T·X (``"out"``); targets that receive nothing get 0.
    Width = the number of feature columns."""

    name = "propagate"
    message = "mul_weight"
    uses_weights = True

    def __init__(self, x: np.ndarray, hops: int = 2, combiner: str = "sum",
                 direction: str = "in"):
        self.x, self.hops = x, hops
        self.combiner, self.direction, self.width = combiner, direction, x.shape[1]

    def init(self, ctx):
        x = torch.as_tensor(self.x[ctx.lo:ctx.hi]).to(ctx.device)
        return {"x": x}, torch.ones(ctx.num_local, dtype=torch.bool, device=ctx.device)

    def send(self, ctx, state):
        return state["x"]

    def update(self, ctx, state, combined, received):
        state["x"] = torch.where(received.unsqueeze(1), combined, 0.0)
        return torch.ones_like(received), {"hop": (ctx.superstep + 1, "max")}

    def halt(self, ctx, votes):
        return votes["hop"] >= self.hops

    def result(self, ctx, state):
        return state["x"]


def reference(adj: sp.csr_matrix, x: np.ndarray, hops: int, combiner: str,
              direction: str) -> np.ndarray:
    """The same rounds with scipy (sum) or numpy ufunc.at (min/max) over ``adj`` (N, N)."""
    a = (adj if direction == "in" else adj.T).tocoo()
    for _ in range(hops):
        if combiner == "sum":
            x = a.tocsr() @ x
            continue
        ufunc, identity = (np.minimum, np.inf) if combiner == "min" else (np.maximum, -np.inf)
        out = np.full_like(x, identity)
        ufunc.at(out, a.row, a.data[:, None] * x[a.col])
        got = np.zeros(len(x), bool)
        got[a.row] = True
        x = np.where(got[:, None], out, 0.0)
    return x


#: (name, program factory(num_nodes)) run on 2 ranks by the script
JOBS = [("sum", lambda n: Propagate(features(n, 3), 3, "sum", "in")),
        ("max", lambda n: Propagate(features(n, 4), 2, "max", "out")),
        ("pagerank1", lambda n: PageRankRows(tol=1e-12))]


if __name__ == "__main__":
    import torch.distributed as dist

    from graphsys import open_graph
    from graphsys.distributed import init_from_env

    init_from_env(torch.device("cpu"))
    graph = open_graph(sys.argv[1])
    for name, make in JOBS:
        res = bsp.run(graph, make(graph.num_nodes()), distributed=True)
        if dist.get_rank() == 0:
            np.save(f"{sys.argv[2]}.{name}.npy", res.values)
    dist.destroy_process_group()
