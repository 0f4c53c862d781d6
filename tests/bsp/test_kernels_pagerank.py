"""PageRank's fused in-memory loop against the engine's superstep loop."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys import bsp
from graphsys.bsp.algorithms.pagerank import PageRankRows

from .conftest import GRAPH_KEYS


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_fused_loop_matches_supersteps(graphs, key):
    g = graphs[key].graph
    for kwargs in ({"tol": 1e-10}, {"tol": 1e-30, "max_iters": 4}):
        fused = bsp.pagerank(g, **kwargs)
        loop = bsp.pagerank(g, fuse=False, **kwargs)
        np.testing.assert_allclose(fused.values, loop.values, rtol=1e-12, atol=1e-15)
        assert fused.stats.method == "fused-pagerank" and loop.stats.method == "supersteps"
        assert fused.stats.num_supersteps == loop.stats.num_supersteps
        assert fused.stats.converged == loop.stats.converged
        assert all(s.fused and s.direction == "pull" for s in fused.stats.supersteps)


def test_personalized_and_vector_programs(graphs):
    g = graphs["directed-p3"].graph
    ppr = bsp.personalized_pagerank(g, [0, 5], tol=1e-10)
    loop = bsp.personalized_pagerank(g, [0, 5], tol=1e-10, fuse=False)
    np.testing.assert_allclose(ppr.values, loop.values, rtol=1e-12, atol=1e-15)
    assert ppr.stats.method == "fused-pagerank"
    rows = bsp.run(g, PageRankRows(tol=1e-10), max_iters=100)
    assert rows.stats.method == "supersteps"  # a vector program keeps the engine's loop
