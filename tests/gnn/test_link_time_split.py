"""The time split of the link task orders by the timestamps' own type (int64 nanoseconds
stay exact) and never splits equal stamps across a cut: ties go to the earlier side,
checked against a brute-force reference of the rule."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphsys
from graphsys.datasets.loaders import temporal_split
from graphsys.errors import InputError, ParameterError
from graphsys.gnn.link import edge_timestamps, link_data, split_edges

#: 2024-01-01T00:00:00 in nanoseconds since the epoch: float64 cannot tell 1 ns apart here
NS = 1_704_067_200_000_000_000


def reference(t: list, val_fraction: float, test_fraction: float):
    """The tie rule by brute force: with ``s_val``/``s_test`` the stamps of the last edge
    before each cut in sorted order, train is ``t <= s_val``, val ``s_val < t <= s_test``,
    test ``t > s_test`` (None where a held-out side that asks for edges is left empty)."""
    e = len(t)
    n_test, n_val = round(test_fraction * e), round(val_fraction * e)
    s = sorted(t)
    s_test = s[e - n_test - 1] if n_test else None
    s_val = s[e - n_test - n_val - 1]
    test = [n_test > 0 and x > s_test for x in t]
    val = [not te and x > s_val for x, te in zip(t, test)]
    if (n_test and not any(test)) or (n_val and not any(val)):
        return None
    return [not (a or b) for a, b in zip(val, test)], val, test


def test_nanosecond_stamps_are_ordered_exactly():
    rng = np.random.default_rng(0)
    t = NS + rng.permutation(2000).astype(np.int64)  # 2000 distinct stamps, 1 ns apart
    assert len(np.unique(t.astype(np.float64))) < 10  # what a float64 order would see
    train, val, test = split_edges(2000, 0.1, 0.1, seed=0, time=t)
    assert (train.sum(), val.sum(), test.sum()) == (1600, 200, 200)
    assert t[train].max() < t[val].min() and t[val].max() < t[test].min()
    assert set(t[test] - NS) == set(range(1800, 2000))


def test_nanosecond_stamps_from_a_graph(tmp_path):
    """edge_timestamps keeps the column's int64 (a pair's earliest stamp), and the split
    of a graph holds out exactly the latest pairs."""
    rng = np.random.default_rng(1)
    n = 300
    src, dst = np.arange(n), (np.arange(n) + 1) % n
    order = rng.permutation(n)
    stamps = NS + order.astype(np.int64)
    # each pair stored twice, the second time later: its earliest stamp counts
    table = pa.table({"src": np.r_[src, src], "dst": np.r_[dst, dst],
                      "timestamp": np.r_[stamps, stamps + 10**9]})
    g = graphsys.from_arrow(table, tmp_path / "g", edge_columns=["timestamp"])
    times = edge_timestamps(g)
    assert times.dtype == np.int64 and sorted((times - NS).tolist()) == list(range(n))
    data = link_data(g, None, 0.1, 0.1, seed=0, split="time")
    assert times[data.train].max() < times[data.val].min() < times[data.test].min()
    assert data.test.sum() == 30 and sorted((times[data.test] - NS).tolist()) == list(
        range(270, 300))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=3, max_size=40),
       st.sampled_from([0.0, 0.1, 0.25]), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["int64", "float64", "ns"]))
def test_tie_rule_matches_reference(stamps, val_fraction, test_fraction, kind):
    e = len(stamps)
    if round(val_fraction * e) + round(test_fraction * e) >= e:
        return
    t = np.asarray(stamps, np.int64)
    t = t.astype(np.float64) if kind == "float64" else NS + t if kind == "ns" else t
    want = reference(t.tolist(), val_fraction, test_fraction)
    if want is None:
        with pytest.raises(ParameterError, match="a cut never splits equal timestamps"):
            split_edges(e, val_fraction, test_fraction, seed=0, time=t)
        return
    got = split_edges(e, val_fraction, test_fraction, seed=0, time=t)
    for g_, w in zip(got, want):
        assert g_.tolist() == w
    train, val, test = got
    sides = [set(t[m].tolist()) for m in (train, val, test)]
    assert not (sides[0] & sides[1] or sides[0] & sides[2] or sides[1] & sides[2])
    assert test.sum() <= round(test_fraction * e) and val.sum() <= round(val_fraction * e) + (
        round(test_fraction * e) - test.sum())


def test_fractions_are_numbers():
    # "0.1" and None raised a raw TypeError
    from graphsys.errors import ParameterError
    for bad in ("0.1", None, True, float("nan")):
        with pytest.raises(ParameterError, match="^link_val_fraction must be a finite number in"):
            split_edges(10, bad, 0.2, seed=0)


def test_ties_at_the_cut_stay_together():
    # sorted: 1 2 3 3 4 5; validation's second edge ties with a training edge at 3
    train, val, test = split_edges(6, 0.34, 0.17, seed=0, time=[3, 5, 1, 4, 3, 2])
    assert np.flatnonzero(train).tolist() == [0, 2, 4, 5]
    assert np.flatnonzero(val).tolist() == [3] and np.flatnonzero(test).tolist() == [1]
    # the seed plays no part in a time split
    again = split_edges(6, 0.34, 0.17, seed=9, time=[3, 5, 1, 4, 3, 2])
    assert all((a == b).all() for a, b in zip((train, val, test), again))


@pytest.mark.parametrize("time,match", [
    ([1, 2, 3, float("nan"), 5], "^time edge 3 has timestamp nan: every edge needs a finite"),
    ([1, 2, 3, float("inf"), 5], "^time edge 3 has timestamp inf"),
    (np.array(["2024-01-01", "NaT", "2024-01-02", "2024-01-03", "2024-01-04"],
              "datetime64[ns]"), "^time edge 1 has timestamp NaT"),
    (["a", "b", "c", "d", "e"], "^time must hold integer, float or datetime64"),
    ([1, 2, 3], r"^time must hold one timestamp per edge \(5\)"),
    ([7, 7, 7, 7, 7], "^link_test_fraction asks for 1 held-out edges, but the edges from "
                      "the cut on share the timestamp 7"),
])
def test_bad_stamps_are_refused(time, match):
    with pytest.raises(ParameterError, match=match):
        split_edges(5, 0.2, 0.2, seed=0, time=time)


def test_datetime64_stamps_split_like_their_integers():
    t = NS + np.array([5, 1, 4, 2, 3, 9, 8, 7, 6, 0], np.int64)
    want = split_edges(10, 0.2, 0.2, seed=0, time=t)
    got = split_edges(10, 0.2, 0.2, seed=0, time=t.astype("datetime64[ns]"))
    assert all((a == b).all() for a, b in zip(got, want))


def test_leave_last_out_orders_exact_stamps_and_refuses_nan():
    """MovieLens' per-user leave-last-out orders in the stamps' own type too (1 ns apart:
    float64 would call them equal and let the item id decide)."""
    users = np.array([1, 1, 1])
    items = np.array([30, 20, 10])  # the item order is the reverse of the time order
    tr, va, te = temporal_split(users, items, NS + np.array([0, 1, 2], np.int64))
    assert np.flatnonzero(te).tolist() == [2] and np.flatnonzero(va).tolist() == [1]
    with pytest.raises(InputError, match="^timestamp of row 1 is nan"):
        temporal_split(users, items, np.array([0.0, np.nan, 2.0]))
