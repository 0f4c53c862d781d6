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


def test_a_tsv_line_that_would_read_as_a_comment_is_refused(tmp_path):
    """A source id '#tag' was exported to TSV as a line starting with '#', which ingest
    reads as a comment: the export ingested back without that edge. TSV refuses it in one
    line naming the id; CSV (which quotes it) and Parquet round-trip it."""
    ingest_sources([EdgeSource(table=pa.table({"src": ["#tag", "a"], "dst": ["a", "%b"]}))],
                   tmp_path / "g")
    g = open_graph(tmp_path / "g")
    with pytest.raises(GraphsysError, match=r"o\.tsv: cannot write as TSV \(source id "
                                            r"'#tag' starts with one of '#%'"):
        export_edges(g, tmp_path / "o.tsv")
    assert not (tmp_path / "o.tsv").exists()
    for name in ("o.csv", "o.parquet"):
        export_edges(g, tmp_path / name)
        ingest_sources([EdgeSource([tmp_path / name])], tmp_path / f"back-{name}")
        back = open_graph(tmp_path / f"back-{name}")
        assert back.num_edges() == 2
        assert sorted(back.node_ids().to_pylist()) == ["#tag", "%b", "a"]


def test_an_export_with_no_edges_has_the_columns_of_one_with_edges(tmp_path):
    """A window with no edge was exported as ``src,dst,timestamp`` int64 where the graph
    has string ids, relations and weights: its Parquet schema and header differed from
    every other window's (reading the windows as one dataset failed)."""
    table = pa.table({"src": ["a", "b"], "dst": ["b", "c"], "rel": ["r", "s"],
                      "weight": [0.5, 2.0], "timestamp": [10, 20]})
    pq.write_table(table, tmp_path / "in.parquet")
    ingest_sources([EdgeSource([tmp_path / "in.parquet"], rel_col="rel", weight_col="weight",
                               edge_columns=["timestamp"])], tmp_path / "g", IngestOptions())
    some = open_graph(tmp_path / "g", until=10)
    none = open_graph(tmp_path / "g", until=5)
    for suffix in (".parquet", ".csv"):
        assert export_edges(some, tmp_path / f"some{suffix}") == 1
        assert export_edges(none, tmp_path / f"none{suffix}") == 0
    assert (pq.read_schema(tmp_path / "none.parquet")
            == pq.read_schema(tmp_path / "some.parquet").remove_metadata())
    assert ((tmp_path / "none.csv").read_text().splitlines()
            == (tmp_path / "some.csv").read_text().splitlines()[:1])


def test_a_single_named_relation_is_written(tmp_path):
    """A graph of one relation, 'likes', is stored without a rel column, and its export had
    none: ingesting it back with rel_col='rel' failed ('unknown column'), and without it
    named the relation 'default'."""
    pq.write_table(pa.table({"src": [1, 2], "dst": [2, 3], "rel": ["likes", "likes"]}),
                   tmp_path / "in.parquet")
    ingest_sources([EdgeSource([tmp_path / "in.parquet"], rel_col="rel")], tmp_path / "g",
                   IngestOptions())
    g = open_graph(tmp_path / "g")
    assert not g.edge_set().has_rel
    for suffix in (".parquet", ".csv"):
        export_edges(g, tmp_path / f"e{suffix}")
        ingest_sources([EdgeSource([tmp_path / f"e{suffix}"], rel_col="rel")],
                       tmp_path / f"h{suffix[1:]}", IngestOptions())
        assert [r.name for r in open_graph(tmp_path / f"h{suffix[1:]}").relation_types] == [
            "likes"]
    pq.write_table(pa.table({"src": [1], "dst": [2]}), tmp_path / "plain.parquet")
    ingest_sources([EdgeSource([tmp_path / "plain.parquet"])], tmp_path / "plain",
                   IngestOptions())
    export_edges(open_graph(tmp_path / "plain"), tmp_path / "plain.csv")
    assert (tmp_path / "plain.csv").read_text().splitlines()[0] == "src,dst"


def test_a_large_record_batch_streams_in_runs(tmp_path, monkeypatch):
    """A bucket of one record batch (up to max_batch_rows, millions of rows) is handed on
    in runs of at most STREAM_ROWS: iter_edges and edge_column stay row for row, and an
    export holds one run's columns, not the batch's (its traced peak over 200,000 edges
    in one batch was 12 MB, here under 1 MB), writing every edge once."""
    import tracemalloc

    import graphsys
    from graphsys.storage import edges

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 5_000, 200_000), rng.integers(0, 5_000, 200_000)
    stamp = np.arange(200_000, dtype=np.int64)
    pq.write_table(pa.table({"src": src, "dst": dst, "ts": stamp}), tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", edge_columns=["ts"])
    monkeypatch.setattr(edges, "STREAM_ROWS", 4096)
    runs = list(zip(g.iter_edges(), g.edge_column("ts")))
    assert max(len(s) for (s, *_), _ in runs) == 4096 and len(runs) == 49
    ids = g.node_ids()
    ts = np.concatenate([t for _, t in runs])
    for k, column in ((0, src), (1, dst)):  # each edge's ends beside its own stamp
        np.testing.assert_array_equal(ids[np.concatenate([r[0][k] for r in runs])],
                                      column[ts])
    export_edges(g, tmp_path / "warm.parquet")
    tracemalloc.start()
    export_edges(g, tmp_path / "out.tsv")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20, peak
    table = pacsv.read_csv(tmp_path / "out.tsv", parse_options=pacsv.ParseOptions(
        delimiter="\t"))
    out_src, out_dst = table["src"].to_numpy(), table["dst"].to_numpy()
    got, want = np.lexsort((out_dst, out_src)), np.lexsort((dst, src))  # as multisets
    np.testing.assert_array_equal(out_src[got], src[want])
    np.testing.assert_array_equal(out_dst[got], dst[want])
