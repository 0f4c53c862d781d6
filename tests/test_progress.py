"""Progress displays while graphsys kernels compile: the display says so, and the loop's
elapsed time and rate leave the compilation out; a warm run says nothing about it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest
from numba.core import event

from graphsys import jit, progress
from graphsys.errors import ParameterError
from graphsys.progress import (
    Bar,
    LineProgress,
    compile_ended,
    compile_started,
    kernel_family,
    progress_bar,
)

REPO = Path(__file__).resolve().parents[1]


class Clock:
    """A fake clock for a display: it moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _clocked(bar, clock: Clock):
    """``bar`` reading ``clock``, started now by it."""
    bar._time = clock
    bar.start_t = bar.last_print_t = bar._last_line = clock()
    return bar


class TtyIO(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_kernel_family_from_the_module_path():
    assert kernel_family("graphsys.bsp.kernels_centrality") == "centrality"
    assert kernel_family("graphsys.storage.kernels") == "storage"
    assert kernel_family("graphsys.sampling._kernels") == "sampling"
    assert kernel_family("graphsys.mining.clique_kernels") == "clique"
    assert kernel_family("graphsys.kernels.components") == "components"
    assert kernel_family("graphsys.kernels") == "graphsys"


def test_log_lines_say_compiling_and_elapsed_leaves_it_out(clock):
    log = io.StringIO()
    bar = _clocked(LineProgress(total=4, unit="source", desc="betweenness", file=log,
                                every=1000), clock)
    clock.now += 2  # the loop's own work
    bar.update(1)
    compile_started("graphsys.bsp.kernels_centrality")
    assert log.getvalue().splitlines() == [
        "betweenness: compiling centrality kernels (once per install; ahead: `graphsys "
        "warmup --all`)"]
    clock.now += 30
    compile_ended("graphsys.bsp.kernels_centrality", kernels=3)
    assert len(log.getvalue().splitlines()) == 1  # said when the loop next advances
    clock.now += 1
    bar.update(1)
    lines = log.getvalue().splitlines()
    assert lines[1] == ("betweenness: compiled 3 centrality kernels in 30.0 s, not counted "
                        "in the elapsed time")
    assert bar.format_dict["elapsed"] == 3  # 2 + 1, not 33
    assert (bar.compiled, bar.compile_seconds) == (3, 30)
    bar.update(2)
    bar.close()
    # no second summary; the loop's own 3 s are shorter than the interval: no other line
    assert len(log.getvalue().splitlines()) == 2
    assert bar not in progress._displays()


def test_summary_at_close_when_the_loop_never_advances(clock):
    log = io.StringIO()
    bar = _clocked(LineProgress(total=1, desc="pagerank", file=log, every=1000), clock)
    compile_started("graphsys.bsp.kernels_pagerank")
    compile_started("graphsys.storage.kernels")  # not outermost in practice; said once each
    clock.now += 4
    compile_ended("graphsys.storage.kernels", kernels=2)
    bar.close()
    lines = log.getvalue().splitlines()
    assert [x.split(" (")[0] for x in lines[:2]] == ["pagerank: compiling pagerank kernels",
                                                     "pagerank: compiling storage kernels"]
    assert lines[2].startswith("pagerank: compiled 2 pagerank and storage kernels in 4.0 s")


def test_the_last_line_is_not_written_twice(clock):
    """A loop whose last advance wrote a line (it crossed the interval) wrote the same line
    again when it closed ('t: 5/5 x (100%), ...' twice); the closing line comes only where
    the work advanced since the last line. An open-ended display alike; and a display
    callback without a description (tqdm's default None) no longer raises."""
    def lines(total, seconds, updates):
        log = io.StringIO()
        bar = _clocked(LineProgress(total=total, unit="x", desc="t", file=log, every=10),
                       clock)
        for _ in range(updates):
            clock.now += seconds
            bar.update(1)
        bar.close()
        return log.getvalue().splitlines()

    for total, last in ((5, "5/5"), (None, "5 x")):
        got = lines(total, 3, 5)  # lines at 12 s (4 x) and at the close (5 x)
        assert len(got) == 2 and last in got[-1], got
        assert len(lines(total, 5, 4)) == 2  # at 10 s and 20 s, the last advance
    steps = []
    with progress.display(steps.append, total=1, desc=None) as bar:
        bar.update(1)
    assert steps == [progress.Step("", 1, 1, "it")]


def test_a_terminal_bar_says_it_in_its_description(clock):
    out = TtyIO()
    bar = progress_bar(total=2, unit="source", desc="betweenness", file=out)
    assert isinstance(bar, Bar)
    _clocked(bar, clock)
    compile_started("graphsys.bsp.kernels_centrality")
    assert bar.desc.startswith("betweenness: compiling centrality kernels (once per install")
    clock.now += 10
    compile_ended("graphsys.bsp.kernels_centrality")
    clock.now += 1
    bar.update(1)
    assert bar.desc == "betweenness"
    assert "compiled 1 centrality kernel in 10.0 s" in out.getvalue()
    assert bar.format_dict["elapsed"] == 1
    bar.close()


def test_nested_displays_one_says_all_leave_it_out(clock):
    outer_log, inner_log = io.StringIO(), io.StringIO()
    outer = _clocked(LineProgress(total=1, desc="epochs", file=outer_log, every=1000), clock)
    inner = _clocked(LineProgress(total=1, desc="batches", file=inner_log, every=1000), clock)
    compile_started("graphsys.embed.kernels")
    clock.now += 5
    compile_ended("graphsys.embed.kernels")
    inner.close()
    outer.close()
    assert outer_log.getvalue() == ""
    assert "batches: compiling embed kernels" in inner_log.getvalue()
    assert outer.format_dict["elapsed"] == inner.format_dict["elapsed"] == 0


def test_a_display_dropped_unclosed_stops_listening():
    log = io.StringIO()
    LineProgress(total=1, desc="dropped", file=log, every=1000)  # never closed
    import gc

    gc.collect()
    compile_started("graphsys.storage.kernels")
    compile_ended("graphsys.storage.kernels")
    assert log.getvalue() == ""


def test_quiet_says_nothing():
    log = io.StringIO()
    with progress_bar(total=1, desc="x", file=log, disable=True) as bar:
        compile_started("graphsys.storage.kernels")
        compile_ended("graphsys.storage.kernels")
        bar.update(1)
    assert log.getvalue() == ""


class AdvanceOnCompile(event.Listener):
    """Moves the fake clock while numba compiles (registered after graphsys's listener, so
    graphsys notes the start before it moves and the end after)."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds

    def on_start(self, ev):
        self.clock.now += self.seconds

    def on_end(self, ev):
        pass


def test_a_real_compilation_is_said_and_left_out(clock):
    assert jit.watch_compiles()

    def plus_one(x):
        return x + 1

    plus_one.__module__ = "graphsys.bsp.kernels_centrality"
    kernel = numba.njit(plus_one)  # no cache: compiled in this process

    def run() -> tuple[LineProgress, float, str]:
        log = io.StringIO()
        bar = _clocked(LineProgress(total=2, unit="source", desc="betweenness", file=log,
                                    every=1000), clock)
        for i in range(2):
            kernel(i)
            clock.now += 1
            bar.update(1)
        elapsed = bar.format_dict["elapsed"]
        bar.close()
        return bar, elapsed, log.getvalue()

    with event.install_listener("numba:compile", AdvanceOnCompile(clock, 60)):
        cold, elapsed, said = run()
        warm, _, said_warm = run()
    lines = said.splitlines()
    assert lines[0].startswith("betweenness: compiling centrality kernels (once per install")
    assert lines[1].startswith("betweenness: compiled 1 centrality kernel in 60.0 s")
    assert elapsed == 2 and cold.compile_seconds == 60
    assert "compil" not in said_warm and warm.compiled == 0


def test_a_kernel_of_another_package_is_not_said():
    assert jit.watch_compiles()

    def minus_one(x):
        return x - 1

    minus_one.__module__ = "someone_else.kernels"
    kernel = numba.njit(minus_one)
    log = io.StringIO()
    with LineProgress(total=1, desc="x", file=log, every=1000) as bar:
        kernel(1)
        bar.update(1)
    assert log.getvalue() == "" and bar.compiled == 0


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from graphsys.progress import LineProgress
    bar = LineProgress(total=1, unit="call", desc="components", file=sys.stderr, every=1000)
    from graphsys.kernels import components
    components._compress(np.arange(4))
    bar.update(1)
    bar.close()
    print(bar.compiled)
""")


def test_a_fresh_cache_compiles_and_says_so_then_a_warm_one_loads(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def run() -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done

    cold, warm = run(), run()
    lines = cold.stderr.splitlines()
    assert lines[0].startswith("components: compiling components kernels (once per install")
    assert lines[1].startswith("components: compiled 1 components kernel in ")
    assert cold.stdout.split() == ["1"]
    assert "compil" not in warm.stderr and warm.stdout.split() == ["0"]


def test_display_one_rule_for_every_engine(monkeypatch):
    """``progress``: False/None nothing, True the bar or lines, a callable a Step per
    update, anything else one line."""
    monkeypatch.setattr(progress, "interval", lambda: 0.0)
    for off in (False, None):
        with progress.display(off, total=2, desc="quiet") as bar:
            bar.update(2)
        assert bar.disable
    log = io.StringIO()
    with progress.display(True, total=2, unit="block", desc="count", file=log) as bar:
        bar.update(2)
    assert isinstance(bar, LineProgress) and "count: 2/2 block" in log.getvalue()
    steps = []
    with progress.display(steps.append, total=3, unit="block", desc="count") as bar:
        bar.update(1)
        bar.update(2)
    assert steps == [progress.Step("count", 1, 3, "block"), progress.Step("count", 3, 3, "block")]
    with pytest.raises(ParameterError, match="^progress must be True, False or a callable"):
        progress.display("yes", total=1)


def test_progress_takes_numpy_bools_as_every_flag_does():
    """``progress=np.False_`` was refused while every other flag (``check_flag``) takes
    NumPy's bools; 1 and "no" stay refused."""
    import numpy as np

    assert progress.check_progress(np.False_) is False
    assert progress.check_progress(np.True_) is True
    for bad in (1, "no", np.array([True])):
        with pytest.raises(ParameterError, match="^progress must be True, False or a callable"):
            progress.check_progress(bad)
