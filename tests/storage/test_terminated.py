"""SIGTERM (``timeout``, Slurm, systemd, Kubernetes) stops a writing command as Ctrl-C
does: one ``error:`` line, exit 143, no index build directory, staging directory or
temporary file left, the graph as it was; and ``verify`` tells what an interrupted writer
left (SIGKILL) from damage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import graphsys
from graphsys import cli
from graphsys.storage import adjacency_index, export, ingest
from graphsys.storage.verify import leftovers, verify_graph


@pytest.fixture
def graph_dir(tmp_path):
    d = tmp_path / "g"
    graphsys.from_numpy(np.array([1, 2, 3, 3]), np.array([2, 3, 1, 4]), d, partitions=2)
    return d


def _terminate_self(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)  # the handler interrupts the sleep
    raise AssertionError("SIGTERM was not handled")


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_sigterm_during_index(graph_dir, monkeypatch, capsys):
    def partial(graph, name, kind, tmp, *args):
        (tmp / f"{kind}-indices.arrow").write_bytes(b"partial")
        _terminate_self()

    before = (graph_dir / "manifest.json").read_bytes()
    monkeypatch.setattr(adjacency_index, "_build_one", partial)
    assert cli.main(["index", str(graph_dir), "--csr"]) == 128 + signal.SIGTERM
    assert _one_line(capsys) == "error: terminated (SIGTERM)"
    assert leftovers(graph_dir) == [] and not list((graph_dir / "index").glob(".tmp-*"))
    assert (graph_dir / "manifest.json").read_bytes() == before
    assert verify_graph(graph_dir)["leftovers"] == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_sigterm_during_ingest_leaves_no_staging_directory(tmp_path, monkeypatch, capsys):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\n2\t3\n")
    monkeypatch.setattr(ingest, "sync_files", _terminate_self)
    assert cli.main(["ingest", str(f), "--out", str(tmp_path / "g")]) == 143
    assert _one_line(capsys) == "error: terminated (SIGTERM)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.tsv"]


def test_sigterm_during_export_leaves_no_temporary_file(graph_dir, tmp_path, monkeypatch,
                                                        capsys):
    monkeypatch.setattr(export, "_writer", _terminate_self)
    out = tmp_path / "out"
    out.mkdir()
    assert cli.main(["export", str(graph_dir), "--out", str(out / "e.tsv")]) == 143
    assert _one_line(capsys) == "error: terminated (SIGTERM)"
    assert list(out.iterdir()) == []


_SLOW_INDEX = """
import sys, time
from graphsys import cli
from graphsys.storage import adjacency_index as ai
def slow(graph, name, kind, tmp, *args):
    (tmp / f"{kind}-indices.arrow").write_bytes(b"partial")
    print("building", flush=True)
    time.sleep(60)
ai._build_one = slow
sys.exit(cli.main(["index", sys.argv[1], "--csr"]))
"""


def test_sigterm_from_outside_as_timeout_sends_it(graph_dir):
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_INDEX, str(graph_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout.readline().strip() == "building"
    assert len(list((graph_dir / "index").glob(".tmp-*"))) == 1
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip() == "error: terminated (SIGTERM)", err
    assert leftovers(graph_dir) == []
    assert cli.main(["verify", str(graph_dir)]) == 0


def test_verify_tells_leftovers_from_damage(graph_dir, tmp_path, capsys):
    """Files a SIGKILLed writer leaves are reported in a note; the graph verifies. A
    damaged file still fails."""
    build = graph_dir / "index" / ".tmp-default-csr-99999999-abcd"
    build.mkdir(parents=True)
    (build / "csr-indices.arrow").write_bytes(b"partial")
    (graph_dir / ".manifest.json.tmp-99999999-0123abcd").write_bytes(b"{")
    node_dir = next((graph_dir / "nodes").iterdir())
    (node_dir / ".column-feat.arrow.tmp").write_bytes(b"x")
    staging = tmp_path / ".g.staging-99999999-abcd"  # pid 99999999: not a live process
    staging.mkdir()
    (tmp_path / ".g.staging-1-abcd").mkdir()  # pid 1 is alive: its writer may still run
    want = sorted([build, graph_dir / ".manifest.json.tmp-99999999-0123abcd",
                   node_dir / ".column-feat.arrow.tmp", staging])
    assert leftovers(graph_dir) == want
    assert verify_graph(graph_dir)["leftovers"] == [str(p) for p in want]
    assert cli.main(["verify", str(graph_dir)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok: ")
    assert err.strip() == (f"note: {want[0]} (and 3 more): left by an interrupted write, "
                           f"not part of the graph, which is intact; safe to delete (the "
                           f"next graphsys index removes index build directories, the next "
                           f"ingest or append staging directories)")
    bucket = next(p for p in graph_dir.rglob("*.arrow") if "edges" in p.parts)
    bucket.write_bytes(bucket.read_bytes()[:-8] + b"\0" * 8)
    assert cli.main(["verify", str(graph_dir)]) != 0
    assert "sha256 mismatch" in capsys.readouterr().err
