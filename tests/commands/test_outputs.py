"""No output path replaces an existing file unasked, and none lands inside a graph or
checkpoint directory (:mod:`graphsys.outputs`): ``--trace``, ``--report`` (and its JSON),
``run --out``, ``export --out``, ``generate --out``, ``embed export --out``; each refusal
is one line, before any work."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphsys import cli, open_graph, trace
from graphsys.errors import GraphsysError, ParameterError
from graphsys.outputs import (
    OutputPath,
    check_output,
    check_output_directory,
    check_own_directory,
    protected_directory,
)
from graphsys.storage.format import MANIFEST
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    rng = np.random.default_rng(0)
    rows = {(int(rng.integers(40)), int(rng.integers(2)), int(rng.integers(40)))
            for _ in range(300)}
    (root / "e.tsv").write_text("".join(f"{h}\tr{r}\t{t}\n" for h, r, t in sorted(rows)))
    train = EdgeSource([root / "e.tsv"], edge_set="train", src_col=0, rel_col=1, dst_col=2)
    ingest_sources([train], root / "g", IngestOptions(partitions=2))
    return root / "g"


@pytest.fixture(scope="module")
def checkpoint(graph, tmp_path_factory):
    out = tmp_path_factory.mktemp("outputs-ck") / "ck"
    assert cli.main(["embed", "train", "--graph", str(graph), "--out", str(out), "--set",
                     "dimension=4", "--set", "num_epochs=1", "--set", "num_partitions=2",
                     "--json"]) == 0
    assert (out / "checkpoint.json").is_file()
    return out


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _run(graph, *extra):
    return cli.main(["run", "pagerank", str(graph), "--max-iters", "2", "--json",
                     "--allow-unconverged", *extra])


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_trace_into_the_graph_read_is_refused(graph, capsys, overwrite):
    before = (graph / MANIFEST).read_bytes()
    assert _run(graph, "--trace", str(graph / MANIFEST), *overwrite) == 2
    line = _one_line_error(capsys)
    assert f"inside the graph directory {graph}" in line
    assert (graph / MANIFEST).read_bytes() == before
    open_graph(graph)
    assert _run(graph, "--trace", str(graph / "nodes" / "t.json"), *overwrite) == 2
    assert "inside the graph directory" in _one_line_error(capsys)


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_trace_into_a_checkpoint_is_refused(graph, checkpoint, capsys, overwrite):
    meta = (checkpoint / "checkpoint.json").read_bytes()
    assert _run(graph, "--trace", str(checkpoint / "checkpoint.json"), *overwrite) == 2
    assert f"inside the checkpoint directory {checkpoint}" in _one_line_error(capsys)
    assert _run(graph, "--trace", str(checkpoint / "new.json"), *overwrite) == 2
    assert "inside the checkpoint directory" in _one_line_error(capsys)
    assert not (checkpoint / "new.json").exists()
    assert (checkpoint / "checkpoint.json").read_bytes() == meta
    # training on into the checkpoint is still allowed; its trace goes elsewhere
    assert cli.main(["embed", "train", "--graph", str(graph), "--out", str(checkpoint),
                     "--set", "dimension=4", "--set", "num_epochs=1", "--set",
                     "num_partitions=2", "--json", "--trace",
                     str(checkpoint / "t.json")]) == 2
    assert "inside the checkpoint directory" in _one_line_error(capsys)


def test_existing_trace_needs_overwrite(graph, tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text("keep me")
    assert _run(graph, "--trace", str(path)) == 2
    assert _one_line_error(capsys) == (f"error: --overwrite is needed to replace {path}, "
                                       f"which already exists (or choose another trace path)")
    assert path.read_text() == "keep me"
    assert _run(graph, "--trace", str(path), "--overwrite") == 0
    assert "traceEvents" in json.loads(path.read_text())


@pytest.mark.parametrize("command", [
    ["embed", "train", "--graph", "{g}", "--out", "{tmp}/ck2", "--set", "dimension=4",
     "--set", "num_epochs=1"],
    ["profile", "pagerank", "{g}", "--max-iters", "2", "--no-dense"],
])
def test_every_trace_command_refuses_an_existing_file(graph, tmp_path, capsys, command):
    path = tmp_path / "t.json"
    path.write_text("keep me")
    argv = [a.format(g=graph, tmp=tmp_path) for a in command]
    assert cli.main(argv + ["--trace", str(path)]) == 2
    assert "--overwrite is needed to replace" in _one_line_error(capsys)
    assert path.read_text() == "keep me"
    assert not (tmp_path / "ck2").exists()


def test_run_out(graph, tmp_path, capsys):
    out = tmp_path / "pr.parquet"
    out.write_text("keep me")
    assert _run(graph, "--out", str(out)) == 2
    assert "--overwrite is needed to replace" in _one_line_error(capsys)
    assert out.read_text() == "keep me"
    assert _run(graph, "--out", str(graph / "pr.parquet"), "--overwrite") == 2
    assert "inside the graph directory" in _one_line_error(capsys)
    assert not (graph / "pr.parquet").exists()
    assert _run(graph, "--out", str(out), "--overwrite") == 0


def test_profile_report_and_its_json(graph, tmp_path, capsys):
    report = tmp_path / "p.html"
    (tmp_path / "p.json").write_text("keep me")  # the report's JSON, beside it
    argv = ["profile", "pagerank", str(graph), "--max-iters", "2", "--no-dense", "--json"]
    assert cli.main(argv + ["--report", str(report)]) == 2
    assert "--overwrite is needed to replace" in _one_line_error(capsys)
    assert (tmp_path / "p.json").read_text() == "keep me"
    assert cli.main(argv + ["--report", str(graph / "p.html"), "--overwrite"]) == 2
    assert "inside the graph directory" in _one_line_error(capsys)


def test_export_and_generate_outputs(graph, checkpoint, tmp_path, capsys):
    assert cli.main(["export", str(graph), "--out", str(graph / "e.tsv"), "--overwrite"]) == 2
    assert "inside the graph directory" in _one_line_error(capsys)
    taken = tmp_path / "taken.tsv"
    taken.write_text("keep me")
    assert cli.main(["generate", "rmat", "--nodes", "64", "--edges", "100", "--out",
                     str(taken)]) == 2
    assert "--overwrite is needed to replace" in _one_line_error(capsys)
    assert taken.read_text() == "keep me"
    assert cli.main(["generate", "rmat", "--nodes", "64", "--edges", "100", "--out",
                     str(graph / "x.tsv"), "--overwrite"]) == 2
    assert "inside the graph directory" in _one_line_error(capsys)
    assert cli.main(["embed", "export", str(checkpoint), "--out", str(taken)]) == 2
    assert "--overwrite is needed to replace" in _one_line_error(capsys)
    assert cli.main(["embed", "export", str(checkpoint), "--out",
                     str(checkpoint / "e.tsv"), "--overwrite"]) == 2
    assert "inside the checkpoint directory" in _one_line_error(capsys)
    assert cli.main(["embed", "export", str(checkpoint), "--out", str(taken),
                     "--overwrite"]) == 0
    assert taken.read_text() != "keep me"


def test_check_output_library(graph, tmp_path):
    out = check_output(tmp_path / "a.json")
    assert isinstance(out, OutputPath) and out == tmp_path / "a.json" and not out.overwrite
    (tmp_path / "a.json").write_text("x")
    with pytest.raises(ParameterError, match="overwrite is needed to replace"):
        check_output(tmp_path / "a.json")
    kept = check_output(tmp_path / "a.json", overwrite=True)
    assert kept.overwrite and check_output(kept).overwrite  # the choice travels with it
    with pytest.raises(GraphsysError, match="inside the graph directory"):
        check_output(graph / "deep" / "er" / "x.json", overwrite=True)
    assert protected_directory(graph / "nodes") == (graph, "graph")
    assert protected_directory(tmp_path / "a.json") is None
    # a directory that merely holds some other manifest.json is not protected
    (tmp_path / "manifest.json").write_text('{"format": "something-else"}')
    assert protected_directory(tmp_path / "b.json") is None


def test_a_path_through_a_link_into_the_graph_is_refused(graph, tmp_path, capsys):
    """``lnk/../pr.parquet`` with ``lnk`` a link to the graph's ``nodes`` directory names
    the graph's own directory (the system follows the link before ``..``): 'run --out'
    wrote pr.parquet inside the graph, which was read as ``./pr.parquet``."""
    (tmp_path / "lnk").symlink_to(graph / "nodes", target_is_directory=True)
    through = f"{tmp_path}/lnk/../pr.parquet"
    assert _run(graph, "--out", through) == 2
    assert "inside the graph directory" in _one_line_error(capsys)
    assert not (graph / "pr.parquet").exists() and not (tmp_path / "pr.parquet").exists()
    with pytest.raises(GraphsysError, match="inside the graph directory"):
        check_output_directory(f"{tmp_path}/lnk/../ck")
    with pytest.raises(GraphsysError, match="is the graph directory"):
        check_own_directory(f"{tmp_path}/lnk/..")


@pytest.mark.parametrize("argv, flag, name", [
    (["run", "pagerank"], "--out", "d.parquet"),
    (["run", "pagerank"], "--trace", "d.json"),
    (["profile", "pagerank"], "--report", "d.html"),
])
def test_a_directory_where_a_file_is_written_is_refused_before_the_run(
        graph, tmp_path, capsys, argv, flag, name):
    """An existing directory named as a file output, with --overwrite: the run did all its
    work, then failed on its temp file ('error: .d.parquet.tmp-26694-0d608192: Is a
    directory'); it is refused before any work, in one line, and left as it was."""
    (tmp_path / name).mkdir()
    (tmp_path / name / "keep").write_text("x")
    assert cli.main([*argv, str(graph), flag, str(tmp_path / name), "--overwrite"]) == 2
    assert "is a directory, where a file is written" in _one_line_error(capsys)
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert (tmp_path / name / "keep").read_text() == "x"
    with pytest.raises(GraphsysError, match="is a directory"):
        check_output(tmp_path / name, overwrite=True)


@pytest.mark.parametrize("make", ["fifo", "link to a FIFO"])
@pytest.mark.parametrize("argv, name", [(["export"], "e.tsv"), (["run", "pagerank"], "r.parquet")])
def test_a_special_file_is_never_renamed_over(graph, tmp_path, capsys, argv, name, make):
    """--overwrite renamed a regular file over a device, a FIFO or a symlink to one: as
    root, '--out /dev/null --overwrite' replaced /dev/null for the whole system, and
    '--out /dev/stdout' its symlink. Only a regular file is replaced."""
    import os

    out = tmp_path / name
    if make == "fifo":
        os.mkfifo(out)
    else:
        os.mkfifo(tmp_path / "elsewhere")
        out.symlink_to(tmp_path / "elsewhere")
    assert cli.main([*argv, str(graph), "--out", str(out), "--overwrite"]) == 2
    assert "is not a regular file (a device, a FIFO or a socket)" in _one_line_error(capsys)
    assert os.path.exists(out) and not os.path.isfile(out)  # left as it was
    assert {p.name for p in tmp_path.iterdir()} <= {name, "elsewhere"}


@pytest.mark.parametrize("argv, flag", [
    (["run", "pagerank", "{g}"], "--out"), (["run", "pagerank", "{g}"], "--trace"),
    (["profile", "pagerank", "{g}"], "--report"),
    (["generate", "rmat", "--nodes", "16"], "--out"),
])
def test_an_output_under_a_file_is_said_to_be_so(graph, tmp_path, capsys, argv, flag):
    """An output whose directory is a file was refused as 'directory afile does not
    exist' (it does, as a file); the line now says what is wrong."""
    (tmp_path / "afile").write_text("x")
    name = {"--out": "x.parquet", "--trace": "t.json", "--report": "r.html"}[flag]
    if argv[0] == "generate":
        name = "x.tsv"
    args = [a.format(g=graph) for a in argv] + [flag, str(tmp_path / "afile" / name)]
    assert cli.main(args) == 2
    assert _one_line_error(capsys).endswith(f"{tmp_path / 'afile'} is a file")


def test_recording_keeps_the_overwrite_choice(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("old")
    with pytest.raises(ParameterError, match="overwrite is needed"):
        with trace.recording(path):
            pass
    assert path.read_text() == "old"
    with trace.recording(trace.check_trace_path(path, overwrite=True)):
        pass
    assert "traceEvents" in json.loads(path.read_text())


def test_directory_outputs_stay_out_of_graphs_and_checkpoints(graph, checkpoint, tmp_path,
                                                              capsys):
    edges = graph.parent / "e.tsv"
    assert cli.main(["ingest", str(edges), "--out", str(graph / "sub")]) == 2
    assert "inside the graph directory" in _one_line_error(capsys)
    assert cli.main(["demo", "--out", str(checkpoint / "demo")]) == 2
    assert "inside the checkpoint directory" in _one_line_error(capsys)
    assert cli.main(["gnn", "embed", "--checkpoint", str(tmp_path / "none"), "--out",
                     str(graph / "emb")]) == 2
    assert "inside the graph directory" in _one_line_error(capsys)
    assert not (graph / "sub").exists() and not (graph / "emb").exists()
    assert not (checkpoint / "demo").exists()
    # the directory itself may be one (training on resumes a checkpoint): only its parents
    assert check_output_directory(checkpoint) == checkpoint


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_profile_report_json_and_trace_naming_one_file(graph, tmp_path, capsys, overwrite):
    """``--report R.html --trace R.json``: refused before the profile runs (it used to run
    the whole profile, then refuse its own report, or replace the trace with it)."""
    argv = ["profile", "pagerank", str(graph), "--max-iters", "2", "--no-dense", "--json",
            "--report", str(tmp_path / "R.html"), "--trace", str(tmp_path / "R.json"),
            *overwrite]
    assert cli.main(argv) == 2
    assert _one_line_error(capsys) == (f"error: --report's JSON and --trace both name "
                                       f"{tmp_path / 'R.json'}: give each output a path of "
                                       f"its own")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_outputs_of_one_command_are_distinct(graph, checkpoint, tmp_path, capsys):
    # a symbolic link is the file it names
    (tmp_path / "t.json").symlink_to(tmp_path / "pr.parquet")
    assert _run(graph, "--out", str(tmp_path / "pr.parquet"), "--trace",
                str(tmp_path / "t.json"), "--overwrite") == 2
    assert "both name" in _one_line_error(capsys)
    assert not (tmp_path / "pr.parquet").exists()
    # a trace inside the checkpoint the command creates (or fills: an empty directory)
    (tmp_path / "ck").mkdir()
    (tmp_path / "run").mkdir()
    assert cli.main(["embed", "train", "--graph", str(graph), "--out", str(tmp_path / "ck"),
                     "--set", "dimension=4", "--set", "num_epochs=1", "--trace",
                     str(tmp_path / "ck" / "t.json")]) == 2
    assert _one_line_error(capsys) == (f"error: --trace {tmp_path / 'ck' / 't.json'} lies "
                                       f"inside {tmp_path / 'ck'}, the directory --out "
                                       f"creates: write it outside")
    assert not any((tmp_path / "ck").iterdir())
    assert cli.main(["gnn", "train", "--graph", str(graph), "--out", str(tmp_path / "run"),
                     "--trace", str(tmp_path / "run" / "t.json")]) == 2
    assert "lies inside" in _one_line_error(capsys)
    assert not any((tmp_path / "run").iterdir())
    # two exports into one file
    assert cli.main(["embed", "export", str(checkpoint), "--out", str(tmp_path / "e.tsv"),
                     "--relations-out", str(tmp_path / "e.tsv")]) == 2
    assert "--out and --relations-out both name" in _one_line_error(capsys)
    assert not (tmp_path / "e.tsv").exists()


def test_check_outputs_library(tmp_path):
    from graphsys.outputs import check_outputs

    a, b = tmp_path / "a.json", tmp_path / "sub" / ".." / "a.json"
    with pytest.raises(GraphsysError, match=f"^report and trace both name {a}"):
        check_outputs([("report", a, "file"), ("trace", b, "file")])
    a.write_text("x")
    (tmp_path / "hard.json").hardlink_to(a)
    with pytest.raises(GraphsysError, match="^x and y both name"):
        check_outputs([("x", a, "file"), ("y", tmp_path / "hard.json", "file")],
                      overwrite=True)
    with pytest.raises(ParameterError, match="^overwrite is needed to replace"):
        check_outputs([("x", a, "file"), ("y", tmp_path / "c.json", "file")])
    got = check_outputs([("out", tmp_path / "d", "directory"), ("none", None, "file"),
                         ("trace", tmp_path / "t.json", "file")])
    assert got == [tmp_path / "d", None, tmp_path / "t.json"]
    assert isinstance(got[2], OutputPath)
