"""Resident memory of this process, split into anonymous memory and mapped files.

Linux reports ``RssAnon`` (heap, NumPy/torch arrays: what a memory budget bounds) and
``RssFile`` (pages of memory-mapped files: page cache the kernel can drop) in
``/proc/self/status``. The kernel keeps a peak only for the total (``VmHWM``), so
:class:`PeakMemory` samples both in a background thread, for this process or, given a
``pid``, for another one (a benchmark's child, a peer library in its own environment).
"""

from __future__ import annotations

import abc
import contextlib
import os
import resource
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from graphsys.errors import check_count
from graphsys.units import format_size


@dataclass(frozen=True)
class MemorySample:
    """Bytes resident now: ``total`` = ``anon`` + ``file`` (+ shared memory)."""

    total: int
    anon: int
    file: int


def current_memory(pid: int | None = None) -> MemorySample:
    """Resident bytes of this process, or of process ``pid``, now (zeros where ``/proc`` is
    unavailable or the process has gone)."""
    fields = {"VmRSS:": 0, "RssAnon:": 0, "RssFile:": 0}
    status = Path("/proc/self/status" if pid is None else f"/proc/{int(pid)}/status")
    try:
        for line in status.read_text().splitlines():
            key = line.split(maxsplit=1)[0] if line else ""
            if key in fields:
                fields[key] = int(line.split()[1]) * 1024  # the kernel reports kB
    except OSError:
        pass
    return MemorySample(fields["VmRSS:"], fields["RssAnon:"], fields["RssFile:"])


class BackgroundSampler(abc.ABC):
    """Base of a context manager that calls :meth:`sample` every ``interval`` seconds on a
    daemon thread named :attr:`thread_name` while it is open, and once more when it closes
    (after the thread has stopped), so the last reading is taken at the block's end; a
    subclass defines :meth:`sample`."""

    thread_name = "graphsys-sampler"

    def __init__(self, interval: float):
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @abc.abstractmethod
    def sample(self) -> None:
        """Take one reading."""

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()


class PeakMemory(BackgroundSampler):
    """Context manager recording the peak resident bytes (total, anonymous, file) while
    it is open, sampling every ``interval`` seconds (by default fifty times a second); a
    spike shorter than the interval can be missed (:func:`lifetime_peak_rss` is the
    kernel's exact total peak).

    ``pid`` samples another process (a child started before the block is entered) instead
    of this one; its samples stop counting once it has exited.
    """

    thread_name = "peak-memory"

    def __init__(self, interval: float = 0.02, *, pid: int | None = None):
        super().__init__(interval)
        self.pid = pid
        self.peak_total = self.peak_anon = self.peak_file = 0

    def sample(self) -> None:
        now = current_memory(self.pid)
        self.peak_total = max(self.peak_total, now.total)
        self.peak_anon = max(self.peak_anon, now.anon)
        self.peak_file = max(self.peak_file, now.file)

    def __enter__(self) -> PeakMemory:
        self.sample()
        return super().__enter__()

    def to_json(self) -> dict[str, int]:
        """``peak_rss_bytes``, ``peak_rss_anon_bytes``, ``peak_rss_file_bytes``."""
        return {"peak_rss_bytes": self.peak_total, "peak_rss_anon_bytes": self.peak_anon,
                "peak_rss_file_bytes": self.peak_file}


def trim_heap() -> None:
    """Hand the free pages of the C heap (glibc ``malloc_trim``) and of Arrow's memory pool
    back to the system, so memory freed by one phase (a read's decoded blocks, a profiled
    run's per-batch temporaries) does not stay resident, counted in the peak of the next.
    A no-op where glibc is absent, and for Arrow where pyarrow is not loaded."""
    if (pa := sys.modules.get("pyarrow")) is not None:
        pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


def lifetime_peak_rss() -> int:
    """Peak total resident bytes over the life of this process (``ru_maxrss``, KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def budget(memory_limit) -> int:
    """The memory budget in bytes: ``memory_limit`` (a positive integer) or, when None, the
    RAM available now.

    Examples
    --------
    >>> budget(1 << 20)
    1048576
    """
    if memory_limit is None:
        return available_memory()
    return check_count("memory_limit", memory_limit)


def over_budget(need: float, memory_limit: int | None = None) -> str | None:
    """None where ``need`` bytes fit ``memory_limit`` (None: the RAM available now,
    :func:`available_memory`), else the phrase a one-line refusal ends with: both sizes and
    which budget.

    Examples
    --------
    >>> over_budget(10, 1 << 20) is None
    True
    >>> over_budget(10**9, 10**6)
    'about 1 GB, more than the 1 MB of memory_limit'
    """
    limit = budget(memory_limit)
    if need <= limit:
        return None
    source = "available RAM" if memory_limit is None else "memory_limit"
    return f"about {format_size(need)}, more than the {format_size(limit)} of {source}"


def available_memory() -> int:
    """Bytes of RAM the kernel reports available for new allocations (``MemAvailable`` of
    ``/proc/meminfo``; where that is unreadable, physical memory): the default budget of a
    build in RAM.

    Examples
    --------
    >>> available_memory() > 0
    True
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
