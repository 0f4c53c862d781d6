"""The BSP BFS's in-memory CPU call: the one direction-optimizing search
(:func:`graphsys.kernels.bfs.levels`), its levels as the engine's float state and its steps
summed per phase (:func:`phase_totals`), in one numba call (:func:`bfs_solve`)."""

from __future__ import annotations

import numba
import numpy as np

from graphsys.bsp.kernels import PARALLEL_MIN_ITEMS
from graphsys.kernels.bfs import levels


@numba.njit(cache=True, nogil=True)
def phase_totals(act, scanned, pulled, num_left):
    """Per-step counts of :func:`~graphsys.kernels.bfs.search` (``act``, ``scanned``,
    ``pulled`` int64 (S,)) summed per *phase* (a run of steps in one direction);
    ``num_left``: vertices of the last level when the search was cut short. Returns int64
    (P, 5) rows of (first step, end step, vertices expanded, edges scanned, vertices
    reached: step s reached the frontier of step s + 1)."""
    steps = act.shape[0]
    rows = np.zeros((steps, 5), np.int64)
    p = -1
    for s in range(steps):
        if s == 0 or pulled[s] != pulled[s - 1]:
            p += 1
            rows[p, 0] = s
        rows[p, 1] = s + 1
        rows[p, 2] += act[s]
        rows[p, 3] += scanned[s]
        rows[p, 4] += act[s + 1] if s + 1 < steps else num_left
    return rows[:p + 1]


@numba.njit(inline="always")
def _level_to_float(level, out, v):
    out[v] = level[v] if level[v] >= 0 else np.inf


@numba.njit(cache=True, nogil=True)
def _levels_to_float_serial(level, out):
    for v in range(level.shape[0]):
        _level_to_float(level, out, v)


@numba.njit(parallel=True, cache=True, nogil=True)
def _levels_to_float_parallel(level, out):
    for v in numba.prange(level.shape[0]):
        _level_to_float(level, out, v)


def bfs_solve(out_indptr, out_indices, in_indptr, in_indices, source, out, max_steps,
              nthreads):
    """:func:`~graphsys.kernels.bfs.levels` and what the engine keeps of it, in one call:
    ``out[v]`` (float64 (N,)) = the level of ``v``, ``inf`` where unreached (in parallel
    from :data:`~graphsys.bsp.kernels.PARALLEL_MIN_ITEMS` vertices); returns
    (:func:`phase_totals` rows, int64 (P, 5); 1 = bottom-up per step, int64 (S,); vertices
    of the last level when ``max_steps`` cut the search short). A Python function over
    kernels, as :func:`~graphsys.kernels.bfs.levels` is
    (:func:`graphsys.jit_cache.with_thread_start` says why)."""
    level, queue, last, act, scanned, pulled = levels(out_indptr, out_indices, in_indptr,
                                                      in_indices, False, source, max_steps,
                                                      nthreads, listed=False)
    if level.shape[0] < PARALLEL_MIN_ITEMS:
        _levels_to_float_serial(level, out)
    else:
        _levels_to_float_parallel(level, out)
    num_left = queue.shape[0] - last
    return phase_totals(act, scanned, pulled, num_left), pulled, num_left
