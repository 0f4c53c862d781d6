"""Recommendations from a link-task checkpoint: the temporal split, recommend(), the
ranking metrics (against brute-force loops and the trainer's own rank_metrics) and the
``gnn recommend`` command."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
import torch

from graphsys import cli
from graphsys.datasets.loaders import temporal_split
from graphsys.embed import Embeddings
from graphsys.errors import ParameterError
from graphsys.gnn import TrainConfig, embed_checkpoint, train
from graphsys.gnn.checkpoint import load_checkpoint
from graphsys.gnn.item_task import rank_metrics
from graphsys.gnn.recommendation import evaluate, ranking_metrics, recommend
from graphsys.storage.format import RelationType
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources


def _brute_temporal(users, items, ts):
    """Per user, rows sorted by (timestamp, item) in a Python loop."""
    by_user: dict[int, list[int]] = {}
    for r in range(len(users)):
        by_user.setdefault(int(users[r]), []).append(r)
    train, valid, test = (np.zeros(len(users), bool) for _ in range(3))
    for rows in by_user.values():
        rows.sort(key=lambda r: (ts[r], items[r]))
        if len(rows) >= 2:
            test[rows[-1]] = True
        if len(rows) >= 3:
            valid[rows[-2]] = True
    return ~(test | valid), valid, test


def test_temporal_split_matches_brute_force():
    rng = np.random.default_rng(3)
    users = rng.integers(0, 40, 500)
    items = rng.permutation(500) % 250                      # repeats across users
    keep = np.unique(users * 1000 + items, return_index=True)[1]   # no repeated pair
    users, items = users[keep], items[keep]
    ts = rng.integers(0, 20, len(users))                    # many ties within a user
    got = temporal_split(users, items, ts)
    want = _brute_temporal(users, items, ts)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    # the split does not depend on the rows' order
    perm = rng.permutation(len(users))
    for a, b in zip(temporal_split(users[perm], items[perm], ts[perm]), got):
        np.testing.assert_array_equal(a, b[perm])
    single = temporal_split(np.array([5]), np.array([1]), np.array([0]))
    assert [m.tolist() for m in single] == [[True], [False], [False]]


def test_movielens_temporal_ingest(mirror, tmp_path):
    from graphsys.gnn.data import open_source

    g = open_source("movielens-100k", mirror=mirror, cache=tmp_path / "cache", split="temporal")
    assert sorted(g.edge_sets) == ["test", "train", "valid"]
    counts = {e: g.edge_set(e).num_edges for e in g.edge_sets}
    assert counts == {"train": 98114, "valid": 943, "test": 943}
    assert g.manifest.metadata["split"]["method"] == "temporal"
    # every user's test item is their latest rating (u.data read independently)
    raw = np.loadtxt(mirror / "movielens-100k" / "u.data", dtype=np.int64)
    _, _, want_test = _brute_temporal(raw[:, 0], raw[:, 1], raw[:, 3])
    want = {(int(u), int(i)) for u, i in raw[want_test][:, :2]}
    s, d, w = (np.concatenate(c) for c in zip(*((s, d, w)
                                                for s, d, _, w in g.iter_edges("test"))))
    off = g.type_offsets
    got = set(zip(g.to_original(s - off["user"], "user").tolist(),
                  g.to_original(d - off["item"], "item").tolist()))
    assert got == want
    assert set(np.unique(w).tolist()) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    # the timestamp and rating are kept beside every edge, as u.data has them
    names = [(c.name, c.dtype) for c in g.edge_set("test").columns]
    assert names == [("rating", "int64"), ("timestamp", "int64")]
    rows = {(int(u), int(i)): (int(r), int(t)) for u, i, r, t in raw}
    stored = {}
    for e in g.edge_sets:
        for (s, d, _, _), r, t in zip(g.iter_edges(e), g.edge_column("rating", e),
                                      g.edge_column("timestamp", e)):
            users = g.to_original(s - off["user"], "user").tolist()
            items = g.to_original(d - off["item"], "item").tolist()
            stored.update(zip(zip(users, items), zip(r.tolist(), t.tolist())))
    assert stored == rows


def _brute_metrics(scores, targets, excluded, ks):
    """Python loops over each user's candidates: one per candidate above a target, a half
    per candidate tied with it (the target itself aside)."""
    out = {f"{m}@{k}": [] for m in ("hits", "recall") for k in ks}
    rr = []
    for u in range(scores.shape[0]):
        tgt = set(int(t) for t in targets[u])
        if not tgt:
            continue
        cand = [j for j in range(scores.shape[1]) if j in tgt or j not in set(excluded[u])]
        ranks = [1 + sum((scores[u, j] > scores[u, t]) + 0.5 * (scores[u, j] == scores[u, t])
                         for j in cand if j != t) for t in tgt]
        for k in ks:
            out[f"hits@{k}"].append(any(r <= k for r in ranks))
            out[f"recall@{k}"].append(sum(r <= k for r in ranks) / len(ranks))
        rr.append(1 / min(ranks))
    res = {key: float(np.mean(v)) for key, v in out.items()}
    res["mrr"] = float(np.mean(rr))
    res["users"] = len(rr)
    return res


def test_ranking_metrics_match_brute_force():
    rng = np.random.default_rng(0)
    n_users, n_items = 25, 30
    scores = np.round(rng.random((n_users, n_items)), 1)          # many ties
    targets = [rng.choice(n_items, rng.integers(0, 4), replace=False) for _ in range(n_users)]
    excluded = [rng.choice(n_items, rng.integers(0, 10), replace=False)
                for _ in range(n_users)]
    ks = [1, 3, 10]
    got = ranking_metrics(scores, targets, excluded, ks)
    want = _brute_metrics(scores, targets, excluded, ks)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key]), key
    with pytest.raises(ParameterError, match="^ks must be a positive integer"):
        ranking_metrics(scores, targets, excluded, [0])


def test_ranking_metrics_agree_with_the_trainers_rank_metrics():
    """One target per user, the link task's query and exclusions: its hits@10 and MRR."""
    rng = np.random.default_rng(1)
    n_users, n_items, dim = 40, 60, 8
    emb = torch.from_numpy(rng.normal(size=(n_items, dim)).astype(np.float32))
    bias = torch.from_numpy(rng.normal(scale=0.1, size=n_items).astype(np.float32))
    user_items = [rng.choice(n_items, 5, replace=False) for _ in range(n_users)]
    target = np.array([rng.choice(np.setdiff1d(np.arange(n_items), ui)) for ui in user_items])
    target[::7] = -1                                               # users without a target
    exclude = [rng.choice(n_items, 2) for _ in range(n_users)]
    want = rank_metrics(emb, user_items, exclude, target, ks=(10,), bias=bias)
    unit = torch.nn.functional.normalize(emb, dim=1).numpy()
    q = np.stack([unit[ui].mean(0) for ui in user_items])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ unit.T + bias.numpy()
    has = target >= 0
    got = ranking_metrics(scores[has], [np.atleast_1d(t) for t in target[has]],
                          [np.concatenate([user_items[u], exclude[u]])
                           for u in np.flatnonzero(has)], ks=[10])
    assert got["hits@10"] == pytest.approx(want["hits@10"], abs=1e-6)
    assert got["mrr"] == pytest.approx(want["mrr"], abs=1e-6)
    assert got["recall@10"] == got["hits@10"]                     # one target per user


def test_the_trainers_metrics_of_several_targets_per_user_are_evaluates():
    """Three held-out items per user (one given twice): the item task ranked each row on
    its own and averaged over rows (hits@3 0.28, MRR 0.30 below, and "recall@3 = hits@3"),
    where evaluating the checkpoint (ranking_metrics) reports per user hits@3 0.83, MRR
    0.57: the run's test metrics and ``gnn evaluate``'s disagreed. Both are per user now,
    and a target among the user's known items competes with the user's other targets in
    both (the trainer had left it out of their rivals: on a trained run recall@10 0.567,
    evaluate 0.544)."""
    rng = np.random.default_rng(1)
    n_users, n_items = 6, 12
    emb = torch.from_numpy(rng.normal(size=(n_items, 4)).astype(np.float32))
    user_items = [rng.choice(n_items, 3, replace=False) for _ in range(n_users)]
    held = [rng.choice(np.setdiff1d(np.arange(n_items), ui), 3, replace=False)
            for ui in user_items]
    held[3][0] = user_items[3][0]          # held out and known: a rival of user 3's others
    rows = np.array([(u, t) for u in range(n_users) for t in held[u]] + [(2, held[2][0])])
    none = [np.zeros(0, np.int64)] * n_users
    ks = list(range(1, n_items))
    got = rank_metrics(emb, user_items, none, rows[rng.permutation(len(rows))], ks=ks)
    unit = torch.nn.functional.normalize(emb, dim=1).numpy()
    q = np.stack([unit[ui].mean(0) for ui in user_items])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    want = ranking_metrics(q @ unit.T, held, user_items, ks=ks)
    assert want["hits@3"] != want["recall@3"]
    for key in want.keys() - {"users"}:
        assert got[key] == pytest.approx(want[key], abs=1e-6), key


def test_a_model_scoring_every_item_the_same_is_not_perfect():
    """Ties count half: constant scores put every held-out item in the middle of the
    ranking (hits@10 = 0 among 60 items, MRR 1 / 30.5), not first (which gave 1.0)."""
    n_users, n_items = 12, 61
    user_items = [np.array([u]) for u in range(n_users)]
    target = np.arange(n_users) + 20
    no_excl = [np.zeros(0, np.int64)] * n_users
    flat = rank_metrics(torch.ones(n_items, 4), user_items, no_excl, target, ks=(10,))
    assert flat["hits@10"] == 0.0 and flat["mrr"] == pytest.approx(1 / 30.5)
    m = ranking_metrics(np.zeros((n_users, n_items)), [np.atleast_1d(t) for t in target],
                        user_items, ks=[10])
    assert m["hits@10"] == 0.0 and m["mrr"] == pytest.approx(1 / 30.5)
    nan = np.zeros((1, n_items))
    nan[0, 5] = np.nan                                            # a NaN target is last
    assert ranking_metrics(nan, [np.array([5])], [np.zeros(0, int)], ks=[10])["mrr"] == \
        pytest.approx(1 / n_items)


# -- a small trained model -------------------------------------------------------------------

N_USERS, N_ITEMS = 30, 40


@pytest.fixture(scope="module")
def trained(tmp_path_factory, session_device):
    """A user -> item graph (user ids 1000.., item ids 500..) split by time into train /
    valid / test, a one-epoch PinSage checkpoint on it (trained on the test device), and its
    raw interactions."""
    work = tmp_path_factory.mktemp("recommend")
    rng = np.random.default_rng(0)
    users = 1000 + rng.integers(0, N_USERS, 700)
    items = 500 + (rng.integers(0, N_ITEMS, 700) + (users % 4) * 7) % N_ITEMS
    ts = rng.integers(0, 10_000, 700)
    masks = temporal_split(users, items, ts)
    sources = [EdgeSource(table=pa.table({"src": users[m], "dst": items[m]}), edge_set=name,
                          relation="rated")
               for name, m in zip(("train", "valid", "test"), masks)]
    label = pa.array((np.arange(N_ITEMS) % 3).astype(np.int64))
    ingest_sources(sources, work / "g",
                   IngestOptions(partitions=2,
                                 relation_types=[RelationType("rated", "user", "item")]),
                   nodes=[NodeSource(pa.table({"id": np.arange(500, 500 + N_ITEMS),
                                               "genre": label}), "item")])
    train(work / "g", TrainConfig(task="link", model="pinsage", hidden=8, epochs=1,
                                  fanouts=[3, 3], seed=0), out=work / "run",
          device=session_device)
    return {"work": work, "ckpt": work / "run" / "checkpoint", "users": users, "items": items,
            "masks": dict(zip(("train", "valid", "test"), masks))}


def _reference_scores(trained):
    """Every (user, item) score recomputed from the embeddings gnn embed writes and the
    checkpoint's bias; rows/columns in original-id order 1000.. / 500..."""
    g = open_graph(trained["work"] / "g")
    emb_dir = trained["work"] / "emb"
    if not emb_dir.exists():
        embed_checkpoint(trained["ckpt"], emb_dir)
    z = Embeddings.load(emb_dir, g).vectors(list(range(500, 500 + N_ITEMS)), "item")
    unit = z / np.linalg.norm(z, axis=1, keepdims=True)
    bias_internal = load_checkpoint(trained["ckpt"])[0]["input.bias"].numpy()
    bias = bias_internal[g.to_internal(list(range(500, 500 + N_ITEMS)), "item")]
    tr = trained["masks"]["train"]
    scores = np.zeros((N_USERS, N_ITEMS))
    for u in range(N_USERS):
        seen = trained["items"][tr & (trained["users"] == 1000 + u)] - 500
        q = unit[seen].mean(0)
        scores[u] = unit @ (q / np.linalg.norm(q)) + bias
    return scores


def test_recommend_scores_as_the_model_does(trained):
    ref = _reference_scores(trained)
    tr = trained["masks"]["train"]
    recs = recommend(trained["ckpt"], [1003, 1017], k=5)
    assert recs.column_names == ["user", "rank", "item", "score"]
    rows = recs.to_pylist()
    for user in (1003, 1017):
        mine = [r for r in rows if r["user"] == user]
        seen = set(trained["items"][tr & (trained["users"] == user)].tolist())
        order = [j for j in np.argsort(-ref[user - 1000], kind="stable") if 500 + j not in seen]
        assert [r["item"] for r in mine] == [500 + int(j) for j in order[:5]]
        assert [r["rank"] for r in mine] == [1, 2, 3, 4, 5]
        np.testing.assert_allclose([r["score"] for r in mine],
                                   ref[user - 1000][order[:5]], rtol=1e-5, atol=1e-5)
    # seen items come back with exclude_seen=False: the top-k of every item
    allrec = recommend(trained["ckpt"], 1003, k=N_ITEMS, exclude_seen=False)
    assert allrec.num_rows == N_ITEMS
    assert allrec.column("item").to_pylist()[:3] == [
        500 + int(j) for j in np.argsort(-ref[3], kind="stable")[:3]]
    # k above the unseen items: all of them, no seen one
    n_seen = len(set(trained["items"][tr & (trained["users"] == 1003)].tolist()))
    assert recommend(trained["ckpt"], "1003", k=1000).num_rows == N_ITEMS - n_seen


def test_recommend_title_column_and_errors(trained):
    recs = recommend(trained["ckpt"], [1001], k=4, title_column="genre")
    assert recs.column("title").to_pylist() == [(i - 500) % 3 for i in
                                                recs.column("item").to_pylist()]
    with pytest.raises(ParameterError, match="^title_column 'name' is not a node column"):
        recommend(trained["ckpt"], [1001], title_column="name")
    with pytest.raises(ParameterError, match="^users must be ids of 'user' nodes"):
        recommend(trained["ckpt"], [1001, 99])
    with pytest.raises(ParameterError, match="^users must be integer ids"):
        recommend(trained["ckpt"], ["abc"])
    with pytest.raises(ParameterError, match="^k must be a positive integer, got 0"):
        recommend(trained["ckpt"], [1001], k=0)
    with pytest.raises(ParameterError, match="^edge_set unknown edge set 'nope'"):
        recommend(trained["ckpt"], [1001], edge_set="nope")


def test_recommend_refuses_a_node_checkpoint(tmp_path):
    from .conftest import sbm_graph

    g = sbm_graph(tmp_path)
    train(g, TrainConfig(fanouts=[3, 3], hidden=8, epochs=1), out=tmp_path / "run")
    with pytest.raises(ParameterError, match="^checkpoint .* is a 'node'-task checkpoint"):
        recommend(tmp_path / "run" / "checkpoint", [0])


def test_evaluate_matches_a_brute_force_loop(trained):
    ref = _reference_scores(trained)
    m = trained["masks"]
    users, items = trained["users"] - 1000, trained["items"] - 500
    targets, excluded = [], []
    for u in range(N_USERS):
        mine = users == u
        targets.append(items[m["test"] & mine])
        excluded.append(items[(m["train"] | m["valid"]) & mine])
    want = _brute_metrics(ref, targets, excluded, [1, 5, 10])
    got = evaluate(trained["ckpt"], ks=[10, 1, 5])
    assert (got["edge_set"], got["history"], got["exclude"]) == ("test", "train", ["valid"])
    assert got["protocol"] == "full, filtered"          # every item, known ones left out
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=1e-5), key
    # the valid set ranked the same way, test items excluded
    assert evaluate(trained["ckpt"], edge_set="valid")["exclude"] == ["test"]
    with pytest.raises(ParameterError, match="^edge_set is the history edge set 'train'"):
        evaluate(trained["ckpt"], edge_set="train")


def _run(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_recommend_and_evaluate(trained, capsys):
    ckpt = str(trained["ckpt"])
    code, out, _ = _run(["gnn", "recommend", ckpt, "--users", "1003,1017", "--k", "3",
                         "--json"], capsys)
    assert code == 0
    res = json.loads(out.strip().splitlines()[-1])
    assert [r["user"] for r in res["recommendations"]] == [1003, 1017]
    lib = recommend(trained["ckpt"], [1003], k=3).column("item").to_pylist()
    assert [i["item"] for i in res["recommendations"][0]["items"]] == lib
    code, out, _ = _run(["gnn", "recommend", ckpt, "--users", "1003", "--k", "2"], capsys)
    assert code == 0 and out.startswith("user 1003    1  item ")
    code, out, _ = _run(["gnn", "recommend", ckpt, "--evaluate", "test", "--ks", "1,10",
                         "--json"], capsys)
    assert code == 0
    m = json.loads(out.strip().splitlines()[-1])
    want = evaluate(trained["ckpt"], ks=[1, 10])
    assert m["hits@10"] == pytest.approx(want["hits@10"]) and m["users"] == want["users"]
    assert m["protocol"] == "full, filtered"
    code, _, err = _run(["gnn", "recommend", ckpt, "--users", "1003", "--k", "0"], capsys)
    assert code != 0 and "--k must be a positive integer" in err
    code, _, err = _run(["gnn", "recommend", ckpt, "--evaluate", "train"], capsys)
    assert code != 0 and "error: --evaluate is the history edge set 'train'" in err
    code, _, err = _run(["gnn", "recommend", ckpt, "--evaluate", "test", "--edge-set", "x"],
                        capsys)
    assert code != 0 and "error: --edge-set unknown edge set 'x'" in err
    code, _, err = _run(["gnn", "recommend", ckpt], capsys)
    assert code != 0 and "give exactly one of --users" in err
    # each mode's own flags: the other mode ignored them
    for args, msg in [(["--evaluate", "test", "--k", "3"], "--k applies to --users"),
                      (["--evaluate", "test", "--include-seen"], "--include-seen applies to"),
                      (["--evaluate", "test", "--title-column", "t"], "--title-column applies"),
                      (["--users", "1003", "--ks", "1,5"], "--ks applies to --evaluate, not "
                                                           "--users")]:
        code, _, err = _run(["gnn", "recommend", ckpt, *args], capsys)
        assert code != 0 and msg in err and len(err.strip().splitlines()) == 1, err



def test_movielens_recommendations_show_titles(mirror, tmp_path, capsys):
    from graphsys.gnn.data import open_source

    g = open_source("movielens-100k", mirror=mirror, cache=tmp_path / "cache", split="temporal")
    train(g, TrainConfig(task="link", model="pinsage", hidden=8, epochs=1, fanouts=[3, 3],
                         batches_per_epoch=3, seed=0), out=tmp_path / "run")
    recs = recommend(tmp_path / "run" / "checkpoint", [1, 2], k=5)
    assert recs.column_names == ["user", "rank", "item", "score", "title"]
    # each title is the item's own, read independently from u.item (latin-1)
    lines = (mirror / "movielens-100k" / "u.item").read_bytes().decode("latin-1")
    titles = {int(f[0]): f[1] for f in (ln.split("|") for ln in lines.splitlines() if ln)}
    rows = recs.to_pylist()
    assert len(rows) == 10 and all(r["title"] == titles[r["item"]] for r in rows)
    assert titles[1] == "Toy Story (1995)" and any(not t.isascii() for t in titles.values())
    code, out, _ = _run(["gnn", "recommend", str(tmp_path / "run" / "checkpoint"), "--users",
                         "2", "--k", "5"], capsys)
    assert code == 0
    assert [ln.split("  ")[-1] for ln in out.strip().splitlines()[-5:]] == [
        r["title"] for r in rows if r["user"] == 2]


def test_link_task_selects_on_the_stored_valid_edge_set(trained, tmp_path, device):
    """A graph with a ``valid`` edge set: the link task validates on it and tests on
    ``test`` (as ``evaluate`` ranks them from the checkpoint), training on all of
    ``train``."""
    res = train(trained["work"] / "g", TrainConfig(task="link", model="pinsage", hidden=8,
                                                   epochs=3, fanouts=[3, 3], seed=1),
                out=tmp_path / "run", device=device)
    ckpt = tmp_path / "run" / "checkpoint"
    best = max(res.history, key=lambda r: r["val_mrr"])
    assert [r["best"] for r in res.history].count(True) >= 1
    valid = evaluate(ckpt, edge_set="valid", ks=[10])
    assert valid["users"] == int(trained["masks"]["valid"].sum())
    assert best["val_mrr"] == pytest.approx(valid["mrr"], abs=1e-5)
    assert best["val_hits@10"] == pytest.approx(valid["hits@10"], abs=1e-5)
    test = evaluate(ckpt, ks=[10])
    assert res.metrics["mrr"] == pytest.approx(test["mrr"], abs=1e-5)
    assert res.metrics["hits@10"] == pytest.approx(test["hits@10"], abs=1e-5)


def test_link_task_refuses_a_valid_edge_set_without_training_edges(tmp_path):
    from graphsys.errors import GraphsysError

    ingest_sources([EdgeSource(table=pa.table({"src": [0, 0, 1, 1], "dst": [5, 6, 5, 7]}),
                               edge_set="valid", relation="rated")], tmp_path / "g",
                   IngestOptions(relation_types=[RelationType("rated", "user", "item")]))
    with pytest.raises(GraphsysError, match="has a 'valid' edge set but no training edge set"):
        train(tmp_path / "g", TrainConfig(task="link", model="pinsage", hidden=8, epochs=1,
                                          fanouts=[2]))


def test_link_task_refuses_a_split_without_test_or_validation_interactions(tmp_path):
    """``train`` and ``valid`` edge sets, no ``test``: the test metrics were the kept
    model's validation metrics (mrr 0.2608, the best val_mrr, reported as the test's);
    users with fewer than 3 interactions and no ``valid`` edge set trained an epoch before
    the first evaluation raised. Both are refused before training, as the node, link,
    temporal and R-GCN tasks refuse an empty test or validation split."""
    from graphsys.errors import GraphsysError

    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 30, 600), rng.integers(100, 140, 600)
    ingest_sources([EdgeSource(table=pa.table({"src": users[a:b], "dst": items[a:b]}),
                               relation="rated", edge_set=name)
                    for name, a, b in [("train", 0, 540), ("valid", 540, 600)]],
                   tmp_path / "g", IngestOptions(
                       relation_types=[RelationType("rated", "user", "item")]))
    cfg = TrainConfig(task="link", model="pinsage", fanouts=[3, 3], hidden=8, epochs=1)
    with pytest.raises(GraphsysError, match="g: no test interaction to hold out"):
        train(tmp_path / "g", cfg)
    ingest_sources([EdgeSource(table=pa.table({"src": [0, 0, 1, 1, 2], "dst": [5, 6, 5, 7, 5]}),
                               relation="rated")], tmp_path / "few",
                   IngestOptions(relation_types=[RelationType("rated", "user", "item")]))
    with pytest.raises(GraphsysError, match="few: no validation interaction to hold out"):
        train(tmp_path / "few", cfg)


@pytest.mark.parametrize("split", ["random", "time"])
def test_held_out_edge_checkpoints_recommend_with_their_decoder(tmp_path, capsys, split):
    """A link checkpoint of held-out edges between users and items (split random or
    time, as MovieLens' ratings would be trained) recommends and evaluates with the scores
    its own run computed: the decoder over the run's final embeddings, brute force."""
    from .conftest import write_bipartite

    g = open_graph(write_bipartite(tmp_path / "g", edge_sets=True))
    res = train(g, TrainConfig(task="link", model="sage", link_split=split, hidden=8,
                               epochs=1, fanouts=[3, 3], link_decoder="mlp", seed=0),
                out=tmp_path / "run")
    ckpt = tmp_path / "run" / "checkpoint"
    z, dec = res.extra["embeddings"], res.extra["decoder"].eval()
    (_, ulo, ihi_u), (_, ilo, ihi) = res.extra["data"].types
    assert ihi_u == ilo
    with torch.no_grad():
        ref = np.array([[float(dec(z[ulo + u], z[ilo + j])) for j in range(ihi - ilo)]
                        for u in range(ilo - ulo)])
    from graphsys.sampling.adjacency import typed_edges

    train_u, train_i, _ = typed_edges(g, "train", "user", "item")     # type-local ids
    users = g.to_internal([0, 1], "user")
    recs = recommend(ckpt, [0, 1], k=5).to_pylist()
    for r, u in zip((0, 1), users):
        row = ref[u].copy()
        row[train_i[train_u == u]] = -np.inf
        want = np.argsort(-row, kind="stable")[:5]
        got = [x for x in recs if x["user"] == r]
        assert [x["item"] for x in got] == g.to_original(want, "item").tolist()
        np.testing.assert_allclose([x["score"] for x in got], row[want], rtol=1e-4,
                                   atol=1e-5)
    test_u, test_i, _ = typed_edges(g, "test", "user", "item")
    n_users = ilo - ulo
    want = _brute_metrics(ref, [test_i[test_u == u] for u in range(n_users)],
                          [train_i[train_u == u] for u in range(n_users)], [5, 10])
    got = evaluate(ckpt, ks=[5, 10])
    for key in ("hits@5", "recall@10", "mrr", "users"):
        assert got[key] == pytest.approx(want[key], abs=1e-5), key
    code, out, err = _run(["gnn", "recommend", str(ckpt), "--evaluate", "test", "--ks", "5",
                           "--json"], capsys)
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["hits@5"] == pytest.approx(got["hits@5"])
    code, out, err = _run(["gnn", "recommend", str(ckpt), "--users", "0", "--k", "2"], capsys)
    assert code == 0 and len(out.strip().splitlines()) == 2, err


def test_a_one_type_link_checkpoint_is_refused_in_one_line(tmp_path):
    from .conftest import write_sbm

    train(write_sbm(tmp_path / "sbm"), TrainConfig(task="link", model="sage", hidden=8,
                                                   epochs=1, fanouts=[3]), out=tmp_path / "r")
    with pytest.raises(ParameterError, match="link checkpoint on one entity type .* "
                                             "users and items of two entity types"):
        recommend(tmp_path / "r" / "checkpoint", [0], k=3)


def test_movielens_link_checkpoints_of_every_split_recommend(mirror, tmp_path, capsys):
    """MovieLens-100k with its temporal edge sets: a checkpoint trained with each link
    split recommends (with titles) and evaluates the test edge set."""
    from graphsys.gnn.data import open_source

    g = open_source("movielens-100k", mirror=mirror, cache=tmp_path / "cache", split="temporal")
    for split in ("random", "time"):
        train(g, TrainConfig(task="link", model="sage", link_split=split, hidden=8,
                             epochs=1, fanouts=[2], batches_per_epoch=2,
                             link_eval_negatives=20, seed=0), out=tmp_path / split)
        ckpt = str(tmp_path / split / "checkpoint")
        code, out, err = _run(["gnn", "recommend", ckpt, "--users", "1", "--k", "3"], capsys)
        assert code == 0, err
        assert len(out.strip().splitlines()) == 3 and "(19" in out     # titles with a year
        code, out, err = _run(["gnn", "recommend", ckpt, "--evaluate", "test", "--json"],
                              capsys)
        assert code == 0, err
        m = json.loads(out.strip().splitlines()[-1])
        assert m["users"] == 943 and 0 <= m["hits@10"] <= 1


def test_recommend_on_the_graph_grown_since_training(trained, tmp_path):
    """New items appended after training are scored and recommended beside the old
    ones."""
    import shutil

    from graphsys.storage.append import append_edges

    grown = tmp_path / "g"
    shutil.copytree(trained["work"] / "g", grown)
    new = pa.table({"src": np.array([1003, 1003, 1017, 1005]),
                    "dst": np.array([600, 601, 600, 602])})
    append_edges(grown, [EdgeSource(table=new, edge_set="day2", relation="rated")])
    g = open_graph(grown)
    recs = recommend(trained["ckpt"], [1010], k=N_ITEMS + 3, graph=g, exclude_seen=False)
    assert sorted(recs.column("item").to_pylist()) == list(range(500, 500 + N_ITEMS)) + [
        600, 601, 602]
    # brute force: the grown graph's item embeddings, old items' learned bias, new ones' 0
    embed_checkpoint(trained["ckpt"], tmp_path / "emb", graph=g)
    ids = list(range(500, 500 + N_ITEMS)) + [600, 601, 602]
    z = Embeddings.load(tmp_path / "emb", g).vectors(ids, "item")
    unit = z / np.linalg.norm(z, axis=1, keepdims=True)
    trained_bias = load_checkpoint(trained["ckpt"])[0]["input.bias"].numpy()
    old_g = open_graph(trained["work"] / "g")
    bias = np.concatenate([trained_bias[old_g.to_internal(ids[:N_ITEMS], "item")], [0, 0, 0]])
    seen = trained["items"][trained["masks"]["train"] & (trained["users"] == 1010)] - 500
    q = unit[seen].mean(0)
    want = dict(zip(ids, unit @ (q / np.linalg.norm(q)) + bias))
    for item, score in zip(recs.column("item").to_pylist(), recs.column("score").to_pylist()):
        assert score == pytest.approx(want[item], rel=1e-5, abs=1e-5)


def test_item_task_builds_gat_with_the_heads_asked(tmp_path):
    """``heads`` is gat's setting on every task: the item task built its gat with 8 heads
    whatever ``heads`` said (the held-out-edge link and node tasks passed it on)."""
    from .conftest import write_bipartite

    g = write_bipartite(tmp_path / "g")
    res = train(g, TrainConfig(task="link", model="gat", heads=2, fanouts=[3, 3], hidden=8,
                               batch_size=64, epochs=1), out=tmp_path / "run")
    assert res.model.heads == 2
    _, config, _ = load_checkpoint(tmp_path / "run" / "checkpoint")
    assert config["heads"] == 2
