"""Node columns in files of their own: streamed in, mapped with no copy, checked; feature
columns of node tables mapped per partition."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import pytest
import torch

import graphsys
from graphsys import open_graph
from graphsys.errors import FormatError, GraphsysError
from graphsys.sampling.features import feature_rows
from graphsys.storage.format import MANIFEST, node_column_file, node_file
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.node_columns import write_node_column
from graphsys.storage.partitioned_rows import PartitionedRows
from graphsys.storage.verify import verify_graph


@pytest.fixture
def graph_dir(tmp_path):
    f = tmp_path / "e.tsv"
    rng = np.random.default_rng(0)
    f.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, 300, (2000, 2))))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=3))
    return tmp_path / "g"


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_features_stream_in_and_map_without_copy(graph_dir, dtype):
    n = open_graph(graph_dir).num_nodes()
    full = np.random.default_rng(1).normal(size=(n, 5)).astype(dtype)
    write_node_column(graph_dir, "feat", "features", lambda a, b: full[a:b], dim=5,
                      dtype=dtype, chunk_rows=64)
    write_node_column(graph_dir, "label", "label", lambda a, b: np.arange(a, b) % 4,
                      chunk_rows=100)
    g = open_graph(graph_dir)
    mapped = g.mapped_node_column("feat")
    assert mapped.dtype == np.dtype(dtype) and mapped.shape == (n, 5)
    assert not mapped.flags.writeable and not mapped.flags.owndata
    np.testing.assert_array_equal(mapped, full)
    np.testing.assert_array_equal(g.node_column("feat"), full.astype(np.float32))
    np.testing.assert_array_equal(g.node_column("label"), np.arange(n) % 4)
    assert verify_graph(graph_dir)["files"] == len(g.manifest.files)


def test_bad_columns_refused(graph_dir):
    with pytest.raises(GraphsysError, match="dtype"):
        write_node_column(graph_dir, "x", "features", lambda a, b: 0, dtype="float64")
    with pytest.raises(GraphsysError, match="name"):
        write_node_column(graph_dir, "../x", "label", lambda a, b: 0)
    with pytest.raises(GraphsysError, match="shape"):
        write_node_column(graph_dir, "x", "features", lambda a, b: np.zeros((b - a, 2)), dim=3)
    assert not list((graph_dir / "nodes").rglob("*column-x*"))
    write_node_column(graph_dir, "x", "label", lambda a, b: np.zeros(b - a, np.int64))
    with pytest.raises(GraphsysError, match="already"):
        write_node_column(graph_dir, "x", "label", lambda a, b: np.zeros(b - a, np.int64))


def test_truncated_column_refused_naming_the_file(graph_dir):
    write_node_column(graph_dir, "lab", "label", lambda a, b: np.arange(a, b))
    f = graph_dir / node_column_file("node", "lab")
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size - 8)
    with pytest.raises(FormatError, match=str(f)):
        open_graph(graph_dir)


def _table_graph(path: Path, partitions: int, n: int = 400, dim: int = 6):
    """A graph of ``n`` nodes whose float32 ``feat`` (n, dim) is in the node table."""
    rng = np.random.default_rng(partitions)
    feat = rng.normal(size=(n, dim)).astype(np.float32)
    return graphsys.from_numpy(rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n), path,
                               num_nodes=n, partitions=partitions,
                               node_columns={"feat": feat, "label": np.arange(n) % 3})


def _mapped_ranges(path: Path) -> list[tuple[int, int]]:
    """Address ranges at which this process maps ``path``."""
    out = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == str(path.resolve()):
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            out.append((lo, hi))
    return out


@pytest.mark.parametrize("partitions", [1, 3])
def test_node_table_features_are_views_of_the_mapped_partition_files(tmp_path, partitions):
    g = _table_graph(tmp_path / "g", partitions)
    ref = g.node_column("feat")                          # read into memory: the reference
    rows = g.mapped_features("feat")
    assert isinstance(rows, PartitionedRows) == (partitions > 1)
    assert rows.shape == ref.shape and rows.dtype == np.float32
    blocks = rows.blocks if partitions > 1 else [rows]
    off = g.partition_offsets()
    for p, block in enumerate(blocks):
        np.testing.assert_array_equal(block, ref[off[p]:off[p + 1]])
        assert not block.flags.writeable
        if sys.platform.startswith("linux"):             # the rows lie in the file's mapping
            addr = block.ctypes.data
            assert any(lo <= addr and addr + block.nbytes <= hi
                       for lo, hi in _mapped_ranges(g.path / node_file("node", p)))
    ids = np.random.default_rng(0).integers(0, len(ref), 500)
    np.testing.assert_array_equal(feature_rows(rows, ids).numpy(), ref[ids])
    assert feature_rows(rows, np.zeros(0, np.int64)).shape == (0, ref.shape[1])
    np.testing.assert_array_equal(rows[50:350], ref[50:350])
    with pytest.raises(GraphsysError, match="outside"):
        feature_rows(rows, [len(ref)])
    with pytest.raises(GraphsysError, match="no features node column 'label'"):
        g.mapped_features("label")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_partitioned_rows_gather_as_the_joined_column(dtype):
    whole = np.random.default_rng(2).normal(size=(90, 5)).astype(dtype)
    rows = PartitionedRows([whole[:40], whole[40:41], whole[41:]])
    ids = np.random.default_rng(3).integers(0, 90, 300)
    got = feature_rows(rows, ids)
    assert got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), whole[ids].astype(np.float32))
    span = np.arange(38, 45)
    assert torch.equal(feature_rows(rows, span), feature_rows(whole, span))
    for a, b in [(0, 90), (10, 40), (39, 42), (41, 41), (85, 200)]:
        np.testing.assert_array_equal(rows[a:b], whole[a:b])
    np.testing.assert_array_equal(np.asarray(rows), whole)
    with pytest.raises(GraphsysError, match="one dtype"):
        PartitionedRows([whole[:2], whole[2:].astype(np.float64)])


def _rewrite_node_file(graph_dir: Path, partition: int, data: bytes) -> None:
    """Replace a node partition file by ``data`` and list it with its new hash and size,
    as a hostile edit would: only the structure checks stand between it and a reader."""
    rel = node_file("node", partition)
    (graph_dir / rel).write_bytes(data)
    m = json.loads((graph_dir / MANIFEST).read_text())
    m["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (graph_dir / MANIFEST).write_text(json.dumps(m))


def _with_feat(table: pa.Table, feat: pa.Array) -> bytes:
    table = table.set_column(table.schema.get_field_index("feat"), "feat", feat)
    sink = pa.BufferOutputStream()
    with paipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def test_a_truncated_or_garbled_node_table_is_refused_in_one_line(tmp_path):
    d = tmp_path / "g"
    _table_graph(d, 2)
    path = d / node_file("node", 1)
    orig = path.read_bytes()
    table = paipc.open_file(pa.py_buffer(orig)).read_all()
    values = table.column("feat").combine_chunks().flatten()
    narrow = pa.FixedSizeListArray.from_arrays(values.slice(0, len(table) * 5), 5)
    half = pa.FixedSizeListArray.from_arrays(values.cast(pa.float16()), 6)
    garbled = bytearray(orig)
    garbled[536:544] = b"\xff" * 8        # the feature values' length in the batch's metadata
    for data, message in [(orig[:len(orig) // 2], "cannot read node partition"),
                          (bytes(garbled), "Values length .-1. is less than"),
                          (_with_feat(table, narrow), "not a features column"),
                          (_with_feat(table, half), "not a features column")]:
        _rewrite_node_file(d, 1, data)
        with pytest.raises(FormatError, match=message) as err:
            open_graph(d).mapped_features("feat")
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    # every 8-byte run of the file garbled in turn: refused, or rows of the stated shape
    for off in range(0, len(orig) - 8, 8):
        _rewrite_node_file(d, 1, orig[:off] + b"\xff" * 8 + orig[off + 8:])
        try:
            rows = open_graph(d).mapped_features("feat")
        except FormatError:
            continue
        assert feature_rows(rows, np.arange(400)).shape == (400, 6)


@pytest.mark.parametrize("rows,match", [
    ([[1.0, 2.0], [np.nan, 1.0], [0.0, 0.0]], "has feature nan for node 20: features must be "
                                              r"finite \(float32\)"),
    ([[1.0, 2.0], [1.0, -np.inf], [0.0, 0.0]], "has feature -inf for node 20"),
    ([[1.0, 2.0], [0.0, 0.0], [1e39, 0.0]], "has feature 1e\\+39 for node 30"),
    ([[1.0, 2.0], None, [0.0, 0.0]], r"has no features for node 20 \(a null row\)"),
    ([[1.0, 2.0], [None, 0.0], [0.0, 0.0]], "has feature null for node 20"),
])
def test_non_finite_features_are_refused_naming_the_column(tmp_path, rows, match):
    """A feature column refuses NaN, infinity, overflow and nulls at ingest, as edge weights
    and edge columns do (a model would fail far from the cause)."""
    feat = pa.array(rows, pa.list_(pa.float64(), 2))
    nodes = pa.table({"id": [10, 20, 30], "feat": feat})
    from graphsys.storage.ingest import NodeSource

    with pytest.raises(GraphsysError, match=f"^node table for 'node': column 'feat' {match}"):
        ingest_sources([EdgeSource(table=pa.table({"src": [10, 20], "dst": [20, 30]}))],
               tmp_path / "g", IngestOptions(), nodes=[NodeSource(nodes)])
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("dtype,bad", [("float32", np.nan), ("float16", 1e5)])
def test_streamed_features_must_be_finite(graph_dir, dtype, bad):
    n = open_graph(graph_dir).num_nodes()
    full = np.zeros((n, 2))
    full[n - 1, 1] = bad
    with pytest.raises(GraphsysError, match=rf"^node column 'feat': fill\(0, {n}\) returned a "
                                            rf"non-finite feature \({dtype}\) for internal "
                                            rf"id {n - 1}"):
        write_node_column(graph_dir, "feat", "features", lambda a, b: full[a:b], dim=2,
                          dtype=dtype)
    assert "feat" not in open_graph(graph_dir).node_columns()


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_node_table_in_any_row_order_and_partial_lands_on_its_nodes(tmp_path, partitions):
    """Rows of a node table are read in their own order and gathered into each partition:
    shuffled rows, nodes the table leaves out (features 0, label -1, mask False, title
    ''), and a duplicate id refused."""
    from graphsys.storage.ingest import NodeSource

    rng = np.random.default_rng(3)
    edges = pa.table({"src": rng.integers(0, 50, 300) * 7, "dst": rng.integers(0, 50, 300) * 7})
    ids = np.unique(np.concatenate([edges["src"].to_numpy(), edges["dst"].to_numpy()]))
    given = rng.permutation(ids)[: len(ids) - 5]  # shuffled, five nodes left out
    feat = rng.normal(size=(len(given), 3)).astype(np.float32)
    label = rng.integers(0, 4, len(given))
    mask = rng.random(len(given)) < 0.5
    title = np.array([f"n{i}" for i in given], object)
    nodes = pa.table({"id": given, "feat": pa.FixedSizeListArray.from_arrays(
        pa.array(feat.reshape(-1)), 3), "label": label, "mask": mask,
        "title": pa.array(title.tolist())})
    ingest_sources([EdgeSource(table=edges)], tmp_path / "g",
                   IngestOptions(partitions=partitions), nodes=[NodeSource(nodes)])
    g = open_graph(tmp_path / "g")
    row = {int(i): k for k, i in enumerate(given)}
    got_ids = np.asarray(g.node_ids())
    got = {c: g.node_column(c) for c in ("feat", "label", "mask", "title")}
    for internal, original in enumerate(got_ids.tolist()):
        k = row.get(original)
        if k is None:
            assert not got["feat"][internal].any() and got["label"][internal] == -1
            assert not got["mask"][internal] and got["title"][internal] == ""
        else:
            np.testing.assert_array_equal(got["feat"][internal], feat[k])
            assert got["label"][internal] == label[k] and got["mask"][internal] == mask[k]
            assert got["title"][internal] == title[k]
    dup = pa.table({"id": np.concatenate([given[:3], given[:1]]), "label": [1, 2, 3, 4]})
    with pytest.raises(GraphsysError, match="duplicate ids"):
        ingest_sources([EdgeSource(table=edges)], tmp_path / "h", IngestOptions(),
                       nodes=[NodeSource(dup)])


def test_a_categorical_string_column_and_a_label_beyond_int64(tmp_path):
    """A dictionary-encoded string column (a pandas categorical's Arrow type) was refused
    ("has type dictionary<values=string ...>") though an id column of that type is read;
    it is stored as the strings it holds. A uint64 label beyond int64 raised Arrow's
    'Integer value ... not in range' traceback; it is refused in one line."""
    from graphsys.storage.ingest import NodeSource

    edges = EdgeSource(table=pa.table({"src": [1, 2], "dst": [2, 3]}))
    kind = pa.array(["user", "item", "user"]).dictionary_encode()
    ingest_sources([edges], tmp_path / "g", IngestOptions(),
                   nodes=[NodeSource(pa.table({"id": [3, 1, 2], "kind": kind}))])
    g = open_graph(tmp_path / "g")
    got = dict(zip(np.asarray(g.node_ids()).tolist(), list(g.node_column("kind"))))
    assert got == {1: "item", 2: "user", 3: "user"}
    big = pa.table({"id": [1, 2], "label": pa.array([2**64 - 1, 0], pa.uint64())})
    with pytest.raises(GraphsysError, match="^node table for 'node': column 'label' holds an "
                                            "integer beyond int64$"):
        ingest_sources([edges], tmp_path / "h", IngestOptions(), nodes=[NodeSource(big)])
    assert not (tmp_path / "h").exists()
