"""graphsys's OpenMP wait policy, applied where the engines start, never at import
(docs/architecture.md, "Threads: OpenMP wait policy", says why and where).

:func:`apply_wait_policy`, called first by every entry point that runs parallel numba or
torch work, exports :data:`WAIT_POLICY` for the runtimes loaded from then on, unless the
environment sets either variable; then, since libgomp reads them only when it is loaded, it
also holds, in every libgomp already mapped into the process (:func:`hold_loaded_runtimes`),
a team of ``os.cpu_count() + 1`` threads asleep for the life of the process
(:func:`hold_idle_team`), so that libgomp's throttle keeps waiting threads' polls short. A
wait policy the user exported is left alone.
"""

from __future__ import annotations

import ctypes
import os
import threading

#: The OpenMP settings :func:`apply_wait_policy` exports: workers wait passively after a
#: short spin (GNU OpenMP's workers poll ``GOMP_SPINCOUNT`` times for the next parallel
#: region before they sleep; ``PASSIVE`` alone: no spin), so back-to-back regions, such as
#: the iterations of an in-memory PageRank, skip the futex wake-up, and the spin costs a
#: core at most its own length per region.
WAIT_POLICY = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "3000"}
#: The variables of :data:`WAIT_POLICY` that :func:`apply_wait_policy` set in this process
#: (the environment had none of them); :func:`peer_environment` leaves them out.
SET_HERE: list[str] = []
#: Paths of the libgomp copies whose idle waits :func:`hold_idle_team` shortened in this
#: process.
HELD: list[str] = []
_applied = False


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
    """:func:`hold_idle_team` for every libgomp mapped into the process (what
    :func:`apply_wait_policy` calls when the environment sets neither ``OMP_WAIT_POLICY``
    nor ``GOMP_SPINCOUNT``).

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


def apply_wait_policy() -> list[str]:
    """Apply graphsys's OpenMP wait policy to this process, once: what every engine entry
    point calls first.

    Exports the variables of :data:`WAIT_POLICY` that the environment does not set (for
    the OpenMP runtimes loaded from then on) and, when it set neither, holds an idle team
    in each runtime already loaded (:func:`hold_loaded_runtimes`), so that their idle
    workers also sleep after a short poll. A later call does nothing: runtimes loaded after
    the first one read the exported variables.

    Returns
    -------
    list of str
        :data:`SET_HERE`: the variables this process's policy exported (empty when the
        environment set both, or the user set them before the first call).

    Examples
    --------
    >>> import os
    >>> from graphsys.openmp import WAIT_POLICY, apply_wait_policy
    >>> set_here = apply_wait_policy()
    >>> all(os.environ[k] == WAIT_POLICY[k] for k in set_here)
    True
    """
    global _applied
    if not _applied:
        _applied = True
        SET_HERE.extend(k for k in WAIT_POLICY if k not in os.environ)
        os.environ.update({k: WAIT_POLICY[k] for k in SET_HERE})
        if len(SET_HERE) == len(WAIT_POLICY):
            hold_loaded_runtimes()
    return SET_HERE


def peer_environment() -> dict[str, str]:
    """``os.environ`` without the variables :func:`apply_wait_policy` exported: the
    environment in which a benchmark runs another library (PyTorch-BigGraph, DGL) in a
    child process, on that library's own defaults.

    Returns
    -------
    dict of str to str

    Examples
    --------
    >>> import os
    >>> from graphsys.openmp import SET_HERE, peer_environment
    >>> env = peer_environment()
    >>> not any(k in env for k in SET_HERE) and env.get("PATH") == os.environ.get("PATH")
    True
    """
    return {k: v for k, v in os.environ.items() if k not in SET_HERE}
