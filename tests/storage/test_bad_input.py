"""Bad input: one clear error naming file and line, and nothing left at --out."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

import graphsys
from graphsys.errors import GraphsysError, InputError, ParameterError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def _fails(tmp_path, text: str, match: str, name: str = "e.tsv", **source):
    f = tmp_path / name
    f.write_text(text)
    out = tmp_path / "g"
    with pytest.raises(GraphsysError, match=match) as err:
        ingest_sources([EdgeSource([f], **source)], out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".g")]  # no staging left
    assert "\n" not in str(err.value)
    return err.value


def test_wrong_column_count_names_line(tmp_path):
    err = _fails(tmp_path, "# header comment\n1\t2\n3\t4\t5\n", r"e\.tsv:3: expected 2 columns")
    assert isinstance(err, InputError) and err.line == 3


def test_wrong_column_count_after_comments_and_blank_lines(tmp_path):
    _fails(tmp_path, "1\t2\n\n# c\n% c\n5\t6\n7\n", r"e\.tsv:6: expected 2 columns")


def test_non_numeric_weight(tmp_path):
    _fails(tmp_path, "1\t2\t0.5\n2\t3\tabc\n", r"e\.tsv:2: non-numeric weight 'abc'", weight_col=2)


def test_weight_column_of_a_non_numeric_type(tmp_path):
    """A bool, list or other non-numeric weight column (PyG's bool ``edge_weight``, a
    Parquet file's) raised Arrow's 'match_substring_regex has no kernel' traceback; it is
    refused in one line (as an edge column of such a type is), and a decimal one is read as
    the numbers it holds."""
    import numpy as np
    import pyarrow as pa

    import graphsys

    edges = {"src": [0, 1], "dst": [1, 0]}
    for values in (pa.array([True, False]), pa.array([[1.0], [2.0]])):
        out = tmp_path / f"g{len(str(values.type))}"
        with pytest.raises(InputError, match=rf"^<in-memory edges default>: weight column has "
                                             rf"type {re.escape(str(values.type))}; weights "
                                             rf"are numbers"):
            ingest_sources([EdgeSource(table=pa.table({**edges, "w": values}), weight_col="w")],
                           out)
        assert not out.exists()
    with pytest.raises(InputError, match="weight column has type bool"):
        graphsys.from_numpy([0, 1], [1, 0], tmp_path / "b", weight=np.array([True, False]))
    ingest_sources([EdgeSource(table=pa.table({**edges, "w": pa.array(
        [1, 25], pa.decimal128(5, 1))}), weight_col="w")], tmp_path / "d")
    g = graphsys.open_graph(tmp_path / "d")
    assert sorted(float(w) for _, _, _, ws in g.iter_edges() for w in ws) == [1.0, 25.0]


def test_empty_id(tmp_path):
    _fails(tmp_path, "1,2\n,3\n", r"e\.csv:2: empty src id", name="e.csv")


def test_unknown_column(tmp_path):
    _fails(tmp_path, "a\tb\n1\t2\n", r"unknown column 'weight'", weight_col="weight")


def test_repeated_header_names(tmp_path):
    """A header naming two columns alike (found by fuzzing: the reader took one column twice,
    every edge a self-loop, reported as success): the default columns are read by position;
    a repeated name asked for is refused."""
    from graphsys import open_graph

    f = tmp_path / "r.tsv"
    f.write_text("12\t12\nb\t60\n12\té\n")
    ingest_sources([EdgeSource([f], header=True)], tmp_path / "ok")
    g = open_graph(tmp_path / "ok")
    ids = [str(x) for x in g.node_ids().tolist()]
    got = sorted((ids[s], ids[d]) for src, dst, _, _ in g.iter_edges()
                 for s, d in zip(src.tolist(), dst.tolist()))
    assert got == [("12", "é"), ("b", "60")]
    _fails(tmp_path, "a\ta\n1\t2\n", r"column 'a' for src is ambiguous: the header line has "
           r"it at positions 0, 1", src_col="a", dst_col=1)


def test_named_column_without_header(tmp_path):
    _fails(tmp_path, "1\t2\n3\t4\n", r"unknown column 'w'", weight_col="w")


def test_empty_input(tmp_path):
    _fails(tmp_path, "# only a comment\n", r"no data lines")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        ingest_sources([EdgeSource([tmp_path / "nope.tsv"])], tmp_path / "g")


def test_an_input_that_is_not_a_regular_file_says_what_it_is(tmp_path):
    """A directory or a FIFO given as an input was reported as "no such file" (it exists);
    the message now says what it is, for the edge readers and JODIE's alike."""
    import os

    os.mkfifo(tmp_path / "f.tsv")
    for path, what in ((tmp_path / "f.tsv", "a FIFO"), (tmp_path, "a directory")):
        for fmt in ("auto", "jodie"):
            with pytest.raises(InputError, match=rf"^{re.escape(str(path))}: not a regular "
                                                 rf"file \({what}\)$"):
                graphsys.ingest(path, tmp_path / "g", format=fmt)


def test_truncated_gzip(tmp_path):
    data = gzip.compress(b"".join(b"%d\t%d\n" % (i, i + 1) for i in range(20000)))
    f = tmp_path / "e.tsv.gz"
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"e\.tsv\.gz: truncated or corrupt gzip"):
        ingest_sources([EdgeSource([f])], tmp_path / "g")
    assert not (tmp_path / "g").exists()


def test_output_already_holds_graph(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n")
    ingest_sources([EdgeSource([f])], tmp_path / "g")
    with pytest.raises(GraphsysError, match="already holds a graph"):
        ingest_sources([EdgeSource([f])], tmp_path / "g")


def test_skip_bad_lines_counts_them(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\t1.0\n2\t3\n3\t4\tx\n4\t5\t2.0\n\t6\t1\n")
    rep = ingest_sources([EdgeSource([f], weight_col=2)], tmp_path / "g",
                         IngestOptions(on_bad_line="skip"))
    assert rep.skipped_lines == 3
    assert rep.edges == {"default": 2}


def test_bad_options(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n")
    with pytest.raises(GraphsysError, match="unknown partitioner 'nope'"):
        ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=2,
                                                                         partitioner="nope"))
    with pytest.raises(ParameterError, match="^partitions must be a positive integer"):
        ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=0))
    with pytest.raises(ParameterError, match="^on_bad_line must be 'error' or 'skip'"):
        ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(on_bad_line="warn"))
    # True was one partition and a batch of one row; "x" raised a TypeError from <
    for bad in ({"partitions": True}, {"partitions": 4097}, {"max_batch_rows": "x"}):
        with pytest.raises(ParameterError, match=f"^{next(iter(bad))} must be a positive int"):
            ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(**bad))
    assert not (tmp_path / "g").exists()
    assert ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(
        partitions=np.int64(1))).edges == {"default": 1}  # NumPy's were refused


@pytest.mark.parametrize("delimiter", ["", "ab", "\n", '"', "é", 5])
def test_delimiter_is_one_ascii_character(tmp_path, delimiter):
    """One line, before any input is read, where the text reader (a byte split, then
    pyarrow's single-character parser) could not use the delimiter."""
    with pytest.raises(ParameterError, match="^delimiter must be one ASCII character"):
        EdgeSource([tmp_path / "missing.tsv"], delimiter=delimiter)


def test_semicolon_delimiter(tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("1;2\n2;3\n")
    rep = ingest_sources([EdgeSource([f], format="tsv", delimiter=";")], tmp_path / "g")
    assert rep.edges == {"default": 2}


def test_a_bad_row_that_is_not_utf8_prints_no_traceback(tmp_path):
    # Arrow decodes a bad row before the invalid-row handler runs; bytes that are not UTF-8
    # failed there and printed an 'Exception ignored ... UnicodeDecodeError' traceback ahead
    # of the one-line error
    import subprocess
    import sys

    (tmp_path / "e.txt").write_bytes(b"1 2\n3 4 5 \xff\xfe\n5 6\n")
    run = subprocess.run([sys.executable, "-m", "graphsys", "ingest", str(tmp_path / "e.txt"),
                          "--out", str(tmp_path / "g")], capture_output=True, text=True,
                         errors="replace")
    assert run.returncode != 0
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "Expected 2 columns, got 4" in run.stderr
