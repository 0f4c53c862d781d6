"""The profiler's events, read cheaply: :func:`raw_events` turns a stopped
``torch.profiler.profile``'s raw (kineto) records into light :class:`Event` objects with the
nesting the analysis needs (``cpu_parent``), and :func:`self_time_table` sums them by name.

Unlike ``prof.events()`` (a Python ``FunctionEvent`` per record, with children, stack and
memory fields), only the five fields the analysis uses (name, thread, device, start,
duration) are read, and the tree is built the way torch does (per thread, start order, a
stack of open intervals; an interval only partly inside another is not its child).

The events are the ones ``prof.events()`` gives (the same name filter, hidden events left
out), sorted by start (an enclosing event before the ones it contains), times in
microseconds from the trace's start.

A CUDA kernel (or copy) runs when the device gets to it, which can be after the step that
launched it has ended on the host; charged by its own start, a kernel would move between
steps with the device's queue. Each device record therefore also carries ``launch``: the
start of the CPU operator that launched it (kineto's ``linked_correlation_id``, as torch
ties kernels to operators), or its own start where it names none (a kernel launched outside
a torch operator).
"""

from __future__ import annotations

from operator import itemgetter

__all__ = ["Event", "raw_events", "self_time_table"]

#: Records ``prof.events()`` leaves out (torch.autograd.profiler_util._filter_name).
FILTERED = frozenset({"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
                      "profiler::_record_function_enter_new",
                      "profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr",
                      "aten::_version"})


_NAME, _THREAD, _DEVICE, _START, _END, _PARENT, _CHILD_US, _LAUNCH = range(8)


class Event(list):
    """One profiler record: ``name``, ``thread`` (the thread it started on),
    ``device_type``, ``start`` and ``end`` (microseconds), ``cpu_parent`` (the innermost
    CPU event of the same thread that contains it, or None) and ``child_us`` (the
    durations of its direct CPU children), ``launch`` (microseconds: when the CPU operator
    that launched a device record started; ``start`` for every other record).
    ``time_range`` is the event itself (``.start``, ``.end``, ``.elapsed_us()``), as on a
    ``FunctionEvent``.

    A list underneath (``Event((name, thread, device_type, start, end, None, 0.0,
    start))``): made and read at C speed, hundreds of thousands of them per profile."""

    __slots__ = ()
    name = property(itemgetter(_NAME))
    thread = property(itemgetter(_THREAD))
    device_type = property(itemgetter(_DEVICE))
    start = property(itemgetter(_START))
    end = property(itemgetter(_END))
    cpu_parent = property(itemgetter(_PARENT))
    child_us = property(itemgetter(_CHILD_US))
    launch = property(itemgetter(_LAUNCH))

    @property
    def time_range(self) -> Event:
        return self

    def elapsed_us(self) -> float:
        return self[_END] - self[_START]

    __hash__ = object.__hash__  # an event is itself, not its fields
    __eq__ = object.__eq__


def raw_events(prof, *, cuda: bool = False, base_ns: int | None = None) -> list[Event]:
    """The events of a stopped ``torch.autograd.profiler.profile`` (or of the
    ``torch.profiler.profile`` around one; see the module docstring), read from its kineto
    results without building ``FunctionEvent`` objects. ``cuda``: the profile recorded CUDA
    activity too (device, async and hidden records are then told apart; a CPU-only profile
    has none of them, and four reads per record instead of seven cost a third less).
    ``base_ns``: times from this instant of the profiler's clock (default: the trace's
    start), so that the records of several profilers of one process line up."""
    import torch

    cpu = torch.autograd.DeviceType.CPU
    results = getattr(prof, "kineto_results", None) or prof.profiler.kineto_results
    base = results.trace_start_ns() if base_ns is None else base_ns
    out: list[Event] = []
    append = out.append
    launched_at: dict[int, float] = {}  # a CPU operator's correlation id -> its start
    linked: list[tuple[Event, int]] = []  # device records and the operator they name
    for k in results.events():
        name = k.name()
        if name in FILTERED:
            continue
        start = (k.start_ns() - base) / 1000.0
        end = start + k.duration_ns() / 1000.0
        if not cuda:
            append(Event((name, k.start_thread_id(), cpu, start, end, None, 0.0, start)))
            continue
        if k.is_hidden_event():
            continue
        device = k.device_type()
        if device == cpu:  # the one CPU member: the tree below tests identity
            device = None if k.is_async() else cpu  # async: no nesting (as torch)
        ev = Event((name, k.start_thread_id(), device, start, end, None, 0.0, start))
        append(ev)
        if device is cpu:
            launched_at[k.correlation_id()] = start
        elif device is not None:
            op = k.linked_correlation_id()
            if op > 0:
                linked.append((ev, op))
    for ev, op in linked:
        ev[_LAUNCH] = launched_at.get(op, ev[_START])
    # start order, an enclosing event before the ones it contains: by end descending,
    # then (stable) by start
    out.sort(key=itemgetter(_END), reverse=True)
    out.sort(key=itemgetter(_START))
    stacks: dict[int, list[Event]] = {}
    for ev in out:
        if ev[_DEVICE] is not cpu:
            continue
        stack = stacks.get(ev[_THREAD])
        if stack is None:
            stack = stacks[ev[_THREAD]] = []
        while stack:
            parent = stack[-1]
            if ev[_START] >= parent[_END] or ev[_END] > parent[_END]:
                stack.pop()
            else:
                ev[_PARENT] = parent
                parent[_CHILD_US] += ev[_END] - ev[_START]
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
