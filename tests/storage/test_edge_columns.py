"""Edge columns: numeric input columns kept beside the edges (ingest, read, export, append,
verify), checked against the input rows themselves."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as paipc
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys.errors import FormatError, GraphsysError, InputError
from graphsys.storage.export import export_edges
from graphsys.storage.format import bucket_file
from graphsys.storage.node_files import file_entry
from graphsys.storage.verify import verify_graph


def _edges(n_nodes: int = 300, n_edges: int = 4000, seed: int = 0) -> pa.Table:
    """Distinct (src, dst) pairs with an int64 timestamp and a float32 rating each."""
    rng = np.random.default_rng(seed)
    pairs = np.unique(rng.integers(0, n_nodes, (n_edges, 2)), axis=0)
    rng.shuffle(pairs)
    m = len(pairs)
    return pa.table({"src": pairs[:, 0], "dst": pairs[:, 1],
                     "timestamp": rng.integers(0, 2**40, m),
                     "rating": rng.integers(1, 11, m).astype(np.float32) / 2})


def _stored(g, names=("timestamp", "rating"), edge_set=None) -> dict:
    """{(src original id, dst original id): (column values...)} of a stored edge set."""
    out = {}
    streams = [g.edge_column(n, edge_set) for n in names]
    for (s, d, _, _), *vals in zip(g.iter_edges(edge_set), *streams):
        assert all(len(v) == len(s) for v in vals)
        for row in zip(g.to_original(s).tolist(), g.to_original(d).tolist(),
                       *(v.tolist() for v in vals)):
            out[row[:2]] = row[2:]
    return out


def _expected(t: pa.Table, names=("timestamp", "rating")) -> dict:
    cols = [t.column(c).to_pylist() for c in ("src", "dst", *names)]
    return {(r[0], r[1]): tuple(r[2:]) for r in zip(*cols)}


@pytest.mark.parametrize("memory_limit", ["2GB", "200KB"])  # in memory, and runs merged
def test_ingest_keeps_columns_row_for_row(tmp_path, memory_limit):
    t = _edges()
    pq.write_table(t, tmp_path / "e.parquet", row_group_size=1000)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=3,
                        edge_columns=["timestamp", "rating"], memory_limit=memory_limit)
    es = g.edge_set()
    assert [(c.name, c.dtype) for c in es.columns] == [("timestamp", "int64"),
                                                      ("rating", "float32")]
    assert g.manifest.to_json()["format_version"] == 5
    assert _stored(g) == _expected(t)
    b = next(g.buckets())
    assert b.column("timestamp").dtype == np.int64 and len(b.column("rating")) == len(b)
    assert verify_graph(tmp_path / "g")["edges"] == t.num_rows


def test_undirected_and_dedupe_keep_each_rows_values(tmp_path):
    (tmp_path / "e.tsv").write_text("src\tdst\tts\n1\t2\t30\n2\t3\t10\n1\t2\t99\n3\t3\t7\n")
    g = graphsys.ingest(tmp_path / "e.tsv", tmp_path / "g", edge_columns=["ts"],
                        undirected=True, dedupe=True)
    got = _stored(g, ("ts",))
    # the first (1, 2) is kept, both directions carry its value; a loop is stored once
    assert got == {(1, 2): (30,), (2, 1): (30,), (2, 3): (10,), (3, 2): (10,), (3, 3): (7,)}


def test_text_columns_typed_from_values(tmp_path):
    (tmp_path / "e.csv").write_text("src,dst,n,x\n1,2,5,0.5\n2,3,-6,2\n")
    g = graphsys.ingest(tmp_path / "e.csv", tmp_path / "g", edge_columns={"n": "n", "x": 3})
    assert [(c.name, c.dtype) for c in g.edge_set().columns] == [("n", "int64"),
                                                                ("x", "float64")]
    assert _stored(g, ("n", "x")) == {(1, 2): (5, 0.5), (2, 3): (-6, 2.0)}


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".parquet"])
def test_export_ingest_round_trip(tmp_path, suffix):
    t = _edges(n_edges=500)
    pq.write_table(t, tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=2,
                        edge_columns=["timestamp", "rating"])
    out = tmp_path / f"out{suffix}"
    assert export_edges(g, out) == t.num_rows
    if suffix == ".parquet":
        assert pq.read_schema(out).field("timestamp").type == pa.int64()
    g2 = graphsys.ingest(out, tmp_path / "g2", partitions=2,
                         edge_columns=["timestamp", "rating"])
    assert _stored(g2) == _stored(g) == _expected(t)


def test_append_requires_the_same_columns(tmp_path):
    pq.write_table(pa.table({"src": [1, 2], "dst": [2, 3], "ts": [5, 6]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"src": [3, 4], "dst": [4, 1], "ts": [7, 8]}), tmp_path / "b.parquet")
    graphsys.ingest(tmp_path / "a.parquet", tmp_path / "g", edge_columns=["ts"])
    with pytest.raises(GraphsysError, match="edge columns ts; the appended edges give none"):
        graphsys.ingest(tmp_path / "b.parquet", tmp_path / "g", append=True, edge_set="new")
    g = graphsys.ingest(tmp_path / "b.parquet", tmp_path / "g", append=True, edge_set="new",
                        edge_columns=["ts"])
    assert _stored(g, ("ts",), "new") == {(3, 4): (7,), (4, 1): (8,)}
    assert _stored(g, ("ts",), "default") == {(1, 2): (5,), (2, 3): (6,)}
    verify_graph(tmp_path / "g")


def test_bad_values_refused_in_one_line(tmp_path):
    (tmp_path / "e.tsv").write_text("src\tdst\tts\n1\t2\t30\n2\t3\tsoon\n")
    with pytest.raises(InputError, match=r"e.tsv:3: non-numeric ts 'soon'$"):
        graphsys.ingest(tmp_path / "e.tsv", tmp_path / "g", edge_columns=["ts"])
    with pytest.raises(InputError, match="unknown column 'when'"):
        graphsys.ingest(tmp_path / "e.tsv", tmp_path / "g", edge_columns=["when"])
    with pytest.raises(graphsys.errors.ParameterError, match="not a valid edge column name"):
        graphsys.ingest(tmp_path / "e.tsv", tmp_path / "g", edge_columns=["weight"])
    pq.write_table(pa.table({"src": [1], "dst": [2], "s": ["x"]}), tmp_path / "s.parquet")
    with pytest.raises(InputError, match="non-numeric s 'x'"):
        graphsys.ingest(tmp_path / "s.parquet", tmp_path / "g", edge_columns=["s"])


def _rewrite_bucket(path, table: pa.Table) -> None:
    """Replace a graph's only bucket file by ``table`` and re-list it with its new hash,
    so that the structure checks (not the hash) must catch what is wrong."""
    rel = bucket_file("default", 0, 0)
    with paipc.new_file(str(path / rel), table.schema) as w:
        w.write_table(table)
    m = json.loads((path / "manifest.json").read_text())
    m["files"][rel] = file_entry(path / rel)
    (path / "manifest.json").write_text(json.dumps(m))


def test_verify_refuses_a_column_of_wrong_dtype_or_length(tmp_path):
    pq.write_table(pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "ts": [5, 6, 7]}),
                   tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", edge_columns=["ts"])
    table = paipc.open_file(pa.memory_map(str(tmp_path / "g" / bucket_file("default", 0, 0)))
                            ).read_all()
    _rewrite_bucket(tmp_path / "g", table.set_column(2, "ts", table.column("ts").cast(
        pa.float64())))
    with pytest.raises(FormatError, match=r"columns \(.*ts: double\) differ"):
        verify_graph(tmp_path / "g")
    _rewrite_bucket(tmp_path / "g", table.drop_columns(["ts"]))
    with pytest.raises(FormatError, match="differ from the edge set's"):
        verify_graph(tmp_path / "g", quick=True)
    # a truncated bucket file, its hash listed as it now is: the length no longer holds
    _rewrite_bucket(tmp_path / "g", table)
    path = tmp_path / "g" / bucket_file("default", 0, 0)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())
    m["files"][bucket_file("default", 0, 0)] = file_entry(path)
    (tmp_path / "g" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(FormatError, match="bucket"):
        verify_graph(tmp_path / "g")
    assert g.num_edges() == 3


def test_old_graphs_still_open_and_manifest_needs_version_5(tmp_path):
    g = graphsys.from_numpy([0, 1], [1, 0], tmp_path / "old")
    assert g.manifest.to_json()["format_version"] < 5
    assert graphsys.open_graph(tmp_path / "old").edge_set().columns == []
    pq.write_table(pa.table({"src": [1], "dst": [2], "ts": [5]}), tmp_path / "e.parquet")
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", edge_columns=["ts"])
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())
    m["format_version"] = 4
    (tmp_path / "g" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(FormatError, match="needs format_version 5"):
        graphsys.open_graph(tmp_path / "g")
    with pytest.raises(FormatError, match="no edge column 'rating'"):
        next(graphsys.open_graph(tmp_path / "old").edge_column("rating"))


def test_info_and_cli(tmp_path, capsys):
    from graphsys.cli import main

    pacsv.write_csv(pa.table({"src": [1, 2], "dst": [2, 3], "timestamp": [9, 8],
                              "rating": [1.5, 2.0]}), tmp_path / "e.csv")
    assert main(["ingest", str(tmp_path / "e.csv"), "--out", str(tmp_path / "g"),
                 "--edge-columns", "timestamp,rating", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["info", str(tmp_path / "g")]) == 0
    assert "edge columns: timestamp(int64), rating(float64)" in capsys.readouterr().out


@pytest.mark.parametrize("entry,message", [
    ({"name": "src", "dtype": "int64"}, "bad edge column name 'src'"),
    ({"name": "ts", "dtype": "int8"}, r"columns\[0\].dtype' must be one of int64, float32, "
                                      r"float64, got 'int8'"),
    ({"name": "ts"}, r"columns\[0\]' must be an object with name and dtype"),
])
def test_manifest_edge_columns_are_checked(tmp_path, entry, message):
    pq.write_table(pa.table({"src": [1], "dst": [2], "ts": [5]}), tmp_path / "e.parquet")
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", edge_columns=["ts"])
    m = json.loads((tmp_path / "g" / "manifest.json").read_text())
    m["edge_sets"]["default"]["columns"] = [entry]
    (tmp_path / "g" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(FormatError, match=message):
        graphsys.open_graph(tmp_path / "g")
