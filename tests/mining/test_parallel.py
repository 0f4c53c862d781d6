"""How mining work is scheduled: one task per prange chunk in the task loops only."""

from __future__ import annotations

import numba
import numpy as np

from graphsys.mining.parallel import run_tasks, scheduled


def test_only_the_task_loops_run_a_chunk_per_task():
    """Inside ``scheduled`` a pass over every vertex or entry (a stored index's check as
    the graph maps it, among them) keeps numba's static chunks: with a chunk per iteration
    numba's scheduler keeps a record per chunk (2.2 GB and 28 s for the check of a
    20M-edge ``sym`` index); the task loops of ``run_tasks`` take one task at a time."""
    seen = []

    def call(tasks):
        seen.append(numba.get_parallel_chunksize())
        return len(tasks) - 1

    before = numba.get_parallel_chunksize()
    with scheduled(2) as threads:
        assert numba.get_parallel_chunksize() == before
        work = np.full(1000, 1 << 20, np.int64)
        assert run_tasks(call, work, 0, 1000, threads) > 0
    assert seen and set(seen) == {1}
    assert numba.get_parallel_chunksize() == before
