"""Hostile edge weights near float32's limits (issue 71) through every write path that takes
weights: tiny positive (1e-50: zero as float32), denormal, the smallest normal, the largest
finite, overflow, inf, NaN, negative, exact zero. Weights are stored as float32, so each
write path must refuse in one line a weight float32 cannot hold (not finite, beyond its
range, nonzero below its normal range) and store every other as float32 holds it; weighted
PageRank and SSSP on what was stored must equal scipy's on the same weights (SSSP refuses a
negative weight in one line)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy.sparse.csgraph import dijkstra

import graphsys
from graphsys import bsp
from graphsys.storage.append import append_edges
from graphsys.storage.ingest import EdgeSource

from .conftest import FUZZ
from .test_fuzz import outcome

F32 = np.finfo(np.float32)
HOSTILE = [1e-50, -1e-50, 1e-45, 1e-40, 5e-324, 1e-300, float(F32.tiny), float(F32.max),
           3.4e38, 3.5e38, 1e39, float("inf"), float("-inf"), float("nan"), -1.0, -2.5, 0.0,
           1.0, 0.5, 1e-30, 1e30]
WEIGHT = st.one_of(st.sampled_from(HOSTILE), st.floats(0.01, 100.0))
PATHS = ("tsv", "numpy", "networkx", "scipy", "append")


def unstorable(w: np.ndarray) -> bool:
    """Whether float32 cannot hold some weight: the write must refuse it."""
    with np.errstate(over="ignore"):
        w32 = w.astype(np.float32)
    return bool((~np.isfinite(w32)).any() or ((np.abs(w32) < F32.tiny) & (w != 0)).any())


def write(path: str, src, dst, w, out: Path, n: int):
    if path == "numpy":
        return graphsys.from_numpy(src, dst, out, weight=w, num_nodes=n)
    if path == "networkx":
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist()))
        return graphsys.from_networkx(G, out)
    if path == "scipy":
        return graphsys.from_scipy(sp.coo_matrix((w, (src, dst)), shape=(n, n)), out,
                                   weighted=True)
    text = out.parent / "edges.tsv"
    if path == "tsv":
        text.write_text("".join(f"{a}\t{b}\t{x!r}\n" for a, b, x in zip(src, dst, w.tolist())))
        return graphsys.ingest(text, out, weight_col=2)
    # append: the first edge as the graph, the others appended (the default view reads both)
    graphsys.from_numpy(src[:1], dst[:1], out, weight=np.ones(1), num_nodes=n)
    pq.write_table(pa.table({"src": src[1:], "dst": dst[1:], "weight": w[1:]}),
                   out.parent / "day2.parquet")
    append_edges(out, [EdgeSource([out.parent / "day2.parquet"], edge_set="day2",
                                  weight_col="weight")])
    return graphsys.open_graph(out)


def pagerank_reference(a: sp.csr_matrix, damping=0.85, tol=1e-13) -> np.ndarray:
    """NetworkX's PageRank (a node whose out-weights sum to 0 is dangling), by scipy."""
    n = a.shape[0]
    s = np.asarray(a.sum(axis=1)).ravel()
    inv = np.zeros(n)
    np.divide(1.0, s, out=inv, where=s != 0)
    q = sp.diags(inv) @ a
    x = np.full(n, 1.0 / n)
    for _ in range(10_000):
        nxt = damping * (x @ q + x[s == 0].sum() / n) + (1 - damping) / n
        if np.abs(nxt - x).sum() < tol:
            return nxt
        x = nxt
    return x


@FUZZ
@given(data=st.data(), n=st.integers(2, 7), path=st.sampled_from(PATHS))
def test_hostile_weights(data, n, path):
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                               min_size=1, max_size=12, unique=True))
    src, dst = (np.array(x, np.int64) for x in zip(*pairs))
    w = np.array(data.draw(st.lists(WEIGHT, min_size=len(pairs), max_size=len(pairs))))
    if path == "append" and len(pairs) == 1:
        path = "numpy"  # an append needs an edge beside the base edge set's
    if path == "append":
        w[0] = 1.0  # the base edge set's
    with tempfile.TemporaryDirectory() as tmp:
        g = outcome("weights:write", lambda: write(path, src, dst, w, Path(tmp) / "g", n))
        if g is None:
            assert unstorable(w), f"refused storable weights {w.tolist()} ({path})"
            return
        assert not unstorable(w), f"stored {w.tolist()} ({path})"
        got = {(int(a), int(b)): float(x) for s, d, _, ww in g.iter_edges()
               for a, b, x in zip(g.to_original(s), g.to_original(d), ww)}
        assert got == {(int(a), int(b)): float(np.float32(x)) for a, b, x in zip(src, dst, w)}
        # the nodes the graph has (a text edge list names only those with edges)
        m = g.num_nodes()
        pos = {int(v): k for k, v in enumerate(g.to_original(np.arange(m)))}
        stored = np.array([got[(int(a), int(b))] for a, b in zip(src, dst)])
        a = sp.csr_matrix((stored, ([pos[int(x)] for x in src], [pos[int(x)] for x in dst])),
                          shape=(m, m))
        if (stored >= 0).all():
            res = outcome("weights:pagerank",
                          lambda: bsp.pagerank(g, weighted=True, tol=1e-12, max_iters=5000))
            assert res is not None
            np.testing.assert_allclose(res.values, pagerank_reference(a), atol=1e-6)
        res = outcome("weights:sssp", lambda: bsp.sssp(g, int(src[0])))
        if (stored < 0).any():
            assert res is None, "sssp ran on a negative weight"
            return
        want = dijkstra(a, indices=pos[int(src[0])])
        np.testing.assert_allclose(res.values, want, rtol=1e-6)
