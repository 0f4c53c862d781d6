"""docs/api documents every public name: each page names every function and class its
package exports (``__all__``), as the README promises ("Every public function and class:
the API reference in docs/api"). Constants (upper-case names) and ``__version__`` are left
to the module pages' text."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

API = Path(__file__).resolve().parents[1] / "docs" / "api"
PAGES = ["graphsys", "views", "bsp", "measures", "embed", "gnn", "sampling", "mining",
         "analysis", "interop", "datasets", "generators"]


def documented(text: str) -> set[str]:
    """The names a page documents: autosummary rows, ``auto*::`` targets and the names of
    ``:members:`` lists (last dotted component)."""
    names = set(re.findall(r"^\s+([A-Za-z_][\w.]*)\s*$", text, re.MULTILINE))
    names |= set(re.findall(r"auto\w+:: ([\w.]+)", text))
    for m in re.finditer(r":members: ([\w, \n]+?)(?=\n\s*\n|\n\S|\Z)", text):
        names |= {x for x in re.split(r"[,\s]+", m.group(1)) if x}
    return {n.rsplit(".", 1)[-1] for n in names}


@pytest.mark.parametrize("page", PAGES)
def test_every_exported_function_and_class_is_on_its_page(page):
    module = importlib.import_module("graphsys" if page == "graphsys" else f"graphsys.{page}")
    public = [n for n in module.__all__ if not n.startswith("_") and not n.isupper()]
    missing = sorted(set(public) - documented((API / f"{page}.rst").read_text()))
    assert not missing, f"docs/api/{page}.rst lacks {', '.join(missing)}"
