"""Weights float32 cannot hold (issue 71): weights are stored as float32, so a nonzero weight
below float32's normal range (1e-50 would be stored as 0.0, 1e-40 with a few digits left)
is refused in one line naming the value and the line, as an overflowing one is, by every
write path that takes weights: the ingest, an append, the interop front-ends and the grid
generator. PageRank and SSSP never run on a weight zeroed on the way in."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

import graphsys
from graphsys import bsp, cli
from graphsys.errors import InputError, ParameterError
from graphsys.generators import grid_edges
from graphsys.interop._common import ingest_typed


@pytest.mark.parametrize("value", ["1e-50", "-1e-50", "1e-40", "1e-45", "5e-324"])
def test_ingest_refuses_a_weight_below_float32s_normal_range(tmp_path, capsys, value):
    f = tmp_path / "in.tsv"
    f.write_text(f"0\t1\t2.5\n1\t2\t{value}\n")
    rc = cli.main(["ingest", str(f), "--out", str(tmp_path / "g"), "--weight-col", "2",
                   "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and not (tmp_path / "g").exists()
    assert err == (f"error: {f}:2: weight '{value}' underflows float32 (a nonzero weight "
                   f"must be at least 1.18e-38 in magnitude)")


def test_float32s_own_extremes_and_zero_are_stored(tmp_path):
    tiny, top = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
    f = tmp_path / "in.tsv"
    f.write_text(f"0\t1\t{tiny!r}\n1\t2\t{top!r}\n2\t0\t0\n")
    g = graphsys.ingest(f, tmp_path / "g", weight_col=2)
    (w,) = [w for *_, w in g.iter_edges()]
    assert sorted(w.tolist()) == sorted([0.0, np.float32(tiny), np.float32(top)])


def test_append_refuses_it(tmp_path, capsys):
    graphsys.from_numpy([0, 1], [1, 2], tmp_path / "g", weight=np.array([1.0, 2.0]))
    f = tmp_path / "day2.tsv"
    f.write_text("2\t3\t1e-50\n")
    rc = cli.main(["ingest", str(f), "--append-to", str(tmp_path / "g"), "--edge-set",
                   "day2", "--weight-col", "2", "--quiet"])
    assert rc != 0 and "day2.tsv:1: weight '1e-50' underflows float32" in \
        capsys.readouterr().err
    assert list(graphsys.open_graph(tmp_path / "g").manifest.edge_sets) == ["default"]


def _networkx(out, w):
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, w[0]), (1, 2, w[1]), (2, 0, w[2])])
    return graphsys.from_networkx(G, out)


WRITERS = {
    "numpy": lambda out, w: graphsys.from_numpy([0, 1, 2], [1, 2, 0], out, weight=w),
    "numpy-dense": lambda out, w: graphsys.from_numpy([0, 1, 2], [1, 2, 0], out, weight=w,
                                                      num_nodes=3),
    "arrow": lambda out, w: graphsys.from_arrow(
        pa.table({"src": [0, 1, 2], "dst": [1, 2, 0], "w": w}), out, weight_col="w"),
    "networkx": _networkx,
    "scipy": lambda out, w: graphsys.from_scipy(
        sp.coo_matrix((w, ([0, 1, 2], [1, 2, 0])), shape=(3, 3)), out),
    "typed": lambda out, w: ingest_typed(
        [("a", 3, {})], [("a", "r", "a", np.array([0, 1, 2]), np.array([1, 2, 0]), w)],
        out, what="test", metadata={}, options={}),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_write_path_refuses_an_underflow(tmp_path, writer):
    w = np.array([1.0, 1e-50, 2.0])
    with pytest.raises(InputError, match="weight 1e-50 underflows float32") as exc:
        WRITERS[writer](tmp_path / "g", w)
    assert "\n" not in str(exc.value)
    # what float32 holds is stored, and weighted PageRank and SSSP read it as given
    w = np.array([1.0, 1e-30, 2.0])
    g = WRITERS[writer](tmp_path / "ok", w)
    got = {(int(a), int(b)): float(x) for s, d, _, ww in g.iter_edges()
           for a, b, x in zip(g.to_original(s), g.to_original(d), ww)}
    assert got == {(0, 1): 1.0, (1, 2): float(np.float32(1e-30)), (2, 0): 2.0}
    if writer != "typed":
        assert bsp.sssp(g, 0).to_dict() == pytest.approx({0: 0.0, 1: 1.0, 2: 1.0})
        ref = nx.pagerank(nx.DiGraph([(0, 1, {"weight": 1.0}), (1, 2, {"weight": 1e-30}),
                                      (2, 0, {"weight": 2.0})]), tol=1e-12)
        assert bsp.pagerank(g, weighted=True, tol=1e-12).to_dict() == pytest.approx(
            ref, abs=1e-6)


@pytest.mark.parametrize("weight_range, message", [
    ((1e-50, 1.0), "must be at least 1.18e-38"),
    ((1.0, 1e39), r"high must be a finite number in \[1, 2.4")])
def test_the_grid_generator_refuses_weights_float32_cannot_hold(weight_range, message):
    with pytest.raises(ParameterError, match=message):
        next(iter(grid_edges(100, seed=1, weight_range=weight_range)))
