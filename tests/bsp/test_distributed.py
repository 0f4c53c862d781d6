"""Distributed runs (gloo, local processes) give the single-process answers."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys import bsp
from graphsys.bsp.distributed import TorchComm, rank_bounds, rank_split
from graphsys.bsp.launch import spawn
from graphsys.errors import GraphsysError, ParameterError

JOBS = [("pagerank", (), {"tol": 1e-12}), ("pagerank", (), {"tol": 1e-12, "weighted": False}),
        ("bfs", (0,), {}), ("sssp", (2,), {}),
        ("wcc", (), {}), ("label_propagation", (), {}), ("kcore", (), {}), ("scc", (), {}),
        ("betweenness", (), {"k": 20, "seed": 1}), ("closeness", (), {"k": 20, "seed": 1})]


def check_same(tg, results):
    for (name, args, kwargs), (values, stats) in zip(JOBS, results):
        ref = getattr(bsp, name)(tg.graph, *args, **kwargs)
        if name == "pagerank":
            assert np.abs(values - ref.values).sum() < 1e-9
        elif name in ("betweenness", "closeness"):  # summed in another order
            np.testing.assert_allclose(values, ref.values, rtol=1e-12, atol=1e-15)
        else:
            np.testing.assert_array_equal(values, ref.values, err_msg=name)
        assert stats["mode"] == "distributed" and stats["converged"]
        assert stats["totals"]["messages_exchanged"] > 0


def test_two_processes(graphs):
    tg = graphs["directed-p3"]
    results = spawn(tg.path, JOBS, world_size=2)
    assert results[0][1]["world_size"] == 2
    check_same(tg, results)


@pytest.mark.multi_gpu
def test_two_gpus_over_nccl(graphs, multi_gpu):
    """The same jobs on 2 GPUs exchanging over NCCL (PageRank within 1e-9: the GPU sums
    messages with atomics, in no fixed order)."""
    tg = graphs["directed-p3"]
    results = spawn(tg.path, JOBS, world_size=2, device="cuda")
    assert results[0][1]["device"].startswith("cuda")
    check_same(tg, results)


@pytest.mark.slow("ci")  # a 4-process gloo run
def test_four_processes(graphs, tmp_path):
    from .conftest import build, random_edges

    src, dst, w = random_edges(7, 240, 900)
    tg = build(tmp_path, "p4", src, dst, num_nodes=240, partitions=4, weights=w)
    check_same(tg, spawn(tg.path, JOBS, world_size=4))


def test_partition_ownership():
    comm = TorchComm.__new__(TorchComm)  # ownership arithmetic only, no process group
    comm.world_size = 3
    owned = []
    for comm.rank in range(3):
        owned += list(comm.owned_partitions(7))
    assert owned == list(range(7))
    with pytest.raises(ParameterError, match="^world_size 3: a distributed run needs at least "
                                             "one partition per rank, the graph has 2"):
        comm.owned_partitions(2)
    # the engine's id ranges: the nodes of the same partition ranges
    assert rank_bounds([0, 2, 5, 9], 2) == [0, 2, 9]
    assert rank_split(5, 2) == [range(0, 2), range(2, 5)]
    with pytest.raises(ParameterError, match="^world_size must be a positive integer"):
        rank_split(4, 0)


def test_spawn_refuses_a_world_size_before_starting_ranks(graphs):
    """``spawn(world_size=0)`` raised FileNotFoundError on rank 0's missing output, and 3
    ranks of a 1-partition graph a ProcessRaisedException wrapping the ranks'
    tracebacks: both are now the engine's one-line refusal, before any process starts."""
    path = graphs["directed-p1"].path
    with pytest.raises(ParameterError, match="^world_size must be a positive integer"):
        spawn(path, JOBS, world_size=0)
    with pytest.raises(ParameterError, match="^world_size 3: a distributed run needs at least "
                                             "one partition per rank, the graph has 1"):
        spawn(path, JOBS, world_size=3)


def test_distributed_needs_a_process_group(graphs):
    """Under torchrun, a script calling ``pagerank(distributed=True)`` was told to "launch
    with torchrun": torchrun starts the processes, the group is initialised in them."""
    with pytest.raises(GraphsysError, match="not initialised .*initialise their group first: "
                                            "graphsys.distributed.init_from_env"):
        bsp.pagerank(graphs["directed-p1"].graph, distributed=True)
