"""docs/gnn.md runs as written: its ``python`` blocks are executed in order in one
namespace, then their answers are checked: the ranks its own link loop computes against a
brute-force loop, the loader's batches against the graph's neighbourhoods and labels, the
protocols every ranking metric states, and each task above chance."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def guide(run_guide):
    """The namespace the guide's blocks leave behind (``run_guide``: tests/conftest.py)."""
    blocks = []
    ns = run_guide("gnn.md", lambda i, block, ns: blocks.append(block))
    assert len(blocks) >= 10
    return ns


def test_every_task_learns_and_states_its_protocol(guide):
    assert guide["node_run"].metrics["test_accuracy"] > 0.4            # 4 classes
    assert guide["own"].metrics["test_accuracy"] > 0.4
    assert guide["node_run"].protocol is None
    assert guide["link_run"].protocol == "sampled@100, filtered"
    assert guide["time_run"].protocol == "sampled@100, filtered"
    assert guide["item_run"].protocol == guide["item_eval"]["protocol"] == "full, filtered"
    assert guide["kg_run"].protocol == guide["again"]["protocol"] == \
        "full, filtered, both sides"
    assert guide["again"]["mrr"] == guide["kg_run"].metrics["mrr"]
    # the planted structures: MRR above a random ranking of 100 tails / 40 items / 60 nodes
    assert guide["link_run"].metrics["auc"] > 0.5
    assert guide["item_run"].metrics["mrr"] > 0.2
    assert guide["kg_run"].metrics["mrr"] > 0.1
    emb = guide["node_scores"]
    assert emb.shape == (300, 4) and np.isfinite(emb).all()


def test_own_link_loop_ranks_as_a_brute_force_loop(guide):
    pos, cand = guide["pos_score"].numpy(), guide["cand_score"].numpy()
    mask = guide["cand"] != guide["held_out"][:, 1:]
    want = [1 + sum((c > p) + 0.5 * (c == p) for c, ok in zip(row, keep) if ok)
            for p, row, keep in zip(pos, cand, mask)]
    np.testing.assert_array_equal(guide["link_ranks"], want)


def test_loader_batches_are_the_graphs_neighbourhoods(guide):
    g, batch = guide["g"], guide["batch"]
    seeds = batch.seeds.numpy()
    assert set(seeds) <= set(guide["train_ids"].tolist())
    np.testing.assert_array_equal(batch.y.numpy(), g.node_column("label")[seeds])
    np.testing.assert_allclose(batch.x.numpy(), g.node_column("feat")[
        batch.blocks[0].src_nodes.numpy()])
    adj = guide["adj"]
    for block in batch.blocks:
        src = block.src_nodes[block.edge_src].numpy()
        dst = block.src_nodes[block.edge_dst].numpy()
        for u, v in zip(src, dst):               # every sampled edge is an edge of the graph
            assert u in adj.indices[adj.indptr[v]:adj.indptr[v + 1]]
    assert batch.blocks[-1].num_dst_nodes == len(seeds)


def test_typed_models_and_the_constant_model(guide):
    assert tuple(guide["h"].shape) == (5, 16) and tuple(guide["x"]["item"].shape) == (5, 16)
    assert torch.isfinite(guide["h"]).all()
    assert guide["ranks"](np.zeros(1), np.zeros((1, 99))).tolist() == [50.5]


def test_step_graph_example_trains(guide):
    """The guide's NodeStepGraph: three batches an epoch, its loss falling."""
    first, last = guide["report"][0], guide["report"][-1]
    assert last["steps"] == 3 and last["loss"] < first["loss"]
    assert last["seeds"] == len(guide["train_ids"])
