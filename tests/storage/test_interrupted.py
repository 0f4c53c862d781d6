"""An ingest killed with SIGKILL leaves nothing that open_graph accepts; a rerun succeeds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphsys import open_graph
from graphsys.errors import FormatError

SCRIPT = """
import sys
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
ingest_sources([EdgeSource([sys.argv[1]])], sys.argv[2],
               IngestOptions(partitions=4, memory_limit=1_000_000, dedupe=True))
"""


def test_kill_9_mid_ingest(tmp_path):
    rng = np.random.default_rng(0)
    n = 2_000_000
    src = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": rng.integers(0, 10**6, n), "dst": rng.integers(0, 10**6, n)}),
                   src, row_group_size=100_000)
    out = tmp_path / "g"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(src), str(out)])
    # wait until it is busy writing (a staging directory exists), then kill it
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        staging = [p for p in tmp_path.iterdir() if p.name.startswith(".g.staging-")]
        if staging and any((staging[0] / ".spill").glob("*")):
            break
        if proc.poll() is not None:
            pytest.fail("ingest finished before it could be interrupted")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    with pytest.raises(FormatError):
        open_graph(out)
    for leftover in tmp_path.glob(".g.staging-*"):
        with pytest.raises(FormatError):
            open_graph(leftover)
    # a new ingest to the same place removes the dead staging directory and succeeds
    subprocess.run([sys.executable, "-c", SCRIPT, str(src), str(out)], check=True)
    assert open_graph(out).num_edges() > 0
    assert not list(tmp_path.glob(".g.staging-*"))


def test_a_failed_bucket_write_stops_the_buckets_not_started(tmp_path, monkeypatch):
    """Buckets are written two at a time: when one fails (a full disk, an interrupt), the
    buckets not yet started are cancelled (the pool's ``map`` cancels what it has not run
    when its consumer stops), not written before the error surfaces, and nothing is left at
    the output. The other writes wait until the pool shuts down after the error, so which
    buckets start does not depend on timing."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from graphsys.errors import GraphsysError
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    from graphsys.storage.ingest_job import IngestJob

    rng = np.random.default_rng(1)
    src = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": rng.integers(0, 1000, 50_000),
                             "dst": rng.integers(0, 1000, 50_000)}), src)
    started, failed, shut_down = [], threading.Event(), threading.Event()
    write_bucket, shutdown = IngestJob.write_bucket, ThreadPoolExecutor.shutdown

    def failing(self, routed, b, edge_set, out):
        started.append(b)
        if b == 0:  # the first result the caller waits for (buckets are mapped in order)
            failed.set()
            raise OSError(28, "No space left on device")
        assert shut_down.wait(60), "the pool was not shut down after the error"
        return write_bucket(self, routed, b, edge_set, out)

    def shutdown_after_error(pool, *args, **kwargs):
        if failed.is_set():
            shut_down.set()
        return shutdown(pool, *args, **kwargs)

    monkeypatch.setattr(IngestJob, "write_bucket", failing)
    monkeypatch.setattr(IngestJob, "write_workers", lambda self, routed: 2)
    monkeypatch.setattr(ThreadPoolExecutor, "shutdown", shutdown_after_error)
    with pytest.raises(GraphsysError, match="cannot write .No space left on device.; nothing"):
        ingest_sources([EdgeSource([src])], tmp_path / "g", IngestOptions(partitions=4))
    # of 16 buckets: the failed one, and at most one more per worker (those the workers took
    # before the caller saw the error and cancelled the rest)
    assert 0 in started and set(started) <= {0, 1, 2}
    assert not (tmp_path / "g").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".g.staging-")]
