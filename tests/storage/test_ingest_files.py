"""graphsys.ingest: the Python face of ``graphsys ingest``, keyword for flag."""

from __future__ import annotations

import inspect

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys.cli import build_parser, main
from graphsys.errors import InputError, ParameterError
from graphsys.storage.ingest import IngestReport


@pytest.fixture
def edges(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("src\tdst\tw\n1\t2\t0.5\n2\t3\t1.5\n3\t1\t2.0\n3\t3\t1.0\n1\t2\t9.0\n")
    return f


def test_keywords_reach_the_passes(tmp_path, edges):
    g = graphsys.ingest(str(edges), tmp_path / "g", partitions=2, partitioner="range",
                        src_col="src", dst_col="dst", weight_col="w", dedupe=True,
                        drop_self_loops=True, undirected=True, memory_limit=1 << 26)
    assert isinstance(g, graphsys.Graph) and g.num_partitions == 2
    assert g.manifest.partitioner["name"] == "range"
    es = g.edge_set()
    assert es.has_weight and es.undirected and es.dedupe and es.drop_self_loops
    assert g.num_edges() == 6  # 3 distinct edges, no self-loop, both directions
    src, dst, _, w = next(g.iter_edges())
    pairs = dict(zip(zip(g.to_original(src).tolist(), g.to_original(dst).tolist()),
                     w.tolist()))
    assert pairs[(1, 2)] == 0.5 and pairs[(2, 1)] == 0.5  # dedupe keeps the first


def test_inputs_nodes_and_index(tmp_path, edges):
    other = tmp_path / "f.tsv"
    other.write_text("src\tdst\n4\t1\n")
    nodes = pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()),
                      "label": pa.array([0, 1, 0, 1, -1], pa.int64())})
    pq.write_table(nodes, tmp_path / "n.parquet")
    for name, given in (("t", nodes), ("p", tmp_path / "n.parquet")):
        g = graphsys.ingest([edges, other], tmp_path / name, header=True, nodes=given,
                            index=("csr", "csc"))
        assert g.num_nodes() == 5 and g.num_edges() == 6
        assert g.node_column("label").tolist() == [0, 1, 0, 1, -1]
        assert sorted(g.manifest.indexes["default"]) == ["csc", "csr"]
    g, report = graphsys.ingest(edges, tmp_path / "r", index="csr", return_report=True)
    assert isinstance(report, IngestReport) and "index" in report.seconds
    assert report.edges == {"default": 5} and list(g.manifest.indexes["default"]) == ["csr"]


def test_append(tmp_path, edges):
    g = graphsys.ingest(edges, tmp_path / "g", partitions=2)
    more = tmp_path / "more.tsv"
    more.write_text("7\t1\n")
    g2 = graphsys.ingest(more, tmp_path / "g", append=True, edge_set="more")
    assert g2.num_edges("more") == 1 and g2.num_nodes() == g.num_nodes() + 1
    with pytest.raises(ParameterError, match="^nodes cannot be given when appending"):
        graphsys.ingest(more, tmp_path / "g", append=True, edge_set="x",
                        nodes=tmp_path / "none.parquet")


@pytest.mark.parametrize("kwargs, message", [
    ({"partitions": 0}, "partitions must be a positive integer, got 0"),
    ({"memory_limit": "lots"}, "memory_limit must be a positive size"),
    ({"memory_limit": "1e99"}, "memory_limit must be a positive size of at most 8 EiB"),
    ({"memory_limit": "100000PB"}, "memory_limit must be a positive size of at most 8 EiB"),
    ({"memory_limit": 1}, r"memory_limit must be at least 65,536 bytes \(64KiB: one batch "
                          r"of 4,096 edges\), got 1"),
    ({"memory_limit": "65535"}, "memory_limit must be at least 65,536 bytes"),
    ({"index": "csr,bsr"},
     "index must name index kinds among csr, csc, push, sym, temporal, got 'csr,bsr'"),
    ({"on_bad_line": "ignore"}, "on_bad_line must be 'error' or 'skip'"),
])
def test_bad_parameters(tmp_path, edges, kwargs, message):
    with pytest.raises(ParameterError, match="^" + message):
        graphsys.ingest(edges, tmp_path / "g", **kwargs)
    assert not (tmp_path / "g").exists()


def test_missing_input(tmp_path):
    with pytest.raises(InputError):
        graphsys.ingest(tmp_path / "nope.tsv", tmp_path / "g")
    with pytest.raises(InputError, match="node table: no such file"):
        graphsys.ingest(tmp_path / "nope.tsv", tmp_path / "g", nodes=tmp_path / "n.arrow")
    with pytest.raises(InputError, match=r"node table: not a regular file \(a directory\)"):
        graphsys.ingest(tmp_path / "nope.tsv", tmp_path / "g", nodes=tmp_path)


def test_cli_flags_are_the_keywords(tmp_path, edges, capsys):
    """Every option of ``graphsys ingest`` sets the keyword of its name, so library errors
    read as the user's flags."""
    parser = build_parser(["ingest"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["ingest"]
    dests = {a.dest for a in sub._actions if a.option_strings} - {"help"}
    keywords = set(inspect.signature(graphsys.ingest).parameters)
    # --append-to DIR is out with append; --no-join is join=False; --json prints; --quiet
    # is progress=False (--no-header is --header no: refused beside it)
    assert dests - keywords == {"append_to", "no_join", "json", "quiet"}
    assert keywords - dests == {"inputs", "append", "progress", "return_report"}
    assert main(["ingest", str(edges), "--out", str(tmp_path / "g"), "--memory-limit",
                 "lots"]) == 2
    assert capsys.readouterr().err.startswith("error: --memory-limit must be a positive size")
    with pytest.raises(SystemExit) as exc:
        main(["ingest", str(edges), "--out", str(tmp_path / "g"), "--header", "yes",
              "--no-header"])
    assert exc.value.code == 2 and capsys.readouterr().err.startswith(
        "error: argument --no-header: not allowed with argument --header")
    assert main(["ingest", str(edges), "--out", str(tmp_path / "g"), "--index", "x"]) == 2
    assert capsys.readouterr().err.startswith("error: --index must name index kinds")
    assert main(["ingest", str(edges), "--out", str(tmp_path / "g"), "--partitions", "2",
                 "--index", "csr", "--json"]) == 0
    g = graphsys.open_graph(tmp_path / "g")
    assert g.num_partitions == 2 and "csr" in g.manifest.indexes["default"]
    assert np.array_equal(np.sort(g.node_ids()), [1, 2, 3])


def test_a_budget_below_full_speed_is_warned_in_one_line_naming_the_minimum(
        tmp_path, edges, capsys):
    """Below 16MiB an ingest's smallest buffers overrun its budget: it goes on, warned once,
    in one line that names the minimum; from 16MiB on nothing is said."""
    import warnings

    from graphsys.storage.ingest_inputs import SmallBudgetWarning

    with pytest.warns(SmallBudgetWarning) as caught:
        g = graphsys.ingest(edges, tmp_path / "g", memory_limit="1MB")
    assert g.num_edges() > 0 and len(caught) == 1
    message = str(caught[0].message)
    assert "\n" not in message and message.startswith(
        "memory_limit 1,000,000 bytes is below 16,777,216 (16MiB)")
    assert message.endswith("give at least 16MiB")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graphsys.ingest(edges, tmp_path / "h", memory_limit="16MiB")
        graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tmp_path / "i",
                            memory_limit=16 << 20)
    with pytest.warns(SmallBudgetWarning):
        graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tmp_path / "j",
                            memory_limit=1 << 20)
    # the command says it once, in one line, after the run; no Python warning text
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["ingest", str(edges), "--out", str(tmp_path / "k"), "--memory-limit",
                     "1MB", "--quiet"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["graphsys ingest: warning: --memory-limit 1,000,000 bytes is below "
                   "16,777,216 (16MiB), the least an ingest keeps to: its smallest buffers "
                   "(65,536 edges, 1MiB of ids) do not shrink below it and overrun a smaller "
                   "budget; give at least 16MiB"]


def test_ids_that_start_with_a_comment_character(tmp_path, caplog):
    """A line whose first id starts with '#' or '%' (a hashtag graph) was dropped as a
    comment with no word said, and neither ``graphsys.ingest`` nor the CLI could turn the
    comment characters off (only ``EdgeSource(comment=...)``): ``comment`` (``--comment``)
    now sets them, and comment lines after the first data line are counted in a warning."""
    f = tmp_path / "tags.tsv"
    f.write_text("a\tb\n#python\t#data\n%tag\tc\n")
    g = graphsys.ingest(f, tmp_path / "g")
    assert g.num_edges() == 1
    assert "tags.tsv: 2 line(s) after the first data line start with a comment" in caplog.text
    g = graphsys.ingest(f, tmp_path / "h", comment="")
    assert g.num_edges() == 3
    assert sorted(g.node_ids().to_pylist()) == ["#data", "#python", "%tag", "a", "b", "c"]
    assert main(["ingest", str(f), "--out", str(tmp_path / "c"), "--comment", ""]) == 0
    assert graphsys.open_graph(tmp_path / "c").num_edges() == 3
    with pytest.raises(ParameterError, match="^comment must be a string of ASCII"):
        graphsys.ingest(f, tmp_path / "x", comment=None)


def test_an_index_over_the_budget_says_the_graph_is_ingested_and_how_to_index_it(
        tmp_path, monkeypatch, capsys):
    """``ingest --index csr,csc`` with a ``memory_limit`` below the index build's least
    wrote the graph and then failed with 'memory_limit ... is too small to index' alone: the
    same command again says the directory already holds a graph. The line now says the
    graph is ingested and names the command that indexes it, which runs."""
    import shlex

    from graphsys.storage import adjacency_index

    monkeypatch.setattr(adjacency_index, "BUILD_FIXED_BYTES", 1 << 20)  # a tiny graph's least
    path = tmp_path / "e.tsv"
    path.write_text("".join(f"{i}\t{i + 1}\n" for i in range(100)))
    out = tmp_path / "g"
    argv = ["ingest", str(path), "--out", str(out), "--memory-limit", "1MiB", "--index",
            "csr,csc", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {out} is ingested, but not indexed:") and "\n" not in err
    assert graphsys.open_graph(out).num_edges() == 100
    command = shlex.split(err.rsplit("; index it with ", 1)[1])
    assert command[:2] == ["graphsys", "index"]
    assert main(command[1:] + ["--quiet"]) == 0
    assert graphsys.open_graph(out).csr().indptr[-1] == 100
