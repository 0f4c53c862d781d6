"""Negative samplers: uniform range/determinism, hard negatives inside the PPR band."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.errors import GraphsysError, ParameterError
from graphsys.sampling import (
    PPRHardNegativeSampler,
    UniformNegativeSampler,
    from_coo,
    metapath_ppr,
)


def _chain_bipartite(n_items=12):
    # item k and k+1 share user k: a path of items through users
    items = np.concatenate([np.arange(n_items - 1), np.arange(1, n_items)])
    users = np.concatenate([np.arange(n_items - 1), np.arange(n_items - 1)])
    fw = from_coo(items, users, n_items, n_items - 1)
    return fw, fw.transpose()


def test_uniform():
    s = UniformNegativeSampler(10, 3)
    a = s(torch.arange(4), rng_seed=1)
    assert a.shape == (4, 3) and a.dtype == torch.int64
    assert int(a.min()) >= 0 and int(a.max()) < 10
    assert torch.equal(a, s(torch.arange(4), rng_seed=1))


def test_ppr_matches_dense_power_iteration():
    fw, bw = _chain_bipartite()
    a, b = fw.to_scipy().toarray(), bw.to_scipy().toarray()
    p = (a / a.sum(1, keepdims=True)) @ (b / b.sum(1, keepdims=True))
    x = np.eye(12)[[0, 5]]
    e = x.copy()
    for _ in range(30):
        x = 0.15 * e + 0.85 * x @ p
    got = metapath_ppr(fw, bw, np.array([0, 5]), num_iters=30)
    np.testing.assert_allclose(got, x, rtol=1e-10, atol=1e-12)
    # damping is the probability of following an edge, as in graphsys.bsp's PPR
    np.testing.assert_allclose(metapath_ppr(fw, bw, np.array([0]), damping=0.0), np.eye(12)[[0]])


def test_hard_negatives_come_from_the_band():
    fw, bw = _chain_bipartite()
    s = PPRHardNegativeSampler(fw, bw, 3, 6, num_negatives=50)
    q = np.array([0, 6])
    scores = metapath_ppr(fw, bw, q)
    neg = s(torch.from_numpy(q), rng_seed=2).numpy()
    for r, node in enumerate(q):
        sc = scores[r].copy()
        sc[node] = -np.inf
        order = np.argsort(-sc, kind="stable")
        assert set(neg[r].tolist()) <= set(order[3:6].tolist())
        assert node not in neg[r]
    # on a path graph the band of item 0 is items 4..6 (ranks by distance)
    assert set(neg[0].tolist()) <= {4, 5, 6}


def test_bad_band():
    fw, bw = _chain_bipartite()
    with pytest.raises(GraphsysError, match="band"):
        PPRHardNegativeSampler(fw, bw, 5, 5)
    with pytest.raises(GraphsysError, match="only"):
        PPRHardNegativeSampler(fw, bw, 50, 60)


@pytest.mark.parametrize("kw,match", [
    ({"damping": float("nan")}, r"^damping must be a finite number in \[0, 1\), got nan"),
    ({"damping": 1.0}, r"^damping must be a finite number in \[0, 1\)"),
    ({"num_iters": -1}, "^num_iters must be a non-negative integer"),
])
def test_walk_parameters_are_checked(kw, match):
    fw, bw = _chain_bipartite()
    with pytest.raises(ParameterError, match=match):
        metapath_ppr(fw, bw, np.array([0]), **kw)
    with pytest.raises(ParameterError, match=match):
        PPRHardNegativeSampler(fw, bw, 3, 6, **kw)


def test_counts_are_integers():
    # 1.5 was cut to 1 and True read as 1; NaN and PPR's -1 raised raw ValueErrors
    fw, bw = _chain_bipartite()
    for bad in (1.5, True, float("nan"), 0):
        with pytest.raises(ParameterError, match="^num_negatives"):
            UniformNegativeSampler(10, bad)
    for bad in (-1, 0, 1.5, True):
        with pytest.raises(ParameterError, match="^num_negatives"):
            PPRHardNegativeSampler(fw, bw, 0, 2, bad)
    with pytest.raises(ParameterError, match="^rank_lo"):
        PPRHardNegativeSampler(fw, bw, 0.5, 2)
    with pytest.raises(ParameterError, match="^num_nodes"):
        UniformNegativeSampler(10.5, 1)
    assert UniformNegativeSampler(np.int64(10), np.int64(2), low=np.int64(3)).low == 3
    with pytest.raises(ParameterError, match=r"^low must be a non-negative integer <= 9, got 10"):
        UniformNegativeSampler(10, 1, low=10)
