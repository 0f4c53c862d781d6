"""Sphinx configuration of the API reference (``docs/api``).

Build: ``sphinx-build -W --keep-going -b html docs/api OUTDIR`` (what ``.ci/run`` runs;
any warning fails it). Pages list their names explicitly, so only the public entry points
are documented; docstrings are numpydoc style, read by ``sphinx.ext.napoleon``.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import graphsys  # noqa: E402

project = "graphsys"
author = "graphsys contributors"
copyright = "graphsys contributors"
release = version = graphsys.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

# docstrings are numpydoc; Google-style ``Args:`` blocks not yet converted still render
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True

# each class directive names its members (``:members:``, or an explicit list where the
# class has engine-facing methods): a ``members`` default would override the lists
autodoc_default_options = {
    "undoc-members": False,
    "show-inheritance": True,
    "member-order": "bysource",
}
autodoc_typehints = "signature"
# the summary tables are written out on each page (no generated stub files)
autosummary_generate = False

exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"graphsys {release} API reference"
html_static_path: list[str] = []
templates_path: list[str] = []

_FOOTNOTE = re.compile(r"^(\s*)\.\. \[(\d+)\]\s*(.*)$")
_CITE = re.compile(r"\[(\d+)\]_")


def _unique_references(app, what, name, obj, options, lines):
    """numpydoc References are numbered footnotes (``.. [1]`` cited as ``[1]_``); many
    docstrings on one page would give duplicate targets. A cited one becomes an
    auto-numbered footnote labelled by its object (``[#graphsys-bsp-pagerank-1]``); one that
    the text never cites (a reference listed for reading) becomes a plain numbered entry."""
    label = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    text = "\n".join(lines)
    cited = set(_CITE.findall(text))
    out: list[str] = []
    k = 0
    while k < len(lines):
        m = _FOOTNOTE.match(lines[k])
        if m is None:
            out.append(_CITE.sub(lambda c: f"[#{label}-{c.group(1)}]_", lines[k]))
            k += 1
            continue
        indent, number, first = m.groups()
        if number in cited:
            out.append(f"{indent}.. [#{label}-{number}] {first}")
            k += 1
            continue
        parts = [first]
        k += 1
        while k < len(lines) and lines[k].strip() and (
                len(lines[k]) - len(lines[k].lstrip()) > len(indent)):
            parts.append(lines[k].strip())
            k += 1
        if out and out[-1].strip():
            out.append("")
        out.extend([f"{indent}[{number}] " + " ".join(parts), ""])
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", _unique_references)
