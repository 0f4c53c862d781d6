"""graphsys's thread policy for numba and torch, applied where the engines start
(docs/growing.md, "Threads: numba and torch in one loop", says why).

The policy, :func:`apply_thread_policy`:

- a **thread budget** ``B``: the ``threads`` argument, else the environment variable
  :data:`ENV` (``GRAPHSYS_THREADS``), else the cores this process may run on;
- numba's parallel regions use ``min(B, NUMBA_NUM_THREADS)`` threads and torch's intra-op
  pool ``B`` threads (the two run one after the other, never at the same time);
- idle workers sleep instead of polling (:func:`graphsys.openmp.apply_wait_policy`).

It is applied by :func:`graphsys.gnn.train` and by every
:class:`~graphsys.sampling.TemporalNeighborSampler`, once per process unless called again
with another budget; ``threads=0`` or ``GRAPHSYS_THREADS=0`` leaves both libraries'
settings alone (the wait policy still applies). One call's ``threads`` is
:func:`numba_threads`: numba's count for that call only, restored after it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from graphsys.errors import ParameterError, check_count

#: The environment variable of the thread budget (a positive integer; 0: leave numba's and
#: torch's thread counts as they are).
ENV = "GRAPHSYS_THREADS"


@dataclass(frozen=True)
class ThreadPolicy:
    """What :func:`apply_thread_policy` set: the budget and each pool's threads."""

    budget: int
    numba: int
    torch: int


_applied: ThreadPolicy | None = None


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, else ``os.cpu_count()``)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_budget(threads: int | None = None) -> int:
    """The budget ``B`` of the policy: ``threads``, else ``$GRAPHSYS_THREADS``, else
    :func:`available_cores`; 0 means "leave the libraries' settings alone".

    Parameters
    ----------
    threads : int, optional
        A non-negative thread count.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        ``threads`` (or the variable) is not a non-negative integer.

    Examples
    --------
    >>> thread_budget(3)
    3
    >>> thread_budget() >= 0
    True
    """
    name, value = "threads", threads
    if value is None and os.environ.get(ENV, "").strip():
        name, value = ENV, os.environ[ENV].strip()
    if value is None:
        return available_cores()
    try:
        count = int(value)
        if isinstance(value, bool) or count < 0 or str(count) != str(value).strip():
            raise ValueError
    except (TypeError, ValueError):
        raise ParameterError(name, f"must be a non-negative integer (0: leave numba and "
                                   f"torch as they are), got {value!r}") from None
    return count


def apply_thread_policy(threads: int | None = None) -> ThreadPolicy:
    """Apply the thread policy (module docstring) to this process and return it.

    Parameters
    ----------
    threads : int, optional
        The budget ``B`` (default: ``$GRAPHSYS_THREADS``, else the available cores).
        Without it, a process where the policy was applied already keeps it.

    Returns
    -------
    ThreadPolicy
        The budget and the threads numba and torch now use (read back from them).

    Examples
    --------
    >>> import numba, torch
    >>> from graphsys.threads import apply_thread_policy
    >>> p = apply_thread_policy(1)
    >>> (p.numba, p.torch) == (numba.get_num_threads(), torch.get_num_threads()) == (1, 1)
    True
    """
    global _applied
    from graphsys import openmp

    openmp.apply_wait_policy()   # first, so a runtime loaded below reads its variables
    if threads is None and _applied is not None:
        return _applied
    import numba
    import torch

    budget = thread_budget(threads)
    if budget > 0:
        numba.set_num_threads(min(budget, numba.config.NUMBA_NUM_THREADS))
        if torch.get_num_threads() != budget:
            torch.set_num_threads(budget)
    _applied = ThreadPolicy(budget, numba.get_num_threads(), torch.get_num_threads())
    return _applied


@contextlib.contextmanager
def numba_threads(threads: int | None) -> Iterator[int]:
    """Run the enclosed block with numba's parallel regions on ``threads`` threads (None:
    as they are), restored on exit; yields the count.

    The count is capped at ``NUMBA_NUM_THREADS`` (numba starts no more than that: a larger
    ``threads`` is a bound the call meets with fewer) and, as numba's setting is, it holds
    on the calling thread only.

    Raises
    ------
    ParameterError
        ``threads`` is not a positive integer.

    Examples
    --------
    >>> import numba
    >>> before = numba.get_num_threads()
    >>> with numba_threads(1) as count:
    ...     count, numba.get_num_threads()
    (1, 1)
    >>> numba.get_num_threads() == before
    True
    """
    import numba

    before = numba.get_num_threads()
    if threads is None:
        yield before
        return
    numba.set_num_threads(min(check_count("threads", threads), numba.config.NUMBA_NUM_THREADS))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(before)
