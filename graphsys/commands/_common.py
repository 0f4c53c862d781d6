"""Helpers shared by CLI commands: JSON output and column arguments."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one JSON line on stdout."""
    print(json.dumps(obj, sort_keys=False, default=str))


def column_arg(value: str | None) -> str | int | None:
    """A column given on the command line: a 0-based index if all digits, else a name."""
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def show_progress(args) -> bool:
    """Progress bars on a terminal, unless --json or --quiet."""
    return sys.stderr.isatty() and not getattr(args, "json", False) and not getattr(
        args, "quiet", False)
