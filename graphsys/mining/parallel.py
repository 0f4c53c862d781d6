"""How mining work is split: across the threads of one process and across the ranks of a
``torch.distributed`` job.

Every mining kernel loops over *roots*: the vertices of the oriented graph, each the
lowest-ranked vertex of the subgraphs it finds. A root's work is very uneven (a hub's
neighbourhood against a leaf's), so the roots are cut into *tasks*: contiguous ranges of
about equal estimated work (:func:`tasks_by_work`; a vertex heavier than one task's share
is a task of its own), and the kernels run ``prange`` over the tasks with a chunk size of
one (:func:`run_tasks`), so that a thread that finishes its task takes the next one (numba's
dynamic scheduling) instead of a fixed share of the range.

Across ranks (:class:`Ranks`), rank ``r`` of ``W`` owns the ``r``-th of ``W`` ranges of
roots of about equal work (:func:`graphsys.distributed.rank_share`): it runs the same
kernels on its roots only, and the counts (integers: exact) are summed over the ranks with
``all_reduce``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numba
import numpy as np

from graphsys import openmp
from graphsys.errors import GraphsysError
from graphsys.progress import display
from graphsys.threads import numba_threads
from graphsys.views.orient import SERIAL_WORK

#: Tasks per thread the roots are cut into (more: finer balance, more scheduling steps).
TASKS_PER_THREAD = 64
#: Estimated work (row entries read) per kernel call: a long pass is several calls, so its
#: progress moves and each call still holds many tasks per thread.
WORK_PER_CALL = 1 << 28


@contextlib.contextmanager
def scheduled(threads: int | None) -> Iterator[int]:
    """Run the enclosed kernels on ``threads`` numba threads (None: as set;
    :func:`graphsys.threads.numba_threads`), restored on exit. Yields the thread count.
    Only the task loops of :func:`run_tasks` run one task per ``prange`` chunk: any other
    ``prange`` in the block (a pass over every vertex or entry, a stored index's check as
    it is mapped) keeps numba's static chunks, since with a chunk per iteration numba's
    scheduler keeps a record per chunk (gigabytes, and tens of seconds, for a pass over
    tens of millions of entries)."""
    openmp.apply_wait_policy()  # every mining kernel runs under this
    with numba_threads(threads) as count:
        yield count


def tasks_by_work(work: np.ndarray, lo: int, hi: int, num_tasks: int) -> np.ndarray:
    """Cut the roots ``[lo, hi)`` into at most ``num_tasks`` contiguous ranges of about
    equal total ``work``.

    Parameters
    ----------
    work : numpy.ndarray
        int64 (N,) estimated work per root (any non-negative figure).
    lo, hi : int
        The roots to cut.
    num_tasks : int
        The most ranges.

    Returns
    -------
    numpy.ndarray
        int64 (T+1,) increasing bounds from ``lo`` to ``hi``: task ``t`` is
        ``[b[t], b[t+1])``. A root heavier than ``total / num_tasks`` starts a task.

    Examples
    --------
    >>> tasks_by_work(np.array([1, 1, 1, 1, 100, 1, 1, 1]), 0, 8, 4).tolist()
    [0, 4, 5, 8]
    """
    if hi <= lo:
        return np.array([lo, lo], np.int64)
    prefix = np.cumsum(np.asarray(work[lo:hi], np.int64) + 1)  # +1: an empty root costs a step
    total = int(prefix[-1])
    num_tasks = max(1, min(int(num_tasks), hi - lo))
    targets = (np.arange(1, num_tasks, dtype=np.float64) * (total / num_tasks))
    cuts = np.searchsorted(prefix, targets, side="right")
    # a root heavier than a share starts a task of its own
    share = total / num_tasks
    heavy = np.flatnonzero(np.asarray(work[lo:hi], np.int64) + 1 > share)
    bounds = np.unique(np.concatenate([[0], cuts, heavy, heavy + 1, [hi - lo]]))
    bounds = bounds[(bounds >= 0) & (bounds <= hi - lo)]
    return (bounds + lo).astype(np.int64)


def run_tasks(call: Callable[[np.ndarray], int], work: np.ndarray, lo: int, hi: int,
              threads: int, *, progress: bool = False, desc: str = "mining",
              serial: Callable[[int, int], int] | None = None,
              serial_work: int = SERIAL_WORK) -> int:
    """Run ``call(tasks)`` (a kernel over task bounds, returning a count) over the roots
    ``[lo, hi)`` cut by :func:`tasks_by_work`, in calls of about :data:`WORK_PER_CALL` work
    each, with a progress bar in units of ``work``; or, below ``serial_work`` (default
    :data:`SERIAL_WORK`) or on one thread, ``serial(lo, hi)`` when given, else ``call`` over
    one task on one numba thread. Returns the sum of the calls."""
    total = int(np.asarray(work[lo:hi], np.int64).sum()) if hi > lo else 0
    if total < serial_work or threads == 1:
        if serial is not None:
            return int(serial(lo, hi))
        with scheduled(1):
            return int(call(np.array([lo, hi], np.int64)))
    calls = int(max(1, min(hi - lo, total // WORK_PER_CALL)))
    tasks = tasks_by_work(work, lo, hi, TASKS_PER_THREAD * threads * calls)
    prefix = np.concatenate([[0], np.cumsum(np.asarray(work, np.int64)[lo:hi])])
    done = prefix[tasks - lo]  # work before each task bound
    cuts = np.unique(np.searchsorted(done, np.linspace(0, total, calls + 1), side="left"))
    cuts = np.unique(np.concatenate([[0], cuts, [len(tasks) - 1]]))
    found = 0
    with display(progress, total=total, unit="entry", unit_scale=True, desc=desc) as bar:
        for a, b in zip(cuts[:-1], cuts[1:]):
            with numba.parallel_chunksize(1):  # a thread done with a task takes the next
                found += int(call(tasks[a:b + 1]))
            bar.update(int(done[b] - done[a]))
    return found


@dataclass(frozen=True)
class Ranks:
    """The processes a mining call runs on: one (``world_size`` 1), or the ranks of the
    initialised default ``torch.distributed`` process group."""

    rank: int = 0
    world_size: int = 1

    @staticmethod
    def of(distributed: bool, graph=None, call: tuple = ()) -> Ranks:
        """This process alone, or (``distributed``) its rank in the default process group;
        with ``graph``, every rank is first checked to hold the same graph and to make the
        same ``call`` (the function's name and the settings that decide its answer and its
        collectives: one line on every rank otherwise).

        Raises
        ------
        GraphsysError
            ``distributed`` while torch.distributed is not initialised, or ranks holding
            different graphs or making different calls.
        """
        if not distributed:
            return Ranks()
        from graphsys import distributed as dist

        if not dist.initialized():
            raise GraphsysError(f"distributed mining: {dist.NOT_INITIALISED}")
        rank, world = dist.rank_and_world_size()
        if graph is not None and world > 1:
            settings = hashlib.sha256(repr(call).encode()).hexdigest()
            dist.check_same_inputs({"graph": dist.graph_digest(graph), "call": settings})
        return Ranks(rank, world)

    def share(self, n: int, work=None) -> slice:
        """This rank's items of ``n`` (:func:`graphsys.distributed.rank_share`)."""
        if self.world_size == 1:  # (without importing torch)
            return slice(0, n)
        from graphsys.distributed import rank_share

        return rank_share(n, self.rank, self.world_size, work)

    def budget(self, memory_limit) -> int | None:
        """``memory_limit`` as every rank reads it: unchanged in one process; across ranks,
        the smallest of the ranks' budgets (:func:`graphsys.views.budget`: the RAM available
        now where None), so that the choices it decides (in memory or out of core, the
        row blocks each rank takes a share of) are the same on every rank."""
        if self.world_size == 1:
            return memory_limit
        from graphsys.views import budget

        return int(self._reduce(np.array([budget(memory_limit)], np.int64), "MIN")[0])

    def roots(self, work: np.ndarray) -> tuple[int, int]:
        """This rank's roots ``[lo, hi)``: its share of about equal ``work``."""
        share = self.share(len(work), work)
        return share.start, share.stop

    def sum(self, values: np.ndarray) -> np.ndarray:
        """``values`` (int64 or float64) summed over the ranks, elementwise; returned as
        is by one process."""
        return values if self.world_size == 1 else self._reduce(values, "SUM")

    @staticmethod
    def _reduce(values: np.ndarray, op: str) -> np.ndarray:
        """``values`` reduced elementwise over the ranks by ``op`` (a ``ReduceOp`` name)."""
        import torch
        import torch.distributed as dist

        t = torch.from_numpy(np.ascontiguousarray(values))
        if dist.get_backend() == "nccl":
            t = t.cuda()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        return t.cpu().numpy()
