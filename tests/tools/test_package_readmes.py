"""Every package of graphsys/ has a README.md naming its job and what it may import, and
that line is what the layer table of docs/architecture.md grants the package (as
tools/check_layers.py reads and enforces the table)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"
PACKAGES = sorted(p.parent.name for p in (REPO / "graphsys").glob("*/__init__.py"))
#: The line of a README that names the package's layer and grant.
GRANT = re.compile(r"^\*\*Layer:\*\* .*$", re.MULTILINE)


def _check_layers():
    sys.path.insert(0, str(TOOLS))
    try:
        import check_layers
    finally:
        sys.path.remove(str(TOOLS))
    return check_layers


def test_the_packages_are_found():
    assert {"bsp", "storage", "views", "kernels", "gnn", "commands"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_readme_names_its_job_and_the_table_grant(package):
    readme = REPO / "graphsys" / package / "README.md"
    assert readme.is_file(), f"graphsys/{package}/ has no README.md"
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(f"# graphsys.{package} — "), "first line: '# graphsys.<name> — job'"
    job = text.split("\n\n")[1]  # the paragraph after the title: a few sentences
    assert not job.startswith("**Layer:**") and len(job) <= 600, "a short paragraph first"
    check_layers = _check_layers()
    table = check_layers.read_table(REPO / "docs" / "architecture.md")
    member = table.member_of(f"graphsys.{package}")
    assert member == f"{package}/", f"graphsys/{package}/ is no row's member of its own"
    assert GRANT.findall(text) == [check_layers.grant_line(table, member)]


def test_grant_line_follows_the_table(tmp_path):
    """The README line is rendered from the table: its layers in the table's order,
    `everything`, and a row's extra allowance."""
    page = tmp_path / "architecture.md"
    page.write_text("""# A

## What may import what

| layer | members | may import |
|---|---|---|
| base | `errors` | base |
| storage | `storage/` | base, storage |
| engines | `bsp/`, `gnn/`, `sampling/` | storage, base; `gnn/` also `sampling/` |
| commands | `commands/` | everything |
""")
    check_layers = _check_layers()
    table = check_layers.read_table(page)
    assert check_layers.grant_line(table, "bsp/") == \
        "**Layer:** engines. **May import:** base, storage."
    assert check_layers.grant_line(table, "gnn/") == \
        "**Layer:** engines. **May import:** base, storage; also `sampling/`."
    assert check_layers.grant_line(table, "commands/") == \
        "**Layer:** commands. **May import:** everything."
