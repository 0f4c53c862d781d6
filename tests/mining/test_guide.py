"""docs/mining.md runs as written: its ``python`` blocks are executed in order in one
namespace (they assert against networkx themselves), and the answers they leave behind are
checked once more here."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "mining.md"


@pytest.fixture(scope="module")
def guide(run_guide):
    """The namespace the guide's blocks leave behind (``run_guide``: tests/conftest.py)."""
    blocks = []
    ns = run_guide(GUIDE.name, lambda i, block, ns: blocks.append(block))
    assert len(blocks) >= 6
    return ns


def test_guide_counts(guide):
    G = guide["G"]
    assert guide["stats"].count == sum(nx.triangles(G).values()) // 3
    assert guide["stats"].transitivity == pytest.approx(nx.transitivity(G))
    four = [c for c in nx.enumerate_all_cliques(G) if len(c) == 4]
    assert guide["k4"] == guide["census"]["4-clique"] == len(four)
    assert guide["through"].values.sum() == 4 * len(four)
    assert guide["n_house"] > 0 and guide["house"].automorphisms() == 2


def test_guide_names_every_cli_subcommand():
    from graphsys.cli import build_parser

    text = GUIDE.read_text()
    parser = build_parser(["mine"])
    sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    mine = sub.choices["mine"]
    names = next(a for a in mine._actions if hasattr(a, "choices") and a.choices).choices
    for name in names:
        assert f"graphsys mine {name}" in text, name


def test_guide_streaming_explain_and_five_nodes(guide):
    G, house = guide["G"], guide["house"]
    text = GUIDE.read_text()
    printed = text.split("```text\n", 1)[1].split("```", 1)[0]
    assert printed.strip() == house.explain(induced=True)   # the page shows the real output
    hub = guide["hub"]
    assert 0 < len(guide["near"]) <= 10 and all(hub in row for row in guide["near"])
    for row in guide["near"]:
        assert all(G.has_edge(row[a], row[b]) for a, b in house.edges)
    five = [c for c in nx.enumerate_all_cliques(G) if len(c) == 5]
    assert guide["five"]["5-clique"] == len(five)


def test_guide_frequent_subgraphs(guide):
    """The page's FSM call found patterns of each size up to 3 edges, each once, all at or
    above the threshold, sorted by size."""
    found = guide["found"]
    sizes = [f.num_edges for f in found]
    assert sizes == sorted(sizes) and set(sizes) == {1, 2, 3}
    assert all(f.support >= 40 for f in found)
    assert len({f.pattern for f in found}) == len(found)


def test_guide_edge_labels(guide):
    """The page's edge-labelled counts: the triangle against VF2 in the page itself; the
    directed chain against the stored arcs, each a -> b of kind 2 then b -> c, c not a."""
    assert guide["n_mixed"] > 0
    src, dst = guide["src"].tolist(), guide["dst"].tolist()
    kind = {(a, b): (a + b) % 3 for a, b in zip(src, dst)}
    out = {}
    for a, b in zip(src, dst):
        out.setdefault(a, []).append(b)
    want = sum(1 for (a, b), k in kind.items() if k == 2 for c in out.get(b, []) if c != a)
    assert want > 0
    assert guide["mining"].count(guide["typed"], guide["chain"], edge_labels="kind") == want


def test_guide_frequent_subgraphs_with_edge_labels(guide):
    """The page's edge-labelled FSM: every pattern edge labelled, each pattern once, at or
    above the threshold, and every one-edge pattern's support its own count of images."""
    found = guide["typed_found"]
    assert found and all(f.support >= 40 and min(f.pattern.edge_labels) >= 0 for f in found)
    assert len({f.pattern for f in found}) == len(found)
    mining, typed, kinds = guide["mining"], guide["typed"], guide["typed_kinds"]
    for f in (f for f in found if f.num_edges == 1):
        images = [set(), set()]
        for row in mining.iter_matches(typed, f.pattern, labels=kinds, edge_labels="kind"):
            for auto in f.pattern.automorphism_group():
                images[0].add(row[auto[0]])
                images[1].add(row[auto[1]])
        assert f.support == min(len(s) for s in images)
