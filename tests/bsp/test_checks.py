"""What a user's vertex program returns is checked before the engine or a numba kernel
reads it: every wrong length, dtype, type or device is one line naming the method, in every
mode and backend; programs that return what they should still match their reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys import bsp
from graphsys.errors import GraphsysError

from .conftest import MODES


class Reach(bsp.VertexProgram):
    """Vertices reachable from vertex 0 by a max-propagation (a scalar builtin program);
    ``bad`` names the return value to corrupt and ``how`` how."""

    name = "reach"
    message, combiner, direction = "copy", "max", "out"

    def __init__(self, bad: str = "", how=None, width=None):
        self.bad, self.how, self.width = bad, how, width

    def _maybe(self, what, value):
        return self.how(value) if self.bad == what else value

    def init(self, ctx):
        x = torch.zeros(ctx.num_local, dtype=torch.float64)
        x[0] = 1.0
        state = self._maybe("state", {"x": x})
        return self._maybe("init", (state, self._maybe("init-frontier", x > 0)))

    def aggregate(self, ctx, state):
        return self._maybe("aggregate", {"reached": (state["x"].sum(), "sum")})

    def send(self, ctx, state):
        x = state["x"] if self.width is None else state["x"].unsqueeze(1).repeat(1, self.width)
        return self._maybe("send", x)

    def accepts(self, ctx, state):
        return self._maybe("accepts", None)

    def update(self, ctx, state, combined, received):
        c = combined if combined.dim() == 1 else combined[:, 0]
        new = received & (c > state["x"])
        state["x"] = torch.where(new, c, state["x"])
        return self._maybe("update", (self._maybe("update-frontier", new), {}))

    def result(self, ctx, state):
        return self._maybe("result", state["x"])


def _short(t):
    return t[:-1]


def _long(t):
    return torch.cat([t, t[:1]])


def _meta(t):
    return torch.empty(t.shape, dtype=t.dtype, device="meta")


#: (what to corrupt, how, the error's start)
BAD = [
    ("send", _short, r"reach: send\(\) returned the values as a float64 tensor of shape "
                     r"\(63,\), expected float64 \(64,\)"),
    ("send", _long, r"reach: send\(\) returned the values .* shape \(65,\)"),
    ("send", lambda t: t.numpy(), r"reach: send\(\) returned the values as a numpy.ndarray"),
    ("send", lambda t: t.to(torch.complex128), r"reach: send\(\) .* complex128"),
    ("send", _meta, r"reach: send\(\) returned the values on meta, expected it on the run's "
                    r"device cpu"),
    ("init-frontier", _short, r"reach: init\(\) returned the frontier as a bool tensor of "
                              r"shape \(63,\), expected bool \(64,\)"),
    ("init-frontier", lambda t: t.to(torch.int64), r"reach: init\(\) returned the frontier "
                                                   r"as a int64 tensor"),
    ("init", lambda p: p[0], r"reach: init\(\) must return \(state, frontier\)"),
    ("state", lambda s: {"x": _short(s["x"])}, r"reach: init\(\) returned state\['x'\] as "
                                               r"a float64 tensor of shape \(63,\)"),
    ("state", lambda s: [s], r"reach: init\(\) returned the state as a list"),
    ("update-frontier", _long, r"reach: update\(\) returned the frontier .* shape \(65,\)"),
    ("update", lambda p: p[0], r"reach: update\(\) must return \(frontier, votes\)"),
    ("accepts", lambda _: torch.ones(3, dtype=torch.bool),
     r"reach: accepts\(\) returned the accepted targets .* shape \(3,\)"),
    ("aggregate", lambda d: {"reached": (torch.zeros(2), "sum")},
     r"reach: aggregate\(\) returned 'reached' as a tuple, expected \(value, reduction\)"),
    ("result", _short, r"reach: result\(\) returned the result as a float64 tensor of shape "
                       r"\(63,\), expected float64 \(64,\) or \(64, d\)"),
    ("result", lambda t: t.reshape(2, 32), r"reach: result\(\) .* shape \(2, 32\)"),
]


@pytest.mark.parametrize("mode,backend", MODES)
@pytest.mark.parametrize("bad,how,match", BAD, ids=[f"{b}-{i}" for i, (b, _, _) in
                                                       enumerate(BAD)])
def test_bad_returns_are_one_line(graphs, mode, backend, bad, how, match):
    with pytest.raises(GraphsysError, match=f"^{match}") as err:
        bsp.run(graphs["chain"].graph, Reach(bad, how), mode=mode, backend=backend)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("mode,backend", MODES)
def test_vector_send_of_another_width(graphs, mode, backend):
    with pytest.raises(GraphsysError, match=r"^reach: send\(\) returned the values as a "
                                            r"float64 tensor of shape \(64, 3\), expected "
                                            r"float64 \(64, 2\): one row of width 2"):
        bsp.run(graphs["chain"].graph, Reach("send", lambda t: t.repeat(1, 2)[:, :3], width=2),
                mode=mode, backend=backend)


@pytest.mark.parametrize("mode,backend", MODES)
def test_good_program_still_runs(graphs, mode, backend):
    """The checked program reaches the chain's 60 linked vertices (of 64), as BFS does;
    a float32 or integer send is converted as before."""
    tg = graphs["chain"]
    first = int(tg.graph.to_original(np.array([0]))[0])  # Reach starts at internal id 0
    want = np.isfinite(bsp.bfs(tg.graph, first).values).astype(float)
    assert 1 < want.sum() < len(want)
    for prog in (Reach(), Reach(width=2), Reach("send", lambda t: t.to(torch.float32)),
                 Reach("result", lambda t: t.to(torch.int32))):
        got = bsp.run(tg.graph, prog, mode=mode, backend=backend, max_iters=100).values
        np.testing.assert_array_equal(got.reshape(len(want), -1)[:, 0], want)


class _BadMessage(Reach):
    message = staticmethod(lambda xs, w: xs[:-1] if len(xs) else xs)


class _BadCombiner(Reach):
    class _Max(bsp.Combiner):
        identity = 0.0

        def combine(self, index, values, num_targets):
            return torch.zeros(num_targets + 1, dtype=torch.float64)

    combiner = _Max()


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_custom_message_and_combiner_are_checked(graphs, mode):
    g = graphs["chain"].graph
    with pytest.raises(GraphsysError, match=r"^reach: message\(\) returned the messages as "
                                            r"a float64 tensor of shape \(\d+,\), expected "
                                            r"float64 \(\d+,\): one message per edge"):
        bsp.run(g, _BadMessage(), mode=mode)
    with pytest.raises(GraphsysError, match=r"^reach: combiner.combine\(\) returned the "
                                            r"combined messages .* shape \(65,\)"):
        bsp.run(g, _BadCombiner(), mode=mode)


class _Relax(bsp.SSSP):
    """SSSP (a declared min-relaxation) whose distances are float32."""

    name = "relax"

    def init(self, ctx):
        state, active = super().init(ctx)
        return {"dist": state["dist"].to(torch.float32)}, active


def test_relax_state_is_checked(graphs):
    with pytest.raises(GraphsysError, match=r"^relax: init\(\) returned state\['dist'\] as "
                                            r"a float32 tensor of shape \(64,\), expected "
                                            r"float64 \(64,\)"):
        bsp.run(graphs["chain"].graph, _Relax(0))
