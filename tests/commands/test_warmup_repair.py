"""A damaged kernel cache: ``graphsys run wcc`` gives the right answer with at most one line
per damaged file and no traceback, and ``graphsys warmup`` replaces every damaged entry
(a second warmup then loads everything and says nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from graphsys import from_numpy

REPO = Path(__file__).resolve().parents[2]


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp / "xdg"), PYTHONPATH=str(REPO), PYTHONWARNINGS="default")
    out = subprocess.run([sys.executable, "-m", "graphsys", *args], env=env, cwd=tmp,
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    return out


def _cache_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "KernelCacheWarning" in ln]


def test_run_and_warmup_recover_from_a_damaged_kernel_cache(tmp_path):
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 300, 400), rng.integers(0, 300, 400)
    g = from_numpy(src, dst, tmp_path / "g", partitions=2)
    first = json.loads(_cli(tmp_path, "warmup", "wcc", "--json").stdout.splitlines()[-1])
    assert first["compiled"] > 0
    entries = sorted((tmp_path / "xdg").rglob("*.nbc"))
    indexes = sorted((tmp_path / "xdg").rglob("*.nbi"))
    for path in entries:  # every data file truncated, one index garbled
        path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 3])
    indexes[0].write_bytes(os.urandom(200))
    damaged = len(entries) + 1

    out = _cli(tmp_path, "run", "wcc", str(g.path), "--out", str(tmp_path / "wcc.parquet"))
    lines = _cache_lines(out.stderr)
    assert 1 <= len(lines) <= damaged and all(".nb" in ln for ln in lines)
    table = pq.read_table(tmp_path / "wcc.parquet").to_pydict()
    n = int(max(src.max(), dst.max())) + 1
    a = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    _, ref = connected_components(a, directed=True, connection="weak")
    nodes = table["node"]
    got = dict(zip(nodes, table["value"]))
    pairs = {(ref[u], got[u]) for u in nodes}  # one label per component, both ways
    assert len(pairs) == len({r for r, _ in pairs}) == len({v for _, v in pairs})

    repair = _cli(tmp_path, "warmup", "wcc", "--json")
    assert len(_cache_lines(repair.stderr)) <= damaged
    again = _cli(tmp_path, "warmup", "wcc", "--json")
    report = json.loads(again.stdout.splitlines()[-1])
    assert report["compiled"] == 0 and report["loaded"] > 0 and not _cache_lines(again.stderr)
