"""R-GCN + DistMult link prediction: the filtered metrics vs a naive ranking loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.gnn.rgcn_link import RGCNLinkConfig, rank_triples, train_rgcn_link
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest

SHIFTS = (1, 3, 7, 11)


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    """120 entities in clusters of 4 on a ring; relation r maps cluster c to c + SHIFTS[r]."""
    root = tmp_path_factory.mktemp("rgcn_kg")
    rng = np.random.default_rng(0)
    out: set = set()
    while len(out) < 1200:
        h, r = int(rng.integers(120)), int(rng.integers(4))
        out.add((h, r, int(((h // 4 + SHIFTS[r]) % 30) * 4 + rng.integers(4))))
    rows = sorted(out)
    rng.shuffle(rows)
    parts = {"test": rows[:60], "valid": rows[60:120], "train": rows[120:]}
    for name, part in parts.items():
        (root / f"{name}.tsv").write_text("".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in part))
    ingest([EdgeSource([root / f"{n}.tsv"], edge_set=n, src_col=0, rel_col=1, dst_col=2)
            for n in parts], root / "g", IngestOptions(num_partitions=2))
    return open_graph(root / "g")


def naive_filtered_ranks(z, rel, test, known):
    """Tail then head rank of every test triple, one candidate at a time (float64),
    other true triples skipped, ties counted half."""
    z, rel = z.double(), rel.double()
    n = z.shape[0]
    tails, heads = [], []
    for h, r, t in test:
        for anchor_is_head, out in ((True, tails), (False, heads)):
            true = t if anchor_is_head else h
            score = (lambda c, h=h, r=r, t=t, a=anchor_is_head:  # noqa: E731
                     float((z[h] * rel[r] * z[c]).sum()) if a
                     else float((z[c] * rel[r] * z[t]).sum()))
            s_true = score(true)
            gt = eq = 0
            for c in range(n):
                if c == true:
                    continue
                if (anchor_is_head and (h, r, c) in known) or \
                        (not anchor_is_head and (c, r, t) in known):
                    continue
                sc = score(c)
                gt += sc > s_true
                eq += sc == s_true
            out.append(1 + gt + eq / 2)
    return np.array(tails + heads)


def stored(graph, name):
    from graphsys.gnn.rgcn_link import _global_triples

    return _global_triples(graph, name)


def test_tiny_run_metrics_match_naive_ranking(kg, device):
    """Trained on the test device; the metrics of its ranking (on the device) equal a naive
    float64 ranking of the same encodings on the CPU."""
    cfg = RGCNLinkConfig(hidden=16, num_blocks=4, batch_edges=300, steps=200, eval_every=100,
                         lr=0.05, seed=0)
    res = train_rgcn_link(kg, cfg, device=device)
    assert res.z.device.type == torch.device(device).type
    assert [r["step"] for r in res.history] == [100, 200]
    h, r, t = stored(kg, "test")
    known = {tuple(x) for name in kg.edge_sets for x in zip(*stored(kg, name), strict=True)}
    ranks = naive_filtered_ranks(res.z.cpu(), res.model.rel.detach().cpu(),
                                 list(zip(h.tolist(), r.tolist(), t.tolist(), strict=True)),
                                 known)
    m = res.metrics
    assert m["count"] == 60
    assert m["mrr"] == pytest.approx(np.mean(1 / ranks), abs=1e-6)
    for k in (1, 3, 10):
        assert m[f"hits@{k}"] == pytest.approx(np.mean(ranks <= k), abs=1e-9)
    # it learns the planted structure: above a random ranking (MRR ~ 0.045 of 120)
    assert m["mrr"] > 0.08


def test_rank_triples_filter_and_candidates(device):
    z = torch.tensor([[1.0], [2.0], [3.0], [0.5]], device=device)
    rel = torch.tensor([[1.0]], device=device)
    h, r, t = np.array([0]), np.array([0]), np.array([1])
    # tail query (0, 0, ?): scores 1, 2, 3, .5 -> true 1 is 2nd; head (?, 0, 1): 2, 4, 6, 1
    ranks = rank_triples(z, rel, h, r, t, [(h, r, t)])
    assert ranks.tolist() == [2.0, 3.0]
    known = [(np.array([0, 0, 2]), np.array([0, 0, 0]), np.array([1, 2, 1]))]
    ranks = rank_triples(z, rel, h, r, t, known)     # (0,0,2) and (2,0,1) are filtered
    assert ranks.tolist() == [1.0, 2.0]


def test_config_errors(kg):
    with pytest.raises(GraphsysError, match="must divide hidden"):
        RGCNLinkConfig(hidden=10, num_blocks=4)
    with pytest.raises(GraphsysError, match="unknown R-GCN link setting 'hiden'"):
        RGCNLinkConfig.from_dict({"hiden": 3})
    with pytest.raises(GraphsysError, match="no edge set 'dev'"):
        train_rgcn_link(kg, RGCNLinkConfig(hidden=8, num_blocks=2, valid_edges="dev"))


def test_rgcn_is_the_link_task_of_gnn_train(kg, tmp_path):
    """One entry point: ``graphsys.gnn.train`` with ``model="rgcn"`` (and ``graphsys gnn
    train --task link --model rgcn``) runs the R-GCN link predictor."""
    from graphsys.cli import main
    from graphsys.errors import ParameterError
    from graphsys.gnn import GNNResult, TrainConfig, train

    cfg = TrainConfig(task="link", model="rgcn", hidden=20, epochs=2, batch_size=500, seed=0)
    result = train(kg, cfg)
    assert isinstance(result, GNNResult) and result.epochs == 2
    assert {"mrr", "hits@1", "hits@3", "hits@10"} <= set(result.metrics)
    assert result.extra["embeddings"].shape == (kg.num_nodes(), 20)
    with pytest.raises(ParameterError, match="task link"):
        TrainConfig(task="node", model="rgcn")
    with pytest.raises(ParameterError, match="^out .*writes no checkpoint"):
        train(kg, cfg, out=tmp_path / "ck")
    rc = main(["gnn", "train", "--graph", str(kg.path), "--task", "link", "--model", "rgcn",
               "--hidden", "20", "--epochs", "1", "--batch-size", "500", "--json"])
    assert rc == 0
