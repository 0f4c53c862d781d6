"""Writers never leave or trust stray files: ``--append-to`` through a symbolic link
appends to the real directory (the link keeps naming it, no staging link is left), and the
``index/.tmp-*`` directories of a killed index build are reported by ``verify`` (as
leftovers, not damage) and removed by the next index run (under the writer lock)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import graphsys
from graphsys import cli
from graphsys.storage.adjacency_index import build_index, leftover_temps
from graphsys.storage.verify import verify_graph


@pytest.fixture
def graph_dir(tmp_path):
    d = tmp_path / "real" / "g"
    d.parent.mkdir()
    graphsys.from_numpy(np.array([1, 2, 3, 3]), np.array([2, 3, 1, 4]), d, partitions=2)
    return d


def test_append_through_a_symlink_appends_to_the_real_directory(graph_dir, tmp_path, capsys):
    link = tmp_path / "link"
    link.symlink_to(graph_dir, target_is_directory=True)
    f = tmp_path / "more.tsv"
    f.write_text("4\t5\n5\t1\n")
    before = sorted(os.listdir(tmp_path)), sorted(os.listdir(graph_dir.parent))
    assert cli.main(["ingest", str(f), "--append-to", str(link), "--edge-set", "more"]) == 0
    capsys.readouterr()
    assert link.is_symlink() and link.resolve() == graph_dir.resolve()
    g = graphsys.open_graph(graph_dir)
    assert "more" in g.edge_sets and g.num_edges("more") == 2 and g.num_nodes() == 5
    assert (sorted(os.listdir(tmp_path)), sorted(os.listdir(graph_dir.parent))) == before
    verify_graph(link)


_KILLED_INDEX = """
import os, sys
from graphsys import open_graph
from graphsys.storage import adjacency_index as ai
def dying(graph, name, kind, tmp, *args):
    (tmp / f"{kind}-indices.arrow").write_bytes(b"partial")
    os._exit(9)  # as kill -9 would: no cleanup runs
ai._build_one = dying
ai.build_index(open_graph(sys.argv[1]), ("csr",))
"""


def test_killed_index_leftovers_are_reported_then_removed(graph_dir):
    proc = subprocess.run([sys.executable, "-c", _KILLED_INDEX, str(graph_dir)],
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 9
    left = leftover_temps(graph_dir)
    assert len(left) == 1 and left[0].name.startswith(".tmp-")
    # a leftover is not damage: the graph verifies, and the leftover is listed
    assert verify_graph(graph_dir)["leftovers"] == [str(left[0])]
    build_index(graphsys.open_graph(graph_dir), ("csr",))
    assert leftover_temps(graph_dir) == []
    verify_graph(graph_dir)


def test_current_index_run_still_removes_leftovers(graph_dir, capsys):
    build_index(graphsys.open_graph(graph_dir), ("csr",))
    stray = graph_dir / "index" / ".tmp-default-csr-1-abcd"
    stray.mkdir()
    (stray / "csr-indices.arrow").write_bytes(b"x")
    assert cli.main(["verify", str(graph_dir)]) == 0
    assert "left by an interrupted write" in capsys.readouterr().err
    assert cli.main(["index", str(graph_dir)]) == 0  # every index current: nothing rebuilt
    assert not stray.exists()
    assert cli.main(["verify", str(graph_dir)]) == 0


def test_append_drops_leftover_index_temps(graph_dir, tmp_path, capsys):
    build_index(graphsys.open_graph(graph_dir), ("csr",))
    stray = graph_dir / "index" / ".tmp-default-csr-1-abcd"
    stray.mkdir()
    f = tmp_path / "more.tsv"
    f.write_text("4\t5\n")
    assert cli.main(["ingest", str(f), "--append-to", str(graph_dir), "--edge-set", "more"]) == 0
    capsys.readouterr()
    assert not stray.exists() and leftover_temps(graph_dir) == []
    verify_graph(graph_dir)
