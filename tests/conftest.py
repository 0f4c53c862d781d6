"""Shared fixtures: the local dataset mirror and small edge-list writers."""

from __future__ import annotations

import os
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
