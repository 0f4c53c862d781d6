"""docs/growing.md runs as written: its ``python`` blocks are executed in order in one
namespace, then their answers are checked: the grown graph reads as a fresh ingest of both
days, the started runs equal networkx on the union, the old model's rows are its trained
ones; against brute force on the guide's events, the view's edges, the split's sides, every
sampled neighbour, the model's protocol."""

from __future__ import annotations

import collections
import datetime

import networkx as nx
import numpy as np
import pytest

import graphsys
from graphsys import bsp
from graphsys.embed.checkpoint import CheckpointStorage, load_npy


@pytest.fixture(scope="module")
def guide(run_guide):
    return run_guide("growing.md")


def _unix(day: str) -> int:
    return int(datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.UTC).timestamp())


def test_view_is_the_edges_until_the_date(guide):
    t = guide["events"]["timestamp"].to_numpy()
    assert guide["june"].num_edges() == (t <= _unix("2004-06-01")).sum()
    assert len(guide["ranks_june"].to_table()) == guide["msgs"].num_nodes()


def test_windows_are_the_edges_between_the_dates(guide):
    t = guide["events"]["timestamp"].to_numpy()
    june, sept = _unix("2004-06-01"), _unix("2004-09-01")
    assert guide["summer"].num_edges() == ((t > june) & (t <= sept)).sum()
    assert guide["autumn"].num_edges() == (t > sept).sum()
    got = sorted(int(x) for c in guide["summer"].edge_column("timestamp") for x in c)
    assert got == sorted(t[(t > june) & (t <= sept)].tolist())


def test_split_sides_by_brute_force(guide):
    t = guide["t"]
    lo, hi = _unix("2004-09-01"), _unix("2004-10-01")
    np.testing.assert_array_equal(guide["train_mask"], t < lo)
    np.testing.assert_array_equal(guide["test_mask"], t >= hi)


def test_sampled_events_are_the_latest_earlier_ones(guide):
    msgs, hop = guide["msgs"], guide["hop"]
    s, d, t = (np.concatenate(x) for x in zip(*[
        (a, b, c) for (a, b, _, _), c in zip(msgs.iter_edges(), msgs.edge_column("timestamp"))]))
    for i, (node, at) in enumerate(zip(guide["seeds"], guide["when"])):
        ids = np.flatnonzero(((s == node) | (d == node)) & (t < at))
        ids = ids[np.lexsort((ids, t[ids]))][-5:]
        np.testing.assert_array_equal(hop.eid[i, :hop.count[i]], ids)


def test_tgn_states_its_protocol_and_learns(guide):
    run = guide["tgn_run"]
    assert run.protocol == "sampled@50, raw"
    assert run.metrics["auc"] > 0.6 and run.metrics["mrr"] > 1 / 51


def test_jodie_runs_on_the_same_protocol(guide):
    run = guide["jodie_run"]
    assert run.model.config()["model"] == "jodie" and run.protocol == "sampled@50, raw"
    assert 0 < run.metrics["mrr"] <= 1 and 0 <= run.metrics["auc"] <= 1


def _union(ns):
    d1, d2 = ns["day1"], ns["day2"]
    return (np.concatenate([d1["src"], d2["src"]]), np.concatenate([d1["dst"], d2["dst"]]))


def test_grown_graph_reads_as_a_fresh_ingest(guide, tmp_path):
    src, dst = _union(guide)
    fresh = graphsys.from_numpy(src, dst, tmp_path / "fresh", partitions=4)
    g = guide["g"]
    assert g.num_edges() == fresh.num_edges() == len(src)
    a, b = bsp.pagerank(g, tol=1e-10).to_dict(), bsp.pagerank(fresh, tol=1e-10).to_dict()
    assert a.keys() == b.keys() and max(abs(a[k] - b[k]) for k in a) < 1e-12


def test_started_runs_equal_networkx_on_the_union(guide):
    src, dst = _union(guide)
    ref = nx.MultiDiGraph()
    ref.add_edges_from(zip(src.tolist(), dst.tolist()))
    pr = nx.pagerank(ref, tol=1e-12)
    got = guide["ranks"].to_dict()
    assert max(abs(got[k] - pr[k]) for k in pr) < 1e-9
    comps = collections.defaultdict(set)
    for node, label in guide["components"].to_dict().items():
        comps[label].add(node)
    assert sorted(map(sorted, comps.values())) == sorted(
        map(sorted, nx.weakly_connected_components(ref)))


def test_moved_internal_ids_map_to_networkx_ranks_of_day_one(guide):
    """The guide's append moves internal ids; the mapped array is day 1's PageRank by
    original id (networkx), NaN exactly at the new nodes, and the mapping is to_internal's."""
    small, moved = guide["small"], guide["moved"]
    assert (moved != np.arange(len(moved))).any() and small.num_nodes() > len(moved)
    np.testing.assert_array_equal(moved, small.to_internal(guide["old_ids"]))
    ref = nx.MultiDiGraph()
    ref.add_edges_from(zip(guide["day1"]["src"].tolist(), guide["day1"]["dst"].tolist()))
    pr = nx.pagerank(ref, tol=1e-12)
    got = dict(zip(small.node_ids().tolist(), guide["carried"].tolist()))
    assert {k for k, v in got.items() if not np.isnan(v)} == set(pr)
    assert max(abs(got[k] - pr[k]) for k in pr) < 1e-9


def test_old_entities_keep_their_trained_rows(guide):
    emb, work = guide["emb"], guide["work"]
    st = CheckpointStorage(work / "ckpt")
    v = st.read_meta()["version"]
    g = graphsys.open_graph(work / "kg")
    for p, n_old in enumerate(st.read_meta()["entity_types"]["node"]["partition_sizes"]):
        trained = load_npy(st.emb_path("node", p, v))
        ids = g.node_ids("node", partition=p)[:n_old]
        np.testing.assert_array_equal(emb.vectors(ids), trained)
    assert emb.grown == {"node": g.num_nodes() - sum(
        st.read_meta()["entity_types"]["node"]["partition_sizes"])}


def _remaining(ns):
    """The guide's day 1 and day 2 edges less its deleted pairs and its erased node's."""
    src, dst = _union(ns)
    gone = set(zip(ns["day1"]["src"][:50].tolist(), ns["day1"]["dst"][:50].tolist()))
    node = ns["node"]
    return [(a, b) for a, b in zip(src.tolist(), dst.tolist())
            if (a, b) not in gone and node not in (a, b)]


def test_changed_graph_equals_networkx_on_the_remaining_edges(guide):
    src, dst = _union(guide)
    ref = nx.MultiDiGraph()
    ref.add_nodes_from(set(src.tolist()) | set(dst.tolist()))  # the erased node stays
    ref.add_edges_from(_remaining(guide))
    want = nx.pagerank(ref, tol=1e-12)
    got = guide["changed_ranks"].to_dict()
    assert got.keys() == want.keys() and max(abs(got[k] - want[k]) for k in want) < 1e-9
    # the ranks from before the deletions, started on the changed graph (warm: no CSR)
    started = guide["changed_from"]
    assert started.stats.start == "warm" and started.to_dict().keys() == want.keys()
    assert sum(abs(started.to_dict()[k] - want[k]) for k in want) < 1e-8
    assert guide["gone"].missing == 0 and guide["erased"].edges > 0


def test_compaction_keeps_the_answers(guide):
    h = guide["h"]
    assert h.edge_sets == ["default"] and h.num_edges() == len(_remaining(guide))
    np.testing.assert_allclose(guide["compacted_ranks"].values,
                               guide["changed_ranks"].values, rtol=1e-12, atol=0)


def test_updated_weights_are_read(guide):
    wg, day1 = guide["wg"], guide["day1"]
    raised = set(zip(day1["src"][:10].tolist(), day1["dst"][:10].tolist()))
    want = {}
    for a, b, w in zip(day1["src"].tolist(), day1["dst"].tolist(), guide["weights"].tolist()):
        want.setdefault((a, b), []).append(100.0 if (a, b) in raised else w)
    got = {}
    for s, d, _, w in wg.iter_edges():
        for a, b, x in zip(wg.to_original(s).tolist(), wg.to_original(d).tolist(), w.tolist()):
            got.setdefault((a, b), []).append(x)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}


def test_a_window_of_a_changed_graph_is_the_remaining_stamped_edges(guide):
    ev = guide["events"]
    s, d, t = (ev[c].to_numpy() for c in ("src", "dst", "timestamp"))
    gone = set(zip(s[:100].tolist(), d[:100].tolist()))
    june, sept = _unix("2004-06-01"), _unix("2004-09-01")
    want = sorted((a, b, c) for a, b, c in zip(s.tolist(), d.tolist(), t.tolist())
                  if (a, b) not in gone and june < c <= sept)
    view = guide["kept_summer"]
    got = sorted((a, b, c) for (x, y, _, _), tt in zip(view.iter_edges(),
                                                       view.edge_column("timestamp"))
                 for a, b, c in zip(view.to_original(x).tolist(),
                                    view.to_original(y).tolist(), tt.tolist()))
    assert got == want and guide["retracted"].edges == int(
        sum((a, b) in gone for a, b in zip(s.tolist(), d.tolist())))


def test_tgn_checkpoint_under_tgb_protocol_and_serving_new_events(guide):
    tgb = guide["tgb"]
    assert tgb["protocol"] == "tgb@50 (hist_rnd), filtered"
    assert 0 < tgb["mrr"] <= 1 and tgb["events"]["test"] > 0
    # one batch from the same state: scoring then updating gives the scores of scoring alone
    np.testing.assert_allclose(guide["after"], guide["before"], rtol=1e-6)
    assert guide["scorer"].time == guide["later"] + 60


def test_runs_started_before_the_deletions_repair_and_equal_networkx(guide):
    h, parts, levels = guide["h"], guide["parts"], guide["levels"]  # h: compacted, same edges
    assert parts.stats.start == "repair" and levels.stats.start == "repair"
    ref = nx.DiGraph()
    ref.add_nodes_from(h.node_ids().tolist())
    for s, d, _, _ in h.iter_edges():
        ref.add_edges_from(zip(h.to_original(s).tolist(), h.to_original(d).tolist()))
    comps = collections.defaultdict(set)
    for node, label in parts.to_dict().items():
        comps[label].add(node)
    assert sorted(map(sorted, comps.values())) == sorted(
        map(sorted, nx.weakly_connected_components(ref)))
    hops = nx.single_source_shortest_path_length(ref, guide["origin"])
    assert all(levels.value(k) == hops.get(k, np.inf) for k in ref.nodes)


def _peeled(pairs) -> dict:
    """Core numbers by brute-force peeling (networkx's rule on a multigraph: degree in +
    out, parallel edges each, self-loops never): the node of least degree first."""
    nbrs = collections.defaultdict(collections.Counter)
    for a, b in pairs:
        nbrs[a][b] += 0
        nbrs[b][a] += 0
        if a != b:
            nbrs[a][b] += 1
            nbrs[b][a] += 1
    deg = {v: sum(c.values()) for v, c in nbrs.items()}
    core, k = {}, 0
    while deg:
        v = min(deg, key=deg.get)
        k = max(k, deg.pop(v))
        core[v] = k
        for x, m in nbrs[v].items():
            if x in deg:
                deg[x] -= m
    return core


def test_k_core_started_after_the_append_and_the_deletions_equals_peeling(guide):
    """The guide's k-core runs update the k-order the results before kept, and equal
    brute-force peeling of the edges."""
    src, dst = _union(guide)
    cores, lowered = guide["cores"], guide["lowered"]
    for started in (cores, lowered):
        assert started.stats.start == "repair", started.stats.method
    want = _peeled(zip(src.tolist(), dst.tolist()))
    assert cores.to_dict() == {k: float(v) for k, v in want.items()}
    want = _peeled(_remaining(guide))
    got = lowered.to_dict()
    assert {k: v for k, v in got.items() if k in want} == {k: float(v) for k, v in
                                                         want.items()}
    assert all(v == 0.0 for k, v in got.items() if k not in want)  # the erased node


def test_triangle_counts_updated_after_the_deletions_equal_networkx(guide):
    """The guide's triangle count is updated from the deleted pairs and equals networkx's
    triangles of the remaining edges (the undirected simple view)."""
    t, closed = guide["tg"], guide["closed"]
    assert closed.method.startswith("updated (20 deleted pairs")
    ref = nx.Graph()
    ref.add_nodes_from(t.node_ids().tolist())
    for s, d, _, _ in t.iter_edges():
        ref.add_edges_from((a, b) for a, b in zip(t.to_original(s).tolist(),
                                                  t.to_original(d).tolist()) if a != b)
    assert closed.triangles.to_dict() == nx.triangles(ref)
