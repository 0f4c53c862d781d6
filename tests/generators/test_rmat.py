"""R-MAT edges: exact counts, id ranges, determinism, chunk independence and degree skew."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys.errors import GraphsysError
from graphsys.generators import rmat, rmat_edges


def _collect(chunks):
    chunks = list(chunks)
    return np.concatenate([c["src"] for c in chunks]), np.concatenate([c["dst"] for c in chunks])


@pytest.fixture
def small_blocks(monkeypatch):
    """Small RNG blocks so that a few thousand edges cross several block boundaries."""
    monkeypatch.setattr(rmat, "RNG_BLOCK_EDGES", 1000)


def test_count_dtype_and_id_range():
    chunks = list(rmat_edges(1000, 12345, seed=3, chunk_edges=4000))
    assert [len(c["src"]) for c in chunks] == [4000, 4000, 4000, 345]
    assert all(c["src"].dtype == np.int64 and c["dst"].dtype == np.int64 for c in chunks)
    src, dst = _collect(chunks)
    assert src.min() >= 0 and dst.min() >= 0 and max(src.max(), dst.max()) < 1000


@pytest.mark.parametrize("permute", [True, False])
def test_same_seed_same_edges_whatever_the_chunk_size(small_blocks, permute):
    runs = [_collect(rmat_edges(777, 5000, seed=11, permute=permute, chunk_edges=size))
            for size in (7, 1000, 4096, 10_000)]
    for src, dst in runs[1:]:
        assert np.array_equal(src, runs[0][0]) and np.array_equal(dst, runs[0][1])
    other = _collect(rmat_edges(777, 5000, seed=12, permute=permute))
    assert not np.array_equal(other[0], runs[0][0])


def test_degree_is_skewed():
    src, dst = _collect(rmat_edges(1 << 12, 1 << 16, seed=1))
    degree = np.bincount(np.concatenate([src, dst]), minlength=1 << 12)
    assert degree.max() > 20 * degree.mean()
    assert (degree == 0).sum() > 0.1 * degree.size  # many leaves / isolated, as in R-MAT


def test_first_level_quadrants_follow_a_b_c_d():
    a, b, c = 0.5, 0.2, 0.2
    src, dst = _collect(rmat_edges(1 << 10, 50_000, seed=2, a=a, b=b, c=c, permute=False))
    top_src, top_dst = src >> 9, dst >> 9
    observed = [np.mean((top_src == i) & (top_dst == j)) for i, j in ((0, 0), (0, 1), (1, 0),
                                                                      (1, 1))]
    assert np.allclose(observed, [a, b, c, 0.1], atol=0.01)


def test_permutation_relabels_without_changing_degrees():
    raw = _collect(rmat_edges(1000, 20_000, seed=5, permute=False))
    mixed = _collect(rmat_edges(1000, 20_000, seed=5, permute=True))
    raw_degree = np.bincount(raw[0], minlength=1000)
    mixed_degree = np.bincount(mixed[0], minlength=1000)
    assert np.array_equal(np.sort(raw_degree), np.sort(mixed_degree))
    assert raw_degree.argmax() == 0  # raw R-MAT: the biggest hub is vertex 0
    assert mixed_degree.argmax() != 0


def test_rejection_keeps_ids_below_n_and_one_node_works():
    src, dst = _collect(rmat_edges(513, 20_000, seed=9, permute=False))
    assert max(src.max(), dst.max()) < 513
    src, dst = _collect(rmat_edges(1, 10))
    assert not src.any() and not dst.any()


@pytest.mark.parametrize("kwargs, match", [
    ({"a": 0.6, "b": 0.3, "c": 0.2}, "a \\+ b \\+ c must be <= 1"),
    ({"a": -0.1}, r"^a must be a finite number in \[0, 1\], got -0.1$"),
    ({"num_nodes": 0}, "num_nodes must be a positive integer, got 0"),
    ({"num_edges": 0}, "num_edges must be a positive integer, got 0"),
    ({"seed": -1}, "seed must be a non-negative integer, got -1"),
    ({"chunk_edges": 0}, "chunk_edges must be a positive integer, got 0"),
])
def test_bad_arguments_fail_on_the_call(kwargs, match):
    args = {"num_nodes": 100, "num_edges": 100, **kwargs}
    with pytest.raises(GraphsysError, match=match):
        rmat_edges(args.pop("num_nodes"), args.pop("num_edges"), **args)
