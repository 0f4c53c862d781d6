"""String node columns (UTF-8 text such as item titles): written at ingest from a node
table's string column into a file of their own, mapped back per node id, checked."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet  # noqa: F401 - pa.parquet
import pytest

import graphsys
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.format import node_column_file
from graphsys.storage.node_files import file_entry, write_string_column
from graphsys.storage.verify import verify_graph

TITLES = {1: "Amélie (2001)", 2: "Léon", 3: "千と千尋の神隠し", 4: "Ærø 🎬", 5: "plain",
          6: "", 7: "tab\tand\nnewline", 8: "e\u0301 combining"}


@pytest.fixture
def graph(tmp_path):
    rng = np.random.default_rng(0)
    s, d = rng.integers(1, 12, (2, 60))  # ids 9..11 are in no node table row
    nodes = pa.table({"id": list(TITLES), "title": list(TITLES.values()),
                      "label": list(range(len(TITLES)))})
    return graphsys.from_arrow(pa.table({"src": s, "dst": d}), tmp_path / "g", nodes=nodes,
                               partitions=3)


def test_titles_round_trip_per_node_id(graph):
    col = {c.name: c for c in graph.entity_type().columns}["title"]
    assert (col.kind, col.dtype) == ("string", "large_string")
    assert graph.manifest.to_json()["format_version"] == 5
    ids = graph.node_ids().tolist()
    titles = graph.string_column("title")
    assert isinstance(titles, pa.LargeStringArray) and len(titles) == graph.num_nodes()
    # every node in internal-id order: its title, "" for a node the table did not list
    assert titles.to_pylist() == [TITLES.get(i, "") for i in ids]
    assert titles.take(graph.to_internal([3, 4])).to_pylist() == [TITLES[3], TITLES[4]]
    assert graph.node_column("title").tolist() == [TITLES.get(i, "") for i in ids]
    assert graph.node_column("label").tolist() == [
        list(TITLES).index(i) if i in TITLES else -1 for i in ids]
    assert verify_graph(graph.path)["files"] == len(graph.manifest.files)
    with pytest.raises(GraphsysError, match="no string node column 'label'"):
        graph.string_column("label")


def test_append_keeps_titles_and_gives_new_nodes_empty_ones(graph, tmp_path):
    before = dict(zip(graph.node_ids().tolist(), graph.string_column("title").to_pylist()))
    pa.parquet.write_table(pa.table({"src": [3, 40, 41], "dst": [42, 1, 43]}),
                           tmp_path / "new.parquet")
    g = graphsys.ingest(tmp_path / "new.parquet", graph.path, append=True, edge_set="more")
    after = dict(zip(g.node_ids().tolist(), g.string_column("title").to_pylist()))
    assert after == {**before, 40: "", 41: "", 42: "", 43: ""}
    assert verify_graph(g.path)["nodes"] == len(before) + 4


def test_write_node_column_streams_strings(graph):
    from graphsys.storage.node_columns import write_node_column

    ids = graph.node_ids().tolist()
    write_node_column(graph.path, "name", "string",
                      lambda a, b: [f"nœud {i}" for i in ids[a:b]], chunk_rows=4)
    g = graphsys.open_graph(graph.path)
    assert g.string_column("name").to_pylist() == [f"nœud {i}" for i in ids]
    with pytest.raises(GraphsysError, match=r"fill\(0, 11\) returned 1 strings"):
        write_node_column(graph.path, "short", "string", lambda a, b: ["x"])
    verify_graph(g.path)


def _replace(graph, values: pa.Array) -> None:
    rel = node_column_file("node", "title")
    write_string_column(graph.path / rel, "title", values)
    m = json.loads((graph.path / "manifest.json").read_text())
    m["files"][rel] = file_entry(graph.path / rel)
    (graph.path / "manifest.json").write_text(json.dumps(m))


def test_a_short_or_mistyped_file_is_refused(graph):
    # a copy: the files below are rewritten in place, under the mapping
    titles = pa.array(graph.string_column("title").to_pylist(), pa.large_string())
    _replace(graph, titles.slice(1))
    with pytest.raises(FormatError, match=r"column-title.arrow: 10 strings \(0 null\), "
                                          r"entity type 'node' has 11 nodes"):
        verify_graph(graph.path, quick=True)
    rel = node_column_file("node", "title")
    _replace(graph, titles)
    ints = pa.table({"title": pa.array(range(11))})
    with pa.OSFile(str(graph.path / rel), "wb") as sink, pa.ipc.new_file(
            sink, ints.schema) as w:
        w.write_table(ints)
    m = json.loads((graph.path / "manifest.json").read_text())
    m["files"][rel] = file_entry(graph.path / rel)
    (graph.path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(FormatError, match="needs one record batch of one large_string"):
        graphsys.open_graph(graph.path).string_column("title")
    # the manifest's size and hash still guard the file as written at ingest
    (graph.path / rel).write_bytes(b"x")
    with pytest.raises(FormatError, match="truncated or modified"):
        verify_graph(graph.path)
