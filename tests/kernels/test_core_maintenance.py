"""Core numbers kept under random sequences of edge insertions and deletions
(:mod:`graphsys.kernels.core_maintenance`, the subcore traversal of Sarıyüce et al.)
equal networkx's ``core_number`` of the changed graph after every batch, on undirected
(each edge listed once) and directed graphs (degree in + out), with self-loops among the
edges (never counted); bad input is one line."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from graphsys.errors import GraphsysError
from graphsys.kernels.core_maintenance import update_cores


def _cores(n, edges, directed):
    ref = (nx.DiGraph if directed else nx.Graph)()
    ref.add_nodes_from(range(n))
    ref.add_edges_from(edges)
    ref.remove_edges_from(nx.selfloop_edges(ref))
    return np.array([nx.core_number(ref)[v] for v in range(n)])


def _listed(edges, directed):
    """The edges as the kernel reads them: each once (an undirected one in one
    direction, counted at both ends)."""
    return np.array(list(edges), np.int64).reshape(-1, 2)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_change_sequences_equal_networkx(directed, seed):
    rng = np.random.default_rng(seed)
    n = 60
    live = set()
    while len(live) < 240:
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if directed or (b, a) not in live:
            live.add((a, b))
    core = _cores(n, live, directed)
    for _ in range(6):
        gone = [e for e in sorted(live) if rng.random() < 0.08]
        added = set()
        while len(added) < int(rng.integers(1, 30)):
            a, b = (int(x) for x in rng.integers(0, n, 2))
            if (a, b) not in live and (directed or (b, a) not in live) \
                    and (b, a) not in added:
                added.add((a, b))
        before, ins, dels = (_listed(x, directed) for x in (live, sorted(added), gone))
        got, scanned = update_cores(n, before[:, 0], before[:, 1], core, ins[:, 0],
                                    ins[:, 1], dels[:, 0], dels[:, 1])
        live = (live - set(gone)) | added
        core = _cores(n, live, directed)
        np.testing.assert_array_equal(got, core)
        assert scanned >= 0


def test_parallel_edges_and_a_pair_deleted_with_all_of_them():
    """Parallel edges each count (networkx's degree on a multigraph's edges); deleting the
    pair removes every one."""
    src, dst = np.array([0, 0, 1, 2]), np.array([1, 1, 2, 0])
    core = np.array([2, 2, 2])  # 0-1 twice, 1-2, 2-0: degrees 3, 3, 2
    got, _ = update_cores(3, src, dst, core, [], [], [0], [1])
    assert got.tolist() == [1, 1, 1]


def test_bad_input_is_one_line():
    with pytest.raises(GraphsysError, match="ids must lie in 0..2"):
        update_cores(3, [0], [3], [0, 0, 0], [], [], [], [])
    with pytest.raises(GraphsysError, match="one number per node"):
        update_cores(3, [0], [1], [0, 0], [], [], [], [])
