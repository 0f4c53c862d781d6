"""Progress of long commands when stderr is not a terminal: one line every
GRAPHSYS_PROGRESS_SECONDS with done/total, rate and ETA; nothing with --quiet."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import graphsys
from graphsys.errors import GraphsysError
from graphsys.progress import LineProgress, interval, progress_bar

REPO = Path(__file__).resolve().parents[2]
#: A progress line of ``embed train``: done/total, share, rate, elapsed, ETA.
LINE = re.compile(r"^epoch 1/\d+: [\d.]+[kM]?/[\d.]+[kM]? edge \(\d+%\), [\d.]+[kM]?edge/s, "
                  r"elapsed [\d:]+, ETA [\d:?]+")


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.delenv("GRAPHSYS_PROGRESS_SECONDS", raising=False)
    assert interval() == 10.0
    monkeypatch.setenv("GRAPHSYS_PROGRESS_SECONDS", "2.5")
    assert interval() == 2.5
    for bad in ("0", "-1", "x", "inf"):
        monkeypatch.setenv("GRAPHSYS_PROGRESS_SECONDS", bad)
        with pytest.raises(GraphsysError, match="GRAPHSYS_PROGRESS_SECONDS"):
            interval()


def test_a_bad_interval_is_one_line_and_nothing_at_collection(tmp_path, monkeypatch, capsys):
    """'GRAPHSYS_PROGRESS_SECONDS=abc graphsys ingest ...' printed its error line, then an
    'Exception ignored in tqdm.__del__' traceback: the half-built bar was closed."""
    import gc

    from graphsys.cli import main

    raised = []
    monkeypatch.setattr(sys, "unraisablehook", raised.append)
    monkeypatch.setenv("GRAPHSYS_PROGRESS_SECONDS", "abc")
    (tmp_path / "e.tsv").write_text("0\t1\n")
    assert main(["ingest", str(tmp_path / "e.tsv"), "--out", str(tmp_path / "g")]) == 2
    gc.collect()
    assert raised == [] and capsys.readouterr().err == (
        "error: GRAPHSYS_PROGRESS_SECONDS='abc': expected a positive number of seconds\n")


def test_lines_not_bars_off_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHSYS_PROGRESS_SECONDS", "0.05")
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        bar = progress_bar(total=40, unit="batch", desc="train", file=f)
        assert isinstance(bar, LineProgress)
        for _ in range(40):
            time.sleep(0.005)
            bar.update(1)
        bar.close()
    text = log.read_text()
    assert "\r" not in text
    lines = text.splitlines()
    assert len(lines) >= 2 and lines[-1].startswith("train: 40/40 batch (100%)")
    # a loop shorter than the interval writes nothing
    monkeypatch.setenv("GRAPHSYS_PROGRESS_SECONDS", "10")
    with open(log, "w") as f:
        with progress_bar(total=3, unit="batch", desc="short", file=f) as bar:
            bar.update(3)
    assert log.read_text() == ""


@pytest.fixture(scope="module")
def big_graph(tmp_path_factory):
    rng = np.random.default_rng(0)
    n, m = 20_000, 400_000
    return graphsys.from_numpy(rng.integers(0, n, m), rng.integers(0, n, m),
                               tmp_path_factory.mktemp("g") / "g", num_nodes=n).path


def _train(graph: Path, out: Path, *extra: str) -> list[tuple[float, str]]:
    """Run ``graphsys embed train`` with stderr a pipe; (seconds since start, line) of
    every stderr line, read as it comes."""
    env = {**os.environ, "GRAPHSYS_PROGRESS_SECONDS": "0.5",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphsys", "embed", "train", "--graph", str(graph), "--out",
         str(out), "--set", "dimension=16", "--set", "batch_size=500", "--set",
         "num_epochs=1", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=env)
    lines = [(time.perf_counter() - t0, line.rstrip("\n")) for line in proc.stderr]
    assert proc.wait() == 0, "\n".join(x for _, x in lines)
    return lines


def test_embed_train_prints_progress_lines_off_a_terminal(big_graph, tmp_path):
    lines = _train(big_graph, tmp_path / "ckpt")
    progress = [(t, x) for t, x in lines if LINE.match(x)]
    assert len(progress) >= 2, [x for _, x in lines]
    assert not any("\r" in x for _, x in lines)
    # a line at least every 30 s (here every 0.5 s of training: gaps well under 30 s)
    times = [t for t, _ in progress]
    assert max(np.diff(times)) < 30
    assert "(100%)" in progress[-1][1]  # the last line when the epoch ends
    quiet = _train(big_graph, tmp_path / "ckpt2", "--quiet")
    assert not [x for _, x in quiet if LINE.match(x)]


def test_progress_and_progress_lines_on_rank_0_only(monkeypatch):
    """Under torchrun, graphsys mine (its progress lines) and gnn train ("training ...", its
    progress) printed once per rank on stderr: rank 0 alone prints them now."""
    import argparse

    from graphsys.commands._common import show_progress
    from graphsys.commands.gnn import _say

    args = argparse.Namespace(quiet=False, json=False)
    env = {"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    said = []
    monkeypatch.setattr("tqdm.tqdm.write", lambda line, file=None: said.append(line))
    assert not show_progress(args)
    _say(args)("training")
    monkeypatch.setenv("RANK", "0")
    assert show_progress(args)
    _say(args)("training")
    assert said == ["training"]
    monkeypatch.delenv("RANK")  # a stray WORLD_SIZE: refused where a group forms, not here
    assert show_progress(args)
