"""The docstring examples of every module under graphsys/ and partitioners/ run as doctests.

One test per module whose docstrings hold an example (``>>>``, found by parsing the source,
so collection imports nothing). Each runs in a fresh temporary working directory with
ELLIPSIS and NORMALIZE_WHITESPACE on, in the module's own namespace (as
``pytest --doctest-modules`` does). A module, or an example, that needs an optional
package which is not installed (DGL, h5py, faiss, ...) is skipped with that reason.

Every class and function that graphsys or one of its top-level modules and subpackages
exports (``__all__``) has an example of its own, so the doctests cover the public API.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import io
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("graphsys", "partitioners")
FIRST_PARTY = set(PACKAGES)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _docstrings(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc


def modules_with_examples() -> list[str]:
    """Dotted names of the modules whose docstrings contain a ``>>>`` example."""
    names = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if path.stem == "__main__":  # importing it would run the CLI
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            if any(">>>" in doc for doc in _docstrings(tree)):
                parts = path.relative_to(REPO).with_suffix("").parts
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _missing_optional(exc: BaseException) -> str | None:
    """The optional package an ImportError names, or None when it is graphsys's own."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        root = exc.name.split(".")[0]
        if root not in FIRST_PARTY:
            return root
    return None


class _Runner(doctest.DocTestRunner):
    """A runner that remembers optional packages an example failed to import."""

    def __init__(self):
        super().__init__(optionflags=FLAGS)
        self.missing: set[str] = set()

    def report_unexpected_exception(self, out, test, example, exc_info):
        name = _missing_optional(exc_info[1])
        if name is not None:
            self.missing.add(name)
        super().report_unexpected_exception(out, test, example, exc_info)


MODULES = modules_with_examples()


def test_examples_are_found():
    """The scan sees the packages (an empty list would make the doctests pass vacuously)."""
    assert MODULES, "no docstring example found under graphsys/ or partitioners/"
    assert all(name.split(".")[0] in FIRST_PARTY for name in MODULES)


# an example that warns (a run stopped at max_iters, a small budget) shows a user a call
# they should not copy: the warning fails its example
@pytest.mark.filterwarnings("error::UserWarning", "error::RuntimeWarning")
@pytest.mark.parametrize("name", MODULES)
def test_doctests(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        missing = _missing_optional(exc)
        if missing is None:
            raise
        pytest.skip(f"{name} needs {missing}, which is not installed")
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    if not tests:
        pytest.skip(f"{name}: no examples where doctest looks (module, classes, functions)")
    runner = _Runner()
    out = io.StringIO()
    for test in sorted(tests, key=lambda t: t.name):
        runner.run(test, out=out.write)
    if runner.failures and runner.missing:
        pytest.skip(f"{name}: examples need {', '.join(sorted(runner.missing))}, "
                    f"which is not installed")
    assert runner.failures == 0, (f"{runner.failures} of {runner.tries} examples failed in "
                                  f"{name}:\n{out.getvalue()}")


def exporting_modules() -> list[str]:
    """graphsys, its subpackages and its top-level modules whose source sets ``__all__``
    (found by parsing, so collection imports nothing)."""
    root = REPO / "graphsys"
    paths = [p for p in sorted(root.glob("*.py")) if not p.stem.startswith("_")]
    paths += sorted(root.glob("*/__init__.py"))
    names = ["graphsys"]
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if any(isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
               for node in tree.body):
            parts = path.relative_to(REPO).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


EXPORTING = exporting_modules()


def test_exporting_modules_are_found():
    """The scan sees the subpackages and the top-level modules (an empty list would pass
    vacuously)."""
    assert {"graphsys", "graphsys.bsp", "graphsys.sampling", "graphsys.progress"} <= set(
        EXPORTING)


@pytest.mark.parametrize("name", EXPORTING)
def test_every_exported_class_and_function_has_an_example(name):
    """Each class and function in the module's ``__all__`` has a ``>>>`` example in its
    own docstring (submodules and constants listed there are left out)."""
    module = importlib.import_module(name)
    missing = []
    for export in module.__all__:
        obj = getattr(module, export, None)
        if obj is None:  # a submodule named in __all__ (graphsys.storage)
            obj = importlib.import_module(f"{name}.{export}")
        if isinstance(obj, types.ModuleType):
            continue
        if (inspect.isclass(obj) or inspect.isroutine(obj)) and ">>>" not in (
                obj.__doc__ or ""):
            missing.append(export)
    assert not missing, f"{name} exports without a docstring example: {', '.join(missing)}"
