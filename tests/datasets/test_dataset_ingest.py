"""Ingest of real datasets from the mirror, checked against the published counts."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys import open_graph
from graphsys.datasets.loaders import ingest_dataset
from graphsys.storage.ingest import IngestOptions
from graphsys.storage.verify import verify_graph


@pytest.fixture
def ingested(fetched, tmp_path):
    def run(name: str, split: str | None = None, **options):
        out = tmp_path / name
        report, metadata = ingest_dataset(fetched(name), out, IngestOptions(**options), split)
        return open_graph(out), report, metadata

    return run


def test_cora(ingested):
    g, report, metadata = ingested("cora", "random", partitions=2)
    assert g.num_nodes() == 2708 and g.num_edges() == 5429
    feat = g.node_column("feat")
    assert feat.shape == (2708, 1433) and feat.dtype == np.float32
    labels = g.node_column("label")
    assert sorted(np.unique(labels)) == list(range(7))
    sizes = [int(g.node_column(m).sum()) for m in ("train_mask", "val_mask", "test_mask")]
    assert sizes == [140, 500, 1000]
    assert metadata["labels"]["label"] == ["Case_Based", "Genetic_Algorithms",
                                           "Neural_Networks", "Probabilistic_Methods",
                                           "Reinforcement_Learning", "Rule_Learning", "Theory"]
    # cora.cites line "35<TAB>1033": paper 1033 cites paper 35, stored as 1033 -> 35
    src, dst = (np.concatenate(x) for x in zip(*[(s, d) for s, d, _, _ in g.iter_edges()]))
    u, v = g.to_internal([1033, 35])
    assert ((src == u) & (dst == v)).any() and not ((src == v) & (dst == u)).any()
    assert not g.edge_set().undirected
    on_disk = g.manifest.metadata
    assert on_disk["dataset"] == "cora" and on_disk["split"]["seed"] == 0
    assert verify_graph(g.path)["edges"] == 5429


@pytest.mark.parametrize("name,nodes,edges", [("cora", 2708, 10556), ("citeseer", 3327, 9104)])
def test_public_split_is_the_default(ingested, name, nodes, edges):
    """The Planetoid graph: PyG's Planetoid counts (edges in both directions)."""
    g, _, metadata = ingested(name, partitions=2)
    assert g.num_nodes() == nodes and g.num_edges() == edges and g.edge_set().undirected
    assert metadata["split"]["method"] == "public"
    assert int(g.node_column("test_mask").sum()) == 1000
    assert verify_graph(g.path)["edges"] == edges


def test_citeseer_extra_ids(ingested):
    g, _, _ = ingested("citeseer", "random")
    assert g.num_nodes() == 3327 and g.num_edges() == 4732
    labels = g.node_column("label")
    assert int((labels == -1).sum()) == 15
    assert not g.node_column("feat")[labels == -1].any()


def test_fb15k_237(ingested):
    g, report, _ = ingested("fb15k-237")
    assert g.num_nodes() == 14541 and len(g.relation_types) == 237
    assert {e: g.num_edges(e) for e in g.edge_sets} == {
        "train": 272115, "valid": 17535, "test": 20466}
    ids = g.node_ids()
    assert not any(i.endswith("\r") for i in ids.to_pylist())
    assert "/m/027rn" in ids.to_pylist()
    assert not any(r.name.endswith("\r") for r in g.relation_types)


def test_movielens(ingested):
    g, _, metadata = ingested("movielens-100k")
    assert (g.num_nodes("user"), g.num_nodes("item")) == (943, 1682)
    assert g.num_edges() == 100000
    assert [(r.name, r.lhs, r.rhs) for r in g.relation_types] == [("rated", "user", "item")]
    weights = np.concatenate([w for _, _, _, w in g.iter_edges()])
    assert np.bincount(weights.astype(int)).tolist() == [0, 6110, 11370, 27145, 34174, 21201]
    assert g.node_column("feat", "item").shape == (1682, 19)
    assert metadata["licence"]["redistribute"] is False
    # rating and timestamp kept beside the edges, row for row with them
    ratings = np.concatenate(list(g.edge_column("rating")))
    np.testing.assert_array_equal(ratings, weights.astype(np.int64))
    ts = np.concatenate(list(g.edge_column("timestamp")))
    assert ts.dtype == np.int64 and (ts.min(), ts.max()) == (874724710, 893286638)
    # titles per item id, non-ASCII ones decoded from the file's latin-1
    titles = g.string_column("title", "item")
    assert titles.take(g.to_internal([1, 1682], "item")).to_pylist() == [
        "Toy Story (1995)", "Scream of Stone (Schrei aus Stein) (1991)"]
    assert "Misérables, Les (1995)" in titles.to_pylist()


def test_snap_ca_grqc(ingested, registry):
    stats = registry["ca-grqc"].stats
    g, _, _ = ingested("ca-grqc", partitions=2)
    assert g.num_nodes() == stats["nodes"] == 5242
    # undirected: both directions of every pair stored, self-loops once
    pairs = stats["edges"] - stats["self_loops"]
    assert g.num_edges() == 2 * pairs + stats["self_loops"] == stats["edge_lines"]
    es = g.edge_set()
    assert es.undirected and es.dedupe


def test_email_eu_core_labels(ingested, registry):
    g, _, _ = ingested("email-eu-core")
    assert (g.num_nodes(), g.num_edges()) == (1005, 25571)
    assert len(np.unique(g.node_column("label"))) == registry["email-eu-core"].stats["classes"]


def test_luxembourg_osm(ingested, registry):
    stats = registry["luxembourg-osm"].stats
    g, _, _ = ingested("luxembourg-osm")
    assert g.num_nodes() == stats["nodes"]
    assert g.num_edges() == 2 * stats["edges"]
    ids = g.node_ids()
    assert (ids.min(), ids.max()) == (1, 114599)


def test_load_dataset_by_name(tmp_path, mirror, mirror_cache):
    """One call from a registry name to an opened graph, the same graph as the CLI ingests."""
    from graphsys.datasets import load_dataset

    g = load_dataset("email-eu-core", tmp_path / "g", partitions=2, cache=mirror_cache,
                     mirror=mirror, memory_limit="256MB")
    assert g.num_partitions == 2
    assert g.num_nodes() == 1005
    assert g.manifest.metadata["dataset"] == "email-eu-core"


def test_load_dataset_twice_opens_what_is_there(tmp_path, mirror, mirror_cache):
    """The README's snippet run twice: the second call opens the dataset already in the
    directory (it used to fail: "already holds a graph"); a directory holding anything else
    is refused in one line saying what it holds."""
    import json

    import graphsys
    from graphsys.datasets import load_dataset
    from graphsys.errors import GraphsysError

    kw = {"cache": mirror_cache, "mirror": mirror}
    first = load_dataset("collegemsg", tmp_path / "cm", **kw)
    manifest = (tmp_path / "cm" / "manifest.json").read_bytes()
    again = load_dataset("collegemsg", tmp_path / "cm", **kw)
    assert (tmp_path / "cm" / "manifest.json").read_bytes() == manifest   # not re-ingested
    assert again.num_edges() == first.num_edges() == 59835
    assert first.manifest.metadata["ingest_split"] == "random"

    def refused(out, match, **extra):
        with pytest.raises(GraphsysError, match=match) as info:
            load_dataset("collegemsg", out, **kw, **extra)
        assert "\n" not in str(info.value)

    refused(tmp_path / "cm", "in 1 partitions by 'hash', not 2 by 'hash'", partitions=2)
    refused(tmp_path / "cm", "with the random split, not public", split="public")
    graphsys.from_numpy([0, 1], [1, 2], tmp_path / "plain")
    refused(tmp_path / "plain", "holds a graph of no dataset, not dataset 'collegemsg'")
    load_dataset("email-eu-core", tmp_path / "eu", **kw)
    refused(tmp_path / "eu", "holds dataset 'email-eu-core', not dataset 'collegemsg'")
    doc = json.loads(manifest)
    doc["metadata"]["inputs"]["edges"]["sha256"] = "0" * 64
    (tmp_path / "cm" / "manifest.json").write_text(json.dumps(doc))
    refused(tmp_path / "cm", "ingested from files other than the registry's")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_text("{")
    refused(tmp_path / "junk", "holds no readable graph")


def test_load_dataset_unknown_name_lists_the_known(tmp_path):
    from graphsys.datasets import load_dataset
    from graphsys.errors import GraphsysError

    with pytest.raises(GraphsysError, match=r"^unknown dataset 'nope'; known datasets: .*cora"):
        load_dataset("nope", tmp_path / "g")


def _lines(mirror, path: str, sep: str) -> list[list[str]]:
    """The edge lines of a mirror file, split, without a header line (one independent
    reading of the file, with the standard library)."""
    rows = [line.split(sep) for line in (mirror / path).read_text().splitlines() if line]
    return [r for r in rows if r[0].lstrip("-").isdigit()]


@pytest.mark.parametrize("name, path, sep, weighted", [
    ("collegemsg", "snap-temporal/CollegeMsg.txt", " ", False),
    ("bitcoin-alpha", "snap-temporal/soc-sign-bitcoinalpha.csv", ",", True),
    ("bitcoin-otc", "snap-temporal/soc-sign-bitcoinotc.csv", ",", True),
])
def test_snap_temporal(ingested, registry, mirror, name, path, sep, weighted):
    from decimal import Decimal

    stats = registry[name].stats
    g, _, metadata = ingested(name)
    assert (g.num_nodes(), g.num_edges()) == (stats["nodes"], stats["edges"])
    assert {c.name: c.dtype for c in g.edge_set().columns}["timestamp"] == "int64"
    rows = _lines(mirror, path, sep)
    assert len(rows) == stats["edges"]
    # every line is an edge: (src, dst, weight, time) as a multiset, times exact
    want = sorted((int(r[0]), int(r[1]), float(r[2]) if weighted else None,
                   int(Decimal(r[-1]) * 10**6)) for r in rows)
    s, d, w, ts = (np.concatenate(x) for x in zip(*[
        (a, b, c if c is not None else np.zeros(len(a)), t) for (a, b, _, c), t in
        zip(g.iter_edges(), g.edge_column("timestamp"))]))
    us = (np.concatenate(list(g.edge_column("timestamp_us"))) if name == "bitcoin-otc"
          else ts * 10**6)
    assert name == "bitcoin-otc" or "timestamp_us" not in metadata["time"]
    np.testing.assert_array_equal(ts, us // 10**6)            # whole seconds, rounded down
    ids = g.to_original(np.arange(g.num_nodes()))
    got = sorted(zip(ids[s].tolist(), ids[d].tolist(),
                     w.tolist() if weighted else [None] * len(s), us.tolist()))
    assert got == want
    if weighted:
        assert g.edge_set().has_weight and (w.min(), w.max()) == (-10, 10)
