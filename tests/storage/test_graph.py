"""The Graph API against scipy.sparse built from the same input edges."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys import open_graph
from graphsys.errors import GraphsysError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture(scope="module")
def weighted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("g")
    rng = np.random.default_rng(7)
    n_edges = 5000
    s = rng.integers(0, 600, n_edges) * 3 + 1  # sparse original ids, some never used
    d = rng.integers(0, 600, n_edges) * 3 + 1
    w = rng.integers(1, 100, n_edges) / 4
    f = tmp / "e.tsv"
    f.write_text("".join(f"{a}\t{b}\t{x}\n" for a, b, x in zip(s, d, w)))
    ingest_sources([EdgeSource([f], weight_col=2)], tmp / "g", IngestOptions(partitions=4))
    return open_graph(tmp / "g"), s, d, w


def reference(graph, s, d, w):
    n = graph.num_nodes()
    si, di = graph.to_internal(s), graph.to_internal(d)
    return sp.coo_matrix((w, (si, di)), shape=(n, n)).tocsr(), si, di


def test_csr_matches_scipy(weighted):
    g, s, d, w = weighted
    ref, _, _ = reference(g, s, d, w)
    csr = g.csr()
    got = sp.csr_matrix((csr.weight.astype(np.float64), csr.indices, csr.indptr),
                        shape=ref.shape)
    assert abs(got - ref).max() == 0
    for v in range(0, g.num_nodes(), 97):  # rows sorted by neighbour id
        row = csr.indices[csr.indptr[v]:csr.indptr[v + 1]]
        assert (np.diff(row) >= 0).all()


def test_csc_and_degrees(weighted):
    g, s, d, w = weighted
    ref, si, di = reference(g, s, d, w)
    csc = g.csc()
    got = sp.csr_matrix((csc.weight.astype(np.float64), csc.indices, csc.indptr),
                        shape=ref.shape)
    assert abs(got - ref.T).max() == 0
    n = g.num_nodes()
    np.testing.assert_array_equal(g.degrees(direction="out"), np.bincount(si, minlength=n))
    np.testing.assert_array_equal(g.degrees(direction="in"), np.bincount(di, minlength=n))
    np.testing.assert_array_equal(g.degrees(direction="both"),
                                  np.bincount(si, minlength=n) + np.bincount(di, minlength=n))


def test_edge_ids_map_csr_back_to_stream(weighted):
    g, *_ = weighted
    csr = g.csr(edge_ids=True)
    stream_dst = np.concatenate([d for _, d, _, _ in g.iter_edges()])
    np.testing.assert_array_equal(stream_dst[csr.edge_ids], csr.indices)


def test_partition_numbering(weighted):
    g, *_ = weighted
    off = g.partition_offsets()
    assert off[-1] == g.num_nodes() and len(off) == g.num_partitions + 1
    for b in g.buckets():
        np.testing.assert_array_equal(
            g.node_ids(partition=b.i)[b.src], g.to_original(off[b.i] + b.src))
    ids = g.node_ids()
    for p in range(g.num_partitions):
        part = ids[off[p]:off[p + 1]]
        assert (np.diff(part) > 0).all()  # sorted original ids within a partition


def test_to_original_reads_the_node_tables_once(weighted, monkeypatch):
    """A lookup of a few ids (a nearest-neighbour query's answer) reads no node table after
    the first; the answers stay those of the node tables, and callers cannot change them."""
    from graphsys.storage import node_reads

    g = open_graph(weighted[0].path)
    want = g.node_ids()
    reads = []
    real = node_reads.node_table
    monkeypatch.setattr(node_reads, "node_table", lambda *a, **k: reads.append(a) or real(*a, **k))
    for q in ([0, 5], [g.num_nodes() - 1], 7, [3, 3, 1]):
        np.testing.assert_array_equal(g.to_original(q), want[q])
    assert len(reads) == g.num_partitions  # each partition's table once
    np.testing.assert_array_equal(g.to_internal(want[[4, 2]]), [4, 2])
    assert len(reads) == g.num_partitions  # the id index sorts the same ids
    out = g.to_original([0, 1])
    out[:] = -1
    np.testing.assert_array_equal(g.to_original([0, 1]), want[:2])
    with pytest.raises(GraphsysError, match="outside"):
        g.to_original([g.num_nodes()])


def test_string_ids_are_looked_up_as_ingested(tmp_path):
    # the ingest reads integer text canonically ("01" and "1" are one node, stored "1"), so
    # a lookup of the id as written in the input finds it: "01" was "not in the graph"
    import pyarrow as pa

    from graphsys import from_arrow

    g = from_arrow(pa.table({"src": ["01", "b", " x"], "dst": ["b", "+7", "b"]}),
                   tmp_path / "g", partitions=2)
    assert sorted(g.node_ids().to_pylist()) == [" x", "1", "7", "b"]
    ids = g.node_ids().to_pylist()
    want = [ids.index(v) for v in ("1", "1", "1", "7", "7", "b", " x")]
    assert g.to_internal(["01", "1", " 1", "+7", "007", "b", " x"]).tolist() == want
    with pytest.raises(GraphsysError, match="^node id '02' is not in the graph"):
        g.to_internal(["01", "02"])
    with pytest.raises(GraphsysError, match="^node id None is not in the graph"):
        g.to_internal(["01", None])
    with pytest.raises(GraphsysError, match="^node id 'x' is not in the graph"):
        g.to_internal("x")  # a string that is not integer text keeps its whitespace


def test_bucket_orders(weighted):
    g, *_ = weighted
    rows = [(b.i, b.j) for b in g.buckets("row-major", skip_empty=False)]
    cols = [(b.i, b.j) for b in g.buckets("col-major", skip_empty=False)]
    assert rows == sorted(rows) and cols == sorted(cols, key=lambda x: (x[1], x[0]))
    assert [(b.i, b.j) for b in g.buckets([(3, 1), (0, 2)])] == [(3, 1), (0, 2)]
    with pytest.raises(GraphsysError, match="unknown bucket order"):
        list(g.buckets("spiral"))


def test_unknown_ids_and_names(weighted):
    g, *_ = weighted
    with pytest.raises(GraphsysError, match="node id 2 is not in the graph"):
        g.to_internal([1, 2])
    with pytest.raises(GraphsysError, match="unknown edge set 'test'"):
        g.num_edges("test")
    with pytest.raises(GraphsysError, match="has no node column 'label'"):
        g.node_column("label")


def test_a_bool_among_integer_ids_is_refused(weighted):
    """``np.asarray([True, 2])`` is ``[1, 2]``: a bool in a list of ids read as node 1."""
    g, *_ = weighted
    ids = g.node_ids()
    for bad in ([True, int(ids[2])], (int(ids[2]), np.True_), [[True, int(ids[2])]]):
        with pytest.raises(GraphsysError, match="are integers; got True"):
            g.to_internal(bad)
    with pytest.raises(GraphsysError, match="internal ids are integers; got True"):
        g.to_original([True, 0])
    np.testing.assert_array_equal(g.to_internal([int(ids[2]), np.int32(ids[1])]), [2, 1])


def test_a_bucket_is_named_by_two_partition_numbers(weighted):
    """``bucket(True, 0)`` read bucket (1, 0) and ``bucket("1", 0)`` was a TypeError; NumPy
    integers name a bucket as ints do."""
    g, *_ = weighted
    assert g.bucket(np.int64(1), np.uint8(0)).num_edges == g.bucket(1, 0).num_edges
    for bad in ((True, 0), ("1", 0), (0, 1.0), (0, g.num_partitions), (-1, 0)):
        with pytest.raises(GraphsysError, match=r"^bucket \(.*\) out of range for 4 partitions"):
            g.bucket(*bad)
