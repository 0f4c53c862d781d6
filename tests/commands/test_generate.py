"""``graphsys generate``: every kind end to end; bad values exit non-zero with one line."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from graphsys.cli import main


def _run(capsys, *argv):
    code = main(["generate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_rmat_json_summary(tmp_path, capsys):
    out = tmp_path / "r.parquet"
    code, stdout, stderr = _run(capsys, "rmat", "--nodes", "1Ki", "--edges", "20k", "--seed",
                                "3", "--out", str(out), "--json")
    assert code == 0 and stderr == ""
    summary = json.loads(stdout)
    assert summary["kind"] == "rmat" and summary["files"] == [str(out)]
    assert summary["nodes"] == 1024 and summary["edges"] == 20_000 and summary["seed"] == 3
    assert summary["seconds"] >= 0
    table = pq.read_table(out)
    assert table.num_rows == 20_000 and table.column_names == ["src", "dst"]
    assert table["src"].to_numpy().max() < 1024


def test_rmat_is_reproducible_and_defaults_to_16_edges_per_node(tmp_path, capsys):
    for name in ("a.tsv", "b.tsv"):
        assert _run(capsys, "rmat", "--nodes", "500", "--out", str(tmp_path / name),
                    "--quiet")[0] == 0
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()
    assert (tmp_path / "a.tsv").read_text().count("\n") == 16 * 500


def test_grid_text_line(tmp_path, capsys):
    out = tmp_path / "g.tsv.gz"
    code, stdout, stderr = _run(capsys, "grid", "--nodes", "400", "--edges", "700", "--out",
                                str(out))
    assert code == 0 and stderr == ""  # no progress bar when stderr is not a terminal
    assert stdout.startswith("wrote 700 edges over 400 nodes to")
    table = pacsv.read_csv(out, read_options=pacsv.ReadOptions(column_names=["s", "d", "w"]),
                           parse_options=pacsv.ParseOptions(delimiter="\t"))
    assert table.num_rows == 700 and (table["w"].to_numpy() >= 1).all()


def test_sbm_writes_edges_and_node_table(tmp_path, capsys):
    out = tmp_path / "s.arrow"
    code, stdout, _ = _run(capsys, "sbm", "--nodes", "2000", "--edges", "8000", "--blocks", "5",
                           "--features", "4", "--out", str(out), "--json")
    assert code == 0
    summary = json.loads(stdout)
    nodes_path = tmp_path / "s.nodes.parquet"
    assert summary["files"] == [str(out), str(nodes_path)] and summary["blocks"] == 5
    assert summary["split_sizes"] == {"train": 100, "val": 500, "test": 1000}
    nodes = pq.read_table(nodes_path)
    assert nodes.num_rows == 2000 and set(nodes["label"].to_pylist()) == set(range(5))
    assert nodes.schema.field("feat").type.list_size == 4


def test_kg_splits(tmp_path, capsys):
    out = tmp_path / "kg.tsv"
    code, stdout, _ = _run(capsys, "kg", "--nodes", "1000", "--relations", "6", "--splits",
                           "0.8,0.1,0.1", "--out", str(out), "--json")
    assert code == 0
    summary = json.loads(stdout)
    assert summary["edges"] == 10_000 and sum(summary["splits"].values()) == 10_000
    names = [f"kg.{s}.tsv" for s in ("train", "valid", "test")]
    assert summary["files"] == [str(tmp_path / n) for n in names]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    rels = {line.split("\t")[1] for line in (tmp_path / names[0]).read_text().splitlines()}
    assert rels == {f"r{i}" for i in range(6)}
    assert not out.exists()


def test_existing_output_needs_overwrite(tmp_path, capsys):
    out = str(tmp_path / "r.tsv")
    assert _run(capsys, "rmat", "--nodes", "100", "--out", out)[0] == 0
    code, _, err = _run(capsys, "rmat", "--nodes", "100", "--seed", "1", "--out", out)
    assert code == 2 and "already exists" in err and "--overwrite" in err
    assert _run(capsys, "rmat", "--nodes", "100", "--seed", "1", "--out", out,
                "--overwrite")[0] == 0


@pytest.mark.parametrize("argv, option", [
    (["rmat", "--nodes", "0"], "--nodes"),
    (["rmat", "--nodes", "-3"], "--nodes"),
    (["rmat", "--nodes", "10", "--edges", "0"], "--edges"),
    (["rmat", "--nodes", "10", "--edges", "1.5"], "--edges"),
    (["rmat", "--nodes", "10", "--abc", "0.6,0.3,0.2"], "--abc"),
    (["rmat", "--nodes", "10", "--abc", "0.6,0.3"], "--abc"),
    (["rmat", "--nodes", "10", "--seed", "x"], "--seed"),
    (["grid", "--nodes", "10", "--edges", "1000"], "--edges"),
    (["grid", "--nodes", "10", "--weight-range", "0,1"], "--weight-range"),
    (["sbm", "--nodes", "10", "--blocks", "0"], "--blocks"),
    (["sbm", "--nodes", "100", "--ratio", "-2"], "--ratio"),
    (["kg", "--nodes", "100", "--splits", "0.5,0.2,0.2"], "--splits"),
    (["kg", "--nodes", "100", "--relations", "0"], "--relations"),
])
def test_bad_values_exit_with_one_line(tmp_path, capsys, argv, option):
    code, stdout, err = _run(capsys, *argv, "--out", str(tmp_path / "x.tsv"))
    assert code == 2 and stdout == ""
    assert err.startswith(f"error: {option}") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out, words", [("x.txt", "unknown output extension"),
                                        ("missing/x.tsv", "does not exist")])
def test_bad_out(tmp_path, capsys, out, words):
    code, _, err = _run(capsys, "rmat", "--nodes", "10", "--out", str(tmp_path / out))
    assert code == 2 and err.startswith("error: --out:") and words in err
    assert err.count("\n") == 1


def test_counts_accept_suffixes(tmp_path, capsys):
    code, stdout, _ = _run(capsys, "rmat", "--nodes", "1e3", "--edges", "2.5k", "--out",
                           str(tmp_path / "r.feather"), "--json")
    assert code == 0
    assert json.loads(stdout)["nodes"] == 1000 and json.loads(stdout)["edges"] == 2500
    assert np.isfinite(json.loads(stdout)["edges_per_second"])


@pytest.mark.parametrize("argv, message", [
    (["rmat", "--splits", "0.8,0.1,0.1"], "--splits is an option of kg, not of rmat"),
    (["grid", "--no-permute"], "--no-permute is an option of rmat, not of grid"),
    (["kg", "--blocks", "3"], "--blocks is an option of sbm, not of kg"),
    (["sbm", "--weight-range", "1,2"], "--weight-range is an option of grid, not of sbm"),
    (["grid", "--edges", "10", "--drop", "0.5"], "--drop and --edges both set"),
])
def test_an_option_the_kind_does_not_read_is_refused(tmp_path, capsys, argv, message):
    """Another kind's option (rmat --splits wrote no split files) is one line, no file."""
    code, _, err = _run(capsys, *argv[:1], "--nodes", "100", *argv[1:], "--out",
                        str(tmp_path / "x.tsv"))
    assert code != 0 and err.startswith(f"error: {message}") and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())
