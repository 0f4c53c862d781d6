"""Ingest: round trips against the input multiset, options, partitioning, bounded merge."""

from __future__ import annotations

import collections
import gzip

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphsys import open_graph
from graphsys.errors import GraphsysError
from graphsys.storage.format import RelationType
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources


def edges_of(graph, edge_set=None):
    """Multiset of (src, dst[, rel][, weight]) with original ids, read through the Graph API."""
    ids = {t: graph.node_ids(t) for t in graph.entity_types}
    rels = graph.relation_types
    toff = graph.type_offsets
    out = collections.Counter()
    for s, d, r, w in graph.iter_edges(edge_set):
        for k in range(len(s)):
            rel = rels[r[k]] if r is not None else rels[0]
            src = ids[rel.lhs][s[k] - toff[rel.lhs]]
            dst = ids[rel.rhs][d[k] - toff[rel.rhs]]
            src = src.as_py() if hasattr(src, "as_py") else int(src)
            dst = dst.as_py() if hasattr(dst, "as_py") else int(dst)
            row = (src, dst) + ((rel.name,) if r is not None else ()) + (
                (float(w[k]),) if w is not None else ())
            out[row] += 1
    return out


def random_edges(rng, n_nodes, n_edges):
    return rng.integers(0, n_nodes, n_edges), rng.integers(0, n_nodes, n_edges)


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("partitioner", ["hash", "range", "degree", "fennel"])
def test_round_trip_multiset(tmp_path, partitions, partitioner):
    rng = np.random.default_rng(1)
    s, d = random_edges(rng, 200, 3000)
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{a}\t{b}\n" for a, b in zip(s * 7 + 3, d * 7 + 3)))
    ingest_sources([EdgeSource([f])], tmp_path / "g",
                   IngestOptions(partitions=partitions, partitioner=partitioner))
    g = open_graph(tmp_path / "g")
    assert edges_of(g) == collections.Counter(zip((s * 7 + 3).tolist(), (d * 7 + 3).tolist()))
    assert g.num_nodes() == len(np.unique(np.concatenate([s, d])))
    assert g.manifest.partitioner["name"] == partitioner or partitions == 1


def test_a_negative_seed_is_recorded_as_the_partitioner_used_it(tmp_path):
    """ingest(seed=-1) recorded -1 while the hash placed nodes as seed 2**64 - 1: the
    manifest records the seed used, and the nodes land where the hash formula puts them."""
    from tests.partitioners.test_hash import ref_partition

    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{a}\t{a + 1}\n" for a in range(0, 40, 2)))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=3, seed=-1))
    g = open_graph(tmp_path / "g")
    assert g.manifest.partitioner == {"name": "hash", "params": {"seed": (1 << 64) - 1}}
    for k in range(3):
        assert {ref_partition(int(i), -1, 3) for i in g.node_ids(partition=k)} == {k}


def test_buckets_sorted_and_partition_consistent(tmp_path):
    rng = np.random.default_rng(2)
    s, d = random_edges(rng, 500, 5000)
    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": s, "dst": d}), f)
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=4))
    g = open_graph(tmp_path / "g")
    sizes = g.partition_sizes()
    assert sizes.sum() == g.num_nodes()
    for b in g.buckets():
        assert b.src.dtype == np.int32 and b.dst.dtype == np.int32
        key = b.src.astype(np.int64) * 2**32 + b.dst
        assert (np.diff(key) >= 0).all()
        assert b.src.max() < sizes[b.i] and b.dst.max() < sizes[b.j]
    assert g.bucket_counts().sum() == 5000


def test_string_ids_weights_and_gzip(tmp_path):
    f = tmp_path / "e.tsv.gz"
    rows = [("alice", "bob", 1.5), ("bob", "carol", 2.0), ("carol", "alice", 0.25),
            ("dave", "alice", 3.0), ("bob", "carol", 2.0)]
    with gzip.open(f, "wt") as fh:
        fh.write("# a comment\n")
        fh.writelines(f"{a}\t{b}\t{w}\n" for a, b, w in rows)
    ingest_sources([EdgeSource([f], weight_col=2)], tmp_path / "g", IngestOptions(partitions=2))
    g = open_graph(tmp_path / "g")
    assert g.manifest.entity_types["node"].id_type == "string"
    assert edges_of(g) == collections.Counter(rows)
    assert g.to_internal(["carol"]).shape == (1,)
    assert g.to_original(g.to_internal(["dave", "bob"])).to_pylist() == ["dave", "bob"]


def test_undirected_dedupe_self_loops(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n2\t1\n1\t2\n3\t3\n2\t3\n")
    ingest_sources([EdgeSource([f])], tmp_path / "g",
                   IngestOptions(partitions=2, undirected=True, dedupe=True,
                                 drop_self_loops=True))
    g = open_graph(tmp_path / "g")
    assert edges_of(g) == collections.Counter({(1, 2): 1, (2, 1): 1, (2, 3): 1, (3, 2): 1})
    ingest_sources([EdgeSource([f])], tmp_path / "h", IngestOptions(undirected=True))
    h = open_graph(tmp_path / "h")
    # self-loop stored once; each other edge in both directions
    assert edges_of(h) == collections.Counter({(1, 2): 3, (2, 1): 3, (3, 3): 1, (2, 3): 1,
                                               (3, 2): 1})


def test_knowledge_graph_edge_sets_share_node_mapping(tmp_path):
    train = tmp_path / "train.txt"
    test = tmp_path / "test.txt"
    train.write_text("/m/a\tlikes\t/m/b\n/m/b\tknows\t/m/c\n/m/c\tlikes\t/m/a\n")
    test.write_text("/m/a\tknows\t/m/c\n")
    ingest_sources([EdgeSource([train], edge_set="train", src_col=0, rel_col=1, dst_col=2),
                    EdgeSource([test], edge_set="test", src_col=0, rel_col=1, dst_col=2)],
                   tmp_path / "g", IngestOptions(partitions=2))
    g = open_graph(tmp_path / "g")
    assert sorted(g.edge_sets) == ["test", "train"]
    assert [r.name for r in g.relation_types] == ["likes", "knows"]
    assert edges_of(g, "test") == collections.Counter({("/m/a", "/m/c", "knows"): 1})
    assert g.num_edges("train") == 3 and g.num_nodes() == 3


def test_typed_bipartite_graph_with_node_table(tmp_path):
    f = tmp_path / "ratings.tsv"
    f.write_text("1\t10\t5\n2\t10\t3\n1\t11\t4\n")
    users = pa.table({"id": pa.array([1, 2, 3]), "age": pa.array([30, 40, 50])})
    ingest_sources([EdgeSource([f], relation="rated", weight_col=2)], tmp_path / "g",
                   IngestOptions(partitions=2,
                                 relation_types=[RelationType("rated", "user", "item")]),
                   nodes=[NodeSource(users, "user")])
    g = open_graph(tmp_path / "g")
    assert g.num_nodes("user") == 3 and g.num_nodes("item") == 2
    # user 1 and item 10 are different nodes although... ids overlap across types is fine
    age = g.node_column("age", "user")
    assert sorted(zip(g.node_ids("user").tolist(), age.tolist())) == [(1, 30), (2, 40), (3, 50)]
    assert edges_of(g) == collections.Counter({(1, 10, 5.0): 1, (2, 10, 3.0): 1, (1, 11, 4.0): 1})


def test_node_features_labels_masks(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("0\t1\n1\t2\n")
    feats = np.arange(12, dtype=np.float32).reshape(4, 3)
    table = pa.table({
        "id": pa.array([3, 2, 1, 0]),
        "feat": pa.FixedSizeListArray.from_arrays(pa.array(feats[::-1].ravel()), 3),
        "label": pa.array([3, 2, 1, 0]),
        "train_mask": pa.array([True, False, True, False]),
    })
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=3),
                   nodes=[NodeSource(table)])
    g = open_graph(tmp_path / "g")
    ids = g.node_ids()
    assert g.num_nodes() == 4  # node 3 has no edges but is in the table
    np.testing.assert_array_equal(g.node_column("feat"), feats[ids])
    np.testing.assert_array_equal(g.node_column("label"), ids)
    np.testing.assert_array_equal(g.node_column("train_mask"), ids % 2 == 1)


def test_many_runs_merge_with_tiny_memory_limit(tmp_path):
    """A memory limit far below the edge count forces many sorted runs per bucket."""
    rng = np.random.default_rng(3)
    s, d = random_edges(rng, 3000, 300_000)
    w = rng.random(300_000).astype(np.float32)
    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": s, "dst": d, "w": w}), f)
    opts = IngestOptions(partitions=2, memory_limit=2_000_000, dedupe=True)
    ingest_sources([EdgeSource([f], weight_col="w")], tmp_path / "g", opts)
    g = open_graph(tmp_path / "g")
    # reference dedupe keeps the first occurrence of each (src, dst) in input order
    seen = {}
    for a, b, x in zip(s.tolist(), d.tolist(), w.tolist()):
        seen.setdefault((a, b), x)
    assert edges_of(g) == collections.Counter(
        {(a, b, float(np.float32(x))): 1 for (a, b), x in seen.items()})
    for b in g.buckets():
        assert sum(len(x) for x in b.batches()) == b.num_edges
    assert g.manifest.max_batch_rows < 300_000  # batches capped by the memory limit


def test_zero_copy_bucket_access(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n2\t3\n")
    ingest_sources([EdgeSource([f])], tmp_path / "g")
    b = open_graph(tmp_path / "g").bucket(0, 0)
    src = b.src
    assert not src.flags.owndata and not src.flags.writeable
    t = b.to_torch()["src"]
    assert t.data_ptr() == src.ctypes.data


def test_in_memory_table_source_matches_the_file_source(tmp_path):
    """An Arrow table in memory and the same rows in a file ingest to the same graph."""
    import pyarrow as pa

    rng = np.random.default_rng(5)
    pairs = rng.integers(0, 30, (300, 2))
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
    opts = IngestOptions(partitions=3, dedupe=True)
    ingest_sources([EdgeSource([f])], tmp_path / "a", opts)
    table = pa.table({"src": pairs[:, 0], "dst": pairs[:, 1]})
    ingest_sources([EdgeSource(table=table)], tmp_path / "b", opts)
    a, b = open_graph(tmp_path / "a"), open_graph(tmp_path / "b")
    assert np.array_equal(a.bucket_counts(), b.bucket_counts())
    assert np.array_equal(a.node_ids(), b.node_ids())
    for (sa, da, _, _), (sb, db, _, _) in zip(a.iter_edges(), b.iter_edges(), strict=True):
        assert np.array_equal(sa, sb) and np.array_equal(da, db)
    with pytest.raises(GraphsysError, match="paths or an in-memory table, not both"):
        ingest_sources([EdgeSource([f], table=table)], tmp_path / "c", opts)


@pytest.mark.parametrize("ids", ["int", "sparse", "negative", "string"])
@pytest.mark.parametrize("options", [
    {"dedupe": True},
    {"undirected": True, "drop_self_loops": True, "dedupe": True},
    {"undirected": True},
    {"drop_self_loops": True},
])
def test_in_memory_and_on_disk_routes_store_the_same_rows(tmp_path, ids, options):
    """Edge sets that fit the memory limit are grouped in memory, larger ones in runs on
    disk: both keep input order among equal edges, so every bucket holds the same rows in
    the same order (dedupe keeps the same first occurrence, with its weight), and the rows
    match the input multiset (duplicates, self-loops and reversed edges by the options)."""
    rng = np.random.default_rng(11)
    # many duplicates and self-loops; ids that map directly, sparse ones (binary search),
    # negative ones (sorted runs) and strings
    s, d = random_edges(rng, 40, 20_000)
    w = rng.random(20_000).astype(np.float32)
    rel = rng.choice(["a", "b", "c"], 20_000)
    cast = {"int": lambda x: x, "sparse": lambda x: x * 1000, "negative": lambda x: x - 20,
            "string": lambda x: np.char.add("n", x.astype(str))}[ids]
    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": cast(s), "dst": cast(d), "w": w, "rel": rel}), f,
                   row_group_size=3_000)
    src = EdgeSource([f], weight_col="w", rel_col="rel")
    ingest_sources([src], tmp_path / "mem", IngestOptions(partitions=3, **options))
    ingest_sources([src], tmp_path / "disk",
                   IngestOptions(partitions=3, memory_limit=1_000_000, **options))
    mem, disk = open_graph(tmp_path / "mem"), open_graph(tmp_path / "disk")
    assert not any(p.name.startswith(".") for p in (tmp_path / "mem").iterdir())
    for i in range(3):
        for j in range(3):
            a, b = mem.bucket(i, j), disk.bucket(i, j)
            for col in ("src", "dst", "rel", "weight"):
                np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    # dedupe keeps the first occurrence in input order, where a batch's reversed edges
    # (undirected) follow its forward ones: with both, the weight kept is one of the edge's
    expected, weights = collections.Counter(), collections.defaultdict(list)
    for a, b, r, x in zip(cast(s).tolist(), cast(d).tolist(), rel.tolist(), w.tolist()):
        if a == b and options.get("drop_self_loops"):
            continue
        for row in [(a, b, r)] + ([(b, a, r)] if options.get("undirected") and a != b else []):
            if not (options.get("dedupe") and row in expected):
                expected[row] += 1
            weights[row].append(float(np.float32(x)))
    stored = edges_of(mem)
    keys = collections.Counter()
    for row, n in stored.items():
        keys[row[:3]] += n
    assert keys == expected
    for row in stored:
        if options.get("dedupe") and not options.get("undirected"):
            assert row[3] == weights[row[:3]][0]
        else:
            assert row[3] in weights[row[:3]]


def test_csv_quoted_first_line_and_byte_order_mark(tmp_path):
    """A headerless CSV whose first line quotes a comma ('"a,b","c"') was refused ("expected
    3 columns, found 2": its columns were counted by a plain split), and a spreadsheet
    export's UTF-8 byte order mark made the first header name '\\ufeffs', so ``src_col="s"``
    was "unknown"; the CSV readers (Python's csv module agrees) read both files."""
    quoted = tmp_path / "q.csv"
    quoted.write_text('"a,b","c"\n"c","a,b"\n')
    ingest_sources([EdgeSource([quoted])], tmp_path / "q")
    assert edges_of(open_graph(tmp_path / "q")) == {("a,b", "c"): 1, ("c", "a,b"): 1}
    bom = tmp_path / "b.csv"
    bom.write_bytes("\ufeffs,d,w\n1,2,0.5\n".encode())
    ingest_sources([EdgeSource([bom], src_col="s", dst_col="d", weight_col="w")],
                   tmp_path / "b")
    assert edges_of(open_graph(tmp_path / "b")) == {(1, 2, 0.5): 1}


@pytest.mark.parametrize("assignment", [[0, 1, 2**32], [0, 1.5, 0], [0, 1]])
def test_a_partitioner_assignment_is_checked_before_its_int32_cast(tmp_path, monkeypatch,
                                                                    assignment):
    """A plug-in partitioner answering 2**32 for a node of a 2-partition ingest had it
    wrapped to partition 0, and 1.5 cut to 1, with no error; the answer is checked as
    returned."""
    from graphsys.storage import ingest_job
    from partitioners import HashPartitioner

    class Answer(HashPartitioner):
        name = "answer"

        def assign(self, ctx):
            return np.array(assignment)

    monkeypatch.setattr(ingest_job.partitioners, "get_partitioner",
                        lambda name, p, seed=0, **kw: Answer(p, seed=seed))
    with pytest.raises(GraphsysError, match=r"^partitioner 'answer' returned an invalid "
                                            r"assignment \(integers in \[0, 2\) expected"):
        ingest_sources([EdgeSource(table=pa.table({"src": [1, 2], "dst": [2, 3]}))],
                       tmp_path / "g", IngestOptions(partitions=2))
    assert not (tmp_path / "g").exists()


def test_a_node_table_alone_is_an_edgeless_graph(tmp_path):
    """A node table with no edge source was ingested with no edge set, and every reader
    then failed with "graph has edge sets []: name one" (num_edges, csr, to_scipy,
    pagerank, export). It is now the edgeless graph from_numpy writes for the same nodes:
    an empty ``default`` edge set (PageRank 1/3 each, as networkx on 3 isolated nodes)."""
    import graphsys
    from graphsys import bsp

    ingest_sources([], tmp_path / "g", IngestOptions(partitions=2),
                   nodes=[NodeSource(pa.table({"id": [1, 2, 3]}))])
    g = open_graph(tmp_path / "g")
    assert g.edge_sets == ["default"] and g.num_edges() == 0 and g.num_nodes() == 3
    assert graphsys.to_scipy(g).shape == (3, 3)
    np.testing.assert_allclose(np.asarray(bsp.pagerank(g).values), [1 / 3] * 3)
    graphsys.from_numpy(np.zeros(0, np.int64), np.zeros(0, np.int64), tmp_path / "n",
                        num_nodes=3, partitions=2)
    assert g.manifest.edge_sets == open_graph(tmp_path / "n").manifest.edge_sets
    assert g.relation_types == open_graph(tmp_path / "n").relation_types


@pytest.mark.parametrize("gap", ["", "  "])  # "  ": runs of spaces, read by the careful path
def test_a_matrix_market_size_line_is_not_an_edge(tmp_path, gap):
    """A MatrixMarket coordinate file ('%%MatrixMarket' banner, '%' comments, then the
    size line 'rows cols entries') had its size line '4 4 3' ingested as the edge 4 -> 4
    of weight 3 (the '%' lines were read as comments, the size line as data), with no
    error; scipy.io.mmread holds three entries. The size line is now skipped."""
    import scipy.io

    f = tmp_path / "m.mtx"
    f.write_text("%%MatrixMarket matrix coordinate real general\n% made by hand\n4 4 3\n"
                 f"1 2{gap} 0.5\n2 3 1.5\n3 4 2.5\n")
    ingest_sources([EdgeSource([f], weight_col=2)], tmp_path / "g")
    ref = scipy.io.mmread(f).tocoo()
    want = {(int(i) + 1, int(j) + 1, float(v)): 1 for i, j, v in zip(ref.row, ref.col, ref.data)}
    assert edges_of(open_graph(tmp_path / "g")) == want


@pytest.mark.parametrize("edge_set, etype", [("a b", "user"), ("ok", "b c"), ("ok", ""),
                                             ("ok", "é"), ("-x", "user")])
def test_names_the_manifest_refuses_are_refused_before_writing(tmp_path, edge_set, etype):
    # such a name was written into a manifest that every reader then refused
    table = pa.table({"src": [0], "dst": [1]})
    with pytest.raises(GraphsysError, match="invalid (edge set|entity type) name") as info:
        ingest_sources([EdgeSource(table=table, edge_set=edge_set, relation="r")],
                       tmp_path / "g",
                       IngestOptions(relation_types=[RelationType("r", etype, etype)]))
    assert "\n" not in str(info.value) and not (tmp_path / "g").exists()
    with pytest.raises(GraphsysError, match="invalid entity type name"):
        ingest_sources([EdgeSource(table=table)], tmp_path / "h",
                       nodes=[NodeSource(pa.table({"id": [0]}), "a b")])


def test_freed_memory_is_handed_back_between_passes(tmp_path, monkeypatch):
    """The heap pages the read pass freed (decoded blocks) and those routing freed are handed
    back (:func:`graphsys.memory.trim_heap`) before the next pass: kept, they counted in
    its peak. An 8M-edge TSV with ``memory_limit`` 100MB peaked at 314 MiB anonymous, at
    202-233 MiB trimmed (50MB: 212 -> 152 MiB)."""
    from graphsys.storage import ingest as ingest_module
    from graphsys.storage import ingest_job
    from graphsys.storage.append import append_edges

    calls = []
    read_all, route = ingest_module.IngestJob.read_all, ingest_module.IngestJob.route
    monkeypatch.setattr(ingest_module.IngestJob, "read_all",
                        lambda self: (calls.append("read"), read_all(self))[1])
    monkeypatch.setattr(ingest_module.IngestJob, "route",
                        lambda self, name: (calls.append(f"route {name}"), route(self, name))[1])
    monkeypatch.setattr(ingest_module, "trim_heap", lambda: calls.append("trim"))
    monkeypatch.setattr(ingest_job, "trim_heap", lambda: calls.append("trim"))
    f, h = tmp_path / "a.tsv", tmp_path / "b.tsv"
    f.write_text("1\t2\n2\t3\n")
    h.write_text("3\t1\n")
    ingest_sources([EdgeSource([f], edge_set="a"), EdgeSource([h], edge_set="b")],
                   tmp_path / "g", IngestOptions())
    assert calls == ["read", "trim", "route a", "trim", "route b", "trim"]
    calls.clear()  # an append's passes alike
    append_edges(tmp_path / "g", [EdgeSource([f], edge_set="c")], IngestOptions(), join=False)
    assert calls == ["read", "trim", "route c", "trim"]
