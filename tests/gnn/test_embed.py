"""A GNN checkpoint embeds the graph grown by appends since training: new nodes inductively
(old nodes out of their reach keep their embeddings exactly), a learned per-node input laid
out by original id with new rows from old neighbours (brute force); a re-ingested graph
whose nodes moved is refused in one line."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

import graphsys
from graphsys.embed import Embeddings
from graphsys.errors import GraphsysError
from graphsys.generators import sbm
from graphsys.gnn import TrainConfig, embed_checkpoint, train
from graphsys.gnn.checkpoint import grown_rows

NEW = {200: 0, 201: 0, 202: 7}  # new node -> its one old neighbour


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    work = tmp_path_factory.mktemp("gnn-grow")
    m = sbm(200, 300, blocks=4, features=8, train_per_class=10, num_val=40, num_test=100)
    nodes, edges = next(m.nodes()), next(m.edges())
    g = graphsys.from_numpy(edges["src"], edges["dst"], work / "g", num_nodes=200,
                            undirected=True, partitions=2,
                            node_columns={k: v for k, v in nodes.items() if k != "id"})
    # fanouts above every degree: inference reads whole neighbourhoods, deterministically
    train(g, TrainConfig(fanouts=[64, 64], hidden=16, epochs=1), out=work / "run")
    embed_checkpoint(work / "run" / "checkpoint", work / "before")
    before = dict(zip(g.node_ids().tolist(), Embeddings.load(work / "before").to_numpy()))
    (work / "day2.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in NEW.items()))
    graphsys.ingest(work / "day2.tsv", work / "g", append=True, edge_set="day2",
                    undirected=True)
    return work, edges, before


def test_new_nodes_embedded_inductively(trained):
    work, edges, before = trained
    embed_checkpoint(work / "run" / "checkpoint", work / "after")
    g = graphsys.open_graph(work / "g")
    after = dict(zip(g.node_ids().tolist(), Embeddings.load(work / "after").to_numpy()))
    assert len(after) == 203 and all(np.isfinite(v).all() for v in after.values())
    ref = nx.Graph()
    ref.add_edges_from(zip(edges["src"].tolist(), edges["dst"].tolist()))
    reach = set()
    for v in set(NEW.values()):
        reach |= set(nx.single_source_shortest_path_length(ref, v, cutoff=2))
    far = [v for v in before if v not in reach]
    assert len(far) > 50
    for v in far:
        np.testing.assert_array_equal(after[v], before[v])
    # the same features and the same neighbourhood: the same embedding
    np.testing.assert_allclose(after[200], after[201], rtol=1e-6)
    assert not np.allclose(after[200], after[202])


@pytest.mark.parametrize("join", [True, False])
def test_learned_rows_follow_their_nodes(tmp_path, join):
    """Appended into the default view or apart (--no-join: it used to give node 9, whose
    only old neighbours are in that set, the mean of every row)."""
    g = graphsys.from_numpy([1, 2, 3, 4, 5], [2, 3, 4, 5, 1], tmp_path / "g", partitions=2)
    old_ids = g.node_ids().tolist()
    sizes = [int(x) for x in g.partition_sizes("node")]
    rng = np.random.default_rng(0)
    emb, bias = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=5)
    (tmp_path / "day2.tsv").write_text("9\t1\n9\t2\n8\t9\n7\t6\n")
    g = graphsys.ingest(tmp_path / "day2.tsv", tmp_path / "g", append=True, edge_set="day2",
                        join=join)
    state = {"input.emb.weight": torch.from_numpy(emb), "input.bias": torch.from_numpy(bias),
             "model.w": torch.ones(5, 3)}
    out = grown_rows(state, "input.", g, "node", sizes)
    row = {v: k for k, v in enumerate(g.node_ids().tolist())}
    old = {v: k for k, v in enumerate(old_ids)}
    for v, k in old.items():
        np.testing.assert_array_equal(out["input.emb.weight"][row[v]].numpy(), emb[k])
        assert out["input.bias"][row[v]] == bias[k]
    for v in (9, 8, 7, 6):
        assert out["input.bias"][row[v]] == 0
    # brute force: old neighbours' mean (9: 1 and 2; 8: none old, 7/6: none) else all rows'
    np.testing.assert_allclose(out["input.emb.weight"][row[9]].numpy(),
                               (emb[old[1]] + emb[old[2]]) / 2, rtol=1e-6)
    for v in (8, 7, 6):
        np.testing.assert_allclose(out["input.emb.weight"][row[v]].numpy(), emb.mean(0),
                                   rtol=1e-6)
    assert torch.equal(out["model.w"], state["model.w"])


def test_moved_nodes_are_refused(trained, tmp_path):
    work, edges, _ = trained
    # new ids that sort before the old ones, ingested afresh with the old edges: every
    # partition grows and the old nodes move down their partitions
    src = np.concatenate([[-1, -2, -3], edges["src"], np.arange(200)])
    dst = np.concatenate([[0, 0, 7], edges["dst"], np.arange(200)])
    moved = graphsys.from_numpy(src, dst, tmp_path / "moved", undirected=True, partitions=2)
    with pytest.raises(GraphsysError, match="entities moved"):
        embed_checkpoint(work / "run" / "checkpoint", tmp_path / "emb", graph=moved)


def test_embed_reads_the_feature_column_the_run_was_given(tmp_path):
    """``train(..., features="alt")``: gnn embed read the row-normalised ``feat`` column
    instead (0.88 away from the model's outputs on its training features, reported as
    success); it now reads ``alt``, and a run given an array is refused in one line."""
    from graphsys.gnn import layerwise_inference
    from graphsys.gnn.batches import eval_blocks
    from graphsys.gnn.inference import partition_ranges
    from graphsys.sampling import NeighborSampler
    from graphsys.sampling.adjacency import homogeneous_adjacency

    m = sbm(120, 300, blocks=3, features=6, train_per_class=8, num_val=20, num_test=40)
    nodes, edges = next(m.nodes()), next(m.edges())
    cols = {k: v for k, v in nodes.items() if k != "id"}
    cols["alt"] = np.random.default_rng(0).normal(size=cols["feat"].shape).astype(np.float32)
    g = graphsys.from_numpy(edges["src"], edges["dst"], tmp_path / "g", num_nodes=120,
                            undirected=True, node_columns=cols)
    cfg = TrainConfig(fanouts=[-1, -1], hidden=8, epochs=1, dropout=0.0)
    res = train(g, cfg, features="alt", out=tmp_path / "run")
    embed_checkpoint(tmp_path / "run" / "checkpoint", tmp_path / "emb")
    got = Embeddings.load(tmp_path / "emb").to_numpy()
    adj = homogeneous_adjacency(g, symmetric=True)
    want = layerwise_inference(res.model.eval(), res.extra["input"].eval(), 120,
                               eval_blocks(NeighborSampler(adj, [-1, -1]), 0),
                               partition_ranges(g, "node"))
    np.testing.assert_allclose(got, want.numpy(), atol=1e-5)
    train(g, cfg, features=cols["alt"], out=tmp_path / "run2")
    with pytest.raises(GraphsysError, match="trained on features given as an array"):
        embed_checkpoint(tmp_path / "run2" / "checkpoint", tmp_path / "emb2")
