"""Road-like grid: exact counts, lattice structure, degrees, weights and a large diameter."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from graphsys.errors import GraphsysError
from graphsys.generators import grid, grid_edges
from graphsys.generators.grid import default_grid_edges, max_grid_edges


def _collect(chunks):
    chunks = list(chunks)
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


def _brute_counts(n):
    rows, cols = grid.grid_shape(n)
    lattice = diagonal = 0
    for v in range(n):
        x = v % cols
        lattice += (x < cols - 1 and v + 1 < n) + (v + cols < n)
        diagonal += (x < cols - 1 and v + cols + 1 < n) + (x > 0 and v + cols - 1 < n)
    return lattice, lattice + diagonal


def test_closed_form_counts_match_enumeration():
    for n in range(2, 120):
        assert (grid.lattice_edge_count(n), max_grid_edges(n)) == _brute_counts(n), n


def test_default_graph_is_a_thinned_lattice():
    n = 2500
    e = _collect(grid_edges(n, seed=1))
    rows, cols = grid.grid_shape(n)
    assert (rows, cols) == (50, 50)
    assert len(e["src"]) == default_grid_edges(n) == 4900 - round(0.2 * 4900)
    assert e["src"].dtype == np.int64 and e["weight"].dtype == np.float32
    assert (e["src"] < e["dst"]).all() and e["dst"].max() < n
    assert set(np.unique(e["dst"] - e["src"]).tolist()) == {1, cols}
    assert len(set(zip(e["src"].tolist(), e["dst"].tolist()))) == len(e["src"])
    degree = np.bincount(np.concatenate([e["src"], e["dst"]]), minlength=n)
    assert degree.max() <= 4
    assert (e["weight"] >= 1).all() and (e["weight"] < 10).all()


def test_high_diameter():
    n = 900
    e = _collect(grid_edges(n, seed=2))
    adj = sp.coo_matrix((np.ones(len(e["src"])), (e["src"], e["dst"])), shape=(n, n))
    dist = shortest_path(adj.tocsr(), directed=False, unweighted=True, indices=[0])[0]
    assert np.isfinite(dist).mean() > 0.9  # almost everything is connected
    assert dist[np.isfinite(dist)].max() >= 58  # >= Manhattan distance across a 30 x 30 grid


@pytest.mark.parametrize("m", [1, 100, 857, 1500, 1674])
def test_edge_count_is_exact(m):
    n = 450  # 21 rows x 22 columns, the last row holds 10 nodes
    assert grid.lattice_edge_count(n) == 429 + 428 and max_grid_edges(n) == 857 + 408 + 409
    e = _collect(grid_edges(n, m, seed=3, chunk_edges=97))
    assert len(e["src"]) == m
    assert len(set(zip(e["src"].tolist(), e["dst"].tolist()))) == m
    degree = np.bincount(np.concatenate([e["src"], e["dst"]]), minlength=n)
    assert degree.max() <= (4 if m <= 857 else 8)
    diagonal = np.isin(e["dst"] - e["src"], [21, 23])
    assert diagonal.sum() == max(0, m - 857)
    # rows in src order, a node's edges right, down, down-right, down-left (the docstring
    # said (src, dst) order, which the down-left diagonal breaks)
    step = e["dst"] - e["src"]
    kind = np.select([step == 1, step == 22, step == 23], [0, 1, 2], 3)
    assert (np.diff(e["src"] * 4 + kind) > 0).all()
    assert (e["weight"][diagonal] >= np.sqrt(2)).all()
    assert (e["weight"][diagonal] < 10 * np.sqrt(2)).all()


def test_same_seed_same_graph_whatever_the_chunk_size(monkeypatch):
    monkeypatch.setattr(grid, "RNG_BLOCK_NODES", 64)
    runs = [_collect(grid_edges(1000, 1900, seed=4, chunk_edges=size)) for size in (5, 333, 10**6)]
    for run in runs[1:]:
        assert all(np.array_equal(run[k], runs[0][k]) for k in ("src", "dst", "weight"))
    other = _collect(grid_edges(1000, 1900, seed=5))
    assert not np.array_equal(other["src"], runs[0]["src"])


def test_weight_range():
    e = _collect(grid_edges(100, 100, seed=1, weight_range=(5.0, 6.0)))
    assert (e["weight"] >= 5).all() and (e["weight"] < 6).all()


@pytest.mark.parametrize("args, kwargs, match", [
    ((1,), {}, "num_nodes must be an integer >= 2, got 1"),
    ((10, 23), {}, "num_edges must be <= 22"),
    ((10, 0), {}, "num_edges must be a positive integer, got 0"),
    ((10,), {"weight_range": (0, 1)}, "weight_range low must be a finite number > 0, got 0"),
    ((10,), {"weight_range": (2, 1)}, r"weight_range high must be a finite number in \[2, "),
    ((10,), {"drop": 1.0}, r"drop must be a finite number in \[0, 1\), got 1.0"),
])
def test_bad_arguments(args, kwargs, match):
    with pytest.raises(GraphsysError, match=match):
        grid_edges(*args, **kwargs)
