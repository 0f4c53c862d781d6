"""Chronological splits (graphsys.gnn.time_split): at given times and by fractions, never
splitting equal stamps, exact in an int64 column's own type."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import graphsys
from graphsys.errors import ParameterError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.time_split import chronological_split, split_at_times, split_by_fractions


def test_split_at_times_against_brute_force():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 30, 500)
    for lo, hi in [(5, 20), (5.5, 20.2), ("10", "11"), (0.1, 29)]:   # equal: refused
        tr, va, te = split_at_times(t, lo, hi)
        assert (tr ^ va ^ te).all() and not (tr & va).any()
        flo, fhi = float(lo), float(hi)
        np.testing.assert_array_equal(tr, t < flo)
        np.testing.assert_array_equal(te, t >= fhi)


def test_int64_nanoseconds_stay_exact():
    base = 1_600_000_000_000_000_000            # beyond float64's integer precision
    t = np.array([base, base + 1, base + 2, base + 3], np.int64)
    tr, va, te = split_at_times(t, base + 1, base + 3)
    assert tr.tolist() == [True, False, False, False] and te.tolist() == [False] * 3 + [True]
    tr, va, te = split_by_fractions(t, 0.25, 0.25)
    assert (tr.sum(), va.sum(), te.sum()) == (2, 1, 1)


def test_fractions_never_split_ties():
    rng = np.random.default_rng(1)
    t = rng.integers(0, 12, 400)
    tr, va, te = split_by_fractions(t, 0.1, 0.2)
    assert t[tr].max() < t[va].min() and t[va].max() < t[te].min()
    with pytest.raises(ParameterError, match="never splits equal timestamps"):
        split_by_fractions(np.zeros(50, int), 0.1, 0.2)


def test_refusals():
    with pytest.raises(ParameterError, match="go together"):
        chronological_split([1, 2, 3], valid_from=2)
    with pytest.raises(ParameterError, match="leaves no training edge"):
        split_at_times([5, 6, 7], 1, 6)
    with pytest.raises(ParameterError, match="must not come before"):
        split_at_times([5, 6, 7], 7, 6)
    with pytest.raises(ParameterError, match="valid_from"):
        TrainConfig(task="link", valid_from=1, test_from=2)          # split random
    with pytest.raises(ParameterError, match="go together"):
        TrainConfig(task="link", link_split="time", test_from=2)


def test_link_task_split_at_times(tmp_path):
    rng = np.random.default_rng(2)
    n, m = 80, 900
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ts = rng.integers(0, 100, m)
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": ts}),
                            tmp_path / "g", edge_columns=["timestamp"])
    cfg = TrainConfig(task="link", link_split="time", valid_from=70, test_from=85, epochs=1,
                      fanouts=[3], hidden=8, link_eval_negatives=20)
    res = train(g, cfg)
    data = res.extra["data"]
    from graphsys.gnn.link import edge_timestamps

    t = edge_timestamps(g)
    assert (t[data.train] < 70).all() and (t[data.test] >= 85).all()
    assert ((t[data.val] >= 70) & (t[data.val] < 85)).all()
    # until: the graph as of 84 has no test edge left to split from 85 on
    with pytest.raises(ParameterError, match="leaves no test edge"):
        train(g, TrainConfig(task="link", link_split="time", valid_from=70, test_from=85,
                             until=84, epochs=1, fanouts=[3], hidden=8))


def test_every_side_must_hold_an_edge():
    """Equal cut times leave validation empty: refused (it used to train, then fail)."""
    with pytest.raises(ParameterError, match=r"leaves no validation edge \(the stamps run "
                                             r"from 5 to 7\)"):
        split_at_times([5, 6, 7], 6, 6)
    with pytest.raises(ParameterError, match="leaves no test edge"):
        split_at_times([5, 6, 7], 6, 8)
    with pytest.raises(ParameterError, match="as said"):
        split_at_times([5, 6, 7], 6, 6, span="as said")


def test_link_task_cut_names_the_pair_dates_and_the_edge_stamps(tmp_path):
    """The link task dates each distinct pair by its first edge: a cut past the last such
    date says so, with the edges' own range (not only the pairs', which reads as wrong)."""
    from graphsys.gnn.time_split import pair_cut

    g = graphsys.from_arrow(pa.table({"src": [0, 1, 0, 1, 2], "dst": [1, 2, 1, 2, 0],
                                      "timestamp": [1, 2, 50, 90, 3]}),
                            tmp_path / "g", edge_columns=["timestamp"])
    assert pair_cut(g, None, None) is None
    with pytest.raises(ParameterError, match=r"those dates run from 1 to 3; the edges' "
                                             r"stamps run from 1 to 90"):
        pair_cut(g, 40, 80)(np.array([1, 2, 3]))
