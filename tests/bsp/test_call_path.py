"""A built-in's in-memory CPU call reaches its own algorithm in three calls: the front-end,
``AlgorithmSpec.run`` (the run's options and threads), ``engine.run`` (the run's set-up),
which calls the program's declared ``solve_in_memory`` directly (no superstep loop)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import graphsys
from graphsys import bsp


@pytest.fixture(scope="module")
def g(tmp_path_factory):
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 200, 800), rng.integers(0, 200, 800)
    return graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("g") / "g")


def _depth_to_solve(call):
    """The graphsys calls from the public function to the first ``solve_in_memory``."""
    chain: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and not chain and frame.f_code.co_name == "solve_in_memory":
            f = frame
            while f is not None:
                if "/graphsys/" in f.f_code.co_filename.replace("\\", "/"):
                    chain.append(f.f_code.co_name)
                f = f.f_back

    call()                          # compiled and cached first: the second call is traced
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return chain[::-1]


@pytest.mark.parametrize("name", ["pagerank", "bfs", "wcc"])
def test_builtin_reaches_its_solver_in_three_calls(g, name):
    source = int(g.node_ids()[0])
    call = {"pagerank": lambda: bsp.pagerank(g), "bfs": lambda: bsp.bfs(g, source),
            "wcc": lambda: bsp.wcc(g)}[name]
    assert _depth_to_solve(call) == [name, "run", "run", "solve_in_memory"]
