r"""An exact SIMT lane-utilization and load-balance model of vertex-centric GPU kernels.

A kernel processes a sequence of *work items* (vertices, in the engine's internal order) with
degrees :math:`d_0, d_1, \dots` (int64); each item's neighbour loop is mapped onto threads
by one of four *mappings* (warp size :data:`WARP` = 32, CTAs of ``B`` threads, ``B`` a
multiple of 32):

``thread-per-vertex``
    item ``i`` runs on thread ``i``: lane ``i mod 32`` of warp ``i // 32``; CTA ``c`` holds
    items ``[cB, (c+1)B)``. A warp executes ``max(d)`` iterations of its lanes' neighbour
    loops; in iteration ``k`` the lanes with ``d > k`` are active.
``warp-per-vertex``
    item ``i`` runs on warp ``i`` (``B/32`` items per CTA), loop ``for e = lane; e < d;
    e += 32``: ``ceil(d/32)`` iterations, the last with ``d - 32(ceil(d/32)-1)`` lanes.
``cta-per-vertex``
    item ``i`` runs on CTA ``i``, loop ``for e = tid; e < d; e += B``: warp ``w`` of the CTA
    executes ``ceil((d - 32w)/B)`` iterations when ``d > 32w`` (else none, an idle warp);
    in iteration ``k`` it has ``clamp(d - 32w - kB, 0, 32)`` active lanes.
``edge-balanced`` (alias ``merge-path``)
    Merrill & Garland's merge-path: the ``L = n + E`` merge items (``n`` row ends and
    ``E`` edges) are split into consecutive spans of ``K`` (``items_per_thread``) per thread;
    thread ``t`` executes ``clamp(L - tK, 0, K)`` iterations, all lanes of a warp active
    except in the final partial warp. Active lane-iterations count row-end items too.

Warps with no iteration are *idle*: they issue no loop instruction, so they do not enter the
utilization figures, but they do count in the launched-warp total and in the load balance.
Utilization is ``active lane-iterations / (32 x warp-iterations)`` over a whole kernel: every
warp-iteration weighs the same, as every warp instruction does in Nsight Compute's
``threads per warp instruction / 32``. Bands of the histograms are ``(0, 25]``, ``(25, 50]``,
``(50, 75]``, ``(75, 100]`` percent, computed with integer arithmetic (exact).

Load balance: CTA ``c`` of a kernel goes to SM ``c mod m`` (round robin over ``m`` SMs; at
most ``n`` CTAs resident per SM, which sets the number of *waves*
``ceil(C / (m n))``). The *work* of a warp is its number of loop iterations (issued
loop-body warp instructions); a CTA's work is the sum over its warps, an SM's the sum over
its CTAs. Reported: per-SM work, its max/mean and coefficient of variation (population
std / mean), the CV across CTAs, and the mean over CTAs of the CV across the warps of a CTA.

Everything is vectorized NumPy over bounded chunks (:attr:`SimtAccumulator.chunk` items), so
memory does not grow with the graph: feed degree chunks with :meth:`SimtAccumulator.add`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphsys.errors import GraphsysError, ParameterError, check_count

WARP = 32
MAPPINGS = ("thread-per-vertex", "warp-per-vertex", "cta-per-vertex", "edge-balanced")
ALIASES = {"merge-path": "edge-balanced", "tpv": "thread-per-vertex",
           "wpv": "warp-per-vertex", "cpv": "cta-per-vertex"}
#: Utilization bands, percent, intervals (lo, hi].
BANDS = ("0-25", "25-50", "50-75", "75-100")
DEFAULT_BLOCK = 256
DEFAULT_ITEMS_PER_THREAD = 4


def resolve_mapping(name: str) -> str:
    """Canonical mapping name (accepts the aliases in :data:`ALIASES`)."""
    key = ALIASES.get(name, name)
    if key not in MAPPINGS:
        raise GraphsysError(f"unknown mapping {name!r} (choose from {', '.join(MAPPINGS)}, "
                            f"or merge-path)")
    return key


def check_block_size(block_size: int) -> int:
    if not isinstance(block_size, numbers.Integral) or isinstance(block_size, bool) or (
            block_size < WARP or block_size % WARP or block_size > 1024):
        raise ParameterError("block_size", f"must be a multiple of {WARP} in [{WARP}, "
                                           f"1024], got {block_size!r}")
    return int(block_size)


def band_of_lanes(active: np.ndarray) -> np.ndarray:
    """Band index 0..3 of iterations with ``active`` lanes (int64, 1..32) of 32."""
    return (active + 7) // 8 - 1


def band_of_warp(active: np.ndarray, iters: np.ndarray) -> np.ndarray:
    """Band index 0..3 of warps with ``active`` lane-iterations over ``iters`` > 0
    iterations (utilization ``active / (32 iters)`` in ``(25b, 25(b+1)]`` percent)."""
    q = 8 * iters
    return (active + q - 1) // q - 1


class _Moments:
    """Count, mean and M2 of a stream of values (Chan et al.'s parallel merge), float64."""

    __slots__ = ("m2", "mean", "n")

    def __init__(self) -> None:
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, x: np.ndarray) -> None:
        if x.size == 0:
            return
        x = x.astype(np.float64, copy=False)
        self.merge_stats(int(x.size), float(x.mean()), float(((x - x.mean()) ** 2).sum()))

    def merge_stats(self, n: int, mean: float, m2: float) -> None:
        if n == 0:
            return
        tot = self.n + n
        delta = mean - self.mean
        self.mean += delta * n / tot
        self.m2 += m2 + delta * delta * self.n * n / tot
        self.n = tot

    def merge(self, other: _Moments) -> None:
        self.merge_stats(other.n, other.mean, other.m2)

    @property
    def cv(self) -> float:
        """Population std / mean (0 when the mean is 0 or nothing was seen)."""
        if self.n == 0 or self.mean <= 0:
            return 0.0
        return math.sqrt(max(self.m2, 0.0) / self.n) / self.mean


@dataclass
class GPU:
    """A GPU's SM count and per-SM residency limits (threads, CTAs)."""

    name: str
    num_sms: int
    max_threads_per_sm: int = 2048
    max_ctas_per_sm: int = 32

    def resident_ctas(self, block_size: int) -> int:
        """CTAs of ``block_size`` threads resident per SM (thread and CTA limits only)."""
        return max(1, min(self.max_ctas_per_sm, self.max_threads_per_sm // block_size))


#: Named GPUs (SXM variants); ``--gpu NAME`` picks one, case-insensitive.
GPUS = {g.name.lower(): g for g in (
    GPU("H100", 132, 2048, 32), GPU("H200", 132, 2048, 32), GPU("A100", 108, 2048, 32),
    GPU("V100", 80, 2048, 32), GPU("L4", 58, 1536, 24), GPU("T4", 40, 1024, 16),
    GPU("RTX4090", 128, 1536, 24), GPU("B200", 148, 2048, 32))}


#: Resident CTAs per SM by compute capability where the thread limit does not tell it (CUDA
#: C++ Programming Guide, "Technical Specifications per Compute Capability"): 1,536 threads
#: an SM go with 16 CTAs on 8.6/8.7 but 24 on 8.9.
_CTAS_PER_SM = {(7, 5): 16, (8, 6): 16, (8, 7): 16, (8, 9): 24}


def resolve_gpu(name: str | None = None) -> GPU:
    """``name`` from :data:`GPUS`; ``None`` or ``auto``: the CUDA GPU present (its SM count and
    limits from torch), else H100."""
    if name is None or name == "auto":
        try:
            import torch

            if torch.cuda.is_available():
                p = torch.cuda.get_device_properties(torch.cuda.current_device())
                threads = int(getattr(p, "max_threads_per_multi_processor", 2048))
                ctas = _CTAS_PER_SM.get((p.major, p.minor),
                                        32 if threads >= 2048 else 16 if threads <= 1024 else 24)
                return GPU(p.name, int(p.multi_processor_count), threads, ctas)
        except Exception:  # noqa: BLE001 - no usable CUDA runtime: fall back to the default
            pass
        return GPUS["h100"]
    try:
        return GPUS[name.lower()]
    except KeyError:
        raise GraphsysError(f"unknown GPU {name!r} (known: "
                            f"{', '.join(g.name for g in GPUS.values())}, or auto)") from None


@dataclass
class SimtAccumulator:
    """Streams the degrees of one kernel's work items (or of several kernels, merged) and
    accumulates the exact SIMT and load-balance figures of ``mapping``.

    Feed int64 degree chunks in order with :meth:`add`, then :meth:`end_kernel` (or
    :meth:`result`, which ends the open kernel). Kernels fed one after another (one per
    superstep) each start at CTA 0 on SM 0; their figures add up.
    """

    mapping: str
    block_size: int = DEFAULT_BLOCK
    items_per_thread: int = DEFAULT_ITEMS_PER_THREAD
    gpu: GPU = field(default_factory=lambda: GPUS["h100"])
    #: work items processed per vectorized step (bounds the temporaries)
    chunk: int = 1 << 20

    def __post_init__(self) -> None:
        self.mapping = resolve_mapping(self.mapping)
        self.block_size = check_block_size(self.block_size)
        self.items_per_thread = check_count("items_per_thread", self.items_per_thread,
                                            maximum=64)
        self.chunk = check_count("chunk", self.chunk)  # 0: a raw range() error
        self.wpc = self.block_size // WARP
        self.vertices = self.edges = self.max_degree = self.kernels = self.waves = 0
        self.warps = self.idle_warps = self.ctas = self.warp_cv_ctas = 0
        self.warp_iterations = self.active_lane_iterations = 0
        self.util_sum = 0.0  # sum over non-idle warps of their utilization
        self.warp_cv_sum = 0.0
        self.warp_hist, self.iter_hist = np.zeros(4, np.int64), np.zeros(4, np.int64)
        self.sm_work = np.zeros(self.gpu.num_sms, np.int64)
        self.cta_moments, self.warp_moments = _Moments(), _Moments()
        self._open, self._carry = False, np.zeros(0, np.int64)
        self._cta_base = self._n_kernel = self._e_kernel = 0

    # -- feeding ---------------------------------------------------------------------------
    @property
    def _items_per_cta(self) -> int:
        return {"thread-per-vertex": self.block_size, "warp-per-vertex": self.wpc,
                "cta-per-vertex": 1}.get(self.mapping, 0)

    def add(self, degrees: np.ndarray) -> None:
        """Append work items with out-degrees ``degrees`` (int, >= 0, any length) to the
        open kernel (one is opened on first use)."""
        d = np.asarray(degrees)
        if d.ndim != 1:
            raise GraphsysError(f"degrees must be one-dimensional, got shape {d.shape}")
        if d.dtype.kind not in "iub":  # 1.5 was modelled as 1
            with np.errstate(invalid="ignore"):
                whole = d.astype(np.int64)
            if not np.array_equal(whole, d):
                raise GraphsysError(f"degrees must be whole numbers, got {d.dtype} values")
        d = d.astype(np.int64, copy=False)
        if not self._open:
            self._open, self._cta_base, self._n_kernel, self._e_kernel = True, 0, 0, 0
        if d.size == 0:
            return
        if int(d.min()) < 0:
            raise GraphsysError("degrees must be non-negative")
        self.max_degree = max(self.max_degree, int(d.max()))
        self._n_kernel += int(d.size)
        self._e_kernel += int(d.sum())
        if self.mapping == "edge-balanced":
            return
        per = self._items_per_cta
        step = max(per, (self.chunk // per) * per)
        for lo in range(0, d.size, step):
            part = d[lo:lo + step]
            if self._carry.size:
                part = np.concatenate([self._carry, part])
            full = (part.size // per) * per
            if full:
                self._consume_items(part[:full])
            self._carry = part[full:].copy()

    def end_kernel(self) -> None:
        """Close the open kernel: flush the last (zero-padded) CTA, count waves."""
        if not self._open:
            return
        if self.mapping == "edge-balanced":
            self._edge_balanced(self._n_kernel + self._e_kernel)
        elif self._carry.size:
            pad = np.zeros(self._items_per_cta, np.int64)
            pad[:self._carry.size] = self._carry
            self._consume_items(pad)
        self._carry = np.zeros(0, np.int64)
        self.vertices += self._n_kernel
        self.edges += self._e_kernel
        slots = self.gpu.num_sms * self.gpu.resident_ctas(self.block_size)
        self.waves += -(-self._cta_base // slots)
        self.kernels += 1
        self._open = False

    def add_kernel(self, degrees: np.ndarray | Iterable[np.ndarray]) -> SimtAccumulator:
        """One whole kernel: ``degrees`` an int array (or a list, tuple or range of ints)
        or an iterable of chunks."""
        if isinstance(degrees, list | tuple | range) and not any(map(np.ndim, degrees)):
            degrees = np.asarray(degrees, np.int64 if len(degrees) == 0 else None)
        if isinstance(degrees, np.ndarray):
            for lo in range(0, max(len(degrees), 1), self.chunk):
                self.add(degrees[lo:lo + self.chunk])
        else:
            for part in degrees:
                self.add(part)
        if not self._open:
            self.add(np.zeros(0, np.int64))
        self.end_kernel()
        return self

    # -- per mapping: items -> (warp iterations, warp active lanes) per CTA ------------------
    def _consume_items(self, d: np.ndarray) -> None:
        if self.mapping == "thread-per-vertex":
            lanes = d.reshape(-1, WARP)
            s = np.sort(lanes, axis=1)[:, ::-1]  # descending: s[:, j-1] = j-th largest
            iters = s[:, 0].copy()
            active = lanes.sum(axis=1)
            # iterations with >= j active lanes = j-th largest degree
            ge = np.concatenate([s[:, ::8], np.zeros((len(s), 1), np.int64)], axis=1).sum(0)
            iter_hist = ge[:4] - ge[1:]
            self._consume_warps(iters.reshape(-1, self.wpc), active.reshape(-1, self.wpc),
                                iter_hist)
        elif self.mapping == "warp-per-vertex":
            iters = (d + WARP - 1) // WARP
            last = d - WARP * (iters - 1)
            busy = iters > 0
            iter_hist = np.bincount(band_of_lanes(last[busy]), minlength=4).astype(np.int64)
            iter_hist[3] += int((iters[busy] - 1).sum())
            self._consume_warps(iters.reshape(-1, self.wpc), d.reshape(-1, self.wpc),
                                iter_hist)
        else:  # cta-per-vertex: one CTA per item, wpc warps each
            self._cta_per_vertex(d)

    def _cta_per_vertex(self, d: np.ndarray) -> None:
        """CTA per item. Items of degree <= 32 (most, on skewed graphs) keep warp 0 busy for
        one iteration with ``d`` lanes and leave the other warps idle: their figures are
        accounted in closed form; only the rest go through the (items, B/32) arrays."""
        b, wpc = self.block_size, self.wpc
        heavy = d > WARP
        dh = d[heavy]
        r = dh[:, None] - WARP * np.arange(wpc, dtype=np.int64)[None, :]
        iters = np.maximum(r + b - 1, 0) // b
        busy = iters > 0
        last = np.where(busy, np.minimum(r - (iters - 1) * b, WARP), 0)
        del r
        active = np.where(busy, WARP * (iters - 1) + last, 0)
        iter_hist = np.bincount(band_of_lanes(last[busy]), minlength=4).astype(np.int64)
        iter_hist[3] += int((iters[busy] - 1).sum())
        del last, busy
        dl = d[~heavy]
        lit = dl[dl > 0]  # light items with an edge: warp 0, one iteration, d lanes
        iter_hist += np.bincount(band_of_lanes(lit), minlength=4)
        self.iter_hist += iter_hist
        self._warp_stats(iters.ravel(), active.ravel())
        del active
        n_light, n_lit = int(dl.size), int(lit.size)
        self.warps += n_light * wpc
        self.idle_warps += n_light * wpc - n_lit
        self.warp_iterations += n_lit
        self.active_lane_iterations += int(lit.sum())
        self.util_sum += float(lit.sum()) / WARP
        self.warp_hist += np.bincount(band_of_warp(lit, np.ones_like(lit)), minlength=4)
        if n_light:  # per-warp iterations: n_lit ones, the other warps zero
            n = n_light * wpc
            mean = n_lit / n
            self.warp_moments.merge_stats(n, mean, n_lit * (1 - mean) ** 2
                                          + (n - n_lit) * mean ** 2)
        work = np.zeros(d.size, np.int64)
        work[heavy] = iters.sum(axis=1)
        work[~heavy] = dl > 0
        # within-CTA CV: heavy items all have a busy warp 0; a lit light item's warps
        # [1, 0, ..., 0] have CV sqrt(wpc - 1)
        cv_sum = float((iters.std(axis=1) / iters.mean(axis=1)).sum()) if dh.size else 0.0
        self._cta_stats(work, cv_sum + n_lit * math.sqrt(wpc - 1), int(dh.size) + n_lit)

    def _edge_balanced(self, total_items: int) -> None:
        """Merge-path kernel over ``total_items`` = n + E items, K per thread."""
        k = self.items_per_thread
        per_warp = WARP * k
        full_warps, rest = divmod(total_items, per_warp)
        num_warps = full_warps + (1 if rest else 0)
        if num_warps == 0:
            return
        ctas = -(-num_warps // self.wpc)
        # partial warp (if any): lane j has clamp(rest - jK, 0, K) items
        lane_items = np.clip(rest - k * np.arange(WARP, dtype=np.int64), 0, k)
        step = max(1, self.chunk // self.wpc)
        for c0 in range(0, ctas, step):
            c1 = min(ctas, c0 + step)
            w = np.arange(c0 * self.wpc, c1 * self.wpc, dtype=np.int64)
            iters = np.where(w < full_warps, k, 0)
            active = np.where(w < full_warps, per_warp, 0)
            iter_hist = np.zeros(4, np.int64)
            iter_hist[3] = int((w < full_warps).sum()) * k
            if rest and c0 * self.wpc <= full_warps < c1 * self.wpc:
                pos = full_warps - c0 * self.wpc
                iters[pos], active[pos] = int(lane_items[0]), int(rest)
                lanes_at = (lane_items[None, :] > np.arange(int(lane_items[0]))[:, None]).sum(1)
                iter_hist += np.bincount(band_of_lanes(lanes_at), minlength=4)
            self._consume_warps(iters.reshape(-1, self.wpc), active.reshape(-1, self.wpc),
                                iter_hist)

    def _consume_warps(self, iters: np.ndarray, active: np.ndarray,
                       iter_hist: np.ndarray) -> None:
        """Account CTAs ``iters``/``active`` int64 (C, B/32): per-warp loop iterations and
        active lane-iterations; ``iter_hist`` int64 (4,): warp-iterations per band."""
        self.iter_hist += iter_hist
        self._warp_stats(iters.ravel(), active.ravel())
        mu = iters.mean(axis=1)
        ok = mu > 0
        cv_sum = float((iters[ok].std(axis=1) / mu[ok]).sum()) if ok.any() else 0.0
        self._cta_stats(iters.sum(axis=1), cv_sum, int(ok.sum()))

    def _warp_stats(self, flat_i: np.ndarray, flat_a: np.ndarray) -> None:
        """Per-warp figures of warps with ``flat_i`` iterations and ``flat_a`` active
        lane-iterations (int64, any order)."""
        busy = flat_i > 0
        self.warps += int(flat_i.size)
        self.idle_warps += int(flat_i.size - busy.sum())
        self.warp_iterations += int(flat_i.sum())
        self.active_lane_iterations += int(flat_a.sum())
        bi, ba = flat_i[busy], flat_a[busy]
        self.util_sum += float((ba / (WARP * bi)).sum())
        self.warp_hist += np.bincount(band_of_warp(ba, bi), minlength=4)
        self.warp_moments.add(flat_i)

    def _cta_stats(self, work: np.ndarray, warp_cv_sum: float, warp_cv_ctas: int) -> None:
        """Per-CTA figures of the next ``len(work)`` CTAs (in launch order) with ``work``
        int64 loop iterations each, and the sum / count of their within-CTA warp CVs (CTAs
        with work only)."""
        c = work.size
        self.ctas += c
        sm = (self._cta_base + np.arange(c, dtype=np.int64)) % self.gpu.num_sms
        self.sm_work += np.bincount(sm, weights=work, minlength=self.gpu.num_sms).astype(
            np.int64)
        self._cta_base += c
        self.cta_moments.add(work)
        self.warp_cv_sum += warp_cv_sum
        self.warp_cv_ctas += warp_cv_ctas

    # -- results ---------------------------------------------------------------------------
    def merge(self, other: SimtAccumulator) -> SimtAccumulator:
        """Add the (closed) kernels of ``other`` (same mapping, block size, items per thread
        and GPU)."""
        if (other.mapping, other.block_size, other.items_per_thread, other.gpu) != (
                self.mapping, self.block_size, self.items_per_thread, self.gpu):
            raise GraphsysError("cannot merge SIMT figures of different configurations")
        other.end_kernel()
        for k in ("vertices", "edges", "kernels", "warps", "idle_warps", "ctas",
                  "warp_iterations", "active_lane_iterations", "util_sum", "waves",
                  "warp_cv_sum", "warp_cv_ctas"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.max_degree = max(self.max_degree, other.max_degree)
        self.warp_hist += other.warp_hist
        self.iter_hist += other.iter_hist
        self.sm_work += other.sm_work
        self.cta_moments.merge(other.cta_moments)
        self.warp_moments.merge(other.warp_moments)
        return self

    @property
    def mean_utilization(self) -> float | None:
        """active lane-iterations / (32 x warp-iterations), 0..1; None without iterations."""
        if self.warp_iterations == 0:
            return None
        return self.active_lane_iterations / (WARP * self.warp_iterations)

    def result(self, *, per_sm: bool = True) -> dict[str, Any]:
        """JSON-ready figures (ends the open kernel). Counts are ints; ratios floats."""
        self.end_kernel()
        busy = self.warps - self.idle_warps
        sm = self.sm_work.astype(np.float64)
        sm_mean = float(sm.mean()) if sm.size else 0.0
        out: dict[str, Any] = {
            "mapping": self.mapping, "warp_size": WARP, "block_size": self.block_size,
            "kernels": self.kernels, "vertices": self.vertices, "edges": self.edges,
            "max_degree": self.max_degree, "warps": self.warps, "idle_warps": self.idle_warps,
            "ctas": self.ctas, "warp_iterations": self.warp_iterations,
            "active_lane_iterations": self.active_lane_iterations,
            "mean_utilization": self.mean_utilization,
            "mean_warp_utilization": self.util_sum / busy if busy else None,
            "histogram": {"bands": list(BANDS), "warps": self.warp_hist.tolist(),
                          "warp_iterations": self.iter_hist.tolist()},
        }
        if self.mapping == "edge-balanced":
            out["items_per_thread"] = self.items_per_thread
        balance = {
            "gpu": self.gpu.name, "num_sms": self.gpu.num_sms,
            "resident_ctas_per_sm": self.gpu.resident_ctas(self.block_size),
            "waves": self.waves,
            "sm": {"max_over_mean": float(sm.max()) / sm_mean if sm_mean > 0 else 1.0,
                   "cv": float(sm.std()) / sm_mean if sm_mean > 0 else 0.0,
                   "max": int(self.sm_work.max()) if sm.size else 0,
                   "min": int(self.sm_work.min()) if sm.size else 0, "mean": sm_mean},
            "cta": {"cv": self.cta_moments.cv, "mean": self.cta_moments.mean,
                    "count": self.cta_moments.n},
            "warp": {"cv": self.warp_cv_sum / self.warp_cv_ctas if self.warp_cv_ctas else 0.0,
                     "cv_global": self.warp_moments.cv, "ctas": self.warp_cv_ctas},
        }
        if per_sm:
            balance["sm"]["work"] = self.sm_work.tolist()
        out["load_balance"] = balance
        return out


def simt_model(degrees: np.ndarray | Iterable[np.ndarray], mapping: str, *,
               block_size: int = DEFAULT_BLOCK,
               items_per_thread: int = DEFAULT_ITEMS_PER_THREAD, gpu: GPU | str | None = None,
               chunk: int = 1 << 20) -> dict[str, Any]:
    """Model one GPU kernel over vertices of the given degrees: lane utilization and balance.

    The model is exact for its assumptions: a warp of 32 lanes runs as long as its
    busiest lane, and the vertex-to-thread ``mapping`` decides which edges each lane
    takes. It needs no GPU; :func:`~graphsys.analysis.profile_graph` applies it to every
    superstep of a run.

    Parameters
    ----------
    degrees : array-like of int, or iterable of arrays
        The degree (edges to process) of every work item, in execution order; an iterable
        of chunks keeps memory bounded for large graphs.
    mapping : str
        ``"thread-per-vertex"``, ``"warp-per-vertex"``, ``"cta-per-vertex"`` or
        ``"edge-balanced"`` (merge-path), or an alias (``"tpv"``, ``"merge-path"``, ...).
    block_size : int, default 256
        Threads per CTA: a multiple of 32 in ``[32, 1024]``.
    items_per_thread : int, default 4
        Edges per thread per step of the ``edge-balanced`` mapping, in ``[1, 64]``.
    gpu : str or GPU, optional
        The GPU whose SM count and residency limits the balance figures assume (a name of
        :data:`GPUS`; default the GPU present, else an H100).
    chunk : int, default 1048576
        Work items modelled at a time.

    Returns
    -------
    dict
        ``mean_utilization`` (active lane-iterations over all lane-iterations, 0..1), a
        ``histogram`` of warps by utilization band, counts (``warps``, ``ctas``,
        ``warp_iterations``, ...) and ``load_balance`` (``sm``, ``cta``, ``warp``).

    Raises
    ------
    GraphsysError
        An unknown mapping or GPU, or degrees that are negative or not whole numbers.
    ParameterError
        A block size, items per thread or chunk out of range.

    Examples
    --------
    31 leaves and one hub: one thread per vertex leaves most lanes idle while the hub's
    lane works; spreading edges evenly over lanes keeps them busy.

    >>> import numpy as np
    >>> from graphsys.analysis import simt_model
    >>> degrees = np.array([1] * 31 + [1000])
    >>> for mapping in ("thread-per-vertex", "warp-per-vertex", "edge-balanced"):
    ...     r = simt_model(degrees, mapping, gpu="H100")
    ...     print(mapping, round(r["mean_utilization"], 3))
    thread-per-vertex 0.032
    warp-per-vertex 0.511
    edge-balanced 0.923
    """
    g = gpu if isinstance(gpu, GPU) else resolve_gpu(gpu)
    acc = SimtAccumulator(mapping, block_size, items_per_thread, g, chunk)
    return acc.add_kernel(degrees).result()
