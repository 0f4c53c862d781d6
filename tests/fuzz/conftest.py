"""Fuzz settings and outcome tally (issue 13).

CI runs each fuzz test with ``GRAPHSYS_FUZZ_EXAMPLES`` examples (default 15), derandomised
(the same cases every run); ``GRAPHSYS_FUZZ_EXAMPLES=500`` (or more) is the long mode,
with fresh random cases each run unless ``GRAPHSYS_FUZZ_SEED`` is set.
``GRAPHSYS_FUZZ_REPORT=FILE`` writes the tally of outcomes (JSON) at the end.
"""

from __future__ import annotations

import collections
import json
import os

import pytest
from hypothesis import HealthCheck, Phase, settings

EXAMPLES = int(os.environ.get("GRAPHSYS_FUZZ_EXAMPLES", "15"))
LONG = EXAMPLES > 15 and "GRAPHSYS_FUZZ_SEED" not in os.environ
#: No shrinking: a failing case is reported as found (shrinking file mutations is slow).
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
                phases=[Phase.explicit, Phase.reuse, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

#: (test, outcome) -> cases; outcome: "ok" (success, answer checked) or the error class
TALLY: collections.Counter = collections.Counter()


@pytest.fixture(scope="session", autouse=True)
def _report():
    yield
    path = os.environ.get("GRAPHSYS_FUZZ_REPORT")
    if path:
        out = collections.defaultdict(dict)
        for (test, outcome), n in sorted(TALLY.items()):
            out[test][outcome] = n
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
