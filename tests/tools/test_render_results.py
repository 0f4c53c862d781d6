"""docs/benchmarks.md and docs/scaling.md are what tools/render_results.py renders from
docs/results/*.jsonl (the benchmarks' ``--record`` lines: tests/benchmarks/test_harness.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import render_results  # noqa: E402


def test_pages_match_their_rendering():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "render_results.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_row_has_the_fields_and_a_command():
    files = sorted((REPO / "docs" / "results").glob("*.jsonl"))
    assert files
    for path in files:
        rows = render_results.load_rows(path)
        assert rows or path.name == "gpu.jsonl", path.name  # filled by a GPU run
        for row in rows:
            assert row["command"].strip(), (path.name, row["workload"])
            assert len(row["measured_on"]) == 10, (path.name, row["workload"])


def test_a_stale_table_is_rewritten_and_a_short_row_refused(tmp_path):
    row = {"workload": "w", "peer": "p", "peer_figure": 2.0, "graphsys_figure": 1.0, "unit": "s",
           "ratio": 2.0, "machine": "m", "measured_on": "2026-01-01", "command": "python x.py"}
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    page = "intro\n<!-- results:t -->\nold\n<!-- /results:t -->\nnotes\n"
    out = render_results.render_page(page, tmp_path)
    assert "old" not in out and out.startswith("intro\n") and out.endswith("notes\n")
    assert "| w | p | 2 s | 1 s | **2.00×** | m; measured on 2026-01-01 | `python x.py` |" in out
    assert render_results.render_page(out, tmp_path) == out
    del row["command"]
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(SystemExit, match="missing field"):
        render_results.render_page(page, tmp_path)


def test_check_fails_on_a_hand_edited_table(tmp_path, monkeypatch, capsys):
    page = tmp_path / "page.md"
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t.jsonl").write_text(json.dumps(
        {"workload": "w", "peer": None, "peer_figure": None, "graphsys_figure": "1–2",
         "unit": "s", "ratio": None, "machine": "m", "measured_on": "2026-01-01",
         "command": "python x.py"}) + "\n")
    page.write_text("<!-- results:t -->\n| edited by hand |\n<!-- /results:t -->\n")
    monkeypatch.setattr(render_results, "PAGES", (page,))
    monkeypatch.setattr(render_results, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(render_results, "REPO", tmp_path)
    assert render_results.main(["--check"]) == 1
    assert render_results.main([]) == 0
    row = "| w | – | – | 1–2 s | – | m; measured on 2026-01-01 | `python x.py` |"
    assert row in page.read_text()
    assert render_results.main(["--check"]) == 0


def test_results_page_is_short_with_one_current_row_per_workload():
    """History belongs to git: under 300 lines, no workload twice in a table."""
    page = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert page.count("\n") < 300
    for path in sorted((REPO / "docs" / "results").glob("*.jsonl")):
        workloads = [row["workload"] for row in render_results.load_rows(path)]
        assert len(workloads) == len(set(workloads)), path.name
