"""Where the wall time of a profiled run went: named parts that add up to it
(docs/architecture.md, "Every second attributed", lists the parts).

Before the profiled section the parts come from :func:`time.perf_counter` stamps (start-up
and imports, graph open, preparation, the profiler's start); inside it, from the
profiler's event tree of the profiling thread (:func:`attribute`): named ranges, numba
calls and compilations, top-level torch operators and copies between devices, each range's
part its *exclusive* time (its duration minus what is inside it); what no range covers is
``unattributed``. :func:`account` assembles the parts, their sum and its share of the wall
time.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_right
from typing import Any

from graphsys.trace import COMPILE, NUMBA_PREFIX, numba_ranges

__all__ = ["COMPILE", "NUMBA_PREFIX", "UNATTRIBUTED", "account", "attribute", "numba_ranges",
           "process_age", "process_start"]

#: Operators that copy between devices on a CUDA run (the transfer part).
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
#: What the exclusive time of a named range is, by range name (``#k`` suffix removed).
RANGE_PARTS = {
    "graphsys.setup": "setup: open edges, layout build, index mapping, program init "
                      "(Python/NumPy outside kernels)",
    "graphsys.step": "steps: Python between kernels and operators",
    "graphsys.finish": "finish: results gathered (outside kernels)",
    "bsp.superstep": "engine between kernels (Python, per step)",
    "bsp.edges": "edge phase outside kernels (Python/NumPy; out of core: waiting for the "
                 "bucket workers)",
    "bsp.bucket": "bucket stream (reads and kernels)",
    "embed.bucket": "embedding bucket outside batches (shuffle; waiting for workers)",
    "embed.minibatch": "embedding batch (Python outside operators)",
    "embed.load": "I/O wait: partition loads",
    "embed.write-back": "I/O wait: partition write-backs",
    "embed.bucket-read": "I/O wait: bucket reads",
    "embed.checkpoint": "checkpoints",
    "gnn.sample": "sampling",
    "gnn.wait": "waiting for the sampler threads",
    "gnn.load": "feature gather and copy to the device",
    "gnn.step": "training step (Python outside operators)",
    "gnn.evaluate": "evaluation",
    "gnn.eval": "evaluation",
    "gnn.checkpoint": "checkpoints",
    "gnn.data": "reading features, labels and splits",
    "gnn.adjacency": "adjacency build",
}
#: Range-name prefixes of graphsys's own ranges (the others are torch's: autograd nodes,
#: ``Optimizer.step``, ...).
ENGINE_PREFIXES = ("graphsys.", "bsp.", "embed.", "gnn.", NUMBA_PREFIX)
#: Phase names (``phases=True``: a range with the kernels and operators inside it).
PHASES = {"graphsys.setup": "setup (open edges, layout build, index mapping, program "
                            "init, trainer)",
          "graphsys.step": "steps", "graphsys.finish": "finish (results, after the steps)",
          "bsp.superstep": "supersteps", "bsp.edges": "edge phases",
          "bsp.bucket": "bucket streams",
          "embed.bucket": "embedding buckets", "embed.minibatch": "embedding batches",
          "embed.load": "I/O wait: partition loads",
          "embed.write-back": "I/O wait: partition write-backs",
          "embed.bucket-read": "I/O wait: bucket reads", "embed.checkpoint": "checkpoints",
          "gnn.sample": "sampling", "gnn.wait": "waiting for the sampler threads",
          "gnn.load": "feature gather and copy to the device", "gnn.step": "training steps",
          "gnn.evaluate": "evaluation", "gnn.eval": "evaluation",
          "gnn.checkpoint": "checkpoints",
          "gnn.data": "reading features, labels and splits", "gnn.adjacency": "adjacency build"}
UNATTRIBUTED = "unattributed (inside the profiled section, outside every range)"


def process_age() -> float | None:
    """Seconds since this process started (Linux: ``/proc/self/stat`` start time and
    ``/proc/uptime``, clock-tick resolution), or None where that cannot be read."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def process_start() -> float | None:
    """This process's start as a :func:`time.perf_counter` value, or None (see
    :func:`process_age`)."""
    age = process_age()
    return None if age is None else time.perf_counter() - age


def _is_op(name: str) -> bool:
    return "::" in name and not name.startswith(("autograd::", "profiler::",
                                                  "PythonDispatchMode"))


def _range_part(name: str) -> str:
    base = name.split("#")[0]
    if base == COMPILE:
        return "JIT compilation and cache loads (numba, first calls)"
    if base.startswith(NUMBA_PREFIX):
        return f"kernel {base[len(NUMBA_PREFIX):]} (numba)"
    return RANGE_PARTS.get(base, f"{base} (outside kernels)")


def attribute(events, *, thread: int | None = None, cuda: bool = False,
              phases: bool = False, segments=None, outside=None
              ) -> dict[str, dict[str, Any]]:
    """Exclusive seconds and counts per part from a profiler's events (``prof.events()``)
    of one thread (``thread``: its id; default every thread, for a one-thread profile).

    Every instant belongs to the innermost interval open then: the range, numba call or
    top-level torch operator started last and not yet ended (operators called inside an
    operator belong to it), so ranges that are not properly nested (a step marker opened
    inside one superstep and closed in the next) are still counted once.

    Returns ``{part: {"seconds", "count", "kind"}}``, ``kind`` one of ``kernel`` (numba
    calls), ``operator`` (torch operators), ``transfer``, ``jit`` or ``python``.

    ``phases``: only the named ranges and compilations count (the kernels, operators and
    transfers inside a range are its time): the run by phase (setup, steps, sampling,
    evaluation, checkpoints, I/O) rather than by kernel.

    ``segments``: ``[(start, end, key), ...]`` in seconds, sorted and not overlapping: the
    parts are then split by segment, ``{key: parts}`` (a span's time cut at the segment
    boundaries, its count in the segment it starts in; time outside every segment under
    ``outside``)."""
    import torch

    cpu = torch.autograd.DeviceType.CPU
    spans: list[tuple[float, float, str, str]] = []
    for e in events:
        if e.device_type != cpu or (thread is not None and e.thread != thread):
            continue
        name = e.name
        ours = name.startswith(ENGINE_PREFIXES)
        if phases and (_is_op(name) or "::" in name or not ours or (
                name.startswith(NUMBA_PREFIX) and not name.startswith(COMPILE))):
            continue
        if _is_op(name):
            p = e.cpu_parent
            while p is not None and not _is_op(p.name):
                p = p.cpu_parent
            if p is not None:
                continue  # inside another operator: part of it
            if cuda and name in COPY_OPS:
                label, kind = "host<->device transfers (torch copies)", "transfer"
            else:
                label, kind = f"operator {name} (torch)", "operator"
        elif "::" in name or not ours:
            label, kind = ("autograd, optimizer and library ranges (Python outside "
                           "operators)"), "python"
        else:
            base = name.split("#")[0]
            kind = ("jit" if base == COMPILE else "kernel" if base.startswith(NUMBA_PREFIX)
                    else "python")
            label = (PHASES.get(base, base) if phases and kind == "python"
                     else _range_part(name))
        spans.append((e.time_range.start / 1e6, e.time_range.end / 1e6, label, kind))
    segs = sorted(segments or [(float("-inf"), float("inf"), outside)])
    starts = [s[0] for s in segs]
    split: dict[Any, dict[str, dict[str, Any]]] = {}

    def part(key, label: str, kind: str) -> dict[str, Any]:
        parts = split.setdefault(key, {})
        p = parts.get(label)
        if p is None:
            p = parts[label] = {"seconds": 0.0, "count": 0, "kind": kind}
        return p

    for s, _, label, kind in spans:
        i = bisect_right(starts, s) - 1  # the segment holding s (outside where none does)
        p = part(segs[i][2] if i >= 0 and s < segs[i][1] else outside, label, kind)
        if kind != "python":
            p["count"] += 1
    # sweep: boundaries in time order (an end before a start at the same instant)
    # (a parent starting with its child comes first: the later end sorts first)
    marks = sorted([(s, 1, -t, i) for i, (s, t, _, _) in enumerate(spans)]
                   + [(t, 0, 0.0, i) for i, (_, t, _, _) in enumerate(spans)])
    stack: list[int] = []
    last = None
    for t, is_start, _, i in marks:
        if stack and last is not None and t > last:
            _, _, label, kind = spans[stack[-1]]
            if segments is None:
                part(outside, label, kind)["seconds"] += t - last
            else:
                for key, dt in _cut(last, t, segs, starts, outside):
                    part(key, label, kind)["seconds"] += dt
        last = t
        if is_start:
            stack.append(i)
        else:
            stack.remove(i)
    return split.get(outside, {}) if segments is None else split


def _cut(a: float, b: float, segs: list, starts: list[float], outside) -> list:
    """``[(key, seconds), ...]``: the interval ``[a, b)`` cut at the segment boundaries."""
    out = []
    i = max(bisect_right(starts, a) - 1, 0)
    t = a
    while t < b:
        if i < len(segs) and t >= segs[i][1]:
            i += 1
        elif i < len(segs) and segs[i][0] <= t:
            e = min(b, segs[i][1])
            out.append((segs[i][2], e - t))
            t, i = e, i + 1
        else:
            e = min(b, segs[i][0]) if i < len(segs) else b
            out.append((outside, e - t))
            t = e
    return out


def account(wall: float, before: list[tuple[str, float]], window: float,
            window_parts: dict[str, dict[str, Any]],
            window_phases: dict[str, dict[str, Any]], after: list[tuple[str, float]]
            ) -> dict[str, Any]:
    """The ``time`` section of a profile: ``wall_seconds`` of the run, its ``parts``
    (``name``, ``seconds``, ``count``, ``kind``, ``share``; largest first; the part of the
    profiled section no range covers is :data:`UNATTRIBUTED`) by kernel and operator,
    the same wall time by ``phases`` (:func:`attribute` with ``phases``),
    ``attributed_seconds`` and ``attributed_share`` (named parts over the wall time),
    ``by_kind`` (seconds per part kind) and ``profiler`` (the profiler's own work, not
    part of the run: ``after``)."""
    out: dict[str, Any] = {"wall_seconds": wall}
    for key, section in (("parts", window_parts), ("phases", window_phases)):
        rows = [{"name": n, "seconds": s, "count": 0, "kind": "python"} for n, s in before
                if s > 0]
        inside = sum(p["seconds"] for p in section.values())
        rows += [{"name": n, **p} for n, p in section.items()]
        rest = window - inside
        if rest > 0:
            rows.append({"name": UNATTRIBUTED, "seconds": rest, "count": 0, "kind": "none"})
        rows.sort(key=lambda r: -r["seconds"])
        for r in rows:
            r["share"] = r["seconds"] / wall if wall > 0 else None
        out[key] = rows
    named = sum(r["seconds"] for r in out["parts"] if r["name"] != UNATTRIBUTED)
    out.update({"attributed_seconds": named,
                "attributed_share": named / wall if wall > 0 else None,
                "by_kind": _by_kind(out["parts"]),
                "profiler": [{"name": n, "seconds": s} for n, s in after]})
    return out


def _by_kind(rows: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in rows:
        out[r["kind"]] = out.get(r["kind"], 0.0) + r["seconds"]
    return out
