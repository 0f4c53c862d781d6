"""Node columns in files of their own: streamed in, mapped with no copy, checked."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys import open_graph
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.format import node_column_file
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest
from graphsys.storage.node_columns import write_node_column
from graphsys.storage.verify import verify_graph


@pytest.fixture
def graph_dir(tmp_path):
    f = tmp_path / "e.tsv"
    rng = np.random.default_rng(0)
    f.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, 300, (2000, 2))))
    ingest([EdgeSource([f])], tmp_path / "g", IngestOptions(num_partitions=3))
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
