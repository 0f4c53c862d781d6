"""export -> ingest gives back the same graph (ids, weights, relations) in every text and
table format; ``--undirected --dedupe`` keeps one weight per unordered pair; the integer-id
rule (``[+-]?[0-9]+`` alone) holds in every format whatever the rest of the column holds."""

from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphsys import open_graph
from graphsys.errors import GraphsysError
from graphsys.storage.export import export_edges
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def edges_of(graph):
    """Multiset of (src, dst[, rel][, weight]) with original ids."""
    ids = {t: graph.node_ids(t) for t in graph.entity_types}
    rels, toff = graph.relation_types, graph.type_offsets
    out = collections.Counter()
    for s, d, r, w in graph.iter_edges():
        for k in range(len(s)):
            rel = rels[r[k]] if r is not None else rels[0]
            src, dst = ids[rel.lhs][s[k] - toff[rel.lhs]], ids[rel.rhs][d[k] - toff[rel.rhs]]
            src = src.as_py() if hasattr(src, "as_py") else int(src)
            dst = dst.as_py() if hasattr(dst, "as_py") else int(dst)
            out[(src, dst) + ((rel.name,) if r is not None else ())
                + ((float(w[k]),) if w is not None else ())] += 1
    return out


def _ingest(path, out, **cols):
    opts = {k: cols.pop(k) for k in ("undirected", "dedupe") if k in cols}
    ingest_sources([EdgeSource([path], **cols)], out, IngestOptions(partitions=2, **opts))
    return open_graph(out)


TABLES = {
    "int": pa.table({"src": [1, 2, 3, -4], "dst": [2, 3, 1, 1]}),
    "string": pa.table({"src": ["a", "b b", "c,d", "0x10"], "dst": ["b b", "c,d", "a", "a"]}),
    "mixed": pa.table({"src": ["7", "x", "007", "y"], "dst": ["x", "y", "8", "7"]}),
    "weighted": pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "weight": [0.5, 1.25, 3.0]}),
    "relations": pa.table({"src": ["a", "b", "a"], "dst": ["b", "c", "c"],
                           "rel": ["likes", "knows", "likes"]}),
}


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".parquet", ".csv.gz"])
@pytest.mark.parametrize("kind", sorted(TABLES))
def test_export_ingest_same_graph(tmp_path, kind, suffix):
    table = TABLES[kind]
    pq.write_table(table, tmp_path / "in.parquet")
    cols = {"weight_col": "weight"} if "weight" in table.column_names else {}
    if "rel" in table.column_names:
        cols["rel_col"] = "rel"
    g = _ingest(tmp_path / "in.parquet", tmp_path / "g", **cols)
    out = tmp_path / f"out{suffix}"
    export_edges(g, out)
    back = _ingest(out, tmp_path / "back", **cols)
    assert edges_of(back) == edges_of(g)
    assert back.num_nodes() == g.num_nodes()


def test_text_header_is_plain(tmp_path):
    pq.write_table(TABLES["string"], tmp_path / "in.parquet")
    g = _ingest(tmp_path / "in.parquet", tmp_path / "g")
    export_edges(g, tmp_path / "out.tsv")
    assert (tmp_path / "out.tsv").read_text().splitlines()[0] == "src\tdst"
    # a header quoted by another tool is recognised too, by name
    (tmp_path / "q.tsv").write_text('"src"\t"dst"\na\tb\n')
    q = _ingest(tmp_path / "q.tsv", tmp_path / "qg", src_col="src", dst_col="dst")
    assert edges_of(q) == collections.Counter({("a", "b"): 1})


def test_tsv_refuses_an_id_holding_a_tab(tmp_path):
    pq.write_table(pa.table({"src": ["a\tb"], "dst": ["c"]}), tmp_path / "in.parquet")
    g = _ingest(tmp_path / "in.parquet", tmp_path / "g")
    with pytest.raises(GraphsysError, match="cannot write as TSV"):
        export_edges(g, tmp_path / "out.tsv")
    assert not (tmp_path / "out.tsv").exists()
    export_edges(g, tmp_path / "out.csv")  # CSV quotes it
    back = _ingest(tmp_path / "out.csv", tmp_path / "back")
    assert edges_of(back) == edges_of(g)


@pytest.mark.parametrize("fmt", ["tsv", "parquet"])
def test_undirected_dedupe_keeps_first_weight_of_the_pair(tmp_path, fmt):
    rows = [(1, 2, 1.5), (2, 1, 5.0), (3, 2, 2.0), (2, 3, 7.0), (1, 3, 4.0)]
    if fmt == "tsv":
        path = tmp_path / "e.tsv"
        path.write_text("".join(f"{a}\t{b}\t{w}\n" for a, b, w in rows))
        cols = {"weight_col": 2}
    else:
        path = tmp_path / "e.parquet"
        pq.write_table(pa.table({"src": [r[0] for r in rows], "dst": [r[1] for r in rows],
                                 "weight": [r[2] for r in rows]}), path)
        cols = {"weight_col": "weight"}
    g = _ingest(path, tmp_path / "g", undirected=True, dedupe=True, **cols)
    got = edges_of(g)
    want = {(1, 2, 1.5), (2, 1, 1.5), (3, 2, 2.0), (2, 3, 2.0), (1, 3, 4.0), (3, 1, 4.0)}
    assert set(got) == want and all(c == 1 for c in got.values())
    export_edges(g, tmp_path / "out.tsv")
    lines = sorted((tmp_path / "out.tsv").read_text().splitlines()[1:])
    assert lines == ["1\t2\t1.5", "1\t3\t4", "2\t3\t2"]


@pytest.mark.parametrize("others", [["16", "5"], ["16", "x"], []])
@pytest.mark.parametrize("fmt", ["tsv", "csv", "parquet"])
def test_hexadecimal_text_is_a_string_id(tmp_path, fmt, others):
    src = ["0x10", "0X1F"] + others
    dst = ["16", "31"] + others[::-1]
    if fmt == "parquet":
        path = tmp_path / "e.parquet"
        pq.write_table(pa.table({"src": src, "dst": dst}), path)
    else:
        sep = "\t" if fmt == "tsv" else ","
        path = tmp_path / f"e.{fmt}"
        path.write_text("".join(f"{a}{sep}{b}\n" for a, b in zip(src, dst)))
    g = _ingest(path, tmp_path / "g")
    ids = {str(x) for x in np.asarray(g.node_ids(), dtype=object)}
    assert {"0x10", "0X1F", "16", "31"} <= ids
    assert g.num_nodes() == len(set(src) | set(dst))


def test_several_entity_types_write_each_endpoints_type(tmp_path):
    from graphsys.storage.format import RelationType

    # users and items share the ids 1 and 2: only the type columns tell them apart
    table = pa.table({"src": [1, 2, 1], "rel": ["rates", "rates", "follows"],
                      "dst": [2, 1, 2]})
    rels = [RelationType("rates", "user", "item"), RelationType("follows", "user", "user")]
    ingest_sources([EdgeSource(table=table, rel_col="rel")], tmp_path / "g",
                   IngestOptions(partitions=1, relation_types=rels))
    g = open_graph(tmp_path / "g")
    export_edges(g, tmp_path / "out.parquet")
    rows = sorted(pq.read_table(tmp_path / "out.parquet").to_pylist(),
                  key=lambda r: (r["rel"], r["src"]))
    assert [(r["src"], r["dst"], r["rel"], r["src_type"], r["dst_type"]) for r in rows] == [
        (1, 2, "follows", "user", "user"), (1, 2, "rates", "user", "item"),
        (2, 1, "rates", "user", "item")]
    one_type = _ingest_plain(tmp_path)
    export_edges(one_type, tmp_path / "plain.parquet")
    assert pq.read_table(tmp_path / "plain.parquet").column_names == ["src", "dst"]


def _ingest_plain(tmp_path):
    pq.write_table(TABLES["int"], tmp_path / "int.parquet")
    return _ingest(tmp_path / "int.parquet", tmp_path / "plain")


def test_several_types_with_string_and_integer_ids_share_one_schema(tmp_path):
    from graphsys.storage.format import RelationType

    table = pa.table({"src": ["u1", "u2", "u1"], "rel": ["rates", "rates", "follows"],
                      "dst": ["7", "8", "u2"]})
    rels = [RelationType("rates", "user", "item"), RelationType("follows", "user", "user")]
    ingest_sources([EdgeSource(table=table, rel_col="rel")], tmp_path / "g",
                   IngestOptions(partitions=2, relation_types=rels, max_batch_rows=1))
    g = open_graph(tmp_path / "g")
    export_edges(g, tmp_path / "out.parquet")
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.schema.field("src").type == got.schema.field("dst").type == pa.large_string()
    assert sorted(zip(got.column("dst").to_pylist(), got.column("dst_type").to_pylist())) == [
        ("7", "item"), ("8", "item"), ("u2", "user")]


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".parquet"])
def test_typed_graph_round_trips_with_its_relation_types(tmp_path, suffix):
    import graphsys
    from graphsys.storage.format import RelationType

    table = pa.table({"src": [1, 2, 1, 3], "rel": ["rates", "rates", "follows", "rates"],
                      "dst": [2, 1, 2, 1], "weight": [4.0, 5.0, 1.0, 3.0]})
    specs = ["rates:user:item", "follows:user:user"]
    ingest_sources([EdgeSource(table=table, rel_col="rel", weight_col="weight")], tmp_path / "g",
                   IngestOptions(partitions=2,
                                 relation_types=[RelationType(*s.split(":")) for s in specs]))
    g = open_graph(tmp_path / "g")
    export_edges(g, tmp_path / f"out{suffix}")
    back = graphsys.ingest(tmp_path / f"out{suffix}", tmp_path / "back", partitions=2,
                           rel_col="rel", weight_col="weight", relation_types=specs)
    assert edges_of(back) == edges_of(g)
    assert {t: back.num_nodes(t) for t in back.entity_types} == {"user": 3, "item": 2}
    assert [(r.name, r.lhs, r.rhs) for r in back.relation_types] == [
        (r.name, r.lhs, r.rhs) for r in g.relation_types]
    # undeclared, the types come from the src_type / dst_type columns: user 1 and item 1
    # were one node "1" of type node (3 nodes where the graph has 5)
    plain = graphsys.ingest(tmp_path / f"out{suffix}", tmp_path / "plain", rel_col="rel")
    assert {t: plain.num_nodes(t) for t in plain.entity_types} == {"user": 3, "item": 2}
    assert sorted((r.name, r.lhs, r.rhs) for r in plain.relation_types) == sorted(
        (r.name, r.lhs, r.rhs) for r in g.relation_types)
    # a declaration the columns contradict (lhs and rhs swapped) was taken as given
    with pytest.raises(GraphsysError, match="relation 'rates' joins entity types "
                                            r"\('user', 'item'\) in the file's src_type"):
        graphsys.ingest(tmp_path / f"out{suffix}", tmp_path / "swapped", rel_col="rel",
                        relation_types=["rates:item:user", "follows:user:user"])


def test_relation_types_are_checked(tmp_path):
    import graphsys
    from graphsys.errors import ParameterError

    pq.write_table(TABLES["relations"], tmp_path / "in.parquet")
    with pytest.raises(ParameterError, match="NAME:LHS_TYPE:RHS_TYPE"):
        graphsys.ingest(tmp_path / "in.parquet", tmp_path / "g", rel_col="rel",
                        relation_types=["likes:a"])


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_nodes_out_gives_back_isolated_nodes_and_node_columns(tmp_path, suffix):
    """After ``delete_nodes``, an export ingested back lost the isolated node (3 nodes for
    4) and every node column: ``nodes_out`` writes the node table that ingest reads."""
    import graphsys
    from graphsys.storage.changes import delete_nodes

    edges = pa.table({"src": ["a", "b", "c"], "dst": ["b", "c", "d"], "weight": [0.5, 1.0, 2.0]})
    feat = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(8, dtype=np.float32)), 2)
    nodes = pa.table({"id": ["a", "b", "c", "d"], "feat": feat, "label": [0, 1, 1, 0]})
    pq.write_table(edges, tmp_path / "in.parquet")
    g = graphsys.ingest(tmp_path / "in.parquet", tmp_path / "g", weight_col="weight",
                        nodes=nodes, partitions=2)
    delete_nodes(g, ["d"])
    assert export_edges(g, tmp_path / f"e{suffix}", nodes_out=tmp_path / "n.parquet") == 2
    back = graphsys.ingest(tmp_path / f"e{suffix}", tmp_path / "h", weight_col="weight",
                           nodes=tmp_path / "n.parquet")
    assert edges_of(back) == edges_of(g)
    assert sorted(back.node_ids().to_pylist()) == ["a", "b", "c", "d"]
    for name in ("feat", "label"):
        want = dict(zip(g.node_ids().to_pylist(), g.node_column(name).tolist()))
        assert dict(zip(back.node_ids().to_pylist(), back.node_column(name).tolist())) == want
    with pytest.raises(GraphsysError, match="name one file"):
        export_edges(g, tmp_path / "x.parquet", nodes_out=tmp_path / "x.parquet")
    with pytest.raises(GraphsysError, match="as Parquet"):
        export_edges(g, tmp_path / "y.parquet", nodes_out=tmp_path / "n.csv")
    with pytest.raises(GraphsysError, match="no such directory"):
        export_edges(g, tmp_path / "y.parquet", nodes_out=tmp_path / "sub" / "n.parquet")
    assert not (tmp_path / "y.parquet").exists()


def test_typed_columns_that_cannot_be_read_are_refused(tmp_path):
    # skipping the bad line would read the typed file as one type, merging ids of two types
    import graphsys

    f = tmp_path / "e.tsv"
    f.write_text("src\tdst\trel\tsrc_type\tdst_type\n1\t2\tab\tA\tB\n3\t4\tab\n")
    with pytest.raises(GraphsysError, match="cannot read its src_type and dst_type columns"):
        graphsys.ingest(f, tmp_path / "g", rel_col="rel", on_bad_line="skip")


def test_appending_a_typed_file_checks_its_types_against_the_graph(tmp_path):
    # rates is user -> item in the graph; a file saying item -> user was appended as given
    import graphsys

    f = tmp_path / "e.tsv"
    f.write_text("src\tdst\trel\tsrc_type\tdst_type\n1\t2\trates\tuser\titem\n")
    graphsys.ingest(f, tmp_path / "g", rel_col="rel")
    f.write_text("src\tdst\trel\tsrc_type\tdst_type\n5\t1\trates\titem\tuser\n")
    with pytest.raises(GraphsysError, match="\\('item', 'user'\\) in the file's src_type and "
                                            "dst_type columns; the graph declares"):
        graphsys.ingest(f, tmp_path / "g", rel_col="rel", append=True, edge_set="more")
    f.write_text("src\tdst\trel\tsrc_type\tdst_type\n5\t7\trates\tuser\titem\n")
    g = graphsys.ingest(f, tmp_path / "g", rel_col="rel", append=True, edge_set="more")
    assert {t: g.num_nodes(t) for t in g.entity_types} == {"user": 2, "item": 2}
