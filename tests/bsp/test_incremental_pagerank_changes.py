"""PageRank and personalized PageRank started from a result before deletions and weight
updates equal networkx on the changed edges (a delta push where the stored CSR index
exists, a warm start elsewhere): deleted edges, a deleted node, weights up and down, a node
left without out-edges, a chain of two changes, and ``graphsys run --init auto``."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import incremental_pagerank
from graphsys.cli import main
from graphsys.plugins import ALGORITHMS
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges, delete_nodes, update_weights

TOL = 1e-10


@pytest.fixture(autouse=True)
def _push_to_the_end(monkeypatch):
    """The push runs to the tolerance on these tiny graphs (its limits are tested apart)."""
    monkeypatch.setattr(incremental_pagerank, "PUSH_WORK_COST", 0.0)
    monkeypatch.setattr(incremental_pagerank, "LOCAL_MAX_SHARE", 1.0)


class Edges:
    """A graph of 2000 weighted edges over 400 ids (some without out-edges), its edges
    kept as a list as they change, for networkx."""

    def __init__(self, tmp_path, *, index=True, undirected=False):
        rng = np.random.default_rng(1)
        self.live = [(int(a), int(b), float(w)) for a, b, w in zip(
            rng.integers(0, 400, 2000), rng.integers(0, 380, 2000), rng.integers(1, 9, 2000))]
        s, d, w = zip(*self.live)
        pq.write_table(pa.table({"src": s, "dst": d, "w": w}), tmp_path / "e.parquet")
        self.path = tmp_path / "g"
        g = graphsys.ingest(tmp_path / "e.parquet", self.path, partitions=2, weight_col="w",
                            undirected=undirected)
        self.undirected = undirected
        if index:
            build_index(g, ("csr",))
        self.nodes = g.node_ids().tolist()

    def graph(self):
        return open_graph(self.path)

    def delete(self, pairs):
        delete_edges(self.path, [a for a, _ in pairs], [b for _, b in pairs])
        gone = set(pairs) | ({(b, a) for a, b in pairs} if self.undirected else set())
        self.live = [e for e in self.live if (e[0], e[1]) not in gone]

    def delete_node(self, node):
        delete_nodes(self.path, [node])
        self.live = [e for e in self.live if node not in e[:2]]

    def update(self, pairs, weights):
        update_weights(self.path, [a for a, _ in pairs], [b for _, b in pairs], weights)
        new = dict(zip(pairs, weights))
        self.live = [(a, b, new.get((a, b), w)) for a, b, w in self.live]

    def reference(self, weighted, personalization=None):
        ref = nx.MultiGraph() if self.undirected else nx.MultiDiGraph()
        ref.add_nodes_from(self.nodes)
        ref.add_weighted_edges_from(self.live)
        return nx.pagerank(ref, tol=1e-15, max_iter=2000, personalization=personalization,
                           weight="weight" if weighted else None)


def _l1(result, pr):
    got = result.to_dict()
    return sum(abs(got[k] - pr[k]) for k in pr)


def _pagerank(g, weighted, **kwargs):
    return bsp.pagerank(g, tol=TOL, weighted=weighted, **kwargs)


@pytest.mark.parametrize(("weighted", "undirected"), [(False, False), (True, False),
                                                     (True, True)])
def test_deleted_edges_are_pushed_to_networkx(tmp_path, weighted, undirected):
    e = Edges(tmp_path, undirected=undirected)
    before = _pagerank(e.graph(), weighted).to_table()
    e.delete([(a, b) for a, b, _ in e.live[3:200:20]])  # 10 pairs, 0.5 %
    got = _pagerank(e.graph(), weighted, init=before)
    assert got.stats.start == "delta", got.stats.method
    # (an undirected pair is deleted in both directions)
    assert f"{10 * (1 + undirected)} deleted pairs" in got.stats.method
    assert got.stats.residual < TOL
    assert _l1(got, e.reference(weighted)) < 10 * TOL
    assert abs(got.values.sum() - 1.0) < 1e-12


def test_a_deleted_node_and_a_node_left_dangling(tmp_path):
    e = Edges(tmp_path)
    before = _pagerank(e.graph(), True).to_table()
    out = {}
    for a, b, _ in e.live:
        out.setdefault(a, set()).add(b)
    lonely = next(a for a, targets in sorted(out.items()) if len(targets) == 2)
    e.delete([(lonely, b) for b in sorted(out[lonely])])  # its last out-edges
    e.delete_node(e.live[0][1])  # every edge of a node; the node stays
    g = e.graph()
    assert g.num_nodes() == len(e.nodes)
    assert g.degrees()[g.to_internal([lonely])[0]] == 0  # now dangling
    got = _pagerank(g, True, init=before)
    assert got.stats.start == "delta", got.stats.method
    assert _l1(got, e.reference(True)) < 10 * TOL


def test_weights_up_and_down(tmp_path):
    e = Edges(tmp_path)
    before = _pagerank(e.graph(), True).to_table()
    pairs = sorted({(a, b) for a, b, _ in e.live[5:300:25]})
    e.update(pairs, [0.5 if k % 2 else 20.0 for k in range(len(pairs))])
    got = _pagerank(e.graph(), True, init=before)
    assert got.stats.start == "delta" and "re-weighted" in got.stats.method
    assert _l1(got, e.reference(True)) < 10 * TOL
    # an unweighted run reads no weight: the same ranks as before, to the tolerance
    plain = _pagerank(e.graph(), False, init=_pagerank(e.graph(), False).to_table())
    assert _l1(plain, e.reference(False)) < 10 * TOL


def test_personalized_pagerank_after_a_deletion(tmp_path):
    e = Edges(tmp_path)
    ppr = ALGORITHMS.get("ppr")
    source = e.live[0][0]
    before = ppr.run(e.graph(), source, tol=TOL, weighted=False).to_table()
    e.delete([(a, b) for a, b, _ in e.live[0:200:25]])  # the source's first edge among them
    got = ppr.run(e.graph(), source, tol=TOL, weighted=False, init=before)
    assert got.stats.start == "delta", got.stats.method
    assert _l1(got, e.reference(False, {source: 1.0})) < 10 * TOL


def test_the_python_function_starts_from_a_previous_result(tmp_path):
    """``bsp.personalized_pagerank(g, [s], init=...)`` starts as ``graphsys run ppr
    --init`` does (it took no ``init``, and its results recorded no run to start from);
    several sources or weights, which a result does not record, refuse ``init``."""
    e = Edges(tmp_path)
    source = e.live[0][0]
    before = bsp.personalized_pagerank(e.graph(), [source], tol=TOL, weighted=False)
    e.delete([(a, b) for a, b, _ in e.live[0:200:25]])
    got = bsp.personalized_pagerank(e.graph(), source, tol=TOL, weighted=False,
                                    init=before.to_table())
    assert got.stats.start == "delta", got.stats.method
    assert _l1(got, e.reference(False, {source: 1.0})) < 10 * TOL
    for weights in ([1.0], None):
        with pytest.raises(graphsys.errors.ParameterError, match="^init starts a person"):
            bsp.personalized_pagerank(e.graph(), [source] * (1 + (weights is None)),
                                      weights=weights, init=before)


def test_a_chain_of_two_changes(tmp_path):
    """A delta result after a deletion starts the next delta run after an update, a
    deletion and an append."""
    e = Edges(tmp_path)
    first = _pagerank(e.graph(), True).to_table()
    e.delete([(a, b) for a, b, _ in e.live[1:100:20]])
    second = _pagerank(e.graph(), True, init=first)
    assert second.stats.start == "delta"
    second = second.to_table()  # before the graph changes again
    e.update([(a, b) for a, b, _ in e.live[7:70:21]], [3.5, 0.25, 11.0])
    e.delete([(a, b) for a, b, _ in e.live[500:600:50]])
    pq.write_table(pa.table({"src": [5, 399], "dst": [6, 401], "w": [2.0, 4.0]}),
                   tmp_path / "day2.parquet")
    graphsys.ingest(tmp_path / "day2.parquet", e.path, append=True, edge_set="day2",
                    weight_col="w")
    e.live += [(5, 6, 2.0), (399, 401, 4.0)]
    e.nodes.append(401)
    third = _pagerank(e.graph(), True, init=second)
    assert third.stats.start == "delta", third.stats.method
    assert "2 new edges, 2 deleted pairs, 3 re-weighted" in third.stats.method
    assert _l1(third, e.reference(True)) < 10 * TOL


def test_warm_start_where_the_push_does_not_apply(tmp_path):
    e = Edges(tmp_path, index=False)
    before = _pagerank(e.graph(), False).to_table()
    e.delete_node(e.live[0][0])
    got = _pagerank(e.graph(), False, init=before)
    assert got.stats.start == "warm" and "graphsys index --csr" in got.stats.method
    assert _l1(got, e.reference(False)) < 10 * TOL
    e.delete([(a, b) for a, b, _ in e.live[:100]])  # 5 %: above the push's 1 %
    assert _pagerank(e.graph(), False, init=got.to_table()).stats.start == "warm"


def test_cli_init_auto_after_graphsys_delete(tmp_path, capsys):
    e = Edges(tmp_path)
    out = tmp_path / "ranks.parquet"
    run = ["run", "pagerank", str(e.path), "--tol", str(TOL), "--out", str(out),
           "--overwrite"]
    assert main(run) == 0
    a, b, _ = e.live[0]
    (tmp_path / "gone.tsv").write_text(f"{a}\t{b}\n")
    assert main(["delete", str(e.path), "--edges", str(tmp_path / "gone.tsv")]) == 0
    e.live = [x for x in e.live if (x[0], x[1]) != (a, b)]
    capsys.readouterr()
    assert main(run) == 0
    assert "(incremental: delta push)" in capsys.readouterr().out
    got = dict(zip(*pq.read_table(out).to_pydict().values()))
    pr = e.reference(True)
    assert sum(abs(got[k] - pr[k]) for k in pr) < 10 * TOL
