"""Streaming enumeration and the printed plan: ``iter_matches`` and ``matches(callback=)``
against brute force and against the listing, early exit, bounded chunks, and
``Pattern.explain``."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from graphsys import mining
from graphsys.errors import GraphsysError, ParameterError
from graphsys.mining import stream
from graphsys.mining.pattern import Pattern, _prepare
from tests.mining.conftest import brute_matches, labelled_graph, random_edges, simple_graph

PATTERNS = ["edge", "wedge", "triangle", "4-path", "3-star", "4-cycle", "tailed-triangle",
            "diamond", "4-clique", "house", "5-cycle"]


def _is_match(G, p: Pattern, row, induced: bool) -> bool:
    if len(set(row)) != p.num_nodes:
        return False
    for a, b in itertools.combinations(range(p.num_nodes), 2):
        has, want = G.has_edge(row[a], row[b]), (a, b) in p.edges
        if (want and not has) or (induced and has and not want):
            return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_stream_equals_brute_force_and_listing(graph_of, seed):
    n = 9 + seed
    src, dst = random_edges(n, 3 * n, 100 + seed)
    g, G = graph_of(src, dst, n), simple_graph(src, dst, n)
    for name in PATTERNS:
        p = Pattern.named(name)
        for induced in (False, True):
            want = brute_matches(G, p.edges, p.num_nodes, induced)
            got = list(mining.iter_matches(g, p, induced=induced, chunk=1 + seed))
            assert len(got) == want, (name, induced)
            assert all(_is_match(G, p, r, induced) for r in got)
            listed = mining.matches(g, p, induced=induced, limit=None)
            assert got == [tuple(r) for r in listed.tolist()]   # the same order
            seen = []
            assert mining.matches(g, p, induced=induced, limit=None,
                                  callback=seen.append) == want
            assert seen == got


def test_labelled_stream(graph_of):
    g, G, labels, node_label = labelled_graph(graph_of, 12, 36, 5, 3)
    p = Pattern([(0, 1), (1, 2), (2, 0)], labels=[0, 1, None])
    want = brute_matches(G, p.edges, 3, False, list(p.labels), node_label)
    rows = list(mining.iter_matches(g, p, labels=labels))
    assert len(rows) == want
    assert all(node_label[r[0]] == 0 and node_label[r[1]] == 1 for r in rows)


def test_early_exit_stops_the_search(graph_of):
    n = 40
    src, dst = random_edges(n, 400, 3)
    g = graph_of(src, dst, n)
    total = mining.count(g, "wedge")
    calls = []

    def first_three(row):
        calls.append(row)
        return len(calls) < 3

    assert mining.matches(g, "wedge", callback=first_three, limit=None) == 3
    assert len(calls) == 3 and total > 3
    assert mining.matches(g, "wedge", callback=calls.append, limit=5) == 5
    # a closed iterator searches no further: a chunk of one row is written per next()
    g_, p_, view, lab = _prepare(g, "wedge", None, None, None)
    it = stream.chunks(g_, view, lab, p_.plan(False), chunk=1)
    first = next(it)
    it.close()
    assert first.shape == (1, 3)
    with pytest.raises(StopIteration):
        next(it)


def test_memory_is_bounded_by_the_chunk(graph_of):
    """Taking every match of a pattern with many matches keeps no more than a chunk."""
    n = 60
    src, dst = random_edges(n, 900, 8)
    g = graph_of(src, dst, n)
    total = mining.count(g, "4-path")
    assert total > 50_000
    # traced in a fresh process: tracemalloc counts every thread's allocations, and a thread
    # an earlier test in this worker left running was traced here (7.8 and 15.4 MB peaks)
    code = f"""if True:
        import tracemalloc
        from graphsys import mining
        # a whole warm-up pass: every kernel of the stream compiled or loaded, views built
        sum(1 for _ in mining.iter_matches({str(g.path)!r}, "4-path", chunk=256))
        tracemalloc.start()
        seen = sum(1 for _ in mining.iter_matches({str(g.path)!r}, "4-path", chunk=256))
        print(seen, tracemalloc.get_traced_memory()[1])
    """
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    seen, peak = map(int, run.stdout.split()[-2:])
    assert seen == total
    assert peak < total * 4 * 8 / 4   # well under the (C, 4) int64 rows


def test_bad_input(graph_of):
    g = graph_of([0, 1], [1, 2], 3)
    with pytest.raises(ParameterError, match="chunk"):
        mining.iter_matches(g, "edge", chunk=0)
    with pytest.raises(ParameterError, match="callback"):
        mining.matches(g, "edge", callback=3)
    with pytest.raises(ParameterError, match="limit"):
        mining.matches(g, "edge", callback=print, limit=-1)
    # a chunk over the budget: refused in one line (numpy's MemoryError before)
    with pytest.raises(GraphsysError, match="a chunk of 1,000,000 matches"):
        mining.iter_matches(g, "wedge", chunk=10**6, memory_limit=10 << 20)
    assert len(list(mining.iter_matches(g, "wedge", chunk=1000, memory_limit=10 << 20))) == 1


def test_explain_lists_order_conditions_and_checks():
    p = Pattern.named("house")
    text = p.explain(induced=True)
    order = p.matching_order()
    assert f"matching order: {', '.join(map(str, order))}" in text
    for a, b in p.conditions():
        assert f"id({a}) < id({b})" in text
    levels = [line for line in text.splitlines() if line.startswith("level ")]
    assert [int(line.split()[3].rstrip(":")) for line in levels] == order
    assert "not adjacent to" in text and "not adjacent" not in p.explain()
    lab = Pattern([(0, 1), (1, 2)], labels=[4, None, 4]).explain()
    assert "label 4" in lab and "id(" in lab
    assert "none (no automorphism" in Pattern([(0, 1), (1, 2)], labels=[1, 2, 3]).explain()
