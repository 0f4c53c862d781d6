"""Issue 13, defect 7/8 (ranks): a dead or frozen peer ends the surviving rank with one
line and a non-zero exit, within the process-group timeout (``GRAPHSYS_DIST_TIMEOUT``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphsys.distributed import local_store, process_group_timeout, rank_environment
from graphsys.errors import GraphsysError

SCRIPT = Path(__file__).with_name("peer_script.py")


@pytest.mark.parametrize("how", ["die", "freeze"])
def test_surviving_rank_ends_with_one_line(how):
    store = local_store()
    env = {**os.environ, "GRAPHSYS_DIST_TIMEOUT": "4", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), how],
                              env={**env, **rank_environment(store, r, 2)},
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    t0 = time.monotonic()
    try:
        _, err = procs[0].communicate(timeout=120)
    finally:
        procs[1].kill()
        procs[1].wait()
    assert time.monotonic() - t0 < 60
    assert procs[0].returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: rank 0: a peer rank died"), err


def test_timeout_setting(monkeypatch):
    monkeypatch.delenv("GRAPHSYS_DIST_TIMEOUT", raising=False)
    assert process_group_timeout() == 300.0
    monkeypatch.setenv("GRAPHSYS_DIST_TIMEOUT", "2.5")
    assert process_group_timeout() == 2.5
    monkeypatch.setenv("GRAPHSYS_DIST_TIMEOUT", "soon")
    with pytest.raises(GraphsysError, match="GRAPHSYS_DIST_TIMEOUT='soon'"):
        process_group_timeout()
