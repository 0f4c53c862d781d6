"""Evaluation against a brute-force ranking; nearest() / predict_tails() against brute force."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from graphsys import open_graph
from graphsys.embed import Embeddings, evaluate
from graphsys.storage.triples import triples


@pytest.fixture(scope="module")
def trained(trained_ckpt):
    return Embeddings.load(trained_ckpt)


def _brute(emb: Embeddings, graph, filtered: bool):
    test = triples(graph, "test")
    known = set()
    for name in graph.edge_sets:
        t = triples(graph, name)
        known |= set(zip(t.h.tolist(), t.r.tolist(), t.t.tolist()))
    E = torch.from_numpy(emb.to_numpy())
    ranks = []
    for h, r, t in zip(test.h.tolist(), test.r.tolist(), test.t.tolist()):
        for side, anchor, answer in (("rhs", h, t), ("lhs", t, h)):
            q = emb.relmodel.apply(side, E[[anchor]], torch.tensor([r]))[0]
            s = (E @ q).numpy()          # comparator "dot"
            true = s[answer]
            higher = ties = 0
            for c in range(len(E)):
                if c == answer:
                    continue
                trip = (anchor, r, c) if side == "rhs" else (c, r, anchor)
                if filtered and trip in known:
                    continue
                higher += s[c] > true
                ties += s[c] == true
            ranks.append(1 + higher + ties / 2)
    ranks = np.array(ranks)
    return {"mrr": np.mean(1 / ranks), "hits@1": np.mean(ranks <= 1),
            "hits@3": np.mean(ranks <= 3), "hits@10": np.mean(ranks <= 10),
            "mean_rank": np.mean(ranks), "count": len(test.h)}


@pytest.mark.parametrize("filtered", [True, False])
def test_metrics_match_brute_force(trained, kg4, filtered):
    graph = open_graph(kg4)
    got = evaluate(trained, graph, "test", filtered=filtered, candidates="all")
    want = _brute(trained, graph, filtered)
    assert got["count"] == want["count"]
    assert got["protocol"] == f"full, {'filtered' if filtered else 'raw'}, both sides"
    for k in ("mrr", "hits@1", "hits@3", "hits@10", "mean_rank"):
        assert got[k] == pytest.approx(want[k], rel=1e-4, abs=1e-4), k


def test_sampled_candidates_and_relation_wise(trained, kg4):
    graph = open_graph(kg4)
    full = evaluate(trained, graph, "test", filtered=True, candidates="all")
    sampled = evaluate(trained, graph, "test", filtered=True, candidates=20,
                       relation_wise=True)
    assert sampled["candidates"] == 20 and sampled["protocol"] == "sampled@20, filtered, both sides"
    assert sampled["mean_rank"] <= 21 and sampled["mrr"] >= full["mrr"] - 1e-9
    per = sampled["relations"]
    assert sum(d["count"] for d in per.values()) == sampled["count"]


@pytest.mark.parametrize("by", ["cos", "dot"])
def test_nearest_matches_brute_force(trained, by, monkeypatch):
    import graphsys.embed.query as mod

    monkeypatch.setattr(mod, "BLOCK_ROWS", 7)   # many blocks and partitions
    X = trained.to_numpy().astype(np.float64)
    q = trained.vector("e0").astype(np.float64)
    if by == "cos":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        q = q / np.linalg.norm(q)
    s = X @ q
    self_idx = int(trained.internal(["e0"])[0])
    s[self_idx] = -np.inf
    want = np.argsort(-s, kind="stable")[:5]
    ids, scores = trained.nearest("e0", 5, by=by)
    assert list(ids) == list(trained.original(want))
    assert np.allclose(scores, s[want], atol=1e-4)


def test_score_and_predict_tails_agree(trained):
    ids, scores = trained.predict_tails("e0", "r0", k=3)
    again = trained.score(["e0"] * 3, "r0", ids)
    assert np.allclose(again, scores, atol=1e-4)
    assert trained.score("e0", "r0", ids[0]) == pytest.approx(float(scores[0]), abs=1e-4)
    assert trained.vectors(["e0", "e1"]).shape == (2, 16)
    assert trained.to_numpy().shape == (200, 16)


def test_export_numpy_round_trip(trained, tmp_path):
    emb_path, ids_path = trained.export_numpy(tmp_path / "np")
    arr = np.load(emb_path, allow_pickle=False)
    ids = np.load(ids_path, allow_pickle=False)
    assert arr.shape == (200, 16)
    k = list(ids).index("e5")
    assert np.array_equal(arr[k], trained.vector("e5"))


def test_export_tsv_in_blocks_is_one_file(trained, tmp_path, monkeypatch):
    """Rows are formatted in blocks (with a progress call each): the same file, every row."""
    import graphsys.embed.export as export

    whole = tmp_path / "whole.tsv"
    trained.export_tsv(whole)
    monkeypatch.setattr(export, "TSV_ROWS", 7)
    calls: list[int] = []
    blocks = tmp_path / "blocks.tsv"
    trained.export_tsv(blocks, progress=calls.append)
    assert blocks.read_bytes() == whole.read_bytes()
    assert sum(calls) == trained.num_entities() == len(whole.read_text().splitlines())
    assert max(calls) == 7


def test_nearest_never_returns_the_query(trained):
    ids, scores = trained.nearest("e0", 1000)
    assert len(ids) == trained.num_entities() - 1 and "e0" not in ids
    assert np.isfinite(scores).all()


def test_auto_candidates_sample_above_the_full_ranking_limit(trained, kg4, monkeypatch):
    graph = open_graph(kg4)
    assert evaluate(trained, graph, "test")["candidates"] == "all"
    monkeypatch.setattr(trained.config, "eval_full_max_candidates", 199)
    monkeypatch.setattr(trained.config, "eval_num_uniform_negs", 30)
    res = evaluate(trained, graph, "test")
    assert res["candidates"] == 30 and res["mean_rank"] <= 31
    assert res["protocol"] == "sampled@30, filtered, both sides"
    raw = evaluate(trained, graph, "test", filtered=False)
    assert raw["protocol"] == "sampled@30, raw, both sides" and raw["candidates"] == 30


def test_relation_tsv_has_pbg_sides_and_names(trained, tmp_path):
    """PBG's export: side ``lhs`` is the operator applied to heads to rank tails, so
    applying that row's ComplEx parameters to the head and taking the dot product with the
    tail gives graphsys's tail-prediction score."""
    ents, rels = tmp_path / "e.tsv", tmp_path / "r.tsv"
    trained.export_tsv(ents, rels)
    rows = [line.split("\t") for line in rels.read_text().splitlines()]
    assert [r[1] for r in rows] == ["lhs"] * 8 + ["rhs"] * 8
    assert [r[3] for r in rows[:8]] == ["real"] * 4 + ["imag"] * 4
    assert {r[2] for r in rows} == {"complex_diagonal"} and {r[4] for r in rows} == {"8"}
    p = {(r[0], r[1], r[3]): np.array(r[5:], np.float64) for r in rows}
    vec = {line.split("\t")[0]: np.array(line.split("\t")[1:], np.float64)
           for line in ents.read_text().splitlines()}
    ids, _ = trained.predict_tails("e0", "r1", k=3)
    h = vec["e0"]
    wr, wi = p[("r1", "lhs", "real")], p[("r1", "lhs", "imag")]
    q = np.concatenate([h[:8] * wr - h[8:] * wi, h[:8] * wi + h[8:] * wr])
    for t in ids:
        assert q @ vec[t] == pytest.approx(float(trained.score("e0", "r1", t)), abs=1e-5)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "x", None, 10**12])
def test_bad_candidate_counts_are_refused_in_one_line(trained, kg4, bad):
    # -3 and "x" crashed in NumPy, 2.5 was cut to 2 and True read as 1 (sampled@1), 10**12
    # failed in NumPy's allocator (a traceback): it is sized against the RAM first
    from graphsys.errors import ParameterError
    with pytest.raises(ParameterError, match="candidates"):
        evaluate(trained, open_graph(kg4), "test", candidates=bad)


def test_bad_filter_and_seed_are_refused_in_one_line(trained, kg4):
    from graphsys.errors import ParameterError
    for bad in (5, [5], {"test"}):         # 5 raised a raw TypeError: not iterable
        with pytest.raises(ParameterError, match="^filter must be True, an edge set name"):
            trained.predict_tails("e0", "r0", k=3, filter=bad)
    # an empty list filters nothing (it raised a raw ValueError: nothing to concatenate)
    assert trained.predict_tails("e0", "r0", k=3, filter=[])[0] == \
        trained.predict_tails("e0", "r0", k=3)[0]
    for bad in (-1, "x"):                  # raised inside NumPy's generator
        with pytest.raises(ParameterError, match="^seed"):
            evaluate(trained, open_graph(kg4), "test", candidates=5, seed=bad)


def test_a_deleted_triple_is_not_filtered_as_known(tmp_path):
    # the filters read every edge set as stored: after delete_edges(0 -> 2), tail 2 of
    # (0, r, ?) was still left out as a known fact (scored -inf, ranked last); it is none
    import graphsys
    from graphsys.embed import train
    from graphsys.storage.changes import delete_edges
    graphsys.from_numpy([0, 1, 2, 3, 0], [1, 2, 3, 0, 2], tmp_path / "g")
    delete_edges(tmp_path / "g", [0], [2])
    g = open_graph(tmp_path / "g")
    emb = train(g, {"dimension": 4, "num_epochs": 1}, out=tmp_path / "ck").embeddings
    ids, scores = emb.predict_tails(0, 0, k=3, filter=True)
    assert set(ids[:2]) == {2, 3} and np.isfinite(scores[:2]).all() and ids[2] == 1
    for side, anchor in (("rhs", 0), ("lhs", 2)):   # what evaluate's filter reads too
        assert emb._known(True, side).answers(np.array([anchor]))[1].tolist() == [1]


def test_a_graph_other_than_the_embeddings_is_refused(trained, kg1, kg4, tmp_path):
    # the same triples ingested into 1 partition instead of 4 have other internal ids:
    # evaluate ranked them with the wrong rows and reported MRR 0.03 for a 0.95 model
    from graphsys.errors import GraphsysError
    with pytest.raises(GraphsysError, match="had 200 nodes in 4 partitions"):
        evaluate(trained, open_graph(kg1), "test")
    # the training graph opened again is fine, and so is a copy of it once the
    # recorded one is gone (the embeddings then map ids with the graph given)
    want = evaluate(trained, open_graph(kg4), "test", candidates=7)
    import shutil
    shutil.copytree(kg4, tmp_path / "kg")
    shutil.copytree(trained.path, tmp_path / "ck")
    meta = json.loads((tmp_path / "ck" / "checkpoint.json").read_text())
    meta["graph"] = str(tmp_path / "gone")
    (tmp_path / "ck" / "checkpoint.json").write_text(json.dumps(meta))
    got = evaluate(Embeddings.load(tmp_path / "ck"), open_graph(tmp_path / "kg"), "test",
                   candidates=7)
    assert got == want


def test_export_tsv_refuses_one_path_for_both_files(trained, tmp_path):
    # entities written, then replaced by the relations: the entities were lost silently
    from graphsys.errors import GraphsysError
    with pytest.raises(GraphsysError, match="both name .*same.tsv"):
        trained.export_tsv(tmp_path / "same.tsv", tmp_path / "./same.tsv")
    assert not (tmp_path / "same.tsv").exists()


def test_filters_with_every_triple_deleted(tmp_path):
    # once every edge is deleted the filter has no known answer: KnownAnswers indexed its
    # empty key array at -1 and raised a raw IndexError in predict_* and evaluate
    import graphsys
    from graphsys.embed import train
    from graphsys.storage.changes import delete_edges
    graphsys.from_numpy([0, 1, 2], [1, 2, 0], tmp_path / "g")
    train(open_graph(tmp_path / "g"), {"dimension": 4}, out=tmp_path / "ck")
    delete_edges(tmp_path / "g", [0, 1, 2], [1, 2, 0])
    g, emb = open_graph(tmp_path / "g"), Embeddings.load(tmp_path / "ck")
    assert emb.predict_tails(0, 0, k=2, filter=True)[0] == emb.predict_tails(0, 0, k=2)[0]
    assert emb.predict_heads(0, 0, k=2, filter=True)[0] == emb.predict_heads(0, 0, k=2)[0]
    for candidates in ("all", 2):        # as raw: nothing is known to leave out
        got = evaluate(emb, g, "default", candidates=candidates)
        raw = evaluate(emb, g, "default", candidates=candidates, filtered=False)
        assert got["mrr"] == raw["mrr"] and got["count"] == 3


def test_evaluate_takes_the_graph_directory(trained, kg4):
    # train() and Embeddings.load() take a directory; evaluate() raised AttributeError
    # ('str' object has no attribute 'entity_types') on one
    want = evaluate(trained, open_graph(kg4), "test", candidates="all")
    assert evaluate(trained, str(kg4), "test", candidates="all") == want
    assert evaluate(trained, kg4, "test", candidates="all") == want
