"""Edge set views: a graph grown by appends reads as one edge set in every engine, equal to a
fresh ingest of all its edges (scipy, networkx), with the old indexes read renumbered and
merged; names, shapes and the default view refused or resolved in one line."""

from __future__ import annotations

import collections

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

import graphsys
from graphsys import bsp, open_graph
from graphsys.cli import main
from graphsys.errors import GraphsysError
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.export import export_edges
from graphsys.storage.format import read_manifest
from graphsys.storage.graph import Graph


def _edges(seed: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m) * 3 + 1, rng.integers(0, n, m) * 3 + 1  # sparse ids


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """``g``: day 1 ingested with csr/csc/sym indexes, day 2 appended (new nodes; joins the
    default view) and indexed, day 3 appended apart; ``fresh``: days 1 and 2 ingested at
    once."""
    d = tmp_path_factory.mktemp("views")
    days = [_edges(1, 300, 2000), _edges(2, 400, 300), _edges(3, 450, 250)]
    graphsys.from_numpy(*days[0], d / "g", partitions=3)
    build_index(open_graph(d / "g"), ("csr", "csc", "sym"))
    for k, join in ((1, True), (2, False)):
        pq.write_table(pa.table({"src": days[k][0], "dst": days[k][1]}), d / f"day{k + 1}.pq")
        graphsys.ingest(d / f"day{k + 1}.pq", d / "g", append=True, edge_set=f"day{k + 1}",
                        join=join)
    # day 2's own indexes, built alone: the view's are merged from day 1's and these
    assert sorted(build_index(open_graph(d / "g"), ("csr", "csc", "sym"),
                              edge_sets=["day2"])) == ["day2"]
    src = np.concatenate([days[0][0], days[1][0]])
    dst = np.concatenate([days[0][1], days[1][1]])
    fresh = graphsys.from_numpy(src, dst, d / "fresh", partitions=3)
    build_index(fresh, ("sym",))
    return open_graph(d / "g"), fresh, days, d


def _unindexed(graph) -> Graph:
    g = Graph(graph.path, read_manifest(graph.path))
    g.manifest.indexes = {}
    return g


def _by_original(graph, csr, universe) -> sp.csr_matrix:
    """The adjacency over ``universe`` (sorted original ids), entries counted."""
    pos = np.searchsorted(universe, np.asarray(graph.node_ids()))
    rows = np.repeat(np.arange(len(csr.indptr) - 1), np.diff(csr.indptr))
    n = len(universe)
    return sp.coo_matrix((np.ones(len(rows)), (pos[rows], pos[np.asarray(csr.indices)])),
                         shape=(n, n)).tocsr()


def _same(g, a, fresh, b) -> bool:
    universe = np.sort(np.asarray(g.node_ids()))
    return (_by_original(g, a, universe) != _by_original(fresh, b, universe)).nnz == 0


def _rows_ascend(csr) -> bool:
    return all(np.all(np.diff(csr.indices[a:b]) >= 0)
               for a, b in zip(csr.indptr[:-1], csr.indptr[1:]))


def test_names_resolve_to_views(grown):
    g, *_ = grown
    assert g.edge_set().name == "default,day2" and g.edge_set().members == ("default", "day2")
    assert g.edge_set(["default", "day2"]) is g.edge_set("default,day2")
    assert g.edge_set("day2").members == ()  # one stored edge set is itself
    assert g.edge_set("all").members == ("default", "day2", "day3")
    assert g.num_edges() == 2300 and g.num_edges(["default", "day3"]) == 2250
    assert g.bucket_counts().sum() == 2300
    for bad, match in ((["default", "nope"], "unknown edge set 'nope' \\(edge sets: default, "
                                              "day2, day3\\)"),
                       ("default,default", "named twice"), ([], "empty list"),
                       ([1], "a name or a list of names")):
        with pytest.raises(GraphsysError, match=match):
            g.edge_set(bad)
    assert read_manifest(g.path).version() == 6
    assert read_manifest(g.path).edge_sets["day3"].appended_to == ""


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("indexed", [True, False])
def test_view_csr_equals_a_fresh_ingest_and_scipy(grown, transpose, indexed):
    g, fresh, days, _ = grown
    g = g if indexed else _unindexed(g)
    view = g.csr(transpose=transpose)
    assert _rows_ascend(view)
    want = fresh.csr(transpose=transpose)
    assert _same(g, view, fresh, want)
    src = np.concatenate([days[0][0], days[1][0]])
    dst = np.concatenate([days[0][1], days[1][1]])
    s, t = g.to_internal(src), g.to_internal(dst)
    n = g.num_nodes()
    ref = sp.coo_matrix((np.ones(len(s)), (t, s) if transpose else (s, t)), shape=(n, n))
    assert (view.to_scipy().astype(np.float64) != ref.tocsr()).nnz == 0


def test_merged_sym_index_equals_the_fresh_ones(grown):
    g, fresh, *_ = grown
    merged = g.adjacency_index(kind="sym")
    assert merged is not None and not merged.indices.flags.writeable
    assert _rows_ascend(merged)
    want = fresh.adjacency_index(kind="sym")
    assert _same(g, merged, fresh, want)


def test_old_index_read_renumbered_and_new_one_built_alone(grown, tmp_path):
    g, *_ = grown
    info = g.manifest.indexes["default"]["csr"]
    assert info.layout and sum(info.layout) < g.num_nodes()
    stored = g.adjacency_index("default", "csr")
    built = g.csr("default", edge_ids=True)  # from the buckets
    assert stored.indptr.tolist() == built.indptr.tolist()
    assert stored.indices.tolist() == built.indices.tolist()
    assert g.index_offsets("default", "csc").tolist() == g.csc("default").indptr.tolist()
    # only the edge set without indexes is indexed; the old indexes stay as they are
    copy = tmp_path / "g"
    import shutil

    shutil.copytree(g.path, copy)
    built = build_index(open_graph(copy), ("csr", "csc"))
    assert sorted(built) == ["day3"]
    again = open_graph(copy)
    assert again.manifest.indexes["default"]["csr"].layout == info.layout
    assert again.csr().indices.tolist() == g.csr().indices.tolist()


def test_engines_read_the_default_view(grown):
    g, _, days, d = grown
    src = np.concatenate([days[0][0], days[1][0]]).tolist()
    dst = np.concatenate([days[0][1], days[1][1]]).tolist()
    ref = nx.MultiDiGraph()
    ref.add_nodes_from(g.node_ids().tolist())  # day 3's nodes: isolated in the view
    ref.add_edges_from(zip(src, dst))
    pr = nx.pagerank(ref, tol=1e-12)
    for mode in ("memory", "out-of-core"):
        got = bsp.pagerank(g, mode=mode, tol=1e-11).to_dict()
        assert max(abs(got[k] - pr[k]) for k in pr) < 1e-8
    comps = collections.defaultdict(set)
    for node, label in bsp.wcc(g).to_dict().items():
        comps[label].add(node)
    assert sorted(map(sorted, comps.values())) == sorted(
        map(sorted, nx.weakly_connected_components(ref)))
    lengths = nx.single_source_shortest_path_length(ref, src[-1])
    got = bsp.bfs(g, src[-1], mode="out-of-core").to_dict()
    assert all(got[k] == lengths.get(k, np.inf) for k in ref.nodes)
    assert np.array_equal(g.degrees(direction="in"), np.diff(g.csc().indptr))
    export_edges(g, d / "view.tsv")
    rows = [tuple(map(int, line.split("\t"))) for line in
            (d / "view.tsv").read_text().splitlines()[1:]]
    assert collections.Counter(rows) == collections.Counter(zip(src, dst))


def test_cli_reads_named_views(grown, tmp_path, capsys):
    g, _, days, _ = grown
    out = {}
    for name in ("default,day2", "all"):
        path = tmp_path / f"{name.replace(',', '-')}.parquet"
        assert main(["run", "pagerank", str(g.path), "--edges", name, "--out", str(path),
                     "--quiet", "--tol", "1e-10"]) == 0
        out[name] = pq.read_table(path).to_pydict()
    every = nx.MultiDiGraph()
    every.add_edges_from(zip(*(np.concatenate(x).tolist() for x in zip(*days))))
    pr = nx.pagerank(every, tol=1e-12)
    assert max(abs(v - pr[k]) for k, v in zip(out["all"]["node"], out["all"]["value"])) < 1e-8
    assert main(["run", "wcc", str(g.path), "--edges", "default,nope"]) != 0
    assert "unknown edge set 'nope'" in capsys.readouterr().err


def test_shapes_that_differ_are_refused(grown, tmp_path, capsys):
    g, *_ = grown
    import shutil

    copy = tmp_path / "g"
    shutil.copytree(g.path, copy)
    f = tmp_path / "w.tsv"
    f.write_text("1\t4\t0.5\n4\t7\t2\n")
    with pytest.raises(GraphsysError, match="'w' has weights, 'default' has not: the new "
                                            "edges cannot join the view of 'default'"):
        graphsys.ingest(f, copy, append=True, edge_set="w", weight_col=2)
    assert main(["ingest", str(f), "--append-to", str(copy), "--edge-set", "w",
                 "--weight-col", "2", "--no-join"]) == 0
    with pytest.raises(GraphsysError, match="edge sets 'default' and 'w' cannot be read as "
                                            "one: 'w' has weights, 'default' has not"):
        open_graph(copy).csr("default,w")
    assert open_graph(copy).edge_set().name == "default,day2"  # apart: not in the view


def test_samplers_and_embeddings_read_the_view(grown, tmp_path):
    import graphsys.embed
    from graphsys.sampling.adjacency import homogeneous_adjacency

    g, fresh, *_ = grown
    merged = homogeneous_adjacency(g)  # from the members' sym indexes, merged
    built = homogeneous_adjacency(_unindexed(g))  # from the view's buckets
    assert merged.indptr.tolist() == built.indptr.tolist()
    assert merged.indices.tolist() == built.indices.tolist()
    assert _same(g, merged, fresh, homogeneous_adjacency(fresh))
    seen = collections.Counter()
    for i in range(g.num_partitions):  # what embedding training reads, bucket by bucket
        for j in range(g.num_partitions):
            b = g.bucket(i, j)
            seen[(i, j)] = len(b.src)
            assert len(b) == g.bucket(i, j, "default").num_edges + g.bucket(
                i, j, "day2").num_edges
    assert sum(seen.values()) == 2300
    graphsys.embed.train(g, {"dimension": 4, "num_epochs": 1}, out=tmp_path / "emb")
    meta = (tmp_path / "emb" / "checkpoint.json").read_text()
    assert '"edges": "default,day2"' in meta
