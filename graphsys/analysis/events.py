"""The profiler's events, read cheaply: :func:`raw_events` turns a stopped
``torch.profiler.profile``'s raw (kineto) records into light :class:`Event` objects with the
nesting the analysis needs (``cpu_parent``), and :func:`self_time_table` sums them by name.

``prof.events()`` and ``prof.key_averages()`` build a Python ``FunctionEvent`` per record,
each with its children, stack and memory fields: on a GNN epoch of a few hundred thousand
operator records that took longer than the training itself and held gigabytes. The records
themselves are C++ objects; reading the five fields the analysis uses (name, thread, device,
start, duration) and building the tree the way torch does (per thread, start order, a stack
of open intervals; an interval only partly inside another is not its child) costs a small
fraction of that, in time and memory.

The events are the ones ``prof.events()`` gives (the same name filter, hidden events left
out), sorted by start (an enclosing event before the ones it contains), times in
microseconds from the trace's start.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Event", "raw_events", "self_time_table"]

#: Records ``prof.events()`` leaves out (torch.autograd.profiler_util._filter_name).
FILTERED = frozenset({"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
                      "profiler::_record_function_enter_new",
                      "profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr",
                      "aten::_version"})


class Event:
    """One profiler record: ``name``, ``thread`` (the thread it started on),
    ``device_type``, ``start`` and ``end`` (microseconds), ``cpu_parent`` (the innermost
    CPU event of the same thread that contains it, or None) and ``child_us`` (the
    durations of its direct CPU children). ``time_range`` is the event itself
    (``.start``, ``.end``, ``.elapsed_us()``), as on a ``FunctionEvent``."""

    __slots__ = ("child_us", "cpu_parent", "device_type", "end", "name", "start", "thread")

    def __init__(self, name: str, thread: int, device_type: Any, start: float,
                 end: float) -> None:
        self.name = name
        self.thread = thread
        self.device_type = device_type
        self.start = start
        self.end = end
        self.cpu_parent: Event | None = None
        self.child_us = 0.0

    @property
    def time_range(self) -> Event:
        return self

    def elapsed_us(self) -> float:
        return self.end - self.start


def raw_events(prof, *, cuda: bool = False) -> list[Event]:
    """The events of a stopped ``torch.autograd.profiler.profile`` (or of the
    ``torch.profiler.profile`` around one; see the module docstring), read from its kineto
    results without building ``FunctionEvent`` objects. ``cuda``: the profile recorded CUDA
    activity too (device, async and hidden records are then told apart; a CPU-only profile
    has none of them, and four reads per record instead of seven cost a third less)."""
    import torch

    cpu = torch.autograd.DeviceType.CPU
    results = getattr(prof, "kineto_results", None) or prof.profiler.kineto_results
    base = results.trace_start_ns()
    out: list[Event] = []
    append = out.append
    for k in results.events():
        name = k.name()
        if name in FILTERED:
            continue
        start = (k.start_ns() - base) / 1000.0
        end = start + k.duration_ns() / 1000.0
        if not cuda:
            append(Event(name, k.start_thread_id(), cpu, start, end))
            continue
        if k.is_hidden_event():
            continue
        ev = Event(name, k.start_thread_id(), k.device_type(), start, end)
        if ev.device_type == cpu and k.is_async():
            ev.device_type = None  # async: no nesting (as torch), never a CPU span
        append(ev)
    out.sort(key=lambda e: (e.start, -e.end))
    stacks: dict[int, list[Event]] = {}
    for ev in out:
        if ev.device_type != cpu:
            continue
        stack = stacks.setdefault(ev.thread, [])
        while stack:
            parent = stack[-1]
            if ev.start >= parent.end or ev.end > parent.end:
                stack.pop()
            else:
                ev.cpu_parent = parent
                parent.child_us += ev.end - ev.start
                break
        stack.append(ev)
    return out


def self_time_table(events: list[Event], keep, *, cuda: bool = False
                    ) -> dict[str, list[float]]:
    """Per event name ``[count, self_us, total_us]`` over the events ``keep(name)`` accepts:
    on the CPU, self time is the duration less the direct CPU children's (torch's
    ``self_cpu_time_total``); with ``cuda``, the CUDA device events (kernels) alone, whose
    self time is their duration. An operator nested in one of its own name (a dispatch
    re-entry) adds its self time and no call, as torch's tables merge the two."""
    import torch

    want = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU
    table: dict[str, list[float]] = {}
    for e in events:
        if e.device_type != want or not keep(e.name):
            continue
        dur = e.end - e.start
        row = table.get(e.name)
        if row is None:
            row = table[e.name] = [0, 0.0, 0.0]
        # an operator re-entered under its own name (aten::sum in aten::sum) is one call,
        # as torch merges it
        row[0] += 0 if e.cpu_parent is not None and e.cpu_parent.name == e.name else 1
        row[1] += dur if cuda else dur - e.child_us
        row[2] += dur
    return table
