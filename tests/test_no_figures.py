"""No docstring or comment in graphsys/ or partitioners/ states a measured figure.

Code keeps the mechanism and the rule; timings, speed-ups and rates live on the results
page (docs/benchmarks.md). The rules of what counts as a figure are
``tools/check_figures.py``'s; this test runs them over the library and names every
offending line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _check_figures():
    spec = importlib.util.spec_from_file_location("check_figures",
                                                  REPO / "tools" / "check_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checker_sees_figures():
    """The checker flags a measured timing and keeps a rule (so an empty report means
    something)."""
    check = _check_figures()
    text = ('"""Push layout.\n\nMeasured 0.58 ms before, 0.45 ms after."""\n'
            "x = 1  # 1.25x faster than the pull\n"
            "y = 2  # push when the rank vector outgrows L2 and fits half the L3\n")
    assert [line for line, _ in check.figures_in_source(text)] == [3, 4]


def test_no_measured_figures_in_code():
    check = _check_figures()
    hits = []
    for package in ("graphsys", "partitioners"):
        for path in check.python_files([REPO / package]):
            for lineno, line in check.figures_in_source(path.read_text(encoding="utf-8")):
                hits.append(f"{path.relative_to(REPO)}:{lineno}: {line}")
    if hits:
        pytest.fail(f"{len(hits)} docstring or comment line(s) state a measured figure; keep "
                    f"the mechanism and the rule, put the figure on docs/benchmarks.md:\n"
                    + "\n".join(hits), pytrace=False)
