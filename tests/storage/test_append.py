"""Appending an edge set with new entities: old ids unchanged, new nodes appended, the new
edges round-trip, bad input refused with one line and the graph left as it was."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from graphsys import open_graph
from graphsys.cli import main
from graphsys.errors import GraphsysError, InputError
from graphsys.storage.append import append_edges
from graphsys.storage.format import RelationType
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def _mapping(graph, etype):
    """original id -> (partition, local offset)."""
    out = {}
    for p in range(graph.num_partitions):
        ids = graph.node_ids(etype, p)
        for k, v in enumerate(ids.tolist() if isinstance(ids, np.ndarray) else ids.to_pylist()):
            out[v] = (p, k)
    return out


def _edges(graph, edge_set):
    """Multiset of (src id, dst id, relation name) of one edge set."""
    rels = graph.relation_types
    ids = {t: {pk: v for v, pk in _mapping(graph, t).items()} for t in graph.entity_types}
    out = collections.Counter()
    for b in graph.buckets("row-major", edge_set):
        for eb in b.batches():
            for k in range(len(eb.src)):
                r = rels[int(eb.rel[k])] if eb.rel is not None else rels[0]
                out[(ids[r.lhs][(b.i, int(eb.src[k]))], ids[r.rhs][(b.j, int(eb.dst[k]))],
                     r.name)] += 1
    return out


@pytest.fixture
def kg(tmp_path):
    rng = np.random.default_rng(1)
    f = tmp_path / "train.tsv"
    f.write_text("".join(f"e{a}\tr{r}\te{b}\n" for a, r, b in
                         zip(rng.integers(0, 60, 500), rng.integers(0, 3, 500),
                             rng.integers(0, 60, 500))))
    ingest_sources([EdgeSource([f], edge_set="train", src_col=0, rel_col=1, dst_col=2)],
                   tmp_path / "g", IngestOptions(partitions=3))
    return tmp_path / "g"


def test_append_keeps_old_ids_and_appends_new_nodes(kg, tmp_path):
    before = open_graph(kg)
    old_map = _mapping(before, "node")
    old_sizes = list(before.partition_sizes("node"))
    old_train = _edges(before, "train")
    new = [("e1", "r0", "n1"), ("n1", "r2", "n2"), ("n3", "r1", "e5"), ("e2", "r1", "e3")]
    f = tmp_path / "new.tsv"
    f.write_text("".join("\t".join(t) + "\n" for t in new))
    report = append_edges(kg, [EdgeSource([f], edge_set="grow", src_col=0, rel_col=1,
                                          dst_col=2)])
    assert report.nodes == {"node": 3} and report.edges == {"grow": 4}
    g = open_graph(kg)
    new_map = _mapping(g, "node")
    for v, pk in old_map.items():
        assert new_map[v] == pk
    sizes = list(g.partition_sizes("node"))
    assert sum(sizes) == sum(old_sizes) + 3 and all(a >= b for a, b in zip(sizes, old_sizes))
    for v in ("n1", "n2", "n3"):
        p, k = new_map[v]
        assert k >= old_sizes[p]
    assert _edges(g, "train") == old_train
    assert _edges(g, "grow") == collections.Counter({(s, d, r): 1 for s, r, d in new})
    assert not list(kg.parent.glob(".g*"))  # no staging left


def test_append_cli_and_existing_edge_set_refused(kg, tmp_path, capsys):
    f = tmp_path / "new.tsv"
    f.write_text("e1\tr0\tz9\n")
    assert main(["ingest", str(f), "--append-to", str(kg), "--edge-set", "more",
                 "--src-col", "0", "--rel-col", "1", "--dst-col", "2"]) == 0
    assert "z9" in _mapping(open_graph(kg), "node")
    manifest = (kg / "manifest.json").read_bytes()
    assert main(["ingest", str(f), "--append-to", str(kg), "--edge-set", "more",
                 "--src-col", "0", "--rel-col", "1", "--dst-col", "2"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'more' already exists" in err[0]
    assert (kg / "manifest.json").read_bytes() == manifest


def test_unknown_relation_refused(kg, tmp_path):
    f = tmp_path / "new.tsv"
    f.write_text("e1\tnew_rel\tz9\n")
    with pytest.raises(InputError, match="unknown relation 'new_rel'"):
        append_edges(kg, [EdgeSource([f], edge_set="x", src_col=0, rel_col=1, dst_col=2)])


def test_id_of_another_entity_type_refused_naming_it(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("u1\ti1\nu2\ti2\n")
    rels = [RelationType("buys", "user", "item")]
    ingest_sources([EdgeSource([f], relation="buys")], tmp_path / "g",
                   IngestOptions(relation_types=rels))
    manifest = (tmp_path / "g" / "manifest.json").read_bytes()
    bad = tmp_path / "bad.tsv"
    bad.write_text("u3\ti3\ni1\ti4\n")  # i1 is an item, used as a user
    with pytest.raises(InputError, match="id 'i1' is an entity of type 'item'.*'user'"):
        append_edges(tmp_path / "g", [EdgeSource([bad], edge_set="x", relation="buys")])
    assert (tmp_path / "g" / "manifest.json").read_bytes() == manifest
    assert not list(tmp_path.glob(".g*"))


def test_string_id_for_integer_type_refused(graph_dir, tmp_path):
    f = tmp_path / "new.tsv"
    f.write_text("1\tabc\n")
    with pytest.raises(InputError, match="id 'abc': entity type 'node' has integer ids"):
        append_edges(graph_dir, [EdgeSource([f], edge_set="x")])


def test_integer_graph_grows_and_old_indexes_are_read_renumbered(graph_dir, tmp_path):
    from graphsys.storage.adjacency_index import build_index

    build_index(open_graph(graph_dir), ("csr", "csc", "push"))
    f = tmp_path / "new.tsv"
    f.write_text("5\t1000\n1000\t1001\n")
    report = append_edges(graph_dir, [EdgeSource([f], edge_set="x")])
    assert report.nodes == {"node": 2}
    g = open_graph(graph_dir)
    # the push layout is dropped, csr/csc stay with the numbering they were built in
    assert sorted(g.manifest.indexes["default"]) == ["csc", "csr"]
    assert not list((graph_dir / "index" / "default").glob("push-*"))
    assert g.manifest.indexes["default"]["csr"].layout == (51, 49)
    for kind, transpose in (("csr", False), ("csc", True)):
        mapped = g.adjacency_index("default", kind)
        built = g.csr("default", transpose=transpose, edge_ids=True)  # from the buckets
        assert mapped.indptr.tolist() == built.indptr.tolist()
        assert mapped.indices.tolist() == built.indices.tolist()
    assert _edges(g, "x") == collections.Counter({(5, 1000, "default"): 1,
                                                  (1000, 1001, "default"): 1})


def test_same_nodes_only_adds_edges(graph_dir, tmp_path):
    sizes = list(open_graph(graph_dir).partition_sizes("node"))
    f = tmp_path / "new.tsv"
    f.write_text("1\t2\n")
    assert append_edges(graph_dir, [EdgeSource([f], edge_set="x")]).nodes == {"node": 0}
    assert list(open_graph(graph_dir).partition_sizes("node")) == sizes


def test_failure_leaves_graph_unchanged(kg, tmp_path, monkeypatch):
    import graphsys.storage.append as append

    manifest = (kg / "manifest.json").read_bytes()
    f = tmp_path / "new.tsv"
    f.write_text("e1\tr0\tz9\n")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(append, "link_unchanged", boom)
    with pytest.raises(GraphsysError, match="nothing changed"):
        append_edges(kg, [EdgeSource([f], edge_set="x", src_col=0, rel_col=1, dst_col=2)])
    assert (kg / "manifest.json").read_bytes() == manifest
    assert not list(kg.parent.glob(".g*"))
    assert open_graph(kg).edge_sets == ["train"]


def test_append_fsyncs_the_files_it_wrote_before_the_manifest(kg, tmp_path, fsynced,
                                                              monkeypatch):
    """Every file the append writes (its new edge set, the grown node partitions) is
    fsynced, file by file, before the new manifest is; the filesystem is not synced whole
    (that waits for other processes' writes too)."""
    import json

    def whole(*a):
        raise AssertionError("a filesystem-wide sync")

    monkeypatch.setattr("os.sync", whole)
    before = json.loads((kg / "manifest.json").read_text())["files"]
    f = tmp_path / "new.tsv"
    f.write_text("e1\tr0\tz9\nz9\tr1\te2\n")
    append_edges(kg, [EdgeSource([f], edge_set="x", src_col=0, rel_col=1, dst_col=2)])
    after = json.loads((kg / "manifest.json").read_text())["files"]
    written = {rel for rel, entry in after.items() if before.get(rel) != entry}
    assert any(rel.startswith("edges/") for rel in written)  # the new buckets
    assert any(rel.startswith("nodes/") for rel in written)  # z9 grew a partition

    def in_staging(path):  # the name inside the staging directory the graph was built in
        parts = path.relative_to(kg.parent.resolve()).parts
        assert parts[0].startswith(".g.staging-"), path
        return "/".join(parts[1:])

    synced = [in_staging(p) for p in fsynced if kg.parent.resolve() in p.parents]
    manifest = next(k for k, rel in enumerate(synced) if rel.startswith(".manifest.json.tmp"))
    assert written <= set(synced[:manifest]), written - set(synced[:manifest])


def test_internal_ids_move_and_kept_arrays_map_by_original_id(tmp_path):
    """An append to a 3-partition graph moves the internal ids of later partitions: a
    previous result (by original id) and an array kept with its node record (grown_ids)
    land on the same nodes as to_internal finds them; a re-ingest of old and new edges, which
    sorts new ids below old ones into the partitions, is refused in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import graphsys
    from graphsys.storage.identity import grown_ids, node_record
    from graphsys.storage.previous import provenance, read_previous, tagged

    rng = np.random.default_rng(3)
    src, dst = rng.integers(100, 160, 300), rng.integers(100, 160, 300)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", partitions=3)
    old_ids, record = g.node_ids(), node_record(g)
    values = old_ids * 0.5                                    # by internal id
    table = tagged(pa.table({"node": old_ids, "value": values}),
                   provenance("pagerank", g, None, params={}))
    new_src, new_dst = rng.integers(0, 190, 40), rng.integers(150, 190, 40)
    pq.write_table(pa.table({"src": new_src, "dst": new_dst}), tmp_path / "d2.parquet")
    grown = graphsys.ingest(tmp_path / "d2.parquet", tmp_path / "g", append=True,
                            edge_set="day2")
    where = grown.to_internal(old_ids)
    assert (where != np.arange(len(old_ids))).any()          # ids moved
    np.testing.assert_array_equal(grown_ids(record, grown, "values"), where)
    prev = read_previous(grown, table, "pagerank")
    np.testing.assert_array_equal(np.flatnonzero(prev.known), np.sort(where))
    np.testing.assert_array_equal(prev.values[where], values)
    assert np.isnan(prev.values[~prev.known]).all() and (~prev.known).sum() == (
        grown.num_nodes() - len(old_ids))
    both = graphsys.from_numpy(np.concatenate([src, new_src]), np.concatenate([dst, new_dst]),
                               tmp_path / "fresh", partitions=3)
    with pytest.raises(GraphsysError, match="values: .*re-ingest"):
        grown_ids(record, both, "values")
