"""A pytest plugin for NetworkX's test suite run against the backend
(``pytest -p graphsys.nx_backend.testing`` with ``NETWORKX_TEST_BACKEND=graphsys``): it
records which tests called a graphsys function and reports, at the end, how many of those
passed, failed or were skipped, as a line ``graphsys-backend: {json}``.

``GRAPHSYS_NX_SUITE_SAMPLE=K`` keeps at most ``K`` parametrizations of each test function
(the first ones, in NetworkX's order; every function still runs): a cheap run for CI.

With ``NETWORKX_FALLBACK_TO_NX`` set, calls graphsys declines run in NetworkX, so every
test runs; the report separates the tests graphsys took part in from the rest.
"""

from __future__ import annotations

import json

import pytest

_CALLED: set[str] = set()
_CURRENT: list[str] = []
_OUTCOMES: dict[str, str] = {}


def pytest_configure(config) -> None:
    from _nx_graphsys import FUNCTIONS
    from graphsys.nx_backend import BackendInterface

    for name in FUNCTIONS:
        impl = getattr(BackendInterface, name)

        def traced(*args, _impl=impl, **kwargs):
            if _CURRENT:
                _CALLED.add(_CURRENT[-1])
            return _impl(*args, **kwargs)

        setattr(BackendInterface, name, staticmethod(traced))


def pytest_collection_modifyitems(config, items) -> None:
    import os

    k = int(os.environ.get("GRAPHSYS_NX_SUITE_SAMPLE", "0") or 0)
    if k <= 0:
        return
    seen: dict[tuple, int] = {}
    keep, drop = [], []
    for item in items:
        key = (item.nodeid.split("[")[0],)
        seen[key] = seen.get(key, 0) + 1
        (keep if seen[key] <= k else drop).append(item)
    items[:] = keep
    config.hook.pytest_deselected(items=drop)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _CURRENT.append(item.nodeid)
    yield
    _CURRENT.pop()


def pytest_runtest_logreport(report) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else (
            "xpassed" if hasattr(report, "wasxfail") else report.outcome)
        _OUTCOMES[report.nodeid] = outcome


def pytest_terminal_summary(terminalreporter) -> None:
    ran: dict[str, int] = {}
    for nodeid, outcome in _OUTCOMES.items():
        if nodeid in _CALLED:
            ran[outcome] = ran.get(outcome, 0) + 1
    summary = {"tests": len(_OUTCOMES), "ran_graphsys": sum(ran.values()),
               "ran_graphsys_by_outcome": ran,
               "failed_with_graphsys": sorted(n for n in _CALLED
                                              if _OUTCOMES.get(n) == "failed")}
    terminalreporter.write_line("graphsys-backend: " + json.dumps(summary))
