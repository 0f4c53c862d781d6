"""Bucket and node files read as they are by pyarrow.dataset, Polars and DuckDB."""

from __future__ import annotations

import numpy as np
import pyarrow.dataset as ds
import pytest

from graphsys import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture
def graph(tmp_path):
    rng = np.random.default_rng(0)
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, 50, (500, 2))))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=3))
    return open_graph(tmp_path / "g")


def test_pyarrow_dataset_reads_an_edge_set(graph):
    table = ds.dataset(graph.path / "edges" / "default", format="arrow").to_table()
    assert table.num_rows == 500 and table.column_names == ["src", "dst"]


def test_polars_scans_buckets(graph):
    pl = pytest.importorskip("polars")
    df = pl.scan_ipc(str(graph.path / "edges" / "default" / "*.arrow")).collect()
    assert df.height == 500


def test_duckdb_queries_a_mapped_bucket(graph):
    duckdb = pytest.importorskip("duckdb")
    import pyarrow as pa
    import pyarrow.ipc as ipc

    b = next(graph.buckets())
    t = ipc.open_file(pa.memory_map(str(b.path))).read_all()  # noqa: F841 (queried by name)
    assert duckdb.sql("select count(*) from t").fetchall()[0][0] == b.num_edges
