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
``gnn.wait``, ``gnn.load``, ``gnn.step``.
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

_active = 0


def active() -> bool:
    """Whether a trace is being recorded (ranges are then emitted)."""
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
    """A named range around the block while a trace is recorded; nothing otherwise."""
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
    """Decorator: every call of the function is a range ``name`` while tracing."""
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


def check_trace_path(path: str | Path, *, overwrite: bool = False) -> Path:
    """``path`` if a trace can be written there: a ``.json`` name in an existing, writable
    directory, not a directory itself, and following :func:`graphsys.outputs.check_output`
    (an existing file only with ``overwrite``, never inside a graph or checkpoint
    directory); else a one-line :class:`GraphsysError`. Returns an
    :class:`~graphsys.outputs.OutputPath` that keeps ``overwrite``."""
    from graphsys.outputs import check_output

    checked = path
    path = Path(path)
    if path.suffix.lower() != ".json":
        raise GraphsysError(f"{path}: a trace is Chrome trace JSON; name it FILE.json")
    if path.is_dir():
        raise GraphsysError(f"{path}: is a directory, not a trace file name")
    parent = path.parent
    if not parent.is_dir():
        raise GraphsysError(f"{path}: directory {parent} does not exist")
    out = check_output(checked, overwrite=overwrite, name="trace")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists()
                                                     and not os.access(path, os.W_OK)):
        raise GraphsysError(f"{path}: not writable")
    return out


def make_profiler(device: Any = "cpu", *, all_threads: bool = True):
    """A ``torch.profiler.profile`` of the CPU (and CUDA when ``device`` is a CUDA device)
    that records every thread (``all_threads``) or only the calling one."""
    from torch._C._profiler import _ExperimentalConfig
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU]
    if str(device).startswith("cuda"):
        acts.append(ProfilerActivity.CUDA)
    return profile(activities=acts, record_shapes=False, with_stack=False,
                   experimental_config=_ExperimentalConfig(profile_all_threads=all_threads))


@contextmanager
def profiling(device: Any = "cpu", *, all_threads: bool = True) -> Iterator[Any]:
    """Run the block under :func:`make_profiler` with ranges on; the profiler's start and
    stop messages are kept off stderr. Yields the (stopped, after the block) profiler."""
    prof = make_profiler(device, all_threads=all_threads)
    with quiet_stderr():
        prof.start()
    try:
        with ranges_on():
            yield prof
    finally:
        with quiet_stderr():
            prof.stop()


def write_trace(prof, path: str | Path) -> Path:
    """Export ``prof``'s Chrome trace to ``path`` atomically (temp, fsync, rename), as
    :func:`check_trace_path` allows (an existing file only when ``path`` was checked with
    ``overwrite``)."""
    from graphsys.storage.atomic import atomic_path

    path = check_trace_path(path)  # again: a file may have appeared during the run
    try:
        with atomic_path(path, overwrite=True) as tmp:
            prof.export_chrome_trace(str(tmp))
    except OSError as exc:
        raise GraphsysError(f"{path}: cannot write the trace ({exc.strerror or exc})"
                            ) from None
    return path


@contextmanager
def recording(path: str | Path | None, device: Any = "cpu") -> Iterator[None]:
    """Record the block into the Chrome trace ``path`` (checked first, written at the end,
    also when the block fails); ``None``: no trace, no profiler."""
    if path is None:
        yield
        return
    path = check_trace_path(path)
    prof = None
    try:
        with profiling(device) as prof:
            yield
    finally:
        if prof is not None:
            write_trace(prof, path)
