"""Traces that open in Perfetto or chrome://tracing: ``torch.profiler`` with named ranges.

The engines mark their units of work with :func:`traced` (a decorator) or
:func:`trace_range` (a ``with`` block): BSP supersteps and edge passes, embedding buckets,
minibatches, partition loads and write-backs and checkpoint commits, GNN sampling, waiting,
host-to-device loads and compute steps. The ranges cost nothing (one flag test) unless a
trace is being recorded; then each is a ``torch.profiler.record_function`` range (and an
NVTX range on CUDA, where Nsight Systems shows it), recorded on every thread (worker threads
included).

:func:`recording` records one run and writes the Chrome trace JSON (``traceEvents``,
microseconds) atomically when it ends; :func:`check_trace_path` refuses a path that cannot
be written before any work starts. :func:`quiet_stderr` silences the profiler's own
``USDT: ... profiler_start/stop`` lines (printed by its C++ side, so at the file descriptor).

Range names (``cat`` ``user_annotation`` in the trace): ``bsp.superstep#<k>``,
``bsp.edges``, ``bsp.bucket``, ``embed.bucket``, ``embed.minibatch``, ``embed.load``,
``embed.write-back``, ``embed.bucket-read``, ``embed.checkpoint``, ``gnn.sample``,
``gnn.wait``, ``gnn.load``, ``gnn.step``; and ``numba.<function>`` for every call of a
numba-compiled function from Python, ``numba.compile`` for its compilation or cache load
(:func:`numba_ranges`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphsys.errors import GraphsysError

__all__ = ["active", "check_trace_path", "numba_ranges", "recording", "trace_range", "traced"]

#: Range name of a numba compilation or cache load (nested in the call that triggered it).
COMPILE = "numba.compile"
#: Prefix of the range of one call of a numba-compiled function.
NUMBA_PREFIX = "numba."

_active = 0


def active() -> bool:
    """Whether a trace is being recorded (ranges are then emitted).

    Examples
    --------
    >>> import tempfile
    >>> from graphsys.trace import active, recording
    >>> with recording(tempfile.mkdtemp() + "/trace.json"):
    ...     print(active())
    True
    >>> active()
    False
    """
    return _active > 0


@contextmanager
def ranges_on() -> Iterator[None]:
    """Emit ranges inside this block (a profiler of the caller's is running)."""
    global _active
    _active += 1
    try:
        yield
    finally:
        _active -= 1


@contextmanager
def trace_range(name: str) -> Iterator[None]:
    """Mark the ``with`` block as a named range of the trace being recorded.

    Outside a recording this costs one flag test and records nothing, so library and user
    code can leave its ranges in place. While :func:`recording` (or another graphsys
    profiler) runs, the block is a ``torch.profiler.record_function`` range, and on CUDA
    also an NVTX range that Nsight Systems shows.

    Parameters
    ----------
    name : str
        The range's name in the trace (the engines use ``area.what``: ``bsp.edges``,
        ``gnn.sample``, ...).

    Yields
    ------
    None

    See Also
    --------
    traced : the same for every call of a function.
    recording : record a block into a trace file.

    Examples
    --------
    >>> import json, tempfile
    >>> from graphsys.trace import recording, trace_range
    >>> path = tempfile.mkdtemp() + "/t.json"
    >>> with trace_range("ignored"):  # no recording: nothing happens
    ...     pass
    >>> with recording(path):
    ...     for i in range(2):
    ...         with trace_range("my.batch"):
    ...             total = sum(range(1000))
    >>> sum(e["name"] == "my.batch" for e in json.load(open(path))["traceEvents"])
    2
    """
    if not _active:
        yield
        return
    from torch.profiler import record_function

    with record_function(name), _nvtx(name):
        yield


@contextmanager
def _nvtx(name: str) -> Iterator[None]:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()
    else:
        yield


def traced(name: str) -> Callable:
    """Decorator: every call of the function is a range ``name`` while a trace is recorded.

    Parameters
    ----------
    name : str
        The range's name in the trace.

    Returns
    -------
    callable
        A decorator; the decorated function is called unchanged (and unwrapped, at the
        cost of one flag test) when no trace is being recorded.

    See Also
    --------
    trace_range : the same for a ``with`` block.

    Examples
    --------
    >>> import json, tempfile
    >>> from graphsys.trace import recording, traced
    >>> @traced("my.step")
    ... def step(x):
    ...     return x + 1
    >>> path = tempfile.mkdtemp() + "/t.json"
    >>> with recording(path):
    ...     step(step(0))
    2
    >>> sum(e["name"] == "my.step" for e in json.load(open(path))["traceEvents"])
    2
    """
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if not _active:
                return fn(*args, **kwargs)
            with trace_range(name):
                return fn(*args, **kwargs)
        return inner
    return wrap


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null inside the block (C++ writes included)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def numba_ranges() -> Iterator[None]:
    """Inside the block every call of a numba-compiled function made from Python is a
    profiler range ``numba.<function name>``, and every compilation or cache load of one
    (first calls) a range ``numba.compile`` inside it, so that the numba kernels of the CPU
    engines show in traces and profiles beside the torch operators. Calls between compiled
    functions run natively and belong to their caller's range. Without numba this does
    nothing; :func:`recording` turns it on.

    The ranges come from the numba dispatcher's call, patched on its class for the block
    (and restored after it): the dispatcher objects themselves are unchanged, so compiled
    callers and callers holding a reference see the same functions.

    Yields
    ------
    None

    Examples
    --------
    Under a profiler of one's own (:func:`recording` turns the ranges on itself):

    >>> import numba, numpy as np
    >>> from torch.profiler import profile
    >>> from graphsys.trace import numba_ranges
    >>> @numba.njit
    ... def total(x):
    ...     return x.sum()
    >>> with profile() as prof, numba_ranges():
    ...     _ = total(np.ones(4))
    >>> sorted({e.name for e in prof.events() if e.name.startswith("numba.")})
    ['numba.compile', 'numba.total']
    """
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:
        yield
        return
    from torch.profiler import record_function

    call = Dispatcher.__call__  # the C dispatcher's call, inherited
    compile_ = Dispatcher.__dict__["compile"]
    names: dict[int, str] = {}

    def timed_call(self, *args, **kwargs):
        name = names.get(id(self))
        if name is None:
            name = names.setdefault(id(self), NUMBA_PREFIX + getattr(
                self.py_func, "__name__", "kernel"))
        with record_function(name):
            return call(self, *args, **kwargs)

    def timed_compile(self, sig):
        with record_function(COMPILE):
            return compile_(self, sig)

    Dispatcher.__call__ = timed_call
    Dispatcher.compile = timed_compile
    try:
        yield
    finally:
        del Dispatcher.__call__
        Dispatcher.compile = compile_


def check_trace_path(path: str | Path, *, overwrite: bool = False) -> Path:
    """Check that a trace can be written to ``path``, before any work starts.

    Parameters
    ----------
    path : str or path-like
        A ``.json`` file name in an existing, writable directory (not a directory itself),
        following :func:`graphsys.outputs.check_output`: an existing file only with
        ``overwrite``, never inside a graph or checkpoint directory.
    overwrite : bool, default False
        Allow replacing an existing file.

    Returns
    -------
    Path
        An :class:`~graphsys.outputs.OutputPath` for ``path`` that keeps ``overwrite``.

    Raises
    ------
    GraphsysError
        One line saying why the trace could not be written there.

    Examples
    --------
    >>> import tempfile
    >>> from graphsys.trace import check_trace_path
    >>> check_trace_path(tempfile.mkdtemp() + "/run.json").name
    'run.json'
    >>> check_trace_path("run.txt")
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: run.txt: a trace is Chrome trace JSON; name it FILE.json
    """
    from graphsys.outputs import check_output, check_parent

    checked = path
    path = Path(path)
    if path.suffix.lower() != ".json":
        raise GraphsysError(f"{path}: a trace is Chrome trace JSON; name it FILE.json")
    check_parent(path)
    out = check_output(checked, overwrite=overwrite, name="trace")
    if not os.access(path.parent, os.W_OK | os.X_OK) or (path.exists()
                                                     and not os.access(path, os.W_OK)):
        raise GraphsysError(f"{path}: not writable")
    return out


def make_profiler(device: Any = "cpu", *, all_threads: bool = True):
    """A kineto profiler of the CPU (and CUDA when ``device`` is a CUDA device) that records
    every thread (``all_threads``) or only the calling one; :func:`profiling` starts and
    stops it.

    It is ``torch.autograd.profiler.profile``, which ``torch.profiler.profile`` wraps:
    the wrapper's start asks ``hasattr(torch, "_inductor")``, which imports inductor,
    dynamo and sympy (seconds, and memory, that the profiled program never spends).

    A profiler is refused (:class:`GraphsysError`) while another one records in this process
    (a trace or profile around this one, graphsys's or torch's): starting a second one
    stops the first, whose export then crashes the process."""
    from torch._C._profiler import _ExperimentalConfig
    from torch.autograd import profiler
    from torch.autograd.profiler import profile

    if getattr(profiler, "_is_profiler_enabled", False):
        raise GraphsysError("a profiler is already recording in this process (a trace or "
                            "profile around this one): record one trace at a time")

    return profile(use_cpu=True, use_device="cuda" if str(device).startswith("cuda") else None,
                   use_kineto=True, record_shapes=False, with_stack=False,
                   experimental_config=_ExperimentalConfig(profile_all_threads=all_threads))


@contextmanager
def profiling(device: Any = "cpu", *, all_threads: bool = True) -> Iterator[Any]:
    """Run the block under :func:`make_profiler` with ranges on; the profiler's start and
    stop messages are kept off stderr. Yields the (stopped, after the block) profiler: its
    raw records are ``prof.kineto_results``."""
    prof = make_profiler(device, all_threads=all_threads)
    with quiet_stderr():
        prof.__enter__()
    try:
        with ranges_on():
            yield prof
    finally:
        with quiet_stderr():
            prof.__exit__(None, None, None)


def write_trace(prof, path: str | Path) -> Path:
    """Export ``prof``'s Chrome trace to ``path`` atomically (temp, fsync, rename), as
    :func:`check_trace_path` allows (an existing file only when ``path`` was checked with
    ``overwrite``)."""
    from graphsys.storage.atomic import atomic_path

    path = check_trace_path(path)  # again: a file may have appeared during the run
    try:
        with atomic_path(path, overwrite=path.overwrite) as tmp:
            prof.export_chrome_trace(str(tmp))
    except OSError as exc:
        raise GraphsysError(f"{path}: cannot write the trace ({exc.strerror or exc})"
                            ) from None
    return path


@contextmanager
def recording(path: str | Path | None, device: Any = "cpu") -> Iterator[None]:
    """Record the ``with`` block into a Chrome trace file (opens in Perfetto).

    The path is checked before the block runs (:func:`check_trace_path`) and the trace is
    written atomically when the block ends, also when it fails, so a failed run leaves its
    trace for inspection. Every thread is recorded (loader and prefetch workers included);
    with a CUDA ``device`` the GPU kernels too. The engines' named ranges
    (:func:`trace_range`) appear in it, and so do the caller's.

    Parameters
    ----------
    path : str or path-like or None
        The trace file (``.json``: Chrome trace events, microseconds); ``None`` records
        nothing and starts no profiler, so callers can pass a ``trace=None`` option
        straight through. In a run of several ranks, rank 0 records (in the process group,
        or the one ``torchrun``'s environment names where none is initialised yet); the
        others record nothing.
    device : str or torch.device, default "cpu"
        ``"cuda..."`` also records CUDA activity.

    Yields
    ------
    None

    Raises
    ------
    GraphsysError
        ``path`` cannot be written (checked before the block runs).

    Examples
    --------
    >>> import json, tempfile, torch
    >>> from graphsys.trace import recording
    >>> path = tempfile.mkdtemp() + "/mm.json"
    >>> with recording(path):
    ...     y = torch.ones(8, 8) @ torch.ones(8, 8)
    >>> "aten::mm" in {e["name"] for e in json.load(open(path))["traceEvents"]}
    True
    >>> with recording(None):  # no trace
    ...     pass
    """
    from graphsys.distributed import this_rank

    if path is None or this_rank() != 0:  # across ranks, rank 0 records: one writer
        yield
        return
    path = check_trace_path(path)
    prof = None
    try:
        with profiling(device) as prof, numba_ranges():
            yield
    finally:
        if prof is not None:
            write_trace(prof, path)
