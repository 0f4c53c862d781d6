"""The threads beside the profiled one: CPU time per thread and what it spent it on.

The profiler's time table follows the thread that runs the workload. Sampler and loader
workers, prefetch and bucket-reader threads, torch's and numba's pools work beside it, and
their time is not in its wall time. :class:`ThreadSampler` watches them from a thread of
its own while the workload runs, every ``interval`` seconds:

* the CPU time of every thread of the process (``utime + stime`` of
  ``/proc/self/task/<tid>/stat``, clock ticks), so a thread that ends before the run does
  keeps the time it was last seen with;
* the Python stack of every Python thread (``sys._current_frames``): the innermost frame
  in graphsys (else the innermost frame) names what the thread was doing, and a thread
  parked in ``threading`` / ``queue`` waits is counted as waiting. Threads without Python
  frames (torch's intra-op pool, numba's workers) have only their CPU time.

:meth:`ThreadSampler.result` lists the threads that used CPU time, most first, each with
its name, CPU seconds and the shares of its samples by function. The sampling costs one
``/proc`` read per thread and one stack walk per Python thread per interval.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from graphsys.memory import BackgroundSampler

__all__ = ["ThreadSampler"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PACKAGE = str(Path(__file__).resolve().parents[1])
#: graphsys's own instrumentation (the profiler's wrappers): the frame outside it counts
_SKIP = (str(Path(__file__).resolve().parent), str(Path(_PACKAGE) / "trace.py"))
#: Modules whose innermost frame means the thread is parked (a lock, a condition, a queue,
#: an idle pool worker).
_WAITS = ("threading.py", "queue.py", "selectors.py", "concurrent/futures/thread.py")


def _cpu_ticks() -> dict[int, tuple[int, str]]:
    """``{tid: (utime + stime in ticks, comm)}`` of this process's threads now."""
    out: dict[int, tuple[int, str]] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue  # ended meanwhile
        head, _, rest = text.rpartition(")")
        fields = rest.split()
        try:
            out[int(tid)] = (int(fields[11]) + int(fields[12]),
                             head.partition("(")[2])
        except (IndexError, ValueError):
            continue
    return out


def _what(frame) -> str:
    """The innermost graphsys frame of a stack as ``module.function`` (else the innermost
    frame's), or ``waiting`` when the thread is parked in a lock, condition or queue."""
    if frame is not None and frame.f_code.co_filename.endswith(_WAITS):
        return "waiting (lock, condition or queue)"
    f = frame
    while f is not None and (not f.f_code.co_filename.startswith(_PACKAGE)
                             or f.f_code.co_filename.startswith(_SKIP)):
        f = f.f_back
    f = frame if f is None else f
    if f is None:
        return "?"
    mod = f.f_globals.get("__name__", Path(f.f_code.co_filename).stem)
    return f"{mod}.{f.f_code.co_name}"


class ThreadSampler(BackgroundSampler):
    """Context manager sampling the process's threads while it is open (see the module
    docstring). ``exclude``: the native id of the thread the profiler follows (default
    the thread that enters the block), left out of :meth:`result`."""

    thread_name = "graphsys-thread-sampler"

    def __init__(self, interval: float = 0.05, *, exclude: int | None = None) -> None:
        super().__init__(interval)
        self.exclude = exclude
        self._start: dict[int, int] = {}
        self._last: dict[int, tuple[int, str]] = {}
        self._names: dict[int, str] = {}
        self._samples: dict[int, Counter[str]] = {}

    def sample(self) -> None:
        """Read every thread's CPU time and every Python thread's stack once."""
        me = threading.get_native_id()
        self._last.update(_cpu_ticks())
        by_ident = {t.ident: t for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            t = by_ident.get(ident)
            if t is None or t.native_id in (me, self.exclude):
                continue
            self._names[t.native_id] = t.name
            self._samples.setdefault(t.native_id, Counter())[_what(frame)] += 1

    def __enter__(self) -> ThreadSampler:
        if self.exclude is None:
            self.exclude = threading.get_native_id()
        self._start = {tid: ticks for tid, (ticks, _) in _cpu_ticks().items()}
        return super().__enter__()

    def result(self, min_seconds: float = 0.01) -> list[dict[str, Any]]:
        """The threads (other than the excluded one and the sampler) by name, those that
        used at least ``min_seconds`` of CPU time while the block was open, most first:
        ``thread`` (its Python name, else the kernel's), ``threads`` (how many had that
        name: a pool made again every epoch), ``cpu_seconds``, ``samples`` and
        ``spent_on`` (``[{"what", "share"}]`` of its stack samples, most first; empty for
        a thread without Python frames)."""
        sampler = self._thread.native_id if self._thread is not None else None
        merged: dict[str, dict[str, Any]] = {}
        for tid, (ticks, comm) in self._last.items():
            if tid in (self.exclude, sampler):
                continue
            name = self._names.get(tid, comm)
            row = merged.setdefault(name, {"thread": name, "threads": 0, "cpu_seconds": 0.0,
                                           "counts": Counter()})
            row["threads"] += 1
            row["cpu_seconds"] += (ticks - self._start.get(tid, 0)) / _TICK
            row["counts"].update(self._samples.get(tid, Counter()))
        rows = []
        for row in merged.values():
            if row["cpu_seconds"] < min_seconds:
                continue
            counts = row.pop("counts")
            total = sum(counts.values())
            row["samples"] = total
            row["spent_on"] = [{"what": w, "share": c / total}
                               for w, c in counts.most_common(5)]
            rows.append(row)
        rows.sort(key=lambda r: (-r["cpu_seconds"], r["thread"]))
        return rows
