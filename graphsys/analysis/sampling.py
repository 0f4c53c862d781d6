"""Which steps of a long run the profiler records: :class:`StepSchedule`.

:class:`StepSchedule` is ``torch.profiler.schedule``'s cycle (``wait`` steps the profiler
is off, ``warmup`` steps it records and throws away, as ranges opened before a start are
missing from its first records, ``active`` steps it records) after a first stretch of
``first`` steps recorded in full (a short run is recorded whole, one-off costs as they
are), entered at its ``active`` steps (every run longer than ``first`` has a sample).
:func:`graphsys.analysis.kernels.profile_call` follows it: the profiler stops before a
``wait`` step, the records of the stretch it recorded are read, added into running totals
and dropped, and it starts again at the next ``warmup`` step. What runs outside the steps
(set-up, evaluation, checkpoints, the finish) is always recorded.

The times and counts of the steps after the first stretch then come from their recorded
``active`` steps, scaled: seconds by the measured wall time of those steps over that of
the recorded ones, counts by their number over the number recorded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from graphsys.errors import check_count

__all__ = ["DEFAULT_SCHEDULE", "StepSchedule"]

ACTIVE, WARMUP, WAIT = "active", "warmup", "wait"


@dataclass(frozen=True)
class StepSchedule:
    """Which steps are recorded: the first ``first`` steps, then cycles of ``wait`` steps
    not recorded, ``warmup`` steps recorded and discarded and ``active`` steps recorded
    (``torch.profiler.schedule``'s ``wait``, ``warmup``, ``active``, ``repeat``), the
    first cycle entered at its ``active`` steps; ``repeat`` cycles (0: until the run
    ends), after which no more steps are recorded.

    Examples
    --------
    >>> from graphsys.analysis.sampling import StepSchedule
    >>> s = StepSchedule(first=2, wait=2, warmup=1, active=1)
    >>> [s.action(k) for k in range(9)]
    ['active', 'active', 'active', 'wait', 'wait', 'warmup', 'active', 'wait', 'wait']
    """

    first: int = 10
    wait: int = 36
    warmup: int = 1
    active: int = 3
    repeat: int = 0

    def __post_init__(self) -> None:
        for name in ("first", "wait", "warmup", "active", "repeat"):
            check_count(name, getattr(self, name), minimum=int(name == "active"))

    def action(self, step: int) -> str:
        """``"active"``, ``"warmup"`` or ``"wait"`` for step ``step`` (from 0)."""
        if step < self.first:
            return ACTIVE
        cycle = self.wait + self.warmup + self.active
        k, r = divmod(step - self.first + self.wait + self.warmup, cycle)
        if self.repeat and k >= self.repeat:
            return WAIT
        return WAIT if r < self.wait else WARMUP if r < self.wait + self.warmup else ACTIVE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The schedule of the GNN profile: the first 10 steps, then 3 of every 40 (the next 3,
#: 36 not, 1 warm-up, 3, ...).
DEFAULT_SCHEDULE = StepSchedule()
