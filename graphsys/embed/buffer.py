"""The partition buffer of a training run: which embedding partitions are resident (in
memory, on the training device), and their loads from / write-backs to the checkpoint's
working version (:mod:`.checkpoint`). :class:`PartitionBuffer` executes the steps that
:func:`graphsys.embed.schedule.plan_buffer` plans; :mod:`.trainer` runs them, in a background
thread when prefetching."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from graphsys.embed.checkpoint_files import CheckpointStorage, load_npy, save_npy
from graphsys.embed.stats import RankStats
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.pages import huge_pages
from graphsys.trace import traced


def diverged(out: Path, committed: int, what: str) -> GraphsysError:
    """The one-line error that stops a diverged run: ``what`` went non-finite; the
    checkpoint ``out`` keeps version ``committed``, its last good one."""
    return GraphsysError(f"{out}: training diverged: {what}; the checkpoint keeps version "
                         f"{committed}, the last good one (lower lr or init_scale?)")


def _check_values(emb_path: Path, emb: np.ndarray, optim_path: Path, st: np.ndarray) -> None:
    """Refuse, naming the file, a non-finite embedding (a resumed run reported it as its
    own divergence, keeping "the last good" version that held it) or a negative or NaN
    Adagrad sum (a negative one trained a finite, wrong model: the step takes its root)."""
    if not np.isfinite(emb).all():
        raise FormatError(f"{emb_path}: a non-finite embedding (NaN or infinity)")
    if st.size and not st.min() >= 0:
        raise FormatError(f"{optim_path}: a negative or NaN Adagrad sum")


class PartitionBuffer:
    """Resident embedding partitions (all entity types of partition ``p`` form one slot).

    Loads read version ``working`` if a write since the last commit made it, else
    ``committed``; evictions and :meth:`flush` write ``working``, and only partitions in
    ``dirty`` (changed since read or written). Those writes skip the fsyncs; :meth:`flush`
    makes them durable. Tensors: embeddings float32 ``(n_p, d)`` and Adagrad sums float32
    ``state_shape(n_p)`` (``(n_p,)`` row-wise, ``(n_p, d)`` element-wise) on ``device``.
    Loads and evictions are counted in ``tally``.
    """

    def __init__(self, storage: CheckpointStorage, sizes: dict[str, list[int]], device,
                 committed: int, dimension: int,
                 state_shape: Callable[[int], tuple[int, ...]]):
        self.storage, self.sizes, self.device = storage, sizes, device
        self.dimension, self.state_shape = dimension, state_shape
        self.committed = committed
        self.resident: dict[int, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        self.dirty: set[int] = set()
        self.unsynced: list[Path] = []  # the files written since the last flush
        self.tally = RankStats(0)
        self._lock = threading.Lock()

    @property
    def working(self) -> int:
        return self.committed + 1

    def _source(self, etype: str, p: int) -> int:
        return self.working if self.storage.emb_path(etype, p, self.working).exists() \
            else self.committed

    @traced("embed.load")
    def load(self, p: int) -> None:
        slot = {}
        nbytes = 0
        for etype in self.sizes:
            v, n = self._source(etype, p), self.sizes[etype][p]
            emb_path, optim_path = self.storage.emb_path(etype, p, v), \
                self.storage.optim_path(etype, p, v)
            emb = self._read(self._checked(emb_path, (n, self.dimension)))
            st = np.array(self._checked(optim_path, self.state_shape(n)))
            if v == self.committed:   # files of an earlier run (this run's are checked)
                _check_values(emb_path, emb, optim_path, st)
            nbytes += emb.nbytes + st.nbytes
            slot[etype] = (torch.from_numpy(emb).to(self.device),
                           torch.from_numpy(st).to(self.device))
        with self._lock:
            self.resident[p] = slot
            self.tally.loads += 1
            self.tally.bytes_read += nbytes

    def check_finite(self, p: int) -> None:
        """Raise :func:`diverged` if resident partition ``p`` holds a NaN or an infinity."""
        for etype, (emb, _) in self.resident[p].items():
            if not bool(torch.isfinite(emb).all()):
                raise diverged(self.storage.root, self.committed,
                               f"non-finite embedding in entity type {etype!r}, partition {p}")

    def _checked(self, path: Path, shape: tuple[int, ...]) -> np.ndarray:
        """The float32 array of ``path``, mapped, after checking its dtype and shape (the
        kernels index rows without bounds checks)."""
        arr = load_npy(path, mmap=True, root=self.storage.root)
        if arr.dtype != np.float32 or arr.shape != shape:
            raise FormatError(f"{path}: {arr.dtype} {arr.shape}, expected float32 {shape}")
        return arr

    def _read(self, src: np.ndarray) -> np.ndarray:
        """A mapped embedding array, read: on the CPU into fresh memory advised to use huge
        pages (rows are read and written at random)."""
        if self.device.type != "cpu":
            return np.array(src)
        out = huge_pages(np.empty(src.shape, src.dtype))
        out[...] = src
        return out

    def _write(self, p: int) -> int:
        self.check_finite(p)
        n, v = 0, self.working
        for etype, (emb, st) in self.resident[p].items():
            emb_path, optim_path = self.storage.emb_path(etype, p, v), self.storage.optim_path(
                etype, p, v)
            n += save_npy(emb_path, emb.cpu().numpy(), durable=False)
            n += save_npy(optim_path, st.cpu().numpy(), durable=False)
            with self._lock:
                self.unsynced += [emb_path, optim_path]
        return n

    @traced("embed.write-back")
    def evict(self, p: int) -> None:
        n = self._write(p) if p in self.dirty else 0
        with self._lock:
            del self.resident[p]
            self.dirty.discard(p)
            self.tally.evictions += 1
            self.tally.bytes_written += n

    def execute(self, evict: list[int], load: list[int]) -> None:
        for p in evict:
            self.evict(p)
        for p in load:
            self.load(p)

    def flush(self) -> int:
        """Write the changed resident partitions to ``working`` (they stay resident) and
        make every partition write since the last flush durable; returns bytes written."""
        written = sum(self._write(p) for p in sorted(self.dirty))
        self.dirty.clear()
        with self._lock:
            unsynced, self.unsynced = self.unsynced, []
        if unsynced:
            self.storage.sync(unsynced)
        return written

    def commit_files(self, num_partitions: int) -> int:
        """Complete version ``working`` after every rank's :meth:`flush`: partitions not
        written since the last commit get a hard link (or copy) of their ``committed``
        file. Returns bytes copied."""
        written = 0
        for p in range(num_partitions):
            for etype in self.sizes:
                for path_of in (self.storage.emb_path, self.storage.optim_path):
                    dst = path_of(etype, p, self.working)
                    if dst.exists():
                        continue
                    src = path_of(etype, p, self.committed)
                    try:
                        os.link(src, dst)
                    except OSError:
                        written += save_npy(dst, load_npy(src, root=self.storage.root))
        return written
