"""graphsys.trace: ranges only while recording, the trace file, fd-level quiet stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from graphsys import trace
from graphsys.errors import GraphsysError


@trace.traced("unit.work")
def _work(x):
    return x + 1


def test_ranges_recorded_only_inside_recording(tmp_path):
    assert not trace.active()
    path = tmp_path / "t.json"
    with trace.recording(path):
        assert trace.active()
        _work(torch.ones(2))
        with trace.trace_range("unit.block"):
            torch.ones(3).sum()
    assert not trace.active()
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]
             if e.get("cat") == "user_annotation"]
    assert names.count("unit.work") == 1 and names.count("unit.block") == 1
    assert _work(1) == 2  # no profiler: the plain function


def test_worker_threads_are_recorded(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "t.json"
    with ThreadPoolExecutor(1) as ex:
        ex.submit(int).result()  # the thread exists before the profiler starts
        with trace.recording(path):
            ex.submit(_work, torch.ones(2)).result()
    events = [e for e in json.loads(path.read_text())["traceEvents"]
              if e.get("name") == "unit.work"]
    assert len(events) == 1 and events[0]["tid"] != os.getpid()


def test_trace_written_when_the_block_fails(tmp_path):
    path = tmp_path / "t.json"
    with pytest.raises(ValueError), trace.recording(path):
        _work(torch.ones(1))
        raise ValueError("boom")
    assert "traceEvents" in json.loads(path.read_text())


def test_only_rank_0_of_several_records(tmp_path, monkeypatch):
    """Under torchrun every rank of graphsys run/gnn train/embed train --trace T wrote T,
    the last rename winning (one rank's trace, which one by chance): rank 0 alone records
    now, the others start no profiler."""
    env = {"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "t.json"
    with trace.recording(path):
        assert not trace.active()
    assert not path.exists()
    monkeypatch.setenv("RANK", "0")
    with trace.recording(path):
        assert trace.active()
    assert "traceEvents" in json.loads(path.read_text())


def test_check_trace_path(tmp_path):
    assert trace.check_trace_path(tmp_path / "a.json") == tmp_path / "a.json"
    for bad, msg in ((tmp_path / "no" / "a.json", "does not exist"),
                     (tmp_path / "a.html", "FILE.json")):
        with pytest.raises(GraphsysError, match=msg):
            trace.check_trace_path(bad)
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(GraphsysError, match="not writable"):
            trace.check_trace_path(ro / "a.json")


def test_profiler_start_stop_lines_are_silenced(tmp_path):
    """The profiler's C++ side prints USDT lines on fd 2; they stay off stderr."""
    code = ("import torch\nfrom graphsys import trace\n"
            f"with trace.recording({str(tmp_path / 't.json')!r}):\n    torch.ones(2) + 1\n"
            "import sys\nprint('after', file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert "USDT" not in res.stderr and "after" in res.stderr


def test_numba_calls_are_ranges_while_recording(tmp_path):
    """Every call of a numba-compiled function (and its first compilation) is a named
    range of the trace; outside the recording the dispatcher is left as it was."""
    import json

    import numba
    import numpy as np
    from numba.core.dispatcher import Dispatcher

    from graphsys.trace import recording

    @numba.njit
    def twice(a):
        return 2 * a.sum()

    path = tmp_path / "t.json"
    with recording(path):
        assert twice(np.ones(3)) == 6.0
        assert twice(np.ones(4)) == 8.0
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]]
    assert names.count("numba.twice") == 2 and "numba.compile" in names
    assert "__call__" not in Dispatcher.__dict__
    assert twice(np.ones(2)) == 4.0


NESTED = """
import json, sys, torch
from graphsys.errors import GraphsysError
from graphsys.trace import recording, trace_range
outer, inner = sys.argv[1:]
with recording(outer):
    try:
        with recording(inner):
            pass
    except GraphsysError as exc:
        print(exc)
    with trace_range("after.refusal"):
        torch.ones(3).sum()
with torch.profiler.profile():  # inside a profiler of the caller's own, alike
    try:
        with recording(inner):
            pass
    except GraphsysError as exc:
        print(exc)
names = {e["name"] for e in json.load(open(outer))["traceEvents"]}
print("after.refusal" in names)
"""


def test_a_recording_inside_another_is_refused_in_one_line(tmp_path):
    """A trace recorded inside another (``bsp.run(trace=...)`` under the caller's
    ``recording``, or under torch's own profiler) stopped the outer profiler, and the
    process died at its export (SIGSEGV); it is now refused in one line and the outer
    trace is written whole."""
    out = subprocess.run([sys.executable, "-c", NESTED, str(tmp_path / "outer.json"),
                          str(tmp_path / "inner.json")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[:2] == ["a profiler is already recording in this process (a trace or "
                         "profile around this one): record one trace at a time"] * 2
    assert lines[2] == "True" and not (tmp_path / "inner.json").exists()
