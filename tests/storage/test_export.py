"""export: the round trip gives back the input multiset of edges, with original ids."""

from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from graphsys import open_graph
from graphsys.errors import GraphsysError
from graphsys.storage.export import export_edges
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def rows(table: pa.Table) -> collections.Counter:
    return collections.Counter(zip(*[table.column(c).to_pylist() for c in table.column_names]))


@pytest.mark.parametrize("suffix", ["parquet", "tsv", "tsv.gz"])
def test_round_trip_weighted_kg(tmp_path, suffix):
    rng = np.random.default_rng(5)
    n = 4000
    table = pa.table({
        "src": [f"e{x}" for x in rng.integers(0, 300, n)],
        "rel": [f"r{x}" for x in rng.integers(0, 5, n)],
        "dst": [f"e{x}" for x in rng.integers(0, 300, n)],
        "weight": rng.random(n).astype(np.float32),
    })
    f = tmp_path / "in.parquet"
    pq.write_table(table, f)
    ingest_sources([EdgeSource([f], rel_col="rel", weight_col="weight")], tmp_path / "g",
                   IngestOptions(partitions=3))
    out = tmp_path / f"out.{suffix}"
    assert export_edges(open_graph(tmp_path / "g"), out) == n
    back = (pq.read_table(out) if suffix == "parquet" else pacsv.read_csv(
        out, parse_options=pacsv.ParseOptions(delimiter="\t")))
    assert back.column_names == ["src", "dst", "rel", "weight"]
    back = back.set_column(3, "weight", back.column("weight").cast(pa.float32()))
    assert rows(back) == rows(table.select(["src", "dst", "rel", "weight"]))


def test_round_trip_undirected_writes_each_edge_once(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n3\t2\n4\t4\n")
    ingest_sources([EdgeSource([f])], tmp_path / "g",
                   IngestOptions(undirected=True, partitions=2))
    out = tmp_path / "o.parquet"
    export_edges(open_graph(tmp_path / "g"), out)
    got = {tuple(sorted(r)) for r in rows(pq.read_table(out))}
    assert got == {(1, 2), (2, 3), (4, 4)} and pq.read_table(out).num_rows == 3


def test_export_refuses_existing_and_bad_suffix(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n")
    ingest_sources([EdgeSource([f])], tmp_path / "g")
    g = open_graph(tmp_path / "g")
    with pytest.raises(GraphsysError, match="must end in"):
        export_edges(g, tmp_path / "o.xlsx")
    export_edges(g, tmp_path / "o.tsv")
    with pytest.raises(GraphsysError, match="already exists"):
        export_edges(g, tmp_path / "o.tsv")
