"""The wait policy of GNU OpenMP runtimes that started before ``import graphsys``.

GNU OpenMP (libgomp) reads ``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` once, when it is
loaded, and has no call to change them afterwards. ``import graphsys`` puts them in the
environment, which reaches every runtime loaded later; but ``import torch`` loads torch's
own libgomp, so with torch imported first that runtime has already read an environment
without them and keeps its default: every idle worker polls about 300,000 times after each
parallel region before it sleeps. numba's ``omp`` threading layer then runs its parallel
kernels on that same runtime (its ``GOMP_*`` calls bind to the libgomp torch made global),
so torch's and numba's workers and the sampling threads compete for cores with workers that
spin while they have nothing to do.

The one lever libgomp leaves is documented with ``GOMP_SPINCOUNT``: while the runtime manages
more threads than there are available CPUs, a waiting thread polls only a short fixed count
(100 without a wait policy) before it sleeps. :func:`hold_idle_team` makes that the case for
good: a thread that stays blocked holds a team of ``os.cpu_count() + 1`` threads of the
runtime, which sleep from then on (they are woken for no region). ``import graphsys`` does
this (:func:`hold_loaded_runtimes`) for every libgomp already mapped into the process when
the environment set neither variable; a wait policy the user exported is left alone.
"""

from __future__ import annotations

import ctypes
import os
import threading

#: Paths of the libgomp copies whose idle waits :func:`hold_idle_team` shortened in this
#: process.
HELD: list[str] = []


def loaded_runtimes() -> list[str]:
    """Paths of the GNU OpenMP runtimes (``libgomp*.so*``) mapped into this process.

    Returns
    -------
    list of str
        Sorted paths; empty where ``/proc/self/maps`` cannot be read.

    Examples
    --------
    >>> from graphsys.openmp import loaded_runtimes
    >>> all("libgomp" in p for p in loaded_runtimes())
    True
    """
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if "libgomp" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/")
                  and os.path.basename(p).startswith("libgomp"))


def _hold(parallel, size: int, started: threading.Event) -> None:
    # a C function that ignores its argument and touches no Python state: the team's
    # threads run it without the GIL
    noop = ctypes.cast(ctypes.CDLL(None).getpid, ctypes.c_void_p)
    parallel(noop, None, size, 0)
    started.set()
    threading.Event().wait()  # keeps this thread, hence its team, alive


def hold_idle_team(path: str) -> bool:
    """Make the loaded libgomp at ``path`` manage more threads than there are CPUs, so its
    idle workers poll briefly and then sleep, whatever wait policy it started with.

    A daemon thread calls ``GOMP_parallel`` once with ``os.cpu_count() + 1`` threads of
    that runtime and then blocks for the life of the process; the team's threads stay
    with it, asleep. Every thread of that runtime (torch's intra-op workers, numba's
    ``omp`` workers) then waits with libgomp's throttled spin count.

    Parameters
    ----------
    path : str
        A libgomp already loaded (:func:`loaded_runtimes`).

    Returns
    -------
    bool
        True when the team is held (the path is added to :data:`HELD`); False when
        ``path`` does not export ``GOMP_parallel``.

    Examples
    --------
    >>> from graphsys.openmp import hold_idle_team
    >>> hold_idle_team("/nonexistent/libgomp.so.1")
    False
    """
    if path in HELD:
        return True
    try:
        parallel = ctypes.CDLL(path).GOMP_parallel
    except (OSError, AttributeError):
        return False
    parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    parallel.restype = None
    started = threading.Event()
    threading.Thread(target=_hold, args=(parallel, (os.cpu_count() or 1) + 1, started),
                     name="graphsys-openmp-idle", daemon=True).start()
    started.wait()
    HELD.append(path)
    return True


def hold_loaded_runtimes() -> list[str]:
    """:func:`hold_idle_team` for every libgomp mapped into the process (what ``import
    graphsys`` calls when the environment sets neither ``OMP_WAIT_POLICY`` nor
    ``GOMP_SPINCOUNT``).

    Returns
    -------
    list of str
        :data:`HELD`, the runtimes held so far.

    Examples
    --------
    >>> from graphsys.openmp import hold_loaded_runtimes, loaded_runtimes
    >>> set(hold_loaded_runtimes()) >= set(loaded_runtimes())
    True
    """
    for path in loaded_runtimes():
        hold_idle_team(path)
    return HELD
