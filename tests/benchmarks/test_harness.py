"""benchmarks/harness.py: the JSON line and its record, alternation and medians, a child's
memory sampled from outside, missing inputs named, R-MAT through graphsys.generators."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import harness  # noqa: E402


def test_record_appends_the_printed_line(tmp_path, capsys, monkeypatch):
    ap = harness.parser("Bench x.\n\nMore.")
    args = ap.parse_args(["--record", str(tmp_path / "r.jsonl")])
    monkeypatch.setattr(sys, "argv", ["benchmarks/x/y.py", "--record", str(args.record)])
    harness.emit({"bench": "x", "seconds": 1.5}, args.record)
    harness.emit({"bench": "x", "seconds": 2.5}, args.record)
    printed = capsys.readouterr().out.splitlines()
    assert [json.loads(x)["seconds"] for x in printed] == [1.5, 2.5]
    records = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["raw"]["seconds"] for r in records] == [1.5, 2.5]
    assert records[0]["command"].startswith("python benchmarks/x/y.py --record ")
    assert len(records[0]["measured_on"]) == 10


def test_run_line_names_missing_inputs_and_carries_load_and_peaks(capsys):
    run = harness.Run("area/name")
    run.missing("road-graph rows", "no dataset mirror")
    run["graphs"] = []
    line = run.emit(ratio=2.0)
    out, err = capsys.readouterr()
    assert json.loads(out) == line
    assert "area/name: not measured: road-graph rows: no dataset mirror" in err
    assert line["missing"] == [{"rows": "road-graph rows", "reason": "no dataset mirror"}]
    assert len(line["load_avg_start"]) == len(line["load_avg_end"]) == 3
    assert 0 < line["peak_rss_anon_bytes"] <= line["peak_rss_bytes"]
    assert line["cpus"] >= 1 and "cores" in line["cpu"]


def test_counts_and_sizes_read_as_the_cli_reads_them():
    assert harness.count("10M") == 10_000_000 and harness.count("32Mi") == 1 << 25
    assert harness.counts("1M,2k") == [1_000_000, 2000]
    assert harness.size("2GB") == 2_000_000_000
    with pytest.raises(argparse.ArgumentTypeError, match="non-negative integer"):
        harness.count("ten")
    ap = harness.parser(None)
    ap.add_argument("--edges", type=harness.count)
    with pytest.raises(SystemExit):
        ap.parse_args(["--edges", "1.5"])


def test_alternation_medians_and_ratios():
    calls = []
    turns = harness.alternate({"a": lambda: calls.append("a") or len(calls),
                               "peer": None,
                               "b": lambda: calls.append("b") or len(calls)}, 3)
    assert calls == ["a", "b"] * 3 and turns == {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert harness.spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert harness.pair_ratios([2.0, 6.0, 3.0], [1.0, 2.0, 1.0]) == {
        "ratios": [2.0, 3.0, 3.0], "median": 3.0}
    assert harness.spread_by_key([{"x": 1, "s": "a"}, {"x": 3, "s": "b"}]) == {
        "x": {"median": 2.0, "min": 1, "max": 3}}


def test_child_json_and_peaks_sampled_from_outside():
    code = ("import json, time, numpy as np\n"
            "a = np.ones(40_000_000 // 8); a += 1; time.sleep(0.3)\n"
            "print('progress'); print(json.dumps({'sum': float(a.sum())}))")
    child = harness.run_child([sys.executable, "-c", code])
    assert child.json == {"sum": 2 * 5_000_000} and child.returncode == 0
    assert child.peak_rss_anon_bytes > 40_000_000 * 0.9
    assert child.peak_rss_bytes >= child.peak_rss_anon_bytes
    with pytest.raises(SystemExit, match="exited 3"):
        harness.run_child([sys.executable, "-c", "import sys; sys.exit(3)"])
    slow = harness.run_child([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert slow.timed_out and slow.json is None


def test_missing_dataset_is_said_not_raised(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GRAPHSYS_MIRROR", str(tmp_path / "no-such-mirror"))
    monkeypatch.setattr(harness, "REPO", tmp_path)  # no ../shared/datasets either
    run = harness.Run("area/name", memory=False)
    assert harness.dataset(run, "no-such-dataset", tmp_path / "g") is None
    assert run["missing"][0]["rows"] == "no-such-dataset rows"
    assert "no dataset mirror" in run["missing"][0]["reason"]
    assert "not measured: no-such-dataset rows: " in capsys.readouterr().err


def test_rmat_inputs_come_from_graphsys_generators(tmp_path):
    from graphsys import open_graph
    from graphsys.generators import rmat_edges

    src, dst = harness.rmat_arrays(1000, 5000, seed=3)
    want = next(rmat_edges(1000, 5000, seed=3, chunk_edges=5000))
    assert np.array_equal(src, want["src"]) and np.array_equal(dst, want["dst"])
    path, info = harness.rmat_graph(tmp_path, 5000, 1000, partitions=2, seed=3)
    g = open_graph(path)
    assert g.num_edges() == 5000 and g.num_partitions == 2 and not info["reused"]
    assert not list(tmp_path.glob("*.parquet"))
    assert harness.rmat_graph(tmp_path, 5000, 1000, partitions=2, seed=3)[1] == {
        "reused": True}
    adj = harness.csr_keeping_duplicates(np.array([1, 0, 1]), np.array([2, 2, 2]), 3, 3)
    assert adj.indptr.tolist() == [0, 1, 3, 3] and adj.indices.tolist() == [2, 2, 2]


def test_peer_environment_drops_the_openmp_settings_graphsys_made(monkeypatch):
    from graphsys import openmp

    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setattr(openmp, "SET_HERE", ["OMP_WAIT_POLICY"])  # as the policy exports it
    assert "OMP_WAIT_POLICY" not in harness.peer_environment()
    assert harness.peer_environment(EXTRA="1")["EXTRA"] == "1"
    assert harness.peer_python("dgl", Path("."), skip=True) == (None, "--skip-dgl")
