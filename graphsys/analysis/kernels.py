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
from bisect import bisect_right
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
from graphsys.analysis.sampling import ACTIVE, WAIT, StepSchedule
from graphsys.analysis.threads import ThreadSampler
from graphsys.analysis.timing import attribute
from graphsys.memory import lifetime_peak_rss
from graphsys.trace import (
    COMPILE,
    NUMBA_PREFIX,
    make_profiler,
    numba_ranges,
    quiet_stderr,
    ranges_on,
    write_trace,
)

STEP_PREFIX = "graphsys.step#"
RANGES = ("graphsys.setup", "graphsys.finish")
#: Transfer-size histogram bands, bytes: [lo, hi).
SIZE_BANDS = ((0, 1 << 10, "<1KiB"), (1 << 10, 64 << 10, "1KiB-64KiB"),
              (64 << 10, 1 << 20, "64KiB-1MiB"), (1 << 20, 16 << 20, "1MiB-16MiB"),
              (16 << 20, 1 << 62, ">=16MiB"))


def transfer(src: torch.Tensor, dst: torch.device) -> tuple[str, int]:
    """A copy of ``src`` to ``dst`` as a transfer record: (``h2d``, ``d2h`` or ``d2d``,
    bytes)."""
    kind = "h2d" if src.device.type == "cpu" else "d2h" if dst.type == "cpu" else "d2d"
    return kind, int(src.numel() * src.element_size())


class TransferCounter(TorchDispatchMode):
    """Records every cross-device copy: ``records`` = list of (kind, bytes), kind ``h2d``,
    ``d2h`` or ``d2d``; ``syncs`` counts scalar reads (``.item()``)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, int]] = []
        self.syncs = 0

    def _note(self, src: torch.Tensor, dst_device: torch.device) -> None:
        if src.device != dst_device:
            self.records.append(transfer(src, dst_device))

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
    the last range. Call all of them on the profiled thread. With ``cycles`` (a
    :class:`_Cycles`), every step and finish first lets it stop or start the profiler as
    its schedule says."""

    def __init__(self, cycles: _Cycles | None = None) -> None:
        self._rf = None
        self.steps = 0
        self._cycles = cycles

    def _enter(self, name: str) -> None:
        self.close()
        self._rf = record_function(name)
        self._rf.__enter__()

    def start(self) -> None:
        self._enter("graphsys.setup")

    def step(self) -> None:
        k = self.steps
        self.steps += 1
        if self._cycles is not None:
            self.close()
            self._cycles.segment(k)
        self._enter(f"{STEP_PREFIX}{k}")

    def finish(self) -> None:
        if self._cycles is not None:
            self.close()
            self._cycles.segment(None)
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
    #: every step of the run (``per_step`` holds the recorded ones: all, unless a
    #: :class:`~graphsys.analysis.sampling.StepSchedule` left some out)
    total_steps: int | None = None
    #: perf_counter stamps of the profiled section and its parts
    #: (:func:`graphsys.analysis.timing.attribute`); not part of :meth:`to_dict`
    timing: dict[str, Any] = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        """Every step of the run, recorded or not."""
        return len(self.per_step) if self.total_steps is None else self.total_steps

    def to_dict(self) -> dict[str, Any]:
        recorded = len(self.per_step)
        steps = self.num_steps
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
                "mean_per_step": (sum(self.per_step) / recorded) if recorded else None,
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


def _called_directly(e, wrappers: frozenset = _SCALAR_WRAPPERS) -> bool:
    """Whether event ``e`` was called by the workload itself, not from inside another
    operator (``wrappers`` aside): what a dispatch mode sees, as the calls nested in an
    operator run below it."""
    p = e.cpu_parent
    while p is not None:
        if _is_op(p.name) and p.name not in wrappers:
            return False
        p = p.cpu_parent
    return True


def _analyse(events, device: str) -> tuple[Counter, Counter, dict[str, float], float,
                                          float, int, int]:
    """Charge invocations to ranges: an operator or numba kernel to the range it started in,
    a CUDA kernel to the range its operator was launched in (``Event.launch``; the device
    may run it after that range has ended). The ranges are the host's (CPU records; a
    device's copy of an annotation spans when its kernels ran). Returns (per-range counts,
    calls and seconds per operator name, op seconds, memcpy seconds, runtime syncs, scalar
    reads (``aten::_local_scalar_dense`` events))."""
    cpu = torch.autograd.DeviceType.CPU
    ranges = sorted(((e.time_range.start, e.time_range.end, e.name) for e in events
                     if (e.name.startswith(STEP_PREFIX) or e.name in RANGES)
                     and e.device_type == cpu),
                    key=lambda r: r[0])
    starts = np.asarray([r[0] for r in ranges], np.float64)
    counts: Counter[str] = Counter()
    per_name: Counter[str] = Counter()
    secs: dict[str, float] = {}
    op_seconds = memcpy_seconds = 0.0
    runtime_syncs = scalar_reads = numba_calls = 0
    cuda = device.startswith("cuda")

    def charge(start: float) -> str:
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
        dur = e.time_range.elapsed_us() / 1e6
        if cuda:
            if (e.device_type != torch.autograd.DeviceType.CUDA
                    or name.startswith(STEP_PREFIX) or name in RANGES):
                continue  # a host record, or the device's copy of a range: not a kernel
            if name.startswith(("Memcpy", "Memset")):
                memcpy_seconds += dur
                continue
        elif name.startswith(NUMBA_PREFIX) and name != COMPILE:
            numba_calls += 1
        elif not _is_op(name) or not _called_directly(e, frozenset()):
            continue
        counts[charge(e.launch)] += 1  # the step that launched it (a host record: its start)
        per_name[name] += 1
        secs[name] = secs.get(name, 0.0) + dur
        op_seconds += dur
    counts["numba calls"] = numba_calls
    return counts, per_name, secs, op_seconds, memcpy_seconds, runtime_syncs, scalar_reads


def _top(per_name: Counter, secs: dict[str, float]) -> list[tuple[str, int, float]]:
    """The 12 operators (and numba kernels) of most seconds: (name, calls, seconds)."""
    return [(n, per_name[n], secs[n]) for n in sorted(secs, key=lambda n: (-secs[n], n))[:12]]


#: Classes of the profiled section's parts: recorded whole and counted as they are (what
#: runs outside the steps, and the schedule's first steps), and the steps recorded in its
#: cycles (scaled to every step after the first ones).
FIXED, STEPS = "fixed", "steps"


class _Cycles:
    """The profiler of one profiled run, stopped and started again as a
    :class:`~graphsys.analysis.sampling.StepSchedule` says (the steps it does not record),
    each stretch of records handed to ``harvest`` when it stops; and, from the step marks,
    the number and wall time of the steps after the schedule's first ones (``later``) and
    of those of them recorded (``recorded``)."""

    def __init__(self, device: str, schedule: StepSchedule | None,
                 harvest: Callable[[Any], None]) -> None:
        self.device, self.schedule, self.harvest = device, schedule, harvest
        self.prof = None
        self.steps = self.later = self.recorded = 0
        self.later_seconds = self.recorded_seconds = self.cycle_seconds = 0.0
        self.cycles = 0
        self._seg: tuple[str | None, float] | None = None  # (action, start)

    def start(self) -> None:
        self.prof = make_profiler(self.device, all_threads=False)
        with quiet_stderr():
            self.prof.__enter__()

    def stop(self):
        prof, self.prof = self.prof, None
        with quiet_stderr():
            prof.__exit__(None, None, None)
        return prof

    def segment(self, step: int | None) -> None:
        """A step mark (``step``: its number) or the finish (None): closes the segment
        before it and stops or starts the profiler for the one it opens."""
        t = time.perf_counter()
        self.end_segment(t)
        action = ACTIVE if step is None or self.schedule is None else self.schedule.action(
            step)
        if action == WAIT and self.prof is not None:
            prof = self.stop()
            self.harvest(prof)
            del prof
            self.cycles += 1
        elif action != WAIT and self.prof is None:
            self.start()
        t2 = time.perf_counter()
        self.cycle_seconds += t2 - t
        first = step is not None and (self.schedule is None or step < self.schedule.first)
        self._seg = (None if step is None else "first" if first else action, t2)

    def end_segment(self, t: float) -> None:
        if self._seg is not None and self._seg[0] is not None:
            action, t0 = self._seg
            self.steps += 1
            if action != "first":
                self.later += 1
                self.later_seconds += t - t0
            if action == ACTIVE:
                self.recorded += 1
                self.recorded_seconds += t - t0
        self._seg = None


def _merge_parts(dst: dict[str, dict[str, Any]], src: dict[str, dict[str, Any]],
                 seconds: float = 1.0, count: float = 1.0) -> None:
    """Add time parts ``src`` into ``dst``, seconds times ``seconds`` and counts times
    ``count`` (compilations, once each, as they are)."""
    for label, p in src.items():
        d = dst.setdefault(label, {"seconds": 0.0, "count": 0, "kind": p["kind"]})
        once = p["kind"] == "jit"
        d["seconds"] += p["seconds"] * (1.0 if once else seconds)
        d["count"] += p["count"] if once or count == 1.0 else round(p["count"] * count)


class _Totals:
    """Running totals of the profiler's records, one stretch at a time (:meth:`add`):
    invocations per range, operator calls and seconds, the self-time table, the time
    parts and phases of the profiled thread, and the named ranges for the timeline; each
    split into what is counted as recorded (:data:`FIXED`: outside the steps, and the
    schedule's first steps) and the steps recorded in its cycles (:data:`STEPS`; a warm-up
    step's records are dropped)."""

    def __init__(self, device: str, schedule: StepSchedule | None) -> None:
        self.device, self.cuda = str(device), str(device).startswith("cuda")
        self.schedule = schedule
        self.base: int | None = None
        self.main: int | None = None
        self.events = 0
        self.spans: list[tuple[str, float, float]] = []
        self.acc = {c: {"counts": Counter(), "per_name": Counter(), "secs": {},
                        "op": 0.0, "mem": 0.0, "syncs": 0, "reads": 0, "self": {},
                        "parts": {}, "phases": {}} for c in (FIXED, STEPS)}

    def _class(self, name: str) -> str | None:
        if not name.startswith(STEP_PREFIX) or self.schedule is None:
            return FIXED
        k = int(name[len(STEP_PREFIX):])
        if k < self.schedule.first:
            return FIXED
        return STEPS if self.schedule.action(k) == ACTIVE else None

    def add(self, prof) -> None:
        """Read one stopped profiler's records into the totals (then they can go)."""
        results = getattr(prof, "kineto_results", None) or prof.profiler.kineto_results
        if self.base is None:
            self.base = results.trace_start_ns()
        # hundreds of thousands of small objects, none of them in a cycle: the collector's
        # passes over them would take longer than building them
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._add(raw_events(prof, cuda=self.cuda, base_ns=self.base))
        finally:
            if collecting:
                gc.enable()

    def _add(self, events: list) -> None:
        self.events += len(events)
        cpu = torch.autograd.DeviceType.CPU  # the host's ranges, not a device's copy
        marks = [e for e in events if (e.name.startswith(STEP_PREFIX) or e.name in RANGES)
                 and e.device_type == cpu]
        if self.main is None and marks:
            self.main = marks[0].thread
        starts = [m.start for m in marks]
        classes = [self._class(m.name) for m in marks]

        def cls(t: float) -> str | None:
            k = bisect_right(starts, t) - 1
            return classes[k] if k >= 0 and t <= marks[k].end else FIXED

        by: dict[str, list] = {FIXED: [], STEPS: []}
        for e in events:
            c = cls(e.launch)  # a kernel: the step that launched it, not where it ran
            if c is not None:
                by[c].append(e)
        segments = [(m.start / 1e6, m.end / 1e6, c) for m, c in zip(marks, classes)
                    if m.thread == self.main]
        for key, phases in (("parts", False), ("phases", True)):
            split = attribute(events, thread=self.main, cuda=self.cuda, phases=phases,
                              segments=segments, outside=FIXED)
            for c in (FIXED, STEPS):
                _merge_parts(self.acc[c][key], split.get(c, {}))
        keep = (lambda name: True) if self.cuda else _is_op
        for c, evs in by.items():
            a = self.acc[c]
            counts, per_name, secs, op_s, mem_s, syncs, reads = _analyse(evs, self.device)
            a["counts"].update(counts)
            a["per_name"].update(per_name)
            for n, v in secs.items():
                a["secs"][n] = a["secs"].get(n, 0.0) + v
            a["op"] += op_s
            a["mem"] += mem_s
            a["syncs"] += syncs
            a["reads"] += reads
            for n, row in self_time_table(evs, keep, cuda=self.cuda).items():
                r = a["self"].setdefault(n, [0, 0.0, 0.0])
                for i in range(3):
                    r[i] += row[i]
        room = MAX_RANGES - len(self.spans)
        if room > 0:
            self.spans += _range_spans(events)[:room]


def profile_call(fn: Callable[[StepMarker], Any], *, device: str = "cpu",
                 flops: float = 0.0, count_transfers: bool = True,
                 trace: str | Path | None = None,
                 schedule: StepSchedule | None = None) -> tuple[Any, KernelStats]:
    """Run ``fn(marker)`` under the profiler and the transfer counter; ``fn`` calls
    ``marker.step()`` at the start of every step (and may call ``marker.finish()``).
    Returns ``(fn's result, KernelStats)``; ``flops`` is the workload's estimated floating-point
    operations (for work per invocation).

    ``count_transfers=False`` leaves the transfer counter out, for a workload whose tensors
    all live on the CPU (nothing to copy across devices): Python dispatch of every operator
    costs that run time and memory. Scalar reads are then counted from the profiler's
    ``aten::_local_scalar_dense`` events called by the workload itself (the ones the
    counter sees; those nested in other operators are not counted either way).

    ``schedule``: record only the steps it says (:mod:`graphsys.analysis.sampling`; default
    every step). The profiler then stops before a step left out, its records so far are
    added into running totals and dropped, and it starts again for the next recorded step;
    what runs outside the steps, and the schedule's first steps, are always recorded and
    counted as they are. The steps after the first ones are estimated from those of them
    recorded: seconds scaled by the wall time of all of them over theirs, counts by their
    number over the number recorded (``extra["sampling"]``; compilations are counted once,
    as they are); ``per_step`` holds the recorded steps' invocations.

    ``trace``: also write the profiler's Chrome trace there (:mod:`graphsys.trace`: the
    engines' named ranges are on during the run; only the calling thread is recorded, as
    counted); every step is then recorded. The other threads are sampled meanwhile
    (:class:`graphsys.analysis.threads.ThreadSampler`: CPU time and what each spent it
    on)."""
    cuda = str(device).startswith("cuda")
    if trace is not None:
        schedule = None  # one profiler over the whole run: its trace is the file
    totals = _Totals(str(device), schedule)
    cycles = _Cycles(str(device), schedule, totals.add)
    marker = StepMarker(cycles if schedule is not None else None)
    counter = TransferCounter() if count_transfers else None
    t_start = time.perf_counter()
    cycles.start()
    try:
        with ranges_on(), numba_ranges(), ThreadSampler() as threads:
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
            cycles.end_segment(t1)
    finally:
        prof = cycles.stop() if cycles.prof is not None else None
    t_stopped = time.perf_counter()
    peak_run = lifetime_peak_rss()
    if trace is not None:
        write_trace(prof, trace)
    if prof is not None:
        totals.add(prof)
        del prof  # the records are read: the profiler's own copy can go
    stats = _stats(totals, cycles, marker, counter, str(device), flops)
    stats.seconds = t1 - t0 - cycles.cycle_seconds
    stats.timing = {"start": t_start, "window_start": t0, "window_end": t1,
                    "stopped": t_stopped, "parts": stats.extra.pop("_parts"),
                    "phases": stats.extra.pop("_phases"),
                    "threads": threads.result(), "events": totals.events,
                    "peak_rss_run": peak_run, "cycle_seconds": cycles.cycle_seconds,
                    "analysis_seconds": time.perf_counter() - t_stopped}
    return out, stats


def _stats(totals: _Totals, cycles: _Cycles, marker: StepMarker,
           counter: TransferCounter | None, device: str, flops: float) -> KernelStats:
    """The totals of a profiled run as :class:`KernelStats`: what ran outside the steps as
    recorded, the recorded steps scaled to every step (see :func:`profile_call`)."""
    fx, st = totals.acc[FIXED], totals.acc[STEPS]
    sampled = cycles.recorded < cycles.later
    if not sampled:
        tscale = cscale = 1.0
    elif cycles.recorded:
        tscale = cycles.later_seconds / max(cycles.recorded_seconds, 1e-12)
        cscale = cycles.later / cycles.recorded
    else:  # no step recorded: nothing to scale
        tscale = cscale = 0.0
    recorded = [k for k in range(marker.steps)
                if totals._class(f"{STEP_PREFIX}{k}") is not None]
    per_step = [fx["counts"].get(f"{STEP_PREFIX}{k}", 0)
                + st["counts"].get(f"{STEP_PREFIX}{k}", 0) for k in recorded]
    numba_calls = fx["counts"].pop("numba calls", 0) + round(
        st["counts"].pop("numba calls", 0) * cscale)
    total = sum(fx["counts"].values()) + round(sum(st["counts"].values()) * cscale)
    per_name = Counter(fx["per_name"])
    secs = dict(fx["secs"])
    for n, c in st["per_name"].items():
        per_name[n] += round(c * cscale)
        secs[n] = secs.get(n, 0.0) + st["secs"].get(n, 0.0) * tscale
    self_time = {n: list(r) for n, r in fx["self"].items()}
    for n, r in st["self"].items():
        d = self_time.setdefault(n, [0, 0.0, 0.0])
        d[0] += round(r[0] * cscale)
        d[1] += r[1] * tscale
        d[2] += r[2] * tscale
    parts, phases = {}, {}
    for key, dst in (("parts", parts), ("phases", phases)):
        _merge_parts(dst, fx[key])
        _merge_parts(dst, st[key], tscale, cscale)
    reads = fx["reads"] + round(st["reads"] * cscale)
    first = cycles.steps - cycles.later
    stats = KernelStats(device=device, seconds=0.0, invocations=total, per_step=per_step,
                        setup_invocations=fx["counts"].get("graphsys.setup", 0),
                        finish_invocations=fx["counts"].get("graphsys.finish", 0)
                        + fx["counts"].get("outside", 0),
                        op_seconds=fx["op"] + st["op"] * tscale, top_ops=_top(per_name, secs),
                        transfers=counter.records if counter else [],
                        transfer_seconds=fx["mem"] + st["mem"] * tscale,
                        syncs=(counter.syncs if counter else reads) + fx["syncs"]
                        + round(st["syncs"] * cscale), flops=flops,
                        transfers_counted=counter is not None, total_steps=marker.steps)
    spans = sorted(totals.spans, key=lambda s: s[1])
    t0 = spans[0][1] if spans else 0.0
    stats.extra.update({
        "self_time": _self_rows(self_time),
        "ranges": [[n, (s - t0) / 1e6, d / 1e6] for n, s, d in spans],
        "numba_calls": numba_calls, "torch_operators": total - numba_calls,
        "_parts": parts, "_phases": phases})
    if sampled:
        stats.extra["sampling"] = {
            "steps": cycles.steps, "recorded_steps": len(recorded), "first_steps": first,
            "recorded": recorded[:1000], "later_steps": cycles.later,
            "later_seconds": cycles.later_seconds,
            "recorded_later_steps": cycles.recorded,
            "recorded_later_seconds": cycles.recorded_seconds, "time_scale": tscale,
            "count_scale": cscale, "schedule": totals.schedule.to_dict(),
            "cycles": cycles.cycles,
            "note": (f"steps sampled: {len(recorded)} of {cycles.steps} recorded (the first "
                     f"{first}, then {cycles.recorded} of the other {cycles.later}, whose "
                     f"operator times and counts are scaled to all {cycles.later} by wall "
                     f"time, {tscale:.3g}x, and by count, {cscale:.3g}x)")}
    return stats


#: Rows of the self-time operator table and most ranges kept for the timeline.
SELF_TIME_ROWS = 15
MAX_RANGES = 4000


def _self_rows(table: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Operators (CUDA kernels on CUDA) by measured self time, most first: ``name``,
    ``count``, ``self_seconds``, ``total_seconds`` (as torch.profiler's key averages,
    :func:`graphsys.analysis.events.self_time_table`)."""
    rows = [{"name": n, "count": int(c), "self_seconds": s / 1e6, "total_seconds": t / 1e6}
            for n, (c, s, t) in table.items() if s > 0]
    rows.sort(key=lambda r: (-r["self_seconds"], r["name"]))
    return rows[:SELF_TIME_ROWS]


def _range_spans(events) -> list[tuple[str, float, float]]:
    """The named ranges (graphsys.* steps and the engines' :mod:`graphsys.trace` ranges)
    as ``(name, start_us, duration_us)``, in start order."""
    return sorted(((e.name, e.time_range.start, e.time_range.elapsed_us()) for e in events
                   if "::" not in e.name and "." in e.name
                   and not e.name.startswith(("cuda", "Memcpy", "Memset"))),
                  key=lambda s: s[1])


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
            g1, g2 = torch.autograd.grad(((torch.relu(x @ w1) @ w2 - y) ** 2).mean(), (w1, w2))
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
