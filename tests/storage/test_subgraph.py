"""Subgraphs (induced, by edges, ego networks, by a node-column predicate) against
NetworkX's, keeping isolated members, original ids, node columns, weights, relations and
edge columns; written atomically to a directory or to a temporary one."""

from __future__ import annotations

import gc
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import graphsys
from graphsys import open_graph
from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources


def stored(tmp: Path, seed: int, *, undirected: bool, partitions: int = 3):
    """A random graph with sparse int ids, weights, an edge column and node columns; and
    its NetworkX twin (a multigraph: parallel edges kept)."""
    rng = np.random.default_rng(seed)
    n, m = 40, 90
    ids = np.sort(rng.choice(1000, n, replace=False))
    s, d = ids[rng.integers(0, n, m)], ids[rng.integers(0, n, m)]
    w = rng.random(m).astype(np.float32)
    ts = rng.integers(0, 100, m)
    nodes = pa.table({"id": ids, "label": rng.integers(-1, 3, n),
                      "feat": pa.FixedSizeListArray.from_arrays(
                          pa.array(rng.random(2 * n).astype(np.float32)), 2),
                      "train": rng.random(n) < 0.5})
    ingest_sources([EdgeSource(table=pa.table({"src": s, "dst": d, "weight": w, "ts": ts}),
                               weight_col="weight", edge_columns=["ts"])], tmp / f"g{seed}",
                   IngestOptions(partitions=partitions, undirected=undirected),
                   nodes=[NodeSource(nodes)])
    G = nx.MultiGraph() if undirected else nx.MultiDiGraph()
    G.add_nodes_from(ids.tolist())
    G.add_edges_from((a, b, {"weight": float(x), "ts": int(t)})
                     for a, b, x, t in zip(s.tolist(), d.tolist(), w, ts.tolist()))
    return open_graph(tmp / f"g{seed}"), G, nodes


def edges_of(g) -> list:
    """(src, dst, weight, ts) of every stored edge, by original ids, sorted."""
    ids = g.node_ids()
    rows = []
    for (s, d, _, w), ts in zip(g.iter_edges(), g.edge_column("ts")):
        rows += zip(ids[s].tolist(), ids[d].tolist(), [round(x, 5) for x in w.tolist()],
                    ts.tolist())
    return sorted(rows)


def nx_edges(H, undirected: bool) -> list:
    rows = []
    for a, b, data in H.edges(data=True):
        row = (a, b, round(data["weight"], 5), data["ts"])
        rows.append(row)
        if undirected and a != b:
            rows.append((b, a, row[2], row[3]))
    return sorted(rows)


@pytest.mark.parametrize("undirected", [False, True])
def test_induced_subgraph_keeps_everything(tmp_path, undirected):
    g, G, nodes = stored(tmp_path, 1, undirected=undirected)
    keep = g.node_ids()[::3].tolist() + [int(g.node_ids()[1])]
    h = g.subgraph(keep, tmp_path / "sub")
    assert (tmp_path / "sub" / "manifest.json").is_file()
    H = G.subgraph(keep)
    assert sorted(h.node_ids().tolist()) == sorted(keep)  # isolated members included
    assert edges_of(h) == nx_edges(H, undirected)
    assert h.edge_set().undirected == undirected and h.edge_set().has_weight
    row = {v: i for i, v in enumerate(nodes["id"].to_pylist())}
    rows = pa.array([row[v] for v in h.node_ids().tolist()])
    for col in ("label", "train", "feat"):
        assert h.node_column(col).tolist() == nodes[col].take(rows).to_pylist()
    with pytest.raises(GraphsysError, match="already exists"):
        g.subgraph(keep, tmp_path / "sub")


def test_predicate_mask_and_internal_ids(tmp_path):
    g, G, nodes = stored(tmp_path, 2, undirected=False)
    labels = g.node_column("label")
    h = g.subgraph(where=pc.field("label") >= 1)
    assert h.node_ids().tolist() == g.node_ids()[labels >= 1].tolist()
    assert edges_of(h) == nx_edges(G.subgraph(h.node_ids().tolist()), False)
    both = g.subgraph(g.node_ids()[:10], where=lambda t: pc.equal(t["train"], True))
    want = g.node_ids()[:10][g.node_column("train")[:10]]
    assert sorted(both.node_ids().tolist()) == sorted(want.tolist())
    mask = labels == 0
    assert g.subgraph(mask).node_ids().tolist() == g.node_ids()[mask].tolist()
    assert g.subgraph([0, 1], internal=True).num_nodes() == 2
    with pytest.raises(ParameterError, match="where cannot be evaluated"):
        g.subgraph(where=pc.field("nope") > 1)
    with pytest.raises(ParameterError, match="nodes or where"):
        g.subgraph()
    with pytest.raises(ParameterError, match="^nodes must hold ids .*not in the graph"):
        g.subgraph([100_000])
    with pytest.raises(ParameterError, match="^center must hold ids .*not in the graph"):
        g.ego_graph(100_000)


@pytest.mark.parametrize("undirected", [False, True])
def test_edge_subgraph_and_ego_graph(tmp_path, undirected):
    g, G, _ = stored(tmp_path, 3, undirected=undirected)
    some = [(a, b) for a, b, _ in list(G.edges(keys=True))[:12]]
    h = g.edge_subgraph(some)
    H = G.edge_subgraph([(a, b, k) for a, b, k in G.edges(keys=True) if (a, b) in set(some)
                         or (undirected and (b, a) in set(some))])
    assert sorted(h.node_ids().tolist()) == sorted(H.nodes)
    assert edges_of(h) == nx_edges(H, undirected)
    heavy = g.edge_subgraph(where=pc.field("weight") > 0.5)
    assert all(w > 0.5 for _, _, w, _ in edges_of(heavy))
    assert len(edges_of(heavy)) == sum(
        (1 if not undirected or a == b else 2) for a, b, x in G.edges(data="weight") if x > 0.5)
    center = int(g.node_ids()[5])
    for radius in (0, 1, 2):
        for und in (False, True):
            e = g.ego_graph(center, radius, undirected=und)
            ref = nx.ego_graph(nx.DiGraph(G) if not undirected else nx.Graph(G), center,
                               radius=radius, undirected=und)
            assert sorted(e.node_ids().tolist()) == sorted(ref.nodes), (radius, und)
            assert edges_of(e) == nx_edges(G.subgraph(ref.nodes), undirected)


def test_string_ids_relations_and_temporary_directory(tmp_path):
    edges = pa.table({"src": ["a", "b", "c", "d"], "dst": ["b", "c", "d", "a"],
                      "rel": ["x", "y", "x", "y"]})
    g = graphsys.from_arrow(edges, tmp_path / "g", rel_col="rel")
    h = g.subgraph(["a", "b", "c"])
    root = Path(h.path).parent
    assert h.node_ids().to_pylist() == ["a", "b", "c"]
    assert [r.name for r in h.relation_types] == ["x", "y"]
    ids = h.node_ids().to_pylist()
    names = [r.name for r in h.relation_types]
    got = sorted((ids[s], ids[d], names[r]) for ss, dd, rr, _ in h.iter_edges()
                 for s, d, r in zip(ss.tolist(), dd.tolist(), rr.tolist()))
    assert got == [("a", "b", "x"), ("b", "c", "y")]
    assert root.is_dir()
    del h
    gc.collect()
    assert not root.exists()  # the temporary directory went with its Graph
    with pytest.raises(GraphsysError, match="no nodes"):
        g.subgraph(np.zeros(4, bool))
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_engines_run_on_a_subgraph(tmp_path):
    from graphsys import bsp

    G = nx.karate_club_graph()
    g = graphsys.from_networkx(G, tmp_path / "k", node_attrs=())
    ego = g.ego_graph(0, 2)
    keep = [v for v in ego.node_ids().tolist() if v < 20]
    h = ego.subgraph(keep)
    ref = nx.pagerank(G.subgraph(keep), weight=None, tol=1e-13)
    res = bsp.pagerank(h, tol=1e-10, weighted=False)
    assert res.to_dict() == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("undirected", [False, True])
def test_edge_subgraph_keys_pairs_past_the_int64_product(tmp_path, monkeypatch, undirected):
    """The chosen pairs were keyed ``u * n + v`` in int64, which wraps from about 3.04e9
    nodes: pairs (2**31, 0) and (0, 0) of a 2**33-node graph shared a key, so the wrong
    edges were kept. Keys now switch to (u, v) records past that size; forced here on a
    small graph, they keep the same edges."""
    from graphsys.storage import edge_changes

    g, G, _ = stored(tmp_path, 4, undirected=undirected)
    some = [(a, b) for a, b, _ in list(G.edges(keys=True))[:12]]
    want = edges_of(g.edge_subgraph(some))
    monkeypatch.setattr(edge_changes, "MAX_PACKED_NODES", 1)
    assert edge_changes.node_pair_keys(np.array([1]), np.array([0]), 3).dtype.names
    assert edges_of(g.edge_subgraph(some)) == want


def test_internal_ids_are_read_never_cast(tmp_path):
    """Internal ids (``internal=True``) were cast to int64: 0.5 and 1.9 chose nodes 0 and
    1, True node 1, the text "1" node 1, and a torch bool mask read as the ids 1 and 0.
    Now each is refused in one line naming the parameter, and a torch mask is a mask."""
    import torch

    g, _, _ = stored(tmp_path, 4, undirected=False, partitions=2)
    n, ids = g.num_nodes(), g.node_ids()
    for bad in ([0.5, 1], [True], [1.9], ["1"], [float("nan")]):
        with pytest.raises(ParameterError, match="^nodes must hold integer internal ids"):
            g.subgraph(bad, internal=True)
        with pytest.raises(ParameterError, match="^center must hold integer internal ids"):
            g.ego_graph(bad[0], 1, internal=True)
        with pytest.raises(ParameterError, match="^edges must hold integer internal ids"):
            g.edge_subgraph([(bad[0], 1)], internal=True)
    with pytest.raises(ParameterError, match=f"^edges holds internal id -1, outside 0..{n - 1}"):
        g.edge_subgraph([(-1, 1)], internal=True)
    with pytest.raises(ParameterError, match=f"^center holds internal id {n}, outside 0..{n - 1}"):
        g.ego_graph(n, 1, internal=True)  # named the storage function's "centers"
    mask = np.zeros(n, bool)
    mask[[0, 2, 5]] = True
    for m in (torch.from_numpy(mask), mask):
        for internal in (False, True):
            assert g.subgraph(m, internal=internal).node_ids().tolist() == ids[mask].tolist()
    assert g.subgraph(np.int32(3), internal=True).node_ids().tolist() == [ids[3]]
    assert g.subgraph(int(ids[3])).node_ids().tolist() == [ids[3]]  # one id: no TypeError
    with pytest.raises(GraphsysError, match="are integers; got True"):
        g.edge_subgraph([(True, int(ids[1]))])  # a bool among original ids too
