"""The step schedule of a sampled profile, against torch.profiler.schedule; a sampled
profile against the same run recorded whole."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerAction, schedule

from graphsys.analysis.kernels import profile_call
from graphsys.analysis.sampling import StepSchedule
from graphsys.errors import ParameterError

TORCH = {ProfilerAction.NONE: "wait", ProfilerAction.WARMUP: "warmup",
         ProfilerAction.RECORD: "active", ProfilerAction.RECORD_AND_SAVE: "active"}


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
@pytest.mark.parametrize("first,wait,warmup,active,repeat", [
    (0, 2, 1, 3, 0), (0, 0, 0, 1, 0), (4, 3, 1, 2, 0), (5, 2, 2, 1, 2), (0, 5, 0, 2, 3)])
def test_schedule_is_torch_profiler_schedule_after_the_first_steps(first, wait, warmup,
                                                                   active, repeat):
    ours = StepSchedule(first=first, wait=wait, warmup=warmup, active=active, repeat=repeat)
    ref = schedule(wait=wait, warmup=warmup, active=active, repeat=repeat)
    got = [ours.action(k) for k in range(first + 60)]
    assert got[:first] == ["active"] * first
    # torch's cycle, entered at its active steps
    assert got[first:] == [TORCH[ref(k)] for k in range(wait + warmup, wait + warmup + 60)]


@pytest.mark.parametrize("kw", [{"active": 0}, {"wait": -1}, {"first": 1.5}, {"active": True},
                                {"repeat": True}])
def test_schedule_refuses_bad_values(kw):
    """True was read as 1 (a bool is an int)."""
    name, = kw
    with pytest.raises(ParameterError, match=f"^{name} must be a (positive|non-neg)"):
        StepSchedule(**kw)
    assert StepSchedule(first=np.int64(2)).first == 2  # NumPy's integers were refused


def _steps(n: int):
    a, b = torch.ones(64), torch.ones(64)

    def work(marker):
        for _ in range(n):
            marker.step()
            c = a * b  # three top-level operators per step
            c.add_(1.0)
            c.to(torch.float64)
        marker.finish()
        return float(c.sum())  # sum + item after the steps
    return work


def test_sampled_profile_counts_the_recorded_steps_and_scales_to_every_step():
    n = 40
    sch = StepSchedule(first=3, wait=4, warmup=1, active=2)
    _, whole = profile_call(_steps(n))
    _, sampled = profile_call(_steps(n), schedule=sch)
    recorded = [k for k in range(n) if sch.action(k) == "active"]
    later = [k for k in recorded if k >= 3]
    w, s = whole.to_dict()["kernels"], sampled.to_dict()["kernels"]
    assert w["per_step"] == [3] * n and "sampling" not in w
    assert s["per_step"] == [3] * len(recorded)
    assert s["sampling"]["recorded"] == recorded
    assert s["sampling"]["steps"] == s["steps"] == n
    assert s["sampling"]["recorded_steps"] == len(recorded)
    assert s["sampling"]["first_steps"] == 3 and s["sampling"]["later_steps"] == n - 3
    assert s["sampling"]["count_scale"] == pytest.approx((n - 3) / len(later))
    # every step makes the same calls: the scaled count is the whole count
    assert s["invocations"] == w["invocations"] == 3 * n + 2
    assert s["finish"] == w["finish"] == 2
    assert s["mean_per_step"] == 3
    top = {t["name"]: t["count"] for t in s["top"]}
    assert top["aten::mul"] == n and top["aten::sum"] == 1
    # fewer records read than the whole run's, the profiler stopped once per cycle
    assert sampled.timing["events"] < whole.timing["events"]
    assert s["sampling"]["cycles"] >= (n - 5) // 7
    # the recorded steps' parts are scaled to the wall time of the steps they stand for
    sm = s["sampling"]
    assert sm["time_scale"] == pytest.approx(sm["later_seconds"] / sm["recorded_later_seconds"])
    assert sampled.timing["parts"]["operator aten::mul (torch)"]["count"] == n


def test_a_schedule_that_records_every_step_is_the_whole_profile():
    _, whole = profile_call(_steps(6))
    _, same = profile_call(_steps(6), schedule=StepSchedule(first=10))
    assert same.to_dict()["kernels"]["per_step"] == whole.to_dict()["kernels"]["per_step"]
    assert same.invocations == whole.invocations and "sampling" not in same.extra
    assert same.timing["events"] == whole.timing["events"]
