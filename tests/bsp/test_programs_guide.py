"""docs/programs.md runs as written: its ``python`` blocks are executed in order in one
namespace and their answers checked against networkx; the guide's programs are then run on
generated graphs (directed and undirected, in memory and out of core)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import graphsys
from graphsys import bsp


@pytest.fixture(scope="module")
def guide(run_guide):
    """The namespace the guide's blocks leave behind (``run_guide``: tests/conftest.py)."""
    ns = run_guide("programs.md")
    assert "PersonalizedPageRank" in ns and "MinLabel" in ns
    return ns


def groups(labels: dict) -> list[list]:
    """Nodes grouped by equal label, sorted."""
    out: dict = {}
    for node, label in labels.items():
        out.setdefault(label, []).append(node)
    return sorted(sorted(v) for v in out.values())


def test_guide_components_match_networkx(guide):
    want = sorted(sorted(c) for c in nx.weakly_connected_components(guide["G"]))
    assert len(want) > 1  # the guide's graph has several components
    assert sorted(sorted(c) for c in guide["components"].values()) == want


def test_guide_personalized_pagerank_matches_networkx(guide):
    want = nx.pagerank(guide["G"], personalization={0: 1, 5: 1}, tol=1e-13, max_iter=1000)
    got = guide["ppr"].to_dict()
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), atol=1e-9)
    assert guide["ppr"].stats.converged
    builtin = bsp.personalized_pagerank(guide["g"], [0, 5], tol=1e-12).to_dict()
    np.testing.assert_allclose([got[k] for k in want], [builtin[k] for k in want], atol=1e-9)


def test_guide_vector_program_counts_in_degrees(guide):
    G = guide["G"]
    for node, (in_degree, out_degree_sum) in guide["sums"].items():
        assert in_degree == G.in_degree(node)
        assert out_degree_sum == sum(G.out_degree(u) for u in G.predecessors(node))


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_guide_programs_on_generated_graphs(guide, tmp_path, directed, mode):
    """The guide's classes, unchanged, on other graphs: components against networkx's
    (weakly) connected components, personalized PageRank against networkx's."""
    G = nx.gnm_random_graph(60, 45, seed=11, directed=directed)
    g = graphsys.from_networkx(G, tmp_path / "g", partitions=3)
    components = (nx.weakly_connected_components if directed else nx.connected_components)(G)
    want = sorted(sorted(c) for c in components)
    for program in (guide["MaxLabel"](), guide["MinLabel"]()):
        assert groups(bsp.run(g, program, mode=mode).to_dict()) == want
    sources = [3, 17, 42]
    ppr = bsp.run(g, guide["PersonalizedPageRank"](g.to_internal(sources)), mode=mode,
                  max_iters=1000).to_dict()
    ref = nx.pagerank(G, personalization=dict.fromkeys(sources, 1), tol=1e-13, max_iter=1000)
    np.testing.assert_allclose([ppr[k] for k in ref], list(ref.values()), atol=1e-9)


def test_guide_short_frontier_is_refused(guide):
    n = guide["g"].num_nodes()
    assert guide["refusal"] == (f"program: init() returned the frontier as a bool tensor of "
                                f"shape ({n - 1},), expected bool ({n},): one flag per owned "
                                f"vertex")
