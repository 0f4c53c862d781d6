"""Shared fixtures: the local dataset mirror, small edge-list writers and the guides' runner."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Off a terminal, long loops print a progress line every GRAPHSYS_PROGRESS_SECONDS: far
# apart in the test run, so that a slow machine does not add lines to captured stderr (the
# tests of progress itself set their own interval).
os.environ.setdefault("GRAPHSYS_PROGRESS_SECONDS", "3600")


def mirror_dir() -> Path | None:
    """The local dataset mirror: $GRAPHSYS_MIRROR, else ../shared/datasets beside the repo."""
    env = os.environ.get("GRAPHSYS_MIRROR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "datasets")
    return next((c for c in candidates if c.is_dir()), None)


@pytest.fixture
def mirror() -> Path:
    path = mirror_dir()
    if path is None:
        pytest.skip("dataset mirror not found (set GRAPHSYS_MIRROR)")
    return path


def guide_blocks(name: str) -> list[str]:
    """The fenced ``python`` blocks of the guide ``docs/NAME``, in order."""
    text = (REPO / "docs" / name).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.fixture(scope="session")
def run_guide():
    """``run_guide(name, before=None)``: execute the guide ``docs/NAME``'s ``python`` blocks
    in order in one namespace, as a reader would, and return that namespace; ``before(i,
    block, ns)`` is called before block ``i`` runs (to look at the state a later block
    changes)."""

    def run(name: str, before=None) -> dict:
        ns: dict = {}
        for i, block in enumerate(guide_blocks(name)):
            if before is not None:
                before(i, block, ns)
            exec(compile(block, f"{name} python block {i + 1}", "exec"), ns)
        return ns

    return run
