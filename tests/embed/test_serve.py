"""Serving: batched nearest / predict_tails / predict_heads / score against brute force, and
the faiss indexes (built, stored, tied to the checkpoint version, used by nearest)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from graphsys import open_graph
from graphsys.cli import main
from graphsys.embed import Embeddings
from graphsys.errors import GraphsysError
from graphsys.storage.triples import triples


@pytest.fixture(scope="module")
def ckpt(trained_ckpt, tmp_path_factory):
    """A copy of the shared checkpoint: the tests store indexes in it."""
    out = tmp_path_factory.mktemp("serve") / "ck"
    shutil.copytree(trained_ckpt, out)
    return out


@pytest.fixture
def emb(ckpt):
    return Embeddings.load(ckpt)


def _brute_nearest(emb, ids, k, by):
    X = emb.to_numpy().astype(np.float64)
    if by == "cos":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
    idx = emb.internal(ids)
    s = X[idx] @ X.T
    s[np.arange(len(idx)), idx] = -np.inf
    return np.argsort(-s, axis=1, kind="stable")[:, :k], s


@pytest.mark.parametrize("by", ["cos", "dot"])
def test_batched_nearest_matches_brute_force(emb, by, monkeypatch):
    import graphsys.embed.query as mod

    monkeypatch.setattr(mod, "BLOCK_ROWS", 9)   # many blocks across the 4 partitions
    ids = ["e0", "e5", "e77", "e199", "e5"]
    got, scores = emb.nearest(ids, 6, by=by, exact=True)
    want, s = _brute_nearest(emb, ids, 6, by)
    assert len(got) == 5 and scores.shape == (5, 6) and scores.dtype == np.float32
    for row, q in enumerate(ids):
        assert got[row] == emb.original(want[row])
        assert np.allclose(scores[row], s[row, want[row]], atol=1e-4)
        one, one_scores = emb.nearest(q, 6, by=by, exact=True)
        assert one == got[row] and np.allclose(one_scores, scores[row])
        assert q not in got[row]


def _known(graph):
    known = set()
    for name in graph.edge_sets:
        t = triples(graph, name)
        known |= set(zip(t.h.tolist(), t.r.tolist(), t.t.tolist()))
    return known


@pytest.mark.parametrize("side", ["tails", "heads"])
@pytest.mark.parametrize("filtered", [False, True])
def test_predict_matches_brute_force(emb, kg4, side, filtered):
    graph = open_graph(kg4)
    known = _known(graph)
    E = torch.from_numpy(emb.to_numpy())
    anchors, rels = ["e1", "e40", "e123"], ["r0", "r2", "r3"]
    if side == "tails":
        got, scores = emb.predict_tails(anchors, rels, 8, filter=True if filtered else None)
    else:
        got, scores = emb.predict_heads(rels, anchors, 8, filter=True if filtered else None)
    assert scores.shape == (3, 8)
    for row, (a, rname) in enumerate(zip(anchors, rels)):
        ai = int(emb.internal([a])[0])
        r = emb.relation_names.index(rname)
        op = "rhs" if side == "tails" else "lhs"
        s = (E @ emb.relmodel.apply(op, E[[ai]], torch.tensor([r]))[0]).numpy()
        s[ai] = -np.inf  # the query entity is not its own candidate
        for c in range(len(s)):
            trip = (ai, r, c) if side == "tails" else (c, r, ai)
            if filtered and trip in known:
                s[c] = -np.inf
        want = np.argsort(-s, kind="stable")[:8]
        assert np.allclose(scores[row], s[want], atol=1e-4)
        assert got[row] == emb.original(want) or np.allclose(
            s[emb.internal(got[row])], scores[row], atol=1e-4)  # ties may swap
        if filtered:
            for c in emb.internal(got[row]):
                assert ((ai, r, int(c)) if side == "tails" else (int(c), r, ai)) not in known
    one, one_scores = (emb.predict_tails("e1", "r0", 8, filter=True if filtered else None)
                       if side == "tails" else
                       emb.predict_heads("r0", "e1", 8, filter=True if filtered else None))
    assert one == got[0] and np.allclose(one_scores, scores[0])


def test_filter_by_edge_set_name(emb, kg4):
    graph = open_graph(kg4)
    train_t = triples(graph, "train")
    h, r = int(train_t.h[0]), int(train_t.r[0])
    head, rel = emb.original([h])[0], emb.relation_names[r]
    ids, scores = emb.predict_tails(head, rel, 200, filter="train")
    known_tails = set(train_t.t[(train_t.h == h) & (train_t.r == r)].tolist())
    kept = [i for i, x in zip(ids, scores) if np.isfinite(x)]
    assert known_tails and not known_tails & set(emb.internal(kept))
    assert len(ids) == 199 and len(kept) == 199 - len(known_tails - {h})


@pytest.mark.parametrize("side", ["tails", "heads"])
def test_predictions_leave_out_the_query_entity(emb, side):
    """``(e1, r0, ?)`` does not rank e1 itself (nor ``(?, r0, e1)``) unless asked to."""
    def predict(anchor, k, **kw):
        return (emb.predict_tails(anchor, "r0", k, **kw) if side == "tails" else
                emb.predict_heads("r0", anchor, k, **kw))

    n = emb.num_entities()
    ids, scores = predict("e1", n)
    assert "e1" not in ids and len(ids) == n - 1 and np.isfinite(scores).all()
    ids, _ = predict("e1", n, exclude_self=False)
    assert "e1" in ids and len(ids) == n
    batch, _ = predict(["e1", "e2"], 5)
    assert "e1" not in batch[0] and "e2" not in batch[1]
    assert batch[0] == predict("e1", 5)[0]


def test_empty_batches_are_answered_empty(emb):
    # nearest([]) answered empty while predict_tails([], "r0") and score([], "r0", [])
    # were refused as "relations whose types" differ (got [])
    for ids, scores in (emb.nearest([], k=2), emb.predict_tails([], "r0", k=2),
                        emb.predict_heads("r0", [], k=2, filter=True)):
        assert len(ids) == 0 and scores.shape == (0, 2)
    assert emb.score([], "r0", []).shape == (0,)


def test_score_arrays_agree_with_predict(emb):
    ids, scores = emb.predict_tails(["e0", "e3"], "r1", 4)
    heads = ["e0"] * 4 + ["e3"] * 4
    tails = list(ids[0]) + list(ids[1])
    again = emb.score(np.array(heads), "r1", np.array(tails))
    assert np.allclose(again, scores.ravel(), atol=1e-4)
    with pytest.raises(GraphsysError, match="equal lengths"):
        emb.score(["e0", "e1"], "r1", ["e2"])
    with pytest.raises(GraphsysError, match="k must be a positive integer"):
        emb.predict_heads("r1", "e2", 0)


faiss = pytest.importorskip("faiss")


def test_flat_index_is_exact_and_used_by_nearest(ckpt):
    from graphsys.embed.index import build_and_save, index_paths

    emb = Embeddings.load(ckpt)
    meta = build_and_save(emb, "flat", "cos")
    assert meta["checkpoint_version"] == emb.version and meta["num_entities"] == 200
    data, _ = index_paths(ckpt, "default" if "default" in emb.entity_types
                          else emb.entity_types[0], "cos")
    assert data.is_file() and not data.read_bytes().startswith(b"\x80")  # not a pickle
    ids = [f"e{i}" for i in range(0, 200, 7)]
    fresh = Embeddings.load(ckpt)
    assert fresh.ann_index(by="cos").kind == "flat"
    got, scores = fresh.nearest(ids, 10)
    want, want_scores = fresh.nearest(ids, 10, exact=True)
    assert np.allclose(scores, want_scores, atol=1e-5)
    for a, b in zip(got, want):
        assert a == b or set(a[:9]) == set(b[:9])  # float ties at the cut
    assert fresh.ann_index(by="dot") is None


def test_a_second_index_save_at_once_is_refused(ckpt, tmp_path):
    """Two 'embed index' saves at once could pair one's faiss file with the other's JSON
    (each renamed in turn), read back as 'does not match the record (damaged)'."""
    from graphsys.embed.index import build_and_save, index_paths
    from graphsys.storage.lock import writer_lock

    work = Path(shutil.copytree(ckpt, tmp_path / "ck"))
    emb = Embeddings.load(work)
    build_and_save(emb, "flat", "cos")
    data, meta = index_paths(work, emb.entity_types[0], "cos")
    before = (data.read_bytes(), meta.read_bytes())
    with writer_lock(data.parent), pytest.raises(GraphsysError, match="another writer holds"):
        build_and_save(emb, "flat", "cos")
    assert (data.read_bytes(), meta.read_bytes()) == before
    assert Embeddings.load(work).ann_index(by="cos").kind == "flat"


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_indexes_recall(ckpt, kind):
    from graphsys.embed.index import IndexParams, build_and_save

    emb = Embeddings.load(ckpt)
    build_and_save(emb, kind, "dot", params=IndexParams(nlist=4, nprobe=2) if kind == "ivf"
                   else IndexParams())
    ids = [f"e{i}" for i in range(200)]
    got, _ = Embeddings.load(ckpt).nearest(ids, 10, by="dot")
    want, _ = emb.nearest(ids, 10, by="dot", exact=True)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got, want)])
    assert recall >= 0.8
    assert all(q not in row for q, row in zip(ids, got))


def test_index_of_another_version_is_skipped_and_a_damaged_one_refused(ckpt):
    from graphsys.embed.index import StaleIndexError, build_and_save, index_paths, open_index

    emb = Embeddings.load(ckpt)
    build_and_save(emb, "flat", "cos")
    data, meta_path = index_paths(ckpt, emb.entity_types[0], "cos")
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "checkpoint_version": emb.version - 1}))
    with pytest.raises(StaleIndexError, match="older than the embeddings: built for "
                       "checkpoint version .* rebuild it"):
        open_index(ckpt, emb.entity_types[0], "cos", version=emb.version,
                   num_entities=emb.num_entities(), dimension=emb.dimension)
    stale = Embeddings.load(ckpt)
    with pytest.warns(UserWarning, match="older than the embeddings.*; searching exactly, "
                      "rebuild it with `graphsys embed index`"):
        got = stale.nearest("e0", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per Embeddings
        again = stale.nearest(["e0", "e1"], 3)
    assert got[0] == emb.nearest("e0", 3, exact=True)[0] == again[0][0]
    meta_path.write_text(json.dumps(meta))
    whole = data.read_bytes()
    data.write_bytes(whole[:-16])
    with pytest.raises(GraphsysError, match=f"{len(whole) - 16:,} bytes, the .*cos.json record "
                                            f"says {len(whole)}"):
        Embeddings.load(ckpt).nearest("e0", 3)
    # a sparse terabyte was hashed through (hours) before it was refused
    with open(data, "r+b") as f:
        f.truncate(1 << 40)
    with pytest.raises(GraphsysError, match="1,099,511,627,776 bytes, the"):
        Embeddings.load(ckpt).nearest("e0", 3)
    data.write_bytes(whole[:-16])   # a record from before sizes were kept: hashed
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "bytes"}))
    with pytest.raises(GraphsysError, match="sha256"):
        Embeddings.load(ckpt).nearest("e0", 3)
    build_and_save(emb, "flat", "cos")
    assert len(Embeddings.load(ckpt).nearest("e0", 3)[0]) == 3


def test_edited_search_settings_of_an_index_are_refused_in_one_line(ckpt, tmp_path):
    # the index record carries no checksum: nprobe "x", 0 or 10**20 raised raw SWIG
    # TypeError / OverflowError or a faiss RuntimeError at the first search
    from graphsys.embed.index import build_and_save, index_paths
    from graphsys.errors import FormatError

    ck = shutil.copytree(ckpt, tmp_path / "ck")
    build_and_save(Embeddings.load(ck), "ivf", "dot")
    _, meta_path = index_paths(ck, "node", "dot")
    meta = json.loads(meta_path.read_text())
    for params, says in (({**meta["params"], "nprobe": "x"}, "nprobe must be a positive integer"),
                         ({**meta["params"], "nprobe": 10 ** 20}, "nprobe must be"),
                         ({**meta["params"], "ef_search": 0}, "ef_search must be"),
                         ([1], "params must be a table")):
        meta_path.write_text(json.dumps({**meta, "params": params}))
        with pytest.raises(FormatError, match=f"node.dot.json: search settings: {says}"):
            Embeddings.load(ck).nearest("e0", 3, by="dot")


def test_nearest_after_more_training_searches_exactly(ckpt, kg4, tmp_path, capsys):
    """Training on after ``embed index`` leaves the index behind the embeddings: nearest
    says so once and answers exactly (library and CLI); a rebuilt index is used again."""
    from graphsys.embed import load_config, train
    from graphsys.embed.index import build_and_save

    ck = Path(shutil.copytree(ckpt, tmp_path / "ck"))
    build_and_save(Embeddings.load(ck), "hnsw", "cos")
    epochs = Embeddings.load(ck).meta["epochs_done"]
    emb = train(kg4, load_config(ck / "config.json", [f"num_epochs={epochs + 1}"]),
                out=ck).embeddings
    with pytest.warns(UserWarning, match="older than the embeddings") as caught:
        ids, scores = emb.nearest(["e3", "e4"], 5)
    assert len(caught) == 1
    want, want_scores = emb.nearest(["e3", "e4"], 5, exact=True)
    assert ids == want and np.allclose(scores, want_scores)
    assert main(["embed", "nearest", str(ck), "e3", "-k", "4", "--json"]) == 0
    out, err = capsys.readouterr()
    assert [n["id"] for n in json.loads(out)["neighbours"]] == want[0][:4]
    assert err.count("warning: ") == 1 and "searching exactly" in err
    build_and_save(emb, "hnsw", "cos")
    assert Embeddings.load(ck).ann_index() is not None


def test_exact_neighbours_match_brute_force():
    from graphsys.embed.index import _Rows, exact_neighbours

    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 8)).astype(np.float32)
    rows = _Rows([x[:120], x[120:]])  # two partitions, as a checkpoint's
    ids = np.array([250, 3, 119, 120], np.int64)
    for by in ("cos", "dot"):
        y = x / np.linalg.norm(x, axis=1, keepdims=True) if by == "cos" else x
        s = y[ids] @ y.T
        s[np.arange(len(ids)), ids] = -np.inf  # not the query itself
        want = np.argsort(-s, axis=1, kind="stable")[:, :10]
        np.testing.assert_array_equal(exact_neighbours(rows, ids, by, 10), want)


def test_search_recall_is_the_share_of_the_exact_top_k_found():
    """An approximate search's recall per query (order ignored), named apart from the
    ranking metric ``graphsys.ranking.recall_at_k`` (a rank's recall in its group)."""
    from graphsys import ranking
    from graphsys.embed import index

    got = np.array([[4, 1, 9], [7, 8, 2]])
    want = np.array([[1, 4, 5], [2, 7, 8]])
    np.testing.assert_array_equal(index.search_recall(got, want), [2 / 3, 1.0])
    assert not hasattr(index, "recall_at_k") and callable(ranking.recall_at_k)


def test_search_setting_is_picked_for_the_target_recall():
    """Left unset, ef_search (hnsw) and nprobe (ivf) are the smallest steps whose recall on
    the tuning queries reaches the target; the recall reported is on held-out queries."""
    from graphsys.embed.index import (
        EF_SEARCH_STEPS,
        IndexParams,
        NearestIndex,
        _Rows,
        build_index,
        tune_search,
    )

    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 24)).astype(np.float32)  # no clusters: a hard table
    for kind, params in (("hnsw", IndexParams(hnsw_m=4, ef_construction=16)),
                         ("ivf", IndexParams(nlist=64))):
        built = NearestIndex(build_index([x], kind, "cos", params), kind, "cos", params)
        rec = tune_search(built, _Rows([x]), queries=100)
        name = "ef_search" if kind == "hnsw" else "nprobe"
        assert rec["target"] == 0.95 and rec["reached"] and rec["tuned_lower"] >= 0.95
        assert rec[name] == getattr(params, name) and rec["k"] == 10
        assert rec["queries"] == 100 and rec["recall"] >= 0.85  # held out: near the target
        if rec[name] > (EF_SEARCH_STEPS[0] if kind == "hnsw" else 1):  # the step below misses
            built.set_search(rec[name] // 2)
            below = tune_search(built, _Rows([x]), queries=100)
            assert below["recall"] < rec["recall"] or below["recall"] < 0.95
    fixed = IndexParams(ef_search=16, hnsw_m=4, ef_construction=16)
    built = NearestIndex(build_index([x], "hnsw", "cos", fixed), "hnsw", "cos", fixed)
    rec = tune_search(built, _Rows([x]), queries=100)
    assert rec["ef_search"] == 16 and "target" not in rec  # given: measured, not tuned


def test_target_recall_is_checked():
    from graphsys.embed.index import IndexParams
    from graphsys.errors import ParameterError

    for bad in (0.0, 1.5, True, "high"):
        with pytest.raises(ParameterError, match="target_recall"):
            IndexParams(target_recall=bad).check()


@pytest.mark.parametrize("kind, params, name", [
    ("flat", {"nprobe": 3}, "nprobe"), ("hnsw", {"nlist": 3}, "nlist"),
    ("ivf", {"hnsw_m": 8}, "hnsw_m"), ("flat", {"ef_search": 20}, "ef_search"),
])
def test_a_setting_of_another_kind_is_refused(kind, params, name):
    """'graphsys embed index CKPT --kind flat --nprobe 3' built the index as if unset."""
    from graphsys.embed.index import IndexParams
    from graphsys.errors import ParameterError

    with pytest.raises(ParameterError, match=f"^{name} is a setting of .* indexes, not of "
                                             f"{kind}$"):
        IndexParams(**params).check(kind)
    IndexParams(**params).check()  # no kind: the limits only


def test_embed_index_cli(ckpt, capsys):
    assert main(["embed", "index", str(ckpt), "--kind", "hnsw", "--by", "dot"]) == 0
    out = capsys.readouterr().out
    assert "recall@10 " in out and "held-out queries; ef_search " in out
    assert "picked for target 0.95" in out
    assert main(["embed", "index", str(ckpt), "--kind", "hnsw", "--by", "dot", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["kind"] == "hnsw" and rec["by"] == "dot" and rec["num_entities"] == 200
    assert rec["recall"]["recall"] >= 0.95 and rec["params"]["ef_search"] in (16, 32, 64)
    assert main(["embed", "nearest", str(ckpt), "e3", "-k", "4", "--by", "dot",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["neighbours"]) == 4
    with pytest.raises(SystemExit):
        main(["embed", "index", str(ckpt), "--kind", "bogus"])


def test_several_entity_types_need_entity_type(tmp_path):
    """Without ``entity_type`` on a graph of two types the error names the parameter (the
    CLI maps it to its flag) and the types."""
    from graphsys.embed import train
    from graphsys.errors import ParameterError
    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    (tmp_path / "rated.tsv").write_text("".join(f"{u}\t{100 + u % 7}\n" for u in range(40)))
    ingest_sources([EdgeSource([tmp_path / "rated.tsv"], relation="rated")], tmp_path / "g",
                   IngestOptions(relation_types=[RelationType("rated", "user", "item")]))
    emb = train(tmp_path / "g", {"dimension": 4, "num_epochs": 1},
                out=tmp_path / "ck").embeddings
    for call in (lambda: emb.nearest(3), lambda: emb.vector(3), lambda: emb.to_numpy()):
        with pytest.raises(ParameterError, match="must be given: these embeddings have "
                           "entity types") as exc:
            call()
        assert exc.value.parameter == "entity_type"
        assert {"user", "item"} <= set(str(exc.value).replace(",", " ").split())
    with pytest.raises(ParameterError, match="'movie' is not an entity type"):
        emb.nearest(3, entity_type="movie")
    assert len(emb.nearest(3, 2, entity_type="user")[0]) == 2
    ids, _ = emb.predict_tails(3, "rated", 3)  # user -> item: no self to leave out
    assert len(ids) == 3 and set(ids) <= set(range(100, 107))
