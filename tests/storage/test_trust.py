"""Issue 13, defects 2, 3, 5 and 7 (storage side): hostile manifests, inconsistent files,
header guessing and unbounded partition counts.

A manifest is untrusted input: names and paths never leave the graph directory. A bucket
whose offsets leave their partition is refused, with one line naming the file, by every
reader (not only ``verify``), instead of a segfault or a wrong answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import pytest

from graphsys import cli, open_graph
from graphsys.errors import FormatError, GraphsysError, InputError
from graphsys.storage.format import MANIFEST, bucket_file, node_file
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
from graphsys.storage.verify import verify_graph


def _edit_manifest(graph_dir, edit):
    path = graph_dir / MANIFEST
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def corrupt_offset(path, column: str = "dst", row: int = 0, value: int = 0x7FFFFFFF) -> None:
    """Overwrite one int32 offset of a bucket file in place (4 bytes: same size, same
    schema, a bad value), as a disk error or a hostile edit would."""
    mapping = pa.memory_map(str(path))
    base = mapping.read_buffer(mapping.size()).address
    rb = paipc.open_file(mapping).get_batch(0)
    at = rb.column(rb.schema.get_field_index(column)).buffers()[1].address - base + 4 * row
    del rb, mapping
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(np.int32(value).tobytes())


# -- defect 2: the manifest cannot point outside its directory --------------------------------

def _rename_entity_type(data, new):
    data["entity_types"][new] = data["entity_types"].pop("node")
    for r in data["relation_types"]:
        r["lhs"] = r["rhs"] = new


@pytest.mark.parametrize("edit, message", [
    (lambda d: _rename_entity_type(d, "../other"), r"entity_types name '\.\./other' is not safe"),
    (lambda d: d["edge_sets"].update({"../../x": d["edge_sets"].pop("default")}),
     "edge_sets name '../../x' is not safe"),
    (lambda d: d["files"].update({"/etc/passwd": {"sha256": "0" * 64, "bytes": 1}}),
     "'/etc/passwd' is absolute or leaves"),
    (lambda d: d["files"].update({"nodes/../../x": {"sha256": "0" * 64, "bytes": 1}}),
     "leaves the graph directory"),
    (lambda d: d["files"][next(iter(d["files"]))].update({"bytes": "12"}),
     "needs 'bytes'"),
    (lambda d: d["entity_types"]["node"].update({"num_nodes": 5}),
     "num_nodes' .5. differs from the sum"),
    (lambda d: d["entity_types"]["node"].update({"columns": [{"name": "x"}]}),
     "must be an object with name and kind"),
    (lambda d: d.update({"num_partitions": 10 ** 9}), "num_partitions' must be in"),
    (lambda d: d["entity_types"]["node"].update({"num_nodes": "846"}),
     "field 'entity_types.node.num_nodes' must be int, got str '846'"),
    (lambda d: d["edge_sets"]["default"].update({"undirected": "false"}),
     "field 'edge_sets.default.undirected' must be bool, got str 'false'"),
    (lambda d: d["edge_sets"]["default"].update({"skipped_lines": 1.5}),
     "field 'edge_sets.default.skipped_lines' must be int, got float 1.5"),
])
def test_hostile_manifests_are_refused(graph_dir, edit, message):
    _edit_manifest(graph_dir, edit)
    with pytest.raises(FormatError, match=message):
        open_graph(graph_dir)
    with pytest.raises(FormatError, match=message):
        verify_graph(graph_dir)


def test_symlink_leaving_the_directory_is_refused(graph_dir, tmp_path):
    outside = tmp_path / "secret.arrow"
    target = graph_dir / bucket_file("default", 0, 1)
    shutil.copy(target, outside)
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(FormatError, match="resolves outside"):
        open_graph(graph_dir)


def test_symlinked_directory_leaving_the_directory_is_refused(graph_dir, tmp_path):
    # the files' directory, not a file, links out: each file's directory is resolved too
    inner = (graph_dir / bucket_file("default", 0, 1)).parent
    outside = tmp_path / "elsewhere"
    shutil.copytree(inner, outside)
    shutil.rmtree(inner)
    inner.symlink_to(outside, target_is_directory=True)
    with pytest.raises(FormatError, match="resolves outside"):
        open_graph(graph_dir)


def test_symlink_inside_the_directory_is_followed(graph_dir):
    target = graph_dir / bucket_file("default", 0, 1)
    moved = target.with_name("moved.arrow")
    target.rename(moved)
    target.symlink_to(moved.name)  # relative, and still inside
    assert open_graph(graph_dir).num_edges() > 0


def test_unlisted_file_is_refused_at_open(graph_dir):
    _edit_manifest(graph_dir, lambda d: d["files"].pop(bucket_file("default", 1, 0)))
    with pytest.raises(FormatError, match=r"bucket-00001-00000\.arrow: not listed"):
        open_graph(graph_dir)


@pytest.mark.parametrize("rel", ["index/default/csr-indices.arrow",
                                 "nodes/node/column-title.arrow"])
def test_an_unlisted_index_or_node_column_file_is_refused_at_open(tmp_path, rel):
    # each was mapped unlisted: its size never checked, and verify hashed none of them
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.ingest import NodeSource

    (tmp_path / "e.tsv").write_text("0\t1\n1\t2\n2\t0\n")
    ingest_sources([EdgeSource([tmp_path / "e.tsv"])], tmp_path / "g", IngestOptions(),
                   nodes=[NodeSource(pa.table({"id": [0, 1, 2], "title": ["a", "b", "c"]}))])
    build_index(open_graph(tmp_path / "g"), ("csr",))
    _edit_manifest(tmp_path / "g", lambda d: d["files"].pop(rel))
    for read in (open_graph, verify_graph):
        with pytest.raises(FormatError, match=f"{rel}: not listed in the manifest"):
            read(tmp_path / "g")


# -- defect 3: inconsistent graphs never segfault or run ---------------------------------------

def test_corrupted_offset_is_refused_by_every_reader(graph_dir):
    f = graph_dir / bucket_file("default", 0, 1)
    corrupt_offset(f)
    g = open_graph(graph_dir)  # sizes match: opening does not read the data
    for call in (g.csr, g.csc, g.degrees, lambda: list(g.iter_edges())):
        with pytest.raises(FormatError, match=r"bucket-00000-00001\.arrow: row 0: dst offset "
                                              r"2147483647 is outside its partition"):
            call()
    with pytest.raises(FormatError, match="bucket-00000-00001.arrow: row 0: dst offset"):
        verify_graph(graph_dir, quick=True)
    with pytest.raises(FormatError, match="bucket-00000-00001.arrow: sha256 mismatch"):
        verify_graph(graph_dir)


def test_negative_offset_and_wrong_schema(graph_dir):
    f = graph_dir / bucket_file("default", 1, 1)
    corrupt_offset(f, "src", row=3, value=-1)
    with pytest.raises(FormatError, match="row 3: src offset -1 is outside"):
        open_graph(graph_dir).csr()


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_engines_refuse_a_corrupted_bucket_in_one_line(graph_dir, mode, capsys):
    corrupt_offset(graph_dir / bucket_file("default", 1, 0))
    monkey = cli.COMMANDS
    rc = cli.main(["run", "pagerank", str(graph_dir), "--no-verify", "--mode", mode])
    err = capsys.readouterr().err.strip()
    assert rc == 3 and len(err.splitlines()) == 1, err
    assert "bucket-00001-00000.arrow: row 0: dst offset 2147483647" in err
    assert cli.COMMANDS == monkey


def test_corrupted_offset_in_a_child_process_is_an_error_not_a_signal(graph_dir):
    """An out-of-range offset must not crash the process: run the engines in a child and
    check that it exits with the one-line error code, not a signal."""
    corrupt_offset(graph_dir / bucket_file("default", 0, 1))
    for args in (["run", "pagerank", "--no-verify"], ["profile", "pagerank"]):
        proc = subprocess.run([sys.executable, "-m", "graphsys", args[0], args[1],
                               str(graph_dir), *args[2:]], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH":
                                                os.pathsep.join(sys.path)})
        assert proc.returncode == 3, (args, proc.returncode, proc.stderr[-2000:])
        assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
        assert "Traceback" not in proc.stderr


def test_wrong_partition_sizes_are_refused_at_open(graph_dir):
    def shift(d):
        sizes = d["entity_types"]["node"]["partition_sizes"]
        sizes[0] += 1
        sizes[1] -= 1
    _edit_manifest(graph_dir, shift)
    with pytest.raises(FormatError, match=r"part-00000\.arrow: \d+ nodes, manifest says"):
        open_graph(graph_dir)


def test_verify_quick_checks_structure_not_hashes(graph_dir, capsys):
    f = graph_dir / node_file("node", 0)
    assert cli.main(["verify", "--quick", str(graph_dir)]) == 0
    assert "structure verified (no hashes)" in capsys.readouterr().out
    # a flipped byte inside an id value: the structure still holds, only the hash differs
    table = paipc.open_file(pa.memory_map(str(f))).read_all()
    ids = table.column("id").to_numpy().copy()
    ids[0] += 1_000_000
    with paipc.new_file(str(f), table.schema) as w:
        w.write_table(table.set_column(0, "id", pa.array(ids, pa.int64())))
    assert cli.main(["verify", "--quick", str(graph_dir)]) == 0
    assert cli.main(["verify", str(graph_dir)]) == 3
    assert "part-00000.arrow: sha256 mismatch" in capsys.readouterr().err


# -- defect 5: explicit headers -----------------------------------------------------------------

def _ingest_text(tmp_path, text, **kw):
    f = tmp_path / "in.tsv"
    f.write_text(text)
    out = tmp_path / f"g{len(list(tmp_path.iterdir()))}"
    ingest_sources([EdgeSource([f], **kw)], out)
    return open_graph(out)


def test_auto_header_keeps_a_numeric_looking_data_line(tmp_path, caplog):
    g = _ingest_text(tmp_path, "A12\t7\n1\t2\n3\t4\n")
    assert g.num_edges() == 3  # "A12 7" is data: 7 is numeric
    assert "taken as a header" not in caplog.text


def test_auto_header_takes_a_non_numeric_line_and_says_so(tmp_path, caplog):
    g = _ingest_text(tmp_path, "from\tto\n1\t2\n3\t4\n")
    assert g.num_edges() == 2
    assert "first line taken as a header (from to)" in caplog.text


@pytest.mark.parametrize("text, header", [("src\tdst\n", None), ("src\tdst\n", True),
                                          ("# c\nsrc\tdst\n\n", None)])
def test_header_only_file_is_empty_input(tmp_path, text, header):
    with pytest.raises(InputError, match="empty input"):
        _ingest_text(tmp_path, text, header=header)


def test_header_yes_and_no(tmp_path):
    assert _ingest_text(tmp_path, "a\tb\nc\td\n", header=True).num_edges() == 1
    assert _ingest_text(tmp_path, "a\tb\nc\td\n", header=None).num_edges() == 2
    assert _ingest_text(tmp_path, "1\t2\n3\t4\n", header=False).num_edges() == 2
    assert _ingest_text(tmp_path, "x\ty\n3\t4", header=None).num_edges() == 1  # no final \n


def test_header_cli_flag(tmp_path, capsys):
    f = tmp_path / "e.tsv"
    f.write_text("a\tb\nc\td\n")
    assert cli.main(["ingest", str(f), "--out", str(tmp_path / "g"), "--header", "yes",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["edges"] == {"default": 1}


# -- defect 7: bounded partitions ---------------------------------------------------------------

@pytest.mark.parametrize("p, message", [(100_000, "must be a positive integer <= 4096, got 100000"),
                                        (7, "more than the nodes of the largest entity type")])
def test_partitions_are_bounded(tmp_path, p, message):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n2\t3\n3\t1\n")
    with pytest.raises(GraphsysError, match=message):
        ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=p))
    assert not (tmp_path / "g").exists()


# -- defect 8: one-line errors, nothing half-written ------------------------------------------

@pytest.mark.parametrize("column, message", [
    (pa.array([[1], [2]]), "type list<element: int64>: ids must be integers or strings"),
    (pa.array([b"a", b"b"]), "type binary: ids must be"),
    (pa.array([1.0, 2.0]), "type double: ids must be"),
    (pa.array([True, False]), "type bool: ids must be"),
    (pa.array([1, 2**63 + 5], pa.uint64()), "src id 9223372036854775813 .* does not fit"),
])
def test_parquet_id_columns_of_other_types_are_one_line(tmp_path, column, message):
    import pyarrow.parquet as pq

    f = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": column, "dst": pa.array([1, 2])}), f)
    with pytest.raises(InputError, match=message):
        ingest_sources([EdgeSource([f])], tmp_path / "g")
    assert not (tmp_path / "g").exists()


def test_export_of_an_id_tsv_cannot_hold_is_one_line(tmp_path, capsys):
    g = _ingest_text(tmp_path, 'a"b\tc\n')
    rc = cli.main(["export", str(g.path), "--out", str(tmp_path / "x.tsv")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "cannot write as TSV" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.glob("*x.tsv*"))


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n")
    (tmp_path / "FILE").write_text("")
    assert cli.main(["ingest", str(f), "--out", str(tmp_path / "FILE" / "sub")]) == 2
    assert "cannot create its directory" in capsys.readouterr().err


def test_losing_a_race_for_out_and_a_full_disk_leave_nothing(tmp_path):
    import errno

    from graphsys.storage.atomic import staging_directory

    out = tmp_path / "g"
    with pytest.raises(GraphsysError, match="created by another process"):
        with staging_directory(out) as staging:
            (staging / "x").write_text("mine")
            out.mkdir()
            (out / "manifest.json").write_text("{}")  # the other ingest won
    assert (out / "manifest.json").read_text() == "{}"
    with pytest.raises(GraphsysError, match="No space left on device"):
        with staging_directory(tmp_path / "h"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]


def test_os_errors_reach_the_user_as_one_line(monkeypatch, capsys):
    import errno

    from graphsys.commands import verify

    def full(args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/y")

    monkeypatch.setattr(verify, "run", full)
    assert cli.main(["verify", "somewhere"]) == 1
    assert capsys.readouterr().err == "error: /x/y: No space left on device\n"


# -- defect 9: decided coercions (docs/format.md) -----------------------------------------------

def test_integer_text_is_one_node_whatever_else_the_input_holds(tmp_path):
    only_ints = _ingest_text(tmp_path, "01\t3\n1\t2\n")
    mixed = _ingest_text(tmp_path, "01\ta\n1\t2\n+1\tb\n")
    assert only_ints.num_nodes() == 3 and only_ints.manifest.entity_types["node"].id_type \
        == "int64"
    assert mixed.num_nodes() == 4  # 1 (= 01 = +1), 2, a, b
    assert sorted(mixed.node_ids().to_pylist()) == ["1", "2", "a", "b"]


@pytest.mark.parametrize("text, message", [("a\x00b\t2\n", r"in\.tsv:1: NUL byte in src id"),
                                           ("1\t2\tnan\n", r"in\.tsv:1: non-finite weight"),
                                           ("1\t2\tinf\n", "non-finite weight 'inf'"),
                                           ("1\t2\t1e39\n", "non-finite weight '1e39'")])
def test_nul_ids_and_non_finite_weights_are_refused(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        _ingest_text(tmp_path, text, weight_col=2 if text.count("\t") == 2 else None)


def test_node_column_with_nulls_is_refused(tmp_path):
    """A node partition whose label or feature column holds nulls (graphsys writes none; a
    fuzzed validity buffer made pyarrow raise deep in a reader) is refused naming the file."""
    from graphsys.storage.ingest import NodeSource
    from graphsys.storage.node_reads import node_table
    from graphsys.storage.structure import check_node_table

    n = 12
    (tmp_path / "e.tsv").write_text("".join(f"{k}\t{(k + 1) % n}\n" for k in range(n)))
    nodes = pa.table({"id": pa.array(np.arange(n)), "label": pa.array(np.arange(n) % 3),
                      "feat": pa.FixedSizeListArray.from_arrays(
                          pa.array(np.ones(2 * n, np.float32)), 2)})
    ingest_sources([EdgeSource([tmp_path / "e.tsv"])], tmp_path / "g",
                   IngestOptions(partitions=1), nodes=[NodeSource(nodes)])
    g = open_graph(tmp_path / "g")
    table = node_table(g, "node", 0)
    labels = table.column("label").to_pylist()
    bad = table.set_column(table.column_names.index("label"), "label",
                           pa.array([None] + labels[1:], pa.int64()))
    with pytest.raises(FormatError, match=r"part-00000\.arrow: node column 'label' has 1 nulls"):
        check_node_table(bad, g, "node", 0, tmp_path / "g" / node_file("node", 0))
    feats = pa.FixedSizeListArray.from_arrays(
        pa.array([None] + [1.0] * (2 * n - 1), pa.float32()), 2)
    bad = table.set_column(table.column_names.index("feat"), "feat", feats)
    with pytest.raises(FormatError, match="node column 'feat' has 1 nulls"):
        check_node_table(bad, g, "node", 0, tmp_path / "g" / node_file("node", 0))


def test_label_beyond_the_node_count_is_refused(tmp_path):
    """A class id no node count could use (a corrupted label: the model would be sized by
    it) is refused in one line before a model is built."""
    from graphsys.gnn import TrainConfig, train
    from graphsys.storage.ingest import NodeSource

    n = 40
    (tmp_path / "e.tsv").write_text("".join(f"{k}\t{(k + 1) % n}\n" for k in range(n)))
    labels = np.arange(n) % 2
    labels[5] = 2**40
    nodes = pa.table({"id": pa.array(np.arange(n)), "label": pa.array(labels)})
    ingest_sources([EdgeSource([tmp_path / "e.tsv"])], tmp_path / "g",
                   IngestOptions(partitions=1), nodes=[NodeSource(nodes)])
    with pytest.raises(GraphsysError, match=r"label 1,099,511,627,776 is outside -1"):
        train(open_graph(tmp_path / "g"), TrainConfig(model="sage", epochs=1, hidden=4))


# -- round four: small ones -----------------------------------------------------------------------

def test_a_fifo_in_place_of_a_listed_file_is_named_as_one(graph_dir):
    bucket = next(p for p in (graph_dir / "edges").rglob("*.arrow"))
    bucket.unlink()
    os.mkfifo(bucket)
    with pytest.raises(FormatError, match=f"^{bucket}: not a regular file \\(a FIFO\\) "
                                          f"\\(listed in the manifest\\)$"):
        open_graph(graph_dir)
    bucket.unlink()
    bucket.mkdir()
    with pytest.raises(FormatError, match=r"not a regular file \(a directory\)"):
        open_graph(graph_dir)
    bucket.rmdir()
    with pytest.raises(FormatError, match=f"^{bucket}: missing \\(listed"):
        open_graph(graph_dir)


def test_node_table_ids_follow_the_edge_files_rule(tmp_path):
    """``' 2'`` and ``'03'`` in a node table are nodes 2 and 3 of the edges, as they are in
    an edge file; float ids are refused as in a Parquet edge file, not turned into text."""
    from graphsys.storage.ingest import NodeSource

    (tmp_path / "e.tsv").write_text("1\t2\n3\t4\n")
    edges = [EdgeSource([tmp_path / "e.tsv"])]
    nodes = pa.table({"id": ["1", " 2", "03", "4 "], "label": [0, 1, 0, 1]})
    ingest_sources(edges, tmp_path / "g", IngestOptions(), nodes=[NodeSource(nodes)])
    g = open_graph(tmp_path / "g")
    assert g.num_nodes() == 4 and g.manifest.entity_types["node"].id_type == "int64"
    assert dict(zip(g.node_ids().tolist(), g.node_column("label").tolist())) == {
        1: 0, 2: 1, 3: 0, 4: 1}
    for k, ids in enumerate(([1, 2, 3, 1.5], [1.0, 2.0, 3.0, 4.0])):
        with pytest.raises(InputError, match="^node table for 'node': id column has type "
                                             "double: ids must be integers or strings"):
            ingest_sources(edges, tmp_path / f"f{k}", IngestOptions(),
                   nodes=[NodeSource(pa.table({"id": ids}))])
    # whitespace around integer text in a string-id edge file: the integer too
    (tmp_path / "m.tsv").write_text("a\t 2\n3\t4 \n")
    ingest_sources([EdgeSource([tmp_path / "m.tsv"])], tmp_path / "m", IngestOptions())
    assert sorted(open_graph(tmp_path / "m").node_ids().to_pylist()) == ["2", "3", "4", "a"]


def test_null_strings_in_a_node_table_are_refused(tmp_path):
    from graphsys.storage.ingest import NodeSource

    (tmp_path / "e.tsv").write_text("1\t2\n3\t4\n")
    nodes = pa.table({"id": [1, 2, 3, 4], "title": ["a", None, "c", None]})
    with pytest.raises(InputError, match="^node table for 'node': column 'title' is null for "
                                         "node 2 \\(2 null in all\\); string columns hold "
                                         "no nulls"):
        ingest_sources([EdgeSource([tmp_path / "e.tsv"])], tmp_path / "g", IngestOptions(),
               nodes=[NodeSource(nodes)])
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("limit,message", [
    ("1", "--memory-limit must be at least 65,536 bytes"),
    ("1e99", "--memory-limit must be a positive size of at most 8 EiB"),
    ("100000PB", "--memory-limit must be a positive size of at most 8 EiB"),
])
def test_memory_limits_that_cannot_work_are_refused(tmp_path, capsys, limit, message):
    (tmp_path / "e.tsv").write_text("1\t2\n")
    assert cli.main(["ingest", str(tmp_path / "e.tsv"), "--out", str(tmp_path / "g"),
                     "--memory-limit", limit]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}"), err
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("target", ["empty", "missing"])
def test_out_through_a_symlink_is_written_where_it_points(tmp_path, target):
    # a symlink to an empty directory (or to none yet) failed after all the work: "was
    # created by another process while this one wrote (Not a directory)"
    from graphsys.storage.atomic import staging_directory

    if target == "empty":
        (tmp_path / target).mkdir()
    (tmp_path / "link").symlink_to(target)
    with staging_directory(tmp_path / "link") as staging:
        (staging / "x").write_text("mine")
    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / target / "x").read_text() == "mine"


def test_a_manifest_too_large_to_parse_is_refused_before_it_is_read(graph_dir, monkeypatch):
    import graphsys.storage.format as fmt

    size = (graph_dir / MANIFEST).stat().st_size
    monkeypatch.setattr(fmt, "available_memory", lambda: size * fmt.MANIFEST_PARSE_FACTOR - 1)
    monkeypatch.setattr(fmt.GraphLocation, "read_bytes", lambda *a, **k: pytest.fail("read"))
    with pytest.raises(FormatError, match=r"manifest\.json: [\d,]+ bytes, more than the "
                                          r"[\d,]+ a manifest may hold with the RAM"):
        open_graph(graph_dir)


def test_a_manifest_symlinked_out_of_the_directory_is_refused(graph_dir, tmp_path):
    outside = tmp_path / "manifest-elsewhere.json"
    shutil.copy(graph_dir / MANIFEST, outside)
    (graph_dir / MANIFEST).unlink()
    (graph_dir / MANIFEST).symlink_to(outside)
    with pytest.raises(FormatError, match="resolves outside"):
        open_graph(graph_dir)
