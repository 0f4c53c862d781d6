"""docs/from-networkx.md runs as written: its ``python`` blocks execute in order in one
namespace (each checks its answers against NetworkX), and every graphsys call of its table
is among them. The block marked as needing the installed backend runs where NetworkX finds
graphsys (as CI installs it)."""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "from-networkx.md"
BACKEND_MARK = "# needs graphsys installed as a NetworkX backend"


def blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), re.S | re.M)


def table_calls() -> list[str]:
    """The dotted names called in the table's graphsys column (``bsp.pagerank``, ...)."""
    calls = []
    for line in GUIDE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            for code in re.findall(r"`([^`]+)`", cells[3]):
                name = re.match(r"[\w.]+", code)
                if name and "(" in code:
                    calls.append(name.group(0))
    return calls


def test_table_has_forty_three_rows_and_every_call_runs():
    rows = [ln for ln in GUIDE.read_text().splitlines() if re.match(r"\| \d+ \|", ln)]
    assert len(rows) == 43
    code = "\n".join(blocks())
    # `g` stands for any stored graph: a method call on another one counts
    missing = sorted({c for c in table_calls()
                      if f"{c[1:] if c.startswith('g.') else c}(" not in code})
    assert not missing, f"table calls no block runs: {missing}"


def test_blocks_run(capsys):
    ns: dict = {}
    ran = 0
    for i, block in enumerate(blocks()):
        if block.startswith(BACKEND_MARK) and "graphsys" not in nx.utils.backends.backends:
            continue
        exec(compile(block, f"{GUIDE.name} python block {i + 1}", "exec"), ns)
        ran += 1
    assert ran >= 6
    if "graphsys" not in nx.utils.backends.backends:
        pytest.skip("the backend block needs graphsys installed (pip install -e .)")
