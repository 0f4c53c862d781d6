"""docs/cli.md is what tools/gen_cli_docs.py generates from the CLI's parsers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_cli_page_is_up_to_date():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_cli_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_every_command_has_a_section():
    sys.path.insert(0, str(REPO))
    from graphsys.cli import COMMANDS

    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"## `graphsys {name}`" in page, name
