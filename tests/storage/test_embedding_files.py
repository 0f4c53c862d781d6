"""The Arrow embedding directory format: what EmbeddingWriter writes reads back row for row
(checked against pyarrow reading the files itself), and a damaged or hostile directory is a
one-line FormatError naming the file."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import pytest

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.embedding_files import (
    ARROW_FORMAT,
    ARROW_INDEX,
    EmbeddingWriter,
    is_embedding_directory,
    read_embedding_files,
)
from graphsys.storage.graph import open_graph


@pytest.fixture
def graph(graph_dir):
    """The storage tests' 2-partition graph."""
    return open_graph(graph_dir)


def _write(graph, out, dim=4):
    rng = np.random.default_rng(1)
    writer = EmbeddingWriter(out, graph, "node")
    want = []
    for p, n in enumerate(graph.partition_sizes("node")):
        rows = rng.normal(size=(n, dim)).astype(np.float32)
        writer(p, rows)
        want.append(rows)
    writer.finish({"task": "node"})
    return want


def test_round_trip_matches_pyarrow(graph, tmp_path):
    out = tmp_path / "emb"
    want = _write(graph, out)
    assert is_embedding_directory(out) and not is_embedding_directory(tmp_path)
    files = read_embedding_files(out)
    assert files.entity_type == "node" and files.dimension == 4
    assert files.header["meta"] == {"task": "node"}
    assert files.header["num_nodes"] == graph.num_nodes("node")
    for p, (got, rows) in enumerate(zip(files.partitions, want)):
        np.testing.assert_array_equal(got, rows)
        assert not got.flags.writeable
        table = paipc.open_file(out / files.header["partitions"][p]).read_all()
        ref = np.array(table.column("embedding").to_pylist(), np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(table.column("id").to_numpy(),
                                      np.asarray(graph.node_ids("node", p)))


def test_writer_refuses_a_directory_with_embeddings(graph, tmp_path):
    _write(graph, tmp_path / "emb")
    with pytest.raises(GraphsysError, match="already holds embeddings"):
        EmbeddingWriter(tmp_path / "emb", graph, "node")


def _edit_index(out, **changes):
    index = out / ARROW_INDEX
    header = json.loads(index.read_text())
    header.update(changes)
    index.write_text(json.dumps(header))


@pytest.mark.parametrize("changes, message", [
    ({"format": "other"}, "unknown embeddings format"),
    ({"dimension": 0}, "dimension must be an integer"),
    ({"dimension": True}, "dimension must be an integer"),
    ({"num_nodes": -1}, "num_nodes must be an integer"),
    ({"entity_type": "../x"}, "not an entity type name"),
    ({"partitions": "node/part-0.arrow"}, "partitions must be a list"),
    ({"partitions": ["../outside.arrow"]}, "'../outside.arrow' is not a path inside"),
    ({"partitions": ["/etc/passwd"]}, "'/etc/passwd' is not a path inside"),
    ({"num_nodes": 5}, "partitions hold"),
    ({"dimension": 3}, "the index says fixed_size_list"),
    ({"graph": 3}, "graph must be a path"),
    ({"meta": []}, "meta an object"),
])
def test_bad_index_is_one_line(graph, tmp_path, changes, message):
    out = tmp_path / "emb"
    _write(graph, out)
    _edit_index(out, **changes)
    with pytest.raises(FormatError, match=message) as info:
        read_embedding_files(out)
    assert len(str(info.value).splitlines()) == 1


def test_unreadable_or_hostile_files(graph, tmp_path):
    out = tmp_path / "emb"
    _write(graph, out)
    (out / ARROW_INDEX).write_text("[1, 2]")
    with pytest.raises(FormatError, match="not a JSON object"):
        read_embedding_files(out)
    (out / ARROW_INDEX).write_text("{not json")
    with pytest.raises(FormatError, match="unreadable"):
        read_embedding_files(out)

    _write(graph, tmp_path / "emb2")
    out = tmp_path / "emb2"
    first = out / "node" / "part-0.arrow"
    first.write_bytes(first.read_bytes()[:40])  # truncated
    with pytest.raises(FormatError, match="cannot read embeddings"):
        read_embedding_files(out)

    _write(graph, tmp_path / "emb3")
    out = tmp_path / "emb3"
    secret = tmp_path / "secret.arrow"
    os.replace(out / "node" / "part-1.arrow", secret)
    os.symlink(secret, out / "node" / "part-1.arrow")  # a link out of the directory
    with pytest.raises(FormatError, match="resolves outside"):
        read_embedding_files(out)
    os.unlink(out / "node" / "part-1.arrow")
    os.mkdir(out / "node" / "part-1.arrow")
    with pytest.raises(FormatError, match="not a regular file"):
        read_embedding_files(out)


def test_other_column_types_and_nulls(graph, tmp_path):
    out = tmp_path / "emb"
    _write(graph, out)
    n = graph.partition_sizes("node")[0]
    part = out / "node" / "part-0.arrow"
    for col, message in [
        (pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(n * 4)), 4),  # float64
         "embedding column is"),
        (pa.FixedSizeListArray.from_arrays(
            pa.array([None] + [0.0] * (n * 4 - 1), pa.float32()), 4), "holds nulls"),
    ]:
        table = pa.table({"id": np.arange(n), "embedding": col})
        with paipc.new_file(part, table.schema) as w:
            w.write_table(table)
        with pytest.raises(FormatError, match=message):
            read_embedding_files(out)
    assert json.loads((out / ARROW_INDEX).read_text())["format"] == ARROW_FORMAT
