"""The oriented graph a triangle count keeps on an opened graph: reused by the next count,
built again when the graph maps other data or the budget no longer holds it."""

from __future__ import annotations

import networkx as nx
import pytest

from graphsys import mining, open_graph, views
from graphsys.errors import GraphsysError
from graphsys.mining import outofcore
from graphsys.storage.adjacency_index import build_index
from graphsys.views import cache as view_cache
from tests.mining.conftest import random_edges, simple_graph


@pytest.fixture
def builds(monkeypatch):
    """Calls of both builders (from the ``sym`` index, from the buckets)."""
    calls = {"index": 0, "buckets": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(outofcore, "orient_whole", counted("index", outofcore.orient_whole))
    monkeypatch.setattr(views, "oriented", counted("buckets", views.oriented))
    return calls


@pytest.mark.parametrize("indexed", [False, True])
def test_a_second_count_reuses_the_oriented_graph(graph_of, builds, indexed):
    src, dst = random_edges(30, 120, 4)
    g = graph_of(src, dst, 30)
    if indexed:
        build_index(g, ("sym",))
        g = open_graph(g.path)
    want = nx.triangles(simple_graph(src, dst, 30))
    source = "index" if indexed else "buckets"
    assert mining.triangle_count(g, threads=2) == sum(want.values()) // 3
    assert builds[source] == 1 and view_cache.held_bytes(g) > 0
    assert mining.triangle_count(g, threads=1) == sum(want.values()) // 3
    assert mining.triangles(g).to_dict() == want
    assert builds == {"index": int(indexed), "buckets": int(not indexed)}
    # one cache per opened graph: the same graph opened again builds its own
    assert mining.triangle_count(open_graph(g.path)) == sum(want.values()) // 3
    assert builds[source] == 2


def test_an_index_built_since_is_read(graph_of, builds):
    """The graph maps a ``sym`` index built after the first count: the next count orients
    the index (what the graph now reads), not the structure built from the buckets."""
    src, dst = random_edges(20, 80, 9)
    g = graph_of(src, dst, 20)
    first = mining.triangle_count(g)
    build_index(g, ("sym",))
    assert mining.triangle_count(g) == first
    assert builds == {"index": 1, "buckets": 1}


def test_the_kept_graph_counts_against_the_budget(graph_of, builds):
    src, dst = random_edges(30, 120, 4)
    g = graph_of(src, dst, 30)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    count = mining.triangle_count(g)
    held = view_cache.held_bytes(g)
    beside = 16 * g.num_nodes()
    # a budget that holds it and the count's scratch: reused
    assert mining.triangle_count(g, mode="memory", memory_limit=held + beside) == count
    assert builds["index"] == 1
    # one byte short: dropped, and the build it would take is refused
    with pytest.raises(GraphsysError, match="needs about"):
        mining.triangle_count(g, mode="memory", memory_limit=held + beside - 1)
    assert view_cache.held_bytes(g) == 0
    # out of core within that budget, nothing kept
    assert mining.triangle_count(g, mode="out-of-core", memory_limit=1 << 30) == count
    assert view_cache.held_bytes(g) == 0 and builds["index"] == 1


def test_a_structure_over_the_budget_is_not_kept(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    built = []

    def build():
        built.append(1)
        return bytearray(100)

    for _ in range(2):
        view_cache.cached(g, ("default", "demo"), build, nbytes=len, budget=99)
    assert len(built) == 2 and view_cache.held_bytes(g) == 0
    view_cache.cached(g, ("default", "demo"), build, nbytes=len, budget=200)
    view_cache.cached(g, ("default", "other"), build, nbytes=len, budget=150)
    # the first entry would not fit beside the second: dropped before the build
    assert view_cache.held_bytes(g) == 100 and len(built) == 4
    view_cache.forget(g)
    assert view_cache.held_bytes(g) == 0


def test_a_cache_check_reuses_a_recent_ram_reading_and_a_build_check_does_not(monkeypatch):
    """The available RAM is read at most once a second for the cache's checks (a structure
    already built allocates nothing) and afresh for every build's check."""
    from graphsys import memory
    from graphsys.views import limits

    reads = []
    for module in (limits, memory):
        monkeypatch.setattr(module, "available_memory", lambda: reads.append(1) or 1 << 40)
    monkeypatch.setattr(limits, "_AVAILABLE", [-limits.AVAILABLE_SECONDS - 1.0, 0])
    assert limits.cache_budget(None) == limits.cache_budget(None) == 1 << 40
    assert len(reads) == 1
    assert limits.cache_budget(1 << 20) == 1 << 20 and len(reads) == 1
    limits.check(None, None, "x", 1, None)
    limits.check(None, None, "x", 1, None)
    assert len(reads) == 3
