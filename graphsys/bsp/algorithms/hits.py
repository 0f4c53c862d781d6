r"""HITS hubs and authorities (Kleinberg 1999) by power iteration, as networkx defines them.

.. math::
    a^{(k)} = A^\top h^{(k)}, \qquad
    h^{(k+1)} = \frac{A\, a^{(k)}}{\max_u (A\, a^{(k)})_u}, \qquad h^{(0)} = \mathbf{1}

with :math:`A_{uv}` the weight of edge ``u -> v`` (1 unweighted; multi-edges add). The
vertex program switches direction every superstep: even ones send hub scores along edges
(authorities), odd ones authority scores against them (hubs). Stops after the authorities
of a hub vector whose L1 change is below ``tol``; both columns are then scaled to sum 1
(networkx's ``normalized=True``; networkx computes the same singular vectors with ARPACK).
"""

from __future__ import annotations

import numpy as np
import torch

from graphsys.bsp.algorithms.common import execute, open_if_path
from graphsys.bsp.program import VertexProgram
from graphsys.errors import GraphsysError


class HITS(VertexProgram):
    """Hubs and authorities; :meth:`result` is float64 (N_local, 2): hub, authority
    (unnormalised: :func:`hits` scales the columns)."""

    name = "hits"
    message, combiner = "mul_weight", "sum"
    uses_weights = True

    def __init__(self, tol: float = 1e-8):
        if not tol > 0:
            raise GraphsysError(f"tol must be positive, got {tol!r}")
        self.tol, self.step, self.hub_max = tol, 0, 1.0

    @property
    def direction(self) -> str:
        return "out" if self.step % 2 == 0 else "in"

    def init(self, ctx):
        self.step, self.hub_max = 0, 1.0
        hub = ctx.full(1.0)
        state = {"hub": hub, "auth": torch.zeros_like(hub), "last": torch.zeros_like(hub)}
        return state, torch.ones(ctx.num_local, dtype=torch.bool, device=ctx.device)

    def send(self, ctx, state):
        return state["hub"] / self.hub_max if self.step % 2 == 0 else state["auth"]

    def update(self, ctx, state, combined, received):
        got = torch.where(received, combined, 0.0)
        if self.step % 2 == 0:  # authorities of the (scaled) hub vector just sent
            state["hub"] = state["hub"] / self.hub_max
            state["auth"] = got
            votes = {"change": ((state["hub"] - state["last"]).abs().sum(), "sum")}
        else:  # new hubs; scaled by their global max before they are sent
            state["last"] = state["hub"]
            state["hub"] = got
            votes = {"max": (got.max() if got.numel() else 0.0, "max")}
        self.step += 1
        return torch.ones_like(received), votes

    def halt(self, ctx, votes):
        if "max" in votes:
            self.hub_max = votes["max"] or 1.0
            return False
        return votes["change"] < self.tol

    def result(self, ctx, state):
        return torch.stack([state["hub"], state["auth"]], 1)


def hits(graph, *, tol: float = 1e-8, max_iters: int = 200, **run_kwargs):
    """Hub and authority scores: :class:`~graphsys.bsp.engine.Result` with float64 (N, 2)
    values (column 0 hubs, column 1 authorities, each summing to 1); ``max_iters``
    supersteps = ``max_iters / 2`` power iterations."""
    graph = open_if_path(graph)
    res = execute(graph, HITS(tol), max_iters, **run_kwargs)
    total = res.values.sum(axis=0)
    res.values = res.values / np.where(total > 0, total, 1.0)
    return res
