"""Kernel (operator) invocations, host<->device transfers and synchronisations of a workload,
measured with :mod:`torch.profiler`, plus the dense reference workload of the paper.

* **Invocations.** On CUDA: device kernels recorded by the profiler (CUPTI). On CPU: torch
  operator invocations, counting *top-level* operators only (an ``aten::`` event with no
  ``aten::`` ancestor; ``aten::to`` counts once, not also its inner ``aten::copy_``) - what a
  GPU run would launch as kernels - plus every call of a numba-compiled function made from
  Python (:func:`graphsys.trace.numba_ranges`: the CPU kernels of the numba
  backend). Steps are delimited with :class:`StepMarker`, which opens
  profiler ranges named ``graphsys.step#<k>`` (``graphsys.setup`` / ``graphsys.finish``
  around them); each invocation is charged to the range it started in.
* **Transfers.** A :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees every
  ``aten::_to_copy`` / ``aten::copy_`` / ``aten::_local_scalar_dense`` whose source and
  destination devices differ, with exact byte counts (source ``numel x element_size``);
  durations come from the profiler's ``Memcpy`` events on CUDA (0 on CPU, where no copy
  crosses a device; ``meta`` counts as a device, which the tests use).
* **Synchronisations.** ``aten::_local_scalar_dense`` (``.item()``, ``int(t)``: a GPU run
  blocks there) plus ``cuda*Synchronize`` runtime calls on CUDA.
"""

from __future__ import annotations

import gc
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.profiler import record_function
from torch.utils._python_dispatch import TorchDispatchMode

from graphsys.analysis.events import raw_events, self_time_table
from graphsys.analysis.threads import ThreadSampler
from graphsys.analysis.timing import attribute
from graphsys.memory import lifetime_peak_rss
from graphsys.trace import COMPILE, NUMBA_PREFIX, numba_ranges, profiling, write_trace

STEP_PREFIX = "graphsys.step#"
RANGES = ("graphsys.setup", "graphsys.finish")
#: Transfer-size histogram bands, bytes: [lo, hi).
SIZE_BANDS = ((0, 1 << 10, "<1KiB"), (1 << 10, 64 << 10, "1KiB-64KiB"),
              (64 << 10, 1 << 20, "64KiB-1MiB"), (1 << 20, 16 << 20, "1MiB-16MiB"),
              (16 << 20, 1 << 62, ">=16MiB"))


class TransferCounter(TorchDispatchMode):
    """Records every cross-device copy: ``records`` = list of (kind, bytes), kind ``h2d``,
    ``d2h`` or ``d2d``; ``syncs`` counts scalar reads (``.item()``)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, int]] = []
        self.syncs = 0

    def _note(self, src: torch.Tensor, dst_device: torch.device) -> None:
        if src.device == dst_device:
            return
        kind = ("h2d" if src.device.type == "cpu" else
                "d2h" if dst_device.type == "cpu" else "d2d")
        self.records.append((kind, int(src.numel() * src.element_size())))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name == "_to_copy" and isinstance(args[0], torch.Tensor):
            dst = kwargs.get("device")
            if dst is not None:
                self._note(args[0], torch.device(dst))
        elif name == "copy_" and len(args) > 1 and isinstance(args[1], torch.Tensor):
            self._note(args[1], args[0].device)
        elif name == "_local_scalar_dense":
            self.syncs += 1
            if args[0].device.type != "cpu":
                self.records.append(("d2h", int(args[0].element_size())))
        return func(*args, **kwargs)


class StepMarker:
    """Opens ``graphsys.setup`` on :meth:`start`; :meth:`step` closes the current range and
    opens ``graphsys.step#<k>``; :meth:`finish` opens ``graphsys.finish``; :meth:`close` ends
    the last range. Call all of them on the profiled thread."""

    def __init__(self) -> None:
        self._rf = None
        self.steps = 0

    def _enter(self, name: str) -> None:
        self.close()
        self._rf = record_function(name)
        self._rf.__enter__()

    def start(self) -> None:
        self._enter("graphsys.setup")

    def step(self) -> None:
        self._enter(f"{STEP_PREFIX}{self.steps}")
        self.steps += 1

    def finish(self) -> None:
        self._enter("graphsys.finish")

    def close(self) -> None:
        if self._rf is not None:
            self._rf.__exit__(None, None, None)
            self._rf = None


@dataclass
class KernelStats:
    """What :func:`profile_call` measured; :meth:`to_dict` is the JSON form."""

    device: str
    seconds: float
    invocations: int
    per_step: list[int]
    setup_invocations: int
    finish_invocations: int
    op_seconds: float
    top_ops: list[tuple[str, int, float]]
    transfers: list[tuple[str, int]]
    transfer_seconds: float
    syncs: int
    flops: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    #: False when the run was all on the CPU and the transfer counter was left out
    transfers_counted: bool = True
    #: perf_counter stamps of the profiled section and its parts
    #: (:func:`graphsys.analysis.timing.attribute`); not part of :meth:`to_dict`
    timing: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        steps = len(self.per_step)
        inv = self.invocations
        sizes = np.asarray([b for _, b in self.transfers], np.int64)
        kinds = Counter(k for k, _ in self.transfers)
        hist = {label: int(((sizes >= lo) & (sizes < hi)).sum()) for lo, hi, label in
                SIZE_BANDS}
        return {
            "kernels": {
                "device": self.device,
                "unit": "CUDA kernels" if self.device.startswith("cuda") else
                "top-level torch operators and numba calls"
                if self.extra.get("numba_calls") else "top-level torch operators",
                "invocations": inv, "steps": steps, "per_step": self.per_step,
                "mean_per_step": (sum(self.per_step) / steps) if steps else None,
                "setup": self.setup_invocations, "finish": self.finish_invocations,
                "per_second": inv / self.seconds if self.seconds > 0 else None,
                "seconds": self.seconds,
                "op_seconds": self.op_seconds,
                "mean_us_per_invocation": 1e6 * self.op_seconds / inv if inv else None,
                "flops": self.flops,
                "flops_per_invocation": self.flops / inv if inv else None,
                "syncs": self.syncs,
                "top": [{"name": n, "count": c, "seconds": s} for n, c, s in self.top_ops],
                **self.extra,
            },
            "transfers": {
                "count": len(self.transfers), "bytes": int(sizes.sum()),
                "seconds": self.transfer_seconds,
                "h2d": int(kinds.get("h2d", 0)), "d2h": int(kinds.get("d2h", 0)),
                "d2d": int(kinds.get("d2d", 0)),
                "mean_bytes": float(sizes.mean()) if sizes.size else 0.0,
                "histogram": hist,
                "per_step": len(self.transfers) / steps if steps else None,
                "counted": ("every cross-device copy (dispatch mode)" if
                            self.transfers_counted else
                            "not instrumented: CPU-only run, no device to copy to"),
            },
        }


def _is_op(name: str) -> bool:
    """A torch operator event (``aten::``, ``prim::``, custom ``ns::op``), not a profiler
    range, an autograd engine wrapper or a Python dispatch frame."""
    return "::" in name and not name.startswith(("autograd::", "graphsys", "profiler::",
                                                  "PythonDispatchMode"))


#: Composite operators that only forward to ``aten::_local_scalar_dense`` (``int(t)``,
#: ``t.item()``, ``bool(t)``): a dispatch mode sees the scalar read beneath them.
_SCALAR_WRAPPERS = frozenset({"aten::item", "aten::is_nonzero"})


def _called_directly(e) -> bool:
    """Whether event ``e`` was called by the workload itself, not from inside another
    operator (:data:`_SCALAR_WRAPPERS` aside): what a dispatch mode sees, as the calls
    nested in an operator run below it."""
    p = e.cpu_parent
    while p is not None:
        if _is_op(p.name) and p.name not in _SCALAR_WRAPPERS:
            return False
        p = p.cpu_parent
    return True


def _analyse(events, device: str) -> tuple[dict[str, int], list[tuple[str, int, float]],
                                          float, float, int, int]:
    """Charge invocations to ranges. Returns (per-range counts, top ops, op seconds,
    memcpy seconds, runtime syncs, scalar reads (``aten::_local_scalar_dense`` events))."""
    ranges = sorted(((e.time_range.start, e.time_range.end, e.name) for e in events
                     if e.name.startswith(STEP_PREFIX) or e.name in RANGES),
                    key=lambda r: r[0])
    starts = np.asarray([r[0] for r in ranges], np.float64)
    counts: Counter[str] = Counter()
    per_name: Counter[str] = Counter()
    secs: dict[str, float] = {}
    op_seconds = memcpy_seconds = 0.0
    runtime_syncs = scalar_reads = numba_calls = 0
    cuda = device.startswith("cuda")

    def charge(start: float, end: float) -> str:
        k = int(np.searchsorted(starts, start, side="right")) - 1
        if k >= 0 and ranges[k][0] <= start <= ranges[k][1]:
            return ranges[k][2]
        return "outside"

    for e in events:
        name = e.name
        if "Synchronize" in name and name.startswith("cuda"):
            runtime_syncs += 1
        elif name == "aten::_local_scalar_dense" and _called_directly(e):
            scalar_reads += 1
        if cuda:
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            dur = e.time_range.elapsed_us() / 1e6
            if name.startswith(("Memcpy", "Memset")):
                memcpy_seconds += dur
                continue
        else:
            if name.startswith(NUMBA_PREFIX) and name != COMPILE:
                dur = e.time_range.elapsed_us() / 1e6
                counts[charge(e.time_range.start, e.time_range.end)] += 1
                per_name[name] += 1
                secs[name] = secs.get(name, 0.0) + dur
                op_seconds += dur
                numba_calls += 1
                continue
            if not _is_op(name):
                continue
            p, nested = e.cpu_parent, False
            while p is not None:
                if _is_op(p.name):
                    nested = True
                    break
                p = p.cpu_parent
            if nested:
                continue
            dur = e.time_range.elapsed_us() / 1e6
        counts[charge(e.time_range.start, e.time_range.end)] += 1
        per_name[name] += 1
        secs[name] = secs.get(name, 0.0) + dur
        op_seconds += dur
    top = [(n, per_name[n], secs[n]) for n in sorted(secs, key=lambda n: (-secs[n], n))[:12]]
    counts["numba calls"] = numba_calls
    return counts, top, op_seconds, memcpy_seconds, runtime_syncs, scalar_reads


def profile_call(fn: Callable[[StepMarker], Any], *, device: str = "cpu",
                 flops: float = 0.0, count_transfers: bool = True,
                 trace: str | Path | None = None) -> tuple[Any, KernelStats]:
    """Run ``fn(marker)`` under the profiler and the transfer counter; ``fn`` calls
    ``marker.step()`` at the start of every step (and may call ``marker.finish()``).
    Returns ``(fn's result, KernelStats)``; ``flops`` is the workload's estimated floating-point
    operations (for work per invocation).

    ``count_transfers=False`` leaves the transfer counter out, for a workload whose tensors
    all live on the CPU (nothing to copy across devices): Python dispatch of every operator
    costs that run time and memory (measured on a 100M-edge out-of-core PageRank: +40 %
    wall time, +120 MiB peak RSS). Scalar reads are then counted from the profiler's
    ``aten::_local_scalar_dense`` events called by the workload itself (the ones the
    counter sees; those nested in other operators are not counted either way).

    ``trace``: also write the profiler's Chrome trace there (:mod:`graphsys.trace`: the
    engines' named ranges are on during the run; only the calling thread is recorded, as
    counted). The other threads are sampled meanwhile
    (:class:`graphsys.analysis.threads.ThreadSampler`: CPU time and what each spent it
    on)."""
    cuda = str(device).startswith("cuda")
    marker = StepMarker()
    counter = TransferCounter() if count_transfers else None
    t_start = time.perf_counter()
    with (profiling(device, all_threads=False) as prof, numba_ranges(),
          ThreadSampler() as threads):
        t0 = time.perf_counter()
        marker.start()
        try:
            if counter is not None:
                with counter:
                    out = fn(marker)
            else:
                out = fn(marker)
            if cuda:
                torch.cuda.synchronize()
        finally:
            marker.close()
        t1 = time.perf_counter()
        seconds = t1 - t0
    t_stopped = time.perf_counter()
    peak_run = lifetime_peak_rss()
    if trace is not None:
        write_trace(prof, trace)
    # hundreds of thousands of small objects, none of them in a cycle: the collector's
    # passes over them would take longer than building them
    collecting = gc.isenabled()
    gc.disable()
    try:
        events = raw_events(prof, cuda=cuda)
        del prof  # the records are read: the profiler's own copy can go
        self_time = _self_time_table(events, cuda)
        ranges = _range_spans(events)
        counts, top, op_s, mem_s, rt_syncs, reads = _analyse(events, str(device))
        main = next((e.thread for e in events if e.name == "graphsys.setup"), None)
        parts = attribute(events, thread=main, cuda=cuda)
        phases = attribute(events, thread=main, cuda=cuda, phases=True)
    finally:
        if collecting:
            gc.enable()
    per_step = [counts.get(f"{STEP_PREFIX}{k}", 0) for k in range(marker.steps)]
    numba_calls = counts.pop("numba calls")
    total = sum(counts.values())
    stats = KernelStats(device=str(device), seconds=seconds, invocations=total,
                        per_step=per_step, setup_invocations=counts.get("graphsys.setup", 0),
                        finish_invocations=counts.get("graphsys.finish", 0) + counts.get(
                            "outside", 0), op_seconds=op_s, top_ops=top,
                        transfers=counter.records if counter else [],
                        transfer_seconds=mem_s,
                        syncs=(counter.syncs if counter else reads) + rt_syncs, flops=flops,
                        transfers_counted=counter is not None)
    stats.extra.update({"self_time": self_time, "ranges": ranges, "numba_calls": numba_calls,
                        "torch_operators": total - numba_calls})
    stats.timing = {"start": t_start, "window_start": t0, "window_end": t1,
                    "stopped": t_stopped, "parts": parts, "phases": phases,
                    "threads": threads.result(), "events": len(events),
                    "peak_rss_run": peak_run,
                    "analysis_seconds": time.perf_counter() - t_stopped}
    return out, stats


#: Rows of the self-time operator table and most ranges kept for the timeline.
SELF_TIME_ROWS = 15
MAX_RANGES = 4000


def _self_time_table(events, cuda: bool) -> list[dict[str, Any]]:
    """Operators (CUDA kernels on CUDA) by measured self time, most first: ``name``,
    ``count``, ``self_seconds``, ``total_seconds`` (as torch.profiler's key averages,
    :func:`graphsys.analysis.events.self_time_table`)."""
    table = self_time_table(events, (lambda name: True) if cuda else _is_op, cuda=cuda)
    rows = [{"name": n, "count": int(c), "self_seconds": s / 1e6, "total_seconds": t / 1e6}
            for n, (c, s, t) in table.items() if s > 0]
    rows.sort(key=lambda r: (-r["self_seconds"], r["name"]))
    return rows[:SELF_TIME_ROWS]


def _range_spans(events) -> list[list]:
    """The named ranges (graphsys.* steps and the engines' :mod:`graphsys.trace` ranges)
    as ``[name, start_seconds, seconds]`` from the first range's start, start order; at
    most :data:`MAX_RANGES`."""
    spans = [(e.name, e.time_range.start, e.time_range.elapsed_us()) for e in events
             if "::" not in e.name and "." in e.name and not e.name.startswith(
                 ("cuda", "Memcpy", "Memset"))]
    if not spans:
        return []
    spans.sort(key=lambda s: s[1])
    t0 = spans[0][1]
    return [[n, (s - t0) / 1e6, d / 1e6] for n, s, d in spans[:MAX_RANGES]]


def dense_reference(flops_per_step: float, steps: int, *, device: str = "cpu",
                    batch: int = 256, max_seconds: float = 30.0) -> dict[str, Any]:
    """Profile ``steps`` training steps of a 2-layer MLP (``batch`` x h -> h -> h, ReLU, MSE,
    SGD) whose step costs about ``flops_per_step`` (6 x batch x 2h^2 FLOPs: forward 2,
    backward 4 per multiply-add), h clamped to [16, 4096]. At most ``steps`` steps, stopping
    early after ``max_seconds``. Returns :meth:`KernelStats.to_dict` plus ``hidden``."""
    h = int(min(4096, max(16, round(math.sqrt(max(flops_per_step, 1.0) / (12 * batch))))))
    steps = max(1, int(steps))
    dev = torch.device(device)
    gen = torch.Generator().manual_seed(0)
    w1 = torch.randn(h, h, generator=gen).div_(math.sqrt(h)).to(dev).requires_grad_()
    w2 = torch.randn(h, h, generator=gen).div_(math.sqrt(h)).to(dev).requires_grad_()
    x = torch.randn(batch, h, generator=gen).to(dev)
    y = torch.randn(batch, h, generator=gen).to(dev)
    step_flops = 12.0 * batch * h * h

    def work(marker: StepMarker) -> int:
        done = 0
        t0 = time.perf_counter()
        for _ in range(steps):
            marker.step()
            loss = ((torch.relu(x @ w1) @ w2 - y) ** 2).mean()
            g1, g2 = torch.autograd.grad(loss, (w1, w2))
            with torch.no_grad():
                w1.sub_(1e-3 * g1)
                w2.sub_(1e-3 * g2)
            done += 1
            if time.perf_counter() - t0 > max_seconds:
                break
        marker.finish()
        return done

    done, stats = profile_call(work, device=device, flops=0.0)
    stats.flops = step_flops * done
    out = stats.to_dict()
    out["model"] = {"kind": "mlp", "batch": batch, "hidden": h, "steps": done,
                    "flops_per_step": step_flops}
    return out
