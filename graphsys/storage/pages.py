"""Paging advice for arrays that view memory-mapped graph files (Linux ``madvise``).

:func:`will_need` asks the kernel to start reading a column's pages now (asynchronous
read-ahead); :func:`release` drops a consumed column's pages from this process's resident
set (they stay in the page cache), so the resident memory of a pass is bounded by the
columns in flight, not by the graph. Both are hints: without ``madvise`` they do nothing.

:func:`huge_pages` and :func:`small_pages` are the advice for heap memory: arrays read and
written at random rows (embedding partitions) ask for transparent huge pages (no TLB miss
per row); scratch written and read in order (an ingest's routing buffers) asks for none,
since a huge page's first write can stall in the kernel's memory compaction, which NumPy
invites by asking for huge pages on every array of 4 MiB and more.
"""

from __future__ import annotations

import ctypes
import mmap
import os

import numpy as np

PAGE = mmap.PAGESIZE
_WILLNEED = getattr(mmap, "MADV_WILLNEED", 3)
_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)
_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", 14)
_NOHUGEPAGE = getattr(mmap, "MADV_NOHUGEPAGE", 15)
HUGE_PAGE = 2 << 20


def _load_madvise():
    if os.uname().sysname != "Linux":
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


_madvise = _load_madvise()


def _advise(arr: np.ndarray, region: tuple[int, int], advice: int,
            whole_pages_only: bool, page: int = PAGE) -> None:
    if _madvise is None or arr.nbytes == 0:
        return
    start = max(arr.__array_interface__["data"][0], region[0])
    end = min(start + arr.nbytes, region[1])
    if whole_pages_only:  # never touch a page that also holds bytes outside ``arr``
        lo, hi = -(-start // page) * page, end // page * page
    else:
        lo, hi = start // page * page, -(-end // page) * page
    if hi > lo:
        _madvise(lo, hi - lo, advice)


def will_need(region: tuple[int, int], *arrays: np.ndarray | None) -> None:
    """Start reading the pages of ``arrays`` in the background; only their bytes inside
    ``region`` (start, end addresses of a file mapping) are advised."""
    for a in arrays:
        if a is not None:
            _advise(a, region, _WILLNEED, whole_pages_only=False)


def extent(arr: np.ndarray) -> tuple[int, int]:
    """(start, end) addresses of ``arr``'s bytes: the region to pass with an array that is
    itself a view of a file mapping (never of heap memory, whose contents advice drops)."""
    start = arr.__array_interface__["data"][0]
    return start, start + arr.nbytes


def release(region: tuple[int, int], *arrays: np.ndarray | None) -> None:
    """Drop the pages that lie wholly inside ``arrays`` and inside ``region`` (start, end
    addresses of a read-only file mapping) from the resident set. The region bound keeps
    the advice off heap memory, whose contents it would discard."""
    for a in arrays:
        if a is not None:
            _advise(a, region, _DONTNEED, whole_pages_only=True)


def huge_pages(arr: np.ndarray) -> np.ndarray:
    """Ask for transparent huge pages on the 2 MiB-aligned part of ``arr`` (heap memory,
    best before it is first written: pages already touched wait for the kernel's background
    collapse). Returns ``arr``; a no-op where the advice is unknown or not allowed."""
    _advise(arr, extent(arr), _HUGEPAGE, whole_pages_only=True, page=HUGE_PAGE)
    return arr


def small_pages(arr: np.ndarray) -> np.ndarray:
    """Ask for no transparent huge pages on the whole pages of ``arr`` (heap memory, before it
    is first written): for scratch written and read in order, where a huge page saves no TLB
    miss but its first write may wait for the kernel to compact memory into a free 2 MiB
    page (NumPy asks for huge pages on its large arrays). Returns ``arr``; a no-op where the
    advice is unknown."""
    _advise(arr, extent(arr), _NOHUGEPAGE, whole_pages_only=True)
    return arr


def scratch_array(n: int, dtype) -> np.ndarray:
    """An uninitialised array of ``n`` elements of ``dtype`` in small pages
    (:func:`small_pages`)."""
    return small_pages(np.empty(n, dtype))
