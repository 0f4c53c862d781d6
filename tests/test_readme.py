"""The README works as written: it opens with the two set-up commands, and its Python tour
(every fenced ``python`` block, in order, as one script) runs in an empty directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

SETUP = [
    "python3 -m venv .venv && .venv/bin/pip install --no-compile torch==2.13.0 -e '.[plot]' "
    "&& .venv/bin/graphsys demo",
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e '.[test]' "
    "&& .venv/bin/pytest -q -n 2 --dist loadfile",
]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def _mirror() -> Path | None:
    env = os.environ.get("GRAPHSYS_MIRROR")
    for candidate in ([Path(env)] if env else []) + [REPO.parent / "shared" / "datasets"]:
        if candidate.is_dir():
            return candidate
    return None


def test_starts_with_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# graphsys"
    first = text.index("```")
    assert text[len(lines[0]):first].strip() == "", "the set-up commands come first"
    lang, body = blocks(text)[0]
    assert lang == "bash"
    assert body.splitlines() == SETUP


def test_python_tour_runs(tmp_path):
    mirror = _mirror()
    if mirror is None or not (mirror / "cora").is_dir():
        pytest.skip("the tour trains on Cora: dataset mirror not found (set GRAPHSYS_MIRROR)")
    script = "\n\n".join(body for lang, body in blocks(README.read_text(encoding="utf-8"))
                         if lang == "python")
    assert script, "the README has no python block"
    (tmp_path / "tour.py").write_text(script, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "GRAPHSYS_MIRROR": str(mirror),
           "GRAPHSYS_DATA": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(tmp_path / "tour.py")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        pytest.fail(f"the README's Python tour failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}", pytrace=False)
