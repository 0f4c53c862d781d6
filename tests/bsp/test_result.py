"""``Result`` speaks original ids (``top``, ``value``, ``to_dict``, ``to_table``) and
``RunStats`` prints one screen whatever the number of supersteps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from graphsys import bsp, from_arrow, from_numpy
from graphsys.errors import ConvergenceWarning, GraphsysError, ParameterError


@pytest.fixture(scope="module")
def path_graph(tmp_path_factory):
    """A directed path 100 -> 101 -> ... -> 139 (ids offset so that original != internal)
    plus an isolated-from-100 pair 200 -> 201."""
    src = np.r_[np.arange(100, 139), 200]
    dst = np.r_[np.arange(101, 140), 201]
    return from_numpy(src, dst, tmp_path_factory.mktemp("result") / "g")


def test_top_value_to_dict_use_original_ids(path_graph):
    res = bsp.bfs(path_graph, 100)
    d = res.to_dict()
    assert d == {**{100 + i: float(i) for i in range(40)}, 200: np.inf, 201: np.inf}
    assert all(type(k) is int and type(v) is float for k, v in d.items())
    assert res.top(3, largest=False) == [(100, 0.0), (101, 1.0), (102, 2.0)]
    # inf is large; ties (200, 201) come in internal id order
    top = res.top(3)
    assert top[2] == (139, 39.0) and {n for n, _ in top[:2]} == {200, 201}
    assert res.top(0) == [] and len(res.top(1000)) == 42
    assert res.value(137) == 37.0 and res.value(201) == np.inf
    table = res.to_table()
    assert dict(zip(table.column("node").to_pylist(), table.column("value").to_pylist())) == d


def test_top_matches_a_full_sort_with_ties(path_graph):
    res = bsp.bfs(path_graph, 100)
    res.values = np.round(np.random.default_rng(0).uniform(0, 5, len(res.values)))  # ties
    ids = path_graph.node_ids()
    for largest in (True, False):
        key = -res.values if largest else res.values
        order = np.lexsort((np.arange(len(key)), key))
        want = [(int(ids[i]), float(res.values[i])) for i in order[:7]]
        assert res.top(7, largest=largest) == want


def test_value_and_top_refuse_bad_input_in_one_line(path_graph):
    res = bsp.bfs(path_graph, 100)
    for call, exc in [(lambda: res.value(999), GraphsysError),
                      (lambda: res.value("x"), GraphsysError),
                      (lambda: res.value([100, 101]), ParameterError),
                      (lambda: res.top(-1), ParameterError),
                      (lambda: res.top(2.5), ParameterError)]:
        with pytest.raises(exc) as info:
            call()
        assert "\n" not in str(info.value)
    with pytest.raises(GraphsysError, match="not in the graph"):
        res.value(999)


def test_string_ids_and_vector_values(tmp_path):
    edges = pa.table({"src": ["a", "b", "c"], "dst": ["b", "c", "a"]})
    g = from_arrow(edges, tmp_path / "g")
    pr = bsp.pagerank(g, tol=1e-12)
    assert sorted(pr.to_dict()) == ["a", "b", "c"]
    assert pr.top(1)[0][0] in {"a", "b", "c"}
    assert pr.value("b") == pytest.approx(1 / 3)
    hits = bsp.hits(g)
    assert len(hits.value("a")) == 2 and len(hits.to_dict()["c"]) == 2
    assert hits.columns == ("hub", "authority")
    assert hits.top(3) == hits.top(3, column="authority") == hits.top(3, column=1)
    with pytest.raises(ParameterError, match=r"column must be one of the result's columns "
                                             r"\(hub, authority\), got 'x'"):
        hits.top(1, column="x")
    with pytest.raises(ParameterError, match="one value per node"):
        pr.top(1, column=0)


def _reference_top(values, ids, k, largest=True):
    """The k best (value, then original id order of internal ids) by a full sort."""
    key = [(-v if largest else v, i) for i, v in enumerate(values)]
    return [(ids[i], values[i]) for _, i in sorted(key)[:k]]


@pytest.mark.parametrize("name", sorted(__import__("graphsys.plugins").plugins.ALGORITHMS
                                        .names()))
def test_top_works_for_every_builtin_algorithm(tmp_path, name):
    """Every built-in algorithm's result ranks with ``top`` (HITS's raised: two values per
    node); a result of rows ranks each of its columns, the default being the last."""
    from graphsys.plugins import ALGORITHMS

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 30, 120) + 10, rng.integers(0, 30, 120) + 10
    g = from_numpy(src, dst, tmp_path / "g", partitions=2)
    run = getattr(bsp, {"lpa": "label_propagation", "ppr": "personalized_pagerank"}.get(
        name, name))                                    # the front-end of each built-in
    res = run(g, int(src[0])) if ALGORITHMS.get(name).needs_source else run(g)
    ids = g.node_ids().tolist()
    cols = [res.values] if res.values.ndim == 1 else list(res.values.T)
    for c, values in enumerate(cols):
        want = _reference_top(values.tolist(), ids, 3)
        got = res.top(3) if res.values.ndim == 1 else res.top(3, column=c)
        assert [n for n, _ in got] == [n for n, _ in want] and got == want
    if res.values.ndim == 2:
        assert res.top(3) == res.top(3, column=res.values.shape[1] - 1)


def test_run_stats_print_one_screen(path_graph):
    res = bsp.bfs(path_graph, 100, schedule="sync")
    stats = res.stats
    assert stats.num_supersteps >= 40 and len(stats.supersteps) == stats.num_supersteps
    text = str(stats)
    assert text == repr(stats) and len(text.splitlines()) <= 8
    assert all(len(line) <= 100 for line in text.splitlines())
    assert f"{stats.num_supersteps} supersteps" in text and "converged" in text
    assert f"edges scanned {stats.totals()['edges_scanned']:,}" in text
    assert "bfs: supersteps" in text and "SuperstepStats(" not in text
    with pytest.warns(ConvergenceWarning, match="within 3 supersteps"):
        short = bsp.bfs(path_graph, 100, schedule="sync", max_iters=3)
    assert "NOT converged" in str(short.stats)
    assert repr(res).startswith("Result(bfs: values float64 (42,)")
